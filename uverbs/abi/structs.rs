// SPDX-License-Identifier: GPL-2.0

//! The structs of the uverbs user ABI (`include/uapi/rdma/rdma_user_ioctl_cmds.h`,
//! `ib_user_verbs.h`, `ib_user_ioctl_verbs.h`), one [`uapi_structs!`] declaration each,
//! members named as in C; flexible `driver_data[]` arrays are left out (the driver's
//! udata follows the struct). `tools/uabi-check` compares every layout here with the
//! kernel's headers.
//!
//! `__be64` members hold the value as its bytes are in memory (`to_be()` on encode).

use super::layout::{uapi_c_member, uapi_structs, AbiField, Layout};

uapi_structs! {
    /// upstream: `struct ib_uverbs_ioctl_hdr` (without the flexible `attrs[]`).
    ib_uverbs_ioctl_hdr => pub(crate) struct IoctlHdr(24) {
        /// Total length of the header plus the attribute array, in bytes.
        length: u16,
        object_id: u16,
        method_id: u16,
        num_attrs: u16,
        reserved1: u64,
        /// `enum rdma_driver_id` the user expects (rdma-core sends its
        /// provider's id, RDMA_DRIVER_MLX5 = 1).
        driver_id: u32,
        reserved2: u32,
    }

    /// upstream: `struct ib_uverbs_attr`.
    ///
    /// `attr_data` is a union of `{u8 elem_id; u8 reserved}` (ENUM_IN) and
    /// `u16 reserved` (everything else); it is kept as its two bytes, which makes
    /// both views endian-independent. `data` is a union of `u64 data` and `s64
    /// data_s64` (FD and RAW_FD attributes).
    ib_uverbs_attr => pub(crate) struct UAttr(16) {
        attr_id: u16,
        /// Length of the pointed-to (or inline, when <= 8) data.
        len: u16,
        /// `UVERBS_ATTR_F_*`.
        flags: u16,
        /// `attr_data.enum_data.elem_id`.
        elem_id as "attr_data.enum_data.elem_id": u8,
        /// `attr_data.enum_data.reserved`.
        elem_reserved as "attr_data.enum_data.reserved": u8,
        /// Pointer to the data, the data itself when `len <= 8`, an IDR handle
        /// or an fd.
        data: u64,
    }

    /// upstream: `struct ib_uverbs_cmd_hdr`.
    ib_uverbs_cmd_hdr => pub(crate) struct CmdHdr(8) {
        /// Command number, `| IB_USER_VERBS_CMD_FLAG_EXTENDED` for write_ex.
        command: u32,
        /// Non-ex: length of the whole write in 4-byte words, header included.
        /// Ex: length of the core request in 8-byte words, headers excluded.
        in_words: u16,
        /// Non-ex: response length in 4-byte words. Ex: in 8-byte words.
        out_words: u16,
    }

    /// upstream: `struct ib_uverbs_ex_cmd_hdr`.
    ib_uverbs_ex_cmd_hdr => pub(crate) struct ExCmdHdr(16) {
        /// User address of the response buffer (core response, then driver's).
        response: u64,
        provider_in_words: u16,
        provider_out_words: u16,
        cmd_hdr_reserved: u32,
    }

    /// `struct ib_uverbs_get_context`.
    ib_uverbs_get_context => pub(crate) struct GetContext(8) {
        response: u64,
    }

    /// `struct ib_uverbs_get_context_resp`.
    ib_uverbs_get_context_resp => pub(crate) struct GetContextResp(8) {
        async_fd: u32,
        num_comp_vectors: u32,
    }

    /// `struct ib_uverbs_query_device`.
    ib_uverbs_query_device => pub(crate) struct QueryDevice(8) {
        response: u64,
    }

    /// `struct ib_uverbs_query_device_resp`.
    ib_uverbs_query_device_resp => pub(crate) struct QueryDeviceResp(176) {
        fw_ver: u64,
        node_guid: u64,
        sys_image_guid: u64,
        max_mr_size: u64,
        page_size_cap: u64,
        vendor_id: u32,
        vendor_part_id: u32,
        hw_ver: u32,
        max_qp: u32,
        max_qp_wr: u32,
        device_cap_flags: u32,
        max_sge: u32,
        max_sge_rd: u32,
        max_cq: u32,
        max_cqe: u32,
        max_mr: u32,
        max_pd: u32,
        max_qp_rd_atom: u32,
        max_ee_rd_atom: u32,
        max_res_rd_atom: u32,
        max_qp_init_rd_atom: u32,
        max_ee_init_rd_atom: u32,
        atomic_cap: u32,
        max_ee: u32,
        max_rdd: u32,
        max_mw: u32,
        max_raw_ipv6_qp: u32,
        max_raw_ethy_qp: u32,
        max_mcast_grp: u32,
        max_mcast_qp_attach: u32,
        max_total_mcast_qp_attach: u32,
        max_ah: u32,
        max_fmr: u32,
        max_map_per_fmr: u32,
        max_srq: u32,
        max_srq_wr: u32,
        max_srq_sge: u32,
        max_pkeys: u16,
        local_ca_ack_delay: u8,
        phys_port_cnt: u8,
        reserved: [u8; 4],
    }

    /// `struct ib_uverbs_ex_query_device`.
    ib_uverbs_ex_query_device => pub(crate) struct ExQueryDevice(8) {
        comp_mask: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_odp_caps`.
    ib_uverbs_odp_caps => pub(crate) struct OdpCaps(24) {
        general_caps: u64,
        per_transport_caps: [u32; 3],
        reserved: u32,
    }

    /// `struct ib_uverbs_rss_caps`.
    ib_uverbs_rss_caps => pub(crate) struct RssCaps(16) {
        supported_qpts: u32,
        max_rwq_indirection_tables: u32,
        max_rwq_indirection_table_size: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_tm_caps`.
    ib_uverbs_tm_caps => pub(crate) struct TmCaps(24) {
        max_rndv_hdr_size: u32,
        max_num_tags: u32,
        flags: u32,
        max_ops: u32,
        max_sge: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_cq_moderation_caps`.
    ib_uverbs_cq_moderation_caps => pub(crate) struct CqModerationCaps(8) {
        max_cq_moderation_count: u16,
        max_cq_moderation_period: u16,
        reserved: u32,
    }

    /// `struct ib_uverbs_ex_query_device_resp`.
    ib_uverbs_ex_query_device_resp => pub(crate) struct ExQueryDeviceResp(304) {
        base: QueryDeviceResp,
        comp_mask: u32,
        response_length: u32,
        odp_caps: OdpCaps,
        timestamp_mask: u64,
        hca_core_clock: u64,
        device_cap_flags_ex: u64,
        rss_caps: RssCaps,
        max_wq_type_rq: u32,
        raw_packet_caps: u32,
        tm_caps: TmCaps,
        cq_moderation_caps: CqModerationCaps,
        max_dm_size: u64,
        xrc_odp_caps: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_query_port`.
    ib_uverbs_query_port => pub(crate) struct QueryPort(16) {
        response: u64,
        port_num: u8,
        reserved: [u8; 7],
    }

    /// `struct ib_uverbs_query_port_resp`.
    ib_uverbs_query_port_resp => pub(crate) struct QueryPortResp(40) {
        port_cap_flags: u32,
        max_msg_sz: u32,
        bad_pkey_cntr: u32,
        qkey_viol_cntr: u32,
        gid_tbl_len: u32,
        pkey_tbl_len: u16,
        lid: u16,
        sm_lid: u16,
        state: u8,
        max_mtu: u8,
        active_mtu: u8,
        lmc: u8,
        max_vl_num: u8,
        sm_sl: u8,
        subnet_timeout: u8,
        init_type_reply: u8,
        active_width: u8,
        active_speed: u8,
        phys_state: u8,
        link_layer: u8,
        flags: u8,
        reserved: u8,
    }

    /// `struct ib_uverbs_query_port_resp_ex`.
    ib_uverbs_query_port_resp_ex => pub(crate) struct QueryPortRespEx(48) {
        legacy_resp: QueryPortResp,
        port_cap_flags2: u16,
        reserved: [u8; 2],
        active_speed_ex: u32,
    }

    /// `struct ib_uverbs_gid_entry`.
    ib_uverbs_gid_entry => pub(crate) struct GidEntry(32) {
        gid: [u64; 2],
        gid_index: u32,
        port_num: u32,
        gid_type: u32,
        netdev_ifindex: u32,
    }

    /// `struct ib_uverbs_alloc_pd`.
    ib_uverbs_alloc_pd => pub(crate) struct AllocPd(8) {
        response: u64,
    }

    /// `struct ib_uverbs_alloc_pd_resp`.
    ib_uverbs_alloc_pd_resp => pub(crate) struct AllocPdResp(4) {
        pd_handle: u32,
    }

    /// `struct ib_uverbs_dealloc_pd`.
    ib_uverbs_dealloc_pd => pub(crate) struct DeallocPd(4) {
        pd_handle: u32,
    }

    /// `struct ib_uverbs_reg_mr`.
    ib_uverbs_reg_mr => pub(crate) struct RegMr(40) {
        response: u64,
        start: u64,
        length: u64,
        hca_va: u64,
        pd_handle: u32,
        access_flags: u32,
    }

    /// `struct ib_uverbs_reg_mr_resp`.
    ib_uverbs_reg_mr_resp => pub(crate) struct RegMrResp(12) {
        mr_handle: u32,
        lkey: u32,
        rkey: u32,
    }

    /// `struct ib_uverbs_rereg_mr`.
    ib_uverbs_rereg_mr => pub(crate) struct ReregMr(48) {
        response: u64,
        mr_handle: u32,
        flags: u32,
        start: u64,
        length: u64,
        hca_va: u64,
        pd_handle: u32,
        access_flags: u32,
    }

    /// `struct ib_uverbs_rereg_mr_resp`.
    ib_uverbs_rereg_mr_resp => pub(crate) struct ReregMrResp(8) {
        lkey: u32,
        rkey: u32,
    }

    /// `struct ib_uverbs_dereg_mr`.
    ib_uverbs_dereg_mr => pub(crate) struct DeregMr(4) {
        mr_handle: u32,
    }

    /// `struct ib_uverbs_alloc_mw` (`driver_data[]` follows).
    ib_uverbs_alloc_mw => pub(crate) struct AllocMw(16) {
        response: u64,
        pd_handle: u32,
        mw_type: u8,
        reserved: [u8; 3],
    }

    /// `struct ib_uverbs_alloc_mw_resp`.
    ib_uverbs_alloc_mw_resp => pub(crate) struct AllocMwResp(8) {
        mw_handle: u32,
        rkey: u32,
    }

    /// `struct ib_uverbs_dealloc_mw`.
    ib_uverbs_dealloc_mw => pub(crate) struct DeallocMw(4) {
        mw_handle: u32,
    }

    /// `struct ib_uverbs_create_comp_channel`.
    ib_uverbs_create_comp_channel => pub(crate) struct CreateCompChannel(8) {
        response: u64,
    }

    /// `struct ib_uverbs_create_comp_channel_resp`.
    ib_uverbs_create_comp_channel_resp => pub(crate) struct CreateCompChannelResp(4) {
        fd: u32,
    }

    /// `struct ib_uverbs_create_cq`.
    ib_uverbs_create_cq => pub(crate) struct CreateCq(32) {
        response: u64,
        user_handle: u64,
        cqe: u32,
        comp_vector: u32,
        comp_channel: i32,
        reserved: u32,
    }

    /// `struct ib_uverbs_ex_create_cq`.
    ib_uverbs_ex_create_cq => pub(crate) struct ExCreateCq(32) {
        user_handle: u64,
        cqe: u32,
        comp_vector: u32,
        comp_channel: i32,
        comp_mask: u32,
        flags: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_create_cq_resp`.
    ib_uverbs_create_cq_resp => pub(crate) struct CreateCqResp(8) {
        cq_handle: u32,
        cqe: u32,
    }

    /// `struct ib_uverbs_ex_create_cq_resp`.
    ib_uverbs_ex_create_cq_resp => pub(crate) struct ExCreateCqResp(16) {
        base: CreateCqResp,
        comp_mask: u32,
        response_length: u32,
    }

    /// `struct ib_uverbs_resize_cq`.
    ib_uverbs_resize_cq => pub(crate) struct ResizeCq(16) {
        response: u64,
        cq_handle: u32,
        cqe: u32,
    }

    /// `struct ib_uverbs_resize_cq_resp`.
    ib_uverbs_resize_cq_resp => pub(crate) struct ResizeCqResp(8) {
        cqe: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_destroy_cq`.
    ib_uverbs_destroy_cq => pub(crate) struct DestroyCq(16) {
        response: u64,
        cq_handle: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_destroy_cq_resp`.
    ib_uverbs_destroy_cq_resp => pub(crate) struct DestroyCqResp(8) {
        comp_events_reported: u32,
        async_events_reported: u32,
    }

    /// `struct ib_uverbs_cq_moderation`.
    ib_uverbs_cq_moderation => pub(crate) struct CqModeration(4) {
        cq_count: u16,
        cq_period: u16,
    }

    /// `struct ib_uverbs_ex_modify_cq`.
    ib_uverbs_ex_modify_cq => pub(crate) struct ExModifyCq(16) {
        cq_handle: u32,
        attr_mask: u32,
        attr: CqModeration,
        reserved: u32,
    }

    /// `struct ib_uverbs_qp_cap`.
    ib_uverbs_qp_cap => pub(crate) struct QpCap(20) {
        max_send_wr: u32,
        max_recv_wr: u32,
        max_send_sge: u32,
        max_recv_sge: u32,
        max_inline_data: u32,
    }

    /// `struct ib_uverbs_create_qp`.
    ib_uverbs_create_qp => pub(crate) struct CreateQp(56) {
        response: u64,
        user_handle: u64,
        pd_handle: u32,
        send_cq_handle: u32,
        recv_cq_handle: u32,
        srq_handle: u32,
        max_send_wr: u32,
        max_recv_wr: u32,
        max_send_sge: u32,
        max_recv_sge: u32,
        max_inline_data: u32,
        sq_sig_all: u8,
        qp_type: u8,
        is_srq: u8,
        reserved: u8,
    }

    /// `struct ib_uverbs_ex_create_qp`.
    ib_uverbs_ex_create_qp => pub(crate) struct ExCreateQp(64) {
        user_handle: u64,
        pd_handle: u32,
        send_cq_handle: u32,
        recv_cq_handle: u32,
        srq_handle: u32,
        max_send_wr: u32,
        max_recv_wr: u32,
        max_send_sge: u32,
        max_recv_sge: u32,
        max_inline_data: u32,
        sq_sig_all: u8,
        qp_type: u8,
        is_srq: u8,
        reserved: u8,
        comp_mask: u32,
        create_flags: u32,
        rwq_ind_tbl_handle: u32,
        source_qpn: u32,
    }

    /// `struct ib_uverbs_create_qp_resp`.
    ib_uverbs_create_qp_resp => pub(crate) struct CreateQpResp(32) {
        qp_handle: u32,
        qpn: u32,
        max_send_wr: u32,
        max_recv_wr: u32,
        max_send_sge: u32,
        max_recv_sge: u32,
        max_inline_data: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_ex_create_qp_resp`.
    ib_uverbs_ex_create_qp_resp => pub(crate) struct ExCreateQpResp(40) {
        base: CreateQpResp,
        comp_mask: u32,
        response_length: u32,
    }

    /// `struct ib_uverbs_qp_dest`.
    ib_uverbs_qp_dest => pub(crate) struct QpDest(32) {
        dgid: [u8; 16],
        flow_label: u32,
        dlid: u16,
        reserved: u16,
        sgid_index: u8,
        hop_limit: u8,
        traffic_class: u8,
        sl: u8,
        src_path_bits: u8,
        static_rate: u8,
        is_global: u8,
        port_num: u8,
    }

    /// `struct ib_uverbs_modify_qp`.
    ib_uverbs_modify_qp => pub(crate) struct ModifyQp(112) {
        dest: QpDest,
        alt_dest: QpDest,
        qp_handle: u32,
        attr_mask: u32,
        qkey: u32,
        rq_psn: u32,
        sq_psn: u32,
        dest_qp_num: u32,
        qp_access_flags: u32,
        pkey_index: u16,
        alt_pkey_index: u16,
        qp_state: u8,
        cur_qp_state: u8,
        path_mtu: u8,
        path_mig_state: u8,
        en_sqd_async_notify: u8,
        max_rd_atomic: u8,
        max_dest_rd_atomic: u8,
        min_rnr_timer: u8,
        port_num: u8,
        timeout: u8,
        retry_cnt: u8,
        rnr_retry: u8,
        alt_port_num: u8,
        alt_timeout: u8,
        reserved: [u8; 2],
    }

    /// `struct ib_uverbs_ex_modify_qp`.
    ib_uverbs_ex_modify_qp => pub(crate) struct ExModifyQp(120) {
        base: ModifyQp,
        rate_limit: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_ex_modify_qp_resp`.
    ib_uverbs_ex_modify_qp_resp => pub(crate) struct ExModifyQpResp(8) {
        comp_mask: u32,
        response_length: u32,
    }

    /// `struct ib_uverbs_query_qp`.
    ib_uverbs_query_qp => pub(crate) struct QueryQp(16) {
        response: u64,
        qp_handle: u32,
        attr_mask: u32,
    }

    /// `struct ib_uverbs_query_qp_resp`.
    ib_uverbs_query_qp_resp => pub(crate) struct QueryQpResp(128) {
        dest: QpDest,
        alt_dest: QpDest,
        max_send_wr: u32,
        max_recv_wr: u32,
        max_send_sge: u32,
        max_recv_sge: u32,
        max_inline_data: u32,
        qkey: u32,
        rq_psn: u32,
        sq_psn: u32,
        dest_qp_num: u32,
        qp_access_flags: u32,
        pkey_index: u16,
        alt_pkey_index: u16,
        qp_state: u8,
        cur_qp_state: u8,
        path_mtu: u8,
        path_mig_state: u8,
        sq_draining: u8,
        max_rd_atomic: u8,
        max_dest_rd_atomic: u8,
        min_rnr_timer: u8,
        port_num: u8,
        timeout: u8,
        retry_cnt: u8,
        rnr_retry: u8,
        alt_port_num: u8,
        alt_timeout: u8,
        sq_sig_all: u8,
        reserved: [u8; 5],
    }

    /// `struct ib_uverbs_destroy_qp`.
    ib_uverbs_destroy_qp => pub(crate) struct DestroyQp(16) {
        response: u64,
        qp_handle: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_destroy_qp_resp`.
    ib_uverbs_destroy_qp_resp => pub(crate) struct DestroyQpResp(4) {
        events_reported: u32,
    }

    /// `struct ib_uverbs_create_srq`.
    ib_uverbs_create_srq => pub(crate) struct CreateSrq(32) {
        response: u64,
        user_handle: u64,
        pd_handle: u32,
        max_wr: u32,
        max_sge: u32,
        srq_limit: u32,
    }

    /// `struct ib_uverbs_create_srq_resp`.
    ib_uverbs_create_srq_resp => pub(crate) struct CreateSrqResp(16) {
        srq_handle: u32,
        max_wr: u32,
        max_sge: u32,
        srqn: u32,
    }

    /// `struct ib_uverbs_create_xsrq`.
    ib_uverbs_create_xsrq => pub(crate) struct CreateXsrq(48) {
        response: u64,
        user_handle: u64,
        srq_type: u32,
        pd_handle: u32,
        max_wr: u32,
        max_sge: u32,
        srq_limit: u32,
        max_num_tags: u32,
        xrcd_handle: u32,
        cq_handle: u32,
    }

    /// `struct ib_uverbs_open_xrcd`.
    ib_uverbs_open_xrcd => pub(crate) struct OpenXrcd(16) {
        response: u64,
        fd: u32,
        oflags: u32,
    }

    /// `struct ib_uverbs_open_xrcd_resp`.
    ib_uverbs_open_xrcd_resp => pub(crate) struct OpenXrcdResp(4) {
        xrcd_handle: u32,
    }

    /// `struct ib_uverbs_close_xrcd`.
    ib_uverbs_close_xrcd => pub(crate) struct CloseXrcd(4) {
        xrcd_handle: u32,
    }

    /// `struct ib_uverbs_open_qp`.
    ib_uverbs_open_qp => pub(crate) struct OpenQp(32) {
        response: u64,
        user_handle: u64,
        pd_handle: u32,
        qpn: u32,
        qp_type: u8,
        reserved: [u8; 7],
    }

    /// `struct ib_uverbs_modify_srq`.
    ib_uverbs_modify_srq => pub(crate) struct ModifySrq(16) {
        srq_handle: u32,
        attr_mask: u32,
        max_wr: u32,
        srq_limit: u32,
    }

    /// `struct ib_uverbs_query_srq`.
    ib_uverbs_query_srq => pub(crate) struct QuerySrq(16) {
        response: u64,
        srq_handle: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_query_srq_resp`.
    ib_uverbs_query_srq_resp => pub(crate) struct QuerySrqResp(16) {
        max_wr: u32,
        max_sge: u32,
        srq_limit: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_destroy_srq`.
    ib_uverbs_destroy_srq => pub(crate) struct DestroySrq(16) {
        response: u64,
        srq_handle: u32,
        reserved: u32,
    }

    /// `struct ib_uverbs_destroy_srq_resp`.
    ib_uverbs_destroy_srq_resp => pub(crate) struct DestroySrqResp(4) {
        events_reported: u32,
    }

    /// `struct ib_uverbs_global_route`.
    ib_uverbs_global_route => pub(crate) struct GlobalRoute(24) {
        dgid: [u8; 16],
        flow_label: u32,
        sgid_index: u8,
        hop_limit: u8,
        traffic_class: u8,
        reserved: u8,
    }

    /// `struct ib_uverbs_ah_attr`.
    ib_uverbs_ah_attr => pub(crate) struct AhAttr(32) {
        grh: GlobalRoute,
        dlid: u16,
        sl: u8,
        src_path_bits: u8,
        static_rate: u8,
        is_global: u8,
        port_num: u8,
        reserved: u8,
    }

    /// `struct ib_uverbs_create_ah`.
    ib_uverbs_create_ah => pub(crate) struct CreateAh(56) {
        response: u64,
        user_handle: u64,
        pd_handle: u32,
        reserved: u32,
        attr: AhAttr,
    }

    /// `struct ib_uverbs_create_ah_resp`.
    ib_uverbs_create_ah_resp => pub(crate) struct CreateAhResp(4) {
        ah_handle: u32,
    }

    /// `struct ib_uverbs_destroy_ah`.
    ib_uverbs_destroy_ah => pub(crate) struct DestroyAh(4) {
        ah_handle: u32,
    }

    /// `struct ib_uverbs_attach_mcast` (also `ib_uverbs_detach_mcast`).
    ib_uverbs_attach_mcast => pub(crate) struct AttachMcast(24) {
        gid: [u8; 16],
        qp_handle: u32,
        mlid: u16,
        reserved: u16,
    }

    /// `struct ib_uverbs_comp_event_desc`.
    ib_uverbs_comp_event_desc => pub(crate) struct CompEventDesc(8) {
        cq_handle: u64,
    }

    /// `struct ib_uverbs_async_event_desc`.
    ib_uverbs_async_event_desc => pub(crate) struct AsyncEventDesc(16) {
        element: u64,
        event_type: u32,
        reserved: u32,
    }
}

// The legacy requests of the commands with an extended form, converted into the extended
// request as upstream's legacy handlers do before the common code (`ib_uverbs_create_cq()`,
// `ib_uverbs_create_qp()`, `ib_uverbs_create_srq()`, `ib_uverbs_modify_qp()`): the members the
// legacy request has, the rest 0.

impl From<CreateCq> for ExCreateCq {
    fn from(r: CreateCq) -> Self {
        Self {
            user_handle: r.user_handle,
            cqe: r.cqe,
            comp_vector: r.comp_vector,
            comp_channel: r.comp_channel,
            ..Default::default()
        }
    }
}

impl From<CreateQp> for ExCreateQp {
    fn from(r: CreateQp) -> Self {
        Self {
            user_handle: r.user_handle,
            pd_handle: r.pd_handle,
            send_cq_handle: r.send_cq_handle,
            recv_cq_handle: r.recv_cq_handle,
            srq_handle: r.srq_handle,
            max_send_wr: r.max_send_wr,
            max_recv_wr: r.max_recv_wr,
            max_send_sge: r.max_send_sge,
            max_recv_sge: r.max_recv_sge,
            max_inline_data: r.max_inline_data,
            sq_sig_all: r.sq_sig_all,
            qp_type: r.qp_type,
            is_srq: r.is_srq,
            ..Default::default()
        }
    }
}

/// A basic SRQ (`srq_type` 0).
impl From<CreateSrq> for CreateXsrq {
    fn from(r: CreateSrq) -> Self {
        Self {
            response: r.response,
            user_handle: r.user_handle,
            pd_handle: r.pd_handle,
            max_wr: r.max_wr,
            max_sge: r.max_sge,
            srq_limit: r.srq_limit,
            ..Default::default()
        }
    }
}

impl From<ModifyQp> for ExModifyQp {
    fn from(base: ModifyQp) -> Self {
        Self {
            base,
            ..Default::default()
        }
    }
}

/// The layout macro's decode and encode (host tests).
#[cfg(test)]
mod tests {
    use super::super::layout::AbiField;
    use super::super::write::request;
    use super::super::Errno;
    use super::{
        CreateCq, CreateCqResp, CreateQp, CreateSrq, CreateXsrq, ExCreateCq, ExCreateCqResp,
        ExCreateQp, ModifyQp, QpDest,
    };

    #[test]
    fn decode_is_zero_extended_like_copy_struct_from_user() {
        // A request that ends inside a member keeps the bytes it has.
        let r = QpDest::from_bytes(&[0xaa; 18]);
        assert_eq!(r.dgid, [0xaa; 16]);
        assert_eq!(r.flow_label, u32::from_ne_bytes([0xaa, 0xaa, 0, 0]));
        assert_eq!((r.dlid, r.port_num), (0, 0));
        assert_eq!(QpDest::from_bytes(&[]), QpDest::default());
        // Nested members: ib_uverbs_modify_qp's dest then alt_dest.
        let mut b = [0u8; ModifyQp::SIZE];
        b[31] = 1; // dest.port_num
        b[63] = 2; // alt_dest.port_num
        b[104] = 3; // port_num
        let m = ModifyQp::from_bytes(&b);
        assert_eq!(
            (m.dest.port_num, m.alt_dest.port_num, m.port_num),
            (1, 2, 3)
        );
        assert_eq!(m.to_bytes(), b);
    }

    #[test]
    fn legacy_requests_convert_to_the_extended_ones() {
        let cq = ExCreateCq::from(CreateCq {
            response: 1,
            user_handle: 2,
            cqe: 3,
            comp_vector: 4,
            comp_channel: -1,
            reserved: 5,
        });
        assert_eq!(
            (cq.user_handle, cq.cqe, cq.comp_vector, cq.comp_channel),
            (2, 3, 4, -1)
        );
        assert_eq!((cq.comp_mask, cq.flags, cq.reserved), (0, 0, 0));
        let srq = CreateXsrq::from(CreateSrq {
            response: 1,
            user_handle: 2,
            pd_handle: 3,
            max_wr: 4,
            max_sge: 5,
            srq_limit: 6,
        });
        assert_eq!((srq.response, srq.srq_type, srq.srq_limit), (1, 0, 6));
        let qp = ExCreateQp::from(CreateQp {
            qp_type: 2,
            is_srq: 1,
            reserved: 9,
            ..Default::default()
        });
        assert_eq!((qp.qp_type, qp.is_srq, qp.reserved), (2, 1, 0));
    }

    #[test]
    fn encode_puts_members_at_their_offsets() {
        let r = ExCreateCqResp {
            base: CreateCqResp {
                cq_handle: 7,
                cqe: 64,
            },
            comp_mask: 0,
            response_length: 16,
        };
        let b = r.to_bytes();
        assert_eq!(&b[0..4], &7u32.to_ne_bytes());
        assert_eq!(&b[4..8], &64u32.to_ne_bytes());
        assert_eq!(&b[12..16], &16u32.to_ne_bytes());
        assert_eq!(ExCreateCqResp::read(&b), r);
    }

    #[test]
    fn request_refuses_non_zero_bytes_past_the_struct() {
        let mut b = [0u8; 24];
        b[0..4].copy_from_slice(&5u32.to_ne_bytes());
        let r: CreateCqResp = request(&b).unwrap();
        assert_eq!(r.cq_handle, 5);
        b[20] = 1;
        assert_eq!(request::<CreateCqResp>(&b), Err(Errno::EOPNOTSUPP));
        // Shorter is zero-extended.
        assert_eq!(request::<CreateCqResp>(&b[..2]).map(|r| r.cqe), Ok(0));
    }
}
