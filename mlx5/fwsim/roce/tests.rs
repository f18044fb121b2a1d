// SPDX-License-Identifier: GPL-2.0

//! Host tests of the RoCE v2 codec: a congestion notification packet captured from a
//! ConnectX-4 Lx (hardware-computed ICRC), every opcode built and checked against an ICRC
//! computed here independently from the specification (a bitwise CRC-32 over the packet with
//! the variant fields masked, IBA Vol 1 7.8.1 and Annex A17.3.3), and malformed frames.

use std::vec;
use std::vec::Vec;

use super::opcode as o;
use super::*;

/// CRC-32 (IEEE 802.3) bit by bit: initial all ones, reflected, final complement.
fn crc32_ieee(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let lsb = crc & 1;
            crc >>= 1;
            if lsb != 0 {
                crc ^= 0xedb8_8320;
            }
        }
    }
    !crc
}

#[test]
fn test_crc_matches_the_standard_check_value() {
    assert_eq!(crc32_ieee(b"123456789"), 0xcbf4_3926);
}

/// The ICRC of a RoCE v2 frame from the specification: the CRC over a masked LRH (8 bytes
/// of ones), the IP header, UDP header and BTH with their variant fields set to ones, and the
/// rest of the packet up to the ICRC; transmitted least significant byte first.
fn spec_icrc(frame: &[u8]) -> [u8; 4] {
    let mut l2 = 12;
    if frame[l2..l2 + 2] == [0x81, 0x00] {
        l2 += 4;
    }
    let v6 = frame[l2..l2 + 2] == [0x86, 0xdd];
    let l3 = l2 + 2;
    let ip_len = if v6 { 40 } else { 20 };
    let mut m = vec![0xffu8; 8];
    m.extend_from_slice(&frame[l3..frame.len() - 4]);
    let ip = 8;
    if v6 {
        m[ip] |= 0x0f; // traffic class (low nibble of byte 0)
        m[ip + 1] = 0xff; // traffic class, flow label
        m[ip + 2] = 0xff;
        m[ip + 3] = 0xff;
        m[ip + 7] = 0xff; // hop limit
    } else {
        m[ip + 1] = 0xff; // type of service
        m[ip + 8] = 0xff; // time to live
        m[ip + 10] = 0xff; // header checksum
        m[ip + 11] = 0xff;
    }
    let udp = ip + ip_len;
    m[udp + 6] = 0xff; // UDP checksum
    m[udp + 7] = 0xff;
    m[udp + 8 + 4] = 0xff; // BTH: FECN, BECN, reserved
    crc32_ieee(&m).to_le_bytes()
}

/// A CNP (opcode 0x81) captured on a ConnectX-4 Lx, as published with scapy's RoCE tests
/// (`test/contrib/roce.uts`): the adapter computed its IPv4 checksum and ICRC.
const CX4_CNP: [u8; 74] = [
    0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00, 0x45, 0xc2,
    0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00,
    0x12, 0x01, 0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff, 0xff, 0x40, 0x00,
    0x01, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd, 0x00, 0x2a,
];

#[test]
fn test_hardware_cnp_parses_and_rebuilds_byte_for_byte() {
    assert_eq!(spec_icrc(&CX4_CNP), [0x82, 0xfd, 0x00, 0x2a]);
    let p = parse(&CX4_CNP).expect("the captured CNP is valid");
    let h = p.headers;
    assert_eq!(h.eth.dst, [0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2]);
    assert_eq!(h.eth.vlan, None);
    assert_eq!(
        h.ip,
        Ip::V4 {
            src: [10, 0, 17, 1],
            dst: [10, 0, 18, 1],
            tos: 0xc2,
            ttl: 64,
            id: 0x718c,
            df: true
        }
    );
    assert_eq!(h.udp_src, 0);
    assert_eq!(h.bth.opcode, 0x81);
    assert!(h.bth.becn && !h.bth.fecn);
    assert_eq!((h.bth.pkey, h.bth.dest_qp, h.bth.psn), (0xffff, 0x118, 0));
    assert_eq!(p.payload, &[0u8; 16]);
    let mut out = [0u8; 128];
    let n = build(&h, p.payload, &mut out).expect("rebuild");
    assert_eq!(&out[..n], &CX4_CNP[..]);
}

