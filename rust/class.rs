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

use core::{fmt, ptr::NonNull};
use kernel::{bindings, device, ffi::c_char, prelude::*, str::CString, types::Opaque};

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

/// A `show` over the whole class.
pub(crate) type ClassShowFn = fn(&mut SysfsBuf<'_>) -> Result;
/// A `show` over a class device's data.
pub(crate) type DevShowFn<T> = fn(&T, &mut SysfsBuf<'_>) -> Result;
/// A `show` over a class device's data and the index of the subdirectory holding the file.
pub(crate) type DirShowFn<T> = fn(&T, u32, &mut SysfsBuf<'_>) -> Result;

/// Runs `show` into the sysfs page `buf`, returning what a C `show` returns.
///
/// # Safety
///
/// `buf` must be the `PAGE_SIZE` buffer sysfs passes to `show`.
unsafe fn emit(buf: *mut c_char, show: impl FnOnce(&mut SysfsBuf<'_>) -> Result) -> isize {
    // SAFETY: sysfs passes a zeroed, exclusive page (function safety requirement).
    let page = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), bindings::PAGE_SIZE) };
    let mut out = SysfsBuf::new(page);
    match show(&mut out) {
        Ok(()) => out.len as isize,
        Err(e) => e.to_errno() as isize,
    }
}

const fn attr(name: &'static CStr, mode: u16) -> bindings::attribute {
    // SAFETY: all-zero is a valid `struct attribute` (NULL name, no lockdep key, which makes
    // sysfs use the attribute's own static `skey`).
    let mut a: bindings::attribute = unsafe { core::mem::zeroed() };
    a.name = kernel::str::as_char_ptr_in_const_context(name);
    a.mode = mode;
    a
}

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

/// A read-only attribute of a class device (`/sys/class/<class>/<dev>/<name>`), declared as a
/// `static`.
#[repr(C)]
pub struct DevAttr<T: 'static> {
    raw: Opaque<bindings::device_attribute>,
    show: DevShowFn<T>,
}

// SAFETY: written only by `ro()`, then read by sysfs; `show` is a function pointer.
unsafe impl<T> Sync for DevAttr<T> {}

impl<T: 'static> DevAttr<T> {
    /// A 0444 attribute `name` printing what `show` emits for the device's data.
    pub const fn ro(name: &'static CStr, show: DevShowFn<T>) -> Self {
        // SAFETY: all-zero is a valid `device_attribute`.
        let mut raw: bindings::device_attribute = unsafe { core::mem::zeroed() };
        raw.attr = attr(name, 0o444);
        raw.__bindgen_anon_1.show = Some(Self::show_tramp);
        Self {
            raw: Opaque::new(raw),
            show,
        }
    }

    /// # Safety
    ///
    /// Called by sysfs for a file of a [`ClassDevice<T>`] created from a `DevAttr<T>`.
    unsafe extern "C" fn show_tramp(
        dev: *mut bindings::device,
        attr: *mut bindings::device_attribute,
        buf: *mut c_char,
    ) -> isize {
        // SAFETY: `raw` is the first field of the `'static` `DevAttr<T>`; `dev` is the first
        // field of a live `DevInner<T>` (sysfs keeps the device alive while a `show` runs).
        let (this, data) = unsafe { (&*attr.cast::<Self>(), &(*dev.cast::<DevInner<T>>()).data) };
        // SAFETY: sysfs `show` contract.
        unsafe { emit(buf, |b| (this.show)(data, b)) }
    }
}

/// A read-only attribute in a subdirectory of a class device, declared as a `static`; its
/// `show` also gets the subdirectory's index (the port number of `ports/N/`).
#[repr(C)]
pub(crate) struct DirAttr<T: 'static> {
    raw: Opaque<bindings::attribute>,
    show: DirShowFn<T>,
}

// SAFETY: as `DevAttr`.
unsafe impl<T> Sync for DirAttr<T> {}

impl<T: 'static> DirAttr<T> {
    /// A 0444 attribute `name`.
    pub(crate) const fn ro(name: &'static CStr, show: DirShowFn<T>) -> Self {
        Self {
            raw: Opaque::new(attr(name, 0o444)),
            show,
        }
    }
}

