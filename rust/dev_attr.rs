// SPDX-License-Identifier: GPL-2.0

//! Read-only text files added to an existing device's sysfs directory
//! (`device_create_file()`), removed when the set is dropped (`device_remove_file()`).
//!
//! Each file shows a fixed text given when it is added, e.g. the PCI `vendor` and `device`
//! files of a device that stands in for a PCI function.

use kernel::{
    bindings, device, ffi::c_char, prelude::*, str::CString, sync::aref::ARef, types::Opaque,
};

/// One attribute and the text its `show` emits.
///
/// `attr` is the first field of a `repr(C)` struct, so the `struct device_attribute *` sysfs
/// passes to [`show`] is a pointer to the [`Entry`].
#[repr(C)]
struct Entry {
    attr: Opaque<bindings::device_attribute>,
    name: CString,
    text: CString,
}

/// The files added to one device.
///
/// # Invariants
///
/// Every entry of `files` is a boxed [`Entry`] (its address never changes) whose attribute was
/// added to `dev` with `device_create_file()` and is removed by [`Drop`] before the entry is
/// freed.
pub(crate) struct DevTextFiles {
    dev: ARef<device::Device>,
    files: KVec<KBox<Entry>>,
}

impl DevTextFiles {
    /// An empty set for `dev`.
    pub(crate) fn new(dev: &device::Device) -> Self {
        Self {
            dev: dev.into(),
            files: KVec::new(),
        }
    }

    /// Adds the file `name` (mode 0444) showing `text`.
    pub(crate) fn add(&mut self, name: &CStr, text: core::fmt::Arguments<'_>) -> Result {
        self.files.reserve(1, GFP_KERNEL)?;
        let e = KBox::new(
            Entry {
                attr: Opaque::zeroed(),
                name: CString::try_from_fmt(fmt!("{name}"))?,
                text: CString::try_from_fmt(text)?,
            },
            GFP_KERNEL,
        )?;
        // SAFETY: `e` is exclusively ours and boxed; the name lives in it as long as the
        // attribute does.
        unsafe {
            let r = e.attr.get();
            (*r).attr.name = e.name.as_char_ptr();
            (*r).attr.mode = 0o444;
            (*r).__bindgen_anon_1.show = Some(show);
            // upstream sysfs_attr_init(): an attribute not in static memory needs a static
            // lockdep key.
            #[cfg(CONFIG_DEBUG_LOCK_ALLOC)]
            {
                (*r).attr.key = kernel::static_lock_class!().as_ptr();
            }
        }
        // SAFETY: `self.dev` is a valid device (we hold a reference); the attribute is
        // initialised above and stays at its address until `Drop` removes it.
        let ret = unsafe { bindings::device_create_file(raw(&self.dev), e.attr.get()) };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: the attribute was added; the entry is kept until `Drop` removes it.
        self.files.push(e, GFP_KERNEL)?;
        Ok(())
    }
}

impl Drop for DevTextFiles {
    fn drop(&mut self) {
        while let Some(e) = self.files.pop() {
            // SAFETY: the attribute was added to `self.dev` (type invariant);
            // `device_remove_file()` waits for running `show` calls, so the entry is unused
            // once it returns and may be freed.
            unsafe { bindings::device_remove_file(raw(&self.dev), e.attr.get()) };
        }
    }
}

/// The C `struct device` of `dev` (`kernel::device::Device` is a transparent wrapper of it; its
/// own `as_raw()` is private to the kernel crate).
fn raw(dev: &device::Device) -> *mut bindings::device {
    core::ptr::from_ref(dev).cast_mut().cast()
}

/// The `show` of every [`DevTextFiles`] attribute: copies the entry's text.
///
/// # Safety
///
/// `attr` is an attribute added by [`DevTextFiles::add`] that is still added, and `buf` the
/// `PAGE_SIZE` buffer sysfs passes to `show`.
unsafe extern "C" fn show(
    _dev: *mut bindings::device,
    attr: *mut bindings::device_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: sysfs calls this only for attributes added by `DevTextFiles::add`, whose
    // `device_attribute` is the first field of a live `repr(C)` `Entry` (type invariant of
    // `DevTextFiles`: the entry outlives the file).
    let e = unsafe { &*attr.cast::<Entry>() };
    let text = e.text.to_bytes();
    let n = text.len().min(bindings::PAGE_SIZE - 1);
    // SAFETY: sysfs passes a `PAGE_SIZE` buffer that is ours for the call; `n` is less than
    // that and `text` does not overlap it.
    unsafe { core::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n) };
    n as isize
}

// SAFETY: the entries are only read after `add` (by `show`, through sysfs) and freed by `Drop`
// after the files are removed; `ARef<Device>` is `Send`/`Sync`.
unsafe impl Send for DevTextFiles {}
// SAFETY: see `Send`; `&DevTextFiles` exposes nothing.
unsafe impl Sync for DevTextFiles {}
