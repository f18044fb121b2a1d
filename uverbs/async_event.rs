// SPDX-License-Identifier: GPL-2.0

//! The async event file (upstream `struct ib_uverbs_async_event_file`,
//! `uverbs_std_types_async_fd.c`, `ib_uverbs_async_event_read()`): an
//! anonymous file from which a process reads `struct ib_uverbs_async_event_desc`
//! (16 bytes: `u64 element; u32 event_type; u32 reserved`).
//!
//! Non-generic on purpose: its file operations must live in `ib_core_rs`,
//! which the file pins, not in a driver module that may be unloaded while
//! the file is open.

use crate::anon_file::{AnonFile, AnonFileOps};
use crate::uverbs::abi::structs as s;
use kernel::fs::{file::flags, File};
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::poll::{PollCondVar, PollTable};
use kernel::sync::{Arc, SpinLockIrq};
use kernel::uaccess::UserSliceWriter;

const EPOLLIN: u32 = 0x1;
const EPOLLRDNORM: u32 = 0x40;

/// `sizeof(struct ib_uverbs_async_event_desc)`.
pub(crate) const EVENT_DESC_SIZE: usize = s::AsyncEventDesc::SIZE;

/// `IB_EVENT_DEVICE_FATAL` (queued on disassociate, as upstream
/// `ib_uverbs_free_hw_resources()` does).
pub(crate) const IB_EVENT_DEVICE_FATAL: u32 = 8;

/// How many events of one kind one object has had read from its queue
/// (upstream `ib_ucq_object.comp_events_reported`,
/// `ib_uevent_object.events_reported`): the destroy response reports it, and
/// libibverbs waits at destroy until the process acknowledged that many. The
/// object's unread events are dropped at its destroy ([`AsyncEventFile::purge`]).
pub(crate) struct EventCount {
    reported: Atomic<u32>,
}

impl EventCount {
    /// A new count at zero.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(
            EventCount {
                reported: Atomic::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// The events read so far.
    pub(crate) fn reported(&self) -> u32 {
        self.reported.load(Relaxed)
    }
}

/// One queued event (upstream `struct ib_uverbs_event`): the descriptor and,
/// for an object's event, the object's count (device events have none).
struct Queued {
    desc: [u8; EVENT_DESC_SIZE],
    count: Option<Arc<EventCount>>,
}

/// The queue (upstream `struct ib_uverbs_event_queue`; its `is_closed` is
/// only set at the file's release, when nobody can read any more, so it is
/// not kept here).
struct Queue {
    events: KVec<Queued>,
}

/// An event file: the async event file (16-byte
/// `struct ib_uverbs_async_event_desc`) or a completion channel (8-byte
/// `struct ib_uverbs_comp_event_desc { u64 cq_handle; }`, upstream
/// `ib_uverbs_comp_event_read()`), which share upstream's event queue code.
#[pin_data]
pub(crate) struct AsyncEventFile {
    /// Bytes per event read.
    desc_len: usize,
    /// Interrupt-safe, as upstream's `ev_queue->lock`: drivers report
    /// completions and events from their interrupt handlers.
    #[pin]
    queue: SpinLockIrq<Queue>,
    wait: DeferredWait,
}

/// The event file's wait queue, in its own allocation: the kernel crate's `PollCondVar` waits
/// for an RCU grace period when dropped (`__wake_up_pollfree()`, then `synchronize_rcu()`),
/// which the task closing the file's last reference slept through (several ticks under TCG:
/// half of a context open/close pair on the emulated function, Documentation/performance.md).
/// Its drop goes to the core's workqueue (`crate::wq`, drained before the module goes), off the
/// closing task; inline only if the work item cannot be allocated. No waiter is left by then:
/// readers and pollers hold the file, which holds a reference to this queue. Upstream frees
/// its queue with the file and waits for nothing.
struct DeferredWait(Option<Pin<KBox<PollCondVar>>>);

impl DeferredWait {
    /// The queue; `None` only while it is being dropped.
    fn get(&self) -> Option<&PollCondVar> {
        self.0.as_deref()
    }
}

impl Drop for DeferredWait {
    fn drop(&mut self) {
        if let Some(w) = self.0.take() {
            // On an allocation failure the closure, and the queue with it, is dropped here.
            let _ = crate::wq::queue().try_spawn(GFP_KERNEL, move || drop(w));
        }
    }
}

impl AsyncEventFile {
    /// A new, empty event queue.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Self::with_desc_len(EVENT_DESC_SIZE)
    }

