// SPDX-License-Identifier: GPL-2.0

//! Host tests: commands built with the layout table, outboxes checked byte for byte through
//! the same table. Each faithfulness rule of `Documentation/fwsim.md` has a test here.

use std::vec;
use std::vec::Vec;

use super::fault::FaultAction;
use super::profile::{LinkLayer, CONNECTX6_DX, CONNECTX7};
use super::syndrome as syn;
use super::*;
use crate::prm::cmd::*;
use crate::prm::consts::*;
use crate::prm::ctx::*;
use crate::prm::layout::{AnyField, Field, Member};

pub(super) fn fw(profile: Profile, link_layer: LinkLayer) -> Fw {
    Fw::new(Config {
        profile,
        link_layer,
        num_ports: 1,
        serial: 0x42,
        memic: true,
    })
    .unwrap()
}

/// An inbox of `len` bytes with the common header filled.
pub(super) fn inbox(opcode: u16, uid: u16, op_mod: u32, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    mbox_in::opcode.set(&mut b, u32::from(opcode)).unwrap();
    mbox_in::uid.set(&mut b, u32::from(uid)).unwrap();
    mbox_in::op_mod.set(&mut b, op_mod).unwrap();
    b
}

pub(super) fn run(fw: &mut Fw, inb: &[u8], out_len: usize) -> (Completion, Vec<u8>) {
    let mut out = vec![0xaau8; out_len];
    let c = fw.exec(inb, &mut out).unwrap();
    assert_eq!(mbox_out::status.get(&out).unwrap(), u32::from(c.status.0));
    assert_eq!(mbox_out::syndrome.get(&out).unwrap(), c.syndrome);
    (c, out)
}

/// Runs a command that must succeed; returns the outbox.
pub(super) fn ok(fw: &mut Fw, inb: &[u8], out_len: usize) -> Vec<u8> {
    let (c, out) = run(fw, inb, out_len);
    assert_eq!(
        (c.status, c.syndrome),
        (Status::OK, 0),
        "command failed: {c:?}"
    );
    out
}

/// Runs a command that must fail; returns status and syndrome, and checks that a failed
/// outbox carries nothing but the header.
pub(super) fn err(fw: &mut Fw, inb: &[u8], out_len: usize) -> (Status, u32) {
    let (c, out) = run(fw, inb, out_len);
    assert_ne!(c.status, Status::OK);
    assert!(out.get(16..).unwrap().iter().all(|&b| b == 0));
    (c.status, c.syndrome)
}

fn get(b: &[u8], f: impl AnyField) -> u32 {
    f.any_field().get(b).unwrap()
}

pub(super) fn alloc(fw: &mut Fw, opcode: u16, uid: u16, out_field: impl AnyField) -> u32 {
    let out = ok(
        fw,
        &inbox(opcode, uid, 0, alloc_pd_in::SIZE_BYTES),
        alloc_pd_out::SIZE_BYTES,
    );
    get(&out, out_field)
}

pub(super) fn alloc_pd(fw: &mut Fw, uid: u16) -> u32 {
    alloc(fw, op::ALLOC_PD, uid, alloc_pd_out::pd)
}

pub(super) fn alloc_uar(fw: &mut Fw, uid: u16) -> u32 {
    alloc(fw, op::ALLOC_UAR, uid, alloc_uar_out::uar)
}

/// A destroy-style command: header plus one number field.
pub(super) fn destroy_in(opcode: u16, uid: u16, f: impl AnyField, n: u32) -> Vec<u8> {
    let mut b = inbox(opcode, uid, 0, 16);
    f.any_field().set(&mut b, n).unwrap();
    b
}

pub(super) fn cq_in(uid: u16, uar: u32, log_size: u32) -> Vec<u8> {
    let mut b = inbox(op::CREATE_CQ, uid, 0, create_cq_in::SIZE_BYTES);
    let ctx = create_cq_in::cq_context;
    ctx.inner(cqc::log_cq_size).set(&mut b, log_size).unwrap();
    ctx.inner(cqc::uar_page).set(&mut b, uar).unwrap();
    ctx.inner(cqc::c_eqn_or_apu_element).set(&mut b, 3).unwrap();
    ctx.inner(cqc::cq_period).set(&mut b, 16).unwrap();
    b
}

pub(super) fn create_cq(fw: &mut Fw, uid: u16, uar: u32) -> u32 {
    let out = ok(fw, &cq_in(uid, uar, 10), create_cq_out::SIZE_BYTES);
    get(&out, create_cq_out::cqn)
}

pub(super) fn qp_in(uid: u16, st: u32, pd: u32, uar: u32, scq: u32, rcq: u32) -> Vec<u8> {
    let mut b = inbox(op::CREATE_QP, uid, 0, create_qp_in::SIZE_BYTES + 64);
    let q = |f| create_qp_in::qpc.inner(f);
    q(qpc::st).set(&mut b, st).unwrap();
    q(qpc::pd).set(&mut b, pd).unwrap();
    q(qpc::uar_page).set(&mut b, uar).unwrap();
    q(qpc::cqn_snd).set(&mut b, scq).unwrap();
    q(qpc::cqn_rcv).set(&mut b, rcq).unwrap();
    q(qpc::log_sq_size).set(&mut b, 8).unwrap();
    q(qpc::log_rq_size).set(&mut b, 8).unwrap();
    q(qpc::log_msg_max).set(&mut b, 30).unwrap();
    q(qpc::user_index).set(&mut b, 0x77).unwrap();
    q(qpc::dbr_addr).set64(&mut b, 0x1234_5000).unwrap();
    b
}

pub(super) fn create_qp(fw: &mut Fw, uid: u16, pd: u32, uar: u32, cq: u32) -> u32 {
    let out = ok(
        fw,
        &qp_in(uid, QPC_ST_RC, pd, uar, cq, cq),
        create_qp_out::SIZE_BYTES,
    );
    get(&out, create_qp_out::qpn)
}

/// A transition inbox with the members a driver sets for an RC QP.
pub(super) fn modify_in(opcode: u16, uid: u16, qpn: u32) -> Vec<u8> {
    let mut b = inbox(opcode, uid, 0, rst2init_qp_in::SIZE_BYTES);
    rst2init_qp_in::qpn.set(&mut b, qpn).unwrap();
    let q = |f| rst2init_qp_in::qpc.inner(f);
    let p = |f| q(qpc::primary_address_path).inner(f);
    match opcode {
        op::RST2INIT_QP | op::INIT2INIT_QP => {
            p(ads::vhca_port_num).set(&mut b, 1).unwrap();
            q(qpc::rwe).set(&mut b, 1).unwrap();
        }
        op::INIT2RTR_QP => {
            q(qpc::mtu).set(&mut b, 5).unwrap();
            q(qpc::log_msg_max).set(&mut b, 30).unwrap();
            q(qpc::remote_qpn).set(&mut b, 0xabcd).unwrap();
            q(qpc::next_rcv_psn).set(&mut b, 0x111).unwrap();
            p(ads::vhca_port_num).set(&mut b, 1).unwrap();
            p(ads::rlid).set(&mut b, 7).unwrap();
            q(qpc::rwe).set(&mut b, 1).unwrap();
        }
        op::RTR2RTS_QP | op::RTS2RTS_QP => {
            q(qpc::next_send_psn).set(&mut b, 0x222).unwrap();
            q(qpc::retry_count).set(&mut b, 7).unwrap();
            p(ads::ack_timeout).set(&mut b, 14).unwrap();
            q(qpc::rwe).set(&mut b, 1).unwrap();
        }
        _ => {}
    }
    b
}

pub(super) fn query_qp(fw: &mut Fw, uid: u16, qpn: u32) -> Vec<u8> {
    let b = destroy_in(op::QUERY_QP, uid, query_qp_in::qpn, qpn);
    ok(fw, &b, query_qp_out::SIZE_BYTES)
}

