// SPDX-License-Identifier: GPL-2.0

//! Bus translations stored at create time: what CREATE_CQ, CREATE_QP and CREATE_MKEY hand the
//! data path.
//!
//! A ConnectX keeps a queue's `pas[]` and an mkey's MTT in ICM and walks them per access. The
//! model cannot allocate, so a translation is compressed when the object is created: pages
//! whose bus addresses follow each other merge into one [`Run`], and at most [`MAX_RUNS`] runs
//! are kept per object. More is refused with `NO_RES_ERR` and `TRANSLATION_FRAGMENTED`. The
//! kernel backend's simulated IOMMU maps every buffer to one contiguous bus range, so one run
//! is the normal case; host tests use a few to exercise the run boundaries.
//!
//! Only the pages that cover the object are read (a CQ's or QP's buffer size follows from its
//! context, an MTT mkey's from `start_addr` and `len`); entries a short inbox does not carry
//! leave the tail untranslated, which the engine treats like unmapped memory (a DMA fault).

use super::dma::DmaMem;
use crate::prm::consts::{MKC_ACCESS_MODE_MEMIC, MKC_ACCESS_MODE_MTT, MKC_ACCESS_MODE_PA};
use crate::prm::ctx::mkc;
use core::ops::Range;

/// Runs kept per object.
pub(crate) const MAX_RUNS: usize = 8;

/// One stretch of bus-contiguous memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Run {
    /// Bus address of the first byte.
    pub(crate) bus: u64,
    /// Length in bytes.
    pub(crate) len: u64,
}

/// A translation from an object offset (0 = the first byte of the first page) to bus
/// addresses: up to [`MAX_RUNS`] runs laid end to end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Xlat {
    runs: [Run; MAX_RUNS],
    n: u8,
}

/// More than [`MAX_RUNS`] runs would be needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fragmented;

impl Xlat {
    /// No memory at all.
    pub(crate) const EMPTY: Xlat = Xlat {
        runs: [Run { bus: 0, len: 0 }; MAX_RUNS],
        n: 0,
    };

    /// Builds a translation from up to `count` big-endian 64-bit page addresses at byte
    /// `first` of `inbox` (a `pas[]` or MTT array), each mapping `page_size` bytes. Entries past
    /// the end of the inbox are not there (the tail stays untranslated); the low bits below
    /// the page size (MTT flag bits) are ignored.
    pub(crate) fn from_pages(
        inbox: &[u8],
        first: usize,
        count: u64,
        page_size: u64,
    ) -> Result<Xlat, Fragmented> {
        let mut x = Xlat::EMPTY;
        if page_size == 0 || !page_size.is_power_of_two() {
            return Ok(x);
        }
        let mut i = 0u64;
        while i < count {
            let Some(addr) = usize::try_from(i)
                .ok()
                .and_then(|i| i.checked_mul(8))
                .and_then(|o| o.checked_add(first))
                .and_then(|o| inbox.get(o..o.checked_add(8)?))
            else {
                break;
            };
            let mut b = [0u8; 8];
            b.copy_from_slice(addr);
            x.push(u64::from_be_bytes(b) & !(page_size - 1), page_size)?;
            i += 1;
        }
        Ok(x)
    }

    /// Appends the page of `page_size` bytes an MTT entry `mtt` names (its low bits, upstream's
    /// read and write flags, are not part of the address).
    pub(crate) fn push_page(&mut self, mtt: u64, page_size: u64) -> Result<(), Fragmented> {
        self.push(mtt & !(page_size - 1), page_size)
    }

    /// Appends `len` bytes at `bus`, merging with the last run when contiguous.
    fn push(&mut self, bus: u64, len: u64) -> Result<(), Fragmented> {
        let n = usize::from(self.n);
        if let Some(last) = n.checked_sub(1).and_then(|i| self.runs.get_mut(i)) {
            if last.bus.checked_add(last.len) == Some(bus) {
                last.len = last.len.saturating_add(len);
                return Ok(());
            }
        }
        let slot = self.runs.get_mut(n).ok_or(Fragmented)?;
        *slot = Run { bus, len };
        self.n = self.n.saturating_add(1);
        Ok(())
    }

