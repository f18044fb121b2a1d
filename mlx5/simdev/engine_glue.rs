// SPDX-License-Identifier: GPL-2.0

//! The worker's calls into the data-path engine (`fwsim/engine.rs`): doorbells, one pass over
//! a fabric, and its events as the driver's [`HwEvent`]s (the simulator's types stay behind
//! this file; the real-hardware backend never sees them).

use super::iommu::Iommu;
use crate::fwsim::dma::DmaMem;
use crate::fwsim::engine::{self, Node, Wire};
use crate::fwsim::Fw;
use crate::hw::{Doorbell, HwEvent};
use kernel::prelude::*;
use kernel::sync::Arc;

/// What a pass did.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RunOutcome {
    /// WQEs executed or flushed.
    pub(super) wqes: u32,
    /// The budget ran out: pass again.
    pub(super) more: bool,
    /// The earliest retry deadline (RNR, ACK timeout).
    pub(super) next_deadline_ns: Option<u64>,
}

impl RunOutcome {
    /// Adds what another pass did.
    pub(super) fn merge(&mut self, o: RunOutcome) {
        self.wqes = self.wqes.saturating_add(o.wqes);
        self.more |= o.more;
        self.next_deadline_ns = match (self.next_deadline_ns, o.next_deadline_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// A UAR doorbell store of function `fw`: `value` is the 64-bit store read as a big-endian
/// number (`Mlx5Hw::ring`).
pub(super) fn doorbell(fw: &mut Fw, uar: u32, db: Doorbell, value: u64) {
    match db {
        Doorbell::CqArm => fw.cq_doorbell(uar, value),
        Doorbell::Sq => fw.sq_doorbell(uar, value),
    }
}

/// Runs `pass` over the fabric's functions as engine nodes (`fws[i]` reaches memory through
/// `iommus[i]`), linked by `wire` (an InfiniBand fabric's switch, held by the first node).
fn with_nodes(
    fws: &mut KVec<KVBox<Fw>>,
    iommus: &[Arc<Iommu>],
    wire: Option<Wire<'_>>,
    now_ns: u64,
    pass: impl FnOnce(&mut [Node<'_>]) -> engine::RunResult,
) -> RunOutcome {
    let outcome = |r: engine::RunResult| RunOutcome {
        wqes: r.wqes,
        more: r.more,
        next_deadline_ns: r.next_deadline_ns,
    };
    // One or two functions per fabric (`sim=ib,ib`): the nodes on the stack, since a pass
    // runs on every trapped store, in the faulting task too.
    match (fws.as_mut_slice(), iommus) {
        ([a], [ma]) => {
            return outcome(pass(&mut [Node {
                fw: a,
                mem: &**ma,
                wire,
            }]))
        }
        ([a, b], [ma, mb]) => {
            return outcome(pass(&mut [
                Node {
                    fw: a,
                    mem: &**ma,
                    wire,
                },
                Node {
                    fw: b,
                    mem: &**mb,
                    wire: None,
                },
            ]))
        }
        _ => {}
    }
    // More: one small allocation per pass.
    let Ok(mut nodes) = KVec::<Node<'_>>::with_capacity(fws.len(), GFP_KERNEL) else {
        // Out of memory: try again at the next rescan.
        return RunOutcome {
            wqes: 0,
            more: false,
            next_deadline_ns: Some(now_ns),
        };
    };
    let mut wire = wire;
    for (fw, mem) in fws.iter_mut().zip(iommus.iter()) {
        let mem: &dyn DmaMem = &**mem;
        // Within the capacity reserved above; the first node holds the switch.
        let _ = nodes.push_within_capacity(Node {
            fw,
            mem,
            wire: wire.take(),
        });
    }
    outcome(pass(&mut nodes))
}

/// One engine pass over every function of a fabric; it ends early once `yield_now` says a
/// command waits for the fabric (`engine::run`).
pub(super) fn run(
    fws: &mut KVec<KVBox<Fw>>,
    iommus: &[Arc<Iommu>],
    wire: Option<Wire<'_>>,
    now_ns: u64,
    budget: u32,
    yield_now: &dyn Fn() -> bool,
) -> RunOutcome {
    with_nodes(fws, iommus, wire, now_ns, |n| {
        engine::run(n, now_ns, budget, yield_now)
    })
}

/// A pass over the queues of function `func` that ring UAR page `uar` only (`page` is
/// `(func, uar)`, `engine::run_uar`): what a trapped store to that page can have announced;
/// giving way to a waiting command as [`run`] does.
pub(super) fn run_uar(
    fws: &mut KVec<KVBox<Fw>>,
    iommus: &[Arc<Iommu>],
    wire: Option<Wire<'_>>,
    (func, uar): (usize, u32),
    now_ns: u64,
    budget: u32,
    yield_now: &dyn Fn() -> bool,
) -> RunOutcome {
    with_nodes(fws, iommus, wire, now_ns, |n| {
        engine::run_uar(n, func, uar, now_ns, budget, yield_now)
    })
}

/// Hands a RoCE v2 frame that came in on the segment port of function `func` to the engine
/// (`engine/wire.rs`) at time `now_ns` (the engine's clock: RC's RNR timer); a frame no QP
/// takes is dropped there.
pub(super) fn wire_rx(
    fws: &mut KVec<KVBox<Fw>>,
    iommus: &[Arc<Iommu>],
    func: usize,
    frame: &[u8],
    now_ns: u64,
) {
    with_nodes(fws, iommus, None, now_ns, |n| {
        engine::wire_receive(n, func, frame, now_ns);
        engine::RunResult::default()
    });
}

/// The next queued event of `fw`, as the driver sees events: port changes (the SMA's,
/// `fwsim/sma.rs`) first, then those of the queues.
pub(super) fn next_event(fw: &mut Fw) -> Option<HwEvent> {
    if let Some((port, subtype)) = fw.next_port_event() {
        return Some(HwEvent::PortChange { port, subtype });
    }
    fw.next_event().map(HwEvent::Queue)
}
