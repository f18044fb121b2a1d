// SPDX-License-Identifier: GPL-2.0

//! Class devices: a `struct device` of a [`Class`] embedding the caller's data, its attributes,
//! its subdirectories and its optional cdev.

use super::attr::{attr, build_group, emit, CGroup, SysfsBuf};
use super::dir::{Dir, DirAttr, DirFiles, IndexedFiles, IndexedShowFn, StaticFiles};
use super::Class;
use core::{fmt, ptr::NonNull};
use kernel::{bindings, device, ffi::c_char, prelude::*, str::CString, types::Opaque};

/// A `show` over a class device's data.
pub(crate) type DevShowFn<T> = fn(&T, &mut SysfsBuf<'_>) -> Result;

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

/// A named group of device attributes (`struct attribute_group`), built per device.
pub(crate) struct AttrGroup<T: 'static> {
    /// The subdirectory name of the group, `None` for files directly in the device directory.
    pub(crate) name: Option<&'static CStr>,
    /// The attributes.
    pub(crate) attrs: &'static [&'static DevAttr<T>],
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
        self.add_kobj_dir(parent, name, index, || IndexedFiles::numbered(count, show))
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
        self.add_kobj_dir(parent, name, index, || IndexedFiles::named(names, show))
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
    use crate::class::ClassAttr;
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
