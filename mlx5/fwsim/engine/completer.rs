// SPDX-License-Identifier: GPL-2.0

//! The completer: what comes back for a WQE ([`ReqRes`]: an ACK, a NAK or a local error, an
//! RNR NAK, or nothing) and how the requester retires it: the send CQE, the PSN, the move to
//! ERR, or a retry after the RNR or ACK timer (`retry_count`, `rnr_retry`, `ack_timeout`).
//! A QP in ERR has its outstanding WQEs flushed here ([`flush_one`]). Also the CQE writer
//! both sides use. Mirrors upstream's `rxe_comp.c`.

use super::fabric::Node;
use super::qp_state::{
    be16, bump_psn, packets, qp_mut, rc_of, snap, to_err, QpState, Snap, Step, Wait, Wqe,
};
use crate::fwsim::cqe::Cqe;
use crate::fwsim::dma::DmaMem;
use crate::fwsim::Fw;
use crate::prm::consts::{QPC_ST_DCI, QPC_ST_RC, QPC_ST_UC, QPC_ST_XRC};
use crate::prm::ctx::qpc;
use crate::prm::wqe::{cqe_off, cqe_op, ctrl, syndrome as syn, wqe_op};

/// IB spec table 9.7.5.2.8 (minimum RNR NAK timer field encodings), in microseconds.
const RNR_TIMER_US: [u64; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
    5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760,
    327_680, 491_520,
];

/// The RNR NAK timer of a responder's `min_rnr_nak`, in nanoseconds.
pub(super) fn rnr_timer_ns(min_rnr_nak: u8) -> u64 {
    RNR_TIMER_US
        .get(usize::from(min_rnr_nak))
        .copied()
        .unwrap_or(655_360)
        * 1000
}

/// The local ACK timeout of `ack_timeout` (4.096 us * 2^t), in nanoseconds; `None` for 0
/// (infinite).
fn ack_timeout_ns(t: u8) -> Option<u64> {
    if t == 0 {
        return None;
    }
    Some(4096u64.checked_shl(u32::from(t)).unwrap_or(u64::MAX))
}

/// The requester's result for one WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ReqRes {
    /// Completed (delivered, or dropped on an unreliable service).
    Ok {
        /// The bytes the send CQE reports.
        byte_cnt: u32,
    },
    /// Completed in error.
    Err(u8),
    /// RNR NAK: the responder's RNR timer.
    Rnr(u64),
    /// No ACK will come (no such destination, or it cannot receive), or, for RC in
    /// packets (`rc.rs`), the message is on the wire and its ACK is awaited: the ACK timer
    /// runs.
    Lost,
    /// RC in packets: part of the message is not on the wire yet (the transmit queue was
    /// full); the next pass sends the rest.
    Busy,
}

/// Writes a CQE on `cqn` of `fw` and raises what it causes.
pub(super) fn push_cqe(fw: &mut Fw, mem: &dyn DmaMem, cqn: Option<u32>, c: &Cqe, solicited: bool) {
    let Some(cqn) = cqn else {
        return;
    };
    let Some(slot) = fw.cqs.slot_of(cqn) else {
        return;
    };
    let Some(cq) = fw.cqs.get_mut(cqn) else {
        return;
    };
    match cq.q.push(mem, c, solicited) {
        Some(true) => fw.events.cq_completion(slot),
        Some(false) => fw.events.cq_error(slot),
        None => {}
    }
}

