// SPDX-License-Identifier: GPL-2.0

//! Host tests of `hca.rs`: mlx5_core's init and teardown sequence replayed command by command
//! with the values `mlx5_function_setup()`, `mlx5_load()` and their teardown send for a
//! function with what the profiles advertise, then each refusal.

use std::vec::Vec;

use super::engine_tests::Mem;
use super::hca::{EqeError, EqePosted, Lifecycle, EQ_DB_ARM, EQ_DB_NOARM};
use super::profile::{LinkLayer, CONNECTX6_DX, CONNECTX7};
use super::syndrome as syn;
use super::tests::{err, fw, inbox, ok};
use super::*;
use crate::prm::cmd::*;
use crate::prm::consts::*;
use crate::prm::ctx::*;
use crate::prm::layout::{AnyField, Field};

/// `MLX5_ST_SZ_BYTES` of a layout.
macro_rules! sz {
    ($l:ident) => {
        $l::SIZE_BYTES
    };
}

fn simple(fw: &mut Fw, opcode: u16, op_mod: u32, in_len: usize, out_len: usize) -> Vec<u8> {
    // The outbox header is inline in the command entry: at least 16 bytes on the wire even
    // where the layout is shorter (`enable_hca_out` is 12).
    ok(fw, &inbox(opcode, 0, op_mod, in_len), out_len.max(16))
}

fn query_cap(fw: &mut Fw, cap_type: u32, mode: u32) -> Vec<u8> {
    simple(
        fw,
        op::QUERY_HCA_CAP,
        cap_type << 1 | mode,
        sz!(query_hca_cap_in),
        sz!(query_hca_cap_out),
    )
}

fn cap_get(out: &[u8], f: impl AnyField) -> u32 {
    query_hca_cap_out::capability
        .field()
        .inner(f.any_field())
        .get(out)
        .unwrap()
}

fn set_cap_in(cap_page: &[u8], cap_type: u32) -> Vec<u8> {
    let mut inb = inbox(op::SET_HCA_CAP, 0, cap_type << 1, sz!(set_hca_cap_in));
    let off = set_hca_cap_in::capability.bit_off as usize / 8;
    inb[off..off + cap_page.len()].copy_from_slice(cap_page);
    inb
}

/// `handle_hca_cap()`: cur copied, pkey table 128, `log_max_qp` = min(18, max), no checksum,
/// `log_uar_page_sz` = PAGE_SHIFT - 12 = 0.
fn general_set_in(fw: &mut Fw) -> Vec<u8> {
    let cur = query_cap(fw, CAP_GENERAL, HCA_CAP_OPMOD_GET_CUR);
    let max = query_cap(fw, CAP_GENERAL, HCA_CAP_OPMOD_GET_MAX);
    let off = query_hca_cap_out::capability.bit_off as usize / 8;
    let mut inb = set_cap_in(&cur[off..off + cmd_hca_cap::SIZE_BYTES], CAP_GENERAL);
    let cap = |f| set_hca_cap_in::capability.inner(f);
    cap(cmd_hca_cap::pkey_table_size).set(&mut inb, 0).unwrap();
    let log_max_qp = cap_get(&max, cmd_hca_cap::log_max_qp).min(18);
    cap(cmd_hca_cap::log_max_qp)
        .set(&mut inb, log_max_qp)
        .unwrap();
    cap(cmd_hca_cap::cmdif_checksum).set(&mut inb, 0).unwrap();
    cap(cmd_hca_cap::log_uar_page_sz).set(&mut inb, 0).unwrap();
    inb
}

fn host_endianness(fw: &mut Fw, op_mod: u32, he: u8) -> Vec<u8> {
    let n = sz!(access_register_in);
    let mut inb = inbox(op::ACCESS_REG, 0, op_mod, n + 16);
    access_register_in::register_id
        .set(&mut inb, REG_HOST_ENDIANNESS)
        .unwrap();
    inb[n] = he;
    ok(fw, &inb, sz!(access_register_out) + 16)
}

