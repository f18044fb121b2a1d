// SPDX-License-Identifier: GPL-2.0

//! Pinned user pages (the memory half of upstream `ib_umem_get()` /
//! `ib_umem_release()`, `drivers/infiniband/core/umem.c`).
//!
//! [`PinnedPages::pin`] pins `npages` pages of the calling process from a page-aligned user
//! address with `pin_user_pages_fast(FOLL_LONGTERM [| FOLL_WRITE])`, after accounting them in
//! the process's `mm->pinned_vm` against `RLIMIT_MEMLOCK` (unless `CAP_IPC_LOCK`), exactly as
//! upstream. Dropping it unpins them (`unpin_user_pages_dirty_lock()`, dirtying them if they
//! were pinned writable) and takes the accounting back from the same `mm`, which it keeps
//! grabbed (`mmgrab()`) so that the release may run from any task.
//!
//! The pages are kept as a `struct page *` array; [`PinnedPages::page_ref`] hands out a counted
//! reference to one of them ([`PageRef`]) (mlx5 on a real device: the pages behind
//! `dma_map_sgtable()`), [`PinnedPages::page_view`] lends one for as long as the pin lives
//! (mlx5's simulated IOMMU, which keeps the shared `PinnedPages` alive while mapped instead of
//! a reference per page). [`PinnedPages::phys`] gives physical addresses (`page_to_phys()`)
//! for drivers without a device (the mock).

use crate::page_ref::{PageRef, PageView};
use core::ptr::{self, NonNull};
use kernel::{
    bindings,
    ffi::{c_int, c_ulong, c_void},
    page::PAGE_SIZE,
    prelude::*,
};

// `struct mm_struct *` and `struct page *` as `void *`: bindgen's structs are not FFI-safe for
// the lint (they reach zero-sized `mm_mm_cid`, `sched_statistics`). rust/mm_shim.c.
extern "C" {
    fn rdma_rs_umem_account(npages: c_ulong, mmp: *mut *mut c_void) -> c_int;
    fn rdma_rs_umem_unaccount(mm: *mut c_void, npages: c_ulong);
    fn rdma_rs_page_to_phys(page: *mut c_void) -> u64;
    fn rdma_rs_current_mm() -> *mut c_void;
}

/// Pages per `pin_user_pages_fast()` call (upstream: a page of `struct page *`).
const CHUNK: usize = PAGE_SIZE / core::mem::size_of::<*mut bindings::page>();

/// Whether the current process may lock memory (upstream `can_do_mlock()`: `RLIMIT_MEMLOCK`
/// is not 0, or `CAP_IPC_LOCK`).
pub(crate) fn may_lock() -> bool {
    // SAFETY: no preconditions; reads the current task's limits.
    unsafe { bindings::can_do_mlock() }
}

/// Pinned pages of a user address range.
///
/// # Invariants
///
/// `pages[..pinned]` are pinned by us (`FOLL_PIN`), `pages.len()` pages are accounted in
/// `mm->pinned_vm`, and `mm` is grabbed (`mmgrab()`).
pub(crate) struct PinnedPages {
    mm: *mut c_void,
    pinned: usize,
    pages: KVVec<*mut bindings::page>,
    writable: bool,
}

// SAFETY: the page pointers and the grabbed mm are references that may be released from any
// task (`unpin_user_pages_dirty_lock()`, `mmdrop()` do not depend on the current task).
unsafe impl Send for PinnedPages {}
// SAFETY: shared access only reads the page pointers.
unsafe impl Sync for PinnedPages {}

