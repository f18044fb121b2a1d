// SPDX-License-Identifier: GPL-2.0

//! Memory regions for kernel consumers (upstream `ib_get_dma_mr()`,
//! `ib_alloc_mr()`, `ib_dereg_mr_user()`).

use super::{
    destroy, destroy_op, verbs_object, DestroyError, Destroyable, ObjCore, Object, Pd, UserCtx,
    Uses,
};
use super::{Dm, DmMrAttr};
use crate::driver::Driver;
use crate::restrack::{Owner, ResDetails, ResLinks, ResType};
use kernel::prelude::*;
use kernel::sync::{Arc, UniqueArc};

/// Access rights (upstream `enum ib_access_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccessFlags(pub u32);

impl AccessFlags {
    /// `IB_ACCESS_LOCAL_WRITE`.
    pub const LOCAL_WRITE: AccessFlags = AccessFlags(1);
    /// `IB_ACCESS_REMOTE_WRITE`.
    pub const REMOTE_WRITE: AccessFlags = AccessFlags(1 << 1);
    /// `IB_ACCESS_REMOTE_READ`.
    pub const REMOTE_READ: AccessFlags = AccessFlags(1 << 2);
    /// `IB_ACCESS_REMOTE_ATOMIC`.
    pub const REMOTE_ATOMIC: AccessFlags = AccessFlags(1 << 3);
    /// `IB_ACCESS_MW_BIND`.
    pub const MW_BIND: AccessFlags = AccessFlags(1 << 4);
    /// `IB_ZERO_BASED`.
    pub const ZERO_BASED: AccessFlags = AccessFlags(1 << 5);
    /// `IB_ACCESS_ON_DEMAND`.
    pub const ON_DEMAND: AccessFlags = AccessFlags(1 << 6);
    /// `IB_ACCESS_HUGETLB`.
    pub const HUGETLB: AccessFlags = AccessFlags(1 << 7);
    /// `IB_ACCESS_FLUSH_GLOBAL`.
    pub const FLUSH_GLOBAL: AccessFlags = AccessFlags(1 << 8);
    /// `IB_ACCESS_FLUSH_PERSISTENT`.
    pub const FLUSH_PERSISTENT: AccessFlags = AccessFlags(1 << 9);
    /// `IB_ACCESS_RELAXED_ORDERING`, the first optional flag.
    pub const RELAXED_ORDERING: AccessFlags = AccessFlags(1 << 20);
    /// `IB_ACCESS_OPTIONAL`: bits 20..=29, which a device may ignore.
    pub const OPTIONAL: AccessFlags = AccessFlags(((1 << 30) - 1) & !((1 << 20) - 1));
    /// `IB_ACCESS_SUPPORTED`.
    pub const SUPPORTED: AccessFlags = AccessFlags(((1 << 10) - 1) | Self::OPTIONAL.0);

    /// Whether any flag of `f` is set.
    pub const fn any(self, f: AccessFlags) -> bool {
        self.0 & f.0 != 0
    }

    /// Whether any flag of `other` is set (as [`AccessFlags::any`]).
    pub const fn intersects(self, other: AccessFlags) -> bool {
        self.any(other)
    }

    /// upstream `ib_access_writable()`: the memory must be pinned writable.
    pub const fn writable(self) -> bool {
        self.any(AccessFlags(
            Self::LOCAL_WRITE.0 | Self::REMOTE_WRITE.0 | Self::REMOTE_ATOMIC.0 | Self::MW_BIND.0,
        ))
    }