/// A named group of device attributes (`struct attribute_group`), built per device.
pub(crate) struct AttrGroup<T: 'static> {
    /// The subdirectory name of the group, `None` for files directly in the device directory.
    pub(crate) name: Option<&'static CStr>,
    /// The attributes.
    pub(crate) attrs: &'static [&'static DevAttr<T>],
}

/// The C group and its NULL-terminated attribute pointer array, kept while the device exists.
struct CGroup {
    raw: Opaque<bindings::attribute_group>,
    ptrs: KVec<*mut bindings::attribute>,
}

fn build_group(
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

/// What a class device allocates: the C device first (so `*mut device` is `*mut DevInner<T>`),
/// its cdev, and the caller's data.
#[repr(C)]
struct DevInner<T: 'static> {
    dev: Opaque<bindings::device>,
    cdev: Opaque<bindings::cdev>,
    data: T,
    groups: KVec<KBox<CGroup>>,
    group_ptrs: KVec<*const bindings::attribute_group>,
}

impl<T: 'static> DevInner<T> {
    /// # Safety
    ///
    /// Called by the driver core once, after the last `put_device()`.
    unsafe extern "C" fn release(dev: *mut bindings::device) {
        // SAFETY: `dev` is the first field of a `DevInner<T>` from `KBox::into_raw`.
        drop(unsafe { KBox::from_raw(dev.cast::<Self>()) });
    }
}

/// The data of the class device whose cdev is `cdev`.
///
/// # Safety
///
/// `cdev` must be the `cdev` of a live `DevInner<T>` (an open file of the char device keeps it
/// alive: the cdev holds a reference on the device), and the returned reference must not
/// outlive that.
pub(crate) unsafe fn data_of_cdev<'a, T: 'static>(cdev: *mut bindings::cdev) -> &'a T {
    let off = core::mem::offset_of!(DevInner<T>, cdev);
    // SAFETY: function safety requirement: `cdev` is inside a live `DevInner<T>`.
    unsafe { &(*cdev.cast::<u8>().sub(off).cast::<DevInner<T>>()).data }
}

/// The files of a subdirectory ([`Dir`]): how their group is built and a read is answered.
trait DirFiles<T: 'static>: Sized + 'static {
    /// The group of the files.
    fn group(&self) -> Result<KBox<CGroup>>;

    /// Shows file `attr` of the directory with index `index` over `data`.
    ///
    /// # Safety
    ///
    /// `attr` is an attribute of a group built by [`DirFiles::group`] of `self`.
    unsafe fn show(
        &self,
        data: &T,
        index: u32,
        attr: *mut bindings::attribute,
        b: &mut SysfsBuf<'_>,
    ) -> Result;
}

/// The files of [`ClassDevice::add_dir`]: `'static` [`DirAttr`]s.
struct StaticFiles<T: 'static>(&'static [&'static DirAttr<T>]);

impl<T: 'static> DirFiles<T> for StaticFiles<T> {
    fn group(&self) -> Result<KBox<CGroup>> {
        build_group(None, self.0.iter().map(|a| a.raw.get()))
    }

    unsafe fn show(
        &self,
        data: &T,
        index: u32,
        attr: *mut bindings::attribute,
        b: &mut SysfsBuf<'_>,
    ) -> Result {
        // SAFETY: `attr` is the first field of one of our `'static` `DirAttr<T>`s (function
        // safety requirement).
        let a = unsafe { &*attr.cast::<DirAttr<T>>() };
        (a.show)(data, index, b)
    }
}

/// A subdirectory of a class device: a kobject with attribute files.
#[repr(C)]
struct Dir<T: 'static, F: DirFiles<T>> {
    kobj: Opaque<bindings::kobject>,
    data: *const T,
    index: u32,
    group: KBox<CGroup>,
    files: F,
}

