// SPDX-License-Identifier: GPL-2.0

//! Queue pairs (upstream `ib_create_qp_kernel()`, `create_qp()`,
//! `ib_qp_usecnt_inc()`/`_dec()`, `ib_modify_qp()`, `ib_query_qp()`,
//! `ib_destroy_qp_user()`, and the inline `ib_post_send()`,
//! `ib_post_recv()`).

use super::{
    destroy, verbs_object, Cq, DestroyError, Destroyable, ObjCore, Object, Pd, RecvWr, SendWr, Srq,
    Ucontext, Udata, UserCtx, Uses, Xrcd,
};
use crate::attr::Gid;
use crate::device::Device;
use crate::driver::Driver;
use crate::restrack::{Owner, ResDetails, ResEntry, ResLinks, ResType};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, UniqueArc};

/// The driver's `post_send` op.
type PostSendFn<D> = fn(&Qp<D>, &[SendWr<'_>]) -> Result;
/// The driver's `post_recv` op.
type PostRecvFn<D> = fn(&Qp<D>, &[RecvWr<'_>]) -> Result;

upstream_enum! {
    /// QP transport types (upstream `enum ib_qp_type`, the kernel-verbs ones).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum QpType: u32 {
        /// The SMI QP (QP0), a driver's for the MAD layer.
        Smi = 0 => IB_QPT_SMI,
        /// The GSI QP (QP1), a driver's for the MAD layer.
        Gsi = 1 => IB_QPT_GSI,
        Rc = 2 => IB_QPT_RC,
        Uc = 3 => IB_QPT_UC,
        Ud = 4 => IB_QPT_UD,
        /// An XRC initiator (a send queue only).
        XrcIni = 9 => IB_QPT_XRC_INI,
        /// An XRC target (receives into the XRC SRQs of its domain).
        XrcTgt = 10 => IB_QPT_XRC_TGT,
        /// A driver-defined type (its kind in the driver's create request, e.g. mlx5's DC
        /// initiators and targets); the driver checks its modify masks itself.
        Driver = 0xff => IB_QPT_DRIVER,
    }
}

upstream_enum! {
    /// QP states (upstream `enum ib_qp_state`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub enum QpState: u8 {
        #[default]
        Reset = 0 => IB_QPS_RESET,
        Init = 1 => IB_QPS_INIT,
        Rtr = 2 => IB_QPS_RTR,
        Rts = 3 => IB_QPS_RTS,
        Sqd = 4 => IB_QPS_SQD,
        Sqe = 5 => IB_QPS_SQE,
        Err = 6 => IB_QPS_ERR,
    }
}

impl TryFrom<u8> for QpState {
    type Error = Error;

    /// `enum ib_qp_state` from its value; anything else is `EINVAL`.
    fn try_from(v: u8) -> Result<Self> {
        QpState::from_raw(v).ok_or(EINVAL)
    }
}

/// Whether `mask` is a legal modify from `cur` to `next` for a QP of type `t` (upstream
/// `ib_modify_qp_is_ok()` with its `qp_state_table`, the RC, UC and UD columns): the
/// transition is one the table lists, every required attribute is in `mask`, and nothing
/// beyond the required and optional ones (and `IB_QP_STATE`, `IB_QP_RATE_LIMIT`) is;
/// `IB_QP_CUR_STATE` only from RTR, RTS, SQD and SQE. Drivers call it with the QP's current
/// state (upstream `mlx5_ib_modify_qp()`, `rxe_qp_chk_attr()`).
pub fn modify_qp_is_ok(cur: QpState, next: QpState, t: QpType, mask: QpAttrMask) -> bool {
    use QpAttrMask as M;
    use QpState::*;
    const NONE: M = M(0);
    // The XRC columns are RC's but for INIT->RTR and RTR->RTS (below).
    let by_type = |ud: M, uc: M, rc: M| match t {
        QpType::Ud | QpType::Smi | QpType::Gsi => ud,
        QpType::Uc => uc,
        QpType::Rc | QpType::XrcIni | QpType::XrcTgt | QpType::Driver => rc,
    };
    if mask.contains(M::CUR_STATE) && !matches!(cur, Rtr | Rts | Sqd | Sqe) {
        return false;
    }
    // Optional attributes of the transitions into RTS (from RTR, RTS, SQD).
    let uc_to_rts_opt = M::CUR_STATE | M::ALT_PATH | M::ACCESS_FLAGS | M::PATH_MIG_STATE;
    let to_rts_opt = match t {
        // upstream: XRC_INI takes UC's optional set (no MIN_RNR_TIMER: it never receives).
        QpType::XrcIni => uc_to_rts_opt,
        _ => by_type(
            M::CUR_STATE | M::QKEY,
            uc_to_rts_opt,
            M::CUR_STATE | M::ALT_PATH | M::ACCESS_FLAGS | M::MIN_RNR_TIMER | M::PATH_MIG_STATE,
        ),
    };
    let (req, opt) = match (cur, next) {
        (Reset, Reset) => (NONE, NONE),
        (Reset, Init) => (
            by_type(
                M::PKEY_INDEX | M::PORT | M::QKEY,
                M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS,
                M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS,
            ),
            NONE,
        ),
        (Reset, _) => return false,
        (_, Reset) | (_, Err) => (NONE, NONE),
        (Init, Init) => (
            NONE,
            by_type(
                M::PKEY_INDEX | M::PORT | M::QKEY,
                M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS,
                M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS,
            ),
        ),
        (Init, Rtr) => {
            let uc = M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN;
            (
                match t {
                    QpType::XrcIni => uc,
                    _ => by_type(NONE, uc, uc | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER),
                },
                by_type(
                    M::PKEY_INDEX | M::QKEY,
                    M::ALT_PATH | M::ACCESS_FLAGS | M::PKEY_INDEX,
                    M::ALT_PATH | M::ACCESS_FLAGS | M::PKEY_INDEX,
                ),
            )
        }
        (Rtr, Rts) => (
            match t {
                QpType::XrcTgt => M::TIMEOUT | M::SQ_PSN,
                _ => by_type(
                    M::SQ_PSN,
                    M::SQ_PSN,
                    M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::SQ_PSN | M::MAX_QP_RD_ATOMIC,
                ),
            },
            to_rts_opt,
        ),
        (Rts, Rts) | (Sqd, Rts) => (NONE, to_rts_opt),
        (Rts, Sqd) => (NONE, M::EN_SQD_ASYNC_NOTIFY),
        (Sqd, Sqd) => (
            NONE,
            by_type(
                M::PKEY_INDEX | M::QKEY,
                M::AV | M::ALT_PATH | M::ACCESS_FLAGS | M::PKEY_INDEX | M::PATH_MIG_STATE,
                M::PORT
                    | M::AV
                    | M::TIMEOUT
                    | M::RETRY_CNT
                    | M::RNR_RETRY
                    | M::MAX_QP_RD_ATOMIC
                    | M::MAX_DEST_RD_ATOMIC
                    | M::ALT_PATH
                    | M::ACCESS_FLAGS
                    | M::PKEY_INDEX
                    | M::MIN_RNR_TIMER
                    | M::PATH_MIG_STATE,
            ),
        ),
        (Sqe, Rts) => (
            NONE,
            by_type(M::CUR_STATE | M::QKEY, M::CUR_STATE | M::ACCESS_FLAGS, NONE),
        ),
        _ => return false,
    };
    mask.contains(req) && mask.0 & !(req.0 | opt.0 | M::STATE.0 | M::RATE_LIMIT.0) == 0
}

/// Queue sizes (upstream `struct ib_qp_cap`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCap {
    /// Send queue depth.
    pub max_send_wr: u32,
    /// Receive queue depth.
    pub max_recv_wr: u32,
    /// Scatter entries per send request.
    pub max_send_sge: u32,
    /// Scatter entries per receive request.
    pub max_recv_sge: u32,
    /// Inline data bytes.
    pub max_inline_data: u32,
}

/// QP creation attributes (upstream `struct ib_qp_init_attr`).
pub struct QpInitAttr<'a, D: Driver> {
    /// The send CQ.
    pub send_cq: &'a Arc<Cq<D>>,
    /// The receive CQ (may be the send CQ).
    pub recv_cq: &'a Arc<Cq<D>>,
    /// An SRQ to receive from instead of an own receive queue.
    pub srq: Option<&'a Arc<Srq<D>>>,
    /// Transport.
    pub qp_type: QpType,
    /// Sizes.
    pub cap: QpCap,
    /// Signal every send (`IB_SIGNAL_ALL_WR`).
    pub sq_sig_all: bool,
    /// The consumer's handler of the QP's asynchronous events (upstream
    /// `event_handler` with `qp_context`).
    pub event_handler: Option<Arc<dyn QpHandler>>,
}