    /// `len` bytes of this translation from object offset `off`, as a translation of their
    /// own (a queue inside a DEVX umem). Bytes past the translated range are left out (the
    /// tail stays untranslated, as for a short `pas[]`).
    pub(crate) fn slice(&self, off: u64, len: u64) -> Result<Xlat, Fragmented> {
        let mut x = Xlat::EMPTY;
        let (mut at, mut left) = (off, len);
        while left > 0 {
            let Some((bus, n)) = self.at(at) else {
                break;
            };
            let take = n.min(left);
            x.push(bus, take)?;
            at = at.saturating_add(take);
            left -= take;
        }
        Ok(x)
    }

    /// Appends the `len` bytes at `va` of mkey `m` (an entry of an indirect mkey's layout,
    /// `engine/umr.rs`). `Err` when a byte does not translate or more than [`MAX_RUNS`] runs
    /// would be needed.
    pub(crate) fn append(&mut self, m: &MkeyInfo, va: u64, len: u64) -> Result<(), Fragmented> {
        let (mut at, mut left) = (va, len);
        while left > 0 {
            let (bus, n) = m.translate(at).ok_or(Fragmented)?;
            let take = n.min(left);
            self.push(bus, take)?;
            at = at.checked_add(take).ok_or(Fragmented)?;
            left -= take;
        }
        Ok(())
    }

    /// The runs.
    pub(crate) fn runs(&self) -> &[Run] {
        self.runs.get(..usize::from(self.n)).unwrap_or(&[])
    }

    /// Bytes translated.
    pub(crate) fn len(&self) -> u64 {
        self.runs()
            .iter()
            .fold(0u64, |a, r| a.saturating_add(r.len))
    }

    /// The bus address of object offset `off`, and how many bytes are contiguous from there
    /// (at least 1), or `None` past the translated range.
    pub(crate) fn at(&self, off: u64) -> Option<(u64, u64)> {
        let mut base = 0u64;
        for r in self.runs() {
            let end = base.checked_add(r.len)?;
            if off < end {
                let into = off - base;
                return Some((r.bus.checked_add(into)?, r.len - into));
            }
            base = end;
        }
        None
    }

    /// Reads `buf.len()` bytes at object offset `at`; false on a missing translation or a
    /// DMA fault.
    pub(crate) fn read(&self, mem: &dyn DmaMem, at: u64, buf: &mut [u8]) -> bool {
        let len = buf.len();
        self.for_each_piece(at, len, |bus, r| {
            buf.get_mut(r)
                .is_some_and(|piece| mem.read(bus, piece).is_ok())
        })
    }

    /// Writes `data` at object offset `at`, split where the runs split. False on a missing
    /// translation or a DMA fault (a fault may leave a prefix written).
    pub(crate) fn write(&self, mem: &dyn DmaMem, at: u64, data: &[u8]) -> bool {
        self.for_each_piece(at, data.len(), |bus, r| {
            data.get(r)
                .is_some_and(|piece| mem.write(bus, piece).is_ok())
        })
    }

    /// Walks `len` bytes at object offset `at`, one physically contiguous piece at a time:
    /// `f(bus, range)` gets each piece's bus address and its range in `0..len`. False on a
    /// missing translation or when `f` fails (the pieces before it were done).
    fn for_each_piece(
        &self,
        at: u64,
        len: usize,
        mut f: impl FnMut(u64, Range<usize>) -> bool,
    ) -> bool {
        let mut done = 0usize;
        while done < len {
            let Some(off) = u64::try_from(done).ok().and_then(|d| at.checked_add(d)) else {
                return false;
            };
            let Some((bus, contig)) = self.at(off) else {
                return false;
            };
            let n = usize::try_from(contig)
                .unwrap_or(usize::MAX)
                .min(len - done);
            if !f(bus, done..done + n) {
                return false;
            }
            done += n;
        }
        true
    }
}

