// SPDX-License-Identifier: GPL-2.0

//! Host tests of DEVX umems (`umem.rs`): CREATE/DESTROY_UMEM, CQs and QPs whose buffers and
//! doorbell records are in umems (translated through the umem's MTT), and the uid checks.

use std::vec::Vec;

use super::profile::{LinkLayer, CONNECTX7};
use super::syndrome as syn;
use super::tests::*;
use super::*;
use crate::prm::cmd::*;
use crate::prm::consts::*;
use crate::prm::ctx::{cqc, qpc, umem as umemc};

/// A CREATE_UMEM inbox: `pages` MTT entries of 4 KiB from `bus`, `page_offset` into the first.
fn umem_in(uid: u16, bus: u64, pages: u64, page_offset: u32) -> Vec<u8> {
    let n = usize::try_from(pages).unwrap();
    let mut b = inbox(op::CREATE_UMEM, uid, 0, create_umem_in::SIZE_BYTES + 8 * n);
    let u = |f| create_umem_in::umem.inner(f);
    u(umemc::log_page_size).set(&mut b, 0).unwrap();
    u(umemc::page_offset).set(&mut b, page_offset).unwrap();
    u(umemc::num_of_mtt).set64(&mut b, pages).unwrap();
    for i in 0..n {
        let o = create_umem_in::SIZE_BYTES + 8 * i;
        // rd_en | wr_en in the low bits, as mlx5_ib_populate_pas() writes them.
        let e = (bus + 4096 * i as u64) | 3;
        b[o..o + 8].copy_from_slice(&e.to_be_bytes());
    }
    b
}

fn create_umem(f: &mut Fw, uid: u16, bus: u64, pages: u64, off: u32) -> u32 {
    let out = ok(
        f,
        &umem_in(uid, bus, pages, off),
        create_umem_out::SIZE_BYTES,
    );
    create_umem_out::umem_id.get(&out).unwrap()
}

fn destroy_umem(uid: u16, id: u32) -> Vec<u8> {
    destroy_in(op::DESTROY_UMEM, uid, destroy_umem_in::umem_id, id)
}

/// A CQ of 2^6 64-byte CQEs in umem `buf` at `off`, its doorbell record in umem `dbr` at 64.
fn umem_cq_in(uid: u16, uar: u32, buf: u32, off: u64, dbr: u32) -> Vec<u8> {
    let mut b = cq_in(uid, uar, 6);
    create_cq_in::cq_umem_valid.set(&mut b, 1).unwrap();
    umem_refs::CQ_UMEM_ID.set(&mut b, buf).unwrap();
    umem_refs::CQ_UMEM_OFFSET.set64(&mut b, off).unwrap();
    let c = create_cq_in::cq_context;
    c.inner(cqc::dbr_umem_valid).set(&mut b, 1).unwrap();
    c.inner(umem_refs::CQC_DBR_UMEM_ID)
        .set(&mut b, dbr)
        .unwrap();
    c.inner(cqc::dbr_addr).set64(&mut b, 64).unwrap();
    b
}

#[test]
fn umem_create_checks_and_destroy() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let u1 = create_uctx(&mut f, 0);
    let u2 = create_uctx(&mut f, 0);
    // Umems belong to user contexts.
    assert_eq!(
        err(&mut f, &umem_in(0, 0xd0_0000_0000, 1, 0), 16),
        (Status::BAD_PARAM_ERR, syn::UMEM_NO_UID)
    );
    // No MTT, an offset outside the first page, an inbox without the announced entries.
    assert_eq!(
        err(&mut f, &umem_in(u1, 0xd0_0000_0000, 0, 0), 16),
        (Status::BAD_PARAM_ERR, syn::UMEM_BAD_MTT)
    );
    assert_eq!(
        err(&mut f, &umem_in(u1, 0xd0_0000_0000, 1, 4096), 16),
        (Status::BAD_PARAM_ERR, syn::UMEM_BAD_MTT)
    );
    let mut short = umem_in(u1, 0xd0_0000_0000, 4, 0);
    short.truncate(create_umem_in::SIZE_BYTES + 8);
    assert_eq!(
        err(&mut f, &short, 16),
        (Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT)
    );
    let id = create_umem(&mut f, u1, 0xd0_0000_0000, 2, 0x100);
    assert_eq!(f.counts().umem, 1);
    // Another uid cannot destroy it; its UCTX cannot go while it exists.
    assert_eq!(
        err(&mut f, &destroy_umem(u2, id), 16),
        (Status::BAD_RES_ERR, syn::UMEM_UNKNOWN)
    );
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DESTROY_UCTX, 0, destroy_uctx_in::uid, u32::from(u1)),
            16
        ),
        (Status::RES_BUSY, syn::UCTX_BUSY)
    );
    ok(&mut f, &destroy_umem(u1, id), 16);
    // Stale.
    assert_eq!(
        err(&mut f, &destroy_umem(u1, id), 16),
        (Status::BAD_RES_ERR, syn::UMEM_UNKNOWN)
    );
    for u in [u1, u2] {
        ok(
            &mut f,
            &destroy_in(op::DESTROY_UCTX, 0, destroy_uctx_in::uid, u32::from(u)),
            16,
        );
    }
    assert!(f.counts().is_zero());
}

