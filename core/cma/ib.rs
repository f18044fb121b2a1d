// SPDX-License-Identifier: GPL-2.0

//! `AF_IB` ids and routes on InfiniBand ports (upstream `cma.c`: `cma_translate_ib()` with
//! `cma_acquire_dev_by_src_ip()` for a bound GID, `cma_select_ib_ps()`,
//! `cma_resolve_ib_dev()`, `cma_resolve_ib_addr()`, `cma_query_ib_route()` with
//! `cma_query_handler()`): a GID binds to the InfiniBand port whose table has it, a
//! destination GID resolves to a port of the same subnet, and the route is the SA's
//! PathRecord.

use super::sockaddr::{SockAddr, AF_IB, AF_INET, AF_INET6};
use super::{
    next_device, port_is_ib, CmEvent, CmEventType, CmId, CmState, DevBinding, PathRec, PortSpace,
};
use crate::attr::{GidType, PortState};
use crate::ib_device::DeviceCore;
use crate::net_notify::NetDevRef;
use crate::sa::{self, SaPathHandler, SaPathRec};
use kernel::prelude::*;
use kernel::sync::Arc;

/// `RDMA_IB_IP_PS_MASK`.
pub(super) const IB_IP_PS_MASK: u64 = 0xffff_ffff_ffff_0000;
/// `RDMA_IB_IP_PS_TCP`.
const IB_IP_PS_TCP: u64 = 0x0000_0000_0106_0000;
/// `RDMA_IB_IP_PS_UDP`.
const IB_IP_PS_UDP: u64 = 0x0000_0000_0111_0000;
/// `RDMA_IB_IP_PS_IB`.
const IB_IP_PS_IB: u64 = 0x0000_0000_013f_0000;

/// The binding of InfiniBand `port`'s GID `index` with `pkey` (upstream
/// `cma_translate_ib()`: the device address of an `AF_IB` id, no netdev).
fn binding(dev: &DeviceCore, port: u32, index: u32, pkey: u16) -> Result<DevBinding> {
    Ok(DevBinding {
        dev_index: dev.index(),
        node_guid: dev.attrs().node_guid,
        port,
        gid_index: index,
        sgid: dev.query_gid(port, index)?.0,
        gid_type: GidType::Ib,
        roce: false,
        ifindex: 0,
        smac: [0; 6],
        mtu: 0,
        pkey,
    })
}

/// upstream `cma_acquire_dev_by_src_ip()` on InfiniBand (`cma_validate_port()` with
/// `IB_GID_TYPE_IB` and no netdev): the binding of the first InfiniBand port whose GID table
/// has `gid`, with `pkey`.
///
/// # Errors
///
/// `ENODEV` when no port has it.
fn acquire_dev_by_ib_gid(gid: &[u8; 16], pkey: u16) -> Result<DevBinding> {
    let mut after = None;
    while let Some(dev) = next_device(after) {
        let core = dev.core();
        after = Some(core.index());
        for port in 1..=core.phys_port_cnt() {
            if !port_is_ib(core, port) {
                continue;
            }
            let Ok((n, _)) = core.cached_table_lens(port) else {
                continue;
            };
            for index in 0..n as u32 {
                if core.query_gid(port, index).is_ok_and(|g| g.0 == *gid) {
                    return binding(core, port, index, pkey);
                }
            }
        }
    }
    Err(ENODEV)
}

/// upstream `cma_acquire_dev_by_src_ip()` for an `AF_IB` address: the InfiniBand port whose
/// GID table has `addr`'s GID.
///
/// # Errors
///
/// `ENODEV` when no port has it.
pub(super) fn acquire_dev_by_gid(addr: &SockAddr) -> Result<DevBinding> {
    acquire_dev_by_ib_gid(&addr.ib_gid().ok_or(EINVAL)?, addr.ib_pkey())
}

