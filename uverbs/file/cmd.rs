// SPDX-License-Identifier: GPL-2.0

//! The write() path (upstream `ib_uverbs_write()`, `uverbs_cmd.c`) and the device,
//! context and PD commands; the other objects' commands are in the children.
//!
//! Order of checks and errnos follow upstream, because the raw-ABI test
//! compares them with upstream's in the same VM: request parsing, then the
//! command's own field checks, then the handle lookups in upstream's order,
//! then the core verb and the driver.
//!
//! Completion channels: `CREATE_COMP_CHANNEL` makes one; a CQ created with
//! it queues its user handle there on each completion the driver reports;
//! any other fd is `EBADF`, as upstream. A CQ's and a QP's asynchronous
//! events go to the file's first async event file with the object's user
//! handle. Each object counts its events read by the process, and its
//! destroy drops those still unread and reports the counts ([`UEvents`]).
//!
//! SRQs (`CREATE_SRQ`, `MODIFY_SRQ`, `QUERY_SRQ`, `DESTROY_SRQ` and the ioctl methods
//! `SRQ_CREATE`/`SRQ_DESTROY`, upstream `__uverbs_create_xsrq()`, `ib_uverbs_modify_srq()`,
//! `ib_uverbs_query_srq()`, `ib_uverbs_destroy_srq()`, `uverbs_std_types_srq.c`): basic SRQs,
//! their events on the async event file, QPs created on them.
//!
//! Not supported, and saying so: XRC (XRC SRQs: `EOPNOTSUPP`), RSS
//! indirection tables (`EINVAL`, as upstream for a device without the
//! object), raw packet QPs (`EOPNOTSUPP`), QP create flags and
//! CQ flags (`EOPNOTSUPP`: our QP/CQ init attributes carry none yet), the
//! alternate path.

pub(super) mod ah;
pub(super) mod cq;
pub(super) mod mr;
pub(super) mod mw;
pub(super) mod qp;
pub(super) mod srq;
pub(super) mod xrcd;

use crate::device::Device;
use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::{
    ids::{cmd, obj},
    layout::AbiField,
    structs as s,
    uapi::WriteMethod,
    write::{self as w, Response},
    Errno,
};
use crate::uverbs::file::events::Reported;
use crate::uverbs::file::uobject::{Inner, ObjKind};
use crate::uverbs::file::{copy_out, copy_out_or_zero, kerr, UFile};
use crate::uverbs::resp;
use crate::verbs::{Pd, Ucontext, Udata, UserCtx};
use kernel::fs::file::{flags, FileDescriptorReservation};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::uaccess::UserSliceReader;

/// A write() command up to this many bytes (header included) is copied to the stack.
const WRITE_ON_STACK: usize = 256;

/// `IB_USER_VERBS_EX_CMD_QUERY_DEVICE` with the extended flag.
pub(super) const EX_QUERY_DEVICE: u32 = cmd::FLAG_EXTENDED | cmd::EX_QUERY_DEVICE;

/// The other extended commands implemented, with the extended flag.
pub(super) const EX_CREATE_CQ: u32 = cmd::FLAG_EXTENDED | cmd::EX_CREATE_CQ;

pub(super) const EX_CREATE_QP: u32 = cmd::FLAG_EXTENDED | cmd::EX_CREATE_QP;

pub(super) const EX_MODIFY_QP: u32 = cmd::FLAG_EXTENDED | cmd::EX_MODIFY_QP;

pub(super) const EX_MODIFY_CQ: u32 = cmd::FLAG_EXTENDED | cmd::EX_MODIFY_CQ;

/// Core requests up to this size are held inline ([`CoreIn`]): every command's but the flow
/// specs' (`MODIFY_QP` is 112 bytes, its extended form 120).
const CORE_IN_INLINE: usize = 128;

