// SPDX-License-Identifier: GPL-2.0

//! The CQ and completion channel commands (upstream `create_cq()`, `ib_uverbs_resize_cq()`,
//! `ib_uverbs_ex_modify_cq()`, `ib_uverbs_create_comp_channel()`; `ib_uverbs_destroy_cq()` is
//! [`WriteCtx::destroy_reporting`]).

use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::{ids::obj, structs as s};
use crate::uverbs::async_event::AsyncEventFile;
use crate::uverbs::file::cmd::{create_response, with_user_ctx, WriteBufs, WriteCtx};
use crate::uverbs::file::events::UEvents;
use crate::uverbs::file::uobject::{Inner, ObjKind};
use crate::uverbs::file::UFile;
use crate::verbs::{Cq, CqHandler, CqInitAttr};
use kernel::fs::file::{flags, FileDescriptorReservation};
use kernel::prelude::*;
use kernel::sync::Arc;

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
        // upstream create_cq(): `attr.flags = cmd->flags`, checked by the driver (the ioctl
        // form already refused bits other than TIMESTAMP_COMPLETION | IGNORE_OVERRUN).
        let attr = CqInitAttr {
            cqe: c.cqe,
            comp_vector: c.comp_vector,
            flags: c.flags,
        };
        let handler: Arc<dyn CqHandler> = ev.clone();
        let cq = with_user_ctx(b, &ctx, |uc| {
            Cq::create_user(&self.dev, &attr, Some(handler), Owner::current_task(), uc)
        })?;
        Ok((cq, ev))
    }
}

impl<D: Driver> WriteCtx<'_, D> {
    /// `IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL` (upstream
    /// `ib_uverbs_create_comp_channel()`): a new `[infinibandevent]` fd
    /// reading `struct ib_uverbs_comp_event_desc`.
    pub(in crate::uverbs::file) fn create_comp_channel(&mut self) -> Result {
        self.request::<s::CreateCompChannel>()?;
        self.inner.ctx()?;
        let fd = FileDescriptorReservation::get_unused_fd_flags(flags::O_CLOEXEC)?;
        let chan = AsyncEventFile::new_comp_channel()?;
        let file = AsyncEventFile::file(&chan)?;
        let o = s::CreateCompChannelResp {
            fd: fd.reserved_fd(),
        };
        self.respond(&o.to_bytes())?;
        self.inner.comp_channels.push(chan, GFP_KERNEL)?;
        fd.fd_install(file);
        Ok(())
    }

    /// `IB_USER_VERBS_CMD_CREATE_CQ` / `IB_USER_VERBS_EX_CMD_CREATE_CQ`.
    pub(in crate::uverbs::file) fn create_cq(&mut self, ex: bool) -> Result {
        let c = self.request_ex::<s::ExCreateCq, s::CreateCq>(ex)?;
        // upstream ib_uverbs_ex_create_cq(): comp_mask, reserved (0 in a legacy request).
        if c.comp_mask != 0 || c.reserved != 0 {
            return Err(EINVAL);
        }
        let (cq, ev) = self.file.cq_create_common(self.inner, &c, self.b)?;
        let cqe = cq.cqe();
        self.commit_new(obj::CQ, ObjKind::Cq(cq, ev), |b, cq_handle| {
            let base = s::CreateCqResp { cq_handle, cqe };
            create_response::<s::ExCreateCqResp>(b.core_out, ex, base)
        })
    }

    /// `IB_USER_VERBS_CMD_RESIZE_CQ` (upstream `ib_uverbs_resize_cq()`): `cqe == 0` is
    /// `EINVAL`; the driver's udata carries the new buffer; the response is
    /// `struct ib_uverbs_resize_cq_resp { cqe; reserved; }` with the CQ's new size.
    pub(in crate::uverbs::file) fn resize_cq(&mut self) -> Result {
        let ctx = self.inner.ctx()?.clone();
        let r = self.request::<s::ResizeCq>()?;
        if r.cqe == 0 {
            return Err(EINVAL);
        }
        let cq = UFile::cq_by_handle(self.inner, r.cq_handle)?;
        self.with_user_ctx(&ctx, |uc| cq.resize_user(r.cqe, uc))?;
        let o = s::ResizeCqResp {
            cqe: cq.cqe(),
            reserved: 0,
        };
        self.respond(&o.to_bytes())
    }

    /// `IB_USER_VERBS_EX_CMD_MODIFY_CQ` (upstream `ib_uverbs_ex_modify_cq()`): `struct
    /// ib_uverbs_ex_modify_cq { cq_handle; attr_mask; attr { cq_count; cq_period; }; reserved;
    /// }`; no mask or a reserved word is `EINVAL`, a mask beyond `IB_CQ_MODERATE` `EOPNOTSUPP`.
    pub(in crate::uverbs::file) fn modify_cq(&mut self) -> Result {
        /// `IB_CQ_MODERATE`.
        const CQ_MODERATE: u32 = 1;
        let r = self.request::<s::ExModifyCq>()?;
        if r.attr_mask == 0 || r.reserved != 0 {
            return Err(EINVAL);
        }
        if r.attr_mask > CQ_MODERATE {
            return Err(EOPNOTSUPP);
        }
        self.inner.ctx()?;
        let cq = UFile::cq_by_handle(self.inner, r.cq_handle)?;
        cq.set_moderation(r.attr.cq_count, r.attr.cq_period)
    }
}
