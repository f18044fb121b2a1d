// SPDX-License-Identifier: GPL-2.0

//! The file of an fd object of a driver's object type (upstream `UVERBS_TYPE_ALLOC_FD()`:
//! the type's `fops`, `name`, `flags` and `destroy_object`; `alloc_begin_fd_uobject()`,
//! `alloc_commit_fd_uobject()`, `uverbs_uobject_fd_release()`, `destroy_hw_fd_uobject()` of
//! `rdma_core.c`).
//!
//! The driver implements [`DriverFdOps`] (read, poll and the destroy of the object's
//! resources); the core makes the anonymous file, keeps the object in the uverbs file's
//! object list (commit order, for the close cleanup) and calls `destroy` exactly once: at the
//! last close of the fd, at the close of the uverbs file or at disassociation, whichever comes
//! first. The file outlives the uverbs file and the device, as upstream: reads after the
//! destroy are the driver's (mlx5 answers `EIO`). The file pins the driver's module (upstream
//! `fops.owner`), since `read`/`poll` run its code, and this module (its file operations).

use crate::anon_file::{AnonFile, AnonFileOps};
use crate::uverbs::driver_object::{DriverFdOps, RemoveReason};
use kernel::fs::{file::flags, File};
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::poll::PollTable;
use kernel::sync::Arc;
use kernel::uaccess::UserSliceWriter;

/// One fd object (upstream the `struct ib_uobject` at the head of the type's file struct).
pub(crate) struct DriverFd {
    /// The object type (`MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD`, ...).
    pub(crate) obj_type: u16,
    pub(crate) ops: Arc<dyn DriverFdOps>,
    owner: &'static kernel::ThisModule,
    /// 1 once `destroy` ran.
    destroyed: Atomic<u32>,
    /// 1 once the fd's file was released (the last close).
    released: Atomic<u32>,
}

impl DriverFd {
    /// A new fd object of `obj_type`; its file pins `owner`.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(
        obj_type: u16,
        ops: Arc<dyn DriverFdOps>,
        owner: &'static kernel::ThisModule,
    ) -> Result<Arc<Self>> {
        Ok(Arc::new(
            DriverFd {
                obj_type,
                ops,
                owner,
                destroyed: Atomic::new(0),
                released: Atomic::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// The anonymous file (`anon_inode:<name>`, `O_RDONLY | O_CLOEXEC` as upstream's
    /// `alloc_begin_fd_uobject()`). Not inlined: the file operations stay in this module.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, `ENFILE`.
    #[inline(never)]
    pub(crate) fn file(this: &Arc<Self>, name: &'static CStr) -> Result<ARef<File>> {
        AnonFile::<DriverFd>::create(
            name,
            &<crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE,
            this.clone(),
            flags::O_CLOEXEC,
        )
    }

    /// Whether fd `fd` of the calling process is this object's file (upstream
    /// `lookup_get_fd_uobject()`), and the file is still open.
    #[inline(never)]
    pub(crate) fn fd_is(this: &Arc<Self>, fd: i64) -> bool {
        this.released.load(Relaxed) == 0 && AnonFile::<DriverFd>::fd_is(fd, this)
    }

    /// Whether the fd's file was released.
    pub(crate) fn is_released(&self) -> bool {
        self.released.load(Relaxed) != 0
    }

    /// upstream `uverbs_destroy_uobject()` of an fd uobject: the type's `destroy_object`, once.
    pub(crate) fn destroy(&self, why: RemoveReason) {
        if self.destroyed.xchg(1, Relaxed) == 0 {
            self.ops.destroy(why);
        }
    }
}

impl AnonFileOps for DriverFd {
    fn read(this: &Arc<Self>, file: &File, out: UserSliceWriter) -> Result<usize> {
        this.ops.read(file, out)
    }

    fn poll(this: &Arc<Self>, file: &File, table: PollTable<'_>) -> u32 {
        this.ops.poll(file, table)
    }

    // upstream uverbs_uobject_fd_release(): the object is destroyed (RDMA_REMOVE_CLOSE)
    // unless the uverbs file's cleanup did it already.
    fn release(this: &Arc<Self>) {
        this.released.store(1, Relaxed);
        this.destroy(RemoveReason::Close);
    }

    fn pinned_module(this: &Arc<Self>) -> Option<&'static kernel::ThisModule> {
        Some(this.owner)
    }
}
