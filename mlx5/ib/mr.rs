// SPDX-License-Identifier: GPL-2.0

//! Memory regions (upstream mr.c): DMA MRs and fast-register MRs of kernel consumers
//! (`mlx5_ib_get_dma_mr()`, `mlx5_ib_alloc_mr()`), user MRs and their re-registration
//! (`mlx5_ib_reg_user_mr()` → `create_real_mr()` → `reg_create()`, `mlx5_ib_rereg_user_mr()`),
//! and the CREATE_MKEY every MR is (`mlx5_ib_create_mkey()`), which DM MRs use too.
//!
//! User MRs pin their memory with the access flags' writability; their mkey's entries are of
//! the largest page size the bus addresses allow (upstream `mlx5_umem_mkc_find_best_pgsz()`);
//! every registration is a CREATE_MKEY (no mkey cache), with `umr_en`; a re-registration of
//! the access flags or PD, or of a translation the mkey has room for, is made by UMR WQEs on
//! the mkey ([`crate::ib::umr`]), keeping the keys.

use crate::cmd::exec;
use crate::cmd::res::{CreateMkey, MkeyAccess, MkeyTranslation};
use crate::ib::device::Mlx5Ib;
use crate::ib::mkey::destroy_mkey;
use crate::ib::umr::{self, UmrQp};
use crate::ib::user_mem::{UserBuf, PAGE};
use ib_core_rs::verbs::{
    AccessFlags, Mr, MrCreated, MrType, Pd, ReregFlags, Reregistered, UserCtx, UserMrReq,
};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::{new_mutex, sync::Mutex};

/// The driver part of an MR (upstream `struct mlx5_ib_mr`).
pub(crate) struct Mlx5Mr {
    /// The mkey index (`key >> 8`).
    pub(crate) index: u32,
    /// The I/O virtual address the mkey starts at (upstream `mr->ibmr.iova`).
    pub(crate) iova: u64,
    /// The MR's access flags (upstream `mr->access_flags`): those it was created with, then a
    /// re-registration's in place.
    pub(crate) access: Atomic<u32>,
    /// Set when a re-registration onto another PD handed the mkey, in place, to the MR that
    /// replaces this one: this MR's deregistration then leaves it alone.
    pub(crate) handed_on: Atomic<bool>,
    /// A user MR's pinned memory (`mr->umem`), unpinned after DESTROY_MKEY; a
    /// re-registration that keeps the translation moves it to the new MR (upstream
    /// `mlx5_ib_rereg_user_mr()` sets `mr->umem = NULL`).
    pub(crate) umem: Option<Pin<KBox<Mutex<Option<UserBuf>>>>>,
    /// The pages an MTT mkey was made for (upstream tracks it for the mkeys of its pools,
    /// `mr->ibmr.frmr.key.num_dma_blocks`, which `can_use_umr_rereg_pas()` compares with a
    /// new translation's); 0 for other access modes.
    pub(crate) mtt_room: usize,
}

pub(crate) fn mkey_access(a: AccessFlags) -> MkeyAccess {
    MkeyAccess {
        remote_atomic: a.0 & AccessFlags::REMOTE_ATOMIC.0 != 0,
        remote_write: a.0 & AccessFlags::REMOTE_WRITE.0 != 0,
        remote_read: a.0 & AccessFlags::REMOTE_READ.0 != 0,
        local_write: a.0 & AccessFlags::LOCAL_WRITE.0 != 0,
    }
}

/// upstream `mlx5_ib_get_dma_mr()`: CREATE_MKEY, PA access mode, `length64`.
///
/// # Errors
///
/// As [`create_mr_keep`].
pub(crate) fn get_dma_mr(pd: &Pd<Mlx5Ib>, access: AccessFlags) -> Result<MrCreated<Mlx5Mr>> {
    create_mr(pd, access, 0, MkeyTranslation::Pa, None)
}

