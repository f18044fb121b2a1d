// SPDX-License-Identifier: GPL-2.0

//! Verbs objects of user contexts, as libmlx5 creates them: CQs (upstream
//! `mlx5_ib_create_user_cq()` → `create_cq_user()`, cq.c), RC/UC/UD QPs (`mlx5_ib_create_qp()`
//! → `create_user_qp()` → `_create_user_qp()`, qp.c) and MRs (`mlx5_ib_reg_user_mr()` →
//! `create_real_mr()` → `reg_create()`, mr.c). The udata rules are `uabi.rs`'s; here are the
//! steps that pin memory and issue commands.
//!
//! Every path acquires in upstream's order (request checks, buffer, doorbell record, command
//! input) and issues its one create command last: a failure anywhere, the command's included,
//! drops what was acquired (the pinned buffer, the doorbell page reference) and leaves no
//! firmware object. The response is written after the command and cannot fail here (the core
//! copies it out; if that copy fails, the core destroys the object like any other).
//!
//! Buffers use `PAGE_SIZE` blocks (upstream picks the largest block size the umem allows,
//! `mlx5_umem_find_best_quantized_pgoff()`; with 4 KiB blocks the quantized page offset must be
//! a multiple of 64 bytes, `EINVAL` otherwise, as upstream finds no page size then).
//! Contexts have no DEVX uid, so every command carries uid 0 (upstream `context->devx_uid`).

use crate::cmd::cq::{CqModify, CqeSize, CreateCq, ModifyCq};
use crate::cmd::exec;
use crate::cmd::qp::{CreateQp, QpServiceType, RqType};
use crate::cmd::res::MkeyTranslation;
use crate::cmd::srq::{ArmRmp, CreateRmp, CreateXrcSrq, DestroyRmp, DestroyXrcSrq, QueryRmp};
use crate::events::{CqTarget, QpTarget, SrqTarget};
use crate::hw::CapType;
use crate::ib::Mlx5Ib;
use crate::prm::ctx::{cmd_hca_cap, roce_cap};
use crate::uabi::{self, CqCaps, CqeStride, QpCaps, UserQpType};
use crate::uar::abi_err;
use crate::ucontext::Mlx5Ucontext;
use crate::user_mem::{DbRecord, UserBuf, PAGE};
use crate::verbs::{
    create_mr, create_mr_keep, gen, ilog2_ceil, CqBufLock, Mlx5Cq, Mlx5Mr, Mlx5Qp, QueueMem,
};
use ib_core_rs::device::Device;
use ib_core_rs::verbs::{
    AccessFlags, Cq, CqHandler, CqInitAttr, Mr, MrCreated, Mw, MwCreated, MwType, Pd, QpCreated,
    QpInitAttr, QpType, ReregFlags, Srq, SrqAttrMask, SrqHandler, SrqInitAttr, Ucontext, UserCtx,
    UserMrReq,
};
use ib_core_rs::verbs::{XrcSrqCreated, Xrcd};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::Arc;

/// `MLX5_ADAPTER_PAGE_SHIFT`.
const ADAPTER_PAGE_SHIFT: u32 = 12;

/// `cqc`/`qpc` `log_page_size` of `PAGE_SIZE` blocks (`order_base_2(page_size) - 12`).
const LOG_PAGE_SIZE: u8 = (kernel::page::PAGE_SHIFT as u32 - ADAPTER_PAGE_SHIFT) as u8;

fn mlx5_ctx(ctx: &Ucontext<Mlx5Ib>) -> Result<&Mlx5Ucontext> {
    ctx.data::<Mlx5Ucontext>().ok_or(EINVAL)
}

/// The quantized `page_offset` of a buffer in `PAGE_SIZE` blocks (64-byte units; upstream
/// `mlx5_umem_find_best_quantized_pgoff()` returns no page size, `EINVAL`, when the offset is
/// not a multiple of the quantum).
fn page_offset(buf: &UserBuf) -> Result<u8> {
    let off = buf.page_offset();
    if off % 64 != 0 {
        return Err(EINVAL);
    }
    u8::try_from(off / 64).map_err(|_| EINVAL)
}

/// Where a user CQ's memory comes from: the request's user addresses, or (KUnit) kernel
/// memory posing as them.
pub(crate) enum CqMem {
    /// Pin `buf_addr`/`db_addr` of the request.
    FromRequest,
    /// KUnit: the buffer and a doorbell record already "pinned".
    #[cfg(CONFIG_KUNIT = "y")]
    Given(UserBuf, DbRecord),
}

