// SPDX-License-Identifier: GPL-2.0

//! RC in RoCE v2 packets (IBA Vol 1 9.7, Annex A17), for a QP whose destination GID no
//! function of the fabric holds. Each RC QP keeps its own transport state ([`RcWire`], beside
//! its `QpState`): the requester's send window and the responder's progress, MSN, pending
//! acknowledgement and READ/atomic resources. Mirrors upstream's `rxe_req.c` (segmenting),
//! `rxe_comp.c` (ACKs, NAKs, retries) and `rxe_resp.c` (PSN checks, execution, duplicates):
//!
//! * **Requester** ([`step`]): up to 16 messages in flight ([`WIN`]), READs and atomics among
//!   them at most `2^log_sra_max`; a fenced WQE, a NOP or a UMR waits for the window to
//!   drain. Each WQE taken is cut at the path MTU into SEND/WRITE FIRST, MIDDLE, LAST (with
//!   immediate or invalidate) or ONLY packets with PSNs from `next_send_psn` (24 bits,
//!   wrapping, moved as the message is taken), the RETH on the first WRITE packet, AckReq on
//!   the last; a READ is one request (its responses take the PSNs of the response packets),
//!   an atomic one AtomicETH packet. The payload is gathered straight into the frame. One ACK
//!   timer runs for the oldest message (`completer.rs`, restarted on progress): on expiry the
//!   window is sent again from the first packet not acknowledged (go-back-N), `retry_count`
//!   times, then the oldest completes with `IBV_WC_RETRY_EXC_ERR`. A packet that finds the
//!   transmit queue full is sent on the next pass.
//! * **Completer** (responses, [`receive`]): a response acknowledges every message before its
//!   PSN (a coalesced ACK retires several SENDs and WRITEs at once; a READ or atomic it
//!   passes lost its responses, and the window goes back to it). An ACK covering a
//!   message's last PSN retires it (one inside records progress); READ responses are written
//!   in PSN order into the gather list (one past the expected sends the window again from
//!   the missing PSN, once per PSN) and the last retires the READ; an atomic ACK writes the
//!   original value. A PSN sequence error NAK sends the window again from its PSN; an RNR
//!   NAK from its PSN after its timer (`rnr_retry`, 7 forever); any other NAK completes the
//!   message in error (invalid request, remote access, remote operation) and the QP goes to
//!   ERR. Completions are in order. Credits are ignored, as a ConnectX does without
//!   end-to-end flow control.
//! * **Responder** (requests, [`receive`]): the PSN must be `next_rcv_psn`; a later one is
//!   answered by one PSN sequence error NAK; an earlier one is a duplicate: a SEND or WRITE
//!   is acknowledged again (coalesced, the last PSN taken), a READ is executed again from
//!   memory with the duplicate's RETH (its resource reused), an atomic is answered from its
//!   saved result (never executed twice). SEND packets are written into the receive WQE at
//!   their offset (it is consumed with the CQE on the last); no WQE is an RNR NAK with
//!   `min_rnr_nak`. A WRITE's RETH is checked against the rkey on its first packet.
//!   Acknowledgements are coalesced: one ACK (syndrome "no credits", the MSN) for the latest
//!   packet with AckReq, sent after the READ responses and atomic ACKs that precede it.
//!
//! * **UC** ([`uc_request`]) takes the same requester without what is reliable: UC opcodes,
//!   no AckReq, a message complete once its packets are queued, no ACK timer; its responder
//!   starts a message on any first or only packet, drops a message on a gap or an error, and
//!   answers nothing (IBA 9.8.3).
//!
//! The function's debugfs counts request packets sent again and requests past and before the
//! expected PSN (`wire_rc_*`, `wire.rs` `RcStats`).
//!
//! * **XRC**: an initiator is an RC requester whose requests carry the XRC opcodes and the
//!   XRCETH; a target (`receive_as_xrc_srq`) takes each request as the XRC SRQ it names
//!   does and answers with XRC responses.
//!
//! Not done: the peer's address checked against the QP's path, and the Q counters of
//! retransmissions and sequence errors.