/// CREATE_MKEY (uid 0) in `pd` with the next key variant, as an MR holding `umem` (upstream
/// `mlx5_ib_create_mkey()` and then `mr->ibmr.lkey = mr->ibmr.rkey = mr->mmkey.key`). The
/// memory is taken from `umem` only on success (a failed re-registration puts it back into
/// the old MR).
///
/// # Errors
///
/// `ENOMEM`, the errno of CREATE_MKEY (`Mlx5Hw::exec`).
pub(crate) fn create_mr_keep(
    pd: &Pd<Mlx5Ib>,
    access: AccessFlags,
    iova: u64,
    translation: MkeyTranslation<'_>,
    umem: &mut Option<UserBuf>,
) -> Result<MrCreated<Mlx5Mr>> {
    let d = pd.device().data();
    let slot = match umem {
        Some(_) => Some(KBox::pin_init(new_mutex!(None), GFP_KERNEL)?),
        None => None,
    };
    let mtt_room = match translation {
        MkeyTranslation::Mtt { pages, room, .. } => room.max(pages.len()),
        _ => 0,
    };
    let m = exec(
        &*d.hw,
        &CreateMkey {
            uid: 0,
            pd: pd.data().pdn,
            access: mkey_access(access),
            key_byte: d.next_mkey_variant(),
            translation,
        },
    )?;
    if let Some(b) = &slot {
        *b.lock() = umem.take();
    }
    Ok(MrCreated {
        data: Mlx5Mr {
            index: m.index,
            iova,
            access: Atomic::new(access.0),
            handed_on: Atomic::new(false),
            umem: slot,
            mtt_room,
        },
        lkey: m.key,
        rkey: m.key,
    })
}

/// [`create_mr_keep`], dropping the memory on failure.
///
/// # Errors
///
/// As [`create_mr_keep`].
pub(crate) fn create_mr(
    pd: &Pd<Mlx5Ib>,
    access: AccessFlags,
    iova: u64,
    translation: MkeyTranslation<'_>,
    umem: Option<UserBuf>,
) -> Result<MrCreated<Mlx5Mr>> {
    let mut umem = umem;
    create_mr_keep(pd, access, iova, translation, &mut umem)
}

/// upstream `mlx5_ib_alloc_mr()` → `mlx5_alloc_mem_reg_descs()`: a free MTT mkey with room for
/// `ALIGN(max_num_sg, 4)` descriptors (filled later by a fast-register WQE). Only
/// `IB_MR_TYPE_MEM_REG`; SG_GAPS (KLM) and integrity MRs are `EOPNOTSUPP` here.
///
/// # Errors
///
/// `EOPNOTSUPP` for an MR type other than `IB_MR_TYPE_MEM_REG`, `EINVAL` for `max_num_sg` 0 or
/// beyond `max_fast_reg_page_list_len`, `ENOMEM`, the errno of CREATE_MKEY.
pub(crate) fn alloc_mr(
    pd: &Pd<Mlx5Ib>,
    mr_type: MrType,
    max_num_sg: u32,
) -> Result<MrCreated<Mlx5Mr>> {
    let d = pd.device().data();
    if mr_type != MrType::MemReg {
        return Err(EOPNOTSUPP);
    }
    if max_num_sg == 0 || max_num_sg > d.attrs.max_fast_reg_page_list_len {
        return Err(EINVAL);
    }
    let ndescs = usize::try_from(max_num_sg.next_multiple_of(4)).map_err(|_| EINVAL)?;
    let pages = KVVec::from_elem(0u64, ndescs, GFP_KERNEL)?;
    create_mr(
        pd,
        AccessFlags(0),
        0,
        MkeyTranslation::Mtt {
            start: 0,
            len: 0,
            log_page_size: 12,
            pages: &pages,
            room: 0,
        },
        None,
    )
}

