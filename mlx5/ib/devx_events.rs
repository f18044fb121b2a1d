// SPDX-License-Identifier: GPL-2.0

//! DEVX event channels (upstream `devx.c`: `struct devx_async_event_file`,
//! `MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC`, `MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT`,
//! `devx_event_notifier()`/`devx_cq_comp()`, `deliver_event()`, `devx_async_event_read()`;
//! libmlx5's `mlx5dv_devx_create_event_channel()`, `mlx5dv_devx_subscribe_devx_event()`,
//! `mlx5dv_devx_get_event()`).
//!
//! A subscription ([`Sub`]) names an event type, the object it is about (a DEVX object's
//! number, or none for an unaffiliated event) and a cookie; it lives in the device's table
//! ([`DevxSubs`], held by the `EventTable` the function's events arrive at, upstream's two-level
//! `event_xa`) until its channel is destroyed or its object is. An event of the device is
//! matched against the table by upstream's keys (`event type | object type << 16`, the
//! object's number) and queued on each subscribed channel: the cookie and the 64-byte EQE,
//! or, on a channel made with `MLX5_IB_UAPI_DEVX_CR_EV_CH_FLAGS_OMIT_DATA`, the subscription
//! itself once (its cookie is read). A lookup is a walk of the table (upstream: two xarray
//! loads): the table holds the subscriptions of every context of the device.
//!
//! The events the driver receives are decoded ([`HwEvent`]); the EQE a channel reads is
//! rebuilt from it (`struct mlx5_eqe`: the type, and the object number where upstream's
//! `devx_get_obj_id_from_event()` reads it). Only the legacy event numbers are known (the
//! functions have no `event_cap`, upstream `is_valid_events_legacy()`).

use crate::hw::HwEvent;
use crate::prm::consts as c;
use crate::prm::event::QueueEvent;
use ib_core_rs::uverbs::driver_api::{DriverFdOps, RemoveReason};
use kernel::fs::File;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::lock::{Backend, Guard};
use kernel::sync::poll::{PollCondVar, PollTable};
use kernel::sync::{Arc, SpinLockIrq};
use kernel::uaccess::UserSliceWriter;

/// `enum mlx5_event_queue_type` (`MLX5_EVENT_QUEUE_TYPE_*`).
const QUEUE_TYPE_QP: u16 = 0;
const QUEUE_TYPE_RQ: u16 = 1;
const QUEUE_TYPE_SQ: u16 = 2;
const QUEUE_TYPE_DCT: u16 = 6;

/// `MLX5_IB_UAPI_DEVX_CR_EV_CH_FLAGS_OMIT_DATA`.
pub(crate) const OMIT_DATA: u64 = 1;
/// upstream `MAX_NUM_EVENTS`: event numbers per subscription call.
pub(crate) const MAX_NUM_EVENTS: usize = 16;
/// `sizeof(struct mlx5_eqe)`.
const EQE_SIZE: usize = 64;
/// `sizeof(struct mlx5_ib_uapi_devx_async_event_hdr)`: the cookie.
const EV_HDR: usize = 8;

/// `EPOLLIN`, `EPOLLRDNORM`, `EPOLLRDHUP`.
const EPOLLIN: u32 = 0x1;
const EPOLLRDNORM: u32 = 0x40;
const EPOLLRDHUP: u32 = 0x2000;

/// The queue of a DEVX channel fd (this file's event channel, `devx.rs`'s async command fd;
/// upstream `struct devx_async_event_queue` and the event file's own), under the fd's lock:
/// what its `read`, `poll` and destroy look at.
pub(crate) struct ChannelQueue<T, X = ()> {
    /// The entries not read yet, oldest first.
    pub(crate) events: KVec<T>,
    /// upstream `is_destroyed`: the object was destroyed (the fd, the uverbs file closed, or
    /// the device removed).
    pub(crate) destroyed: bool,
    /// What else the fd keeps under the same lock.
    pub(crate) ext: X,
}

impl<T, X> ChannelQueue<T, X> {
    /// An empty, live queue.
    pub(crate) fn new(ext: X) -> Self {
        Self {
            events: KVec::new(),
            destroyed: false,
            ext,
        }
    }

    /// The destroy's part under the lock (upstream `devx_async_cmd_event_destroy_uobj()`,
    /// `devx_async_event_destroy_uobj()`): marks the queue destroyed and hands back the
    /// entries nobody read, for the caller to free outside the lock.
    pub(crate) fn destroy(&mut self) -> KVec<T> {
        self.destroyed = true;
        core::mem::take(&mut self.events)
    }
}

