// SPDX-License-Identifier: GPL-2.0

//! The data path of kernel QPs: `post_send` and `post_recv` (upstream `mlx5_ib_post_send()` /
//! `mlx5_ib_post_recv()`, wr.c), with the WQE format libmlx5 and the device use.
//!
//! * **Send**: under the SQ lock, each work request becomes a WQE at `cur_post` (64-byte
//!   basic blocks, 16-byte segments wrapping at the end of the SQ): the control segment
//!   (`opmod_idx_opcode`, `qpn_ds`, `fm_ce_se` with CQ_UPDATE for signaled requests or
//!   `sq_sig_all`, SOLICITED, the immediate), a remote address segment for RDMA and atomics,
//!   an atomic segment, then one data segment per non-empty SGE. Then the doorbell record
//!   (`dbrec[1]` = `cur_post`, big-endian) after a write barrier, and the first 8 bytes of
//!   the last WQE rung through [`Mlx5Hw::ring`](crate::hw::Mlx5Hw::ring) (the UAR's
//!   blue-flame register 0x800).
//! * **Receive**: data segments at `head` (stride of the RQ), terminated by lkey 0x100 when
//!   shorter than the stride, then `dbrec[0]` = `head`; no UAR store, as upstream.
//!
//! Deviations: the core's post calls have no `bad_wr`: the requests before a refused one are
//! posted (and rung), the error is returned. Inline sends (`IB_SEND_INLINE`) are `EOPNOTSUPP`:
//! upstream copies inline data from the SGE addresses as kernel virtual addresses, and here
//! SGE addresses are bus addresses. UD sends go through [`post_send_ud`] with the address
//! vector built by the caller (the special QPs of `gsi.rs`); [`post_send`] on a datagram QP is
//! `EOPNOTSUPP` (the core's `SendWr` carries no address handle). Fast-register and
//! local-invalidate WRs are `EINVAL`.

use super::{KernQp, Sq};
use crate::hw::{DmaBuf, Doorbell};
use crate::ib::device::Mlx5Ib;
use crate::ib::queue::{KernBuf, QueueMem};
use crate::prm::wqe::{ctrl, wqe_op, INVALID_LKEY, SEND_WQE_BB};
use ib_core_rs::verbs::{send_flags, Qp, QpType, RecvWr, SendWr, WrOpcode};
use kernel::prelude::*;
use kernel::sync::barrier::{dma_mb, Write};
use kernel::sync::Arc;

fn put(b: &mut [u8], at: usize, v: &[u8]) -> Result {
    b.get_mut(at..at + v.len())
        .ok_or(EINVAL)?
        .copy_from_slice(v);
    Ok(())
}

