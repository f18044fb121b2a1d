// SPDX-License-Identifier: GPL-2.0

//! The core's own workqueue (upstream `ib_wq`, `ib_unreg_wq`): the kernel crate of 7.3 spawns
//! work only on the system queues, which nobody may flush. The core queues its device events
//! and its queued unregistrations here, so that [`flush`] (called by `Device::dealloc`) waits
//! until every work item that still holds a reference to a device has dropped it: the last
//! reference, and with it the driver's drop glue, never goes from a work item after the
//! driver believed the device freed.
//!
//! A second, ordered queue ([`gid_queue`], upstream `gid_cache_wq`) carries the RoCE GID
//! table updates of netdev and address events, one at a time in the order they happened.
//!
//! The queues live as long as the [`CoreWq`] handle the module's `init` makes and keeps (last
//! in the module's struct: dropped when the dependent modules, and so every device, are gone).

use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::{bindings, ffi::c_char, prelude::*, workqueue::Queue};

extern "C" {
    fn rdma_rs_alloc_wq(name: *const c_char) -> *mut bindings::workqueue_struct;
    fn rdma_rs_flush_wq(wq: *mut bindings::workqueue_struct);
    fn rdma_rs_destroy_wq(wq: *mut bindings::workqueue_struct);
    fn rdma_rs_alloc_ordered_wq(name: *const c_char) -> *mut bindings::workqueue_struct;
}

/// The queue, null outside the [`CoreWq`] handle's lifetime.
static CORE_WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(core::ptr::null_mut());

/// The ordered GID queue, null outside the [`CoreWq`] handle's lifetime.
static GID_WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(core::ptr::null_mut());

/// The core's queue, allocated by [`CoreWq::new`] and destroyed (drained first) when the
/// handle is dropped. One exists at a time: the module makes it once.
pub(crate) struct CoreWq(());

impl CoreWq {
    /// Allocates the core's queue. Called once, from the module's `init`.
    ///
    /// # Errors
    ///
    /// `ENOMEM`; `EBUSY` if a queue exists already.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: the name is a NUL-terminated static string; the function has no other
        // precondition.
        let wq = unsafe { rdma_rs_alloc_wq(c"ib_core_rs".as_char_ptr()) };
        if wq.is_null() {
            return Err(ENOMEM);
        }
        if CORE_WQ
            .compare_exchange(
                core::ptr::null_mut(),
                wq,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: `wq` is the queue just allocated, never published.
            unsafe { rdma_rs_destroy_wq(wq) };
            return Err(EBUSY);
        }
        let handle = CoreWq(());
        // SAFETY: as for `rdma_rs_alloc_wq` above.
        let gid = unsafe { rdma_rs_alloc_ordered_wq(c"gid-cache-wq".as_char_ptr()) };
        if gid.is_null() {
            // `handle` drops: the core queue is destroyed.
            return Err(ENOMEM);
        }
        GID_WQ.store(gid, Ordering::Release);
        Ok(handle)
    }
}

impl Drop for CoreWq {
    fn drop(&mut self) {
        let gid = GID_WQ.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !gid.is_null() {
            // SAFETY: `gid` is the live queue of `new`, swapped out as `wq` below is.
            unsafe { rdma_rs_destroy_wq(gid) };
        }
        let wq = CORE_WQ.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !wq.is_null() {
            // SAFETY: `wq` is the live queue of `new`; it was swapped out, so no later `queue`
            // call hands it out. `destroy_workqueue()` drains what is queued.
            unsafe { rdma_rs_destroy_wq(wq) };
        }
    }
}

/// The core's queue (the system queue outside the [`CoreWq`] handle's lifetime, which no
/// device outlives).
pub(crate) fn queue() -> &'static Queue {
    let wq = CORE_WQ.load(Ordering::Acquire);
    if wq.is_null() {
        return kernel::workqueue::system_long();
    }
    // SAFETY: `wq` came from `alloc_workqueue()` in `CoreWq::new` and is destroyed only when
    // the handle drops, at module exit, when no device (and so no caller of this function) is
    // left.
    unsafe { Queue::from_raw(wq) }
}

/// The ordered GID queue (the system queue outside the [`CoreWq`] handle's lifetime, when no
/// notifier queues anything).
pub(crate) fn gid_queue() -> &'static Queue {
    let wq = GID_WQ.load(Ordering::Acquire);
    if wq.is_null() {
        return kernel::workqueue::system_long();
    }
    // SAFETY: as in `queue`: the ordered queue lives as long as the handle.
    unsafe { Queue::from_raw(wq) }
}

/// Waits until every work item queued so far on the core's queues has finished
/// (`flush_workqueue()`), the GID queue first. Must not be called from one of those work
/// items.
pub(crate) fn flush() {
    let gid = GID_WQ.load(Ordering::Acquire);
    if !gid.is_null() {
        // SAFETY: as in `gid_queue`; flushing a live workqueue from process context is allowed.
        unsafe { rdma_rs_flush_wq(gid) };
    }
    let wq = CORE_WQ.load(Ordering::Acquire);
    if !wq.is_null() {
        // SAFETY: as in `queue`; flushing a live workqueue from process context is allowed.
        unsafe { rdma_rs_flush_wq(wq) };
    }
}
