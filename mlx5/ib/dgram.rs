// SPDX-License-Identifier: GPL-2.0

//! The machinery of the driver's kernel datagram QPs: the special QPs the MAD layer sends and
//! receives MADs with (`gsi.rs`) and the UD QPs of IPoIB interfaces (`ud_qp.rs`). Each is a
//! kernel QP, one CQ for both its queues, a PD with a DMA MR and one coherent buffer of slots
//! ([`Ring`]): receive slots (the 40-byte GRH area, then the payload, upstream
//! `ib_mad_post_receive_mads()`, `ipoib_ib_post_receive()`) posted on the receive queue and
//! reposted as they complete, send slots a send copies its datagram into. A slot that crosses
//! a page is posted as one SGE per page (the pages of a coherent buffer need not be
//! contiguous on the bus).
//!
//! Setup as upstream `ib_mad_port_start()` and `ipoib_init_qp()`: RESET -> INIT (the port,
//! P_Key index and Q_Key), RTR, RTS (SQ PSN 0), then the receive queue filled and the CQ
//! armed. A send builds the datagram segment of the address vector as upstream
//! `set_datagram_seg()` with the AV of `mlx5_ib_create_ah()` (`create_ib_ah()`).
//!
//! [`Ring::send`] takes spinlocks only (the send slots', then the QP's SQ), so it may run in
//! atomic context (an interface's transmit). One caller polls at a time ([`Ring::poll`]): a
//! poll that finds another under way asks it to poll once more and returns, so completions
//! come out in order with no lock held while the caller handles them. The objects are
//! destroyed in reverse order of their creation (QP, CQ, MR, PD), then the buffer is
//! unmapped.

use crate::hw::DmaBuf;
use crate::ib::device::Mlx5Ib;
use crate::ib::qp::wr;
use ib_core_rs::device::Device;
use ib_core_rs::mad_qp::MadDest;
use ib_core_rs::verbs::{
    AccessFlags, Cq, CqHandler, CqInitAttr, CqNotify, Mr, Pd, Qp, QpAttr, QpAttrMask, QpCap,
    QpInitAttr, QpState, QpType, RecvWr, SendWr, Sge, Wc, WcOpcode, WcStatus, WrOpcode,
};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Full};
use kernel::sync::{Arc, SpinLockIrq};

/// The GRH area a UD receive starts with.
pub(crate) const GRH: usize = 40;
/// `wr_id` bit of a receive.
const RECV_BIT: u64 = 1 << 63;
/// `MLX5_EXTENDED_UD_AV`.
const EXTENDED_UD_AV: u32 = 1 << 31;
/// SGEs of one slot: a slot is at most two pages long, so it touches three at most.
const MAX_SGE: usize = 3;
/// [`Ring::poll`]'s states: nobody polls, one caller polls, one polls and was asked to poll
/// once more.
const IDLE: u32 = 0;
const BUSY: u32 = 1;
const AGAIN: u32 = 2;

/// Calls its function for each completion the CQ signals (the CQ's completion handler).
struct Kick<F>(F);

impl<F: Fn() + Send + Sync + 'static> CqHandler for Kick<F> {
    fn completion(&self) {
        (self.0)();
    }

    fn event(&self) {}
}

/// The slots of a [`Ring`]'s buffer: `recv_slots` receive slots of the GRH area and
/// `payload` bytes, then `send_slots` send slots of `payload` bytes.
pub(crate) struct Layout {
    pub(crate) recv_slots: usize,
    pub(crate) send_slots: usize,
    pub(crate) payload: usize,
}

impl Layout {
    fn recv_len(&self) -> usize {
        GRH + self.payload
    }

    fn recv_off(&self, i: usize) -> usize {
        i * self.recv_len()
    }

    fn send_off(&self, i: usize) -> usize {
        self.recv_slots * self.recv_len() + i * self.payload
    }
}

