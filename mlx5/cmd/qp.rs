// SPDX-License-Identifier: GPL-2.0

//! QP commands: CREATE_QP, DESTROY_QP, QUERY_QP and the state transitions (upstream
//! `mlx5_qpc_create_qp()`, `mlx5_core_qp_modify()` with `modify_qp_mbox_alloc()`'s
//! per-opcode layouts, `mlx5_core_qp_query()`), and the DC target's CREATE_DCT, DRAIN_DCT and
//! DESTROY_DCT (`mlx5_core_create_dct()`, `mlx5_core_drain_dct()`, `mlx5_core_destroy_dct()`).

use super::{free_cmd, prm_enum, Command, InBox, OutBox, QueueBuf};
use crate::prm::cmd::{
    create_dct_in, create_dct_out, create_qp_in, create_qp_out, destroy_dct_in, destroy_qp_in,
    drain_dct_in, query_qp_in, query_qp_out,
};
use crate::prm::command::{self as pc, QpTransition, TransitionCtx};
use crate::prm::consts::{
    NON_ZERO_RQ, QPC_STATE_ERR, QPC_STATE_INIT, QPC_STATE_RST, QPC_STATE_RTR, QPC_STATE_RTS,
    QPC_STATE_SQD, QPC_STATE_SQER, QPC_ST_DCI, QPC_ST_QP0, QPC_ST_QP1, QPC_ST_RC, QPC_ST_REG_UMR,
    QPC_ST_UC, QPC_ST_UD, QPC_ST_XRC, SRQ_RQ, ZERO_LEN_RQ,
};
use crate::prm::ctx::{ads, dctc, qpc};
use crate::prm::layout::{BufMut, Member, PrmError, PrmLayout};
use kernel::prelude::*;

prm_enum! {
    /// `qpc.st`: the service type.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum QpServiceType {
        /// Reliable connected.
        Rc = QPC_ST_RC,
        /// Unreliable connected.
        Uc = QPC_ST_UC,
        /// Unreliable datagram.
        Ud = QPC_ST_UD,
        /// XRC.
        Xrc = QPC_ST_XRC,
        /// The SMI QP (QP0).
        Qp0 = QPC_ST_QP0,
        /// The GSI QP (QP1).
        Qp1 = QPC_ST_QP1,
        /// A DC initiator.
        Dci = QPC_ST_DCI,
        /// The driver's UMR QP (`MLX5_QP_ST_REG_UMR`).
        RegUmr = QPC_ST_REG_UMR,
    }
}

prm_enum! {
    /// `qpc.state`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum QpState {
        /// Reset.
        Rst = QPC_STATE_RST,
        /// Initialized.
        Init = QPC_STATE_INIT,
        /// Ready to receive.
        Rtr = QPC_STATE_RTR,
        /// Ready to send.
        Rts = QPC_STATE_RTS,
        /// Send queue error.
        Sqer = QPC_STATE_SQER,
        /// Error.
        Err = QPC_STATE_ERR,
        /// Send queue drained.
        Sqd = QPC_STATE_SQD,
    }
}

/// Where a QP's receives come from (`qpc.rq_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RqType {
    /// Its own receive queue, completing on `cqn_rcv`.
    Regular {
        /// Receive CQ.
        cqn: u32,
        /// log2 of the number of receive WQEs.
        log_size: u8,
        /// log2 of the receive WQE stride minus 4.
        log_stride: u8,
    },
    /// An SRQ.
    Srq {
        /// SRQ number.
        srqn: u32,
        /// Receive CQ.
        cqn: u32,
    },
    /// No receive queue.
    None,
    /// An XRC target's: receives into the XRC SRQ each message names (`rq_type` SRQ), in
    /// XRC domain `xrcd`.
    XrcTgt {
        /// XRC domain.
        xrcd: u32,
    },
}

