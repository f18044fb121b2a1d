// SPDX-License-Identifier: GPL-2.0

//! A mock RDMA device for user-space tests of uverbs: one device `rxe_mock0`
//! with one InfiniBand port, registered at load and removed at unload. It
//! claims `RDMA_DRIVER_RXE` and librxe's ABI version (`RXE_UVERBS_ABI_VERSION`
//! = 2 in rdma-core 44 / Linux 7.3 `rdma_user_rxe.h`), so that Debian's librxe
//! provider binds it and `ibv_devinfo` runs through our uverbs. It has no data
//! path: rxe's user ABI for CQs and QPs (shared queues mmapped from the
//! kernel) is not implemented. Its CQs and QPs exist for the raw uverbs
//! tests (`tests/userspace/uverbs_abi.c`), which send rxe-sized driver data
//! but read none back: the QP keeps its state and port, nothing else, and
//! accepts every transition (the state machine's rules are the real
//! driver's, tested on mlx5).

use ib_core_rs::attr::{DeviceAttr, Gid, LinkLayer, PortAttr, PortImmutable, PortState};
use ib_core_rs::device::Device;
use ib_core_rs::driver::{Driver, DriverId};
use ib_core_rs::ops::{DeviceOps, Ops};
use ib_core_rs::verbs::{
    Cq, CqInitAttr, Pd, Qp, QpAttr, QpAttrMask, QpCreated, QpInitAttr, QpState, Ucontext,
    UcontextPriv, Udata, UserCtx,
};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::Arc;

module! {
    type: RdmaRsMock,
    name: "rdma_rs_mock",
    authors: ["rdma-rs developers"],
    description: "rdma-rs: a mock RDMA device (driver id RXE) for uverbs tests",
    license: "GPL",
}

struct Mock;

struct MockDev {
    ucontexts: Atomic<i32>,
}

impl Driver for Mock {
    type DevData = MockDev;
    type PdData = ();
    type CqData = ();
    type QpData = MockQp;
    type SrqData = ();
    type MrData = ();
}

/// A mock QP: its state and port, for QUERY_QP.
struct MockQp {
    state: Atomic<u32>,
    port: Atomic<u32>,
}

const SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;

struct MockOps;

#[vtable]
impl DeviceOps for MockOps {
    type Driver = Mock;
    const DRIVER_ID: DriverId = DriverId::Rxe;
    const UVERBS_ABI_VER: u32 = 2;

