// SPDX-License-Identifier: GPL-2.0

//! Device and port attributes, computed the way upstream mlx5_ib computes them, into plain
//! structs the driver state keeps: [`DeviceAttrs`] (`mlx5_ib_query_device()`), [`PortAttrs`]
//! (`mlx5_query_hca_port()` for InfiniBand, `mlx5_query_port_roce()` for Ethernet) and
//! [`PortImmutable`] (`mlx5_port_immutable()`). Pure functions of the capability page and the
//! query replies, so KUnit checks them against the simulator's profile values.
//!
//! Upstream computes `1 << log_max_x` in `int`; a firmware value that would overflow that is
//! undefined behaviour there and saturates here ([`pow2`]).

use crate::cmd::query::{HcaVport, NicVport};
use crate::cmd::reg::{PmtuValue, PtysValue};
use crate::hw::{CapType, Mlx5Hw};
use crate::prm::ctx::{atomic_caps, cmd_hca_cap, device_mem_cap, roce_cap};
use crate::prm::layout::{Buf, Member, PrmLayout};
use kernel::prelude::*;

/// `RDMA_CORE_*` port capability flags (include/rdma/ib_verbs.h).
pub(crate) mod core_cap {
    /// `RDMA_CORE_CAP_IB_GRH_REQUIRED`.
    pub(crate) const IB_GRH_REQUIRED: u32 = 0x0000_8000;
    /// `RDMA_CORE_PORT_IBA_IB`: PROT_IB | IB_MAD | IB_SMI | IB_CM | IB_SA | AF_IB.
    pub(crate) const PORT_IBA_IB: u32 = 0x0010_0000 | 0x1 | 0x2 | 0x4 | 0x10 | 0x1000;
    /// `RDMA_CORE_PORT_IBA_ROCE`: PROT_ROCE | IB_MAD | IB_CM | AF_IB | ETH_AH.
    pub(crate) const PORT_IBA_ROCE: u32 = 0x0020_0000 | 0x1 | 0x4 | 0x1000 | 0x2000;
    /// `RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP`: PROT_ROCE_UDP_ENCAP | IB_MAD | IB_CM | AF_IB | ETH_AH.
    pub(crate) const PORT_IBA_ROCE_UDP_ENCAP: u32 = 0x0080_0000 | 0x1 | 0x4 | 0x1000 | 0x2000;
    /// `RDMA_CORE_PORT_RAW_PACKET`.
    pub(crate) const PORT_RAW_PACKET: u32 = 0x0100_0000;
}

/// `IB_PORT_CAP_MASK2_SUP` (ib_mad.h).
const IB_PORT_CAP_MASK2_SUP: u32 = 1 << 15;
/// `IB_PORT_CM_SUP` (ib_mad.h).
const IB_PORT_CM_SUP: u32 = 1 << 16;
/// `IB_MGMT_MAD_SIZE`.
pub(crate) const IB_MGMT_MAD_SIZE: u32 = 256;
/// `MLX5_MAX_SGE_RD` (device.h): (512 - 16 - 16) / 16.
const MLX5_MAX_SGE_RD: u32 = (512 - 16 - 16) / 16;
/// `sizeof(struct mlx5_wqe_data_seg)`, `_ctrl_seg`, `_raddr_seg` (qp.h).
const WQE_SEG: u32 = 16;
/// `mlx5_ib_calc_max_sq_overhead()` (main.c): the XRC initiator case, control (16) + XRC (16)
/// segments and max(atomic 16 + raddr 16, UMR control 48 + mkey 64 + 64 / 16 inline octowords);
/// the UD LSO case (16 + 16 + 16 + 48) is smaller.
const MAX_SQ_OVERHEAD: u32 = 16 + 16 + (48 + 64 + 64 / 16);

