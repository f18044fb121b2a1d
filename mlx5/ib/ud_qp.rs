// SPDX-License-Identifier: GPL-2.0

//! The kernel UD QP of an IPoIB interface (the core's `open_ud_qp` op,
//! [`ib_core_rs::ud_qp::UdQp`]; upstream `ipoib_transport_dev_init()` and `ipoib_init_qp()`):
//! a kernel QP of PRM type UD with the interface's Q_Key and P_Key index, one CQ for both its
//! queues (upstream IPoIB has a receive CQ and a send CQ), a PD with a DMA MR and one coherent
//! buffer of datagram slots (the ring of `dgram.rs`): [`RECV_SLOTS`] receive slots of the
//! 40-byte GRH area and `max_payload` bytes (upstream `IPOIB_UD_BUF_SIZE()`), [`SEND_SLOTS`]
//! send slots of `max_payload` bytes. A send copies the datagram into a free send slot and
//! posts it with the address vector of its [`UdDest`]; it takes spinlocks only, so an
//! interface's transmit may call it. A poll copies each received datagram out (an atomic
//! allocation: a poll may run in atomic context; a datagram that finds no memory is dropped,
//! as upstream drops one it has no skb for), with the GRH's GIDs when the CQE says a GRH came
//! (upstream `IB_WC_GRH`), and reposts the slot.
//!
//! Multicast: [`UdQp::attach_mcast`] and [`UdQp::detach_mcast`] are the verbs'
//! `ib_attach_mcast()` and `ib_detach_mcast()` on the QP (ATTACH_TO_MCG and
//! DETACH_FROM_MCG); destroying the QP drops its attachments.
//!
//! InfiniBand ports only (IPoIB runs on InfiniBand): `EOPNOTSUPP` on a RoCE port, whose sends
//! would need the destination MAC resolved, which may sleep.

use crate::ib::device::Mlx5Ib;
use crate::ib::dgram::{self, Layout, Ring, GRH};
use ib_core_rs::attr::{Gid, LinkLayer};
use ib_core_rs::device::Device;
use ib_core_rs::mad_qp::MadDest;
use ib_core_rs::ud_qp::{UdCompletion, UdDest, UdQp, UdQpConfig, UdQpNotify, UdRecvInfo};
use ib_core_rs::verbs::{wc_flags, QpAttr, QpType, Wc};
use kernel::prelude::*;
use kernel::sync::Arc;

/// The largest `max_payload`: a 4096-byte IB MTU less the IPoIB encapsulation header the
/// interface puts in the payload (upstream `IPOIB_UD_MTU()` of 4096 plus its 4 bytes).
pub(crate) const MAX_PAYLOAD: u32 = 4092;
/// Receive slots posted (upstream `ipoib_recvq_size`, 256 by default; a smaller queue here).
pub(crate) const RECV_SLOTS: usize = 64;
/// Sends in flight (upstream `ipoib_sendq_size`, 128 by default).
pub(crate) const SEND_SLOTS: usize = 32;
/// The largest destination QPN (24 bits; 0xffffff is a multicast group's).
const QPN_MASK: u32 = 0x00ff_ffff;

/// A UD QP of one port (see the module documentation).
#[pin_data]
pub(crate) struct Mlx5UdQp {
    #[pin]
    ring: Ring,
    max_payload: usize,
}

impl Mlx5UdQp {
    /// The datagram in receive slot `slot`, with where it came from.
    fn read_recv(&self, slot: usize, wc: &Wc) -> Result<UdCompletion> {
        let len = (wc.byte_len as usize)
            .saturating_sub(GRH)
            .min(self.max_payload);
        let mut data = KVec::with_capacity(len, GFP_ATOMIC)?;
        data.resize(len, 0, GFP_ATOMIC)?;
        self.ring.read(slot, GRH, &mut data)?;
        let mut info = UdRecvInfo {
            slid: wc.slid,
            src_qp: wc.src_qp,
            sl: wc.sl,
            dgid: None,
            sgid: None,
        };
        if wc.wc_flags & wc_flags::GRH != 0 {
            // The GRH: SGID at bytes 8..24, DGID at 24..40.
            let mut g = [0u8; GRH];
            self.ring.read(slot, 0, &mut g)?;
            let gid = |r: core::ops::Range<usize>| {
                let mut b = [0u8; 16];
                b.copy_from_slice(g.get(r).unwrap_or(&[0; 16]));
                Gid(b)
            };
            info.sgid = Some(gid(8..24));
            info.dgid = Some(gid(24..40));
        }
        Ok(UdCompletion::Recv { data, info })
    }
}

impl UdQp for Mlx5UdQp {
    fn qpn(&self) -> u32 {
        self.ring.qp().map_or(0, |q| q.qp_num())
    }

    fn post_send(&self, data: &[u8], dest: &UdDest, wr_id: u64) -> Result {
        if dest.remote_qpn > QPN_MASK {
            return Err(EINVAL);
        }
        let UdDest {
            dlid,
            sl,
            remote_qpn,
            remote_qkey,
            grh,
        } = *dest;
        let to = MadDest {
            dlid,
            sl,
            remote_qpn,
            remote_qkey,
            grh,
            ..MadDest::default()
        };
        self.ring.send(data, &dgram::av(&to, false, [0; 6]), wr_id)
    }

    fn poll(&self, f: &mut dyn FnMut(UdCompletion)) {
        let sent = |wr_id, status| UdCompletion::Send { wr_id, status };
        self.ring.poll(f, sent, |slot, wc| self.read_recv(slot, wc));
    }

    fn attach_mcast(&self, gid: &Gid, lid: u16) -> Result {
        self.ring.qp()?.attach_mcast(gid, lid)
    }

    fn detach_mcast(&self, gid: &Gid, lid: u16) -> Result {
        self.ring.qp()?.detach_mcast(gid, lid)
    }
}

/// The `open_ud_qp` op (see the module documentation).
///
/// # Errors
///
/// `EOPNOTSUPP` on a RoCE port; `EINVAL` for a `max_payload` of 0 or above [`MAX_PAYLOAD`];
/// the errors of the objects' creation and of the QP's modifies (`EINVAL` for a P_Key index
/// the port does not have; everything made is destroyed then).
pub(crate) fn open_ud_qp(
    dev: &Arc<Device<Mlx5Ib>>,
    port: u32,
    cfg: &UdQpConfig,
    notify: Arc<dyn UdQpNotify>,
) -> Result<Arc<dyn UdQp>> {
    if dev.data().port(port)?.link_layer != LinkLayer::Infiniband {
        return Err(EOPNOTSUPP);
    }
    if cfg.max_payload == 0 || cfg.max_payload > MAX_PAYLOAD {
        return Err(EINVAL);
    }
    let max_payload = cfg.max_payload as usize;
    // upstream ipoib_init_qp(): INIT with the P_Key index and the Q_Key, RTR, RTS.
    let ring = Ring::create(
        dev,
        QpType::Ud,
        &QpAttr {
            port_num: port,
            pkey_index: cfg.pkey_index,
            qkey: cfg.qkey,
            ..QpAttr::default()
        },
        Layout {
            recv_slots: RECV_SLOTS,
            send_slots: SEND_SLOTS,
            payload: max_payload,
        },
        move || notify.notify(),
    )?;
    Ok(Arc::pin_init(
        pin_init!(Mlx5UdQp { ring <- ring, max_payload }),
        GFP_KERNEL,
    )?)
}