#[test]
fn cq_in_umems_is_translated_through_the_mtt() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let u1 = create_uctx(&mut f, 0);
    let u2 = create_uctx(&mut f, 0);
    let uar = alloc_uar(&mut f, 0);
    // Two pages, not contiguous on the bus: the buffer (4 KiB of CQEs at offset 0x800 of a
    // umem that starts 0x100 into its first page) crosses from one to the other.
    let mut inb = umem_in(u1, 0xd0_0000_0000, 2, 0x100);
    let second = 0xd0_0010_0000u64 | 3;
    let o = create_umem_in::SIZE_BYTES + 8;
    inb[o..o + 8].copy_from_slice(&second.to_be_bytes());
    let out = ok(&mut f, &inb, create_umem_out::SIZE_BYTES);
    let buf = create_umem_out::umem_id.get(&out).unwrap();
    let dbr = create_umem(&mut f, u1, 0xd0_0020_0000, 1, 0);
    // Another context's umem: the firmware's uid check.
    assert_eq!(
        err(&mut f, &umem_cq_in(u2, uar, buf, 0x800, dbr), 16),
        (Status::BAD_RES_ERR, syn::UMEM_UNKNOWN)
    );
    // Past the umem's end (2 pages - 0x100 = 0x1f00 bytes; 4 KiB from 0x800 does not fit).
    assert_eq!(
        err(&mut f, &umem_cq_in(u1, uar, buf, 0x1000, dbr), 16),
        (Status::BAD_PARAM_ERR, syn::UMEM_RANGE)
    );
    let out = ok(
        &mut f,
        &umem_cq_in(u1, uar, buf, 0x800, dbr),
        create_cq_out::SIZE_BYTES,
    );
    let cqn = create_cq_out::cqn.get(&out).unwrap();
    let q = f.cqs.get(cqn).unwrap().q;
    // CQE 0 is at umem byte 0x800, i.e. 0x900 into the first page; CQE 0x3c (0xf00 bytes
    // later) is the first of the second page.
    assert_eq!(q.buf.xlat.at(0), Some((0xd0_0000_0900, 0x700)));
    assert_eq!(q.buf.xlat.at(0x700), Some((0xd0_0010_0000, 0x900)));
    assert_eq!(q.buf.dbr, 0xd0_0020_0040);
    // In use: the umem cannot go; the UCTX cannot go.
    assert_eq!(
        err(&mut f, &destroy_umem(u1, buf), 16),
        (Status::RES_BUSY, syn::UMEM_BUSY)
    );
    assert_eq!(
        err(&mut f, &destroy_umem(u1, dbr), 16),
        (Status::RES_BUSY, syn::UMEM_BUSY)
    );
    // The CQ's uid: another context can neither query nor destroy it.
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::QUERY_CQ, u2, query_cq_in::cqn, cqn),
            query_cq_out::SIZE_BYTES
        ),
        (Status::BAD_RES_ERR, syn::UID_MISMATCH)
    );
    assert_eq!(
        err(
            &mut f,
            &destroy_in(op::DESTROY_CQ, u2, destroy_cq_in::cqn, cqn),
            16
        ),
        (Status::BAD_RES_ERR, syn::UID_MISMATCH)
    );
    // A resize into a umem is not modeled.
    let mut m = inbox(op::MODIFY_CQ, u1, CQ_OPMOD_RESIZE, modify_cq_in::SIZE_BYTES);
    modify_cq_in::cqn.set(&mut m, cqn).unwrap();
    modify_cq_in::cq_umem_valid.set(&mut m, 1).unwrap();
    assert_eq!(
        err(&mut f, &m, 16),
        (Status::BAD_PARAM_ERR, syn::UMEM_NOT_MODELED)
    );
    ok(
        &mut f,
        &destroy_in(op::DESTROY_CQ, u1, destroy_cq_in::cqn, cqn),
        16,
    );
    ok(&mut f, &destroy_umem(u1, buf), 16);
    ok(&mut f, &destroy_umem(u1, dbr), 16);
    for u in [u1, u2] {
        ok(
            &mut f,
            &destroy_in(op::DESTROY_UCTX, 0, destroy_uctx_in::uid, u32::from(u)),
            16,
        );
    }
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, uar),
        16,
    );
    assert!(f.counts().is_zero());
}

