// SPDX-License-Identifier: GPL-2.0

//! Host tests of the dynamically connected transport (`dct.rs`): DCTs made with CREATE_DCT as
//! upstream `mlx5_ib_modify_dct()` fills it, a DCI made and moved like an RC QP, and DC WQEs
//! laid out as libmlx5's `mlx5_send_wr_set_dc_addr()` lays them out (the datagram segment's
//! AV with the DC key and `dqp_dct | MLX5_EXTENDED_UD_AV`) and as UCX's `dc_mlx5` does with
//! the 16-byte base AV.

use super::super::tests::err;
use super::*;

/// `MLX5_DCTC_STATE_DRAINED`.
const DRAINED: u32 = 2;

impl Host {
    /// CREATE_DCT on `srq` and `cq` with DC access key `key`, all remote access rights, port
    /// 1, MTU 1024 (what `mlx5_ib_modify_dct()` sends at INIT->RTR).
    fn dct(&mut self, srq: &SrqH, cq: &CqH, key: u64, uidx: u32) -> u32 {
        let b = self.dct_cmd(srq.rmpn, cq.cqn, key, uidx);
        let out = ok(&mut self.fw, &b, create_dct_out::SIZE_BYTES);
        create_dct_out::dctn.get(&out).unwrap()
    }

    fn dct_cmd(&self, rmpn: u32, cqn: u32, key: u64, uidx: u32) -> Vec<u8> {
        let mut b = inbox(op::CREATE_DCT, 0, 0, create_dct_in::SIZE_BYTES);
        let d = |f| create_dct_in::dct_context_entry.inner(f);
        d(dctc::pd).set(&mut b, self.pd).unwrap();
        d(dctc::srqn_xrqn).set(&mut b, rmpn).unwrap();
        d(dctc::cqn).set(&mut b, cqn).unwrap();
        d(dctc::dc_access_key).set64(&mut b, key).unwrap();
        d(dctc::user_index).set(&mut b, uidx).unwrap();
        for f in [dctc::rre, dctc::rwe, dctc::rae] {
            d(f).set(&mut b, 1).unwrap();
        }
        d(dctc::atomic_mode).set(&mut b, 1).unwrap();
        d(dctc::port).set(&mut b, 1).unwrap();
        d(dctc::mtu).set(&mut b, 3).unwrap();
        d(dctc::min_rnr_nak).set(&mut b, 12).unwrap();
        b
    }

    /// QUERY_DCT: (state, DC key, key violations).
    fn query_dct(&mut self, dctn: u32) -> (u32, u64, u32) {
        let mut b = inbox(op::QUERY_DCT, 0, 0, query_dct_in::SIZE_BYTES);
        query_dct_in::dctn.set(&mut b, dctn).unwrap();
        let out = ok(&mut self.fw, &b, query_dct_out::SIZE_BYTES);
        let d = |f| query_dct_out::dct_context_entry.inner(f);
        (
            d(dctc::state).get(&out).unwrap(),
            d(dctc::dc_access_key).get64(&out).unwrap(),
            d(dctc::dc_access_key_violation_count).get(&out).unwrap(),
        )
    }

    /// A DCI (`qpc.st` DCI) in RTS: RST2INIT, INIT2RTR, RTR2RTS as for RC; the destination
    /// comes with each WQE. `retry` and `ack_timeout` as RTR2RTS sets them.
    fn dci(&mut self, cq: &CqH, retry: u32, ack_timeout: u32) -> QpH {
        let qp = self.qp(QPC_ST_DCI, cq, cq, (6, 0, 0));
        let mut p = Path::to(0, 0);
        p.retry = retry;
        p.ack_timeout = ack_timeout;
        self.connect(&qp, &p);
        qp
    }
}

/// One DC work request's destination.
#[derive(Clone, Copy)]
struct DcAddr {
    dctn: u32,
    key: u64,
    lid: u16,
    /// The 48-byte AV (`MLX5_EXTENDED_UD_AV`), as libmlx5 writes it; else UCX's 16-byte one.
    full: bool,
}