/// `create_map_eq()`: `nent` + spare entries rounded up, 4 KiB pages at `buf`, `mask`.
fn create_eq_in(nent: u32, uar: u32, intr: u32, mask: [u64; 4], buf: u64, uid: u16) -> Vec<u8> {
    let log = (nent + 0x80).next_power_of_two().trailing_zeros();
    let npages = ((64u64 << log) / 4096).max(1) as usize;
    let base = sz!(create_eq_in);
    let mut inb = inbox(op::CREATE_EQ, uid, 0, base + npages * 8);
    let ctx = |f| create_eq_in::eq_context_entry.inner(f);
    ctx(eqc::log_eq_size).set(&mut inb, log).unwrap();
    ctx(eqc::uar_page).set(&mut inb, uar).unwrap();
    ctx(eqc::intr).set(&mut inb, intr).unwrap();
    ctx(eqc::log_page_size).set(&mut inb, 0).unwrap();
    for (i, m) in mask.iter().enumerate() {
        let f = Field::new("event_bitmask", create_eq_in::event_bitmask.bit_off, 64);
        f.nth(i as u32).set64(&mut inb, *m).unwrap();
    }
    for p in 0..npages {
        let a = buf + p as u64 * 4096;
        inb[base + p * 8..base + p * 8 + 8].copy_from_slice(&a.to_be_bytes());
    }
    inb
}

fn eqn_of(out: &[u8]) -> u32 {
    create_eq_out::eq_number.get(out).unwrap()
}

/// `mlx5_function_enable()` + `mlx5_function_open()` for `fw`; returns nothing, asserts each
/// step.
fn function_setup(fw: &mut Fw) {
    assert_eq!(fw.lifecycle(), Lifecycle::Disabled);
    simple(
        fw,
        op::ENABLE_HCA,
        0,
        sz!(enable_hca_in),
        sz!(enable_hca_out),
    );
    assert_eq!(fw.lifecycle(), Lifecycle::Enabled);
    // mlx5_core_set_issi()
    let out = simple(
        fw,
        op::QUERY_ISSI,
        0,
        sz!(query_issi_in),
        sz!(query_issi_out),
    );
    assert_eq!(query_issi_out::supported_issi_dw0.get(&out).unwrap(), 0x3);
    assert_eq!(query_issi_out::current_issi.get(&out).unwrap(), 0);
    let mut inb = inbox(op::SET_ISSI, 0, 0, sz!(set_issi_in));
    set_issi_in::current_issi.set(&mut inb, 1).unwrap();
    ok(fw, &inb, sz!(set_issi_out));
    // mlx5_satisfy_startup_pages(dev, 1)
    let out = simple(
        fw,
        op::QUERY_PAGES,
        QUERY_PAGES_BOOT,
        sz!(query_pages_in),
        sz!(query_pages_out),
    );
    assert_eq!(query_pages_out::num_pages.get(&out).unwrap(), 0);
    // set_hca_ctrl()
    host_endianness(fw, ACCESS_REG_WRITE, SET_HOST_ENDIANNESS_LE);
    // set_hca_cap(): general, then atomic (advertised), RoCE on Ethernet (no set: cur already
    // has sw_r_roce_src_udp_port).
    let inb = general_set_in(fw);
    ok(fw, &inb, sz!(set_hca_cap_out));
    query_cap(fw, CAP_ATOMIC, HCA_CAP_OPMOD_GET_CUR);
    let max = query_cap(fw, CAP_ATOMIC, HCA_CAP_OPMOD_GET_MAX);
    assert_eq!(
        cap_get(&max, atomic_caps::supported_atomic_req_8B_endianness_mode_1),
        1
    );
    // handle_hca_cap_atomic() starts from a zeroed context.
    let mut inb = set_cap_in(&[], CAP_ATOMIC);
    set_hca_cap_in::capability
        .inner(atomic_caps::atomic_req_8B_endianness_mode)
        .set(&mut inb, 1)
        .unwrap();
    ok(fw, &inb, sz!(set_hca_cap_out));
    if fw.config().link_layer == LinkLayer::Ethernet {
        let cur = query_cap(fw, CAP_ROCE, HCA_CAP_OPMOD_GET_CUR);
        query_cap(fw, CAP_ROCE, HCA_CAP_OPMOD_GET_MAX);
        assert_eq!(cap_get(&cur, roce_cap::sw_r_roce_src_udp_port), 1);
    }
    // mlx5_satisfy_startup_pages(dev, 0), INIT_HCA
    let out = simple(
        fw,
        op::QUERY_PAGES,
        2,
        sz!(query_pages_in),
        sz!(query_pages_out),
    );
    assert_eq!(query_pages_out::num_pages.get(&out).unwrap(), 0);
    simple(fw, op::INIT_HCA, 0, sz!(init_hca_in), sz!(init_hca_out));
    assert_eq!(fw.lifecycle(), Lifecycle::Initialized);
    // mlx5_query_hca_caps(): general cur reflects SET_HCA_CAP.
    let cur = query_cap(fw, CAP_GENERAL, HCA_CAP_OPMOD_GET_CUR);
    assert_eq!(cap_get(&cur, cmd_hca_cap::log_max_qp), 18);
    assert_eq!(cap_get(&cur, cmd_hca_cap::pkey_table_size), 0);
    // Nothing that would make mlx5_core query a group this model does not answer.
    for f in [
        cmd_hca_cap::hca_cap_2,
        cmd_hca_cap::eth_net_offloads,
        cmd_hca_cap::vport_group_manager,
        cmd_hca_cap::driver_version,
        cmd_hca_cap::sw_owner_id,
    ] {
        assert_eq!(cap_get(&cur, f), 0, "{}", f.name);
    }
    query_cap(fw, CAP_ATOMIC, HCA_CAP_OPMOD_GET_CUR);
    // mlx5_query_board_id()
    simple(
        fw,
        op::QUERY_ADAPTER,
        0,
        sz!(query_adapter_in),
        sz!(query_adapter_out),
    );
}

