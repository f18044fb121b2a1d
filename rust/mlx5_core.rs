// SPDX-License-Identifier: GPL-2.0

//! Binding to functions of real ConnectX adapters: the `mlx5_core.rdma.N` auxiliary devices the
//! in-tree C mlx5_core creates, and the mlx5_core API behind them (C shim: `rust/mlx5_core.c`,
//! `include/rdma_rs_mlx5_core.h`).
//!
//! The kernel crate has no way to reach the C structure around an auxiliary device that a C
//! driver created (`struct mlx5_adev` and its `mdev`); this file is where that is done, so that
//! `mlx5/` stays safe Rust. The result, [`CoreDev`], is a revocable handle: the
//! `mlx5_core_dev` it points to lives at least as long as the binding (mlx5_core deletes its
//! auxiliary devices, unbinding us, before it frees the `mlx5_core_dev`), and the handle is
//! revoked when the binding ends, so whoever still holds it afterwards gets `ENODEV`.

use core::ptr::NonNull;
use ib_core_rs::page_ref::PageRef;
use kernel::{
    auxiliary, device,
    ffi::{c_int, c_void},
    new_mutex, new_spinlock_irq,
    prelude::*,
    sync::atomic::{Acquire, Atomic, Full, Relaxed, Release},
    sync::{aref::ARef, Arc, Mutex, SpinLockIrq, Srcu},
};

/// `struct rdma_rs_mlx5_ident` (include/rdma_rs_mlx5_core.h).
#[repr(C)]
#[derive(Clone, Copy)]
struct RawIdent {
    pci_vendor: u16,
    pci_device: u16,
    pci_revision: u8,
    fw_maj: u16,
    fw_min: u16,
    fw_sub: u16,
}

// The C side has the same assert (`BUILD_BUG_ON` in rust/mlx5_core.c).
const _: () = assert!(core::mem::size_of::<RawIdent>() == 12);

extern "C" {
    fn rdma_rs_mlx5_adev_mdev(adev: *mut c_void) -> *mut c_void;
    fn rdma_rs_mlx5_cmd_do(
        mdev: *mut c_void,
        inbox: *const c_void,
        in_size: c_int,
        outbox: *mut c_void,
        out_size: c_int,
    ) -> c_int;
    fn rdma_rs_mlx5_caps_cur(mdev: *mut c_void, cap_type: c_int, len: *mut usize) -> *const c_void;
    fn rdma_rs_mlx5_ident(mdev: *mut c_void, out: *mut RawIdent);
    fn rdma_rs_mlx5_uar_paddr(mdev: *mut c_void, index: u32) -> u64;
    fn rdma_rs_mlx5_wc_support(mdev: *mut c_void) -> bool;
    fn rdma_rs_mlx5_uar_map(mdev: *mut c_void, index: u32) -> *mut c_void;
    fn rdma_rs_mlx5_uar_unmap(uar: *mut c_void);
    fn rdma_rs_mlx5_uar_write64(uar: *mut c_void, offset: u32, be_value: u64);
    fn rdma_rs_mlx5_comp_vectors(mdev: *mut c_void) -> u32;
    fn rdma_rs_mlx5_comp_eqn(mdev: *mut c_void, vector: u16, eqn: *mut u32) -> c_int;
    fn rdma_rs_mlx5_dma_map_pages(
        dev: *mut c_void,
        pages: *const *const c_void,
        n: u32,
        addrs: *mut u64,
    ) -> c_int;
    fn rdma_rs_mlx5_dma_unmap_pages(dev: *mut c_void, addrs: *const u64, n: u32);
    fn rdma_rs_mlx5_create_cq(
        mdev: *mut c_void,
        inbox: *const c_void,
        in_size: c_int,
        outbox: *mut c_void,
        out_size: c_int,
        f: EventFn,
        ctx: *mut c_void,
        err: *mut c_int,
    ) -> *mut c_void;
    fn rdma_rs_mlx5_cq_cqn(cq: *const c_void) -> u32;
    fn rdma_rs_mlx5_destroy_cq(mdev: *mut c_void, cq: *mut c_void) -> c_int;
    fn rdma_rs_mlx5_events_register(mdev: *mut c_void, f: EventFn, ctx: *mut c_void)
        -> *mut c_void;
    fn rdma_rs_mlx5_events_unregister(mdev: *mut c_void, ev: *mut c_void);
}

