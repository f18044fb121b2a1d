// SPDX-License-Identifier: GPL-2.0

//! The embedded SM's subnet administrator: while the embedded SM runs, a GMP sent to QP1 of
//! the switch's LID (the ports' SM LID) is the SA's. A SubnAdmGet of a PathRecord
//! (IBA 15.2.5.16) is answered from the fabric: the source and destination ports found by the
//! record's SGID and DGID (each function port's GID 0: its GID prefix and port GUID) among
//! the ACTIVE ports with a LID; the answer (SubnAdmGetResp, one record: both LIDs and GIDs, the
//! service ID and traffic class asked for, hop limit 0, reversible, P_Key 0xffff, SL 0, MTU
//! 4096, rate 40 Gb/s, packet life time 18, every selector "exactly") arrives at the sender's
//! QP1 from the switch's LID. A record nobody has is `ERR_NO_RECORDS`; any other method or
//! attribute `UNSUPPORTED_METHOD` or `UNSUPPORTED_METHOD_ATTRIB`. Other GMPs to the switch are
//! dropped, as without an SM. Not modeled: GetTable, other records, the SA's RMPP.

use super::completer::ReqRes;
use super::fabric::Node;
use super::message::Message;
use super::qp_state::Snap;
use super::responder::receive_mad;
use crate::fwsim::mad::MadBytes;
use crate::fwsim::switch::PERMISSIVE_LID;
use crate::prm::consts::QPC_ST_QP1;

/// `IB_MGMT_CLASS_SUBN_ADM`.
const CLASS_SA: u8 = 0x03;
/// `IB_MGMT_METHOD_GET` and its response.
const METHOD_GET: u8 = 0x01;
const METHOD_GET_RESP: u8 = 0x81;
/// `IB_SA_ATTR_PATH_REC`.
const ATTR_PATH_REC: u16 = 0x35;
/// MAD status: unsupported method, method/attribute combination.
const UNSUPPORTED_METHOD: u16 = 0x0008;
const UNSUPPORTED_METHOD_ATTRIB: u16 = 0x000c;
/// SA status `ERR_NO_RECORDS` (class-specific bits 8..14).
const ERR_NO_RECORDS: u16 = 0x0300;
/// The SA header's AttributeOffset and the record's data (`struct ib_sa_mad`).
const OFF_ATTR_OFFSET: usize = 44;
const OFF_COMP_MASK: usize = 48;
const OFF_DATA: usize = 56;
/// Component mask bits of the ServiceID (two) and TClass.
const PR_SERVICE_ID: u64 = 0b11;
const PR_TRAFFIC_CLASS: u64 = 1 << 10;

/// An ACTIVE InfiniBand port with a LID: its GID 0 and LID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SaPort {
    pub(crate) gid: [u8; 16],
    pub(crate) lid: u16,
}

/// The SA's answer to `mad` (answered in place) given the fabric's `ports`.
pub(crate) fn respond(mad: &mut MadBytes, ports: &[SaPort]) {
    let attr = u16::from_be_bytes([mad[16], mad[17]]);
    let status = if mad[3] != METHOD_GET {
        UNSUPPORTED_METHOD
    } else if attr != ATTR_PATH_REC {
        UNSUPPORTED_METHOD_ATTRIB
    } else {
        path_record(mad, ports)
    };
    mad[3] = METHOD_GET_RESP;
    mad[4..6].copy_from_slice(&status.to_be_bytes());
}

