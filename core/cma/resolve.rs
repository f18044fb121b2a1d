// SPDX-License-Identifier: GPL-2.0

//! An id's address and route on RoCE (upstream `cma.c`: `cma_acquire_dev_by_src_ip()`,
//! `cma_bind_loopback()`, `addr_handler()`, `cma_resolve_iboe_route()`; `addr.c`:
//! `rdma_resolve_ip()`'s queued request): the device and GID of a source IP, the neighbour
//! of a destination resolved on the core's workqueue, the route built from the resolved
//! address.

use super::sockaddr::{ip_to_gid, SockAddr, AF_INET};
use super::{
    gid_ndev, next_device, port_active, port_is_roce, CmEvent, CmEventType, CmId, CmState,
    DevBinding, PathRec, PortSpace,
};
use crate::attr::{Gid, GidType};
use crate::ib_device::DeviceCore;
use crate::net_notify::{IpAddr, NetDevRef};
use crate::net_route::{try_once, IpPair, L2Dest};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::time::{delay::fsleep, Delta};

/// upstream `CMA_PREFERRED_ROCE_GID_TYPE`: an id's GID is RoCE v2 where the port has it.
fn default_gid_type(dev: &DeviceCore, port: u32) -> Option<GidType> {
    let imm = dev.port_immutable(port).ok()?;
    let types = crate::roce_gid::port_gid_types(imm.core_cap_flags);
    if types.contains(&GidType::RoceV2) {
        Some(GidType::RoceV2)
    } else {
        types.first().copied()
    }
}

/// The binding of `dev`'s `port` GID entry `index` whose netdev is `ndev`.
fn binding(dev: &DeviceCore, port: u32, index: u32, ndev: &NetDevRef) -> Result<DevBinding> {
    Ok(DevBinding {
        dev_index: dev.index(),
        node_guid: dev.attrs().node_guid,
        port,
        gid_index: index,
        sgid: dev.query_gid(port, index)?.0,
        gid_type: dev.query_gid_type(port, index)?,
        roce: true,
        ifindex: ndev.ifindex(),
        smac: ndev.mac()?,
        mtu: ndev.mtu(),
        pkey: 0xffff,
    })
}

/// upstream `cma_acquire_dev_by_src_ip()`: on an IPoIB interface the InfiniBand port whose
/// GID table has the GID of the interface's hardware address (`core/cma/ib.rs`); on any other
/// the RoCE port whose GID table has `ip`'s GID, of the port's default type, on `ndev`.
///
/// # Errors
///
/// `EINVAL` for an id of `RDMA_PS_IPOIB` on an interface that is not IPoIB (upstream takes an
/// IPoIB id only on an InfiniBand one); `ENODEV` when no port has it.
pub(super) fn acquire_dev_by_ip(ps: PortSpace, ip: IpAddr, ndev: &NetDevRef) -> Result<DevBinding> {
    if let Some((gid, pkey)) = ndev.link().ipoib_gid_pkey() {
        return super::ib::acquire_dev_by_ipoib(ndev, &gid, pkey);
    }
    if ps == PortSpace::Ipoib {
        return Err(EINVAL);
    }
    let gid = Gid(ip_to_gid(ip));
    let ifindex = ndev.ifindex();
    let mut after = None;
    while let Some(dev) = next_device(after) {
        let core = dev.core();
        after = Some(core.index());
        for port in 1..=core.phys_port_cnt() {
            if !port_is_roce(core, port) {
                continue;
            }
            let Some(want) = default_gid_type(core, port) else {
                continue;
            };
            let Ok((n, _)) = core.cached_table_lens(port) else {
                continue;
            };
            for index in 0..n as u32 {
                let hit = core.query_gid(port, index).is_ok_and(|g| g == gid)
                    && core.query_gid_type(port, index).is_ok_and(|t| t == want)
                    && core
                        .gid_ndev_ifindex(port, index)
                        .is_ok_and(|i| i == ifindex);
                if hit {
                    return binding(core, port, index, ndev);
                }
            }
        }
    }
    Err(ENODEV)
}