/// `rdma_rs_mlx5_event_fn` (include/rdma_rs_mlx5_core.h).
type EventFn = unsafe extern "C" fn(ctx: *mut c_void, event_type: u32, num: u32);

/// `MLX5_EVENT_TYPE_COMP`: what the shim passes for a completion.
pub(crate) const EVENT_COMP: u32 = 0;

/// `MLX5_DEV_EVENT_SYS_ERROR` (driver.h): the function entered its error state
/// (`mlx5_enter_error_state()`, atomic notifier chain); `num` is 0.
pub(crate) const DEV_EVENT_SYS_ERROR: u32 = 128;

/// Who receives a function's device events (the mlx5_core backend's adapter to the driver's
/// event table). Called in interrupt context (mlx5_core's EQ handlers): must not sleep.
pub(crate) trait CoreEvents: Send + Sync {
    /// [`EVENT_COMP`] for a completion of CQ `num`, else an `enum mlx5_event` of the async EQ
    /// (`CQ_ERROR` for CQ `num`; QP events for QP `num`; SRQ events for SRQ `num`).
    fn event(&self, event_type: u32, num: u32);
}

/// The C side's objects that call back into a [`CoreDev`]: the CQs created through
/// mlx5_core (number, `struct rdma_rs_mlx5_cq *`) and the event notifier.
struct Bound {
    cqs: KVec<(u32, usize)>,
    notifier: usize,
}

/// The shim's callback: `ctx` is the [`CoreDev`] the object was created for.
///
/// # Safety
///
/// `ctx` must point to a live [`CoreDev`]: every C object that calls this is created with
/// its `CoreDev` as `ctx` and freed (CQs destroyed, the notifier unregistered, both waiting
/// for calls in progress) before that `CoreDev` can be dropped ([`CoreDev::revoke`] frees
/// whatever is left, and the devres action that runs it holds a reference).
unsafe extern "C" fn event_trampoline(ctx: *mut c_void, event_type: u32, num: u32) {
    // SAFETY: See the function's safety section.
    let dev = unsafe { &*ctx.cast::<CoreDev>() };
    if let Some(sink) = &*dev.sink.lock() {
        sink.event(event_type, num);
    }
}

/// What mlx5_core knows about a function before any RDMA command.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CoreIdent {
    /// PCI vendor id.
    pub(crate) pci_vendor: u16,
    /// PCI device id.
    pub(crate) pci_device: u16,
    /// PCI revision id (sysfs `hw_rev`).
    pub(crate) pci_revision: u8,
    /// Firmware major.minor.subminor from the initialization segment.
    pub(crate) fw_rev: (u16, u16, u16),
}

/// A function of a real adapter, driven through mlx5_core, reachable until revoked.
///
/// The handle is shared (`Arc`): the RDMA device and its user contexts hold it for as long as
/// they live, which may be longer than the binding (a user context open while mlx5_core
/// removes the function). Every access runs inside an SRCU read-side section (commands sleep)
/// that first checks `live`; [`CoreDev::revoke`] clears `live` and waits for the sections in
/// progress, and is run by a devres action of the auxiliary device when it is unbound. After
/// that every call fails with `ENODEV` and `mdev` is never touched again.
///
/// # Invariants
///
/// While `live` is true, `mdev` is the `mlx5_core_dev` of an auxiliary device bound to our
/// driver; mlx5_core keeps it (and its capability pages) alive until it deletes the auxiliary
/// device, which unbinds us first, which runs the devres action that revokes (`live` false,
/// then `synchronize_srcu`) before unbinding completes. So a reader that saw `live` true inside
/// a read-side section may use `mdev` until the section ends.
#[pin_data]
pub(crate) struct CoreDev {
    #[pin]
    srcu: Srcu,
    live: Atomic<bool>,
    mdev: NonNull<c_void>,
    /// The PCI function (`mlx5_core_dma_dev()`, the auxiliary device's parent): DMA mappings
    /// are made for it. Referenced, so that mappings can be undone even after the binding.
    dma_dev: ARef<device::Device>,
    /// Where events go ([`CoreDev::set_events`]); the callbacks hold this lock while they
    /// deliver.
    #[pin]
    sink: SpinLockIrq<Option<Arc<dyn CoreEvents>>>,
    /// The C objects that call back.
    #[pin]
    bound: Mutex<Bound>,
    /// The kernel UAR page as `ioremap()`ed by [`CoreDev::map_kernel_uar`] (null: none), and
    /// its index. Stores through it happen inside an SRCU read-side section; the unmapping
    /// clears the pointer and waits for the sections in progress first.
    kuar: Atomic<*mut c_void>,
    kuar_index: Atomic<u32>,
}

