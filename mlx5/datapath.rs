// SPDX-License-Identifier: GPL-2.0

//! The data path of kernel QPs and CQs: `post_send`, `post_recv`, `poll_cq`, `req_notify_cq`
//! (upstream `mlx5_ib_post_send()`/`mlx5_ib_post_recv()` in `wr.c`, `mlx5_ib_poll_cq()` →
//! `mlx5_poll_one()` and `mlx5_ib_arm_cq()` in `cq.c`), with the WQE and CQE formats libmlx5
//! and the device use.
//!
//! * **Send**: under the SQ lock, each work request becomes a WQE at `cur_post` (64-byte
//!   basic blocks, 16-byte segments wrapping at the end of the SQ): the control segment
//!   (`opmod_idx_opcode`, `qpn_ds`, `fm_ce_se` with CQ_UPDATE for signaled requests or
//!   `sq_sig_all`, SOLICITED, the immediate), a remote address segment for RDMA and atomics,
//!   an atomic segment, then one data segment per non-empty SGE. Then the doorbell record
//!   (`dbrec[1]` = `cur_post`, big-endian) after a write barrier, and the first 8 bytes of
//!   the last WQE rung through [`Mlx5Hw::ring`] (the UAR's blue-flame register 0x800).
//! * **Receive**: data segments at `head` (stride of the RQ), terminated by lkey 0x100 when
//!   shorter than the stride, then `dbrec[0]` = `head`; no UAR store, as upstream.
//! * **Poll**: a CQE is the software's when its opcode is not invalid and its owner bit is
//!   the wrap parity of the consumer index; requester CQEs retire every WQE up to their
//!   `wqe_counter` (unsignaled ones included), responder CQEs take the RQ in order; error
//!   CQEs map their syndrome to `enum ib_wc_status` as `mlx5_handle_error_cqe()`. The
//!   consumer index record (`dbrec[0]` of the CQ) follows.
//! * **Arm**: `dbrec[1]` of the CQ = `sn << 28 | cmd | ci`, then the 64-bit doorbell
//!   `(that << 32) | cqn` at UAR + 0x20 (`mlx5_cq_arm()`), `sn` being the CQ's event count.
//!
//! Deviations: the core's post calls have no `bad_wr`: the requests before a refused one are
//! posted (and rung), the error is returned. Inline sends (`IB_SEND_INLINE`) are `EOPNOTSUPP`:
//! upstream copies inline data from the SGE addresses as kernel virtual addresses, and here
//! SGE addresses are bus addresses. UD sends are `EOPNOTSUPP` (no address handles for kernel
//! consumers yet); fast-register and local-invalidate WRs are `EINVAL`. A QP moved to RESET
//! restarts its queues but its old CQEs are not cleaned from its CQs (upstream
//! `mlx5_ib_cq_clean()`).

use crate::events::QpTarget;
use crate::hw::{DmaBuf, Doorbell};
use crate::ib::Mlx5Ib;
use crate::prm::wqe::{cqe_off, cqe_op, ctrl, syndrome, wqe_op, INVALID_LKEY, SEND_WQE_BB};
use crate::verbs::{KernBuf, QueueMem};
use ib_core_rs::verbs::{
    send_flags, wc_flags, Cq, CqNotify, Qp, QpInitAttr, QpType, RecvWr, SendWr, Wc, WcOpcode,
    WcStatus, WrOpcode,
};
use kernel::prelude::*;
use kernel::sync::barrier::{dma_mb, Read, Write};
use kernel::{new_spinlock_irq, sync::Arc, sync::SpinLockIrq};

/// `sizeof(struct mlx5_cqe64)` (kernel CQs use 64-byte CQEs).
const CQE: usize = 64;