/// upstream `mlx5_ib_create_user_cq()` with `create_cq_user()`: the size rules of a kernel CQ
/// (`cqe > 2^log_max_cq_sz` `EINVAL`, `entries + 1` rounded up to a power of two), the request
/// ([`uabi::parse_create_cq`]), the CQE buffer (`entries * cqe_size` bytes) pinned, the
/// doorbell record mapped, the UAR page, compression and padding
/// ([`uabi::user_cq_params`]), the completion vector (only 0: `EINVAL`), CREATE_CQ; the
/// response is `mlx5_ib_create_cq_resp { cqn }`.
///
/// # Errors
///
/// As above; the pin's errno; CREATE_CQ's errno. Nothing is left behind on failure.
pub(crate) fn create_cq(
    dev: &Device<Mlx5Ib>,
    attr: &CqInitAttr,
    handler: Option<&Arc<dyn CqHandler>>,
    user: &mut UserCtx<'_, '_, Mlx5Ib>,
    mem: CqMem,
) -> Result<Mlx5Cq> {
    let d = dev.data();
    let g = gen(d)?;
    let log_max = g.get(cmd_hca_cap::log_max_cq_sz);
    let max = 1u64 << log_max.min(32);
    if u64::from(attr.cqe) > max {
        return Err(EINVAL);
    }
    let log_size = ilog2_ceil(attr.cqe.checked_add(1).ok_or(EINVAL)?)?;
    if 1u64 << log_size > max {
        return Err(EINVAL);
    }
    let ctx = user.ctx().clone();
    let req = uabi::parse_create_cq(user.udata().input()).map_err(abi_err)?;
    let entries = 1u64 << log_size;
    let (buf, db) = match mem {
        CqMem::FromRequest => {
            let len = entries * u64::from(req.cqe_size);
            let buf = UserBuf::pin(&ctx, req.buf_addr, len, AccessFlags::LOCAL_WRITE)?;
            let db = mlx5_ctx(&ctx)?.db_pages.map(&ctx, req.db_addr)?;
            (buf, db)
        }
        #[cfg(CONFIG_KUNIT = "y")]
        CqMem::Given(buf, db) => (buf, db),
    };
    let page_offset = page_offset(&buf)?;
    let pas = buf.pages()?;
    let caps = CqCaps {
        cqe_compression: g.get(cmd_hca_cap::cqe_compression) != 0,
        cqe_compression_128: g.get(cmd_hca_cap::cqe_compression_128) != 0,
        mini_cqe_resp_stride_index: g.get(cmd_hca_cap::mini_cqe_resp_stride_index) != 0,
        cqe_128_always: g.get(cmd_hca_cap::cqe_128_always) != 0,
    };
    let p = uabi::user_cq_params(&req, &caps).map_err(abi_err)?;
    // upstream mlx5_comp_eqn_get(): EINVAL for a vector the function does not have.
    let eqn = d.hw.comp_eqn(attr.comp_vector)?;
    let target = CqTarget::new(handler)?;
    let slot = d.events.reserve::<CqTarget>()?;
    let user_buf: CqBufLock = KBox::pin_init(new_mutex!(buf), GFP_KERNEL)?;
    let cqn = exec(
        &*d.hw,
        &CreateCq {
            uid: 0,
            log_cq_size: log_size,
            cqe_size: match p.stride {
                CqeStride::B64 => CqeSize::B64,
                CqeStride::B128 => CqeSize::B128,
                CqeStride::B128Pad => CqeSize::B128Pad,
            },
            uar_page: p.uar_index,
            eqn,
            log_page_size: LOG_PAGE_SIZE,
            page_offset,
            compression: p.mini_cqe_format,
            dbr_addr: db.dma,
            pas: &pas,
        },
    )?;
    d.events.attach(slot, &target, cqn);
    user.udata().copy_to(&uabi::create_cq_resp(cqn));
    Ok(Mlx5Cq {
        cqn,
        log_size,
        real_time_ts: p.real_time_ts,
        mem: QueueMem::User {
            _buf: None,
            _db: db,
        },
        events: target,
        kern: None,
        user_buf: Some(user_buf),
    })
}

