// SPDX-License-Identifier: GPL-2.0

//! A test driver that does what upstream mlx5_core does to a ConnectX PCI function, through
//! config and BAR 0 accesses and mailboxes in guest memory only, the way cmd.c builds them:
//! `mlx5_pci_init()` (ids, BAR), `mlx5_cmd_init()` (cmdif revision, queue geometry, queue
//! address), `wait_fw_init()`, the init commands of `mlx5_function_setup()`, the bfreg and the
//! async EQs of `mlx5_load()` with MSI-X, commands completed by EQE + interrupt, health
//! polling, and the teardown. Field offsets are mlx5_ifc.h bit offsets, written with
//! `MLX5_SET` semantics (big-endian dwords).

use std::time::Duration;

use rdma_rs_cxfn::cmdq::{BLOCK_BYTES, BLOCK_DATA, INLINE, OWNER_HW, PCI_CMD_XPORT};
use rdma_rs_cxfn::config::{CAP_MSIX, MSIX_ENABLE};
use rdma_rs_cxfn::function::MsixMode;
use rdma_rs_cxfn::regs::*;
use rdma_rs_cxfn::{CxFunction, GuestMemory, Model, VecMemory};

include!("common/driver.rs");

#[test]
fn mlx5_core_probes_and_removes_the_function() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    // A command in events mode (QUERY_HCA_CAP cur, 4 KiB out) through EQE + interrupt.
    let out = d.exec(&hdr(16, 0x100, 1), 0x1010);
    assert_eq!(get(&out, 0x80 + 0x1b8, 8), 1);
    // Health: the counter moves, the syndrome stays 0 (`poll_health()`).
    let h0 = d.rd32(HEALTH_COUNTER);
    d.dev.advance(Duration::from_secs(2));
    assert_ne!(d.rd32(HEALTH_COUNTER), h0);
    assert_eq!(d.dev.health_syndrome(), 0);
    teardown(&mut d, &eqs);
    // And the same function probes again (`modprobe mlx5_core` after `modprobe -r`).
    function_setup(&mut d);
    assert_eq!(d.dev.stats().delivery_errors, 0);
    assert_eq!(d.dev.stats().dma_errors, 0);
}

/// The commands (opcode, op_mod) upstream mlx5_core 7.3 sent to the function in the live boot
/// of `make pcifn` (cxfn-server's command log, Documentation/pcifn.md), probe to
/// `modprobe -r`, every one answered with status 0.
const LIVE_BOOT: [(u16, u16); 27] = [
    (0x104, 0), // ENABLE_HCA
    (0x10a, 0), // QUERY_ISSI
    (0x10b, 0), // SET_ISSI
    (0x107, 1), // QUERY_PAGES boot
    (0x805, 1), // ACCESS_REG (DTOR read, mlx5_tout_query_dtor())
    (0x805, 0), // ACCESS_REG (HOST_ENDIANNESS)
    (0x100, 1), // QUERY_HCA_CAP general cur
    (0x100, 0), // QUERY_HCA_CAP general max
    (0x109, 0), // SET_HCA_CAP general
    (0x100, 7), // QUERY_HCA_CAP atomic cur
    (0x100, 6), // QUERY_HCA_CAP atomic max
    (0x109, 6), // SET_HCA_CAP atomic
    (0x107, 2), // QUERY_PAGES init
    (0x102, 0), // INIT_HCA
    (0x100, 1), // mlx5_query_hca_caps(): general cur
    (0x100, 7), // atomic cur
    (0x101, 0), // QUERY_ADAPTER
    (0x802, 0), // ALLOC_UAR (bfreg)
    (0x301, 0), // CREATE_EQ command
    (0x301, 0), // CREATE_EQ async
    (0x301, 0), // CREATE_EQ pages
    (0x302, 0), // DESTROY_EQ pages
    (0x302, 0), // DESTROY_EQ async
    (0x302, 0), // DESTROY_EQ command
    (0x803, 0), // DEALLOC_UAR
    (0x103, 0), // TEARDOWN_HCA
    (0x105, 0), // DISABLE_HCA
];

/// The replay above sends exactly what the live boot sent, in order, and the model answers
/// each with status 0 and ends disabled, with every EQ and UAR gone.
#[test]
fn replay_matches_the_live_boot() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    teardown(&mut d, &eqs);
    let log: Vec<(u16, u16)> = d
        .dev
        .command_log()
        .iter()
        .map(|c| (c.opcode, c.op_mod))
        .collect();
    assert_eq!(log, LIVE_BOOT);
    assert!(d
        .dev
        .command_log()
        .iter()
        .all(|c| c.status == 0 && c.syndrome == 0));
    assert_eq!(d.dev.lifecycle(), "disabled");
    assert!(!d.dev.has_objects());
}

