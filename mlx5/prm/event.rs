// SPDX-License-Identifier: GPL-2.0

//! The events of queues as EQEs carry them: the `enum mlx5_event` numbers of CQ, QP and SRQ
//! events (include/linux/mlx5/device.h), shared by the simulator that raises them and the
//! driver that receives them.

use super::consts as c;

/// The QP event kinds: `enum mlx5_event` numbers (include/linux/mlx5/device.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum QpEvent {
    /// `MLX5_EVENT_TYPE_COMM_EST`: the first message arrived on a QP in RTR.
    CommEst = c::EVENT_TYPE_COMM_EST,
    /// `MLX5_EVENT_TYPE_SQ_DRAINED` (SQD is not modeled yet: never raised).
    SqDrained = c::EVENT_TYPE_SQ_DRAINED,
    /// `MLX5_EVENT_TYPE_WQ_CATAS_ERROR`: the QP hit a fatal error without a CQE to report it
    /// (its work queue could not be read).
    WqCatas = c::EVENT_TYPE_WQ_CATAS_ERROR,
    /// `MLX5_EVENT_TYPE_WQ_INVAL_REQ_ERROR`: the responder got an invalid request.
    WqInvalReq = c::EVENT_TYPE_WQ_INVAL_REQ_ERROR,
    /// `MLX5_EVENT_TYPE_WQ_ACCESS_ERROR`: the responder detected an access violation.
    WqAccess = c::EVENT_TYPE_WQ_ACCESS_ERROR,
    /// `MLX5_EVENT_TYPE_SRQ_LAST_WQE` (for SRQs, not modeled yet: never raised).
    LastWqeReached = c::EVENT_TYPE_SRQ_LAST_WQE,
    /// `MLX5_EVENT_TYPE_DCT_DRAINED`: DRAIN_DCT finished (`struct mlx5_eqe_dct`, the DCT
    /// number where a QP event has its QP's).
    DctDrained = c::EVENT_TYPE_DCT_DRAINED,
}

/// The SRQ event kinds (`MLX5_EVENT_TYPE_SRQ_*`, device.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum SrqEvent {
    /// `MLX5_EVENT_TYPE_SRQ_RQ_LIMIT`: the armed limit was crossed (the SRQ is disarmed).
    Limit = c::EVENT_TYPE_SRQ_RQ_LIMIT,
    /// `MLX5_EVENT_TYPE_SRQ_CATAS_ERROR`: the SRQ's WQEs could not be read.
    Catas = c::EVENT_TYPE_SRQ_CATAS_ERROR,
}

/// An event of a CQ, QP or SRQ: what an EQE of the completion or the async EQ reports
/// (`struct mlx5_eqe_comp`, `mlx5_eqe_cq_err`, `mlx5_eqe_qp_srq`), raised by the simulator's
/// data path and received by the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueueEvent {
    /// `MLX5_EVENT_TYPE_COMP` (0x00): an armed CQ fired.
    Completion {
        /// The CQ.
        cqn: u32,
    },
    /// `MLX5_EVENT_TYPE_CQ_ERROR` (0x04): the CQ overran (or its buffer could not be written);
    /// CQEs are dropped from then on.
    CqError {
        /// The CQ.
        cqn: u32,
    },
    /// An affiliated QP event.
    Qp {
        /// The QP.
        qpn: u32,
        /// What happened.
        kind: QpEvent,
    },
    /// An SRQ (RMP) event.
    Srq {
        /// The RMP number.
        srqn: u32,
        /// What happened.
        kind: SrqEvent,
    },
}

impl QueueEvent {
    /// The EQE's `event_type` (`enum mlx5_event`).
    pub(crate) fn eqe_type(&self) -> u8 {
        match *self {
            QueueEvent::Completion { .. } => c::EVENT_TYPE_COMP,
            QueueEvent::CqError { .. } => c::EVENT_TYPE_CQ_ERROR,
            QueueEvent::Qp { kind, .. } => kind as u8,
            QueueEvent::Srq { kind, .. } => kind as u8,
        }
    }

    /// The event of an EQE of type `ty` (`enum mlx5_event`) about object `num`; `None` for a
    /// type that is no CQ, QP or SRQ event.
    #[cfg_attr(not(MODULE), expect(dead_code, reason = "the driver's"))]
    pub(crate) fn from_eqe(ty: u8, num: u32) -> Option<Self> {
        let qp = |kind| Some(QueueEvent::Qp { qpn: num, kind });
        let srq = |kind| Some(QueueEvent::Srq { srqn: num, kind });
        match ty {
            c::EVENT_TYPE_COMP => Some(QueueEvent::Completion { cqn: num }),
            c::EVENT_TYPE_CQ_ERROR => Some(QueueEvent::CqError { cqn: num }),
            c::EVENT_TYPE_COMM_EST => qp(QpEvent::CommEst),
            c::EVENT_TYPE_SQ_DRAINED => qp(QpEvent::SqDrained),
            c::EVENT_TYPE_WQ_CATAS_ERROR => qp(QpEvent::WqCatas),
            c::EVENT_TYPE_WQ_INVAL_REQ_ERROR => qp(QpEvent::WqInvalReq),
            c::EVENT_TYPE_WQ_ACCESS_ERROR => qp(QpEvent::WqAccess),
            c::EVENT_TYPE_SRQ_LAST_WQE => qp(QpEvent::LastWqeReached),
            c::EVENT_TYPE_DCT_DRAINED => qp(QpEvent::DctDrained),
            c::EVENT_TYPE_SRQ_RQ_LIMIT => srq(SrqEvent::Limit),
            c::EVENT_TYPE_SRQ_CATAS_ERROR => srq(SrqEvent::Catas),
            _ => None,
        }
    }
}
