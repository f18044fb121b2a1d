// SPDX-License-Identifier: GPL-2.0

//! Query commands, port registers and the RoCE address table: what `mlx5_ib` reads at probe,
//! `query_device` and `query_port`, answered from the [`super::profile::Profile`] and the port
//! state.

use super::profile::LinkLayer;
use super::syndrome::{self as syn, CmdError};
use super::{fail, memic, Cmd, Done, Fw, RoceAddr};
use crate::prm::cmd::*;
use crate::prm::command::*;
use crate::prm::consts::*;
use crate::prm::ctx::{
    atomic_caps, cmd_hca_cap, device_mem_cap, hca_vport_context, mac_address_layout,
    nic_vport_context, paos_reg, pkey, pmtu_reg, ptys_reg, pvlc_reg, query_adapter_param_block,
    roce_addr_layout, roce_cap,
};
use crate::prm::layout::{Field, Member, PrmLayout};
use crate::prm::status::Status;

/// Special mkeys of QUERY_SPECIAL_CONTEXTS: indices 1..=5 with key byte 0, all below the first
/// index CREATE_MKEY hands out, so they never collide with a created mkey.
const SPECIAL_MKEYS: [(Member<query_special_contexts_out::Bits>, u32); 5] = [
    (query_special_contexts_out::resd_lkey, 0x100),
    (query_special_contexts_out::null_mkey, 0x200),
    (
        query_special_contexts_out::terminate_scatter_list_mkey,
        0x300,
    ),
    (query_special_contexts_out::dump_fill_mkey, 0x400),
    (query_special_contexts_out::repeated_mkey, 0x500),
];

/// GIDs per IB port: `gid_table_size` 0 encodes 8 (`mlx5_get_gid_table_len()`).
const IB_GIDS: u32 = 8;
/// PKeys per port: `pkey_table_size` 0 encodes 128 (`mlx5_to_sw_pkey_sz()`).
const PKEYS: u32 = 128;
/// The "all entries" index of QUERY_HCA_VPORT_GID/PKEY (`mlx5_query_hca_vport_gid()`).
const ALL_ENTRIES: u32 = 0xffff;
/// IB link width 4X (`ptys_reg.ib_link_width_*` bit 2, `MLX5_PTYS_WIDTH_4X` in port.h).
const IB_WIDTH_4X: u32 = 1 << 2;

