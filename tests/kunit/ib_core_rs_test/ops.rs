// SPDX-License-Identifier: GPL-2.0

//! Op-table assembly (upstream `ib_set_device_ops()`) and the mandatory-op
//! check at registration.

use kernel::prelude::*;

#[kunit_tests(ib_core_rs_ops)]
mod tests {
    use super::super::*;
    use ib_core_rs::device::Phase;
    use ib_core_rs::ops::Op;
    use ib_core_rs::registry;

    #[test]
    fn first_setter_wins() -> Result {
        let ops = Ops::assemble(&[&Ops::of::<RxeIdOps>(), &MOCK_OPS])?;
        // query_device from the first table, the rest filled from the second.
        assert!(ops.has(Op::QueryDevice));
        assert!(ops.has(Op::PostSend));
        assert_eq!(ops.driver_id(), DriverId::Rxe);
        let dev = Device::alloc(&ops, 1, Ok(MockDev::new(Step::None)))?;
        assert_eq!(Device::query_device(&dev)?.vendor_id, 0xaaaa);
        Device::dealloc(dev);

        // The other order: the mock's own query_device wins.
        let ops = Ops::assemble(&[&MOCK_OPS, &Ops::of::<RxeIdOps>()])?;
        let dev = Device::alloc(&ops, 1, Ok(MockDev::new(Step::None)))?;
        assert_eq!(Device::query_device(&dev)?.vendor_id, 0x1234);
        // driver_id comes from whichever table sets it.
        assert_eq!(ops.driver_id(), DriverId::Rxe);
        Device::dealloc(dev);
        Ok(())
    }

    #[test]
    fn owner_is_the_module_of_the_first_table() {
        let ops = Ops::<Mock>::assemble(&[&MOCK_OPS]);
        assert_eq!(
            ops.ok().and_then(|o| o.owner()).map(|o| o.to_bytes()),
            Some(&b"ib_core_rs_test"[..])
        );
        assert!(Ops::<Mock>::EMPTY.owner().is_none());
    }

    #[test]
    fn driver_id_conflict_refused() -> Result {
        let mut ops = Ops::EMPTY;
        ops.set(&Ops::of::<RxeIdOps>())?;
        assert_eq!(ops.set(&Ops::of::<Mlx5IdOps>()), Err(EINVAL));
        // Refused as a whole: nothing of the conflicting table was taken.
        assert_eq!(ops.driver_id(), DriverId::Rxe);
        assert!(!ops.has(Op::QueryPort));
        assert_eq!(ops.uverbs_abi_ver(), 2);
        // A table that claims no id mixes with any.
        ops.set(&MOCK_OPS)?;
        assert!(ops.has(Op::QueryPort));
        Ok(())
    }

    #[test]
    fn abi_ver_overwritten_when_nonzero() -> Result {
        let mut ops = Ops::EMPTY;
        ops.set(&Ops::of::<RxeIdOps>())?;
        assert_eq!(ops.uverbs_abi_ver(), 2);
        // The mock table sets no ABI version: kept.
        ops.set(&MOCK_OPS)?;
        assert_eq!(ops.uverbs_abi_ver(), 2);
        let mut ops2 = Ops::EMPTY;
        ops2.set(&MOCK_OPS)?;
        ops2.set(&Ops::of::<Mlx5IdOps>())?;
        assert_eq!(ops2.uverbs_abi_ver(), 3);
        assert_eq!(ops2.driver_id(), DriverId::Mlx5);
        Ok(())
    }

    #[test]
    fn missing_mandatory_op_refused_by_name() -> Result {
        let ops = Ops::assemble(&[&Ops::of::<NoQueryPortOps>()])?;
        assert_eq!(ops.check_mandatory(), Err(Op::QueryPort));
        assert_eq!(Op::QueryPort.name(), "query_port");
        assert_eq!(Ops::<Mock>::EMPTY.check_mandatory(), Err(Op::QueryDevice));
        assert_eq!(
            Ops::<Mock>::assemble(&[&Ops::of::<MinimalOps>()])?.check_mandatory(),
            Ok(())
        );

        let dev = Device::alloc(&ops, 1, Ok(MockDev::new(Step::None)))?;
        assert_eq!(Device::register(&dev, c"mock_%d"), Err(EINVAL));
        assert_eq!(dev.phase(), Phase::Allocated);
        assert_eq!(registry::device_count(), 0);
        assert!(registry::get_by_name(b"mock_0").is_none());
        Device::dealloc(dev);
        Ok(())
    }
}
