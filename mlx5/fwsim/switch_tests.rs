// SPDX-License-Identifier: GPL-2.0

//! The fabric's switch (`switch.rs`): its SMA, its forwarding table, directed routes
//! through it, and the embedded SM sweeping two functions through it (`sm.rs`).

use std::boxed::Box;

use super::mad::{be16, be32, class, method, off, status, MadBytes, MadOutcome, MAD_SIZE};
use super::profile::{LinkLayer, CONNECTX7};
use super::sma::{attr, port_state};
use super::switch::{
    DrStep, Switch, ATTR_LFT, ATTR_MFT, ATTR_MLNX_EXT_PORT_INFO, ATTR_SM_INFO, ATTR_SWITCH_INFO,
    NO_PORT,
};
use super::*;

fn ib_fw(serial: u32) -> Fw {
    Fw::new(Config {
        profile: CONNECTX7,
        link_layer: LinkLayer::Ib,
        num_ports: 1,
        serial,
        memic: true,
    })
    .unwrap()
}

/// A directed-route SMP with hop count `cnt` and initial path `path` (entries 1..).
fn dr(meth: u8, attr_id: u16, amod: u32, path: &[u8]) -> MadBytes {
    let mut m = [0u8; MAD_SIZE];
    m[0] = 1;
    m[1] = class::SUBN_DIRECTED_ROUTE;
    m[2] = 1;
    m[off::METHOD] = meth;
    m[off::HOP_CNT] = path.len() as u8;
    m[off::TID..off::TID + 8].copy_from_slice(&0x77u64.to_be_bytes());
    m[off::ATTR_ID..off::ATTR_ID + 2].copy_from_slice(&attr_id.to_be_bytes());
    m[off::ATTR_MOD..off::ATTR_MOD + 4].copy_from_slice(&amod.to_be_bytes());
    m[off::DR_SLID..off::DR_SLID + 2].copy_from_slice(&0xffffu16.to_be_bytes());
    m[off::DR_DLID..off::DR_DLID + 2].copy_from_slice(&0xffffu16.to_be_bytes());
    for (i, p) in path.iter().enumerate() {
        m[off::INITIAL_PATH + 1 + i] = *p;
    }
    m
}

/// Asks the switch's SMA at hop count 0 (its SM's view): the response.
fn local(sw: &mut Switch, mut m: MadBytes) -> MadBytes {
    assert_eq!(sw.dr_forward(0, &mut m), DrStep::Agent);
    assert_eq!(sw.smp(0, &mut m), MadOutcome::Reply);
    assert_eq!(sw.dr_forward(0, &mut m), DrStep::Sm);
    m
}

fn st(m: &MadBytes) -> u16 {
    be16(m, off::STATUS) & !status::DIRECTION
}

