// SPDX-License-Identifier: GPL-2.0

//! The data path of the emulated function, driven as a guest driver drives it: the driver of
//! mlx5_core_init.rs brings the function up, then creates what libmlx5 and mlx5_ib create (a
//! completion EQ on its own MSI-X vector, a PD, a PA mkey, a CQ and an RC QP connected to
//! itself, buffers and doorbell records in guest memory), posts WQEs into the queue buffer,
//! writes the doorbell records and stores to the UAR page (CQ arm at 0x20, send doorbell at
//! 0x800), and reads back what the device wrote: the data, the CQEs, the EQE and the
//! interrupt. Field offsets are mlx5_ifc.h bit offsets.

#![allow(dead_code)] // The shared driver has more than this binary uses.

use rdma_rs_cxfn::cmdq::{BLOCK_BYTES, BLOCK_DATA, INLINE, OWNER_HW, PCI_CMD_XPORT};
use rdma_rs_cxfn::config::{CAP_MSIX, MSIX_ENABLE};
use rdma_rs_cxfn::function::DATAPATH_POLL;
use rdma_rs_cxfn::regs::*;
use rdma_rs_cxfn::{CxFunction, GuestMemory, Model, VecMemory};

include!("common/driver.rs");

/// `MLX5_SET64`.
fn set64(buf: &mut [u8], bit_off: usize, v: u64) {
    set(buf, bit_off, 32, (v >> 32) as u32);
    set(buf, bit_off + 32, 32, v as u32);
}

/// The LID of port 1 of the function with serial 1 (`Fw::port_lid`, `ibv_devinfo` shows 258).
const PORT_LID: u32 = 0x102;
/// `mkey_7_0` the test's mkey is created with.
const KEY_BYTE: u32 = 0x42;
/// log2 of the CQ size.
const LOG_CQ: u32 = 6;
/// WQEBBs of the SQ (log2), RQ WQEs (log2) and the RQ stride (log2 bytes).
const LOG_SQ: u32 = 2;
const LOG_RQ: u32 = 2;
const RQ_STRIDE_LOG: u32 = 4;

struct Objs {
    pd: u32,
    comp: Eq,
    cqn: u32,
    cq_buf: u64,
    cq_db: u64,
    key: u32,
    qpn: u32,
    qp_buf: u64,
    qp_db: u64,
}

/// What a guest driver sets up for one RC QP connected to itself.
fn setup(d: &mut Driver) -> Objs {
    setup_on(d, None)
}

/// A DEVX umem (`MLX5_IB_METHOD_DEVX_UMEM_REG`): the uid of its context, its id and the guest
/// pages of its MTT, in order.
struct UmemRef<'a> {
    uid: u32,
    id: u32,
    pages: &'a [u64],
}

/// The umem page [`setup_on`] puts a DEVX CQ's buffer in, and the one its doorbell record.
const UMEM_CQ_PAGE: usize = 3;
const UMEM_DBR_PAGE: usize = 5;

/// [`setup`], with the CQ built as a DEVX user builds it when `umem` is given: buffer and
/// doorbell record in the umem (`cq_umem_valid`, `cq_umem_id`, `cq_umem_offset`;
/// `cqc.dbr_umem_valid`, `dbr_umem_id`, `dbr_addr` an offset), no `pas[]`, the context's uid.
fn setup_on(d: &mut Driver, umem: Option<&UmemRef<'_>>) -> Objs {
    // Vector 1 for the completion EQ (mlx5_irq_request() for comp vector 0).
    d.dev
        .bar0_write(&d.mem, MSIX_TABLE + 16, &0xfee0_0000u32.to_le_bytes());
    d.dev
        .bar0_write(&d.mem, MSIX_TABLE + 16 + 8, &0x4022u32.to_le_bytes());
    d.dev
        .bar0_write(&d.mem, MSIX_TABLE + 16 + 12, &0u32.to_le_bytes());
    // create_comp_eq(): no event mask; completions go to the EQ a CQ names.
    let comp = d.create_eq(64, 0, 1);
    let out = d.exec(&hdr(16, 0x800, 0), 16);
    let pd = get(&out, 0x48, 24);

    // A PA mkey over everything, all access rights (a kernel's DMA mkey).
    let mut inb = hdr(0x110, 0x200, 0);
    let mkc = 0x80;
    set(&mut inb, mkc + 0x11, 1, 1);
    set(&mut inb, mkc + 0x12, 1, 1);
    set(&mut inb, mkc + 0x13, 1, 1);
    set(&mut inb, mkc + 0x14, 1, 1);
    set(&mut inb, mkc + 0x15, 1, 1);
    set(&mut inb, mkc + 0x20, 24, 0xff_ffff);
    set(&mut inb, mkc + 0x38, 8, KEY_BYTE);
    set(&mut inb, mkc + 0x60, 1, 1);
    set(&mut inb, mkc + 0x68, 24, pd);
    let out = d.exec(&inb, 16);
    let key = (get(&out, 0x48, 24) << 8) | KEY_BYTE;

    // The CQ: one page of 64 CQEs, each initialized invalid and owned by software as mlx5_ib
    // does (`op_own` = MLX5_CQE_INVALID << 4 | 1), and a doorbell record.
    let cqc = 0x80;
    let (cq_buf, cq_db, mut inb) = match umem {
        None => {
            let cq_buf = d.alloc(4096, 4096);
            let cq_db = d.alloc(64, 64);
            let mut inb = hdr(0x110 + 8, 0x400, 0);
            set64(&mut inb, cqc + 0x1c0, cq_db);
            inb[0x110..0x118].copy_from_slice(&cq_buf.to_be_bytes());
            (cq_buf, cq_db, inb)
        }
        Some(u) => {
            let mut inb = hdr(0x110, 0x400, 0);
            set(&mut inb, 0x10, 16, u.uid);
            set(&mut inb, 0x2e0, 1, 1); // cq_umem_valid
            set64(&mut inb, 0x280, (UMEM_CQ_PAGE * 4096) as u64); // cq_umem_offset
            set(&mut inb, 0x2c0, 32, u.id); // cq_umem_id
            set(&mut inb, cqc + 0x6, 1, 1); // dbr_umem_valid
            set(&mut inb, cqc + 0x20, 32, u.id); // dbr_umem_id
            set64(&mut inb, cqc + 0x1c0, (UMEM_DBR_PAGE * 4096 + 64) as u64);
            (u.pages[UMEM_CQ_PAGE], u.pages[UMEM_DBR_PAGE] + 64, inb)
        }
    };
    for i in 0..(1u64 << LOG_CQ) {
        d.mem.write(cq_buf + i * 64 + 63, &[0xf1]).unwrap();
    }
    set(&mut inb, cqc + 0x63, 5, LOG_CQ);
    set(&mut inb, cqc + 0x68, 24, d.uar);
    set(&mut inb, cqc + 0xa0, 32, comp.eqn);
    let out = d.exec(&inb, 16);
    let cqn = get(&out, 0x48, 24);

    // The QP: RQ (4 x 16 bytes) then SQ (4 WQEBBs) in one page.
    let qp_buf = d.alloc(4096, 4096);
    let qp_db = d.alloc(64, 64);
    let mut inb = hdr(0x110 + 8, 0x500, 0);
    let qpc = 0xc0;
    set(&mut inb, qpc + 0x13, 2, 3); // pm_state migrated
    set(&mut inb, qpc + 0x28, 24, pd);
    set(&mut inb, qpc + 0x49, 4, LOG_RQ);
    set(&mut inb, qpc + 0x4d, 3, RQ_STRIDE_LOG - 4);
    set(&mut inb, qpc + 0x51, 4, LOG_SQ);
    set(&mut inb, qpc + 0x68, 24, d.uar);
    set(&mut inb, qpc + 0x3e8, 24, cqn);
    set(&mut inb, qpc + 0x4e8, 24, cqn);
    set64(&mut inb, qpc + 0x500, qp_db);
    inb[0x110..0x118].copy_from_slice(&qp_buf.to_be_bytes());
    let out = d.exec(&inb, 16);
    let qpn = get(&out, 0x48, 24);

    // RST2INIT, INIT2RTR (to itself: remote QPN = own, LID = own port's), RTR2RTS.
    let ads = qpc + 0xc0;
    let mut inb = hdr(0x110, 0x502, 0);
    set(&mut inb, 0x48, 24, qpn);
    set(&mut inb, ads + 0x128, 8, 1);
    set(&mut inb, qpc + 0x490, 1, 1);
    set(&mut inb, qpc + 0x491, 1, 1);
    set(&mut inb, qpc + 0x492, 1, 1); // rae
    d.exec(&inb, 16);
    let mut inb = hdr(0x110, 0x503, 0);
    set(&mut inb, 0x48, 24, qpn);
    set(&mut inb, qpc + 0x40, 3, 3); // 1024
    set(&mut inb, qpc + 0x43, 5, 20);
    set(&mut inb, qpc + 0xa8, 24, qpn);
    set(&mut inb, ads + 0x30, 16, PORT_LID);
    set(&mut inb, ads + 0x128, 8, 1);
    set(&mut inb, qpc + 0x4a3, 5, 12);
    set(&mut inb, qpc + 0x490, 1, 1);
    set(&mut inb, qpc + 0x491, 1, 1);
    set(&mut inb, qpc + 0x492, 1, 1); // rae
    d.exec(&inb, 16);
    let mut inb = hdr(0x110, 0x504, 0);
    set(&mut inb, 0x48, 24, qpn);
    set(&mut inb, qpc + 0x38d, 3, 7);
    set(&mut inb, qpc + 0x390, 3, 7);
    set(&mut inb, ads + 0x40, 5, 14);
    // RTR2RTS defines the access bits too (the model copies what a transition defines).
    set(&mut inb, qpc + 0x490, 1, 1);
    set(&mut inb, qpc + 0x491, 1, 1);
    set(&mut inb, qpc + 0x492, 1, 1); // rae
    d.exec(&inb, 16);
    assert!(d.dev.take_interrupts().is_empty());
    Objs {
        pd,
        comp,
        cqn,
        cq_buf,
        cq_db,
        key,
        qpn,
        qp_buf,
        qp_db,
    }
}

