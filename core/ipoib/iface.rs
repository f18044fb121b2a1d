// SPDX-License-Identifier: GPL-2.0

//! The IPoIB interfaces (upstream `ipoib_main.c`: `ipoib_add_one()`, `ipoib_add_port()`,
//! `ipoib_remove_one()`): a core client ([`IpoibClient`]) that gives each InfiniBand port of a
//! device whose driver has the `open_ud_qp` op an `ib%d` interface, and the table of those
//! interfaces ([`port_of`]).
//!
//! A port's interface is made in this order, and unmade in reverse when the device goes (the
//! client's `remove`) or the module unloads: the port's state ([`Ipoib`]), its UD QP (the
//! driver's `open_ud_qp`, P_Key index 0, the Q_Key [`IPOIB_QKEY`], datagrams up to the port's
//! largest MTU), the worker that polls it, then the `ib%d` `NetDev` of type
//! `ARPHRD_INFINIBAND`: its address the flags 0, the QP's number and the port's GID at index 0,
//! its broadcast address the IPv4 broadcast group of the P_Key at index 0, its MTU the
//! datagram MTU of the port's active MTU (upstream `IPOIB_UD_MTU()`: 2044 on a 2048-byte MTU),
//! its sysfs parent the IB device's parent (upstream `SET_NETDEV_DEV(dev, hca->dev.parent)`).
//! The interface is unregistered before the QP drops. A driver without the op (`EOPNOTSUPP`)
//! gets no interface; a port whose QP or interface fails gets none, the others theirs.

