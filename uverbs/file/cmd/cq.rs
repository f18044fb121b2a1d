// SPDX-License-Identifier: GPL-2.0

//! The CQ and completion channel commands (upstream `create_cq()`, `ib_uverbs_destroy_cq()`,
//! `ib_uverbs_resize_cq()`, `ib_uverbs_ex_modify_cq()`, `ib_uverbs_create_comp_channel()`).

use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::{ids::obj, write as w};
use crate::uverbs::async_event::AsyncEventFile;
use crate::uverbs::file::cmd::{rd16, rd32, rd64, request, with_udata, WriteBufs};
use crate::uverbs::file::events::{Reported, UEvents};
use crate::uverbs::file::uobject::{Inner, ObjKind};
use crate::uverbs::file::{copy_out_or_zero, UFile};
use crate::uverbs::resp::Out;
use crate::verbs::{Cq, CqHandler, CqInitAttr, UserCtx};
use kernel::fs::file::{flags, FileDescriptorReservation};
use kernel::prelude::*;
use kernel::sync::Arc;

/// The fields of `struct ib_uverbs_ex_create_cq` (the legacy command is
/// converted into it, as upstream).
pub(in crate::uverbs::file) struct CreateCq {
    pub(in crate::uverbs::file) user_handle: u64,
    pub(in crate::uverbs::file) cqe: u32,
    pub(in crate::uverbs::file) comp_vector: u32,
    pub(in crate::uverbs::file) comp_channel: i32,
    pub(in crate::uverbs::file) flags: u32,
}

/// `struct ib_uverbs_destroy_cq_resp`.
pub(in crate::uverbs::file) fn destroy_cq_resp(r: Reported) -> [u8; 8] {
    let mut o = [0u8; 8];
    o[..4].copy_from_slice(&r.comp.to_ne_bytes());
    o[4..].copy_from_slice(&r.events.to_ne_bytes());
    o
}

impl<D: Driver> UFile<D> {
    /// upstream `create_cq()` up to the driver.
    pub(in crate::uverbs::file) fn cq_create_common(
        &self,
        inner: &Inner<D>,
        c: &CreateCq,
        b: &WriteBufs,
    ) -> Result<(Arc<Cq<D>>, Arc<UEvents>)> {
        let ctx = inner.ctx()?.clone();
        // One completion vector (GET_CONTEXT answers num_comp_vectors 1).
        if c.comp_vector >= 1 {
            return Err(EINVAL);
        }
        if c.cqe == 0 {
            return Err(EINVAL);
        }
        // upstream ib_uverbs_lookup_comp_file(): a completion channel of
        // this file, else EBADF.
        let chan = if c.comp_channel >= 0 {
            let chan = inner
                .comp_channels
                .iter()
                .find(|e| AsyncEventFile::fd_is(e, i64::from(c.comp_channel)))
                .ok_or(EBADF)?;
            Some(chan.clone())
        } else {
            None
        };
        let ev = UEvents::new(chan, inner.async_file.clone(), c.user_handle)?;
        if c.flags != 0 {
            return Err(EOPNOTSUPP);
        }
        let attr = CqInitAttr {
            cqe: c.cqe,
            comp_vector: c.comp_vector,
        };
        let handler: Arc<dyn CqHandler> = ev.clone();
        let cq = with_udata(b, |ud| {
            Cq::create_user(
                &self.dev,
                &attr,
                Some(handler),
                Owner::current_task(),
                &mut UserCtx::new(&ctx, ud),
            )
        })?;
        Ok((cq, ev))
    }

    /// `IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL` (upstream
    /// `ib_uverbs_create_comp_channel()`): a new `[infinibandevent]` fd
    /// reading `struct ib_uverbs_comp_event_desc`.
    pub(in crate::uverbs::file) fn create_comp_channel(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        request::<8>(&b.core_in)?;
        inner.ctx()?;
        let fd = FileDescriptorReservation::get_unused_fd_flags(flags::O_CLOEXEC)?;
        let chan = AsyncEventFile::new_comp_channel()?;
        let file = AsyncEventFile::file(&chan)?;
        copy_out_or_zero(b.core_out.0, b.core_out.1, &fd.reserved_fd().to_ne_bytes())?;
        inner.comp_channels.push(chan, GFP_KERNEL)?;
        fd.fd_install(file);
        Ok(())
    }

