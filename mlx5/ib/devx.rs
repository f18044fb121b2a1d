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
//!   [`is_general_cmd`](command::is_general_cmd)), `DEVX_QUERY_EQN` (the EQ of a completion vector), `DEVX_QUERY_UAR`
//!   (`EINVAL`: it translates static bfregs, and contexts here have dynamic UARs only, as
//!   upstream's `bfregn_to_uar_index()` answers for `lib_uar_dyn`).
//! * `MLX5_IB_OBJECT_DEVX_OBJ`: `OBJ_CREATE` (a command of [`is_obj_create_cmd`](command::is_obj_create_cmd); the object
//!   keeps its destroy command, [`build_destroy_cmd`](command::build_destroy_cmd)), `OBJ_DESTROY`, `OBJ_MODIFY` and
//!   `OBJ_QUERY` (commands of [`is_obj_modify_cmd`](command::is_obj_modify_cmd) / [`is_obj_query_cmd`](command::is_obj_query_cmd) whose object id
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
//! * `MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD` (an fd object: `ASYNC_CMD_FD_ALLOC`, [`DevxCmdFd`](async_cmd::DevxCmdFd))
//!   and `OBJ_ASYNC_QUERY` (the query runs in the method; its result reaches the user only
//!   through a read of the fd, as upstream's `mlx5_cmd_exec_cb()` completion).
//! * `MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD` (`ASYNC_EVENT_FD_ALLOC`) and `SUBSCRIBE_EVENT`:
//!   [`crate::ib::devx_events`].
//!
//! Flow tables, groups and entries are created as upstream: their destroy commands copy the
//! vport, eswitch and table members of the create inbox (`devx_obj_build_destroy_cmd()`); the
//! simulated device has no steering (its capabilities say so) and refuses them (`BAD_OP`:
//! `EREMOTEIO`). Not done: DMA-buf umems, creates whose destroy needs more than this
//! (scheduling elements, VXLAN ports, L2 entries, multicast attach: `EOPNOTSUPP`), the
//! whitelist uid, indirect mkeys with ODP and unaffiliated events (accepted,
//! never produced). On the mlx5_core backend a DEVX CREATE_CQ goes through `mlx5_create_cq()`
//! as every CREATE_CQ there (`crate::corehw`), so its completion events reach the channels as
//! upstream's `devx_cq_comp()` (`devx_test` on the emulated function).
//!
//! The files: `devx/command.rs` (the allow-lists and what a command names),
//! `devx/uctx.rs` (the context's uid), `devx/general.rs`, `devx/obj.rs`, `devx/umem.rs`,
//! `devx/async_cmd.rs`, `devx/subscribe.rs` (the methods of each object).

mod async_cmd;
mod command;
mod general;
mod obj;
mod subscribe;
mod uctx;
mod umem;

use crate::ib::device::Mlx5Ib;
use ib_core_rs::uverbs::driver_api::{
    Access, AttrSpec, DriverCall, MethodSpec, ObjectSpec, PtrSpec, UA_MANDATORY, UA_OPTIONAL,
};
use kernel::prelude::*;

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
        H_OTHER => general::other(call),
        H_QUERY_UAR => general::query_uar(call),
        H_QUERY_EQN => general::query_eqn(call),
        H_OBJ_CREATE => obj::obj_create(call),
        H_OBJ_MODIFY => obj::obj_use(call, true),
        H_OBJ_QUERY => obj::obj_use(call, false),
        H_UMEM_REG => umem::umem_reg(call),
        H_OBJ_ASYNC_QUERY => async_cmd::obj_async_query(call),
        H_ASYNC_CMD_FD_ALLOC => async_cmd::async_cmd_fd_alloc(call),
        H_ASYNC_EVENT_FD_ALLOC => subscribe::async_event_fd_alloc(call),
        H_SUBSCRIBE_EVENT => subscribe::subscribe_event(call),
        _ => Err(EINVAL),
    }
}