#[test]
fn qp_in_umems_and_foreign_objects() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let u1 = create_uctx(&mut f, 0);
    let u2 = create_uctx(&mut f, 0);
    let uar = alloc_uar(&mut f, 0);
    let pd = alloc_pd(&mut f, u1);
    let cq = create_cq(&mut f, u1, uar);
    let wq = create_umem(&mut f, u1, 0xd0_0000_0000, 32, 0);
    let dbr = create_umem(&mut f, u1, 0xd0_0100_0000, 1, 0);
    let q = |b: &mut Vec<u8>, wq: u32, off: u64| {
        create_qp_in::wq_umem_valid.set(b, 1).unwrap();
        create_qp_in::wq_umem_id.set(b, wq).unwrap();
        create_qp_in::wq_umem_offset.set64(b, off).unwrap();
        let c = |m| create_qp_in::qpc.inner(m);
        c(qpc::dbr_umem_valid).set(b, 1).unwrap();
        c(umem_refs::QPC_DBR_UMEM_ID).set(b, dbr).unwrap();
        c(qpc::dbr_addr).set64(b, 8).unwrap();
    };
    // Another uid naming the first context's PD, CQ and umems.
    let mut b = qp_in(u2, QPC_ST_RC, pd, uar, cq, cq);
    q(&mut b, wq, 0);
    assert_eq!(
        err(&mut f, &b, 16),
        (Status::BAD_RES_ERR, syn::UID_MISMATCH)
    );
    // 256 RQ WQEs of 16 bytes (qp_in: log_rq_size 8, stride 16) + 256 WQEBBs: 20 KiB do not
    // fit the 32 pages from 0x1c000 on.
    let mut b = qp_in(u1, QPC_ST_RC, pd, uar, cq, cq);
    q(&mut b, wq, 0x1c000);
    assert_eq!(
        err(&mut f, &b, 16),
        (Status::BAD_PARAM_ERR, syn::UMEM_RANGE)
    );
    let mut b = qp_in(u1, QPC_ST_RC, pd, uar, cq, cq);
    q(&mut b, wq, 0x1000);
    let out = ok(&mut f, &b, create_qp_out::SIZE_BYTES);
    let qpn = create_qp_out::qpn.get(&out).unwrap();
    let st = f.qps.get(qpn).unwrap().q;
    assert_eq!(st.buf.xlat.at(0), Some((0xd0_0000_1000, 0x5000)));
    assert_eq!(st.buf.xlat.at(0x5000), None);
    assert_eq!(st.buf.dbr, 0xd0_0100_0008);
    assert_eq!(
        err(&mut f, &destroy_umem(u1, wq), 16),
        (Status::RES_BUSY, syn::UMEM_BUSY)
    );
    // A transition from another uid on this QP: the bad-resource syndrome.
    assert_eq!(
        err(&mut f, &modify_in(op::RST2INIT_QP, u2, qpn), 16),
        (Status::BAD_RES_ERR, syn::UID_MISMATCH)
    );
    ok(&mut f, &modify_in(op::RST2INIT_QP, u1, qpn), 16);
    ok(
        &mut f,
        &destroy_in(op::DESTROY_QP, u1, destroy_qp_in::qpn, qpn),
        16,
    );
    ok(&mut f, &destroy_umem(u1, wq), 16);
    ok(&mut f, &destroy_umem(u1, dbr), 16);
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
    for u in [u1, u2] {
        ok(
            &mut f,
            &destroy_in(op::DESTROY_UCTX, 0, destroy_uctx_in::uid, u32::from(u)),
            16,
        );
    }
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, uar),
        16,
    );
    assert!(f.counts().is_zero());
}

