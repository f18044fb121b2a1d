// SPDX-License-Identifier: GPL-2.0

//! IPoIB (RFC 4391, RFC 4392; upstream `drivers/infiniband/ulp/ipoib/`): an `ib%d` interface
//! (`rust/netdev.rs`, [`crate::netdev::Link::Infiniband`]) on each InfiniBand port whose
//! driver has the `open_ud_qp` op (`ipoib/client.rs`: the core client that registers them;
//! `ipoib/iface.rs`: an interface's state, ops and
//! worker; `ipoib/bcast.rs`: its broadcast group; `ipoib/path.rs`: its paths), and the
//! addressing and encapsulation they are built on, in this file:
//!
//! * The 20-byte link-layer address ([`HwAddr`]): one byte of flags (`0x80`: the interface
//!   takes connected mode; datagram mode only here, so never set by this side), the 24-bit QP
//!   number of the interface's UD QP, then the port's GID.
//! * The broadcast address of a partition ([`broadcast`]): flags and the reserved QPN
//!   `0xffffff`, then the IPv4 broadcast group `ff12:401b:PPPP::ffff:ffff` (link-local scope,
//!   the IPv4 signature `401b`, the P_Key with the full-member bit), as upstream's
//!   `ipv4_bcast_addr` with `broadcast[8..10]` set from the P_Key.
//! * The datagram-mode MTU ([`ud_mtu`]): the broadcast group's MTU less the 4-byte IPoIB
//!   header (upstream `IPOIB_UD_MTU()`).
//! * What the interface's `header_ops` hand its transmit ([`split_xmit`]: the destination's
//!   address, then the IPoIB header and payload) and how a received packet was addressed
//!   ([`rx_packet_type`], from the GRH's destination GID, as `ipoib_ib_handle_rx_wc()`).
//!
//! Connected mode (RFC 4755, upstream `ipoib_cm.c`) is not offered.

#[path = "ipoib/bcast.rs"]
mod bcast;
#[path = "ipoib/client.rs"]
mod client;
#[path = "ipoib/iface.rs"]
mod iface;
#[path = "ipoib/path.rs"]
mod path;

pub(crate) use client::{shutdown, IpoibClient, IpoibTable};
pub use iface::IPOIB_QKEY;

use crate::attr::Gid;
use crate::netdev::{PacketType, INFINIBAND_ALEN};
use kernel::prelude::*;

/// `IPOIB_ENCAP_LEN`: the IPoIB header on the wire (EtherType, two reserved bytes).
pub const ENCAP_LEN: usize = 4;

/// `IB_GRH_BYTES`: the GRH a UD receive buffer starts with.
pub const GRH_LEN: usize = 40;

/// The QPN field of a broadcast or multicast address (IBA 9.8.1: the multicast QPN).
pub const MCAST_QPN: u32 = 0xff_ffff;

/// `IPOIB_FLAGS_RC`: the address's owner takes connected mode.
pub const FLAG_RC: u8 = 0x80;

/// The full-member bit of a P_Key (IBA 10.9.1.2).
pub const PKEY_FULL_MEMBER: u16 = 0x8000;

/// An IPoIB link-layer address (RFC 4391 section 9.1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwAddr {
    /// The flags byte ([`FLAG_RC`]; the rest reserved).
    pub flags: u8,
    /// The QP number (24 bits).
    pub qpn: u32,
    /// The GID: the port's, or the multicast group's.
    pub gid: Gid,
}

impl HwAddr {
    /// The 20 bytes of the address (the QPN's high byte dropped).
    pub fn encode(&self) -> [u8; INFINIBAND_ALEN] {
        let mut a = [0u8; INFINIBAND_ALEN];
        a[0] = self.flags;
        let q = self.qpn.to_be_bytes();
        a[1..4].copy_from_slice(&q[1..4]);
        a[4..].copy_from_slice(&self.gid.0);
        a
    }

    /// The address of 20 bytes.
    pub fn decode(a: &[u8; INFINIBAND_ALEN]) -> Self {
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&a[4..]);
        Self {
            flags: a[0],
            qpn: u32::from_be_bytes([0, a[1], a[2], a[3]]),
            gid: Gid(gid),
        }
    }

    /// Whether the address names a multicast group (upstream `ipoib_start_xmit()`:
    /// `hwaddr[4] == 0xff`, the first byte of a multicast GID).
    pub fn is_multicast(&self) -> bool {
        self.gid.0[0] == 0xff
    }
}

