// SPDX-License-Identifier: GPL-2.0

//! A QP as the data path sees it: what it keeps between passes ([`QpState`]: the queues'
//! buffer and counters, the requester's retry state and timer), the copy of the context a
//! step works from ([`Snap`]), with the few changes a step makes to the context (the PSNs,
//! the move to ERR), and what its queues hold. RC in packets keeps its transport state
//! ([`RcWire`], about 930 bytes) beside the `QpState`, not in it, so that a `Snap` (copied on
//! the engine's stack several times a message) stays small; a step reads it from the QP
//! ([`rc_of`]).
//!
//! The queues hold the send and receive WQE formats of libmlx5 44 (`providers/mlx5/qp.c`,
//! `mlx5dv.h`), read as bytes: the control segment's fields ([`Wqe`]), the data segments
//! (`byte_count`, `lkey`, `addr`) or inline data (`len | 0x80000000`, then the bytes, padded
//! to 16) of a scatter/gather list ([`next_seg`]), and a UD address vector ([`Av`]).
//! Everything read from a queue is untrusted: a short or malformed buffer decodes to zeros or
//! to `Err`, never a panic.

use super::rc_state::RcWire;
use crate::fwsim::ring::{Buf, Ring};
use crate::fwsim::srq::SrqWqe;
use crate::fwsim::xlat::Fragmented;
use crate::fwsim::{Fw, Qp};
use crate::prm::consts::{NON_ZERO_RQ, QPC_STATE_ERR, SRQ_RQ};
use crate::prm::ctx::{ads, qpc};
use crate::prm::layout::Member;
use crate::prm::wqe::{INLINE_SEG, INVALID_LKEY, SEND_WQE_BB};

/// log2 of the SQ WQE basic block (`MLX5_SEND_WQE_BB`, 64 bytes): the SQ ring's shift.
const WQEBB_SHIFT: u8 = SEND_WQE_BB.trailing_zeros() as u8;

/// What the requester is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Nothing.
    None,
    /// An ACK that did not come: retry (or fail) at this time.
    Ack(u64),
    /// An RNR NAK: retry at this time.
    Rnr(u64),
    /// An ACK with `ack_timeout` 0: never (the QP stalls until it is moved to ERR or RESET).
    Forever,
}

/// What the data path keeps of a QP.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QpState {
    /// The work queue buffer (the RQ first, the SQ right after it); its doorbell record has
    /// the RQ head at +0, the SQ counter at +4.
    pub(crate) buf: Buf,
    /// The QP has its own RQ (`rq_type` regular).
    pub(crate) has_rq: bool,
    /// The RMP it receives from (`rq_type` SRQ: `srqn_rmpn_xrqn`).
    pub(crate) srq: Option<u32>,
    /// The RQ WQEs (`log_rq_stride + 4` is their shift).
    pub(crate) rq: Ring,
    /// The QP has an SQ.
    pub(crate) has_sq: bool,
    /// The SQ WQEBBs, after the RQ (when the QP has one).
    pub(crate) sq: Ring,
    /// `user_index`.
    pub(crate) user_index: u32,
    /// SQ consumer counter in WQEBBs.
    pub(crate) sq_ci: u16,
    /// RQ consumer counter in WQEs.
    pub(crate) rq_ci: u16,
    /// The SQ counter value the retry counters below belong to.
    pub(crate) retry_wqe: Option<u16>,
    /// Transport retries left for that WQE.
    pub(crate) retry_left: u8,
    /// RNR retries left (7: infinite).
    pub(crate) rnr_left: u8,
    /// What the requester waits for.
    pub(crate) wait: Wait,
    /// COMM_EST has been raised.
    pub(crate) comm_est: bool,
}

