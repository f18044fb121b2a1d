// SPDX-License-Identifier: GPL-2.0

//! Multicast groups of a UD rdma_cm id (upstream `cma.c`: `rdma_join_multicast()`,
//! `cma_iboe_join_multicast()`, `cma_iboe_set_mgid()`, `cma_join_ib_multicast()`,
//! `cma_set_mgid()`, `cma_ib_mc_handler()`, `cma_make_mc_event()`, `rdma_leave_multicast()`,
//! `destroy_mc()`).
//!
//! A RoCE join is local, as upstream's: no SA; the group's GID is made from the address, a full
//! member of an IPv4 group on RoCE v2 joins it on the netdev (IGMP, `cma_igmp_send()`), and
//! `RDMA_CM_EVENT_MULTICAST_JOIN` follows from the workqueue with the address vector of the
//! group, QPN 0xffffff and the id's Q_Key.
//!
//! An InfiniBand join goes to the SA (`sa/mcast.rs`, upstream `ib_sa_join_multicast()`): an
//! MCMemberRecord of the group's MGID (an `AF_IB` address's GID, an SA-assigned MGID given as
//! an IPv6 address, or zero for the unspecified address: the SA creates a group), the id's
//! source GID, P_Key, Q_Key (`RDMA_UDP_QKEY`) and join state, with upstream's component mask;
//! the SA's answer gives `RDMA_CM_EVENT_MULTICAST_JOIN` with the address vector of
//! `ib_init_ah_from_mcmember()` (the MLID, the group's SL, a GRH to the MGID with its flow
//! label, hop limit and traffic class from the id's source GID), QPN 0xffffff and the
//! group's Q_Key; a refusal or no answer `RDMA_CM_EVENT_MULTICAST_ERROR` with the error.
//! Differences from upstream, which has IPoIB: upstream takes the SL, flow label and traffic
//! class of the request from the IPoIB broadcast group's record (`ib_sa_get_mcmember_rec()`,
//! `-EADDRNOTAVAIL` without IPoIB); rdma-rs has no IPoIB and asks for 0; an IP group address
//! on InfiniBand (mapped through the IPoIB broadcast address) is `EOPNOTSUPP`, and so is the
//! IPoIB port space's join (`EADDRNOTAVAIL`, its Q_Key is the broadcast group's).