/// The wait of upstream `devx_async_cmd_event_read()` and `devx_async_event_read()`: returns
/// with an entry queued.
///
/// # Errors
///
/// `EAGAIN` for an `O_NONBLOCK` file with nothing queued, `ERESTARTSYS` on a signal, `EIO`
/// once the queue is destroyed and empty.
pub(crate) fn wait_queued<T, X, B: Backend>(
    file: &File,
    wait: &PollCondVar,
    q: &mut Guard<'_, ChannelQueue<T, X>, B>,
) -> Result {
    while q.events.is_empty() {
        if file.flags() & kernel::fs::file::flags::O_NONBLOCK != 0 {
            return Err(EAGAIN);
        }
        if !q.destroyed && wait.wait_interruptible(q) {
            return Err(ERESTARTSYS);
        }
        if q.destroyed {
            return Err(EIO);
        }
    }
    Ok(())
}

/// upstream `devx_async_cmd_event_poll()` and `devx_async_event_poll()`: readable when
/// something is queued, hung up once destroyed.
pub(crate) fn poll_mask<T, X>(q: &ChannelQueue<T, X>) -> u32 {
    if q.destroyed {
        EPOLLIN | EPOLLRDNORM | EPOLLRDHUP
    } else if !q.events.is_empty() {
        EPOLLIN | EPOLLRDNORM
    } else {
        0
    }
}

/// upstream `is_legacy_unaffiliated_event_num()`.
pub(crate) fn is_legacy_unaffiliated_event_num(ev: u16) -> bool {
    ev == u16::from(c::EVENT_TYPE_PORT_CHANGE)
}

/// upstream `is_legacy_obj_event_num()`.
pub(crate) fn is_legacy_obj_event_num(ev: u16) -> bool {
    // The legacy numbers (`enum mlx5_event`) are all below 0x100.
    u8::try_from(ev).is_ok_and(|ev| {
        matches!(
            ev,
            c::EVENT_TYPE_PATH_MIG
                | c::EVENT_TYPE_COMM_EST
                | c::EVENT_TYPE_SQ_DRAINED
                | c::EVENT_TYPE_SRQ_LAST_WQE
                | c::EVENT_TYPE_SRQ_RQ_LIMIT
                | c::EVENT_TYPE_CQ_ERROR
                | c::EVENT_TYPE_WQ_CATAS_ERROR
                | c::EVENT_TYPE_PATH_MIG_FAILED
                | c::EVENT_TYPE_WQ_INVAL_REQ_ERROR
                | c::EVENT_TYPE_WQ_ACCESS_ERROR
                | c::EVENT_TYPE_SRQ_CATAS_ERROR
                | c::EVENT_TYPE_DCT_DRAINED
                | c::EVENT_TYPE_COMP
                | c::EVENT_TYPE_DCT_KEY_VIOLATION
                | c::EVENT_TYPE_XRQ_ERROR
        )
    })
}

/// upstream `get_legacy_obj_type()`: the queue type of the object's creator opcode (the
/// legacy event numbers are the only ones, so `get_dec_obj_type()` always takes this branch).
pub(crate) fn legacy_obj_type(creator_opcode: u16) -> u16 {
    use crate::prm::devx_ops as op;
    match creator_opcode {
        op::CREATE_RQ | op::CREATE_RMP => QUEUE_TYPE_RQ,
        op::CREATE_QP => QUEUE_TYPE_QP,
        op::CREATE_SQ => QUEUE_TYPE_SQ,
        op::CREATE_DCT => QUEUE_TYPE_DCT,
        _ => 0,
    }
}

/// One subscription (upstream `struct devx_event_subscription`).
pub(crate) struct Sub {
    /// upstream `xa_key_level1`: `event type | object type << 16`.
    key1: u32,
    /// upstream `xa_key_level2`: the object's number; `None`: unaffiliated.
    obj: Option<u32>,
    /// The DEVX object's encoded id (its destroy drops the subscription); 0 if unaffiliated.
    owner: u64,
    cookie: u64,
    /// The channel ([`DevxEventFd`]).
    file: Arc<dyn DriverFdOps>,
    /// OMIT_DATA: 1 while the subscription is on its channel's queue (upstream
    /// `!list_empty(&event_sub->event_list)`).
    queued: Atomic<u32>,
    /// The redirect (upstream `event_sub->eventfd`): signalled instead of queuing.
    eventfd: Option<crate::eventfd::EventFd>,
}