impl QpState {
    /// Decodes a `qpc` plus the `pas[]` at byte `pas` of the inbox.
    pub(crate) fn parse(ctx: &[u8], inbox: &[u8], pas: usize) -> Result<QpState, Fragmented> {
        let g = |f: Member<qpc::Bits>| f.get(ctx).unwrap_or(0);
        let has_rq = g(qpc::rq_type) == NON_ZERO_RQ;
        let has_sq = g(qpc::no_sq) == 0;
        let rq = Ring::new(
            u8::try_from(g(qpc::log_rq_size)).unwrap_or(0),
            u8::try_from(g(qpc::log_rq_stride) + 4).unwrap_or(4),
            0,
        );
        let sq_start = if has_rq { rq.end() } else { 0 };
        let log_sq = u8::try_from(g(qpc::log_sq_size)).unwrap_or(0);
        let sq = Ring::new(log_sq, WQEBB_SHIFT, sq_start);
        let bytes = if has_sq { sq.end() } else { sq_start };
        let place = [qpc::log_page_size, qpc::page_offset, qpc::dbr_addr];
        let buf = Buf::from_ctx(ctx, place, inbox, pas, bytes)?;
        Ok(QpState {
            buf,
            has_rq,
            srq: (g(qpc::rq_type) == SRQ_RQ).then(|| g(qpc::srqn_rmpn_xrqn)),
            rq,
            has_sq,
            sq,
            user_index: g(qpc::user_index),
            sq_ci: 0,
            rq_ci: 0,
            retry_wqe: None,
            retry_left: 0,
            rnr_left: 0,
            wait: Wait::None,
            comm_est: false,
        })
    }

    /// Back to the state of a new QP (2RST; the QP's [`RcWire`] is reset beside it).
    pub(crate) fn reset(&mut self) {
        self.sq_ci = 0;
        self.rq_ci = 0;
        self.retry_wqe = None;
        self.wait = Wait::None;
        self.comm_est = false;
    }

    /// Bytes of the work queue buffer (the RQ, then the SQ), from the first.
    pub(crate) fn buf_bytes(&self) -> u64 {
        if self.has_sq {
            self.sq.end()
        } else {
            self.sq.start
        }
    }
}

/// What one step on a QP did.
pub(super) enum Step {
    /// Nothing to do.
    Idle,
    /// One WQE executed or flushed.
    Done,
    /// Waiting for a retry at this time.
    Blocked(u64),
}

/// A copy of what the engine needs of a QP.
#[derive(Clone, Copy, Debug)]
pub(super) struct Snap {
    pub(super) slot: usize,
    pub(super) qpn: u32,
    pub(super) state: u32,
    pub(super) st: u32,
    pub(super) pd: u32,
    pub(super) send_cq: Option<u32>,
    pub(super) recv_cq: Option<u32>,
    pub(super) q: QpState,
    /// The receive WQE index a responder CQE reports (`wqe_counter`): the RQ consumer
    /// counter, or the SRQ WQE `rq_wqe` took.
    pub(super) rwqe_idx: u16,
    /// The SRQ WQE `rq_wqe` took (consumed by `resp_ok`/`resp_fail`).
    pub(super) srq_wqe: Option<(SrqWqe, u16)>,
    /// 0-based port.
    pub(super) port: usize,
    pub(super) rlid: u16,
    pub(super) rgid: [u8; 16],
    pub(super) sgid_index: u8,
    pub(super) sl: u8,
    pub(super) remote_qpn: u32,
    pub(super) mtu: u32,
    pub(super) log_msg_max: u32,
    pub(super) retry_count: u8,
    pub(super) rnr_retry: u8,
    /// log2 of the READs and atomics the requester may have in flight (`log_sra_max`).
    pub(super) sra: u8,
    pub(super) ack_timeout: u8,
    pub(super) min_rnr_nak: u8,
    pub(super) q_key: u32,
    pub(super) rre: bool,
    pub(super) rwe: bool,
    pub(super) rae: bool,
    /// The Q counter set the QP counts into (`counter_set_id`; 0: none).
    pub(super) cnt_set: u32,
    /// The XRC domain of an XRC target QP (`qpc.xrcd`).
    pub(super) xrcd: u32,
}

/// The primary path member `f` inside a `qpc`.
const fn pri(f: Member<ads::Bits>) -> Member<qpc::Bits> {
    qpc::primary_address_path.inner(f)
}