/// `enum ib_port_width`.
pub(crate) mod width {
    /// `IB_WIDTH_1X`.
    pub(crate) const W1X: u8 = 1;
    /// `IB_WIDTH_2X`.
    pub(crate) const W2X: u8 = 16;
    /// `IB_WIDTH_4X`.
    pub(crate) const W4X: u8 = 2;
    /// `IB_WIDTH_8X`.
    pub(crate) const W8X: u8 = 4;
    /// `IB_WIDTH_12X`.
    pub(crate) const W12X: u8 = 8;
}

/// `enum ib_port_speed`.
pub(crate) mod speed {
    /// `IB_SPEED_SDR`.
    pub(crate) const SDR: u16 = 1;
    /// `IB_SPEED_DDR`.
    pub(crate) const DDR: u16 = 2;
    /// `IB_SPEED_QDR`.
    pub(crate) const QDR: u16 = 4;
    /// `IB_SPEED_FDR`.
    pub(crate) const FDR: u16 = 16;
    /// `IB_SPEED_EDR`.
    pub(crate) const EDR: u16 = 32;
    /// `IB_SPEED_HDR`.
    pub(crate) const HDR: u16 = 64;
    /// `IB_SPEED_NDR`.
    pub(crate) const NDR: u16 = 128;
    /// `IB_SPEED_XDR`.
    pub(crate) const XDR: u16 = 256;
}

/// `1 << log` as upstream's `int` arithmetic gives it for sane values; saturates at
/// `i32::MAX` where upstream would overflow.
pub(crate) fn pow2(log: u32) -> u32 {
    if log >= 31 {
        i32::MAX as u32
    } else {
        1 << log
    }
}

/// A cached capability page of layout `L` (`mdev->caps.hca[type]->cur`), length-checked once
/// when it is taken from the cache ([`Caps::new`]), so that reading a capability cannot fail,
/// as `MLX5_CAP_GEN()` cannot: every member of `L` lies inside the page.
#[derive(Clone, Copy)]
pub(crate) struct Caps<'a, L>(Buf<'a, L>);

/// The general capabilities (`MLX5_CAP_GEN`).
pub(crate) type GenCaps<'a> = Caps<'a, cmd_hca_cap::Bits>;
/// The RoCE capabilities (`MLX5_CAP_ROCE`).
pub(crate) type RoceCaps<'a> = Caps<'a, roce_cap::Bits>;
/// The atomic capabilities (`MLX5_CAP_ATOMIC`).
pub(crate) type AtomicCaps<'a> = Caps<'a, atomic_caps::Bits>;
/// The device memory capabilities (`MLX5_CAP_DEV_MEM`).
pub(crate) type DevMemCaps<'a> = Caps<'a, device_mem_cap::Bits>;

/// upstream `mlx5_ib_query_device()`: `props->max_dm_size = MLX5_CAP_DEV_MEM(mdev,
/// max_memic_size)` when the device has MEMIC; 0 otherwise (and without the page).
pub(crate) fn max_dm_size(dm: Option<DevMemCaps<'_>>) -> u64 {
    match dm {
        Some(c) if c.flag(device_mem_cap::memic) => {
            u64::from(c.get(device_mem_cap::max_memic_size))
        }
        _ => 0,
    }
}

impl<'a, L: PrmLayout> Caps<'a, L> {
    /// Views a cached page as `L`; `None` if it is too short (it never is: the backend caches
    /// whole 4 KiB pages).
    pub(crate) fn new(page: &'a [u8]) -> Option<Self> {
        Buf::new(page).ok().map(Self)
    }

    /// One capability (`MLX5_CAP_GEN(mdev, name)`).
    pub(crate) fn get(&self, m: Member<L>) -> u32 {
        self.0.get(m)
    }

    /// A 64-bit capability (`MLX5_CAP64_*`).
    pub(crate) fn get64(&self, m: Member<L>) -> u64 {
        self.0.get64(m)
    }

    /// A one-bit capability.
    pub(crate) fn flag(&self, m: Member<L>) -> bool {
        self.get(m) != 0
    }
}