/// A DCI's WQE: control segment, datagram segment (`mlx5_av`: `key.dc_key`, `dqp_dct`,
/// `rlid`), then what an RC WQE has (remote address, atomic, data segments).
fn dc_wqe(qp: &QpH, wr: &Wr, to: DcAddr) -> Vec<u8> {
    let mut w = vec![0u8; 16];
    let mut av = vec![0u8; if to.full { 48 } else { 16 }];
    av[0..8].copy_from_slice(&to.key.to_be_bytes());
    let ext = if to.full { 0x8000_0000 } else { 0 };
    av[8..12].copy_from_slice(&(to.dctn | ext).to_be_bytes());
    av[14..16].copy_from_slice(&to.lid.to_be_bytes());
    w.extend_from_slice(&av);
    if let Some((raddr, rkey)) = wr.remote {
        w.extend_from_slice(&raddr.to_be_bytes());
        w.extend_from_slice(&rkey.to_be_bytes());
        w.extend_from_slice(&[0; 4]);
    }
    if let Some((swap_add, compare)) = wr.atomic {
        w.extend_from_slice(&swap_add.to_be_bytes());
        w.extend_from_slice(&compare.to_be_bytes());
    }
    for (lkey, addr, len) in &wr.sges {
        let mut s = [0u8; 16];
        data_seg(&mut s, *lkey, *addr, *len);
        w.extend_from_slice(&s);
    }
    let ds = (w.len() / 16) as u32;
    let idx = u32::from(qp.cur_post);
    w[0..4].copy_from_slice(&((idx << 8) | u32::from(wr.opcode)).to_be_bytes());
    w[4..8].copy_from_slice(&((qp.qpn << 8) | ds).to_be_bytes());
    w[11] = ctrl::CQ_UPDATE;
    w
}

