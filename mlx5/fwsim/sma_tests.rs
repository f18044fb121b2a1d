// SPDX-License-Identifier: GPL-2.0

//! The subnet management agent, the performance management agent, MAD_IFC and the embedded
//! SM (`sma.rs`, `pma.rs`, `mad.rs`, `sm.rs`), driven with the MADs opensm and
//! infiniband-diags send.

use std::vec;

use super::mad::{class, method, off, MadBytes, MadOutcome, MAD_SIZE};
use super::profile::{LinkLayer, CONNECTX6_DX, CONNECTX7};
use super::sma::{attr, port_state};
use super::switch::Switch;
use super::tests::{inbox, ok as exec_ok};
use super::*;
use crate::prm::cmd::{mad_ifc_in, mad_ifc_out};
use crate::prm::consts::{
    PORT_CHANGE_SUBTYPE_ACTIVE, PORT_CHANGE_SUBTYPE_CLIENT_REREG, PORT_CHANGE_SUBTYPE_DOWN,
    PORT_CHANGE_SUBTYPE_LID, PORT_CHANGE_SUBTYPE_PKEY,
};

fn ib_fw() -> Fw {
    Fw::new(Config {
        profile: CONNECTX7,
        link_layer: LinkLayer::Ib,
        num_ports: 1,
        serial: 0x42,
        memic: true,
    })
    .unwrap()
}

fn mad(cls: u8, meth: u8, attr_id: u16, amod: u32) -> MadBytes {
    let mut m = [0u8; MAD_SIZE];
    m[0] = 1;
    m[1] = cls;
    m[2] = 1;
    m[3] = meth;
    m[8..16].copy_from_slice(&0x1234u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr_id.to_be_bytes());
    m[20..24].copy_from_slice(&amod.to_be_bytes());
    m
}

fn ask(fw: &mut Fw, m: &MadBytes) -> (MadOutcome, MadBytes) {
    let mut out = [0u8; MAD_SIZE];
    let o = fw.process_mad(0, 0, m, &mut out);
    (o, out)
}

fn status(m: &MadBytes) -> u16 {
    u16::from_be_bytes([m[4], m[5]])
}

/// A PortInfo Set of `state` built from a Get, with `lid` and SM LID 1.
fn set_port_info(fw: &mut Fw, lid: u16, state: u8) -> MadBytes {
    let (_, got) = ask(
        fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::PORT_INFO, 0),
    );
    let mut m = mad(class::SUBN_LID_ROUTED, method::SET, attr::PORT_INFO, 0);
    m[64..128].copy_from_slice(&got[64..128]);
    m[64 + 16..64 + 18].copy_from_slice(&lid.to_be_bytes());
    m[64 + 18..64 + 20].copy_from_slice(&1u16.to_be_bytes());
    m[64 + 32] = (m[64 + 32] & 0xf0) | state;
    m[64 + 33] &= 0x0f;
    ask(fw, &m).1
}

#[test]
fn node_info_and_description() {
    let mut fw = ib_fw();
    let (o, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::NODE_INFO, 0),
    );
    assert_eq!(o, MadOutcome::Reply);
    assert_eq!(r[3], method::GET_RESP);
    assert_eq!(status(&r), 0);
    let d = &r[64..];
    assert_eq!(d[2], 1, "channel adapter");
    assert_eq!(d[3], 1, "one port");
    assert_eq!(
        u64::from_be_bytes(d[12..20].try_into().unwrap()),
        fw.node_guid()
    );
    assert_eq!(
        u64::from_be_bytes(d[20..28].try_into().unwrap()),
        fw.node_guid() | 1
    );
    assert_eq!(u16::from_be_bytes([d[28], d[29]]), 128, "PartitionCap");
    assert_eq!(u16::from_be_bytes([d[30], d[31]]), CONNECTX7.device_id);
    assert_eq!(d[36], 1, "LocalPortNum");
    assert_eq!(&d[37..40], &[0x00, 0x02, 0xc9]);
    let (_, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::NODE_DESC, 0),
    );
    assert_eq!(&r[64..128], &fw.node_desc()[..]);
}

