// SPDX-License-Identifier: GPL-2.0

//! What RC in packets (`rc.rs`) keeps of a QP between packets, in its `QpState`: the
//! requester's message in flight, the responder's progress, MSN, pending acknowledgement and
//! READ/atomic resources.

/// Responder resources (READ and atomic) kept: the device's `log_max_ra_res_qp` (4).
pub(super) const RES: usize = 16;

/// The requester's message in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Req {
    /// A message of the WQE at SQ counter `wqe` is in flight.
    pub(super) busy: bool,
    pub(super) wqe: u16,
    /// Its first PSN and how many PSNs it takes (a READ: its response packets).
    pub(super) first: u32,
    pub(super) npkts: u32,
    /// Request packets sent (a READ or atomic: 0 or 1).
    pub(super) sent: u32,
    /// Packets acknowledged (a READ: responses taken).
    pub(super) acked: u32,
    /// Request packets ever sent: one sent below this is a retransmission.
    pub(super) hi: u32,
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
    pub(super) req: Req,
    pub(super) resp: Resp,
}
