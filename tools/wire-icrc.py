#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Checks the ICRC of every RoCE v2 packet in a pcap file (make wire's capture).

    tools/wire-icrc.py CAPTURE.pcap

Written from the specification (IBA Vol 1 7.8.1 and Annex A17.3.3), independently of the
model's `roce/icrc.rs` and of rxe: CRC-32 (Ethernet's) over 8 bytes of ones standing for the
masked LRH, the IP header with its variant fields as ones (IPv4: TOS, TTL, header checksum;
IPv6: traffic class, flow label, hop limit), the UDP header with its checksum as ones, the
BTH with its reserved byte 4 as ones, and the rest of the packet up to the ICRC, which is
sent least significant byte first. Prints one line per bad packet and a summary; exits 1 if
any ICRC is wrong or the file is not a pcap of Ethernet frames. A packet whose ICRC is right
once bit 0x20 of its last byte before the ICRC is flipped back is one mlx5_ib_rs's
`wire_corrupt` fault injection corrupted: counted apart, not an error.
"""
import struct
import sys
import zlib


def icrc(l3):
    """The ICRC of a RoCE v2 packet whose IP header starts `l3` (ICRC excluded)."""
    m = bytearray(b"\xff" * 8) + bytearray(l3)
    ip = 8
    if l3[0] >> 4 == 4:
        ihl = (l3[0] & 0xF) * 4
        m[ip + 1] = 0xFF
        m[ip + 8] = 0xFF
        m[ip + 10] = m[ip + 11] = 0xFF
        udp = ip + ihl
    else:
        m[ip] |= 0x0F
        m[ip + 1] = m[ip + 2] = m[ip + 3] = 0xFF
        m[ip + 7] = 0xFF
        udp = ip + 40
    m[udp + 6] = m[udp + 7] = 0xFF
    m[udp + 8 + 4] = 0xFF
    return struct.pack("<I", zlib.crc32(bytes(m)) & 0xFFFFFFFF)


def flipped(p):
    """`p` (a packet without its ICRC) with the bit mlx5_ib_rs's `wire_corrupt` flips in its
    last byte (0x20) flipped back: a packet corrupted on purpose has the ICRC of this."""
    q = bytearray(p)
    q[-1] ^= 0x20
    return bytes(q)


def roce_l3(frame):
    """The IP packet of a RoCE v2 frame (trimmed to the IP length), or None."""
    off = 12
    (et,) = struct.unpack_from(">H", frame, off)
    off += 2
    if et == 0x8100:
        (et,) = struct.unpack_from(">H", frame, off + 2)
        off += 4
    if et == 0x0800 and len(frame) >= off + 28:
        ihl = (frame[off] & 0xF) * 4
        (total,) = struct.unpack_from(">H", frame, off + 2)
        if frame[off + 9] != 17:
            return None
        (dport,) = struct.unpack_from(">H", frame, off + ihl + 2)
        return frame[off:off + total] if dport == 4791 else None
    if et == 0x86DD and len(frame) >= off + 48:
        (plen,) = struct.unpack_from(">H", frame, off + 4)
        if frame[off + 6] != 17:
            return None
        (dport,) = struct.unpack_from(">H", frame, off + 42)
        return frame[off:off + 40 + plen] if dport == 4791 else None
    return None


def main():
    data = open(sys.argv[1], "rb").read()
    if len(data) < 24:
        print("wire-icrc: not a pcap file")
        return 1
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    else:
        print("wire-icrc: not a pcap file")
        return 1
    (linktype,) = struct.unpack_from(end + "I", data, 20)
    if linktype != 1:
        print(f"wire-icrc: link type {linktype}, not Ethernet")
        return 1
    off, n, roce, bad, injected = 24, 0, 0, 0, 0
    while off + 16 <= len(data):
        _, _, caplen, _ = struct.unpack_from(end + "IIII", data, off)
        frame = data[off + 16:off + 16 + caplen]
        off += 16 + caplen
        n += 1
        l3 = roce_l3(frame)
        if l3 is None:
            continue
        roce += 1
        if len(l3) < 4 or icrc(l3[:-4]) != l3[-4:]:
            if len(l3) >= 5 and icrc(flipped(l3[:-4])) == l3[-4:]:
                injected += 1
                continue
            bad += 1
            print(f"wire-icrc: frame {n}: ICRC {l3[-4:].hex()}, expected {icrc(l3[:-4]).hex()}")
    right = roce - bad - injected
    print(f"wire-icrc: {n} frames, {roce} RoCE v2 packets, {right} ICRCs right, {bad} wrong"
          f" ({injected} corrupted by wire_corrupt)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
