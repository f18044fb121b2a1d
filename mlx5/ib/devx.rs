// SPDX-License-Identifier: GPL-2.0

//! DEVX: firmware commands from user space (upstream `drivers/infiniband/hw/mlx5/devx.c`,
//! uapi `mlx5_user_ioctl_cmds.h`; libmlx5's `mlx5dv_devx_*`).
//!
//! A user context opened with `MLX5_IB_ALLOC_UCTX_DEVX` owns a firmware user context (CREATE_UCTX,
//! [`crate::ib::ucontext`]) whose uid the kernel stamps into every command the context sends. The
//! firmware checks each object a command names against that uid (the simulator too,
//! `Documentation/fwsim.md`), so one context cannot touch another's objects; the kernel's part
//! is the allow-lists below, the object bookkeeping (each created object keeps the command that
//! destroys it) and the cleanup at close.
//!
//! Objects and methods (upstream ids):
//! * `MLX5_IB_OBJECT_DEVX` (global): `DEVX_OTHER` (a general command from
//!   [`is_general_cmd`]), `DEVX_QUERY_EQN` (the EQ of a completion vector), `DEVX_QUERY_UAR`
//!   (`EINVAL`: it translates static bfregs, and contexts here have dynamic UARs only, as
//!   upstream's `bfregn_to_uar_index()` answers for `lib_uar_dyn`).
//! * `MLX5_IB_OBJECT_DEVX_OBJ`: `OBJ_CREATE` (a command of [`is_obj_create_cmd`]; the object
//!   keeps its destroy command, [`build_destroy_cmd`]), `OBJ_DESTROY`, `OBJ_MODIFY` and
//!   `OBJ_QUERY` (commands of [`is_obj_modify_cmd`] / [`is_obj_query_cmd`] whose object id
//!   is the handle's object: a DEVX object, or a CQ, QP or SRQ created through verbs).
//! * `MLX5_IB_OBJECT_DEVX_UMEM`: `UMEM_REG` (pins the memory, CREATE_UMEM with one MTT entry
//!   per page: bus addresses), `UMEM_DEREG`.
//!
//! Errnos as upstream: a command a list does not allow, a `vhca_tunnel_id`, an object id that
//! is not the handle's: `EINVAL`; any method of a context without a DEVX uid: `EINVAL`
//! (`devx_get_uid()`; the whitelisted queries, which upstream runs with the device's whitelist
//! uid: `EOPNOTSUPP`, there is none here); a command the firmware refuses: `EREMOTEIO` with the
//! outbox (status, syndrome) copied to the user. A destroy the firmware refuses (an object in
//! use: `RES_BUSY`) returns `EBUSY` and keeps the object.
//!
//! * `MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD` (an fd object: `ASYNC_CMD_FD_ALLOC`, [`DevxCmdFd`])
//!   and `OBJ_ASYNC_QUERY` (the query runs in the method; its result reaches the user only
//!   through a read of the fd, as upstream's `mlx5_cmd_exec_cb()` completion).
//! * `MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD` (`ASYNC_EVENT_FD_ALLOC`) and `SUBSCRIBE_EVENT`:
//!   [`crate::ib::devx_events`].
//!
//! Not done: DMA-buf umems, creates whose destroy needs more than the object id (flow tables,
//! groups, entries, scheduling elements, VXLAN ports, L2 entries, multicast attach:
//! `EOPNOTSUPP`), the whitelist uid, indirect mkeys with ODP and unaffiliated events (accepted,
//! never produced). On the mlx5_core backend a DEVX CREATE_CQ goes through `mlx5_create_cq()`
//! as every CREATE_CQ there (`crate::corehw`), so its completion events reach the channels as
//! upstream's `devx_cq_comp()` (`devx_test` on the emulated function).

use crate::hw::Mlx5Hw;
use crate::ib::device::Mlx5Ib;
use crate::ib::devx_events::{self, poll_mask, wait_queued, ChannelQueue, DevxEventFd};
use crate::ib::events::EventTable;
use crate::ib::ucontext::Mlx5Ucontext;
use crate::ib::user_mem::UserBuf;
use crate::prm::cmd::{create_mkey_in, create_umem_in, general_obj_in_cmd_hdr as hdr, mbox_in};
use crate::prm::ctx::{cqc, mkc, qpc, umem as umemc};
use crate::prm::devx_ops as op;
use crate::prm::layout::Field;
use ib_core_rs::uverbs::driver_api::{
    Access, AnyObject, AttrSpec, DriverCall, DriverFdOps, DriverUobject, MethodSpec, ObjectSpec,
    PtrSpec, RemoveReason, UA_MANDATORY, UA_OPTIONAL,
};
use ib_core_rs::verbs::{AccessFlags, Ucontext};
use kernel::fs::File;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::poll::PollTable;
use kernel::sync::Arc;
use kernel::uaccess::UserSliceWriter;

crate::ib::device::driver_ids! {
    /// `MLX5_IB_OBJECT_DEVX`, `_DEVX_OBJ`, `_DEVX_UMEM` (`enum mlx5_ib_objects`).
    OBJECT_DEVX, OBJECT_DEVX_OBJ, OBJECT_DEVX_UMEM;
    /// `MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD`, `_DEVX_ASYNC_EVENT_FD` (the same enum, after
    /// `MLX5_IB_OBJECT_FLOW_MATCHER`).
    OBJECT_DEVX_ASYNC_CMD_FD = crate::ib::device::DRIVER_NS + 4, OBJECT_DEVX_ASYNC_EVENT_FD;
    /// `enum mlx5_ib_devx_methods`.
    METHOD_OTHER, METHOD_QUERY_UAR, METHOD_QUERY_EQN, METHOD_SUBSCRIBE_EVENT;
    /// `enum mlx5_ib_devx_obj_methods`.
    METHOD_OBJ_CREATE, METHOD_OBJ_DESTROY, METHOD_OBJ_MODIFY, METHOD_OBJ_QUERY,
        METHOD_OBJ_ASYNC_QUERY;
    /// `MLX5_IB_METHOD_DEVX_ASYNC_CMD_FD_ALLOC`.
    METHOD_ASYNC_CMD_FD_ALLOC;
    /// `MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC`.
    METHOD_ASYNC_EVENT_FD_ALLOC;
    /// `enum mlx5_ib_devx_umem_methods`.
    METHOD_UMEM_REG, METHOD_UMEM_DEREG;
    /// `MLX5_IB_ATTR_DEVX_OTHER_CMD_IN/OUT`.
    ATTR_OTHER_CMD_IN, ATTR_OTHER_CMD_OUT;
    /// `MLX5_IB_ATTR_DEVX_OBJ_CREATE_HANDLE/CMD_IN/CMD_OUT` (and MODIFY, QUERY alike),
    /// `_OBJ_DESTROY_HANDLE`.
    ATTR_OBJ_HANDLE, ATTR_OBJ_CMD_IN, ATTR_OBJ_CMD_OUT;
    /// `MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC/DEV_EQN`, `_QUERY_UAR_USER_IDX/DEV_IDX`.
    ATTR_QUERY_IN, ATTR_QUERY_OUT;
    /// `enum mlx5_ib_devx_umem_reg_attrs`.
    ATTR_UMEM_HANDLE, ATTR_UMEM_ADDR, ATTR_UMEM_LEN, ATTR_UMEM_ACCESS, ATTR_UMEM_OUT_ID,
        ATTR_UMEM_PGSZ_BITMAP;
    /// `enum mlx5_ib_devx_obj_query_async_attrs`.
    ATTR_AQ_HANDLE, ATTR_AQ_CMD_IN, ATTR_AQ_FD, ATTR_AQ_WR_ID, ATTR_AQ_OUT_LEN;
    /// `MLX5_IB_ATTR_DEVX_ASYNC_CMD_FD_ALLOC_HANDLE`, `_ASYNC_EVENT_FD_ALLOC_HANDLE/_FLAGS`
    /// (the event fd's handle is the same id).
    ATTR_FD_ALLOC_HANDLE, ATTR_EVENT_FD_ALLOC_FLAGS;
    /// `enum mlx5_ib_devx_subscribe_event_attrs`.
    ATTR_SUB_FD_HANDLE, ATTR_SUB_OBJ_HANDLE, ATTR_SUB_TYPE_NUM_LIST, ATTR_SUB_FD_NUM,
        ATTR_SUB_COOKIE;
}
/// `UVERBS_IDR_ANY_OBJECT`.
const ANY_OBJECT: u16 = 0xffff;

