// SPDX-License-Identifier: GPL-2.0

//! Completion queues on the data path: CQE encoding (`struct mlx5_cqe64`,
//! include/linux/mlx5/device.h; rdma-core's `mlx5dv.h`), the producer index and ownership
//! bit, overrun, and arming (`cqc` doorbell record semantics of the PRM).
//!
//! A CQ of `2^log` entries: CQE `i` lives at `(i & (2^log - 1)) * stride` (stride 64 or 128; a
//! 128-byte CQE holds the CQE64 in its second half) and is valid for the consumer when the
//! low bit of `op_own` equals `(i >> log) & 1`. The body is written first and `op_own` last,
//! as a separate write. Before each CQE the consumer index (doorbell record + 0, 24 bits) is
//! read: a producer that would get more than `2^log` entries ahead overruns the CQ, which
//! raises `CQ_ERROR` and drops this and every later CQE, unless the CQ was created with
//! `cqc.oi` (overrun ignore), where the producer writes on over unread entries.

use super::dma::DmaMem;
use super::ring::{Buf, Ring};
use super::xlat::Fragmented;
use crate::prm::ctx::cqc;
use crate::prm::layout::Member;
use crate::prm::wqe::{cqe_off as off, cqe_op as op};

/// A CQE64 being built (everything but the owner bit).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cqe {
    /// The 64 bytes; `op_own` holds the opcode in its high nibble.
    pub(crate) b: [u8; 64],
}

impl Cqe {
    /// An empty CQE with `opcode`, `sop_drop_qpn`, `wqe_counter` and `srqn_uidx` set.
    pub(crate) fn new(opcode: u8, wqe_opcode: u8, qpn: u32, wqe_counter: u16, uidx: u32) -> Self {
        let mut c = Cqe { b: [0; 64] };
        c.put32(
            off::SOP_DROP_QPN,
            (u32::from(wqe_opcode) << 24) | (qpn & 0x00ff_ffff),
        );
        c.put16(off::WQE_COUNTER, wqe_counter);
        c.put32(off::SRQN_UIDX, uidx & 0x00ff_ffff);
        if let Some(b) = c.b.get_mut(off::OP_OWN) {
            *b = opcode << 4;
        }
        c
    }

    /// An error CQE (`struct mlx5_err_cqe`).
    pub(crate) fn error(
        req: bool,
        syndrome: u8,
        wqe_opcode: u8,
        qpn: u32,
        wqe_counter: u16,
        uidx: u32,
    ) -> Self {
        let opcode = if req { op::REQ_ERR } else { op::RESP_ERR };
        let mut c = Cqe::new(opcode, wqe_opcode, qpn, wqe_counter, uidx);
        if let Some(b) = c.b.get_mut(off::SYNDROME) {
            *b = syndrome;
        }
        c
    }

    /// Stores a big-endian u32 at `at`.
    pub(crate) fn put32(&mut self, at: usize, v: u32) {
        if let Some(d) = self.b.get_mut(at..at + 4) {
            d.copy_from_slice(&v.to_be_bytes());
        }
    }

    /// Stores a big-endian u16 at `at`.
    pub(crate) fn put16(&mut self, at: usize, v: u16) {
        if let Some(d) = self.b.get_mut(at..at + 2) {
            d.copy_from_slice(&v.to_be_bytes());
        }
    }

    /// Stores raw bytes at `at` (the immediate, which travels as the WQE carried it).
    pub(crate) fn put(&mut self, at: usize, v: &[u8]) {
        if let Some(d) = self.b.get_mut(at..at + v.len()) {
            d.copy_from_slice(v);
        }
    }

    /// The CQE opcode.
    pub(crate) fn opcode(&self) -> u8 {
        self.b.get(off::OP_OWN).map_or(0, |b| b >> 4)
    }
}

/// A pending arm request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arm {
    /// `sn` of the request (2 bits).
    pub(crate) sn: u8,
    /// Solicited only (`MLX5_CQ_DB_REQ_NOT_SOL`).
    pub(crate) solicited: bool,
}

/// What the data path keeps of a CQ.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CqState {
    /// The buffer; its doorbell record has the consumer index at +0, the arm at +4.
    pub(crate) buf: Buf,
    /// The CQEs: 64 or 128 bytes each (a 128-byte CQE has the CQE64 at offset 64).
    pub(crate) ring: Ring,
    /// Producer counter (CQEs written).
    pub(crate) pi: u32,
    /// The armed request, if any.
    pub(crate) armed: Option<Arm>,
    /// `sn` of the arm that fired last: an arm with the same `sn` is stale and ignored.
    pub(crate) fired_sn: Option<u8>,
    /// The arm record value last acted on (records are the truth: a change is an arm).
    pub(crate) last_arm: u32,
    /// Producer counter just after the last solicited or error CQE.
    pub(crate) last_sol: Option<u32>,
    /// Overrun (or unwritable buffer): CQEs are dropped.
    pub(crate) failed: bool,
    /// `cqc.oi` (overrun ignore): no overrun check, the producer overwrites entries the
    /// consumer has not read (what `IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN` asks for).
    pub(crate) oi: bool,
}

/// `MLX5_CQ_DB_REQ_NOT_SOL` in the arm word.
const ARM_SOLICITED: u32 = 1 << 24;

