// SPDX-License-Identifier: GPL-2.0

//! The memory window commands (upstream `ib_uverbs_alloc_mw()`; `ib_uverbs_dealloc_mw()` is
//! [`WriteCtx::perform_destroy`]).

use crate::driver::Driver;
use crate::uverbs::abi::{ids::obj, structs as s};
use crate::uverbs::file::cmd::{respond, WriteCtx};
use crate::uverbs::file::uobject::ObjKind;
use crate::uverbs::file::UFile;
use crate::verbs::{Mw, MwType};
use kernel::prelude::*;

impl<D: Driver> WriteCtx<'_, D> {
    /// `IB_USER_VERBS_CMD_ALLOC_MW` (upstream `ib_uverbs_alloc_mw()`): `struct
    /// ib_uverbs_alloc_mw` (16 bytes, the driver's request after it). Checks in upstream's
    /// order: the PD handle (`uobj_get_obj_read()` passes the lookup's error on: an unknown
    /// handle `ENOENT`, another type `EINVAL`; rdma_rxe in the same VM answers `ENOENT`), the
    /// type (1 or 2, else `EINVAL`), then the driver. Upstream checks no device capability here (a driver without
    /// `alloc_mw` has no ALLOC_MW command: `EOPNOTSUPP`). The response is `mw_handle` and the
    /// rkey.
    pub(in crate::uverbs::file) fn alloc_mw(&mut self) -> Result {
        let r = self.request::<s::AllocMw>()?;
        let ctx = self.inner.ctx()?.clone();
        let pd = UFile::pd_by_handle(self.inner, r.pd_handle)?;
        let mw_type = MwType::from_abi(r.mw_type).ok_or(EINVAL)?;
        let mw = self.with_user_ctx(&ctx, |uc| Mw::alloc_user(&pd, mw_type, uc))?;
        let rkey = mw.rkey();
        self.commit_new(obj::MW, ObjKind::Mw(mw), |b, mw_handle| {
            respond(b, &s::AllocMwResp { mw_handle, rkey }.to_bytes())
        })
    }
}
