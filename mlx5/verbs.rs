// SPDX-License-Identifier: GPL-2.0

//! Kernel verbs through PRM commands: PD (`mlx5_ib_alloc_pd()`), CQ (`mlx5_ib_create_cq()`,
//! `create_cq_kernel()`), QP (`mlx5_ib_create_qp()` → `create_kernel_qp()`,
//! `__mlx5_ib_modify_qp()`, `mlx5_ib_query_qp()`), MR (`mlx5_ib_get_dma_mr()`,
//! `mlx5_ib_alloc_mr()`, `mlx5_ib_dereg_mr()`), upstream `drivers/infiniband/hw/mlx5/`.
//!
//! Every create path issues one create command last-but-nothing: buffers are allocated
//! first, the firmware object is created, and nothing after it can fail, so a failure leaves
//! no firmware object behind.
//!
//! CQ and QP buffers of kernel consumers are device-coherent memory from
//! [`Mlx5Hw::alloc_coherent`] (upstream `mlx5_frag_buf_alloc_node()` → `dma_alloc_coherent()`),
//! laid out as upstream lays out its fragment buffers (CQEs initialised to the invalid opcode
//! with the owner bit as `init_cq_frag_buf()` does, RQ then SQ); `pas[]` carries the bus
//! address of each page, and the doorbell record is in the page after the queue (upstream
//! takes it from a shared doorbell page, `mlx5_db_alloc()`). User objects' memory is mapped by
//! [`UserBuf`]. The kernel data path (`post_send`, `post_recv`, `poll_cq`, `req_notify_cq`) is
//! `datapath.rs`. CQs are bound to the EQ of their completion vector ([`Mlx5Hw::comp_eqn`],
//! upstream `mlx5_comp_eqn_get()`: mlx5_core's completion EQ; EQ 0 of vector 0 only on the
//! simulator). Every CQ and QP is registered in the device's event table
//! ([`crate::events`]) after its create command and detached before its destroy command.

use crate::attrs::GenCaps;
use crate::cmd::cq::{CqeSize, CreateCq, DestroyCq};
use crate::cmd::exec;
use crate::cmd::qp::{
    CreateQp, DestroyQp, Grh, Init2Init, Init2Rtr, ModifyQp, QpServiceType, QpcAttrs, QueryQp,
    RqType, Rst2Init, Rtr2Rts, Rts2Rts, ToErr, ToRst,
};
use crate::cmd::res::{AllocPd, CreateMkey, DeallocPd, DestroyMkey, MkeyAccess, MkeyTranslation};
use crate::cmd::res::{AllocXrcd, DeallocXrcd};
use crate::events::{CqTarget, QpTarget, Target};

use crate::hw::{CapType, DmaBuf, Mlx5Hw};
use crate::ib::{Mlx5Ib, Mlx5IbDev};
use crate::prm::ctx::cmd_hca_cap;
use crate::user_mem::{DbRecord, UserBuf};
use ib_core_rs::attr::{Gid, LinkLayer};
use ib_core_rs::device::Device;
use ib_core_rs::verbs::{
    AccessFlags, AhAttr, Cq, CqHandler, CqInitAttr, GlobalRoute, Mr, MrCreated, MrType, Pd, Qp,
    QpAttr, QpAttrMask, QpCreated, QpInitAttr, QpState, QpType, UserCtx,
};
use ib_core_rs::verbs::{QpHandler, Xrcd};
use kernel::prelude::*;
use kernel::{new_mutex, sync::Arc, sync::Mutex};

/// Adapter page size (`MLX5_ADAPTER_PAGE_SHIFT`).
const PAGE: usize = 4096;
/// Send WQE basic block (`MLX5_SEND_WQE_BB`), in the `u32` arithmetic of the size checks.
const SEND_WQE_BB: u32 = crate::prm::wqe::SEND_WQE_BB as u32;
/// `sizeof(struct mlx5_wqe_data_seg)`.
const DATA_SEG: u32 = 16;
/// `sizeof(struct mlx5_cqe64)`.
const CQE_SIZE: usize = 64;
/// `MLX5_CQE_INVALID << 4`: the op_own byte of a CQE the hardware has not written.
const CQE_INVALID_OWN: u8 = crate::prm::wqe::cqe_op::INVALID << 4;

/// The driver part of a PD (upstream `struct mlx5_ib_pd`).
pub(crate) struct Mlx5Pd {
    /// The PD number.
    pub(crate) pdn: u32,
    /// `pd->uid`: the DEVX uid of its context (0: kernel, or a context without DEVX).
    pub(crate) uid: u16,
}

/// A kernel queue buffer the device is told about by page (upstream `struct mlx5_frag_buf`),
/// followed by a page holding its doorbell record (`struct mlx5_db`).
pub(crate) struct KernBuf {
    buf: DmaBuf,
    queue_len: usize,
}

impl KernBuf {
    fn new(hw: &dyn Mlx5Hw, len: usize) -> Result<Self> {
        let queue_len = len.max(1).next_multiple_of(PAGE);
        Ok(KernBuf {
            buf: hw.alloc_coherent(queue_len + PAGE)?,
            queue_len,
        })
    }

    /// `pas[]`: the bus address of each adapter page of the queue.
    fn pas(&self) -> Result<KVec<u64>> {
        let mut v = self.buf.map().page_addrs()?;
        v.truncate(self.queue_len / PAGE);
        Ok(v)
    }

    /// The doorbell record's bus address.
    fn dbr_addr(&self) -> u64 {
        self.buf.bus(self.queue_len)
    }

