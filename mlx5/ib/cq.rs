// SPDX-License-Identifier: GPL-2.0

//! Completion queues (upstream cq.c): create, resize, moderate and destroy for kernel consumers
//! (`create_cq_kernel()`) and user contexts (`create_cq_user()`, as libmlx5 creates them), and
//! the kernel data path of a CQ: `poll_cq` (`mlx5_ib_poll_cq()` → `mlx5_poll_one()`) and
//! `req_notify_cq` (`mlx5_ib_arm_cq()`).
//!
//! Every create path acquires in upstream's order (request checks, buffer, doorbell record,
//! command input) and issues its one create command last: a failure anywhere drops what was
//! acquired and leaves no firmware object. A kernel CQ's CQEs are initialised to the invalid
//! opcode with the owner bit, as `init_cq_frag_buf()` does. CQs are bound to the EQ of their
//! completion vector ([`Mlx5Hw::comp_eqn`](crate::hw::Mlx5Hw::comp_eqn), upstream
//! `mlx5_comp_eqn_get()`) and registered in the device's event table after CREATE_CQ, detached
//! before DESTROY_CQ.
//!
//! * **Poll**: a CQE is the software's when its opcode is not invalid and its owner bit is
//!   the wrap parity of the consumer index; requester CQEs retire every WQE up to their
//!   `wqe_counter` (unsignaled ones included), responder CQEs take the RQ in order; error
//!   CQEs map their syndrome to `enum ib_wc_status` as `mlx5_handle_error_cqe()`. The
//!   consumer index record (`dbrec[0]` of the CQ) follows.
//! * **Arm**: `dbrec[1]` of the CQ = `sn << 28 | cmd | ci`, then the 64-bit doorbell
//!   `(that << 32) | cqn` at UAR + 0x20 (`mlx5_cq_arm()`), `sn` being the CQ's event count.
//!
//! A QP moved to RESET restarts its queues but its old CQEs are not cleaned from its CQs
//! (upstream `mlx5_ib_cq_clean()`).

use crate::cmd::cq::{CqModify, CqeSize, CreateCq, DestroyCq, ModifyCq};
use crate::cmd::exec;
use crate::hw::Doorbell;
use crate::ib::device::{gen, Mlx5Ib};
use crate::ib::events::{CqTarget, KernQueues};
use crate::ib::queue::{ilog2_ceil, page_offset, user_queue_buf, KernBuf, QueueMem, LOG_PAGE_SIZE};
use crate::ib::ucontext::{abi_err, mlx5_ctx};
use crate::ib::user_mem::{DbRecord, UserBuf};
use crate::prm::ctx::cmd_hca_cap;
use crate::prm::wqe::{cqe_off, cqe_op, syndrome, wqe_op};
use crate::uabi::{self, CqCaps, CqeStride};
use ib_core_rs::device::Device;
use ib_core_rs::verbs::{
    wc_flags, AccessFlags, Cq, CqHandler, CqInitAttr, CqNotify, UserCtx, Wc, WcOpcode, WcStatus,
};
use kernel::prelude::*;
use kernel::sync::barrier::{dma_mb, Read, Write};
use kernel::{new_mutex, new_spinlock_irq, sync::Arc, sync::Mutex, sync::SpinLockIrq};

/// `sizeof(struct mlx5_cqe64)`.
const CQE_SIZE: usize = 64;

/// `MLX5_CQE_INVALID << 4`: the op_own byte of a CQE the hardware has not written.
const CQE_INVALID_OWN: u8 = crate::prm::wqe::cqe_op::INVALID << 4;

/// The driver part of a CQ (upstream `struct mlx5_ib_cq`).
pub(crate) struct Mlx5Cq {
    /// The CQ number.
    pub(crate) cqn: u32,
    /// The owner uid (upstream `mcq.uid`): the DEVX uid of a user CQ's context, else 0.
    pub(crate) uid: u16,
    /// log2 of the number of CQEs.
    pub(crate) log_size: u8,
    /// `MLX5_IB_CQ_PR_FLAGS_REAL_TIME_TS`: QPs on it need real-time timestamps.
    pub(crate) real_time_ts: bool,
    /// The queue's memory, released after DESTROY_CQ (a user CQ's buffer is in `user_buf`).
    pub(crate) mem: QueueMem,
    /// The CQ's entry in the device's event table.
    pub(crate) events: Arc<CqTarget>,
    /// A kernel CQ's consumer state (`None` for a user CQ).
    pub(crate) kern: Option<KernCq>,
    /// A user CQ's pinned buffer, which a resize replaces (upstream `cq->buf.umem` under
    /// `cq->resize_mutex`); `None` for a kernel CQ, which does not resize.
    pub(crate) user_buf: Option<CqBufLock>,
}

