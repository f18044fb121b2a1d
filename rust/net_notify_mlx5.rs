// SPDX-License-Identifier: GPL-2.0

//! The driver's Ethernet interfaces (`rust/netdev.rs`) as the RDMA core's netdev references
//! (`rust/net_notify.rs`), for binding a RoCE port to its interface (upstream mlx5_ib's
//! `ib_device_set_netdev()` on the uplink netdev).

use crate::netdev::{NetDev, NetDevOps};
use ib_core_rs::net_notify::NetDevRef;

/// A counted reference to `nd`'s `struct net_device` (`dev_hold()`).
pub(crate) fn core_ref<T: NetDevOps>(nd: &NetDev<T>) -> Option<NetDevRef> {
    // SAFETY: `as_raw()` is the registered `struct net_device` of `nd`, allocated for as long
    // as `nd` is borrowed here; `from_raw` takes its own reference before returning.
    unsafe { NetDevRef::from_raw(nd.as_raw()) }
}
