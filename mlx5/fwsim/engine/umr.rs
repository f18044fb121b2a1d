// SPDX-License-Identifier: GPL-2.0

//! Memory windows: the UMR WQEs that bind and invalidate them, and the invalidation a SEND
//! with invalidate asks of its responder.
//!
//! A UMR WQE as libmlx5 44 builds a window bind (`set_bind_wr()`, qp.c): after the control
//! segment `struct mlx5_wqe_umr_ctrl_seg` (48 bytes), `struct mlx5_wqe_mkey_context_seg` (64),
//! then, for a bind, one `struct mlx5_wqe_umr_klm_seg` padded to 64 bytes. The control
//! segment's immediate is the window's current key. The constants below are that layout's.
//!
//! The same WQE configures an indirect mkey (`mlx5dv_create_mkey()`, then
//! `mlx5dv_wr_mr_list()` or `mlx5dv_wr_mr_interleaved()`: `mlx5_send_wr_mkey_configure()` and
//! `mlx5_send_wr_set_mkey_layout()`): no `START_ADDR` in the mask (the key stays zero-based),
//! `LEN` the bytes mapped, and inline after the mkey context `klm_octowords` octowords of
//! translation: a list of KLMs (`byte_count`, `mkey`, `address`, each 16 bytes), or a repeated
//! block (`struct mlx5_wqe_umr_repeat_block_seg`: `byte_count`, `op` 0x400, `repeat_count`,
//! `num_ent`, then entries of `stride`, `byte_count` (16 bits each), `memkey`, `va`). The
//! repeated block maps, `repeat_count` times, each entry's `byte_count` bytes in order, the
//! entry's address moving on by its `stride` each repetition. The model resolves the layout
//! when the WQE executes into at most [`crate::fwsim::xlat::MAX_RUNS`] bus-contiguous runs
//! and at most [`MAX_ENTRY_USES`] entry uses (more is `MW_BIND`, a model limit), and checks
//! at each use of the key that the entries' mkeys still live.
//!
//! A UMR WQE on an MR's mkey changes its PD, rights and key byte in place ([`update_mr`]).

use super::completer::ReqRes;
use super::mem::mkey;
use super::qp_state::{be16, be32, be64, Snap, Wqe};
use crate::fwsim::xlat::{Access, Binding, Fragmented, Indirect, MkeyMap, Xlat, NO_QPN};
use crate::fwsim::Fw;
use crate::prm::consts::{QPC_ST_RC, QPC_ST_REG_UMR, QPC_ST_UC};
use crate::prm::ctx::mkc;
use crate::prm::wqe::syndrome as syn;

/// `flags` (u8) of the UMR control segment.
pub(crate) const FLAGS: usize = 16;
/// `mkey_mask` (be64).
pub(crate) const MKEY_MASK: usize = 24;
/// The mkey context segment.
pub(crate) const MKC: usize = 64;
/// The KLM.
pub(crate) const KLM: usize = 128;
/// `klm_octowords` (be16) of the UMR control segment.
pub(crate) const KLM_OCTOWORDS: usize = 20;
/// `op` of a repeated block (`umr_strided_seg_create()`).
pub(crate) const REPEAT_BLOCK_OP: u32 = 0x400;
/// Entry uses a repeated block may ask for (`repeat_count` times its entries): bounds the
/// work of one WQE.
pub(crate) const MAX_ENTRY_USES: u64 = 1 << 12;
/// `MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE`: a type 2 bind needs a free window.
pub(crate) const CHECK_FREE: u8 = 1 << 5;
/// `MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN`: a type 2 invalidation must come from the bound QP.
pub(crate) const CHECK_QPN: u8 = 1 << 3;
/// `MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN`.
pub(crate) const MASK_LEN: u64 = 1 << 0;
/// `MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR`.
pub(crate) const MASK_START_ADDR: u64 = 1 << 6;
/// `MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY`: the key's low byte.
pub(crate) const MASK_MKEY: u64 = 1 << 13;
/// `MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN`.
pub(crate) const MASK_QPN: u64 = 1 << 14;
/// `MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE`.
pub(crate) const MASK_FREE: u64 = 1 << 29;
/// `MLX5_WQE_MKEY_CONTEXT_FREE` (the context's `free` byte).
pub(crate) const CTX_FREE: u8 = 1 << 6;
/// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_*`: atomic, remote write, remote read, local write.
pub(crate) const ACC_ATOMIC: u8 = 1 << 6;
/// Remote write.
pub(crate) const ACC_REMOTE_WRITE: u8 = 1 << 5;
/// Remote read.
pub(crate) const ACC_REMOTE_READ: u8 = 1 << 4;
/// Local write.
pub(crate) const ACC_LOCAL_WRITE: u8 = 1 << 3;

