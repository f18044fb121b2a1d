// SPDX-License-Identifier: GPL-2.0

//! RC in RoCE v2 packets (IBA Vol 1 9.7, Annex A17), for a QP whose destination GID no
//! function of the fabric holds. Each RC QP keeps its own transport state ([`RcWire`], in its
//! `QpState`): the requester's message in flight and the responder's progress, MSN,
//! pending acknowledgement and READ/atomic resources. Mirrors upstream's `rxe_req.c`
//! (segmenting), `rxe_comp.c` (ACKs, NAKs, retries) and `rxe_resp.c` (PSN checks,
//! execution, duplicates), one message in flight per QP:
//!
//! * **Requester** ([`send`]): the WQE at the SQ consumer counter is cut at the path MTU into
//!   SEND/WRITE FIRST, MIDDLE, LAST (with immediate or invalidate) or ONLY packets with PSNs
//!   from `next_send_psn` (24 bits, wrapping), the RETH on the first WRITE packet, AckReq on
//!   the last; a READ is one request (its responses take the PSNs of the response packets),
//!   an atomic one AtomicETH packet. The payload is gathered straight into the frame. The
//!   WQE then waits for its acknowledgement under the ACK timer (`completer.rs`): on expiry
//!   it is sent again from the first packet not acknowledged, `retry_count` times, then
//!   completes with `IBV_WC_RETRY_EXC_ERR`. A packet that finds the transmit queue full is
//!   sent on the next pass.
//! * **Completer** (responses, [`receive`]): an ACK covering the message's last PSN retires
//!   it (a coalesced ACK for an earlier one records progress); READ responses are written in
//!   PSN order into the gather list and the last retires the READ; an atomic ACK writes the
//!   original value. A PSN sequence error NAK sends again from its PSN; an RNR NAK waits for
//!   its timer (`rnr_retry`, 7 forever); any other NAK completes the WQE in error (invalid
//!   request, remote access, remote operation) and the QP goes to ERR. Credits are ignored,
//!   as a ConnectX does without end-to-end flow control.
//! * **Responder** (requests, [`receive`]): the PSN must be `next_rcv_psn`; a later one is
//!   answered by one PSN sequence error NAK; an earlier one is a duplicate: a SEND or WRITE
//!   is acknowledged again (coalesced, the last PSN taken), a READ is executed again from
//!   memory with the duplicate's RETH, an atomic is answered from its saved result (never
//!   executed twice). SEND packets are written into the receive WQE at their offset (it is
//!   consumed with the CQE on the last); no WQE is an RNR NAK with `min_rnr_nak`. A WRITE's
//!   RETH is checked against the rkey on its first packet. Acknowledgements are coalesced:
//!   one ACK (syndrome "no credits", the MSN) for the latest packet with AckReq, sent after
//!   the READ responses and atomic ACKs that precede it.
//!
//! The function's debugfs counts request packets sent again and requests past and before the
//! expected PSN (`wire_rc_*`, `wire.rs` `RcStats`).
//!
//! Not done: more than one message in flight per QP (a stop-and-wait requester, which the
//! peer cannot tell from a slow one), the peer's address checked against the QP's path, XRC
//! in packets, and the Q counters of retransmissions and sequence errors.

use super::completer::{retire, retry_later, rnr_timer_ns, ReqRes};
use super::fabric::Node;
use super::mem::{remote_key, skip_bytes, Cur};
use super::message::Message;
use super::qp_state::{packets, qp_mut, snap, Snap, Wait};
use super::rc_state::{Req, Res, ResKind, Resp, RES};
use super::responder::{resp_fail, resp_ok, write_rwqe, Lead, RwqeErr};
use super::sq::current;
use super::umr::remote_invalidate;
use super::wire::{conn_headers, queue_frame, Queued, Src};
use crate::fwsim::cqe::Cqe;
use crate::fwsim::events::QpEvent;
use crate::fwsim::roce::{opcode as op, Aeth, AtomicEth, Headers, Packet, Reth};
use crate::fwsim::xlat::Access;
use crate::fwsim::{Fw, QCnt};
use crate::prm::consts::{QPC_STATE_RTR, QPC_STATE_RTS, QPC_ST_RC};
use crate::prm::ctx::qpc;
use crate::prm::wqe::{cqe_off, cqe_op, syndrome as syn, wqe_op};

/// PSNs are 24 bits.
const PSN_MASK: u32 = 0x00ff_ffff;
/// Half the PSN space: a PSN this far or more behind the expected one is ahead of it.
const PSN_HALF: u32 = 0x0080_0000;

/// AETH syndromes (IBA 9.3.5, Table 44): an ACK with the invalid credit count (no end-to-end
/// flow control, as rxe sends), an RNR NAK (the timer in the low 5 bits), a NAK and its codes.
const AETH_ACK_NO_CREDITS: u8 = 0x1f;
const AETH_RNR: u8 = 0x20;
const AETH_NAK: u8 = 0x60;
const NAK_SEQ: u8 = 0;
const NAK_INVAL: u8 = 1;
const NAK_ACCESS: u8 = 2;
const NAK_OP: u8 = 3;