/// The copy of the QP in `slot` a step works from; `None` for a free slot.
pub(super) fn snap(fw: &Fw, slot: usize) -> Option<Snap> {
    let (qpn, qp) = fw.qps.at_slot(slot)?;
    let c = &qp.qpc;
    let g = |f: Member<qpc::Bits>| f.get(c).unwrap_or(0);
    let g8 = |f| u8::try_from(g(f)).unwrap_or(0);
    let mut rgid = [0u8; 16];
    if let Ok(b) = pri(ads::rgid_rip).bytes(c) {
        rgid.copy_from_slice(b);
    }
    Some(Snap {
        slot,
        qpn,
        state: qp.state,
        st: g(qpc::st),
        pd: qp.pd,
        send_cq: qp.send_cq,
        recv_cq: qp.recv_cq,
        q: qp.q,
        rwqe_idx: qp.q.rq_ci,
        srq_wqe: None,
        port: usize::try_from(g(pri(ads::vhca_port_num)).saturating_sub(1)).unwrap_or(0),
        rlid: u16::try_from(g(pri(ads::rlid))).unwrap_or(0),
        rgid,
        sgid_index: g8(pri(ads::src_addr_index)),
        sl: g8(pri(ads::sl)),
        remote_qpn: g(qpc::remote_qpn),
        mtu: match g(qpc::mtu) {
            m @ 1..=5 => 128 << m,
            _ => 4096,
        },
        log_msg_max: g(qpc::log_msg_max),
        retry_count: g8(qpc::retry_count),
        rnr_retry: g8(qpc::rnr_retry),
        sra: g8(qpc::log_sra_max),
        ack_timeout: g8(pri(ads::ack_timeout)),
        min_rnr_nak: g8(qpc::min_rnr_nak),
        q_key: g(qpc::q_key),
        rre: g(qpc::rre) != 0,
        rwe: g(qpc::rwe) != 0,
        rae: g(qpc::rae) != 0,
        cnt_set: g(qpc::counter_set_id),
        xrcd: g(qpc::xrcd),
    })
}

/// The RC transport state of the QP in `slot` (`None` for a free slot).
pub(super) fn rc_of(fw: &Fw, slot: usize) -> Option<&RcWire> {
    fw.qps.at_slot(slot).map(|(_, q)| &q.rc)
}

/// The QP in `slot`.
pub(super) fn qp_mut(fw: &mut Fw, slot: usize) -> Option<&mut Qp> {
    fw.qps.at_slot_mut(slot).map(|(_, q)| q)
}

/// Moves a QP to ERR (its outstanding work is flushed by later steps).
pub(super) fn to_err(fw: &mut Fw, slot: usize) {
    if let Some(q) = qp_mut(fw, slot) {
        q.state = QPC_STATE_ERR;
        q.q.wait = Wait::None;
    }
}

/// Packets of a message of `len` bytes (at least 1).
pub(super) fn packets(len: u64, mtu: u32) -> u32 {
    u32::try_from(len.div_ceil(u64::from(mtu.max(1))).max(1)).unwrap_or(u32::MAX)
}

/// Advances a 24-bit PSN member of a QP's context.
pub(super) fn bump_psn(fw: &mut Fw, slot: usize, f: Member<qpc::Bits>, n: u32) {
    if let Some(q) = qp_mut(fw, slot) {
        let v = f.get(&q.qpc).unwrap_or(0).wrapping_add(n) & 0x00ff_ffff;
        let _ = f.set(&mut q.qpc, v);
    }
}

/// A parsed SQ WQE (the bytes stay in the caller's buffer).
#[derive(Clone, Copy, Debug)]
pub(super) struct Wqe {
    pub(super) opcode: u8,
    pub(super) idx: u16,
    /// Bytes (`ds * 16`).
    pub(super) len: usize,
    /// WQEBBs it takes.
    pub(super) nbb: u16,
    pub(super) flags: u8,
    pub(super) imm: [u8; 4],
}

/// The `N` bytes at byte `at` of `b` (zeros when they run past its end).
fn word<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut w = [0u8; N];
    if let Some(s) = b.get(at..at + N) {
        w.copy_from_slice(s);
    }
    w
}

/// The big-endian 16-bit word at byte `at` of `b` (0 past its end).
pub(super) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(word(b, at))
}

/// The big-endian 32-bit word at byte `at` of `b` (0 past its end).
pub(super) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(word(b, at))
}