pub(super) fn mkey_in(uid: u16, pd: u32, octwords: u32, extra: usize) -> Vec<u8> {
    let mut b = inbox(op::CREATE_MKEY, uid, 0, create_mkey_in::SIZE_BYTES + extra);
    let m = |f| create_mkey_in::memory_key_mkey_entry.inner(f);
    m(mkc::pd).set(&mut b, pd).unwrap();
    m(mkc::qpn).set(&mut b, 0xff_ffff).unwrap();
    m(mkc::access_mode_1_0)
        .set(&mut b, MKC_ACCESS_MODE_MTT)
        .unwrap();
    m(mkc::mkey_7_0).set(&mut b, 0x5a).unwrap();
    m(mkc::lw).set(&mut b, 1).unwrap();
    m(mkc::start_addr).set64(&mut b, 0x7f00_0000_1000).unwrap();
    m(mkc::len).set64(&mut b, 0x10000).unwrap();
    m(mkc::log_page_size).set(&mut b, 12).unwrap();
    m(mkc::translations_octword_size)
        .set(&mut b, octwords)
        .unwrap();
    create_mkey_in::translations_octword_actual_size
        .set(&mut b, octwords)
        .unwrap();
    b
}

pub(super) fn create_uctx(fw: &mut Fw, cap: u32) -> u16 {
    let mut b = inbox(op::CREATE_UCTX, 0, 0, create_uctx_in::SIZE_BYTES);
    create_uctx_in::uctx
        .inner(uctx::cap)
        .set(&mut b, cap)
        .unwrap();
    let out = ok(fw, &b, create_uctx_out::SIZE_BYTES);
    get(&out, create_uctx_out::uid) as u16
}

#[test]
fn construction_checks_profile() {
    let cfg = |profile, link_layer, num_ports| Config {
        profile,
        link_layer,
        num_ports,
        serial: 1,
        memic: true,
    };
    assert_eq!(
        Fw::new(cfg(CONNECTX6_DX, LinkLayer::Ib, 1)).err(),
        Some(ConfigError::LinkLayer),
        "ConnectX-6 Dx has no InfiniBand"
    );
    assert_eq!(
        Fw::new(cfg(CONNECTX7, LinkLayer::Ib, 0)).err(),
        Some(ConfigError::Ports)
    );
    assert_eq!(
        Fw::new(cfg(CONNECTX7, LinkLayer::Ib, 3)).err(),
        Some(ConfigError::Ports)
    );
    let f = Fw::new(cfg(CONNECTX7, LinkLayer::Ethernet, 2)).unwrap();
    let p = f.config().profile;
    assert_eq!(
        (p.name, p.device_id, p.fw_rev.0),
        ("ConnectX-7", 0x1021, 28)
    );
    assert_eq!(
        (CONNECTX6_DX.device_id, CONNECTX6_DX.fw_rev.0),
        (0x101d, 22)
    );
}

#[test]
fn framing_lengths_and_opcodes() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    // Header shorter than 16 bytes.
    let short = inbox(op::ALLOC_PD, 0, 0, 16);
    assert_eq!(
        err(&mut f, &short[..8], 16),
        (Status::BAD_INP_LEN_ERR, syn::INBOX_HEADER_SHORT)
    );
    // Unknown opcode.
    assert_eq!(
        err(&mut f, &inbox(0x0999, 0, 0, 64), 64),
        (Status::BAD_OP_ERR, syn::BAD_OPCODE)
    );
    // Inbox and outbox shorter than the layouts.
    let qp = inbox(op::CREATE_QP, 0, 0, create_qp_in::SIZE_BYTES - 4);
    assert_eq!(
        err(&mut f, &qp, 16),
        (Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT)
    );
    let cap = inbox(op::QUERY_HCA_CAP, 0, 1, 16);
    assert_eq!(
        err(&mut f, &cap, query_hca_cap_out::SIZE_BYTES - 1),
        (Status::BAD_OUTP_LEN_ERR, syn::OUTBOX_SHORT)
    );
    // No room for even the header: no completion.
    assert_eq!(f.exec(&cap, &mut [0u8; 8]), Err(ExecError::OutboxTooShort));
    // Reserved op_mod.
    assert_eq!(
        err(&mut f, &inbox(op::ALLOC_PD, 0, 1, 16), 16),
        (Status::BAD_PARAM_ERR, syn::BAD_OP_MOD)
    );
    // Unknown uid.
    assert_eq!(
        err(&mut f, &inbox(op::ALLOC_PD, 9, 0, 16), 16),
        (Status::BAD_PARAM_ERR, syn::UID_UNKNOWN)
    );
    assert_eq!(f.stats().commands, 6);
    assert_eq!(f.stats().failed, 6);
    assert!(f.counts().is_zero());
}

#[test]
fn hca_caps_general_and_roce() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let cur = (CAP_GENERAL << 1) | HCA_CAP_OPMOD_GET_CUR;
    let out = ok(
        &mut f,
        &inbox(op::QUERY_HCA_CAP, 0, cur, 16),
        query_hca_cap_out::SIZE_BYTES,
    );
    let c = |m| get(&out, query_hca_cap_out::capability.inner(m));
    assert_eq!(c(cmd_hca_cap::log_max_qp), 18);
    assert_eq!(c(cmd_hca_cap::log_max_qp_sz), 15);
    assert_eq!(c(cmd_hca_cap::log_max_cq), 24);
    assert_eq!(c(cmd_hca_cap::log_max_cq_sz), 22);
    assert_eq!(c(cmd_hca_cap::log_max_mkey), 24);
    assert_eq!(c(cmd_hca_cap::log_max_pd), 24);
    assert_eq!(c(cmd_hca_cap::log_max_srq), 23);
    assert_eq!(c(cmd_hca_cap::max_qp_mcg), 240);
    assert_eq!(c(cmd_hca_cap::log_max_msg), 30);
    assert_eq!(c(cmd_hca_cap::num_ports), 1);
    assert_eq!(c(cmd_hca_cap::port_type), CAP_PORT_TYPE_IB);
    assert_eq!(c(cmd_hca_cap::cqe_version), 1);
    assert_eq!(c(cmd_hca_cap::roce), 0);
    // The HCA vport commands answer for the IB port, so upstream mlx5_ib does not use
    // MAD_IFC (mlx5_use_mad_ifc()).
    assert_eq!(c(cmd_hca_cap::ib_virt), 1);
    assert_eq!(c(cmd_hca_cap::log_max_uctx), 16);
    // The whole 4 KiB capability page is in the outbox: byte 16.. 4112.
    assert_eq!(out.len(), 16 + 4096);
    // RoCE caps exist only on Ethernet.
    let roce = (CAP_ROCE << 1) | HCA_CAP_OPMOD_GET_MAX;
    assert_eq!(
        err(
            &mut f,
            &inbox(op::QUERY_HCA_CAP, 0, roce, 16),
            query_hca_cap_out::SIZE_BYTES
        ),
        (Status::BAD_PARAM_ERR, syn::CAP_TYPE)
    );
    let mut e = fw(CONNECTX6_DX, LinkLayer::Ethernet);
    let out = ok(
        &mut e,
        &inbox(op::QUERY_HCA_CAP, 0, roce, 16),
        query_hca_cap_out::SIZE_BYTES,
    );
    let r = |m| get(&out, query_hca_cap_out::capability.inner(m));
    assert_eq!(r(roce_cap::roce_address_table_size), 256);
    assert_eq!(r(roce_cap::r_roce_dest_udp_port), 4791);
    let out = ok(
        &mut e,
        &inbox(op::QUERY_HCA_CAP, 0, cur, 16),
        query_hca_cap_out::SIZE_BYTES,
    );
    assert_eq!(
        get(
            &out,
            query_hca_cap_out::capability.inner(cmd_hca_cap::port_type)
        ),
        1
    );
    assert_eq!(
        get(&out, query_hca_cap_out::capability.inner(cmd_hca_cap::roce)),
        1
    );
    assert_eq!(
        get(
            &out,
            query_hca_cap_out::capability.inner(cmd_hca_cap::ib_virt)
        ),
        0
    );
    // other_function is not modeled.
    let mut b = inbox(op::QUERY_HCA_CAP, 0, cur, 16);
    query_hca_cap_in::other_function.set(&mut b, 1).unwrap();
    assert_eq!(
        err(&mut e, &b, query_hca_cap_out::SIZE_BYTES),
        (Status::BAD_PARAM_ERR, syn::OTHER_FUNCTION)
    );
}

