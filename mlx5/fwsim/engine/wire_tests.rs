// SPDX-License-Identifier: GPL-2.0

//! The UD transport in RoCE v2 packets (`engine/wire.rs`), against packets checked and built
//! here byte by byte from the specifications (IBA Vol 1 9.2-9.3, Annex A17; RFC 791/8200/768),
//! with an ICRC computed here (not by `roce/icrc.rs`).

use super::*;

/// CRC-32 as Ethernet computes it (reflected polynomial 0xedb88320, all-ones start, final
/// complement), bit by bit.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// The ICRC of RoCE v2 packet `l3` (from the IP header up to, not including, the ICRC), by
/// IBA Annex A17.3.3 and Vol 1 7.8.1: CRC-32 over 8 bytes of ones (the LRH of InfiniBand,
/// absent and masked), the IP header with its variant fields as ones (IPv4: TOS, TTL, header
/// checksum; IPv6: traffic class, flow label, hop limit), the UDP header with its checksum as
/// ones, the BTH with its reserved byte 4 as ones, and the rest; sent least significant
/// byte first.
pub(super) fn spec_icrc(l3: &[u8]) -> [u8; 4] {
    let mut m = vec![0xffu8; 8];
    m.extend_from_slice(l3);
    let ip = 8;
    let udp = if l3[0] >> 4 == 4 {
        m[ip + 1] = 0xff;
        m[ip + 8] = 0xff;
        m[ip + 10] = 0xff;
        m[ip + 11] = 0xff;
        ip + 20
    } else {
        m[ip] |= 0x0f;
        m[ip + 1] = 0xff;
        m[ip + 2] = 0xff;
        m[ip + 3] = 0xff;
        m[ip + 7] = 0xff;
        ip + 40
    };
    m[udp + 6] = 0xff;
    m[udp + 7] = 0xff;
    m[udp + 8 + 4] = 0xff;
    crc32(&m).to_le_bytes()
}

