// SPDX-License-Identifier: GPL-2.0

//! Translations kept on the host side of the model: the function's own I/O address space.
//!
//! The firmware model stores at most 8 bus-contiguous runs per CQ, QP, RMP, mkey or DEVX umem
//! (it cannot allocate: the same code runs in the kernel simulator, `mlx5/fwsim/xlat.rs`). In
//! the test VM there is no IOMMU, so a buffer of pinned user pages is as many runs as it has
//! pages. The function therefore keeps the page lists itself, as a ConnectX keeps `pas[]` and
//! MTTs in ICM: when CREATE_CQ, CREATE_QP, CREATE_RMP, CREATE_MKEY (MTT), CREATE_UMEM or a
//! MODIFY_CQ resize names pages that are not one run, their guest-physical addresses are
//! stored here, a contiguous range of device addresses in a window no guest-physical address
//! reaches is allocated for them, and the command reaches the model with that range in place
//! of the page list: one run. Every access the model makes through [`Remapped`] is translated
//! back page by page. The range is released when the object is destroyed (or its create
//! failed). A resize's new range is released if the model refuses the resize; once the model
//! has switched the CQ to its new buffer (after the RESIZE CQE went into the old one), the
//! CQ's old range goes ([`DeviceMap::resized`]).
//!
//! UMR WQEs load an mkey's translation on the data path, where no command passes: upstream
//! mlx5_ib registers user MRs that way when `umr_modify_entity_size_disabled` is 0
//! (`mlx5r_umr_update_mr_pas()`). When such a translation is more runs than the model keeps,
//! the model asks its memory for a device-side alias (`fwsim/dma.rs`, `DmaMem::alias`) and
//! [`Remapped`] gives it a range here, owned by the mkey as a CREATE_MKEY's is: the mkey's
//! next translation replaces it ([`DeviceMap::alias_mkey`], [`DeviceMap::unalias_mkey`]),
//! DESTROY_MKEY and teardown release it.

use crate::mem::{GuestMemory, MemError};
use crate::prm::cmd::{create_cq_in, create_mkey_in, create_qp_in, create_rmp_in, create_umem_in};
use crate::prm::cmd::{mbox_in, modify_cq_in};
use crate::prm::consts::{CQ_OPMOD_RESIZE, MKC_ACCESS_MODE_MTT};
use crate::prm::ctx::{cqc, mkc, qpc, rmpc, umem, wq};
use crate::prm::layout::{Buf, Member, PrmLayout};
use crate::prm::opcode as op;
use std::cell::RefCell;

/// First device address of the window: above any guest-physical address.
pub const WINDOW: u64 = 1 << 62;
/// Ranges are placed on this alignment (so any page size up to it stays aligned).
const RANGE_ALIGN: u64 = 1 << 30;

/// The kind of object a range belongs to (its number space).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Cq,
    Qp,
    Rmp,
    Mkey,
    Umem,
}

/// One object's page list.
struct Range {
    base: u64,
    page: u64,
    pages: Vec<u64>,
    /// The object, once its create succeeded.
    owner: Option<(Kind, u32)>,
}

/// The page lists of the function's objects.
#[derive(Default)]
pub struct DeviceMap {
    ranges: Vec<Range>,
    next: u64,
    /// The CQ and new range of a resize the model accepted, until [`DeviceMap::resized`].
    staged: Option<(u32, u64)>,
}

/// A create or resize command rewritten: release or bind its range after the model answered.
pub(crate) struct Pending {
    base: u64,
    kind: Kind,
    /// A resize: the CQ (the command's output names no object).
    resize_of: Option<u32>,
}

impl DeviceMap {
    /// Ranges in use (tests: nothing is left after the objects are destroyed).
    pub fn ranges(&self) -> usize {
        self.ranges.len()
    }

    fn alloc(&mut self, page: u64, pages: Vec<u64>) -> Option<u64> {
        let len = page.checked_mul(pages.len() as u64)?;
        let base = WINDOW.checked_add(self.next)?;
        self.next = self
            .next
            .checked_add(len.checked_next_multiple_of(RANGE_ALIGN)?.max(RANGE_ALIGN))?;
        self.ranges.push(Range {
            base,
            page,
            pages,
            owner: None,
        });
        Some(base)
    }

