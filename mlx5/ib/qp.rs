// SPDX-License-Identifier: GPL-2.0

//! Queue pairs (upstream qp.c): create and destroy for kernel consumers (`create_kernel_qp()`)
//! and user contexts (`create_user_qp()`, as libmlx5 creates them), XRC target QPs
//! (`create_xrc_tgt_qp()`), and a kernel QP's queues ([`KernQp`]); [`modify`] holds the state
//! machine and `query_qp`, [`wr`] the kernel data path (`post_send`, `post_recv`).
//!
//! Every create path acquires in upstream's order and issues its one create command last: a
//! failure anywhere drops what was acquired and leaves no firmware object. A kernel QP's buffer
//! has the RQ first, then the SQ; every QP is registered in the device's event table after
//! CREATE_QP and detached before DESTROY_QP.

use crate::cmd::exec;
use crate::cmd::qp::{CreateQp, DestroyQp, QpServiceType, RqType};
use crate::hw::CapType;
use crate::ib::device::{gen, Mlx5Ib, Mlx5IbDev};
use crate::ib::events::{KernQueues, QpTarget};
use crate::ib::queue::{ilog2_ceil, page_offset, user_queue_buf, KernBuf, QueueMem};
use crate::ib::ucontext::{abi_err, mlx5_ctx};
use crate::ib::user_mem::{DbRecord, UserBuf};
use crate::prm::ctx::{cmd_hca_cap, roce_cap};
use crate::uabi::{self, QpCaps, UserQpType};
use ib_core_rs::verbs::{
    AccessFlags, Pd, Qp, QpAttr, QpCreated, QpHandler, QpInitAttr, QpType, UserCtx, Xrcd,
};
use kernel::prelude::*;
use kernel::{new_mutex, new_spinlock_irq, sync::Arc, sync::Mutex, sync::SpinLockIrq};

pub(crate) mod dct;
pub(crate) mod modify;
pub(crate) mod wr;

/// Send WQE basic block (`MLX5_SEND_WQE_BB`), in the `u32` arithmetic of the size checks.
const SEND_WQE_BB: u32 = crate::prm::wqe::SEND_WQE_BB as u32;

/// `sizeof(struct mlx5_wqe_data_seg)`.
const DATA_SEG: u32 = 16;

/// The driver part of a QP (upstream `struct mlx5_ib_qp`).
pub(crate) struct Mlx5Qp {
    /// The QP number.
    pub(crate) qpn: u32,
    /// The owner uid (upstream `mqp.uid`): the PD's DEVX uid for a user QP other than an XRC
    /// initiator, else 0; its modify and destroy commands carry it.
    pub(crate) uid: u16,
    /// log2 of the send queue's WQE basic blocks (0 without a send queue).
    pub(crate) log_sq_size: u8,
    /// log2 of the receive queue's WQEs.
    pub(crate) log_rq_size: u8,
    /// The attributes set so far and the current state (upstream `qp->state`, `qp->port`,
    /// `trans_qp.resp_depth`, ...), under upstream's `qp->mutex`.
    state: Pin<KBox<Mutex<QpAttr>>>,
    pub(crate) mem: QueueMem,
    /// A kernel QP's queues (the QP table's entry has them too, for its CQs' poll).
    kern: Option<Arc<KernQp>>,
    /// The QP's entry in the device's QP table (events; a kernel QP's queues).
    pub(crate) events: Arc<QpTarget>,
    /// What kind of QP this is beyond its `ib_qp_type` (upstream `qp->type`).
    pub(crate) kind: QpKind,
}

/// The driver's QP kinds (upstream `qp->type`: `MLX5_IB_QPT_DCI`, `MLX5_IB_QPT_DCT`).
pub(crate) enum QpKind {
    /// An RC, UC, UD or XRC QP.
    Plain,
    /// A DC initiator: an RC-like QP whose WQEs name the DCT they go to; its modify masks are
    /// upstream `modify_dci_qp_is_ok()`'s.
    Dci,
    /// A DC target: CREATE_DCT runs at INIT->RTR ([`dct`]).
    Dct(dct::DctInit),
    /// The driver's UMR QP (upstream `MLX5_IB_QPT_REG_UMR`, made by `umr.rs`): moved to RTS
    /// with no attributes, it posts only UMR WQEs.
    Umr,
}

