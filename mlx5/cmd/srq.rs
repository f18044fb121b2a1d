// SPDX-License-Identifier: GPL-2.0

//! SRQ commands as mlx5_ib issues them on an ISSI 1 device for a basic SRQ: CREATE_RMP,
//! MODIFY_RMP (arm the limit), QUERY_RMP, DESTROY_RMP (upstream `create_rmp_cmd()`,
//! `arm_rmp_cmd()`, `query_rmp_cmd()`, `destroy_rmp_cmd()` in `srq_cmd.c`, chosen by
//! `create_srq_split()` when `mdev->issi` is not 0).

use super::{free_cmd, Command, InBox, OutBox, QueueBuf};
use crate::prm::cmd::{
    create_rmp_in, create_rmp_out, destroy_rmp_in, modify_rmp_in, query_rmp_in, query_rmp_out,
};
use crate::prm::cmd::{create_xrc_srq_in, create_xrc_srq_out, destroy_xrc_srq_in};
use crate::prm::command as pc;
use crate::prm::consts::{RMPC_STATE_RDY, WQ_TYPE_LINKED_LIST};
use crate::prm::ctx::xrc_srqc;
use crate::prm::ctx::{rmp_bitmask, rmpc, wq};
use crate::prm::layout::{Member, PrmError, PrmLayout};
use kernel::prelude::*;

/// CREATE_RMP (upstream `create_rmp_cmd()` with `set_wq()`).
pub(crate) struct CreateRmp<'a> {
    /// Owner and memory.
    pub(crate) buf: QueueBuf<'a>,
    /// PD number.
    pub(crate) pd: u32,
    /// log2 of the number of WQEs.
    pub(crate) log_size: u8,
    /// log2 of the WQE stride in bytes.
    pub(crate) log_stride: u8,
    /// The limit (`lwm`).
    pub(crate) lwm: u16,
    /// WQE signature (`MLX5_SRQ_FLAG_WQ_SIG`).
    pub(crate) wq_signature: bool,
}

/// A `wq` member of the RMP context at `ctx`.
fn wqf<L: PrmLayout>(ctx: Member<L>, f: Member<wq::Bits>) -> Member<L> {
    ctx.inner(rmpc::wq.inner(f))
}

impl Command for CreateRmp<'_> {
    type Prm = pc::CreateRmp;
    /// The RMP number (the SRQ number libmlx5 sees).
    type Reply = u32;

    fn queue_buf(&self) -> Option<QueueBuf<'_>> {
        Some(self.buf)
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        let ctx = create_rmp_in::ctx;
        inbox.set(ctx.inner(rmpc::state), RMPC_STATE_RDY)?;
        inbox.set(wqf(ctx, wq::wq_type), WQ_TYPE_LINKED_LIST)?;
        inbox.set(wqf(ctx, wq::wq_signature), u32::from(self.wq_signature))?;
        inbox.set(
            wqf(ctx, wq::log_wq_pg_sz),
            u32::from(self.buf.log_page_size),
        )?;
        inbox.set(wqf(ctx, wq::log_wq_stride), u32::from(self.log_stride))?;
        inbox.set(wqf(ctx, wq::log_wq_sz), u32::from(self.log_size))?;
        inbox.set(wqf(ctx, wq::page_offset), u32::from(self.buf.page_offset))?;
        inbox.set(wqf(ctx, wq::lwm), u32::from(self.lwm))?;
        inbox.set(wqf(ctx, wq::pd), self.pd)?;
        inbox.set64(wqf(ctx, wq::dbr_addr), self.buf.dbr_addr)?;
        super::set_addrs(inbox, self.buf.pas)?;
        Ok(())
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<u32> {
        Ok(out.get(create_rmp_out::rmpn))
    }
}

/// MODIFY_RMP setting the limit (upstream `arm_rmp_cmd()`).
pub(crate) struct ArmRmp {
    /// RMP number.
    pub(crate) rmpn: u32,
    /// Owner uid.
    pub(crate) uid: u16,
    /// The limit (`lwm`).
    pub(crate) lwm: u16,
}

impl Command for ArmRmp {
    type Prm = pc::ModifyRmp;
    type Reply = ();

    fn uid(&self) -> u16 {
        self.uid
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(modify_rmp_in::rmp_state, RMPC_STATE_RDY)?;
        inbox.set(modify_rmp_in::rmpn, self.rmpn)?;
        inbox.set(modify_rmp_in::bitmask.inner(rmp_bitmask::lwm), 1)?;
        let ctx = modify_rmp_in::ctx;
        inbox.set(ctx.inner(rmpc::state), RMPC_STATE_RDY)?;
        inbox.set(wqf(ctx, wq::lwm), u32::from(self.lwm))
    }