/// upstream `mlx5_handle_error_cqe()`: a CQE syndrome → `enum ib_wc_status`.
pub(crate) fn syndrome_status(s: u8) -> WcStatus {
    match s {
        syndrome::LOCAL_LENGTH => WcStatus::LocLenErr,
        syndrome::LOCAL_QP_OP => WcStatus::LocQpOpErr,
        syndrome::LOCAL_PROT => WcStatus::LocProtErr,
        syndrome::FLUSH => WcStatus::WrFlushErr,
        syndrome::MW_BIND => WcStatus::MwBindErr,
        syndrome::BAD_RESP => WcStatus::BadRespErr,
        syndrome::LOCAL_ACCESS => WcStatus::LocAccessErr,
        syndrome::REMOTE_INVAL_REQ => WcStatus::RemInvReqErr,
        syndrome::REMOTE_ACCESS => WcStatus::RemAccessErr,
        syndrome::REMOTE_OP => WcStatus::RemOpErr,
        syndrome::RETRY_EXC => WcStatus::RetryExcErr,
        syndrome::RNR_RETRY_EXC => WcStatus::RnrRetryExcErr,
        syndrome::REMOTE_ABORTED => WcStatus::RemAbortErr,
        _ => WcStatus::GeneralErr,
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u16::from_be_bytes)
}

fn be32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

fn put(b: &mut [u8], at: usize, v: &[u8]) -> Result {
    b.get_mut(at..at + v.len())
        .ok_or(EINVAL)?
        .copy_from_slice(v);
    Ok(())
}

/// A kernel CQ's consumer state (upstream `cq->mcq.cons_index` under `cq->lock`).
pub(crate) struct KernCq {
    cons: Pin<KBox<SpinLockIrq<u32>>>,
}

impl KernCq {
    /// A CQ nothing was polled from.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new() -> Result<Self> {
        Ok(KernCq {
            cons: KBox::pin_init(new_spinlock_irq!(0u32), GFP_KERNEL)?,
        })
    }
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
        let max_post = (sq_bbs * SEND_WQE_BB as u32) / u32::try_from(wqe_size)?.max(1);
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

/// The kernel parts of a QP: its queues and buffer.
fn kern_qp(qp: &Qp<Mlx5Ib>) -> Result<(&Arc<KernQp>, &KernBuf)> {
    let q = qp.data();
    match (&q.events.kern, &q.mem) {
        (Some(k), QueueMem::Kernel { buf }) => Ok((k, buf)),
        // A user QP is posted to by its process, never through the kernel verbs.
        _ => Err(EINVAL),
    }
}

/// Copies a built WQE of `len` bytes into the SQ at WQEBB `cur_post`, wrapping per 16-byte
/// segment at the end of the queue (upstream `mlx5_get_send_wqe()` / `handle_post_send_edge()`).
fn copy_wqe(mem: &DmaBuf, k: &KernQp, cur_post: u32, wqe: &[u8]) -> Result {
    let sq_bytes = k.sq_bbs as usize * SEND_WQE_BB;
    let start = (cur_post & (k.sq_bbs - 1)) as usize * SEND_WQE_BB;
    for (i, seg) in wqe.chunks(16).enumerate() {
        let at = (start + i * 16) % sq_bytes;
        mem.write(k.sq_off + at, seg)?;
    }
    Ok(())
}