/// Writes an RDMA_WRITE of `len` bytes from `src` to `dst` as SQ WQE `idx` (one WQEBB: ctrl,
/// raddr, one data segment), signaled. Returns the first 8 bytes (the doorbell value).
fn post_write(d: &mut Driver, o: &Objs, idx: u16, src: u64, dst: u64, len: u32) -> u64 {
    let mut w = [0u8; 64];
    let opmod_idx_opcode = (u32::from(idx) << 8) | 0x08;
    w[0..4].copy_from_slice(&opmod_idx_opcode.to_be_bytes());
    w[4..8].copy_from_slice(&((o.qpn << 8) | 3).to_be_bytes());
    w[11] = 0x08; // CQ_UPDATE
    w[16..24].copy_from_slice(&dst.to_be_bytes());
    w[24..28].copy_from_slice(&o.key.to_be_bytes());
    w[32..36].copy_from_slice(&len.to_be_bytes());
    w[36..40].copy_from_slice(&o.key.to_be_bytes());
    w[40..48].copy_from_slice(&src.to_be_bytes());
    let rq_bytes = (1u64 << LOG_RQ) << RQ_STRIDE_LOG;
    let slot = u64::from(idx) & ((1 << LOG_SQ) - 1);
    d.mem.write(o.qp_buf + rq_bytes + slot * 64, &w).unwrap();
    // The SQ doorbell record: the next free WQEBB.
    d.mem
        .write(o.qp_db + 4, &u32::from(idx + 1).to_be_bytes())
        .unwrap();
    u64::from_be_bytes(w[0..8].try_into().unwrap())
}

/// The CQE at `ci` if hardware wrote it (opcode not invalid, owner = pass parity).
fn cqe(d: &Driver, o: &Objs, ci: u32) -> Option<[u8; 64]> {
    let mut c = [0u8; 64];
    let idx = u64::from(ci & ((1 << LOG_CQ) - 1));
    d.mem.read(o.cq_buf + idx * 64, &mut c).unwrap();
    let own = u32::from(c[63] & 1);
    (c[63] >> 4 != 0xf && own == (ci >> LOG_CQ) & 1).then_some(c)
}

/// `mlx5_cq_arm()` as libmlx5 does it: the arm record, then the 64-bit UAR store.
fn arm(d: &mut Driver, o: &Objs, sn: u32, ci: u32) {
    let word = (sn << 28) | (ci & 0xff_ffff);
    d.mem.write(o.cq_db + 4, &word.to_be_bytes()).unwrap();
    let v = (u64::from(word) << 32) | u64::from(o.cqn);
    let uar = u64::from(d.uar) * UAR_PAGE;
    d.dev.bar0_write(&d.mem, uar + 0x20, &v.to_be_bytes());
}