/// The attribute state of a QP in RESET, allocated before CREATE_QP so that nothing after the
/// command can fail.
pub(crate) type QpStateBox = Pin<KBox<Mutex<QpAttr>>>;

impl Mlx5Qp {
    /// The state of a new QP.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new_state() -> Result<QpStateBox> {
        KBox::pin_init(new_mutex!(QpAttr::default()), GFP_KERNEL)
    }

    /// What the driver's `create_qp` returns for QP `qpn`: its driver data, and the QP number
    /// the core reports (`ib_qp.qp_num`).
    pub(crate) fn created(
        qpn: u32,
        log_sq_size: u8,
        log_rq_size: u8,
        state: QpStateBox,
        mem: QueueMem,
        kern: Option<Arc<KernQp>>,
        events: Arc<QpTarget>,
    ) -> QpCreated<Self> {
        QpCreated {
            data: Mlx5Qp {
                qpn,
                uid: 0,
                log_sq_size,
                log_rq_size,
                state,
                mem,
                kern,
                events,
                kind: QpKind::Plain,
            },
            qp_num: qpn,
        }
    }
}

/// upstream `sq_overhead()`: control segment plus the transport's segments.
fn sq_overhead(t: QpType) -> u32 {
    match t {
        // ctrl + max(atomic + raddr, umr ctrl + mkey seg + inline UMR threshold / octoword)
        QpType::Rc => 16 + 120,
        // ctrl + max(raddr, umr ctrl + mkey seg)
        QpType::Uc => 16 + 112,
        // ctrl + datagram seg
        QpType::Ud | QpType::Smi | QpType::Gsi => 16 + 48,
        // the XRC segment, then as RC
        QpType::XrcIni => 16 + 16 + 120,
        // no send queue
        QpType::XrcTgt => 0,
        // A kernel driver-type QP is the UMR QP: ctrl + umr ctrl + mkey seg.
        QpType::Driver => 16 + 48 + 64,
    }
}

/// upstream `calc_send_wqe()`: the send WQE size, a multiple of the basic block.
fn send_wqe_size(t: QpType, max_send_sge: u32, max_inline: u32) -> Result<u32> {
    let ov = sq_overhead(t);
    let inl = if max_inline != 0 {
        ov.checked_add(4)
            .and_then(|v| v.checked_add(max_inline))
            .ok_or(EINVAL)?
    } else {
        0
    };
    let size = max_send_sge
        .checked_mul(DATA_SEG)
        .and_then(|v| v.checked_add(ov))
        .ok_or(EINVAL)?;
    Ok(inl.max(size).next_multiple_of(SEND_WQE_BB))
}

