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

use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::{
    bindings,
    ffi::{c_char, c_uint, c_void},
    prelude::*,
    sync::Arc,
    workqueue::Queue,
};

extern "C" {
    fn rdma_rs_alloc_wq(name: *const c_char) -> *mut bindings::workqueue_struct;
    fn rdma_rs_flush_wq(wq: *mut bindings::workqueue_struct);
    fn rdma_rs_destroy_wq(wq: *mut bindings::workqueue_struct);
    fn rdma_rs_alloc_ordered_wq(name: *const c_char) -> *mut bindings::workqueue_struct;
    // `struct rdma_rs_timer *` as `void *` (the struct is the shim's own).
    fn rdma_rs_timer_new(f: unsafe extern "C" fn(*mut c_void), data: *mut c_void) -> *mut c_void;
    fn rdma_rs_timer_arm(wq: *mut bindings::workqueue_struct, t: *mut c_void, ms: c_uint);
    fn rdma_rs_timer_stop(t: *mut c_void);
    fn rdma_rs_timer_free(t: *mut c_void);
    fn rdma_rs_now_ms() -> u64;
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

/// The monotonic clock in milliseconds (`ktime_to_ms(ktime_get())`), for deadlines that a
/// [`Timer`] is armed for.
pub(crate) fn now_ms() -> u64 {
    // SAFETY: no preconditions.
    unsafe { rdma_rs_now_ms() }
}

/// What a [`Timer`] runs when it fires (process context, on the core's queue).
pub(crate) trait TimerFire: Send + Sync + 'static {
    /// The timer fired.
    fn fire(&self);
}

/// A cancelable delayed call of `T::fire` on the core's queue (a `delayed_work` with
/// `mod_delayed_work()` and `cancel_delayed_work_sync()`; the kernel crate's `DelayedWork`
/// has no cancel). The timer holds a reference to its `T` until [`Timer::stop`] (or the drop)
/// has cancelled it and waited for a running call.
///
/// `stop` (and so the drop) must not run inside `T::fire` of the same timer: it waits for
/// that call to return.
///
/// # Invariants
///
/// `raw` is a timer of the shim whose data is `data` (from `Arc::into_raw`) until `stopped`;
/// after `stopped` the callback is neither pending nor running and is never armed again.
pub(crate) struct Timer<T: TimerFire> {
    raw: NonNull<c_void>,
    data: *const T,
    stopped: bool,
}

// SAFETY: the shim's timer is used from any thread (its arm takes its own lock); `T` is
// `Send + Sync`.
unsafe impl<T: TimerFire> Send for Timer<T> {}
// SAFETY: as above; `arm` is the only `&self` method and is safe concurrently.
unsafe impl<T: TimerFire> Sync for Timer<T> {}

impl<T: TimerFire> Timer<T> {
    /// # Safety
    ///
    /// `data` is the `data` of a [`Timer`] that is not yet stopped.
    unsafe extern "C" fn run(data: *mut c_void) {
        // SAFETY: the timer holds its reference to `T` until `stop` has cancelled it and waited
        // for this call (type invariant), so `data` is a live `T`.
        let t = unsafe { &*data.cast::<T>() };
        t.fire();
    }

    /// A timer that calls `data.fire()` when it fires; not armed.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(data: Arc<T>) -> Result<Self> {
        let ptr = Arc::into_raw(data);
        // SAFETY: `run::<T>` takes the `data` pointer the shim hands it back.
        let raw = unsafe { rdma_rs_timer_new(Self::run, ptr.cast_mut().cast()) };
        let Some(raw) = NonNull::new(raw) else {
            // SAFETY: `ptr` came from `Arc::into_raw` above and was not handed out.
            drop(unsafe { Arc::from_raw(ptr) });
            return Err(ENOMEM);
        };
        // INVARIANT: the shim's timer holds `ptr`, not stopped.
        Ok(Self {
            raw,
            data: ptr,
            stopped: false,
        })
    }

    /// Arms the timer to fire within `ms` milliseconds: a pending firing at or before that
    /// time is kept, a later one is brought forward (`mod_delayed_work()`), so an arming for
    /// "at once" is never postponed by a later one for a deadline. A no-op after
    /// [`Timer::stop`] or outside the core queue's life.
    pub(crate) fn arm(&self, ms: u32) {
        let wq = CORE_WQ.load(Ordering::Acquire);
        if wq.is_null() {
            return;
        }
        // SAFETY: `raw` is a live timer of the shim (type invariant); `wq` the live core queue
        // (see `queue`); the shim ignores an arm after its stop.
        unsafe { rdma_rs_timer_arm(wq, self.raw.as_ptr(), ms) };
    }

    /// Cancels the timer and waits for a running call; it is never armed again. Its reference
    /// to `T` is dropped. Idempotent.
    pub(crate) fn stop(&mut self) {
        if self.stopped {
            return;
        }
        // SAFETY: `raw` is a live timer of the shim; not called from its own callback (the
        // type's rule).
        unsafe { rdma_rs_timer_stop(self.raw.as_ptr()) };
        self.stopped = true;
        // SAFETY: the callback is neither pending nor running and never runs again, so the
        // reference `new` took from `Arc::into_raw` is ours to drop, once (`stopped`).
        drop(unsafe { Arc::from_raw(self.data) });
    }
}

impl<T: TimerFire> Drop for Timer<T> {
    fn drop(&mut self) {
        self.stop();
        // SAFETY: stopped: nothing of the shim uses the timer any more.
        unsafe { rdma_rs_timer_free(self.raw.as_ptr()) };
    }
}

#[kunit_tests(ib_core_rs_wq)]
mod tests {
    use super::*;
    use kernel::sync::atomic::{Atomic, Relaxed};
    use kernel::time::{delay::fsleep, Delta};

    /// Counts its firings.
    struct Count(Atomic<u32>);

    impl TimerFire for Count {
        fn fire(&self) {
            self.0.fetch_add(1, Relaxed);
        }
    }

    /// Waits up to `ms` milliseconds for `c` to have fired; whether it did.
    fn fired_within(c: &Count, ms: u32) -> bool {
        for _ in 0..ms / 10 {
            if c.0.load(Relaxed) > 0 {
                return true;
            }
            fsleep(Delta::from_millis(10));
        }
        c.0.load(Relaxed) > 0
    }

    /// An arming for "at once" followed by one for a later deadline (a completion's, then a
    /// timeout's) fires at once: the later arming does not postpone it.
    #[test]
    fn later_arming_keeps_earlier() -> Result {
        let c = Arc::new(Count(Atomic::new(0)), GFP_KERNEL)?;
        let mut t = Timer::new(c.clone())?;
        t.arm(0);
        t.arm(5000);
        assert!(fired_within(&c, 1000));
        t.stop();
        Ok(())
    }

    /// An earlier arming brings a pending later one forward.
    #[test]
    fn earlier_arming_brings_forward() -> Result {
        let c = Arc::new(Count(Atomic::new(0)), GFP_KERNEL)?;
        let mut t = Timer::new(c.clone())?;
        t.arm(5000);
        t.arm(20);
        assert!(fired_within(&c, 1000));
        t.stop();
        assert_eq!(c.0.load(Relaxed), 1);
        Ok(())
    }
}