#[test]
fn ethernet_models_init_too() {
    for m in [Model::Cx7Eth, Model::Cx6DxEth] {
        let mut d = Driver::new(m);
        if m == Model::Cx6DxEth {
            assert_eq!(d.cfg16(0x02), 0x101d);
            // probe() checks the ConnectX-7 ids and firmware; do the queue setup by hand.
            d.cmdq = d.alloc(4096, 4096);
            d.wr32(CMDQ_ADDR_L_SZ, d.cmdq as u32);
            while d.rd32(INITIALIZING) >> 31 != 0 {}
        } else {
            probe(&mut d);
        }
        function_setup(&mut d);
        let eqs = load(&mut d);
        teardown(&mut d, &eqs);
    }
}

#[test]
fn bad_mailboxes_get_delivery_errors() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    // A well-formed multi-block SET_HCA_CAP before ENABLE_HCA is delivered, and refused by
    // the firmware: status BAD_SYS_STATE_ERR (0x4), syndrome HCA_STATE.
    let inb = hdr(0x1010, 0x109, 0);
    let (addr, _) = d.post(0, &inb, 16);
    let mut refused = vec![0u8; 16];
    refused[0] = 0x4;
    refused[4..8].copy_from_slice(&0x5f06_0001u32.to_be_bytes());
    assert_eq!(d.collect(addr, &[], 16), Done::Out(refused));
    // Now break the chain in each way cmd.c's delivery statuses name.
    d.token = d.token.wrapping_add(1);
    let token = d.token;
    let (in_ptr, blocks) = d.chain(&inb, token);
    // Wrong token in block 3.
    d.mem.write(blocks[3] + 0x23d, &[token ^ 0xff]).unwrap();
    let st = raw_post(&mut d, in_ptr, inb.len(), &inb[..16], 0, 16, token);
    assert_eq!(st, Done::Delivery(0x2));
    // Wrong block number.
    let (in_ptr, blocks) = d.chain(&inb, token);
    d.mem.write(blocks[1] + 0x238, &7u32.to_be_bytes()).unwrap();
    let st = raw_post(&mut d, in_ptr, inb.len(), &inb[..16], 0, 16, token);
    assert_eq!(st, Done::Delivery(0x3));
    // Misaligned mailbox pointer.
    let (in_ptr, _) = d.chain(&inb, token);
    let st = raw_post(&mut d, in_ptr + 8, inb.len(), &inb[..16], 0, 16, token);
    assert_eq!(st, Done::Delivery(0x5));
    // Input pointer outside guest memory.
    let st = raw_post(
        &mut d,
        0x1000_0000_0000,
        inb.len(),
        &inb[..16],
        0,
        16,
        token,
    );
    assert_eq!(st, Done::Delivery(0x10));
    // Output chain missing for a 4 KiB output.
    let q = hdr(16, 0x100, 1);
    let st = raw_post(&mut d, 0, 16, &q, 0, 0x1010, token);
    assert_eq!(st, Done::Delivery(0x4));
    // Absurd lengths.
    let st = raw_post(&mut d, 0, 8, &q, 0, 16, token);
    assert_eq!(st, Done::Delivery(0x7));
    let st = raw_post(&mut d, 0, 16, &q, 0, 0x7fff_ffff, token);
    assert_eq!(st, Done::Delivery(0x8));
    assert_eq!(d.dev.stats().delivery_errors, 7);
    // A doorbell for a slot the driver did not post, and garbage writes: ignored.
    d.wr32(CMD_DBELL, 1 << 5);
    assert_eq!(d.dev.stats().spurious_doorbells, 1);
    d.dev.bar0_write(&d.mem, 0x3, &[1, 2, 3]);
    d.dev.bar0_write(&d.mem, BAR0_SIZE + 0x40, &[0; 4]);
    d.dev.bar0_write(&d.mem, u64::MAX - 3, &[0; 4]);
    let mut b = [0u8; 16];
    d.dev.bar0_read(u64::MAX - 7, &mut b);
    // The device still works.
    d.exec(&hdr(16, 0x104, 0), 12);
}

