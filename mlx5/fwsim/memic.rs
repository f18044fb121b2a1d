// SPDX-License-Identifier: GPL-2.0

//! On-chip device memory (MEMIC): the capability page, ALLOC_MEMIC and DEALLOC_MEMIC, and the
//! address the data path reaches it at.
//!
//! A ConnectX has a few hundred KiB of memory on the chip that the host reaches through a
//! window of BAR 0 (`device_mem_cap.memic_bar_start_addr`, `memic_bar_size`) and the device
//! through mkeys of access mode MEMIC. The firmware hands out pieces of it: ALLOC_MEMIC asks for
//! `memic_size` bytes aligned to `64 << log_memic_addr_alignment` somewhere inside
//! `[range_start_addr, range_start_addr + range_size)` of that window (upstream
//! `mlx5_cmd_alloc_memic()` offers one range of free pages at a time from its own page bitmap
//! and takes the next one on `-EAGAIN`, which is what `NO_RES_ERR` becomes); DEALLOC_MEMIC
//! gives an allocation back by its exact start and size.
//!
//! The model keeps the allocation bitmap in granules of `2^log_min_memic_alloc_size` bytes (64)
//! and a table of live allocations (owner uid, start, size). The memory itself is not here (pure
//! code, no allocation): the kernel backend owns [`SIZE`] bytes of pages per function and maps
//! them at [`crate::fwsim::dma::DEV_MEM_BUS`] in its simulated IOMMU, so that the engine reads
//! and writes it through [`crate::fwsim::dma::DmaMem`] like any other memory, and user space maps
//! the same pages (the BAR window on hardware).

use super::{fail, syndrome as syn, Cmd, CmdError, Done, Fw};
use crate::prm::cmd::{alloc_memic_in, alloc_memic_out, dealloc_memic_in};
use crate::prm::command::{AllocMemic, DeallocMemic};
use crate::prm::status::Status;

/// `device_mem_cap.log_min_memic_alloc_size`: 64-byte granules (`MLX5_MEMIC_BASE_SIZE`).
pub(crate) const LOG_GRANULE: u32 = 6;
/// Bytes of on-chip memory (`max_memic_size` and `memic_bar_size`): 256 KiB, what ConnectX-5
/// and later adapters report.
pub(crate) const SIZE: u64 = 256 * 1024;
/// `device_mem_cap.memic_bar_start_addr`: where the window starts in BAR 0 (page aligned).
pub(crate) const BAR_START: u64 = 0x0100_0000;
/// `device_mem_cap.log_max_memic_addr_alignment`: alignments up to `64 << 6` = 4 KiB.
pub(crate) const LOG_MAX_ALIGN: u32 = 6;
/// Granules of the window.
const GRANULES: usize = (SIZE >> LOG_GRANULE) as usize;
/// Live allocations kept (upstream's driver gives every allocation whole pages of its own).
pub(crate) const MAX_ALLOCS: usize = (SIZE / 4096) as usize;

/// One live allocation, in granules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Alloc {
    first: u32,
    count: u32,
    uid: u16,
    live: bool,
}

/// The allocator of one function's on-chip memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Memic {
    used: [u64; GRANULES / 64],
    allocs: [Alloc; MAX_ALLOCS],
}

impl Memic {
    /// Nothing allocated.
    pub(crate) const fn new() -> Self {
        Memic {
            used: [0; GRANULES / 64],
            allocs: [Alloc {
                first: 0,
                count: 0,
                uid: 0,
                live: false,
            }; MAX_ALLOCS],
        }
    }

    /// Frees everything (a firmware reset).
    pub(crate) fn clear(&mut self) {
        *self = Self::new();
    }

    /// Live allocations.
    pub(crate) fn count(&self) -> usize {
        self.allocs.iter().filter(|a| a.live).count()
    }

    fn is_used(&self, g: usize) -> bool {
        self.used
            .get(g / 64)
            .is_some_and(|w| w & (1u64 << (g % 64)) != 0)
    }

    fn mark(&mut self, first: usize, count: usize, used: bool) {
        for g in first..first + count {
            if let Some(w) = self.used.get_mut(g / 64) {
                if used {
                    *w |= 1u64 << (g % 64);
                } else {
                    *w &= !(1u64 << (g % 64));
                }
            }
        }
    }

    /// First fit of `count` free granules starting at a multiple of `align` inside granules
    /// `[lo, hi)`.
    fn find(&self, lo: usize, hi: usize, count: usize, align: usize) -> Option<usize> {
        let mut g = lo.next_multiple_of(align);
        while g.checked_add(count)? <= hi {
            match (g..g + count).find(|&x| self.is_used(x)) {
                None => return Some(g),
                // Restart after the used granule, aligned again.
                Some(u) => g = (u + 1).next_multiple_of(align),
            }
        }
        None
    }

