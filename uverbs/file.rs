// SPDX-License-Identifier: GPL-2.0

//! One open `/dev/infiniband/uverbsN` (upstream `struct ib_uverbs_file`,
//! `uverbs_main.c`): the file operations and close cleanup
//! (`uverbs_destroy_ufile_hw()`), and the user-memory copies every path uses.
//! The rest is split as upstream splits it:
//!
//! | module | what | upstream |
//! | --- | --- | --- |
//! | [`uobject`] | the file's object table: lookup, commit, destroy | `rdma_core.c` |
//! | [`ioctl`] | the ioctl path: header, attributes, dispatch, outputs | `uverbs_ioctl.c` |
//! | [`std_types`] | the ioctl methods of the core objects | `uverbs_std_types*.c` |
//! | [`cmd`] | the write() path and its commands, one child per object | `uverbs_cmd.c` |
//! | [`events`] | the events of user objects, the async event file | `ib_uverbs_comp_handler()`, `ib_uverbs_*_event_handler()` |
//!
//! Locking: one mutex per file (`inner`) is held across a whole method, from
//! attribute parsing (uobject lookup) through the handler to commit/abort,
//! and by cleanup. That gives upstream's `hw_destroy_rwsem` guarantee (no
//! method runs while the file's objects are destroyed at close or
//! disassociate, and a disassociated file answers `EIO`) and makes the
//! READ/WRITE/DESTROY access modes trivially exclusive; the price is that
//! methods of one file do not run concurrently (upstream's only do for
//! objects they do not share).

mod cmd;
mod events;
mod ioctl;
mod std_types;
mod uobject;
mod xrcd_tree;

pub(crate) use xrcd_tree::XrcdTree;

pub(crate) use ioctl::{ioctl_header, ptr_in, Outputs};
pub(crate) use uobject::Inner;

use crate::device::Device;
use crate::driver::Driver;
use crate::uverbs::abi::{
    ioctl::IoctlHdr,
    uapi::{MethodEntry, UapiTree},
    Errno,
};
use crate::uverbs::async_event::{AsyncEventFile, IB_EVENT_DEVICE_FATAL};
use crate::uverbs::driver_object::RemoveReason;
use crate::uverbs::mmap::FileMmap;
use crate::uverbs::uobject_table::HandleTable;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};
use kernel::uaccess::UserSliceReader;

/// The kernel error of an ABI errno.
///
/// A match on constants, inlined: `Error::from_errno()` is an out-of-line call that checks the
/// value's range, on every rejected ioctl.
#[inline]
pub(super) fn kerr(e: Errno) -> Error {
    match e {
        Errno::ENOENT => ENOENT,
        Errno::EIO => EIO,
        Errno::EBADF => EBADF,
        Errno::E2BIG => E2BIG,
        Errno::ENOMEM => ENOMEM,
        Errno::EFAULT => EFAULT,
        Errno::EMFILE => EMFILE,
        Errno::EEXIST => EEXIST,
        Errno::EINVAL => EINVAL,
        Errno::ENOSPC => ENOSPC,
        Errno::EOVERFLOW => EOVERFLOW,
        Errno::EPROTONOSUPPORT => EPROTONOSUPPORT,
        Errno::EOPNOTSUPP => EOPNOTSUPP,
        Errno::ENOIOCTLCMD => ENOIOCTLCMD,
    }
}

pub(super) fn uaddr(addr: u64) -> Result<usize> {
    usize::try_from(addr).map_err(|_| EFAULT)
}

/// `copy_from_user()` of `len` bytes.
fn copy_in(addr: u64, len: usize) -> Result<KVec<u8>> {
    let mut v = KVec::from_elem(0u8, len, GFP_KERNEL)?;
    copy_in_to(addr, &mut v)?;
    Ok(v)
}

/// `copy_from_user()` into `buf`.
fn copy_in_to(addr: u64, buf: &mut [u8]) -> Result {
    crate::uaccess::read_init(uaddr(addr)?, buf)
}