/// CREATE_QP.
pub(crate) struct CreateQp<'a> {
    /// Owner and memory.
    pub(crate) buf: QueueBuf<'a>,
    /// Service type.
    pub(crate) st: QpServiceType,
    /// Protection domain.
    pub(crate) pd: u32,
    /// Send CQ and log2 of the number of send WQE basic blocks; `None`: no send queue.
    pub(crate) sq: Option<(u32, u8)>,
    /// Receive side.
    pub(crate) rq: RqType,
    /// UAR page of the doorbells.
    pub(crate) uar_page: u32,
    /// User index (`qpc.user_index`, CQE version 1).
    pub(crate) user_index: u32,
    /// `qpc.wq_signature` (`MLX5_QP_FLAG_SIGNATURE`).
    pub(crate) wq_signature: bool,
    /// `create_qp_in.ece`: ECE options (firmware with `ece_support`).
    pub(crate) ece: u32,
    /// `qpc.ts_format` (`MLX5_TIMESTAMP_FORMAT_*`, upstream `get_qp_ts_format()`).
    pub(crate) ts_format: u8,
}

impl Command for CreateQp<'_> {
    type Prm = pc::CreateQp;
    /// The QP number and `create_qp_out.ece`.
    type Reply = (u32, u32);

    fn queue_buf(&self) -> Option<QueueBuf<'_>> {
        Some(self.buf)
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        let c = |f| create_qp_in::qpc.inner(f);
        inbox.set(c(qpc::st), self.st as u32)?;
        inbox.set(c(qpc::pd), self.pd)?;
        inbox.set(c(qpc::uar_page), self.uar_page)?;
        inbox.set(c(qpc::log_page_size), u32::from(self.buf.log_page_size))?;
        inbox.set(c(qpc::page_offset), u32::from(self.buf.page_offset))?;
        inbox.set(c(qpc::user_index), self.user_index)?;
        // MLX5_QP_PM_MIGRATED, as upstream create_user_qp()/create_kernel_qp() set.
        inbox.set(c(qpc::pm_state), 3)?;
        inbox.set(c(qpc::wq_signature), u32::from(self.wq_signature))?;
        inbox.set(create_qp_in::ece, self.ece)?;
        inbox.set(c(qpc::ts_format), u32::from(self.ts_format))?;
        inbox.set64(c(qpc::dbr_addr), self.buf.dbr_addr)?;
        match self.sq {
            Some((cqn, log_size)) => {
                inbox.set(c(qpc::cqn_snd), cqn)?;
                inbox.set(c(qpc::log_sq_size), u32::from(log_size))?;
            }
            None => inbox.set(c(qpc::no_sq), 1)?,
        }
        match self.rq {
            RqType::Regular {
                cqn,
                log_size,
                log_stride,
            } => {
                inbox.set(c(qpc::rq_type), NON_ZERO_RQ)?;
                inbox.set(c(qpc::cqn_rcv), cqn)?;
                inbox.set(c(qpc::log_rq_size), u32::from(log_size))?;
                inbox.set(c(qpc::log_rq_stride), u32::from(log_stride))?;
            }
            RqType::Srq { srqn, cqn } => {
                inbox.set(c(qpc::rq_type), SRQ_RQ)?;
                inbox.set(c(qpc::srqn_rmpn_xrqn), srqn)?;
                inbox.set(c(qpc::cqn_rcv), cqn)?;
            }
            RqType::None => inbox.set(c(qpc::rq_type), ZERO_LEN_RQ)?,
            RqType::XrcTgt { xrcd } => {
                inbox.set(c(qpc::rq_type), SRQ_RQ)?;
                inbox.set(c(qpc::xrcd), xrcd)?;
            }
        }
        super::set_addrs(inbox, self.buf.pas)?;
        Ok(())
    }

    /// The QP number and the firmware's ECE options.
    fn reply(&self, out: OutBox<'_, Self>) -> Result<(u32, u32)> {
        Ok((out.get(create_qp_out::qpn), out.get(create_qp_out::ece)))
    }
}

free_cmd!(
    /// DESTROY_QP.
    DestroyQp, qpn: destroy_qp_in::qpn
);

