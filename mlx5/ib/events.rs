// SPDX-License-Identifier: GPL-2.0

//! Device events to the core: completions to the CQ's completion handler, CQ errors and QP
//! events to the consumers' asynchronous handlers (upstream: `mlx5_eq_comp_int()` finds the
//! `mlx5_core_cq` in the EQ's CQ table and calls `mlx5_ib_cq_comp()`; `mlx5_ib_cq_event()`;
//! `mlx5_ib_qp_event()` through the QP table of `mlx5_ib_qp_event()`/`qp.c`).
//!
//! [`EventTable`] is the device's number → object table (upstream's CQ radix tree and QP
//! table), registered with the function as its [`Mlx5Events`] at `IB_REG`. Each CQ and QP has
//! a target ([`CqTarget`], [`QpTarget`]) holding the consumer's handler.
//!
//! Lifetimes (upstream: `mlx5_core_destroy_cq()` deletes the CQ from the table, then
//! `synchronize_irq()` and waits for the CQ's refcount): destroy first detaches the target —
//! it leaves the table, and its handler is taken out under the target's lock, which every
//! delivery holds while it calls the handler. So once detaching returned, any delivery that
//! found the target has finished, and no later one calls the handler: no callback after
//! destroy returns. A refused destroy attaches the target again. Lock order: table lock,
//! released before the target lock; the device (the simulator's fabric lock) is never held
//! while delivering, and handlers may call back into the driver (poll, arm, post).

use crate::hw::{HwEvent, Mlx5Events};
use crate::ib::devx_events::DevxSubs;
use crate::netdev::NetDevice;
use crate::prm::event::{QpEvent as EqeQp, QueueEvent as Eqe, SrqEvent as EqeSrq};
use ib_core_rs::attr::PortState;
use ib_core_rs::device::IbDevice;
use ib_core_rs::event::{Event, EventKind};
use ib_core_rs::verbs::{CqHandler, QpEvent, QpHandler, SrqEvent, SrqHandler};
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::{new_mutex, new_spinlock_irq, sync::Arc, sync::Mutex, sync::SpinLockIrq};

/// What every target has: the object's number (set when it is attached) and the consumer's
/// handler, which every delivery holds the lock of while it calls it.
#[pin_data]
pub(crate) struct Slot<H: ?Sized + 'static> {
    num: Atomic<u32>,
    #[pin]
    handler: SpinLockIrq<Option<Arc<H>>>,
}

impl<H: ?Sized + 'static> Slot<H> {
    /// A slot with `handler`, numbered at attach.
    fn new(handler: Option<&Arc<H>>) -> impl PinInit<Self> {
        let handler = handler.cloned();
        pin_init!(Self {
            num: Atomic::new(0),
            handler <- new_spinlock_irq!(handler),
        })
    }

    /// Calls `f` with the handler, if there is one, under its lock.
    fn deliver(&self, f: impl FnOnce(&H)) {
        if let Some(h) = &*self.handler.lock() {
            f(h);
        }
    }
}

/// What a CQ's poll needs of a kernel QP whose CQEs it finds (upstream `mlx5_poll_one()` on
/// the QP's `mlx5_ib_wq`s): the work requests the CQE completes retired, their `wr_id`
/// returned. Implemented by the kernel QP's queues (`crate::ib::qp::KernQp`), found by number
/// in the device's QP table ([`EventTable::kern_qp`]).
pub(crate) trait KernQueues: Send + Sync {
    /// A requester CQE of WQE `wqe_counter`: every send WQE up to it is retired; the
    /// `wr_id` of that WQE.
    fn retire_send(&self, wqe_counter: u16) -> u64;

    /// A responder CQE: the oldest receive WQE is retired; its `wr_id`.
    fn retire_recv(&self) -> u64;
}

