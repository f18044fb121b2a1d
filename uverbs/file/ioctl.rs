// SPDX-License-Identifier: GPL-2.0

//! The ioctl path (upstream `uverbs_ioctl.c`: `ib_uverbs_ioctl()`,
//! `ib_uverbs_cmd_verbs()`, `uverbs_process_attr()`, `ib_uverbs_run_method()`): the
//! header and attribute copies, the kernel side of attribute parsing, the dispatch to a
//! core or driver handler, and the output write-backs.

use crate::driver::Driver;
use crate::uaccess::read_uninit;
use crate::uverbs::abi::spec::TypeClass;
use crate::uverbs::abi::uapi::{MethodEntry, UapiTree, WriteMethod};
use crate::uverbs::abi::{
    ids::{attr, obj, UVERBS_ATTR_UHW_IN, UVERBS_ATTR_UHW_OUT},
    ioctl::{IoctlHdr, UAttr},
    layout::AbiField,
    parse::{self, AttrEnv, AttrValue, Bundle, FlagsWriteBack, UdataIn},
    spec::{Access, CoreHandler, Handler},
    write as w, Errno,
};
use crate::uverbs::async_event::AsyncEventFile;
use crate::uverbs::driver_api::DriverCall;
use crate::uverbs::driver_fd::DriverFd;
use crate::uverbs::file::cmd::{CoreIn, WriteBufs};
use crate::uverbs::file::events::Reported;
use crate::uverbs::file::uobject::{FdEntry, Inner, ObjKind};
use crate::uverbs::file::{copy_in, copy_out, copy_out_or_zero, kerr, uaddr, UFile};
use crate::uverbs::resp;
use core::mem::MaybeUninit;
use kernel::fs::file::{flags, FileDescriptorReservation};
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// `IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS`: what GET_CONTEXT and QUERY_CONTEXT report
/// as the core's support.
const CORE_SUPPORT: u64 = 1 << 0;

/// Attribute arrays up to this size are copied to the stack (upstream:
/// the on-stack bundle of `ib_uverbs_cmd_verbs()`, `UVERBS_OPTIMIZE_USING_STACK_SZ`).
/// The ioctl entry path makes no heap allocation: on the debug test kernel
/// (KASAN, kmemleak) one kmalloc+kfree costs 0.15-0.4 ms under TCG, more than
/// a whole ioctl upstream (Documentation/uverbs.md, "Benchmark").
pub(super) const UATTRS_ON_STACK: usize = 16 * UAttr::SIZE;

/// The NEW object of a method in progress.
pub(super) enum NewObj {
    None,
    /// An IDR handle reserved at parse time (its id already written back).
    Idr {
        id: u32,
        obj_type: u16,
    },
    /// An fd reserved at parse time.
    Fd {
        fd: FileDescriptorReservation,
        obj_type: u16,
    },
}

impl NewObj {
    /// The IDR handle a create method's NEW attribute reserved.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a method whose NEW object is not an IDR handle (a spec error).
    pub(super) fn idr(&self) -> Result<u32> {
        match self {
            NewObj::Idr { id, .. } => Ok(*id),
            _ => Err(EINVAL),
        }
    }
}

/// The kernel side of attribute parsing (upstream: the uobject and user
/// memory effects inside `uverbs_process_attr()`).
pub(super) struct Env<'a, D: Driver> {
    pub(super) inner: &'a Inner<D>,
    /// The device's uapi tree (the type class of a driver's object types).
    pub(super) tree: &'a UapiTree,
    /// The file's async event files, for FD attributes of that type (locked only by an
    /// attribute that names one: most ioctls take no second lock).
    pub(super) events: &'a Mutex<KVec<Arc<AsyncEventFile>>>,
    /// User address of the attribute array.
    pub(super) uattrs: u64,
    /// The method's DESTROY attribute (its index), and the handle it names once
    /// looked up: no allocation, so that a destroy cannot fail for lack of memory before
    /// the object goes (upstream's on-stack bundle; the fault sweep, tests/vm/faults.sh,
    /// found the `KVec` this replaced).
    pub(super) destroy_idx: Option<u8>,
    pub(super) destroy_handle: Option<u32>,
    pub(super) new: NewObj,
}

