// SPDX-License-Identifier: GPL-2.0

//! RC in RoCE v2 packets (`engine/rc.rs`): two devices on separate fabrics exchanging the
//! packets each queues for the wire, with loss, duplication and reordering done here, and
//! packets checked against (and built from) IBA Vol 1 9.2-9.7 and Annex A17 by hand.

use super::wire_tests::{drain, spec_icrc};
use super::*;

/// The BTH of a frame (untagged IPv4).
const BTH: usize = 14 + 20 + 8;

fn bth_op(f: &[u8]) -> u8 {
    f[BTH]
}

fn bth_psn(f: &[u8]) -> u32 {
    u32::from_be_bytes([0, f[BTH + 9], f[BTH + 10], f[BTH + 11]])
}

fn receive_at(h: &mut Host, frame: &[u8], now: u64) -> bool {
    let mut nodes = [Node {
        fw: &mut h.fw,
        mem: &h.mem,
        wire: None,
    }];
    engine::wire_receive(&mut nodes, 0, frame, now)
}

/// Two Ethernet devices, one RC QP each, connected over IPv4 RoCE v2 GIDs at path MTU
/// `mtu` (the IB enum), the first PSNs `psn` both ways, each QP counting into a Q counter
/// set of its own device.
struct Link {
    a: Host,
    b: Host,
    ca: CqH,
    cb: CqH,
    qa: QpH,
    qb: QpH,
    ma: Mr,
    mb: Mr,
    /// The Q counter sets of `qa` and `qb`.
    sa: u32,
    sb: u32,
}

/// The transport counters of Q counter set `id` of `h` (QUERY_Q_COUNTER): `out_of_sequence`,
/// `duplicate_request`, `rnr_nak_retry_err`, `packet_seq_err`, `implied_nak_seq_err`,
/// `local_ack_timeout_err`.
fn transport_counters(h: &mut Host, id: u32) -> [u32; 6] {
    let mut b = inbox(op::QUERY_Q_COUNTER, 0, 0, query_q_counter_in::SIZE_BYTES);
    query_q_counter_in::counter_set_id.set(&mut b, id).unwrap();
    let out = ok(&mut h.fw, &b, query_q_counter_out::SIZE_BYTES);
    let g = |f: Member<query_q_counter_out::Bits>| f.get(&out).unwrap();
    [
        g(query_q_counter_out::out_of_sequence),
        g(query_q_counter_out::duplicate_request),
        g(query_q_counter_out::rnr_nak_retry_err),
        g(query_q_counter_out::packet_seq_err),
        g(query_q_counter_out::implied_nak_seq_err),
        g(query_q_counter_out::local_ack_timeout_err),
    ]
}

const MEM: usize = 64 * 1024;

fn link(mtu: u32, psn: u32, tweak: impl Fn(&mut Path)) -> Link {
    let mut a = Host::new(LinkLayer::Ethernet, 21);
    let mut b = Host::new(LinkLayer::Ethernet, 22);
    a.set_gid(0, gid_v4(1), false);
    b.set_gid(0, gid_v4(2), false);
    let (ca, cb) = (a.cq(8, false), b.cq(8, false));
    let qa = a.qp(QPC_ST_RC, &ca, &ca, (7, 6, 2));
    let qb = b.qp(QPC_ST_RC, &cb, &cb, (7, 6, 2));
    let (sa, sb) = (q_alloc(&mut a), q_alloc(&mut b));
    for (h, q, peer, g, set) in [(&mut a, &qa, qb.qpn, 2, sa), (&mut b, &qb, qa.qpn, 1, sb)] {
        let mut p = Path::to(peer, 0);
        p.gid = Some(gid_v4(g));
        p.counter_set = set;
        p.mtu = mtu;
        p.rq_psn = psn;
        p.sq_psn = psn;
        tweak(&mut p);
        h.connect(q, &p);
    }
    let ma = a.mr(MEM, ALL);
    let mb = b.mr(MEM, ALL);
    Link {
        a,
        b,
        ca,
        cb,
        qa,
        qb,
        ma,
        mb,
        sa,
        sb,
    }
}

/// What happens to a frame on the wire: the frames that arrive in its place.
type Fate<'a> = &'a mut dyn FnMut(bool, Vec<u8>) -> Vec<Vec<u8>>;

impl Link {
    /// Runs both devices at time `now` and carries their frames (through `fate`: `true` for
    /// A to B) until neither sends; every frame is returned (A's, B's) as sent.
    fn pump(&mut self, now: u64, fate: Fate<'_>) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let (mut sa, mut sb) = (vec![], vec![]);
        for _ in 0..10_000 {
            let ra = run(&mut [&mut self.a], now);
            let fa = drain(&mut self.a);
            let rb = run(&mut [&mut self.b], now);
            let fb = drain(&mut self.b);
            if fa.is_empty() && fb.is_empty() && !ra.more && !rb.more {
                break;
            }
            for f in fa {
                sa.push(f.clone());
                for g in fate(true, f) {
                    receive_at(&mut self.b, &g, now);
                }
            }
            for f in fb {
                sb.push(f.clone());
                for g in fate(false, f) {
                    receive_at(&mut self.a, &g, now);
                }
            }
        }
        (sa, sb)
    }

    fn carry(&mut self, now: u64) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        self.pump(now, &mut |_, f| vec![f])
    }
}

/// Every frame a valid RoCE v2 packet with the ICRC of the specification.
fn check_icrc(frames: &[Vec<u8>]) {
    for f in frames {
        let n = f.len();
        assert_eq!(&f[n - 4..], &spec_icrc(&f[14..n - 4]), "ICRC");
    }
}

