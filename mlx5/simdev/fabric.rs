// SPDX-License-Identifier: GPL-2.0

//! A simulated fabric: the functions of one link layer, their device state behind one lock,
//! and the device worker that runs the data path for all of them.
//!
//! InfiniBand functions reach each other, Ethernet ones reach each other, the two never do
//! (`sim=ib,ib,eth,eth` is two fabrics of two functions). The data-path engine executes a
//! message from one function into another in one call, so it takes every [`Fw`] of the fabric
//! at once: they live in one `Mutex<KVec<KVBox<Fw>>>`, which commands of any of them take too
//! (a command is short; it is what serializes a function's command queue as well).
//!
//! A user process's UAR store faults on the trap page ([`TrapPage`]). The fault handler
//! emulates the store, or installs the page, and queues the rest to the faulting task's
//! return to user space (task work, `rust/mm.rs`): there the task runs a pass over the queues
//! that ring that page itself ([`Fabric::trap_stored`], [`Fabric::serve_inline`]: the doorbell
//! records already hold what the store announces), on the stack it has as it leaves the
//! kernel rather than on top of the fault handler's, so a ping-pong's message is delivered
//! before the storing task resumes in user space.
//!
//! The worker is a kernel thread per fabric ([`crate::kthread`]), at the lowest real-time
//! priority (a normal one is woken lazily: it waited for the next tick behind busy-polling
//! programs). A page's fault has it serve the page's queues again and re-arm the page once
//! the faulting store has landed (it lands only after the fault returns: the worker waits
//! for the page to change, from another CPU than the storing task's); a kick
//! ([`Fabric::kick`], [`Fabric::ring`]: a doorbell of a kernel queue) runs full passes over
//! every queue while there is work. While any QP can do work (RTS with a send queue, or ERR:
//! what the engine serves) it also rescans everything, every jiffy after a pass that did
//! work and less often the longer nothing happens (up to [`IDLE_RESCAN_MAX`]), and at the
//! engine's next RNR/ACK-timeout deadline: the doorbell records are the truth and a dropped
//! trap's page is still read. With no such QP it sleeps until kicked (a QP reaching ERR kicks
//! it, one reaching RTS when a store could land unseen: [`Fabric::kick_served`]; otherwise the
//! QP's first doorbell faults): an idle fabric costs no CPU, however many idle QPs it holds. After each
//! pass it delivers the events the engine queued, without the fabric lock, to each
//! function's handler ([`Mlx5Events`]).
//!
//! An Ethernet fabric is also an Ethernet segment ([`Segment`]): the functions' interfaces
//! send frames to each other through it, without the fabric lock. RoCE v2 frames the segment
//! steers to a function ([`RoceRx`]) wait in the fabric's receive queue (at most
//! [`WIRE_RX_MAX`]; more are dropped, as by a full receive ring) for the worker, which hands
//! them to the engine (`engine/wire.rs`) at the start of its pass; the packets the engine
//! queued for the wire go out of the functions' segment ports after each pass.
//!
//! An InfiniBand fabric has a switch (`fwsim/switch.rs`): function `i`'s ports are linked to
//! the switch's ports in fabric order ([`Fabric::with_fw_cmd_sm`] gives a command the switch
//! and the function's first switch port); the embedded subnet manager runs on it
//! (`fwsim/sm.rs`).
//!
//! Lock order: `fws` (the fabric lock), then `switch`, then an IOMMU's table (the engine's memory accesses);
//! `handlers`, then the driver's event locks; `wake` is a leaf (a spinlock: rings come from
//! any context), and so are `wire_rx` and the segment's locks (the segment's taken with `fws`
//! held when the engine's packets go out, never the other way round). The fabric lock
//! is never held while calling into the driver or the core.

use super::ether::{RoceRx, Segment};
use super::iommu::Iommu;
use super::trap_order::TrapOrder;
use crate::fwsim::engine::Wire;
use crate::fwsim::profile::LinkLayer;
use crate::fwsim::switch::Switch;
use crate::fwsim::Fw;
use crate::hw::{Doorbell, HwEvent, Mlx5Events};
use crate::kthread::{self, KThread, Registered, ThreadBody};
use ib_core_rs::mm::{TrapHandler, TrapPage};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, CondVar, Mutex, SpinLockIrq};
use kernel::time::{Instant, Monotonic};
use kernel::{new_condvar, new_mutex, new_spinlock_irq};

/// Doorbell values kept between passes; more are dropped (the records are the truth).
const PENDING: usize = 32;

/// Rung UAR trap pages kept between passes; more are dropped (the periodic rescan reads the
/// records; such a page stays installed, nothing re-arms it, so its stores are seen by the
/// rescans only, every jiffy while they find work).
const PENDING_TRAPS: usize = 16;

/// The offsets of a UAR page whose stores announce work: the CQ arm doorbell and the
/// blue-flame registers (four of `bf_reg_size` 512 per page, each two 256-byte halves that
/// libmlx5 alternates between).
const UAR_WATCHED: [usize; 9] = [0x20, 0x800, 0x900, 0xa00, 0xb00, 0xc00, 0xd00, 0xe00, 0xf00];

/// What a UAR page holds at [`UAR_WATCHED`].
type Snapshot = [u64; UAR_WATCHED.len()];

/// Reads `page` at [`UAR_WATCHED`].
fn snapshot(page: &TrapPage) -> Snapshot {
    let mut snap = [0u64; UAR_WATCHED.len()];
    for (v, &off) in snap.iter_mut().zip(UAR_WATCHED.iter()) {
        let mut b = [0u8; 8];
        if page.page().read(off, &mut b).is_ok() {
            *v = u64::from_ne_bytes(b);
        }
    }
    snap
}

/// How long the worker waits, from another CPU, for a faulting store to land before it
/// leaves the page installed until a later wake (nanoseconds): the storing task only has to
/// return from its fault.
const LAND_WAIT_NS: u64 = 100_000;

/// Until how long after another page's fault a faulting task waits for that fault's store to
/// land before it re-arms that page itself (nanoseconds): the storing task runs on another
/// CPU and only has to finish its fault (which may still be delivering the message that the
/// waiting task answers). After that the worker re-arms the page.
const PEER_LAND_WAIT_NS: u64 = 300_000;

/// A polling window of the worker: after a trap whose store has landed it serves the page's
/// queues with the page left installed while they keep bringing work, and re-arms the page
/// once nothing came for this long (nanoseconds)...
const POLL_IDLE_NS: u64 = 50_000;

/// ... or once the window has lasted this long (nanoseconds; the worker then re-arms, serves
/// what landed, and sleeps until the next store faults).
const POLL_MAX_NS: u64 = 2_000_000;

/// A UAR trap page that was written to, and whose page it is.
struct PendingTrap {
    page: Arc<TrapPage>,
    func: usize,
    uar: u32,
    /// What the page held when it faulted last, before that store landed (it lands when the
    /// fault returns): once the page differs, the store is done and the page can be re-armed
    /// without faulting the same store again.
    before: Snapshot,
    /// The CPU of that fault: where the storing task runs.
    cpu: u32,
    /// When that fault came ([`Fabric::now_ns`]): its store lands once the fault returns.
    at: u64,
}

impl PendingTrap {
    /// Appends what the page holds at the CQ arm and send doorbells to `dbs[ndb..]`, as
    /// big-endian 64-bit stores (a first CQ arm, `sn` 0 and `ci` 0, looks like the zeroed arm
    /// record, so only the store shows it); returns the new count. Read after a re-arm: a
    /// later store faults, an earlier one is in the page.
    fn doorbells(&self, dbs: &mut [Option<PendingDb>; PENDING], mut ndb: usize) -> usize {
        for db in [Doorbell::CqArm, Doorbell::Sq] {
            let off = db.offset() as usize;
            let mut v = [0u8; 8];
            if self.page.page().read(off, &mut v).is_err() {
                continue;
            }
            if let Some(d) = dbs.get_mut(ndb) {
                *d = Some(PendingDb {
                    func: self.func,
                    uar: self.uar,
                    db,
                    value: u64::from_be_bytes(v),
                });
                ndb += 1;
            }
        }
        ndb
    }
}