#[test]
fn a_posted_wqe_completes_with_a_cqe_an_eqe_and_an_interrupt() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    let mut o = setup(&mut d);
    let uar = u64::from(d.uar) * UAR_PAGE;

    let src = d.alloc(4096, 4096);
    let dst = d.alloc(4096, 4096);
    d.mem
        .write(src, b"written by the emulated function")
        .unwrap();

    // Arm first (the CQ is empty: nothing fires), then post and ring: one 8-byte store.
    arm(&mut d, &o, 0, 0);
    assert!(d.dev.take_interrupts().is_empty());
    assert!(d.eqe(&o.comp).is_none());
    let db = post_write(&mut d, &o, 0, src, dst, 32);
    d.dev.bar0_write(&d.mem, uar + 0x800, &db.to_be_bytes());

    let mut got = [0u8; 32];
    d.mem.read(dst, &mut got).unwrap();
    assert_eq!(&got, b"written by the emulated function");
    let c = cqe(&d, &o, 0).expect("a CQE at index 0");
    assert_eq!(c[63] >> 4, 0, "requester CQE (MLX5_CQE_REQ)");
    assert_eq!(u16::from_be_bytes([c[60], c[61]]), 0, "wqe_counter");
    assert_eq!(
        u32::from_be_bytes(c[56..60].try_into().unwrap()) & 0xff_ffff,
        o.qpn
    );
    assert!(cqe(&d, &o, 1).is_none());
    // The armed CQ fired: a COMP EQE with the CQN on the completion EQ, and its vector.
    assert_eq!(d.dev.take_interrupts(), vec![1]);
    let e = d.eqe(&o.comp).expect("completion EQE");
    assert_eq!(e[1], 0x00, "MLX5_EVENT_TYPE_COMP");
    assert_eq!(
        u32::from_be_bytes(e[56..60].try_into().unwrap()) & 0xff_ffff,
        o.cqn
    );
    o.comp.cons += 1;
    assert!(d.eqe(&o.comp).is_none());
    // eq_update_ci(eq, 1): consumed and re-armed, nothing pending: no interrupt.
    d.wr32(uar + 0x40, (o.comp.eqn << 24) | o.comp.cons);
    assert!(d.dev.take_interrupts().is_empty());

    // Not re-armed: the next completion is a CQE without an event. This time the doorbell
    // is two 32-bit stores (a 32-bit kernel's mlx5_write64()).
    let db = post_write(&mut d, &o, 1, src, dst + 64, 8);
    d.wr32(uar + 0x800, (db >> 32) as u32);
    d.wr32(uar + 0x804, db as u32);
    let c = cqe(&d, &o, 1).expect("a CQE at index 1");
    assert_eq!(u16::from_be_bytes([c[60], c[61]]), 1);
    assert!(d.dev.take_interrupts().is_empty());
    assert!(d.eqe(&o.comp).is_none());
    // Arming with a consumer index behind the producer fires at once.
    arm(&mut d, &o, 1, 1);
    assert_eq!(d.dev.take_interrupts(), vec![1]);
    assert!(d.eqe(&o.comp).is_some());
    o.comp.cons += 1;
    d.wr32(uar + 0x40, (o.comp.eqn << 24) | o.comp.cons);

    let st = d.dev.stats();
    assert_eq!(
        (st.doorbells, st.wqes, st.eqes, st.eqe_errors),
        (4, 2, 2, 0)
    );
    // While a QP exists the transport is asked to look at the doorbell records again.
    let t = d
        .dev
        .datapath_timeout()
        .expect("a poll is due while QPs exist");
    assert!(t <= DATAPATH_POLL);

    // A fetch-and-add over guest memory (`IB_ATOMIC_HCA`: a read-modify-write by the
    // device's one thread): the old value lands in the local buffer, the sum at the target.
    d.mem.write(dst + 128, &40u64.to_ne_bytes()).unwrap();
    let mut w = [0u8; 64];
    w[0..4].copy_from_slice(&((2u32 << 8) | 0x12).to_be_bytes());
    w[4..8].copy_from_slice(&((o.qpn << 8) | 4).to_be_bytes());
    w[11] = 0x08;
    w[16..24].copy_from_slice(&(dst + 128).to_be_bytes());
    w[24..28].copy_from_slice(&o.key.to_be_bytes());
    w[32..40].copy_from_slice(&2u64.to_be_bytes());
    w[48..52].copy_from_slice(&8u32.to_be_bytes());
    w[52..56].copy_from_slice(&o.key.to_be_bytes());
    w[56..64].copy_from_slice(&(src + 128).to_be_bytes());
    let rq_bytes = (1u64 << LOG_RQ) << RQ_STRIDE_LOG;
    d.mem.write(o.qp_buf + rq_bytes + 2 * 64, &w).unwrap();
    d.mem.write(o.qp_db + 4, &3u32.to_be_bytes()).unwrap();
    d.dev.bar0_write(
        &d.mem,
        uar + 0x800,
        &u64::from_be_bytes(w[0..8].try_into().unwrap()).to_be_bytes(),
    );
    let c = cqe(&d, &o, 2).expect("a CQE at index 2");
    assert_eq!(c[63] >> 4, 0, "requester CQE (MLX5_CQE_REQ), not an error");
    let mut v = [0u8; 8];
    d.mem.read(src + 128, &mut v).unwrap();
    assert_eq!(u64::from_ne_bytes(v), 40, "the value before the addition");
    d.mem.read(dst + 128, &mut v).unwrap();
    assert_eq!(u64::from_ne_bytes(v), 42, "the sum at the target");
    d.dev.take_interrupts();

    teardown_objs(&mut d, &o);
    // No QP: after one more look the data path waits for the guest.
    let _ = d.dev.poll_datapath(&d.mem);
    assert_eq!(d.dev.datapath_timeout(), None);
    teardown(&mut d, &eqs);
}

/// Destroys what [`setup`] made: QP, mkey, CQ, PD, the completion EQ.
fn teardown_objs(d: &mut Driver, o: &Objs) {
    let mut inb = hdr(16, 0x501, 0);
    set(&mut inb, 0x48, 24, o.qpn);
    d.exec(&inb, 16);
    let mut inb = hdr(16, 0x202, 0);
    set(&mut inb, 0x48, 24, o.key >> 8);
    d.exec(&inb, 16);
    let mut inb = hdr(16, 0x401, 0);
    set(&mut inb, 0x48, 24, o.cqn);
    d.exec(&inb, 16);
    let mut inb = hdr(16, 0x801, 0);
    set(&mut inb, 0x48, 24, o.pd);
    d.exec(&inb, 16);
    let mut inb = hdr(16, 0x302, 0);
    set(&mut inb, 0x58, 8, o.comp.eqn);
    d.exec(&inb, 16);
}