/// A user CQ's current buffer behind its resize lock.
pub(crate) type CqBufLock = Pin<KBox<Mutex<UserBuf>>>;

/// upstream `check_cq_create_flags()`: `IGNORE_OVERRUN` and `TIMESTAMP_COMPLETION` are
/// accepted, anything else is `EOPNOTSUPP`. Returns whether the CQ ignores overruns (upstream
/// `mlx5_ib_create_cq()` sets `cqc.oi` then; a kernel CQ polled by software has no use for
/// the timestamp flag's private bit, and a user CQ's timestamps are libmlx5's).
fn overrun_ignore(attr: &CqInitAttr) -> Result<bool> {
    if attr.flags & !(CqInitAttr::IGNORE_OVERRUN | CqInitAttr::TIMESTAMP_COMPLETION) != 0 {
        return Err(EOPNOTSUPP);
    }
    Ok(attr.flags & CqInitAttr::IGNORE_OVERRUN != 0)
}

/// upstream `mlx5_ib_create_cq()` for a kernel consumer: `entries + 1` rounded up to a power
/// of two, at most `2^log_max_cq_sz` (`EINVAL`), 64-byte CQEs in a kernel buffer initialised
/// as `init_cq_frag_buf()` does, CREATE_CQ with the kernel UAR page.
///
/// # Errors
///
/// `EINVAL` for more CQEs than `log_max_cq_sz` allows or a bad completion vector, `ENOMEM`, the
/// errno of CREATE_CQ (`Mlx5Hw::exec`); everything allocated is released then.
pub(crate) fn create_cq(
    dev: &Device<Mlx5Ib>,
    attr: &CqInitAttr,
    handler: Option<&Arc<dyn CqHandler>>,
) -> Result<Mlx5Cq> {
    let d = dev.data();
    let overrun_ignore = overrun_ignore(attr)?;
    let eqn = d.hw.comp_eqn(attr.comp_vector)?;
    let log_max = gen(d)?.get(cmd_hca_cap::log_max_cq_sz);
    let entries = attr.cqe.checked_add(1).ok_or(EINVAL)?;
    let log_size = ilog2_ceil(entries)?;
    if u32::from(log_size) > log_max {
        return Err(EINVAL);
    }
    let buf = KernBuf::new(&*d.hw, CQE_SIZE << log_size)?;
    for i in 0..1usize << log_size {
        buf.mem()
            .write(i * CQE_SIZE + CQE_SIZE - 1, &[CQE_INVALID_OWN | 1])?;
    }
    let pas = buf.pas()?;
    let target = CqTarget::new(handler)?;
    let kern = KernCq::new()?;
    let slot = d.events.reserve::<CqTarget>()?;
    let cqn = exec(
        &*d.hw,
        &CreateCq {
            buf: buf.queue_buf(&pas),
            log_cq_size: log_size,
            cqe_size: CqeSize::B64,
            uar_page: d.uar,
            eqn,
            compression: None,
            overrun_ignore,
        },
    )?;
    d.events.attach(slot, &target, cqn);
    Ok(Mlx5Cq {
        cqn,
        uid: 0,
        log_size,
        real_time_ts: false,
        mem: QueueMem::Kernel { buf },
        events: target,
        kern: Some(kern),
        user_buf: None,
    })
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
pub(crate) fn create_user_cq(
    dev: &Device<Mlx5Ib>,
    attr: &CqInitAttr,
    handler: Option<&Arc<dyn CqHandler>>,
    user: &mut UserCtx<'_, '_, Mlx5Ib>,
    mem: CqMem,
) -> Result<Mlx5Cq> {
    let d = dev.data();
    let overrun_ignore = overrun_ignore(attr)?;
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
    // upstream create_cq_user(): `create_cq_in.uid` is the context's DEVX uid.
    let uid = mlx5_ctx(&ctx)?.devx_uid;
    let cqn = exec(
        &*d.hw,
        &CreateCq {
            buf: user_queue_buf(uid, page_offset, db.dma, &pas),
            log_cq_size: log_size,
            cqe_size: match p.stride {
                CqeStride::B64 => CqeSize::B64,
                CqeStride::B128 => CqeSize::B128,
                CqeStride::B128Pad => CqeSize::B128Pad,
            },
            uar_page: p.uar_index,
            eqn,
            compression: p.mini_cqe_format,
            overrun_ignore,
        },
    )?;
    d.events.attach(slot, &target, cqn);
    user.udata().copy_to(&uabi::create_cq_resp(cqn));
    Ok(Mlx5Cq {
        cqn,
        uid,
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
            uid: c.uid,
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
            uid: cq.data().uid,
            what: CqModify::Moderation { period, count },
        },
    )
}

/// upstream `mlx5_ib_destroy_cq()` → `mlx5_core_destroy_cq()`: the CQ leaves the event table
/// (no completion handler runs after this returns), then DESTROY_CQ; a refused command puts
/// it back.
///
/// # Errors
///
/// The errno of DESTROY_CQ (`Mlx5Hw::exec`); the CQ stays then.
pub(crate) fn destroy_cq(cq: &Cq<Mlx5Ib>) -> Result {
    let (d, c) = (cq.device().data(), cq.data());
    d.destroy_detached(&c.events, || {
        exec(
            &*d.hw,
            &DestroyCq {
                cqn: c.cqn,
                uid: c.uid,
            },
        )
    })
}

/// A kernel CQ's consumer state (upstream `cq->mcq.cons_index` under `cq->lock`).
pub(crate) struct KernCq {
    cons: Pin<KBox<SpinLockIrq<u32>>>,
}

impl KernCq {
    /// A CQ nothing was polled from.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new() -> Result<Self> {
        Ok(KernCq {
            cons: KBox::pin_init(new_spinlock_irq!(0u32), GFP_KERNEL)?,
        })
    }
}

