// SPDX-License-Identifier: GPL-2.0

//! Protection domains (upstream `__ib_alloc_pd()`, `ib_dealloc_pd_user()`).

use super::{destroy, destroy_op, verbs_object, DestroyError, Destroyable, ObjCore, Uses};
use super::{Ucontext, UserCtx};
use crate::device::Device;
use crate::driver::Driver;
use crate::restrack::{Owner, ResDetails, ResEntry, ResLinks, ResType};
use kernel::prelude::*;
use kernel::sync::{Arc, UniqueArc};

/// A protection domain (upstream `struct ib_pd` with the driver's
/// `D::PdData` in the same allocation).
pub struct Pd<D: Driver> {
    dev: Arc<Device<D>>,
    core: ObjCore<Arc<ResEntry>>,
    /// The user context of a user PD (upstream `pd->uobject->context`).
    uctx: Option<Arc<Ucontext<D>>>,
    drv: D::PdData,
}

verbs_object!(Pd, count = Arc<ResEntry>, data = PdData);

impl<D: Driver> Uses<Pd<D>> {
    /// Releases an object of the PD (an MR, SRQ or QP): its restrack entry
    /// (upstream `rdma_restrack_del()`), then its use of the PD.
    pub(crate) fn release_child(&self, ty: ResType, res_id: u32) {
        self.get().dev.restrack().del(ty, res_id);
        self.release();
    }
}

impl<D: Driver> Pd<D> {
    /// Allocates a PD (upstream `ib_alloc_pd()` / `__ib_alloc_pd()`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `alloc_pd`, `ENOMEM`, the driver's error.
    pub fn alloc(dev: &Arc<Device<D>>, owner: Owner) -> Result<Arc<Self>> {
        Self::alloc_with(dev, owner, None)
    }

    /// Allocates a PD of a user context (upstream `ib_uverbs_alloc_pd()`);
    /// the driver may answer in `user`'s udata.
    ///
    /// # Errors
    ///
    /// As [`Pd::alloc`].
    pub fn alloc_user(
        dev: &Arc<Device<D>>,
        owner: Owner,
        user: &mut UserCtx<'_, '_, D>,
    ) -> Result<Arc<Self>> {
        Self::alloc_with(dev, owner, Some(user))
    }

    fn alloc_with(
        dev: &Arc<Device<D>>,
        owner: Owner,
        user: Option<&mut UserCtx<'_, '_, D>>,
    ) -> Result<Arc<Self>> {
        let op = dev.ops().alloc_pd.ok_or(EOPNOTSUPP)?;
        let uctx = user.as_ref().map(|u| u.ctx().clone());
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        // A user PD names its context in `rdma res` (upstream `fill_res_pd_entry()`).
        let links = ResLinks {
            ctxn: uctx.as_ref().map(|c| c.res_id()),
            pdn: None,
        };
        let res = dev
            .restrack()
            .add_linked(ResType::Pd, owner, ResDetails::None, links)?;
        let res_id = res.id;
        let drv = op(dev, user).inspect_err(|_| dev.restrack().del(ResType::Pd, res_id))?;
        Ok(slot
            .write(Pd {
                dev: dev.clone(),
                core: ObjCore::new(res),
                uctx,
                drv,
            })
            .into())
    }

    /// Deallocates the PD (upstream `ib_dealloc_pd_user()`; `EBUSY` as
    /// `uverbs_free_pd()` while QPs, SRQs or MRs use it).
    ///
    /// # Errors
    ///
    /// `EBUSY` while used, `EINVAL` if already deallocated, the driver's
    /// error; the PD is handed back.
    pub fn dealloc(this: Arc<Self>) -> core::result::Result<(), DestroyError<Arc<Self>>> {
        destroy(this)
    }

    /// The user context of a user PD (`None` for a kernel PD).
    pub fn ucontext(&self) -> Option<&Arc<Ucontext<D>>> {
        self.uctx.as_ref()
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device<D>> {
        &self.dev
    }

    /// The restrack ID.
    pub fn res_id(&self) -> u32 {
        self.core.res_id()
    }
}

impl<D: Driver> Destroyable for Pd<D> {
    destroy_op!(dealloc_pd, dev);

    fn release(&self) {
        self.dev.restrack().del(ResType::Pd, self.res_id());
    }
}
