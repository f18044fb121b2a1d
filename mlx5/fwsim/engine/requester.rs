// SPDX-License-Identifier: GPL-2.0

//! The requester: one step of a QP takes the WQE at its SQ consumer counter ([`step`]),
//! decodes it into a message and checks it on the sending side (the opcode for the service,
//! the gather list's keys, the length), routes it to the function that owns the destination
//! address, and hands it to the responder there; a UMR WQE is executed locally. What comes
//! back goes to the completer. A QP in ERR is flushed instead, and a QP waiting for a retry
//! timer is not stepped before its time. Mirrors upstream's `rxe_req.c`.

use super::completer::{finish, flush_one, start_retry, ReqRes};
use super::fabric::{q_count, route, Node};
use super::message::{Message, Service};
use super::qp_state::{qp_mut, snap, to_err, Snap, Step, Wait, Wqe};
use super::responder;
use super::sq::{message, read_wqe, WqeErr, MAX_SQ_WQE};
use super::umr::exec_umr;
use crate::fwsim::events::QpEvent;
use crate::fwsim::QCnt;
use crate::prm::consts::{QPC_STATE_ERR, QPC_STATE_RTS, QPC_ST_QP0, QPC_ST_QP1};
use crate::prm::wqe::{syndrome as syn, wqe_op};

/// Whether the QP in `slot` of `n` has nothing to step, told without parsing its context
/// (every pass visits every QP): no QP, a QP that cannot send, an SQ with nothing new posted.
fn idle(n: &Node<'_>, slot: usize) -> bool {
    let Some((_, qp)) = n.fw.qps.at_slot(slot) else {
        return true;
    };
    if qp.state != QPC_STATE_ERR && (qp.state != QPC_STATE_RTS || !qp.q.has_sq) {
        return true;
    }
    if qp.state == QPC_STATE_RTS && matches!(qp.q.wait, Wait::None) {
        let posted = qp.q.buf.db(n.mem, 4).map(|pi| (pi & 0xffff) as u16);
        if posted.is_none_or(|pi| pi == qp.q.sq_ci) {
            return true;
        }
    }
    false
}