#[test]
fn port_info_starts_init_without_lid() {
    let mut fw = ib_fw();
    let (_, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::PORT_INFO, 0),
    );
    let d = &r[64..];
    assert_eq!(u16::from_be_bytes([d[16], d[17]]), 0, "LID");
    assert_eq!(d[32] & 0xf, port_state::INIT);
    assert_eq!(d[33] >> 4, 5, "LinkUp");
    assert_eq!(d[28], 1, "LocalPortNum");
    // Bit 31 of the modifier (SMSupportsExtendedSpeeds) names no other port.
    let (_, x) = ask(
        &mut fw,
        &mad(
            class::SUBN_LID_ROUTED,
            method::GET,
            attr::PORT_INFO,
            0x8000_0001,
        ),
    );
    assert_eq!((status(&x), &x[64..128]), (0, &r[64..128]));
    assert_eq!(d[31], 2, "4X");
    assert_eq!(d[62] >> 4, 8, "NDR active");
    assert_eq!(
        u32::from_be_bytes(d[20..24].try_into().unwrap()),
        sma::CAP_MASK1
    );
    assert_eq!(
        u64::from_be_bytes(d[8..16].try_into().unwrap()),
        0xfe80_0000_0000_0000
    );
    // The host sets IsSM (an SM runs on it).
    assert!(fw.set_port_caps(1, sma::CAP_IS_SM, 0));
    assert!(!fw.set_port_caps(2, sma::CAP_IS_SM, 0));
    let (_, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::PORT_INFO, 0),
    );
    let cap = u32::from_be_bytes(r[84..88].try_into().unwrap());
    assert_eq!(cap, sma::CAP_MASK1 | sma::CAP_IS_SM);
}

#[test]
fn port_state_machine() {
    let mut fw = ib_fw();
    // INIT -> ACTIVE is refused, nothing of the Set is applied.
    let r = set_port_info(&mut fw, 0x17, port_state::ACTIVE);
    assert_eq!(status(&r), mad::status::INVALID_ATTRIB_VALUE);
    assert_eq!(fw.sma(0).unwrap().state, port_state::INIT);
    assert_eq!(fw.port_lid(0), 0);
    assert!(!fw.has_port_events());
    // The LID alone, then ARMED, then ACTIVE.
    let r = set_port_info(&mut fw, 0x17, port_state::NOP);
    assert_eq!(status(&r), 0);
    assert_eq!(
        u16::from_be_bytes([r[80], r[81]]),
        0x17,
        "the response is PortInfo as set"
    );
    assert_eq!(fw.next_port_event(), Some((1, PORT_CHANGE_SUBTYPE_LID)));
    assert_eq!(fw.next_port_event(), None);
    assert_eq!(status(&set_port_info(&mut fw, 0x17, port_state::ARMED)), 0);
    assert_eq!(fw.sma(0).unwrap().state, port_state::ARMED);
    assert_eq!(fw.next_port_event(), None, "ARMED raises nothing");
    assert_eq!(status(&set_port_info(&mut fw, 0x17, port_state::ACTIVE)), 0);
    assert_eq!(fw.sma(0).unwrap().state, port_state::ACTIVE);
    assert_eq!(fw.next_port_event(), Some((1, PORT_CHANGE_SUBTYPE_ACTIVE)));
    assert_eq!(fw.port_lid(0), 0x17);
    assert_eq!(fw.sma(0).unwrap().sm_lid, 1);
    // ACTIVE -> ARMED is refused.
    let r = set_port_info(&mut fw, 0x17, port_state::ARMED);
    assert_eq!(status(&r), mad::status::INVALID_ATTRIB_VALUE);
    // The link going down: DOWN, the event; back up: INIT, the LID kept until the SM sets it.
    assert!(fw.set_port_up(1, false));
    assert_eq!(fw.sma(0).unwrap().state, port_state::DOWN);
    assert_eq!(fw.next_port_event(), Some((1, PORT_CHANGE_SUBTYPE_DOWN)));
    assert!(fw.set_port_up(1, true));
    assert_eq!(fw.sma(0).unwrap().state, port_state::INIT);
    let r = set_port_info(&mut fw, 0x17, port_state::ACTIVE);
    assert_eq!(status(&r), mad::status::INVALID_ATTRIB_VALUE, "INIT again");
}