/// Buffers of pinned user pages in a VM without an IOMMU are as many runs as pages; the model
/// keeps 8 runs per object. The function keeps longer page lists itself (`iova.rs`): a CQ of
/// 16 scattered pages and an MTT mkey of 12 scattered pages work, an RDMA WRITE lands in the
/// right guest pages across every page boundary, and destroying the objects releases the
/// ranges.
#[test]
fn scattered_page_lists_beyond_eight_runs_work() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    let o = setup(&mut d);
    let uar = u64::from(d.uar) * UAR_PAGE;

    // A second CQ: 1024 CQEs, 16 pages, every other guest page.
    let log_cq = 10u32;
    let pages: Vec<u64> = (0..16).map(|_| d.alloc(8192, 4096)).collect();
    for p in &pages {
        for i in 0..64 {
            d.mem.write(p + i * 64 + 63, &[0xf1]).unwrap();
        }
    }
    let cq_db = d.alloc(64, 64);
    let mut inb = hdr(0x110 + 16 * 8, 0x400, 0);
    set(&mut inb, 0x80 + 0x63, 5, log_cq);
    set(&mut inb, 0x80 + 0x68, 24, d.uar);
    set(&mut inb, 0x80 + 0xa0, 32, o.comp.eqn);
    set64(&mut inb, 0x80 + 0x1c0, cq_db);
    for (i, p) in pages.iter().enumerate() {
        inb[0x110 + i * 8..0x118 + i * 8].copy_from_slice(&p.to_be_bytes());
    }
    let (status, out) = d.exec_status(&inb, 16);
    assert_eq!(
        status,
        0,
        "a 16-run CQ is accepted (syndrome {:#x})",
        get(&out, 0x20, 32)
    );
    let cqn2 = get(&out, 0x48, 24);
    assert_eq!(d.dev.iova_ranges(), 1);

    // An MTT mkey of 12 scattered pages at iova 0x7000_0000_0000.
    let n = 12usize;
    let mpages: Vec<u64> = (0..n).map(|_| d.alloc(8192, 4096)).collect();
    let va = 0x7000_0000_0000u64;
    let inb = mtt_mkey_inbox(o.pd, va, &mpages);
    let (status, out) = d.exec_status(&inb, 16);
    assert_eq!(
        status,
        0,
        "a 12-run mkey is accepted (syndrome {:#x})",
        get(&out, 0x20, 32)
    );
    let mtt_key = (get(&out, 0x48, 24) << 8) | 0x77;
    assert_eq!(d.dev.iova_ranges(), 2);

    // RDMA WRITE of 12 pages less 100 bytes, from a PA source into the MTT mkey at an
    // unaligned iova.
    let len = (n * 4096 - 100) as u32;
    let src = d.alloc(n * 4096, 4096);
    let pattern: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    d.mem.write(src, &pattern).unwrap();
    let mut w = [0u8; 64];
    w[0..4].copy_from_slice(&0x08u32.to_be_bytes());
    w[4..8].copy_from_slice(&((o.qpn << 8) | 3).to_be_bytes());
    w[11] = 0x08;
    w[16..24].copy_from_slice(&(va + 50).to_be_bytes());
    w[24..28].copy_from_slice(&mtt_key.to_be_bytes());
    w[32..36].copy_from_slice(&len.to_be_bytes());
    w[36..40].copy_from_slice(&o.key.to_be_bytes());
    w[40..48].copy_from_slice(&src.to_be_bytes());
    let rq_bytes = (1u64 << LOG_RQ) << RQ_STRIDE_LOG;
    d.mem.write(o.qp_buf + rq_bytes, &w).unwrap();
    d.mem.write(o.qp_db + 4, &1u32.to_be_bytes()).unwrap();
    d.dev.bar0_write(
        &d.mem,
        uar + 0x800,
        &u64::from_be_bytes(w[0..8].try_into().unwrap()).to_be_bytes(),
    );
    let c = cqe(&d, &o, 0).expect("a CQE");
    assert_eq!(c[63] >> 4, 0, "success (syndrome {:#x})", c[55]);
    // Byte k of the message is at iova va + 50 + k: page (50 + k) / 4096 of the list.
    let mut got = vec![0u8; 4096];
    for (i, p) in mpages.iter().enumerate() {
        d.mem.read(*p, &mut got).unwrap();
        for (j, b) in got.iter().enumerate() {
            let k = (i * 4096 + j) as i64 - 50;
            if (0..i64::from(len)).contains(&k) {
                assert_eq!(*b, pattern[k as usize], "page {i} byte {j}");
            }
        }
    }
    d.dev.take_interrupts();

    let mut inb = hdr(16, 0x202, 0);
    set(&mut inb, 0x48, 24, mtt_key >> 8);
    d.exec(&inb, 16);
    let mut inb = hdr(16, 0x401, 0);
    set(&mut inb, 0x48, 24, cqn2);
    d.exec(&inb, 16);
    assert_eq!(d.dev.iova_ranges(), 0, "destroy releases the ranges");
    // A create the model refuses keeps no range: a CQ of 16 scattered pages on a bad UAR.
    let mut inb = hdr(0x110 + 16 * 8, 0x400, 0);
    set(&mut inb, 0x80 + 0x63, 5, log_cq);
    set(&mut inb, 0x80 + 0x68, 24, 0xabcd);
    for (i, p) in pages.iter().enumerate() {
        inb[0x110 + i * 8..0x118 + i * 8].copy_from_slice(&p.to_be_bytes());
    }
    let (status, _) = d.exec_status(&inb, 16);
    assert_ne!(status, 0);
    assert_eq!(d.dev.iova_ranges(), 0);
    teardown_objs(&mut d, &o);
    teardown(&mut d, &eqs);
}

/// CREATE_MKEY: an MTT mkey at `va` over `pages` (4 KiB each, every access right), key byte
/// 0x77, the whole `pas` in the command (upstream `reg_create(populate)`).
fn mtt_mkey_inbox(pd: u32, va: u64, pages: &[u64]) -> Vec<u8> {
    let n = pages.len();
    let mut inb = hdr(0x110 + n * 8, 0x200, 0);
    let mkc = 0x80;
    set(&mut inb, mkc + 0x11, 1, 1);
    set(&mut inb, mkc + 0x12, 1, 1);
    set(&mut inb, mkc + 0x13, 1, 1);
    set(&mut inb, mkc + 0x14, 1, 1);
    set(&mut inb, mkc + 0x15, 1, 1);
    set(&mut inb, mkc + 0x16, 2, 1); // MTT
    set(&mut inb, mkc + 0x20, 24, 0xff_ffff);
    set(&mut inb, mkc + 0x38, 8, 0x77);
    set(&mut inb, mkc + 0x68, 24, pd);
    set64(&mut inb, mkc + 0x80, va);
    set64(&mut inb, mkc + 0xc0, (n * 4096) as u64);
    set(&mut inb, mkc + 0x1a0, 32, n.div_ceil(2) as u32);
    set(&mut inb, mkc + 0x1da, 6, 12);
    set(&mut inb, 0x300, 32, n.div_ceil(2) as u32);
    for (i, p) in pages.iter().enumerate() {
        // MLX5_IB_MTT_PRESENT: read and write enable in the low bits.
        inb[0x110 + i * 8..0x118 + i * 8].copy_from_slice(&(p | 3).to_be_bytes());
    }
    inb
}

/// A 1 GiB MR of scattered 4 KiB pages is a CREATE_MKEY of 2 MiB of `pas` when the driver
/// puts the translation in the command (upstream `reg_create(populate)`, ours always): the
/// function accepts a message of that size (a ConnectX chains mailboxes with no 1 MiB limit),
/// the mkey exists, and its destroy releases the page list.
#[test]
fn an_mkey_of_a_gib_in_scattered_pages_is_one_command() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    let o = setup(&mut d);
    // 262,144 entries over 64 scattered pages, each named 4,096 times.
    let few: Vec<u64> = (0..64).map(|_| d.alloc(8192, 4096)).collect();
    let pages: Vec<u64> = (0..1usize << 18).map(|i| few[i % few.len()]).collect();
    let inb = mtt_mkey_inbox(o.pd, 0x7000_0000_0000, &pages);
    assert!(inb.len() > 2 << 20);
    let (status, out) = d.exec_status(&inb, 16);
    assert_eq!(status, 0, "syndrome {:#x}", get(&out, 0x20, 32));
    assert_eq!(d.dev.iova_ranges(), 1);
    let mut inb = hdr(16, 0x202, 0);
    set(&mut inb, 0x48, 24, get(&out, 0x48, 24));
    d.exec(&inb, 16);
    assert_eq!(d.dev.iova_ranges(), 0, "destroy releases the range");
    teardown_objs(&mut d, &o);
    teardown(&mut d, &eqs);
}

/// `pages` scattered pages (every other guest page), each CQE slot marked invalid.
fn scattered_cq_pages(d: &mut Driver, pages: usize) -> Vec<u64> {
    let v: Vec<u64> = (0..pages).map(|_| d.alloc(8192, 4096)).collect();
    for p in &v {
        for i in 0..64 {
            d.mem.write(p + i * 64 + 63, &[0xf1]).unwrap();
        }
    }
    v
}