/// The driver method numbers of this file (`crate::ib::uar` has 1).
const H_OTHER: u16 = 10;
const H_QUERY_UAR: u16 = 11;
const H_QUERY_EQN: u16 = 12;
const H_OBJ_CREATE: u16 = 13;
const H_OBJ_MODIFY: u16 = 14;
const H_OBJ_QUERY: u16 = 15;
const H_UMEM_REG: u16 = 16;
const H_OBJ_ASYNC_QUERY: u16 = 17;
const H_ASYNC_CMD_FD_ALLOC: u16 = 18;
const H_ASYNC_EVENT_FD_ALLOC: u16 = 19;
const H_SUBSCRIBE_EVENT: u16 = 20;

/// `MLX5_ST_SZ_BYTES(general_obj_in_cmd_hdr)` / `_out_cmd_hdr`: the shortest mailboxes.
const HDR: u16 = 16;

const CMD_ATTRS: [AttrSpec; 2] = [
    AttrSpec::ptr_in(ATTR_OBJ_CMD_IN, PtrSpec::min_size(HDR), UA_MANDATORY),
    AttrSpec::ptr_out(ATTR_OBJ_CMD_OUT, PtrSpec::min_size(HDR), UA_MANDATORY),
];

const OTHER_ATTRS: &[AttrSpec] = &[
    AttrSpec::ptr_in(ATTR_OTHER_CMD_IN, PtrSpec::min_size(HDR), UA_MANDATORY),
    AttrSpec::ptr_out(ATTR_OTHER_CMD_OUT, PtrSpec::min_size(HDR), UA_MANDATORY),
];
const QUERY_ATTRS: &[AttrSpec] = &[
    AttrSpec::ptr_in(ATTR_QUERY_IN, PtrSpec::ty(4), UA_MANDATORY),
    AttrSpec::ptr_out(ATTR_QUERY_OUT, PtrSpec::ty(4), UA_MANDATORY),
];
const OBJ_CREATE_ATTRS: &[AttrSpec] = &[
    AttrSpec::idr(ATTR_OBJ_HANDLE, OBJECT_DEVX_OBJ, Access::New, UA_MANDATORY),
    CMD_ATTRS[0],
    CMD_ATTRS[1],
];
const OBJ_DESTROY_ATTRS: &[AttrSpec] = &[AttrSpec::idr(
    ATTR_OBJ_HANDLE,
    OBJECT_DEVX_OBJ,
    Access::Destroy,
    UA_MANDATORY,
)];
const OBJ_USE_ATTRS: &[AttrSpec] = &[
    AttrSpec::idr(ATTR_OBJ_HANDLE, ANY_OBJECT, Access::Read, UA_MANDATORY),
    CMD_ATTRS[0],
    CMD_ATTRS[1],
];
const UMEM_REG_ATTRS: &[AttrSpec] = &[
    AttrSpec::idr(
        ATTR_UMEM_HANDLE,
        OBJECT_DEVX_UMEM,
        Access::New,
        UA_MANDATORY,
    ),
    AttrSpec::ptr_in(ATTR_UMEM_ADDR, PtrSpec::ty(8), UA_MANDATORY),
    AttrSpec::ptr_in(ATTR_UMEM_LEN, PtrSpec::ty(8), UA_MANDATORY),
    AttrSpec::flags_in(ATTR_UMEM_ACCESS, UA_OPTIONAL),
    AttrSpec::const_in(ATTR_UMEM_PGSZ_BITMAP, UA_OPTIONAL),
    AttrSpec::ptr_out(ATTR_UMEM_OUT_ID, PtrSpec::ty(4), UA_MANDATORY),
];
const UMEM_DEREG_ATTRS: &[AttrSpec] = &[AttrSpec::idr(
    ATTR_UMEM_HANDLE,
    OBJECT_DEVX_UMEM,
    Access::Destroy,
    UA_MANDATORY,
)];

const OBJ_ASYNC_QUERY_ATTRS: &[AttrSpec] = &[
    AttrSpec::idr(ATTR_AQ_HANDLE, ANY_OBJECT, Access::Read, UA_MANDATORY),
    AttrSpec::ptr_in(ATTR_AQ_CMD_IN, PtrSpec::min_size(HDR), UA_MANDATORY),
    AttrSpec::const_in(ATTR_AQ_OUT_LEN, UA_MANDATORY),
    AttrSpec::fd(
        ATTR_AQ_FD,
        OBJECT_DEVX_ASYNC_CMD_FD,
        Access::Read,
        UA_MANDATORY,
    ),
    AttrSpec::ptr_in(ATTR_AQ_WR_ID, PtrSpec::ty(8), UA_MANDATORY),
];
const SUBSCRIBE_EVENT_ATTRS: &[AttrSpec] = &[
    AttrSpec::fd(
        ATTR_SUB_FD_HANDLE,
        OBJECT_DEVX_ASYNC_EVENT_FD,
        Access::Read,
        UA_MANDATORY,
    ),
    AttrSpec::idr(
        ATTR_SUB_OBJ_HANDLE,
        OBJECT_DEVX_OBJ,
        Access::Read,
        UA_OPTIONAL,
    ),
    AttrSpec::ptr_in(ATTR_SUB_TYPE_NUM_LIST, PtrSpec::min_size(2), UA_MANDATORY),
    AttrSpec::ptr_in(ATTR_SUB_COOKIE, PtrSpec::ty(8), UA_OPTIONAL),
    AttrSpec::ptr_in(ATTR_SUB_FD_NUM, PtrSpec::ty(4), UA_OPTIONAL),
];
const ASYNC_CMD_FD_ALLOC_ATTRS: &[AttrSpec] = &[AttrSpec::fd(
    ATTR_FD_ALLOC_HANDLE,
    OBJECT_DEVX_ASYNC_CMD_FD,
    Access::New,
    UA_MANDATORY,
)];
const ASYNC_EVENT_FD_ALLOC_ATTRS: &[AttrSpec] = &[
    AttrSpec::fd(
        ATTR_FD_ALLOC_HANDLE,
        OBJECT_DEVX_ASYNC_EVENT_FD,
        Access::New,
        UA_MANDATORY,
    ),
    AttrSpec::flags_in(ATTR_EVENT_FD_ALLOC_FLAGS, UA_MANDATORY),
];

