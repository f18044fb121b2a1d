// SPDX-License-Identifier: GPL-2.0

//! The CQ and completion channel commands (upstream `create_cq()`, `ib_uverbs_destroy_cq()`,
//! `ib_uverbs_resize_cq()`, `ib_uverbs_ex_modify_cq()`, `ib_uverbs_create_comp_channel()`).

use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::{ids::obj, structs as s};
use crate::uverbs::async_event::AsyncEventFile;
use crate::uverbs::file::cmd::{create_response, request, respond, with_user_ctx, WriteBufs};
use crate::uverbs::file::events::{Reported, UEvents};
use crate::uverbs::file::uobject::{Inner, ObjKind};
use crate::uverbs::file::UFile;
use crate::verbs::{Cq, CqHandler, CqInitAttr};
use kernel::fs::file::{flags, FileDescriptorReservation};
use kernel::prelude::*;
use kernel::sync::Arc;

/// `struct ib_uverbs_destroy_cq_resp`.
pub(in crate::uverbs::file) fn destroy_cq_resp(r: Reported) -> [u8; s::DestroyCqResp::SIZE] {
    s::DestroyCqResp {
        comp_events_reported: r.comp,
        async_events_reported: r.events,
    }
    .to_bytes()
}

impl<D: Driver> UFile<D> {
    /// upstream `create_cq()` up to the driver; every form of the command (legacy, extended,
    /// ioctl) is converted into `struct ib_uverbs_ex_create_cq`, as upstream.
    pub(in crate::uverbs::file) fn cq_create_common(
        &self,
        inner: &Inner<D>,
        c: &s::ExCreateCq,
        b: &WriteBufs,
    ) -> Result<(Arc<Cq<D>>, Arc<UEvents>)> {
        let ctx = inner.ctx()?.clone();
        // upstream: `comp_vector >= device->num_comp_vectors` is EINVAL.
        if c.comp_vector >= self.dev.num_comp_vectors() {
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
        let cq = with_user_ctx(b, &ctx, |uc| {
            Cq::create_user(&self.dev, &attr, Some(handler), Owner::current_task(), uc)
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
        request::<s::CreateCompChannel>(&b.core_in)?;
        inner.ctx()?;
        let fd = FileDescriptorReservation::get_unused_fd_flags(flags::O_CLOEXEC)?;
        let chan = AsyncEventFile::new_comp_channel()?;
        let file = AsyncEventFile::file(&chan)?;
        let o = s::CreateCompChannelResp {
            fd: fd.reserved_fd(),
        };
        respond(b, &o.to_bytes())?;
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
            let c = request::<s::ExCreateCq>(&b.core_in)?;
            if c.comp_mask != 0 || c.reserved != 0 {
                return Err(EINVAL);
            }
            c
        } else {
            let r = request::<s::CreateCq>(&b.core_in)?;
            s::ExCreateCq {
                user_handle: r.user_handle,
                cqe: r.cqe,
                comp_vector: r.comp_vector,
                comp_channel: r.comp_channel,
                ..Default::default()
            }
        };
        let (cq, ev) = self.cq_create_common(inner, &c, b)?;
        let cqe = cq.cqe();
        Self::commit_new(inner, obj::CQ, ObjKind::Cq(cq, ev), |cq_handle| {
            let base = s::CreateCqResp { cq_handle, cqe };
            create_response::<s::ExCreateCqResp>(b.core_out, ex, base)
        })
    }

    /// `IB_USER_VERBS_CMD_DESTROY_CQ`: the response counts the completion
    /// and asynchronous events the process read.
    pub(in crate::uverbs::file) fn destroy_cq(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        let rep = Self::perform_destroy(inner, b, obj::CQ, |r: &s::DestroyCq| r.cq_handle)?;
        respond(b, &destroy_cq_resp(rep))
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
        let r = request::<s::ResizeCq>(&b.core_in)?;
        if r.cqe == 0 {
            return Err(EINVAL);
        }
        let cq = Self::cq_by_handle(inner, r.cq_handle)?;
        with_user_ctx(b, &ctx, |uc| cq.resize_user(r.cqe, uc))?;
        let o = s::ResizeCqResp {
            cqe: cq.cqe(),
            reserved: 0,
        };
        respond(b, &o.to_bytes())
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
        let r = request::<s::ExModifyCq>(&b.core_in)?;
        if r.attr_mask == 0 || r.reserved != 0 {
            return Err(EINVAL);
        }
        if r.attr_mask > CQ_MODERATE {
            return Err(EOPNOTSUPP);
        }
        inner.ctx()?;
        let cq = Self::cq_by_handle(inner, r.cq_handle)?;
        cq.set_moderation(r.attr.cq_count, r.attr.cq_period)
    }
}
