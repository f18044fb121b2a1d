// SPDX-License-Identifier: GPL-2.0

//! Device memory of type MEMIC (upstream `drivers/infiniband/hw/mlx5/dm.c`:
//! `mlx5_ib_alloc_dm()`, `handle_alloc_dm_memic()`, `mlx5_cmd_alloc_memic()`,
//! `mlx5_cmd_dealloc_memic()`, `mlx5_ib_dealloc_dm()`, `mlx5_ib_dm_mmap_free()`; `mr.c`
//! `mlx5_ib_reg_dm_mr()`).
//!
//! The device's on-chip memory is a window of BAR 0 (`device_mem_cap.memic_bar_start_addr`,
//! `memic_bar_size`). The driver keeps a bitmap of the window's pages ([`MemicDb`], upstream
//! `dev->dm.memic_alloc_pages`) and offers the firmware one range of free pages at a time with
//! ALLOC_MEMIC; the firmware places the allocation inside the range or answers `NO_RES_ERR`
//! (`-EAGAIN`), and the driver tries the next page. The allocation gets an mmap entry of
//! type `MLX5_IB_MMAP_TYPE_MEMIC` in the context's `MLX5_IB_MMAP_DEVICE_MEM` page-offset range;
//! libmlx5 maps it (`dm_mmap()`) with the page index and adds the start offset in the page.
//!
//! Lifetimes are upstream's: freeing the DM removes the entry (no new mappings); the memory is
//! given back to the firmware (DEALLOC_MEMIC, then the bitmap) when the entry's last reference
//! goes, i.e. after the last mapping of it is unmapped ([`MemicAlloc`]'s drop, upstream
//! `mlx5_ib_dm_memic_free()` from `mlx5_ib_mmap_free()`), so the firmware never hands out
//! memory a process still has mapped.
//!
//! Only MEMIC: the SW ICM types (`MLX5_IB_UAPI_DM_TYPE_*_SW_ICM`) are `EOPNOTSUPP` (no
//! `sw_owner` steering caps here), and so are the MEMIC operations (`MLX5_IB_METHOD_DM_MAP_OP_ADDR`,
//! `memic_operations` 0) and `MLX5_IB_METHOD_DM_QUERY`, which libmlx5 44 does not call for
//! `ibv_alloc_dm()`.

use crate::cmd::res::MkeyTranslation;
use crate::ib::device::Mlx5Ib;
use crate::ib::memic::{MemicDb, MEMIC_BASE_SIZE, PAGE};
use crate::ib::mr::{create_mr, Mlx5Mr};
use ib_core_rs::mm::UserVma;
use ib_core_rs::uverbs::driver_api::{
    AttrSpec, DriverCall, MethodSpec, ObjectSpec, PtrSpec, UA_MANDATORY, UA_OPTIONAL,
};
use ib_core_rs::verbs::{
    AccessFlags, Dm, DmAllocAttr, DmMrAttr, MmapEntry, MmapEntryRef, MmapRegistry, MrCreated, Pd,
    Ucontext,
};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::Arc;

/// `MLX5_IB_MMAP_DEVICE_MEM` (mlx5-abi.h): the mmap command of device memory entries.
pub(crate) const MMAP_DEVICE_MEM: u64 = 8;
/// `MLX5_IB_DM_MEMIC_ALLOWED_ACCESS` (mlx5_ib.h).
const MEMIC_ALLOWED_ACCESS: u32 = AccessFlags::LOCAL_WRITE.0
    | AccessFlags::REMOTE_WRITE.0
    | AccessFlags::REMOTE_READ.0
    | AccessFlags::REMOTE_ATOMIC.0
    | AccessFlags::ZERO_BASED.0;