/// A write command's core request (upstream copies it into a struct on the stack,
/// `uverbs_request()`): inline up to [`CORE_IN_INLINE`] bytes, so the common commands run
/// without an allocation for it (a `kmalloc()` and `kfree()` each, measurable in a
/// `MODIFY_QP` on the benchmark kernel: `Documentation/performance.md`, "The ioctl entry");
/// longer ones on the heap.
pub(super) enum CoreIn {
    /// The first `len` bytes of `buf`.
    Inline {
        /// How many bytes of `buf` are the request.
        len: usize,
        /// The bytes.
        buf: [u8; CORE_IN_INLINE],
    },
    /// A request longer than [`CORE_IN_INLINE`].
    Heap(KVec<u8>),
}

impl CoreIn {
    /// No request.
    pub(super) const fn empty() -> Self {
        CoreIn::Inline {
            len: 0,
            buf: [0; CORE_IN_INLINE],
        }
    }

    /// A copy of `b`.
    ///
    /// # Errors
    ///
    /// `ENOMEM` for a long request without memory.
    pub(super) fn from_slice(b: &[u8]) -> Result<Self> {
        let mut c = Self::zeroed(b.len())?;
        c.as_mut().copy_from_slice(b);
        Ok(c)
    }

    /// `len` bytes copied from user address `addr`.
    ///
    /// # Errors
    ///
    /// `EFAULT` for an address that cannot be read, `ENOMEM`.
    pub(super) fn from_user(addr: u64, len: usize) -> Result<Self> {
        let mut c = Self::zeroed(len)?;
        super::copy_in_to(addr, c.as_mut())?;
        Ok(c)
    }

    fn zeroed(len: usize) -> Result<Self> {
        if len <= CORE_IN_INLINE {
            Ok(CoreIn::Inline {
                len,
                buf: [0; CORE_IN_INLINE],
            })
        } else {
            Ok(CoreIn::Heap(KVec::from_elem(0u8, len, GFP_KERNEL)?))
        }
    }

    fn as_mut(&mut self) -> &mut [u8] {
        match self {
            CoreIn::Inline { len, buf } => buf.get_mut(..*len).unwrap_or(&mut []),
            CoreIn::Heap(v) => v,
        }
    }
}

impl core::ops::Deref for CoreIn {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            CoreIn::Inline { len, buf } => buf.get(..*len).unwrap_or(&[]),
            CoreIn::Heap(v) => v,
        }
    }
}

/// The buffers of one write command, from write() or INVOKE_WRITE
/// (upstream `attrs->ucore` and `attrs->driver_udata`).
pub(super) struct WriteBufs {
    pub(super) core_in: CoreIn,
    /// (address, length) of the core response; address 0: none.
    pub(super) core_out: (u64, usize),
    pub(super) udata_in: KVec<u8>,
    pub(super) udata_out: (u64, usize),
}

/// A zeroed buffer of `len` bytes: the start of `stack` when it is that long, else a heap
/// buffer put into `heap` (empty until then).
///
/// # Errors
///
/// `ENOMEM`.
fn scratch<'a>(stack: &'a mut [u8], heap: &'a mut KVec<u8>, len: usize) -> Result<&'a mut [u8]> {
    if len <= stack.len() {
        return stack.get_mut(..len).ok_or(EINVAL);
    }
    *heap = KVec::from_elem(0u8, len, GFP_KERNEL)?;
    Ok(heap.as_mut_slice())
}

/// Driver responses up to this size are built on the stack (mlx5's CQ, QP, PD, SRQ and AH
/// responses): a command allocates nothing for its driver data, as upstream, whose driver
/// writes the user's buffer directly (`Documentation/performance.md`).
const UDATA_OUT_ON_STACK: usize = 128;

