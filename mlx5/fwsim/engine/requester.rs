// SPDX-License-Identifier: GPL-2.0

//! The requester: one step of a QP takes the WQE at its SQ consumer counter ([`step`]),
//! decodes it into a message and checks it on the sending side (the opcode for the service,
//! the gather list's keys, the length), routes it to the function that owns the destination
//! address, and hands it to the responder there; a UMR WQE is executed locally. What comes
//! back goes to the completer. A QP in ERR is flushed instead, and a QP waiting for a retry
//! timer is not stepped before its time. Mirrors upstream's `rxe_req.c`.

use super::completer::{finish, flush_one, start_retry, ReqRes};
use super::fabric::{q_count, route, Node};
use super::mem::check_sgl;
use super::message::{Message, Service};
use super::qp_state::{av_len, be16, be32, be64, qp_mut, snap, to_err, Av, Snap, Step, Wait, Wqe};
use super::responder;
use super::umr::exec_umr;
use crate::fwsim::dma::DmaMem;
use crate::fwsim::events::QpEvent;
use crate::fwsim::profile::LinkLayer;
use crate::fwsim::xlat::Access;
use crate::fwsim::{Fw, QCnt};
use crate::prm::consts::{
    QPC_STATE_ERR, QPC_STATE_RTS, QPC_ST_DCI, QPC_ST_QP0, QPC_ST_QP1, QPC_ST_RC, QPC_ST_UC,
    QPC_ST_UD, QPC_ST_XRC,
};
use crate::prm::wqe::{ctrl, syndrome as syn, wqe_op};

/// Largest SQ WQE (`cmd_hca_cap.max_wqe_sz_sq`; `ds` is 6 bits in libmlx5 anyway).
const MAX_SQ_WQE: usize = 1024;

/// Bytes of `struct mlx5_wqe_xrc_seg` (an XRC initiator's WQEs).
const XRC_SEG: usize = 16;

/// Why an SQ WQE could not be taken.
enum WqeErr {
    /// The queue could not be read.
    Fault,
    /// A malformed control segment: the WQE (with the WQEBBs to skip) completes in error.
    Bad(Wqe),
}

