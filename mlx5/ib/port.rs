// SPDX-License-Identifier: GPL-2.0

//! Ports: what `query_port`, `get_port_immutable`, `query_gid`, `query_gid_type` and
//! `query_pkey` answer (upstream `mlx5_ib_query_port()`, `mlx5_port_immutable()`,
//! `mlx5_query_hca_vport_gid()`, `mlx5_ib_query_pkey()`, main.c), the port state the `PORTS`
//! stage computes, and the default RoCE GIDs `IB_REG` programs.

use crate::attrs::{
    ib_port_attrs, port_immutable, roce_port_attrs, Caps, EthLink, PortAttrs,
    PortImmutable as Mlx5PortImmutable, ETH_HW_MTU_OVERHEAD,
};
use crate::cmd::exec;
use crate::cmd::query::{
    ModifyHcaVportContext, QueryHcaVportContext, QueryHcaVportGid, QueryHcaVportPkey,
    QueryNicVportContext, TableIndex,
};
use crate::cmd::reg::{AccessReg, Paos, Pmtu, PortStatus, Ptys, PtysProto, PtysValue, Pvlc};
use crate::cmd::res::{RoceAddr, RoceL3Type, RoceVersion, SetRoceAddress};
use crate::hw::{CapType, Mlx5Hw};
use crate::ib::device::{IbPort, Mlx5Ib, Mlx5IbDev};
use ib_core_rs::attr::{
    Gid, GidAttr, GidType, LinkLayer, PortAttr, PortImmutable, PortModify, PortState,
};
use ib_core_rs::device::Device;
use kernel::prelude::*;

/// `enum ib_port_state` from the number mlx5's attribute code computes (`IB_PORT_NOP` for
/// one that is none).
fn port_state(s: u8) -> PortState {
    PortState::from_raw(s).unwrap_or(PortState::Nop)
}

pub(crate) fn port_attr(a: &PortAttrs, subnet_prefix: u64) -> PortAttr {
    PortAttr {
        subnet_prefix,
        state: port_state(a.state),
        phys_state: a.phys_state,
        lid: a.lid,
        lmc: a.lmc,
        sm_lid: a.sm_lid,
        sm_sl: a.sm_sl,
        port_cap_flags: a.port_cap_flags,
        active_width: a.active_width,
        active_speed: a.active_speed,
        max_mtu: a.max_mtu,
        active_mtu: a.active_mtu,
        max_msg_sz: a.max_msg_sz,
        max_vl_num: a.max_vl_num,
        subnet_timeout: a.subnet_timeout,
    }
}

pub(crate) fn immutable(p: &IbPort) -> PortImmutable {
    PortImmutable {
        pkey_tbl_len: p.immutable.pkey_tbl_len,
        gid_tbl_len: p.immutable.gid_tbl_len,
        core_cap_flags: p.immutable.core_cap_flags,
        max_mad_size: p.immutable.max_mad_size,
        link_layer: p.link_layer,
    }
}

/// upstream `mlx5_ib_query_port()` through the device's hardware; `get_port_immutable` is
/// `mlx5_port_immutable()` of what probe computed.
pub(crate) fn query_port_common(dev: &Device<Mlx5Ib>, port: u32) -> Result<(PortAttrs, &IbPort)> {
    let d = dev.data();
    let p = d.port(port)?;
    let link = netdev_link(d, p.num);
    let (attrs, _, _) = port_attrs(&*d.hw, p.num, p.link_layer, link)?;
    Ok((attrs, p))
}

/// The link of RoCE port `num` as its interface shows it (upstream `mlx5_query_port_roce()`:
/// `netif_running() && netif_carrier_ok()`, and `ndev->mtu`), if the driver registered one.
fn netdev_link(d: &Mlx5IbDev, num: u8) -> Option<EthLink> {
    let n = d.events.netdev(num)?;
    Some(EthLink {
        up: n.running() && n.carrier_ok(),
        hw_mtu: n.mtu().saturating_add(ETH_HW_MTU_OVERHEAD),
    })
}

/// upstream `mlx5_query_hca_vport_gid()` of one index.
///
/// # Errors
///
/// `EINVAL` for an index past the table, QUERY_HCA_VPORT_GID's errno, `EIO` for an empty
/// reply.
pub(crate) fn hca_vport_gid(d: &Mlx5IbDev, p: &IbPort, index: u32) -> Result<Gid> {
    vport_entry(p.immutable.gid_tbl_len, index, |index| {
        exec(&*d.hw, &QueryHcaVportGid { port: p.num, index })
    })
    .map(Gid)
}