/// Steering is absent and software can see it: the general page's `nic_flow_table` is 0, the
/// NIC flow table page (`MLX5_CAP_FLOW_TABLE`) answers on both link layers with no
/// `ft_support` (the whole page zero), and the steering commands a DEVX user would send
/// (CREATE_FLOW_TABLE, CREATE_FLOW_GROUP, SET_FLOW_TABLE_ENTRY, ALLOC_PACKET_REFORMAT_CONTEXT)
/// are unknown opcodes, as the model's other unsupported commands.
#[test]
fn steering_is_absent_in_the_caps_and_its_commands_are_bad_opcodes() {
    for ll in [LinkLayer::Ib, LinkLayer::Ethernet] {
        let mut f = fw(CONNECTX7, ll);
        let gen = ok(
            &mut f,
            &inbox(
                op::QUERY_HCA_CAP,
                0,
                (CAP_GENERAL << 1) | HCA_CAP_OPMOD_GET_CUR,
                16,
            ),
            query_hca_cap_out::SIZE_BYTES,
        );
        assert_eq!(
            get(
                &gen,
                query_hca_cap_out::capability.inner(cmd_hca_cap::nic_flow_table)
            ),
            0
        );
        for m in [HCA_CAP_OPMOD_GET_MAX, HCA_CAP_OPMOD_GET_CUR] {
            let out = ok(
                &mut f,
                &inbox(op::QUERY_HCA_CAP, 0, (CAP_FLOW_TABLE << 1) | m, 16),
                query_hca_cap_out::SIZE_BYTES,
            );
            assert!(out[16..].iter().all(|&b| b == 0));
        }
        for opcode in [0x930u16, 0x933, 0x936, 0x93d] {
            assert_eq!(
                err(&mut f, &inbox(opcode, 0, 0, 0x400), 0x100),
                (Status::BAD_OP_ERR, syn::BAD_OPCODE)
            );
        }
    }
}

#[test]
fn adapter_special_contexts_and_vports() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let out = ok(
        &mut f,
        &inbox(op::QUERY_ADAPTER, 0, 0, 16),
        query_adapter_out::SIZE_BYTES,
    );
    let b = |m| query_adapter_out::query_adapter_struct.inner(m);
    assert_eq!(
        get(&out, b(query_adapter_param_block::ieee_vendor_id)),
        0x02c9
    );
    assert_eq!(
        b(query_adapter_param_block::vsd_contd_psid)
            .bytes(&out)
            .unwrap()
            .get(..10)
            .unwrap(),
        b"RDMARS_CX7"
    );
    let out = ok(
        &mut f,
        &inbox(op::QUERY_SPECIAL_CONTEXTS, 0, 0, 16),
        query_special_contexts_out::SIZE_BYTES,
    );
    assert_eq!(get(&out, query_special_contexts_out::resd_lkey), 0x100);
    assert_eq!(get(&out, query_special_contexts_out::null_mkey), 0x200);

    let mut b = inbox(op::QUERY_HCA_VPORT_CONTEXT, 0, 0, 16);
    query_hca_vport_context_in::port_num.set(&mut b, 1).unwrap();
    let v = |m| query_hca_vport_context_out::hca_vport_context.inner(m);
    // INIT until a subnet manager configures the port (`sma.rs`), then ACTIVE.
    let out = ok(&mut f, &b, query_hca_vport_context_out::SIZE_BYTES);
    assert_eq!(get(&out, v(hca_vport_context::port_state)), 2);
    assert_eq!(get(&out, v(hca_vport_context::lid)), 0);
    sm::sweep(&mut f, &mut switch::Switch::new(1, 1), 1);
    let out = ok(&mut f, &b, query_hca_vport_context_out::SIZE_BYTES);
    assert_eq!(get(&out, v(hca_vport_context::port_state)), 4);
    assert_eq!(get(&out, v(hca_vport_context::port_physical_state)), 5);
    // The port's administrative state (the PCI function's test window): Down / Disabled,
    // then back; no port 2.
    assert!(f.set_port_up(1, false));
    let down = ok(&mut f, &b, query_hca_vport_context_out::SIZE_BYTES);
    assert_eq!(get(&down, v(hca_vport_context::port_state)), 1);
    assert_eq!(get(&down, v(hca_vport_context::port_physical_state)), 3);
    assert!(f.set_port_up(1, true));
    // Up again: INIT, until the fabric's SM sweeps it.
    let init = ok(&mut f, &b, query_hca_vport_context_out::SIZE_BYTES);
    assert_eq!(get(&init, v(hca_vport_context::port_state)), 2);
    sm::sweep(&mut f, &mut switch::Switch::new(1, 1), 1);
    assert!(!f.set_port_up(2, true));
    assert!(!f.set_port_up(0, true));
    // 0x100 + serial (0x42) * 2 + port index 0: unique per function on a fabric.
    assert_eq!(get(&out, v(hca_vport_context::lid)), 0x184);
    assert_eq!(get(&out, v(hca_vport_context::has_smi)), 1);
    assert_eq!(
        v(hca_vport_context::node_guid).get64(&out).unwrap(),
        0x0c42_a103_0000_4200
    );
    // port_num 0 (what mlx5_core's vport.c sends on a single-port function) is the port.
    query_hca_vport_context_in::port_num.set(&mut b, 0).unwrap();
    let out0 = ok(&mut f, &b, query_hca_vport_context_out::SIZE_BYTES);
    assert_eq!(get(&out0, v(hca_vport_context::lid)), 0x184);
    assert_eq!(get(&out0, v(hca_vport_context::port_state)), 4);
    // MODIFY_HCA_VPORT_CONTEXT (mlx5_ib's set_port_caps_atomic() for umad's issmN): the host
    // may change the bits the query reports in cap_mask1_field_select (IsSM among them);
    // nothing else.
    let is_sm = 1 << 1;
    assert_eq!(
        get(&out0, v(hca_vport_context::cap_mask1_field_select)),
        crate::fwsim::sma::CAP_MASK1_HOST
    );
    let base = get(&out0, v(hca_vport_context::cap_mask1));
    assert_eq!(base & is_sm, 0);
    let m = |f| modify_hca_vport_context_in::hca_vport_context.inner(f);
    let mut mb = inbox(
        op::MODIFY_HCA_VPORT_CONTEXT,
        0,
        0,
        modify_hca_vport_context_in::SIZE_BYTES,
    );
    m(hca_vport_context::cap_mask1).set(&mut mb, !0).unwrap();
    m(hca_vport_context::cap_mask1_field_select)
        .set(&mut mb, is_sm)
        .unwrap();
    ok(&mut f, &mb, modify_hca_vport_context_out::SIZE_BYTES);
    let set = ok(&mut f, &b, query_hca_vport_context_out::SIZE_BYTES);
    assert_eq!(get(&set, v(hca_vport_context::cap_mask1)), base | is_sm);
    m(hca_vport_context::cap_mask1)
        .set(&mut mb, !is_sm)
        .unwrap();
    ok(&mut f, &mb, modify_hca_vport_context_out::SIZE_BYTES);
    let clr = ok(&mut f, &b, query_hca_vport_context_out::SIZE_BYTES);
    assert_eq!(get(&clr, v(hca_vport_context::cap_mask1)), base);
    m(hca_vport_context::cap_mask1_field_select)
        .set(&mut mb, is_sm | 1 << 3)
        .unwrap();
    assert_eq!(
        err(&mut f, &mb, modify_hca_vport_context_out::SIZE_BYTES),
        (Status::BAD_PARAM_ERR, syn::VPORT_MODIFY)
    );
    let mut g = inbox(op::QUERY_HCA_VPORT_GID, 0, 0, 16);
    query_hca_vport_gid_in::gid_index.set(&mut g, 0).unwrap();
    let gout = ok(&mut f, &g, query_hca_vport_gid_out::SIZE_BYTES + 16);
    assert_eq!(get(&gout, query_hca_vport_gid_out::gids_num), 1);
    assert_eq!(
        gout[query_hca_vport_gid_out::SIZE_BYTES..][..8],
        0xfe80_0000_0000_0000u64.to_be_bytes()
    );
    let mut k = inbox(op::QUERY_HCA_VPORT_PKEY, 0, 0, 16);
    query_hca_vport_pkey_in::pkey_index.set(&mut k, 0).unwrap();
    let kout = ok(&mut f, &k, query_hca_vport_pkey_out::SIZE_BYTES + 4);
    assert_eq!(
        get(
            &kout,
            Member::<query_hca_vport_pkey_out::Bits>::new(
                "pkey",
                query_hca_vport_pkey_out::SIZE_BITS,
                32
            )
            .inner(pkey::pkey)
        ),
        0xffff
    );
    // Port 2 of a single-port function.
    query_hca_vport_context_in::port_num.set(&mut b, 2).unwrap();
    assert_eq!(
        err(&mut f, &b, query_hca_vport_context_out::SIZE_BYTES),
        (Status::BAD_PARAM_ERR, syn::BAD_PORT)
    );

    let out = ok(
        &mut f,
        &inbox(op::QUERY_NIC_VPORT_CONTEXT, 0, 0, 16),
        query_nic_vport_context_out::SIZE_BYTES,
    );
    let n = |m| query_nic_vport_context_out::nic_vport_context.inner(m);
    assert_eq!(
        n(nic_vport_context::system_image_guid).get64(&out).unwrap(),
        0x0c42_a103_0000_4200
    );
    assert_eq!(get(&out, n(nic_vport_context::mtu)), 4096);
}

