// SPDX-License-Identifier: GPL-2.0

//! The embedded subnet manager: what a managed switch's SM does for the InfiniBand
//! functions of a fabric. It runs on the fabric's switch (`switch.rs`, port 0, LID 1:
//! [`SM_LID`]) and sweeps with real directed-route SMPs: to the switch's own SMA (hop count
//! 0) and through the switch's external port to each function's port (hop count 1, the
//! initial path `[_, switch port]`), where [`Fw::process_mad`] answers (the handler MAD_IFC
//! uses too, so the SMA cannot tell who asks). The responses come back through the switch
//! by the return path, with the hop pointer rules of IBA 14.2.2 on both sides (the
//! function's side as upstream `smi.c` moves it when the MAD layer sends the reply).
//!
//! The sweep: the switch gets LID 1, SM LID 1 and IsSM on port 0 and goes ACTIVE. For each
//! function port whose link is up and that is not ACTIVE it reads NodeInfo (a channel
//! adapter) and PortInfo, sets PortInfo with the port's LID ([`lid_for`], unique per
//! function: `0x100 + serial * 2 + port`), the SM LID, SM SL 0 and SubnetTimeOut 18, moves it
//! to ARMED and ACTIVE with two more Sets, programs the switch's linear forwarding table
//! (the LID to the switch port, LinearFDBTop raised to cover it) and makes the switch port
//! ARMED and ACTIVE; for a port already ACTIVE it only makes sure the table and the switch
//! port carry its LID. Its SA (`engine/sa.rs`) answers PathRecords and multicast joins and
//! leaves, and [`program_mft`] follows each group's members in the switch's multicast
//! forwarding table. No traps, no periodic light sweep: the sweep runs when a function's link
//! changes (PAOS) and at the function's creation; groups are not joined again after a sweep
//! (the SA's groups outlive a port's LID change).

use super::mad::{self, class, method, off, put, MadBytes, MadOutcome};
use super::profile::LinkLayer;
use super::sma::{attr, port_state};
use super::switch::{self, DrStep, Switch};
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

/// A directed-route SMP from the SM on the switch: `hop_cnt` 0 for the switch's own SMA,
/// 1 (out of switch port `out`) for the port one hop away.
fn smp(meth: u8, attr_id: u16, amod: u32, tid: u64, out: Option<u8>) -> MadBytes {
    let mut m = [0u8; mad::MAD_SIZE];
    m[off::BASE_VERSION] = 1;
    m[1] = class::SUBN_DIRECTED_ROUTE;
    m[off::CLASS_VERSION] = 1;
    m[off::METHOD] = meth;
    put(&mut m, off::TID, &tid.to_be_bytes());
    put(&mut m, off::ATTR_ID, &attr_id.to_be_bytes());
    put(&mut m, off::ATTR_MOD, &amod.to_be_bytes());
    put(&mut m, off::DR_SLID, &switch::PERMISSIVE_LID.to_be_bytes());
    put(&mut m, off::DR_DLID, &switch::PERMISSIVE_LID.to_be_bytes());
    if let Some(p) = out {
        m[off::HOP_CNT] = 1;
        m[off::INITIAL_PATH + 1] = p;
    }
    m
}

/// The data of a GetResp with status 0 (the D bit aside).
fn data(resp: &MadBytes) -> Option<[u8; mad::SMP_DATA]> {
    if resp[off::METHOD] != method::GET_RESP
        || mad::be16(resp, off::STATUS) & !mad::status::DIRECTION != 0
    {
        return None;
    }
    let mut d = [0u8; mad::SMP_DATA];
    d.copy_from_slice(resp.get(off::DATA..off::DATA + mad::SMP_DATA)?);
    Some(d)
}

/// Sends `req` (hop count 0) to the switch's own SMA: the response's data.
fn ask_switch(sw: &mut Switch, req: &MadBytes) -> Option<[u8; mad::SMP_DATA]> {
    let mut m = *req;
    if sw.dr_forward(0, &mut m) != DrStep::Agent || sw.smp(0, &mut m) != MadOutcome::Reply {
        return None;
    }
    if sw.dr_forward(0, &mut m) != DrStep::Sm {
        return None;
    }
    data(&m)
}