/// The three async EQs of `create_async_eqs()` on UAR `uar`, buffers in `mem`.
fn create_async_eqs(fw: &mut Fw, mem: &Mem, uar: u32) -> [u32; 3] {
    let cmd_buf = mem.map(256 * 64, true);
    let out = ok(
        fw,
        &create_eq_in(32, uar, 0, [1 << EVENT_TYPE_CMD, 0, 0, 0], cmd_buf, 0),
        sz!(create_eq_out),
    );
    let cmd = eqn_of(&out);
    assert_eq!(fw.eq_doorbell(uar, EQ_DB_ARM, cmd << 24), None);
    // gather_async_events_mask(): a set of async event types (none is CMD).
    let async_mask = (1u64 << 0x1) | (1 << 0x2) | (1 << 0x3) | (1 << 0x4) | (1 << 0x13);
    let async_buf = mem.map(8192 * 64, true);
    let out = ok(
        fw,
        &create_eq_in(0x1000, uar, 0, [async_mask, 0, 0, 0], async_buf, 0),
        sz!(create_eq_out),
    );
    let asy = eqn_of(&out);
    fw.eq_doorbell(uar, EQ_DB_ARM, asy << 24);
    let pages_buf = mem.map(256 * 64, true);
    let out = ok(
        fw,
        &create_eq_in(
            1,
            uar,
            0,
            [1 << EVENT_TYPE_PAGE_REQUEST, 0, 0, 0],
            pages_buf,
            0,
        ),
        sz!(create_eq_out),
    );
    let pages = eqn_of(&out);
    fw.eq_doorbell(uar, EQ_DB_ARM, pages << 24);
    assert_eq!(fw.eq(asy).unwrap().ring.log, 13);
    assert_eq!(fw.eq(cmd).unwrap().ring.log, 8);
    [cmd, asy, pages]
}

fn alloc_uar(fw: &mut Fw) -> u32 {
    let out = simple(fw, op::ALLOC_UAR, 0, sz!(alloc_uar_in), sz!(alloc_uar_out));
    let uar = alloc_uar_out::uar.get(&out).unwrap();
    // Above the init segment and the MSI-X pages of BAR 0.
    assert!(uar >= super::hca::PCI_FIRST_UAR);
    uar
}

