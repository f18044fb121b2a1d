// SPDX-License-Identifier: GPL-2.0

//! The port cache (upstream `drivers/infiniband/core/cache.c`): per port
//! the GID table, the P_Key table, the port state, the LMC and the subnet
//! prefix, filled at registration (`ib_cache_setup_one()`) and refreshed on
//! port events (`ib_cache_update()`), so that consumers read them without
//! calling the driver.
//!
//! The GID table is read with the driver's `query_gid` for every port whose table the
//! core does not own (upstream: IB ports); the RoCE GID tables of a driver with `add_gid` and
//! `del_gid` belong to the core (`roce_gid.rs`, upstream `roce_gid_mgmt.c`) and a refresh
//! keeps them. A zero GID is an empty entry.
//!
//! The cached data itself ([`PortCache`]) is part of the device's shared types
//! (`ib_device.rs`); this file fills it and reads it.

use crate::attr::{Gid, GidType, LinkLayer, PortState};
use crate::device::Device;
use crate::driver::Driver;
use crate::ib_device::{port_data, DeviceCore, PortCache, PortData};
use crate::roce_gid;
use kernel::prelude::*;

/// Re-reads one port from the driver and replaces its cache (upstream
/// `ib_cache_update()`). The driver is called without the cache lock held.
///
/// # Errors
///
/// `EINVAL` for a bad port, `EOPNOTSUPP` if the driver has no `query_port`, `ENOMEM`, or the
/// error of the driver's `query_port`, `query_gid` or `query_pkey`; the old cache stays then.
pub(crate) fn update<D: Driver>(dev: &Device<D>, port_num: u32) -> Result {
    let imm = dev.port_immutable(port_num)?;
    let ops = dev.ops();
    let attr = (ops.query_port.ok_or(EOPNOTSUPP)?)(dev, port_num)?;
    let roce = roce_gid::is_roce_table(&imm, ops.add_gid.is_some() && ops.del_gid.is_some());
    let mut gids = KVec::with_capacity(imm.gid_tbl_len as usize, GFP_KERNEL)?;
    if let (Some(q), false) = (ops.query_gid, roce) {
        for i in 0..imm.gid_tbl_len {
            gids.push(q(dev, port_num, i)?, GFP_KERNEL)?;
        }
    }
    // upstream: the GID cache keeps each entry's type (roce_gid_mgmt adds
    // one entry per supported type); a driver without `query_gid_type` has
    // IB GIDs on an InfiniBand port and RoCE v1 ones on an Ethernet port.
    let default_type = if imm.link_layer == LinkLayer::Ethernet {
        GidType::RoceV1
    } else {
        GidType::Ib
    };
    let mut gid_types = KVec::with_capacity(gids.len(), GFP_KERNEL)?;
    for i in 0..gids.len() as u32 {
        let t = match ops.query_gid_type {
            Some(q) => q(dev, port_num, i)?,
            None => default_type,
        };
        gid_types.push(t, GFP_KERNEL)?;
    }
    let mut pkeys = KVec::with_capacity(imm.pkey_tbl_len as usize, GFP_KERNEL)?;
    if imm.pkey_tbl_len != 0 {
        let q = ops.query_pkey.ok_or(EOPNOTSUPP)?;
        for i in 0..imm.pkey_tbl_len {
            pkeys.push(q(dev, port_num, i)?, GFP_KERNEL)?;
        }
    }
    let mut new = PortCache {
        gids,
        gid_types,
        gid_ndevs: KVec::new(),
        roce_table: false,
        default_gid_mask: 0,
        pkeys,
        state: attr.state,
        lmc: attr.lmc,
        subnet_prefix: attr.subnet_prefix,
        lid: attr.lid,
        sm_lid: attr.sm_lid,
        sm_sl: attr.sm_sl,
    };
    let old = {
        let mut info = dev.info.lock();
        let idx = port_num as usize - 1;
        let p = info.ports.get_mut(idx).ok_or(EINVAL)?;
        if roce {
            // upstream ib_cache_update(): the GID table of a RoCE port is not re-read.
            if p.cache.roce_table {
                let c = &mut p.cache;
                new.gids = core::mem::take(&mut c.gids);
                new.gid_types = core::mem::take(&mut c.gid_types);
                new.gid_ndevs = core::mem::take(&mut c.gid_ndevs);
                new.default_gid_mask = c.default_gid_mask;
                new.roce_table = true;
            } else {
                roce_gid::setup_table(&mut new, &p.immutable)?;
            }
        }
        core::mem::replace(&mut p.cache, new)
    };
    drop(old);
    Ok(())
}