/// Sends `req` (hop count 1 out of switch port `k`) through the switch to (0-based) port
/// `port` of `fw`, the function port linked to `k`, and the response back: its data.
fn ask_port(
    sw: &mut Switch,
    k: u8,
    fw: &mut Fw,
    port: usize,
    req: &MadBytes,
) -> Option<[u8; mad::SMP_DATA]> {
    let mut m = *req;
    if sw.dr_forward(0, &mut m) != DrStep::Out(k) {
        return None;
    }
    let mut resp = [0u8; mad::MAD_SIZE];
    if fw.process_mad(port, 0, &m, &mut resp) != MadOutcome::Reply {
        return None;
    }
    // The function sends the response back (upstream smi_handle_dr_smp_send(), C14-13:1):
    // the pointer steps back onto the hop it arrived by, which must be its own port.
    let ptr = resp[off::HOP_PTR];
    if ptr != resp[off::HOP_CNT] + 1 {
        return None;
    }
    resp[off::HOP_PTR] = ptr - 1;
    if usize::from(resp[off::RETURN_PATH + usize::from(ptr - 1)]) != port + 1 {
        return None;
    }
    if sw.dr_forward(k, &mut resp) != DrStep::Sm {
        return None;
    }
    data(&resp)
}

/// A TID for the next SMP of a sweep.
struct Tids(u64);