// SAFETY: `mlx5_cmd_do()` may be called from any task, concurrently (mlx5_core serializes on
// its command queue), and the capability pages are only read. The SRCU and the flag are
// thread-safe.
unsafe impl Send for CoreDev {}
// SAFETY: See `Send`: every method takes `&self` and is safe to call concurrently.
unsafe impl Sync for CoreDev {}

/// Revokes a [`CoreDev`] when dropped: registered as a devres action of the bound auxiliary
/// device, so it runs when the device is unbound (after the driver's remove).
struct RevokeOnUnbind(Arc<CoreDev>);

impl Drop for RevokeOnUnbind {
    fn drop(&mut self) {
        self.0.revoke();
    }
}

impl CoreDev {
    /// The mlx5_core function behind a bound `mlx5_core.rdma.N` auxiliary device; revoked
    /// automatically when the device is unbound.
    ///
    /// # Errors
    ///
    /// `ENODEV` if the device is not one mlx5_core created (a device merely named like one);
    /// `ENOMEM`.
    pub(crate) fn from_aux(adev: &auxiliary::Device<device::Bound>) -> Result<Arc<Self>> {
        // `auxiliary::Device` is `#[repr(transparent)]` over `Opaque<struct auxiliary_device>`
        // (rust/kernel/auxiliary.rs), so its address is the C `struct auxiliary_device`'s.
        let raw = core::ptr::from_ref(adev).cast_mut().cast::<c_void>();
        // SAFETY: `raw` points to a live `struct auxiliary_device` (type invariant of
        // `auxiliary::Device`); the shim checks that its parent is bound to mlx5_core before it
        // reads the enclosing `struct mlx5_adev`.
        let mdev = unsafe { rdma_rs_mlx5_adev_mdev(raw) };
        let mdev = NonNull::new(mdev).ok_or(ENODEV)?;
        // INVARIANT: `mdev` belongs to `adev`, which is bound now; the devres action registered
        // below revokes before the binding ends.
        let dev = Arc::pin_init(
            try_pin_init!(Self {
                srcu <- kernel::new_srcu!("mlx5_ib_rs_core"),
                live: Atomic::new(true),
                mdev,
                dma_dev: ARef::from(adev.parent()),
                sink <- new_spinlock_irq!(None),
                bound <- new_mutex!(Bound { cqs: KVec::new(), notifier: 0 }),
                kuar: Atomic::new(core::ptr::null_mut()),
                kuar_index: Atomic::new(0),
            }),
            GFP_KERNEL,
        )?;
        // On failure the action's data is dropped at once, which revokes: nothing can use the
        // handle then.
        kernel::devres::register(adev.as_ref(), RevokeOnUnbind(dev.clone()), GFP_KERNEL)?;
        Ok(dev)
    }

    /// Ends access: later calls fail with `ENODEV`; returns once no call is using the function.
    /// Idempotent.
    pub(crate) fn revoke(&self) {
        self.live.store(false, Release);
        self.srcu.synchronize();
        // No doorbell store after the binding: the BAR goes with mlx5_core's teardown.
        self.unmap_kernel_uar();
        // Whatever the driver did not destroy (it destroys everything before unbinding
        // ends) must not call back into a CoreDev that may go away: freed here, where `mdev`
        // is still valid (the devres action runs before unbinding completes).
        let mut b = self.bound.lock();
        let mdev = self.mdev.as_ptr();
        for (cqn, cq) in b.cqs.drain_all() {
            pr_warn!("mlx5_ib_rs: CQ 0x{:x} left at unbind; destroyed\n", cqn);
            // SAFETY: `cq` came from rdma_rs_mlx5_create_cq() for this `mdev`, which is valid
            // (see above) and not yet destroyed (it was in the list).
            unsafe { rdma_rs_mlx5_destroy_cq(mdev, cq as *mut c_void) };
        }
        if b.notifier != 0 {
            // SAFETY: registered on this `mdev` by `set_events`, not yet unregistered.
            unsafe { rdma_rs_mlx5_events_unregister(mdev, b.notifier as *mut c_void) };
            b.notifier = 0;
        }
    }

