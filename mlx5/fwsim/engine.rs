// SPDX-License-Identifier: GPL-2.0

//! The data path: WQE execution over the doorbell records, for RC, UC and UD.
//!
//! [`run`] makes one pass over every QP of every function of a fabric (all functions of one
//! link layer; they reach each other by LID on InfiniBand and by RoCE GID on Ethernet). For a
//! QP in RTS it reads the SQ doorbell record (`dbr_addr + 4`, the next free WQEBB counter)
//! and executes WQEs from its own consumer counter up to it; a message is delivered at once
//! into the destination QP (receive WQEs are consumed as messages arrive: the RQ doorbell
//! record at `dbr_addr + 0` tells how many are posted). A QP in ERR has every outstanding
//! WQE, and any posted later, flushed. Everything read from memory is untrusted: a bad WQE
//! is an error CQE, never a panic or an access outside what [`DmaMem`] maps.
//!
//! The WQE format is libmlx5 44's (`providers/mlx5/qp.c`, `mlx5dv.h`): a control segment
//! (`opmod_idx_opcode`, `qpn_ds`, `fm_ce_se`, immediate), then a remote address segment
//! (RDMA and atomics), an atomic segment, or a UD address vector (`struct mlx5_wqe_av`),
//! then data segments (`byte_count`, `lkey`, `addr`) or inline data (`len | 0x80000000`,
//! then the bytes, padded to 16). Segments wrap at the end of the SQ. CQEs and arming are in
//! `cqe.rs`, translations in `xlat.rs`, events in `events.rs`. The timers (RNR and ACK
//! timeout), the semantics and the deviations from hardware are in `Documentation/fwsim.md`
//! ("Data path").

use super::cqe::Cqe;
use super::dma::DmaMem;
use super::events::{Event, Popped, QpEvent, SrqEvent};
use super::profile::LinkLayer;
use super::ring::{Buf, Ring};
use super::srq::{SrqWqe, NEXT_SEG};
use super::xlat::{Access, Binding, Fragmented, MkeyInfo, NO_QPN};
use super::{capacity, Fw, QCnt};
use crate::prm::consts::*;
use crate::prm::ctx::{ads, qpc};
use crate::prm::layout::Member;
use crate::prm::wqe::{
    cqe_off, cqe_op, ctrl, syndrome as syn, wqe_op, INLINE_SEG, INVALID_LKEY, SEND_WQE_BB,
};

/// A UMR WQE as libmlx5 44 builds a window bind (`set_bind_wr()`, qp.c): after the control
/// segment `struct mlx5_wqe_umr_ctrl_seg` (48 bytes), `struct mlx5_wqe_mkey_context_seg` (64),
/// then, for a bind, one `struct mlx5_wqe_umr_klm_seg` padded to 64 bytes. The control
/// segment's immediate is the window's current key.
pub(crate) mod umr {
    /// `flags` (u8) of the UMR control segment.
    pub(crate) const FLAGS: usize = 16;
    /// `mkey_mask` (be64).
    pub(crate) const MKEY_MASK: usize = 24;
    /// The mkey context segment.
    pub(crate) const MKC: usize = 64;
    /// The KLM.
    pub(crate) const KLM: usize = 128;
    /// `MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE`: a type 2 bind needs a free window.
    pub(crate) const CHECK_FREE: u8 = 1 << 5;
    /// `MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN`: a type 2 invalidation must come from the bound QP.
    pub(crate) const CHECK_QPN: u8 = 1 << 3;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN`.
    pub(crate) const MASK_LEN: u64 = 1 << 0;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR`.
    pub(crate) const MASK_START_ADDR: u64 = 1 << 6;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY`: the key's low byte.
    pub(crate) const MASK_MKEY: u64 = 1 << 13;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN`.
    pub(crate) const MASK_QPN: u64 = 1 << 14;
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE`.
    pub(crate) const MASK_FREE: u64 = 1 << 29;
    /// `MLX5_WQE_MKEY_CONTEXT_FREE` (the context's `free` byte).
    pub(crate) const CTX_FREE: u8 = 1 << 6;
    /// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_*`: atomic, remote write, remote read, local write.
    pub(crate) const ACC_ATOMIC: u8 = 1 << 6;
    /// Remote write.
    pub(crate) const ACC_REMOTE_WRITE: u8 = 1 << 5;
    /// Remote read.
    pub(crate) const ACC_REMOTE_READ: u8 = 1 << 4;
    /// Local write.
    pub(crate) const ACC_LOCAL_WRITE: u8 = 1 << 3;
}

/// log2 of the SQ WQE basic block (`MLX5_SEND_WQE_BB`, 64 bytes): the SQ ring's shift.
const WQEBB_SHIFT: u8 = SEND_WQE_BB.trailing_zeros() as u8;
/// Largest SQ WQE (`cmd_hca_cap.max_wqe_sz_sq`; `ds` is 6 bits in libmlx5 anyway).
const MAX_SQ_WQE: usize = 1024;
/// Largest RQ WQE read (`cmd_hca_cap.max_wqe_sz_rq`); a larger stride is read in part.
const MAX_RQ_WQE: usize = 512;
/// Bytes of `struct mlx5_wqe_xrc_seg` (an XRC initiator's WQEs).
const XRC_SEG: usize = 16;
/// Bytes of the GRH a UD receive buffer starts with.
pub(crate) const GRH_BYTES: u32 = 40;
/// WQEs one QP may execute before the pass moves on to the next QP.
const QUOTA: u32 = 16;
/// Bytes moved per DMA chunk.
const CHUNK: usize = 256;

/// IB spec table 9.7.5.2.8 (minimum RNR NAK timer field encodings), in microseconds.
const RNR_TIMER_US: [u64; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
    5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760,
    327_680, 491_520,
];

/// The RNR NAK timer of a responder's `min_rnr_nak`, in nanoseconds.
pub(crate) fn rnr_timer_ns(min_rnr_nak: u8) -> u64 {
    RNR_TIMER_US
        .get(usize::from(min_rnr_nak))
        .copied()
        .unwrap_or(655_360)
        * 1000
}

/// The local ACK timeout of `ack_timeout` (4.096 us * 2^t), in nanoseconds; `None` for 0
/// (infinite).
pub(crate) fn ack_timeout_ns(t: u8) -> Option<u64> {
    if t == 0 {
        return None;
    }
    Some(4096u64.checked_shl(u32::from(t)).unwrap_or(u64::MAX))
}

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

    /// Back to the state of a new QP (2RST).
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

/// One function on the fabric: its firmware state and the memory its device reaches.
pub(crate) struct Node<'a> {
    /// The function.
    pub(crate) fw: &'a mut Fw,
    /// What the function's device can reach (bus addresses).
    pub(crate) mem: &'a dyn DmaMem,
}

/// What a [`run`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunResult {
    /// WQEs executed or flushed.
    pub(crate) wqes: u32,
    /// The budget ran out: call again.
    pub(crate) more: bool,
    /// The earliest RNR or ACK-timeout retry: call again at that time.
    pub(crate) next_deadline_ns: Option<u64>,
}

/// One pass over every queue of every function on the fabric at time `now_ns`, executing at
/// most `budget` WQEs (executed and flushed ones alike). Arm records are read first; events
/// are queued in each [`Fw`] for [`Fw::next_event`].
///
/// The pass ends early (with `more` set, as when the budget runs out) once `yield_now`
/// answers true before a WQE after the first: the device's command interface does not wait
/// for its data path, so a pass run under the lock that commands take too gives way to a
/// waiting one.
pub(crate) fn run(
    nodes: &mut [Node<'_>],
    now_ns: u64,
    budget: u32,
    yield_now: &dyn Fn() -> bool,
) -> RunResult {
    let mut r = RunResult::default();
    for n in nodes.iter_mut() {
        n.fw.complete_commands(n.mem);
        n.fw.poll_arms(n.mem);
    }
    let mut left = budget;
    'rounds: loop {
        let mut progress = false;
        for ni in 0..nodes.len() {
            let hint = nodes
                .get_mut(ni)
                .and_then(|n| n.fw.sq_hint.take())
                .and_then(|q| nodes.get(ni)?.fw.qps.slot_of(q));
            // Each pass starts one QP further on, so that a budget smaller than the work
            // cannot starve the QPs with high numbers.
            let start = nodes.get(ni).map_or(0, |n| n.fw.scan_start) % capacity::QP;
            let order = (start..capacity::QP).chain(0..start);
            for slot in hint.into_iter().chain(order) {
                match serve_qp(nodes, ni, slot, now_ns, &mut left, &mut r, yield_now) {
                    None => break 'rounds,
                    Some(p) => progress |= p,
                }
            }
        }
        if !progress {
            break;
        }
    }
    for n in nodes.iter_mut() {
        n.fw.scan_start = (n.fw.scan_start + 1) % capacity::QP;
    }
    r
}