/// Teardown: `mlx5_unload()` (EQs, bfreg), `mlx5_function_teardown()`.
fn teardown(fw: &mut Fw, eqs: &[u32], uar: u32) {
    for &eqn in eqs.iter().rev() {
        let mut inb = inbox(op::DESTROY_EQ, 0, 0, sz!(destroy_eq_in));
        destroy_eq_in::eq_number.set(&mut inb, eqn).unwrap();
        ok(fw, &inb, sz!(destroy_eq_out));
    }
    let mut inb = inbox(op::DEALLOC_UAR, 0, 0, sz!(dealloc_uar_in));
    dealloc_uar_in::uar.set(&mut inb, uar).unwrap();
    ok(fw, &inb, sz!(dealloc_uar_out));
    simple(
        fw,
        op::TEARDOWN_HCA,
        0,
        sz!(teardown_hca_in),
        sz!(teardown_hca_out),
    );
    assert_eq!(fw.lifecycle(), Lifecycle::Enabled);
    simple(
        fw,
        op::DISABLE_HCA,
        0,
        sz!(disable_hca_in),
        sz!(disable_hca_out),
    );
    assert_eq!(fw.lifecycle(), Lifecycle::Disabled);
    assert!(fw.counts().is_zero());
}

#[test]
fn mlx5_core_init_and_teardown_sequence() {
    for (profile, ll) in [
        (CONNECTX7, LinkLayer::Ib),
        (CONNECTX7, LinkLayer::Ethernet),
        (CONNECTX6_DX, LinkLayer::Ethernet),
    ] {
        let mut f = fw(profile, ll);
        f.cold_boot();
        function_setup(&mut f);
        let mem = Mem::new(0x1_0000_0000);
        let uar = alloc_uar(&mut f);
        let eqs = create_async_eqs(&mut f, &mem, uar);
        // A command completion now goes to the command EQ and interrupts vector 0.
        assert_eq!(f.post_cmd_eqe(&mem, 1 << 3), Ok(EqePosted::Interrupt(0)));
        // Interrupt taken, EQ not re-armed yet: the next EQE is written quietly.
        assert_eq!(f.post_cmd_eqe(&mem, 1 << 4), Ok(EqePosted::Quiet));
        // The driver consumes both and re-arms.
        assert_eq!(f.eq_doorbell(uar, EQ_DB_ARM, eqs[0] << 24 | 2), None);
        teardown(&mut f, &eqs, uar);
        // And up again, as after `modprobe -r; modprobe`.
        function_setup(&mut f);
    }
}

#[test]
fn eqes_carry_type_vector_and_owner_bit() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    f.cold_boot();
    function_setup(&mut f);
    let mem = Mem::new(0x2_0000_0000);
    let uar = alloc_uar(&mut f);
    let buf = mem.map(256 * 64, true);
    let out = ok(
        &mut f,
        &create_eq_in(32, uar, 5, [1 << EVENT_TYPE_CMD, 0, 0, 0], buf, 0),
        sz!(create_eq_out),
    );
    let eqn = eqn_of(&out);
    // Not armed yet: quiet.
    assert_eq!(f.post_cmd_eqe(&mem, 0x1), Ok(EqePosted::Quiet));
    let e = mem.get(buf, 64);
    assert_eq!(e[1], EVENT_TYPE_CMD);
    assert_eq!(&e[32..36], &1u32.to_be_bytes());
    assert_eq!(e[63], 0, "first pass owner 0");
    // Arming with an unconsumed EQE raises the vector at once.
    assert_eq!(f.eq_doorbell(uar, EQ_DB_ARM, eqn << 24), Some(5));
    // Wrong UAR page or offset: ignored.
    assert_eq!(f.eq_doorbell(uar + 1, EQ_DB_ARM, eqn << 24 | 1), None);
    assert_eq!(f.eq_doorbell(uar, 0x20, eqn << 24 | 1), None);
    assert_eq!(f.eq(eqn).unwrap().consumer, 0);
    // Fill all 256 entries, then overrun.
    f.eq_doorbell(uar, EQ_DB_NOARM, eqn << 24 | 1);
    for i in 1..257 {
        assert!(f.post_cmd_eqe(&mem, i).is_ok(), "{i}");
    }
    assert_eq!(f.post_cmd_eqe(&mem, 0), Err(EqeError::Overrun));
    assert_eq!(f.eq(eqn).unwrap().overruns, 1);
    // Entry 0 of the second pass has owner 1.
    assert_eq!(mem.get(buf, 64)[63], 1);
    // No EQ for page requests.
    assert_eq!(
        f.post_eqe(&mem, EVENT_TYPE_PAGE_REQUEST, 0, &[0; 28]),
        Err(EqeError::NoEq)
    );
}

