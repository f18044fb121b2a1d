// SPDX-License-Identifier: GPL-2.0

//! DC targets (upstream qp.c: `create_dct()`, `mlx5_ib_modify_dct()`, `mlx5_ib_destroy_dct()`,
//! `mlx5_ib_dct_query_qp()`).
//!
//! A DCT is an `IB_QPT_DRIVER` QP created with `MLX5_QP_FLAG_TYPE_DCT`: creating it sends no
//! command, it only records the PD, SRQ, receive CQ, DC access key and user index. RESET->INIT
//! takes the access flags, P_Key index and port; INIT->RTR takes the RNR timer, the GRH fields
//! and the MTU, sends CREATE_DCT, and answers the DCT number in the modify response
//! (`struct mlx5_ib_modify_qp_resp`, libmlx5's `modify_dct()` reads `dctn` from it). No other
//! transition exists for a DCT. Destroying a created DCT drains it (DRAIN_DCT) and destroys it
//! (DESTROY_DCT); upstream `mlx5_core_destroy_dct()` waits for the DCT_DRAINED event in
//! between, which the simulated device raises at once (the driver does not wait).

use crate::cmd::exec;
use crate::cmd::qp::{CreateDct, DestroyDct, DrainDct};
use crate::hw::CapType;
use crate::ib::device::{gen, Mlx5Ib};
use crate::prm::ctx::{atomic_caps, cmd_hca_cap};
use ib_core_rs::attr::LinkLayer;
use ib_core_rs::verbs::{AccessFlags, Qp, QpAttr, QpAttrMask, QpState, Udata};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};

/// `MLX5_ATOMIC_MODE_IB_COMP` (upstream `get_atomic_mode()` when the device has 8-byte
/// compare-and-swap and fetch-and-add only).
const ATOMIC_MODE_IB_COMP: u8 = 1;
/// `MLX5_ATOMIC_OPS_CMP_SWAP | MLX5_ATOMIC_OPS_FETCH_ADD`.
const ATOMIC_OPS_CS_FA: u32 = 0x3;

/// What a DCT keeps until CREATE_DCT (upstream `qp->dct.in`), and its number afterwards.
pub(crate) struct DctInit {
    /// The owner uid (the PD's).
    pub(crate) uid: u16,
    pd: u32,
    srqn: u32,
    cqn: u32,
    access_key: u64,
    uidx: u32,
    ece: u32,
    /// The DCT number once CREATE_DCT ran (0 before: DCT numbers are QP numbers, never 0).
    dctn: Atomic<u32>,
}

impl DctInit {
    /// The parameters of a DCT created on PD `pd` (uid `uid`), receiving from SRQ `srqn` onto
    /// CQ `cqn`, with DC access key `access_key`, user index `uidx` and ECE options `ece`.
    pub(crate) fn new(
        uid: u16,
        pd: u32,
        srqn: u32,
        cqn: u32,
        access_key: u64,
        uidx: u32,
        ece: u32,
    ) -> Self {
        Self {
            uid,
            pd,
            srqn,
            cqn,
            access_key,
            uidx,
            ece,
            dctn: Atomic::new(0),
        }
    }
}

/// upstream `is_valid_mask()`: every required attribute, nothing beyond the optional ones.
fn valid_mask(mask: QpAttrMask, req: QpAttrMask, opt: QpAttrMask) -> bool {
    mask.contains(req) && mask.0 & !(req.0 | opt.0) == 0
}

/// upstream `get_atomic_mode()` for a DCT: `EOPNOTSUPP` without 8-byte compare-and-swap and
/// fetch-and-add on DC (`atomic_size_dc`).
fn atomic_mode(qp: &Qp<Mlx5Ib>) -> Result<u8> {
    let d = qp.device().data();
    if gen(d)?.get(cmd_hca_cap::atomic) == 0 {
        return Err(EOPNOTSUPP);
    }
    let a = d.hw.caps(CapType::Atomic).ok_or(EOPNOTSUPP)?;
    let ops = atomic_caps::atomic_operations.get(a).map_err(|_| EIO)?;
    let size_dc = atomic_caps::atomic_size_dc.get(a).map_err(|_| EIO)?;
    if ops & ATOMIC_OPS_CS_FA == ATOMIC_OPS_CS_FA && size_dc & (1 << 3) != 0 {
        Ok(ATOMIC_MODE_IB_COMP)
    } else {
        Err(EOPNOTSUPP)
    }
}