/// A pass over only the queues that ring UAR page `uar` of function `nodes[ni]`: the arm
/// records of its CQs that use that page, then the SQs of its QPs that do (their messages
/// reach any function of the fabric, as in [`run`]). What a doorbell store to that page can
/// have announced, at a fraction of a full pass's cost; a store on a page of someone else is
/// left to the next full pass. It gives way to a waiting command as [`run`] does.
pub(crate) fn run_uar(
    nodes: &mut [Node<'_>],
    ni: usize,
    uar: u32,
    now_ns: u64,
    budget: u32,
    yield_now: &dyn Fn() -> bool,
) -> RunResult {
    let mut r = RunResult::default();
    if let Some(n) = nodes.get_mut(ni) {
        n.fw.poll_arms_of(n.mem, Some(uar));
    }
    let mut left = budget;
    'rounds: loop {
        let mut progress = false;
        for slot in 0..capacity::QP {
            let ours = nodes
                .get(ni)
                .and_then(|n| n.fw.qps.at_slot(slot))
                .is_some_and(|(_, q)| q.uar == uar);
            if !ours {
                continue;
            }
            match serve_qp(nodes, ni, slot, now_ns, &mut left, &mut r, yield_now) {
                None => break 'rounds,
                Some(p) => progress |= p,
            }
        }
        if !progress {
            break;
        }
    }
    r
}

