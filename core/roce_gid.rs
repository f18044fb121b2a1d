// SPDX-License-Identifier: GPL-2.0

//! RoCE GID tables owned by the core, built from netdevs and their addresses (upstream
//! `roce_gid_mgmt.c` and the RoCE half of `cache.c`).
//!
//! A port whose driver has `add_gid` and `del_gid` and which speaks RoCE (upstream
//! `rdma_cap_roce_gid_table()`) gets its GID table from the core: the driver binds the port to
//! a netdev ([`Device::set_netdev`], upstream `ib_device_set_netdev()`); the core then adds
//! the default GIDs (`fe80::` and the netdev's MAC as a modified EUI-64, one per supported
//! RoCE type, at the reserved indexes 0 (v1) and 1 (v2): upstream
//! `ib_cache_gid_set_default_gid()`) and one GID per IP address of the netdev and of its upper
//! devices (VLANs) per RoCE type (`::ffff:a.b.c.d` for IPv4: `rdma_ip2gid()`), each in the
//! first free non-reserved index, v1 before v2, IPv4 addresses before IPv6 ones
//! (`update_gid()`, `_add_netdev_ips()`). Every entry is programmed with the driver's
//! `add_gid` and cleared with `del_gid`, and every change raises `IB_EVENT_GID_CHANGE`.
//!
//! The netdevice, inetaddr and inet6addr notifiers ([`RoceGidMgmt`], registered by the
//! module's `init`) queue each event on the ordered GID queue (upstream `gid_cache_wq`),
//! where it is applied to every port bound to the event's netdev (or to the netdev under a
//! VLAN): `NETDEV_REGISTER`/`UP` add the default and address GIDs, `UNREGISTER` deletes every
//! GID of the netdev (and unbinds the ports bound to a netdev that goes away; one that moves
//! to another namespace stays bound), `CHANGEADDR` deletes and re-adds,
//! `CHANGEUPPER` adds or deletes the GIDs of the upper device, an address added or removed adds
//! or deletes its GIDs. Bonding (the bond master's GIDs, inactive slaves) is not handled.
//!
//! Ports without a netdev, and drivers without `add_gid`, keep the table the driver reports
//! through `query_gid` (`cache.rs`).

use crate::attr::{
    Gid, GidAttr, GidType, LinkLayer, PortImmutable, RDMA_CORE_CAP_PROT_ROCE,
    RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP,
};
use crate::device::Device;
use crate::driver::Driver;
use crate::event::{self, Event, EventKind};
use crate::ib_device::{DeviceCore, IbDevice, PortCache, PortData};
use crate::net_notify::{IpAddr, NetDevRef, NetEvent, NetHandler, NetNotifier};
use crate::registry;
use kernel::prelude::*;
use kernel::sync::atomic::Relaxed;
use kernel::sync::Arc;

/// What identifies a table entry (upstream `find_gid()` with `GID_ATTR_FIND_MASK_GID`,
/// `_GID_TYPE` and `_NETDEV`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GidKey {
    /// The GID.
    pub gid: Gid,
    /// Its type.
    pub gid_type: GidType,
    /// The netdev's ifindex.
    pub ifindex: u32,
}

/// The result of [`find_gid`]: the index of a matching entry, and the first free index
/// usable for the kind of GID looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// The index of the entry that matches.
    pub found: Option<usize>,
    /// The first free index of the right kind (reserved for default GIDs, or not).
    pub empty: Option<usize>,
}

/// upstream `find_gid()`: the entry of `table` matching `key`, and the first free index.
/// With `default`, only the indexes of `default_mask` match and are free (upstream
/// `GID_ATTR_FIND_MASK_DEFAULT` and `is_gid_index_default()`); without it, a match may be
/// at any index (an IPv6 link-local address equal to the default GID is that entry), but
/// only a non-reserved index is free.
pub fn find_gid(table: &[Option<GidKey>], key: &GidKey, default: bool, default_mask: u64) -> Found {
    let mut r = Found {
        found: None,
        empty: None,
    };
    for (i, e) in table.iter().enumerate() {
        let is_default = i < 64 && default_mask & (1u64 << i) != 0;
        match e {
            None => {
                if r.empty.is_none() && is_default == default {
                    r.empty = Some(i);
                }
            }
            Some(k) => {
                if r.found.is_none() && k == key && (!default || is_default) {
                    r.found = Some(i);
                }
            }
        }
    }
    r
}

