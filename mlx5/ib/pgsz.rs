// SPDX-License-Identifier: GPL-2.0

//! The page size of an MTT mkey's translation (upstream `mlx5_umem_mkc_find_best_pgsz()` →
//! `ib_umem_find_best_pgsz()`, drivers/infiniband/core/umem.c) and its entries
//! (`mlx5_ib_populate_pas()` over `rdma_umem_for_each_dma_block()`). Pure: the kernel crate
//! and the host crate `rdma-rs-prm` (its tests) compile this file unchanged.
//!
//! An entry of `1 << shift` bytes maps an aligned block of the MR's I/O virtual addresses to
//! an aligned block of bus addresses, so the largest usable size is set by the low bits in
//! which a page's bus address and its virtual address differ, and by where the bus pages stop
//! being contiguous. Physically contiguous, equally aligned memory (huge pages, an IOMMU range
//! aligned to the user address) takes one entry per huge page instead of one per 4 KiB page:
//! a smaller CREATE_MKEY mailbox and fewer runs for the device to keep.

/// The entry sizes an MTT mkey may use: 4 KiB (`MLX5_ADAPTER_PAGE_SHIFT`, upstream
/// `get_min_log_entity_size_cap()`) to 2 GiB (`get_max_log_entity_size_cap()`: 31 without
/// `umr_log_entity_size_5`, which this device does not report).
pub(crate) const MTT_PGSZ_BITMAP: u64 = mask(31, 12);

/// `GENMASK_ULL(hi, lo)`.
const fn mask(hi: u32, lo: u32) -> u64 {
    (u64::MAX >> (63 - hi)) & (u64::MAX << lo)
}

/// upstream `ib_umem_find_best_pgsz(umem, bitmap, iova)` for a buffer of `len` bytes mapped at
/// I/O virtual address `iova` (which has the buffer's page offset), whose pages of
/// `1 << page_shift` bytes (`PAGE_SIZE`) are at the bus addresses `pages`, in order: log2 of
/// the largest size in `bitmap` such that every block of that size of `[iova, iova + len)` is
/// one contiguous bus range at the same alignment. `None` when no size in `bitmap` fits
/// (upstream's 0: `EINVAL`), or for an empty buffer.
pub(crate) fn best_page_shift(
    pages: &[u64],
    page_shift: u32,
    iova: u64,
    len: u64,
    bitmap: u64,
) -> Option<u32> {
    let last = iova.checked_add(len.checked_sub(1)?)?;
    // Sizes above the span of the range are not wanted: the bits in which the first and the
    // last address differ (upstream `bits_per((length - 1 + virt) ^ virt)`).
    let span_bits = 64 - (last ^ iova).leading_zeros();
    let mut m = bitmap & mask(63, span_bits.clamp(1, 63));
    let page = 1u64 << page_shift;
    let mut va = iova & !(page - 1);
    for (i, &p) in pages.iter().enumerate() {
        m |= p ^ va;
        va = va.wrapping_add(page);
        // The end of a contiguous run (not the last page): a block may not straddle it.
        if pages.get(i + 1).is_some_and(|&n| n != p.wrapping_add(page)) {
            m |= va;
        }
    }
    let mut b = bitmap;
    if m != 0 {
        b &= mask(m.trailing_zeros(), 0);
    }
    (b != 0).then(|| 63 - b.leading_zeros())
}

/// The bus address of each block of `1 << shift` bytes covering `[iova, iova + len)`, in order
/// (upstream `mlx5_ib_populate_pas()`: the block-aligned DMA address of each), from the pages
/// `pages` as [`best_page_shift`] takes them. `shift` must be one it returned for them; a
/// block whose page is not in `pages` is left out.
pub(crate) fn blocks(
    pages: &[u64],
    page_shift: u32,
    iova: u64,
    len: u64,
    shift: u32,
) -> impl Iterator<Item = u64> + '_ {
    let size = 1u64 << shift;
    let base = iova & !(size - 1);
    let page_base = iova >> page_shift;
    let n = block_count(iova, len, shift);
    (0..n).filter_map(move |k| {
        // The first page of the block that is in the buffer.
        let start = base.wrapping_add(k.wrapping_mul(size)).max(iova);
        let i = usize::try_from((start >> page_shift) - page_base).ok()?;
        pages.get(i).map(|p| p & !(size - 1))
    })
}

