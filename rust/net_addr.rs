// SPDX-License-Identifier: GPL-2.0

//! What rdma_cm asks the IP stack besides a neighbour (upstream
//! `drivers/infiniband/core/addr.c`: `rdma_translate_ip()`, `addr4_resolve()`,
//! `addr6_resolve()`, `rdma_set_src_addr_rcu()`; `cma.c`: the local port range, a random
//! starting port, `CAP_NET_BIND_SERVICE` for a port below 1024, the IGMP membership of a RoCE
//! multicast join). All in the initial network
//! namespace, as rdma-rs has no per-namespace RDMA devices.

use crate::net_notify::{IpAddr, NetDevRef};
use kernel::ffi::c_int;
use kernel::prelude::*;

extern "C" {
    fn rdma_rs_net_ip_dev_find(v4: bool, ip: *const u8) -> *mut kernel::bindings::net_device;
    fn rdma_rs_net_route_src(
        v4: bool,
        sip: *mut u8,
        dip: *const u8,
        oif: c_int,
        err: *mut c_int,
    ) -> *mut kernel::bindings::net_device;
    fn rdma_rs_net_local_port_range(low: *mut c_int, high: *mut c_int);
    fn rdma_rs_random_u32() -> u32;
    fn rdma_rs_capable_net_bind_service() -> bool;
    fn rdma_rs_net_igmp(ifindex: c_int, addr: *const u8, join: bool) -> c_int;
}

fn bytes(a: &IpAddr) -> (bool, [u8; 16]) {
    let mut b = [0u8; 16];
    match a {
        IpAddr::V4(v) => {
            b[..4].copy_from_slice(v);
            (true, b)
        }
        IpAddr::V6(v) => (false, *v),
    }
}

/// The network device that owns `a`, held (upstream `rdma_translate_ip()`: `ip_dev_find()`,
/// `ipv6_chk_addr()` over the devices); `None` when no device has it.
pub fn ip_dev_find(a: &IpAddr) -> Option<NetDevRef> {
    let (v4, b) = bytes(a);
    // SAFETY: `b` holds the 4 or 16 bytes the shim reads; the shim returns the device with a
    // reference taken for us, or null.
    unsafe { NetDevRef::from_held(rdma_rs_net_ip_dev_find(v4, b.as_ptr())) }
}

/// Routes to `dst` from `src` (the unspecified address: any), out of interface `oif` when
/// non-zero: the out device and the source address the route chose. A destination on this
/// host (a local route) gives the device that owns it (upstream `rdma_set_src_addr_rcu()`);
/// any other route its own device, which may be the loopback one (a route forced out of it).
///
/// # Errors
///
/// The routing's errno (`ENETUNREACH`, `EHOSTUNREACH`, `EINVAL` for a source of no local
/// device); `ENODEV` for a local route to an address no device owns; `EINVAL` for addresses of
/// two families.
pub fn route_src(src: &IpAddr, dst: &IpAddr, oif: u32) -> Result<(NetDevRef, IpAddr)> {
    let (v4, mut s) = bytes(src);
    let (dv4, d) = bytes(dst);
    if v4 != dv4 {
        return Err(EINVAL);
    }
    let mut err: c_int = 0;
    // SAFETY: `s` and `d` hold the bytes the shim reads and writes (4 or 16); `err` is a
    // valid out pointer; the shim keeps no pointer and returns a held device or null.
    let dev = unsafe {
        NetDevRef::from_held(rdma_rs_net_route_src(
            v4,
            s.as_mut_ptr(),
            d.as_ptr(),
            oif as c_int,
            &mut err,
        ))
    };
    let dev = dev.ok_or(if err < 0 {
        Error::from_errno(err)
    } else {
        ENODEV
    })?;
    let chosen = if v4 {
        IpAddr::V4([s[0], s[1], s[2], s[3]])
    } else {
        IpAddr::V6(s)
    };
    Ok((dev, chosen))
}

/// The local port range (`net.ipv4.ip_local_port_range`, upstream
/// `inet_get_local_port_range()`).
pub fn local_port_range() -> (u16, u16) {
    let (mut lo, mut hi): (c_int, c_int) = (0, 0);
    // SAFETY: two valid out pointers.
    unsafe { rdma_rs_net_local_port_range(&mut lo, &mut hi) };
    (lo.clamp(1, 65535) as u16, hi.clamp(1, 65535) as u16)
}

/// A random number (`get_random_u32()`).
pub fn random_u32() -> u32 {
    // SAFETY: no arguments, no preconditions.
    unsafe { rdma_rs_random_u32() }
}

/// Whether the caller may bind a port below 1024 (`capable(CAP_NET_BIND_SERVICE)`).
pub fn capable_net_bind_service() -> bool {
    // SAFETY: no arguments; called in process context.
    unsafe { rdma_rs_capable_net_bind_service() }
}

/// Interface `ifindex` joins (`join`) or leaves the IPv4 group `a` (upstream `cma_igmp_send()`:
/// `ip_mc_inc_group()`, `ip_mc_dec_group()` under the RTNL).
///
/// # Errors
///
/// `ENODEV` without the interface or its IPv4 configuration.
pub fn igmp(ifindex: u32, a: [u8; 4], join: bool) -> Result {
    let i = c_int::try_from(ifindex).map_err(|_| ENODEV)?;
    // SAFETY: `a` holds the 4 bytes the shim reads; the shim takes its own reference on the
    // interface and the RTNL.
    kernel::error::to_result(unsafe { rdma_rs_net_igmp(i, a.as_ptr(), join) })
}
