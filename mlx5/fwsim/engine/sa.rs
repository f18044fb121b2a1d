// SPDX-License-Identifier: GPL-2.0

//! The embedded SM's subnet administrator: while the embedded SM runs, a GMP sent to QP1 of
//! the switch's LID (the ports' SM LID) is the SA's. A SubnAdmGet of a PathRecord
//! (IBA 15.2.5.16) is answered from the fabric: the source and destination ports found by the
//! record's SGID and DGID (each function port's GID 0: its GID prefix and port GUID) among
//! the ACTIVE ports with a LID; the answer (SubnAdmGetResp, one record: both LIDs and GIDs, the
//! service ID and traffic class asked for, hop limit 0, reversible, P_Key 0xffff, SL 0, MTU
//! 4096, rate 40 Gb/s, packet life time 18, every selector "exactly") arrives at the sender's
//! QP1 from the switch's LID. A record nobody has is `ERR_NO_RECORDS`. A SubnAdmSet
//! (join) or SubnAdmDelete (leave) of an MCMemberRecord (IBA 15.2.5.17) changes the SM's
//! multicast groups (`fwsim/mcmember.rs`; answered with SubnAdmGetResp and
//! SubnAdmDeleteResp); when a group's members changed, the SM programs the switch's
//! multicast forwarding table for its MLID with SMPs (`sm.rs` [`program_mft`]): the switch
//! ports of the member ports. Any other method or attribute is `UNSUPPORTED_METHOD` or
//! `UNSUPPORTED_METHOD_ATTRIB`. Other GMPs to the switch are dropped, as without an SM. Not
//! modeled: GetTable, other records, the SA's RMPP.

use super::completer::ReqRes;
use super::fabric::Node;
use super::responder::receive_mad;
use super::smp::{node_at, AtSwitch};
use crate::fwsim::mad::class::SUBN_ADM as CLASS_SA;
use crate::fwsim::mad::method::{
    GET as METHOD_GET, GET_RESP as METHOD_GET_RESP, SA_DELETE as METHOD_DELETE,
    SA_DELETE_RESP as METHOD_DELETE_RESP, SET as METHOD_SET,
};
use crate::fwsim::mad::status::{SA_ERR_NO_RECORDS, UNSUPPORTED_METHOD, UNSUPPORTED_METHOD_ATTRIB};
use crate::fwsim::mad::MadBytes;
use crate::fwsim::mcmember::{McGroups, REC_LEN};
use crate::fwsim::sm::program_mft;
use crate::fwsim::switch::PERMISSIVE_LID;
use crate::prm::consts::QPC_ST_QP1;

/// `IB_SA_ATTR_PATH_REC`, `IB_SA_ATTR_MC_MEMBER_REC`.
const ATTR_PATH_REC: u16 = 0x35;
const ATTR_MC_MEMBER_REC: u16 = 0x38;
/// The SA header's AttributeOffset and the record's data (`struct ib_sa_mad`).
const OFF_ATTR_OFFSET: usize = 44;
const OFF_COMP_MASK: usize = 48;
const OFF_DATA: usize = 56;
/// Component mask bits of the ServiceID (two) and TClass.
const PR_SERVICE_ID: u64 = 0b11;
const PR_TRAFFIC_CLASS: u64 = 1 << 10;

/// An ACTIVE InfiniBand port with a LID: its GID 0, LID and the switch port it is linked to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SaPort {
    pub(crate) gid: [u8; 16],
    pub(crate) lid: u16,
    pub(crate) sw_port: u8,
}

fn comp_mask(mad: &MadBytes) -> u64 {
    let mut cm = [0u8; 8];
    cm.copy_from_slice(&mad[OFF_COMP_MASK..OFF_COMP_MASK + 8]);
    u64::from_be_bytes(cm)
}