/// SEND, SEND with immediate, WRITE, WRITE with immediate, READ, both atomics across the
/// wire at every path MTU, starting 3 PSNs before the wrap: the data, the CQEs, the packets'
/// opcodes (FIRST/MIDDLE/LAST/ONLY), PSNs and ICRCs.
#[test]
fn rc_every_opcode_at_every_mtu_across_the_psn_wrap() {
    for mtu_enum in 1..=5u32 {
        let mtu = 128usize << mtu_enum;
        let mut l = link(mtu_enum, 0xff_fffd, |_| {});
        let len = 3 * mtu + 5;
        l.a.mem.put(l.ma.bus, &pattern(MEM, 3));
        l.b.mem.put(l.mb.bus + 44_000, &7u64.to_le_bytes());
        l.b.post_recv(&mut l.qb, &[l.mb.sge(0, 16_384)]);
        l.b.post_recv(&mut l.qb, &[l.mb.sge(16_384, 8)]);
        l.b.post_recv(&mut l.qb, &[l.mb.sge(20_000, 8)]);
        l.a.post(
            &mut l.qa,
            &Wr::new(wqe_op::SEND).sge(l.ma.sge(0, len as u32)),
        );
        let mut w = Wr::new(wqe_op::SEND_IMM).sge(l.ma.sge(100, 8));
        w.imm = 0x1234_5678;
        l.a.post(&mut l.qa, &w);
        l.a.post(
            &mut l.qa,
            &Wr::new(wqe_op::RDMA_WRITE)
                .sge(l.ma.sge(7, len as u32))
                .remote(&l.mb, 17_000),
        );
        let mut w = Wr::new(wqe_op::RDMA_WRITE_IMM)
            .sge(l.ma.sge(0, 0))
            .remote(&l.mb, 0);
        w.imm = 0xabcd;
        l.a.post(&mut l.qa, &w);
        l.b.mem.put(l.mb.bus + 30_000, &pattern(len, 9));
        l.a.post(
            &mut l.qa,
            &Wr::new(wqe_op::RDMA_READ)
                .sge(l.ma.sge(32_000, len as u32))
                .remote(&l.mb, 30_000),
        );
        let mut w = Wr::new(wqe_op::ATOMIC_CS)
            .sge(l.ma.sge(50_000, 8))
            .remote(&l.mb, 44_000);
        w.atomic = Some((99, 7));
        l.a.post(&mut l.qa, &w);
        let mut w = Wr::new(wqe_op::ATOMIC_FA)
            .sge(l.ma.sge(50_008, 8))
            .remote(&l.mb, 44_000);
        w.atomic = Some((1, 0));
        l.a.post(&mut l.qa, &w);
        let (fa, fb) = l.carry(0);
        check_icrc(&fa);
        check_icrc(&fb);
        let s = l.a.poll_all(&mut l.ca);
        let ops: Vec<_> = s
            .iter()
            .map(|p| (p.opcode, p.wqe_opcode, p.byte_cnt))
            .collect();
        assert_eq!(
            ops,
            [
                (cqe_op::REQ, wqe_op::SEND, len as u32),
                (cqe_op::REQ, wqe_op::SEND_IMM, 8),
                (cqe_op::REQ, wqe_op::RDMA_WRITE, len as u32),
                (cqe_op::REQ, wqe_op::RDMA_WRITE_IMM, 0),
                (cqe_op::REQ, wqe_op::RDMA_READ, len as u32),
                (cqe_op::REQ, wqe_op::ATOMIC_CS, 8),
                (cqe_op::REQ, wqe_op::ATOMIC_FA, 8),
            ],
            "MTU {mtu}"
        );
        let r = l.b.poll_all(&mut l.cb);
        let rops: Vec<_> = r.iter().map(|p| (p.opcode, p.byte_cnt, p.imm)).collect();
        assert_eq!(
            rops,
            [
                (cqe_op::RESP_SEND, len as u32, 0),
                (cqe_op::RESP_SEND_IMM, 8, 0x1234_5678),
                (cqe_op::RESP_WR_IMM, 0, 0xabcd),
            ]
        );
        assert_eq!(r[0].flags_rqpn & 0xff_ffff, l.qa.qpn);
        let p = pattern(MEM, 3);
        assert!(l.b.mem.get(l.mb.bus, len) == p[..len], "SEND");
        assert_eq!(l.b.mem.get(l.mb.bus + 16_384, 8), &p[100..108]);
        assert!(
            l.b.mem.get(l.mb.bus + 17_000, len) == p[7..7 + len],
            "WRITE"
        );
        assert!(
            l.a.mem.get(l.ma.bus + 32_000, len) == pattern(len, 9),
            "READ"
        );
        // CS found 7 and swapped in 99; FA found 99 and added 1.
        assert_eq!(
            l.a.mem.get(l.ma.bus + 50_000, 16),
            [7u64.to_le_bytes(), 99u64.to_le_bytes()].concat()
        );
        assert_eq!(l.b.mem.get(l.mb.bus + 44_000, 8), 100u64.to_le_bytes());
        // The requests: SEND FIRST, MIDDLE x2, LAST; SEND ONLY with immediate; WRITE FIRST,
        // MIDDLE x2, LAST; WRITE ONLY with immediate; READ request; CS; FA. PSNs from
        // 0xfffffd, across the wrap; the READ takes 4 PSNs.
        let ops: Vec<u8> = fa.iter().map(|f| bth_op(f)).collect();
        assert_eq!(
            ops,
            [0x00, 0x01, 0x01, 0x02, 0x05, 0x06, 0x07, 0x07, 0x08, 0x0b, 0x0c, 0x13, 0x14]
        );
        let psns: Vec<u32> = fa.iter().map(|f| bth_psn(f)).collect();
        assert_eq!(
            psns,
            [0xff_fffd, 0xff_fffe, 0xff_ffff, 0, 1, 2, 3, 4, 5, 6, 7, 11, 12]
        );
        // Full packets but the last; the RETH on the first WRITE packet says the whole
        // length; AckReq on each message's last packet.
        assert_eq!(fa[1].len(), BTH + 12 + mtu + 4);
        assert_eq!(
            &fa[5][BTH + 12 + 12..BTH + 12 + 16],
            &(len as u32).to_be_bytes()
        );
        let acks: Vec<bool> = fa.iter().map(|f| f[BTH + 8] & 0x80 != 0).collect();
        assert_eq!(
            acks,
            [false, false, false, true, true, false, false, false, true, true, true, true, true]
        );
        // The responses: an ACK per message (coalesced: one per AckReq), READ FIRST, MIDDLE
        // x2, LAST, the atomic ACKs.
        let rops: Vec<u8> = fb.iter().map(|f| bth_op(f)).collect();
        assert_eq!(
            rops,
            [0x11, 0x11, 0x11, 0x11, 0x0d, 0x0e, 0x0e, 0x0f, 0x12, 0x12]
        );
        // The AETH: no credits (0x1f), the MSN counting messages.
        let aeth =
            |f: &Vec<u8>| u32::from_be_bytes([f[BTH + 12], f[BTH + 13], f[BTH + 14], f[BTH + 15]]);
        assert_eq!(aeth(&fb[0]), 0x1f00_0001);
        assert_eq!(aeth(&fb[9]), 0x1f00_0007);
        assert_eq!(l.a.psns(&l.qa).0, 13);
        assert_eq!(l.b.psns(&l.qb).1, 13);
    }
}