/// upstream `mlx5_query_hca_vport_pkey()` of one index.
///
/// # Errors
///
/// `EINVAL` for an index past the table, QUERY_HCA_VPORT_PKEY's errno, `EIO` for an empty
/// reply.
pub(crate) fn hca_vport_pkey(d: &Mlx5IbDev, p: &IbPort, index: u32) -> Result<u16> {
    vport_entry(p.immutable.pkey_tbl_len, index, |index| {
        exec(&*d.hw, &QueryHcaVportPkey { port: p.num, index })
    })
}

/// Entry `index` of an HCA vport table of `len` entries, read with `query` (upstream
/// `mlx5_query_hca_vport_gid()`/`_pkey()` of one index).
///
/// # Errors
///
/// `EINVAL` for an index past the table, `query`'s errno, `EIO` for an empty reply.
fn vport_entry<T: Copy>(
    len: u32,
    index: u32,
    query: impl FnOnce(TableIndex) -> Result<KVec<T>>,
) -> Result<T> {
    if index >= len {
        return Err(EINVAL);
    }
    let idx = u16::try_from(index).map_err(|_| EINVAL)?;
    query(TableIndex::One(idx))?.first().copied().ok_or(EIO)
}

/// What `query_port` and `get_port_immutable` report for one port, and the port MAC
/// (Ethernet); a RoCE port's state and active MTU come from `netdev`, its interface's link,
/// when it has one. upstream `mlx5_ib_query_port()` (`mlx5_query_hca_port()` /
/// `mlx5_query_port_roce()`) + `mlx5_port_immutable()`: the commands run on every call, as
/// upstream's do, so the IB device's `query_port` op uses this too.
///
/// # Errors
///
/// `EIO` without a cached capability page, the errno of a failing query (HCA/NIC vport context,
/// PTYS, PMTU, PVLC, PAOS: `Mlx5Hw::exec`), `EINVAL` for a reply upstream refuses, `ENOMEM`.
pub(crate) fn port_attrs(
    hw: &dyn Mlx5Hw,
    num: u8,
    ll: LinkLayer,
    netdev: Option<EthLink>,
) -> Result<(PortAttrs, Mlx5PortImmutable, Option<[u8; 6]>)> {
    let gen = hw.caps(CapType::General).and_then(Caps::new).ok_or(EIO)?;
    match ll {
        LinkLayer::Infiniband => {
            let vport = exec(hw, &QueryHcaVportContext { port: num })?;
            let ptys = read_ptys(hw, num, PtysProto::Ib)?;
            let pmtu = exec(
                hw,
                &AccessReg::read(Pmtu {
                    port: num,
                    admin_mtu: None,
                }),
            )?;
            let vl = exec(hw, &AccessReg::read(Pvlc { port: num }))?;
            let attrs = ib_port_attrs(gen, &vport, &ptys, &pmtu, vl)?;
            let immutable = port_immutable(&attrs, Some(&vport), None)?;
            Ok((attrs, immutable, None))
        }
        LinkLayer::Ethernet => {
            let nic = exec(hw, &QueryNicVportContext)?;
            let ptys = read_ptys(hw, num, PtysProto::Eth)?;
            let paos = exec(
                hw,
                &AccessReg::read(Paos {
                    port: num,
                    admin_status: None,
                }),
            )?;
            // The interface's state where the port has one; PAOS and the vport MTU otherwise.
            let link = netdev.unwrap_or(EthLink {
                up: paos.admin == PortStatus::Up && paos.oper == 1,
                hw_mtu: nic.mtu,
            });
            let roce = hw.caps(CapType::Roce).and_then(Caps::new);
            let attrs = roce_port_attrs(gen, roce, &nic, &ptys, link)?;
            let immutable = port_immutable(&attrs, None, roce)?;
            Ok((attrs, immutable, Some(nic.mac)))
        }
    }
}

/// The PTYS register of port `num` for `proto` (upstream `mlx5_query_port_ptys()`).
fn read_ptys(hw: &dyn Mlx5Hw, num: u8, proto: PtysProto) -> Result<PtysValue> {
    exec(hw, &AccessReg::read(Ptys { port: num, proto }))
}