impl Tids {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

/// Moves the switch's port `port` (0 is the switch itself) to ARMED and ACTIVE with
/// PortInfo Sets, port 0 with the LID and SM fields. Whether it ended ACTIVE.
fn activate_switch_port(sw: &mut Switch, port: u8, tids: &mut Tids) -> bool {
    let amod = u32::from(port);
    let Some(mut pinfo) = ask_switch(
        sw,
        &smp(method::GET, attr::PORT_INFO, amod, tids.next(), None),
    ) else {
        return false;
    };
    match pinfo[32] & 0xf {
        port_state::ACTIVE => return true,
        port_state::DOWN => return false,
        _ => {}
    }
    if port == 0 {
        put(&mut pinfo, 16, &SM_LID.to_be_bytes());
        put(&mut pinfo, 18, &SM_LID.to_be_bytes());
        pinfo[34] &= 0xf8;
        pinfo[36] &= 0xf0;
        pinfo[51] = SUBNET_TIMEOUT;
    }
    pinfo[33] &= 0x0f;
    for st in [port_state::NOP, port_state::ARMED, port_state::ACTIVE] {
        pinfo[32] = (pinfo[32] & 0xf0) | st;
        let mut req = smp(method::SET, attr::PORT_INFO, amod, tids.next(), None);
        put(&mut req, off::DATA, &pinfo);
        if ask_switch(sw, &req).is_none() {
            return false;
        }
    }
    true
}

/// Routes `lid` to switch port `k`: the LFT block's entry and LinearFDBTop, by Get and Set.
fn program_lft(sw: &mut Switch, lid: u16, k: u8, tids: &mut Tids) -> bool {
    let block = u32::from(lid) / switch::LFT_BLOCK as u32;
    let Some(mut lft) = ask_switch(
        sw,
        &smp(method::GET, switch::ATTR_LFT, block, tids.next(), None),
    ) else {
        return false;
    };
    lft[usize::from(lid) % switch::LFT_BLOCK] = k;
    let mut req = smp(method::SET, switch::ATTR_LFT, block, tids.next(), None);
    put(&mut req, off::DATA, &lft);
    if ask_switch(sw, &req).is_none() {
        return false;
    }
    let get = smp(method::GET, switch::ATTR_SWITCH_INFO, 0, tids.next(), None);
    let Some(mut si) = ask_switch(sw, &get) else {
        return false;
    };
    if mad::be16(&si, 6) < lid {
        put(&mut si, 6, &lid.to_be_bytes());
        // PortStateChange is write-1-to-clear: leave it.
        si[11] &= !0x4;
        let mut req = smp(method::SET, switch::ATTR_SWITCH_INFO, 0, tids.next(), None);
        put(&mut req, off::DATA, &si);
        return ask_switch(sw, &req).is_some();
    }
    true
}

/// Sets the switch's multicast forwarding entry of `mlid` to the ports of `mask` (bit `k`
/// for switch port `k`; 0 for a group that is gone), as opensm programs it: for each 16-port
/// position, the block holding the MLID read, the entry changed and the block set. Whether
/// every Set was answered.
pub(crate) fn program_mft(sw: &mut Switch, mlid: u16, mask: u64) -> bool {
    let Some(idx) = mlid.checked_sub(switch::MLID_BASE).map(usize::from) else {
        return false;
    };
    let mut tids = Tids(0x4d00_0000 | u64::from(mlid));
    let block = (idx / switch::MFT_BLOCK) as u32;
    let at = (idx % switch::MFT_BLOCK) * 2;
    for pos in 0..=u32::from(sw.nports()) / 16 {
        let amod = (pos << 28) | block;
        let get = smp(method::GET, switch::ATTR_MFT, amod, tids.next(), None);
        let Some(mut b) = ask_switch(sw, &get) else {
            return false;
        };
        let word = (mask >> (16 * pos)) as u16;
        put(&mut b, at, &word.to_be_bytes());
        let mut req = smp(method::SET, switch::ATTR_MFT, amod, tids.next(), None);
        put(&mut req, off::DATA, &b);
        if ask_switch(sw, &req).is_none() {
            return false;
        }
    }
    true
}

/// Brings the switch's links in line with the functions' ports: switch port `first + p` is
/// linked to (0-based) port `p` of `fw` (an InfiniBand function) and is up while that port's
/// link is. Runs with and without the embedded SM.
pub(crate) fn links(fw: &Fw, sw: &mut Switch, first: u8) {
    if fw.config().link_layer != LinkLayer::Ib {
        return;
    }
    for port in 0..usize::from(fw.config().num_ports) {
        let up = fw.sma(port).is_some_and(|s| s.state != port_state::DOWN);
        if let Ok(k) = u8::try_from(usize::from(first) + port) {
            sw.link(k, up);
        }
    }
}

/// Sweeps the ports of `fw` (an InfiniBand function of the fabric, its port `p` linked to
/// switch port `first + p`) through the switch `sw`: every port whose link is up and is not
/// ACTIVE gets its LID and goes ACTIVE, with its switch port and the forwarding table entry.
/// Returns how many function ports it brought up. Nothing for an Ethernet function.
pub(crate) fn sweep(fw: &mut Fw, sw: &mut Switch, first: u8) -> usize {
    if fw.config().link_layer != LinkLayer::Ib {
        return 0;
    }
    links(fw, sw, first);
    let mut tids = Tids(0x5300_0000);
    sw.set_is_sm(true);
    sw.sm_swept();
    // The switch itself first: its NodeInfo says it is one, then its LID.
    let ni = ask_switch(sw, &smp(method::GET, attr::NODE_INFO, 0, tids.next(), None));
    if ni.map(|n| n[2]) != Some(2) || !activate_switch_port(sw, 0, &mut tids) {
        return 0;
    }
    let mut done = 0;
    for port in 0..usize::from(fw.config().num_ports) {
        let Ok(k) = u8::try_from(usize::from(first) + port) else {
            continue;
        };
        let amod = u32::try_from(port + 1).unwrap_or(0);
        let Some(ni) = ask_port(
            sw,
            k,
            fw,
            port,
            &smp(method::GET, attr::NODE_INFO, amod, tids.next(), Some(k)),
        ) else {
            continue;
        };
        // NodeType: only channel adapters are linked to the switch.
        if ni[2] != 1 {
            continue;
        }
        let get = smp(method::GET, attr::PORT_INFO, amod, tids.next(), Some(k));
        let Some(mut pinfo) = ask_port(sw, k, fw, port, &get) else {
            continue;
        };
        let state = pinfo[32] & 0xf;
        if state == port_state::DOWN {
            continue;
        }
        if state == port_state::ACTIVE {
            // Configured already: the switch must still route its LID to it.
            let lid = mad::be16(&pinfo, 16);
            if lid != 0 && sw.route_lid(lid) != Some(k) && program_lft(sw, lid, k, &mut tids) {
                activate_switch_port(sw, k, &mut tids);
            }
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
        // The forwarding entry and the switch port first: the port is reachable once
        // ACTIVE.
        if !program_lft(sw, lid, k, &mut tids) || !activate_switch_port(sw, k, &mut tids) {
            continue;
        }
        let mut ok = true;
        for st in [port_state::NOP, port_state::ARMED, port_state::ACTIVE] {
            pinfo[32] = (pinfo[32] & 0xf0) | st;
            let mut req = smp(method::SET, attr::PORT_INFO, amod, tids.next(), Some(k));
            put(&mut req, off::DATA, &pinfo);
            if ask_port(sw, k, fw, port, &req).is_none() {
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
