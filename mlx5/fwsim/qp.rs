// SPDX-License-Identifier: GPL-2.0

//! QP commands and the QP state machine.
//!
//! CREATE_QP stores the context in RESET. Each transition command must start from its source
//! state (`BAD_RES_STATE_ERR` otherwise, and nothing changes) and copies into the stored
//! context only the members that transition defines, the way the PRM's per-transition tables
//! do: a driver that forgets a member in RTR2RTS does not wipe what INIT2RTR set. QUERY_QP
//! returns the stored context with the current state. 2ERR and 2RST are legal from every state;
//! 2RST keeps the context (a later RST2INIT rewrites what it defines).

use super::engine::{QpState, RcWire};
use super::syndrome::{self as syn, CmdError};
use super::{fail, Cmd, Done, Fw, Qp, QPC_BYTES};
use crate::prm::cmd::*;
use crate::prm::command::*;
use crate::prm::consts::*;
use crate::prm::ctx::{ads, qpc};
use crate::prm::layout::Member;
use crate::prm::opcode as op;
use crate::prm::status::Status;

/// The primary path member `f` as addressed inside a `qpc`.
const fn pri(f: Member<ads::Bits>) -> Member<qpc::Bits> {
    qpc::primary_address_path.inner(f)
}

/// Members RST2INIT and INIT2INIT take: port, PKey index, Q_Key, remote access.
const INIT_FIELDS: &[Member<qpc::Bits>] = &[
    pri(ads::vhca_port_num),
    pri(ads::pkey_index),
    qpc::q_key,
    qpc::rre,
    qpc::rwe,
    qpc::rae,
    qpc::counter_set_id,
];

/// Members INIT2RTR takes: the responder side and the whole primary path.
const RTR_FIELDS: &[Member<qpc::Bits>] = &[
    qpc::mtu,
    qpc::log_msg_max,
    qpc::remote_qpn,
    qpc::primary_address_path,
    qpc::next_rcv_psn,
    qpc::log_rra_max,
    qpc::min_rnr_nak,
    qpc::rre,
    qpc::rwe,
    qpc::rae,
    qpc::q_key,
    // counter_set_id only with MLX5_QP_OPTPAR_COUNTER_SET_ID, which mlx5_ib never sets
    // here: a QP keeps the set RST2INIT gave it (upstream sets it at RESET->INIT only).
];

/// Members RTR2RTS takes: the requester side.
const RTS_FIELDS: &[Member<qpc::Bits>] = &[
    qpc::next_send_psn,
    qpc::retry_count,
    qpc::rnr_retry,
    qpc::log_sra_max,
    qpc::log_ack_req_freq,
    pri(ads::ack_timeout),
    qpc::min_rnr_nak,
    qpc::rre,
    qpc::rwe,
    qpc::rae,
];

/// Members RTS2RTS may change.
const RTS2RTS_FIELDS: &[Member<qpc::Bits>] = &[
    pri(ads::ack_timeout),
    qpc::min_rnr_nak,
    qpc::rre,
    qpc::rwe,
    qpc::rae,
    qpc::q_key,
    // With MLX5_QP_OPTPAR_COUNTER_SET_ID (upstream __mlx5_ib_qp_set_counter()): the QP counts
    // into another set from then on.
    qpc::counter_set_id,
];

