// SPDX-License-Identifier: GPL-2.0

//! The special QPs of a port for the core's MAD layer (upstream `ib_mad_port_open()`'s
//! `create_mad_qp()` with mlx5's `IB_QPT_SMI` and `gsi.c`'s hardware GSI QP): a kernel QP of
//! PRM type QP0 or QP1 (`QpType::Smi`, `QpType::Gsi`), one CQ for both its queues, a PD with
//! a DMA MR, and one coherent buffer of MAD slots. The MAD layer's view is
//! [`ib_core_rs::mad_qp::MadQp`]: whole MADs in and out, the buffers stay here.
//!
//! Upstream `ib_mad_port_start()`: RESET -> INIT (P_Key index 0, Q_Key 0 for QP0 and
//! `IB_QP1_QKEY` for QP1), RTR, RTS (SQ PSN 0), then the receive queue filled
//! (`ib_mad_post_receive_mads()`, each buffer a GRH and a MAD). A send builds the datagram
//! segment of the address vector as upstream's `set_datagram_seg()` with the AV of
//! `mlx5_ib_create_ah()` (`create_ib_ah()`).
//!
//! Deviations: upstream `gsi.c` sends GSI MADs through per-P_Key UD QPs when the device can
//! set the DETH source QPN; here the hardware QP1 sends itself (P_Key index 0). The receive
//! P_Key index is reported as 0 (the core's `Wc` has no P_Key index).

use crate::hw::DmaBuf;
use crate::ib::device::Mlx5Ib;
use crate::ib::qp::wr;
use ib_core_rs::addr::resolve_eth_dmac;
use ib_core_rs::attr::LinkLayer;
use ib_core_rs::device::Device;
use ib_core_rs::mad::{Mad, MadRecvInfo};
use ib_core_rs::mad_qp::{MadDest, MadQp, MadQpCompletion, MadQpNotify, QP1_QKEY};
use ib_core_rs::verbs::{
    wc_flags, AccessFlags, Cq, CqHandler, CqInitAttr, CqNotify, GlobalRoute, Mr, Pd, Qp, QpAttr,
    QpAttrMask, QpCap, QpInitAttr, QpState, QpType, RecvWr, SendWr, Sge, Wc, WcOpcode, WcStatus,
    WrOpcode,
};
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// Receive buffers posted (upstream `mad_recvq_size`, 512 by default; a smaller queue here).
const RECV_SLOTS: usize = 64;
/// Sends in flight (upstream `mad_sendq_size`).
const SEND_SLOTS: usize = 32;
/// A receive slot: the 40-byte GRH area, then the MAD (upstream `struct ib_mad_private`).
const RECV_SLOT: usize = 512;
const GRH: usize = 40;
const MAD: usize = 256;
/// `wr_id` bit of a receive.
const RECV_BIT: u64 = 1 << 63;
/// `MLX5_EXTENDED_UD_AV`.
const EXTENDED_UD_AV: u32 = 1 << 31;

/// Tells the MAD layer of completions (the CQ's completion handler).
struct Kick(Arc<dyn MadQpNotify>);

impl CqHandler for Kick {
    fn completion(&self) {
        self.0.notify();
    }

    fn event(&self) {}
}

struct Sends {
    /// The MAD layer's `wr_id` of each send slot in use.
    slot: [Option<u64>; SEND_SLOTS],
}

/// A special QP of one port (see the module documentation).
#[pin_data]
pub(crate) struct Mlx5MadQp {
    /// Destroyed before the buffer is unmapped (fields drop in order).
    parts: Parts,
    buf: DmaBuf,
    eth: bool,
    /// The port (1-based).
    port: u32,
    #[pin]
    sends: Mutex<Sends>,
    #[pin]
    poll_lock: Mutex<()>,
}

impl Mlx5MadQp {
    fn recv_off(i: usize) -> usize {
        i * RECV_SLOT
    }

    fn send_off(i: usize) -> usize {
        RECV_SLOTS * RECV_SLOT + i * MAD
    }

    fn lkey(&self) -> Result<u32> {
        Ok(self.parts.mr.as_ref().ok_or(ENODEV)?.lkey())
    }

    fn qp(&self) -> Result<&Arc<Qp<Mlx5Ib>>> {
        self.parts.qp.as_ref().ok_or(ENODEV)
    }

    fn post_recv(&self, i: usize) -> Result {
        let sge = [Sge {
            addr: self.buf.bus(Self::recv_off(i)),
            length: (GRH + MAD) as u32,
            lkey: self.lkey()?,
        }];
        self.qp()?.post_recv(&[RecvWr {
            wr_id: RECV_BIT | i as u64,
            sg_list: &sge,
        }])
    }