    /// Rewrites the page list of a create command whose pages are not one run. `None`: the
    /// command goes to the model as it is.
    pub(crate) fn rewrite(&mut self, inbox: &mut [u8]) -> Option<Pending> {
        let opcode =
            u16::try_from(Buf::<mbox_in::Bits>::new(inbox).ok()?.get(mbox_in::opcode)).ok()?;
        let mut resize_of = None;
        let (kind, first, page, mask) = match opcode {
            op::CREATE_CQ => {
                let s = create_cq_in::cq_context.inner(cqc::log_page_size);
                (Kind::Cq, create_cq_in::SIZE_BYTES, page_of(inbox, s)?, 0)
            }
            op::MODIFY_CQ => {
                let b = Buf::<modify_cq_in::Bits>::new(inbox).ok()?;
                // Only a resize carries a page list (moderation: op_mod 0).
                if b.get(modify_cq_in::op_mod) != CQ_OPMOD_RESIZE {
                    return None;
                }
                resize_of = Some(b.get(modify_cq_in::cqn));
                let s = modify_cq_in::cq_context.inner(cqc::log_page_size);
                (Kind::Cq, modify_cq_in::SIZE_BYTES, page_of(inbox, s)?, 0)
            }
            op::CREATE_RMP => {
                let s = create_rmp_in::ctx.inner(rmpc::wq.inner(wq::log_wq_pg_sz));
                (Kind::Rmp, create_rmp_in::SIZE_BYTES, page_of(inbox, s)?, 0)
            }
            op::CREATE_QP => {
                let s = create_qp_in::qpc.inner(qpc::log_page_size);
                (Kind::Qp, create_qp_in::SIZE_BYTES, page_of(inbox, s)?, 0)
            }
            op::CREATE_MKEY => {
                let b = Buf::<create_mkey_in::Bits>::new(inbox).ok()?;
                let m = |f| b.get(create_mkey_in::memory_key_mkey_entry.inner(f));
                let mode = (m(mkc::access_mode_4_2) << 2) | m(mkc::access_mode_1_0);
                if mode != MKC_ACCESS_MODE_MTT {
                    return None;
                }
                let page = 1u64.checked_shl(m(mkc::log_page_size))?;
                // MTT entries carry flag bits below the page size (read/write enable).
                (Kind::Mkey, create_mkey_in::SIZE_BYTES, page, page - 1)
            }
            op::CREATE_UMEM => {
                let b = Buf::<create_umem_in::Bits>::new(inbox).ok()?;
                let log = b.get(create_umem_in::umem.inner(umem::log_page_size));
                let page = 4096u64.checked_shl(log).filter(|p| *p != 0)?;
                // A DEVX umem's queues and doorbell records live at offsets into it; its MTT
                // entries carry `rd_en`/`wr_en` below the page size, as an mkey's.
                (Kind::Umem, create_umem_in::SIZE_BYTES, page, page - 1)
            }
            _ => return None,
        };
        if page < 4096 {
            return None;
        }
        let entries = inbox.get(first..)?;
        let n = entries.len() / 8;
        if n < 2 {
            return None;
        }
        let addr = |i: usize| -> u64 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&entries[i * 8..i * 8 + 8]);
            u64::from_be_bytes(b)
        };
        let pages: Vec<u64> = (0..n).map(|i| addr(i) & !(page - 1)).collect();
        if pages
            .windows(2)
            .all(|w| w[0].checked_add(page) == Some(w[1]))
        {
            return None;
        }
        let flags: Vec<u64> = (0..n).map(|i| addr(i) & mask).collect();
        let base = self.alloc(page, pages)?;
        for (i, f) in flags.iter().enumerate() {
            let a = (base + i as u64 * page) | f;
            inbox[first + i * 8..first + i * 8 + 8].copy_from_slice(&a.to_be_bytes());
        }
        Some(Pending {
            base,
            kind,
            resize_of,
        })
    }

    /// After the model answered a rewritten command: binds the range to the object (on
    /// success: `number` from the create's output, the resized CQ) or releases it. A resize's
    /// range is staged until [`DeviceMap::resized`].
    pub(crate) fn settle(&mut self, p: Pending, ok: bool, number: Option<u32>) {
        let Some(i) = self.ranges.iter().position(|r| r.base == p.base) else {
            return;
        };
        match (ok, p.resize_of.or(number)) {
            (true, Some(n)) => {
                self.ranges[i].owner = Some((p.kind, n));
                if p.resize_of.is_some() {
                    self.staged = Some((n, p.base));
                }
            }
            _ => {
                self.ranges.swap_remove(i);
            }
        }
    }

    /// A resize of CQ `cqn` the model accepted has switched the CQ to its new buffer: every
    /// range of the CQ but the new one (if the new buffer needed one) goes.
    pub(crate) fn resized(&mut self, cqn: u32) {
        let keep = match self.staged.take() {
            Some((n, base)) if n == cqn => Some(base),
            _ => None,
        };
        self.ranges
            .retain(|r| r.owner != Some((Kind::Cq, cqn)) || Some(r.base) == keep);
    }

    /// A destroy command the model accepted: the object's range goes.
    pub(crate) fn destroyed(&mut self, opcode: u16, number: u32) {
        let kind = match opcode {
            op::DESTROY_CQ => Kind::Cq,
            op::DESTROY_QP => Kind::Qp,
            op::DESTROY_RMP => Kind::Rmp,
            op::DESTROY_MKEY => Kind::Mkey,
            op::DESTROY_UMEM => Kind::Umem,
            _ => return,
        };
        self.ranges.retain(|r| r.owner != Some((kind, number)));
    }

    /// A UMR's translation of mkey index `index` as one range of `pages` (guest addresses of
    /// `page` bytes each), in place of the ranges the mkey had; its first device address.
    /// `None` (the mkey keeps its ranges): the window is used up.
    pub(crate) fn alias_mkey(&mut self, index: u32, page: u64, pages: Vec<u64>) -> Option<u64> {
        if page < 4096 || !page.is_power_of_two() || pages.is_empty() {
            return None;
        }
        let base = self.alloc(page, pages)?;
        self.unalias_mkey(index);
        if let Some(r) = self.ranges.iter_mut().find(|r| r.base == base) {
            r.owner = Some((Kind::Mkey, index));
        }
        Some(base)
    }

    /// Mkey index `index`'s ranges go (a UMR gave it a translation of few enough runs).
    pub(crate) fn unalias_mkey(&mut self, index: u32) {
        self.ranges.retain(|r| r.owner != Some((Kind::Mkey, index)));
    }

    /// Every range goes (the firmware lost its objects: teardown).
    pub(crate) fn clear(&mut self) {
        self.ranges.clear();
        self.staged = None;
    }

    /// The guest-physical address of device address `a` and how many bytes follow in the
    /// same page.
    fn translate(&self, a: u64) -> Option<(u64, u64)> {
        let r = self
            .ranges
            .iter()
            .find(|r| a >= r.base && a - r.base < r.page * r.pages.len() as u64)?;
        let off = a - r.base;
        let idx = usize::try_from(off / r.page).ok()?;
        let into = off % r.page;
        Some((r.pages.get(idx)? + into, r.page - into))
    }
}