impl DeviceCore {
    fn with_port<R>(&self, port_num: u32, f: impl FnOnce(&PortData) -> Result<R>) -> Result<R> {
        let info = self.info.lock();
        f(port_data(&info, port_num)?)
    }

    /// Reads a cached GID (upstream `rdma_query_gid()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port or an index beyond the table, `ENOENT` for
    /// an empty entry.
    pub fn query_gid(&self, port_num: u32, index: u32) -> Result<Gid> {
        self.with_port(port_num, |p| {
            let gid = *p.cache.gids.get(index as usize).ok_or(EINVAL)?;
            if gid.is_zero() {
                Err(ENOENT)
            } else {
                Ok(gid)
            }
        })
    }

    /// The type of a cached GID (upstream `gid_attr->gid_type`).
    ///
    /// # Errors
    ///
    /// As [`DeviceCore::query_gid`].
    pub fn query_gid_type(&self, port_num: u32, index: u32) -> Result<GidType> {
        self.with_port(port_num, |p| {
            let gid = *p.cache.gids.get(index as usize).ok_or(EINVAL)?;
            if gid.is_zero() {
                return Err(ENOENT);
            }
            p.cache.gid_types.get(index as usize).copied().ok_or(EINVAL)
        })
    }

    /// Reads a cached P_Key (upstream `ib_get_cached_pkey()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port or an index beyond the table.
    pub fn get_cached_pkey(&self, port_num: u32, index: u32) -> Result<u16> {
        self.with_port(port_num, |p| {
            p.cache.pkeys.get(index as usize).copied().ok_or(EINVAL)
        })
    }

    /// Finds a P_Key's index, matching the low 15 bits and preferring a
    /// full-member entry (upstream `ib_find_cached_pkey()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port, `ENOENT` when no entry matches.
    pub fn find_cached_pkey(&self, port_num: u32, pkey: u16) -> Result<u32> {
        self.with_port(port_num, |p| {
            let mut partial = None;
            for (i, &k) in p.cache.pkeys.iter().enumerate() {
                if k & 0x7fff == pkey & 0x7fff {
                    if k & 0x8000 != 0 {
                        return Ok(i as u32);
                    }
                    partial.get_or_insert(i as u32);
                }
            }
            partial.ok_or(ENOENT)
        })
    }

    /// The cached port state (upstream `ib_get_cached_port_state()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port.
    pub fn get_cached_port_state(&self, port_num: u32) -> Result<PortState> {
        self.with_port(port_num, |p| Ok(p.cache.state))
    }

    /// The cached LID mask count (upstream `ib_get_cached_lmc()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port.
    pub fn get_cached_lmc(&self, port_num: u32) -> Result<u8> {
        self.with_port(port_num, |p| Ok(p.cache.lmc))
    }

    /// The cached subnet prefix (upstream `ib_get_cached_subnet_prefix()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port.
    pub fn get_cached_subnet_prefix(&self, port_num: u32) -> Result<u64> {
        self.with_port(port_num, |p| Ok(p.cache.subnet_prefix))
    }

    /// The cached base LID and LMC of a port (upstream `ib_query_port()` reads them from the
    /// driver; the cache refreshes them on `LID_CHANGE` and every other port event).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port or a LID beyond 16 bits.
    pub fn get_cached_lid(&self, port_num: u32) -> Result<(u16, u8)> {
        self.with_port(port_num, |p| {
            Ok((u16::try_from(p.cache.lid).map_err(|_| EINVAL)?, p.cache.lmc))
        })
    }

    /// The cached SM LID and SL of a port (refreshed on `SM_CHANGE` and every other port
    /// event).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port.
    pub fn get_cached_sm(&self, port_num: u32) -> Result<(u32, u8)> {
        self.with_port(port_num, |p| Ok((p.cache.sm_lid, p.cache.sm_sl)))
    }

    /// Sizes of the cached GID and P_Key tables of a port.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port.
    pub fn cached_table_lens(&self, port_num: u32) -> Result<(usize, usize)> {
        self.with_port(port_num, |p| Ok((p.cache.gids.len(), p.cache.pkeys.len())))
    }
}
