// SPDX-License-Identifier: GPL-2.0

//! Context, capability and register layouts embedded in command mailboxes (`qpc`, `cqc`, `mkc`,
//! `ads`, `cmd_hca_cap`, the port registers, ...). Contexts the simulator stores are declared in
//! full; the large capability and vport layouts declare the members a driver reads. Checked
//! against mlx5_ifc.h by `tools/prm-check`.

prm_layouts! {
    /// `struct mlx5_ifc_cmd_hca_cap_bits` (mlx5_ifc.h).
    cmd_hca_cap, 0x800 {
        page_request_disable @ 0x6, 0x1;
        hca_cap_2 @ 0x20, 0x1;
        vhca_id @ 0x30, 0x10;
        log_max_srq_sz @ 0x80, 0x8;
        log_max_qp_sz @ 0x88, 0x8;
        log_max_qp @ 0x9b, 0x5;
        ece_support @ 0xa3, 0x1;
        log_max_srq @ 0xab, 0x5;
        max_sgl_for_optimized_performance @ 0xc0, 0x8;
        log_max_cq_sz @ 0xc8, 0x8;
        log_max_cq @ 0xdb, 0x5;
        log_max_eq_sz @ 0xe0, 0x8;
        log_max_mkey @ 0xea, 0x6;
        log_max_eq @ 0xfc, 0x4;
        fixed_buffer_size @ 0x108, 0x1;
        log_max_mrw_sz @ 0x109, 0x7;
        force_teardown @ 0x110, 0x1;
        log_max_klm_list_size @ 0x11a, 0x6;
        log_max_ra_req_dc @ 0x12a, 0x6;
        log_max_ra_res_dc @ 0x13a, 0x6;
        log_max_ra_req_qp @ 0x14a, 0x6;
        log_max_ra_res_qp @ 0x15a, 0x6;
        end_pad @ 0x160, 0x1;
        rts2rts_qp_counters_set_id @ 0x169, 0x1;
        gid_table_size @ 0x170, 0x10;
        max_qp_cnt @ 0x186, 0xa;
        pkey_table_size @ 0x190, 0x10;
        vport_group_manager @ 0x1a0, 0x1;
        ib_virt @ 0x1a2, 0x1;
        device_memory @ 0x1a8, 0x1;
        local_ca_ack_delay @ 0x1ab, 0x5;
        port_type @ 0x1b6, 0x2;
        num_ports @ 0x1b8, 0x8;
        log_max_msg @ 0x1c3, 0x5;
        max_tc @ 0x1cc, 0x4;
        cqe_version @ 0x1fc, 0x4;
        ipoib_basic_offloads @ 0x204, 0x1;
        umr_modify_entity_size_disabled @ 0x207, 0x1;
        cmdif_checksum @ 0x210, 0x2;
        sho @ 0x217, 0x1;
        eth_net_offloads @ 0x21c, 0x1;
        roce @ 0x21d, 0x1;
        atomic @ 0x21e, 0x1;
        cq_oi @ 0x220, 0x1;
        cq_resize @ 0x221, 0x1;
        cq_moderation @ 0x222, 0x1;
        block_lb_mc @ 0x228, 0x1;
        apm @ 0x22e, 0x1;
        imaicl @ 0x231, 0x1;
        qp_packet_based @ 0x232, 0x1;
        qkv @ 0x236, 0x1;
        pkv @ 0x237, 0x1;
        xrc @ 0x23c, 0x1;
        uar_4k @ 0x240, 0x1;
        uar_sz @ 0x24a, 0x6;
        log_pg_sz @ 0x258, 0x8;
        bf @ 0x260, 0x1;
        driver_version @ 0x261, 0x1;
        log_bf_reg_size @ 0x26b, 0x5;
        max_wqe_sz_sq @ 0x290, 0x10;
        max_wqe_sz_rq @ 0x2b0, 0x10;
        max_qp_mcg @ 0x2e7, 0x19;
        log_max_mcg @ 0x318, 0x8;
        log_max_transport_domain @ 0x323, 0x5;
        log_max_pd @ 0x32b, 0x5;
        log_max_xrcd @ 0x33b, 0x5;
        log_max_rmp @ 0x383, 0x5;
        general_obj_types @ 0x400, 0x40;
        log_max_uctx @ 0x463, 0x5;
        log_max_umem @ 0x46b, 0x5;
        max_num_eqs @ 0x470, 0x10;
        log_uar_page_sz @ 0x490, 0x10;
        device_frequency_khz @ 0x4e0, 0x20;
        num_of_uars_per_page @ 0x520, 0x20;
        mini_cqe_resp_stride_index @ 0x5bc, 0x1;
        cqe_128_always @ 0x5bd, 0x1;
        cqe_compression_128 @ 0x5be, 0x1;
        cqe_compression @ 0x5bf, 0x1;
        cqe_compression_max_num @ 0x5d0, 0x10;
        sw_owner_id @ 0x61e, 0x1;
        uctx_cap @ 0x6a0, 0x20;
    }

    /// `struct mlx5_ifc_roce_cap_bits` (mlx5_ifc.h).
    roce_cap, 0x800 {
        roce_apm @ 0x0, 0x1;
        sw_r_roce_src_udp_port @ 0x4, 0x1;
        fl_rc_qp_when_roce_disabled @ 0x5, 0x1;
        fl_rc_qp_when_roce_enabled @ 0x6, 0x1;
        roce_cc_general @ 0x7, 0x1;
        qp_ooo_transmit_default @ 0x8, 0x1;
        qp_ts_format @ 0x1e, 0x2;
        l3_type @ 0x8c, 0x4;
        roce_version @ 0x98, 0x8;
        r_roce_dest_udp_port @ 0xb0, 0x10;
        r_roce_max_src_udp_port @ 0xc0, 0x10;
        r_roce_min_src_udp_port @ 0xd0, 0x10;
        roce_address_table_size @ 0xf0, 0x10;
    }

    /// `struct mlx5_ifc_device_mem_cap_bits` (mlx5_ifc.h): the MEMIC members.
    device_mem_cap, 0x800 {
        memic @ 0x0, 0x1;
        log_min_memic_alloc_size @ 0x2b, 0x5;
        log_max_memic_addr_alignment @ 0x38, 0x8;
        memic_bar_start_addr @ 0x40, 0x40;
        memic_bar_size @ 0x80, 0x20;
        max_memic_size @ 0xa0, 0x20;
        memic_operations @ 0x200, 0x20;
    }

    /// `struct mlx5_ifc_atomic_caps_bits` (mlx5_ifc.h).
    atomic_caps, 0x800 {
        atomic_req_8B_endianness_mode @ 0x40, 0x2;
        supported_atomic_req_8B_endianness_mode_1 @ 0x46, 0x1;
        atomic_operations @ 0x90, 0x10;
        atomic_size_qp @ 0xb0, 0x10;
        atomic_size_dc @ 0xd0, 0x10;
    }

    /// `struct mlx5_ifc_query_adapter_param_block_bits` (mlx5_ifc.h).
    query_adapter_param_block, 0x800 {
        ieee_vendor_id @ 0xc8, 0x18;
        vsd_vendor_id @ 0xf0, 0x10;
        vsd @ 0x100, 0x680;
        vsd_contd_psid @ 0x780, 0x80;
    }

    /// `struct mlx5_ifc_nic_vport_context_bits` (mlx5_ifc.h).
    nic_vport_context, 0x800 {
        min_wqe_inline_mode @ 0x5, 0x3;
        disable_mc_local_lb @ 0x1d, 0x1;
        disable_uc_local_lb @ 0x1e, 0x1;
        roce_en @ 0x1f, 0x1;
        arm_change_event @ 0x20, 0x1;
        mtu @ 0x130, 0x10;
        system_image_guid @ 0x140, 0x40;
        port_guid @ 0x180, 0x40;
        node_guid @ 0x1c0, 0x40;
        qkey_violation_counter @ 0x340, 0x10;
        promisc_uc @ 0x780, 0x1;
        promisc_mc @ 0x781, 0x1;
        promisc_all @ 0x782, 0x1;
        permanent_address @ 0x7a0, 0x40 => crate::prm::ctx::mac_address_layout;
    }

    /// `struct mlx5_ifc_hca_vport_context_bits` (mlx5_ifc.h).
    hca_vport_context, 0x1000 {
        field_select @ 0x0, 0x20;
        sm_virt_aware @ 0x100, 0x1;
        has_smi @ 0x101, 0x1;
        has_raw @ 0x102, 0x1;
        grh_required @ 0x103, 0x1;
        num_port_plane @ 0x108, 0x8;
        port_physical_state @ 0x110, 0x4;
        vport_state_policy @ 0x114, 0x4;
        port_state @ 0x118, 0x4;
        vport_state @ 0x11c, 0x4;
        system_image_guid @ 0x140, 0x40;
        port_guid @ 0x180, 0x40;
        node_guid @ 0x1c0, 0x40;
        cap_mask1 @ 0x200, 0x20;
        cap_mask1_field_select @ 0x220, 0x20;
        cap_mask2 @ 0x240, 0x20;
        cap_mask2_field_select @ 0x260, 0x20;
        lid @ 0x300, 0x10;
        init_type_reply @ 0x314, 0x4;
        lmc @ 0x318, 0x3;
        subnet_timeout @ 0x31b, 0x5;
        sm_lid @ 0x320, 0x10;
        sm_sl @ 0x330, 0x4;
        qkey_violation_counter @ 0x340, 0x10;
        pkey_violation_counter @ 0x350, 0x10;
    }

    /// `struct mlx5_ifc_ptys_reg_bits` (mlx5_ifc.h).
    ptys_reg, 0x200 {
        an_disable_admin @ 0x1, 0x1;
        an_disable_cap @ 0x2, 0x1;
        local_port @ 0x8, 0x8;
        plane_ind @ 0x18, 0x4;
        proto_mask @ 0x1d, 0x3;
        an_status @ 0x20, 0x4;
        data_rate_oper @ 0x30, 0x10;
        ext_eth_proto_capability @ 0x40, 0x20;
        eth_proto_capability @ 0x60, 0x20;
        ib_link_width_capability @ 0x80, 0x10;
        ib_proto_capability @ 0x90, 0x10;
        ext_eth_proto_admin @ 0xa0, 0x20;
        eth_proto_admin @ 0xc0, 0x20;
        ib_link_width_admin @ 0xe0, 0x10;
        ib_proto_admin @ 0xf0, 0x10;
        ext_eth_proto_oper @ 0x100, 0x20;
        eth_proto_oper @ 0x120, 0x20;
        ib_link_width_oper @ 0x140, 0x10;
        ib_proto_oper @ 0x150, 0x10;
        lane_rate_oper @ 0x168, 0x14;
        connector_type @ 0x17c, 0x4;
        eth_proto_lp_advertise @ 0x180, 0x20;
    }

    /// `struct mlx5_ifc_pmtu_reg_bits` (mlx5_ifc.h).
    pmtu_reg, 0x80 {
        local_port @ 0x8, 0x8;
        max_mtu @ 0x20, 0x10;
        admin_mtu @ 0x40, 0x10;
        oper_mtu @ 0x60, 0x10;
    }

    /// `struct mlx5_ifc_pvlc_reg_bits` (mlx5_ifc.h).
    pvlc_reg, 0x80 {
        local_port @ 0x8, 0x8;
        vl_hw_cap @ 0x3c, 0x4;
        vl_admin @ 0x5c, 0x4;
        vl_operational @ 0x7c, 0x4;
    }

    /// `struct mlx5_ifc_paos_reg_bits` (mlx5_ifc.h).
    paos_reg, 0x80 {
        swid @ 0x0, 0x8;
        local_port @ 0x8, 0x8;
        admin_status @ 0x14, 0x4;
        oper_status @ 0x1c, 0x4;
        ase @ 0x20, 0x1;
        ee @ 0x21, 0x1;
        e @ 0x3e, 0x2;
    }

    /// `struct mlx5_ifc_cqc_bits` (mlx5_ifc.h).
    cqc, 0x200 {
        status @ 0x0, 0x4;
        dbr_umem_valid @ 0x6, 0x1;
        apu_cq @ 0x7, 0x1;
        cqe_sz @ 0x8, 0x3;
        cc @ 0xb, 0x1;
        scqe_break_moderation_en @ 0xd, 0x1;
        oi @ 0xe, 0x1;
        cq_period_mode @ 0xf, 0x2;
        cqe_comp_en @ 0x11, 0x1;
        mini_cqe_res_format @ 0x12, 0x2;
        st @ 0x14, 0x4;
        cqe_compression_layout @ 0x1e, 0x2;
        page_offset @ 0x54, 0x6;
        log_cq_size @ 0x63, 0x5;
        uar_page @ 0x68, 0x18;
        cq_period @ 0x84, 0xc;
        cq_max_count @ 0x90, 0x10;
        c_eqn_or_apu_element @ 0xa0, 0x20;
        log_page_size @ 0xc3, 0x5;
        last_notified_index @ 0x108, 0x18;
        last_solicit_index @ 0x128, 0x18;
        consumer_counter @ 0x148, 0x18;
        producer_counter @ 0x168, 0x18;
        dbr_addr @ 0x1c0, 0x40;
    }

    /// `struct mlx5_ifc_qpc_bits` (mlx5_ifc.h).
    qpc, 0x740 {
        state @ 0x0, 0x4;
        lag_tx_port_affinity @ 0x4, 0x4;
        st @ 0x8, 0x8;
        isolate_vl_tc @ 0x12, 0x1;
        pm_state @ 0x13, 0x2;
        req_e2e_credit_mode @ 0x16, 0x2;
        offload_type @ 0x18, 0x4;
        end_padding_mode @ 0x1c, 0x2;
        wq_signature @ 0x20, 0x1;
        block_lb_mc @ 0x21, 0x1;
        atomic_like_write_en @ 0x22, 0x1;
        latency_sensitive @ 0x23, 0x1;
        drain_sigerr @ 0x25, 0x1;
        dp_ordering_force @ 0x27, 0x1;
        pd @ 0x28, 0x18;
        mtu @ 0x40, 0x3;
        log_msg_max @ 0x43, 0x5;
        log_rq_size @ 0x49, 0x4;
        log_rq_stride @ 0x4d, 0x3;
        no_sq @ 0x50, 0x1;
        log_sq_size @ 0x51, 0x4;
        retry_mode @ 0x56, 0x2;
        ts_format @ 0x58, 0x2;
        rlky @ 0x5b, 0x1;
        ulp_stateless_offload_mode @ 0x5c, 0x4;
        counter_set_id @ 0x60, 0x8;
        uar_page @ 0x68, 0x18;
        user_index @ 0x88, 0x18;
        log_page_size @ 0xa3, 0x5;
        remote_qpn @ 0xa8, 0x18;
        primary_address_path @ 0xc0, 0x160 => crate::prm::ctx::ads;
        secondary_address_path @ 0x220, 0x160 => crate::prm::ctx::ads;
        log_ack_req_freq @ 0x380, 0x4;
        log_sra_max @ 0x388, 0x3;
        retry_count @ 0x38d, 0x3;
        rnr_retry @ 0x390, 0x3;
        fre @ 0x394, 0x1;
        cur_rnr_retry @ 0x395, 0x3;
        cur_retry_count @ 0x398, 0x3;
        packet_pacing_rate_limit_index @ 0x3b0, 0x10;
        next_send_psn @ 0x3c8, 0x18;
        log_num_dci_stream_channels @ 0x3e3, 0x5;
        cqn_snd @ 0x3e8, 0x18;
        log_num_dci_errored_streams @ 0x403, 0x5;
        deth_sqpn @ 0x408, 0x18;
        last_acked_psn @ 0x448, 0x18;
        ssn @ 0x468, 0x18;
        log_rra_max @ 0x488, 0x3;
        atomic_mode @ 0x48c, 0x4;
        rre @ 0x490, 0x1;
        rwe @ 0x491, 0x1;
        rae @ 0x492, 0x1;
        page_offset @ 0x494, 0x6;
        dp_ordering_1 @ 0x49c, 0x1;
        cd_slave_receive @ 0x49d, 0x1;
        cd_slave_send @ 0x49e, 0x1;
        cd_master @ 0x49f, 0x1;
        min_rnr_nak @ 0x4a3, 0x5;
        next_rcv_psn @ 0x4a8, 0x18;
        xrcd @ 0x4c8, 0x18;
        cqn_rcv @ 0x4e8, 0x18;
        dbr_addr @ 0x500, 0x40;
        q_key @ 0x540, 0x20;
        rq_type @ 0x565, 0x3;
        srqn_rmpn_xrqn @ 0x568, 0x18;
        rmsn @ 0x588, 0x18;
        hw_sq_wqebb_counter @ 0x5a0, 0x10;
        sw_sq_wqebb_counter @ 0x5b0, 0x10;
        hw_rq_counter @ 0x5c0, 0x20;
        sw_rq_counter @ 0x5e0, 0x20;
        cgs @ 0x62f, 0x1;
        cs_req @ 0x630, 0x8;
        cs_res @ 0x638, 0x8;
        dc_access_key @ 0x640, 0x40;
        dbr_umem_valid @ 0x683, 0x1;
    }

    /// `struct mlx5_ifc_ads_bits` (mlx5_ifc.h).
    ads, 0x160 {
        fl @ 0x0, 0x1;
        free_ar @ 0x1, 0x1;
        pkey_index @ 0x10, 0x10;
        plane_index @ 0x20, 0x8;
        grh @ 0x28, 0x1;
        mlid @ 0x29, 0x7;
        rlid @ 0x30, 0x10;
        ack_timeout @ 0x40, 0x5;
        src_addr_index @ 0x48, 0x8;
        stat_rate @ 0x54, 0x4;
        hop_limit @ 0x58, 0x8;
        tclass @ 0x64, 0x8;
        flow_label @ 0x6c, 0x14;
        rgid_rip @ 0x80, 0x80;
        f_dscp @ 0x104, 0x1;
        f_ecn @ 0x105, 0x1;
        f_eth_prio @ 0x107, 0x1;
        ecn @ 0x108, 0x2;
        dscp @ 0x10a, 0x6;
        udp_sport @ 0x110, 0x10;
        dei_cfi @ 0x120, 0x1;
        eth_prio @ 0x121, 0x3;
        sl @ 0x124, 0x4;
        vhca_port_num @ 0x128, 0x8;
        rmac_47_32 @ 0x130, 0x10;
        rmac_31_0 @ 0x140, 0x20;
    }

    /// `struct mlx5_ifc_mkc_bits` (mlx5_ifc.h).
    mkc, 0x200 {
        free @ 0x1, 0x1;
        access_mode_4_2 @ 0x3, 0x3;
        relaxed_ordering_write @ 0xd, 0x1;
        small_fence_on_rdma_read_response @ 0xf, 0x1;
        umr_en @ 0x10, 0x1;
        a @ 0x11, 0x1;
        rw @ 0x12, 0x1;
        rr @ 0x13, 0x1;
        lw @ 0x14, 0x1;
        lr @ 0x15, 0x1;
        access_mode_1_0 @ 0x16, 0x2;
        ma_translation_mode @ 0x1a, 0x2;
        qpn @ 0x20, 0x18;
        mkey_7_0 @ 0x38, 0x8;
        length64 @ 0x60, 0x1;
        bsf_en @ 0x61, 0x1;
        sync_umr @ 0x62, 0x1;
        expected_sigerr_count @ 0x65, 0x1;
        en_rinval @ 0x67, 0x1;
        pd @ 0x68, 0x18;
        start_addr @ 0x80, 0x40;
        len @ 0xc0, 0x40;
        bsf_octword_size @ 0x100, 0x20;
        crossing_target_vhca_id @ 0x180, 0x10;
        translations_octword_size @ 0x1a0, 0x20;
        relaxed_ordering_read @ 0x1d9, 0x1;
        log_page_size @ 0x1da, 0x6;
        pcie_tph_en @ 0x1e5, 0x1;
        pcie_tph_ph @ 0x1e6, 0x2;
        pcie_tph_steering_tag_index @ 0x1e8, 0x8;
    }

    /// `struct mlx5_ifc_roce_addr_layout_bits` (mlx5_ifc.h).
    roce_addr_layout, 0x100 {
        source_l3_address @ 0x0, 0x80;
        vlan_valid @ 0x83, 0x1;
        vlan_id @ 0x84, 0xc;
        source_mac_47_32 @ 0x90, 0x10;
        source_mac_31_0 @ 0xa0, 0x20;
        roce_l3_type @ 0xd4, 0x4;
        roce_version @ 0xd8, 0x8;
    }

    /// `struct mlx5_ifc_uctx_bits` (mlx5_ifc.h).
    uctx, 0x180 {
        cap @ 0x0, 0x20;
    }

    /// `struct mlx5_ifc_umem_bits` (mlx5_ifc.h); `mtt[]` follows.
    umem, 0x100 {
        ats @ 0x80, 0x1;
        log_page_size @ 0x9b, 0x5;
        page_offset @ 0xa0, 0x20;
        num_of_mtt @ 0xc0, 0x40;
    }

    /// `struct mlx5_ifc_mtt_bits` (mlx5_ifc.h): one entry of a umem's or an mkey's MTT.
    mtt, 0x40 {
        ptag_63_32 @ 0x0, 0x20;
        ptag_31_8 @ 0x20, 0x18;
        wr_en @ 0x3e, 0x1;
        rd_en @ 0x3f, 0x1;
    }

    /// `struct mlx5_ifc_mac_address_layout_bits` (mlx5_ifc.h).
    mac_address_layout, 0x40 {
        mac_addr_47_32 @ 0x10, 0x10;
        mac_addr_31_0 @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_pkey_bits` (mlx5_ifc.h).
    pkey, 0x20 {
        pkey @ 0x10, 0x10;
    }

    /// `struct mlx5_ifc_eqc_bits` (mlx5_ifc.h).
    eqc, 0x200 {
        status @ 0x0, 0x4;
        ec @ 0xd, 0x1;
        oi @ 0xe, 0x1;
        st @ 0x14, 0x4;
        page_offset @ 0x54, 0x6;
        log_eq_size @ 0x63, 0x5;
        uar_page @ 0x68, 0x18;
        intr @ 0xb4, 0xc;
        log_page_size @ 0xc3, 0x5;
        consumer_counter @ 0x148, 0x18;
        producer_counter @ 0x168, 0x18;
    }

    /// `struct mlx5_ifc_wq_bits` (mlx5_ifc.h), up to `pas[]`.
    wq, 0x600 {
        wq_type @ 0x0, 0x4;
        wq_signature @ 0x4, 0x1;
        page_offset @ 0x2b, 0x5;
        lwm @ 0x30, 0x10;
        pd @ 0x48, 0x18;
        uar_page @ 0x68, 0x18;
        dbr_addr @ 0x80, 0x40;
        hw_counter @ 0xc0, 0x20;
        sw_counter @ 0xe0, 0x20;
        log_wq_stride @ 0x10c, 0x4;
        log_wq_pg_sz @ 0x113, 0x5;
        log_wq_sz @ 0x11b, 0x5;
        dbr_umem_valid @ 0x120, 0x1;
        wq_umem_valid @ 0x121, 0x1;
        dbr_umem_id @ 0x140, 0x20;
        wq_umem_id @ 0x160, 0x20;
        wq_umem_offset @ 0x180, 0x40;
    }

    /// `struct mlx5_ifc_rmpc_bits` (mlx5_ifc.h).
    rmpc, 0x780 {
        state @ 0x8, 0x4;
        basic_cyclic_rcv_wqe @ 0x20, 0x1;
        wq @ 0x180, 0x600 => crate::prm::ctx::wq;
    }

    /// `struct mlx5_ifc_rmp_bitmask_bits` (mlx5_ifc.h).
    rmp_bitmask, 0x40 {
        lwm @ 0x3f, 0x1;
    }
    /// `struct mlx5_ifc_xrc_srqc_bits` (mlx5_ifc.h).
    xrc_srqc, 0x200 {
        state @ 0x0, 0x4;
        log_xrc_srq_size @ 0x4, 0x4;
        wq_signature @ 0x20, 0x1;
        log_rq_stride @ 0x25, 0x3;
        xrcd @ 0x28, 0x18;
        page_offset @ 0x40, 0x6;
        dbr_umem_valid @ 0x47, 0x1;
        cqn @ 0x48, 0x18;
        log_page_size @ 0x82, 0x6;
        user_index @ 0x88, 0x18;
        pd @ 0xc8, 0x18;
        db_record_addr_h @ 0x140, 0x20;
        db_record_addr_l @ 0x160, 0x1e;
    }
}