impl Fw {
    /// QUERY_HCA_CAP: general, atomic, RoCE, device memory and (empty) NIC flow table
    /// capabilities; max and current are the same.
    pub(super) fn query_hca_cap(&mut self, c: &mut Cmd<'_, QueryHcaCap>) -> Done {
        c.own_function(&[query_hca_cap_in::other_function])?;
        let cap = query_hca_cap_out::capability;
        match c.op_mod >> 1 {
            CAP_GENERAL => {
                self.fill_general_caps(c, cap)?;
                // Values SET_HCA_CAP changed show in "cur" only (`hca.rs`).
                if c.op_mod & 1 == HCA_CAP_OPMOD_GET_CUR {
                    self.apply_cur_general(c, cap)?;
                }
                Ok(())
            }
            CAP_ROCE if self.cfg.link_layer == LinkLayer::Ethernet => {
                let f = |m| cap.inner(m);
                c.set(f(roce_cap::roce_apm), 0)?;
                c.set(f(roce_cap::sw_r_roce_src_udp_port), 1)?;
                // Bits of the supported RoCE versions and L3 types (device.h): v1 and v2
                // (`MLX5_ROCE_VERSION_1_CAP | _2_CAP` = 1 << 0 | 1 << 2), IPv4 and IPv6
                // (`MLX5_ROCE_L3_TYPE_IPV4_CAP | _IPV6_CAP` = 1 << 1 | 1 << 2).
                c.set(f(roce_cap::roce_version), 0x5)?;
                c.set(f(roce_cap::l3_type), 0x6)?;
                c.set(f(roce_cap::r_roce_dest_udp_port), 4791)?;
                c.set(f(roce_cap::r_roce_min_src_udp_port), 0xc000)?;
                c.set(f(roce_cap::r_roce_max_src_udp_port), 0xffff)?;
                c.set(
                    f(roce_cap::roce_address_table_size),
                    self.cfg.profile.roce_address_table_size,
                )
            }
            // What `get_atomic_caps()` in mlx5_ib needs for IB_ATOMIC_HCA: compare-and-swap
            // and fetch-and-add (`MLX5_ATOMIC_OPS_CMP_SWAP | _FETCH_ADD`), 8-byte operands on
            // QPs (`MLX5_ATOMIC_SIZE_QP_8BYTES`), responses in host endianness (mode 1, which
            // mlx5_core's `handle_hca_cap_atomic()` selects when it is supported). The data
            // path implements exactly that (`DmaMem::cmp_swap64`/`fetch_add64`).
            CAP_ATOMIC => {
                let f = |m| cap.inner(m);
                c.set(f(atomic_caps::atomic_req_8B_endianness_mode), 1)?;
                c.set(f(atomic_caps::supported_atomic_req_8B_endianness_mode_1), 1)?;
                c.set(f(atomic_caps::atomic_operations), 0x3)?;
                c.set(f(atomic_caps::atomic_size_qp), 1 << 3)?;
                c.set(f(atomic_caps::atomic_size_dc), 1 << 3)
            }
            // The MEMIC members of `device_mem_cap` (upstream mlx5_core queries the page only
            // with `device_memory`; mlx5_ib's DM reads them). No MEMIC operations, no SW ICM.
            CAP_DEV_MEM if self.cfg.memic => {
                let f = |m| cap.inner(m);
                c.set(f(device_mem_cap::memic), 1)?;
                c.set(
                    f(device_mem_cap::log_min_memic_alloc_size),
                    memic::LOG_GRANULE,
                )?;
                c.set(
                    f(device_mem_cap::log_max_memic_addr_alignment),
                    memic::LOG_MAX_ALIGN,
                )?;
                c.set64(f(device_mem_cap::memic_bar_start_addr), memic::BAR_START)?;
                c.set(f(device_mem_cap::memic_bar_size), memic::SIZE as u32)?;
                c.set(f(device_mem_cap::max_memic_size), memic::SIZE as u32)
            }
            // The NIC flow table capabilities, all zero: no flow table type has `ft_support`,
            // no reformat, no sniffer, as the general page's `nic_flow_table` 0 says. rdma-core
            // (mlx5dv_dr, `dr_devx_query_device()`) and mlx5_core read this page; a ConnectX
            // answers it, so software learns here that steering is absent. The steering
            // commands themselves (CREATE_FLOW_TABLE, ...) are unknown opcodes:
            // `BAD_OP_ERR`.
            CAP_FLOW_TABLE => Ok(()),
            _ => fail(Status::BAD_PARAM_ERR, syn::CAP_TYPE),
        }
    }