/// A SEND ONLY built here byte by byte (IBA 9.2, 9.3; Annex A17) is received, and the ACK
/// that answers it is what the specification says: opcode 0x11, AckReq clear, the PSN of
/// the SEND, AETH syndrome 0x1f (no credits) with MSN 1.
#[test]
fn rc_hand_built_send_is_acknowledged_by_the_spec() {
    let mut l = link(3, 0x42, |_| {});
    l.b.post_recv(&mut l.qb, &[l.mb.sge(0, 64)]);
    let payload = b"hello, rc!";
    let pad = payload.len().wrapping_neg() & 3;
    let udp_len = 8 + 12 + payload.len() + pad + 4;
    let mut f = vec![0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa, 0x08, 0x00];
    let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0];
    ip[2..4].copy_from_slice(&((20 + udp_len) as u16).to_be_bytes());
    ip.extend_from_slice(&[192, 168, 0, 1]);
    ip.extend_from_slice(&[192, 168, 0, 2]);
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&0xc123u16.to_be_bytes());
    f.extend_from_slice(&4791u16.to_be_bytes());
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    // BTH: RC SEND ONLY (0x04), pad, P_Key 0xffff, the QP, AckReq, PSN 0x42.
    f.push(0x04);
    f.push((pad as u8) << 4);
    f.extend_from_slice(&[0xff, 0xff, 0]);
    f.extend_from_slice(&l.qb.qpn.to_be_bytes()[1..]);
    f.extend_from_slice(&[0x80, 0, 0, 0x42]);
    f.extend_from_slice(payload);
    f.extend_from_slice(&[0, 0, 0][..pad]);
    let icrc = spec_icrc(&f[14..]);
    f.extend_from_slice(&icrc);
    assert!(receive_at(&mut l.b, &f, 0));
    let r = l.b.poll_all(&mut l.cb);
    assert_eq!((r[0].opcode, r[0].byte_cnt), (cqe_op::RESP_SEND, 10));
    assert_eq!(l.b.mem.get(l.mb.bus, 10), payload);
    run(&mut [&mut l.b], 0);
    let out = drain(&mut l.b);
    assert_eq!(out.len(), 1);
    let a = &out[0];
    assert_eq!(a.len(), BTH + 12 + 4 + 4);
    assert_eq!(bth_op(a), 0x11);
    assert_eq!(a[BTH + 8] & 0x80, 0);
    assert_eq!(
        u32::from_be_bytes([0, a[BTH + 5], a[BTH + 6], a[BTH + 7]]),
        l.qa.qpn
    );
    assert_eq!(bth_psn(a), 0x42);
    assert_eq!(&a[BTH + 12..BTH + 16], &[0x1f, 0, 0, 1]);
    assert_eq!(&a[a.len() - 4..], &spec_icrc(&a[14..a.len() - 4]));
    // The same packet again: a duplicate, acknowledged again, not delivered twice.
    assert!(receive_at(&mut l.b, &f, 0));
    run(&mut [&mut l.b], 0);
    let out = drain(&mut l.b);
    assert_eq!((out.len(), bth_psn(&out[0])), (1, 0x42));
    assert!(l.b.poll_all(&mut l.cb).is_empty());
    // One PSN ahead: a PSN sequence error NAK (syndrome 0x60) naming the expected PSN, once.
    let mut g = f.clone();
    g[BTH + 11] = 0x44;
    let n = g.len();
    let icrc = spec_icrc(&g[14..n - 4]);
    g[n - 4..].copy_from_slice(&icrc);
    assert!(receive_at(&mut l.b, &g, 0));
    assert!(receive_at(&mut l.b, &g, 0));
    run(&mut [&mut l.b], 0);
    let out = drain(&mut l.b);
    assert_eq!(out.len(), 1);
    assert_eq!((bth_psn(&out[0]), out[0][BTH + 12]), (0x43, 0x60));
}

/// Lost packets both ways: every 11th frame dropped, every 7th duplicated, every 13th
/// held back behind the next;
/// the NAKs and the ACK timer bring every message through, byte for byte, once.
#[test]
fn rc_loss_duplication_and_reordering_recover() {
    let mut l = link(1, 0xff_fff0, |_| {});
    let len = 5000usize;
    l.a.mem.put(l.ma.bus, &pattern(MEM, 5));
    l.b.mem.put(l.mb.bus + 30_000, &pattern(len, 6));
    l.b.mem.put(l.mb.bus + 40_000, &0u64.to_le_bytes());
    for i in 0..4 {
        l.b.post_recv(&mut l.qb, &[l.mb.sge(i * 6000, 6000)]);
    }
    for i in 0..4u64 {
        l.a.post(
            &mut l.qa,
            &Wr::new(wqe_op::SEND).sge(l.ma.sge(i * 100, len as u32)),
        );
    }
    l.a.post(
        &mut l.qa,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(l.ma.sge(20_000, len as u32))
            .remote(&l.mb, 30_000),
    );
    for _ in 0..3 {
        let mut w = Wr::new(wqe_op::ATOMIC_FA)
            .sge(l.ma.sge(40_000, 8))
            .remote(&l.mb, 40_000);
        w.atomic = Some((1, 0));
        l.a.post(&mut l.qa, &w);
    }
    let mut n = 0u32;
    let mut held: Option<Vec<u8>> = None;
    let mut now = 0;
    for _ in 0..200 {
        let mut fate = |_: bool, f: Vec<u8>| -> Vec<Vec<u8>> {
            n += 1;
            if n % 11 == 0 {
                return vec![];
            }
            let mut out = vec![];
            if n % 7 == 0 {
                out.push(f.clone());
            }
            if n % 13 == 0 {
                if let Some(h) = held.replace(f) {
                    out.push(h);
                }
                return out;
            }
            out.push(f);
            if let Some(h) = held.take() {
                out.push(h);
            }
            out
        };
        l.pump(now, &mut fate);
        now += 1_000_000_000;
        if l.a.psns(&l.qa).0 == (0xff_fff0 + 4 * 20 + 20 + 3) & 0xff_ffff {
            break;
        }
    }
    let s = l.a.poll_all(&mut l.ca);
    assert_eq!(s.len(), 8, "{s:?}");
    assert!(s.iter().all(|p| p.opcode == cqe_op::REQ), "{s:?}");
    let r = l.b.poll_all(&mut l.cb);
    assert_eq!(r.len(), 4);
    for i in 0..4u64 {
        let p = pattern(MEM, 5);
        let at = (i * 100) as usize;
        assert!(
            l.b.mem.get(l.mb.bus + i * 6000, len) == p[at..at + len],
            "SEND {i}"
        );
    }
    assert!(
        l.a.mem.get(l.ma.bus + 20_000, len) == pattern(len, 6),
        "READ"
    );
    // Each fetch-and-add executed once, whatever was duplicated or sent again.
    assert_eq!(l.b.mem.get(l.mb.bus + 40_000, 8), 3u64.to_le_bytes());
    // What the debugfs counters show: A sent again, B saw duplicates and gaps.
    let (sa, sb) = (l.a.fw.wire_rc_stats(), l.b.fw.wire_rc_stats());
    assert!(sa.retransmits > 0, "{sa:?}");
    assert!(sb.duplicates > 0 && sb.out_of_sequence > 0, "{sb:?}");
    // The QPs' Q counter sets: B's responder counted the same gaps and duplicates; A's
    // requester was NAKed for sequence errors.
    let qb = transport_counters(&mut l.b, l.sb);
    assert_eq!(
        (u64::from(qb[0]), u64::from(qb[1])),
        (sb.out_of_sequence, sb.duplicates)
    );
    let qa = transport_counters(&mut l.a, l.sa);
    assert!(qa[3] > 0, "{qa:?}");
}

