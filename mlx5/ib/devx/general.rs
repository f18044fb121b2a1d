// SPDX-License-Identifier: GPL-2.0

//! The methods of `MLX5_IB_OBJECT_DEVX`: a general command, the EQ of a completion vector,
//! the UAR index of a bfreg.

use super::command::{is_general_cmd, set};
use super::uctx::{run, uid_for};
use super::{ATTR_OTHER_CMD_IN, ATTR_OTHER_CMD_OUT, ATTR_QUERY_IN, ATTR_QUERY_OUT};
use crate::ib::device::Mlx5Ib;
use crate::prm::cmd::general_obj_in_cmd_hdr as hdr;
use ib_core_rs::uverbs::driver_api::DriverCall;
use kernel::prelude::*;

/// upstream `MLX5_IB_METHOD_DEVX_OTHER`.
pub(super) fn other(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
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
pub(super) fn query_eqn(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
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
pub(super) fn query_uar(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let _ = call.ptr_in(ATTR_QUERY_IN)?;
    Err(EINVAL)
}