/// upstream `create_qp()` → `create_kernel_qp()` for RC and UD (and UC): `set_rq_size()` and
/// `calc_sq_size()` with their limits, the buffer (RQ at offset 0, SQ after it), CREATE_QP
/// with the PD, the CQs and the kernel UAR page. SRQs are not supported by this driver yet.
///
/// # Errors
///
/// `EOPNOTSUPP` for a QP type or creation flag this driver does not offer, `EINVAL` for
/// capabilities beyond the device's, `ENOMEM`, the errno of CREATE_QP (`Mlx5Hw::exec`);
/// everything allocated is released then.
pub(crate) fn create_qp(
    pd: &Pd<Mlx5Ib>,
    attr: &QpInitAttr<'_, Mlx5Ib>,
) -> Result<QpCreated<Mlx5Qp>> {
    let d = pd.device().data();
    let g = gen(d)?;
    // Kernel XRC QPs: no kernel consumer here needs them (the kernel data path has no XRC
    // segment); user XRC QPs are create_user_qp()'s, target QPs create_xrc_tgt_qp()'s.
    // A driver-type kernel QP is this driver's UMR QP (upstream `MLX5_IB_QPT_REG_UMR`, which
    // only mlx5_ib creates, `umr.rs`); kernel DC QPs do not exist.
    if attr.srq.is_some() || matches!(attr.qp_type, QpType::XrcIni | QpType::XrcTgt) {
        return Err(EOPNOTSUPP);
    }
    let log_max_qp_sz = g.get(cmd_hca_cap::log_max_qp_sz);
    let cap = attr.cap;
    // set_rq_size(): max_recv_sge data segments, a power of two of at least 16 bytes.
    let (log_rq_size, rq_shift) = if cap.max_recv_wr == 0 {
        (0u8, 4u8)
    } else {
        let wqe = cap
            .max_recv_sge
            .max(1)
            .checked_mul(DATA_SEG)
            .ok_or(EINVAL)?;
        let shift = ilog2_ceil(wqe)?.max(4);
        if (1u32 << shift) > g.get(cmd_hca_cap::max_wqe_sz_rq) {
            return Err(EINVAL);
        }
        let log = ilog2_ceil(cap.max_recv_wr)?;
        if u32::from(log) > log_max_qp_sz {
            return Err(EINVAL);
        }
        (log, shift)
    };
    // calc_sq_size()
    let wqe = send_wqe_size(attr.qp_type, cap.max_send_sge, cap.max_inline_data)?;
    if wqe > g.get(cmd_hca_cap::max_wqe_sz_sq) {
        return Err(EINVAL);
    }
    let sq_bytes = cap
        .max_send_wr
        .max(1)
        .checked_mul(wqe)
        .and_then(|v| v.checked_next_power_of_two())
        .ok_or(EINVAL)?;
    let log_sq_size = ilog2_ceil(sq_bytes / SEND_WQE_BB)?;
    if u32::from(log_sq_size) > log_max_qp_sz {
        return Err(ENOMEM);
    }
    let rq_bytes = if cap.max_recv_wr == 0 {
        0
    } else {
        1usize << (u32::from(log_rq_size) + u32::from(rq_shift))
    };
    let buf = KernBuf::new(&*d.hw, rq_bytes + sq_bytes as usize)?;
    let pas = buf.pas()?;
    let kern = KernQp::new(
        attr,
        log_sq_size,
        wqe,
        (cap.max_recv_wr != 0).then_some((log_rq_size, rq_shift)),
        rq_bytes,
        d.uar,
    )?;
    let target = qp_target(attr, kern.clone())?;
    let slot = d.events.reserve::<QpTarget>()?;
    let st = match attr.qp_type {
        QpType::Rc => QpServiceType::Rc,
        QpType::Uc => QpServiceType::Uc,
        QpType::Ud => QpServiceType::Ud,
        // upstream to_mlx5_st(): IB_QPT_SMI -> QP0, the GSI hardware QP -> QP1.
        QpType::Smi => QpServiceType::Qp0,
        QpType::Gsi => QpServiceType::Qp1,
        QpType::Driver => QpServiceType::RegUmr,
        QpType::XrcIni | QpType::XrcTgt => return Err(EOPNOTSUPP),
    };
    let state = Mlx5Qp::new_state()?;
    let rq = if cap.max_recv_wr == 0 {
        RqType::None
    } else {
        RqType::Regular {
            cqn: attr.recv_cq.data().cqn,
            log_size: log_rq_size,
            log_stride: rq_shift - 4,
        }
    };
    let sq = Some((attr.send_cq.data().cqn, log_sq_size));
    // upstream create_qp_common() sets no PD in the UMR QP's context.
    let umr = st == QpServiceType::RegUmr;
    let pdn = if umr { 0 } else { pd.data().pdn };
    let qpn = create_kernel_qp(d, &buf, &pas, st, pdn, sq, rq)?;
    d.events.attach(slot, &target, qpn);
    let mut made = Mlx5Qp::created(
        qpn,
        log_sq_size,
        log_rq_size,
        state,
        QueueMem::Kernel { buf },
        Some(kern),
        target,
    );
    if umr {
        made.data.kind = QpKind::Umr;
    }
    Ok(made)
}

