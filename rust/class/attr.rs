// SPDX-License-Identifier: GPL-2.0

//! The sysfs page a `show` writes, the C attribute structures and groups, and decimal names.

use core::fmt;
use kernel::{bindings, ffi::c_char, prelude::*, types::Opaque};

/// The output buffer of a sysfs `show`: one page, truncated like `sysfs_emit()`.
pub struct SysfsBuf<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> SysfsBuf<'a> {
    /// A buffer over `buf`; at most `buf.len() - 1` bytes are kept (room for the NUL that
    /// sysfs expects).
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }

    /// The bytes emitted so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl fmt::Write for SysfsBuf<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let cap = self.buf.len().saturating_sub(1);
        let n = s.len().min(cap - self.len.min(cap));
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Runs `show` into the sysfs page `buf`, returning what a C `show` returns.
///
/// # Safety
///
/// `buf` must be the `PAGE_SIZE` buffer sysfs passes to `show`.
pub(super) unsafe fn emit(
    buf: *mut c_char,
    show: impl FnOnce(&mut SysfsBuf<'_>) -> Result,
) -> isize {
    // SAFETY: sysfs passes a zeroed, exclusive page (function safety requirement).
    let page = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), bindings::PAGE_SIZE) };
    let mut out = SysfsBuf::new(page);
    match show(&mut out) {
        Ok(()) => out.len as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// A `struct attribute` named `name` with `mode`.
pub(super) const fn attr(name: &'static CStr, mode: u16) -> bindings::attribute {
    // SAFETY: all-zero is a valid `struct attribute` (NULL name, no lockdep key, which makes
    // sysfs use the attribute's own static `skey`).
    let mut a: bindings::attribute = unsafe { core::mem::zeroed() };
    a.name = kernel::str::as_char_ptr_in_const_context(name);
    a.mode = mode;
    a
}

/// The C group and its NULL-terminated attribute pointer array, kept while the device exists.
pub(super) struct CGroup {
    pub(super) raw: Opaque<bindings::attribute_group>,
    ptrs: KVec<*mut bindings::attribute>,
}

/// The group `name` of the attributes `attrs`.
pub(super) fn build_group(
    name: Option<&'static CStr>,
    attrs: impl Iterator<Item = *mut bindings::attribute>,
) -> Result<KBox<CGroup>> {
    let mut ptrs = KVec::new();
    for a in attrs {
        ptrs.push(a, GFP_KERNEL)?;
    }
    ptrs.push(core::ptr::null_mut(), GFP_KERNEL)?;
    let g = KBox::new(
        CGroup {
            raw: Opaque::zeroed(),
            ptrs,
        },
        GFP_KERNEL,
    )?;
    // SAFETY: `g` is exclusively ours; the pointer array lives in `g` and its heap buffer does
    // not move while `g.ptrs` is not modified (it is not after this point).
    unsafe {
        let r = g.raw.get();
        (*r).name = name.map_or(core::ptr::null(), |n| n.as_char_ptr());
        (*r).__bindgen_anon_2.attrs = g.ptrs.as_ptr().cast_mut();
    }
    Ok(g)
}

/// A number in decimal, as `%u` prints it (for the names of sysfs files and devices).
pub(crate) struct Decimal {
    digits: [u8; 10],
    start: usize,
}

impl Decimal {
    /// The digits of `v`.
    pub(crate) fn new(v: u32) -> Self {
        let mut digits = [0u8; 10];
        let mut start = digits.len();
        let mut v = v;
        loop {
            start -= 1;
            digits[start] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        Decimal { digits, start }
    }

    /// The digits, without a NUL.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}
