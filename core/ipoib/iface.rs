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

use super::{mtu_bytes, ud_mtu, HwAddr};
use crate::attr::{Gid, LinkLayer};
use crate::ib_device::{DeviceCore, IbDevice};
use crate::netdev::{Link, NetDev, NetDevConfig, NetDevOps, NetDevice, ETH_MIN_MTU};
use crate::ud_qp::{UdQp, UdQpConfig, UdQpNotify};
use crate::wq::{Timer, TimerFire};
use kernel::prelude::*;
use kernel::sync::{Arc, SpinLockIrq};

/// The Q_Key of the IPoIB broadcast group upstream's SMs create (opensm's default) and that
/// an interface asks for when it creates the group: `0x0b1b`.
pub const IPOIB_QKEY: u32 = 0x0b1b;

/// One port's interface state (upstream `struct ipoib_dev_priv`).
#[pin_data]
pub(crate) struct Ipoib {
    dev_index: u32,
    port: u32,
    /// The P_Key of index 0 with the full-member bit.
    pkey: u16,
    /// The port's GID at index 0.
    gid: Gid,
    /// The UD QP (taken out when the interface goes).
    #[pin]
    qp: SpinLockIrq<Option<Arc<dyn UdQp>>>,
    /// The worker that polls the QP (stopped when the interface goes).
    #[pin]
    timer: SpinLockIrq<Option<Timer<Worker>>>,
}

impl Ipoib {
    /// The QP, if the interface is not going away.
    fn qp(&self) -> Option<Arc<dyn UdQp>> {
        self.qp.lock().clone()
    }

    /// Stops the worker and drops the QP (after the interface is unregistered).
    fn close(&self) {
        let timer = self.timer.lock().take();
        drop(timer);
        let qp = self.qp.lock().take();
        drop(qp);
    }

    /// Takes the QP's completions.
    fn poll(&self) {
        let Some(qp) = self.qp() else {
            return;
        };
        qp.poll(&mut |_c| {});
    }
}

impl UdQpNotify for Ipoib {
    // From the CQ's completion handler: only arms the worker.
    fn notify(&self) {
        if let Some(t) = &*self.timer.lock() {
            t.arm(0);
        }
    }
}

/// The worker of one port (the core's queue: process context).
struct Worker {
    ipoib: Arc<Ipoib>,
}

impl TimerFire for Worker {
    fn fire(&self) {
        self.ipoib.poll();
    }
}

/// What the `ib%d` interface's ops run on. The data path is not done: the interface comes up
/// without a carrier and drops what it is given.
pub(crate) struct Iface {
    #[expect(dead_code)]
    ipoib: Arc<Ipoib>,
}

impl NetDevOps for Iface {
    fn open(&self, _dev: &NetDevice) -> Result {
        Ok(())
    }

    fn stop(&self, _dev: &NetDevice) {}

    fn start_xmit(&self, _dev: &NetDevice, _frame: &[u8]) -> bool {
        false
    }

    fn change_mtu(&self, _dev: &NetDevice, _mtu: u32) -> Result {
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

/// Makes `port`'s interface (upstream `ipoib_add_port()`).
fn add_port(dev: &DeviceCore, ibdev: &Arc<dyn IbDevice>, port: u32) -> Result<Registered> {
    let attr = ibdev.query_port_attr(port)?;
    // upstream ib_find_pkey()/ipoib_pkey_dev_check_presence(): the P_Key at index 0.
    let pkey = super::full_member(dev.get_cached_pkey(port, 0)?);
    let gid = dev.query_gid(port, 0)?;
    let max_ib_mtu = mtu_bytes(attr.max_mtu).unwrap_or(4096);
    let active = mtu_bytes(attr.active_mtu).unwrap_or(max_ib_mtu);
    let ipoib = Arc::pin_init(
        pin_init!(Ipoib {
            dev_index: dev.index(),
            port,
            pkey,
            gid,
            qp <- kernel::new_spinlock_irq!(None, "ipoib_qp"),
            timer <- kernel::new_spinlock_irq!(None, "ipoib_timer"),
        }),
        GFP_KERNEL,
    )?;
    let timer = Timer::new(Arc::new(
        Worker {
            ipoib: ipoib.clone(),
        },
        GFP_KERNEL,
    )?)?;
    *ipoib.timer.lock() = Some(timer);
    let cfg = UdQpConfig {
        qkey: IPOIB_QKEY,
        pkey_index: 0,
        max_payload: max_ib_mtu,
    };
    let notify: Arc<dyn UdQpNotify> = ipoib.clone();
    let qp = match ibdev.as_arc_borrow().open_ud_qp(port, &cfg, notify) {
        Ok(q) => q,
        Err(e) => {
            ipoib.close();
            return Err(e);
        }
    };
    let qpn = qp.qpn();
    *ipoib.qp.lock() = Some(qp);
    let addr = HwAddr { flags: 0, qpn, gid }.encode();
    let mtu = ud_mtu(active);
    let parent = dev.parent();
    let nd = NetDev::new(
        Arc::new(
            Iface {
                ipoib: ipoib.clone(),
            },
            GFP_KERNEL,
        )?,
        parent.as_deref(),
        &NetDevConfig {
            link: Link::Infiniband {
                addr,
                broadcast: super::broadcast(pkey),
            },
            mtu,
            min_mtu: ETH_MIN_MTU,
            max_mtu: ud_mtu(max_ib_mtu).max(mtu),
        },
    );
    match nd {
        Ok(nd) => Ok(Registered { ipoib, nd }),
        Err(e) => {
            ipoib.close();
            Err(e)
        }
    }
}

/// Unregisters an interface, then stops its worker and drops its QP (upstream
/// `ipoib_remove_one()`: `unregister_netdevice()` before the QP is destroyed).
fn remove_port(r: Registered) {
    let Registered { ipoib, nd } = r;
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
