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
//! A user process's UAR store faults on the trap page ([`TrapPage`]). The fault handler runs
//! a pass over the queues that ring that page itself, when the fabric lock is free
//! ([`Fabric::serve_inline`]: the doorbell records already hold what the store announces),
//! so a ping-pong's message is delivered before the storing task returns to user space.
//!
//! The worker is a kernel thread per fabric ([`crate::kthread`]), at the lowest real-time
//! priority (a normal one is woken lazily: it waited for the next tick behind busy-polling
//! programs). A page's fault has it re-arm the pages that rang before, whose stores have
//! landed (the page that rang last waits for the next fault of another page, or the rescan,
//! since its store only lands after the fault returns), and serve their queues again; a kick ([`Fabric::kick`], [`Fabric::ring`]: a doorbell of
//! a kernel queue) runs full passes over every queue while there is work. While any QP
//! exists it also rescans everything, every jiffy after a pass that did work and less often
//! the longer nothing happens (up to [`IDLE_RESCAN_MAX`]), and at the engine's next
//! RNR/ACK-timeout deadline: the doorbell records are the truth and a dropped trap's page
//! is still read. With no QP it sleeps until kicked: an idle fabric costs no CPU. After each
//! pass it delivers the events the engine queued, without the fabric lock, to each
//! function's handler ([`Mlx5Events`]).
//!
//! Lock order: `fws` (the fabric lock), then an IOMMU's table (the engine's memory accesses);
//! `handlers`, then the driver's event locks; `wake` is a leaf (a spinlock: rings come from
//! any context). The fabric lock is never held while calling into the driver or the core.

use super::iommu::Iommu;
use crate::fwsim::profile::LinkLayer;
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

/// A UAR trap page that was written to, and whose page it is.
struct PendingTrap {
    page: Arc<TrapPage>,
    func: usize,
    uar: u32,
    /// The order of the faults: the page that rang last has the highest.
    seq: u64,
}

/// The [`TrapHandler`] of a simulated function's UAR page: a store of user space to the page
/// queues it for the worker, which re-arms the trap and then reads the doorbells it holds.
pub(crate) struct UarBell {
    fabric: Arc<Fabric>,
    func: usize,
    uar: u32,
}

impl UarBell {
    /// The bell of UAR `uar` of function `func` on `fabric`.
    pub(crate) fn new(fabric: &Arc<Fabric>, func: usize, uar: u32) -> Self {
        UarBell {
            fabric: fabric.clone(),
            func,
            uar,
        }
    }
}

impl TrapHandler for UarBell {
    fn rung(&self, page: &Arc<TrapPage>) {
        self.fabric.trap_rung(page, self.func, self.uar);
    }
}

/// The longest rescan interval while QPs exist and nothing happens (jiffies): the rescan
/// is the safety net for stores whose trap was dropped (a full queue) and for retries.
const IDLE_RESCAN_MAX: kernel::time::Jiffies = 16;

/// Offset of the CQ arm doorbell in a UAR page (`MLX5_CQ_DOORBELL`).
const UAR_CQ_DOORBELL: usize = 0x20;
/// Offset of blue-flame register 0 (the send doorbell of `bf_reg_size` 0 contexts).
const UAR_BF0: usize = 0x800;

/// WQEs per engine pass; a pass that runs out is followed by another at once.
const BUDGET: u32 = 256;

/// WQEs of a pass run by a faulting task ([`Fabric::serve_inline`]): a ping-pong's message
/// or two; a longer queue is left to the worker.
const INLINE_BUDGET: u32 = 16;

/// Events taken from one function per lock hold.
const EVENT_BATCH: usize = 32;

/// Nanoseconds per jiffy (`CONFIG_HZ` of the kernel).
fn ns_per_jiffy() -> u64 {
    1_000_000_000 / (kernel::time::msecs_to_jiffies(1000) as u64).max(1)
}

/// A doorbell value waiting for the next pass.
#[derive(Clone, Copy, Debug)]
struct PendingDb {
    func: usize,
    uar: u32,
    db: Doorbell,
    value: u64,
}

/// Why the worker woke.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Woken {
    /// [`Fabric::kick`]/[`Fabric::ring`]: a full pass.
    Kick,
    /// A trap with other pages queued: serve those pages.
    Trap,
    /// The rescan interval passed: a full pass, every queued page re-armed.
    Rescan,
}