/// Builds the WQE of `wr` into `w` (control segment left for the caller); returns its size
/// in bytes and the send opcode.
fn build_wqe(k: &KernQp, wr: &SendWr<'_>, w: &mut [u8]) -> Result<(usize, u8)> {
    let opcode = match wr.opcode {
        WrOpcode::Send => wqe_op::SEND,
        WrOpcode::SendImm => wqe_op::SEND_IMM,
        WrOpcode::RdmaWrite => wqe_op::RDMA_WRITE,
        WrOpcode::RdmaWriteImm => wqe_op::RDMA_WRITE_IMM,
        WrOpcode::RdmaRead => wqe_op::RDMA_READ,
        WrOpcode::AtomicCmpSwap => wqe_op::ATOMIC_CS,
        WrOpcode::AtomicFetchAdd => wqe_op::ATOMIC_FA,
        WrOpcode::LocalInv | WrOpcode::RegMr => return Err(EINVAL),
    };
    if wr.send_flags & send_flags::INLINE != 0 {
        return Err(EOPNOTSUPP);
    }
    if wr.sg_list.len() > k.max_send_sge {
        return Err(EINVAL);
    }
    let mut len = 16;
    match opcode {
        wqe_op::RDMA_WRITE
        | wqe_op::RDMA_WRITE_IMM
        | wqe_op::RDMA_READ
        | wqe_op::ATOMIC_CS
        | wqe_op::ATOMIC_FA => {
            // struct mlx5_wqe_raddr_seg: raddr, rkey, reserved.
            put(w, len, &wr.remote_addr.to_be_bytes())?;
            put(w, len + 8, &wr.rkey.to_be_bytes())?;
            put(w, len + 12, &[0; 4])?;
            len += 16;
        }
        _ => {}
    }
    match opcode {
        wqe_op::ATOMIC_CS => {
            // struct mlx5_wqe_atomic_seg: swap_add, compare.
            put(w, len, &wr.swap.to_be_bytes())?;
            put(w, len + 8, &wr.compare_add.to_be_bytes())?;
            len += 16;
        }
        wqe_op::ATOMIC_FA => {
            put(w, len, &wr.compare_add.to_be_bytes())?;
            put(w, len + 8, &[0; 8])?;
            len += 16;
        }
        _ => {}
    }
    for sge in wr.sg_list.iter().filter(|s| s.length != 0) {
        // struct mlx5_wqe_data_seg: byte_count, lkey, addr.
        put(w, len, &sge.length.to_be_bytes())?;
        put(w, len + 4, &sge.lkey.to_be_bytes())?;
        put(w, len + 8, &sge.addr.to_be_bytes())?;
        len += 16;
    }
    Ok((len, opcode))
}

