// SPDX-License-Identifier: GPL-2.0

//! The SRQ commands (upstream `ib_uverbs_modify_srq()`, `ib_uverbs_query_srq()`,
//! `ib_uverbs_destroy_srq()`) and the create of a basic SRQ (upstream `__uverbs_create_xsrq()`
//! for `IB_SRQT_BASIC`); `CREATE_SRQ` and `CREATE_XSRQ` are [`UFile::create_xsrq`] (`xrcd.rs`).

use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::{ids::obj, structs as s};
use crate::uverbs::file::cmd::{request, respond, with_udata, with_user_ctx, WriteBufs};
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

    /// `IB_USER_VERBS_CMD_MODIFY_SRQ`: upstream hands `attr_mask` to the driver unchecked.
    pub(in crate::uverbs::file) fn modify_srq(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        inner.ctx()?;
        let r = request::<s::ModifySrq>(&b.core_in)?;
        let srq = Self::srq_by_handle(inner, r.srq_handle)?;
        let attr = SrqInitAttr {
            max_wr: r.max_wr,
            max_sge: 0,
            srq_limit: r.srq_limit,
        };
        with_udata(b, |ud| srq.modify_user(&attr, SrqAttrMask(r.attr_mask), ud))
    }

    /// `IB_USER_VERBS_CMD_QUERY_SRQ`.
    pub(in crate::uverbs::file) fn query_srq(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        inner.ctx()?;
        let r = request::<s::QuerySrq>(&b.core_in)?;
        let srq = Self::srq_by_handle(inner, r.srq_handle)?;
        let a = srq.query()?;
        let o = s::QuerySrqResp {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
            reserved: 0,
        };
        respond(b, &o.to_bytes())
    }

    /// `IB_USER_VERBS_CMD_DESTROY_SRQ`: the response counts the events the process read;
    /// `EBUSY` while a QP uses the SRQ.
    pub(in crate::uverbs::file) fn destroy_srq(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        let rep = Self::perform_destroy(inner, b, obj::SRQ, |r: &s::DestroySrq| r.srq_handle)?;
        let o = s::DestroySrqResp {
            events_reported: rep.events,
        };
        respond(b, &o.to_bytes())
    }
}
