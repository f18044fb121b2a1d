// SPDX-License-Identifier: GPL-2.0

//! Protection domains (upstream `mlx5_ib_alloc_pd()`, `mlx5_ib_dealloc_pd()`, main.c), of
//! kernel consumers and user contexts.

use crate::cmd::exec;
use crate::cmd::res::{AllocPd, DeallocPd};
use crate::ib::device::Mlx5Ib;
use crate::ib::ucontext::Mlx5Ucontext;
use crate::uabi;
use ib_core_rs::device::Device;
use ib_core_rs::verbs::{Pd, UserCtx};
use kernel::prelude::*;

/// The driver part of a PD (upstream `struct mlx5_ib_pd`).
pub(crate) struct Mlx5Pd {
    /// The PD number.
    pub(crate) pdn: u32,
    /// `pd->uid`: the DEVX uid of its context (0: kernel, or a context without DEVX).
    pub(crate) uid: u16,
}

/// upstream `mlx5_ib_alloc_pd()`: ALLOC_PD with the context's DEVX uid (0 for kernel PDs and
/// contexts without DEVX), so that the context's DEVX objects may name it; a user PD answers
/// `struct mlx5_ib_alloc_pd_resp { __u32 pdn; }` in its udata.
///
/// # Errors
///
/// The errno of ALLOC_PD (`Mlx5Hw::exec`).
pub(crate) fn alloc_pd(
    dev: &Device<Mlx5Ib>,
    user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
) -> Result<Mlx5Pd> {
    let uid = user.as_ref().map_or(0, |u| {
        u.ctx().data::<Mlx5Ucontext>().map_or(0, |c| c.devx_uid)
    });
    let pdn = exec(&*dev.data().hw, &AllocPd { uid })?;
    if let Some(u) = user {
        u.udata().copy_to(&uabi::alloc_pd_resp(pdn));
    }
    Ok(Mlx5Pd { pdn, uid })
}

/// upstream `mlx5_ib_dealloc_pd()`: DEALLOC_PD.
///
/// # Errors
///
/// The errno of DEALLOC_PD (`Mlx5Hw::exec`).
pub(crate) fn dealloc_pd(pd: &Pd<Mlx5Ib>) -> Result {
    exec(
        &*pd.device().data().hw,
        &DeallocPd {
            id: pd.data().pdn,
            uid: pd.data().uid,
        },
    )
}
