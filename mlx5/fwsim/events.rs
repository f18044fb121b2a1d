// SPDX-License-Identifier: GPL-2.0

//! Events the data path raises, queued without allocation until the kernel side takes them
//! with [`super::Fw::next_event`].
//!
//! On hardware these are EQEs written into the EQ a CQ names (`cqc.c_eqn`) or the async EQ
//! (upstream `mlx5_eq_comp_int()`, `mlx5_eq_async_int()`, `core/eq.c`). Here every CQ and QP
//! slot has a set of pending bits and appears at most once in a ring of slot numbers whose
//! capacity is the number of slots, so an event can never be lost: raising an event that is
//! already pending merges with it (one completion event per arm is all the PRM promises
//! anyway), and the ring cannot overflow.

use super::capacity;
pub(crate) use crate::prm::event::{QpEvent, QueueEvent as Event, SrqEvent};

impl QpEvent {
    const ALL: [QpEvent; 7] = [
        QpEvent::CommEst,
        QpEvent::SqDrained,
        QpEvent::WqCatas,
        QpEvent::WqInvalReq,
        QpEvent::WqAccess,
        QpEvent::LastWqeReached,
        QpEvent::DctDrained,
    ];

    /// The pending bit of this kind.
    fn bit(self) -> u8 {
        match self {
            QpEvent::CommEst => 1 << 0,
            QpEvent::SqDrained => 1 << 1,
            QpEvent::WqCatas => 1 << 2,
            QpEvent::WqInvalReq => 1 << 3,
            QpEvent::WqAccess => 1 << 4,
            QpEvent::LastWqeReached => 1 << 5,
            QpEvent::DctDrained => 1 << 6,
        }
    }
}

impl SrqEvent {
    fn bit(self) -> u8 {
        match self {
            SrqEvent::Limit => 1 << 0,
            SrqEvent::Catas => 1 << 1,
        }
    }
}

/// CQ pending bit: a completion event.
const CQ_COMP: u8 = 1 << 0;
/// CQ pending bit: a CQ error event.
const CQ_ERR: u8 = 1 << 1;
/// Set while the slot sits in the ring (in the pending byte of CQs and QPs alike).
const QUEUED: u8 = 1 << 7;

/// Ring entries: CQ slots `0..CQ`, QP slots `CQ..CQ + QP`, SRQ slots after them.
const SLOTS: usize = capacity::CQ + capacity::QP + capacity::SRQ;
/// First ring entry of the SRQ slots.
const SRQ0: usize = capacity::CQ + capacity::QP;

/// The event queue.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EventQueue {
    /// Pending bits per slot (CQs first, then QPs), plus [`QUEUED`].
    pending: [u8; SLOTS],
    /// Slots with pending events, oldest first.
    ring: [u16; SLOTS],
    head: usize,
    len: usize,
}

// Ring entries are u16.
const _: () = assert!(SLOTS <= u16::MAX as usize);

impl EventQueue {
    /// No events.
    pub(crate) const fn new() -> Self {
        Self {
            pending: [0; SLOTS],
            ring: [0; SLOTS],
            head: 0,
            len: 0,
        }
    }

    /// Drops every pending event.
    pub(crate) fn clear(&mut self) {
        *self = Self::new();
    }

    fn raise(&mut self, entry: usize, bit: u8) {
        let Some(p) = self.pending.get_mut(entry) else {
            return;
        };
        *p |= bit;
        if *p & QUEUED != 0 {
            return;
        }
        *p |= QUEUED;
        // Each slot is in the ring at most once, so there is always room.
        let tail = (self.head + self.len) % SLOTS;
        if let (Some(r), Ok(e)) = (self.ring.get_mut(tail), u16::try_from(entry)) {
            *r = e;
            self.len += 1;
        }
    }

    /// Queues a completion event for CQ slot `slot`.
    pub(crate) fn cq_completion(&mut self, slot: usize) {
        if slot < capacity::CQ {
            self.raise(slot, CQ_COMP);
        }
    }