/// Executes a UMR WQE of requester `s` (a memory window's bind or local invalidation, as
/// libmlx5 44 posts them for `ibv_bind_mw()`, `IBV_WR_BIND_MW` and `IBV_WR_LOCAL_INV`). The
/// checks are the IB spec's that the device can make (`MW_BIND_ERR` otherwise): the window
/// exists with the key in the immediate and is of the QP's PD (C10-72); a bind with
/// `CHECK_FREE` (type 2) needs a free window; the MR's key names a live MR (not a window) of
/// the QP's PD; the range lies inside the MR, is not empty and is not zero-based (not
/// modeled); remote write or atomic rights need the MR's local write (C10-74); an invalidation
/// with `CHECK_QPN` (type 2) must come from the QP the window is bound to. The MR's
/// `IBV_ACCESS_MW_BIND` is not checked: the mkey context has no such right (upstream mlx5_ib
/// does not pass it to the device). The key's low byte becomes the context's
/// (`MASK_MKEY`), except on a type 2 invalidation. Only RC and UC QPs and upstream's UMR QP
/// (`REG_UMR`) post UMR WQEs (`LOCAL_QP_OP_ERR` otherwise). A WQE without `START_ADDR` gives
/// the mkey an indirect layout ([`layout`]); one on an MR's mkey is [`update_mr`].
pub(super) fn exec_umr(fw: &mut Fw, s: &Snap, w: &Wqe, buf: &[u8]) -> ReqRes {
    if !matches!(s.st, QPC_ST_RC | QPC_ST_UC | QPC_ST_REG_UMR) || w.len < KLM {
        return ReqRes::Err(syn::LOCAL_QP_OP);
    }
    let bind_err = ReqRes::Err(syn::MW_BIND);
    let key = u32::from_be_bytes(w.imm);
    let flags = buf.get(FLAGS).copied().unwrap_or(0);
    let mask = be64(buf, MKEY_MASK);
    let ctx_free = buf.get(MKC).copied().unwrap_or(0) & CTX_FREE != 0;
    let qpn_mkey = be32(buf, MKC + 4);
    let Some(m) = fw.mkeys.get(key >> 8) else {
        return bind_err;
    };
    let Some(win) = m.win else {
        return update_mr(fw, s, key, buf);
    };
    if m.info.key_byte != (key & 0xff) as u8 || m.pd != s.pd {
        return bind_err;
    }
    let invalidate = mask & MASK_FREE != 0 && ctx_free;
    let mut indirect = None;
    let bound = if invalidate {
        if flags & CHECK_QPN != 0 && win.bound.is_some_and(|b| b.qpn != s.qpn) {
            return bind_err;
        }
        None
    } else if mask & MASK_START_ADDR == 0 {
        match layout(fw, s, w, buf, mask) {
            Ok(l) => indirect = Some(l),
            Err(e) => return e,
        }
        None
    } else {
        match binding(fw, s, w, buf, mask, win.bound.is_some()) {
            Ok(b) => Some(b),
            Err(e) => return e,
        }
    };
    if let Some(m) = fw.mkeys.get_mut(key >> 8) {
        // libmlx5's IBV_WR_LOCAL_INV carries key byte 0 and keeps `mw->rkey`, whose next
        // bind names it: an invalidation with CHECK_QPN keeps the key (a type 1 unbind by
        // ibv_bind_mw() takes the new one the library also takes).
        if mask & MASK_MKEY != 0 && !(invalidate && flags & CHECK_QPN != 0) {
            m.info.key_byte = (qpn_mkey & 0xff) as u8;
        }
        if let Some(w) = m.win.as_mut() {
            w.bound = bound;
            w.indirect = indirect.map(|(_, _, keys)| keys);
        }
        // An indirect key's translation and rights are the mkey's own; a window's are its
        // MR's (`mem::remote_key()`).
        (m.info.map, m.info.access) = match indirect {
            Some((map, access, _)) => (map, access),
            None => (MkeyMap::Indirect, m.info.access),
        };
    }
    ReqRes::Ok { byte_cnt: 0 }
}

