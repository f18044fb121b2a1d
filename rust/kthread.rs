// SPDX-License-Identifier: GPL-2.0

//! A kernel thread that runs a body over shared data until it is stopped (`kthread_run()`,
//! `kthread_should_stop()`, `kthread_stop()`); the kernel crate of 7.3 has no kthread API.
//!
//! [`KThread::spawn`] starts `T::run(&data)` in a new kernel thread; the body returns when
//! [`should_stop`] says so (or its own stop request, [`ThreadBody::request_stop`]). Dropping
//! the [`KThread`] (or [`KThread::stop`]) asks the body to stop, sets `kthread_should_stop()`,
//! wakes the thread, waits for the body to return, and only then drops the thread's reference
//! to the data: the body never sees freed data.
//!
//! [`Threads`] is the module's registry of running threads: a thread registered there is
//! stopped when its handle is unregistered, or at the latest when the module's [`Threads`]
//! goes (module unload), so that no thread runs module code after the module is gone even if
//! whatever owned it leaked.

use core::ptr::NonNull;
use kernel::{
    bindings,
    error::to_result,
    ffi::{c_char, c_int, c_uint, c_void},
    prelude::*,
    str::CString,
    sync::Arc,
};

extern "C" {
    // `struct task_struct *` as `void *`: bindgen's struct is not FFI-safe for the lint (it
    // reaches zero-sized members), as in rust/umem.rs.
    fn rdma_rs_kthread_run(
        f: unsafe extern "C" fn(*mut c_void) -> c_int,
        data: *mut c_void,
        name: *const c_char,
    ) -> *mut c_void;
    fn rdma_rs_kthread_stop(task: *mut c_void) -> c_int;
    fn rdma_rs_cond_resched();
    fn rdma_rs_move_off_cpu(cpu: c_uint) -> c_int;
    fn rdma_rs_alone_on_cpu() -> bool;
}

/// The body of a kernel thread.
pub(crate) trait ThreadBody: Send + Sync + 'static {
    /// Runs in the thread; returns soon after [`ThreadBody::request_stop`] was called.
    fn run(&self);

    /// Makes [`ThreadBody::run`] return (and wakes it from any wait of its own); called before
    /// the thread is stopped.
    fn request_stop(&self);
}

/// Whether the current kernel thread was asked to stop (`kthread_should_stop()`). Only
/// meaningful inside a [`ThreadBody::run`].
pub(crate) fn should_stop() -> bool {
    // SAFETY: no preconditions; called from a kthread (ThreadBody::run), it reads its flag.
    unsafe { bindings::kthread_should_stop() }
}

/// A running kernel thread.
///
/// # Invariants
///
/// `task` is referenced (`get_task_struct()`) until it is stopped; `data` is the
/// `Arc::into_raw` of the `Arc<T>` the thread borrows, released after the thread stopped.
pub(crate) struct KThread<T: ThreadBody> {
    task: Option<NonNull<c_void>>,
    data: *const T,
}

// SAFETY: the task reference and the data reference may be released from any task; `T` is
// `Send + Sync`.
unsafe impl<T: ThreadBody> Send for KThread<T> {}
// SAFETY: `&KThread` gives no access to anything.
unsafe impl<T: ThreadBody> Sync for KThread<T> {}

/// The thread function: runs the body.
///
/// # Safety
///
/// `data` must be the `Arc::into_raw` pointer of an `Arc<T>` that stays alive until the
/// thread has stopped (what [`KThread::spawn`] passes).
unsafe extern "C" fn trampoline<T: ThreadBody>(data: *mut c_void) -> c_int {
    // SAFETY: `data` is the `Arc::into_raw` pointer `spawn` passed, kept alive by the
    // `KThread` until this thread has stopped (type invariant of `KThread`).
    let body = unsafe { &*data.cast::<T>() };
    body.run();
    // Returning before kthread_stop() is allowed: the task is referenced by the KThread.
    0
}

impl<T: ThreadBody> KThread<T> {
    /// Starts a kernel thread named `name` running `data.run()`.
    ///
    /// # Errors
    ///
    /// `ENOMEM` or `kthread_create()`'s error.
    pub(crate) fn spawn(data: Arc<T>, name: core::fmt::Arguments<'_>) -> Result<Self> {
        let name = CString::try_from_fmt(name)?;
        let raw = Arc::into_raw(data);
        // SAFETY: `trampoline::<T>` has the C signature; `raw` stays valid until the thread
        // stopped (released in `stop`, or below on failure); `name` is NUL-terminated and
        // only read during the call.
        let t = unsafe {
            rdma_rs_kthread_run(trampoline::<T>, raw.cast_mut().cast(), name.as_char_ptr())
        };
        let err = kernel::error::from_err_ptr(t);
        match err {
            Ok(t) => Ok(KThread {
                // INVARIANT: the shim took a task reference; `raw` is the Arc's.
                task: NonNull::new(t),
                data: raw,
            }),
            Err(e) => {
                // SAFETY: no thread was created; `raw` came from `Arc::into_raw` above.
                drop(unsafe { Arc::from_raw(raw) });
                Err(e)
            }
        }
    }

