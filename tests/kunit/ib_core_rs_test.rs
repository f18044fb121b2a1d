// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the RDMA core, driven by a mock RDMA driver.
//!
//! The mock implements the core's driver interface in memory: ports with a
//! GID and a P_Key table, a fault knob that fails one registration step,
//! counters of every data-path op, and QPs with a state. Each test
//! allocates its own devices and deallocates them, so names restart at
//! `mock_0` and the core ends every test with nothing registered.

use ib_core_rs::attr::{DeviceAttr, Gid, LinkLayer, PortAttr, PortImmutable, PortState};
use ib_core_rs::device::Device;
use ib_core_rs::driver::{Driver, DriverId};
use ib_core_rs::ops::{DeviceOps, Ops};
use ib_core_rs::verbs::CqHandler;
use ib_core_rs::verbs::{
    AccessFlags, Cq, CqInitAttr, CqNotify, Mr, MrCreated, MrType, Pd, Qp, QpAttr, QpAttrMask,
    QpCreated, QpInitAttr, QpState, RecvWr, SendWr, Srq, SrqInitAttr, Udata, UserCtx, Wc,
};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::Arc;

module! {
    type: IbCoreRsTest,
    name: "ib_core_rs_test",
    authors: ["rdma-rs developers"],
    description: "rdma-rs: KUnit suites of ib_core_rs with a mock RDMA driver",
    license: "GPL",
    params: {
        bench: u32 {
            default: 0,
            description: "Run the data-path dispatch benchmark with this many calls per figure (0: no)",
        },
        uobj_bench: u32 {
            default: 0,
            description: "Time uverbs handle lookups and destroy+create at 10..100k objects, up to this many (0: no)",
        },
    },
}

struct IbCoreRsTest;

impl kernel::Module for IbCoreRsTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let iters = module_parameters::bench.value();
        if iters > 0 {
            bench::run(iters)?;
        }
        let objs = module_parameters::uobj_bench.value();
        if objs > 0 {
            uobj_bench::run(objs)?;
        }
        Ok(IbCoreRsTest)
    }
}

/// Counts the frees of the mock devices that were given it (`new_dev_counted`). Each test
/// that counts frees has its own: a global count would also see a device of an earlier test
/// whose memory goes later (the last reference of a registered device can be dropped after
/// the test that made it has returned).
type DropCount = Arc<Atomic<i32>>;

/// Registration steps the mock can fail, in upstream's order.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
enum Step {
    None = 0,
    GetPortImmutable = 1,
    QueryDevice = 2,
    QueryPort = 3,
    QueryGid = 4,
    QueryPkey = 5,
    EnableDriver = 6,
}

const ALL_STEPS: [Step; 6] = [
    Step::GetPortImmutable,
    Step::QueryDevice,
    Step::QueryPort,
    Step::QueryGid,
    Step::QueryPkey,
    Step::EnableDriver,
];

struct Mock;

/// The mock's device (what `struct mlx5_ib_dev` is to mlx5).
struct MockDev {
    fail_at: Atomic<i32>,
    fail_create_qp: Atomic<bool>,
    pkey1: Atomic<i32>,
    port_state: Atomic<i32>,
    next_qpn: Atomic<i32>,
    pending: Atomic<i32>,
    posted_send: Atomic<i32>,
    posted_recv: Atomic<i32>,
    polls: Atomic<i32>,
    notifies: Atomic<i32>,
    destroyed: Atomic<i32>,
    enabled: Atomic<i32>,
    dealloc_driver: Atomic<i32>,
    drops: Option<DropCount>,
}

impl MockDev {
    fn new(fail_at: Step) -> Self {
        MockDev {
            fail_at: Atomic::new(fail_at as i32),
            fail_create_qp: Atomic::new(false),
            pkey1: Atomic::new(0x8001),
            port_state: Atomic::new(PortState::Active as i32),
            next_qpn: Atomic::new(0x100),
            pending: Atomic::new(0),
            posted_send: Atomic::new(0),
            posted_recv: Atomic::new(0),
            polls: Atomic::new(0),
            notifies: Atomic::new(0),
            destroyed: Atomic::new(0),
            enabled: Atomic::new(0),
            dealloc_driver: Atomic::new(0),
            drops: None,
        }
    }