/// `copy_to_user()`.
fn copy_out(addr: u64, data: &[u8]) -> Result {
    crate::uaccess::write(uaddr(addr)?, data)
}

/// upstream `uverbs_copy_to_struct_or_zero()` / `uverbs_response()`: the
/// first `min(len, resp)` bytes, the rest of the user's buffer zeroed.
fn copy_out_or_zero(addr: u64, len: usize, resp: &[u8]) -> Result {
    let n = len.min(resp.len());
    copy_out(addr, resp.get(..n).unwrap_or(&[]))?;
    // upstream clear_user() of the rest: written from a zero block, nothing allocated.
    static ZEROS: [u8; 256] = [0; 256];
    let mut at = n;
    while at < len {
        let k = (len - at).min(ZEROS.len());
        copy_out(addr + at as u64, ZEROS.get(..k).unwrap_or(&[]))?;
        at += k;
    }
    Ok(())
}

/// What an open uverbs file does; implemented by `UFile<D>`.
pub(crate) trait UFileOps: Send + Sync {
    /// `ioctl()` (upstream `ib_uverbs_ioctl()`) once its header was copied and checked
    /// ([`ioctl_header`]) and `method` found for it in the device's uapi tree
    /// ([`crate::uverbs::abi::parse::find_method`]).
    fn ioctl(&self, arg: usize, hdr: &IoctlHdr, method: &MethodEntry) -> Result<isize>;
    /// `write()` (upstream `ib_uverbs_write()`).
    fn write(&self, data: UserSliceReader) -> Result<usize>;
    /// `mmap()` (upstream `ib_uverbs_mmap()`).
    fn mmap(&self, vma: &kernel::mm::virt::VmaNew) -> Result;
    /// Destroys every object and the ucontext (`why`: close or driver
    /// remove; upstream `uverbs_destroy_ufile_hw()`).
    fn destroy_all(&self, driver_remove: bool);
    /// A device or port event for the file's async event file, if it has
    /// one (upstream `ib_uverbs_event_handler()` registered by
    /// `ib_uverbs_init_async_event_file()`).
    fn async_event(&self, element: u64, event_type: u32);
}

/// An open uverbs file of a device of driver `D`.
#[pin_data]
pub(crate) struct UFile<D: Driver> {
    dev: Arc<Device<D>>,
    /// The device's uapi tree (upstream `uverbs_dev->uapi`).
    tree: Arc<UapiTree>,
    /// The device's XRC domains shared by inode.
    xrcds: Arc<XrcdTree<D>>,
    #[pin]
    inner: Mutex<Inner<D>>,
    /// Every async event file of the file (upstream: each registers its own
    /// event handler), under its own lock so that event delivery never waits
    /// for a running method. `Inner::async_file` is the first one (upstream
    /// `default_async_file`).
    #[pin]
    events: Mutex<KVec<Arc<AsyncEventFile>>>,
    #[pin]
    mmap: FileMmap<D>,
}

impl<D: Driver> UFile<D> {
    pub(crate) fn new(
        dev: Arc<Device<D>>,
        tree: Arc<UapiTree>,
        xrcds: Arc<XrcdTree<D>>,
    ) -> Result<Arc<Self>> {
        let umaps = crate::mm::Umaps::new()?;
        Arc::pin_init(
            pin_init!(UFile {
                dev,
                tree,
                xrcds,
                // core_mutex!: this is generic code, instantiated in each driver's module, and a
                // lock class's name must be one pointer for its one key (lockdep warned
                // "Looking for class uverbs_file ... but found a different class" once files of
                // the mock and of mlx5_ib_rs had been opened under one ib_core_rs).
                inner <- core_mutex!(
                    Inner {
                        dead: false,
                        ucontext: None,
                        objs: HandleTable::new(),
                        async_file: None,
                        comp_channels: KVec::new(),
                        fds: KVec::new(),
                        mcast: KVec::new(),
                    },
                    c"uverbs_file"
                ),
                mmap <- FileMmap::new(umaps),
                events <- core_mutex!(KVec::new(), c"uverbs_file_events"),
            }),
            GFP_KERNEL,
        )
    }
}
impl<D: Driver> UFile<D> {
    /// The async event file of GET_CONTEXT (write) / ASYNC_EVENT_ALLOC.
    fn new_async_file(
        &self,
        inner: &mut Inner<D>,
    ) -> Result<kernel::sync::aref::ARef<kernel::fs::File>> {
        let ev = AsyncEventFile::new()?;
        let f = AsyncEventFile::file(&ev)?;
        self.events.lock().push(ev.clone(), GFP_KERNEL)?;
        if inner.async_file.is_none() {
            inner.async_file = Some(ev);
        }
        Ok(f)
    }
}

