// SPDX-License-Identifier: GPL-2.0

//! Access to the `sim=` string module parameter declared in C (`rust/fwsim_param.c`), because
//! the `module!` macro of Linux 7.3 only declares integer and bool parameters.

use kernel::{ffi::c_char, prelude::*};

extern "C" {
    fn rdma_rs_fwsim_param() -> *const c_char;
}

/// Calls `f` with the bytes of `sim=` (without the NUL); empty if unset.
pub(crate) fn with_sim_param<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    // SAFETY: the C function only returns the parameter's pointer.
    let p = unsafe { rdma_rs_fwsim_param() };
    if p.is_null() {
        return f(b"");
    }
    // SAFETY: `p` is the charp parameter: the static "" or a NUL-terminated copy the module
    // loader made from the insmod arguments. It is read-only after load (permission 0444, so
    // sysfs cannot change it) and freed only when the module is unloaded, after every caller
    // (module init) has returned.
    let s = unsafe { CStr::from_char_ptr(p) };
    f(s.to_bytes())
}
