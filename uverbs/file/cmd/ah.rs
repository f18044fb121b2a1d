// SPDX-License-Identifier: GPL-2.0

//! The AH commands (upstream `ib_uverbs_create_ah()`; `ib_uverbs_destroy_ah()` is
//! [`WriteCtx::perform_destroy`]).

use crate::addr::{check_sgid, resolve_eth_dmac};
use crate::attr::{Gid, LinkLayer};
use crate::driver::Driver;
use crate::ib_device::DeviceCore;
use crate::uverbs::abi::{ids::obj, structs as s};
use crate::uverbs::file::cmd::{respond, WriteCtx};
use crate::uverbs::file::uobject::ObjKind;
use crate::uverbs::file::UFile;
use crate::verbs::{Ah, AhAttr, GlobalRoute};
use kernel::prelude::*;

/// The source GID check and the destination MAC of a user's AV with a GRH (upstream
/// `rdma_create_user_ah()` and `_ib_modify_qp()`: `rdma_fill_sgid_attr()`, then on a RoCE
/// port `ib_resolve_eth_dmac()` when `resolve`): `None` on a port that is not Ethernet.
///
/// # Errors
///
/// [`check_sgid`]'s (`EINVAL`, `ENODATA`), then [`resolve_eth_dmac`]'s.
pub(in crate::uverbs::file) fn eth_dmac(
    dev: &DeviceCore,
    port: u32,
    g: &mut GlobalRoute,
    resolve: bool,
) -> Result<Option<[u8; 6]>> {
    check_sgid(dev, port, g.sgid_index)?;
    let eth = dev
        .port_immutable(port)
        .is_ok_and(|i| i.link_layer == LinkLayer::Ethernet);
    if !eth || !resolve {
        return Ok(None);
    }
    resolve_eth_dmac(dev, port, g).map(Some)
}

impl<D: Driver> WriteCtx<'_, D> {
    /// `IB_USER_VERBS_CMD_CREATE_AH` (upstream `ib_uverbs_create_ah()`): `struct
    /// ib_uverbs_create_ah` (56 bytes: `attr` at 24 is `struct ib_uverbs_ah_attr`), checks in
    /// upstream's order: the port (`EINVAL`), the PD handle (`EINVAL`), then
    /// [`Ah::create_user`]. On an Ethernet port the destination MAC is resolved first
    /// ([`eth_dmac`], upstream `ib_resolve_eth_dmac()`), so the driver can hand it to the
    /// provider (mlx5: `mlx5_ib_create_ah_resp.dmac`).
    pub(in crate::uverbs::file) fn create_ah(&mut self) -> Result {
        let r = self.request::<s::CreateAh>()?;
        let ctx = self.inner.ctx()?.clone();
        let port = r.attr.port_num;
        self.file
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
            let mut g = GlobalRoute {
                dgid: Gid(g.dgid),
                flow_label: g.flow_label,
                sgid_index: g.sgid_index,
                hop_limit: g.hop_limit,
                traffic_class: g.traffic_class,
            };
            if let Some(mac) = eth_dmac(&self.file.dev, u32::from(port), &mut g, true)? {
                ah.dmac = mac;
            }
            ah.grh = Some(g);
        }
        let ah = self.with_user_ctx(&ctx, |uc| Ah::create_user(&pd, &ah, uc))?;
        self.commit_new(obj::AH, ObjKind::Ah(ah), |b, ah_handle| {
            respond(b, &s::CreateAhResp { ah_handle }.to_bytes())
        })
    }
}