impl<D: Driver> Env<'_, D> {
    /// Whether `obj_type` is a driver's fd object type (upstream `uverbs_fd_class`).
    fn is_driver_fd_type(&self, obj_type: u16) -> bool {
        obj_type & crate::uverbs::abi::ids::UVERBS_ID_DRIVER_NS != 0
            && self
                .tree
                .object(obj_type)
                .is_some_and(|o| o.type_class == Some(TypeClass::Fd))
    }
}

impl<D: Driver> AttrEnv for Env<'_, D> {
    fn user_buffer_cleared(&mut self, addr: u64, len: usize) -> bool {
        match copy_in(addr, len) {
            Ok(v) => v.iter().all(|b| *b == 0),
            Err(_) => false,
        }
    }

    fn alloc_and_copy(&mut self, _idx: usize, _addr: u64, _len: usize) -> Result<(), Errno> {
        // No implemented method uses alloc_and_copy; handlers copy in.
        Ok(())
    }

    fn get_uobject(
        &mut self,
        idx: usize,
        uattr_idx: usize,
        obj_type: u16,
        access: Access,
        id: i64,
    ) -> Result<(), Errno> {
        let data_addr = self.uattrs + (uattr_idx * UAttr::SIZE + UAttr::DATA_OFFSET) as u64;
        match access {
            Access::New => {
                // upstream alloc_uobj(): a new object needs the file's
                // context, checked as the attribute is processed (in the
                // user's attribute order): EINVAL without one.
                if self.inner.ucontext.is_none() {
                    return Err(Errno::EINVAL);
                }
                let v = if obj_type == obj::ASYNC_EVENT || self.is_driver_fd_type(obj_type) {
                    let fd = FileDescriptorReservation::get_unused_fd_flags(flags::O_CLOEXEC)
                        .map_err(|_| Errno::EMFILE)?;
                    let v = u64::from(fd.reserved_fd());
                    self.new = NewObj::Fd { fd, obj_type };
                    v
                } else {
                    let taken = match self.new {
                        NewObj::Idr { id, .. } => Some(id),
                        _ => None,
                    };
                    let id = self.inner.free_id(taken);
                    self.new = NewObj::Idr { id, obj_type };
                    u64::from(id)
                };
                // upstream: put_user(uobj->id, &uattr->data)
                copy_out(data_addr, &v.to_ne_bytes()).map_err(|_| Errno::EFAULT)
            }
            // upstream lookup_get_fd_uobject() (rdma_core.c:377): a value that
            // is no int is EINVAL; an fd that is not one of this file's
            // objects of the type is EBADF.
            Access::Read if obj_type == obj::ASYNC_EVENT || obj_type == obj::COMP_CHANNEL => {
                // `int fdno = id; if (fdno != id) return -EINVAL;`
                if i32::try_from(id).is_err() {
                    return Err(Errno::EINVAL);
                }
                let found = if obj_type == obj::ASYNC_EVENT {
                    self.events
                        .lock()
                        .iter()
                        .any(|e| AsyncEventFile::fd_is(e, id))
                } else {
                    self.inner
                        .comp_channels
                        .iter()
                        .any(|e| AsyncEventFile::fd_is(e, id))
                };
                if found {
                    Ok(())
                } else {
                    Err(Errno::EBADF)
                }
            }
            // The same for a driver's fd type: one of this file's fd objects of the type.
            Access::Read if self.is_driver_fd_type(obj_type) => {
                if i32::try_from(id).is_err() {
                    return Err(Errno::EINVAL);
                }
                if self
                    .inner
                    .fds
                    .iter()
                    .any(|e| e.fd.obj_type == obj_type && DriverFd::fd_is(&e.fd, id))
                {
                    Ok(())
                } else {
                    Err(Errno::EBADF)
                }
            }
            Access::Read | Access::Write | Access::Destroy => {
                let h = self.inner.find(obj_type, id).map_err(|e| {
                    if e == ENOENT {
                        Errno::ENOENT
                    } else {
                        Errno::EINVAL
                    }
                })?;
                if self.destroy_idx.is_some_and(|d| usize::from(d) == idx) {
                    self.destroy_handle = Some(h);
                }
                Ok(())
            }
        }
    }

    fn get_uobjects_array(
        &mut self,
        _idx: usize,
        _obj_type: u16,
        _access: Access,
        _data: u64,
        _len: u16,
    ) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }
}
/// Output write-backs of a method (flags words to set after success).
pub(crate) struct Outputs {
    pub(super) uattrs: u64,
    /// At most one per attribute: a fixed array, not a `KVec`, so that a
    /// method with outputs makes no heap allocation (see `UATTRS_ON_STACK`).
    pub(super) flags: [FlagsWriteBack; crate::uverbs::abi::uapi::MAX_METHOD_ATTRS],
    pub(super) n_flags: usize,
}