/// What wakes the worker.
struct Wake {
    /// A full pass is wanted (a kernel queue's doorbell, a pass that ran out of budget).
    kicked: bool,
    /// Trap pages other than the last one rung are queued (`traps`): re-arm them and serve
    /// their queues.
    trapped: bool,
    /// The next [`PendingTrap::seq`].
    next_seq: u64,
    stop: bool,
    /// The rescan interval while QPs exist and passes find nothing: doubles per idle rescan
    /// up to [`IDLE_RESCAN_MAX`], back to 1 jiffy when a pass does work.
    idle: kernel::time::Jiffies,
    /// Sleep this many jiffies at most before rescanning (`None`: until kicked).
    rescan: Option<kernel::time::Jiffies>,
    dbs: [Option<PendingDb>; PENDING],
    n: usize,
    traps: [Option<PendingTrap>; PENDING_TRAPS],
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
    /// WQEs executed (or flushed) by each kind of pass: in a faulting task, by the worker
    /// for a trap, for a kick, for a rescan. WQEs a rescan finds are stores no trap saw.
    pub(crate) wqes_inline: Atomic<u64>,
    pub(crate) wqes_trap: Atomic<u64>,
    pub(crate) wqes_kick: Atomic<u64>,
    pub(crate) wqes_rescan: Atomic<u64>,
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
            wqes_inline: Atomic::new(0),
            wqes_trap: Atomic::new(0),
            wqes_kick: Atomic::new(0),
            wqes_rescan: Atomic::new(0),
        }
    }
}