/// Applies a requester result: consumer counter, PSN, CQE, QP state, retry timers.
pub(super) fn finish(
    nodes: &mut [Node<'_>],
    ni: usize,
    slot: usize,
    w: &Wqe,
    res: ReqRes,
    now: u64,
) -> Step {
    let Some(n) = nodes.get_mut(ni) else {
        return Step::Idle;
    };
    let Some(s) = snap(n.fw, slot) else {
        return Step::Idle;
    };
    let res = match res {
        ReqRes::Busy => return Step::Idle,
        ReqRes::Rnr(_) | ReqRes::Lost => match retry_later(n.fw, &s, res, now) {
            Ok(step) => return step,
            Err(e) => ReqRes::Err(e),
        },
        r => r,
    };
    retire(n.fw, n.mem, &s, w, res);
    Step::Done
}

/// An RNR NAK or an ACK that will not come for the WQE at the SQ consumer counter of `s`:
/// the WQE stays and the requester waits for the RNR timer or the ACK timeout (the retry
/// counters start anew for each WQE). `Err` with the syndrome the WQE completes with when the
/// RNR retries are spent.
pub(super) fn retry_later(fw: &mut Fw, s: &Snap, res: ReqRes, now: u64) -> Result<Step, u8> {
    let Some(q) = qp_mut(fw, s.slot) else {
        return Ok(Step::Idle);
    };
    if q.q.retry_wqe != Some(q.q.sq_ci) {
        q.q.retry_wqe = Some(q.q.sq_ci);
        q.q.retry_left = s.retry_count;
        q.q.rnr_left = s.rnr_retry;
    }
    match res {
        ReqRes::Rnr(_) if q.q.rnr_left == 0 => Err(syn::RNR_RETRY_EXC),
        ReqRes::Rnr(timer) => {
            // 7 means retry forever.
            if q.q.rnr_left != 7 {
                q.q.rnr_left -= 1;
            }
            let at = now.saturating_add(timer);
            q.q.wait = Wait::Rnr(at);
            Ok(Step::Blocked(at))
        }
        _ => match ack_timeout_ns(s.ack_timeout) {
            None => {
                q.q.wait = Wait::Forever;
                Ok(Step::Idle)
            }
            Some(t) => {
                let at = now.saturating_add(t);
                q.q.wait = Wait::Ack(at);
                Ok(Step::Blocked(at))
            }
        },
    }
}

/// A retry whose time has come, for the WQE the requester is about to send again: an ACK
/// timeout spends a transport retry. `Err` with the syndrome the WQE completes with when
/// none is left.
pub(super) fn start_retry(q: &mut QpState) -> Result<(), u8> {
    match q.wait {
        Wait::Ack(_) if q.retry_left == 0 => return Err(syn::RETRY_EXC),
        Wait::Ack(_) => {
            q.retry_left -= 1;
            q.wait = Wait::None;
        }
        Wait::Rnr(_) => q.wait = Wait::None,
        _ => {}
    }
    Ok(())
}

/// Retires WQE `w` of requester `s` with result `res` (not a retry): the SQ consumer counter
/// past it, then on success the send PSN and (if asked for) a CQE, on error an error CQE and
/// the QP to ERR.
pub(super) fn retire(fw: &mut Fw, mem: &dyn DmaMem, s: &Snap, w: &Wqe, res: ReqRes) {
    let slot = s.slot;
    if let Some(q) = qp_mut(fw, slot) {
        q.q.sq_ci = q.q.sq_ci.wrapping_add(w.nbb);
        q.q.retry_wqe = None;
        q.q.wait = Wait::None;
    }
    match res {
        ReqRes::Ok { byte_cnt } => {
            let pkts = match w.opcode {
                wqe_op::NOP | wqe_op::UMR => 0,
                wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA => 1,
                _ => packets(u64::from(byte_cnt), s.mtu),
            };
            // RC in packets moves the send PSN as it sends (`rc.rs`).
            let sent = matches!(s.st, QPC_ST_RC | QPC_ST_UC | QPC_ST_XRC | QPC_ST_DCI);
            if sent && pkts > 0 && !rc_of(fw, slot).is_some_and(|r| r.wire) {
                bump_psn(fw, slot, qpc::next_send_psn, pkts);
            }
            if w.flags & ctrl::CQ_UPDATE != 0 {
                let mut c = Cqe::new(cqe_op::REQ, w.opcode, s.qpn, w.idx, s.q.user_index);
                c.put32(cqe_off::BYTE_CNT, byte_cnt);
                push_cqe(fw, mem, s.send_cq, &c, false);
            }
        }
        ReqRes::Err(e) => {
            let c = Cqe::error(true, e, w.opcode, s.qpn, w.idx, s.q.user_index);
            push_cqe(fw, mem, s.send_cq, &c, false);
            to_err(fw, slot);
        }
        ReqRes::Rnr(_) | ReqRes::Lost | ReqRes::Busy => {}
    }
}

/// Flushes one outstanding WQE of a QP in ERR (SQ first, then RQ); false when none is left.
pub(super) fn flush_one(nodes: &mut [Node<'_>], ni: usize, s: &Snap) -> bool {
    let Some(n) = nodes.get_mut(ni) else {
        return false;
    };
    let q = &s.q;
    if q.has_sq {
        if let Some(pi) = q.buf.db(n.mem, 4) {
            let pi = (pi & 0xffff) as u16;
            if pi != q.sq_ci {
                let mut c = [0u8; 16];
                let (opcode, idx, nbb) = if q.sq.read(n.mem, &q.buf, u32::from(q.sq_ci), &mut c) {
                    let ds = u16::from(c[7] & 0x3f);
                    let nbb = (ds * 16).div_ceil(64).clamp(1, pi.wrapping_sub(q.sq_ci));
                    (c[3], be16(&c, 1), nbb)
                } else {
                    (0, q.sq_ci, 1)
                };
                let e = Cqe::error(true, syn::FLUSH, opcode, s.qpn, idx, q.user_index);
                push_cqe(n.fw, n.mem, s.send_cq, &e, false);
                if let Some(qp) = qp_mut(n.fw, s.slot) {
                    qp.q.sq_ci = qp.q.sq_ci.wrapping_add(nbb);
                }
                return true;
            }
        }
    }
    if q.has_rq {
        if let Some(head) = q.buf.db(n.mem, 0) {
            if (head & 0xffff) as u16 != q.rq_ci {
                let e = Cqe::error(false, syn::FLUSH, 0, s.qpn, q.rq_ci, q.user_index);
                push_cqe(n.fw, n.mem, s.recv_cq, &e, false);
                if let Some(qp) = qp_mut(n.fw, s.slot) {
                    qp.q.rq_ci = qp.q.rq_ci.wrapping_add(1);
                }
                return true;
            }
        }
    }
    false
}