/// The [`TrapHandler`] of a simulated function's UAR page: a store of user space to the page
/// queues it for the worker, which re-arms the trap and then reads the doorbells it holds.
pub(crate) struct UarBell {
    fabric: Arc<Fabric>,
    func: usize,
    uar: u32,
    /// The page's name in the fabric's [`TrapOrder`]: unique, where a page's address or a
    /// UAR index may be reused by a later page.
    id: u64,
}

impl UarBell {
    /// The bell of UAR `uar` of function `func` on `fabric`.
    pub(crate) fn new(fabric: &Arc<Fabric>, func: usize, uar: u32) -> Self {
        UarBell {
            fabric: fabric.clone(),
            func,
            uar,
            id: fabric.bells.fetch_add(1, Relaxed).wrapping_add(1),
        }
    }
}

impl TrapHandler for UarBell {
    fn rung(&self, page: &Arc<TrapPage>) {
        self.fabric.trap_rung(page, self.func, self.uar, self.id);
    }

    fn emulate_stores(&self) -> bool {
        let stream = self.fabric.faulted_last(self.id, self.func, self.uar);
        crate::fwsim_param::uar_emulate() && !stream
    }

    fn stored(&self, page: &Arc<TrapPage>, offset: usize, len: usize) {
        self.fabric
            .trap_stored(page, self.func, self.uar, offset, len);
    }
}

/// The longest rescan interval while QPs exist and nothing happens (jiffies): the rescan
/// is the safety net for stores whose trap was dropped (a full queue) and for retries.
const IDLE_RESCAN_MAX: kernel::time::Jiffies = 16;

/// WQEs per engine pass; a pass that runs out is followed by another at once.
const BUDGET: u32 = 256;

/// WQEs of a pass run by a faulting task ([`Fabric::serve_inline`]): a ping-pong's message
/// or two; a longer queue is left to the worker.
const INLINE_BUDGET: u32 = 16;

/// Events taken from one function per lock hold.
const EVENT_BATCH: usize = 32;

/// RoCE v2 frames the fabric's receive queue holds for the worker.
const WIRE_RX_MAX: usize = 256;

/// Nanoseconds per jiffy (`CONFIG_HZ` of the kernel).
fn ns_per_jiffy() -> u64 {
    1_000_000_000 / (kernel::time::msecs_to_jiffies(1000) as u64).max(1)
}

/// What [`Fabric::trap_rung`] (and [`Fabric::take_traps`], the first two) works on: the pages
/// queued by earlier faults that it takes (`peers`) and those of them it re-armed (`rearmed`,
/// dropped outside every lock), the pages whose queues its pass serves and their doorbells.
/// About 5 KB: on the heap, since the engine's pass runs below the caller's frame on a 16 KiB
/// stack (performance.md, "Stack frames").
struct TrapLists {
    peers: [Option<PendingTrap>; PENDING_TRAPS],
    rearmed: [Option<PendingTrap>; PENDING_TRAPS],
    pages: [Option<(usize, u32)>; PENDING_TRAPS],
    dbs: [Option<PendingDb>; PENDING],
}

impl TrapLists {
    /// Empty lists; built in this function's own frame (not inlined: its temporary would
    /// stay in the caller's).
    #[inline(never)]
    fn new() -> Result<KBox<Self>> {
        KBox::new(
            TrapLists {
                peers: [const { None }; PENDING_TRAPS],
                rearmed: [const { None }; PENDING_TRAPS],
                pages: [None; PENDING_TRAPS],
                dbs: [None; PENDING],
            },
            GFP_KERNEL,
        )
        .map_err(Error::from)
    }
}

/// A doorbell value waiting for the next pass.
#[derive(Clone, Copy, Debug)]
struct PendingDb {
    func: usize,
    uar: u32,
    db: Doorbell,
    value: u64,
}

/// The one UAR page (function, index) whose queues a trap pass serves and whose doorbells it
/// hands over; `None` for several pages or none.
fn one_page(dbs: &[Option<PendingDb>], pages: &[Option<(usize, u32)>]) -> Option<(usize, u32)> {
    let mut all = Iterator::chain(
        pages.iter().flatten().copied(),
        dbs.iter().flatten().map(|d| (d.func, d.uar)),
    );
    let first = all.next()?;
    all.all(|p| p == first).then_some(first)
}

/// Why the worker woke.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Woken {
    /// [`Fabric::kick`]/[`Fabric::ring`]: a full pass.
    Kick,
    /// A trap: serve the queued pages, re-arm those whose store landed.
    Trap,
    /// The rescan interval passed: a full pass, every queued page re-armed.
    Rescan,
}

/// What wakes the worker.
struct Wake {
    /// A full pass is wanted (a kernel queue's doorbell, a pass that ran out of budget).
    kicked: bool,
    /// Trap pages are queued (`traps`): serve their queues, re-arm those whose store landed.
    trapped: bool,
    stop: bool,
    /// The rescan interval while QPs exist and passes find nothing: doubles per idle rescan
    /// up to [`IDLE_RESCAN_MAX`], back to 1 jiffy when a pass does work.
    idle: kernel::time::Jiffies,
    /// Sleep this many jiffies at most before rescanning (`None`: until kicked).
    rescan: Option<kernel::time::Jiffies>,
    /// A command made a QP the worker serves while it was rescanning ([`Fabric::kick_served`]):
    /// if the pass under way saw none (it ran before), the worker passes again rather than
    /// sleep until kicked.
    served_since: bool,
    dbs: [Option<PendingDb>; PENDING],
    n: usize,
    traps: [Option<PendingTrap>; PENDING_TRAPS],
    /// The order of the last traps: in a ping-pong (back and forth between two pages) the
    /// next fault re-arms the page ([`Fabric::trap_rung`]).
    order: TrapOrder,
    /// The page ([`UarBell::id`]) of the last UAR fault, emulated or not, and [`Wake::passes`]
    /// then: a store to the page that faulted last, with no worker pass begun or ended since
    /// that could run another page's WQEs, is a stream's, which the installed page and the
    /// worker's polling serve better than a fault and a pass in the storing task per store.
    last_fault: (u64, u64),
    /// The function and UAR index of that page: the worker's passes over it alone (its
    /// polling windows, a trap pass) run its own queues only, and do not count in
    /// [`Wake::passes`].
    last_fault_page: (usize, u32),
    /// Worker passes begun plus ended (two a pass) but those over the page that faulted last
    /// alone. A worker pass may execute a WQE before its storing task's store faults (the
    /// doorbell record comes first), and the peer's answer then faults right after the peer's
    /// previous store: no stream.
    passes: u64,
}

impl Wake {
    /// Queues a doorbell value for the next pass; dropped when full (the doorbell records are
    /// the truth, a store is only a wake-up).
    fn queue_db(&mut self, d: PendingDb) {
        let n = self.n;
        if let Some(slot) = self.dbs.get_mut(n) {
            *slot = Some(d);
            self.n = n + 1;
        }
    }

    /// Puts the trap pages in `traps` back in the queue, those that did not fault again
    /// meanwhile (their newer entry is queued) and as long as there is room (the rescans
    /// re-arm every page).
    fn requeue(&mut self, traps: &mut [Option<PendingTrap>]) {
        for slot in traps.iter_mut() {
            let Some(t) = slot.as_ref() else { continue };
            if self
                .traps
                .iter()
                .flatten()
                .any(|q| Arc::ptr_eq(&q.page, &t.page))
            {
                continue;
            }
            if let Some(free) = self.traps.iter_mut().find(|q| q.is_none()) {
                *free = slot.take();
            }
        }
    }
}