/// CREATE_DCT with the context upstream `create_dct()` and `mlx5_ib_modify_dct()` fill.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CreateDct {
    /// The owner (the PD's uid).
    pub(crate) uid: u16,
    pub(crate) pd: u32,
    pub(crate) srqn: u32,
    pub(crate) cqn: u32,
    pub(crate) access_key: u64,
    pub(crate) user_index: u32,
    /// Remote read, write, atomic; `atomic_mode` with atomics.
    pub(crate) rre_rwe_rae: (bool, bool, bool),
    pub(crate) atomic_mode: u8,
    pub(crate) pkey_index: u16,
    pub(crate) port: u8,
    pub(crate) counter_set_id: u8,
    pub(crate) min_rnr_nak: u8,
    pub(crate) tclass: u8,
    pub(crate) flow_label: u32,
    pub(crate) mtu: u8,
    pub(crate) my_addr_index: u8,
    pub(crate) hop_limit: u8,
    /// RoCE: the SL's priority bits (`eth_prio`).
    pub(crate) eth_prio: Option<u8>,
    pub(crate) ece: u32,
}

impl Command for CreateDct {
    type Prm = pc::CreateDct;
    type Reply = (u32, u32);

    fn uid(&self) -> u16 {
        self.uid
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        let c = |f| create_dct_in::dct_context_entry.inner(f);
        let (rre, rwe, rae) = self.rre_rwe_rae;
        let v = [
            (dctc::pd, self.pd),
            (dctc::srqn_xrqn, self.srqn),
            (dctc::cqn, self.cqn),
            (dctc::user_index, self.user_index),
            (dctc::rre, u32::from(rre)),
            (dctc::rwe, u32::from(rwe)),
            (dctc::rae, u32::from(rae)),
            (dctc::atomic_mode, u32::from(self.atomic_mode)),
            (dctc::pkey_index, u32::from(self.pkey_index)),
            (dctc::port, u32::from(self.port)),
            (dctc::counter_set_id, u32::from(self.counter_set_id)),
            (dctc::min_rnr_nak, u32::from(self.min_rnr_nak)),
            (dctc::tclass, u32::from(self.tclass)),
            (dctc::flow_label, self.flow_label),
            (dctc::mtu, u32::from(self.mtu)),
            (dctc::my_addr_index, u32::from(self.my_addr_index)),
            (dctc::hop_limit, u32::from(self.hop_limit)),
            (dctc::ece, self.ece),
        ];
        for (f, x) in v {
            inbox.set(c(f), x)?;
        }
        if let Some(p) = self.eth_prio {
            inbox.set(c(dctc::eth_prio), u32::from(p))?;
        }
        inbox.set64(c(dctc::dc_access_key), self.access_key)
    }

    /// The DCT number and the firmware's ECE options.
    fn reply(&self, out: OutBox<'_, Self>) -> Result<(u32, u32)> {
        Ok((out.get(create_dct_out::dctn), out.get(create_dct_out::ece)))
    }
}

free_cmd!(
    /// DRAIN_DCT.
    DrainDct, dctn: drain_dct_in::dctn
);

free_cmd!(
    /// DESTROY_DCT.
    DestroyDct, dctn: destroy_dct_in::dctn
);

/// QUERY_QP.
pub(crate) struct QueryQp {
    /// QP number.
    pub(crate) qpn: u32,
}