/// Reads the WQE at the SQ consumer counter of `s` into `buf`; `pi` is the doorbell record.
fn read_wqe(
    mem: &dyn DmaMem,
    s: &Snap,
    pi: u16,
    buf: &mut [u8; MAX_SQ_WQE],
) -> Result<Wqe, WqeErr> {
    let q = &s.q;
    let first = buf.get_mut(..64).ok_or(WqeErr::Fault)?;
    if !q.sq.read(mem, &q.buf, u32::from(q.sq_ci), first) {
        return Err(WqeErr::Fault);
    }
    let ds = usize::from(buf.get(7).copied().unwrap_or(0) & 0x3f);
    let len = ds * 16;
    let nbb = u16::try_from(len.div_ceil(64)).unwrap_or(u16::MAX);
    let mut imm = [0u8; 4];
    imm.copy_from_slice(buf.get(12..16).unwrap_or(&[0; 4]));
    let mut w = Wqe {
        opcode: buf.get(3).copied().unwrap_or(0),
        idx: be16(buf, 1),
        len,
        nbb,
        flags: buf.get(11).copied().unwrap_or(0),
        imm,
    };
    let avail = pi.wrapping_sub(q.sq_ci);
    if ds == 0 || len > MAX_SQ_WQE || nbb > avail || u32::from(nbb) > q.sq.entries() {
        w.nbb = 1;
        return Err(WqeErr::Bad(w));
    }
    for b in 1..nbb {
        let o = usize::from(b) * 64;
        let blk = buf.get_mut(o..o + 64).ok_or(WqeErr::Fault)?;
        if !q
            .sq
            .read(mem, &q.buf, u32::from(q.sq_ci.wrapping_add(b)), blk)
        {
            return Err(WqeErr::Fault);
        }
    }
    Ok(w)
}

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
            Some(n) => exec_umr(n.fw, &s, &w, &buf),
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
    if s.st == QPC_ST_QP0 {
        if let Some(r) = super::smp::switched(nodes, ni, s, &m) {
            return r;
        }
    }
    let (lid, gid, _) = m.dest;
    let Some(n) = nodes.get(ni) else {
        return ReqRes::Lost;
    };
    let version = n.fw.roce_version(s.port, sgid_index);
    let Some((di, dport)) = route(nodes, n.fw.cfg.link_layer, lid, &gid, version) else {
        // No function holds the GID: UD and UC messages leave as packets (`wire.rs`).
        if m.eth && m.svc == Service::Ud {
            return super::wire::send_ud(nodes, ni, s, &m);
        }
        if m.eth && m.svc == Service::Uc {
            return super::wire::send_uc(nodes, ni, s, &m);
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

/// The message of WQE `w` (bytes in `buf`) of requester `s`, a QP of `fw`, checked on the
/// requester's side: the opcode against the service (`LOCAL_QP_OP_ERR`), the gather list
/// against the keys (`LOCAL_PROT_ERR`), the length against the largest message
/// (`LOCAL_LENGTH_ERR`, and an atomic's list must hold 8 bytes). `Err` with what the WQE
/// completes with instead (a NOP completes at once).
fn message<'b>(fw: &Fw, s: &Snap, w: &Wqe, buf: &'b [u8]) -> Result<Message<'b>, ReqRes> {
    let eth = fw.cfg.link_layer == LinkLayer::Ethernet;
    let svc = match s.st {
        QPC_ST_UD | QPC_ST_QP0 | QPC_ST_QP1 => Service::Ud,
        QPC_ST_RC => Service::Rc,
        QPC_ST_XRC => Service::Xrc,
        QPC_ST_DCI => Service::Dc,
        _ => Service::Uc,
    };
    let ud = svc == Service::Ud;
    let dc = svc == Service::Dc;
    use wqe_op::*;
    // An XRC initiator's WQE has `struct mlx5_wqe_xrc_seg` (16 bytes: the remote XRC SRQ
    // number, big-endian, then reserved) right after the control segment; a DCI's the
    // datagram segment (`mlx5_av`, 16 or 48 bytes, `dct.rs`).
    let x = match svc {
        Service::Xrc => XRC_SEG,
        Service::Dc => av_len(buf.get(16..).unwrap_or(&[])),
        _ => 0,
    };
    let (seg_start, need) = match (w.opcode, s.st) {
        (NOP, _) => return Err(ReqRes::Ok { byte_cnt: 0 }),
        (SEND | SEND_IMM, QPC_ST_UD | QPC_ST_QP0 | QPC_ST_QP1) => (16 + 48, Access::LOCAL_READ),
        (SEND | SEND_IMM, QPC_ST_RC | QPC_ST_UC | QPC_ST_XRC | QPC_ST_DCI) => {
            (16 + x, Access::LOCAL_READ)
        }
        (SEND_INVAL, QPC_ST_RC | QPC_ST_XRC) => (16 + x, Access::LOCAL_READ),
        (RDMA_WRITE | RDMA_WRITE_IMM, QPC_ST_RC | QPC_ST_UC | QPC_ST_XRC | QPC_ST_DCI) => {
            (32 + x, Access::LOCAL_READ)
        }
        (RDMA_READ, QPC_ST_RC | QPC_ST_XRC | QPC_ST_DCI) => (32 + x, Access::LOCAL_WRITE),
        (ATOMIC_CS | ATOMIC_FA, QPC_ST_RC | QPC_ST_XRC | QPC_ST_DCI) => {
            (48 + x, Access::LOCAL_WRITE)
        }
        _ => return Err(ReqRes::Err(syn::LOCAL_QP_OP)),
    };
    // What follows the control (and XRC) segment.
    let body = buf.get(x..).unwrap_or(&[]);
    let Some(segs) = buf.get(seg_start..w.len) else {
        return Err(ReqRes::Err(syn::LOCAL_QP_OP));
    };
    let total = check_sgl(fw, s.pd, segs, false, need).map_err(ReqRes::Err)?;
    let atomic = matches!(w.opcode, ATOMIC_CS | ATOMIC_FA);
    if atomic && total < 8 {
        return Err(ReqRes::Err(syn::LOCAL_LENGTH));
    }
    let len = if atomic { 8 } else { total };
    let max = if ud {
        u64::from(fw.ud_mtu(s.port))
    } else {
        1u64.checked_shl(s.log_msg_max).unwrap_or(u64::MAX)
    };
    if len > max {
        return Err(ReqRes::Err(syn::LOCAL_LENGTH));
    }
    let av = ud.then(|| Av::parse(buf.get(16..64).unwrap_or(&[]), eth));
    // A DCI's destination: the AV's LID or GID and DCT number, its DC access key.
    let dc_av = dc.then(|| Av::parse(buf.get(16..16 + x).unwrap_or(&[]), eth));
    Ok(Message {
        opcode: w.opcode,
        svc,
        eth,
        imm: w.imm,
        solicited: w.flags & ctrl::SOLICITED != 0,
        len,
        segs,
        // The remote address segment of RDMA and atomic WQEs, then the atomic segment.
        remote: (be64(body, 16), be32(body, 24)),
        swap_add: be64(body, 32),
        compare: be64(body, 40),
        xrc_srqn: be32(buf, 16) & 0x00ff_ffff,
        dc_key: if dc { be64(buf, 16) } else { 0 },
        av,
        dest: match av.or(dc_av) {
            Some(a) => (a.rlid, a.rgid, a.dqpn),
            None => (s.rlid, s.rgid, s.remote_qpn),
        },
    })
}
