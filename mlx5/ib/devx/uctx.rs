// SPDX-License-Identifier: GPL-2.0

//! The DEVX context's uid (upstream `devx_get_uid()`) and running a user's command as it.

use super::command::{get, is_whitelist_cmd};
use crate::ib::device::Mlx5Ib;
use crate::ib::ucontext::Mlx5Ucontext;
use crate::prm::cmd::general_obj_in_cmd_hdr as hdr;
use ib_core_rs::uverbs::driver_api::DriverCall;
use ib_core_rs::verbs::Ucontext;
use kernel::prelude::*;

/// The context's DEVX uid (0 without DEVX).
pub(super) fn ctx_uid(ctx: &Ucontext<Mlx5Ib>) -> u16 {
    ctx.data::<Mlx5Ucontext>().map_or(0, |u| u.devx_uid)
}

/// upstream `devx_get_uid()`.
pub(super) fn uid_for(ctx: &Ucontext<Mlx5Ib>, cmd: &[u8]) -> Result<u16> {
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
pub(super) fn run(
    call: &mut DriverCall<'_, '_, Mlx5Ib>,
    cmd: &[u8],
    attr: u16,
) -> Result<KVec<u8>> {
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

/// The object command of attribute `attr` and the uid to run it with: a command for another
/// function (`vhca_tunnel_id`) is `EINVAL`, then as [`uid_for`].
pub(super) fn obj_cmd_in(call: &DriverCall<'_, '_, Mlx5Ib>, attr: u16) -> Result<(KVec<u8>, u16)> {
    let cmd = call.ptr_in(attr)?;
    if get(&cmd, hdr::vhca_tunnel_id.field()) != 0 {
        return Err(EINVAL);
    }
    let uid = uid_for(call.ctx(), &cmd)?;
    Ok((cmd, uid))
}