/// The QP context members a driver's `query_qp` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QpInfo {
    /// Current state.
    pub(crate) state: QpState,
    /// Service type.
    pub(crate) st: QpServiceType,
    /// Protection domain.
    pub(crate) pd: u32,
    /// Path MTU encoding (`ib_mtu`).
    pub(crate) mtu: u8,
    /// Remote QP number.
    pub(crate) remote_qpn: u32,
    /// Q_Key.
    pub(crate) q_key: u32,
    /// Next send PSN.
    pub(crate) next_send_psn: u32,
    /// Next receive PSN.
    pub(crate) next_rcv_psn: u32,
    /// Primary path port (`vhca_port_num`).
    pub(crate) port: u8,
    /// Primary path P_Key index.
    pub(crate) pkey_index: u16,
    /// Remote read / write / atomic enables.
    pub(crate) rre_rwe_rae: (bool, bool, bool),
    /// log2 of outstanding reads/atomics as requester.
    pub(crate) log_sra_max: u8,
    /// log2 of outstanding reads/atomics as responder.
    pub(crate) log_rra_max: u8,
    /// Minimum RNR NAK timer.
    pub(crate) min_rnr_nak: u8,
    /// Retry count.
    pub(crate) retry_count: u8,
    /// RNR retry count.
    pub(crate) rnr_retry: u8,
    /// Primary path: local ACK timeout.
    pub(crate) ack_timeout: u8,
    /// Primary path: remote LID.
    pub(crate) rlid: u16,
    /// Primary path: service level.
    pub(crate) sl: u8,
    /// Primary path: the GRH, if `grh` is set.
    pub(crate) grh: Option<Grh>,
    /// Primary path: remote MAC.
    pub(crate) rmac: [u8; 6],
}

impl Command for QueryQp {
    type Prm = pc::QueryQp;
    type Reply = QpInfo;

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(query_qp_in::qpn, self.qpn)
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<QpInfo> {
        let c = |f| out.get(query_qp_out::qpc.inner(f));
        let p = |f| c(qpc::primary_address_path.inner(f));
        Ok(QpInfo {
            state: QpState::try_from(c(qpc::state))?,
            st: QpServiceType::try_from(c(qpc::st))?,
            pd: c(qpc::pd),
            mtu: c(qpc::mtu) as u8,
            remote_qpn: c(qpc::remote_qpn),
            q_key: c(qpc::q_key),
            next_send_psn: c(qpc::next_send_psn),
            next_rcv_psn: c(qpc::next_rcv_psn),
            port: p(ads::vhca_port_num) as u8,
            pkey_index: p(ads::pkey_index) as u16,
            rre_rwe_rae: (c(qpc::rre) != 0, c(qpc::rwe) != 0, c(qpc::rae) != 0),
            log_sra_max: c(qpc::log_sra_max) as u8,
            log_rra_max: c(qpc::log_rra_max) as u8,
            min_rnr_nak: c(qpc::min_rnr_nak) as u8,
            retry_count: c(qpc::retry_count) as u8,
            rnr_retry: c(qpc::rnr_retry) as u8,
            ack_timeout: p(ads::ack_timeout) as u8,
            rlid: p(ads::rlid) as u16,
            sl: p(ads::sl) as u8,
            grh: if p(ads::grh) != 0 {
                let path = |f| query_qp_out::qpc.inner(qpc::primary_address_path).inner(f);
                Some(Grh {
                    dgid: out.array(path(ads::rgid_rip)),
                    sgid_index: p(ads::src_addr_index) as u8,
                    hop_limit: p(ads::hop_limit) as u8,
                    tclass: p(ads::tclass) as u8,
                    flow_label: p(ads::flow_label),
                })
            } else {
                None
            },
            rmac: {
                let hi = (p(ads::rmac_47_32) as u16).to_be_bytes();
                let lo = p(ads::rmac_31_0).to_be_bytes();
                [hi[0], hi[1], lo[0], lo[1], lo[2], lo[3]]
            },
        })
    }
}

