// SPDX-License-Identifier: GPL-2.0

//! Dynamically connected transport: DC targets (CREATE_DCT, DRAIN_DCT, DESTROY_DCT,
//! QUERY_DCT) and the DC initiator's addressing.
//!
//! A DCT number is a QP number on a ConnectX (upstream `mlx5_core_create_dct()` keeps it in
//! the QP table, `mqp.qpn`), so the model stores a DCT in its QP table: a receive-only entry of
//! service type `MLX5_QP_ST_DCT` on the DCT's SRQ and CQ, whose context is made from the
//! `dctc` (PD, SRQ, CQ, user index, remote access bits, port, P_Key index, address index,
//! traffic class, flow label, hop limit, MTU, RNR timer), with the DC access key, the drain
//! state and the key violation count beside it (QUERY_DCT answers from both; what the model
//! does not use, such as `atomic_mode`, `cs_res` or `ece`, reads back 0). The QP commands do not see such an
//! entry (`QP_UNKNOWN`), the DCT commands see nothing else (`DCT_UNKNOWN`). A DCT is ACTIVE
//! from CREATE_DCT on; DRAIN_DCT makes it DRAINED at once (the model has nothing in flight)
//! and it then takes no message.
//!
//! A DCI (`qpc.st` DCI, created and moved RST->INIT->RTR->RTS like an RC QP) names its
//! destination in each WQE: `struct mlx5_wqe_datagram_seg` after the control segment, whose
//! `mlx5_av` holds the DC access key (`key.dc_key`, big-endian, bytes 0..8), the DCT number
//! (`dqp_dct`, its high bit `MLX5_EXTENDED_UD_AV` saying the AV is the full 48 bytes, else
//! the 16-byte base AV) and the destination LID or GID. The rest of the WQE is an RC WQE's
//! (remote address and atomic segments, then data). The message travels on RC's rules
//! (acknowledged, retried, NAKed) to the DCT (`engine/responder.rs`): a SEND lands in the
//! DCT's SRQ and completes on its CQ with its user index, RDMA and atomics act under the
//! DCT's access bits. A DC access key other than the DCT's is a key violation: the DCT drops
//! the message without an answer and counts it (`dc_access_key_violation_count`), so the
//! DCI's WQE completes with transport retry exceeded once its retries are spent.

use super::engine::{QpState, RcWire};
use super::events::QpEvent;
use super::syndrome::{self as syn, CmdError};
use super::{fail, Cmd, Done, Fw, Qp, QPC_BYTES};
use crate::prm::cmd::*;
use crate::prm::command::*;
use crate::prm::consts::*;
use crate::prm::ctx::{ads, dctc, qpc};
use crate::prm::layout::Member;
use crate::prm::status::Status;

/// `MLX5_DCTC_STATE_ACTIVE`.
const DCTC_STATE_ACTIVE: u32 = 0;
/// `MLX5_DCTC_STATE_DRAINED`.
const DCTC_STATE_DRAINED: u32 = 2;

/// What a DCT keeps besides its QP-table entry (small: every QP slot has room for one).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dct {
    /// `dc_access_key`.
    key: u64,
    /// `dc_access_key_violation_count`.
    violations: u32,
    /// DRAIN_DCT ran.
    drained: bool,
}

impl Dct {
    /// The DC access key.
    pub(crate) fn key(&self) -> u64 {
        self.key
    }

    /// Counts a message dropped for its DC access key.
    pub(crate) fn count_violation(&mut self) {
        self.violations = self.violations.wrapping_add(1);
    }
}

/// Sets `f` of the QP context `q` to `v` (the model's own context: the members fit).
fn put(q: &mut [u8; QPC_BYTES], f: Member<qpc::Bits>, v: u32) {
    let _ = f.set(q, v);
}