/// A duplicate READ request is executed again from memory (the responder's current data),
/// a duplicate atomic answered from its saved result without executing it again.
#[test]
fn rc_duplicate_read_replayed_and_atomic_answered_from_its_result() {
    let mut l = link(3, 0x10, |_| {});
    l.b.mem.put(l.mb.bus, &pattern(2048, 1));
    l.b.mem.put(l.mb.bus + 8192, &5u64.to_le_bytes());
    l.a.post(
        &mut l.qa,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(l.ma.sge(0, 2048))
            .remote(&l.mb, 0),
    );
    run(&mut [&mut l.a], 0);
    let req = drain(&mut l.a);
    assert_eq!(req.len(), 1);
    assert!(receive_at(&mut l.b, &req[0], 0));
    run(&mut [&mut l.b], 0);
    assert_eq!(drain(&mut l.b).len(), 2);
    // The data changes; the request comes again: answered from memory as it is now.
    l.b.mem.put(l.mb.bus, &pattern(2048, 2));
    assert!(receive_at(&mut l.b, &req[0], 0));
    run(&mut [&mut l.b], 0);
    let again = drain(&mut l.b);
    assert_eq!(
        again.iter().map(|f| bth_op(f)).collect::<Vec<_>>(),
        [0x0d, 0x0f]
    );
    assert_eq!(bth_psn(&again[0]), 0x10);
    for f in &again {
        receive_at(&mut l.a, f, 0);
    }
    assert!(
        l.a.mem.get(l.ma.bus, 2048) == pattern(2048, 2),
        "READ replayed"
    );
    assert_eq!(l.a.poll_all(&mut l.ca).len(), 1);
    // An atomic, then its duplicate: the same original value, executed once.
    let mut w = Wr::new(wqe_op::ATOMIC_FA)
        .sge(l.ma.sge(4096, 8))
        .remote(&l.mb, 8192);
    w.atomic = Some((10, 0));
    l.a.post(&mut l.qa, &w);
    run(&mut [&mut l.a], 0);
    let req = drain(&mut l.a);
    for _ in 0..2 {
        assert!(receive_at(&mut l.b, &req[0], 0));
    }
    run(&mut [&mut l.b], 0);
    let acks = drain(&mut l.b);
    assert_eq!(acks.len(), 2);
    for a in &acks {
        assert_eq!(bth_op(a), 0x12);
        assert_eq!(&a[BTH + 16..BTH + 24], &5u64.to_be_bytes());
    }
    assert_eq!(l.b.mem.get(l.mb.bus + 8192, 8), 15u64.to_le_bytes());
}

/// No receive WQE: an RNR NAK (syndrome 0x20 with the responder's timer), the requester
/// waits for the timer and sends again; with none ever, `rnr_retry` retries, then
/// RNR_RETRY_EXC. Nothing answers at all: `retry_count` retransmissions on the ACK timer,
/// then RETRY_EXC and the QP in ERR.
#[test]
fn rc_rnr_and_ack_timeout_retries() {
    let mut l = link(3, 0, |p| {
        p.rnr_retry = 2;
        p.retry = 3;
        p.min_rnr_nak = 1;
    });
    l.a.mem.put(l.ma.bus, &pattern(100, 4));
    l.a.post(&mut l.qa, &Wr::new(wqe_op::SEND).sge(l.ma.sge(0, 100)));
    let (_, fb) = l.carry(0);
    assert_eq!(fb.len(), 1);
    assert_eq!((bth_op(&fb[0]), fb[0][BTH + 12]), (0x11, 0x21));
    assert!(l.a.poll_all(&mut l.ca).is_empty());
    // Before the timer (10 us): nothing; after it, sent again and taken.
    l.b.post_recv(&mut l.qb, &[l.mb.sge(0, 100)]);
    let (fa, _) = l.carry(5_000);
    assert!(fa.is_empty());
    let (fa, _) = l.carry(20_000);
    assert_eq!(fa.len(), 1);
    assert_eq!(l.a.poll_all(&mut l.ca)[0].opcode, cqe_op::REQ);
    assert_eq!(l.b.mem.get(l.mb.bus, 100), pattern(100, 4));
    // No receive ever: the first RNR NAK and 2 retries, then RNR_RETRY_EXC.
    l.a.post(&mut l.qa, &Wr::new(wqe_op::SEND).sge(l.ma.sge(0, 100)));
    let mut now = 100_000;
    for _ in 0..5 {
        l.carry(now);
        now += 100_000;
    }
    let s = l.a.poll_all(&mut l.ca);
    assert_eq!(
        (s[0].opcode, s[0].syndrome),
        (cqe_op::REQ_ERR, csyn::RNR_RETRY_EXC)
    );
    // RNR NAKs retried: the first SEND's one, the second's first two (the third spent the
    // retries).
    assert_eq!(transport_counters(&mut l.a, l.sa), [0, 0, 3, 0, 0, 0]);
    // A fresh pair; B never answers: 1 + 3 transmissions, then RETRY_EXC.
    let mut l = link(3, 0, |p| p.retry = 3);
    l.a.post(&mut l.qa, &Wr::new(wqe_op::SEND).sge(l.ma.sge(0, 100)));
    let mut sent = 0;
    let mut now = 0;
    for _ in 0..8 {
        let (fa, _) = l.pump(now, &mut |_, _| vec![]);
        sent += fa.len();
        // ack_timeout 14: 4.096 us << 14, about 67 ms.
        now += 100_000_000;
    }
    assert_eq!(sent, 4);
    let s = l.a.poll_all(&mut l.ca);
    assert_eq!(
        (s[0].opcode, s[0].syndrome),
        (cqe_op::REQ_ERR, csyn::RETRY_EXC)
    );
    // 3 ACK timer expiries sent the window again; the fourth spent the retry count.
    assert_eq!(transport_counters(&mut l.a, l.sa), [0, 0, 0, 0, 0, 3]);
    assert_eq!(l.a.state(&l.qa), QPC_STATE_ERR);
}