    fn fails(&self, s: Step) -> Result {
        if self.fail_at.load(Relaxed) == s as i32 {
            Err(EIO)
        } else {
            Ok(())
        }
    }
}

impl Drop for MockDev {
    fn drop(&mut self) {
        if let Some(d) = &self.drops {
            d.fetch_add(1, Relaxed);
        }
    }
}

struct MockCq {
    armed: Atomic<bool>,
}

struct MockQp {
    state: Atomic<i32>,
}

impl Driver for Mock {
    type DevData = MockDev;
    type PdData = ();
    type CqData = MockCq;
    type QpData = MockQp;
    type SrqData = ();
    type MrData = u32;
    type AhData = ();
    type MwData = ();
    type DmData = ();
}

const GID_TBL_LEN: u32 = 4;
const PKEY_TBL_LEN: u32 = 2;
const SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;

/// The main table: device, ports and verbs.
struct MockOps;

#[vtable]
impl DeviceOps for MockOps {
    type Driver = Mock;

    fn query_device(dev: &Device<Mock>) -> Result<DeviceAttr> {
        dev.data().fails(Step::QueryDevice)?;
        Ok(DeviceAttr {
            vendor_id: 0x1234,
            node_guid: 0x0002_c903_0000_0001,
            max_qp: 64,
            ..DeviceAttr::default()
        })
    }

    fn get_port_immutable(dev: &Device<Mock>, port: u32) -> Result<PortImmutable> {
        // Fail on the last port so that earlier ports were already read.
        if port == dev.phys_port_cnt() {
            dev.data().fails(Step::GetPortImmutable)?;
        }
        Ok(PortImmutable {
            pkey_tbl_len: PKEY_TBL_LEN,
            gid_tbl_len: GID_TBL_LEN,
            core_cap_flags: 1,
            max_mad_size: 256,
            link_layer: LinkLayer::Infiniband,
        })
    }

    fn query_port(dev: &Device<Mock>, port: u32) -> Result<PortAttr> {
        dev.data().fails(Step::QueryPort)?;
        let state = match dev.data().port_state.load(Relaxed) {
            1 => PortState::Down,
            4 => PortState::Active,
            _ => PortState::Init,
        };
        Ok(PortAttr {
            subnet_prefix: SUBNET_PREFIX,
            state,
            phys_state: 5,
            lid: 7 + port,
            lmc: 1,
            ..PortAttr::default()
        })
    }

    fn query_gid(dev: &Device<Mock>, port: u32, index: u32) -> Result<Gid> {
        dev.data().fails(Step::QueryGid)?;
        // Entry 1 is empty.
        Ok(if index == 1 {
            Gid::ZERO
        } else {
            Gid::new(SUBNET_PREFIX, 0x1000 * u64::from(port) + u64::from(index))
        })
    }

    fn query_pkey(dev: &Device<Mock>, _port: u32, index: u32) -> Result<u16> {
        dev.data().fails(Step::QueryPkey)?;
        Ok(if index == 0 {
            0xffff
        } else {
            dev.data().pkey1.load(Relaxed) as u16
        })
    }

    fn enable_driver(dev: &Device<Mock>) -> Result {
        dev.data().fails(Step::EnableDriver)?;
        dev.data().enabled.fetch_add(1, Relaxed);
        Ok(())
    }

    fn dealloc_driver(dev: &Device<Mock>) {
        dev.data().dealloc_driver.fetch_add(1, Relaxed);
    }

    fn alloc_pd(_dev: &Device<Mock>, _user: Option<&mut UserCtx<'_, '_, Mock>>) -> Result<()> {
        Ok(())
    }

    fn dealloc_pd(pd: &Pd<Mock>) -> Result {
        pd.device().data().destroyed.fetch_add(1, Relaxed);
        Ok(())
    }