/// A SEND with invalidate's invalidation at responder `d` (IB spec 10.6.7.2.x): the rkey must
/// name a bound window of `d`'s PD created with `en_rinval` (type 2) and bound to `d`. False
/// when it may not be invalidated.
pub(super) fn remote_invalidate(fw: &mut Fw, key: u32, d: &Snap) -> bool {
    let Some(m) = fw.mkeys.get_mut(key >> 8) else {
        return false;
    };
    if m.info.key_byte != (key & 0xff) as u8 || m.pd != d.pd {
        return false;
    }
    match m.win.as_mut() {
        Some(w) if w.remote_inval && w.bound.is_some_and(|b| b.qpn == d.qpn) => {
            w.bound = None;
            true
        }
        // An indirect mkey created with `en_rinval` (MLX5DV_MKEY_INIT_ATTR_FLAGS_REMOTE_
        // INVALIDATE): its `qpn` is 0xffffff, any QP of its PD may invalidate it.
        Some(w) if w.remote_inval && w.indirect.is_some() => {
            w.indirect = None;
            m.info.map = MkeyMap::Indirect;
            true
        }
        _ => false,
    }
}

/// `MLX5_MKEY_MASK_PD`.
pub(crate) const MASK_PD: u64 = 1 << 7;
/// `MLX5_MKEY_MASK_LR`, `_LW`, `_RR`, `_RW`, `_A`: the access bits (bits 17..=21).
pub(crate) const MASK_ACCESS: u64 = 0x1f << 17;
/// `MLX5_MKEY_MASK_SMALL_FENCE` (no effect in the model).
pub(crate) const MASK_SMALL_FENCE: u64 = 1 << 23;
/// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_READ`.
pub(crate) const ACC_LOCAL_READ: u8 = 1 << 2;