#[test]
fn gid_and_pkey_tables() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let mut b = inbox(op::QUERY_HCA_VPORT_GID, 0, 0, 16);
    query_hca_vport_gid_in::port_num.set(&mut b, 1).unwrap();
    let out = ok(&mut f, &b, 32);
    assert_eq!(get(&out, query_hca_vport_gid_out::gids_num), 1);
    assert_eq!(
        out.get(16..32).unwrap(),
        &[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x0c, 0x42, 0xa1, 0x03, 0, 0, 0x42, 0x01]
    );
    // All entries: 8 GIDs must fit in the outbox.
    query_hca_vport_gid_in::gid_index
        .set(&mut b, 0xffff)
        .unwrap();
    assert_eq!(
        err(&mut f, &b, 32),
        (Status::BAD_OUTP_LEN_ERR, syn::OUTBOX_SHORT)
    );
    let out = ok(&mut f, &b, 16 + 8 * 16);
    assert_eq!(get(&out, query_hca_vport_gid_out::gids_num), 8);
    query_hca_vport_gid_in::gid_index.set(&mut b, 8).unwrap();
    assert_eq!(
        err(&mut f, &b, 32),
        (Status::BAD_PARAM_ERR, syn::TABLE_INDEX)
    );

    let mut b = inbox(op::QUERY_HCA_VPORT_PKEY, 0, 0, 16);
    query_hca_vport_pkey_in::port_num.set(&mut b, 1).unwrap();
    let out = ok(&mut f, &b, 20);
    assert_eq!(out.get(16..20).unwrap(), &[0, 0, 0xff, 0xff]);
    query_hca_vport_pkey_in::pkey_index
        .set(&mut b, 128)
        .unwrap();
    assert_eq!(
        err(&mut f, &b, 20),
        (Status::BAD_PARAM_ERR, syn::TABLE_INDEX)
    );
}

/// An ACCESS_REG inbox for register `id` on port 1.
fn reg_in(id: u32, op_mod: u32, size: usize) -> Vec<u8> {
    let mut b = inbox(op::ACCESS_REG, 0, op_mod, 16 + size);
    access_register_in::register_id.set(&mut b, id).unwrap();
    b[17] = 1; // local_port, bits 8..16 of the register's first dword
    b
}

fn reg(f: impl AnyField) -> Field {
    let f = f.any_field();
    Field::new(f.name, 128, 0).inner(f)
}

#[test]
fn port_registers() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let mut b = reg_in(REG_PTYS, ACCESS_REG_READ, ptys_reg::SIZE_BYTES);
    reg(ptys_reg::proto_mask).set(&mut b, PTYS_IB).unwrap();
    let out = ok(&mut f, &b, 16 + ptys_reg::SIZE_BYTES);
    assert_eq!(get(&out, reg(ptys_reg::ib_proto_oper)), 1 << 7);
    assert_eq!(get(&out, reg(ptys_reg::ib_link_width_oper)), 4);
    assert_eq!(get(&out, reg(ptys_reg::local_port)), 1);
    // Register data must fit both mailboxes.
    assert_eq!(
        err(&mut f, &b, 16 + 8),
        (Status::BAD_OUTP_LEN_ERR, syn::OUTBOX_SHORT)
    );
    assert_eq!(
        err(&mut f, &b[..24], 80),
        (Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT)
    );

    let out = ok(&mut f, &reg_in(REG_PMTU, ACCESS_REG_READ, 16), 32);
    assert_eq!(get(&out, reg(pmtu_reg::max_mtu)), 4096);
    let out = ok(&mut f, &reg_in(REG_PVLC, ACCESS_REG_READ, 16), 32);
    assert_eq!(get(&out, reg(pvlc_reg::vl_hw_cap)), 4);

    // PAOS: take the port down, see it in PAOS, PTYS and the vport context.
    let mut w = reg_in(REG_PAOS, ACCESS_REG_WRITE, 16);
    reg(paos_reg::ase).set(&mut w, 1).unwrap();
    reg(paos_reg::admin_status).set(&mut w, 2).unwrap();
    assert!(f.port_admin_up(1));
    ok(&mut f, &w, 32);
    assert!(!f.port_admin_up(1));
    assert!(!f.port_admin_up(2));
    let out = ok(&mut f, &reg_in(REG_PAOS, ACCESS_REG_READ, 16), 32);
    assert_eq!(get(&out, reg(paos_reg::oper_status)), 2);
    let out = ok(&mut f, &b, 16 + ptys_reg::SIZE_BYTES);
    assert_eq!(get(&out, reg(ptys_reg::ib_proto_oper)), 0);
    // PMTU write beyond max.
    let mut w = reg_in(REG_PMTU, ACCESS_REG_WRITE, 16);
    reg(pmtu_reg::admin_mtu).set(&mut w, 8192).unwrap();
    assert_eq!(
        err(&mut f, &w, 32),
        (Status::BAD_PARAM_ERR, syn::REG_BAD_WRITE)
    );
    reg(pmtu_reg::admin_mtu).set(&mut w, 2048).unwrap();
    ok(&mut f, &w, 32);
    let out = ok(&mut f, &reg_in(REG_PMTU, ACCESS_REG_READ, 16), 32);
    assert_eq!(get(&out, reg(pmtu_reg::oper_mtu)), 2048);
    // Unknown register, bad port.
    assert_eq!(
        err(&mut f, &reg_in(0x9001, 1, 16), 32),
        (Status::BAD_PARAM_ERR, syn::REG_UNKNOWN)
    );
    let mut p = reg_in(REG_PAOS, ACCESS_REG_READ, 16);
    p[17] = 2;
    assert_eq!(err(&mut f, &p, 32), (Status::BAD_PARAM_ERR, syn::BAD_PORT));

    let mut e = fw(CONNECTX6_DX, LinkLayer::Ethernet);
    let mut b = reg_in(REG_PTYS, ACCESS_REG_READ, ptys_reg::SIZE_BYTES);
    reg(ptys_reg::proto_mask).set(&mut b, PTYS_EN).unwrap();
    let out = ok(&mut e, &b, 16 + ptys_reg::SIZE_BYTES);
    assert_eq!(get(&out, reg(ptys_reg::ext_eth_proto_oper)), 1 << 10);
}