/// upstream `mlx5_ib_modify_dct()`: RESET->INIT and INIT->RTR (which creates the DCT and
/// answers its number in `udata`); anything else is `EINVAL`.
///
/// # Errors
///
/// `EINVAL` for another transition, a mask upstream refuses, a bad port or a response too
/// short for `dctn`; `EOPNOTSUPP` for remote atomics the device cannot do on DC; CREATE_DCT's
/// errno.
pub(crate) fn modify(
    qp: &Qp<Mlx5Ib>,
    init: &DctInit,
    st: &mut QpAttr,
    attr: &QpAttr,
    mask: QpAttrMask,
    udata: Option<&mut Udata<'_>>,
) -> Result {
    use QpAttrMask as M;
    let d = qp.device().data();
    if !mask.contains(M::STATE) {
        return Err(EINVAL);
    }
    match (st.qp_state, attr.qp_state) {
        (QpState::Reset, QpState::Init) => {
            if !valid_mask(
                mask,
                M::STATE | M::ACCESS_FLAGS | M::PKEY_INDEX | M::PORT,
                M(0),
            ) {
                return Err(EINVAL);
            }
            if d.port(attr.port_num).is_err() {
                return Err(EINVAL);
            }
            if attr.qp_access_flags & AccessFlags::REMOTE_ATOMIC.0 != 0 {
                atomic_mode(qp)?;
            }
            st.qp_access_flags = attr.qp_access_flags;
            st.pkey_index = attr.pkey_index;
            st.port_num = attr.port_num;
        }
        (QpState::Init, QpState::Rtr) => {
            let udata = udata.ok_or(EINVAL)?;
            // offsetofend(struct mlx5_ib_modify_qp_resp, dctn)
            if udata.outlen() < 8 {
                return Err(EINVAL);
            }
            if !valid_mask(
                mask,
                M::STATE | M::MIN_RNR_TIMER | M::AV | M::PATH_MTU,
                M(0),
            ) {
                return Err(EINVAL);
            }
            let f = st.qp_access_flags;
            let rae = f & AccessFlags::REMOTE_ATOMIC.0 != 0;
            let grh = attr.ah_attr.grh.unwrap_or_default();
            let eth = d.port(st.port_num)?.link_layer == LinkLayer::Ethernet;
            let c = CreateDct {
                uid: init.uid,
                pd: init.pd,
                srqn: init.srqn,
                cqn: init.cqn,
                access_key: init.access_key,
                user_index: init.uidx,
                rre_rwe_rae: (
                    f & AccessFlags::REMOTE_READ.0 != 0,
                    f & AccessFlags::REMOTE_WRITE.0 != 0,
                    rae,
                ),
                atomic_mode: if rae { atomic_mode(qp)? } else { 0 },
                pkey_index: st.pkey_index,
                port: u8::try_from(st.port_num).map_err(|_| EINVAL)?,
                counter_set_id: u8::try_from(d.qcnt_set()).unwrap_or(0),
                min_rnr_nak: attr.min_rnr_timer & 0x1f,
                tclass: grh.traffic_class,
                flow_label: grh.flow_label,
                mtu: attr.path_mtu,
                my_addr_index: grh.sgid_index,
                hop_limit: grh.hop_limit,
                eth_prio: eth.then_some(attr.ah_attr.sl & 7),
                ece: if gen(d)?.get(cmd_hca_cap::ece_support) != 0 {
                    init.ece
                } else {
                    0
                },
            };
            let (dctn, ece) = exec(&*d.hw, &c)?;
            init.dctn.store(dctn, Relaxed);
            // struct mlx5_ib_modify_qp_resp: response_length, dctn, ece_options, reserved;
            // a response too short for the ECE options says so in response_length.
            let len: u32 = if udata.outlen() < 16 { 8 } else { 16 };
            let mut resp = [0u8; 16];
            resp[0..4].copy_from_slice(&len.to_ne_bytes());
            resp[4..8].copy_from_slice(&dctn.to_ne_bytes());
            resp[8..12].copy_from_slice(&ece.to_ne_bytes());
            udata.copy_to(&resp[..len as usize]);
            st.min_rnr_timer = attr.min_rnr_timer;
            st.ah_attr = attr.ah_attr;
            st.path_mtu = attr.path_mtu;
        }
        _ => return Err(EINVAL),
    }
    st.qp_state = attr.qp_state;
    Ok(())
}

/// upstream `mlx5_ib_destroy_dct()`: a created DCT is drained and destroyed
/// (`mlx5_core_destroy_dct()`); one never moved to RTR has nothing in the device.
///
/// # Errors
///
/// The errno of DRAIN_DCT or DESTROY_DCT; the DCT stays then.
pub(crate) fn destroy(qp: &Qp<Mlx5Ib>, init: &DctInit) -> Result {
    let dctn = init.dctn.load(Relaxed);
    if dctn == 0 {
        return Ok(());
    }
    let d = qp.device().data();
    let hw = &*d.hw;
    // A DCT drained by an earlier, refused destroy is BAD_RES_STATE now: go on to DESTROY.
    let drained = exec(
        hw,
        &DrainDct {
            dctn,
            uid: init.uid,
        },
    );
    if let Err(e) = drained {
        if e != EINVAL {
            return Err(e);
        }
    }
    exec(
        hw,
        &DestroyDct {
            dctn,
            uid: init.uid,
        },
    )?;
    init.dctn.store(0, Relaxed);
    Ok(())
}
