// SPDX-License-Identifier: GPL-2.0

//! What a driver's own uverbs objects implement, and how the core hands one back to it:
//! [`DriverUobject`] (an object of an IDR type), [`DriverFdOps`] (an object of an fd type),
//! [`RemoveReason`] and [`AnyObject`]. The file's object table and the fd object's file use
//! these without the rest of the driver API; drivers name them through
//! [`super::driver_api`].

use crate::driver::Driver;
use crate::verbs::{Cq, Qp, Srq};
use core::any::Any;
use kernel::fs::File;
use kernel::prelude::*;
use kernel::sync::poll::PollTable;
use kernel::sync::Arc;
use kernel::uaccess::UserSliceWriter;

/// Why an object is destroyed (upstream `enum rdma_remove_reason`, the members an fd object
/// sees).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoveReason {
    /// The fd was closed, or the uverbs file was (`RDMA_REMOVE_CLOSE`).
    Close,
    /// The device is going away: disassociation (`RDMA_REMOVE_DRIVER_REMOVE`).
    DriverRemove,
}

/// An object of a driver's fd object type (upstream the type's `fops` and
/// `destroy_object` of `UVERBS_TYPE_ALLOC_FD()`). Its file holds it until the last close,
/// which may be after the uverbs file's close and the device's removal.
pub trait DriverFdOps: Any + Send + Sync {
    /// `read()` (upstream `fops->read`): the bytes written to `out`.
    ///
    /// # Errors
    ///
    /// The driver's (`EAGAIN`, `EIO` after the destroy, ...).
    fn read(&self, file: &File, out: UserSliceWriter) -> Result<usize>;

    /// `poll()` (upstream `fops->poll`): registers through `table`, returns the `EPOLL*` mask.
    fn poll(&self, file: &File, table: PollTable<'_>) -> u32;

    /// upstream `destroy_object`: frees what the object holds (pending completions, its
    /// subscriptions), wakes its readers. Called exactly once: at the fd's last close, at
    /// the uverbs file's close (in commit order, newest first, with the other objects) or
    /// at disassociation, whichever is first.
    fn destroy(&self, why: RemoveReason);
}

/// An object of a driver's object type (upstream `uobj->object` of a type declared with
/// `UVERBS_TYPE_ALLOC_IDR(destroy_object)`).
pub trait DriverUobject: Any + Send + Sync {
    /// upstream the type's `destroy_object` callback: frees what the object holds in the
    /// hardware. An error leaves the object in the file's table (a DESTROY method returns
    /// the errno; at close the next cleanup pass retries it, upstream
    /// `__uverbs_cleanup_ufile()`); after `Ok` the core drops the object. An object the
    /// cleanup could not destroy is dropped anyway at the end (`RDMA_REMOVE_DRIVER_FAILURE`),
    /// so its `Drop` must free whatever `destroy_hw` did not.
    ///
    /// # Errors
    ///
    /// The driver's (the firmware's refusal, `EBUSY` for an object still in use).
    fn destroy_hw(&self) -> Result {
        Ok(())
    }
}

/// A driver object in a file's handle table.
pub type DriverObject = KBox<dyn DriverUobject>;

/// The object an IDR attribute names, whatever its type (upstream
/// `uverbs_attr_get_uobject()` of a `UVERBS_IDR_ANY_OBJECT` attribute and
/// `uobj_get_object_id()`).
pub enum AnyObject<'a, D: Driver> {
    /// A CQ.
    Cq(&'a Arc<Cq<D>>),
    /// A QP.
    Qp(&'a Arc<Qp<D>>),
    /// An SRQ.
    Srq(&'a Arc<Srq<D>>),
    /// An object of a driver type.
    Driver(&'a dyn Any),
    /// Any other core object.
    Other,
}
