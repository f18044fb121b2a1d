// SPDX-License-Identifier: GPL-2.0

//! User memory the device reads and writes: pinned buffers ([`UserBuf`], upstream
//! `ib_umem_get()`), and the doorbell records of a user context ([`DbPages`], upstream
//! `mlx5_ib_db_map_user()`/`mlx5_ib_db_unmap_user()`, doorbell.c).
//!
//! [`UserBuf`] is the driver's one seam to the core's pinned-memory object ([`Umem`]):
//! everything in the driver asks it for page addresses only. Those are bus addresses: the
//! pinned pages are mapped for the device with [`Mlx5Hw::map_pages`] (the simulated IOMMU, or
//! the DMA API on hardware) when the buffer is pinned, and unmapped when it is dropped, before
//! the pages are unpinned. KUnit builds can back a `UserBuf` with kernel pages
//! ([`UserBuf::kernel`], mapped the same way) so that the create paths, their firmware
//! commands and their unwinding are tested without a user process.

use crate::hw::{DmaMap, Mlx5Hw};
use crate::ib::device::Mlx5Ib;
use crate::ib::pgsz;
use ib_core_rs::verbs::{AccessFlags, Ucontext, Umem};
use kernel::prelude::*;
use kernel::{new_mutex, sync::Arc, sync::Mutex};

/// `PAGE_SIZE` as a `u64`.
pub(crate) const PAGE: u64 = kernel::page::PAGE_SIZE as u64;
/// `PAGE_SHIFT`.
const PAGE_SHIFT: u32 = kernel::page::PAGE_SHIFT as u32;

/// `MLX5_IB_DBR_SIZE`: a doorbell record is two big-endian 32-bit counters.
const DBR_SIZE: u64 = 8;

enum Backing {
    /// Pinned user pages (held for the mapping's lifetime).
    User { _umem: Umem },
    /// KUnit: kernel pages standing in for a user buffer.
    #[cfg(CONFIG_KUNIT = "y")]
    Kernel {
        /// The pages (held for the mapping's lifetime).
        _pages: KVec<ib_core_rs::page_ref::PageRef>,
    },
}

/// A pinned user buffer (upstream `struct ib_umem`): `[addr, addr + len)` of the caller's
/// address space, held in memory and mapped for the device for as long as the device may
/// access it.
///
/// Drop order (field order): the device mapping goes before the pages are unpinned (the
/// simulator's mapping shares the pin, [`Mlx5Hw::map_umem`]: the pages are unpinned when the
/// last of the two goes, the `Umem` here).
pub(crate) struct UserBuf {
    map: DmaMap,
    addr: u64,
    len: u64,
    _backing: Backing,
}

impl UserBuf {
    /// Pins `len` bytes at user address `addr` of `ctx`'s process (upstream `ib_umem_get()`;
    /// `access` decides whether the pages must be writable).
    ///
    /// # Errors
    ///
    /// `EINVAL` for an empty or overflowing range; [`Umem::get`]'s errors (`EFAULT` for
    /// unmapped memory, `ENOMEM` beyond `RLIMIT_MEMLOCK`, `EPERM`).
    pub(crate) fn pin(
        ctx: &Ucontext<Mlx5Ib>,
        addr: u64,
        len: u64,
        access: AccessFlags,
    ) -> Result<Self> {
        if len == 0 || addr.checked_add(len).is_none() {
            return Err(EINVAL);
        }
        let umem = Umem::get(ctx.device(), addr, usize::try_from(len)?, access)?;
        // The device may write the pages only if they were pinned writable. Upstream maps
        // every umem DMA_BIDIRECTIONAL; the simulated IOMMU is stricter, so a device write
        // into memory the access flags did not make writable (the CQ buffer is pinned
        // LOCAL_WRITE, QP buffers and doorbell pages are only read) is a DMA fault.
        let map = ctx.device().data().hw.map_umem(
            umem.shared_pages(),
            umem.writable(),
            addr & !(PAGE - 1),
        )?;
        Ok(UserBuf {
            map,
            addr,
            len,
            _backing: Backing::User { _umem: umem },
        })
    }