    fn query_device(_dev: &Device<Mock>) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            fw_ver: (1 << 32) | (2 << 16) | 3,
            node_guid: 0x0002_c903_00ab_cdef,
            sys_image_guid: 0x0002_c903_00ab_cdef,
            vendor_id: 0x1234,
            vendor_part_id: 0x5678,
            hw_ver: 0x9,
            max_qp: 64,
            max_qp_wr: 1024,
            max_cq: 64,
            max_cqe: 4096,
            max_mr: 256,
            max_pd: 32,
            ..DeviceAttr::default()
        })
    }

    fn get_port_immutable(_dev: &Device<Mock>, _port: u32) -> Result<PortImmutable> {
        Ok(PortImmutable {
            pkey_tbl_len: 1,
            gid_tbl_len: 2,
            core_cap_flags: 1,
            max_mad_size: 256,
            link_layer: LinkLayer::Infiniband,
        })
    }

    fn query_port(_dev: &Device<Mock>, port: u32) -> Result<PortAttr> {
        Ok(PortAttr {
            subnet_prefix: SUBNET_PREFIX,
            state: PortState::Active,
            phys_state: 5,
            lid: 0x10 + port,
            lmc: 0,
            sm_lid: 1,
            sm_sl: 0,
            port_cap_flags: 0,
            active_width: 1,
            active_speed: 1,
            ..PortAttr::default()
        })
    }

    fn query_gid(_dev: &Device<Mock>, port: u32, index: u32) -> Result<Gid> {
        // Entry 1 is empty.
        Ok(if index == 1 {
            Gid::ZERO
        } else {
            Gid::new(SUBNET_PREFIX, 0x0002_c903_00ab_cd00 + u64::from(port))
        })
    }

    fn query_pkey(_dev: &Device<Mock>, _port: u32, _index: u32) -> Result<u16> {
        Ok(0xffff)
    }

    fn alloc_ucontext(dev: &Device<Mock>, _udata: &mut Udata<'_>) -> Result<UcontextPriv> {
        dev.data().ucontexts.fetch_add(1, Relaxed);
        Ok(None)
    }

    fn dealloc_ucontext(ctx: &Ucontext<Mock>) {
        ctx.device().data().ucontexts.fetch_sub(1, Relaxed);
    }

    fn alloc_pd(_dev: &Device<Mock>, _user: Option<&mut UserCtx<'_, '_, Mock>>) -> Result<()> {
        Ok(())
    }

    fn dealloc_pd(_pd: &Pd<Mock>) -> Result {
        Ok(())
    }

    fn create_cq(
        _dev: &Device<Mock>,
        _attr: &CqInitAttr,
        _user: Option<&mut UserCtx<'_, '_, Mock>>,
    ) -> Result<()> {
        Ok(())
    }

    fn destroy_cq(_cq: &Cq<Mock>) -> Result {
        Ok(())
    }

    fn create_qp(
        _pd: &Pd<Mock>,
        _attr: &QpInitAttr<'_, Mock>,
        _user: Option<&mut UserCtx<'_, '_, Mock>>,
    ) -> Result<QpCreated<MockQp>> {
        static NEXT_QPN: Atomic<u32> = Atomic::new(0x100);
        Ok(QpCreated {
            data: MockQp {
                state: Atomic::new(0),
                port: Atomic::new(0),
            },
            qp_num: NEXT_QPN.fetch_add(1, Relaxed) & 0xff_ffff,
        })
    }

    fn modify_qp(qp: &Qp<Mock>, attr: &QpAttr, mask: QpAttrMask) -> Result {
        if mask.contains(QpAttrMask::PORT) {
            qp.data().port.store(attr.port_num, Relaxed);
        }
        if mask.contains(QpAttrMask::STATE) {
            qp.data().state.store(attr.qp_state as u32, Relaxed);
        }
        Ok(())
    }

    fn query_qp(qp: &Qp<Mock>) -> Result<QpAttr> {
        let state = match qp.data().state.load(Relaxed) {
            1 => QpState::Init,
            2 => QpState::Rtr,
            3 => QpState::Rts,
            4 => QpState::Sqd,
            5 => QpState::Sqe,
            6 => QpState::Err,
            _ => QpState::Reset,
        };
        Ok(QpAttr {
            qp_state: state,
            port_num: qp.data().port.load(Relaxed),
            ..QpAttr::default()
        })
    }

    fn destroy_qp(_qp: &Qp<Mock>) -> Result {
        Ok(())
    }
}

static MOCK_OPS: Ops<Mock> = Ops::of::<MockOps>();

struct RdmaRsMock {
    dev: Option<Arc<Device<Mock>>>,
}

impl kernel::Module for RdmaRsMock {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let dev = Device::alloc(
            &MOCK_OPS,
            1,
            Ok(MockDev {
                ucontexts: Atomic::new(0),
            }),
        )?;
        if let Err(e) = Device::register(&dev, c"rxe_mock%d") {
            Device::dealloc(dev);
            return Err(e);
        }
        Ok(RdmaRsMock { dev: Some(dev) })
    }
}

impl Drop for RdmaRsMock {
    fn drop(&mut self) {
        if let Some(dev) = self.dev.take() {
            Device::unregister(&dev);
            let left = dev.data().ucontexts.load(Relaxed);
            if left != 0 {
                pr_err!("rdma_rs_mock: {} ucontexts left after unregister\n", left);
            }
            let leaks = Device::dealloc(dev);
            if leaks != 0 {
                pr_err!("rdma_rs_mock: {} resources leaked\n", leaks);
            }
        }
    }
}
