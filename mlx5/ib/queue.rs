// SPDX-License-Identifier: GPL-2.0

//! The memory of CQ, QP and SRQ queues: a kernel consumer's device-coherent buffer with its
//! doorbell record ([`KernBuf`], upstream `struct mlx5_frag_buf` and `struct mlx5_db`), a user
//! context's pinned buffer and doorbell record ([`QueueMem::User`]), and the size arithmetic
//! the create paths share.
//!
//! Kernel buffers come from [`Mlx5Hw::alloc_coherent`] (upstream `mlx5_frag_buf_alloc_node()`
//! → `dma_alloc_coherent()`); `pas[]` carries the bus address of each page, and the doorbell
//! record is in the page after the queue (upstream takes it from a shared doorbell page,
//! `mlx5_db_alloc()`).

use crate::cmd::QueueBuf;
use crate::hw::{DmaBuf, Mlx5Hw};
use crate::ib::user_mem::{DbRecord, UserBuf};
use kernel::prelude::*;

/// Adapter page size (`MLX5_ADAPTER_PAGE_SHIFT`).
const PAGE: usize = 4096;

/// A kernel queue buffer the device is told about by page (upstream `struct mlx5_frag_buf`),
/// followed by a page holding its doorbell record (`struct mlx5_db`).
pub(crate) struct KernBuf {
    buf: DmaBuf,
    queue_len: usize,
}

impl KernBuf {
    pub(crate) fn new(hw: &dyn Mlx5Hw, len: usize) -> Result<Self> {
        let queue_len = len.max(1).next_multiple_of(PAGE);
        Ok(KernBuf {
            buf: hw.alloc_coherent(queue_len + PAGE)?,
            queue_len,
        })
    }

    /// `pas[]`: the bus address of each adapter page of the queue.
    pub(crate) fn pas(&self) -> Result<KVec<u64>> {
        let mut v = self.buf.map().page_addrs()?;
        v.truncate(self.queue_len / PAGE);
        Ok(v)
    }

    /// The doorbell record's bus address.
    pub(crate) fn dbr_addr(&self) -> u64 {
        self.buf.bus(self.queue_len)
    }

    /// The create command's view of this buffer with its page list `pas` (from [`KernBuf::pas`]):
    /// adapter pages (`log_page_size` 0) from offset 0, owned by the kernel.
    pub(crate) fn queue_buf<'a>(&self, pas: &'a [u64]) -> QueueBuf<'a> {
        QueueBuf {
            uid: 0,
            log_page_size: 0,
            page_offset: 0,
            dbr_addr: self.dbr_addr(),
            pas,
        }
    }

    /// The memory (queue at 0, doorbell record at [`KernBuf::db_offset`]).
    pub(crate) fn mem(&self) -> &DmaBuf {
        &self.buf
    }

    /// The offset of the doorbell record in [`KernBuf::mem`].
    pub(crate) fn db_offset(&self) -> usize {
        self.queue_len
    }
}

/// Where a CQ's or QP's queues and doorbell record live.
pub(crate) enum QueueMem {
    /// A kernel consumer's: a kernel buffer and doorbell record.
    Kernel {
        /// The buffer and doorbell record.
        buf: KernBuf,
    },
    /// A user context's (upstream `cq->buf.umem`/`qp->trans_qp.base.ubuffer.umem` and
    /// `mlx5_ib_db_map_user()`): the pinned buffer (none for a QP without queues) and the
    /// doorbell record in a pinned, shared user page. Dropped after the destroy command.
    User {
        /// The pinned buffer.
        _buf: Option<UserBuf>,
        /// The doorbell record.
        _db: DbRecord,
    },
    /// None: a DC target has no queue of its own (it receives from its SRQ).
    None,
}

/// `ceil(log2(n))`.
///
/// # Errors
///
/// `EINVAL` if `n` rounded up to a power of two overflows.
pub(crate) fn ilog2_ceil(n: u32) -> Result<u8> {
    let p = n.max(1).checked_next_power_of_two().ok_or(EINVAL)?;
    Ok(p.trailing_zeros() as u8)
}

/// `MLX5_ADAPTER_PAGE_SHIFT`.
const ADAPTER_PAGE_SHIFT: u32 = 12;

/// `cqc`/`qpc` `log_page_size` of `PAGE_SIZE` blocks (`order_base_2(page_size) - 12`).
pub(crate) const LOG_PAGE_SIZE: u8 = (kernel::page::PAGE_SHIFT as u32 - ADAPTER_PAGE_SHIFT) as u8;

/// The create command's view of a queue in pinned user memory: `PAGE_SIZE` pages
/// ([`LOG_PAGE_SIZE`]) from `page_offset` (of [`page_offset`]), the doorbell record at
/// `dbr_addr`, owned by `uid` (upstream: a DEVX context's verbs objects carry its uid, which
/// its DEVX objects may then name; 0 for a context without DEVX).
pub(crate) fn user_queue_buf(
    uid: u16,
    page_offset: u8,
    dbr_addr: u64,
    pas: &[u64],
) -> QueueBuf<'_> {
    QueueBuf {
        uid,
        log_page_size: LOG_PAGE_SIZE,
        page_offset,
        dbr_addr,
        pas,
    }
}

/// The quantized `page_offset` of a buffer in `PAGE_SIZE` blocks (64-byte units; upstream
/// `mlx5_umem_find_best_quantized_pgoff()` returns no page size, `EINVAL`, when the offset is
/// not a multiple of the quantum).
pub(crate) fn page_offset(buf: &UserBuf) -> Result<u8> {
    let off = buf.page_offset();
    if off % 64 != 0 {
        return Err(EINVAL);
    }
    u8::try_from(off / 64).map_err(|_| EINVAL)
}