impl Sub {
    /// A subscription of `file` (a [`DevxEventFd`]).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(
        key1: u32,
        obj: Option<u32>,
        owner: u64,
        cookie: u64,
        file: Arc<dyn DriverFdOps>,
        eventfd: Option<crate::eventfd::EventFd>,
    ) -> Result<Arc<Self>> {
        Ok(Arc::new(
            Sub {
                key1,
                obj,
                owner,
                cookie,
                file,
                queued: Atomic::new(0),
                eventfd,
            },
            GFP_KERNEL,
        )?)
    }

    fn channel(&self) -> Option<&DevxEventFd> {
        let f: &dyn core::any::Any = &*self.file;
        f.downcast_ref::<DevxEventFd>()
    }

    fn of(&self, f: &DevxEventFd) -> bool {
        core::ptr::addr_eq(Arc::as_ptr(&self.file), core::ptr::from_ref(f))
    }
}

/// The device's subscriptions (upstream `struct mlx5_devx_event_table`). Interrupt-safe: the
/// events of the mlx5_core backend arrive in interrupt context.
pub(crate) type DevxSubs = SpinLockIrq<KVec<Arc<Sub>>>;

/// Adds `subs` to the table (upstream: the second loop of the SUBSCRIBE handler, after every
/// allocation succeeded).
///
/// # Errors
///
/// `ENOMEM` (nothing is added then).
pub(crate) fn subscribe(table: &DevxSubs, subs: KVec<Arc<Sub>>) -> Result {
    let mut t = table.lock();
    t.reserve(subs.len(), GFP_ATOMIC)?;
    for s in subs {
        // Room reserved above: this does not allocate.
        if let Err(e) = t.push_within_capacity(s) {
            drop(e);
            return Err(ENOMEM);
        }
    }
    Ok(())
}

/// Drops the subscriptions of a destroyed DEVX object (upstream `devx_obj_cleanup()` →
/// `devx_cleanup_subscription()`).
pub(crate) fn unsubscribe_obj(table: &DevxSubs, owner: u64) {
    let gone = take_matching(table, |s| s.owner == owner);
    drop(gone);
}

/// Takes the matching subscriptions out of the table; they are dropped by the caller outside
/// the lock.
fn take_matching(table: &DevxSubs, f: impl Fn(&Sub) -> bool) -> KVec<Arc<Sub>> {
    let mut gone = KVec::new();
    let mut t = table.lock();
    let mut i = 0;
    while i < t.len() {
        if t.get(i).is_some_and(|s| f(s)) {
            if let Ok(s) = t.remove(i) {
                // At worst the drop happens here, under the lock: the channel outlives it
                // (its file or the uverbs file holds it), so only the `Sub` is freed.
                let _ = gone.push(s, GFP_ATOMIC);
            }
        } else {
            i += 1;
        }
    }
    gone
}

/// The EQE of an event, its key and object number (upstream: the `struct mlx5_eqe` of the
/// notifier, `get_event_obj_type()`, `devx_get_obj_id_from_event()`).
fn eqe_of(ev: &QueueEvent) -> ([u8; EQE_SIZE], u32, u32) {
    let mut e = [0u8; EQE_SIZE];
    let ty = ev.eqe_type();
    let (qtype, num, at) = match *ev {
        // eqe.data.comp.cqn
        QueueEvent::Completion { cqn } => (0, cqn, 0x38),
        // eqe.data.cq_err.cqn
        QueueEvent::CqError { cqn } => (0, cqn, 0x20),
        // eqe.data.qp_srq.qp_srq_n, .type
        QueueEvent::Qp { qpn, .. } => (QUEUE_TYPE_QP, qpn, 0x38),
        // SRQs here are RMPs: the RQ queue type.
        QueueEvent::Srq { srqn, .. } => (QUEUE_TYPE_RQ, srqn, 0x38),
    };
    e[1] = ty;
    if at == 0x38 && ty != c::EVENT_TYPE_COMP {
        e[0x34] = qtype as u8;
    }
    e[at..at + 4].copy_from_slice(&(num & 0x00ff_ffff).to_be_bytes());
    (
        e,
        u32::from(ty) | (u32::from(qtype) << 16),
        num & 0x00ff_ffff,
    )
}

/// Delivers a device event to the subscribed channels (upstream `devx_event_notifier()` and,
/// for completions, `devx_cq_comp()`). Callable from interrupt context.
pub(crate) fn dispatch(table: &DevxSubs, ev: &HwEvent) {
    // Not an EQE: no DEVX event number.
    let HwEvent::Queue(ev) = ev else {
        return;
    };
    let t = table.lock();
    if t.is_empty() {
        return;
    }
    let (eqe, key1, num) = eqe_of(ev);
    // upstream dispatch_event_fd(): a redirected subscription signals its eventfd.
    for s in t.iter().filter(|s| s.key1 == key1 && s.obj == Some(num)) {
        if let Some(e) = &s.eventfd {
            e.signal();
        } else if let Some(ch) = s.channel() {
            ch.deliver(s, &eqe);
        }
    }
}

