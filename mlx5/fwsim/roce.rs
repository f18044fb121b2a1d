// SPDX-License-Identifier: GPL-2.0

//! RoCE v2 packets (IBA Vol 1 chapter 9 and Annex A17): Ethernet (with at most one 802.1Q
//! tag), IPv4 or IPv6, UDP to port 4791, the BTH, its extension headers in the order the
//! opcode names them (XRCETH, DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH), the
//! payload, 0-3 pad bytes and the ICRC ([`icrc`]).
//!
//! [`build`] writes a frame from [`Headers`] and a payload; [`parse`] checks a received frame
//! and returns its headers and payload, or a [`RoceError`] saying what is wrong with it. Pure
//! code: no allocation, nothing a peer sends can panic it. What upstream `rdma_rxe` expects of
//! a peer (`rxe_recv.c`, `rxe_hdr.h`, `rxe_opcode.c`) is what is built and accepted: UDP
//! checksum 0, an IPv4 header without options and unfragmented, TVer 0.

#[path = "roce/icrc.rs"]
mod icrc;

#[cfg(test)]
#[path = "roce/tests.rs"]
mod tests;

use core::fmt;

/// The RoCE v2 UDP destination port (IANA).
pub(crate) const ROCE_V2_PORT: u16 = 4791;
/// EtherTypes.
pub(crate) const ETH_P_IP: u16 = 0x0800;
pub(crate) const ETH_P_IPV6: u16 = 0x86dd;
pub(crate) const ETH_P_8021Q: u16 = 0x8100;

const ETH_LEN: usize = 14;
const VLAN_LEN: usize = 4;
const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;
const UDP_LEN: usize = 8;
const BTH_LEN: usize = 12;
const ICRC_LEN: usize = 4;
const IPPROTO_UDP: u8 = 17;

/// Extension header lengths (IBA 9.3).
const XRCETH_LEN: usize = 4;
const DETH_LEN: usize = 8;
const RETH_LEN: usize = 16;
const ATOMIC_ETH_LEN: usize = 28;
const AETH_LEN: usize = 4;
const ATOMIC_ACK_ETH_LEN: usize = 8;
const IMM_LEN: usize = 4;
const IETH_LEN: usize = 4;
/// A CNP's 16 reserved bytes (Annex A17.9.3), carried as its payload.
const CNP_PAYLOAD_LEN: usize = 16;

/// Opcodes (IBA Table 38): the transport in bits 7-5, the operation in bits 4-0.
pub(crate) mod opcode {
    pub(crate) const RC: u8 = 0x00;
    pub(crate) const UC: u8 = 0x20;
    pub(crate) const UD: u8 = 0x60;
    pub(crate) const CNP: u8 = 0x80;
    pub(crate) const XRC: u8 = 0xa0;

    pub(crate) const SEND_FIRST: u8 = 0x00;
    pub(crate) const SEND_MIDDLE: u8 = 0x01;
    pub(crate) const SEND_LAST: u8 = 0x02;
    pub(crate) const SEND_LAST_IMM: u8 = 0x03;
    pub(crate) const SEND_ONLY: u8 = 0x04;
    pub(crate) const SEND_ONLY_IMM: u8 = 0x05;
    pub(crate) const WRITE_FIRST: u8 = 0x06;
    pub(crate) const WRITE_MIDDLE: u8 = 0x07;
    pub(crate) const WRITE_LAST: u8 = 0x08;
    pub(crate) const WRITE_LAST_IMM: u8 = 0x09;
    pub(crate) const WRITE_ONLY: u8 = 0x0a;
    pub(crate) const WRITE_ONLY_IMM: u8 = 0x0b;
    pub(crate) const READ_REQUEST: u8 = 0x0c;
    pub(crate) const READ_RESPONSE_FIRST: u8 = 0x0d;
    pub(crate) const READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub(crate) const READ_RESPONSE_LAST: u8 = 0x0f;
    pub(crate) const READ_RESPONSE_ONLY: u8 = 0x10;
    pub(crate) const ACKNOWLEDGE: u8 = 0x11;
    pub(crate) const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
    pub(crate) const COMPARE_SWAP: u8 = 0x13;
    pub(crate) const FETCH_ADD: u8 = 0x14;
    pub(crate) const SEND_LAST_INV: u8 = 0x16;
    pub(crate) const SEND_ONLY_INV: u8 = 0x17;
    /// The congestion notification packet (`0x81`, Annex A17.9.3).
    pub(crate) const CNP_OP: u8 = 0x01;
}