/// The RFC 1071 checksum of an IPv4 header.
fn ip_sum(h: &[u8]) -> u16 {
    let mut s: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// A RoCE v2 UD SEND ONLY (with immediate when `imm`) over IPv4, built here field by field.
fn hand_ud_v4(
    src: [u8; 4],
    dst: [u8; 4],
    dqpn: u32,
    qkey: u32,
    sqpn: u32,
    imm: Option<u32>,
    payload: &[u8],
) -> Vec<u8> {
    let pad = payload.len().wrapping_neg() & 3;
    let bth_len = 12 + 8 + if imm.is_some() { 4 } else { 0 };
    let udp_len = 8 + bth_len + payload.len() + pad + 4;
    let mut f = vec![0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa, 0x08, 0x00];
    let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0];
    ip[2..4].copy_from_slice(&((20 + udp_len) as u16).to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let s = ip_sum(&ip);
    ip[10..12].copy_from_slice(&s.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&0xc001u16.to_be_bytes());
    f.extend_from_slice(&4791u16.to_be_bytes());
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    // BTH: opcode (UD 011, SEND ONLY 00100 or with immediate 00101), SE 0, M 0, pad, TVer 0,
    // P_Key 0xffff, resv8a 0, the destination QP, AckReq 0, PSN 7.
    f.push(if imm.is_some() { 0x65 } else { 0x64 });
    f.push((pad as u8) << 4);
    f.extend_from_slice(&[0xff, 0xff, 0]);
    f.extend_from_slice(&dqpn.to_be_bytes()[1..]);
    f.extend_from_slice(&7u32.to_be_bytes());
    // DETH: the Q_Key, reserved, the source QP.
    f.extend_from_slice(&qkey.to_be_bytes());
    f.push(0);
    f.extend_from_slice(&sqpn.to_be_bytes()[1..]);
    if let Some(i) = imm {
        f.extend_from_slice(&i.to_be_bytes());
    }
    f.extend_from_slice(payload);
    f.extend_from_slice(&[0, 0, 0][..pad]);
    let icrc = spec_icrc(&f[14..]);
    f.extend_from_slice(&icrc);
    f
}

pub(super) fn drain(h: &mut Host) -> Vec<Vec<u8>> {
    let mut v = vec![];
    h.fw.wire_drain(|f| v.push(f.to_vec()));
    v
}

fn receive(h: &mut Host, frame: &[u8]) -> bool {
    let mut nodes = [Node {
        fw: &mut h.fw,
        mem: &h.mem,
        wire: None,
    }];
    engine::wire_receive(&mut nodes, 0, frame, 0)
}

fn ud_ah(dqpn: u32, qkey: u32, gid: [u8; 16], index: u8) -> Ah {
    Ah {
        dqpn,
        qkey,
        rlid: 0,
        sl: 3,
        grh: Some((gid, index)),
        eth: true,
    }
}

#[test]
fn ud_to_a_gid_off_the_fabric_leaves_as_a_roce_v2_packet_and_is_received_from_one() {
    // h1 sends; h2 stands for the host behind the uplink (only the frames link them).
    let mut h1 = Host::new(LinkLayer::Ethernet, 3);
    let mut h2 = Host::new(LinkLayer::Ethernet, 4);
    h1.set_gid(1, gid_v4(1), false);
    h1.set_gid(2, gid_v6(1), false);
    h2.set_gid(1, gid_v4(2), false);
    h2.set_gid(2, gid_v6(2), false);
    let (mut c1, mut c2) = (h1.cq(5, false), h2.cq(5, false));
    let mut s = h1.qp(QPC_ST_UD, &c1, &c1, (5, 5, 2));
    let mut r = h2.qp(QPC_ST_UD, &c2, &c2, (5, 5, 2));
    ud_up(&mut h1, &s, 1);
    ud_up(&mut h2, &r, 9);
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(8192, ALL);
    h1.mem.put(src.bus, &pattern(1024, 5));
    let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 101));
    w.ah = Some(ud_ah(r.qpn, 9, gid_v4(2), 1));
    h1.post(&mut s, &w);
    let mut w = Wr::new(wqe_op::SEND_IMM)
        .sge(src.sge(0, 600))
        .sge(src.sge(600, 424));
    w.imm = 0x0a0b_0c0d;
    w.ah = Some(ud_ah(r.qpn, 9, gid_v6(2), 2));
    h1.post(&mut s, &w);
    run(&mut [&mut h1], 0);
    // UD completes once the packet is queued for the wire.
    let sc = h1.poll_all(&mut c1);
    assert_eq!(sc.len(), 2);
    assert!(sc.iter().all(|c| c.opcode == cqe_op::REQ));
    let frames = drain(&mut h1);
    assert_eq!(frames.len(), 2);
    assert!(drain(&mut h1).is_empty(), "drained once");

    // The IPv4 packet, byte by byte.
    let f = &frames[0];
    assert_eq!(&f[12..14], &[0x08, 0x00]);
    let ip = &f[14..34];
    assert_eq!(ip[0], 0x45);
    assert_eq!(ip[1], 3, "TOS: the traffic class");
    assert_eq!(ip[8], 64, "TTL: the hop limit");
    assert_eq!(ip[9], 17);
    assert_eq!(ip_sum(ip), 0, "the IPv4 header checksum verifies");
    assert_eq!(&ip[12..16], &[192, 168, 0, 1]);
    assert_eq!(&ip[16..20], &[192, 168, 0, 2]);
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    assert_eq!(total + 14, f.len());
    let udp = &f[34..42];
    assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 4791);
    assert_eq!(
        usize::from(u16::from_be_bytes([udp[4], udp[5]])),
        total - 20
    );
    let bth = &f[42..54];
    assert_eq!(bth[0], 0x64, "UD SEND ONLY");
    assert_eq!((bth[1] >> 4) & 3, 3, "pad count: 101 bytes pad to 104");
    assert_eq!(bth[1] & 0x0f, 0, "TVer 0");
    assert_eq!(&bth[2..4], &[0xff, 0xff]);
    assert_eq!(u32::from_be_bytes([0, bth[5], bth[6], bth[7]]), r.qpn);
    let deth = &f[54..62];
    assert_eq!(u32::from_be_bytes([deth[0], deth[1], deth[2], deth[3]]), 9);
    assert_eq!(u32::from_be_bytes([0, deth[5], deth[6], deth[7]]), s.qpn);
    assert_eq!(&f[62..163], &pattern(101, 5)[..]);
    assert_eq!(&f[163..166], &[0, 0, 0]);
    assert_eq!(
        &f[166..],
        &spec_icrc(&f[14..166]),
        "ICRC from the specification"
    );

    // The IPv6 packet with its immediate.
    let f = &frames[1];
    assert_eq!(&f[12..14], &[0x86, 0xdd]);
    let ip = &f[14..54];
    assert_eq!(ip[0] >> 4, 6);
    assert_eq!((ip[0] & 0xf, ip[1] >> 4), (0, 3), "traffic class 3");
    assert_eq!(u32::from_be_bytes([0, ip[1] & 0xf, ip[2], ip[3]]), 0x12345);
    assert_eq!((ip[6], ip[7]), (17, 64));
    assert_eq!(&ip[8..24], &gid_v6(1));
    assert_eq!(&ip[24..40], &gid_v6(2));
    assert_eq!(f[62], 0x65, "UD SEND ONLY with immediate");
    assert_eq!(&f[82..86], &0x0a0b_0c0du32.to_be_bytes());
    assert_eq!(&f[86..1110], &pattern(1024, 5)[..]);
    let n = f.len();
    assert_eq!(&f[n - 4..], &spec_icrc(&f[14..n - 4]));

    // h2 receives both as a ConnectX would from the wire.
    h2.post_recv(&mut r, &[dst.sge(0, 2048)]);
    h2.post_recv(&mut r, &[dst.sge(2048, 2048)]);
    assert!(receive(&mut h2, &frames[0]));
    assert!(receive(&mut h2, &frames[1]));
    let rc = h2.poll_all(&mut c2);
    assert_eq!(rc.len(), 2);
    assert_eq!((rc[0].opcode, rc[0].byte_cnt), (cqe_op::RESP_SEND, 141));
    assert_eq!(rc[0].flags_rqpn, (1 << 28) | (2 << 24) | s.qpn);
    assert_eq!(
        (rc[1].opcode, rc[1].byte_cnt, rc[1].imm),
        (cqe_op::RESP_SEND_IMM, 1064, 0x0a0b_0c0d)
    );
    assert_eq!(rc[1].flags_rqpn, (1 << 28) | (1 << 24) | s.qpn);
    // The GRH area: the IPv4 header in its last 20 bytes, the IPv6 header whole.
    assert_eq!(h2.mem.get(dst.bus, 20), vec![0; 20]);
    assert_eq!(h2.mem.get(dst.bus + 20, 20), frames[0][14..34].to_vec());
    assert_eq!(h2.mem.get(dst.bus + 40, 101), pattern(101, 5));
    assert_eq!(h2.mem.get(dst.bus + 2048, 40), frames[1][14..54].to_vec());
    assert_eq!(h2.mem.get(dst.bus + 2088, 1024), pattern(1024, 5));
}