/// upstream `cma_acquire_dev_by_src_ip()` for an IP address of an IPoIB interface
/// (`dev_addr.dev_type` `ARPHRD_INFINIBAND`): the InfiniBand port whose GID table has the GID
/// of the interface's hardware address, with the P_Key of its broadcast address
/// (`ib_addr_get_pkey()`); the interface is the id's (`bound_dev_if`).
///
/// # Errors
///
/// `ENODEV` when no port has the GID.
pub(super) fn acquire_dev_by_ipoib(
    ndev: &NetDevRef,
    gid: &[u8; 16],
    pkey: u16,
) -> Result<DevBinding> {
    let mut b = acquire_dev_by_ib_gid(gid, pkey)?;
    b.ifindex = ndev.ifindex();
    b.mtu = ndev.mtu();
    Ok(b)
}

/// upstream `cma_select_ib_ps()`: the port space an `AF_IB` source's service ID names, for
/// an id of space `ps` (an `RDMA_PS_IB` id takes any of them); the service ID and its mask
/// then cover the space.
pub(super) fn select_ib_ps(ps: PortSpace, src: &mut SockAddr) -> Option<PortSpace> {
    let (sid, mask) = src.ib_sid();
    let mask_ps = mask & IB_IP_PS_MASK;
    let sid = sid & mask_ps;
    let (sid_ps, sel) = if ps == PortSpace::Ib && sid == IB_IP_PS_IB & mask_ps {
        (IB_IP_PS_IB, PortSpace::Ib)
    } else if matches!(ps, PortSpace::Ib | PortSpace::Tcp) && sid == IB_IP_PS_TCP & mask_ps {
        (IB_IP_PS_TCP, PortSpace::Tcp)
    } else if matches!(ps, PortSpace::Ib | PortSpace::Udp) && sid == IB_IP_PS_UDP & mask_ps {
        (IB_IP_PS_UDP, PortSpace::Udp)
    } else {
        return None;
    };
    let port = src.port();
    src.set_ib_sid(sid_ps | u64::from(port), IB_IP_PS_MASK | mask);
    Some(sel)
}

/// upstream `cma_resolve_ib_dev()`: the first active InfiniBand port with `dst`'s P_Key
/// whose GID is the destination's or of its subnet; the source's GID becomes that port's.
///
/// # Errors
///
/// `ENODEV` when no port fits.
fn resolve_ib_dev(dst: &SockAddr) -> Result<DevBinding> {
    let dgid = dst.ib_gid().ok_or(EINVAL)?;
    let pkey = dst.ib_pkey();
    let mut after = None;
    while let Some(dev) = next_device(after) {
        let core = dev.core();
        after = Some(core.index());
        for port in 1..=core.phys_port_cnt() {
            if !port_is_ib(core, port) || core.find_cached_pkey(port, pkey).is_err() {
                continue;
            }
            let Ok(state) = core.get_cached_port_state(port) else {
                continue;
            };
            let Ok((n, _)) = core.cached_table_lens(port) else {
                continue;
            };
            for index in 0..n as u32 {
                let Ok(g) = core.query_gid(port, index) else {
                    continue;
                };
                if g.0 == dgid || (g.0[..8] == dgid[..8] && state == PortState::Active) {
                    return binding(core, port, index, pkey);
                }
            }
        }
    }
    Err(ENODEV)
}

/// upstream `cma_resolve_ib_addr()`: an id without a device takes the port
/// [`resolve_ib_dev`] finds; the destination GID is the address's;
/// `RDMA_CM_EVENT_ADDR_RESOLVED` follows from the workqueue.
///
/// # Errors
///
/// `ENODEV` when no port fits; `ENOMEM`.
pub(super) fn resolve_ib_addr(id: &Arc<CmId>) -> Result {
    {
        let mut s = id.st.lock();
        if s.dev.is_none() {
            let b = resolve_ib_dev(&s.dst)?;
            s.src.set_ib_gid(&b.sgid);
            s.src.set_ib_pkey(b.pkey);
            s.dev = Some(b);
        }
        s.dgid = s.dst.ib_gid().ok_or(EINVAL)?;
        s.hop_limit = 0;
    }
    id.queue_step(|s| {
        let ev = CmEvent::new(CmEventType::AddrResolved, 0);
        CmId::transition(s, CmState::AddrQuery, CmState::AddrResolved, ev)
    })
}

