// SPDX-License-Identifier: GPL-2.0

//! Multicast groups of a UD rdma_cm id on RoCE (upstream `cma.c`: `rdma_join_multicast()`,
//! `cma_iboe_join_multicast()`, `cma_iboe_set_mgid()`, `cma_make_mc_event()`,
//! `rdma_leave_multicast()`, `destroy_mc()`). A RoCE join is local, as upstream's: no SA; the
//! group's GID is made from the address, a full member of an IPv4 group on RoCE v2 joins it on
//! the netdev (IGMP, `cma_igmp_send()`), and `RDMA_CM_EVENT_MULTICAST_JOIN` follows from the
//! workqueue with the address vector of the group, QPN 0xffffff and the id's Q_Key. Joins on
//! InfiniBand ports (MCMemberRecord from the SA) are not done: `EOPNOTSUPP`.

use super::conn::{UdParam, UDP_QKEY};
use super::sockaddr::{SockAddr, AF_INET, AF_INET6};
use super::{gid_ndev, CmEvent, CmEventType, CmId, CmState, PortSpace, QPT_UD};
use crate::attr::{Gid, GidType};
use crate::net_notify::IpAddr;
use crate::verbs::{AhAttr, GlobalRoute};
use kernel::prelude::*;
use kernel::sync::Arc;

/// upstream `BIT(FULLMEMBER_JOIN)`.
pub const JOIN_FULLMEMBER: u8 = 1 << 0;
/// upstream `BIT(SENDONLY_FULLMEMBER_JOIN)`.
pub const JOIN_SENDONLY_FULLMEMBER: u8 = 1 << 3;

/// upstream `IPV6_DEFAULT_HOPLIMIT`.
const IPV6_DEFAULT_HOPLIMIT: u8 = 64;

/// One group of an id (upstream `struct cma_multicast`).
#[derive(Clone, Copy)]
pub(super) struct Mc {
    /// The group's address.
    addr: SockAddr,
    /// The caller's context (ucma's multicast number), in the group's events.
    context: u64,
    /// The group's GID.
    mgid: [u8; 16],
    /// The interface whose IGMP membership the join took (0: none).
    igmp_ifindex: u32,
}

/// upstream `cma_iboe_set_mgid()`: an IPv6 address is the GID; an IPv4 one is mapped
/// (`::ffff:a.b.c.d` on RoCE v2, `ff0e::ffff:a.b.c.d` on RoCE v1); the unspecified address
/// gives the zero GID.
fn iboe_mgid(addr: &SockAddr, gid_type: GidType) -> [u8; 16] {
    let mut g = [0u8; 16];
    if addr.is_any() {
        return g;
    }
    match addr.ip() {
        Some(IpAddr::V6(a)) => g = a,
        Some(IpAddr::V4(a)) => {
            if gid_type != GidType::RoceV2 {
                g[0] = 0xff;
                g[1] = 0x0e;
            }
            g[10] = 0xff;
            g[11] = 0xff;
            g[12..].copy_from_slice(&a);
        }
        None => {}
    }
    g
}

