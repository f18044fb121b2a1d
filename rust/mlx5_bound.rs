// SPDX-License-Identifier: GPL-2.0

//! The RDMA devices of the functions the driver has bound (KUnit builds only): the
//! kernel-verbs suite `mlx5_ib_rs_fn_kverbs` (`mlx5/ib/datapath_tests.rs`) runs on those of
//! mlx5_core functions, which is how kernel queues on a real (or the emulated) PCI function
//! are tested; the kernel rdma_cm consumer test (`mlx5/ib/cma_tests.rs`) finds the device an
//! id is bound to among all. The probe adds a function's device after it registered and
//! removes it when the function is unbound, before the stages' cleanups; nothing else holds
//! these references.
//!
//! `global_lock!` statics must be initialized once before first use, an `unsafe` promise
//! kept here, in `rust/`, and made once from the module's `init`.

use crate::ib::device::Mlx5Ib;
use ib_core_rs::device::Device;
use kernel::prelude::*;
use kernel::sync::Arc;

kernel::sync::global_lock! {
    // SAFETY: initialized by `init()`, called from the module's `init` before the auxiliary
    // driver registers (nothing can probe before that).
    pub(crate) unsafe(uninit) static BOUND: Mutex<KVec<(Arc<Device<Mlx5Ib>>, bool)>> = KVec::new();
}

/// Initializes the list. Must be called once, from the module's `init`, before the driver
/// registers.
pub(crate) fn init() {
    // SAFETY: called exactly once, from `Mlx5IbRs::init`, before any use of `BOUND` (the
    // driver, whose probe is the first user, registers afterwards; KUnit suites run after
    // `init` returned).
    unsafe { BOUND.init() };
}

/// Adds a bound function's device (`core`: of an mlx5_core function).
///
/// # Errors
///
/// `ENOMEM`.
pub(crate) fn add(ib: &Arc<Device<Mlx5Ib>>, core: bool) -> Result {
    BOUND.lock().push((ib.clone(), core), GFP_KERNEL)?;
    Ok(())
}

/// Removes a device [`add`] added (nothing if it is not there).
pub(crate) fn remove(ib: &Arc<Device<Mlx5Ib>>) {
    let mut l = BOUND.lock();
    if let Some(i) = l.iter().position(|(d, _)| Arc::ptr_eq(d, ib)) {
        let _ = l.remove(i);
    }
    // A static is not dropped at module exit: the last removal (every function unbinds
    // before the module goes) frees the storage.
    if l.is_empty() {
        *l = KVec::new();
    }
}

/// The devices of the mlx5_core functions bound now.
///
/// # Errors
///
/// `ENOMEM`.
pub(crate) fn snapshot() -> Result<KVec<Arc<Device<Mlx5Ib>>>> {
    let l = BOUND.lock();
    let mut v = KVec::with_capacity(l.len(), GFP_KERNEL)?;
    for (d, _) in l.iter().filter(|(_, core)| *core) {
        v.push(d.clone(), GFP_KERNEL)?;
    }
    Ok(v)
}

/// The bound device with RDMA device index `index` (any backend).
pub(crate) fn by_index(index: u32) -> Option<Arc<Device<Mlx5Ib>>> {
    BOUND
        .lock()
        .iter()
        .find(|(d, _)| d.index() == index)
        .map(|(d, _)| d.clone())
}
