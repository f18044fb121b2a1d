// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (upstream `ib_create_srq_user()`,
//! `ib_destroy_srq_user()`).

use super::{destroy, destroy_at_drop, Counted, DestroyError, Destroyable, Liveness, Pd, Uses};
use crate::driver::Driver;
use crate::restrack::{Owner, ResDetails, ResEntry, ResType};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, UniqueArc};

/// SRQ creation attributes (upstream `struct ib_srq_attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqInitAttr {
    /// Maximum outstanding work requests.
    pub max_wr: u32,
    /// Maximum scatter entries per work request.
    pub max_sge: u32,
}

/// A shared receive queue (upstream `struct ib_srq`); it uses its PD.
pub struct Srq<D: Driver> {
    pd: Uses<Pd<D>>,
    res: Arc<ResEntry>,
    res_id: u32,
    live: Liveness,
    drv: D::SrqData,
}

impl<D: Driver> Counted for Srq<D> {
    fn usecnt_ref(&self) -> &Atomic<i32> {
        &self.res.usecnt
    }
}

impl<D: Driver> Srq<D> {
    /// Creates an SRQ on `pd` (upstream `ib_create_srq_user()`); the PD's
    /// usecnt goes up.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `create_srq`, `EINVAL` for a dead PD,
    /// `ENOMEM`, the driver's error.
    pub fn create(pd: &Arc<Pd<D>>, attr: &SrqInitAttr, owner: Owner) -> Result<Arc<Self>> {
        let dev = pd.device();
        let op = dev.ops().create_srq.ok_or(EOPNOTSUPP)?;
        pd.check_alive()?;
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        let res = dev
            .restrack()
            .add_entry(ResType::Srq, owner, ResDetails::None)?;
        let res_id = res.id;
        let drv = op(pd, attr).inspect_err(|_| dev.restrack().del(ResType::Srq, res_id))?;
        Ok(slot
            .write(Srq {
                pd: Uses::new(pd.clone()),
                res,
                res_id,
                live: Liveness::new(),
                drv,
            })
            .into())
    }

    /// Destroys the SRQ (upstream `ib_destroy_srq_user()`).
    ///
    /// # Errors
    ///
    /// `EBUSY` while QPs use it, `EINVAL` if already destroyed, the
    /// driver's error; the SRQ is handed back.
    pub fn destroy(this: Arc<Self>) -> core::result::Result<(), DestroyError<Arc<Self>>> {
        destroy(this)
    }

    /// The PD.
    pub fn pd(&self) -> &Arc<Pd<D>> {
        self.pd.get()
    }

    /// The driver's private data.
    pub fn data(&self) -> &D::SrqData {
        &self.drv
    }

    /// Number of QPs using the SRQ (upstream `srq->usecnt`).
    pub fn usecnt(&self) -> i32 {
        self.res.usecnt.load(Relaxed)
    }
}

impl<D: Driver> Destroyable for Srq<D> {
    const OP: &'static str = "destroy_srq";

    fn users(&self) -> i32 {
        self.usecnt()
    }

    fn live(&self) -> &Liveness {
        &self.live
    }

    fn driver_destroy(&self) -> Result {
        let op = self.pd.get().device().ops().destroy_srq;
        op.map_or(Ok(()), |f| f(self))
    }

    fn release(&self) {
        self.pd.release_child(ResType::Srq, self.res_id);
    }
}

impl<D: Driver> Drop for Srq<D> {
    fn drop(&mut self) {
        destroy_at_drop(self);
    }
}