/// How a fabric's engine passes ran (debugfs `stats`): by the worker or in a faulting task,
/// the nanoseconds they took, and the faults that found the fabric busy.
pub(crate) struct Served {
    pub(crate) worker_passes: Atomic<u64>,
    pub(crate) worker_ns: Atomic<u64>,
    pub(crate) inline_passes: Atomic<u64>,
    pub(crate) inline_ns: Atomic<u64>,
    pub(crate) inline_busy: Atomic<u64>,
    pub(crate) rearms_deferred: Atomic<u64>,
    /// Faulting stores the worker waited for (from another CPU) and saw land, the waits that
    /// timed out, and the times it moved off the storing task's CPU to wait.
    pub(crate) land_waits: Atomic<u64>,
    pub(crate) land_timeouts: Atomic<u64>,
    pub(crate) worker_moves: Atomic<u64>,
    /// Nanoseconds the worker spent waiting for faulting stores to land (spinning, at its
    /// real-time priority) and re-arming trap pages (the zaps of their mappings).
    pub(crate) land_spin_ns: Atomic<u64>,
    pub(crate) rearm_ns: Atomic<u64>,
    /// WQEs executed (or flushed) by each kind of pass: in a faulting task, by the worker
    /// for a trap, for a kick, for a rescan. WQEs a rescan finds are stores no trap saw.
    pub(crate) wqes_inline: Atomic<u64>,
    pub(crate) wqes_trap: Atomic<u64>,
    pub(crate) wqes_kick: Atomic<u64>,
    pub(crate) wqes_rescan: Atomic<u64>,
    /// Pages re-armed in the fault of another page (a ping-pong's peer), the waits there for
    /// their store that timed out (the worker re-arms those), and traps that left their page to
    /// that next fault instead of waking the worker.
    pub(crate) rearms_peer: Atomic<u64>,
    pub(crate) peer_land_timeouts: Atomic<u64>,
    pub(crate) traps_quiet: Atomic<u64>,
    /// The worker's polling windows that found work (a page's queues served with the page
    /// installed), their nanoseconds and the WQEs they executed.
    pub(crate) polls: Atomic<u64>,
    pub(crate) poll_ns: Atomic<u64>,
    pub(crate) wqes_poll: Atomic<u64>,
    /// UAR stores emulated in their fault (`uar_emulate=1`; the page stays unmapped): the
    /// rest of `uar_traps` installed the page.
    pub(crate) stores_emulated: Atomic<u64>,
}

impl Served {
    fn new() -> Self {
        Served {
            worker_passes: Atomic::new(0),
            worker_ns: Atomic::new(0),
            inline_passes: Atomic::new(0),
            inline_ns: Atomic::new(0),
            inline_busy: Atomic::new(0),
            rearms_deferred: Atomic::new(0),
            land_waits: Atomic::new(0),
            land_timeouts: Atomic::new(0),
            worker_moves: Atomic::new(0),
            land_spin_ns: Atomic::new(0),
            rearm_ns: Atomic::new(0),
            wqes_inline: Atomic::new(0),
            wqes_trap: Atomic::new(0),
            wqes_kick: Atomic::new(0),
            wqes_rescan: Atomic::new(0),
            rearms_peer: Atomic::new(0),
            peer_land_timeouts: Atomic::new(0),
            traps_quiet: Atomic::new(0),
            polls: Atomic::new(0),
            poll_ns: Atomic::new(0),
            wqes_poll: Atomic::new(0),
            stores_emulated: Atomic::new(0),
        }
    }
}

/// The functions of one link layer.
#[pin_data]
pub(crate) struct Fabric {
    /// The device state of every function, by index.
    #[pin]
    fws: Mutex<KVec<KVBox<Fw>>>,
    /// Commands waiting for `fws` ([`Fabric::with_fw_cmd_sm`]): an engine pass gives way to
    /// them after its current WQE, as a device's command interface does not wait for its
    /// data path (a pass of the worker took 0.6 ms under traffic, and every destroy command
    /// of a hot unplug waited behind it).
    cmd_waiting: Atomic<u32>,
    /// The switch of an InfiniBand fabric (taken after `fws`).
    #[pin]
    switch: Mutex<Option<KVBox<Switch>>>,
    /// Per function: the switch port its port 1 is linked to.
    first_ports: KVec<u8>,
    /// UAR bells made so far: the next one's [`UarBell::id`] less one.
    bells: Atomic<u64>,
    /// What each function's device reaches, by index.
    iommus: KVec<Arc<Iommu>>,
    /// Per function: UAR stores that arrived as trap faults (debugfs `stats`, `uar_traps`).
    traps: KVec<Atomic<u64>>,
    /// How the data path was served (debugfs `stats`, the `fabric_*` lines).
    served: Served,
    /// Each function's event handler, by index; deliveries hold the lock.
    #[pin]
    handlers: Mutex<KVec<Option<Arc<dyn Mlx5Events>>>>,
    #[pin]
    wake: SpinLockIrq<Wake>,
    #[pin]
    cv: CondVar,
    start: Instant<Monotonic>,
    /// The Ethernet segment of an Ethernet fabric's functions.
    ether: Option<Arc<Segment>>,
    /// RoCE v2 frames from the segment for the engine: (function index, frame).
    #[pin]
    wire_rx: SpinLockIrq<KVec<(usize, KVec<u8>)>>,
    /// RoCE v2 frames sent and received, for the fault injection of `wire_drop`, `wire_dup`,
    /// `wire_reorder` and `wire_corrupt`.
    wire_seen: Atomic<u64>,
    /// The frame `wire_reorder` holds back, sent ([0]) and received ([1]), with its port.
    #[pin]
    wire_held: SpinLockIrq<[Held; 2]>,
}

/// A frame held back by `wire_reorder`, with its port (function index or segment port).
type Held = Option<(usize, KVec<u8>)>;

/// What fault injection does to one RoCE v2 frame ([`Fabric::wire_fault`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    Pass,
    Drop,
    Dup,
    /// Held back: it goes on after the next frame that does.
    Hold,
    /// A bit flipped inside what the ICRC covers: the receiver's ICRC check drops it.
    Corrupt,
}

/// The direction of a frame, for [`Fabric::wire_inject`].
const SENT: usize = 0;
const RECEIVED: usize = 1;

impl Fabric {
    /// Runs `f` on function `index`'s device state under the fabric lock.
    ///
    /// # Errors
    ///
    /// `ENODEV` for an index the fabric does not have.
    pub(crate) fn with_fw<R>(&self, index: usize, f: impl FnOnce(&mut Fw) -> R) -> Result<R> {
        let mut fws = self.fws.lock();
        let fw = fws.get_mut(index).ok_or(ENODEV)?;
        Ok(f(fw))
    }

    /// [`Fabric::with_fw`] for a command, with the fabric's switch and the switch port
    /// function `index`'s port 1 is linked to (`None` on an Ethernet fabric): an engine pass
    /// under way ends early to let it run.
    ///
    /// # Errors
    ///
    /// `ENODEV` for an index the fabric does not have.
    pub(crate) fn with_fw_cmd_sm<R>(
        &self,
        index: usize,
        f: impl FnOnce(&mut Fw, Option<(&mut Switch, u8)>) -> R,
    ) -> Result<R> {
        self.cmd_waiting.add(1, Relaxed);
        let mut fws = self.fws.lock();
        self.cmd_waiting.fetch_sub(1, Relaxed);
        let fw = fws.get_mut(index).ok_or(ENODEV)?;
        let mut sw = self.switch.lock();
        let first = self.first_ports.get(index).copied().unwrap_or(0);
        let sm = sw.as_deref_mut().map(|s| (s, first));
        Ok(f(fw, sm))
    }

    /// Runs `f` on the switch (`None` on an Ethernet fabric) and the switch port function
    /// `index`'s port 1 is linked to.
    pub(crate) fn with_switch<R>(
        &self,
        index: usize,
        f: impl FnOnce(Option<(&Switch, u8)>) -> R,
    ) -> R {
        let _fws = self.fws.lock();
        let sw = self.switch.lock();
        let first = self.first_ports.get(index).copied().unwrap_or(0);
        f(sw.as_deref().map(|s| (s, first)))
    }