/// The consumer's side of a CQ's events (upstream `struct mlx5_core_cq` as the EQ sees it).
#[pin_data]
pub(crate) struct CqTarget {
    /// upstream `mcq->arm_sn`: bumped on every completion event; a kernel arm carries its low
    /// two bits.
    pub(crate) arm_sn: Atomic<u32>,
    #[pin]
    slot: Slot<dyn CqHandler>,
}

/// The device's view of a QP (upstream `struct mlx5_core_qp` in the QP table): its event
/// handler and, for a kernel QP, the state `poll_cq` needs to turn its CQEs into work
/// completions.
#[pin_data]
pub(crate) struct QpTarget {
    #[pin]
    slot: Slot<dyn QpHandler>,
    /// A kernel QP's queues.
    pub(crate) kern: Option<Arc<dyn KernQueues>>,
    /// The QP's counter binding (upstream `qp->counter`, `mqp->counter_pending` under
    /// `mqp->mutex`): `modify_qp` holds it across its command, so a bind sees a settled state.
    #[pin]
    pub(crate) cnt: Mutex<QpCnt>,
}

/// What the counter ops need of a QP (see [`QpTarget::cnt`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QpCnt {
    /// The QP's state after its last successful modify.
    pub(crate) state: ib_core_rs::verbs::QpState,
    /// The bound counter's Q counter set (upstream `qp->counter->id`); 0: the port's.
    pub(crate) set: u32,
    /// The set is to be applied at the move to RTS (upstream `counter_pending`).
    pub(crate) pending: bool,
}

/// The device's view of an SRQ (upstream `struct mlx5_core_srq` in the SRQ table): its event
/// handler.
#[pin_data]
pub(crate) struct SrqTarget {
    #[pin]
    slot: Slot<dyn SrqHandler>,
}

impl SrqTarget {
    /// A target for an SRQ being created.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(handler: Option<&Arc<dyn SrqHandler>>) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(SrqTarget {
                slot <- Slot::new(handler),
            }),
            GFP_KERNEL,
        )
    }

    fn deliver(&self, ev: SrqEvent) {
        self.slot.deliver(|h| h.event(ev));
    }
}

impl CqTarget {
    /// A target for a CQ being created (its number comes with the attach).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(handler: Option<&Arc<dyn CqHandler>>) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(CqTarget {
                arm_sn: Atomic::new(0),
                slot <- Slot::new(handler),
            }),
            GFP_KERNEL,
        )
    }

    fn deliver(&self, error: bool) {
        let h = self.slot.handler.lock();
        if !error {
            // upstream mlx5_eq_comp_int(): ++cq->arm_sn (with or without a handler), then the
            // completion handler.
            self.arm_sn.fetch_add(1, Relaxed);
        }
        if let Some(h) = &*h {
            if error {
                h.event();
            } else {
                h.completion();
            }
        }
    }
}

impl QpTarget {
    /// A target for a QP being created.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(
        handler: Option<&Arc<dyn QpHandler>>,
        kern: Option<Arc<dyn KernQueues>>,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(QpTarget {
                slot <- Slot::new(handler),
                kern,
                cnt <- new_mutex!(QpCnt::default()),
            }),
            GFP_KERNEL,
        )
    }

    fn deliver(&self, ev: QpEvent) {
        self.slot.deliver(|h| h.event(ev));
    }
}

/// Objects that have a number and a handler slot, in a table of the [`EventTable`].
pub(crate) trait Target: Sized + 'static {
    /// The consumer's handler.
    type Handler: ?Sized + 'static;

    /// The number and the handler.
    fn slot(&self) -> &Slot<Self::Handler>;

    /// The table of `ev` that objects of this kind are in.
    fn table(ev: &EventTable) -> &SpinLockIrq<Table<Self>>;

    fn num(&self) -> u32 {
        self.slot().num.load(Relaxed)
    }

    fn set_num(&self, n: u32) {
        self.slot().num.store(n, Relaxed)
    }
}

