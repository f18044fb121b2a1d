// SPDX-License-Identifier: GPL-2.0

//! The responder: a message at its destination QP. [`receive`] finds the QP the message
//! names and checks it may take it (the service and state, an XRC message's SRQ, a UD
//! message's Q_Key); then a SEND (or a WRITE with immediate) consumes a receive WQE from the
//! QP's RQ or its SRQ, a WRITE, READ or atomic executes against the responder's memory under
//! its rkey and access rights. The responder writes its own receive CQEs and raises its own
//! events; what it answers the requester is a [`ReqRes`] (ACK, NAK, RNR NAK, or nothing).
//! Mirrors upstream's `rxe_resp.c`.

use super::completer::{push_cqe, rnr_timer_ns, ReqRes};
use super::fabric::{q_count, Node};
use super::mem::{check_sgl, remote_key, skip_bytes, transfer, Cur, Fault};
use super::message::{Message, Service};
use super::qp_state::{be16, bump_psn, packets, qp_mut, snap, to_err, Av, Snap};
use super::umr::remote_invalidate;
use crate::fwsim::cqe::Cqe;
use crate::fwsim::dma::DmaMem;
use crate::fwsim::events::{QpEvent, SrqEvent};
use crate::fwsim::srq::{SrqWqe, NEXT_SEG};
use crate::fwsim::xlat::Access;
use crate::fwsim::{capacity, Fw, QCnt};
use crate::prm::consts::{
    QPC_STATE_RTR, QPC_STATE_RTS, QPC_ST_DCT, QPC_ST_QP0, QPC_ST_QP1, QPC_ST_RC, QPC_ST_UC,
    QPC_ST_UD, QPC_ST_XRC,
};
use crate::prm::ctx::qpc;
use crate::prm::wqe::{cqe_off, cqe_op, syndrome as syn, wqe_op};

/// Largest RQ WQE read (`cmd_hca_cap.max_wqe_sz_rq`); a larger stride is read in part.
pub(super) const MAX_RQ_WQE: usize = 512;

/// Bytes of the GRH a UD receive buffer starts with.
const GRH_BYTES: u32 = 40;

/// The responder's next receive WQE, if one is posted: its scatter entries in `buf` (up to the
/// stride) and their length. From an SRQ: the WQE at the SRQ's head, recorded in `d` (its index
/// for the CQE, and what consuming it needs). `Err` when the queue cannot be read.
pub(super) fn rq_wqe(
    mem: &dyn DmaMem,
    fw: &Fw,
    d: &mut Snap,
    buf: &mut [u8; MAX_RQ_WQE],
) -> Result<Option<usize>, ()> {
    if let Some(srqn) = d.q.srq {
        let r = match fw.rmps.get(srqn) {
            Some(r) => &r.q,
            None => &fw.xrc.srq(srqn).ok_or(())?.q,
        };
        let posted = (r.buf.db(mem, 0).ok_or(())? & 0xffff) as u16;
        if posted == r.ci {
            return Ok(None);
        }
        let n = r.ring.stride().min(MAX_RQ_WQE);
        let wqe = buf.get_mut(..n).ok_or(())?;
        let idx = r.next_idx();
        if !r.ring.read(mem, &r.buf, u32::from(idx), wqe) {
            return Err(());
        }
        let w = SrqWqe {
            idx,
            next: be16(buf, 2),
        };
        d.rwqe_idx = w.idx;
        d.srq_wqe = Some((w, posted));
        buf.copy_within(NEXT_SEG..n, 0);
        return Ok(Some(n - NEXT_SEG));
    }
    if !d.q.has_rq {
        return Ok(None);
    }
    let head = d.q.buf.db(mem, 0).ok_or(())? & 0xffff;
    if head as u16 == d.q.rq_ci {
        return Ok(None);
    }
    let n = d.q.rq.stride().min(MAX_RQ_WQE);
    let wqe = buf.get_mut(..n).ok_or(())?;
    if !d.q.rq.read(mem, &d.q.buf, u32::from(d.q.rq_ci), wqe) {
        return Err(());
    }
    Ok(Some(n))
}