/// A P_Key with the full-member bit set (upstream `priv->pkey |= 0x8000`).
pub fn full_member(pkey: u16) -> u16 {
    pkey | PKEY_FULL_MEMBER
}

/// The MGID of the IPv4 broadcast group of partition `pkey` (RFC 4391 section 4:
/// `ff12:401b:PPPP::ffff:ffff`, the P_Key with the full-member bit).
pub fn broadcast_mgid(pkey: u16) -> Gid {
    let p = full_member(pkey).to_be_bytes();
    Gid([
        0xff, 0x12, 0x40, 0x1b, p[0], p[1], 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
    ])
}

/// The broadcast address of partition `pkey`: [`MCAST_QPN`] and [`broadcast_mgid`].
pub fn broadcast(pkey: u16) -> [u8; INFINIBAND_ALEN] {
    HwAddr {
        flags: 0,
        qpn: MCAST_QPN,
        gid: broadcast_mgid(pkey),
    }
    .encode()
}

/// upstream `ib_mtu_enum_to_int()`: the bytes of an `enum ib_mtu` (1: 256 ... 5: 4096);
/// `None` for any other value.
pub fn mtu_bytes(ib_mtu: u8) -> Option<u32> {
    match ib_mtu {
        1..=5 => Some(128 << ib_mtu),
        _ => None,
    }
}

/// upstream `IPOIB_UD_MTU()`: the interface MTU of datagram mode over an IB MTU of
/// `ib_mtu_bytes` (the broadcast group's): less the IPoIB header.
pub fn ud_mtu(ib_mtu_bytes: u32) -> u32 {
    ib_mtu_bytes.saturating_sub(ENCAP_LEN as u32)
}

/// What an IPoIB interface's transmit gets (`rust/netdev.rs`: the pseudo header that the
/// `header_ops` pushed, then the packet): the destination's address and the bytes for the
/// wire (the IPoIB header and the payload). `None` for a frame too short to hold both
/// headers (one that did not come through `header_ops`, e.g. a short `AF_PACKET` raw send):
/// upstream drops it.
pub fn split_xmit(frame: &[u8]) -> Option<(HwAddr, &[u8])> {
    if frame.len() < INFINIBAND_ALEN + ENCAP_LEN {
        return None;
    }
    let (a, wire) = frame.split_at(INFINIBAND_ALEN);
    let a: &[u8; INFINIBAND_ALEN] = a.try_into().ok()?;
    Some((HwAddr::decode(a), wire))
}

/// Splits a UD receive buffer (GRH first, present or not) into the GRH's destination GID and
/// the IPoIB packet. `None` for a buffer shorter than the GRH and the IPoIB header.
pub fn strip_grh(buf: &[u8]) -> Option<(Gid, &[u8])> {
    if buf.len() < GRH_LEN + ENCAP_LEN {
        return None;
    }
    let (grh, pkt) = buf.split_at(GRH_LEN);
    let mut dgid = [0u8; 16];
    dgid.copy_from_slice(grh.get(24..40)?);
    Some((Gid(dgid), pkt))
}

/// upstream `ipoib_ib_handle_rx_wc()`: a packet without a GRH or to a unicast GID was sent to
/// this interface; one to the broadcast group's GID (bytes 4.. of `broadcast`) is a broadcast;
/// any other multicast GID a multicast.
pub fn rx_packet_type(dgid: Option<&Gid>, broadcast: &[u8; INFINIBAND_ALEN]) -> PacketType {
    match dgid {
        Some(g) if g.0[0] == 0xff => {
            if g.0[..] == broadcast[4..] {
                PacketType::Broadcast
            } else {
                PacketType::Multicast
            }
        }
        _ => PacketType::Host,
    }
}

#[kunit_tests(ib_core_rs_ipoib_addr)]
mod tests {
    use super::*;