impl<'a> GenCaps<'a> {
    /// The general capabilities `hw` cached at init.
    ///
    /// # Errors
    ///
    /// `EIO` if the backend has none (it always has).
    pub(crate) fn of(hw: &'a dyn Mlx5Hw) -> Result<Self> {
        hw.caps(CapType::General).and_then(Caps::new).ok_or(EIO)
    }
}

/// `mlx5_get_gid_table_len()` (driver.h).
pub(crate) fn gid_table_len(param: u32) -> u32 {
    if param > 4 {
        0
    } else {
        8 * (1 << param)
    }
}

/// `mlx5_to_sw_pkey_sz()` (device.h): `MLX5_MIN_PKEY_TABLE_SIZE << n`, 0 above
/// `MLX5_MAX_LOG_PKEY_TABLE` (5).
pub(crate) fn sw_pkey_sz(n: u32) -> u16 {
    if n > 5 {
        0
    } else {
        128 << n
    }
}

/// `mlx5_mtu_to_ib_mtu()`: bytes to `enum ib_mtu`; 0 for a value upstream warns about.
pub(crate) fn mtu_to_ib_mtu(mtu: u16) -> u8 {
    match mtu {
        256 => 1,
        512 => 2,
        1024 => 3,
        2048 => 4,
        4096 => 5,
        _ => 0,
    }
}

/// `ib_device_attr` as mlx5_ib fills it (the members that do not need ODP, DM, flow steering or
/// the Ethernet capability page, which this driver does not cache yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DeviceAttrs {
    pub(crate) fw_ver: u64,
    pub(crate) sys_image_guid: u64,
    pub(crate) node_guid: u64,
    pub(crate) max_mr_size: u64,
    pub(crate) page_size_cap: u64,
    pub(crate) vendor_id: u32,
    pub(crate) vendor_part_id: u32,
    pub(crate) hw_ver: u32,
    pub(crate) max_qp: u32,
    pub(crate) max_qp_wr: u32,
    pub(crate) device_cap_flags: u64,
    pub(crate) max_send_sge: u32,
    pub(crate) max_recv_sge: u32,
    pub(crate) max_sge_rd: u32,
    pub(crate) max_cq: u32,
    pub(crate) max_cqe: u32,
    pub(crate) max_mr: u32,
    pub(crate) max_pd: u32,
    pub(crate) max_qp_rd_atom: u32,
    pub(crate) max_qp_init_rd_atom: u32,
    pub(crate) max_res_rd_atom: u32,
    /// `IB_ATOMIC_*` ([`atomic_cap`]).
    pub(crate) atomic_cap: u32,
    pub(crate) max_srq: u32,
    pub(crate) max_srq_wr: u32,
    pub(crate) max_srq_sge: u32,
    pub(crate) max_fast_reg_page_list_len: u32,
    pub(crate) max_pi_fast_reg_page_list_len: u32,
    pub(crate) max_sgl_rd: u32,
    pub(crate) local_ca_ack_delay: u8,
    pub(crate) max_mw: u32,
    pub(crate) max_mcast_grp: u32,
    pub(crate) max_mcast_qp_attach: u32,
    pub(crate) max_total_mcast_qp_attach: u32,
    pub(crate) max_ah: u32,
    pub(crate) max_pkeys: u16,
    pub(crate) hca_core_clock: u64,
    pub(crate) timestamp_mask: u64,
    /// `cq_caps.max_cq_moderation_count`/`_period` (`MLX5_MAX_CQ_COUNT`/`_PERIOD` with
    /// `cmd_hca_cap.cq_moderation`).
    pub(crate) max_cq_moderation_count: u16,
    pub(crate) max_cq_moderation_period: u16,
    pub(crate) phys_port_cnt: u8,
    /// `max_dm_size`: `device_mem_cap.max_memic_size` with `memic` ([`max_dm_size`]).
    pub(crate) max_dm_size: u64,
}