use super::completer::{retire, retry_later, rnr_timer_ns, start_retry, ReqRes};
use super::fabric::{route, Node};
use super::mem::{remote_key, skip_bytes, Cur};
use super::message::Message;
use super::qp_state::{packets, qp_mut, rc_of, snap, Snap, Step, Wait};
use super::rc_state::{Req, Res, ResKind, Resp, RES, WIN};
use super::responder::{receive_as_xrc_srq, resp_fail, resp_ok, write_rwqe, Lead, RwqeErr};
use super::sq::{current, message, read_wqe_at, MAX_SQ_WQE};
use super::umr::remote_invalidate;
use super::wire::{conn_headers, queue_frame, Queued, Src};
use crate::fwsim::cqe::Cqe;
use crate::fwsim::events::QpEvent;
use crate::fwsim::profile::LinkLayer;
use crate::fwsim::roce::{opcode as op, Aeth, AtomicEth, Headers, Packet, Reth};
use crate::fwsim::xlat::Access;
use crate::fwsim::{Fw, QCnt};
use crate::prm::consts::{QPC_STATE_RTR, QPC_STATE_RTS, QPC_ST_RC, QPC_ST_UC, QPC_ST_XRC};
use crate::prm::ctx::qpc;
use crate::prm::wqe::{cqe_off, cqe_op, ctrl, syndrome as syn, wqe_op};

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

