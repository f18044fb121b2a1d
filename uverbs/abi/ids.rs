// SPDX-License-Identifier: GPL-2.0

//! Object, method and attribute ids of the ioctl ABI and the `write()`
//! command numbers, exactly as `include/uapi/rdma/ib_user_ioctl_cmds.h` and
//! `include/uapi/rdma/ib_user_verbs.h` (Linux 7.3) number them. Only the ids
//! that rdma-core 44 uses for `ibv_devinfo` and the basic verbs, plus the
//! ones their neighbours need to keep the numbering visible, are listed.

/// Declares `pub(crate) const $name: $t = $v` for an upstream id of an object, method or
/// command this stack does not implement: listed so the numbering stays visible, unused in the
/// module build (`dead_code` expected there; the host tests may use it).
macro_rules! unimplemented_id {
    ($(#[$m:meta])* $name:ident: $t:ty = $v:expr) => {
        $(#[$m])*
        #[cfg_attr(
            MODULE,
            expect(
                dead_code,
                reason = "an upstream id of an object, method or command this stack does not implement"
            )
        )]
        pub(crate) const $name: $t = $v;
    };
}

unimplemented_id! {
    /// upstream: `UVERBS_ID_NS_MASK`: the namespace bits of an object, method or
    /// attribute id.
    UVERBS_ID_NS_MASK: u16 = 0xF000
}
/// upstream: `UVERBS_ID_NS_SHIFT`.
pub(crate) const UVERBS_ID_NS_SHIFT: u32 = 12;
/// upstream: `UVERBS_ID_DRIVER_NS` (== `UVERBS_API_NS_FLAG`): ids with this
/// bit set belong to the driver namespace.
pub(crate) const UVERBS_ID_DRIVER_NS: u16 = 1 << UVERBS_ID_NS_SHIFT;
/// upstream: `UVERBS_ATTR_UHW_IN`: driver-private input (`ib_udata.inbuf`).
pub(crate) const UVERBS_ATTR_UHW_IN: u16 = UVERBS_ID_DRIVER_NS;
/// upstream: `UVERBS_ATTR_UHW_OUT`: driver-private output (`ib_udata.outbuf`).
pub(crate) const UVERBS_ATTR_UHW_OUT: u16 = UVERBS_ID_DRIVER_NS + 1;
/// upstream: `UVERBS_ID_DRIVER_NS_WITH_UHW`: first id a driver may use for
/// its own attributes of a method that has `UVERBS_ATTR_UHW()`.
pub(crate) const UVERBS_ID_DRIVER_NS_WITH_UHW: u16 = UVERBS_ID_DRIVER_NS + 2;

/// upstream: `UVERBS_IDR_ANY_OBJECT`: an IDR attribute accepting any type.
pub(crate) const UVERBS_IDR_ANY_OBJECT: u16 = 0xFFFF;

/// upstream: `enum uverbs_default_objects`.
pub(crate) mod obj {
    pub(crate) const DEVICE: u16 = 0;
    pub(crate) const PD: u16 = 1;
    pub(crate) const COMP_CHANNEL: u16 = 2;
    pub(crate) const CQ: u16 = 3;
    pub(crate) const QP: u16 = 4;
    pub(crate) const SRQ: u16 = 5;
    pub(crate) const AH: u16 = 6;
    pub(crate) const MR: u16 = 7;
    pub(crate) const MW: u16 = 8;
    unimplemented_id!(FLOW: u16 = 9);
    pub(crate) const XRCD: u16 = 10;
    pub(crate) const RWQ_IND_TBL: u16 = 11;
    unimplemented_id!(WQ: u16 = 12);
    unimplemented_id!(FLOW_ACTION: u16 = 13);
    pub(crate) const DM: u16 = 14;
    unimplemented_id!(COUNTERS: u16 = 15);
    pub(crate) const ASYNC_EVENT: u16 = 16;
    pub(crate) const DMAH: u16 = 17;
    unimplemented_id!(DMABUF: u16 = 18);
    unimplemented_id!(COMP_CNTR: u16 = 19);
}

