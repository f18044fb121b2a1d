// SPDX-License-Identifier: GPL-2.0

//! CQ commands (upstream `mlx5_core_create_cq()`, `mlx5_core_destroy_cq()`,
//! `mlx5_core_query_cq()`; the `cqc` fields mlx5_ib `create_cq_user()`/`create_cq_kernel()` set).

use super::{free_cmd, Command, InBox, OutBox, QueueBuf};
use crate::prm::cmd::{
    create_cq_in, create_cq_out, destroy_cq_in, modify_cq_in, query_cq_in, query_cq_out,
};
use crate::prm::command as pc;
use crate::prm::consts;
use crate::prm::ctx::cqc;
use crate::prm::layout::PrmError;
use kernel::prelude::*;

/// CQE size (`cqc.cqe_sz`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CqeSize {
    /// 64-byte CQEs (0).
    B64 = 0,
    /// 128-byte CQEs (1).
    B128 = 1,
    /// 128-byte CQE stride with 64-byte CQEs padded (`CQE_STRIDE_128_PAD`, 2).
    B128Pad = 2,
}

/// CREATE_CQ.
pub(crate) struct CreateCq<'a> {
    /// Owner and memory.
    pub(crate) buf: QueueBuf<'a>,
    /// log2 of the number of CQEs.
    pub(crate) log_cq_size: u8,
    /// CQE size.
    pub(crate) cqe_size: CqeSize,
    /// UAR page for doorbells.
    pub(crate) uar_page: u32,
    /// Completion EQ number (`mlx5_comp_eqn_get()`).
    pub(crate) eqn: u32,
    /// CQE compression with this `mini_cqe_res_format` (`cqc.cqe_comp_en`).
    pub(crate) compression: Option<u8>,
    /// `cqc.oi`: overrun ignore (`IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN`).
    pub(crate) overrun_ignore: bool,
}

impl Command for CreateCq<'_> {
    type Prm = pc::CreateCq;
    /// The CQ number.
    type Reply = u32;

    fn queue_buf(&self) -> Option<QueueBuf<'_>> {
        Some(self.buf)
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        let c = |f| create_cq_in::cq_context.inner(f);
        inbox.set(c(cqc::log_cq_size), u32::from(self.log_cq_size))?;
        inbox.set(c(cqc::cqe_sz), self.cqe_size as u32)?;
        inbox.set(c(cqc::uar_page), self.uar_page)?;
        inbox.set(c(cqc::c_eqn_or_apu_element), self.eqn)?;
        inbox.set(c(cqc::log_page_size), u32::from(self.buf.log_page_size))?;
        inbox.set(c(cqc::page_offset), u32::from(self.buf.page_offset))?;
        if self.overrun_ignore {
            inbox.set(c(cqc::oi), 1)?;
        }
        if let Some(f) = self.compression {
            inbox.set(c(cqc::cqe_comp_en), 1)?;
            inbox.set(c(cqc::mini_cqe_res_format), u32::from(f))?;
        }
        inbox.set64(c(cqc::dbr_addr), self.buf.dbr_addr)?;
        super::set_addrs(inbox, self.buf.pas)?;
        Ok(())
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<u32> {
        Ok(out.get(create_cq_out::cqn))
    }
}

free_cmd!(
    /// DESTROY_CQ.
    DestroyCq, cqn: destroy_cq_in::cqn
);

/// What a MODIFY_CQ changes.
pub(crate) enum CqModify<'a> {
    /// Moderation (upstream `mlx5_core_modify_cq_moderation()`, op_mod 0, `MLX5_CQ_MODIFY_PERIOD
    /// | MLX5_CQ_MODIFY_COUNT`): an event after `count` CQEs or `period` microseconds.
    Moderation {
        /// `cqc.cq_period`.
        period: u16,
        /// `cqc.cq_max_count`.
        count: u16,
    },
    /// A new buffer (upstream `mlx5_ib_resize_cq()`, `MLX5_CQ_OPMOD_RESIZE` with
    /// `MLX5_MODIFY_CQ_MASK_LOG_SIZE | _PG_OFFSET | _PG_SIZE`): the device writes a RESIZE CQE
    /// into the old buffer and continues in the new one.
    Resize {
        /// log2 of the new number of CQEs.
        log_cq_size: u8,
        /// CQE size of the new buffer.
        cqe_size: CqeSize,
        /// log2 of the buffer page size minus 12.
        log_page_size: u8,
        /// Offset of the buffer in its first page, in 64-byte units.
        page_offset: u8,
        /// DMA addresses of the new buffer's pages.
        pas: &'a [u64],
    },
}