/// upstream `cma_resolve_loopback()` with `cma_bind_loopback()`: an unbound id takes the
/// first device's first active port (else port 1) and its GID 0; the destination is the
/// source. The event follows from the workqueue.
pub(super) fn resolve_loopback(id: &Arc<CmId>) -> Result {
    let bound = id.st.lock().dev;
    if bound.is_none() {
        let mut found = None;
        let mut after = None;
        while let Some(dev) = next_device(after) {
            let core = dev.core();
            after = Some(core.index());
            let ports = 1..=core.phys_port_cnt();
            let port = ports
                .clone()
                .find(|p| port_is_roce(core, *p) && port_active(core, *p));
            if let Some(p) = port.or_else(|| ports.clone().find(|p| port_is_roce(core, *p))) {
                let ndev = core.gid_ndev(p, 0)?.ok_or(ENODEV)?;
                found = Some(binding(core, p, 0, &ndev)?);
                if port.is_some() {
                    break;
                }
            }
        }
        let b = found.ok_or(ENODEV)?;
        let mut s = id.st.lock();
        // No interface: upstream's loopback binding leaves `bound_dev_if` as it was.
        s.dev = Some(b);
        // upstream cma_set_loopback().
        let port = s.src.port();
        s.src = match s.src.family() {
            AF_INET => SockAddr::from_ip(IpAddr::V4([127, 0, 0, 1]), port),
            _ => {
                let mut l = [0u8; 16];
                l[15] = 1;
                SockAddr::from_ip(IpAddr::V6(l), port)
            }
        };
    }
    id.queue_step(|s| {
        let b = s.dev?;
        let ev = CmEvent::new(CmEventType::AddrResolved, 0);
        let ev = CmId::transition(s, CmState::AddrQuery, CmState::AddrResolved, ev)?;
        s.dgid = b.sgid;
        s.dmac = b.smac;
        s.hop_limit = 1;
        Some(ev)
    })
}

/// The pause between two neighbour lookups.
const RETRY_MS: u32 = 10;

/// Queues the neighbour's resolution of `dst` from `src` out of `ndev` (upstream
/// `rdma_resolve_ip()`'s request, retried until `timeout_ms`), then `addr_handler()`.
pub(super) fn queue_addr_work(
    id: Arc<CmId>,
    ndev: NetDevRef,
    src: IpAddr,
    dst: IpAddr,
    timeout_ms: u32,
) -> Result {
    let ips = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => IpPair::V4(s, d),
        (IpAddr::V6(s), IpAddr::V6(d)) => IpPair::V6(s, d),
        _ => return Err(EINVAL),
    };
    crate::wq::queue().try_spawn(GFP_KERNEL, move || {
        let mut waited = 0;
        let r = loop {
            match try_once(&ndev, ips) {
                Err(e) if e == ENODATA => {}
                r => break r,
            }
            // upstream process_one_req(): past the timeout an unresolved request fails.
            if waited >= timeout_ms {
                break Err(ETIMEDOUT);
            }
            fsleep(Delta::from_millis(i64::from(RETRY_MS)));
            waited += RETRY_MS;
        };
        addr_handler(&id, r, src, dst, &ndev);
    })?;
    Ok(())
}

/// The destination GID of a resolution: on an InfiniBand port the GID of the destination's
/// IPoIB hardware address (upstream `rdma_addr_get_dgid()`: `dst_dev_addr` bytes 4..20), which
/// the route's interface must be; on RoCE the destination IP's.
///
/// # Errors
///
/// `ENODEV` for an InfiniBand port whose destination was resolved out of an interface that
/// is not IPoIB.
fn resolved_dgid(b: &DevBinding, l2: &L2Dest, dst: IpAddr, ndev: &NetDevRef) -> Result<[u8; 16]> {
    if b.roce {
        return Ok(ip_to_gid(dst));
    }
    if ndev.link().ty != crate::netdev::ARPHRD_INFINIBAND {
        return Err(ENODEV);
    }
    let mut g = [0u8; 16];
    g.copy_from_slice(&l2.ha[4..]);
    Ok(g)
}

/// upstream `addr_handler()`: the resolution's outcome; an unbound id takes the device of
/// the source the route chose.
fn addr_handler(id: &Arc<CmId>, r: Result<L2Dest>, src: IpAddr, dst: IpAddr, ndev: &NetDevRef) {
    id.step_and_report(|s| {
        if s.state != CmState::AddrQuery {
            return None;
        }
        let r = r.and_then(|l2| {
            let b = match s.dev {
                Some(b) => (b, false),
                None => (acquire_dev_by_ip(id.ps, src, ndev)?, true),
            };
            let dgid = resolved_dgid(&b.0, &l2, dst, ndev)?;
            Ok((l2, b.1.then_some(b.0), dgid))
        });
        match r {
            Ok((l2, b, dgid)) => {
                if let Some(b) = b {
                    s.dev = Some(b);
                }
                s.state = CmState::AddrResolved;
                s.src.set_ip(src);
                s.dgid = dgid;
                s.dmac = l2.mac;
                s.hop_limit = l2.hop_limit;
                Some(CmEvent::new(CmEventType::AddrResolved, 0))
            }
            Err(e) => {
                s.state = CmState::AddrBound;
                Some(CmEvent::new(CmEventType::AddrError, e.to_errno()))
            }
        }
    });
}

/// upstream `iboe_get_mtu()`: the IB MTU (`enum ib_mtu`) a RoCE frame of netdev MTU `mtu`
/// carries, after the GRH, UDP, BTH, XRC, AtomicETH and ICRC bytes.
pub(super) fn iboe_get_mtu(mtu: u32) -> u8 {
    let m = mtu.saturating_sub(40 + 8 + 12 + 4 + 28 + 4);
    match m {
        4096.. => 5,
        2048.. => 4,
        1024.. => 3,
        512.. => 2,
        256.. => 1,
        _ => 0,
    }
}

