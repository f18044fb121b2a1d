// SPDX-License-Identifier: GPL-2.0

//! Registration, names, the port cache, the registration refcount,
//! unregister and dealloc.

use kernel::prelude::*;

#[kunit_tests(ib_core_rs_device)]
mod tests {
    use super::super::*;
    use ib_core_rs::device::{IbDevice, Phase};
    use ib_core_rs::registry;
    use ib_core_rs::restrack::ResType;
    use kernel::time::{delay::fsleep, Delta};

    #[test]
    fn names_and_indices() -> Result {
        let a = registered(1)?;
        let b = registered(1)?;
        assert_eq!(a.name().as_bytes(), b"mock_0");
        assert_eq!(b.name().as_bytes(), b"mock_1");
        assert_ne!(a.index(), b.index());
        assert_eq!(registry::device_count(), 2);
        // Lookups take a registration reference.
        {
            let r = registry::get_by_name(b"mock_1").ok_or(ENOENT)?;
            assert_eq!(r.index(), b.index());
            assert_eq!(b.refcount(), 2);
            let r2 = registry::get_by_index(a.index()).ok_or(ENOENT)?;
            assert_eq!(r2.name().as_bytes(), b"mock_0");
        }
        assert_eq!(b.refcount(), 1);
        // mock_0 goes away: the lowest free number is reused, the index is not.
        let old_a_index = a.index();
        Device::dealloc(a);
        let c = registered(1)?;
        assert_eq!(c.name().as_bytes(), b"mock_0");
        assert_ne!(c.index(), old_a_index);
        assert_ne!(c.index(), b.index());
        // A fixed name that is taken: ENFILE (upstream assign_name()).
        let d = new_dev(1, Step::None)?;
        assert_eq!(Device::register(&d, c"mock_1"), Err(ENFILE));
        assert_eq!(Device::register(&d, c"mock_%s"), Err(EINVAL));
        assert_eq!(Device::register(&d, c"a%db%d"), Err(EINVAL));
        Device::register(&d, c"fixed")?;
        assert_eq!(d.name().as_bytes(), b"fixed");
        // Registering twice is refused.
        assert_eq!(Device::register(&d, c"other"), Err(EINVAL));
        for dev in [b, c, d] {
            Device::dealloc(dev);
        }
        assert_eq!(registry::device_count(), 0);
        Ok(())
    }

    #[test]
    fn port_cache_and_errnos() -> Result {
        let dev = registered(2)?;
        assert_eq!(dev.phys_port_cnt(), 2);
        assert_eq!(dev.attrs().vendor_id, 0x1234);
        assert_eq!(dev.port_immutable(2)?.gid_tbl_len, GID_TBL_LEN);
        assert_eq!(dev.cached_table_lens(1)?, (4, 2));
        assert_eq!(dev.query_gid(2, 3)?, Gid::new(SUBNET_PREFIX, 0x2000 + 3));
        // upstream rdma_query_gid(): empty entry ENOENT, bad index or port EINVAL.
        assert_eq!(dev.query_gid(1, 1), Err(ENOENT));
        assert_eq!(dev.query_gid(1, GID_TBL_LEN), Err(EINVAL));
        assert_eq!(dev.query_gid(0, 0), Err(EINVAL));
        assert_eq!(dev.query_gid(3, 0), Err(EINVAL));
        assert_eq!(dev.get_cached_pkey(1, 0)?, 0xffff);
        assert_eq!(dev.get_cached_pkey(1, 1)?, 0x8001);
        assert_eq!(dev.get_cached_pkey(1, PKEY_TBL_LEN), Err(EINVAL));
        assert_eq!(dev.get_cached_pkey(3, 0), Err(EINVAL));
        assert_eq!(dev.find_cached_pkey(1, 0x0001)?, 1);
        assert_eq!(dev.find_cached_pkey(1, 0x0002), Err(ENOENT));
        assert_eq!(dev.get_cached_port_state(1)?, PortState::Active);
        assert_eq!(dev.get_cached_port_state(3), Err(EINVAL));
        assert_eq!(dev.get_cached_lmc(2)?, 1);
        assert_eq!(dev.get_cached_subnet_prefix(1)?, SUBNET_PREFIX);
        assert_eq!(dev.get_cached_subnet_prefix(0), Err(EINVAL));
        Device::dealloc(dev);
        Ok(())
    }

    #[test]
    fn no_ports_refused() -> Result {
        let dev = new_dev(0, Step::None)?;
        assert_eq!(Device::register(&dev, c"mock_%d"), Err(EINVAL));
        assert_eq!(registry::device_count(), 0);
        Device::dealloc(dev);
        Ok(())
    }