    /// `IB_USER_VERBS_CMD_CREATE_CQ` / `IB_USER_VERBS_EX_CMD_CREATE_CQ`.
    pub(in crate::uverbs::file) fn create_cq(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
        ex: bool,
    ) -> Result {
        let c = if ex {
            let r = request::<32>(&b.core_in)?;
            // comp_mask, reserved
            if rd32(&r, 20) != 0 || rd32(&r, 28) != 0 {
                return Err(EINVAL);
            }
            CreateCq {
                user_handle: rd64(&r, 0),
                cqe: rd32(&r, 8),
                comp_vector: rd32(&r, 12),
                comp_channel: rd32(&r, 16) as i32,
                flags: rd32(&r, 24),
            }
        } else {
            let r = request::<32>(&b.core_in)?;
            CreateCq {
                user_handle: rd64(&r, 8),
                cqe: rd32(&r, 16),
                comp_vector: rd32(&r, 20),
                comp_channel: rd32(&r, 24) as i32,
                flags: 0,
            }
        };
        let (cq, ev) = self.cq_create_common(inner, &c, b)?;
        let id = inner.free_id(None);
        let mut o = Out::<16>::new();
        o.u32(0, id);
        o.u32(4, cq.cqe());
        let out = b.core_out;
        Self::commit_and_respond(inner, id, obj::CQ, ObjKind::Cq(cq, ev), || {
            if ex {
                o.u32(12, w::uverbs_response_length(out.1, 16) as u32);
                copy_out_or_zero(out.0, out.1, &o.0)
            } else {
                copy_out_or_zero(out.0, out.1, o.0.get(..8).unwrap_or(&[]))
            }
        })
    }

    /// `IB_USER_VERBS_CMD_DESTROY_CQ`: the response counts the completion
    /// and asynchronous events the process read.
    pub(in crate::uverbs::file) fn destroy_cq(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        inner.ctx()?;
        let r = request::<16>(&b.core_in)?;
        let pos = inner.find(obj::CQ, i64::from(rd32(&r, 8)))?;
        let rep = Self::destroy_at(inner, pos)?;
        copy_out_or_zero(b.core_out.0, b.core_out.1, &destroy_cq_resp(rep))
    }

    /// `IB_USER_VERBS_CMD_RESIZE_CQ` (upstream `ib_uverbs_resize_cq()`): `cqe == 0` is
    /// `EINVAL`; the driver's udata carries the new buffer; the response is
    /// `struct ib_uverbs_resize_cq_resp { cqe; reserved; }` with the CQ's new size.
    pub(in crate::uverbs::file) fn resize_cq(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        let ctx = inner.ctx()?.clone();
        let r = request::<16>(&b.core_in)?;
        let cqe = rd32(&r, 12);
        if cqe == 0 {
            return Err(EINVAL);
        }
        let cq = Self::cq_by_handle(inner, rd32(&r, 8))?;
        with_udata(b, |ud| cq.resize_user(cqe, &mut UserCtx::new(&ctx, ud)))?;
        let mut o = Out::<8>::new();
        o.u32(0, cq.cqe());
        copy_out_or_zero(b.core_out.0, b.core_out.1, &o.0)
    }

    /// `IB_USER_VERBS_EX_CMD_MODIFY_CQ` (upstream `ib_uverbs_ex_modify_cq()`): `struct
    /// ib_uverbs_ex_modify_cq { cq_handle; attr_mask; attr { cq_count; cq_period; }; reserved;
    /// }`; no mask or a reserved word is `EINVAL`, a mask beyond `IB_CQ_MODERATE` `EOPNOTSUPP`.
    pub(in crate::uverbs::file) fn modify_cq(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        /// `IB_CQ_MODERATE`.
        const CQ_MODERATE: u32 = 1;
        let r = request::<16>(&b.core_in)?;
        let mask = rd32(&r, 4);
        if mask == 0 || rd32(&r, 12) != 0 {
            return Err(EINVAL);
        }
        if mask > CQ_MODERATE {
            return Err(EOPNOTSUPP);
        }
        inner.ctx()?;
        let cq = Self::cq_by_handle(inner, rd32(&r, 0))?;
        cq.set_moderation(rd16(&r, 8), rd16(&r, 10))
    }
}