    fn ctx(&self) -> *mut c_void {
        core::ptr::from_ref(self).cast_mut().cast()
    }

    /// Sets (or, with `None`, clears) where device events go, and registers the QP/SRQ event
    /// notifier with mlx5_core while there is a receiver. Once clearing returned, no callback
    /// is running or will run.
    pub(crate) fn set_events(&self, sink: Option<Arc<dyn CoreEvents>>) {
        let want = sink.is_some();
        if want {
            *self.sink.lock() = sink;
        }
        let mut b = self.bound.lock();
        let ctx = self.ctx();
        let _ = self.with(|mdev| {
            if want && b.notifier == 0 {
                // SAFETY: `mdev` is live (`with`); `ctx` is this CoreDev, which outlives the
                // registration (`event_trampoline`); process context.
                let ev = unsafe { rdma_rs_mlx5_events_register(mdev, event_trampoline, ctx) };
                if ev.is_null() {
                    pr_err!("mlx5_ib_rs: no memory for the QP event notifier\n");
                }
                b.notifier = ev as usize;
            } else if !want && b.notifier != 0 {
                // SAFETY: registered on this `mdev` above; unregistering waits for calls in
                // progress (process context).
                unsafe { rdma_rs_mlx5_events_unregister(mdev, b.notifier as *mut c_void) };
                b.notifier = 0;
            }
        });
        drop(b);
        if !want {
            // Waits for a callback in progress (it holds the lock while delivering).
            let old = self.sink.lock().take();
            drop(old);
        }
    }

    /// CREATE_CQ through mlx5_core (`mlx5_create_cq()`), so that its EQs deliver the CQ's
    /// completions and errors to [`CoreDev::set_events`]'s receiver. Same results as
    /// [`CoreDev::cmd_do`] (`EREMOTEIO` with the status in `outbox`).
    ///
    /// # Errors
    ///
    /// As above; `ENOMEM`; mlx5_core's errno when it cannot track the CQ; `ENODEV` once
    /// revoked.
    pub(crate) fn create_cq(&self, inbox: &[u8], outbox: &mut [u8]) -> Result {
        let in_size = c_int::try_from(inbox.len()).map_err(|_| EINVAL)?;
        let out_size = c_int::try_from(outbox.len()).map_err(|_| EINVAL)?;
        let mut b = self.bound.lock();
        // Room first, so that tracking a created CQ cannot fail.
        b.cqs.reserve(1, GFP_KERNEL)?;
        let ctx = self.ctx();
        let (cq, err) = self.with(|mdev| {
            let mut err: c_int = 0;
            // SAFETY: `mdev` is live (`with`); the buffers are valid for their lengths for the
            // call (the shim copies the inbox and writes at most `out_size` bytes); `ctx` is
            // this CoreDev, which outlives the CQ (`event_trampoline`); process context.
            let cq = unsafe {
                rdma_rs_mlx5_create_cq(
                    mdev,
                    inbox.as_ptr().cast(),
                    in_size,
                    outbox.as_mut_ptr().cast(),
                    out_size,
                    event_trampoline,
                    ctx,
                    &mut err,
                )
            };
            (cq, err)
        })?;
        if cq.is_null() {
            return kernel::error::to_result(if err == 0 { -(ENOMEM.to_errno()) } else { err });
        }
        // SAFETY: `cq` is a live CQ the shim just created.
        let cqn = unsafe { rdma_rs_mlx5_cq_cqn(cq) };
        // Within the room reserved above.
        let _ = b.cqs.push_within_capacity((cqn, cq as usize));
        Ok(())
    }