impl CqState {
    /// Decodes a `cqc` plus the `pas[]` at byte `pas` of the inbox.
    pub(crate) fn parse(ctx: &[u8], inbox: &[u8], pas: usize) -> Result<CqState, Fragmented> {
        let g = |f: Member<cqc::Bits>| f.get(ctx).unwrap_or(0);
        let log_size = u8::try_from(g(cqc::log_cq_size)).unwrap_or(0);
        let shift = if g(cqc::cqe_sz) == 1 { 7 } else { 6 };
        let ring = Ring::new(log_size, shift, 0);
        let place = [cqc::log_page_size, cqc::page_offset, cqc::dbr_addr];
        let buf = Buf::from_ctx(ctx, place, inbox, pas, ring.bytes())?;
        Ok(CqState {
            buf,
            ring,
            pi: 0,
            armed: None,
            fired_sn: None,
            last_arm: 0,
            last_sol: None,
            failed: false,
            oi: g(cqc::oi) != 0,
        })
    }

    /// The CQEs written and not yet consumed (the producer counter minus the doorbell record's
    /// consumer index); `None` if the record cannot be read.
    pub(crate) fn held(&self, mem: &dyn DmaMem) -> Option<u32> {
        let mut ci = [0u8; 4];
        mem.read(self.buf.dbr, &mut ci).ok()?;
        Some(self.ahead(u32::from_be_bytes(ci) & 0x00ff_ffff, self.pi))
    }

    /// Bytes of the CQ buffer (all entries, from the first).
    pub(crate) fn buf_bytes(&self) -> u64 {
        self.ring.bytes()
    }

    /// 128-byte CQEs.
    pub(crate) fn cqe128(&self) -> bool {
        self.ring.shift == 7
    }

    /// The entries between `ci` and the producer, in the 24-bit space of the counters.
    fn ahead(&self, ci: u32, of: u32) -> u32 {
        of.wrapping_sub(ci) & 0x00ff_ffff
    }

    /// Writes `cqe` (whose `op_own` carries the opcode) as the next entry. Returns what the
    /// caller must raise: `Some(true)` a completion event (the arm fired), `Some(false)` a CQ
    /// error, `None` nothing.
    pub(crate) fn push(&mut self, mem: &dyn DmaMem, cqe: &Cqe, solicited: bool) -> Option<bool> {
        if self.failed {
            return None;
        }
        if self.put(mem, cqe).is_err() {
            self.failed = true;
            return Some(false);
        }
        let error = matches!(cqe.opcode(), op::REQ_ERR | op::RESP_ERR);
        if solicited || error {
            self.last_sol = Some(self.pi);
        }
        match self.armed {
            Some(a) if !a.solicited || solicited || error => {
                self.fire(a);
                Some(true)
            }
            _ => None,
        }
    }

    /// Writes the next entry (overrun check, body, then `op_own`) and advances the producer.
    fn put(&mut self, mem: &dyn DmaMem, cqe: &Cqe) -> Result<(), ()> {
        let mut ci = [0u8; 4];
        mem.read(self.buf.dbr, &mut ci).map_err(|_| ())?;
        let ci = u32::from_be_bytes(ci) & 0x00ff_ffff;
        let size = self.ring.entries();
        if size == 0 || (!self.oi && self.ahead(ci, self.pi) >= size) {
            return Err(());
        }
        let at = self
            .ring
            .at(self.pi)
            .saturating_add(if self.cqe128() { 64 } else { 0 });
        let owner = u8::from(self.ring.phase(self.pi));
        let op_own = (cqe.opcode() << 4) | owner;
        // The body first, then `op_own` on its own, last.
        let body_ok = self
            .buf
            .write(mem, at, cqe.b.get(..off::OP_OWN).unwrap_or(&[]));
        if !body_ok || !self.buf.write(mem, at + 63, &[op_own]) {
            return Err(());
        }
        self.pi = self.pi.wrapping_add(1);
        Ok(())
    }

    /// Completes a resize (MODIFY_CQ op_mod 1): the RESIZE CQE goes into the old buffer at the
    /// producer index, then the new buffer and size take over with the producer counting on
    /// (libmlx5's `mlx5_cq_resize_copy_cqes()` copies the old entries up to the RESIZE CQE to
    /// the new buffer, one index further on). False if the RESIZE CQE could not be written
    /// (the CQ is in error then).
    pub(crate) fn resize(&mut self, mem: &dyn DmaMem, new: &CqState) -> bool {
        let ok = !self.failed && self.put(mem, &Cqe::new(op::RESIZE_CQ, 0, 0, 0, 0)).is_ok();
        // The doorbell record stays.
        self.buf.xlat = new.buf.xlat;
        self.buf.off = new.buf.off;
        self.ring = new.ring;
        if !ok {
            self.failed = true;
        }
        ok
    }

    fn fire(&mut self, a: Arm) {
        self.armed = None;
        self.fired_sn = Some(a.sn);
    }

    /// An arm request (`sn << 28 | cmd << 24 | ci`). Returns true when it fires at once: its
    /// `ci` is behind the producer (for a solicited arm: behind a solicited or error CQE).
    pub(crate) fn arm(&mut self, value: u32) -> bool {
        self.last_arm = value;
        let sn = u8::try_from((value >> 28) & 3).unwrap_or(0);
        if self.fired_sn == Some(sn) {
            // The request that already fired, seen again.
            return false;
        }
        let a = Arm {
            sn,
            solicited: value & ARM_SOLICITED != 0,
        };
        let ci = value & 0x00ff_ffff;
        let size = self.ring.entries();
        let behind = if a.solicited {
            self.last_sol
                .is_some_and(|s| (1..=size).contains(&self.ahead(ci, s)))
        } else {
            (1..=size).contains(&self.ahead(ci, self.pi))
        };
        if behind {
            self.fire(a);
            return true;
        }
        self.armed = Some(a);
        false
    }

    /// Reads the arm record and treats a changed value as an arm request; true when it fired.
    pub(crate) fn poll_arm(&mut self, mem: &dyn DmaMem) -> bool {
        self.buf
            .db(mem, 4)
            .is_some_and(|v| v != self.last_arm && self.arm(v))
    }
}
