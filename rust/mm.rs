// SPDX-License-Identifier: GPL-2.0

//! User mappings of a uverbs file and their revocation (upstream
//! `ib_uverbs_mmap()`, `rdma_user_mmap_io()`, `rdma_umap_priv_init()`, `rdma_umap_ops`
//! (`rdma_umap_open/close/fault`) and `uverbs_user_mmap_disassociate()`,
//! `drivers/infiniband/core/{ib_core_uverbs.c,uverbs_main.c}`).
//!
//! * [`Umaps`]: the mappings of one open file (upstream `ufile->umaps` + `umap_lock` +
//!   `disassociate_page`). [`Umaps::mmap`] runs a driver's mmap on a [`UserVma`] and, if the
//!   driver mapped something, tracks the VMA: its `vm_ops` are ours, its `vm_private_data` a
//!   `UmapPriv` pointing back to the `Umaps`. `open` (a VMA copied by fork or split) tracks the
//!   copy, `close` forgets it. [`Umaps::disassociate`] (hot unplug) zaps every tracked VMA of
//!   every process; a later touch faults into `fault`: a read-only VMA gets the system zero
//!   page, a writable one the file's zeroed dummy page, an untracked one `SIGBUS` (upstream).
//! * [`UserVma`]: what a driver's `mmap` op sees: the offset, size and flags, and two ways to
//!   fill the VMA: [`UserVma::map_page`] (a kernel page, `vm_insert_page()`: what the firmware
//!   simulator hands out as a UAR page) and [`UserVma::map_io`] (`io_remap_pfn_range()` with an
//!   uncached or write-combining `pgprot`: what a real UAR/BlueFlame page needs).
//! * [`MapRef`]: a reference a VMA holds while it is mapped (the core's mmap entries), dropped
//!   at `close` or at the zap, duplicated at `open`.
//! * [`UserPage`]: a zeroed kernel page meant for user mappings.
//! * [`TrapPage`]: a kernel page mapped to user space so that the first touch after each
//!   [`TrapPage::rearm`] faults and tells a [`TrapHandler`]: how the firmware simulator learns
//!   of a doorbell store to a UAR page without polling it ([`UserVma::map_trap`]). A handler
//!   that asks for it has user stores emulated instead: the faulting instruction is decoded
//!   (`mm/x86_store.rs`), its value written into the page, the task resumed after it, and the
//!   page never installed, so nothing needs a re-arm.
//!
//! Lock order (upstream): `mmap_lock` -> the `Umaps` mutex -> the holders of [`MapRef`]s;
//! a [`TrapPage`]'s mutex comes after the `mmap_lock` and is never held with the `Umaps` mutex.
//! `Umaps::mmap` runs under the `mmap_lock` (written); `disassociate` takes each process's
//! `mmap_lock` for reading, then the mutex, and never holds the mutex while taking the
//! `mmap_lock` or dropping an `mm`.

use core::ptr;
use x86_store::{Gprs, MAX_INSN};

#[path = "mm/x86_store.rs"]
mod x86_store;
use kernel::{
    bindings,
    ffi::{c_int, c_ulong, c_void},
    mm::virt::{flags, VmaNew},
    page::{Page, PAGE_SIZE},
    prelude::*,
    sync::{Arc, Mutex},
};

// `struct vm_fault *`, `struct vm_area_struct *`, `struct page *` as `void *`: bindgen's structs
// are not FFI-safe for the lint. rust/mm_shim.c.
extern "C" {
    fn rdma_rs_fault_install(vmf: *mut c_void, page: *mut c_void) -> bindings::vm_fault_t;
    fn rdma_rs_vmf_vma(vmf: *mut c_void) -> *mut c_void;
    fn rdma_rs_io_remap(vma: *mut c_void, pfn: c_ulong, size: c_ulong, wc: c_int) -> c_int;
    fn rdma_rs_page_to_phys(page: *mut c_void) -> u64;
    fn rdma_rs_trap_insert(vmf: *mut c_void, page: *mut c_void) -> bindings::vm_fault_t;
    fn rdma_rs_store_fault(
        vmf: *mut c_void,
        gpr: *mut u64,
        ip: *mut u64,
        addr: *mut u64,
        insn: *mut u8,
        len: *mut core::ffi::c_uint,
    ) -> c_int;
    fn rdma_rs_store_done(ip: u64);
    fn rdma_rs_on_resume(
        f: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
        owner: *mut c_void,
    ) -> c_int;
}

/// A reference held by a mapped VMA (the core's mmap entry reference, upstream
/// `rdma_umap_priv->entry`): dropped when the VMA is closed or zapped.
pub trait MapRef: Send + Sync {
    /// Another reference, for a copy of the VMA (upstream `rdma_umap_open()` takes a `kref`).
    ///
    /// # Errors
    ///
    /// `ENOMEM`: the copy is zapped then (upstream).
    fn dup(&self) -> Result<KBox<dyn MapRef>>;
}

