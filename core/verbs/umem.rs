// SPDX-License-Identifier: GPL-2.0

//! Pinned user memory for drivers (upstream `struct ib_umem`, `ib_umem_get()`,
//! `ib_umem_release()`, `ib_umem_num_pages()`, `ib_umem_offset()` and the
//! `rdma_umem_for_each_dma_block()` walk, `drivers/infiniband/core/umem.c`).
//!
//! A driver creating a user CQ, QP, SRQ or MR gets the user's buffer as a
//! [`Umem`]: the pages are pinned (`FOLL_LONGTERM`, writable when the access
//! flags say so) and accounted in the process's `pinned_vm`; the driver fills
//! its translation table (mlx5: the PRM `pas[]` / MTT array) from
//! [`Umem::dma_blocks`]. Dropping the `Umem` releases everything (unpin,
//! pages dirtied if writable, accounting taken back).
//!
//! Addresses: a driver with a device maps the pages itself: [`Umem::shared_pages`]
//! gives the pinned pages as an owner of the pin ([`UmemPages`]), which mlx5
//! hands to its device's DMA mapping (`Mlx5Hw::map_umem`: the simulated IOMMU
//! keeps it for as long as the range is mapped; on a real function the DMA API
//! maps each page of [`UmemPages::page_refs`]) and programs the bus addresses it
//! gets back, as upstream programs `ib_dma_map_sgtable_attrs()` addresses. The
//! pages stay pinned until the `Umem` and every `UmemPages` of it are gone:
//! one owner for the whole range, released once, instead of a page reference
//! taken and dropped per page (262,144 of each for a 1 GiB MR). [`Umem::dma_blocks`]
//! yields the pages' physical addresses, for drivers without a device (the
//! mock driver).

use crate::device::Device;
use crate::driver::Driver;
use crate::umem::PinnedPages;
use crate::verbs::AccessFlags;
use kernel::page::{PAGE_MASK, PAGE_SIZE};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A pinned user buffer (upstream `struct ib_umem`).
pub struct Umem {
    address: usize,
    length: usize,
    pages: Arc<PinnedPages>,
}

/// The pinned pages of a [`Umem`], shared: the pin lasts until the `Umem` and every
/// `UmemPages` of it are dropped (what a device mapping holds: [`Umem::shared_pages`]).
#[derive(Clone)]
pub struct UmemPages(Arc<PinnedPages>);

impl UmemPages {
    /// How many pages.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no pages (never, for a `Umem`'s: it pins at least one).
    pub fn is_empty(&self) -> bool {
        self.0.len() == 0
    }

    /// Whether the pages were pinned for writing.
    pub fn writable(&self) -> bool {
        self.0.writable()
    }

    /// Page `i`, borrowed from the pin this value holds.
    pub fn page(&self, i: usize) -> Option<crate::page_ref::PageView<'_>> {
        self.0.page_view(i)
    }

    /// A counted reference to every page, in order (for a mapping that keeps page
    /// references rather than the pin: the DMA API of a real function).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub fn page_refs(&self) -> Result<KVec<crate::page_ref::PageRef>> {
        let n = self.0.len();
        let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
        for i in 0..n {
            v.push(self.0.page_ref(i).ok_or(EINVAL)?, GFP_KERNEL)?;
        }
        Ok(v)
    }
}

impl Umem {
    /// Pins `len` bytes of the current process's memory at `addr` (upstream
    /// `ib_umem_get(device, addr, size, access)`), writable if
    /// `access.writable()` (upstream `ib_access_writable()`).
    ///
    /// # Errors
    ///
    /// Upstream's, in upstream's order: `EINVAL` if `addr + len` overflows
    /// (also when rounded up to a page); `EPERM` if the process may not lock
    /// memory (`can_do_mlock()`); `EOPNOTSUPP` for
    /// [`AccessFlags::ON_DEMAND`] (no ODP); `EINVAL` for `len` 0 (no pages);
    /// `ENOMEM` when the pages would exceed `RLIMIT_MEMLOCK` without
    /// `CAP_IPC_LOCK`; `EFAULT` (from `pin_user_pages_fast()`) when part of
    /// the range is not mapped, or not writable for a writable pin.
    pub fn get<D: Driver>(
        dev: &Device<D>,
        addr: u64,
        len: usize,
        access: AccessFlags,
    ) -> Result<Umem> {
        // The device will matter for the DMA mapping (and upstream's
        // `cc_dma_bounce` refusal); the simulator needs none.
        let _ = dev;
        let address = usize::try_from(addr).map_err(|_| EINVAL)?;
        let end = address.checked_add(len).ok_or(EINVAL)?;
        let end_aligned = end.checked_add(PAGE_SIZE - 1).ok_or(EINVAL)? & PAGE_MASK;
        let first = address & PAGE_MASK;
        if !crate::umem::may_lock() {
            return Err(EPERM);
        }
        if access.intersects(AccessFlags::ON_DEMAND) {
            return Err(EOPNOTSUPP);
        }
        let npages = (end_aligned - first) / PAGE_SIZE;
        let pages = Arc::new(
            PinnedPages::pin(first, npages, access.writable())?,
            GFP_KERNEL,
        )?;
        Ok(Umem {
            address,
            length: len,
            pages,
        })
    }

    /// The user address (upstream `umem->address`).
    pub fn address(&self) -> u64 {
        self.address as u64
    }