    /// Queues a CQ error event for CQ slot `slot`.
    pub(crate) fn cq_error(&mut self, slot: usize) {
        if slot < capacity::CQ {
            self.raise(slot, CQ_ERR);
        }
    }

    /// Queues a QP event for QP slot `slot`.
    pub(crate) fn qp(&mut self, slot: usize, kind: QpEvent) {
        if slot < capacity::QP {
            self.raise(capacity::CQ + slot, kind.bit());
        }
    }

    /// Queues an SRQ event for SRQ slot `slot`.
    pub(crate) fn srq(&mut self, slot: usize, kind: SrqEvent) {
        if slot < capacity::SRQ {
            self.raise(SRQ0 + slot, kind.bit());
        }
    }

    /// Forgets the pending events of SRQ slot `slot`.
    pub(crate) fn forget_srq(&mut self, slot: usize) {
        if let Some(p) = self.pending.get_mut(SRQ0 + slot) {
            *p &= QUEUED;
        }
    }

    /// Forgets the pending events of CQ slot `slot` (the CQ was destroyed). A stale ring
    /// entry stays and is skipped (or reused by the slot's next object) when reached.
    pub(crate) fn forget_cq(&mut self, slot: usize) {
        if let Some(p) = self.pending.get_mut(slot) {
            *p &= QUEUED;
        }
    }

    /// Forgets the pending events of QP slot `slot`.
    pub(crate) fn forget_qp(&mut self, slot: usize) {
        if let Some(p) = self.pending.get_mut(capacity::CQ + slot) {
            *p &= QUEUED;
        }
    }

    /// Whether no event is queued (a pass that raised none needs no delivery).
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Takes the oldest event: `(entry, event kind)` where the caller maps the slot to an
    /// object number. One event per call; a slot with more pending kinds goes to the back.
    pub(crate) fn pop(&mut self) -> Option<(usize, Popped)> {
        while self.len > 0 {
            let entry = usize::from(*self.ring.get(self.head)?);
            self.head = (self.head + 1) % SLOTS;
            self.len -= 1;
            let p = self.pending.get_mut(entry)?;
            let bits = *p & !QUEUED;
            let taken = if entry < capacity::CQ {
                if bits & CQ_ERR != 0 {
                    Some((CQ_ERR, Popped::CqError))
                } else if bits & CQ_COMP != 0 {
                    Some((CQ_COMP, Popped::Completion))
                } else {
                    None
                }
            } else if entry >= SRQ0 {
                [SrqEvent::Catas, SrqEvent::Limit]
                    .iter()
                    .find(|k| bits & k.bit() != 0)
                    .map(|k| (k.bit(), Popped::Srq(*k)))
            } else {
                QpEvent::ALL
                    .iter()
                    .find(|k| bits & k.bit() != 0)
                    .map(|k| (k.bit(), Popped::Qp(*k)))
            };
            let Some((bit, ev)) = taken else {
                *p = 0;
                continue;
            };
            *p &= !bit;
            if *p & !QUEUED != 0 {
                // Still pending: back into the ring (the slot it just left has room).
                let tail = (self.head + self.len) % SLOTS;
                if let (Some(r), Ok(e)) = (self.ring.get_mut(tail), u16::try_from(entry)) {
                    *r = e;
                    self.len += 1;
                }
            } else {
                *p = 0;
            }
            let slot = if entry < capacity::CQ {
                entry
            } else if entry < SRQ0 {
                entry - capacity::CQ
            } else {
                entry - SRQ0
            };
            return Some((slot, ev));
        }
        None
    }
}

/// What [`EventQueue::pop`] took, before the slot is mapped to a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Popped {
    /// A completion event of a CQ slot.
    Completion,
    /// A CQ error of a CQ slot.
    CqError,
    /// A QP event of a QP slot.
    Qp(QpEvent),
    /// An SRQ event of an SRQ slot.
    Srq(SrqEvent),
}