    /// DESTROY_CQ of a CQ [`CoreDev::create_cq`] made (`mlx5_core_destroy_cq()`: no callback
    /// for it after this returns); `None` if no such CQ was made here.
    pub(crate) fn destroy_cq(&self, cqn: u32) -> Option<Result> {
        let mut b = self.bound.lock();
        let i = b.cqs.iter().position(|(n, _)| *n == cqn)?;
        let cq = b.cqs.get(i)?.1;
        let r = self.with(|mdev| {
            // SAFETY: `mdev` is live (`with`); `cq` was created for it and is not destroyed
            // (it is in the list); process context (the call waits for callbacks).
            unsafe { rdma_rs_mlx5_destroy_cq(mdev, cq as *mut c_void) }
        });
        Some(match r {
            Ok(0) => {
                let _ = b.cqs.remove(i);
                Ok(())
            }
            Ok(e) => kernel::error::to_result(e),
            Err(e) => Err(e),
        })
    }

    /// Runs `f` with the live `mlx5_core_dev`, or returns `ENODEV` once revoked.
    fn with<R>(&self, f: impl FnOnce(*mut c_void) -> R) -> Result<R> {
        let _guard = self.srcu.read_lock();
        if !self.live.load(Acquire) {
            return Err(ENODEV);
        }
        // The section started before any revoke that has not yet seen it finish, so `mdev`
        // stays valid until `_guard` drops (type invariant).
        Ok(f(self.mdev.as_ptr()))
    }

    /// `mlx5_cmd_do()`: `Ok`, `EREMOTEIO` with the status and syndrome in `outbox`, or another
    /// errno when the command was not completed.
    ///
    /// # Errors
    ///
    /// As above; `EINVAL` for a buffer longer than `c_int` can describe; `ENODEV` once revoked.
    pub(crate) fn cmd_do(&self, inbox: &[u8], outbox: &mut [u8]) -> Result {
        let in_size = c_int::try_from(inbox.len()).map_err(|_| EINVAL)?;
        let out_size = c_int::try_from(outbox.len()).map_err(|_| EINVAL)?;
        let r = self.with(|mdev| {
            // SAFETY: `mdev` is live (`with`); `inbox` and `outbox` are valid for their lengths
            // for the duration of the call, which only reads `inbox` and writes at most
            // `out_size` bytes of `outbox`; mlx5_cmd_do() sleeps, which an SRCU read-side
            // section allows, and we are in process context.
            unsafe {
                rdma_rs_mlx5_cmd_do(
                    mdev,
                    inbox.as_ptr().cast(),
                    in_size,
                    outbox.as_mut_ptr().cast(),
                    out_size,
                )
            }
        })?;
        kernel::error::to_result(r)
    }

    /// A copy of `mdev->caps.hca[cap_type]->cur`, the current capability page mlx5_core
    /// cached; `None` if it keeps no page of that type.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, `ENODEV` once revoked.
    pub(crate) fn caps_cur(&self, cap_type: u32) -> Result<Option<KVec<u8>>> {
        let Ok(t) = c_int::try_from(cap_type) else {
            return Ok(None);
        };
        self.with(|mdev| {
            let mut len = 0usize;
            // SAFETY: `mdev` is live (`with`); the shim range-checks `t`.
            let p = unsafe { rdma_rs_mlx5_caps_cur(mdev, t, &mut len) };
            if p.is_null() {
                return Ok(None);
            }
            // SAFETY: `p` is the `cur` array of a `struct mlx5_hca_cap`, `len` bytes long,
            // owned by the `mlx5_core_dev`, live for this section (`with`). mlx5_core rewrites
            // it only while no RDMA auxiliary device exists (devlink reload and firmware reset
            // delete them first), so it does not change while copied.
            let page = unsafe { core::slice::from_raw_parts(p.cast::<u8>(), len) };
            let mut v = KVec::with_capacity(len, GFP_KERNEL)?;
            v.extend_from_slice(page, GFP_KERNEL)?;
            Ok(Some(v))
        })?
    }

    /// The physical address of UAR `index`'s system page in BAR 0 (upstream
    /// `uar_index2paddress()`): what a user mapping of that UAR points at.
    ///
    /// # Errors
    ///
    /// `ENODEV` once revoked.
    pub(crate) fn uar_paddr(&self, index: u32) -> Result<u64> {
        // SAFETY: `mdev` is live (`with`); the shim only reads `mdev->bar_addr` and the cached
        // general capabilities.
        self.with(|mdev| unsafe { rdma_rs_mlx5_uar_paddr(mdev, index) })
    }

