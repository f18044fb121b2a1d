// SPDX-License-Identifier: GPL-2.0

//! Counted references to pages, and access to their bytes through a temporary kernel mapping
//! (`get_page()`/`put_page()`, `kmap_local_page()`).
//!
//! A [`PageRef`] is what a device mapping holds on kernel memory it translates to: the
//! simulated IOMMU of mlx5's firmware simulator keeps one per mapped page of a kernel queue
//! buffer, so a page stays allocated for as long as it is mapped, whatever its owner does
//! meanwhile, the way a real IOMMU mapping keeps its pages from being reused by holding the DMA
//! API's reference. Pinned user memory is mapped holding its pin instead (one owner for all its
//! pages, released once at unmap: no reference per page). Accesses go through a [`PageView`]
//! (a page borrowed from either holder) and a `kmap_local_page()` mapping of one page at a
//! time, bounds-checked against the page.
//!
//! Concurrency: the bytes of a mapped page are shared with whoever else maps it (user space for
//! pinned user memory, the driver for its queue buffers), exactly like memory a device reaches
//! by DMA. [`PageView::read`]/[`PageView::write`] are plain copies (what a DMA engine does,
//! and what `copy_{to,from}_user()` do on the same pages); the 64-bit atomics are the kernel's
//! atomics on the mapped address, so they are atomic with respect to each other and to CPU
//! atomics on the same location.

use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use kernel::{
    bindings,
    ffi::c_void,
    page::PAGE_SIZE,
    prelude::*,
    sync::atomic::{Atomic, Full},
};

// rust/page_shim.c: get_page()/put_page() are static inlines.
extern "C" {
    fn rdma_rs_page_get(page: *mut c_void);
    fn rdma_rs_page_put(page: *mut c_void);
}

/// One reference to a page.
///
/// # Invariants
///
/// `page` is a valid `struct page` on which this value owns one reference (taken with
/// `get_page()` or by allocating it), dropped with `put_page()`.
pub struct PageRef {
    page: NonNull<bindings::page>,
}

// SAFETY: a page reference may be taken, used and dropped from any task.
unsafe impl Send for PageRef {}
// SAFETY: shared access only maps the page temporarily and copies bytes (see the module
// documentation on concurrency).
unsafe impl Sync for PageRef {}

impl PageRef {
    /// A new zeroed page (`alloc_page(GFP_KERNEL | __GFP_ZERO)`).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub fn alloc_zeroed() -> Result<Self> {
        let flags = bindings::GFP_KERNEL | bindings::__GFP_ZERO;
        // SAFETY: order 0 with valid flags; the result is checked for NULL.
        let p = unsafe { bindings::alloc_pages(flags, 0) };
        let page = NonNull::new(p).ok_or(ENOMEM)?;
        // INVARIANT: the allocation's reference is ours; `put_page()` frees the page with it.
        Ok(PageRef { page })
    }

    /// A new reference to `page`.
    ///
    /// # Safety
    ///
    /// `page` must be a valid `struct page` on which the caller holds a reference (or a pin)
    /// for the duration of this call.
    pub(crate) unsafe fn get(page: NonNull<bindings::page>) -> Self {
        // SAFETY: `page` is valid and referenced (the caller's promise), so taking another
        // reference is legal.
        unsafe { rdma_rs_page_get(page.as_ptr().cast()) };
        // INVARIANT: the reference just taken is ours.
        PageRef { page }
    }

    /// The `struct page` (for comparisons and logs only).
    pub fn as_ptr(&self) -> *const bindings::page {
        self.page.as_ptr()
    }

    /// The page's bytes, borrowed for as long as this reference is.
    pub fn view(&self) -> PageView<'_> {
        // INVARIANT: `self` holds a reference on the page for the borrow's lifetime.
        PageView {
            page: self.page,
            _holder: PhantomData,
        }
    }

    /// Copies `buf.len()` bytes at `offset` of the page into `buf` ([`PageView::read`]).
    ///
    /// # Errors
    ///
    /// `EINVAL` if the range leaves the page.
    pub fn read(&self, offset: usize, buf: &mut [u8]) -> Result {
        self.view().read(offset, buf)
    }

    /// Copies `data` to `offset` of the page ([`PageView::write`]).
    ///
    /// # Errors
    ///
    /// `EINVAL` if the range leaves the page.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.view().write(offset, data)
    }

    /// [`PageView::cmp_swap64`].
    ///
    /// # Errors
    ///
    /// `EINVAL` for an unaligned offset or one past the page.
    pub fn cmp_swap64(&self, offset: usize, compare: u64, swap: u64) -> Result<u64> {
        self.view().cmp_swap64(offset, compare, swap)
    }

    /// [`PageView::fetch_add64`].
    ///
    /// # Errors
    ///
    /// `EINVAL` for an unaligned offset or one past the page.
    pub fn fetch_add64(&self, offset: usize, add: u64) -> Result<u64> {
        self.view().fetch_add64(offset, add)
    }
}