/// A WRITE to a region the rkey does not allow: a remote access NAK (0x62); the requester's
/// WQE completes with REMOTE_ACCESS, both QPs go to ERR.
#[test]
fn rc_remote_access_nak() {
    let mut l = link(3, 0, |_| {});
    l.a.post(
        &mut l.qa,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(l.ma.sge(0, 64))
            .remote(&l.mb, MEM as u64),
    );
    let (_, fb) = l.carry(0);
    assert_eq!((bth_op(&fb[0]), fb[0][BTH + 12]), (0x11, 0x62));
    let s = l.a.poll_all(&mut l.ca);
    assert_eq!(
        (s[0].opcode, s[0].syndrome),
        (cqe_op::REQ_ERR, csyn::REMOTE_ACCESS)
    );
    assert_eq!(l.b.state(&l.qb), QPC_STATE_ERR);
}

/// (opcode, PSN) of each frame.
fn op_psn(frames: &[Vec<u8>]) -> Vec<(u8, u32)> {
    frames.iter().map(|f| (bth_op(f), bth_psn(f))).collect()
}

/// The AETH syndrome of a response frame.
fn syndrome(f: &[u8]) -> u8 {
    f[BTH + 12]
}

/// Runs `h` at time 0 until it sends nothing more (its transmit queue holds 8 frames); what
/// it sent.
fn send_all(h: &mut Host) -> Vec<Vec<u8>> {
    let mut v = vec![];
    loop {
        let r = run(&mut [&mut *h], 0);
        let f = drain(h);
        if f.is_empty() && !r.more {
            return v;
        }
        v.extend(f);
    }
}

fn deliver(h: &mut Host, frames: &[Vec<u8>]) {
    for f in frames {
        receive_at(h, f, 0);
    }
}

/// Several messages in flight before any acknowledgement, their PSNs consecutive across the
/// wrap; one coalesced ACK for the last retires them all, in order; the window holds 16
/// messages, the rest go as it drains.
#[test]
fn rc_window_across_the_wrap_and_one_coalesced_ack() {
    let mut l = link(1, 0xff_fffe, |_| {});
    l.a.mem.put(l.ma.bus, &pattern(MEM, 8));
    for i in 0..6 {
        l.b.post_recv(&mut l.qb, &[l.mb.sge(i * 512, 512)]);
        l.a.post(
            &mut l.qa,
            &Wr::new(wqe_op::SEND).sge(l.ma.sge(i * 300, 300)),
        );
    }
    let fa = send_all(&mut l.a);
    // Six two-packet SENDs: FIRST and LAST (AckReq) each, PSN 0xfffffe to 9.
    let want: Vec<(u8, u32)> = (0..12u32)
        .map(|i| {
            (
                if i % 2 == 0 { 0x00 } else { 0x02 },
                (0xff_fffe + i) & 0xff_ffff,
            )
        })
        .collect();
    assert_eq!(op_psn(&fa), want);
    assert!(l.a.poll_all(&mut l.ca).is_empty());
    deliver(&mut l.b, &fa);
    let fb = send_all(&mut l.b);
    assert_eq!(fb.len(), 6);
    // Only the last ACK arrives (PSN 9, MSN 6): it acknowledges every message.
    let last = fb.last().unwrap();
    assert_eq!((bth_op(last), bth_psn(last)), (0x11, 9));
    assert_eq!(&last[BTH + 12..BTH + 16], &[0x1f, 0, 0, 6]);
    deliver(&mut l.a, &fb[5..]);
    let s = l.a.poll_all(&mut l.ca);
    let idx: Vec<_> = s
        .iter()
        .map(|c| (c.opcode, c.wqe_counter, c.byte_cnt))
        .collect();
    assert_eq!(
        idx,
        (0..6u16).map(|i| (cqe_op::REQ, i, 300)).collect::<Vec<_>>()
    );
    let p = pattern(MEM, 8);
    for i in 0..6usize {
        assert!(l.b.mem.get(l.mb.bus + i as u64 * 512, 300) == p[i * 300..i * 300 + 300]);
    }
    assert_eq!(l.a.psns(&l.qa).0, 10);
    // 20 more: 16 in flight, then the other 4 once the ACKs come.
    for i in 0..20 {
        l.b.post_recv(&mut l.qb, &[l.mb.sge(i * 64, 64)]);
        l.a.post(&mut l.qa, &Wr::new(wqe_op::SEND).sge(l.ma.sge(i, 64)));
    }
    let frames = send_all(&mut l.a);
    assert_eq!(frames.len(), 16);
    deliver(&mut l.b, &frames);
    let (fa, _) = l.carry(0);
    assert_eq!(l.a.poll_all(&mut l.ca).len(), 20);
    assert_eq!(l.b.poll_all(&mut l.cb).len(), 26);
    // The other 4, sent as the ACKs came, none again.
    assert_eq!(op_psn(&fa), (26..30).map(|p| (0x04, p)).collect::<Vec<_>>());
    assert_eq!(l.a.fw.wire_rc_stats().retransmits, 0);
}

