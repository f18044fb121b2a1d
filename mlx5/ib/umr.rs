// SPDX-License-Identifier: GPL-2.0

//! The driver's UMR QP and the UMR WQEs it posts (upstream umr.c): an MR's access flags and
//! PD changed in place, keeping its keys (`mlx5r_umr_rereg_pd_access()`), and a user MR's
//! new translation loaded into its mkey (`mlx5r_umr_revoke_mr()`, then
//! `mlx5r_umr_update_mr_pas()` with `MLX5_IB_UPD_XLT_ENABLE`).
//!
//! Upstream creates the UMR QP (`MLX5_IB_QPT_REG_UMR`, PRM `st` REG_UMR, no PD in its
//! context) with its CQ at the first user MR (`mlx5r_umr_resource_init()`) and keeps them until
//! the device goes; here [`UmrQp`] is made for one re-registration and destroyed after it, so
//! a function holds no UMR objects between calls (the checks of what a bound function holds
//! stay as they are). The QP goes RESET->INIT->RTR->RTS with no attributes
//! (`mlx5r_umr_qp_rst2rts()`), its WQE is posted with an initiator-small fence and waited for
//! (`mlx5r_umr_post_send_wait()`, which sleeps on a completion; here the CQ is polled).
//!
//! A translation update carries its MTTs (page addresses with `MLX5_IB_MTT_PRESENT`, padded
//! to `MLX5_UMR_FLEX_ALIGNMENT`) in a device-coherent buffer the WQE's data segment points
//! at through the lkey of a PA mkey of the UMR QP's PD (upstream: `umrc.pd->local_dma_lkey`,
//! the DMA MR `ib_alloc_pd()` makes for a device without a local DMA lkey). Upstream splits
//! a large translation over several WQEs with translation offsets; here one WQE carries it,
//! so at most one page of MTTs ([`XLT_MAX`]); a larger translation takes a new mkey.

use crate::cmd::exec;
use crate::cmd::res::{CreateMkey, MkeyAccess, MkeyTranslation};
use crate::hw::DmaBuf;
use crate::ib::device::{gen, Mlx5Ib};
use crate::ib::mkey::destroy_mkey;
use crate::ib::qp::wr::post_umr;
use crate::prm::ctx::{cmd_hca_cap, mkc};
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
/// `MLX5_UMR_CHECK_NOT_FREE` (1: the WQE fails on an mkey in use).
const CHECK_NOT_FREE: u8 = 1 << 5;
/// `MLX5_UMR_TRANSLATION_OFFSET_EN`.
const TRANSLATION_OFFSET_EN: u8 = 1 << 4;
/// `MLX5_MKEY_MASK_LEN`, `_PAGE_SIZE`, `_START_ADDR` (`get_umr_update_translation_mask()`).
const MASK_TRANSLATION: u64 = 1 << 0 | 1 << 1 | 1 << 6;
/// `MLX5_MKEY_MASK_KEY`.
const MASK_KEY: u64 = 1 << 13;
/// `MLX5_MKEY_MASK_FREE`.
const MASK_FREE: u64 = 1 << 29;
/// `MLX5_IB_MTT_PRESENT` (`MLX5_IB_MTT_READ | MLX5_IB_MTT_WRITE`).
const MTT_PRESENT: u64 = 3;
/// `MLX5_UMR_FLEX_ALIGNMENT`: an XLT is padded to it.
const FLEX_ALIGNMENT: usize = 0x40;
/// `MLX5_MAX_UMR_PAGES`: without `umr_extended_translation_offset` (which the device does
/// not report) a translation by UMR covers less than this many pages.
const MAX_UMR_PAGES: u64 = 1 << 16;
/// MTTs one translation-update WQE carries here: one page of them (the coherent buffer's
/// pages are not bus-contiguous).
pub(crate) const XLT_MAX: usize = kernel::page::PAGE_SIZE / 8;
/// The update WQE: the UMR control and mkey segments, then a data segment.
const XLT_BODY: usize = BODY + 16;
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

/// upstream `mlx5r_umr_can_load_pas()`: a device without `umr_modify_entity_size_disabled`;
/// without `umr_extended_translation_offset` fewer than [`MAX_UMR_PAGES`] pages.
///
/// # Errors
///
/// The errno of reading the capabilities.
pub(crate) fn can_load_pas(dev: &Device<Mlx5Ib>, length: u64) -> Result<bool> {
    let g = gen(dev.data())?;
    if g.flag(cmd_hca_cap::umr_modify_entity_size_disabled) {
        return Ok(false);
    }
    Ok(length < MAX_UMR_PAGES * kernel::page::PAGE_SIZE as u64)
}

