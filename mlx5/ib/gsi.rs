// SPDX-License-Identifier: GPL-2.0

//! The special QPs of a port for the core's MAD layer (upstream `ib_mad_port_open()`'s
//! `create_mad_qp()` with mlx5's `IB_QPT_SMI` and `gsi.c`'s hardware GSI QP): a kernel QP of
//! PRM type QP0 or QP1 (`QpType::Smi`, `QpType::Gsi`), one CQ for both its queues, a PD with
//! a DMA MR, and one coherent buffer of MAD slots (the ring of `dgram.rs`). The MAD layer's
//! view is [`ib_core_rs::mad_qp::MadQp`]: whole MADs in and out, the buffers stay here.
//!
//! Upstream `ib_mad_port_start()`: RESET -> INIT (P_Key index 0, Q_Key 0 for QP0 and
//! `IB_QP1_QKEY` for QP1), RTR, RTS (SQ PSN 0), then the receive queue filled
//! (`ib_mad_post_receive_mads()`, each buffer a GRH and a MAD).
//!
//! Deviations: upstream `gsi.c` sends GSI MADs through per-P_Key UD QPs when the device can
//! set the DETH source QPN; here the hardware QP1 sends itself (P_Key index 0). The receive
//! P_Key index is reported as 0 (the core's `Wc` has no P_Key index).

use crate::ib::device::Mlx5Ib;
use crate::ib::dgram::{self, Layout, Ring, GRH};
use ib_core_rs::addr::resolve_eth_dmac;
use ib_core_rs::attr::LinkLayer;
use ib_core_rs::device::Device;
use ib_core_rs::mad::{Mad, MadRecvInfo};
use ib_core_rs::mad_qp::{MadDest, MadQp, MadQpCompletion, MadQpNotify, QP1_QKEY};
use ib_core_rs::verbs::{wc_flags, GlobalRoute, QpAttr, QpType, Wc};
use kernel::prelude::*;
use kernel::sync::Arc;

/// Receive buffers posted (upstream `mad_recvq_size`, 512 by default; a smaller queue here).
const RECV_SLOTS: usize = 64;
/// Sends in flight (upstream `mad_sendq_size`).
const SEND_SLOTS: usize = 32;
/// A receive slot: the 40-byte GRH area, then the MAD (upstream `struct ib_mad_private`).
const MAD: usize = 256;

/// A special QP of one port (see the module documentation).
#[pin_data]
pub(crate) struct Mlx5MadQp {
    #[pin]
    ring: Ring,
    eth: bool,
    /// The port (1-based).
    port: u32,
}

impl Mlx5MadQp {
    /// The destination MAC of `dest` on a RoCE port: upstream's MAD senders fill the AH's
    /// `roce.dmac` (`ib_resolve_eth_dmac()`, `ib_init_ah_attr_from_wc()`: route and
    /// neighbour of the destination GID); here it is resolved from the GID at the send.
    /// Zeros on InfiniBand, or when it does not resolve (the frame then reaches no host).
    /// Sleeps (a neighbour may take up to a second).
    fn dmac(&self, dest: &MadDest) -> [u8; 6] {
        let (true, Some(g), Ok(qp)) = (self.eth, dest.grh, self.ring.qp()) else {
            return [0; 6];
        };
        let mut grh = GlobalRoute {
            dgid: g.dgid,
            flow_label: g.flow_label,
            sgid_index: g.sgid_index,
            hop_limit: g.hop_limit,
            traffic_class: g.traffic_class,
        };
        resolve_eth_dmac(qp.device(), self.port, &mut grh).unwrap_or([0; 6])
    }

    fn read_recv(&self, slot: usize, wc: &Wc) -> Result<MadQpCompletion> {
        let mut mad = KBox::new(Mad::zeroed(), GFP_KERNEL)?;
        let len = (wc.byte_len as usize).saturating_sub(GRH).min(MAD);
        self.ring.read(slot, GRH, &mut mad.0[..len])?;
        let grh = if wc.wc_flags & wc_flags::GRH != 0 {
            let mut g = [0u8; GRH];
            self.ring.read(slot, 0, &mut g)?;
            Some(g)
        } else {
            None
        };
        Ok(MadQpCompletion::Recv {
            mad,
            info: MadRecvInfo {
                slid: wc.slid,
                sl: wc.sl,
                src_qp: wc.src_qp,
                pkey_index: 0,
                dlid_path_bits: 0,
                grh,
            },
        })
    }
}

impl MadQp for Mlx5MadQp {
    fn post_send(&self, mad: &Mad, len: usize, dest: &MadDest, wr_id: u64) -> Result {
        let len = len.min(MAD);
        let av = dgram::av(dest, self.eth, self.dmac(dest));
        // The MAD layer's full send queue is ENOMEM (upstream mlx5_wq_overflow()).
        self.ring
            .send(&mad.0[..len], &av, wr_id)
            .map_err(|e| if e == ENOBUFS { ENOMEM } else { e })
    }

    fn poll(&self, f: &mut dyn FnMut(MadQpCompletion)) {
        let sent = |wr_id, status| MadQpCompletion::Send { wr_id, status };
        self.ring.poll(f, sent, |slot, wc| self.read_recv(slot, wc));
    }
}

/// The `open_mad_qp` op (see the module documentation).
///
/// # Errors
///
/// `EOPNOTSUPP` without the module parameter `mad_qps=1`; `EINVAL` for a port the device
/// lacks or QP0 on a RoCE port; the errors of the objects'
/// creation and of the QP's modifies (everything made is destroyed then).
pub(crate) fn open_mad_qp(
    dev: &Arc<Device<Mlx5Ib>>,
    port: u32,
    qpn: u32,
    notify: Arc<dyn MadQpNotify>,
) -> Result<Arc<dyn MadQp>> {
    // Off by default (`mad_qps=0`): the checks of what a bound function holds count the
    // kernel PD and UAR only (see Documentation/mad.md).
    if !crate::module_parameters::mad_qps.value() {
        return Err(EOPNOTSUPP);
    }
    open(dev, port, qpn, notify)
}

/// [`open_mad_qp`] whatever the module parameter says.
pub(super) fn open(
    dev: &Arc<Device<Mlx5Ib>>,
    port: u32,
    qpn: u32,
    notify: Arc<dyn MadQpNotify>,
) -> Result<Arc<dyn MadQp>> {
    let d = dev.data();
    let eth = d.port(port)?.link_layer != LinkLayer::Infiniband;
    let qp_type = match qpn {
        0 if !eth => QpType::Smi,
        1 => QpType::Gsi,
        _ => return Err(EINVAL),
    };
    // upstream ib_mad_port_start(): P_Key index 0, Q_Key 0 for QP0 and IB_QP1_QKEY for QP1.
    let init = QpAttr {
        port_num: port,
        qkey: if qpn == 0 { 0 } else { QP1_QKEY },
        ..QpAttr::default()
    };
    let slots = Layout {
        recv_slots: RECV_SLOTS,
        send_slots: SEND_SLOTS,
        payload: MAD,
    };
    let ring = Ring::create(dev, qp_type, &init, slots, move || notify.notify())?;
    Ok(Arc::pin_init(
        pin_init!(Mlx5MadQp {
            ring <- ring,
            eth,
            port,
        }),
        GFP_KERNEL,
    )?)
}