/// MODIFY_CQ (op_mod 1, resize) of CQ `cqn` to `2^log` CQEs on `pages` (one page each).
fn resize_cq(d: &mut Driver, cqn: u32, log: u32, pages: &[u64]) -> u8 {
    let mut inb = hdr(0x110 + pages.len() * 8, 0x403, 1);
    set(&mut inb, 0x48, 24, cqn);
    set(&mut inb, 0x60, 32, 1); // MLX5_MODIFY_CQ_MASK_LOG_SIZE
    set(&mut inb, 0x80 + 0x63, 5, log);
    for (i, p) in pages.iter().enumerate() {
        inb[0x110 + i * 8..0x118 + i * 8].copy_from_slice(&p.to_be_bytes());
    }
    d.exec_status(&inb, 16).0
}

/// The CQE opcode (`op_own >> 4`) at slot `idx` of a CQ buffer page.
fn cqe_opcode(d: &Driver, page: u64, idx: u64) -> u8 {
    let mut b = [0u8; 1];
    d.mem.read(page + idx * 64 + 63, &mut b).unwrap();
    b[0] >> 4
}

/// A resize (MODIFY_CQ) onto a buffer of more than 8 runs works on the function as a create
/// does (`iova.rs`): the RESIZE CQE goes into the old buffer, the next completion into the
/// new scattered one, the old range goes once the CQ switched, a refused resize keeps no range,
/// a resize onto one run releases the CQ's range, and the CQ's destroy releases what is left.
#[test]
fn a_resize_onto_a_scattered_buffer_works() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    let o = setup(&mut d);
    let uar = u64::from(d.uar) * UAR_PAGE;

    // 64 CQEs in one page -> 1024 CQEs in 16 scattered pages.
    let new = scattered_cq_pages(&mut d, 16);
    assert_eq!(
        resize_cq(&mut d, o.cqn, 10, &new),
        0,
        "a 16-run resize is accepted"
    );
    assert_eq!(d.dev.iova_ranges(), 1);
    assert_eq!(
        cqe_opcode(&d, o.cq_buf, 0),
        5,
        "MLX5_CQE_RESIZE_CQ in the old buffer"
    );
    // The next completion (producer index 1) is slot 1 of the new buffer's first page.
    let src = d.alloc(64, 64);
    let dst = d.alloc(64, 64);
    d.mem.write(src, b"resized").unwrap();
    let db = post_write(&mut d, &o, 0, src, dst, 7);
    d.dev.bar0_write(&d.mem, uar + 0x800, &db.to_be_bytes());
    assert_eq!(
        cqe_opcode(&d, new[0], 1),
        0,
        "MLX5_CQE_REQ in the new buffer"
    );
    let mut got = [0u8; 7];
    d.mem.read(dst, &mut got).unwrap();
    assert_eq!(&got, b"resized");
    d.dev.take_interrupts();

    // Scattered -> scattered: the CQ keeps one range, the new one.
    let newer = scattered_cq_pages(&mut d, 16);
    assert_eq!(resize_cq(&mut d, o.cqn, 10, &newer), 0);
    assert_eq!(
        cqe_opcode(&d, new[0], 2),
        5,
        "RESIZE CQE in the previous scattered buffer"
    );
    assert_eq!(
        d.dev.iova_ranges(),
        1,
        "the old range went once the CQ switched"
    );
    // A resize the model refuses (past log_max_cq_sz) keeps no new range.
    let refused = scattered_cq_pages(&mut d, 16);
    assert_ne!(resize_cq(&mut d, o.cqn, 31, &refused), 0);
    assert_eq!(d.dev.iova_ranges(), 1);
    // Onto one run (16 contiguous pages): no range of its own, the scattered one goes.
    let run = d.alloc(16 * 4096, 4096);
    for i in 0..1024u64 {
        d.mem.write(run + i * 64 + 63, &[0xf1]).unwrap();
    }
    let one: Vec<u64> = (0..16).map(|i| run + i * 4096).collect();
    assert_eq!(resize_cq(&mut d, o.cqn, 10, &one), 0);
    assert_eq!(cqe_opcode(&d, newer[0], 3), 5);
    assert_eq!(d.dev.iova_ranges(), 0);
    // Scattered again, then the destroy releases it.
    assert_eq!(resize_cq(&mut d, o.cqn, 10, &new), 0);
    assert_eq!(d.dev.iova_ranges(), 1);
    teardown_objs(&mut d, &o);
    assert_eq!(
        d.dev.iova_ranges(),
        0,
        "DESTROY_CQ releases the resized CQ's range"
    );
    teardown(&mut d, &eqs);
}

/// A resize below the CQEs the CQ still holds (none consumed: the doorbell record's consumer
/// index is 0) is refused as on a ConnectX (BAD_PARAM); one that fits them is accepted.
#[test]
fn a_resize_below_the_cqes_held_is_refused() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    let o = setup(&mut d);
    let uar = u64::from(d.uar) * UAR_PAGE;
    let src = d.alloc(64, 64);
    let dst = d.alloc(64, 64);
    for i in 0..3u16 {
        let db = post_write(&mut d, &o, i, src, dst, 8);
        d.dev.bar0_write(&d.mem, uar + 0x800, &db.to_be_bytes());
    }
    assert!(cqe(&d, &o, 2).is_some(), "three CQEs written");
    d.dev.take_interrupts();
    let small = scattered_cq_pages(&mut d, 1);
    assert_eq!(
        resize_cq(&mut d, o.cqn, 1, &small),
        0x3,
        "2 entries for 3 CQEs held: BAD_PARAM"
    );
    let fits = scattered_cq_pages(&mut d, 1);
    assert_eq!(resize_cq(&mut d, o.cqn, 3, &fits), 0, "8 entries hold them");
    teardown_objs(&mut d, &o);
    teardown(&mut d, &eqs);
}

/// CREATE_RMP (an SRQ) of 1024 64-byte WQEs on `pages` scattered pages, on PD `pd`.
fn create_rmp(d: &mut Driver, pd: u32, pages: &[u64]) -> (u8, Vec<u8>) {
    let db = d.alloc(64, 64);
    let mut inb = hdr(0x110 + pages.len() * 8, 0x90c, 0);
    let wq = 0x100 + 0x180;
    set(&mut inb, 0x100 + 0x8, 4, 1); // RDY
                                      // wq_type 0: MLX5_WQ_TYPE_LINKED_LIST.
    set(&mut inb, wq + 0x48, 24, pd);
    set64(&mut inb, wq + 0x80, db);
    set(&mut inb, wq + 0x10c, 4, 6);
    set(&mut inb, wq + 0x11b, 5, 10);
    for (i, p) in pages.iter().enumerate() {
        inb[0x110 + i * 8..0x118 + i * 8].copy_from_slice(&p.to_be_bytes());
    }
    d.exec_status(&inb, 16)
}

