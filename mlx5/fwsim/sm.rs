// SPDX-License-Identifier: GPL-2.0

//! The embedded subnet manager: what a managed switch's SM does for the InfiniBand
//! functions of a fabric, by real SMPs to each function's SMA (through
//! [`Fw::process_mad`], the handler MAD_IFC uses too, so the SMA cannot tell who asks).
//!
//! What is modeled: one subnet whose SM is at LID 1 ([`SM_LID`]) and reaches every port
//! point to point, one hop away (directed route, `hop_cnt` 1, the permissive DR LIDs). No
//! switch node is modeled: there is no SwitchInfo, no forwarding table, and the SM's own
//! node answers nothing. For each port whose link is up and that is not ACTIVE the sweep
//! reads NodeInfo (a channel adapter) and PortInfo, sets PortInfo with the port's LID
//! ([`lid_for`], unique per function: `0x100 + serial * 2 + port`), the SM LID, SM SL 0 and
//! SubnetTimeOut 18, then moves the port to ARMED and ACTIVE with two more Sets.

use super::mad::{self, class, method, off, put, MadBytes, MadOutcome};
use super::profile::LinkLayer;
use super::sma::{attr, port_state};
use super::Fw;

/// The subnet manager's LID.
pub(crate) const SM_LID: u16 = 1;

/// The SubnetTimeOut the SM gives ports (4.096 us x 2^18, about a second, as opensm's
/// default).
const SUBNET_TIMEOUT: u8 = 18;

/// The LID the embedded SM gives (0-based) port `port` of `fw`: unique per function on a
/// fabric, from the serial.
pub(crate) fn lid_for(fw: &Fw, port: usize) -> u16 {
    let p = u16::try_from(port & 1).unwrap_or(0);
    0x100 + (((fw.config().serial & 0x1fff) as u16) << 1) + p
}

/// A directed-route SMP to the port one hop from the SM: `hop_ptr` 1 is where the SMP
/// arrives at the port's SMA.
fn smp(meth: u8, attr_id: u16, tid: u64, port: usize) -> MadBytes {
    let mut m = [0u8; mad::MAD_SIZE];
    m[off::BASE_VERSION] = 1;
    m[1] = class::SUBN_DIRECTED_ROUTE;
    m[off::CLASS_VERSION] = 1;
    m[off::METHOD] = meth;
    m[off::HOP_PTR] = 1;
    m[off::HOP_CNT] = 1;
    put(&mut m, off::TID, &tid.to_be_bytes());
    put(&mut m, off::ATTR_ID, &attr_id.to_be_bytes());
    put(
        &mut m,
        off::ATTR_MOD,
        &u32::try_from(port + 1).unwrap_or(0).to_be_bytes(),
    );
    put(&mut m, off::DR_SLID, &0xffffu16.to_be_bytes());
    put(&mut m, off::DR_DLID, &0xffffu16.to_be_bytes());
    // The SM's own port is 1: the path leaves through it.
    m[off::INITIAL_PATH + 1] = 1;
    m
}

/// Sends `req` to port `port` of `fw`: the GetResp's data if the SMA answered with status 0.
fn ask(fw: &mut Fw, port: usize, req: &MadBytes) -> Option<[u8; mad::SMP_DATA]> {
    let mut resp = [0u8; mad::MAD_SIZE];
    if fw.process_mad(port, 0, req, &mut resp) != MadOutcome::Reply {
        return None;
    }
    if resp[off::METHOD] != method::GET_RESP
        || mad::be16(&resp, off::STATUS) & !mad::status::DIRECTION != 0
    {
        return None;
    }
    let mut d = [0u8; mad::SMP_DATA];
    d.copy_from_slice(resp.get(off::DATA..off::DATA + mad::SMP_DATA)?);
    Some(d)
}

/// Sweeps the ports of `fw` (an InfiniBand function of the fabric): every port whose link
/// is up and is not ACTIVE gets its LID and goes ACTIVE. Returns how many ports it brought
/// up. Nothing for an Ethernet function.
pub(crate) fn sweep(fw: &mut Fw) -> usize {
    if fw.config().link_layer != LinkLayer::Ib {
        return 0;
    }
    let mut done = 0;
    let mut tid = 0x5300_0000u64;
    for port in 0..usize::from(fw.config().num_ports) {
        let mut next = || {
            tid += 1;
            tid
        };
        let Some(ni) = ask(fw, port, &smp(method::GET, attr::NODE_INFO, next(), port)) else {
            continue;
        };
        // NodeType: only channel adapters are configured here.
        if ni[2] != 1 {
            continue;
        }
        let Some(mut pinfo) = ask(fw, port, &smp(method::GET, attr::PORT_INFO, next(), port))
        else {
            continue;
        };
        let state = pinfo[32] & 0xf;
        if state == port_state::DOWN || state == port_state::ACTIVE {
            continue;
        }
        let lid = lid_for(fw, port);
        // The Set: the port's PortInfo as read, with no state or physical state change.
        put(&mut pinfo, 16, &lid.to_be_bytes());
        put(&mut pinfo, 18, &SM_LID.to_be_bytes());
        pinfo[32] &= 0xf0;
        pinfo[33] &= 0x0f;
        // LMC 0; MasterSMSL 0; SubnetTimeOut.
        pinfo[34] &= 0xf8;
        pinfo[36] &= 0xf0;
        pinfo[51] = SUBNET_TIMEOUT;
        let mut ok = true;
        for st in [port_state::NOP, port_state::ARMED, port_state::ACTIVE] {
            pinfo[32] = (pinfo[32] & 0xf0) | st;
            let mut req = smp(method::SET, attr::PORT_INFO, next(), port);
            put(&mut req, off::DATA, &pinfo);
            if ask(fw, port, &req).is_none() {
                ok = false;
                break;
            }
        }
        if ok {
            done += 1;
        }
    }
    done
}