/// What an opcode carries after the BTH, in wire order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) xrceth: bool,
    pub(crate) deth: bool,
    pub(crate) reth: bool,
    pub(crate) atomic_eth: bool,
    pub(crate) aeth: bool,
    pub(crate) atomic_ack_eth: bool,
    pub(crate) imm: bool,
    pub(crate) ieth: bool,
    /// The packet may carry a payload.
    pub(crate) payload: bool,
}

impl Layout {
    /// The extension headers' length.
    pub(crate) const fn ext_len(&self) -> usize {
        (if self.xrceth { XRCETH_LEN } else { 0 })
            + (if self.deth { DETH_LEN } else { 0 })
            + (if self.reth { RETH_LEN } else { 0 })
            + (if self.atomic_eth { ATOMIC_ETH_LEN } else { 0 })
            + (if self.aeth { AETH_LEN } else { 0 })
            + (if self.atomic_ack_eth {
                ATOMIC_ACK_ETH_LEN
            } else {
                0
            })
            + (if self.imm { IMM_LEN } else { 0 })
            + (if self.ieth { IETH_LEN } else { 0 })
    }

    /// The layout of `opcode`, `None` for an opcode this codec does not know (RD, the reserved
    /// ones, and the FLUSH/ATOMIC WRITE extensions).
    pub(crate) fn of(opcode: u8) -> Option<Layout> {
        use self::opcode as o;
        let transport = opcode & 0xe0;
        let op = opcode & 0x1f;
        if transport == o::CNP {
            return (op == o::CNP_OP).then_some(Layout {
                payload: true,
                ..Layout::default()
            });
        }
        let max = match transport {
            o::RC | o::XRC => o::SEND_ONLY_INV,
            o::UC => o::WRITE_ONLY_IMM,
            o::UD => o::SEND_ONLY_IMM,
            _ => return None,
        };
        if op > max || op == 0x15 || (transport == o::UD && op < o::SEND_ONLY) {
            return None;
        }
        let mut l = Layout {
            xrceth: transport == o::XRC,
            deth: transport == o::UD,
            payload: true,
            ..Layout::default()
        };
        match op {
            o::SEND_LAST_IMM | o::SEND_ONLY_IMM | o::WRITE_LAST_IMM => l.imm = true,
            o::WRITE_FIRST | o::WRITE_ONLY => l.reth = true,
            o::WRITE_ONLY_IMM => {
                l.reth = true;
                l.imm = true;
            }
            o::READ_REQUEST => {
                l.reth = true;
                l.payload = false;
            }
            o::READ_RESPONSE_FIRST | o::READ_RESPONSE_LAST | o::READ_RESPONSE_ONLY => l.aeth = true,
            o::ACKNOWLEDGE => {
                l.aeth = true;
                l.payload = false;
            }
            o::ATOMIC_ACKNOWLEDGE => {
                l.aeth = true;
                l.atomic_ack_eth = true;
                l.payload = false;
            }
            o::COMPARE_SWAP | o::FETCH_ADD => {
                l.atomic_eth = true;
                l.payload = false;
            }
            o::SEND_LAST_INV | o::SEND_ONLY_INV => l.ieth = true,
            _ => {}
        }
        // XRC responses (READ responses, ACKs) carry no XRCETH: only requests name an SRQ.
        if transport == o::XRC && matches!(op, o::READ_RESPONSE_FIRST..=o::ATOMIC_ACKNOWLEDGE) {
            l.xrceth = false;
        }
        Some(l)
    }
}