/// The kernel parts of a CQ.
fn kern_cq(cq: &Cq<Mlx5Ib>) -> Result<(&KernCq, &KernBuf)> {
    let c = cq.data();
    match (&c.kern, &c.mem) {
        (Some(k), QueueMem::Kernel { buf }) => Ok((k, buf)),
        _ => Err(EINVAL),
    }
}

/// upstream `mlx5_handle_error_cqe()`: a CQE syndrome → `enum ib_wc_status`.
pub(crate) fn syndrome_status(s: u8) -> WcStatus {
    match s {
        syndrome::LOCAL_LENGTH => WcStatus::LocLenErr,
        syndrome::LOCAL_QP_OP => WcStatus::LocQpOpErr,
        syndrome::LOCAL_PROT => WcStatus::LocProtErr,
        syndrome::FLUSH => WcStatus::WrFlushErr,
        syndrome::MW_BIND => WcStatus::MwBindErr,
        syndrome::BAD_RESP => WcStatus::BadRespErr,
        syndrome::LOCAL_ACCESS => WcStatus::LocAccessErr,
        syndrome::REMOTE_INVAL_REQ => WcStatus::RemInvReqErr,
        syndrome::REMOTE_ACCESS => WcStatus::RemAccessErr,
        syndrome::REMOTE_OP => WcStatus::RemOpErr,
        syndrome::RETRY_EXC => WcStatus::RetryExcErr,
        syndrome::RNR_RETRY_EXC => WcStatus::RnrRetryExcErr,
        syndrome::REMOTE_ABORTED => WcStatus::RemAbortErr,
        _ => WcStatus::GeneralErr,
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u16::from_be_bytes)
}

fn be32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

/// One CQE → a work completion (upstream `mlx5_poll_one()`); `None` for a CQE that completes
/// nothing of a kernel QP (a QP already gone, a RESIZE CQE).
fn parse_cqe(qp: Option<&dyn KernQueues>, c: &[u8; CQE_SIZE], qpn: u32) -> Option<Wc> {
    let opcode = c[cqe_off::OP_OWN] >> 4;
    let qp = qp?;
    let mut wc = Wc {
        qp_num: qpn,
        ..Wc::default()
    };
    match opcode {
        cqe_op::REQ | cqe_op::REQ_ERR => {
            wc.wr_id = qp.retire_send(be16(c, cqe_off::WQE_COUNTER));
            if opcode == cqe_op::REQ_ERR {
                wc.status = syndrome_status(c[cqe_off::SYNDROME]);
                wc.vendor_err = u32::from(c[cqe_off::VENDOR_ERR_SYNDROME]);
                return Some(wc);
            }
            // upstream handle_good_req(): the send opcode is sop_drop_qpn's top byte.
            let (o, flags) = match c[cqe_off::SOP_DROP_QPN] {
                wqe_op::RDMA_WRITE_IMM => (WcOpcode::RdmaWrite, wc_flags::WITH_IMM),
                wqe_op::RDMA_WRITE => (WcOpcode::RdmaWrite, 0),
                wqe_op::SEND_IMM => (WcOpcode::Send, wc_flags::WITH_IMM),
                wqe_op::RDMA_READ => {
                    wc.byte_len = be32(c, cqe_off::BYTE_CNT);
                    (WcOpcode::RdmaRead, 0)
                }
                wqe_op::ATOMIC_CS => {
                    wc.byte_len = 8;
                    (WcOpcode::CompSwap, 0)
                }
                wqe_op::ATOMIC_FA => {
                    wc.byte_len = 8;
                    (WcOpcode::FetchAdd, 0)
                }
                _ => (WcOpcode::Send, 0),
            };
            wc.opcode = o;
            wc.wc_flags = flags;
        }
        cqe_op::RESP_WR_IMM | cqe_op::RESP_SEND | cqe_op::RESP_SEND_IMM | cqe_op::RESP_ERR => {
            wc.wr_id = qp.retire_recv();
            if opcode == cqe_op::RESP_ERR {
                wc.status = syndrome_status(c[cqe_off::SYNDROME]);
                wc.vendor_err = u32::from(c[cqe_off::VENDOR_ERR_SYNDROME]);
                wc.opcode = WcOpcode::Recv;
                return Some(wc);
            }
            // upstream handle_responder().
            wc.byte_len = be32(c, cqe_off::BYTE_CNT);
            wc.opcode = if opcode == cqe_op::RESP_WR_IMM {
                WcOpcode::RecvRdmaWithImm
            } else {
                WcOpcode::Recv
            };
            if opcode != cqe_op::RESP_SEND {
                wc.wc_flags |= wc_flags::WITH_IMM;
                wc.imm_data = be32(c, cqe_off::IMM);
            }
            let f = be32(c, cqe_off::FLAGS_RQPN);
            wc.src_qp = f & 0xff_ffff;
            wc.sl = ((f >> 24) & 0xf) as u8;
            if (f >> 28) & 3 != 0 {
                wc.wc_flags |= wc_flags::GRH;
            }
            wc.slid = be16(c, cqe_off::SLID);
        }
        _ => return None,
    }
    Some(wc)
}

