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

use super::abi::parse::Bundle;
use super::file::Outputs;
use crate::driver::Driver;
use crate::verbs::Ucontext;
use core::any::Any;
use kernel::prelude::*;
use kernel::sync::Arc;

/// A driver object in a file's handle table.
pub type DriverObject = KBox<dyn Any + Send + Sync>;

/// One call of a driver method (upstream `struct uverbs_attr_bundle` as a
/// driver handler sees it).
pub struct DriverCall<'a, 'b, D: Driver> {
    pub(crate) ctx: &'a Arc<Ucontext<D>>,
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
}