#[test]
fn a_hand_built_packet_is_received_and_bad_ones_are_dropped() {
    let mut h = Host::new(LinkLayer::Ethernet, 5);
    h.set_gid(1, gid_v4(2), false);
    let mut c = h.cq(5, false);
    let mut r = h.qp(QPC_ST_UD, &c, &c, (5, 5, 2));
    ud_up(&mut h, &r, 0x1111_1111);
    let dst = h.mr(8192, ALL);
    let data = pattern(257, 9);
    let good = hand_ud_v4(
        [192, 168, 0, 7],
        [192, 168, 0, 2],
        r.qpn,
        0x1111_1111,
        0x4321,
        Some(0x99),
        &data,
    );
    // Without a receive posted: dropped (counted out of buffer), nothing completes.
    assert!(!receive(&mut h, &good));
    assert!(h.poll_all(&mut c).is_empty());
    for i in 0..6 {
        h.post_recv(&mut r, &[dst.sge(i * 1024, 1024)]);
    }
    assert!(receive(&mut h, &good));
    let rc = h.poll_all(&mut c);
    assert_eq!(rc.len(), 1);
    assert_eq!(
        (rc[0].opcode, rc[0].byte_cnt, rc[0].imm),
        (cqe_op::RESP_SEND_IMM, 297, 0x99)
    );
    assert_eq!(rc[0].flags_rqpn, (1 << 28) | (2 << 24) | 0x4321);
    assert_eq!(h.mem.get(dst.bus + 40, 257), data);
    // A corrupted payload byte, or the last byte before the ICRC (what `wire_corrupt`
    // flips): the ICRC fails, dropped and counted.
    assert_eq!(h.fw.wire_rc_stats().bad_icrc, 0);
    let mut bad = good.clone();
    bad[70] ^= 1;
    assert!(!receive(&mut h, &bad));
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 5] ^= 0x20;
    assert!(!receive(&mut h, &bad));
    assert_eq!(h.fw.wire_rc_stats().bad_icrc, 2);
    // Another Q_Key, another QPN, a GID the port does not hold: dropped.
    let other_qkey = hand_ud_v4([192, 168, 0, 7], [192, 168, 0, 2], r.qpn, 5, 1, None, &data);
    let other_qp = hand_ud_v4(
        [192, 168, 0, 7],
        [192, 168, 0, 2],
        r.qpn + 1,
        0x1111_1111,
        1,
        None,
        &data,
    );
    let other_gid = hand_ud_v4(
        [192, 168, 0, 7],
        [192, 168, 0, 3],
        r.qpn,
        0x1111_1111,
        1,
        None,
        &data,
    );
    for f in [&other_qkey, &other_qp, &other_gid] {
        assert!(!receive(&mut h, f));
    }
    // Truncated at every length: never taken, never a panic.
    for n in 0..good.len() {
        assert!(!receive(&mut h, &good[..n]));
    }
    assert!(h.poll_all(&mut c).is_empty());
    // Not UD: an RC SEND ONLY to the UD QP is not taken (RC is not carried in packets).
    let mut rc_send = good.clone();
    rc_send[42] = 0x04;
    let n = rc_send.len();
    let icrc = spec_icrc(&rc_send[14..n - 4]);
    rc_send[n - 4..].copy_from_slice(&icrc);
    assert!(!receive(&mut h, &rc_send));
    // The good one again: taken.
    assert!(receive(&mut h, &good));
    assert_eq!(h.poll_all(&mut c).len(), 1);
}