    /// The memory (queue at 0, doorbell record at [`KernBuf::db_offset`]).
    pub(crate) fn mem(&self) -> &DmaBuf {
        &self.buf
    }

    /// The offset of the doorbell record in [`KernBuf::mem`].
    pub(crate) fn db_offset(&self) -> usize {
        self.queue_len
    }
}

/// Where a CQ's or QP's queues and doorbell record live.
pub(crate) enum QueueMem {
    /// A kernel consumer's: a kernel buffer and doorbell record.
    Kernel {
        /// The buffer and doorbell record.
        buf: KernBuf,
    },
    /// A user context's (upstream `cq->buf.umem`/`qp->trans_qp.base.ubuffer.umem` and
    /// `mlx5_ib_db_map_user()`): the pinned buffer (none for a QP without queues) and the
    /// doorbell record in a pinned, shared user page. Dropped after the destroy command.
    User {
        /// The pinned buffer.
        _buf: Option<UserBuf>,
        /// The doorbell record.
        _db: DbRecord,
    },
}

/// The driver part of a CQ (upstream `struct mlx5_ib_cq`).
pub(crate) struct Mlx5Cq {
    /// The CQ number.
    pub(crate) cqn: u32,
    /// log2 of the number of CQEs.
    pub(crate) log_size: u8,
    /// `MLX5_IB_CQ_PR_FLAGS_REAL_TIME_TS`: QPs on it need real-time timestamps.
    pub(crate) real_time_ts: bool,
    /// The queue's memory, released after DESTROY_CQ (a user CQ's buffer is in `user_buf`).
    pub(crate) mem: QueueMem,
    /// The CQ's entry in the device's event table.
    pub(crate) events: Arc<CqTarget>,
    /// A kernel CQ's consumer state (`None` for a user CQ).
    pub(crate) kern: Option<crate::datapath::KernCq>,
    /// A user CQ's pinned buffer, which a resize replaces (upstream `cq->buf.umem` under
    /// `cq->resize_mutex`); `None` for a kernel CQ, which does not resize.
    pub(crate) user_buf: Option<CqBufLock>,
}

/// A user CQ's current buffer behind its resize lock.
pub(crate) type CqBufLock = Pin<KBox<Mutex<UserBuf>>>;

/// The driver part of a QP (upstream `struct mlx5_ib_qp`).
pub(crate) struct Mlx5Qp {
    /// The QP number.
    pub(crate) qpn: u32,
    /// log2 of the send queue's WQE basic blocks (0 without a send queue).
    pub(crate) log_sq_size: u8,
    /// log2 of the receive queue's WQEs.
    pub(crate) log_rq_size: u8,
    /// The attributes set so far and the current state (upstream `qp->state`, `qp->port`,
    /// `trans_qp.resp_depth`, ...), under upstream's `qp->mutex`.
    state: Pin<KBox<Mutex<QpAttr>>>,
    pub(crate) mem: QueueMem,
    /// The QP's entry in the device's QP table (events; a kernel QP's queues).
    pub(crate) events: Arc<QpTarget>,
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
        events: Arc<QpTarget>,
    ) -> QpCreated<Self> {
        QpCreated {
            data: Mlx5Qp {
                qpn,
                log_sq_size,
                log_rq_size,
                state,
                mem,
                events,
            },
            qp_num: qpn,
        }
    }
}

/// The driver part of an MR (upstream `struct mlx5_ib_mr`).
pub(crate) struct Mlx5Mr {
    /// The mkey index (`key >> 8`).
    pub(crate) index: u32,
    /// The I/O virtual address the mkey starts at (upstream `mr->ibmr.iova`).
    pub(crate) iova: u64,
    /// The access flags the MR was created with (upstream `mr->access_flags`).
    pub(crate) access: AccessFlags,
    /// A user MR's pinned memory (`mr->umem`), unpinned after DESTROY_MKEY; a
    /// re-registration that keeps the translation moves it to the new MR (upstream
    /// `mlx5_ib_rereg_user_mr()` sets `mr->umem = NULL`).
    pub(crate) umem: Option<Pin<KBox<Mutex<Option<UserBuf>>>>>,
}

/// `ceil(log2(n))`.
///
/// # Errors
///
/// `EINVAL` if `n` rounded up to a power of two overflows.
pub(crate) fn ilog2_ceil(n: u32) -> Result<u8> {
    let p = n.max(1).checked_next_power_of_two().ok_or(EINVAL)?;
    Ok(p.trailing_zeros() as u8)
}

/// The general capability page.
///
/// # Errors
///
/// `EIO` if the function has no general capability page.
pub(crate) fn gen(d: &Mlx5IbDev) -> Result<GenCaps<'_>> {
    GenCaps::of(&*d.hw)
}

// ---- PD ----

/// upstream `mlx5_ib_alloc_pd()`: ALLOC_PD with the context's DEVX uid (0 for kernel PDs and
/// contexts without DEVX), so that the context's DEVX objects may name it; a user PD answers
/// `struct mlx5_ib_alloc_pd_resp { __u32 pdn; }` in its udata.
///
/// # Errors
///
/// The errno of ALLOC_PD (`Mlx5Hw::exec`).
pub(crate) fn alloc_pd(
    dev: &Device<Mlx5Ib>,
    user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
) -> Result<Mlx5Pd> {
    let uid = user.as_ref().map_or(0, |u| {
        u.ctx()
            .data::<crate::ucontext::Mlx5Ucontext>()
            .map_or(0, |c| c.devx_uid)
    });
    let pdn = exec(&*dev.data().hw, &AllocPd { uid })?;
    if let Some(u) = user {
        u.udata().copy_to(&crate::uabi::alloc_pd_resp(pdn));
    }
    Ok(Mlx5Pd { pdn, uid })
}