/// CREATE_QP of a QP whose queues the kernel owns (upstream `create_kernel_qp()`, and
/// `create_xrc_tgt_qp()`'s, which has no queues): uid 0, the device's UAR, the buffer `buf`
/// in 4 KiB pages `pas` from its start, no user index (CQE version 0), no signature, no ECE,
/// the kernel's timestamp format. Returns the QP number.
fn create_kernel_qp(
    d: &Mlx5IbDev,
    buf: &KernBuf,
    pas: &[u64],
    st: QpServiceType,
    pd: u32,
    sq: Option<(u32, u8)>,
    rq: RqType,
) -> Result<u32> {
    let (qpn, _) = exec(
        &*d.hw,
        &CreateQp {
            buf: buf.queue_buf(pas),
            st,
            pd,
            sq,
            rq,
            uar_page: d.uar,
            user_index: 0xff_ffff,
            wq_signature: false,
            ece: 0,
            ts_format: kernel_ts_format(d)?,
        },
    )?;
    Ok(qpn)
}

/// Where a user QP's memory comes from (see [`CqMem`]).
pub(crate) enum QpMem {
    /// Pin `buf_addr`/`db_addr` of the request.
    FromRequest,
    /// KUnit: the buffer (if the QP has queues) and a doorbell record.
    #[cfg(CONFIG_KUNIT = "y")]
    Given(Option<UserBuf>, DbRecord),
}