/// upstream `rdma_get_service_id()`: an `AF_IB` address's service ID, else the space's and
/// the port's.
pub(super) fn service_id(ps: PortSpace, addr: &SockAddr) -> u64 {
    match addr.family() {
        AF_IB => addr.ib_sid().0,
        _ => ((ps as u64) << 16) + u64::from(addr.port()),
    }
}

/// The answer of an id's route query (upstream `cma_query_handler()`).
struct RouteQuery {
    id: Arc<CmId>,
}

impl SaPathHandler for RouteQuery {
    fn done(&self, r: Result<SaPathRec>) {
        self.id.step_and_report(|s| {
            if s.state != CmState::RouteQuery {
                return None;
            }
            Some(match r {
                Ok(p) => {
                    s.route = Some(PathRec {
                        dgid: p.dgid,
                        sgid: p.sgid,
                        flow_label: p.flow_label,
                        hop_limit: p.hop_limit,
                        traffic_class: p.traffic_class,
                        reversible: p.reversible,
                        pkey: p.pkey,
                        sl: p.sl,
                        mtu: p.mtu,
                        rate: p.rate,
                        packet_life_time: p.packet_life_time,
                        dmac: [0; 6],
                        dlid: p.dlid,
                        slid: p.slid,
                        service_id: p.service_id,
                    });
                    s.state = CmState::RouteResolved;
                    CmEvent::new(CmEventType::RouteResolved, 0)
                }
                Err(e) => {
                    s.state = CmState::AddrResolved;
                    CmEvent::new(CmEventType::RouteError, e.to_errno())
                }
            })
        });
    }
}

/// upstream `cma_query_ib_route()`: a PathRecord query to the SA for the id's GIDs, P_Key
/// and service ID (and the traffic class of an `AF_IB` or IPv6 source, the ToS of an IPv4
/// one as the QoS class); the answer is the route, `RDMA_CM_EVENT_ROUTE_RESOLVED`, or
/// `RDMA_CM_EVENT_ROUTE_ERROR` with the query's error.
///
/// # Errors
///
/// The SA client's (`ENODEV`, `ENETUNREACH` without an SM); `ENOMEM`.
pub(super) fn ib_route(id: &Arc<CmId>, timeout_ms: u32) -> Result {
    let (b, rec, mut mask) = {
        let s = id.st.lock();
        let b = s.dev.ok_or(EINVAL)?;
        let mut rec = SaPathRec {
            sgid: b.sgid,
            dgid: s.dgid,
            pkey: b.pkey,
            numb_path: 1,
            reversible: true,
            service_id: service_id(id.ps, &s.dst),
            ..Default::default()
        };
        let mut mask = 0;
        match s.src.family() {
            AF_INET => {
                rec.qos_class = u16::from(s.tos.unwrap_or(0));
                mask |= sa::PR_QOS_CLASS;
            }
            AF_INET6 | AF_IB => {
                // sin6_flowinfo and sib_flowinfo sit at the same offset.
                let flow = u32::from_be_bytes({
                    let a = s.src.as_bytes();
                    [a[4], a[5], a[6], a[7]]
                });
                rec.traffic_class = (flow >> 20) as u8;
                mask |= sa::PR_TRAFFIC_CLASS;
            }
            _ => {}
        }
        (b, rec, mask)
    };
    mask |= sa::PR_DGID
        | sa::PR_SGID
        | sa::PR_PKEY
        | sa::PR_NUMB_PATH
        | sa::PR_REVERSIBLE
        | sa::PR_SERVICE_ID;
    let h = Arc::new(RouteQuery { id: id.clone() }, GFP_KERNEL)?;
    sa::path_rec_get(b.dev_index, b.port, &rec, mask, timeout_ms, h)
}