/// Runs a driver op with the command's driver data (upstream
/// `attrs->driver_udata`): the request as read, a response buffer of the
/// user's length (at most a page), written back after the op when the
/// driver answered (`ib_respond_udata()`: its bytes, the rest of the
/// user's buffer zeroed).
pub(super) fn with_udata<T>(
    b: &WriteBufs,
    f: impl FnOnce(&mut Udata<'_>) -> Result<T>,
) -> Result<T> {
    let outlen = b.udata_out.1.min(kernel::page::PAGE_SIZE);
    let mut stack = [0u8; UDATA_OUT_ON_STACK];
    let mut heap = KVec::new();
    let resp = scratch(&mut stack, &mut heap, outlen)?;
    let mut ud = Udata::new(&b.udata_in, &mut *resp);
    let r = f(&mut ud)?;
    if ud.written() > 0 {
        copy_out(b.udata_out.0, resp)?;
    }
    Ok(r)
}

/// [`with_udata`] for a verb of the user context `ctx`: `f` gets the context with the
/// command's driver data ([`UserCtx`]).
pub(super) fn with_user_ctx<D: Driver, T>(
    b: &WriteBufs,
    ctx: &Arc<Ucontext<D>>,
    f: impl FnOnce(&mut UserCtx<'_, '_, D>) -> Result<T>,
) -> Result<T> {
    with_udata(b, |ud| f(&mut UserCtx::new(ctx, ud)))
}

/// `uverbs_request()` of the typed request `T` (upstream: `uverbs_request(attrs, &cmd,
/// sizeof(cmd))`).
pub(super) fn request<T: AbiField>(core_in: &[u8]) -> Result<T> {
    w::request(core_in).map_err(kerr)
}

/// Writes the core response `resp` of a write command to its buffer (upstream
/// `uverbs_response()`: cut to the user's length, the rest of it zeroed).
///
/// # Errors
///
/// `EFAULT` if the user buffer cannot be written.
pub(super) fn respond(b: &WriteBufs, resp: &[u8]) -> Result {
    copy_out_or_zero(b.core_out.0, b.core_out.1, resp)
}

/// An extended create response (`struct ib_uverbs_ex_create_cq_resp`, `_ex_create_qp_resp`):
/// the command's base response, then `comp_mask` and `response_length`.
pub(super) trait ExCreateResp: AbiField {
    /// The base response (`struct ib_uverbs_create_cq_resp`, `_create_qp_resp`).
    type Base: AbiField;
    /// The extended response around `base`.
    fn extend(base: Self::Base, comp_mask: u32, response_length: u32) -> Self;
}

macro_rules! ex_create_resp {
    ($($ex:ty => $base:ty),*) => {$(
        impl ExCreateResp for $ex {
            type Base = $base;
            fn extend(base: $base, comp_mask: u32, response_length: u32) -> Self {
                Self { base, comp_mask, response_length }
            }
        }
    )*};
}

ex_create_resp!(s::ExCreateCqResp => s::CreateCqResp, s::ExCreateQpResp => s::CreateQpResp);

/// Writes a create command's response to `out` (the write command's response buffer, address
/// and length): for the extended command (`ex`) the extended response `E` with `comp_mask` 0
/// and the `response_length` upstream's `uverbs_response_length()` gives, else `base` alone;
/// either cut to what the buffer holds (upstream `uverbs_response()`).
///
/// # Errors
///
/// `EFAULT` if the user buffer cannot be written.
pub(super) fn create_response<E: ExCreateResp>(
    out: (u64, usize),
    ex: bool,
    base: E::Base,
) -> Result {
    // The largest extended response (`ib_uverbs_ex_create_qp_resp`) is 40 bytes.
    let mut buf = [0u8; 64];
    let len = if ex {
        let len = w::uverbs_response_length(out.1, E::SIZE) as u32;
        E::extend(base, 0, len).write(&mut buf);
        E::SIZE
    } else {
        base.write(&mut buf);
        E::Base::SIZE
    };
    copy_out_or_zero(out.0, out.1, buf.get(..len).ok_or(EINVAL)?)
}

/// One write command being run (upstream: the `struct uverbs_attr_bundle` that is every
/// write handler's one argument in `uverbs_cmd.c`): the file, its state under the file's lock
/// and the command's buffers. The write handlers are its methods; [`UFile::run_write`]
/// dispatches to them.
pub(super) struct WriteCtx<'a, D: Driver> {
    pub(super) file: &'a UFile<D>,
    pub(super) inner: &'a mut Inner<D>,
    pub(super) b: &'a WriteBufs,
}