/// A zeroed kernel page meant to be mapped into user space (`alloc_page(__GFP_ZERO)`).
pub struct UserPage {
    page: Page,
}

impl UserPage {
    /// A zeroed page.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub fn new() -> Result<Self> {
        Ok(UserPage {
            page: Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?,
        })
    }

    /// Writes `data` at `offset`.
    ///
    /// # Errors
    ///
    /// `EINVAL` past the page.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result {
        // SAFETY: `data` is a valid slice; the page is ours. User space may touch the page at
        // the same time (that is what it is for): a byte race with the user, not with Rust
        // code, since no Rust reference to the page's memory exists.
        unsafe { self.page.write_raw(data.as_ptr(), offset, data.len()) }
    }

    /// Reads `buf.len()` bytes at `offset`.
    ///
    /// # Errors
    ///
    /// `EINVAL` past the page.
    pub fn read(&self, offset: usize, buf: &mut [u8]) -> Result {
        // SAFETY: as in `write`.
        unsafe { self.page.read_raw(buf.as_mut_ptr(), offset, buf.len()) }
    }

    /// The page (for [`UserVma::map_page`]).
    pub fn page(&self) -> &Page {
        &self.page
    }

    /// The physical address (what the simulator gets instead of a BAR address).
    pub fn phys_addr(&self) -> u64 {
        // SAFETY: the page is allocated and ours.
        unsafe { rdma_rs_page_to_phys(self.page.as_ptr().cast()) }
    }
}

/// Told when a [`TrapPage`] is touched through one of its user mappings.
pub trait TrapHandler: Send + Sync {
    /// A user mapping of `page` faulted (a store to a doorbell page is about to land), and the
    /// page was installed. Called by the faulting task on its way back to user space, after
    /// the fault handler returned (task work: no lock held, not on the fault handler's
    /// stack), before the store executes; or from the fault handler itself if the task work
    /// could not be queued (no memory). It may sleep and run what the memory the store
    /// announces already says; reading the store itself is for later work (which calls
    /// [`TrapPage::rearm`] and then reads the page). The store completes after this returns:
    /// it lands either before the work's `rearm` (and the work reads it) or after it (and
    /// faults, and rings, again).
    fn rung(&self, page: &Arc<TrapPage>);

    /// Whether user stores to the page are emulated ([`TrapHandler::stored`]) rather than let
    /// through an installed page ([`TrapHandler::rung`]). Asked in the fault handler at every
    /// fault of a live mapping, before the store is decoded (so it sees every fault in the
    /// order they came); a store the emulation does not understand goes the installed way.
    fn emulate_stores(&self) -> bool {
        false
    }

    /// A store of user space to `page` was emulated: its `len` bytes at `offset` are in the
    /// page already, the page stays unmapped (the next store faults again, with no re-arm),
    /// and the storing task resumes after the store once this returns. Called by the storing
    /// task on its way back to user space, after the fault handler returned, as
    /// [`TrapHandler::rung`] is (a store whose call could not be queued is not emulated).
    fn stored(&self, page: &Arc<TrapPage>, offset: usize, len: usize) {
        let _ = (offset, len);
        self.rung(page);
    }
}

/// A VMA of a [`TrapPage`] whose page table entry is installed.
struct Installed {
    vma: *mut bindings::vm_area_struct,
    mm: *mut bindings::mm_struct,
}

// SAFETY: the pointers are only dereferenced under the `TrapPage` mutex (which `close` takes
// to remove the entry before the VMA goes), with the mm's `mmap_lock` held, from any task.
unsafe impl Send for Installed {}

/// A page that traps writes: mapped into user space by [`UserVma::map_trap`] with no page table
/// entry, so the first access faults; the fault installs the page, lets the store through and
/// calls the [`TrapHandler`]. [`TrapPage::rearm`] removes the entries again so that the next
/// store faults too. This is how the simulator sees doorbell stores to UAR pages (libmlx5's
/// send doorbell at UAR+0x800 and CQ arm at UAR+0x20) without polling: the stores are
/// wake-ups, the doorbell records in memory stay the truth, so a store that lands while the
/// page is installed is seen by the next scan, not lost.
///
/// If the handler asks for it ([`TrapHandler::emulate_stores`]), a user store is emulated
/// instead: decoded ([`x86_store::decode`]), written into the page by the fault handler, the
/// task resumed after it ([`TrapHandler::stored`]), and the page left uninstalled, so every
/// store faults and nothing needs a re-arm. A store the decoder refuses takes the installed way.
///
/// Copies of a mapping made by `fork()` start with no entry (they trap too).
#[pin_data]
pub struct TrapPage {
    page: UserPage,
    handler: Arc<dyn TrapHandler>,
    /// The module of `handler`'s code, held while a call to it is queued (task work).
    owner: &'static kernel::ThisModule,
    #[pin]
    installed: Mutex<KVec<Installed>>,
}