/// `b` - `a` in PSN space.
fn psn_off(b: u32, a: u32) -> u32 {
    b.wrapping_sub(a) & PSN_MASK
}

/// The READ of `reth` at PSN `psn`, at path MTU `mtu`: a responder resource.
fn read_res(psn: u32, reth: &Reth, mtu: u32) -> Res {
    Res {
        kind: ResKind::Read,
        psn,
        va: reth.va,
        rkey: reth.rkey,
        len: reth.dma_len,
        pkts: packets(u64::from(reth.dma_len), mtu.max(256)),
        sent: 0,
    }
}

/// The RC message `m` of requester `s` (the WQE at its SQ consumer counter) on node `ni`, to
/// a GID no function of the fabric holds: its packets (those not acknowledged yet, on a
/// retry) queued for the wire. [`ReqRes::Lost`] once all are (the ACK timer runs),
/// [`ReqRes::Busy`] when the queue filled first.
pub(super) fn send(nodes: &mut [Node<'_>], ni: usize, s: &Snap, m: &Message<'_>) -> ReqRes {
    let Some(n) = nodes.get_mut(ni) else {
        return ReqRes::Lost;
    };
    let mtu = s.mtu.max(256);
    let one = matches!(
        m.opcode,
        wqe_op::RDMA_READ | wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA
    );
    let npkts = if m.opcode == wqe_op::RDMA_READ || !one {
        packets(m.len, mtu)
    } else {
        1
    };
    let reqs = if one { 1 } else { npkts };
    let Some(q) = qp_mut(n.fw, s.slot) else {
        return ReqRes::Lost;
    };
    let first = qpc::next_send_psn.get(&q.qpc).unwrap_or(0) & PSN_MASK;
    let r = &mut q.q.rc.req;
    if !r.busy || r.wqe != s.q.sq_ci {
        *r = Req {
            busy: true,
            wqe: s.q.sq_ci,
            first,
            npkts,
            sent: 0,
            acked: 0,
            hi: 0,
        };
    } else if r.sent >= reqs {
        // The ACK timer ran out: again from the first packet not acknowledged.
        r.sent = if one { 0 } else { r.acked };
    }
    let st = *r;
    for k in st.sent..reqs {
        let Some((h, src, len)) = req_packet(n.fw, s, m, &st, k, mtu) else {
            return ReqRes::Lost;
        };
        match queue_frame(n, &h, src, len) {
            Ok(()) => {
                n.fw.count_traffic(s.port, |t| t.xmit(1, len as u64));
                if k < st.hi {
                    n.fw.wire_tx.stats.retransmits += 1;
                }
            }
            Err(Queued::Full) => {
                n.fw.wire_tx.backlog = true;
                set_req(n.fw, s.slot, |r| r.sent = k);
                return ReqRes::Busy;
            }
            Err(Queued::Fault) => return ReqRes::Err(syn::LOCAL_PROT),
            Err(Queued::Bad) => return ReqRes::Lost,
        }
        set_req(n.fw, s.slot, |r| r.hi = r.hi.max(k + 1));
    }
    set_req(n.fw, s.slot, |r| r.sent = reqs);
    ReqRes::Lost
}

/// Changes the requester state of the QP in `slot`; progress (more packets acknowledged)
/// gives the message its transport retries back, as rxe's completer does.
fn set_req(fw: &mut Fw, slot: usize, f: impl FnOnce(&mut Req)) {
    if let Some(q) = qp_mut(fw, slot) {
        let before = q.q.rc.req.acked;
        f(&mut q.q.rc.req);
        if q.q.rc.req.acked > before && q.q.retry_wqe == Some(q.q.sq_ci) {
            q.q.retry_left = qpc::retry_count.get(&q.qpc).map_or(0, |v| (v & 7) as u8);
        }
    }
}

fn set_resp(fw: &mut Fw, slot: usize, f: impl FnOnce(&mut Resp)) {
    if let Some(q) = qp_mut(fw, slot) {
        f(&mut q.q.rc.resp);
    }
}

/// Request packet `k` of message `m` (in flight as `st`) of requester `s`: its headers, where
/// its payload comes from and its length.
fn req_packet<'a>(
    fw: &Fw,
    s: &Snap,
    m: &Message<'a>,
    st: &Req,
    k: u32,
    mtu: u32,
) -> Option<(Headers, Src<'a>, usize)> {
    let mut h = conn_headers(fw, s, 0)?;
    let (raddr, rkey) = m.remote;
    let last = k + 1 == st.npkts;
    let off = u64::from(k) * u64::from(mtu);
    let len = usize::try_from(m.len.saturating_sub(off).min(u64::from(mtu))).ok()?;
    let src = Src::Sgl {
        pd: s.pd,
        segs: m.segs,
        skip: off,
    };
    h.bth.psn = st.first.wrapping_add(k) & PSN_MASK;
    h.bth.ack_req = last;
    let seg = |first, middle, last_op, only| match (k == 0, last) {
        (true, true) => only,
        (true, false) => first,
        (false, false) => middle,
        (false, true) => last_op,
    };
    let (opc, src, len) = match m.opcode {
        wqe_op::SEND | wqe_op::SEND_IMM | wqe_op::SEND_INVAL => {
            let (l, o) = match m.opcode {
                wqe_op::SEND_IMM => (op::SEND_LAST_IMM, op::SEND_ONLY_IMM),
                wqe_op::SEND_INVAL => (op::SEND_LAST_INV, op::SEND_ONLY_INV),
                _ => (op::SEND_LAST, op::SEND_ONLY),
            };
            if last {
                h.bth.solicited = m.solicited;
                match m.opcode {
                    wqe_op::SEND_IMM => h.imm = Some(m.imm),
                    wqe_op::SEND_INVAL => h.ieth = Some(u32::from_be_bytes(m.imm)),
                    _ => {}
                }
            }
            (seg(op::SEND_FIRST, op::SEND_MIDDLE, l, o), src, len)
        }
        wqe_op::RDMA_WRITE | wqe_op::RDMA_WRITE_IMM => {
            let imm = m.opcode == wqe_op::RDMA_WRITE_IMM;
            let (l, o) = if imm {
                (op::WRITE_LAST_IMM, op::WRITE_ONLY_IMM)
            } else {
                (op::WRITE_LAST, op::WRITE_ONLY)
            };
            if k == 0 {
                h.reth = Some(Reth {
                    va: raddr,
                    rkey,
                    dma_len: u32::try_from(m.len).ok()?,
                });
            }
            if last && imm {
                h.bth.solicited = m.solicited;
                h.imm = Some(m.imm);
            }
            (seg(op::WRITE_FIRST, op::WRITE_MIDDLE, l, o), src, len)
        }
        wqe_op::RDMA_READ => {
            // Again from the first response not taken.
            let done = u64::from(st.acked) * u64::from(mtu);
            h.bth.psn = st.first.wrapping_add(st.acked) & PSN_MASK;
            h.bth.ack_req = true;
            h.reth = Some(Reth {
                va: raddr.wrapping_add(done),
                rkey,
                dma_len: u32::try_from(m.len.saturating_sub(done)).ok()?,
            });
            (op::READ_REQUEST, Src::Nothing, 0)
        }
        wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA => {
            h.bth.ack_req = true;
            h.atomic_eth = Some(AtomicEth {
                va: raddr,
                rkey,
                swap_add: m.swap_add,
                compare: m.compare,
            });
            let o = if m.opcode == wqe_op::ATOMIC_CS {
                op::COMPARE_SWAP
            } else {
                op::FETCH_ADD
            };
            (o, Src::Nothing, 0)
        }
        _ => return None,
    };
    h.bth.opcode = op::RC | opc;
    Some((h, src, len))
}

