// SPDX-License-Identifier: GPL-2.0

//! `copy_from_user()` into memory that was not initialised first, and `copy_to_user()` in one
//! call.
//!
//! The kernel crate's `UserSliceReader::read_slice()` wants an initialised `&mut [u8]`, so a
//! stack buffer for the ioctl's attribute array was zeroed (a 384-byte `memset` on every
//! ioctl) only to be overwritten by the copy. `UserSliceReader::read_raw()` writes a
//! `&mut [MaybeUninit<u8>]`; [`read_uninit`] hands back the part it filled, initialised, and
//! calls `_copy_from_user()` itself rather than through `read_raw()` (every uverbs copy from
//! user space goes through it, [`read_init`] for initialised buffers). [`write`] is the same
//! for the other direction: every uverbs response, output attribute and flags write-back.

use core::mem::MaybeUninit;
use kernel::bindings;
use kernel::ffi::{c_ulong, c_void};
use kernel::prelude::*;

/// Copies `buf.len()` bytes from the user address `addr` into `buf` and returns them.
///
/// One call, to the exported `_copy_from_user()` (`access_ok()`, the fault-handling copy, the
/// rest zeroed on a fault), as upstream C's `copy_from_user()` compiles to on x86. The kernel
/// crate's `UserSliceReader::read_raw()` reaches it through two more calls (`read_raw()` itself
/// and `rust_helper_copy_from_user()`), which the rejected ioctl's 0.5 us on the benchmark
/// kernel measurably paid (`Documentation/performance.md`, "The ioctl entry"). What the skipped
/// inline `check_copy_size()` checks holds here: the destination is one Rust slice (one
/// object), and lengths above `INT_MAX` are refused as it refuses them.
///
/// # Errors
///
/// `EFAULT` when any byte cannot be read or the length exceeds `INT_MAX`.
#[inline]
pub(crate) fn read_uninit(addr: usize, buf: &mut [MaybeUninit<u8>]) -> Result<&mut [u8]> {
    let len = buf.len();
    if len > i32::MAX as usize {
        return Err(EFAULT);
    }
    // SAFETY: `buf` is valid for writes of `len` bytes (a `&mut` slice) and `len` fits a
    // `c_ulong`; `addr` is a user address that `_copy_from_user()` checks with `access_ok()`
    // and reads with fault handling, so any value is sound.
    let left = unsafe {
        bindings::_copy_from_user(
            buf.as_mut_ptr().cast::<c_void>(),
            addr as *const c_void,
            len as c_ulong,
        )
    };
    if left != 0 {
        return Err(EFAULT);
    }
    // SAFETY: `_copy_from_user()` returned 0, so it wrote every byte of `buf`;
    // `MaybeUninit<u8>` and `u8` have the same layout, and the result borrows `buf` mutably
    // for its whole life.
    Ok(unsafe { &mut *(core::ptr::from_mut(buf) as *mut [u8]) })
}

/// [`read_uninit`] into an initialised buffer.
///
/// # Errors
///
/// `EFAULT` as [`read_uninit`].
#[inline]
pub(crate) fn read_init(addr: usize, buf: &mut [u8]) -> Result {
    // SAFETY: `u8` and `MaybeUninit<u8>` have the same layout, and `read_uninit()` only
    // writes initialised bytes (copied or zeroed), so `buf` stays initialised.
    let raw = unsafe { &mut *(core::ptr::from_mut(buf) as *mut [MaybeUninit<u8>]) };
    read_uninit(addr, raw).map(|_| ())
}

/// Copies `data` to the user address `addr`: one call, to the exported `_copy_to_user()`
/// (`access_ok()` and the fault-handling copy), as upstream C's `copy_to_user()` compiles to
/// on x86. The kernel crate's `UserSliceWriter::write_slice()` reaches it through two more
/// out-of-line calls (`write_slice()` and `rust_helper_copy_to_user()`); a `QUERY_CONTEXT`
/// makes six such copies (three output attributes and their flags).
///
/// # Errors
///
/// `EFAULT` when any byte cannot be written or the length exceeds `INT_MAX`.
#[inline]
pub(crate) fn write(addr: usize, data: &[u8]) -> Result {
    let len = data.len();
    if len > i32::MAX as usize {
        return Err(EFAULT);
    }
    // SAFETY: `data` is valid for reads of `len` bytes (a slice) and `len` fits a `c_ulong`;
    // `addr` is a user address that `_copy_to_user()` checks with `access_ok()` and writes
    // with fault handling, so any value is sound.
    let left = unsafe {
        bindings::_copy_to_user(
            addr as *mut c_void,
            data.as_ptr().cast::<c_void>(),
            len as c_ulong,
        )
    };
    if left != 0 {
        return Err(EFAULT);
    }
    Ok(())
}