/// Fills the PathRecord of `mad`'s query: its status.
fn path_record(mad: &mut MadBytes, ports: &[SaPort]) -> u16 {
    let mut q = [0u8; 64];
    q.copy_from_slice(&mad[OFF_DATA..OFF_DATA + 64]);
    let mut cm = [0u8; 8];
    cm.copy_from_slice(&mad[OFF_COMP_MASK..OFF_COMP_MASK + 8]);
    let comp_mask = u64::from_be_bytes(cm);
    let find = |g: &[u8]| ports.iter().find(|p| p.gid[..] == *g).copied();
    let (Some(dst), Some(src)) = (find(&q[8..24]), find(&q[24..40])) else {
        mad[OFF_DATA..OFF_DATA + 64].fill(0);
        return ERR_NO_RECORDS;
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

/// A QP1 message `m` of `s` (node `ni`) to the switch's LID while the embedded SM runs: the
/// SA's, `Some` with what the requester completes with; `None` otherwise (the ordinary
/// routing).
pub(super) fn answered(
    nodes: &mut [Node<'_>],
    ni: usize,
    s: &Snap,
    m: &Message<'_>,
) -> Option<ReqRes> {
    let (dlid, _, _) = m.dest;
    let w = nodes.iter().find_map(|n| n.wire.as_ref())?;
    if dlid == PERMISSIVE_LID || w.switch.route_lid(dlid) != Some(0) || !w.switch.is_sm() {
        return None;
    }
    let sent = ReqRes::Ok {
        byte_cnt: m.byte_cnt(),
    };
    let Some(mut mad) = super::smp::gather(nodes, ni, s, m) else {
        return Some(m.dropped());
    };
    if mad[1] != CLASS_SA || mad[3] & 0x80 != 0 {
        return Some(sent);
    }
    let mut ports = [SaPort {
        gid: [0; 16],
        lid: 0,
    }; 8];
    let mut n = 0;
    for node in nodes.iter() {
        let fw = &*node.fw;
        for p in 0..usize::from(fw.cfg.num_ports) {
            let Some(sma) = fw.sma(p) else { continue };
            if sma.state != crate::fwsim::sma::port_state::ACTIVE || sma.lid == 0 {
                continue;
            }
            let Some(slot) = ports.get_mut(n) else { break };
            slot.gid[..8].copy_from_slice(&sma.gid_prefix.to_be_bytes());
            slot.gid[8..].copy_from_slice(&fw.port_guid(p + 1).to_be_bytes());
            slot.lid = sma.lid;
            n += 1;
        }
    }
    respond(&mut mad, ports.get(..n).unwrap_or(&[]));
    // Back to the sender's port, from the switch's LID.
    let sw_lid = nodes
        .iter()
        .find_map(|n| n.wire.as_ref())
        .map_or(0, |w| w.switch.port0_lid());
    receive_mad(nodes, ni, s.port, &mad, sw_lid, QPC_ST_QP1);
    Some(sent)
}

#[cfg(test)]
mod tests {
    use crate::fwsim::engine::sa::{
        respond, SaPort, ATTR_PATH_REC, CLASS_SA, ERR_NO_RECORDS, METHOD_GET, METHOD_GET_RESP,
        OFF_ATTR_OFFSET, OFF_COMP_MASK, OFF_DATA, PR_SERVICE_ID, PR_TRAFFIC_CLASS,
        UNSUPPORTED_METHOD, UNSUPPORTED_METHOD_ATTRIB,
    };
    use crate::fwsim::mad::{MadBytes, MAD_SIZE};

    fn port(last: u8, lid: u16) -> SaPort {
        let mut gid = [0u8; 16];
        gid[0] = 0xfe;
        gid[1] = 0x80;
        gid[15] = last;
        SaPort { gid, lid }
    }

    fn get(sgid: &[u8; 16], dgid: &[u8; 16]) -> MadBytes {
        let mut m = [0u8; MAD_SIZE];
        m[0] = 1;
        m[1] = CLASS_SA;
        m[2] = 2;
        m[3] = METHOD_GET;
        m[16..18].copy_from_slice(&ATTR_PATH_REC.to_be_bytes());
        let mask = PR_SERVICE_ID | PR_TRAFFIC_CLASS | (1 << 2) | (1 << 3);
        m[OFF_COMP_MASK..OFF_COMP_MASK + 8].copy_from_slice(&mask.to_be_bytes());
        m[OFF_DATA..OFF_DATA + 8].copy_from_slice(&0x0106_1d2fu64.to_be_bytes());
        m[OFF_DATA + 8..OFF_DATA + 24].copy_from_slice(dgid);
        m[OFF_DATA + 24..OFF_DATA + 40].copy_from_slice(sgid);
        m[OFF_DATA + 48] = 0x20;
        m
    }

    #[test]
    fn a_path_record_get_is_answered_with_both_lids() {
        let ports = [port(1, 0x103), port(2, 0x104)];
        let mut m = get(&ports[1].gid, &ports[0].gid);
        respond(&mut m, &ports);
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
        let mut m = get(&ports[0].gid, &port(9, 0).gid);
        respond(&mut m, &ports);
        assert_eq!(u16::from_be_bytes([m[4], m[5]]), ERR_NO_RECORDS);
        let mut m = get(&ports[0].gid, &ports[0].gid);
        m[3] = 0x12; // GetTable
        respond(&mut m, &ports);
        assert_eq!(u16::from_be_bytes([m[4], m[5]]), UNSUPPORTED_METHOD);
        let mut m = get(&ports[0].gid, &ports[0].gid);
        m[16..18].copy_from_slice(&0x11u16.to_be_bytes()); // NodeRecord
        respond(&mut m, &ports);
        assert_eq!(u16::from_be_bytes([m[4], m[5]]), UNSUPPORTED_METHOD_ATTRIB);
    }
}