/// upstream `mlx5_ib_resize_cq()` for a user CQ: without the `cq_resize` capability `ENOSYS`
/// (as upstream); more than `2^log_max_cq_sz` entries `EINVAL`; `entries + 1` rounded up to a
/// power of two, and nothing to do if that is the current size; under the CQ's resize lock the
/// request ([`uabi::parse_resize_cq`]), the new buffer pinned (`entries * cqe_size` bytes),
/// MODIFY_CQ `MLX5_CQ_OPMOD_RESIZE`; on success the CQ has `entries - 1` entries and the old
/// buffer is unpinned (the device wrote its RESIZE CQE into it before the command completed;
/// libmlx5 copies the outstanding CQEs up to it into the new buffer).
///
/// # Errors
///
/// As above; `EINVAL` for a kernel CQ or a buffer offset that is not a multiple of 64 bytes;
/// the pin's errno; MODIFY_CQ's errno. A failure leaves the CQ as it was.
pub(crate) fn resize_cq(cq: &Cq<Mlx5Ib>, cqe: u32, user: &mut UserCtx<'_, '_, Mlx5Ib>) -> Result {
    let d = cq.device().data();
    let c = cq.data();
    let lock = c.user_buf.as_ref().ok_or(EINVAL)?;
    let g = gen(d)?;
    if g.get(cmd_hca_cap::cq_resize) == 0 {
        return Err(ENOSYS);
    }
    let log_max = g.get(cmd_hca_cap::log_max_cq_sz).min(31);
    if u64::from(cqe) > 1u64 << log_max {
        return Err(EINVAL);
    }
    let log_size = ilog2_ceil(cqe.checked_add(1).ok_or(EINVAL)?)?;
    if u32::from(log_size) > log_max {
        return Err(EINVAL);
    }
    let entries = 1u32 << log_size;
    if entries == cq.cqe().wrapping_add(1) {
        return Ok(());
    }
    let mut cur = lock.lock();
    let req = uabi::parse_resize_cq(user.udata().input()).map_err(abi_err)?;
    let ctx = user.ctx().clone();
    let len = u64::from(entries) * u64::from(req.cqe_size);
    let buf = UserBuf::pin(&ctx, req.buf_addr, len, AccessFlags::LOCAL_WRITE)?;
    let page_offset = page_offset(&buf)?;
    let pas = buf.pages()?;
    exec(
        &*d.hw,
        &ModifyCq {
            cqn: c.cqn,
            uid: 0,
            what: CqModify::Resize {
                log_cq_size: log_size,
                cqe_size: if req.cqe_size == 64 {
                    CqeSize::B64
                } else {
                    CqeSize::B128
                },
                log_page_size: LOG_PAGE_SIZE,
                page_offset,
                pas: &pas,
            },
        },
    )?;
    // The old buffer is unpinned (and unmapped from the device) when `buf` is dropped here.
    let old = core::mem::replace(&mut *cur, buf);
    cq.set_cqe(entries - 1);
    drop(cur);
    drop(old);
    Ok(())
}

/// upstream `mlx5_ib_modify_cq()`: without the `cq_moderation` capability `EOPNOTSUPP`, a
/// period beyond `cqc.cq_period`'s 12 bits (`MLX5_MAX_CQ_PERIOD`) `EINVAL`, then MODIFY_CQ with
/// the period and count (`mlx5_core_modify_cq_moderation()`).
///
/// # Errors
///
/// As above; MODIFY_CQ's errno.
pub(crate) fn modify_cq(cq: &Cq<Mlx5Ib>, count: u16, period: u16) -> Result {
    /// `MLX5_MAX_CQ_PERIOD`: `cqc.cq_period` is 12 bits wide.
    const MAX_CQ_PERIOD: u16 = (1 << 12) - 1;
    let d = cq.device().data();
    if gen(d)?.get(cmd_hca_cap::cq_moderation) == 0 {
        return Err(EOPNOTSUPP);
    }
    if period > MAX_CQ_PERIOD {
        return Err(EINVAL);
    }
    exec(
        &*d.hw,
        &ModifyCq {
            cqn: cq.data().cqn,
            uid: 0,
            what: CqModify::Moderation { period, count },
        },
    )
}

/// Where a user QP's memory comes from (see [`CqMem`]).
pub(crate) enum QpMem {
    /// Pin `buf_addr`/`db_addr` of the request.
    FromRequest,
    /// KUnit: the buffer (if the QP has queues) and a doorbell record.
    #[cfg(CONFIG_KUNIT = "y")]
    Given(Option<UserBuf>, DbRecord),
}