/// upstream `mlx5_ib_reg_user_mr()` → `create_real_mr()` → `reg_create()` (the direct
/// CREATE_MKEY path, without the mkey cache and UMR): the memory pinned with the access
/// flags' writability, an MTT mkey covering `[iova, iova + length)` in the largest pages the
/// bus addresses allow ([`UserBuf::mtt`], upstream `mlx5_umem_mkc_find_best_pgsz()`), with
/// room for one entry per `PAGE_SIZE` page (so that a re-registration's UMR fits, as
/// [`rereg_pas`] loads `PAGE_SIZE` pages), `lkey` = `rkey` = the key. On-demand paging is
/// `EOPNOTSUPP` (the device reports no ODP).
///
/// # Errors
///
/// `EOPNOTSUPP` for ODP; `EINVAL` when `start` and `iova` differ within a page (no page size
/// fits, as upstream's `mlx5_umem_mkc_find_best_pgsz()`); the pin's errno; CREATE_MKEY's
/// errno. Nothing is left behind on failure.
pub(crate) fn reg_user_mr(
    pd: &Pd<Mlx5Ib>,
    req: &UserMrReq,
    user: &mut UserCtx<'_, '_, Mlx5Ib>,
    given: Option<UserBuf>,
) -> Result<MrCreated<Mlx5Mr>> {
    if req.access.any(AccessFlags::ON_DEMAND) {
        return Err(EOPNOTSUPP);
    }
    let umem = match given {
        Some(b) => b,
        None => UserBuf::pin(user.ctx(), req.start, req.length, req.access)?,
    };
    if (req.iova ^ umem.addr()) & (PAGE - 1) != 0 {
        return Err(EINVAL);
    }
    let mtt = umem.mtt(req.iova)?;
    create_mr(
        pd,
        req.access,
        req.iova,
        MkeyTranslation::Mtt {
            start: req.iova,
            len: req.length,
            log_page_size: mtt.log_page_size,
            pages: &mtt.entries,
            room: mtt.pages,
        },
        Some(umem),
    )
}