const DEVX_METHODS: &[MethodSpec] = &[
    MethodSpec::driver(METHOD_OTHER, OTHER_ATTRS, H_OTHER),
    MethodSpec::driver(METHOD_QUERY_UAR, QUERY_ATTRS, H_QUERY_UAR),
    MethodSpec::driver(METHOD_QUERY_EQN, QUERY_ATTRS, H_QUERY_EQN),
    MethodSpec::driver(
        METHOD_SUBSCRIBE_EVENT,
        SUBSCRIBE_EVENT_ATTRS,
        H_SUBSCRIBE_EVENT,
    ),
];
const OBJ_METHODS: &[MethodSpec] = &[
    MethodSpec::driver(METHOD_OBJ_CREATE, OBJ_CREATE_ATTRS, H_OBJ_CREATE),
    MethodSpec::destroy(METHOD_OBJ_DESTROY, OBJ_DESTROY_ATTRS),
    MethodSpec::driver(METHOD_OBJ_MODIFY, OBJ_USE_ATTRS, H_OBJ_MODIFY),
    MethodSpec::driver(METHOD_OBJ_QUERY, OBJ_USE_ATTRS, H_OBJ_QUERY),
    MethodSpec::driver(
        METHOD_OBJ_ASYNC_QUERY,
        OBJ_ASYNC_QUERY_ATTRS,
        H_OBJ_ASYNC_QUERY,
    ),
];
const ASYNC_CMD_FD_METHODS: &[MethodSpec] = &[MethodSpec::driver(
    METHOD_ASYNC_CMD_FD_ALLOC,
    ASYNC_CMD_FD_ALLOC_ATTRS,
    H_ASYNC_CMD_FD_ALLOC,
)];
const ASYNC_EVENT_FD_METHODS: &[MethodSpec] = &[MethodSpec::driver(
    METHOD_ASYNC_EVENT_FD_ALLOC,
    ASYNC_EVENT_FD_ALLOC_ATTRS,
    H_ASYNC_EVENT_FD_ALLOC,
)];
const UMEM_METHODS: &[MethodSpec] = &[
    MethodSpec::driver(METHOD_UMEM_REG, UMEM_REG_ATTRS, H_UMEM_REG),
    MethodSpec::destroy(METHOD_UMEM_DEREG, UMEM_DEREG_ATTRS),
];

/// upstream `mlx5_ib_devx_defs`: the three DEVX objects.
pub(crate) const DEVX_OBJECT: ObjectSpec = ObjectSpec::driver_global(OBJECT_DEVX, DEVX_METHODS);
pub(crate) const DEVX_OBJ_OBJECT: ObjectSpec = ObjectSpec::driver_idr(OBJECT_DEVX_OBJ, OBJ_METHODS);
pub(crate) const DEVX_UMEM_OBJECT: ObjectSpec =
    ObjectSpec::driver_idr(OBJECT_DEVX_UMEM, UMEM_METHODS);
/// upstream `MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD`, `_ASYNC_EVENT_FD` (`UVERBS_TYPE_ALLOC_FD`).
pub(crate) const DEVX_ASYNC_CMD_FD_OBJECT: ObjectSpec =
    ObjectSpec::driver_fd(OBJECT_DEVX_ASYNC_CMD_FD, ASYNC_CMD_FD_METHODS);
pub(crate) const DEVX_ASYNC_EVENT_FD_OBJECT: ObjectSpec =
    ObjectSpec::driver_fd(OBJECT_DEVX_ASYNC_EVENT_FD, ASYNC_EVENT_FD_METHODS);

/// Whether `handler` is one of this file's methods.
pub(crate) fn owns(handler: u16) -> bool {
    (H_OTHER..=H_SUBSCRIBE_EVENT).contains(&handler)
}

/// Runs one of this file's methods.
///
/// # Errors
///
/// As each method.
pub(crate) fn uverbs_method(handler: u16, call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    match handler {
        H_OTHER => other(call),
        H_QUERY_UAR => query_uar(call),
        H_QUERY_EQN => query_eqn(call),
        H_OBJ_CREATE => obj_create(call),
        H_OBJ_MODIFY => obj_use(call, true),
        H_OBJ_QUERY => obj_use(call, false),
        H_UMEM_REG => umem_reg(call),
        H_OBJ_ASYNC_QUERY => obj_async_query(call),
        H_ASYNC_CMD_FD_ALLOC => async_cmd_fd_alloc(call),
        H_ASYNC_EVENT_FD_ALLOC => async_event_fd_alloc(call),
        H_SUBSCRIBE_EVENT => subscribe_event(call),
        _ => Err(EINVAL),
    }
}

// ---- The command header and the allow-lists ----

/// A member of a user's command; 0 past its end (the spec guarantees the 16-byte header).
fn get(cmd: &[u8], f: Field) -> u32 {
    f.get(cmd).unwrap_or(0)
}

fn set(cmd: &mut [u8], f: Field, v: u32) -> Result {
    f.set(cmd, v).map_err(|_| EINVAL)
}

/// A member at bit `off`, `width` bits wide (the id fields of the many commands DEVX names
/// that the PRM table does not declare: mlx5_ifc.h's offsets, see `devx_ops.rs`).
const fn at(off: u32, width: u32) -> Field {
    Field::new("devx", off, width)
}

/// The 24-bit object number most `*_in`/`*_out` layouts keep at bit 0x48.
const ID24: Field = at(0x48, 0x18);
/// The 32-bit id of general objects, flow counters, reformat and modify-header contexts.
const ID32: Field = at(0x40, 0x20);

fn opcode(cmd: &[u8]) -> u16 {
    get(cmd, hdr::opcode.field()) as u16
}

/// upstream `devx_is_general_cmd()` (`vhca_tunnel_commands` is not a capability here).
pub(crate) fn is_general_cmd(cmd: &[u8]) -> bool {
    let o = opcode(cmd);
    (op::GENERAL_START..op::GENERAL_END).contains(&o)
        || matches!(
            o,
            op::QUERY_HCA_CAP
                | op::QUERY_HCA_VPORT_CONTEXT
                | op::QUERY_ESW_VPORT_CONTEXT
                | op::QUERY_VPORT_STATE
                | op::QUERY_ADAPTER
                | op::QUERY_ISSI
                | op::QUERY_NIC_VPORT_CONTEXT
                | op::QUERY_ROCE_ADDRESS
                | op::QUERY_VNIC_ENV
                | op::QUERY_VPORT_COUNTER
                | op::GET_DROPPED_PACKET_LOG
                | op::NOP
                | op::QUERY_CONG_STATUS
                | op::QUERY_CONG_PARAMS
                | op::QUERY_CONG_STATISTICS
                | op::QUERY_LAG
                | op::QUERY_ESW_FUNCTIONS
        )
}

/// upstream `devx_is_obj_create_cmd()`.
pub(crate) fn is_obj_create_cmd(cmd: &[u8]) -> bool {
    match opcode(cmd) {
        op::CREATE_GENERAL_OBJECT
        | op::CREATE_MKEY
        | op::CREATE_CQ
        | op::ALLOC_PD
        | op::ALLOC_TRANSPORT_DOMAIN
        | op::CREATE_RMP
        | op::CREATE_SQ
        | op::CREATE_RQ
        | op::CREATE_RQT
        | op::CREATE_TIR
        | op::CREATE_TIS
        | op::ALLOC_Q_COUNTER
        | op::CREATE_FLOW_TABLE
        | op::CREATE_FLOW_GROUP
        | op::ALLOC_FLOW_COUNTER
        | op::ALLOC_PACKET_REFORMAT_CONTEXT
        | op::ALLOC_MODIFY_HEADER_CONTEXT
        | op::CREATE_SCHEDULING_ELEMENT
        | op::ADD_VXLAN_UDP_DPORT
        | op::SET_L2_TABLE_ENTRY
        | op::CREATE_QP
        | op::CREATE_SRQ
        | op::CREATE_XRC_SRQ
        | op::CREATE_DCT
        | op::CREATE_XRQ
        | op::ATTACH_TO_MCG
        | op::ALLOC_XRCD => true,
        // set_fte_in.op_mod 0 (create), create_psv_in.num_psv 1.
        op::SET_FLOW_TABLE_ENTRY => get(cmd, mbox_in::op_mod.field()) == 0,
        op::CREATE_PSV => get(cmd, at(0x40, 0x4)) == 1,
        _ => false,
    }
}