/// upstream `mlx5_ib_create_qp()` for an RC, UC or UD QP of a user context: the request
/// ([`uabi::parse_create_qp`]), vendor flags, user index, the queue layout and UAR page
/// ([`uabi::user_qp_layout`]), the buffer (RQ then SQ) pinned, the doorbell record mapped,
/// CREATE_QP (`pm_state` migrated, the user index only if the device reports CQE version 1,
/// ECE options where the device supports ECE); the response `mlx5_ib_create_qp_resp` has
/// `bfreg_index` = `MLX5_IB_INVALID_BFREG` and the firmware's ECE options.
///
/// A QP on an SRQ has no receive queue (`rq_type` SRQ, `srqn_rmpn_xrqn` the RMP, `cqn_rcv`
/// the receive CQ), as upstream's `create_qp_common()`.
///
/// Deviation: a receive stride below 16 bytes is `EINVAL` (upstream hands firmware
/// `wqe_shift - 4` wrapped).
///
/// # Errors
///
/// As above; the pin's errno; CREATE_QP's errno. Nothing is left behind on failure.
pub(crate) fn create_qp(
    pd: &Pd<Mlx5Ib>,
    attr: &QpInitAttr<'_, Mlx5Ib>,
    user: &mut UserCtx<'_, '_, Mlx5Ib>,
    mem: QpMem,
) -> Result<QpCreated<Mlx5Qp>> {
    let d = pd.device().data();
    let g = gen(d)?;
    let ctx = user.ctx().clone();
    let mctx = mlx5_ctx(&ctx)?;
    let req = uabi::parse_create_qp(user.udata().input()).map_err(abi_err)?;
    let t = match attr.qp_type {
        QpType::Rc => UserQpType::Rc,
        QpType::Uc => UserQpType::Uc,
        QpType::Ud => UserQpType::Ud,
        QpType::XrcIni => UserQpType::XrcIni,
        // Created without udata (create_xrc_tgt_qp()).
        QpType::XrcTgt => return Err(EINVAL),
    };
    let caps = QpCaps {
        log_max_qp_sz: g.get(cmd_hca_cap::log_max_qp_sz),
        max_wqe_sz_sq: g.get(cmd_hca_cap::max_wqe_sz_sq),
        // Neither cap is in the cached subset of cmd_hca_cap: treated as absent.
        sctr_data_cqe: false,
        dci_streams: false,
        qp_packet_based: g.get(cmd_hca_cap::qp_packet_based) != 0,
    };
    let flags_en = uabi::qp_vendor_flags(req.flags, t, &caps).map_err(abi_err)?;
    let uidx = uabi::qp_user_index(mctx.cqe_version, req.uidx).map_err(abi_err)?;
    // upstream qp_has_rq(): a QP on an SRQ has no receive queue of its own.
    let has_rq = attr.srq.is_none() && attr.cap.max_recv_wr != 0;
    let l = uabi::user_qp_layout(&req, flags_en, has_rq, attr.cap.max_recv_wr, &caps)
        .map_err(abi_err)?;
    if has_rq && l.rq_wqe_shift < 4 {
        return Err(EINVAL);
    }
    // get_qp_ts_format(): MLX5_CAP_ROCE(qp_ts_format), 0 without a RoCE page.
    let ts_cap = match d.hw.caps(CapType::Roce) {
        Some(r) => roce_cap::qp_ts_format.get(r).map_err(|_| EIO)?,
        None => 0,
    };
    let ts_format = uabi::qp_ts_format(
        ts_cap,
        attr.send_cq.data().real_time_ts,
        attr.recv_cq.data().real_time_ts,
    )
    .map_err(abi_err)?;
    let (buf, db) = match mem {
        QpMem::FromRequest => {
            let buf = if l.buf_size != 0 {
                Some(UserBuf::pin(
                    &ctx,
                    req.buf_addr,
                    u64::from(l.buf_size),
                    AccessFlags(0),
                )?)
            } else {
                None
            };
            let db = mctx.db_pages.map(&ctx, req.db_addr)?;
            (buf, db)
        }
        #[cfg(CONFIG_KUNIT = "y")]
        QpMem::Given(buf, db) => (buf, db),
    };
    let (pas, page_offset) = match &buf {
        Some(b) => (b.pages()?, page_offset(b)?),
        None => (KVec::new(), 0),
    };
    // ilog2() of the counts, as upstream (the SQ count is a power of two by now).
    let log2 = |n: u32| -> u8 { n.checked_ilog2().unwrap_or(0) as u8 };
    let log_sq_size = log2(l.sq_wqe_cnt);
    let log_rq_size = log2(l.rq_wqe_cnt);
    let rq = if let Some(srq) = attr.srq {
        RqType::Srq {
            srqn: srq.data().srqn,
            cqn: attr.recv_cq.data().cqn,
        }
    } else if t == UserQpType::XrcIni {
        // Upstream names its device resources (SRQ s0 with CQ c0, `rq_type` SRQ) for an
        // initiator; this driver has none: no receive queue at all (ZERO_LEN_RQ), the same
        // for a QP that never receives.
        RqType::None
    } else if has_rq {
        RqType::Regular {
            cqn: attr.recv_cq.data().cqn,
            log_size: log_rq_size,
            log_stride: u8::try_from(l.rq_wqe_shift - 4).map_err(|_| EINVAL)?,
        }
    } else {
        RqType::None
    };
    let st = match t {
        UserQpType::Rc => QpServiceType::Rc,
        UserQpType::Uc => QpServiceType::Uc,
        UserQpType::Ud => QpServiceType::Ud,
        UserQpType::XrcIni => QpServiceType::Xrc,
    };
    let ece_support = g.get(cmd_hca_cap::ece_support) != 0;
    let state = Mlx5Qp::new_state()?;
    let target = QpTarget::new(attr.event_handler.as_ref(), None)?;
    let slot = d.events.reserve::<QpTarget>()?;
    let (qpn, ece) = exec(
        &*d.hw,
        &CreateQp {
            uid: 0,
            st,
            pd: pd.data().pdn,
            sq: (l.sq_wqe_cnt != 0).then_some((attr.send_cq.data().cqn, log_sq_size)),
            rq,
            uar_page: l.uar_index,
            log_page_size: LOG_PAGE_SIZE,
            page_offset,
            dbr_addr: db.dma,
            // 0xffffff asks for CQE version 0; upstream sets the field only with version 1.
            user_index: if g.get(cmd_hca_cap::cqe_version) == 1 {
                uidx
            } else {
                0
            },
            wq_signature: flags_en & uabi::qp_flag::SIGNATURE != 0,
            ece: if ece_support { req.ece_options } else { 0 },
            ts_format: u8::try_from(ts_format).map_err(|_| EINVAL)?,
            pas: &pas,
        },
    )?;
    d.events.attach(slot, &target, qpn);
    let ece = if ece_support { ece } else { 0 };
    user.udata()
        .copy_to(&uabi::create_qp_resp(uabi::INVALID_BFREG, ece));
    Ok(Mlx5Qp::created(
        qpn,
        log_sq_size,
        log_rq_size,
        state,
        QueueMem::User { _buf: buf, _db: db },
        target,
    ))
}