/// The `qpc` members a transition may carry; `None` leaves the member zero. Which members a
/// transition takes, and which need an `opt_param_mask` bit, is the verbs layer's business
/// (upstream `__mlx5_ib_modify_qp()`); this only puts them where the PRM says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct QpcAttrs {
    /// Path MTU encoding.
    pub(crate) mtu: Option<u8>,
    /// log2 of the maximum message size.
    pub(crate) log_msg_max: Option<u8>,
    /// Remote QP number.
    pub(crate) remote_qpn: Option<u32>,
    /// Q_Key.
    pub(crate) q_key: Option<u32>,
    /// Remote read / write / atomic enables.
    pub(crate) rre_rwe_rae: Option<(bool, bool, bool)>,
    /// log2 of outstanding RDMA reads/atomics as responder.
    pub(crate) log_rra_max: Option<u8>,
    /// log2 of outstanding RDMA reads/atomics as requester.
    pub(crate) log_sra_max: Option<u8>,
    /// Minimum RNR NAK timer.
    pub(crate) min_rnr_nak: Option<u8>,
    /// Next receive PSN.
    pub(crate) next_rcv_psn: Option<u32>,
    /// Next send PSN.
    pub(crate) next_send_psn: Option<u32>,
    /// Retry count.
    pub(crate) retry_count: Option<u8>,
    /// RNR retry count.
    pub(crate) rnr_retry: Option<u8>,
    /// Primary path: port (`vhca_port_num`).
    pub(crate) port: Option<u8>,
    /// Primary path: P_Key index.
    pub(crate) pkey_index: Option<u16>,
    /// Primary path: local ACK timeout.
    pub(crate) ack_timeout: Option<u8>,
    /// Primary path: remote LID.
    pub(crate) rlid: Option<u16>,
    /// Primary path: service level.
    pub(crate) sl: Option<u8>,
    /// Primary path: GRH (remote GID, source GID index, hop limit, traffic class).
    pub(crate) grh: Option<Grh>,
    /// Primary path: remote MAC (RoCE).
    pub(crate) rmac: Option<[u8; 6]>,
    /// Primary path: UDP source port (RoCE v2).
    pub(crate) udp_sport: Option<u16>,
    /// The Q counter set the QP counts into (RST2INIT).
    pub(crate) counter_set_id: Option<u8>,
}

/// The GRH part of an address path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Grh {
    /// Destination GID.
    pub(crate) dgid: [u8; 16],
    /// Source GID index.
    pub(crate) sgid_index: u8,
    /// Hop limit.
    pub(crate) hop_limit: u8,
    /// Traffic class.
    pub(crate) tclass: u8,
    /// Flow label.
    pub(crate) flow_label: u32,
}

impl QpcAttrs {
    /// Writes the set members into the `qpc` at `ctx`.
    fn fill<L: PrmLayout>(
        &self,
        ctx: Member<L>,
        inbox: &mut BufMut<'_, L>,
    ) -> Result<(), PrmError> {
        let c = |f| ctx.inner(f);
        let p = |f| ctx.inner(qpc::primary_address_path).inner(f);
        let opt = |buf: &mut BufMut<'_, L>, f: Member<L>, v: Option<u32>| -> Result<(), PrmError> {
            v.map_or(Ok(()), |v| buf.set(f, v))
        };
        opt(inbox, c(qpc::mtu), self.mtu.map(u32::from))?;
        opt(inbox, c(qpc::log_msg_max), self.log_msg_max.map(u32::from))?;
        opt(inbox, c(qpc::remote_qpn), self.remote_qpn)?;
        opt(inbox, c(qpc::q_key), self.q_key)?;
        if let Some((r, w, a)) = self.rre_rwe_rae {
            inbox.set(c(qpc::rre), u32::from(r))?;
            inbox.set(c(qpc::rwe), u32::from(w))?;
            inbox.set(c(qpc::rae), u32::from(a))?;
        }
        opt(inbox, c(qpc::log_rra_max), self.log_rra_max.map(u32::from))?;
        opt(inbox, c(qpc::log_sra_max), self.log_sra_max.map(u32::from))?;
        opt(inbox, c(qpc::min_rnr_nak), self.min_rnr_nak.map(u32::from))?;
        opt(inbox, c(qpc::next_rcv_psn), self.next_rcv_psn)?;
        opt(inbox, c(qpc::next_send_psn), self.next_send_psn)?;
        opt(inbox, c(qpc::retry_count), self.retry_count.map(u32::from))?;
        opt(inbox, c(qpc::rnr_retry), self.rnr_retry.map(u32::from))?;
        opt(inbox, p(ads::vhca_port_num), self.port.map(u32::from))?;
        opt(inbox, p(ads::pkey_index), self.pkey_index.map(u32::from))?;
        opt(inbox, p(ads::ack_timeout), self.ack_timeout.map(u32::from))?;
        opt(inbox, p(ads::rlid), self.rlid.map(u32::from))?;
        opt(inbox, p(ads::sl), self.sl.map(u32::from))?;
        opt(inbox, p(ads::udp_sport), self.udp_sport.map(u32::from))?;
        opt(
            inbox,
            c(qpc::counter_set_id),
            self.counter_set_id.map(u32::from),
        )?;
        if let Some(g) = self.grh {
            inbox.set(p(ads::grh), 1)?;
            inbox.set_bytes(p(ads::rgid_rip), &g.dgid)?;
            inbox.set(p(ads::src_addr_index), u32::from(g.sgid_index))?;
            inbox.set(p(ads::hop_limit), u32::from(g.hop_limit))?;
            inbox.set(p(ads::tclass), u32::from(g.tclass))?;
            inbox.set(p(ads::flow_label), g.flow_label)?;
        }
        if let Some(m) = self.rmac {
            inbox.set(
                p(ads::rmac_47_32),
                u32::from(u16::from_be_bytes([m[0], m[1]])),
            )?;
            inbox.set(
                p(ads::rmac_31_0),
                u32::from_be_bytes([m[2], m[3], m[4], m[5]]),
            )?;
        }
        Ok(())
    }
}