/// The functions of one link layer.
#[pin_data]
pub(crate) struct Fabric {
    /// The device state of every function, by index.
    #[pin]
    fws: Mutex<KVec<KVBox<Fw>>>,
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
}

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

    /// Function `index`'s IOMMU.
    pub(crate) fn iommu(&self, index: usize) -> Option<&Arc<Iommu>> {
        self.iommus.get(index)
    }

    /// How many UAR stores of function `index` arrived as trap faults (0 for an index the
    /// fabric does not have).
    pub(crate) fn uar_traps(&self, index: usize) -> u64 {
        self.traps.get(index).map_or(0, |t| t.load(Relaxed))
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

    /// Queues a doorbell value of function `func` for the next pass and kicks. Never sleeps.
    pub(crate) fn ring(&self, func: usize, uar: u32, db: Doorbell, value: u64) {
        {
            let mut w = self.wake.lock();
            let n = w.n;
            // When full, the value is dropped: the doorbell records are the truth, a store
            // is only a wake-up.
            if let Some(slot) = w.dbs.get_mut(n) {
                *slot = Some(PendingDb {
                    func,
                    uar,
                    db,
                    value,
                });
                w.n = n + 1;
            }
            w.kicked = true;
        }
        self.cv.notify_one();
    }

    /// A UAR trap page of function `func` was written to (from the page-fault handler):
    /// queues it once for the worker and kicks. Never sleeps.
    fn trap_rung(&self, page: &Arc<TrapPage>, func: usize, uar: u32) {
        if let Some(t) = self.traps.get(func) {
            t.fetch_add(1, Relaxed);
        }
        self.serve_inline(func, uar);
        // The page is re-armed once its store has landed, which is only after this fault
        // returns: not by a wake-up from here (the worker preempts this task before it
        // stores, and a re-arm then would fault the store again, in a loop), but when another
        // page rings (a ping-pong's peer: by then this store is long done) or at the rescan.
        let others = {
            let mut w = self.wake.lock();
            let seq = w.next_seq;
            w.next_seq = seq.wrapping_add(1);
            match w
                .traps
                .iter_mut()
                .flatten()
                .find(|t| Arc::ptr_eq(&t.page, page))
            {
                // Already queued: its store is the one pending now.
                Some(t) => t.seq = seq,
                None => {
                    if let Some(slot) = w.traps.iter_mut().find(|t| t.is_none()) {
                        *slot = Some(PendingTrap {
                            page: page.clone(),
                            func,
                            uar,
                            seq,
                        });
                    }
                }
            }
            let others = w
                .traps
                .iter()
                .flatten()
                .any(|t| !Arc::ptr_eq(&t.page, page));
            w.trapped |= others;
            others
        };
        if others {
            self.cv.notify_one();
        }
    }

    /// Runs a short engine pass over the queues that ring UAR page `uar` of function `func`
    /// (`engine::run_uar`) in the faulting task's context, unless the worker (or another
    /// faulting task) holds the fabric: the doorbell records, which libmlx5 writes
    /// before its UAR store, already say what the store announces (a send doorbell's
    /// producer index, a CQ arm request), so the WQE runs and its CQEs and events arrive
    /// before the storing task even returns to user space. The worker still re-arms the page
    /// (that takes the `mmap_lock` this fault holds) and passes again; a pass that finds the
    /// work done does nothing. In the page-fault handler, which may sleep; the fabric lock
    /// is not held by this task (the engine never touches user page tables).
    fn serve_inline(&self, func: usize, uar: u32) {
        let Some(mut fws) = self.fws.try_lock() else {
            self.served.inline_busy.fetch_add(1, Relaxed);
            return;
        };
        let now = self.now_ns();
        let outcome =
            super::engine_glue::run_uar(&mut fws, &self.iommus, func, uar, now, INLINE_BUDGET);
        drop(fws);
        self.served.inline_passes.fetch_add(1, Relaxed);
        self.served
            .wqes_inline
            .fetch_add(u64::from(outcome.wqes), Relaxed);
        self.served
            .inline_ns
            .fetch_add(self.now_ns().saturating_sub(now), Relaxed);
        self.deliver();
        if outcome.more {
            self.kick();
        }
    }

    /// Nanoseconds since the fabric was made (the engine's clock).
    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(0)
    }

    /// Re-arms the trap pages that were written to (all of them, or, for a trap's wake-up, all
    /// but the page that rang last: its store may not have landed yet), returns which
    /// (function, UAR) each was, for the passes over their queues, and turns what they hold
    /// into doorbell values for the pass (the CQ arm at 0x20 and the send doorbell at 0x800,
    /// as big-endian 64-bit stores: a first CQ arm, `sn` 0 and `ci` 0, looks like the zeroed
    /// arm record, so only the store shows it). A store that lands after the re-arm faults
    /// and rings again; one that landed before is in the page and the records now. Sleeps
    /// (the re-arm takes `mmap_lock`s): no lock is held.
    fn take_traps(
        &self,
        pages: &mut [Option<(usize, u32)>; PENDING_TRAPS],
        dbs: &mut [Option<PendingDb>; PENDING],
        mut ndb: usize,
        all: bool,
    ) -> (usize, usize) {
        let mut traps: [Option<PendingTrap>; PENDING_TRAPS] = [const { None }; PENDING_TRAPS];
        {
            let mut w = self.wake.lock();
            w.trapped = false;
            let last = w.traps.iter().flatten().map(|t| t.seq).max();
            for (dst, src) in traps.iter_mut().zip(w.traps.iter_mut()) {
                if all || src.as_ref().map(|t| t.seq) != last {
                    *dst = src.take();
                }
            }
            if !all && last.is_some() {
                self.served.rearms_deferred.fetch_add(1, Relaxed);
            }
        }
        let mut n = 0;
        for t in traps.iter().flatten() {
            t.page.rearm();
            if let Some(slot) = pages.get_mut(n) {
                *slot = Some((t.func, t.uar));
                n += 1;
            }
            for (off, db) in [(UAR_CQ_DOORBELL, Doorbell::CqArm), (UAR_BF0, Doorbell::Sq)] {
                let mut v = [0u8; 8];
                if t.page.page().read(off, &mut v).is_err() {
                    continue;
                }
                if let Some(slot) = dbs.get_mut(ndb) {
                    *slot = Some(PendingDb {
                        func: t.func,
                        uar: t.uar,
                        db,
                        value: u64::from_be_bytes(v),
                    });
                    ndb += 1;
                }
            }
        }
        // The references go here, outside every lock.
        drop(traps);
        (n, ndb)
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
        let now = self.now_ns();
        let (outcome, any_qp) = {
            let mut fws = self.fws.lock();
            for d in dbs.iter().flatten() {
                if let Some(fw) = fws.get_mut(d.func) {
                    super::engine_glue::doorbell(fw, d.uar, d.db, d.value);
                }
            }
            let mut outcome = super::engine_glue::RunOutcome::default();
            if full {
                outcome = super::engine_glue::run(&mut fws, &self.iommus, now, BUDGET);
            } else {
                for &(func, uar) in pages.iter().flatten() {
                    let o =
                        super::engine_glue::run_uar(&mut fws, &self.iommus, func, uar, now, BUDGET);
                    outcome.merge(o);
                }
            }
            let any_qp = fws.iter().any(|f| f.counts().qp != 0);
            (outcome, any_qp)
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
        self.deliver();
        let rescan = if any_qp {
            let mut w = self.wake.lock();
            w.idle = if outcome.wqes != 0 || !full {
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
            if more {
                w.kicked = true;
            }
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
    /// A fabric of `fws` (all of `link_layer`) with a running worker.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, the thread's creation error.
    pub(crate) fn new(link_layer: LinkLayer, fws: KVec<KVBox<Fw>>) -> Result<Arc<Self>> {
        let n = fws.len();
        let mut iommus = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut handlers = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut traps = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            iommus.push(Iommu::new()?, GFP_KERNEL)?;
            handlers.push(None, GFP_KERNEL)?;
            traps.push(Atomic::new(0u64), GFP_KERNEL)?;
        }
        let fabric = Arc::pin_init(
            try_pin_init!(Fabric {
                fws <- new_mutex!(fws),
                iommus,
                traps,
                served: Served::new(),
                handlers <- new_mutex!(handlers),
                wake <- new_spinlock_irq!(Wake {
                    kicked: false,
                    trapped: false,
                    next_seq: 0,
                    stop: false,
                    idle: 1,
                    rescan: None,
                    dbs: [None; PENDING],
                    n: 0,
                    traps: [const { None }; PENDING_TRAPS],
                }),
                cv <- new_condvar!(),
                start: Instant::now(),
            }),
            GFP_KERNEL,
        )?;
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

#[pinned_drop]
impl PinnedDrop for FabricWorker {
    fn drop(self: Pin<&mut Self>) {
        self.stop();
    }
}