    /// upstream `ib_check_mr_access()` for a device without on-demand paging
    /// or flush support: remote write or atomic need local write (`EINVAL`),
    /// unknown bits are `EINVAL`, ODP and flush are `EOPNOTSUPP`.
    ///
    /// # Errors
    ///
    /// As above.
    pub fn check(self) -> Result {
        if self.any(AccessFlags(Self::REMOTE_ATOMIC.0 | Self::REMOTE_WRITE.0))
            && !self.any(Self::LOCAL_WRITE)
        {
            return Err(EINVAL);
        }
        if self.0 & !Self::SUPPORTED.0 != 0 {
            return Err(EINVAL);
        }
        if self.any(AccessFlags(
            Self::ON_DEMAND.0 | Self::FLUSH_GLOBAL.0 | Self::FLUSH_PERSISTENT.0,
        )) {
            return Err(EOPNOTSUPP);
        }
        Ok(())
    }
}

/// A user memory registration (upstream the arguments of
/// `ops.reg_user_mr(pd, start, length, virt_addr, access_flags, ...)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserMrReq {
    /// User virtual address of the memory.
    pub start: u64,
    /// Length in bytes.
    pub length: u64,
    /// The I/O virtual address the MR is accessed with (`hca_va`).
    pub iova: u64,
    /// Access rights, checked by [`AccessFlags::check`].
    pub access: AccessFlags,
}

/// What a re-registration changes (upstream `enum ib_mr_rereg_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReregFlags(pub u32);

impl ReregFlags {
    /// `IB_MR_REREG_TRANS`: new `start`, `length` and `iova`.
    pub const TRANS: ReregFlags = ReregFlags(1);
    /// `IB_MR_REREG_PD`: a new PD.
    pub const PD: ReregFlags = ReregFlags(1 << 1);
    /// `IB_MR_REREG_ACCESS`: new access flags.
    pub const ACCESS: ReregFlags = ReregFlags(1 << 2);
    /// `IB_MR_REREG_SUPPORTED`.
    pub const SUPPORTED: ReregFlags = ReregFlags((1 << 3) - 1);

    /// Whether any flag of `f` is set.
    pub const fn has(self, f: ReregFlags) -> bool {
        self.0 & f.0 != 0
    }

    /// These flags without `f`.
    pub const fn without(self, f: ReregFlags) -> ReregFlags {
        ReregFlags(self.0 & !f.0)
    }

    /// The checks upstream `ib_uverbs_rereg_mr()` makes on the request before it looks the MR
    /// up: no flag is `EINVAL`, an unknown one `EOPNOTSUPP`, a new translation whose `start`
    /// and `iova` differ within a page `EINVAL`.
    ///
    /// # Errors
    ///
    /// As above.
    pub fn check_request(self, start: u64, iova: u64) -> Result {
        if self.0 == 0 {
            return Err(EINVAL);
        }
        if self.0 & !Self::SUPPORTED.0 != 0 {
            return Err(EOPNOTSUPP);
        }
        let page_mask = (kernel::page::PAGE_SIZE as u64) - 1;
        if self.has(Self::TRANS) && start & page_mask != iova & page_mask {
            return Err(EINVAL);
        }
        Ok(())
    }
}

/// MR types for [`Mr::alloc`] (upstream `enum ib_mr_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MrType {
    /// `IB_MR_TYPE_MEM_REG`: fast registration.
    MemReg,
    /// `IB_MR_TYPE_SG_GAPS`.
    SgGaps,
    /// `IB_MR_TYPE_DM`.
    Dm,
    /// `IB_MR_TYPE_USER`.
    User,
    /// `IB_MR_TYPE_DMA`.
    Dma,
    /// `IB_MR_TYPE_INTEGRITY`: not through [`Mr::alloc`].
    Integrity,
}

/// What the driver's MR ops return: its data and the keys.
pub struct MrCreated<T> {
    /// The driver's private data.
    pub data: T,
    /// Local key.
    pub lkey: u32,
    /// Remote key.
    pub rkey: u32,
}

