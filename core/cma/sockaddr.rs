// SPDX-License-Identifier: GPL-2.0

//! The socket addresses of rdma_cm ids as user space and upstream's `cma.c` hold them: the raw
//! `struct sockaddr_in`, `sockaddr_in6` or `sockaddr_ib` bytes (native-endian family, network
//! byte order port and address), with the checks and comparisons `cma.c` and `ib_addr.h` make
//! on them (`rdma_addr_size()`, `cma_any_addr()`, `cma_loopback_addr()`, `cma_addr_cmp()`,
//! `cma_check_linklocal()`). No allocation, no kernel calls.

use crate::net_notify::IpAddr;
use kernel::prelude::*;

/// `AF_INET`.
pub const AF_INET: u16 = 2;
/// `AF_INET6`.
pub const AF_INET6: u16 = 10;
/// `AF_IB`.
pub const AF_IB: u16 = 27;

/// `sizeof(struct sockaddr_in)`.
pub const SIZE_IN: usize = 16;
/// `sizeof(struct sockaddr_in6)`.
pub const SIZE_IN6: usize = 28;
/// `sizeof(struct sockaddr_ib)`.
pub const SIZE_IB: usize = 48;
/// `sizeof(struct __kernel_sockaddr_storage)`.
pub const SIZE_KSS: usize = 128;

/// The GID of an IP address (upstream `rdma_ip2gid()`: IPv4 as `::ffff:a.b.c.d`).
pub fn ip_to_gid(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(a) => {
            let mut g = [0u8; 16];
            g[10] = 0xff;
            g[11] = 0xff;
            g[12..].copy_from_slice(&a);
            g
        }
        IpAddr::V6(a) => a,
    }
}

/// A socket address, stored as its bytes (as large as the largest family, `sockaddr_ib`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SockAddr([u8; SIZE_IB]);

impl Default for SockAddr {
    fn default() -> Self {
        SockAddr([0; SIZE_IB])
    }
}

impl core::fmt::Debug for SockAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "SockAddr({} port {} {:?})",
            self.family(),
            self.port(),
            self.ip()
        )
    }
}

/// upstream `rdma_addr_size()`: the size of the family's sockaddr, 0 for another family.
pub fn addr_size(family: u16) -> usize {
    match family {
        AF_INET => SIZE_IN,
        AF_INET6 => SIZE_IN6,
        AF_IB => SIZE_IB,
        _ => 0,
    }
}

fn family_of(b: &[u8]) -> u16 {
    match b {
        [a, c, ..] => u16::from_ne_bytes([*a, *c]),
        _ => 0,
    }
}

impl SockAddr {
    /// The address in `b`, which holds a `sockaddr_in6` (`rdma_addr_size_in6()`) or a
    /// `sockaddr_storage` (`rdma_addr_size_kss()`); `None` when its family is unknown or its
    /// size exceeds `b`.
    pub fn parse(b: &[u8]) -> Option<SockAddr> {
        let n = addr_size(family_of(b));
        if n == 0 || n > b.len() {
            return None;
        }
        let mut s = SockAddr::default();
        s.0[..n].copy_from_slice(&b[..n]);
        Some(s)
    }

    /// The unspecified address of `family` with port 0 (upstream's `cma_bind_addr()` when no
    /// source is given).
    pub fn any(family: u16) -> SockAddr {
        let mut s = SockAddr::default();
        s.0[..2].copy_from_slice(&family.to_ne_bytes());
        s
    }

    /// An IP address with a port (host order).
    pub fn from_ip(ip: IpAddr, port: u16) -> SockAddr {
        let mut s = SockAddr::any(match ip {
            IpAddr::V4(_) => AF_INET,
            IpAddr::V6(_) => AF_INET6,
        });
        s.set_ip(ip);
        s.set_port(port);
        s
    }

    /// The family (`sa_family`).
    pub fn family(&self) -> u16 {
        family_of(&self.0)
    }

    /// The size of the family's sockaddr (upstream `rdma_addr_size()`).
    pub fn size(&self) -> usize {
        addr_size(self.family())
    }