/// upstream `mlx5_ib_reg_user_mr()` → `create_real_mr()` → `reg_create()` (the direct
/// CREATE_MKEY path, without the mkey cache and UMR): the memory pinned with the access
/// flags' writability, an MTT mkey of `PAGE_SIZE` pages covering `[iova, iova + length)`,
/// `lkey` = `rkey` = the key. On-demand paging is `EOPNOTSUPP` (the device reports no ODP).
///
/// # Errors
///
/// `EOPNOTSUPP` for ODP; `EINVAL` when `start` and `iova` differ within a page (no page size
/// fits, as upstream's `mlx5_umem_mkc_find_best_pgsz()`); the pin's errno; CREATE_MKEY's
/// errno. Nothing is left behind on failure.
pub(crate) fn reg_user_mr(
    pd: &Pd<Mlx5Ib>,
    req: &UserMrReq,
    user: &mut UserCtx<'_, '_, Mlx5Ib>,
    given: Option<UserBuf>,
) -> Result<MrCreated<Mlx5Mr>> {
    if req.access.any(AccessFlags::ON_DEMAND) {
        return Err(EOPNOTSUPP);
    }
    let umem = match given {
        Some(b) => b,
        None => UserBuf::pin(user.ctx(), req.start, req.length, req.access)?,
    };
    if (req.iova ^ umem.addr()) & (PAGE - 1) != 0 {
        return Err(EINVAL);
    }
    let pages = umem.pages()?;
    create_mr(
        pd,
        req.access,
        req.iova,
        MkeyTranslation::Mtt {
            start: req.iova,
            len: req.length,
            log_page_size: kernel::page::PAGE_SHIFT as u8,
            pages: &pages,
        },
        Some(umem),
    )
}

/// upstream `mlx5_ib_rereg_user_mr()` on a device without UMR (this driver posts no UMR
/// WQEs: no mkey cache, no `mlx5r_umr_rereg_pd_access()`/`umr_rereg_pas()` fast paths), so
/// every re-registration is a new mkey, as upstream's paths that cannot change the MR in
/// place:
///
/// * `ib_umem_check_rereg()`: new access flags that need writable pages without a new
///   translation, on memory pinned read-only, are `EACCES`;
/// * without [`ReregFlags::TRANS`]: the old MR's pinned memory moves to a new MTT mkey with
///   the old `iova` and length and the new PD and/or access flags (upstream "revoke the old
///   MR" and `create_real_mr(new_pd, umem, mr->ibmr.iova, new_access_flags)`); the old mkey is
///   destroyed by the core right after, so no two live mkeys translate the same umem for
///   longer than the command;
/// * with [`ReregFlags::TRANS`]: new memory pinned and a new mkey, as [`reg_user_mr`]
///   (upstream `create_real_mr()` on a new umem, or `mlx5_ib_reg_user_mr()` from scratch).
///
/// Flags not given keep the MR's PD (the core passes it) and access flags.
///
/// # Errors
///
/// As above; [`reg_user_mr`]'s; `EINVAL` when the old MR has no pinned memory left (a
/// kernel MR). On error the old MR is unchanged.
pub(crate) fn rereg_user_mr(
    mr: &Mr<Mlx5Ib>,
    flags: ReregFlags,
    req: &UserMrReq,
    new_pd: &Pd<Mlx5Ib>,
    user: &mut UserCtx<'_, '_, Mlx5Ib>,
) -> Result<MrCreated<Mlx5Mr>> {
    let m = mr.data();
    let slot = m.umem.as_ref().ok_or(EINVAL)?;
    let access = if flags.has(ReregFlags::ACCESS) {
        req.access
    } else {
        m.access
    };
    if flags.has(ReregFlags::TRANS) {
        return reg_user_mr(
            new_pd,
            &UserMrReq {
                start: req.start,
                length: req.length,
                iova: req.iova,
                access,
            },
            user,
            None,
        );
    }
    let mut guard = slot.lock();
    let umem = guard.take().ok_or(EINVAL)?;
    // ib_umem_check_rereg()
    if flags.has(ReregFlags::ACCESS) && access.writable() && !umem.writable() {
        *guard = Some(umem);
        return Err(EACCES);
    }
    let pages = match umem.pages() {
        Ok(p) => p,
        Err(e) => {
            *guard = Some(umem);
            return Err(e);
        }
    };
    let len = umem.len();
    let mut umem = Some(umem);
    // Not held across the new MR's creation: that takes the new MR's slot, a mutex of the
    // same class (lockdep: possible recursive locking). The file's lock serializes this
    // MR's rereg and dereg, so the empty slot is seen by nobody meanwhile.
    drop(guard);
    let r = create_mr_keep(
        new_pd,
        access,
        m.iova,
        MkeyTranslation::Mtt {
            start: m.iova,
            len,
            log_page_size: kernel::page::PAGE_SHIFT as u8,
            pages: &pages,
        },
        &mut umem,
    );
    if r.is_err() {
        *slot.lock() = umem;
    }
    r
}

