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
//!
//! A driver's fd object type ([`ObjectSpec::driver_fd`], upstream `UVERBS_TYPE_ALLOC_FD()`)
//! is an object that implements [`DriverFdOps`] (the file's read and poll, and the destroy
//! of its resources); a method with a NEW FD attribute hands it to the core with
//! [`DriverCall::set_new_fd`], which makes the anonymous file, installs the fd at the commit
//! and keeps the object in the file's commit order for the close cleanup. An FD attribute
//! with READ access names one: [`DriverCall::fd_object`].

pub use super::abi::spec::{
    Access, AttrSpec, MethodSpec, ObjectSpec, PtrSpec, UA_MANDATORY, UA_OPTIONAL,
};

pub use super::driver_object::{AnyObject, DriverFdOps, DriverObject, DriverUobject, RemoveReason};

use super::abi::parse::{AttrValue, Bundle};
use super::file::{kerr, Inner, Outputs};
use crate::driver::Driver;
use crate::verbs::Ucontext;
use kernel::prelude::*;
use kernel::sync::Arc;

// The core names these types through `UverbsApi` (it does not import the uverbs layer).
impl<D: Driver> crate::driver::UverbsApi for D {
    type ObjectSpec = ObjectSpec;
    type Call<'a> = DriverCall<'a, 'a, D>;
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
    /// The object of a NEW FD attribute: its file's name, the module it pins, the object.
    pub(crate) new_fd: Option<NewFd>,
    pub(crate) can_new_fd: bool,
}

/// The object a driver method made for its NEW FD attribute.
pub(crate) struct NewFd {
    pub(crate) name: &'static CStr,
    pub(crate) owner: &'static kernel::ThisModule,
    pub(crate) ops: Arc<dyn DriverFdOps>,
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
            .map_err(kerr)
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

    /// Writes a PTR_OUT attribute of a response struct and marks it valid (upstream
    /// `uverbs_copy_to_struct_or_zero()`): at most the user's length, the rest of the user's
    /// buffer (past what the driver knows) zeroed.
    ///
    /// # Errors
    ///
    /// As [`Self::put`]; `ENOMEM`.
    pub fn put_struct_or_zero(&mut self, id: u16, data: &[u8]) -> Result {
        self.out.put_or_zero(self.bundle, id, data)
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

    /// Hands the object of the method's NEW FD attribute to the core (upstream: the
    /// type's file struct filled in by the handler before `alloc_commit_fd_uobject()`). At
    /// the commit the core makes the anonymous file `anon_inode:<name>` (which pins `owner`,
    /// the driver's module, upstream `fops.owner`) and installs the fd.
    ///
    /// # Errors
    ///
    /// `EINVAL` when the method has no NEW FD attribute or one was set already.
    pub fn set_new_fd(
        &mut self,
        name: &'static CStr,
        owner: &'static kernel::ThisModule,
        ops: Arc<dyn DriverFdOps>,
    ) -> Result {
        if !self.can_new_fd || self.new_fd.is_some() {
            return Err(EINVAL);
        }
        self.new_fd = Some(NewFd { name, owner, ops });
        Ok(())
    }

    /// The object of an FD attribute with READ access (upstream
    /// `uverbs_attr_get_uobject()` of a `UVERBS_ATTR_FD()`): one of this file's fd objects
    /// of the attribute's type whose fd is open (the parser checked it; `EBADF` if it was
    /// closed since).
    ///
    /// # Errors
    ///
    /// `EINVAL` for an attribute that was not passed, `EBADF`. The driver downcasts
    /// (`(&**obj as &dyn Any).downcast_ref()`) and may keep a clone.
    pub fn fd_object(&self, id: u16) -> Result<&Arc<dyn DriverFdOps>> {
        let fd = self.obj_attr(id)?;
        let e = self
            .inner
            .fds
            .iter()
            .find(|e| super::driver_fd::DriverFd::fd_is(&e.fd, fd))
            .ok_or(EBADF)?;
        Ok(&e.fd.ops)
    }

    /// The bytes of a PTR_IN attribute (upstream `uverbs_attr_get_alloced_ptr()` /
    /// `uverbs_copy_from()`; the spec checked the length).
    ///
    /// # Errors
    ///
    /// `EINVAL` for an attribute the user did not pass, `EFAULT`, `ENOMEM`.
    pub fn ptr_in(&self, id: u16) -> Result<KVec<u8>> {
        let p = self.bundle.ptr(id).map_err(kerr)?;
        super::file::ptr_in(&p)
    }

    /// The user's length of a PTR_IN or PTR_OUT attribute (upstream
    /// `uverbs_attr_get_len()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for an attribute the user did not pass.
    pub fn len(&self, id: u16) -> Result<usize> {
        self.bundle.len(id).map_err(kerr)
    }

    /// A FLAGS_IN attribute (upstream `uverbs_get_flags32()`): 0 when absent, `EINVAL` for
    /// a bit outside `allowed`.
    ///
    /// # Errors
    ///
    /// As above.
    pub fn flags32(&self, id: u16, allowed: u64) -> Result<u32> {
        self.bundle.get_flags32(id, allowed).map_err(kerr)
    }

    /// The object of an IDR attribute with READ or WRITE access (upstream
    /// `uverbs_attr_get_uobject()`), of whatever type it is.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an attribute that is no object or was not passed.
    pub fn object(&self, id: u16) -> Result<AnyObject<'_, D>> {
        let h = u32::try_from(self.obj_attr(id)?).map_err(|_| EINVAL)?;
        self.inner.any_object(h).ok_or(EINVAL)
    }

    /// The user's handle or fd of an IDR or FD attribute (`data_s64`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for an attribute that is no object or was not passed.
    fn obj_attr(&self, id: u16) -> Result<i64> {
        match self.bundle.get(id).map_err(kerr)? {
            AttrValue::Obj { id, .. } => Ok(id),
            _ => Err(EINVAL),
        }
    }
}