    #[test]
    fn register_failure_unwinds_at_every_step() -> Result {
        let drops: DropCount = Arc::new(Atomic::new(0), GFP_KERNEL)?;
        for (i, step) in ALL_STEPS.iter().enumerate() {
            let dev = new_dev_counted(2, *step, &drops)?;
            assert_eq!(Device::register(&dev, c"mock_%d"), Err(EIO));
            assert_eq!(dev.phase(), Phase::Allocated);
            assert_eq!(dev.refcount(), 0);
            assert!(!dev.is_registered());
            assert_eq!(dev.client_count(), 0);
            assert_eq!(dev.name().as_bytes(), b"");
            assert_eq!(dev.query_gid(1, 0), Err(EINVAL));
            assert_eq!(dev.restrack().total(), 0);
            assert_eq!(registry::device_count(), 0);
            assert!(Device::try_get(&dev).is_none());
            assert_eq!(dev.data().enabled.load(Relaxed), 0);
            // The device can still be registered once the fault is gone.
            dev.data().fail_at.store(0, Relaxed);
            Device::register(&dev, c"mock_%d")?;
            assert_eq!(dev.name().as_bytes(), b"mock_0");
            assert_eq!(dev.data().enabled.load(Relaxed), 1);
            assert_eq!(Device::dealloc(dev), 0);
            assert_eq!(drops.load(Relaxed), i as i32 + 1);
        }
        Ok(())
    }

    #[test]
    fn unregister_waits_for_reference() -> Result {
        let dev = registered(1)?;
        assert_eq!(dev.refcount(), 1);
        let r = Device::try_get(&dev).ok_or(EINVAL)?;
        assert_eq!(dev.refcount(), 2);
        Device::unregister_queued(&dev)?;
        // A second queued unregister is a no-op.
        Device::unregister_queued(&dev)?;
        let mut spins = 0;
        while dev.phase() != Phase::Unregistering && spins < 500 {
            fsleep(Delta::from_millis(10));
            spins += 1;
        }
        assert_eq!(dev.phase(), Phase::Unregistering);
        // Lookups fail at once; the unregister waits for our reference.
        assert!(registry::get_by_name(b"mock_0").is_none());
        fsleep(Delta::from_millis(100));
        assert_eq!(dev.phase(), Phase::Unregistering);
        assert_eq!(dev.refcount(), 1);
        drop(r);
        dev.wait_unregistered();
        assert_eq!(dev.phase(), Phase::Unregistered);
        assert_eq!(dev.refcount(), 0);
        assert!(Device::try_get(&dev).is_none());
        // The name stays taken until dealloc, as upstream.
        assert_eq!(registry::device_count(), 1);
        Device::dealloc(dev);
        assert_eq!(registry::device_count(), 0);
        Ok(())
    }

    #[test]
    fn dealloc_frees_after_last_reference() -> Result {
        let drops: DropCount = Arc::new(Atomic::new(0), GFP_KERNEL)?;
        let dev = new_dev_counted(1, Step::None, &drops)?;
        Device::register(&dev, c"mock_%d")?;
        let pd = Pd::alloc(&dev, ib_core_rs::kernel_owner!())?;
        let extra: Arc<dyn IbDevice> = dev.clone();
        Device::unregister(&dev);
        assert_eq!(dev.phase(), Phase::Unregistered);
        assert_eq!(dev.data().dealloc_driver.load(Relaxed), 0);
        let d2 = dev.clone();
        // The PD is still tracked: dealloc reports it.
        assert_eq!(Device::dealloc(dev), 1);
        assert_eq!(d2.data().dealloc_driver.load(Relaxed), 1);
        assert_eq!(registry::device_count(), 0);
        // Memory stays while the PD, the extra reference and d2 hold it.
        drop(d2);
        drop(extra);
        assert_eq!(drops.load(Relaxed), 0);
        drop(pd);
        assert_eq!(drops.load(Relaxed), 1);
        Ok(())
    }

    #[test]
    fn restrack_counts_owners_and_dump() -> Result {
        let dev = registered(1)?;
        let owner = ib_core_rs::kernel_owner!();
        let pd1 = Pd::alloc(&dev, owner)?;
        let pd2 = Pd::alloc(&dev, ib_core_rs::restrack::Owner::current_task())?;
        let cq = Cq::create(
            &dev,
            &CqInitAttr {
                cqe: 8,
                comp_vector: 0,
                flags: 0,
            },
            None,
            owner,
        )?;
        assert_eq!(dev.restrack().count(ResType::Pd), 2);
        assert_eq!(dev.restrack().count(ResType::Cq), 1);
        assert_eq!(dev.restrack().total(), 3);
        let dump = dev.restrack().dump(ResType::Pd)?;
        assert_eq!(dump.len(), 2);
        assert_eq!(dump[0].id, pd1.res_id());
        assert_eq!(dump[1].id, pd2.res_id());
        assert_ne!(pd1.res_id(), pd2.res_id());
        match dump[0].owner {
            ib_core_rs::restrack::Owner::Kernel(m) => assert_eq!(m.to_bytes(), b"ib_core_rs_test"),
            _ => assert!(false),
        }
        match dump[1].owner {
            ib_core_rs::restrack::Owner::User { pid, .. } => assert!(pid > 0),
            _ => assert!(false),
        }
        assert_eq!(dump[1].owner.comm(), Some(&b"kunit_try_catch"[..]));
        assert_eq!(dev.restrack().report_leftovers(b"mock_0"), 3);
        drop(pd1);
        assert!(Pd::dealloc(pd2).is_ok());
        assert!(Cq::destroy(cq).is_ok());
        assert_eq!(dev.restrack().total(), 0);
        assert_eq!(dev.data().destroyed.load(Relaxed), 3);
        assert_eq!(Device::dealloc(dev), 0);
        Ok(())
    }
}