    fn create_cq(
        _dev: &Device<Mock>,
        _attr: &CqInitAttr,
        _handler: Option<&Arc<dyn CqHandler>>,
        _user: Option<&mut UserCtx<'_, '_, Mock>>,
    ) -> Result<MockCq> {
        Ok(MockCq {
            armed: Atomic::new(false),
        })
    }

    fn destroy_cq(cq: &Cq<Mock>) -> Result {
        cq.device().data().destroyed.fetch_add(1, Relaxed);
        Ok(())
    }

    fn req_notify_cq(cq: &Cq<Mock>, _flags: CqNotify) -> Result {
        cq.device().data().notifies.fetch_add(1, Relaxed);
        cq.data().armed.store(true, Relaxed);
        Ok(())
    }

    fn poll_cq(cq: &Cq<Mock>, wc: &mut [Wc]) -> Result<usize> {
        let d = cq.device().data();
        d.polls.fetch_add(1, Relaxed);
        let mut n = 0;
        while n < wc.len() && d.pending.load(Relaxed) > 0 {
            d.pending.fetch_sub(1, Relaxed);
            wc[n] = Wc {
                wr_id: n as u64,
                ..Wc::default()
            };
            n += 1;
        }
        Ok(n)
    }

    fn create_srq(
        _pd: &Pd<Mock>,
        _attr: &mut SrqInitAttr,
        _handler: Option<&Arc<dyn ib_core_rs::verbs::SrqHandler>>,
        _user: Option<&mut UserCtx<'_, '_, Mock>>,
    ) -> Result<()> {
        Ok(())
    }

    fn destroy_srq(srq: &Srq<Mock>) -> Result {
        srq.pd().device().data().destroyed.fetch_add(1, Relaxed);
        Ok(())
    }

    fn create_qp(
        pd: &Pd<Mock>,
        _attr: &QpInitAttr<'_, Mock>,
        _user: Option<&mut UserCtx<'_, '_, Mock>>,
    ) -> Result<QpCreated<MockQp>> {
        let d = pd.device().data();
        if d.fail_create_qp.load(Relaxed) {
            return Err(ENOSPC);
        }
        Ok(QpCreated {
            data: MockQp {
                state: Atomic::new(QpState::Reset as i32),
            },
            qp_num: d.next_qpn.fetch_add(1, Relaxed) as u32,
        })
    }