impl<T: 'static, F: DirFiles<T>> Dir<T, F> {
    const SYSFS_OPS: bindings::sysfs_ops = bindings::sysfs_ops {
        show: Some(Self::show),
        store: None,
    };

    const KTYPE: bindings::kobj_type = {
        // SAFETY: all-zero is a valid `kobj_type`.
        let mut t: bindings::kobj_type = unsafe { core::mem::zeroed() };
        t.release = Some(Self::release);
        t.sysfs_ops = &Self::SYSFS_OPS;
        t
    };

    const fn ktype() -> &'static bindings::kobj_type {
        &Self::KTYPE
    }

    /// # Safety
    ///
    /// Called by sysfs for a file of a `Dir<T, F>`, whose attributes are those of its `group`.
    unsafe extern "C" fn show(
        kobj: *mut bindings::kobject,
        attr: *mut bindings::attribute,
        buf: *mut c_char,
    ) -> isize {
        // SAFETY: `kobj` is the first field of a live `Dir<T, F>`; its `data` is valid while its
        // files exist (the device is deleted only after its directories, see
        // `ClassDevice::drop`).
        let dir = unsafe { &*kobj.cast::<Self>() };
        // SAFETY: as above.
        let data = unsafe { &*dir.data };
        // SAFETY: sysfs `show` contract; `attr` is a file of `dir.group`, which was built by
        // `dir.files.group()`.
        unsafe { emit(buf, |b| dir.files.show(data, dir.index, attr, b)) }
    }

    /// # Safety
    ///
    /// Called once by the kobject core after the last `kobject_put()`.
    unsafe extern "C" fn release(kobj: *mut bindings::kobject) {
        // SAFETY: `kobj` is the first field of a `Dir<T, F>` from `KBox::into_raw`.
        drop(unsafe { KBox::from_raw(kobj.cast::<Self>()) });
    }
}

/// A subdirectory handle, to nest another directory in it.
#[derive(Clone, Copy)]
pub(crate) struct DirId(usize);

/// What a class device is made of.
pub(crate) struct DeviceSpec<'a, T: 'static> {
    /// The class.
    pub(crate) class: &'a Class,
    /// The parent device (the `device` link and the sysfs location).
    pub(crate) parent: Option<&'a device::Device>,
    /// The device number; required for a char device.
    pub(crate) devt: Option<bindings::dev_t>,
    /// Attribute groups.
    pub(crate) groups: &'a [AttrGroup<T>],
}

/// A registered class device holding `T`.
///
/// # Invariants
///
/// `inner` is a `DevInner<T>` whose device was added (with its cdev if `has_cdev`) and on which
/// this object holds the initial reference; `dirs` are the kobjects of added [`Dir`]s whose
/// `data` points to `inner.data`, each one's parent the device or an earlier directory.
pub(crate) struct ClassDevice<T: 'static> {
    inner: NonNull<DevInner<T>>,
    dirs: KVec<NonNull<bindings::kobject>>,
    has_cdev: bool,
}

// SAFETY: `T: Send + Sync` is shared with sysfs readers on any CPU; the C objects are only
// handed to the driver core.
unsafe impl<T: Send + Sync> Send for ClassDevice<T> {}
// SAFETY: `&ClassDevice` gives `&T`.
unsafe impl<T: Send + Sync> Sync for ClassDevice<T> {}