    /// `mlx5_comp_vectors_max()`: the function's completion vectors (upstream
    /// `ib_dev.num_comp_vectors`).
    ///
    /// # Errors
    ///
    /// `ENODEV` once revoked.
    pub(crate) fn comp_vectors(&self) -> Result<u32> {
        // SAFETY: `mdev` is live (`with`); the function reads mlx5_core's IRQ table size.
        self.with(|mdev| unsafe { rdma_rs_mlx5_comp_vectors(mdev) })
    }

    /// Maps the kernel UAR page `index` (ALLOC_UAR's number, upstream `mdev->priv.uar` as
    /// `mlx5_get_uars_page()` maps it: uncached) for [`CoreDev::kernel_uar_write64`]. One
    /// kernel UAR per function.
    ///
    /// # Errors
    ///
    /// `EBUSY` if one is mapped already, `ENOMEM` when `ioremap()` fails, `ENODEV` once
    /// revoked.
    pub(crate) fn map_kernel_uar(&self, index: u32) -> Result {
        if !self.kuar.load(Acquire).is_null() {
            return Err(EBUSY);
        }
        // SAFETY: `mdev` is live (`with`); the shim reads the BAR address and the general
        // capabilities and calls ioremap(), which may sleep (process context, allowed in the
        // section).
        let p = self.with(|mdev| unsafe { rdma_rs_mlx5_uar_map(mdev, index) })?;
        if p.is_null() {
            return Err(ENOMEM);
        }
        self.kuar_index.store(index, Relaxed);
        self.kuar.store(p, Release);
        Ok(())
    }

    /// Undoes [`CoreDev::map_kernel_uar`] (nothing if none is mapped); returns once no store
    /// through the mapping is in progress. Process context.
    pub(crate) fn unmap_kernel_uar(&self) {
        let p = self.kuar.xchg(core::ptr::null_mut(), Full);
        if p.is_null() {
            return;
        }
        // A store that loaded the pointer before the exchange is inside a read-side section.
        self.srcu.synchronize();
        // SAFETY: `p` came from rdma_rs_mlx5_uar_map() (stored by `map_kernel_uar`), the
        // exchange above made this the only caller to see it, and no store uses it any more.
        unsafe { rdma_rs_mlx5_uar_unmap(p) };
    }

    /// `mlx5_write64()`: the doorbell `be_value` (its 8 bytes read as a big-endian number)
    /// stored at `offset` of the kernel UAR `index` in one MMIO write. Never sleeps.
    ///
    /// # Errors
    ///
    /// `EINVAL` if `index` is not the mapped kernel UAR or `offset` is not an aligned doorbell
    /// inside the 4 KiB UAR; `ENODEV` once revoked.
    pub(crate) fn kernel_uar_write64(&self, index: u32, offset: u32, be_value: u64) -> Result {
        if offset % 8 != 0 || offset > 4096 - 8 {
            return Err(EINVAL);
        }
        let _guard = self.srcu.read_lock();
        if !self.live.load(Acquire) {
            return Err(ENODEV);
        }
        let p = self.kuar.load(Acquire);
        if p.is_null() || self.kuar_index.load(Relaxed) != index {
            return Err(EINVAL);
        }
        // SAFETY: `p` is a live mapping of a 4 KiB UAR (it is unmapped only after the pointer
        // was cleared and this section ended), `offset` + 8 is inside it and 8-aligned.
        unsafe { rdma_rs_mlx5_uar_write64(p, offset, be_value) };
        Ok(())
    }

    /// `mlx5_wc_support_get()`: whether write-combining mappings of UAR pages work (mlx5_core
    /// tests it once and caches the answer); false once revoked.
    pub(crate) fn wc_supported(&self) -> bool {
        // SAFETY: `mdev` is live (`with`); mlx5_wc_support_get() may sleep (allowed in the
        // section), and callers are in process context.
        self.with(|mdev| unsafe { rdma_rs_mlx5_wc_support(mdev) })
            .unwrap_or(false)
    }

