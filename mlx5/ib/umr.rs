// SPDX-License-Identifier: GPL-2.0

//! The driver's UMR QP and the UMR WQEs it posts (upstream umr.c): an MR's access flags and
//! PD changed in place, keeping its keys (`mlx5r_umr_rereg_pd_access()`).
//!
//! Upstream creates the UMR QP (`MLX5_IB_QPT_REG_UMR`, PRM `st` REG_UMR, no PD in its
//! context) with its CQ at the first user MR (`mlx5r_umr_resource_init()`) and keeps them until
//! the device goes; here [`UmrQp`] is made for one re-registration and destroyed after it, so
//! a function holds no UMR objects between calls (the checks of what a bound function holds
//! stay as they are). The QP goes RESET->INIT->RTR->RTS with no attributes
//! (`mlx5r_umr_qp_rst2rts()`), its WQE is posted with an initiator-small fence and waited for
//! (`mlx5r_umr_post_send_wait()`, which sleeps on a completion; here the CQ is polled).
//!
//! Translation updates by UMR (`umr_rereg_pas()`, `mlx5r_umr_update_mr_pas()`) are not made:
//! the device reports `umr_modify_entity_size_disabled`, for which upstream's
//! `mlx5r_umr_can_load_pas()` is false, so upstream re-registers a new translation with a new
//! mkey too.

use crate::ib::device::{gen, Mlx5Ib};
use crate::ib::qp::wr::post_umr;
use crate::prm::ctx::cmd_hca_cap;
use ib_core_rs::device::Device;
use ib_core_rs::verbs::{
    AccessFlags, Cq, CqInitAttr, Pd, Qp, QpAttr, QpAttrMask, QpCap, QpInitAttr, QpState, QpType,
    Wc, WcStatus,
};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::time::{delay::fsleep, Delta};

/// `MLX5_UMR_CHECK_FREE` (`flags` of `struct mlx5_wqe_umr_ctrl_seg`, bits 6:5 = 2: the WQE
/// fails on a free mkey).
const CHECK_FREE: u8 = 2 << 5;
/// `MLX5_UMR_INLINE`.
const INLINE: u8 = 1 << 7;
/// `MLX5_MKEY_MASK_PD`.
const MASK_PD: u64 = 1 << 7;
/// `MLX5_MKEY_MASK_LR`, `_LW`, `_RR`, `_RW`: `get_umr_update_access_mask()`.
const MASK_LR_LW_RR_RW: u64 = 0xf << 17;
/// `MLX5_MKEY_MASK_A`.
const MASK_A: u64 = 1 << 21;
/// `struct mlx5_wqe_umr_ctrl_seg` (48 bytes), then `struct mlx5_mkey_seg` (64).
const CTRL: usize = 48;
const BODY: usize = CTRL + 64;
/// How long a UMR WQE may take (upstream waits without a bound; the simulator serves the QP
/// from its worker).
const WAIT_MS: u32 = 10_000;

fn owner() -> ib_core_rs::restrack::Owner {
    ib_core_rs::kernel_owner!()
}

/// upstream `can_use_umr_rereg_access()` and `mlx5r_umr_can_reconfig()`: only local write,
/// remote write, remote read, remote atomic and relaxed ordering may differ; atomics not when
/// the device has `atomic` and `umr_modify_atomic_disabled`.
///
/// # Errors
///
/// The errno of reading the capabilities.
pub(crate) fn can_rereg_access(
    dev: &Device<Mlx5Ib>,
    cur: AccessFlags,
    target: AccessFlags,
) -> Result<bool> {
    let diffs = cur.0 ^ target.0;
    let changeable = AccessFlags::LOCAL_WRITE.0
        | AccessFlags::REMOTE_WRITE.0
        | AccessFlags::REMOTE_READ.0
        | AccessFlags::RELAXED_ORDERING.0
        | AccessFlags::REMOTE_ATOMIC.0;
    if diffs & !changeable != 0 {
        return Ok(false);
    }
    let g = gen(dev.data())?;
    if diffs & AccessFlags::REMOTE_ATOMIC.0 != 0
        && g.flag(cmd_hca_cap::atomic)
        && g.flag(cmd_hca_cap::umr_modify_atomic_disabled)
    {
        return Ok(false);
    }
    // Relaxed ordering may change: the device reports neither `relaxed_ordering_write` nor
    // `relaxed_ordering_read`, for which upstream needs their `_umr` capabilities.
    Ok(true)
}

/// The UMR WQE of `mlx5r_umr_rereg_pd_access()` (after the control segment): the access mask
/// (with atomics when the device has them) and the PD mask, `CHECK_FREE | INLINE`, no
/// translation; the mkey segment with the new rights (local read always), `pdn`, `qpn`
/// 0xffffff and the key's variant byte.
fn rereg_pd_access_wqe(key: u32, pdn: u32, access: AccessFlags, atomic_cap: bool) -> [u8; BODY] {
    let mut b = [0u8; BODY];
    b[0] = CHECK_FREE | INLINE;
    let mut mask = MASK_LR_LW_RR_RW | MASK_PD;
    if atomic_cap {
        mask |= MASK_A;
    }
    b[8..16].copy_from_slice(&mask.to_be_bytes());
    let m = &mut b[CTRL..];
    let has = |f: AccessFlags| access.0 & f.0 != 0;
    // mkc byte 2: a, rw, rr, lw, lr (bits 6..2).
    m[2] = u8::from(has(AccessFlags::REMOTE_ATOMIC)) << 6
        | u8::from(has(AccessFlags::REMOTE_WRITE)) << 5
        | u8::from(has(AccessFlags::REMOTE_READ)) << 4
        | u8::from(has(AccessFlags::LOCAL_WRITE)) << 3
        | 1 << 2;
    m[4..8].copy_from_slice(&(0xff_ffff << 8 | (key & 0xff)).to_be_bytes());
    m[12..16].copy_from_slice(&(pdn & 0xff_ffff).to_be_bytes());
    b
}