/// A user SRQ (upstream `struct mlx5_ib_srq` with its `mlx5_core_srq`): an RMP.
pub(crate) struct Mlx5Srq {
    /// The RMP number (libmlx5's `srqn`).
    pub(crate) srqn: u32,
    /// WQEs in the buffer (upstream `msrq.max`, a power of two).
    max: u32,
    /// Scatter entries asked for (upstream `msrq.max_gs`).
    max_gs: u32,
    /// An XRC SRQ (CREATE_XRC_SRQ) rather than an RMP.
    xrc: bool,
    events: Arc<SrqTarget>,
    _buf: UserBuf,
    _db: DbRecord,
}

/// `MLX5_SRQ_FLAG_SIGNATURE` (mlx5-abi.h).
const SRQ_FLAG_SIGNATURE: u32 = 1 << 0;
/// `sizeof(struct mlx5_wqe_srq_next_seg)`.
const SRQ_NEXT_SEG: u32 = 16;

/// upstream `mlx5_ib_create_srq()` → `create_srq_user()` → `mlx5_cmd_create_srq()` →
/// `create_rmp_cmd()` for a basic SRQ of a user context: the size rules (`max_wr` at least
/// `2^log_max_srq_sz`, or `max_sge` above `max_wqe_sz_rq / 16`: `EINVAL`), `max_wr + 1` WQEs
/// rounded up to a power of two, each `16 + 16 * max_sge` bytes rounded up to a power of two
/// (at least 32); the request `mlx5_ib_create_srq` (`buf_addr`, `db_addr`, `flags`; the
/// reserved words must be 0), the buffer pinned, the doorbell record mapped, CREATE_RMP; the
/// response is `mlx5_ib_create_srq_resp { srqn }` and `attr.max_wr` becomes the WQEs minus one.
/// A kernel SRQ is `EOPNOTSUPP`: this driver has no kernel `post_srq_recv`.
///
/// # Errors
///
/// As above; the pin's errno; CREATE_RMP's errno. Nothing is left behind on failure.
pub(crate) fn create_srq(
    pd: &Pd<Mlx5Ib>,
    attr: &mut SrqInitAttr,
    handler: Option<&Arc<dyn SrqHandler>>,
    user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
) -> Result<Mlx5Srq> {
    let d = pd.device().data();
    srq_limits(d, attr)?;
    let user = user.ok_or(EOPNOTSUPP)?;
    let q = SrqQueue::from_user(attr, user, false)?;
    let target = SrqTarget::new(handler)?;
    let slot = d.events.reserve::<SrqTarget>()?;
    let srqn = exec(
        &*d.hw,
        &CreateRmp {
            uid: 0,
            pd: pd.data().pdn,
            log_size: q.max.ilog2() as u8,
            log_stride: q.desc.ilog2() as u8,
            log_page_size: LOG_PAGE_SIZE,
            page_offset: q.page_offset,
            lwm: 0,
            wq_signature: q.flags & SRQ_FLAG_SIGNATURE != 0,
            dbr_addr: q.db.dma,
            pas: &q.pas,
        },
    )?;
    d.events.attach(slot, &target, srqn);
    Ok(q.finish(srqn, attr, user, target, false))
}