    /// The engine's view of the switch `sw` (the locked `switch`): `None` on an Ethernet
    /// fabric.
    fn wire<'a>(&'a self, sw: &'a mut Option<KVBox<Switch>>) -> Option<Wire<'a>> {
        sw.as_deref_mut().map(|switch| Wire {
            switch,
            first_ports: &self.first_ports,
        })
    }

    /// Whether a command waits for the fabric lock (engine passes give way).
    fn cmd_waits(&self) -> bool {
        self.cmd_waiting.load(Relaxed) != 0
    }

    /// Function `index`'s IOMMU.
    pub(crate) fn iommu(&self, index: usize) -> Option<&Arc<Iommu>> {
        self.iommus.get(index)
    }

    /// How many UAR stores of function `index` arrived as trap faults (0 for an index the
    /// fabric does not have).
    pub(crate) fn uar_traps(&self, index: usize) -> u64 {
        self.traps.get(index).map_or(0, |t| t.load(Relaxed))
    }

    /// The Ethernet segment (an Ethernet fabric's).
    pub(crate) fn ether(&self) -> Option<&Arc<Segment>> {
        self.ether.as_ref()
    }

    /// How the fabric's passes ran so far.
    pub(crate) fn served(&self) -> &Served {
        &self.served
    }

    /// Installs (or removes) function `index`'s event handler; when a removal returns, no
    /// delivery to the old handler is running or will run.
    pub(crate) fn set_events(&self, index: usize, h: Option<Arc<dyn Mlx5Events>>) {
        let old = {
            let mut hs = self.handlers.lock();
            hs.get_mut(index).map(|slot| core::mem::replace(slot, h))
        };
        // Dropped outside the lock.
        drop(old);
    }

    /// Wakes the worker for a pass.
    pub(crate) fn kick(&self) {
        self.wake.lock().kicked = true;
        self.cv.notify_one();
    }

    /// A command made a function's first QP that passes serve (`Fw::has_served_qp`) while a
    /// UAR page of the function is installed (`SimFunction::uar_installed`: a store to it
    /// lands without a fault): the worker must be rescanning. Wakes it only if it sleeps until
    /// kicked; a worker that rescans already is not woken (that wake-up, a real-time thread
    /// preempting the caller, was most of an RTR2RTS's time), only told, in case the pass it
    /// is in saw no such QP.
    pub(crate) fn kick_served(&self) {
        let mut w = self.wake.lock();
        if w.rescan.is_some() {
            w.served_since = true;
            return;
        }
        w.kicked = true;
        drop(w);
        self.cv.notify_one();
    }

    /// Queues a doorbell value of function `func` for the next pass and kicks. Never sleeps.
    pub(crate) fn ring(&self, func: usize, uar: u32, db: Doorbell, value: u64) {
        {
            let mut w = self.wake.lock();
            w.queue_db(PendingDb {
                func,
                uar,
                db,
                value,
            });
            w.kicked = true;
        }
        self.cv.notify_one();
    }

    /// A UAR trap page of function `func` was written to (the page installed by its fault;
    /// called on the faulting task's way back to user space, before the store executes):
    /// re-arms the pages that faulted before it and whose stores have landed, runs their
    /// queues and this page's here, then queues the page for a re-arm. Never sleeps but in
    /// the fabric lock, the re-arms and a bounded wait for another CPU's store.
    ///
    /// The page can be re-armed only once its store has landed, which is only after this
    /// fault returns: a real-time worker that re-armed it at once, on this CPU, would preempt
    /// this task before its store and fault the same store again, in a loop. So the page's
    /// contents before the store are kept (the store has landed once they differ), and the
    /// re-arm is left to one of two:
    /// * the next fault of another page, when the traps go back and forth between this page
    ///   and another ([`TrapOrder`]: a stream's first trap right after other traps is not
    ///   taken for one) and this one delivered a message (a ping-pong: the peer answers it
    ///   with a store of its own). That fault re-arms this page before it delivers the
    ///   answer, so this task's next store faults; the worker is not woken (no wake-up, no
    ///   preemption of the peer that is about to answer, no migration). While the traps are a
    ///   ping-pong the worker rescans every jiffy; a rescan that finds WQEs no trap saw (the
    ///   other fault did not come: a stream began) makes traps wake the worker until they
    ///   show the pattern again.
    /// * the worker otherwise (a stream on one page): it waits, from another CPU, until the
    ///   page differs, serves the page's queues while they keep bringing work (a polling
    ///   window, on a CPU no other task wants), then re-arms it and serves what landed.
    fn trap_rung(&self, page: &Arc<TrapPage>, func: usize, uar: u32, id: u64) {
        if let Some(t) = self.traps.get(func) {
            t.fetch_add(1, Relaxed);
        }
        let Ok(mut lists) = TrapLists::new() else {
            // No memory for the lists: the worker's full pass serves the page; its rescans
            // read the page while it stays installed.
            self.kick();
            return;
        };
        let TrapLists {
            peers,
            rearmed,
            pages,
            dbs,
        } = &mut *lists;
        let before = snapshot(page);
        let cpu = kthread::current_cpu();
        let at = self.now_ns();
        let pingpong = {
            let mut w = self.wake.lock();
            let pingpong = w.order.trap(id);
            for (dst, src) in peers.iter_mut().zip(w.traps.iter_mut()) {
                if src.as_ref().is_some_and(|t| !Arc::ptr_eq(&t.page, page)) {
                    *dst = src.take();
                }
            }
            // Queued before the pass below, which delivers the message: the peer's fault
            // that answers it may come before this one returns, and must find the page.
            match w
                .traps
                .iter_mut()
                .flatten()
                .find(|t| Arc::ptr_eq(&t.page, page))
            {
                // Already queued: its store is the one pending now.
                Some(t) => {
                    t.before = before;
                    t.cpu = cpu;
                    t.at = at;
                }
                None => {
                    if let Some(slot) = w.traps.iter_mut().find(|t| t.is_none()) {
                        *slot = Some(PendingTrap {
                            page: page.clone(),
                            func,
                            uar,
                            before,
                            cpu,
                            at,
                        });
                    }
                }
            }
            pingpong
        };
        // The other pages first: a ping-pong peer's page is re-armed before its answer is
        // delivered below.
        let (mut np, mut ndb) = (0, 0);
        let mut left = false;
        for (slot, done) in peers.iter_mut().zip(rearmed.iter_mut()) {
            let Some(t) = slot.as_ref() else { continue };
            if !self.peer_landed(t, cpu) {
                left = true;
                continue;
            }
            let r0 = self.now_ns();
            let all = t.page.try_rearm();
            self.served
                .rearm_ns
                .fetch_add(self.now_ns().saturating_sub(r0), Relaxed);
            if !all {
                // An mm whose lock was busy: the worker re-arms the rest.
                left = true;
                continue;
            }
            self.served.rearms_peer.fetch_add(1, Relaxed);
            ndb = t.doorbells(dbs, ndb);
            if let Some(p) = pages.get_mut(np) {
                *p = Some((t.func, t.uar));
                np += 1;
            }
            *done = slot.take();
        }
        let delivered = self.serve_inline(
            func,
            uar,
            dbs.get(..ndb).unwrap_or(&[]),
            pages.get(..np).unwrap_or(&[]),
        );
        let quiet = {
            let mut w = self.wake.lock();
            w.requeue(peers);
            let quiet = pingpong && !left && delivered;
            if !quiet {
                w.trapped = true;
            }
            quiet
        };
        if quiet {
            self.served.traps_quiet.fetch_add(1, Relaxed);
        } else {
            self.cv.notify_one();
        }
        // The references go here, outside every lock.
        drop(lists);
    }

    /// Records a UAR fault of page `id` (in the fault handler: the storing task's pass, on its
    /// way back to user space, may come after the worker delivered its message and the peer
    /// answered it with a fault of its own) and returns whether the fabric's last UAR fault
    /// was that page's too, with no worker pass begun or ended since: a second store in a row
    /// to one page is a stream's ([`UarBell::emulate_stores`] leaves it to the installed
    /// page), unless a worker pass may have delivered another page's message in between (its
    /// doorbell record is written before its store faults).
    fn faulted_last(&self, id: u64, func: usize, uar: u32) -> bool {
        let mut w = self.wake.lock();
        let now = (id, w.passes);
        w.last_fault_page = (func, uar);
        core::mem::replace(&mut w.last_fault, now) == now
    }