    /// The bytes of the family's sockaddr (empty for an unknown family).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0[..self.size()]
    }

    /// The port in host order (upstream `cma_port()`; for `AF_IB` the low 16 bits of the
    /// service ID).
    pub fn port(&self) -> u16 {
        match self.family() {
            AF_INET | AF_INET6 => u16::from_be_bytes([self.0[2], self.0[3]]),
            AF_IB => {
                let (sid, mask) = self.ib_sid();
                (sid & mask) as u16
            }
            _ => 0,
        }
    }

    /// Sets the port (host order); for `AF_IB` the service ID's low 16 bits, the mask all
    /// ones (`cma_bind_port()`).
    pub fn set_port(&mut self, port: u16) {
        match self.family() {
            AF_INET | AF_INET6 => self.0[2..4].copy_from_slice(&port.to_be_bytes()),
            // upstream cma_bind_port(): the service ID's masked bits and the port, all
            // of it significant.
            AF_IB => {
                let (sid, mask) = self.ib_sid();
                self.set_ib_sid((sid & mask & !0xffff) | u64::from(port), !0);
            }
            _ => {}
        }
    }

    /// The IP address, for the IP families.
    pub fn ip(&self) -> Option<IpAddr> {
        let b = &self.0;
        match self.family() {
            AF_INET => Some(IpAddr::V4([b[4], b[5], b[6], b[7]])),
            AF_INET6 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(&b[8..24]);
                Some(IpAddr::V6(a))
            }
            _ => None,
        }
    }

    /// Sets the IP address (the family must match; another is left alone).
    pub fn set_ip(&mut self, ip: IpAddr) {
        match (self.family(), ip) {
            (AF_INET, IpAddr::V4(a)) => self.0[4..8].copy_from_slice(&a),
            (AF_INET6, IpAddr::V6(a)) => self.0[8..24].copy_from_slice(&a),
            _ => {}
        }
    }

    /// `sib_pkey` (host order), 0 for other families.
    pub fn ib_pkey(&self) -> u16 {
        match self.family() {
            AF_IB => u16::from_be_bytes([self.0[2], self.0[3]]),
            _ => 0,
        }
    }

    /// Sets `sib_pkey` (host order; `AF_IB` only).
    pub fn set_ib_pkey(&mut self, pkey: u16) {
        if self.family() == AF_IB {
            self.0[2..4].copy_from_slice(&pkey.to_be_bytes());
        }
    }

    /// `sib_flowinfo` (host order), 0 for other families.
    pub fn ib_flowinfo(&self) -> u32 {
        match self.family() {
            AF_IB => u32::from_be_bytes([self.0[4], self.0[5], self.0[6], self.0[7]]),
            _ => 0,
        }
    }

    /// Sets `sib_flowinfo` (host order; `AF_IB` only).
    pub fn set_ib_flowinfo(&mut self, flow: u32) {
        if self.family() == AF_IB {
            self.0[4..8].copy_from_slice(&flow.to_be_bytes());
        }
    }

    /// `sib_addr`, the GID (`AF_IB` only).
    pub fn ib_gid(&self) -> Option<[u8; 16]> {
        let mut g = [0u8; 16];
        match self.family() {
            AF_IB => {
                g.copy_from_slice(&self.0[8..24]);
                Some(g)
            }
            _ => None,
        }
    }

    /// Sets `sib_addr` (`AF_IB` only).
    pub fn set_ib_gid(&mut self, gid: &[u8; 16]) {
        if self.family() == AF_IB {
            self.0[8..24].copy_from_slice(gid);
        }
    }

    /// `sib_sid` and `sib_sid_mask` (host order), zero for other families.
    pub fn ib_sid(&self) -> (u64, u64) {
        let be64 = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&self.0[o..o + 8]);
            u64::from_be_bytes(b)
        };
        match self.family() {
            AF_IB => (be64(24), be64(32)),
            _ => (0, 0),
        }
    }

    /// Sets `sib_sid` and `sib_sid_mask` (host order; `AF_IB` only).
    pub fn set_ib_sid(&mut self, sid: u64, mask: u64) {
        if self.family() == AF_IB {
            self.0[24..32].copy_from_slice(&sid.to_be_bytes());
            self.0[32..40].copy_from_slice(&mask.to_be_bytes());
        }
    }

    /// The IPv6 scope id (`sin6_scope_id`, native endian); 0 for other families.
    pub fn scope_id(&self) -> u32 {
        match self.family() {
            AF_INET6 => u32::from_ne_bytes([self.0[24], self.0[25], self.0[26], self.0[27]]),
            _ => 0,
        }
    }

    /// The address bytes compared by [`Self::same_addr`] and tested by [`Self::is_any`].
    fn addr_bytes(&self) -> &[u8] {
        match self.family() {
            AF_INET => &self.0[4..8],
            AF_INET6 | AF_IB => &self.0[8..24],
            _ => &[],
        }
    }

    /// upstream `cma_any_addr()`: the unspecified address (`INADDR_ANY`, `::`, an all-zero
    /// `sib_addr`).
    pub fn is_any(&self) -> bool {
        self.addr_bytes().iter().all(|b| *b == 0)
    }

    /// upstream `cma_loopback_addr()`: `127.0.0.0/8`, `::1`, the IB loopback GID (`::1`).
    pub fn is_loopback(&self) -> bool {
        match self.ip() {
            Some(IpAddr::V4(a)) => a[0] == 127,
            Some(IpAddr::V6(a)) => a[..15].iter().all(|b| *b == 0) && a[15] == 1,
            None => {
                let a = self.addr_bytes();
                a.len() == 16 && a[..15].iter().all(|b| *b == 0) && a[15] == 1
            }
        }
    }

    /// `fe80::/64` (upstream `ipv6_addr_type() & IPV6_ADDR_LINKLOCAL`).
    pub fn is_link_local(&self) -> bool {
        matches!(self.ip(), Some(IpAddr::V6(a)) if a[0] == 0xfe && a[1] & 0xc0 == 0x80)
    }

    /// upstream `cma_addr_cmp() == 0`: the same family and address (link-local IPv6
    /// addresses also the same scope).
    pub fn same_addr(&self, o: &SockAddr) -> bool {
        if self.family() != o.family() {
            return false;
        }
        if self.is_link_local() && o.is_link_local() && self.scope_id() != o.scope_id() {
            return false;
        }
        self.addr_bytes() == o.addr_bytes()
    }
}

