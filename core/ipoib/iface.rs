// SPDX-License-Identifier: GPL-2.0

//! One port's IPoIB interface (upstream `ipoib_main.c`, `ipoib_ib.c`): its state ([`Ipoib`],
//! upstream `struct ipoib_dev_priv`), its ops ([`Iface`]) and its worker.
//!
//! Open joins the broadcast group (`bcast.rs`), stop leaves it; the transmit sends to the
//! group or along a path of the cache (`path.rs`); the worker (the core's queue, armed by the
//! QP's completions, a new path, a join to ask again) polls the QP and hands what arrived to
//! the stack, asks the paths and the joins. Locks: `ctl` (a mutex: the join) before `dp` (a
//! spinlock taken in any context: the group's record, the paths). How an interface is made and
//! unmade: `client.rs`.

use super::bcast::{self, Bcast};
use super::path::{self, Lookup, Paths};
use super::{mtu_bytes, ud_mtu, HwAddr};
use crate::attr::Gid;
use crate::event::EventKind;
use crate::netdev::{NetDevOps, NetDevice, ETH_MIN_MTU};
use crate::sa::mcast::{self as sa_mcast, SaMcastHandler, SaMulticast};
use crate::sa::{self, McMemberRec, SaPathHandler, SaPathRec};
use crate::ud_qp::{UdCompletion, UdQp, UdQpNotify};
use crate::wq::{Timer, TimerFire};
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::sync::{Arc, Mutex, SpinLockIrq};

/// The Q_Key of the IPoIB broadcast group upstream's SMs create (opensm's default) and that
/// an interface asks for when it creates the group: `0x0b1b`.
pub const IPOIB_QKEY: u32 = 0x0b1b;

/// What the broadcast join is doing (under [`Ipoib::ctl`]).
struct Ctl {
    /// The interface is up.
    up: bool,
    /// Bumped by every open, stop and rejoin: a join's answer of another generation is stale.
    gen: u64,
    /// The SA membership of the broadcast group, asked or joined (dropped: left).
    join: Option<SaMulticast>,
    /// The group the QP is attached to.
    attached: Option<(Gid, u16)>,
    /// A join is to be asked by the worker (after a failure, or the port came up).
    retry: bool,
    /// The wait before the next retry.
    backoff_ms: u32,
}

/// What the transmit and receive paths read (under [`Ipoib::dp`], taken in any context).
struct DataPath {
    /// The joined broadcast group.
    bcast: Option<Bcast>,
    /// The unicast paths.
    paths: Paths,
    /// The port's LID when the group was joined (own broadcasts are dropped by it).
    lid: u16,
}

/// A reference to the interface, taken out for good when it is unregistered (unregistering
/// waits for it).
struct NdevSlot {
    nd: Option<ARef<NetDevice>>,
    closing: bool,
}

/// One port's interface state (upstream `struct ipoib_dev_priv`).
#[pin_data]
pub(crate) struct Ipoib {
    pub(super) dev_index: u32,
    pub(super) port: u32,
    /// The P_Key of index 0 with the full-member bit.
    pub(super) pkey: u16,
    /// The port's GID at index 0.
    pub(super) gid: Gid,
    /// The port's largest MTU, `enum ib_mtu`.
    max_mtu: u8,
    /// The UD QP (taken out when the interface goes).
    #[pin]
    qp: SpinLockIrq<Option<Arc<dyn UdQp>>>,
    /// The worker that polls the QP, asks paths and joins again (stopped when the interface
    /// goes).
    #[pin]
    timer: SpinLockIrq<Option<Timer<Worker>>>,
    /// The interface, for its carrier and receive (taken out before it is unregistered).
    #[pin]
    ndev: SpinLockIrq<NdevSlot>,
    #[pin]
    ctl: Mutex<Ctl>,
    #[pin]
    dp: SpinLockIrq<DataPath>,
}