/// upstream `mlx5_ib_create_qp()` for an RC, UC or UD QP of a user context: the request
/// ([`uabi::parse_create_qp`]), vendor flags, user index, the queue layout and UAR page
/// ([`uabi::user_qp_layout`]), the buffer (RQ then SQ) pinned, the doorbell record mapped,
/// CREATE_QP (`pm_state` migrated, the user index only if the device reports CQE version 1,
/// ECE options where the device supports ECE); the response `mlx5_ib_create_qp_resp` has
/// `bfreg_index` = `MLX5_IB_INVALID_BFREG` and the firmware's ECE options.
///
/// A QP on an SRQ has no receive queue (`rq_type` SRQ, `srqn_rmpn_xrqn` the RMP, `cqn_rcv`
/// the receive CQ), as upstream's `create_qp_common()`.
///
/// Deviation: a receive stride below 16 bytes is `EINVAL` (upstream hands firmware
/// `wqe_shift - 4` wrapped).
///
/// # Errors
///
/// As above; the pin's errno; CREATE_QP's errno. Nothing is left behind on failure.
pub(crate) fn create_user_qp(
    pd: &Pd<Mlx5Ib>,
    attr: &QpInitAttr<'_, Mlx5Ib>,
    user: &mut UserCtx<'_, '_, Mlx5Ib>,
    mem: QpMem,
) -> Result<QpCreated<Mlx5Qp>> {
    let d = pd.device().data();
    let g = gen(d)?;
    let ctx = user.ctx().clone();
    let mctx = mlx5_ctx(&ctx)?;
    let req = uabi::parse_create_qp(user.udata().input()).map_err(abi_err)?;
    let t = match attr.qp_type {
        QpType::Rc => UserQpType::Rc,
        QpType::Uc => UserQpType::Uc,
        QpType::Ud => UserQpType::Ud,
        QpType::XrcIni => UserQpType::XrcIni,
        // A DCI or a DCT, by the request's type flag.
        QpType::Driver => uabi::dc_type(req.flags).map_err(abi_err)?,
        // Created without udata (create_xrc_tgt_qp()); the special QPs are the kernel's.
        QpType::XrcTgt | QpType::Smi | QpType::Gsi => return Err(EINVAL),
    };
    let caps = QpCaps {
        log_max_qp_sz: g.get(cmd_hca_cap::log_max_qp_sz),
        max_wqe_sz_sq: g.get(cmd_hca_cap::max_wqe_sz_sq),
        // Neither cap is in the cached subset of cmd_hca_cap: treated as absent.
        sctr_data_cqe: false,
        dci_streams: false,
        qp_packet_based: g.get(cmd_hca_cap::qp_packet_based) != 0,
    };
    let flags_en = uabi::qp_vendor_flags(req.flags, t, &caps).map_err(abi_err)?;
    let uidx = uabi::qp_user_index(mctx.cqe_version, req.uidx).map_err(abi_err)?;
    if t == UserQpType::Dct {
        return create_user_dct(pd, attr, user, &req, uidx);
    }
    // upstream qp_has_rq(): a QP on an SRQ has no receive queue of its own.
    let has_rq = attr.srq.is_none() && attr.cap.max_recv_wr != 0;
    let l = uabi::user_qp_layout(&req, flags_en, has_rq, attr.cap.max_recv_wr, &caps)
        .map_err(abi_err)?;
    if has_rq && l.rq_wqe_shift < 4 {
        return Err(EINVAL);
    }
    // get_qp_ts_format(): MLX5_CAP_ROCE(qp_ts_format), 0 without a RoCE page.
    let ts_cap = match d.hw.caps(CapType::Roce) {
        Some(r) => roce_cap::qp_ts_format.get(r).map_err(|_| EIO)?,
        None => 0,
    };
    let ts_format = uabi::qp_ts_format(
        ts_cap,
        attr.send_cq.data().real_time_ts,
        attr.recv_cq.data().real_time_ts,
    )
    .map_err(abi_err)?;
    let (buf, db) = match mem {
        QpMem::FromRequest => {
            let buf = if l.buf_size != 0 {
                Some(UserBuf::pin(
                    &ctx,
                    req.buf_addr,
                    u64::from(l.buf_size),
                    AccessFlags(0),
                )?)
            } else {
                None
            };
            let db = mctx.db_pages.map(&ctx, req.db_addr)?;
            (buf, db)
        }
        #[cfg(CONFIG_KUNIT = "y")]
        QpMem::Given(buf, db) => (buf, db),
    };
    let (pas, page_offset) = match &buf {
        Some(b) => (b.pages()?, page_offset(b)?),
        None => (KVec::new(), 0),
    };
    // ilog2() of the counts, as upstream (the SQ count is a power of two by now).
    let log2 = |n: u32| -> u8 { n.checked_ilog2().unwrap_or(0) as u8 };
    let log_sq_size = log2(l.sq_wqe_cnt);
    let log_rq_size = log2(l.rq_wqe_cnt);
    let rq = if let Some(srq) = attr.srq {
        RqType::Srq {
            srqn: srq.data().srqn,
            cqn: attr.recv_cq.data().cqn,
        }
    } else if t == UserQpType::XrcIni {
        // Upstream names its device resources (SRQ s0 with CQ c0, `rq_type` SRQ) for an
        // initiator; this driver has none: no receive queue at all (ZERO_LEN_RQ), the same
        // for a QP that never receives.
        RqType::None
    } else if has_rq {
        RqType::Regular {
            cqn: attr.recv_cq.data().cqn,
            log_size: log_rq_size,
            log_stride: u8::try_from(l.rq_wqe_shift - 4).map_err(|_| EINVAL)?,
        }
    } else {
        RqType::None
    };
    let st = match t {
        UserQpType::Rc => QpServiceType::Rc,
        UserQpType::Uc => QpServiceType::Uc,
        UserQpType::Ud => QpServiceType::Ud,
        UserQpType::XrcIni => QpServiceType::Xrc,
        UserQpType::Dci => QpServiceType::Dci,
        UserQpType::Dct => return Err(EINVAL),
    };
    let ece_support = g.get(cmd_hca_cap::ece_support) != 0;
    // upstream create_user_qp(): `create_qp_in.uid` is the PD's uid, 0 for an XRC initiator.
    let uid = if t == UserQpType::XrcIni {
        0
    } else {
        pd.data().uid
    };
    let state = Mlx5Qp::new_state()?;
    let target = QpTarget::new(attr.event_handler.as_ref(), None)?;
    let slot = d.events.reserve::<QpTarget>()?;
    let (qpn, ece) = exec(
        &*d.hw,
        &CreateQp {
            buf: user_queue_buf(uid, page_offset, db.dma, &pas),
            st,
            pd: pd.data().pdn,
            sq: (l.sq_wqe_cnt != 0).then_some((attr.send_cq.data().cqn, log_sq_size)),
            rq,
            uar_page: l.uar_index,
            // 0xffffff asks for CQE version 0; upstream sets the field only with version 1.
            user_index: if g.get(cmd_hca_cap::cqe_version) == 1 {
                uidx
            } else {
                0
            },
            wq_signature: flags_en & uabi::qp_flag::SIGNATURE != 0,
            ece: if ece_support { req.ece_options } else { 0 },
            ts_format: u8::try_from(ts_format).map_err(|_| EINVAL)?,
        },
    )?;
    d.events.attach(slot, &target, qpn);
    let ece = if ece_support { ece } else { 0 };
    user.udata()
        .copy_to(&uabi::create_qp_resp(uabi::INVALID_BFREG, ece));
    let mut created = Mlx5Qp::created(
        qpn,
        log_sq_size,
        log_rq_size,
        state,
        QueueMem::User { _buf: buf, _db: db },
        None,
        target,
    );
    created.data.uid = uid;
    if t == UserQpType::Dci {
        created.data.kind = QpKind::Dci;
    }
    Ok(created)
}