#[test]
fn client_reregister_and_tables_raise_events() {
    let mut fw = ib_fw();
    let (_, got) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::PORT_INFO, 0),
    );
    let mut m = mad(class::SUBN_LID_ROUTED, method::SET, attr::PORT_INFO, 0);
    m[64..128].copy_from_slice(&got[64..128]);
    m[64 + 32] &= 0xf0;
    m[64 + 33] &= 0x0f;
    m[64 + 51] |= 0x80;
    assert_eq!(status(&ask(&mut fw, &m).1), 0);
    assert_eq!(
        fw.next_port_event(),
        Some((1, PORT_CHANGE_SUBTYPE_CLIENT_REREG))
    );
    // P_KeyTable block 0: 0xffff first; a Set changes it and raises PKEY.
    let (_, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::PKEY_TABLE, 0),
    );
    assert_eq!(&r[64..68], &[0xff, 0xff, 0, 0]);
    let mut m = mad(class::SUBN_LID_ROUTED, method::SET, attr::PKEY_TABLE, 0);
    m[64..68].copy_from_slice(&[0xff, 0xff, 0x80, 0x01]);
    let (_, r) = ask(&mut fw, &m);
    assert_eq!((status(&r), &r[64..68]), (0, &[0xff, 0xff, 0x80, 0x01][..]));
    assert_eq!(fw.next_port_event(), Some((1, PORT_CHANGE_SUBTYPE_PKEY)));
    // A block beyond PartitionCap.
    let (_, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::PKEY_TABLE, 4),
    );
    assert_eq!(status(&r), mad::status::INVALID_ATTRIB_VALUE);
    // GUIDInfo: entry 0 the port GUID.
    let (_, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::GUID_INFO, 0),
    );
    assert_eq!(
        u64::from_be_bytes(r[64..72].try_into().unwrap()),
        fw.node_guid() | 1
    );
    // SLtoVL and VLArbitration have defaults; VLArb block 0 does not exist.
    let (_, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::SL_TO_VL_TABLE, 0),
    );
    assert_eq!(status(&r), 0);
    let (_, r) = ask(
        &mut fw,
        &mad(
            class::SUBN_LID_ROUTED,
            method::GET,
            attr::VL_ARB_TABLE,
            1 << 16,
        ),
    );
    assert_eq!((status(&r), r[65]), (0, 0xff));
    let (_, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::VL_ARB_TABLE, 0),
    );
    assert_eq!(status(&r), mad::status::INVALID_ATTRIB_VALUE);
}

#[test]
fn bad_attribute_method_and_version() {
    let mut fw = ib_fw();
    // SMInfo: a CA's SMA does not implement it; NodeInfo cannot be set.
    let (o, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, 0x0020, 0),
    );
    assert_eq!(
        (o, status(&r)),
        (MadOutcome::Reply, mad::status::UNSUPPORTED_METHOD_ATTRIB)
    );
    let (_, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::SET, attr::NODE_INFO, 0),
    );
    assert_eq!(status(&r), mad::status::UNSUPPORTED_METHOD_ATTRIB);
    let (_, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, 0x06, attr::NODE_INFO, 0),
    );
    assert_eq!(status(&r), mad::status::UNSUPPORTED_METHOD);
    let mut m = mad(class::SUBN_LID_ROUTED, method::GET, attr::NODE_INFO, 0);
    m[2] = 2;
    assert_eq!(status(&ask(&mut fw, &m).1), mad::status::BAD_VERSION);
    // A response is never answered; a TrapRepress is consumed.
    let (o, _) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET_RESP, attr::NODE_INFO, 0),
    );
    assert_eq!(o, MadOutcome::Dropped(mad::Dropped::NotForUs));
    let (o, _) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::TRAP_REPRESS, 0x0002, 0),
    );
    assert_eq!(o, MadOutcome::Consumed);
}