impl<T: Send + Sync + 'static> ClassDevice<T> {
    /// Registers a device named `name` of `spec.class` holding `data`, without a cdev.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, or what `device_add()` returns (`EEXIST` for a duplicate name).
    pub(crate) fn register(
        spec: DeviceSpec<'_, T>,
        name: fmt::Arguments<'_>,
        data: T,
    ) -> Result<Self> {
        Self::register_inner(spec, name, data, None)
    }

    pub(crate) fn register_inner(
        spec: DeviceSpec<'_, T>,
        name: fmt::Arguments<'_>,
        data: T,
        cdev: Option<(
            &'static bindings::file_operations,
            &'static kernel::ThisModule,
        )>,
    ) -> Result<Self> {
        Self::register_impl(spec, name, data, cdev, false)
    }

    fn register_impl(
        spec: DeviceSpec<'_, T>,
        name: fmt::Arguments<'_>,
        data: T,
        cdev: Option<(
            &'static bindings::file_operations,
            &'static kernel::ThisModule,
        )>,
        quiet: bool,
    ) -> Result<Self> {
        if cdev.is_some() && spec.devt.is_none() {
            return Err(EINVAL);
        }
        let name = CString::try_from_fmt(name)?;
        let mut groups = KVec::new();
        for g in spec.groups {
            groups.push(
                build_group(g.name, g.attrs.iter().map(|a| a.raw.get().cast()))?,
                GFP_KERNEL,
            )?;
        }
        let mut group_ptrs = KVec::new();
        for g in groups.iter() {
            group_ptrs.push(g.raw.get().cast_const(), GFP_KERNEL)?;
        }
        group_ptrs.push(core::ptr::null(), GFP_KERNEL)?;
        let b = KBox::new(
            DevInner {
                dev: Opaque::zeroed(),
                cdev: Opaque::zeroed(),
                data,
                groups,
                group_ptrs,
            },
            GFP_KERNEL,
        )?;
        let p = KBox::into_raw(b);
        // SAFETY: `p` is exclusively ours until device_initialize(); afterwards it is freed
        // only through `DevInner::release`, i.e. by put_device().
        let dev = unsafe {
            let dev = (*p).dev.get();
            bindings::device_initialize(dev);
            (*dev).class = spec.class.as_raw();
            (*dev).release = Some(DevInner::<T>::release);
            (*dev).groups = (*p).group_ptrs.as_ptr().cast_mut();
            if quiet {
                (*dev).kobj.set_uevent_suppress(1);
            }
            if let Some(devt) = spec.devt {
                (*dev).devt = devt;
            }
            if let Some(parent) = spec.parent {
                // `device::Device` is a transparent wrapper of `struct device`; device_add()
                // takes its own reference on the parent.
                (*dev).parent = core::ptr::from_ref(parent)
                    .cast::<bindings::device>()
                    .cast_mut();
            }
            dev
        };
        // SAFETY: `dev` is initialized; `name` is a NUL-terminated string passed through "%s".
        let ret = unsafe { bindings::dev_set_name(dev, c"%s".as_char_ptr(), name.as_char_ptr()) };
        let ret = if ret != 0 {
            ret
        } else if let Some((fops, module)) = cdev {
            // SAFETY: `cdev` is ours and zeroed; `fops` is `'static`; `devt` set above.
            unsafe {
                let c = (*p).cdev.get();
                bindings::cdev_init(c, fops);
                (*c).owner = module.as_ptr();
                bindings::cdev_device_add(c, dev)
            }
        } else {
            // SAFETY: `dev` is initialized and named.
            unsafe { bindings::device_add(dev) }
        };
        if ret != 0 {
            // SAFETY: drops the initial reference: `release` frees `p` (and `data`).
            unsafe { bindings::put_device(dev) };
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: added, with the initial reference held.
        Ok(Self {
            // SAFETY: from `KBox::into_raw`.
            inner: unsafe { NonNull::new_unchecked(p) },
            dirs: KVec::new(),
            has_cdev: cdev.is_some(),
        })
    }

    /// The device's data.
    pub(crate) fn data(&self) -> &T {
        // SAFETY: `inner` lives at least as long as our reference (type invariant).
        unsafe { &(*self.inner.as_ptr()).data }
    }

    /// The device's name.
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: the device is added, so it has a name, which lives as long as the device.
        unsafe { CStr::from_char_ptr(bindings::dev_name((*self.inner.as_ptr()).dev.get())) }
    }

    /// Adds subdirectory `name` (in `parent`, or in the device directory) with `attrs`, whose
    /// `show` get `index`.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, `EEXIST`, `EINVAL` for a `parent` not of this device.
    pub(crate) fn add_dir(
        &mut self,
        parent: Option<DirId>,
        name: fmt::Arguments<'_>,
        index: u32,
        attrs: &'static [&'static DirAttr<T>],
    ) -> Result<DirId> {
        self.add_kobj_dir(parent, name, index, || Ok(StaticFiles(attrs)))
    }

    /// Adds subdirectory `name` (in `parent`, or in the device directory) with index `index`
    /// holding the files `make_files` builds once the parent is checked (upstream:
    /// kobject_init_and_add() + sysfs_create_group()).
    fn add_kobj_dir<F: DirFiles<T>>(
        &mut self,
        parent: Option<DirId>,
        name: fmt::Arguments<'_>,
        index: u32,
        make_files: impl FnOnce() -> Result<F>,
    ) -> Result<DirId> {
        let parent_kobj = self.parent_kobj(parent)?;
        let name = CString::try_from_fmt(name)?;
        self.dirs.reserve(1, GFP_KERNEL)?;
        let files = make_files()?;
        let b = KBox::new(
            Dir {
                kobj: Opaque::zeroed(),
                data: self.data(),
                index,
                group: files.group()?,
                files,
            },
            GFP_KERNEL,
        )?;
        let p = KBox::into_raw(b);
        // SAFETY: `p` is ours; after kobject_init_and_add() it is freed by `Dir::release` via
        // kobject_put(), also on failure. `parent_kobj` is live.
        let ret = unsafe {
            let k = (*p).kobj.get();
            let ret = bindings::kobject_init_and_add(
                k,
                Dir::<T, F>::ktype(),
                parent_kobj,
                c"%s".as_char_ptr(),
                name.as_char_ptr(),
            );
            if ret == 0 {
                let group: &CGroup = &(*p).group;
                let ret = bindings::sysfs_create_group(k, group.raw.get());
                if ret != 0 {
                    bindings::kobject_del(k);
                }
                ret
            } else {
                ret
            }
        };
        if ret != 0 {
            // SAFETY: drops the initial reference; `release` frees `p`.
            unsafe { bindings::kobject_put((*p).kobj.get()) };
            return Err(Error::from_errno(ret));
        }
        // SAFETY: from `KBox::into_raw`; `kobj` is its first field.
        let dir = unsafe { NonNull::new_unchecked(p.cast::<bindings::kobject>()) };
        // INVARIANT: added, `data` points to our data, parent is the device or earlier dir.
        self.dirs.push(dir, GFP_KERNEL)?;
        Ok(DirId(self.dirs.len() - 1))
    }

    fn parent_kobj(&self, parent: Option<DirId>) -> Result<*mut bindings::kobject> {
        Ok(match parent {
            // SAFETY: `inner` is live (type invariant); `kobj` is the first field of `device`.
            None => unsafe { (*self.inner.as_ptr()).dev.get().cast::<bindings::kobject>() },
            Some(DirId(i)) => self.dirs.get(i).ok_or(EINVAL)?.as_ptr(),
        })
    }

    /// Adds subdirectory `name` (in `parent`, or in the device directory) holding `count`
    /// files named `0` .. `count - 1` (upstream: `gids/`, `pkeys/`, `gid_attrs/types/` of a
    /// port, whose attributes are allocated at run time). Reading file `i` calls
    /// `show(data, index, i)`.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, `EEXIST`, `EINVAL` for a `parent` not of this device.
    pub(crate) fn add_indexed_dir(
        &mut self,
        parent: Option<DirId>,
        name: fmt::Arguments<'_>,
        index: u32,
        count: u32,
        show: IndexedShowFn<T>,
    ) -> Result<DirId> {
        self.add_kobj_dir(parent, name, index, || {
            // The attributes point to their own names: the vector is allocated once with its final
            // length and never grows, so the elements do not move.
            let mut attrs = KVec::with_capacity(count as usize, GFP_KERNEL)?;
            for i in 0..count {
                attrs.push(
                    IndexedAttr {
                        raw: Opaque::zeroed(),
                        index: i,
                        name: index_name(i),
                        named: None,
                    },
                    GFP_KERNEL,
                )?;
            }
            Ok(IndexedFiles::init(
                show,
                attrs,
                kernel::static_lock_class!(),
            ))
        })
    }

    /// Adds subdirectory `name` (in `parent`, or in the device directory) holding one file per
    /// entry of `names` (upstream: `hw_counters/`, whose attributes are allocated at run time
    /// from the driver's counter descriptors). Reading file `names[i]` calls
    /// `show(data, index, i)`.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, `EEXIST` (also for a name given twice), `EINVAL` for a `parent` not of this
    /// device.
    pub(crate) fn add_named_dir(
        &mut self,
        parent: Option<DirId>,
        name: fmt::Arguments<'_>,
        index: u32,
        names: &[&'static CStr],
        show: IndexedShowFn<T>,
    ) -> Result<DirId> {
        self.add_kobj_dir(parent, name, index, || {
            let mut attrs = KVec::with_capacity(names.len(), GFP_KERNEL)?;
            for (i, n) in names.iter().enumerate() {
                attrs.push(
                    IndexedAttr {
                        raw: Opaque::zeroed(),
                        index: u32::try_from(i)?,
                        name: [0; 12],
                        named: Some(n),
                    },
                    GFP_KERNEL,
                )?;
            }
            Ok(IndexedFiles::init(
                show,
                attrs,
                kernel::static_lock_class!(),
            ))
        })
    }

    /// Registers like [`ClassDevice::register`] but with the `KOBJ_ADD` uevent held back until
    /// [`ClassDevice::announce`] (upstream `ib_register_device()`: `dev_set_uevent_suppress()`
    /// before `device_add()`, `kobject_uevent(KOBJ_ADD)` once the clients are added).
    ///
    /// # Errors
    ///
    /// As [`ClassDevice::register`].
    pub(crate) fn register_quiet(
        spec: DeviceSpec<'_, T>,
        name: fmt::Arguments<'_>,
        data: T,
    ) -> Result<Self> {
        Self::register_impl(spec, name, data, None, true)
    }

    /// Renames the device (upstream `device_rename()`: the sysfs directory, its class link
    /// and a `KOBJ_MOVE` uevent).
    ///
    /// # Errors
    ///
    /// `device_rename()`'s (`EEXIST` for a name taken in the class directory, `ENOMEM`).
    pub(crate) fn rename(&self, name: &CStr) -> Result {
        // SAFETY: the device is added (type invariant); `name` is NUL-terminated and
        // device_rename() copies it.
        let ret = unsafe {
            bindings::device_rename((*self.inner.as_ptr()).dev.get(), name.as_char_ptr())
        };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        Ok(())
    }

    /// Sends the `KOBJ_ADD` uevent held back by [`ClassDevice::register_quiet`].
    pub(crate) fn announce(&self) {
        // SAFETY: the device is added (type invariant); the bitfield is only written here and
        // before device_add(), both under the caller's registration.
        unsafe {
            let dev = (*self.inner.as_ptr()).dev.get();
            (*dev).kobj.set_uevent_suppress(0);
            bindings::kobject_uevent(&raw mut (*dev).kobj, bindings::kobject_action_KOBJ_ADD);
        }
    }
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

/// The name of file `i` of an indexed directory: decimal, NUL-terminated.
fn index_name(i: u32) -> [u8; 12] {
    let d = Decimal::new(i);
    let mut out = [0u8; 12];
    out[..d.as_bytes().len()].copy_from_slice(d.as_bytes());
    out
}

/// A `show` of an indexed directory's file: the device's data, the directory's index (the
/// port) and the file's index (the GID or P_Key table entry).
pub(crate) type IndexedShowFn<T> = fn(&T, u32, u32, &mut SysfsBuf<'_>) -> Result;

/// One run-time attribute of [`IndexedFiles`]: `raw.name` points to `name`.
#[repr(C)]
struct IndexedAttr {
    raw: Opaque<bindings::attribute>,
    index: u32,
    name: [u8; 12],
    /// A name of its own ([`ClassDevice::add_named_dir`]) instead of the index.
    named: Option<&'static CStr>,
}

/// The files of [`ClassDevice::add_indexed_dir`] (named by their index: `gids/0`, `gids/1`,
/// ...) and [`ClassDevice::add_named_dir`], all shown by `show`.
struct IndexedFiles<T: 'static> {
    show: IndexedShowFn<T>,
    attrs: KVec<IndexedAttr>,
}

impl<T: 'static> IndexedFiles<T> {
    /// Points each attribute at its name, mode 0444. `attrs` was allocated with its final
    /// length and never grows, so the elements (and the index names inside them) do not move.
    fn init(
        show: IndexedShowFn<T>,
        attrs: KVec<IndexedAttr>,
        key: Pin<&'static kernel::sync::LockClassKey>,
    ) -> Self {
        for a in attrs.iter() {
            let name: *const u8 = match a.named {
                Some(n) => n.as_char_ptr().cast(),
                None => a.name.as_ptr(),
            };
            // SAFETY: `a` is ours and does not move (see above); the name is NUL-terminated
            // and lives as long as the attribute (in it, or static).
            unsafe {
                let r = a.raw.get();
                (*r).name = name.cast();
                (*r).mode = 0o444;
                // upstream sysfs_attr_init(): attributes not in static memory need a
                // static key.
                #[cfg(CONFIG_DEBUG_LOCK_ALLOC)]
                {
                    (*r).key = key.as_ptr();
                }
            }
        }
        #[cfg(not(CONFIG_DEBUG_LOCK_ALLOC))]
        let _ = key;
        IndexedFiles { show, attrs }
    }
}