use super::bcast::{self, Bcast, BcastJoin};
use super::path::{self, Lookup, Paths};
use super::{mtu_bytes, ud_mtu, HwAddr};
use crate::attr::{Gid, LinkLayer};
use crate::event::{Event, EventKind};
use crate::ib_device::{DeviceCore, IbDevice};
use crate::netdev::{Link, NetDev, NetDevConfig, NetDevOps, NetDevice, ETH_MIN_MTU};
use crate::sa::mcast::{self as sa_mcast, SaMulticast};
use crate::sa::McMemberRec;
use crate::ud_qp::{UdCompletion, UdQp, UdQpConfig, UdQpNotify};
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
    dev_index: u32,
    port: u32,
    /// The P_Key of index 0 with the full-member bit.
    pkey: u16,
    /// The port's GID at index 0.
    gid: Gid,
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
    /// The QP, if the interface is not going away.
    fn qp(&self) -> Option<Arc<dyn UdQp>> {
        self.qp.lock().clone()
    }

    /// The interface, if it is registered.
    fn ndev(&self) -> Option<ARef<NetDevice>> {
        self.ndev.lock().nd.clone()
    }

    /// Keeps a reference to the interface, unless it is being unregistered.
    fn set_ndev(&self, dev: &NetDevice) {
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
    fn close(&self) {
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
            let r = path::ask(
                this,
                (this.dev_index, this.port),
                &this.gid,
                this.pkey,
                dgid,
                gen,
            );
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
    pub(super) fn bcast_joined(self: &Arc<Self>, gen: u64, create: bool, r: Result<McMemberRec>) {
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
    pub(super) fn path_done(&self, dgid: &Gid, gen: u64, r: Result<(u16, u8)>) {
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
    fn port_event(&self, kind: EventKind) {
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

/// A registered interface.
struct Registered {
    ipoib: Arc<Ipoib>,
    nd: NetDev<Iface>,
}

/// The interfaces of every device (behind `global::IPOIB`).
pub(crate) struct IpoibTable {
    ifs: KVec<Registered>,
}

impl IpoibTable {
    /// No interface.
    pub(crate) const fn new() -> Self {
        IpoibTable { ifs: KVec::new() }
    }
}

/// The port under an IPoIB interface, as [`port_of`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpoibPort {
    /// The IB device's index.
    pub dev_index: u32,
    /// The port.
    pub port: u32,
    /// The interface's P_Key (the full-member bit set).
    pub pkey: u16,
    /// The port's GID the interface's address carries.
    pub gid: Gid,
    /// The UD QP's number the interface's address carries.
    pub qpn: u32,
}

/// The port under the IPoIB interface `ndev` (compared by address; `None` for another
/// interface).
pub fn port_of(ndev: *const kernel::bindings::net_device) -> Option<IpoibPort> {
    let t = crate::global::IPOIB.lock();
    let r = t
        .ifs
        .iter()
        .find(|r| core::ptr::eq(r.nd.as_raw().cast_const(), ndev))?;
    Some(IpoibPort {
        dev_index: r.ipoib.dev_index,
        port: r.ipoib.port,
        pkey: r.ipoib.pkey,
        gid: r.ipoib.gid,
        qpn: r.ipoib.qp().map_or(0, |q| q.qpn()),
    })
}

/// Opens `port`'s UD QP for datagrams of up to `max_payload` bytes; a driver that refuses
/// that size (`EINVAL`) is asked for the datagram MTU's (less the IPoIB header). Returns the
/// QP and the size it took.
fn open_qp(
    ibdev: &Arc<dyn IbDevice>,
    ipoib: &Arc<Ipoib>,
    port: u32,
    max_payload: u32,
) -> Result<(Arc<dyn UdQp>, u32)> {
    let mut cfg = UdQpConfig {
        qkey: IPOIB_QKEY,
        pkey_index: 0,
        max_payload,
    };
    let notify: Arc<dyn UdQpNotify> = ipoib.clone();
    match ibdev.as_arc_borrow().open_ud_qp(port, &cfg, notify) {
        Err(e) if e == EINVAL => {
            cfg.max_payload = ud_mtu(max_payload);
            let notify: Arc<dyn UdQpNotify> = ipoib.clone();
            let qp = ibdev.as_arc_borrow().open_ud_qp(port, &cfg, notify)?;
            Ok((qp, cfg.max_payload))
        }
        r => r.map(|q| (q, max_payload)),
    }
}

/// The broadcast group's record as the interface of `dev_index`'s `port` joined it
/// (upstream `ib_sa_get_mcmember_rec()` of the IPoIB broadcast MGID: what rdma_cm takes the
/// SL, flow label and traffic class of an InfiniBand join from).
///
/// # Errors
///
/// `ENOENT` while the port has no interface or its interface has not joined.
pub fn broadcast_rec(dev_index: u32, port: u32) -> Result<McMemberRec> {
    let ipoib = crate::global::IPOIB
        .lock()
        .ifs
        .iter()
        .find(|r| r.ipoib.dev_index == dev_index && r.ipoib.port == port)
        .map(|r| r.ipoib.clone())
        .ok_or(ENOENT)?;
    let b = ipoib.dp.lock().bcast;
    b.map(|b| b.rec).ok_or(ENOENT)
}

/// Makes `port`'s interface (upstream `ipoib_add_port()`).
fn add_port(dev: &DeviceCore, ibdev: &Arc<dyn IbDevice>, port: u32) -> Result<Registered> {
    let attr = ibdev.query_port_attr(port)?;
    // upstream ib_find_pkey()/ipoib_pkey_dev_check_presence(): the P_Key at index 0.
    let pkey = super::full_member(dev.get_cached_pkey(port, 0)?);
    let gid = dev.query_gid(port, 0)?;
    let max_mtu = if mtu_bytes(attr.max_mtu).is_some() {
        attr.max_mtu
    } else {
        5
    };
    let max_ib_mtu = mtu_bytes(max_mtu).unwrap_or(4096);
    let active = mtu_bytes(attr.active_mtu).unwrap_or(max_ib_mtu);
    let ipoib = Arc::pin_init(
        pin_init!(Ipoib {
            dev_index: dev.index(),
            port,
            pkey,
            gid,
            max_mtu,
            qp <- kernel::new_spinlock_irq!(None, "ipoib_qp"),
            timer <- kernel::new_spinlock_irq!(None, "ipoib_timer"),
            ndev <- kernel::new_spinlock_irq!(NdevSlot { nd: None, closing: false }, "ipoib_ndev"),
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
    let r = register(dev, ibdev, &ipoib, port, max_ib_mtu, active);
    if r.is_err() {
        ipoib.close();
    }
    r
}

/// The worker, the QP and the interface of `add_port`; the caller closes `ipoib` on failure.
fn register(
    dev: &DeviceCore,
    ibdev: &Arc<dyn IbDevice>,
    ipoib: &Arc<Ipoib>,
    port: u32,
    max_ib_mtu: u32,
    active: u32,
) -> Result<Registered> {
    let timer = Timer::new(Arc::new(
        Worker {
            ipoib: ipoib.clone(),
        },
        GFP_KERNEL,
    )?)?;
    *ipoib.timer.lock() = Some(timer);
    let (qp, max_payload) = open_qp(ibdev, ipoib, port, max_ib_mtu)?;
    let qpn = qp.qpn();
    *ipoib.qp.lock() = Some(qp);
    let addr = HwAddr {
        flags: 0,
        qpn,
        gid: ipoib.gid,
    }
    .encode();
    let max_mtu = ud_mtu(max_ib_mtu).min(max_payload.saturating_sub(super::ENCAP_LEN as u32));
    let mtu = ud_mtu(active).min(max_mtu);
    let parent = dev.parent();
    let iface = Arc::new(
        Iface {
            ipoib: ipoib.clone(),
        },
        GFP_KERNEL,
    )?;
    let nd = NetDev::new(
        iface,
        parent.as_deref(),
        &NetDevConfig {
            link: Link::Infiniband {
                addr,
                broadcast: super::broadcast(ipoib.pkey),
            },
            mtu,
            min_mtu: ETH_MIN_MTU,
            max_mtu,
        },
    )?;
    ipoib.set_ndev(nd.device());
    Ok(Registered {
        ipoib: ipoib.clone(),
        nd,
    })
}

/// Unregisters an interface, then stops its worker and drops its QP (upstream
/// `ipoib_remove_one()`: `unregister_netdevice()` before the QP is destroyed).
fn remove_port(r: Registered) {
    let Registered { ipoib, nd } = r;
    let held = {
        let mut s = ipoib.ndev.lock();
        s.closing = true;
        s.nd.take()
    };
    // Unregistering waits for every reference.
    drop(held);
    drop(nd);
    ipoib.close();
}

/// IPoIB as a client of the core (upstream `ipoib_client`).
pub(crate) struct IpoibClient;

impl crate::client::Client for IpoibClient {
    fn name(&self) -> &'static CStr {
        c"ipoib"
    }

    // upstream ipoib_add_one(): each InfiniBand port; no interface is EOPNOTSUPP.
    fn add(&self, dev: &DeviceCore) -> Result {
        let ibdev = crate::registry::device_arc(dev.index()).ok_or(ENODEV)?;
        let mut made = 0;
        for port in 1..=dev.phys_port_cnt() {
            let ib = dev
                .port_immutable(port)
                .is_ok_and(|p| p.link_layer == LinkLayer::Infiniband);
            if !ib {
                continue;
            }
            let r = match add_port(dev, &ibdev, port) {
                Ok(r) => r,
                Err(e) if e == EOPNOTSUPP => break,
                Err(e) => {
                    ibdev_warn!(dev.name(), "no IPoIB interface on port {}: {:?}\n", port, e);
                    continue;
                }
            };
            if let Err((e, r)) = push(r) {
                remove_port(r);
                return Err(e);
            }
            made += 1;
        }
        if made == 0 {
            return Err(EOPNOTSUPP);
        }
        Ok(())
    }

    // upstream ipoib_event(): the port's interface.
    fn event(&self, dev: &DeviceCore, ev: &Event) {
        let ipoib = crate::global::IPOIB
            .lock()
            .ifs
            .iter()
            .find(|r| r.ipoib.dev_index == dev.index() && r.ipoib.port == ev.port)
            .map(|r| r.ipoib.clone());
        if let Some(i) = ipoib {
            i.port_event(ev.kind);
        }
    }

    // upstream ipoib_remove_one(): one interface at a time, each unregistered outside the
    // table's lock (unregistering takes the RTNL lock, under which a lookup may run).
    fn remove(&self, dev: &DeviceCore) {
        loop {
            let r = {
                let mut t = crate::global::IPOIB.lock();
                let Some(i) = t.ifs.iter().position(|r| r.ipoib.dev_index == dev.index()) else {
                    return;
                };
                t.ifs.remove(i)
            };
            if let Ok(r) = r {
                remove_port(r);
            }
        }
    }
}

/// Adds an interface to the table; on failure it is handed back.
fn push(r: Registered) -> core::result::Result<(), (Error, Registered)> {
    let mut t = crate::global::IPOIB.lock();
    if let Err(e) = t.ifs.reserve(1, GFP_KERNEL) {
        return Err((e.into(), r));
    }
    t.ifs.push_within_capacity(r).map_err(|e| (ENOMEM, e.0))
}

/// Frees the table's storage at module exit (every interface went with the client).
pub(crate) fn shutdown() {
    let old = core::mem::take(&mut crate::global::IPOIB.lock().ifs);
    for r in old {
        remove_port(r);
    }
}