/// The Ethernet header; `vlan` is the 802.1Q TCI of a tagged frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Eth {
    pub(crate) dst: [u8; 6],
    pub(crate) src: [u8; 6],
    pub(crate) vlan: Option<u16>,
}

/// The IP header's fields a RoCE v2 sender chooses (the lengths, protocol and IPv4 checksum
/// follow from the packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ip {
    V4 {
        src: [u8; 4],
        dst: [u8; 4],
        tos: u8,
        ttl: u8,
        id: u16,
        /// The don't-fragment flag (rxe sets it: `IP_DF` in `prepare4()`).
        df: bool,
    },
    V6 {
        src: [u8; 16],
        dst: [u8; 16],
        traffic_class: u8,
        flow_label: u32,
        hop_limit: u8,
    },
}

/// The base transport header (IBA 9.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bth {
    pub(crate) opcode: u8,
    pub(crate) solicited: bool,
    pub(crate) mig_req: bool,
    /// The pad count: [`build`] sets it from the payload length.
    pub(crate) pad: u8,
    pub(crate) pkey: u16,
    pub(crate) fecn: bool,
    pub(crate) becn: bool,
    /// 24 bits.
    pub(crate) dest_qp: u32,
    pub(crate) ack_req: bool,
    /// 24 bits.
    pub(crate) psn: u32,
}

/// RDMA extended transport header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reth {
    pub(crate) va: u64,
    pub(crate) rkey: u32,
    pub(crate) dma_len: u32,
}

/// ACK extended transport header: the syndrome (ACK with credits, RNR NAK with its timer,
/// NAK with its code) and the 24-bit MSN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Aeth {
    pub(crate) syndrome: u8,
    pub(crate) msn: u32,
}

/// Atomic extended transport header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AtomicEth {
    pub(crate) va: u64,
    pub(crate) rkey: u32,
    pub(crate) swap_add: u64,
    pub(crate) compare: u64,
}

/// Datagram extended transport header: the Q_Key and the 24-bit source QP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Deth {
    pub(crate) qkey: u32,
    pub(crate) src_qp: u32,
}

/// A RoCE v2 packet's headers. The extension headers present must be exactly those the
/// BTH opcode's [`Layout`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Headers {
    pub(crate) eth: Eth,
    pub(crate) ip: Ip,
    pub(crate) udp_src: u16,
    pub(crate) bth: Bth,
    /// The XRC SRQ number (24 bits).
    pub(crate) xrceth: Option<u32>,
    pub(crate) deth: Option<Deth>,
    pub(crate) reth: Option<Reth>,
    pub(crate) atomic_eth: Option<AtomicEth>,
    pub(crate) aeth: Option<Aeth>,
    /// The original remote data of an atomic.
    pub(crate) atomic_ack_eth: Option<u64>,
    /// Immediate data, in network order as it is on the wire.
    pub(crate) imm: Option<[u8; 4]>,
    /// The R_Key to invalidate.
    pub(crate) ieth: Option<u32>,
}

/// Why a frame is not a valid RoCE v2 packet, or a packet cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RoceError {
    /// The frame ends inside a header: `need` bytes, `have` bytes.
    Short { need: usize, have: usize },
    /// Not IPv4/IPv6 UDP to port 4791 (another EtherType, protocol or port).
    NotRoce,
    /// The IP version field disagrees with the EtherType.
    BadIpVersion(u8),
    /// An IPv4 header with options, a fragment, or IPv6 extension headers.
    IpUnsupported,
    /// The IPv4 header checksum is wrong.
    BadIpChecksum,
    /// The IP, UDP lengths or the pad count disagree with the frame, or the payload is not
    /// padded to 4 bytes, or present on an opcode that carries none.
    BadLength,
    /// The BTH transport header version is not 0.
    BadTver(u8),
    /// An opcode this codec does not know.
    BadOpcode(u8),
    /// The ICRC does not match the packet.
    BadIcrc { expected: [u8; 4], found: [u8; 4] },
    /// [`build`]: the headers do not match the opcode's layout, or a field is out of range.
    BadHeaders,
    /// [`build`]: the output buffer is too small for the packet.
    NoRoom { need: usize },
}