/// READs and atomics in flight with SENDs, at most 2^log_sra_max of them; the responder
/// answers in PSN order (READ responses, the atomic ACK, then the ACK of the SEND after
/// them), and a READ past the limit waits for one to complete.
#[test]
fn rc_reads_and_atomics_interleaved_in_psn_order() {
    let mut l = link(1, 0x40, |p| p.sra = 1);
    l.b.mem.put(l.mb.bus, &pattern(4096, 3));
    l.b.mem.put(l.mb.bus + 8192, &40u64.to_le_bytes());
    l.b.post_recv(&mut l.qb, &[l.mb.sge(16_384, 64)]);
    l.a.post(
        &mut l.qa,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(l.ma.sge(0, 700))
            .remote(&l.mb, 0),
    );
    let mut w = Wr::new(wqe_op::ATOMIC_FA)
        .sge(l.ma.sge(4096, 8))
        .remote(&l.mb, 8192);
    w.atomic = Some((2, 0));
    l.a.post(&mut l.qa, &w);
    l.a.post(&mut l.qa, &Wr::new(wqe_op::SEND).sge(l.ma.sge(0, 0)));
    l.a.post(
        &mut l.qa,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(l.ma.sge(1024, 100))
            .remote(&l.mb, 1000),
    );
    run(&mut [&mut l.a], 0);
    let fa = drain(&mut l.a);
    // READ (3 response PSNs), FETCH_ADD, SEND ONLY; the second READ waits.
    assert_eq!(op_psn(&fa), [(0x0c, 0x40), (0x14, 0x43), (0x04, 0x44)]);
    deliver(&mut l.b, &fa);
    run(&mut [&mut l.b], 0);
    let fb = drain(&mut l.b);
    assert_eq!(
        op_psn(&fb),
        [
            (0x0d, 0x40),
            (0x0e, 0x41),
            (0x0f, 0x42),
            (0x12, 0x43),
            (0x11, 0x44)
        ]
    );
    assert_eq!(&fb[3][BTH + 16..BTH + 24], &40u64.to_be_bytes());
    deliver(&mut l.a, &fb);
    let s = l.a.poll_all(&mut l.ca);
    let ops: Vec<_> = s.iter().map(|c| (c.wqe_opcode, c.byte_cnt)).collect();
    assert_eq!(
        ops,
        [
            (wqe_op::RDMA_READ, 700),
            (wqe_op::ATOMIC_FA, 8),
            (wqe_op::SEND, 0)
        ]
    );
    run(&mut [&mut l.a], 0);
    let fa = drain(&mut l.a);
    assert_eq!(op_psn(&fa), [(0x0c, 0x45)]);
    deliver(&mut l.b, &fa);
    l.carry(0);
    assert_eq!(l.a.poll_all(&mut l.ca).len(), 1);
    let p = pattern(4096, 3);
    assert!(l.a.mem.get(l.ma.bus, 700) == p[..700]);
    assert!(l.a.mem.get(l.ma.bus + 1024, 100) == p[1000..1100]);
    assert_eq!(l.a.mem.get(l.ma.bus + 4096, 8), 40u64.to_le_bytes());
    assert_eq!(l.b.mem.get(l.mb.bus + 8192, 8), 42u64.to_le_bytes());
}

/// A lost packet in the middle of the window: the responder takes the packets before it,
/// answers the first one after it with one PSN sequence error NAK naming it (IBA 9.7.5.2.1)
/// and drops the rest; the requester retires what the NAK acknowledges and sends again from
/// the NAK's PSN (go-back-N): every later message once more, counted as retransmissions.
#[test]
fn rc_nak_sequence_error_mid_window_goes_back_n() {
    let mut l = link(3, 0xff_ffff, |_| {});
    l.a.mem.put(l.ma.bus, &pattern(MEM, 4));
    for i in 0..4 {
        l.b.post_recv(&mut l.qb, &[l.mb.sge(i * 100, 100)]);
        l.a.post(&mut l.qa, &Wr::new(wqe_op::SEND).sge(l.ma.sge(i * 50, 100)));
    }
    run(&mut [&mut l.a], 0);
    let fa = drain(&mut l.a);
    assert_eq!(
        op_psn(&fa),
        [(0x04, 0xff_ffff), (0x04, 0), (0x04, 1), (0x04, 2)]
    );
    // PSN 0 is lost.
    deliver(&mut l.b, &[fa[0].clone(), fa[2].clone(), fa[3].clone()]);
    run(&mut [&mut l.b], 0);
    let fb = drain(&mut l.b);
    let got: Vec<_> = fb
        .iter()
        .map(|f| (bth_op(f), bth_psn(f), syndrome(f)))
        .collect();
    assert_eq!(got, [(0x11, 0xff_ffff, 0x1f), (0x11, 0, 0x60)]);
    assert_eq!(l.b.poll_all(&mut l.cb).len(), 1);
    deliver(&mut l.a, &fb);
    let s = l.a.poll_all(&mut l.ca);
    assert_eq!((s.len(), s[0].wqe_counter), (1, 0));
    run(&mut [&mut l.a], 0);
    let again = drain(&mut l.a);
    assert_eq!(op_psn(&again), [(0x04, 0), (0x04, 1), (0x04, 2)]);
    assert_eq!(l.a.fw.wire_rc_stats().retransmits, 3);
    deliver(&mut l.b, &again);
    l.carry(0);
    assert_eq!(l.a.poll_all(&mut l.ca).len(), 3);
    assert_eq!(l.b.poll_all(&mut l.cb).len(), 3);
    let p = pattern(MEM, 4);
    for i in 0..4usize {
        assert!(l.b.mem.get(l.mb.bus + i as u64 * 100, 100) == p[i * 50..i * 50 + 100]);
    }
    let sb = l.b.fw.wire_rc_stats();
    assert_eq!((sb.out_of_sequence, sb.duplicates), (2, 0));
    // In the QPs' Q counter sets: B's 2 out-of-sequence requests, A's one sequence NAK.
    assert_eq!(transport_counters(&mut l.b, l.sb), [2, 0, 0, 0, 0, 0]);
    assert_eq!(transport_counters(&mut l.a, l.sa), [0, 0, 0, 1, 0, 0]);
}

