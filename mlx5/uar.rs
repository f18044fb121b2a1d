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
//! The entries live in a per-context table ([`MmapEntries`], upstream the core's
//! `ucontext->mmap_xa` with mlx5's page-offset range) until the core provides a registry.

use crate::cmd::exec;
use crate::cmd::res::{AllocUar, DeallocUar};
use crate::hw::{Mlx5Hw, UarMem};
use crate::ib::Mlx5Ib;
use crate::uabi;
use crate::ucontext::Mlx5Ucontext;
use ib_core_rs::verbs::Ucontext;
use kernel::prelude::*;
use kernel::{new_mutex, sync::Arc, sync::Mutex};

/// A UAR page allocated for a user context (upstream `struct mlx5_user_mmap_entry` of type
/// `MLX5_IB_MMAP_TYPE_UAR_NC`/`_WC`). Dropping it deallocates the UAR (upstream
/// `mlx5_ib_mmap_free()`).
pub(crate) struct UarPage {
    hw: Arc<dyn Mlx5Hw>,
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
        // (exec logs a refusal).
        let _ = exec(
            &*self.hw,
            &DeallocUar {
                id: self.index,
                uid: 0,
            },
        );
    }
}

/// The page offsets of a context's entry-based mappings (upstream
/// `rdma_user_mmap_entry_insert_range()` over `[MLX5_IB_MMAP_OFFSET_START << 16,
/// (MLX5_IB_MMAP_OFFSET_END << 16) + 0xffff]`, lowest free first).
#[pin_data]
pub(crate) struct MmapEntries {
    #[pin]
    entries: Mutex<KVec<(u64, Arc<UarPage>)>>,
}

const PGOFF_FIRST: u64 = uabi::MMAP_OFFSET_START << 16;
const PGOFF_LAST: u64 = (uabi::MMAP_OFFSET_END << 16) + 0xffff;

impl MmapEntries {
    /// An empty table.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(MmapEntries {
                entries <- new_mutex!(KVec::new()),
            }),
            GFP_KERNEL,
        )
    }

    /// Live entries (leak checks).
    pub(crate) fn count(&self) -> usize {
        self.entries.lock().len()
    }

    fn insert(&self, page: Arc<UarPage>) -> Result<u64> {
        let mut e = self.entries.lock();
        let mut pgoff = PGOFF_FIRST;
        while e.iter().any(|(o, _)| *o == pgoff) {
            pgoff += 1;
        }
        if pgoff > PGOFF_LAST {
            return Err(ENOMEM);
        }
        e.push((pgoff, page), GFP_KERNEL)?;
        Ok(pgoff)
    }

    fn remove(&self, pgoff: u64) {
        self.entries.lock().retain(|(o, _)| *o != pgoff);
    }

    fn get(&self, pgoff: u64) -> Option<Arc<UarPage>> {
        self.entries
            .lock()
            .iter()
            .find(|(o, _)| *o == pgoff)
            .map(|(_, p)| p.clone())
    }
}

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
    pgoff: u64,
    table: Arc<MmapEntries>,
}

impl Drop for UarObj {
    fn drop(&mut self) {
        self.table.remove(self.pgoff);
    }
}

fn mlx5_ctx(ctx: &Ucontext<Mlx5Ib>) -> Result<&Mlx5Ucontext> {
    ctx.data::<Mlx5Ucontext>().ok_or(EINVAL)
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
    let table = mlx5_ctx(ctx)?.mmap.clone();
    let index = exec(&**hw, &AllocUar { uid: 0 })?;
    let dealloc = || {
        let _ = exec(&**hw, &DeallocUar { id: index, uid: 0 });
    };
    let mem = hw.uar_mem(index).inspect_err(|_| dealloc())?;
    // From here the page deallocates the UAR when dropped.
    let page = Arc::new(
        UarPage {
            hw: hw.clone(),
            index,
            mem,
            wc,
        },
        GFP_KERNEL,
    )
    .inspect_err(|_| dealloc())?;
    let pgoff = table.insert(page)?;
    Ok(UarObj {
        page_id: index,
        mmap_offset: uabi::mmap_offset(pgoff, kernel::page::PAGE_SHIFT as u32),
        mmap_length: kernel::page::PAGE_SIZE as u32,
        pgoff,
        table,
    })
}

/// upstream `MLX5_IB_METHOD_UAR_OBJ_DESTROY` (the uobject's cleanup): removes the entry.
pub(crate) fn uar_obj_destroy(obj: UarObj) {
    drop(obj);
}

/// `MLX5_IB_MMAP_*` commands of the legacy fixed offsets (mlx5-abi.h); entry-based offsets
/// start at [`uabi::MMAP_OFFSET_START`].
const MMAP_CMD_BELOW_ENTRIES: u64 = uabi::MMAP_OFFSET_START;

/// upstream `mlx5_ib_mmap()` → `mlx5_ib_mmap_offset()`: the UAR page a mapping at page offset
/// `vm_pgoff` of `ctx`'s file maps (the mapping holds the returned reference until it is
/// unmapped), and whether it is write-combining. The caller checks what upstream's
/// `rdma_user_mmap_entry_get_pgoff()`/`rdma_user_mmap_io()` check: one page, `VM_SHARED`.
///
/// # Errors
///
/// `EINVAL` for an offset with no entry; the legacy commands (static UAR pages, core clock,
/// clock info: none exist with dynamic UARs and no clock pages) are `EINVAL` too, except
/// `MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES` (`ENOSYS`, as upstream).
pub(crate) fn mmap_lookup(ctx: &Ucontext<Mlx5Ib>, vm_pgoff: u64) -> Result<Arc<UarPage>> {
    let cmd = (vm_pgoff >> 8) & 0xff;
    if cmd == 1 {
        return Err(ENOSYS);
    }
    if cmd < MMAP_CMD_BELOW_ENTRIES {
        return Err(EINVAL);
    }
    // mlx5_vma_to_pgoff(): command << 16 | extended index.
    let index = (((vm_pgoff >> 16) & 0xff) << 8) | (vm_pgoff & 0xff);
    let pgoff = (cmd << 16) | index;
    mlx5_ctx(ctx)?.mmap.get(pgoff).ok_or(EINVAL)
}

/// The errno of a malformed request.
pub(crate) fn abi_err(e: uabi::AbiError) -> Error {
    match e {
        uabi::AbiError::Inval => EINVAL,
        uabi::AbiError::NotSupp => EOPNOTSUPP,
    }
}