#[test]
fn one_dci_reaches_several_dcts_on_two_functions() {
    let mut h1 = Host::new(LinkLayer::Ib, 1);
    let mut h2 = Host::new(LinkLayer::Ib, 2);
    let mut scq = h1.cq(5, false);
    let mut rcq1 = h1.cq(5, false);
    let mut rcq2 = h2.cq(5, false);
    let mut srq1 = h1.srq(4, 6, 0);
    let mut srq2 = h2.srq(4, 6, 0);
    let mut dci = h1.dci(&scq, 7, 14);
    // Two DCTs on the other function, one on the DCI's own.
    let t1 = h2.dct(&srq2, &rcq2, 0x1111_2222_3333_4444, 0x71);
    let t2 = h2.dct(&srq2, &rcq2, 0x5555, 0x72);
    let t3 = h1.dct(&srq1, &rcq1, 0x9999, 0x73);
    let src = h1.mr(16384, ALL);
    let dst1 = h2.mr(16384, ALL);
    let dst3 = h1.mr(4096, ALL);
    h1.mem.put(src.bus, &pattern(16384, 5));
    h2.mem.put(dst1.bus + 8192, &pattern(4096, 77));
    for _ in 0..2 {
        h2.post_srq(&mut srq2, &[dst1.sge(0, 4096)]).unwrap();
    }
    // The second SRQ WQE lands at another offset: post it separately.
    h1.post_srq(&mut srq1, &[dst3.sge(0, 4096)]).unwrap();
    let a = |dctn, key, lid, full| DcAddr {
        dctn,
        key,
        lid,
        full,
    };
    let (l1, l2) = (h1.lid(), h2.lid());
    // SEND to t1 (full AV), SEND to t2 (base AV), SEND to t3 (own function, loopback).
    let w = dc_wqe(
        &dci,
        &Wr::new(wqe_op::SEND).sge(src.sge(0, 3000)),
        a(t1, 0x1111_2222_3333_4444, l2, true),
    );
    h1.post_bytes(&mut dci, &w);
    let w = dc_wqe(
        &dci,
        &Wr::new(wqe_op::SEND).sge(src.sge(3000, 1000)),
        a(t2, 0x5555, l2, false),
    );
    h1.post_bytes(&mut dci, &w);
    let w = dc_wqe(
        &dci,
        &Wr::new(wqe_op::SEND).sge(src.sge(4000, 2500)),
        a(t3, 0x9999, l1, true),
    );
    h1.post_bytes(&mut dci, &w);
    // RDMA WRITE through t2 (its DCT's access rights, the responder's MR).
    let w = dc_wqe(
        &dci,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(src.sge(6500, 4000))
            .remote(&dst1, 12288),
        a(t2, 0x5555, l2, true),
    );
    h1.post_bytes(&mut dci, &w);
    // RDMA READ through t1 into the DCI's side.
    let w = dc_wqe(
        &dci,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(src.sge(12000, 4096))
            .remote(&dst1, 8192),
        a(t1, 0x1111_2222_3333_4444, l2, false),
    );
    h1.post_bytes(&mut dci, &w);
    // Fetch-and-add on t1's function.
    h2.mem.put(dst1.bus + 4096, &40u64.to_le_bytes());
    let mut fa = Wr::new(wqe_op::ATOMIC_FA)
        .sge(src.sge(16376, 8))
        .remote(&dst1, 4096);
    fa.atomic = Some((2, 0));
    let w = dc_wqe(&dci, &fa, a(t1, 0x1111_2222_3333_4444, l2, true));
    h1.post_bytes(&mut dci, &w);
    run(&mut [&mut h1, &mut h2], 0);
    let s = h1.poll_all(&mut scq);
    assert_eq!(
        s.iter()
            .map(|c| (c.opcode, c.syndrome, c.qpn))
            .collect::<Vec<_>>(),
        vec![(cqe_op::REQ, 0, dci.qpn); 6]
    );
    let r2 = h2.poll_all(&mut rcq2);
    assert_eq!(
        r2.iter()
            .map(|c| (
                c.opcode,
                c.byte_cnt,
                c.qpn,
                c.uidx,
                c.flags_rqpn & 0xff_ffff
            ))
            .collect::<Vec<_>>(),
        vec![
            (cqe_op::RESP_SEND, 3000, t1, 0x71, dci.qpn),
            (cqe_op::RESP_SEND, 1000, t2, 0x72, dci.qpn),
        ]
    );
    let r1 = h1.poll_all(&mut rcq1);
    assert_eq!(
        r1.iter()
            .map(|c| (c.opcode, c.byte_cnt, c.qpn, c.uidx))
            .collect::<Vec<_>>(),
        vec![(cqe_op::RESP_SEND, 2500, t3, 0x73)]
    );
    // Every byte: the two SENDs share the SRQ's buffer (the second overwrote the first's
    // first 1000 bytes), the loopback SEND, the WRITE, the READ and the atomic.
    let mut want = pattern(16384, 5)[3000..4000].to_vec();
    want.extend_from_slice(&pattern(16384, 5)[1000..3000]);
    assert_eq!(h2.mem.get(dst1.bus, 3000), want);
    assert_eq!(h1.mem.get(dst3.bus, 2500), pattern(16384, 5)[4000..6500]);
    assert_eq!(
        h2.mem.get(dst1.bus + 12288, 4000),
        pattern(16384, 5)[6500..10500]
    );
    assert_eq!(h1.mem.get(src.bus + 12000, 4096), pattern(4096, 77));
    assert_eq!(h1.mem.get(src.bus + 16376, 8), 40u64.to_le_bytes());
    assert_eq!(h2.mem.get(dst1.bus + 4096, 8), 42u64.to_le_bytes());
    assert_eq!((h1.mem.faults(), h2.mem.faults()), (0, 0));
    assert_eq!(h2.query_dct(t1), (0, 0x1111_2222_3333_4444, 0));
}

#[test]
fn a_bad_dc_key_is_dropped_and_the_dci_exceeds_its_retries() {
    let mut h1 = Host::new(LinkLayer::Ib, 1);
    let mut h2 = Host::new(LinkLayer::Ib, 2);
    let mut scq = h1.cq(5, false);
    let mut rcq = h2.cq(5, false);
    let mut srq = h2.srq(4, 6, 0);
    // ack_timeout 10 (4.19 ms), 2 retries.
    let mut dci = h1.dci(&scq, 2, 10);
    let t = h2.dct(&srq, &rcq, 0xabcd, 1);
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(4096, ALL);
    h2.post_srq(&mut srq, &[dst.sge(0, 4096)]).unwrap();
    let to = DcAddr {
        dctn: t,
        key: 0xabce,
        lid: h2.lid(),
        full: true,
    };
    let w = dc_wqe(&dci, &Wr::new(wqe_op::SEND).sge(src.sge(0, 64)), to);
    h1.post_bytes(&mut dci, &w);
    let mut now = 0;
    let mut timeouts = 0;
    while let Some(d) = run(&mut [&mut h1, &mut h2], now).next_deadline_ns {
        timeouts += 1;
        now = d;
    }
    assert_eq!(timeouts, 3, "the original and two retries timed out");
    let s = h1.poll_all(&mut scq);
    assert_eq!(
        (s.len(), s[0].opcode, s[0].syndrome),
        (1, cqe_op::REQ_ERR, csyn::RETRY_EXC)
    );
    assert_eq!(h1.state(&dci), QPC_STATE_ERR);
    // Nothing was delivered; every attempt counted as a key violation.
    assert!(h2.poll_all(&mut rcq).is_empty());
    assert_eq!(h2.mem.get(dst.bus, 64), vec![0; 64]);
    assert_eq!(h2.query_dct(t), (0, 0xabcd, 3));
}