impl Fw {
    /// CREATE_DCT: checks what `mlx5_ib_modify_dct()` fills at RTR (PD, CQ, SRQ, port, MTU)
    /// and stores an ACTIVE DCT.
    pub(super) fn create_dct(&mut self, c: &mut Cmd<'_, CreateDct>) -> Done {
        let ctx = create_dct_in::dct_context_entry;
        let get = |c: &Cmd<'_, CreateDct>, f| c.get(ctx.inner(f));
        if get(c, dctc::state) != DCTC_STATE_ACTIVE {
            return fail(Status::BAD_PARAM_ERR, syn::DCT_CTX);
        }
        let mtu = get(c, dctc::mtu);
        if !(QPC_MTU_256_BYTES..=QPC_MTU_4K_BYTES).contains(&mtu) {
            return fail(Status::BAD_PARAM_ERR, syn::DCT_CTX);
        }
        let port = get(c, dctc::port);
        self.port(port)?;
        let pd = get(c, dctc::pd);
        self.pd_usable(c.uid, pd)?;
        let cqn = get(c, dctc::cqn);
        self.cq_usable(c.uid, cqn, syn::QP_RECV_CQ)?;
        let srqn = get(c, dctc::srqn_xrqn);
        self.rmp_usable(c.uid, srqn, syn::DCT_SRQ)?;
        // The port's Q counter set upstream names (`mlx5_ib_get_counters_id()`) is the
        // kernel's, also for a user's DCT: it must exist, whoever owns it.
        let set = get(c, dctc::counter_set_id);
        if set != 0 && !self.qcounters.iter().any(|(id, _)| id == set) {
            return fail(Status::BAD_PARAM_ERR, syn::Q_COUNTER_UNKNOWN);
        }
        let key = c.inbox.get64(ctx.inner(dctc::dc_access_key));
        let mut q = [0u8; QPC_BYTES];
        let pri = |f: Member<ads::Bits>| qpc::primary_address_path.inner(f);
        put(&mut q, qpc::st, QPC_ST_DCT);
        put(&mut q, qpc::pd, pd);
        put(&mut q, qpc::no_sq, 1);
        put(&mut q, qpc::rq_type, SRQ_RQ);
        put(&mut q, qpc::srqn_rmpn_xrqn, srqn);
        put(&mut q, qpc::cqn_rcv, cqn);
        put(&mut q, qpc::user_index, get(c, dctc::user_index));
        put(&mut q, qpc::rre, get(c, dctc::rre));
        put(&mut q, qpc::rwe, get(c, dctc::rwe));
        put(&mut q, qpc::rae, get(c, dctc::rae));
        put(&mut q, qpc::min_rnr_nak, get(c, dctc::min_rnr_nak));
        put(&mut q, qpc::mtu, mtu);
        put(&mut q, qpc::log_msg_max, self.cfg.profile.log_max_msg);
        put(&mut q, qpc::counter_set_id, set);
        put(&mut q, pri(ads::vhca_port_num), port);
        put(&mut q, pri(ads::pkey_index), get(c, dctc::pkey_index));
        put(&mut q, pri(ads::tclass), get(c, dctc::tclass));
        put(&mut q, pri(ads::flow_label), get(c, dctc::flow_label));
        put(&mut q, pri(ads::hop_limit), get(c, dctc::hop_limit));
        put(
            &mut q,
            pri(ads::src_addr_index),
            get(c, dctc::my_addr_index),
        );
        let mut st = QpState::parse(&q, &[], 0).map_err(super::objects::fragmented)?;
        // No COMM_EST: a DCT is not a connected QP.
        st.comm_est = true;
        let qp = Qp {
            uid: c.uid,
            state: QPC_STATE_RTR,
            pd,
            uar: 0,
            send_cq: None,
            recv_cq: Some(cqn),
            qpc: q,
            q: st,
            rc: RcWire::default(),
            umems: [0; 2],
            dct: Some(Dct {
                key,
                violations: 0,
                drained: false,
            }),
        };
        let dctn = self.qps.insert(qp)?;
        c.set(create_dct_out::dctn, dctn)
    }