/// upstream `mlx5_ib_dealloc_pd()`: DEALLOC_PD.
///
/// # Errors
///
/// The errno of DEALLOC_PD (`Mlx5Hw::exec`).
pub(crate) fn dealloc_pd(pd: &Pd<Mlx5Ib>) -> Result {
    exec(
        &*pd.device().data().hw,
        &DeallocPd {
            id: pd.data().pdn,
            uid: pd.data().uid,
        },
    )
}

// ---- CQ ----

/// upstream `mlx5_ib_create_cq()` for a kernel consumer: `entries + 1` rounded up to a power
/// of two, at most `2^log_max_cq_sz` (`EINVAL`), 64-byte CQEs in a kernel buffer initialised
/// as `init_cq_frag_buf()` does, CREATE_CQ with the kernel UAR page.
///
/// # Errors
///
/// `EINVAL` for more CQEs than `log_max_cq_sz` allows or a bad completion vector, `ENOMEM`, the
/// errno of CREATE_CQ (`Mlx5Hw::exec`); everything allocated is released then.
pub(crate) fn create_cq(
    dev: &Device<Mlx5Ib>,
    attr: &CqInitAttr,
    handler: Option<&Arc<dyn CqHandler>>,
) -> Result<Mlx5Cq> {
    let d = dev.data();
    let eqn = d.hw.comp_eqn(attr.comp_vector)?;
    let log_max = gen(d)?.get(cmd_hca_cap::log_max_cq_sz);
    let entries = attr.cqe.checked_add(1).ok_or(EINVAL)?;
    let log_size = ilog2_ceil(entries)?;
    if u32::from(log_size) > log_max {
        return Err(EINVAL);
    }
    let buf = KernBuf::new(&*d.hw, CQE_SIZE << log_size)?;
    for i in 0..1usize << log_size {
        buf.mem()
            .write(i * CQE_SIZE + CQE_SIZE - 1, &[CQE_INVALID_OWN | 1])?;
    }
    let pas = buf.pas()?;
    let target = CqTarget::new(handler)?;
    let kern = crate::datapath::KernCq::new()?;
    let slot = d.events.reserve::<CqTarget>()?;
    let cqn = exec(
        &*d.hw,
        &CreateCq {
            uid: 0,
            log_cq_size: log_size,
            cqe_size: CqeSize::B64,
            uar_page: d.uar,
            eqn,
            log_page_size: 0,
            page_offset: 0,
            compression: None,
            dbr_addr: buf.dbr_addr(),
            pas: &pas,
        },
    )?;
    d.events.attach(slot, &target, cqn);
    Ok(Mlx5Cq {
        cqn,
        log_size,
        real_time_ts: false,
        mem: QueueMem::Kernel { buf },
        events: target,
        kern: Some(kern),
        user_buf: None,
    })
}

/// upstream `mlx5_ib_destroy_cq()` → `mlx5_core_destroy_cq()`: the CQ leaves the event table
/// (no completion handler runs after this returns), then DESTROY_CQ; a refused command puts
/// it back.
///
/// # Errors
///
/// The errno of DESTROY_CQ (`Mlx5Hw::exec`); the CQ stays then.
pub(crate) fn destroy_cq(cq: &Cq<Mlx5Ib>) -> Result {
    let (d, c) = (cq.device().data(), cq.data());
    destroy_detached(d, &c.events, || {
        exec(&*d.hw, &DestroyCq { cqn: c.cqn, uid: 0 })
    })
}

/// A CQ's or QP's destroy: its event target leaves the device's table, then the DESTROY
/// command; when it succeeds, the UARs whose deallocation waited for the object are retried,
/// when the device refuses it, the target goes back.
fn destroy_detached<T: Target>(
    d: &Mlx5IbDev,
    target: &Arc<T>,
    destroy: impl FnOnce() -> Result,
) -> Result {
    let detached = d.events.detach(target);
    let r = destroy();
    match r {
        Ok(()) => d.deferred_deallocs.retry(),
        Err(_) => d.events.reattach(target, detached),
    }
    r
}

// ---- QP ----

/// upstream `sq_overhead()`: control segment plus the transport's segments.
fn sq_overhead(t: QpType) -> u32 {
    match t {
        // ctrl + max(atomic + raddr, umr ctrl + mkey seg + inline UMR threshold / octoword)
        QpType::Rc => 16 + 120,
        // ctrl + max(raddr, umr ctrl + mkey seg)
        QpType::Uc => 16 + 112,
        // ctrl + datagram seg
        QpType::Ud => 16 + 48,
        // the XRC segment, then as RC
        QpType::XrcIni => 16 + 16 + 120,
        // no send queue
        QpType::XrcTgt => 0,
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
    // segment); user XRC QPs are verbs_user.rs's, target QPs create_xrc_tgt_qp()'s.
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
    let kern = crate::datapath::KernQp::new(
        attr,
        log_sq_size,
        wqe,
        (cap.max_recv_wr != 0).then_some((log_rq_size, rq_shift)),
        rq_bytes,
        d.uar,
    )?;
    let target = crate::datapath::qp_target(attr, kern)?;
    let slot = d.events.reserve::<QpTarget>()?;
    let st = match attr.qp_type {
        QpType::Rc => QpServiceType::Rc,
        QpType::Uc => QpServiceType::Uc,
        QpType::Ud => QpServiceType::Ud,
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
    let qpn = create_kernel_qp(d, &buf, &pas, st, pd.data().pdn, sq, rq)?;
    d.events.attach(slot, &target, qpn);
    Ok(Mlx5Qp::created(
        qpn,
        log_sq_size,
        log_rq_size,
        state,
        QueueMem::Kernel { buf },
        target,
    ))
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
            uid: 0,
            st,
            pd,
            sq,
            rq,
            uar_page: d.uar,
            log_page_size: 0,
            page_offset: 0,
            dbr_addr: buf.dbr_addr(),
            user_index: 0xff_ffff,
            wq_signature: false,
            ece: 0,
            ts_format: kernel_ts_format(d)?,
            pas,
        },
    )?;
    Ok(qpn)
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
        target,
    ))
}