/// upstream `mlx5_ib_create_srq()`'s size checks.
fn srq_limits(d: &crate::ib::Mlx5IbDev, attr: &SrqInitAttr) -> Result {
    let g = gen(d)?;
    let max_srq_wqes = 1u64 << g.get(cmd_hca_cap::log_max_srq_sz).min(32);
    let max_sge_sz = g.get(cmd_hca_cap::max_wqe_sz_rq) / 16;
    if u64::from(attr.max_wr) >= max_srq_wqes || attr.max_sge > max_sge_sz {
        return Err(EINVAL);
    }
    Ok(())
}

/// A user SRQ's queue (upstream `create_srq_user()`): the request, the pinned buffer and the
/// mapped doorbell record.
struct SrqQueue {
    max: u32,
    desc: u32,
    flags: u32,
    uidx: u32,
    page_offset: u8,
    pas: KVec<u64>,
    buf: UserBuf,
    db: DbRecord,
}

impl SrqQueue {
    /// `max_wr + 1` WQEs rounded up to a power of two, each `16 + 16 * max_sge` bytes
    /// rounded up to a power of two (at least 32); the request `mlx5_ib_create_srq`: the
    /// reserved words must be 0; an XRC SRQ's `uidx` (upstream `get_srq_user_index()`: the
    /// field present exactly with CQE version 1, `verify_assign_uidx()`).
    fn from_user(
        attr: &SrqInitAttr,
        user: &mut UserCtx<'_, '_, Mlx5Ib>,
        xrc: bool,
    ) -> Result<SrqQueue> {
        let max = (attr.max_wr + 1).next_power_of_two();
        let desc = (SRQ_NEXT_SEG + attr.max_sge * 16)
            .next_power_of_two()
            .max(32);
        let buf_size = u64::from(max) * u64::from(desc);
        let ctx = user.ctx().clone();
        let mctx = mlx5_ctx(&ctx)?;
        // ib_copy_validate_udata_in(udata, ucmd, flags): the request up to `flags`.
        let (buf_addr, db_addr, flags, uidx) = {
            let i = user.udata().input();
            // offsetofend(struct mlx5_ib_create_srq, flags)
            if i.len() < core::mem::offset_of!(uabi::CreateSrq, reserved0) {
                return Err(EINVAL);
            }
            let has_uidx = i.len() >= core::mem::offset_of!(uabi::CreateSrq, reserved1);
            let r = uabi::CreateSrq::from_bytes(i);
            if r.reserved0 != 0 || r.reserved1 != 0 {
                return Err(EINVAL);
            }
            // A basic SRQ reads no uidx; CQE version 0 with the default one keeps 0.
            let default_v0 = has_uidx && mctx.cqe_version == 0 && r.uidx == 0xff_ffff;
            let uidx = if !xrc || default_v0 {
                0
            } else if has_uidx != (mctx.cqe_version != 0) {
                return Err(EINVAL);
            } else {
                uabi::qp_user_index(mctx.cqe_version, r.uidx).map_err(abi_err)?
            };
            (r.buf_addr, r.db_addr, r.flags, uidx)
        };
        let buf = UserBuf::pin(&ctx, buf_addr, buf_size, AccessFlags(0))?;
        let db = mctx.db_pages.map(&ctx, db_addr)?;
        let page_offset = page_offset(&buf)?;
        let pas = buf.pages()?;
        Ok(SrqQueue {
            max,
            desc,
            flags,
            uidx,
            page_offset,
            pas,
            buf,
            db,
        })
    }

    /// The response `mlx5_ib_create_srq_resp { srqn }`, `attr.max_wr` the WQEs minus one,
    /// and the driver data.
    fn finish(
        self,
        srqn: u32,
        attr: &mut SrqInitAttr,
        user: &mut UserCtx<'_, '_, Mlx5Ib>,
        target: Arc<SrqTarget>,
        xrc: bool,
    ) -> Mlx5Srq {
        let mut resp = [0u8; 8];
        resp[..4].copy_from_slice(&srqn.to_ne_bytes());
        user.udata().copy_to(&resp);
        attr.max_wr = self.max - 1;
        Mlx5Srq {
            srqn,
            max: self.max,
            max_gs: attr.max_sge,
            xrc,
            events: target,
            _buf: self.buf,
            _db: self.db,
        }
    }
}