/// Consumes the receive WQE `d` took: the RQ consumer counter, or the SRQ's head (with the
/// limit event when that crossed the armed limit).
fn consume_rq(fw: &mut Fw, d: &Snap) {
    if let (Some(srqn), Some((w, posted))) = (d.q.srq, d.srq_wqe) {
        let slot = fw.rmps.slot_of(srqn);
        if slot.is_none() {
            // An XRC SRQ (no limit is ever armed on one: no ARM_XRC_SRQ in the model).
            if let Some(x) = fw.xrc.srq_mut(srqn) {
                x.q.consume(w, posted);
            }
            return;
        }
        let fired = fw
            .rmps
            .get_mut(srqn)
            .is_some_and(|r| r.q.consume(w, posted));
        if let (true, Some(slot)) = (fired, slot) {
            fw.events.srq(slot, SrqEvent::Limit);
        }
    } else if let Some(q) = qp_mut(fw, d.slot) {
        q.q.rq_ci = q.q.rq_ci.wrapping_add(1);
    }
}

/// The responder's part of an error: an error CQE for a consumed receive WQE (if any), the
/// QP to ERR, and an affiliated event (if any).
pub(super) fn resp_fail(
    nodes: &mut [Node<'_>],
    di: usize,
    d: &Snap,
    cqe: Option<u8>,
    event: Option<QpEvent>,
) {
    let Some(n) = nodes.get_mut(di) else {
        return;
    };
    if let Some(s) = cqe {
        let c = Cqe::error(false, s, 0, d.qpn, d.rwqe_idx, d.q.user_index);
        consume_rq(n.fw, d);
        push_cqe(n.fw, n.mem, d.recv_cq, &c, false);
    }
    to_err(n.fw, d.slot);
    if event == Some(QpEvent::WqAccess) {
        n.fw.q_count(d.cnt_set, QCnt::RespRemoteAccess);
    }
    if let Some(e) = event {
        n.fw.events.qp(d.slot, e);
    }
}

/// The responder's part of a delivered message: PSN, COMM_EST, and a CQE for a consumed
/// receive WQE.
pub(super) fn resp_ok(
    nodes: &mut [Node<'_>],
    di: usize,
    d: &Snap,
    cqe: Option<(Cqe, bool)>,
    pkts: u32,
) {
    let Some(n) = nodes.get_mut(di) else {
        return;
    };
    if matches!(d.st, QPC_ST_RC | QPC_ST_UC | QPC_ST_XRC) {
        bump_psn(n.fw, d.slot, qpc::next_rcv_psn, pkts);
    }
    if d.state == QPC_STATE_RTR && !d.q.comm_est {
        n.fw.events.qp(d.slot, QpEvent::CommEst);
    }
    if let Some(q) = qp_mut(n.fw, d.slot) {
        q.q.comm_est = true;
    }
    if cqe.is_some() {
        consume_rq(n.fw, d);
    }
    if let Some((c, sol)) = cqe {
        push_cqe(n.fw, n.mem, d.recv_cq, &c, sol);
    }
}

/// A responder CQE for receive WQE `d.rwqe_idx`.
fn resp_cqe(d: &Snap, s: &Snap, opcode: u8, byte_cnt: u32, imm: Option<[u8; 4]>) -> Cqe {
    let mut c = Cqe::new(opcode, 0, d.qpn, d.rwqe_idx, d.q.user_index);
    c.put32(cqe_off::BYTE_CNT, byte_cnt);
    if let Some(i) = imm {
        c.put(cqe_off::IMM, &i);
    }
    c.put32(
        cqe_off::FLAGS_RQPN,
        (u32::from(s.sl & 0xf) << 24) | wire_qpn(s),
    );
    c
}

/// The source QPN a message carries: 0 for the SMI QP, 1 for the GSI QP, else the QP's
/// number.
pub(super) fn wire_qpn(s: &Snap) -> u32 {
    match s.st {
        QPC_ST_QP0 => 0,
        QPC_ST_QP1 => 1,
        _ => s.qpn & 0x00ff_ffff,
    }
}

/// Executes message `m` of requester `s` (on node `ni`) at node `di`, where it was routed.
pub(super) fn receive(
    nodes: &mut [Node<'_>],
    ni: usize,
    s: &Snap,
    m: &Message<'_>,
    di: usize,
) -> ReqRes {
    let Some(mut d) = nodes.get(di).and_then(|n| dest_qp(n.fw, s, m)) else {
        return m.dropped();
    };
    if !same_roce_version(nodes, ni, s, di, &d, m) {
        return m.dropped();
    }
    if m.svc == Service::Xrc {
        if let Err(r) = xrc_target(nodes, di, &mut d, m) {
            return r;
        }
    }
    if m.svc == Service::Dc && !dc_key_matches(nodes, di, &d, m) {
        // A DC key violation: dropped without an answer (`fwsim/dct.rs`).
        return m.dropped();
    }
    if !qkey_matches(s, &d, m) {
        return m.dropped();
    }
    use wqe_op::*;
    let mut rbuf = [0u8; MAX_RQ_WQE];
    let mut rlen = 0;
    if matches!(m.opcode, SEND | SEND_IMM | SEND_INVAL | RDMA_WRITE_IMM) {
        // These consume a receive WQE.
        rlen = match take_rwqe(nodes, di, &mut d, m, &mut rbuf) {
            Ok(n) => n,
            Err(r) => return r,
        };
    }
    let e = Ends { ni, s, di, d };
    match m.opcode {
        SEND | SEND_IMM | SEND_INVAL => send(nodes, m, &e, rbuf.get(..rlen).unwrap_or(&[])),
        RDMA_WRITE_IMM => write(nodes, m, &e, true),
        RDMA_WRITE => write(nodes, m, &e, false),
        RDMA_READ => read(nodes, m, &e),
        ATOMIC_CS | ATOMIC_FA => atomic(nodes, m, &e),
        _ => ReqRes::Err(syn::LOCAL_QP_OP),
    }
}

/// SMP `mad` that the fabric's switch passes on (`smp.rs`) at the QP0 of (0-based) port
/// `port` of node `di`, from `slid`: a UD receive (the GRH area skipped), source QPN 0, SL 0.
/// Without a receive posted it is dropped (counted as out of buffer); a receive WQE too small
/// or not writable fails as a SEND's would. Whether it arrived.
pub(super) fn receive_smp(
    nodes: &mut [Node<'_>],
    di: usize,
    port: usize,
    mad: &[u8],
    slid: u16,
) -> bool {
    receive_mad(nodes, di, port, mad, slid, QPC_ST_QP0)
}

/// [`receive_smp`] for QP0 (`st` [`QPC_ST_QP0`]) or QP1 ([`QPC_ST_QP1`], a GMP: source QPN
/// 1).
pub(super) fn receive_mad(
    nodes: &mut [Node<'_>],
    di: usize,
    port: usize,
    mad: &[u8],
    slid: u16,
    st: u32,
) -> bool {
    let Some(mut d) = nodes.get(di).and_then(|n| {
        (0..capacity::QP).find_map(|i| {
            let d = snap(n.fw, i)?;
            (d.st == st && d.port == port && matches!(d.state, QPC_STATE_RTR | QPC_STATE_RTS))
                .then_some(d)
        })
    }) else {
        return false;
    };
    let need = mad.len() as u64 + u64::from(GRH_BYTES);
    if write_rwqe(nodes, di, &mut d, Lead::Skip(GRH_BYTES), mad, need).is_err() {
        return false;
    }
    let mut c = Cqe::new(cqe_op::RESP_SEND, 0, d.qpn, d.rwqe_idx, d.q.user_index);
    c.put32(cqe_off::BYTE_CNT, u32::try_from(need).unwrap_or(u32::MAX));
    // No GRH, SL 0, source QPN 0 (QP1: 1).
    c.put32(cqe_off::FLAGS_RQPN, u32::from(st == QPC_ST_QP1));
    c.put16(cqe_off::SLID, slid);
    resp_ok(nodes, di, &d, Some((c, false)), 1);
    true
}

/// What a receive buffer holds before a message's bytes.
#[derive(Clone, Copy)]
pub(super) enum Lead<'a> {
    /// Nothing.
    Nothing,
    /// Bytes left as they are (the GRH area of a receive without a GRH, the part of a
    /// multi-packet SEND that earlier packets wrote).
    Skip(u32),
    /// Bytes written (the GRH area of a UD receive with one).
    Bytes(&'a [u8]),
}

/// Why [`write_rwqe`] wrote nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RwqeErr {
    /// No receive WQE is posted (counted as out of buffer).
    NoWqe,
    /// The queue could not be read: the QP is in ERR with a catastrophic error.
    Catas,
    /// The scatter list failed with this syndrome (too short: `LOCAL_LENGTH`): the WQE
    /// completed in error and the QP is in ERR.
    Failed(u8),
}

/// Writes `data` after `lead` into the next receive WQE of `d` on node `di`, whose list must
/// hold `need` bytes (the whole message's); the WQE is not consumed (`resp_ok` does that
/// with its CQE). `d` records the WQE taken (its index, an SRQ's head).
pub(super) fn write_rwqe(
    nodes: &mut [Node<'_>],
    di: usize,
    d: &mut Snap,
    lead: Lead<'_>,
    data: &[u8],
    need: u64,
) -> Result<(), RwqeErr> {
    let mut rbuf = [0u8; MAX_RQ_WQE];
    let got = match nodes.get(di) {
        Some(n) => rq_wqe(n.mem, n.fw, d, &mut rbuf),
        None => return Err(RwqeErr::NoWqe),
    };
    let rlen = match got {
        Ok(Some(k)) => k,
        Ok(None) => {
            q_count(nodes, di, d.cnt_set, QCnt::OutOfBuffer);
            return Err(RwqeErr::NoWqe);
        }
        Err(()) => {
            resp_fail(nodes, di, d, None, Some(QpEvent::WqCatas));
            return Err(RwqeErr::Catas);
        }
    };
    let rsegs = rbuf.get(..rlen).unwrap_or(&[]);
    let written = match nodes.get(di) {
        Some(n) => match check_sgl(n.fw, d.pd, rsegs, true, Access::LOCAL_WRITE) {
            Err(e) => Err(e),
            Ok(cap) if cap < need => Err(syn::LOCAL_LENGTH),
            Ok(_) => {
                let mut dst = Cur::sgl(n.fw, rsegs, true, d.pd);
                let led = match lead {
                    Lead::Nothing => Ok(()),
                    Lead::Skip(k) => skip_bytes(&mut dst, k).map_err(|_| ()),
                    Lead::Bytes(b) => dst.write(n.mem, b),
                };
                if led.is_ok() && dst.write(n.mem, data).is_ok() {
                    Ok(())
                } else {
                    Err(syn::LOCAL_PROT)
                }
            }
        },
        None => return Err(RwqeErr::NoWqe),
    };
    if let Err(e) = written {
        resp_fail(nodes, di, d, Some(e), None);
        return Err(RwqeErr::Failed(e));
    }
    Ok(())
}

/// The two ends of a message at the responder: requester `s` on node `ni`, and `d`, the
/// destination QP as it receives (as its XRC SRQ for an XRC message), on node `di`.
struct Ends<'a> {
    ni: usize,
    s: &'a Snap,
    di: usize,
    d: Snap,
}

/// The QP of function `fw` that message `m` of `s` is for, if it takes messages of that
/// service (UD and GSI QPs are one service) and is in RTR or RTS. QP0 (the SMI QP, on VL15)
/// talks only to QP0: an SMP is for QPN 0, and nothing else reaches it.
fn dest_qp(fw: &Fw, s: &Snap, m: &Message<'_>) -> Option<Snap> {
    let ud = m.svc == Service::Ud;
    let (_, _, dqpn) = m.dest;
    // A DC message is for an ACTIVE DCT (kept in the QP table, `fwsim/dct.rs`).
    if m.svc == Service::Dc {
        let d = snap(fw, fw.qps.slot_of(dqpn)?)?;
        return (d.st == QPC_ST_DCT && d.state == QPC_STATE_RTR).then_some(d);
    }
    if (s.st == QPC_ST_QP0) != (ud && dqpn == 0) {
        return None;
    }
    // QPNs 0 and 1 are the destination's SMI and GSI QPs, whatever numbers CREATE_QP gave
    // them.
    let special = match dqpn {
        0 => Some(QPC_ST_QP0),
        1 => Some(QPC_ST_QP1),
        _ => None,
    };
    let slot = match special {
        Some(st) if ud => (0..capacity::QP).find(|&i| {
            fw.qps
                .at_slot(i)
                .is_some_and(|(_, q)| qpc::st.get(&q.qpc) == Ok(st))
        })?,
        _ => fw.qps.slot_of(dqpn)?,
    };
    let d = snap(fw, slot)?;
    let gsi_ud = |st| matches!(st, QPC_ST_UD | QPC_ST_QP1);
    let same = d.st == s.st || (ud && gsi_ud(d.st) && gsi_ud(s.st));
    (same && matches!(d.state, QPC_STATE_RTR | QPC_STATE_RTS)).then_some(d)
}

/// Whether a connected QP `d` on node `di` takes message `m` of `s` (on node `ni`) on RoCE: a
/// ConnectX QP sends and receives the framing of its path's source GID entry (RoCE v1: a GRH
/// after Ethertype 0x8915; v2: IP and UDP), so a v1 message never reaches a v2 QP or the
/// other way round (the requester sees no ACK). UD QPs take either. A DC message goes out
/// with its address vector's GID index and a DCT takes the framing of its context's
/// `my_addr_index` (the source address index of `d`'s path).
fn same_roce_version(
    nodes: &[Node<'_>],
    ni: usize,
    s: &Snap,
    di: usize,
    d: &Snap,
    m: &Message<'_>,
) -> bool {
    if !m.eth || m.svc == Service::Ud {
        return true;
    }
    let sent = nodes
        .get(ni)
        .and_then(|n| n.fw.roce_version(s.port, m.sgid_index));
    let own = nodes
        .get(di)
        .and_then(|n| n.fw.roce_version(d.port, d.sgid_index));
    sent.is_some() && sent == own
}

/// The XRCETH of message `m` at target QP `d`: the XRC SRQ must exist and be in the target
/// QP's XRC domain (an initiator, with a send queue, is no target); `d` then receives as the
/// SRQ does (from it, in its PD, onto its CQ, with its user index). Otherwise an Invalid
/// Request NAK.
fn xrc_target(
    nodes: &mut [Node<'_>],
    di: usize,
    d: &mut Snap,
    m: &Message<'_>,
) -> Result<(), ReqRes> {
    if !receive_as_xrc_srq(nodes, di, d, m.xrc_srqn) {
        resp_fail(nodes, di, d, None, Some(QpEvent::WqInvalReq));
        return Err(ReqRes::Err(syn::REMOTE_INVAL_REQ));
    }
    Ok(())
}

/// Target QP `d` on node `di` receiving as XRC SRQ `srqn` does (from it, in its PD, onto its
/// CQ, with its user index): whether the SRQ exists in `d`'s XRC domain and `d` is a target
/// (an initiator, with a send queue, is none). Also RC in packets' (`rc.rs`).
pub(super) fn receive_as_xrc_srq(nodes: &[Node<'_>], di: usize, d: &mut Snap, srqn: u32) -> bool {
    let x = nodes.get(di).and_then(|n| {
        let ini = n.fw.qps.at_slot(d.slot)?.1.q.has_sq;
        n.fw.xrc
            .srq(srqn)
            .filter(|x| !ini && x.xrcd == d.xrcd)
            .copied()
    });
    let Some(x) = x else {
        return false;
    };
    d.q.srq = Some(srqn);
    d.pd = x.pd;
    d.recv_cq = Some(x.cqn);
    d.q.user_index = x.user_index;
    true
}

/// Whether DC message `m` carries the access key of DCT `d` (on node `di`); a violation is
/// counted in the DCT's context (`dc_access_key_violation_count`).
fn dc_key_matches(nodes: &mut [Node<'_>], di: usize, d: &Snap, m: &Message<'_>) -> bool {
    let Some(dct) = nodes
        .get_mut(di)
        .and_then(|n| qp_mut(n.fw, d.slot))
        .and_then(|q| q.dct.as_mut())
    else {
        return false;
    };
    if dct.key() == m.dc_key {
        return true;
    }
    dct.count_violation();
    false
}

/// Whether a UD message carries the Q_Key of its destination `d` (any other is dropped). A
/// Q_Key with the high bit set means "use the QP's own" (IB spec 10.2.5); QP0 takes any.
fn qkey_matches(s: &Snap, d: &Snap, m: &Message<'_>) -> bool {
    let Some(a) = m.av else {
        return true;
    };
    // QP0 checks no Q_Key (IBA 10.2.5: SMPs carry none that matters).
    if d.st == QPC_ST_QP0 {
        return true;
    }
    let qkey = if a.qkey & 0x8000_0000 != 0 {
        s.q_key
    } else {
        a.qkey
    };
    qkey == d.q_key
}

/// Takes the receive WQE a SEND or WRITE with immediate consumes at `d`: its scatter list
/// in `rbuf` and that list's length. When none is posted, an RNR NAK (an unreliable message
/// is dropped); when the queue cannot be read, the QP (and its SRQ) have a catastrophic
/// error and no answer comes.
fn take_rwqe(
    nodes: &mut [Node<'_>],
    di: usize,
    d: &mut Snap,
    m: &Message<'_>,
    rbuf: &mut [u8; MAX_RQ_WQE],
) -> Result<usize, ReqRes> {
    let (dmem, dfw): (&dyn DmaMem, &Fw) = match nodes.get(di) {
        Some(n) => (n.mem, n.fw),
        None => return Err(m.dropped()),
    };
    match rq_wqe(dmem, dfw, d, rbuf) {
        Ok(Some(n)) => Ok(n),
        Ok(None) => {
            q_count(nodes, di, d.cnt_set, QCnt::OutOfBuffer);
            Err(m.nak(ReqRes::Rnr(rnr_timer_ns(d.min_rnr_nak))))
        }
        Err(()) => {
            if let Some(n) = d.q.srq.and_then(|r| Some((r, nodes.get_mut(di)?))) {
                if let Some(slot) = n.1.fw.rmps.slot_of(n.0) {
                    n.1.fw.events.srq(slot, SrqEvent::Catas);
                }
            }
            resp_fail(nodes, di, d, None, Some(QpEvent::WqCatas));
            Err(m.dropped())
        }
    }
}

/// A SEND (with immediate, with invalidate) into the receive WQE `d` took, whose scatter list
/// is `rsegs`: the list checked against the responder's keys and its room, the data moved
/// (after the GRH area of a UD receive), the rkey of a SEND with invalidate invalidated, and
/// the receive CQE.
fn send(nodes: &mut [Node<'_>], m: &Message<'_>, e: &Ends<'_>, rsegs: &[u8]) -> ReqRes {
    let (ni, s, di, d) = (e.ni, e.s, e.di, &e.d);
    let need_bytes = m.len
        + if m.svc == Service::Ud {
            u64::from(GRH_BYTES)
        } else {
            0
        };
    let dfw: &Fw = match nodes.get(di) {
        Some(n) => n.fw,
        None => return m.dropped(),
    };
    let cap = match check_sgl(dfw, d.pd, rsegs, true, Access::LOCAL_WRITE) {
        Ok(c) => c,
        Err(e) => {
            resp_fail(nodes, di, d, Some(e), None);
            return m.nak(ReqRes::Err(syn::REMOTE_OP));
        }
    };
    if cap < need_bytes {
        resp_fail(nodes, di, d, Some(syn::LOCAL_LENGTH), None);
        return m.nak(ReqRes::Err(syn::REMOTE_INVAL_REQ));
    }
    let (Some(rn), Some(dn)) = (nodes.get(ni), nodes.get(di)) else {
        return m.dropped();
    };
    let moved = scatter(rn, dn, s, m, d, rsegs);
    let cqe = send_cqe(rn.fw, s, m, d);
    if moved.is_ok() && m.opcode == wqe_op::SEND_INVAL {
        let key = u32::from_be_bytes(m.imm);
        let ok = nodes
            .get_mut(di)
            .is_some_and(|n| remote_invalidate(n.fw, key, d));
        if !ok {
            resp_fail(nodes, di, d, Some(syn::REMOTE_INVAL_REQ), None);
            return ReqRes::Err(syn::REMOTE_INVAL_REQ);
        }
    }
    match moved {
        Ok(()) => {
            resp_ok(nodes, di, d, Some((cqe, m.solicited)), m.packets(s.mtu));
            ReqRes::Ok {
                byte_cnt: m.byte_cnt(),
            }
        }
        Err(Fault::Src) => ReqRes::Err(syn::LOCAL_PROT),
        Err(Fault::Dst) => {
            resp_fail(nodes, di, d, Some(syn::LOCAL_PROT), None);
            m.nak(ReqRes::Err(syn::REMOTE_OP))
        }
    }
}

/// Moves the data of SEND `m` from requester `rn` into the scatter list `rsegs` of the
/// receive WQE at responder `dn`: a UD receive starts with the GRH area (the GRH when the
/// message has one, else skipped).
fn scatter(
    rn: &Node<'_>,
    dn: &Node<'_>,
    s: &Snap,
    m: &Message<'_>,
    d: &Snap,
    rsegs: &[u8],
) -> Result<(), Fault> {
    let mut src = Cur::sgl(rn.fw, m.segs, false, s.pd);
    let mut dst = Cur::sgl(dn.fw, rsegs, true, d.pd);
    if m.svc == Service::Ud {
        let grh = m.av.is_some_and(|a| a.grh);
        let hdr = match m.av {
            Some(a) if grh => rn.fw.grh_bytes(s, &a, m.len),
            _ => None,
        };
        let hdr = hdr.unwrap_or([0u8; 40]);
        if grh {
            dst.write(dn.mem, &hdr).map_err(|()| Fault::Dst)?;
        } else {
            // Without a GRH its area is skipped, not written.
            skip_bytes(&mut dst, GRH_BYTES)?;
        }
    }
    transfer(&mut src, rn.mem, &mut dst, dn.mem, m.len)
}

/// The receive CQE of SEND `m` from requester `s` (a function of `rfw`) at `d`. A UD
/// receive's says whether a GRH came (on RoCE: which L3 header) and the SL; an InfiniBand
/// receive's the source LID.
fn send_cqe(rfw: &Fw, s: &Snap, m: &Message<'_>, d: &Snap) -> Cqe {
    let (ud, eth) = (m.svc == Service::Ud, m.eth);
    let (opc, imm) = match m.opcode {
        wqe_op::SEND_IMM => (cqe_op::RESP_SEND_IMM, Some(m.imm)),
        wqe_op::SEND_INVAL => (cqe_op::RESP_SEND_INV, Some(m.imm)),
        _ => (cqe_op::RESP_SEND, None),
    };
    let bc = m.byte_cnt().saturating_add(if ud { GRH_BYTES } else { 0 });
    let mut c = resp_cqe(d, s, opc, bc, imm);
    if ud {
        let grh = m.av.is_some_and(|a| a.grh);
        let (g, sl) = match (eth, grh) {
            (true, _) => (1, rfw.roce_l3(s, m.av)),
            (false, true) => (1, s_sl(m.av)),
            (false, false) => (0, s_sl(m.av)),
        };
        c.put32(
            cqe_off::FLAGS_RQPN,
            (g << 28) | (u32::from(sl & 0xf) << 24) | wire_qpn(s),
        );
    }
    if !eth {
        c.put16(cqe_off::SLID, rfw.port_lid(s.port));
    }
    c
}

/// An RDMA READ: the responder's region under the rkey (remote read rights, range) read
/// into the requester's scatter list.
fn read(nodes: &mut [Node<'_>], m: &Message<'_>, e: &Ends<'_>) -> ReqRes {
    let (ni, s, di, d) = (e.ni, e.s, e.di, &e.d);
    let (raddr, rkey) = m.remote;
    let (len, pkts) = (m.len, m.packets(s.mtu));
    let (Some(rn), Some(dn)) = (nodes.get(ni), nodes.get(di)) else {
        return m.dropped();
    };
    let info = match remote_key(dn.fw, rkey, d) {
        Some(i) if d.rre && i.access.allows(Access::REMOTE_READ) => i,
        _ if len == 0 && d.rre => {
            resp_ok(nodes, di, d, None, pkts);
            return ReqRes::Ok { byte_cnt: 0 };
        }
        _ => {
            resp_fail(nodes, di, d, None, Some(QpEvent::WqAccess));
            return ReqRes::Err(syn::REMOTE_ACCESS);
        }
    };
    if !info.covers(raddr, len) {
        resp_fail(nodes, di, d, None, Some(QpEvent::WqAccess));
        return ReqRes::Err(syn::REMOTE_ACCESS);
    }
    let mut src = Cur::region(info, raddr);
    let mut dst = Cur::sgl(rn.fw, m.segs, false, s.pd);
    match transfer(&mut src, dn.mem, &mut dst, rn.mem, len) {
        Ok(()) => {
            resp_ok(nodes, di, d, None, pkts);
            q_count(nodes, di, d.cnt_set, QCnt::RxRead);
            ReqRes::Ok {
                byte_cnt: m.byte_cnt(),
            }
        }
        Err(Fault::Src) => {
            resp_fail(nodes, di, d, None, Some(QpEvent::WqAccess));
            ReqRes::Err(syn::REMOTE_ACCESS)
        }
        Err(Fault::Dst) => ReqRes::Err(syn::LOCAL_PROT),
    }
}

/// An atomic (compare and swap, fetch and add) on the 8 aligned bytes at the remote address
/// under the rkey (remote atomic rights, range); the original value lands in the requester's
/// scatter list.
fn atomic(nodes: &mut [Node<'_>], m: &Message<'_>, e: &Ends<'_>) -> ReqRes {
    let (ni, s, di, d) = (e.ni, e.s, e.di, &e.d);
    let (raddr, rkey) = m.remote;
    let (Some(rn), Some(dn)) = (nodes.get(ni), nodes.get(di)) else {
        return m.dropped();
    };
    if !raddr.is_multiple_of(8) {
        resp_fail(nodes, di, d, None, Some(QpEvent::WqInvalReq));
        return ReqRes::Err(syn::REMOTE_INVAL_REQ);
    }
    let bus = match remote_key(dn.fw, rkey, d) {
        Some(i) if d.rae && i.access.allows(Access::ATOMIC) && i.covers(raddr, 8) => {
            i.translate(raddr).map(|(b, _)| b)
        }
        _ => None,
    };
    let old = bus.and_then(|b| {
        if m.opcode == wqe_op::ATOMIC_CS {
            dn.mem.cmp_swap64(b, m.compare, m.swap_add).ok()
        } else {
            dn.mem.fetch_add64(b, m.swap_add).ok()
        }
    });
    let Some(old) = old else {
        resp_fail(nodes, di, d, None, Some(QpEvent::WqAccess));
        return ReqRes::Err(syn::REMOTE_ACCESS);
    };
    let mut dst = Cur::sgl(rn.fw, m.segs, false, s.pd);
    let wrote = dst.write(rn.mem, &old.to_le_bytes());
    resp_ok(nodes, di, d, None, 1);
    q_count(nodes, di, d.cnt_set, QCnt::RxAtomic);
    match wrote {
        Ok(()) => ReqRes::Ok { byte_cnt: 8 },
        Err(()) => ReqRes::Err(syn::LOCAL_PROT),
    }
}

/// The SL a UD receiver reports.
fn s_sl(av: Option<Av>) -> u8 {
    av.map_or(0, |a| a.sl)
}

/// RDMA WRITE and WRITE with immediate (`imm`: the immediate's receive WQE was found): the
/// requester's data written to the responder's region under the rkey (remote write rights,
/// range).
fn write(nodes: &mut [Node<'_>], m: &Message<'_>, e: &Ends<'_>, imm: bool) -> ReqRes {
    let (ni, s, di, d) = (e.ni, e.s, e.di, &e.d);
    let (raddr, rkey) = m.remote;
    let len = m.len;
    let byte_cnt = m.byte_cnt();
    let bad = |nodes: &mut [Node<'_>]| {
        if m.svc.reliable() {
            resp_fail(nodes, di, d, None, Some(QpEvent::WqAccess));
        }
        m.nak(ReqRes::Err(syn::REMOTE_ACCESS))
    };
    let (Some(rn), Some(dn)) = (nodes.get(ni), nodes.get(di)) else {
        return ReqRes::Lost;
    };
    // A zero-length WRITE is not checked against the R_Key (IB spec 9.7.4.1.5).
    let moved = if len == 0 {
        if !d.rwe {
            return bad(nodes);
        }
        Ok(())
    } else {
        let info = match remote_key(dn.fw, rkey, d) {
            Some(i) if d.rwe && i.access.allows(Access::REMOTE_WRITE) && i.covers(raddr, len) => i,
            _ => return bad(nodes),
        };
        let mut src = Cur::sgl(rn.fw, m.segs, false, s.pd);
        let mut dst = Cur::region(info, raddr);
        transfer(&mut src, rn.mem, &mut dst, dn.mem, len)
    };
    let pkts = packets(len, s.mtu);
    match moved {
        Ok(()) => {
            let cqe = imm.then(|| {
                (
                    resp_cqe(d, s, cqe_op::RESP_WR_IMM, byte_cnt, Some(m.imm)),
                    m.solicited,
                )
            });
            resp_ok(nodes, di, d, cqe, pkts);
            q_count(nodes, di, d.cnt_set, QCnt::RxWrite);
            ReqRes::Ok { byte_cnt }
        }
        Err(Fault::Src) => ReqRes::Err(syn::LOCAL_PROT),
        Err(Fault::Dst) => bad(nodes),
    }
}