/// The SA's answer to `mad` (answered in place) given the fabric's `ports` and the SM's
/// multicast `groups`: the MLID of a group whose members changed.
pub(crate) fn respond(mad: &mut MadBytes, ports: &[SaPort], groups: &mut McGroups) -> Option<u16> {
    let attr = u16::from_be_bytes([mad[16], mad[17]]);
    let mut changed = None;
    let (status, resp) = match (mad[3], attr) {
        (METHOD_GET, ATTR_PATH_REC) => (path_record(mad, ports), METHOD_GET_RESP),
        (METHOD_SET | METHOD_DELETE, ATTR_MC_MEMBER_REC) => {
            let mask = comp_mask(mad);
            let mut rec = [0u8; REC_LEN];
            rec.copy_from_slice(&mad[OFF_DATA..OFF_DATA + REC_LEN]);
            let (st, resp) = if mad[3] == METHOD_SET {
                let port_ok = |g: &[u8]| ports.iter().any(|p| p.gid[..] == *g);
                (groups.join(&mut rec, mask, port_ok), METHOD_GET_RESP)
            } else {
                (groups.leave(&mut rec, mask), METHOD_DELETE_RESP)
            };
            let (st, ch) = match st {
                Ok(ch) => (0, ch),
                Err(e) => (e, None),
            };
            mad[OFF_DATA..OFF_DATA + REC_LEN].copy_from_slice(&rec);
            // AttributeOffset: the record's 52 bytes in 8-byte words, rounded up.
            mad[OFF_ATTR_OFFSET..OFF_ATTR_OFFSET + 2].copy_from_slice(&7u16.to_be_bytes());
            changed = ch;
            (st, resp)
        }
        (METHOD_GET | METHOD_SET | METHOD_DELETE, _) => (UNSUPPORTED_METHOD_ATTRIB, mad[3] | 0x80),
        _ => (UNSUPPORTED_METHOD, mad[3] | 0x80),
    };
    mad[3] = resp;
    mad[4..6].copy_from_slice(&status.to_be_bytes());
    changed
}

/// Fills the PathRecord of `mad`'s query: its status.
fn path_record(mad: &mut MadBytes, ports: &[SaPort]) -> u16 {
    let mut q = [0u8; 64];
    q.copy_from_slice(&mad[OFF_DATA..OFF_DATA + 64]);
    let comp_mask = comp_mask(mad);
    let find = |g: &[u8]| ports.iter().find(|p| p.gid[..] == *g).copied();
    let (Some(dst), Some(src)) = (find(&q[8..24]), find(&q[24..40])) else {
        mad[OFF_DATA..OFF_DATA + 64].fill(0);
        return SA_ERR_NO_RECORDS;
    };
    let mut r = [0u8; 64];
    if comp_mask & PR_SERVICE_ID != 0 {
        r[0..8].copy_from_slice(&q[0..8]);
    }
    r[8..24].copy_from_slice(&dst.gid);
    r[24..40].copy_from_slice(&src.gid);
    r[40..42].copy_from_slice(&dst.lid.to_be_bytes());
    r[42..44].copy_from_slice(&src.lid.to_be_bytes());
    // RawTraffic 0, FlowLabel 0, HopLimit 0: the subnet's own.
    if comp_mask & PR_TRAFFIC_CLASS != 0 {
        r[48] = q[48];
    }
    // Reversible, NumbPath 0 in an answer.
    r[49] = 0x80;
    r[50..52].copy_from_slice(&0xffffu16.to_be_bytes());
    // QoSClass 0, SL 0.
    r[54] = (2 << 6) | 5; // MTU exactly 4096
    r[55] = (2 << 6) | 7; // rate exactly 40 Gb/s
    r[56] = (2 << 6) | 18; // packet life time exactly 18
    mad[OFF_DATA..OFF_DATA + 64].copy_from_slice(&r);
    // AttributeOffset: the record's size in 8-byte words.
    mad[OFF_ATTR_OFFSET..OFF_ATTR_OFFSET + 2].copy_from_slice(&8u16.to_be_bytes());
    0
}