impl<D: Driver> UFileOps for UFile<D> {
    // upstream: ib_uverbs_ioctl()
    fn ioctl(&self, arg: usize, hdr: &IoctlHdr, method: &MethodEntry) -> Result<isize> {
        self.ioctl_inner(arg as u64, hdr, method)
    }

    // upstream: ib_uverbs_write()
    fn write(&self, data: UserSliceReader) -> Result<usize> {
        self.write_inner(data)
    }

    // upstream: ib_uverbs_mmap()
    fn mmap(&self, vma: &kernel::mm::virt::VmaNew) -> Result {
        self.mmap.mmap(&self.dev, vma)
    }

    // upstream: uverbs_destroy_ufile_hw() + ufile_destroy_ucontext()
    fn destroy_all(&self, driver_remove: bool) {
        // No new mappings (upstream: hw_destroy_rwsem held for writing).
        self.mmap.close();
        let mut inner = self.inner.lock();
        inner.dead = true;
        let why = if driver_remove {
            RemoveReason::DriverRemove
        } else {
            RemoveReason::Close
        };
        // Newest first; objects still in use (EBUSY) wait for the next pass,
        // until a pass destroys nothing (upstream __uverbs_cleanup_ufile()).
        // The fd objects of driver types are in the same order (their destroy
        // cannot fail); their files stay open until their last close.
        loop {
            let mut progress = false;
            let mut next = inner.objs.newest_handle();
            while let Some(id) = next {
                next = inner.objs.handle_before(id);
                let seq = inner.objs.seq_of(id).unwrap_or(0);
                for e in inner.fds.iter().rev().filter(|e| e.seq > seq) {
                    e.fd.destroy(why);
                }
                if Self::destroy_at(&mut inner, id).is_ok() {
                    progress = true;
                }
            }
            for e in inner.fds.iter().rev() {
                e.fd.destroy(why);
            }
            if !progress || inner.objs.is_empty() {
                break;
            }
        }
        inner.fds.clear();
        // Leftovers (RDMA_REMOVE_DRIVER_FAILURE): dropping the last
        // reference destroys them in the core.
        while let Some(id) = inner.objs.newest_handle() {
            drop(inner.objs.remove(id));
        }
        if let Some(ctx) = inner.ucontext.take() {
            if driver_remove {
                // upstream ufile_destroy_ucontext(): zap the mappings first.
                self.mmap.zap();
            }
            ctx.dealloc();
        }
        // upstream uverbs_async_event_destroy_uobj(): FATAL on a remove; the
        // queue itself stays open until the async fd is released
        // (ib_uverbs_free_event_queue() at its release), so a reader sees the
        // FATAL event, then EAGAIN (or waits), never EOF.
        inner.async_file = None;
        inner.comp_channels.clear();
        let evs = core::mem::take(&mut *self.events.lock());
        if driver_remove {
            for ev in evs.iter() {
                ev.queue_event(0, IB_EVENT_DEVICE_FATAL);
            }
        }
    }

    fn async_event(&self, element: u64, event_type: u32) {
        for ev in self.events.lock().iter() {
            ev.queue_event(element, event_type);
        }
    }
}