/// upstream `create_dct()`: a DC target needs an SRQ and a receive CQ (`EINVAL`); it records
/// them with the PD, the DC access key (the request's `access_key`, the union with
/// `sq_buf_addr`), the user index and the ECE options. No command: the DCT is created at
/// INIT->RTR ([`dct::modify`]); until then its number is 0.
fn create_user_dct(
    pd: &Pd<Mlx5Ib>,
    attr: &QpInitAttr<'_, Mlx5Ib>,
    user: &mut UserCtx<'_, '_, Mlx5Ib>,
    req: &uabi::CreateQpReq,
    uidx: u32,
) -> Result<QpCreated<Mlx5Qp>> {
    let srq = attr.srq.ok_or(EINVAL)?;
    let init = dct::DctInit::new(
        pd.data().uid,
        pd.data().pdn,
        srq.data().srqn,
        attr.recv_cq.data().cqn,
        req.sq_buf_addr,
        uidx,
        req.ece_options,
    );
    let state = Mlx5Qp::new_state()?;
    let target = QpTarget::new(attr.event_handler.as_ref(), None)?;
    user.udata()
        .copy_to(&uabi::create_qp_resp(uabi::INVALID_BFREG, 0));
    let mut created = Mlx5Qp::created(0, 0, 0, state, QueueMem::None, None, target);
    created.data.uid = init.uid;
    created.data.kind = QpKind::Dct(init);
    Ok(created)
}

/// upstream `create_xrc_tgt_qp()` (`create_qp()` for `IB_QPT_XRC_TGT`, a QP without udata
/// even for a user): service type XRC, no send queue, `rq_type` SRQ, the XRC domain, a
/// doorbell record of its own. Upstream also names its device resources (PD p0, CQ c0, SRQ
/// s0), which this driver does not have: the PD and CQs are 0 and no SRQ is named (the
/// device takes the SRQ from each message). Its events go to `handler` (the domain's
/// fan-out to every opener).
///
/// # Errors
///
/// `ENOMEM`; CREATE_QP's errno.
pub(crate) fn create_xrc_tgt_qp(
    xrcd: &Xrcd<Mlx5Ib>,
    handler: &Arc<dyn QpHandler>,
) -> Result<QpCreated<Mlx5Qp>> {
    let d = xrcd.device().data();
    let buf = KernBuf::new(&*d.hw, 0)?;
    let state = Mlx5Qp::new_state()?;
    let target = QpTarget::new(Some(handler), None)?;
    let slot = d.events.reserve::<QpTarget>()?;
    let rq = RqType::XrcTgt { xrcd: xrcd.xrcdn() };
    let qpn = create_kernel_qp(d, &buf, &[], QpServiceType::Xrc, 0, None, rq)?;
    d.events.attach(slot, &target, qpn);
    Ok(Mlx5Qp::created(
        qpn,
        0,
        0,
        state,
        QueueMem::Kernel { buf },
        None,
        target,
    ))
}