/// The mkey segment's access byte (`mlx5r_umr_set_access_flags()`): a, rw, rr, lw, lr (bits
/// 6..2), local read always.
fn access_byte(access: AccessFlags) -> u8 {
    let has = |f: AccessFlags| access.0 & f.0 != 0;
    u8::from(has(AccessFlags::REMOTE_ATOMIC)) << 6
        | u8::from(has(AccessFlags::REMOTE_WRITE)) << 5
        | u8::from(has(AccessFlags::REMOTE_READ)) << 4
        | u8::from(has(AccessFlags::LOCAL_WRITE)) << 3
        | 1 << 2
}

/// The UMR WQE of `mlx5r_umr_revoke_mr()`: `MLX5_MKEY_MASK_PD | MLX5_MKEY_MASK_FREE`,
/// `INLINE`; the mkey segment free, in the UMR QP's PD `pdn`, `qpn` 0xffffff, the key's
/// variant byte.
fn revoke_wqe(key: u32, pdn: u32) -> [u8; BODY] {
    let mut b = [0u8; BODY];
    b[0] = INLINE;
    b[8..16].copy_from_slice(&(MASK_PD | MASK_FREE).to_be_bytes());
    let m = &mut b[CTRL..];
    m[0] = 1 << 6;
    m[4..8].copy_from_slice(&(0xff_ffff << 8 | (key & 0xff)).to_be_bytes());
    m[12..16].copy_from_slice(&(pdn & 0xff_ffff).to_be_bytes());
    b
}

/// A new translation of [`UmrQp::update_pas`].
pub(crate) struct Pas<'a> {
    /// The I/O virtual address it starts at (`mr->ibmr.iova`).
    pub(crate) iova: u64,
    /// Its length (`mr->ibmr.length`).
    pub(crate) len: u64,
    /// The bus address of each `PAGE_SIZE` page.
    pub(crate) pages: &'a [u64],
}