#[test]
fn a_ud_send_without_a_v2_source_entry_or_room_does_not_leave() {
    let mut h = Host::new(LinkLayer::Ethernet, 6);
    h.set_gid(0, gid_v6(1), true);
    h.set_gid(1, gid_v4(1), false);
    let mut c = h.cq(6, false);
    let mut s = h.qp(QPC_ST_UD, &c, &c, (6, 5, 2));
    ud_up(&mut h, &s, 1);
    let src = h.mr(4096, ALL);
    // From the RoCE v1 entry: no v1 frames are built, nothing leaves; UD completes.
    let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 10));
    w.ah = Some(ud_ah(77, 9, gid_v6(2), 0));
    h.post(&mut s, &w);
    run(&mut [&mut h], 0);
    assert_eq!(h.poll_all(&mut c).len(), 1);
    assert!(drain(&mut h).is_empty());
    // Ten sends in one pass: eight fit the queue, two are dropped (counted).
    for _ in 0..10 {
        let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 10));
        w.ah = Some(ud_ah(77, 9, gid_v4(2), 1));
        h.post(&mut s, &w);
    }
    run(&mut [&mut h], 0);
    assert_eq!(h.poll_all(&mut c).len(), 10);
    assert_eq!(drain(&mut h).len(), 8);
    assert_eq!(h.fw.wire_overflow(), 2);
}

#[test]
fn steering_takes_roce_v2_frames_only() {
    let f = hand_ud_v4([10, 0, 0, 1], [10, 0, 0, 2], 5, 1, 1, None, &[1, 2, 3]);
    assert!(crate::fwsim::roce::is_roce_v2(&f));
    // Another UDP port, another protocol, IPv4 with options, ARP, a runt.
    let mut other_port = f.clone();
    other_port[37] = 0xb8;
    let mut tcp = f.clone();
    tcp[23] = 6;
    let mut options = f.clone();
    options[14] = 0x46;
    let mut arp = f.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    for g in [&other_port, &tcp, &options, &arp] {
        assert!(!crate::fwsim::roce::is_roce_v2(g));
    }
    assert!(!crate::fwsim::roce::is_roce_v2(&f[..40]));
}