/// Implements [`Target`] for each `Type in table: Handler`: its `slot` field, the
/// [`EventTable`]'s `table`.
macro_rules! targets {
    ($($t:ident in $table:ident: $h:ty),+ $(,)?) => {
        $(
            impl Target for $t {
                type Handler = $h;

                fn slot(&self) -> &Slot<$h> {
                    &self.slot
                }

                fn table(ev: &EventTable) -> &SpinLockIrq<Table<Self>> {
                    &ev.$table
                }
            }
        )+
    };
}

targets!(
    CqTarget in cqs: dyn CqHandler,
    QpTarget in qps: dyn QpHandler,
    SrqTarget in srqs: dyn SrqHandler,
);

/// A table sorted by object number, with room reserved before a create command so that
/// inserting after it cannot fail.
pub(crate) struct Table<T> {
    v: KVec<Arc<T>>,
    reserved: usize,
}

impl<T: Target> Table<T> {
    fn find(&self, n: u32) -> Option<&Arc<T>> {
        self.v
            .binary_search_by_key(&n, |t| t.num())
            .ok()
            .and_then(|i| self.v.get(i))
    }

    /// Inserts in order; within the capacity (a reservation's), so it does not allocate.
    fn insert(&mut self, target: &Arc<T>) -> bool {
        let n = target.num();
        let i = self.v.partition_point(|x| x.num() < n);
        self.v.insert_within_capacity(i, target.clone()).is_ok()
    }
}

use crate::prm::consts::{
    PORT_CHANGE_SUBTYPE_ACTIVE, PORT_CHANGE_SUBTYPE_CLIENT_REREG, PORT_CHANGE_SUBTYPE_DOWN,
    PORT_CHANGE_SUBTYPE_GUID, PORT_CHANGE_SUBTYPE_INITIALIZED, PORT_CHANGE_SUBTYPE_LID,
    PORT_CHANGE_SUBTYPE_PKEY,
};

/// The device's CQ and QP tables (spinlocks: `poll_cq` looks QPs up, from any context).
#[pin_data]
pub(crate) struct EventTable {
    #[pin]
    cqs: SpinLockIrq<Table<CqTarget>>,
    #[pin]
    qps: SpinLockIrq<Table<QpTarget>>,
    #[pin]
    srqs: SpinLockIrq<Table<SrqTarget>>,
    /// The DEVX event subscriptions of the device's contexts (`crate::ib::devx_events`), held
    /// by their event channels too.
    pub(crate) devx: Arc<DevxSubs>,
    /// The registered RDMA device, for device events: set after `IB_REG`, taken before
    /// unregistering (the device holds this table: the reference cycle ends there).
    #[pin]
    ib: SpinLockIrq<Option<Arc<dyn IbDevice>>>,
    /// A fatal error was reported (upstream `!ib_active`): `IB_EVENT_DEVICE_FATAL` is
    /// delivered once, and no port event after it.
    fatal: Atomic<bool>,
    /// The device's ports are Ethernet (RoCE): upstream takes port up/down from the netdev,
    /// not from PORT_CHANGE.
    ethernet: Atomic<bool>,
    /// The RoCE ports' interfaces (upstream `dev->port[i].roce`: `netdev` and
    /// `last_port_state`).
    #[pin]
    roce: SpinLockIrq<KVec<RoceNetdev>>,
}

/// A RoCE port's interface and the port state last reported from it (upstream
/// `struct mlx5_roce`).
struct RoceNetdev {
    port: u8,
    dev: ARef<NetDevice>,
    last: PortState,
}

/// upstream `mlx5_query_port_roce()`: a RoCE port is ACTIVE while its interface is up and has
/// a carrier (`netif_running() && netif_carrier_ok()`), DOWN otherwise.
fn netdev_port_state(dev: &NetDevice) -> PortState {
    if dev.running() && dev.carrier_ok() {
        PortState::Active
    } else {
        PortState::Down
    }
}