/// Posts an entry built by hand on slot 1 and collects it.
fn raw_post(
    d: &mut Driver,
    in_ptr: u64,
    inlen: usize,
    inline: &[u8],
    out_ptr: u64,
    outlen: usize,
    token: u8,
) -> Done {
    let mut lay = [0u8; 64];
    lay[0] = PCI_CMD_XPORT;
    lay[4..8].copy_from_slice(&(inlen as u32).to_be_bytes());
    lay[8..16].copy_from_slice(&in_ptr.to_be_bytes());
    lay[16..32].copy_from_slice(&inline[..16]);
    lay[0x30..0x38].copy_from_slice(&out_ptr.to_be_bytes());
    lay[0x38..0x3c].copy_from_slice(&(outlen as u32).to_be_bytes());
    lay[0x3c] = token;
    lay[0x3f] = OWNER_HW;
    let addr = d.cmdq + 64;
    d.mem.write(addr, &lay).unwrap();
    d.wr32(CMD_DBELL, 1 << 1);
    d.collect(addr, &[], 16)
}

#[test]
fn interrupts_respect_msix_masking_and_external_mode() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let out = d.exec(&hdr(16, 0x802, 0), 16);
    d.uar = get(&out, 0x48, 24);
    // MSI-X enabled but vector 0 still masked: the interrupt goes to the PBA.
    d.dev
        .config_write(CAP_MSIX + 2, &(MSIX_ENABLE | 15).to_le_bytes());
    let cmd = d.create_eq(32, 1 << 0x0a, 0);
    let (addr, blocks) = d.post(0, &hdr(16, 0x101, 0), 0x110);
    assert!(matches!(d.collect(addr, &blocks, 0x110), Done::Out(_)));
    assert!(d.dev.take_interrupts().is_empty());
    let mut pba = [0u8; 8];
    d.dev.bar0_read(MSIX_PBA, &mut pba);
    assert_eq!(pba[0] & 1, 1);
    assert!(d.eqe(&cmd).is_some());
    // Unmasking delivers it.
    d.dev
        .bar0_write(&d.mem, MSIX_TABLE + 12, &0u32.to_le_bytes());
    assert_eq!(d.dev.take_interrupts(), vec![0]);
    d.dev.bar0_read(MSIX_PBA, &mut pba);
    assert_eq!(pba[0] & 1, 0);
    // External mode (vfio-user: QEMU owns the table): vectors pass straight through.
    d.dev.set_msix_mode(MsixMode::External);
    d.dev.config_write(CAP_MSIX + 2, &0u16.to_le_bytes());
    let uar_off = u64::from(d.uar) * UAR_PAGE + 0x40;
    d.wr32(uar_off, (cmd.eqn << 24) | 1);
    d.post(0, &hdr(16, 0x101, 0), 0x110);
    assert_eq!(d.dev.take_interrupts(), vec![0]);
}

#[test]
fn health_counter_stall_is_visible() {
    let mut d = Driver::new(Model::Cx7Ib);
    d.dev.stall_health(true);
    let h = d.rd32(HEALTH_COUNTER);
    d.dev.advance(Duration::from_secs(6));
    assert_eq!(d.rd32(HEALTH_COUNTER), h);
    d.dev.stall_health(false);
    d.dev.advance(Duration::from_secs(1));
    assert_ne!(d.rd32(HEALTH_COUNTER), h);
}

/// Runs a test-window command with its arguments (little-endian words, as the guest's
/// `cxfn_ctl` writes them through `resource0`); returns the result register.
fn tw(d: &mut Driver, cmd: u32, args: [u32; 3]) -> u32 {
    for (i, a) in args.iter().enumerate() {
        d.dev.bar0_write(
            &d.mem,
            TEST_WINDOW + TW_ARG0 + 4 * i as u64,
            &a.to_le_bytes(),
        );
    }
    d.dev
        .bar0_write(&d.mem, TEST_WINDOW + TW_CMD, &cmd.to_le_bytes());
    tw_read(d, TW_RESULT)
}

fn tw_read(d: &mut Driver, off: u64) -> u32 {
    let mut b = [0u8; 4];
    d.dev.bar0_read(TEST_WINDOW + off, &mut b);
    u32::from_le_bytes(b)
}