#[test]
fn roce_addresses() {
    let mut e = fw(CONNECTX6_DX, LinkLayer::Ethernet);
    let mut b = inbox(op::SET_ROCE_ADDRESS, 0, 0, set_roce_address_in::SIZE_BYTES);
    let a = |m| set_roce_address_in::roce_address.inner(m);
    set_roce_address_in::roce_address_index
        .set(&mut b, 3)
        .unwrap();
    let gid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
    a(roce_addr_layout::source_l3_address)
        .set_bytes(&mut b, &gid)
        .unwrap();
    a(roce_addr_layout::source_mac_47_32)
        .set(&mut b, 0x0c42)
        .unwrap();
    a(roce_addr_layout::source_mac_31_0)
        .set(&mut b, 0xa100_0001)
        .unwrap();
    a(roce_addr_layout::roce_version)
        .set(&mut b, ROCE_VERSION_2)
        .unwrap();
    a(roce_addr_layout::roce_l3_type).set(&mut b, 1).unwrap();
    a(roce_addr_layout::vlan_valid).set(&mut b, 1).unwrap();
    a(roce_addr_layout::vlan_id).set(&mut b, 100).unwrap();
    ok(&mut e, &b, 16);
    let entry = e.roce_addr(1, 3).unwrap();
    assert_eq!(entry.gid, gid);
    assert_eq!(entry.mac, [0x0c, 0x42, 0xa1, 0, 0, 1]);
    assert_eq!(entry.vlan, Some(100));
    // Zero GID deletes.
    a(roce_addr_layout::source_l3_address)
        .set_bytes(&mut b, &[0; 16])
        .unwrap();
    ok(&mut e, &b, 16);
    assert_eq!(e.roce_addr(1, 3), None);
    set_roce_address_in::roce_address_index
        .set(&mut b, 256)
        .unwrap();
    assert_eq!(
        err(&mut e, &b, 16),
        (Status::BAD_PARAM_ERR, syn::TABLE_INDEX)
    );
    let mut ib = fw(CONNECTX7, LinkLayer::Ib);
    assert_eq!(
        err(&mut ib, &b, 16),
        (Status::BAD_PARAM_ERR, syn::ROCE_ON_IB)
    );
}

#[test]
fn pd_uar_td_lifecycle_and_numbers() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let pd = alloc_pd(&mut f, 0);
    let pd2 = alloc_pd(&mut f, 0);
    assert_eq!((pd, pd2), (1, 2));
    let td = alloc(
        &mut f,
        op::ALLOC_TRANSPORT_DOMAIN,
        0,
        alloc_transport_domain_out::transport_domain,
    );
    let uar = alloc_uar(&mut f, 0);
    assert_eq!(
        f.counts(),
        Counts {
            pd: 2,
            uar: 1,
            td: 1,
            ..Counts::default()
        }
    );
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, pd),
        16,
    );
    // Stale handle.
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, pd),
            16
        ),
        (Status::BAD_RES_ERR, syn::PD_UNKNOWN)
    );
    // Next-fit: the freed number is not handed out again at once.
    assert_eq!(alloc_pd(&mut f, 0), 3);
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, 3),
        16,
    );
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, pd2),
        16,
    );
    ok(
        &mut f,
        &destroy_in(
            op::DEALLOC_TRANSPORT_DOMAIN,
            0,
            dealloc_transport_domain_in::transport_domain,
            td,
        ),
        16,
    );
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, uar),
        16,
    );
    assert!(f.counts().is_zero());
}

#[test]
fn capacity_exhaustion_is_no_res() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    for _ in 0..capacity::PD {
        alloc_pd(&mut f, 0);
    }
    assert_eq!(
        err(&mut f, &inbox(op::ALLOC_PD, 0, 0, 16), 16),
        (Status::NO_RES_ERR, syn::TABLE_FULL)
    );
}

#[test]
fn uid_ownership() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let u1 = create_uctx(&mut f, 0);
    let u2 = create_uctx(&mut f, 1);
    assert_eq!((u1, u2), (1, 2));
    assert_eq!(
        (f.uctx_cap(u1), f.uctx_cap(u2), f.uctx_cap(3)),
        (Some(0), Some(1), None)
    );
    let pd = alloc_pd(&mut f, u1);
    // Another user context cannot free (or use) it.
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DEALLOC_PD, u2, dealloc_pd_in::pd, pd),
            16
        ),
        (Status::BAD_RES_ERR, syn::UID_MISMATCH)
    );
    let uar = alloc_uar(&mut f, 0);
    let cq2 = create_cq(&mut f, u2, uar);
    assert_eq!(
        err(&mut f, &qp_in(u1, QPC_ST_RC, pd, uar, cq2, cq2), 16),
        (Status::BAD_RES_ERR, syn::UID_MISMATCH)
    );
    // A uctx with objects cannot go; capability bits beyond uctx_cap are refused.
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DESTROY_UCTX, 0, destroy_uctx_in::uid, u(u1)),
            16
        ),
        (Status::RES_BUSY, syn::UCTX_BUSY)
    );
    let mut b = inbox(op::CREATE_UCTX, 0, 0, create_uctx_in::SIZE_BYTES);
    create_uctx_in::uctx
        .inner(uctx::cap)
        .set(&mut b, 1 << 3)
        .unwrap();
    assert_eq!(err(&mut f, &b, 16), (Status::BAD_PARAM_ERR, syn::UCTX_CAP));
    // The kernel (uid 0) tears user objects down.
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, pd),
        16,
    );
    ok(
        &mut f,
        &destroy_in(op::DESTROY_CQ, u2, destroy_cq_in::cqn, cq2),
        16,
    );
    ok(
        &mut f,
        &destroy_in(op::DESTROY_UCTX, 0, destroy_uctx_in::uid, u(u1)),
        16,
    );
    ok(
        &mut f,
        &destroy_in(op::DESTROY_UCTX, 0, destroy_uctx_in::uid, u(u2)),
        16,
    );
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, uar),
        16,
    );
    // uid 1 is gone: commands on its behalf are refused.
    assert_eq!(
        err(&mut f, &inbox(op::ALLOC_PD, u1, 0, 16), 16),
        (Status::BAD_PARAM_ERR, syn::UID_UNKNOWN)
    );
    assert!(f.counts().is_zero());
}

fn u(x: u16) -> u32 {
    u32::from(x)
}