    /// The DCT `dctn` that a command from `uid` may use.
    fn dct_mut(&mut self, uid: u16, dctn: u32) -> Result<&mut Qp, CmdError> {
        self.qps.lookup_owned(dctn, uid, syn::DCT_UNKNOWN)?;
        match self.qps.get_mut(dctn) {
            Some(q) if q.dct.is_some() => Ok(q),
            _ => fail(Status::BAD_RES_ERR, syn::DCT_UNKNOWN),
        }
    }

    /// DRAIN_DCT: an ACTIVE DCT stops taking messages (DRAINED at once: nothing is in flight).
    pub(super) fn drain_dct(&mut self, c: &mut Cmd<'_, DrainDct>) -> Done {
        let dctn = c.get(drain_dct_in::dctn);
        let q = self.dct_mut(c.uid, dctn)?;
        let Some(d) = q.dct.as_mut() else {
            return fail(Status::BAD_PARAM_ERR, syn::DCT_UNKNOWN);
        };
        if d.drained {
            return fail(Status::BAD_RES_STATE_ERR, syn::DCT_STATE);
        }
        d.drained = true;
        q.state = QPC_STATE_RST;
        // upstream mlx5_core_destroy_dct() waits for this event before DESTROY_DCT.
        if let Some(slot) = self.qps.slot_of(dctn) {
            self.events.qp(slot, QpEvent::DctDrained);
        }
        Ok(())
    }

    /// DESTROY_DCT: legal in every state (upstream drains first, `mlx5_core_destroy_dct()`).
    pub(super) fn destroy_dct(&mut self, c: &mut Cmd<'_, DestroyDct>) -> Done {
        let dctn = c.get(destroy_dct_in::dctn);
        self.dct_mut(c.uid, dctn)?;
        if let Some(slot) = self.qps.slot_of(dctn) {
            self.events.forget_qp(slot);
        }
        self.qps.free(dctn);
        Ok(())
    }

    /// QUERY_DCT: the context as created, with the current state and violation count.
    pub(super) fn query_dct(&mut self, c: &mut Cmd<'_, QueryDct>) -> Done {
        let q = self.dct_mut(c.uid, c.get(query_dct_in::dctn))?;
        let Some(d) = q.dct else {
            return fail(Status::BAD_PARAM_ERR, syn::DCT_UNKNOWN);
        };
        let q = q.qpc;
        let g = |f: Member<qpc::Bits>| f.get(&q).unwrap_or(0);
        let pri = |f: Member<ads::Bits>| qpc::primary_address_path.inner(f);
        let state = if d.drained {
            DCTC_STATE_DRAINED
        } else {
            DCTC_STATE_ACTIVE
        };
        let o = |f| query_dct_out::dct_context_entry.inner(f);
        let values = [
            (dctc::state, state),
            (dctc::user_index, g(qpc::user_index)),
            (dctc::cqn, g(qpc::cqn_rcv)),
            (dctc::counter_set_id, g(qpc::counter_set_id)),
            (dctc::rre, g(qpc::rre)),
            (dctc::rwe, g(qpc::rwe)),
            (dctc::rae, g(qpc::rae)),
            (dctc::min_rnr_nak, g(qpc::min_rnr_nak)),
            (dctc::srqn_xrqn, g(qpc::srqn_rmpn_xrqn)),
            (dctc::pd, g(qpc::pd)),
            (dctc::tclass, g(pri(ads::tclass))),
            (dctc::flow_label, g(pri(ads::flow_label))),
            (dctc::mtu, g(qpc::mtu)),
            (dctc::port, g(pri(ads::vhca_port_num))),
            (dctc::pkey_index, g(pri(ads::pkey_index))),
            (dctc::my_addr_index, g(pri(ads::src_addr_index))),
            (dctc::hop_limit, g(pri(ads::hop_limit))),
            (dctc::dc_access_key_violation_count, d.violations),
        ];
        for (f, v) in values {
            c.set(o(f), v)?;
        }
        c.set64(o(dctc::dc_access_key), d.key)
    }
}
