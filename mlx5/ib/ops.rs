// SPDX-License-Identifier: GPL-2.0

//! The op tables (upstream `mlx5_ib_dev_ops`, `mlx5_ib_dev_port_ops`, the optional
//! `mlx5_ib_dev_*_ops`, main.c) and the core's [`Driver`] types: the one file that names every
//! object of `crate::ib`. Each op is a call into the object's file.
//!
//! Op tables are assembled as upstream's stages install them with `ib_set_device_ops()`
//! (first setter wins): the main table ([`Mlx5DevOps`], `mlx5_ib_stage_caps_init()`), then the
//! port table chosen by the link layer ([`Mlx5IbPortOps`] or [`Mlx5RocePortOps`];
//! `mlx5_ib_stage_non_default_cb()` / `mlx5_ib_roce_init()`); `IB_REG` adds the optional ones
//! ([`MW_OPS`], [`XRC_OPS`], [`DM_OPS`]).

use crate::ib::ah::Mlx5Ah;
use crate::ib::cq::{CqMem, Mlx5Cq};
use crate::ib::device::{device_attr, Mlx5Ib, Mlx5IbDev};
use crate::ib::dm::Mlx5Dm;
use crate::ib::mr::Mlx5Mr;
use crate::ib::mw::Mlx5Mw;
use crate::ib::pd::Mlx5Pd;
use crate::ib::qp::{Mlx5Qp, QpMem};
use crate::ib::srq::Mlx5Srq;
use crate::ib::{
    ah, counters, cq, devx, dm, gsi, mad, mr, mw, pd, port, qp, srq, uar, ucontext, ud_qp, xrcd,
};
use ib_core_rs::attr::{
    DeviceAttr, Gid, GidAttr, GidType, LinkLayer, PortAttr, PortImmutable, PortModify,
};
use ib_core_rs::device::Device;
use ib_core_rs::driver::{Driver, DriverId};
use ib_core_rs::mad::{Mad, MadRecvInfo};
use ib_core_rs::mad_qp::{MadQp, MadQpNotify};
use ib_core_rs::mm::UserVma;
use ib_core_rs::ops::{DeviceOps, Ops};
use ib_core_rs::ud_qp::{UdQp, UdQpConfig, UdQpNotify};
use ib_core_rs::uverbs::driver_api::{DriverCall, ObjectSpec};
use ib_core_rs::verbs::{
    AccessFlags, AhAttr, Cq, CqHandler, CqInitAttr, CqNotify, Mr, MrCreated, MrType, Mw, MwCreated,
    MwType, Pd, Qp, QpAttr, QpAttrMask, QpCreated, QpInitAttr, RecvWr, ReregFlags, Reregistered,
    SendWr, Srq, SrqAttrMask, SrqHandler, SrqInitAttr, Ucontext, UcontextPriv, Udata, UserCtx,
    UserMrReq, Wc,
};
use ib_core_rs::verbs::{Dm, DmAllocAttr, DmMrAttr, QpHandler, XrcSrqCreated, Xrcd};
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::Arc;

impl Driver for Mlx5Ib {
    type DevData = Mlx5IbDev;
    type PdData = Mlx5Pd;
    type CqData = Mlx5Cq;
    type QpData = Mlx5Qp;
    type SrqData = Mlx5Srq;
    type MrData = Mlx5Mr;
    type AhData = Mlx5Ah;
    type MwData = Mlx5Mw;
    type DmData = Mlx5Dm;
}

/// The main table (upstream `mlx5_ib_dev_ops`).
pub(crate) struct Mlx5DevOps;

#[vtable]
impl DeviceOps for Mlx5DevOps {
    type Driver = Mlx5Ib;

    fn open_mad_qp(
        dev: &Arc<Device<Mlx5Ib>>,
        port: u32,
        qpn: u32,
        notify: Arc<dyn MadQpNotify>,
    ) -> Result<Arc<dyn MadQp>> {
        gsi::open_mad_qp(dev, port, qpn, notify)
    }