/// upstream `devx_is_obj_modify_cmd()`.
pub(crate) fn is_obj_modify_cmd(cmd: &[u8]) -> bool {
    match opcode(cmd) {
        op::MODIFY_GENERAL_OBJECT
        | op::MODIFY_CQ
        | op::MODIFY_RMP
        | op::MODIFY_SQ
        | op::MODIFY_RQ
        | op::MODIFY_RQT
        | op::MODIFY_TIR
        | op::MODIFY_TIS
        | op::MODIFY_FLOW_TABLE
        | op::MODIFY_SCHEDULING_ELEMENT
        | op::ADD_VXLAN_UDP_DPORT
        | op::SET_L2_TABLE_ENTRY
        | op::RST2INIT_QP
        | op::INIT2RTR_QP
        | op::INIT2INIT_QP
        | op::RTR2RTS_QP
        | op::RTS2RTS_QP
        | op::SQERR2RTS_QP
        | op::_2ERR_QP
        | op::_2RST_QP
        | op::ARM_XRC_SRQ
        | op::ARM_RQ
        | op::ARM_DCT_FOR_KEY_VIOLATION
        | op::ARM_XRQ
        | op::SET_XRQ_DC_PARAMS_ENTRY
        | op::RELEASE_XRQ_ERROR
        | op::MODIFY_XRQ => true,
        // set_fte_in.op_mod 1 (modify).
        op::SET_FLOW_TABLE_ENTRY => get(cmd, mbox_in::op_mod.field()) == 1,
        _ => false,
    }
}

/// upstream `devx_is_obj_query_cmd()`.
pub(crate) fn is_obj_query_cmd(cmd: &[u8]) -> bool {
    matches!(
        opcode(cmd),
        op::QUERY_GENERAL_OBJECT
            | op::QUERY_MKEY
            | op::QUERY_CQ
            | op::QUERY_RMP
            | op::QUERY_SQ
            | op::QUERY_RQ
            | op::QUERY_RQT
            | op::QUERY_TIR
            | op::QUERY_TIS
            | op::QUERY_Q_COUNTER
            | op::QUERY_FLOW_TABLE
            | op::QUERY_FLOW_GROUP
            | op::QUERY_FLOW_TABLE_ENTRY
            | op::QUERY_FLOW_COUNTER
            | op::QUERY_MODIFY_HEADER_CONTEXT
            | op::QUERY_SCHEDULING_ELEMENT
            | op::QUERY_L2_TABLE_ENTRY
            | op::QUERY_QP
            | op::QUERY_SRQ
            | op::QUERY_XRC_SRQ
            | op::QUERY_DCT
            | op::QUERY_XRQ
            | op::QUERY_XRQ_DC_PARAMS_ENTRY
            | op::QUERY_XRQ_ERROR_PARAMS
            | op::QUERY_PACKET_REFORMAT_CONTEXT
    )
}

/// upstream `devx_is_whitelist_cmd()`: queries upstream also runs with the device's whitelist
/// uid for contexts without DEVX.
fn is_whitelist_cmd(cmd: &[u8]) -> bool {
    matches!(
        opcode(cmd),
        op::QUERY_HCA_CAP
            | op::QUERY_HCA_VPORT_CONTEXT
            | op::QUERY_ESW_VPORT_CONTEXT
            | op::QUERY_ESW_FUNCTIONS
    )
}

/// upstream `get_enc_obj_id()`: the creator's opcode (with a general object's type) in the
/// upper half, because object numbers are unique only per kind.
const fn enc(opcode: u32, id: u32) -> u64 {
    ((opcode as u64) << 32) | id as u64
}

/// upstream `devx_get_obj_id()`: the object a modify or query command names; 0 for a command
/// that names none this driver can check (it is refused).
pub(crate) fn obj_id_of(cmd: &[u8]) -> u64 {
    let o = opcode(cmd);
    let (creator, f) = match o {
        op::MODIFY_GENERAL_OBJECT | op::QUERY_GENERAL_OBJECT => {
            let t = get(cmd, hdr::obj_type.field());
            let creator = u32::from(op::CREATE_GENERAL_OBJECT) | (t << 16);
            return enc(creator, get(cmd, hdr::obj_id.field()));
        }
        op::QUERY_MKEY => (op::CREATE_MKEY, ID24),
        op::QUERY_CQ | op::MODIFY_CQ => (op::CREATE_CQ, ID24),
        op::QUERY_SQ | op::MODIFY_SQ => (op::CREATE_SQ, ID24),
        op::QUERY_RQ | op::MODIFY_RQ | op::ARM_RQ => (op::CREATE_RQ, ID24),
        op::QUERY_RMP | op::MODIFY_RMP => (op::CREATE_RMP, ID24),
        op::QUERY_RQT | op::MODIFY_RQT => (op::CREATE_RQT, ID24),
        op::QUERY_TIR | op::MODIFY_TIR => (op::CREATE_TIR, ID24),
        op::QUERY_TIS | op::MODIFY_TIS => (op::CREATE_TIS, ID24),
        op::QUERY_Q_COUNTER => (op::ALLOC_Q_COUNTER, at(0xf8, 0x8)),
        op::QUERY_FLOW_COUNTER => (op::ALLOC_FLOW_COUNTER, at(0xe0, 0x20)),
        op::QUERY_MODIFY_HEADER_CONTEXT => (op::ALLOC_MODIFY_HEADER_CONTEXT, ID32),
        op::QUERY_PACKET_REFORMAT_CONTEXT => (op::ALLOC_PACKET_REFORMAT_CONTEXT, ID32),
        op::QUERY_QP
        | op::RST2INIT_QP
        | op::INIT2INIT_QP
        | op::INIT2RTR_QP
        | op::RTR2RTS_QP
        | op::RTS2RTS_QP
        | op::SQERR2RTS_QP
        | op::_2ERR_QP
        | op::_2RST_QP => (op::CREATE_QP, ID24),
        op::QUERY_DCT | op::ARM_DCT_FOR_KEY_VIOLATION => (op::CREATE_DCT, ID24),
        op::QUERY_XRQ
        | op::QUERY_XRQ_DC_PARAMS_ENTRY
        | op::QUERY_XRQ_ERROR_PARAMS
        | op::ARM_XRQ
        | op::SET_XRQ_DC_PARAMS_ENTRY
        | op::RELEASE_XRQ_ERROR
        | op::MODIFY_XRQ => (op::CREATE_XRQ, ID24),
        op::QUERY_XRC_SRQ | op::ARM_XRC_SRQ => (op::CREATE_XRC_SRQ, ID24),
        op::QUERY_SRQ => (op::CREATE_SRQ, ID24),
        // Flow tables, groups and entries, scheduling elements, VXLAN ports and L2 entries:
        // their objects cannot be created here (see the module doc).
        _ => return 0,
    };
    enc(u32::from(creator), get(cmd, f))
}

/// upstream `devx_is_valid_obj_id()`: the command's object is the handle's.
fn is_valid_obj_id(obj: &AnyObject<'_, Mlx5Ib>, cmd: &[u8]) -> bool {
    let id = obj_id_of(cmd);
    if id == 0 {
        return false;
    }
    match obj {
        AnyObject::Cq(c) => enc(op::CREATE_CQ.into(), c.data().cqn) == id,
        AnyObject::Qp(q) => enc(op::CREATE_QP.into(), q.data().qpn) == id,
        // ISSI 1: an SRQ is an RMP.
        AnyObject::Srq(s) => enc(op::CREATE_RMP.into(), s.data().srqn) == id,
        AnyObject::Driver(d) => d.downcast_ref::<DevxObj>().is_some_and(|o| o.obj_id == id),
        AnyObject::Other => false,
    }
}