/// MulticastForwardingTable blocks by position (as opensm programs them), MulticastFDBCap,
/// and the packet's out ports by the table.
#[test]
fn switch_multicast_forwarding_table() {
    let mut sw = Box::new(Switch::new(20, 0xabcd));
    let d = off::DATA;
    let si = local(&mut sw, dr(method::GET, ATTR_SWITCH_INFO, 0, &[]));
    assert_eq!(usize::from(be16(&si, d + 4)), switch::MFT_CAP);
    // Block 1 (MLIDs 0xC020..0xC03F) empty; an unprogrammed MLID goes nowhere.
    let b = local(&mut sw, dr(method::GET, ATTR_MFT, 1, &[]));
    assert_eq!(st(&b), 0);
    assert!(b[d..d + 64].iter().all(|x| *x == 0));
    assert_eq!(sw.route_mlid(0xc021), None);
    // Entry 1 of block 1: ports 1 and 3 in position 0, port 17 in position 1.
    let mut set = dr(method::SET, ATTR_MFT, 1, &[]);
    set[d + 2..d + 4].copy_from_slice(&0b1010u16.to_be_bytes());
    assert_eq!(st(&local(&mut sw, set)), 0);
    let mut set = dr(method::SET, ATTR_MFT, (1 << 28) | 1, &[]);
    set[d + 2..d + 4].copy_from_slice(&0b10u16.to_be_bytes());
    assert_eq!(st(&local(&mut sw, set)), 0);
    let b = local(&mut sw, dr(method::GET, ATTR_MFT, (1 << 28) | 1, &[]));
    assert_eq!(be16(&b, d + 2), 0b10);
    assert_eq!(sw.route_mlid(0xc021), Some((1 << 17) | 0b1010));
    assert_eq!(sw.route_mlid(0xc020), None);
    assert_eq!(sw.route_mlid(0xbfff), None, "a unicast LID");
    // A position past the ports (20 ports: positions 0 and 1), a block past the cap.
    let b = local(&mut sw, dr(method::GET, ATTR_MFT, 2 << 28, &[]));
    assert_eq!(st(&b), status::INVALID_ATTRIB_VALUE);
    let blocks = (switch::MFT_CAP / switch::MFT_BLOCK) as u32;
    let b = local(&mut sw, dr(method::GET, ATTR_MFT, blocks, &[]));
    assert_eq!(st(&b), status::INVALID_ATTRIB_VALUE);
    // The SM's programming of a group: through the same attribute.
    assert!(sm::program_mft(&mut sw, 0xc005, (1 << 18) | 0b110));
    let b = local(&mut sw, dr(method::GET, ATTR_MFT, 0, &[]));
    assert_eq!(be16(&b, d + 10), 0b110);
    assert_eq!(sw.route_mlid(0xc005), Some((1 << 18) | 0b110));
    assert!(sm::program_mft(&mut sw, 0xc005, 0));
    assert_eq!(sw.route_mlid(0xc005), None);
}