/// The test window: a bad status on one opcode until cleared, a command held (no completion,
/// no EQE) and then completed late, an EQE of the test's choosing on the EQ that takes its
/// type, and refusals of bad arguments.
#[test]
fn test_window_injects_bad_device_behaviour() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    assert_eq!(tw_read(&mut d, TW_ID), TW_MAGIC);
    assert_eq!(&TW_MAGIC.to_le_bytes(), b"CXTW");

    // A bad status and syndrome on QUERY_HCA_CAP, not executed, until CLEAR.
    assert_eq!(
        tw(&mut d, tw_cmd::FAIL, [0x100, 0x3, 0x1234]),
        tw_result::OK
    );
    let (status, out) = d.exec_status(&hdr(16, 0x100, 1), 0x1010);
    assert_eq!((status, get(&out, 0x20, 32)), (0x3, 0x1234));
    assert_eq!(tw(&mut d, tw_cmd::CLEAR, [0; 3]), tw_result::OK);
    d.exec(&hdr(16, 0x100, 1), 0x1010);
    // Status 0 or opcode 0 is no fault.
    assert_eq!(tw(&mut d, tw_cmd::FAIL, [0x100, 0, 0]), tw_result::BAD_ARG);
    assert_eq!(tw(&mut d, tw_cmd::FAIL, [0, 1, 0]), tw_result::BAD_ARG);
    assert_eq!(
        tw(&mut d, tw_cmd::HANG, [0x1_0000, 0, 0]),
        tw_result::BAD_ARG
    );
    assert_eq!(tw(&mut d, 99, [0; 3]), tw_result::UNKNOWN);

    // A hung command: no completion, no EQE, no interrupt; then a late completion.
    assert_eq!(tw(&mut d, tw_cmd::HANG, [0x100, 0, 0]), tw_result::OK);
    let (addr, blocks) = d.post(0, &hdr(16, 0x100, 1), 0x1010);
    assert!(d.dev.take_interrupts().is_empty());
    assert_eq!(d.collect(addr, &blocks, 0x1010), Done::Pending);
    assert_eq!(tw_read(&mut d, TW_HELD), 1);
    assert_eq!(tw(&mut d, tw_cmd::RELEASE, [0; 3]), tw_result::OK);
    assert_eq!(tw_read(&mut d, TW_HELD), 0);
    assert_eq!(d.dev.take_interrupts(), vec![0]);
    let mut eq = d.cmd_eq.unwrap();
    let eqe = d.eqe(&eq).expect("late command EQE");
    assert_eq!(eqe[1], 0x0a);
    assert_eq!(u32::from_be_bytes(eqe[32..36].try_into().unwrap()), 1);
    eq.cons += 1;
    let uar_off = u64::from(d.uar) * UAR_PAGE + 0x40;
    d.wr32(uar_off, (eq.eqn << 24) | eq.cons);
    d.cmd_eq = Some(eq);
    match d.collect(addr, &blocks, 0x1010) {
        Done::Out(out) => assert_eq!(out[0], 0x1, "late completion: INT_ERR"),
        other => panic!("{other:?}"),
    }
    assert_eq!(d.dev.stats().late_completions, 1);
    assert_eq!(tw(&mut d, tw_cmd::CLEAR, [0; 3]), tw_result::OK);
    d.exec(&hdr(16, 0x100, 1), 0x1010);

    // An EQE of type 0x13 (the async EQ takes it) with 0xabc in its first data word.
    let asy = eqs[1];
    assert_eq!(tw(&mut d, tw_cmd::EQE, [0x0213, 0, 0xabc]), tw_result::OK);
    assert_eq!(d.dev.take_interrupts(), vec![0]);
    let eqe = d.eqe(&asy).expect("injected EQE");
    assert_eq!((eqe[1], eqe[3]), (0x13, 0x02));
    assert_eq!(u32::from_be_bytes(eqe[32..36].try_into().unwrap()), 0xabc);
    // No EQ takes type 0x04 in this driver's masks; a data offset past the 28 bytes.
    assert_eq!(tw(&mut d, tw_cmd::EQE, [0x04, 0, 1]), tw_result::NO_EQ);
    assert_eq!(tw(&mut d, tw_cmd::EQE, [0x13, 28, 1]), tw_result::BAD_ARG);
    assert!(d.dev.take_interrupts().is_empty());

    // Reads and writes elsewhere in the window do nothing.
    assert_eq!(tw_read(&mut d, 0x800), 0);
    d.dev
        .bar0_write(&d.mem, TEST_WINDOW + 0x800, &1u32.to_le_bytes());
    teardown(&mut d, &eqs);
}

/// ALLOC_UAR never hands out the test window's page (or anything above it).
#[test]
fn uar_indices_stay_below_the_test_window() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let mut last = 0;
    loop {
        let (status, out) = d.exec_status(&hdr(16, 0x802, 0), 16);
        if status != 0 {
            assert_eq!(status, 0x0f, "NO_RES_ERR");
            break;
        }
        last = get(&out, 0x48, 24);
        assert!(last < UAR_LIMIT);
    }
    assert_eq!(last, UAR_LIMIT - 1);
    assert_eq!(u64::from(UAR_LIMIT) * UAR_PAGE, TEST_WINDOW);
}