impl Ipoib {
    /// The state of `port` of device `dev_index` (P_Key `pkey`, GID `gid`, largest MTU
    /// `max_mtu` as `enum ib_mtu`), with its worker; no QP yet, down.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(super) fn new(
        dev_index: u32,
        port: u32,
        pkey: u16,
        gid: Gid,
        max_mtu: u8,
    ) -> Result<Arc<Self>> {
        let ipoib = Arc::pin_init(
            pin_init!(Ipoib {
                dev_index,
                port,
                pkey,
                gid,
                max_mtu,
                qp <- kernel::new_spinlock_irq!(None, "ipoib_qp"),
                timer <- kernel::new_spinlock_irq!(None, "ipoib_timer"),
                ndev <- kernel::new_spinlock_irq!(
                    NdevSlot {
                        nd: None,
                        closing: false
                    },
                    "ipoib_ndev"
                ),
                ctl <- kernel::new_mutex!(
                    Ctl {
                        up: false,
                        gen: 0,
                        join: None,
                        attached: None,
                        retry: false,
                        backoff_ms: bcast::BACKOFF_FIRST_MS,
                    },
                    "ipoib_ctl"
                ),
                dp <- kernel::new_spinlock_irq!(
                    DataPath {
                        bcast: None,
                        paths: Paths::new(),
                        lid: 0,
                    },
                    "ipoib_dp"
                ),
            }),
            GFP_KERNEL,
        )?;
        let timer = Timer::new(Arc::new(
            Worker {
                ipoib: ipoib.clone(),
            },
            GFP_KERNEL,
        )?);
        match timer {
            Ok(t) => *ipoib.timer.lock() = Some(t),
            Err(e) => {
                ipoib.close();
                return Err(e);
            }
        }
        Ok(ipoib)
    }

    /// Gives the interface its QP.
    pub(super) fn set_qp(&self, qp: Arc<dyn UdQp>) {
        *self.qp.lock() = Some(qp);
    }

    /// The ops of the interface of `this`.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(super) fn iface(this: &Arc<Self>) -> Result<Arc<Iface>> {
        Ok(Arc::new(
            Iface {
                ipoib: this.clone(),
            },
            GFP_KERNEL,
        )?)
    }

    /// Drops the interface's reference for good (before it is unregistered: that waits for
    /// every reference).
    pub(super) fn release_ndev(&self) {
        let held = {
            let mut s = self.ndev.lock();
            s.closing = true;
            s.nd.take()
        };
        drop(held);
    }

    /// The QP, if the interface is not going away.
    pub(super) fn qp(&self) -> Option<Arc<dyn UdQp>> {
        self.qp.lock().clone()
    }

    /// The interface, if it is registered.
    fn ndev(&self) -> Option<ARef<NetDevice>> {
        self.ndev.lock().nd.clone()
    }

    /// Keeps a reference to the interface, unless it is being unregistered.
    pub(super) fn set_ndev(&self, dev: &NetDevice) {
        let mut s = self.ndev.lock();
        if !s.closing && s.nd.is_none() {
            s.nd = Some(ARef::from(dev));
        }
    }

    /// Runs the worker within `ms`.
    fn arm(&self, ms: u32) {
        if let Some(t) = &*self.timer.lock() {
            t.arm(ms);
        }
    }

    /// Stops the worker and drops the QP (after the interface is unregistered).
    pub(super) fn close(&self) {
        let timer = self.timer.lock().take();
        drop(timer);
        let qp = self.qp.lock().take();
        drop(qp);
        self.dp.lock().paths.flush();
    }

    /// The worker (process context): completions, path queries, a join to ask again.
    fn work(this: &Arc<Self>) {
        this.poll();
        let mut ask = KVec::new();
        let gen = this.dp.lock().paths.take_unasked(&mut ask);
        for dgid in ask.iter() {
            let r = Self::ask_path(this, dgid, gen);
            if let Err(e) = r {
                this.path_done(dgid, gen, Err(e));
            }
        }
        let retry = {
            let mut c = this.ctl.lock();
            core::mem::replace(&mut c.retry, false) && c.up
        };
        if retry {
            Self::join(this, false);
        }
    }

    /// Asks the SA for the path to `dgid` (upstream `path_rec_start()`); the answer goes to
    /// [`Self::path_done`].
    fn ask_path(this: &Arc<Self>, dgid: &Gid, gen: u64) -> Result {
        let (rec, mask) = path::query(&this.gid, dgid, this.pkey);
        let h = Arc::new(
            PathQuery {
                ipoib: this.clone(),
                dgid: *dgid,
                gen,
            },
            GFP_KERNEL,
        )?;
        sa::path_rec_get(
            this.dev_index,
            this.port,
            &rec,
            mask,
            path::PATH_REC_TIMEOUT_MS,
            h,
        )
    }

    /// Takes the QP's completions and hands received packets to the stack (upstream
    /// `ipoib_ib_handle_rx_wc()`), outside the QP's poll: the stack may transmit from it.
    fn poll(&self) {
        let Some(qp) = self.qp() else {
            return;
        };
        let mut got = KVec::new();
        qp.poll(&mut |c| {
            if let UdCompletion::Recv { data, info } = c {
                // Without memory to hold it the packet is dropped, as upstream drops one it
                // has no skb for.
                let _ = got.push((data, info), GFP_ATOMIC);
            }
        });
        if got.is_empty() {
            return;
        }
        let Some(nd) = self.ndev() else {
            return;
        };
        if !nd.running() {
            return;
        }
        let own_lid = self.dp.lock().lid;
        let qpn = qp.qpn();
        let bc = super::broadcast(self.pkey);
        for (data, info) in got {
            // upstream: a multicast the HCA replicated back to its sender.
            if info.src_qp == qpn && info.slid == own_lid {
                continue;
            }
            let kind = super::rx_packet_type(info.dgid.as_ref(), &bc);
            // Counted by the interface: a packet the stack refuses is an rx drop.
            let _ = nd.rx_ipoib(&data, kind);
        }
    }

    /// Asks to join the broadcast group (`create`: with what creating it needs).
    fn join(this: &Arc<Self>, create: bool) {
        let mut c = this.ctl.lock();
        if !c.up {
            return;
        }
        c.gen = c.gen.wrapping_add(1);
        let old = c.join.take();
        let h = Arc::new(
            BcastJoin {
                ipoib: this.clone(),
                gen: c.gen,
                create,
            },
            GFP_KERNEL,
        );
        let mgid = super::broadcast_mgid(this.pkey);
        let (rec, mask) = bcast::join_request(
            &mgid,
            &this.gid,
            this.pkey,
            create.then_some(this.active_mtu()),
        );
        let r = h
            .map_err(Error::from)
            .and_then(|h| sa_mcast::join_multicast(this.dev_index, this.port, &rec, mask, h));
        match r {
            Ok(j) => c.join = Some(j),
            Err(_) => this.retry_later(&mut c),
        }
        drop(c);
        drop(old);
    }

    /// The port's active MTU (`enum ib_mtu`), its largest when it has none.
    fn active_mtu(&self) -> u8 {
        crate::registry::device_arc(self.dev_index)
            .and_then(|d| d.query_port_attr(self.port).ok())
            .map_or(self.max_mtu, |a| {
                if a.active_mtu != 0 {
                    a.active_mtu
                } else {
                    self.max_mtu
                }
            })
    }

    /// Has the worker join again after the backoff.
    fn retry_later(&self, c: &mut Ctl) {
        c.retry = true;
        let ms = c.backoff_ms;
        c.backoff_ms = (ms * 2).min(bcast::BACKOFF_MAX_MS);
        self.arm(ms);
    }

    /// Leaves what the interface joined: detaches the QP, forgets the group and the paths,
    /// turns the carrier off. The caller holds `ctl`.
    fn unjoin(&self, c: &mut Ctl) -> Option<SaMulticast> {
        if let (Some((gid, lid)), Some(qp)) = (c.attached.take(), self.qp()) {
            let _ = qp.detach_mcast(&gid, lid);
        }
        {
            let mut dp = self.dp.lock();
            dp.bcast = None;
            dp.paths.flush();
        }
        if let Some(nd) = self.ndev() {
            nd.set_carrier(false);
        }
        c.join.take()
    }

    /// A broadcast join's answer (upstream `ipoib_mcast_join_complete()`).
    fn bcast_joined(self: &Arc<Self>, gen: u64, create: bool, r: Result<McMemberRec>) {
        let mut c = self.ctl.lock();
        if !c.up || c.gen != gen {
            return;
        }
        let rec = match r {
            Ok(rec) => rec,
            // The SA refused the plain join: the group is not there; create it.
            Err(e) if e == EINVAL && !create => {
                drop(c);
                Self::join(self, true);
                return;
            }
            Err(e) => {
                // ENETRESET: the port lost the SA's memberships; join again at once.
                let old = self.unjoin(&mut c);
                if e == ENETRESET {
                    c.backoff_ms = bcast::BACKOFF_FIRST_MS;
                    c.retry = true;
                    self.arm(0);
                } else {
                    self.retry_later(&mut c);
                }
                drop(c);
                drop(old);
                return;
            }
        };
        if rec.qkey != IPOIB_QKEY {
            pr_warn!(
                "ib_core_rs: ipoib: broadcast group Q_Key {:#x} is not the QP's {:#x}; no carrier\n",
                rec.qkey,
                IPOIB_QKEY
            );
            return;
        }
        let mgid = Gid(rec.mgid);
        let Some(qp) = self.qp() else {
            return;
        };
        // upstream ipoib_mcast_attach().
        if c.attached.is_none() {
            if let Err(e) = qp.attach_mcast(&mgid, rec.mlid) {
                pr_warn!(
                    "ib_core_rs: ipoib: attach to the broadcast group failed: {:?}\n",
                    e
                );
                self.retry_later(&mut c);
                return;
            }
            c.attached = Some((mgid, rec.mlid));
        }
        c.backoff_ms = bcast::BACKOFF_FIRST_MS;
        let lid = crate::registry::device_arc(self.dev_index)
            .and_then(|d| d.core().get_cached_lid(self.port).ok())
            .map_or(0, |l| l.0);
        {
            let mut dp = self.dp.lock();
            dp.bcast = Some(Bcast { rec });
            dp.lid = lid;
        }
        // The carrier under `ctl`: a stop that follows turns it off after this.
        let nd = self.ndev();
        if let Some(nd) = &nd {
            nd.set_carrier(true);
        }
        drop(c);
        // upstream ipoib_mcast_join_finish(): datagram mode takes at most the group's MTU
        // (the RTNL lock, which a stop holds when it takes `ctl`, without `ctl`).
        let group = mtu_bytes(rec.mtu).map_or(0, ud_mtu);
        if let Some(nd) = nd {
            if group >= ETH_MIN_MTU && nd.mtu() > group {
                if let Err(e) = nd.set_mtu(group) {
                    pr_warn!(
                        "ib_core_rs: ipoib: MTU {} of the broadcast group: {:?}\n",
                        group,
                        e
                    );
                }
            }
        }
    }

    /// A path query's answer: the packets that waited go.
    fn path_done(&self, dgid: &Gid, gen: u64, r: Result<(u16, u8)>) {
        let (sent, qkey) = {
            let mut dp = self.dp.lock();
            let qkey = dp.bcast.map(|b| b.rec.qkey);
            (dp.paths.answered(dgid, gen, r), qkey)
        };
        let (Some(sent), Some(qkey), Some(qp)) = (sent, qkey, self.qp()) else {
            return;
        };
        let Ok((dlid, sl)) = r else {
            return;
        };
        for w in sent.iter() {
            let _ = qp.post_send(&w.wire, &path::unicast_dest(dlid, sl, w.qpn, qkey), 0);
        }
    }

    /// A port event (upstream `ipoib_event()`): paths are flushed; a port that went down
    /// loses its carrier; one that came up joins again if the interface waits for it.
    pub(super) fn port_event(&self, kind: EventKind) {
        match kind {
            EventKind::PortErr => {
                if let Some(nd) = self.ndev() {
                    nd.set_carrier(false);
                }
                self.dp.lock().paths.flush();
            }
            EventKind::PortActive => {
                let mut c = self.ctl.lock();
                if c.up && c.attached.is_none() {
                    c.retry = true;
                    c.backoff_ms = bcast::BACKOFF_FIRST_MS;
                    self.arm(0);
                }
            }
            EventKind::LidChange
            | EventKind::SmChange
            | EventKind::ClientReregister
            | EventKind::PkeyChange => self.dp.lock().paths.flush(),
            _ => {}
        }
    }

    /// Sends the wire bytes of a packet addressed to `a` (atomic: the interface's transmit).
    fn xmit(&self, a: &HwAddr, wire: &[u8]) -> bool {
        let dest = {
            let mut dp = self.dp.lock();
            let Some(b) = dp.bcast else {
                return false;
            };
            if a.is_multicast() {
                // Only the broadcast group is joined (no send-only joins).
                if a.gid != b.mgid() {
                    return false;
                }
                b.dest()
            } else {
                match dp.paths.lookup(&a.gid, a.qpn, wire) {
                    Lookup::Resolved(dlid, sl) => path::unicast_dest(dlid, sl, a.qpn, b.rec.qkey),
                    Lookup::Queued(ask) => {
                        drop(dp);
                        if ask {
                            self.arm(0);
                        }
                        return true;
                    }
                    Lookup::Dropped => return false,
                }
            }
        };
        let Some(qp) = self.qp() else {
            return false;
        };
        qp.post_send(wire, &dest, 0).is_ok()
    }
}

