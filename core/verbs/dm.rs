// SPDX-License-Identifier: GPL-2.0

//! Device memory (upstream `drivers/infiniband/core/uverbs_std_types_dm.c`: `struct ib_dm`,
//! `UVERBS_METHOD_DM_ALLOC`, `uverbs_free_dm()`): memory on the device that user space maps and
//! registers as MRs (`UVERBS_METHOD_DM_MR_REG`, [`Mr::reg_dm`](super::Mr::reg_dm)).
//!
//! A DM belongs to the user context that allocated it, not to a PD. Its MRs count in its
//! `usecnt`: freeing it while an MR is registered on it is `EBUSY` (upstream
//! `uverbs_free_dm()`). What the memory is and how user space reaches it (an mmap entry, a
//! driver attribute with the offset) is the driver's.

use super::{destroy, destroy_op, verbs_object, DestroyError, Destroyable, ObjCore, Ucontext};
use crate::device::Device;
use crate::driver::{Driver, UverbsApi};
use kernel::prelude::*;
use kernel::sync::atomic::Atomic;
use kernel::sync::{Arc, UniqueArc};

/// What a DM allocation asks for (upstream `struct ib_dm_alloc_attr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmAllocAttr {
    /// `UVERBS_ATTR_ALLOC_DM_LENGTH`: bytes.
    pub length: u64,
    /// `UVERBS_ATTR_ALLOC_DM_ALIGNMENT`: log2 of the alignment in bytes.
    pub alignment: u32,
}

/// What an MR on device memory covers (upstream `struct ib_dm_mr_attr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmMrAttr {
    /// `UVERBS_ATTR_REG_DM_MR_OFFSET`: the first byte, from the DM's start.
    pub offset: u64,
    /// `UVERBS_ATTR_REG_DM_MR_LENGTH`.
    pub length: u64,
    /// `UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS`.
    pub access: super::AccessFlags,
}

/// Device memory (upstream `struct ib_dm` with the driver's `D::DmData`).
pub struct Dm<D: Driver> {
    dev: Arc<Device<D>>,
    length: u64,
    core: ObjCore<Atomic<i32>>,
    drv: D::DmData,
}

verbs_object!(Dm, count = Atomic<i32>, data = DmData);

impl<D: Driver> Dm<D> {
    /// Allocates device memory for user context `ctx` (upstream
    /// `UVERBS_HANDLER(UVERBS_METHOD_DM_ALLOC)`: `EOPNOTSUPP` without `alloc_dm`, then the
    /// driver's `alloc_dm` with the method's attributes, which answers the driver's outputs).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `alloc_dm`/`dealloc_dm`; `ENOMEM`; the driver's error.
    pub fn alloc_user(
        ctx: &Arc<Ucontext<D>>,
        attr: &DmAllocAttr,
        call: &mut <D as UverbsApi>::Call<'_>,
    ) -> Result<Arc<Self>> {
        let dev = ctx.device();
        let op = dev.ops().alloc_dm.ok_or(EOPNOTSUPP)?;
        if dev.ops().dealloc_dm.is_none() {
            return Err(EOPNOTSUPP);
        }
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        let drv = op(ctx, attr, call)?;
        Ok(slot
            .write(Dm {
                dev: dev.clone(),
                length: attr.length,
                core: ObjCore::new(Atomic::new(0)),
                drv,
            })
            .into())
    }

    /// Frees the device memory (upstream `uverbs_free_dm()`).
    ///
    /// # Errors
    ///
    /// `EBUSY` while MRs are registered on it, `EINVAL` if already freed, the driver's error;
    /// the DM is handed back.
    pub fn dealloc(this: Arc<Self>) -> core::result::Result<(), DestroyError<Arc<Self>>> {
        destroy(this)
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device<D>> {
        &self.dev
    }

    /// The length asked for (upstream `dm->length`).
    pub fn length(&self) -> u64 {
        self.length
    }
}

impl<D: Driver> Destroyable for Dm<D> {
    destroy_op!(dealloc_dm, dev);
}