/// FATAL: the firmware stops and reads "NIC interface disabled" (mlx5_core's
/// `MLX5_SENSOR_NIC_DISABLED`), every object is gone, and the function probes again from
/// scratch once the driver programs the command queue (mlx5_core's health recovery).
#[test]
fn fatal_error_then_recovery_probe() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let _eqs = load(&mut d);
    assert_eq!((d.rd32(CMDQ_ADDR_L_SZ) >> 8) & 7, 0);
    assert_eq!(tw(&mut d, tw_cmd::FATAL, [0; 3]), tw_result::OK);
    assert_eq!((d.rd32(CMDQ_ADDR_L_SZ) >> 8) & 7, NIC_IFC_DISABLED);
    assert_eq!(tw_read(&mut d, TW_NIC_STATE), NIC_IFC_DISABLED);
    assert_eq!(d.dev.lifecycle(), "disabled");
    assert!(!d.dev.has_objects());
    // The health counter still moves (`wait_vital()` after the slot reset).
    let h = d.rd32(HEALTH_COUNTER);
    d.dev.advance(Duration::from_secs(1));
    assert_ne!(d.rd32(HEALTH_COUNTER), h);
    // mlx5_load_one() in recovery: the queue again (NIC state back to "full driver").
    d.cmd_eq = None;
    probe(&mut d);
    assert_eq!((d.rd32(CMDQ_ADDR_L_SZ) >> 8) & 7, 0);
    function_setup(&mut d);
    let eqs = load(&mut d);
    teardown(&mut d, &eqs);
}

/// PORT: the port's state changes (the vport context's `port_state`: 1 Down, 4 Active) and a
/// PORT_CHANGE EQE (subtype DOWN 1 / ACTIVE 4, port 1 in bits 7:4 of data byte 8) goes to the
/// EQ that takes type 0x09 (mlx5_core's async EQ).
#[test]
fn port_change_from_the_test_window() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    let mut port_eq = d.create_eq(16, 1 << 0x09, 0);
    let port_state = |d: &mut Driver| {
        let out = d.exec(&hdr(16, 0x762, 0), 0x1010);
        get(&out, 0x80 + 0x118, 4)
    };
    assert_eq!(port_state(&mut d), 4);
    for (up, sub, state) in [(0, 1, 1), (1, 4, 4)] {
        assert_eq!(tw(&mut d, tw_cmd::PORT, [up, 0, 0]), tw_result::OK);
        assert_eq!(d.dev.take_interrupts(), vec![0]);
        let eqe = d.eqe(&port_eq).expect("PORT_CHANGE EQE");
        assert_eq!((eqe[1], eqe[3], eqe[32 + 8]), (0x09, sub, 0x10));
        port_eq.cons += 1;
        let uar_off = u64::from(d.uar) * UAR_PAGE + 0x40;
        d.wr32(uar_off, (port_eq.eqn << 24) | port_eq.cons);
        assert_eq!(port_state(&mut d), state);
    }
    let mut inb = hdr(16, 0x302, 0);
    set(&mut inb, 0x58, 8, port_eq.eqn);
    d.exec(&inb, 16);
    teardown(&mut d, &eqs);
}

/// SM: with the switch's embedded subnet manager stopped, a port whose link comes back up
/// waits in INIT (the vport context's `port_state` 2) for a host SM; running it again sweeps
/// the port to ACTIVE (4) at once. Only 0 and 1 are arguments.
#[test]
fn embedded_sm_off_leaves_a_port_in_init() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    let port_state = |d: &mut Driver| {
        let out = d.exec(&hdr(16, 0x762, 0), 0x1010);
        get(&out, 0x80 + 0x118, 4)
    };
    assert_eq!(port_state(&mut d), 4);
    assert_eq!(tw(&mut d, tw_cmd::SM, [2, 0, 0]), tw_result::BAD_ARG);
    assert_eq!(tw(&mut d, tw_cmd::SM, [0, 0, 0]), tw_result::OK);
    // Stopping the SM leaves the swept port as it is.
    assert_eq!(port_state(&mut d), 4);
    for up in [0, 1] {
        // No EQ takes PORT_CHANGE here: the state changes all the same.
        assert_eq!(tw(&mut d, tw_cmd::PORT, [up, 0, 0]), tw_result::NO_EQ);
    }
    assert_eq!(port_state(&mut d), 2);
    assert_eq!(tw(&mut d, tw_cmd::SM, [1, 0, 0]), tw_result::OK);
    assert_eq!(port_state(&mut d), 4);
    teardown(&mut d, &eqs);
}
