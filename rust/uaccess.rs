// SPDX-License-Identifier: GPL-2.0

//! `copy_from_user()` into memory that was not initialised first.
//!
//! The kernel crate's `UserSliceReader::read_slice()` wants an initialised `&mut [u8]`, so a
//! stack buffer for the ioctl's attribute array was zeroed (a 384-byte `memset` on every
//! ioctl) only to be overwritten by the copy. `UserSliceReader::read_raw()` writes a
//! `&mut [MaybeUninit<u8>]`; [`read_uninit`] hands back the part it filled, initialised.

use core::mem::MaybeUninit;
use kernel::prelude::*;
use kernel::uaccess::{UserPtr, UserSlice};

/// Copies `buf.len()` bytes from the user address `addr` into `buf` and returns them.
///
/// # Errors
///
/// `EFAULT` when any byte cannot be read.
#[inline]
pub(crate) fn read_uninit(addr: usize, buf: &mut [MaybeUninit<u8>]) -> Result<&mut [u8]> {
    UserSlice::new(UserPtr::from_addr(addr), buf.len())
        .reader()
        .read_raw(buf)?;
    // SAFETY: `read_raw()` returned `Ok`, which guarantees that every byte of `buf` is
    // initialised; `MaybeUninit<u8>` and `u8` have the same layout, and the result borrows
    // `buf` mutably for its whole life.
    Ok(unsafe { &mut *(core::ptr::from_mut(buf) as *mut [u8]) })
}