    /// KUnit: `len` bytes of kernel pages at a page offset `offset`, posing as a pinned user
    /// buffer, mapped for `hw`'s device (writable). Its "user address" is its bus address, so
    /// that every such buffer has an address of its own.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a length that overflows, `ENOMEM`, or the backend's mapping error.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn kernel(hw: &dyn Mlx5Hw, len: u64, offset: u64) -> Result<Self> {
        let total = usize::try_from(len.checked_add(offset).ok_or(EINVAL)?)?;
        let n = total.max(1).div_ceil(kernel::page::PAGE_SIZE);
        let mut pages = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            pages.push(ib_core_rs::page_ref::PageRef::alloc_zeroed()?, GFP_KERNEL)?;
        }
        let map = hw.map_pages(&pages, true)?;
        let addr = map.iova().checked_add(offset).ok_or(EINVAL)?;
        Ok(UserBuf {
            map,
            addr,
            len,
            _backing: Backing::Kernel { _pages: pages },
        })
    }

    /// Whether the pages were pinned (and mapped) writable (upstream `umem->writable`).
    pub(crate) fn writable(&self) -> bool {
        match &self._backing {
            Backing::User { _umem } => _umem.writable(),
            #[cfg(CONFIG_KUNIT = "y")]
            Backing::Kernel { .. } => true,
        }
    }

    /// The length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The user address of the first byte.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// The offset of the first byte in its page.
    pub(crate) fn page_offset(&self) -> u64 {
        self.addr & (PAGE - 1)
    }

    /// The bus address of each page the buffer touches, in order (upstream
    /// `mlx5_ib_populate_pas()` with `PAGE_SIZE` blocks of the DMA-mapped umem): `pas[]` of a
    /// CQ or QP, the MTT of an MR.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn pages(&self) -> Result<KVec<u64>> {
        let first = self.addr & !(PAGE - 1);
        let end = self.addr.checked_add(self.len).ok_or(EINVAL)?;
        let n = usize::try_from(end.div_ceil(PAGE) - first / PAGE)?;
        if n > self.map.page_count() {
            return Err(EINVAL);
        }
        let mut v = self.map.page_addrs()?;
        v.truncate(n);
        Ok(v)
    }

    /// The buffer's MTT at I/O virtual address `iova` (which has the buffer's page offset):
    /// entries of the largest page size the bus addresses allow (upstream
    /// `mlx5_umem_mkc_find_best_pgsz()` and `mlx5_ib_populate_pas()`, [`pgsz`]).
    ///
    /// # Errors
    ///
    /// `ENOMEM`; `EINVAL` when no page size fits (not for a buffer whose start and `iova` share
    /// their page offset).
    pub(crate) fn mtt(&self, iova: u64) -> Result<Mtt> {
        let pages = self.pages()?;
        let n_pages = pages.len();
        let shift =
            pgsz::best_page_shift(&pages, PAGE_SHIFT, iova, self.len, pgsz::MTT_PGSZ_BITMAP)
                .ok_or(EINVAL)?;
        if shift == PAGE_SHIFT {
            return Ok(Mtt {
                log_page_size: PAGE_SHIFT as u8,
                entries: pages,
                pages: n_pages,
            });
        }
        let n = usize::try_from(pgsz::block_count(iova, self.len, shift))?;
        let mut entries = KVec::with_capacity(n, GFP_KERNEL)?;
        for b in pgsz::blocks(&pages, PAGE_SHIFT, iova, self.len, shift) {
            entries.push(b, GFP_KERNEL)?;
        }
        if entries.len() != n {
            return Err(EINVAL);
        }
        Ok(Mtt {
            log_page_size: u8::try_from(shift)?,
            entries,
            pages: n_pages,
        })
    }

    /// The bus address of the first page.
    pub(crate) fn bus(&self) -> u64 {
        self.map.iova()
    }
}

/// An MR's translation of a [`UserBuf`] ([`UserBuf::mtt`]).
pub(crate) struct Mtt {
    /// log2 of the entries' page size (`mkc.log_page_size`).
    pub(crate) log_page_size: u8,
    /// The bus address of each entry's page.
    pub(crate) entries: KVec<u64>,
    /// How many `PAGE_SIZE` pages the buffer touches.
    pub(crate) pages: usize,
}