/// upstream `mlx5_ib_alloc_xrcd()`: ALLOC_XRCD with uid 0.
///
/// # Errors
///
/// ALLOC_XRCD's errno.
pub(crate) fn alloc_xrcd(dev: &Device<Mlx5Ib>) -> Result<u32> {
    exec(&*dev.data().hw, &AllocXrcd { uid: 0 })
}

/// upstream `mlx5_ib_dealloc_xrcd()`.
///
/// # Errors
///
/// DEALLOC_XRCD's errno.
pub(crate) fn dealloc_xrcd(dev: &Device<Mlx5Ib>, xrcdn: u32) -> Result {
    exec(&*dev.data().hw, &DeallocXrcd { id: xrcdn, uid: 0 })
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
    let f = crate::uabi::qp_ts_format(ts_cap, false, false).map_err(crate::uar::abi_err)?;
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
    destroy_detached(d, &q.events, || {
        exec(&*d.hw, &DestroyQp { qpn: q.qpn, uid: 0 })
    })
}

/// `MLX5_QP_OPTPAR_*`, shared with the simulator.
use crate::prm::consts::qp_optpar as optpar;

/// upstream `ib_mask_to_mlx5_opt()` (the members this driver handles).
fn mask_to_opt(m: QpAttrMask) -> u32 {
    let mut o = 0;
    // IB_QP_MAX_DEST_RD_ATOMIC as IB_QP_ACCESS_FLAGS: remote read and atomics are enabled only
    // with responder resources (`to_mlx5_access_flags()`), so the access bits change with it.
    if m.contains(QpAttrMask::ACCESS_FLAGS) || m.contains(QpAttrMask::MAX_DEST_RD_ATOMIC) {
        o |= optpar::RRE | optpar::RAE | optpar::RWE;
    }
    if m.contains(QpAttrMask::PKEY_INDEX) {
        o |= optpar::PKEY_INDEX;
    }
    if m.contains(QpAttrMask::PORT) {
        o |= optpar::PRI_PORT;
    }
    if m.contains(QpAttrMask::QKEY) {
        o |= optpar::Q_KEY;
    }
    if m.contains(QpAttrMask::MIN_RNR_TIMER) {
        o |= optpar::RNR_TIMEOUT;
    }
    o
}

/// Merges the members of `a` selected by `mask` into `cur` (upstream keeps them in the
/// `mlx5_ib_qp` and the firmware context).
fn merge(cur: &mut QpAttr, a: &QpAttr, mask: QpAttrMask) {
    let has = |b: QpAttrMask| mask.contains(b);
    if has(QpAttrMask::PORT) {
        cur.port_num = a.port_num;
    }
    if has(QpAttrMask::PKEY_INDEX) {
        cur.pkey_index = a.pkey_index;
    }
    if has(QpAttrMask::ACCESS_FLAGS) {
        cur.qp_access_flags = a.qp_access_flags;
    }
    if has(QpAttrMask::QKEY) {
        cur.qkey = a.qkey;
    }
    if has(QpAttrMask::AV) {
        cur.ah_attr = a.ah_attr;
    }
    if has(QpAttrMask::PATH_MTU) {
        cur.path_mtu = a.path_mtu;
    }
    if has(QpAttrMask::DEST_QPN) {
        cur.dest_qp_num = a.dest_qp_num;
    }
    if has(QpAttrMask::RQ_PSN) {
        cur.rq_psn = a.rq_psn;
    }
    if has(QpAttrMask::SQ_PSN) {
        cur.sq_psn = a.sq_psn;
    }
    if has(QpAttrMask::TIMEOUT) {
        cur.timeout = a.timeout;
    }
    if has(QpAttrMask::RETRY_CNT) {
        cur.retry_cnt = a.retry_cnt;
    }
    if has(QpAttrMask::RNR_RETRY) {
        cur.rnr_retry = a.rnr_retry;
    }
    if has(QpAttrMask::MIN_RNR_TIMER) {
        cur.min_rnr_timer = a.min_rnr_timer;
    }
    if has(QpAttrMask::MAX_QP_RD_ATOMIC) {
        cur.max_rd_atomic = a.max_rd_atomic;
    }
    if has(QpAttrMask::MAX_DEST_RD_ATOMIC) {
        cur.max_dest_rd_atomic = a.max_dest_rd_atomic;
    }
}

/// upstream `to_mlx5_access_flags()`: remote read and atomic need responder resources.
fn access_bits(a: &QpAttr) -> (bool, bool, bool) {
    let f = a.qp_access_flags;
    let mut acc = f;
    if a.max_dest_rd_atomic == 0 {
        acc &= AccessFlags::REMOTE_WRITE.0;
    }
    (
        acc & AccessFlags::REMOTE_READ.0 != 0,
        acc & AccessFlags::REMOTE_WRITE.0 != 0,
        acc & AccessFlags::REMOTE_ATOMIC.0 != 0,
    )
}