impl PinnedPages {
    /// Pins `npages` pages of the current process from `start` (page aligned), for writing
    /// if `writable` (upstream `__ib_umem_get_va()` from the `can_do_mlock()` check on).
    ///
    /// # Errors
    ///
    /// `EPERM` if the process may not lock memory ([`may_lock`]), `EINVAL` for 0 pages or
    /// more than `UINT_MAX`, `ENOMEM` beyond `RLIMIT_MEMLOCK` without `CAP_IPC_LOCK` (or for
    /// the page array), `EFAULT` (or what `pin_user_pages_fast()` returns) when part of the
    /// range is not mapped or not writable. Nothing stays pinned or accounted on error.
    pub(crate) fn pin(start: usize, npages: usize, writable: bool) -> Result<Self> {
        if !may_lock() {
            return Err(EPERM);
        }
        if npages == 0 || npages > u32::MAX as usize {
            return Err(EINVAL);
        }
        let pages = KVVec::from_elem(ptr::null_mut(), npages, GFP_KERNEL)?;
        let mut mm = ptr::null_mut();
        // SAFETY: `mm` is a valid out pointer.
        let r = unsafe { rdma_rs_umem_account(npages as c_ulong, &mut mm) };
        if r != 0 {
            return Err(Error::from_errno(r));
        }
        // INVARIANT: accounted and grabbed, nothing pinned yet: dropping `this` on an error
        // below unpins what was pinned so far and unaccounts everything.
        let mut this = PinnedPages {
            mm,
            pinned: 0,
            pages,
            writable,
        };
        let mut gup = bindings::FOLL_LONGTERM;
        if writable {
            gup |= bindings::FOLL_WRITE;
        }
        let mut cur = start;
        while this.pinned < npages {
            let done = this.pinned;
            let want = (npages - done).min(CHUNK);
            let dst = this
                .pages
                .get_mut(done..done + want)
                .ok_or(EINVAL)?
                .as_mut_ptr();
            // SAFETY: `dst` has room for `want <= CHUNK` (fits `c_int`) page pointers; `cur`
            // is a user address (checked by GUP).
            let pinned =
                unsafe { bindings::pin_user_pages_fast(cur as c_ulong, want as i32, gup, dst) };
            if pinned < 0 {
                return Err(Error::from_errno(pinned));
            }
            if pinned == 0 {
                // Would loop forever; GUP returns -EFAULT in practice.
                return Err(EFAULT);
            }
            let pinned = (pinned as usize).min(want);
            // INVARIANT: GUP pinned the pages it wrote.
            this.pinned = done + pinned;
            cur += pinned * PAGE_SIZE;
        }
        Ok(this)
    }

    /// How many pages.
    pub(crate) fn len(&self) -> usize {
        self.pinned
    }

    /// Whether the pages belong to the current process's address space (upstream compares
    /// `current->mm` with the one it grabbed).
    pub(crate) fn is_current_mm(&self) -> bool {
        // SAFETY: reads `current->mm`; only the pointer is compared.
        ptr::eq(unsafe { rdma_rs_current_mm() }, self.mm)
    }

    /// Whether the pages were pinned for writing.
    pub(crate) fn writable(&self) -> bool {
        self.writable
    }

    /// A counted reference to page `i`, for a device mapping of it.
    pub(crate) fn page_ref(&self, i: usize) -> Option<PageRef> {
        let p = NonNull::new(*self.pages.get(..self.pinned)?.get(i)?)?;
        // SAFETY: `p` is pinned by us (type invariant), so it is valid and referenced.
        Some(unsafe { PageRef::get(p) })
    }

    /// Page `i`, borrowed from the pin (no reference taken: the pin holds the page for as long
    /// as `self` lives).
    pub(crate) fn page_view(&self, i: usize) -> Option<PageView<'_>> {
        let p = NonNull::new(*self.pages.get(..self.pinned)?.get(i)?)?;
        // SAFETY: `p` is pinned by us (type invariant) until `self` is dropped, which the
        // borrow outlives.
        Some(unsafe { PageView::from_raw(p) })
    }

    /// The physical address of page `i`.
    pub(crate) fn phys(&self, i: usize) -> Option<u64> {
        let p = *self.pages.get(..self.pinned)?.get(i)?;
        // SAFETY: `p` is a pinned page (type invariant).
        Some(unsafe { rdma_rs_page_to_phys(p.cast()) })
    }
}

impl Drop for PinnedPages {
    // upstream: __ib_umem_release() + ib_umem_release()
    fn drop(&mut self) {
        let n = self.pinned;
        if n != 0 {
            // SAFETY: the pages are pinned by us (type invariant) and unpinned once, here.
            unsafe {
                bindings::unpin_user_pages_dirty_lock(
                    self.pages.as_mut_ptr(),
                    n as c_ulong,
                    self.writable,
                )
            };
        }
        // Everything requested was accounted, also when pinning stopped early.
        // SAFETY: `mm` is grabbed and `pages.len()` pages are accounted (type invariant).
        unsafe { rdma_rs_umem_unaccount(self.mm, self.pages.len() as c_ulong) };
    }
}
