// SPDX-License-Identifier: GPL-2.0

//! The core's global state: the device registry and the client table
//! (upstream: the `devices` and `clients` XArrays with `devices_rwsem` and
//! `clients_rwsem` in `drivers/infiniband/core/device.c`).
//!
//! `global_lock!` statics must be initialized once before first use, which
//! is an `unsafe` promise; it is kept here, in `rust/`, and made once from
//! the module's `init`.

use crate::class::Class;
use crate::client::ClientTable;
use crate::cm::service::CmTables;
use crate::cma::CmaGlobal;
use crate::ipoib::IpoibTable;
use crate::mad_agent::MadPort;
use crate::netlink::mcast::McastSock;
use crate::registry::Registry;
use crate::sa::SaTables;
use core::pin::Pin;
use kernel::prelude::*;
use kernel::sync::Arc;

kernel::sync::global_lock! {
    // SAFETY: initialized by `init()`, called first thing in the module's
    // `init` before anything can reach the registry.
    pub(crate) unsafe(uninit) static REGISTRY: Mutex<Registry> = Registry::new();
}

kernel::sync::global_lock! {
    // SAFETY: initialized by `init()`, called first thing in the module's
    // `init` before any client can register.
    pub(crate) unsafe(uninit) static CLIENTS: Mutex<ClientTable> = ClientTable::new();
}

kernel::sync::global_lock! {
    // SAFETY: initialized by `init()`, called first thing in the module's
    // `init` before the class is registered.
    pub(crate) unsafe(uninit) static IB_CLASS: Mutex<Option<Arc<Class>>> = None;
}

kernel::sync::global_lock! {
    // SAFETY: initialized by `init()`, called first thing in the module's
    // `init` before the netlink socket is created.
    pub(crate) unsafe(uninit) static MCAST: Mutex<McastSock> = McastSock::NONE;
}

kernel::sync::global_lock! {
    // SAFETY: initialized by `init()`, called first thing in the module's
    // `init` before the MAD client is registered.
    pub(crate) unsafe(uninit) static MAD_PORTS: Mutex<KVec<Arc<MadPort>>> = KVec::new();
}

kernel::sync::global_lock! {
    // SAFETY: initialized by `init()`, called first thing in the module's
    // `init` before the rdma_cm client and ucma are registered.
    pub(crate) unsafe(uninit) static CMA: Mutex<CmaGlobal> = CmaGlobal::new();
}

kernel::sync::global_lock! {
    // SAFETY: initialized by `init()`, called first thing in the module's
    // `init` before the IB CM's client is registered.
    pub(crate) unsafe(uninit) static CM: Mutex<CmTables> = CmTables::new();
}

kernel::sync::global_lock! {
    // SAFETY: initialized by `init()`, called first thing in the module's
    // `init` before the SA client is registered.
    pub(crate) unsafe(uninit) static SA: Mutex<SaTables> = SaTables::new();
}

kernel::sync::global_lock! {
    // SAFETY: initialized by `init()`, called first thing in the module's
    // `init` before the IPoIB client is registered.
    pub(crate) unsafe(uninit) static IPOIB: Mutex<IpoibTable> = IpoibTable::new();
}

/// Initializes the global locks. Must be called once, from the module's
/// `init`, before any other function of the crate runs.
pub(crate) fn init() {
    // SAFETY: called exactly once, from `IbCoreRs::init`, before any use of
    // `REGISTRY` (the module's functions are not reachable before `init`
    // returns, and KUnit suites run after it).
    unsafe { REGISTRY.init() };
    // SAFETY: as above, for `CLIENTS`.
    unsafe { CLIENTS.init() };
    // SAFETY: as above, for `IB_CLASS`.
    unsafe { IB_CLASS.init() };
    // SAFETY: as above, for `MCAST`.
    unsafe { MCAST.init() };
    // SAFETY: as above, for `MAD_PORTS`.
    unsafe { MAD_PORTS.init() };
    // SAFETY: as above, for `CMA`.
    unsafe { CMA.init() };
    // SAFETY: as above, for `CM`.
    unsafe { CM.init() };
    // SAFETY: as above, for `SA`.
    unsafe { SA.init() };
    // SAFETY: as above, for `IPOIB`.
    unsafe { IPOIB.init() };
}
