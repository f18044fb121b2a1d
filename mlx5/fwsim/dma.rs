// SPDX-License-Identifier: GPL-2.0

//! The simulator's view of memory: bus addresses only.
//!
//! The data-path engine reaches memory exclusively through [`DmaMem`], the way a ConnectX
//! reaches host memory through PCIe (and an IOMMU): queue buffers, doorbell records, MTT-
//! translated MR pages and CQE buffers are named by the bus addresses the driver programmed
//! into `pas[]`, `dbr_addr` and MTTs. The kernel backend implements it over a simulated IOMMU
//! (only what the driver mapped is reachable), host tests over fake memory, and the emulated
//! PCI function over guest-physical memory. An address that was not mapped is a
//! [`DmaFault`]: the engine turns it into an error CQE (or drops the access for a doorbell
//! read), never into a stray access.
//!
//! A backend whose bus gives a buffer of pinned user pages as many runs as pages (the emulated
//! PCI function: no IOMMU in its VM) may offer a device-side alias ([`DmaMem::alias`]): the
//! pages of a UMR-loaded translation mapped at one contiguous bus range the backend translates
//! itself, as a ConnectX keeps MTTs in its ICM. The engine asks for it only when a translation
//! exceeds [`crate::fwsim::xlat::MAX_RUNS`] runs; the kernel's simulated IOMMU has none (it
//! maps a buffer as one run already).
//!
//! Byte order: the device's structures (WQEs, CQEs, doorbell records) are big-endian bytes
//! and the engine encodes them itself. The 64-bit atomics operate on host-endian (little-endian)
//! values, what ConnectX does with `atomic_req_8B_endianness_mode` = 1 (host endianness), which
//! mlx5_core sets when the device offers it.

/// The bus address at which the device reaches its own on-chip memory (MEMIC,
/// `fwsim/memic.rs`): byte `x` of the MEMIC window is `DEV_MEM_BUS + x`. An mkey of access mode
/// MEMIC translates there; a backend with device memory maps it at this address (the kernel's
/// simulated IOMMU does, alongside what the driver mapped). Far above any IOVA handed out.
pub(crate) const DEV_MEM_BUS: u64 = 0x8000_0000_0000_0000;

/// What [`DmaMem::alias`] calls to get a translation's pages: hands each page's bus address
/// to its sink in order; false if it could not read them all.
pub(crate) type PageFill<'a> = dyn FnMut(&mut dyn FnMut(u64)) -> bool + 'a;

/// An access to a bus address the device was not given (or not given for writing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DmaFault {
    /// The first faulting bus address.
    pub(crate) addr: u64,
}

/// Memory as one function's device sees it.
///
/// Implementations must be safe against any address and length: the engine passes values that
/// came from WQEs and doorbell records written by untrusted user space.
pub(crate) trait DmaMem {
    /// Copies `buf.len()` bytes at bus address `addr` into `buf`.
    ///
    /// # Errors
    ///
    /// [`DmaFault`] if any byte of the range is not mapped; `buf` is then unspecified.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault>;

    /// Copies `data` to bus address `addr`.
    ///
    /// # Errors
    ///
    /// [`DmaFault`] if any byte of the range is not mapped writable; nothing is written then.
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault>;

    /// Atomically compares the host-endian 64-bit value at the 8-byte aligned `addr` with
    /// `compare` and stores `swap` if equal. Returns the value found.
    ///
    /// # Errors
    ///
    /// [`DmaFault`] if `addr` is unaligned or not mapped writable.
    fn cmp_swap64(&self, addr: u64, compare: u64, swap: u64) -> Result<u64, DmaFault>;

    /// Atomically adds `add` to the host-endian 64-bit value at the 8-byte aligned `addr`.
    /// Returns the value before the addition.
    ///
    /// # Errors
    ///
    /// [`DmaFault`] if `addr` is unaligned or not mapped writable.
    fn fetch_add64(&self, addr: u64, add: u64) -> Result<u64, DmaFault>;

    /// Maps the pages `fill` hands out (low bits below `page` ignored) at one contiguous bus
    /// range of `page`-byte pages, owned by mkey index `owner` in place of any range it owned;
    /// returns the range's first bus address. `None`: no alias (the default, a backend without
    /// one; or `fill` failed; the old range is kept then).
    fn alias(&self, _owner: u32, _page: u64, _fill: &mut PageFill<'_>) -> Option<u64> {
        None
    }

    /// Releases the range mkey index `owner` got from [`DmaMem::alias`], if any: its
    /// translation was replaced by one that needs none.
    fn unalias(&self, _owner: u32) {}
}