/// The big-endian 64-bit word at byte `at` of `b` (0 past its end).
pub(super) fn be64(b: &[u8], at: usize) -> u64 {
    (u64::from(be32(b, at)) << 32) | u64::from(be32(b, at + 4))
}

/// One segment of a scatter/gather list.
#[derive(Clone, Copy, Debug)]
pub(super) enum Seg {
    /// A data segment.
    Ptr { lkey: u32, addr: u64, len: u32 },
    /// Inline data at `at..at + len` of the segment bytes.
    Inline { at: usize, len: usize },
}

/// The next segment of `segs` from `*pos`; `rq` lists end at [`INVALID_LKEY`]. `Err` for a
/// malformed list (inline data running past the WQE, a partial segment).
pub(super) fn next_seg(segs: &[u8], pos: &mut usize, rq: bool) -> Result<Option<Seg>, ()> {
    if *pos >= segs.len() {
        return Ok(None);
    }
    let bc = be32(segs, *pos);
    if !rq && bc & INLINE_SEG != 0 {
        let len = usize::try_from(bc & !INLINE_SEG).map_err(|_| ())?;
        let at = *pos + 4;
        let end = at.checked_add(len).ok_or(())?;
        if end > segs.len() {
            return Err(());
        }
        *pos = (*pos + 4 + len).next_multiple_of(16);
        return Ok(Some(Seg::Inline { at, len }));
    }
    if *pos + 16 > segs.len() {
        return if rq { Ok(None) } else { Err(()) };
    }
    let lkey = be32(segs, *pos + 4);
    if rq && lkey == INVALID_LKEY {
        return Ok(None);
    }
    let addr = be64(segs, *pos + 8);
    *pos += 16;
    Ok(Some(Seg::Ptr {
        lkey,
        addr,
        len: bc,
    }))
}

/// `MLX5_EXTENDED_UD_AV`: the high bit of `mlx5_av.dqp_dct`, a 48-byte AV.
const EXTENDED_AV: u32 = 0x8000_0000;

/// The length of the AV a DCI's WQE has at the start of its datagram segment `seg`
/// (`fwsim/dct.rs`): the full `struct mlx5_av` (48 bytes) with [`EXTENDED_AV`], else the
/// 16-byte `struct mlx5_base_av` (UCX's `dc_mlx5` without a GRH).
pub(super) fn av_len(seg: &[u8]) -> usize {
    if be32(seg, 8) & EXTENDED_AV != 0 {
        48
    } else {
        16
    }
}

/// A UD address vector (`struct mlx5_wqe_av`, as libmlx5's `mlx5_create_ah()` and
/// `_set_datagram_seg()` write it).
#[derive(Clone, Copy, Debug)]
pub(super) struct Av {
    pub(super) qkey: u32,
    pub(super) dqpn: u32,
    pub(super) sl: u8,
    pub(super) rlid: u16,
    pub(super) grh: bool,
    pub(super) sgid_index: u8,
    pub(super) flow_label: u32,
    pub(super) tclass: u8,
    pub(super) hop_limit: u8,
    pub(super) rgid: [u8; 16],
    /// The destination MAC of a RoCE address vector (`rmac`; what the sender's stack resolved).
    pub(super) rmac: [u8; 6],
}

impl Av {
    /// Decodes the address vector `b` (`eth`: sent from a RoCE port, where the SL is in
    /// other bits and the GRH is implied).
    pub(super) fn parse(b: &[u8], eth: bool) -> Av {
        let srsl = b.get(12).copied().unwrap_or(0);
        let gfl = be32(b, 28);
        Av {
            qkey: be32(b, 0),
            dqpn: be32(b, 8) & 0x00ff_ffff,
            sl: if eth { (srsl >> 1) & 7 } else { srsl & 0xf },
            rlid: be16(b, 14),
            // RoCE packets always carry a GRH (the bit is reserved there).
            grh: eth || gfl & (1 << 30) != 0,
            sgid_index: ((gfl >> 20) & 0xff) as u8,
            flow_label: gfl & 0xf_ffff,
            tclass: b.get(26).copied().unwrap_or(0),
            hop_limit: b.get(27).copied().unwrap_or(0),
            rgid: word(b, 32),
            rmac: word(b, 20),
        }
    }
}
