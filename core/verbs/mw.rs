// SPDX-License-Identifier: GPL-2.0

//! Memory windows (upstream `ib_uverbs_alloc_mw()` / `uverbs_dealloc_mw()`,
//! `drivers/infiniband/core/uverbs_cmd.c` and `uverbs_main.c`): an rkey that a QP's bind work
//! request later points at part of an MR. The core only allocates and frees the window; binding
//! and invalidation are work requests the provider library posts and the device executes. A
//! window uses its PD (`pd->usecnt`). Upstream keeps no restrack entry for MWs, and neither does
//! this; nor does it count windows on the MR they are bound to (upstream mlx5 leaves that to the
//! device: an MR deregistered under a bound window makes the window's accesses fail).

use super::Uses;
use super::{
    destroy, destroy_op, verbs_object, DestroyError, Destroyable, ObjCore, Object, Pd, UserCtx,
};
use crate::driver::Driver;
use kernel::prelude::*;
use kernel::sync::{Arc, UniqueArc};

/// The window type (upstream `enum ib_mw_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MwType {
    /// `IB_MW_TYPE_1`: bound with `ibv_bind_mw()`, invalidated only by another bind.
    Type1 = 1,
    /// `IB_MW_TYPE_2`: bound by a QP's work request, to that QP; invalidated locally or by a
    /// remote SEND with invalidate.
    Type2 = 2,
}

impl MwType {
    /// `mw_type` of `struct ib_uverbs_alloc_mw`: `None` for anything but 1 and 2 (upstream:
    /// `EINVAL`).
    pub fn from_abi(t: u8) -> Option<Self> {
        match t {
            1 => Some(MwType::Type1),
            2 => Some(MwType::Type2),
            _ => None,
        }
    }
}

/// What a driver's `alloc_mw` made.
pub struct MwCreated<T> {
    /// The window's rkey (upstream `ibmw->rkey`).
    pub rkey: u32,
    /// The driver's data.
    pub data: T,
}

/// A memory window (upstream `struct ib_mw` with the driver's `D::MwData`).
pub struct Mw<D: Driver> {
    pd: Uses<Pd<D>>,
    mw_type: MwType,
    rkey: u32,
    core: ObjCore<()>,
    drv: D::MwData,
}

verbs_object!(Mw, count = (), data = MwData);

impl<D: Driver> Mw<D> {
    /// Allocates a window of a user context (upstream `ib_uverbs_alloc_mw()`: the driver's
    /// `alloc_mw`, then `atomic_inc(&pd->usecnt)`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `alloc_mw`; `EINVAL` for a dead PD; `ENOMEM`; the driver's error.
    pub fn alloc_user(
        pd: &Arc<Pd<D>>,
        mw_type: MwType,
        user: &mut UserCtx<'_, '_, D>,
    ) -> Result<Arc<Self>> {
        let dev = pd.device();
        pd.check_alive()?;
        let op = dev.ops().alloc_mw.ok_or(EOPNOTSUPP)?;
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        let made = op(pd, mw_type, user)?;
        Ok(slot
            .write(Mw {
                pd: Uses::new(pd.clone()),
                mw_type,
                rkey: made.rkey,
                core: ObjCore::new(()),
                drv: made.data,
            })
            .into())
    }

    /// Frees the window (upstream `uverbs_dealloc_mw()`); the PD loses its use.
    ///
    /// # Errors
    ///
    /// `EINVAL` if already freed, the driver's error; the window is handed back.
    pub fn dealloc(this: Arc<Self>) -> core::result::Result<(), DestroyError<Arc<Self>>> {
        destroy(this)
    }

    /// The PD.
    pub fn pd(&self) -> &Arc<Pd<D>> {
        self.pd.get()
    }

    /// The window type.
    pub fn mw_type(&self) -> MwType {
        self.mw_type
    }

    /// The rkey as allocated (binds change its low byte in the device and the library only).
    pub fn rkey(&self) -> u32 {
        self.rkey
    }
}

impl<D: Driver> Destroyable for Mw<D> {
    destroy_op!(dealloc_mw, pd);

    fn release(&self) {
        self.pd.release();
    }
}
