// SPDX-License-Identifier: GPL-2.0

//! The simulated IOMMU of one function: the only way the device model reaches memory.
//!
//! Each [`Mlx5Hw::map_pages`](crate::hw::Mlx5Hw::map_pages) or
//! [`Mlx5Hw::map_umem`](crate::hw::Mlx5Hw::map_umem) (pinned user pages of a CQ/QP
//! buffer, an MR or a doorbell page; the pages of [`Mlx5Hw::alloc_coherent`] for kernel
//! queues) gets one contiguous bus range (IOVA), page granular, followed by an unmapped guard
//! page, so that a device access that runs past a buffer faults instead of reaching the next
//! one. IOVAs are handed out upwards and never reused while the function lives (a stale
//! address the driver forgot is a fault, not someone else's memory); the table stays sorted
//! by IOVA, so a translation is a binary search with no allocation. A mapped page cannot be
//! freed under the device: a mapping of kernel pages holds a [`PageRef`] per page, a mapping
//! of pinned user memory ([`Iommu::map_umem`]) holds the pin itself
//! ([`UmemPages`]), one owner for all its pages, so mapping and unmapping it take no per-page
//! step.
//!
//! [`DmaMem`] over the table is what the data-path engine gets: reads, writes and the 64-bit
//! atomics translate bus address → page + offset and copy through a temporary kernel mapping
//! (`rust/page_ref.rs`); an address that is not mapped, or not mapped writable for a write, is
//! a [`DmaFault`] and nothing is accessed.
//!
//! [`Mlx5Hw::alloc_coherent`]: crate::hw::Mlx5Hw::alloc_coherent

use crate::fwsim::dma::{DmaFault, DmaMem, DEV_MEM_BUS};
use crate::hw::{DmaDomain, DmaMap};
use ib_core_rs::page_ref::{PageRef, PageView};
use ib_core_rs::verbs::UmemPages;
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::{new_mutex, sync::Arc, sync::Mutex};

/// `PAGE_SIZE` as a bus-address quantity.
const PAGE: u64 = PAGE_SIZE as u64;

/// The first IOVA: far from 0 and from anything that looks like a kernel or physical
/// address, so that a pointer handed to the device by mistake faults.
const IOVA_BASE: u64 = 0x0000_00d0_0000_0000;

/// The block within which a mapping of pinned user memory keeps its user address's offset
/// ([`Iommu::map_umem`]): a huge page.
const UMEM_ALIGN: u64 = 2 << 20;

/// What keeps the pages of a mapping allocated.
enum Pages {
    /// Kernel pages: a reference each.
    Refs(KVec<PageRef>),
    /// Pinned user memory: its pin.
    Pinned(UmemPages),
}

impl Pages {
    fn len(&self) -> usize {
        match self {
            Pages::Refs(v) => v.len(),
            Pages::Pinned(p) => p.len(),
        }
    }

    fn get(&self, i: usize) -> Option<PageView<'_>> {
        match self {
            Pages::Refs(v) => v.get(i).map(PageRef::view),
            Pages::Pinned(p) => p.page(i),
        }
    }
}

/// One mapping.
struct Mapping {
    iova: u64,
    writable: bool,
    pages: Pages,
}

impl Mapping {
    fn end(&self) -> u64 {
        self.iova + self.pages.len() as u64 * PAGE
    }
}

struct Table {
    /// The next free IOVA.
    next: u64,
    /// Live mappings, sorted by `iova`.
    maps: KVec<Mapping>,
    /// Accesses refused ([`DmaFault`]s), for tests and debugfs.
    faults: u64,
    /// The function's own on-chip memory (MEMIC) at [`DEV_MEM_BUS`]: not a mapping of the
    /// driver's (it is not counted in [`Iommu::mappings`]), the device's pages.
    dev_mem: Option<Mapping>,
}

/// The IOMMU of one simulated function.
#[pin_data]
pub(crate) struct Iommu {
    #[pin]
    table: Mutex<Table>,
}