impl fmt::Display for RoceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Short { need, have } => write!(f, "truncated: {have} bytes, headers need {need}"),
            Self::NotRoce => f.write_str("not a RoCE v2 packet (UDP port 4791 over IP)"),
            Self::BadIpVersion(v) => write!(f, "IP version {v} does not match the EtherType"),
            Self::IpUnsupported => f.write_str("IP options, fragment or extension headers"),
            Self::BadIpChecksum => f.write_str("bad IPv4 header checksum"),
            Self::BadLength => f.write_str("IP/UDP length or pad count inconsistent"),
            Self::BadTver(v) => write!(f, "BTH transport version {v} (not 0)"),
            Self::BadOpcode(op) => write!(f, "unknown BTH opcode {op:#04x}"),
            Self::BadIcrc { expected, found } => {
                write!(f, "ICRC {found:02x?}, expected {expected:02x?}")
            }
            Self::BadHeaders => f.write_str("extension headers do not match the opcode"),
            Self::NoRoom { need } => write!(f, "buffer too small: {need} bytes needed"),
        }
    }
}

/// A parsed packet: its headers and its payload (without the pad bytes and ICRC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Packet<'a> {
    pub(crate) headers: Headers,
    pub(crate) payload: &'a [u8],
}

/// The RFC 1071 checksum of an IPv4 header (its checksum field included).
fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum = 0u32;
    for w in h.chunks(2) {
        let hi = u32::from(w[0]) << 8;
        sum += hi | w.get(1).map_or(0, |&b| u32::from(b));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A byte cursor that fails with [`RoceError::Short`] instead of reading past its end.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], RoceError> {
        let end = self.pos + n;
        let s = self.buf.get(self.pos..end).ok_or(RoceError::Short {
            need: end,
            have: self.buf.len(),
        })?;
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RoceError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u16(&mut self) -> Result<u16, RoceError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, RoceError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, RoceError> {
        Ok(u64::from_be_bytes(self.array()?))
    }
}

/// A byte cursor over the output buffer; [`build`] checks the room first.
struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Writer<'_> {
    fn put(&mut self, b: &[u8]) {
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }
}

/// Whether `frame` is addressed as RoCE v2: IPv4 without options or IPv6 (optionally
/// 802.1Q-tagged) carrying UDP to port 4791. A cheap look at the headers for steering (as a
/// NIC's steering rule for RoCE); [`parse`] checks the rest.
pub(crate) fn is_roce_v2(frame: &[u8]) -> bool {
    let at = |i: usize| frame.get(i).copied().unwrap_or(0);
    let be16 = |i: usize| u16::from_be_bytes([at(i), at(i + 1)]);
    let mut l3 = ETH_LEN;
    let mut ethertype = be16(12);
    if ethertype == ETH_P_8021Q {
        ethertype = be16(16);
        l3 += VLAN_LEN;
    }
    let udp = match ethertype {
        ETH_P_IP if at(l3) == 0x45 && at(l3 + 9) == IPPROTO_UDP => l3 + IPV4_LEN,
        ETH_P_IPV6 if at(l3) >> 4 == 6 && at(l3 + 6) == IPPROTO_UDP => l3 + IPV6_LEN,
        _ => return false,
    };
    frame.len() >= udp + UDP_LEN && be16(udp + 2) == ROCE_V2_PORT
}