/// upstream `mlx5_set_path()` for the primary path: port, P_Key index, and the address
/// vector (LID and SL on InfiniBand; on Ethernet the GRH is mandatory and the remote MAC is
/// the address vector's, `EINVAL` otherwise).
fn set_path(d: &Mlx5IbDev, a: &QpAttr, with_av: bool, c: &mut QpcAttrs) -> Result {
    let port = u8::try_from(a.port_num).map_err(|_| EINVAL)?;
    let p = d.port(a.port_num)?;
    c.port = Some(port);
    c.pkey_index = Some(a.pkey_index);
    if !with_av {
        return Ok(());
    }
    let ah = &a.ah_attr;
    c.sl = Some(ah.sl & 0xf);
    if let Some(g) = ah.grh {
        if u32::from(g.sgid_index) >= p.immutable.gid_tbl_len {
            return Err(EINVAL);
        }
        c.grh = Some(Grh {
            dgid: g.dgid.0,
            sgid_index: g.sgid_index,
            hop_limit: g.hop_limit,
            tclass: g.traffic_class,
            flow_label: g.flow_label,
        });
    }
    match p.link_layer {
        LinkLayer::Infiniband => c.rlid = Some(ah.dlid),
        LinkLayer::Ethernet => {
            if ah.grh.is_none() {
                return Err(EINVAL);
            }
            c.rmac = Some(ah.dmac);
        }
    }
    Ok(())
}

fn log2_rd(n: u8) -> Result<u8> {
    ilog2_ceil(u32::from(n))
}

/// upstream `mlx5_ib_modify_qp()` → `__mlx5_ib_modify_qp()`: the transition of the current
/// state and the target state (`optab`), the core's `ib_modify_qp_is_ok()` check (`EINVAL` for
/// an illegal transition, a missing required or a disallowed attribute), the context members of the
/// transition and the optional-parameter mask (`opt_mask`), then the command.
///
/// # Errors
///
/// `EINVAL` for a transition or attribute upstream refuses (`ib_modify_qp_is_ok()`, a bad port,
/// path or MTU), the errno of the transition command (`Mlx5Hw::exec`).
pub(crate) fn modify_qp(qp: &Qp<Mlx5Ib>, attr: &QpAttr, mask: QpAttrMask) -> Result {
    let d = qp.device().data();
    let t = qp.qp_type();
    let mut st = qp.data().state.lock();
    // upstream mqp->mutex also covers the counter binding (mlx5_ib_qp_set_counter()).
    let mut cnt = qp.data().events.cnt.lock();
    let cur = st.qp_state;
    let new = if mask.contains(QpAttrMask::STATE) {
        attr.qp_state
    } else {
        cur
    };
    if !ib_core_rs::verbs::modify_qp_is_ok(cur, new, t, mask) {
        return Err(EINVAL);
    }
    let mut next = *st;
    merge(&mut next, attr, mask);
    next.qp_state = new;
    let qpn = qp.data().qpn;
    let hw = &*d.hw;
    let rc = t != QpType::Ud;
    let mut c = QpcAttrs::default();
    let opt = mask_to_opt(mask);
    match (cur, new) {
        (_, QpState::Reset) => exec(hw, &ModifyQp::<ToRst>::new(qpn, c))?,
        (_, QpState::Err) => exec(hw, &ModifyQp::<ToErr>::new(qpn, c))?,
        (QpState::Reset, QpState::Init) | (QpState::Init, QpState::Init) => {
            set_path(d, &next, false, &mut c)?;
            if rc {
                c.rre_rwe_rae = Some(access_bits(&next));
            } else {
                c.q_key = Some(next.qkey);
            }
            if cur == QpState::Reset {
                // upstream __mlx5_ib_modify_qp(): the port's counter set
                // (mlx5_ib_get_counters_id()) at RESET->INIT.
                // A QP bound in RESET counts into its counter's set (`ibqp->counter->id`).
                let set = if cnt.set != 0 { cnt.set } else { d.qcnt_set() };
                c.counter_set_id = u8::try_from(set).ok().filter(|&id| id != 0);
                exec(hw, &ModifyQp::<Rst2Init>::new(qpn, c))?;
            } else {
                let opt = opt
                    & (optpar::RRE
                        | optpar::RAE
                        | optpar::RWE
                        | optpar::PKEY_INDEX
                        | optpar::PRI_PORT
                        | optpar::Q_KEY);
                exec(hw, &ModifyQp::<Init2Init>::with_opt(qpn, c, opt))?;
            }
        }
        (QpState::Init, QpState::Rtr) => {
            set_path(d, &next, rc, &mut c)?;
            let log_max_msg = gen(d)?.get(cmd_hca_cap::log_max_msg);
            c.log_msg_max = Some(u8::try_from(log_max_msg).map_err(|_| EIO)?);
            if rc {
                if !(1..=5).contains(&next.path_mtu) {
                    return Err(EINVAL);
                }
                c.mtu = Some(next.path_mtu);
                c.remote_qpn = Some(next.dest_qp_num & 0xff_ffff);
                c.next_rcv_psn = Some(next.rq_psn & 0xff_ffff);
                c.log_rra_max = Some(log2_rd(next.max_dest_rd_atomic)?);
                c.min_rnr_nak = Some(next.min_rnr_timer & 0x1f);
                c.rre_rwe_rae = Some(access_bits(&next));
            } else {
                c.q_key = Some(next.qkey);
            }
            let opt = opt
                & if rc {
                    optpar::RRE | optpar::RAE | optpar::RWE | optpar::PKEY_INDEX
                } else {
                    optpar::PKEY_INDEX | optpar::Q_KEY
                };
            exec(hw, &ModifyQp::<Init2Rtr>::with_opt(qpn, c, opt))?;
        }
        (QpState::Rtr, QpState::Rts) | (QpState::Rts, QpState::Rts) => {
            let opt = opt
                & if rc {
                    optpar::RRE | optpar::RAE | optpar::RWE | optpar::RNR_TIMEOUT
                } else {
                    optpar::Q_KEY
                };
            if rc {
                c.ack_timeout = Some(next.timeout & 0x1f);
                c.min_rnr_nak = Some(next.min_rnr_timer & 0x1f);
                c.rre_rwe_rae = Some(access_bits(&next));
            } else {
                c.q_key = Some(next.qkey);
            }
            if cur == QpState::Rtr {
                c.next_send_psn = Some(next.sq_psn & 0xff_ffff);
                if rc {
                    c.retry_count = Some(next.retry_cnt & 7);
                    c.rnr_retry = Some(next.rnr_retry & 7);
                    c.log_sra_max = Some(log2_rd(next.max_rd_atomic)?);
                }
                exec(hw, &ModifyQp::<Rtr2Rts>::with_opt(qpn, c, opt))?;
            } else {
                exec(hw, &ModifyQp::<Rts2Rts>::with_opt(qpn, c, opt))?;
            }
        }
        _ => return Err(EINVAL),
    }
    cnt.state = new;
    // upstream __mlx5_ib_modify_qp(): a binding made after INIT is applied at RTS.
    if new == QpState::Rts && cnt.pending {
        let set = if cnt.set != 0 { cnt.set } else { d.qcnt_set() };
        if set_counter(d, qpn, set).is_ok() {
            cnt.pending = false;
        }
    }
    if new == QpState::Reset {
        // upstream: a kernel QP's queues start over.
        if let (Some(k), QueueMem::Kernel { buf }) = (&qp.data().events.kern, &qp.data().mem) {
            k.reset(buf)?;
        }
        // upstream: a QP back in RESET forgets its attributes (the context is reset).
        *st = QpAttr::default();
    } else {
        *st = next;
    }
    Ok(())
}