    fn fill_general_caps(
        &self,
        c: &mut Cmd<'_, QueryHcaCap>,
        cap: Member<query_hca_cap_out::Bits>,
    ) -> Result<(), CmdError> {
        let p = &self.cfg.profile;
        let eth = self.cfg.link_layer == LinkLayer::Ethernet;
        let values: [(Member<cmd_hca_cap::Bits>, u32); 49] = [
            (cmd_hca_cap::log_max_srq_sz, p.log_max_srq_sz),
            // RTS2RTS may move a QP to another Q counter set (`qp.rs`).
            (cmd_hca_cap::rts2rts_qp_counters_set_id, 1),
            // QUERY_Q_COUNTER's `out_of_sequence` and the retransmission counters
            // (`duplicate_request` .. `local_ack_timeout_err`), moved by RC in packets.
            (cmd_hca_cap::out_of_seq_cnt, 1),
            (cmd_hca_cap::retransmission_q_counters, 1),
            // Q counter sets: the simulator's table.
            (cmd_hca_cap::max_qp_cnt, super::capacity::Q_COUNTER as u32),
            (cmd_hca_cap::log_max_qp_sz, p.log_max_qp_sz),
            (cmd_hca_cap::log_max_qp, p.log_max_qp),
            (cmd_hca_cap::log_max_srq, p.log_max_srq),
            // RMPs: linked-list and cyclic, in pas[] or DEVX umems (`srq.rs`).
            (cmd_hca_cap::log_max_rmp, p.log_max_srq),
            (cmd_hca_cap::log_max_cq_sz, p.log_max_cq_sz),
            (cmd_hca_cap::log_max_cq, p.log_max_cq),
            (cmd_hca_cap::log_max_eq_sz, 22),
            (cmd_hca_cap::log_max_mkey, p.log_max_mkey),
            (cmd_hca_cap::log_max_eq, p.log_max_eq),
            (cmd_hca_cap::log_max_mrw_sz, 64),
            (cmd_hca_cap::log_max_klm_list_size, 16),
            (cmd_hca_cap::log_max_ra_req_qp, p.log_max_ra_qp),
            (cmd_hca_cap::log_max_ra_res_qp, p.log_max_ra_qp),
            // DC targets and initiators (`dct.rs`).
            (cmd_hca_cap::dct, 1),
            (cmd_hca_cap::log_max_ra_req_dc, p.log_max_ra_qp),
            (cmd_hca_cap::log_max_ra_res_dc, p.log_max_ra_qp),
            (cmd_hca_cap::gid_table_size, 0),
            (cmd_hca_cap::pkey_table_size, 0),
            (
                cmd_hca_cap::port_type,
                if eth {
                    CAP_PORT_TYPE_ETH
                } else {
                    CAP_PORT_TYPE_IB
                },
            ),
            (cmd_hca_cap::num_ports, u32::from(self.cfg.num_ports)),
            // InfiniBand: the port is reached through the HCA vport commands
            // (QUERY_HCA_VPORT_CONTEXT/GID/PKEY), as on a ConnectX whose firmware has
            // virtualization enabled; without it upstream mlx5_ib queries the port with
            // MAD_IFC (SubnGet NodeInfo/PortInfo/...); both reach the same SMA (`sma.rs`).
            (cmd_hca_cap::ib_virt, u32::from(!eth)),
            (cmd_hca_cap::log_max_msg, p.log_max_msg),
            (cmd_hca_cap::max_tc, 8),
            (cmd_hca_cap::cqe_version, 1),
            (cmd_hca_cap::roce, u32::from(eth)),
            (cmd_hca_cap::atomic, 1),
            // On-chip memory (`memic.rs`): the MEMIC capability page and ALLOC_MEMIC.
            (cmd_hca_cap::device_memory, u32::from(self.cfg.memic)),
            // XRC domains and XRC SRQs (`xrc.rs`): upstream mlx5_ib does not probe without.
            (cmd_hca_cap::xrc, 1),
            // Memory windows (`engine/umr.rs`: UMR bind and invalidate WQEs on RC/UC QPs).
            (cmd_hca_cap::imaicl, 1),
            // UMR may change an mkey's translation and page size: the engine executes UMR
            // WQEs that bind and invalidate windows, give indirect mkeys a layout, change an
            // MR's PD, rights and key byte, revoke it and load a new MTT translation into it
            // (`engine/umr.rs`), so `mlx5r_umr_can_load_pas()` holds.
            (cmd_hca_cap::umr_modify_entity_size_disabled, 0),
            (cmd_hca_cap::cq_oi, 1),
            (cmd_hca_cap::cq_resize, 1),
            (cmd_hca_cap::cq_moderation, 1),
            // UAR pages are 4 KiB (log 0 above 4 KiB), blue flame registers 256 bytes.
            (cmd_hca_cap::uar_sz, 0),
            (cmd_hca_cap::log_pg_sz, 12),
            (cmd_hca_cap::bf, 1),
            (cmd_hca_cap::log_bf_reg_size, 8),
            (cmd_hca_cap::max_qp_mcg, p.max_qp_mcg),
            (cmd_hca_cap::log_max_mcg, p.log_max_mcg),
            (
                cmd_hca_cap::log_max_transport_domain,
                p.log_max_transport_domain,
            ),
            (cmd_hca_cap::log_max_pd, p.log_max_pd),
            (cmd_hca_cap::log_max_xrcd, 24),
            (cmd_hca_cap::log_max_uctx, p.log_max_uctx),
            (cmd_hca_cap::uctx_cap, p.uctx_cap),
        ];
        for (f, v) in values {
            c.set(cap.inner(f), v)?;
        }
        c.set(cap.inner(cmd_hca_cap::max_wqe_sz_sq), 1024)?;
        c.set(cap.inner(cmd_hca_cap::max_wqe_sz_rq), 512)?;
        // MLX5_GENERAL_OBJ_TYPES_CAP_UCTX (bit 4): DEVX user contexts.
        c.set64(cap.inner(cmd_hca_cap::general_obj_types), 1 << 4)
    }