#[test]
fn directed_route_hops() {
    let mut fw = ib_fw();
    // Local (hop_cnt 0): answered, D bit set, pointer untouched.
    let m = mad(class::SUBN_DIRECTED_ROUTE, method::GET, attr::NODE_INFO, 0);
    let (o, r) = ask(&mut fw, &m);
    assert_eq!(o, MadOutcome::Reply);
    assert_eq!(status(&r), mad::status::DIRECTION);
    assert_eq!((r[off::HOP_PTR], r[off::HOP_CNT]), (0, 0));
    // Arriving at the end of a 2-hop path: the port records itself in the return path.
    let mut m = mad(class::SUBN_DIRECTED_ROUTE, method::GET, attr::NODE_INFO, 0);
    m[off::HOP_CNT] = 2;
    m[off::HOP_PTR] = 2;
    let (o, r) = ask(&mut fw, &m);
    assert_eq!(o, MadOutcome::Reply);
    assert_eq!((r[off::HOP_PTR], r[off::RETURN_PATH + 2]), (3, 1));
    // Already advanced by the MAD layer (hop_ptr = hop_cnt + 1): for us as well.
    m[off::HOP_PTR] = 3;
    assert_eq!(ask(&mut fw, &m).0, MadOutcome::Reply);
    // Mid-path: a CA forwards nothing.
    m[off::HOP_PTR] = 1;
    assert_eq!(
        ask(&mut fw, &m).0,
        MadOutcome::Dropped(mad::Dropped::NotForUs)
    );
    // Returning (D bit set), or a path too long.
    m[off::HOP_PTR] = 2;
    m[4] = 0x80;
    assert_eq!(
        ask(&mut fw, &m).0,
        MadOutcome::Dropped(mad::Dropped::NotForUs)
    );
    m[4] = 0;
    m[off::HOP_CNT] = 64;
    m[off::HOP_PTR] = 64;
    assert_eq!(
        ask(&mut fw, &m).0,
        MadOutcome::Dropped(mad::Dropped::NotForUs)
    );
}

#[test]
fn mkey_protection() {
    let mut fw = ib_fw();
    let (_, got) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::PORT_INFO, 0),
    );
    let mut m = mad(class::SUBN_LID_ROUTED, method::SET, attr::PORT_INFO, 0);
    m[64..128].copy_from_slice(&got[64..128]);
    m[64..72].copy_from_slice(&0xabcdu64.to_be_bytes());
    m[64 + 32] &= 0xf0;
    m[64 + 33] &= 0x0f;
    m[64 + 34] = 1 << 6; // protection level 1
    assert_eq!(status(&ask(&mut fw, &m).1), 0);
    // A Set with the wrong M_Key is dropped; a Get is answered with the M_Key hidden.
    assert_eq!(
        ask(&mut fw, &m).0,
        MadOutcome::Dropped(mad::Dropped::MkeyViolation)
    );
    let (o, r) = ask(
        &mut fw,
        &mad(class::SUBN_LID_ROUTED, method::GET, attr::PORT_INFO, 0),
    );
    assert_eq!(o, MadOutcome::Reply);
    assert_eq!(&r[64..72], &[0; 8]);
    assert_eq!(
        u16::from_be_bytes([r[64 + 44], r[64 + 45]]),
        1,
        "one violation counted"
    );
    // The right M_Key, or MAD_IFC's ignore-M_Key bit, passes.
    m[off::MKEY..off::MKEY + 8].copy_from_slice(&0xabcdu64.to_be_bytes());
    assert_eq!(ask(&mut fw, &m).0, MadOutcome::Reply);
    let mut out = [0u8; MAD_SIZE];
    m[off::MKEY..off::MKEY + 8].fill(0);
    assert_eq!(
        fw.process_mad(0, mad::IGNORE_MKEY, &m, &mut out),
        MadOutcome::Reply
    );
}

#[test]
fn embedded_sm_sweep() {
    let mut fw = ib_fw();
    let mut sw = Switch::new(1, 0x5a);
    assert_eq!(sm::sweep(&mut fw, &mut sw, 1), 1);
    let s = *fw.sma(0).unwrap();
    assert_eq!(
        (s.state, s.lid, s.sm_lid, s.subnet_timeout),
        (port_state::ACTIVE, 0x184, 1, 18)
    );
    assert_eq!(sm::lid_for(&fw, 0), 0x184);
    assert_eq!(fw.next_port_event(), Some((1, PORT_CHANGE_SUBTYPE_LID)));
    assert_eq!(fw.next_port_event(), Some((1, PORT_CHANGE_SUBTYPE_ACTIVE)));
    assert_eq!(
        sm::sweep(&mut fw, &mut sw, 1),
        0,
        "an ACTIVE port is left alone"
    );
    // QUERY_HCA_VPORT_CONTEXT reports what the SM set.
    let mut inb = inbox(crate::prm::opcode::QUERY_HCA_VPORT_CONTEXT, 0, 0, 16);
    crate::prm::cmd::query_hca_vport_context_in::port_num
        .set(&mut inb, 1)
        .unwrap();
    let out = exec_ok(
        &mut fw,
        &inb,
        crate::prm::cmd::query_hca_vport_context_out::SIZE_BYTES,
    );
    let v = |f| {
        crate::prm::cmd::query_hca_vport_context_out::hca_vport_context
            .inner(f)
            .get(&out)
            .unwrap()
    };
    use crate::prm::ctx::hca_vport_context as h;
    assert_eq!((v(h::lid), v(h::sm_lid), v(h::port_state)), (0x184, 1, 4));
    // An Ethernet function has no SMA to sweep.
    let mut eth = Fw::new(Config {
        profile: CONNECTX6_DX,
        link_layer: LinkLayer::Ethernet,
        num_ports: 1,
        serial: 1,
        memic: true,
    })
    .unwrap();
    assert_eq!(sm::sweep(&mut eth, &mut sw, 1), 0);
}

