// SPDX-License-Identifier: GPL-2.0

//! Device classes and class devices with typed sysfs attributes.
//!
//! The kernel crate has no `struct class` or `struct cdev` support (misc devices take only a
//! name). The RDMA core needs `/sys/class/infiniband/<dev>/` with `ports/N/` subdirectories and
//! uverbs needs `/sys/class/infiniband_verbs/` with a class attribute (`abi_version`), class
//! devices that carry a `dev_t` and a parent link, and a devnode (`infiniband/uverbsN`, 0666).
//!
//! * [`Class`]: `class_register()` of a class with read-only class attributes and an optional
//!   devnode rule; dropping it removes the attributes and unregisters the class.
//! * [`ClassDevice<T>`]: a `struct device` of a class embedding the caller's data `T`, with
//!   attribute groups whose `show` are plain Rust functions over `&T` ([`DevAttr`]),
//!   subdirectories with their own attributes over `(&T, index)` ([`DirAttr`]), an optional
//!   `dev_t` and, when `T` is a [`CharDevice`](crate::chrdev::CharDevice), a cdev added and
//!   removed together with the device (`cdev_device_add()`/`cdev_device_del()`). Dropping it
//!   deletes the subdirectories and the device (upstream order: `device_del()`, then
//!   `put_device()`); when `drop` returns no `show` runs or will run (kernfs drains active
//!   readers when the files are removed). `T` itself is dropped when the last reference on the
//!   device goes (an open char device file holds one).
//!
//! The files: `class/attr.rs` (the sysfs page and the C attribute structures), `class/dir.rs`
//! (subdirectories and their files), `class/device.rs` (class devices).

#[path = "class/attr.rs"]
mod attr;
#[path = "class/device.rs"]
mod device;
#[path = "class/dir.rs"]
mod dir;

pub(crate) use attr::Decimal;
pub use attr::SysfsBuf;
pub use device::DevAttr;
pub(crate) use device::{data_of_cdev, AttrGroup, ClassDevice, DeviceSpec};
pub(crate) use dir::DirAttr;

use attr::{attr, emit};
use core::ptr::NonNull;
use kernel::{bindings, ffi::c_char, prelude::*, str::CString, types::Opaque};

/// A `show` over the whole class.
pub(crate) type ClassShowFn = fn(&mut SysfsBuf<'_>) -> Result;

/// A read-only class attribute (`/sys/class/<class>/<name>`), declared as a `static`.
#[repr(C)]
pub(crate) struct ClassAttr {
    raw: Opaque<bindings::class_attribute>,
    show: ClassShowFn,
}

// SAFETY: the C struct is written only by `ro()` (before it is shared) and read by sysfs; `show`
// is a plain function pointer.
unsafe impl Sync for ClassAttr {}

impl ClassAttr {
    /// A 0444 attribute `name` printing what `show` emits.
    pub(crate) const fn ro(name: &'static CStr, show: ClassShowFn) -> Self {
        // SAFETY: all-zero is a valid `class_attribute` (no callbacks).
        let mut raw: bindings::class_attribute = unsafe { core::mem::zeroed() };
        raw.attr = attr(name, 0o444);
        raw.show = Some(Self::show_tramp);
        Self {
            raw: Opaque::new(raw),
            show,
        }
    }

    /// # Safety
    ///
    /// Called by sysfs with an attribute that is the `raw` of a [`ClassAttr`].
    unsafe extern "C" fn show_tramp(
        _class: *const bindings::class,
        attr: *const bindings::class_attribute,
        buf: *mut c_char,
    ) -> isize {
        // SAFETY: `raw` is the first field of the `repr(C)` `ClassAttr`, which is `'static`.
        let this = unsafe { &*attr.cast::<ClassAttr>() };
        // SAFETY: sysfs `show` contract.
        unsafe { emit(buf, this.show) }
    }
}

/// Where a class puts its device nodes: `/dev/<dir>/<device name>` with `mode`
/// (upstream: a class `devnode` callback such as `uverbs_devnode()`).
pub(crate) struct Devnode {
    /// The directory under `/dev`.
    pub(crate) dir: &'static CStr,
    /// The node's mode; `None` keeps the default (0600).
    pub(crate) mode: Option<u16>,
}

/// The class structure and what its callbacks need; `class` first so that a `*const class`
/// is a `*const ClassBox`.
#[repr(C)]
struct ClassBox {
    class: Opaque<bindings::class>,
    devnode: Option<Devnode>,
    name: CString,
}

/// A registered device class.
///
/// # Invariants
///
/// `inner` points to a `ClassBox` whose `class` is registered; the box is freed by the class's
/// `class_release` callback (after the last reference on the class's subsystem, which can be
/// later than `class_unregister()`), or by `register()` itself on failure. Every attribute in
/// `attrs` has its file created.
pub(crate) struct Class {
    inner: NonNull<ClassBox>,
    attrs: &'static [&'static ClassAttr],
}