/// Room for one entry in a table, taken before a create command.
pub(crate) struct Reservation<'a, T: 'static> {
    table: &'a SpinLockIrq<Table<T>>,
}

impl<T> Drop for Reservation<'_, T> {
    fn drop(&mut self) {
        let mut t = self.table.lock();
        t.reserved = t.reserved.saturating_sub(1);
    }
}

/// Makes room for one more entry: grows the table outside the lock if needed.
fn reserve<T>(m: &SpinLockIrq<Table<T>>) -> Result<Reservation<'_, T>> {
    loop {
        let want = {
            let mut t = m.lock();
            let want = t.v.len() + t.reserved + 1;
            if t.v.capacity() >= want {
                t.reserved += 1;
                return Ok(Reservation { table: m });
            }
            want
        };
        let mut bigger = KVec::with_capacity(want.max(8) * 2, GFP_KERNEL)?;
        let mut t = m.lock();
        if bigger.capacity() >= t.v.len() && t.v.capacity() < bigger.capacity() {
            for x in t.v.drain_all() {
                // Room checked above: this does not allocate.
                if bigger.push_within_capacity(x).is_err() {
                    break;
                }
            }
            core::mem::swap(&mut t.v, &mut bigger);
        }
        // `bigger` (the old storage, or the unused new one) is freed outside the lock.
        drop(t);
        drop(bigger);
    }
}

/// What a detach took out, for a re-attach after a refused destroy.
pub(crate) struct Detached<H: ?Sized> {
    handler: Option<Arc<H>>,
}