/// The UMR WQE of `_mlx5r_umr_update_mr_pas()` with `MLX5_IB_UPD_XLT_ENABLE` in one WQE
/// (`mlx5r_umr_final_update_xlt()`): `CHECK_NOT_FREE | TRANSLATION_OFFSET_EN` at offset 0,
/// `xlt_octowords` of the padded XLT (`bytes`); the mask enables the mkey with its key and
/// sets access, PD and translation; the mkey segment as `mlx5r_umr_set_update_xlt_mkey_seg()`;
/// the data segment points at the XLT through `lkey`.
fn update_pas_wqe(
    key: u32,
    pdn: u32,
    access: AccessFlags,
    atomic_cap: bool,
    pas: &Pas<'_>,
    xlt: (u32, u64, usize),
) -> Result<[u8; XLT_BODY]> {
    let (lkey, addr, bytes) = xlt;
    let mut b = [0u8; XLT_BODY];
    b[0] = CHECK_NOT_FREE | TRANSLATION_OFFSET_EN;
    let octo = u16::try_from(bytes / 16).map_err(|_| EINVAL)?;
    b[4..6].copy_from_slice(&octo.to_be_bytes());
    let mut mask = MASK_KEY | MASK_FREE | MASK_LR_LW_RR_RW | MASK_PD | MASK_TRANSLATION;
    if atomic_cap {
        mask |= MASK_A;
    }
    b[8..16].copy_from_slice(&mask.to_be_bytes());
    let m = &mut b[CTRL..BODY];
    m[2] = access_byte(access);
    m[4..8].copy_from_slice(&(0xff_ffff << 8 | (key & 0xff)).to_be_bytes());
    m[12..16].copy_from_slice(&(pdn & 0xff_ffff).to_be_bytes());
    m[16..24].copy_from_slice(&pas.iova.to_be_bytes());
    m[24..32].copy_from_slice(&pas.len.to_be_bytes());
    mkc::log_page_size
        .set(m, kernel::page::PAGE_SHIFT as u32)
        .map_err(|_| EINVAL)?;
    let d = &mut b[BODY..];
    d[0..4].copy_from_slice(&u32::try_from(bytes).map_err(|_| EINVAL)?.to_be_bytes());
    d[4..8].copy_from_slice(&lkey.to_be_bytes());
    d[8..16].copy_from_slice(&addr.to_be_bytes());
    Ok(b)
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
    m[2] = access_byte(access);
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
    /// The PA mkey of `pd` a data segment's lkey names (index, key), once a translation is
    /// loaded.
    dma_mkey: Option<(u32, u32)>,
    /// The XLT buffer.
    xlt: Option<DmaBuf>,
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
        self.xlt = None;
        if let (Some((index, _)), Some(pd)) = (self.dma_mkey.take(), &self.pd) {
            let hw = &*pd.device().data().hw;
            if destroy_mkey(hw, index).is_err() {
                let _ = destroy_mkey(hw, index);
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
    /// (one send WQE of ctrl + UMR ctrl + mkey segment + one data segment, every WQE
    /// signaled) moved to RTS on port 1.
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
            dma_mkey: None,
            xlt: None,
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
                    max_send_sge: 1,
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

    /// upstream `mlx5r_umr_revoke_mr()`: the mkey `key` free, in the UMR QP's PD; no key
    /// reaches it until a UMR enables it again.
    ///
    /// # Errors
    ///
    /// As [`Self::post_wait`].
    pub(crate) fn revoke(&self, key: u32) -> Result {
        let pdn = self.pd.as_ref().ok_or(EINVAL)?.data().pdn;
        self.post_wait(key, &revoke_wqe(key, pdn))
    }

    /// upstream `mlx5r_umr_update_mr_pas()` with `MLX5_IB_UPD_XLT_ENABLE` (and the PD and
    /// access flags, as `umr_rereg_pas()` passes them) on a revoked mkey `key`: the MTTs of
    /// `pas` written to the XLT buffer, one WQE loading them with the new start, length,
    /// page size, PD `pdn` and rights, enabling the mkey.
    ///
    /// # Errors
    ///
    /// `EINVAL` for more than [`XLT_MAX`] pages; as [`Self::prepare_xlt`] and
    /// [`Self::post_wait`].
    pub(crate) fn update_pas(
        &mut self,
        dev: &Device<Mlx5Ib>,
        key: u32,
        pdn: u32,
        access: AccessFlags,
        pas: &Pas<'_>,
    ) -> Result {
        if pas.pages.len() > XLT_MAX {
            return Err(EINVAL);
        }
        self.prepare_xlt(dev)?;
        let d = dev.data();
        let lkey = self.dma_mkey.map_or(0, |(_, k)| k);
        let xlt = self.xlt.as_ref().ok_or(EINVAL)?;
        let bytes = (pas.pages.len() * 8).next_multiple_of(FLEX_ALIGNMENT);
        let mut entries = [0u8; FLEX_ALIGNMENT];
        for (i, chunk) in pas.pages.chunks(FLEX_ALIGNMENT / 8).enumerate() {
            entries.fill(0);
            for (e, page) in entries.chunks_exact_mut(8).zip(chunk) {
                e.copy_from_slice(&(page | MTT_PRESENT).to_be_bytes());
            }
            xlt.write(i * FLEX_ALIGNMENT, &entries)?;
        }
        let atomic = gen(d)?.flag(cmd_hca_cap::atomic);
        let wqe = update_pas_wqe(key, pdn, access, atomic, pas, (lkey, xlt.bus(0), bytes))?;
        self.post_wait(key, &wqe)
    }

    /// What a translation update needs besides the QP: the PA mkey of the QP's PD whose lkey
    /// the data segment carries (upstream's exists with the UMR PD) and the XLT buffer.
    ///
    /// # Errors
    ///
    /// `ENOMEM`; CREATE_MKEY's errno.
    pub(crate) fn prepare_xlt(&mut self, dev: &Device<Mlx5Ib>) -> Result {
        let d = dev.data();
        if self.dma_mkey.is_none() {
            let pd = self.pd.as_ref().ok_or(EINVAL)?;
            let m = exec(
                &*d.hw,
                &CreateMkey {
                    uid: 0,
                    pd: pd.data().pdn,
                    access: MkeyAccess {
                        remote_atomic: false,
                        remote_write: false,
                        remote_read: false,
                        local_write: false,
                    },
                    key_byte: d.next_mkey_variant(),
                    translation: MkeyTranslation::Pa,
                },
            )?;
            self.dma_mkey = Some((m.index, m.key));
        }
        if self.xlt.is_none() {
            self.xlt = Some(d.hw.alloc_coherent(kernel::page::PAGE_SIZE)?);
        }
        Ok(())
    }
}
