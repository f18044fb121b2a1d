// SPDX-License-Identifier: GPL-2.0

//! The destination MAC of a RoCE address vector (upstream `verbs.c`:
//! `ib_resolve_eth_dmac()`, `ib_resolve_unicast_gid_dmac()`; `addr.c`:
//! `rdma_addr_find_l2_eth_by_grh()`): a multicast GID maps to its Ethernet multicast MAC, a
//! link-local destination from a RoCE v1 source GID carries its MAC in the EUI-64, every other
//! destination goes through the IP stack (route and neighbour out of the source GID's netdev,
//! `rust/net_route.rs`).

use crate::attr::{Gid, GidType};
use crate::ib_device::DeviceCore;
use crate::net_route::{l2_by_ip, IpPair};
use crate::verbs::GlobalRoute;
use kernel::prelude::*;

/// The IPv4 address of a v4-mapped GID (`::ffff:a.b.c.d`, upstream `ipv6_addr_v4mapped()`).
fn v4_of(g: &[u8; 16]) -> Option<[u8; 4]> {
    if g[..10].iter().all(|b| *b == 0) && g[10] == 0xff && g[11] == 0xff {
        Some([g[12], g[13], g[14], g[15]])
    } else {
        None
    }
}

/// upstream `rdma_is_multicast_addr()`: an IPv4 multicast address when v4-mapped, else
/// `ff00::/8`.
pub(crate) fn is_multicast(g: &[u8; 16]) -> bool {
    match v4_of(g) {
        Some(a) => a[0] & 0xf0 == 0xe0,
        None => g[0] == 0xff,
    }
}

/// upstream `rdma_link_local_addr()`: `fe80::/64`.
fn is_link_local(g: &[u8; 16]) -> bool {
    g[..8] == [0xfe, 0x80, 0, 0, 0, 0, 0, 0]
}

/// upstream `rdma_fill_sgid_attr()` → `rdma_get_gid_attr()` for an AV with a GRH: the source
/// GID index must name a valid entry of `port`'s table.
///
/// # Errors
///
/// `EINVAL` for a bad port or an index beyond the table, `ENODATA` for an empty entry (as
/// upstream, whatever the link layer).
pub fn check_sgid(dev: &DeviceCore, port: u32, index: u8) -> Result {
    match dev.query_gid(port, u32::from(index)) {
        Ok(_) => Ok(()),
        Err(e) if e == ENOENT => Err(ENODATA),
        Err(e) => Err(e),
    }
}

/// upstream `ib_resolve_eth_dmac()` for the AV `grh` on `port` of `dev`: the destination MAC,
/// and for a destination resolved through the IP stack the route's hop limit in
/// `grh.hop_limit` (as upstream). Sleeps (a neighbour may take up to a second).
///
/// # Errors
///
/// The source GID's errors (`EINVAL` for an empty entry, [`DeviceCore::query_gid`]); `ENODEV`
/// when the source GID has no netdev; `EINVAL` for a source and destination of different IP
/// families (upstream `rdma_resolve_ip()`); the route's errno (`ENETUNREACH`,
/// `EHOSTUNREACH`), `ETIMEDOUT` when the neighbour does not resolve (`rust/net_route.rs`).
pub fn resolve_eth_dmac(dev: &DeviceCore, port: u32, grh: &mut GlobalRoute) -> Result<[u8; 6]> {
    let d = grh.dgid.0;
    if is_multicast(&d) {
        // upstream ip_eth_mc_map() / ipv6_eth_mc_map().
        return Ok(match v4_of(&d) {
            Some(a) => [0x01, 0x00, 0x5e, a[1] & 0x7f, a[2], a[3]],
            None => [0x33, 0x33, d[12], d[13], d[14], d[15]],
        });
    }
    let index = u32::from(grh.sgid_index);
    let ty = dev.query_gid_type(port, index)?;
    if is_link_local(&d) && ty == GidType::RoceV1 {
        // upstream rdma_get_ll_mac().
        return Ok([d[8] ^ 2, d[9], d[10], d[13], d[14], d[15]]);
    }
    let Gid(s) = dev.query_gid(port, index)?;
    let ndev = dev.gid_ndev(port, index)?.ok_or(ENODEV)?;
    let ips = match (v4_of(&s), v4_of(&d)) {
        (Some(a), Some(b)) => IpPair::V4(a, b),
        (None, None) => IpPair::V6(s, d),
        _ => return Err(EINVAL),
    };
    let l2 = l2_by_ip(&ndev, ips)?;
    grh.hop_limit = l2.hop_limit;
    Ok(l2.mac)
}
