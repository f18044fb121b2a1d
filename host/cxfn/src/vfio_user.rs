// SPDX-License-Identifier: GPL-2.0

//! The vfio-user protocol, server side, written from QEMU's protocol specification
//! (`docs/interop/vfio-user.rst`): message framing and the commands QEMU's `vfio-user-pci`
//! client sends to a PCI device, answered by a [`CxFunction`]. Pure message handling: the
//! caller reads a message (and the file descriptors that came with it) from the socket and
//! writes the reply back ([`Session::handle`]); socket I/O and `SCM_RIGHTS` live in the
//! server binary.
//!
//! Guest memory arrives as DMA_MAP regions with a file descriptor (the VM's memfd); the device
//! reaches it with positioned reads and writes on that file (no `mmap`, so no `unsafe`).
//! Interrupts go to the eventfds of SET_IRQS (MSI-X index): writing an 8-byte counter
//! increment signals the vector; QEMU emulates the MSI-X table itself, so the function runs in
//! [`MsixMode::External`].
//!
//! All data is little-endian (the spec: host endianness; x86 only here).

use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;

use crate::function::{CxFunction, MsixMode};
use crate::mem::{GuestMemory, MemError};
use crate::regs;

/// Header bytes.
pub const HDR: usize = 16;
/// Largest message accepted (REGION_WRITE of `MAX_XFER` plus headers).
pub const MAX_MSG: usize = MAX_XFER + 64;
/// `max_data_xfer_size` this server announces.
pub const MAX_XFER: usize = 1 << 20;
/// Most file descriptors in one message (`max_msg_fds`).
pub const MAX_FDS: usize = 8;

/// Commands (the spec's "Commands" table).
pub mod cmd {
    /// `VFIO_USER_VERSION`.
    pub const VERSION: u16 = 1;
    /// `VFIO_USER_DMA_MAP`.
    pub const DMA_MAP: u16 = 2;
    /// `VFIO_USER_DMA_UNMAP`.
    pub const DMA_UNMAP: u16 = 3;
    /// `VFIO_USER_DEVICE_GET_INFO`.
    pub const DEVICE_GET_INFO: u16 = 4;
    /// `VFIO_USER_DEVICE_GET_REGION_INFO`.
    pub const DEVICE_GET_REGION_INFO: u16 = 5;
    /// `VFIO_USER_DEVICE_GET_IRQ_INFO`.
    pub const DEVICE_GET_IRQ_INFO: u16 = 7;
    /// `VFIO_USER_DEVICE_SET_IRQS`.
    pub const DEVICE_SET_IRQS: u16 = 8;
    /// `VFIO_USER_REGION_READ`.
    pub const REGION_READ: u16 = 9;
    /// `VFIO_USER_REGION_WRITE`.
    pub const REGION_WRITE: u16 = 10;
    /// `VFIO_USER_DEVICE_RESET`.
    pub const DEVICE_RESET: u16 = 13;
}

/// Header flag bits.
const FLAG_REPLY: u32 = 0x1;
const FLAG_NO_REPLY: u32 = 0x10;
const FLAG_ERROR: u32 = 0x20;

/// VFIO region indices of a PCI device (`VFIO_PCI_*_REGION_INDEX`): BARs 0..=5, ROM, config,
/// VGA.
pub const REGION_BAR0: u32 = 0;
/// `VFIO_PCI_CONFIG_REGION_INDEX`.
pub const REGION_CONFIG: u32 = 7;
const NUM_REGIONS: u32 = 9;
/// VFIO IRQ indices (`VFIO_PCI_*_IRQ_INDEX`): INTx, MSI, MSI-X, ERR, REQ.
pub const IRQ_MSIX: u32 = 2;
const NUM_IRQS: u32 = 5;

/// `VFIO_DEVICE_FLAGS_RESET | VFIO_DEVICE_FLAGS_PCI`.
const DEVICE_FLAGS: u32 = 0x1 | 0x2;
/// `VFIO_REGION_INFO_FLAG_READ | _WRITE`.
const REGION_RW: u32 = 0x1 | 0x2;
/// `VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_NORESIZE`.
const IRQ_INFO_FLAGS: u32 = 0x1 | 0x8;
/// SET_IRQS data types and actions (`VFIO_IRQ_SET_*`).
const SET_DATA_NONE: u32 = 0x1;
const SET_DATA_BOOL: u32 = 0x2;
const SET_DATA_EVENTFD: u32 = 0x4;
const SET_ACTION_TRIGGER: u32 = 0x20;

/// errno values of error replies.
const EINVAL: u32 = 22;
const ENOSYS: u32 = 38;
const EEXIST: u32 = 17;
const ENOENT: u32 = 2;