/// The fabric's ACTIVE InfiniBand ports with a LID, into `out`: how many.
fn active_ports(nodes: &[Node<'_>], first_ports: &[u8], out: &mut [SaPort]) -> usize {
    let mut n = 0;
    for (i, node) in nodes.iter().enumerate() {
        let fw = &*node.fw;
        let first = first_ports.get(i).copied().unwrap_or(0);
        for p in 0..usize::from(fw.cfg.num_ports) {
            let Some(sma) = fw.sma(p) else { continue };
            if sma.state != crate::fwsim::sma::port_state::ACTIVE || sma.lid == 0 {
                continue;
            }
            let Some(slot) = out.get_mut(n) else {
                return n;
            };
            slot.gid[..8].copy_from_slice(&sma.gid_prefix.to_be_bytes());
            slot.gid[8..].copy_from_slice(&fw.port_guid(p + 1).to_be_bytes());
            slot.lid = sma.lid;
            slot.sw_port = first.saturating_add(p as u8);
            n += 1;
        }
    }
    n
}

/// A GMP `a` to the switch's LID: the SA's while the embedded SM runs, else dropped. What
/// the requester completes with.
pub(super) fn answered(nodes: &mut [Node<'_>], a: AtSwitch) -> ReqRes {
    let AtSwitch {
        mut mad,
        slid,
        sent,
        ..
    } = a;
    let is_sm = nodes
        .iter()
        .find_map(|n| n.wire.as_ref())
        .is_some_and(|w| w.switch.is_sm());
    if !is_sm || mad[1] != CLASS_SA || mad[3] & 0x80 != 0 {
        return sent;
    }
    let mut ports = [SaPort {
        gid: [0; 16],
        lid: 0,
        sw_port: 0,
    }; 8];
    let Some(first_ports) = nodes
        .iter()
        .find_map(|n| n.wire.as_ref())
        .map(|w| w.first_ports)
    else {
        return sent;
    };
    let n = active_ports(nodes, first_ports, &mut ports);
    let ports = ports.get(..n).unwrap_or(&[]);
    let Some(w) = nodes.iter_mut().find_map(|n| n.wire.as_mut()) else {
        return sent;
    };
    let sw = &mut *w.switch;
    if let Some(mlid) = respond(&mut mad, ports, &mut sw.groups) {
        // The SM follows the group's members in the switch's MFT.
        let mask = sw.groups.members(mlid).fold(0u64, |mask, g| {
            ports
                .iter()
                .find(|p| p.gid == *g)
                .map_or(mask, |p| mask | (1u64 << (p.sw_port & 63)))
        });
        program_mft(sw, mlid, mask);
    }
    // Back to the sender's LID through the switch, from the switch's LID.
    let sw_lid = sw.port0_lid();
    let out = sw
        .route_lid(slid)
        .filter(|k| *k != 0 && slid != PERMISSIVE_LID);
    if let Some((di, dport)) = out.and_then(|k| node_at(nodes, first_ports, k)) {
        receive_mad(nodes, di, dport, &mad, sw_lid, QPC_ST_QP1);
    }
    sent
}

#[cfg(test)]
mod tests {
    use crate::fwsim::engine::sa::{
        respond, SaPort, ATTR_MC_MEMBER_REC, ATTR_PATH_REC, CLASS_SA, METHOD_DELETE,
        METHOD_DELETE_RESP, METHOD_GET, METHOD_GET_RESP, METHOD_SET, OFF_ATTR_OFFSET,
        OFF_COMP_MASK, OFF_DATA, PR_SERVICE_ID, PR_TRAFFIC_CLASS,
    };
    use crate::fwsim::mad::status::*;
    use crate::fwsim::mad::{MadBytes, MAD_SIZE};
    use crate::fwsim::mcmember::{mask, Comp::*, McGroups};

    fn port(last: u8, lid: u16) -> SaPort {
        let mut gid = [0u8; 16];
        gid[0] = 0xfe;
        gid[1] = 0x80;
        gid[15] = last;
        SaPort {
            gid,
            lid,
            sw_port: last,
        }
    }

    fn mad(meth: u8, attr: u16, mask: u64) -> MadBytes {
        let mut m = [0u8; MAD_SIZE];
        m[0] = 1;
        m[1] = CLASS_SA;
        m[2] = 2;
        m[3] = meth;
        m[16..18].copy_from_slice(&attr.to_be_bytes());
        m[OFF_COMP_MASK..OFF_COMP_MASK + 8].copy_from_slice(&mask.to_be_bytes());
        m
    }

    fn get(sgid: &[u8; 16], dgid: &[u8; 16]) -> MadBytes {
        let mask = PR_SERVICE_ID | PR_TRAFFIC_CLASS | (1 << 2) | (1 << 3);
        let mut m = mad(METHOD_GET, ATTR_PATH_REC, mask);
        m[OFF_DATA..OFF_DATA + 8].copy_from_slice(&0x0106_1d2fu64.to_be_bytes());
        m[OFF_DATA + 8..OFF_DATA + 24].copy_from_slice(dgid);
        m[OFF_DATA + 24..OFF_DATA + 40].copy_from_slice(sgid);
        m[OFF_DATA + 48] = 0x20;
        m
    }

    fn status(m: &MadBytes) -> u16 {
        u16::from_be_bytes([m[4], m[5]])
    }

    #[test]
    fn a_path_record_get_is_answered_with_both_lids() {
        let ports = [port(1, 0x103), port(2, 0x104)];
        let mut m = get(&ports[1].gid, &ports[0].gid);
        assert_eq!(respond(&mut m, &ports, &mut McGroups::new()), None);
        assert_eq!(m[3], METHOD_GET_RESP);
        assert_eq!(&m[4..6], &[0, 0]);
        let d = &m[OFF_DATA..OFF_DATA + 64];
        assert_eq!(&d[0..8], &0x0106_1d2fu64.to_be_bytes());
        assert_eq!(&d[8..24], &ports[0].gid);
        assert_eq!(&d[24..40], &ports[1].gid);
        // DLID the destination's, SLID the source's.
        assert_eq!(&d[40..44], &[0x01, 0x03, 0x01, 0x04]);
        assert_eq!(d[48], 0x20);
        assert_eq!(d[49], 0x80);
        assert_eq!(&d[50..52], &[0xff, 0xff]);
        assert_eq!(&d[54..57], &[0x85, 0x87, 0x92]);
        assert_eq!(&m[OFF_ATTR_OFFSET..OFF_ATTR_OFFSET + 2], &[0, 8]);
    }

    #[test]
    fn unknown_gids_methods_and_attributes_fail() {
        let ports = [port(1, 0x103)];
        let g = &mut McGroups::new();
        let mut m = get(&ports[0].gid, &port(9, 0).gid);
        respond(&mut m, &ports, g);
        assert_eq!(status(&m), SA_ERR_NO_RECORDS);
        let mut m = get(&ports[0].gid, &ports[0].gid);
        m[3] = 0x12; // GetTable
        respond(&mut m, &ports, g);
        assert_eq!(status(&m), UNSUPPORTED_METHOD);
        let mut m = get(&ports[0].gid, &ports[0].gid);
        m[16..18].copy_from_slice(&0x11u16.to_be_bytes()); // NodeRecord
        respond(&mut m, &ports, g);
        assert_eq!(status(&m), UNSUPPORTED_METHOD_ATTRIB);
        // An MCMemberRecord Get (not modeled) and a PathRecord Set.
        let mut m = mad(METHOD_GET, ATTR_MC_MEMBER_REC, 0);
        respond(&mut m, &ports, g);
        assert_eq!(
            (m[3], status(&m)),
            (METHOD_GET_RESP, UNSUPPORTED_METHOD_ATTRIB)
        );
        let mut m = mad(METHOD_SET, ATTR_PATH_REC, 0);
        respond(&mut m, &ports, g);
        assert_eq!(status(&m), UNSUPPORTED_METHOD_ATTRIB);
    }

    /// upstream cma_join_ib_multicast()'s component mask.
    const CMA_MASK: u64 = mask(&[
        Mgid,
        PortGid,
        Pkey,
        JoinState,
        Qkey,
        Sl,
        FlowLabel,
        TrafficClass,
    ]);

    /// An MCMemberRecord Set (join) or Delete of `mgid` by `port_gid`.
    fn mc(meth: u8, mask: u64, mgid: &[u8; 16], port_gid: &[u8; 16], js: u8) -> MadBytes {
        let mut m = mad(meth, ATTR_MC_MEMBER_REC, mask);
        let d = &mut m[OFF_DATA..OFF_DATA + 52];
        d[..16].copy_from_slice(mgid);
        d[16..32].copy_from_slice(port_gid);
        d[32..36].copy_from_slice(&0x0123_4567u32.to_be_bytes());
        d[40..42].copy_from_slice(&0xffffu16.to_be_bytes());
        d[44..48].copy_from_slice(&0x3000_0000u32.to_be_bytes()); // SL 3
        d[48] = js;
        m
    }

    fn rec(m: &MadBytes) -> &[u8] {
        &m[OFF_DATA..OFF_DATA + 52]
    }

    #[test]
    fn a_join_creates_a_group_with_an_assigned_mgid_and_mlid() {
        let ports = [port(1, 0x103), port(2, 0x104)];
        let g = &mut McGroups::new();
        let mut m = mc(METHOD_SET, CMA_MASK, &[0; 16], &ports[0].gid, 1);
        assert_eq!(respond(&mut m, &ports, g), Some(0xc000));
        assert_eq!((m[3], status(&m)), (METHOD_GET_RESP, 0));
        let r = rec(&m);
        // ff12:a01b:ffff:: (SA-assigned, link-local scope, the P_Key) and a number.
        assert_eq!(&r[..6], &[0xff, 0x12, 0xa0, 0x1b, 0xff, 0xff]);
        assert_eq!(&r[12..16], &[0, 0, 0, 1]);
        assert_eq!(&r[16..32], &ports[0].gid);
        assert_eq!(&r[32..36], &0x0123_4567u32.to_be_bytes());
        assert_eq!(&r[36..38], &[0xc0, 0x00], "MLID");
        assert_eq!(&r[38..44], &[0x85, 0, 0xff, 0xff, 0x87, 0x92]);
        assert_eq!(&r[44..48], &[0x30, 0, 0, 0]);
        assert_eq!(r[48], 0x21, "scope 2, full member");
        assert_eq!(&m[OFF_ATTR_OFFSET..OFF_ATTR_OFFSET + 2], &[0, 7]);
        let mut mgid = [0u8; 16];
        mgid.copy_from_slice(&r[..16]);
        // The other port joins it (MGID and the components that must agree).
        let mut m2 = mc(METHOD_SET, CMA_MASK, &mgid, &ports[1].gid, 1);
        assert_eq!(respond(&mut m2, &ports, g), Some(0xc000));
        assert_eq!(status(&m2), 0);
        assert_eq!(&rec(&m2)[36..38], &[0xc0, 0x00]);
        assert_eq!(
            g.members(0xc000).collect::<std::vec::Vec<_>>(),
            [&ports[0].gid, &ports[1].gid]
        );
        // Again, as a send-only full member too: no new member.
        let mut m3 = mc(METHOD_SET, CMA_MASK, &mgid, &ports[1].gid, 8);
        assert_eq!(respond(&mut m3, &ports, g), None);
        assert_eq!(rec(&m3)[48], 0x29);
        // Leaves: the send-only state, then the full member's; the group with the last.
        let del = mask(&[Mgid, PortGid, JoinState]);
        let mut l = mc(METHOD_DELETE, del, &mgid, &ports[1].gid, 8);
        assert_eq!(respond(&mut l, &ports, g), None);
        assert_eq!((l[3], status(&l)), (METHOD_DELETE_RESP, 0));
        let mut l = mc(METHOD_DELETE, del, &mgid, &ports[1].gid, 1);
        assert_eq!(respond(&mut l, &ports, g), Some(0xc000));
        assert_eq!(g.members(0xc000).count(), 1);
        let mut l = mc(METHOD_DELETE, del, &mgid, &ports[0].gid, 1);
        assert_eq!(respond(&mut l, &ports, g), Some(0xc000));
        assert_eq!(g.count(), 0);
        let mut l = mc(METHOD_DELETE, del, &mgid, &ports[0].gid, 1);
        respond(&mut l, &ports, g);
        assert_eq!(status(&l), SA_ERR_REQ_INVALID, "a group that is gone");
    }

    #[test]
    fn bad_joins_get_the_sa_status() {
        let ports = [port(1, 0x103), port(2, 0x104)];
        let g = &mut McGroups::new();
        let mut mgid = [0u8; 16];
        mgid[0] = 0xff;
        mgid[1] = 0x12;
        mgid[15] = 7;
        let cases: [(u64, [u8; 16], [u8; 16], u8, u16); 6] = [
            // No JoinState, no PortGID.
            (
                CMA_MASK & !JoinState.bit(),
                mgid,
                ports[0].gid,
                1,
                SA_ERR_REQ_INSUFFICIENT_COMPONENTS,
            ),
            (
                CMA_MASK & !PortGid.bit(),
                mgid,
                ports[0].gid,
                1,
                SA_ERR_REQ_INSUFFICIENT_COMPONENTS,
            ),
            // A creation without a Q_Key.
            (
                CMA_MASK & !Qkey.bit(),
                mgid,
                ports[0].gid,
                1,
                SA_ERR_REQ_INSUFFICIENT_COMPONENTS,
            ),
            // A port nobody has.
            (CMA_MASK, mgid, port(9, 0).gid, 1, SA_ERR_REQ_INVALID_GID),
            // Not a multicast GID; a creation by a send-only member.
            (CMA_MASK, ports[1].gid, ports[0].gid, 1, SA_ERR_REQ_INVALID),
            (CMA_MASK, mgid, ports[0].gid, 8, SA_ERR_REQ_INVALID),
        ];
        for (mask, mg, pg, js, want) in cases {
            let mut m = mc(METHOD_SET, mask, &mg, &pg, js);
            assert_eq!(respond(&mut m, &ports, g), None);
            assert_eq!(status(&m), want, "mask {mask:#x} js {js}");
        }
        assert_eq!(g.count(), 0);
        // The group made; a join with another Q_Key disagrees.
        let mut m = mc(METHOD_SET, CMA_MASK, &mgid, &ports[0].gid, 1);
        respond(&mut m, &ports, g);
        assert_eq!(status(&m), 0);
        let mut m = mc(METHOD_SET, CMA_MASK, &mgid, &ports[1].gid, 1);
        m[OFF_DATA + 35] ^= 1;
        assert_eq!(respond(&mut m, &ports, g), None);
        assert_eq!(status(&m), SA_ERR_REQ_INVALID);
        // An MTU exactly 8192 (code 6) cannot be.
        let mut other = mgid;
        other[15] = 8;
        let mut m = mc(
            METHOD_SET,
            CMA_MASK | Mtu.bit() | MtuSelector.bit(),
            &other,
            &ports[0].gid,
            1,
        );
        m[OFF_DATA + 38] = (2 << 6) | 6;
        respond(&mut m, &ports, g);
        assert_eq!(status(&m), SA_ERR_REQ_INVALID);
        // No room: every slot taken.
        for i in 0..64u8 {
            let mut n = mgid;
            n[14] = i + 1;
            let mut m = mc(METHOD_SET, CMA_MASK, &n, &ports[0].gid, 1);
            respond(&mut m, &ports, g);
            if status(&m) != 0 {
                assert_eq!(status(&m), SA_ERR_NO_RESOURCES);
                return;
            }
        }
        panic!("the groups never ran out");
    }
}