    fn reply(&self, _out: OutBox<'_, Self>) -> Result<()> {
        Ok(())
    }
}

/// QUERY_RMP (upstream `query_rmp_cmd()`).
pub(crate) struct QueryRmp {
    /// RMP number.
    pub(crate) rmpn: u32,
}

/// What QUERY_RMP reports that mlx5_ib reads (`get_wq()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RmpContext {
    /// The limit (0: not armed, or the limit event fired).
    pub(crate) lwm: u16,
    /// The RMP is not in RDY (upstream sets `MLX5_SRQ_FLAG_ERR`).
    pub(crate) error: bool,
}

impl Command for QueryRmp {
    type Prm = pc::QueryRmp;
    type Reply = RmpContext;

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(query_rmp_in::rmpn, self.rmpn)
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<RmpContext> {
        let ctx = query_rmp_out::rmp_context;
        Ok(RmpContext {
            lwm: u16::try_from(out.get(wqf(ctx, wq::lwm))).map_err(|_| EIO)?,
            error: out.get(ctx.inner(rmpc::state)) != RMPC_STATE_RDY,
        })
    }
}

free_cmd!(
    /// DESTROY_RMP (upstream `destroy_rmp_cmd()`).
    DestroyRmp, rmpn: destroy_rmp_in::rmpn
);

/// CREATE_XRC_SRQ (upstream `create_xrc_srq_cmd()`).
pub(crate) struct CreateXrcSrq<'a> {
    /// Owner and memory.
    pub(crate) buf: QueueBuf<'a>,
    /// XRC domain.
    pub(crate) xrcd: u32,
    /// PD number.
    pub(crate) pd: u32,
    /// The CQ its receives complete on.
    pub(crate) cqn: u32,
    /// `user_index` (CQE version 1).
    pub(crate) user_index: u32,
    /// log2 of the number of WQEs.
    pub(crate) log_size: u8,
    /// log2 of the WQE stride in bytes minus 4 (upstream `wqe_shift`).
    pub(crate) wqe_shift: u8,
    /// WQE signature.
    pub(crate) wq_signature: bool,
}

impl Command for CreateXrcSrq<'_> {
    type Prm = pc::CreateXrcSrq;
    /// The XRC SRQ number.
    type Reply = u32;

    fn queue_buf(&self) -> Option<QueueBuf<'_>> {
        Some(self.buf)
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        let x = |f| create_xrc_srq_in::xrc_srq_context_entry.inner(f);
        // MLX5_XRC_SRQC_STATE_GOOD is 0.
        inbox.set(x(xrc_srqc::log_xrc_srq_size), u32::from(self.log_size))?;
        inbox.set(x(xrc_srqc::log_rq_stride), u32::from(self.wqe_shift))?;
        inbox.set(x(xrc_srqc::page_offset), u32::from(self.buf.page_offset))?;
        inbox.set(
            x(xrc_srqc::log_page_size),
            u32::from(self.buf.log_page_size),
        )?;
        inbox.set(x(xrc_srqc::user_index), self.user_index)?;
        inbox.set(x(xrc_srqc::xrcd), self.xrcd)?;
        inbox.set(x(xrc_srqc::pd), self.pd)?;
        inbox.set(x(xrc_srqc::cqn), self.cqn)?;
        inbox.set(x(xrc_srqc::wq_signature), u32::from(self.wq_signature))?;
        // MLX5_SET64(xrc_srqc, db_record_addr): the high word, then bits 31:2.
        inbox.set(
            x(xrc_srqc::db_record_addr_h),
            (self.buf.dbr_addr >> 32) as u32,
        )?;
        inbox.set(
            x(xrc_srqc::db_record_addr_l),
            ((self.buf.dbr_addr & 0xffff_ffff) >> 2) as u32,
        )?;
        super::set_addrs(inbox, self.buf.pas)?;
        Ok(())
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<u32> {
        Ok(out.get(create_xrc_srq_out::xrc_srqn))
    }
}

free_cmd!(
    /// DESTROY_XRC_SRQ (upstream `destroy_xrc_srq_cmd()`).
    DestroyXrcSrq, srqn: destroy_xrc_srq_in::xrc_srqn
);