/// An RC packet `p` that came in on (0-based) port `port` of node `ni` at time `now`: a
/// response for the requester or a request for the responder of the RC QP its BTH names (in
/// RTR or RTS; responses only in RTS). Whether a QP took it. What it answers is queued.
pub(super) fn receive(
    nodes: &mut [Node<'_>],
    ni: usize,
    port: usize,
    p: &Packet<'_>,
    now: u64,
) -> bool {
    let h = &p.headers;
    let d = nodes.get(ni).and_then(|n| {
        let d = snap(n.fw, n.fw.qps.slot_of(h.bth.dest_qp)?)?;
        (d.st == QPC_ST_RC && d.port == port && matches!(d.state, QPC_STATE_RTR | QPC_STATE_RTS))
            .then_some(d)
    });
    let Some(d) = d else {
        return false;
    };
    if let Some(n) = nodes.get_mut(ni) {
        n.fw.count_traffic(port, |t| t.rcv(1, p.payload.len() as u64));
    }
    let o = h.bth.opcode & 0x1f;
    let took = if (op::READ_RESPONSE_FIRST..=op::ATOMIC_ACKNOWLEDGE).contains(&o) {
        d.state == QPC_STATE_RTS && response(nodes, ni, &d, p, now)
    } else {
        request(nodes, ni, d, p)
    };
    flush(nodes, ni, d.slot);
    took
}

/// Response `p` at requester `s` on node `ni`.
fn response(nodes: &mut [Node<'_>], ni: usize, s: &Snap, p: &Packet<'_>, now: u64) -> bool {
    let h = &p.headers;
    let r = s.q.rc.req;
    let k = psn_off(h.bth.psn, r.first);
    // Nothing in flight, or a PSN outside the message: late or duplicated.
    if !r.busy || r.wqe != s.q.sq_ci || k >= r.npkts {
        return true;
    }
    let Some(n) = nodes.get_mut(ni) else {
        return false;
    };
    let mtu = s.mtu.max(256);
    let o = h.bth.opcode & 0x1f;
    let atomic = |op| matches!(op, wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA);
    // The WQE's opcode, and what it completes with if it does now.
    let got = current(n, s, |w, m| {
        let res = match o {
            op::ACKNOWLEDGE => None,
            op::ATOMIC_ACKNOWLEDGE => h.atomic_ack_eth.filter(|_| atomic(w.opcode)).map(|orig| {
                let mut dst = Cur::sgl(n.fw, m.segs, false, s.pd);
                match dst.write(n.mem, &orig.to_le_bytes()) {
                    Ok(()) => ReqRes::Ok { byte_cnt: 8 },
                    Err(()) => ReqRes::Err(syn::LOCAL_PROT),
                }
            }),
            // A READ response, taken in PSN order (a gap is left to the ACK timer).
            _ if w.opcode != wqe_op::RDMA_READ || k != r.acked => None,
            _ => {
                let off = u64::from(k) * u64::from(mtu);
                let want = m.len.saturating_sub(off).min(u64::from(mtu));
                let mut dst = Cur::sgl(n.fw, m.segs, false, s.pd);
                let skip = u32::try_from(off).unwrap_or(u32::MAX);
                if p.payload.len() as u64 != want {
                    None
                } else if skip_bytes(&mut dst, skip).is_err()
                    || dst.write(n.mem, p.payload).is_err()
                {
                    Some(ReqRes::Err(syn::LOCAL_PROT))
                } else if k + 1 == r.npkts {
                    Some(ReqRes::Ok {
                        byte_cnt: m.byte_cnt(),
                    })
                } else {
                    // Taken: the next one is expected.
                    Some(ReqRes::Busy)
                }
            }
        };
        (w.opcode, res)
    });
    // The WQE cannot be read back: left to the ACK timer.
    let Some((wop, res)) = got else {
        return true;
    };
    let res = match res {
        Some(ReqRes::Busy) => {
            set_req(n.fw, s.slot, |r| r.acked = k + 1);
            None
        }
        None if o == op::ACKNOWLEDGE => {
            let one = wop == wqe_op::RDMA_READ || atomic(wop);
            h.aeth.and_then(|a| ack(n.fw, s, &r, a, k, one, now))
        }
        r => r,
    };
    if let Some(res) = res {
        complete(n, s.slot, res);
    }
    true
}

/// AETH `a` of an ACKNOWLEDGE for PSN offset `k` of the message in flight `r` of `s` (`one`:
/// a READ or atomic, one request packet): what the WQE completes with, if it does now.
fn ack(fw: &mut Fw, s: &Snap, r: &Req, a: Aeth, k: u32, one: bool, now: u64) -> Option<ReqRes> {
    let code = a.syndrome & 0x1f;
    match a.syndrome & 0x60 {
        // A READ or atomic completes with its responses, not with an ACK.
        0x00 if one => None,
        0x00 => {
            if k + 1 >= r.npkts {
                return Some(ReqRes::Ok { byte_cnt: 0 });
            }
            set_req(fw, s.slot, |q| q.acked = q.acked.max(k + 1));
            None
        }
        AETH_RNR => {
            set_req(fw, s.slot, |q| q.sent = if one { 0 } else { q.sent.min(k) });
            match retry_later(fw, s, ReqRes::Rnr(rnr_timer_ns(code)), now) {
                Ok(_) => None,
                Err(e) => Some(ReqRes::Err(e)),
            }
        }
        AETH_NAK => match code {
            NAK_SEQ => {
                // Again from the PSN the responder expects, at once.
                set_req(fw, s.slot, |q| {
                    if one {
                        q.sent = 0;
                    } else {
                        q.acked = q.acked.max(k);
                        q.sent = q.sent.min(k);
                    }
                });
                if let Some(q) = qp_mut(fw, s.slot) {
                    q.q.wait = Wait::None;
                }
                None
            }
            NAK_INVAL => Some(ReqRes::Err(syn::REMOTE_INVAL_REQ)),
            NAK_ACCESS => Some(ReqRes::Err(syn::REMOTE_ACCESS)),
            _ => Some(ReqRes::Err(syn::REMOTE_OP)),
        },
        _ => None,
    }
}

/// Retires the WQE in flight of the QP in `slot` of node `n` with `res`.
fn complete(n: &mut Node<'_>, slot: usize, res: ReqRes) {
    let Some(s) = snap(n.fw, slot) else {
        return;
    };
    let Some((w, byte_cnt)) = current(n, &s, |w, m| (*w, m.byte_cnt())) else {
        return;
    };
    let res = match res {
        ReqRes::Ok { .. } => ReqRes::Ok { byte_cnt },
        r => r,
    };
    if res == ReqRes::Err(syn::REMOTE_ACCESS) {
        n.fw.q_count(s.cnt_set, QCnt::ReqRemoteAccess);
    }
    set_req(n.fw, slot, |r| r.busy = false);
    retire(n.fw, n.mem, &s, &w, res);
}

/// What a request did at the responder.
enum Rx {
    /// Taken: the expected PSN moves on by `pkts`; `ack`: acknowledge it (a SEND or WRITE
    /// packet with AckReq; READ and atomic requests are answered by their responses);
    /// `done`: a message completed (the MSN counts it).
    Next { pkts: u32, ack: bool, done: bool },
    /// No receive WQE: an RNR NAK.
    Rnr,
    /// Refused with this NAK code (the QP is in ERR).
    Nak(u8),
    /// Nothing to answer.
    Drop,
}

/// Request `p` at responder `d` on node `di`.
fn request(nodes: &mut [Node<'_>], di: usize, d: Snap, p: &Packet<'_>) -> bool {
    let h = &p.headers;
    let psn = h.bth.psn;
    let Some(epsn) = nodes.get(di).and_then(|n| {
        let (_, q) = n.fw.qps.at_slot(d.slot)?;
        Some(qpc::next_rcv_psn.get(&q.qpc).unwrap_or(0) & PSN_MASK)
    }) else {
        return false;
    };
    let k = psn_off(psn, epsn);
    if k >= PSN_HALF {
        if let Some(n) = nodes.get_mut(di) {
            n.fw.wire_tx.stats.duplicates += 1;
        }
        duplicate(nodes, di, &d, p, epsn);
        return true;
    }
    if k != 0 {
        // Ahead of the expected PSN: one NAK until the expected one comes.
        if let Some(n) = nodes.get_mut(di) {
            n.fw.wire_tx.stats.out_of_sequence += 1;
            set_resp(n.fw, d.slot, |r| {
                if !r.nak_sent {
                    r.nak_sent = true;
                    r.ack = Some((epsn, AETH_NAK | NAK_SEQ));
                }
            });
        }
        return true;
    }
    let o = h.bth.opcode & 0x1f;
    let rx = match o {
        op::SEND_FIRST..=op::SEND_ONLY_IMM | op::SEND_LAST_INV | op::SEND_ONLY_INV => {
            rx_send(nodes, di, d, p)
        }
        op::WRITE_FIRST..=op::WRITE_ONLY_IMM => rx_write(nodes, di, d, p),
        op::READ_REQUEST => rx_read(nodes, di, &d, p),
        op::COMPARE_SWAP | op::FETCH_ADD => rx_atomic(nodes, di, &d, p),
        _ => {
            resp_fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
            Rx::Nak(NAK_INVAL)
        }
    };
    let Some(n) = nodes.get_mut(di) else {
        return false;
    };
    match rx {
        Rx::Next { pkts, ack, done } => {
            let last = psn.wrapping_add(pkts.saturating_sub(1)) & PSN_MASK;
            if let Some(q) = qp_mut(n.fw, d.slot) {
                let _ = qpc::next_rcv_psn.set(&mut q.qpc, (last + 1) & PSN_MASK);
                let r = &mut q.q.rc.resp;
                r.nak_sent = false;
                if done {
                    r.msn = (r.msn + 1) & PSN_MASK;
                }
                if ack {
                    r.ack = Some((last, AETH_ACK_NO_CREDITS));
                }
            }
        }
        Rx::Rnr => set_resp(n.fw, d.slot, |r| {
            r.ack = Some((psn, AETH_RNR | (d.min_rnr_nak & 0x1f)));
        }),
        Rx::Nak(c) => set_resp(n.fw, d.slot, |r| {
            r.ack = Some((psn, AETH_NAK | c));
            r.send = None;
            r.write = None;
        }),
        Rx::Drop => {}
    }
    true
}

/// A request before the expected PSN `epsn` at responder `d`: a READ executed again from
/// memory (the duplicate's RETH), an atomic answered from its saved result, a SEND or WRITE
/// acknowledged up to the last PSN taken.
fn duplicate(nodes: &mut [Node<'_>], di: usize, d: &Snap, p: &Packet<'_>, epsn: u32) {
    let h = &p.headers;
    let Some(n) = nodes.get_mut(di) else {
        return;
    };
    let psn = h.bth.psn;
    match h.bth.opcode & 0x1f {
        op::READ_REQUEST => {
            let Some(reth) = h.reth else {
                return;
            };
            if read_ok(n.fw, d, &reth) {
                set_resp(n.fw, d.slot, |r| r.push(read_res(psn, &reth, d.mtu)));
            }
        }
        op::COMPARE_SWAP | op::FETCH_ADD => set_resp(n.fw, d.slot, |r| {
            if let Some(e) = r
                .res
                .iter_mut()
                .find(|e| e.kind == ResKind::Atomic && e.psn == psn)
            {
                e.sent = 0;
            }
        }),
        _ => {
            let last = epsn.wrapping_sub(1) & PSN_MASK;
            set_resp(n.fw, d.slot, |r| {
                if r.ack.is_none() {
                    r.ack = Some((last, AETH_ACK_NO_CREDITS));
                }
            });
        }
    }
}

/// Whether responder `d` of `fw` may serve the READ of `reth`.
fn read_ok(fw: &Fw, d: &Snap, reth: &Reth) -> bool {
    if !d.rre {
        return false;
    }
    reth.dma_len == 0
        || remote_key(fw, reth.rkey, d).is_some_and(|i| {
            i.access.allows(Access::REMOTE_READ) && i.covers(reth.va, u64::from(reth.dma_len))
        })
}

/// A SEND packet at responder `d`: written into the receive WQE at its offset; the last one
/// completes the WQE.
fn rx_send(nodes: &mut [Node<'_>], di: usize, mut d: Snap, p: &Packet<'_>) -> Rx {
    let h = &p.headers;
    let o = h.bth.opcode & 0x1f;
    let first = matches!(
        o,
        op::SEND_FIRST | op::SEND_ONLY | op::SEND_ONLY_IMM | op::SEND_ONLY_INV
    );
    let last = !matches!(o, op::SEND_FIRST | op::SEND_MIDDLE);
    let off = match (first, d.q.rc.resp.send) {
        (true, None) => 0,
        (false, Some(off)) => off,
        _ => {
            resp_fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
            return Rx::Nak(NAK_INVAL);
        }
    };
    if !last && p.payload.len() != d.mtu as usize {
        resp_fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
        return Rx::Nak(NAK_INVAL);
    }
    let need = u64::from(off) + p.payload.len() as u64;
    match write_rwqe(nodes, di, &mut d, Lead::Skip(off), p.payload, need) {
        Ok(()) => {}
        Err(RwqeErr::NoWqe) => return Rx::Rnr,
        Err(RwqeErr::Catas) => return Rx::Drop,
        Err(RwqeErr::Failed(e)) if e == syn::LOCAL_LENGTH => return Rx::Nak(NAK_INVAL),
        Err(RwqeErr::Failed(_)) => return Rx::Nak(NAK_OP),
    }
    let total = u32::try_from(need).unwrap_or(u32::MAX);
    if !last {
        resp_ok(nodes, di, &d, None, 0);
        if let Some(n) = nodes.get_mut(di) {
            set_resp(n.fw, d.slot, |r| r.send = Some(total));
        }
        return Rx::Next {
            pkts: 1,
            ack: h.bth.ack_req,
            done: false,
        };
    }
    if let Some(key) = h.ieth {
        let ok = nodes
            .get_mut(di)
            .is_some_and(|n| remote_invalidate(n.fw, key, &d));
        if !ok {
            resp_fail(nodes, di, &d, Some(syn::REMOTE_INVAL_REQ), None);
            return Rx::Nak(NAK_INVAL);
        }
    }
    let (opc, imm) = match (h.imm, h.ieth) {
        (Some(i), _) => (cqe_op::RESP_SEND_IMM, Some(i)),
        (None, Some(k)) => (cqe_op::RESP_SEND_INV, Some(k.to_be_bytes())),
        _ => (cqe_op::RESP_SEND, None),
    };
    let c = recv_cqe(&d, opc, total, imm);
    resp_ok(nodes, di, &d, Some((c, h.bth.solicited)), 0);
    if let Some(n) = nodes.get_mut(di) {
        set_resp(n.fw, d.slot, |r| r.send = None);
    }
    Rx::Next {
        pkts: 1,
        ack: h.bth.ack_req,
        done: true,
    }
}

/// The receive CQE of a message at RC responder `d` (from its remote QP).
fn recv_cqe(d: &Snap, opc: u8, byte_cnt: u32, imm: Option<[u8; 4]>) -> Cqe {
    let mut c = Cqe::new(opc, 0, d.qpn, d.rwqe_idx, d.q.user_index);
    c.put32(cqe_off::BYTE_CNT, byte_cnt);
    if let Some(i) = imm {
        c.put(cqe_off::IMM, &i);
    }
    c.put32(
        cqe_off::FLAGS_RQPN,
        (u32::from(d.sl & 0xf) << 24) | (d.remote_qpn & PSN_MASK),
    );
    c
}

/// A WRITE packet at responder `d`: its RETH checked on the first, the payload written at
/// its offset; the last of a WRITE with immediate completes a receive WQE.
fn rx_write(nodes: &mut [Node<'_>], di: usize, mut d: Snap, p: &Packet<'_>) -> Rx {
    let h = &p.headers;
    let o = h.bth.opcode & 0x1f;
    let first = matches!(o, op::WRITE_FIRST | op::WRITE_ONLY | op::WRITE_ONLY_IMM);
    let last = !matches!(o, op::WRITE_FIRST | op::WRITE_MIDDLE);
    let imm = matches!(o, op::WRITE_LAST_IMM | op::WRITE_ONLY_IMM);
    let access = |nodes: &mut [Node<'_>], d: &Snap| {
        resp_fail(nodes, di, d, None, Some(QpEvent::WqAccess));
        Rx::Nak(NAK_ACCESS)
    };
    let (va, rkey, len, off) = match (first, h.reth, d.q.rc.resp.write) {
        (true, Some(r), None) => (r.va, r.rkey, r.dma_len, 0),
        (false, _, Some(w)) => w,
        _ => {
            resp_fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
            return Rx::Nak(NAK_INVAL);
        }
    };
    let plen = u32::try_from(p.payload.len()).unwrap_or(u32::MAX);
    let end = off.saturating_add(plen);
    if end > len || (!last && p.payload.len() != d.mtu as usize) || (last && end != len) {
        resp_fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
        return Rx::Nak(NAK_INVAL);
    }
    if !d.rwe {
        return access(nodes, &d);
    }
    let info = match nodes.get(di) {
        // A zero-length WRITE is not checked against the R_Key (IB spec 9.7.4.1.5).
        Some(_) if len == 0 => None,
        Some(n) => match remote_key(n.fw, rkey, &d) {
            Some(i) if i.access.allows(Access::REMOTE_WRITE) && i.covers(va, u64::from(len)) => {
                Some(i)
            }
            _ => return access(nodes, &d),
        },
        None => return Rx::Drop,
    };
    if imm && last {
        // The receive WQE first: without one, an RNR NAK before anything is written.
        match write_rwqe(nodes, di, &mut d, Lead::Nothing, &[], 0) {
            Ok(()) => {}
            Err(RwqeErr::NoWqe) => return Rx::Rnr,
            Err(RwqeErr::Catas) => return Rx::Drop,
            Err(RwqeErr::Failed(_)) => return Rx::Nak(NAK_OP),
        }
    }
    if let (Some(i), Some(n)) = (info, nodes.get(di)) {
        let mut dst = Cur::region(i, va.wrapping_add(u64::from(off)));
        if dst.write(n.mem, p.payload).is_err() {
            return access(nodes, &d);
        }
    }
    if !last {
        resp_ok(nodes, di, &d, None, 0);
        if let Some(n) = nodes.get_mut(di) {
            set_resp(n.fw, d.slot, |r| r.write = Some((va, rkey, len, end)));
        }
        return Rx::Next {
            pkts: 1,
            ack: h.bth.ack_req,
            done: false,
        };
    }
    let cqe = imm.then(|| {
        (
            recv_cqe(&d, cqe_op::RESP_WR_IMM, len, h.imm),
            h.bth.solicited,
        )
    });
    resp_ok(nodes, di, &d, cqe, 0);
    if let Some(n) = nodes.get_mut(di) {
        n.fw.q_count(d.cnt_set, QCnt::RxWrite);
        set_resp(n.fw, d.slot, |r| r.write = None);
    }
    Rx::Next {
        pkts: 1,
        ack: h.bth.ack_req,
        done: true,
    }
}

/// A READ request at responder `d`: checked, then a resource whose responses the flush
/// sends; it takes the PSNs of its responses.
fn rx_read(nodes: &mut [Node<'_>], di: usize, d: &Snap, p: &Packet<'_>) -> Rx {
    let Some(reth) = p.headers.reth else {
        return Rx::Drop;
    };
    let ok = nodes.get(di).is_some_and(|n| read_ok(n.fw, d, &reth));
    if !ok {
        resp_fail(nodes, di, d, None, Some(QpEvent::WqAccess));
        return Rx::Nak(NAK_ACCESS);
    }
    let res = read_res(p.headers.bth.psn, &reth, d.mtu);
    executed(nodes, di, d, QCnt::RxRead, res)
}

/// An atomic at responder `d`: executed on the 8 aligned bytes under the rkey, its original
/// value kept for the ACK (and a duplicate's).
fn rx_atomic(nodes: &mut [Node<'_>], di: usize, d: &Snap, p: &Packet<'_>) -> Rx {
    let h = &p.headers;
    let Some(a) = h.atomic_eth else {
        return Rx::Drop;
    };
    if !a.va.is_multiple_of(8) {
        resp_fail(nodes, di, d, None, Some(QpEvent::WqInvalReq));
        return Rx::Nak(NAK_INVAL);
    }
    let old = nodes.get(di).and_then(|n| {
        let i = remote_key(n.fw, a.rkey, d)
            .filter(|i| d.rae && i.access.allows(Access::ATOMIC) && i.covers(a.va, 8))?;
        let (bus, _) = i.translate(a.va)?;
        if h.bth.opcode & 0x1f == op::COMPARE_SWAP {
            n.mem.cmp_swap64(bus, a.compare, a.swap_add).ok()
        } else {
            n.mem.fetch_add64(bus, a.swap_add).ok()
        }
    });
    let Some(orig) = old else {
        resp_fail(nodes, di, d, None, Some(QpEvent::WqAccess));
        return Rx::Nak(NAK_ACCESS);
    };
    let res = Res {
        kind: ResKind::Atomic,
        psn: h.bth.psn,
        pkts: 1,
        va: orig,
        ..Res::default()
    };
    executed(nodes, di, d, QCnt::RxAtomic, res)
}

/// A READ or atomic executed at responder `d`: counted in `cnt`, kept as resource `res`
/// (its responses are sent by the flush); it takes the PSNs of its responses.
fn executed(nodes: &mut [Node<'_>], di: usize, d: &Snap, cnt: QCnt, res: Res) -> Rx {
    resp_ok(nodes, di, d, None, 0);
    if let Some(n) = nodes.get_mut(di) {
        n.fw.q_count(d.cnt_set, cnt);
        set_resp(n.fw, d.slot, |r| r.push(res));
    }
    Rx::Next {
        pkts: res.pkts,
        ack: false,
        done: true,
    }
}

/// Queues what the responder of the QP in `slot` of node `ni` has to send, in PSN order: the
/// READ responses and atomic ACKs of its resources, then its acknowledgement. What the
/// queue has no room for waits for the next pass (the queue's backlog).
pub(super) fn flush(nodes: &mut [Node<'_>], ni: usize, slot: usize) {
    let Some(n) = nodes.get_mut(ni) else {
        return;
    };
    loop {
        let Some(s) = snap(n.fw, slot) else {
            return;
        };
        let r = s.q.rc.resp;
        if !r.pending() {
            return;
        }
        let pick = (0..RES).map(|i| (r.next + i) % RES).find(|&i| {
            r.res
                .get(i)
                .is_some_and(|e| e.kind != ResKind::Free && e.sent < e.pkts)
        });
        let Some(mut h) = conn_headers(n.fw, &s, 0) else {
            // No RoCE v2 source entry: nothing can be sent.
            set_resp(n.fw, slot, |r| {
                r.ack = None;
                for e in r.res.iter_mut() {
                    e.sent = e.pkts;
                }
            });
            return;
        };
        let aeth = Aeth {
            syndrome: AETH_ACK_NO_CREDITS,
            msn: r.msn,
        };
        let mut src = Src::Nothing;
        let mut len = 0;
        if let Some(e) = pick.and_then(|i| r.res.get(i).copied()) {
            h.bth.psn = e.psn.wrapping_add(e.sent) & PSN_MASK;
            if e.kind == ResKind::Atomic {
                h.bth.opcode = op::RC | op::ATOMIC_ACKNOWLEDGE;
                h.aeth = Some(aeth);
                h.atomic_ack_eth = Some(e.va);
            } else {
                let mtu = s.mtu.max(256);
                let off = e.sent.saturating_mul(mtu);
                len = e.len.saturating_sub(off).min(mtu) as usize;
                let o = match (e.sent == 0, e.sent + 1 == e.pkts) {
                    (true, true) => op::READ_RESPONSE_ONLY,
                    (true, false) => op::READ_RESPONSE_FIRST,
                    (false, true) => op::READ_RESPONSE_LAST,
                    (false, false) => op::READ_RESPONSE_MIDDLE,
                };
                h.bth.opcode = op::RC | o;
                if o != op::READ_RESPONSE_MIDDLE {
                    h.aeth = Some(aeth);
                }
                if len > 0 {
                    match remote_key(n.fw, e.rkey, &s) {
                        Some(i) => src = Src::Region(i, e.va.wrapping_add(u64::from(off))),
                        None => len = usize::MAX,
                    }
                }
            }
        } else if let Some((psn, syndrome)) = r.ack {
            h.bth.opcode = op::RC | op::ACKNOWLEDGE;
            h.bth.psn = psn;
            h.aeth = Some(Aeth {
                syndrome,
                msn: r.msn,
            });
        }
        let sent = if len == usize::MAX {
            // The region went away since the request: the READ is not answered.
            Err(Queued::Fault)
        } else {
            queue_frame(n, &h, src, len)
        };
        match sent {
            Err(Queued::Full) => {
                n.fw.wire_tx.backlog = true;
                return;
            }
            Ok(()) => n.fw.count_traffic(s.port, |t| t.xmit(1, len as u64)),
            Err(_) => {}
        }
        set_resp(n.fw, slot, |r| match pick.and_then(|i| r.res.get_mut(i)) {
            Some(e) if sent.is_ok() => e.sent += 1,
            Some(e) => e.sent = e.pkts,
            None => r.ack = None,
        });
    }
}

/// Sends what the responders of node `ni`'s QPs left for lack of room, once per pass when
/// its queue had a backlog; whether some is still left.
pub(super) fn flush_backlog(nodes: &mut [Node<'_>], ni: usize) -> bool {
    let Some(n) = nodes.get_mut(ni) else {
        return false;
    };
    if !core::mem::take(&mut n.fw.wire_tx.backlog) {
        return false;
    }
    for slot in 0..crate::fwsim::capacity::QP {
        let pending = nodes
            .get(ni)
            .and_then(|n| n.fw.qps.at_slot(slot))
            .is_some_and(|(_, q)| q.q.rc.resp.pending());
        if pending {
            flush(nodes, ni, slot);
        }
    }
    // A requester with packets left sets it again in its step.
    nodes.get(ni).is_some_and(|n| n.fw.wire_tx.backlog)
}