/// upstream `mlx5_ib_query_qp()` → `query_qp_attr()`: QUERY_QP, the context back to
/// `ib_qp_attr`.
///
/// # Errors
///
/// The errno of QUERY_QP (`Mlx5Hw::exec`), `EIO` for a state or value the firmware should not
/// report.
pub(crate) fn query_qp(qp: &Qp<Mlx5Ib>) -> Result<QpAttr> {
    let d = qp.device().data();
    let _st = qp.data().state.lock();
    let q = exec(&*d.hw, &QueryQp { qpn: qp.data().qpn })?;
    use crate::cmd::qp::QpState as S;
    let state = match q.state {
        S::Rst => QpState::Reset,
        S::Init => QpState::Init,
        S::Rtr => QpState::Rtr,
        S::Rts => QpState::Rts,
        S::Sqer => QpState::Sqe,
        S::Sqd => QpState::Sqd,
        S::Err => QpState::Err,
    };
    let (rre, rwe, rae) = q.rre_rwe_rae;
    let mut access = 0;
    if rre {
        access |= AccessFlags::REMOTE_READ.0;
    }
    if rwe {
        access |= AccessFlags::REMOTE_WRITE.0;
    }
    if rae {
        access |= AccessFlags::REMOTE_ATOMIC.0;
    }
    let port_num = u32::from(q.port);
    let eth = d
        .port(port_num)
        .map(|p| p.link_layer == LinkLayer::Ethernet)
        .unwrap_or(false);
    Ok(QpAttr {
        qp_state: state,
        port_num,
        pkey_index: q.pkey_index,
        qp_access_flags: access,
        qkey: q.q_key,
        path_mtu: q.mtu,
        dest_qp_num: q.remote_qpn,
        rq_psn: q.next_rcv_psn,
        sq_psn: q.next_send_psn,
        ah_attr: AhAttr {
            dlid: if eth { 0 } else { q.rlid },
            sl: q.sl,
            port_num,
            grh: q.grh.map(|g| GlobalRoute {
                dgid: Gid(g.dgid),
                flow_label: g.flow_label,
                sgid_index: g.sgid_index,
                hop_limit: g.hop_limit,
                traffic_class: g.tclass,
            }),
            dmac: if eth { q.rmac } else { [0; 6] },
        },
        timeout: q.ack_timeout,
        retry_cnt: q.retry_count,
        rnr_retry: q.rnr_retry,
        min_rnr_timer: q.min_rnr_nak,
        max_rd_atomic: 1u8.checked_shl(u32::from(q.log_sra_max)).unwrap_or(0),
        max_dest_rd_atomic: 1u8.checked_shl(u32::from(q.log_rra_max)).unwrap_or(0),
    })
}

// ---- MR ----

pub(crate) fn mkey_access(a: AccessFlags) -> MkeyAccess {
    MkeyAccess {
        remote_atomic: a.0 & AccessFlags::REMOTE_ATOMIC.0 != 0,
        remote_write: a.0 & AccessFlags::REMOTE_WRITE.0 != 0,
        remote_read: a.0 & AccessFlags::REMOTE_READ.0 != 0,
        local_write: a.0 & AccessFlags::LOCAL_WRITE.0 != 0,
    }
}

/// upstream `mlx5_ib_get_dma_mr()`: CREATE_MKEY, PA access mode, `length64`.
///
/// # Errors
///
/// As [`create_mr_keep`].
pub(crate) fn get_dma_mr(pd: &Pd<Mlx5Ib>, access: AccessFlags) -> Result<MrCreated<Mlx5Mr>> {
    create_mr(pd, access, 0, MkeyTranslation::Pa, None)
}

