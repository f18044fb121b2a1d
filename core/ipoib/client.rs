// SPDX-License-Identifier: GPL-2.0

//! The IPoIB interfaces of the devices (upstream `ipoib_main.c`: `ipoib_add_one()`,
//! `ipoib_add_port()`, `ipoib_remove_one()`): a core client ([`IpoibClient`]) that gives each
//! InfiniBand port of a device whose driver has the `open_ud_qp` op an `ib%d` interface, and
//! the table of those interfaces.
//!
//! A port's interface is made in this order, and unmade in reverse when the device goes (the
//! client's `remove`) or the module unloads: the port's state and worker ([`Ipoib`]), its UD QP
//! (the driver's `open_ud_qp`, P_Key index 0, the Q_Key [`IPOIB_QKEY`], datagrams up to the
//! port's largest MTU), then the `ib%d` `NetDev` of type `ARPHRD_INFINIBAND`: its address the
//! flags 0, the QP's number and the port's GID at index 0, its broadcast address the IPv4
//! broadcast group of the P_Key at index 0, its MTU the datagram MTU of the port's active MTU
//! (upstream `IPOIB_UD_MTU()`: 2044 on a 2048-byte MTU), its sysfs parent the IB device's
//! parent (upstream `SET_NETDEV_DEV(dev, hca->dev.parent)`). The interface is unregistered
//! before the QP drops. A driver without the op (`EOPNOTSUPP`) gets no interface; a port whose
//! QP or interface fails gets none, the others theirs.

use super::iface::{Iface, Ipoib, IPOIB_QKEY};
use super::{mtu_bytes, ud_mtu, HwAddr};
use crate::attr::LinkLayer;
use crate::event::Event;
use crate::ib_device::{DeviceCore, IbDevice};
use crate::netdev::{Link, NetDev, NetDevConfig, ETH_MIN_MTU};
use crate::ud_qp::{UdQp, UdQpConfig, UdQpNotify};
use kernel::prelude::*;
use kernel::sync::Arc;

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

/// Opens `port`'s UD QP for datagrams of up to `max_payload` bytes (the IPoIB header and the
/// payload: the port's largest MTU).
fn open_qp(
    ibdev: &Arc<dyn IbDevice>,
    ipoib: &Arc<Ipoib>,
    port: u32,
    max_payload: u32,
) -> Result<Arc<dyn UdQp>> {
    let cfg = UdQpConfig {
        qkey: IPOIB_QKEY,
        pkey_index: 0,
        max_payload,
    };
    let notify: Arc<dyn UdQpNotify> = ipoib.clone();
    ibdev.as_arc_borrow().open_ud_qp(port, &cfg, notify)
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
    let ipoib = Ipoib::new(dev.index(), port, pkey, gid, max_mtu)?;
    let r = register(dev, ibdev, &ipoib, port, max_ib_mtu, active);
    if r.is_err() {
        ipoib.close();
    }
    r
}

/// The QP and the interface of `add_port`; the caller closes `ipoib` on failure.
fn register(
    dev: &DeviceCore,
    ibdev: &Arc<dyn IbDevice>,
    ipoib: &Arc<Ipoib>,
    port: u32,
    max_ib_mtu: u32,
    active: u32,
) -> Result<Registered> {
    let qp = open_qp(ibdev, ipoib, port, max_ib_mtu)?;
    let qpn = qp.qpn();
    ipoib.set_qp(qp);
    let addr = HwAddr {
        flags: 0,
        qpn,
        gid: ipoib.gid,
    }
    .encode();
    let max_mtu = ud_mtu(max_ib_mtu);
    let mtu = ud_mtu(active).min(max_mtu);
    let parent = dev.parent();
    let iface = Ipoib::iface(ipoib)?;
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
    ipoib.release_ndev();
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
                // A failed add gets no remove: the ports made before go here.
                remove_port(r);
                self.remove(dev);
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