    /// PCI ids and firmware revision (the board id comes from QUERY_ADAPTER, as upstream's
    /// `mlx5_query_board_id()` reads it).
    ///
    /// # Errors
    ///
    /// `ENODEV` once revoked.
    pub(crate) fn ident(&self) -> Result<CoreIdent> {
        let mut raw = RawIdent {
            pci_vendor: 0,
            pci_device: 0,
            pci_revision: 0,
            fw_maj: 0,
            fw_min: 0,
            fw_sub: 0,
        };
        // SAFETY: `mdev` is live (`with`); `raw` is a valid `rdma_rs_mlx5_ident`.
        self.with(|mdev| unsafe { rdma_rs_mlx5_ident(mdev, &mut raw) })?;
        Ok(CoreIdent {
            pci_vendor: raw.pci_vendor,
            pci_device: raw.pci_device,
            pci_revision: raw.pci_revision,
            fw_rev: (raw.fw_maj, raw.fw_min, raw.fw_sub),
        })
    }

    /// `mlx5_comp_eqn_get()`: the completion EQ of `vector` (mlx5_core creates it on first
    /// use, which sleeps).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a vector beyond the function's, mlx5_core's EQ creation errors, `ENODEV`
    /// once revoked.
    pub(crate) fn comp_eqn(&self, vector: u32) -> Result<u32> {
        let v = u16::try_from(vector).map_err(|_| EINVAL)?;
        let mut eqn = 0u32;
        // SAFETY: `mdev` is live (`with`); `eqn` is a valid `u32` for the call.
        let r = self.with(|mdev| unsafe { rdma_rs_mlx5_comp_eqn(mdev, v, &mut eqn) })?;
        kernel::error::to_result(r)?;
        Ok(eqn)
    }

    /// The C `struct device` of `dma_dev`: `device::Device` is `#[repr(transparent)]` over
    /// `Opaque<struct device>` (rust/kernel/device.rs), so its address is the C structure's.
    fn dma_dev_ptr(&self) -> *mut c_void {
        let d: &device::Device = &self.dma_dev;
        core::ptr::from_ref(d).cast_mut().cast()
    }

    /// `dma_map_page()` of each page for the PCI function (DMA_BIDIRECTIONAL, as upstream's
    /// umems): the bus address of each, in order. Undo with [`CoreDev::dma_unmap`].
    ///
    /// # Errors
    ///
    /// `ENOMEM` (nothing left mapped), `EINVAL` for more pages than a `u32` counts, `ENODEV`
    /// once revoked.
    pub(crate) fn dma_map(&self, pages: &[PageRef]) -> Result<KVec<u64>> {
        let n = u32::try_from(pages.len()).map_err(|_| EINVAL)?;
        let mut ptrs = KVec::with_capacity(pages.len(), GFP_KERNEL)?;
        for p in pages {
            ptrs.push(p.as_ptr().cast::<c_void>(), GFP_KERNEL)?;
        }
        let mut addrs = KVec::from_elem(0u64, pages.len(), GFP_KERNEL)?;
        let dev = self.dma_dev_ptr();
        let r = self.with(|_| {
            // SAFETY: `dev` is a referenced `struct device` (`dma_dev`); `ptrs` holds `n` valid
            // `struct page` pointers, each referenced by the caller's `PageRef`s for the call;
            // `addrs` has room for `n` addresses.
            unsafe { rdma_rs_mlx5_dma_map_pages(dev, ptrs.as_ptr(), n, addrs.as_mut_ptr()) }
        })?;
        kernel::error::to_result(r)?;
        Ok(addrs)
    }

    /// `dma_unmap_page()` of what [`CoreDev::dma_map`] returned. Also after revocation: the
    /// PCI device is still referenced (a user context that outlived the function releases
    /// its memory through here).
    pub(crate) fn dma_unmap(&self, addrs: &[u64]) {
        let Ok(n) = u32::try_from(addrs.len()) else {
            return;
        };
        // SAFETY: `dma_dev` is referenced; `addrs` are `n` addresses `dma_map` returned for it
        // and not yet unmapped (the caller's `DmaMap` is dropped once).
        unsafe { rdma_rs_mlx5_dma_unmap_pages(self.dma_dev_ptr(), addrs.as_ptr(), n) }
    }
}
