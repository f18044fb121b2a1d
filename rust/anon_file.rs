// SPDX-License-Identifier: GPL-2.0

//! Anonymous-inode files with `read` and `poll` (upstream uverbs' async event
//! and completion channel files, `anon_inode_getfile()` in
//! `ib_uverbs_init_async_event_file()` / `uverbs_uobject_fd_...`).
//!
//! [`AnonFile::create`] makes a `struct file` whose `private_data` owns an
//! `Arc<T>`; `read` and `poll` call `T`'s [`AnonFileOps`]; the last `close()`
//! drops the `Arc`. The file pins this module (`fops.owner`).

use core::marker::PhantomData;
use kernel::{
    bindings,
    ffi::{c_char, c_int, c_uint, c_void},
    fs::File,
    prelude::*,
    sync::aref::ARef,
    sync::{poll::PollTable, Arc},
    types::ForeignOwnable,
    uaccess::{UserPtr, UserSlice, UserSliceWriter},
};

extern "C" {
    fn rdma_rs_anon_inode_getfile(
        name: *const c_char,
        // `const struct file_operations *`, `struct file *`: as `void *`, since bindgen's
        // `file_operations` is not FFI-safe for the lint (it reaches `sched_statistics`).
        fops: *const c_void,
        private: *mut c_void,
        flags: c_int,
    ) -> *mut c_void;
    // `struct module *` as `void *`, for the same reason.
    fn rdma_rs_module_get(module: *mut c_void);
    fn rdma_rs_module_put(module: *mut c_void);
}

/// What an anonymous file does.
pub(crate) trait AnonFileOps: Send + Sync + 'static {
    /// `read()` into `out` (its length is the user's count); returns the bytes written.
    fn read(this: &Arc<Self>, file: &File, out: UserSliceWriter) -> Result<usize>;

    /// `poll()`: registers on the wait queue through `table`, returns the `EPOLL*` mask.
    fn poll(this: &Arc<Self>, file: &File, table: PollTable<'_>) -> u32;

    /// The last `close()`, before the file's reference to `this` is dropped.
    fn release(_this: &Arc<Self>) {}

    /// A module the file pins besides this one (upstream: the `fops.owner` of a driver's
    /// fd object type, e.g. mlx5_ib's `devx_async_cmd_event_fops`): the one whose code
    /// `read`/`poll`/`release` reach through `this`. Taken at [`AnonFile::create`], put
    /// after the last reference of the file is dropped.
    fn pinned_module(_this: &Arc<Self>) -> Option<&'static kernel::ThisModule> {
        None
    }
}

/// Creates anonymous files for `T`.
pub(crate) struct AnonFile<T>(PhantomData<T>);

impl<T: AnonFileOps> AnonFile<T> {
    /// # Safety
    ///
    /// Called by the VFS for a file made by [`Self::create`].
    unsafe extern "C" fn read(
        file: *mut bindings::file,
        buf: *mut c_char,
        len: usize,
        _pos: *mut bindings::loff_t,
    ) -> isize {
        // SAFETY: `private_data` holds the `Arc<T>` of `create` until `release`.
        let this = unsafe { <Arc<T> as ForeignOwnable>::borrow((*file).private_data.cast()) };
        let this: Arc<T> = this.into();
        // SAFETY: the file is valid for the call.
        let f = unsafe { File::from_raw_file(file) };
        let out = UserSlice::new(UserPtr::from_addr(buf as usize), len).writer();
        match T::read(&this, f, out) {
            Ok(n) => n as isize,
            Err(e) => e.to_errno() as isize,
        }
    }

    /// # Safety
    ///
    /// Called by the VFS for a file made by [`Self::create`]; `wait` is null or valid.
    unsafe extern "C" fn poll(
        file: *mut bindings::file,
        wait: *mut bindings::poll_table_struct,
    ) -> c_uint {
        // SAFETY: as in `read`.
        let this = unsafe { <Arc<T> as ForeignOwnable>::borrow((*file).private_data.cast()) };
        let this: Arc<T> = this.into();
        // SAFETY: the file is valid for the call.
        let f = unsafe { File::from_raw_file(file) };
        // SAFETY: the VFS passes a null or valid table for the duration of the call.
        let table = unsafe { PollTable::from_raw(wait) };
        T::poll(&this, f, table)
    }