impl Outputs {
    pub(super) fn new(uattrs: u64) -> Self {
        Outputs {
            uattrs,
            flags: [FlagsWriteBack {
                uattr_idx: 0,
                flags: 0,
            }; crate::uverbs::abi::uapi::MAX_METHOD_ATTRS],
            n_flags: 0,
        }
    }

    /// Records a flags word to write back after success.
    ///
    /// # Errors
    ///
    /// `EINVAL` past one per attribute (not reachable through the parser).
    pub(super) fn push(&mut self, f: FlagsWriteBack) -> Result {
        *self.flags.get_mut(self.n_flags).ok_or(EINVAL)? = f;
        self.n_flags += 1;
        Ok(())
    }

    /// upstream `uverbs_copy_to()` + `uverbs_set_output()`.
    pub(crate) fn put(&mut self, b: &Bundle<'_>, id: u16, data: &[u8]) -> Result {
        let p = b.ptr(id).map_err(kerr)?;
        let n = usize::from(p.len).min(data.len());
        copy_out(p.data, data.get(..n).unwrap_or(&[]))?;
        self.push(b.set_output(id).map_err(kerr)?)
    }

    /// upstream `uverbs_copy_to_struct_or_zero()`: `put()` of at most the user's length, the
    /// rest of the user's buffer zeroed.
    pub(crate) fn put_or_zero(&mut self, b: &Bundle<'_>, id: u16, data: &[u8]) -> Result {
        let p = b.ptr(id).map_err(kerr)?;
        copy_out_or_zero(p.data, usize::from(p.len), data)?;
        self.push(b.set_output(id).map_err(kerr)?)
    }

    /// `put()` for an optional attribute: nothing if absent.
    pub(super) fn put_opt(&mut self, b: &Bundle<'_>, id: u16, data: &[u8]) -> Result {
        if b.is_valid(id) {
            self.put(b, id, data)
        } else {
            Ok(())
        }
    }

    pub(super) fn write_back(&self) -> Result {
        for f in self.flags.get(..self.n_flags).unwrap_or(&[]) {
            let addr =
                self.uattrs + (usize::from(f.uattr_idx) * UAttr::SIZE + UAttr::FLAGS_OFFSET) as u64;
            copy_out(addr, &f.flags.to_ne_bytes())?;
        }
        Ok(())
    }
}
/// The bytes of a PTR_IN attribute (inline in the attribute or copied from
/// its user pointer).
pub(crate) fn ptr_in(p: &parse::PtrAttr) -> Result<KVec<u8>> {
    match p.inline_bytes() {
        Some(ib) => {
            let mut v = KVec::new();
            v.extend_from_slice(ib.as_slice(), GFP_KERNEL)?;
            Ok(v)
        }
        None => copy_in(p.data, usize::from(p.len)),
    }
}

/// [`ptr_in`] into a [`CoreIn`]: no allocation up to its inline size.
fn ptr_core_in(p: &parse::PtrAttr) -> Result<CoreIn> {
    match p.inline_bytes() {
        Some(ib) => CoreIn::from_slice(ib.as_slice()),
        None => CoreIn::from_user(p.data, usize::from(p.len)),
    }
}

