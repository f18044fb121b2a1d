// SPDX-License-Identifier: GPL-2.0

//! Response layouts of the core commands (`include/uapi/rdma/ib_user_verbs.h`,
//! `ib_user_ioctl_verbs.h`), encoded field by field at upstream's offsets.

use crate::attr::{DeviceAttr, LinkLayer, PortAttr, PortImmutable};

/// A little builder over a fixed response.
pub(crate) struct Out<const N: usize>(pub(crate) [u8; N]);

impl<const N: usize> Out<N> {
    pub(crate) fn new() -> Self {
        Out([0; N])
    }
    fn put(&mut self, off: usize, b: &[u8]) {
        if let Some(d) = self.0.get_mut(off..off + b.len()) {
            d.copy_from_slice(b);
        }
    }
    pub(crate) fn u8(&mut self, off: usize, v: u8) {
        self.put(off, &[v]);
    }
    pub(crate) fn u16(&mut self, off: usize, v: u16) {
        self.put(off, &v.to_ne_bytes());
    }
    pub(crate) fn u32(&mut self, off: usize, v: u32) {
        self.put(off, &v.to_ne_bytes());
    }
    pub(crate) fn u64(&mut self, off: usize, v: u64) {
        self.put(off, &v.to_ne_bytes());
    }
    pub(crate) fn be64(&mut self, off: usize, v: u64) {
        self.put(off, &v.to_be_bytes());
    }
    pub(crate) fn bytes(&mut self, off: usize, b: &[u8]) {
        self.put(off, b);
    }
}

/// `sizeof(struct ib_uverbs_query_device_resp)`.
pub(crate) const QUERY_DEVICE_RESP: usize = 176;
/// `sizeof(struct ib_uverbs_ex_query_device_resp)`.
pub(crate) const EX_QUERY_DEVICE_RESP: usize = 304;
/// `sizeof(struct ib_uverbs_query_port_resp)`.
pub(crate) const QUERY_PORT_RESP: usize = 40;
/// `sizeof(struct ib_uverbs_query_port_resp_ex)`.
pub(crate) const QUERY_PORT_RESP_EX: usize = 48;
/// `sizeof(struct ib_uverbs_gid_entry)`.
pub(crate) const GID_ENTRY: usize = 32;

/// `struct ib_uverbs_query_device_resp` (upstream `copy_query_dev_fields()`).
pub(crate) fn query_device_resp(
    a: &DeviceAttr,
    phys_port_cnt: u32,
    pkeys: u16,
) -> Out<QUERY_DEVICE_RESP> {
    let mut o = Out::new();
    o.u64(0, a.fw_ver);
    o.be64(8, a.node_guid);
    o.be64(16, a.sys_image_guid);
    // A driver that does not report these gets what this layer always answered.
    o.u64(
        24,
        if a.max_mr_size == 0 {
            u64::MAX
        } else {
            a.max_mr_size
        },
    );
    o.u64(
        32,
        if a.page_size_cap == 0 {
            0xffff_f000
        } else {
            a.page_size_cap
        },
    );
    o.u32(40, a.vendor_id);
    o.u32(44, a.vendor_part_id);
    o.u32(48, a.hw_ver);
    o.u32(52, a.max_qp);
    o.u32(56, a.max_qp_wr);
    o.u32(60, a.device_cap_flags as u32);
    // upstream copy_query_dev_fields(): max_sge = min(max_send_sge, max_recv_sge).
    o.u32(64, a.max_send_sge.min(a.max_recv_sge));
    o.u32(68, a.max_sge_rd);
    o.u32(72, a.max_cq);
    o.u32(76, a.max_cqe);
    o.u32(80, a.max_mr);
    o.u32(84, a.max_pd);
    o.u32(88, a.max_qp_rd_atom);
    o.u32(96, a.max_res_rd_atom);
    o.u32(100, a.max_qp_init_rd_atom);
    o.u32(108, a.atomic_cap);
    o.u32(120, a.max_mw);
    o.u32(132, a.max_mcast_grp);
    o.u32(136, a.max_mcast_qp_attach);
    o.u32(140, a.max_total_mcast_qp_attach);
    o.u32(144, a.max_ah);
    o.u32(156, a.max_srq);
    o.u32(160, a.max_srq_wr);
    o.u32(164, a.max_srq_sge);
    o.u8(170, a.local_ca_ack_delay);
    o.u16(168, pkeys); // max_pkeys
    o.u8(171, phys_port_cnt.min(255) as u8);
    o
}

/// `struct ib_uverbs_query_port_resp` (upstream `copy_port_attr_to_resp()`).
pub(crate) fn query_port_resp(p: &PortAttr, imm: &PortImmutable) -> Out<QUERY_PORT_RESP_EX> {
    let mut o = Out::new();
    // upstream make_port_cap_flags(): bit 26 is not the IBA bit there but
    // IB_UVERBS_PCF_IP_BASED_GIDS, set for ports whose GIDs are IP based (RoCE: mlx5 and rxe
    // set `ip_gids`).
    const IP_BASED_GIDS: u32 = 1 << 26;
    let ip_gids = if imm.link_layer == LinkLayer::Ethernet {
        IP_BASED_GIDS
    } else {
        0
    };
    o.u32(0, (p.port_cap_flags & !IP_BASED_GIDS) | ip_gids);
    // A driver that does not report a value gets what this layer always answered.
    let or = |v: u32, d: u32| if v == 0 { d } else { v };
    o.u32(4, or(p.max_msg_sz, 1 << 31));
    o.u32(16, imm.gid_tbl_len);
    o.u16(20, imm.pkey_tbl_len.min(u16::MAX.into()) as u16);
    o.u16(22, p.lid.min(u16::MAX.into()) as u16);
    o.u16(24, p.sm_lid.min(u16::MAX.into()) as u16);
    o.u8(26, p.state as u8);
    o.u8(27, or(p.max_mtu.into(), 5) as u8); // IB_MTU_4096 by default
    o.u8(28, or(p.active_mtu.into(), 5) as u8);
    o.u8(29, p.lmc);
    o.u8(30, or(p.max_vl_num.into(), 1) as u8);
    o.u8(31, p.sm_sl);
    o.u8(32, p.subnet_timeout);
    o.u8(34, p.active_width);
    o.u8(35, p.active_speed.min(u8::MAX.into()) as u8);
    o.u8(36, p.phys_state);
    o.u8(
        37,
        match imm.link_layer {
            LinkLayer::Infiniband => 1,
            LinkLayer::Ethernet => 2,
        },
    );
    o
}