    /// # Safety
    ///
    /// Called once, at the last close of a file made by [`Self::create`].
    unsafe extern "C" fn release(_inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
        // SAFETY: `create` stored an `Arc<T>`; release takes it back exactly once.
        let this = unsafe { <Arc<T> as ForeignOwnable>::from_foreign((*file).private_data.cast()) };
        T::release(&this);
        let pinned = T::pinned_module(&this);
        drop(this);
        if let Some(m) = pinned {
            // SAFETY: `create` took this reference for the file; the file's code that may
            // run the module's code (the `Arc` above) is done.
            unsafe { rdma_rs_module_put(m.as_ptr().cast()) };
        }
        0
    }

    const FOPS: bindings::file_operations = bindings::file_operations {
        read: Some(Self::read),
        poll: Some(Self::poll),
        release: Some(Self::release),
        llseek: Some(bindings::noop_llseek),
        ..pin_init::zeroed()
    };

    /// Creates an anonymous file named `name` (shown as `anon_inode:name`) owning `data`,
    /// opened read-only with `flags` (`O_CLOEXEC` etc.), pinning `module`.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, `ENFILE` (the error of `anon_inode_getfile()`).
    pub(crate) fn create(
        name: &'static CStr,
        module: &'static kernel::ThisModule,
        data: Arc<T>,
        flags: u32,
    ) -> Result<ARef<File>> {
        let fops: &'static bindings::file_operations = &Self::FOPS_WITH_OWNER;
        // `fops.owner` must be the module: take a reference for the file (the VFS drops one
        // at the last fput through `fops_put()`; anon_inode_getfile() takes it with
        // `fops_get()`).
        let _ = module;
        let pinned = T::pinned_module(&data);
        if let Some(m) = pinned {
            // SAFETY: the module is live (its code is running: it handed us `data`);
            // `__module_get()` on a live module cannot fail. Put at `release`, or below.
            unsafe { rdma_rs_module_get(m.as_ptr().cast()) };
        }
        let ptr = data.into_foreign();
        // SAFETY: `name` is a valid string for the call; `fops` is 'static; `ptr` is the
        // foreign form of an `Arc<T>` that `release` takes back.
        let file = unsafe {
            rdma_rs_anon_inode_getfile(
                name.as_char_ptr(),
                core::ptr::from_ref(fops).cast(),
                ptr.cast(),
                (bindings::O_RDONLY | flags) as c_int,
            )
        };
        let file = file.cast::<bindings::file>();
        if let Err(e) = kernel::error::from_err_ptr(file) {
            // SAFETY: the file was not created, so `release` will not run; take the Arc back.
            drop(unsafe { <Arc<T> as ForeignOwnable>::from_foreign(ptr) });
            if let Some(m) = pinned {
                // SAFETY: the reference taken above, for the file that was not created.
                unsafe { rdma_rs_module_put(m.as_ptr().cast()) };
            }
            return Err(e);
        }
        // SAFETY: `anon_inode_getfile()` returned a new file with one reference, which the
        // `ARef` now owns.
        Ok(unsafe { ARef::from_raw(core::ptr::NonNull::new_unchecked(file.cast::<File>())) })
    }

    /// Whether `fd` of the calling process is a file made by [`Self::create`] for `data`
    /// (upstream `lookup_get_fd_uobject()`: the fd's file is the object's file). A bad or
    /// foreign fd is `false`.
    pub(crate) fn fd_is(fd: i64, data: &Arc<T>) -> bool {
        let Ok(fd) = u32::try_from(fd) else {
            return false;
        };
        let Ok(f) = kernel::fs::LocalFile::fget(fd) else {
            return false;
        };
        let want = data.clone().into_foreign();
        // SAFETY: `f` holds a reference on the file for this read of one of its fields.
        let same = unsafe { (*f.as_ptr()).private_data } == want.cast::<c_void>();
        // SAFETY: `want` is the foreign form of the clone taken above, taken back once.
        drop(unsafe { <Arc<T> as ForeignOwnable>::from_foreign(want) });
        same
    }

    const FOPS_WITH_OWNER: bindings::file_operations = bindings::file_operations {
        owner: <crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE.as_ptr(),
        ..Self::FOPS
    };
}