    /// QUERY_ADAPTER: vendor ids and the PSID (sysfs `board_id`).
    pub(super) fn query_adapter(&mut self, c: &mut Cmd<'_, QueryAdapter>) -> Done {
        let b = |f| query_adapter_out::query_adapter_struct.inner(f);
        c.set(b(query_adapter_param_block::ieee_vendor_id), 0x02c9)?;
        c.set(b(query_adapter_param_block::vsd_vendor_id), 0x15b3)?;
        let psid = self.cfg.profile.psid;
        c.set_bytes(b(query_adapter_param_block::vsd_contd_psid), &psid)
    }

    /// QUERY_SPECIAL_CONTEXTS: the reserved lkey and friends.
    pub(super) fn query_special_contexts(&mut self, c: &mut Cmd<'_, QuerySpecialContexts>) -> Done {
        for (f, v) in SPECIAL_MKEYS {
            c.set(f, v)?;
        }
        Ok(())
    }

    /// QUERY_NIC_VPORT_CONTEXT of the function's own vport.
    pub(super) fn query_nic_vport_context(
        &mut self,
        c: &mut Cmd<'_, QueryNicVportContext>,
    ) -> Done {
        c.own_function(&[query_nic_vport_context_in::other_vport])?;
        let v = |f| query_nic_vport_context_out::nic_vport_context.inner(f);
        let eth = self.cfg.link_layer == LinkLayer::Ethernet;
        c.set(v(nic_vport_context::roce_en), u32::from(eth))?;
        let mtu = self.ports.first().map_or(0, |p| p.admin_mtu);
        c.set(v(nic_vport_context::mtu), mtu)?;
        c.set64(v(nic_vport_context::system_image_guid), self.node_guid())?;
        c.set64(v(nic_vport_context::node_guid), self.node_guid())?;
        c.set64(v(nic_vport_context::port_guid), self.port_guid(1))?;
        let mac = self.mac(0);
        let m = |f| {
            query_nic_vport_context_out::nic_vport_context
                .inner(nic_vport_context::permanent_address)
                .inner(f)
        };
        c.set(
            m(mac_address_layout::mac_addr_47_32),
            (mac >> 32) as u32 & 0xffff,
        )?;
        c.set(m(mac_address_layout::mac_addr_31_0), mac as u32)
    }

