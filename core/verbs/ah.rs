// SPDX-License-Identifier: GPL-2.0

//! Address handles (upstream `rdma_create_user_ah()`, `rdma_destroy_ah_user()`,
//! `drivers/infiniband/core/verbs.c`): the address vector a UD send names in its work request.
//! An AH uses its PD (`pd->usecnt`), so the PD cannot go while an AH names it. Upstream keeps
//! no restrack entry for AHs, and neither does this.

use super::Uses;
use super::{
    destroy, destroy_op, verbs_object, AhAttr, DestroyError, Destroyable, ObjCore, Object, Pd,
    UserCtx,
};
use crate::attr::LinkLayer;
use crate::driver::Driver;
use kernel::prelude::*;
use kernel::sync::{Arc, UniqueArc};

/// An address handle (upstream `struct ib_ah` with the driver's `D::AhData`).
pub struct Ah<D: Driver> {
    pd: Uses<Pd<D>>,
    attr: AhAttr,
    core: ObjCore<()>,
    drv: D::AhData,
}

verbs_object!(Ah, count = (), data = AhData);

impl<D: Driver> Ah<D> {
    /// Creates an AH of a user context (upstream `ib_uverbs_create_ah()` →
    /// `rdma_create_user_ah()`): the port must exist, RoCE needs a GRH (`EINVAL`, upstream
    /// `rdma_check_ah_attr()`); the driver may answer in the udata (mlx5: the RoCE
    /// destination MAC). The PD gains a use.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port or a RoCE AH without GRH, or a dead PD; `EOPNOTSUPP` without
    /// `create_ah`; `ENOMEM`; the driver's error.
    pub fn create_user(
        pd: &Arc<Pd<D>>,
        attr: &AhAttr,
        user: &mut UserCtx<'_, '_, D>,
    ) -> Result<Arc<Self>> {
        Self::create_with(pd, attr, Some(user))
    }

    /// Creates an AH for a kernel consumer (upstream `rdma_create_ah()`).
    ///
    /// # Errors
    ///
    /// As [`Ah::create_user`].
    pub fn create(pd: &Arc<Pd<D>>, attr: &AhAttr) -> Result<Arc<Self>> {
        Self::create_with(pd, attr, None)
    }

    fn create_with(
        pd: &Arc<Pd<D>>,
        attr: &AhAttr,
        user: Option<&mut UserCtx<'_, '_, D>>,
    ) -> Result<Arc<Self>> {
        let dev = pd.device();
        pd.check_alive()?;
        let op = dev.ops().create_ah.ok_or(EOPNOTSUPP)?;
        let imm = dev.port_immutable(attr.port_num).map_err(|_| EINVAL)?;
        if imm.link_layer == LinkLayer::Ethernet && attr.grh.is_none() {
            return Err(EINVAL);
        }
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        let drv = op(pd, attr, user)?;
        Ok(slot
            .write(Ah {
                pd: Uses::new(pd.clone()),
                attr: *attr,
                core: ObjCore::new(()),
                drv,
            })
            .into())
    }

    /// Destroys the AH (upstream `rdma_destroy_ah_user()`); the PD loses its use.
    ///
    /// # Errors
    ///
    /// `EINVAL` if already destroyed, the driver's error; the AH is handed back.
    pub fn destroy(this: Arc<Self>) -> core::result::Result<(), DestroyError<Arc<Self>>> {
        destroy(this)
    }

    /// The PD.
    pub fn pd(&self) -> &Arc<Pd<D>> {
        self.pd.get()
    }

    /// The address vector as created.
    pub fn attr(&self) -> &AhAttr {
        &self.attr
    }
}

impl<D: Driver> Destroyable for Ah<D> {
    destroy_op!(destroy_ah, pd);

    fn release(&self) {
        self.pd.release();
    }
}