/// A READ response lost inside the window (a WRITE before the READ, a SEND after it): the
/// next response is past the one expected, so the requester asks again from the missing
/// PSN (the READ's RETH moved on by what it has) and sends the SEND again; the responder
/// executes the duplicate READ again from memory as it is now (READ RESPONSE FIRST and LAST
/// from that PSN) and acknowledges the duplicate SEND; everything completes once, in order.
#[test]
fn rc_duplicate_read_replayed_inside_the_window() {
    let mut l = link(1, 0x500, |_| {});
    l.a.mem.put(l.ma.bus, &pattern(MEM, 1));
    l.b.mem.put(l.mb.bus + 4096, &pattern(600, 2));
    l.b.post_recv(&mut l.qb, &[l.mb.sge(8192, 64)]);
    l.a.post(
        &mut l.qa,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(l.ma.sge(0, 200))
            .remote(&l.mb, 0),
    );
    l.a.post(
        &mut l.qa,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(l.ma.sge(16_384, 600))
            .remote(&l.mb, 4096),
    );
    l.a.post(&mut l.qa, &Wr::new(wqe_op::SEND).sge(l.ma.sge(300, 20)));
    run(&mut [&mut l.a], 0);
    let fa = drain(&mut l.a);
    assert_eq!(op_psn(&fa), [(0x0a, 0x500), (0x0c, 0x501), (0x04, 0x504)]);
    deliver(&mut l.b, &fa);
    run(&mut [&mut l.b], 0);
    let fb = drain(&mut l.b);
    assert_eq!(
        op_psn(&fb),
        [
            (0x11, 0x500),
            (0x0d, 0x501),
            (0x0e, 0x502),
            (0x0f, 0x503),
            (0x11, 0x504)
        ]
    );
    // READ RESPONSE MIDDLE is lost.
    deliver(
        &mut l.a,
        &[fb[0].clone(), fb[1].clone(), fb[3].clone(), fb[4].clone()],
    );
    let s = l.a.poll_all(&mut l.ca);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].wqe_opcode, wqe_op::RDMA_WRITE);
    run(&mut [&mut l.a], 0);
    let again = drain(&mut l.a);
    assert_eq!(op_psn(&again), [(0x0c, 0x502), (0x04, 0x504)]);
    // The RETH: from byte 256 of the READ, 344 bytes.
    let reth = &again[0][BTH + 12..BTH + 28];
    assert_eq!(&reth[8..12], &l.mb.key.to_be_bytes());
    assert_eq!(&reth[12..16], &344u32.to_be_bytes());
    assert_eq!(
        u64::from_be_bytes(reth[..8].try_into().unwrap()),
        l.mb.va + 4096 + 256
    );
    // The responder's memory changes before the duplicate comes: it is read again.
    l.b.mem.put(l.mb.bus + 4096, &pattern(600, 5));
    deliver(&mut l.b, &again);
    run(&mut [&mut l.b], 0);
    let replay = drain(&mut l.b);
    assert_eq!(
        op_psn(&replay),
        [(0x0d, 0x502), (0x0f, 0x503), (0x11, 0x504)]
    );
    deliver(&mut l.a, &replay);
    let s = l.a.poll_all(&mut l.ca);
    let ops: Vec<_> = s.iter().map(|c| (c.wqe_opcode, c.byte_cnt)).collect();
    assert_eq!(ops, [(wqe_op::RDMA_READ, 600), (wqe_op::SEND, 20)]);
    let got = l.a.mem.get(l.ma.bus + 16_384, 600);
    assert!(got[..256] == pattern(600, 2)[..256]);
    assert!(got[256..] == pattern(600, 5)[256..]);
    assert_eq!(l.b.poll_all(&mut l.cb).len(), 1);
    assert_eq!(l.b.fw.wire_rc_stats().duplicates, 2);
    assert_eq!(l.a.fw.wire_rc_stats().retransmits, 2);
    // A's READ response past the expected one: an implied NAK; B's two duplicates.
    assert_eq!(transport_counters(&mut l.a, l.sa), [0, 0, 0, 0, 1, 0]);
    assert_eq!(transport_counters(&mut l.b, l.sb), [0, 2, 0, 0, 0, 0]);
}

/// UC in packets (IBA 9.8.3): a SEND and a WRITE with immediate of three packets each (UC
/// FIRST, MIDDLE, LAST, the RETH on the first, no AckReq), nothing answered, the sender's
/// WQEs complete once sent. A lost MIDDLE drops its message (no CQE, the receive WQE used
/// again by the next); a FIRST while a message is in progress starts anew; a WRITE to a
/// region the rkey does not cover is dropped, the QP stays in RTS.
#[test]
fn uc_multi_packet_send_and_write_lost_packets_drop_the_message() {
    let mut l = link(1, 0xff_fffe, |_| {});
    // The same link with UC QPs.
    let (qa, qb) = {
        let a = l.a.qp(QPC_ST_UC, &l.ca, &l.ca, (7, 6, 2));
        let b = l.b.qp(QPC_ST_UC, &l.cb, &l.cb, (7, 6, 2));
        for (h, q, peer, g) in [(&mut l.a, &a, b.qpn, 2), (&mut l.b, &b, a.qpn, 1)] {
            let mut p = Path::to(peer, 0);
            p.gid = Some(gid_v4(g));
            p.mtu = 1;
            p.rq_psn = 0xff_fffe;
            p.sq_psn = 0xff_fffe;
            h.connect(q, &p);
        }
        (a, b)
    };
    let (mut qa, mut qb) = (qa, qb);
    l.a.mem.put(l.ma.bus, &pattern(MEM, 7));
    l.b.post_recv(&mut qb, &[l.mb.sge(0, 1024)]);
    l.b.post_recv(&mut qb, &[l.mb.sge(1024, 16)]);
    l.a.post(&mut qa, &Wr::new(wqe_op::SEND).sge(l.ma.sge(0, 600)));
    let mut w = Wr::new(wqe_op::RDMA_WRITE_IMM)
        .sge(l.ma.sge(1000, 700))
        .remote(&l.mb, 8192);
    w.imm = 0x77;
    l.a.post(&mut qa, &w);
    let fa = send_all(&mut l.a);
    assert_eq!(
        op_psn(&fa),
        [
            (0x20, 0xff_fffe),
            (0x21, 0xff_ffff),
            (0x22, 0),
            (0x26, 1),
            (0x27, 2),
            (0x29, 3)
        ]
    );
    assert!(fa.iter().all(|f| f[BTH + 8] & 0x80 == 0));
    assert_eq!(l.a.poll_all(&mut l.ca).len(), 2);
    deliver(&mut l.b, &fa);
    assert!(send_all(&mut l.b).is_empty(), "UC is not acknowledged");
    let r = l.b.poll_all(&mut l.cb);
    let got: Vec<_> = r.iter().map(|c| (c.opcode, c.byte_cnt, c.imm)).collect();
    assert_eq!(
        got,
        [
            (cqe_op::RESP_SEND, 600, 0),
            (cqe_op::RESP_WR_IMM, 700, 0x77)
        ]
    );
    let p = pattern(MEM, 7);
    assert!(l.b.mem.get(l.mb.bus, 600) == p[..600]);
    assert!(l.b.mem.get(l.mb.bus + 8192, 700) == p[1000..1700]);
    // The same SEND again, its MIDDLE lost: dropped; then a SEND whose FIRST comes after
    // another FIRST: the first one is abandoned, the second delivered into the same WQE.
    l.b.post_recv(&mut qb, &[l.mb.sge(2048, 1024)]);
    l.a.post(&mut qa, &Wr::new(wqe_op::SEND).sge(l.ma.sge(0, 600)));
    l.a.post(&mut qa, &Wr::new(wqe_op::SEND).sge(l.ma.sge(3000, 300)));
    let fa = send_all(&mut l.a);
    assert_eq!(
        op_psn(&fa),
        [(0x20, 4), (0x21, 5), (0x22, 6), (0x20, 7), (0x22, 8)]
    );
    deliver(&mut l.b, &[fa[0].clone(), fa[2].clone()]);
    assert!(l.b.poll_all(&mut l.cb).is_empty());
    deliver(&mut l.b, &[fa[0].clone(), fa[3].clone(), fa[4].clone()]);
    let r = l.b.poll_all(&mut l.cb);
    assert_eq!((r.len(), r[0].byte_cnt), (1, 300));
    assert!(l.b.mem.get(l.mb.bus + 2048, 300) == p[3000..3300]);
    // A WRITE past the region: dropped, nothing answered, both QPs still in RTS.
    l.a.post(
        &mut qa,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(l.ma.sge(0, 64))
            .remote(&l.mb, MEM as u64),
    );
    let fa = send_all(&mut l.a);
    deliver(&mut l.b, &fa);
    assert!(send_all(&mut l.b).is_empty());
    assert_eq!(l.b.state(&qb), QPC_STATE_RTS);
    assert_eq!(l.a.state(&qa), QPC_STATE_RTS);
    assert_eq!(l.a.poll_all(&mut l.ca).len(), 3);
}