#[test]
fn cyclic_rmp_in_umems_as_ucx_creates_it() {
    use crate::prm::ctx::{rmpc, wq as wqc};
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let u1 = create_uctx(&mut f, 0);
    let u2 = create_uctx(&mut f, 0);
    let pd = alloc_pd(&mut f, u1);
    let buf = create_umem(&mut f, u1, 0xd0_0000_0000, 4, 0);
    let dbr = create_umem(&mut f, u1, 0xd0_0100_0000, 1, 0);
    // uct_rc_mlx5_devx_init_rx(): 256 WQEs of 64 bytes (16 KiB), cyclic; the doorbell record
    // 8 bytes into its umem; the kernel sets the valid bits.
    let rmp_in = |uid: u16, buf: u32, off: u64| {
        let mut b = inbox(op::CREATE_RMP, uid, 0, create_rmp_in::SIZE_BYTES);
        let w = |m| create_rmp_in::ctx.inner(rmpc::wq.inner(m));
        create_rmp_in::ctx
            .inner(rmpc::state)
            .set(&mut b, RMPC_STATE_RDY)
            .unwrap();
        w(wqc::wq_type).set(&mut b, WQ_TYPE_CYCLIC).unwrap();
        w(wqc::log_wq_sz).set(&mut b, 8).unwrap();
        w(wqc::log_wq_stride).set(&mut b, 6).unwrap();
        w(wqc::pd).set(&mut b, pd).unwrap();
        w(wqc::dbr_umem_id).set(&mut b, dbr).unwrap();
        w(wqc::dbr_addr).set64(&mut b, 8).unwrap();
        w(wqc::wq_umem_id).set(&mut b, buf).unwrap();
        w(wqc::wq_umem_offset).set64(&mut b, off).unwrap();
        w(wqc::dbr_umem_valid).set(&mut b, 1).unwrap();
        w(wqc::wq_umem_valid).set(&mut b, 1).unwrap();
        b
    };
    // Another uid naming the first context's umems and PD; a range past the umem.
    assert_eq!(
        err(&mut f, &rmp_in(u2, buf, 0), 16),
        (Status::BAD_RES_ERR, syn::UID_MISMATCH)
    );
    assert_eq!(
        err(&mut f, &rmp_in(u1, buf, 0x1000), 16),
        (Status::BAD_PARAM_ERR, syn::UMEM_RANGE)
    );
    let out = ok(&mut f, &rmp_in(u1, buf, 0), create_rmp_out::SIZE_BYTES);
    let rmpn = create_rmp_out::rmpn.get(&out).unwrap();
    let q = f.rmps.get(rmpn).unwrap().q;
    assert!(q.cyclic);
    assert_eq!(q.buf.xlat.at(0), Some((0xd0_0000_0000, 0x4000)));
    assert_eq!(q.buf.dbr, 0xd0_0100_0008);
    for id in [buf, dbr] {
        assert_eq!(
            err(&mut f, &destroy_umem(u1, id), 16),
            (Status::RES_BUSY, syn::UMEM_BUSY)
        );
    }
    ok(
        &mut f,
        &destroy_in(op::DESTROY_RMP, u1, destroy_rmp_in::rmpn, rmpn),
        16,
    );
    ok(&mut f, &destroy_umem(u1, buf), 16);
    ok(&mut f, &destroy_umem(u1, dbr), 16);
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_PD, u1, dealloc_pd_in::pd, pd),
        16,
    );
    for u in [u1, u2] {
        ok(
            &mut f,
            &destroy_in(op::DESTROY_UCTX, 0, destroy_uctx_in::uid, u32::from(u)),
            16,
        );
    }
    assert!(f.counts().is_zero());
}