/// An asynchronous QP event (upstream `enum ib_event_type`, the QP kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpEvent {
    /// `IB_EVENT_QP_FATAL`.
    Fatal,
    /// `IB_EVENT_QP_REQ_ERR`.
    ReqErr,
    /// `IB_EVENT_QP_ACCESS_ERR`.
    AccessErr,
    /// `IB_EVENT_COMM_EST`.
    CommEst,
    /// `IB_EVENT_SQ_DRAINED`.
    SqDrained,
    /// `IB_EVENT_PATH_MIG`.
    PathMig,
    /// `IB_EVENT_PATH_MIG_ERR`.
    PathMigErr,
    /// `IB_EVENT_QP_LAST_WQE_REACHED`.
    LastWqeReached,
}

impl QpEvent {
    /// The `enum ib_event_type` value (what the async event file reports).
    pub fn ib_event_type(self) -> u32 {
        match self {
            QpEvent::Fatal => 1,
            QpEvent::ReqErr => 2,
            QpEvent::AccessErr => 3,
            QpEvent::CommEst => 4,
            QpEvent::SqDrained => 5,
            QpEvent::PathMig => 6,
            QpEvent::PathMigErr => 7,
            QpEvent::LastWqeReached => 16,
        }
    }
}

/// The consumer's handler of a QP's asynchronous events (upstream
/// `qp->event_handler(event, qp->qp_context)`). Drivers report from their
/// interrupt handlers: it must not sleep.
pub trait QpHandler: Send + Sync + 'static {
    /// An asynchronous event of the QP.
    fn event(&self, event: QpEvent);
}