#[kunit_tests(ib_core_rs_cma_sockaddr)]
mod tests {
    use super::*;

    fn in4(a: [u8; 4], port: u16) -> [u8; SIZE_KSS] {
        let mut b = [0u8; SIZE_KSS];
        b[..2].copy_from_slice(&AF_INET.to_ne_bytes());
        b[2..4].copy_from_slice(&port.to_be_bytes());
        b[4..8].copy_from_slice(&a);
        b
    }

    #[test]
    fn parse_takes_the_family_size() {
        let s = SockAddr::parse(&in4([10, 0, 0, 1], 7471)).unwrap();
        assert_eq!(s.size(), SIZE_IN);
        assert_eq!(s.port(), 7471);
        assert_eq!(s.ip(), Some(IpAddr::V4([10, 0, 0, 1])));
        // A sockaddr_ib does not fit a sockaddr_in6 (rdma_addr_size_in6() is 0).
        let mut ib = [0u8; SIZE_IN6];
        ib[..2].copy_from_slice(&AF_IB.to_ne_bytes());
        assert!(SockAddr::parse(&ib).is_none());
        assert!(SockAddr::parse(&[0u8; SIZE_KSS]).is_none());
    }

    #[test]
    fn any_loopback_and_compare() {
        let a = SockAddr::parse(&in4([0, 0, 0, 0], 0)).unwrap();
        assert!(a.is_any());
        let l = SockAddr::parse(&in4([127, 0, 0, 1], 0)).unwrap();
        assert!(l.is_loopback() && !l.is_any());
        let x = SockAddr::parse(&in4([10, 0, 0, 1], 1)).unwrap();
        let y = SockAddr::parse(&in4([10, 0, 0, 1], 2)).unwrap();
        assert!(x.same_addr(&y));
        assert!(!x.same_addr(&l));
        assert_eq!(
            ip_to_gid(IpAddr::V4([10, 0, 0, 1]))[10..],
            [0xff, 0xff, 10, 0, 0, 1]
        );
    }
}
