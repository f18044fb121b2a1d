// SPDX-License-Identifier: GPL-2.0

//! Guest memory as the device reaches it (bus addresses = guest-physical addresses; there is
//! no IOMMU in the test VM).

use std::sync::Mutex;

/// An access outside the memory the device was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemError {
    /// The first guest-physical address of the refused access.
    pub addr: u64,
}

/// Guest-physical memory. Implementations must refuse (not panic on) any address and length.
pub trait GuestMemory {
    /// Copies guest memory at `addr` into `buf`.
    ///
    /// # Errors
    ///
    /// [`MemError`] if any byte is outside the guest's memory; `buf` is then unspecified.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemError>;

    /// Copies `data` to guest memory at `addr`.
    ///
    /// # Errors
    ///
    /// [`MemError`] if any byte is outside the guest's memory; nothing is written then.
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemError>;
}

/// Guest memory in a vector: `len` bytes from guest-physical address `base` (tests, and the
/// shape of one vfio-user DMA region).
pub struct VecMemory {
    base: u64,
    data: Mutex<Vec<u8>>,
}

impl VecMemory {
    /// `len` zeroed bytes at `base`.
    pub fn new(base: u64, len: usize) -> Self {
        VecMemory {
            base,
            data: Mutex::new(vec![0; len]),
        }
    }

    fn range(&self, addr: u64, len: usize, have: usize) -> Option<std::ops::Range<usize>> {
        let off = usize::try_from(addr.checked_sub(self.base)?).ok()?;
        let end = off.checked_add(len)?;
        (end <= have).then_some(off..end)
    }
}

impl GuestMemory for VecMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemError> {
        let d = self.data.lock().map_err(|_| MemError { addr })?;
        let r = self
            .range(addr, buf.len(), d.len())
            .ok_or(MemError { addr })?;
        buf.copy_from_slice(d.get(r).ok_or(MemError { addr })?);
        Ok(())
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        let mut d = self.data.lock().map_err(|_| MemError { addr })?;
        let have = d.len();
        let r = self
            .range(addr, data.len(), have)
            .ok_or(MemError { addr })?;
        d.get_mut(r).ok_or(MemError { addr })?.copy_from_slice(data);
        Ok(())
    }
}

/// [`GuestMemory`] as the firmware model's `DmaMem`.
pub(crate) struct Dma<'a>(pub(crate) &'a dyn GuestMemory);

impl crate::fwsim::dma::DmaMem for Dma<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), crate::fwsim::dma::DmaFault> {
        self.0
            .read(addr, buf)
            .map_err(|e| crate::fwsim::dma::DmaFault { addr: e.addr })
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), crate::fwsim::dma::DmaFault> {
        self.0
            .write(addr, data)
            .map_err(|e| crate::fwsim::dma::DmaFault { addr: e.addr })
    }

    // The data path's 64-bit atomics (ATOMIC_CS, ATOMIC_FA) are refused over guest memory:
    // a read-modify-write through positioned file I/O is not atomic against the guest's CPUs
    // (that needs an atomic on a shared mapping of the memfd, i.e. `mmap` and `unsafe`, which
    // this crate forbids). The engine completes such a WQE with an error CQE.
    fn cmp_swap64(&self, addr: u64, _: u64, _: u64) -> Result<u64, crate::fwsim::dma::DmaFault> {
        Err(crate::fwsim::dma::DmaFault { addr })
    }

    fn fetch_add64(&self, addr: u64, _: u64) -> Result<u64, crate::fwsim::dma::DmaFault> {
        Err(crate::fwsim::dma::DmaFault { addr })
    }
}
