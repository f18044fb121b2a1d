// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues of user contexts (upstream srq.c, `mlx5_ib_create_srq()` →
//! `create_srq_user()`): basic SRQs as RMPs and XRC SRQs, modify, query and destroy. A kernel
//! SRQ is `EOPNOTSUPP`: this driver has no kernel `post_srq_recv`.

use crate::cmd::srq::{ArmRmp, CreateRmp, CreateXrcSrq, DestroyRmp, DestroyXrcSrq, QueryRmp};
use crate::cmd::{exec, QueueBuf};
use crate::ib::device::{gen, Mlx5Ib, Mlx5IbDev};
use crate::ib::events::SrqTarget;
use crate::ib::queue::{page_offset, user_queue_buf};
use crate::ib::ucontext::{abi_err, mlx5_ctx};
use crate::ib::user_mem::{DbRecord, UserBuf};
use crate::prm::ctx::cmd_hca_cap;
use crate::uabi;
use ib_core_rs::verbs::{
    AccessFlags, Cq, Pd, Srq, SrqAttrMask, SrqHandler, SrqInitAttr, UserCtx, XrcSrqCreated, Xrcd,
};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A user SRQ (upstream `struct mlx5_ib_srq` with its `mlx5_core_srq`): an RMP.
pub(crate) struct Mlx5Srq {
    /// The RMP number (libmlx5's `srqn`).
    pub(crate) srqn: u32,
    /// The owner uid (upstream `msrq.uid`): the PD's DEVX uid for an RMP, 0 for an XRC SRQ.
    uid: u16,
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

impl Mlx5Srq {
    /// An XRC SRQ as the core takes it: its number is the `srq_num` XRC senders name.
    pub(crate) fn xrc_created(self) -> XrcSrqCreated<Self> {
        XrcSrqCreated {
            srq_num: self.srqn,
            data: self,
        }
    }
}

/// `MLX5_SRQ_FLAG_SIGNATURE` (mlx5-abi.h).
const SRQ_FLAG_SIGNATURE: u32 = 1 << 0;

/// `sizeof(struct mlx5_wqe_srq_next_seg)`.
const SRQ_NEXT_SEG: u32 = 16;

/// upstream `mlx5_ib_create_srq()` → `create_srq_user()` → `mlx5_cmd_create_srq()` for an SRQ
/// of a user context: the size rules (`max_wr` at least `2^log_max_srq_sz`, or `max_sge` above
/// `max_wqe_sz_rq / 16`: `EINVAL`), `max_wr + 1` WQEs rounded up to a power of two, each
/// `16 + 16 * max_sge` bytes rounded up to a power of two (at least 32); the request
/// `mlx5_ib_create_srq` (`buf_addr`, `db_addr`, `flags`; the reserved words must be 0), the
/// buffer pinned, the doorbell record mapped; the response is `mlx5_ib_create_srq_resp
/// { srqn }` and `attr.max_wr` becomes the WQEs minus one. A kernel SRQ is `EOPNOTSUPP`: this
/// driver has no kernel `post_srq_recv`.
///
/// A basic SRQ (`xrc` `None`) is an RMP (`create_rmp_cmd()`, CREATE_RMP); an `IB_SRQT_XRC` one
/// (`xrc`: its XRC domain and CQ) also takes the request's `uidx` and is CREATE_XRC_SRQ
/// (`create_xrc_srq_cmd()`): its number is the `srq_num` XRC senders name (upstream
/// `ibsrq.ext.xrc.srq_num`, [`Mlx5Srq::xrc_created`]).
///
/// # Errors
///
/// As above; the pin's errno; CREATE_RMP's or CREATE_XRC_SRQ's errno. Nothing is left behind
/// on failure.
pub(crate) fn create_srq(
    pd: &Pd<Mlx5Ib>,
    xrc: Option<(&Xrcd<Mlx5Ib>, &Cq<Mlx5Ib>)>,
    attr: &mut SrqInitAttr,
    handler: Option<&Arc<dyn SrqHandler>>,
    user: Option<&mut UserCtx<'_, '_, Mlx5Ib>>,
) -> Result<Mlx5Srq> {
    let d = pd.device().data();
    srq_limits(d, attr)?;
    let user = user.ok_or(EOPNOTSUPP)?;
    // upstream mlx5_ib_create_srq(): `in.uid` is the PD's uid except for an XRC SRQ.
    let uid = if xrc.is_some() { 0 } else { pd.data().uid };
    let q = SrqQueue::from_user(attr, user, xrc.is_some(), uid)?;
    let target = SrqTarget::new(handler)?;
    let slot = d.events.reserve::<SrqTarget>()?;
    let wq_signature = q.flags & SRQ_FLAG_SIGNATURE != 0;
    let srqn = match xrc {
        None => exec(
            &*d.hw,
            &CreateRmp {
                buf: q.queue_buf(),
                pd: pd.data().pdn,
                log_size: q.max.ilog2() as u8,
                log_stride: q.desc.ilog2() as u8,
                lwm: 0,
                wq_signature,
            },
        )?,
        Some((xrcd, cq)) => exec(
            &*d.hw,
            &CreateXrcSrq {
                buf: q.queue_buf(),
                xrcd: xrcd.xrcdn(),
                pd: pd.data().pdn,
                cqn: cq.data().cqn,
                user_index: if gen(d)?.get(cmd_hca_cap::cqe_version) == 1 {
                    q.uidx
                } else {
                    0
                },
                log_size: q.max.ilog2() as u8,
                wqe_shift: (q.desc.ilog2() - 4) as u8,
                wq_signature,
            },
        )?,
    };
    d.events.attach(slot, &target, srqn);
    Ok(q.finish(srqn, attr, user, target, xrc.is_some()))
}

/// upstream `mlx5_ib_create_srq()`'s size checks.
fn srq_limits(d: &Mlx5IbDev, attr: &SrqInitAttr) -> Result {
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
    /// The owner uid of the SRQ.
    uid: u16,
    page_offset: u8,
    pas: KVec<u64>,
    buf: UserBuf,
    db: DbRecord,
}

impl SrqQueue {
    /// The create command's view of the queue.
    fn queue_buf(&self) -> QueueBuf<'_> {
        user_queue_buf(self.uid, self.page_offset, self.db.dma, &self.pas)
    }

    /// `max_wr + 1` WQEs rounded up to a power of two, each `16 + 16 * max_sge` bytes
    /// rounded up to a power of two (at least 32); the request `mlx5_ib_create_srq`: the
    /// reserved words must be 0; an XRC SRQ's `uidx` (upstream `get_srq_user_index()`: the
    /// field present exactly with CQE version 1, `verify_assign_uidx()`).
    fn from_user(
        attr: &SrqInitAttr,
        user: &mut UserCtx<'_, '_, Mlx5Ib>,
        xrc: bool,
        uid: u16,
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
            uid,
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
            uid: self.uid,
            max: self.max,
            max_gs: attr.max_sge,
            xrc,
            events: target,
            _buf: self.buf,
            _db: self.db,
        }
    }
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
                uid: s.uid,
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
                uid: s.uid,
            },
        )
    } else {
        exec(
            &*d.hw,
            &DestroyRmp {
                rmpn: s.srqn,
                uid: s.uid,
            },
        )
    };
    if r.is_err() {
        d.events.reattach(&s.events, detached);
    }
    r
}