/// Two RoCE functions, each with a v1 (index 0) and a v2 (index 1) entry of its link-local
/// GID; a DCT on the second with `my_addr_index` `dct_index`, and a SEND to it from a DCI on
/// the first whose AV names source GID index `av_index`: what the DCI completes with, and
/// how many receives came.
fn dc_by_versions(av_index: u8, dct_index: u32) -> (u8, u8, usize) {
    let mut h1 = Host::new(LinkLayer::Ethernet, 7);
    let mut h2 = Host::new(LinkLayer::Ethernet, 8);
    for (h, n) in [(&mut h1, 1), (&mut h2, 2)] {
        h.set_gid(0, gid_v6(n), true);
        h.set_gid(1, gid_v6(n), false);
    }
    let mut scq = h1.cq(5, false);
    let mut rcq = h2.cq(5, false);
    let mut srq = h2.srq(4, 6, 0);
    let mut dci = h1.dci(&scq, 2, 8);
    let mut b = h2.dct_cmd(srq.rmpn, rcq.cqn, 0x77, 1);
    create_dct_in::dct_context_entry
        .inner(dctc::my_addr_index)
        .set(&mut b, dct_index)
        .unwrap();
    let out = ok(&mut h2.fw, &b, create_dct_out::SIZE_BYTES);
    let t = create_dct_out::dctn.get(&out).unwrap();
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(4096, ALL);
    h2.post_srq(&mut srq, &[dst.sge(0, 4096)]).unwrap();
    let to = DcAddr {
        dctn: t,
        key: 0x77,
        lid: 0,
        full: true,
    };
    let mut w = dc_wqe(&dci, &Wr::new(wqe_op::SEND).sge(src.sge(0, 64)), to);
    // The AV's GRH part, as libmlx5 fills it for a RoCE AH: `grh_gid_fl` (the source GID
    // index in bits 27:20) and the destination GID.
    let gfl = (1u32 << 30) | (u32::from(av_index) << 20);
    w[16 + 28..16 + 32].copy_from_slice(&gfl.to_be_bytes());
    w[16 + 32..16 + 48].copy_from_slice(&gid_v6(2));
    h1.post_bytes(&mut dci, &w);
    let mut now = 0;
    while let Some(d) = run(&mut [&mut h1, &mut h2], now).next_deadline_ns {
        now = d;
    }
    let s = h1.poll_all(&mut scq);
    let r = h2.poll_all(&mut rcq);
    (s[0].opcode, s[0].syndrome, r.len())
}

#[test]
fn a_dct_takes_only_the_roce_version_of_its_address_index() {
    assert_eq!(dc_by_versions(0, 0), (cqe_op::REQ, 0, 1));
    assert_eq!(dc_by_versions(1, 1), (cqe_op::REQ, 0, 1));
    // The DCI's frames are of the other version: the DCT never sees them, no ACK comes back.
    assert_eq!(dc_by_versions(0, 1), (cqe_op::REQ_ERR, csyn::RETRY_EXC, 0));
    assert_eq!(dc_by_versions(1, 0), (cqe_op::REQ_ERR, csyn::RETRY_EXC, 0));
}