#[test]
fn uc_sends_off_the_fabric_are_packets_with_the_next_psns_and_are_received() {
    let mut h1 = Host::new(LinkLayer::Ethernet, 7);
    let mut h2 = Host::new(LinkLayer::Ethernet, 8);
    h1.set_gid(0, gid_v4(1), false);
    h2.set_gid(0, gid_v4(2), false);
    let (mut c1, mut c2) = (h1.cq(5, false), h2.cq(5, false));
    let a = h1.qp(QPC_ST_UC, &c1, &c1, (5, 5, 2));
    let mut b = h2.qp(QPC_ST_UC, &c2, &c2, (5, 5, 2));
    let mut pa = Path::to(b.qpn, 0);
    pa.gid = Some(gid_v4(2));
    h1.connect(&a, &pa);
    let mut pb = Path::to(a.qpn, 0);
    pb.gid = Some(gid_v4(1));
    h2.connect(&b, &pb);
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(4096, ALL);
    h1.mem.put(src.bus, &pattern(2048, 6));
    let mut a = a;
    h1.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 500)));
    let mut w = Wr::new(wqe_op::SEND_IMM).sge(src.sge(0, 1024));
    w.imm = 0x5151_0000;
    h1.post(&mut a, &w);
    // Past the 1024-byte path MTU: UC SEND FIRST and LAST.
    h1.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 1025)));
    run(&mut [&mut h1], 0);
    assert_eq!(h1.poll_all(&mut c1).len(), 3);
    let frames = drain(&mut h1);
    assert_eq!(frames.len(), 4);
    let each = [
        (&frames[0], 0x24u8, 0x200u32),
        (&frames[1], 0x25, 0x201),
        (&frames[2], 0x20, 0x202),
        (&frames[3], 0x22, 0x203),
    ];
    for (f, op, psn) in each {
        let bth = &f[42..54];
        assert_eq!(bth[0], op, "UC SEND ONLY (with immediate), FIRST, LAST");
        assert_eq!(bth[8] & 0x80, 0, "no AckReq on UC");
        assert_eq!(u32::from_be_bytes([0, bth[5], bth[6], bth[7]]), b.qpn);
        assert_eq!(u32::from_be_bytes([0, bth[9], bth[10], bth[11]]), psn);
        assert_eq!(&f[26..30], &[192, 168, 0, 1]);
        assert_eq!(&f[30..34], &[192, 168, 0, 2]);
        let n = f.len();
        assert_eq!(&f[n - 4..], &spec_icrc(&f[14..n - 4]));
    }
    assert_eq!(&frames[1][54..58], &0x5151_0000u32.to_be_bytes());
    assert_eq!(&frames[1][58..58 + 1024], &pattern(1024, 6)[..]);
    h2.post_recv(&mut b, &[dst.sge(0, 2048)]);
    h2.post_recv(&mut b, &[dst.sge(2048, 1024)]);
    h2.post_recv(&mut b, &[dst.sge(512, 1025)]);
    for (i, f) in frames.iter().enumerate() {
        assert!(receive(&mut h2, f), "frame {i}");
    }
    let r = h2.poll_all(&mut c2);
    assert_eq!(r.len(), 3);
    assert_eq!((r[2].opcode, r[2].byte_cnt), (cqe_op::RESP_SEND, 1025));
    assert_eq!(h2.mem.get(dst.bus + 512, 1025), pattern(1025, 6));
    assert_eq!((r[0].opcode, r[0].byte_cnt), (cqe_op::RESP_SEND, 500));
    assert_eq!(
        (r[1].opcode, r[1].byte_cnt, r[1].imm),
        (cqe_op::RESP_SEND_IMM, 1024, 0x5151_0000)
    );
    assert_eq!(r[0].flags_rqpn & 0xff_ffff, a.qpn);
    assert_eq!(h2.mem.get(dst.bus, 500), pattern(500, 6));
    assert_eq!(h2.mem.get(dst.bus + 2048, 1024), pattern(1024, 6));
    // A UD QP does not take a UC packet.
    let mut ud = h2.qp(QPC_ST_UD, &c2, &c2, (5, 5, 2));
    ud_up(&mut h2, &ud, 1);
    h2.post_recv(&mut ud, &[dst.sge(0, 2048)]);
    let mut to_ud = frames[0].clone();
    to_ud[47..50].copy_from_slice(&ud.qpn.to_be_bytes()[1..]);
    let n = to_ud.len();
    let icrc = spec_icrc(&to_ud[14..n - 4]);
    to_ud[n - 4..].copy_from_slice(&icrc);
    assert!(!receive(&mut h2, &to_ud));
}