use super::conn::{UdParam, UDP_QKEY};
use super::sockaddr::{SockAddr, AF_INET, AF_INET6};
use super::{gid_ndev, CmEvent, CmEventType, CmId, CmState, PortSpace, QPT_UD};
use crate::attr::{Gid, GidType};
use crate::net_notify::IpAddr;
use crate::sa::mcast::{self as sa_mc, SaMcastHandler, SaMulticast};
use crate::sa::{self, McMemberRec};
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
pub(super) struct Mc {
    /// The group's address.
    addr: SockAddr,
    /// The caller's context (ucma's multicast number), in the group's events.
    context: u64,
    /// The group's GID.
    mgid: [u8; 16],
    /// The interface whose IGMP membership the join took (0: none).
    igmp_ifindex: u32,
    /// The SA membership of an InfiniBand join (dropped: left).
    sa: Option<SaMulticast>,
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
    /// is gone; `ENOTSUPP` (524) for an IPv6 group on RoCE v2, as upstream; on InfiniBand
    /// `EOPNOTSUPP` for an IP group (no IPoIB), `EADDRNOTAVAIL` for the IPoIB port space and
    /// the SA client's errors (`ENODEV`); `ENOMEM`.
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
            return self.join_ib_multicast(&b, addr, join_state, context);
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
            sa: None,
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
        let id = self.clone();
        let r = crate::wq::queue().try_spawn(GFP_KERNEL, move || {
            // upstream cma_iboe_join_work_handler(): not after a removal or a leave.
            let h = id.handler.lock();
            let live = {
                let s = id.st.lock();
                !matches!(s.state, CmState::Destroying | CmState::DeviceRemoval)
                    && s.mcs.iter().any(|m| m.context == context && m.mgid == mgid)
            };
            if let (true, Some(h)) = (live, h.as_ref()) {
                let mut e = CmEvent::new(CmEventType::MulticastJoin, 0);
                e.ud = Some(ud);
                e.mc_context = context;
                h.event(&id, e);
            }
        });
        if let Err(e) = r {
            self.leave_multicast(addr);
            return Err(e.into());
        }
        Ok(())
    }

    /// upstream `cma_join_ib_multicast()`: the join goes to the SA (see the module comment).
    fn join_ib_multicast(
        self: &Arc<Self>,
        b: &super::DevBinding,
        addr: &SockAddr,
        join_state: u8,
        context: u64,
    ) -> Result {
        // upstream cma_set_default_qkey(): RDMA_UDP_QKEY for the UDP and IB spaces; IPoIB's
        // is the broadcast group's.
        let qkey = match self.ps {
            PortSpace::Udp | PortSpace::Ib => UDP_QKEY,
            _ => return Err(EADDRNOTAVAIL),
        };
        // upstream cma_set_mgid().
        let mgid = match (addr.is_any(), addr.family(), addr.ip()) {
            (true, _, _) => [0; 16],
            (false, super::sockaddr::AF_IB, _) => addr.ib_gid().ok_or(EINVAL)?,
            // An SA-assigned MGID as an IPv6 address (ff1x:a01b::).
            (false, AF_INET6, Some(IpAddr::V6(a)))
                if u32::from_be_bytes([a[0], a[1], a[2], a[3]]) & 0xfff0_ffff == 0xff10_a01b =>
            {
                a
            }
            _ => return Err(EOPNOTSUPP),
        };
        let rec = McMemberRec {
            mgid,
            port_gid: b.sgid,
            qkey,
            pkey: b.pkey,
            join_state,
            ..Default::default()
        };
        let mask = sa::MC_MGID
            | sa::MC_PORT_GID
            | sa::MC_PKEY
            | sa::MC_JOIN_STATE
            | sa::MC_QKEY
            | sa::MC_SL
            | sa::MC_FLOW_LABEL
            | sa::MC_TRAFFIC_CLASS;
        // The group first: the answer may come before the join returns.
        self.st.lock().mcs.push(
            Mc {
                addr: *addr,
                context,
                mgid,
                igmp_ifindex: 0,
                sa: None,
            },
            GFP_KERNEL,
        )?;
        let h = Arc::new(
            IbMcHandler {
                id: self.clone(),
                addr: *addr,
                context,
            },
            GFP_KERNEL,
        );
        let joined = h
            .map_err(Error::from)
            .and_then(|h| sa_mc::join_multicast(b.dev_index, b.port, &rec, mask, h));
        let mut s = self.st.lock();
        let pos = s
            .mcs
            .iter()
            .position(|m| m.context == context && m.addr.as_bytes() == addr.as_bytes());
        match (joined, pos) {
            (Ok(sa), Some(p)) => {
                if let Some(m) = s.mcs.get_mut(p) {
                    m.sa = Some(sa);
                }
                Ok(())
            }
            (Ok(sa), None) => {
                // Left meanwhile.
                drop(s);
                drop(sa);
                Ok(())
            }
            (Err(e), p) => {
                let gone = p.and_then(|p| s.mcs.remove(p).ok());
                drop(s);
                drop(gone);
                Err(e)
            }
        }
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

/// The SA's answer to an InfiniBand join (upstream `cma_ib_mc_handler()`).
struct IbMcHandler {
    id: Arc<CmId>,
    addr: SockAddr,
    context: u64,
}

impl SaMcastHandler for IbMcHandler {
    fn joined(&self, r: Result<McMemberRec>) {
        let id = &self.id;
        let h = id.handler.lock();
        // Not after a removal, a destroy or a leave.
        let b = {
            let s = id.st.lock();
            let live = !matches!(s.state, CmState::Destroying | CmState::DeviceRemoval)
                && s.mcs.iter().any(|m| {
                    m.context == self.context && m.addr.as_bytes() == self.addr.as_bytes()
                });
            s.dev.filter(|_| live)
        };
        let (Some(b), Some(h)) = (b, h.as_ref()) else {
            return;
        };
        // upstream cma_make_mc_event() -> ib_init_ah_from_mcmember().
        let mut e = match r {
            Ok(rec) => {
                let ud = UdParam {
                    ah_attr: Some(AhAttr {
                        dlid: rec.mlid,
                        sl: rec.sl,
                        port_num: b.port,
                        grh: Some(GlobalRoute {
                            dgid: Gid(rec.mgid),
                            flow_label: rec.flow_label,
                            sgid_index: b.gid_index as u8,
                            hop_limit: rec.hop_limit,
                            traffic_class: rec.traffic_class,
                        }),
                        dmac: [0; 6],
                    }),
                    qp_num: 0x00ff_ffff,
                    qkey: rec.qkey,
                    ..Default::default()
                };
                let mut e = CmEvent::new(CmEventType::MulticastJoin, 0);
                match KBox::new(ud, GFP_KERNEL) {
                    Ok(u) => e.ud = Some(u),
                    Err(_) => e = CmEvent::new(CmEventType::MulticastError, ENOMEM.to_errno()),
                }
                e
            }
            Err(err) => CmEvent::new(CmEventType::MulticastError, err.to_errno()),
        };
        e.mc_context = self.context;
        h.event(id, e);
    }
}

/// upstream `cma_igmp_send(ndev, mgid, false)`: the membership the join took.
fn igmp_leave(addr: &SockAddr, ifindex: u32) {
    if let Some(IpAddr::V4(a)) = addr.ip() {
        let _ = crate::net_addr::igmp(ifindex, a, false);
    }
}