#[test]
fn eqe_to_unmapped_memory_is_refused() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    f.cold_boot();
    function_setup(&mut f);
    let mem = Mem::new(0x3_0000_0000);
    let uar = alloc_uar(&mut f);
    // The buffer address was never mapped.
    let out = ok(
        &mut f,
        &create_eq_in(32, uar, 0, [1 << EVENT_TYPE_CMD, 0, 0, 0], 0x9_0000_0000, 0),
        sz!(create_eq_out),
    );
    let eqn = eqn_of(&out);
    assert_eq!(f.post_cmd_eqe(&mem, 1), Err(EqeError::Dma));
    assert_eq!(f.eq(eqn).unwrap().producer, 0);
}

#[test]
fn commands_are_gated_by_the_life_cycle() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    // Built initialized (the kernel simulator's case): init commands are refused.
    assert_eq!(f.lifecycle(), Lifecycle::Initialized);
    let e = err(&mut f, &inbox(op::ENABLE_HCA, 0, 0, sz!(enable_hca_in)), 16);
    assert_eq!(e, (Status::BAD_SYS_STATE_ERR, syn::HCA_STATE));
    f.cold_boot();
    // Disabled: only ENABLE_HCA (and QUERY_ISSI).
    for (opc, inl) in [
        (op::ALLOC_PD, sz!(alloc_pd_in)),
        (op::INIT_HCA, sz!(init_hca_in)),
        (op::QUERY_HCA_CAP, sz!(query_hca_cap_in)),
    ] {
        let e = err(&mut f, &inbox(opc, 0, 0, inl), 0x1010);
        assert_eq!(e, (Status::BAD_SYS_STATE_ERR, syn::HCA_STATE), "{opc:#x}");
    }
    simple(&mut f, op::ENABLE_HCA, 0, sz!(enable_hca_in), 16);
    // Enabled: resource commands wait for INIT_HCA; DISABLE_HCA is fine.
    let e = err(&mut f, &inbox(op::ALLOC_UAR, 0, 0, sz!(alloc_uar_in)), 16);
    assert_eq!(e, (Status::BAD_SYS_STATE_ERR, syn::HCA_STATE));
    let e = err(
        &mut f,
        &inbox(op::TEARDOWN_HCA, 0, 0, sz!(teardown_hca_in)),
        16,
    );
    assert_eq!(e, (Status::BAD_SYS_STATE_ERR, syn::HCA_STATE));
    // Unknown opcodes stay BAD_OP_ERR in every state.
    let e = err(&mut f, &inbox(op::MANAGE_PAGES, 0, 1, 16), 16);
    assert_eq!(e, (Status::BAD_OP_ERR, syn::BAD_OPCODE));
    simple(&mut f, op::INIT_HCA, 0, sz!(init_hca_in), 16);
    // Initialized: DISABLE_HCA needs TEARDOWN_HCA first.
    let e = err(
        &mut f,
        &inbox(op::DISABLE_HCA, 0, 0, sz!(disable_hca_in)),
        16,
    );
    assert_eq!(e, (Status::BAD_SYS_STATE_ERR, syn::HCA_STATE));
}

#[test]
fn teardown_releases_what_the_driver_left() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    f.cold_boot();
    function_setup(&mut f);
    let mem = Mem::new(0x4_0000_0000);
    let uar = alloc_uar(&mut f);
    create_async_eqs(&mut f, &mem, uar);
    simple(&mut f, op::ALLOC_PD, 0, sz!(alloc_pd_in), sz!(alloc_pd_out));
    simple(&mut f, op::TEARDOWN_HCA, 0, sz!(teardown_hca_in), 16);
    assert!(f.counts().is_zero());
    assert!(f.eq(1).is_none());
    simple(&mut f, op::DISABLE_HCA, 0, sz!(disable_hca_in), 16);
}