#[test]
fn cq_create_query_modify_destroy() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let uar = alloc_uar(&mut f, 0);
    assert_eq!(
        err(&mut f, &cq_in(0, uar, 23), 16),
        (Status::LIM_ERR, syn::CQ_TOO_BIG),
        "log_max_cq_sz is 22"
    );
    assert_eq!(
        err(&mut f, &cq_in(0, uar + 1, 4), 16),
        (Status::BAD_RES_ERR, syn::UAR_UNKNOWN)
    );
    let mut bad = cq_in(0, uar, 4);
    create_cq_in::cq_context
        .inner(cqc::status)
        .set(&mut bad, 9)
        .unwrap();
    assert_eq!(
        err(&mut f, &bad, 16),
        (Status::BAD_PARAM_ERR, syn::CQ_STATUS)
    );
    let cqn = create_cq(&mut f, 0, uar);
    assert_eq!(cqn, 0x40);
    let q = destroy_in(op::QUERY_CQ, 0, query_cq_in::cqn, cqn);
    let out = ok(&mut f, &q, query_cq_out::SIZE_BYTES);
    let c = |m| query_cq_out::cq_context.inner(m);
    assert_eq!(get(&out, c(cqc::log_cq_size)), 10);
    assert_eq!(get(&out, c(cqc::uar_page)), uar);
    assert_eq!(get(&out, c(cqc::cq_period)), 16);
    // Moderation.
    let mut m = inbox(op::MODIFY_CQ, 0, 0, modify_cq_in::SIZE_BYTES);
    modify_cq_in::cqn.set(&mut m, cqn).unwrap();
    modify_cq_in::modify_field_select_resize_field_select
        .set(&mut m, CQ_MODIFY_COUNT)
        .unwrap();
    modify_cq_in::cq_context
        .inner(cqc::cq_max_count)
        .set(&mut m, 64)
        .unwrap();
    modify_cq_in::cq_context
        .inner(cqc::cq_period)
        .set(&mut m, 99)
        .unwrap();
    ok(&mut f, &m, 16);
    let out = ok(&mut f, &q, query_cq_out::SIZE_BYTES);
    assert_eq!(get(&out, c(cqc::cq_max_count)), 64);
    assert_eq!(
        get(&out, c(cqc::cq_period)),
        16,
        "not selected, not changed"
    );
    // Resize.
    let mut r = m.clone();
    mbox_in::op_mod.set(&mut r, CQ_OPMOD_RESIZE).unwrap();
    modify_cq_in::modify_field_select_resize_field_select
        .set(&mut r, MODIFY_CQ_MASK_LOG_SIZE)
        .unwrap();
    modify_cq_in::cq_context
        .inner(cqc::log_cq_size)
        .set(&mut r, 23)
        .unwrap();
    assert_eq!(err(&mut f, &r, 16), (Status::LIM_ERR, syn::CQ_TOO_BIG));
    modify_cq_in::cq_context
        .inner(cqc::log_cq_size)
        .set(&mut r, 12)
        .unwrap();
    ok(&mut f, &r, 16);
    let out = ok(&mut f, &q, query_cq_out::SIZE_BYTES);
    assert_eq!(get(&out, c(cqc::log_cq_size)), 12);
    // The UAR is busy while the CQ uses it.
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, uar),
            16
        ),
        (Status::RES_BUSY, syn::UAR_BUSY)
    );
    ok(
        &mut f,
        &destroy_in(op::DESTROY_CQ, 0, destroy_cq_in::cqn, cqn),
        16,
    );
    assert_eq!(
        err(&mut f, &q, query_cq_out::SIZE_BYTES),
        (Status::BAD_RES_ERR, syn::CQ_UNKNOWN)
    );
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, uar),
        16,
    );
    assert!(f.counts().is_zero());
}

#[test]
fn qp_state_machine_and_context() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let pd = alloc_pd(&mut f, 0);
    let uar = alloc_uar(&mut f, 0);
    let cq = create_cq(&mut f, 0, uar);
    let qpn = create_qp(&mut f, 0, pd, uar, cq);
    assert_eq!(qpn, 0x100);
    let qc = |out: &[u8], m: Member<qpc::Bits>| get(out, query_qp_out::qpc.inner(m));
    let out = query_qp(&mut f, 0, qpn);
    assert_eq!(qc(&out, qpc::state), QPC_STATE_RST);
    assert_eq!(qc(&out, qpc::user_index), 0x77);
    // Skipping INIT is refused and changes nothing.
    assert_eq!(
        err(&mut f, &modify_in(op::INIT2RTR_QP, 0, qpn), 16),
        (Status::BAD_RES_STATE_ERR, syn::QP_BAD_STATE)
    );
    assert_eq!(qc(&query_qp(&mut f, 0, qpn), qpc::state), QPC_STATE_RST);
    // Port 0 is not a port.
    let mut bad = modify_in(op::RST2INIT_QP, 0, qpn);
    rst2init_qp_in::qpc
        .inner(qpc::primary_address_path)
        .inner(ads::vhca_port_num)
        .set(&mut bad, 0)
        .unwrap();
    assert_eq!(
        err(&mut f, &bad, 16),
        (Status::BAD_PARAM_ERR, syn::BAD_PORT)
    );
    ok(&mut f, &modify_in(op::RST2INIT_QP, 0, qpn), 16);
    ok(&mut f, &modify_in(op::INIT2INIT_QP, 0, qpn), 16);
    let mut bad = modify_in(op::INIT2RTR_QP, 0, qpn);
    rst2init_qp_in::qpc
        .inner(qpc::mtu)
        .set(&mut bad, 0)
        .unwrap();
    assert_eq!(err(&mut f, &bad, 16), (Status::BAD_PARAM_ERR, syn::QP_MTU));
    ok(&mut f, &modify_in(op::INIT2RTR_QP, 0, qpn), 16);
    ok(&mut f, &modify_in(op::RTR2RTS_QP, 0, qpn), 16);
    ok(&mut f, &modify_in(op::RTS2RTS_QP, 0, qpn), 16);
    let out = query_qp(&mut f, 0, qpn);
    assert_eq!(qc(&out, qpc::state), QPC_STATE_RTS);
    // What INIT2RTR set survives RTR2RTS, which does not define it.
    assert_eq!(qc(&out, qpc::remote_qpn), 0xabcd);
    assert_eq!(qc(&out, qpc::next_rcv_psn), 0x111);
    assert_eq!(qc(&out, qpc::mtu), 5);
    assert_eq!(qc(&out, qpc::primary_address_path.inner(ads::rlid)), 7);
    assert_eq!(
        qc(&out, qpc::primary_address_path.inner(ads::vhca_port_num)),
        1
    );
    assert_eq!(
        qc(&out, qpc::primary_address_path.inner(ads::ack_timeout)),
        14
    );
    assert_eq!(qc(&out, qpc::next_send_psn), 0x222);
    assert_eq!(qc(&out, qpc::retry_count), 7);
    assert_eq!(qc(&out, qpc::pd), pd);
    assert_eq!(qc(&out, qpc::cqn_snd), cq);
    assert_eq!(
        query_qp_out::qpc.inner(qpc::dbr_addr).get64(&out).unwrap(),
        0x1234_5000
    );
    // RST2INIT from RTS is refused; 2ERR and 2RST from anywhere.
    assert_eq!(
        err(&mut f, &modify_in(op::RST2INIT_QP, 0, qpn), 16),
        (Status::BAD_RES_STATE_ERR, syn::QP_BAD_STATE)
    );
    ok(
        &mut f,
        &destroy_in(op::_2ERR_QP, 0, qp_2err_in::qpn, qpn),
        16,
    );
    assert_eq!(qc(&query_qp(&mut f, 0, qpn), qpc::state), QPC_STATE_ERR);
    assert_eq!(
        err(&mut f, &modify_in(op::RTS2RTS_QP, 0, qpn), 16),
        (Status::BAD_RES_STATE_ERR, syn::QP_BAD_STATE)
    );
    ok(
        &mut f,
        &destroy_in(op::_2RST_QP, 0, qp_2rst_in::qpn, qpn),
        16,
    );
    assert_eq!(qc(&query_qp(&mut f, 0, qpn), qpc::state), QPC_STATE_RST);
    ok(&mut f, &modify_in(op::RST2INIT_QP, 0, qpn), 16);

    // The CQ and the PD are busy while the QP exists.
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DESTROY_CQ, 0, destroy_cq_in::cqn, cq),
            16
        ),
        (Status::RES_BUSY, syn::CQ_BUSY)
    );
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, pd),
            16
        ),
        (Status::RES_BUSY, syn::PD_BUSY)
    );
    ok(
        &mut f,
        &destroy_in(op::DESTROY_QP, 0, destroy_qp_in::qpn, qpn),
        16,
    );
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::QUERY_QP, 0, query_qp_in::qpn, qpn),
            query_qp_out::SIZE_BYTES
        ),
        (Status::BAD_RES_ERR, syn::QP_UNKNOWN)
    );
    ok(
        &mut f,
        &destroy_in(op::DESTROY_CQ, 0, destroy_cq_in::cqn, cq),
        16,
    );
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, pd),
        16,
    );
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, uar),
        16,
    );
    assert!(f.counts().is_zero());
}