/// What the driver's `create_qp` returns: its data and the QP number.
pub struct QpCreated<T> {
    /// The driver's private data.
    pub data: T,
    /// The QP number the device assigned.
    pub qp_num: u32,
}

/// Which [`QpAttr`] fields a modify sets (upstream `enum ib_qp_attr_mask`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpAttrMask(pub u32);

impl QpAttrMask {
    /// `IB_QP_STATE`.
    pub const STATE: QpAttrMask = QpAttrMask(1);
    /// `IB_QP_CUR_STATE`.
    pub const CUR_STATE: QpAttrMask = QpAttrMask(1 << 1);
    /// `IB_QP_EN_SQD_ASYNC_NOTIFY`.
    pub const EN_SQD_ASYNC_NOTIFY: QpAttrMask = QpAttrMask(1 << 2);
    /// `IB_QP_ACCESS_FLAGS`.
    pub const ACCESS_FLAGS: QpAttrMask = QpAttrMask(1 << 3);
    /// `IB_QP_PKEY_INDEX`.
    pub const PKEY_INDEX: QpAttrMask = QpAttrMask(1 << 4);
    /// `IB_QP_PORT`.
    pub const PORT: QpAttrMask = QpAttrMask(1 << 5);
    /// `IB_QP_QKEY`.
    pub const QKEY: QpAttrMask = QpAttrMask(1 << 6);
    /// `IB_QP_AV`.
    pub const AV: QpAttrMask = QpAttrMask(1 << 7);
    /// `IB_QP_PATH_MTU`.
    pub const PATH_MTU: QpAttrMask = QpAttrMask(1 << 8);
    /// `IB_QP_TIMEOUT`.
    pub const TIMEOUT: QpAttrMask = QpAttrMask(1 << 9);
    /// `IB_QP_RETRY_CNT`.
    pub const RETRY_CNT: QpAttrMask = QpAttrMask(1 << 10);
    /// `IB_QP_RNR_RETRY`.
    pub const RNR_RETRY: QpAttrMask = QpAttrMask(1 << 11);
    /// `IB_QP_RQ_PSN`.
    pub const RQ_PSN: QpAttrMask = QpAttrMask(1 << 12);
    /// `IB_QP_MAX_QP_RD_ATOMIC`.
    pub const MAX_QP_RD_ATOMIC: QpAttrMask = QpAttrMask(1 << 13);
    /// `IB_QP_ALT_PATH`.
    pub const ALT_PATH: QpAttrMask = QpAttrMask(1 << 14);
    /// `IB_QP_MIN_RNR_TIMER`.
    pub const MIN_RNR_TIMER: QpAttrMask = QpAttrMask(1 << 15);
    /// `IB_QP_SQ_PSN`.
    pub const SQ_PSN: QpAttrMask = QpAttrMask(1 << 16);
    /// `IB_QP_MAX_DEST_RD_ATOMIC`.
    pub const MAX_DEST_RD_ATOMIC: QpAttrMask = QpAttrMask(1 << 17);
    /// `IB_QP_PATH_MIG_STATE`.
    pub const PATH_MIG_STATE: QpAttrMask = QpAttrMask(1 << 18);
    /// `IB_QP_DEST_QPN`.
    pub const DEST_QPN: QpAttrMask = QpAttrMask(1 << 20);
    /// `IB_QP_RATE_LIMIT`.
    pub const RATE_LIMIT: QpAttrMask = QpAttrMask(1 << 25);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: QpAttrMask) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for QpAttrMask {
    type Output = QpAttrMask;
    fn bitor(self, rhs: QpAttrMask) -> QpAttrMask {
        QpAttrMask(self.0 | rhs.0)
    }
}

