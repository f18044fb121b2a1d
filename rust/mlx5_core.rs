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
    prelude::*,
    sync::atomic::{Acquire, Atomic, Release},
    sync::{aref::ARef, Arc, Srcu},
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
    fn rdma_rs_mlx5_comp_eqn(mdev: *mut c_void, vector: u16, eqn: *mut u32) -> c_int;
    fn rdma_rs_mlx5_dma_map_pages(
        dev: *mut c_void,
        pages: *const *const c_void,
        n: u32,
        addrs: *mut u64,
    ) -> c_int;
    fn rdma_rs_mlx5_dma_unmap_pages(dev: *mut c_void, addrs: *const u64, n: u32);
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