impl UdQpNotify for Ipoib {
    // From the CQ's completion handler: only arms the worker.
    fn notify(&self) {
        self.arm(0);
    }
}

/// The handler of one broadcast join.
struct BcastJoin {
    ipoib: Arc<Ipoib>,
    /// The interface's join generation when it was asked (a later stop or rejoin makes it
    /// stale).
    gen: u64,
    /// Whether it asked to create the group.
    create: bool,
}

impl SaMcastHandler for BcastJoin {
    // upstream ipoib_mcast_join_complete().
    fn joined(&self, r: Result<McMemberRec>) {
        self.ipoib.bcast_joined(self.gen, self.create, r);
    }
}

/// The handler of one PathRecord query.
struct PathQuery {
    ipoib: Arc<Ipoib>,
    dgid: Gid,
    gen: u64,
}

impl SaPathHandler for PathQuery {
    // upstream path_rec_completion().
    fn done(&self, r: Result<SaPathRec>) {
        self.ipoib
            .path_done(&self.dgid, self.gen, r.map(|p| (p.dlid, p.sl)));
    }
}

/// The worker of one port (the core's queue: process context).
struct Worker {
    ipoib: Arc<Ipoib>,
}

impl TimerFire for Worker {
    fn fire(&self) {
        Ipoib::work(&self.ipoib);
    }
}

