// SPDX-License-Identifier: GPL-2.0

//! Address handles (upstream ah.c, `mlx5_ib_create_ah()`): no firmware object; a user RoCE
//! AH answers the destination MAC.

use crate::ib::device::Mlx5Ib;
use ib_core_rs::attr::LinkLayer;
use ib_core_rs::verbs::{AhAttr, Pd, UserCtx};
use kernel::prelude::*;

/// The driver part of an address handle (upstream `struct mlx5_ib_ah`). Nothing of its own:
/// the core keeps the attributes (`Ah::attr`), from which a kernel UD send would build the
/// WQE's address vector; user AHs live in libmlx5.
pub(crate) struct Mlx5Ah;

/// `offsetofend(struct mlx5_ib_create_ah_resp, dmac)`: `response_length` (u32) then the MAC.
const CREATE_AH_RESP_MIN: usize = 4 + 6;

/// upstream `mlx5_ib_create_ah()` (ah.c): RoCE needs a GRH (`EINVAL`; the core checks it
/// first); a user RoCE AH answers `struct mlx5_ib_create_ah_resp` with the destination MAC the
/// core resolved (libmlx5 puts it into the AV's `rmac`), `EINVAL` if the response cannot hold
/// it. No firmware command: an mlx5 AH is the address vector in the WQE.
///
/// # Errors
///
/// `EINVAL` for a RoCE AH without a GRH, or a user response too short for the MAC.
pub(crate) fn create_ah(
    pd: &Pd<Mlx5Ib>,
    attr: &AhAttr,
    user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
) -> Result<Mlx5Ah> {
    let dev = pd.device().data();
    let link_layer = dev.hw.identity().link_layer;
    if link_layer == LinkLayer::Ethernet {
        if attr.grh.is_none() {
            return Err(EINVAL);
        }
        if let Some(u) = user {
            let udata = u.udata();
            if udata.outlen() < CREATE_AH_RESP_MIN {
                return Err(EINVAL);
            }
            let mut resp = [0u8; CREATE_AH_RESP_MIN];
            resp[..4].copy_from_slice(&(CREATE_AH_RESP_MIN as u32).to_ne_bytes());
            resp[4..].copy_from_slice(&attr.dmac);
            udata.copy_to(&resp);
        }
    }
    Ok(Mlx5Ah)
}