/// What a driver's `rereg_user_mr` did (upstream: the op returns `NULL` when it changed the
/// MR in place, or a new `ib_mr`).
pub enum Reregistered<T> {
    /// The hardware MR was changed in place and keeps its keys; the core keeps the `Mr`. Only
    /// for a re-registration without [`ReregFlags::PD`] and [`ReregFlags::TRANS`] (the core's
    /// `Mr` keeps its PD, length and iova).
    InPlace,
    /// A new hardware MR (it may carry the old one's keys), which the core puts in the old
    /// MR's place.
    New(MrCreated<T>),
}

/// A memory region (upstream `struct ib_mr` with the driver's `D::MrData`);
/// it uses its PD.
pub struct Mr<D: Driver> {
    pd: Uses<Pd<D>>,
    /// The device memory of a DM MR (upstream `mr->dm`, counted in `dm->usecnt`).
    dm: Option<Uses<Dm<D>>>,
    lkey: u32,
    rkey: u32,
    /// upstream `mr->length`, `mr->iova`: what a user registration asked for
    /// (`ib_uverbs_reg_mr()`, `UVERBS_METHOD_REG_MR` set them after the driver), 0 for
    /// the kernel's MRs.
    length: u64,
    iova: u64,
    mr_type: MrType,
    res_id: u32,
    core: ObjCore<()>,
    drv: D::MrData,
}

verbs_object!(Mr, count = (), data = MrData);

impl<D: Driver> Mr<D> {
    fn create(
        pd: &Arc<Pd<D>>,
        mr_type: MrType,
        span: (u64, u64),
        owner: Owner,
        op: impl FnOnce() -> Result<MrCreated<D::MrData>>,
    ) -> Result<Arc<Self>> {
        Self::create_on(pd, None, mr_type, span, owner, op)
    }

    fn create_on(
        pd: &Arc<Pd<D>>,
        dm: Option<&Arc<Dm<D>>>,
        mr_type: MrType,
        (length, iova): (u64, u64),
        owner: Owner,
        op: impl FnOnce() -> Result<MrCreated<D::MrData>>,
    ) -> Result<Arc<Self>> {
        let dev = pd.device();
        pd.check_alive()?;
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        // A user MR names its PD in `rdma res` (upstream `fill_res_mr_entry()`); a
        // re-registration onto another PD makes a new entry.
        let links = ResLinks {
            ctxn: None,
            pdn: Some(pd.res_id()),
        };
        let res =
            dev.restrack()
                .add_linked(ResType::Mr, owner, ResDetails::Mr { length }, links)?;
        let res_id = res.id;
        let c = op().inspect_err(|_| dev.restrack().del(ResType::Mr, res_id))?;
        res.num.store(c.lkey, kernel::sync::atomic::Relaxed);
        res.rkey.store(c.rkey, kernel::sync::atomic::Relaxed);
        Ok(slot
            .write(Mr {
                pd: Uses::new(pd.clone()),
                dm: dm.map(|d| Uses::new(d.clone())),
                lkey: c.lkey,
                rkey: c.rkey,
                length,
                iova,
                mr_type,
                res_id,
                core: ObjCore::new(()),
                drv: c.data,
            })
            .into())
    }

    /// An MR for DMA to all memory (upstream `ib_get_dma_mr()`, used
    /// through `pd->__internal_mr`); the PD gains a use.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `get_dma_mr`, `EINVAL` for a dead PD,
    /// `ENOMEM`, the driver's error.
    pub fn get_dma_mr(pd: &Arc<Pd<D>>, access: AccessFlags, owner: Owner) -> Result<Arc<Self>> {
        let op = pd.device().ops().get_dma_mr.ok_or(EOPNOTSUPP)?;
        Self::create(pd, MrType::Dma, (0, 0), owner, || op(pd, access))
    }