/// Steps the QP in `slot` of `nodes[ni]` up to [`QUOTA`] WQEs, counting them in `r` and
/// against `left`; `Some(progress)`, or `None` when the budget ran out or `yield_now` asked
/// for the lock (`r.more` set).
fn serve_qp(
    nodes: &mut [Node<'_>],
    ni: usize,
    slot: usize,
    now_ns: u64,
    left: &mut u32,
    r: &mut RunResult,
    yield_now: &dyn Fn() -> bool,
) -> Option<bool> {
    let mut progress = false;
    for _ in 0..QUOTA {
        // A pass that executed nothing yet does not give way: each pass makes progress.
        if *left == 0 || (r.wqes != 0 && yield_now()) {
            r.more = true;
            return None;
        }
        match step(nodes, ni, slot, now_ns) {
            Step::Idle => break,
            Step::Done => {
                *left -= 1;
                r.wqes = r.wqes.saturating_add(1);
                progress = true;
            }
            Step::Blocked(d) => {
                r.next_deadline_ns = Some(r.next_deadline_ns.map_or(d, |n| n.min(d)));
                break;
            }
        }
    }
    Some(progress)
}

/// What one step on a QP did.
enum Step {
    /// Nothing to do.
    Idle,
    /// One WQE executed or flushed.
    Done,
    /// Waiting for a retry at this time.
    Blocked(u64),
}

/// A copy of what the engine needs of a QP.
#[derive(Clone, Copy, Debug)]
struct Snap {
    slot: usize,
    qpn: u32,
    state: u32,
    st: u32,
    pd: u32,
    send_cq: Option<u32>,
    recv_cq: Option<u32>,
    q: QpState,
    /// The receive WQE index a responder CQE reports (`wqe_counter`): the RQ consumer
    /// counter, or the SRQ WQE [`rq_wqe`] took.
    rwqe_idx: u16,
    /// The SRQ WQE [`rq_wqe`] took (consumed by `resp_ok`/`resp_fail`).
    srq_wqe: Option<(SrqWqe, u16)>,
    /// 0-based port.
    port: usize,
    rlid: u16,
    rgid: [u8; 16],
    sgid_index: u8,
    sl: u8,
    remote_qpn: u32,
    mtu: u32,
    log_msg_max: u32,
    retry_count: u8,
    rnr_retry: u8,
    ack_timeout: u8,
    min_rnr_nak: u8,
    q_key: u32,
    rre: bool,
    rwe: bool,
    rae: bool,
    /// The Q counter set the QP counts into (`counter_set_id`; 0: none).
    cnt_set: u32,
    /// The XRC domain of an XRC target QP (`qpc.xrcd`).
    xrcd: u32,
}

/// Counts `k` in counter set `set` of node `i`.
fn q_count(nodes: &mut [Node<'_>], i: usize, set: u32, k: QCnt) {
    if let Some(n) = nodes.get_mut(i) {
        n.fw.q_count(set, k);
    }
}

/// The primary path member `f` inside a `qpc`.
const fn pri(f: Member<ads::Bits>) -> Member<qpc::Bits> {
    qpc::primary_address_path.inner(f)
}

fn snap(fw: &Fw, slot: usize) -> Option<Snap> {
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

/// A parsed SQ WQE (the bytes stay in the caller's buffer).
#[derive(Clone, Copy, Debug)]
struct Wqe {
    opcode: u8,
    idx: u16,
    /// Bytes (`ds * 16`).
    len: usize,
    /// WQEBBs it takes.
    nbb: u16,
    flags: u8,
    imm: [u8; 4],
}

fn be16(b: &[u8], at: usize) -> u16 {
    let mut w = [0u8; 2];
    if let Some(s) = b.get(at..at + 2) {
        w.copy_from_slice(s);
    }
    u16::from_be_bytes(w)
}

fn be32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        w.copy_from_slice(s);
    }
    u32::from_be_bytes(w)
}

fn be64(b: &[u8], at: usize) -> u64 {
    (u64::from(be32(b, at)) << 32) | u64::from(be32(b, at + 4))
}

/// One segment of a scatter/gather list.
#[derive(Clone, Copy, Debug)]
enum Seg {
    /// A data segment.
    Ptr { lkey: u32, addr: u64, len: u32 },
    /// Inline data at `at..at + len` of the segment bytes.
    Inline { at: usize, len: usize },
}

/// The next segment of `segs` from `*pos`; `rq` lists end at [`INVALID_LKEY`]. `Err` for a
/// malformed list (inline data running past the WQE, a partial segment).
fn next_seg(segs: &[u8], pos: &mut usize, rq: bool) -> Result<Option<Seg>, ()> {
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

/// Looks up a local or remote key: the index must name a live mkey whose `mkey_7_0` is the
/// key's low byte and whose PD is the QP's.
/// A memory window is never a local key.
fn mkey(fw: &Fw, key: u32, pd: u32) -> Option<MkeyInfo> {
    let m = fw.mkeys.get(key >> 8)?;
    (m.info.key_byte == (key & 0xff) as u8 && m.pd == pd && m.win.is_none()).then_some(m.info)
}

/// Looks up an rkey for responder `d`: an MR's mkey as [`mkey`], or a bound memory window of
/// `d`'s PD, bound to `d` if it is a type 2 window (IB spec o10-37.2.x), over an MR that still
/// lives with the key it was bound with (an MR deregistered under a window ends its access).
fn remote_key(fw: &Fw, key: u32, d: &Snap) -> Option<MkeyInfo> {
    let m = fw.mkeys.get(key >> 8)?;
    if m.info.key_byte != (key & 0xff) as u8 || m.pd != d.pd {
        return None;
    }
    let Some(w) = m.win else {
        return Some(m.info);
    };
    let b = w.bound?;
    if b.qpn != NO_QPN && b.qpn != d.qpn {
        return None;
    }
    let mr = fw.mkeys.get(b.mr_key >> 8)?;
    if mr.win.is_some() || mr.info.key_byte != (b.mr_key & 0xff) as u8 {
        return None;
    }
    Some(mr.info.window(&b, m.info.key_byte))
}

/// Executes a UMR WQE of requester `s` (a memory window's bind or local invalidation, as
/// libmlx5 44 posts them for `ibv_bind_mw()`, `IBV_WR_BIND_MW` and `IBV_WR_LOCAL_INV`). The
/// checks are the IB spec's that the device can make (`MW_BIND_ERR` otherwise): the window
/// exists with the key in the immediate and is of the QP's PD (C10-72); a bind with
/// `CHECK_FREE` (type 2) needs a free window; the MR's key names a live MR (not a window) of
/// the QP's PD; the range lies inside the MR, is not empty and is not zero-based (not
/// modeled); remote write or atomic rights need the MR's local write (C10-74); an invalidation
/// with `CHECK_QPN` (type 2) must come from the QP the window is bound to. The MR's
/// `IBV_ACCESS_MW_BIND` is not checked: the mkey context has no such right (upstream mlx5_ib
/// does not pass it to the device). The key's low byte becomes the context's
/// (`MASK_MKEY`), except on a type 2 invalidation. Only RC and UC QPs post these (`LOCAL_QP_OP_ERR` otherwise).
fn exec_umr(fw: &mut Fw, s: &Snap, w: &Wqe, buf: &[u8]) -> ReqRes {
    if !matches!(s.st, QPC_ST_RC | QPC_ST_UC) || w.len < umr::KLM {
        return ReqRes::Err(syn::LOCAL_QP_OP);
    }
    let bind_err = ReqRes::Err(syn::MW_BIND);
    let key = u32::from_be_bytes(w.imm);
    let flags = buf.get(umr::FLAGS).copied().unwrap_or(0);
    let mask = be64(buf, umr::MKEY_MASK);
    let ctx_free = buf.get(umr::MKC).copied().unwrap_or(0) & umr::CTX_FREE != 0;
    let acc = buf.get(umr::MKC + 2).copied().unwrap_or(0);
    let qpn_mkey = be32(buf, umr::MKC + 4);
    let Some(m) = fw.mkeys.get(key >> 8) else {
        return bind_err;
    };
    let Some(win) = m.win else {
        return bind_err;
    };
    if m.info.key_byte != (key & 0xff) as u8 || m.pd != s.pd {
        return bind_err;
    }
    let invalidate = mask & umr::MASK_FREE != 0 && ctx_free;
    let bound = if invalidate {
        if flags & umr::CHECK_QPN != 0 && win.bound.is_some_and(|b| b.qpn != s.qpn) {
            return bind_err;
        }
        None
    } else {
        if w.len < umr::KLM + 16 {
            return ReqRes::Err(syn::LOCAL_QP_OP);
        }
        if flags & umr::CHECK_FREE != 0 && win.bound.is_some() {
            return bind_err;
        }
        let count = u64::from(be32(buf, umr::KLM));
        let mr_key = be32(buf, umr::KLM + 4);
        let addr = be64(buf, umr::KLM + 8);
        let start = if mask & umr::MASK_START_ADDR != 0 {
            be64(buf, umr::MKC + 16)
        } else {
            addr
        };
        let len = if mask & umr::MASK_LEN != 0 {
            be64(buf, umr::MKC + 24)
        } else {
            count
        };
        let Some(mr) = mkey(fw, mr_key, s.pd) else {
            return bind_err;
        };
        let mut a = Access::LOCAL_READ.0;
        for (bit, right) in [
            (umr::ACC_LOCAL_WRITE, Access::LOCAL_WRITE),
            (umr::ACC_REMOTE_READ, Access::REMOTE_READ),
            (umr::ACC_REMOTE_WRITE, Access::REMOTE_WRITE),
            (umr::ACC_ATOMIC, Access::ATOMIC),
        ] {
            if acc & bit != 0 {
                a |= right.0;
            }
        }
        let writes = Access(Access::REMOTE_WRITE.0 | Access::ATOMIC.0);
        if start != addr
            || len != count
            || len == 0
            || !mr.covers(start, len)
            || (a & writes.0 != 0 && !mr.access.allows(Access::LOCAL_WRITE))
        {
            return bind_err;
        }
        Some(Binding {
            mr_key,
            start,
            len,
            access: Access(a),
            qpn: if mask & umr::MASK_QPN != 0 {
                qpn_mkey >> 8
            } else {
                NO_QPN
            },
        })
    };
    if let Some(m) = fw.mkeys.get_mut(key >> 8) {
        // libmlx5's IBV_WR_LOCAL_INV carries key byte 0 and keeps `mw->rkey`, whose next
        // bind names it: an invalidation with CHECK_QPN keeps the key (a type 1 unbind by
        // ibv_bind_mw() takes the new one the library also takes).
        if mask & umr::MASK_MKEY != 0 && !(invalidate && flags & umr::CHECK_QPN != 0) {
            m.info.key_byte = (qpn_mkey & 0xff) as u8;
        }
        if let Some(w) = m.win.as_mut() {
            w.bound = bound;
        }
    }
    ReqRes::Ok { byte_cnt: 0 }
}

/// A SEND with invalidate's invalidation at responder `d` (IB spec 10.6.7.2.x): the rkey must
/// name a bound window of `d`'s PD created with `en_rinval` (type 2) and bound to `d`. False
/// when it may not be invalidated.
fn remote_invalidate(fw: &mut Fw, key: u32, d: &Snap) -> bool {
    let Some(m) = fw.mkeys.get_mut(key >> 8) else {
        return false;
    };
    if m.info.key_byte != (key & 0xff) as u8 || m.pd != d.pd {
        return false;
    }
    match m.win.as_mut() {
        Some(w) if w.remote_inval && w.bound.is_some_and(|b| b.qpn == d.qpn) => {
            w.bound = None;
            true
        }
        _ => false,
    }
}

/// Checks a scatter/gather list against the keys (`need` rights, ranges); its byte total.
fn check_sgl(fw: &Fw, pd: u32, segs: &[u8], rq: bool, need: Access) -> Result<u64, u8> {
    let mut pos = 0;
    let mut total = 0u64;
    while let Some(s) = next_seg(segs, &mut pos, rq).map_err(|()| syn::LOCAL_QP_OP)? {
        let len = match s {
            Seg::Inline { len, .. } => u64::try_from(len).unwrap_or(u64::MAX),
            Seg::Ptr { len: 0, .. } => 0,
            Seg::Ptr { lkey, addr, len } => {
                let m = mkey(fw, lkey, pd).ok_or(syn::LOCAL_PROT)?;
                if !m.access.allows(need) || !m.covers(addr, u64::from(len)) {
                    return Err(syn::LOCAL_PROT);
                }
                u64::from(len)
            }
        };
        total = total.checked_add(len).ok_or(syn::LOCAL_LENGTH)?;
    }
    Ok(total)
}

/// A DMA cursor over a scatter/gather list (checked with [`check_sgl`] first).
struct SglCur<'a> {
    fw: &'a Fw,
    segs: &'a [u8],
    rq: bool,
    pd: u32,
    pos: usize,
    cur: Option<(Seg, u64, Option<MkeyInfo>)>,
}

/// A DMA cursor over a remote region (`rkey`, `raddr`; checked first).
struct RegionCur {
    info: MkeyInfo,
    va: u64,
}

/// Where data is read from or written to.
enum Cur<'a> {
    Sgl(SglCur<'a>),
    Region(RegionCur),
}

impl<'a> Cur<'a> {
    fn sgl(fw: &'a Fw, segs: &'a [u8], rq: bool, pd: u32) -> Self {
        Cur::Sgl(SglCur {
            fw,
            segs,
            rq,
            pd,
            pos: 0,
            cur: None,
        })
    }

    /// The current segment with bytes left, its offset, and its mkey.
    fn piece(c: &mut SglCur<'a>) -> Result<Option<(Seg, u64, Option<MkeyInfo>)>, ()> {
        loop {
            if let Some((s, done, m)) = c.cur {
                let len = match s {
                    Seg::Ptr { len, .. } => u64::from(len),
                    Seg::Inline { len, .. } => u64::try_from(len).map_err(|_| ())?,
                };
                if done < len {
                    return Ok(Some((s, done, m)));
                }
            }
            let Some(s) = next_seg(c.segs, &mut c.pos, c.rq)? else {
                c.cur = None;
                return Ok(None);
            };
            let m = match s {
                Seg::Ptr { lkey, len, .. } if len > 0 => Some(mkey(c.fw, lkey, c.pd).ok_or(())?),
                _ => None,
            };
            c.cur = Some((s, 0, m));
        }
    }

    /// Reads up to `out.len()` bytes; how many (0 at the end). `Err` on a DMA fault.
    fn read(&mut self, mem: &dyn DmaMem, out: &mut [u8]) -> Result<usize, ()> {
        match self {
            Cur::Region(r) => {
                let (bus, contig) = r.info.translate(r.va).ok_or(())?;
                let n = usize::try_from(contig).unwrap_or(usize::MAX).min(out.len());
                mem.read(bus, out.get_mut(..n).ok_or(())?).map_err(|_| ())?;
                r.va = r.va.wrapping_add(n as u64);
                Ok(n)
            }
            Cur::Sgl(c) => {
                let mut got = 0;
                while got < out.len() {
                    let Some((s, done, m)) = Self::piece(c)? else {
                        break;
                    };
                    let want = out.len() - got;
                    let n = match s {
                        Seg::Inline { at, len } => {
                            let d = usize::try_from(done).map_err(|_| ())?;
                            let n = (len - d).min(want);
                            let src = c.segs.get(at + d..at + d + n).ok_or(())?;
                            out.get_mut(got..got + n).ok_or(())?.copy_from_slice(src);
                            n
                        }
                        Seg::Ptr { addr, len, .. } => {
                            let (bus, contig) =
                                m.ok_or(())?.translate(addr.wrapping_add(done)).ok_or(())?;
                            let n = (u64::from(len) - done).min(contig);
                            let n = usize::try_from(n).unwrap_or(usize::MAX).min(want);
                            mem.read(bus, out.get_mut(got..got + n).ok_or(())?)
                                .map_err(|_| ())?;
                            n
                        }
                    };
                    if let Some((_, d, _)) = c.cur.as_mut() {
                        *d += n as u64;
                    }
                    got += n;
                }
                Ok(got)
            }
        }
    }

    /// Writes all of `data`. `Err` on a DMA fault or when the list is too short.
    fn write(&mut self, mem: &dyn DmaMem, data: &[u8]) -> Result<(), ()> {
        match self {
            Cur::Region(r) => {
                let mut done = 0;
                while done < data.len() {
                    let (bus, contig) = r.info.translate(r.va).ok_or(())?;
                    let n = usize::try_from(contig)
                        .unwrap_or(usize::MAX)
                        .min(data.len() - done)
                        .max(1);
                    mem.write(bus, data.get(done..done + n).ok_or(())?)
                        .map_err(|_| ())?;
                    r.va = r.va.wrapping_add(n as u64);
                    done += n;
                }
                Ok(())
            }
            Cur::Sgl(c) => {
                let mut done = 0;
                while done < data.len() {
                    let Some((Seg::Ptr { addr, len, .. }, off, Some(m))) = Self::piece(c)? else {
                        return Err(());
                    };
                    let (bus, contig) = m.translate(addr.wrapping_add(off)).ok_or(())?;
                    let n = (u64::from(len) - off).min(contig);
                    let n = usize::try_from(n)
                        .unwrap_or(usize::MAX)
                        .min(data.len() - done);
                    mem.write(bus, data.get(done..done + n).ok_or(())?)
                        .map_err(|_| ())?;
                    if let Some((_, d, _)) = c.cur.as_mut() {
                        *d += n as u64;
                    }
                    done += n;
                }
                Ok(())
            }
        }
    }
}

/// Which side of a transfer faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Src,
    Dst,
}