/// Reads a udata input (inline in the attribute or a user pointer).
pub(super) fn udata_in(u: &parse::Udata, uattrs: &[u8]) -> Result<KVec<u8>> {
    match u.inbuf {
        UdataIn::None => Ok(KVec::new()),
        UdataIn::User(addr) => copy_in(addr, u.inlen),
        UdataIn::Inline { uattr_idx } => {
            let off = usize::from(uattr_idx) * UAttr::SIZE + UAttr::DATA_OFFSET;
            let b = uattrs.get(off..off + u.inlen).ok_or(EINVAL)?;
            let mut v = KVec::new();
            v.extend_from_slice(b, GFP_KERNEL)?;
            Ok(v)
        }
    }
}

/// The start of upstream `ib_uverbs_ioctl()`, before anything of the file or device is
/// touched: the command (`ENOIOCTLCMD`, which the VFS turns into `ENOTTY`), the header's
/// `copy_from_user()` (`EFAULT`), its length (`EINVAL`) and reserved fields
/// (`EPROTONOSUPPORT`).
///
/// # Errors
///
/// As above.
pub(crate) fn ioctl_header(cmd: u32, arg: usize) -> Result<IoctlHdr> {
    if cmd != crate::uverbs::abi::ioctl::RDMA_VERBS_IOCTL {
        return Err(kerr(Errno::ENOIOCTLCMD));
    }
    let mut hb = [MaybeUninit::<u8>::uninit(); IoctlHdr::SIZE];
    let hb = read_uninit(arg, &mut hb)?;
    let hdr = IoctlHdr::from_prefix(hb).ok_or(EFAULT)?;
    crate::uverbs::abi::ioctl::check_ioctl_hdr(cmd, &hdr).map_err(kerr)?;
    Ok(hdr)
}

impl<D: Driver> UFile<D> {
    /// The ioctl path after the header copy and check ([`ioctl_header`]) and the method's
    /// lookup in the device's tree (`parse::find_method()`, before the open file is reached).
    pub(super) fn ioctl_inner(
        &self,
        arg: u64,
        hdr: &IoctlHdr,
        method: &MethodEntry,
    ) -> Result<isize> {
        let uattrs_addr = arg + IoctlHdr::SIZE as u64;
        // Not zeroed first: the copy fills what is used (a 384-byte memset per ioctl before).
        let mut on_stack = [MaybeUninit::<u8>::uninit(); UATTRS_ON_STACK];
        let on_heap;
        let uattrs: &[u8] = match on_stack.get_mut(..hdr.attrs_len()) {
            Some(buf) => read_uninit(uaddr(uattrs_addr)?, buf)?,
            None => {
                on_heap = copy_in(uattrs_addr, hdr.attrs_len())?;
                &on_heap
            }
        };
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        if inner.dead {
            return Err(EIO);
        }
        let mut env = Env {
            inner,
            tree: &self.tree,
            events: &self.events,
            uattrs: uattrs_addr,
            destroy_idx: method.destroy_idx,
            destroy_handle: None,
            new: NewObj::None,
        };
        // Parsed in place: the bundle is not moved after this (see parse_attrs_into()).
        let mut bundle = Bundle::new(method);
        parse::parse_attrs_into(&mut bundle, uattrs, &mut env).map_err(kerr)?;
        let Env {
            destroy_handle,
            new,
            ..
        } = env;
        let mut out = Outputs::new(uattrs_addr);
        // upstream: the DESTROY attribute is destroyed before the handler.
        let mut reported = Reported::default();
        if method.destroy_idx.is_some() {
            reported = Self::destroy_at(inner, destroy_handle.ok_or(EINVAL)?)?;
        }
        let r = MethodCtx {
            file: self,
            inner,
            bd: &bundle,
            uattrs,
            out: &mut out,
        }
        .run_method(new, reported);
        // upstream: the end of ib_uverbs_run_method() (parse::finish_method()).
        match r {
            Err(e) if e == EPROTONOSUPPORT => return Err(EINVAL),
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        if method.has_udata {
            if let Ok(f) = bundle.set_output(UVERBS_ATTR_UHW_OUT) {
                out.push(f)?;
            }
        }
        out.write_back()?;
        Ok(0)
    }
}

/// One ioctl method being run (upstream: the `struct uverbs_attr_bundle` that is every ioctl
/// handler's one argument): the file, its state under the file's lock, the parsed attributes,
/// the user's attribute array (inline driver data) and the outputs to write back. The core
/// methods' handlers are its methods ([`MethodCtx::run_method`] dispatches).
pub(super) struct MethodCtx<'a, 'b, D: Driver> {
    pub(super) file: &'a UFile<D>,
    pub(super) inner: &'a mut Inner<D>,
    pub(super) bd: &'a Bundle<'b>,
    pub(super) uattrs: &'a [u8],
    pub(super) out: &'a mut Outputs,
}

impl<D: Driver> MethodCtx<'_, '_, D> {
    /// [`Outputs::put`] of the attribute `id`.
    pub(super) fn put(&mut self, id: u16, data: &[u8]) -> Result {
        self.out.put(self.bd, id, data)
    }