/// What the `ib%d` interface's ops run on.
pub(crate) struct Iface {
    ipoib: Arc<Ipoib>,
}

impl NetDevOps for Iface {
    // upstream ipoib_open() -> ipoib_mcast_start_thread(): the broadcast join; the carrier
    // comes with it.
    fn open(&self, dev: &NetDevice) -> Result {
        // The interface may be opened before its registration returned.
        self.ipoib.set_ndev(dev);
        {
            let mut c = self.ipoib.ctl.lock();
            c.up = true;
            c.backoff_ms = bcast::BACKOFF_FIRST_MS;
        }
        Ipoib::join(&self.ipoib, false);
        Ok(())
    }

    // upstream ipoib_stop() -> ipoib_mcast_stop_thread(), ipoib_mcast_dev_flush().
    fn stop(&self, _dev: &NetDevice) {
        let old = {
            let mut c = self.ipoib.ctl.lock();
            c.up = false;
            c.retry = false;
            c.gen = c.gen.wrapping_add(1);
            self.ipoib.unjoin(&mut c)
        };
        drop(old);
    }

    // upstream ipoib_start_xmit() (datagram mode).
    fn start_xmit(&self, _dev: &NetDevice, frame: &[u8]) -> bool {
        let Some((a, wire)) = super::split_xmit(frame) else {
            return false;
        };
        self.ipoib.xmit(&a, wire)
    }

    // upstream ipoib_change_mtu(): datagram mode takes up to the broadcast group's MTU.
    fn change_mtu(&self, _dev: &NetDevice, mtu: u32) -> Result {
        let group = self.ipoib.dp.lock().bcast.map(|b| b.rec.mtu);
        let limit = mtu_bytes(group.unwrap_or(self.ipoib.max_mtu)).map_or(0, ud_mtu);
        if mtu > limit {
            return Err(EINVAL);
        }
        Ok(())
    }
}