/// What [`device_attrs`] needs besides the capability page.
pub(crate) struct DeviceIds {
    /// `fw_rev_maj/min/sub`.
    pub(crate) fw_rev: (u16, u16, u16),
    /// QUERY_ADAPTER `ieee_vendor_id`.
    pub(crate) vendor_id: u32,
    /// PCI device id.
    pub(crate) pci_device: u16,
    /// PCI revision.
    pub(crate) pci_revision: u8,
    /// System image GUID (vport context).
    pub(crate) sys_image_guid: u64,
    /// Node GUID (vport context).
    pub(crate) node_guid: u64,
    /// Ports.
    pub(crate) num_ports: u8,
}

/// upstream `mlx5_ib_query_device()`, without udata.
///
/// # Errors
///
/// None today: every attribute is computed from the page (the `Result` is the shape of the
/// other attribute functions).
pub(crate) fn device_attrs(gen: GenCaps<'_>, ids: &DeviceIds) -> Result<DeviceAttrs> {
    use ib_core_rs::attr::device_cap::*;
    let g = |f| gen.get(f);
    let mut flags = CHANGE_PHY_PORT | PORT_ACTIVE_EVENT | SYS_IMAGE_GUID | RC_RNR_NAK_GEN;
    if gen.flag(cmd_hca_cap::pkv) {
        flags |= BAD_PKEY_CNTR;
    }
    if gen.flag(cmd_hca_cap::qkv) {
        flags |= BAD_QKEY_CNTR;
    }
    if gen.flag(cmd_hca_cap::apm) {
        flags |= AUTO_PATH_MIG;
    }
    // upstream: IB_DEVICE_XRC with `cmd_hca_cap.xrc`, with the XRC verbs
    // (`mlx5_ib_dev_xrc_ops`, `ib::ops::XRC_OPS`, set on the same capability).
    if gen.flag(cmd_hca_cap::xrc) {
        flags |= XRC;
    }
    let cq_moderation = gen.flag(cmd_hca_cap::cq_moderation);
    let mut max_mw = 0;
    if gen.flag(cmd_hca_cap::imaicl) {
        flags |= MEM_WINDOW | MEM_WINDOW_TYPE_2B;
        max_mw = pow2(g(cmd_hca_cap::log_max_mkey));
    }
    // upstream: IB_DEVICE_MEM_MGT_EXTENSIONS without `umr_modify_entity_size_disabled`. This
    // driver posts no fast-register or local-invalidate WRs (`IB_WR_REG_MR`, `IB_WR_LOCAL_INV`
    // are EINVAL, `ib::qp::wr`), so it leaves the flag out.
    if gen.flag(cmd_hca_cap::ipoib_basic_offloads) {
        flags |= UD_IP_CSUM;
    }
    if gen.flag(cmd_hca_cap::end_pad) {
        flags |= PCI_WRITE_END_PADDING;
    }
    let min_page_size = 1u64.checked_shl(g(cmd_hca_cap::log_pg_sz)).unwrap_or(0);

    // mlx5_ib_calc_max_qp_wr(): the largest WQE with one SGE, rounded to a power of two.
    let max_wqe_size = (MAX_SQ_OVERHEAD + WQE_SEG).next_power_of_two();
    let max_qp_wr = u64::from(pow2(g(cmd_hca_cap::log_max_qp_sz)))
        * crate::prm::wqe::SEND_WQE_BB as u64
        / u64::from(max_wqe_size);
    let max_rq_sg = g(cmd_hca_cap::max_wqe_sz_rq) / WQE_SEG;
    let max_sq_desc = g(cmd_hca_cap::max_wqe_sz_sq).min(512);
    let max_sq_sg = max_sq_desc.saturating_sub(2 * WQE_SEG) / WQE_SEG;
    let max_qp = pow2(g(cmd_hca_cap::log_max_qp));
    let max_qp_rd_atom = pow2(g(cmd_hca_cap::log_max_ra_req_qp));
    let max_fast_reg = pow2(g(cmd_hca_cap::log_max_klm_list_size));
    let max_mcast_grp = pow2(g(cmd_hca_cap::log_max_mcg));
    let max_mcast_qp_attach = g(cmd_hca_cap::max_qp_mcg);
    let pkey_table_size = g(cmd_hca_cap::pkey_table_size);
    Ok(DeviceAttrs {
        fw_ver: u64::from(ids.fw_rev.0) << 32
            | u64::from(ids.fw_rev.1) << 16
            | u64::from(ids.fw_rev.2),
        sys_image_guid: ids.sys_image_guid,
        node_guid: ids.node_guid,
        max_mr_size: u64::MAX,
        page_size_cap: !(min_page_size.wrapping_sub(1)),
        vendor_id: ids.vendor_id,
        vendor_part_id: u32::from(ids.pci_device),
        hw_ver: u32::from(ids.pci_revision),
        max_qp,
        max_qp_wr: u32::try_from(max_qp_wr).unwrap_or(u32::MAX),
        device_cap_flags: flags,
        max_send_sge: max_sq_sg,
        max_recv_sge: max_rq_sg,
        max_sge_rd: MLX5_MAX_SGE_RD,
        max_cq: pow2(g(cmd_hca_cap::log_max_cq)),
        max_cqe: pow2(g(cmd_hca_cap::log_max_cq_sz)) - 1,
        max_mr: pow2(g(cmd_hca_cap::log_max_mkey)),
        max_pd: pow2(g(cmd_hca_cap::log_max_pd)),
        max_qp_rd_atom,
        max_qp_init_rd_atom: pow2(g(cmd_hca_cap::log_max_ra_res_qp)),
        max_res_rd_atom: max_qp_rd_atom.saturating_mul(max_qp),
        // From the atomic capability page ([`atomic_cap`]), which the caller has.
        atomic_cap: 0,
        max_srq: pow2(g(cmd_hca_cap::log_max_srq)),
        max_srq_wr: pow2(g(cmd_hca_cap::log_max_srq_sz)) - 1,
        max_srq_sge: max_rq_sg.saturating_sub(1),
        max_fast_reg_page_list_len: max_fast_reg,
        max_pi_fast_reg_page_list_len: max_fast_reg / 2,
        max_sgl_rd: g(cmd_hca_cap::max_sgl_for_optimized_performance),
        local_ca_ack_delay: g(cmd_hca_cap::local_ca_ack_delay) as u8,
        max_mw,
        max_mcast_grp,
        max_mcast_qp_attach,
        max_total_mcast_qp_attach: max_mcast_qp_attach.saturating_mul(max_mcast_grp),
        max_ah: i32::MAX as u32,
        max_pkeys: sw_pkey_sz(pkey_table_size),
        hca_core_clock: u64::from(g(cmd_hca_cap::device_frequency_khz)),
        timestamp_mask: 0x7FFF_FFFF_FFFF_FFFF,
        max_cq_moderation_count: if cq_moderation { 0xffff } else { 0 },
        max_cq_moderation_period: if cq_moderation { 0xfff } else { 0 },
        phys_port_cnt: ids.num_ports,
        max_dm_size: 0,
    })
}