    /// A new, empty completion channel (upstream
    /// `ib_uverbs_create_comp_channel()`).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new_comp_channel() -> Result<Arc<Self>> {
        Self::with_desc_len(8)
    }

    fn with_desc_len(desc_len: usize) -> Result<Arc<Self>> {
        let wait = KBox::pin_init(kernel::new_poll_condvar!("uverbs_async_wait"), GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(AsyncEventFile {
                desc_len,
                queue <- kernel::new_spinlock_irq!(Queue { events: KVec::new() }, "uverbs_async_queue"),
                wait: DeferredWait(Some(wait)),
            }),
            GFP_KERNEL,
        )
    }

    /// The anonymous file for it (`anon_inode:[infinibandevent]`,
    /// `O_CLOEXEC`). Not inlined: the file operations stay in this module.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, `ENFILE`.
    #[inline(never)]
    pub(crate) fn file(this: &Arc<Self>) -> Result<ARef<File>> {
        AnonFile::<AsyncEventFile>::create(
            c"[infinibandevent]",
            &<crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE,
            this.clone(),
            flags::O_CLOEXEC,
        )
    }

    /// Whether fd `fd` of the calling process is this queue's file.
    #[inline(never)]
    pub(crate) fn fd_is(this: &Arc<Self>, fd: i64) -> bool {
        AnonFile::<AsyncEventFile>::fd_is(fd, this)
    }

    /// Queues a completion event of the CQ with user handle `cq_handle`,
    /// counted in `count` when read (upstream `ib_uverbs_comp_handler()`).
    /// Callable from interrupt context.
    pub(crate) fn queue_comp(&self, cq_handle: u64, count: &Arc<EventCount>) {
        let mut d = [0u8; EVENT_DESC_SIZE];
        let c = s::CompEventDesc { cq_handle }.to_bytes();
        d[..c.len()].copy_from_slice(&c);
        self.push(d, Some(count.clone()));
    }

    /// Queues a device or port event (upstream `ib_uverbs_event_handler()`).
    pub(crate) fn queue_event(&self, element: u64, event_type: u32) {
        self.push(Self::event_desc(element, event_type), None);
    }

    /// Queues an event of a CQ or QP with user handle `element`, counted in
    /// `count` when read (upstream `ib_uverbs_async_handler()` from
    /// `ib_uverbs_cq_event_handler()`/`ib_uverbs_qp_event_handler()`).
    /// Callable from interrupt context.
    pub(crate) fn queue_obj_event(&self, element: u64, event_type: u32, count: &Arc<EventCount>) {
        self.push(Self::event_desc(element, event_type), Some(count.clone()));
    }

    fn event_desc(element: u64, event_type: u32) -> [u8; EVENT_DESC_SIZE] {
        s::AsyncEventDesc {
            element,
            event_type,
            reserved: 0,
        }
        .to_bytes()
    }

    /// Drops the unread events counted in `count` (upstream
    /// `ib_uverbs_release_ucq()`/`ib_uverbs_release_uevent()` at an object's
    /// destroy).
    pub(crate) fn purge(&self, count: &Arc<EventCount>) {
        let mut q = self.queue.lock();
        q.events
            .retain(|e| !e.count.as_ref().is_some_and(|c| Arc::ptr_eq(c, count)));
    }

    /// Queues one descriptor and wakes the readers (an event that cannot
    /// be queued for lack of memory is dropped, as upstream's `kmalloc`
    /// failure in `ib_uverbs_async_handler()`). `GFP_ATOMIC`: the caller
    /// may be an interrupt handler, and the queue's lock is a spinlock.
    fn push(&self, desc: [u8; EVENT_DESC_SIZE], count: Option<Arc<EventCount>>) {
        let mut q = self.queue.lock();
        if q.events.push(Queued { desc, count }, GFP_ATOMIC).is_ok() {
            if let Some(w) = self.wait.get() {
                w.notify_all();
            }
        }
    }
}

impl AnonFileOps for AsyncEventFile {
    // upstream: ib_uverbs_event_read(): EAGAIN when empty and O_NONBLOCK,
    // blocks otherwise; then EINVAL for a buffer smaller than one event.
    fn read(this: &Arc<Self>, file: &File, mut out: UserSliceWriter) -> Result<usize> {
        let dl = this.desc_len;
        let mut q = this.queue.lock();
        loop {
            if !q.events.is_empty() {
                break;
            }
            if file.flags() & flags::O_NONBLOCK != 0 {
                return Err(EAGAIN);
            }
            let Some(w) = this.wait.get() else {
                return Err(EIO);
            };
            if w.wait_interruptible(&mut q) {
                return Err(ERESTARTSYS);
            }
        }
        // upstream: the length is checked once an event is there (an
        // empty non-blocking read is EAGAIN whatever the count); one event
        // per read, counted as reported when it leaves the queue.
        if out.len() < dl {
            return Err(EINVAL);
        }
        let e = q.events.remove(0).map_err(|_| EINVAL)?;
        if let Some(c) = &e.count {
            c.reported.fetch_add(1, Relaxed);
        }
        drop(q);
        // Copied after unlocking: the copy may fault and sleep.
        out.write_slice(e.desc.get(..dl).unwrap_or(&e.desc))?;
        Ok(dl)
    }

    // upstream: ib_uverbs_event_poll()
    fn poll(this: &Arc<Self>, file: &File, table: PollTable<'_>) -> u32 {
        if let Some(w) = this.wait.get() {
            table.register_wait(file, w);
        }
        let q = this.queue.lock();
        let mut mask = 0;
        if !q.events.is_empty() {
            mask |= EPOLLIN | EPOLLRDNORM;
        }
        mask
    }
}
