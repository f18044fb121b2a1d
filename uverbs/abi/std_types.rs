// SPDX-License-Identifier: GPL-2.0

//! The core spec tables: the ioctl methods rdma-core 44 uses for
//! `ibv_devinfo` and the basic verbs, and the write command table, as
//! upstream declares them (`uverbs_std_types_*.c`, `uverbs_def_write_intf`
//! in uverbs_cmd.c). Struct sizes are those of the Linux 7.3 uapi headers
//! on x86_64.

use super::ids::{attr, cmd, method, obj};
use super::spec::{
    Access, AttrSpec, CoreHandler, DriverOp, Handler, MethodSpec, ObjectSpec, PtrSpec, TypeClass,
    WriteCmdSpec, UA_MANDATORY, UA_OPTIONAL,
};

/// uapi struct sizes used by the specs below (checked against the 7.3
/// headers with a C compiler when they were written).
pub(crate) mod sizes {
    pub(crate) const IB_UVERBS_QUERY_PORT_RESP_EX: u16 = 48;
    pub(crate) const IB_UVERBS_GID_ENTRY: u16 = 32;
    pub(crate) const IB_UVERBS_QP_CAP: u16 = 20;
    pub(crate) const IB_UVERBS_DESTROY_CQ_RESP: u16 = 8;
    pub(crate) const IB_UVERBS_DESTROY_QP_RESP: u16 = 4;
}

const fn core(h: CoreHandler) -> Option<Handler> {
    Some(Handler::Core(h))
}

const fn m(id: u16, attrs: &'static [AttrSpec], h: CoreHandler) -> MethodSpec {
    MethodSpec {
        id,
        attrs,
        handler: core(h),
        needs: &[],
    }
}

use AttrSpec as A;

// upstream: uverbs_std_types_device.c
const INVOKE_WRITE: &[AttrSpec] = &[
    A::const_in(attr::WRITE_CMD, UA_MANDATORY),
    A::ptr_in(attr::CORE_IN, PtrSpec::min_size(4), UA_OPTIONAL),
    A::ptr_out(attr::CORE_OUT, PtrSpec::min_size(0), UA_OPTIONAL),
    A::uhw_in(),
    A::uhw_out(),
];
const INFO_HANDLES: &[AttrSpec] = &[
    A::const_in(attr::INFO_OBJECT_ID, UA_MANDATORY),
    A::ptr_out(attr::INFO_TOTAL_HANDLES, PtrSpec::ty(4), UA_OPTIONAL),
    A::ptr_out(attr::INFO_HANDLES_LIST, PtrSpec::min_size(4), UA_OPTIONAL),
];
const QUERY_PORT: &[AttrSpec] = &[
    A::const_in(attr::QUERY_PORT_PORT_NUM, UA_MANDATORY),
    // UVERBS_ATTR_STRUCT(struct ib_uverbs_query_port_resp_ex, active_speed_ex)
    A::ptr_out(
        attr::QUERY_PORT_RESP,
        PtrSpec::structure(48, sizes::IB_UVERBS_QUERY_PORT_RESP_EX),
        UA_MANDATORY,
    ),
];
const GET_CONTEXT: &[AttrSpec] = &[
    A::ptr_out(
        attr::GET_CONTEXT_NUM_COMP_VECTORS,
        PtrSpec::ty(4),
        UA_OPTIONAL,
    ),
    A::ptr_out(attr::GET_CONTEXT_CORE_SUPPORT, PtrSpec::ty(8), UA_OPTIONAL),
    A::ptr_in(
        attr::GET_CONTEXT_FD_ARR,
        PtrSpec::min_size(4).alloc_and_copy(),
        UA_OPTIONAL,
    ),
    A::uhw_in(),
    A::uhw_out(),
];
const QUERY_CONTEXT: &[AttrSpec] = &[
    A::ptr_out(
        attr::QUERY_CONTEXT_NUM_COMP_VECTORS,
        PtrSpec::ty(4),
        UA_OPTIONAL,
    ),
    A::ptr_out(
        attr::QUERY_CONTEXT_CORE_SUPPORT,
        PtrSpec::ty(8),
        UA_OPTIONAL,
    ),
];
const QUERY_GID_TABLE: &[AttrSpec] = &[
    A::const_in(attr::QUERY_GID_TABLE_ENTRY_SIZE, UA_MANDATORY),
    A::flags_in(attr::QUERY_GID_TABLE_FLAGS, UA_OPTIONAL),
    A::ptr_out(
        attr::QUERY_GID_TABLE_RESP_ENTRIES,
        PtrSpec::min_size(0),
        UA_MANDATORY,
    ),
    A::ptr_out(
        attr::QUERY_GID_TABLE_RESP_NUM_ENTRIES,
        PtrSpec::ty(8),
        UA_MANDATORY,
    ),
];
const QUERY_GID_ENTRY: &[AttrSpec] = &[
    A::const_in(attr::QUERY_GID_ENTRY_PORT, UA_MANDATORY),
    A::const_in(attr::QUERY_GID_ENTRY_GID_INDEX, UA_MANDATORY),
    A::flags_in(attr::QUERY_GID_ENTRY_FLAGS, UA_MANDATORY),
    // UVERBS_ATTR_STRUCT(struct ib_uverbs_gid_entry, netdev_ifindex)
    A::ptr_out(
        attr::QUERY_GID_ENTRY_RESP_ENTRY,
        PtrSpec::structure(32, sizes::IB_UVERBS_GID_ENTRY),
        UA_MANDATORY,
    ),
];
const DEVICE_METHODS: &[MethodSpec] = &[
    m(method::GET_CONTEXT, GET_CONTEXT, CoreHandler::GetContext),
    m(method::INVOKE_WRITE, INVOKE_WRITE, CoreHandler::InvokeWrite),
    m(method::INFO_HANDLES, INFO_HANDLES, CoreHandler::InfoHandles),
    m(method::QUERY_PORT, QUERY_PORT, CoreHandler::QueryPort),
    m(
        method::QUERY_CONTEXT,
        QUERY_CONTEXT,
        CoreHandler::QueryContext,
    ),
    m(
        method::QUERY_GID_TABLE,
        QUERY_GID_TABLE,
        CoreHandler::QueryGidTable,
    ),
    m(
        method::QUERY_GID_ENTRY,
        QUERY_GID_ENTRY,
        CoreHandler::QueryGidEntry,
    ),
];