/// upstream `mlx5_ib_rereg_user_mr()`:
///
/// * `ib_umem_check_rereg()`: new access flags that need writable pages without a new
///   translation, on memory pinned read-only, are `EACCES`;
/// * without [`ReregFlags::TRANS`], when the access flags may change by UMR
///   ([`umr::can_rereg_access`]): a UMR WQE on the MR's mkey sets the new PD and access flags
///   in place (`mlx5r_umr_rereg_pd_access()`); the keys stay. Without a PD change the core
///   keeps the MR ([`Reregistered::InPlace`], upstream's `NULL`); with one, the MR the core
///   puts in the old one's place takes the mkey, its keys and the pinned memory (the core's
///   `Mr` keeps its PD for its life; upstream moves `mr->pd`);
/// * otherwise without [`ReregFlags::TRANS`]: the old MR's pinned memory moves to a new MTT
///   mkey with the old `iova` and length and the new PD and/or access flags (upstream "revoke
///   the old MR" and `create_real_mr(new_pd, umem, mr->ibmr.iova, new_access_flags)`); the
///   old mkey is destroyed by the core right after, so no two live mkeys translate the same
///   umem for longer than the command;
/// * with [`ReregFlags::TRANS`]: new memory pinned; loaded into the MR's mkey by UMR where
///   it can be ([`rereg_pas`], upstream `umr_rereg_pas()`: the keys stay), otherwise a new
///   mkey as [`reg_user_mr`] (upstream `create_real_mr()` on the new umem).
///
/// Flags not given keep the MR's PD (the core passes it) and access flags.
///
/// # Errors
///
/// As above; [`reg_user_mr`]'s; the UMR's (`EIO` for an error completion); `EINVAL` when the
/// old MR has no pinned memory left (a kernel MR). On error the old MR is unchanged, except
/// after [`rereg_pas`]'s revoke.
pub(crate) fn rereg_user_mr(
    mr: &Mr<Mlx5Ib>,
    flags: ReregFlags,
    req: &UserMrReq,
    new_pd: &Pd<Mlx5Ib>,
    user: &mut UserCtx<'_, '_, Mlx5Ib>,
) -> Result<Reregistered<Mlx5Mr>> {
    let m = mr.data();
    let slot = m.umem.as_ref().ok_or(EINVAL)?;
    let cur = AccessFlags(m.access.load(Relaxed));
    let access = if flags.has(ReregFlags::ACCESS) {
        req.access
    } else {
        cur
    };
    if flags.has(ReregFlags::TRANS) {
        // upstream: the new memory pinned with the new (or kept) access flags.
        let umem = UserBuf::pin(user.ctx(), req.start, req.length, access)?;
        if (req.iova ^ umem.addr()) & (PAGE - 1) != 0 {
            return Err(EINVAL);
        }
        let umem = match rereg_pas(mr, req, new_pd, access, umem)? {
            Ok(r) => return Ok(r),
            Err(umem) => umem,
        };
        return reg_user_mr(
            new_pd,
            &UserMrReq {
                start: req.start,
                length: req.length,
                iova: req.iova,
                access,
            },
            user,
            Some(umem),
        )
        .map(Reregistered::New);
    }
    let mut guard = slot.lock();
    let umem = guard.take().ok_or(EINVAL)?;
    // ib_umem_check_rereg()
    if flags.has(ReregFlags::ACCESS) && access.writable() && !umem.writable() {
        *guard = Some(umem);
        return Err(EACCES);
    }
    let dev = mr.pd().device();
    match umr::can_rereg_access(dev, cur, access) {
        Ok(true) => {
            *guard = Some(umem);
            drop(guard);
            return rereg_pd_access(mr, flags.has(ReregFlags::PD), new_pd, access);
        }
        Ok(false) => {}
        Err(e) => {
            *guard = Some(umem);
            return Err(e);
        }
    }
    let mtt = match umem.mtt(m.iova) {
        Ok(t) => t,
        Err(e) => {
            *guard = Some(umem);
            return Err(e);
        }
    };
    let len = umem.len();
    let mut umem = Some(umem);
    // Not held across the new MR's creation: that takes the new MR's slot, a mutex of the
    // same class (lockdep: possible recursive locking). The file's lock serializes this
    // MR's rereg and dereg, so the empty slot is seen by nobody meanwhile.
    drop(guard);
    let r = create_mr_keep(
        new_pd,
        access,
        m.iova,
        MkeyTranslation::Mtt {
            start: m.iova,
            len,
            log_page_size: mtt.log_page_size,
            pages: &mtt.entries,
            room: mtt.pages,
        },
        &mut umem,
    );
    if r.is_err() {
        *slot.lock() = umem;
    }
    r.map(Reregistered::New)
}

/// The in-place path of [`rereg_user_mr`]: `mlx5r_umr_rereg_pd_access()` on a UMR QP, then
/// the MR's access flags; with `pd_change` a new MR that takes the mkey and the pinned memory.
fn rereg_pd_access(
    mr: &Mr<Mlx5Ib>,
    pd_change: bool,
    new_pd: &Pd<Mlx5Ib>,
    access: AccessFlags,
) -> Result<Reregistered<Mlx5Mr>> {
    let m = mr.data();
    let slot = m.umem.as_ref().ok_or(EINVAL)?;
    // Everything that can fail comes before the UMR.
    let new_slot = if pd_change {
        Some(KBox::pin_init(new_mutex!(None), GFP_KERNEL)?)
    } else {
        None
    };
    let dev = mr.pd().device();
    let u = UmrQp::open(dev)?;
    u.rereg_pd_access(dev, mr.lkey(), new_pd.data().pdn, access)?;
    m.access.store(access.0, Relaxed);
    let Some(new_slot) = new_slot else {
        return Ok(Reregistered::InPlace);
    };
    *new_slot.lock() = slot.lock().take();
    Ok(hand_on(mr, m.iova, access, new_slot))
}