#[test]
fn switch_sma_attributes() {
    let mut sw = Box::new(Switch::new(2, 0xabcd));
    let ni = local(&mut sw, dr(method::GET, attr::NODE_INFO, 0, &[]));
    assert_eq!(ni[off::METHOD], method::GET_RESP);
    assert_eq!(st(&ni), 0);
    assert_eq!(
        be16(&ni, off::STATUS) & status::DIRECTION,
        status::DIRECTION
    );
    let d = off::DATA;
    // A switch with two ports, its GUIDs.
    assert_eq!((ni[d + 2], ni[d + 3]), (2, 2));
    assert_eq!(ni[d + 4..d + 12], 0xabcdu64.to_be_bytes());
    assert_eq!(ni[d + 12..d + 20], 0xabcdu64.to_be_bytes());
    let nd = local(&mut sw, dr(method::GET, attr::NODE_DESC, 0, &[]));
    assert!(nd[d..].starts_with(b"rdma-rs simulated switch"));

    // SwitchInfo: LinearFDBCap; a Set of LinearFDBTop; a top past the cap is refused.
    let si = local(&mut sw, dr(method::GET, ATTR_SWITCH_INFO, 0, &[]));
    assert_eq!(usize::from(be16(&si, d)), switch::LFT_CAP);
    let mut set = dr(method::SET, ATTR_SWITCH_INFO, 0, &[]);
    set[d + 6..d + 8].copy_from_slice(&0x200u16.to_be_bytes());
    let r = local(&mut sw, set);
    assert_eq!((st(&r), be16(&r, d + 6)), (0, 0x200));
    set[d + 6..d + 8].copy_from_slice(&0xffffu16.to_be_bytes());
    let r = local(&mut sw, set);
    assert_eq!(st(&r), status::INVALID_ATTRIB_VALUE);

    // LFT blocks: all unset, then a Set is read back; a block past the cap is refused.
    let b = local(&mut sw, dr(method::GET, ATTR_LFT, 4, &[]));
    assert!(b[d..d + 64].iter().all(|p| *p == NO_PORT));
    // A Set writes the whole block.
    let mut set = dr(method::SET, ATTR_LFT, 4, &[]);
    set[d..d + 64].fill(NO_PORT);
    set[d + 5] = 2;
    assert_eq!(st(&local(&mut sw, set)), 0);
    let b = local(&mut sw, dr(method::GET, ATTR_LFT, 4, &[]));
    assert_eq!((b[d + 5], b[d + 6]), (2, NO_PORT));
    let b = local(&mut sw, dr(method::GET, ATTR_LFT, 0x10000, &[]));
    assert_eq!(st(&b), status::INVALID_ATTRIB_VALUE);

    // PortInfo of every port; port 3 does not exist; ACTIVE only through ARMED.
    let p0 = local(&mut sw, dr(method::GET, attr::PORT_INFO, 0, &[]));
    assert_eq!(p0[d + 32] & 0xf, port_state::INIT);
    // LocalPortNum: the SM at port 0 asked.
    let p1 = local(&mut sw, dr(method::GET, attr::PORT_INFO, 1, &[]));
    assert_eq!((p1[d + 28], p1[d + 32] & 0xf), (0, port_state::DOWN));
    // Bit 31 of the modifier (SMSupportsExtendedSpeeds) does not change the port.
    let p1x = local(&mut sw, dr(method::GET, attr::PORT_INFO, 0x8000_0001, &[]));
    assert_eq!((st(&p1x), p1x[d + 32] & 0xf), (0, port_state::DOWN));
    let p3 = local(&mut sw, dr(method::GET, attr::PORT_INFO, 3, &[]));
    assert_eq!(st(&p3), status::INVALID_ATTRIB_VALUE);
    let mut set = dr(method::SET, attr::PORT_INFO, 0, &[]);
    set[d + 16..d + 18].copy_from_slice(&7u16.to_be_bytes());
    set[d + 32] = port_state::ACTIVE;
    assert_eq!(st(&local(&mut sw, set)), status::INVALID_ATTRIB_VALUE);
    set[d + 32] = port_state::ARMED;
    assert_eq!(st(&local(&mut sw, set)), 0);
    assert_eq!(sw.port0_lid(), 7);
    // P_KeyTable: the default partition; block 1 does not exist.
    let pk = local(&mut sw, dr(method::GET, attr::PKEY_TABLE, 1 << 16, &[]));
    assert_eq!(be16(&pk, d), 0xffff);
    let pk = local(&mut sw, dr(method::GET, attr::PKEY_TABLE, 1, &[]));
    assert_eq!(st(&pk), status::INVALID_ATTRIB_VALUE);
    // MLNXExtendedPortInfo: no FDR10; StateChangeEnable is set; FDR10 cannot be enabled.
    let e = local(&mut sw, dr(method::GET, ATTR_MLNX_EXT_PORT_INFO, 2, &[]));
    assert_eq!((st(&e), e[d + 3], e[d + 7], e[d + 15]), (0, 0, 0, 0));
    let mut set = dr(method::SET, ATTR_MLNX_EXT_PORT_INFO, 2, &[]);
    set[d + 3] = 1;
    assert_eq!(st(&local(&mut sw, set)), 0);
    let e = local(&mut sw, dr(method::GET, ATTR_MLNX_EXT_PORT_INFO, 2, &[]));
    assert_eq!(e[d + 3], 1);
    set[d + 11] = 1;
    assert_eq!(st(&local(&mut sw, set)), status::INVALID_ATTRIB_VALUE);
    let e = local(&mut sw, dr(method::GET, ATTR_MLNX_EXT_PORT_INFO, 3, &[]));
    assert_eq!(st(&e), status::INVALID_ATTRIB_VALUE);
    // No SM runs on it: no SMInfo.
    let r = local(&mut sw, dr(method::GET, ATTR_SM_INFO, 0, &[]));
    assert_eq!(st(&r), status::UNSUPPORTED_METHOD_ATTRIB);
    // Unknown attributes and methods.
    let r = local(&mut sw, dr(method::GET, 0x0030, 0, &[]));
    assert_eq!(st(&r), status::UNSUPPORTED_METHOD_ATTRIB);
    let r = local(&mut sw, dr(0x05, attr::NODE_INFO, 0, &[]));
    assert_eq!(st(&r), status::UNSUPPORTED_METHOD);
}