impl<D: Driver> WriteCtx<'_, D> {
    /// The command's typed request `T` ([`request`]).
    pub(super) fn request<T: AbiField>(&self) -> Result<T> {
        request(&self.b.core_in)
    }

    /// The request of a command with a legacy form `L` and an extended one `E` (`ex`): a
    /// legacy request is converted into the extended one (the members it has, the rest 0), as
    /// upstream's legacy handlers do before the code both forms share.
    pub(super) fn request_ex<E: AbiField, L: AbiField + Into<E>>(&self, ex: bool) -> Result<E> {
        if ex {
            self.request::<E>()
        } else {
            Ok(self.request::<L>()?.into())
        }
    }

    /// Writes the core response `resp` ([`respond`]).
    pub(super) fn respond(&self, resp: &[u8]) -> Result {
        respond(self.b, resp)
    }

    /// [`with_user_ctx`] with the command's driver data.
    pub(super) fn with_user_ctx<T>(
        &self,
        ctx: &Arc<Ucontext<D>>,
        f: impl FnOnce(&mut UserCtx<'_, '_, D>) -> Result<T>,
    ) -> Result<T> {
        with_user_ctx(self.b, ctx, f)
    }

    /// A write command's destroy (upstream `uobj_perform_destroy()`): with a context, the
    /// request `T`, then the object of type `obj_type` under the handle `handle` picks from it
    /// ([`Inner::find`]: unknown `ENOENT`, another type `EINVAL`), destroyed by
    /// [`UFile::destroy_at`] (`EBUSY` puts it back). Returns the events the process read of it,
    /// for the commands whose response counts them.
    pub(super) fn perform_destroy<T: AbiField>(
        &mut self,
        obj_type: u16,
        handle: impl FnOnce(&T) -> u32,
    ) -> Result<Reported> {
        self.inner.ctx()?;
        let r = self.request::<T>()?;
        let h = self.inner.find(obj_type, i64::from(handle(&r)))?;
        UFile::destroy_at(self.inner, h)
    }

    /// [`Self::perform_destroy`] for a command whose response counts the events the process
    /// read of the object: `resp` makes the response of them.
    pub(super) fn destroy_reporting<T: AbiField, const N: usize>(
        &mut self,
        obj_type: u16,
        handle: impl FnOnce(&T) -> u32,
        resp: impl FnOnce(Reported) -> [u8; N],
    ) -> Result {
        let rep = self.perform_destroy(obj_type, handle)?;
        self.respond(&resp(rep))
    }

    /// Commits a write command's new object `kind` of type `obj_type` under the lowest free
    /// handle, then `respond(buffers, handle)` writes the response; a failed write destroys the
    /// object again ([`UFile::commit_and_respond`]).
    pub(super) fn commit_new(
        &mut self,
        obj_type: u16,
        kind: ObjKind<D>,
        respond: impl FnOnce(&WriteBufs, u32) -> Result,
    ) -> Result {
        let (b, id) = (self.b, self.inner.free_id(None));
        UFile::commit_and_respond(self.inner, id, obj_type, kind, || respond(b, id))
    }

    /// `IB_USER_VERBS_CMD_GET_CONTEXT` (upstream `ib_uverbs_get_context()`). In upstream's
    /// order: the async fd is reserved and the response written before `ib_init_ucontext()`
    /// finds an existing context (so a bad response pointer is `EFAULT` even then), and the
    /// driver's `alloc_ucontext` comes last.
    fn get_context(&mut self) -> Result {
        self.request::<s::GetContext>()?;
        let fd = FileDescriptorReservation::get_unused_fd_flags(flags::O_CLOEXEC)?;
        let o = s::GetContextResp {
            async_fd: fd.reserved_fd(),
            num_comp_vectors: self.file.dev.num_comp_vectors(),
        };
        self.respond(&o.to_bytes())?;
        if self.inner.ucontext.is_some() {
            return Err(EINVAL);
        }
        let ctx = self.file.alloc_ctx(&self.b.udata_in, self.b.udata_out)?;
        let file = self.file.new_async_file(self.inner)?;
        self.file.mmap.set_ucontext(&ctx);
        self.inner.ucontext = Some(ctx);
        fd.fd_install(file);
        Ok(())
    }

    /// `IB_USER_VERBS_CMD_QUERY_DEVICE` (upstream `ib_uverbs_query_device()`).
    fn query_device(&mut self) -> Result {
        self.inner.ctx()?;
        let r = self.file.query_device_resp();
        self.respond(&r.to_bytes())
    }

    /// `IB_USER_VERBS_EX_CMD_QUERY_DEVICE` (upstream `ib_uverbs_ex_query_device()`).
    fn ex_query_device(&mut self) -> Result {
        let (dev, b) = (&self.file.dev, self.b);
        self.inner.ctx()?;
        let req = self.request::<s::ExQueryDevice>()?;
        if req.comp_mask != 0 || req.reserved != 0 {
            return Err(EINVAL);
        }
        // upstream: ops.query_device(ib_dev, &attr, &attrs->driver_udata); the
        // driver's response (mlx5_ib_query_device_resp) before the core's.
        if let Some(op) = dev.ops().query_device_udata {
            let outlen = b.udata_out.1.min(kernel::page::PAGE_SIZE);
            let mut dresp = KVec::from_elem(0u8, outlen, GFP_KERNEL)?;
            let mut ud = Udata::new(&b.udata_in, &mut dresp);
            op(dev, &mut ud)?;
            let n = ud.written();
            if n > 0 {
                copy_out(b.udata_out.0, dresp.get(..n).unwrap_or(&[]))?;
            }
        }
        // upstream ib_uverbs_ex_query_device(): timestamp_mask, hca_core_clock,
        // device_cap_flags_ex (the device's cap flags), the CQ moderation caps and
        // max_dm_size; ODP, RSS, TM: none.
        let a = dev.attrs();
        let r = s::ExQueryDeviceResp {
            base: self.file.query_device_resp(),
            response_length: w::uverbs_response_length(b.core_out.1, s::ExQueryDeviceResp::SIZE)
                as u32,
            timestamp_mask: a.timestamp_mask,
            hca_core_clock: a.hca_core_clock,
            device_cap_flags_ex: a.device_cap_flags,
            cq_moderation_caps: s::CqModerationCaps {
                max_cq_moderation_count: a.max_cq_moderation_count,
                max_cq_moderation_period: a.max_cq_moderation_period,
                ..Default::default()
            },
            max_dm_size: a.max_dm_size,
            ..Default::default()
        };
        self.respond(&r.to_bytes())
    }

    /// `IB_USER_VERBS_CMD_QUERY_PORT` (upstream `ib_uverbs_query_port()`).
    fn query_port(&mut self) -> Result {
        self.inner.ctx()?;
        let req = self.request::<s::QueryPort>()?;
        let r = self.file.port_resp(u32::from(req.port_num))?;
        self.respond(&r.legacy_resp.to_bytes())
    }

    /// `IB_USER_VERBS_CMD_ALLOC_PD` (upstream `ib_uverbs_alloc_pd()`).
    fn alloc_pd(&mut self) -> Result {
        let ctx = self.inner.ctx()?.clone();
        let dev = &self.file.dev;
        let pd = self.with_user_ctx(&ctx, |uc| Pd::alloc_user(dev, Owner::current_task(), uc))?;
        let id = self.inner.free_id(None);
        let o = s::AllocPdResp { pd_handle: id };
        self.respond(&o.to_bytes())?;
        UFile::commit(self.inner, id, obj::PD, ObjKind::Pd(pd))
    }
}

