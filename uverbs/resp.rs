// SPDX-License-Identifier: GPL-2.0

//! Response layouts of the core commands (`include/uapi/rdma/ib_user_verbs.h`,
//! `ib_user_ioctl_verbs.h`), filled from the core's attributes as upstream fills them.

use crate::attr::{DeviceAttr, Gid, GidType, LinkLayer, PortAttr, PortImmutable};
use crate::uverbs::abi::{layout::AbiField, structs as s};

/// `struct ib_uverbs_query_device_resp` (upstream `copy_query_dev_fields()`).
pub(crate) fn query_device_resp(
    a: &DeviceAttr,
    phys_port_cnt: u32,
    pkeys: u16,
) -> s::QueryDeviceResp {
    // A driver that does not report these gets what this layer always answered.
    let or = |v: u64, d: u64| if v == 0 { d } else { v };
    s::QueryDeviceResp {
        fw_ver: a.fw_ver,
        node_guid: a.node_guid.to_be(),
        sys_image_guid: a.sys_image_guid.to_be(),
        max_mr_size: or(a.max_mr_size, u64::MAX),
        page_size_cap: or(a.page_size_cap, 0xffff_f000),
        vendor_id: a.vendor_id,
        vendor_part_id: a.vendor_part_id,
        hw_ver: a.hw_ver,
        max_qp: a.max_qp,
        max_qp_wr: a.max_qp_wr,
        device_cap_flags: a.device_cap_flags as u32,
        // upstream copy_query_dev_fields(): max_sge = min(max_send_sge, max_recv_sge).
        max_sge: a.max_send_sge.min(a.max_recv_sge),
        max_sge_rd: a.max_sge_rd,
        max_cq: a.max_cq,
        max_cqe: a.max_cqe,
        max_mr: a.max_mr,
        max_pd: a.max_pd,
        max_qp_rd_atom: a.max_qp_rd_atom,
        max_res_rd_atom: a.max_res_rd_atom,
        max_qp_init_rd_atom: a.max_qp_init_rd_atom,
        atomic_cap: a.atomic_cap,
        max_mw: a.max_mw,
        max_mcast_grp: a.max_mcast_grp,
        max_mcast_qp_attach: a.max_mcast_qp_attach,
        max_total_mcast_qp_attach: a.max_total_mcast_qp_attach,
        max_ah: a.max_ah,
        max_srq: a.max_srq,
        max_srq_wr: a.max_srq_wr,
        max_srq_sge: a.max_srq_sge,
        max_pkeys: pkeys,
        local_ca_ack_delay: a.local_ca_ack_delay,
        phys_port_cnt: phys_port_cnt.min(255) as u8,
        ..Default::default()
    }
}

/// `struct ib_uverbs_query_port_resp_ex` (upstream `copy_port_attr_to_resp()`); the
/// legacy command answers its `legacy_resp`.
pub(crate) fn query_port_resp(p: &PortAttr, imm: &PortImmutable) -> s::QueryPortRespEx {
    // A driver that does not report a value gets what this layer always answered.
    let or = |v: u32, d: u32| if v == 0 { d } else { v };
    // upstream make_port_cap_flags(): bit 26 is not the IBA bit there but
    // IB_UVERBS_PCF_IP_BASED_GIDS, set for ports whose GIDs are IP based (RoCE: mlx5 and rxe
    // set `ip_gids`).
    const IP_BASED_GIDS: u32 = 1 << 26;
    let ip_gids = if imm.link_layer == LinkLayer::Ethernet {
        IP_BASED_GIDS
    } else {
        0
    };
    s::QueryPortRespEx {
        legacy_resp: s::QueryPortResp {
            port_cap_flags: (p.port_cap_flags & !IP_BASED_GIDS) | ip_gids,
            max_msg_sz: or(p.max_msg_sz, 1 << 31),
            gid_tbl_len: imm.gid_tbl_len,
            pkey_tbl_len: imm.pkey_tbl_len.min(u16::MAX.into()) as u16,
            lid: p.lid.min(u16::MAX.into()) as u16,
            sm_lid: p.sm_lid.min(u16::MAX.into()) as u16,
            state: p.state as u8,
            max_mtu: or(p.max_mtu.into(), 5) as u8, // IB_MTU_4096 by default
            active_mtu: or(p.active_mtu.into(), 5) as u8,
            lmc: p.lmc,
            max_vl_num: or(p.max_vl_num.into(), 1) as u8,
            sm_sl: p.sm_sl,
            subnet_timeout: p.subnet_timeout,
            active_width: p.active_width,
            active_speed: p.active_speed.min(u8::MAX.into()) as u8,
            phys_state: p.phys_state,
            link_layer: imm.link_layer.value(),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// `struct ib_uverbs_gid_entry` of a GID (upstream `copy_gid_entries()`/`QUERY_GID_ENTRY`:
/// `netdev_ifindex` is the GID's netdev, 0 for a GID without one).
pub(crate) fn gid_entry(
    gid: &Gid,
    index: u32,
    port: u32,
    t: GidType,
    netdev_ifindex: u32,
) -> s::GidEntry {
    s::GidEntry {
        gid: AbiField::read(&gid.0),
        gid_index: index,
        port_num: port,
        gid_type: t as u32, // IB_UVERBS_GID_TYPE_*
        netdev_ifindex,
    }
}