/// The global route of an address vector (upstream `struct ib_global_route`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalRoute {
    /// Destination GID.
    pub dgid: Gid,
    /// Flow label.
    pub flow_label: u32,
    /// Index of the source GID in the port's GID table.
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
}

/// An address vector (upstream `struct rdma_ah_attr`, the IB and RoCE
/// members).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AhAttr {
    /// Destination LID (InfiniBand).
    pub dlid: u16,
    /// Service level.
    pub sl: u8,
    /// Port number.
    pub port_num: u32,
    /// The global route; mandatory on RoCE (`IB_AH_GRH`).
    pub grh: Option<GlobalRoute>,
    /// Destination MAC (RoCE; upstream resolves it from the GID).
    pub dmac: [u8; 6],
}

/// QP attributes (upstream `struct ib_qp_attr`, the fields used so far).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpAttr {
    /// Target state.
    pub qp_state: QpState,
    /// Port number (1-based).
    pub port_num: u32,
    /// P_Key index.
    pub pkey_index: u16,
    /// `IB_ACCESS_*` flags.
    pub qp_access_flags: u32,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Path MTU (`enum ib_mtu`).
    pub path_mtu: u8,
    /// Destination QP number.
    pub dest_qp_num: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Send PSN.
    pub sq_psn: u32,
    /// Primary address vector (`IB_QP_AV`).
    pub ah_attr: AhAttr,
    /// Local ACK timeout (`IB_QP_TIMEOUT`).
    pub timeout: u8,
    /// Retry count (`IB_QP_RETRY_CNT`).
    pub retry_cnt: u8,
    /// RNR retry count (`IB_QP_RNR_RETRY`).
    pub rnr_retry: u8,
    /// Minimum RNR NAK timer (`IB_QP_MIN_RNR_TIMER`).
    pub min_rnr_timer: u8,
    /// Outstanding RDMA reads/atomics as initiator (`IB_QP_MAX_QP_RD_ATOMIC`).
    pub max_rd_atomic: u8,
    /// Outstanding RDMA reads/atomics as responder (`IB_QP_MAX_DEST_RD_ATOMIC`).
    pub max_dest_rd_atomic: u8,
}