/// Access rights of an mkey (`mkc.lr/lw/rr/rw/a`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Access(pub(crate) u8);

impl Access {
    /// Local read.
    pub(crate) const LOCAL_READ: Access = Access(1 << 0);
    /// Local write.
    pub(crate) const LOCAL_WRITE: Access = Access(1 << 1);
    /// Remote read.
    pub(crate) const REMOTE_READ: Access = Access(1 << 2);
    /// Remote write.
    pub(crate) const REMOTE_WRITE: Access = Access(1 << 3);
    /// Remote atomic.
    pub(crate) const ATOMIC: Access = Access(1 << 4);

    /// True when every right of `need` is granted.
    pub(crate) fn allows(self, need: Access) -> bool {
        self.0 & need.0 == need.0
    }
}

/// How an mkey maps its addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MkeyMap {
    /// `access_mode` PA: addresses are bus addresses; `None` = `length64` (the whole space).
    Pa {
        /// `start_addr`.
        start: u64,
        /// `len`, or `None` for `length64`.
        len: Option<u64>,
    },
    /// `access_mode` MTT: `[start, start + len)` through the page list.
    Mtt {
        /// `start_addr` (the iova).
        start: u64,
        /// `len`.
        len: u64,
        /// `start_addr` rounded down to the MTT page size: object offset 0 of `xlat`.
        base: u64,
        /// The compressed page list.
        xlat: Xlat,
    },
    /// `access_mode` MEMIC (a DM MR, upstream `mlx5_ib_reg_dm_mr()`): zero-based, addresses
    /// `[0, len)` are the on-chip memory from `bus` on ([`super::dma::DEV_MEM_BUS`] plus the
    /// `start_addr` offset into the MEMIC window).
    Memic {
        /// The device bus address of the first byte.
        bus: u64,
        /// `len`.
        len: u64,
    },
    /// KLM/KSM as CREATE_MKEY made it: translates nothing (a UMR WQE gives such a key a
    /// layout: [`Indirect`]).
    Indirect,
}

/// What the data path needs of an mkey.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MkeyInfo {
    /// The translation.
    pub(crate) map: MkeyMap,
    /// Access rights.
    pub(crate) access: Access,
    /// `mkey_7_0`: the low byte a key must carry.
    pub(crate) key_byte: u8,
}

impl MkeyInfo {
    /// Decodes a stored `mkc` plus the translation entries at byte `mtt` of the inbox.
    pub(crate) fn parse(ctx: &[u8], inbox: &[u8], mtt: usize) -> Result<MkeyInfo, Fragmented> {
        let g = |f: crate::prm::layout::Member<mkc::Bits>| f.get(ctx).unwrap_or(0);
        let g64 = |f: crate::prm::layout::Member<mkc::Bits>| f.get64(ctx).unwrap_or(0);
        let mut access = 0u8;
        for (f, bit) in [
            (mkc::lr, Access::LOCAL_READ),
            (mkc::lw, Access::LOCAL_WRITE),
            (mkc::rr, Access::REMOTE_READ),
            (mkc::rw, Access::REMOTE_WRITE),
            (mkc::a, Access::ATOMIC),
        ] {
            if g(f) != 0 {
                access |= bit.0;
            }
        }
        let mode = (g(mkc::access_mode_4_2) << 2) | g(mkc::access_mode_1_0);
        let start = g64(mkc::start_addr);
        let len = g64(mkc::len);
        let map = match mode {
            MKC_ACCESS_MODE_PA => MkeyMap::Pa {
                start,
                len: if g(mkc::length64) != 0 {
                    None
                } else {
                    Some(len)
                },
            },
            MKC_ACCESS_MODE_MTT => {
                let shift = g(mkc::log_page_size);
                let page = if (12..=40).contains(&shift) {
                    1u64 << shift
                } else {
                    0
                };
                let (base, count) = match page {
                    0 => (start, 0),
                    p => {
                        let base = start & !(p - 1);
                        let span = (start - base).saturating_add(len);
                        (base, span.div_ceil(p))
                    }
                };
                MkeyMap::Mtt {
                    start,
                    len,
                    base,
                    xlat: Xlat::from_pages(inbox, mtt, count, page)?,
                }
            }
            // CREATE_MKEY checked the range (`objects.rs`); outside it nothing translates.
            MKC_ACCESS_MODE_MEMIC => match super::memic::Memic::bus(start, len) {
                Some(bus) => MkeyMap::Memic { bus, len },
                None => MkeyMap::Indirect,
            },
            _ => MkeyMap::Indirect,
        };
        Ok(MkeyInfo {
            map,
            access: Access(access),
            key_byte: u8::try_from(g(mkc::mkey_7_0)).unwrap_or(0),
        })
    }

