// SPDX-License-Identifier: GPL-2.0

//! The RDMA device of a function: the core's [`Driver`] types, the op tables and registration
//! (upstream `mlx5_ib_dev_ops`, `mlx5_ib_dev_port_ops`, `mlx5_ib_stage_ib_reg_init()`,
//! main.c).
//!
//! The device data ([`Mlx5IbDev`]) holds what the ops need for as long as the core's device
//! lives: a `'static` handle on the hardware, the attributes probe computed, the ports, the
//! kernel UAR page. Verbs objects hold the device, so an object a kernel consumer leaks past
//! remove can still be destroyed (its commands go to the same function).
//!
//! Op tables are assembled as upstream's stages install them with `ib_set_device_ops()`
//! (first setter wins): the main table ([`Mlx5DevOps`], `mlx5_ib_stage_caps_init()`), then the
//! port table chosen by the link layer ([`Mlx5IbPortOps`] or [`Mlx5RocePortOps`];
//! `mlx5_ib_stage_non_default_cb()` / `mlx5_ib_roce_init()`).

use crate::attrs::{DeviceAttrs, PortAttrs, PortImmutable as Mlx5PortImmutable};
use crate::cmd::exec;
use crate::cmd::query::{QueryHcaVportGid, QueryHcaVportPkey, TableIndex};
use crate::cmd::res::{RoceAddr, RoceL3Type, RoceVersion, SetRoceAddress};
use crate::dev::{port_attrs, OpGroups};
use crate::hw::Mlx5Hw;
use crate::verbs::{Mlx5Ah, Mlx5Cq, Mlx5Mr, Mlx5Pd, Mlx5Qp};
use crate::verbs_user::{CqMem, QpMem};
use ib_core_rs::attr::{DeviceAttr, Gid, GidType, LinkLayer, PortAttr, PortImmutable, PortState};
use ib_core_rs::device::Device;
use ib_core_rs::driver::{Driver, DriverId};
use ib_core_rs::mm::UserVma;
use ib_core_rs::ops::{DeviceOps, Ops};
use ib_core_rs::uverbs::driver_api::{DriverCall, ObjectSpec};
use ib_core_rs::verbs::{
    AccessFlags, AhAttr, Cq, CqHandler, CqInitAttr, CqNotify, Mr, MrCreated, MrType, Mw, MwCreated,
    MwType, Pd, Qp, QpAttr, QpAttrMask, QpCreated, QpInitAttr, RecvWr, ReregFlags, SendWr, Srq,
    SrqAttrMask, SrqHandler, SrqInitAttr, Ucontext, UcontextPriv, Udata, UserCtx, UserMrReq, Wc,
};
use ib_core_rs::verbs::{Dm, DmAllocAttr, DmMrAttr, QpHandler, XrcSrqCreated, Xrcd};
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::Arc;

/// `1 << UVERBS_ID_NS_SHIFT`: the first id of the driver namespace, where the driver's
/// objects, methods and attributes (`crate::uar`, `crate::devx`, `crate::dm`;
/// mlx5_user_ioctl_cmds.h) are numbered.
pub(crate) const DRIVER_NS: u16 = 1 << 12;

