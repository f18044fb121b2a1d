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

use crate::cmd::cq::{CqeSize, CreateCq};
use crate::cmd::exec;
use crate::cmd::qp::{CreateQp, QpServiceType, RqType};
use crate::cmd::res::MkeyTranslation;
use crate::events::{CqTarget, QpTarget};
use crate::hw::CapType;
use crate::ib::Mlx5Ib;
use crate::prm::ctx::{cmd_hca_cap, roce_cap};
use crate::uabi::{self, CqCaps, CqeStride, QpCaps, UserQpType};
use crate::uar::abi_err;
use crate::ucontext::Mlx5Ucontext;
use crate::user_mem::{DbRecord, UserBuf, PAGE};
use crate::verbs::{create_mr, gen, ilog2_ceil, mkey_access, Mlx5Cq, Mlx5Mr, Mlx5Qp, QueueMem};
use ib_core_rs::device::Device;
use ib_core_rs::verbs::{
    AccessFlags, CqHandler, CqInitAttr, MrCreated, Pd, QpCreated, QpInitAttr, QpType, Ucontext,
    UserCtx, UserMrReq,
};
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
    let log_max = g.get(cmd_hca_cap::log_max_cq_sz)?;
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
        cqe_compression: g.get(cmd_hca_cap::cqe_compression)? != 0,
        cqe_compression_128: g.get(cmd_hca_cap::cqe_compression_128)? != 0,
        mini_cqe_resp_stride_index: g.get(cmd_hca_cap::mini_cqe_resp_stride_index)? != 0,
        cqe_128_always: g.get(cmd_hca_cap::cqe_128_always)? != 0,
    };
    let p = uabi::user_cq_params(&req, &caps).map_err(abi_err)?;
    // upstream mlx5_comp_eqn_get(): EINVAL for a vector the function does not have.
    let eqn = d.hw.comp_eqn(attr.comp_vector)?;
    let target = CqTarget::new(handler)?;
    let slot = d.events.reserve_cq()?;
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
    d.events.attach_cq(slot, &target, cqn);
    user.udata().copy_to(&uabi::create_cq_resp(cqn));
    Ok(Mlx5Cq {
        cqn,
        log_size,
        real_time_ts: p.real_time_ts,
        mem: QueueMem::User {
            _buf: Some(buf),
            _db: db,
        },
        events: target,
        kern: None,
    })
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
/// Deviations: SRQ QPs are `EOPNOTSUPP` (this driver has no SRQs), and a receive stride below
/// 16 bytes is `EINVAL` (upstream hands firmware `wqe_shift - 4` wrapped).
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
    };
    let caps = QpCaps {
        log_max_qp_sz: g.get(cmd_hca_cap::log_max_qp_sz)?,
        max_wqe_sz_sq: g.get(cmd_hca_cap::max_wqe_sz_sq)?,
        // Neither cap is in the cached subset of cmd_hca_cap: treated as absent.
        sctr_data_cqe: false,
        dci_streams: false,
        qp_packet_based: g.get(cmd_hca_cap::qp_packet_based)? != 0,
    };
    let flags_en = uabi::qp_vendor_flags(req.flags, t, &caps).map_err(abi_err)?;
    let uidx = uabi::qp_user_index(mctx.cqe_version, req.uidx).map_err(abi_err)?;
    if attr.srq.is_some() {
        return Err(EOPNOTSUPP);
    }
    let has_rq = attr.cap.max_recv_wr != 0;
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
    let rq = if has_rq {
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
    };
    let ece_support = g.get(cmd_hca_cap::ece_support)? != 0;
    let state = Mlx5Qp::new_state()?;
    let target = QpTarget::new(attr.event_handler.as_ref(), None)?;
    let slot = d.events.reserve_qp()?;
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
            user_index: if g.get(cmd_hca_cap::cqe_version)? == 1 {
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
    d.events.attach_qp(slot, &target, qpn);
    let ece = if ece_support { ece } else { 0 };
    user.udata()
        .copy_to(&uabi::create_qp_resp(uabi::INVALID_BFREG, ece));
    Ok(QpCreated {
        data: Mlx5Qp::new(
            qpn,
            log_sq_size,
            log_rq_size,
            state,
            QueueMem::User { _buf: buf, _db: db },
            target,
        ),
        qp_num: qpn,
    })
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
        mkey_access(req.access),
        MkeyTranslation::Mtt {
            start: req.iova,
            len: req.length,
            log_page_size: kernel::page::PAGE_SHIFT as u8,
            pages: &pages,
        },
        Some(umem),
    )
}