/// QP1 on the wire (the CM's MADs with `mad_qps=1`): a GSI QP's send leaves with DETH source
/// QP 1 and the GSI Q_Key to destination QP 1; one to QPN 1 with the GSI Q_Key is taken by
/// the port's GSI QP whatever its number (the CQE's source QP 1), another Q_Key dropped.
#[test]
fn gsi_qp1_mads_leave_and_arrive_as_qpn_1() {
    const GSI_QKEY: u32 = 0x8001_0000;
    let mut h1 = Host::new(LinkLayer::Ethernet, 7);
    let mut h2 = Host::new(LinkLayer::Ethernet, 8);
    h1.set_gid(1, gid_v4(1), false);
    h2.set_gid(1, gid_v4(2), false);
    let (mut c1, mut c2) = (h1.cq(5, false), h2.cq(5, false));
    let mut g1 = h1.qp(QPC_ST_QP1, &c1, &c1, (5, 5, 2));
    let mut g2 = h2.qp(QPC_ST_QP1, &c2, &c2, (5, 5, 2));
    assert_ne!(g2.qpn, 1);
    ud_up(&mut h1, &g1, GSI_QKEY);
    ud_up(&mut h2, &g2, GSI_QKEY);
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(4096, ALL);
    h1.mem.put(src.bus, &pattern(256, 3));
    let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 256));
    w.ah = Some(ud_ah(1, GSI_QKEY, gid_v4(2), 1));
    h1.post(&mut g1, &w);
    run(&mut [&mut h1], 0);
    assert_eq!(h1.poll_all(&mut c1).len(), 1);
    let frames = drain(&mut h1);
    assert_eq!(frames.len(), 1);
    let f = &frames[0];
    assert_eq!(
        u32::from_be_bytes([0, f[47], f[48], f[49]]),
        1,
        "BTH dest QP 1"
    );
    assert_eq!(&f[54..58], &GSI_QKEY.to_be_bytes(), "DETH Q_Key");
    assert_eq!(
        u32::from_be_bytes([0, f[59], f[60], f[61]]),
        1,
        "DETH source QP 1"
    );
    h2.post_recv(&mut g2, &[dst.sge(0, 256 + 40)]);
    let other = hand_ud_v4(
        [192, 168, 0, 1],
        [192, 168, 0, 2],
        1,
        0x1111,
        1,
        None,
        &[1; 8],
    );
    assert!(!receive(&mut h2, &other));
    assert!(receive(&mut h2, f));
    let r = h2.poll_all(&mut c2);
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].opcode, r[0].byte_cnt), (cqe_op::RESP_SEND, 256 + 40));
    assert_eq!(r[0].flags_rqpn & 0x00ff_ffff, 1);
    assert_eq!(h2.mem.get(dst.bus + 40, 256), pattern(256, 3));
}

/// A UD SEND to QPN 0xffffff for a group (239.1.2.3) reaches the QPs attached to it
/// (`mcg.rs`) and is dropped by a function with none.
#[test]
fn a_multicast_packet_reaches_the_attached_qps() {
    let mut h = Host::new(LinkLayer::Ethernet, 5);
    h.set_gid(1, gid_v4(2), false);
    let mut c = h.cq(5, false);
    let mut r = h.qp(QPC_ST_UD, &c, &c, (5, 5, 2));
    ud_up(&mut h, &r, 0x0123_4567);
    let dst = h.mr(8192, ALL);
    for i in 0..4 {
        h.post_recv(&mut r, &[dst.sge(i * 1024, 1024)]);
    }
    let data = pattern(100, 3);
    let f = hand_ud_v4(
        [192, 168, 0, 7],
        [239, 1, 2, 3],
        0x00ff_ffff,
        0x0123_4567,
        0x4321,
        None,
        &data,
    );
    assert!(!receive(&mut h, &f), "no QP attached: dropped");
    let mut mgid = [0u8; 16];
    mgid[10..].copy_from_slice(&[0xff, 0xff, 239, 1, 2, 3]);
    h.fw.mcg.attach(mgid, r.qpn).unwrap();
    assert!(receive(&mut h, &f));
    let rc = h.poll_all(&mut c);
    assert_eq!(rc.len(), 1);
    assert_eq!(rc[0].byte_cnt as usize, 40 + data.len());
}