/// The created object's id and its destroy command (upstream `devx_get_created_obj_id()` +
/// `devx_obj_build_destroy_cmd()`): `(destroy opcode, where the id goes, where it is in the
/// create outbox)`; `None` for creates whose destroy needs more than the id.
fn destroy_rule(opcode: u16) -> Option<(u16, Field, Field)> {
    Some(match opcode {
        op::CREATE_GENERAL_OBJECT => (op::DESTROY_GENERAL_OBJECT, ID32, ID32),
        op::CREATE_UMEM => (op::DESTROY_UMEM, ID24, ID24),
        op::CREATE_MKEY => (op::DESTROY_MKEY, ID24, ID24),
        op::CREATE_CQ => (op::DESTROY_CQ, ID24, ID24),
        op::ALLOC_PD => (op::DEALLOC_PD, ID24, ID24),
        op::ALLOC_TRANSPORT_DOMAIN => (op::DEALLOC_TRANSPORT_DOMAIN, ID24, ID24),
        op::CREATE_RMP => (op::DESTROY_RMP, ID24, ID24),
        op::CREATE_SQ => (op::DESTROY_SQ, ID24, ID24),
        op::CREATE_RQ => (op::DESTROY_RQ, ID24, ID24),
        op::CREATE_RQT => (op::DESTROY_RQT, ID24, ID24),
        op::CREATE_TIR => (op::DESTROY_TIR, ID24, ID24),
        op::CREATE_TIS => (op::DESTROY_TIS, ID24, ID24),
        op::ALLOC_Q_COUNTER => (op::DEALLOC_Q_COUNTER, at(0x58, 0x8), at(0x58, 0x8)),
        op::ALLOC_FLOW_COUNTER => (op::DEALLOC_FLOW_COUNTER, ID32, ID32),
        op::ALLOC_PACKET_REFORMAT_CONTEXT => (op::DEALLOC_PACKET_REFORMAT_CONTEXT, ID32, ID32),
        op::ALLOC_MODIFY_HEADER_CONTEXT => (op::DEALLOC_MODIFY_HEADER_CONTEXT, ID32, ID32),
        op::CREATE_QP => (op::DESTROY_QP, ID24, ID24),
        op::CREATE_SRQ => (op::DESTROY_SRQ, ID24, ID24),
        op::CREATE_XRC_SRQ => (op::DESTROY_XRC_SRQ, ID24, ID24),
        op::CREATE_DCT => (op::DESTROY_DCT, ID24, ID24),
        op::CREATE_XRQ => (op::DESTROY_XRQ, ID24, ID24),
        op::ALLOC_XRCD => (op::DEALLOC_XRCD, ID24, ID24),
        // create_psv_out.psv0_index.
        op::CREATE_PSV => (op::DESTROY_PSV, ID24, at(0x88, 0x18)),
        _ => return None,
    })
}

/// The destroy inbox of an object (the 16-byte header) and its encoded id.
pub(crate) fn build_destroy_cmd(cmd: &[u8], out: &[u8]) -> Result<([u8; 16], u64)> {
    let o = opcode(cmd);
    let (dop, din_id, out_id) = destroy_rule(o).ok_or(EOPNOTSUPP)?;
    let id = get(out, out_id);
    let mut din = [0u8; 16];
    set(&mut din, hdr::opcode.field(), dop.into())?;
    set(&mut din, hdr::uid.field(), get(cmd, hdr::uid.field()))?;
    set(&mut din, din_id, id)?;
    let mut creator = u32::from(o);
    if o == op::CREATE_GENERAL_OBJECT {
        let t = get(cmd, hdr::obj_type.field());
        set(&mut din, hdr::obj_type.field(), t)?;
        creator |= t << 16;
    }
    Ok((din, enc(creator, id)))
}

/// upstream `devx_set_umem_valid()`: a DEVX CQ, QP, RMP, XRC SRQ (and SQ, RQ, XRQ) takes its
/// buffer and doorbell from umems; the kernel sets the `*_umem_valid` bits.
fn set_umem_valid(cmd: &mut [u8]) -> Result {
    use crate::prm::cmd::{
        create_cq_in, create_qp_in, create_rmp_in, create_xrc_srq_in, modify_cq_in,
    };
    match opcode(cmd) {
        op::CREATE_CQ => {
            set(cmd, create_cq_in::cq_umem_valid.field(), 1)?;
            set(
                cmd,
                create_cq_in::cq_context.inner(cqc::dbr_umem_valid).field(),
                1,
            )
        }
        op::CREATE_QP => {
            set(cmd, create_qp_in::qpc.inner(qpc::dbr_umem_valid).field(), 1)?;
            set(cmd, create_qp_in::wq_umem_valid.field(), 1)
        }
        op::MODIFY_CQ => set(cmd, modify_cq_in::cq_umem_valid.field(), 1),
        op::CREATE_RMP => {
            use crate::prm::ctx::{rmpc, wq};
            let w = |f| create_rmp_in::ctx.inner(rmpc::wq.inner(f)).field();
            set(cmd, w(wq::dbr_umem_valid), 1)?;
            set(cmd, w(wq::wq_umem_valid), 1)
        }
        op::CREATE_XRC_SRQ => {
            use crate::prm::ctx::xrc_srqc;
            set(cmd, create_xrc_srq_in::xrc_srq_umem_valid.field(), 1)?;
            let x = create_xrc_srq_in::xrc_srq_context_entry.inner(xrc_srqc::dbr_umem_valid);
            set(cmd, x.field(), 1)
        }
        // SQ, RQ: `wq.dbr_umem_valid`/`wq_umem_valid` (mlx5_ifc.h: `ctx` at 0x100 of the
        // inbox, `wq` at 0x180 of sqc/rqc). XRQs are not created here (no layout).
        op::CREATE_SQ | op::CREATE_RQ => {
            set(cmd, at(0x100 + 0x180 + 0x120, 1), 1)?;
            set(cmd, at(0x100 + 0x180 + 0x121, 1), 1)
        }
        _ => Ok(()),
    }
}

/// upstream `devx_handle_mkey_create()`: the inbox must hold the whole `mkc`; a direct mkey
/// over a umem gets `mkey_umem_valid` (indirect KLM/KSM mkeys do not).
fn handle_mkey_create(cmd: &mut [u8]) -> Result {
    let end = create_mkey_in::memory_key_mkey_entry;
    if cmd.len() < ((end.bit_off + end.bit_width) / 8) as usize {
        return Err(EINVAL);
    }
    let m = |f| create_mkey_in::memory_key_mkey_entry.inner(f).field();
    let mode = (get(cmd, m(mkc::access_mode_4_2)) << 2) | get(cmd, m(mkc::access_mode_1_0));
    if mode == crate::prm::consts::MKC_ACCESS_MODE_KLMS
        || mode == crate::prm::consts::MKC_ACCESS_MODE_KSM
    {
        return Ok(());
    }
    set(cmd, create_mkey_in::mkey_umem_valid.field(), 1)
}

// ---- The context's uid ----

/// The context's DEVX uid (0 without DEVX).
fn ctx_uid(ctx: &Ucontext<Mlx5Ib>) -> u16 {
    ctx.data::<Mlx5Ucontext>().map_or(0, |u| u.devx_uid)
}

/// upstream `devx_get_uid()`.
fn uid_for(ctx: &Ucontext<Mlx5Ib>, cmd: &[u8]) -> Result<u16> {
    let uid = ctx_uid(ctx);
    if uid != 0 {
        return Ok(uid);
    }
    // The whitelisted queries would run with the device's whitelist uid, which needs
    // `MLX5_UCTX_CAP_INTERNAL_DEV_RES` at probe: none here.
    if is_whitelist_cmd(cmd) {
        return Err(EOPNOTSUPP);
    }
    Err(EINVAL)
}

/// Executes `cmd` as upstream's `mlx5_cmd_do()` and copies the outbox to `attr` (also when the
/// firmware refused it: `EREMOTEIO`, the status and syndrome in the outbox).
fn run(call: &mut DriverCall<'_, '_, Mlx5Ib>, cmd: &[u8], attr: u16) -> Result<KVec<u8>> {
    let hw = call.ctx().device().data().hw.clone();
    let mut out = KVec::from_elem(0u8, call.len(attr)?, GFP_KERNEL)?;
    match hw.cmd_do(cmd, &mut out) {
        Ok(()) => Ok(out),
        Err(e) if e == EREMOTEIO => {
            call.put(attr, &out)?;
            Err(e)
        }
        Err(e) => Err(e),
    }
}