/// Method ids, per object (`enum uverbs_methods_*`).
pub(crate) mod method {
    /// upstream: `enum uverbs_methods_device`.
    pub(crate) const INVOKE_WRITE: u16 = 0;
    pub(crate) const INFO_HANDLES: u16 = 1;
    pub(crate) const QUERY_PORT: u16 = 2;
    pub(crate) const GET_CONTEXT: u16 = 3;
    pub(crate) const QUERY_CONTEXT: u16 = 4;
    pub(crate) const QUERY_GID_TABLE: u16 = 5;
    pub(crate) const QUERY_GID_ENTRY: u16 = 6;
    pub(crate) const QUERY_PORT_SPEED: u16 = 7;
    unimplemented_id!(QUERY_COMP_CNTR_CAPS: u16 = 8);

    /// upstream: `enum uverbs_methods_pd`.
    pub(crate) const PD_DESTROY: u16 = 0;

    /// upstream: `enum uverbs_methods_mw`.
    pub(crate) const MW_DESTROY: u16 = 0;
    /// upstream: `enum uverbs_methods_dm`.
    pub(crate) const DM_ALLOC: u16 = 0;
    pub(crate) const DM_FREE: u16 = 1;
    /// upstream: `enum uverbs_methods_xrcd`.
    pub(crate) const XRCD_DESTROY: u16 = 0;

    /// upstream: `enum uverbs_methods_cq`.
    pub(crate) const CQ_CREATE: u16 = 0;
    pub(crate) const CQ_DESTROY: u16 = 1;

    /// upstream: `enum uverbs_methods_qp`.
    pub(crate) const QP_CREATE: u16 = 0;
    pub(crate) const QP_DESTROY: u16 = 1;
    unimplemented_id!(QP_ATTACH_COMP_CNTR: u16 = 2);

    /// upstream: `enum uverbs_methods_srq`.
    pub(crate) const SRQ_CREATE: u16 = 0;
    pub(crate) const SRQ_DESTROY: u16 = 1;

    /// upstream: `enum uverbs_methods_mr`.
    pub(crate) const DM_MR_REG: u16 = 0;
    pub(crate) const MR_DESTROY: u16 = 1;
    unimplemented_id!(ADVISE_MR: u16 = 2);
    pub(crate) const QUERY_MR: u16 = 3;
    unimplemented_id!(REG_DMABUF_MR: u16 = 4);
    pub(crate) const REG_MR: u16 = 5;

    /// upstream: `enum uverbs_method_async_event`.
    pub(crate) const ASYNC_EVENT_ALLOC: u16 = 0;
}

/// Attribute ids, per method (`enum uverbs_attrs_*`).
pub(crate) mod attr {
    // upstream: enum uverbs_attrs_invoke_write_cmd_attr_ids
    pub(crate) const CORE_IN: u16 = 0;
    pub(crate) const CORE_OUT: u16 = 1;
    pub(crate) const WRITE_CMD: u16 = 2;

    // upstream: enum uverbs_attrs_info_handles_id
    pub(crate) const INFO_OBJECT_ID: u16 = 0;
    pub(crate) const INFO_TOTAL_HANDLES: u16 = 1;
    pub(crate) const INFO_HANDLES_LIST: u16 = 2;

    // upstream: enum uverbs_attrs_query_port_cmd_attr_ids
    pub(crate) const QUERY_PORT_PORT_NUM: u16 = 0;
    pub(crate) const QUERY_PORT_RESP: u16 = 1;

    // upstream: enum uverbs_attrs_get_context_attr_ids
    pub(crate) const GET_CONTEXT_NUM_COMP_VECTORS: u16 = 0;
    pub(crate) const GET_CONTEXT_CORE_SUPPORT: u16 = 1;
    pub(crate) const GET_CONTEXT_FD_ARR: u16 = 2;

    // upstream: enum uverbs_attrs_query_context_attr_ids
    pub(crate) const QUERY_CONTEXT_NUM_COMP_VECTORS: u16 = 0;
    pub(crate) const QUERY_CONTEXT_CORE_SUPPORT: u16 = 1;

    // upstream: enum uverbs_attrs_query_gid_table_cmd_attr_ids
    pub(crate) const QUERY_GID_TABLE_ENTRY_SIZE: u16 = 0;
    pub(crate) const QUERY_GID_TABLE_FLAGS: u16 = 1;
    pub(crate) const QUERY_GID_TABLE_RESP_ENTRIES: u16 = 2;
    pub(crate) const QUERY_GID_TABLE_RESP_NUM_ENTRIES: u16 = 3;