    /// A worker pass begins or ends (under the fabric lock: [`Wake::passes`]); `polled`: the
    /// page of a pass that runs that page's queues only (a polling window, a trap pass over
    /// one page). Such a pass over the page that faulted last runs none of another page's
    /// WQEs, so it does not end a stream (each pass over a stream's own page, its trap's and
    /// its polling windows', made its next store an emulated one).
    fn worker_pass_edge(&self, polled: Option<(usize, u32)>) {
        let mut w = self.wake.lock();
        if polled != Some(w.last_fault_page) {
            w.passes += 1;
        }
    }

    /// A store of user space to UAR page `uar` of function `func` was emulated in its fault
    /// (`len` bytes at `offset`, in the page already; called on the storing task's way back to
    /// user space, before it resumes; the page is not installed, so there is
    /// nothing to re-arm): what a device sees of an MMIO write. A store to a doorbell
    /// (`Doorbell::at`: the CQ arm at 0x20, the send doorbell at 0x800 and 0x900) hands the
    /// doorbell's 8 bytes to the engine; it, or a store to another blue-flame register
    /// ([`UAR_WATCHED`]), runs a pass over the page's queues, in this task,
    /// waiting for the fabric lock if a pass or a command holds it (handing the store to the
    /// worker instead made a wake-up per store, and a cascade of them while the lock was
    /// busy); the message is delivered before the storing task resumes. A store elsewhere in
    /// the page (the rest of a BlueFlame copy, whose first 8 bytes are the doorbell) only
    /// changes the page. The worker is woken only to start its rescans (the first QP a
    /// pass serves: receives and retries need no store) or for work the pass left.
    fn trap_stored(&self, page: &Arc<TrapPage>, func: usize, uar: u32, offset: usize, len: usize) {
        if let Some(t) = self.traps.get(func) {
            t.fetch_add(1, Relaxed);
        }
        self.served.stores_emulated.fetch_add(1, Relaxed);
        // The doorbell words the store wrote into.
        let mut dbs: [Option<PendingDb>; 2] = [None; 2];
        let (mut ndb, mut serve) = (0, false);
        for word in [offset & !7, (offset + len - 1) & !7] {
            if !UAR_WATCHED.contains(&word) {
                continue;
            }
            serve = true;
            let Some(db) = u32::try_from(word).ok().and_then(Doorbell::at) else {
                continue;
            };
            if dbs.iter().flatten().any(|d: &PendingDb| d.db == db) {
                continue;
            }
            let mut v = [0u8; 8];
            if page.page().read(word, &mut v).is_err() {
                continue;
            }
            if let Some(slot) = dbs.get_mut(ndb) {
                *slot = Some(PendingDb {
                    func,
                    uar,
                    db,
                    value: u64::from_be_bytes(v),
                });
                ndb += 1;
            }
        }
        if !serve {
            return;
        }
        let (outcome, _, rescans) = self.inline_pass(self.fws.lock(), func, uar, &dbs, &[], true);
        if outcome.more || outcome.next_deadline_ns.is_some() {
            // A long queue, or a retry (RNR, ACK timeout) due later: the worker's pass
            // continues it and sleeps until the deadline.
            self.kick();
        } else if rescans {
            // The safety net of the rescans (a store that took the installed way); no store
            // goes unseen here, so a worker that stops rescanning just after this check
            // loses nothing the next store will not bring.
            self.kick_served();
        }
    }

    /// Whether the store of `t`'s last fault has landed, waiting for it until
    /// [`PEER_LAND_WAIT_NS`] after that fault unless its task ran on this CPU (`cpu`: then it
    /// is not running). A store that has not landed by then (its task was preempted, or it
    /// stored what the page held) is left to the worker.
    fn peer_landed(&self, t: &PendingTrap, cpu: u32) -> bool {
        if snapshot(&t.page) != t.before {
            return true;
        }
        if t.cpu != cpu {
            let end = t.at.saturating_add(PEER_LAND_WAIT_NS);
            while self.now_ns() < end {
                if snapshot(&t.page) != t.before {
                    return true;
                }
                kernel::processor::cpu_relax();
            }
        }
        self.served.peer_land_timeouts.fetch_add(1, Relaxed);
        false
    }

    /// Runs a short engine pass over the queues that ring UAR page `uar` of function `func`
    /// (`engine::run_uar`) in the faulting task's context, after the doorbell values `dbs`
    /// and the queues of the pages `peers` (re-armed by this fault: what landed on them
    /// without a fault), unless the worker (or another faulting task) holds the fabric:
    /// the doorbell records, which libmlx5 writes before its UAR store, already say what the
    /// store announces (a send doorbell's producer index, a CQ arm request), so the WQE runs
    /// and its CQEs and events arrive before the storing task even returns to user space.
    /// Returns whether it ran, finished and executed a WQE of this page (a message that a
    /// ping-pong's peer answers); if it did not run or finish, the worker does the rest (the
    /// peers' doorbells as a kick). In the faulting task on its way back to user space (or, if
    /// no memory was left for that, in its page-fault handler), which may sleep; the fabric
    /// lock is not held by this task (the engine never touches user page tables).
    fn serve_inline(
        &self,
        func: usize,
        uar: u32,
        dbs: &[Option<PendingDb>],
        peers: &[Option<(usize, u32)>],
    ) -> bool {
        let Some(mut fws) = self.fws.try_lock() else {
            self.served.inline_busy.fetch_add(1, Relaxed);
            if !peers.is_empty() {
                {
                    let mut w = self.wake.lock();
                    for d in dbs.iter().flatten() {
                        w.queue_db(*d);
                    }
                    w.kicked = true;
                }
                self.cv.notify_one();
            }
            return false;
        };
        let mut sw = self.switch.lock();
        let now = self.now_ns();
        for d in dbs.iter().flatten() {
            if let Some(fw) = fws.get_mut(d.func) {
                super::engine_glue::doorbell(fw, d.uar, d.db, d.value);
            }
        }
        let mut outcome = super::engine_glue::RunOutcome::default();
        for &(f, u) in peers.iter().flatten() {
            outcome.merge(super::engine_glue::run_uar(
                &mut fws,
                &self.iommus,
                self.wire(&mut sw),
                (f, u),
                now,
                INLINE_BUDGET,
                &|| self.cmd_waits(),
            ));
        }
        let own = super::engine_glue::run_uar(
            &mut fws,
            &self.iommus,
            self.wire(&mut sw),
            (func, uar),
            now,
            INLINE_BUDGET,
            &|| self.cmd_waits(),
        );
        outcome.merge(own);
        self.wire_tx(&mut fws);
        let events = fws.iter().any(|f| f.has_events());
        drop(sw);
        drop(fws);
        self.served.inline_passes.fetch_add(1, Relaxed);
        self.served
            .wqes_inline
            .fetch_add(u64::from(outcome.wqes), Relaxed);
        self.served
            .inline_ns
            .fetch_add(self.now_ns().saturating_sub(now), Relaxed);
        if events {
            self.deliver();
        }
        if outcome.more {
            self.kick();
        }
        !outcome.more && own.wqes != 0
    }