// ---- Methods ----

/// upstream `MLX5_IB_METHOD_DEVX_OTHER`.
fn other(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let mut cmd = call.ptr_in(ATTR_OTHER_CMD_IN)?;
    let uid = uid_for(call.ctx(), &cmd)?;
    if !is_general_cmd(&cmd) {
        return Err(EINVAL);
    }
    set(&mut cmd, hdr::uid.field(), uid.into())?;
    let out = run(call, &cmd, ATTR_OTHER_CMD_OUT)?;
    call.put(ATTR_OTHER_CMD_OUT, &out)
}

/// upstream `MLX5_IB_METHOD_DEVX_QUERY_EQN`: `mlx5_comp_eqn_get()`.
fn query_eqn(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let v = call.ptr_in(ATTR_QUERY_IN)?;
    let mut b = [0u8; 4];
    b.copy_from_slice(v.get(..4).ok_or(EINVAL)?);
    let eqn = call
        .ctx()
        .device()
        .data()
        .hw
        .comp_eqn(u32::from_ne_bytes(b))?;
    call.put(ATTR_QUERY_OUT, &eqn.to_ne_bytes())
}

/// upstream `MLX5_IB_METHOD_DEVX_QUERY_UAR`: `bfregn_to_uar_index()` is `EINVAL` for a
/// context with dynamic UARs (`lib_uar_dyn`), the only kind here; libmlx5 44 does not call
/// it then (`mlx5dv_devx_alloc_uar()` answers the page id of its UAR object).
fn query_uar(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let _ = call.ptr_in(ATTR_QUERY_IN)?;
    Err(EINVAL)
}

/// upstream `MLX5_IB_METHOD_DEVX_OBJ_CREATE`.
fn obj_create(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let mut cmd = call.ptr_in(ATTR_OBJ_CMD_IN)?;
    if get(&cmd, hdr::vhca_tunnel_id.field()) != 0 {
        return Err(EINVAL);
    }
    let uid = uid_for(call.ctx(), &cmd)?;
    if !is_obj_create_cmd(&cmd) {
        return Err(EINVAL);
    }
    let o = opcode(&cmd);
    if destroy_rule(o).is_none() {
        return Err(EOPNOTSUPP);
    }
    set(&mut cmd, hdr::uid.field(), uid.into())?;
    if o == op::CREATE_MKEY {
        handle_mkey_create(&mut cmd)?;
    } else {
        set_umem_valid(&mut cmd)?;
    }
    let out = run(call, &cmd, ATTR_OBJ_CMD_OUT)?;
    let (din, obj_id) = build_destroy_cmd(&cmd, &out)?;
    let obj = DevxObj {
        hw: call.ctx().device().data().hw.clone(),
        events: call.ctx().device().data().events.clone(),
        obj_id,
        din,
        freed: Atomic::new(0),
    };
    // From here dropping the object destroys it (a failed copy below: upstream obj_destroy).
    call.set_new_object(KBox::new(obj, GFP_KERNEL)?)?;
    call.put(ATTR_OBJ_CMD_OUT, &out)
}

/// upstream `MLX5_IB_METHOD_DEVX_OBJ_MODIFY` (`modify`) and `_QUERY`.
fn obj_use(call: &mut DriverCall<'_, '_, Mlx5Ib>, modify: bool) -> Result {
    let mut cmd = call.ptr_in(ATTR_OBJ_CMD_IN)?;
    if get(&cmd, hdr::vhca_tunnel_id.field()) != 0 {
        return Err(EINVAL);
    }
    let uid = uid_for(call.ctx(), &cmd)?;
    let allowed = if modify {
        is_obj_modify_cmd(&cmd)
    } else {
        is_obj_query_cmd(&cmd)
    };
    if !allowed || !is_valid_obj_id(&call.object(ATTR_OBJ_HANDLE)?, &cmd) {
        return Err(EINVAL);
    }
    set(&mut cmd, hdr::uid.field(), uid.into())?;
    if modify {
        set_umem_valid(&mut cmd)?;
    }
    let out = run(call, &cmd, ATTR_OBJ_CMD_OUT)?;
    call.put(ATTR_OBJ_CMD_OUT, &out)
}

/// `IB_ACCESS_LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | RELAXED_ORDERING`: what UMEM_REG
/// accepts.
const UMEM_ACCESS: u64 = 1 | 2 | 4 | (1 << 20);
/// `MLX5_ADAPTER_PAGE_SHIFT`.
const ADAPTER_PAGE_SHIFT: u32 = 12;

/// upstream `MLX5_IB_METHOD_DEVX_UMEM_REG`: pin, CREATE_UMEM with the uid and an MTT of the
/// pages' bus addresses, commit, answer the id.
fn umem_reg(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let ctx = call.ctx().clone();
    let uid = ctx_uid(&ctx);
    if uid == 0 {
        return Err(EINVAL);
    }
    let access = call.flags32(ATTR_UMEM_ACCESS, UMEM_ACCESS)?;
    let word = |v: KVec<u8>| -> Result<u64> {
        let mut b = [0u8; 8];
        b.copy_from_slice(v.get(..8).ok_or(EINVAL)?);
        Ok(u64::from_ne_bytes(b))
    };
    let addr = word(call.ptr_in(ATTR_UMEM_ADDR)?)?;
    let len = word(call.ptr_in(ATTR_UMEM_LEN)?)?;
    // upstream devx_umem_find_best_pgsize(): the largest size of the bitmap the pages allow;
    // the pages here are mapped one by one, so only the system page size is taken (it must be
    // in the bitmap, else EINVAL).
    let default = !((1u64 << ADAPTER_PAGE_SHIFT.min(kernel::page::PAGE_SHIFT as u32)) - 1);
    let bitmap = call.const_in(ATTR_UMEM_PGSZ_BITMAP, u64::MAX, Some(default))?;
    let page_shift = kernel::page::PAGE_SHIFT as u32;
    if bitmap & (1u64 << page_shift) == 0 {
        return Err(EINVAL);
    }
    let flags = AccessFlags(access);
    let buf = UserBuf::pin(&ctx, addr, len, flags)?;
    let pages = buf.pages()?;
    let n = pages.len();
    let inlen = create_umem_in::SIZE_BYTES + 8 * n;
    let mut cmd = KVec::from_elem(0u8, inlen, GFP_KERNEL)?;
    let u = |f| create_umem_in::umem.inner(f).field();
    set(
        &mut cmd,
        create_umem_in::opcode.field(),
        op::CREATE_UMEM.into(),
    )?;
    set(&mut cmd, create_umem_in::uid.field(), uid.into())?;
    set(
        &mut cmd,
        u(umemc::log_page_size),
        page_shift - ADAPTER_PAGE_SHIFT,
    )?;
    set(&mut cmd, u(umemc::page_offset), buf.page_offset() as u32)?;
    u(umemc::num_of_mtt)
        .set64(&mut cmd, n as u64)
        .map_err(|_| EINVAL)?;
    // upstream mlx5_ib_populate_pas() with MLX5_IB_MTT_READ (| _WRITE when writable).
    let perm: u64 = if buf.writable() { 3 } else { 1 };
    for (i, p) in pages.iter().enumerate() {
        let o = create_umem_in::SIZE_BYTES + 8 * i;
        cmd.get_mut(o..o + 8)
            .ok_or(EINVAL)?
            .copy_from_slice(&(p | perm).to_be_bytes());
    }
    let hw = ctx.device().data().hw.clone();
    let mut out = [0u8; 16];
    hw.exec(&cmd, &mut out)?;
    let (din, obj_id) = build_destroy_cmd(&cmd, &out)?;
    let id = obj_id as u32;
    let obj = DevxUmem {
        obj: DevxObj {
            hw,
            events: ctx.device().data().events.clone(),
            obj_id,
            din,
            freed: Atomic::new(0),
        },
        _buf: buf,
    };
    call.set_new_object(KBox::new(obj, GFP_KERNEL)?)?;
    call.put(ATTR_UMEM_OUT_ID, &id.to_ne_bytes())
}

