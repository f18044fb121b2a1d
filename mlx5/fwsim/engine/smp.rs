// SPDX-License-Identifier: GPL-2.0

//! SMPs through the fabric's switch: what QP0 sends that LID routing to a function cannot
//! carry. A directed-route SMP (DLID 0xffff, the permissive LID) enters the switch at the
//! port the sender is linked to and moves by its hop pointer ([`Switch::dr_forward`]): out of
//! another port to the QP0 of the function linked there, or to the switch's own SMA, whose
//! response goes back along the return path. A LID-routed SMP to the switch's LID is
//! answered by its SMA and the response routed back to the sender's LID by the forwarding
//! table. Either arrives at QP0 as a UD receive: the GRH area skipped, source QPN 0, the
//! SLID the sender's LID (the switch's for its own responses; the permissive LID before a
//! LID is set). Not counted by the PMA; the packet's VL15 is not modeled.

use super::completer::ReqRes;
use super::fabric::Node;
use super::mem::Cur;
use super::message::Message;
use super::qp_state::Snap;
use super::responder::receive_smp;
use crate::fwsim::mad::{class, MadBytes, MadOutcome, MAD_SIZE};
use crate::fwsim::switch::{DrStep, PERMISSIVE_LID};

/// The node and (0-based) port linked to switch port `k` (`first_ports[i]` is node `i`'s
/// port 1).
pub(super) fn node_at(nodes: &[Node<'_>], first_ports: &[u8], k: u8) -> Option<(usize, usize)> {
    nodes.iter().enumerate().find_map(|(i, n)| {
        let p = usize::from(k.checked_sub(*first_ports.get(i)?)?);
        (p < usize::from(n.fw.cfg.num_ports)).then_some((i, p))
    })
}

/// Reads the MAD of message `m` (exactly [`MAD_SIZE`] bytes) from requester `s` on node `ni`.
pub(super) fn gather(nodes: &[Node<'_>], ni: usize, s: &Snap, m: &Message<'_>) -> Option<MadBytes> {
    if m.len != MAD_SIZE as u64 {
        return None;
    }
    let n = nodes.get(ni)?;
    let mut mad = [0u8; MAD_SIZE];
    let mut src = Cur::sgl(n.fw, m.segs, false, s.pd);
    let mut got = 0;
    while got < MAD_SIZE {
        let k = src.read(n.mem, mad.get_mut(got..)?).ok()?;
        if k == 0 {
            return None;
        }
        got += k;
    }
    Some(mad)
}

/// A MAD a QP sends to the fabric's switch, read from the sender's memory.
pub(super) struct AtSwitch {
    /// The MAD.
    pub(super) mad: MadBytes,
    /// The switch port it enters by.
    pub(super) in_port: u8,
    /// The sender's LID.
    pub(super) slid: u16,
    /// Sent to the switch's LID (else: a directed-route SMP to the permissive LID).
    pub(super) by_lid: bool,
    /// What the requester completes with.
    pub(super) sent: ReqRes,
}

/// Message `m` of QP `s` (node `ni`) if it is for the switch: to its LID, or (`dr`) to the
/// permissive LID. `None` for the ordinary LID routing to a function; `Some(Err)` with
/// what the requester completes with when the MAD cannot be read.
pub(super) fn at_switch(
    nodes: &[Node<'_>],
    ni: usize,
    s: &Snap,
    m: &Message<'_>,
    dr: bool,
) -> Option<Result<AtSwitch, ReqRes>> {
    let (dlid, _, _) = m.dest;
    let w = nodes.iter().find_map(|n| n.wire.as_ref())?;
    let by_lid = dlid != PERMISSIVE_LID && w.switch.route_lid(dlid) == Some(0);
    if !(by_lid || dr && dlid == PERMISSIVE_LID) {
        return None;
    }
    let in_port = w
        .first_ports
        .get(ni)
        .and_then(|f| f.checked_add(u8::try_from(s.port).ok()?));
    let (Some(in_port), Some(mad)) = (in_port, gather(nodes, ni, s, m)) else {
        return Some(Err(m.dropped()));
    };
    Some(Ok(AtSwitch {
        mad,
        in_port,
        slid: nodes.get(ni).map_or(0, |n| n.fw.port_lid(s.port)),
        by_lid,
        sent: ReqRes::Ok {
            byte_cnt: m.byte_cnt(),
        },
    }))
}

/// An SMP `a` that only the switch can carry: what the requester completes with.
pub(super) fn switched(nodes: &mut [Node<'_>], a: AtSwitch) -> ReqRes {
    let AtSwitch {
        mut mad,
        in_port,
        slid,
        by_lid: to_switch,
        sent,
    } = a;
    let Some(w) = nodes.iter_mut().find_map(|n| n.wire.as_mut()) else {
        return sent;
    };
    let first_ports = w.first_ports;
    let sw = &mut *w.switch;
    let own_lid = |l: u16| if l == 0 { PERMISSIVE_LID } else { l };
    let (out, src_lid) = if to_switch {
        if mad[1] != class::SUBN_LID_ROUTED || sw.smp(in_port, &mut mad) != MadOutcome::Reply {
            return sent;
        }
        match sw.route_lid(slid) {
            Some(k) if k != 0 => (k, own_lid(sw.port0_lid())),
            _ => return sent,
        }
    } else {
        if mad[1] != class::SUBN_DIRECTED_ROUTE {
            return sent;
        }
        match sw.dr_forward(in_port, &mut mad) {
            DrStep::Out(k) => (k, own_lid(slid)),
            DrStep::Agent => {
                if sw.smp(in_port, &mut mad) != MadOutcome::Reply {
                    return sent;
                }
                match sw.dr_forward(0, &mut mad) {
                    DrStep::Out(k) => (k, own_lid(sw.port0_lid())),
                    _ => return sent,
                }
            }
            DrStep::Sm | DrStep::Drop => return sent,
        }
    };
    if let Some((di, dport)) = node_at(nodes, first_ports, out) {
        receive_smp(nodes, di, dport, &mad, src_lid);
    }
    sent
}