/// A UMR WQE on an MR's mkey (not a window), as upstream `mlx5r_umr_rereg_pd_access()`
/// posts it on its UMR QP for `ibv_rereg_mr()` of the PD or access flags: the mkey context
/// segment is the `mkc`, and the mask names what changes. The model executes the PD, the
/// access bits (each masked bit takes the segment's: `MLX5_MKEY_MASK_LR`..`_A`) and the key's
/// low byte (`MLX5_MKEY_MASK_KEY`), keeping the key's index, on an mkey created with `umr_en`,
/// in place; the key must carry the mkey's current low byte, and a QP other than the UMR QP
/// (`MLX5_QP_ST_REG_UMR`, which has no PD) must be of the mkey's PD. Translation updates
/// (`LEN`, `START_ADDR`, page size, KLMs), `FREE` and other bits are `MW_BIND_ERR` (as the
/// capability `umr_modify_entity_size_disabled` tells a driver).
fn update_mr(fw: &mut Fw, s: &Snap, key: u32, buf: &[u8]) -> ReqRes {
    let bind_err = ReqRes::Err(syn::MW_BIND);
    let mask = be64(buf, MKEY_MASK);
    let supported = MASK_PD | MASK_ACCESS | MASK_MKEY | MASK_QPN | MASK_SMALL_FENCE;
    let Some(m) = fw.mkeys.get(key >> 8) else {
        return bind_err;
    };
    if m.info.key_byte != (key & 0xff) as u8
        || (s.st != QPC_ST_REG_UMR && m.pd != s.pd)
        || mkc::umr_en.get(&m.mkc) != Ok(1)
        || mask & !supported != 0
        || be16(buf, KLM_OCTOWORDS) != 0
    {
        return bind_err;
    }
    let (uid, old_pd) = (m.uid, m.pd);
    let pd = if mask & MASK_PD != 0 {
        be32(buf, MKC + 12) & 0x00ff_ffff
    } else {
        old_pd
    };
    if pd != old_pd && fw.pd_usable(uid, pd).is_err() {
        return bind_err;
    }
    let acc = buf.get(MKC + 2).copied().unwrap_or(0);
    let new_byte = (be32(buf, MKC + 4) & 0xff) as u8;
    let Some(m) = fw.mkeys.get_mut(key >> 8) else {
        return bind_err;
    };
    for (i, (f, right, bit)) in [
        (mkc::lr, Access::LOCAL_READ, ACC_LOCAL_READ),
        (mkc::lw, Access::LOCAL_WRITE, ACC_LOCAL_WRITE),
        (mkc::rr, Access::REMOTE_READ, ACC_REMOTE_READ),
        (mkc::rw, Access::REMOTE_WRITE, ACC_REMOTE_WRITE),
        (mkc::a, Access::ATOMIC, ACC_ATOMIC),
    ]
    .into_iter()
    .enumerate()
    {
        if mask & (1 << (17 + i)) == 0 {
            continue;
        }
        let on = acc & bit != 0;
        m.info.access.0 = if on {
            m.info.access.0 | right.0
        } else {
            m.info.access.0 & !right.0
        };
        let _ = f.set(&mut m.mkc, u32::from(on));
    }
    if mask & MASK_PD != 0 {
        m.pd = pd;
        let _ = mkc::pd.set(&mut m.mkc, pd);
    }
    if mask & MASK_MKEY != 0 {
        m.info.key_byte = new_byte;
        let _ = mkc::mkey_7_0.set(&mut m.mkc, u32::from(new_byte));
    }
    ReqRes::Ok { byte_cnt: 0 }
}

/// The rights of the mkey context segment's `access_flags` (local read always).
fn rights(acc: u8) -> Access {
    let mut a = Access::LOCAL_READ.0;
    for (bit, right) in [
        (ACC_LOCAL_WRITE, Access::LOCAL_WRITE),
        (ACC_REMOTE_READ, Access::REMOTE_READ),
        (ACC_REMOTE_WRITE, Access::REMOTE_WRITE),
        (ACC_ATOMIC, Access::ATOMIC),
    ] {
        if acc & bit != 0 {
            a |= right.0;
        }
    }
    Access(a)
}