impl TrapPage {
    /// A zeroed page that calls `handler` (code of module `owner`) when touched through a
    /// mapping.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub fn new(
        handler: Arc<dyn TrapHandler>,
        owner: &'static kernel::ThisModule,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(TrapPage {
                page: UserPage::new()?,
                handler,
                owner,
                installed <- kernel::new_mutex!(KVec::new(), "rdma_trap_page"),
            }),
            GFP_KERNEL,
        )
    }

    /// The page's contents (what user space stored last).
    pub fn page(&self) -> &UserPage {
        &self.page
    }

    /// How many mappings have their entry installed (where a store lands without a fault).
    pub fn installed(&self) -> usize {
        self.installed.lock().len()
    }

    /// Zaps the page table entry of every mapping that has one, so that the next access to
    /// the page through any of them faults (and rings) again. Sleeps (takes each mm's
    /// `mmap_lock` for reading). Call it before reading what the stores announced.
    pub fn rearm(&self) {
        while let Some(mm) = self.next_mm(&[]) {
            // SAFETY: we hold a user reference on `mm` (`next_mm`).
            unsafe { bindings::mmap_read_lock(mm) };
            self.zap_mm(mm);
            // SAFETY: locked and referenced above.
            unsafe {
                bindings::mmap_read_unlock(mm);
                bindings::mmput(mm);
            }
        }
    }

    /// [`TrapPage::rearm`] from a context that may hold an `mmap_lock` already (the page
    /// fault of another trap page): each mm's lock is only tried, and each mm's user
    /// reference is put asynchronously (`mmput_async()`: the last one must not tear the mm
    /// down under the caller's locks). Returns whether every entry was zapped; on `false`
    /// the mappings whose mm was busy stay installed, for a later [`TrapPage::rearm`].
    pub fn try_rearm(&self) -> bool {
        // The mms whose lock was busy: a few at most (one process maps a page once; fork
        // copies are the rest).
        let mut busy = [ptr::null_mut::<bindings::mm_struct>(); 4];
        let mut nbusy = 0;
        while let Some(mm) = self.next_mm(busy.get(..nbusy).unwrap_or(&[])) {
            // SAFETY: we hold a user reference on `mm` (`next_mm`).
            let locked = unsafe { bindings::mmap_read_trylock(mm) };
            if locked {
                self.zap_mm(mm);
                // SAFETY: locked above.
                unsafe { bindings::mmap_read_unlock(mm) };
            }
            // SAFETY: referenced by `next_mm`.
            unsafe { bindings::mmput_async(mm) };
            if !locked {
                match busy.get_mut(nbusy) {
                    Some(b) => *b = mm,
                    None => return false,
                }
                nbusy += 1;
            }
        }
        nbusy == 0
    }

    /// The mm of an installed mapping whose mm is not in `skip`, with a user reference taken
    /// (`mmget_not_zero()`); mappings of exiting processes are forgotten on the way.
    fn next_mm(&self, skip: &[*mut bindings::mm_struct]) -> Option<*mut bindings::mm_struct> {
        let mut g = self.installed.lock();
        loop {
            let mm = g.iter().find(|i| !skip.contains(&i.mm))?.mm;
            // SAFETY: `mm` is the mm of a VMA that is alive while it is in the list (`close`
            // removes it under this mutex first), so the mm is too.
            if unsafe { bindings::mmget_not_zero(mm) } {
                return Some(mm);
            }
            // The process is exiting: its mappings go without us.
            g.retain(|i| i.mm != mm);
        }
    }

    /// Zaps (and forgets) the installed mappings of `mm`, whose `mmap_lock` the caller holds
    /// for reading.
    fn zap_mm(&self, mm: *mut bindings::mm_struct) {
        self.installed.lock().retain(|i| {
            if i.mm != mm {
                return true;
            }
            // SAFETY: the VMA is in the list, so alive (`close` needs the mmap_lock for
            // writing and removes it under the mutex), and the caller holds its mm's mmap_lock
            // for reading; the range is the whole VMA.
            unsafe {
                let start = (*i.vma).__bindgen_anon_1.__bindgen_anon_1.vm_start;
                let end = (*i.vma).__bindgen_anon_1.__bindgen_anon_1.vm_end;
                bindings::zap_special_vma_range(i.vma, start, end - start);
            }
            false
        });
    }

    /// Forgets a VMA that is going away (or was zapped).
    fn forget(&self, vma: *mut bindings::vm_area_struct) {
        self.installed.lock().retain(|i| i.vma != vma);
    }
}

/// Caching of an IO mapping ([`UserVma::map_io`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoProt {
    /// `pgprot_noncached()` (mlx5: UAR doorbells without BlueFlame).
    Uncached,
    /// `pgprot_writecombine()` (mlx5: BlueFlame registers).
    WriteCombining,
}