#[test]
fn directed_routes_through_the_switch() {
    let mut sw = Box::new(Switch::new(2, 0xabcd));
    let mut b = ib_fw(2);
    sw.link(1, true);
    sw.link(2, true);
    // An SM behind switch port 1 (a function's port 1) asks the function at port 2: path
    // [1, 2]. Its MAD layer sends it with the pointer on hop 1.
    let mut m = dr(method::GET, attr::NODE_INFO, 0, &[1, 2]);
    m[off::HOP_PTR] = 1;
    assert_eq!(sw.dr_forward(1, &mut m), DrStep::Out(2));
    assert_eq!((m[off::HOP_PTR], m[off::RETURN_PATH + 1]), (2, 1));
    let mut resp = [0u8; MAD_SIZE];
    assert_eq!(b.process_mad(0, 0, &m, &mut resp), MadOutcome::Reply);
    assert_eq!(resp[off::DATA + 2], 1, "a channel adapter answers");
    // Its reply leaves with the pointer stepped back (C14-13:1) and comes back out port 1.
    assert_eq!(resp[off::HOP_PTR], 3);
    resp[off::HOP_PTR] = 2;
    assert_eq!(sw.dr_forward(2, &mut resp), DrStep::Out(1));
    assert_eq!(resp[off::HOP_PTR], 1);

    // The switch itself at hop 1: its SMA answers, the reply goes back the way it came.
    let mut m = dr(method::GET, attr::NODE_INFO, 0, &[1]);
    m[off::HOP_PTR] = 1;
    assert_eq!(sw.dr_forward(1, &mut m), DrStep::Agent);
    assert_eq!(sw.smp(1, &mut m), MadOutcome::Reply);
    assert_eq!(
        m[off::DATA + 36],
        1,
        "LocalPortNum is the port it came in on"
    );
    assert_eq!(sw.dr_forward(0, &mut m), DrStep::Out(1));
    assert_eq!(m[off::HOP_PTR], 1);
    // PortInfo of its port 2 asked through port 1: LocalPortNum 1, the port the SMP came in
    // on (opensm probes beyond every port but that one).
    let mut m = dr(method::GET, attr::PORT_INFO, 2, &[1]);
    m[off::HOP_PTR] = 1;
    assert_eq!(sw.dr_forward(1, &mut m), DrStep::Agent);
    assert_eq!(sw.smp(1, &mut m), MadOutcome::Reply);
    assert_eq!(
        (m[off::DATA + 28], m[off::DATA + 32] & 0xf),
        (1, port_state::INIT)
    );

    // Bad pointers and ports: an unsent SMP (pointer 0), a path out of a port the switch
    // does not have, a pointer past the end.
    let mut m = dr(method::GET, attr::NODE_INFO, 0, &[1, 2]);
    assert_eq!(sw.dr_forward(1, &mut m), DrStep::Drop);
    let mut m = dr(method::GET, attr::NODE_INFO, 0, &[1, 9]);
    m[off::HOP_PTR] = 1;
    assert_eq!(sw.dr_forward(1, &mut m), DrStep::Drop);
    let mut m = dr(method::GET, attr::NODE_INFO, 0, &[1, 2]);
    m[off::HOP_PTR] = 5;
    assert_eq!(sw.dr_forward(1, &mut m), DrStep::Drop);
    let mut m = dr(method::GET, attr::NODE_INFO, 0, &[1, 2]);
    m[off::HOP_CNT] = 64;
    m[off::HOP_PTR] = 1;
    assert_eq!(sw.dr_forward(1, &mut m), DrStep::Drop);
}

