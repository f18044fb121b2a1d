// SPDX-License-Identifier: GPL-2.0

//! The L2 address of an IP destination as the IP stack resolves it out of a network device:
//! route, then the local check or the neighbour table, retried until resolved or timed out
//! (upstream `drivers/infiniband/core/addr.c`: `rdma_addr_find_l2_eth_by_grh()`,
//! `rdma_resolve_ip()` with a GID attribute, `addr_resolve()`, `dst_fetch_ha()`).

use crate::net_notify::NetDevRef;
use kernel::prelude::*;
use kernel::time::{delay::fsleep, Delta};

extern "C" {
    fn rdma_rs_net_l2_by_ip(
        ndev: *mut kernel::bindings::net_device,
        v4: bool,
        sip: *const u8,
        dip: *const u8,
        ha: *mut u8,
        hop_limit: *mut u8,
    ) -> core::ffi::c_int;
}

/// A source and destination address of one family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpPair {
    /// IPv4 (network byte order).
    V4([u8; 4], [u8; 4]),
    /// IPv6.
    V6([u8; 16], [u8; 16]),
}

/// What a resolution gives: the destination's hardware address and the route's hop limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L2Dest {
    /// The next hop's MAC, or the device's own for a local destination (the first 6 bytes of
    /// [`L2Dest::ha`]).
    pub mac: [u8; 6],
    /// The whole hardware address, zero past the device's address length: on an IPoIB
    /// interface the 20 bytes of flags, QPN and GID (`rdma_dev_addr.dst_dev_addr`).
    pub ha: [u8; crate::netdev::INFINIBAND_ALEN],
    /// The route's hop limit (`ip4_dst_hoplimit()`/`ip6_dst_hoplimit()`).
    pub hop_limit: u8,
}

/// How long a neighbour may take to resolve (upstream `rdma_addr_find_l2_eth_by_grh()`: 1000
/// ms), and the pause between two attempts.
const TIMEOUT_MS: u32 = 1000;
const RETRY_MS: u32 = 10;

/// Resolves `ips.1` from `ips.0` out of `ndev` (the route bound to it, in its namespace). A
/// neighbour not yet valid gets a resolution started (ARP, ND) and is looked up again every
/// 10 ms for at most a second. Sleeps: process context only.
///
/// # Errors
///
/// The routing's errno (`ENETUNREACH`, `EHOSTUNREACH`, ...); `ENODEV` for a local route to
/// an address no device owns; `ETIMEDOUT` when the neighbour did not resolve in time (upstream
/// `process_one_req()` turns every error past the timeout into `ETIMEDOUT`).
pub fn l2_by_ip(ndev: &NetDevRef, ips: IpPair) -> Result<L2Dest> {
    let mut waited = 0;
    loop {
        match try_once(ndev, ips) {
            Err(e) if e == ENODATA => {}
            r => return r,
        }
        if waited >= TIMEOUT_MS {
            return Err(ETIMEDOUT);
        }
        fsleep(Delta::from_millis(i64::from(RETRY_MS)));
        waited += RETRY_MS;
    }
}

/// One attempt (`ENODATA`: not resolved yet, a resolution started), for callers with a
/// timeout of their own (rdma_cm's `rdma_resolve_addr()`).
pub fn try_once(ndev: &NetDevRef, ips: IpPair) -> Result<L2Dest> {
    let mut d = L2Dest {
        mac: [0; 6],
        ha: [0; crate::netdev::INFINIBAND_ALEN],
        hop_limit: 0,
    };
    let (v4, sip, dip): (bool, &[u8], &[u8]) = match &ips {
        IpPair::V4(s, t) => (true, s, t),
        IpPair::V6(s, t) => (false, s, t),
    };
    // SAFETY: `ndev` holds a reference on the net_device (its type invariant); `sip` and
    // `dip` are 4 bytes when `v4`, else 16, as the shim reads them; `ha` has the 20 bytes and
    // `hop_limit` the byte the shim writes; the shim keeps none of the pointers.
    let r = unsafe {
        rdma_rs_net_l2_by_ip(
            ndev.as_ptr(),
            v4,
            sip.as_ptr(),
            dip.as_ptr(),
            d.ha.as_mut_ptr(),
            &mut d.hop_limit,
        )
    };
    kernel::error::to_result(r)?;
    d.mac.copy_from_slice(&d.ha[..6]);
    Ok(d)
}