fn v4() -> Ip {
    Ip::V4 {
        src: [192, 168, 7, 1],
        dst: [192, 168, 7, 2],
        tos: 0,
        ttl: 64,
        id: 0x1234,
        df: true,
    }
}

fn v6() -> Ip {
    Ip::V6 {
        src: [
            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55,
        ],
        dst: [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
        traffic_class: 0x68,
        flow_label: 0xabcde,
        hop_limit: 64,
    }
}

/// Headers for `opcode` with every extension header the opcode names, with distinct values.
fn headers(opcode: u8, ip: Ip, vlan: Option<u16>) -> Headers {
    let l = Layout::of(opcode).expect("known opcode");
    Headers {
        eth: Eth {
            dst: [0x02, 0, 0, 0, 0, 2],
            src: [0x02, 0, 0, 0, 0, 1],
            vlan,
        },
        ip,
        udp_src: 0xc0de,
        bth: Bth {
            opcode,
            solicited: true,
            mig_req: true,
            pad: 0,
            pkey: 0xffff,
            fecn: false,
            becn: false,
            dest_qp: 0x00ab_cdef,
            ack_req: true,
            psn: 0x00ff_fffe,
        },
        xrceth: l.xrceth.then_some(0x77),
        deth: l.deth.then_some(Deth {
            qkey: 0x1111_1111,
            src_qp: 0x12_3456,
        }),
        reth: l.reth.then_some(Reth {
            va: 0x1122_3344_5566_7788,
            rkey: 0xdead_beef,
            dma_len: 5000,
        }),
        atomic_eth: l.atomic_eth.then_some(AtomicEth {
            va: 0x1000,
            rkey: 0x42,
            swap_add: 7,
            compare: 9,
        }),
        aeth: l.aeth.then_some(Aeth {
            syndrome: 0x1f,
            msn: 0x10_0001,
        }),
        atomic_ack_eth: l.atomic_ack_eth.then_some(0x0102_0304_0506_0708),
        imm: l.imm.then_some([1, 2, 3, 4]),
        ieth: l.ieth.then_some(0x5555),
    }
}

/// Every opcode the codec knows.
fn opcodes() -> Vec<u8> {
    (0..=255u8).filter(|&op| Layout::of(op).is_some()).collect()
}

#[test]
fn test_opcode_table_covers_rc_uc_ud_xrc_and_cnp() {
    let ops = opcodes();
    // RC 0x00-0x14, 0x16, 0x17 (23); UC 0x20-0x2b (12); UD 0x64, 0x65; CNP 0x81; XRC as RC.
    assert_eq!(ops.len(), 23 + 12 + 2 + 1 + 23);
    for op in [
        0x15, 0x18, 0x1c, 0x2c, 0x40, 0x60, 0x66, 0x80, 0x82, 0xb5, 0xc0, 0xff,
    ] {
        assert_eq!(Layout::of(op), None, "{op:#x}");
    }
    // Extension header sizes as the IBA tables give them for a few opcodes (rxe_opcode.c).
    let ext = |op: u8| Layout::of(op).map(|l| l.ext_len());
    assert_eq!(ext(o::RC | o::WRITE_ONLY_IMM), Some(20));
    assert_eq!(ext(o::RC | o::COMPARE_SWAP), Some(28));
    assert_eq!(ext(o::RC | o::ATOMIC_ACKNOWLEDGE), Some(12));
    assert_eq!(ext(o::UD | o::SEND_ONLY_IMM), Some(12));
    assert_eq!(ext(o::XRC | o::SEND_ONLY), Some(4));
    let xrc_ack = Layout::of(o::XRC | o::ACKNOWLEDGE).expect("known");
    assert!(xrc_ack.aeth && !xrc_ack.xrceth, "responses carry no XRCETH");
    assert_eq!(ext(o::XRC | o::COMPARE_SWAP), Some(32));
    // The middle and plain first/last packets carry only the payload.
    for op in [
        o::SEND_FIRST,
        o::SEND_MIDDLE,
        o::SEND_LAST,
        o::WRITE_MIDDLE,
        o::WRITE_LAST,
    ] {
        for t in [o::RC, o::UC] {
            assert_eq!(ext(t | op), Some(0), "{:#x}", t | op);
        }
    }
    assert_eq!(ext(o::RC | o::READ_RESPONSE_MIDDLE), Some(0));
    assert_eq!(ext(o::UC | o::READ_RESPONSE_MIDDLE), None);
}

#[test]
fn test_every_opcode_round_trips_with_the_spec_icrc() {
    let mut out = vec![0u8; 2048];
    let mut count = 0;
    for op in opcodes() {
        let l = Layout::of(op).expect("known");
        for ip in [v4(), v6()] {
            for vlan in [None, Some(0x2005)] {
                let lens: &[usize] = if op & 0xe0 == o::CNP {
                    &[16]
                } else if l.payload {
                    &[0, 1, 2, 3, 4, 5, 1024]
                } else {
                    &[0]
                };
                for &len in lens {
                    let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                    let h = headers(op, ip, vlan);
                    let n = build(&h, &payload, &mut out).expect("build");
                    let frame = &out[..n];
                    assert_eq!(n, frame_len(&h, len).expect("len"));
                    assert_eq!(n % 4, (if vlan.is_some() { 18 } else { 14 }) % 4);
                    assert_eq!(
                        &frame[n - 4..],
                        &spec_icrc(frame),
                        "opcode {op:#x} len {len}"
                    );
                    let p = parse(frame).expect("parse what was built");
                    let mut want = h;
                    want.bth.pad = (len.wrapping_neg() & 3) as u8;
                    assert_eq!(p.headers, want);
                    assert_eq!(p.payload, &payload[..]);
                    count += 1;
                }
            }
        }
    }
    assert!(count > 400);
}

#[test]
fn test_ipv4_header_and_udp_are_what_rxe_sends() {
    let h = headers(o::RC | o::SEND_ONLY, v4(), None);
    let mut out = [0u8; 128];
    let n = build(&h, b"hello", &mut out).expect("build");
    let f = &out[..n];
    // 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 5 payload + 3 pad + 4 ICRC.
    assert_eq!(n, 66);
    assert_eq!(&f[12..14], &[0x08, 0x00]);
    assert_eq!(u16::from_be_bytes([f[16], f[17]]), 52);
    assert_eq!(ipv4_checksum(&f[14..34]), 0);
    assert_eq!(&f[36..38], &4791u16.to_be_bytes());
    assert_eq!(u16::from_be_bytes([f[38], f[39]]), 32);
    assert_eq!(&f[40..42], &[0, 0], "UDP checksum 0");
    assert_eq!(f[43] >> 4 & 3, 3, "pad count");
    assert_eq!(&f[59..62], &[0, 0, 0], "pad bytes");
}

#[test]
fn test_masked_fields_do_not_change_the_icrc() {
    let mut out = [0u8; 128];
    for ip in [v4(), v6()] {
        let n = build(&headers(o::RC | o::SEND_ONLY, ip, None), b"data", &mut out).expect("b");
        let mut f = out[..n].to_vec();
        if matches!(ip, Ip::V4 { .. }) {
            f[15] = 0x03; // TOS (ECN CE)
            f[22] = 1; // TTL
            f[24..26].fill(0);
            let c = ipv4_checksum(&f[14..34]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
        } else {
            f[14] = 0x6f; // traffic class, flow label
            f[15] = 0x00;
            f[21] = 1; // hop limit
        }
        let udp = if matches!(ip, Ip::V4 { .. }) { 34 } else { 54 };
        f[udp + 6..udp + 8].copy_from_slice(&[0x12, 0x34]); // UDP checksum
        f[udp + 8 + 4] = 0xc0; // FECN, BECN
        let p = parse(&f).expect("masked fields are outside the ICRC");
        assert!(p.headers.bth.fecn && p.headers.bth.becn);
        // Every byte under the ICRC that is not masked is covered: flipping it fails the
        // ICRC (or an earlier check).
        let masked = |i: usize| {
            if matches!(ip, Ip::V4 { .. }) {
                matches!(i, 15 | 22 | 24 | 25)
            } else {
                matches!(i, 14..=17 | 21)
            }
        };
        for i in 14..f.len() - 4 {
            if masked(i) || (udp + 6..udp + 8).contains(&i) || i == udp + 12 {
                continue;
            }
            let mut g = f.clone();
            g[i] ^= 0x01;
            assert!(parse(&g).is_err(), "byte {i} not covered");
        }
    }
}

#[test]
fn test_every_truncation_is_rejected_as_short_or_bad_length() {
    let mut out = [0u8; 256];
    for op in [
        o::RC | o::WRITE_ONLY_IMM,
        o::UD | o::SEND_ONLY,
        o::RC | o::ATOMIC_ACKNOWLEDGE,
    ] {
        for ip in [v4(), v6()] {
            let n = build(&headers(op, ip, Some(1)), b"abcdef", &mut out)
                .unwrap_or_else(|_| build(&headers(op, ip, Some(1)), b"", &mut out).expect("b"));
            for cut in 0..n {
                let e = parse(&out[..cut]).expect_err("truncated");
                assert!(matches!(e, RoceError::Short { .. }), "cut {cut}: {e}");
            }
        }
    }
}

fn sample() -> Vec<u8> {
    let mut out = [0u8; 128];
    let n = build(
        &headers(o::RC | o::SEND_ONLY, v4(), None),
        b"12345678",
        &mut out,
    )
    .expect("b");
    out[..n].to_vec()
}

/// Rewrites the IPv4 checksum and the ICRC of a frame edited by a test.
fn reseal(f: &mut [u8]) {
    f[24..26].fill(0);
    let c = ipv4_checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    let n = f.len();
    let crc = spec_icrc(f);
    f[n - 4..].copy_from_slice(&crc);
}

#[test]
fn test_malformed_frames_get_their_error() {
    let good = sample();
    assert!(parse(&good).is_ok());
    let mut padded = good.clone();
    padded.extend_from_slice(&[0xee; 10]);
    assert!(
        parse(&padded).is_ok(),
        "Ethernet padding after the IP packet is ignored"
    );

    let edit = |f: &dyn Fn(&mut Vec<u8>), seal: bool| {
        let mut v = good.clone();
        f(&mut v);
        if seal {
            reseal(&mut v);
        }
        parse(&v).expect_err("malformed")
    };
    assert_eq!(edit(&|v| v[12] = 0x09, false), RoceError::NotRoce);
    assert_eq!(edit(&|v| v[14] = 0x65, true), RoceError::BadIpVersion(6));
    assert_eq!(edit(&|v| v[14] = 0x46, true), RoceError::IpUnsupported);
    assert_eq!(
        edit(&|v| v[20] = 0x20, true),
        RoceError::IpUnsupported,
        "more fragments"
    );
    assert_eq!(edit(&|v| v[23] = 6, true), RoceError::NotRoce, "TCP");
    assert_eq!(edit(&|v| v[24] ^= 1, false), RoceError::BadIpChecksum);
    assert_eq!(
        edit(&|v| v[37] = 0xb8, true),
        RoceError::NotRoce,
        "port 4792"
    );
    assert_eq!(
        edit(&|v| v[39] -= 4, true),
        RoceError::BadLength,
        "UDP length"
    );
    assert!(
        matches!(edit(&|v| v[17] += 4, true), RoceError::Short { .. }),
        "IP length"
    );
    assert_eq!(edit(&|v| v[43] |= 0x01, true), RoceError::BadTver(1));
    assert_eq!(edit(&|v| v[42] = 0x15, true), RoceError::BadOpcode(0x15));
    // The payload and pad bytes together are 4-byte aligned whatever the pad count, so a pad
    // count is wrong only where it does not fit: on a packet without payload.
    let mut ack = [0u8; 128];
    let n = build(&headers(o::RC | o::ACKNOWLEDGE, v4(), None), b"", &mut ack).expect("b");
    let mut ack = ack[..n].to_vec();
    ack[43] |= 0x30;
    reseal(&mut ack);
    assert_eq!(parse(&ack), Err(RoceError::BadLength), "pad count");
    assert_eq!(
        edit(&|v| v[42] = o::ACKNOWLEDGE, true),
        RoceError::BadLength,
        "ACK payload"
    );
    let e = edit(&|v| v[42] = o::READ_REQUEST, true);
    assert!(
        matches!(e, RoceError::Short { .. }),
        "RETH past the end: {e}"
    );
    let e = edit(&|v| v[55] ^= 0x80, false);
    assert!(matches!(e, RoceError::BadIcrc { .. }), "{e}");
    let n = good.len();
    let e = edit(&|v| v[n - 1] ^= 1, false);
    assert!(matches!(e, RoceError::BadIcrc { .. }));
    // Every error has a message.
    let mut s = std::string::String::new();
    core::fmt::write(&mut s, format_args!("{e}")).expect("fmt");
    assert!(s.starts_with("ICRC"));
}

#[test]
fn test_build_refuses_headers_that_do_not_match_the_opcode() {
    let mut out = [0u8; 256];
    let mut h = headers(o::RC | o::SEND_ONLY, v4(), None);
    h.reth = Some(Reth::default());
    assert_eq!(build(&h, b"", &mut out), Err(RoceError::BadHeaders));
    let h = headers(o::RC | o::WRITE_ONLY, v4(), None);
    assert_eq!(
        build(&Headers { reth: None, ..h }, b"", &mut out),
        Err(RoceError::BadHeaders)
    );
    let h = headers(o::RC | o::ACKNOWLEDGE, v4(), None);
    assert_eq!(build(&h, b"x", &mut out), Err(RoceError::BadHeaders));
    let mut h = headers(o::RC | o::SEND_ONLY, v4(), None);
    h.bth.psn = 0x0100_0000;
    assert_eq!(build(&h, b"", &mut out), Err(RoceError::BadHeaders));
    let h = headers(o::RC | o::SEND_ONLY, v4(), None);
    assert_eq!(
        build(&h, b"1234", &mut out[..40]),
        Err(RoceError::NoRoom { need: 62 })
    );
    let h = Headers {
        bth: Bth {
            opcode: 0x40,
            ..h.bth
        },
        ..h
    };
    assert_eq!(build(&h, b"", &mut out), Err(RoceError::BadOpcode(0x40)));
    let big = vec![0u8; 70000];
    let mut out = vec![0u8; 70100];
    let h = headers(o::RC | o::SEND_ONLY, v4(), None);
    assert_eq!(build(&h, &big, &mut out), Err(RoceError::BadHeaders));
}

#[test]
fn test_random_corruption_never_panics() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut out = [0u8; 256];
    let ops = opcodes();
    for _ in 0..20000 {
        let r = next();
        let op = ops[(r % ops.len() as u64) as usize];
        let ip = if r & 0x100 != 0 { v4() } else { v6() };
        let payload: &[u8] = if op & 0xe0 == o::CNP {
            &[0; 16]
        } else {
            b"corrupt me"
        };
        let n = build(&headers(op, ip, None), payload, &mut out)
            .or_else(|_| build(&headers(op, ip, None), b"", &mut out))
            .expect("build");
        let mut f = out[..n].to_vec();
        for _ in 0..(r >> 12) % 4 + 1 {
            let k = next();
            let i = (k % n as u64) as usize;
            f[i] ^= (k >> 32) as u8 | 1;
        }
        let cut = if r & 0x200 != 0 {
            (next() % n as u64) as usize
        } else {
            n
        };
        let _ = parse(&f[..cut]);
    }
}
