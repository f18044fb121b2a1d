// SPDX-License-Identifier: GPL-2.0

//! Command mailbox layouts: the `*_in`/`*_out` structs of the commands the driver sends and the
//! simulator decodes. Generated once from mlx5_ifc.h (every non-reserved member) and checked
//! against it by `tools/prm-check`; a flexible array member (`pas[]`, `gid[]`, `pkey[]`,
//! `register_data[]`) is not declared, it starts at the layout's `SIZE_BITS`.

prm_layouts! {
    /// `struct mlx5_ifc_mbox_in_bits` (drivers/net/ethernet/mellanox/mlx5/core/cmd.c).
    mbox_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
    }

    /// `struct mlx5_ifc_mbox_out_bits` (drivers/net/ethernet/mellanox/mlx5/core/cmd.c).
    mbox_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_query_hca_cap_in_bits` (mlx5_ifc.h).
    query_hca_cap_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        other_function @ 0x40, 0x1;
        ec_vf_function @ 0x41, 0x1;
        function_id_type @ 0x43, 0x1;
        function_id @ 0x50, 0x10;
    }

    /// `struct mlx5_ifc_query_hca_cap_out_bits` (mlx5_ifc.h).
    query_hca_cap_out, 0x8080 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        capability @ 0x80, 0x8000;
    }

    /// `struct mlx5_ifc_query_adapter_in_bits` (mlx5_ifc.h).
    query_adapter_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
    }

    /// `struct mlx5_ifc_query_adapter_out_bits` (mlx5_ifc.h).
    query_adapter_out, 0x880 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        query_adapter_struct @ 0x80, 0x800 => crate::prm::ctx::query_adapter_param_block;
    }

    /// `struct mlx5_ifc_query_special_contexts_in_bits` (mlx5_ifc.h).
    query_special_contexts_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
    }

    /// `struct mlx5_ifc_query_special_contexts_out_bits` (mlx5_ifc.h).
    query_special_contexts_out, 0x100 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        dump_fill_mkey @ 0x40, 0x20;
        resd_lkey @ 0x60, 0x20;
        null_mkey @ 0x80, 0x20;
        terminate_scatter_list_mkey @ 0xa0, 0x20;
        repeated_mkey @ 0xc0, 0x20;
    }

    /// `struct mlx5_ifc_query_nic_vport_context_in_bits` (mlx5_ifc.h).
    query_nic_vport_context_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        other_vport @ 0x40, 0x1;
        vport_number @ 0x50, 0x10;
        allowed_list_type @ 0x65, 0x3;
    }

    /// `struct mlx5_ifc_query_nic_vport_context_out_bits` (mlx5_ifc.h).
    query_nic_vport_context_out, 0x880 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        nic_vport_context @ 0x80, 0x800 => crate::prm::ctx::nic_vport_context;
    }

    /// `struct mlx5_ifc_query_hca_vport_context_in_bits` (mlx5_ifc.h).
    query_hca_vport_context_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        other_vport @ 0x40, 0x1;
        port_num @ 0x4c, 0x4;
        vport_number @ 0x50, 0x10;
    }

    /// `struct mlx5_ifc_query_hca_vport_context_out_bits` (mlx5_ifc.h).
    query_hca_vport_context_out, 0x1080 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        hca_vport_context @ 0x80, 0x1000 => crate::prm::ctx::hca_vport_context;
    }

    /// `struct mlx5_ifc_modify_hca_vport_context_in_bits` (mlx5_ifc.h).
    modify_hca_vport_context_in, 0x1080 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        other_vport @ 0x40, 0x1;
        port_num @ 0x4c, 0x4;
        vport_number @ 0x50, 0x10;
        hca_vport_context @ 0x80, 0x1000 => crate::prm::ctx::hca_vport_context;
    }

    /// `struct mlx5_ifc_modify_hca_vport_context_out_bits` (mlx5_ifc.h).
    modify_hca_vport_context_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_mad_ifc_in_bits` (mlx5_ifc.h).
    mad_ifc_in, 0x880 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        remote_lid @ 0x40, 0x10;
        plane_index @ 0x50, 0x8;
        port @ 0x58, 0x8;
        mad @ 0x80, 0x800;
    }

    /// `struct mlx5_ifc_mad_ifc_out_bits` (mlx5_ifc.h).
    mad_ifc_out, 0x880 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        response_mad_packet @ 0x80, 0x800;
    }

    /// `struct mlx5_ifc_query_hca_vport_gid_in_bits` (mlx5_ifc.h).
    query_hca_vport_gid_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        other_vport @ 0x40, 0x1;
        port_num @ 0x4c, 0x4;
        vport_number @ 0x50, 0x10;
        gid_index @ 0x70, 0x10;
    }

    /// `struct mlx5_ifc_query_hca_vport_gid_out_bits` (mlx5_ifc.h).
    query_hca_vport_gid_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        gids_num @ 0x60, 0x10;
    }

    /// `struct mlx5_ifc_query_hca_vport_pkey_in_bits` (mlx5_ifc.h).
    query_hca_vport_pkey_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        other_vport @ 0x40, 0x1;
        port_num @ 0x4c, 0x4;
        vport_number @ 0x50, 0x10;
        pkey_index @ 0x70, 0x10;
    }

    /// `struct mlx5_ifc_query_hca_vport_pkey_out_bits` (mlx5_ifc.h).
    query_hca_vport_pkey_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_access_register_in_bits` (mlx5_ifc.h).
    access_register_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        register_id @ 0x50, 0x10;
        argument @ 0x60, 0x20;
    }

    /// `struct mlx5_ifc_access_register_out_bits` (mlx5_ifc.h).
    access_register_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_alloc_pd_in_bits` (mlx5_ifc.h).
    alloc_pd_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
    }

    /// `struct mlx5_ifc_alloc_pd_out_bits` (mlx5_ifc.h).
    alloc_pd_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        pd @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_dealloc_pd_in_bits` (mlx5_ifc.h).
    dealloc_pd_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        pd @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_dealloc_pd_out_bits` (mlx5_ifc.h).
    dealloc_pd_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_attach_to_mcg_in_bits` (mlx5_ifc.h).
    attach_to_mcg_in, 0x100 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        qpn @ 0x48, 0x18;
        multicast_gid @ 0x80, 0x80;
    }

    /// `struct mlx5_ifc_attach_to_mcg_out_bits` (mlx5_ifc.h).
    attach_to_mcg_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_detach_from_mcg_in_bits` (mlx5_ifc.h).
    detach_from_mcg_in, 0x100 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        qpn @ 0x48, 0x18;
        multicast_gid @ 0x80, 0x80;
    }

    /// `struct mlx5_ifc_detach_from_mcg_out_bits` (mlx5_ifc.h).
    detach_from_mcg_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_alloc_uar_in_bits` (mlx5_ifc.h).
    alloc_uar_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
    }

    /// `struct mlx5_ifc_alloc_uar_out_bits` (mlx5_ifc.h).
    alloc_uar_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        uar @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_dealloc_uar_in_bits` (mlx5_ifc.h).
    dealloc_uar_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        uar @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_dealloc_uar_out_bits` (mlx5_ifc.h).
    dealloc_uar_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_alloc_transport_domain_in_bits` (mlx5_ifc.h).
    alloc_transport_domain_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
    }

    /// `struct mlx5_ifc_alloc_transport_domain_out_bits` (mlx5_ifc.h).
    alloc_transport_domain_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        transport_domain @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_dealloc_transport_domain_in_bits` (mlx5_ifc.h).
    dealloc_transport_domain_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        transport_domain @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_dealloc_transport_domain_out_bits` (mlx5_ifc.h).
    dealloc_transport_domain_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_create_cq_in_bits` (mlx5_ifc.h).
    create_cq_in, 0x880 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        cq_context @ 0x80, 0x200 => crate::prm::ctx::cqc;
        cq_umem_valid @ 0x2e0, 0x1;
    }

    /// `struct mlx5_ifc_create_cq_out_bits` (mlx5_ifc.h).
    create_cq_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        cqn @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_destroy_cq_in_bits` (mlx5_ifc.h).
    destroy_cq_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        cqn @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_destroy_cq_out_bits` (mlx5_ifc.h).
    destroy_cq_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_query_cq_in_bits` (mlx5_ifc.h).
    query_cq_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        cqn @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_query_cq_out_bits` (mlx5_ifc.h).
    query_cq_out, 0x880 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        cq_context @ 0x80, 0x200 => crate::prm::ctx::cqc;
    }

    /// `struct mlx5_ifc_modify_cq_in_bits` (mlx5_ifc.h).
    modify_cq_in, 0x880 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        cqn @ 0x48, 0x18;
        modify_field_select_resize_field_select @ 0x60, 0x20;
        cq_context @ 0x80, 0x200 => crate::prm::ctx::cqc;
        cq_umem_valid @ 0x2e0, 0x1;
    }

    /// `struct mlx5_ifc_modify_cq_out_bits` (mlx5_ifc.h).
    modify_cq_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_create_qp_in_bits` (mlx5_ifc.h).
    create_qp_in, 0x880 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        qpc_ext @ 0x40, 0x1;
        input_qpn @ 0x48, 0x18;
        opt_param_mask @ 0x80, 0x20;
        ece @ 0xa0, 0x20;
        qpc @ 0xc0, 0x740 => crate::prm::ctx::qpc;
        wq_umem_offset @ 0x800, 0x40;
        wq_umem_id @ 0x840, 0x20;
        wq_umem_valid @ 0x860, 0x1;
    }

    /// `struct mlx5_ifc_create_qp_out_bits` (mlx5_ifc.h).
    create_qp_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        qpn @ 0x48, 0x18;
        ece @ 0x60, 0x20;
    }

    /// `struct mlx5_ifc_{destroy_qp,qp_2err,qp_2rst}_in_bits` (mlx5_ifc.h): the same members.
    destroy_qp_in | qp_2err_in | qp_2rst_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        qpn @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_{destroy_qp,qp_2err,qp_2rst}_out_bits` (mlx5_ifc.h): the same members.
    destroy_qp_out | qp_2err_out | qp_2rst_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_query_qp_in_bits` (mlx5_ifc.h).
    query_qp_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        qpc_ext @ 0x40, 0x1;
        qpn @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_query_qp_out_bits` (mlx5_ifc.h).
    query_qp_out, 0xe80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        opt_param_mask @ 0x80, 0x20;
        ece @ 0xa0, 0x20;
        qpc @ 0xc0, 0x740 => crate::prm::ctx::qpc;
        qp_pas_or_qpc_ext_and_pas @ 0x880, 0x600;
    }

    /// `struct mlx5_ifc_{rst2init,init2init,init2rtr,rtr2rts,rts2rts}_qp_in_bits` (mlx5_ifc.h): the same members.
    rst2init_qp_in | init2init_qp_in | init2rtr_qp_in | rtr2rts_qp_in | rts2rts_qp_in, 0x880 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        qpn @ 0x48, 0x18;
        opt_param_mask @ 0x80, 0x20;
        ece @ 0xa0, 0x20;
        qpc @ 0xc0, 0x740 => crate::prm::ctx::qpc;
    }

    /// `struct mlx5_ifc_{rst2init,init2init,init2rtr,rtr2rts,rts2rts}_qp_out_bits` (mlx5_ifc.h): the same members.
    rst2init_qp_out | init2init_qp_out | init2rtr_qp_out | rtr2rts_qp_out | rts2rts_qp_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        ece @ 0x60, 0x20;
    }

    /// `struct mlx5_ifc_create_mkey_in_bits` (mlx5_ifc.h).
    create_mkey_in, 0x880 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        pg_access @ 0x60, 0x1;
        mkey_umem_valid @ 0x61, 0x1;
        data_direct @ 0x62, 0x1;
        memory_key_mkey_entry @ 0x80, 0x200 => crate::prm::ctx::mkc;
        translations_octword_actual_size @ 0x300, 0x20;
    }

    /// `struct mlx5_ifc_create_mkey_out_bits` (mlx5_ifc.h).
    create_mkey_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        mkey_index @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_destroy_mkey_in_bits` (mlx5_ifc.h).
    destroy_mkey_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        mkey_index @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_destroy_mkey_out_bits` (mlx5_ifc.h).
    destroy_mkey_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_query_mkey_in_bits` (mlx5_ifc.h).
    query_mkey_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        mkey_index @ 0x48, 0x18;
        pg_access @ 0x60, 0x1;
    }

    /// `struct mlx5_ifc_query_mkey_out_bits` (mlx5_ifc.h).
    query_mkey_out, 0x980 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        memory_key_mkey_entry @ 0x80, 0x200 => crate::prm::ctx::mkc;
        bsf0_klm0_pas_mtt0_1 @ 0x880, 0x80;
        bsf1_klm1_pas_mtt2_3 @ 0x900, 0x80;
    }

    /// `struct mlx5_ifc_set_roce_address_in_bits` (mlx5_ifc.h).
    set_roce_address_in, 0x180 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        roce_address_index @ 0x40, 0x10;
        vhca_port_num @ 0x5c, 0x4;
        roce_address @ 0x80, 0x100 => crate::prm::ctx::roce_addr_layout;
    }

    /// `struct mlx5_ifc_set_roce_address_out_bits` (mlx5_ifc.h).
    set_roce_address_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_create_uctx_in_bits` (mlx5_ifc.h).
    create_uctx_in, 0x200 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        uctx @ 0x80, 0x180 => crate::prm::ctx::uctx;
    }

    /// `struct mlx5_ifc_create_uctx_out_bits` (mlx5_ifc.h).
    create_uctx_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        uid @ 0x50, 0x10;
    }

    /// `struct mlx5_ifc_destroy_uctx_in_bits` (mlx5_ifc.h).
    destroy_uctx_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        uid @ 0x50, 0x10;
    }

    /// `struct mlx5_ifc_destroy_uctx_out_bits` (mlx5_ifc.h).
    destroy_uctx_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_create_umem_in_bits` (mlx5_ifc.h); the MTT entries (`mtt[]`, 64 bits
    /// each, `struct mlx5_ifc_mtt_bits`) follow.
    create_umem_in, 0x180 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        umem @ 0x80, 0x100 => crate::prm::ctx::umem;
    }

    /// `struct mlx5_ifc_create_umem_out_bits` (mlx5_ifc.h).
    create_umem_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        umem_id @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_destroy_umem_in_bits` (mlx5_ifc.h).
    destroy_umem_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        umem_id @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_destroy_umem_out_bits` (mlx5_ifc.h).
    destroy_umem_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_general_obj_in_cmd_hdr_bits` (mlx5_ifc.h): the header DEVX reads
    /// from any command a user passes (opcode, uid, `vhca_tunnel_id`, general object type
    /// and id).
    general_obj_in_cmd_hdr, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        vhca_tunnel_id @ 0x20, 0x10;
        obj_type @ 0x30, 0x10;
        obj_id @ 0x40, 0x20;
    }

    /// `struct mlx5_ifc_general_obj_out_cmd_hdr_bits` (mlx5_ifc.h).
    general_obj_out_cmd_hdr, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        obj_id @ 0x40, 0x20;
    }

    /// `struct mlx5_ifc_{enable,disable}_hca_in_bits` (mlx5_ifc.h): the same members.
    enable_hca_in | disable_hca_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        embedded_cpu_function @ 0x40, 0x1;
        function_id_type @ 0x43, 0x1;
        function_id @ 0x50, 0x10;
    }

    /// `struct mlx5_ifc_{enable,disable}_hca_out_bits` (mlx5_ifc.h): the same members.
    enable_hca_out | disable_hca_out, 0x60 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_query_issi_in_bits` (mlx5_ifc.h).
    query_issi_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
    }

    /// `struct mlx5_ifc_query_issi_out_bits` (mlx5_ifc.h).
    query_issi_out, 0x380 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        current_issi @ 0x50, 0x10;
        supported_issi_dw0 @ 0x360, 0x20;
    }

    /// `struct mlx5_ifc_set_issi_in_bits` (mlx5_ifc.h).
    set_issi_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        current_issi @ 0x50, 0x10;
    }

    /// `struct mlx5_ifc_set_issi_out_bits` (mlx5_ifc.h).
    set_issi_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_query_pages_in_bits` (mlx5_ifc.h).
    query_pages_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        embedded_cpu_function @ 0x40, 0x1;
        function_id @ 0x50, 0x10;
    }

    /// `struct mlx5_ifc_query_pages_out_bits` (mlx5_ifc.h).
    query_pages_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        embedded_cpu_function @ 0x40, 0x1;
        function_id @ 0x50, 0x10;
        num_pages @ 0x60, 0x20;
    }

    /// `struct mlx5_ifc_set_hca_cap_out_bits` (mlx5_ifc.h).
    set_hca_cap_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_init_hca_in_bits` (mlx5_ifc.h).
    init_hca_in, 0x100 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        sw_vhca_id @ 0x62, 0xe;
        sw_owner_id @ 0x80, 0x80;
    }

    /// `struct mlx5_ifc_init_hca_out_bits` (mlx5_ifc.h).
    init_hca_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_teardown_hca_in_bits` (mlx5_ifc.h).
    teardown_hca_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        profile @ 0x50, 0x10;
    }

    /// `struct mlx5_ifc_teardown_hca_out_bits` (mlx5_ifc.h).
    teardown_hca_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        state @ 0x7f, 0x1;
    }

    /// `struct mlx5_ifc_create_eq_in_bits` (mlx5_ifc.h).
    create_eq_in, 0x880 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        eq_context_entry @ 0x80, 0x200 => crate::prm::ctx::eqc;
        event_bitmask @ 0x2c0, 0x100;
    }

    /// `struct mlx5_ifc_create_eq_out_bits` (mlx5_ifc.h).
    create_eq_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        eq_number @ 0x58, 0x8;
    }

    /// `struct mlx5_ifc_destroy_eq_in_bits` (mlx5_ifc.h).
    destroy_eq_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        eq_number @ 0x58, 0x8;
    }

    /// `struct mlx5_ifc_destroy_eq_out_bits` (mlx5_ifc.h).
    destroy_eq_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_set_driver_version_in_bits` (mlx5_ifc.h).
    set_driver_version_in, 0x280 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        driver_version @ 0x80, 0x200;
    }

    /// `struct mlx5_ifc_set_driver_version_out_bits` (mlx5_ifc.h).
    set_driver_version_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_set_hca_cap_in_bits` (mlx5_ifc.h).
    set_hca_cap_in, 0x8080 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        other_function @ 0x40, 0x1;
        ec_vf_function @ 0x41, 0x1;
        function_id_type @ 0x43, 0x1;
        function_id @ 0x50, 0x10;
        capability @ 0x80, 0x8000;
    }

    /// `struct mlx5_ifc_create_rmp_in_bits` (mlx5_ifc.h).
    create_rmp_in, 0x880 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        ctx @ 0x100, 0x780 => crate::prm::ctx::rmpc;
    }

    /// `struct mlx5_ifc_create_rmp_out_bits` (mlx5_ifc.h).
    create_rmp_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        rmpn @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_modify_rmp_in_bits` (mlx5_ifc.h).
    modify_rmp_in, 0x880 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        rmp_state @ 0x40, 0x4;
        rmpn @ 0x48, 0x18;
        bitmask @ 0x80, 0x40 => crate::prm::ctx::rmp_bitmask;
        ctx @ 0x100, 0x780 => crate::prm::ctx::rmpc;
    }

    /// `struct mlx5_ifc_modify_rmp_out_bits` (mlx5_ifc.h).
    modify_rmp_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_query_rmp_in_bits` (mlx5_ifc.h).
    query_rmp_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        rmpn @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_query_rmp_out_bits` (mlx5_ifc.h).
    query_rmp_out, 0x880 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        rmp_context @ 0x100, 0x780 => crate::prm::ctx::rmpc;
    }

    /// `struct mlx5_ifc_destroy_rmp_in_bits` (mlx5_ifc.h).
    destroy_rmp_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        rmpn @ 0x48, 0x18;
    }

    /// `struct mlx5_ifc_destroy_rmp_out_bits` (mlx5_ifc.h).
    destroy_rmp_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_alloc_memic_in_bits` (mlx5_ifc.h).
    alloc_memic_in, 0x100 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        log_memic_addr_alignment @ 0x78, 0x8;
        range_start_addr @ 0x80, 0x40;
        range_size @ 0xc0, 0x20;
        memic_size @ 0xe0, 0x20;
    }

    /// `struct mlx5_ifc_alloc_memic_out_bits` (mlx5_ifc.h).
    alloc_memic_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        memic_start_addr @ 0x40, 0x40;
    }

    /// `struct mlx5_ifc_dealloc_memic_in_bits` (mlx5_ifc.h).
    dealloc_memic_in, 0x100 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        memic_start_addr @ 0x80, 0x40;
        memic_size @ 0xc0, 0x20;
    }

    /// `struct mlx5_ifc_dealloc_memic_out_bits` (mlx5_ifc.h).
    dealloc_memic_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_alloc_q_counter_in_bits` (mlx5_ifc.h).
    alloc_q_counter_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
    }

    /// `struct mlx5_ifc_alloc_q_counter_out_bits` (mlx5_ifc.h).
    alloc_q_counter_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        counter_set_id @ 0x58, 0x8;
    }

    /// `struct mlx5_ifc_dealloc_q_counter_in_bits` (mlx5_ifc.h).
    dealloc_q_counter_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        counter_set_id @ 0x58, 0x8;
    }

    /// `struct mlx5_ifc_dealloc_q_counter_out_bits` (mlx5_ifc.h).
    dealloc_q_counter_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }

    /// `struct mlx5_ifc_query_q_counter_in_bits` (mlx5_ifc.h).
    query_q_counter_in, 0x100 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        other_vport @ 0x40, 0x1;
        vport_number @ 0x50, 0x10;
        clear @ 0xc0, 0x1;
        aggregate @ 0xc1, 0x1;
        counter_set_id @ 0xf8, 0x8;
    }

    /// `struct mlx5_ifc_query_q_counter_out_bits` (mlx5_ifc.h).
    query_q_counter_out, 0x800 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        rx_write_requests @ 0x80, 0x20;
        rx_read_requests @ 0xc0, 0x20;
        rx_atomic_requests @ 0x100, 0x20;
        rx_dct_connect @ 0x140, 0x20;
        out_of_buffer @ 0x180, 0x20;
        out_of_sequence @ 0x1c0, 0x20;
        duplicate_request @ 0x200, 0x20;
        rnr_nak_retry_err @ 0x240, 0x20;
        packet_seq_err @ 0x280, 0x20;
        implied_nak_seq_err @ 0x2c0, 0x20;
        local_ack_timeout_err @ 0x300, 0x20;
        req_rnr_retries_exceeded @ 0x380, 0x20;
        resp_local_length_error @ 0x3c0, 0x20;
        req_local_length_error @ 0x3e0, 0x20;
        resp_local_qp_error @ 0x400, 0x20;
        local_operation_error @ 0x420, 0x20;
        resp_local_protection @ 0x440, 0x20;
        req_local_protection @ 0x460, 0x20;
        resp_cqe_error @ 0x480, 0x20;
        req_cqe_error @ 0x4a0, 0x20;
        req_mw_binding @ 0x4c0, 0x20;
        req_bad_response @ 0x4e0, 0x20;
        req_remote_invalid_request @ 0x500, 0x20;
        resp_remote_invalid_request @ 0x520, 0x20;
        req_remote_access_errors @ 0x540, 0x20;
        resp_remote_access_errors @ 0x560, 0x20;
        req_remote_operation_errors @ 0x580, 0x20;
        req_transport_retries_exceeded @ 0x5a0, 0x20;
        cq_overflow @ 0x5c0, 0x20;
        resp_cqe_flush_error @ 0x5e0, 0x20;
        req_cqe_flush_error @ 0x600, 0x20;
        roce_adp_retrans @ 0x640, 0x20;
        roce_adp_retrans_to @ 0x660, 0x20;
        roce_slow_restart @ 0x680, 0x20;
        roce_slow_restart_cnps @ 0x6a0, 0x20;
        roce_slow_restart_trans @ 0x6c0, 0x20;
    }
    /// `struct mlx5_ifc_alloc_xrcd_in_bits` (mlx5_ifc.h).
    alloc_xrcd_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
    }
    /// `struct mlx5_ifc_alloc_xrcd_out_bits` (mlx5_ifc.h).
    alloc_xrcd_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        xrcd @ 0x48, 0x18;
    }
    /// `struct mlx5_ifc_dealloc_xrcd_in_bits` (mlx5_ifc.h).
    dealloc_xrcd_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        xrcd @ 0x48, 0x18;
    }
    /// `struct mlx5_ifc_dealloc_xrcd_out_bits` (mlx5_ifc.h).
    dealloc_xrcd_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }
    /// `struct mlx5_ifc_create_xrc_srq_in_bits` (mlx5_ifc.h); `pas[]` follows.
    create_xrc_srq_in, 0x880 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        xrc_srq_context_entry @ 0x80, 0x200 => crate::prm::ctx::xrc_srqc;
        xrc_srq_umem_valid @ 0x2e0, 0x1;
    }
    /// `struct mlx5_ifc_create_xrc_srq_out_bits` (mlx5_ifc.h).
    create_xrc_srq_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        xrc_srqn @ 0x48, 0x18;
    }
    /// `struct mlx5_ifc_destroy_xrc_srq_in_bits` (mlx5_ifc.h).
    destroy_xrc_srq_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        xrc_srqn @ 0x48, 0x18;
    }
    /// `struct mlx5_ifc_destroy_xrc_srq_out_bits` (mlx5_ifc.h).
    destroy_xrc_srq_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }
    /// `struct mlx5_ifc_create_dct_in_bits` (mlx5_ifc.h).
    create_dct_in, 0x400 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        dct_context_entry @ 0x80, 0x200 => crate::prm::ctx::dctc;
    }
    /// `struct mlx5_ifc_create_dct_out_bits` (mlx5_ifc.h).
    create_dct_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        dctn @ 0x48, 0x18;
        ece @ 0x60, 0x20;
    }
    /// `struct mlx5_ifc_destroy_dct_in_bits` (mlx5_ifc.h).
    destroy_dct_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        dctn @ 0x48, 0x18;
    }
    /// `struct mlx5_ifc_destroy_dct_out_bits` (mlx5_ifc.h).
    destroy_dct_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }
    /// `struct mlx5_ifc_drain_dct_in_bits` (mlx5_ifc.h).
    drain_dct_in, 0x80 {
        opcode @ 0x0, 0x10;
        uid @ 0x10, 0x10;
        op_mod @ 0x30, 0x10;
        dctn @ 0x48, 0x18;
    }
    /// `struct mlx5_ifc_drain_dct_out_bits` (mlx5_ifc.h).
    drain_dct_out, 0x80 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
    }
    /// `struct mlx5_ifc_query_dct_in_bits` (mlx5_ifc.h).
    query_dct_in, 0x80 {
        opcode @ 0x0, 0x10;
        op_mod @ 0x30, 0x10;
        dctn @ 0x48, 0x18;
    }
    /// `struct mlx5_ifc_query_dct_out_bits` (mlx5_ifc.h).
    query_dct_out, 0x400 {
        status @ 0x0, 0x8;
        syndrome @ 0x20, 0x20;
        dct_context_entry @ 0x80, 0x200 => crate::prm::ctx::dctc;
    }
}