/// A message header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Message ID (echoed in the reply).
    pub id: u16,
    /// Command.
    pub command: u16,
    /// Size of the whole message, header included.
    pub size: u32,
    /// Flags.
    pub flags: u32,
    /// errno of an error reply.
    pub error: u32,
}

fn le16(b: &[u8], o: usize) -> u16 {
    b.get(o..o + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}

fn le32(b: &[u8], o: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(o..o + 4) {
        a.copy_from_slice(s);
    }
    u32::from_le_bytes(a)
}

fn le64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(o..o + 8) {
        a.copy_from_slice(s);
    }
    u64::from_le_bytes(a)
}

impl Header {
    /// Parses the first 16 bytes.
    pub fn parse(b: &[u8]) -> Option<Header> {
        if b.len() < HDR {
            return None;
        }
        Some(Header {
            id: le16(b, 0),
            command: le16(b, 2),
            size: le32(b, 4),
            flags: le32(b, 8),
            error: le32(b, 12),
        })
    }

    /// The 16 bytes.
    pub fn bytes(&self) -> [u8; HDR] {
        let mut b = [0u8; HDR];
        b[0..2].copy_from_slice(&self.id.to_le_bytes());
        b[2..4].copy_from_slice(&self.command.to_le_bytes());
        b[4..8].copy_from_slice(&self.size.to_le_bytes());
        b[8..12].copy_from_slice(&self.flags.to_le_bytes());
        b[12..16].copy_from_slice(&self.error.to_le_bytes());
        b
    }
}

/// One DMA_MAP region.
struct DmaRegion {
    addr: u64,
    size: u64,
    offset: u64,
    writable: bool,
    file: Option<File>,
}

/// Guest memory as the DMA_MAP regions describe it.
#[derive(Default)]
pub struct DmaTable {
    regions: Vec<DmaRegion>,
}

impl DmaTable {
    fn find(&self, addr: u64, len: usize) -> Option<(&DmaRegion, u64)> {
        let end = addr.checked_add(len as u64)?;
        self.regions.iter().find_map(|r| {
            (addr >= r.addr && end <= r.addr + r.size).then(|| (r, r.offset + (addr - r.addr)))
        })
    }
}

impl GuestMemory for DmaTable {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemError> {
        let (r, off) = self.find(addr, buf.len()).ok_or(MemError { addr })?;
        let f = r.file.as_ref().ok_or(MemError { addr })?;
        f.read_exact_at(buf, off).map_err(|_| MemError { addr })
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        match self.find(addr, data.len()) {
            Some((
                DmaRegion {
                    file: Some(f),
                    writable: true,
                    ..
                },
                off,
            )) => f.write_all_at(data, off).map_err(|_| MemError { addr }),
            _ => Err(MemError { addr }),
        }
    }
}

/// A reply to send (possibly none, for `No_reply` commands).
pub struct Reply {
    /// The whole message, header included.
    pub bytes: Vec<u8>,
}

/// One client connection serving one function.
pub struct Session {
    dev: CxFunction,
    dma: DmaTable,
    msix: Vec<Option<File>>,
    negotiated: bool,
    /// Interrupts signalled, for logs and tests.
    pub irqs_signalled: u64,
}

impl Session {
    /// A session for `dev`; MSI-X goes to the client's eventfds.
    pub fn new(mut dev: CxFunction) -> Self {
        dev.set_msix_mode(MsixMode::External);
        Session {
            dev,
            dma: DmaTable::default(),
            msix: (0..regs::MSIX_VECTORS).map(|_| None).collect(),
            negotiated: false,
            irqs_signalled: 0,
        }
    }

    /// The function.
    pub fn device(&self) -> &CxFunction {
        &self.dev
    }

    /// Runs the function's data path over guest memory (a retry deadline or the periodic
    /// look at the doorbell records came due) and signals the interrupts it raised.
    pub fn poll_datapath(&mut self) {
        self.dev.poll_datapath(&self.dma);
        self.flush_irqs();
    }

    /// How long the transport may wait for a message before calling
    /// [`Session::poll_datapath`]; `None`: indefinitely.
    pub fn datapath_timeout(&self) -> Option<std::time::Duration> {
        self.dev.datapath_timeout()
    }

    /// Handles one message with the descriptors that came with it. Malformed input gets an
    /// error reply (EINVAL), never a panic. `None`: no reply wanted.
    pub fn handle(&mut self, msg: &[u8], fds: Vec<OwnedFd>) -> Option<Reply> {
        let h = Header::parse(msg)?;
        let body = msg
            .get(HDR..(h.size as usize).min(msg.len()))
            .unwrap_or(&[]);
        let result = if !self.negotiated && h.command != cmd::VERSION {
            Err(EINVAL)
        } else {
            self.dispatch(h.command, body, fds)
        };
        self.flush_irqs();
        if h.flags & FLAG_NO_REPLY != 0 && result.is_ok() {
            return None;
        }
        let (payload, flags, error) = match result {
            Ok(p) => (p, FLAG_REPLY, 0),
            Err(e) => (Vec::new(), FLAG_REPLY | FLAG_ERROR, e),
        };
        let reply = Header {
            id: h.id,
            command: h.command,
            size: (HDR + payload.len()) as u32,
            flags,
            error,
        };
        let mut bytes = reply.bytes().to_vec();
        bytes.extend_from_slice(&payload);
        Some(Reply { bytes })
    }

