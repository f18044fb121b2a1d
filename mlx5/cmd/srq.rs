// SPDX-License-Identifier: GPL-2.0

//! SRQ commands as mlx5_ib issues them on an ISSI 1 device for a basic SRQ: CREATE_RMP,
//! MODIFY_RMP (arm the limit), QUERY_RMP, DESTROY_RMP (upstream `create_rmp_cmd()`,
//! `arm_rmp_cmd()`, `query_rmp_cmd()`, `destroy_rmp_cmd()` in `srq_cmd.c`, chosen by
//! `create_srq_split()` when `mdev->issi` is not 0).

use super::{empty_reply, rd, Command};
use crate::prm::cmd::{
    create_rmp_in, create_rmp_out, destroy_rmp_in, destroy_rmp_out, modify_rmp_in, modify_rmp_out,
    query_rmp_in, query_rmp_out,
};
use crate::prm::consts::{RMPC_STATE_RDY, WQ_TYPE_LINKED_LIST};
use crate::prm::ctx::{rmp_bitmask, rmpc, wq};
use crate::prm::layout::{Field, PrmError};
use crate::prm::opcode;
use kernel::prelude::*;

/// CREATE_RMP (upstream `create_rmp_cmd()` with `set_wq()`).
pub(crate) struct CreateRmp<'a> {
    /// Owner uid (the PD's).
    pub(crate) uid: u16,
    /// PD number.
    pub(crate) pd: u32,
    /// log2 of the number of WQEs.
    pub(crate) log_size: u8,
    /// log2 of the WQE stride in bytes.
    pub(crate) log_stride: u8,
    /// log2 of the buffer page size minus 12.
    pub(crate) log_page_size: u8,
    /// Offset of the buffer in its first page (quantized, 64-byte units of a 4 KiB page).
    pub(crate) page_offset: u8,
    /// The limit (`lwm`).
    pub(crate) lwm: u16,
    /// WQE signature (`MLX5_SRQ_FLAG_WQ_SIG`).
    pub(crate) wq_signature: bool,
    /// Doorbell record DMA address.
    pub(crate) dbr_addr: u64,
    /// DMA addresses of the buffer's pages (`pas[]`).
    pub(crate) pas: &'a [u64],
}

/// A `wq` member of the RMP context at `ctx`.
fn wqf(ctx: Field, f: Field) -> Field {
    ctx.inner(rmpc::wq.inner(f))
}

impl Command for CreateRmp<'_> {
    const OPCODE: u16 = opcode::CREATE_RMP;
    const IN_SIZE: usize = create_rmp_in::SIZE_BYTES;
    const OUT_SIZE: usize = create_rmp_out::SIZE_BYTES;
    /// The RMP number (the SRQ number libmlx5 sees).
    type Reply = u32;

    fn uid(&self) -> u16 {
        self.uid
    }

    fn in_len(&self) -> usize {
        Self::IN_SIZE.saturating_add(self.pas.len().saturating_mul(8))
    }

    fn fill(&self, inbox: &mut [u8]) -> Result<(), PrmError> {
        let ctx = create_rmp_in::ctx;
        ctx.inner(rmpc::state).set(inbox, RMPC_STATE_RDY)?;
        wqf(ctx, wq::wq_type).set(inbox, WQ_TYPE_LINKED_LIST)?;
        wqf(ctx, wq::wq_signature).set(inbox, u32::from(self.wq_signature))?;
        wqf(ctx, wq::log_wq_pg_sz).set(inbox, u32::from(self.log_page_size))?;
        wqf(ctx, wq::log_wq_stride).set(inbox, u32::from(self.log_stride))?;
        wqf(ctx, wq::log_wq_sz).set(inbox, u32::from(self.log_size))?;
        wqf(ctx, wq::page_offset).set(inbox, u32::from(self.page_offset))?;
        wqf(ctx, wq::lwm).set(inbox, u32::from(self.lwm))?;
        wqf(ctx, wq::pd).set(inbox, self.pd)?;
        wqf(ctx, wq::dbr_addr).set64(inbox, self.dbr_addr)?;
        super::set_addrs(inbox, "pas", create_rmp_in::SIZE_BITS, self.pas)?;
        Ok(())
    }

    fn reply(&self, out: &[u8]) -> Result<u32> {
        rd(create_rmp_out::rmpn, out)
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
    const OPCODE: u16 = opcode::MODIFY_RMP;
    const IN_SIZE: usize = modify_rmp_in::SIZE_BYTES;
    const OUT_SIZE: usize = modify_rmp_out::SIZE_BYTES;
    type Reply = ();

    fn uid(&self) -> u16 {
        self.uid
    }

    fn fill(&self, inbox: &mut [u8]) -> Result<(), PrmError> {
        modify_rmp_in::rmp_state.set(inbox, RMPC_STATE_RDY)?;
        modify_rmp_in::rmpn.set(inbox, self.rmpn)?;
        modify_rmp_in::bitmask
            .inner(rmp_bitmask::lwm)
            .set(inbox, 1)?;
        let ctx = modify_rmp_in::ctx;
        ctx.inner(rmpc::state).set(inbox, RMPC_STATE_RDY)?;
        wqf(ctx, wq::lwm).set(inbox, u32::from(self.lwm))
    }

    empty_reply!();
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
    const OPCODE: u16 = opcode::QUERY_RMP;
    const IN_SIZE: usize = query_rmp_in::SIZE_BYTES;
    const OUT_SIZE: usize = query_rmp_out::SIZE_BYTES;
    type Reply = RmpContext;

    fn fill(&self, inbox: &mut [u8]) -> Result<(), PrmError> {
        query_rmp_in::rmpn.set(inbox, self.rmpn)
    }

    fn reply(&self, out: &[u8]) -> Result<RmpContext> {
        let ctx = query_rmp_out::rmp_context;
        Ok(RmpContext {
            lwm: u16::try_from(rd(wqf(ctx, wq::lwm), out)?).map_err(|_| EIO)?,
            error: rd(ctx.inner(rmpc::state), out)? != RMPC_STATE_RDY,
        })
    }
}

/// DESTROY_RMP (upstream `destroy_rmp_cmd()`).
pub(crate) struct DestroyRmp {
    /// RMP number.
    pub(crate) rmpn: u32,
    /// Owner uid.
    pub(crate) uid: u16,
}

impl Command for DestroyRmp {
    const OPCODE: u16 = opcode::DESTROY_RMP;
    const IN_SIZE: usize = destroy_rmp_in::SIZE_BYTES;
    const OUT_SIZE: usize = destroy_rmp_out::SIZE_BYTES;
    type Reply = ();

    fn uid(&self) -> u16 {
        self.uid
    }

    fn fill(&self, inbox: &mut [u8]) -> Result<(), PrmError> {
        destroy_rmp_in::rmpn.set(inbox, self.rmpn)
    }

    empty_reply!();
}
