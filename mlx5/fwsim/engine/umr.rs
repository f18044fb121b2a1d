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
//! A UMR WQE on an MR's mkey changes its PD, rights and key byte, its free state and its
//! translation in place ([`update_mr`]).

use super::completer::ReqRes;
use super::mem::mkey;
use super::qp_state::{be16, be32, be64, Snap, Wqe};
use crate::fwsim::dma::DmaMem;
use crate::fwsim::xlat::{Access, Binding, Fragmented, Indirect, MkeyMap, Xlat, NO_QPN};
use crate::fwsim::Fw;
use crate::prm::consts::{MKC_ACCESS_MODE_MTT, QPC_ST_RC, QPC_ST_REG_UMR, QPC_ST_UC};
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
pub(super) fn exec_umr(fw: &mut Fw, mem: &dyn DmaMem, s: &Snap, w: &Wqe, buf: &[u8]) -> ReqRes {
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
        return update_mr(fw, mem, s, w, key, buf);
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

/// `MLX5_MKEY_MASK_PAGE_SIZE`.
pub(crate) const MASK_PAGE_SIZE: u64 = 1 << 1;
/// The translation bits of a mask (`get_umr_update_translation_mask()`).
pub(crate) const MASK_TRANSLATION: u64 = MASK_LEN | MASK_PAGE_SIZE | MASK_START_ADDR;
/// The free-state check of the control segment's `flags` (bits 6:5): upstream's
/// `MLX5_UMR_CHECK_NOT_FREE` (1, libmlx5's `CHECK_FREE`: the mkey must be free) and
/// `MLX5_UMR_CHECK_FREE` (2: the mkey must not be free).
pub(crate) const CHECK_STATE: u8 = 3 << 5;
/// `MLX5_UMR_CHECK_FREE` (upstream's name: "fail if free").
pub(crate) const CHECK_IN_USE: u8 = 2 << 5;
/// `MLX5_UMR_TRANSLATION_OFFSET_EN`: `xlt_offset` counts.
pub(crate) const TRANSLATION_OFFSET: u8 = 1 << 4;
/// `MLX5_UMR_INLINE`: the translation follows the mkey context in the WQE (otherwise a data
/// segment points at it).
pub(crate) const INLINE: u8 = 1 << 7;
/// `xlt_offset` (be16) and `xlt_offset_47_16` (be32) of the control segment.
pub(crate) const XLT_OFFSET: usize = 22;
/// See [`XLT_OFFSET`].
pub(crate) const XLT_OFFSET_HI: usize = 32;

/// A UMR WQE on an MR's mkey (not a window), as upstream posts them on its UMR QP: the mkey
/// context segment is the `mkc`, and the mask names what changes.
///
/// * `mlx5r_umr_rereg_pd_access()`: the PD, the access bits (each masked bit takes the
///   segment's: `MLX5_MKEY_MASK_LR`..`_A`) and the key's low byte (`MLX5_MKEY_MASK_KEY`);
/// * `mlx5r_umr_revoke_mr()`: `MLX5_MKEY_MASK_FREE` with the segment's `free` set disables
///   the mkey (no key reaches it, [`super::mem::revoked`]), and clear enables it again;
/// * `mlx5r_umr_update_mr_pas()`: a new translation of a direct (MTT) mkey, `xlt_octowords`
///   octowords of MTT entries (8 bytes each, the page's bus address; the low bits are
///   upstream's read/write flags), inline (`MLX5_UMR_INLINE`) or through the WQE's data
///   segment (`byte_count`, an lkey of the QP's PD or, on the UMR QP, of any PD, the address), with the new `start_addr`,
///   `len` and `log_page_size` (the mask's `START_ADDR`, `LEN`, `PAGE_SIZE`).
///
/// Checks, `MW_BIND_ERR` otherwise: the mkey was created with `umr_en`; the key carries its
/// current low byte; a QP other than the UMR QP (`MLX5_QP_ST_REG_UMR`, which has no PD) is of
/// the mkey's PD; the control segment's free-state check holds (bits 6:5, [`CHECK_STATE`]);
/// a new PD is usable by the mkey's owner. A translation needs the MTT access mode, a page size of
/// 4 KiB..1 TiB, not `length64`, and entries for every page of `[start, start + len)`, no
/// more of them than the mkey was created with room for (`translations_octword_size`: the
/// entity size upstream's `can_use_umr_rereg_pas()` compares); a data segment's lkey
/// must reach its bytes (`LOCAL_PROT_ERR` otherwise). Model limits (`MW_BIND_ERR`): the
/// translation is written whole by one WQE (offset 0, with the mask's translation bits, which
/// need it), and at most [`crate::fwsim::xlat::MAX_RUNS`] bus-contiguous runs unless the
/// backend aliases the pages at one bus range ([`DmaMem::alias`]; the mkey's alias is
/// released when a later translation needs none, and by the backend when the mkey is
/// destroyed). Other mask bits are refused too.
fn update_mr(fw: &mut Fw, mem: &dyn DmaMem, s: &Snap, w: &Wqe, key: u32, buf: &[u8]) -> ReqRes {
    let bind_err = ReqRes::Err(syn::MW_BIND);
    let mask = be64(buf, MKEY_MASK);
    let flags = buf.get(FLAGS).copied().unwrap_or(0);
    let supported = MASK_PD
        | MASK_ACCESS
        | MASK_MKEY
        | MASK_QPN
        | MASK_SMALL_FENCE
        | MASK_FREE
        | MASK_TRANSLATION;
    let Some(m) = fw.mkeys.get(key >> 8) else {
        return bind_err;
    };
    let free = mkc::free.get(&m.mkc) == Ok(1);
    let state_ok = match flags & CHECK_STATE {
        0 => true,
        CHECK_FREE => free,
        CHECK_IN_USE => !free,
        _ => false,
    };
    let octo = be16(buf, KLM_OCTOWORDS);
    if m.info.key_byte != (key & 0xff) as u8
        || (s.st != QPC_ST_REG_UMR && m.pd != s.pd)
        || mkc::umr_en.get(&m.mkc) != Ok(1)
        || mask & !supported != 0
        || !state_ok
        || (octo != 0) != (mask & MASK_TRANSLATION != 0)
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
    // Last of the checks: a translation that takes a device-side alias replaces the mkey's.
    let translation = if octo != 0 {
        match translation(fw, mem, s, w, buf, &m.mkc, mask, octo) {
            Ok(t) => Some(t),
            Err(e) => return e,
        }
    } else {
        None
    };
    let acc = buf.get(MKC + 2).copied().unwrap_or(0);
    let new_byte = (be32(buf, MKC + 4) & 0xff) as u8;
    let seg_free = buf.get(MKC).copied().unwrap_or(0) & CTX_FREE != 0;
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
    if let Some((map, shift)) = translation {
        if let MkeyMap::Mtt { start, len, .. } = map {
            let _ = mkc::start_addr.set64(&mut m.mkc, start);
            let _ = mkc::len.set64(&mut m.mkc, len);
        }
        let _ = mkc::log_page_size.set(&mut m.mkc, shift);
        m.info.map = map;
    }
    if mask & MASK_FREE != 0 {
        let _ = mkc::free.set(&mut m.mkc, u32::from(seg_free));
    }
    ReqRes::Ok { byte_cnt: 0 }
}

/// Bytes of MTT entries read from memory at a time.
const MTT_CHUNK: usize = 256;

/// The new translation of a direct mkey (context `cur`) that a UMR WQE carries ([`update_mr`]):
/// its map and `log_page_size`.
#[allow(clippy::too_many_arguments)]
fn translation(
    fw: &Fw,
    mem: &dyn DmaMem,
    s: &Snap,
    w: &Wqe,
    buf: &[u8],
    cur: &[u8],
    mask: u64,
    octo: u16,
) -> Result<(MkeyMap, u32), ReqRes> {
    let bind_err = ReqRes::Err(syn::MW_BIND);
    let g = |f: crate::prm::layout::Member<mkc::Bits>, b: &[u8]| f.get(b).unwrap_or(0);
    let seg = buf.get(MKC..KLM).ok_or(bind_err)?;
    let mode = (g(mkc::access_mode_4_2, cur) << 2) | g(mkc::access_mode_1_0, cur);
    let flags = buf.get(FLAGS).copied().unwrap_or(0);
    let offset = if flags & TRANSLATION_OFFSET != 0 {
        u64::from(be16(buf, XLT_OFFSET)) | u64::from(be32(buf, XLT_OFFSET_HI)) << 16
    } else {
        0
    };
    let pick = |bit: u64| if mask & bit != 0 { seg } else { cur };
    let shift = u64::from(g(mkc::log_page_size, pick(MASK_PAGE_SIZE)));
    let start = mkc::start_addr.get64(pick(MASK_START_ADDR)).unwrap_or(0);
    let len = mkc::len.get64(pick(MASK_LEN)).unwrap_or(0);
    if mode != MKC_ACCESS_MODE_MTT
        || offset != 0
        || !(12..=40).contains(&shift)
        || (mask & MASK_LEN != 0 && g(mkc::length64, seg) != 0)
    {
        return Err(bind_err);
    }
    let page = 1u64 << shift;
    let base = start & !(page - 1);
    let count = (start - base)
        .checked_add(len)
        .map(|span| span.div_ceil(page))
        .ok_or(bind_err)?;
    let bytes = usize::from(octo) * 16;
    // The XLT may run past the mkey's room by its padding (upstream pads it to
    // `MLX5_UMR_FLEX_ALIGNMENT` and makes its pool mkeys with `DIV_ROUND_UP(ndescs, 2)`
    // octowords); the pages the range needs must fit the room and the XLT.
    let room = 2 * u64::from(g(mkc::translations_octword_size, cur));
    if count > 2 * u64::from(octo) || count > room {
        return Err(bind_err);
    }
    let mut xlat = Xlat::EMPTY;
    let mut fragmented = false;
    let done = xlt_entries(fw, mem, s, w, buf, bytes, count, &mut |e| {
        if !fragmented && xlat.push_page(e, page).is_err() {
            fragmented = true;
        }
    })?;
    if done != count {
        return Err(bind_err);
    }
    // The mkey's index (the immediate is its key).
    let owner = u32::from_be_bytes(w.imm) >> 8;
    if fragmented {
        // More runs than a translation holds: the backend's device-side alias, if it has one,
        // maps the pages at one bus range (`dma.rs`).
        let mut fill = |sink: &mut dyn FnMut(u64)| {
            let r = xlt_entries(fw, mem, s, w, buf, bytes, count, &mut |e| {
                sink(e & !(page - 1))
            });
            matches!(r, Ok(n) if n == count)
        };
        let bus = mem.alias(owner, page, &mut fill).ok_or(bind_err)?;
        xlat = Xlat::EMPTY;
        for i in 0..count {
            let a = i
                .checked_mul(page)
                .and_then(|o| bus.checked_add(o))
                .ok_or(bind_err)?;
            xlat.push_page(a, page).map_err(|_| bind_err)?;
        }
    } else {
        mem.unalias(owner);
    }
    let shift = u32::try_from(shift).map_err(|_| bind_err)?;
    Ok((
        MkeyMap::Mtt {
            start,
            len,
            base,
            xlat,
        },
        shift,
    ))
}

/// Hands the first `count` MTT entries of a translation WQE (`bytes` of them, inline or
/// through its data segment) to `f` in order; returns how many there were.
#[allow(clippy::too_many_arguments)]
fn xlt_entries(
    fw: &Fw,
    mem: &dyn DmaMem,
    s: &Snap,
    w: &Wqe,
    buf: &[u8],
    bytes: usize,
    count: u64,
    f: &mut dyn FnMut(u64),
) -> Result<u64, ReqRes> {
    let bind_err = ReqRes::Err(syn::MW_BIND);
    let flags = buf.get(FLAGS).copied().unwrap_or(0);
    let mut push = |entries: &[u8], done: &mut u64| {
        for e in entries.chunks_exact(8) {
            if *done == count {
                break;
            }
            f(be64(e, 0));
            *done += 1;
        }
    };
    let mut done = 0u64;
    if flags & INLINE != 0 {
        let data = buf
            .get(KLM..KLM + bytes)
            .filter(|_| w.len >= KLM + bytes)
            .ok_or(bind_err)?;
        push(data, &mut done);
    } else {
        let prot = ReqRes::Err(syn::LOCAL_PROT);
        if w.len < KLM + 16 {
            return Err(bind_err);
        }
        let (bc, lkey, addr) = (be32(buf, KLM), be32(buf, KLM + 4), be64(buf, KLM + 8));
        if (bc as usize) < bytes {
            return Err(bind_err);
        }
        // The UMR QP has no PD: its data segment's lkey is taken in the key's own PD (upstream
        // passes the `local_dma_lkey` of its UMR PD).
        let pd = if s.st == QPC_ST_REG_UMR {
            fw.mkeys.get(lkey >> 8).map_or(s.pd, |m| m.pd)
        } else {
            s.pd
        };
        let info = super::mem::mkey(fw, lkey, pd)
            .filter(|i| i.covers(addr, bytes as u64) && i.access.allows(Access::LOCAL_READ))
            .ok_or(prot)?;
        let mut cur = super::mem::Cur::region(info, addr);
        let mut left = bytes;
        let mut chunk = [0u8; MTT_CHUNK];
        while left > 0 && done < count {
            let want = left.min(MTT_CHUNK);
            let mut got = 0;
            while got < want {
                let n = cur
                    .read(mem, chunk.get_mut(got..want).ok_or(prot)?)
                    .map_err(|()| prot)?;
                if n == 0 {
                    return Err(prot);
                }
                got += n;
            }
            push(chunk.get(..want).ok_or(prot)?, &mut done);
            left -= want;
        }
    }
    Ok(done)
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
