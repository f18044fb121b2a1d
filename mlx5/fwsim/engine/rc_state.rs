// SPDX-License-Identifier: GPL-2.0

//! What RC in packets (`rc.rs`) keeps of a QP between packets, beside its `QpState`: the
//! requester's send window, the responder's progress, MSN, pending acknowledgement and
//! READ/atomic resources.

use crate::prm::wqe::wqe_op;

/// Responder resources (READ and atomic) kept: the device's `log_max_ra_res_qp` (4).
pub(super) const RES: usize = 16;

/// Messages a requester keeps in flight (its send window; READs and atomics also within the
/// QP's `log_sra_max`).
pub(super) const WIN: usize = 16;

/// A message in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Req {
    /// Its WQE: SQ counter, WQEBBs and opcode.
    pub(super) wqe: u16,
    pub(super) nbb: u8,
    pub(super) op: u8,
    /// Its first PSN and how many PSNs it takes (a READ: its response packets).
    pub(super) first: u32,
    pub(super) npkts: u32,
    /// Request packets sent (a READ or atomic: 0 or 1).
    pub(super) sent: u32,
    /// Packets acknowledged (a READ: responses taken).
    pub(super) acked: u32,
}

impl Req {
    /// A READ or atomic: one request packet, completed by its responses.
    pub(super) fn one(&self) -> bool {
        matches!(
            self.op,
            wqe_op::RDMA_READ | wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA
        )
    }

    /// Request packets.
    pub(super) fn reqs(&self) -> u32 {
        if self.one() {
            1
        } else {
            self.npkts
        }
    }

    /// To be sent again from its packet `k`: the packets before it arrived (a READ: the
    /// responses before it were taken; its request is rebuilt from there).
    fn rewind(&mut self, k: u32) {
        if self.one() {
            self.sent = 0;
        } else {
            self.acked = self.acked.max(k);
            self.sent = self.sent.min(k);
        }
    }
}

/// The requester's send window: the messages in flight, oldest (the WQE at the SQ consumer
/// counter) first, in PSN order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Window {
    pub(super) ent: [Req; WIN],
    pub(super) len: usize,
    /// The PSN after the last one ever sent: a packet before it is a retransmission.
    pub(super) hi: u32,
    /// The PSN the requester went back to for a response out of order (not again for the
    /// same PSN before progress).
    pub(super) back: Option<u32>,
}

impl Window {
    /// The messages in flight, oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Req> {
        self.ent.iter().take(self.len)
    }

    pub(super) fn oldest(&self) -> Option<Req> {
        self.iter().next().copied()
    }

    /// The SQ counter of the WQE after the window (`ci`: the SQ consumer counter).
    pub(super) fn next_wqe(&self, ci: u16) -> u16 {
        self.iter()
            .last()
            .map_or(ci, |e| e.wqe.wrapping_add(u16::from(e.nbb)))
    }

    /// PSNs the window spans.
    pub(super) fn span(&self) -> u32 {
        match (self.oldest(), self.iter().last()) {
            (Some(a), Some(z)) => z.first.wrapping_add(z.npkts).wrapping_sub(a.first) & 0x00ff_ffff,
            _ => 0,
        }
    }

    /// READs and atomics in flight.
    pub(super) fn reads(&self) -> usize {
        self.iter().filter(|e| e.one()).count()
    }

    pub(super) fn push(&mut self, r: Req) -> bool {
        if self.len == 0 {
            self.hi = r.first;
        }
        match self.ent.get_mut(self.len) {
            Some(e) => {
                *e = r;
                self.len += 1;
                true
            }
            None => false,
        }
    }

    /// The oldest message retired.
    pub(super) fn pop(&mut self) {
        if self.len > 0 {
            self.ent.copy_within(1..self.len, 0);
            self.len -= 1;
            self.back = None;
        }
    }

    /// Request packet `psn` (taking `n` PSNs) sent: whether it was sent before.
    pub(super) fn sent_psn(&mut self, psn: u32, n: u32) -> bool {
        let end = psn.wrapping_add(n) & 0x00ff_ffff;
        let again = self.hi.wrapping_sub(psn) & 0x00ff_ffff;
        let again = again != 0 && again < 0x0080_0000;
        if end.wrapping_sub(self.hi) & 0x00ff_ffff < 0x0080_0000 {
            self.hi = end;
        }
        again
    }

    /// Go-back-N: message `i` sent again from its packet `k`, every later one whole.
    pub(super) fn rewind(&mut self, i: usize, k: u32) {
        for (j, e) in self.ent.iter_mut().enumerate().take(self.len).skip(i) {
            e.rewind(if j == i { k } else { 0 });
        }
    }
}

/// What a responder resource is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ResKind {
    #[default]
    Free,
    Read,
    Atomic,
}

/// A responder resource: a READ to answer (or answered, kept for a duplicate), or an atomic
/// with its original value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Res {
    pub(super) kind: ResKind,
    pub(super) psn: u32,
    /// A READ's address; an atomic's original value.
    pub(super) va: u64,
    pub(super) rkey: u32,
    pub(super) len: u32,
    /// Response packets, and how many were sent.
    pub(super) pkts: u32,
    pub(super) sent: u32,
}

/// The responder's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Resp {
    /// A SEND in progress: the bytes its packets wrote.
    pub(super) send: Option<u32>,
    /// A WRITE in progress: its RETH (address, rkey, length) and the bytes written.
    pub(super) write: Option<(u64, u32, u32, u32)>,
    /// Messages completed (24 bits).
    pub(super) msn: u32,
    /// A PSN sequence error NAK was sent and the expected PSN has not come since.
    pub(super) nak_sent: bool,
    /// The acknowledgement to send: PSN and AETH syndrome.
    pub(super) ack: Option<(u32, u8)>,
    pub(super) res: [Res; RES],
    /// The slot the next resource takes (the oldest one's).
    pub(super) next: usize,
}

impl Resp {
    /// Whether a packet waits to be sent.
    pub(super) fn pending(&self) -> bool {
        self.ack.is_some() || self.res.iter().any(|r| r.sent < r.pkts)
    }

    pub(super) fn push(&mut self, r: Res) {
        if let Some(e) = self.res.get_mut(self.next) {
            *e = r;
        }
        self.next = (self.next + 1) % RES;
    }
}

/// A QP's RC transport state in packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RcWire {
    pub(super) req: Window,
    pub(super) resp: Resp,
    /// The QP's messages go on the wire: the send PSN moves as they are sent, not as they
    /// complete.
    pub(super) wire: bool,
}
