// SPDX-License-Identifier: GPL-2.0

//! What a driver uses to add its own uverbs objects and methods (upstream:
//! a driver's `uapi_definition` chain, `DECLARE_UVERBS_NAMED_OBJECT`,
//! `UVERBS_HANDLER()` and the `uverbs_attr_bundle` accessors
//! `uverbs_get_const()`, `uverbs_copy_to()`, `uobj->object`).
//!
//! A driver declares its objects as data in [`DeviceOps::UVERBS_OBJECTS`]
//! (crate::ops::DeviceOps) with [`ObjectSpec::driver_idr`],
//! [`MethodSpec::driver`], [`MethodSpec::destroy`] and the [`AttrSpec`]
//! constructors; ids are in the driver namespace (`1 << 12 | n`). The core
//! merges them into the device's uapi tree at registration, so the parser
//! checks every attribute before the driver runs. A driver method is
//! `DeviceOps::uverbs_method(handler, &mut DriverCall)`: it reads its
//! inputs, writes its outputs and, for a method with a NEW handle, hands the
//! new object to the core, which keeps it in the file's handle table and
//! drops it at DESTROY, close or disassociate (in reverse creation order,
//! before the user context).

pub use super::abi::spec::{
    Access, AttrSpec, MethodSpec, ObjectSpec, PtrSpec, UA_MANDATORY, UA_OPTIONAL,
};

use super::abi::parse::{AttrValue, Bundle};
use super::file::{Inner, Outputs};
use crate::driver::Driver;
use crate::verbs::{Cq, Qp, Srq, Ucontext};
use core::any::Any;
use kernel::prelude::*;
use kernel::sync::Arc;

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

/// One call of a driver method (upstream `struct uverbs_attr_bundle` as a
/// driver handler sees it).
pub struct DriverCall<'a, 'b, D: Driver> {
    pub(crate) ctx: &'a Arc<Ucontext<D>>,
    /// The file's objects (the file's lock is held for the whole method).
    pub(crate) inner: &'a Inner<D>,
    pub(crate) bundle: &'a Bundle<'b>,
    pub(crate) out: &'a mut Outputs,
    pub(crate) new_obj: Option<DriverObject>,
    pub(crate) can_new: bool,
}

impl<D: Driver> DriverCall<'_, '_, D> {
    /// The calling file's user context.
    pub fn ctx(&self) -> &Arc<Ucontext<D>> {
        self.ctx
    }

    /// Whether the user passed attribute `id`.
    pub fn is_present(&self, id: u16) -> bool {
        self.bundle.is_valid(id)
    }

    /// A CONST_IN attribute (upstream `uverbs_get_const()`): `EINVAL` above
    /// `max`, `default` when absent (`EINVAL` without one).
    ///
    /// # Errors
    ///
    /// As above.
    pub fn const_in(&self, id: u16, max: u64, default: Option<u64>) -> Result<u64> {
        self.bundle
            .get_const_unsigned(id, max, default)
            .map_err(|e| Error::from_errno(e.to_errno()))
    }

    /// Writes a PTR_OUT attribute and marks it valid (upstream
    /// `uverbs_copy_to()`): at most the user's length.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an attribute the method does not have or the user did
    /// not pass, `EFAULT`.
    pub fn put(&mut self, id: u16, data: &[u8]) -> Result {
        self.out.put(self.bundle, id, data)
    }

    /// Hands the object of the method's NEW handle to the core (upstream
    /// `uobj->object = obj` before the commit).
    ///
    /// # Errors
    ///
    /// `EINVAL` when the method has no NEW handle or one was set already
    /// (the object is dropped).
    pub fn set_new_object(&mut self, obj: DriverObject) -> Result {
        if !self.can_new || self.new_obj.is_some() {
            return Err(EINVAL);
        }
        self.new_obj = Some(obj);
        Ok(())
    }

    /// The bytes of a PTR_IN attribute (upstream `uverbs_attr_get_alloced_ptr()` /
    /// `uverbs_copy_from()`; the spec checked the length).
    ///
    /// # Errors
    ///
    /// `EINVAL` for an attribute the user did not pass, `EFAULT`, `ENOMEM`.
    pub fn ptr_in(&self, id: u16) -> Result<KVec<u8>> {
        let p = self
            .bundle
            .ptr(id)
            .map_err(|e| Error::from_errno(e.to_errno()))?;
        super::file::ptr_in(&p)
    }

    /// The user's length of a PTR_IN or PTR_OUT attribute (upstream
    /// `uverbs_attr_get_len()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for an attribute the user did not pass.
    pub fn len(&self, id: u16) -> Result<usize> {
        self.bundle
            .len(id)
            .map_err(|e| Error::from_errno(e.to_errno()))
    }

    /// A FLAGS_IN attribute (upstream `uverbs_get_flags32()`): 0 when absent, `EINVAL` for
    /// a bit outside `allowed`.
    ///
    /// # Errors
    ///
    /// As above.
    pub fn flags32(&self, id: u16, allowed: u64) -> Result<u32> {
        self.bundle
            .get_flags32(id, allowed)
            .map_err(|e| Error::from_errno(e.to_errno()))
    }

    /// The object of an IDR attribute with READ or WRITE access (upstream
    /// `uverbs_attr_get_uobject()`), of whatever type it is.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an attribute that is no object or was not passed.
    pub fn object(&self, id: u16) -> Result<AnyObject<'_, D>> {
        let AttrValue::Obj { id: h, .. } = self
            .bundle
            .get(id)
            .map_err(|e| Error::from_errno(e.to_errno()))?
        else {
            return Err(EINVAL);
        };
        let h = u32::try_from(h).map_err(|_| EINVAL)?;
        self.inner.any_object(h).ok_or(EINVAL)
    }
}