// SAFETY: the class is only used through the driver core, which locks internally.
unsafe impl Send for Class {}
// SAFETY: as above; `&Class` only hands out the C pointer to the driver core.
unsafe impl Sync for Class {}

impl Class {
    /// Registers class `name` with the read-only class attributes `attrs` and device nodes as
    /// `devnode` says.
    ///
    /// # Errors
    ///
    /// `EEXIST` (with a message naming the class) if a class of that name exists, `ENOMEM`, or
    /// the error of creating an attribute file.
    pub(crate) fn register(
        name: &CStr,
        devnode: Option<Devnode>,
        attrs: &'static [&'static ClassAttr],
    ) -> Result<Self> {
        let name = CString::try_from_fmt(fmt!("{}", name))?;
        let b = KBox::new(
            ClassBox {
                class: Opaque::zeroed(),
                devnode,
                name,
            },
            GFP_KERNEL,
        )?;
        let p = KBox::into_raw(b);
        // SAFETY: `p` is a valid, exclusively owned `ClassBox`; we fill its class.
        let class = unsafe {
            let c = (*p).class.get();
            (*c).name = (*p).name.as_char_ptr();
            (*c).class_release = Some(Self::release);
            if (*p).devnode.is_some() {
                (*c).devnode = Some(Self::devnode);
            }
            c
        };
        // SAFETY: `class` is a fully initialized class in memory that lives until
        // `class_release` (or until we free it below on failure, when the core kept nothing).
        let ret = unsafe { bindings::class_register(class) };
        if ret != 0 {
            // SAFETY: registration failed, so the core holds no pointer to the box.
            drop(unsafe { KBox::from_raw(p) });
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: the class is registered; files are added below.
        let mut this = Self {
            // SAFETY: `p` comes from `KBox::into_raw`, never NULL.
            inner: unsafe { NonNull::new_unchecked(p) },
            attrs: &[],
        };
        for (i, a) in attrs.iter().enumerate() {
            // SAFETY: `class` is registered; `a.raw` is a `'static` attribute.
            let ret =
                unsafe { bindings::class_create_file_ns(class, a.raw.get(), core::ptr::null()) };
            if ret != 0 {
                this.attrs = &attrs[..i];
                return Err(Error::from_errno(ret));
            }
        }
        this.attrs = attrs;
        Ok(this)
    }

    /// The C class, for the driver core.
    pub(crate) fn as_raw(&self) -> *const bindings::class {
        // SAFETY: `inner` is valid while `self` lives (type invariant).
        unsafe { (*self.inner.as_ptr()).class.get() }
    }

    /// # Safety
    ///
    /// Called by the driver core once, when the class's subsystem is released.
    unsafe extern "C" fn release(class: *const bindings::class) {
        // SAFETY: `class` is the first field of a `ClassBox` from `KBox::into_raw` (type
        // invariant of `Class`); this is the last user.
        drop(unsafe { KBox::from_raw(class.cast::<ClassBox>().cast_mut()) });
    }

    /// # Safety
    ///
    /// Called by devtmpfs for a device of a class registered by [`Class::register`].
    unsafe extern "C" fn devnode(dev: *const bindings::device, mode: *mut u16) -> *mut c_char {
        // SAFETY: `dev` is a registered device of our class; the class outlives it.
        let (spec, name) = unsafe {
            let b = &*(*dev).class.cast::<ClassBox>();
            (
                b.devnode.as_ref(),
                CStr::from_char_ptr(bindings::dev_name(dev)),
            )
        };
        let Some(spec) = spec else {
            return core::ptr::null_mut();
        };
        if let Some(m) = spec.mode {
            if !mode.is_null() {
                // SAFETY: devtmpfs passes a valid mode pointer when it wants one.
                unsafe { *mode = m };
            }
        }
        // The caller kfree()s the name: build it in a kmalloc'ed vector.
        let mut v = KVec::<u8>::new();
        let built = v
            .extend_from_slice(spec.dir.to_bytes(), GFP_KERNEL)
            .and_then(|()| v.push(b'/', GFP_KERNEL))
            .and_then(|()| v.extend_from_slice(name.to_bytes_with_nul(), GFP_KERNEL));
        if built.is_err() {
            return core::ptr::null_mut();
        }
        let (ptr, _len, _cap) = v.into_raw_parts();
        ptr.cast()
    }
}

impl Drop for Class {
    fn drop(&mut self) {
        let class = self.as_raw();
        for a in self.attrs.iter().rev() {
            // SAFETY: the file was created by `register()` (type invariant).
            unsafe { bindings::class_remove_file_ns(class, a.raw.get(), core::ptr::null()) };
        }
        // SAFETY: registered (type invariant); the box is freed by `release`, maybe now.
        unsafe { bindings::class_unregister(class) };
    }
}