/// upstream `ib_umem_num_dma_blocks()`: how many blocks of `1 << shift` bytes cover
/// `[iova, iova + len)`.
pub(crate) fn block_count(iova: u64, len: u64, shift: u32) -> u64 {
    let size = 1u64 << shift;
    let first = iova >> shift;
    let end = iova.saturating_add(len).saturating_add(size - 1) >> shift;
    end.saturating_sub(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    const P: u64 = 4096;
    const M2: u64 = 2 << 20;

    /// `n` contiguous pages from bus address `bus`.
    fn run(bus: u64, n: u64) -> Vec<u64> {
        (0..n).map(|i| bus + i * P).collect()
    }

    #[test]
    fn contiguous_and_aligned_takes_large_entries() {
        // 4 MiB at a user address 2 MiB-aligned, on bus pages at the same alignment (they
        // differ from the user address from bit 32 up).
        let iova = 0x7f00_0020_0000;
        let pages = run(0x1_0020_0000, 1024);
        let s = best_page_shift(&pages, 12, iova, 4 << 20, MTT_PGSZ_BITMAP).unwrap();
        // The range's first and last address differ up to bit 22: one 8 MiB block covers it.
        assert_eq!(s, 23);
        let b: Vec<u64> = blocks(&pages, 12, iova, 4 << 20, s).collect();
        assert_eq!(b, [0x1_0000_0000]);
        // Up to 2 MiB: two entries.
        let s2 = best_page_shift(&pages, 12, iova, 4 << 20, mask(21, 12)).unwrap();
        assert_eq!(s2, 21);
        let b: Vec<u64> = blocks(&pages, 12, iova, 4 << 20, s2).collect();
        assert_eq!(b, [0x1_0020_0000, 0x1_0020_0000 + M2]);
    }

    #[test]
    fn misaligned_bus_address_stays_at_4k() {
        // Contiguous, but the bus address is 4 KiB off the user address's 2 MiB alignment in
        // bit 12: only 4 KiB entries map it.
        let iova = 0x40_0000;
        let pages = run(0x80_1000, 512);
        let s = best_page_shift(&pages, 12, iova, 512 * P, MTT_PGSZ_BITMAP).unwrap();
        assert_eq!(s, 12);
        assert_eq!(blocks(&pages, 12, iova, 512 * P, s).count(), 512);
        assert!(blocks(&pages, 12, iova, 512 * P, s).eq(pages.iter().copied()));
    }

    #[test]
    fn a_break_in_contiguity_limits_the_size() {
        // Two 64 KiB runs, each 64 KiB-aligned with the user address, not adjacent: 64 KiB
        // entries (a 128 KiB block would straddle the break).
        let iova = 0x10_0000;
        let mut pages = run(0x200_0000, 16);
        pages.extend(run(0x500_0000 + 0x1_0000, 16));
        let s = best_page_shift(&pages, 12, iova, 32 * P, MTT_PGSZ_BITMAP).unwrap();
        assert_eq!(s, 16);
        let b: Vec<u64> = blocks(&pages, 12, iova, 32 * P, s).collect();
        assert_eq!(b, [0x200_0000, 0x501_0000]);
        // A break after an unaligned run: back to 4 KiB.
        let mut pages = run(0x200_0000, 3);
        pages.extend(run(0x700_3000, 13));
        assert_eq!(
            best_page_shift(&pages, 12, iova, 16 * P, MTT_PGSZ_BITMAP),
            Some(12)
        );
    }

    #[test]
    fn offset_start_and_partial_blocks() {
        // 20 KiB from offset 0x800 of a 16 KiB-aligned, contiguous buffer: 16 KiB entries,
        // the first block starting before the buffer (its aligned bus address), two blocks.
        let iova = 0x9_0000 + 0x800;
        let pages = run(0x3_0000, 6);
        let len = 20 * 1024;
        let s = best_page_shift(&pages, 12, iova, len, mask(14, 12)).unwrap();
        assert_eq!(s, 14);
        assert_eq!(block_count(iova, len, s), 2);
        let b: Vec<u64> = blocks(&pages, 12, iova, len, s).collect();
        assert_eq!(b, [0x3_0000, 0x3_4000]);
        // The same at 4 KiB: one entry per page touched.
        assert_eq!(block_count(iova, len, 12), 6);
        assert!(blocks(&pages, 12, iova, len, 12).eq(pages.iter().copied()));
    }

    #[test]
    fn scattered_pages_and_edge_cases() {
        let pages = [0x5000, 0x1000, 0x9000];
        assert_eq!(
            best_page_shift(&pages, 12, 0x7000_1000, 3 * P, MTT_PGSZ_BITMAP),
            Some(12)
        );
        // One byte: 4 KiB.
        assert_eq!(
            best_page_shift(&[0x20_0000], 12, 0x20_0000, 1, MTT_PGSZ_BITMAP),
            Some(12)
        );
        // Empty, or a bitmap with no size.
        assert_eq!(
            best_page_shift(&pages, 12, 0x1000, 0, MTT_PGSZ_BITMAP),
            None
        );
        assert_eq!(
            best_page_shift(&[0x1000], 12, 0x2000, 1, mask(21, 13)),
            None
        );
        assert_eq!(
            best_page_shift(&[0x1000], 12, u64::MAX, 2, MTT_PGSZ_BITMAP),
            None
        );
    }
}