/// Declares the members of upstream's driver-namespace enums (`enum mlx5_ib_objects`,
/// `enum mlx5_ib_devx_methods`, ...; mlx5_user_ioctl_cmds.h) as private `u16` consts numbered
/// as the C enum numbers them: each list's first member is [`DRIVER_NS`] (or `= start` where
/// the driver leaves earlier members out), each next one more. The doc comment is the first
/// member's.
macro_rules! driver_ids {
    (@next $prev:ident) => {};
    (@next $prev:ident $name:ident $($rest:ident)*) => {
        const $name: u16 = $prev + 1;
        crate::ib::driver_ids!(@next $name $($rest)*);
    };
    ($($(#[$doc:meta])* $first:ident $(= $start:expr)? $(, $rest:ident)*;)*) => {
        $(
            $(#[$doc])*
            const $first: u16 = crate::ib::driver_ids!(@start $($start)?);
            crate::ib::driver_ids!(@next $first $($rest)*);
        )*
    };
    (@start) => {
        crate::ib::DRIVER_NS
    };
    (@start $start:expr) => {
        $start
    };
}
pub(crate) use driver_ids;

/// The mlx5 driver's types.
pub(crate) struct Mlx5Ib;

impl Driver for Mlx5Ib {
    type DevData = Mlx5IbDev;
    type PdData = Mlx5Pd;
    type CqData = Mlx5Cq;
    type QpData = Mlx5Qp;
    type SrqData = crate::verbs_user::Mlx5Srq;
    type MrData = Mlx5Mr;
    type AhData = Mlx5Ah;
    type MwData = crate::verbs_user::Mlx5Mw;
    type DmData = crate::dm::Mlx5Dm;
}

/// One port (upstream `struct mlx5_ib_port`, with what the `PORTS` stage learned).
pub(crate) struct IbPort {
    /// 1-based port number.
    pub(crate) num: u8,
    /// Link layer.
    pub(crate) link_layer: LinkLayer,
    /// `query_port` at probe (the `query_port` op asks the firmware again, as upstream).
    pub(crate) attrs: PortAttrs,
    /// `get_port_immutable`.
    pub(crate) immutable: Mlx5PortImmutable,
    /// InfiniBand: the GID table from firmware at probe (RoCE GIDs are in `roce_gids`).
    pub(crate) gids: KVec<[u8; 16]>,
    /// InfiniBand: the P_Key table at probe (Ethernet has the one default P_Key).
    pub(crate) pkeys: KVec<u16>,
    /// Ethernet: the port MAC (NIC vport `permanent_address`).
    pub(crate) mac: Option<[u8; 6]>,
    /// Ethernet: the GID table as programmed with SET_ROCE_ADDRESS at `IB_REG` (upstream keeps
    /// it in the core's software GID table; `query_gid` reads it here).
    pub(crate) roce_gids: KVec<[u8; 16]>,
}

/// The names of [`crate::cmd::res::Q_COUNTERS`] (upstream `cnts->descs`).
static Q_COUNTER_NAMES: [&CStr; 10] = {
    let q = &crate::cmd::res::Q_COUNTERS;
    [
        q[0].0, q[1].0, q[2].0, q[3].0, q[4].0, q[5].0, q[6].0, q[7].0, q[8].0, q[9].0,
    ]
};

/// The device (upstream `struct mlx5_ib_dev`), embedded in the core's device allocation:
/// allocated before the probe stages ([`crate::dev::Mlx5Dev::probe`], upstream `mlx5r_probe()`
/// calls `ib_alloc_device()`), filled by them, read by the ops.
pub(crate) struct Mlx5IbDev {
    /// The function, whichever backend reaches it.
    pub(crate) hw: Arc<dyn Mlx5Hw>,
    /// QUERY_ADAPTER (`INIT`).
    pub(crate) vendor_id: u32,
    /// Board id (PSID, QUERY_ADAPTER), NUL padding dropped.
    pub(crate) board_id: KVec<u8>,
    /// Node GUID (`INIT`; the core's `node_guid` comes from `attrs`).
    pub(crate) node_guid: u64,
    /// System image GUID (`INIT`).
    pub(crate) sys_image_guid: u64,
    /// Node description (the NODE_DESC register, `INIT`), NUL padded.
    pub(crate) node_desc: [u8; 64],
    /// `query_device`, computed in `CAPS`.
    pub(crate) attrs: DeviceAttrs,
    /// Optional op groups (`NON_DEFAULT_CB`).
    pub(crate) ops: OpGroups,
    /// Ports, in order (`PORTS`).
    pub(crate) ports: KVec<IbPort>,
    /// The kernel PD (upstream `devr->p0`, `DEVICE_RESOURCES`).
    pub(crate) pdn: Option<u32>,
    /// The port's Q counter set (upstream `dev->port[0].cnts.set_id`, `COUNTERS`; None: the
    /// device reports no `max_qp_cnt`).
    pub(crate) qcnt: Option<u32>,
    /// The kernel UAR page (`BFREG`): CQ and QP doorbells of kernel objects.
    pub(crate) uar: u32,
    /// upstream `dev->mkey_var`: the variant byte of the next mkey.
    pub(crate) mkey_var: Atomic<u32>,
    /// The CQ and QP tables the device's events are delivered through (registered with the
    /// function as its event handler while the device is registered).
    pub(crate) events: Arc<crate::events::EventTable>,
    /// User UARs whose deallocation the device refused while CQs or QPs still named them.
    pub(crate) deferred_deallocs: Arc<crate::uar::DeferredDeallocs>,
    /// The MEMIC window and its page bitmap (upstream `dev->dm`), with `device_mem_cap.memic`
    /// (`IB_REG`).
    pub(crate) memic: Option<Arc<crate::dm::MemicDb>>,
}

impl Mlx5IbDev {
    /// The device of `hw` as allocated, before the stages fill it.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(hw: Arc<dyn Mlx5Hw>) -> Result<Self> {
        Ok(Self {
            deferred_deallocs: crate::uar::DeferredDeallocs::new(hw.clone())?,
            hw,
            vendor_id: 0,
            board_id: KVec::new(),
            node_guid: 0,
            sys_image_guid: 0,
            node_desc: [0; 64],
            attrs: DeviceAttrs::default(),
            ops: OpGroups::default(),
            ports: KVec::new(),
            pdn: None,
            qcnt: None,
            uar: 0,
            mkey_var: Atomic::new(0),
            events: crate::events::EventTable::new()?,
            memic: None,
        })
    }

    /// The port's Q counter set id, 0 without one.
    pub(crate) fn qcnt_set(&self) -> u32 {
        self.qcnt.unwrap_or(0)
    }

    /// The port `num` (1-based).
    ///
    /// # Errors
    ///
    /// `EINVAL` for port 0 or a port the function does not have.
    pub(crate) fn port(&self, num: u32) -> Result<&IbPort> {
        let i = usize::try_from(num).map_err(|_| EINVAL)?;
        self.ports
            .get(i.checked_sub(1).ok_or(EINVAL)?)
            .ok_or(EINVAL)
    }

    /// sysfs `hw_rev` (upstream `hw_rev_show()`: `%x` of the PCI revision).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn hw_rev(&self) -> Result<CString> {
        CString::try_from_fmt(fmt!("{:x}", self.hw.identity().pci_revision))
    }

    /// sysfs `hca_type` (upstream `hca_type_show()`: `MT%d` of the PCI device id).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn hca_type(&self) -> Result<CString> {
        CString::try_from_fmt(fmt!("MT{}", self.hw.identity().pci_device))
    }

    /// sysfs `board_id` (upstream `board_id_show()`: the PSID).
    ///
    /// # Errors
    ///
    /// `EINVAL` if the board id is not UTF-8, `ENOMEM`.
    pub(crate) fn board_id(&self) -> Result<CString> {
        let s = core::str::from_utf8(&self.board_id).map_err(|_| EINVAL)?;
        CString::try_from_fmt(fmt!("{}", s))
    }

    /// `fw_ver` (upstream `get_dev_fw_str()`: `%d.%d.%04d` of fw_rev_maj/min/sub).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn fw_ver(&self) -> Result<CString> {
        let (a, b, c) = self.hw.identity().fw_rev;
        CString::try_from_fmt(fmt!("{}.{}.{:04}", a, b, c))
    }

    /// sysfs `fw_pages` and `reg_pages` (upstream `fw_pages_show()`/`reg_pages_show()`:
    /// `mdev->priv.fw_pages` / `reg_pages`, pages given to firmware by MANAGE_PAGES). The
    /// simulator asks for no pages (it has no boot/init page requests), so both are 0; the
    /// mlx5_core backend does not register an RDMA device yet.
    pub(crate) fn fw_pages(&self) -> (u32, u32) {
        (0, 0)
    }

    /// The variant byte of a new mkey (upstream `assign_mkey_variant()`).
    pub(crate) fn next_mkey_variant(&self) -> u8 {
        (self.mkey_var.fetch_add(1, Relaxed).wrapping_add(1) & 0xff) as u8
    }
}