    /// The storing task's pass of [`Fabric::trap_stored`] (the installed path's is
    /// [`Fabric::serve_inline`]'s own), with the fabric
    /// lock (`fws`) this task took: the doorbell values `dbs`, then the queues of the
    /// pages `peers` and of UAR page `uar` of function `func` (`engine::run_uar`, at most
    /// [`INLINE_BUDGET`] WQEs each), the packets the engine queued sent, the lock released and
    /// the events delivered. Returns what all of it did, what `uar`'s queues did, and, if
    /// `rescans` asks, whether the worker should start its rescans (it sleeps until kicked and
    /// a function serves a QP).
    fn inline_pass(
        &self,
        mut fws: kernel::sync::MutexGuard<'_, KVec<KVBox<Fw>>>,
        func: usize,
        uar: u32,
        dbs: &[Option<PendingDb>],
        peers: &[Option<(usize, u32)>],
        rescans: bool,
    ) -> (
        super::engine_glue::RunOutcome,
        super::engine_glue::RunOutcome,
        bool,
    ) {
        let mut sw = self.switch.lock();
        let now = self.now_ns();
        for d in dbs.iter().flatten() {
            if let Some(fw) = fws.get_mut(d.func) {
                super::engine_glue::doorbell(fw, d.uar, d.db, d.value);
            }
        }
        let mut run = |fws: &mut KVec<KVBox<Fw>>, page: (usize, u32)| {
            super::engine_glue::run_uar(
                fws,
                &self.iommus,
                self.wire(&mut sw),
                page,
                now,
                INLINE_BUDGET,
                &|| self.cmd_waits(),
            )
        };
        let mut outcome = super::engine_glue::RunOutcome::default();
        for &page in peers.iter().flatten() {
            outcome.merge(run(&mut fws, page));
        }
        let own = run(&mut fws, (func, uar));
        outcome.merge(own);
        self.wire_tx(&mut fws);
        let events = fws.iter().any(|f| f.has_events());
        // The walk over every QP only while the worker sleeps until kicked.
        let served =
            rescans && self.wake.lock().rescan.is_none() && fws.iter().any(|f| f.has_served_qp());
        drop(sw);
        drop(fws);
        self.served.inline_passes.fetch_add(1, Relaxed);
        self.served
            .wqes_inline
            .fetch_add(u64::from(outcome.wqes), Relaxed);
        self.served
            .inline_ns
            .fetch_add(self.now_ns().saturating_sub(now), Relaxed);
        if events {
            self.deliver();
        }
        (outcome, own, served)
    }

    /// A polling window over `t`'s page, whose store has landed: serves the page's queues,
    /// with the page still installed (later stores land without a fault), as long as they
    /// bring work at least every [`POLL_IDLE_NS`], for at most [`POLL_MAX_NS`], and only while
    /// this thread is alone on its CPU (a spinning real-time thread must not keep a task from
    /// running: a ping-pong's peer, a receiver that reposts its buffers) and nothing else is
    /// queued for it. A real device keeps processing a send queue as long as it has work;
    /// the caller re-arms the page afterwards.
    fn poll(&self, t: &PendingTrap) {
        let start = self.now_ns();
        let mut last = start;
        let mut now = start;
        let mut wqes = 0u64;
        while kthread::alone_on_cpu() && !self.work_waiting() && !kthread::should_stop() {
            let (o, events) = {
                let mut fws = self.fws.lock();
                self.worker_pass_edge(Some((t.func, t.uar)));
                let mut sw = self.switch.lock();
                let o = super::engine_glue::run_uar(
                    &mut fws,
                    &self.iommus,
                    self.wire(&mut sw),
                    (t.func, t.uar),
                    now,
                    BUDGET,
                    &|| self.cmd_waits(),
                );
                self.wire_tx(&mut fws);
                self.worker_pass_edge(Some((t.func, t.uar)));
                (o, fws.iter().any(|f| f.has_events()))
            };
            if events {
                self.deliver();
            }
            now = self.now_ns();
            if o.wqes != 0 {
                wqes += u64::from(o.wqes);
                last = now;
            } else if now.saturating_sub(last) >= POLL_IDLE_NS {
                break;
            }
            if now.saturating_sub(start) >= POLL_MAX_NS {
                break;
            }
            kernel::processor::cpu_relax();
        }
        if wqes != 0 {
            self.served.polls.fetch_add(1, Relaxed);
            self.served.wqes_poll.fetch_add(wqes, Relaxed);
            self.served
                .poll_ns
                .fetch_add(now.saturating_sub(start), Relaxed);
        }
    }

    /// Sends the RoCE v2 packets the engine queued out of each function's segment port
    /// (`fws` is the locked fabric), through the fault injection ([`Self::wire_inject`]).
    fn wire_tx(&self, fws: &mut KVec<KVBox<Fw>>) {
        if let Some(seg) = self.ether.as_ref() {
            for (i, fw) in fws.iter_mut().enumerate() {
                fw.wire_drain(|f| {
                    self.wire_inject(SENT, i, f, |p, g| {
                        seg.send(p, g);
                    })
                });
            }
        }
    }

    /// What happens to the next RoCE v2 frame (the module parameters `wire_drop`,
    /// `wire_dup`, `wire_reorder`, `wire_corrupt`: every Nth frame sent or received, one
    /// count for all, is dropped, doubled, held back behind the next, or corrupted; the first
    /// that applies): [`Fault::Pass`] without fault injection.
    fn wire_fault(&self) -> Fault {
        use crate::module_parameters as mp;
        let every = [
            (mp::wire_drop.value(), Fault::Drop),
            (mp::wire_dup.value(), Fault::Dup),
            (mp::wire_reorder.value(), Fault::Hold),
            (mp::wire_corrupt.value(), Fault::Corrupt),
        ];
        if every.iter().all(|(v, _)| *v == 0) {
            return Fault::Pass;
        }
        let n = self.wire_seen.fetch_add(1, Relaxed) + 1;
        every
            .iter()
            .find(|(v, _)| *v != 0 && n % u64::from(*v) == 0)
            .map_or(Fault::Pass, |(_, f)| *f)
    }

    /// Hands RoCE v2 frame `frame` of `port` going direction `dir` ([`SENT`], [`RECEIVED`])
    /// to `out` as the fault injection says (`out` may get none, one or two frames; a frame
    /// held back comes after the next one that goes on). A copy that cannot be allocated
    /// lets the frame pass as it is.
    fn wire_inject(
        &self,
        dir: usize,
        port: usize,
        frame: &[u8],
        mut out: impl FnMut(usize, &[u8]),
    ) {
        let copy = |f: &[u8]| {
            let mut c = KVec::new();
            c.extend_from_slice(f, GFP_ATOMIC).ok().map(|()| c)
        };
        match self.wire_fault() {
            Fault::Drop => return,
            Fault::Pass => out(port, frame),
            Fault::Dup => {
                out(port, frame);
                out(port, frame);
            }
            Fault::Corrupt => match copy(frame) {
                Some(mut c) => {
                    // The last byte before the ICRC (or, in a padded frame, in it).
                    if let Some(b) = c.len().checked_sub(5).and_then(|i| c.get_mut(i)) {
                        *b ^= 0x20;
                    }
                    out(port, &c);
                }
                None => out(port, frame),
            },
            Fault::Hold => match copy(frame) {
                Some(c) => {
                    let prev = self
                        .wire_held
                        .lock()
                        .get_mut(dir)
                        .and_then(|h| h.replace((port, c)));
                    if let Some((p, f)) = prev {
                        out(p, &f);
                    }
                    return;
                }
                None => out(port, frame),
            },
        }
        let held = self.wire_held.lock().get_mut(dir).and_then(Option::take);
        if let Some((p, f)) = held {
            out(p, &f);
        }
    }

    /// Whether a kick or a trap waits for the worker.
    fn work_waiting(&self) -> bool {
        let w = self.wake.lock();
        w.kicked || w.trapped
    }

