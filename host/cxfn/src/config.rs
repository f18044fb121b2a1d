// SPDX-License-Identifier: GPL-2.0

//! PCI configuration space of the function: a type 0 header with the Mellanox ids, BAR 0
//! (64-bit, prefetchable, [`regs::BAR0_SIZE`]), an MSI-X capability whose table and PBA live in
//! BAR 0, and a PCI Express endpoint capability (mlx5_core prints the link with
//! `pcie_print_link_status()`). Little-endian, as PCI is. Writes change only the bits a real
//! function lets software change; the rest is read-only.

use crate::regs;

/// Size of the configuration space (PCI Express: 4 KiB; nothing is in the extended part).
pub const SIZE: usize = 4096;
/// Offset of the MSI-X capability.
pub const CAP_MSIX: usize = 0x40;
/// Offset of the PCI Express capability.
pub const CAP_PCIE: usize = 0x50;

/// MSI-X message control: enable.
pub const MSIX_ENABLE: u16 = 1 << 15;
/// MSI-X message control: function mask.
pub const MSIX_MASKALL: u16 = 1 << 14;

/// The configuration space and the few writable registers behind it.
pub struct ConfigSpace {
    bytes: [u8; SIZE],
    /// BAR 0 address as programmed (bits below the size are zero).
    bar0: u64,
}

impl ConfigSpace {
    /// The space of a function with device id `device_id` and class `class` (24 bits:
    /// 0x020700 InfiniBand, 0x020000 Ethernet).
    pub fn new(device_id: u16, class: u32) -> Self {
        let mut c = ConfigSpace {
            bytes: [0; SIZE],
            bar0: 0,
        };
        c.put16(0x00, 0x15b3);
        c.put16(0x02, device_id);
        // Status: capability list.
        c.put16(0x06, 1 << 4);
        c.put32(0x08, class << 8);
        c.put16(0x2c, 0x15b3);
        c.put16(0x2e, 0x0007);
        c.bytes[0x34] = CAP_MSIX as u8;
        // MSI-X: table size N - 1, table and PBA in BAR 0.
        c.bytes[CAP_MSIX] = 0x11;
        c.bytes[CAP_MSIX + 1] = CAP_PCIE as u8;
        c.put16(CAP_MSIX + 2, regs::MSIX_VECTORS - 1);
        c.put32(CAP_MSIX + 4, regs::MSIX_TABLE as u32);
        c.put32(CAP_MSIX + 8, regs::MSIX_PBA as u32);
        // PCI Express v2 endpoint; 512-byte max payload; x16 at 16 GT/s.
        c.bytes[CAP_PCIE] = 0x10;
        c.put16(CAP_PCIE + 2, 0x0002);
        c.put32(CAP_PCIE + 4, 0x2);
        c.put32(CAP_PCIE + 0x0c, (16 << 4) | 4);
        c.put16(CAP_PCIE + 0x12, (16 << 4) | 4);
        c.put32(CAP_PCIE + 0x2c, 0x1e);
        c.render_bar();
        c
    }

    fn put16(&mut self, off: usize, v: u16) {
        if let Some(b) = self.bytes.get_mut(off..off + 2) {
            b.copy_from_slice(&v.to_le_bytes());
        }
    }

    fn put32(&mut self, off: usize, v: u32) {
        if let Some(b) = self.bytes.get_mut(off..off + 4) {
            b.copy_from_slice(&v.to_le_bytes());
        }
    }

    fn get16(&self, off: usize) -> u16 {
        let mut b = [0u8; 2];
        if let Some(s) = self.bytes.get(off..off + 2) {
            b.copy_from_slice(s);
        }
        u16::from_le_bytes(b)
    }

    fn render_bar(&mut self) {
        // Memory, 64-bit (type 2), prefetchable.
        let lo = (self.bar0 as u32 & !(regs::BAR0_SIZE as u32 - 1)) | 0xc;
        self.put32(0x10, lo);
        self.put32(0x14, (self.bar0 >> 32) as u32);
    }

    /// Reads `buf.len()` bytes at `off`; bytes past the space read as 0xff.
    pub fn read(&self, off: usize, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = off
                .checked_add(i)
                .and_then(|o| self.bytes.get(o))
                .copied()
                .unwrap_or(0xff);
        }
    }

    /// Writes `data` at `off`, byte by byte through the write masks.
    pub fn write(&mut self, off: usize, data: &[u8]) {
        let mut bar_touched = false;
        for (i, &v) in data.iter().enumerate() {
            let Some(o) = off.checked_add(i) else { return };
            match o {
                // Command: I/O, memory, bus master, SERR, INTx disable (bits 0..=2, 8, 10).
                0x04 => self.set_masked(o, v, 0x07),
                0x05 => self.set_masked(o, v, 0x05),
                // BAR 0, 64-bit: all address bits, sized below.
                0x10..=0x17 => {
                    let shift = (o - 0x10) * 8;
                    self.bar0 = (self.bar0 & !(0xffu64 << shift)) | (u64::from(v) << shift);
                    bar_touched = true;
                }
                // Interrupt line.
                0x3c => self.set_masked(o, v, 0xff),
                // MSI-X message control: enable and function mask.
                x if x == CAP_MSIX + 3 => self.set_masked(o, v, 0xc0),
                // PCIe device control and link control: writable, no effect.
                x if (CAP_PCIE + 8..CAP_PCIE + 10).contains(&x)
                    || (CAP_PCIE + 0x10..CAP_PCIE + 0x12).contains(&x) =>
                {
                    self.set_masked(o, v, 0xff)
                }
                _ => {}
            }
        }
        if bar_touched {
            self.bar0 &= !(regs::BAR0_SIZE - 1);
            self.render_bar();
        }
    }

    fn set_masked(&mut self, off: usize, v: u8, mask: u8) {
        if let Some(b) = self.bytes.get_mut(off) {
            *b = (*b & !mask) | (v & mask);
        }
    }

    /// The MSI-X message control register.
    pub fn msix_control(&self) -> u16 {
        self.get16(CAP_MSIX + 2)
    }

    /// BAR 0's programmed address.
    pub fn bar0(&self) -> u64 {
        self.bar0
    }

    /// Whether memory decoding and bus mastering are on (command bits 1 and 2).
    pub fn memory_and_master(&self) -> bool {
        self.bytes[0x04] & 0x6 == 0x6
    }
}