/// upstream `mlx5_ib_query_device()`: the attributes computed in `CAPS`.
fn device_attr(a: &DeviceAttrs) -> DeviceAttr {
    DeviceAttr {
        fw_ver: a.fw_ver,
        node_guid: a.node_guid,
        sys_image_guid: a.sys_image_guid,
        vendor_id: a.vendor_id,
        vendor_part_id: a.vendor_part_id,
        hw_ver: a.hw_ver,
        max_qp: a.max_qp,
        max_qp_wr: a.max_qp_wr,
        max_cq: a.max_cq,
        max_cqe: a.max_cqe,
        max_mr: a.max_mr,
        max_pd: a.max_pd,
        device_cap_flags: a.device_cap_flags,
        timestamp_mask: a.timestamp_mask,
        hca_core_clock: a.hca_core_clock,
        max_cq_moderation_count: a.max_cq_moderation_count,
        max_cq_moderation_period: a.max_cq_moderation_period,
        max_dm_size: a.max_dm_size,
        max_mr_size: a.max_mr_size,
        page_size_cap: a.page_size_cap,
        max_send_sge: a.max_send_sge,
        max_recv_sge: a.max_recv_sge,
        max_sge_rd: a.max_sge_rd,
        max_qp_rd_atom: a.max_qp_rd_atom,
        max_qp_init_rd_atom: a.max_qp_init_rd_atom,
        max_res_rd_atom: a.max_res_rd_atom,
        atomic_cap: a.atomic_cap,
        max_srq: a.max_srq,
        max_srq_wr: a.max_srq_wr,
        max_srq_sge: a.max_srq_sge,
        max_mw: a.max_mw,
        max_mcast_grp: a.max_mcast_grp,
        max_mcast_qp_attach: a.max_mcast_qp_attach,
        max_total_mcast_qp_attach: a.max_total_mcast_qp_attach,
        max_ah: a.max_ah,
        local_ca_ack_delay: a.local_ca_ack_delay,
    }
}

