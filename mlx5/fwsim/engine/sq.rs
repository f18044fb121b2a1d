// SPDX-License-Identifier: GPL-2.0

//! A send queue's WQE as the requester takes it: read from the ring at the SQ consumer counter
//! ([`read_wqe`]) and decoded into a [`Message`] checked on the sending side ([`message`]);
//! [`current`] reads back the oldest one RC in packets has in flight (`rc.rs`).

use super::completer::ReqRes;
use super::fabric::Node;
use super::mem::check_sgl;
use super::message::{Message, Service};
use super::qp_state::{av_len, be16, be32, be64, Av, Snap, Wqe};
use crate::fwsim::dma::DmaMem;
use crate::fwsim::profile::LinkLayer;
use crate::fwsim::xlat::Access;
use crate::fwsim::Fw;
use crate::prm::consts::{
    QPC_ST_DCI, QPC_ST_QP0, QPC_ST_QP1, QPC_ST_RC, QPC_ST_UC, QPC_ST_UD, QPC_ST_XRC,
};
use crate::prm::wqe::{ctrl, syndrome as syn, wqe_op};

/// Largest SQ WQE (`cmd_hca_cap.max_wqe_sz_sq`; `ds` is 6 bits in libmlx5 anyway).
pub(super) const MAX_SQ_WQE: usize = 1024;

/// Bytes of `struct mlx5_wqe_xrc_seg` (an XRC initiator's WQEs).
const XRC_SEG: usize = 16;

/// Why an SQ WQE could not be taken.
pub(super) enum WqeErr {
    /// The queue could not be read.
    Fault,
    /// A malformed control segment: the WQE (with the WQEBBs to skip) completes in error.
    Bad(Wqe),
}

/// Reads the WQE at the SQ consumer counter of `s` into `buf`; `pi` is the doorbell record.
pub(super) fn read_wqe(
    mem: &dyn DmaMem,
    s: &Snap,
    pi: u16,
    buf: &mut [u8; MAX_SQ_WQE],
) -> Result<Wqe, WqeErr> {
    read_wqe_at(mem, s, s.q.sq_ci, pi, buf)
}

/// Reads the WQE at SQ counter `ci` (at or past the consumer counter) of `s` into `buf`;
/// `pi` is the doorbell record.
pub(super) fn read_wqe_at(
    mem: &dyn DmaMem,
    s: &Snap,
    ci: u16,
    pi: u16,
    buf: &mut [u8; MAX_SQ_WQE],
) -> Result<Wqe, WqeErr> {
    let q = &s.q;
    let first = buf.get_mut(..64).ok_or(WqeErr::Fault)?;
    if !q.sq.read(mem, &q.buf, u32::from(ci), first) {
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
    let avail = pi.wrapping_sub(ci);
    if ds == 0 || len > MAX_SQ_WQE || nbb > avail || u32::from(nbb) > q.sq.entries() {
        w.nbb = 1;
        return Err(WqeErr::Bad(w));
    }
    for b in 1..nbb {
        let o = usize::from(b) * 64;
        let blk = buf.get_mut(o..o + 64).ok_or(WqeErr::Fault)?;
        if !q.sq.read(mem, &q.buf, u32::from(ci.wrapping_add(b)), blk) {
            return Err(WqeErr::Fault);
        }
    }
    Ok(w)
}

/// The WQE at the SQ consumer counter of requester `s` on `n` (the oldest RC in packets has
/// in flight, `rc.rs`) and its message, read back and handed to `f`; `None` when it cannot be.
pub(super) fn current<R>(
    n: &Node<'_>,
    s: &Snap,
    f: impl FnOnce(&Wqe, &Message<'_>) -> R,
) -> Option<R> {
    let pi = (s.q.buf.db(n.mem, 4)? & 0xffff) as u16;
    let mut buf = [0u8; MAX_SQ_WQE];
    let w = read_wqe(n.mem, s, pi, &mut buf).ok()?;
    let m = message(n.fw, s, &w, &buf).ok()?;
    Some(f(&w, &m))
}

/// The message of WQE `w` (bytes in `buf`) of requester `s`, a QP of `fw`, checked on the
/// requester's side: the opcode against the service (`LOCAL_QP_OP_ERR`), the gather list
/// against the keys (`LOCAL_PROT_ERR`), the length against the largest message
/// (`LOCAL_LENGTH_ERR`, and an atomic's list must hold 8 bytes). `Err` with what the WQE
/// completes with instead (a NOP completes at once).
pub(super) fn message<'b>(
    fw: &Fw,
    s: &Snap,
    w: &Wqe,
    buf: &'b [u8],
) -> Result<Message<'b>, ReqRes> {
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
        sgid_index: av.or(dc_av).map_or(s.sgid_index, |a| a.sgid_index),
        dest: match av.or(dc_av) {
            Some(a) => (a.rlid, a.rgid, a.dqpn),
            None => (s.rlid, s.rgid, s.remote_qpn),
        },
    })
}