#[test]
fn qp_create_checks() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let pd = alloc_pd(&mut f, 0);
    let uar = alloc_uar(&mut f, 0);
    let cq = create_cq(&mut f, 0, uar);
    let q = |f| create_qp_in::qpc.inner(f);
    let cases: [(Member<create_qp_in::Bits>, u32, Status, u32); 7] = [
        (q(qpc::st), 0x4, Status::BAD_PARAM_ERR, syn::QP_ST),
        (
            q(qpc::state),
            1,
            Status::BAD_PARAM_ERR,
            syn::QP_CREATE_STATE,
        ),
        (q(qpc::log_msg_max), 31, Status::LIM_ERR, syn::QP_MSG_MAX),
        (q(qpc::pd), pd + 1, Status::BAD_RES_ERR, syn::PD_UNKNOWN),
        (
            q(qpc::cqn_snd),
            cq + 1,
            Status::BAD_RES_ERR,
            syn::QP_SEND_CQ,
        ),
        (q(qpc::rq_type), SRQ_RQ, Status::BAD_RES_ERR, syn::QP_SRQ),
        (
            create_qp_in::input_qpn,
            5,
            Status::BAD_PARAM_ERR,
            syn::QP_INPUT_QPN,
        ),
    ];
    for (field, v, status, syndrome) in cases {
        let mut b = qp_in(0, QPC_ST_RC, pd, uar, cq, cq);
        field.set(&mut b, v).unwrap();
        assert_eq!(err(&mut f, &b, 16), (status, syndrome), "{}", field.name);
    }
    // A UD QP without a receive queue and without path MTU goes to RTS.
    let mut b = qp_in(0, QPC_ST_UD, pd, uar, cq, 0);
    q(qpc::rq_type).set(&mut b, ZERO_LEN_RQ).unwrap();
    let qpn = get(&ok(&mut f, &b, 16), create_qp_out::qpn);
    ok(&mut f, &modify_in(op::RST2INIT_QP, 0, qpn), 16);
    ok(
        &mut f,
        &destroy_in(op::INIT2RTR_QP, 0, init2rtr_qp_in::qpn, qpn)
            .into_iter()
            .chain(core::iter::repeat(0))
            .take(init2rtr_qp_in::SIZE_BYTES)
            .collect::<Vec<u8>>(),
        16,
    );
    assert_eq!(f.counts().qp, 1);
}

#[test]
fn mkey_lifecycle() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let pd = alloc_pd(&mut f, 0);
    // 4 octwords of MTT announced but not present.
    assert_eq!(
        err(&mut f, &mkey_in(0, pd, 4, 32), 16),
        (Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT)
    );
    let mut b = mkey_in(0, pd, 4, 64);
    create_mkey_in::memory_key_mkey_entry
        .inner(mkc::qpn)
        .set(&mut b, 0)
        .unwrap();
    assert_eq!(err(&mut f, &b, 16), (Status::BAD_PARAM_ERR, syn::MKEY_QPN));
    let mut b = mkey_in(0, pd, 4, 64);
    create_mkey_in::memory_key_mkey_entry
        .inner(mkc::access_mode_4_2)
        .set(&mut b, 2)
        .unwrap();
    assert_eq!(
        err(&mut f, &b, 16),
        (Status::BAD_PARAM_ERR, syn::MKEY_ACCESS_MODE)
    );
    let out = ok(&mut f, &mkey_in(0, pd, 4, 64), create_mkey_out::SIZE_BYTES);
    let index = get(&out, create_mkey_out::mkey_index);
    assert_eq!(index, 0x10);
    // Access mode MEMIC (4_2 = 1, 1_0 = 1 is 5): only inside the MEMIC window.
    let memic = |start: u64, len: u64| {
        let mut b = mkey_in(0, pd, 4, 64);
        let e = create_mkey_in::memory_key_mkey_entry;
        e.inner(mkc::access_mode_4_2).set(&mut b, 1).unwrap();
        e.inner(mkc::access_mode_1_0).set(&mut b, 1).unwrap();
        e.inner(mkc::start_addr).set64(&mut b, start).unwrap();
        e.inner(mkc::len).set64(&mut b, len).unwrap();
        b
    };
    use crate::fwsim::memic::{BAR_START, SIZE};
    assert_eq!(
        err(&mut f, &memic(BAR_START + SIZE - 64, 128), 16),
        (Status::BAD_PARAM_ERR, syn::MEMIC_MKEY)
    );
    assert_eq!(
        err(&mut f, &memic(0x1000, 64), 16),
        (Status::BAD_PARAM_ERR, syn::MEMIC_MKEY)
    );
    let out = ok(
        &mut f,
        &memic(BAR_START + 4096, 64),
        create_mkey_out::SIZE_BYTES,
    );
    let dm_key = get(&out, create_mkey_out::mkey_index);
    let mut d = inbox(op::DESTROY_MKEY, 0, 0, destroy_mkey_in::SIZE_BYTES);
    destroy_mkey_in::mkey_index.set(&mut d, dm_key).unwrap();
    ok(&mut f, &d, destroy_mkey_out::SIZE_BYTES);
    let q = destroy_in(op::QUERY_MKEY, 0, query_mkey_in::mkey_index, index);
    let out = ok(&mut f, &q, query_mkey_out::SIZE_BYTES);
    let m = |x| query_mkey_out::memory_key_mkey_entry.inner(x);
    assert_eq!(get(&out, m(mkc::mkey_7_0)), 0x5a);
    assert_eq!(get(&out, m(mkc::pd)), pd);
    assert_eq!(m(mkc::len).get64(&out).unwrap(), 0x10000);
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, pd),
            16
        ),
        (Status::RES_BUSY, syn::PD_BUSY)
    );
    // The full mkey (index << 8 | key) is not an index: a classic driver bug.
    assert_eq!(
        err(
            &mut f,
            &destroy_in(
                op::DESTROY_MKEY,
                0,
                destroy_mkey_in::mkey_index,
                (index << 8 | 0x5a) & 0xff_ffff
            ),
            16
        ),
        (Status::BAD_RES_ERR, syn::MKEY_UNKNOWN)
    );
    ok(
        &mut f,
        &destroy_in(op::DESTROY_MKEY, 0, destroy_mkey_in::mkey_index, index),
        16,
    );
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, pd),
        16,
    );
    assert!(f.counts().is_zero());
}