impl Iommu {
    /// An IOMMU with nothing mapped.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Iommu {
                table <- new_mutex!(Table {
                    next: IOVA_BASE,
                    maps: KVec::new(),
                    faults: 0,
                    dev_mem: None,
                }),
            }),
            GFP_KERNEL,
        )
    }

    /// Maps `pages` at a fresh bus range.
    ///
    /// # Errors
    ///
    /// `EINVAL` for no pages, `ENOMEM`.
    pub(crate) fn map(self: &Arc<Self>, pages: &[PageRef], writable: bool) -> Result<DmaMap> {
        if pages.is_empty() {
            return Err(EINVAL);
        }
        let mut v = KVec::with_capacity(pages.len(), GFP_KERNEL)?;
        for p in pages {
            v.push(p.clone(), GFP_KERNEL)?;
        }
        self.insert(Pages::Refs(v), writable, None)
    }

    /// Maps pinned user memory at a fresh bus range, keeping its pin (not a reference per
    /// page) until the unmap. The range starts at the user address `addr`'s offset in a
    /// [`UMEM_ALIGN`] block, as an IOMMU maps a huge page: an MR's mkey over it takes pages
    /// of up to that size ([`crate::ib::pgsz`]).
    ///
    /// # Errors
    ///
    /// As [`Iommu::map`].
    pub(crate) fn map_umem(
        self: &Arc<Self>,
        pages: UmemPages,
        writable: bool,
        addr: u64,
    ) -> Result<DmaMap> {
        self.insert(Pages::Pinned(pages), writable, Some(addr))
    }

    /// Inserts `v` at the next free IOVA, or with `align_to` at the next one that has
    /// `align_to`'s offset in a [`UMEM_ALIGN`] block.
    fn insert(self: &Arc<Self>, v: Pages, writable: bool, align_to: Option<u64>) -> Result<DmaMap> {
        let n = v.len();
        if n == 0 {
            return Err(EINVAL);
        }
        let span = (n as u64 + 1).checked_mul(PAGE).ok_or(ENOMEM)?;
        let iova = {
            let mut t = self.table.lock();
            let iova = match align_to {
                None => t.next,
                Some(a) => {
                    let off = a & (UMEM_ALIGN - 1) & !(PAGE - 1);
                    let base = t.next.checked_next_multiple_of(UMEM_ALIGN).ok_or(ENOMEM)?;
                    let at = base | off;
                    // The block before `base` when `off` still fits above `next`.
                    match at.checked_sub(UMEM_ALIGN) {
                        Some(lower) if lower >= t.next => lower,
                        _ => at,
                    }
                }
            };
            t.next = iova.checked_add(span).ok_or(ENOMEM)?;
            // `next` only grows, so pushing keeps the table sorted.
            t.maps.push(
                Mapping {
                    iova,
                    writable,
                    pages: v,
                },
                GFP_KERNEL,
            )?;
            iova
        };
        let domain: Arc<dyn DmaDomain> = self.clone();
        Ok(DmaMap::new(iova, n, domain))
    }

    /// Gives the device `bytes` (whole pages) of on-chip memory of its own, zeroed, at
    /// [`DEV_MEM_BUS`] (`fwsim/memic.rs`); the same pages are what user space maps
    /// ([`Iommu::dev_mem_pages`]).
    ///
    /// # Errors
    ///
    /// `EBUSY` if the device has its memory already, `ENOMEM`.
    pub(crate) fn add_dev_mem(&self, bytes: u64) -> Result {
        let n = usize::try_from(bytes.div_ceil(PAGE)).map_err(|_| ENOMEM)?;
        let mut pages = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            pages.push(PageRef::alloc_zeroed()?, GFP_KERNEL)?;
        }
        let mut t = self.table.lock();
        if t.dev_mem.is_some() {
            return Err(EBUSY);
        }
        t.dev_mem = Some(Mapping {
            iova: DEV_MEM_BUS,
            writable: true,
            pages: Pages::Refs(pages),
        });
        Ok(())
    }

    /// References to `count` pages of the on-chip memory from page `first` on (for a user
    /// mapping of them).
    ///
    /// # Errors
    ///
    /// `EINVAL` if the device has no such pages, `ENOMEM`.
    pub(crate) fn dev_mem_pages(&self, first: usize, count: usize) -> Result<KVec<PageRef>> {
        let mut v = KVec::with_capacity(count, GFP_KERNEL)?;
        let t = self.table.lock();
        let Some(Mapping {
            pages: Pages::Refs(pages),
            ..
        }) = t.dev_mem.as_ref()
        else {
            return Err(EINVAL);
        };
        let end = first.checked_add(count).ok_or(EINVAL)?;
        for p in pages.get(first..end).ok_or(EINVAL)? {
            v.push(p.clone(), GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// Live mappings (leak checks: zero when every object is gone).
    pub(crate) fn mappings(&self) -> usize {
        self.table.lock().maps.len()
    }

    /// Accesses refused so far.
    pub(crate) fn faults(&self) -> u64 {
        self.table.lock().faults
    }

    /// The mapping containing `addr`.
    fn find(t: &Table, addr: u64) -> Option<&Mapping> {
        if let Some(m) = t
            .dev_mem
            .as_ref()
            .filter(|m| addr >= m.iova && addr < m.end())
        {
            return Some(m);
        }
        let i = t.maps.partition_point(|m| m.iova <= addr).checked_sub(1)?;
        let m = t.maps.get(i)?;
        (addr < m.end()).then_some(m)
    }

    /// Runs `f(page, offset in page, range of the caller's bytes)` on every page piece of
    /// `[addr, addr + len)`, after checking that all of it is mapped (writable if `write`).
    fn access(
        &self,
        addr: u64,
        len: usize,
        write: bool,
        mut f: impl FnMut(PageView<'_>, usize, core::ops::Range<usize>) -> Result,
    ) -> core::result::Result<(), DmaFault> {
        let mut t = self.table.lock();
        let fault = |t: &mut Table, a: u64| {
            t.faults += 1;
            Err(DmaFault { addr: a })
        };
        let Some(end) = addr.checked_add(len as u64) else {
            return fault(&mut t, addr);
        };
        // Check the whole range first: a fault leaves memory untouched.
        let mut at = addr;
        while at < end {
            match Self::find(&t, at) {
                Some(m) if m.writable || !write => at = m.end(),
                _ => return fault(&mut t, at),
            }
        }
        let mut done = 0usize;
        while done < len {
            let a = addr + done as u64;
            let Some(m) = Self::find(&t, a) else {
                return fault(&mut t, a);
            };
            let rel = a - m.iova;
            let in_page = (rel % PAGE) as usize;
            let n = (PAGE_SIZE - in_page).min(len - done);
            let Some(page) = usize::try_from(rel / PAGE)
                .ok()
                .and_then(|i| m.pages.get(i))
            else {
                return fault(&mut t, a);
            };
            if f(page, in_page, done..done + n).is_err() {
                return fault(&mut t, a);
            }
            done += n;
        }
        Ok(())
    }

    /// The page and offset of an 8-byte aligned atomic at `addr`, mapped writable.
    fn atomic(
        &self,
        addr: u64,
        f: impl FnOnce(PageView<'_>, usize) -> Result<u64>,
    ) -> core::result::Result<u64, DmaFault> {
        let mut t = self.table.lock();
        let r = if addr % 8 != 0 {
            None
        } else {
            Self::find(&t, addr).filter(|m| m.writable).and_then(|m| {
                let rel = addr - m.iova;
                let page = m.pages.get(usize::try_from(rel / PAGE).ok()?)?;
                f(page, (rel % PAGE) as usize).ok()
            })
        };
        r.ok_or_else(|| {
            t.faults += 1;
            DmaFault { addr }
        })
    }
}

/// A device access that faulted, as an errno for the kernel side (`EFAULT`).
impl From<DmaFault> for Error {
    fn from(_: DmaFault) -> Error {
        EFAULT
    }
}

impl DmaDomain for Iommu {
    fn unmap(&self, iova: u64, _addrs: &[u64]) {
        let gone = {
            let mut t = self.table.lock();
            match t.maps.binary_search_by_key(&iova, |m| m.iova) {
                Ok(i) => t.maps.remove(i).ok(),
                Err(_) => None,
            }
        };
        // The page references (or the pin) go outside the lock.
        drop(gone);
    }
}

impl DmaMem for Iommu {
    fn read(&self, addr: u64, buf: &mut [u8]) -> core::result::Result<(), DmaFault> {
        let len = buf.len();
        self.access(addr, len, false, |p, o, r| {
            p.read(o, buf.get_mut(r).ok_or(EINVAL)?)
        })
    }

    fn write(&self, addr: u64, data: &[u8]) -> core::result::Result<(), DmaFault> {
        self.access(addr, data.len(), true, |p, o, r| {
            p.write(o, data.get(r).ok_or(EINVAL)?)
        })
    }

    fn cmp_swap64(
        &self,
        addr: u64,
        compare: u64,
        swap: u64,
    ) -> core::result::Result<u64, DmaFault> {
        self.atomic(addr, |p, o| p.cmp_swap64(o, compare, swap))
    }

    fn fetch_add64(&self, addr: u64, add: u64) -> core::result::Result<u64, DmaFault> {
        self.atomic(addr, |p, o| p.fetch_add64(o, add))
    }
}

#[kunit_tests(mlx5_fwsim_iommu)]
mod tests {
    use super::*;

    fn pages(n: usize) -> Result<KVec<PageRef>> {
        let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            v.push(PageRef::alloc_zeroed()?, GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// A new IOMMU with one zeroed page mapped writable: the IOMMU, the page, the mapping.
    fn one_page_mapped() -> Result<(Arc<Iommu>, KVec<PageRef>, DmaMap)> {
        let io = Iommu::new()?;
        let p = pages(1)?;
        let m = io.map(&p, true)?;
        Ok((io, p, m))
    }

    /// Two mappings get disjoint bus ranges with an unmapped guard page after each; reads
    /// and writes cross page boundaries inside a mapping and reach the very pages mapped.
    #[test]
    fn maps_contiguous_ranges_with_guard_pages() -> Result {
        let io = Iommu::new()?;
        let p = pages(2)?;
        let a = io.map(&p, true)?;
        let q = pages(1)?;
        let b = io.map(&q, false)?;
        assert_eq!(io.mappings(), 2);
        assert_eq!(a.page_count(), 2);
        assert!(b.iova() >= a.iova() + 3 * PAGE);
        assert_eq!(a.page_addrs()?.as_slice(), &[a.iova(), a.iova() + PAGE]);
        // A write across the page boundary lands in both pages.
        let data = [1u8, 2, 3, 4, 5, 6, 7, 8];
        io.write(a.iova() + PAGE - 4, &data)?;
        let mut lo = [0u8; 4];
        let mut hi = [0u8; 4];
        p[0].read(PAGE_SIZE - 4, &mut lo)?;
        p[1].read(0, &mut hi)?;
        assert_eq!((lo, hi), ([1, 2, 3, 4], [5, 6, 7, 8]));
        let mut back = [0u8; 8];
        io.read(a.iova() + PAGE - 4, &mut back)?;
        assert_eq!(back, data);
        // The guard page after a mapping and anything unmapped fault; nothing is written.
        let before = io.faults();
        assert_eq!(
            io.write(a.iova() + 2 * PAGE - 2, &data),
            Err(DmaFault {
                addr: a.iova() + 2 * PAGE
            })
        );
        let mut tail = [0u8; 2];
        p[1].read(PAGE_SIZE - 2, &mut tail)?;
        assert_eq!(tail, [0, 0]);
        assert!(io.read(a.iova() + 2 * PAGE, &mut back).is_err());
        assert!(io.read(0, &mut back).is_err());
        assert!(io.read(u64::MAX - 3, &mut back).is_err());
        // A read-only mapping: reads pass, writes and atomics fault.
        io.read(b.iova(), &mut back)?;
        assert!(io.write(b.iova(), &data).is_err());
        assert!(io.fetch_add64(b.iova(), 1).is_err());
        assert_eq!(io.faults(), before + 6);
        drop(b);
        drop(a);
        assert_eq!(io.mappings(), 0);
        Ok(())
    }

    /// The 64-bit atomics act on host-endian values in the mapped page, aligned only.
    #[test]
    fn atomics_on_mapped_memory() -> Result {
        let (io, p, m) = one_page_mapped()?;
        let at = m.iova() + 8;
        assert_eq!(io.fetch_add64(at, 5)?, 0);
        assert_eq!(io.cmp_swap64(at, 4, 9)?, 5);
        assert_eq!(io.cmp_swap64(at, 5, 9)?, 5);
        let mut v = [0u8; 8];
        p[0].read(8, &mut v)?;
        assert_eq!(u64::from_ne_bytes(v), 9);
        assert!(io.fetch_add64(at + 4, 1).is_err());
        Ok(())
    }

    /// Unmapping (dropping the DmaMap) makes the range fault at once; the pages stay
    /// referenced by their owner only.
    #[test]
    fn unmapped_addresses_fault() -> Result {
        let (io, p, m) = one_page_mapped()?;
        let iova = m.iova();
        io.write(iova, &[0xaa])?;
        drop(m);
        assert_eq!(io.write(iova, &[0xbb]), Err(DmaFault { addr: iova }));
        let mut b = [0u8; 1];
        p[0].read(0, &mut b)?;
        assert_eq!(b, [0xaa]);
        assert_eq!(io.mappings(), 0);
        Ok(())
    }

    /// The device's own memory sits at DEV_MEM_BUS beside the driver's mappings (not counted
    /// as one); the pages handed out for a user mapping are the ones the device accesses, and
    /// past the memory is a fault.
    #[test]
    fn device_memory_is_the_devices_own_pages() -> Result {
        let io = Iommu::new()?;
        io.add_dev_mem(4 * PAGE)?;
        assert_eq!(io.add_dev_mem(PAGE), Err(EBUSY));
        assert_eq!(io.mappings(), 0);
        io.write(DEV_MEM_BUS + PAGE - 2, &[1, 2, 3, 4])?;
        let p = io.dev_mem_pages(0, 2)?;
        let mut b = [0u8; 2];
        p[1].read(0, &mut b)?;
        assert_eq!(b, [3, 4]);
        p[1].write(100, &[9])?;
        let mut c = [0u8; 1];
        io.read(DEV_MEM_BUS + PAGE + 100, &mut c)?;
        assert_eq!(c, [9]);
        assert_eq!(io.fetch_add64(DEV_MEM_BUS + 3 * PAGE + 8, 2)?, 0);
        assert!(io.dev_mem_pages(3, 2).is_err());
        let end = DEV_MEM_BUS + 4 * PAGE;
        assert_eq!(io.write(end - 1, &[0, 0]), Err(DmaFault { addr: end }));
        Ok(())
    }
}