    /// The handle the IDR attribute `id` names, as the write commands' `u32` handle (upstream
    /// `uverbs_attr_get_obj()`); `err` if the attribute is absent (or its id does not fit).
    pub(super) fn idr_handle(&self, id: u16, err: Error) -> Result<u32> {
        match self.bd.get(id) {
            Ok(AttrValue::Obj { id, .. }) => u32::try_from(id).map_err(|_| err),
            _ => Err(err),
        }
    }

    /// A call of a driver handler in this method with the file's context: the driver may make
    /// the NEW IDR object (`can_new`) or the NEW fd object (`can_new_fd`). The context is
    /// borrowed from the file's state, whose lock the method holds: no reference is taken.
    ///
    /// # Errors
    ///
    /// `EINVAL` before GET_CONTEXT.
    pub(super) fn driver_call(
        &mut self,
        can_new: bool,
        can_new_fd: bool,
    ) -> Result<DriverCall<'_, '_, D>> {
        let inner = &*self.inner;
        Ok(DriverCall {
            ctx: inner.ctx()?,
            inner,
            bundle: self.bd,
            out: &mut *self.out,
            new_obj: None,
            can_new,
            new_fd: None,
            can_new_fd,
        })
    }

    /// The driver data of the method as write-command buffers ([`ioctl_bufs`]).
    pub(super) fn bufs(&self) -> Result<WriteBufs> {
        ioctl_bufs(self.bd, self.uattrs)
    }

