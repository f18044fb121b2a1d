// SPDX-License-Identifier: GPL-2.0

//! The buffers of the data path's queues: a CQ (`cqe.rs`), an SRQ or XRC SRQ (`srq.rs`,
//! `xrc.rs`), the RQ and SQ of a QP (`engine/qp_state.rs`). An EQ (`hca.rs`) keeps its own page
//! list but walks its EQEs as a [`Ring`] too.
//!
//! Each queue has one [`Buf`]: the translation of the pages its `pas[]` lists (or of a DEVX
//! umem range), the offset of its first byte in that translation (`page_offset`, in 64ths of
//! a page) and the bus address of its doorbell record. In the buffer lie one or two [`Ring`]s
//! of `2^log` entries of `2^shift` bytes (a QP's RQ, then its SQ right after it); entry `i` of
//! a ring is entry `i mod 2^log`, and `(i >> log) & 1` is the pass over the ring it is in
//! (the owner bit of a CQE or EQE). The counters that walk a ring are the queue's own: their
//! widths and meaning differ (24-bit CQ producer, 16-bit WQE counters, an SRQ's linked list).

use super::dma::DmaMem;
use super::xlat::{Fragmented, Xlat};
use crate::prm::layout::Member;

/// Where a queue's entries and its doorbell record are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Buf {
    /// The buffer's translation.
    pub(crate) xlat: Xlat,
    /// Offset of the buffer's first byte in the translation (`page_offset`).
    pub(crate) off: u64,
    /// Bus address of the doorbell record.
    pub(crate) dbr: u64,
}

impl Buf {
    /// A buffer of `bytes` bytes in pages of `4096 << log_page_size` bytes, their addresses
    /// in the `pas[]` at byte `pas` of `inbox`; its first byte is `page_offset` 64ths of a
    /// page into the first page (the `log_page_size` and `page_offset` of a `cqc`, `qpc`,
    /// `wq` or `xrc_srqc`). Only the pages the buffer reaches are translated.
    pub(crate) fn from_pas(
        inbox: &[u8],
        pas: usize,
        log_page_size: u32,
        page_offset: u32,
        bytes: u64,
        dbr: u64,
    ) -> Result<Buf, Fragmented> {
        let page = 4096u64.checked_shl(log_page_size).unwrap_or(0);
        let off = u64::from(page_offset).saturating_mul(page >> 6);
        let end = off.saturating_add(bytes);
        let count = if page == 0 { 0 } else { end.div_ceil(page) };
        Ok(Buf {
            xlat: Xlat::from_pages(inbox, pas, count, page)?,
            off,
            dbr,
        })
    }

    /// [`Buf::from_pas`] with the buffer's `log_page_size`, `page_offset` and `dbr_addr` as
    /// the queue context `ctx` (a `cqc`, `qpc` or `wq`) has them in the members `place`.
    pub(crate) fn from_ctx<L>(
        ctx: &[u8],
        place: [Member<L>; 3],
        inbox: &[u8],
        pas: usize,
        bytes: u64,
    ) -> Result<Buf, Fragmented> {
        let [log_page_size, page_offset, dbr_addr] = place;
        let g = |f: Member<L>| f.get(ctx).unwrap_or(0);
        let dbr = dbr_addr.get64(ctx).unwrap_or(0);
        Buf::from_pas(inbox, pas, g(log_page_size), g(page_offset), bytes, dbr)
    }

    /// The buffer now in a DEVX umem range whose translation `xlat` starts at its first byte.
    pub(crate) fn move_to(&mut self, xlat: Xlat) {
        self.xlat = xlat;
        self.off = 0;
    }

    /// Reads `buf.len()` bytes at byte `at` of the buffer; false on a missing translation or
    /// a DMA fault.
    pub(crate) fn read(&self, mem: &dyn DmaMem, at: u64, buf: &mut [u8]) -> bool {
        self.xlat.read(mem, self.off.saturating_add(at), buf)
    }

    /// Writes `data` at byte `at` of the buffer; false on a missing translation or a DMA
    /// fault (which may leave a prefix written).
    pub(crate) fn write(&self, mem: &dyn DmaMem, at: u64, data: &[u8]) -> bool {
        self.xlat.write(mem, self.off.saturating_add(at), data)
    }

    /// The big-endian word at byte `at` of the doorbell record; `None` on a DMA fault.
    pub(crate) fn db(&self, mem: &dyn DmaMem, at: u64) -> Option<u32> {
        let mut b = [0u8; 4];
        mem.read(self.dbr.wrapping_add(at), &mut b).ok()?;
        Some(u32::from_be_bytes(b))
    }
}

/// A ring of `2^log` entries of `2^shift` bytes at byte `start` of its queue's [`Buf`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ring {
    /// log2 of the number of entries.
    pub(crate) log: u8,
    /// log2 of the entry stride in bytes.
    pub(crate) shift: u8,
    /// Byte of the buffer where entry 0 is.
    pub(crate) start: u64,
}

impl Ring {
    /// A ring of `2^log` entries of `2^shift` bytes at byte `start` of its buffer.
    pub(crate) const fn new(log: u8, shift: u8, start: u64) -> Ring {
        Ring { log, shift, start }
    }

    /// The number of entries (0 when it does not fit 32 bits).
    pub(crate) fn entries(&self) -> u32 {
        1u32.checked_shl(u32::from(self.log)).unwrap_or(0)
    }

    /// The entry stride in bytes.
    pub(crate) fn stride(&self) -> usize {
        1usize
            .checked_shl(u32::from(self.shift))
            .unwrap_or(usize::MAX)
    }

    /// Bytes of all entries.
    pub(crate) fn bytes(&self) -> u64 {
        1u64.checked_shl(u32::from(self.log) + u32::from(self.shift))
            .unwrap_or(u64::MAX)
    }

    /// Byte of the buffer just past the last entry (where a ring after this one starts).
    pub(crate) fn end(&self) -> u64 {
        self.start.saturating_add(self.bytes())
    }

    /// Byte of the buffer where entry `idx` (wrapped to the ring) is.
    pub(crate) fn at(&self, idx: u32) -> u64 {
        let i = u64::from(idx & self.entries().wrapping_sub(1));
        self.start.saturating_add(i << self.shift.min(63))
    }

    /// The pass over the ring that counter value `idx` is in, modulo 2: the owner bit an
    /// entry written at `idx` carries.
    pub(crate) fn phase(&self, idx: u32) -> bool {
        idx.checked_shr(u32::from(self.log)).unwrap_or(0) & 1 != 0
    }

    /// Reads entry `idx` (its first `buf.len()` bytes) from `b`.
    pub(crate) fn read(&self, mem: &dyn DmaMem, b: &Buf, idx: u32, buf: &mut [u8]) -> bool {
        b.read(mem, self.at(idx), buf)
    }
}