/// CREATE_RMP's wq page list beyond 8 runs is kept by the function (`iova.rs`): accepted,
/// released by DESTROY_RMP, and a create the model refuses keeps nothing.
#[test]
fn an_rmp_on_a_scattered_buffer_is_accepted_and_released() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    let o = setup(&mut d);
    let pages: Vec<u64> = (0..16).map(|_| d.alloc(8192, 4096)).collect();
    let (status, out) = create_rmp(&mut d, o.pd, &pages);
    assert_eq!(
        status,
        0,
        "a 16-run RMP (syndrome {:#x})",
        get(&out, 0x20, 32)
    );
    let rmpn = get(&out, 0x48, 24);
    assert_eq!(d.dev.iova_ranges(), 1);
    let mut inb = hdr(16, 0x90e, 0);
    set(&mut inb, 0x48, 24, rmpn);
    d.exec(&inb, 16);
    assert_eq!(d.dev.iova_ranges(), 0, "DESTROY_RMP releases the range");
    let (status, _) = create_rmp(&mut d, 0xabcd, &pages);
    assert_ne!(status, 0, "an unknown PD");
    assert_eq!(d.dev.iova_ranges(), 0);
    teardown_objs(&mut d, &o);
    teardown(&mut d, &eqs);
}

/// CREATE_UMEM with `pages` (4 KiB each, `rd_en`/`wr_en` set) for context `uid`.
fn create_umem(d: &mut Driver, uid: u32, pages: &[u64]) -> (u8, Vec<u8>) {
    let mut inb = hdr(0x30 + pages.len() * 8, 0xa08, 0);
    set(&mut inb, 0x10, 16, uid);
    set64(&mut inb, 0x80 + 0xc0, pages.len() as u64); // num_of_mtt
    for (i, p) in pages.iter().enumerate() {
        inb[0x30 + i * 8..0x38 + i * 8].copy_from_slice(&(p | 3).to_be_bytes());
    }
    d.exec_status(&inb, 16)
}

/// DESTROY_UMEM of context `uid`: the status.
fn destroy_umem(d: &mut Driver, uid: u32, id: u32) -> u8 {
    let mut inb = hdr(16, 0xa0a, 0);
    set(&mut inb, 0x10, 16, uid);
    set(&mut inb, 0x48, 24, id);
    d.exec_status(&inb, 16).0
}

/// A DEVX umem of pinned user pages (UCX's receive queue, its CQs and doorbell records) is
/// as many runs as pages in a VM without an IOMMU; the function keeps its MTT (`iova.rs`): a
/// 16-run umem is accepted, a CQ built in it (buffer and doorbell record on different pages
/// of the umem) gets its CQE in the right guest page and its completion event, DESTROY_UMEM is refused while the CQ uses it and then releases the range, and a
/// refused CREATE_UMEM keeps nothing.
#[test]
fn a_devx_umem_on_scattered_pages_carries_a_cq() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    // CREATE_UCTX (no capability bits): the DEVX context's uid.
    let out = d.exec(&hdr(0x40, 0xa04, 0), 16);
    let uid = get(&out, 0x50, 16);
    let pages: Vec<u64> = (0..16).map(|_| d.alloc(8192, 4096)).collect();
    let (status, _) = create_umem(&mut d, 0, &pages);
    assert_ne!(status, 0, "CREATE_UMEM without a uid is refused");
    assert_eq!(d.dev.iova_ranges(), 0, "a refused umem keeps no range");
    let (status, out) = create_umem(&mut d, uid, &pages);
    assert_eq!(
        status,
        0,
        "a 16-run umem (syndrome {:#x})",
        get(&out, 0x20, 32)
    );
    let id = get(&out, 0x48, 24);
    assert_eq!(d.dev.iova_ranges(), 1);
    let u = UmemRef {
        uid,
        id,
        pages: &pages,
    };
    let mut o = setup_on(&mut d, Some(&u));
    let uar = u64::from(d.uar) * UAR_PAGE;
    let src = d.alloc(4096, 4096);
    let dst = d.alloc(4096, 4096);
    d.mem.write(src, b"a CQ in a umem").unwrap();
    arm(&mut d, &o, 0, 0);
    let db = post_write(&mut d, &o, 0, src, dst, 14);
    d.dev.bar0_write(&d.mem, uar + 0x800, &db.to_be_bytes());
    let mut got = [0u8; 14];
    d.mem.read(dst, &mut got).unwrap();
    assert_eq!(&got, b"a CQ in a umem");
    let c = cqe(&d, &o, 0).expect("the CQE in umem page 3");
    assert_eq!(c[63] >> 4, 0, "requester CQE (MLX5_CQE_REQ)");
    // The armed CQ fired: the completion EQE and its vector.
    assert_eq!(d.dev.take_interrupts(), vec![1]);
    assert!(d.eqe(&o.comp).is_some());
    o.comp.cons += 1;
    assert_ne!(
        destroy_umem(&mut d, uid, id),
        0,
        "DESTROY_UMEM while the CQ uses it"
    );
    assert_eq!(
        d.dev.iova_ranges(),
        1,
        "a refused DESTROY_UMEM keeps the range"
    );
    teardown_objs(&mut d, &o);
    assert_eq!(destroy_umem(&mut d, uid, id), 0);
    assert_eq!(d.dev.iova_ranges(), 0, "DESTROY_UMEM releases the range");
    let mut inb = hdr(16, 0xa06, 0);
    set(&mut inb, 0x50, 16, uid);
    d.exec(&inb, 16);
    teardown(&mut d, &eqs);
}

/// Writes the `wqebbs`-WQEBB WQE `w` at SQ index `idx` (no wrap), its doorbell record and the
/// UAR store of its first 8 bytes.
fn ring_sq(d: &mut Driver, o: &Objs, idx: u16, w: &[u8]) {
    let rq_bytes = (1u64 << LOG_RQ) << RQ_STRIDE_LOG;
    let slot = u64::from(idx) & ((1 << LOG_SQ) - 1);
    let wqebbs = w.len().div_ceil(64) as u16;
    assert!(slot + u64::from(wqebbs) <= 1 << LOG_SQ, "no wrap");
    d.mem.write(o.qp_buf + rq_bytes + slot * 64, w).unwrap();
    d.mem
        .write(o.qp_db + 4, &u32::from(idx + wqebbs).to_be_bytes())
        .unwrap();
    let uar = u64::from(d.uar) * UAR_PAGE;
    d.dev.bar0_write(&d.mem, uar + 0x800, &w[0..8]);
}

/// Runs the data path until the CQE at `ci` is written.
fn wait_cqe(d: &mut Driver, o: &Objs, ci: u32) -> [u8; 64] {
    for _ in 0..1000 {
        if let Some(c) = cqe(d, o, ci) {
            return c;
        }
        d.dev.poll_datapath(&d.mem);
    }
    panic!("no CQE {ci}");
}