#[test]
fn init_commands_refuse_bad_values() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    f.cold_boot();
    // Another function.
    let mut inb = inbox(op::ENABLE_HCA, 0, 0, sz!(enable_hca_in));
    enable_hca_in::function_id.set(&mut inb, 1).unwrap();
    assert_eq!(
        err(&mut f, &inb, 16),
        (Status::BAD_PARAM_ERR, syn::OTHER_FUNCTION)
    );
    let mut inb = inbox(op::ENABLE_HCA, 0, 0, sz!(enable_hca_in));
    enable_hca_in::embedded_cpu_function
        .set(&mut inb, 1)
        .unwrap();
    assert_eq!(
        err(&mut f, &inb, 16),
        (Status::BAD_PARAM_ERR, syn::OTHER_FUNCTION)
    );
    simple(&mut f, op::ENABLE_HCA, 0, sz!(enable_hca_in), 16);
    // ISSI 2 is not supported.
    let mut inb = inbox(op::SET_ISSI, 0, 0, sz!(set_issi_in));
    set_issi_in::current_issi.set(&mut inb, 2).unwrap();
    assert_eq!(
        err(&mut f, &inb, 16),
        (Status::BAD_PARAM_ERR, syn::ISSI_UNSUPPORTED)
    );
    // QUERY_PAGES op_mod 0 and 4 are not defined.
    for m in [0, 4] {
        let inb = inbox(op::QUERY_PAGES, 0, m, sz!(query_pages_in));
        assert_eq!(
            err(&mut f, &inb, 16),
            (Status::BAD_PARAM_ERR, syn::BAD_OP_MOD)
        );
    }
    // SET_HCA_CAP: log_max_qp above max, checksums, 64 KiB UAR pages, a GET op_mod bit.
    let good = general_set_in(&mut f);
    let cap = |fl| set_hca_cap_in::capability.inner(fl);
    for (fl, v) in [
        (cmd_hca_cap::log_max_qp, 31),
        (cmd_hca_cap::log_max_qp, 0),
        (cmd_hca_cap::cmdif_checksum, 1),
        (cmd_hca_cap::log_uar_page_sz, 4),
        (cmd_hca_cap::pkey_table_size, 1),
    ] {
        let mut inb = good.clone();
        cap(fl).set(&mut inb, v).unwrap();
        let e = err(&mut f, &inb, 16);
        assert_eq!(
            e,
            (Status::BAD_PARAM_ERR, syn::CAP_NOT_WRITABLE),
            "{}",
            fl.name
        );
    }
    let mut inb = good.clone();
    mbox_in::op_mod.set(&mut inb, 1).unwrap();
    assert_eq!(
        err(&mut f, &inb, 16),
        (Status::BAD_PARAM_ERR, syn::BAD_OP_MOD)
    );
    // A short SET_HCA_CAP (header only).
    let inb = inbox(op::SET_HCA_CAP, 0, 0, 16);
    assert_eq!(err(&mut f, &inb, 16).0, Status::BAD_INP_LEN_ERR);
    // ODP (cap type 2) is not a group this device has.
    let mut inb = good.clone();
    mbox_in::op_mod.set(&mut inb, 2 << 1).unwrap();
    assert_eq!(
        err(&mut f, &inb, 16),
        (Status::BAD_PARAM_ERR, syn::CAP_TYPE)
    );
    // Nothing changed: cur still reports the profile's log_max_qp.
    let cur = query_cap(&mut f, CAP_GENERAL, HCA_CAP_OPMOD_GET_CUR);
    assert_eq!(cap_get(&cur, cmd_hca_cap::log_max_qp), CONNECTX7.log_max_qp);
    // HOST_ENDIANNESS: a bogus value, a short register, a read back.
    let n = sz!(access_register_in);
    let mut inb = inbox(op::ACCESS_REG, 0, ACCESS_REG_WRITE, n + 16);
    access_register_in::register_id
        .set(&mut inb, REG_HOST_ENDIANNESS)
        .unwrap();
    inb[n] = 0x12;
    assert_eq!(
        err(&mut f, &inb, n + 16),
        (Status::BAD_PARAM_ERR, syn::REG_BAD_WRITE)
    );
    assert_eq!(
        err(&mut f, &inb[..n + 4], n + 16).0,
        Status::BAD_INP_LEN_ERR
    );
    host_endianness(&mut f, ACCESS_REG_WRITE, SET_HOST_ENDIANNESS_LE);
    let out = host_endianness(&mut f, ACCESS_REG_READ, 0);
    assert_eq!(out[n], SET_HOST_ENDIANNESS_LE);
    // INIT_HCA with a software owner id (not advertised).
    let mut inb = inbox(op::INIT_HCA, 0, 0, sz!(init_hca_in));
    inb[0x10] = 1;
    assert_eq!(
        err(&mut f, &inb, 16),
        (Status::BAD_PARAM_ERR, syn::RESERVED_NOT_ZERO)
    );
    simple(&mut f, op::INIT_HCA, 0, sz!(init_hca_in), 16);
    // TEARDOWN_HCA force close is not advertised.
    let mut inb = inbox(op::TEARDOWN_HCA, 0, 0, sz!(teardown_hca_in));
    teardown_hca_in::profile.set(&mut inb, 1).unwrap();
    assert_eq!(
        err(&mut f, &inb, 16),
        (Status::BAD_PARAM_ERR, syn::TEARDOWN_PROFILE)
    );
}