/// upstream `mlx5_ib_post_send()` for a kernel RC or UC QP.
///
/// # Errors
///
/// `EINVAL` for a user QP or a malformed work request (too many SGEs, an unknown opcode, inline
/// data too long), `EOPNOTSUPP` on a UD QP, `ENOMEM` when the send queue is full (upstream
/// `-ENOMEM` with `bad_wr`); the requests before the failing one are posted.
pub(crate) fn post_send(qp: &Qp<Mlx5Ib>, wrs: &[SendWr<'_>]) -> Result {
    let (k, buf) = kern_qp(qp)?;
    if qp.qp_type() == QpType::Ud {
        return Err(EOPNOTSUPP);
    }
    let d = qp.device().data();
    let qpn = qp.data().qpn;
    let mem = buf.mem();
    let mut sq = k.sq.lock();
    let mut nreq = 0u32;
    let mut last = [0u8; 8];
    let mut res = Ok(());
    for wr in wrs {
        // upstream mlx5_wq_overflow(): ENOMEM when the SQ is full.
        if sq.head.wrapping_sub(sq.tail).wrapping_add(nreq) >= k.max_post {
            res = Err(ENOMEM);
            break;
        }
        let cur_post = sq.cur_post;
        let built = {
            let w = sq.scratch.as_mut_slice();
            w.fill(0);
            build_wqe(k, wr, w)
        };
        let (len, opcode) = match built {
            Ok(b) => b,
            Err(e) => {
                res = Err(e);
                break;
            }
        };
        let mut fm_ce_se = 0u8;
        if k.sig_all || wr.send_flags & send_flags::SIGNALED != 0 {
            fm_ce_se |= ctrl::CQ_UPDATE;
        }
        if wr.send_flags & send_flags::SOLICITED != 0 {
            fm_ce_se |= ctrl::SOLICITED;
        }
        if wr.send_flags & send_flags::FENCE != 0 {
            fm_ce_se |= ctrl::FENCE;
        }
        let ds = (len / 16) as u32;
        let imm = match opcode {
            wqe_op::SEND_IMM | wqe_op::RDMA_WRITE_IMM => wr.imm_data,
            _ => 0,
        };
        // struct mlx5_wqe_ctrl_seg.
        let c0 = ((cur_post & 0xffff) << 8) | u32::from(opcode);
        let c1 = (qpn << 8) | ds;
        {
            let w = sq.scratch.as_mut_slice();
            put(w, 0, &c0.to_be_bytes())?;
            put(w, 4, &c1.to_be_bytes())?;
            put(w, 8, &[0, 0, 0, fm_ce_se])?;
            put(w, 12, &imm.to_be_bytes())?;
        }
        let wqe = sq.scratch.get(..len).ok_or(EINVAL)?;
        copy_wqe(mem, k, cur_post, wqe)?;
        last.copy_from_slice(wqe.get(..8).ok_or(EINVAL)?);
        let idx = (cur_post & (k.sq_bbs - 1)) as usize;
        let head = sq.head.wrapping_add(nreq);
        if let Some(w) = sq.wrid.get_mut(idx) {
            *w = wr.wr_id;
        }
        if let Some(h) = sq.wqe_head.get_mut(idx) {
            *h = head;
        }
        sq.cur_post = cur_post.wrapping_add(len.div_ceil(SEND_WQE_BB) as u32);
        nreq += 1;
    }
    if nreq != 0 {
        sq.head = sq.head.wrapping_add(nreq);
        // upstream: wmb(); the doorbell record; wmb(); mlx5_write64() to the UAR.
        dma_mb(Write);
        mem.write_be32(buf.db_offset() + 4, sq.cur_post & 0xffff)?;
        dma_mb(Write);
        d.hw.ring(k.uar, Doorbell::Sq, u64::from_be_bytes(last))?;
    }
    res
}

/// upstream `mlx5_ib_post_recv()` for a kernel QP with a receive queue.
///
/// # Errors
///
/// `EINVAL` for a user QP, a QP without a receive queue or too many SGEs, `ENOMEM` when the
/// receive queue is full; the requests before the failing one are posted.
pub(crate) fn post_recv(qp: &Qp<Mlx5Ib>, wrs: &[RecvWr<'_>]) -> Result {
    let (k, buf) = kern_qp(qp)?;
    if k.rq_wqes == 0 {
        return Err(EINVAL);
    }
    let mem = buf.mem();
    let stride = 1usize << k.rq_shift;
    let max_gs = stride / 16;
    let mut rq = k.rq.lock();
    let mut nreq = 0u32;
    let mut res = Ok(());
    for wr in wrs {
        if rq.head.wrapping_sub(rq.tail).wrapping_add(nreq) >= k.rq_wqes {
            res = Err(ENOMEM);
            break;
        }
        if wr.sg_list.len() > max_gs {
            res = Err(EINVAL);
            break;
        }
        let idx = (rq.head.wrapping_add(nreq) & (k.rq_wqes - 1)) as usize;
        let base = idx * stride;
        let mut segs = [0u8; 16];
        for (i, sge) in wr.sg_list.iter().enumerate() {
            segs[..4].copy_from_slice(&sge.length.to_be_bytes());
            segs[4..8].copy_from_slice(&sge.lkey.to_be_bytes());
            segs[8..].copy_from_slice(&sge.addr.to_be_bytes());
            mem.write(base + i * 16, &segs)?;
        }
        if wr.sg_list.len() < max_gs {
            let mut end = [0u8; 16];
            end[4..8].copy_from_slice(&INVALID_LKEY.to_be_bytes());
            mem.write(base + wr.sg_list.len() * 16, &end)?;
        }
        if let Some(w) = rq.wrid.get_mut(idx) {
            *w = wr.wr_id;
        }
        nreq += 1;
    }
    if nreq != 0 {
        rq.head = rq.head.wrapping_add(nreq);
        dma_mb(Write);
        mem.write_be32(buf.db_offset(), rq.head & 0xffff)?;
    }
    res
}

/// The kernel parts of a CQ.
fn kern_cq(cq: &Cq<Mlx5Ib>) -> Result<(&KernCq, &KernBuf)> {
    let c = cq.data();
    match (&c.kern, &c.mem) {
        (Some(k), QueueMem::Kernel { buf }) => Ok((k, buf)),
        _ => Err(EINVAL),
    }
}

/// One CQE → a work completion (upstream `mlx5_poll_one()`); `None` for a CQE that completes
/// nothing of a kernel QP (a QP already gone, a RESIZE CQE).
fn parse_cqe(qp: Option<&KernQp>, c: &[u8; CQE], qpn: u32) -> Option<Wc> {
    let opcode = c[cqe_off::OP_OWN] >> 4;
    let qp = qp?;
    let mut wc = Wc {
        qp_num: qpn,
        ..Wc::default()
    };
    match opcode {
        cqe_op::REQ | cqe_op::REQ_ERR => {
            let mut sq = qp.sq.lock();
            let idx = usize::from(be16(c, cqe_off::WQE_COUNTER)) & (qp.sq_bbs as usize - 1);
            wc.wr_id = sq.wrid.get(idx).copied().unwrap_or(0);
            sq.tail = sq
                .wqe_head
                .get(idx)
                .copied()
                .unwrap_or(sq.tail)
                .wrapping_add(1);
            if opcode == cqe_op::REQ_ERR {
                wc.status = syndrome_status(c[cqe_off::SYNDROME]);
                wc.vendor_err = u32::from(c[cqe_off::VENDOR_ERR_SYNDROME]);
                return Some(wc);
            }
            // upstream handle_good_req(): the send opcode is sop_drop_qpn's top byte.
            let (o, flags) = match c[cqe_off::SOP_DROP_QPN] {
                wqe_op::RDMA_WRITE_IMM => (WcOpcode::RdmaWrite, wc_flags::WITH_IMM),
                wqe_op::RDMA_WRITE => (WcOpcode::RdmaWrite, 0),
                wqe_op::SEND_IMM => (WcOpcode::Send, wc_flags::WITH_IMM),
                wqe_op::RDMA_READ => {
                    wc.byte_len = be32(c, cqe_off::BYTE_CNT);
                    (WcOpcode::RdmaRead, 0)
                }
                wqe_op::ATOMIC_CS => {
                    wc.byte_len = 8;
                    (WcOpcode::CompSwap, 0)
                }
                wqe_op::ATOMIC_FA => {
                    wc.byte_len = 8;
                    (WcOpcode::FetchAdd, 0)
                }
                _ => (WcOpcode::Send, 0),
            };
            wc.opcode = o;
            wc.wc_flags = flags;
        }
        cqe_op::RESP_WR_IMM | cqe_op::RESP_SEND | cqe_op::RESP_SEND_IMM | cqe_op::RESP_ERR => {
            let mut rq = qp.rq.lock();
            let idx = (rq.tail & qp.rq_wqes.saturating_sub(1)) as usize;
            wc.wr_id = rq.wrid.get(idx).copied().unwrap_or(0);
            rq.tail = rq.tail.wrapping_add(1);
            if opcode == cqe_op::RESP_ERR {
                wc.status = syndrome_status(c[cqe_off::SYNDROME]);
                wc.vendor_err = u32::from(c[cqe_off::VENDOR_ERR_SYNDROME]);
                wc.opcode = WcOpcode::Recv;
                return Some(wc);
            }
            // upstream handle_responder().
            wc.byte_len = be32(c, cqe_off::BYTE_CNT);
            wc.opcode = if opcode == cqe_op::RESP_WR_IMM {
                WcOpcode::RecvRdmaWithImm
            } else {
                WcOpcode::Recv
            };
            if opcode != cqe_op::RESP_SEND {
                wc.wc_flags |= wc_flags::WITH_IMM;
                wc.imm_data = be32(c, cqe_off::IMM);
            }
            let f = be32(c, cqe_off::FLAGS_RQPN);
            wc.src_qp = f & 0xff_ffff;
            wc.sl = ((f >> 24) & 0xf) as u8;
            if (f >> 28) & 3 != 0 {
                wc.wc_flags |= wc_flags::GRH;
            }
            wc.slid = be16(c, cqe_off::SLID);
        }
        _ => return None,
    }
    Some(wc)
}

/// upstream `mlx5_ib_poll_cq()` for a kernel CQ.
///
/// # Errors
///
/// `EINVAL` for a user CQ (or a CQE outside the buffer, a driver bug).
pub(crate) fn poll_cq(cq: &Cq<Mlx5Ib>, wc: &mut [Wc]) -> Result<usize> {
    let (k, buf) = kern_cq(cq)?;
    let c = cq.data();
    let d = cq.device().data();
    let mem = buf.mem();
    let log = u32::from(c.log_size);
    let mask = (1u32 << log) - 1;
    let mut ci = k.cons.lock();
    let mut n = 0;
    let mut consumed = false;
    while n < wc.len() {
        let off = (*ci & mask) as usize * CQE;
        let mut own = [0u8; 1];
        mem.read(off + cqe_off::OP_OWN, &mut own)?;
        let opcode = own[0] >> 4;
        if opcode == cqe_op::INVALID || u32::from(own[0] & 1) != (*ci >> log) & 1 {
            break;
        }
        // upstream: dma_rmb() after the ownership check, before the CQE's body.
        dma_mb(Read);
        let mut cqe = [0u8; CQE];
        mem.read(off, &mut cqe)?;
        *ci = ci.wrapping_add(1);
        consumed = true;
        let qpn = be32(&cqe, 56) & 0xff_ffff;
        let qp = d.events.kern_qp(qpn);
        if let Some(w) = parse_cqe(qp.as_deref(), &cqe, qpn) {
            if let Some(slot) = wc.get_mut(n) {
                *slot = w;
            }
            n += 1;
        }
    }
    if consumed {
        // upstream mlx5_cq_set_ci(): wmb() then the consumer index record.
        dma_mb(Write);
        mem.write_be32(buf.db_offset(), *ci & 0xff_ffff)?;
    }
    Ok(n)
}

/// upstream `mlx5_ib_arm_cq()` → `mlx5_cq_arm()` for a kernel CQ.
///
/// # Errors
///
/// `EINVAL` for a user CQ.
pub(crate) fn req_notify_cq(cq: &Cq<Mlx5Ib>, flags: CqNotify) -> Result {
    let (k, buf) = kern_cq(cq)?;
    let c = cq.data();
    let d = cq.device().data();
    let sn = c.events.arm_sn.load(kernel::sync::atomic::Relaxed) & 3;
    // MLX5_CQ_DB_REQ_NOT_SOL / MLX5_CQ_DB_REQ_NOT.
    let cmd = match flags {
        CqNotify::Solicited => 1u32 << 24,
        CqNotify::NextComp => 0,
    };
    let ci = *k.cons.lock() & 0xff_ffff;
    let arm = sn << 28 | cmd | ci;
    buf.mem().write_be32(buf.db_offset() + 4, arm)?;
    // upstream: wmb() between the arm record and the doorbell.
    dma_mb(Write);
    d.hw.ring(
        d.uar,
        Doorbell::CqArm,
        u64::from(arm) << 32 | u64::from(c.cqn),
    )
}

/// The QP table entry of a kernel QP being created (see [`KernQp`]).
///
/// # Errors
///
/// `ENOMEM`.
pub(crate) fn qp_target(attr: &QpInitAttr<'_, Mlx5Ib>, kern: Arc<KernQp>) -> Result<Arc<QpTarget>> {
    QpTarget::new(attr.event_handler.as_ref(), Some(kern))
}