    /// The bus address of `va` and the bytes contiguous from there (at least 1). The caller
    /// checks the range with [`MkeyInfo::covers`] first; `None` when no translation exists.
    pub(crate) fn translate(&self, va: u64) -> Option<(u64, u64)> {
        match self.map {
            MkeyMap::Pa { .. } => Some((va, (u64::MAX - va).max(1))),
            MkeyMap::Mtt { base, xlat, .. } => xlat.at(va.checked_sub(base)?),
            MkeyMap::Memic { bus, len } => (va < len).then_some((bus.checked_add(va)?, len - va)),
            MkeyMap::Indirect => None,
        }
    }

    /// True when `[va, va + len)` is inside the mkey's range (the translation may still be
    /// missing for entries a short inbox did not carry: that is a DMA fault later).
    pub(crate) fn covers(&self, va: u64, len: u64) -> bool {
        let Some(end) = va.checked_add(len) else {
            return false;
        };
        match self.map {
            MkeyMap::Pa { len: None, .. } => true,
            MkeyMap::Pa {
                start,
                len: Some(l),
            }
            | MkeyMap::Mtt { start, len: l, .. } => {
                va >= start && start.checked_add(l).is_some_and(|e| end <= e)
            }
            MkeyMap::Memic { len: l, .. } => end <= l,
            MkeyMap::Indirect => false,
        }
    }
}

/// QPN of a window bound to no QP (a type 1 window; `mkc.qpn` 0xffffff).
pub(crate) const NO_QPN: u32 = 0x00ff_ffff;

/// A memory window's state (an mkey created free, with `umr_en` and the KLM access mode, as
/// upstream `mlx5_ib_alloc_mw()` makes it). Binding and invalidation are UMR WQEs
/// (`engine/umr.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    /// `en_rinval`: a SEND with invalidate may free it (type 2).
    pub(crate) remote_inval: bool,
    /// `None` while free.
    pub(crate) bound: Option<Binding>,
    /// The layout a UMR WQE gave the mkey as an indirect key (`mlx5dv_wr_mr_list()`,
    /// `mlx5dv_wr_mr_interleaved()`); `None` while free or bound as a window.
    pub(crate) indirect: Option<Indirect>,
}

/// The mkeys an indirect mkey's layout (KLM list or repeated block) names. The layout itself
/// is resolved when the UMR WQE executes into the mkey's own [`MkeyInfo`] (zero-based,
/// `[0, len)`); each use checks that these keys still live with the keys the layout named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Indirect {
    /// The distinct keys the entries name.
    keys: [u32; MAX_RUNS],
    /// How many of `keys` are used.
    n: u8,
}

impl Indirect {
    /// The keys the entries name.
    pub(crate) fn keys(&self) -> &[u32] {
        self.keys.get(..usize::from(self.n)).unwrap_or(&[])
    }

    /// Notes that an entry names `key`; `Err` past [`MAX_RUNS`] distinct keys.
    pub(crate) fn add_key(&mut self, key: u32) -> Result<(), Fragmented> {
        if self.keys().contains(&key) {
            return Ok(());
        }
        let slot = self.keys.get_mut(usize::from(self.n)).ok_or(Fragmented)?;
        *slot = key;
        self.n += 1;
        Ok(())
    }
}

