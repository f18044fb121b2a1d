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

    /// The model's device-side alias of a UMR-loaded translation (`fwsim/dma.rs`,
    /// `DmaMem::alias`): `pages` (of `page` bytes, in order) at one device range owned by mkey
    /// index `owner`, replacing any range it owned; the range's first address. `None` (the
    /// default): plain guest memory keeps no ranges (`iova.rs` does).
    fn alias(&self, _owner: u32, _page: u64, _pages: Vec<u64>) -> Option<u64> {
        None
    }

    /// Releases mkey index `owner`'s alias, if any (`DmaMem::unalias`).
    fn unalias(&self, _owner: u32) {}
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

    // The data path's 64-bit atomics (ATOMIC_CS, ATOMIC_FA) as a read-modify-write of the
    // guest's memory. The function reports `IB_ATOMIC_HCA` (the atomic caps page): an atomic
    // is atomic against the other atomics of this device, not against the guest's CPUs, as
    // on a ConnectX. The server executes every WQE on its one thread, between the read and
    // the write no other access of the device can happen.
    fn cmp_swap64(
        &self,
        addr: u64,
        compare: u64,
        swap: u64,
    ) -> Result<u64, crate::fwsim::dma::DmaFault> {
        let old = self.word(addr)?;
        if old == compare {
            self.write(addr, &swap.to_ne_bytes())?;
        }
        Ok(old)
    }

    fn fetch_add64(&self, addr: u64, add: u64) -> Result<u64, crate::fwsim::dma::DmaFault> {
        let old = self.word(addr)?;
        crate::fwsim::dma::DmaMem::write(self, addr, &old.wrapping_add(add).to_ne_bytes())?;
        Ok(old)
    }

    fn alias(
        &self,
        owner: u32,
        page: u64,
        fill: &mut crate::fwsim::dma::PageFill<'_>,
    ) -> Option<u64> {
        let mut pages = Vec::new();
        if !fill(&mut |a| pages.push(a)) {
            return None;
        }
        self.0.alias(owner, page, pages)
    }

    fn unalias(&self, owner: u32) {
        self.0.unalias(owner);
    }
}

impl Dma<'_> {
    /// The host-endian 64-bit word at the 8-byte aligned `addr` (an atomic's target).
    fn word(&self, addr: u64) -> Result<u64, crate::fwsim::dma::DmaFault> {
        if addr % 8 != 0 {
            return Err(crate::fwsim::dma::DmaFault { addr });
        }
        let mut b = [0u8; 8];
        crate::fwsim::dma::DmaMem::read(self, addr, &mut b)?;
        Ok(u64::from_ne_bytes(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fwsim::dma::DmaMem;

    #[test]
    fn atomics_over_guest_memory() {
        let m = VecMemory::new(0x1000, 4096);
        m.write(0x1008, &40u64.to_ne_bytes()).unwrap();
        let d = Dma(&m);
        assert_eq!(d.fetch_add64(0x1008, 2), Ok(40));
        assert_eq!(d.cmp_swap64(0x1008, 41, 7), Ok(42));
        assert_eq!(d.cmp_swap64(0x1008, 42, 7), Ok(42));
        let mut b = [0u8; 8];
        m.read(0x1008, &mut b).unwrap();
        assert_eq!(u64::from_ne_bytes(b), 7);
        // Unaligned, or outside the guest's memory: a DMA fault, nothing written.
        assert!(d.fetch_add64(0x100c, 1).is_err());
        assert!(d.cmp_swap64(0x3000, 0, 1).is_err());
        m.read(0x1008, &mut b).unwrap();
        assert_eq!(u64::from_ne_bytes(b), 7);
    }
}