impl<T: 'static> DirFiles<T> for IndexedFiles<T> {
    fn group(&self) -> Result<KBox<CGroup>> {
        build_group(None, self.attrs.iter().map(|a| a.raw.get()))
    }

    unsafe fn show(
        &self,
        data: &T,
        index: u32,
        attr: *mut bindings::attribute,
        b: &mut SysfsBuf<'_>,
    ) -> Result {
        // SAFETY: `attr` is the first field of one of `self.attrs` (function safety
        // requirement).
        let a = unsafe { &*attr.cast::<IndexedAttr>() };
        (self.show)(data, index, a.index, b)
    }
}

impl<T: 'static> Drop for ClassDevice<T> {
    fn drop(&mut self) {
        // Newest first, so children go before their parents.
        while let Some(d) = self.dirs.pop() {
            // SAFETY: added (type invariant). kobject_del() removes the files and waits for
            // running `show`s; kobject_put() drops our reference.
            unsafe {
                let k = d.as_ptr();
                bindings::kobject_del(k);
                bindings::kobject_put(k);
            }
        }
        let p = self.inner.as_ptr();
        // SAFETY: added (type invariant). Upstream order: delete (removes the sysfs files,
        // draining `show`s, and the cdev), then drop our reference; `data` is dropped by
        // `release` when the last reference (maybe an open file's) goes.
        unsafe {
            let dev = (*p).dev.get();
            if self.has_cdev {
                bindings::cdev_device_del((*p).cdev.get(), dev);
            } else {
                bindings::device_del(dev);
            }
            bindings::put_device(dev);
        }
    }
}

