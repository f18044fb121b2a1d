// SPDX-License-Identifier: GPL-2.0

//! The data path: WQE execution over the doorbell records, for RC, UC, UD and XRC.
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
//! The engine is cut as a transport is (upstream's `rxe_req.c`, `rxe_resp.c`, `rxe_comp.c`),
//! one way down:
//!
//! * this file: the scheduling, [`run`] and [`run_uar`] (which QPs a pass steps, the budget,
//!   giving way to commands, the earliest retry deadline), the doorbells and what commands
//!   leave for the worker, the events;
//! * `requester.rs`: a QP's step, the WQE fetched, decoded into a [`message`](message) and
//!   routed;
//! * `responder.rs`: the message at its destination QP (receive WQEs, WRITE, READ, atomics,
//!   the access checks);
//! * `completer.rs`: what comes back retired (the send CQE, the PSN, ERR, the RNR and ACK
//!   retries) and the flush of a QP in ERR;
//! * `wire.rs`: RoCE v2 packets to and from hosts behind an Ethernet fabric's uplink (UD,
//!   UC), and `rc.rs`, RC in packets (requester, completer and responder per QP);
//! * `umr.rs` (memory windows), `mem.rs` (keys, scatter/gather cursors, DMA), `headers.rs`
//!   (the GRH a UD receive sees), `fabric.rs` (the functions, their ports and the route),
//!   `message.rs` and `qp_state.rs` (a QP as the data path sees it, and the WQE formats read
//!   from its queues) beneath them.
//!
//! CQEs and arming are in `cqe.rs`, translations in `xlat.rs`, events in `events.rs`. The
//! timers (RNR and ACK timeout), the semantics and the deviations from hardware are in
//! `Documentation/fwsim.md` ("Data path").

#[path = "engine/completer.rs"]
mod completer;
#[path = "engine/fabric.rs"]
mod fabric;
#[path = "engine/headers.rs"]
mod headers;
#[path = "engine/ib_mcast.rs"]
mod ib_mcast;
#[path = "engine/mem.rs"]
mod mem;
#[path = "engine/message.rs"]
mod message;
#[path = "engine/qp_state.rs"]
mod qp_state;
#[path = "engine/rc.rs"]
mod rc;
#[path = "engine/rc_state.rs"]
mod rc_state;
#[path = "engine/requester.rs"]
mod requester;
#[path = "engine/responder.rs"]
mod responder;
#[path = "engine/sa.rs"]
mod sa;
#[path = "engine/smp.rs"]
mod smp;
#[path = "engine/sq.rs"]
mod sq;
#[path = "engine/umr.rs"]
pub(crate) mod umr;
#[path = "engine/wire.rs"]
mod wire;

pub(crate) use self::fabric::Node;
// The kernel crate's fabric glue (`simdev/`) and the tests link nodes through the switch.
#[cfg_attr(not(MODULE), allow(unused_imports))]
pub(crate) use self::fabric::Wire;
pub(crate) use self::qp_state::QpState;
pub(crate) use self::rc_state::RcWire;
// The device glue (`simdev/`) and the tests hand received frames in.
#[cfg_attr(not(any(MODULE, test)), allow(unused_imports))]
pub(crate) use self::wire::WireTx;

use self::completer::flush_one;
use self::qp_state::{snap, Step};
use self::requester::step;
use super::dma::DmaMem;
use super::events::{Event, Popped};
use super::{capacity, Fw};
use crate::prm::consts::{QPC_STATE_ERR, QPC_STATE_RTS};

/// A frame that came in on the segment port of function `nodes[ni]` at time `now` (the
/// device glue and the tests hand them in): `wire.rs` checks it and takes UD and UC; an RC
/// packet goes to `rc.rs`. Whether a QP took it.
#[cfg_attr(not(any(MODULE, test)), allow(dead_code))]
pub(crate) fn wire_receive(nodes: &mut [Node<'_>], ni: usize, frame: &[u8], now: u64) -> bool {
    match wire::receive(nodes, ni, frame) {
        wire::Rx::Taken(t) => t,
        wire::Rx::Rc(port, p) => rc::receive(nodes, ni, port, &p, now),
    }
}

/// WQEs one QP may execute before the pass moves on to the next QP.
const QUOTA: u32 = 16;

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
    for ni in 0..nodes.len() {
        rc::flush_backlog(nodes, ni);
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
    r.more |= nodes.iter().any(|n| n.fw.wire_backlog());
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
    r.more |= nodes.get(ni).is_some_and(|n| n.fw.wire_backlog());
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
        let mut nodes = [Node {
            fw: self,
            mem,
            wire: None,
        }];
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
        !self.events.is_empty() || self.has_port_events()
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
}
