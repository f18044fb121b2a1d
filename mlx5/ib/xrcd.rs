// SPDX-License-Identifier: GPL-2.0

//! XRC domains (upstream `mlx5_ib_alloc_xrcd()`, `mlx5_ib_dealloc_xrcd()`, qp.c). XRC SRQs are
//! `crate::ib::srq`'s, XRC target QPs `crate::ib::qp`'s.

use crate::cmd::exec;
use crate::cmd::res::{AllocXrcd, DeallocXrcd};
use crate::ib::device::Mlx5Ib;
use ib_core_rs::device::Device;
use kernel::prelude::*;

/// upstream `mlx5_ib_alloc_xrcd()`: ALLOC_XRCD with uid 0.
///
/// # Errors
///
/// ALLOC_XRCD's errno.
pub(crate) fn alloc_xrcd(dev: &Device<Mlx5Ib>) -> Result<u32> {
    exec(&*dev.data().hw, &AllocXrcd { uid: 0 })
}

/// upstream `mlx5_ib_dealloc_xrcd()`.
///
/// # Errors
///
/// DEALLOC_XRCD's errno.
pub(crate) fn dealloc_xrcd(dev: &Device<Mlx5Ib>, xrcdn: u32) -> Result {
    exec(&*dev.data().hw, &DeallocXrcd { id: xrcdn, uid: 0 })
}
