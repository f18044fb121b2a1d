// SPDX-License-Identifier: GPL-2.0

//! A reference to an eventfd's context (`eventfd_ctx_fdget()`, `eventfd_signal()`,
//! `eventfd_ctx_put()`); the kernel crate of 7.3 has no eventfd API.

use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

extern "C" {
    fn rdma_rs_eventfd_ctx_fdget(fd: c_int) -> *mut c_void;
    fn rdma_rs_eventfd_signal(ctx: *mut c_void);
    fn rdma_rs_eventfd_ctx_put(ctx: *mut c_void);
}

/// A counted reference to the `struct eventfd_ctx` of an eventfd.
pub(crate) struct EventFd(*mut c_void);

// SAFETY: an eventfd context is reference counted and signalled under its own lock, from any
// context (`eventfd_signal()` is interrupt-safe).
unsafe impl Send for EventFd {}
// SAFETY: as above; `signal` takes `&self`.
unsafe impl Sync for EventFd {}

impl EventFd {
    /// The eventfd of fd `fd` of the calling process (upstream `eventfd_ctx_fdget()`).
    ///
    /// # Errors
    ///
    /// `EBADF` for a bad fd, `EINVAL` for an fd that is no eventfd.
    pub(crate) fn fdget(fd: i32) -> Result<Self> {
        // SAFETY: any int is a valid argument; the result is a context or an ERR_PTR.
        let p = unsafe { rdma_rs_eventfd_ctx_fdget(fd) };
        let p = kernel::error::from_err_ptr(p)?;
        Ok(EventFd(p))
    }

    /// Adds 1 to the eventfd's counter and wakes its readers (upstream `eventfd_signal()`).
    /// Callable from interrupt context.
    pub(crate) fn signal(&self) {
        // SAFETY: `self.0` is a referenced context (taken in `fdget`, put in `drop`).
        unsafe { rdma_rs_eventfd_signal(self.0) };
    }
}

impl Drop for EventFd {
    fn drop(&mut self) {
        // SAFETY: the reference taken in `fdget`, put once.
        unsafe { rdma_rs_eventfd_ctx_put(self.0) };
    }
}