/// CREATE_MKEY (uid 0) in `pd` with the next key variant, as an MR holding `umem` (upstream
/// `mlx5_ib_create_mkey()` and then `mr->ibmr.lkey = mr->ibmr.rkey = mr->mmkey.key`). The
/// memory is taken from `umem` only on success (a failed re-registration puts it back into
/// the old MR).
///
/// # Errors
///
/// `ENOMEM`, the errno of CREATE_MKEY (`Mlx5Hw::exec`).
pub(crate) fn create_mr_keep(
    pd: &Pd<Mlx5Ib>,
    access: AccessFlags,
    iova: u64,
    translation: MkeyTranslation<'_>,
    umem: &mut Option<UserBuf>,
) -> Result<MrCreated<Mlx5Mr>> {
    let d = pd.device().data();
    let slot = match umem {
        Some(_) => Some(KBox::pin_init(new_mutex!(None), GFP_KERNEL)?),
        None => None,
    };
    let m = exec(
        &*d.hw,
        &CreateMkey {
            uid: 0,
            pd: pd.data().pdn,
            access: mkey_access(access),
            key_byte: d.next_mkey_variant(),
            translation,
        },
    )?;
    if let Some(b) = &slot {
        *b.lock() = umem.take();
    }
    Ok(MrCreated {
        data: Mlx5Mr {
            index: m.index,
            iova,
            access,
            umem: slot,
        },
        lkey: m.key,
        rkey: m.key,
    })
}

/// [`create_mr_keep`], dropping the memory on failure.
///
/// # Errors
///
/// As [`create_mr_keep`].
pub(crate) fn create_mr(
    pd: &Pd<Mlx5Ib>,
    access: AccessFlags,
    iova: u64,
    translation: MkeyTranslation<'_>,
    umem: Option<UserBuf>,
) -> Result<MrCreated<Mlx5Mr>> {
    let mut umem = umem;
    create_mr_keep(pd, access, iova, translation, &mut umem)
}

/// upstream `__mlx5_ib_qp_set_counter()`: RTS2RTS with only `counter_set_id`
/// (`MLX5_QP_OPTPAR_COUNTER_SET_ID`).
fn set_counter(d: &Mlx5IbDev, qpn: u32, set: u32) -> Result {
    let c = QpcAttrs {
        counter_set_id: Some(u8::try_from(set).map_err(|_| EINVAL)?),
        ..QpcAttrs::default()
    };
    exec(
        &*d.hw,
        &ModifyQp::<Rts2Rts>::with_opt(qpn, c, optpar::COUNTER_SET_ID),
    )
}

/// upstream `mlx5_ib_qp_set_counter()`: a QP in RESET takes the set at RESET->INIT, one in RTS
/// now (RTS2RTS; `EOPNOTSUPP` without `rts2rts_qp_counters_set_id`), one in between at its
/// move to RTS. `set` 0 is the port's own set (unbind).
fn qp_set_counter(dev: &Device<Mlx5Ib>, qpn: u32, set: u32) -> Result {
    let d = dev.data();
    let t = d.events.qp_target(qpn).ok_or(EINVAL)?;
    let mut cnt = t.cnt.lock();
    if cnt.state == QpState::Reset {
        cnt.set = set;
        return Ok(());
    }
    if gen(d)?.get(cmd_hca_cap::rts2rts_qp_counters_set_id) == 0 {
        return Err(EOPNOTSUPP);
    }
    if cnt.state == QpState::Rts {
        set_counter(d, qpn, if set != 0 { set } else { d.qcnt_set() })?;
        cnt.set = set;
        return Ok(());
    }
    cnt.pending = true;
    cnt.set = set;
    Ok(())
}

/// upstream `mlx5_ib_counter_bind_qp()`: a new counter (`id` 0) is a Q counter set of its own
/// (ALLOC_Q_COUNTER, shared-resource uid), freed again when the QP cannot take it.
///
/// # Errors
///
/// ALLOC_Q_COUNTER's errno (the device's sets are `max_qp_cnt`), `EINVAL` for an unknown QP,
/// `EOPNOTSUPP` or the RTS2RTS errno from the QP.
pub(crate) fn counter_bind_qp(dev: &Device<Mlx5Ib>, id: u32, qpn: u32) -> Result<u32> {
    let d = dev.data();
    let (set, new) = if id == 0 {
        let set = exec(&*d.hw, &crate::cmd::res::AllocQCounter { uid: 0 })?;
        (set, true)
    } else {
        (id, false)
    };
    if let Err(e) = qp_set_counter(dev, qpn, set) {
        if new {
            let _ = exec(
                &*d.hw,
                &crate::cmd::res::DeallocQCounter { id: set, uid: 0 },
            );
        }
        return Err(e);
    }
    Ok(set)
}

/// upstream `mlx5_ib_counter_unbind_qp()`: the QP back to the port's set.
///
/// # Errors
///
/// As [`counter_bind_qp`]'s move.
pub(crate) fn counter_unbind_qp(dev: &Device<Mlx5Ib>, qpn: u32) -> Result {
    qp_set_counter(dev, qpn, 0)
}

/// upstream `mlx5_ib_counter_dealloc()`: DEALLOC_Q_COUNTER.
///
/// # Errors
///
/// DEALLOC_Q_COUNTER's errno.
pub(crate) fn counter_dealloc(dev: &Device<Mlx5Ib>, id: u32) -> Result {
    if id == 0 {
        return Ok(());
    }
    exec(
        &*dev.data().hw,
        &crate::cmd::res::DeallocQCounter { id, uid: 0 },
    )
}

