// SPDX-License-Identifier: GPL-2.0

//! A counted reference on the inode behind a file descriptor (upstream
//! `ib_uverbs_open_xrcd()`: `fdget(cmd.fd)`, `file_inode(f.file)`, and
//! `xrcd_table_insert()`'s `igrab()`; `xrcd_table_delete()`'s `iput()`).

use core::ptr::NonNull;
use kernel::bindings;
use kernel::prelude::*;

/// An inode kept alive (`igrab()`) until dropped (`iput()`).
pub(crate) struct InodeRef(NonNull<bindings::inode>);

// SAFETY: an inode reference may be taken and put from any thread; the pointer is only
// compared and handed back to `iput()`.
unsafe impl Send for InodeRef {}
// SAFETY: as above: shared access only compares the address.
unsafe impl Sync for InodeRef {}

impl InodeRef {
    /// The inode of the calling process's `fd`, referenced.
    ///
    /// # Errors
    ///
    /// `EBADF` for a descriptor that names no file (upstream: `fdget()` without a file),
    /// `EINVAL` if the inode is being freed (`igrab()` failed).
    pub(crate) fn of_fd(fd: u32) -> Result<InodeRef> {
        let f = kernel::fs::LocalFile::fget(fd).map_err(|_| EBADF)?;
        // SAFETY: `f` holds a reference on the file, so its `f_inode` (set at open and
        // never changed) is valid; `igrab()` takes a reference of its own on it, or
        // returns NULL for an inode on its way out.
        let ino = unsafe { bindings::igrab((*f.as_ptr()).f_inode) };
        NonNull::new(ino).map(InodeRef).ok_or(EINVAL)
    }

    /// The inode's address, to compare (upstream keys the XRCD tree by `struct inode *`).
    pub(crate) fn key(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

impl Drop for InodeRef {
    fn drop(&mut self) {
        // SAFETY: the reference taken by `igrab()` in `of_fd()`, put once.
        unsafe { bindings::iput(self.0.as_ptr()) };
    }
}