/// A page borrowed from whoever keeps it referenced: a [`PageRef`] ([`PageRef::view`]), or the
/// pin of pinned user memory (`rust/umem.rs`, `PinnedPages::page_view`), whose owner then need
/// not take a reference per page to lend its pages to a device mapping.
///
/// # Invariants
///
/// `page` is a valid `struct page` on which a reference (or a pin) is held for `'a`.
#[derive(Clone, Copy)]
pub struct PageView<'a> {
    page: NonNull<bindings::page>,
    _holder: PhantomData<&'a ()>,
}

impl PageView<'_> {
    /// A view of `page`.
    ///
    /// # Safety
    ///
    /// `page` must be a valid `struct page` on which the caller holds a reference or a pin for
    /// the whole lifetime `'a` chosen for the result.
    pub(crate) unsafe fn from_raw<'a>(page: NonNull<bindings::page>) -> PageView<'a> {
        // INVARIANT: the caller's promise.
        PageView {
            page,
            _holder: PhantomData,
        }
    }

    /// The `struct page` (for comparisons and logs only).
    pub fn as_ptr(&self) -> *const bindings::page {
        self.page.as_ptr()
    }

    /// Runs `f` on the page's bytes `[offset, offset + len)` through a local kernel mapping.
    fn with_mapped<R>(&self, offset: usize, len: usize, f: impl FnOnce(*mut u8) -> R) -> Result<R> {
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end > PAGE_SIZE {
            return Err(EINVAL);
        }
        // SAFETY: the page is valid and referenced (type invariant); the mapping is released
        // below before returning, in the same context.
        let base = unsafe { bindings::kmap_local_page(self.page.as_ptr()) };
        // SAFETY: `offset < PAGE_SIZE` (checked above), inside the mapped page.
        let p = unsafe { base.cast::<u8>().add(offset) };
        let r = f(p);
        // SAFETY: `base` is the address `kmap_local_page()` returned above, unmapped once.
        unsafe { bindings::kunmap_local(base) };
        Ok(r)
    }

    /// Copies `buf.len()` bytes at `offset` of the page into `buf`.
    ///
    /// # Errors
    ///
    /// `EINVAL` if the range leaves the page.
    #[inline(never)]
    pub fn read(&self, offset: usize, buf: &mut [u8]) -> Result {
        let len = buf.len();
        self.with_mapped(offset, len, |src| {
            // SAFETY: `src` is valid for `len` bytes of the mapped page (bounds checked by
            // `with_mapped`), `buf` for `len` bytes, and they do not overlap (`buf` is a Rust
            // reference, the page is mapped memory). Concurrent writers to the page are other
            // DMA-style users of shared memory (module documentation).
            unsafe { ptr::copy_nonoverlapping(src, buf.as_mut_ptr(), len) }
        })
    }

    /// Copies `data` to `offset` of the page.
    ///
    /// # Errors
    ///
    /// `EINVAL` if the range leaves the page.
    #[inline(never)]
    pub fn write(&self, offset: usize, data: &[u8]) -> Result {
        let len = data.len();
        self.with_mapped(offset, len, |dst| {
            // SAFETY: as in `read`, with the roles swapped.
            unsafe { ptr::copy_nonoverlapping(data.as_ptr(), dst, len) }
        })
    }

    /// Runs `f` on the 64-bit atomic at the 8-byte aligned `offset`.
    fn with_atomic64<R>(&self, offset: usize, f: impl FnOnce(&Atomic<u64>) -> R) -> Result<R> {
        if offset % 8 != 0 {
            return Err(EINVAL);
        }
        self.with_mapped(offset, 8, |p| {
            // SAFETY: `p` is 8-byte aligned (the page is mapped page aligned and `offset` is a
            // multiple of 8), valid for 8 bytes while mapped, and the reference does not
            // outlive the mapping (it is used only inside this closure).
            let a = unsafe { Atomic::<u64>::from_ptr(p.cast()) };
            f(a)
        })
    }

    /// Atomically compares the 64-bit value at the 8-byte aligned `offset` with `compare` and
    /// stores `swap` if they are equal; returns the value found.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an unaligned offset or one past the page.
    #[inline(never)]
    pub fn cmp_swap64(&self, offset: usize, compare: u64, swap: u64) -> Result<u64> {
        self.with_atomic64(offset, |a| match a.cmpxchg(compare, swap, Full) {
            Ok(old) | Err(old) => old,
        })
    }

    /// Atomically adds `add` to the 64-bit value at the 8-byte aligned `offset`; returns the
    /// value before.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an unaligned offset or one past the page.
    #[inline(never)]
    pub fn fetch_add64(&self, offset: usize, add: u64) -> Result<u64> {
        self.with_atomic64(offset, |a| a.fetch_add(add, Full))
    }
}

impl Clone for PageRef {
    fn clone(&self) -> Self {
        // SAFETY: `self` holds a reference on the page (type invariant).
        unsafe { PageRef::get(self.page) }
    }
}

impl Drop for PageRef {
    #[inline(never)]
    fn drop(&mut self) {
        // SAFETY: this value owns one reference (type invariant), dropped once, here.
        unsafe { rdma_rs_page_put(self.page.as_ptr().cast()) };
    }
}