/// One queued event: the cookie and the EQE (upstream `struct devx_async_event_data`), or an
/// OMIT_DATA channel's subscription.
enum Queued {
    Data([u8; EV_HDR + EQE_SIZE]),
    Sub(Arc<Sub>),
}

/// An event channel's queue.
type EvQueue = ChannelQueue<Queued, EvState>;

/// What an event channel keeps under its queue's lock besides the queue.
struct EvState {
    /// upstream `is_overflow_err`: an event was lost for lack of memory; the next read says
    /// so (`EOVERFLOW`) once.
    overflow: bool,
    /// The device's table this channel's subscriptions are in (upstream: the device reference
    /// of `get_device()` at the alloc), dropped at the destroy.
    table: Option<Arc<DevxSubs>>,
}

/// upstream `struct devx_async_event_file`: the `[devx_async_event]` fd's object.
#[pin_data]
pub(crate) struct DevxEventFd {
    /// upstream `omit_data`.
    omit_data: bool,
    #[pin]
    q: SpinLockIrq<EvQueue>,
    #[pin]
    wait: PollCondVar,
}

impl DevxEventFd {
    /// upstream `MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC`'s initialisation.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(omit_data: bool, table: Arc<DevxSubs>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(DevxEventFd {
                omit_data,
                q <- kernel::new_spinlock_irq!(
                    EvQueue::new(EvState {
                        overflow: false,
                        table: Some(table),
                    }),
                    "devx_async_event_queue"
                ),
                wait <- kernel::new_poll_condvar!("devx_async_event_wait"),
            }),
            GFP_KERNEL,
        )
    }

    /// upstream `deliver_event()`.
    fn deliver(&self, sub: &Arc<Sub>, eqe: &[u8; EQE_SIZE]) {
        let mut q = self.q.lock();
        if q.destroyed {
            return;
        }
        let item = if self.omit_data {
            if sub.queued.load(Relaxed) != 0 {
                return;
            }
            Queued::Sub(sub.clone())
        } else {
            let mut d = [0u8; EV_HDR + EQE_SIZE];
            d[..EV_HDR].copy_from_slice(&sub.cookie.to_ne_bytes());
            d[EV_HDR..].copy_from_slice(eqe);
            Queued::Data(d)
        };
        let omit = matches!(item, Queued::Sub(_));
        if q.events.push(item, GFP_ATOMIC).is_err() {
            q.ext.overflow = true;
            return;
        }
        if omit {
            sub.queued.store(1, Relaxed);
        }
        drop(q);
        self.wait.notify_all();
    }
}

impl DriverFdOps for DevxEventFd {
    // upstream devx_async_event_read(): EOVERFLOW once after a lost event; empty: EAGAIN
    // (O_NONBLOCK) or wait, EIO once destroyed; EINVAL for a buffer smaller than one event
    // (8 bytes with OMIT_DATA, else 8 + 64).
    fn read(&self, file: &File, mut out: UserSliceWriter) -> Result<usize> {
        let mut q = self.q.lock();
        if q.ext.overflow {
            q.ext.overflow = false;
            return Err(EOVERFLOW);
        }
        wait_queued(file, &self.wait, &mut q)?;
        let size = if self.omit_data {
            EV_HDR
        } else {
            EV_HDR + EQE_SIZE
        };
        if size > out.len() {
            return Err(EINVAL);
        }
        let e = q.events.remove(0).map_err(|_| EINVAL)?;
        let mut d = [0u8; EV_HDR + EQE_SIZE];
        match &e {
            Queued::Data(b) => d = *b,
            Queued::Sub(s) => {
                s.queued.store(0, Relaxed);
                d[..EV_HDR].copy_from_slice(&s.cookie.to_ne_bytes());
            }
        }
        drop(q);
        drop(e);
        out.write_slice(d.get(..size).unwrap_or(&d))?;
        Ok(size)
    }

    // upstream devx_async_event_poll()
    fn poll(&self, file: &File, table: PollTable<'_>) -> u32 {
        table.register_wait(file, &self.wait);
        poll_mask(&*self.q.lock())
    }

    // upstream devx_async_event_destroy_uobj(): destroyed, the queue emptied, the readers
    // woken, every subscription of the channel out of the device's table, the device let go.
    fn destroy(&self, _why: RemoveReason) {
        let (events, table) = {
            let mut q = self.q.lock();
            let events = q.destroy();
            for e in events.iter() {
                if let Queued::Sub(s) = e {
                    s.queued.store(0, Relaxed);
                }
            }
            (events, q.ext.table.take())
        };
        self.wait.notify_all();
        drop(events);
        if let Some(t) = table {
            let gone = take_matching(&t, |s| s.of(self));
            drop(gone);
        }
    }
}