/// upstream `mlx5r_umr_update_mr_pas()` with `MLX5_IB_UPD_XLT_ENABLE` on SQ index `idx`:
/// the MTTs of `pages` (4 KiB) read through the PA key from `xlt`, mkey `key` enabled over
/// `[va, va + len)` with local and remote read and write. The WQE's CQE (index `ci`).
#[allow(clippy::too_many_arguments)]
fn umr_load(
    d: &mut Driver,
    o: &Objs,
    idx: u16,
    ci: u32,
    key: u32,
    pages: &[u64],
    xlt: u64,
    va: u64,
    len: u64,
) -> [u8; 64] {
    let mtts: Vec<u8> = pages.iter().flat_map(|p| (p | 3).to_be_bytes()).collect();
    d.mem.write(xlt, &mtts).unwrap();
    let octo = pages.len().div_ceil(2) as u16;
    let mut w = vec![0u8; 192];
    w[0..4].copy_from_slice(&((u32::from(idx) << 8) | 0x25).to_be_bytes());
    w[4..8].copy_from_slice(&((o.qpn << 8) | 9).to_be_bytes());
    w[11] = 0x08; // CQ_UPDATE
    w[12..16].copy_from_slice(&key.to_be_bytes());
    // The UMR control segment: MLX5_UMR_TRANSLATION_OFFSET_EN (offset 0), the octowords of
    // translation, the mask: LEN | PAGE_SIZE | START_ADDR, LR..RW, FREE.
    w[16] = 0x10;
    w[20..22].copy_from_slice(&octo.to_be_bytes());
    let mask: u64 = 0x43 | (0xf << 18) | (1 << 29);
    w[24..32].copy_from_slice(&mask.to_be_bytes());
    // The mkey context segment: enabled (free 0), the rights, start, length, 4 KiB pages.
    w[64 + 2] = (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5);
    w[64 + 16..64 + 24].copy_from_slice(&va.to_be_bytes());
    w[64 + 24..64 + 32].copy_from_slice(&len.to_be_bytes());
    set(&mut w, 64 * 8 + 0x1da, 6, 12);
    // The data segment: the MTTs.
    w[128..132].copy_from_slice(&(u32::from(octo) * 16).to_be_bytes());
    w[132..136].copy_from_slice(&o.key.to_be_bytes());
    w[136..144].copy_from_slice(&xlt.to_be_bytes());
    ring_sq(d, o, idx, &w);
    wait_cqe(d, o, ci)
}

/// An RDMA WRITE of `len` bytes from `src` (PA key) to `dst` through `rkey` at SQ index `idx`:
/// its CQE (CQE index = `ci`).
fn write_to(
    d: &mut Driver,
    o: &Objs,
    idx: u16,
    ci: u32,
    src: u64,
    dst: u64,
    rkey: u32,
    len: u32,
) -> [u8; 64] {
    let mut w = [0u8; 64];
    w[0..4].copy_from_slice(&((u32::from(idx) << 8) | 0x08).to_be_bytes());
    w[4..8].copy_from_slice(&((o.qpn << 8) | 3).to_be_bytes());
    w[11] = 0x08;
    w[16..24].copy_from_slice(&dst.to_be_bytes());
    w[24..28].copy_from_slice(&rkey.to_be_bytes());
    w[32..36].copy_from_slice(&len.to_be_bytes());
    w[36..40].copy_from_slice(&o.key.to_be_bytes());
    w[40..48].copy_from_slice(&src.to_be_bytes());
    ring_sq(d, o, idx, &w);
    wait_cqe(d, o, ci)
}

/// Upstream mlx5_ib registers a user MR as a free mkey (`reg_create(populate=false)`) whose
/// MTTs a UMR WQE then loads (`mlx5r_umr_update_mr_pas()`). In a VM without an IOMMU the
/// pages are as many runs as pages, more than the model keeps per translation: the model
/// asks the function for a device-side alias (`iova.rs`). A 64-page scattered translation
/// loads, an RDMA WRITE through the mkey lands in the right guest pages; a later translation
/// of one run releases the alias, a scattered one takes a new one, DESTROY_MKEY releases it.
#[test]
fn a_umr_loads_a_scattered_translation_into_an_mkey() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    let o = setup(&mut d);
    let n = 64usize;

    // CREATE_MKEY as reg_create(populate=false): free, umr_en, MTT mode, room for n MTTs,
    // no page list.
    let mut inb = hdr(0x110, 0x200, 0);
    let mkc = 0x80;
    set(&mut inb, mkc + 0x1, 1, 1); // free
    set(&mut inb, mkc + 0x10, 1, 1); // umr_en
    set(&mut inb, mkc + 0x12, 1, 1);
    set(&mut inb, mkc + 0x13, 1, 1);
    set(&mut inb, mkc + 0x14, 1, 1);
    set(&mut inb, mkc + 0x15, 1, 1);
    set(&mut inb, mkc + 0x16, 2, 1); // MTT
    set(&mut inb, mkc + 0x20, 24, 0xff_ffff);
    set(&mut inb, mkc + 0x38, 8, 0x55);
    set(&mut inb, mkc + 0x68, 24, o.pd);
    set(&mut inb, mkc + 0x1a0, 32, (n / 2) as u32);
    set(&mut inb, mkc + 0x1da, 6, 12);
    let (status, out) = d.exec_status(&inb, 16);
    assert_eq!(status, 0, "syndrome {:#x}", get(&out, 0x20, 32));
    let key = (get(&out, 0x48, 24) << 8) | 0x55;
    assert_eq!(d.dev.iova_ranges(), 0);

    let pages: Vec<u64> = (0..n).map(|_| d.alloc(8192, 4096)).collect();
    let xlt = d.alloc(n * 8, 64);
    let va = 0x7f00_0000_1000u64;
    let c = umr_load(&mut d, &o, 0, 0, key, &pages, xlt, va, (n * 4096) as u64);
    assert_eq!(c[63] >> 4, 0, "the UMR completes (syndrome {:#x})", c[55]);
    assert_eq!(d.dev.iova_ranges(), 1, "the translation's alias");

    // RDMA WRITE of n pages less 100 bytes at va + 50.
    let len = (n * 4096 - 100) as u32;
    let src = d.alloc(n * 4096, 4096);
    let pattern: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    d.mem.write(src, &pattern).unwrap();
    let c = write_to(&mut d, &o, 3, 1, src, va + 50, key, len);
    assert_eq!(c[63] >> 4, 0, "the WRITE completes (syndrome {:#x})", c[55]);
    let mut got = vec![0u8; 4096];
    for (i, p) in pages.iter().enumerate() {
        d.mem.read(*p, &mut got).unwrap();
        for (j, b) in got.iter().enumerate() {
            let k = (i * 4096 + j) as i64 - 50;
            if (0..i64::from(len)).contains(&k) {
                assert_eq!(*b, pattern[k as usize], "page {i} byte {j}");
            }
        }
    }

    // A translation of one run: the alias goes; the WRITE lands there.
    let one = d.alloc(n * 4096, 4096);
    let run: Vec<u64> = (0..n as u64).map(|i| one + i * 4096).collect();
    let c = umr_load(&mut d, &o, 4, 2, key, &run, xlt, va, (n * 4096) as u64);
    assert_eq!(c[63] >> 4, 0, "syndrome {:#x}", c[55]);
    assert_eq!(
        d.dev.iova_ranges(),
        0,
        "a one-run translation needs no alias"
    );
    let c = write_to(&mut d, &o, 7, 3, src, va + 50, key, 4096);
    assert_eq!(c[63] >> 4, 0, "syndrome {:#x}", c[55]);
    let mut got = vec![0u8; 4096];
    d.mem.read(one + 50, &mut got).unwrap();
    assert_eq!(got, pattern[..4096]);

    // Scattered again, then DESTROY_MKEY releases the alias.
    let c = umr_load(&mut d, &o, 8, 4, key, &pages, xlt, va, (n * 4096) as u64);
    assert_eq!(c[63] >> 4, 0, "syndrome {:#x}", c[55]);
    assert_eq!(d.dev.iova_ranges(), 1);
    let mut inb = hdr(16, 0x202, 0);
    set(&mut inb, 0x48, 24, key >> 8);
    assert_eq!(d.exec_status(&inb, 16).0, 0);
    assert_eq!(d.dev.iova_ranges(), 0, "DESTROY_MKEY releases the alias");
    d.dev.take_interrupts();
    teardown_objs(&mut d, &o);
    teardown(&mut d, &eqs);
}