/// RST2INIT_QP.
pub(crate) type Rst2Init = pc::Rst2InitQp;
/// INIT2INIT_QP.
pub(crate) type Init2Init = pc::Init2InitQp;
/// INIT2RTR_QP.
pub(crate) type Init2Rtr = pc::Init2RtrQp;
/// RTR2RTS_QP.
pub(crate) type Rtr2Rts = pc::Rtr2RtsQp;
/// RTS2RTS_QP.
pub(crate) type Rts2Rts = pc::Rts2RtsQp;
/// 2ERR_QP.
pub(crate) type ToErr = pc::Qp2Err;
/// 2RST_QP.
pub(crate) type ToRst = pc::Qp2Rst;

/// A QP state transition.
pub(crate) struct ModifyQp<T: QpTransition> {
    /// QP number.
    pub(crate) qpn: u32,
    /// Owner uid.
    pub(crate) uid: u16,
    /// `opt_param_mask` (`MLX5_QP_OPTPAR_*`).
    pub(crate) opt_param_mask: u32,
    /// Context members.
    pub(crate) attrs: QpcAttrs,
    /// The transition.
    pub(crate) _t: core::marker::PhantomData<T>,
}

impl<T: QpTransition> ModifyQp<T> {
    /// A transition of `qpn` (uid 0) with `attrs` and no optional parameters.
    pub(crate) fn new(qpn: u32, attrs: QpcAttrs) -> Self {
        Self {
            qpn,
            uid: 0,
            opt_param_mask: 0,
            attrs,
            _t: core::marker::PhantomData,
        }
    }

    /// The same transition issued by `uid` (the QP's owner; upstream `qp->uid`).
    pub(crate) fn by(self, uid: u16) -> Self {
        Self { uid, ..self }
    }

    /// A transition of `qpn` (uid 0) with `attrs` and the optional parameters `opt_param_mask`.
    pub(crate) fn with_opt(qpn: u32, attrs: QpcAttrs, opt_param_mask: u32) -> Self {
        Self {
            opt_param_mask,
            ..Self::new(qpn, attrs)
        }
    }
}

impl<T: QpTransition> Command for ModifyQp<T> {
    type Prm = T;
    type Reply = ();

    fn uid(&self) -> u16 {
        self.uid
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(T::QPN, self.qpn)?;
        if let Some(TransitionCtx {
            opt_param_mask: mask,
            qpc: ctx,
        }) = T::CTX
        {
            inbox.set(mask, self.opt_param_mask)?;
            self.attrs.fill(ctx, inbox)?;
        }
        Ok(())
    }

    fn reply(&self, _out: OutBox<'_, Self>) -> Result<()> {
        Ok(())
    }
}