    /// Gives the thread the lowest real-time priority (`sched_set_fifo_low()`: `SCHED_FIFO`
    /// at priority 1, as kernel threads that stand in for hardware use): once woken it
    /// preempts every normal task, so a task that waits for it by busy-polling cannot keep it
    /// off the CPU until the next tick. The RT throttle still leaves normal tasks their
    /// share should it never sleep.
    pub(crate) fn set_fifo_low(&self) {
        if let Some(t) = self.task {
            // SAFETY: `t` is a referenced, not yet stopped task (type invariant).
            unsafe { bindings::sched_set_fifo_low(t.as_ptr().cast()) };
        }
    }

    /// Stops the thread: `kthread_should_stop()` becomes true, the thread is woken and this
    /// waits until its body returned. The caller must also wake the body from any wait of its
    /// own that ignores plain wake-ups. Idempotent.
    pub(crate) fn stop(&mut self) {
        if let Some(t) = self.task.take() {
            // SAFETY: `data` is alive until `drop` releases it, after this (type invariant).
            unsafe { &*self.data }.request_stop();
            // SAFETY: `t` is referenced (type invariant) and stopped once (taken out).
            unsafe { rdma_rs_kthread_stop(t.as_ptr()) };
        }
    }
}

impl<T: ThreadBody> Drop for KThread<T> {
    fn drop(&mut self) {
        self.stop();
        // SAFETY: the thread has stopped (above), so nothing borrows the data any more;
        // `data` came from `Arc::into_raw` in `spawn` and is released once, here.
        drop(unsafe { Arc::from_raw(self.data) });
    }
}

/// Gives the CPU to other tasks if the scheduler wants it (`cond_resched()`): a kernel thread
/// that loops over work must call it on a kernel without preemption.
pub(crate) fn cond_resched() {
    // SAFETY: no preconditions; called from a kernel thread in process context.
    unsafe { rdma_rs_cond_resched() };
}

/// Restricts the calling kernel thread to the online CPUs other than `cpu` (migrating it now
/// if it runs there), so that it can wait for a task on `cpu` without taking that task's CPU.
/// The restriction stays until the next call.
///
/// # Errors
///
/// `ENODEV` when no other CPU is online, `EINVAL` for a CPU number out of range, `ENOMEM`,
/// and `set_cpus_allowed_ptr()`'s errors.
pub(crate) fn move_off_cpu(cpu: u32) -> Result {
    // SAFETY: no preconditions; the C side validates `cpu` and changes only the caller's
    // affinity (a kernel thread in process context, which may sleep).
    to_result(unsafe { rdma_rs_move_off_cpu(cpu) })
}

/// Whether the caller is the only runnable task of its CPU (`single_task_running()`): a
/// thread that spins then takes the CPU from nobody. A hint, as [`current_cpu`].
pub(crate) fn alone_on_cpu() -> bool {
    // SAFETY: no preconditions; reads the current CPU's run-queue length.
    unsafe { rdma_rs_alone_on_cpu() }
}

/// The CPU the caller runs on now (it may move at once unless preemption is off: a hint).
pub(crate) fn current_cpu() -> u32 {
    kernel::cpu::CpuId::current().as_u32()
}

/// A running thread of any body, for the registry.
trait Running: Send {}

impl<T: ThreadBody> Running for KThread<T> {}

/// The registry's table: running threads by id, and the next id.
pub(crate) struct ThreadTable {
    threads: KVec<(u64, KBox<dyn Running>)>,
    next: u64,
}

kernel::sync::global_lock! {
    // SAFETY: initialized by `init()`, called first thing in the module's `init` before any
    // thread can be registered.
    pub(crate) unsafe(uninit) static THREADS: Mutex<ThreadTable> = ThreadTable {
        threads: KVec::new(),
        next: 0,
    };
}

/// Initializes the registry. Must be called once, from the module's `init`, before any other
/// function of this file runs.
pub(crate) fn init() {
    // SAFETY: called exactly once, from the module's `init`, before any use of `THREADS`
    // (nothing of the module runs before `init`; KUnit suites run after it).
    unsafe { THREADS.init() };
}

/// A registered thread: unregistering (dropping) it stops the thread.
pub(crate) struct Registered {
    id: u64,
}

impl Registered {
    /// Registers `t`: it runs until this handle is dropped or [`Threads`] goes.
    ///
    /// # Errors
    ///
    /// `ENOMEM` (the thread is stopped again).
    pub(crate) fn new<T: ThreadBody>(t: KThread<T>) -> Result<Self> {
        let b: KBox<dyn Running> = KBox::new(t, GFP_KERNEL)?;
        let mut g = THREADS.lock();
        let id = g.next;
        g.next += 1;
        g.threads.push((id, b), GFP_KERNEL)?;
        Ok(Registered { id })
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let t = {
            let mut g = THREADS.lock();
            match g.threads.iter().position(|(i, _)| *i == self.id) {
                Some(i) => g.threads.remove(i).ok(),
                None => None,
            }
        };
        // Stopped (joined) outside the registry's lock.
        drop(t);
    }
}

/// The module's threads: dropping this (last thing at module unload) stops every thread still
/// registered.
pub(crate) struct Threads;

impl Drop for Threads {
    fn drop(&mut self) {
        loop {
            let t = THREADS.lock().threads.pop();
            match t {
                Some((_, t)) => drop(t),
                None => break,
            }
        }
        // The table's storage goes too: the static outlives nothing after the module.
        let empty = core::mem::replace(&mut THREADS.lock().threads, KVec::new());
        drop(empty);
    }
}
