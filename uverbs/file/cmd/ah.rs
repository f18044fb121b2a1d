// SPDX-License-Identifier: GPL-2.0

//! The AH commands (upstream `ib_uverbs_create_ah()`, `ib_uverbs_destroy_ah()`).

use crate::attr::{Gid, LinkLayer};
use crate::driver::Driver;
use crate::uverbs::abi::ids::obj;
use crate::uverbs::file::cmd::{rd16, rd32, rd8, rd_bytes, request, with_udata, WriteBufs};
use crate::uverbs::file::uobject::{Inner, ObjKind};
use crate::uverbs::file::{copy_out_or_zero, UFile};
use crate::verbs::{Ah, AhAttr, GlobalRoute, UserCtx};
use kernel::prelude::*;

/// upstream `rdma_get_ll_mac()`: the MAC of a link-local (EUI-64) GID.
pub(in crate::uverbs::file) fn ll_mac(gid: &[u8; 16]) -> Option<[u8; 6]> {
    if gid[0] != 0xfe || gid[1] & 0xc0 != 0x80 || gid[11] != 0xff || gid[12] != 0xfe {
        return None;
    }
    Some([gid[8] ^ 2, gid[9], gid[10], gid[13], gid[14], gid[15]])
}

impl<D: Driver> UFile<D> {
    /// `IB_USER_VERBS_CMD_CREATE_AH` (upstream `ib_uverbs_create_ah()`): `struct
    /// ib_uverbs_create_ah` (56 bytes: `attr` at 24 is `struct ib_uverbs_ah_attr`), checks in
    /// upstream's order: the port (`EINVAL`), the PD handle (`EINVAL`), then
    /// [`Ah::create_user`]. On an Ethernet port the destination MAC of a link-local GID is
    /// derived from it (upstream `ib_resolve_eth_dmac()`), so the driver can hand it to the
    /// provider (mlx5: `mlx5_ib_create_ah_resp.dmac`).
    pub(in crate::uverbs::file) fn create_ah(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        let r = request::<56>(&b.core_in)?;
        let ctx = inner.ctx()?.clone();
        let port = rd8(&r, 54);
        let imm = self
            .dev
            .port_immutable(u32::from(port))
            .map_err(|_| EINVAL)?;
        // upstream: uobj_get_obj_read() failing is EINVAL here.
        let pd = Self::pd_by_handle(inner, rd32(&r, 16)).map_err(|_| EINVAL)?;
        let mut ah = AhAttr {
            dlid: rd16(&r, 48),
            sl: rd8(&r, 50),
            port_num: u32::from(port),
            ..AhAttr::default()
        };
        if rd8(&r, 53) != 0 {
            let dgid = rd_bytes::<16>(&r, 24);
            ah.grh = Some(GlobalRoute {
                dgid: Gid(dgid),
                flow_label: rd32(&r, 40),
                sgid_index: rd8(&r, 44),
                hop_limit: rd8(&r, 45),
                traffic_class: rd8(&r, 46),
            });
            if imm.link_layer == LinkLayer::Ethernet {
                if let Some(mac) = ll_mac(&dgid) {
                    ah.dmac = mac;
                }
            }
        }
        let ah = with_udata(b, |ud| {
            Ah::create_user(&pd, &ah, &mut UserCtx::new(&ctx, ud))
        })?;
        let id = inner.free_id(None);
        let out = b.core_out;
        Self::commit_and_respond(inner, id, obj::AH, ObjKind::Ah(ah), || {
            copy_out_or_zero(out.0, out.1, &id.to_ne_bytes())
        })
    }

    /// `IB_USER_VERBS_CMD_DESTROY_AH` (upstream `ib_uverbs_destroy_ah()`).
    pub(in crate::uverbs::file) fn destroy_ah(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        inner.ctx()?;
        let r = request::<4>(&b.core_in)?;
        let pos = inner.find(obj::AH, i64::from(rd32(&r, 0)))?;
        Self::destroy_at(inner, pos).map(|_| ())
    }
}