#[kunit_tests(ib_core_rs_class)]
mod tests {
    use super::*;
    use core::fmt::Write;
    use kernel::sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    };

    struct Port {
        name: &'static str,
        drops: Arc<Atomic<u32>>,
    }

    impl Drop for Port {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Relaxed);
        }
    }

    fn show_name(p: &Port, b: &mut SysfsBuf<'_>) -> Result {
        writeln!(b, "{}", p.name).map_err(|_| EINVAL)
    }

    fn show_state(_: &Port, index: u32, b: &mut SysfsBuf<'_>) -> Result {
        writeln!(b, "{}: ACTIVE", index + 3).map_err(|_| EINVAL)
    }

    fn show_failing(_: &Port, _: &mut SysfsBuf<'_>) -> Result {
        Err(ENODATA)
    }

    fn show_class(b: &mut SysfsBuf<'_>) -> Result {
        writeln!(b, "6").map_err(|_| EINVAL)
    }

    static NAME: DevAttr<Port> = DevAttr::ro(c"node_desc", show_name);
    static FAILING: DevAttr<Port> = DevAttr::ro(c"failing", show_failing);
    static STATE: DirAttr<Port> = DirAttr::ro(c"state", show_state);
    static CLASS_ABI: ClassAttr = ClassAttr::ro(c"abi_version", show_class);
    static CLASS_ATTRS: [&ClassAttr; 1] = [&CLASS_ABI];
    static DEV_ATTRS: [&DevAttr<Port>; 2] = [&NAME, &FAILING];
    static DIR_ATTRS: [&DirAttr<Port>; 1] = [&STATE];

    #[test]
    fn sysfs_buf_truncates_like_sysfs_emit() {
        let mut page = [0u8; 8];
        let mut b = SysfsBuf::new(&mut page);
        write!(b, "0123456789").unwrap();
        assert_eq!(b.as_bytes(), b"0123456");
    }

    /// Runs a C `show` callback into a page, as sysfs would.
    fn page_of(show: impl FnOnce(*mut c_char) -> isize) -> Result<KVec<u8>> {
        let mut page = KVec::<u8>::from_elem(0, bindings::PAGE_SIZE, GFP_KERNEL)?;
        let n = show(page.as_mut_ptr().cast());
        if n < 0 {
            return Err(Error::from_errno(n as i32));
        }
        page.truncate(n as usize);
        Ok(page)
    }

    // The KUnit kthread does not see the VM's /sys (its root is not init's), so these tests
    // call the C callbacks the way sysfs does; tests/vm/abs.sh reads real files.
    #[test]
    fn class_device_callbacks_show_the_data_and_drop_releases_it() -> Result {
        let class = Class::register(c"rdma_rs_kunit", None, &CLASS_ATTRS)?;
        let a = CLASS_ATTRS[0].raw.get();
        // SAFETY: `a` is a registered class attribute of `class`; sysfs calls it like this.
        let v = page_of(|p| unsafe { ((*a).show.ok_or(EINVAL).unwrap())(class.as_raw(), a, p) })?;
        assert_eq!(&*v, b"6\n");
        let drops = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
        let groups = [AttrGroup {
            name: None,
            attrs: &DEV_ATTRS,
        }];
        let mut dev = ClassDevice::register(
            DeviceSpec {
                class: &class,
                parent: None,
                devt: None,
                groups: &groups,
            },
            fmt!("kdev{}", 0),
            Port {
                name: "node0",
                drops: drops.clone(),
            },
        )?;
        assert_eq!(dev.name().to_bytes(), b"kdev0");
        // SAFETY: the device is registered; its files call these callbacks with these args.
        let rdev = unsafe { (*dev.inner.as_ptr()).dev.get() };
        let show = |attr: &DevAttr<Port>| {
            let ra = attr.raw.get();
            // SAFETY: as above.
            page_of(|p| unsafe {
                ((*ra).__bindgen_anon_1.show.ok_or(EINVAL).unwrap())(rdev, ra, p)
            })
        };
        assert_eq!(&*show(&NAME)?, b"node0\n");
        assert_eq!(show(&FAILING).err(), Some(ENODATA));
        let ports = dev.add_dir(None, fmt!("ports"), 0, &[])?;
        dev.add_dir(Some(ports), fmt!("{}", 1), 1, &DIR_ATTRS)?;
        dev.add_dir(Some(ports), fmt!("{}", 2), 2, &DIR_ATTRS)?;
        let kobj = dev.dirs[2].as_ptr();
        // SAFETY: `kobj` is the added `ports/2` directory; sysfs calls its ktype's show so.
        let v =
            page_of(|p| unsafe { Dir::<Port, StaticFiles<Port>>::show(kobj, STATE.raw.get(), p) })?;
        assert_eq!(&*v, b"5: ACTIVE\n");
        assert_eq!(
            dev.add_dir(Some(DirId(9)), fmt!("x"), 0, &[]).err(),
            Some(EINVAL)
        );
        assert_eq!(drops.load(Relaxed), 0);
        drop(dev);
        // No other reference: the data was dropped with the device.
        assert_eq!(drops.load(Relaxed), 1);
        drop(class);
        Ok(())
    }
}