    /// Nanoseconds since the fabric was made (the engine's clock).
    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(0)
    }

    /// Takes the trap pages that were written to, returns which (function, UAR) each was, for
    /// the pass over their queues, and re-arms those whose store has landed (all of them for a
    /// rescan), turning what they hold into doorbell values for the pass (the CQ arm at 0x20
    /// and the send doorbell at 0x800, as big-endian 64-bit stores: a first CQ arm, `sn` 0 and
    /// `ci` 0, looks like the zeroed arm record, so only the store shows it). A store that
    /// lands after the re-arm faults and rings again; one that landed before is in the page
    /// and the records now. A page whose store did not land goes back to the queue. Sleeps
    /// (the re-arm takes `mmap_lock`s, the wait may move this thread): no lock is held.
    fn take_traps(
        &self,
        pages: &mut [Option<(usize, u32)>; PENDING_TRAPS],
        dbs: &mut [Option<PendingDb>; PENDING],
        mut ndb: usize,
        all: bool,
    ) -> (usize, usize) {
        // Its two lists on the heap (3.3 KB): a polling window runs the engine below.
        let Ok(mut lists) = TrapLists::new() else {
            // The traps stay queued for the next wake; the rescans read their pages.
            return (0, ndb);
        };
        let TrapLists {
            peers: traps,
            rearmed,
            ..
        } = &mut *lists;
        {
            let mut w = self.wake.lock();
            w.trapped = false;
            for (dst, src) in traps.iter_mut().zip(w.traps.iter_mut()) {
                *dst = src.take();
            }
        }
        let mut n = 0;
        for (slot, done) in traps.iter_mut().zip(rearmed.iter_mut()) {
            let Some(t) = slot.as_ref() else { continue };
            if let Some(p) = pages.get_mut(n) {
                *p = Some((t.func, t.uar));
                n += 1;
            }
            if !all && !self.landed(t) {
                self.served.rearms_deferred.fetch_add(1, Relaxed);
                continue;
            }
            if all && self.landing(t) {
                // Its store is still under way (a ping-pong's page, waiting for the peer's
                // fault, which waits as long): a re-arm now would fault it again, and take
                // the page for a stream's. The next rescan takes it.
                self.served.rearms_deferred.fetch_add(1, Relaxed);
                continue;
            }
            if !all {
                self.poll(t);
            }
            let r0 = self.now_ns();
            t.page.rearm();
            self.served
                .rearm_ns
                .fetch_add(self.now_ns().saturating_sub(r0), Relaxed);
            ndb = t.doorbells(dbs, ndb);
            // Re-armed: its reference goes below, outside every lock.
            *done = slot.take();
        }
        // The pages left installed wait for a later wake.
        self.wake.lock().requeue(traps);
        // The references go here, outside every lock.
        drop(lists);
        (n, ndb)
    }

    /// Whether the store of `t`'s last fault may still land: the page does not differ yet and
    /// the fault is less than [`PEER_LAND_WAIT_NS`] old.
    fn landing(&self, t: &PendingTrap) -> bool {
        self.now_ns().saturating_sub(t.at) < PEER_LAND_WAIT_NS && snapshot(&t.page) == t.before
    }

    /// Whether the store of `t`'s last fault has landed: at once if the page differs from
    /// before it, or after waiting for the storing task for up to [`LAND_WAIT_NS`] from another
    /// CPU (this thread moves off the task's CPU first if it runs there: a real-time thread
    /// would keep the task from storing). Sleeps (a move).
    fn landed(&self, t: &PendingTrap) -> bool {
        if snapshot(&t.page) != t.before {
            return true;
        }
        if kthread::current_cpu() == t.cpu {
            // One CPU only: the rescans re-arm the page.
            if kthread::move_off_cpu(t.cpu).is_err() {
                return false;
            }
            self.served.worker_moves.fetch_add(1, Relaxed);
        }
        let start = self.now_ns();
        let mut landed = false;
        while self.now_ns().saturating_sub(start) < LAND_WAIT_NS {
            if snapshot(&t.page) != t.before {
                landed = true;
                break;
            }
            kernel::processor::cpu_relax();
        }
        self.served
            .land_spin_ns
            .fetch_add(self.now_ns().saturating_sub(start), Relaxed);
        if landed {
            self.served.land_waits.fetch_add(1, Relaxed);
        } else {
            self.served.land_timeouts.fetch_add(1, Relaxed);
        }
        landed
    }

    /// Waits for a kick, a trap, a rescan or a stop; returns the queued doorbells and whether
    /// a full pass is due (a kick or a rescan; a trap alone serves its pages), or `None` to
    /// stop.
    fn wait(&self, dbs: &mut [Option<PendingDb>; PENDING]) -> Option<(usize, Woken)> {
        let mut w = self.wake.lock();
        let why = loop {
            if w.stop || kthread::should_stop() {
                return None;
            }
            if w.kicked {
                break Woken::Kick;
            }
            if w.trapped {
                break Woken::Trap;
            }
            match w.rescan {
                Some(j) => {
                    // Woken, timed out or (kthreads take no signals) anything else: a kick or
                    // a trap is served as such, anything else rescans.
                    let _ = self.cv.wait_interruptible_timeout(&mut w, j);
                    break if w.kicked {
                        Woken::Kick
                    } else if w.trapped {
                        Woken::Trap
                    } else {
                        Woken::Rescan
                    };
                }
                None => {
                    let _ = self.cv.wait_interruptible(&mut w);
                }
            }
        };
        w.kicked = false;
        let n = w.n;
        for (dst, src) in dbs.iter_mut().zip(w.dbs.iter_mut()).take(n) {
            *dst = src.take();
        }
        w.n = 0;
        Some((n, why))
    }

    /// One engine pass: the queued doorbells, then the engine over every function (`full`)
    /// or over the queues of the trapped pages only; the events it queued go to the handlers
    /// afterwards. Returns whether to pass again at once, and when to rescan otherwise.
    fn pass(
        &self,
        dbs: &[Option<PendingDb>],
        pages: &[Option<(usize, u32)>],
        why: Woken,
    ) -> (bool, Option<kernel::time::Jiffies>) {
        let full = why != Woken::Trap;
        // A trap pass over one page's queues (a stream's) does not end that page's stream.
        let one = if full { None } else { one_page(dbs, pages) };
        let now = self.now_ns();
        let (outcome, any_qp, events) = {
            let mut fws = self.fws.lock();
            self.worker_pass_edge(one);
            let mut sw = self.switch.lock();
            for d in dbs.iter().flatten() {
                if let Some(fw) = fws.get_mut(d.func) {
                    super::engine_glue::doorbell(fw, d.uar, d.db, d.value);
                }
            }
            let rx = core::mem::replace(&mut *self.wire_rx.lock(), KVec::new());
            for (func, frame) in rx.iter() {
                super::engine_glue::wire_rx(&mut fws, &self.iommus, *func, frame, now);
            }
            let mut outcome = super::engine_glue::RunOutcome::default();
            if full {
                outcome = super::engine_glue::run(
                    &mut fws,
                    &self.iommus,
                    self.wire(&mut sw),
                    now,
                    BUDGET,
                    &|| self.cmd_waits(),
                );
            } else {
                for &(func, uar) in pages.iter().flatten() {
                    let o = super::engine_glue::run_uar(
                        &mut fws,
                        &self.iommus,
                        self.wire(&mut sw),
                        (func, uar),
                        now,
                        BUDGET,
                        &|| self.cmd_waits(),
                    );
                    outcome.merge(o);
                }
            }
            self.wire_tx(&mut fws);
            // Rescans only while a QP can do work: 100 contexts with idle QPs (a hot unplug
            // under load) had the worker walk every CQ's arm record every 16 jiffies, at
            // real-time priority and under the fabric lock that the destroy commands wait for.
            let any_qp = fws.iter().any(|f| f.has_served_qp());
            // Frames from the wire are other pages' messages.
            self.worker_pass_edge(one.filter(|_| rx.is_empty()));
            (outcome, any_qp, fws.iter().any(|f| f.has_events()))
        };
        self.served.worker_passes.fetch_add(1, Relaxed);
        let by = match why {
            Woken::Kick => &self.served.wqes_kick,
            Woken::Trap => &self.served.wqes_trap,
            Woken::Rescan => &self.served.wqes_rescan,
        };
        by.fetch_add(u64::from(outcome.wqes), Relaxed);
        self.served
            .worker_ns
            .fetch_add(self.now_ns().saturating_sub(now), Relaxed);
        if events {
            self.deliver();
        }
        let rescan = if any_qp {
            let mut w = self.wake.lock();
            if why == Woken::Rescan && outcome.wqes != 0 {
                // Stores no trap served: a page left to another page's fault that did not
                // come (a stream began). Traps wake the worker until they show a ping-pong
                // again.
                w.order.reset();
            }
            // During a ping-pong a page is left to the peer's fault: if that does not come (a
            // stream on the page begins), the next rescan finds the stores, a jiffy later.
            w.idle = if outcome.wqes != 0 || !full || w.order.pingpong() {
                1
            } else {
                (w.idle * 2).min(IDLE_RESCAN_MAX)
            };
            Some(w.idle)
        } else {
            None
        };
        let mut rescan = rescan;
        if let Some(d) = outcome.next_deadline_ns {
            let j = d.saturating_sub(now).div_ceil(ns_per_jiffy()).max(1);
            let j = kernel::time::Jiffies::try_from(j).unwrap_or(kernel::time::Jiffies::MAX);
            rescan = Some(rescan.map_or(j, |r: kernel::time::Jiffies| r.min(j)));
        }
        (outcome.more, rescan)
    }

    /// Takes every function's queued events (in batches, the fabric lock held only while
    /// taking) and hands them to its handler.
    fn deliver(&self) {
        let hs = self.handlers.lock();
        for (i, h) in hs.iter().enumerate() {
            loop {
                let mut batch = [None::<HwEvent>; EVENT_BATCH];
                let n = {
                    let mut fws = self.fws.lock();
                    let Some(fw) = fws.get_mut(i) else { break };
                    let mut n = 0;
                    for slot in batch.iter_mut() {
                        match super::engine_glue::next_event(fw) {
                            Some(e) => {
                                *slot = Some(e);
                                n += 1;
                            }
                            None => break,
                        }
                    }
                    n
                };
                if let Some(h) = h {
                    for e in batch.iter().flatten() {
                        h.event(*e);
                    }
                }
                if n < EVENT_BATCH {
                    break;
                }
            }
        }
    }
}