#[test]
fn fault_injection() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let fail = FaultAction::Fail {
        status: Status::INT_ERR,
        syndrome: 0x1234,
    };
    f.faults_mut().fail_nth(2, fail);
    alloc_pd(&mut f, 0);
    assert_eq!(
        err(&mut f, &inbox(op::ALLOC_PD, 0, 0, 16), 16),
        (Status::INT_ERR, 0x1234)
    );
    assert_eq!(f.counts().pd, 1, "a faulted command is not executed");
    alloc_pd(&mut f, 0);
    f.faults_mut().fail_opcode(
        op::ALLOC_UAR,
        FaultAction::Fail {
            status: Status::NO_RES_ERR,
            syndrome: syn::INJECTED,
        },
    );
    for _ in 0..3 {
        assert_eq!(
            err(&mut f, &inbox(op::ALLOC_UAR, 0, 0, 16), 16),
            (Status::NO_RES_ERR, syn::INJECTED)
        );
    }
    f.faults_mut()
        .fail_opcode(op::ALLOC_UAR, FaultAction::Timeout);
    let mut out = [0u8; 16];
    assert_eq!(
        f.exec(&inbox(op::ALLOC_UAR, 0, 0, 16), &mut out),
        Err(ExecError::Timeout)
    );
    f.faults_mut().clear();
    f.faults_mut().delay_us = 500;
    let (c, _) = run(&mut f, &inbox(op::ALLOC_UAR, 0, 0, 16), 16);
    assert_eq!((c.status, c.delay_us), (Status::OK, 500));
    assert_eq!(f.stats().injected, 5);
    assert_eq!(f.counts().uar, 1);
    let cfg = *f.config();
    f.reset(cfg).unwrap();
    assert!(f.counts().is_zero());
    assert_eq!(f.stats(), Stats::default());
}

#[test]
fn device_fits_the_documented_footprint() {
    // Documentation/fwsim.md promises "about 400 KiB" (the data path's translations and
    // queue state included): the kernel side allocates it in place.
    let size = core::mem::size_of::<Fw>();
    assert!(size > 360 * 1024 && size < 424 * 1024, "{size}");
}

#[test]
fn uar_pages_per_uid() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let uid = create_uctx(&mut f, 0);
    let k = alloc_uar(&mut f, 0);
    let u = alloc_uar(&mut f, uid);
    assert_ne!(k, u);
    assert_eq!(f.uar_owner(k), Some(0));
    assert_eq!(f.uar_owner(u), Some(uid));
    assert_eq!(f.uar_owner(u + 100), None);
    // The owning context may not go while its UAR lives.
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DESTROY_UCTX, 0, destroy_uctx_in::uid, u32::from(uid)),
            16
        ),
        (Status::RES_BUSY, syn::UCTX_BUSY)
    );
    // Another uid may not free it; the kernel may.
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DEALLOC_UAR, uid, dealloc_uar_in::uar, k),
            16
        ),
        (Status::BAD_RES_ERR, syn::UID_MISMATCH)
    );
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, u),
        16,
    );
    assert_eq!(f.uar_owner(u), None);
    // A freed index is stale: BAD_RES_ERR.
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, u),
            16
        ),
        (Status::BAD_RES_ERR, syn::UAR_UNKNOWN)
    );
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, k),
        16,
    );
    ok(
        &mut f,
        &destroy_in(op::DESTROY_UCTX, 0, destroy_uctx_in::uid, u32::from(uid)),
        16,
    );
    assert!(f.counts().is_zero());
}

/// The dispatch and the decoder's checks come from the command table: every row is a command
/// the simulator executes (a zeroed mailbox of the row's sizes is never `BAD_OP_ERR`), a row
/// whose `op_mod` is reserved refuses any other value before its method runs, and one byte
/// less than either layout is a length error.
#[test]
fn every_row_of_the_command_table_is_decoded_by_its_rules() {
    use crate::prm::command::{OpMod, ALL as ROWS};
    // A function in the life-cycle state that accepts `opcode` (`hca.rs`): the init commands
    // after ENABLE_HCA, ENABLE_HCA after reset, everything else initialized.
    let accepting = |opcode: u16| {
        let mut f = fw(CONNECTX7, LinkLayer::Ib);
        if matches!(
            opcode,
            op::ENABLE_HCA | op::SET_ISSI | op::SET_HCA_CAP | op::INIT_HCA
        ) {
            f.cold_boot();
            if opcode != op::ENABLE_HCA {
                ok(
                    &mut f,
                    &inbox(op::ENABLE_HCA, 0, 0, enable_hca_in::SIZE_BYTES),
                    16,
                );
            }
        }
        f
    };
    for row in ROWS {
        let (inb, outb) = (row.in_bytes(), row.out_bytes().max(16));
        let mut f = accepting(row.opcode);
        let (c, _) = run(&mut f, &inbox(row.opcode, 0, 0, inb), outb);
        assert_ne!(c.status, Status::BAD_OP_ERR, "{}", row.name);
        if row.op_mod == OpMod::Zero {
            let mut f = accepting(row.opcode);
            let e = err(&mut f, &inbox(row.opcode, 0, 1, inb), outb);
            assert_eq!(e, (Status::BAD_PARAM_ERR, syn::BAD_OP_MOD), "{}", row.name);
        }
        if inb > 16 {
            let e = err(&mut f, &inbox(row.opcode, 0, 0, inb - 4), outb);
            assert_eq!(
                e,
                (Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT),
                "{}",
                row.name
            );
        }
        if row.out_bytes() > 16 {
            let e = err(&mut f, &inbox(row.opcode, 0, 0, inb), row.out_bytes() - 4);
            assert_eq!(
                e,
                (Status::BAD_OUTP_LEN_ERR, syn::OUTBOX_SHORT),
                "{}",
                row.name
            );
        }
    }
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let e = err(&mut f, &inbox(op::MANAGE_PAGES, 0, 0, 16), 16);
    assert_eq!(e, (Status::BAD_OP_ERR, syn::BAD_OPCODE));
}

/// ATTACH_TO_MCG / DETACH_FROM_MCG (`mcg.rs`): a UD QP joins a group once; a group GID only;
/// a detach of what is not attached fails; DESTROY_QP drops the QP's attachments.
#[test]
fn multicast_attach_and_detach() {
    let mut f = fw(CONNECTX7, LinkLayer::Ethernet);
    let pd = alloc_pd(&mut f, 0);
    let uar = alloc_uar(&mut f, 0);
    let cq = create_cq(&mut f, 0, uar);
    let ud = get(
        &ok(&mut f, &qp_in(0, QPC_ST_UD, pd, uar, cq, cq), 16),
        create_qp_out::qpn,
    );
    let rc = create_qp(&mut f, 0, pd, uar, cq);
    let mut group = [0u8; 16];
    group[10..].copy_from_slice(&[0xff, 0xff, 239, 1, 2, 3]);
    let unicast = {
        let mut g = group;
        g[12] = 10;
        g
    };
    let mcg = |opcode: u16, qpn: u32, gid: &[u8; 16]| {
        let mut b = inbox(opcode, 0, 0, attach_to_mcg_in::SIZE_BYTES);
        attach_to_mcg_in::qpn.set(&mut b, qpn).unwrap();
        b[16..32].copy_from_slice(gid);
        b
    };
    let bad = (Status::BAD_PARAM_ERR, syn::MCG_PARAM);
    assert_eq!(err(&mut f, &mcg(op::ATTACH_TO_MCG, rc, &group), 16), bad);
    assert_eq!(err(&mut f, &mcg(op::ATTACH_TO_MCG, ud, &unicast), 16), bad);
    assert_eq!(err(&mut f, &mcg(op::DETACH_FROM_MCG, ud, &group), 16), bad);
    ok(&mut f, &mcg(op::ATTACH_TO_MCG, ud, &group), 16);
    assert!(f.mcg.has(&group));
    assert_eq!(f.mcg_attached(), 1);
    assert_eq!(err(&mut f, &mcg(op::ATTACH_TO_MCG, ud, &group), 16), bad);
    ok(&mut f, &mcg(op::DETACH_FROM_MCG, ud, &group), 16);
    assert!(!f.mcg.has(&group));
    ok(&mut f, &mcg(op::ATTACH_TO_MCG, ud, &group), 16);
    ok(
        &mut f,
        &destroy_in(op::DESTROY_QP, 0, destroy_qp_in::qpn, ud),
        16,
    );
    assert!(!f.mcg.has(&group));
    assert_eq!(
        err(&mut f, &mcg(op::ATTACH_TO_MCG, ud, &group), 16).0,
        Status::BAD_RES_ERR
    );
}