    /// QUERY_HCA_VPORT_CONTEXT: port state, GUIDs, LIDs.
    pub(super) fn query_hca_vport_context(
        &mut self,
        c: &mut Cmd<'_, QueryHcaVportContext>,
    ) -> Done {
        c.own_function(&[query_hca_vport_context_in::other_vport])?;
        let port_num = self.vport_port_num(c.get(query_hca_vport_context_in::port_num));
        let port = self.port(port_num)?;
        let up = self.ports.get(port).is_some_and(|p| p.admin_status == 1);
        let ib = self.cfg.link_layer == LinkLayer::Ib;
        let v = |f| query_hca_vport_context_out::hca_vport_context.inner(f);
        c.set(v(hca_vport_context::has_smi), u32::from(ib))?;
        c.set(v(hca_vport_context::has_raw), 1)?;
        // Physical state 5 LinkUp / 3 Disabled. The logical state: on InfiniBand the SMA's
        // (`sma.rs`: INIT until a subnet manager makes it ACTIVE), on Ethernet 4 Active / 1
        // Down with the link.
        c.set(
            v(hca_vport_context::port_physical_state),
            if up { 5 } else { 3 },
        )?;
        let sma = self.sma(port).copied();
        let state = match (&sma, ib) {
            (Some(s), true) => u32::from(s.state),
            _ if up => 4,
            _ => 1,
        };
        c.set(v(hca_vport_context::port_state), state)?;
        c.set(v(hca_vport_context::vport_state), state)?;
        c.set64(v(hca_vport_context::system_image_guid), self.node_guid())?;
        c.set64(v(hca_vport_context::node_guid), self.node_guid())?;
        c.set64(
            v(hca_vport_context::port_guid),
            self.port_guid(port_num as usize),
        )?;
        if let (Some(s), true) = (sma, ib) {
            // What the subnet manager set through the SMA (`sma.rs`).
            c.set(v(hca_vport_context::cap_mask1), s.cap_mask)?;
            c.set(
                v(hca_vport_context::cap_mask1_field_select),
                crate::fwsim::sma::CAP_MASK1_HOST,
            )?;
            c.set(v(hca_vport_context::lid), u32::from(s.lid))?;
            c.set(v(hca_vport_context::lmc), u32::from(s.lmc))?;
            c.set(v(hca_vport_context::sm_lid), u32::from(s.sm_lid))?;
            c.set(v(hca_vport_context::sm_sl), u32::from(s.sm_sl))?;
            c.set(
                v(hca_vport_context::subnet_timeout),
                u32::from(s.subnet_timeout),
            )?;
        }
        Ok(())
    }

    /// MODIFY_HCA_VPORT_CONTEXT of the function's own vport (upstream `set_port_caps_atomic()`
    /// for `ib_modify_port()`): the CapabilityMask bits `cap_mask1_field_select` names take
    /// their values from `cap_mask1`; only [`crate::fwsim::sma::CAP_MASK1_HOST`] may change,
    /// and `field_select` (GUIDs, state policy) is a vport group manager's.
    pub(super) fn modify_hca_vport_context(
        &mut self,
        c: &mut Cmd<'_, ModifyHcaVportContext>,
    ) -> Done {
        c.own_function(&[modify_hca_vport_context_in::other_vport])?;
        let port_num = self.vport_port_num(c.get(modify_hca_vport_context_in::port_num));
        self.port(port_num)?;
        if self.cfg.link_layer != LinkLayer::Ib {
            return fail(Status::BAD_PARAM_ERR, syn::VPORT_MODIFY);
        }
        let v = |f| modify_hca_vport_context_in::hca_vport_context.inner(f);
        let sel = c.get(v(hca_vport_context::cap_mask1_field_select));
        if c.get(v(hca_vport_context::field_select)) != 0
            || sel & !crate::fwsim::sma::CAP_MASK1_HOST != 0
        {
            return fail(Status::BAD_PARAM_ERR, syn::VPORT_MODIFY);
        }
        let value = c.get(v(hca_vport_context::cap_mask1));
        let port = u8::try_from(port_num)
            .map_err(|_| CmdError::new(Status::BAD_PARAM_ERR, syn::BAD_PORT))?;
        if !self.set_port_caps(port, value & sel, !value & sel) {
            return fail(Status::BAD_PARAM_ERR, syn::BAD_PORT);
        }
        Ok(())
    }