/// Whether transition `opcode` of a QP of service type `st` takes member `f` given the
/// `opt_param_mask` `opt`. RST2INIT and INIT2INIT take every member of their list (upstream
/// mlx5_ib sends them all there), but for INIT2INIT's `counter_set_id`. From INIT2RTR on, Q_Key, the remote access bits and (at
/// RTR2RTS/RTS2RTS) the RNR timer are optional parameters, applied only with their bit, and a
/// UD-like QP (UD, QP0, QP1, UMR) takes no primary path at INIT2RTR (only its P_Key index,
/// with `PKEY_INDEX`): upstream mlx5_ib sends those members zeroed when the verbs mask lacks
/// them, and our driver sends the values it keeps, so both leave the context as it was.
fn optional_taken(opcode: u16, st: u32, f: Member<qpc::Bits>, opt: u32) -> bool {
    let same = |g: Member<qpc::Bits>| g.bit_off == f.bit_off && g.bit_width == f.bit_width;
    if opcode == op::RST2INIT_QP {
        return true;
    }
    if opcode == op::INIT2INIT_QP {
        // The Q counter set is given at RST2INIT (upstream sets it at RESET->INIT only; its
        // INIT2INIT sends the member zeroed): INIT2INIT moves it only with its bit.
        return !same(qpc::counter_set_id) || opt & qp_optpar::COUNTER_SET_ID != 0;
    }
    if same(qpc::primary_address_path) && opcode == op::INIT2RTR_QP {
        return matches!(st, QPC_ST_RC | QPC_ST_UC | QPC_ST_XRC | QPC_ST_DCI);
    }
    let bit = if same(qpc::q_key) {
        qp_optpar::Q_KEY
    } else if same(qpc::rre) {
        qp_optpar::RRE
    } else if same(qpc::rwe) {
        qp_optpar::RWE
    } else if same(qpc::rae) {
        qp_optpar::RAE
    } else if same(qpc::min_rnr_nak) && opcode != op::INIT2RTR_QP {
        qp_optpar::RNR_TIMEOUT
    } else if same(qpc::counter_set_id) {
        qp_optpar::COUNTER_SET_ID
    } else if same(pri(ads::ack_timeout)) && opcode == op::RTS2RTS_QP {
        // Not in upstream mlx5_ib's RTS2RTS opt_mask: a counter move (RTS2RTS with only
        // COUNTER_SET_ID) leaves the timeout as it was.
        qp_optpar::ACK_TIMEOUT
    } else {
        return true;
    };
    opt & bit != 0
}

/// Copies member `f` (relative to a `qpc`) from `src` to `dst`: bytes for byte-aligned
/// members (a whole address path), read-modify-write otherwise.
fn copy_member(dst: &mut [u8], src: &[u8], f: Member<qpc::Bits>) -> Result<(), CmdError> {
    let internal = |_| CmdError::new(Status::INT_ERR, syn::RESERVED_NOT_ZERO);
    if f.bit_width > 32 {
        let from = f.bytes(src).map_err(internal)?;
        f.bytes_mut(dst).map_err(internal)?.copy_from_slice(from);
        return Ok(());
    }
    f.set(dst, f.get(src).map_err(internal)?).map_err(internal)
}

