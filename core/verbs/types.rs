// SPDX-License-Identifier: GPL-2.0

//! Work requests and completions (upstream `struct ib_send_wr`,
//! `struct ib_recv_wr`, `struct ib_sge`, `struct ib_wc`).

/// A scatter/gather element (upstream `struct ib_sge`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// DMA address.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// Local key of the MR covering it.
    pub lkey: u32,
}

/// Send opcodes (upstream `enum ib_wr_opcode`, the ones used so far).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrOpcode {
    /// `IB_WR_RDMA_WRITE`.
    RdmaWrite = 0,
    /// `IB_WR_SEND`.
    Send = 2,
    /// `IB_WR_RDMA_READ`.
    RdmaRead = 4,
    /// `IB_WR_LOCAL_INV`.
    LocalInv = 7,
    /// `IB_WR_REG_MR`.
    RegMr = 0x20,
}

/// A send work request (upstream `struct ib_send_wr`).
#[derive(Clone, Copy, Debug)]
pub struct SendWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// What to do.
    pub opcode: WrOpcode,
    /// `IB_SEND_*` flags.
    pub send_flags: u32,
    /// The data.
    pub sg_list: &'a [Sge],
}

/// A receive work request (upstream `struct ib_recv_wr`).
#[derive(Clone, Copy, Debug)]
pub struct RecvWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Where received data goes.
    pub sg_list: &'a [Sge],
}

/// Completion status (upstream `enum ib_wc_status`, the common ones).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WcStatus {
    /// `IB_WC_SUCCESS`.
    #[default]
    Success = 0,
    /// `IB_WC_LOC_LEN_ERR`.
    LocLenErr = 1,
    /// `IB_WC_LOC_PROT_ERR`.
    LocProtErr = 4,
    /// `IB_WC_WR_FLUSH_ERR`.
    WrFlushErr = 5,
    /// `IB_WC_GENERAL_ERR`.
    GeneralErr = 21,
}

/// Completion opcode (upstream `enum ib_wc_opcode`, the common ones).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WcOpcode {
    /// `IB_WC_SEND`.
    #[default]
    Send = 0,
    /// `IB_WC_RDMA_WRITE`.
    RdmaWrite = 1,
    /// `IB_WC_RDMA_READ`.
    RdmaRead = 2,
    /// `IB_WC_RECV` (`1 << 7`).
    Recv = 128,
}

/// A work completion (upstream `struct ib_wc`, the common fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wc {
    /// The work request's `wr_id`.
    pub wr_id: u64,
    /// Status.
    pub status: WcStatus,
    /// What completed.
    pub opcode: WcOpcode,
    /// Bytes received.
    pub byte_len: u32,
    /// The local QP number.
    pub qp_num: u32,
}