/// `enum ib_port_state` from the number mlx5's attribute code computes.
fn port_state(s: u8) -> PortState {
    match s {
        1 => PortState::Down,
        2 => PortState::Init,
        3 => PortState::Armed,
        4 => PortState::Active,
        5 => PortState::ActiveDefer,
        _ => PortState::Nop,
    }
}

fn port_attr(a: &PortAttrs, subnet_prefix: u64) -> PortAttr {
    PortAttr {
        subnet_prefix,
        state: port_state(a.state),
        phys_state: a.phys_state,
        lid: a.lid,
        lmc: a.lmc,
        sm_lid: a.sm_lid,
        sm_sl: a.sm_sl,
        port_cap_flags: a.port_cap_flags,
        active_width: a.active_width,
        active_speed: a.active_speed,
        max_mtu: a.max_mtu,
        active_mtu: a.active_mtu,
        max_msg_sz: a.max_msg_sz,
        max_vl_num: a.max_vl_num,
        subnet_timeout: a.subnet_timeout,
    }
}

fn immutable(p: &IbPort) -> PortImmutable {
    PortImmutable {
        pkey_tbl_len: p.immutable.pkey_tbl_len,
        gid_tbl_len: p.immutable.gid_tbl_len,
        core_cap_flags: p.immutable.core_cap_flags,
        max_mad_size: p.immutable.max_mad_size,
        link_layer: p.link_layer,
    }
}

/// The main table (upstream `mlx5_ib_dev_ops`).
pub(crate) struct Mlx5DevOps;