/// upstream `mlx5_ib_query_port()` + `mlx5_port_immutable()` + the cache's table reads.
pub(crate) fn query_port(hw: &dyn Mlx5Hw, num: u8, ll: LinkLayer) -> Result<IbPort> {
    let (attrs, immutable, mac) = port_attrs(hw, num, ll, None)?;
    let (gids, pkeys) = match ll {
        LinkLayer::Infiniband => {
            let n_gids = u16::try_from(attrs.gid_tbl_len).map_err(|_| EIO)?;
            let gids = exec(
                hw,
                &QueryHcaVportGid {
                    port: num,
                    index: TableIndex::All(n_gids),
                },
            )?;
            let pkeys = exec(
                hw,
                &QueryHcaVportPkey {
                    port: num,
                    index: TableIndex::All(attrs.pkey_tbl_len),
                },
            )?;
            (gids, pkeys)
        }
        LinkLayer::Ethernet => {
            let mut pkeys = KVec::new();
            pkeys.push(0xffff, GFP_KERNEL)?;
            (KVec::new(), pkeys)
        }
    };
    Ok(IbPort {
        num,
        link_layer: ll,
        attrs,
        immutable,
        gids,
        pkeys,
        mac,
        roce_gids: KVec::new(),
    })
}

/// The default GID of a MAC: the core's (`fe80::` + modified EUI-64, upstream
/// `make_default_gid()`), for the default GIDs the driver programs itself.
pub(crate) fn default_gid(mac: &[u8; 6]) -> [u8; 16] {
    ib_core_rs::roce_gid::default_gid(mac).0
}

/// The default GIDs of a RoCE port, programmed into the device with SET_ROCE_ADDRESS: index
/// 0 RoCE v1 and index 1 RoCE v2, both the link-local GID of the function's MAC. Upstream the
/// core adds them when the port's netdev comes up (`roce_gid_mgmt`: one default GID per
/// supported GID type) and mlx5's `add_gid` (`set_roce_addr()`) programs them. There is no
/// netdev here, so the driver does it at `IB_REG`, with the MAC of the NIC vport context.
/// Returns the software table (`gid_tbl_len` entries). On failure nothing stays programmed.
///
/// # Errors
///
/// `EINVAL` for a GID table length that does not fit, `ENOMEM`, or the errno of
/// SET_ROCE_ADDRESS (`Mlx5Hw::exec`); the entries written before are cleared then.
pub(crate) fn program_default_gids(hw: &dyn Mlx5Hw, p: &IbPort) -> Result<KVec<[u8; 16]>> {
    let len = usize::try_from(p.immutable.gid_tbl_len).map_err(|_| EINVAL)?;
    let mut table = KVec::from_elem([0u8; 16], len, GFP_KERNEL)?;
    let Some(mac) = p.mac else {
        return Ok(table);
    };
    let gid = default_gid(&mac);
    let entries = [(0u16, RoceVersion::V1), (1u16, RoceVersion::V2)];
    for (n, (index, version)) in entries.iter().enumerate() {
        let Some(slot) = table.get_mut(usize::from(*index)) else {
            break;
        };
        let r = exec(
            hw,
            &SetRoceAddress {
                index: *index,
                // upstream set_roce_addr(): vhca_port_num 0 on single-port functions.
                vhca_port: 0,
                entry: Some(RoceAddr {
                    gid,
                    mac,
                    vlan: None,
                    version: *version,
                    l3_type: RoceL3Type::Ipv6,
                }),
            },
        );
        if let Err(e) = r {
            clear_gids(hw, n);
            return Err(e);
        }
        *slot = gid;
    }
    Ok(table)
}

/// Clears the first `n` RoCE address entries (upstream `del_gid` → `set_roce_addr(NULL)`).
pub(crate) fn clear_gids(hw: &dyn Mlx5Hw, n: usize) {
    for index in 0..n {
        let Ok(index) = u16::try_from(index) else {
            break;
        };
        // Teardown: a failure is logged by exec and there is nothing else to do.
        let _ = exec(
            hw,
            &SetRoceAddress {
                index,
                vhca_port: 0,
                entry: None,
            },
        );
    }
}