/// The MR a re-registration puts in `mr`'s place: the same mkey and keys, at `iova` with
/// `access`, owning the pinned memory in `umem`; `mr` is marked so that its deregistration
/// leaves the mkey to the new one.
fn hand_on(
    mr: &Mr<Mlx5Ib>,
    iova: u64,
    access: AccessFlags,
    umem: Pin<KBox<Mutex<Option<UserBuf>>>>,
) -> Reregistered<Mlx5Mr> {
    let m = mr.data();
    m.handed_on.store(true, Relaxed);
    Reregistered::New(MrCreated {
        data: Mlx5Mr {
            index: m.index,
            iova,
            access: Atomic::new(access.0),
            handed_on: Atomic::new(false),
            umem: Some(umem),
            mtt_room: m.mtt_room,
        },
        lkey: mr.lkey(),
        rkey: mr.rkey(),
    })
}

/// upstream `can_use_umr_rereg_pas()` and `umr_rereg_pas()` for [`rereg_user_mr`] with
/// [`ReregFlags::TRANS`], on the new pinned memory `umem`: when the device can load a
/// translation by UMR ([`umr::can_load_pas`]) and the MR's mkey has room for the new pages
/// (and they fit one UMR WQE here, [`umr::XLT_MAX`]), the mkey is revoked
/// (`mlx5r_umr_revoke_mr()`), then loaded with the new translation, PD and access flags and
/// enabled (`mlx5r_umr_update_mr_pas()`); the old memory is unpinned after. The new MR the
/// core puts in the old one's place takes the mkey and its keys (the old MR's iova is fixed;
/// upstream changes `mr->ibmr.iova` in place). `Err(umem)` hands the memory back when the
/// UMR path cannot be used (upstream then makes a new mkey, `create_real_mr()`).
///
/// # Errors
///
/// The capabilities' errno, `ENOMEM`, the UMR QP's and the UMR's errors (`EIO` for an error
/// completion); after the revoke the old MR's mkey stays revoked then, as upstream's.
fn rereg_pas(
    mr: &Mr<Mlx5Ib>,
    req: &UserMrReq,
    new_pd: &Pd<Mlx5Ib>,
    access: AccessFlags,
    umem: UserBuf,
) -> Result<core::result::Result<Reregistered<Mlx5Mr>, UserBuf>> {
    let m = mr.data();
    let dev = mr.pd().device();
    let Some(slot) = m.umem.as_ref() else {
        return Ok(Err(umem));
    };
    if !umr::can_load_pas(dev, req.length)? {
        return Ok(Err(umem));
    }
    let pages = umem.pages()?;
    if pages.len() > m.mtt_room || pages.len() > umr::XLT_MAX {
        return Ok(Err(umem));
    }
    let new_slot = KBox::pin_init(new_mutex!(None), GFP_KERNEL)?;
    let mut u = UmrQp::open(dev)?;
    u.prepare_xlt(dev)?;
    u.revoke(mr.lkey())?;
    u.update_pas(
        dev,
        mr.lkey(),
        new_pd.data().pdn,
        access,
        &umr::Pas {
            iova: req.iova,
            len: req.length,
            pages: &pages,
        },
    )?;
    drop(u);
    *new_slot.lock() = Some(umem);
    // ib_umem_release(old_umem)
    let old = slot.lock().take();
    drop(old);
    Ok(Ok(hand_on(mr, req.iova, access, new_slot)))
}

/// upstream `mlx5_ib_dereg_mr()` → `destroy_mkey()`: DESTROY_MKEY.
///
/// # Errors
///
/// The errno of DESTROY_MKEY (`Mlx5Hw::exec`); the MR stays then.
pub(crate) fn dereg_mr(mr: &Mr<Mlx5Ib>) -> Result {
    // The mkey lives on in the MR a re-registration put in this one's place.
    if mr.data().handed_on.load(Relaxed) {
        return Ok(());
    }
    destroy_mkey(&*mr.pd().device().data().hw, mr.data().index)
}