/// One step of a QP: execute (or flush) one WQE.
pub(super) fn step(nodes: &mut [Node<'_>], ni: usize, slot: usize, now: u64) -> Step {
    if nodes.get(ni).is_none_or(|n| idle(n, slot)) {
        return Step::Idle;
    }
    let Some((s, mem)) = nodes.get(ni).and_then(|n| Some((snap(n.fw, slot)?, n.mem))) else {
        return Step::Idle;
    };
    if s.state == QPC_STATE_ERR {
        return if flush_one(nodes, ni, &s) {
            Step::Done
        } else {
            Step::Idle
        };
    }
    if s.state != QPC_STATE_RTS || !s.q.has_sq {
        return Step::Idle;
    }
    // RC in packets keeps a window of messages in flight (`rc.rs`).
    if super::rc::on_wire(nodes, ni, &s) {
        if let Some(pi) = s.q.buf.db(mem, 4) {
            if let Some(st) = super::rc::step(nodes, ni, &s, (pi & 0xffff) as u16, now) {
                return st;
            }
        }
    }
    match s.q.wait {
        Wait::Forever => return Step::Idle,
        Wait::Ack(d) | Wait::Rnr(d) if now < d => return Step::Blocked(d),
        _ => {}
    }
    let Some(pi) = s.q.buf.db(mem, 4) else {
        return Step::Idle;
    };
    let pi = (pi & 0xffff) as u16;
    if pi == s.q.sq_ci {
        return Step::Idle;
    }
    let mut buf = [0u8; MAX_SQ_WQE];
    let w = match read_wqe(mem, &s, pi, &mut buf) {
        Ok(w) => w,
        Err(WqeErr::Bad(w)) => {
            return finish(nodes, ni, slot, &w, ReqRes::Err(syn::LOCAL_QP_OP), now)
        }
        Err(WqeErr::Fault) => {
            if let Some(n) = nodes.get_mut(ni) {
                to_err(n.fw, slot);
                n.fw.events.qp(slot, QpEvent::WqCatas);
            }
            return Step::Done;
        }
    };
    // A retry whose time has come.
    let retry = nodes.get_mut(ni).and_then(|n| qp_mut(n.fw, slot));
    if let Some(Err(e)) = retry.map(|q| start_retry(&mut q.q)) {
        return finish(nodes, ni, slot, &w, ReqRes::Err(e), now);
    }
    let res = if w.opcode == wqe_op::UMR {
        match nodes.get_mut(ni) {
            Some(n) => exec_umr(n.fw, mem, &s, &w, &buf),
            None => return Step::Idle,
        }
    } else {
        exec_message(nodes, ni, &s, &w, &buf)
    };
    if matches!(res, ReqRes::Err(e) if e == syn::REMOTE_ACCESS) {
        q_count(nodes, ni, s.cnt_set, QCnt::ReqRemoteAccess);
    }
    finish(nodes, ni, slot, &w, res, now)
}

/// Executes the message of WQE `w` (bytes in `buf`) of requester `s` on node `ni`: decoded
/// and checked, routed, then executed by the responder.
fn exec_message(nodes: &mut [Node<'_>], ni: usize, s: &Snap, w: &Wqe, buf: &[u8]) -> ReqRes {
    let Some(n) = nodes.get(ni) else {
        return ReqRes::Lost;
    };
    let m = match message(n.fw, s, w, buf) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let sgid_index = m.av.map_or(s.sgid_index, |a| a.sgid_index);
    if !n.fw.port_up(s.port) || !n.fw.may_send_from(s.port, sgid_index) {
        return m.dropped();
    }
    // What only the fabric's switch carries: SMPs for its SMA or beyond it (QP0), GMPs for
    // its SM's SA (QP1).
    let qp0 = s.st == QPC_ST_QP0;
    if qp0 || s.st == QPC_ST_QP1 {
        match super::smp::at_switch(nodes, ni, s, &m, qp0) {
            Some(Ok(a)) if qp0 => return super::smp::switched(nodes, a),
            Some(Ok(a)) => return super::sa::answered(nodes, a),
            Some(Err(r)) => return r,
            None => {}
        }
    }
    let (lid, gid, _) = m.dest;
    if !m.eth && m.svc == Service::Ud && super::ib_mcast::is_mlid(lid) {
        return super::ib_mcast::send(nodes, ni, s, &m);
    }
    let Some(n) = nodes.get(ni) else {
        return ReqRes::Lost;
    };
    let version = n.fw.roce_version(s.port, sgid_index);
    let Some((di, dport)) = route(nodes, n.fw.cfg.link_layer, lid, &gid, version) else {
        // No function holds the GID: UD messages leave as packets (`wire.rs`); RC and UC
        // ones are taken by `rc.rs` before (one that reaches here cannot leave).
        if m.eth && m.svc == Service::Ud {
            return super::wire::send_ud(nodes, ni, s, &m);
        }
        return m.dropped();
    };
    count_traffic(nodes, (ni, s.port), (di, dport), &m, s.mtu);
    responder::receive(nodes, ni, s, &m, di)
}

/// Counts message `m` on the ports it crosses (`pma.rs`): the requester's port `from`
/// sends it, `to` receives it; an RDMA READ's request carries no payload and its response
/// packets carry the data back.
fn count_traffic(
    nodes: &mut [Node<'_>],
    from: (usize, usize),
    to: (usize, usize),
    m: &Message<'_>,
    mtu: u32,
) {
    let pkts = m.packets(mtu);
    let read = m.opcode == wqe_op::RDMA_READ;
    let (req_pkts, req_len) = if read { (1, 0) } else { (pkts, m.len) };
    if let Some(n) = nodes.get_mut(from.0) {
        n.fw.count_traffic(from.1, |t| {
            t.xmit(req_pkts, req_len);
            if read {
                t.rcv(pkts, m.len);
            }
        });
    }
    if let Some(n) = nodes.get_mut(to.0) {
        n.fw.count_traffic(to.1, |t| {
            t.rcv(req_pkts, req_len);
            if read {
                t.xmit(pkts, m.len);
            }
        });
    }
}
