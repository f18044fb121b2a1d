// SPDX-License-Identifier: GPL-2.0

//! A kernel UD QP that carries whole datagrams, as an IPoIB interface (`core/ipoib.rs`) sees
//! it: made by the driver (the `open_ud_qp` op), its buffers the driver's.
//!
//! Upstream IPoIB (`ulp/ipoib/ipoib_verbs.c`, `ipoib_ib.c`) creates a UD QP with
//! `ib_create_qp()`, DMA-maps each skb itself (`ipoib_dma_map_tx()`, `ipoib_alloc_rx_skb()`)
//! and polls its CQs from NAPI. The core here has no DMA mapping of its own (a driver maps
//! what its device may reach, see [`crate::mad_qp`]), so the driver owns the QP, its CQ and a
//! ring of datagram slots: [`UdQp::post_send`] copies a datagram out, [`UdQp::poll`] returns
//! what completed with received datagrams copied in, the receive queue refilled.
//!
//! The QP is in RTS with its receive queue filled when [`UdQp`] is handed out, with the
//! [`UdQpConfig`]'s Q_Key and P_Key index (upstream `ipoib_init_qp()`: INIT with the P_Key
//! index and Q_Key, RTR, RTS).

use crate::attr::Gid;
use crate::mad_qp::MadGrh;
use crate::verbs::types::WcStatus;
use kernel::prelude::*;

/// How the driver sets the QP up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdQpConfig {
    /// The QP's Q_Key (IPoIB: the broadcast group's, upstream `priv->qkey`).
    pub qkey: u32,
    /// The index of the P_Key the QP is a member of.
    pub pkey_index: u16,
    /// The largest datagram payload (without the 40-byte GRH a receive starts with): each
    /// receive slot holds a GRH and this many bytes; a longer send is `EMSGSIZE`.
    pub max_payload: u32,
}

/// Where a datagram goes (upstream the address handle and `struct ib_ud_wr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdDest {
    /// The destination LID: a unicast LID, or a multicast group's MLID.
    pub dlid: u16,
    /// The service level.
    pub sl: u8,
    /// The destination QP ([`crate::ipoib::MCAST_QPN`] for a multicast group).
    pub remote_qpn: u32,
    /// The destination's Q_Key.
    pub remote_qkey: u32,
    /// The global route (a multicast send carries one, as upstream's IPoIB AHs do).
    pub grh: Option<MadGrh>,
}

/// Where a received datagram came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdRecvInfo {
    /// The sender's LID.
    pub slid: u16,
    /// The sender's QP.
    pub src_qp: u32,
    /// The service level.
    pub sl: u8,
    /// The destination GID of the GRH, when the packet carried one (a multicast datagram
    /// does): tells a group's datagram from a unicast one (`ipoib_ib_handle_rx_wc()`).
    pub dgid: Option<Gid>,
    /// The source GID of the GRH, when there was one.
    pub sgid: Option<Gid>,
}

/// What completed on a [`UdQp`].
pub enum UdCompletion {
    /// A send completed (its `wr_id`).
    Send {
        /// The `wr_id` of [`UdQp::post_send`].
        wr_id: u64,
        /// Its status.
        status: WcStatus,
    },
    /// A datagram arrived: its payload (the GRH area stripped).
    Recv {
        /// The payload, the received length.
        data: KVec<u8>,
        /// Where it came from.
        info: UdRecvInfo,
    },
}

/// A kernel UD QP of one port, made by the driver (see the module documentation).
pub trait UdQp: Send + Sync + 'static {
    /// The QP's number (what the interface's hardware address carries).
    fn qpn(&self) -> u32;

    /// Sends `data` to `dest`; `wr_id` comes back with its completion. May run in atomic
    /// context (an interface's transmit).
    ///
    /// # Errors
    ///
    /// `ENOBUFS` when the send queue is full, `EMSGSIZE` for more than
    /// [`UdQpConfig::max_payload`] bytes, `EINVAL` for a bad destination, the device's errors.
    fn post_send(&self, data: &[u8], dest: &UdDest, wr_id: u64) -> Result;

    /// Takes what completed, oldest first, refilling the receive queue; re-arms the
    /// completion notification once the queue is empty. May run in atomic context (a
    /// received datagram that finds no memory is dropped). One caller polls at a time: a
    /// call while another polls returns at once, leaving what completed to that caller's `f`.
    fn poll(&self, f: &mut dyn FnMut(UdCompletion));

    /// Attaches the QP to the multicast group `gid` with MLID `lid` (upstream
    /// `ib_attach_mcast()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a GID that is not multicast, the device's errors.
    fn attach_mcast(&self, gid: &Gid, lid: u16) -> Result;

    /// Detaches the QP from a group it was attached to (upstream `ib_detach_mcast()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a group it is not attached to, the device's errors.
    fn detach_mcast(&self, gid: &Gid, lid: u16) -> Result;
}

/// Told when a [`UdQp`] has completions to poll (from the CQ's completion handler: it must
/// not sleep).
pub trait UdQpNotify: Send + Sync + 'static {
    /// Completions are waiting.
    fn notify(&self);
}
