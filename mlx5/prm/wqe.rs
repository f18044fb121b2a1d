// SPDX-License-Identifier: GPL-2.0

//! The data path's numbers: send WQE opcodes and control flags (include/linux/mlx5/qp.h,
//! rdma-core's `mlx5dv.h`), CQE opcodes and error syndromes (include/linux/mlx5/cq.h). The
//! driver's kernel queues (`ib/qp/wr.rs`, `ib/cq.rs`) write WQEs and read CQEs with them, the
//! simulator's engine (`fwsim/engine.rs`, `fwsim/cqe.rs`) reads the WQEs and writes the CQEs:
//! one copy for both sides.

/// `MLX5_SEND_WQE_BB`: the send queue's basic block, in bytes.
pub(crate) const SEND_WQE_BB: usize = 64;
/// `MLX5_INVALID_LKEY`: ends a receive scatter list shorter than the WQE's stride.
pub(crate) const INVALID_LKEY: u32 = 0x100;
/// `MLX5_INLINE_SEG`: the inline flag of a data segment's byte count.
pub(crate) const INLINE_SEG: u32 = 0x8000_0000;

/// Send WQE opcodes (`MLX5_OPCODE_*`, the control segment's `opmod_idx_opcode` low byte).
pub(crate) mod wqe_op {
    /// `MLX5_OPCODE_NOP`.
    pub(crate) const NOP: u8 = 0x00;
    /// `MLX5_OPCODE_SEND_INVAL`: a SEND whose immediate is an rkey the responder invalidates.
    pub(crate) const SEND_INVAL: u8 = 0x01;
    /// `MLX5_OPCODE_RDMA_WRITE`.
    pub(crate) const RDMA_WRITE: u8 = 0x08;
    /// `MLX5_OPCODE_RDMA_WRITE_IMM`.
    pub(crate) const RDMA_WRITE_IMM: u8 = 0x09;
    /// `MLX5_OPCODE_SEND`.
    pub(crate) const SEND: u8 = 0x0a;
    /// `MLX5_OPCODE_SEND_IMM`.
    pub(crate) const SEND_IMM: u8 = 0x0b;
    /// `MLX5_OPCODE_RDMA_READ`.
    pub(crate) const RDMA_READ: u8 = 0x10;
    /// `MLX5_OPCODE_ATOMIC_CS`.
    pub(crate) const ATOMIC_CS: u8 = 0x11;
    /// `MLX5_OPCODE_ATOMIC_FA`.
    pub(crate) const ATOMIC_FA: u8 = 0x12;
    /// `MLX5_OPCODE_UMR`: a memory window's bind or invalidation, an indirect mkey's layout,
    /// an MR's access and PD change (the driver's UMR QP).
    pub(crate) const UMR: u8 = 0x25;
}

/// `fm_ce_se` bits of the control segment (`MLX5_WQE_CTRL_*`, `MLX5_FENCE_MODE_*`).
pub(crate) mod ctrl {
    /// `MLX5_WQE_CTRL_CQ_UPDATE`: signaled, the WQE's completion writes a CQE.
    pub(crate) const CQ_UPDATE: u8 = 0x08;
    /// `MLX5_WQE_CTRL_SOLICITED`.
    pub(crate) const SOLICITED: u8 = 0x02;
    /// The fence mode bits (`MLX5_FENCE_MODE_*` << 5).
    pub(crate) const FENCE_MODE: u8 = 0xe0;
    /// `MLX5_FENCE_MODE_FENCE` (`IB_SEND_FENCE`).
    #[cfg_attr(
        not(MODULE),
        expect(dead_code, reason = "the simulator orders every WQE")
    )]
    pub(crate) const FENCE: u8 = 0x40;
    /// `MLX5_FENCE_MODE_INITIATOR_SMALL` (upstream's UMR WQEs).
    #[cfg_attr(not(MODULE), expect(dead_code, reason = "the driver's UMR WQEs"))]
    pub(crate) const FENCE_INITIATOR_SMALL: u8 = 0x20;
}