/// `struct mlx5_av` of `dest` with destination MAC `dmac` (RoCE; zeros on InfiniBand)
/// (upstream `create_ib_ah()` + `set_datagram_seg()`).
pub(crate) fn av(dest: &MadDest, eth: bool, dmac: [u8; 6]) -> [u8; 48] {
    let mut av = [0u8; 48];
    // `rmac` (RoCE).
    av[20..26].copy_from_slice(&dmac);
    av[0..4].copy_from_slice(&dest.remote_qkey.to_be_bytes());
    av[8..12].copy_from_slice(&((dest.remote_qpn & 0x00ff_ffff) | EXTENDED_UD_AV).to_be_bytes());
    av[12] = if eth {
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

/// A completion as [`Ring::poll`] finds it.
enum Done<'a> {
    /// A send completed: the `wr_id` of [`Ring::send`].
    Sent { wr_id: u64, status: WcStatus },
    /// Receive slot `slot` holds a datagram (read it with [`Ring::read`]; it is reposted
    /// once the caller returns).
    Recv { slot: usize, wc: &'a Wc },
}

fn owner() -> ib_core_rs::restrack::Owner {
    ib_core_rs::kernel_owner!()
}

/// The verbs objects of a [`Ring`], destroyed in reverse order of their creation
/// (upstream `destroy_mad_qp()`, `ipoib_transport_dev_cleanup()`).
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

/// The objects and the buffer of a [`Ring`].
struct Core {
    /// Destroyed before the buffer is unmapped (fields drop in order).
    parts: Parts,
    buf: DmaBuf,
    layout: Layout,
}

impl Core {
    fn qp(&self) -> Result<&Arc<Qp<Mlx5Ib>>> {
        self.parts.qp.as_ref().ok_or(ENODEV)
    }

    /// The SGEs of `len` bytes at `off` of the buffer, one per page.
    fn sges(&self, off: usize, len: usize) -> Result<([Sge; MAX_SGE], usize)> {
        let lkey = self.parts.mr.as_ref().ok_or(ENODEV)?.lkey();
        let mut sge = [Sge::default(); MAX_SGE];
        let (mut at, end, mut n) = (off, off + len, 0);
        while at < end {
            let piece = (PAGE_SIZE - at % PAGE_SIZE).min(end - at);
            *sge.get_mut(n).ok_or(EINVAL)? = Sge {
                addr: self.buf.bus(at),
                length: piece as u32,
                lkey,
            };
            n += 1;
            at += piece;
        }
        Ok((sge, n))
    }

    fn post_recv(&self, i: usize) -> Result {
        let l = &self.layout;
        let (sge, n) = self.sges(l.recv_off(i), l.recv_len())?;
        self.qp()?.post_recv(&[RecvWr {
            wr_id: RECV_BIT | i as u64,
            sg_list: sge.get(..n).unwrap_or(&[]),
        }])
    }
}

/// A kernel datagram QP with its CQ, PD, MR and slots (see the module documentation).
#[pin_data]
pub(crate) struct Ring {
    core: Core,
    /// The caller's `wr_id` of each send slot in use.
    #[pin]
    sends: SpinLockIrq<KVec<Option<u64>>>,
    /// [`IDLE`], [`BUSY`] or [`AGAIN`].
    polling: Atomic<u32>,
}

impl Ring {
    /// Creates the objects of a ring of `layout` on `dev`: a QP of `qp_type` taken to INIT
    /// with the port, P_Key index and Q_Key of `init`, then RTR and RTS, its receive queue
    /// filled, the CQ armed; `notify` runs for each completion the CQ signals (it must not
    /// sleep).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a slot longer than two pages; the errors of the objects' creation, of the
    /// QP's modifies and of the posts (everything made is destroyed then).
    pub(crate) fn create(
        dev: &Arc<Device<Mlx5Ib>>,
        qp_type: QpType,
        init: &QpAttr,
        layout: Layout,
        notify: impl Fn() + Send + Sync + 'static,
    ) -> Result<impl PinInit<Self>> {
        if layout.recv_len() > 2 * PAGE_SIZE {
            return Err(EINVAL);
        }
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
                cqe: (layout.recv_slots + layout.send_slots) as u32,
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
                    max_send_wr: layout.send_slots as u32,
                    max_recv_wr: layout.recv_slots as u32,
                    max_send_sge: MAX_SGE as u32,
                    max_recv_sge: MAX_SGE as u32,
                    max_inline_data: 0,
                },
                sq_sig_all: true,
                event_handler: None,
            },
            owner(),
        )?;
        parts.qp = Some(qp.clone());
        let mr = Mr::get_dma_mr(&pd, AccessFlags::LOCAL_WRITE, owner())?;
        parts.mr = Some(mr);
        let buf = dev.data().hw.alloc_coherent(
            layout.recv_slots * layout.recv_len() + layout.send_slots * layout.payload,
        )?;
        let mut slots = KVec::with_capacity(layout.send_slots, GFP_KERNEL)?;
        for _ in 0..layout.send_slots {
            slots.push(None, GFP_KERNEL)?;
        }
        let m = |a: &[QpAttrMask]| a.iter().fold(QpAttrMask(0), |x, y| x | *y);
        qp.modify(
            &QpAttr {
                qp_state: QpState::Init,
                ..*init
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
        let core = Core { parts, buf, layout };
        for i in 0..core.layout.recv_slots {
            core.post_recv(i)?;
        }
        cq.req_notify(CqNotify::NextComp)?;
        // Dropping the initializer unused drops `core`, which destroys the objects.
        Ok(pin_init!(Ring {
            core,
            sends <- kernel::new_spinlock_irq!(slots),
            polling: Atomic::new(IDLE),
        }))
    }

    pub(crate) fn qp(&self) -> Result<&Arc<Qp<Mlx5Ib>>> {
        self.core.qp()
    }

    /// Copies bytes at `at` of receive slot `slot` into `out`.
    ///
    /// # Errors
    ///
    /// `EINVAL` past the slot.
    pub(crate) fn read(&self, slot: usize, at: usize, out: &mut [u8]) -> Result {
        let l = &self.core.layout;
        if slot >= l.recv_slots || at + out.len() > l.recv_len() {
            return Err(EINVAL);
        }
        self.core.buf.read(l.recv_off(slot) + at, out)
    }

    /// Sends `data` with address vector `av` (see [`av`]); `wr_id` comes back in its
    /// [`Done::Sent`]. Never sleeps.
    ///
    /// # Errors
    ///
    /// `EMSGSIZE` for more than a send slot, `ENOBUFS` when every send slot is in use, the
    /// post's errors.
    pub(crate) fn send(&self, data: &[u8], av: &[u8; 48], wr_id: u64) -> Result {
        let c = &self.core;
        if data.len() > c.layout.payload {
            return Err(EMSGSIZE);
        }
        let qp = self.qp()?;
        let mut sends = self.sends.lock();
        let i = sends.iter().position(Option::is_none).ok_or(ENOBUFS)?;
        let off = c.layout.send_off(i);
        c.buf.write(off, data)?;
        let (sge, n) = c.sges(off, data.len())?;
        let swr = SendWr {
            wr_id: i as u64,
            opcode: WrOpcode::Send,
            sg_list: sge.get(..n).unwrap_or(&[]),
            ..SendWr::default()
        };
        wr::post_send_ud(qp, &swr, av)?;
        // Under the lock: the completion cannot look for the slot before it is taken.
        if let Some(s) = sends.get_mut(i) {
            *s = Some(wr_id);
        }
        Ok(())
    }

    fn complete(&self, wc: &Wc, f: &mut dyn FnMut(Done<'_>)) {
        if wc.wr_id & RECV_BIT == 0 {
            let id = self
                .sends
                .lock()
                .get_mut(wc.wr_id as usize)
                .and_then(Option::take);
            if let Some(wr_id) = id {
                f(Done::Sent {
                    wr_id,
                    status: wc.status,
                });
            }
            return;
        }
        let slot = (wc.wr_id & !RECV_BIT) as usize;
        if wc.status == WcStatus::Success && wc.opcode == WcOpcode::Recv {
            f(Done::Recv { slot, wc });
        }
        // upstream ib_mad_recv_done(), ipoib_ib_handle_rx_wc(): the buffer goes back to the
        // queue (a flushed one is not reposted: the QP is being destroyed).
        if wc.status != WcStatus::WrFlushErr {
            let _ = self.core.post_recv(slot);
        }
    }

    /// Hands out what completed until the CQ is empty, then re-arms it and polls once more
    /// for what came in between (upstream `ib_mad_completion_handler()`).
    fn drain(&self, f: &mut dyn FnMut(Done<'_>)) {
        let Some(cq) = self.core.parts.cq.as_ref() else {
            return;
        };
        let mut wc = [Wc::default(); 8];
        loop {
            let n = cq.poll(&mut wc).unwrap_or(0);
            for w in wc.iter().take(n) {
                self.complete(w, f);
            }
            if n < wc.len() {
                if cq.req_notify(CqNotify::NextComp).is_err() {
                    return;
                }
                let n = cq.poll(&mut wc).unwrap_or(0);
                if n == 0 {
                    return;
                }
                for w in wc.iter().take(n) {
                    self.complete(w, f);
                }
            }
        }
    }

    /// Hands out what completed, oldest first, to `f`: a send's as `sent` makes it, a
    /// received datagram's as `recv` reads it from its slot (one it fails to read is
    /// dropped); re-arms the CQ once it is empty. A call while another caller polls leaves the
    /// completions to that caller (which polls once more) and returns at once. Never sleeps
    /// but in `recv`; no lock is held while `f` runs.
    pub(crate) fn poll<T>(
        &self,
        f: &mut dyn FnMut(T),
        sent: fn(u64, WcStatus) -> T,
        recv: impl Fn(usize, &Wc) -> Result<T>,
    ) {
        self.poll_done(&mut |d| match d {
            Done::Sent { wr_id, status } => f(sent(wr_id, status)),
            Done::Recv { slot, wc } => {
                if let Ok(c) = recv(slot, wc) {
                    f(c);
                }
            }
        });
    }

    fn poll_done(&self, f: &mut dyn FnMut(Done<'_>)) {
        loop {
            match self.polling.cmpxchg(IDLE, BUSY, Full) {
                Ok(_) => break,
                Err(AGAIN) => return,
                Err(_) => {
                    if self.polling.cmpxchg(BUSY, AGAIN, Full).is_ok() {
                        return;
                    }
                }
            }
        }
        loop {
            self.drain(f);
            if self.polling.cmpxchg(BUSY, IDLE, Full).is_ok() {
                return;
            }
            // Asked to poll once more.
            self.polling.store(BUSY, kernel::sync::atomic::Release);
        }
    }
}