#[vtable]
impl DeviceOps for Mlx5DevOps {
    type Driver = Mlx5Ib;
    const DRIVER_ID: DriverId = DriverId::Mlx5;
    // upstream: MLX5_IB_UVERBS_ABI_VERSION
    const UVERBS_ABI_VER: u32 = 1;
    // upstream: mlx5_ib_defs, the UAR object and DEVX (`mlx5_ib_devx_defs`; flow steering,
    // VAR, PP: not done).
    const UVERBS_OBJECTS: &'static [ObjectSpec] = &[
        crate::uar::UAR_OBJECT,
        crate::devx::DEVX_OBJECT,
        crate::devx::DEVX_OBJ_OBJECT,
        crate::devx::DEVX_UMEM_OBJECT,
        crate::dm::DM_OBJECT,
        crate::devx::DEVX_ASYNC_CMD_FD_OBJECT,
        crate::devx::DEVX_ASYNC_EVENT_FD_OBJECT,
    ];

    fn query_device(dev: &Device<Mlx5Ib>) -> Result<DeviceAttr> {
        Ok(device_attr(&dev.data().attrs))
    }

    fn get_dev_fw_str(dev: &Device<Mlx5Ib>) -> Result<CString> {
        dev.data().fw_ver()
    }

    // upstream mlx5_ib_query_pkey(): the HCA vport method on InfiniBand; an Ethernet port
    // has the one default P_Key.
    fn query_pkey(dev: &Device<Mlx5Ib>, port: u32, index: u32) -> Result<u16> {
        let d = dev.data();
        let p = d.port(port)?;
        if index >= p.immutable.pkey_tbl_len {
            return Err(EINVAL);
        }
        match p.link_layer {
            LinkLayer::Ethernet => Ok(0xffff),
            LinkLayer::Infiniband => {
                let idx = u16::try_from(index).map_err(|_| EINVAL)?;
                let v = exec(
                    &*d.hw,
                    &QueryHcaVportPkey {
                        port: p.num,
                        index: TableIndex::One(idx),
                    },
                )?;
                v.first().copied().ok_or(EIO)
            }
        }
    }

    fn query_device_udata(dev: &Device<Mlx5Ib>, udata: &mut Udata<'_>) -> Result {
        crate::ucontext::query_device_udata(dev, udata)
    }

    fn alloc_ucontext(dev: &Device<Mlx5Ib>, udata: &mut Udata<'_>) -> Result<UcontextPriv> {
        crate::ucontext::alloc_ucontext(dev, udata)
    }

    fn dealloc_ucontext(ctx: &Ucontext<Mlx5Ib>) {
        crate::ucontext::dealloc_ucontext(ctx)
    }

    fn mmap(ctx: &Ucontext<Mlx5Ib>, vma: &mut UserVma<'_>) -> Result {
        crate::uar::mmap(ctx, vma)
    }

    fn uverbs_method(handler: u16, call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
        if crate::devx::owns(handler) {
            return crate::devx::uverbs_method(handler, call);
        }
        crate::uar::uverbs_method(handler, call)
    }

    fn alloc_pd(
        dev: &Device<Mlx5Ib>,
        user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
    ) -> Result<Mlx5Pd> {
        crate::verbs::alloc_pd(dev, user)
    }

    fn dealloc_pd(pd: &Pd<Mlx5Ib>) -> Result {
        crate::verbs::dealloc_pd(pd)
    }

    fn create_cq(
        dev: &Device<Mlx5Ib>,
        attr: &CqInitAttr,
        handler: Option<&Arc<dyn CqHandler>>,
        user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
    ) -> Result<Mlx5Cq> {
        match user {
            Some(u) => crate::verbs_user::create_cq(dev, attr, handler, u, CqMem::FromRequest),
            None => crate::verbs::create_cq(dev, attr, handler),
        }
    }

    fn destroy_cq(cq: &Cq<Mlx5Ib>) -> Result {
        crate::verbs::destroy_cq(cq)
    }

    fn poll_cq(cq: &Cq<Mlx5Ib>, wc: &mut [Wc]) -> Result<usize> {
        crate::datapath::poll_cq(cq, wc)
    }

    fn req_notify_cq(cq: &Cq<Mlx5Ib>, flags: CqNotify) -> Result {
        crate::datapath::req_notify_cq(cq, flags)
    }

    fn resize_user_cq(cq: &Cq<Mlx5Ib>, cqe: u32, user: &mut UserCtx<'_, '_, Mlx5Ib>) -> Result {
        crate::verbs_user::resize_cq(cq, cqe, user)
    }

    fn modify_cq(cq: &Cq<Mlx5Ib>, count: u16, period: u16) -> Result {
        crate::verbs_user::modify_cq(cq, count, period)
    }

    fn create_qp(
        pd: &Pd<Mlx5Ib>,
        attr: &QpInitAttr<'_, Mlx5Ib>,
        user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
    ) -> Result<QpCreated<Mlx5Qp>> {
        match user {
            Some(u) => crate::verbs_user::create_qp(pd, attr, u, QpMem::FromRequest),
            None => crate::verbs::create_qp(pd, attr),
        }
    }

    fn modify_qp(qp: &Qp<Mlx5Ib>, attr: &QpAttr, mask: QpAttrMask) -> Result {
        crate::verbs::modify_qp(qp, attr, mask)
    }

    fn query_qp(qp: &Qp<Mlx5Ib>) -> Result<QpAttr> {
        crate::verbs::query_qp(qp)
    }

    fn destroy_qp(qp: &Qp<Mlx5Ib>) -> Result {
        crate::verbs::destroy_qp(qp)
    }

    fn create_srq(
        pd: &Pd<Mlx5Ib>,
        attr: &mut SrqInitAttr,
        handler: Option<&Arc<dyn SrqHandler>>,
        user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
    ) -> Result<crate::verbs_user::Mlx5Srq> {
        crate::verbs_user::create_srq(pd, attr, handler, user)
    }

    fn modify_srq(
        srq: &Srq<Mlx5Ib>,
        attr: &SrqInitAttr,
        mask: SrqAttrMask,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result {
        crate::verbs_user::modify_srq(srq, attr, mask)
    }

    fn query_srq(srq: &Srq<Mlx5Ib>) -> Result<SrqInitAttr> {
        crate::verbs_user::query_srq(srq)
    }

    fn destroy_srq(srq: &Srq<Mlx5Ib>) -> Result {
        crate::verbs_user::destroy_srq(srq)
    }

    fn post_send(qp: &Qp<Mlx5Ib>, wr: &[SendWr<'_>]) -> Result {
        crate::datapath::post_send(qp, wr)
    }

    fn post_recv(qp: &Qp<Mlx5Ib>, wr: &[RecvWr<'_>]) -> Result {
        crate::datapath::post_recv(qp, wr)
    }

    fn get_dma_mr(pd: &Pd<Mlx5Ib>, access: AccessFlags) -> Result<MrCreated<Mlx5Mr>> {
        crate::verbs::get_dma_mr(pd, access)
    }

    fn reg_user_mr(
        pd: &Pd<Mlx5Ib>,
        req: &UserMrReq,
        user: &mut UserCtx<'_, '_, Mlx5Ib>,
    ) -> Result<MrCreated<Mlx5Mr>> {
        crate::verbs_user::reg_user_mr(pd, req, user, None)
    }

    fn hw_port_stat_names(dev: &Device<Mlx5Ib>, _port: u32) -> Option<&'static [&'static CStr]> {
        (dev.data().qcnt_set() != 0).then_some(&Q_COUNTER_NAMES[..])
    }

    fn get_hw_stats(dev: &Device<Mlx5Ib>, _port: u32, out: &mut [u64]) -> Result<usize> {
        crate::verbs::get_hw_stats(dev, out)
    }

    fn counter_bind_qp(dev: &Device<Mlx5Ib>, id: u32, qpn: u32, _port: u32) -> Result<u32> {
        crate::verbs::counter_bind_qp(dev, id, qpn)
    }

    fn counter_unbind_qp(dev: &Device<Mlx5Ib>, qpn: u32, _port: u32) -> Result {
        crate::verbs::counter_unbind_qp(dev, qpn)
    }

    fn counter_dealloc(dev: &Device<Mlx5Ib>, id: u32) -> Result {
        crate::verbs::counter_dealloc(dev, id)
    }

    fn counter_update_stats(
        dev: &Device<Mlx5Ib>,
        id: u32,
        _port: u32,
        out: &mut [u64],
    ) -> Result<usize> {
        crate::verbs::counter_update_stats(dev, id, out)
    }

    fn rereg_user_mr(
        mr: &Mr<Mlx5Ib>,
        flags: ReregFlags,
        req: &UserMrReq,
        new_pd: &Pd<Mlx5Ib>,
        user: &mut UserCtx<'_, '_, Mlx5Ib>,
    ) -> Result<MrCreated<Mlx5Mr>> {
        crate::verbs_user::rereg_user_mr(mr, flags, req, new_pd, user)
    }

    fn alloc_mr(pd: &Pd<Mlx5Ib>, mr_type: MrType, max_num_sg: u32) -> Result<MrCreated<Mlx5Mr>> {
        crate::verbs::alloc_mr(pd, mr_type, max_num_sg)
    }

    fn dereg_mr(mr: &Mr<Mlx5Ib>) -> Result {
        crate::verbs::dereg_mr(mr)
    }

    fn create_ah(
        pd: &Pd<Mlx5Ib>,
        attr: &AhAttr,
        user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
    ) -> Result<Mlx5Ah> {
        crate::verbs::create_ah(pd, attr, user)
    }
}

/// upstream `mlx5_ib_query_port()` through the device's hardware; `get_port_immutable` is
/// `mlx5_port_immutable()` of what probe computed.
fn query_port_common(dev: &Device<Mlx5Ib>, port: u32) -> Result<(PortAttrs, &IbPort)> {
    let d = dev.data();
    let p = d.port(port)?;
    let (attrs, _, _) = port_attrs(&*d.hw, p.num, p.link_layer)?;
    Ok((attrs, p))
}

/// The port table of an InfiniBand function (upstream `mlx5_ib_dev_port_ops`; GIDs from the
/// HCA vport context, `mlx5_query_hca_vport_gid()`).
pub(crate) struct Mlx5IbPortOps;

#[vtable]
impl DeviceOps for Mlx5IbPortOps {
    type Driver = Mlx5Ib;

    fn query_port(dev: &Device<Mlx5Ib>, port: u32) -> Result<PortAttr> {
        let (a, _) = query_port_common(dev, port)?;
        // upstream __ib_query_port(): the subnet prefix of an IB port is GID 0's.
        let gid0 = Self::query_gid(dev, port, 0)?;
        let mut prefix = [0u8; 8];
        prefix.copy_from_slice(&gid0.0[..8]);
        Ok(port_attr(&a, u64::from_be_bytes(prefix)))
    }

    fn get_port_immutable(dev: &Device<Mlx5Ib>, port: u32) -> Result<PortImmutable> {
        Ok(immutable(dev.data().port(port)?))
    }

    fn query_gid(dev: &Device<Mlx5Ib>, port: u32, index: u32) -> Result<Gid> {
        let d = dev.data();
        let p = d.port(port)?;
        if index >= p.immutable.gid_tbl_len {
            return Err(EINVAL);
        }
        let idx = u16::try_from(index).map_err(|_| EINVAL)?;
        let v = exec(
            &*d.hw,
            &QueryHcaVportGid {
                port: p.num,
                index: TableIndex::One(idx),
            },
        )?;
        v.first().copied().map(Gid).ok_or(EIO)
    }
}

/// The port table of an Ethernet (RoCE) function (upstream `mlx5_ib_dev_port_ops` with the
/// RoCE branch of `mlx5_ib_query_port()`, plus the GID table the core's RoCE GID management
/// keeps; see [`program_default_gids`]).
pub(crate) struct Mlx5RocePortOps;

#[vtable]
impl DeviceOps for Mlx5RocePortOps {
    type Driver = Mlx5Ib;

    fn query_port(dev: &Device<Mlx5Ib>, port: u32) -> Result<PortAttr> {
        let (a, _) = query_port_common(dev, port)?;
        Ok(port_attr(&a, 0))
    }

    fn get_port_immutable(dev: &Device<Mlx5Ib>, port: u32) -> Result<PortImmutable> {
        Ok(immutable(dev.data().port(port)?))
    }

    fn query_gid(dev: &Device<Mlx5Ib>, port: u32, index: u32) -> Result<Gid> {
        let p = dev.data().port(port)?;
        let i = usize::try_from(index).map_err(|_| EINVAL)?;
        p.roce_gids.get(i).copied().map(Gid).ok_or(EINVAL)
    }

    // The types program_default_gids() gave the entries: 0 RoCE v1, 1 RoCE v2.
    fn query_gid_type(dev: &Device<Mlx5Ib>, port: u32, index: u32) -> Result<GidType> {
        let p = dev.data().port(port)?;
        if index >= p.immutable.gid_tbl_len {
            return Err(EINVAL);
        }
        Ok(if index == 1 {
            GidType::RoceV2
        } else {
            GidType::RoceV1
        })
    }
}

/// upstream `mlx5_ib_dev_mw_ops`, added when the device has `imaicl` (memory windows).
pub(crate) struct Mlx5MwOps;

#[vtable]
impl DeviceOps for Mlx5MwOps {
    type Driver = Mlx5Ib;

    fn alloc_mw(
        pd: &Pd<Mlx5Ib>,
        mw_type: MwType,
        user: &mut UserCtx<'_, '_, Mlx5Ib>,
    ) -> Result<MwCreated<crate::verbs_user::Mlx5Mw>> {
        crate::verbs_user::alloc_mw(pd, mw_type, user)
    }

    fn dealloc_mw(mw: &Mw<Mlx5Ib>) -> Result {
        crate::verbs_user::dealloc_mw(mw)
    }
}

pub(crate) const MW_OPS: Ops<Mlx5Ib> = Ops::of::<Mlx5MwOps>();
/// upstream `mlx5_ib_dev_xrc_ops` (set with `MLX5_CAP_GEN(xrc)`): XRC domains, XRC SRQs and
/// XRC target QPs.
pub(crate) struct Mlx5XrcOps;

#[vtable]
impl DeviceOps for Mlx5XrcOps {
    type Driver = Mlx5Ib;

    fn alloc_xrcd(
        dev: &Device<Mlx5Ib>,
        _user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
    ) -> Result<u32> {
        crate::verbs::alloc_xrcd(dev)
    }

    fn dealloc_xrcd(dev: &Device<Mlx5Ib>, xrcdn: u32) -> Result {
        crate::verbs::dealloc_xrcd(dev, xrcdn)
    }

    fn create_xrc_srq(
        pd: &Pd<Mlx5Ib>,
        xrcd: &Xrcd<Mlx5Ib>,
        cq: &Cq<Mlx5Ib>,
        attr: &mut SrqInitAttr,
        handler: Option<&Arc<dyn SrqHandler>>,
        user: &mut UserCtx<'_, '_, Mlx5Ib>,
    ) -> Result<XrcSrqCreated<crate::verbs_user::Mlx5Srq>> {
        crate::verbs_user::create_xrc_srq(pd, xrcd, cq, attr, handler, user)
    }

    fn create_xrc_tgt_qp(
        xrcd: &Xrcd<Mlx5Ib>,
        handler: &Arc<dyn QpHandler>,
    ) -> Result<QpCreated<Mlx5Qp>> {
        crate::verbs::create_xrc_tgt_qp(xrcd, handler)
    }
}

pub(crate) const XRC_OPS: Ops<Mlx5Ib> = Ops::of::<Mlx5XrcOps>();

/// upstream `mlx5_ib_dev_dm_ops` (set with `MLX5_CAP_DEV_MEM(memic)`; the SW ICM types are not
/// offered).
pub(crate) struct Mlx5DmOps;

#[vtable]
impl DeviceOps for Mlx5DmOps {
    type Driver = Mlx5Ib;

    fn alloc_dm(
        ctx: &Ucontext<Mlx5Ib>,
        attr: &DmAllocAttr,
        call: &mut DriverCall<'_, '_, Mlx5Ib>,
    ) -> Result<crate::dm::Mlx5Dm> {
        crate::dm::alloc_dm(ctx, attr, call)
    }

    fn dealloc_dm(dm: &Dm<Mlx5Ib>) -> Result {
        crate::dm::dealloc_dm(dm)
    }

    fn reg_dm_mr(
        pd: &Pd<Mlx5Ib>,
        dm: &Dm<Mlx5Ib>,
        attr: &DmMrAttr,
    ) -> Result<MrCreated<crate::verbs::Mlx5Mr>> {
        crate::dm::reg_dm_mr(pd, dm, attr)
    }
}

/// The DM table.
pub(crate) const DM_OPS: Ops<Mlx5Ib> = Ops::of::<Mlx5DmOps>();
pub(crate) const DEV_OPS: Ops<Mlx5Ib> = Ops::of::<Mlx5DevOps>();
pub(crate) const IB_PORT_OPS: Ops<Mlx5Ib> = Ops::of::<Mlx5IbPortOps>();
pub(crate) const ROCE_PORT_OPS: Ops<Mlx5Ib> = Ops::of::<Mlx5RocePortOps>();

/// The device's table, assembled in upstream's stage order (first setter wins): the main
/// table, then the port table of the link layer.
///
/// # Errors
///
/// `EINVAL` if the core refuses the assembly (a missing mandatory op).
pub(crate) fn assemble_ops(ll: LinkLayer) -> Result<Ops<Mlx5Ib>> {
    let port = match ll {
        LinkLayer::Infiniband => &IB_PORT_OPS,
        LinkLayer::Ethernet => &ROCE_PORT_OPS,
    };
    Ops::assemble(&[&DEV_OPS, port])
}

/// The modified EUI-64 interface id of a MAC (upstream `addrconf_addr_eui48()`): the
/// link-local GID `fe80::<eui64>` is what the core's RoCE GID management installs as the
/// default GID of a port whose netdev has this MAC (`roce_gid_mgmt.c`, `make_default_gid()`).
pub(crate) fn default_gid(mac: &[u8; 6]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[0] = 0xfe;
    g[1] = 0x80;
    g[8] = mac[0] ^ 2;
    g[9] = mac[1];
    g[10] = mac[2];
    g[11] = 0xff;
    g[12] = 0xfe;
    g[13] = mac[3];
    g[14] = mac[4];
    g[15] = mac[5];
    g
}

/// The default GIDs of a RoCE port, programmed into the device with SET_ROCE_ADDRESS: index
/// 0 RoCE v1 and index 1 RoCE v2, both the link-local GID of the function's MAC. Upstream the
/// core adds them when the port's netdev comes up (`roce_gid_mgmt`: one default GID per
/// supported GID type) and mlx5's `add_gid` (`set_roce_addr()`) programs them. There is no
/// netdev here, so the driver does it at `IB_REG`, with the MAC of the NIC vport context.
/// Returns the software table (`gid_tbl_len` entries). On failure nothing stays programmed.
///
/// # Errors
///
/// `EINVAL` for a GID table length that does not fit, `ENOMEM`, or the errno of
/// SET_ROCE_ADDRESS (`Mlx5Hw::exec`); the entries written before are cleared then.
pub(crate) fn program_default_gids(hw: &dyn Mlx5Hw, p: &IbPort) -> Result<KVec<[u8; 16]>> {
    let len = usize::try_from(p.immutable.gid_tbl_len).map_err(|_| EINVAL)?;
    let mut table = KVec::from_elem([0u8; 16], len, GFP_KERNEL)?;
    let Some(mac) = p.mac else {
        return Ok(table);
    };
    let gid = default_gid(&mac);
    let entries = [(0u16, RoceVersion::V1), (1u16, RoceVersion::V2)];
    for (n, (index, version)) in entries.iter().enumerate() {
        let Some(slot) = table.get_mut(usize::from(*index)) else {
            break;
        };
        let r = exec(
            hw,
            &SetRoceAddress {
                index: *index,
                // upstream set_roce_addr(): vhca_port_num 0 on single-port functions.
                vhca_port: 0,
                entry: Some(RoceAddr {
                    gid,
                    mac,
                    vlan: None,
                    version: *version,
                    l3_type: RoceL3Type::Ipv6,
                }),
            },
        );
        if let Err(e) = r {
            clear_gids(hw, n);
            return Err(e);
        }
        *slot = gid;
    }
    Ok(table)
}

/// Clears the first `n` RoCE address entries (upstream `del_gid` → `set_roce_addr(NULL)`).
pub(crate) fn clear_gids(hw: &dyn Mlx5Hw, n: usize) {
    for index in 0..n {
        let Ok(index) = u16::try_from(index) else {
            break;
        };
        // Teardown: a failure is logged by exec and there is nothing else to do.
        let _ = exec(
            hw,
            &SetRoceAddress {
                index,
                vhca_port: 0,
                entry: None,
            },
        );
    }
}

/// How many entries [`program_default_gids`] programmed.
pub(crate) fn programmed_gids(p: &IbPort) -> usize {
    p.roce_gids.iter().take_while(|g| **g != [0u8; 16]).count()
}