/// upstream `mlx5_ib_create_srq()` for `IB_SRQT_XRC` (`create_srq_user()`,
/// `mlx5_cmd_create_srq()` → `create_xrc_srq_cmd()`): as a basic SRQ, plus the XRC domain,
/// the CQ and the request's `uidx`; CREATE_XRC_SRQ. Its number is the `srq_num` XRC senders
/// name (upstream `ibsrq.ext.xrc.srq_num`).
///
/// # Errors
///
/// As [`create_srq`]; CREATE_XRC_SRQ's errno.
pub(crate) fn create_xrc_srq(
    pd: &Pd<Mlx5Ib>,
    xrcd: &Xrcd<Mlx5Ib>,
    cq: &Cq<Mlx5Ib>,
    attr: &mut SrqInitAttr,
    handler: Option<&Arc<dyn SrqHandler>>,
    user: &mut UserCtx<'_, '_, Mlx5Ib>,
) -> Result<XrcSrqCreated<Mlx5Srq>> {
    let d = pd.device().data();
    srq_limits(d, attr)?;
    let q = SrqQueue::from_user(attr, user, true)?;
    let target = SrqTarget::new(handler)?;
    let slot = d.events.reserve::<SrqTarget>()?;
    let g = gen(d)?;
    let srqn = exec(
        &*d.hw,
        &CreateXrcSrq {
            uid: 0,
            xrcd: xrcd.xrcdn(),
            pd: pd.data().pdn,
            cqn: cq.data().cqn,
            user_index: if g.get(cmd_hca_cap::cqe_version) == 1 {
                q.uidx
            } else {
                0
            },
            log_size: q.max.ilog2() as u8,
            wqe_shift: (q.desc.ilog2() - 4) as u8,
            log_page_size: LOG_PAGE_SIZE,
            page_offset: q.page_offset,
            wq_signature: q.flags & SRQ_FLAG_SIGNATURE != 0,
            dbr_addr: q.db.dma,
            pas: &q.pas,
        },
    )?;
    d.events.attach(slot, &target, srqn);
    Ok(XrcSrqCreated {
        data: q.finish(srqn, attr, user, target, true),
        srq_num: srqn,
    })
}

/// upstream `mlx5_ib_modify_srq()`: no resizing (`IB_SRQ_MAX_WR` is `EINVAL`); a limit must be
/// below the WQEs (`EINVAL`) and arms the SRQ (MODIFY_RMP `lwm`).
///
/// # Errors
///
/// As above; MODIFY_RMP's errno.
pub(crate) fn modify_srq(srq: &Srq<Mlx5Ib>, attr: &SrqInitAttr, mask: SrqAttrMask) -> Result {
    let s = srq.data();
    if mask.has(SrqAttrMask::MAX_WR) {
        return Err(EINVAL);
    }
    if mask.has(SrqAttrMask::LIMIT) {
        if attr.srq_limit >= s.max {
            return Err(EINVAL);
        }
        // upstream arm_xrc_srq_cmd(): not done (the simulator has no ARM_XRC_SRQ).
        if s.xrc {
            return Err(EOPNOTSUPP);
        }
        let d = srq.pd().device().data();
        exec(
            &*d.hw,
            &ArmRmp {
                rmpn: s.srqn,
                uid: 0,
                lwm: u16::try_from(attr.srq_limit).map_err(|_| EINVAL)?,
            },
        )?;
    }
    Ok(())
}

/// upstream `mlx5_ib_query_srq()`: QUERY_RMP's limit, the WQEs minus one and `max_gs`.
///
/// # Errors
///
/// QUERY_RMP's errno.
pub(crate) fn query_srq(srq: &Srq<Mlx5Ib>) -> Result<SrqInitAttr> {
    let s = srq.data();
    let d = srq.pd().device().data();
    if s.xrc {
        // upstream query_xrc_srq_cmd(): not done; no limit is ever armed on one here.
        return Ok(SrqInitAttr {
            max_wr: s.max - 1,
            max_sge: s.max_gs,
            srq_limit: 0,
        });
    }
    let c = exec(&*d.hw, &QueryRmp { rmpn: s.srqn })?;
    Ok(SrqInitAttr {
        max_wr: s.max - 1,
        max_sge: s.max_gs,
        srq_limit: u32::from(c.lwm),
    })
}

/// upstream `mlx5_ib_destroy_srq()`: the SRQ leaves the event table, DESTROY_RMP (a refused
/// command puts it back); the buffer and doorbell record are released with the SRQ.
///
/// # Errors
///
/// DESTROY_RMP's errno.
pub(crate) fn destroy_srq(srq: &Srq<Mlx5Ib>) -> Result {
    let s = srq.data();
    let d = srq.pd().device().data();
    let detached = d.events.detach(&s.events);
    let r = if s.xrc {
        exec(
            &*d.hw,
            &DestroyXrcSrq {
                srqn: s.srqn,
                uid: 0,
            },
        )
    } else {
        exec(
            &*d.hw,
            &DestroyRmp {
                rmpn: s.srqn,
                uid: 0,
            },
        )
    };
    if r.is_err() {
        d.events.reattach(&s.events, detached);
    }
    r
}

// ---- MW ----

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
        &crate::cmd::res::CreateMkey {
            uid: 0,
            pd: pd.data().pdn,
            access: crate::cmd::res::MkeyAccess::default(),
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
    exec(
        &*mw.pd().device().data().hw,
        &crate::cmd::res::DestroyMkey {
            id: mw.data().index,
            uid: 0,
        },
    )
}