/// The VMA of a `mmap()` in progress, as a driver's `mmap` op sees it.
pub struct UserVma<'a> {
    vma: &'a VmaNew,
    /// Set once the driver mapped something: the reference the VMA keeps.
    mapped: Option<Option<KBox<dyn MapRef>>>,
    /// Set by [`UserVma::map_trap`].
    trap: Option<Arc<TrapPage>>,
}

impl UserVma<'_> {
    /// The page offset of the mapping (upstream `vma->vm_pgoff`): the user's `offset >>
    /// PAGE_SHIFT`.
    pub fn pgoff(&self) -> usize {
        // SAFETY: the vma is valid and being set up (type invariant of `VmaNew`).
        unsafe { (*self.vma.as_ptr()).vm_pgoff }
    }

    /// The start address.
    pub fn start(&self) -> usize {
        self.vma.start()
    }

    /// The size in bytes (`vm_end - vm_start`).
    pub fn len(&self) -> usize {
        self.vma.end() - self.vma.start()
    }

    /// Whether the size is 0 (never for a real VMA).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `VM_SHARED`.
    pub fn is_shared(&self) -> bool {
        self.vma.flags() & flags::SHARED != 0
    }

    /// `VM_WRITE`.
    pub fn is_writable(&self) -> bool {
        self.vma.writable()
    }

    /// `VM_EXEC`.
    pub fn is_executable(&self) -> bool {
        self.vma.executable()
    }

    /// Refuses `PROT_EXEC` for good (upstream drivers clear `VM_MAYEXEC`).
    ///
    /// # Errors
    ///
    /// `EINVAL` if the mapping is executable.
    pub fn forbid_exec(&self) -> Result {
        self.vma.try_clear_mayexec()
    }

    fn check(&self, size: usize) -> Result {
        // upstream rdma_user_mmap_io(): VM_SHARED and the exact size, else EINVAL.
        if self.mapped.is_some() || !self.is_shared() || self.len() != size {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Maps one kernel page over the whole VMA (`vm_insert_page()`: the mapping holds its own
    /// reference on the page, so the page outlives neither the driver nor the VMA too early).
    /// `entry` is kept by the VMA until it is closed or zapped.
    ///
    /// # Errors
    ///
    /// `EINVAL` unless the VMA is shared and one page long, or if something is mapped already;
    /// the error of `vm_insert_page()`.
    pub fn map_page(&mut self, page: &Page, entry: Option<KBox<dyn MapRef>>) -> Result {
        self.check(PAGE_SIZE)?;
        self.vma.set_dontexpand();
        self.vma.set_dontdump();
        self.vma.set_mixedmap().vm_insert_page(self.start(), page)?;
        self.mapped = Some(entry);
        Ok(())
    }

    /// Maps `pages` in order over the whole VMA (`vm_insert_page()` per page; each mapping
    /// holds its own reference on its page): what the firmware simulator hands out for its
    /// on-chip memory, where a ConnectX has a BAR window. `entry` is kept by the VMA until it
    /// is closed or zapped.
    ///
    /// # Errors
    ///
    /// `EINVAL` unless the VMA is shared and exactly `pages.len()` pages long, or if something
    /// is mapped already; the error of `vm_insert_page()` (the VMA is then torn down by the
    /// failed `mmap()`, with whatever was inserted).
    pub fn map_page_refs(
        &mut self,
        pages: &[crate::page_ref::PageRef],
        entry: Option<KBox<dyn MapRef>>,
    ) -> Result {
        let size = pages.len().checked_mul(PAGE_SIZE).ok_or(EINVAL)?;
        if size == 0 {
            return Err(EINVAL);
        }
        self.check(size)?;
        self.vma.set_dontexpand();
        self.vma.set_dontdump();
        let _ = self.vma.set_mixedmap();
        for (i, p) in pages.iter().enumerate() {
            let addr = self.start() + i * PAGE_SIZE;
            // SAFETY: the vma is being set up (the caller holds the mmap_lock for writing),
            // is VM_MIXEDMAP, and `addr` is one of its pages (its size was checked above);
            // `p` is a referenced page (type invariant of `PageRef`), which
            // `vm_insert_page()` takes a reference of its own on.
            let r = unsafe {
                bindings::vm_insert_page(self.vma.as_ptr(), addr as c_ulong, p.as_ptr().cast_mut())
            };
            kernel::error::to_result(r)?;
        }
        self.mapped = Some(entry);
        Ok(())
    }

    /// Maps a [`TrapPage`] over the whole one-page VMA without installing it: the first access
    /// faults, installs the page and rings the trap (see [`TrapPage`]). `entry` is kept by the
    /// VMA until it is closed or zapped.
    ///
    /// # Errors
    ///
    /// `EINVAL` unless the VMA is shared and one page long, or if something is mapped already.
    pub fn map_trap(&mut self, trap: &Arc<TrapPage>, entry: Option<KBox<dyn MapRef>>) -> Result {
        self.check(PAGE_SIZE)?;
        self.vma.set_dontexpand();
        self.vma.set_dontdump();
        let _ = self.vma.set_mixedmap();
        self.trap = Some(trap.clone());
        self.mapped = Some(entry);
        Ok(())
    }

    /// Maps `size` bytes of IO memory from page frame `pfn` over the whole VMA (upstream
    /// `rdma_user_mmap_io()`: `vm_page_prot` = `prot`, `io_remap_pfn_range()`, which makes the
    /// VMA `VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP`). `entry` is kept by the VMA
    /// until it is closed or zapped.
    ///
    /// # Errors
    ///
    /// `EINVAL` unless the VMA is shared and `size` long, or if something is mapped already;
    /// `EAGAIN` if the remap fails (upstream).
    pub fn map_io(
        &mut self,
        pfn: usize,
        size: usize,
        prot: IoProt,
        entry: Option<KBox<dyn MapRef>>,
    ) -> Result {
        self.check(size)?;
        let wc = c_int::from(prot == IoProt::WriteCombining);
        // SAFETY: the vma is being set up (the caller holds the mmap_lock for writing) and
        // `size` is its exact size; the pfn range is the driver's IO memory.
        let r = unsafe {
            rdma_rs_io_remap(
                self.vma.as_ptr().cast(),
                pfn as c_ulong,
                size as c_ulong,
                wc,
            )
        };
        if r != 0 {
            return Err(EAGAIN);
        }
        self.mapped = Some(entry);
        Ok(())
    }
}

/// `vm_private_data` of a tracked VMA (upstream `struct rdma_umap_priv`, without the list
/// node and the entry, which live in [`UmapsInner::vmas`] under the mutex).
struct UmapPriv {
    vma: *mut bindings::vm_area_struct,
    umaps: Arc<Umaps>,
    /// The page of a [`UserVma::map_trap`] mapping, installed by `fault`.
    trap: Option<Arc<TrapPage>>,
}

/// A tracked VMA: its `UmapPriv` and the reference it holds.
struct Tracked {
    priv_: *mut UmapPriv,
    entry: Option<KBox<dyn MapRef>>,
}

// SAFETY: the pointers are only dereferenced under the `Umaps` mutex, while the VMA exists
// (`close` removes it first), from any task.
unsafe impl Send for Tracked {}

struct UmapsInner {
    /// Disassociated: no new VMA is tracked, copies are zapped.
    dead: bool,
    vmas: KVec<Tracked>,
    /// upstream `ufile->disassociate_page`: what writable zapped VMAs fault in.
    dummy: Option<Page>,
}

/// The user mappings of one open file (upstream `ufile->umaps`, `umap_lock`).
#[pin_data]
pub struct Umaps {
    #[pin]
    inner: Mutex<UmapsInner>,
}

impl Umaps {
    /// No mappings yet.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Umaps {
                inner <- kernel::new_mutex!(
                    UmapsInner {
                        dead: false,
                        vmas: KVec::new(),
                        dummy: None,
                    },
                    "uverbs_umaps"
                ),
            }),
            GFP_KERNEL,
        )
    }

    /// Runs a driver's mmap (`f`) on `vma` and tracks the VMA if `f` mapped something
    /// (upstream `ib_uverbs_mmap()` + `rdma_umap_priv_init()`). The caller is `f_op->mmap`.
    ///
    /// # Errors
    ///
    /// `f`'s error (nothing is tracked then, and the VFS undoes a partial mapping); `EIO` after
    /// [`Self::disassociate`]; `ENOMEM`.
    pub fn mmap(
        self: &Arc<Self>,
        vma: &VmaNew,
        f: impl FnOnce(&mut UserVma<'_>) -> Result,
    ) -> Result {
        let priv_ = KBox::new(
            UmapPriv {
                vma: vma.as_ptr(),
                umaps: self.clone(),
                trap: None,
            },
            GFP_KERNEL,
        )?;
        // SAFETY: the vma is being set up; installing our ops (upstream: before the driver's
        // mmap). `UMAP_OPS` is static.
        unsafe { (*vma.as_ptr()).vm_ops = &UMAP_OPS };
        let mut uvma = UserVma {
            vma,
            mapped: None,
            trap: None,
        };
        f(&mut uvma)?;
        let mut priv_ = priv_;
        priv_.trap = uvma.trap.take();
        let Some(entry) = uvma.mapped else {
            // Nothing mapped: an untracked VMA faults SIGBUS (upstream: priv NULL).
            return Ok(());
        };
        let mut g = self.inner.lock();
        let raw = KBox::into_raw(priv_);
        let r = if g.dead {
            Err(EIO)
        } else {
            g.vmas
                .push(Tracked { priv_: raw, entry }, GFP_KERNEL)
                .map_err(|_| ENOMEM)
        };
        if let Err(e) = r {
            drop(g);
            // SAFETY: `raw` came from `into_raw` above and was not published.
            drop(unsafe { KBox::from_raw(raw) });
            // SAFETY: we hold the mmap_lock for writing; the range is the VMA.
            unsafe {
                bindings::zap_special_vma_range(vma.as_ptr(), vma.start() as c_ulong, uvma_len(vma))
            };
            return Err(e);
        }
        // SAFETY: the vma is being set up; `close` frees the priv.
        unsafe { (*vma.as_ptr()).vm_private_data = raw.cast() };
        Ok(())
    }

    /// Zaps every tracked VMA and drops their references (upstream
    /// `uverbs_user_mmap_disassociate()`); later touches fault into the zero page, and new
    /// mappings fail with `EIO`. Sleeps.
    pub fn disassociate(&self) {
        self.inner.lock().dead = true;
        loop {
            // An mm that still has a tracked VMA and is not exiting.
            let mm = {
                let mut g = self.inner.lock();
                loop {
                    let Some(t) = g.vmas.first() else {
                        return;
                    };
                    // SAFETY: a tracked priv and its VMA are alive while in the list (`close`
                    // removes them under the mutex first).
                    let mm = unsafe { (*(*t.priv_).vma).vm_mm };
                    // SAFETY: `mm` is the VMA's mm, alive (the VMA is).
                    if unsafe { bindings::mmget_not_zero(mm) } {
                        break mm;
                    }
                    // Exiting: its VMAs go away without us; just forget this one (upstream).
                    let _ = g.vmas.remove(0);
                }
            };
            // SAFETY: we hold a user reference on `mm` (mmget_not_zero).
            unsafe { bindings::mmap_read_lock(mm) };
            {
                let mut g = self.inner.lock();
                g.vmas.retain(|t| {
                    // SAFETY: as above.
                    let vma = unsafe { (*t.priv_).vma };
                    // SAFETY: as above.
                    if unsafe { (*vma).vm_mm } != mm {
                        return true;
                    }
                    // SAFETY: we hold the mmap_lock of the VMA's mm for reading; the range is
                    // the whole VMA.
                    unsafe {
                        let start = (*vma).__bindgen_anon_1.__bindgen_anon_1.vm_start;
                        let end = (*vma).__bindgen_anon_1.__bindgen_anon_1.vm_end;
                        bindings::zap_special_vma_range(vma, start, end - start);
                    }
                    false
                });
            }
            // SAFETY: locked and referenced above.
            unsafe {
                bindings::mmap_read_unlock(mm);
                bindings::mmput(mm);
            }
        }
    }

    /// How many VMAs are tracked (tests).
    pub fn count(&self) -> usize {
        self.inner.lock().vmas.len()
    }
}