    fn open_ud_qp(
        dev: &Arc<Device<Mlx5Ib>>,
        port: u32,
        cfg: &UdQpConfig,
        notify: Arc<dyn UdQpNotify>,
    ) -> Result<Arc<dyn UdQp>> {
        ud_qp::open_ud_qp(dev, port, cfg, notify)
    }
    const DRIVER_ID: DriverId = DriverId::Mlx5;
    // upstream: MLX5_IB_UVERBS_ABI_VERSION
    const UVERBS_ABI_VER: u32 = 1;
    // upstream: mlx5_ib_defs, the UAR object and DEVX (`mlx5_ib_devx_defs`; flow steering,
    // VAR, PP: not done).
    const UVERBS_OBJECTS: &'static [ObjectSpec] = &[
        uar::UAR_OBJECT,
        devx::DEVX_OBJECT,
        devx::DEVX_OBJ_OBJECT,
        devx::DEVX_UMEM_OBJECT,
        dm::DM_OBJECT,
        ucontext::DEVICE_OBJECT,
        devx::DEVX_ASYNC_CMD_FD_OBJECT,
        devx::DEVX_ASYNC_EVENT_FD_OBJECT,
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
            LinkLayer::Infiniband => port::hca_vport_pkey(d, p, index),
        }
    }

    fn query_device_udata(dev: &Device<Mlx5Ib>, udata: &mut Udata<'_>) -> Result {
        ucontext::query_device_udata(dev, udata)
    }

    fn alloc_ucontext(dev: &Device<Mlx5Ib>, udata: &mut Udata<'_>) -> Result<UcontextPriv> {
        ucontext::alloc_ucontext(dev, udata)
    }

    fn dealloc_ucontext(ctx: &Ucontext<Mlx5Ib>) {
        ucontext::dealloc_ucontext(ctx)
    }

    fn query_ucontext(ctx: &Ucontext<Mlx5Ib>, call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
        ucontext::query_ucontext(ctx, call)
    }

    fn mmap(ctx: &Ucontext<Mlx5Ib>, vma: &mut UserVma<'_>) -> Result {
        uar::mmap(ctx, vma)
    }

    fn uverbs_method(handler: u16, call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
        if devx::owns(handler) {
            return devx::uverbs_method(handler, call);
        }
        uar::uverbs_method(handler, call)
    }

    fn alloc_pd(
        dev: &Device<Mlx5Ib>,
        user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
    ) -> Result<Mlx5Pd> {
        pd::alloc_pd(dev, user)
    }

    fn dealloc_pd(pd: &Pd<Mlx5Ib>) -> Result {
        pd::dealloc_pd(pd)
    }

    fn create_cq(
        dev: &Device<Mlx5Ib>,
        attr: &CqInitAttr,
        handler: Option<&Arc<dyn CqHandler>>,
        user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
    ) -> Result<Mlx5Cq> {
        match user {
            Some(u) => cq::create_user_cq(dev, attr, handler, u, CqMem::FromRequest),
            None => cq::create_cq(dev, attr, handler),
        }
    }

    fn destroy_cq(cq: &Cq<Mlx5Ib>) -> Result {
        cq::destroy_cq(cq)
    }

    fn poll_cq(cq: &Cq<Mlx5Ib>, wc: &mut [Wc]) -> Result<usize> {
        cq::poll_cq(cq, wc)
    }

    fn req_notify_cq(cq: &Cq<Mlx5Ib>, flags: CqNotify) -> Result {
        cq::req_notify_cq(cq, flags)
    }

    fn resize_user_cq(cq: &Cq<Mlx5Ib>, cqe: u32, user: &mut UserCtx<'_, '_, Mlx5Ib>) -> Result {
        cq::resize_cq(cq, cqe, user)
    }

    fn modify_cq(cq: &Cq<Mlx5Ib>, count: u16, period: u16) -> Result {
        cq::modify_cq(cq, count, period)
    }

    fn create_qp(
        pd: &Pd<Mlx5Ib>,
        attr: &QpInitAttr<'_, Mlx5Ib>,
        user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
    ) -> Result<QpCreated<Mlx5Qp>> {
        match user {
            Some(u) => qp::create_user_qp(pd, attr, u, QpMem::FromRequest),
            None => qp::create_qp(pd, attr),
        }
    }

    fn modify_qp(
        qp: &Qp<Mlx5Ib>,
        attr: &QpAttr,
        mask: QpAttrMask,
        udata: Option<&mut Udata<'_>>,
    ) -> Result {
        qp::modify::modify_qp(qp, attr, mask, udata)
    }

    fn query_qp(qp: &Qp<Mlx5Ib>) -> Result<QpAttr> {
        qp::modify::query_qp(qp)
    }

    fn destroy_qp(qp: &Qp<Mlx5Ib>) -> Result {
        qp::destroy_qp(qp)
    }

    fn create_srq(
        pd: &Pd<Mlx5Ib>,
        attr: &mut SrqInitAttr,
        handler: Option<&Arc<dyn SrqHandler>>,
        user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
    ) -> Result<Mlx5Srq> {
        srq::create_srq(pd, None, attr, handler, user)
    }

    fn modify_srq(
        srq: &Srq<Mlx5Ib>,
        attr: &SrqInitAttr,
        mask: SrqAttrMask,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result {
        srq::modify_srq(srq, attr, mask)
    }

    fn query_srq(srq: &Srq<Mlx5Ib>) -> Result<SrqInitAttr> {
        srq::query_srq(srq)
    }

    fn destroy_srq(srq: &Srq<Mlx5Ib>) -> Result {
        srq::destroy_srq(srq)
    }

    fn post_send(qp: &Qp<Mlx5Ib>, wr: &[SendWr<'_>]) -> Result {
        qp::wr::post_send(qp, wr)
    }

    fn post_recv(qp: &Qp<Mlx5Ib>, wr: &[RecvWr<'_>]) -> Result {
        qp::wr::post_recv(qp, wr)
    }

    // upstream mlx5_ib_mcg_attach(): ATTACH_TO_MCG with the uid of the QP's PD.
    fn attach_mcast(qp: &Qp<Mlx5Ib>, gid: &Gid, _lid: u16) -> Result {
        let c = crate::cmd::res::AttachToMcg {
            gid: gid.0,
            qpn: qp.qp_num(),
            uid: qp.pd().map_or(0, |p| p.data().uid),
        };
        crate::cmd::exec(&*qp.device().data().hw, &c)
    }

    // upstream mlx5_ib_mcg_detach().
    fn detach_mcast(qp: &Qp<Mlx5Ib>, gid: &Gid, _lid: u16) -> Result {
        let c = crate::cmd::res::DetachFromMcg {
            gid: gid.0,
            qpn: qp.qp_num(),
            uid: qp.pd().map_or(0, |p| p.data().uid),
        };
        crate::cmd::exec(&*qp.device().data().hw, &c)
    }

    fn get_dma_mr(pd: &Pd<Mlx5Ib>, access: AccessFlags) -> Result<MrCreated<Mlx5Mr>> {
        mr::get_dma_mr(pd, access)
    }

    fn reg_user_mr(
        pd: &Pd<Mlx5Ib>,
        req: &UserMrReq,
        user: &mut UserCtx<'_, '_, Mlx5Ib>,
    ) -> Result<MrCreated<Mlx5Mr>> {
        mr::reg_user_mr(pd, req, user, None)
    }

    fn hw_port_stat_names(dev: &Device<Mlx5Ib>, _port: u32) -> Option<&'static [&'static CStr]> {
        counters::hw_port_stat_names(dev)
    }

    fn get_hw_stats(dev: &Device<Mlx5Ib>, _port: u32, out: &mut [u64]) -> Result<usize> {
        counters::get_hw_stats(dev, out)
    }

    fn counter_bind_qp(dev: &Device<Mlx5Ib>, id: u32, qpn: u32, _port: u32) -> Result<u32> {
        counters::counter_bind_qp(dev, id, qpn)
    }

    fn counter_unbind_qp(dev: &Device<Mlx5Ib>, qpn: u32, _port: u32) -> Result {
        counters::counter_unbind_qp(dev, qpn)
    }

    fn counter_dealloc(dev: &Device<Mlx5Ib>, id: u32) -> Result {
        counters::counter_dealloc(dev, id)
    }

    fn counter_update_stats(
        dev: &Device<Mlx5Ib>,
        id: u32,
        _port: u32,
        out: &mut [u64],
    ) -> Result<usize> {
        counters::counter_update_stats(dev, id, out)
    }

    fn rereg_user_mr(
        mr: &Mr<Mlx5Ib>,
        flags: ReregFlags,
        req: &UserMrReq,
        new_pd: &Pd<Mlx5Ib>,
        user: &mut UserCtx<'_, '_, Mlx5Ib>,
    ) -> Result<Reregistered<Mlx5Mr>> {
        mr::rereg_user_mr(mr, flags, req, new_pd, user)
    }

    fn alloc_mr(pd: &Pd<Mlx5Ib>, mr_type: MrType, max_num_sg: u32) -> Result<MrCreated<Mlx5Mr>> {
        mr::alloc_mr(pd, mr_type, max_num_sg)
    }

    fn dereg_mr(mr: &Mr<Mlx5Ib>) -> Result {
        mr::dereg_mr(mr)
    }

    fn create_ah(
        pd: &Pd<Mlx5Ib>,
        attr: &AhAttr,
        user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
    ) -> Result<Mlx5Ah> {
        ah::create_ah(pd, attr, user)
    }
}

/// The port table of an InfiniBand function (upstream `mlx5_ib_dev_port_ops`; GIDs from the
/// HCA vport context, `mlx5_query_hca_vport_gid()`).
pub(crate) struct Mlx5IbPortOps;

#[vtable]
impl DeviceOps for Mlx5IbPortOps {
    type Driver = Mlx5Ib;

    fn query_port(dev: &Device<Mlx5Ib>, port: u32) -> Result<PortAttr> {
        let (a, _) = port::query_port_common(dev, port)?;
        // upstream __ib_query_port(): the subnet prefix of an IB port is GID 0's.
        let gid0 = Self::query_gid(dev, port, 0)?;
        let mut prefix = [0u8; 8];
        prefix.copy_from_slice(&gid0.0[..8]);
        Ok(port::port_attr(&a, u64::from_be_bytes(prefix)))
    }

    fn get_port_immutable(dev: &Device<Mlx5Ib>, port: u32) -> Result<PortImmutable> {
        Ok(port::immutable(dev.data().port(port)?))
    }

    fn query_gid(dev: &Device<Mlx5Ib>, port: u32, index: u32) -> Result<Gid> {
        let d = dev.data();
        port::hca_vport_gid(d, d.port(port)?, index)
    }

    fn process_mad(
        dev: &Device<Mlx5Ib>,
        port: u32,
        flags: u32,
        recv: Option<&MadRecvInfo>,
        in_mad: &Mad,
        out: &mut Mad,
    ) -> Result<u32> {
        mad::process_mad(dev, port, flags, recv, in_mad, out)
    }

    fn modify_port(dev: &Device<Mlx5Ib>, port: u32, modify: &PortModify) -> Result {
        port::modify_port(dev, port, modify)
    }
}

/// The port table of an Ethernet (RoCE) function (upstream `mlx5_ib_dev_port_ops` with the
/// RoCE branch of `mlx5_ib_query_port()`, plus the GID table the core's RoCE GID management
/// keeps; see [`port::program_default_gids`]).
pub(crate) struct Mlx5RocePortOps;

#[vtable]
impl DeviceOps for Mlx5RocePortOps {
    type Driver = Mlx5Ib;

    fn query_port(dev: &Device<Mlx5Ib>, port: u32) -> Result<PortAttr> {
        let (a, _) = port::query_port_common(dev, port)?;
        Ok(port::port_attr(&a, 0))
    }

    fn get_port_immutable(dev: &Device<Mlx5Ib>, port: u32) -> Result<PortImmutable> {
        Ok(port::immutable(dev.data().port(port)?))
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

/// The GID ops of a RoCE function bound to a netdev (upstream `mlx5_ib_add_gid()`,
/// `mlx5_ib_del_gid()` in `mlx5_ib_dev_common_roce_ops`): with them the core owns the RoCE
/// GID table and programs each entry here; a function without a netdev keeps the default
/// GIDs its probe programs ([`port::program_default_gids`]).
pub(crate) struct Mlx5RoceGidOps;

#[vtable]
impl DeviceOps for Mlx5RoceGidOps {
    type Driver = Mlx5Ib;

    fn add_gid(dev: &Device<Mlx5Ib>, attr: &GidAttr) -> Result {
        port::set_roce_addr(dev, attr, true)
    }

    fn del_gid(dev: &Device<Mlx5Ib>, attr: &GidAttr) -> Result {
        port::set_roce_addr(dev, attr, false)
    }
}

/// upstream `mlx5_ib_dev_common_roce_ops`' GID part, set when a RoCE port has a netdev.
pub(crate) const ROCE_GID_OPS: Ops<Mlx5Ib> = Ops::of::<Mlx5RoceGidOps>();

/// upstream `mlx5_ib_dev_mw_ops`, added when the device has `imaicl` (memory windows).
pub(crate) struct Mlx5MwOps;

#[vtable]
impl DeviceOps for Mlx5MwOps {
    type Driver = Mlx5Ib;

    fn alloc_mw(
        pd: &Pd<Mlx5Ib>,
        mw_type: MwType,
        user: &mut UserCtx<'_, '_, Mlx5Ib>,
    ) -> Result<MwCreated<Mlx5Mw>> {
        mw::alloc_mw(pd, mw_type, user)
    }

    fn dealloc_mw(mw: &Mw<Mlx5Ib>) -> Result {
        mw::dealloc_mw(mw)
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
        xrcd::alloc_xrcd(dev)
    }

    fn dealloc_xrcd(dev: &Device<Mlx5Ib>, xrcdn: u32) -> Result {
        xrcd::dealloc_xrcd(dev, xrcdn)
    }

    fn create_xrc_srq(
        pd: &Pd<Mlx5Ib>,
        xrcd: &Xrcd<Mlx5Ib>,
        cq: &Cq<Mlx5Ib>,
        attr: &mut SrqInitAttr,
        handler: Option<&Arc<dyn SrqHandler>>,
        user: &mut UserCtx<'_, '_, Mlx5Ib>,
    ) -> Result<XrcSrqCreated<Mlx5Srq>> {
        srq::create_srq(pd, Some((xrcd, cq)), attr, handler, Some(user)).map(Mlx5Srq::xrc_created)
    }

    fn create_xrc_tgt_qp(
        xrcd: &Xrcd<Mlx5Ib>,
        handler: &Arc<dyn QpHandler>,
    ) -> Result<QpCreated<Mlx5Qp>> {
        qp::create_xrc_tgt_qp(xrcd, handler)
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
    ) -> Result<Mlx5Dm> {
        dm::alloc_dm(ctx, attr, call)
    }

    fn dealloc_dm(dm: &Dm<Mlx5Ib>) -> Result {
        dm::dealloc_dm(dm)
    }

    fn reg_dm_mr(pd: &Pd<Mlx5Ib>, dm: &Dm<Mlx5Ib>, attr: &DmMrAttr) -> Result<MrCreated<Mlx5Mr>> {
        dm::reg_dm_mr(pd, dm, attr)
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