/// Checks a received Ethernet frame (without FCS; Ethernet padding after the IP packet is
/// ignored) and returns its RoCE v2 headers and payload.
///
/// # Errors
///
/// The first [`RoceError`] found, outermost header first; the ICRC is checked last.
pub(crate) fn parse(frame: &[u8]) -> Result<Packet<'_>, RoceError> {
    let mut r = Reader { buf: frame, pos: 0 };
    let dst = r.array()?;
    let src = r.array()?;
    let mut ethertype = r.u16()?;
    let mut vlan = None;
    if ethertype == ETH_P_8021Q {
        vlan = Some(r.u16()?);
        ethertype = r.u16()?;
    }
    let eth = Eth { dst, src, vlan };
    let l3_start = r.pos;
    let (ip, ip_end, ipv6) = match ethertype {
        ETH_P_IP => {
            let h = r.take(IPV4_LEN)?;
            if h[0] >> 4 != 4 {
                return Err(RoceError::BadIpVersion(h[0] >> 4));
            }
            let frag = u16::from_be_bytes([h[6], h[7]]);
            if h[0] & 0x0f != 5 || frag & 0x3fff != 0 {
                return Err(RoceError::IpUnsupported);
            }
            if h[9] != IPPROTO_UDP {
                return Err(RoceError::NotRoce);
            }
            if ipv4_checksum(h) != 0 {
                return Err(RoceError::BadIpChecksum);
            }
            let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
            let ip = Ip::V4 {
                src: [h[12], h[13], h[14], h[15]],
                dst: [h[16], h[17], h[18], h[19]],
                tos: h[1],
                ttl: h[8],
                id: u16::from_be_bytes([h[4], h[5]]),
                df: frag & 0x4000 != 0,
            };
            if total < IPV4_LEN {
                return Err(RoceError::BadLength);
            }
            (ip, l3_start + total, false)
        }
        ETH_P_IPV6 => {
            let h = r.take(IPV6_LEN)?;
            if h[0] >> 4 != 6 {
                return Err(RoceError::BadIpVersion(h[0] >> 4));
            }
            match h[6] {
                IPPROTO_UDP => {}
                // Hop-by-hop, routing, fragment, ESP, AH, destination options, mobility.
                0 | 43 | 44 | 50 | 51 | 60 | 135 => return Err(RoceError::IpUnsupported),
                _ => return Err(RoceError::NotRoce),
            }
            let mut src = [0u8; 16];
            let mut dst = [0u8; 16];
            src.copy_from_slice(&h[8..24]);
            dst.copy_from_slice(&h[24..40]);
            let ip = Ip::V6 {
                src,
                dst,
                traffic_class: (h[0] << 4) | (h[1] >> 4),
                flow_label: u32::from_be_bytes([0, h[1] & 0x0f, h[2], h[3]]),
                hop_limit: h[7],
            };
            let payload = usize::from(u16::from_be_bytes([h[4], h[5]]));
            (ip, l3_start + IPV6_LEN + payload, true)
        }
        _ => return Err(RoceError::NotRoce),
    };
    if ip_end > frame.len() {
        return Err(RoceError::Short {
            need: ip_end,
            have: frame.len(),
        });
    }
    // Only the IP packet counts from here on; the rest is Ethernet padding.
    let mut r = Reader {
        buf: &frame[..ip_end],
        pos: r.pos,
    };
    let udp_start = r.pos;
    let udp_src = r.u16()?;
    let udp_dst = r.u16()?;
    let udp_len = usize::from(r.u16()?);
    let _udp_csum = r.u16()?;
    if udp_dst != ROCE_V2_PORT {
        return Err(RoceError::NotRoce);
    }
    if udp_start + udp_len != ip_end {
        return Err(RoceError::BadLength);
    }
    let b = r.take(BTH_LEN)?;
    let tver = b[1] & 0x0f;
    if tver != 0 {
        return Err(RoceError::BadTver(tver));
    }
    let bth = Bth {
        opcode: b[0],
        solicited: b[1] & 0x80 != 0,
        mig_req: b[1] & 0x40 != 0,
        pad: (b[1] >> 4) & 3,
        pkey: u16::from_be_bytes([b[2], b[3]]),
        fecn: b[4] & 0x80 != 0,
        becn: b[4] & 0x40 != 0,
        dest_qp: u32::from_be_bytes([0, b[5], b[6], b[7]]),
        ack_req: b[8] & 0x80 != 0,
        psn: u32::from_be_bytes([0, b[9], b[10], b[11]]),
    };
    let layout = Layout::of(bth.opcode).ok_or(RoceError::BadOpcode(bth.opcode))?;
    let xrceth = if layout.xrceth {
        Some(r.u32()? & 0x00ff_ffff)
    } else {
        None
    };
    let deth = if layout.deth {
        Some(Deth {
            qkey: r.u32()?,
            src_qp: r.u32()? & 0x00ff_ffff,
        })
    } else {
        None
    };
    let reth = if layout.reth {
        Some(Reth {
            va: r.u64()?,
            rkey: r.u32()?,
            dma_len: r.u32()?,
        })
    } else {
        None
    };
    let atomic_eth = if layout.atomic_eth {
        Some(AtomicEth {
            va: r.u64()?,
            rkey: r.u32()?,
            swap_add: r.u64()?,
            compare: r.u64()?,
        })
    } else {
        None
    };
    let aeth = if layout.aeth {
        let v = r.u32()?;
        Some(Aeth {
            syndrome: (v >> 24) as u8,
            msn: v & 0x00ff_ffff,
        })
    } else {
        None
    };
    let atomic_ack_eth = if layout.atomic_ack_eth {
        Some(r.u64()?)
    } else {
        None
    };
    let imm = if layout.imm { Some(r.array()?) } else { None };
    let ieth = if layout.ieth { Some(r.u32()?) } else { None };
    let rest = ip_end - r.pos;
    let pad = usize::from(bth.pad);
    // The IP and UDP lengths say where the packet ends; a pad count that does not fit
    // before the ICRC is the packet's inconsistency, not a truncation.
    if rest < pad + ICRC_LEN {
        return Err(RoceError::BadLength);
    }
    let payload_len = rest - pad - ICRC_LEN;
    let cnp = bth.opcode & 0xe0 == opcode::CNP;
    if (payload_len + pad) % 4 != 0
        || (!layout.payload && payload_len + pad != 0)
        || (cnp && payload_len != CNP_PAYLOAD_LEN)
    {
        return Err(RoceError::BadLength);
    }
    let payload = r.take(payload_len)?;
    r.take(pad)?;
    let found: [u8; 4] = r.array()?;
    let expected =
        icrc::icrc(&frame[l3_start..ip_end - ICRC_LEN], ipv6).ok_or(RoceError::Short {
            need: ip_end,
            have: frame.len(),
        })?;
    if found != expected {
        return Err(RoceError::BadIcrc { expected, found });
    }
    Ok(Packet {
        headers: Headers {
            eth,
            ip,
            udp_src,
            bth,
            xrceth,
            deth,
            reth,
            atomic_eth,
            aeth,
            atomic_ack_eth,
            imm,
            ieth,
        },
        payload,
    })
}