/// upstream `set_roce_addr()` (`mlx5_ib_add_gid()` with `add`, `mlx5_ib_del_gid()` without):
/// SET_ROCE_ADDRESS of entry `attr.index` with the GID, the MAC and VLAN of its netdev and the
/// RoCE version of its type (RoCE v2: the L3 type IPv4 for an IPv4-mapped GID, IPv6
/// otherwise), or the cleared entry.
///
/// # Errors
///
/// `EINVAL` for a port that is not Ethernet or an index past the table, SET_ROCE_ADDRESS's
/// errno.
pub(crate) fn set_roce_addr(dev: &Device<Mlx5Ib>, attr: &GidAttr, add: bool) -> Result {
    let d = dev.data();
    let p = d.port(attr.port)?;
    // upstream mlx5_core_roce_gid_set(): EINVAL unless the function is Ethernet.
    if p.link_layer != LinkLayer::Ethernet || attr.index >= p.immutable.gid_tbl_len {
        return Err(EINVAL);
    }
    let index = u16::try_from(attr.index).map_err(|_| EINVAL)?;
    let (version, l3_type) = match attr.gid_type {
        GidType::RoceV2 => {
            let v4 = attr.gid.0[..10] == [0u8; 10] && attr.gid.0[10..12] == [0xff, 0xff];
            let l3 = if v4 {
                RoceL3Type::Ipv4
            } else {
                RoceL3Type::Ipv6
            };
            (RoceVersion::V2, l3)
        }
        GidType::RoceV1 => (RoceVersion::V1, RoceL3Type::Ipv4),
        GidType::Ib => {
            // upstream: "Unexpected GID type", then version 0.
            pr_warn!("{}: unexpected GID type {:?}\n", d.hw.name(), attr.gid_type);
            (RoceVersion::V1, RoceL3Type::Ipv4)
        }
    };
    let entry = add.then_some(RoceAddr {
        gid: attr.gid.0,
        mac: attr.mac,
        vlan: attr.vlan_id,
        version,
        l3_type,
    });
    exec(
        &*d.hw,
        &SetRoceAddress {
            index,
            // upstream: vhca_port_num only when `num_vhca_ports` > 0; 0 on these functions.
            vhca_port: 0,
            entry,
        },
    )
}

/// How many entries [`program_default_gids`] programmed.
pub(crate) fn programmed_gids(p: &IbPort) -> usize {
    p.roce_gids.iter().take_while(|g| **g != [0u8; 16]).count()
}

/// upstream `mlx5_ib_modify_port()`: nothing to do on an Ethernet port; on an InfiniBand port
/// of a function with `ib_virt`, `set_port_caps_atomic()`: the vport context's
/// `cap_mask1_perm` must allow every bit to change (`EINVAL` otherwise), then
/// MODIFY_HCA_VPORT_CONTEXT sets and clears them. Without `ib_virt` upstream writes the PCAP
/// register (`mlx5_set_port_caps()`), which this driver does not: `EOPNOTSUPP`.
///
/// # Errors
///
/// `EINVAL` for a bad port or a bit the firmware does not let the host change,
/// `EOPNOTSUPP` without `ib_virt`, the command's error.
pub(crate) fn modify_port(dev: &Device<Mlx5Ib>, port: u32, m: &PortModify) -> Result {
    let d = dev.data();
    let p = d.port(port)?;
    if p.link_layer != LinkLayer::Infiniband {
        return Ok(());
    }
    let hw = &*d.hw;
    let gen = hw.caps(CapType::General).and_then(Caps::new).ok_or(EIO)?;
    if gen.get(crate::prm::ctx::cmd_hca_cap::ib_virt) == 0 {
        return Err(EOPNOTSUPP);
    }
    let num = u8::try_from(port).map_err(|_| EINVAL)?;
    let v = exec(hw, &QueryHcaVportContext { port: num })?;
    let mask = m.clr_port_cap_mask | m.set_port_cap_mask;
    let value = !m.clr_port_cap_mask | m.set_port_cap_mask;
    if !v.cap_mask1_perm & mask != 0 {
        pr_warn!(
            "mlx5_ib_rs: {}: trying to change bitmask 0x{:X} but change supported 0x{:X}\n",
            dev.name(),
            mask,
            v.cap_mask1_perm
        );
        return Err(EINVAL);
    }
    exec(
        hw,
        &ModifyHcaVportContext {
            port: num,
            cap_mask1: value,
            cap_mask1_select: mask,
        },
    )
}