/// A queue pair (upstream `struct ib_qp` with the driver's `D::QpData`):
/// it uses its PD, its CQs and its SRQ.
pub struct Qp<D: Driver> {
    dev: Arc<Device<D>>,
    /// `None` for an XRC target QP (upstream `create_xrc_qp_user()` clears it).
    pd: Option<Uses<Pd<D>>>,
    /// `None` for an XRC target QP.
    send_cq: Option<Uses<Cq<D>>>,
    /// `None` for XRC QPs (upstream: an initiator has no receive CQ).
    recv_cq: Option<Uses<Cq<D>>>,
    srq: Option<Uses<Srq<D>>>,
    /// The domain of an XRC target QP (upstream `qp->xrcd`, counted in its `usecnt`).
    xrcd: Option<Uses<Xrcd<D>>>,
    core: ObjCore<Arc<ResEntry>>,
    qp_num: u32,
    qp_type: QpType,
    /// The user context of a user QP (upstream `qp->uobject->context`).
    uctx: Option<Arc<Ucontext<D>>>,
    /// The sizes requested at create (upstream `ib_query_qp()`'s
    /// `init_attr->cap`).
    cap: QpCap,
    sq_sig_all: bool,
    /// The port set by the last modify with `IB_QP_PORT` (upstream
    /// `qp->port`), 0 before.
    port: Atomic<u32>,
    /// The data-path ops, copied from the device's table at create (the
    /// table never changes after registration): a post is one load and an
    /// indirect call, with no walk through the PD and the device (seed
    /// §3.3: no extra layer on the data path).
    post_send_op: Option<PostSendFn<D>>,
    post_recv_op: Option<PostRecvFn<D>>,
    handler: Option<Arc<dyn QpHandler>>,
    drv: D::QpData,
}

verbs_object!(Qp, count = Arc<ResEntry>, data = QpData);

impl<D: Driver> Qp<D> {
    /// Creates a QP on `pd` (upstream `ib_create_qp_kernel()`): the driver
    /// creates it, then the PD, the CQs and the SRQ gain a use each
    /// (`ib_qp_usecnt_inc()`: the CQ twice when it serves both queues).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `create_qp`, `EINVAL` for a dead PD or objects
    /// of another device, `ENOMEM`, the driver's error.
    pub fn create(pd: &Arc<Pd<D>>, attr: &QpInitAttr<'_, D>, owner: Owner) -> Result<Arc<Self>> {
        Self::create_with(pd, attr, owner, None)
    }

    /// Creates a QP of a user context (upstream `create_qp()` of
    /// `uverbs_cmd.c` -> `ib_create_qp_user()`).
    ///
    /// # Errors
    ///
    /// As [`Qp::create`].
    pub fn create_user(
        pd: &Arc<Pd<D>>,
        attr: &QpInitAttr<'_, D>,
        owner: Owner,
        user: &mut UserCtx<'_, '_, D>,
    ) -> Result<Arc<Self>> {
        Self::create_with(pd, attr, owner, Some(user))
    }

