// SPDX-License-Identifier: GPL-2.0

//! Keeps mock RDMA devices registered while it is loaded, for the VM suites that look at
//! them from user space (`tests/vm/sysfs.sh`: sysfs, `rdma dev`, `rdma link`, `rdma res`).
//!
//! At load: `mock_0` and `mock_1`, one InfiniBand port each (state ACTIVE, LinkUp, 4X EDR,
//! LID 7 + device number, a GID table of 4 with entry 1 empty, a P_Key table of 2), firmware
//! `1.2.3`; on `mock_0` a kernel PD, a CQ of 16 entries, an RC QP moved to INIT and a DMA MR,
//! owned by this module. Unload destroys them and deallocates the devices.

use ib_core_rs::attr::{DeviceAttr, Gid, LinkLayer, PortAttr, PortImmutable, PortState};
use ib_core_rs::device::Device;
use ib_core_rs::driver::Driver;
use ib_core_rs::kernel_owner;
use ib_core_rs::ops::{DeviceOps, Ops};
use ib_core_rs::verbs::CqHandler;
use ib_core_rs::verbs::{
    AccessFlags, Cq, CqInitAttr, Mr, MrCreated, Pd, Qp, QpAttr, QpAttrMask, QpCap, QpCreated,
    QpInitAttr, QpState, QpType, Udata, UserCtx,
};
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::Arc;

module! {
    type: MockDevs,
    name: "ib_core_rs_mockdev",
    authors: ["rdma-rs developers"],
    description: "rdma-rs: mock RDMA devices kept registered for user-space tests",
    license: "GPL",
}

struct Mock;

impl Driver for Mock {
    type DevData = u32;
    type PdData = ();
    type CqData = ();
    type QpData = ();
    type SrqData = ();
    type MrData = ();
    type AhData = ();
    type MwData = ();
    type DmData = ();
}

const SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;

struct MockOps;

#[vtable]
impl DeviceOps for MockOps {
    type Driver = Mock;

    fn query_device(dev: &Device<Mock>) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            fw_ver: 0x0001_0002_0003,
            node_guid: 0x0002_c903_00ab_0000 + u64::from(*dev.data()),
            sys_image_guid: 0x0002_c903_00ab_1000,
            vendor_id: 0x02c9,
            max_qp: 64,
            max_cq: 64,
            max_mr: 64,
            max_pd: 64,
            ..DeviceAttr::default()
        })
    }

    fn get_port_immutable(_dev: &Device<Mock>, _port: u32) -> Result<PortImmutable> {
        Ok(PortImmutable {
            pkey_tbl_len: 2,
            gid_tbl_len: 4,
            core_cap_flags: 1,
            max_mad_size: 256,
            link_layer: LinkLayer::Infiniband,
        })
    }

    fn query_port(dev: &Device<Mock>, _port: u32) -> Result<PortAttr> {
        Ok(PortAttr {
            subnet_prefix: SUBNET_PREFIX,
            state: PortState::Active,
            phys_state: 5,
            lid: 7 + *dev.data(),
            lmc: 0,
            sm_lid: 1,
            sm_sl: 0,
            port_cap_flags: 0x0251_0868,
            active_width: 2,
            active_speed: 32,
            ..PortAttr::default()
        })
    }

    fn query_gid(dev: &Device<Mock>, port: u32, index: u32) -> Result<Gid> {
        Ok(if index == 1 {
            Gid::ZERO
        } else {
            Gid::new(
                SUBNET_PREFIX,
                0x0002_c903_00ab_0000
                    + u64::from(*dev.data()) * 0x100
                    + u64::from(port * 16 + index),
            )
        })
    }

    fn query_pkey(_dev: &Device<Mock>, _port: u32, index: u32) -> Result<u16> {
        Ok(if index == 0 { 0xffff } else { 0x8001 })
    }

    fn get_dev_fw_str(_dev: &Device<Mock>) -> Result<CString> {
        CString::try_from_fmt(fmt!("1.2.3"))
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
        _handler: Option<&Arc<dyn CqHandler>>,
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
    ) -> Result<QpCreated<()>> {
        Ok(QpCreated {
            data: (),
            qp_num: 0x101,
        })
    }

    fn modify_qp(
        _qp: &Qp<Mock>,
        _attr: &QpAttr,
        _mask: QpAttrMask,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result {
        Ok(())
    }

    fn destroy_qp(_qp: &Qp<Mock>) -> Result {
        Ok(())
    }

    fn get_dma_mr(_pd: &Pd<Mock>, _access: AccessFlags) -> Result<MrCreated<()>> {
        Ok(MrCreated {
            data: (),
            lkey: 0x1100,
            rkey: 0x2200,
        })
    }

    fn dereg_mr(_mr: &Mr<Mock>) -> Result {
        Ok(())
    }
}

const MOCK_OPS: Ops<Mock> = Ops::of::<MockOps>();

/// The objects on `mock_0`, destroyed in reverse order at unload.
struct Objects {
    mr: Arc<Mr<Mock>>,
    qp: Arc<Qp<Mock>>,
    cq: Arc<Cq<Mock>>,
    pd: Arc<Pd<Mock>>,
}

struct MockDevs {
    objs: Option<Objects>,
    devs: KVec<Arc<Device<Mock>>>,
}

fn objects(dev: &Arc<Device<Mock>>) -> Result<Objects> {
    let pd = Pd::alloc(dev, kernel_owner!())?;
    let cq = Cq::create(
        dev,
        &CqInitAttr {
            cqe: 16,
            comp_vector: 0,
            flags: 0,
        },
        None,
        kernel_owner!(),
    )?;
    let qp = Qp::create(
        &pd,
        &QpInitAttr {
            send_cq: &cq,
            recv_cq: &cq,
            srq: None,
            qp_type: QpType::Rc,
            cap: QpCap {
                max_send_wr: 8,
                max_recv_wr: 8,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            event_handler: None,
        },
        kernel_owner!(),
    )?;
    qp.modify(
        &QpAttr {
            qp_state: QpState::Init,
            port_num: 1,
            ..QpAttr::default()
        },
        QpAttrMask::STATE,
    )?;
    let mr = Mr::get_dma_mr(&pd, AccessFlags(1), kernel_owner!())?;
    Ok(Objects { mr, qp, cq, pd })
}

impl kernel::Module for MockDevs {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut this = MockDevs {
            objs: None,
            devs: KVec::new(),
        };
        for i in 0..2u32 {
            let dev = Device::alloc(&MOCK_OPS, 1, Ok(i))?;
            dev.set_node_desc(b"rdma-rs mock HCA");
            Device::register(&dev, c"mock_%d")?;
            this.devs.push(dev, GFP_KERNEL)?;
        }
        this.objs = Some(objects(&this.devs[0])?);
        Ok(this)
    }
}

impl Drop for MockDevs {
    fn drop(&mut self) {
        if let Some(o) = self.objs.take() {
            let _ = Mr::dereg(o.mr);
            let _ = Qp::destroy(o.qp);
            let _ = Cq::destroy(o.cq);
            let _ = Pd::dealloc(o.pd);
        }
        while let Some(dev) = self.devs.pop() {
            Device::dealloc(dev);
        }
    }
}