fn uvma_len(vma: &VmaNew) -> c_ulong {
    (vma.end() - vma.start()) as c_ulong
}

static UMAP_OPS: bindings::vm_operations_struct = bindings::vm_operations_struct {
    open: Some(umap_open),
    close: Some(umap_close),
    fault: Some(umap_fault),
    ..pin_init::zeroed()
};

/// upstream `rdma_umap_open()`: a copy of a tracked VMA (fork, split) is tracked too, with its
/// own reference; after disassociate (or if that fails) the copy is zapped and untracked.
///
/// # Safety
///
/// Called by the mm for a new VMA copied from one with our `vm_ops`.
unsafe extern "C" fn umap_open(vma: *mut bindings::vm_area_struct) {
    // SAFETY: the copy carries the original's private data.
    let opriv = unsafe { (*vma).vm_private_data }.cast::<UmapPriv>();
    if opriv.is_null() {
        return;
    }
    // SAFETY: the original VMA still exists (it is being copied), so its priv does.
    let umaps = unsafe { &(*opriv).umaps };
    let mut g = umaps.inner.lock();
    let dup = match g.vmas.iter().find(|t| t.priv_ == opriv) {
        Some(t) if !g.dead => match &t.entry {
            Some(e) => e.dup().map(Some),
            None => Ok(None),
        },
        _ => Err(EIO),
    };
    let tracked = dup.and_then(|entry| {
        // SAFETY: as above.
        let trap = unsafe { (*opriv).trap.clone() };
        let p = KBox::new(
            UmapPriv {
                vma,
                umaps: umaps.clone(),
                trap,
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(p);
        match g.vmas.push(Tracked { priv_: raw, entry }, GFP_KERNEL) {
            Ok(()) => Ok(raw),
            Err(_) => {
                // SAFETY: not published.
                drop(unsafe { KBox::from_raw(raw) });
                Err(ENOMEM)
            }
        }
    });
    drop(g);
    match tracked {
        Ok(raw) => {
            // SAFETY: the new VMA is ours to set up.
            unsafe { (*vma).vm_private_data = raw.cast() };
            // fork() copies the page table entries of a mixed map after `open`: a copy of an
            // installed trap page counts as installed, so that `rearm` zaps it too.
            // SAFETY: `raw` is the new VMA's priv, alive with it.
            if let Some(t) = unsafe { &(*raw).trap } {
                // SAFETY: the new VMA is valid; `vm_mm` is set before `open`.
                let mm = unsafe { (*vma).vm_mm };
                let _ = t.installed.lock().push(Installed { vma, mm }, GFP_KERNEL);
            }
        }
        Err(_) => {
            // upstream: the copy cannot keep the real pages: zap it.
            // SAFETY: the mm's lock is held by the caller; the range is the whole VMA.
            unsafe {
                (*vma).vm_private_data = ptr::null_mut();
                let start = (*vma).__bindgen_anon_1.__bindgen_anon_1.vm_start;
                let end = (*vma).__bindgen_anon_1.__bindgen_anon_1.vm_end;
                bindings::zap_special_vma_range(vma, start, end - start);
            }
        }
    }
}

/// upstream `rdma_umap_close()`.
///
/// # Safety
///
/// Called by the mm once for a VMA with our `vm_ops` that is going away.
unsafe extern "C" fn umap_close(vma: *mut bindings::vm_area_struct) {
    // SAFETY: set by `Umaps::mmap` or `umap_open`, or null.
    let p = unsafe { (*vma).vm_private_data }.cast::<UmapPriv>();
    if p.is_null() {
        return;
    }
    // SAFETY: `p` is this VMA's priv, alive until freed below.
    let umaps = unsafe { &(*p).umaps };
    let gone = {
        let mut g = umaps.inner.lock();
        match g.vmas.iter().position(|t| t.priv_ == p) {
            Some(i) => g.vmas.remove(i).ok(),
            None => None,
        }
    };
    // The reference, outside the mutex.
    drop(gone);
    // SAFETY: as above.
    if let Some(t) = unsafe { &(*p).trap } {
        t.forget(vma);
    }
    // SAFETY: the VMA is closing: nothing uses its priv any more.
    unsafe {
        (*vma).vm_private_data = ptr::null_mut();
        drop(KBox::from_raw(p));
    }
}

/// Emulates the user store that faulted on `trap`'s mapping: decodes it
/// ([`x86_store::decode`]), checks that it writes the faulting address within the page,
/// naturally aligned, writes its bytes into the page, moves the task's instruction pointer
/// past it and tells the handler ([`TrapHandler::stored`]). Returns `false`, having changed
/// nothing, for anything else (a form the decoder refuses, a kernel access, a read, another
/// architecture): the caller installs the page and the CPU executes the store.
fn emulate_store(vmf: *mut bindings::vm_fault, trap: &Arc<TrapPage>) -> bool {
    let mut gpr: Gprs = [0; 16];
    let (mut ip, mut addr) = (0u64, 0u64);
    let mut insn = [0u8; MAX_INSN];
    let mut n: core::ffi::c_uint = 0;
    // SAFETY: `vmf` is the valid fault of the current task; the buffers are ours and as long
    // as the shim writes (16 registers, `MAX_INSN` bytes).
    let r = unsafe {
        rdma_rs_store_fault(
            vmf.cast(),
            gpr.as_mut_ptr(),
            &mut ip,
            &mut addr,
            insn.as_mut_ptr(),
            &mut n,
        )
    };
    if r != 0 {
        return false;
    }
    let bytes = insn.get(..n as usize).unwrap_or(&[]);
    let Some(st) = x86_store::decode(bytes, ip, &gpr) else {
        return false;
    };
    let offset = (addr as usize) & (PAGE_SIZE - 1);
    if st.addr != addr || offset % st.len != 0 || offset + st.len > PAGE_SIZE {
        return false;
    }
    let value = st.value.to_le_bytes();
    let Some(stored) = value.get(..st.len) else {
        return false;
    };
    if trap.page.write(offset, stored).is_err() {
        return false;
    }
    // Not queued: the CPU executes the store on the installed page (the same bytes again).
    if on_resume(trap, Some((offset, st.len))).is_err() {
        return false;
    }
    // SAFETY: the current task faulted in user space (checked by `rdma_rs_store_fault`); its
    // saved instruction pointer moves past the emulated instruction.
    unsafe { rdma_rs_store_done(ip.wrapping_add(st.insn_len as u64)) };
    true
}

/// What a fault of a [`TrapPage`]'s mapping leaves for its handler (task work).
struct Resume {
    trap: Arc<TrapPage>,
    /// The store emulated (offset and length: [`TrapHandler::stored`]), or `None`: the page
    /// was installed ([`TrapHandler::rung`]).
    store: Option<(usize, usize)>,
}

/// Queues the handler's call for `trap`'s fault to the current task's return to user space:
/// the handler runs the device's work (the simulator executes the message the store
/// announced) on the stack the task has as it leaves the kernel, not on top of the fault
/// handler's (the mm's fault path and its locks), with a reference on the handler's module
/// until it returns.
///
/// # Errors
///
/// `ENOMEM`; `ENODEV` if the handler's module is being unloaded.
fn on_resume(trap: &Arc<TrapPage>, store: Option<(usize, usize)>) -> Result {
    let data = KBox::into_raw(KBox::new(
        Resume {
            trap: trap.clone(),
            store,
        },
        GFP_KERNEL,
    )?);
    // SAFETY: `resume_run` takes `data` back exactly once if the call is queued; `owner` is
    // the module of the handler's code (`TrapPage::new`).
    let r = unsafe { rdma_rs_on_resume(resume_run, data.cast(), trap.owner.as_ptr().cast()) };
    if r != 0 {
        // SAFETY: not queued: `data` is still the box made above, and only ours.
        drop(unsafe { KBox::from_raw(data) });
        return Err(Error::from_errno(r));
    }
    Ok(())
}

/// The task work of [`on_resume`].
///
/// # Safety
///
/// `data` is a [`Resume`] box queued by [`on_resume`]; called once.
unsafe extern "C" fn resume_run(data: *mut c_void) {
    // SAFETY: per the function's contract.
    let r = unsafe { KBox::from_raw(data.cast::<Resume>()) };
    match r.store {
        Some((offset, len)) => r.trap.handler.stored(&r.trap, offset, len),
        None => r.trap.handler.rung(&r.trap),
    }
}

/// upstream `rdma_umap_fault()`: reached only after the zap (tracked VMAs are fully mapped).
///
/// # Safety
///
/// Called by the mm for a fault in a VMA with our `vm_ops`.
unsafe extern "C" fn umap_fault(vmf: *mut bindings::vm_fault) -> bindings::vm_fault_t {
    // SAFETY: `vmf` is valid for the call.
    let vma = unsafe { rdma_rs_vmf_vma(vmf.cast()) }.cast::<bindings::vm_area_struct>();
    // SAFETY: the faulting VMA is valid and cannot be closed during the fault.
    let (p, vm_flags) = unsafe {
        (
            (*vma).vm_private_data.cast::<UmapPriv>(),
            (*vma).__bindgen_anon_2.vm_flags,
        )
    };
    if p.is_null() {
        return bindings::vm_fault_reason_VM_FAULT_SIGBUS;
    }
    // SAFETY: the VMA's priv is alive while the VMA is.
    if let Some(trap) = unsafe { &(*p).trap } {
        // SAFETY: as above.
        let umaps = unsafe { &(*p).umaps };
        let live = {
            let g = umaps.inner.lock();
            !g.dead && g.vmas.iter().any(|t| t.priv_ == p)
        };
        if live && trap.handler.emulate_stores() && emulate_store(vmf, trap) {
            return bindings::vm_fault_reason_VM_FAULT_NOPAGE;
        }
        if live {
            // Installed here (not by the caller after we return), then listed: a `rearm`
            // that runs in between finds nothing to zap yet, and the next one zaps it.
            // SAFETY: valid `vmf` of a mixed-map VMA; the page is the trap's, and the mapping
            // takes its own reference on it.
            let r = unsafe { rdma_rs_trap_insert(vmf.cast(), trap.page.page().as_ptr().cast()) };
            if r == bindings::vm_fault_reason_VM_FAULT_NOPAGE {
                // SAFETY: the faulting VMA is valid for the call.
                let mm = unsafe { (*vma).vm_mm };
                let _ = trap
                    .installed
                    .lock()
                    .push(Installed { vma, mm }, GFP_KERNEL);
                if on_resume(trap, None).is_err() {
                    trap.handler.rung(trap);
                }
            }
            return r;
        }
        // Disassociated: fall through to the dummy page like any zapped VMA.
    }
    // Read-only: the system zero page.
    if vm_flags & (flags::WRITE | flags::MAYWRITE) == 0 {
        // SAFETY: valid `vmf`; NULL asks for the zero page.
        return unsafe { rdma_rs_fault_install(vmf.cast(), ptr::null_mut()) };
    }
    // SAFETY: the VMA's priv is alive while the VMA is.
    let umaps = unsafe { &(*p).umaps };
    let mut g = umaps.inner.lock();
    if g.dummy.is_none() {
        g.dummy = Page::alloc_page(GFP_KERNEL | __GFP_ZERO).ok();
    }
    match &g.dummy {
        // SAFETY: valid `vmf`; the shim takes a reference on the page for the mapping (the
        // VMA is shared, so there is no COW of it).
        Some(page) => unsafe { rdma_rs_fault_install(vmf.cast(), page.as_ptr().cast()) },
        None => bindings::vm_fault_reason_VM_FAULT_SIGBUS,
    }
}