/// Guest memory as the model sees it: guest-physical addresses below [`WINDOW`], the
/// function's own ranges above.
pub(crate) struct Remapped<'a> {
    pub(crate) mem: &'a dyn GuestMemory,
    pub(crate) map: &'a RefCell<DeviceMap>,
}

impl Remapped<'_> {
    /// Calls `f(guest address, offset in the buffer, length)` for each page piece of
    /// `[addr, addr + len)`.
    fn each(
        &self,
        addr: u64,
        len: usize,
        mut f: impl FnMut(u64, usize, usize) -> Result<(), MemError>,
    ) -> Result<(), MemError> {
        let mut done = 0usize;
        while done < len {
            let a = addr.checked_add(done as u64).ok_or(MemError { addr })?;
            let found = self.map.borrow().translate(a);
            let (g, room) = found.ok_or(MemError { addr: a })?;
            let n = usize::try_from(room).unwrap_or(usize::MAX).min(len - done);
            f(g, done, n)?;
            done += n;
        }
        Ok(())
    }
}

impl GuestMemory for Remapped<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemError> {
        if addr < WINDOW {
            return self.mem.read(addr, buf);
        }
        let len = buf.len();
        self.each(addr, len, |g, off, n| {
            self.mem.read(g, &mut buf[off..off + n])
        })
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        if addr < WINDOW {
            return self.mem.write(addr, data);
        }
        // Checked first, so that a refused write writes nothing.
        self.each(addr, data.len(), |_, _, _| Ok(()))?;
        self.each(addr, data.len(), |g, off, n| {
            self.mem.write(g, &data[off..off + n])
        })
    }

    fn alias(&self, owner: u32, page: u64, pages: Vec<u64>) -> Option<u64> {
        self.map.borrow_mut().alias_mkey(owner, page, pages)
    }

    fn unalias(&self, owner: u32) {
        self.map.borrow_mut().unalias_mkey(owner);
    }
}

/// `4096 << log_page_size` of a CQ or QP context, read through the create command's layout `L`.
fn page_of<L: PrmLayout>(inbox: &[u8], log_page_size: Member<L>) -> Option<u64> {
    4096u64.checked_shl(Buf::<L>::new(inbox).ok()?.get(log_page_size))
}