/// Moves `len` bytes from `src` to `dst` in chunks.
fn transfer(
    src: &mut Cur<'_>,
    smem: &dyn DmaMem,
    dst: &mut Cur<'_>,
    dmem: &dyn DmaMem,
    len: u64,
) -> Result<(), Fault> {
    let mut chunk = [0u8; CHUNK];
    let mut left = len;
    while left > 0 {
        let n = usize::try_from(left).unwrap_or(CHUNK).min(CHUNK);
        let buf = chunk.get_mut(..n).ok_or(Fault::Src)?;
        let got = src.read(smem, buf).map_err(|()| Fault::Src)?;
        if got == 0 {
            return Err(Fault::Src);
        }
        dst.write(dmem, chunk.get(..got).ok_or(Fault::Src)?)
            .map_err(|()| Fault::Dst)?;
        left -= got as u64;
    }
    Ok(())
}

/// A UD address vector (`struct mlx5_wqe_av`, as libmlx5's `mlx5_create_ah()` and
/// `_set_datagram_seg()` write it).
#[derive(Clone, Copy, Debug)]
struct Av {
    qkey: u32,
    dqpn: u32,
    sl: u8,
    rlid: u16,
    grh: bool,
    sgid_index: u8,
    flow_label: u32,
    tclass: u8,
    hop_limit: u8,
    rgid: [u8; 16],
}

impl Av {
    fn parse(b: &[u8], eth: bool) -> Av {
        let srsl = b.get(12).copied().unwrap_or(0);
        let gfl = be32(b, 28);
        let mut rgid = [0u8; 16];
        if let Some(g) = b.get(32..48) {
            rgid.copy_from_slice(g);
        }
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
            rgid,
        }
    }
}

/// The node and port that own `lid` (InfiniBand) or `gid` (Ethernet), among the nodes of
/// `ll`; the port must be up.
fn route(nodes: &[Node<'_>], ll: LinkLayer, lid: u16, gid: &[u8; 16]) -> Option<usize> {
    nodes.iter().position(|n| {
        let fw = &*n.fw;
        fw.cfg.link_layer == ll
            && (0..usize::from(fw.cfg.num_ports)).any(|p| {
                fw.port_up(p)
                    && match ll {
                        LinkLayer::Ib => fw.port_lid(p) == lid,
                        LinkLayer::Ethernet => fw.has_gid(p, gid),
                    }
            })
    })
}

/// The requester's result for one WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReqRes {
    /// Completed (delivered, or dropped on an unreliable service).
    Ok { byte_cnt: u32 },
    /// Completed in error.
    Err(u8),
    /// RNR NAK: the responder's RNR timer.
    Rnr(u64),
    /// No ACK will come (no such destination, or it cannot receive).
    Lost,
}

fn qp_mut(fw: &mut Fw, slot: usize) -> Option<&mut super::Qp> {
    fw.qps.at_slot_mut(slot).map(|(_, q)| q)
}