crate::ib::device::driver_ids! {
    /// `MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET`, `_RESP_PAGE_INDEX`, `_REQ_TYPE`
    /// (`enum mlx5_ib_alloc_dm_attrs`, mlx5_user_ioctl_cmds.h).
    ATTR_ALLOC_DM_RESP_START_OFFSET, ATTR_ALLOC_DM_RESP_PAGE_INDEX, ATTR_ALLOC_DM_REQ_TYPE;
}
/// `MLX5_IB_UAPI_DM_TYPE_MEMIC` (`enum mlx5_ib_uapi_dm_type`).
const DM_TYPE_MEMIC: u64 = 0;
/// `UVERBS_OBJECT_DM`, `UVERBS_METHOD_DM_ALLOC` (ib_user_ioctl_cmds.h).
const OBJECT_DM: u16 = 14;
const METHOD_DM_ALLOC: u16 = 0;

/// upstream `ADD_UVERBS_ATTRIBUTES_SIMPLE(mlx5_ib_dm, UVERBS_OBJECT_DM,
/// UVERBS_METHOD_DM_ALLOC, ..)`.
const DM_ALLOC_ATTRS: &[AttrSpec] = &[
    AttrSpec::ptr_out(
        ATTR_ALLOC_DM_RESP_START_OFFSET,
        PtrSpec::ty(8),
        UA_MANDATORY,
    ),
    AttrSpec::ptr_out(ATTR_ALLOC_DM_RESP_PAGE_INDEX, PtrSpec::ty(2), UA_OPTIONAL),
    AttrSpec::const_in(ATTR_ALLOC_DM_REQ_TYPE, UA_OPTIONAL),
];
const DM_METHODS: &[MethodSpec] = &[MethodSpec::extend(METHOD_DM_ALLOC, DM_ALLOC_ATTRS)];
/// upstream `mlx5_ib_dm_defs`: the attributes mlx5 adds to the core's DM object.
pub(crate) const DM_OBJECT: ObjectSpec = ObjectSpec::extend(OBJECT_DM, DM_METHODS);

/// One MEMIC allocation: the data of its mmap entry (upstream `struct mlx5_ib_dm_memic`'s
/// `mentry`). Dropped with the entry's last reference, after the DM was freed and the last
/// mapping unmapped: DEALLOC_MEMIC then.
pub(crate) struct MemicAlloc {
    db: Arc<MemicDb>,
    /// The BAR offset of the first byte (`dm->base.dev_addr` less the BAR address).
    addr: u64,
    /// Bytes allocated (`dm->base.size`).
    size: u64,
}

impl Drop for MemicAlloc {
    fn drop(&mut self) {
        self.db.dealloc(self.addr, self.size);
    }
}

/// The driver part of a DM (upstream `struct mlx5_ib_dm_memic`).
pub(crate) struct Mlx5Dm {
    entry: Arc<MmapEntry>,
    registry: Arc<MmapRegistry>,
    /// The BAR offset of the first byte.
    addr: u64,
}

impl Drop for Mlx5Dm {
    fn drop(&mut self) {
        // upstream mlx5_dm_memic_dealloc(): rdma_user_mmap_entry_remove() (twice is nothing).
        self.registry.remove(&self.entry);
    }
}