/// The layout a configure WQE gives an indirect mkey (the module's comment), checked: the
/// mask has `LEN`; the translation fits the WQE; every entry with bytes names a live MR of
/// the QP's PD (not a window, not another indirect key) that covers the entry's range and,
/// when the key gets local or remote write or atomic rights, allows local write (as for a
/// window bind, C10-74); the entries map exactly `len` bytes. `MW_BIND` otherwise.
fn layout(
    fw: &Fw,
    s: &Snap,
    w: &Wqe,
    buf: &[u8],
    mask: u64,
) -> Result<(MkeyMap, Access, Indirect), ReqRes> {
    let bind_err = ReqRes::Err(syn::MW_BIND);
    let octo = usize::from(be16(buf, KLM_OCTOWORDS));
    let end = KLM + octo * 16;
    if mask & MASK_LEN == 0 || octo == 0 || w.len < end || buf.len() < end {
        return Err(bind_err);
    }
    let len = be64(buf, MKC + 24);
    let access = rights(buf.get(MKC + 2).copied().unwrap_or(0));
    let writes = Access::LOCAL_WRITE.0 | Access::REMOTE_WRITE.0 | Access::ATOMIC.0;
    let mut keys = Indirect::default();
    let mut xlat = Xlat::EMPTY;
    let mut add = |key: u32, va: u64, n: u64| -> Result<(), Fragmented> {
        if n == 0 {
            return Ok(());
        }
        let m = super::mem::mkey(fw, key, s.pd).ok_or(Fragmented)?;
        let win = fw.mkeys.get(key >> 8).is_some_and(|e| e.win.is_some());
        if win
            || !m.covers(va, n)
            || (access.0 & writes != 0 && !m.access.allows(Access::LOCAL_WRITE))
        {
            return Err(Fragmented);
        }
        keys.add_key(key)?;
        xlat.append(&m, va, n)
    };
    let data = buf.get(KLM..end).ok_or(bind_err)?;
    let res = if be32(data, 4) == REPEAT_BLOCK_OP {
        let repeat = u64::from(be32(data, 8));
        let n = usize::from(be16(data, 14));
        if 16 * (n + 1) > data.len() || repeat.saturating_mul(n as u64) > MAX_ENTRY_USES {
            return Err(bind_err);
        }
        (0..repeat).try_for_each(|r| {
            data.chunks_exact(16).skip(1).take(n).try_for_each(|e| {
                let stride = u64::from(be16(e, 0));
                let bytes = u64::from(be16(e, 2));
                let va = be64(e, 8).wrapping_add(r.wrapping_mul(stride));
                add(be32(e, 4), va, bytes)
            })
        })
    } else {
        data.chunks_exact(16)
            .try_for_each(|e| add(be32(e, 4), be64(e, 8), u64::from(be32(e, 0))))
    };
    if res.is_err() || xlat.len() != len {
        return Err(bind_err);
    }
    let map = MkeyMap::Mtt {
        start: 0,
        len,
        base: 0,
        xlat,
    };
    Ok((map, access, keys))
}

/// The binding a bind WQE asks for (`mask`: its `mkey_mask`), checked against the MR it
/// names and against the window's state (`bound`: it is bound now); the requester's error
/// otherwise.
fn binding(
    fw: &Fw,
    s: &Snap,
    w: &Wqe,
    buf: &[u8],
    mask: u64,
    bound: bool,
) -> Result<Binding, ReqRes> {
    let bind_err = ReqRes::Err(syn::MW_BIND);
    let flags = buf.get(FLAGS).copied().unwrap_or(0);
    let acc = buf.get(MKC + 2).copied().unwrap_or(0);
    let qpn_mkey = be32(buf, MKC + 4);
    if w.len < KLM + 16 {
        return Err(ReqRes::Err(syn::LOCAL_QP_OP));
    }
    if flags & CHECK_FREE != 0 && bound {
        return Err(bind_err);
    }
    let count = u64::from(be32(buf, KLM));
    let mr_key = be32(buf, KLM + 4);
    let addr = be64(buf, KLM + 8);
    let start = if mask & MASK_START_ADDR != 0 {
        be64(buf, MKC + 16)
    } else {
        addr
    };
    let len = if mask & MASK_LEN != 0 {
        be64(buf, MKC + 24)
    } else {
        count
    };
    let Some(mr) = mkey(fw, mr_key, s.pd) else {
        return Err(bind_err);
    };
    let a = rights(acc).0;
    let writes = Access(Access::REMOTE_WRITE.0 | Access::ATOMIC.0);
    if start != addr
        || len != count
        || len == 0
        || !mr.covers(start, len)
        || (a & writes.0 != 0 && !mr.access.allows(Access::LOCAL_WRITE))
    {
        return Err(bind_err);
    }
    Ok(Binding {
        mr_key,
        start,
        len,
        access: Access(a),
        qpn: if mask & MASK_QPN != 0 {
            qpn_mkey >> 8
        } else {
            NO_QPN
        },
    })
}