    // upstream: enum uverbs_attrs_query_gid_entry_cmd_attr_ids
    pub(crate) const QUERY_GID_ENTRY_PORT: u16 = 0;
    pub(crate) const QUERY_GID_ENTRY_GID_INDEX: u16 = 1;
    pub(crate) const QUERY_GID_ENTRY_FLAGS: u16 = 2;
    pub(crate) const QUERY_GID_ENTRY_RESP_ENTRY: u16 = 3;

    // upstream: enum uverbs_attrs_pd_destroy_ids
    pub(crate) const DESTROY_PD_HANDLE: u16 = 0;
    /// upstream: `enum uverbs_attrs_destroy_xrcd_cmd`.
    pub(crate) const DESTROY_XRCD_HANDLE: u16 = 0;

    // upstream: enum uverbs_attrs_create_cq_cmd_attr_ids
    pub(crate) const CREATE_CQ_HANDLE: u16 = 0;
    pub(crate) const CREATE_CQ_CQE: u16 = 1;
    pub(crate) const CREATE_CQ_USER_HANDLE: u16 = 2;
    pub(crate) const CREATE_CQ_COMP_CHANNEL: u16 = 3;
    pub(crate) const CREATE_CQ_COMP_VECTOR: u16 = 4;
    pub(crate) const CREATE_CQ_FLAGS: u16 = 5;
    pub(crate) const CREATE_CQ_RESP_CQE: u16 = 6;
    pub(crate) const CREATE_CQ_EVENT_FD: u16 = 7;
    pub(crate) const CREATE_CQ_BUFFER_VA: u16 = 8;
    pub(crate) const CREATE_CQ_BUFFER_LENGTH: u16 = 9;
    pub(crate) const CREATE_CQ_BUFFER_FD: u16 = 10;
    pub(crate) const CREATE_CQ_BUFFER_OFFSET: u16 = 11;
    pub(crate) const CREATE_CQ_BUF_UMEM: u16 = 12;

    // upstream: enum uverbs_attrs_destroy_cq_cmd_attr_ids
    pub(crate) const DESTROY_CQ_HANDLE: u16 = 0;
    pub(crate) const DESTROY_CQ_RESP: u16 = 1;

    // upstream: enum uverbs_attrs_create_qp_cmd_attr_ids
    pub(crate) const CREATE_QP_HANDLE: u16 = 0;
    pub(crate) const CREATE_QP_XRCD_HANDLE: u16 = 1;
    pub(crate) const CREATE_QP_PD_HANDLE: u16 = 2;
    pub(crate) const CREATE_QP_SRQ_HANDLE: u16 = 3;
    pub(crate) const CREATE_QP_SEND_CQ_HANDLE: u16 = 4;
    pub(crate) const CREATE_QP_RECV_CQ_HANDLE: u16 = 5;
    pub(crate) const CREATE_QP_IND_TABLE_HANDLE: u16 = 6;
    pub(crate) const CREATE_QP_USER_HANDLE: u16 = 7;
    pub(crate) const CREATE_QP_CAP: u16 = 8;
    pub(crate) const CREATE_QP_TYPE: u16 = 9;
    pub(crate) const CREATE_QP_FLAGS: u16 = 10;
    pub(crate) const CREATE_QP_SOURCE_QPN: u16 = 11;
    pub(crate) const CREATE_QP_EVENT_FD: u16 = 12;
    pub(crate) const CREATE_QP_RESP_CAP: u16 = 13;
    pub(crate) const CREATE_QP_RESP_QP_NUM: u16 = 14;
    pub(crate) const CREATE_QP_BUF_UMEM: u16 = 15;
    pub(crate) const CREATE_QP_RQ_BUF_UMEM: u16 = 16;
    pub(crate) const CREATE_QP_SQ_BUF_UMEM: u16 = 17;

    // upstream: enum uverbs_attrs_destroy_qp_cmd_attr_ids
    pub(crate) const DESTROY_QP_HANDLE: u16 = 0;
    pub(crate) const DESTROY_QP_RESP: u16 = 1;