/// upstream `mlx5_ib_alloc_dm()`: the type (`MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE`, MEMIC by
/// default; every other type `EOPNOTSUPP`), then `handle_alloc_dm_memic()`: `EOPNOTSUPP`
/// without MEMIC, the size rounded up to 64 bytes, the allocation, the mmap entry, the page
/// index and the start offset in the page out.
///
/// # Errors
///
/// As above; [`MemicDb::alloc`]'s; `ENOMEM`; `ENOENT` when the caller passed no
/// PAGE_INDEX attribute (upstream `uverbs_copy_to()` of an absent attribute). Nothing is left
/// allocated then.
pub(crate) fn alloc_dm(
    ctx: &Ucontext<Mlx5Ib>,
    attr: &DmAllocAttr,
    call: &mut DriverCall<'_, '_, Mlx5Ib>,
) -> Result<Mlx5Dm> {
    let ty = call.const_in(
        ATTR_ALLOC_DM_REQ_TYPE,
        u64::from(u32::MAX),
        Some(DM_TYPE_MEMIC),
    )?;
    if ty != DM_TYPE_MEMIC {
        return Err(EOPNOTSUPP);
    }
    let db = ctx.device().data().memic.clone().ok_or(EOPNOTSUPP)?;
    let size = attr
        .length
        .checked_next_multiple_of(MEMIC_BASE_SIZE)
        .ok_or(EINVAL)?;
    let addr = db.alloc(size, attr.alignment)?;
    let registry = ctx.mmap_entries().clone();
    let first = (MMAP_DEVICE_MEM << 16) as u32;
    let last = ((MMAP_DEVICE_MEM << 16) + 0xffff) as u32;
    // From here the entry gives the memory back when dropped (right here if the insert fails).
    let alloc = MemicAlloc { db, addr, size };
    let len = usize::try_from(size).map_err(|_| EINVAL)?;
    let entry = registry.insert_range(alloc, len, first, last)?;
    let dm = Mlx5Dm {
        entry,
        registry,
        addr,
    };
    // The outputs, in upstream's order; a failure drops `dm`, which removes the entry.
    let page_idx = (dm.entry.pgoff() & 0xffff) as u16;
    if !call.is_present(ATTR_ALLOC_DM_RESP_PAGE_INDEX) {
        return Err(ENOENT);
    }
    call.put(ATTR_ALLOC_DM_RESP_PAGE_INDEX, &page_idx.to_ne_bytes())?;
    let start_offset = addr & (PAGE - 1);
    call.put(ATTR_ALLOC_DM_RESP_START_OFFSET, &start_offset.to_ne_bytes())?;
    Ok(dm)
}

/// upstream `mlx5_ib_dealloc_dm()` for MEMIC: removes the mmap entry; the memory goes back
/// to the firmware once no mapping holds it ([`MemicAlloc`]).
pub(crate) fn dealloc_dm(dm: &Dm<Mlx5Ib>) -> Result {
    let d = dm.data();
    d.registry.remove(&d.entry);
    Ok(())
}

/// upstream `mlx5_ib_reg_dm_mr()` for MEMIC: access flags past
/// `MLX5_IB_DM_MEMIC_ALLOWED_ACCESS` are `EINVAL`; an mkey of access mode MEMIC from the DM's
/// BAR offset plus `offset`, `length` long (`mlx5_ib_get_dm_mr()`).
///
/// # Errors
///
/// As above; CREATE_MKEY's errno.
pub(crate) fn reg_dm_mr(
    pd: &Pd<Mlx5Ib>,
    dm: &Dm<Mlx5Ib>,
    attr: &DmMrAttr,
) -> Result<MrCreated<Mlx5Mr>> {
    if attr.access.0 & !MEMIC_ALLOWED_ACCESS != 0 {
        return Err(EINVAL);
    }
    let start = dm.data().addr.checked_add(attr.offset).ok_or(EINVAL)?;
    create_mr(
        pd,
        attr.access,
        start,
        MkeyTranslation::Memic {
            start,
            len: attr.length,
        },
        None,
    )
}

/// upstream `mlx5_ib_mmap_offset()` for a `MLX5_IB_MMAP_TYPE_MEMIC` entry: the entry's pages
/// of the window, from the allocation's page on, over the whole VMA (which must be the
/// entry's size: `rdma_user_mmap_io()`'s check, `EINVAL`).
///
/// # Errors
///
/// `EINVAL` as above; the backend's mapping error.
pub(crate) fn mmap(ctx: &Ucontext<Mlx5Ib>, r: MmapEntryRef, vma: &mut UserVma<'_>) -> Result {
    let a = r.data::<MemicAlloc>().ok_or(EINVAL)?;
    let npages = r.entry().npages() as usize;
    if vma.len() != npages * PAGE_SIZE {
        return Err(EINVAL);
    }
    let bar_off = a.addr & !(PAGE - 1);
    let hw = ctx.device().data().hw.clone();
    hw.map_dev_mem(vma, bar_off, Some(r.into_map_ref()?))
}