/// The length of the frame [`build`] writes for `h` and a payload of `payload_len` bytes
/// (without Ethernet padding or FCS).
///
/// # Errors
///
/// [`RoceError::BadOpcode`] for an opcode this codec does not know.
pub(crate) fn frame_len(h: &Headers, payload_len: usize) -> Result<usize, RoceError> {
    let layout = Layout::of(h.bth.opcode).ok_or(RoceError::BadOpcode(h.bth.opcode))?;
    let l2 = ETH_LEN + if h.eth.vlan.is_some() { VLAN_LEN } else { 0 };
    let l3 = match h.ip {
        Ip::V4 { .. } => IPV4_LEN,
        Ip::V6 { .. } => IPV6_LEN,
    };
    let pad = payload_len.wrapping_neg() & 3;
    Ok(l2 + l3 + UDP_LEN + BTH_LEN + layout.ext_len() + payload_len + pad + ICRC_LEN)
}

/// Where the payload starts in the frame [`build`] writes for `h`: the length of its headers.
///
/// # Errors
///
/// [`RoceError::BadOpcode`] for an opcode this codec does not know.
pub(crate) fn payload_offset(h: &Headers) -> Result<usize, RoceError> {
    Ok(frame_len(h, 0)? - ICRC_LEN)
}

/// [`build`] with `payload` in place: `out[payload_offset(h)..][..payload_len]` holds the
/// payload already (a sender gathers it straight into the frame).
///
/// # Errors
///
/// As [`build`].
pub(crate) fn build_in_place(
    h: &Headers,
    payload_len: usize,
    out: &mut [u8],
) -> Result<usize, RoceError> {
    write_frame(h, None, payload_len, out)
}