    fn modify_qp(
        qp: &Qp<Mock>,
        attr: &QpAttr,
        mask: QpAttrMask,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result {
        if mask.contains(QpAttrMask::STATE) {
            qp.data().state.store(attr.qp_state as i32, Relaxed);
        }
        Ok(())
    }

    fn query_qp(qp: &Qp<Mock>) -> Result<QpAttr> {
        let state = u8::try_from(qp.data().state.load(Relaxed))
            .ok()
            .and_then(|v| QpState::try_from(v).ok())
            .unwrap_or(QpState::Err);
        Ok(QpAttr {
            qp_state: state,
            ..QpAttr::default()
        })
    }

    fn destroy_qp(qp: &Qp<Mock>) -> Result {
        qp.device().data().destroyed.fetch_add(1, Relaxed);
        Ok(())
    }

    fn post_send(qp: &Qp<Mock>, wr: &[SendWr<'_>]) -> Result {
        let d = qp.device().data();
        d.posted_send.fetch_add(wr.len() as i32, Relaxed);
        d.pending.fetch_add(wr.len() as i32, Relaxed);
        let cq = qp.send_cq().ok_or(EINVAL)?;
        if cq.data().armed.xchg(false, Relaxed) {
            cq.completion_event();
        }
        Ok(())
    }

    fn post_recv(qp: &Qp<Mock>, wr: &[RecvWr<'_>]) -> Result {
        qp.device()
            .data()
            .posted_recv
            .fetch_add(wr.len() as i32, Relaxed);
        Ok(())
    }

    fn get_dma_mr(_pd: &Pd<Mock>, access: AccessFlags) -> Result<MrCreated<u32>> {
        Ok(MrCreated {
            data: access.0,
            lkey: 0x11,
            rkey: 0x22,
        })
    }

    fn alloc_mr(_pd: &Pd<Mock>, _t: MrType, max_num_sg: u32) -> Result<MrCreated<u32>> {
        Ok(MrCreated {
            data: max_num_sg,
            lkey: 0x33,
            rkey: 0x44,
        })
    }

    fn dereg_mr(mr: &Mr<Mock>) -> Result {
        mr.pd().device().data().destroyed.fetch_add(1, Relaxed);
        Ok(())
    }
}

/// Only the mandatory ops (a driver without kernel verbs).
struct MinimalOps;

#[vtable]
impl DeviceOps for MinimalOps {
    type Driver = Mock;

    fn query_device(_dev: &Device<Mock>) -> Result<DeviceAttr> {
        Ok(DeviceAttr::default())
    }

    fn query_port(_dev: &Device<Mock>, _port: u32) -> Result<PortAttr> {
        Ok(PortAttr::default())
    }

    fn get_port_immutable(_dev: &Device<Mock>, _port: u32) -> Result<PortImmutable> {
        Ok(PortImmutable::default())
    }
}

/// A table without `query_port`.
struct NoQueryPortOps;

#[vtable]
impl DeviceOps for NoQueryPortOps {
    type Driver = Mock;

    fn query_device(_dev: &Device<Mock>) -> Result<DeviceAttr> {
        Ok(DeviceAttr::default())
    }

    fn get_port_immutable(_dev: &Device<Mock>, _port: u32) -> Result<PortImmutable> {
        Ok(PortImmutable::default())
    }
}

/// A partial table claiming RXE's id, ABI 2, with its own `query_device`.
struct RxeIdOps;

#[vtable]
impl DeviceOps for RxeIdOps {
    type Driver = Mock;
    const DRIVER_ID: DriverId = DriverId::Rxe;
    const UVERBS_ABI_VER: u32 = 2;

    fn query_device(_dev: &Device<Mock>) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            vendor_id: 0xaaaa,
            ..DeviceAttr::default()
        })
    }
}

/// A partial table claiming mlx5's id.
struct Mlx5IdOps;

#[vtable]
impl DeviceOps for Mlx5IdOps {
    type Driver = Mock;
    const DRIVER_ID: DriverId = DriverId::Mlx5;
    const UVERBS_ABI_VER: u32 = 3;

    fn query_port(_dev: &Device<Mock>, _port: u32) -> Result<PortAttr> {
        Ok(PortAttr::default())
    }
}

const MOCK_OPS: Ops<Mock> = Ops::of::<MockOps>();

fn new_dev(ports: u32, fail_at: Step) -> Result<Arc<Device<Mock>>> {
    Device::alloc(&MOCK_OPS, ports, Ok(MockDev::new(fail_at)))
}

/// A device whose free is counted in `drops`.
fn new_dev_counted(ports: u32, fail_at: Step, drops: &DropCount) -> Result<Arc<Device<Mock>>> {
    let mut m = MockDev::new(fail_at);
    m.drops = Some(drops.clone());
    Device::alloc(&MOCK_OPS, ports, Ok(m))
}

fn registered(ports: u32) -> Result<Arc<Device<Mock>>> {
    let dev = new_dev(ports, Step::None)?;
    Device::register(&dev, c"mock_%d")?;
    Ok(dev)
}

#[path = "ib_core_rs_test/bench.rs"]
mod bench;
#[path = "ib_core_rs_test/clients.rs"]
mod clients;
#[path = "ib_core_rs_test/device.rs"]
mod device;
#[path = "ib_core_rs_test/ops.rs"]
mod ops;
#[path = "ib_core_rs_test/roce_gid.rs"]
mod roce_gid;
#[path = "ib_core_rs_test/uobj_bench.rs"]
mod uobj_bench;
#[path = "ib_core_rs_test/verbs.rs"]
mod verbs;