/// upstream `get_qp_ts_format()` for a kernel QP (its CQs never ask for real-time
/// timestamps): free running where the RoCE capability allows it, else the default.
///
/// # Errors
///
/// `EIO` if the RoCE page cannot be read, `EOPNOTSUPP` if the device offers no format a kernel
/// QP can use.
pub(crate) fn kernel_ts_format(d: &Mlx5IbDev) -> Result<u8> {
    let ts_cap = match d.hw.caps(CapType::Roce) {
        Some(r) => crate::prm::ctx::roce_cap::qp_ts_format
            .get(r)
            .map_err(|_| EIO)?,
        None => 0,
    };
    let f = crate::uabi::qp_ts_format(ts_cap, false, false).map_err(abi_err)?;
    u8::try_from(f).map_err(|_| EINVAL)
}

/// upstream `mlx5_ib_destroy_qp()`: the QP leaves the event table (no event handler runs
/// after this returns), then DESTROY_QP (legal in every state); a refused command puts it
/// back.
///
/// # Errors
///
/// The errno of DESTROY_QP (`Mlx5Hw::exec`); the QP stays then.
pub(crate) fn destroy_qp(qp: &Qp<Mlx5Ib>) -> Result {
    let (d, q) = (qp.device().data(), qp.data());
    if let QpKind::Dct(init) = &q.kind {
        // Never in the device's QP table (no events).
        let _st = q.state.lock();
        return dct::destroy(qp, init);
    }
    d.destroy_detached(&q.events, || {
        exec(
            &*d.hw,
            &DestroyQp {
                qpn: q.qpn,
                uid: q.uid,
            },
        )
    })
}

/// Send queue state (upstream `qp->sq` under `qp->sq.lock`).
struct Sq {
    /// Next free WQEBB (`cur_post`).
    cur_post: u32,
    /// Work requests posted (`head`) and retired (`tail`).
    head: u32,
    tail: u32,
    /// Per WQEBB index of a WQE's first block: its `wr_id`, and `head` when it was posted.
    wrid: KVec<u64>,
    wqe_head: KVec<u32>,
    /// One WQE being built.
    scratch: KVec<u8>,
}

/// Receive queue state (upstream `qp->rq` under `qp->rq.lock`).
struct Rq {
    head: u32,
    tail: u32,
    wrid: KVec<u64>,
}

/// A kernel QP's queues: shared by the QP (posting) and, through the device's QP table, its
/// CQs (polling).
#[pin_data]
pub(crate) struct KernQp {
    /// WQEBBs in the SQ (a power of two).
    sq_bbs: u32,
    /// Byte offset of the SQ in the buffer (the RQ comes first).
    sq_off: usize,
    /// Maximal WQE size in bytes (`calc_send_wqe()`), and WQEs of that size that fit
    /// (`sq.max_post`).
    wqe_size: usize,
    max_post: u32,
    max_send_sge: usize,
    sig_all: bool,
    /// RQ WQEs (a power of two; 0 without an RQ), stride (log2 bytes).
    rq_wqes: u32,
    rq_shift: u8,
    /// The kernel UAR page the SQ rings on.
    uar: u32,
    #[pin]
    sq: SpinLockIrq<Sq>,
    #[pin]
    rq: SpinLockIrq<Rq>,
}