#[test]
fn dct_commands_drain_query_destroy_and_keep_to_their_objects() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut scq = h.cq(5, false);
    let mut rcq = h.cq(5, false);
    let mut srq = h.srq(4, 6, 0);
    let mut dci = h.dci(&scq, 0, 10);
    let t = h.dct(&srq, &rcq, 7, 1);
    // A DCT needs an SRQ, a CQ, a port and a valid MTU.
    let b = h.dct_cmd(0x123, rcq.cqn, 7, 1);
    assert_eq!(
        err(&mut h.fw, &b, create_dct_out::SIZE_BYTES),
        (Status::BAD_RES_ERR, syn::DCT_SRQ)
    );
    let mut b = h.dct_cmd(srq.rmpn, rcq.cqn, 7, 1);
    create_dct_in::dct_context_entry
        .inner(dctc::mtu)
        .set(&mut b, 0)
        .unwrap();
    assert_eq!(
        err(&mut h.fw, &b, create_dct_out::SIZE_BYTES),
        (Status::BAD_PARAM_ERR, syn::DCT_CTX)
    );
    let mut b = h.dct_cmd(srq.rmpn, rcq.cqn, 7, 1);
    create_dct_in::dct_context_entry
        .inner(dctc::port)
        .set(&mut b, 2)
        .unwrap();
    assert_eq!(
        err(&mut h.fw, &b, create_dct_out::SIZE_BYTES).0,
        Status::BAD_PARAM_ERR
    );
    // QP commands do not see a DCT, DCT commands see no QP.
    let mut b = inbox(op::QUERY_QP, 0, 0, query_qp_in::SIZE_BYTES);
    query_qp_in::qpn.set(&mut b, t).unwrap();
    assert_eq!(
        err(&mut h.fw, &b, query_qp_out::SIZE_BYTES),
        (Status::BAD_RES_ERR, syn::QP_UNKNOWN)
    );
    let d = destroy_in(op::DESTROY_QP, 0, destroy_qp_in::qpn, t);
    assert_eq!(
        err(&mut h.fw, &d, 16),
        (Status::BAD_RES_ERR, syn::QP_UNKNOWN)
    );
    let d = destroy_in(op::DESTROY_DCT, 0, destroy_dct_in::dctn, dci.qpn);
    assert_eq!(
        err(&mut h.fw, &d, 16),
        (Status::BAD_RES_ERR, syn::DCT_UNKNOWN)
    );
    // The SRQ, the CQ and the PD are busy while the DCT lives.
    let d = destroy_in(op::DESTROY_CQ, 0, destroy_cq_in::cqn, rcq.cqn);
    assert_eq!(err(&mut h.fw, &d, 16).0, Status::RES_BUSY);
    // DRAIN_DCT: DRAINED, the event, and no more messages.
    let drain = destroy_in(op::DRAIN_DCT, 0, drain_dct_in::dctn, t);
    ok(&mut h.fw, &drain, 16);
    assert_eq!(h.query_dct(t).0, DRAINED);
    assert_eq!(
        h.events(),
        vec![Event::Qp {
            qpn: t,
            kind: QpEvent::DctDrained
        }]
    );
    assert_eq!(
        err(&mut h.fw, &drain, 16),
        (Status::BAD_RES_STATE_ERR, syn::DCT_STATE)
    );
    let src = h.mr(4096, ALL);
    let dst = h.mr(4096, ALL);
    h.post_srq(&mut srq, &[dst.sge(0, 4096)]).unwrap();
    let to = DcAddr {
        dctn: t,
        key: 7,
        lid: h.lid(),
        full: true,
    };
    let w = dc_wqe(&dci, &Wr::new(wqe_op::SEND).sge(src.sge(0, 64)), to);
    h.post_bytes(&mut dci, &w);
    let mut now = 0;
    while let Some(d) = run(&mut [&mut h], now).next_deadline_ns {
        now = d;
    }
    let s = h.poll_all(&mut scq);
    assert_eq!(s[0].syndrome, csyn::RETRY_EXC);
    assert!(h.poll_all(&mut rcq).is_empty());
    // DESTROY_DCT frees it and what it held.
    let d = destroy_in(op::DESTROY_DCT, 0, destroy_dct_in::dctn, t);
    ok(&mut h.fw, &d, 16);
    assert_eq!(
        err(&mut h.fw, &d, 16),
        (Status::BAD_RES_ERR, syn::DCT_UNKNOWN)
    );
    let mut b = inbox(op::QUERY_DCT, 0, 0, query_dct_in::SIZE_BYTES);
    query_dct_in::dctn.set(&mut b, t).unwrap();
    assert_eq!(
        err(&mut h.fw, &b, query_dct_out::SIZE_BYTES),
        (Status::BAD_RES_ERR, syn::DCT_UNKNOWN)
    );
    let _ = &mut rcq;
}

