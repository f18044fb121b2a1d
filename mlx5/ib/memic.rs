// SPDX-License-Identifier: GPL-2.0

//! The device's MEMIC window (upstream `struct mlx5_dm`, dm.c): the driver's bitmap of the
//! window's pages and the ALLOC_MEMIC/DEALLOC_MEMIC commands that place allocations in it.
//! The DM object that hands allocations to user contexts is `crate::ib::dm`.

use crate::cmd::exec;
use crate::cmd::res::{AllocMemic, DeallocMemic};
use crate::hw::{CapType, Mlx5Hw};
use crate::prm::ctx::device_mem_cap;
use kernel::page::{PAGE_SHIFT, PAGE_SIZE};
use kernel::prelude::*;
use kernel::sync::{Arc, SpinLock};

/// `PAGE_SIZE` as a BAR-offset quantity.
pub(crate) const PAGE: u64 = PAGE_SIZE as u64;

/// `MLX5_MAX_MEMIC_PAGES`: the driver's bitmap covers at most this many pages of the window.
const MAX_MEMIC_PAGES: usize = 0x100;

/// `MLX5_MEMIC_BASE_ALIGN`: the device's alignments are `64 << n`.
const MEMIC_BASE_ALIGN: u32 = 6;

/// `MLX5_MEMIC_BASE_SIZE`: allocations are whole 64-byte units.
pub(crate) const MEMIC_BASE_SIZE: u64 = 1 << MEMIC_BASE_ALIGN;

/// The device's MEMIC window and the driver's bitmap of its pages (upstream `struct mlx5_dm`:
/// `memic_alloc_pages` under `lock`).
pub(crate) struct MemicDb {
    hw: Arc<dyn Mlx5Hw>,
    /// `memic_bar_start_addr`.
    bar_start: u64,
    /// Pages of the window the bitmap covers (`memic_bar_size >> PAGE_SHIFT`, at most
    /// [`MAX_MEMIC_PAGES`]).
    pages: usize,
    /// `log_max_memic_addr_alignment`.
    max_align: u32,
    used: Pin<KBox<SpinLock<[u64; MAX_MEMIC_PAGES / 64]>>>,
}

impl MemicDb {
    /// The window of `hw` if its `device_mem_cap` says `memic` (upstream: the dm ops are set
    /// with `MLX5_CAP_DEV_MEM(mdev, memic)`).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(hw: &Arc<dyn Mlx5Hw>) -> Result<Option<Arc<Self>>> {
        let Some(c) = hw
            .caps(CapType::DevMem)
            .and_then(crate::attrs::DevMemCaps::new)
        else {
            return Ok(None);
        };
        if !c.flag(device_mem_cap::memic) {
            return Ok(None);
        }
        let pages = (u64::from(c.get(device_mem_cap::memic_bar_size)) >> PAGE_SHIFT) as usize;
        let used = KBox::pin_init(
            kernel::new_spinlock!([0u64; MAX_MEMIC_PAGES / 64]),
            GFP_KERNEL,
        )?;
        Ok(Some(Arc::new(
            MemicDb {
                hw: hw.clone(),
                bar_start: c.get64(device_mem_cap::memic_bar_start_addr),
                pages: pages.min(MAX_MEMIC_PAGES),
                max_align: c.get(device_mem_cap::log_max_memic_addr_alignment),
                used,
            },
            GFP_KERNEL,
        )?))
    }

    /// `bitmap_find_next_zero_area()` + `bitmap_set()`: `n` free pages from `from` on.
    fn take(&self, from: usize, n: usize) -> Option<usize> {
        let mut used = self.used.lock();
        let is_used = |u: &[u64; MAX_MEMIC_PAGES / 64], i: usize| {
            u.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
        };
        let mut p = from;
        while p.checked_add(n)? <= self.pages {
            match (p..p + n).find(|&i| is_used(&used, i)) {
                None => {
                    for i in p..p + n {
                        if let Some(w) = used.get_mut(i / 64) {
                            *w |= 1 << (i % 64);
                        }
                    }
                    return Some(p);
                }
                Some(u) => p = u + 1,
            }
        }
        None
    }

    /// `bitmap_clear()`.
    fn give_back(&self, first: usize, n: usize) {
        let mut used = self.used.lock();
        for i in first..first.saturating_add(n) {
            if let Some(w) = used.get_mut(i / 64) {
                *w &= !(1 << (i % 64));
            }
        }
    }

    /// upstream `mlx5_cmd_alloc_memic()`: `size` bytes (a multiple of 64) at an alignment of
    /// `2^alignment` bytes; the BAR offset of the allocation.
    ///
    /// # Errors
    ///
    /// `EINVAL` for size 0 or an alignment past `log_max_memic_addr_alignment`; `ENOMEM` when
    /// no range of free pages has room; ALLOC_MEMIC's errno other than `EAGAIN`.
    pub(crate) fn alloc(&self, size: u64, alignment: u32) -> Result<u64> {
        if size == 0 || size & (MEMIC_BASE_SIZE - 1) != 0 {
            return Err(EINVAL);
        }
        let align = alignment.saturating_sub(MEMIC_BASE_ALIGN);
        if align > self.max_align {
            return Err(EINVAL);
        }
        let n = usize::try_from(size.div_ceil(PAGE)).map_err(|_| EINVAL)?;
        let range_size = u32::try_from(n as u64 * PAGE).map_err(|_| EINVAL)?;
        let size32 = u32::try_from(size).map_err(|_| EINVAL)?;
        let mut from = 0usize;
        while from < self.pages {
            let Some(first) = self.take(from, n) else {
                break;
            };
            let cmd = AllocMemic {
                range_start: self.bar_start + first as u64 * PAGE,
                range_size,
                size: size32,
                log_align: align,
            };
            match exec(&*self.hw, &cmd) {
                Ok(addr) => return Ok(addr),
                Err(e) => {
                    self.give_back(first, n);
                    if e != EAGAIN {
                        return Err(e);
                    }
                    from = first + 1;
                }
            }
        }
        Err(ENOMEM)
    }

    /// upstream `mlx5_cmd_dealloc_memic()`: the pages go back to the bitmap only if the
    /// firmware took the memory back (exec logs a refusal).
    pub(crate) fn dealloc(&self, addr: u64, size: u64) {
        let Ok(size32) = u32::try_from(size) else {
            return;
        };
        if exec(
            &*self.hw,
            &DeallocMemic {
                start: addr,
                size: size32,
            },
        )
        .is_err()
        {
            return;
        }
        if let Some(first) = addr
            .checked_sub(self.bar_start)
            .map(|o| (o / PAGE) as usize)
        {
            self.give_back(first, size.div_ceil(PAGE) as usize);
        }
    }
}