impl KernQp {
    /// The queues of a kernel QP being created: `log_sq_size` WQEBBs of WQEs up to
    /// `wqe_size` bytes after `rq` (log2 WQEs, log2 stride) at offset 0.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, or `EINVAL` for sizes that do not fit `usize`.
    pub(crate) fn new(
        attr: &QpInitAttr<'_, Mlx5Ib>,
        log_sq_size: u8,
        wqe_size: u32,
        rq: Option<(u8, u8)>,
        sq_off: usize,
        uar: u32,
    ) -> Result<Arc<Self>> {
        let sq_bbs = 1u32 << log_sq_size;
        let (rq_wqes, rq_shift) = rq.map_or((0, 4), |(l, s)| (1u32 << l, s));
        let n = usize::try_from(sq_bbs)?;
        let wqe_size = usize::try_from(wqe_size)?;
        let sq = Sq {
            cur_post: 0,
            head: 0,
            tail: 0,
            wrid: KVec::from_elem(0u64, n, GFP_KERNEL)?,
            wqe_head: KVec::from_elem(0u32, n, GFP_KERNEL)?,
            scratch: KVec::from_elem(0u8, wqe_size, GFP_KERNEL)?,
        };
        let rq_state = Rq {
            head: 0,
            tail: 0,
            wrid: KVec::from_elem(0u64, usize::try_from(rq_wqes)?, GFP_KERNEL)?,
        };
        let max_post = (sq_bbs * SEND_WQE_BB) / u32::try_from(wqe_size)?.max(1);
        let max_send_sge = usize::try_from(attr.cap.max_send_sge)?;
        Arc::pin_init(
            try_pin_init!(KernQp {
                sq_bbs,
                sq_off,
                wqe_size,
                max_post,
                max_send_sge,
                sig_all: attr.sq_sig_all,
                rq_wqes,
                rq_shift,
                uar,
                sq <- new_spinlock_irq!(sq),
                rq <- new_spinlock_irq!(rq_state),
            }),
            GFP_KERNEL,
        )
    }

    /// upstream `__mlx5_ib_modify_qp()` to RESET for a kernel QP: the queues start over, the
    /// doorbell records are zeroed.
    ///
    /// # Errors
    ///
    /// `EINVAL` if the doorbell record lies outside the buffer (a driver bug).
    pub(crate) fn reset(&self, buf: &KernBuf) -> Result {
        {
            let mut sq = self.sq.lock();
            sq.cur_post = 0;
            sq.head = 0;
            sq.tail = 0;
        }
        {
            let mut rq = self.rq.lock();
            rq.head = 0;
            rq.tail = 0;
        }
        buf.mem().write(buf.db_offset(), &[0u8; 8])
    }
}

// upstream mlx5_poll_one(): the WQEs a CQE completes.
impl KernQueues for KernQp {
    fn retire_send(&self, wqe_counter: u16) -> u64 {
        let mut sq = self.sq.lock();
        let idx = usize::from(wqe_counter) & (self.sq_bbs as usize - 1);
        let wr_id = sq.wrid.get(idx).copied().unwrap_or(0);
        sq.tail = sq
            .wqe_head
            .get(idx)
            .copied()
            .unwrap_or(sq.tail)
            .wrapping_add(1);
        wr_id
    }

    fn retire_recv(&self) -> u64 {
        let mut rq = self.rq.lock();
        let idx = (rq.tail & self.rq_wqes.saturating_sub(1)) as usize;
        let wr_id = rq.wrid.get(idx).copied().unwrap_or(0);
        rq.tail = rq.tail.wrapping_add(1);
        wr_id
    }
}

/// The QP table entry of a kernel QP being created (see [`KernQp`]).
///
/// # Errors
///
/// `ENOMEM`.
pub(crate) fn qp_target(attr: &QpInitAttr<'_, Mlx5Ib>, kern: Arc<KernQp>) -> Result<Arc<QpTarget>> {
    QpTarget::new(attr.event_handler.as_ref(), Some(kern))
}