    pub(super) fn run_method(&mut self, new: NewObj, reported: Reported) -> Result {
        let h = match self.bd.method.handler {
            Handler::Core(h) => h,
            Handler::Driver(n) => return self.run_driver_method(new, n),
        };
        match h {
            CoreHandler::InvokeWrite => {
                let wc = self
                    .bd
                    .get_const_unsigned(attr::WRITE_CMD, u64::MAX, None)
                    .map_err(kerr)?;
                let core_in = self.bd.ptr(attr::CORE_IN).ok();
                let core_out = self.bd.ptr(attr::CORE_OUT).ok();
                let m = w::invoke_write_method(
                    &self.file.tree,
                    wc,
                    core_in.map_or(0, |p| usize::from(p.len)),
                    core_out.map_or(0, |p| usize::from(p.len)),
                )
                .map_err(kerr)?;
                let WriteMethod::Cmd(spec) = m else {
                    return Err(EOPNOTSUPP);
                };
                let core_in = match core_in {
                    None => CoreIn::empty(),
                    Some(p) => ptr_core_in(&p)?,
                };
                let bufs = WriteBufs {
                    core_in,
                    core_out: core_out.map_or((0, 0), |p| (p.data, usize::from(p.len))),
                    ..self.bufs()?
                };
                self.file.run_write(self.inner, spec.command(), &bufs)?;
                if core_out.is_some() {
                    self.out
                        .push(self.bd.set_output(attr::CORE_OUT).map_err(kerr)?)?;
                }
                Ok(())
            }
            CoreHandler::GetContext => {
                if self.inner.ucontext.is_some() {
                    return Err(EINVAL);
                }
                let b = self.bufs()?;
                let ctx = self.file.alloc_ctx(&b.udata_in, b.udata_out)?;
                self.out.put_opt(
                    self.bd,
                    attr::GET_CONTEXT_NUM_COMP_VECTORS,
                    &self.file.dev.num_comp_vectors().to_ne_bytes(),
                )?;
                self.out.put_opt(
                    self.bd,
                    attr::GET_CONTEXT_CORE_SUPPORT,
                    &CORE_SUPPORT.to_ne_bytes(),
                )?;
                self.file.mmap.set_ucontext(&ctx);
                self.inner.ucontext = Some(ctx);
                Ok(())
            }
            // upstream UVERBS_HANDLER(UVERBS_METHOD_QUERY_CONTEXT): EOPNOTSUPP without
            // ops.query_ucontext; the core's two outputs, then the driver's.
            CoreHandler::QueryContext => {
                self.inner.ctx()?;
                let op = self.file.dev.ops().query_ucontext.ok_or(EOPNOTSUPP)?;
                self.out.put_opt(
                    self.bd,
                    attr::QUERY_CONTEXT_NUM_COMP_VECTORS,
                    &self.file.dev.num_comp_vectors().to_ne_bytes(),
                )?;
                // IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS
                self.out.put_opt(
                    self.bd,
                    attr::QUERY_CONTEXT_CORE_SUPPORT,
                    &CORE_SUPPORT.to_ne_bytes(),
                )?;
                let mut call = self.driver_call(false, false)?;
                let ctx = call.ctx;
                op(ctx, &mut call)
            }
            CoreHandler::QueryPort => {
                self.inner.ctx()?;
                let port = self
                    .bd
                    .get_const_unsigned(attr::QUERY_PORT_PORT_NUM, u8::MAX.into(), None)
                    .map_err(kerr)?;
                let r = self.file.port_resp(port as u32)?;
                self.put(attr::QUERY_PORT_RESP, &r.to_bytes())
            }
            CoreHandler::QueryGidEntry => {
                self.inner.ctx()?;
                let port = self
                    .bd
                    .get_const_unsigned(attr::QUERY_GID_ENTRY_PORT, u32::MAX.into(), None)
                    .map_err(kerr)? as u32;
                let index = self
                    .bd
                    .get_const_unsigned(attr::QUERY_GID_ENTRY_GID_INDEX, u32::MAX.into(), None)
                    .map_err(kerr)? as u32;
                self.bd
                    .get_flags32(attr::QUERY_GID_ENTRY_FLAGS, 0)
                    .map_err(kerr)?;
                if port == 0 || port > self.file.dev.phys_port_cnt() {
                    return Err(EINVAL);
                }
                // upstream: rdma_get_gid_attr() is ENODATA for an empty
                // entry (libibverbs then reports a zero GID), EINVAL for an
                // index past the table.
                let gid = self.file.dev.query_gid(port, index).map_err(|e| {
                    if e == ENOENT {
                        ENODATA
                    } else {
                        e
                    }
                })?;
                let t = self
                    .file
                    .dev
                    .query_gid_type(port, index)
                    .unwrap_or_default();
                let ifindex = self.file.dev.gid_ndev_ifindex(port, index).unwrap_or(0);
                let e = resp::gid_entry(&gid, index, port, t, ifindex);
                self.put(attr::QUERY_GID_ENTRY_RESP_ENTRY, &e.to_bytes())
            }
            CoreHandler::AsyncEventAlloc => {
                self.inner.ctx()?;
                let NewObj::Fd { fd, .. } = new else {
                    return Err(EINVAL);
                };
                let file = self.file.new_async_file(self.inner)?;
                // Commit: upstream alloc_commit_fd_uobject() -> fd_install().
                fd.fd_install(file);
                Ok(())
            }
            CoreHandler::DestroyDefault => Ok(()),
            CoreHandler::InfoHandles => self.ioctl_info_handles(),
            CoreHandler::QueryGidTable => self.ioctl_query_gid_table(),
            CoreHandler::CqCreate => self.ioctl_cq_create(new),
            CoreHandler::QpCreate => self.ioctl_qp_create(new),
            CoreHandler::RegMr => self.ioctl_reg_mr(new),
            CoreHandler::QueryMr => self.ioctl_query_mr(),
            CoreHandler::DmAlloc => self.ioctl_dm_alloc(new),
            CoreHandler::DmMrReg => self.ioctl_dm_mr_reg(new),
            CoreHandler::SrqCreate => self.ioctl_srq_create(new),
            CoreHandler::SrqDestroy => self.put(attr::DESTROY_SRQ_RESP, &reported.srq_resp()),
            // The DESTROY attribute did the work; the response counts the
            // events the process read.
            CoreHandler::CqDestroy => self.put(attr::DESTROY_CQ_RESP, &reported.cq_resp()),
            CoreHandler::QpDestroy => self.put(attr::DESTROY_QP_RESP, &reported.qp_resp()),
        }
    }