impl<D: Driver> UFile<D> {
    pub(super) fn query_device_resp(&self) -> s::QueryDeviceResp {
        let imm = self.dev.port_immutable(1).unwrap_or_default();
        resp::query_device_resp(
            &self.dev.attrs(),
            self.dev.phys_port_cnt(),
            imm.pkey_tbl_len.min(u16::MAX.into()) as u16,
        )
    }

    pub(super) fn port_resp(&self, port: u32) -> Result<s::QueryPortRespEx> {
        // upstream: rdma_is_port_valid() -> EINVAL, then ib_query_port().
        if port == 0 || port > self.dev.phys_port_cnt() {
            return Err(EINVAL);
        }
        let pa = Device::query_port(&self.dev, port)?;
        let imm = self.dev.port_immutable(port)?;
        Ok(resp::query_port_resp(&pa, &imm))
    }

    /// The write() path after `plan_write()`.
    pub(super) fn write_inner(&self, mut data: UserSliceReader) -> Result<usize> {
        let count = data.len();
        // upstream ib_uverbs_write(): count < 8 is EINVAL before any copy;
        // then the 8-byte header is copied, and the extended header only
        // for an extended command with count >= 24, so a buffer that
        // faults after the first 8 bytes is EINVAL from verify_hdr() for a
        // legacy command, not EFAULT.
        if count < w::CmdHdr::SIZE {
            return Err(EINVAL);
        }
        let mut head = [0u8; w::CmdHdr::SIZE + w::ExCmdHdr::SIZE];
        data.clone_reader()
            .read_slice(&mut head[..w::CmdHdr::SIZE])?;
        let plan = match w::plan_write(&self.tree, &head[..w::CmdHdr::SIZE], count) {
            // plan_write() needs the extended header (it checked count).
            Err(Errno::EFAULT) => {
                data.clone_reader().read_slice(&mut head)?;
                w::plan_write(&self.tree, &head, count)
            }
            r => r,
        }
        .map_err(kerr)?;
        // upstream verify_hdr(): an extended command's response range must
        // pass access_ok() (EFAULT) before anything else is read or run.
        if let Response::Addr(a) = plan.response {
            let len = (plan.core_out.1 + plan.udata_out.1) as u64;
            if !crate::task::user_range_ok(a, len) {
                return Err(EFAULT);
            }
        }
        // upstream ib_uverbs_write() copies the request into its on-stack bundle; a command up
        // to WRITE_ON_STACK bytes (every create and destroy but the largest) allocates nothing.
        let mut on_stack = [0u8; WRITE_ON_STACK];
        let mut on_heap = KVec::new();
        let buf = scratch(&mut on_stack, &mut on_heap, count)?;
        data.read_slice(buf)?;
        let buf: &[u8] = buf;
        let slice = |r: (usize, usize)| -> Result<KVec<u8>> {
            let mut v = KVec::new();
            if r.1 != 0 {
                v.extend_from_slice(buf.get(r.0..r.0 + r.1).ok_or(EINVAL)?, GFP_KERNEL)?;
            }
            Ok(v)
        };
        let core_in = match plan.core_in {
            (_, 0) => CoreIn::empty(),
            (at, n) => CoreIn::from_slice(buf.get(at..at + n).ok_or(EINVAL)?)?,
        };
        let resp = match plan.response {
            Response::None => 0,
            Response::Addr(a) => a,
            Response::InRequest => {
                // Every legacy command with a response starts with `__aligned_u64 response`.
                if core_in.len() < 8 {
                    return Err(EFAULT);
                }
                u64::read(&core_in)
            }
        };
        let at = |r: (usize, usize)| {
            if r.1 == 0 {
                (0, 0)
            } else {
                (resp + r.0 as u64, r.1)
            }
        };
        let bufs = WriteBufs {
            udata_in: slice(plan.udata_in)?,
            core_in,
            core_out: at(plan.core_out),
            udata_out: at(plan.udata_out),
        };
        let WriteMethod::Cmd(spec) = plan.method else {
            return Err(EOPNOTSUPP);
        };
        let mut inner = self.inner.lock();
        if inner.dead {
            return Err(EIO);
        }
        self.run_write(&mut inner, spec.command(), &bufs)?;
        Ok(count)
    }