#[test]
fn create_eq_checks() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    f.cold_boot();
    function_setup(&mut f);
    let uar = alloc_uar(&mut f);
    let m = [1 << EVENT_TYPE_CMD, 0, 0, 0];
    // No such UAR.
    let e = err(&mut f, &create_eq_in(32, uar + 7, 0, m, 0x1000, 0), 16);
    assert_eq!(e, (Status::BAD_RES_ERR, syn::EQ_BAD_UAR));
    // pas[] cut short.
    let inb = create_eq_in(32, uar, 0, m, 0x1000, 0);
    let e = err(&mut f, &inb[..inb.len() - 8], 16);
    assert_eq!(e, (Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT));
    // Too big for the model (2^17 EQEs = 8 MiB).
    let mut inb = create_eq_in(32, uar, 0, m, 0x1000, 0);
    create_eq_in::eq_context_entry
        .inner(eqc::log_eq_size)
        .set(&mut inb, 17)
        .unwrap();
    assert_eq!(
        err(&mut f, &inb, 16),
        (Status::BAD_PARAM_ERR, syn::EQ_BAD_SIZE)
    );
    // A completion EQ with the shared uid is accepted; another unknown uid is not.
    let out = ok(
        &mut f,
        &create_eq_in(1024, uar, 1, [0; 4], 0x10_0000, SHARED_RESOURCE_UID),
        16,
    );
    assert_eq!(f.eq(eqn_of(&out)).unwrap().uid, SHARED_RESOURCE_UID);
    let e = err(
        &mut f,
        &create_eq_in(1024, uar, 1, [0; 4], 0x10_0000, 7),
        16,
    );
    assert_eq!(e, (Status::BAD_PARAM_ERR, syn::UID_UNKNOWN));
    // Full table.
    for _ in 1..super::hca::MAX_EQS {
        ok(&mut f, &create_eq_in(1, uar, 0, [0; 4], 0x1000, 0), 16);
    }
    let e = err(&mut f, &create_eq_in(1, uar, 0, [0; 4], 0x1000, 0), 16);
    assert_eq!(e, (Status::NO_RES_ERR, syn::TABLE_FULL));
    // Destroying a missing EQ.
    let mut inb = inbox(op::DESTROY_EQ, 0, 0, sz!(destroy_eq_in));
    destroy_eq_in::eq_number.set(&mut inb, 200).unwrap();
    assert_eq!(
        err(&mut f, &inb, 16),
        (Status::BAD_RES_ERR, syn::EQ_UNKNOWN)
    );
}