    /// A driver method (upstream `ib_uverbs_run_method()` calling a
    /// driver's `UVERBS_HANDLER`), then the commit of its NEW object.
    pub(super) fn run_driver_method(&mut self, new: NewObj, handler: u16) -> Result {
        let op = self.file.dev.ops().uverbs_method.ok_or(EOPNOTSUPP)?;
        let mut call = self.driver_call(
            matches!(new, NewObj::Idr { .. }),
            matches!(new, NewObj::Fd { .. }),
        )?;
        op(handler, &mut call)?;
        let obj = call.new_obj.take();
        let new_fd = call.new_fd.take();
        match (new, obj, new_fd) {
            (NewObj::Idr { id, obj_type }, Some(o), _) => {
                UFile::commit(self.inner, id, obj_type, ObjKind::Driver(o))
            }
            // upstream alloc_commit_fd_uobject(): the file, the object on the file's list,
            // fd_install() last (nothing can fail after it). A failure drops the file,
            // whose release destroys the object.
            (NewObj::Fd { fd, obj_type }, _, Some(nf)) => {
                self.inner.fds.retain(|e| !e.fd.is_released());
                let dfd = DriverFd::new(obj_type, nf.ops, nf.owner)?;
                let file = DriverFd::file(&dfd, nf.name)?;
                let seq = self.inner.objs.take_seq();
                self.inner.fds.push(FdEntry { seq, fd: dfd }, GFP_KERNEL)?;
                fd.fd_install(file);
                Ok(())
            }
            // A NEW handle or fd the driver did not fill: nothing to commit.
            (NewObj::Idr { .. }, None, _) | (NewObj::Fd { .. }, _, None) => Err(EINVAL),
            _ => Ok(()),
        }
    }
}
/// The value of a small PTR_IN attribute: its first `sizeof(T)` bytes, zero-extended
/// (upstream `uverbs_copy_from()` after the spec checked the length).
pub(super) fn ptr_value<T: AbiField>(bd: &Bundle<'_>, id: u16) -> Result<T> {
    Ok(T::read(&ptr_in(&bd.ptr(id).map_err(kerr)?)?))
}

/// The driver data of an ioctl method as write-command buffers.
pub(super) fn ioctl_bufs(bd: &Bundle<'_>, uattrs: &[u8]) -> Result<WriteBufs> {
    let ud = bd.udata(UVERBS_ATTR_UHW_IN, UVERBS_ATTR_UHW_OUT);
    Ok(WriteBufs {
        core_in: CoreIn::empty(),
        core_out: (0, 0),
        udata_in: udata_in(&ud, uattrs)?,
        udata_out: (ud.outbuf, ud.outlen),
    })
}