/// The BTH transport of a QP of service type `st` (IBA Table 38: the opcode's top 3 bits).
fn transport(st: u32) -> u8 {
    match st {
        QPC_ST_UC => op::UC,
        QPC_ST_XRC => op::XRC,
        _ => op::RC,
    }
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

/// Whether the messages of requester `s` on node `ni` go on the wire: an RC, UC or XRC
/// initiator QP on an Ethernet port whose destination GID no function of the fabric holds.
pub(super) fn on_wire(nodes: &[Node<'_>], ni: usize, s: &Snap) -> bool {
    // An XRC initiator (with a send queue); a target has none to step.
    if !matches!(s.st, QPC_ST_RC | QPC_ST_UC | QPC_ST_XRC) {
        return false;
    }
    let Some(n) = nodes.get(ni) else {
        return false;
    };
    if rc_of(n.fw, s.slot).is_some_and(|r| r.wire) {
        return true;
    }
    let ll = n.fw.cfg.link_layer;
    let version = n.fw.roce_version(s.port, s.sgid_index);
    ll == LinkLayer::Ethernet && route(nodes, ll, s.rlid, &s.rgid, version).is_none()
}

/// One step of RC requester `s` on node `ni` whose messages go on the wire ([`on_wire`]) at
/// time `now`, `pi` its SQ doorbell record: the timers (an ACK timeout sends the window again
/// from the first packet not acknowledged), the packets the window has not sent, then one
/// more WQE into the window and its packets. `None` when nothing is in flight and the WQE at
/// the SQ consumer counter is for the ordinary step (not a message that can leave: a NOP, a
/// UMR, a WQE that fails its checks, a port that cannot send).
pub(super) fn step(nodes: &mut [Node<'_>], ni: usize, s: &Snap, pi: u16, now: u64) -> Option<Step> {
    let n = nodes.get_mut(ni)?;
    let slot = s.slot;
    if let Wait::Rnr(d) = s.q.wait {
        if now < d {
            return Some(Step::Blocked(d));
        }
    }
    let expired = matches!(s.q.wait, Wait::Rnr(d) | Wait::Ack(d) if now >= d);
    if expired && rc_of(n.fw, slot).is_some_and(|r| r.req.len > 0) {
        let q = qp_mut(n.fw, slot)?;
        let timeout = matches!(q.q.wait, Wait::Ack(_));
        if let Err(e) = start_retry(&mut q.q) {
            complete(n, slot, ReqRes::Err(e));
            return Some(Step::Done);
        }
        if timeout {
            // Again from the first packet not acknowledged.
            let w = &mut q.rc.req;
            let k = w.oldest().map_or(0, |e| e.acked);
            w.rewind(0, k);
            w.back = None;
            n.fw.q_count(s.cnt_set, QCnt::LocalAckTimeout);
        }
    }
    if !send_window(n, slot, pi) {
        return Some(Step::Idle);
    }
    let took = take(n, slot, pi)?;
    if took {
        send_window(n, slot, pi);
    }
    // UC has no acknowledgement: a message completes once all its packets are queued.
    let oldest = |fw: &Fw| rc_of(fw, slot).and_then(|r| r.req.oldest());
    while s.st == QPC_ST_UC && oldest(n.fw).is_some_and(|e| e.sent >= e.reqs()) {
        complete(n, slot, ReqRes::Ok { byte_cnt: 0 });
    }
    let s = snap(n.fw, slot)?;
    if s.st == QPC_ST_RC && oldest(n.fw).is_some() && s.q.wait == Wait::None {
        // The ACK timer, for the oldest message in flight.
        let _ = retry_later(n.fw, &s, ReqRes::Lost, now);
    }
    let wait = qp_mut(n.fw, slot).map_or(Wait::None, |q| q.q.wait);
    Some(match wait {
        _ if took => Step::Done,
        Wait::Ack(d) | Wait::Rnr(d) => Step::Blocked(d),
        _ => Step::Idle,
    })
}

/// Takes the WQE after the window of the requester in `slot` of `n` into it (its PSNs from
/// `next_send_psn`): `Some(true)` when it did; `Some(false)` when it waits (nothing more
/// posted, the window or the READ/atomic limit full, a fence, a WQE for the ordinary step
/// behind messages in flight); `None` when nothing is in flight and the WQE is for the
/// ordinary step.
fn take(n: &mut Node<'_>, slot: usize, pi: u16) -> Option<bool> {
    let s = snap(n.fw, slot)?;
    let win = &rc_of(n.fw, slot)?.req;
    let next = win.next_wqe(s.q.sq_ci);
    let reads = win.reads();
    if next == pi || win.len >= WIN {
        return Some(false);
    }
    let empty = win.len == 0;
    let wait = if empty { None } else { Some(false) };
    let mut buf = [0u8; MAX_SQ_WQE];
    let Ok(w) = read_wqe_at(n.mem, &s, next, pi, &mut buf) else {
        return wait;
    };
    use wqe_op::*;
    let one = matches!(w.opcode, RDMA_READ | ATOMIC_CS | ATOMIC_FA);
    let plain = one
        || matches!(
            w.opcode,
            SEND | SEND_IMM | SEND_INVAL | RDMA_WRITE | RDMA_WRITE_IMM
        );
    // A fenced WQE waits for everything before it (a ConnectX waits for the READs and
    // atomics only).
    if !plain || (!empty && w.flags & ctrl::FENCE_MODE != 0) {
        return wait;
    }
    let Ok(m) = message(n.fw, &s, &w, &buf) else {
        return wait;
    };
    if !n.fw.port_up(s.port) || !n.fw.may_send_from(s.port, s.sgid_index) {
        return wait;
    }
    if one && reads >= 1usize << s.sra.min(8) {
        return Some(false);
    }
    let mtu = s.mtu.max(256);
    let npkts = if one && w.opcode != RDMA_READ {
        1
    } else {
        packets(m.len, mtu)
    };
    let q = qp_mut(n.fw, slot)?;
    let first = qpc::next_send_psn.get(&q.qpc).unwrap_or(0) & PSN_MASK;
    let _ = qpc::next_send_psn.set(&mut q.qpc, first.wrapping_add(npkts) & PSN_MASK);
    q.rc.wire = true;
    Some(q.rc.req.push(Req {
        wqe: next,
        nbb: u8::try_from(w.nbb).unwrap_or(u8::MAX),
        op: w.opcode,
        first,
        npkts,
        ..Req::default()
    }))
}

/// Queues the packets the window of the requester in `slot` of `n` has not sent, oldest
/// first (`pi`: its SQ doorbell record); false when the transmit queue filled first (the
/// rest waits for the next pass).
fn send_window(n: &mut Node<'_>, slot: usize, pi: u16) -> bool {
    let Some(s) = snap(n.fw, slot) else {
        return true;
    };
    let Some(win) = rc_of(n.fw, slot).map(|r| r.req) else {
        return true;
    };
    let mtu = s.mtu.max(256);
    for (i, e) in win.iter().enumerate() {
        if e.sent >= e.reqs() {
            continue;
        }
        let mut buf = [0u8; MAX_SQ_WQE];
        let m = read_wqe_at(n.mem, &s, e.wqe, pi, &mut buf)
            .ok()
            .and_then(|w| message(n.fw, &s, &w, &buf).ok());
        let mut k = e.sent;
        while let Some(m) = m.as_ref().filter(|_| k < e.reqs()) {
            // No packet (no RoCE v2 source entry): nothing leaves, the ACK timer runs.
            let Some((h, src, len)) = req_packet(n.fw, &s, m, e, k, mtu) else {
                break;
            };
            match queue_frame(n, &h, src, len) {
                Ok(()) => {
                    n.fw.count_traffic(s.port, |t| t.xmit(1, len as u64));
                    let span = if e.one() {
                        e.npkts.saturating_sub(e.acked)
                    } else {
                        1
                    };
                    let again =
                        qp_mut(n.fw, slot).is_some_and(|q| q.rc.req.sent_psn(h.bth.psn, span));
                    if again {
                        n.fw.wire_tx.stats.retransmits += 1;
                    }
                    k += 1;
                }
                Err(Queued::Full) => {
                    n.fw.wire_tx.backlog = true;
                    set_ent(n.fw, slot, i, |r| r.sent = k);
                    return false;
                }
                Err(Queued::Fault) if i == 0 => {
                    complete(n, slot, ReqRes::Err(syn::LOCAL_PROT));
                    return true;
                }
                // Completed in error once it is the oldest.
                Err(Queued::Fault) => return true,
                Err(Queued::Bad) => break,
            }
        }
        set_ent(n.fw, slot, i, |r| r.sent = r.reqs());
    }
    true
}

/// Changes message `i` of the window of the QP in `slot`.
fn set_ent(fw: &mut Fw, slot: usize, i: usize, f: impl FnOnce(&mut Req)) {
    if let Some(e) = qp_mut(fw, slot).and_then(|q| q.rc.req.ent.get_mut(i)) {
        f(e);
    }
}

/// Changes the oldest message in flight of the QP in `slot`; progress (more packets
/// acknowledged) gives the QP its transport retries back and restarts the ACK timer, as
/// rxe's completer does.
fn set_req(fw: &mut Fw, slot: usize, f: impl FnOnce(&mut Req)) {
    let Some(q) = qp_mut(fw, slot) else {
        return;
    };
    if q.rc.req.len == 0 {
        return;
    }
    let Some(e) = q.rc.req.ent.first_mut() else {
        return;
    };
    let before = e.acked;
    f(e);
    if e.acked > before {
        q.rc.req.back = None;
        if matches!(q.q.wait, Wait::Ack(_)) {
            q.q.wait = Wait::None;
        }
        if q.q.retry_wqe == Some(q.q.sq_ci) {
            q.q.retry_left = qpc::retry_count.get(&q.qpc).map_or(0, |v| (v & 7) as u8);
        }
    }
}

/// Go-back-N without a NAK (a response past one that did not come: an implied NAK, counted
/// as `implied_nak_seq_err`): the window sent again from PSN `psn` of its oldest message,
/// once for that PSN until there is progress.
fn go_back(fw: &mut Fw, slot: usize, psn: u32) {
    let Some(q) = qp_mut(fw, slot) else {
        return;
    };
    let w = &mut q.rc.req;
    if w.back == Some(psn) {
        return;
    }
    w.back = Some(psn);
    let set = qpc::counter_set_id.get(&q.qpc).unwrap_or(0);
    if let Some(e) = w.oldest() {
        w.rewind(0, psn_off(psn, e.first));
    }
    if matches!(q.q.wait, Wait::Ack(_)) {
        q.q.wait = Wait::None;
    }
    fw.q_count(set, QCnt::ImpliedNak);
}

fn set_resp(fw: &mut Fw, slot: usize, f: impl FnOnce(&mut Resp)) {
    if let Some(q) = qp_mut(fw, slot) {
        f(&mut q.rc.resp);
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
    let uc = s.st == QPC_ST_UC;
    h.bth.psn = st.first.wrapping_add(k) & PSN_MASK;
    // UC is not acknowledged.
    h.bth.ack_req = last && !uc;
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
    h.bth.opcode = transport(s.st) | opc;
    // An XRC request names the target's XRC SRQ (IBA 9.3.x XRCETH), every packet.
    if s.st == QPC_ST_XRC {
        h.xrceth = Some(m.xrc_srqn);
    }
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
    let st = match h.bth.opcode & 0xe0 {
        op::UC => QPC_ST_UC,
        op::XRC => QPC_ST_XRC,
        _ => QPC_ST_RC,
    };
    let d = nodes.get(ni).and_then(|n| {
        let d = snap(n.fw, n.fw.qps.slot_of(h.bth.dest_qp)?)?;
        (d.st == st && d.port == port && matches!(d.state, QPC_STATE_RTR | QPC_STATE_RTS))
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
        st != QPC_ST_UC && d.state == QPC_STATE_RTS && response(nodes, ni, &d, p, now)
    } else if st == QPC_ST_UC {
        uc_request(nodes, ni, d, p)
    } else {
        request(nodes, ni, d, p)
    };
    flush(nodes, ni, d.slot);
    took
}

/// Response `p` at requester `s` on node `ni`. The messages in flight wholly before its PSN
/// were received (IBA 9.7.5.1.1: a response acknowledges every request before it): a SEND or
/// WRITE is retired; a READ or atomic whose responses did not all come had them lost, and the
/// window is sent again from there. The rest concerns the message its PSN falls in.
fn response(nodes: &mut [Node<'_>], ni: usize, s: &Snap, p: &Packet<'_>, now: u64) -> bool {
    let h = &p.headers;
    let Some(n) = nodes.get_mut(ni) else {
        return false;
    };
    let slot = s.slot;
    let (s, r) = loop {
        let Some(s) = snap(n.fw, slot) else {
            return true;
        };
        let Some(win) = rc_of(n.fw, slot).map(|r| &r.req) else {
            return true;
        };
        // Nothing in flight, or a PSN outside the window: late or duplicated.
        let Some(e) = win.oldest() else {
            return true;
        };
        let k = psn_off(h.bth.psn, e.first);
        if k >= win.span() {
            return true;
        }
        if k < e.npkts {
            break (s, e);
        }
        if e.one() {
            go_back(n.fw, slot, e.first.wrapping_add(e.acked) & PSN_MASK);
            return true;
        }
        complete(n, slot, ReqRes::Ok { byte_cnt: 0 });
    };
    let k = psn_off(h.bth.psn, r.first);
    let mtu = s.mtu.max(256);
    let o = h.bth.opcode & 0x1f;
    let atomic = |op| matches!(op, wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA);
    let read_resp = (op::READ_RESPONSE_FIRST..=op::READ_RESPONSE_ONLY).contains(&o);
    // The WQE's opcode, and what it completes with if it does now.
    let got = current(n, &s, |w, m| {
        let res = match o {
            op::ACKNOWLEDGE => None,
            op::ATOMIC_ACKNOWLEDGE => h.atomic_ack_eth.filter(|_| atomic(w.opcode)).map(|orig| {
                let mut dst = Cur::sgl(n.fw, m.segs, false, s.pd);
                match dst.write(n.mem, &orig.to_le_bytes()) {
                    Ok(()) => ReqRes::Ok { byte_cnt: 8 },
                    Err(()) => ReqRes::Err(syn::LOCAL_PROT),
                }
            }),
            // A READ response, taken in PSN order.
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
            set_req(n.fw, slot, |r| r.acked = k + 1);
            None
        }
        // A READ response past the one expected: the ones between were lost.
        None if read_resp && wop == wqe_op::RDMA_READ && k > r.acked => {
            go_back(n.fw, slot, r.first.wrapping_add(r.acked) & PSN_MASK);
            None
        }
        None if o == op::ACKNOWLEDGE => h.aeth.and_then(|a| ack(n.fw, &s, &r, a, k, now)),
        r => r,
    };
    if let Some(res) = res {
        complete(n, slot, res);
    }
    true
}

/// AETH `a` of an ACKNOWLEDGE for PSN offset `k` of the oldest message in flight `r` of `s`:
/// what it completes with, if it does now. A NAK's PSN is the one the responder expects:
/// the window goes back to it (go-back-N).
fn ack(fw: &mut Fw, s: &Snap, r: &Req, a: Aeth, k: u32, now: u64) -> Option<ReqRes> {
    let code = a.syndrome & 0x1f;
    let one = r.one();
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
            rewind(fw, s.slot, k);
            match retry_later(fw, s, ReqRes::Rnr(rnr_timer_ns(code)), now) {
                Ok(_) => {
                    fw.q_count(s.cnt_set, QCnt::RnrNak);
                    None
                }
                Err(e) => Some(ReqRes::Err(e)),
            }
        }
        AETH_NAK => match code {
            NAK_SEQ => {
                // Again from the PSN the responder expects, at once.
                fw.q_count(s.cnt_set, QCnt::PacketSeqErr);
                rewind(fw, s.slot, k);
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

/// The window of the QP in `slot` sent again from packet `k` of its oldest message (the ones
/// before it arrived: progress).
fn rewind(fw: &mut Fw, slot: usize, k: u32) {
    set_req(fw, slot, |q| {
        if !q.one() {
            q.acked = q.acked.max(k);
        }
    });
    if let Some(q) = qp_mut(fw, slot) {
        q.rc.req.rewind(0, k);
    }
}

/// Retires the oldest message in flight of the QP in `slot` of node `n` with `res`.
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
    if let Some(q) = qp_mut(n.fw, slot) {
        q.rc.req.pop();
    }
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

/// UC packet `p` at responder `d` on node `di` (IBA 9.7.5.1.3, 9.8.3): a first or only
/// packet starts a message whatever its PSN (one in progress is abandoned, its receive WQE
/// used again); a middle or last packet must carry the expected PSN and belong to a message
/// in progress, or it is dropped and the message in progress with it. Nothing is answered;
/// a message the responder cannot take (no receive WQE, a bad rkey, a bad length) is dropped
/// without moving the QP to ERR.
fn uc_request(nodes: &mut [Node<'_>], di: usize, d: Snap, p: &Packet<'_>) -> bool {
    let h = &p.headers;
    let psn = h.bth.psn;
    let o = h.bth.opcode & 0x1f;
    let first = matches!(
        o,
        op::SEND_FIRST
            | op::SEND_ONLY
            | op::SEND_ONLY_IMM
            | op::WRITE_FIRST
            | op::WRITE_ONLY
            | op::WRITE_ONLY_IMM
    );
    let Some(n) = nodes.get_mut(di) else {
        return false;
    };
    let epsn = qp_mut(n.fw, d.slot).map_or(0, |q| qpc::next_rcv_psn.get(&q.qpc).unwrap_or(0));
    let drop_msg = |n: &mut Node<'_>| {
        if let Some(q) = qp_mut(n.fw, d.slot) {
            let _ = qpc::next_rcv_psn.set(&mut q.qpc, psn.wrapping_add(1) & PSN_MASK);
            q.rc.resp.send = None;
            q.rc.resp.write = None;
        }
    };
    if first {
        if let Some(q) = qp_mut(n.fw, d.slot) {
            let _ = qpc::next_rcv_psn.set(&mut q.qpc, psn);
            q.rc.resp.send = None;
            q.rc.resp.write = None;
        }
    } else if psn != epsn & PSN_MASK {
        n.fw.wire_tx.stats.out_of_sequence += 1;
        n.fw.q_count(d.cnt_set, QCnt::OutOfSequence);
        drop_msg(n);
        return true;
    }
    let Some(d) = snap(n.fw, d.slot) else {
        return false;
    };
    let rx = match o {
        op::SEND_FIRST..=op::SEND_ONLY_IMM => rx_send(nodes, di, d, p),
        op::WRITE_FIRST..=op::WRITE_ONLY_IMM => rx_write(nodes, di, d, p),
        _ => Rx::Drop,
    };
    let Some(n) = nodes.get_mut(di) else {
        return false;
    };
    match rx {
        Rx::Next { .. } => {
            if let Some(q) = qp_mut(n.fw, d.slot) {
                let _ = qpc::next_rcv_psn.set(&mut q.qpc, psn.wrapping_add(1) & PSN_MASK);
            }
        }
        _ => drop_msg(n),
    }
    true
}

/// The responder's part of an error on RC and XRC (`resp_fail`: the QP to ERR); UC drops
/// the message and goes on.
fn fail(nodes: &mut [Node<'_>], di: usize, d: &Snap, cqe: Option<u8>, ev: Option<QpEvent>) {
    if d.st != QPC_ST_UC {
        resp_fail(nodes, di, d, cqe, ev);
    }
}

/// Request `p` at responder `d` on node `di`.
fn request(nodes: &mut [Node<'_>], di: usize, mut d: Snap, p: &Packet<'_>) -> bool {
    let h = &p.headers;
    let psn = h.bth.psn;
    let Some(epsn) = nodes.get(di).and_then(|n| {
        let (_, q) = n.fw.qps.at_slot(d.slot)?;
        Some(qpc::next_rcv_psn.get(&q.qpc).unwrap_or(0) & PSN_MASK)
    }) else {
        return false;
    };
    // An XRC target receives as the SRQ the request names (duplicates too: a READ is
    // executed again in its PD).
    let xrc_ok = d.st != QPC_ST_XRC
        || h.xrceth
            .is_some_and(|srqn| receive_as_xrc_srq(nodes, di, &mut d, srqn));
    let k = psn_off(psn, epsn);
    if k >= PSN_HALF {
        if let Some(n) = nodes.get_mut(di) {
            n.fw.wire_tx.stats.duplicates += 1;
            n.fw.q_count(d.cnt_set, QCnt::DuplicateRequest);
        }
        duplicate(nodes, di, &d, p, epsn);
        return true;
    }
    if k != 0 {
        // Ahead of the expected PSN: one NAK until the expected one comes.
        if let Some(n) = nodes.get_mut(di) {
            n.fw.wire_tx.stats.out_of_sequence += 1;
            n.fw.q_count(d.cnt_set, QCnt::OutOfSequence);
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
        _ if !xrc_ok => {
            resp_fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
            Rx::Nak(NAK_INVAL)
        }
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
                let r = &mut q.rc.resp;
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
                // Its resource again (rxe's `find_resource()`), or a new one for a READ
                // asked again from a later response.
                let res = read_res(psn, &reth, d.mtu);
                set_resp(n.fw, d.slot, |r| {
                    match r
                        .res
                        .iter_mut()
                        .find(|e| e.kind == ResKind::Read && e.psn == psn)
                    {
                        Some(e) => *e = res,
                        None => r.push(res),
                    }
                });
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
    let sending = nodes
        .get(di)
        .and_then(|n| rc_of(n.fw, d.slot))
        .and_then(|r| r.resp.send);
    let off = match (first, sending) {
        (true, None) => 0,
        (false, Some(off)) => off,
        _ => {
            fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
            return Rx::Nak(NAK_INVAL);
        }
    };
    if !last && p.payload.len() != d.mtu as usize {
        fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
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
            fail(nodes, di, &d, Some(syn::REMOTE_INVAL_REQ), None);
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
        fail(nodes, di, d, None, Some(QpEvent::WqAccess));
        Rx::Nak(NAK_ACCESS)
    };
    let writing = nodes
        .get(di)
        .and_then(|n| rc_of(n.fw, d.slot))
        .and_then(|r| r.resp.write);
    let (va, rkey, len, off) = match (first, h.reth, writing) {
        (true, Some(r), None) => (r.va, r.rkey, r.dma_len, 0),
        (false, _, Some(w)) => w,
        _ => {
            fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
            return Rx::Nak(NAK_INVAL);
        }
    };
    let plen = u32::try_from(p.payload.len()).unwrap_or(u32::MAX);
    let end = off.saturating_add(plen);
    if end > len || (!last && p.payload.len() != d.mtu as usize) || (last && end != len) {
        fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
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
        let Some(r) = rc_of(n.fw, slot).map(|r| r.resp) else {
            return;
        };
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
                h.bth.opcode = transport(s.st) | op::ATOMIC_ACKNOWLEDGE;
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
                h.bth.opcode = transport(s.st) | o;
                if o != op::READ_RESPONSE_MIDDLE {
                    h.aeth = Some(aeth);
                }
                // An XRC target has no PD of its own: the READ was checked in the PD of the
                // XRC SRQ its request named (`receive_as_xrc_srq`).
                let mut ks = s;
                if s.st == QPC_ST_XRC && !s.q.has_sq {
                    if let Some(m) = n.fw.mkeys.get(e.rkey >> 8) {
                        ks.pd = m.pd;
                    }
                }
                if len > 0 {
                    match remote_key(n.fw, e.rkey, &ks) {
                        Some(i) => src = Src::Region(i, e.va.wrapping_add(u64::from(off))),
                        None => len = usize::MAX,
                    }
                }
            }
        } else if let Some((psn, syndrome)) = r.ack {
            h.bth.opcode = transport(s.st) | op::ACKNOWLEDGE;
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
            .is_some_and(|(_, q)| q.rc.resp.pending());
        if pending {
            flush(nodes, ni, slot);
        }
    }
    // A requester with packets left sets it again in its step.
    nodes.get(ni).is_some_and(|n| n.fw.wire_tx.backlog)
}