/// RoCE v2 frames from the segment: queued for the worker's next pass (copied: the sender's
/// buffer is gone when this returns), and the worker kicked.
impl RoceRx for Fabric {
    fn roce_rx(&self, port: usize, frame: &[u8]) {
        self.wire_inject(RECEIVED, port, frame, |p, f| {
            let mut copy = KVec::new();
            if copy.extend_from_slice(f, GFP_ATOMIC).is_err() {
                return;
            }
            let mut q = self.wire_rx.lock();
            if q.len() < WIRE_RX_MAX {
                let _ = q.push((p, copy), GFP_ATOMIC);
            }
        });
        self.kick();
    }
}

impl ThreadBody for Fabric {
    fn run(&self) {
        let mut dbs = [None; PENDING];
        let mut pages = [None; PENDING_TRAPS];
        while let Some((n, why)) = self.wait(&mut dbs) {
            // A rescan re-arms every page: a store that faulted just before it may fault once
            // more, but the next rescan is a jiffy away, so nothing loops.
            let all = why == Woken::Rescan;
            let (np, n) = self.take_traps(&mut pages, &mut dbs, n, all);
            let (more, rescan) = self.pass(
                dbs.get(..n).unwrap_or(&[]),
                pages.get(..np).unwrap_or(&[]),
                why,
            );
            let mut w = self.wake.lock();
            w.rescan = rescan;
            if more || (rescan.is_none() && w.served_since) {
                w.kicked = true;
            }
            w.served_since = false;
            drop(w);
            if more {
                kthread::cond_resched();
            }
        }
    }

    fn request_stop(&self) {
        self.wake.lock().stop = true;
        self.cv.notify_all();
    }
}

/// A fabric and its worker thread: what the functions on the fabric share. Dropping the last
/// reference (or [`FabricWorker::stop`]) stops the worker.
#[pin_data(PinnedDrop)]
pub(crate) struct FabricWorker {
    fabric: Arc<Fabric>,
    #[pin]
    thread: Mutex<Option<Registered>>,
}

impl FabricWorker {
    /// A fabric of `fws` (all of `link_layer`) with a running worker; an InfiniBand fabric's
    /// switch, with the switch port each function's port 1 is linked to; an Ethernet fabric's
    /// segment is `ether`, or a new one.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, the thread's creation error.
    pub(crate) fn new(
        link_layer: LinkLayer,
        fws: KVec<KVBox<Fw>>,
        switch: Option<KVBox<Switch>>,
        first_ports: KVec<u8>,
        ether: Option<Arc<Segment>>,
    ) -> Result<Arc<Self>> {
        let n = fws.len();
        let mut iommus = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut handlers = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut traps = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            iommus.push(Iommu::new()?, GFP_KERNEL)?;
            handlers.push(None, GFP_KERNEL)?;
            traps.push(Atomic::new(0u64), GFP_KERNEL)?;
        }
        let ether = match link_layer {
            LinkLayer::Ethernet => Some(match ether {
                Some(seg) => seg,
                None => Segment::new()?,
            }),
            LinkLayer::Ib => None,
        };
        let fabric = Arc::pin_init(
            try_pin_init!(Fabric {
                fws <- new_mutex!(fws),
                cmd_waiting: Atomic::new(0),
                switch <- new_mutex!(switch),
                first_ports,
                bells: Atomic::new(0),
                iommus,
                traps,
                served: Served::new(),
                handlers <- new_mutex!(handlers),
                wake <- new_spinlock_irq!(Wake {
                    kicked: false,
                    trapped: false,
                    stop: false,
                    idle: 1,
                    rescan: None,
                    served_since: false,
                    dbs: [None; PENDING],
                    n: 0,
                    traps: [const { None }; PENDING_TRAPS],
                    order: TrapOrder::new(),
                    last_fault: (0, 0),
                    last_fault_page: (usize::MAX, 0),
                    passes: 0,
                }),
                cv <- new_condvar!(),
                start: Instant::now(),
                ether,
                wire_rx <- new_spinlock_irq!(KVec::new()),
                wire_seen: Atomic::new(0),
                wire_held <- new_spinlock_irq!([None, None]),
            }),
            GFP_KERNEL,
        )?;
        // The segment holds the fabric as its RoCE sink until the worker stops.
        if let Some(seg) = fabric.ether.as_ref() {
            let sink: Arc<dyn RoceRx> = fabric.clone();
            seg.set_roce_rx(Some(sink));
        }
        let name = match link_layer {
            LinkLayer::Ib => "ib",
            LinkLayer::Ethernet => "eth",
        };
        let thread = KThread::spawn(fabric.clone(), fmt!("mlx5_fwsim_{}", name))?;
        // The device's silicon never waits for a CPU: a woken worker preempts the programs
        // that busy-poll for its completions.
        thread.set_fifo_low();
        let thread = Registered::new(thread)?;
        Arc::pin_init(
            try_pin_init!(FabricWorker {
                fabric,
                thread <- new_mutex!(Some(thread)),
            }),
            GFP_KERNEL,
        )
    }

    /// The fabric.
    pub(crate) fn fabric(&self) -> &Arc<Fabric> {
        &self.fabric
    }

    /// Stops the worker and waits for it (idempotent). The module's thread registry
    /// (`kthread::Threads`) stops it at unload at the latest, even if a leaked object still
    /// holds a function.
    pub(crate) fn stop(&self) {
        if let Some(seg) = self.fabric.ether.as_ref() {
            seg.set_roce_rx(None);
        }
        let traps = {
            let mut w = self.fabric.wake.lock();
            core::mem::replace(&mut w.traps, [const { None }; PENDING_TRAPS])
        };
        // Pending trap pages are let go outside the spinlock.
        drop(traps);
        let t = self.thread.lock().take();
        // Unregistering stops the thread and waits for it to return.
        drop(t);
    }
}

// `#[pinned_drop]` makes this pin-init's `unsafe impl PinnedDrop`; the code in it is safe.
#[allow(unsafe_code)]
#[pinned_drop]
impl PinnedDrop for FabricWorker {
    fn drop(self: Pin<&mut Self>) {
        self.stop();
    }
}
