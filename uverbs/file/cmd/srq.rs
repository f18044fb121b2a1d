// SPDX-License-Identifier: GPL-2.0

//! The SRQ commands (upstream `ib_uverbs_modify_srq()`, `ib_uverbs_query_srq()`;
//! `ib_uverbs_destroy_srq()` is [`WriteCtx::destroy_reporting`]) and the create of a basic SRQ (upstream `__uverbs_create_xsrq()`
//! for `IB_SRQT_BASIC`); `CREATE_SRQ` and `CREATE_XSRQ` are [`WriteCtx::create_xsrq`] (`xrcd.rs`).

use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::structs as s;
use crate::uverbs::file::cmd::{with_udata, with_user_ctx, WriteBufs, WriteCtx};
use crate::uverbs::file::events::UEvents;
use crate::uverbs::file::uobject::Inner;
use crate::uverbs::file::UFile;
use crate::verbs::{Srq, SrqAttrMask, SrqHandler, SrqInitAttr};
use kernel::prelude::*;
use kernel::sync::Arc;

/// The fields of `struct ib_uverbs_create_srq` (and of the ioctl method).
pub(in crate::uverbs::file) struct CreateSrq {
    pub(in crate::uverbs::file) user_handle: u64,
    pub(in crate::uverbs::file) pd_handle: u32,
    pub(in crate::uverbs::file) attr: SrqInitAttr,
}

impl<D: Driver> UFile<D> {
    /// upstream `__uverbs_create_xsrq()` for a basic SRQ, up to the driver.
    pub(in crate::uverbs::file) fn srq_create_common(
        &self,
        inner: &Inner<D>,
        c: &CreateSrq,
        b: &WriteBufs,
    ) -> Result<(Arc<Srq<D>>, Arc<UEvents>)> {
        let ctx = inner.ctx()?.clone();
        let pd = Self::pd_by_handle(inner, c.pd_handle)?;
        let ev = UEvents::new(None, inner.async_file.clone(), c.user_handle)?;
        let handler: Arc<dyn SrqHandler> = ev.clone();
        let srq = with_user_ctx(b, &ctx, |uc| {
            Srq::create_user(&pd, &c.attr, Some(handler), Owner::current_task(), uc)
        })?;
        Ok((srq, ev))
    }
}

impl<D: Driver> WriteCtx<'_, D> {
    /// `IB_USER_VERBS_CMD_MODIFY_SRQ`: upstream hands `attr_mask` to the driver unchecked.
    pub(in crate::uverbs::file) fn modify_srq(&mut self) -> Result {
        self.inner.ctx()?;
        let r = self.request::<s::ModifySrq>()?;
        let srq = UFile::srq_by_handle(self.inner, r.srq_handle)?;
        let attr = SrqInitAttr {
            max_wr: r.max_wr,
            max_sge: 0,
            srq_limit: r.srq_limit,
        };
        with_udata(self.b, |ud| {
            srq.modify_user(&attr, SrqAttrMask(r.attr_mask), ud)
        })
    }

    /// `IB_USER_VERBS_CMD_QUERY_SRQ`.
    pub(in crate::uverbs::file) fn query_srq(&mut self) -> Result {
        self.inner.ctx()?;
        let r = self.request::<s::QuerySrq>()?;
        let srq = UFile::srq_by_handle(self.inner, r.srq_handle)?;
        let a = srq.query()?;
        let o = s::QuerySrqResp {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
            reserved: 0,
        };
        self.respond(&o.to_bytes())
    }
}
