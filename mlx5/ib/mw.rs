// SPDX-License-Identifier: GPL-2.0

//! Memory windows of user contexts (upstream `mlx5_ib_alloc_mw()`, `mlx5_ib_dealloc_mw()`,
//! mr.c): free KLM mkeys the provider binds and invalidates with UMR WQEs.

use crate::cmd::exec;
use crate::cmd::res::{CreateMkey, MkeyAccess, MkeyTranslation};
use crate::ib::device::Mlx5Ib;
use crate::ib::mkey::destroy_mkey;
use crate::ib::ucontext::abi_err;
use crate::uabi;
use ib_core_rs::verbs::{Mw, MwCreated, MwType, Pd, UserCtx};
use kernel::prelude::*;

/// The driver part of a memory window (upstream `struct mlx5_ib_mw`): its mkey.
pub(crate) struct Mlx5Mw {
    /// The mkey index (`rkey >> 8`).
    pub(crate) index: u32,
}

/// upstream `mlx5_ib_alloc_mw()` (mr.c): the request ([`uabi::parse_alloc_mw`]), then
/// CREATE_MKEY of a free KLM mkey with UMR enabled, local read, `qpn` 0xffffff, `en_rinval` for
/// a type 2 window and room for the descriptors; the rkey is the mkey. The response
/// (`comp_mask`, `response_length`) only as far as the library asked for one. The window is
/// bound and invalidated by WQEs the provider posts (UMR), which the device executes.
pub(crate) fn alloc_mw(
    pd: &Pd<Mlx5Ib>,
    mw_type: MwType,
    user: &mut UserCtx<'_, '_, Mlx5Ib>,
) -> Result<MwCreated<Mlx5Mw>> {
    let d = pd.device().data();
    let ndescs = uabi::parse_alloc_mw(user.udata().input()).map_err(abi_err)?;
    let m = exec(
        &*d.hw,
        &CreateMkey {
            uid: 0,
            pd: pd.data().pdn,
            access: MkeyAccess::default(),
            key_byte: d.next_mkey_variant(),
            translation: MkeyTranslation::Window {
                ndescs,
                remote_inval: mw_type == MwType::Type2,
            },
        },
    )?;
    let (resp, n) = uabi::alloc_mw_resp(user.udata().outlen());
    if n > 0 {
        user.udata().copy_to(resp.get(..n).unwrap_or(&[]));
    }
    Ok(MwCreated {
        rkey: m.key,
        data: Mlx5Mw { index: m.index },
    })
}

/// upstream `mlx5_ib_dealloc_mw()`: DESTROY_MKEY (no on-demand paging here, so nothing to wait
/// for).
pub(crate) fn dealloc_mw(mw: &Mw<Mlx5Ib>) -> Result {
    destroy_mkey(&*mw.pd().device().data().hw, mw.data().index)
}
