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
//! Byte order: the device's structures (WQEs, CQEs, doorbell records) are big-endian bytes
//! and the engine encodes them itself. The 64-bit atomics operate on host-endian (little-endian)
//! values, what ConnectX does with `atomic_req_8B_endianness_mode` = 1 (host endianness), which
//! mlx5_core sets when the device offers it.

/// The bus address at which the device reaches its own on-chip memory (MEMIC,
/// `fwsim/memic.rs`): byte `x` of the MEMIC window is `DEV_MEM_BUS + x`. An mkey of access mode
/// MEMIC translates there; a backend with device memory maps it at this address (the kernel's
/// simulated IOMMU does, alongside what the driver mapped). Far above any IOVA handed out.
pub(crate) const DEV_MEM_BUS: u64 = 0x8000_0000_0000_0000;

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
}