/// XRC in packets: an initiator on one device sends to a target on another (IBA 9.3, XRC
/// opcodes 0xa0..): every request carries the XRCETH naming the target's XRC SRQ; a
/// two-packet SEND lands in that SRQ (its CQ, user index, the target's QPN), a READ is
/// answered with XRC READ responses (no XRCETH), the ACKs are XRC ACKs; an SRQ of another
/// domain is an Invalid Request NAK.
#[test]
fn xrc_initiator_and_target_across_the_wire() {
    let mut a = Host::new(LinkLayer::Ethernet, 31);
    let mut b = Host::new(LinkLayer::Ethernet, 32);
    a.set_gid(0, gid_v4(1), false);
    b.set_gid(0, gid_v4(2), false);
    let mut scq = a.cq(6, false);
    let mut rcq = b.cq(6, false);
    let (x1, x2) = (b.xrcd(), b.xrcd());
    let mut s1 = b.xrc_srq(x1, &rcq, 2, 5, 0x7101);
    let s2 = b.xrc_srq(x2, &rcq, 2, 5, 0x7102);
    let mut ini = a.xrc_qp(Some(&scq), 0, 5);
    let tgt = b.xrc_qp(None, x1, 0);
    let mut pa = Path::to(tgt.qpn, 0);
    pa.gid = Some(gid_v4(2));
    pa.mtu = 1;
    a.connect(&ini, &pa);
    let mut pb = Path::to(ini.qpn, 0);
    pb.gid = Some(gid_v4(1));
    pb.mtu = 1;
    pb.rq_psn = pa.sq_psn;
    b.connect(&tgt, &pb);
    let src = a.mr(MEM, ALL);
    let dst = b.mr(MEM, ALL);
    a.mem.put(src.bus, &pattern(4096, 4));
    b.mem.put(dst.bus + 8192, &pattern(600, 8));
    b.post_srq(&mut s1, &[dst.sge(0, 1024)]).unwrap();
    let send = Wr {
        xrc_srqn: Some(s1.rmpn),
        ..Wr::new(wqe_op::SEND).sge(src.sge(0, 300))
    };
    a.post(&mut ini, &send);
    let read = Wr {
        xrc_srqn: Some(s1.rmpn),
        ..Wr::new(wqe_op::RDMA_READ)
            .sge(src.sge(16_384, 600))
            .remote(&dst, 8192)
    };
    a.post(&mut ini, &read);
    let fa = send_all(&mut a);
    // XRC SEND FIRST, LAST, READ request: 0xa0, 0xa2, 0xac, the XRCETH after the BTH.
    assert_eq!(op_psn(&fa), [(0xa0, 0x200), (0xa2, 0x201), (0xac, 0x202)]);
    for f in &fa {
        assert_eq!(&f[BTH + 12..BTH + 16], &s1.rmpn.to_be_bytes());
    }
    check_icrc(&fa);
    deliver(&mut b, &fa);
    let fb = send_all(&mut b);
    assert_eq!(
        op_psn(&fb),
        [(0xb1, 0x201), (0xad, 0x202), (0xae, 0x203), (0xaf, 0x204)]
    );
    check_icrc(&fb);
    let rv = b.poll_all(&mut rcq);
    assert_eq!(
        (
            rv.len(),
            rv[0].opcode,
            rv[0].qpn,
            rv[0].uidx,
            rv[0].byte_cnt
        ),
        (1, cqe_op::RESP_SEND, tgt.qpn, 0x7101, 300)
    );
    assert_eq!(b.mem.get(dst.bus, 300), pattern(300, 4));
    deliver(&mut a, &fb);
    let sc = a.poll_all(&mut scq);
    let ops: Vec<_> = sc.iter().map(|c| (c.opcode, c.wqe_opcode)).collect();
    assert_eq!(
        ops,
        [
            (cqe_op::REQ, wqe_op::SEND),
            (cqe_op::REQ, wqe_op::RDMA_READ)
        ]
    );
    assert_eq!(a.mem.get(src.bus + 16_384, 600), pattern(600, 8));
    // An SRQ of another domain: Invalid Request NAK (0x61), the initiator's WQE fails.
    let bad = Wr {
        xrc_srqn: Some(s2.rmpn),
        ..Wr::new(wqe_op::SEND).sge(src.sge(0, 10))
    };
    a.post(&mut ini, &bad);
    let fa = send_all(&mut a);
    deliver(&mut b, &fa);
    let fb = send_all(&mut b);
    assert_eq!((bth_op(&fb[0]), syndrome(&fb[0])), (0xb1, 0x61));
    deliver(&mut a, &fb);
    let sc = a.poll_all(&mut scq);
    assert_eq!(
        (sc[0].opcode, sc[0].syndrome),
        (cqe_op::REQ_ERR, csyn::REMOTE_INVAL_REQ)
    );
}
