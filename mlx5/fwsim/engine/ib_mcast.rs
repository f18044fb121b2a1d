// SPDX-License-Identifier: GPL-2.0

//! UD multicast on an InfiniBand fabric (IBA 10.5, 18.2.4.3.3): a UD SEND to a multicast LID
//! (0xC000..0xFFFE) with destination QPN 0xffffff goes to the fabric's switch, which sends a
//! copy out of every port of the MLID's multicast forwarding entry (`switch.rs`
//! [`Switch::route_mlid`](crate::fwsim::switch::Switch::route_mlid); an unprogrammed MLID is
//! dropped) but the one it came in on. At each function port reached, every UD QP of that
//! port attached to the group (ATTACH_TO_MCG, `mcg.rs`) whose MGID is the packet's
//! destination GID gets a copy, as a UD receive with the GRH; the packet must carry a GRH (a
//! ConnectX attaches QPs by MGID). The sender completes once the packet is sent, whoever
//! receives it. Not modeled: the HCA's own loopback of a group's packet to the sender's port.

use super::completer::ReqRes;
use super::fabric::Node;
use super::message::Message;
use super::qp_state::{snap, Snap};
use super::responder;
use super::smp::node_at;
use crate::fwsim::mcg;

/// The first and last multicast LIDs (the permissive LID is none).
const MLIDS: core::ops::RangeInclusive<u16> = 0xc000..=0xfffe;

/// The BTH destination QPN of a multicast packet (IBA 9.8.1.1).
const MULTICAST_QPN: u32 = 0x00ff_ffff;

/// Whether `dlid` is a multicast LID.
pub(super) fn is_mlid(dlid: u16) -> bool {
    MLIDS.contains(&dlid)
}

/// UD message `m` of QP `s` (node `ni`) to a multicast LID: what the requester completes
/// with (the message is sent whatever reaches it).
pub(super) fn send(nodes: &mut [Node<'_>], ni: usize, s: &Snap, m: &Message<'_>) -> ReqRes {
    let (mlid, mgid, dqpn) = m.dest;
    let sent = m.dropped();
    if dqpn != MULTICAST_QPN || !m.av.is_some_and(|a| a.grh) {
        return sent;
    }
    let Some(w) = nodes.iter().find_map(|n| n.wire.as_ref()) else {
        return sent;
    };
    let first_ports = w.first_ports;
    let in_port = first_ports
        .get(ni)
        .and_then(|f| f.checked_add(u8::try_from(s.port).ok()?));
    let Some(mask) = w.switch.route_mlid(mlid) else {
        return sent;
    };
    if let Some(n) = nodes.get_mut(ni) {
        n.fw.count_traffic(s.port, |t| t.xmit(1, m.len));
    }
    for k in (1..64u8).filter(|k| mask & (1 << k) != 0 && Some(*k) != in_port) {
        let Some((di, dport)) = node_at(nodes, first_ports, k) else {
            continue;
        };
        let mut qpns = [0u32; mcg::MAX_ATTACH];
        let cnt = nodes.get(di).map_or(0, |n| {
            let ok = n.fw.port_up(dport)
                && n.fw
                    .sma(dport)
                    .is_some_and(|p| p.state == crate::fwsim::sma::port_state::ACTIVE);
            if ok {
                n.fw.mcg.members(&mgid, &mut qpns)
            } else {
                0
            }
        });
        let mut got = false;
        for qpn in qpns.iter().take(cnt).copied() {
            // Only the port's own QPs: a QP is on one port.
            let on_port = nodes.get(di).is_some_and(|n| {
                n.fw.qps
                    .slot_of(qpn)
                    .and_then(|slot| snap(n.fw, slot))
                    .is_some_and(|d| d.port == dport)
            });
            if on_port {
                let copy = Message {
                    dest: (mlid, mgid, qpn),
                    ..*m
                };
                got |= matches!(
                    responder::receive(nodes, ni, s, &copy, di),
                    ReqRes::Ok { .. }
                );
            }
        }
        if got {
            if let Some(n) = nodes.get_mut(di) {
                n.fw.count_traffic(dport, |t| t.rcv(1, m.len));
            }
        }
    }
    sent
}