    /// One write command (upstream `UVERBS_HANDLER(...)` of `uverbs_cmd.c`).
    pub(super) fn run_write(&self, inner: &mut Inner<D>, command: u32, b: &WriteBufs) -> Result {
        let mut c = WriteCtx {
            file: self,
            inner,
            b,
        };
        match command {
            cmd::GET_CONTEXT => c.get_context(),
            cmd::QUERY_DEVICE => c.query_device(),
            EX_QUERY_DEVICE => c.ex_query_device(),
            cmd::QUERY_PORT => c.query_port(),
            cmd::ALLOC_PD => c.alloc_pd(),
            cmd::CREATE_COMP_CHANNEL => c.create_comp_channel(),
            cmd::CREATE_CQ => c.create_cq(false),
            EX_CREATE_CQ => c.create_cq(true),
            // upstream ib_uverbs_destroy_cq(): the response counts the completion and
            // asynchronous events the process read.
            cmd::DESTROY_CQ => {
                c.destroy_reporting(obj::CQ, |r: &s::DestroyCq| r.cq_handle, Reported::cq_resp)
            }
            cmd::RESIZE_CQ => c.resize_cq(),
            EX_MODIFY_CQ => c.modify_cq(),
            cmd::CREATE_QP => c.create_qp(false),
            EX_CREATE_QP => c.create_qp(true),
            cmd::MODIFY_QP => c.modify_qp(false),
            EX_MODIFY_QP => c.modify_qp(true),
            cmd::QUERY_QP => c.query_qp(),
            cmd::ATTACH_MCAST => c.attach_mcast(),
            cmd::DETACH_MCAST => c.detach_mcast(),
            // upstream ib_uverbs_destroy_qp(): the response counts the events the process read.
            cmd::DESTROY_QP => {
                c.destroy_reporting(obj::QP, |r: &s::DestroyQp| r.qp_handle, Reported::qp_resp)
            }
            cmd::REG_MR => c.reg_mr(),
            cmd::REREG_MR => c.rereg_mr(),
            cmd::CREATE_SRQ => c.create_xsrq(false),
            cmd::MODIFY_SRQ => c.modify_srq(),
            cmd::QUERY_SRQ => c.query_srq(),
            // upstream ib_uverbs_destroy_srq(): likewise; EBUSY while a QP uses the SRQ.
            cmd::DESTROY_SRQ => c.destroy_reporting(
                obj::SRQ,
                |r: &s::DestroySrq| r.srq_handle,
                Reported::srq_resp,
            ),
            cmd::CREATE_XSRQ => c.create_xsrq(true),
            cmd::OPEN_XRCD => c.open_xrcd(),
            // upstream: ib_uverbs_close_xrcd() -> uobj_perform_destroy(); EBUSY while SRQs or
            // target QPs of this handle live.
            cmd::CLOSE_XRCD => c
                .perform_destroy(obj::XRCD, |r: &s::CloseXrcd| r.xrcd_handle)
                .map(|_| ()),
            cmd::OPEN_QP => c.open_qp(),
            cmd::CREATE_AH => c.create_ah(),
            // upstream: ib_uverbs_destroy_ah() -> uobj_perform_destroy()
            cmd::DESTROY_AH => c
                .perform_destroy(obj::AH, |r: &s::DestroyAh| r.ah_handle)
                .map(|_| ()),
            cmd::ALLOC_MW => c.alloc_mw(),
            // upstream: ib_uverbs_dealloc_mw() -> uobj_perform_destroy()
            cmd::DEALLOC_MW => c
                .perform_destroy(obj::MW, |r: &s::DeallocMw| r.mw_handle)
                .map(|_| ()),
            // upstream: ib_uverbs_dereg_mr() -> uobj_perform_destroy()
            cmd::DEREG_MR => c
                .perform_destroy(obj::MR, |r: &s::DeregMr| r.mr_handle)
                .map(|_| ()),
            // upstream: ib_uverbs_dealloc_pd() -> uobj_perform_destroy()
            cmd::DEALLOC_PD => c
                .perform_destroy(obj::PD, |r: &s::DeallocPd| r.pd_handle)
                .map(|_| ()),
            _ => Err(EOPNOTSUPP),
        }
    }

    pub(super) fn alloc_ctx(&self, input: &[u8], out: (u64, usize)) -> Result<Arc<Ucontext<D>>> {
        let outlen = out.1.min(kernel::page::PAGE_SIZE);
        let mut resp = KVec::from_elem(0u8, outlen, GFP_KERNEL)?;
        let mut ud = Udata::new(input, &mut resp);
        let ctx = Ucontext::alloc(&self.dev, Owner::current_task(), &mut ud)?;
        let n = ud.written();
        if n > 0 {
            copy_out(out.0, resp.get(..n).unwrap_or(&[]))?;
        }
        Ok(ctx)
    }
}