    fn dispatch(&mut self, command: u16, b: &[u8], fds: Vec<OwnedFd>) -> Result<Vec<u8>, u32> {
        match command {
            cmd::VERSION => self.version(b),
            cmd::DMA_MAP => self.dma_map(b, fds),
            cmd::DMA_UNMAP => self.dma_unmap(b),
            cmd::DEVICE_GET_INFO => {
                let mut r = Vec::with_capacity(16);
                r.extend_from_slice(&16u32.to_le_bytes());
                r.extend_from_slice(&DEVICE_FLAGS.to_le_bytes());
                r.extend_from_slice(&NUM_REGIONS.to_le_bytes());
                r.extend_from_slice(&NUM_IRQS.to_le_bytes());
                Ok(r)
            }
            cmd::DEVICE_GET_REGION_INFO => self.region_info(b),
            cmd::DEVICE_GET_IRQ_INFO => {
                let index = le32(b, 8);
                if b.len() < 16 || index >= NUM_IRQS {
                    return Err(EINVAL);
                }
                let count = if index == IRQ_MSIX {
                    u32::from(regs::MSIX_VECTORS)
                } else {
                    0
                };
                let mut r = Vec::with_capacity(16);
                r.extend_from_slice(&16u32.to_le_bytes());
                r.extend_from_slice(&IRQ_INFO_FLAGS.to_le_bytes());
                r.extend_from_slice(&index.to_le_bytes());
                r.extend_from_slice(&count.to_le_bytes());
                Ok(r)
            }
            cmd::DEVICE_SET_IRQS => self.set_irqs(b, fds),
            cmd::REGION_READ => self.region_read(b),
            cmd::REGION_WRITE => self.region_write(b),
            cmd::DEVICE_RESET => Ok(Vec::new()),
            _ => Err(ENOSYS),
        }
    }

    /// VERSION: the client's major, minor capped at 0, our capabilities.
    fn version(&mut self, b: &[u8]) -> Result<Vec<u8>, u32> {
        if b.len() < 4 {
            return Err(EINVAL);
        }
        let major = le16(b, 0);
        if major != 0 {
            return Err(EINVAL);
        }
        self.negotiated = true;
        let mut r = Vec::new();
        r.extend_from_slice(&0u16.to_le_bytes());
        // Minor 0: the base protocol, no optional commands (REGION_WRITE_MULTI, migration).
        r.extend_from_slice(&0u16.to_le_bytes());
        let caps = format!(
            "{{\"capabilities\":{{\"max_msg_fds\":{MAX_FDS},\"max_data_xfer_size\":{MAX_XFER},\"pgsizes\":4096}}}}"
        );
        r.extend_from_slice(caps.as_bytes());
        r.push(0);
        Ok(r)
    }

    fn dma_map(&mut self, b: &[u8], fds: Vec<OwnedFd>) -> Result<Vec<u8>, u32> {
        if b.len() < 32 {
            return Err(EINVAL);
        }
        let flags = le32(b, 4);
        let (offset, addr, size) = (le64(b, 8), le64(b, 16), le64(b, 24));
        if size == 0 || addr.checked_add(size).is_none() {
            return Err(EINVAL);
        }
        if self
            .dma
            .regions
            .iter()
            .any(|r| addr < r.addr + r.size && r.addr < addr + size)
        {
            return Err(EEXIST);
        }
        // Without a descriptor the region (not guest RAM: QEMU maps ROMs and MMIO windows too)
        // would be reached by DMA_READ/WRITE messages, which this server does not send: it is
        // recorded, and device accesses to it fail like unmapped memory.
        self.dma.regions.push(DmaRegion {
            addr,
            size,
            offset,
            writable: flags & 0x2 != 0,
            file: fds.into_iter().next().map(File::from),
        });
        Ok(Vec::new())
    }

    fn dma_unmap(&mut self, b: &[u8]) -> Result<Vec<u8>, u32> {
        if b.len() < 24 {
            return Err(EINVAL);
        }
        let (addr, size) = (le64(b, 8), le64(b, 16));
        let Some(i) = self
            .dma
            .regions
            .iter()
            .position(|r| r.addr == addr && r.size == size)
        else {
            return Err(ENOENT);
        };
        self.dma.regions.remove(i);
        Ok(b.get(..24).unwrap_or(&[]).to_vec())
    }

