// SPDX-License-Identifier: GPL-2.0

//! A message: what the requester sends for one work request and the responder executes,
//! decoded from the WQE and checked on the requester's side (the opcode is valid for the
//! service, the gather list's keys, the length). The data stays in the requester's memory,
//! behind [`Message::segs`], until the responder moves it.

use super::completer::ReqRes;
use super::qp_state::{packets, Av};

/// The service a message travels on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Service {
    /// UD (the special QPs, QP0 and QP1, are UD QPs to the data path).
    Ud,
    /// UC: unreliable, connected.
    Uc,
    /// RC.
    Rc,
    /// XRC: RC's rules, plus the XRC SRQ the message names.
    Xrc,
    /// DC: RC's rules, from a DCI to the DCT each WQE names (`fwsim/dct.rs`).
    Dc,
}

impl Service {
    /// Acknowledged, retried and NAKed: RC, XRC and DC.
    pub(super) fn reliable(self) -> bool {
        matches!(self, Service::Rc | Service::Xrc | Service::Dc)
    }
}

/// One message of a requester.
#[derive(Clone, Copy, Debug)]
pub(super) struct Message<'b> {
    /// The WQE's opcode (`wqe_op`).
    pub(super) opcode: u8,
    /// The service.
    pub(super) svc: Service,
    /// Sent from an Ethernet (RoCE) port.
    pub(super) eth: bool,
    /// The immediate, or the rkey a SEND with invalidate names.
    pub(super) imm: [u8; 4],
    /// The requester asked for a solicited event.
    pub(super) solicited: bool,
    /// Bytes the message carries (8 for an atomic).
    pub(super) len: u64,
    /// The requester's data segments: where a SEND or WRITE reads from, where a READ
    /// response or an atomic's original value lands.
    pub(super) segs: &'b [u8],
    /// The remote address and rkey of an RDMA or atomic operation.
    pub(super) remote: (u64, u32),
    /// An atomic's swap (compare and swap) or add (fetch and add) operand.
    pub(super) swap_add: u64,
    /// A compare and swap's compare operand.
    pub(super) compare: u64,
    /// The XRC SRQ an XRC message is for.
    pub(super) xrc_srqn: u32,
    /// The DC access key a DC message carries.
    pub(super) dc_key: u64,
    /// A UD message's address vector.
    pub(super) av: Option<Av>,
    /// The source GID index the message goes out with: a UD or DC WQE's address vector's, the
    /// QP's primary path's otherwise (on RoCE it selects the framing, v1 or v2).
    pub(super) sgid_index: u8,
    /// The destination LID (InfiniBand) or GID (Ethernet) and QP number.
    pub(super) dest: (u16, [u8; 16], u32),
}

impl Message<'_> {
    /// The bytes a send CQE reports for the message.
    pub(super) fn byte_cnt(&self) -> u32 {
        u32::try_from(self.len).unwrap_or(u32::MAX)
    }

    /// Packets the message takes at path MTU `mtu` (a UD message is one).
    pub(super) fn packets(&self, mtu: u32) -> u32 {
        if self.svc == Service::Ud {
            1
        } else {
            packets(self.len, mtu)
        }
    }

    /// What the requester sees of a message that is lost on the way (no route, no such QP,
    /// a Q_Key mismatch, a responder that fails it without a NAK): no ACK on a reliable
    /// service; an unreliable one completes whatever happens past the requester.
    pub(super) fn dropped(&self) -> ReqRes {
        self.nak(ReqRes::Lost)
    }

    /// What the requester sees of the responder's answer `nak` to the message: the answer on
    /// a reliable service; an unreliable one has none and completes.
    pub(super) fn nak(&self, nak: ReqRes) -> ReqRes {
        if self.svc.reliable() {
            nak
        } else {
            ReqRes::Ok {
                byte_cnt: self.byte_cnt(),
            }
        }
    }
}