/// `MLX5_ATOMIC_OPS_CMP_SWAP | MLX5_ATOMIC_OPS_FETCH_ADD` (driver.h).
const ATOMIC_OPS_CS_FA: u32 = (1 << 0) | (1 << 1);
/// `MLX5_ATOMIC_SIZE_QP_8BYTES`.
const ATOMIC_SIZE_QP_8BYTES: u32 = 1 << 3;
/// `IB_ATOMIC_HCA`.
pub(crate) const IB_ATOMIC_HCA: u32 = 1;

/// upstream `get_atomic_caps_qp()` (main.c): `IB_ATOMIC_HCA` when the atomic capability page
/// offers 8-byte compare-and-swap and fetch-and-add on QPs with host-endian responses, else
/// `IB_ATOMIC_NONE` (0; also without the page).
///
/// # Errors
///
/// None today: a missing page is no atomics (0).
pub(crate) fn atomic_cap(page: Option<AtomicCaps<'_>>) -> Result<u32> {
    use crate::prm::ctx::atomic_caps;
    let Some(c) = page else {
        return Ok(0);
    };
    let ops = c.get(atomic_caps::atomic_operations);
    let ok = ops & ATOMIC_OPS_CS_FA == ATOMIC_OPS_CS_FA
        && c.get(atomic_caps::atomic_size_qp) & ATOMIC_SIZE_QP_8BYTES != 0
        && c.get(atomic_caps::atomic_req_8B_endianness_mode) != 0;
    Ok(if ok { IB_ATOMIC_HCA } else { 0 })
}