#[test]
fn set_driver_version_is_kept() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let mut inb = inbox(op::SET_DRIVER_VERSION, 0, 0, sz!(set_driver_version_in));
    let s = b"Linux,mlx5_core,7.3.0";
    let off = set_driver_version_in::driver_version.bit_off as usize / 8;
    inb[off..off + s.len()].copy_from_slice(s);
    ok(&mut f, &inb, sz!(set_driver_version_out));
    assert_eq!(f.driver_version(), s);
}

/// Data-path events become EQEs as upstream's handlers read them: a completion goes to the
/// EQ the CQ names (`cqc.c_eqn`, whatever its mask) with the CQN at `data.comp.cqn`; a CQ
/// error and QP events go to the EQ whose mask takes their type (the async EQ).
#[test]
fn data_path_events_become_eqes() {
    use super::events::{Event, QpEvent, SrqEvent};
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    f.cold_boot();
    function_setup(&mut f);
    let mem = Mem::new(0x2_0000_0000);
    let uar = alloc_uar(&mut f);
    let comp_buf = mem.map(256 * 64, true);
    let out = ok(
        &mut f,
        &create_eq_in(64, uar, 3, [0; 4], comp_buf, SHARED_RESOURCE_UID),
        sz!(create_eq_out),
    );
    let comp = eqn_of(&out);
    let async_buf = mem.map(256 * 64, true);
    let mask = (1u64 << 0x2) | (1 << EVENT_TYPE_CQ_ERROR);
    let out = ok(
        &mut f,
        &create_eq_in(64, uar, 0, [mask, 0, 0, 0], async_buf, 0),
        sz!(create_eq_out),
    );
    let asy = eqn_of(&out);
    let mut inb = super::tests::cq_in(0, uar, 6);
    create_cq_in::cq_context
        .inner(cqc::c_eqn_or_apu_element)
        .set(&mut inb, comp)
        .unwrap();
    let out = ok(&mut f, &inb, sz!(create_cq_out));
    let cqn = create_cq_out::cqn.get(&out).unwrap();

    // Not armed: written, no interrupt; armed: the vector.
    assert_eq!(
        f.post_event(&mem, Event::Completion { cqn }),
        Ok(Some(EqePosted::Quiet))
    );
    assert_eq!(f.eq_doorbell(uar, EQ_DB_NOARM, comp << 24 | 1), None);
    assert_eq!(f.eq_doorbell(uar, EQ_DB_ARM, comp << 24 | 1), None);
    assert_eq!(
        f.post_event(&mem, Event::Completion { cqn }),
        Ok(Some(EqePosted::Interrupt(3)))
    );
    for i in 0..2 {
        let e = mem.get(comp_buf + i * 64, 64);
        assert_eq!(e[1], EVENT_TYPE_COMP);
        assert_eq!(&e[56..60], &cqn.to_be_bytes());
        assert_eq!(e[63], 0);
    }
    assert_eq!(f.eq_doorbell(uar, EQ_DB_ARM, asy << 24), None);
    assert_eq!(
        f.post_event(&mem, Event::CqError { cqn }),
        Ok(Some(EqePosted::Interrupt(0)))
    );
    let e = mem.get(async_buf, 64);
    assert_eq!(e[1], EVENT_TYPE_CQ_ERROR);
    assert_eq!(&e[32..36], &cqn.to_be_bytes());
    assert_eq!(e[43], 1, "overrun syndrome");
    assert_eq!(
        f.post_event(
            &mem,
            Event::Qp {
                qpn: 0x123,
                kind: QpEvent::CommEst
            }
        ),
        Ok(Some(EqePosted::Quiet))
    );
    let e = mem.get(async_buf + 64, 64);
    assert_eq!(e[1], 0x02);
    assert_eq!(e[52], 0, "MLX5_EVENT_QUEUE_TYPE_QP");
    assert_eq!(&e[56..60], &0x123u32.to_be_bytes());
    // A completion of a CQ that is gone is dropped; an event no EQ takes is refused.
    assert_eq!(
        f.post_event(&mem, Event::Completion { cqn: cqn + 1 }),
        Ok(None)
    );
    assert_eq!(
        f.post_event(
            &mem,
            Event::Srq {
                srqn: 1,
                kind: SrqEvent::Limit
            }
        ),
        Err(EqeError::NoEq)
    );
}