/// Random DC traffic and DCT commands: DC WQEs with right and wrong keys, DCT numbers that
/// name a DCT, a drained DCT, a destroyed one or a QP, base and full AVs, plausible and bogus
/// segments, read-only memory behind writable keys; DRAIN/QUERY/DESTROY/CREATE_DCT in between.
/// The engine must never panic, never write read-only memory, answer every posted WQE with at
/// most one CQE per WQEBB, and leave no DCT behind once everything is destroyed.
#[test]
fn fuzz_dc_wqes_and_dct_commands() {
    let mut rng = Rng(0xdc_5eed_1234_abcd);
    let (mut good, mut bad) = (0u32, 0u32);
    for round in 0..60 {
        let mut h1 = Host::new(LinkLayer::Ib, 1);
        let mut h2 = Host::new(LinkLayer::Ib, 2);
        let base = (h1.fw.counts(), h2.fw.counts());
        let mut scq = h1.cq(6, false);
        let rcq = [h1.cq(6, false), h2.cq(6, false)];
        let mut srq = [h1.srq(3, 6, 0), h2.srq(3, 6, 0)];
        let mut dci = h1.dci(&scq, rng.below(3) as u32, 1 + rng.below(3) as u32);
        let mut dcis = Vec::new();
        let mut mrs = [Vec::new(), Vec::new()];
        let mut canaries = Vec::new();
        for (i, h) in [&mut h1, &mut h2].into_iter().enumerate() {
            let acc = MrAccess {
                lw: rng.chance(80),
                rr: rng.chance(80),
                rw: rng.chance(80),
                a: rng.chance(80),
            };
            mrs[i].push(h.mr(8192, acc));
            let ro = h.mem.map(4096, false);
            let content: Vec<u8> = (0..4096).map(|_| rng.next() as u8).collect();
            h.mem.put(ro, &content);
            mrs[i].push(h.mr_at(ro, 4096, ALL));
            canaries.push((i, ro, content));
        }
        // DCTs: (function, number, key, alive).
        let mut dcts: Vec<(usize, u32, u64, bool)> = Vec::new();
        for k in 0..4 {
            let i = k % 2;
            let key = rng.next();
            let h = if i == 0 { &mut h1 } else { &mut h2 };
            let n = h.dct(&srq[i], &rcq[i], key, k as u32);
            dcts.push((i, n, key, true));
        }
        let lids = [h1.lid(), h2.lid()];
        let mut posted = 0u32;
        let mut now = 0u64;
        for _ in 0..40 {
            match rng.below(10) {
                0 => {
                    let t = rng.below(dcts.len() as u64) as usize;
                    let (i, n, _, _) = dcts[t];
                    let h = if i == 0 { &mut h1 } else { &mut h2 };
                    let op = rng.pick(&[op::DRAIN_DCT, op::QUERY_DCT]);
                    let m = if op == op::DRAIN_DCT {
                        destroy_in(op, 0, drain_dct_in::dctn, n)
                    } else {
                        destroy_in(op, 0, query_dct_in::dctn, n)
                    };
                    let _ = super::super::tests::run(&mut h.fw, &m, query_dct_out::SIZE_BYTES);
                }
                1 => {
                    let t = rng.below(dcts.len() as u64) as usize;
                    let (i, n, _, alive) = dcts[t];
                    let h = if i == 0 { &mut h1 } else { &mut h2 };
                    let d = destroy_in(op::DESTROY_DCT, 0, destroy_dct_in::dctn, n);
                    let (c, _) = super::super::tests::run(&mut h.fw, &d, 16);
                    assert_eq!(c.status == Status::OK, alive, "round {round}: destroy");
                    dcts[t].3 = false;
                }
                2 => {
                    let i = rng.below(2) as usize;
                    let h = if i == 0 { &mut h1 } else { &mut h2 };
                    let _ = h.post_srq(&mut srq[i], &[mrs[i][0].sge(rng.below(4096), 4096)]);
                }
                _ => {
                    let t = rng.below(dcts.len() as u64) as usize;
                    let (i, n, key, _) = dcts[t];
                    let any = rng.next() as u8;
                    let mut wr = Wr::new(rng.pick(&[
                        wqe_op::SEND,
                        wqe_op::SEND_IMM,
                        wqe_op::RDMA_WRITE,
                        wqe_op::RDMA_READ,
                        wqe_op::ATOMIC_FA,
                        wqe_op::ATOMIC_CS,
                        wqe_op::NOP,
                        any,
                    ]));
                    let src = rng.pick(&mrs[0]);
                    let len = if rng.chance(90) { 4096 } else { 5000 };
                    wr = wr.sge(src.sge(rng.below(4096), rng.below(len) as u32));
                    let dst = rng.pick(&mrs[i]);
                    wr = wr.remote(&dst, rng.below(8192) & !7);
                    if rng.chance(20) {
                        wr.remote = Some((rng.next(), rng.next() as u32));
                    }
                    wr.atomic = Some((rng.next(), rng.next()));
                    let to = DcAddr {
                        dctn: if rng.chance(90) { n } else { dci.qpn },
                        key: if rng.chance(85) { key } else { rng.next() },
                        lid: if rng.chance(95) {
                            lids[i]
                        } else {
                            rng.next() as u16
                        },
                        full: rng.chance(50),
                    };
                    let mut w = dc_wqe(&dci, &wr, to);
                    if rng.chance(5) {
                        w[7] = rng.next() as u8 & 0x3f;
                    }
                    // At most one CQE per WQEBB (a corrupted `ds` splits a WQE).
                    let nbb = w.len().div_ceil(64) as u32;
                    if u64::from(posted + nbb) <= 1u64 << dci.log_sq {
                        h1.post_bytes(&mut dci, &w);
                        posted += nbb;
                    }
                }
            }
            if h1.state(&dci) == QPC_STATE_ERR {
                // A new DCI takes over from one an error stopped (its flushes still come).
                dcis.push(dci.qpn);
                posted = 0;
                dci = h1.dci(&scq, rng.below(3) as u32, 1 + rng.below(3) as u32);
            }
            let r = run(&mut [&mut h1, &mut h2], now);
            now = r.next_deadline_ns.unwrap_or(now);
            for h in [&mut h1, &mut h2] {
                while h.fw.next_event().is_some() {}
            }
        }
        while let Some(d) = run(&mut [&mut h1, &mut h2], now).next_deadline_ns {
            now = d;
        }
        let cqes = h1.poll_all(&mut scq);
        let per_dci = 1usize << dci.log_sq;
        assert!(
            cqes.len() <= per_dci * (dcis.len() + 1),
            "round {round}: {} CQEs",
            cqes.len()
        );
        good += cqes.iter().filter(|c| c.syndrome == 0).count() as u32;
        bad += cqes.iter().filter(|c| c.syndrome != 0).count() as u32;
        for (i, ro, content) in &canaries {
            let h = if *i == 0 { &h1 } else { &h2 };
            assert_eq!(
                &h.mem.get(*ro, 4096),
                content,
                "round {round}: read-only memory"
            );
        }
        for (i, n, _, alive) in dcts {
            if alive {
                let h = if i == 0 { &mut h1 } else { &mut h2 };
                ok(
                    &mut h.fw,
                    &destroy_in(op::DESTROY_DCT, 0, destroy_dct_in::dctn, n),
                    16,
                );
            }
        }
        dcis.push(dci.qpn);
        for q in dcis {
            ok(
                &mut h1.fw,
                &destroy_in(op::DESTROY_QP, 0, destroy_qp_in::qpn, q),
                16,
            );
        }
        for (i, h) in [&mut h1, &mut h2].into_iter().enumerate() {
            let d = destroy_in(op::DESTROY_RMP, 0, destroy_rmp_in::rmpn, srq[i].rmpn);
            ok(&mut h.fw, &d, 16);
        }
        assert_eq!(
            h1.fw.counts().qp,
            base.0.qp,
            "round {round}: QPs and DCTs gone"
        );
        assert_eq!(
            h2.fw.counts().qp,
            base.1.qp,
            "round {round}: QPs and DCTs gone"
        );
    }
    assert!(
        good > 50 && bad > 20,
        "the fuzzer reached the DC paths: {good} {bad}"
    );
}