/// upstream `MAX_ASYNC_BYTES_IN_USE`: the output bytes of one async command fd's queries
/// not yet read.
const MAX_ASYNC_BYTES_IN_USE: u32 = 1024 * 1024;

/// upstream `MLX5_IB_METHOD_DEVX_ASYNC_CMD_FD_ALLOC`: a new `[devx_async_cmd]` fd.
fn async_cmd_fd_alloc(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let f = DevxCmdFd::new()?;
    call.set_new_fd(
        c"[devx_async_cmd]",
        &<crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE,
        f,
    )
}

/// upstream `MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY`: the checks of `OBJ_QUERY`, the budget of
/// the fd, then the command. Upstream runs it with `mlx5_cmd_exec_cb()` and queues the result
/// from the completion (`devx_query_callback()`, whatever the firmware status: the outbox
/// says it); here the command runs at once and its result is queued before the method
/// returns, so it reaches the user only through a read of the fd, as upstream's.
fn obj_async_query(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let mut cmd = call.ptr_in(ATTR_AQ_CMD_IN)?;
    if get(&cmd, hdr::vhca_tunnel_id.field()) != 0 {
        return Err(EINVAL);
    }
    let uid = uid_for(call.ctx(), &cmd)?;
    if !is_obj_query_cmd(&cmd) {
        return Err(EINVAL);
    }
    let out_len = call.const_in(ATTR_AQ_OUT_LEN, u16::MAX.into(), None)? as u32;
    if !is_valid_obj_id(&call.object(ATTR_AQ_HANDLE)?, &cmd) {
        return Err(EINVAL);
    }
    let hw = call.ctx().device().data().hw.clone();
    let f: &dyn core::any::Any = &**call.fd_object(ATTR_AQ_FD)?;
    let f = f.downcast_ref::<DevxCmdFd>().ok_or(EBADF)?;
    // upstream: atomic_add_return() over the budget is EAGAIN.
    if f.bytes_in_use.fetch_add(out_len, Relaxed) + out_len > MAX_ASYNC_BYTES_IN_USE {
        f.bytes_in_use.fetch_sub(out_len, Relaxed);
        return Err(EAGAIN);
    }
    let r = (|| -> Result<KVVec<u8>> {
        let mut ev = KVVec::from_elem(0u8, CMD_HDR + out_len as usize, GFP_KERNEL)?;
        let wr_id = call.ptr_in(ATTR_AQ_WR_ID)?;
        ev.get_mut(..CMD_HDR)
            .ok_or(EINVAL)?
            .copy_from_slice(wr_id.get(..CMD_HDR).ok_or(EINVAL)?);
        set(&mut cmd, hdr::uid.field(), uid.into())?;
        match hw.cmd_do(&cmd, ev.get_mut(CMD_HDR..).ok_or(EINVAL)?) {
            // A refused command completes too: its outbox has the status and syndrome.
            Ok(()) => Ok(ev),
            Err(e) if e == EREMOTEIO => Ok(ev),
            // Not delivered (upstream: mlx5_cmd_exec_cb() failing): the method fails.
            Err(e) => Err(e),
        }
    })();
    match r {
        Ok(ev) => {
            f.complete(ev, out_len);
            Ok(())
        }
        Err(e) => {
            f.bytes_in_use.fetch_sub(out_len, Relaxed);
            Err(e)
        }
    }
}

/// upstream `MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC`: a new `[devx_async_event]` fd; the
/// only flag is `OMIT_DATA` (others `EINVAL`, `uverbs_get_flags32()`).
fn async_event_fd_alloc(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let flags = call.flags32(ATTR_EVENT_FD_ALLOC_FLAGS, devx_events::OMIT_DATA)?;
    let table = call.ctx().device().data().events.devx.clone();
    let f = DevxEventFd::new(u64::from(flags) & devx_events::OMIT_DATA != 0, table)?;
    call.set_new_fd(
        c"[devx_async_event]",
        &<crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE,
        f,
    )
}

/// upstream `MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT`: one subscription per event number of the
/// list, for the DEVX object of the handle (affiliated events) or for none (unaffiliated),
/// with the cookie; all or nothing.
fn subscribe_event(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    if ctx_uid(call.ctx()) == 0 {
        return Err(EINVAL);
    }
    let obj = if call.is_present(ATTR_SUB_OBJ_HANDLE) {
        match call.object(ATTR_SUB_OBJ_HANDLE)? {
            AnyObject::Driver(d) => Some(d.downcast_ref::<DevxObj>().ok_or(EINVAL)?.obj_id),
            _ => return Err(EINVAL),
        }
    } else {
        None
    };
    let file = call.fd_object(ATTR_SUB_FD_HANDLE)?.clone();
    {
        let f: &dyn core::any::Any = &*file;
        if f.downcast_ref::<DevxEventFd>().is_none() {
            return Err(EBADF);
        }
    }
    let cookie_given = call.is_present(ATTR_SUB_COOKIE);
    // upstream: a redirect fd (an eventfd signalled per event instead of a queued event);
    // with a cookie EINVAL.
    let redirect = if call.is_present(ATTR_SUB_FD_NUM) {
        if cookie_given {
            return Err(EINVAL);
        }
        let v = call.ptr_in(ATTR_SUB_FD_NUM)?;
        let mut b = [0u8; 4];
        b.copy_from_slice(v.get(..4).ok_or(EINVAL)?);
        Some(i32::from_ne_bytes(b))
    } else {
        None
    };
    let cookie = if cookie_given {
        let c = call.ptr_in(ATTR_SUB_COOKIE)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(c.get(..8).ok_or(EINVAL)?);
        u64::from_ne_bytes(b)
    } else {
        0
    };
    // upstream uverbs_attr_ptr_get_array_size(): a length that is no multiple of u16 is
    // EINVAL; more than MAX_NUM_EVENTS too.
    let list = call.ptr_in(ATTR_SUB_TYPE_NUM_LIST)?;
    if list.len() % 2 != 0 || list.len() / 2 > devx_events::MAX_NUM_EVENTS {
        return Err(EINVAL);
    }
    let nums = list
        .chunks_exact(2)
        .map(|c| u16::from_ne_bytes([c[0], c[1]]));
    // upstream is_valid_events_legacy() (no event_cap).
    let valid = nums.clone().all(|n| {
        if obj.is_some() {
            devx_events::is_legacy_obj_event_num(n)
        } else {
            devx_events::is_legacy_unaffiliated_event_num(n)
        }
    });
    if !valid {
        return Err(EINVAL);
    }
    let mut subs = KVec::with_capacity(list.len() / 2, GFP_KERNEL)?;
    for n in nums {
        // upstream: key_level1 = event | get_dec_obj_type() << 16, key_level2 = the
        // object's number (get_dec_obj_id()).
        let (key1, level2, owner) = match obj {
            Some(id) => {
                let t = devx_events::legacy_obj_type(((id >> 32) & 0xffff) as u16);
                (u32::from(n) | (u32::from(t) << 16), Some(id as u32), id)
            }
            None => (u32::from(n), None, 0),
        };
        // upstream eventfd_ctx_fdget() per subscription: EBADF, EINVAL (not an eventfd).
        let efd = match redirect {
            Some(fd) => Some(crate::eventfd::EventFd::fdget(fd)?),
            None => None,
        };
        subs.push(
            devx_events::Sub::new(key1, level2, owner, cookie, file.clone(), efd)?,
            GFP_KERNEL,
        )?;
    }
    devx_events::subscribe(&call.ctx().device().data().events.devx, subs)
}

