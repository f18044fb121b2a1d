// SPDX-License-Identifier: GPL-2.0

//! Char-device regions and cdevs whose file operations are a `#[vtable]` trait.
//!
//! * [`ChrdevRegion`]: a range of device numbers, fixed (`register_chrdev_region()`, e.g.
//!   uverbs' 231:192..223) or dynamic (`alloc_chrdev_region()`); dropping it gives the range
//!   back.
//! * [`CharDevice`]: the file operations, implemented by the data of a class device. Modelled on
//!   `kernel::miscdevice::MiscDevice`: `open` makes the per-file `Ptr` (kept in
//!   `file->private_data`), `release` gets it back, `ioctl`, `write` and `mmap` borrow it.
//! * [`ClassDevice::register_chrdev`]: a class device with a cdev of its `dev_t`, added and
//!   removed together (`cdev_device_add()`/`cdev_device_del()`).
//! * [`MiscDev`]: a misc device (`misc_register()`) with a node name, a mode and an
//!   `abi_version` file, whose file operations are a [`CharDevice`] (`rust/miscdev_shim.c`):
//!   `/dev/infiniband/rdma_cm`.
//!
//! An open file keeps the device's data alive: the inode pins the cdev, whose kobject holds a
//! reference on the device, and `T` is dropped only by the device's release. The cdev's owner
//! is the registering module, so the module cannot be unloaded while a file is open.
//!
//! `compat_ioctl` is `compat_ptr_ioctl()` where the kernel has `CONFIG_COMPAT` (upstream's
//! `uverbs_fops`); the test kernel has no 32-bit emulation, so that branch is built only on
//! such kernels. `read` and `poll` serve the umad files (`/dev/infiniband/umadN`).

use core::marker::PhantomData;
use kernel::{
    bindings,
    ffi::{c_char, c_int, c_long, c_uint, c_ulong},
    fs::File,
    mm::virt::VmaNew,
    prelude::*,
    sync::poll::PollTable,
    types::ForeignOwnable,
    uaccess::{UserPtr, UserSlice, UserSliceReader, UserSliceWriter},
};

use crate::class::{self, ClassDevice, DeviceSpec};

extern "C" {
    fn rdma_rs_misc_register(
        name: *const c_char,
        nodename: *const c_char,
        mode: u16,
        fops: *const core::ffi::c_void,
        data: *const core::ffi::c_void,
        abi_version: c_int,
        err: *mut c_int,
    ) -> *mut core::ffi::c_void;
    fn rdma_rs_misc_deregister(m: *mut core::ffi::c_void);
    // `struct inode *`, `struct file *`.
    fn rdma_rs_misc_open_file(
        inode: *mut core::ffi::c_void,
        file: *mut core::ffi::c_void,
    ) -> *const core::ffi::c_void;
}

/// `MKDEV(major, minor)`.
pub(crate) const fn mkdev(major: u32, minor: u32) -> bindings::dev_t {
    (major << 20) | minor
}

/// `MAJOR(dev)`.
pub(crate) const fn major(dev: bindings::dev_t) -> u32 {
    dev >> 20
}

/// `MINOR(dev)`.
pub(crate) const fn minor(dev: bindings::dev_t) -> u32 {
    dev & ((1 << 20) - 1)
}

/// A registered range of char device numbers.
///
/// # Invariants
///
/// `base..base + count` is registered to us.
pub(crate) struct ChrdevRegion {
    base: bindings::dev_t,
    count: u32,
}