/// `IB_GRH_FLOWLABEL_MASK`.
const FLOWLABEL_MASK: u32 = 0x000f_ffff;
/// upstream `CMA_IBOE_PACKET_LIFETIME`.
const IBOE_PACKET_LIFETIME: u8 = 16;

/// upstream `cma_resolve_iboe_route()`: the path record of a RoCE id from its resolved
/// address; `RDMA_CM_EVENT_ROUTE_RESOLVED` follows from the workqueue.
pub(super) fn iboe_route(id: &Arc<CmId>) -> Result {
    let (b, bound_if, src, dst, dgid, dmac, hop, tos, ack) = {
        let s = id.st.lock();
        let b = s.dev.ok_or(EINVAL)?;
        (
            b,
            s.bound_dev_if,
            s.src,
            s.dst,
            s.dgid,
            s.dmac,
            s.hop_limit,
            s.tos.unwrap_or(0),
            s.ack_timeout,
        )
    };
    if !b.roce {
        return Err(EOPNOTSUPP);
    }
    // upstream cma_iboe_set_path_rec_l2_fields(): the id's interface; an id that has none (a
    // loopback binding of an id never routed) has no route.
    if bound_if == 0 {
        return Err(ENODEV);
    }
    let ndev = gid_ndev(&b).ok_or(ENODEV)?;
    let mtu = iboe_get_mtu(ndev.mtu());
    drop(ndev);
    if mtu == 0 {
        return Err(EINVAL);
    }
    // upstream cma_get_roce_udp_flow_label(): the ports' hash unless an IPv6 source has one.
    let flow_label = if b.gid_type == GidType::RoceV2 {
        let sport = u32::from(src.port());
        let dport = u32::from(dst.port());
        (sport * 31 + dport) & FLOWLABEL_MASK
    } else {
        0
    };
    let path = PathRec {
        dgid,
        sgid: b.sgid,
        flow_label,
        hop_limit: hop,
        traffic_class: tos,
        reversible: true,
        pkey: 0xffff,
        // upstream iboe_tos_to_sl(): the VLAN egress map's priority; 0 without a VLAN.
        sl: 0,
        mtu,
        // IB_RATE_PORT_CURRENT.
        rate: 0,
        packet_life_time: match ack {
            Some(t) if t != 0 => t - 1,
            _ => IBOE_PACKET_LIFETIME,
        },
        dmac,
        dlid: 0,
        slid: 0,
        service_id: 0,
    };
    id.st.lock().route = Some(path);
    id.queue_step(|s| {
        let ev = CmEvent::new(CmEventType::RouteResolved, 0);
        CmId::transition(s, CmState::RouteQuery, CmState::RouteResolved, ev)
    })
}

#[kunit_tests(ib_core_rs_cma_route)]
mod tests {
    use super::*;

    #[test]
    fn iboe_mtu_leaves_room_for_the_headers() {
        // upstream: a 1500-byte netdev carries 1024-byte RoCE payloads, 9000 bytes 4096.
        assert_eq!(iboe_get_mtu(1500), 3);
        assert_eq!(iboe_get_mtu(9000), 5);
        assert_eq!(iboe_get_mtu(1120), 3);
        assert_eq!(iboe_get_mtu(1119), 2);
        assert_eq!(iboe_get_mtu(300), 0);
    }

    #[test]
    fn an_ipoib_address_gives_the_gid_and_the_broadcast_pkey() {
        use crate::ipoib::{broadcast, HwAddr};
        use crate::netdev::{LinkInfo, ARPHRD_INFINIBAND, INFINIBAND_ALEN};
        let gid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 7];
        let hw = HwAddr {
            flags: 0,
            qpn: 0x48,
            gid: Gid(gid),
        };
        let mut l = LinkInfo {
            ty: ARPHRD_INFINIBAND,
            addr_len: INFINIBAND_ALEN as u8,
            addr: [0; 32],
            broadcast: [0; 32],
        };
        l.addr[..INFINIBAND_ALEN].copy_from_slice(&hw.encode());
        l.broadcast[..INFINIBAND_ALEN].copy_from_slice(&broadcast(0x7fff));
        // upstream ib_addr_get_pkey(): broadcast bytes 8 and 9, the full-member P_Key.
        assert_eq!(l.ipoib_gid_pkey(), Some((gid, 0xffff)));
        l.broadcast[..INFINIBAND_ALEN].copy_from_slice(&broadcast(0x0012));
        assert_eq!(l.ipoib_gid_pkey(), Some((gid, 0x8012)));
        // An Ethernet interface has no IPoIB address.
        l.ty = 1;
        l.addr_len = 6;
        assert_eq!(l.ipoib_gid_pkey(), None);
    }
}
