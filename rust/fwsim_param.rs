// SPDX-License-Identifier: GPL-2.0

//! Access to the `sim=` and `uplink=` string module parameters declared in C (`rust/fwsim_param.c`), because
//! the `module!` macro of Linux 7.3 only declares integer and bool parameters, and to
//! `uar_emulate=`, a bool writable at run time (`module!`'s do not appear in sysfs).

use kernel::{ffi::c_char, prelude::*};

extern "C" {
    fn rdma_rs_fwsim_param() -> *const c_char;
    fn rdma_rs_uplink_param() -> *const c_char;
    fn rdma_rs_uar_emulate() -> bool;
}

/// Calls `f` with the bytes of `sim=` (without the NUL); empty if unset.
pub(crate) fn with_sim_param<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    // SAFETY: the C function only returns the parameter's pointer.
    with_charp(unsafe { rdma_rs_fwsim_param() }, |s| f(s.to_bytes()))
}

/// Calls `f` with `uplink=` (an interface name); empty if unset.
pub(crate) fn with_uplink_param<R>(f: impl FnOnce(&CStr) -> R) -> R {
    // SAFETY: the C function only returns the parameter's pointer.
    with_charp(unsafe { rdma_rs_uplink_param() }, f)
}

/// `uar_emulate=` (writable at run time through sysfs, so read at each use): whether the
/// simulated functions' UAR stores are emulated in the fault handler.
pub(crate) fn uar_emulate() -> bool {
    // SAFETY: the C function only reads the parameter (`READ_ONCE()`).
    unsafe { rdma_rs_uar_emulate() }
}

fn with_charp<R>(p: *const c_char, f: impl FnOnce(&CStr) -> R) -> R {
    if p.is_null() {
        return f(c"");
    }
    // SAFETY: `p` is a charp parameter: the static "" or a NUL-terminated copy the module
    // loader made from the insmod arguments. It is read-only after load (permission 0444, so
    // sysfs cannot change it) and freed only when the module is unloaded, after every caller
    // (module init) has returned.
    f(unsafe { CStr::from_char_ptr(p) })
}