/// One pinned page of doorbell records (upstream `struct mlx5_ib_user_db_page`).
struct DbPage {
    /// The page's user address.
    addr: u64,
    /// Doorbell records mapped in it.
    refcnt: u32,
    buf: UserBuf,
}

/// The doorbell pages of a user context (upstream `context->db_page_list` under
/// `db_page_mutex`): CQs and QPs whose doorbell records share a user page share one pinned
/// page.
///
/// Deviation: upstream also keys the list by `current->mm` (a context used after `fork()`);
/// a file's objects here are always created by the process that opened it.
#[pin_data]
pub(crate) struct DbPages {
    #[pin]
    pages: Mutex<KVec<DbPage>>,
}

impl DbPages {
    /// An empty list.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(DbPages {
                pages <- new_mutex!(KVec::new()),
            }),
            GFP_KERNEL,
        )
    }

    /// Pinned pages (leak checks).
    pub(crate) fn count(&self) -> usize {
        self.pages.lock().len()
    }

    /// upstream `mlx5_ib_db_map_user()`: the doorbell record at user address `addr` (`EINVAL`
    /// if it would straddle a page); its page is pinned once per context and shared.
    ///
    /// # Errors
    ///
    /// `EINVAL`, `ENOMEM`, the pin's error.
    pub(crate) fn map(self: &Arc<Self>, ctx: &Ucontext<Mlx5Ib>, addr: u64) -> Result<DbRecord> {
        if addr & (PAGE - 1) > PAGE - DBR_SIZE {
            return Err(EINVAL);
        }
        let page = addr & !(PAGE - 1);
        let mut pages = self.pages.lock();
        let dma = if let Some(p) = pages.iter_mut().find(|p| p.addr == page) {
            p.refcnt += 1;
            p.buf.pages()?.first().copied().ok_or(EINVAL)? + (addr & (PAGE - 1))
        } else {
            // upstream pins the page with access 0 (the device writes it through DMA).
            let buf = UserBuf::pin(ctx, page, PAGE, AccessFlags(0))?;
            let base = buf.pages()?.first().copied().ok_or(EINVAL)?;
            pages.push(
                DbPage {
                    addr: page,
                    refcnt: 1,
                    buf,
                },
                GFP_KERNEL,
            )?;
            base + (addr & (PAGE - 1))
        };
        Ok(DbRecord {
            table: self.clone(),
            page,
            dma,
        })
    }

    /// KUnit: maps the doorbell record at `addr` of a kernel page posing as a user page: `buf`
    /// is that page, pinned, when the context does not hold it yet (the shared-page
    /// bookkeeping is the same as for user pages).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a missing or short buffer, `ENOMEM`, or the backend's mapping error.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn map_kernel(
        self: &Arc<Self>,
        addr: u64,
        buf: Option<UserBuf>,
    ) -> Result<DbRecord> {
        let page = addr & !(PAGE - 1);
        let mut pages = self.pages.lock();
        if let Some(p) = pages.iter_mut().find(|p| p.addr == page) {
            p.refcnt += 1;
        } else {
            pages.push(
                DbPage {
                    addr: page,
                    refcnt: 1,
                    buf: buf.ok_or(EINVAL)?,
                },
                GFP_KERNEL,
            )?;
        }
        let bus = pages
            .iter()
            .find(|p| p.addr == page)
            .map(|p| p.buf.bus())
            .ok_or(EINVAL)?;
        Ok(DbRecord {
            table: self.clone(),
            page,
            dma: bus + (addr & (PAGE - 1)),
        })
    }
}

/// A mapped doorbell record (upstream `struct mlx5_db` of a user object); dropping it is
/// `mlx5_ib_db_unmap_user()` (the page is unpinned with its last record).
pub(crate) struct DbRecord {
    table: Arc<DbPages>,
    page: u64,
    /// The record's address for the device (`db->dma`).
    pub(crate) dma: u64,
}

impl Drop for DbRecord {
    fn drop(&mut self) {
        let mut pages = self.table.pages.lock();
        if let Some(i) = pages.iter().position(|p| p.addr == self.page) {
            let last = {
                let p = &mut pages[i];
                p.refcnt -= 1;
                p.refcnt == 0
            };
            if last {
                // Unpins the page.
                drop(pages.remove(i));
            }
        }
    }
}