/// Writes a CQE on `cqn` of `fw` and raises what it causes.
fn push_cqe(fw: &mut Fw, mem: &dyn DmaMem, cqn: Option<u32>, c: &Cqe, solicited: bool) {
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

/// Moves a QP to ERR (its outstanding work is flushed by later steps).
fn to_err(fw: &mut Fw, slot: usize) {
    if let Some(q) = qp_mut(fw, slot) {
        q.state = QPC_STATE_ERR;
        q.q.wait = Wait::None;
    }
}

/// Packets of a message of `len` bytes (at least 1).
fn packets(len: u64, mtu: u32) -> u32 {
    u32::try_from(len.div_ceil(u64::from(mtu.max(1))).max(1)).unwrap_or(u32::MAX)
}

/// Advances a 24-bit PSN member of a QP's context.
fn bump_psn(fw: &mut Fw, slot: usize, f: Member<qpc::Bits>, n: u32) {
    if let Some(q) = qp_mut(fw, slot) {
        let v = f.get(&q.qpc).unwrap_or(0).wrapping_add(n) & 0x00ff_ffff;
        let _ = f.set(&mut q.qpc, v);
    }
}

/// The responder's next receive WQE, if one is posted: its scatter entries in `buf` (up to the
/// stride) and their length. From an SRQ: the WQE at the SRQ's head, recorded in `d` (its index
/// for the CQE, and what consuming it needs). `Err` when the queue cannot be read.
fn rq_wqe(
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
        if !r.ring.read(mem, &r.buf, u32::from(r.head), wqe) {
            return Err(());
        }
        let w = SrqWqe {
            idx: r.head,
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
fn resp_fail(nodes: &mut [Node<'_>], di: usize, d: &Snap, cqe: Option<u8>, event: Option<QpEvent>) {
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
fn resp_ok(nodes: &mut [Node<'_>], di: usize, d: &Snap, cqe: Option<(Cqe, bool)>, pkts: u32) {
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

/// The source QPN a message carries: 1 for the GSI QP, else the QP's number.
fn wire_qpn(s: &Snap) -> u32 {
    if s.st == QPC_ST_QP1 {
        1
    } else {
        s.qpn & 0x00ff_ffff
    }
}

/// Executes the message of WQE `w` (bytes in `buf`) of requester `s` on node `ni`.
fn exec_message(nodes: &mut [Node<'_>], ni: usize, s: &Snap, w: &Wqe, buf: &[u8]) -> ReqRes {
    let Some(ll) = nodes.get(ni).map(|n| n.fw.cfg.link_layer) else {
        return ReqRes::Lost;
    };
    let eth = ll == LinkLayer::Ethernet;
    // The GSI QP (QP1) is a UD QP to the data path.
    let ud = matches!(s.st, QPC_ST_UD | QPC_ST_QP1);
    // XRC is a reliable connected service: RC's rules, plus the XRC segment.
    let xrc = s.st == QPC_ST_XRC;
    let rc = s.st == QPC_ST_RC || xrc;
    use wqe_op::*;
    // An XRC initiator's WQE has `struct mlx5_wqe_xrc_seg` (16 bytes: the remote XRC SRQ
    // number, big-endian, then reserved) right after the control segment.
    let x = if xrc { XRC_SEG } else { 0 };
    let (seg_start, need) = match (w.opcode, s.st) {
        (NOP, _) => return ReqRes::Ok { byte_cnt: 0 },
        (SEND | SEND_IMM, QPC_ST_UD | QPC_ST_QP1) => (16 + 48, Access::LOCAL_READ),
        (SEND | SEND_IMM, QPC_ST_RC | QPC_ST_UC | QPC_ST_XRC) => (16 + x, Access::LOCAL_READ),
        (SEND_INVAL, QPC_ST_RC | QPC_ST_XRC) => (16 + x, Access::LOCAL_READ),
        (RDMA_WRITE | RDMA_WRITE_IMM, QPC_ST_RC | QPC_ST_UC | QPC_ST_XRC) => {
            (32 + x, Access::LOCAL_READ)
        }
        (RDMA_READ, QPC_ST_RC | QPC_ST_XRC) => (32 + x, Access::LOCAL_WRITE),
        (ATOMIC_CS | ATOMIC_FA, QPC_ST_RC | QPC_ST_XRC) => (48 + x, Access::LOCAL_WRITE),
        _ => return ReqRes::Err(syn::LOCAL_QP_OP),
    };
    // What follows the control (and XRC) segment.
    let body = buf.get(x..).unwrap_or(&[]);
    let Some(segs) = buf.get(seg_start..w.len) else {
        return ReqRes::Err(syn::LOCAL_QP_OP);
    };
    let rfw: &Fw = match nodes.get(ni) {
        Some(n) => n.fw,
        None => return ReqRes::Lost,
    };
    let total = match check_sgl(rfw, s.pd, segs, false, need) {
        Ok(t) => t,
        Err(e) => return ReqRes::Err(e),
    };
    let atomic = matches!(w.opcode, ATOMIC_CS | ATOMIC_FA);
    if atomic && total < 8 {
        return ReqRes::Err(syn::LOCAL_LENGTH);
    }
    let len = if atomic { 8 } else { total };
    let max = if ud {
        u64::from(rfw.ud_mtu(s.port))
    } else {
        1u64.checked_shl(s.log_msg_max).unwrap_or(u64::MAX)
    };
    if len > max {
        return ReqRes::Err(syn::LOCAL_LENGTH);
    }
    let byte_cnt = u32::try_from(len).unwrap_or(u32::MAX);
    // Unreliable services complete whatever happens to the message past this point.
    let dropped = if rc {
        ReqRes::Lost
    } else {
        ReqRes::Ok { byte_cnt }
    };

    // Where to.
    let av = ud.then(|| Av::parse(buf.get(16..64).unwrap_or(&[]), eth));
    let (lid, gid, dqpn) = match av {
        Some(a) => (a.rlid, a.rgid, a.dqpn),
        None => (s.rlid, s.rgid, s.remote_qpn),
    };
    if !rfw.port_up(s.port) {
        return dropped;
    }
    let Some(di) = route(nodes, ll, lid, &gid) else {
        return dropped;
    };
    let Some(mut d) = nodes.get(di).and_then(|n| {
        // QPN 1 is the destination's GSI QP, whatever number CREATE_QP gave it.
        let slot = if ud && dqpn == 1 {
            (0..capacity::QP).find(|&i| {
                n.fw.qps
                    .at_slot(i)
                    .is_some_and(|(_, q)| qpc::st.get(&q.qpc) == Ok(QPC_ST_QP1))
            })?
        } else {
            n.fw.qps.slot_of(dqpn)?
        };
        snap(n.fw, slot)
    }) else {
        return dropped;
    };
    let same = d.st == s.st || (ud && matches!(d.st, QPC_ST_UD | QPC_ST_QP1));
    if !same || !matches!(d.state, QPC_STATE_RTR | QPC_STATE_RTS) {
        return dropped;
    }
    if xrc {
        // The XRCETH: the XRC SRQ must exist and be in the target QP's XRC domain (an
        // initiator, with a send queue, is no target). Otherwise an Invalid Request NAK.
        let srqn = be32(buf, 16) & 0x00ff_ffff;
        let x = nodes.get(di).and_then(|n| {
            let ini = n.fw.qps.at_slot(d.slot)?.1.q.has_sq;
            n.fw.xrc
                .srq(srqn)
                .filter(|x| !ini && x.xrcd == d.xrcd)
                .copied()
        });
        let Some(x) = x else {
            resp_fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
            return ReqRes::Err(syn::REMOTE_INVAL_REQ);
        };
        d.q.srq = Some(srqn);
        d.pd = x.pd;
        d.recv_cq = Some(x.cqn);
        d.q.user_index = x.user_index;
    }
    if let Some(a) = av {
        // A Q_Key with the high bit set means "use the QP's own" (IB spec 10.2.5).
        let qkey = if a.qkey & 0x8000_0000 != 0 {
            s.q_key
        } else {
            a.qkey
        };
        if qkey != d.q_key {
            return dropped;
        }
    }
    let pkts = if ud { 1 } else { packets(len, s.mtu) };
    // The remote address segment of RDMA and atomic WQEs.
    let remote = (be64(body, 16), be32(body, 24));

    match w.opcode {
        SEND | SEND_IMM | SEND_INVAL | RDMA_WRITE_IMM => {
            // These consume a receive WQE.
            let mut rbuf = [0u8; MAX_RQ_WQE];
            let (dmem, dfw): (&dyn DmaMem, &Fw) = match nodes.get(di) {
                Some(n) => (n.mem, n.fw),
                None => return dropped,
            };
            let rlen = match rq_wqe(dmem, dfw, &mut d, &mut rbuf) {
                Ok(Some(n)) => n,
                Ok(None) => {
                    q_count(nodes, di, d.cnt_set, QCnt::OutOfBuffer);
                    return if rc {
                        ReqRes::Rnr(rnr_timer_ns(d.min_rnr_nak))
                    } else {
                        ReqRes::Ok { byte_cnt }
                    };
                }
                Err(()) => {
                    if let Some(n) = d.q.srq.and_then(|r| Some((r, nodes.get_mut(di)?))) {
                        if let Some(slot) = n.1.fw.rmps.slot_of(n.0) {
                            n.1.fw.events.srq(slot, SrqEvent::Catas);
                        }
                    }
                    resp_fail(nodes, di, &d, None, Some(QpEvent::WqCatas));
                    return dropped;
                }
            };
            let rsegs = rbuf.get(..rlen).unwrap_or(&[]);
            if w.opcode == RDMA_WRITE_IMM {
                return write(nodes, ni, s, w, segs, remote, &d, di, len, true);
            }
            let grh = av.is_some_and(|a| a.grh);
            let need_bytes = len + if ud { u64::from(GRH_BYTES) } else { 0 };
            let dfw: &Fw = match nodes.get(di) {
                Some(n) => n.fw,
                None => return dropped,
            };
            let cap = match check_sgl(dfw, d.pd, rsegs, true, Access::LOCAL_WRITE) {
                Ok(c) => c,
                Err(e) => {
                    resp_fail(nodes, di, &d, Some(e), None);
                    return if rc {
                        ReqRes::Err(syn::REMOTE_OP)
                    } else {
                        ReqRes::Ok { byte_cnt }
                    };
                }
            };
            if cap < need_bytes {
                resp_fail(nodes, di, &d, Some(syn::LOCAL_LENGTH), None);
                return if rc {
                    ReqRes::Err(syn::REMOTE_INVAL_REQ)
                } else {
                    ReqRes::Ok { byte_cnt }
                };
            }
            let moved = {
                let (Some(rn), Some(dn)) = (nodes.get(ni), nodes.get(di)) else {
                    return dropped;
                };
                let mut src = Cur::sgl(rn.fw, segs, false, s.pd);
                let mut dst = Cur::sgl(dn.fw, rsegs, true, d.pd);
                let mut ok = Ok(());
                if ud {
                    let hdr = match av {
                        Some(a) if grh => rn.fw.grh_bytes(s, &a, len),
                        _ => None,
                    };
                    let hdr = hdr.unwrap_or([0u8; 40]);
                    ok = if grh {
                        dst.write(dn.mem, &hdr).map_err(|()| Fault::Dst)
                    } else {
                        // Without a GRH its area is skipped, not written.
                        skip_bytes(&mut dst, GRH_BYTES)
                    };
                }
                ok.and_then(|()| transfer(&mut src, rn.mem, &mut dst, dn.mem, len))
            };
            if moved.is_ok() && w.opcode == SEND_INVAL {
                let key = u32::from_be_bytes(w.imm);
                let ok = nodes
                    .get_mut(di)
                    .is_some_and(|n| remote_invalidate(n.fw, key, &d));
                if !ok {
                    resp_fail(nodes, di, &d, Some(syn::REMOTE_INVAL_REQ), None);
                    return ReqRes::Err(syn::REMOTE_INVAL_REQ);
                }
            }
            match moved {
                Ok(()) => {
                    let (opc, imm) = match w.opcode {
                        SEND_IMM => (cqe_op::RESP_SEND_IMM, Some(w.imm)),
                        SEND_INVAL => (cqe_op::RESP_SEND_INV, Some(w.imm)),
                        _ => (cqe_op::RESP_SEND, None),
                    };
                    let bc = byte_cnt.saturating_add(if ud { GRH_BYTES } else { 0 });
                    let mut c = resp_cqe(&d, s, opc, bc, imm);
                    if ud {
                        let (g, sl) = match (eth, grh) {
                            (true, _) => (1, nodes.get(ni).map_or(0, |n| n.fw.roce_l3(s, av))),
                            (false, true) => (1, s_sl(av)),
                            (false, false) => (0, s_sl(av)),
                        };
                        c.put32(
                            cqe_off::FLAGS_RQPN,
                            (g << 28) | (u32::from(sl & 0xf) << 24) | wire_qpn(s),
                        );
                    }
                    if !eth {
                        let slid = nodes.get(ni).map_or(0, |n| n.fw.port_lid(s.port));
                        c.put16(cqe_off::SLID, slid);
                    }
                    let sol = w.flags & ctrl::SOLICITED != 0;
                    resp_ok(nodes, di, &d, Some((c, sol)), pkts);
                    ReqRes::Ok { byte_cnt }
                }
                Err(Fault::Src) => ReqRes::Err(syn::LOCAL_PROT),
                Err(Fault::Dst) => {
                    resp_fail(nodes, di, &d, Some(syn::LOCAL_PROT), None);
                    if rc {
                        ReqRes::Err(syn::REMOTE_OP)
                    } else {
                        ReqRes::Ok { byte_cnt }
                    }
                }
            }
        }
        RDMA_WRITE => write(nodes, ni, s, w, segs, remote, &d, di, len, false),
        RDMA_READ => {
            let (raddr, rkey) = remote;
            let (Some(rn), Some(dn)) = (nodes.get(ni), nodes.get(di)) else {
                return dropped;
            };
            let info = match remote_key(dn.fw, rkey, &d) {
                Some(m) if d.rre && m.access.allows(Access::REMOTE_READ) => m,
                _ if len == 0 && d.rre => {
                    resp_ok(nodes, di, &d, None, pkts);
                    return ReqRes::Ok { byte_cnt: 0 };
                }
                _ => {
                    resp_fail(nodes, di, &d, None, Some(QpEvent::WqAccess));
                    return ReqRes::Err(syn::REMOTE_ACCESS);
                }
            };
            if !info.covers(raddr, len) {
                resp_fail(nodes, di, &d, None, Some(QpEvent::WqAccess));
                return ReqRes::Err(syn::REMOTE_ACCESS);
            }
            let mut src = Cur::Region(RegionCur { info, va: raddr });
            let mut dst = Cur::sgl(rn.fw, segs, false, s.pd);
            match transfer(&mut src, dn.mem, &mut dst, rn.mem, len) {
                Ok(()) => {
                    resp_ok(nodes, di, &d, None, pkts);
                    q_count(nodes, di, d.cnt_set, QCnt::RxRead);
                    ReqRes::Ok { byte_cnt }
                }
                Err(Fault::Src) => {
                    resp_fail(nodes, di, &d, None, Some(QpEvent::WqAccess));
                    ReqRes::Err(syn::REMOTE_ACCESS)
                }
                Err(Fault::Dst) => ReqRes::Err(syn::LOCAL_PROT),
            }
        }
        ATOMIC_CS | ATOMIC_FA => {
            let (raddr, rkey) = remote;
            let swap_add = be64(body, 32);
            let compare = be64(body, 40);
            let (Some(rn), Some(dn)) = (nodes.get(ni), nodes.get(di)) else {
                return dropped;
            };
            if !raddr.is_multiple_of(8) {
                resp_fail(nodes, di, &d, None, Some(QpEvent::WqInvalReq));
                return ReqRes::Err(syn::REMOTE_INVAL_REQ);
            }
            let bus = match remote_key(dn.fw, rkey, &d) {
                Some(m) if d.rae && m.access.allows(Access::ATOMIC) && m.covers(raddr, 8) => {
                    m.translate(raddr).map(|(b, _)| b)
                }
                _ => None,
            };
            let old = bus.and_then(|b| {
                if w.opcode == ATOMIC_CS {
                    dn.mem.cmp_swap64(b, compare, swap_add).ok()
                } else {
                    dn.mem.fetch_add64(b, swap_add).ok()
                }
            });
            let Some(old) = old else {
                resp_fail(nodes, di, &d, None, Some(QpEvent::WqAccess));
                return ReqRes::Err(syn::REMOTE_ACCESS);
            };
            let mut dst = Cur::sgl(rn.fw, segs, false, s.pd);
            let wrote = dst.write(rn.mem, &old.to_le_bytes());
            resp_ok(nodes, di, &d, None, 1);
            q_count(nodes, di, d.cnt_set, QCnt::RxAtomic);
            match wrote {
                Ok(()) => ReqRes::Ok { byte_cnt: 8 },
                Err(()) => ReqRes::Err(syn::LOCAL_PROT),
            }
        }
        _ => ReqRes::Err(syn::LOCAL_QP_OP),
    }
}

/// The SL a UD receiver reports.
fn s_sl(av: Option<Av>) -> u8 {
    av.map_or(0, |a| a.sl)
}

/// Skips `n` bytes of a receive scatter list (the GRH area of a UD receive without a GRH).
fn skip_bytes(dst: &mut Cur<'_>, n: u32) -> Result<(), Fault> {
    let Cur::Sgl(c) = dst else {
        return Err(Fault::Dst);
    };
    let mut left = u64::from(n);
    while left > 0 {
        let Some((s, done, _)) = Cur::piece(c).map_err(|()| Fault::Dst)? else {
            return Err(Fault::Dst);
        };
        let len = match s {
            Seg::Ptr { len, .. } => u64::from(len),
            Seg::Inline { .. } => return Err(Fault::Dst),
        };
        let k = (len - done).min(left);
        if let Some((_, d, _)) = c.cur.as_mut() {
            *d += k;
        }
        left -= k;
    }
    Ok(())
}

/// RDMA WRITE and WRITE with immediate (`imm`: the immediate's receive WQE was found).
#[allow(clippy::too_many_arguments)]
fn write(
    nodes: &mut [Node<'_>],
    ni: usize,
    s: &Snap,
    w: &Wqe,
    segs: &[u8],
    (raddr, rkey): (u64, u32),
    d: &Snap,
    di: usize,
    len: u64,
    imm: bool,
) -> ReqRes {
    let rc = matches!(s.st, QPC_ST_RC | QPC_ST_XRC);
    let byte_cnt = u32::try_from(len).unwrap_or(u32::MAX);
    let bad = |nodes: &mut [Node<'_>]| {
        if rc {
            resp_fail(nodes, di, d, None, Some(QpEvent::WqAccess));
            ReqRes::Err(syn::REMOTE_ACCESS)
        } else {
            ReqRes::Ok { byte_cnt }
        }
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
            Some(m) if d.rwe && m.access.allows(Access::REMOTE_WRITE) && m.covers(raddr, len) => m,
            _ => return bad(nodes),
        };
        let mut src = Cur::sgl(rn.fw, segs, false, s.pd);
        let mut dst = Cur::Region(RegionCur { info, va: raddr });
        transfer(&mut src, rn.mem, &mut dst, dn.mem, len)
    };
    let pkts = packets(len, s.mtu);
    match moved {
        Ok(()) => {
            let cqe = imm.then(|| {
                (
                    resp_cqe(d, s, cqe_op::RESP_WR_IMM, byte_cnt, Some(w.imm)),
                    w.flags & ctrl::SOLICITED != 0,
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

/// One step of a QP: execute (or flush) one WQE.
fn step(nodes: &mut [Node<'_>], ni: usize, slot: usize, now: u64) -> Step {
    // The common cases without parsing the QP context (every pass visits every QP): no QP,
    // a QP that cannot send, an SQ with nothing new posted.
    let Some(n) = nodes.get(ni) else {
        return Step::Idle;
    };
    let Some((_, qp)) = n.fw.qps.at_slot(slot) else {
        return Step::Idle;
    };
    if qp.state != QPC_STATE_ERR && (qp.state != QPC_STATE_RTS || !qp.q.has_sq) {
        return Step::Idle;
    }
    if qp.state == QPC_STATE_RTS && matches!(qp.q.wait, Wait::None) {
        let posted = qp.q.buf.db(n.mem, 4).map(|pi| (pi & 0xffff) as u16);
        if posted.is_none_or(|pi| pi == qp.q.sq_ci) {
            return Step::Idle;
        }
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
    if let Some(q) = nodes.get_mut(ni).and_then(|n| qp_mut(n.fw, slot)) {
        match q.q.wait {
            Wait::Ack(_) if q.q.retry_left == 0 => {
                return finish(nodes, ni, slot, &w, ReqRes::Err(syn::RETRY_EXC), now);
            }
            Wait::Ack(_) => {
                q.q.retry_left -= 1;
                q.q.wait = Wait::None;
            }
            Wait::Rnr(_) => q.q.wait = Wait::None,
            _ => {}
        }
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

/// Applies a requester result: consumer counter, PSN, CQE, QP state, retry timers.
fn finish(nodes: &mut [Node<'_>], ni: usize, slot: usize, w: &Wqe, res: ReqRes, now: u64) -> Step {
    let Some(n) = nodes.get_mut(ni) else {
        return Step::Idle;
    };
    let Some(s) = snap(n.fw, slot) else {
        return Step::Idle;
    };
    let res = match res {
        ReqRes::Rnr(_) | ReqRes::Lost => {
            let Some(q) = qp_mut(n.fw, slot) else {
                return Step::Idle;
            };
            if q.q.retry_wqe != Some(q.q.sq_ci) {
                q.q.retry_wqe = Some(q.q.sq_ci);
                q.q.retry_left = s.retry_count;
                q.q.rnr_left = s.rnr_retry;
            }
            match res {
                ReqRes::Rnr(_) if q.q.rnr_left == 0 => ReqRes::Err(syn::RNR_RETRY_EXC),
                ReqRes::Rnr(timer) => {
                    // 7 means retry forever.
                    if q.q.rnr_left != 7 {
                        q.q.rnr_left -= 1;
                    }
                    let at = now.saturating_add(timer);
                    q.q.wait = Wait::Rnr(at);
                    return Step::Blocked(at);
                }
                _ => match ack_timeout_ns(s.ack_timeout) {
                    None => {
                        q.q.wait = Wait::Forever;
                        return Step::Idle;
                    }
                    Some(t) => {
                        let at = now.saturating_add(t);
                        q.q.wait = Wait::Ack(at);
                        return Step::Blocked(at);
                    }
                },
            }
        }
        r => r,
    };
    if let Some(q) = qp_mut(n.fw, slot) {
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
            if matches!(s.st, QPC_ST_RC | QPC_ST_UC | QPC_ST_XRC) && pkts > 0 {
                bump_psn(n.fw, slot, qpc::next_send_psn, pkts);
            }
            if w.flags & ctrl::CQ_UPDATE != 0 {
                let mut c = Cqe::new(cqe_op::REQ, w.opcode, s.qpn, w.idx, s.q.user_index);
                c.put32(cqe_off::BYTE_CNT, byte_cnt);
                push_cqe(n.fw, n.mem, s.send_cq, &c, false);
            }
        }
        ReqRes::Err(e) => {
            let c = Cqe::error(true, e, w.opcode, s.qpn, w.idx, s.q.user_index);
            push_cqe(n.fw, n.mem, s.send_cq, &c, false);
            to_err(n.fw, slot);
        }
        ReqRes::Rnr(_) | ReqRes::Lost => {}
    }
    Step::Done
}

/// Flushes one outstanding WQE of a QP in ERR (SQ first, then RQ); false when none is left.
fn flush_one(nodes: &mut [Node<'_>], ni: usize, s: &Snap) -> bool {
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

/// What a command left for the kernel side's worker ([`Fw::complete_commands`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Left {
    /// Nothing.
    Nothing,
    /// The function's first QP a pass serves ([`Fw::has_served_qp`]): the worker must be
    /// rescanning (it rescans while such a QP exists), nothing to run now.
    Served,
    /// WQEs to run now: a QP moved from RTR to RTS with WQEs posted before (its doorbell
    /// record ahead of what was sent).
    Work,
}

impl Fw {
    /// A CQ arm store at UAR `uar_index` + 0x20 (`MLX5_CQ_DOORBELL`): `value` is the 64-bit
    /// big-endian store read as a number, `(sn << 28 | cmd << 24 | ci) << 32 | cqn`. Ignored
    /// unless the CQ exists and uses that UAR. May fire at once (see [`Fw::next_event`]).
    pub(crate) fn cq_doorbell(&mut self, uar_index: u32, value: u64) {
        let cqn = (value & 0x00ff_ffff) as u32;
        let Some(slot) = self.cqs.slot_of(cqn) else {
            return;
        };
        let Some(cq) = self.cqs.get_mut(cqn) else {
            return;
        };
        if cq.uar == uar_index && cq.q.arm((value >> 32) as u32) {
            self.events.cq_completion(slot);
        }
    }

    /// A send doorbell store at UAR `uar_index` + 0x800: the first 8 bytes of the last WQE
    /// posted, read as a big-endian number (`opmod_idx_opcode << 32 | qpn_ds`). A wake-up
    /// only (the doorbell record is the truth): the next [`run`] looks at that QP first.
    pub(crate) fn sq_doorbell(&mut self, uar_index: u32, value: u64) {
        let qpn = ((value & 0xffff_ffff) as u32) >> 8;
        if self.qps.get(qpn).is_some_and(|q| q.uar == uar_index) {
            self.sq_hint = Some(qpn);
        }
    }

    /// Finishes what the last command left for the data path that needs memory: the RESIZE
    /// CQE of a MODIFY_CQ resize, which libmlx5 looks for in the old buffer as soon as the
    /// command returns. The kernel side calls it after every [`Fw::exec`], before reporting
    /// the completion ([`run`] does it too, for a caller that did not). Cheap when there is
    /// nothing to do.
    ///
    /// Returns what the command left for the worker ([`Left`]).
    pub(crate) fn complete_commands(&mut self, mem: &dyn DmaMem) -> Left {
        if let Some(qpn) = self.flush.take() {
            self.flush_now(mem, qpn);
        }
        let started = match self.started.take() {
            Some((qpn, _)) if self.sq_posted(mem, qpn) => Left::Work,
            Some((_, true)) => Left::Served,
            _ => Left::Nothing,
        };
        let Some((cqn, new)) = self.resize.take() else {
            return started;
        };
        let Some(slot) = self.cqs.slot_of(cqn) else {
            return started;
        };
        if let Some(cq) = self.cqs.get_mut(cqn) {
            if !cq.q.resize(mem, &new) {
                self.events.cq_error(slot);
            }
        }
        started
    }

    /// Whether QP `qpn`'s send queue holds WQEs not yet executed: its doorbell record's
    /// producer counter differs from the consumer counter (an unreadable record counts as
    /// work: the pass then reports it as a DMA fault).
    fn sq_posted(&self, mem: &dyn DmaMem, qpn: u32) -> bool {
        let Some(qp) = self.qps.get(qpn) else {
            return false;
        };
        let q = &qp.q;
        q.has_sq
            && q.buf
                .db(mem, 4)
                .is_none_or(|pi| (pi & 0xffff) as u16 != q.sq_ci)
    }

    /// Flushes what a QP just moved to ERR has outstanding, as hardware does on the
    /// transition: at most a queue's worth of each (a doorbell record claiming more is
    /// flushed by later passes).
    fn flush_now(&mut self, mem: &dyn DmaMem, qpn: u32) {
        let Some(slot) = self.qps.slot_of(qpn) else {
            return;
        };
        let Some(s) = snap(self, slot) else {
            return;
        };
        let most = s.q.sq.entries() + s.q.rq.entries();
        let mut nodes = [Node { fw: self, mem }];
        for _ in 0..most {
            let Some(s) = nodes.first().and_then(|n| snap(n.fw, slot)) else {
                return;
            };
            if s.state != QPC_STATE_ERR || !flush_one(&mut nodes, 0, &s) {
                return;
            }
        }
    }

    /// Whether an event waits for [`Fw::next_event`].
    pub(crate) fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Takes the oldest pending event, if any.
    pub(crate) fn next_event(&mut self) -> Option<Event> {
        while let Some((slot, p)) = self.events.pop() {
            let ev = match p {
                Popped::Completion => self
                    .cqs
                    .at_slot(slot)
                    .map(|(cqn, _)| Event::Completion { cqn }),
                Popped::CqError => self
                    .cqs
                    .at_slot(slot)
                    .map(|(cqn, _)| Event::CqError { cqn }),
                Popped::Qp(kind) => self
                    .qps
                    .at_slot(slot)
                    .map(|(qpn, _)| Event::Qp { qpn, kind }),
                Popped::Srq(kind) => self
                    .rmps
                    .at_slot(slot)
                    .map(|(srqn, _)| Event::Srq { srqn, kind }),
            };
            if ev.is_some() {
                return ev;
            }
        }
        None
    }

    /// Whether a pass can find work on a QP of this function: one in RTS with a send queue or
    /// one in ERR (its WQEs are flushed), the QPs [`step`] serves. Without one no WQE runs and
    /// no CQE is written, so a periodic rescan has nothing to find (a CQ arm rung meanwhile is
    /// a trap or a kick of its own).
    pub(crate) fn has_served_qp(&self) -> bool {
        self.qps
            .iter()
            .any(|(_, q)| q.state == QPC_STATE_ERR || (q.state == QPC_STATE_RTS && q.q.has_sq))
    }

    /// Reads every CQ's arm record; a changed one is an arm request.
    fn poll_arms(&mut self, mem: &dyn DmaMem) {
        self.poll_arms_of(mem, None);
    }

    /// [`Fw::poll_arms`] for the CQs that use UAR page `uar` only (`None`: every CQ).
    fn poll_arms_of(&mut self, mem: &dyn DmaMem, uar: Option<u32>) {
        for slot in 0..capacity::CQ {
            let fired = self
                .cqs
                .at_slot_mut(slot)
                .filter(|(_, cq)| uar.is_none_or(|u| cq.uar == u))
                .is_some_and(|(_, cq)| cq.q.poll_arm(mem));
            if fired {
                self.events.cq_completion(slot);
            }
        }
    }

    /// The LID of (0-based) port `port`: unique per function on a fabric, from the serial
    /// (`0x100 + serial * 2 + port`; the SM is LID 1).
    pub(crate) fn port_lid(&self, port: usize) -> u16 {
        let p = u16::try_from(port & 1).unwrap_or(0);
        0x100 + (((self.cfg.serial & 0x1fff) as u16) << 1) + p
    }

    /// Whether a (0-based) port is administratively up (PAOS).
    fn port_up(&self, port: usize) -> bool {
        port < usize::from(self.cfg.num_ports)
            && self.ports.get(port).is_some_and(|p| p.admin_status == 1)
    }

    /// Whether a (0-based) port's RoCE address table holds `gid`.
    fn has_gid(&self, port: usize, gid: &[u8; 16]) -> bool {
        self.ports
            .get(port)
            .is_some_and(|p| p.roce.iter().flatten().any(|a| a.gid == *gid))
    }

    /// The largest UD message: the path MTU of the port (InfiniBand 4096; Ethernet: the
    /// largest IB MTU that fits the port MTU less the L2 overhead, as mlx5_ib reports it).
    fn ud_mtu(&self, port: usize) -> u32 {
        match self.cfg.link_layer {
            LinkLayer::Ib => 4096,
            LinkLayer::Ethernet => {
                let payload = self
                    .ports
                    .get(port)
                    .map_or(1500, |p| p.admin_mtu.saturating_sub(22));
                [4096, 2048, 1024, 512]
                    .into_iter()
                    .find(|m| *m <= payload)
                    .unwrap_or(256)
            }
        }
    }

    /// The source GID of a message of `s` with GID index `index`.
    fn sgid(&self, port: usize, index: u8) -> [u8; 16] {
        match self.cfg.link_layer {
            LinkLayer::Ib if index == 0 => {
                let mut g = [0u8; 16];
                g[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
                g[8..].copy_from_slice(&self.port_guid(port + 1).to_be_bytes());
                g
            }
            LinkLayer::Ib => [0; 16],
            LinkLayer::Ethernet => self
                .ports
                .get(port)
                .and_then(|p| p.roce.get(usize::from(index)).copied().flatten())
                .map_or([0; 16], |a| a.gid),
        }
    }

    /// The RoCE entry of a sender's GID index: (version 2, IPv4).
    fn roce_kind(&self, port: usize, index: u8) -> (bool, bool) {
        self.ports
            .get(port)
            .and_then(|p| p.roce.get(usize::from(index)).copied().flatten())
            .map_or((false, false), |a| {
                (u32::from(a.version) == ROCE_VERSION_2, a.l3_type == 0)
            })
    }

    /// The RoCE L3 header type a UD receive CQE reports in its `sl` bits
    /// (`MLX5_CQE_ROCE_L3_HEADER_TYPE_*`: 0 GRH (RoCE v1), 1 IPv6, 2 IPv4).
    fn roce_l3(&self, s: &Snap, av: Option<Av>) -> u8 {
        let index = av.map_or(s.sgid_index, |a| a.sgid_index);
        match self.roce_kind(s.port, index) {
            (false, _) => 0,
            (true, false) => 1,
            (true, true) => 2,
        }
    }

    /// The 40 bytes a UD receive buffer starts with: an IPv6-style GRH (InfiniBand, RoCE v1,
    /// RoCE v2 over IPv6), or for RoCE v2 over IPv4 the IPv4 header in the last 20 bytes.
    fn grh_bytes(&self, s: &Snap, av: &Av, len: u64) -> Option<[u8; 40]> {
        let sgid = self.sgid(s.port, av.sgid_index);
        let eth = self.cfg.link_layer == LinkLayer::Ethernet;
        let (v2, v4) = if eth {
            self.roce_kind(s.port, av.sgid_index)
        } else {
            (false, false)
        };
        // BTH + DETH + payload + ICRC, plus UDP for RoCE v2.
        let l4 = 12 + 8 + len + 4 + if v2 { 8 } else { 0 };
        let mut h = [0u8; 40];
        if v2 && v4 {
            let total = u16::try_from(20 + l4).ok()?;
            let ip = h.get_mut(20..40)?;
            ip[0] = 0x45;
            ip[1] = av.tclass;
            ip[2..4].copy_from_slice(&total.to_be_bytes());
            ip[6] = 0x40; // DF
            ip[8] = av.hop_limit;
            ip[9] = 17; // UDP
            ip[12..16].copy_from_slice(sgid.get(12..16)?);
            ip[16..20].copy_from_slice(av.rgid.get(12..16)?);
            let mut sum = 0u32;
            for i in (0..20).step_by(2) {
                sum += u32::from(u16::from_be_bytes([ip[i], ip[i + 1]]));
            }
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
            return Some(h);
        }
        let w0 = (6u32 << 28) | (u32::from(av.tclass) << 20) | (av.flow_label & 0xf_ffff);
        h[0..4].copy_from_slice(&w0.to_be_bytes());
        h[4..6].copy_from_slice(&u16::try_from(l4).ok()?.to_be_bytes());
        // Next header: the IB BTH (0x1b) or UDP for RoCE v2.
        h[6] = if v2 { 17 } else { 0x1b };
        h[7] = av.hop_limit;
        h[8..24].copy_from_slice(&sgid);
        h[24..40].copy_from_slice(&av.rgid);
        Some(h)
    }
}