/// upstream `mlx5_ib_counter_update_stats()` → `mlx5_ib_query_q_counters()` of the counter's
/// set.
///
/// # Errors
///
/// QUERY_Q_COUNTER's errno.
pub(crate) fn counter_update_stats(
    dev: &Device<Mlx5Ib>,
    id: u32,
    out: &mut [u64],
) -> Result<usize> {
    let v = exec(&*dev.data().hw, &crate::cmd::res::QueryQCounter { id })?;
    let mut n = 0;
    for (o, x) in out.iter_mut().zip(v.iter()) {
        *o = u64::from(*x);
        n += 1;
    }
    Ok(n)
}

/// upstream `mlx5_ib_get_hw_stats()` → `do_get_hw_stats()` → `mlx5_ib_query_q_counters()` for
/// a port: QUERY_Q_COUNTER of the port's set, the [`crate::cmd::res::Q_COUNTERS`] in order
/// (the device has no congestion or PPCNT counters to add).
///
/// # Errors
///
/// `EINVAL` without a counter set; QUERY_Q_COUNTER's errno.
pub(crate) fn get_hw_stats(dev: &Device<Mlx5Ib>, out: &mut [u64]) -> Result<usize> {
    let d = dev.data();
    if d.qcnt_set() == 0 {
        return Err(EINVAL);
    }
    let v = exec(&*d.hw, &crate::cmd::res::QueryQCounter { id: d.qcnt_set() })?;
    let mut n = 0;
    for (o, x) in out.iter_mut().zip(v.iter()) {
        *o = u64::from(*x);
        n += 1;
    }
    Ok(n)
}

/// upstream `mlx5_ib_alloc_mr()` → `mlx5_alloc_mem_reg_descs()`: a free MTT mkey with room for
/// `ALIGN(max_num_sg, 4)` descriptors (filled later by a fast-register WQE). Only
/// `IB_MR_TYPE_MEM_REG`; SG_GAPS (KLM) and integrity MRs are `EOPNOTSUPP` here.
///
/// # Errors
///
/// `EOPNOTSUPP` for an MR type other than `IB_MR_TYPE_MEM_REG`, `EINVAL` for `max_num_sg` 0 or
/// beyond `max_fast_reg_page_list_len`, `ENOMEM`, the errno of CREATE_MKEY.
pub(crate) fn alloc_mr(
    pd: &Pd<Mlx5Ib>,
    mr_type: MrType,
    max_num_sg: u32,
) -> Result<MrCreated<Mlx5Mr>> {
    let d = pd.device().data();
    if mr_type != MrType::MemReg {
        return Err(EOPNOTSUPP);
    }
    if max_num_sg == 0 || max_num_sg > d.attrs.max_fast_reg_page_list_len {
        return Err(EINVAL);
    }
    let ndescs = usize::try_from(max_num_sg.next_multiple_of(4)).map_err(|_| EINVAL)?;
    let pages = KVVec::from_elem(0u64, ndescs, GFP_KERNEL)?;
    create_mr(
        pd,
        AccessFlags(0),
        0,
        MkeyTranslation::Mtt {
            start: 0,
            len: 0,
            log_page_size: 12,
            pages: &pages,
        },
        None,
    )
}

/// upstream `mlx5_ib_dereg_mr()` → `destroy_mkey()`: DESTROY_MKEY.
///
/// # Errors
///
/// The errno of DESTROY_MKEY (`Mlx5Hw::exec`); the MR stays then.
pub(crate) fn dereg_mr(mr: &Mr<Mlx5Ib>) -> Result {
    exec(
        &*mr.pd().device().data().hw,
        &DestroyMkey {
            id: mr.data().index,
            uid: 0,
        },
    )
}

/// The driver part of an address handle (upstream `struct mlx5_ib_ah`). Nothing of its own:
/// the core keeps the attributes (`Ah::attr`), from which a kernel UD send would build the
/// WQE's address vector; user AHs live in libmlx5.
pub(crate) struct Mlx5Ah;

/// `offsetofend(struct mlx5_ib_create_ah_resp, dmac)`: `response_length` (u32) then the MAC.
const CREATE_AH_RESP_MIN: usize = 4 + 6;

/// upstream `mlx5_ib_create_ah()` (ah.c): RoCE needs a GRH (`EINVAL`; the core checks it
/// first); a user RoCE AH answers `struct mlx5_ib_create_ah_resp` with the destination MAC the
/// core resolved (libmlx5 puts it into the AV's `rmac`), `EINVAL` if the response cannot hold
/// it. No firmware command: an mlx5 AH is the address vector in the WQE.
///
/// # Errors
///
/// `EINVAL` for a RoCE AH without a GRH, or a user response too short for the MAC.
pub(crate) fn create_ah(
    pd: &Pd<Mlx5Ib>,
    attr: &AhAttr,
    user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
) -> Result<Mlx5Ah> {
    let dev = pd.device().data();
    let link_layer = dev.hw.identity().link_layer;
    if link_layer == LinkLayer::Ethernet {
        if attr.grh.is_none() {
            return Err(EINVAL);
        }
        if let Some(u) = user {
            let udata = u.udata();
            if udata.outlen() < CREATE_AH_RESP_MIN {
                return Err(EINVAL);
            }
            let mut resp = [0u8; CREATE_AH_RESP_MIN];
            resp[..4].copy_from_slice(&(CREATE_AH_RESP_MIN as u32).to_ne_bytes());
            resp[4..].copy_from_slice(&attr.dmac);
            udata.copy_to(&resp);
        }
    }
    Ok(Mlx5Ah)
}
