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

upstream_enum! {
    /// Send opcodes (upstream `enum ib_wr_opcode`, the ones used so far).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub enum WrOpcode: u32 {
        RdmaWrite = 0 => IB_WR_RDMA_WRITE,
        RdmaWriteImm = 1 => IB_WR_RDMA_WRITE_WITH_IMM,
        #[default]
        Send = 2 => IB_WR_SEND,
        SendImm = 3 => IB_WR_SEND_WITH_IMM,
        RdmaRead = 4 => IB_WR_RDMA_READ,
        AtomicCmpSwap = 5 => IB_WR_ATOMIC_CMP_AND_SWP,
        AtomicFetchAdd = 6 => IB_WR_ATOMIC_FETCH_AND_ADD,
        LocalInv = 7 => IB_WR_LOCAL_INV,
        RegMr = 0x20 => IB_WR_REG_MR,
    }
}

/// `IB_SEND_*` flags of [`SendWr::send_flags`] (upstream `enum ib_send_flags`).
pub mod send_flags {
    /// `IB_SEND_FENCE`.
    pub const FENCE: u32 = 1 << 0;
    /// `IB_SEND_SIGNALED`.
    pub const SIGNALED: u32 = 1 << 1;
    /// `IB_SEND_SOLICITED`.
    pub const SOLICITED: u32 = 1 << 2;
    /// `IB_SEND_INLINE`.
    pub const INLINE: u32 = 1 << 3;
}

/// A send work request (upstream `struct ib_send_wr` with the members of `ib_rdma_wr` and
/// `ib_atomic_wr`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SendWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// What to do.
    pub opcode: WrOpcode,
    /// `IB_SEND_*` flags ([`send_flags`]).
    pub send_flags: u32,
    /// The data.
    pub sg_list: &'a [Sge],
    /// Immediate data of `*_IMM` opcodes (upstream `ex.imm_data`; host order here, sent
    /// big-endian).
    pub imm_data: u32,
    /// RDMA and atomics: the remote address.
    pub remote_addr: u64,
    /// RDMA and atomics: the remote key.
    pub rkey: u32,
    /// Atomics: the compare value (compare-and-swap) or the addend (fetch-and-add).
    pub compare_add: u64,
    /// Compare-and-swap: the value to store.
    pub swap: u64,
}

/// A receive work request (upstream `struct ib_recv_wr`).
#[derive(Clone, Copy, Debug)]
pub struct RecvWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Where received data goes.
    pub sg_list: &'a [Sge],
}

upstream_enum! {
    /// Completion status (upstream `enum ib_wc_status`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub enum WcStatus: u32 {
        #[default]
        Success = 0 => IB_WC_SUCCESS,
        LocLenErr = 1 => IB_WC_LOC_LEN_ERR,
        LocQpOpErr = 2 => IB_WC_LOC_QP_OP_ERR,
        LocEecOpErr = 3 => IB_WC_LOC_EEC_OP_ERR,
        LocProtErr = 4 => IB_WC_LOC_PROT_ERR,
        WrFlushErr = 5 => IB_WC_WR_FLUSH_ERR,
        MwBindErr = 6 => IB_WC_MW_BIND_ERR,
        BadRespErr = 7 => IB_WC_BAD_RESP_ERR,
        LocAccessErr = 8 => IB_WC_LOC_ACCESS_ERR,
        RemInvReqErr = 9 => IB_WC_REM_INV_REQ_ERR,
        RemAccessErr = 10 => IB_WC_REM_ACCESS_ERR,
        RemOpErr = 11 => IB_WC_REM_OP_ERR,
        RetryExcErr = 12 => IB_WC_RETRY_EXC_ERR,
        RnrRetryExcErr = 13 => IB_WC_RNR_RETRY_EXC_ERR,
        LocRddViolErr = 14 => IB_WC_LOC_RDD_VIOL_ERR,
        RemInvRdReqErr = 15 => IB_WC_REM_INV_RD_REQ_ERR,
        RemAbortErr = 16 => IB_WC_REM_ABORT_ERR,
        InvEecnErr = 17 => IB_WC_INV_EECN_ERR,
        InvEecStateErr = 18 => IB_WC_INV_EEC_STATE_ERR,
        FatalErr = 19 => IB_WC_FATAL_ERR,
        RespTimeoutErr = 20 => IB_WC_RESP_TIMEOUT_ERR,
        GeneralErr = 21 => IB_WC_GENERAL_ERR,
    }
}

upstream_enum! {
    /// Completion opcode (upstream `enum ib_wc_opcode`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub enum WcOpcode: u32 {
        #[default]
        Send = 0 => IB_WC_SEND,
        RdmaWrite = 1 => IB_WC_RDMA_WRITE,
        RdmaRead = 2 => IB_WC_RDMA_READ,
        CompSwap = 3 => IB_WC_COMP_SWAP,
        FetchAdd = 4 => IB_WC_FETCH_ADD,
        LocalInv = 6 => IB_WC_LOCAL_INV,
        RegMr = 7 => IB_WC_REG_MR,
        /// Its value is `1 << 7`.
        Recv = 128 => IB_WC_RECV,
        RecvRdmaWithImm = 129 => IB_WC_RECV_RDMA_WITH_IMM,
    }
}

/// `IB_WC_*` flags of [`Wc::wc_flags`] (upstream `enum ib_wc_flags`).
pub mod wc_flags {
    /// `IB_WC_GRH`: a GRH is in the first 40 bytes of the receive buffer.
    pub const GRH: u32 = 1 << 0;
    /// `IB_WC_WITH_IMM`: `imm_data` is valid.
    pub const WITH_IMM: u32 = 1 << 1;
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
    /// The device's own error code (upstream `vendor_err`; mlx5: the CQE's syndrome).
    pub vendor_err: u32,
    /// Bytes received (and of a completed RDMA read or atomic).
    pub byte_len: u32,
    /// The local QP number.
    pub qp_num: u32,
    /// Immediate data (with [`wc_flags::WITH_IMM`]; host order here).
    pub imm_data: u32,
    /// The remote QP number (receives).
    pub src_qp: u32,
    /// `IB_WC_*` flags ([`wc_flags`]).
    pub wc_flags: u32,
    /// Source LID (receives on InfiniBand).
    pub slid: u16,
    /// Service level (receives).
    pub sl: u8,
}