    fn create_with(
        pd: &Arc<Pd<D>>,
        attr: &QpInitAttr<'_, D>,
        owner: Owner,
        user: Option<&mut UserCtx<'_, '_, D>>,
    ) -> Result<Arc<Self>> {
        let dev = pd.device();
        let uctx = user.as_ref().map(|u| u.ctx().clone());
        let op = dev.ops().create_qp.ok_or(EOPNOTSUPP)?;
        pd.check_alive()?;
        // A target QP is created in its XRC domain (Xrcd::create_tgt_qp).
        if attr.qp_type == QpType::XrcTgt {
            return Err(EINVAL);
        }
        let same_dev = |d: &Arc<crate::device::Device<D>>| Arc::ptr_eq(d, dev);
        if !same_dev(attr.send_cq.device())
            || !same_dev(attr.recv_cq.device())
            || attr.srq.is_some_and(|s| !same_dev(s.pd().device()))
        {
            return Err(EINVAL);
        }
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        // A user QP names its PD in `rdma res` (upstream `fill_res_qp_entry()`).
        let res = dev.restrack().add_linked(
            ResType::Qp,
            owner,
            ResDetails::Qp {
                qp_type: attr.qp_type as u8,
                srq: attr.srq.map_or(0, |s| s.res_id() + 1),
            },
            ResLinks {
                ctxn: None,
                pdn: Some(pd.res_id()),
            },
        )?;
        let res_id = res.id;
        let created =
            op(pd, attr, user).inspect_err(|_| dev.restrack().del(ResType::Qp, res_id))?;
        res.num.store(created.qp_num, Relaxed);
        let xrc_ini = attr.qp_type == QpType::XrcIni;
        Ok(slot
            .write(Qp {
                dev: dev.clone(),
                pd: Some(Uses::new(pd.clone())),
                send_cq: Some(Uses::new(attr.send_cq.clone())),
                recv_cq: (!xrc_ini).then(|| Uses::new(attr.recv_cq.clone())),
                srq: attr.srq.map(|s| Uses::new(s.clone())),
                xrcd: None,
                core: ObjCore::new(res),
                qp_num: created.qp_num,
                qp_type: attr.qp_type,
                uctx,
                cap: attr.cap,
                sq_sig_all: attr.sq_sig_all,
                port: Atomic::new(0),
                post_send_op: dev.ops().post_send,
                post_recv_op: dev.ops().post_recv,
                handler: attr.event_handler.clone(),
                drv: created.data,
            })
            .into())
    }

    /// Creates the target QP of XRC domain `xrcd` (upstream `create_qp()` for
    /// `IB_QPT_XRC_TGT`, without udata); [`Xrcd::create_tgt_qp`] keeps it in the domain.
    pub(super) fn create_xrc_tgt(
        xrcd: &Arc<Xrcd<D>>,
        cap: QpCap,
        handler: Arc<dyn QpHandler>,
        owner: Owner,
    ) -> Result<Arc<Self>> {
        let dev = xrcd.device();
        let op = dev.ops().create_xrc_tgt_qp.ok_or(EOPNOTSUPP)?;
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        let res = dev.restrack().add_entry(
            ResType::Qp,
            owner,
            ResDetails::Qp {
                qp_type: QpType::XrcTgt as u8,
                srq: 0,
            },
        )?;
        let res_id = res.id;
        let created =
            op(xrcd, &handler).inspect_err(|_| dev.restrack().del(ResType::Qp, res_id))?;
        res.num.store(created.qp_num, Relaxed);
        Ok(slot
            .write(Qp {
                dev: dev.clone(),
                pd: None,
                send_cq: None,
                recv_cq: None,
                srq: None,
                xrcd: Some(Uses::new(xrcd.clone())),
                core: ObjCore::new(res),
                qp_num: created.qp_num,
                qp_type: QpType::XrcTgt,
                uctx: None,
                cap,
                sq_sig_all: false,
                port: Atomic::new(0),
                post_send_op: None,
                post_recv_op: None,
                handler: Some(handler),
                drv: created.data,
            })
            .into())
    }

    /// Destroys the QP (upstream `ib_destroy_qp_user()`); the PD, CQs and
    /// SRQ lose their uses.
    ///
    /// # Errors
    ///
    /// `EBUSY` while the QP has users, `EINVAL` if already destroyed, the
    /// driver's error; the QP is handed back.
    pub fn destroy(this: Arc<Self>) -> core::result::Result<(), DestroyError<Arc<Self>>> {
        destroy(this)
    }

    /// Changes attributes and state (upstream `ib_modify_qp()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a port the device does not have or a destroyed QP,
    /// `EOPNOTSUPP` without `modify_qp`, the driver's error.
    pub fn modify(&self, attr: &QpAttr, mask: QpAttrMask) -> Result {
        self.modify_with(attr, mask, None)
    }

    /// Changes attributes and state for a user's MODIFY_QP (upstream
    /// `ib_modify_qp_with_udata()`: the driver gets the command's driver data and response).
    ///
    /// # Errors
    ///
    /// As [`Qp::modify`].
    pub fn modify_user(&self, attr: &QpAttr, mask: QpAttrMask, udata: &mut Udata<'_>) -> Result {
        self.modify_with(attr, mask, Some(udata))
    }