// ---- The async command fd ----

/// `sizeof(struct mlx5_ib_uapi_devx_async_cmd_hdr)`: the `wr_id` before the outbox.
const CMD_HDR: usize = 8;
/// upstream `struct devx_async_event_queue` of a `devx_async_cmd_event_file`: completed
/// queries, each the `wr_id` and the outbox (upstream `struct devx_async_data`'s `hdr`).
type CmdQueue = ChannelQueue<KVVec<u8>>;

/// upstream `struct devx_async_cmd_event_file`: the `[devx_async_cmd]` fd's object. It holds
/// no reference to the device: after its destroy it lives as long as its file and only
/// answers reads (`EIO`) and polls.
#[pin_data]
pub(crate) struct DevxCmdFd {
    /// A mutex: every producer runs in process context (the query's method).
    #[pin]
    queue: kernel::sync::Mutex<CmdQueue>,
    #[pin]
    wait: kernel::sync::poll::PollCondVar,
    /// upstream `bytes_in_use`: the output bytes of the queries not read yet.
    bytes_in_use: Atomic<u32>,
}

impl DevxCmdFd {
    fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(DevxCmdFd {
                queue <- kernel::new_mutex!(
                    CmdQueue::new(()),
                    "devx_async_cmd_queue"
                ),
                wait <- kernel::new_poll_condvar!("devx_async_cmd_wait"),
                bytes_in_use: Atomic::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// upstream `devx_query_callback()`: queues a completion and wakes the readers; after
    /// the destroy (the fd was closed meanwhile) the completion is dropped, as upstream's
    /// destroy frees what it finds.
    fn complete(&self, ev: KVVec<u8>, out_len: u32) {
        let mut q = self.queue.lock();
        if q.destroyed || q.events.push(ev, GFP_KERNEL).is_err() {
            drop(q);
            self.bytes_in_use.fetch_sub(out_len, Relaxed);
            return;
        }
        drop(q);
        self.wait.notify_all();
    }
}

impl DriverFdOps for DevxCmdFd {
    // upstream devx_async_cmd_event_read(): empty: EAGAIN (O_NONBLOCK) or wait; EIO once
    // destroyed; ENOSPC for a buffer smaller than the next completion (it stays queued);
    // one completion per read.
    fn read(&self, file: &File, mut out: UserSliceWriter) -> Result<usize> {
        let mut q = self.queue.lock();
        wait_queued(file, &self.wait, &mut q)?;
        let size = q.events.first().map_or(0, |e| e.len());
        if size > out.len() {
            return Err(ENOSPC);
        }
        let ev = q.events.remove(0).map_err(|_| EINVAL)?;
        drop(q);
        let r = out.write_slice(&ev).map(|()| ev.len());
        let out_len = (ev.len() - CMD_HDR) as u32;
        self.bytes_in_use.fetch_sub(out_len, Relaxed);
        r
    }

    // upstream devx_async_cmd_event_poll()
    fn poll(&self, file: &File, table: PollTable<'_>) -> u32 {
        table.register_wait(file, &self.wait);
        poll_mask(&*self.queue.lock())
    }

    // upstream devx_async_cmd_event_destroy_uobj(): mark destroyed, wake the readers, free
    // the completions nobody read (mlx5_cmd_cleanup_async_ctx() has nothing to wait for:
    // the queries completed in their methods).
    fn destroy(&self, _why: RemoveReason) {
        let events = self.queue.lock().destroy();
        self.wait.notify_all();
        drop(events);
    }
}

// ---- Objects ----

/// A DEVX object (upstream `struct devx_obj`): its encoded id and the command that destroys it.
pub(crate) struct DevxObj {
    hw: Arc<dyn Mlx5Hw>,
    /// The device's event table: the object's event subscriptions go at its destroy.
    events: Arc<EventTable>,
    /// upstream `obj->obj_id` ([`enc`]).
    obj_id: u64,
    /// upstream `obj->dinbox`.
    din: [u8; 16],
    /// 1 once the destroy command succeeded.
    freed: Atomic<u32>,
}

impl DevxObj {
    /// upstream `devx_obj_cleanup()`: the destroy command, once.
    fn destroy(&self) -> Result {
        if self.freed.load(Relaxed) != 0 {
            return Ok(());
        }
        let mut out = [0u8; 16];
        self.hw.exec(&self.din, &mut out)?;
        self.freed.store(1, Relaxed);
        // upstream devx_obj_cleanup(): the subscriptions go after the destroy command.
        devx_events::unsubscribe_obj(&self.events.devx, self.obj_id);
        Ok(())
    }
}

impl DriverUobject for DevxObj {
    fn destroy_hw(&self) -> Result {
        self.destroy()
    }
}

impl Drop for DevxObj {
    fn drop(&mut self) {
        // Reached without a successful destroy_hw only when the method that created it failed
        // after the create command, or at the end of a cleanup that could not destroy it (the
        // refusal was logged by exec): one more try, nothing else can be done.
        let _ = self.destroy();
    }
}

/// A umem (upstream `struct devx_umem`): DESTROY_UMEM first, then the pages are unmapped and
/// unpinned (field order).
pub(crate) struct DevxUmem {
    obj: DevxObj,
    _buf: UserBuf,
}

impl DriverUobject for DevxUmem {
    fn destroy_hw(&self) -> Result {
        self.obj.destroy()
    }
}

#[kunit_tests(mlx5_ib_rs_devx)]
mod tests {
    use super::*;

    fn cmd(opcode: u16) -> [u8; 64] {
        let mut c = [0u8; 64];
        c[..2].copy_from_slice(&opcode.to_be_bytes());
        c
    }

    #[test]
    fn allow_lists() {
        assert!(is_general_cmd(&cmd(op::QUERY_HCA_CAP)));
        assert!(is_general_cmd(&cmd(0xb00)));
        assert!(!is_general_cmd(&cmd(op::CREATE_CQ)));
        assert!(is_obj_create_cmd(&cmd(op::CREATE_CQ)));
        assert!(!is_obj_create_cmd(&cmd(op::QUERY_HCA_CAP)));
        assert!(!is_obj_create_cmd(&cmd(op::DESTROY_CQ)));
        assert!(is_obj_modify_cmd(&cmd(op::RST2INIT_QP)));
        assert!(!is_obj_modify_cmd(&cmd(op::QUERY_QP)));
        assert!(is_obj_query_cmd(&cmd(op::QUERY_QP)));
        assert!(!is_obj_query_cmd(&cmd(op::DESTROY_QP)));
    }

    #[test]
    fn destroy_commands() -> Result {
        let c = {
            let mut c = cmd(op::CREATE_QP);
            c[2..4].copy_from_slice(&7u16.to_be_bytes());
            c
        };
        let mut out = [0u8; 16];
        out[9..12].copy_from_slice(&[0, 1, 0x23]);
        let (din, id) = build_destroy_cmd(&c, &out)?;
        assert_eq!(&din[..4], &[0x05, 0x01, 0, 7]);
        assert_eq!(&din[8..12], &[0, 0, 1, 0x23]);
        assert_eq!(id, enc(op::CREATE_QP.into(), 0x123));
        // The modify command of that QP names the same id.
        let mut m = cmd(op::RTR2RTS_QP);
        m[9..12].copy_from_slice(&[0, 1, 0x23]);
        assert_eq!(obj_id_of(&m), id);
        assert_eq!(
            build_destroy_cmd(&cmd(op::CREATE_FLOW_TABLE), &out),
            Err(EOPNOTSUPP)
        );
        Ok(())
    }
}