impl Fw {
    /// CREATE_QP: validates what `create_qp()` in mlx5_ib fills and stores the QP in RESET.
    pub(super) fn create_qp(&mut self, c: &mut Cmd<'_, CreateQp>) -> Done {
        let ctx = create_qp_in::qpc;
        let get = |c: &Cmd<'_, CreateQp>, f| c.get(ctx.inner(f));
        if c.get(create_qp_in::input_qpn) != 0 {
            return fail(Status::BAD_PARAM_ERR, syn::QP_INPUT_QPN);
        }
        if get(c, qpc::state) != QPC_STATE_RST {
            return fail(Status::BAD_PARAM_ERR, syn::QP_CREATE_STATE);
        }
        let st = get(c, qpc::st);
        // QP0 (SMI) is accepted for upstream ib_core's MAD layer, which creates it at
        // registration on an IB port with `has_smi`; the engine carries its SMPs to the
        // destination's QP0 by LID, and through the fabric's switch by directed route
        // (`engine/responder.rs`, `engine/smp.rs`). REG_UMR is upstream mlx5_ib's UMR QP,
        // created and moved to RTS at the first user MR, which posts the UMR WQEs of MR
        // re-registrations and translation loads on it (`engine/umr.rs`).
        if !matches!(
            st,
            QPC_ST_RC
                | QPC_ST_UC
                | QPC_ST_UD
                | QPC_ST_XRC
                | QPC_ST_QP0
                | QPC_ST_QP1
                | QPC_ST_REG_UMR
                | QPC_ST_DCI
        ) {
            return fail(Status::BAD_PARAM_ERR, syn::QP_ST);
        }
        // An XRC target QP (XRC without a send queue, `create_xrc_tgt_qp()`): it lives in an
        // XRC domain and receives into the XRC SRQ each message names, so its own `cqn_rcv`,
        // `srqn_rmpn_xrqn` and PD (upstream's device resources c0, s0, p0) are not used.
        let xrc_tgt = st == QPC_ST_XRC && get(c, qpc::no_sq) != 0;
        if xrc_tgt {
            let xrcd = get(c, qpc::xrcd);
            if xrcd == 0 {
                return fail(Status::BAD_PARAM_ERR, syn::XRC_QP_XRCD);
            }
            self.xrcd_usable(c.uid, xrcd)?;
            if get(c, qpc::rq_type) != SRQ_RQ {
                return fail(Status::BAD_PARAM_ERR, syn::QP_RQ_TYPE);
            }
        }
        let p = &self.cfg.profile;
        if get(c, qpc::log_sq_size) > p.log_max_qp_sz || get(c, qpc::log_rq_size) > p.log_max_qp_sz
        {
            return fail(Status::LIM_ERR, syn::QP_TOO_BIG);
        }
        if get(c, qpc::log_msg_max) > p.log_max_msg {
            return fail(Status::LIM_ERR, syn::QP_MSG_MAX);
        }
        let pd = get(c, qpc::pd);
        // The UMR QP has no PD (`create_qp_common()` sets none for REG_UMR): its WQEs name
        // the mkeys they change.
        if !((st == QPC_ST_REG_UMR || xrc_tgt) && pd == 0) {
            self.pd_usable(c.uid, pd)?;
        }
        let uar = get(c, qpc::uar_page);
        self.uar_usable(c.uid, uar)?;
        let send_cq = if get(c, qpc::no_sq) == 0 {
            let cqn = get(c, qpc::cqn_snd);
            self.cq_usable(c.uid, cqn, syn::QP_SEND_CQ)?;
            Some(cqn)
        } else {
            None
        };
        let recv_cq = match get(c, qpc::rq_type) {
            NON_ZERO_RQ => {
                let cqn = get(c, qpc::cqn_rcv);
                self.cq_usable(c.uid, cqn, syn::QP_RECV_CQ)?;
                Some(cqn)
            }
            ZERO_LEN_RQ => None,
            SRQ_RQ if xrc_tgt => None,
            SRQ_RQ => {
                let cqn = get(c, qpc::cqn_rcv);
                self.cq_usable(c.uid, cqn, syn::QP_RECV_CQ)?;
                let srqn = get(c, qpc::srqn_rmpn_xrqn);
                // An XRC initiator of upstream mlx5_ib names its device resource s0, an
                // XRC SRQ; it never receives.
                if !(st == QPC_ST_XRC && self.xrc.srq(srqn).is_some()) {
                    self.rmp_usable(c.uid, srqn, syn::QP_SRQ)?;
                }
                Some(cqn)
            }
            _ => return fail(Status::BAD_PARAM_ERR, syn::QP_RQ_TYPE),
        };
        let qpc_bytes: [u8; QPC_BYTES] = c.inbox.array(ctx);
        // pas[] follows the fixed layout.
        let mut q = QpState::parse(&qpc_bytes, c.inbox_raw(), create_qp_in::SIZE_BYTES)
            .map_err(super::objects::fragmented)?;
        if st == QPC_ST_XRC {
            // No receive of its own: a target's come from the SRQ each message names.
            q.srq = None;
        }
        // DEVX: the work queue buffer and the doorbell record in umems (`umem.rs`).
        let wq = (c.get(create_qp_in::wq_umem_valid) != 0).then(|| {
            let off = c.inbox.get64(create_qp_in::wq_umem_offset);
            (c.get(create_qp_in::wq_umem_id), off)
        });
        let dbr = (get(c, qpc::dbr_umem_valid) != 0)
            .then(|| get(c, crate::prm::cmd::umem_refs::QPC_DBR_UMEM_ID));
        let bytes = q.buf_bytes();
        let umems = self.umem_place(c.uid, &mut q.buf, bytes, wq, dbr)?;
        let qp = Qp {
            uid: c.uid,
            state: QPC_STATE_RST,
            pd,
            uar,
            send_cq,
            recv_cq,
            qpc: qpc_bytes,
            q,
            rc: RcWire::default(),
            umems,
            dct: None,
        };
        let qpn = self.qps.insert(qp)?;
        c.set(create_qp_out::qpn, qpn)
    }