#[test]
fn mad_ifc_command() {
    let mut fw = ib_fw();
    let mut inb = inbox(crate::prm::opcode::MAD_IFC, 0, 0, mad_ifc_in::SIZE_BYTES);
    mad_ifc_in::port.set(&mut inb, 1).unwrap();
    let m = mad(class::SUBN_LID_ROUTED, method::GET, attr::NODE_INFO, 0);
    inb[16..16 + MAD_SIZE].copy_from_slice(&m);
    let out = exec_ok(&mut fw, &inb, mad_ifc_out::SIZE_BYTES);
    assert_eq!(out[16 + 3], method::GET_RESP);
    assert_eq!(out[16 + 64 + 2], 1, "NodeType CA");
    // Port 2 of a one-port function; an op_mod beyond the two key bits; a short inbox.
    mad_ifc_in::port.set(&mut inb, 2).unwrap();
    let mut o = vec![0u8; mad_ifc_out::SIZE_BYTES];
    let c = fw.exec(&inb, &mut o).unwrap();
    assert_eq!(
        (c.status, c.syndrome),
        (Status::BAD_PARAM_ERR, syndrome::BAD_PORT)
    );
    mad_ifc_in::port.set(&mut inb, 1).unwrap();
    crate::prm::cmd::mbox_in::op_mod.set(&mut inb, 4).unwrap();
    let c = fw.exec(&inb, &mut o).unwrap();
    assert_eq!(c.syndrome, syndrome::BAD_OP_MOD);
    crate::prm::cmd::mbox_in::op_mod.set(&mut inb, 0).unwrap();
    let c = fw.exec(&inb[..100], &mut o).unwrap();
    assert_eq!(c.status, Status::BAD_INP_LEN_ERR);
    // A response MAD is dropped: BAD_PKT_ERR.
    inb[16 + 3] = method::GET_RESP;
    let c = fw.exec(&inb, &mut o).unwrap();
    assert_eq!(
        (c.status, c.syndrome),
        (Status::BAD_PKT_ERR, syndrome::MAD_DROPPED)
    );
    // SMPs to an Ethernet function: no SMA there; its PMA answers.
    let mut eth = Fw::new(Config {
        profile: CONNECTX6_DX,
        link_layer: LinkLayer::Ethernet,
        num_ports: 1,
        serial: 1,
        memic: true,
    })
    .unwrap();
    inb[16 + 3] = method::GET;
    let c = eth.exec(&inb, &mut o).unwrap();
    assert_eq!(c.syndrome, syndrome::MAD_NO_SMA);
    let p = mad(class::PERF_MGMT, method::GET, pma::attr::CLASS_PORT_INFO, 0);
    inb[16..16 + MAD_SIZE].copy_from_slice(&p);
    let out = exec_ok(&mut eth, &inb, mad_ifc_out::SIZE_BYTES);
    assert_eq!(
        u16::from_be_bytes([out[16 + 66], out[16 + 67]]),
        pma::CAP_EXT_WIDTH
    );
}