    fn region_info(&mut self, b: &[u8]) -> Result<Vec<u8>, u32> {
        if b.len() < 32 {
            return Err(EINVAL);
        }
        let index = le32(b, 8);
        let (flags, size) = match index {
            REGION_BAR0 => (REGION_RW, regs::BAR0_SIZE),
            REGION_CONFIG => (REGION_RW, crate::config::SIZE as u64),
            i if i < NUM_REGIONS => (0, 0),
            _ => return Err(EINVAL),
        };
        let mut r = Vec::with_capacity(32);
        r.extend_from_slice(&32u32.to_le_bytes());
        r.extend_from_slice(&flags.to_le_bytes());
        r.extend_from_slice(&index.to_le_bytes());
        r.extend_from_slice(&0u32.to_le_bytes());
        r.extend_from_slice(&size.to_le_bytes());
        r.extend_from_slice(&0u64.to_le_bytes());
        Ok(r)
    }

    fn set_irqs(&mut self, b: &[u8], fds: Vec<OwnedFd>) -> Result<Vec<u8>, u32> {
        if b.len() < 20 {
            return Err(EINVAL);
        }
        let (flags, index, start, count) = (le32(b, 4), le32(b, 8), le32(b, 12), le32(b, 16));
        if index != IRQ_MSIX {
            // INTx/MSI/ERR/REQ: nothing to signal; accept "disable" requests.
            return if count == 0 || flags & SET_DATA_NONE != 0 {
                Ok(Vec::new())
            } else {
                Err(EINVAL)
            };
        }
        let end = start.checked_add(count).ok_or(EINVAL)?;
        if end > u32::from(regs::MSIX_VECTORS) || flags & SET_ACTION_TRIGGER == 0 {
            return Err(EINVAL);
        }
        if flags & SET_DATA_EVENTFD != 0 {
            if count == 0 {
                // Disable all.
                self.msix.iter_mut().for_each(|s| *s = None);
                return Ok(Vec::new());
            }
            if fds.is_empty() {
                // No descriptors for `count` vectors: QEMU enables MSI-X with vector 0's
                // eventfd set to -1 (VFIO's "de-assign"), which cannot travel by SCM_RIGHTS;
                // those vectors have no eventfd from now on.
                for v in start..end {
                    self.msix[v as usize] = None;
                }
                return Ok(Vec::new());
            }
            if fds.len() != count as usize {
                return Err(EINVAL);
            }
            for (v, fd) in (start..end).zip(fds) {
                self.msix[v as usize] = Some(File::from(fd));
            }
            return Ok(Vec::new());
        }
        if flags & (SET_DATA_NONE | SET_DATA_BOOL) != 0 {
            // A trigger from the client: signal those vectors.
            for v in start..end {
                self.signal(v as u16);
            }
            return Ok(Vec::new());
        }
        Err(EINVAL)
    }

    fn region_read(&mut self, b: &[u8]) -> Result<Vec<u8>, u32> {
        if b.len() < 16 {
            return Err(EINVAL);
        }
        let (offset, region, count) = (le64(b, 0), le32(b, 8), le32(b, 12) as usize);
        if count > MAX_XFER {
            return Err(EINVAL);
        }
        let mut data = vec![0u8; count];
        match region {
            REGION_BAR0 => self.dev.bar0_read(offset, &mut data),
            REGION_CONFIG => {
                let off = usize::try_from(offset).map_err(|_| EINVAL)?;
                self.dev.config_read(off, &mut data)
            }
            _ => return Err(EINVAL),
        }
        let mut r = b.get(..16).unwrap_or(&[]).to_vec();
        r.extend_from_slice(&data);
        Ok(r)
    }

    fn region_write(&mut self, b: &[u8]) -> Result<Vec<u8>, u32> {
        if b.len() < 16 {
            return Err(EINVAL);
        }
        let (offset, region, count) = (le64(b, 0), le32(b, 8), le32(b, 12) as usize);
        let data = b.get(16..16 + count).ok_or(EINVAL)?;
        match region {
            REGION_BAR0 => self.dev.bar0_write(&self.dma, offset, data),
            REGION_CONFIG => {
                let off = usize::try_from(offset).map_err(|_| EINVAL)?;
                self.dev.config_write(off, data)
            }
            _ => return Err(EINVAL),
        }
        Ok(b.get(..16).unwrap_or(&[]).to_vec())
    }

    fn signal(&mut self, v: u16) {
        if let Some(Some(f)) = self.msix.get_mut(usize::from(v)) {
            if f.write_all(&1u64.to_le_bytes()).is_ok() {
                self.irqs_signalled += 1;
            }
        }
    }

    fn flush_irqs(&mut self) {
        for v in self.dev.take_interrupts() {
            self.signal(v);
        }
    }
}