/// `ib_port_attr` as mlx5_ib fills it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PortAttrs {
    /// `enum ib_port_state` (4 ACTIVE, 1 DOWN).
    pub(crate) state: u8,
    /// `enum ib_port_phys_state` (5 LinkUp, 3 Disabled).
    pub(crate) phys_state: u8,
    /// `enum ib_mtu`.
    pub(crate) max_mtu: u8,
    /// `enum ib_mtu`.
    pub(crate) active_mtu: u8,
    pub(crate) gid_tbl_len: u32,
    pub(crate) ip_gids: bool,
    pub(crate) port_cap_flags: u32,
    pub(crate) port_cap_flags2: u32,
    pub(crate) max_msg_sz: u32,
    pub(crate) bad_pkey_cntr: u32,
    pub(crate) qkey_viol_cntr: u32,
    pub(crate) pkey_tbl_len: u16,
    pub(crate) lid: u32,
    pub(crate) sm_lid: u32,
    pub(crate) lmc: u8,
    pub(crate) max_vl_num: u8,
    pub(crate) sm_sl: u8,
    pub(crate) subnet_timeout: u8,
    pub(crate) init_type_reply: u8,
    /// `enum ib_port_width`.
    pub(crate) active_width: u8,
    /// `enum ib_port_speed`.
    pub(crate) active_speed: u16,
}

/// `translate_active_width()`: PTYS width bits to `ib_port_width`, 4X for nonsense.
pub(crate) fn active_width(w: u16) -> u8 {
    if w & 1 != 0 {
        width::W1X
    } else if w & 2 != 0 {
        width::W2X
    } else if w & 4 != 0 {
        width::W4X
    } else if w & 8 != 0 {
        width::W8X
    } else if w & 16 != 0 {
        width::W12X
    } else {
        width::W4X
    }
}

/// `translate_max_vl_num()`: `MLX5_VL_HW_*` to `__IB_MAX_VL_*`.
///
/// # Errors
///
/// `EINVAL` for an encoding upstream does not know (upstream fails `query_port` the same way).
pub(crate) fn max_vl_num(vl_hw_cap: u8) -> Result<u8> {
    match vl_hw_cap {
        1 => Ok(1),
        2 => Ok(2),
        4 => Ok(3),
        8 => Ok(4),
        15 => Ok(5),
        _ => Err(EINVAL),
    }
}

/// upstream `mlx5_query_hca_port()`: an InfiniBand port, from the HCA vport context and the
/// PTYS/PMTU/PVLC registers.
///
/// # Errors
///
/// `EINVAL` for a PVLC `vl_hw_cap` upstream's `translate_max_vl_num()` refuses.
pub(crate) fn ib_port_attrs(
    gen: GenCaps<'_>,
    vport: &HcaVport,
    ptys: &PtysValue,
    pmtu: &PmtuValue,
    vl_hw_cap: u8,
) -> Result<PortAttrs> {
    let mut a = PortAttrs {
        lid: u32::from(vport.lid),
        lmc: vport.lmc,
        sm_lid: u32::from(vport.sm_lid),
        sm_sl: vport.sm_sl,
        state: vport.vport_state,
        phys_state: vport.port_physical_state,
        port_cap_flags: vport.cap_mask1,
        gid_tbl_len: gid_table_len(gen.get(cmd_hca_cap::gid_table_size)),
        max_msg_sz: pow2(gen.get(cmd_hca_cap::log_max_msg)),
        pkey_tbl_len: sw_pkey_sz(gen.get(cmd_hca_cap::pkey_table_size)),
        bad_pkey_cntr: u32::from(vport.pkey_violation_counter),
        qkey_viol_cntr: u32::from(vport.qkey_violation_counter),
        subnet_timeout: vport.subnet_timeout,
        init_type_reply: vport.init_type_reply,
        active_width: active_width(ptys.ib_link_width_oper),
        active_speed: ptys.ib_proto_oper,
        max_mtu: mtu_to_ib_mtu(pmtu.max_mtu),
        active_mtu: mtu_to_ib_mtu(pmtu.oper_mtu),
        max_vl_num: max_vl_num(vl_hw_cap)?,
        ..PortAttrs::default()
    };
    if a.port_cap_flags & IB_PORT_CAP_MASK2_SUP != 0 {
        a.port_cap_flags2 = vport.cap_mask2;
    }
    Ok(a)
}