/// Writes the frame of `h` with `payload` to the start of `out` and returns its length: the
/// IP and UDP lengths, the IPv4 checksum, the pad count (in the BTH and the pad bytes) and
/// the ICRC are computed; the UDP checksum is 0. The frame is not padded to Ethernet's
/// 60-byte minimum (the interface that sends it does that).
///
/// # Errors
///
/// [`RoceError::BadOpcode`], [`RoceError::BadHeaders`] (extension headers other than the
/// opcode's, a payload on an opcode without one, a field wider than its bits, a packet longer
/// than IP allows), [`RoceError::NoRoom`].
pub(crate) fn build(h: &Headers, payload: &[u8], out: &mut [u8]) -> Result<usize, RoceError> {
    write_frame(h, Some(payload), payload.len(), out)
}

/// [`build`] and [`build_in_place`]: `payload` written, or (`None`) `payload_len` bytes of it
/// already in place.
fn write_frame(
    h: &Headers,
    payload: Option<&[u8]>,
    payload_len: usize,
    out: &mut [u8],
) -> Result<usize, RoceError> {
    let layout = Layout::of(h.bth.opcode).ok_or(RoceError::BadOpcode(h.bth.opcode))?;
    let shape_ok = layout.xrceth == h.xrceth.is_some()
        && layout.deth == h.deth.is_some()
        && layout.reth == h.reth.is_some()
        && layout.atomic_eth == h.atomic_eth.is_some()
        && layout.aeth == h.aeth.is_some()
        && layout.atomic_ack_eth == h.atomic_ack_eth.is_some()
        && layout.imm == h.imm.is_some()
        && layout.ieth == h.ieth.is_some()
        && (layout.payload || payload_len == 0)
        && (h.bth.opcode & 0xe0 != opcode::CNP || payload_len == CNP_PAYLOAD_LEN);
    let b = &h.bth;
    let fits_24 = |v: u32| v <= 0x00ff_ffff;
    let fields_ok = fits_24(b.dest_qp)
        && fits_24(b.psn)
        && h.xrceth.is_none_or(fits_24)
        && h.deth.is_none_or(|d| fits_24(d.src_qp))
        && h.aeth.is_none_or(|a| fits_24(a.msn))
        && match h.ip {
            Ip::V6 { flow_label: fl, .. } => fl <= 0x000f_ffff,
            Ip::V4 { .. } => true,
        };
    if !shape_ok || !fields_ok {
        return Err(RoceError::BadHeaders);
    }
    let len = frame_len(h, payload_len)?;
    if len > out.len() {
        return Err(RoceError::NoRoom { need: len });
    }
    let pad = payload_len.wrapping_neg() & 3;
    let mut w = Writer { buf: out, pos: 0 };
    w.put(&h.eth.dst);
    w.put(&h.eth.src);
    if let Some(tci) = h.eth.vlan {
        w.put(&ETH_P_8021Q.to_be_bytes());
        w.put(&tci.to_be_bytes());
    }
    let l3_start;
    let udp_len;
    match h.ip {
        Ip::V4 {
            src,
            dst,
            tos,
            ttl,
            id,
            df,
        } => {
            w.put(&ETH_P_IP.to_be_bytes());
            l3_start = w.pos;
            let total = u16::try_from(len - l3_start).map_err(|_| RoceError::BadHeaders)?;
            udp_len = total - IPV4_LEN as u16;
            let flags: u16 = if df { 0x4000 } else { 0 };
            let mut ip = [0u8; IPV4_LEN];
            ip[0] = 0x45;
            ip[1] = tos;
            ip[2..4].copy_from_slice(&total.to_be_bytes());
            ip[4..6].copy_from_slice(&id.to_be_bytes());
            ip[6..8].copy_from_slice(&flags.to_be_bytes());
            ip[8] = ttl;
            ip[9] = IPPROTO_UDP;
            ip[12..16].copy_from_slice(&src);
            ip[16..20].copy_from_slice(&dst);
            let csum = ipv4_checksum(&ip);
            ip[10..12].copy_from_slice(&csum.to_be_bytes());
            w.put(&ip);
        }
        Ip::V6 {
            src,
            dst,
            traffic_class,
            flow_label,
            hop_limit,
        } => {
            w.put(&ETH_P_IPV6.to_be_bytes());
            l3_start = w.pos;
            udp_len =
                u16::try_from(len - l3_start - IPV6_LEN).map_err(|_| RoceError::BadHeaders)?;
            let word = (6u32 << 28) | (u32::from(traffic_class) << 20) | flow_label;
            w.put(&word.to_be_bytes());
            w.put(&udp_len.to_be_bytes());
            w.put(&[IPPROTO_UDP, hop_limit]);
            w.put(&src);
            w.put(&dst);
        }
    }
    w.put(&h.udp_src.to_be_bytes());
    w.put(&ROCE_V2_PORT.to_be_bytes());
    w.put(&udp_len.to_be_bytes());
    w.put(&[0, 0]);
    let mut bth = [0u8; BTH_LEN];
    bth[0] = b.opcode;
    bth[1] = (u8::from(b.solicited) << 7) | (u8::from(b.mig_req) << 6) | ((pad as u8) << 4);
    bth[2..4].copy_from_slice(&b.pkey.to_be_bytes());
    let ecn = (u32::from(b.fecn) << 31) | (u32::from(b.becn) << 30);
    bth[4..8].copy_from_slice(&(ecn | b.dest_qp).to_be_bytes());
    bth[8..12].copy_from_slice(&(u32::from(b.ack_req) << 31 | b.psn).to_be_bytes());
    w.put(&bth);
    if let Some(x) = h.xrceth {
        w.put(&x.to_be_bytes());
    }
    if let Some(d) = h.deth {
        w.put(&d.qkey.to_be_bytes());
        w.put(&d.src_qp.to_be_bytes());
    }
    if let Some(r) = h.reth {
        w.put(&r.va.to_be_bytes());
        w.put(&r.rkey.to_be_bytes());
        w.put(&r.dma_len.to_be_bytes());
    }
    if let Some(a) = h.atomic_eth {
        w.put(&a.va.to_be_bytes());
        w.put(&a.rkey.to_be_bytes());
        w.put(&a.swap_add.to_be_bytes());
        w.put(&a.compare.to_be_bytes());
    }
    if let Some(a) = h.aeth {
        w.put(&(u32::from(a.syndrome) << 24 | a.msn).to_be_bytes());
    }
    if let Some(v) = h.atomic_ack_eth {
        w.put(&v.to_be_bytes());
    }
    if let Some(i) = h.imm {
        w.put(&i);
    }
    if let Some(k) = h.ieth {
        w.put(&k.to_be_bytes());
    }
    match payload {
        Some(p) => w.put(p),
        None => w.pos += payload_len,
    }
    w.put(&[0u8; 3][..pad]);
    let crc = icrc::icrc(&w.buf[l3_start..w.pos], matches!(h.ip, Ip::V6 { .. }))
        .ok_or(RoceError::BadHeaders)?;
    w.put(&crc);
    Ok(w.pos)
}
