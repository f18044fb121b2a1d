// SPDX-License-Identifier: GPL-2.0

//! The core-owned RoCE GID tables (`core/roce_gid.rs`, upstream `roce_gid_mgmt.c` and
//! `cache.c`): the slot order and the GID forms, then a RoCE mock driver with `add_gid` and
//! `del_gid` bound to the loopback netdev (`lo`: a MAC of zeros, `127.0.0.1`, `::1` when up),
//! its table compared with what upstream builds from the same netdev.

use ib_core_rs::attr::{
    DeviceAttr, Gid, GidAttr, GidType, LinkLayer, PortAttr, PortImmutable, PortState,
    RDMA_CORE_CAP_PROT_ROCE, RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP,
};
use ib_core_rs::device::{Device, DeviceCore};
use ib_core_rs::driver::Driver;
use ib_core_rs::event::{Event, EventHandler, EventKind};
use ib_core_rs::ops::{DeviceOps, Ops};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, Mutex};

struct RoceMock;

/// The mock's device: its GID table length and the `add_gid`/`del_gid` calls it saw.
#[pin_data]
struct RoceMockDev {
    gid_tbl_len: u32,
    #[pin]
    calls: Mutex<KVec<(bool, GidAttr)>>,
}

impl Driver for RoceMock {
    type DevData = RoceMockDev;
    type PdData = ();
    type CqData = ();
    type QpData = ();
    type SrqData = ();
    type MrData = ();
    type AhData = ();
    type MwData = ();
    type DmData = ();
}

struct RoceMockOps;

#[vtable]
impl DeviceOps for RoceMockOps {
    type Driver = RoceMock;

    fn query_device(_dev: &Device<RoceMock>) -> Result<DeviceAttr> {
        Ok(DeviceAttr::default())
    }

    fn get_port_immutable(dev: &Device<RoceMock>, _port: u32) -> Result<PortImmutable> {
        Ok(PortImmutable {
            pkey_tbl_len: 1,
            gid_tbl_len: dev.data().gid_tbl_len,
            core_cap_flags: RDMA_CORE_CAP_PROT_ROCE | RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP,
            max_mad_size: 256,
            link_layer: LinkLayer::Ethernet,
        })
    }

    fn query_port(_dev: &Device<RoceMock>, _port: u32) -> Result<PortAttr> {
        Ok(PortAttr {
            state: PortState::Active,
            ..PortAttr::default()
        })
    }

    // Never read for a table the core owns.
    fn query_gid(_dev: &Device<RoceMock>, _port: u32, _index: u32) -> Result<Gid> {
        Err(EIO)
    }

    fn query_pkey(_dev: &Device<RoceMock>, _port: u32, _index: u32) -> Result<u16> {
        Ok(0xffff)
    }

    fn add_gid(dev: &Device<RoceMock>, attr: &GidAttr) -> Result {
        Ok(dev.data().calls.lock().push((true, *attr), GFP_KERNEL)?)
    }

    fn del_gid(dev: &Device<RoceMock>, attr: &GidAttr) -> Result {
        Ok(dev.data().calls.lock().push((false, *attr), GFP_KERNEL)?)
    }
}

const ROCE_MOCK_OPS: Ops<RoceMock> = Ops::of::<RoceMockOps>();

fn roce_dev(gid_tbl_len: u32) -> Result<Arc<Device<RoceMock>>> {
    Device::alloc(
        &ROCE_MOCK_OPS,
        1,
        try_pin_init!(RoceMockDev {
            gid_tbl_len,
            calls <- kernel::new_mutex!(KVec::new()),
        }? Error),
    )
}

/// Counts `IB_EVENT_GID_CHANGE` events.
struct GidEvents(Atomic<i32>);

impl EventHandler for GidEvents {
    fn handle(&self, _dev: &DeviceCore, ev: &Event) {
        if ev.kind == EventKind::GidChange && ev.port == 1 {
            self.0.fetch_add(1, Relaxed);
        }
    }
}

#[kunit_tests(ib_core_rs_roce_gid)]
mod tests {
    use super::*;
    use ib_core_rs::device::IbDevice;
    use ib_core_rs::net_notify::{IpAddr, NetDevRef};
    use ib_core_rs::roce_gid::{
        default_gid, default_gid_mask, find_gid, ip_to_gid, port_gid_types, GidKey,
    };

    fn key(last: u8, t: GidType) -> GidKey {
        let mut g = [0u8; 16];
        g[15] = last;
        GidKey {
            gid: Gid(g),
            gid_type: t,
            ifindex: 2,
        }
    }