    /// The length in bytes (upstream `umem->length`).
    pub fn length(&self) -> usize {
        self.length
    }

    /// The offset of the address in its first page (upstream
    /// `ib_umem_offset()`).
    pub fn offset(&self) -> usize {
        self.address & !PAGE_MASK
    }

    /// How many pages are pinned (upstream `ib_umem_num_pages()`).
    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Whether the pages were pinned for writing (upstream `umem->writable`).
    pub fn writable(&self) -> bool {
        self.pages.writable()
    }

    /// The pinned pages as an owner of the pin (what a driver maps for its
    /// device, see the module documentation).
    pub fn shared_pages(&self) -> UmemPages {
        UmemPages(self.pages.clone())
    }

    /// The physical address of every page, in order, at `PAGE_SIZE`
    /// granularity (upstream's `rdma_umem_for_each_dma_block(umem, &biter,
    /// PAGE_SIZE)` walk, for a driver that has no device to map them for:
    /// the mock driver).
    pub fn dma_blocks(&self) -> DmaBlocks<'_> {
        DmaBlocks {
            umem: self,
            next: 0,
        }
    }
}

/// The iterator of [`Umem::dma_blocks`].
pub struct DmaBlocks<'a> {
    umem: &'a Umem,
    next: usize,
}

impl Iterator for DmaBlocks<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let a = self.umem.pages.phys(self.next)?;
        self.next += 1;
        Some(a)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.umem.page_count().saturating_sub(self.next);
        (n, Some(n))
    }
}

impl ExactSizeIterator for DmaBlocks<'_> {}

/// Doorbell-record pages of one user context (upstream mlx5's
/// `mlx5_ib_db_map_user()`/`mlx5_ib_db_unmap_user()`, generic here): a
/// user's doorbell records live in its own memory, several in one page, so
/// each page is pinned once per context (keyed by its page address in the
/// mapping process's address space, as upstream keys it by `current->mm`
/// and `virt & PAGE_MASK`) and shared by the records in it. Upstream pins
/// it with access 0 (not writable), so does this.
#[pin_data]
pub struct DbPages {
    #[pin]
    pages: kernel::sync::Mutex<KVec<DbPage>>,
    next_id: kernel::sync::atomic::Atomic<u64>,
}

struct DbPage {
    id: u64,
    user_virt: usize,
    refs: usize,
    umem: Umem,
}

impl DbPages {
    /// No pages yet.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub fn new() -> Result<kernel::sync::Arc<Self>> {
        kernel::sync::Arc::pin_init(
            pin_init!(DbPages {
                pages <- core_mutex!(KVec::new(), c"rdma_db_pages"),
                next_id: kernel::sync::atomic::Atomic::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// The doorbell record at user address `virt`: its page is pinned on
    /// first use and shared after (upstream `mlx5_ib_db_map_user()`).
    /// Called in the context of the process that owns the record (a
    /// create command).
    ///
    /// # Errors
    ///
    /// As [`Umem::get`] of the page (`EFAULT` if it is not mapped);
    /// `ENOMEM`.
    pub fn map<D: Driver>(
        self: &kernel::sync::Arc<Self>,
        dev: &Device<D>,
        virt: u64,
    ) -> Result<UserDb> {
        let virt = usize::try_from(virt).map_err(|_| EINVAL)?;
        let page = virt & PAGE_MASK;
        let mut pages = self.pages.lock();
        let i = match pages
            .iter()
            .position(|p| p.user_virt == page && p.umem.pages.is_current_mm())
        {
            Some(i) => i,
            None => {
                let umem = Umem::get(dev, page as u64, PAGE_SIZE, AccessFlags(0))?;
                let id = self.next_id.fetch_add(1, kernel::sync::atomic::Relaxed);
                pages.push(
                    DbPage {
                        id,
                        user_virt: page,
                        refs: 0,
                        umem,
                    },
                    GFP_KERNEL,
                )?;
                pages.len() - 1
            }
        };
        let p = pages.get_mut(i).ok_or(EINVAL)?;
        let base = p.umem.dma_blocks().next().ok_or(EINVAL)?;
        p.refs += 1;
        Ok(UserDb {
            table: self.clone(),
            page_id: p.id,
            dma: base + (virt & !PAGE_MASK) as u64,
        })
    }

    /// How many pages are pinned.
    pub fn page_count(&self) -> usize {
        self.pages.lock().len()
    }
}

/// One mapped doorbell record; dropping it releases its page's share
/// (upstream `mlx5_ib_db_unmap_user()`: the page is unpinned with its last
/// record).
pub struct UserDb {
    table: kernel::sync::Arc<DbPages>,
    page_id: u64,
    dma: u64,
}

impl UserDb {
    /// The record's bus address (upstream `db->dma`; physical today, as
    /// [`Umem::dma_blocks`]).
    pub fn dma(&self) -> u64 {
        self.dma
    }
}

impl Drop for UserDb {
    fn drop(&mut self) {
        let gone = {
            let mut pages = self.table.pages.lock();
            match pages.iter().position(|p| p.id == self.page_id) {
                Some(i) => match pages.get_mut(i) {
                    Some(p) if p.refs > 1 => {
                        p.refs -= 1;
                        None
                    }
                    _ => pages.remove(i).ok(),
                },
                None => None,
            }
        };
        // Unpinned outside the lock.
        drop(gone);
    }
}