    /// Whether an XRC target QP lives in XRC domain `xrcd` (DEALLOC_XRCD is then busy).
    pub(super) fn xrcd_has_qp(&self, xrcd: u32) -> bool {
        self.qps.iter().any(|(_, q)| {
            qpc::st.get(&q.qpc) == Ok(QPC_ST_XRC)
                && qpc::no_sq.get(&q.qpc) == Ok(1)
                && qpc::xrcd.get(&q.qpc) == Ok(xrcd)
        })
    }

    /// The QP `qpn`, if `uid` may use it. A DCT in the QP table (`dct.rs`) is no QP.
    pub(super) fn qp_owned(&self, uid: u16, qpn: u32) -> Result<&Qp, CmdError> {
        match self.qps.lookup_owned(qpn, uid, syn::QP_UNKNOWN)? {
            q if q.dct.is_some() => fail(Status::BAD_RES_ERR, syn::QP_UNKNOWN),
            q => Ok(q),
        }
    }

    /// Checks that `qpn` names a QP `uid` may use.
    fn qp_usable(&self, uid: u16, qpn: u32) -> Result<(), CmdError> {
        self.qp_owned(uid, qpn).map(|_| ())
    }

    /// DESTROY_QP: legal in every state; releases the QP's hold on its PD, CQs and UAR.
    pub(super) fn destroy_qp(&mut self, c: &mut Cmd<'_, DestroyQp>) -> Done {
        let qpn = c.get(destroy_qp_in::qpn);
        self.qp_usable(c.uid, qpn)?;
        if let Some(slot) = self.qps.slot_of(qpn) {
            self.events.forget_qp(slot);
        }
        if self.sq_hint == Some(qpn) {
            self.sq_hint = None;
        }
        self.mcg.forget_qp(qpn);
        self.qps.free(qpn);
        Ok(())
    }

    /// QUERY_QP: the stored context (with the data path's live PSNs) and the current state,
    /// plus the data path's consumer counters (`hw_sq_wqebb_counter`, `hw_rq_counter`).
    pub(super) fn query_qp(&mut self, c: &mut Cmd<'_, QueryQp>) -> Done {
        let qpn = c.get(query_qp_in::qpn);
        let q = self.qp_owned(c.uid, qpn)?;
        let (bytes, state, sq, rq) = (q.qpc, q.state, q.q.sq_ci, q.q.rq_ci);
        c.set_bytes(query_qp_out::qpc, &bytes)?;
        c.set(
            query_qp_out::qpc.inner(qpc::hw_sq_wqebb_counter),
            u32::from(sq),
        )?;
        c.set(query_qp_out::qpc.inner(qpc::hw_rq_counter), u32::from(rq))?;
        c.set(query_qp_out::qpc.inner(qpc::state), state)
    }

    /// The seven transition commands. All of them have `qpn` at the same place (checked by
    /// the layout table: `rst2init_qp_in.qpn` and the others are all at 0x48).
    pub(super) fn modify_qp<C: QpTransitionModel>(&mut self, c: &mut Cmd<'_, C>) -> Done {
        let qpn = c.get(C::QPN);
        let to_rts = C::FROM == Some(QPC_STATE_RTR) && C::TO == QPC_STATE_RTS;
        // The function's first QP a pass serves: the worker starts its rescans for it.
        let first_served = to_rts && !self.has_served_qp();
        let q = self.qp_owned(c.uid, qpn)?;
        let (state, st) = (q.state, qpc::st.get(&q.qpc).unwrap_or(QPC_ST_RC));
        if C::FROM.is_some_and(|f| f != state) {
            return fail(Status::BAD_RES_STATE_ERR, syn::QP_BAD_STATE);
        }
        let mut qpc_bytes = [0u8; QPC_BYTES];
        if let (Some(TransitionCtx { qpc: m, .. }), false) = (C::CTX, C::FIELDS.is_empty()) {
            qpc_bytes = c.inbox.array(m);
            self.check_transition(C::OPCODE, st, &qpc_bytes)?;
        }
        let opt = match C::CTX {
            Some(TransitionCtx { opt_param_mask, .. }) if !C::FIELDS.is_empty() => {
                c.get(opt_param_mask)
            }
            _ => 0,
        };
        // A set the QP is moved to must exist (and be the caller's or shared).
        if C::OPCODE == op::RTS2RTS_QP && opt & qp_optpar::COUNTER_SET_ID != 0 {
            let set = qpc::counter_set_id.get(&qpc_bytes).unwrap_or(0);
            if set != 0 {
                self.q_counter_usable(c.uid, set)?;
            }
        }
        let q = self.qps.lookup_mut(qpn, syn::QP_UNKNOWN)?;
        let mut next = q.qpc;
        for f in C::FIELDS {
            if !optional_taken(C::OPCODE, st, *f, opt) {
                continue;
            }
            copy_member(&mut next, &qpc_bytes, *f)?;
        }
        if C::OPCODE == op::INIT2RTR_QP
            && !matches!(st, QPC_ST_RC | QPC_ST_UC | QPC_ST_XRC | QPC_ST_DCI)
            && opt & qp_optpar::PKEY_INDEX != 0
        {
            copy_member(&mut next, &qpc_bytes, pri(ads::pkey_index))?;
        }
        q.qpc = next;
        q.state = C::TO;
        if C::TO == QPC_STATE_RST {
            // Consumer counters back to 0, no CQEs (libmlx5 zeroes its doorbell records too).
            q.q.reset();
            q.rc = RcWire::default();
        }
        if C::TO == QPC_STATE_ERR {
            // Hardware flushes on the transition; the flush CQEs need memory.
            self.flush = Some(qpn);
        }
        if to_rts {
            // What was posted in RTR is sent now; whether there is any needs memory.
            self.started = Some((qpn, first_served));
        }
        Ok(())
    }