    #[test]
    fn hw_addr_round_trip() {
        let mut gid = [0u8; 16];
        gid[0] = 0xfe;
        gid[1] = 0x80;
        gid[8..].copy_from_slice(&[0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]);
        let a = HwAddr {
            flags: 0,
            qpn: 0x00ab_cdef,
            gid: Gid(gid),
        };
        let b = a.encode();
        // RFC 4391 9.1.1: flags, QPN, GID.
        assert_eq!(&b[..4], &[0x00, 0xab, 0xcd, 0xef]);
        assert_eq!(&b[4..], &gid);
        assert_eq!(HwAddr::decode(&b), a);
        assert!(!a.is_multicast());
        // The QPN is 24 bits: a high byte is dropped.
        let c = HwAddr {
            qpn: 0x1200_0048,
            ..a
        }
        .encode();
        assert_eq!(&c[..4], &[0x00, 0x00, 0x00, 0x48]);
    }

    #[test]
    fn broadcast_address_of_a_partition() {
        // The default partition: 0xffff (the full-member bit already set).
        assert_eq!(
            broadcast(0xffff),
            [
                0x00, 0xff, 0xff, 0xff, 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff,
                0xff, 0xff, 0xff
            ]
        );
        // A limited-member P_Key gets the full-member bit (upstream `pkey |= 0x8000`).
        let b = broadcast(0x0012);
        assert_eq!(&b[8..10], &[0x80, 0x12]);
        assert!(HwAddr::decode(&b).is_multicast());
        assert_eq!(HwAddr::decode(&b).qpn, MCAST_QPN);
    }

    #[test]
    fn datagram_mtu() {
        assert_eq!(mtu_bytes(4).map(ud_mtu), Some(2044));
        assert_eq!(mtu_bytes(5).map(ud_mtu), Some(4092));
        assert_eq!(mtu_bytes(1), Some(256));
        assert_eq!(mtu_bytes(0), None);
        assert_eq!(mtu_bytes(6), None);
    }

    #[test]
    fn transmit_split() -> Result {
        let mut f = [0u8; 30];
        f[..20].copy_from_slice(&broadcast(0xffff));
        f[20..24].copy_from_slice(&[0x08, 0x06, 0, 0]);
        let (a, wire) = split_xmit(&f).ok_or(EINVAL)?;
        assert!(a.is_multicast());
        assert_eq!(wire.len(), 10);
        assert_eq!(&wire[..2], &[0x08, 0x06]);
        // Shorter than the pseudo header and the IPoIB header: dropped.
        assert!(split_xmit(&f[..23]).is_none());
        Ok(())
    }

    #[test]
    fn receive_addressing() -> Result {
        let bc = broadcast(0xffff);
        let mut buf = [0u8; GRH_LEN + ENCAP_LEN + 2];
        buf[24..40].copy_from_slice(&bc[4..]);
        buf[40..42].copy_from_slice(&[0x08, 0x00]);
        let (dgid, pkt) = strip_grh(&buf).ok_or(EINVAL)?;
        assert_eq!(pkt.len(), ENCAP_LEN + 2);
        assert_eq!(rx_packet_type(Some(&dgid), &bc), PacketType::Broadcast);
        let mut other = dgid;
        other.0[15] = 0xfb;
        assert_eq!(rx_packet_type(Some(&other), &bc), PacketType::Multicast);
        let mut uc = Gid([0; 16]);
        uc.0[0] = 0xfe;
        assert_eq!(rx_packet_type(Some(&uc), &bc), PacketType::Host);
        assert_eq!(rx_packet_type(None, &bc), PacketType::Host);
        assert!(strip_grh(&buf[..GRH_LEN + 3]).is_none());
        Ok(())
    }
}

#[kunit_tests(ib_core_rs_ipoib_netdev)]
mod netdev_tests {
    use super::*;
    use crate::netdev::{Link, NetDev, NetDevConfig, NetDevOps, NetDevice, ARPHRD_INFINIBAND};
    use kernel::sync::atomic::{Atomic, Relaxed};
    use kernel::sync::Arc;
    use kernel::time::{delay::fsleep, Delta};

    /// What the interface's transmit got: the packets, and of the last one the destination's
    /// QPN, the last four bytes of its GID, the IPoIB header's EtherType and the wire length.
    struct Probe {
        sent: Atomic<u32>,
        qpn: Atomic<u32>,
        gid_tail: Atomic<u32>,
        proto: Atomic<u32>,
        wire_len: Atomic<u32>,
    }