    /// Allocates `size` bytes (a multiple of the granule) aligned to `64 << log_align` inside
    /// the window range `[start, start + range)` (BAR offsets); returns the BAR offset.
    pub(crate) fn alloc(
        &mut self,
        uid: u16,
        start: u64,
        range: u64,
        size: u64,
        log_align: u32,
    ) -> Result<u64, CmdError> {
        let g = 1u64 << LOG_GRANULE;
        if size == 0 || size % g != 0 || size > SIZE {
            return fail(Status::BAD_PARAM_ERR, syn::MEMIC_SIZE);
        }
        if log_align > LOG_MAX_ALIGN {
            return fail(Status::BAD_PARAM_ERR, syn::MEMIC_ALIGN);
        }
        let end = start.checked_add(range);
        let inside = start >= BAR_START
            && end.is_some_and(|e| e <= BAR_START + SIZE)
            && range >= size
            && (start - BAR_START) % g == 0;
        if !inside {
            return fail(Status::BAD_PARAM_ERR, syn::MEMIC_RANGE);
        }
        let lo = ((start - BAR_START) >> LOG_GRANULE) as usize;
        let hi = lo + (range >> LOG_GRANULE) as usize;
        let count = (size >> LOG_GRANULE) as usize;
        let slot = self
            .allocs
            .iter()
            .position(|a| !a.live)
            .ok_or(CmdError::new(Status::NO_RES_ERR, syn::MEMIC_FULL))?;
        let first = self
            .find(lo, hi, count, 1usize << log_align)
            .ok_or(CmdError::new(Status::NO_RES_ERR, syn::MEMIC_FULL))?;
        self.mark(first, count, true);
        if let Some(a) = self.allocs.get_mut(slot) {
            *a = Alloc {
                first: first as u32,
                count: count as u32,
                uid,
                live: true,
            };
        }
        Ok(BAR_START + ((first as u64) << LOG_GRANULE))
    }

    /// Frees the allocation that starts at BAR offset `start` and is `size` bytes long.
    pub(crate) fn dealloc(&mut self, uid: u16, start: u64, size: u64) -> Done {
        let Some(i) = self.allocs.iter().position(|a| {
            a.live
                && BAR_START + (u64::from(a.first) << LOG_GRANULE) == start
                && u64::from(a.count) << LOG_GRANULE == size
        }) else {
            return fail(Status::BAD_PARAM_ERR, syn::MEMIC_UNKNOWN);
        };
        let a = self.allocs.get(i).copied().unwrap_or_default();
        if a.uid != uid {
            return fail(Status::BAD_PARAM_ERR, syn::UID_MISMATCH);
        }
        self.mark(a.first as usize, a.count as usize, false);
        if let Some(s) = self.allocs.get_mut(i) {
            *s = Alloc::default();
        }
        Ok(())
    }

    /// The device bus address of `[bar_off, bar_off + len)` of the window, if all of it is
    /// inside the window.
    pub(crate) fn bus(bar_off: u64, len: u64) -> Option<u64> {
        let end = bar_off.checked_add(len)?;
        (bar_off >= BAR_START && end <= BAR_START + SIZE)
            .then(|| super::dma::DEV_MEM_BUS + (bar_off - BAR_START))
    }
}

impl Fw {
    /// Whether the function has on-chip memory (`cmd_hca_cap.device_memory`).
    pub(crate) fn has_memic(&self) -> bool {
        self.cfg.memic
    }

    /// ALLOC_MEMIC (`mlx5_cmd_alloc_memic()`): `NO_RES_ERR` when the range has no room, which
    /// the driver answers by offering the next range.
    pub(super) fn alloc_memic(&mut self, c: &mut Cmd<'_, AllocMemic>) -> Done {
        if !self.cfg.memic {
            return fail(Status::BAD_OP_ERR, syn::BAD_OPCODE);
        }
        let start = c.inbox.get64(alloc_memic_in::range_start_addr);
        let range = u64::from(c.get(alloc_memic_in::range_size));
        let size = u64::from(c.get(alloc_memic_in::memic_size));
        let align = c.get(alloc_memic_in::log_memic_addr_alignment);
        let addr = self.memic.alloc(c.uid, start, range, size, align)?;
        c.set64(alloc_memic_out::memic_start_addr, addr)
    }

