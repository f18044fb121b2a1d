// SPDX-License-Identifier: GPL-2.0

//! The invariant CRC of a RoCE v2 packet (IBA Vol 1 7.8.1, Annex A17.3.3), computed as
//! upstream `rxe_icrc.c` computes it: CRC-32 (IEEE 802.3, reflected) seeded as if 8 bytes of
//! ones (the masked LRH a RoCE v2 packet does not carry) had gone before, over the IP header
//! with its variant fields masked to ones (IPv4 TOS, TTL and checksum; IPv6 traffic class, flow
//! label and hop limit), the UDP header with its checksum masked, the BTH with its reserved
//! byte 4 (the FECN/BECN byte) masked, then the rest of the packet up to the ICRC. The ICRC
//! field holds the complement, least significant byte first.

/// The CRC state after 8 bytes of `0xff` from the initial `0xffff_ffff`
/// (`rxe_icrc_hdr()`: "the result of computing a CRC with a seed of 0xfffffff and 8 bytes
/// of 0xff representing a masked LRH").
const MASKED_LRH_SEED: u32 = 0xdebb_20e3;

/// The reflected CRC-32 polynomial (`CRC32_POLY_LE`).
const POLY: u32 = 0xedb8_8320;

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = table();

/// `crc32_le()`: continues `crc` over `data` (no pre- or post-inversion).
fn crc32_le(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// The longest masked prefix: an IPv6 header, the UDP header and the BTH.
const MASKED_MAX: usize = super::IPV6_LEN + super::UDP_LEN + super::BTH_LEN;

/// The ICRC bytes (as stored on the wire) of the packet whose IP header starts `l3` and
/// which ends just before its ICRC: `l3` holds the IP header, UDP header, BTH, the extension
/// headers, the payload and the pad bytes. `ipv6` tells the IP header's version. `None` if
/// `l3` is too short to hold the headers.
pub(super) fn icrc(l3: &[u8], ipv6: bool) -> Option<[u8; 4]> {
    let ip_len = if ipv6 {
        super::IPV6_LEN
    } else {
        super::IPV4_LEN
    };
    let masked_len = ip_len + super::UDP_LEN + super::BTH_LEN;
    let mut m = [0u8; MASKED_MAX];
    let m = m.get_mut(..masked_len)?;
    m.copy_from_slice(l3.get(..masked_len)?);
    if ipv6 {
        // Version and traffic class, flow label: byte 0's low nibble and bytes 1-3.
        m[0] |= 0x0f;
        m[1..4].fill(0xff);
        // Hop limit.
        m[7] = 0xff;
    } else {
        // TOS, TTL, header checksum.
        m[1] = 0xff;
        m[8] = 0xff;
        m[10..12].fill(0xff);
    }
    // UDP checksum.
    m[ip_len + 6..ip_len + 8].fill(0xff);
    // BTH byte 4: FECN, BECN and the reserved bits.
    m[ip_len + super::UDP_LEN + 4] = 0xff;
    let crc = crc32_le(MASKED_LRH_SEED, m);
    let crc = crc32_le(crc, l3.get(masked_len..)?);
    Some((!crc).to_le_bytes())
}