    // upstream: enum uverbs_attrs_create_srq_cmd_attr_ids
    pub(crate) const CREATE_SRQ_HANDLE: u16 = 0;
    pub(crate) const CREATE_SRQ_PD_HANDLE: u16 = 1;
    pub(crate) const CREATE_SRQ_XRCD_HANDLE: u16 = 2;
    pub(crate) const CREATE_SRQ_CQ_HANDLE: u16 = 3;
    pub(crate) const CREATE_SRQ_USER_HANDLE: u16 = 4;
    pub(crate) const CREATE_SRQ_MAX_WR: u16 = 5;
    pub(crate) const CREATE_SRQ_MAX_SGE: u16 = 6;
    pub(crate) const CREATE_SRQ_LIMIT: u16 = 7;
    pub(crate) const CREATE_SRQ_MAX_NUM_TAGS: u16 = 8;
    pub(crate) const CREATE_SRQ_TYPE: u16 = 9;
    pub(crate) const CREATE_SRQ_EVENT_FD: u16 = 10;
    pub(crate) const CREATE_SRQ_RESP_MAX_WR: u16 = 11;
    pub(crate) const CREATE_SRQ_RESP_MAX_SGE: u16 = 12;
    pub(crate) const CREATE_SRQ_RESP_SRQ_NUM: u16 = 13;
    pub(crate) const CREATE_SRQ_BUF_UMEM: u16 = 14;

    // upstream: enum uverbs_attrs_destroy_srq_cmd_attr_ids
    pub(crate) const DESTROY_SRQ_HANDLE: u16 = 0;
    pub(crate) const DESTROY_SRQ_RESP: u16 = 1;

    // upstream: enum uverbs_attrs_mw_destroy_ids
    pub(crate) const DESTROY_MW_HANDLE: u16 = 0;

    // upstream: enum uverbs_attrs_alloc_dm_cmd_attr_ids
    pub(crate) const ALLOC_DM_HANDLE: u16 = 0;
    pub(crate) const ALLOC_DM_LENGTH: u16 = 1;
    pub(crate) const ALLOC_DM_ALIGNMENT: u16 = 2;

    // upstream: enum uverbs_attrs_free_dm_cmd_attr_ids
    pub(crate) const FREE_DM_HANDLE: u16 = 0;

    // upstream: enum uverbs_attrs_reg_dm_mr_cmd_attr_ids
    pub(crate) const REG_DM_MR_HANDLE: u16 = 0;
    pub(crate) const REG_DM_MR_OFFSET: u16 = 1;
    pub(crate) const REG_DM_MR_LENGTH: u16 = 2;
    pub(crate) const REG_DM_MR_PD_HANDLE: u16 = 3;
    pub(crate) const REG_DM_MR_ACCESS_FLAGS: u16 = 4;
    pub(crate) const REG_DM_MR_DM_HANDLE: u16 = 5;
    pub(crate) const REG_DM_MR_RESP_LKEY: u16 = 6;
    pub(crate) const REG_DM_MR_RESP_RKEY: u16 = 7;

    // upstream: enum uverbs_attrs_mr_destroy_ids
    pub(crate) const DESTROY_MR_HANDLE: u16 = 0;

    // upstream: enum uverbs_attrs_query_mr_cmd_attr_ids
    pub(crate) const QUERY_MR_HANDLE: u16 = 0;
    pub(crate) const QUERY_MR_RESP_LKEY: u16 = 1;
    pub(crate) const QUERY_MR_RESP_RKEY: u16 = 2;
    pub(crate) const QUERY_MR_RESP_LENGTH: u16 = 3;
    pub(crate) const QUERY_MR_RESP_IOVA: u16 = 4;

    // upstream: enum uverbs_attrs_reg_mr_cmd_attr_ids
    pub(crate) const REG_MR_HANDLE: u16 = 0;
    pub(crate) const REG_MR_PD_HANDLE: u16 = 1;
    pub(crate) const REG_MR_DMA_HANDLE: u16 = 2;
    pub(crate) const REG_MR_IOVA: u16 = 3;
    pub(crate) const REG_MR_ADDR: u16 = 4;
    pub(crate) const REG_MR_LENGTH: u16 = 5;
    pub(crate) const REG_MR_ACCESS_FLAGS: u16 = 6;
    pub(crate) const REG_MR_FD: u16 = 7;
    pub(crate) const REG_MR_FD_OFFSET: u16 = 8;
    pub(crate) const REG_MR_RESP_LKEY: u16 = 9;
    pub(crate) const REG_MR_RESP_RKEY: u16 = 10;

    // upstream: enum uverbs_attrs_async_event_create
    pub(crate) const ASYNC_EVENT_ALLOC_FD_HANDLE: u16 = 0;
}