/// The function's port is linked to its switch (port 1) on the data path too: a
/// directed-route SMP that QP0 sends with the initial path `[_, 1]` (what ib_core's MAD layer
/// sends for `smpquery -D nodeinfo 0,1`) goes out of the port to the switch, whose SMA
/// answers NodeInfo (NodeType 2, a switch), and the response comes back by the return path to
/// QP0's receive queue (source QPN 0, the SMP after the 40-byte GRH area).
#[test]
fn a_directed_route_smp_reaches_the_switch_and_comes_back() {
    let mut d = Driver::new(Model::Cx7Ib);
    probe(&mut d);
    function_setup(&mut d);
    let eqs = load(&mut d);
    let o = setup(&mut d);
    let uar = u64::from(d.uar) * UAR_PAGE;

    // QP0 (`st` 7, MLX5_QPC_ST_QP0) on the same CQ: RQ then SQ in one page.
    let qp_buf = d.alloc(4096, 4096);
    let qp_db = d.alloc(64, 64);
    let qpc = 0xc0;
    let mut inb = hdr(0x110 + 8, 0x500, 0);
    set(&mut inb, qpc + 0x8, 8, 7);
    set(&mut inb, qpc + 0x13, 2, 3);
    set(&mut inb, qpc + 0x28, 24, o.pd);
    set(&mut inb, qpc + 0x49, 4, LOG_RQ);
    set(&mut inb, qpc + 0x4d, 3, RQ_STRIDE_LOG - 4);
    set(&mut inb, qpc + 0x51, 4, LOG_SQ);
    set(&mut inb, qpc + 0x68, 24, d.uar);
    set(&mut inb, qpc + 0x3e8, 24, o.cqn);
    set(&mut inb, qpc + 0x4e8, 24, o.cqn);
    set64(&mut inb, qpc + 0x500, qp_db);
    inb[0x110..0x118].copy_from_slice(&qp_buf.to_be_bytes());
    let out = d.exec(&inb, 16);
    assert_eq!(out[0], 0, "CREATE_QP of QP0");
    let qpn = get(&out, 0x48, 24);
    let ads = qpc + 0xc0;
    for op in [0x502, 0x503, 0x504] {
        let mut inb = hdr(0x110, op, 0);
        set(&mut inb, 0x48, 24, qpn);
        if op == 0x502 {
            set(&mut inb, ads + 0x128, 8, 1); // vhca_port_num
        }
        assert_eq!(d.exec(&inb, 16)[0], 0, "QP0 transition {op:#x}");
    }

    // One receive: GRH area and the MAD.
    let rbuf = d.alloc(4096, 4096);
    let mut r = [0u8; 16];
    r[0..4].copy_from_slice(&(40u32 + 256).to_be_bytes());
    r[4..8].copy_from_slice(&o.key.to_be_bytes());
    r[8..16].copy_from_slice(&rbuf.to_be_bytes());
    d.mem.write(qp_buf, &r).unwrap();
    d.mem.write(qp_db, &1u32.to_be_bytes()).unwrap();

    // The SMP: directed route, NodeInfo Get, hop pointer 1 of hop count 1 (the MAD layer has
    // stepped it), initial path [_, 1], both DR LIDs permissive.
    let sbuf = d.alloc(4096, 4096);
    let mut m = [0u8; 256];
    m[0] = 1;
    m[1] = 0x81;
    m[2] = 1;
    m[3] = 1;
    m[6] = 1;
    m[7] = 1;
    m[8..16].copy_from_slice(&0x5157u64.to_be_bytes());
    m[16..18].copy_from_slice(&0x11u16.to_be_bytes());
    m[32..36].copy_from_slice(&[0xff; 4]);
    m[128 + 1] = 1;
    d.mem.write(sbuf, &m).unwrap();
    // A UD send: ctrl, datagram segment (Q_Key, extended AV with QPN 0, DLID 0xffff), data.
    let mut w = [0u8; 128];
    w[0..4].copy_from_slice(&0x0au32.to_be_bytes()); // MLX5_OPCODE_SEND, index 0
    w[4..8].copy_from_slice(&((qpn << 8) | 5).to_be_bytes());
    w[11] = 0x08;
    w[24..28].copy_from_slice(&0x8000_0000u32.to_be_bytes());
    w[30..32].copy_from_slice(&0xffffu16.to_be_bytes());
    w[64..68].copy_from_slice(&256u32.to_be_bytes());
    w[68..72].copy_from_slice(&o.key.to_be_bytes());
    w[72..80].copy_from_slice(&sbuf.to_be_bytes());
    let rq_bytes = (1u64 << LOG_RQ) << RQ_STRIDE_LOG;
    d.mem.write(qp_buf + rq_bytes, &w).unwrap();
    d.mem.write(qp_db + 4, &2u32.to_be_bytes()).unwrap();
    let db = u64::from_be_bytes(w[0..8].try_into().unwrap());
    d.dev.bar0_write(&d.mem, uar + 0x800, &db.to_be_bytes());

    // Two CQEs: the send's (requester) and the response's receive.
    let cqes: Vec<[u8; 64]> = (0..2).filter_map(|i| cqe(&d, &o, i)).collect();
    assert_eq!(cqes.len(), 2, "the send's and the receive's CQE");
    let recv = cqes
        .iter()
        .find(|c| c[63] >> 4 == 2)
        .expect("a receive CQE (MLX5_CQE_RESP_SEND)");
    assert_eq!(u32::from_be_bytes(recv[44..48].try_into().unwrap()), 296);
    assert_eq!(
        u32::from_be_bytes(recv[56..60].try_into().unwrap()) & 0xff_ffff,
        qpn
    );
    assert_eq!(
        u32::from_be_bytes(recv[48..52].try_into().unwrap()) & 0xff_ffff,
        0
    );
    let mut resp = [0u8; 256];
    d.mem.read(rbuf + 40, &mut resp).unwrap();
    // GetResp, the D bit, TID kept, NodeInfo of a switch.
    assert_eq!((resp[3], resp[4] & 0x80), (0x81, 0x80));
    assert_eq!(&resp[8..16], &0x5157u64.to_be_bytes());
    assert_eq!(resp[64 + 2], 2, "NodeType: switch");
    d.dev.take_interrupts();

    let mut inb = hdr(16, 0x501, 0);
    set(&mut inb, 0x48, 24, qpn);
    d.exec(&inb, 16);
    teardown_objs(&mut d, &o);
    teardown(&mut d, &eqs);
}