#[test]
fn lid_forwarding() {
    let mut sw = Box::new(Switch::new(2, 0xabcd));
    sw.link(2, true);
    let mut set = dr(method::SET, ATTR_LFT, 0, &[]);
    set[off::DATA..off::DATA + 64].fill(NO_PORT);
    set[off::DATA + 9] = 2;
    local(&mut sw, set);
    // LinearFDBTop 0: nothing forwards yet.
    assert_eq!(sw.route_lid(9), None);
    let mut si = dr(method::SET, ATTR_SWITCH_INFO, 0, &[]);
    si[off::DATA + 6..off::DATA + 8].copy_from_slice(&63u16.to_be_bytes());
    local(&mut sw, si);
    // Port 2 is INIT, not ACTIVE: dropped until the SM activates it.
    assert_eq!(sw.route_lid(9), None);
    for s in [port_state::ARMED, port_state::ACTIVE] {
        let mut p = dr(method::SET, attr::PORT_INFO, 2, &[]);
        p[off::DATA + 32] = s;
        assert_eq!(st(&local(&mut sw, p)), 0);
    }
    assert_eq!(sw.route_lid(9), Some(2));
    // An unprogrammed LID and one above the top are dropped.
    assert_eq!(sw.route_lid(10), None);
    assert_eq!(sw.route_lid(100), None);
    // The peer's link going down takes the port down.
    sw.link(2, false);
    assert_eq!(sw.port_state(2), port_state::DOWN);
    assert_eq!(sw.route_lid(9), None);
}

#[test]
fn embedded_sm_through_the_switch() {
    let mut sw = Box::new(Switch::new(2, 0xabcd));
    let mut a = ib_fw(0x10);
    let mut b = ib_fw(0x11);
    assert_eq!(sm::sweep(&mut a, &mut sw, 1), 1);
    assert_eq!(sm::sweep(&mut b, &mut sw, 2), 1);
    let (la, lb) = (sm::lid_for(&a, 0), sm::lid_for(&b, 0));
    assert_eq!((a.port_lid(0), b.port_lid(0)), (la, lb));
    assert_eq!(a.sma(0).unwrap().sm_lid, sm::SM_LID);
    // The switch holds the SM's LID, its ports are ACTIVE, its table routes both LIDs.
    assert_eq!(sw.port0_lid(), sm::SM_LID);
    assert_eq!(sw.port_state(1), port_state::ACTIVE);
    assert_eq!(sw.route_lid(la), Some(1));
    assert_eq!(sw.route_lid(lb), Some(2));
    assert_eq!(sw.route_lid(sm::SM_LID), Some(0));
    assert_eq!(
        (sw.nports(), sw.sm_lid(), sw.lft_top()),
        (2, sm::SM_LID, la.max(lb))
    );
    let entries: std::vec::Vec<_> = sw.lft_entries().collect();
    assert_eq!(entries, [(la, 1), (lb, 2)]);
    // SMInfo of the embedded SM: the master, the switch's GUID, a sweep counted.
    let si = local(&mut sw, dr(method::GET, ATTR_SM_INFO, 0, &[]));
    let d = off::DATA;
    assert_eq!(st(&si), 0);
    assert_eq!(si[d..d + 8], 0xabcdu64.to_be_bytes());
    assert_eq!((be32(&si, d + 16), si[d + 20] & 0xf), (2, 3));
    // Port 0 has IsSM.
    let p0 = local(&mut sw, dr(method::GET, attr::PORT_INFO, 0, &[]));
    assert_ne!(be32(&p0, d + 20) & super::sma::CAP_IS_SM, 0);
    // A port going down and up is swept again, with its switch port.
    assert!(b.set_port_up(1, false));
    sm::links(&b, &mut sw, 2);
    assert_eq!(sw.route_lid(lb), None);
    assert!(b.set_port_up(1, true));
    assert_eq!(sm::sweep(&mut b, &mut sw, 2), 1);
    assert_eq!(sw.route_lid(lb), Some(2));
    assert_eq!(b.sma(0).unwrap().state, port_state::ACTIVE);
}