    /// The port an HCA vport command names: `port_num` is meaningful on a dual-port function
    /// only; upstream mlx5_core (`vport.c`) sets it only when `num_ports` is 2 and leaves 0
    /// otherwise, which names the function's own port. Our driver sends 1; both are port 1.
    fn vport_port_num(&self, port_num: u32) -> u32 {
        if port_num == 0 && self.cfg.num_ports == 1 {
            1
        } else {
            port_num
        }
    }

    /// Parses the index of a GID/PKey query: one entry, or all of them with 0xffff.
    fn table_query<C: PrmCommand>(
        c: &Cmd<'_, C>,
        index: u32,
        len: u32,
        entry_bytes: usize,
    ) -> Result<(u32, u32), CmdError> {
        let (first, n) = if index == ALL_ENTRIES {
            (0, len)
        } else if index < len {
            (index, 1)
        } else {
            return fail(Status::BAD_PARAM_ERR, syn::TABLE_INDEX);
        };
        let needed = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(entry_bytes))
            .and_then(|b| b.checked_add(query_hca_vport_gid_out::SIZE_BYTES));
        if !matches!(needed, Some(b) if c.out_len() >= b) {
            return fail(Status::BAD_OUTP_LEN_ERR, syn::OUTBOX_SHORT);
        }
        Ok((first, n))
    }

    /// QUERY_HCA_VPORT_GID: GID 0 is the link-local GID of the port GUID; the rest are empty.
    pub(super) fn query_hca_vport_gid(&mut self, c: &mut Cmd<'_, QueryHcaVportGid>) -> Done {
        c.own_function(&[query_hca_vport_gid_in::other_vport])?;
        let port_num = self.vport_port_num(c.get(query_hca_vport_gid_in::port_num));
        self.port(port_num)?;
        let index = c.get(query_hca_vport_gid_in::gid_index);
        let (first, n) = Self::table_query(c, index, IB_GIDS, 16)?;
        c.set(query_hca_vport_gid_out::gids_num, n)?;
        // gid[] starts right after the fixed layout.
        let slot0 = Field::new("gid", query_hca_vport_gid_out::SIZE_BITS, 128);
        for i in 0..n {
            if first + i == 0 {
                let mut gid = [0u8; 16];
                gid[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
                gid[8..].copy_from_slice(&self.port_guid(port_num as usize).to_be_bytes());
                c.set_tail_bytes(slot0.nth(i), &gid)?;
            }
        }
        Ok(())
    }

    /// QUERY_HCA_VPORT_PKEY: PKey 0 is the default full-membership 0xffff.
    pub(super) fn query_hca_vport_pkey(&mut self, c: &mut Cmd<'_, QueryHcaVportPkey>) -> Done {
        c.own_function(&[query_hca_vport_pkey_in::other_vport])?;
        self.port(self.vport_port_num(c.get(query_hca_vport_pkey_in::port_num)))?;
        let index = c.get(query_hca_vport_pkey_in::pkey_index);
        let (first, n) = Self::table_query(c, index, PKEYS, 4)?;
        let slot0 = Field::new("pkey", query_hca_vport_pkey_out::SIZE_BITS, 32);
        for i in 0..n {
            if first + i == 0 {
                c.set_tail(slot0.nth(i).inner(pkey::pkey.field()), 0xffff)?;
            }
        }
        Ok(())
    }

    /// ACCESS_REG: PTYS, PMTU, PVLC, PAOS reads; PMTU and PAOS writes.
    pub(super) fn access_reg(&mut self, c: &mut Cmd<'_, AccessReg>) -> Done {
        let id = c.get(access_register_in::register_id);
        if id == REG_HOST_ENDIANNESS {
            return self.host_endianness_reg(c);
        }
        if id == REG_NODE_DESC {
            return self.node_desc_reg(c);
        }
        if id == REG_DTOR {
            return self.dtor_reg(c);
        }
        let size = match id {
            REG_PTYS => ptys_reg::SIZE_BYTES,
            REG_PMTU => pmtu_reg::SIZE_BYTES,
            REG_PVLC => pvlc_reg::SIZE_BYTES,
            REG_PAOS => paos_reg::SIZE_BYTES,
            _ => return fail(Status::BAD_PARAM_ERR, syn::REG_UNKNOWN),
        };
        // register_data[] follows the 16-byte header in both mailboxes.
        let data_off = access_register_in::SIZE_BYTES;
        let needed = data_off.saturating_add(size);
        if c.inbox_raw().len() < needed {
            return fail(Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT);
        }
        if c.out_len() < needed {
            return fail(Status::BAD_OUTP_LEN_ERR, syn::OUTBOX_SHORT);
        }
        // register_data[] as the register's layout, in the inbox and in the outbox.
        fn reg<R: PrmLayout>(f: Member<R>) -> Member<access_register_in::Bits> {
            Member::<access_register_in::Bits>::new(
                "register_data",
                access_register_in::SIZE_BITS,
                0,
            )
            .inner(f)
        }
        fn out<R: PrmLayout>(f: Member<R>) -> Member<access_register_out::Bits> {
            Member::<access_register_out::Bits>::new(
                "register_data",
                access_register_out::SIZE_BITS,
                0,
            )
            .inner(f)
        }
        let port = self.port(c.get(reg(paos_reg::local_port)))?;
        let write = match c.op_mod {
            ACCESS_REG_READ => false,
            ACCESS_REG_WRITE => true,
            _ => return fail(Status::BAD_PARAM_ERR, syn::BAD_OP_MOD),
        };
        let ib = self.cfg.link_layer == LinkLayer::Ib;
        let max_mtu = self.max_mtu();
        if write {
            let p = self
                .ports
                .get_mut(port)
                .ok_or(CmdError::new(Status::BAD_PARAM_ERR, syn::BAD_PORT))?;
            match id {
                REG_PAOS => {
                    // admin_status changes only with the "admin status enable" bit.
                    if c.get(reg(paos_reg::ase)) != 0 {
                        let admin = c.get(reg(paos_reg::admin_status));
                        if !matches!(admin, 1 | 2) {
                            return fail(Status::BAD_PARAM_ERR, syn::REG_BAD_WRITE);
                        }
                        p.admin_status = admin;
                        // The link follows (the SMA's port state machine, `sma.rs`).
                        if ib {
                            p.sma.link(admin == 1);
                        }
                    }
                }
                REG_PMTU => {
                    let mtu = c.get(reg(pmtu_reg::admin_mtu));
                    if mtu == 0 || mtu > max_mtu {
                        return fail(Status::BAD_PARAM_ERR, syn::REG_BAD_WRITE);
                    }
                    p.admin_mtu = mtu;
                }
                _ => return fail(Status::BAD_PARAM_ERR, syn::REG_BAD_WRITE),
            }
        }
        let (admin_status, admin_mtu) = self
            .ports
            .get(port)
            .map(|p| (p.admin_status, p.admin_mtu))
            .ok_or(CmdError::new(Status::BAD_PARAM_ERR, syn::BAD_PORT))?;
        let up = admin_status == 1;
        // Registers echo the port they describe.
        c.set(out(paos_reg::local_port), port as u32 + 1)?;
        match id {
            REG_PTYS => {
                let mask = c.get(reg(ptys_reg::proto_mask));
                c.set(out(ptys_reg::proto_mask), mask)?;
                if mask & PTYS_IB != 0 && ib {
                    let proto = self.cfg.profile.ib_proto;
                    c.set(out(ptys_reg::ib_link_width_capability), IB_WIDTH_4X)?;
                    c.set(out(ptys_reg::ib_proto_capability), proto)?;
                    c.set(out(ptys_reg::ib_link_width_admin), IB_WIDTH_4X)?;
                    c.set(out(ptys_reg::ib_proto_admin), proto)?;
                    if up {
                        c.set(out(ptys_reg::ib_link_width_oper), IB_WIDTH_4X)?;
                        c.set(out(ptys_reg::ib_proto_oper), proto)?;
                    }
                }
                if mask & PTYS_EN != 0 && !ib {
                    let proto = self.cfg.profile.ext_eth_proto;
                    c.set(out(ptys_reg::ext_eth_proto_capability), proto)?;
                    c.set(out(ptys_reg::ext_eth_proto_admin), proto)?;
                    if up {
                        c.set(out(ptys_reg::ext_eth_proto_oper), proto)?;
                    }
                }
            }
            REG_PMTU => {
                c.set(out(pmtu_reg::max_mtu), max_mtu)?;
                c.set(out(pmtu_reg::admin_mtu), admin_mtu)?;
                c.set(out(pmtu_reg::oper_mtu), admin_mtu)?;
            }
            REG_PVLC => {
                // VL0-3: `MLX5_VL_HW_0_3` (4, mlx5_ib main.c), which mlx5_ib reports as
                // max_vl_num 4 (`__IB_MAX_VL_0_3` = 3).
                c.set(out(pvlc_reg::vl_hw_cap), 4)?;
                c.set(out(pvlc_reg::vl_admin), 4)?;
                c.set(out(pvlc_reg::vl_operational), 4)?;
            }
            _ => {
                c.set(out(paos_reg::admin_status), admin_status)?;
                c.set(out(paos_reg::oper_status), if up { 1 } else { 2 })?;
            }
        }
        Ok(())
    }

    /// SET_ROCE_ADDRESS: programs (or, with an all-zero GID, clears) one RoCE GID entry.
    pub(super) fn set_roce_address(&mut self, c: &mut Cmd<'_, SetRoceAddress>) -> Done {
        if self.cfg.link_layer != LinkLayer::Ethernet {
            return fail(Status::BAD_PARAM_ERR, syn::ROCE_ON_IB);
        }
        let index = c.get(set_roce_address_in::roce_address_index);
        if index >= self.cfg.profile.roce_address_table_size {
            return fail(Status::BAD_PARAM_ERR, syn::TABLE_INDEX);
        }
        // 0 means the function's own (first) port: mlx5_ib sets vhca_port_num only on
        // multi-port vHCAs.
        let port = match c.get(set_roce_address_in::vhca_port_num) {
            0 => 0,
            n => self.port(n)?,
        };
        let a = |f| set_roce_address_in::roce_address.inner(f);
        let gid: [u8; 16] = c.inbox.array(a(roce_addr_layout::source_l3_address));
        let version = c.get(a(roce_addr_layout::roce_version));
        let l3_type = c.get(a(roce_addr_layout::roce_l3_type));
        let entry = if gid == [0u8; 16] {
            None
        } else {
            if !matches!(version, 0 | ROCE_VERSION_2) || l3_type > 1 {
                return fail(Status::BAD_PARAM_ERR, syn::ROCE_BAD_TYPE);
            }
            let hi = c.get(a(roce_addr_layout::source_mac_47_32));
            let lo = c.get(a(roce_addr_layout::source_mac_31_0));
            let mut mac = [0u8; 6];
            mac[..2].copy_from_slice(&hi.to_be_bytes()[2..]);
            mac[2..].copy_from_slice(&lo.to_be_bytes());
            let vlan = if c.get(a(roce_addr_layout::vlan_valid)) != 0 {
                Some(c.get(a(roce_addr_layout::vlan_id)) as u16)
            } else {
                None
            };
            Some(RoceAddr {
                gid,
                mac,
                vlan,
                version: version as u8,
                l3_type: l3_type as u8,
            })
        };
        let slot = self
            .ports
            .get_mut(port)
            .and_then(|p| p.roce.get_mut(usize::try_from(index).ok()?))
            .ok_or(CmdError::new(Status::BAD_PARAM_ERR, syn::TABLE_INDEX))?;
        *slot = entry;
        Ok(())
    }
}