    /// Per-transition parameter checks, before anything is changed.
    fn check_transition(&self, opcode: u16, st: u32, ctx: &[u8]) -> Result<(), CmdError> {
        let get = |f: Member<qpc::Bits>| {
            f.get(ctx)
                .map_err(|_| CmdError::new(Status::INT_ERR, syn::RESERVED_NOT_ZERO))
        };
        match opcode {
            op::RST2INIT_QP | op::INIT2INIT_QP => {
                self.port(get(pri(ads::vhca_port_num))?)?;
            }
            // The path MTU is a connected-service attribute; UD QPs leave it 0.
            op::INIT2RTR_QP if matches!(st, QPC_ST_RC | QPC_ST_UC | QPC_ST_XRC | QPC_ST_DCI) => {
                let mtu = get(qpc::mtu)?;
                if !(QPC_MTU_256_BYTES..=QPC_MTU_4K_BYTES).contains(&mtu) {
                    return fail(Status::BAD_PARAM_ERR, syn::QP_MTU);
                }
                if get(qpc::log_msg_max)? > self.cfg.profile.log_max_msg {
                    return fail(Status::LIM_ERR, syn::QP_MSG_MAX);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// What the model does on a QP state transition (each is one row of the command table, all
/// executed by [`Fw::modify_qp`]; where the inbox keeps `qpn` and `qpc` is the shared
/// [`QpTransition`]): the source and target state and the `qpc` members the transition takes.
pub(super) trait QpTransitionModel: QpTransition {
    /// The state the QP must be in (`None`: any state, for 2ERR and 2RST).
    const FROM: Option<u32>;
    /// The state afterwards.
    const TO: u32;
    /// The `qpc` members copied into the stored context.
    const FIELDS: &'static [Member<qpc::Bits>];
}

macro_rules! qp_model {
    ($($ty:ident: $from:expr => $to:expr, $fields:expr;)*) => {
        $(
            impl QpTransitionModel for $ty {
                const FROM: Option<u32> = $from;
                const TO: u32 = $to;
                const FIELDS: &'static [Member<qpc::Bits>] = $fields;
            }
        )*
    };
}

qp_model! {
    Rst2InitQp: Some(QPC_STATE_RST) => QPC_STATE_INIT, INIT_FIELDS;
    Init2InitQp: Some(QPC_STATE_INIT) => QPC_STATE_INIT, INIT_FIELDS;
    Init2RtrQp: Some(QPC_STATE_INIT) => QPC_STATE_RTR, RTR_FIELDS;
    Rtr2RtsQp: Some(QPC_STATE_RTR) => QPC_STATE_RTS, RTS_FIELDS;
    Rts2RtsQp: Some(QPC_STATE_RTS) => QPC_STATE_RTS, RTS2RTS_FIELDS;
    Qp2Err: None => QPC_STATE_ERR, &[];
    Qp2Rst: None => QPC_STATE_RST, &[];
}