/// MODIFY_CQ.
pub(crate) struct ModifyCq<'a> {
    /// CQ number.
    pub(crate) cqn: u32,
    /// Owner uid.
    pub(crate) uid: u16,
    /// The change.
    pub(crate) what: CqModify<'a>,
}

/// `MLX5_MODIFY_CQ_MASK_PG_OFFSET` (cq.h).
const MODIFY_CQ_MASK_PG_OFFSET: u32 = 1 << 1;
/// `MLX5_MODIFY_CQ_MASK_PG_SIZE` (cq.h).
const MODIFY_CQ_MASK_PG_SIZE: u32 = 1 << 2;

impl Command for ModifyCq<'_> {
    type Prm = pc::ModifyCq;
    type Reply = ();

    fn uid(&self) -> u16 {
        self.uid
    }

    fn op_mod(&self) -> u32 {
        match self.what {
            CqModify::Moderation { .. } => 0,
            CqModify::Resize { .. } => consts::CQ_OPMOD_RESIZE,
        }
    }

    fn in_len(&self) -> usize {
        match self.what {
            CqModify::Moderation { .. } => Self::IN_SIZE,
            CqModify::Resize { pas, .. } => Self::in_len_with_addrs(pas.len()),
        }
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        let c = |f| modify_cq_in::cq_context.inner(f);
        let select = modify_cq_in::modify_field_select_resize_field_select;
        inbox.set(modify_cq_in::cqn, self.cqn)?;
        match self.what {
            CqModify::Moderation { period, count } => {
                inbox.set(select, consts::CQ_MODIFY_PERIOD | consts::CQ_MODIFY_COUNT)?;
                inbox.set(c(cqc::cq_period), u32::from(period))?;
                inbox.set(c(cqc::cq_max_count), u32::from(count))
            }
            CqModify::Resize {
                log_cq_size,
                cqe_size,
                log_page_size,
                page_offset,
                pas,
            } => {
                inbox.set(
                    select,
                    consts::MODIFY_CQ_MASK_LOG_SIZE
                        | MODIFY_CQ_MASK_PG_OFFSET
                        | MODIFY_CQ_MASK_PG_SIZE,
                )?;
                inbox.set(c(cqc::log_cq_size), u32::from(log_cq_size))?;
                inbox.set(c(cqc::cqe_sz), cqe_size as u32)?;
                inbox.set(c(cqc::log_page_size), u32::from(log_page_size))?;
                inbox.set(c(cqc::page_offset), u32::from(page_offset))?;
                super::set_addrs(inbox, pas)?;
                Ok(())
            }
        }
    }

    fn reply(&self, _out: OutBox<'_, Self>) -> Result<()> {
        Ok(())
    }
}

/// QUERY_CQ.
pub(crate) struct QueryCq {
    /// CQ number.
    pub(crate) cqn: u32,
}

/// The CQ context members a driver reads back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CqContext {
    /// `cqc.status` (0 OK, 9 overflow, 10 write fail).
    pub(crate) status: u8,
    /// `log_cq_size`.
    pub(crate) log_cq_size: u8,
    /// `uar_page`.
    pub(crate) uar_page: u32,
    /// `c_eqn`.
    pub(crate) eqn: u32,
    /// `consumer_counter`.
    pub(crate) consumer_counter: u32,
    /// `producer_counter`.
    pub(crate) producer_counter: u32,
}

impl Command for QueryCq {
    type Prm = pc::QueryCq;
    type Reply = CqContext;

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(query_cq_in::cqn, self.cqn)
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<CqContext> {
        let c = |f| out.get(query_cq_out::cq_context.inner(f));
        Ok(CqContext {
            status: c(cqc::status) as u8,
            log_cq_size: c(cqc::log_cq_size) as u8,
            uar_page: c(cqc::uar_page),
            eqn: c(cqc::c_eqn_or_apu_element),
            consumer_counter: c(cqc::consumer_counter),
            producer_counter: c(cqc::producer_counter),
        })
    }
}