    impl NetDevOps for Probe {
        fn open(&self, _dev: &NetDevice) -> Result {
            Ok(())
        }

        fn stop(&self, _dev: &NetDevice) {}

        fn start_xmit(&self, _dev: &NetDevice, frame: &[u8]) -> bool {
            let Some((a, wire)) = split_xmit(frame) else {
                return false;
            };
            let g = &a.gid.0;
            self.qpn.store(a.qpn, Relaxed);
            self.gid_tail
                .store(u32::from_be_bytes([g[12], g[13], g[14], g[15]]), Relaxed);
            self.proto
                .store(u32::from(u16::from_be_bytes([wire[0], wire[1]])), Relaxed);
            self.wire_len.store(wire.len() as u32, Relaxed);
            self.sent.store(self.sent.load(Relaxed) + 1, Relaxed);
            true
        }

        fn change_mtu(&self, _dev: &NetDevice, _mtu: u32) -> Result {
            Ok(())
        }
    }

    fn port_gid() -> Gid {
        let mut g = [0u8; 16];
        g[..2].copy_from_slice(&[0xfe, 0x80]);
        g[8..].copy_from_slice(&[0x02, 0xc9, 0x03, 0x00, 0x0a, 0x0b, 0x0c, 0x0d]);
        Gid(g)
    }

    /// An `ib%d` interface as an IPoIB port registers it: type 32, the 20-byte address of its
    /// QPN and GID, the partition's broadcast address, the datagram MTU of a 2048-byte group;
    /// a packet sent through the stack's header path reaches the transmit with the
    /// destination's address in front of the IPoIB header.
    #[test]
    fn ib_interface_link_and_header_path() -> Result {
        let addr = HwAddr {
            flags: 0,
            qpn: 0x48,
            gid: port_gid(),
        }
        .encode();
        let bc = broadcast(0xffff);
        let probe = Arc::new(
            Probe {
                sent: Atomic::new(0),
                qpn: Atomic::new(0),
                gid_tail: Atomic::new(0),
                proto: Atomic::new(0),
                wire_len: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        let mtu = mtu_bytes(4).map(ud_mtu).ok_or(EINVAL)?;
        let nd = NetDev::new(
            probe,
            None,
            &NetDevConfig {
                link: Link::Infiniband {
                    addr,
                    broadcast: bc,
                },
                mtu,
                min_mtu: crate::netdev::ETH_MIN_MTU,
                max_mtu: mtu,
            },
        )?;
        let dev = nd.device();
        assert_eq!(&dev.name().as_bytes()[..2], b"ib");
        let l = dev.link();
        assert_eq!(l.ty, ARPHRD_INFINIBAND);
        assert_eq!(usize::from(l.addr_len), INFINIBAND_ALEN);
        assert_eq!(&l.addr[..INFINIBAND_ALEN], &addr);
        assert_eq!(&l.broadcast[..INFINIBAND_ALEN], &bc);
        assert!(l.addr[INFINIBAND_ALEN..].iter().all(|b| *b == 0));
        assert_eq!(dev.mtu(), 2044);
        // An address of the wrong length is refused before the header path.
        assert_eq!(dev.send(0x0806, &[0u8; 6], &[0u8; 28]), Err(EINVAL));
        // Up, with the carrier on (a queue is attached only with one).
        dev.set_carrier(true);
        nd.open()?;
        dev.send(0x0806, &bc, &[0x5a; 28])?;
        let p = nd.data();
        for _ in 0..100 {
            if p.sent.load(Relaxed) == 1 {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        assert_eq!(p.sent.load(Relaxed), 1);
        assert_eq!(p.qpn.load(Relaxed), MCAST_QPN);
        assert_eq!(p.gid_tail.load(Relaxed), 0xffff_ffff);
        assert_eq!(p.proto.load(Relaxed), 0x0806);
        assert_eq!(p.wire_len.load(Relaxed), (ENCAP_LEN + 28) as u32);
        // A received packet shorter than the IPoIB header is refused.
        assert_eq!(dev.rx_ipoib(&[0x08], PacketType::Host), Err(EINVAL));
        Ok(())
    }
}