/// upstream `gid_table_reserve_default()`: one reserved index per supported GID type,
/// from index 0.
pub fn default_gid_mask(types: &[GidType], table_len: u32) -> u64 {
    let n = types.len().min(table_len as usize).min(64);
    if n == 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// upstream `roce_gid_type_mask_support()`: the GID types of a RoCE port, in
/// `enum ib_gid_type` order (v1, then v2); none for a port that is not RoCE.
pub fn port_gid_types(core_cap_flags: u32) -> KVec<GidType> {
    let mut v = KVec::new();
    for (flag, t) in [
        (RDMA_CORE_CAP_PROT_ROCE, GidType::RoceV1),
        (RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP, GidType::RoceV2),
    ] {
        if core_cap_flags & flag != 0 {
            // At most two entries: a failed push leaves fewer types, never a crash.
            let _ = v.push(t, GFP_KERNEL);
        }
    }
    v
}

/// upstream `make_default_gid()`: `fe80::/64` with the MAC's modified EUI-64
/// (`addrconf_ifid_eui48()`).
pub fn default_gid(mac: &[u8; 6]) -> Gid {
    let mut g = [0u8; 16];
    g[0] = 0xfe;
    g[1] = 0x80;
    g[8] = mac[0] ^ 2;
    g[9] = mac[1];
    g[10] = mac[2];
    g[11] = 0xff;
    g[12] = 0xfe;
    g[13] = mac[3];
    g[14] = mac[4];
    g[15] = mac[5];
    Gid(g)
}

/// upstream `rdma_ip2gid()`: an IPv4 address as the IPv4-mapped IPv6 address
/// `::ffff:a.b.c.d`, an IPv6 address as itself.
pub fn ip_to_gid(a: &IpAddr) -> Gid {
    match a {
        IpAddr::V4(v4) => {
            let mut g = [0u8; 16];
            g[10] = 0xff;
            g[11] = 0xff;
            g[12..].copy_from_slice(v4);
            Gid(g)
        }
        IpAddr::V6(v6) => Gid(*v6),
    }
}

/// The GID types of a port whose table the core owns; `None` for any other port.
fn roce_port_types(p: &PortData) -> Option<KVec<GidType>> {
    if !p.cache.roce_table {
        return None;
    }
    Some(port_gid_types(p.immutable.core_cap_flags))
}

/// Whether the core owns the GID table of a port (upstream `rdma_cap_roce_gid_table()`): an
/// Ethernet port speaking RoCE of a driver with `add_gid` and `del_gid`.
pub(crate) fn is_roce_table(imm: &PortImmutable, has_gid_ops: bool) -> bool {
    has_gid_ops
        && imm.link_layer == LinkLayer::Ethernet
        && imm.core_cap_flags & (RDMA_CORE_CAP_PROT_ROCE | RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP) != 0
}

/// Sets up an empty core-owned table in `c` (upstream `_gid_table_setup_one()` with
/// `gid_table_reserve_default()`): every entry empty, the default indexes reserved.
///
/// # Errors
///
/// `ENOMEM`.
pub(crate) fn setup_table(c: &mut PortCache, imm: &PortImmutable) -> Result {
    let types = port_gid_types(imm.core_cap_flags);
    let len = imm.gid_tbl_len as usize;
    c.gids = KVec::from_elem(Gid::ZERO, len, GFP_KERNEL)?;
    c.gid_types = KVec::from_elem(GidType::RoceV1, len, GFP_KERNEL)?;
    let mut ndevs = KVec::with_capacity(len, GFP_KERNEL)?;
    for _ in 0..len {
        ndevs.push(None, GFP_KERNEL)?;
    }
    c.gid_ndevs = ndevs;
    c.default_gid_mask = default_gid_mask(&types, imm.gid_tbl_len);
    c.roce_table = true;
    Ok(())
}

/// The table of `port` as keys, for [`find_gid`]; `None` when the core does not own it.
fn table_keys(dev: &DeviceCore, port: u32) -> Result<Option<(KVec<Option<GidKey>>, u64)>> {
    let info = dev.info.lock();
    let p = crate::ib_device::port_data(&info, port)?;
    if !p.cache.roce_table {
        return Ok(None);
    }
    let c = &p.cache;
    let mut keys = KVec::with_capacity(c.gids.len(), GFP_KERNEL)?;
    for (i, g) in c.gids.iter().enumerate() {
        let k = match c.gid_ndevs.get(i) {
            Some(Some(nd)) => Some(GidKey {
                gid: *g,
                gid_type: c.gid_types.get(i).copied().unwrap_or_default(),
                ifindex: nd.ifindex(),
            }),
            _ => None,
        };
        keys.push(k, GFP_KERNEL)?;
    }
    Ok(Some((keys, c.default_gid_mask)))
}

/// [`find_gid`] in the table of `port`; `None` when the core does not own it.
fn lookup(dev: &dyn IbDevice, port: u32, key: &GidKey, default: bool) -> Result<Option<Found>> {
    Ok(table_keys(dev.core(), port)?.map(|(keys, mask)| find_gid(&keys, key, default, mask)))
}

/// upstream `rdma_read_gid_l2_fields()` and the attribute `add_modify_gid()` hands the
/// driver.
fn gid_attr(port: u32, index: usize, key: &GidKey, ndev: &NetDevRef) -> Result<GidAttr> {
    Ok(GidAttr {
        gid: key.gid,
        gid_type: key.gid_type,
        index: u32::try_from(index)?,
        port,
        ndev_ifindex: key.ifindex,
        mac: ndev.mac()?,
        vlan_id: ndev.vlan_id(),
    })
}

/// upstream `dispatch_gid_change_event()`: `IB_EVENT_GID_CHANGE` to the device's handlers
/// and clients (a registered device's; the clients are added after the table is set up).
fn gid_changed(dev: &dyn IbDevice, port: u32) {
    if dev.core().is_registered() {
        event::deliver(
            dev.core(),
            &Event {
                kind: EventKind::GidChange,
                port,
            },
        );
    }
}

/// Writes entry `index` of `port` (`None`: empties it) and returns the old netdev
/// reference, to drop outside the lock.
fn set_entry(
    dev: &DeviceCore,
    port: u32,
    index: usize,
    e: Option<(Gid, GidType, NetDevRef)>,
) -> Option<NetDevRef> {
    let mut info = dev.info.lock();
    let p = info.ports.get_mut((port as usize).checked_sub(1)?)?;
    let c = &mut p.cache;
    let (gid, t, nd) = match e {
        Some((g, t, nd)) => (g, t, Some(nd)),
        None => (Gid::ZERO, GidType::RoceV1, None),
    };
    *c.gids.get_mut(index)? = gid;
    *c.gid_types.get_mut(index)? = t;
    core::mem::replace(c.gid_ndevs.get_mut(index)?, nd)
}

/// upstream `__ib_cache_gid_add()`: adds `gid` of `gid_type` for `ndev` unless the table has
/// it, in the first free index of its kind, programming it with the driver's `add_gid`.
/// The caller holds `gid_lock`.
///
/// # Errors
///
/// `EINVAL` for the zero GID or a bad port, `ENOSPC` when no index of the kind is free, the
/// driver's error (the entry stays empty), `ENOMEM`.
fn gid_add(dev: &dyn IbDevice, port: u32, key: &GidKey, ndev: &NetDevRef, default: bool) -> Result {
    // upstream: the zero GID is never added (IB spec 1.3, 4.1.1 (6)).
    if key.gid.is_zero() {
        return Err(EINVAL);
    }
    let f = lookup(dev, port, key, default)?.ok_or(EINVAL)?;
    if f.found.is_some() {
        return Ok(());
    }
    let index = f.empty.ok_or(ENOSPC)?;
    let attr = gid_attr(port, index, key, ndev)?;
    dev.gid_op(true, &attr).inspect_err(|e| {
        ibdev_err!(
            dev.core().name(),
            "add_gid of port {} index {} failed: {:?}\n",
            port,
            index,
            e
        )
    })?;
    drop(set_entry(
        dev.core(),
        port,
        index,
        Some((key.gid, key.gid_type, ndev.clone())),
    ));
    gid_changed(dev, port);
    Ok(())
}

/// upstream `del_gid()`: the driver's `del_gid` (its error is logged; the entry is emptied
/// anyway), then the entry. The caller holds `gid_lock` and sends the change event.
fn del_index(dev: &dyn IbDevice, port: u32, index: usize, key: &GidKey) {
    let old = set_entry(dev.core(), port, index, None);
    if let Some(nd) = &old {
        let r = gid_attr(port, index, key, nd).and_then(|a| dev.gid_op(false, &a));
        if let Err(e) = r {
            ibdev_err!(
                dev.core().name(),
                "del_gid of port {} index {} failed: {:?}\n",
                port,
                index,
                e
            );
        }
    }
    drop(old);
}

/// upstream `_ib_cache_gid_del()`: deletes `gid` of `gid_type` for `ndev` if the table has
/// it. The caller holds `gid_lock`.
fn gid_del(dev: &dyn IbDevice, port: u32, key: &GidKey, default: bool) -> Result {
    if let Some(i) = lookup(dev, port, key, default)?.and_then(|f| f.found) {
        del_index(dev, port, i, key);
        gid_changed(dev, port);
    }
    Ok(())
}

/// upstream `ib_cache_gid_del_all_netdev_gids()`: deletes every GID of `ndev` (`None`: every
/// GID). The caller holds `gid_lock`.
fn gid_del_all(dev: &dyn IbDevice, port: u32, ndev: Option<&NetDevRef>) -> Result {
    let Some((keys, _)) = table_keys(dev.core(), port)? else {
        return Ok(());
    };
    let ifindex = ndev.map(|n| n.ifindex());
    let mut deleted = false;
    for (i, k) in keys.iter().enumerate() {
        if let Some(k) = k {
            if ifindex.is_none_or(|x| x == k.ifindex) {
                del_index(dev, port, i, k);
                deleted = true;
            }
        }
    }
    if deleted {
        gid_changed(dev, port);
    }
    Ok(())
}

/// upstream `update_gid()` (`default`: `ib_cache_gid_set_default_gid()`): `gid` of `ndev`
/// added or deleted once per RoCE type of the port (v1, then v2); default GIDs go to the
/// reserved indexes. upstream looks at no result; a full table is logged.
fn update_gid(dev: &dyn IbDevice, port: u32, add: bool, gid: Gid, ndev: &NetDevRef, default: bool) {
    let Ok(types) = port_types(dev, port) else {
        return;
    };
    for t in types.iter() {
        let key = GidKey {
            gid,
            gid_type: *t,
            ifindex: ndev.ifindex(),
        };
        let r = if add {
            gid_add(dev, port, &key, ndev, default)
        } else {
            gid_del(dev, port, &key, default)
        };
        if let Err(e) = r {
            pr_debug!("ib_core_rs: GID update on port {} failed: {:?}\n", port, e);
        }
    }
}

/// The GID types of a port whose table the core owns (empty otherwise).
fn port_types(dev: &dyn IbDevice, port: u32) -> Result<KVec<GidType>> {
    let info = dev.core().info.lock();
    let p = crate::ib_device::port_data(&info, port)?;
    Ok(roce_port_types(p).unwrap_or_default())
}

/// upstream `ib_cache_gid_set_default_gid()`: the default GID of `ndev` for every RoCE type,
/// in the reserved indexes, added or deleted.
fn set_default_gids(dev: &dyn IbDevice, port: u32, ndev: &NetDevRef, add: bool) {
    if let Ok(mac) = ndev.mac() {
        update_gid(dev, port, add, default_gid(&mac), ndev, true);
    }
}

/// upstream `_add_netdev_ips()`: the GIDs of every IPv4, then every IPv6 address of `ndev`.
fn add_netdev_ips(dev: &dyn IbDevice, port: u32, ndev: &NetDevRef) {
    if let Ok(v4) = ndev.ipv4_addrs() {
        for a in v4.iter() {
            update_gid(dev, port, true, ip_to_gid(&IpAddr::V4(*a)), ndev, false);
        }
    }
    if let Ok(v6) = ndev.ipv6_addrs() {
        for a in v6.iter() {
            update_gid(dev, port, true, ip_to_gid(&IpAddr::V6(*a)), ndev, false);
        }
    }
}

/// upstream `add_netdev_upper_ips()`/`handle_netdev_upper()`: `ndev`'s address GIDs, then
/// those of each of its upper devices.
fn add_netdev_upper_ips(dev: &dyn IbDevice, port: u32, ndev: &NetDevRef) {
    add_netdev_ips(dev, port, ndev);
    if let Ok(uppers) = ndev.uppers() {
        for u in uppers.iter() {
            add_netdev_ips(dev, port, u);
        }
    }
}

/// upstream `del_netdev_upper_ips()`: every GID of `ndev` and of each of its upper devices.
fn del_netdev_upper_ips(dev: &dyn IbDevice, port: u32, ndev: &NetDevRef) {
    let _ = gid_del_all(dev, port, Some(ndev));
    if let Ok(uppers) = ndev.uppers() {
        for u in uppers.iter() {
            let _ = gid_del_all(dev, port, Some(u));
        }
    }
}

/// upstream `is_eth_port_of_netdev_filter()` without bonding: `cookie` is the port's netdev,
/// a VLAN device on it, or one of its upper devices.
fn is_eth_port_of_netdev(rdma_ndev: &NetDevRef, cookie: &NetDevRef) -> bool {
    if rdma_ndev == cookie {
        return true;
    }
    if let Some(real) = cookie.vlan_real_dev() {
        if &real == rdma_ndev {
            return true;
        }
    }
    rdma_ndev.has_upper(cookie)
}

/// upstream `upper_device_filter()`.
fn is_upper_of(rdma_ndev: &NetDevRef, cookie: &NetDevRef) -> bool {
    rdma_ndev == cookie || rdma_ndev.has_upper(cookie)
}

/// upstream `rdma_roce_rescan_port()` (`enum_all_gids_of_dev_cb()` for the port's netdev):
/// the default GIDs, then the address GIDs of the netdev and of its upper devices. The
/// caller holds `gid_lock`.
fn rescan_port(dev: &dyn IbDevice, port: u32, ndev: &NetDevRef) {
    set_default_gids(dev, port, ndev, true);
    add_netdev_upper_ips(dev, port, ndev);
}

/// The netdev bound to `port`, held.
pub(crate) fn port_netdev(dev: &DeviceCore, port: u32) -> Option<NetDevRef> {
    let i = (port as usize).checked_sub(1)?;
    dev.netdevs.lock().get(i)?.clone()
}

/// Binds `port` to `ndev` (upstream `ib_device_set_netdev()`), for [`Device::set_netdev`].
/// On a device whose GID tables take updates, the GIDs of the old netdev go and those of the
/// new one come (what upstream mlx5 does after the call: `roce_del_all_netdev_gids()`,
/// `rdma_roce_rescan_port()`).
pub(crate) fn set_netdev(dev: &dyn IbDevice, port: u32, ndev: Option<NetDevRef>) -> Result {
    let core = dev.core();
    if port == 0 || port > core.phys_port_cnt() {
        return Err(EINVAL);
    }
    let i = port as usize - 1;
    let _g = core.gid_lock.lock();
    let old = {
        let mut v = core.netdevs.lock();
        while v.len() < core.phys_port_cnt() as usize {
            v.push(None, GFP_KERNEL)?;
        }
        let slot = v.get_mut(i).ok_or(EINVAL)?;
        if *slot == ndev {
            return Ok(());
        }
        core::mem::replace(slot, ndev.clone())
    };
    if core.gid_updates.load(Relaxed) {
        if let Some(o) = &old {
            let _ = gid_del_all(dev, port, Some(o));
        }
        if let Some(n) = &ndev {
            rescan_port(dev, port, n);
        }
    }
    drop(old);
    Ok(())
}

/// Enables the GID updates of a registering device and fills the tables of its bound ports
/// (upstream `gid_table_setup_one()`: `ib_device_enable_gid_updates()`,
/// `rdma_roce_rescan_device()`).
pub(crate) fn enable(dev: &dyn IbDevice) {
    let core = dev.core();
    let _g = core.gid_lock.lock();
    core.gid_updates.store(true, Relaxed);
    for port in 1..=core.phys_port_cnt() {
        if let Some(n) = port_netdev(core, port) {
            rescan_port(dev, port, &n);
        }
    }
}

/// Disables the GID updates and empties the core-owned tables through the driver's
/// `del_gid` (upstream `ib_cache_cleanup_one()`: `ib_device_disable_gid_updates()`,
/// `gid_table_cleanup_one()`); with `unbind`, the netdev bindings go too (upstream
/// `free_netdevs()` at unregistration; a failed registration keeps them).
pub(crate) fn disable(dev: &dyn IbDevice, unbind: bool) {
    let core = dev.core();
    let bound = {
        let _g = core.gid_lock.lock();
        core.gid_updates.store(false, Relaxed);
        for port in 1..=core.phys_port_cnt() {
            let _ = gid_del_all(dev, port, None);
        }
        if unbind {
            core::mem::take(&mut *core.netdevs.lock())
        } else {
            KVec::new()
        }
    };
    drop(bound);
}

/// Drops the netdev bindings (upstream `free_netdevs()` at dealloc).
pub(crate) fn free_netdevs(dev: &DeviceCore) {
    let bound = core::mem::take(&mut *dev.netdevs.lock());
    drop(bound);
}

/// One queued event.
enum Work {
    Netdev(NetEvent, NetDevRef),
    Addr(bool, NetDevRef, IpAddr),
}

/// Runs `f(dev, port, rdma_ndev)` for every port bound to a netdev of every device whose GID
/// tables take updates (upstream `ib_enum_all_roce_netdevs()`), under the device's
/// `gid_lock`.
fn for_each_bound_port(f: &dyn Fn(&dyn IbDevice, u32, &NetDevRef)) {
    let mut after = None;
    while let Some((index, dev)) =
        registry::next_where(after, |d| d.core().gid_updates.load(Relaxed))
    {
        after = Some(index);
        let core = dev.core();
        let _g = core.gid_lock.lock();
        // Checked again under the lock: unregistration clears it before emptying the tables.
        if !core.gid_updates.load(Relaxed) {
            continue;
        }
        for port in 1..=core.phys_port_cnt() {
            if let Some(n) = port_netdev(core, port) {
                f(&*dev, port, &n);
            }
        }
    }
}

/// upstream `netdevice_event_work_handler()` and `update_gid_event_work_handler()`.
fn run(w: Work) {
    match w {
        Work::Netdev(NetEvent::Register | NetEvent::Up, nd) => {
            // add_default_gid_cmd (is_ndev_for_default_gid_filter), add_cmd.
            for_each_bound_port(&|dev, port, rdma| {
                if *rdma == nd {
                    set_default_gids(dev, port, &nd, true);
                }
                if is_eth_port_of_netdev(rdma, &nd) {
                    add_netdev_ips(dev, port, &nd);
                }
            });
        }
        Work::Netdev(NetEvent::Unregister { moving }, nd) => {
            // del_cmd (pass_all_filter): every GID of the netdev goes. A netdev that goes
            // away is unbound from its ports, as upstream mlx5_netdev_event() does with
            // ib_device_set_netdev(NULL); one that moves to another namespace stays bound
            // (upstream mlx5 binds it again on its NETDEV_REGISTER there), and the REGISTER
            // that follows adds its GIDs again (devices are shared by every namespace).
            for_each_bound_port(&|dev, port, _| {
                let _ = gid_del_all(dev, port, Some(&nd));
            });
            if !moving {
                unbind_all(&nd);
            }
        }
        Work::Netdev(NetEvent::ChangeAddr, nd) => {
            let registered = nd.is_registered();
            for_each_bound_port(&|dev, port, rdma| {
                if is_eth_port_of_netdev(rdma, &nd) {
                    let _ = gid_del_all(dev, port, Some(&nd));
                    if registered {
                        if *rdma == nd {
                            set_default_gids(dev, port, &nd, true);
                        }
                        add_netdev_ips(dev, port, &nd);
                    }
                }
            });
        }
        Work::Netdev(NetEvent::LinkUpper(upper), _) => {
            // ndev_event_link(): add_cmd_upper_ips for the upper device.
            for_each_bound_port(&|dev, port, rdma| {
                if is_eth_port_of_netdev(rdma, &upper) {
                    add_netdev_upper_ips(dev, port, &upper);
                }
            });
        }
        Work::Netdev(NetEvent::UnlinkUpper(upper), nd) => {
            // ndev_event_unlink(): upper_ips_del_cmd, then add_cmd for the event's netdev.
            for_each_bound_port(&|dev, port, rdma| {
                if is_upper_of(rdma, &upper) {
                    del_netdev_upper_ips(dev, port, &upper);
                }
                if is_eth_port_of_netdev(rdma, &nd) {
                    add_netdev_ips(dev, port, &nd);
                }
            });
        }
        Work::Netdev(NetEvent::Down | NetEvent::Change, _) => {}
        Work::Addr(up, nd, a) => {
            let gid = ip_to_gid(&a);
            for_each_bound_port(&|dev, port, rdma| {
                if is_eth_port_of_netdev(rdma, &nd) {
                    update_gid(dev, port, up, gid, &nd, false);
                }
            });
        }
    }
}

/// Every port bound to `nd` is unbound (its reference must go for the netdev's
/// unregistration to finish).
fn unbind_all(nd: &NetDevRef) {
    let mut after = None;
    while let Some((index, dev)) =
        registry::next_where(after, |d| d.core().gid_updates.load(Relaxed))
    {
        after = Some(index);
        let core = dev.core();
        let _g = core.gid_lock.lock();
        let mut taken = KVec::new();
        {
            let mut v = core.netdevs.lock();
            for slot in v.iter_mut() {
                if slot.as_ref() == Some(nd) {
                    if let Some(old) = slot.take() {
                        // On failure the reference drops here, under the lock: still fine.
                        let _ = taken.push(old, GFP_KERNEL);
                    }
                }
            }
        }
        drop(taken);
    }
}

/// The notifiers' handler (upstream `netdevice_event()`, `inetaddr_event()`,
/// `inet6addr_event()`): each event is queued, with its netdev held, on the ordered GID
/// queue.
pub(crate) struct RoceGidMgmt;

impl RoceGidMgmt {
    fn queue(w: Work) {
        // upstream: the work is allocated with GFP_ATOMIC (address events) and the event is
        // lost when that fails.
        if crate::wq::gid_queue()
            .try_spawn(GFP_ATOMIC, move || run(w))
            .is_err()
        {
            pr_warn!("ib_core_rs: a netdev event was dropped: no memory\n");
        }
    }
}

impl NetHandler for RoceGidMgmt {
    fn netdev_event(&self, ev: NetEvent, ndev: NetDevRef) {
        Self::queue(Work::Netdev(ev, ndev));
    }

    fn addr_event(&self, up: bool, ndev: NetDevRef, addr: IpAddr) {
        Self::queue(Work::Addr(up, ndev, addr));
    }
}

/// Registers the notifiers (upstream `roce_gid_mgmt_init()`); dropping the value
/// unregisters them (`roce_gid_mgmt_cleanup()`).
///
/// # Errors
///
/// `ENOMEM`, the notifier chains' errno.
pub(crate) fn init() -> Result<NetNotifier<RoceGidMgmt>> {
    NetNotifier::register(Arc::new(RoceGidMgmt, GFP_KERNEL)?)
}

impl<D: Driver> Device<D> {
    /// Binds `port` to a netdev, or unbinds it with `None` (upstream
    /// `ib_device_set_netdev()`); callable before registration. While the device is
    /// registered, the core-owned GID table follows: the old netdev's GIDs are deleted, the
    /// new one's default and address GIDs added.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a port the device does not have, `ENOMEM`.
    pub fn set_netdev(&self, port: u32, ndev: Option<NetDevRef>) -> Result {
        set_netdev(self, port, ndev)
    }

    /// The netdev bound to `port`, held (upstream `ib_device_get_netdev()`).
    pub fn get_netdev(&self, port: u32) -> Option<NetDevRef> {
        port_netdev(&self.core, port)
    }
}

impl DeviceCore {
    /// The netdev bound to `port`, held (upstream `ib_device_get_netdev()`).
    pub fn netdev(&self, port: u32) -> Option<NetDevRef> {
        port_netdev(self, port)
    }

    /// The ifindex of the netdev of GID `index` of `port` (upstream
    /// `rdma_read_gid_attr_ndev_rcu()`), 0 for a GID without one.
    ///
    /// # Errors
    ///
    /// As [`DeviceCore::query_gid`].
    pub fn gid_ndev_ifindex(&self, port: u32, index: u32) -> Result<u32> {
        Ok(self.gid_ndev(port, index)?.map_or(0, |n| n.ifindex()))
    }

    /// The netdev of GID `index` of `port`, held.
    ///
    /// # Errors
    ///
    /// As [`DeviceCore::query_gid`].
    pub fn gid_ndev(&self, port: u32, index: u32) -> Result<Option<NetDevRef>> {
        self.query_gid(port, index)?;
        let info = self.info.lock();
        let p = crate::ib_device::port_data(&info, port)?;
        Ok(p.cache.gid_ndevs.get(index as usize).cloned().flatten())
    }
}