impl CmId {
    /// Joins the group `addr` (upstream `rdma_join_multicast()` on a RoCE port); `join_state`
    /// is [`JOIN_FULLMEMBER`] or [`JOIN_SENDONLY_FULLMEMBER`], `context` comes back in the
    /// group's events ([`CmEvent::mc_context`]).
    ///
    /// # Errors
    ///
    /// `EINVAL` without a device, unless bound or resolved, for an id that is not UD, for the
    /// unspecified address or a netdev MTU too small for RoCE; `ENODEV` when the id's netdev
    /// is gone; `ENOTSUPP` (524) for an IPv6 group on RoCE v2, as upstream; `EOPNOTSUPP` on
    /// an InfiniBand port (SA joins are not done); `ENOMEM`.
    pub fn join_multicast(
        self: &Arc<Self>,
        addr: &SockAddr,
        join_state: u8,
        context: u64,
    ) -> Result {
        let (b, state, ifindex) = {
            let s = self.st.lock();
            (s.dev, s.state, s.bound_dev_if)
        };
        let b = b.ok_or(EINVAL)?;
        if state != CmState::AddrBound && state != CmState::AddrResolved {
            return Err(EINVAL);
        }
        if self.qp_type != QPT_UD {
            return Err(EINVAL);
        }
        if !b.roce {
            return Err(EOPNOTSUPP);
        }
        // upstream cma_iboe_join_multicast().
        let send_only = join_state == JOIN_SENDONLY_FULLMEMBER;
        if addr.is_any() {
            return Err(EINVAL);
        }
        let mgid = iboe_mgid(addr, b.gid_type);
        if ifindex == 0 {
            return Err(ENODEV);
        }
        let ndev = gid_ndev(&b).ok_or(ENODEV)?;
        let mtu = super::resolve::iboe_get_mtu(ndev.mtu());
        let mut hop_limit = 1;
        let mut igmp_ifindex = 0;
        if addr.family() == AF_INET {
            if b.gid_type == GidType::RoceV2 {
                hop_limit = IPV6_DEFAULT_HOPLIMIT;
                if !send_only {
                    let IpAddr::V4(a) = addr.ip().ok_or(EINVAL)? else {
                        return Err(EINVAL);
                    };
                    crate::net_addr::igmp(ndev.ifindex(), a, true)?;
                    igmp_ifindex = ndev.ifindex();
                }
            }
        } else if addr.family() == AF_INET6 && b.gid_type == GidType::RoceV2 {
            return Err(Error::from_errno(-524));
        }
        drop(ndev);
        let undo = || {
            if igmp_ifindex != 0 {
                igmp_leave(addr, igmp_ifindex);
            }
        };
        if mtu == 0 {
            undo();
            return Err(EINVAL);
        }
        // upstream cma_set_default_qkey(): RDMA_UDP_QKEY for the UDP and IB spaces.
        let qkey = match self.ps {
            PortSpace::Udp | PortSpace::Ib => UDP_QKEY,
            _ => 0,
        };
        // upstream cma_make_mc_event() -> ib_init_ah_from_mcmember(): the group's GID from the
        // id's source GID, no LID, rate of the port.
        let ud = UdParam {
            ah_attr: Some(AhAttr {
                dlid: 0,
                sl: 0,
                port_num: b.port,
                grh: Some(GlobalRoute {
                    dgid: Gid(mgid),
                    flow_label: 0,
                    sgid_index: b.gid_index as u8,
                    hop_limit,
                    traffic_class: 0,
                }),
                dmac: [0; 6],
            }),
            qp_num: 0x00ff_ffff,
            qkey,
            ..Default::default()
        };
        let mc = Mc {
            addr: *addr,
            context,
            mgid,
            igmp_ifindex,
        };
        {
            let mut s = self.st.lock();
            if let Err(e) = s.mcs.push(mc, GFP_KERNEL) {
                drop(s);
                undo();
                return Err(e.into());
            }
        }
        let ud = match KBox::new(ud, GFP_KERNEL) {
            Ok(u) => u,
            Err(e) => {
                self.leave_multicast(addr);
                return Err(e.into());
            }
        };
        // upstream cma_iboe_join_work_handler(): not after a removal or a leave.
        let r = self.queue_step(move |s| {
            let live = !matches!(s.state, CmState::Destroying | CmState::DeviceRemoval)
                && s.mcs.iter().any(|m| m.context == context && m.mgid == mgid);
            live.then(|| {
                let mut e = CmEvent::new(CmEventType::MulticastJoin, 0);
                e.ud = Some(ud);
                e.mc_context = context;
                e
            })
        });
        if let Err(e) = r {
            self.leave_multicast(addr);
            return Err(e);
        }
        Ok(())
    }

    /// Leaves the group `addr` (upstream `rdma_leave_multicast()`): its IGMP membership is
    /// dropped, a join event not yet reported is not.
    pub fn leave_multicast(&self, addr: &SockAddr) {
        let mc = {
            let mut s = self.st.lock();
            let pos = s
                .mcs
                .iter()
                .position(|m| m.addr.as_bytes() == addr.as_bytes());
            match pos {
                Some(p) => s.mcs.remove(p).ok(),
                None => None,
            }
        };
        if let Some(m) = mc {
            if m.igmp_ifindex != 0 {
                igmp_leave(&m.addr, m.igmp_ifindex);
            }
        }
    }

    /// Leaves every group (upstream `cma_leave_mc_groups()`, at destroy).
    pub(super) fn leave_all_multicast(&self) {
        let mcs = core::mem::take(&mut self.st.lock().mcs);
        for m in mcs.iter().filter(|m| m.igmp_ifindex != 0) {
            igmp_leave(&m.addr, m.igmp_ifindex);
        }
    }
}

/// upstream `cma_igmp_send(ndev, mgid, false)`: the membership the join took.
fn igmp_leave(addr: &SockAddr, ifindex: u32) {
    if let Some(IpAddr::V4(a)) = addr.ip() {
        let _ = crate::net_addr::igmp(ifindex, a, false);
    }
}