impl EventTable {
    /// Empty tables.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(EventTable {
                cqs <- new_spinlock_irq!(Table { v: KVec::new(), reserved: 0 }),
                qps <- new_spinlock_irq!(Table { v: KVec::new(), reserved: 0 }),
                srqs <- new_spinlock_irq!(Table { v: KVec::new(), reserved: 0 }),
                devx: Arc::pin_init(new_spinlock_irq!(KVec::new()), GFP_KERNEL)?,
                ib <- new_spinlock_irq!(None),
                fatal: Atomic::new(false),
                ethernet: Atomic::new(false),
                roce <- new_spinlock_irq!(KVec::new()),
            }),
            GFP_KERNEL,
        )
    }

    /// Room for an object of kind `T` about to be created.
    ///
    /// # Errors
    ///
    /// `ENOMEM` when the table cannot grow.
    pub(crate) fn reserve<T: Target>(&self) -> Result<Reservation<'_, T>> {
        reserve(T::table(self))
    }

    /// Registers a created object as number `n`, in the room `r` reserved for it.
    pub(crate) fn attach<T: Target>(&self, r: Reservation<'_, T>, target: &Arc<T>, n: u32) {
        target.set_num(n);
        let mut t = r.table.lock();
        // The reservation's room: this cannot fail.
        let _ = t.insert(target);
        // The reservation is used up here (its drop gives the room back).
        drop(t);
        drop(r);
    }

    /// Detaches an object being destroyed: when this returns, its handler is not running and
    /// will not be called again.
    pub(crate) fn detach<T: Target>(&self, target: &Arc<T>) -> Detached<T::Handler> {
        let gone = {
            let mut t = T::table(self).lock();
            match t.v.iter().position(|x| Arc::ptr_eq(x, target)) {
                Some(i) => t.v.remove(i).ok(),
                None => None,
            }
        };
        drop(gone);
        // Waits for a delivery in progress: it holds this lock while calling the handler.
        let handler = target.slot().handler.lock().take();
        Detached { handler }
    }

    /// Undoes [`EventTable::detach`] after a refused destroy.
    pub(crate) fn reattach<T: Target>(&self, target: &Arc<T>, d: Detached<T::Handler>) {
        *target.slot().handler.lock() = d.handler;
        let ok = match reserve(T::table(self)) {
            Ok(r) => {
                let ok = r.table.lock().insert(target);
                drop(r);
                ok
            }
            Err(_) => false,
        };
        if !ok {
            // Only after a refused destroy and out of memory: the object stays, without
            // events.
            pr_err!(
                "mlx5_ib_rs: lost the event binding of object 0x{:x}\n",
                target.num()
            );
        }
    }

    /// Sets (after registration) or takes (before unregistering) the RDMA device that device
    /// events are reported on.
    pub(crate) fn set_device(&self, dev: Option<Arc<dyn IbDevice>>, ethernet: bool) {
        self.ethernet.store(ethernet, Relaxed);
        let old = core::mem::replace(&mut *self.ib.lock(), dev);
        drop(old);
    }

    /// Queues `ev` on the registered device (atomic context allowed). The lock is held
    /// across the queueing, so the clone handed over is never the device's last reference
    /// (the table's own is there until [`EventTable::set_device`] takes it): nothing here
    /// can free the device in atomic context.
    fn report(&self, ev: Event) {
        let g = self.ib.lock();
        if let Some(dev) = g.as_ref() {
            if ib_core_rs::device::queue_device_event(dev.clone(), ev).is_err() {
                pr_err!(
                    "mlx5_ib_rs: no memory to report event {}\n",
                    ev.kind.ib_event_type()
                );
            }
        }
    }

    /// Binds RoCE port `port` to its interface; the port's last reported state starts as the
    /// interface's.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn bind_netdev(&self, port: u8, dev: ARef<NetDevice>) -> Result {
        let last = netdev_port_state(&dev);
        let old = {
            let mut v = self.roce.lock();
            let old = match v.iter().position(|r| r.port == port) {
                Some(i) => v.remove(i).ok(),
                None => None,
            };
            v.push(RoceNetdev { port, dev, last }, GFP_ATOMIC)?;
            old
        };
        drop(old);
        Ok(())
    }

    /// Unbinds RoCE port `port` from its interface (before the interface is unregistered,
    /// which waits for the reference this puts).
    pub(crate) fn unbind_netdev(&self, port: u8) {
        let old = {
            let mut v = self.roce.lock();
            match v.iter().position(|r| r.port == port) {
                Some(i) => v.remove(i).ok(),
                None => None,
            }
        };
        // The reference goes outside the lock.
        drop(old);
    }

    /// RoCE port `port`'s interface.
    pub(crate) fn netdev(&self, port: u8) -> Option<ARef<NetDevice>> {
        self.roce
            .lock()
            .iter()
            .find(|r| r.port == port)
            .map(|r| r.dev.clone())
    }

    /// upstream `mlx5_netdev_event()` on `NETDEV_UP`/`NETDEV_DOWN`/`NETDEV_CHANGE` of a RoCE
    /// port's interface: when the port state it gives differs from the one last reported,
    /// `IB_EVENT_PORT_ACTIVE` or `IB_EVENT_PORT_ERR`.
    pub(crate) fn netdev_changed(&self, port: u8) {
        let kind = {
            let mut v = self.roce.lock();
            let Some(r) = v.iter_mut().find(|r| r.port == port) else {
                return;
            };
            let state = netdev_port_state(&r.dev);
            if state == r.last {
                return;
            }
            r.last = state;
            match state {
                PortState::Active => EventKind::PortActive,
                _ => EventKind::PortErr,
            }
        };
        if self.fatal.load(Relaxed) {
            return;
        }
        self.report(Event {
            kind,
            port: u32::from(port),
        });
    }

    /// A QP's target by number (upstream `__mlx5_qp_lookup()`; the counter ops).
    pub(crate) fn qp_target(&self, qpn: u32) -> Option<Arc<QpTarget>> {
        self.qps.lock().find(qpn).cloned()
    }

    /// A kernel QP's queues by number (upstream `__mlx5_qp_lookup()` in `mlx5_poll_one()`).
    pub(crate) fn kern_qp(&self, qpn: u32) -> Option<Arc<dyn KernQueues>> {
        self.qps.lock().find(qpn).and_then(|t| t.kern.clone())
    }

    /// Registered CQs and QPs (leak checks).
    pub(crate) fn len(&self) -> (usize, usize) {
        (self.cqs.lock().v.len(), self.qps.lock().v.len())
    }
}