/// `translate_eth_legacy_proto_oper()`.
fn eth_legacy_speed(oper: u32) -> Option<(u8, u16)> {
    use speed::*;
    use width::*;
    let bit = |n: u32| 1u32 << n;
    Some(match oper {
        o if o == bit(0) || o == bit(1) || o == bit(24) || o == bit(25) => (W1X, SDR),
        o if [26, 2, 3, 4, 12, 13, 14].iter().any(|&n| o == bit(n)) => (W1X, QDR),
        o if [27, 28, 29].iter().any(|&n| o == bit(n)) => (W1X, EDR),
        o if [6, 7, 15, 16].iter().any(|&n| o == bit(n)) => (W4X, QDR),
        o if [30, 31, 18].iter().any(|&n| o == bit(n)) => (W1X, HDR),
        o if o == bit(8) => (W4X, FDR),
        o if [20, 21, 22, 23].iter().any(|&n| o == bit(n)) => (W4X, EDR),
        _ => return None,
    })
}

/// `translate_eth_ext_proto_oper()`.
fn eth_ext_speed(oper: u32) -> Option<(u8, u16)> {
    use speed::*;
    use width::*;
    if !oper.is_power_of_two() {
        return None;
    }
    Some(match oper.trailing_zeros() {
        0 | 1 => (W1X, SDR),
        3 => (W1X, DDR),
        4 => (W1X, QDR),
        5 => (W4X, QDR),
        6 => (W1X, EDR),
        7 => (W2X, EDR),
        8 => (W1X, HDR),
        9 => (W4X, EDR),
        10 => (W2X, HDR),
        11 => (W1X, NDR),
        12 => (W4X, HDR),
        13 => (W2X, NDR),
        14 => (W1X, XDR),
        15 => (W8X, HDR),
        16 => (W4X, NDR),
        17 => (W2X, XDR),
        19 => (W8X, NDR),
        20 => (W4X, XDR),
        23 => (W8X, XDR),
        _ => return None,
    })
}

/// The link state of an Ethernet port. Upstream takes it from the netdev (`netif_running() &&
/// netif_carrier_ok()`, `iboe_get_mtu(ndev->mtu)`); so does this driver on a simulated
/// function, whose interface it registers (`crate::eth`). On an mlx5_core function (whose
/// netdev is mlx5e's, not bound here yet) it uses the port's PAOS operational status and the
/// NIC vport MTU instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EthLink {
    /// The port is up.
    pub(crate) up: bool,
    /// NIC vport MTU (hardware MTU: the netdev MTU + 22 bytes of Ethernet header, VLAN tag and
    /// FCS, `MLX5E_SW2HW_MTU`).
    pub(crate) hw_mtu: u32,
}

/// The hardware MTU less the netdev MTU: Ethernet header, VLAN tag and FCS (mlx5e's
/// `MLX5E_SW2HW_MTU()`, `ETH_HLEN + VLAN_HLEN + ETH_FCS_LEN`).
pub(crate) const ETH_HW_MTU_OVERHEAD: u32 = 22;