/// The verbs objects of a UMR QP, destroyed in reverse order (upstream
/// `mlx5r_umr_resource_cleanup()`, `mlx5r_umr_cleanup()`).
pub(crate) struct UmrQp {
    pd: Option<Arc<Pd<Mlx5Ib>>>,
    cq: Option<Arc<Cq<Mlx5Ib>>>,
    qp: Option<Arc<Qp<Mlx5Ib>>>,
}

// A destroy the firmware refuses is made once more: these objects live for one call, and a
// refused destroy (a transient command failure, as the simulator's fault knob injects) must
// not leave them behind.
impl Drop for UmrQp {
    fn drop(&mut self) {
        if let Some(qp) = self.qp.take() {
            if let Err(e) = Qp::destroy(qp) {
                let _ = Qp::destroy(e.obj);
            }
        }
        if let Some(cq) = self.cq.take() {
            if let Err(e) = Cq::destroy(cq) {
                let _ = Cq::destroy(e.obj);
            }
        }
        if let Some(pd) = self.pd.take() {
            if let Err(e) = Pd::dealloc(pd) {
                let _ = Pd::dealloc(e.obj);
            }
        }
    }
}

impl UmrQp {
    /// upstream `mlx5r_umr_init()` and `mlx5r_umr_resource_init()`: a PD, a CQ, the UMR QP
    /// (one send WQE of ctrl + UMR ctrl + mkey segment, every WQE signaled) moved to RTS on
    /// port 1.
    ///
    /// # Errors
    ///
    /// The errors of the objects' creation and the QP's transitions; what was made is
    /// destroyed then.
    pub(crate) fn open(dev: &Arc<Device<Mlx5Ib>>) -> Result<Self> {
        let mut u = UmrQp {
            pd: None,
            cq: None,
            qp: None,
        };
        let pd = Pd::alloc(dev, owner())?;
        u.pd = Some(pd.clone());
        let cq = Cq::create(
            dev,
            &CqInitAttr {
                cqe: 4,
                comp_vector: 0,
                flags: 0,
            },
            None,
            owner(),
        )?;
        u.cq = Some(cq.clone());
        let qp = Qp::create(
            &pd,
            &QpInitAttr {
                send_cq: &cq,
                recv_cq: &cq,
                srq: None,
                qp_type: QpType::Driver,
                cap: QpCap {
                    max_send_wr: 1,
                    max_recv_wr: 0,
                    max_send_sge: 0,
                    max_recv_sge: 0,
                    max_inline_data: 0,
                },
                sq_sig_all: true,
                event_handler: None,
            },
            owner(),
        )?;
        u.qp = Some(qp.clone());
        qp.modify(
            &QpAttr {
                qp_state: QpState::Init,
                port_num: 1,
                ..QpAttr::default()
            },
            QpAttrMask::STATE | QpAttrMask::PORT,
        )?;
        for s in [QpState::Rtr, QpState::Rts] {
            qp.modify(
                &QpAttr {
                    qp_state: s,
                    ..QpAttr::default()
                },
                QpAttrMask::STATE,
            )?;
        }
        Ok(u)
    }

    /// upstream `mlx5r_umr_post_send_wait()`: posts the WQE and waits for its completion; an
    /// error completion is `EIO` (upstream then recovers the QP, `mlx5r_umr_recover()`; this
    /// QP is not used again).
    fn post_wait(&self, key: u32, body: &[u8]) -> Result {
        let (qp, cq) = match (&self.qp, &self.cq) {
            (Some(q), Some(c)) => (q, c),
            _ => return Err(EINVAL),
        };
        post_umr(qp, key, body, 1)?;
        let mut wc = [Wc::default()];
        for _ in 0..WAIT_MS {
            if cq.poll(&mut wc)? == 1 {
                return match wc[0].status {
                    WcStatus::Success => Ok(()),
                    _ => Err(EIO),
                };
            }
            fsleep(Delta::from_millis(1));
        }
        Err(ETIMEDOUT)
    }

    /// upstream `mlx5r_umr_rereg_pd_access()`: the mkey `key` takes PD `pdn` and the rights
    /// of `access`, in place.
    ///
    /// # Errors
    ///
    /// As [`Self::post_wait`]; the errno of reading the capabilities.
    pub(crate) fn rereg_pd_access(
        &self,
        dev: &Device<Mlx5Ib>,
        key: u32,
        pdn: u32,
        access: AccessFlags,
    ) -> Result {
        let atomic = gen(dev.data())?.flag(cmd_hca_cap::atomic);
        self.post_wait(key, &rereg_pd_access_wqe(key, pdn, access, atomic))
    }
}
