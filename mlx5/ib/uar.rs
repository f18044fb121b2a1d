// SPDX-License-Identifier: GPL-2.0

//! User UAR pages: the driver side of the mlx5 UAR object (`MLX5_IB_OBJECT_UAR`, methods
//! `MLX5_IB_METHOD_UAR_OBJ_ALLOC`/`_DESTROY`) and of the mmap of its page (upstream
//! `alloc_uar_entry()`, `mlx5_ib_mmap_offset()`, `mlx5_ib_mmap_free()`, `mmap_obj_cleanup()`,
//! main.c).
//!
//! libmlx5 44 with dynamic UARs (`mlx5_set_singleton_nc_uar()`) allocates one NC UAR object
//! per context, mmaps the returned offset, and names the page id in every CREATE_CQ
//! (`MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX`) and CREATE_QP (`MLX5_QP_FLAG_UAR_PAGE_INDEX`).
//!
//! Lifetimes are upstream's: the object ([`UarObj`]) owns an mmap entry; destroying the
//! object removes the entry (no new mappings), and the UAR itself ([`UarPage`]: DEALLOC_UAR on
//! drop) goes when the last of the entry and the mappings that hold it is gone
//! (`rdma_user_mmap_entry_remove()` + `mlx5_ib_mmap_free()`), so firmware never reuses a UAR
//! page a process can still write to.
//!
//! The entries live in the context's mmap registry (upstream `ucontext->mmap_xa`) in mlx5's
//! page-offset range.