/// The kernel parts of a QP: its queues and buffer.
fn kern_qp(qp: &Qp<Mlx5Ib>) -> Result<(&Arc<KernQp>, &KernBuf)> {
    let q = qp.data();
    match (&q.kern, &q.mem) {
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
fn build_wqe(
    k: &KernQp,
    wr: &SendWr<'_>,
    av: Option<&[u8; 48]>,
    w: &mut [u8],
) -> Result<(usize, u8)> {
    // A datagram QP sends only SEND and SEND_IMM (upstream: the datagram segment follows
    // the control segment, set_datagram_seg()).
    if av.is_some() && !matches!(wr.opcode, WrOpcode::Send | WrOpcode::SendImm) {
        return Err(EINVAL);
    }
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
    if let Some(av) = av {
        put(w, len, av)?;
        len += 48;
    }
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
    if matches!(qp.qp_type(), QpType::Ud | QpType::Smi | QpType::Gsi) {
        return Err(EOPNOTSUPP);
    }
    post(qp, wrs, None)
}

/// upstream `mlx5_ib_post_send()` of one send on a kernel datagram QP (UD, QP0, QP1) with
/// `struct mlx5_av` `av` as its datagram segment (upstream `set_datagram_seg()`; the caller
/// builds the address vector, [`crate::ib::gsi`] for the special QPs).
///
/// # Errors
///
/// `EINVAL` on another QP type or for an opcode other than SEND/SEND_IMM, else
/// [`post_send`]'s.
pub(crate) fn post_send_ud(qp: &Qp<Mlx5Ib>, wr: &SendWr<'_>, av: &[u8; 48]) -> Result {
    if !matches!(qp.qp_type(), QpType::Ud | QpType::Smi | QpType::Gsi) {
        return Err(EINVAL);
    }
    post(qp, core::slice::from_ref(wr), Some(av))
}

fn post(qp: &Qp<Mlx5Ib>, wrs: &[SendWr<'_>], av: Option<&[u8; 48]>) -> Result {
    let (k, buf) = kern_qp(qp)?;
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
        let built = {
            let w = sq.scratch.as_mut_slice();
            w.fill(0);
            build_wqe(k, wr, av, w)
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
        let imm = match opcode {
            wqe_op::SEND_IMM | wqe_op::RDMA_WRITE_IMM => wr.imm_data,
            _ => 0,
        };
        let c = CtrlSeg {
            len,
            opcode,
            fm_ce_se,
            imm,
            wr_id: wr.wr_id,
        };
        last = emit(&mut sq, k, mem, qpn, nreq, &c)?;
        nreq += 1;
    }
    if nreq != 0 {
        ring_sq(qp, k, buf, &mut sq, nreq, last)?;
    }
    res
}

/// The control segment of a WQE built in the SQ's scratch buffer.
struct CtrlSeg {
    len: usize,
    opcode: u8,
    fm_ce_se: u8,
    imm: u32,
    wr_id: u64,
}

/// Completes the WQE of `c.len` bytes built in `sq.scratch` with its control segment (`struct
/// mlx5_wqe_ctrl_seg`), copies it into the SQ at `cur_post` and records its `wr_id` as the
/// `nreq`-th request of this post (upstream `mlx5r_finish_wqe()`); returns its first 8 bytes
/// for the doorbell.
fn emit(
    sq: &mut Sq,
    k: &KernQp,
    mem: &DmaBuf,
    qpn: u32,
    nreq: u32,
    c: &CtrlSeg,
) -> Result<[u8; 8]> {
    let cur_post = sq.cur_post;
    let ds = (c.len / 16) as u32;
    let c0 = ((cur_post & 0xffff) << 8) | u32::from(c.opcode);
    let c1 = (qpn << 8) | ds;
    {
        let w = sq.scratch.as_mut_slice();
        put(w, 0, &c0.to_be_bytes())?;
        put(w, 4, &c1.to_be_bytes())?;
        put(w, 8, &[0, 0, 0, c.fm_ce_se])?;
        put(w, 12, &c.imm.to_be_bytes())?;
    }
    let wqe = sq.scratch.get(..c.len).ok_or(EINVAL)?;
    copy_wqe(mem, k, cur_post, wqe)?;
    let mut last = [0u8; 8];
    last.copy_from_slice(wqe.get(..8).ok_or(EINVAL)?);
    let idx = (cur_post & (k.sq_bbs - 1)) as usize;
    let head = sq.head.wrapping_add(nreq);
    if let Some(w) = sq.wrid.get_mut(idx) {
        *w = c.wr_id;
    }
    if let Some(h) = sq.wqe_head.get_mut(idx) {
        *h = head;
    }
    sq.cur_post = cur_post.wrapping_add(c.len.div_ceil(SEND_WQE_BB) as u32);
    Ok(last)
}

/// upstream `mlx5r_ring_db()`: `nreq` WQEs posted; the doorbell record after a write barrier,
/// then the first 8 bytes of the last WQE to the UAR.
fn ring_sq(
    qp: &Qp<Mlx5Ib>,
    k: &KernQp,
    buf: &KernBuf,
    sq: &mut Sq,
    nreq: u32,
    last: [u8; 8],
) -> Result {
    sq.head = sq.head.wrapping_add(nreq);
    // upstream: wmb(); the doorbell record; wmb(); mlx5_write64() to the UAR.
    dma_mb(Write);
    buf.mem()
        .write_be32(buf.db_offset() + 4, sq.cur_post & 0xffff)?;
    dma_mb(Write);
    qp.device()
        .data()
        .hw
        .ring(k.uar, Doorbell::Sq, u64::from_be_bytes(last))
}

/// upstream `mlx5r_umr_post_send()`: one UMR WQE on the driver's UMR QP, signaled, with an
/// initiator-small fence; `body` (the UMR control segment, the mkey context segment and any
/// translation) follows the control segment, whose immediate is the mkey `key`.
///
/// # Errors
///
/// `EINVAL` for a user QP or a body longer than the QP's WQEs, `ENOMEM` when the SQ is full.
pub(crate) fn post_umr(qp: &Qp<Mlx5Ib>, key: u32, body: &[u8], wr_id: u64) -> Result {
    let (k, buf) = kern_qp(qp)?;
    let mut sq = k.sq.lock();
    if sq.head.wrapping_sub(sq.tail) >= k.max_post {
        return Err(ENOMEM);
    }
    {
        let w = sq.scratch.as_mut_slice();
        w.fill(0);
        put(w, 16, body)?;
    }
    let c = CtrlSeg {
        len: 16 + body.len(),
        opcode: wqe_op::UMR,
        fm_ce_se: ctrl::CQ_UPDATE | ctrl::FENCE_INITIATOR_SMALL,
        imm: key,
        wr_id,
    };
    let last = emit(&mut sq, k, buf.mem(), qp.data().qpn, 0, &c)?;
    ring_sq(qp, k, buf, &mut sq, 1, last)
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