    /// An MR for fast registration with up to `max_num_sg` pages (upstream
    /// `ib_alloc_mr()`); the PD gains a use.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `alloc_mr`, `EINVAL` for
    /// [`MrType::Integrity`] (upstream: use `ib_alloc_mr_integrity()`) or a
    /// dead PD, `ENOMEM`, the driver's error.
    pub fn alloc(
        pd: &Arc<Pd<D>>,
        mr_type: MrType,
        max_num_sg: u32,
        owner: Owner,
    ) -> Result<Arc<Self>> {
        let op = pd.device().ops().alloc_mr.ok_or(EOPNOTSUPP)?;
        if mr_type == MrType::Integrity {
            return Err(EINVAL);
        }
        Self::create(pd, mr_type, (0, 0), owner, || op(pd, mr_type, max_num_sg))
    }

    /// Registers user memory (upstream `ib_uverbs_reg_mr()`): `start` and
    /// `iova` must have the same offset in a page, the access flags must
    /// pass [`AccessFlags::check`]; the driver pins the memory. The PD
    /// gains a use.
    ///
    /// # Errors
    ///
    /// `EINVAL` for offsets that differ or bad flags, `EOPNOTSUPP` without
    /// `reg_user_mr` or for ODP/flush access, `EINVAL` for a dead PD,
    /// `ENOMEM`, the driver's error (`EFAULT` for unmapped memory).
    pub fn reg_user(
        pd: &Arc<Pd<D>>,
        req: &UserMrReq,
        owner: Owner,
        user: &mut UserCtx<'_, '_, D>,
    ) -> Result<Arc<Self>> {
        let page_mask = (kernel::page::PAGE_SIZE as u64) - 1;
        if req.start & page_mask != req.iova & page_mask {
            return Err(EINVAL);
        }
        req.access.check()?;
        let op = pd.device().ops().reg_user_mr.ok_or(EOPNOTSUPP)?;
        Self::create(pd, MrType::User, (req.length, req.iova), owner, || {
            op(pd, req, user)
        })
    }

    /// Registers an MR on device memory (upstream `UVERBS_HANDLER(UVERBS_METHOD_DM_MR_REG)`,
    /// after the attribute parser refused access bits past `IB_ACCESS_SUPPORTED`): the MR
    /// must be zero-based (`IB_ZERO_BASED`, else `EINVAL`), the flags must pass
    /// `ib_check_mr_access()` ([`AccessFlags::check`]), `[offset, offset + length)` must lie
    /// inside the DM (`EINVAL`), then the driver's `reg_dm_mr`. The PD and the DM gain a use
    /// (upstream `atomic_inc(&pd->usecnt)`, `atomic_inc(&dm->usecnt)`); the MR is
    /// `IB_MR_TYPE_DM` with a restrack entry.
    ///
    /// # Errors
    ///
    /// As above; `EOPNOTSUPP` without `reg_dm_mr`; `EINVAL` for a dead PD or DM; `ENOMEM`; the
    /// driver's error.
    pub fn reg_dm(
        pd: &Arc<Pd<D>>,
        dm: &Arc<Dm<D>>,
        attr: &DmMrAttr,
        owner: Owner,
    ) -> Result<Arc<Self>> {
        let op = pd.device().ops().reg_dm_mr.ok_or(EOPNOTSUPP)?;
        if !attr.access.any(AccessFlags::ZERO_BASED) {
            return Err(EINVAL);
        }
        attr.access.check()?;
        let len = dm.length();
        if attr.offset > len || attr.length > len || attr.length > len - attr.offset {
            return Err(EINVAL);
        }
        dm.check_alive()?;
        Self::create_on(pd, Some(dm), MrType::Dm, (attr.length, 0), owner, || {
            op(pd, dm, attr)
        })
    }

    /// The device memory of a DM MR.
    pub fn dm(&self) -> Option<&Arc<Dm<D>>> {
        self.dm.as_ref().map(|u| u.get())
    }

