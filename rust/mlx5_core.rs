// SPDX-License-Identifier: GPL-2.0

//! Binding to functions of real ConnectX adapters: the `mlx5_core.rdma.N` auxiliary devices the
//! in-tree C mlx5_core creates, and the mlx5_core API behind them (C shim: `rust/mlx5_core.c`,
//! `include/rdma_rs_mlx5_core.h`).
//!
//! The kernel crate has no way to reach the C structure around an auxiliary device that a C
//! driver created (`struct mlx5_adev` and its `mdev`); this file is where that is done, so that
//! `mlx5/` stays safe Rust. The result, [`CoreDev`], borrows the bound auxiliary device: the
//! `mlx5_core_dev` it points to lives at least as long as the binding, because mlx5_core
//! deletes its auxiliary devices (unbinding us) before it frees the `mlx5_core_dev`.

use core::{marker::PhantomData, ptr::NonNull};
use kernel::{
    auxiliary, device,
    ffi::{c_int, c_void},
    prelude::*,
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

/// A function of a real adapter, driven through mlx5_core.
///
/// # Invariants
///
/// `mdev` is the `mlx5_core_dev` of the auxiliary device borrowed for `'a`, which is bound to
/// our driver for all of `'a`; mlx5_core keeps the `mlx5_core_dev` (and its capability pages)
/// alive until the auxiliary device is deleted, which unbinds us first.
pub(crate) struct CoreDev<'a> {
    mdev: NonNull<c_void>,
    name: &'a CStr,
    _adev: PhantomData<&'a auxiliary::Device<device::Bound>>,
}

// SAFETY: `mlx5_cmd_do()` may be called from any task, concurrently (mlx5_core serializes on
// its command queue), and the capability pages are only read. `CoreDev` has no thread-local
// state.
unsafe impl Send for CoreDev<'_> {}
// SAFETY: See `Send`: every method takes `&self` and is safe to call concurrently.
unsafe impl Sync for CoreDev<'_> {}

impl<'a> CoreDev<'a> {
    /// The mlx5_core function behind a bound `mlx5_core.rdma.N` auxiliary device.
    ///
    /// # Errors
    ///
    /// `ENODEV` if the device is not one mlx5_core created (a device merely named like one).
    pub(crate) fn from_aux(adev: &'a auxiliary::Device<device::Bound>) -> Result<Self> {
        // `auxiliary::Device` is `#[repr(transparent)]` over `Opaque<struct auxiliary_device>`
        // (rust/kernel/auxiliary.rs), so its address is the C `struct auxiliary_device`'s.
        let raw = core::ptr::from_ref(adev).cast_mut().cast::<c_void>();
        // SAFETY: `raw` points to a live `struct auxiliary_device` (type invariant of
        // `auxiliary::Device`); the shim checks that its parent is bound to mlx5_core before it
        // reads the enclosing `struct mlx5_adev`.
        let mdev = unsafe { rdma_rs_mlx5_adev_mdev(raw) };
        let mdev = NonNull::new(mdev).ok_or(ENODEV)?;
        let dev: &'a device::Device<device::Bound> = adev.as_ref();
        // INVARIANT: `mdev` belongs to `adev`, which is bound for `'a`.
        Ok(Self {
            mdev,
            name: dev.name(),
            _adev: PhantomData,
        })
    }

    /// The auxiliary device's name, for log lines.
    pub(crate) fn name(&self) -> &'a CStr {
        self.name
    }

    /// `mlx5_cmd_do()`: `Ok`, `EREMOTEIO` with the status and syndrome in `outbox`, or another
    /// errno when the command was not completed.
    ///
    /// # Errors
    ///
    /// As above; `EINVAL` for a buffer longer than `c_int` can describe.
    pub(crate) fn cmd_do(&self, inbox: &[u8], outbox: &mut [u8]) -> Result {
        let in_size = c_int::try_from(inbox.len()).map_err(|_| EINVAL)?;
        let out_size = c_int::try_from(outbox.len()).map_err(|_| EINVAL)?;
        // SAFETY: `self.mdev` is live (type invariant); `inbox` and `outbox` are valid for their
        // lengths for the duration of the call, which only reads `inbox` and writes at most
        // `out_size` bytes of `outbox`; mlx5_cmd_do() sleeps, and we are in process context.
        let r = unsafe {
            rdma_rs_mlx5_cmd_do(
                self.mdev.as_ptr(),
                inbox.as_ptr().cast(),
                in_size,
                outbox.as_mut_ptr().cast(),
                out_size,
            )
        };
        kernel::error::to_result(r)
    }

    /// `mdev->caps.hca[cap_type]->cur`: the current capability page mlx5_core cached.
    pub(crate) fn caps_cur(&self, cap_type: u32) -> Option<&'a [u8]> {
        let t = c_int::try_from(cap_type).ok()?;
        let mut len = 0usize;
        // SAFETY: `self.mdev` is live (type invariant); the shim range-checks `t`.
        let p = unsafe { rdma_rs_mlx5_caps_cur(self.mdev.as_ptr(), t, &mut len) };
        if p.is_null() {
            return None;
        }
        // SAFETY: `p` is the `cur` array of a `struct mlx5_hca_cap`, `len` bytes long, owned by
        // the `mlx5_core_dev` that outlives `'a` (type invariant). mlx5_core rewrites it only
        // while no RDMA auxiliary device exists (devlink reload and firmware reset delete them
        // first), so it does not change while borrowed.
        Some(unsafe { core::slice::from_raw_parts(p.cast::<u8>(), len) })
    }

    /// The physical address of UAR `index`'s system page in BAR 0 (upstream
    /// `uar_index2paddress()`): what a user mapping of that UAR points at.
    pub(crate) fn uar_paddr(&self, index: u32) -> u64 {
        // SAFETY: `self.mdev` is live (type invariant); the shim only reads `mdev->bar_addr`
        // and the cached general capabilities.
        unsafe { rdma_rs_mlx5_uar_paddr(self.mdev.as_ptr(), index) }
    }

    /// `mlx5_wc_support_get()`: whether write-combining mappings of UAR pages work (mlx5_core
    /// tests it once and caches the answer).
    pub(crate) fn wc_supported(&self) -> bool {
        // SAFETY: `self.mdev` is live (type invariant); mlx5_wc_support_get() may sleep, and
        // callers are in process context.
        unsafe { rdma_rs_mlx5_wc_support(self.mdev.as_ptr()) }
    }

    /// PCI ids and firmware revision (the board id comes from QUERY_ADAPTER, as upstream's
    /// `mlx5_query_board_id()` reads it).
    pub(crate) fn ident(&self) -> CoreIdent {
        let mut raw = RawIdent {
            pci_vendor: 0,
            pci_device: 0,
            pci_revision: 0,
            fw_maj: 0,
            fw_min: 0,
            fw_sub: 0,
        };
        // SAFETY: `self.mdev` is live (type invariant); `raw` is a valid `rdma_rs_mlx5_ident`.
        unsafe { rdma_rs_mlx5_ident(self.mdev.as_ptr(), &mut raw) };
        CoreIdent {
            pci_vendor: raw.pci_vendor,
            pci_device: raw.pci_device,
            pci_revision: raw.pci_revision,
            fw_rev: (raw.fw_maj, raw.fw_min, raw.fw_sub),
        }
    }
}