/// CQE opcodes (`op_own >> 4`, `MLX5_CQE_*`).
pub(crate) mod cqe_op {
    /// `MLX5_CQE_REQ`.
    pub(crate) const REQ: u8 = 0;
    /// `MLX5_CQE_RESP_WR_IMM`.
    pub(crate) const RESP_WR_IMM: u8 = 1;
    /// `MLX5_CQE_RESP_SEND`.
    pub(crate) const RESP_SEND: u8 = 2;
    /// `MLX5_CQE_RESP_SEND_IMM`.
    pub(crate) const RESP_SEND_IMM: u8 = 3;
    /// `MLX5_CQE_RESP_SEND_INV`: a SEND with invalidate (`imm_inval_pkey` is the rkey).
    pub(crate) const RESP_SEND_INV: u8 = 4;
    /// `MLX5_CQE_RESIZE_CQ`: the last entry of the old buffer of a resized CQ.
    pub(crate) const RESIZE_CQ: u8 = 5;
    /// `MLX5_CQE_REQ_ERR`.
    pub(crate) const REQ_ERR: u8 = 13;
    /// `MLX5_CQE_RESP_ERR`.
    pub(crate) const RESP_ERR: u8 = 14;
    /// `MLX5_CQE_INVALID`: what a consumer initializes every CQE's opcode nibble to.
    pub(crate) const INVALID: u8 = 15;
}

/// Byte offsets in `struct mlx5_cqe64` (and `struct mlx5_err_cqe` of an error CQE).
pub(crate) mod cqe_off {
    /// `slid` (be16).
    pub(crate) const SLID: usize = 22;
    /// `flags_rqpn` (be32): `g << 28 | sl << 24 | src_qpn`.
    pub(crate) const FLAGS_RQPN: usize = 24;
    /// `srqn_uidx` (be32): the QP's `user_index` with CQE version 1.
    pub(crate) const SRQN_UIDX: usize = 32;
    /// `imm_inval_pkey` (be32).
    pub(crate) const IMM: usize = 36;
    /// `byte_cnt` (be32).
    pub(crate) const BYTE_CNT: usize = 44;
    /// `mlx5_err_cqe.vendor_err_synd`.
    #[cfg_attr(
        not(MODULE),
        expect(dead_code, reason = "the simulator leaves it zero")
    )]
    pub(crate) const VENDOR_ERR_SYNDROME: usize = 54;
    /// `mlx5_err_cqe.syndrome`.
    pub(crate) const SYNDROME: usize = 55;
    /// `sop_drop_qpn` (be32): WQE opcode << 24 | qpn (`s_wqe_opcode_qpn` of an error CQE).
    pub(crate) const SOP_DROP_QPN: usize = 56;
    /// `wqe_counter` (be16).
    pub(crate) const WQE_COUNTER: usize = 60;
    /// `op_own`: opcode << 4 | owner.
    pub(crate) const OP_OWN: usize = 63;
}

/// Error CQE syndromes (`MLX5_CQE_SYNDROME_*`; upstream `mlx5_handle_error_cqe()` and
/// libmlx5's cq.c map them to a work completion status).
pub(crate) mod syndrome {
    /// `LOCAL_LENGTH_ERR`.
    pub(crate) const LOCAL_LENGTH: u8 = 0x01;
    /// `LOCAL_QP_OP_ERR`.
    pub(crate) const LOCAL_QP_OP: u8 = 0x02;
    /// `LOCAL_PROT_ERR`.
    pub(crate) const LOCAL_PROT: u8 = 0x04;
    /// `WR_FLUSH_ERR`.
    pub(crate) const FLUSH: u8 = 0x05;
    /// `MW_BIND_ERR`.
    pub(crate) const MW_BIND: u8 = 0x06;
    /// `BAD_RESP_ERR`.
    #[cfg_attr(
        not(MODULE),
        expect(dead_code, reason = "the simulator never reports it")
    )]
    pub(crate) const BAD_RESP: u8 = 0x10;
    /// `LOCAL_ACCESS_ERR`.
    #[cfg_attr(
        not(MODULE),
        expect(dead_code, reason = "the simulator never reports it")
    )]
    pub(crate) const LOCAL_ACCESS: u8 = 0x11;
    /// `REMOTE_INVAL_REQ_ERR`.
    pub(crate) const REMOTE_INVAL_REQ: u8 = 0x12;
    /// `REMOTE_ACCESS_ERR`.
    pub(crate) const REMOTE_ACCESS: u8 = 0x13;
    /// `REMOTE_OP_ERR`.
    pub(crate) const REMOTE_OP: u8 = 0x14;
    /// `TRANSPORT_RETRY_EXC_ERR`.
    pub(crate) const RETRY_EXC: u8 = 0x15;
    /// `RNR_RETRY_EXC_ERR`.
    pub(crate) const RNR_RETRY_EXC: u8 = 0x16;
    /// `REMOTE_ABORTED_ERR`.
    #[cfg_attr(
        not(MODULE),
        expect(dead_code, reason = "the simulator never reports it")
    )]
    pub(crate) const REMOTE_ABORTED: u8 = 0x22;
}