impl Mlx5Events for EventTable {
    fn event(&self, ev: HwEvent) {
        // upstream: the DEVX notifier and devx_cq_comp() see the event too.
        crate::ib::devx_events::dispatch(&self.devx, &ev);
        match ev {
            HwEvent::Queue(Eqe::Completion { cqn } | Eqe::CqError { cqn }) => {
                let t = self.cqs.lock().find(cqn).cloned();
                if let Some(t) = t {
                    t.deliver(matches!(ev, HwEvent::Queue(Eqe::CqError { .. })));
                }
            }
            HwEvent::Queue(Eqe::Qp { qpn, kind }) => {
                // upstream mlx5_ib_qp_event(): the EQE type → `enum ib_event_type`.
                let kind = match kind {
                    EqeQp::CommEst => QpEvent::CommEst,
                    EqeQp::WqCatas => QpEvent::Fatal,
                    EqeQp::WqInvalReq => QpEvent::ReqErr,
                    EqeQp::WqAccess => QpEvent::AccessErr,
                    EqeQp::LastWqeReached => QpEvent::LastWqeReached,
                    // Not reported yet (upstream: `IB_EVENT_SQ_DRAINED`).
                    EqeQp::SqDrained => return,
                    // A DCT's drain (`dct.rs` waits for none: the device drains at once).
                    EqeQp::DctDrained => return,
                };
                let t = self.qps.lock().find(qpn).cloned();
                if let Some(t) = t {
                    t.deliver(kind);
                }
            }
            HwEvent::Queue(Eqe::Srq { srqn, kind }) => {
                let t = self.srqs.lock().find(srqn).cloned();
                if let Some(t) = t {
                    // upstream mlx5_ib_srq_event().
                    t.deliver(match kind {
                        EqeSrq::Limit => SrqEvent::LimitReached,
                        EqeSrq::Catas => SrqEvent::Err,
                    });
                }
            }
            // upstream mlx5_ib_sys_error_event() + mlx5_ib_handle_sys_error_event(): once
            // (`ib_active`), from a work item (this runs in the notifier's atomic context).
            HwEvent::DeviceFatal => {
                if self.fatal.xchg(true, Relaxed) {
                    return;
                }
                pr_err!("mlx5_ib_rs: mlx5_core reports a fatal device error; IB_EVENT_DEVICE_FATAL to the consumers\n");
                self.report(Event {
                    kind: EventKind::DeviceFatal,
                    port: 1,
                });
            }
            // upstream handle_port_change(): the subtype becomes the event; on an Ethernet
            // port up/down come from the netdev instead (not reported here), as upstream.
            HwEvent::PortChange { port, subtype } => {
                if self.fatal.load(Relaxed) {
                    return;
                }
                let eth = self.ethernet.load(Relaxed);
                let kind = match subtype {
                    PORT_CHANGE_SUBTYPE_ACTIVE if !eth => EventKind::PortActive,
                    PORT_CHANGE_SUBTYPE_DOWN | PORT_CHANGE_SUBTYPE_INITIALIZED if !eth => {
                        EventKind::PortErr
                    }
                    PORT_CHANGE_SUBTYPE_LID => EventKind::LidChange,
                    PORT_CHANGE_SUBTYPE_PKEY => EventKind::PkeyChange,
                    PORT_CHANGE_SUBTYPE_GUID => EventKind::GidChange,
                    PORT_CHANGE_SUBTYPE_CLIENT_REREG => EventKind::ClientReregister,
                    _ => return,
                };
                self.report(Event {
                    kind,
                    port: u32::from(port),
                });
            }
        }
    }
}