// upstream: uverbs_std_types.c (PD), uverbs_std_types_async_fd.c
const PD_DESTROY: &[AttrSpec] = &[A::idr(
    attr::DESTROY_PD_HANDLE,
    obj::PD,
    Access::Destroy,
    UA_MANDATORY,
)];
const XRCD_DESTROY: &[AttrSpec] = &[A::idr(
    attr::DESTROY_XRCD_HANDLE,
    obj::XRCD,
    Access::Destroy,
    UA_MANDATORY,
)];
const ASYNC_EVENT_ALLOC: &[AttrSpec] = &[A::fd(
    attr::ASYNC_EVENT_ALLOC_FD_HANDLE,
    obj::ASYNC_EVENT,
    Access::New,
    UA_MANDATORY,
)];

// upstream: uverbs_std_types_cq.c
const CQ_CREATE: &[AttrSpec] = &[
    A::idr(attr::CREATE_CQ_HANDLE, obj::CQ, Access::New, UA_MANDATORY),
    A::ptr_in(attr::CREATE_CQ_CQE, PtrSpec::ty(4), UA_MANDATORY),
    A::ptr_in(attr::CREATE_CQ_USER_HANDLE, PtrSpec::ty(8), UA_MANDATORY),
    A::fd(
        attr::CREATE_CQ_COMP_CHANNEL,
        obj::COMP_CHANNEL,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::ptr_in(attr::CREATE_CQ_COMP_VECTOR, PtrSpec::ty(4), UA_MANDATORY),
    A::flags_in(attr::CREATE_CQ_FLAGS, UA_OPTIONAL),
    A::ptr_out(attr::CREATE_CQ_RESP_CQE, PtrSpec::ty(4), UA_MANDATORY),
    A::fd(
        attr::CREATE_CQ_EVENT_FD,
        obj::ASYNC_EVENT,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::ptr_in(attr::CREATE_CQ_BUFFER_VA, PtrSpec::ty(8), UA_OPTIONAL),
    A::ptr_in(attr::CREATE_CQ_BUFFER_LENGTH, PtrSpec::ty(8), UA_OPTIONAL),
    A::raw_fd(attr::CREATE_CQ_BUFFER_FD, UA_OPTIONAL),
    A::ptr_in(attr::CREATE_CQ_BUFFER_OFFSET, PtrSpec::ty(8), UA_OPTIONAL),
    A::umem(attr::CREATE_CQ_BUF_UMEM, UA_OPTIONAL),
    A::uhw_in(),
    A::uhw_out(),
];
const CQ_DESTROY: &[AttrSpec] = &[
    A::idr(
        attr::DESTROY_CQ_HANDLE,
        obj::CQ,
        Access::Destroy,
        UA_MANDATORY,
    ),
    A::ptr_out(
        attr::DESTROY_CQ_RESP,
        PtrSpec::ty(sizes::IB_UVERBS_DESTROY_CQ_RESP),
        UA_MANDATORY,
    ),
];

// upstream: uverbs_std_types_qp.c
const QP_CREATE: &[AttrSpec] = &[
    A::idr(attr::CREATE_QP_HANDLE, obj::QP, Access::New, UA_MANDATORY),
    A::idr(
        attr::CREATE_QP_XRCD_HANDLE,
        obj::XRCD,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::idr(
        attr::CREATE_QP_PD_HANDLE,
        obj::PD,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::idr(
        attr::CREATE_QP_SRQ_HANDLE,
        obj::SRQ,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::idr(
        attr::CREATE_QP_SEND_CQ_HANDLE,
        obj::CQ,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::idr(
        attr::CREATE_QP_RECV_CQ_HANDLE,
        obj::CQ,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::idr(
        attr::CREATE_QP_IND_TABLE_HANDLE,
        obj::RWQ_IND_TBL,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::ptr_in(attr::CREATE_QP_USER_HANDLE, PtrSpec::ty(8), UA_MANDATORY),
    A::ptr_in(
        attr::CREATE_QP_CAP,
        PtrSpec::structure(20, sizes::IB_UVERBS_QP_CAP),
        UA_MANDATORY,
    ),
    A::const_in(attr::CREATE_QP_TYPE, UA_MANDATORY),
    A::flags_in(attr::CREATE_QP_FLAGS, UA_OPTIONAL),
    A::ptr_in(attr::CREATE_QP_SOURCE_QPN, PtrSpec::ty(4), UA_OPTIONAL),
    A::fd(
        attr::CREATE_QP_EVENT_FD,
        obj::ASYNC_EVENT,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::ptr_out(
        attr::CREATE_QP_RESP_CAP,
        PtrSpec::structure(20, sizes::IB_UVERBS_QP_CAP),
        UA_MANDATORY,
    ),
    A::ptr_out(attr::CREATE_QP_RESP_QP_NUM, PtrSpec::ty(4), UA_MANDATORY),
    A::umem(attr::CREATE_QP_BUF_UMEM, UA_OPTIONAL),
    A::umem(attr::CREATE_QP_RQ_BUF_UMEM, UA_OPTIONAL),
    A::umem(attr::CREATE_QP_SQ_BUF_UMEM, UA_OPTIONAL),
    A::uhw_in(),
    A::uhw_out(),
];
const QP_DESTROY: &[AttrSpec] = &[
    A::idr(
        attr::DESTROY_QP_HANDLE,
        obj::QP,
        Access::Destroy,
        UA_MANDATORY,
    ),
    A::ptr_out(
        attr::DESTROY_QP_RESP,
        PtrSpec::ty(sizes::IB_UVERBS_DESTROY_QP_RESP),
        UA_MANDATORY,
    ),
];

// upstream: uverbs_std_types_srq.c
const SRQ_CREATE: &[AttrSpec] = &[
    A::idr(attr::CREATE_SRQ_HANDLE, obj::SRQ, Access::New, UA_MANDATORY),
    A::idr(
        attr::CREATE_SRQ_PD_HANDLE,
        obj::PD,
        Access::Read,
        UA_MANDATORY,
    ),
    A::const_in(attr::CREATE_SRQ_TYPE, UA_MANDATORY),
    A::ptr_in(attr::CREATE_SRQ_USER_HANDLE, PtrSpec::ty(8), UA_MANDATORY),
    A::ptr_in(attr::CREATE_SRQ_MAX_WR, PtrSpec::ty(4), UA_MANDATORY),
    A::ptr_in(attr::CREATE_SRQ_MAX_SGE, PtrSpec::ty(4), UA_MANDATORY),
    A::ptr_in(attr::CREATE_SRQ_LIMIT, PtrSpec::ty(4), UA_MANDATORY),
    A::idr(
        attr::CREATE_SRQ_XRCD_HANDLE,
        obj::XRCD,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::idr(
        attr::CREATE_SRQ_CQ_HANDLE,
        obj::CQ,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::ptr_in(attr::CREATE_SRQ_MAX_NUM_TAGS, PtrSpec::ty(4), UA_OPTIONAL),
    A::fd(
        attr::CREATE_SRQ_EVENT_FD,
        obj::ASYNC_EVENT,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::ptr_out(attr::CREATE_SRQ_RESP_MAX_WR, PtrSpec::ty(4), UA_MANDATORY),
    A::ptr_out(attr::CREATE_SRQ_RESP_MAX_SGE, PtrSpec::ty(4), UA_MANDATORY),
    A::ptr_out(attr::CREATE_SRQ_RESP_SRQ_NUM, PtrSpec::ty(4), UA_OPTIONAL),
    A::umem(attr::CREATE_SRQ_BUF_UMEM, UA_OPTIONAL),
    A::uhw_in(),
    A::uhw_out(),
];
const SRQ_DESTROY: &[AttrSpec] = &[
    A::idr(
        attr::DESTROY_SRQ_HANDLE,
        obj::SRQ,
        Access::Destroy,
        UA_MANDATORY,
    ),
    A::ptr_out(attr::DESTROY_SRQ_RESP, PtrSpec::ty(4), UA_MANDATORY),
];

// upstream: uverbs_std_types.c, `UVERBS_METHOD_MW_DESTROY`
const MW_DESTROY: &[AttrSpec] = &[A::idr(
    attr::DESTROY_MW_HANDLE,
    obj::MW,
    Access::Destroy,
    UA_MANDATORY,
)];

// upstream: uverbs_std_types_mr.c
const MR_DESTROY: &[AttrSpec] = &[A::idr(
    attr::DESTROY_MR_HANDLE,
    obj::MR,
    Access::Destroy,
    UA_MANDATORY,
)];
const QUERY_MR: &[AttrSpec] = &[
    A::idr(attr::QUERY_MR_HANDLE, obj::MR, Access::Read, UA_MANDATORY),
    A::ptr_out(attr::QUERY_MR_RESP_RKEY, PtrSpec::ty(4), UA_MANDATORY),
    A::ptr_out(attr::QUERY_MR_RESP_LKEY, PtrSpec::ty(4), UA_MANDATORY),
    A::ptr_out(attr::QUERY_MR_RESP_LENGTH, PtrSpec::ty(8), UA_MANDATORY),
    A::ptr_out(attr::QUERY_MR_RESP_IOVA, PtrSpec::ty(8), UA_OPTIONAL),
];
const REG_MR: &[AttrSpec] = &[
    A::idr(attr::REG_MR_HANDLE, obj::MR, Access::New, UA_MANDATORY),
    A::idr(attr::REG_MR_PD_HANDLE, obj::PD, Access::Read, UA_MANDATORY),
    A::idr(
        attr::REG_MR_DMA_HANDLE,
        obj::DMAH,
        Access::Read,
        UA_OPTIONAL,
    ),
    A::ptr_in(attr::REG_MR_IOVA, PtrSpec::ty(8), UA_MANDATORY),
    A::ptr_in(attr::REG_MR_LENGTH, PtrSpec::ty(8), UA_MANDATORY),
    A::flags_in(attr::REG_MR_ACCESS_FLAGS, UA_MANDATORY),
    A::ptr_in(attr::REG_MR_ADDR, PtrSpec::ty(8), UA_OPTIONAL),
    A::ptr_in(attr::REG_MR_FD_OFFSET, PtrSpec::ty(8), UA_OPTIONAL),
    A::raw_fd(attr::REG_MR_FD, UA_OPTIONAL),
    A::ptr_out(attr::REG_MR_RESP_LKEY, PtrSpec::ty(4), UA_MANDATORY),
    A::ptr_out(attr::REG_MR_RESP_RKEY, PtrSpec::ty(4), UA_MANDATORY),
    A::uhw_in(),
    A::uhw_out(),
];

// upstream: uverbs_std_types_mr.c, `UVERBS_METHOD_DM_MR_REG`
const DM_MR_REG: &[AttrSpec] = &[
    A::idr(attr::REG_DM_MR_HANDLE, obj::MR, Access::New, UA_MANDATORY),
    A::ptr_in(attr::REG_DM_MR_OFFSET, PtrSpec::ty(8), UA_MANDATORY),
    A::ptr_in(attr::REG_DM_MR_LENGTH, PtrSpec::ty(8), UA_MANDATORY),
    A::idr(
        attr::REG_DM_MR_PD_HANDLE,
        obj::PD,
        Access::Read,
        UA_MANDATORY,
    ),
    A::flags_in(attr::REG_DM_MR_ACCESS_FLAGS, UA_MANDATORY),
    A::idr(
        attr::REG_DM_MR_DM_HANDLE,
        obj::DM,
        Access::Read,
        UA_MANDATORY,
    ),
    A::ptr_out(attr::REG_DM_MR_RESP_LKEY, PtrSpec::ty(4), UA_MANDATORY),
    A::ptr_out(attr::REG_DM_MR_RESP_RKEY, PtrSpec::ty(4), UA_MANDATORY),
];

// upstream: uverbs_std_types_dm.c
const DM_ALLOC: &[AttrSpec] = &[
    A::idr(attr::ALLOC_DM_HANDLE, obj::DM, Access::New, UA_MANDATORY),
    A::ptr_in(attr::ALLOC_DM_LENGTH, PtrSpec::ty(8), UA_MANDATORY),
    A::ptr_in(attr::ALLOC_DM_ALIGNMENT, PtrSpec::ty(4), UA_MANDATORY),
];
const DM_FREE: &[AttrSpec] = &[A::idr(
    attr::FREE_DM_HANDLE,
    obj::DM,
    Access::Destroy,
    UA_MANDATORY,
)];

/// The core ioctl objects (upstream `uverbs_core_api` chains of object
/// trees with their `UAPI_DEF_OBJ_NEEDS_FN`).
pub(crate) const CORE_OBJECTS: &[ObjectSpec] = &[
    ObjectSpec {
        id: obj::ASYNC_EVENT,
        type_class: Some(TypeClass::Fd),
        methods: &[m(
            method::ASYNC_EVENT_ALLOC,
            ASYNC_EVENT_ALLOC,
            CoreHandler::AsyncEventAlloc,
        )],
        writes: &[],
        needs: &[],
    },
    ObjectSpec {
        id: obj::CQ,
        type_class: Some(TypeClass::Idr),
        methods: &[
            m(method::CQ_CREATE, CQ_CREATE, CoreHandler::CqCreate),
            m(method::CQ_DESTROY, CQ_DESTROY, CoreHandler::CqDestroy),
        ],
        writes: &[],
        needs: &[DriverOp::DestroyCq],
    },
    ObjectSpec {
        id: obj::DEVICE,
        type_class: None,
        methods: DEVICE_METHODS,
        writes: &[],
        needs: &[],
    },
    ObjectSpec {
        id: obj::MR,
        type_class: Some(TypeClass::Idr),
        methods: &[
            m(method::MR_DESTROY, MR_DESTROY, CoreHandler::DestroyDefault),
            m(method::QUERY_MR, QUERY_MR, CoreHandler::QueryMr),
            m(method::REG_MR, REG_MR, CoreHandler::RegMr),
            // No NEEDS_FN upstream: the handler answers EOPNOTSUPP without `reg_dm_mr`; the
            // method goes with the DM object (its DM attribute names a disabled type).
            m(method::DM_MR_REG, DM_MR_REG, CoreHandler::DmMrReg),
        ],
        writes: &[],
        needs: &[DriverOp::DeregMr],
    },
    ObjectSpec {
        id: obj::QP,
        type_class: Some(TypeClass::Idr),
        methods: &[
            m(method::QP_CREATE, QP_CREATE, CoreHandler::QpCreate),
            m(method::QP_DESTROY, QP_DESTROY, CoreHandler::QpDestroy),
        ],
        writes: &[],
        needs: &[DriverOp::DestroyQp],
    },
    ObjectSpec {
        id: obj::SRQ,
        type_class: Some(TypeClass::Idr),
        methods: &[
            m(method::SRQ_CREATE, SRQ_CREATE, CoreHandler::SrqCreate),
            m(method::SRQ_DESTROY, SRQ_DESTROY, CoreHandler::SrqDestroy),
        ],
        writes: &[],
        needs: &[DriverOp::DestroySrq],
    },
    // upstream: uverbs_std_types.c, `UVERBS_OBJECT_XRCD` with UVERBS_METHOD_XRCD_DESTROY
    // (libibverbs 44's ibv_cmd_close_xrcd() tries it first).
    ObjectSpec {
        id: obj::XRCD,
        type_class: Some(TypeClass::Idr),
        methods: &[m(
            method::XRCD_DESTROY,
            XRCD_DESTROY,
            CoreHandler::DestroyDefault,
        )],
        writes: &[],
        needs: &[DriverOp::AllocXrcd, DriverOp::DeallocXrcd],
    },
    // upstream: uverbs_def_obj_intf
    ObjectSpec {
        id: obj::PD,
        type_class: Some(TypeClass::Idr),
        methods: &[m(
            method::PD_DESTROY,
            PD_DESTROY,
            CoreHandler::DestroyDefault,
        )],
        writes: &[],
        needs: &[DriverOp::DeallocPd],
    },
    // upstream: uverbs_std_types.c, `UVERBS_OBJECT_AH` (no ioctl methods: libibverbs creates
    // and destroys AHs with write commands).
    ObjectSpec {
        id: obj::AH,
        type_class: Some(TypeClass::Idr),
        methods: &[],
        writes: &[],
        needs: &[DriverOp::DestroyAh],
    },
    // upstream: uverbs_std_types.c, `UVERBS_OBJECT_MW` (libibverbs 44 frees a window with
    // MW_DESTROY and falls back to DEALLOC_MW; it allocates with the write command only).
    ObjectSpec {
        id: obj::MW,
        type_class: Some(TypeClass::Idr),
        methods: &[m(
            method::MW_DESTROY,
            MW_DESTROY,
            CoreHandler::DestroyDefault,
        )],
        writes: &[],
        needs: &[DriverOp::DeallocMw],
    },
    // upstream: uverbs_std_types_dm.c, `uverbs_def_obj_dm` (UAPI_DEF_OBJ_NEEDS_FN(dealloc_dm));
    // the handler answers EOPNOTSUPP without `alloc_dm`.
    ObjectSpec {
        id: obj::DM,
        type_class: Some(TypeClass::Idr),
        methods: &[
            m(method::DM_ALLOC, DM_ALLOC, CoreHandler::DmAlloc),
            m(method::DM_FREE, DM_FREE, CoreHandler::DestroyDefault),
        ],
        writes: &[],
        needs: &[DriverOp::DeallocDm],
    },
    ObjectSpec {
        id: obj::COMP_CHANNEL,
        type_class: Some(TypeClass::Fd),
        methods: &[],
        writes: &[],
        // Upstream's own (odd) condition for COMP_CHANNEL.
        needs: &[DriverOp::DeallocPd],
    },
];

use DriverOp as Op;
use WriteCmdSpec as W;

/// The write commands (upstream `uverbs_def_write_intf`, the objects this
/// project implements). Sizes: `sizeof(struct ib_uverbs_<cmd>)` and
/// `sizeof(struct ib_uverbs_<cmd>_resp)`; for `_EX`, `offsetofend()` of the
/// last mandatory member.
pub(crate) const WRITE_OBJECTS: &[ObjectSpec] = &[
    ObjectSpec {
        id: obj::AH,
        type_class: None,
        methods: &[],
        writes: &[
            W::udata_io(cmd::CREATE_AH, 56, 4, &[Op::CreateUserAh]),
            W::i(cmd::DESTROY_AH, 4, &[Op::DestroyAh]),
        ],
        needs: &[Op::CreateUserAh, Op::DestroyAh],
    },
    ObjectSpec {
        id: obj::COMP_CHANNEL,
        type_class: None,
        methods: &[],
        writes: &[W::io(cmd::CREATE_COMP_CHANNEL, 8, 4, &[])],
        needs: &[],
    },
    ObjectSpec {
        id: obj::CQ,
        type_class: None,
        methods: &[],
        writes: &[
            W::udata_io(cmd::CREATE_CQ, 32, 8, &[Op::CreateCq]),
            W::io(cmd::DESTROY_CQ, 16, 8, &[Op::DestroyCq]),
            W::io(cmd::POLL_CQ, 16, 8, &[Op::PollCq]),
            W::i(cmd::REQ_NOTIFY_CQ, 8, &[Op::ReqNotifyCq]),
            W::udata_io(cmd::RESIZE_CQ, 16, 8, &[Op::ResizeUserCq]),
            W::ex(cmd::EX_CREATE_CQ, 32, 16, &[Op::CreateCq]),
            W::ex(cmd::EX_MODIFY_CQ, 16, 0, &[Op::ModifyCq]),
        ],
        needs: &[],
    },
    ObjectSpec {
        id: obj::DEVICE,
        type_class: None,
        methods: &[],
        writes: &[
            W::udata_io(cmd::GET_CONTEXT, 8, 8, &[]),
            W::io(cmd::QUERY_DEVICE, 8, 176, &[]),
            W::io(cmd::QUERY_PORT, 16, 40, &[Op::QueryPort]),
            W::ex(cmd::EX_QUERY_DEVICE, 8, 184, &[Op::QueryDevice]),
        ],
        needs: &[Op::AllocUcontext, Op::DeallocUcontext],
    },
    ObjectSpec {
        id: obj::MR,
        type_class: None,
        methods: &[],
        writes: &[
            W::i(cmd::DEREG_MR, 4, &[Op::DeregMr]),
            W::udata_io(cmd::REG_MR, 40, 12, &[Op::RegUserMr]),
            W::udata_io(cmd::REREG_MR, 48, 8, &[Op::ReregUserMr]),
        ],
        needs: &[],
    },
    // upstream: uverbs_cmd.c, `UVERBS_OBJECT_XRCD`'s write commands, with
    // UAPI_DEF_OBJ_NEEDS_FN(alloc_xrcd) and (dealloc_xrcd).
    ObjectSpec {
        id: obj::XRCD,
        type_class: None,
        methods: &[],
        writes: &[
            W::i(cmd::CLOSE_XRCD, 4, &[]),
            W::udata_io(cmd::OPEN_QP, 32, 32, &[]),
            W::udata_io(cmd::OPEN_XRCD, 16, 4, &[]),
        ],
        needs: &[Op::AllocXrcd, Op::DeallocXrcd],
    },
    ObjectSpec {
        id: obj::MW,
        type_class: None,
        methods: &[],
        writes: &[
            W::udata_io(cmd::ALLOC_MW, 16, 8, &[Op::AllocMw]),
            W::i(cmd::DEALLOC_MW, 4, &[Op::DeallocMw]),
        ],
        needs: &[],
    },
    ObjectSpec {
        id: obj::PD,
        type_class: None,
        methods: &[],
        writes: &[
            W::udata_io(cmd::ALLOC_PD, 8, 4, &[Op::AllocPd]),
            W::i(cmd::DEALLOC_PD, 4, &[Op::DeallocPd]),
        ],
        needs: &[],
    },
    ObjectSpec {
        id: obj::QP,
        type_class: None,
        methods: &[],
        writes: &[
            W::udata_io(cmd::CREATE_QP, 56, 32, &[Op::CreateQp]),
            W::io(cmd::DESTROY_QP, 16, 4, &[Op::DestroyQp]),
            W::i(cmd::MODIFY_QP, 112, &[Op::ModifyQp]),
            W::i(cmd::ATTACH_MCAST, 24, &[Op::AttachMcast]),
            W::i(cmd::DETACH_MCAST, 24, &[Op::DetachMcast]),
            W::io(cmd::POST_RECV, 24, 4, &[Op::PostRecv]),
            W::io(cmd::POST_SEND, 24, 4, &[Op::PostSend]),
            W::io(cmd::QUERY_QP, 16, 128, &[Op::QueryQp]),
            W::ex(cmd::EX_CREATE_QP, 52, 40, &[Op::CreateQp]),
            W::ex(cmd::EX_MODIFY_QP, 112, 8, &[Op::ModifyQp]),
        ],
        needs: &[],
    },
    // upstream: uverbs_cmd.c, `UVERBS_OBJECT_SRQ`'s write commands (no POST_SRQ_RECV:
    // libmlx5 posts to the SRQ's memory).
    ObjectSpec {
        id: obj::SRQ,
        type_class: None,
        methods: &[],
        writes: &[
            W::udata_io(cmd::CREATE_SRQ, 32, 16, &[Op::CreateSrq]),
            W::udata_io(cmd::CREATE_XSRQ, 48, 16, &[Op::CreateSrq]),
            W::io(cmd::DESTROY_SRQ, 16, 4, &[Op::DestroySrq]),
            W::udata_i(cmd::MODIFY_SRQ, 16, &[Op::ModifySrq]),
            W::io(cmd::POST_SRQ_RECV, 24, 4, &[Op::PostSrqRecv]),
            W::io(cmd::QUERY_SRQ, 16, 16, &[Op::QuerySrq]),
        ],
        needs: &[],
    },
];

/// The core tables in merge order (upstream `uverbs_core_api`).
pub(crate) const CORE_API: &[&[ObjectSpec]] = &[CORE_OBJECTS, WRITE_OBJECTS];

/// upstream: the default `ib_device.uverbs_cmd_mask` set in
/// `_ib_alloc_device()`. POLL_CQ, REQ_NOTIFY_CQ, POST_SEND, POST_RECV and
/// POST_SRQ_RECV are not in it: a driver that wants them adds them.
pub(crate) const DEFAULT_UVERBS_CMD_MASK: u64 = {
    let cmds = [
        cmd::ALLOC_MW,
        cmd::ALLOC_PD,
        cmd::ATTACH_MCAST,
        cmd::CLOSE_XRCD,
        cmd::CREATE_AH,
        cmd::CREATE_COMP_CHANNEL,
        cmd::CREATE_CQ,
        cmd::CREATE_QP,
        cmd::CREATE_SRQ,
        cmd::CREATE_XSRQ,
        cmd::DEALLOC_MW,
        cmd::DEALLOC_PD,
        cmd::DEREG_MR,
        cmd::DESTROY_AH,
        cmd::DESTROY_CQ,
        cmd::DESTROY_QP,
        cmd::DESTROY_SRQ,
        cmd::DETACH_MCAST,
        cmd::GET_CONTEXT,
        cmd::MODIFY_QP,
        cmd::MODIFY_SRQ,
        cmd::OPEN_QP,
        cmd::OPEN_XRCD,
        cmd::QUERY_DEVICE,
        cmd::QUERY_PORT,
        cmd::QUERY_QP,
        cmd::QUERY_SRQ,
        cmd::REG_MR,
        cmd::REREG_MR,
        cmd::RESIZE_CQ,
    ];
    let mut mask = 0u64;
    let mut i = 0;
    while i < cmds.len() {
        mask |= 1u64 << cmds[i];
        i += 1;
    }
    mask
};