/// Members that name a umem in a CQ or QP context. The PRM defines them (rdma-core's and
/// DPDK's copies of the PRM header name them; a DEVX user fills them), but Linux 7.3's
/// mlx5_ifc.h leaves those bits reserved because the kernel never sets them (upstream
/// `devx_set_umem_valid()` sets only the `*_umem_valid` bits), so they are declared here,
/// outside [`prm_layouts!`], and `tools/prm-check` (which diffs against mlx5_ifc.h) does not
/// see them. Offsets: DPDK `drivers/common/mlx5/mlx5_prm.h` (`create_cq_in`, `cqc`, `qpc`).
pub(crate) mod umem_refs {
    use crate::prm::layout::Member;

    /// `create_cq_in.cq_umem_offset`: where the CQ buffer starts in its umem.
    pub(crate) const CQ_UMEM_OFFSET: Member<super::create_cq_in::Bits> =
        Member::new("cq_umem_offset", 0x280, 0x40);
    /// `create_cq_in.cq_umem_id`: the umem holding the CQ buffer (with `cq_umem_valid`).
    pub(crate) const CQ_UMEM_ID: Member<super::create_cq_in::Bits> =
        Member::new("cq_umem_id", 0x2c0, 0x20);
    /// `cqc.dbr_umem_id`: the umem holding the doorbell record (with `cqc.dbr_umem_valid`;
    /// `cqc.dbr_addr` is then an offset in it).
    pub(crate) const CQC_DBR_UMEM_ID: Member<crate::prm::ctx::cqc::Bits> =
        Member::new("dbr_umem_id", 0x20, 0x20);
    /// `qpc.dbr_umem_id` (with `qpc.dbr_umem_valid`).
    pub(crate) const QPC_DBR_UMEM_ID: Member<crate::prm::ctx::qpc::Bits> =
        Member::new("dbr_umem_id", 0x720, 0x20);
}
