// SPDX-License-Identifier: GPL-2.0

//! The mkey command every key owner shares: DESTROY_MKEY, for MRs (`mr.rs`), memory windows
//! (`mw.rs`) and the UMR QP's own keys (`umr.rs`).

use crate::cmd::exec;
use crate::cmd::res::DestroyMkey;
use crate::hw::Mlx5Hw;
use kernel::prelude::*;

/// DESTROY_MKEY (uid 0) of the mkey at `index`: an MR's, a memory window's or the UMR QP's.
///
/// # Errors
///
/// The errno of DESTROY_MKEY (`Mlx5Hw::exec`).
pub(crate) fn destroy_mkey(hw: &dyn Mlx5Hw, index: u32) -> Result {
    exec(hw, &DestroyMkey { id: index, uid: 0 })
}