    fn modify_with(
        &self,
        attr: &QpAttr,
        mask: QpAttrMask,
        udata: Option<&mut Udata<'_>>,
    ) -> Result {
        let dev = &self.dev;
        let op = dev.ops().modify_qp.ok_or(EOPNOTSUPP)?;
        self.check_alive()?;
        // upstream: _ib_modify_qp() checks the port before the driver.
        if mask.contains(QpAttrMask::PORT)
            && (attr.port_num == 0 || attr.port_num > dev.phys_port_cnt())
        {
            return Err(EINVAL);
        }
        // upstream _ib_modify_qp(): bind to a counter by the port's auto rule at the move to
        // INIT with a port (rdma_counter_bind_qp_auto(), whose result is ignored).
        if mask.contains(QpAttrMask::STATE)
            && mask.contains(QpAttrMask::PORT)
            && attr.qp_state == QpState::Init
        {
            let _ = dev.counter_bind_qp_auto(self.qp_num, attr.port_num);
        }
        op(self, attr, mask, udata)?;
        if mask.contains(QpAttrMask::PORT) {
            self.port.store(attr.port_num, Relaxed);
        }
        // For nldev RES_QP_GET (upstream reads them back with ib_query_qp()).
        let res = self.core.res();
        if mask.contains(QpAttrMask::STATE) {
            res.state.store(attr.qp_state as i32, Relaxed);
        }
        if mask.contains(QpAttrMask::PORT) {
            res.qp_port.store(attr.port_num, Relaxed);
        }
        if mask.contains(QpAttrMask::DEST_QPN) {
            res.dest_qpn.store(attr.dest_qp_num, Relaxed);
        }
        if mask.contains(QpAttrMask::RQ_PSN) {
            res.rq_psn.store(attr.rq_psn, Relaxed);
        }
        if mask.contains(QpAttrMask::SQ_PSN) {
            res.sq_psn.store(attr.sq_psn, Relaxed);
        }
        Ok(())
    }

    /// Reads the attributes (upstream `ib_query_qp()`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `query_qp`, the driver's error.
    pub fn query(&self) -> Result<QpAttr> {
        (self.dev.ops().query_qp.ok_or(EOPNOTSUPP)?)(self)
    }

