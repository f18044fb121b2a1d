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
//! Addresses: there is no DMA mapping yet. The blocks are the pages'
//! physical addresses (`page_to_phys()`), which is what the firmware
//! simulator expects. A real device needs `ib_dma_map_sgtable_attrs()` of a
//! scatterlist built from the pages; the iterator yields `u64` bus addresses
//! at `PAGE_SIZE` granularity, so the drivers' side does not change when the
//! addresses come from a DMA-mapped scatterlist instead.

use crate::device::Device;
use crate::driver::Driver;
use crate::umem::PinnedPages;
use crate::verbs::AccessFlags;
use kernel::page::{PAGE_MASK, PAGE_SIZE};
use kernel::prelude::*;

/// A pinned user buffer (upstream `struct ib_umem`).
pub struct Umem {
    address: usize,
    length: usize,
    pages: PinnedPages,
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
        let pages = PinnedPages::pin(first, npages, access.writable())?;
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

    /// The bus address of every page, in order, at `PAGE_SIZE` granularity
    /// (upstream `rdma_umem_for_each_dma_block(umem, &biter, PAGE_SIZE)` +
    /// `rdma_block_iter_dma_address()`). Today these are physical addresses
    /// (no DMA mapping, see the module documentation).
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
