// SPDX-License-Identifier: GPL-2.0

//! The AH commands (upstream `ib_uverbs_create_ah()`; `ib_uverbs_destroy_ah()` is
//! [`WriteCtx::perform_destroy`]).

use crate::attr::{Gid, LinkLayer};
use crate::driver::Driver;
use crate::uverbs::abi::{ids::obj, structs as s};
use crate::uverbs::file::cmd::{respond, WriteCtx};
use crate::uverbs::file::uobject::ObjKind;
use crate::uverbs::file::UFile;
use crate::verbs::{Ah, AhAttr, GlobalRoute};
use kernel::prelude::*;

/// upstream `rdma_get_ll_mac()`: the MAC of a link-local (EUI-64) GID.
pub(in crate::uverbs::file) fn ll_mac(gid: &[u8; 16]) -> Option<[u8; 6]> {
    if gid[0] != 0xfe || gid[1] & 0xc0 != 0x80 || gid[11] != 0xff || gid[12] != 0xfe {
        return None;
    }
    Some([gid[8] ^ 2, gid[9], gid[10], gid[13], gid[14], gid[15]])
}

impl<D: Driver> WriteCtx<'_, D> {
    /// `IB_USER_VERBS_CMD_CREATE_AH` (upstream `ib_uverbs_create_ah()`): `struct
    /// ib_uverbs_create_ah` (56 bytes: `attr` at 24 is `struct ib_uverbs_ah_attr`), checks in
    /// upstream's order: the port (`EINVAL`), the PD handle (`EINVAL`), then
    /// [`Ah::create_user`]. On an Ethernet port the destination MAC of a link-local GID is
    /// derived from it (upstream `ib_resolve_eth_dmac()`), so the driver can hand it to the
    /// provider (mlx5: `mlx5_ib_create_ah_resp.dmac`).
    pub(in crate::uverbs::file) fn create_ah(&mut self) -> Result {
        let r = self.request::<s::CreateAh>()?;
        let ctx = self.inner.ctx()?.clone();
        let port = r.attr.port_num;
        let imm = self
            .file
            .dev
            .port_immutable(u32::from(port))
            .map_err(|_| EINVAL)?;
        // upstream: uobj_get_obj_read() failing is EINVAL here.
        let pd = UFile::pd_by_handle(self.inner, r.pd_handle).map_err(|_| EINVAL)?;
        let mut ah = AhAttr {
            dlid: r.attr.dlid,
            sl: r.attr.sl,
            port_num: u32::from(port),
            ..AhAttr::default()
        };
        if r.attr.is_global != 0 {
            let g = &r.attr.grh;
            let dgid = g.dgid;
            ah.grh = Some(GlobalRoute {
                dgid: Gid(dgid),
                flow_label: g.flow_label,
                sgid_index: g.sgid_index,
                hop_limit: g.hop_limit,
                traffic_class: g.traffic_class,
            });
            if imm.link_layer == LinkLayer::Ethernet {
                if let Some(mac) = ll_mac(&dgid) {
                    ah.dmac = mac;
                }
            }
        }
        let ah = self.with_user_ctx(&ctx, |uc| Ah::create_user(&pd, &ah, uc))?;
        self.commit_new(obj::AH, ObjKind::Ah(ah), |b, ah_handle| {
            respond(b, &s::CreateAhResp { ah_handle }.to_bytes())
        })
    }
}