    /// The destination MAC of `dest` on a RoCE port: upstream's MAD senders fill the AH's
    /// `roce.dmac` (`ib_resolve_eth_dmac()`, `ib_init_ah_attr_from_wc()`: route and
    /// neighbour of the destination GID); here it is resolved from the GID at the send.
    /// Zeros on InfiniBand, or when it does not resolve (the frame then reaches no host).
    /// Sleeps (a neighbour may take up to a second).
    fn dmac(&self, dest: &MadDest) -> [u8; 6] {
        let (true, Some(g), Ok(qp)) = (self.eth, dest.grh, self.qp()) else {
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

    /// `struct mlx5_av` of `dest` with destination MAC `dmac` (upstream `create_ib_ah()` +
    /// `set_datagram_seg()`).
    fn av(&self, dest: &MadDest, dmac: [u8; 6]) -> [u8; 48] {
        let mut av = [0u8; 48];
        // `rmac` (RoCE).
        av[20..26].copy_from_slice(&dmac);
        av[0..4].copy_from_slice(&dest.remote_qkey.to_be_bytes());
        av[8..12]
            .copy_from_slice(&((dest.remote_qpn & 0x00ff_ffff) | EXTENDED_UD_AV).to_be_bytes());
        av[12] = if self.eth {
            (dest.sl & 7) << 1
        } else {
            dest.sl & 0xf
        };
        av[13] = dest.src_path_bits & 0x7f;
        av[14..16].copy_from_slice(&dest.dlid.to_be_bytes());
        if let Some(g) = dest.grh {
            av[26] = g.traffic_class;
            av[27] = g.hop_limit;
            let fl = (g.flow_label & 0xf_ffff) | (1 << 30) | (u32::from(g.sgid_index) << 20);
            av[28..32].copy_from_slice(&fl.to_be_bytes());
            av[32..48].copy_from_slice(&g.dgid.0);
        }
        av
    }

    fn completion(&self, wc: &Wc) -> Option<MadQpCompletion> {
        if wc.wr_id & RECV_BIT == 0 {
            let i = wc.wr_id as usize;
            let id = self.sends.lock().slot.get_mut(i).and_then(Option::take)?;
            return Some(MadQpCompletion::Send {
                wr_id: id,
                status: wc.status,
            });
        }
        let i = (wc.wr_id & !RECV_BIT) as usize;
        let got = if wc.status == WcStatus::Success && wc.opcode == WcOpcode::Recv {
            self.read_recv(i, wc).ok()
        } else {
            None
        };
        // upstream ib_mad_recv_done(): the buffer goes back to the queue (a flushed one is
        // not reposted: the QP is being destroyed).
        if wc.status != WcStatus::WrFlushErr {
            let _ = self.post_recv(i);
        }
        got
    }

    fn read_recv(&self, i: usize, wc: &Wc) -> Result<MadQpCompletion> {
        let mut mad = KBox::new(Mad::zeroed(), GFP_KERNEL)?;
        let len = (wc.byte_len as usize).saturating_sub(GRH).min(MAD);
        self.buf.read(Self::recv_off(i) + GRH, &mut mad.0[..len])?;
        let grh = if wc.wc_flags & wc_flags::GRH != 0 {
            let mut g = [0u8; GRH];
            self.buf.read(Self::recv_off(i), &mut g)?;
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
        let dmac = self.dmac(dest);
        let mut sends = self.sends.lock();
        let i = sends.slot.iter().position(Option::is_none).ok_or(ENOMEM)?;
        self.buf.write(Self::send_off(i), &mad.0[..len])?;
        let sge = [Sge {
            addr: self.buf.bus(Self::send_off(i)),
            length: len as u32,
            lkey: self.lkey()?,
        }];
        let av = self.av(dest, dmac);
        let swr = SendWr {
            wr_id: i as u64,
            opcode: WrOpcode::Send,
            sg_list: &sge,
            ..SendWr::default()
        };
        if let Some(s) = sends.slot.get_mut(i) {
            *s = Some(wr_id);
        }
        let r = wr::post_send_ud(self.qp()?, &swr, &av);
        if r.is_err() {
            if let Some(s) = sends.slot.get_mut(i) {
                *s = None;
            }
        }
        r
    }

    fn poll(&self, f: &mut dyn FnMut(MadQpCompletion)) {
        let Some(cq) = self.parts.cq.as_ref() else {
            return;
        };
        let _one = self.poll_lock.lock();
        let mut wc = [Wc::default(); 8];
        loop {
            let n = cq.poll(&mut wc).unwrap_or(0);
            for w in wc.iter().take(n) {
                if let Some(c) = self.completion(w) {
                    f(c);
                }
            }
            if n < wc.len() {
                // upstream ib_mad_completion_handler(): re-arm, then poll once more for what
                // came in between.
                if cq.req_notify(CqNotify::NextComp).is_err() {
                    return;
                }
                let n = cq.poll(&mut wc).unwrap_or(0);
                if n == 0 {
                    return;
                }
                for w in wc.iter().take(n) {
                    if let Some(c) = self.completion(w) {
                        f(c);
                    }
                }
            }
        }
    }
}

fn owner() -> ib_core_rs::restrack::Owner {
    ib_core_rs::kernel_owner!()
}

/// The verbs objects of a special QP, destroyed in reverse order of their creation
/// (upstream `destroy_mad_qp()`, `ib_mad_port_close()`).
struct Parts {
    pd: Option<Arc<Pd<Mlx5Ib>>>,
    cq: Option<Arc<Cq<Mlx5Ib>>>,
    qp: Option<Arc<Qp<Mlx5Ib>>>,
    mr: Option<Arc<Mr<Mlx5Ib>>>,
}

impl Drop for Parts {
    fn drop(&mut self) {
        if let Some(qp) = self.qp.take() {
            let _ = Qp::destroy(qp);
        }
        if let Some(cq) = self.cq.take() {
            let _ = Cq::destroy(cq);
        }
        if let Some(mr) = self.mr.take() {
            let _ = Mr::dereg(mr);
        }
        if let Some(pd) = self.pd.take() {
            let _ = Pd::dealloc(pd);
        }
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
    let mut parts = Parts {
        pd: None,
        cq: None,
        qp: None,
        mr: None,
    };
    let pd = Pd::alloc(dev, owner())?;
    parts.pd = Some(pd.clone());
    let kick: Arc<dyn CqHandler> = Arc::new(Kick(notify), GFP_KERNEL)?;
    let cq = Cq::create(
        dev,
        &CqInitAttr {
            cqe: (RECV_SLOTS + SEND_SLOTS) as u32,
            comp_vector: 0,
            flags: 0,
        },
        Some(kick),
        owner(),
    )?;
    parts.cq = Some(cq.clone());
    let qp = Qp::create(
        &pd,
        &QpInitAttr {
            send_cq: &cq,
            recv_cq: &cq,
            srq: None,
            qp_type,
            cap: QpCap {
                max_send_wr: SEND_SLOTS as u32,
                max_recv_wr: RECV_SLOTS as u32,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: true,
            event_handler: None,
        },
        owner(),
    )?;
    parts.qp = Some(qp.clone());
    let mr = Mr::get_dma_mr(&pd, AccessFlags::LOCAL_WRITE, owner())?;
    parts.mr = Some(mr.clone());
    let buf =
        d.hw.alloc_coherent(RECV_SLOTS * RECV_SLOT + SEND_SLOTS * MAD)?;
    // upstream ib_mad_port_start().
    let m = |a: &[QpAttrMask]| a.iter().fold(QpAttrMask(0), |x, y| x | *y);
    qp.modify(
        &QpAttr {
            qp_state: QpState::Init,
            port_num: port,
            pkey_index: 0,
            qkey: if qpn == 0 { 0 } else { QP1_QKEY },
            ..QpAttr::default()
        },
        m(&[
            QpAttrMask::STATE,
            QpAttrMask::PORT,
            QpAttrMask::PKEY_INDEX,
            QpAttrMask::QKEY,
        ]),
    )?;
    qp.modify(
        &QpAttr {
            qp_state: QpState::Rtr,
            ..QpAttr::default()
        },
        QpAttrMask::STATE,
    )?;
    qp.modify(
        &QpAttr {
            qp_state: QpState::Rts,
            sq_psn: 0,
            ..QpAttr::default()
        },
        m(&[QpAttrMask::STATE, QpAttrMask::SQ_PSN]),
    )?;
    // On an error the initializer drops `parts`, which destroys the objects.
    let made = Arc::pin_init(
        pin_init!(Mlx5MadQp {
            parts,
            buf,
            eth,
            port,
            sends <- kernel::new_mutex!(Sends { slot: [None; SEND_SLOTS] }),
            poll_lock <- kernel::new_mutex!(()),
        }),
        GFP_KERNEL,
    )?;
    for i in 0..RECV_SLOTS {
        made.post_recv(i)?;
    }
    if let Some(cq) = made.parts.cq.as_ref() {
        cq.req_notify(CqNotify::NextComp)?;
    }
    Ok(made)
}