    /// Re-registers a user MR (upstream `ib_uverbs_rereg_mr()` from the MR on, after
    /// [`ReregFlags::check_request`] and the MR lookup): a DM MR is `EINVAL`; with
    /// [`ReregFlags::ACCESS`] the new flags must pass [`AccessFlags::check`]; a PD equal to the
    /// MR's drops [`ReregFlags::PD`]. When the driver changed the MR in place
    /// ([`Reregistered::InPlace`], upstream's `NULL`) this returns `None`: the `Mr`, its handle
    /// and its keys stay. Otherwise the driver made a new hardware MR (with the MR's old
    /// translation, access or PD where `flags` keeps them), which this returns as a new `Mr`
    /// holding a use of its PD, with its own restrack entry; the caller puts it in the old
    /// MR's place and deregisters the old one, which releases the old PD's use (upstream's
    /// path for a driver returning a new `ib_mr`: the PD's usecnt moves when the old MR goes).
    ///
    /// # Errors
    ///
    /// As above; `EOPNOTSUPP` without `rereg_user_mr`; `EINVAL` for a dead MR or PD; the
    /// driver's error; `EIO` for a driver answering in place to a PD or translation change
    /// (a driver bug). The old MR is unchanged on error.
    pub fn rereg_user(
        this: &Arc<Self>,
        flags: ReregFlags,
        req: &UserMrReq,
        new_pd: Option<&Arc<Pd<D>>>,
        owner: Owner,
        user: &mut UserCtx<'_, '_, D>,
    ) -> Result<Option<Arc<Self>>> {
        flags.check_request(req.start, req.iova)?;
        this.check_alive()?;
        if this.mr_type == MrType::Dm {
            return Err(EINVAL);
        }
        if flags.has(ReregFlags::ACCESS) {
            req.access.check()?;
        }
        let mut flags = flags;
        let pd = match new_pd {
            Some(p) if flags.has(ReregFlags::PD) && !Arc::ptr_eq(p, this.pd.get()) => p,
            _ => {
                flags = flags.without(ReregFlags::PD);
                this.pd.get()
            }
        };
        let op = this
            .pd
            .get()
            .device()
            .ops()
            .rereg_user_mr
            .ok_or(EOPNOTSUPP)?;
        // A new translation brings its length and iova; otherwise the MR keeps its own.
        let span = if flags.has(ReregFlags::TRANS) {
            (req.length, req.iova)
        } else {
            (this.length, this.iova)
        };
        // The restrack entry made for a new MR is dropped when the driver answers in place
        // (its own error below, which never leaves this function).
        let mut in_place = false;
        let new = Self::create(pd, MrType::User, span, owner, || {
            match op(this, flags, req, pd, user)? {
                Reregistered::New(c) => Ok(c),
                Reregistered::InPlace => {
                    in_place = true;
                    Err(EALREADY)
                }
            }
        });
        match new {
            Ok(m) => Ok(Some(m)),
            Err(_) if in_place && (flags.has(ReregFlags::PD) || flags.has(ReregFlags::TRANS)) => {
                Err(EIO)
            }
            Err(_) if in_place => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Deregisters the MR (upstream `ib_dereg_mr_user()`); the PD loses
    /// its use.
    ///
    /// # Errors
    ///
    /// `EINVAL` if already deregistered, the driver's error; the MR is
    /// handed back.
    pub fn dereg(this: Arc<Self>) -> core::result::Result<(), DestroyError<Arc<Self>>> {
        destroy(this)
    }

    /// The PD.
    pub fn pd(&self) -> &Arc<Pd<D>> {
        self.pd.get()
    }

    /// Local key.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        self.rkey
    }

    /// The length of a user registration (upstream `mr->length`; 0 for a kernel MR).
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The I/O virtual address of a user registration (upstream `mr->iova`).
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// The type.
    pub fn mr_type(&self) -> MrType {
        self.mr_type
    }
}

impl<D: Driver> Destroyable for Mr<D> {
    destroy_op!(dereg_mr, pd);

    fn release(&self) {
        if let Some(dm) = &self.dm {
            dm.release();
        }
        self.pd.release_child(ResType::Mr, self.res_id);
    }
}