impl ChrdevRegion {
    /// Registers the fixed range `major:first_minor..first_minor + count` as `name`.
    ///
    /// # Errors
    ///
    /// `EBUSY` (with a message naming the range) if any of it is taken — as it is while the
    /// upstream `ib_uverbs` is loaded, for uverbs' range.
    pub(crate) fn register(major: u32, first_minor: u32, count: u32, name: &CStr) -> Result<Self> {
        let base = mkdev(major, first_minor);
        // SAFETY: `name` is a valid string; the core copies it.
        let ret = unsafe { bindings::register_chrdev_region(base, count, name.as_char_ptr()) };
        if ret != 0 {
            pr_err!(
                "ib_core_rs: char device numbers {}:{}..{} are taken ({}): is the upstream ib_uverbs loaded?\n",
                major,
                first_minor,
                first_minor + count,
                ret
            );
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: registered.
        Ok(Self { base, count })
    }

    /// Allocates `count` numbers under a dynamic major, from minor `first_minor`, as `name`.
    ///
    /// # Errors
    ///
    /// `EBUSY` if no major is free, `ENOMEM`.
    pub(crate) fn alloc(first_minor: u32, count: u32, name: &CStr) -> Result<Self> {
        let mut base: bindings::dev_t = 0;
        // SAFETY: `base` is a valid out pointer; `name` a valid string.
        let ret = unsafe {
            bindings::alloc_chrdev_region(&mut base, first_minor, count, name.as_char_ptr())
        };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: registered.
        Ok(Self { base, count })
    }

    /// The `i`-th number of the range.
    pub(crate) fn devt(&self, i: u32) -> Option<bindings::dev_t> {
        (i < self.count).then(|| self.base + i)
    }

    /// The first number.
    pub(crate) fn base(&self) -> bindings::dev_t {
        self.base
    }

    /// How many numbers.
    pub(crate) fn count(&self) -> u32 {
        self.count
    }
}

impl Drop for ChrdevRegion {
    fn drop(&mut self) {
        // SAFETY: registered to us (type invariant).
        unsafe { bindings::unregister_chrdev_region(self.base, self.count) };
    }
}

/// The file operations of a class device's cdev, implemented by the device's data.
#[vtable]
pub(crate) trait CharDevice: Sized + Send + Sync + 'static {
    /// The per-open-file state (`file->private_data`).
    type Ptr: ForeignOwnable + Send + Sync;

    /// `open()`: `dev` is the data of the device whose node was opened.
    fn open(dev: &Self, file: &File) -> Result<Self::Ptr>;

    /// The last `close()` of the file.
    fn release(ptr: Self::Ptr, _file: &File) {
        drop(ptr);
    }