    #[test]
    fn gid_forms() -> Result {
        // upstream rdma_ip2gid(): IPv4 as ::ffff:a.b.c.d, IPv6 as itself.
        let g = ip_to_gid(&IpAddr::V4([192, 168, 1, 2]));
        assert_eq!(
            g.0,
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 2]
        );
        let v6 = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(ip_to_gid(&IpAddr::V6(v6)).0, v6);
        // upstream make_default_gid(): fe80::/64 + modified EUI-64 (U/L bit flipped, ff:fe).
        let d = default_gid(&[0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
        assert_eq!(
            d.0,
            [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55]
        );
        // upstream roce_gid_type_mask_support(): v1 then v2; none without RoCE.
        let t = port_gid_types(RDMA_CORE_CAP_PROT_ROCE | RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP);
        assert_eq!(&t[..], &[GidType::RoceV1, GidType::RoceV2]);
        let t = port_gid_types(RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP);
        assert_eq!(&t[..], &[GidType::RoceV2]);
        assert!(port_gid_types(0x0010_0000).is_empty());
        // gid_table_reserve_default(): one index per type from 0, at most the table.
        assert_eq!(
            default_gid_mask(&[GidType::RoceV1, GidType::RoceV2], 16),
            0b11
        );
        assert_eq!(
            default_gid_mask(&[GidType::RoceV1, GidType::RoceV2], 1),
            0b1
        );
        Ok(())
    }

    #[test]
    fn slot_order() -> Result {
        let mut t: KVec<Option<GidKey>> = KVec::from_elem(None, 6, GFP_KERNEL)?;
        let mask = 0b11;
        // A default GID takes the first free reserved index; another GID the first free
        // non-reserved one (upstream find_gid()'s `empty`).
        let f = find_gid(&t, &key(1, GidType::RoceV1), true, mask);
        assert_eq!((f.found, f.empty), (None, Some(0)));
        let f = find_gid(&t, &key(9, GidType::RoceV1), false, mask);
        assert_eq!((f.found, f.empty), (None, Some(2)));
        t[0] = Some(key(1, GidType::RoceV1));
        t[2] = Some(key(9, GidType::RoceV1));
        t[3] = Some(key(9, GidType::RoceV2));
        // The same GID with another type is another entry.
        let f = find_gid(&t, &key(9, GidType::RoceV2), false, mask);
        assert_eq!(f.found, Some(3));
        let f = find_gid(&t, &key(1, GidType::RoceV2), true, mask);
        assert_eq!((f.found, f.empty), (None, Some(1)));
        // A non-default lookup finds a default entry (the link-local address equal to the
        // default GID is not added twice); a default lookup only sees reserved indexes.
        assert_eq!(
            find_gid(&t, &key(1, GidType::RoceV1), false, mask).found,
            Some(0)
        );
        assert_eq!(
            find_gid(&t, &key(9, GidType::RoceV1), true, mask).found,
            None
        );
        // Another netdev's GID is another entry.
        let mut other = key(9, GidType::RoceV1);
        other.ifindex = 3;
        assert_eq!(find_gid(&t, &other, false, mask).found, None);
        // Full: no non-reserved index left (upstream ENOSPC), a reserved one still free.
        t[4] = Some(key(10, GidType::RoceV1));
        t[5] = Some(key(10, GidType::RoceV2));
        assert_eq!(
            find_gid(&t, &key(11, GidType::RoceV1), false, mask).empty,
            None
        );
        assert_eq!(
            find_gid(&t, &key(1, GidType::RoceV2), true, mask).empty,
            Some(1)
        );
        Ok(())
    }

    /// What upstream's table holds for `lo` in a table of `len`: the default GIDs at 0 and 1,
    /// then v1 and v2 of each IPv4 and each IPv6 address, while indexes remain.
    fn expected(lo: &NetDevRef, len: usize) -> Result<KVec<(Gid, GidType)>> {
        let mut v = KVec::new();
        let d = default_gid(&lo.mac()?);
        v.push((d, GidType::RoceV1), GFP_KERNEL)?;
        v.push((d, GidType::RoceV2), GFP_KERNEL)?;
        let mut ips = KVec::new();
        for a in lo.ipv4_addrs()?.iter() {
            ips.push(ip_to_gid(&IpAddr::V4(*a)), GFP_KERNEL)?;
        }
        for a in lo.ipv6_addrs()?.iter() {
            let g = ip_to_gid(&IpAddr::V6(*a));
            if g != d {
                ips.push(g, GFP_KERNEL)?;
            }
        }
        for g in ips.iter() {
            for t in [GidType::RoceV1, GidType::RoceV2] {
                if v.len() < len {
                    v.push((*g, t), GFP_KERNEL)?;
                }
            }
        }
        Ok(v)
    }

    fn check_table(dev: &Device<RoceMock>, lo: &NetDevRef, len: u32) -> Result {
        let want = expected(lo, len as usize)?;
        for i in 0..len {
            match want.get(i as usize) {
                Some((g, t)) => {
                    assert_eq!(dev.query_gid(1, i)?, *g);
                    assert_eq!(dev.query_gid_type(1, i)?, *t);
                    assert_eq!(dev.gid_ndev_ifindex(1, i)?, lo.ifindex());
                    let nd = dev.gid_ndev(1, i)?.ok_or(EINVAL)?;
                    assert_eq!(nd.name().as_bytes(), b"lo");
                }
                None => assert_eq!(dev.query_gid(1, i), Err(ENOENT)),
            }
        }
        // Every entry was programmed through add_gid with its index, type, netdev and MAC.
        let calls = dev.data().calls.lock();
        for (i, (g, t)) in want.iter().enumerate() {
            let c = calls
                .iter()
                .find(|(add, a)| *add && a.index == i as u32 && a.gid == *g)
                .ok_or(ENOENT)?;
            assert_eq!(c.1.gid_type, *t);
            assert_eq!(c.1.port, 1);
            assert_eq!(c.1.ndev_ifindex, lo.ifindex());
            assert_eq!(c.1.mac, lo.mac()?);
            assert_eq!(c.1.vlan_id, None);
        }
        Ok(())
    }

    #[test]
    fn bound_before_registration() -> Result {
        let lo = NetDevRef::by_name(c"lo").ok_or(ENODEV)?;
        let dev = roce_dev(16)?;
        dev.set_netdev(1, Some(lo.clone()))?;
        assert_eq!(dev.set_netdev(2, Some(lo.clone())), Err(EINVAL));
        Device::register(&dev, c"roce_mock_%d")?;
        assert!(dev.get_netdev(1).is_some_and(|n| n == lo));
        check_table(&dev, &lo, 16)?;
        // upstream gid_table_cleanup_one(): unregistration deletes every entry with del_gid.
        let adds = dev.data().calls.lock().len();
        Device::unregister(&dev);
        {
            let calls = dev.data().calls.lock();
            let dels = calls.iter().filter(|(add, _)| !*add).count();
            assert_eq!(dels, adds);
        }
        // upstream free_netdevs(): the binding goes with the registration.
        assert!(dev.get_netdev(1).is_none());
        Device::dealloc(dev);
        Ok(())
    }

    #[test]
    fn bound_after_registration() -> Result {
        let lo = NetDevRef::by_name(c"lo").ok_or(ENODEV)?;
        let dev = roce_dev(16)?;
        Device::register(&dev, c"roce_mock_%d")?;
        let events = Arc::new(GidEvents(Atomic::new(0)), GFP_KERNEL)?;
        let reg = ib_core_rs::event::register_event_handler(
            dev.clone() as Arc<dyn IbDevice>,
            events.clone(),
        )?;
        // No netdev: an empty table, and no GID attributes.
        assert_eq!(dev.query_gid(1, 0), Err(ENOENT));
        assert_eq!(dev.gid_ndev(1, 0).err(), Some(ENOENT));
        dev.set_netdev(1, Some(lo.clone()))?;
        check_table(&dev, &lo, 16)?;
        // One IB_EVENT_GID_CHANGE per entry added (upstream dispatch_gid_change_event()).
        let n = expected(&lo, 16)?.len() as i32;
        assert_eq!(events.0.load(Relaxed), n);
        // Binding the same netdev again changes nothing.
        dev.set_netdev(1, Some(lo.clone()))?;
        assert_eq!(events.0.load(Relaxed), n);
        // Unbinding deletes every GID of the netdev, each through del_gid.
        dev.set_netdev(1, None)?;
        for i in 0..16 {
            assert_eq!(dev.query_gid(1, i), Err(ENOENT));
        }
        {
            let calls = dev.data().calls.lock();
            let dels = calls.iter().filter(|(add, _)| !*add).count();
            assert_eq!(dels, n as usize);
        }
        // upstream ib_cache_gid_del_all_netdev_gids(): one event for the whole deletion.
        assert_eq!(events.0.load(Relaxed), n + 1);
        drop(reg);
        Device::dealloc(dev);
        Ok(())
    }

    #[test]
    fn table_full() -> Result {
        // Four entries: the two default GIDs and the first address's two; the rest does not
        // fit (upstream __ib_cache_gid_add(): ENOSPC, the GID is left out).
        let lo = NetDevRef::by_name(c"lo").ok_or(ENODEV)?;
        let dev = roce_dev(4)?;
        dev.set_netdev(1, Some(lo.clone()))?;
        Device::register(&dev, c"roce_mock_%d")?;
        check_table(&dev, &lo, 4)?;
        Device::dealloc(dev);
        Ok(())
    }
}
