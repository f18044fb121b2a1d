// SPDX-License-Identifier: GPL-2.0

//! The MR commands (upstream `ib_uverbs_reg_mr()`, `ib_uverbs_rereg_mr()`).

use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::{ids::obj, structs as s};
use crate::uverbs::file::cmd::{respond, WriteCtx};
use crate::uverbs::file::uobject::ObjKind;
use crate::uverbs::file::UFile;
use crate::verbs::{AccessFlags, Mr, ReregFlags, UserMrReq};
use kernel::prelude::*;

impl<D: Driver> WriteCtx<'_, D> {
    /// `IB_USER_VERBS_CMD_REG_MR` (upstream `ib_uverbs_reg_mr()`).
    pub(in crate::uverbs::file) fn reg_mr(&mut self) -> Result {
        let r = self.request::<s::RegMr>()?;
        let req = UserMrReq {
            start: r.start,
            length: r.length,
            iova: r.hca_va,
            access: AccessFlags(r.access_flags),
        };
        let page_mask = (kernel::page::PAGE_SIZE as u64) - 1;
        if req.start & page_mask != req.iova & page_mask {
            return Err(EINVAL);
        }
        let ctx = self.inner.ctx()?.clone();
        req.access.check()?;
        let pd = UFile::pd_by_handle(self.inner, r.pd_handle)?;
        let mr = self.with_user_ctx(&ctx, |uc| {
            Mr::reg_user(&pd, &req, Owner::current_task(), uc)
        })?;
        let (lkey, rkey) = (mr.lkey(), mr.rkey());
        self.commit_new(obj::MR, ObjKind::Mr(mr), |b, mr_handle| {
            let o = s::RegMrResp {
                mr_handle,
                lkey,
                rkey,
            };
            respond(b, &o.to_bytes())
        })
    }

    /// `IB_USER_VERBS_CMD_REREG_MR` (upstream `ib_uverbs_rereg_mr()`): `struct
    /// ib_uverbs_rereg_mr` (48 bytes), checks in upstream's order: the flags and the
    /// translation's page offsets ([`ReregFlags::check_request`]), the MR handle (`ENOENT`,
    /// another type `EINVAL`), the access flags when they change, the new PD's handle when the
    /// PD changes, then [`Mr::rereg_user`]. An MR the driver changed in place keeps its handle
    /// and keys; a new MR takes the old one's handle and goes to the newest end of the file's
    /// objects (upstream `rdma_assign_uobject()` then `rdma_alloc_commit_uobject()`), and the
    /// old MR is deregistered (`uobj_put_destroy()`); the response is `{ lkey, rkey }` of the
    /// MR.
    pub(in crate::uverbs::file) fn rereg_mr(&mut self) -> Result {
        let r = self.request::<s::ReregMr>()?;
        let handle = r.mr_handle;
        let flags = ReregFlags(r.flags);
        let req = UserMrReq {
            start: r.start,
            length: r.length,
            iova: r.hca_va,
            access: AccessFlags(r.access_flags),
        };
        flags.check_request(req.start, req.iova)?;
        let ctx = self.inner.ctx()?.clone();
        let h = self.inner.find(obj::MR, i64::from(handle))?;
        let mr = match UFile::obj_at(self.inner, h)? {
            ObjKind::Mr(m) => m.clone(),
            _ => return Err(EINVAL),
        };
        if flags.has(ReregFlags::ACCESS) {
            req.access.check()?;
        }
        let new_pd = if flags.has(ReregFlags::PD) {
            Some(UFile::pd_by_handle(self.inner, r.pd_handle)?)
        } else {
            None
        };
        let new = self.with_user_ctx(&ctx, |uc| {
            Mr::rereg_user(&mr, flags, &req, new_pd.as_ref(), Owner::current_task(), uc)
        })?;
        // Changed in place (upstream: the driver returned NULL): the MR keeps its handle and
        // keys.
        let Some(new) = new else {
            let o = s::ReregMrResp {
                lkey: mr.lkey(),
                rkey: mr.rkey(),
            };
            return self.respond(&o.to_bytes());
        };
        drop(mr);
        let o = s::ReregMrResp {
            lkey: new.lkey(),
            rkey: new.rkey(),
        };
        // The new MR takes the handle and becomes the newest object.
        let old = self.inner.objs.renew(handle, ObjKind::Mr(new))?;
        if let Some(ObjKind::Mr(m)) = old {
            if let Err(e) = Mr::dereg(m) {
                ibdev_warn!(
                    self.file.dev.name(),
                    "rereg_mr: the old MR's dereg failed ({:?})\n",
                    e.err
                );
            }
        }
        self.respond(&o.to_bytes())
    }
}