use crate::cmd::exec;
use crate::cmd::res::{AllocUar, DeallocUar};
use crate::hw::{Mlx5Hw, UarMem};
use crate::ib::deferred::{Deferred, DeferredDeallocs};
use crate::ib::device::Mlx5Ib;
use crate::ib::dm::{self, MemicAlloc};
use crate::ib::ucontext::abi_err;
use crate::uabi;
use ib_core_rs::mm::{IoProt, UserVma};
use ib_core_rs::uverbs::driver_api::{
    Access, AttrSpec, DriverCall, MethodSpec, ObjectSpec, PtrSpec, UA_MANDATORY,
};
use ib_core_rs::verbs::{MmapEntry, MmapEntryRef, MmapRegistry, Ucontext};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A UAR page allocated for a user context (upstream `struct mlx5_user_mmap_entry` of type
/// `MLX5_IB_MMAP_TYPE_UAR_NC`/`_WC`). Dropping it deallocates the UAR (upstream
/// `mlx5_ib_mmap_free()`).
pub(crate) struct UarPage {
    hw: Arc<dyn Mlx5Hw>,
    deferred: Arc<DeferredDeallocs>,
    index: u32,
    mem: UarMem,
    wc: bool,
}

impl UarPage {
    /// The UAR index (the page id user space names in CREATE_CQ/CREATE_QP).
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// What a mapping of the page maps.
    pub(crate) fn mem(&self) -> &UarMem {
        &self.mem
    }

    /// Whether the mapping is write-combining (`BF`); otherwise uncached (`NC`).
    pub(crate) fn write_combining(&self) -> bool {
        self.wc
    }
}

impl Drop for UarPage {
    fn drop(&mut self) {
        // upstream mlx5_ib_mmap_free() -> mlx5_cmd_uar_dealloc(); it cannot fail back to anyone
        // (exec logs a refusal). The last reference of the entry can go while CQs or QPs of
        // the context still name the UAR (libmlx5 destroys its UAR object at
        // `ibv_close_device()`; a process's leftover queues go only when its file closes):
        // then the device refuses (RES_BUSY) and the deallocation is retried after the next
        // CQ/QP destroy of the device. Any other refusal is retried once the same way.
        if exec(
            &*self.hw,
            &DeallocUar {
                id: self.index,
                uid: 0,
            },
        )
        .is_err()
        {
            self.deferred.defer(Deferred::Uar(self.index));
        }
    }
}

/// mlx5's range of entry page offsets (`rdma_user_mmap_entry_insert_range()` over
/// `[MLX5_IB_MMAP_OFFSET_START << 16, (MLX5_IB_MMAP_OFFSET_END << 16) + 0xffff]`).
const PGOFF_FIRST: u32 = (uabi::MMAP_OFFSET_START << 16) as u32;
const PGOFF_LAST: u32 = ((uabi::MMAP_OFFSET_END << 16) + 0xffff) as u32;

/// A UAR object (`MLX5_IB_OBJECT_UAR`): what `UAR_OBJ_ALLOC` answers, and the mmap entry.
/// Dropping it is `UAR_OBJ_DESTROY` (upstream `mmap_obj_cleanup()`): the entry is removed; the
/// UAR is deallocated once no mapping holds its page any more.
pub(crate) struct UarObj {
    /// `MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID`: the UAR index.
    pub(crate) page_id: u32,
    /// `MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET`.
    pub(crate) mmap_offset: u64,
    /// `MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH`: one page.
    pub(crate) mmap_length: u32,
    entry: Arc<MmapEntry>,
    registry: Arc<MmapRegistry>,
}

impl ib_core_rs::uverbs::driver_api::DriverUobject for UarObj {}

impl Drop for UarObj {
    fn drop(&mut self) {
        // upstream mmap_obj_cleanup() -> rdma_user_mmap_entry_remove().
        self.registry.remove(&self.entry);
    }
}

/// upstream `UVERBS_HANDLER(MLX5_IB_METHOD_UAR_OBJ_ALLOC)` + `alloc_uar_entry()`: the type
/// (`EOPNOTSUPP` for an unknown one, and for `BF` without write-combining), ALLOC_UAR (uid 0:
/// contexts have no DEVX uid), the page user space will map, the mmap entry.
///
/// # Errors
///
/// `EOPNOTSUPP` as above; ALLOC_UAR's errno; `ENOMEM`. Nothing is left allocated then.
pub(crate) fn uar_obj_alloc(ctx: &Ucontext<Mlx5Ib>, alloc_type: u32) -> Result<UarObj> {
    let hw = &ctx.device().data().hw;
    let wc = uabi::uar_alloc_type(alloc_type, hw.wc_supported()).map_err(abi_err)?;
    let registry = ctx.mmap_entries().clone();
    let index = exec(&**hw, &AllocUar { uid: 0 })?;
    let dealloc = || {
        let _ = exec(&**hw, &DeallocUar { id: index, uid: 0 });
    };
    let mem = hw.uar_mem(index).inspect_err(|_| dealloc())?;
    // From here the page deallocates the UAR when dropped (by the registry, after the last
    // mapping; or right here if the insert fails).
    let page = UarPage {
        hw: hw.clone(),
        deferred: ctx.device().data().deferred_deallocs.clone(),
        index,
        mem,
        wc,
    };
    let entry = registry.insert_range(page, kernel::page::PAGE_SIZE, PGOFF_FIRST, PGOFF_LAST)?;
    Ok(UarObj {
        page_id: index,
        mmap_offset: uabi::mmap_offset(u64::from(entry.pgoff()), kernel::page::PAGE_SHIFT as u32),
        mmap_length: kernel::page::PAGE_SIZE as u32,
        entry,
        registry,
    })
}

/// upstream `MLX5_IB_METHOD_UAR_OBJ_DESTROY` (the uobject's cleanup): removes the entry.
pub(crate) fn uar_obj_destroy(obj: UarObj) {
    drop(obj);
}

/// `MLX5_IB_MMAP_*` commands of the legacy fixed offsets (mlx5-abi.h); entry-based offsets
/// start at [`uabi::MMAP_OFFSET_START`].
const MMAP_CMD_BELOW_ENTRIES: u64 = uabi::MMAP_OFFSET_START;

/// upstream `mlx5_ib_mmap()` → `mlx5_ib_mmap_offset()`'s lookup: the entry a mapping at page
/// offset `vm_pgoff` of `ctx`'s file maps, with a reference (the VMA keeps it until it is
/// unmapped, so the UAR outlives every mapping of it).
///
/// # Errors
///
/// `EINVAL` for an offset with no entry; the legacy commands (static UAR pages, core clock,
/// clock info: none exist with dynamic UARs and no clock pages) are `EINVAL` too, except
/// `MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES` (`ENOSYS`, as upstream).
pub(crate) fn mmap_lookup(ctx: &Ucontext<Mlx5Ib>, vm_pgoff: u64) -> Result<MmapEntryRef> {
    let cmd = (vm_pgoff >> 8) & 0xff;
    if cmd == 1 {
        return Err(ENOSYS);
    }
    // Entries from MLX5_IB_MMAP_DEVICE_MEM on (upstream mlx5_ib_mmap()'s default case).
    if cmd < MMAP_CMD_BELOW_ENTRIES && cmd != dm::MMAP_DEVICE_MEM {
        return Err(EINVAL);
    }
    // mlx5_vma_to_pgoff(): command << 16 | extended index.
    let index = (((vm_pgoff >> 16) & 0xff) << 8) | (vm_pgoff & 0xff);
    let pgoff = usize::try_from((cmd << 16) | index)?;
    ctx.mmap_entries().get_pgoff(pgoff).ok_or(EINVAL)
}

/// upstream `mlx5_ib_mmap()` for UAR pages: the entry's page mapped uncached or
/// write-combining (`rdma_user_mmap_io()`), or on the simulator its kernel page
/// (`vm_insert_page()`); the VMA holds the entry. The VMA must be shared and one page long
/// (`EINVAL`).
///
/// # Errors
///
/// As [`mmap_lookup`]; the mapping's errors.
pub(crate) fn mmap(ctx: &Ucontext<Mlx5Ib>, vma: &mut UserVma<'_>) -> Result {
    let r = mmap_lookup(ctx, vma.pgoff() as u64)?;
    if r.data::<MemicAlloc>().is_some() {
        return dm::mmap(ctx, r, vma);
    }
    let page = r.data::<UarPage>().ok_or(EINVAL)?;
    match page.mem() {
        UarMem::Trap(t) => {
            let t = t.clone();
            vma.map_trap(&t, Some(r.into_map_ref()?))
        }
        UarMem::Io { phys } => {
            let pfn = usize::try_from(*phys >> kernel::page::PAGE_SHIFT)?;
            let prot = if page.write_combining() {
                IoProt::WriteCombining
            } else {
                IoProt::Uncached
            };
            vma.map_io(pfn, kernel::page::PAGE_SIZE, prot, Some(r.into_map_ref()?))
        }
    }
}

crate::ib::device::driver_ids! {
    /// `MLX5_IB_OBJECT_UAR` (`enum mlx5_ib_objects`, mlx5_user_ioctl_cmds.h).
    OBJECT_UAR = crate::ib::device::DRIVER_NS + 8;
    /// `MLX5_IB_METHOD_UAR_OBJ_ALLOC`, `_DESTROY`.
    METHOD_UAR_OBJ_ALLOC, METHOD_UAR_OBJ_DESTROY;
    /// `MLX5_IB_ATTR_UAR_OBJ_ALLOC_*`.
    ATTR_ALLOC_HANDLE, ATTR_ALLOC_TYPE, ATTR_ALLOC_MMAP_OFFSET, ATTR_ALLOC_MMAP_LENGTH,
        ATTR_ALLOC_PAGE_ID;
    /// `MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE`.
    ATTR_DESTROY_HANDLE;
}

/// The driver method number of `UAR_OBJ_ALLOC` in [`uverbs_method`].
const HANDLER_UAR_OBJ_ALLOC: u16 = 1;

/// upstream `DECLARE_UVERBS_NAMED_METHOD(MLX5_IB_METHOD_UAR_OBJ_ALLOC, ..)`.
const UAR_OBJ_ALLOC_ATTRS: &[AttrSpec] = &[
    AttrSpec::idr(ATTR_ALLOC_HANDLE, OBJECT_UAR, Access::New, UA_MANDATORY),
    AttrSpec::const_in(ATTR_ALLOC_TYPE, UA_MANDATORY),
    AttrSpec::ptr_out(ATTR_ALLOC_PAGE_ID, PtrSpec::ty(4), UA_MANDATORY),
    AttrSpec::ptr_out(ATTR_ALLOC_MMAP_LENGTH, PtrSpec::ty(4), UA_MANDATORY),
    AttrSpec::ptr_out(ATTR_ALLOC_MMAP_OFFSET, PtrSpec::ty(8), UA_MANDATORY),
];

/// upstream `DECLARE_UVERBS_NAMED_METHOD_DESTROY(MLX5_IB_METHOD_UAR_OBJ_DESTROY, ..)`.
const UAR_OBJ_DESTROY_ATTRS: &[AttrSpec] = &[AttrSpec::idr(
    ATTR_DESTROY_HANDLE,
    OBJECT_UAR,
    Access::Destroy,
    UA_MANDATORY,
)];

const UAR_METHODS: &[MethodSpec] = &[
    MethodSpec::driver(
        METHOD_UAR_OBJ_ALLOC,
        UAR_OBJ_ALLOC_ATTRS,
        HANDLER_UAR_OBJ_ALLOC,
    ),
    MethodSpec::destroy(METHOD_UAR_OBJ_DESTROY, UAR_OBJ_DESTROY_ATTRS),
];

/// The driver's uverbs objects (upstream `DECLARE_UVERBS_NAMED_OBJECT(MLX5_IB_OBJECT_UAR, ..)`
/// in `mlx5_ib_defs`): the UAR object, destroyed by dropping its [`UarObj`].
pub(crate) const UAR_OBJECT: ObjectSpec = ObjectSpec::driver_idr(OBJECT_UAR, UAR_METHODS);

/// The driver's uverbs methods (upstream `UVERBS_HANDLER(MLX5_IB_METHOD_UAR_OBJ_ALLOC)`): the
/// type (`uverbs_get_const()` of an `enum`, at most `u32::MAX`), [`uar_obj_alloc`], the object
/// committed, then page id, mmap length and mmap offset written.
///
/// # Errors
///
/// `EINVAL` for an unknown handler or a type beyond `u32`; [`uar_obj_alloc`]'s; `EFAULT`.
pub(crate) fn uverbs_method(handler: u16, call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    if handler != HANDLER_UAR_OBJ_ALLOC {
        return Err(EINVAL);
    }
    let t = call.const_in(ATTR_ALLOC_TYPE, u64::from(u32::MAX), None)?;
    let obj = uar_obj_alloc(call.ctx(), u32::try_from(t).map_err(|_| EINVAL)?)?;
    let (offset, length, page_id) = (obj.mmap_offset, obj.mmap_length, obj.page_id);
    // upstream uverbs_finalize_uobj_create() comes before the copies.
    call.set_new_object(KBox::new(obj, GFP_KERNEL)?)?;
    call.put(ATTR_ALLOC_MMAP_OFFSET, &offset.to_ne_bytes())?;
    call.put(ATTR_ALLOC_PAGE_ID, &page_id.to_ne_bytes())?;
    call.put(ATTR_ALLOC_MMAP_LENGTH, &length.to_ne_bytes())
}