    /// DEALLOC_MEMIC (`mlx5_cmd_dealloc_memic()`): the allocation's exact start and size.
    pub(super) fn dealloc_memic(&mut self, c: &mut Cmd<'_, DeallocMemic>) -> Done {
        if !self.cfg.memic {
            return fail(Status::BAD_OP_ERR, syn::BAD_OPCODE);
        }
        let start = c.inbox.get64(dealloc_memic_in::memic_start_addr);
        let size = u64::from(c.get(dealloc_memic_in::memic_size));
        self.memic.dealloc(c.uid, start, size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_first_fit_inside_the_range_and_frees_by_exact_start_and_size() {
        let mut m = Memic::new();
        // A page-sized range at the start of the window: two 2 KiB pieces fit, a third not.
        let a = m.alloc(0, BAR_START, 4096, 2048, 0).unwrap();
        assert_eq!(a, BAR_START);
        let b = m.alloc(0, BAR_START, 4096, 2048, 0).unwrap();
        assert_eq!(b, BAR_START + 2048);
        assert_eq!(
            m.alloc(0, BAR_START, 4096, 64, 0),
            Err(CmdError::new(Status::NO_RES_ERR, syn::MEMIC_FULL))
        );
        assert_eq!(m.count(), 2);
        // Wrong size or start: refused, nothing freed.
        assert_eq!(
            m.dealloc(0, a, 1024),
            Err(CmdError::new(Status::BAD_PARAM_ERR, syn::MEMIC_UNKNOWN))
        );
        assert_eq!(
            m.dealloc(0, a + 64, 2048),
            Err(CmdError::new(Status::BAD_PARAM_ERR, syn::MEMIC_UNKNOWN))
        );
        // Another uid's allocation.
        assert_eq!(
            m.dealloc(3, a, 2048),
            Err(CmdError::new(Status::BAD_PARAM_ERR, syn::UID_MISMATCH))
        );
        m.dealloc(0, a, 2048).unwrap();
        assert_eq!(m.count(), 1);
        // The freed space is found again.
        assert_eq!(m.alloc(0, BAR_START, 4096, 1024, 0), Ok(BAR_START));
        assert_eq!(m.dealloc(0, a, 2048).is_err(), true);
    }

    #[test]
    fn alignment_size_and_range_are_checked() {
        let mut m = Memic::new();
        m.alloc(0, BAR_START, 4096, 64, 0).unwrap();
        // Aligned to 64 << 2 = 256 bytes: skips to the next 256-byte boundary.
        assert_eq!(m.alloc(0, BAR_START, 4096, 64, 2), Ok(BAR_START + 256));
        let bad = |m: &mut Memic, start, range, size, al, s| {
            assert_eq!(
                m.alloc(0, start, range, size, al),
                Err(CmdError::new(Status::BAD_PARAM_ERR, s))
            )
        };
        bad(&mut m, BAR_START, 4096, 0, 0, syn::MEMIC_SIZE);
        bad(&mut m, BAR_START, 4096, 100, 0, syn::MEMIC_SIZE);
        bad(&mut m, BAR_START, 4096, SIZE + 64, 0, syn::MEMIC_SIZE);
        bad(
            &mut m,
            BAR_START,
            4096,
            64,
            LOG_MAX_ALIGN + 1,
            syn::MEMIC_ALIGN,
        );
        bad(&mut m, BAR_START - 4096, 4096, 64, 0, syn::MEMIC_RANGE);
        bad(
            &mut m,
            BAR_START + SIZE - 4096,
            8192,
            64,
            0,
            syn::MEMIC_RANGE,
        );
        bad(&mut m, BAR_START, 64, 128, 0, syn::MEMIC_RANGE);
        bad(&mut m, BAR_START + 1, 4096, 64, 0, syn::MEMIC_RANGE);
        // The whole window in one piece, after everything is freed.
        let mut m = Memic::new();
        assert_eq!(m.alloc(0, BAR_START, SIZE, SIZE, 0), Ok(BAR_START));
        assert_eq!(
            m.alloc(0, BAR_START, SIZE, 64, 0),
            Err(CmdError::new(Status::NO_RES_ERR, syn::MEMIC_FULL))
        );
    }

    #[test]
    fn at_most_one_allocation_per_page_of_the_window_is_kept() {
        let mut m = Memic::new();
        for i in 0..MAX_ALLOCS as u64 {
            m.alloc(0, BAR_START, SIZE, 64, 0)
                .unwrap_or_else(|e| panic!("{i}: {e:?}"));
        }
        assert_eq!(
            m.alloc(0, BAR_START, SIZE, 64, 0),
            Err(CmdError::new(Status::NO_RES_ERR, syn::MEMIC_FULL))
        );
    }

    #[test]
    fn bus_addresses_cover_only_the_window() {
        assert_eq!(
            Memic::bus(BAR_START, 64),
            Some(crate::fwsim::dma::DEV_MEM_BUS)
        );
        assert_eq!(
            Memic::bus(BAR_START + 4096, SIZE - 4096),
            Some(crate::fwsim::dma::DEV_MEM_BUS + 4096)
        );
        assert_eq!(Memic::bus(BAR_START + 4096, SIZE), None);
        assert_eq!(Memic::bus(BAR_START - 1, 1), None);
        assert_eq!(Memic::bus(u64::MAX, 2), None);
    }
}