    /// `ioctl()`; `arg` is usually a user pointer: `UserSlice::new(UserPtr::from_addr(arg), len)`.
    fn ioctl(
        _ptr: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _cmd: u32,
        _arg: usize,
    ) -> Result<isize> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `write()` of the user bytes in `data`; returns the bytes consumed.
    fn write(
        _ptr: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _data: UserSliceReader,
    ) -> Result<usize> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `write()` given the user buffer's address and count, for an ABI that reads a whole
    /// command struct behind its header whatever the count (upstream `ucma_write()`); used
    /// instead of [`CharDevice::write`] when implemented.
    fn write_at(
        _ptr: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _buf: UserPtr,
        _len: usize,
    ) -> Result<usize> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `read()` into `out` (its length is the user's count); returns the bytes written.
    fn read(
        _ptr: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _out: UserSliceWriter,
    ) -> Result<usize> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `poll()`: registers on a wait queue through `table`, returns the `EPOLL*` mask.
    fn poll(
        _ptr: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _table: PollTable<'_>,
    ) -> u32 {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `mmap()`: `vma` is being set up (`f_op->mmap`, the caller holds the `mmap_lock` for
    /// writing). Without it, `mmap()` of the file fails with `ENODEV` (the VFS).
    fn mmap(
        _ptr: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        _file: &File,
        _vma: &VmaNew,
    ) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
}

/// The `file_operations` of a [`CharDevice`].
struct VTable<T: CharDevice>(PhantomData<T>);

impl<T: CharDevice> VTable<T> {
    /// # Safety
    ///
    /// Called by `chrdev_open()` for an inode of a cdev made by
    /// [`ClassDevice::register_chrdev`] for data `T`.
    unsafe extern "C" fn open(inode: *mut bindings::inode, raw_file: *mut bindings::file) -> c_int {
        // SAFETY: chrdev_open() set `i_cdev` and holds a reference on the cdev, which pins the
        // device and its data for the whole life of the file.
        let dev = unsafe { class::data_of_cdev::<T>((*inode).__bindgen_anon_5.i_cdev) };
        // SAFETY: the file is valid for the call; no fdget_pos region is active.
        let file = unsafe { File::from_raw_file(raw_file) };
        match T::open(dev, file) {
            Ok(ptr) => {
                // SAFETY: `open` may set the private data; `release` takes it back.
                unsafe { (*raw_file).private_data = ptr.into_foreign().cast() };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called once per file opened by [`Self::open`], at its last close.
    unsafe extern "C" fn release(_inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
        // SAFETY: `open` stored a `T::Ptr`; release owns it now.
        let ptr = unsafe { <T::Ptr as ForeignOwnable>::from_foreign((*file).private_data.cast()) };
        // SAFETY: the file is valid for the call.
        T::release(ptr, unsafe { File::from_raw_file(file) });
        0
    }

    /// # Safety
    ///
    /// Called for a file opened by [`Self::open`].
    unsafe extern "C" fn ioctl(file: *mut bindings::file, cmd: c_uint, arg: c_ulong) -> c_long {
        // SAFETY: the private data is the `T::Ptr` of `open`, borrowed between open and release.
        let ptr = unsafe { <T::Ptr as ForeignOwnable>::borrow((*file).private_data.cast()) };
        // SAFETY: the file is valid for the call.
        let f = unsafe { File::from_raw_file(file) };
        match T::ioctl(ptr, f, cmd, arg) {
            Ok(r) => r as c_long,
            Err(e) => e.to_errno() as c_long,
        }
    }

    /// # Safety
    ///
    /// Called for a file opened by [`Self::open`]; `buf..buf + len` is user memory.
    unsafe extern "C" fn write(
        file: *mut bindings::file,
        buf: *const c_char,
        len: usize,
        _pos: *mut bindings::loff_t,
    ) -> isize {
        // SAFETY: as in `ioctl`.
        let ptr = unsafe { <T::Ptr as ForeignOwnable>::borrow((*file).private_data.cast()) };
        // SAFETY: the file is valid for the call.
        let f = unsafe { File::from_raw_file(file) };
        let r = if T::HAS_WRITE_AT {
            T::write_at(ptr, f, UserPtr::from_addr(buf as usize), len)
        } else {
            T::write(
                ptr,
                f,
                UserSlice::new(UserPtr::from_addr(buf as usize), len).reader(),
            )
        };
        match r {
            Ok(n) => n as isize,
            Err(e) => e.to_errno() as isize,
        }
    }

    /// # Safety
    ///
    /// Called for a file opened by [`Self::open`]; `buf..buf + len` is user memory.
    unsafe extern "C" fn read(
        file: *mut bindings::file,
        buf: *mut c_char,
        len: usize,
        _pos: *mut bindings::loff_t,
    ) -> isize {
        // SAFETY: as in `ioctl`.
        let ptr = unsafe { <T::Ptr as ForeignOwnable>::borrow((*file).private_data.cast()) };
        // SAFETY: the file is valid for the call.
        let f = unsafe { File::from_raw_file(file) };
        let out = UserSlice::new(UserPtr::from_addr(buf as usize), len).writer();
        match T::read(ptr, f, out) {
            Ok(n) => n as isize,
            Err(e) => e.to_errno() as isize,
        }
    }

    /// # Safety
    ///
    /// Called for a file opened by [`Self::open`]; `wait` is null or valid.
    unsafe extern "C" fn poll(
        file: *mut bindings::file,
        wait: *mut bindings::poll_table_struct,
    ) -> c_uint {
        // SAFETY: as in `ioctl`.
        let ptr = unsafe { <T::Ptr as ForeignOwnable>::borrow((*file).private_data.cast()) };
        // SAFETY: the file is valid for the call.
        let f = unsafe { File::from_raw_file(file) };
        // SAFETY: the VFS passes a null or valid table for the duration of the call.
        let table = unsafe { PollTable::from_raw(wait) };
        T::poll(ptr, f, table)
    }

    /// # Safety
    ///
    /// Called for a file opened by [`Self::open`]; `vma` is being set up by `f_op->mmap`.
    unsafe extern "C" fn mmap(
        file: *mut bindings::file,
        vma: *mut bindings::vm_area_struct,
    ) -> c_int {
        // SAFETY: as in `ioctl`.
        let ptr = unsafe { <T::Ptr as ForeignOwnable>::borrow((*file).private_data.cast()) };
        // SAFETY: the vma is undergoing initial setup for the duration of the call.
        let area = unsafe { VmaNew::from_raw(vma) };
        // SAFETY: the file is valid for the call.
        let f = unsafe { File::from_raw_file(file) };
        match T::mmap(ptr, f, area) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    const FOPS: bindings::file_operations = bindings::file_operations {
        open: Some(Self::open),
        release: Some(Self::release),
        unlocked_ioctl: if T::HAS_IOCTL {
            Some(Self::ioctl)
        } else {
            None
        },
        // upstream uverbs_fops: `.compat_ioctl = compat_ptr_ioctl` (the ABI is
        // layout-identical for 32-bit processes; the argument is a pointer). Without
        // CONFIG_COMPAT (the test kernel) the member does not exist, as upstream's macro
        // makes it NULL.
        #[cfg(CONFIG_COMPAT)]
        compat_ioctl: if T::HAS_IOCTL {
            Some(bindings::compat_ptr_ioctl)
        } else {
            None
        },
        write: if T::HAS_WRITE || T::HAS_WRITE_AT {
            Some(Self::write)
        } else {
            None
        },
        read: if T::HAS_READ { Some(Self::read) } else { None },
        poll: if T::HAS_POLL { Some(Self::poll) } else { None },
        mmap: if T::HAS_MMAP { Some(Self::mmap) } else { None },
        ..pin_init::zeroed()
    };

    const fn build() -> &'static bindings::file_operations {
        &Self::FOPS
    }

    /// # Safety
    ///
    /// Called by `misc_open()` for a misc device registered by [`MiscDev::register`] for data
    /// `T`.
    unsafe extern "C" fn open_misc(
        inode: *mut bindings::inode,
        raw_file: *mut bindings::file,
    ) -> c_int {
        // SAFETY: `misc_open()` set the private data to the shim's miscdevice and holds
        // `misc_mtx`, so the registration, and the `T` it points to, outlive this call.
        let dev = unsafe { &*rdma_rs_misc_open_file(inode.cast(), raw_file.cast()).cast::<T>() };
        // SAFETY: the file is valid for the call; no fdget_pos region is active.
        let file = unsafe { File::from_raw_file(raw_file) };
        match T::open(dev, file) {
            Ok(ptr) => {
                // SAFETY: `open` may set the private data; `release` takes it back.
                unsafe { (*raw_file).private_data = ptr.into_foreign().cast() };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// A misc device's operations: `open` finds `T` through the miscdevice, and the file
    /// pins this module (`misc_open()` takes `fops->owner`).
    const MISC_FOPS: bindings::file_operations = bindings::file_operations {
        open: Some(Self::open_misc),
        owner: kernel::module::this_module::<crate::LocalModule>().as_ptr(),
        ..Self::FOPS
    };
}

/// A registered misc device whose files are served by `T` (upstream `struct miscdevice`
/// with `.minor = MISC_DYNAMIC_MINOR`, a `nodename` and a `mode`, plus an `abi_version`
/// attribute).
///
/// # Invariants
///
/// `raw` is the shim's registered misc device, whose open hands out `&*data`.
pub(crate) struct MiscDev<T: CharDevice> {
    raw: core::ptr::NonNull<core::ffi::c_void>,
    /// What open hands out; dropped after the deregistration.
    _data: Pin<KBox<T>>,
}

// SAFETY: the shim's struct is only touched at registration and deregistration; `T` is
// `Send + Sync` (the `CharDevice` bound).
unsafe impl<T: CharDevice> Send for MiscDev<T> {}
// SAFETY: as for `Send`: shared access touches nothing.
unsafe impl<T: CharDevice> Sync for MiscDev<T> {}

impl<T: CharDevice> MiscDev<T> {
    /// Registers `/dev/<nodename>` (class `misc`, device `name`) with `mode` and an
    /// `abi_version` file showing `abi_version`.
    ///
    /// # Errors
    ///
    /// `misc_register()`'s (`EBUSY` for a taken name, as while upstream's `rdma_ucm` is
    /// loaded), `ENOMEM`.
    pub(crate) fn register(
        name: &'static CStr,
        nodename: &'static CStr,
        mode: u16,
        abi_version: i32,
        data: T,
    ) -> Result<Self> {
        let data = KBox::pin(data, GFP_KERNEL)?;
        let mut err: c_int = 0;
        let dp: *const T = &*data;
        // SAFETY: the strings are static; the table is a static of this module; `dp` stays
        // valid until `drop` deregisters (the box is dropped after it); `err` is valid.
        let raw = unsafe {
            rdma_rs_misc_register(
                name.as_char_ptr(),
                nodename.as_char_ptr(),
                mode,
                core::ptr::from_ref(&VTable::<T>::MISC_FOPS).cast(),
                dp.cast(),
                abi_version,
                &mut err,
            )
        };
        // The error is made only on failure: `Error::from_errno(0)` warns.
        let raw = core::ptr::NonNull::new(raw).ok_or_else(|| {
            if err < 0 {
                Error::from_errno(err)
            } else {
                ENOMEM
            }
        })?;
        // INVARIANT: registered with `data`.
        Ok(Self { raw, _data: data })
    }
}

impl<T: CharDevice> Drop for MiscDev<T> {
    fn drop(&mut self) {
        // SAFETY: registered (type invariant); after it returns no open uses `data`, and open
        // files hold their own `T::Ptr`, not `data`.
        unsafe { rdma_rs_misc_deregister(self.raw.as_ptr()) };
    }
}

impl<T: CharDevice> ClassDevice<T> {
    /// Registers a class device named `name` holding `data` with a cdev of `spec.devt` whose
    /// file operations are `T`'s; the cdev and the device are added together and removed
    /// together when the result is dropped.
    ///
    /// # Errors
    ///
    /// `EINVAL` without `spec.devt`; as [`ClassDevice::register`].
    pub(crate) fn register_chrdev(
        spec: DeviceSpec<'_, T>,
        module: &'static kernel::ThisModule,
        name: core::fmt::Arguments<'_>,
        data: T,
    ) -> Result<Self> {
        Self::register_inner(spec, name, data, Some((VTable::<T>::build(), module)))
    }
}

#[kunit_tests(ib_core_rs_chrdev)]
mod tests {
    use super::*;
    use crate::class::{Class, Devnode};
    use kernel::sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    };

    struct Node {
        opens: Arc<Atomic<u32>>,
        releases: Arc<Atomic<u32>>,
    }

    #[vtable]
    impl CharDevice for Node {
        type Ptr = Arc<Atomic<u32>>;

        fn open(dev: &Self, _file: &File) -> Result<Self::Ptr> {
            dev.opens.fetch_add(1, Relaxed);
            Ok(dev.releases.clone())
        }

        fn release(ptr: Self::Ptr, _file: &File) {
            ptr.fetch_add(1, Relaxed);
        }

        fn ioctl(_ptr: ArcBorrowOf<'_>, _file: &File, cmd: u32, _arg: usize) -> Result<isize> {
            Ok(cmd as isize)
        }
    }

    type ArcBorrowOf<'a> = kernel::sync::ArcBorrow<'a, Atomic<u32>>;

    #[test]
    fn dev_t_encoding_matches_mkdev() {
        let d = mkdev(231, 192);
        assert_eq!(d, (231 << 20) | 192);
        assert_eq!((major(d), minor(d)), (231, 192));
    }

    #[test]
    fn dynamic_region_allocates_and_indexes() -> Result {
        let r = ChrdevRegion::alloc(0, 4, c"rdma_rs_kunit")
            .inspect_err(|e| pr_err!("kunit step 1: {:?}\n", e))?;
        assert!(major(r.base()) != 0);
        assert_eq!(r.count(), 4);
        assert_eq!(r.devt(3), Some(r.base() + 3));
        assert_eq!(r.devt(4), None);
        Ok(())
    }

    // Opening the node needs the VFS, which the KUnit kthread does not see (its root is not
    // init's); the open/release path is exercised once uverbs registers devices.
    #[test]
    fn cdev_is_added_with_the_device_and_removed_with_it() -> Result {
        let region = ChrdevRegion::alloc(0, 1, c"rdma_rs_kunit")?;
        let class = Class::register(
            c"rdma_rs_kunit_cdev",
            Some(Devnode {
                dir: c"rdma_rs_kunit",
                mode: Some(0o666),
            }),
            &[],
        )?;
        let opens = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
        let releases = Arc::new(Atomic::new(0u32), GFP_KERNEL)?;
        let spec = |devt| DeviceSpec {
            class: &class,
            parent: None,
            devt,
            groups: &[],
        };
        let module = &<crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE;
        let node = || Node {
            opens: opens.clone(),
            releases: releases.clone(),
        };
        // A cdev needs a dev_t.
        assert_eq!(
            ClassDevice::register_chrdev(spec(None), module, fmt!("knode"), node()).err(),
            Some(EINVAL)
        );
        let dev =
            ClassDevice::register_chrdev(spec(region.devt(0)), module, fmt!("knode{}", 0), node())?;
        assert_eq!(dev.name().to_bytes(), b"knode0");
        assert_eq!(opens.load(Relaxed), 0);
        drop(dev);
        // Both clones given to the devices are dropped with them.
        assert_eq!(opens.load(Relaxed), 0);
        Ok(())
    }
}