#[test]
fn pma_counters() {
    let mut fw = ib_fw();
    fw.count_traffic(0, |t| {
        t.xmit(3, 3 * 4096);
        t.rcv(1, 0);
    });
    let (_, r) = ask(
        &mut fw,
        &mad(class::PERF_MGMT, method::GET, pma::attr::PORT_COUNTERS, 0),
    );
    let d = &r[64..];
    let be = |o: usize| u32::from_be_bytes(d[o..o + 4].try_into().unwrap());
    assert_eq!(be(24), (3 * 4096 + 3 * 26) / 4, "PortXmitData in words");
    assert_eq!(be(28), 26 / 4 + 1 - 1, "PortRcvData");
    assert_eq!((be(32), be(36)), (3, 1));
    let (_, r) = ask(
        &mut fw,
        &mad(
            class::PERF_MGMT,
            method::GET,
            pma::attr::PORT_COUNTERS_EXT,
            0,
        ),
    );
    let d = &r[64..];
    let be = |o: usize| u64::from_be_bytes(d[o..o + 8].try_into().unwrap());
    assert_eq!((be(8), be(24), be(40)), ((3 * 4096 + 3 * 26) / 4, 3, 3));
    // Set with CounterSelect clears the selected ones.
    let mut m = mad(class::PERF_MGMT, method::SET, pma::attr::PORT_COUNTERS, 0);
    m[66..68].copy_from_slice(&(1u16 << 12).to_be_bytes());
    let (_, r) = ask(&mut fw, &m);
    assert_eq!((status(&r), &r[64 + 24..64 + 28]), (0, &[0u8; 4][..]));
    assert_eq!(fw.port_traffic(0).xmit_pkts, 3);
    let (_, r) = ask(&mut fw, &mad(class::PERF_MGMT, method::GET, 0x0099, 0));
    assert_eq!(status(&r), mad::status::UNSUPPORTED_METHOD_ATTRIB);
}

#[test]
fn host_sets_is_sm_through_modify_hca_vport_context() {
    use crate::prm::cmd::{modify_hca_vport_context_in as m, query_hca_vport_context_in as q};
    use crate::prm::ctx::hca_vport_context as h;
    let mut fw = ib_fw();
    let v = |f| m::hca_vport_context.inner(f);
    // upstream set_port_caps_atomic(): cap_mask1 the new value, cap_mask1_field_select the
    // bits to change, field_select 0.
    let mut inb = inbox(
        crate::prm::opcode::MODIFY_HCA_VPORT_CONTEXT,
        0,
        0,
        m::SIZE_BYTES,
    );
    v(h::cap_mask1).set(&mut inb, sma::CAP_IS_SM).unwrap();
    v(h::cap_mask1_field_select)
        .set(&mut inb, sma::CAP_IS_SM)
        .unwrap();
    exec_ok(&mut fw, &inb, 16);
    assert_eq!(fw.sma(0).unwrap().cap_mask, sma::CAP_MASK1 | sma::CAP_IS_SM);
    let mut qb = inbox(crate::prm::opcode::QUERY_HCA_VPORT_CONTEXT, 0, 0, 16);
    q::port_num.set(&mut qb, 1).unwrap();
    let out = exec_ok(
        &mut fw,
        &qb,
        crate::prm::cmd::query_hca_vport_context_out::SIZE_BYTES,
    );
    let g = |f| {
        crate::prm::cmd::query_hca_vport_context_out::hca_vport_context
            .inner(f)
            .get(&out)
            .unwrap()
    };
    assert_eq!(g(h::cap_mask1), sma::CAP_MASK1 | sma::CAP_IS_SM);
    assert_eq!(g(h::cap_mask1_field_select), sma::CAP_MASK1_HOST);
    // Cleared again (value 0 under the select).
    v(h::cap_mask1).set(&mut inb, 0).unwrap();
    exec_ok(&mut fw, &inb, 16);
    assert_eq!(fw.sma(0).unwrap().cap_mask, sma::CAP_MASK1);
    // A bit the host may not change, or a field_select: refused, nothing changed.
    v(h::cap_mask1_field_select).set(&mut inb, 1 << 5).unwrap();
    let mut o = vec![0u8; 16];
    let c = fw.exec(&inb, &mut o).unwrap();
    assert_eq!(
        (c.status, c.syndrome),
        (Status::BAD_PARAM_ERR, syndrome::VPORT_MODIFY)
    );
    v(h::cap_mask1_field_select).set(&mut inb, 0).unwrap();
    v(h::field_select).set(&mut inb, 1).unwrap();
    let c = fw.exec(&inb, &mut o).unwrap();
    assert_eq!(c.syndrome, syndrome::VPORT_MODIFY);
    assert_eq!(fw.sma(0).unwrap().cap_mask, sma::CAP_MASK1);
}