/// What a bind WQE set (`mlx5_wqe_mkey_context_seg` and its one KLM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Binding {
    /// The MR's key (`klm.mkey`); the window works while that mkey lives with this key.
    pub(crate) mr_key: u32,
    /// `start_addr` (= `klm.address`: zero-based windows are not modeled).
    pub(crate) start: u64,
    /// `len`.
    pub(crate) len: u64,
    /// The window's rights.
    pub(crate) access: Access,
    /// The QP a type 2 window is bound to ([`NO_QPN`] for type 1).
    pub(crate) qpn: u32,
}

impl MkeyInfo {
    /// The view of a bound window over its MR `mr`: the MR's translation, limited to the
    /// window's range and rights.
    pub(crate) fn window(&self, b: &Binding, key_byte: u8) -> MkeyInfo {
        let map = match self.map {
            MkeyMap::Pa { .. } => MkeyMap::Pa {
                start: b.start,
                len: Some(b.len),
            },
            MkeyMap::Mtt { base, xlat, .. } => MkeyMap::Mtt {
                start: b.start,
                len: b.len,
                base,
                xlat,
            },
            // Windows over a DM MR are not modeled: such a window translates nothing.
            MkeyMap::Memic { .. } | MkeyMap::Indirect => MkeyMap::Indirect,
        };
        MkeyInfo {
            map,
            access: b.access,
            key_byte,
        }
    }
}

/// `MKC_ACCESS_MODE_MTT` is 1 and PA 0 in every PRM revision the model knows.
const _: () = assert!(MKC_ACCESS_MODE_PA == 0 && MKC_ACCESS_MODE_MTT == 1);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_its_range_of_the_mr() {
        let b = pages(&[0x10000, 0x11000]);
        let mr = MkeyInfo {
            map: MkeyMap::Mtt {
                start: 0x4000_0100,
                len: 0x1f00,
                base: 0x4000_0000,
                xlat: Xlat::from_pages(&b, 0, 2, 4096).unwrap(),
            },
            access: Access(0x1f),
            key_byte: 7,
        };
        let bind = Binding {
            mr_key: 0x107,
            start: 0x4000_0800,
            len: 0x1000,
            access: Access::REMOTE_READ,
            qpn: NO_QPN,
        };
        let w = mr.window(&bind, 9);
        assert!(w.covers(0x4000_0800, 0x1000));
        assert!(!w.covers(0x4000_07ff, 2));
        assert!(!w.covers(0x4000_1000, 0x801));
        assert_eq!(w.translate(0x4000_1000), Some((0x11000, 0x1000)));
        assert!(w.access.allows(Access::REMOTE_READ));
        assert!(!w.access.allows(Access::REMOTE_WRITE));
        assert_eq!(w.key_byte, 9);
    }

    fn pages(addrs: &[u64]) -> std::vec::Vec<u8> {
        addrs.iter().flat_map(|a| a.to_be_bytes()).collect()
    }

    #[test]
    fn contiguous_pages_merge_and_fragmentation_is_refused() {
        let b = pages(&[0x1000, 0x2000, 0x3000, 0x9000, 0xa000]);
        let x = Xlat::from_pages(&b, 0, 5, 4096).unwrap();
        assert_eq!(
            x.runs(),
            &[
                Run {
                    bus: 0x1000,
                    len: 0x3000
                },
                Run {
                    bus: 0x9000,
                    len: 0x2000
                }
            ]
        );
        assert_eq!(x.at(0x2fff), Some((0x3fff, 1)));
        assert_eq!(x.at(0x3000), Some((0x9000, 0x2000)));
        assert_eq!(x.at(0x5000), None);
        // Only the entries present are read.
        assert_eq!(Xlat::from_pages(&b, 0, 100, 4096).unwrap().len(), 0x5000);
        let frag: std::vec::Vec<u64> = (0..9).map(|i| i * 0x2000).collect();
        assert_eq!(Xlat::from_pages(&pages(&frag), 0, 9, 4096), Err(Fragmented));
        assert!(Xlat::from_pages(&pages(&frag), 0, 8, 4096).is_ok());
    }
}