/// upstream: `enum ib_uverbs_write_cmds` (and the `IB_USER_VERBS_EX_CMD_*`
/// aliases, which reuse the same numbers under the extended flag).
pub(crate) mod cmd {
    pub(crate) const GET_CONTEXT: u32 = 0;
    pub(crate) const QUERY_DEVICE: u32 = 1;
    pub(crate) const QUERY_PORT: u32 = 2;
    pub(crate) const ALLOC_PD: u32 = 3;
    pub(crate) const DEALLOC_PD: u32 = 4;
    pub(crate) const CREATE_AH: u32 = 5;
    unimplemented_id!(MODIFY_AH: u32 = 6);
    unimplemented_id!(QUERY_AH: u32 = 7);
    pub(crate) const DESTROY_AH: u32 = 8;
    pub(crate) const REG_MR: u32 = 9;
    unimplemented_id!(REG_SMR: u32 = 10);
    pub(crate) const REREG_MR: u32 = 11;
    unimplemented_id!(QUERY_MR: u32 = 12);
    pub(crate) const DEREG_MR: u32 = 13;
    pub(crate) const ALLOC_MW: u32 = 14;
    unimplemented_id!(BIND_MW: u32 = 15);
    pub(crate) const DEALLOC_MW: u32 = 16;
    pub(crate) const CREATE_COMP_CHANNEL: u32 = 17;
    pub(crate) const CREATE_CQ: u32 = 18;
    pub(crate) const RESIZE_CQ: u32 = 19;
    pub(crate) const DESTROY_CQ: u32 = 20;
    pub(crate) const POLL_CQ: u32 = 21;
    unimplemented_id!(PEEK_CQ: u32 = 22);
    pub(crate) const REQ_NOTIFY_CQ: u32 = 23;
    pub(crate) const CREATE_QP: u32 = 24;
    pub(crate) const QUERY_QP: u32 = 25;
    pub(crate) const MODIFY_QP: u32 = 26;
    pub(crate) const DESTROY_QP: u32 = 27;
    pub(crate) const POST_SEND: u32 = 28;
    pub(crate) const POST_RECV: u32 = 29;
    pub(crate) const ATTACH_MCAST: u32 = 30;
    pub(crate) const DETACH_MCAST: u32 = 31;
    pub(crate) const CREATE_SRQ: u32 = 32;
    pub(crate) const MODIFY_SRQ: u32 = 33;
    pub(crate) const QUERY_SRQ: u32 = 34;
    pub(crate) const DESTROY_SRQ: u32 = 35;
    pub(crate) const POST_SRQ_RECV: u32 = 36;
    pub(crate) const OPEN_XRCD: u32 = 37;
    pub(crate) const CLOSE_XRCD: u32 = 38;
    pub(crate) const CREATE_XSRQ: u32 = 39;
    pub(crate) const OPEN_QP: u32 = 40;

    /// upstream: `IB_USER_VERBS_CMD_THRESHOLD`.
    pub(crate) const THRESHOLD: u32 = 50;
    pub(crate) const EX_QUERY_DEVICE: u32 = QUERY_DEVICE;
    pub(crate) const EX_CREATE_CQ: u32 = CREATE_CQ;
    pub(crate) const EX_CREATE_QP: u32 = CREATE_QP;
    pub(crate) const EX_MODIFY_QP: u32 = MODIFY_QP;
    unimplemented_id!(EX_CREATE_FLOW: u32 = THRESHOLD);
    unimplemented_id!(EX_DESTROY_FLOW: u32 = THRESHOLD + 1);
    unimplemented_id!(EX_CREATE_WQ: u32 = THRESHOLD + 2);
    unimplemented_id!(EX_MODIFY_WQ: u32 = THRESHOLD + 3);
    unimplemented_id!(EX_DESTROY_WQ: u32 = THRESHOLD + 4);
    unimplemented_id!(EX_CREATE_RWQ_IND_TBL: u32 = THRESHOLD + 5);
    unimplemented_id!(EX_DESTROY_RWQ_IND_TBL: u32 = THRESHOLD + 6);
    pub(crate) const EX_MODIFY_CQ: u32 = THRESHOLD + 7;

    /// upstream: `IB_USER_VERBS_CMD_COMMAND_MASK`.
    pub(crate) const COMMAND_MASK: u32 = 0xff;
    /// upstream: `IB_USER_VERBS_CMD_FLAG_EXTENDED`.
    pub(crate) const FLAG_EXTENDED: u32 = 0x8000_0000;
}