    /// Posts send work requests (upstream `ib_post_send()`: straight to
    /// the driver's op).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `post_send`; the driver's error.
    #[inline]
    pub fn post_send(&self, wr: &[SendWr<'_>]) -> Result {
        match self.post_send_op {
            Some(f) => f(self, wr),
            None => Err(EOPNOTSUPP),
        }
    }

    /// Posts receive work requests (upstream `ib_post_recv()`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `post_recv`; the driver's error.
    #[inline]
    pub fn post_recv(&self, wr: &[RecvWr<'_>]) -> Result {
        match self.post_recv_op {
            Some(f) => f(self, wr),
            None => Err(EOPNOTSUPP),
        }
    }

    /// Attaches the QP to the multicast group `gid` (upstream `ib_attach_mcast()`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `attach_mcast`; `EINVAL` for a GID that is no multicast address,
    /// a QP that is not UD, or (on InfiniBand) a LID outside the multicast range; the
    /// driver's error.
    pub fn attach_mcast(&self, gid: &Gid, lid: u16) -> Result {
        let op = self.dev.ops().attach_mcast.ok_or(EOPNOTSUPP)?;
        if !crate::addr::is_multicast(&gid.0)
            || self.qp_type != QpType::Ud
            || !self.mcast_lid_ok(lid)
        {
            return Err(EINVAL);
        }
        op(self, gid, lid)
    }

    /// Detaches the QP from the multicast group `gid` (upstream `ib_detach_mcast()`).
    ///
    /// # Errors
    ///
    /// As [`Qp::attach_mcast`].
    pub fn detach_mcast(&self, gid: &Gid, lid: u16) -> Result {
        let op = self.dev.ops().detach_mcast.ok_or(EOPNOTSUPP)?;
        if !crate::addr::is_multicast(&gid.0)
            || self.qp_type != QpType::Ud
            || !self.mcast_lid_ok(lid)
        {
            return Err(EINVAL);
        }
        op(self, gid, lid)
    }

    /// upstream `is_valid_mcast_lid()`: any LID on a RoCE port (the RoCE annex ignores it;
    /// the QP's port once it has one, else any port of the device), else one of the
    /// multicast range (0xc000..0xfffe).
    fn mcast_lid_ok(&self, lid: u16) -> bool {
        let eth = |p: u32| {
            self.dev
                .port_immutable(p)
                .is_ok_and(|i| i.link_layer != crate::attr::LinkLayer::Infiniband)
        };
        let port = self.port();
        let roce = if port != 0 {
            eth(port)
        } else {
            (1..=self.dev.phys_port_cnt()).any(eth)
        };
        roce || (0xc000..0xffff).contains(&lid)
    }

    /// The sizes requested at create.
    pub fn cap(&self) -> QpCap {
        self.cap
    }

    /// Whether every send is signalled (`IB_SIGNAL_ALL_WR`).
    pub fn sq_sig_all(&self) -> bool {
        self.sq_sig_all
    }

    /// The port of the QP (upstream `qp->port`: set by a modify with
    /// `IB_QP_PORT`; 0 before).
    pub fn port(&self) -> u32 {
        self.port.load(Relaxed)
    }

    /// The user context of a user QP (`None` for a kernel QP).
    pub fn ucontext(&self) -> Option<&Arc<Ucontext<D>>> {
        self.uctx.as_ref()
    }

    /// The PD (`None` for an XRC target QP).
    pub fn pd(&self) -> Option<&Arc<Pd<D>>> {
        self.pd.as_ref().map(|u| u.get())
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device<D>> {
        &self.dev
    }

    /// The XRC domain of an XRC target QP.
    pub fn xrcd(&self) -> Option<&Arc<Xrcd<D>>> {
        self.xrcd.as_ref().map(|u| u.get())
    }

    /// The SRQ the QP receives from.
    pub fn srq(&self) -> Option<&Arc<Srq<D>>> {
        self.srq.as_ref().map(|u| u.get())
    }

    /// Called by the driver on an asynchronous event of the QP (upstream
    /// `qp->event_handler`); may be called from interrupt context.
    pub fn async_event(&self, event: QpEvent) {
        if let Some(h) = &self.handler {
            h.event(event);
        }
    }

    /// The send CQ (`None` for an XRC target QP).
    pub fn send_cq(&self) -> Option<&Arc<Cq<D>>> {
        self.send_cq.as_ref().map(|u| u.get())
    }

    /// The receive CQ (`None` for XRC QPs).
    pub fn recv_cq(&self) -> Option<&Arc<Cq<D>>> {
        self.recv_cq.as_ref().map(|u| u.get())
    }

    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        self.qp_num
    }

    /// The transport.
    pub fn qp_type(&self) -> QpType {
        self.qp_type
    }
}

impl<D: Driver> Destroyable for Qp<D> {
    const OP: &'static str = "destroy_qp";

    fn driver_destroy(&self) -> Result {
        // upstream ib_destroy_qp_user(): rdma_counter_unbind_qp(qp, qp->port, true) first.
        self.dev.counter_unbind_qp_destroy(self.qp_num, self.port());
        let op = self.dev.ops().destroy_qp;
        op.map_or(Ok(()), |f| f(self))
    }

    fn dev_name(&self) -> crate::ib_device::DevName {
        self.dev.name()
    }

    // upstream: ib_qp_usecnt_dec() and rdma_restrack_del(); a target QP's use of its
    // domain (`__ib_destroy_shared_qp()`).
    fn release(&self) {
        match &self.pd {
            Some(pd) => pd.release_child(ResType::Qp, self.core.res_id()),
            None => self.dev.restrack().del(ResType::Qp, self.core.res_id()),
        }
        for c in [&self.send_cq, &self.recv_cq].into_iter().flatten() {
            c.release();
        }
        if let Some(s) = &self.srq {
            s.release();
        }
        if let Some(x) = &self.xrcd {
            x.release();
        }
    }
}