/// upstream `mlx5_ib_poll_cq()` for a kernel CQ.
///
/// # Errors
///
/// `EINVAL` for a user CQ (or a CQE outside the buffer, a driver bug).
pub(crate) fn poll_cq(cq: &Cq<Mlx5Ib>, wc: &mut [Wc]) -> Result<usize> {
    let (k, buf) = kern_cq(cq)?;
    let c = cq.data();
    let d = cq.device().data();
    let mem = buf.mem();
    let log = u32::from(c.log_size);
    let mask = (1u32 << log) - 1;
    let mut ci = k.cons.lock();
    let mut n = 0;
    let mut consumed = false;
    while n < wc.len() {
        let off = (*ci & mask) as usize * CQE_SIZE;
        let mut own = [0u8; 1];
        mem.read(off + cqe_off::OP_OWN, &mut own)?;
        let opcode = own[0] >> 4;
        if opcode == cqe_op::INVALID || u32::from(own[0] & 1) != (*ci >> log) & 1 {
            break;
        }
        // upstream: dma_rmb() after the ownership check, before the CQE's body.
        dma_mb(Read);
        let mut cqe = [0u8; CQE_SIZE];
        mem.read(off, &mut cqe)?;
        *ci = ci.wrapping_add(1);
        consumed = true;
        let qpn = be32(&cqe, 56) & 0xff_ffff;
        let qp = d.events.kern_qp(qpn);
        if let Some(w) = parse_cqe(qp.as_deref(), &cqe, qpn) {
            if let Some(slot) = wc.get_mut(n) {
                *slot = w;
            }
            n += 1;
        }
    }
    if consumed {
        // upstream mlx5_cq_set_ci(): wmb() then the consumer index record.
        dma_mb(Write);
        mem.write_be32(buf.db_offset(), *ci & 0xff_ffff)?;
    }
    Ok(n)
}

/// upstream `mlx5_ib_arm_cq()` → `mlx5_cq_arm()` for a kernel CQ.
///
/// # Errors
///
/// `EINVAL` for a user CQ.
pub(crate) fn req_notify_cq(cq: &Cq<Mlx5Ib>, flags: CqNotify) -> Result {
    let (k, buf) = kern_cq(cq)?;
    let c = cq.data();
    let d = cq.device().data();
    let sn = c.events.arm_sn.load(kernel::sync::atomic::Relaxed) & 3;
    // MLX5_CQ_DB_REQ_NOT_SOL / MLX5_CQ_DB_REQ_NOT.
    let cmd = match flags {
        CqNotify::Solicited => 1u32 << 24,
        CqNotify::NextComp => 0,
    };
    let ci = *k.cons.lock() & 0xff_ffff;
    let arm = sn << 28 | cmd | ci;
    buf.mem().write_be32(buf.db_offset() + 4, arm)?;
    // upstream: wmb() between the arm record and the doorbell.
    dma_mb(Write);
    d.hw.ring(
        d.uar,
        Doorbell::CqArm,
        u64::from(arm) << 32 | u64::from(c.cqn),
    )
}