/// `iboe_get_mtu()` (ib_addr.h) of a netdev MTU.
pub(crate) fn iboe_get_mtu(mtu: u32) -> u8 {
    // GRH 40 + UDP 8 + BTH 12 + XRC ETH 4 + AtomicETH 28 + ICRC 4.
    let mtu = mtu.saturating_sub(40 + 8 + 12 + 4 + 28 + 4);
    match mtu {
        4096.. => 5,
        2048.. => 4,
        1024.. => 3,
        512.. => 2,
        256.. => 1,
        _ => 0,
    }
}

/// upstream `mlx5_query_port_roce()` for a function's own port.
///
/// # Errors
///
/// None today: the replies are already checked by their commands.
pub(crate) fn roce_port_attrs(
    gen: GenCaps<'_>,
    roce: Option<RoceCaps<'_>>,
    nic: &NicVport,
    ptys: &PtysValue,
    link: EthLink,
) -> Result<PortAttrs> {
    let ext = ptys.ext_eth_proto_capability != 0;
    let oper = if ext {
        ptys.ext_eth_proto_oper
    } else {
        ptys.eth_proto_oper
    };
    let (w, s) = if ext {
        eth_ext_speed(oper)
    } else {
        eth_legacy_speed(oper)
    }
    .unwrap_or((width::W4X, speed::QDR));
    let mut a = PortAttrs {
        active_width: w,
        active_speed: s,
        max_mtu: 5,
        max_msg_sz: pow2(gen.get(cmd_hca_cap::log_max_msg)),
        pkey_tbl_len: 1,
        state: 1,
        phys_state: 3,
        ..PortAttrs::default()
    };
    if nic.roce_en {
        a.port_cap_flags |= IB_PORT_CM_SUP;
        a.ip_gids = true;
        a.gid_tbl_len = match roce {
            Some(r) => r.get(roce_cap::roce_address_table_size),
            None => 0,
        };
        a.qkey_viol_cntr = u32::from(nic.qkey_violation_counter);
    }
    if link.up {
        a.state = 4;
        a.phys_state = 5;
    }
    a.active_mtu = a.max_mtu.min(iboe_get_mtu(
        link.hw_mtu.saturating_sub(ETH_HW_MTU_OVERHEAD),
    ));
    Ok(a)
}

/// `ib_port_immutable`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PortImmutable {
    pub(crate) pkey_tbl_len: u32,
    pub(crate) gid_tbl_len: u32,
    pub(crate) core_cap_flags: u32,
    pub(crate) max_mad_size: u32,
}

/// upstream `mlx5_port_immutable()` + `get_core_cap_flags()` (not multi-plane, not an SMI
/// device, raw packet supported: no multi-port affiliation).
///
/// # Errors
///
/// None today.
pub(crate) fn port_immutable(
    attrs: &PortAttrs,
    ib: Option<&HcaVport>,
    roce: Option<RoceCaps<'_>>,
) -> Result<PortImmutable> {
    let mut flags = 0;
    if ib.is_some_and(|v| v.grh_required) {
        flags |= core_cap::IB_GRH_REQUIRED;
    }
    if ib.is_some() {
        flags |= core_cap::PORT_IBA_IB;
    } else {
        flags |= core_cap::PORT_RAW_PACKET;
        let (l3, ver) = match roce {
            Some(r) => (r.get(roce_cap::l3_type), r.get(roce_cap::roce_version)),
            None => (0, 0),
        };
        // MLX5_ROCE_L3_TYPE_IPV4_CAP | _IPV6_CAP both needed; then the RoCE versions.
        if l3 & (1 << 1) != 0 && l3 & (1 << 2) != 0 {
            if ver & (1 << 0) != 0 {
                flags |= core_cap::PORT_IBA_ROCE;
            }
            if ver & (1 << 2) != 0 {
                flags |= core_cap::PORT_IBA_ROCE_UDP_ENCAP;
            }
        }
    }
    Ok(PortImmutable {
        pkey_tbl_len: u32::from(attrs.pkey_tbl_len),
        gid_tbl_len: attrs.gid_tbl_len,
        core_cap_flags: flags,
        max_mad_size: IB_MGMT_MAD_SIZE,
    })
}
