// SPDX-License-Identifier: GPL-2.0

//! The special QPs as the MAD layer sees them: a port's QP0 (SMI) or QP1 (GSI) on the wire,
//! made by the driver (the `open_mad_qp` op) and driven by the MAD layer's port worker.
//!
//! Upstream `ib_mad_port_open()` creates the QPs with `ib_create_qp()` (`IB_QPT_SMI`,
//! `IB_QPT_GSI`), allocates and DMA-maps the receive buffers itself (`ib_mad_post_receive_mads()`)
//! and polls one CQ from `ib_mad_completion_handler()`. The core here has no DMA mapping of
//! its own (a driver maps what its device may reach), so the driver owns the QP, its CQ and
//! the MAD buffers (mlx5: `mlx5/ib/gsi.rs`, upstream `hw/mlx5/gsi.c` for the GSI QP) and hands
//! the MAD layer whole MADs: [`MadQp::post_send`] copies a MAD out, [`MadQp::poll`] returns
//! what completed with received MADs copied in, the receive queue refilled.

use crate::attr::Gid;
use crate::mad::{Mad, MadRecvInfo};
use crate::verbs::types::WcStatus;
use kernel::prelude::*;

/// upstream `IB_QP1_QKEY`: the Q_Key of QP1.
pub const QP1_QKEY: u32 = 0x8001_0000;

/// The global route of a MAD (upstream the `IB_AH_GRH` part of the address handle).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MadGrh {
    /// The destination GID.
    pub dgid: Gid,
    /// The index of the source GID.
    pub sgid_index: u8,
    /// The hop limit.
    pub hop_limit: u8,
    /// The traffic class.
    pub traffic_class: u8,
    /// The flow label.
    pub flow_label: u32,
}

/// Where a MAD goes (upstream the address handle and `struct ib_ud_wr` of a MAD send).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MadDest {
    /// The destination LID (InfiniBand).
    pub dlid: u16,
    /// The service level.
    pub sl: u8,
    /// The source path bits.
    pub src_path_bits: u8,
    /// The destination QP (0 for SMPs).
    pub remote_qpn: u32,
    /// The destination's Q_Key ([`QP1_QKEY`] for QP1).
    pub remote_qkey: u32,
    /// The P_Key index to send with.
    pub pkey_index: u16,
    /// The global route (mandatory on RoCE).
    pub grh: Option<MadGrh>,
}

/// What completed on a special QP.
pub enum MadQpCompletion {
    /// A send completed (its `wr_id`).
    Send {
        /// The `wr_id` of [`MadQp::post_send`].
        wr_id: u64,
        /// Its status.
        status: WcStatus,
    },
    /// A MAD arrived.
    Recv {
        /// The MAD (shorter packets zero-filled).
        mad: KBox<Mad>,
        /// Where it came from.
        info: MadRecvInfo,
    },
}

/// A special QP of one port, made by the driver (see the module documentation).
pub trait MadQp: Send + Sync + 'static {
    /// Sends `mad` (`len` bytes of it) to `dest`; `wr_id` comes back with its completion.
    ///
    /// # Errors
    ///
    /// `ENOMEM` when the send queue is full, `EINVAL` for a bad destination, the device's
    /// errors.
    fn post_send(&self, mad: &Mad, len: usize, dest: &MadDest, wr_id: u64) -> Result;

    /// Takes what completed, oldest first, refilling the receive queue; re-arms the
    /// completion notification once the queue is empty.
    fn poll(&self, f: &mut dyn FnMut(MadQpCompletion));
}

/// Told when a special QP has completions to poll (from the CQ's completion handler: it must
/// not sleep).
pub trait MadQpNotify: Send + Sync + 'static {
    /// Completions are waiting.
    fn notify(&self);
}
