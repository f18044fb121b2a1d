// SPDX-License-Identifier: GPL-2.0

//! The IB CM's connection state machine (upstream `cm.c`: the state checks of
//! `ib_send_cm_req()`, `ib_send_cm_rep()`, `ib_send_cm_rtu()`, `cm_send_dreq_locked()`,
//! `cm_send_drep_locked()`, `cm_send_rej_locked()`, `ib_send_cm_mra()` and of the receive
//! handlers `cm_req_handler()` ... `cm_drep_handler()`, `cm_process_send_error()`,
//! `cm_timewait_handler()`), as a function of a state and an input: the next state, the
//! message to send, the event for the user, and whether timewait starts. Without I/O, so the
//! protocol's rules are tested on their own; the MADs are `core/cm/msg.rs`'s.

use super::msg::CmAttr;
use kernel::prelude::*;

upstream_enum! {
    /// A connection's state (upstream `enum ib_cm_state`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CmState: u32 {
        Idle = 0 => IB_CM_IDLE,
        Listen = 1 => IB_CM_LISTEN,
        ReqSent = 2 => IB_CM_REQ_SENT,
        ReqRcvd = 3 => IB_CM_REQ_RCVD,
        MraReqSent = 4 => IB_CM_MRA_REQ_SENT,
        MraReqRcvd = 5 => IB_CM_MRA_REQ_RCVD,
        RepSent = 6 => IB_CM_REP_SENT,
        RepRcvd = 7 => IB_CM_REP_RCVD,
        MraRepSent = 8 => IB_CM_MRA_REP_SENT,
        MraRepRcvd = 9 => IB_CM_MRA_REP_RCVD,
        Established = 10 => IB_CM_ESTABLISHED,
        DreqSent = 11 => IB_CM_DREQ_SENT,
        DreqRcvd = 12 => IB_CM_DREQ_RCVD,
        Timewait = 13 => IB_CM_TIMEWAIT,
        SidrReqSent = 14 => IB_CM_SIDR_REQ_SENT,
        SidrReqRcvd = 15 => IB_CM_SIDR_REQ_RCVD,
    }
}

upstream_enum! {
    /// What the user is told (upstream `enum ib_cm_event_type`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CmEventKind: u32 {
        ReqError = 0 => IB_CM_REQ_ERROR,
        ReqReceived = 1 => IB_CM_REQ_RECEIVED,
        RepError = 2 => IB_CM_REP_ERROR,
        RepReceived = 3 => IB_CM_REP_RECEIVED,
        RtuReceived = 4 => IB_CM_RTU_RECEIVED,
        UserEstablished = 5 => IB_CM_USER_ESTABLISHED,
        DreqError = 6 => IB_CM_DREQ_ERROR,
        DreqReceived = 7 => IB_CM_DREQ_RECEIVED,
        DrepReceived = 8 => IB_CM_DREP_RECEIVED,
        TimewaitExit = 9 => IB_CM_TIMEWAIT_EXIT,
        MraReceived = 10 => IB_CM_MRA_RECEIVED,
        RejReceived = 11 => IB_CM_REJ_RECEIVED,
        SidrReqError = 15 => IB_CM_SIDR_REQ_ERROR,
        SidrReqReceived = 16 => IB_CM_SIDR_REQ_RECEIVED,
        SidrRepReceived = 17 => IB_CM_SIDR_REP_RECEIVED,
    }
}

/// What drives a connection: a call of its user, a message from the peer, a send that got
/// no answer, the end of timewait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// `ib_cm_listen()`.
    Listen,
    /// `ib_send_cm_req()`.
    SendReq,
    /// A REQ matched this listener's service id: the new connection's first input.
    RecvReq,
    /// `ib_send_cm_mra()`.
    SendMra,
    /// An MRA arrived.
    RecvMra,
    /// `ib_send_cm_rep()`.
    SendRep,
    /// A REP arrived.
    RecvRep,
    /// `ib_send_cm_rtu()`.
    SendRtu,
    /// An RTU arrived.
    RecvRtu,
    /// `ib_send_cm_dreq()`.
    SendDreq,
    /// A DREQ arrived.
    RecvDreq,
    /// `ib_send_cm_drep()`.
    SendDrep,
    /// A DREP arrived.
    RecvDrep,
    /// `ib_send_cm_rej()`.
    SendRej,
    /// A REJ arrived.
    RecvRej,
    /// The last send's retries ran out (upstream `cm_process_send_error()` with
    /// `IB_WC_RESP_TIMEOUT_ERR`).
    SendTimeout,
    /// Timewait ended (`cm_timewait_handler()`).
    TimewaitEnd,
    /// `ib_send_cm_sidr_req()`.
    SendSidrReq,
    /// A SIDR REQ matched this listener.
    RecvSidrReq,
    /// `ib_send_cm_sidr_rep()`.
    SendSidrRep,
    /// A SIDR REP arrived.
    RecvSidrRep,
}

/// The outcome of an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The next state.
    pub state: CmState,
    /// The message to send, if any.
    pub send: Option<CmAttr>,
    /// The event for the user, if any.
    pub event: Option<CmEventKind>,
    /// Whether timewait starts (upstream `cm_enter_timewait()`).
    pub timewait: bool,
}

const fn to(state: CmState) -> Step {
    Step {
        state,
        send: None,
        event: None,
        timewait: false,
    }
}

const fn sending(state: CmState, m: CmAttr) -> Step {
    Step {
        state,
        send: Some(m),
        event: None,
        timewait: false,
    }
}

const fn telling(state: CmState, e: CmEventKind) -> Step {
    Step {
        state,
        send: None,
        event: Some(e),
        timewait: false,
    }
}

const fn into_timewait(send: Option<CmAttr>, event: Option<CmEventKind>) -> Step {
    Step {
        state: CmState::Timewait,
        send,
        event,
        timewait: true,
    }
}

/// upstream `cm_convert_to_ms()`: 4.096 us x 2^`iba_time`, approximated in ms.
pub fn convert_to_ms(iba_time: u8) -> u32 {
    1 << u32::from(iba_time).saturating_sub(8).min(31)
}

/// upstream `cm_ack_timeout()`: the local ACK timeout of a path of `packet_life_time` through a
/// CA that delays its ACKs by `ca_ack_delay` (both log2 of 4.096 us).
pub fn ack_timeout(ca_ack_delay: u8, packet_life_time: u8) -> u8 {
    let (d, t) = (i32::from(ca_ack_delay), i32::from(packet_life_time) + 1);
    let t = if t >= d {
        t + i32::from(d >= t - 1)
    } else {
        d + i32::from(t >= d - 1)
    };
    t.min(31) as u8
}

/// The next step of a connection in `s` on `input`.
///
/// # Errors
///
/// `EINVAL` for a call its state does not allow (upstream's checks); `EPROTO` for a message
/// the state does not expect (upstream drops it: the caller drops it too, and may answer a
/// duplicate as upstream does).
pub fn step(s: CmState, input: Input) -> Result<Step> {
    use CmAttr as M;
    use CmEventKind as E;
    use CmState as S;
    use Input as I;
    let r = match (input, s) {
        (I::Listen, S::Idle) => to(S::Listen),
        (I::SendReq, S::Idle) => sending(S::ReqSent, M::Req),
        (I::RecvReq, S::Idle) => telling(S::ReqRcvd, E::ReqReceived),
        // ib_send_cm_mra(): a REQ or a REP may be MRAed by its receiver.
        (I::SendMra, S::ReqRcvd) => sending(S::MraReqSent, M::Mra),
        (I::SendMra, S::RepRcvd) => sending(S::MraRepSent, M::Mra),
        // cm_mra_handler(): the sender waits longer, the user is told.
        (I::RecvMra, S::ReqSent) => telling(S::MraReqRcvd, E::MraReceived),
        (I::RecvMra, S::RepSent) => telling(S::MraRepRcvd, E::MraReceived),
        (I::SendRep, S::ReqRcvd | S::MraReqSent) => sending(S::RepSent, M::Rep),
        (I::RecvRep, S::ReqSent | S::MraReqRcvd) => telling(S::RepRcvd, E::RepReceived),
        (I::SendRtu, S::RepRcvd | S::MraRepSent) => sending(S::Established, M::Rtu),
        (I::RecvRtu, S::RepSent | S::MraRepRcvd) => telling(S::Established, E::RtuReceived),
        (I::SendDreq, S::Established) => sending(S::DreqSent, M::Dreq),
        // cm_dreq_handler(): also in REP_SENT/MRA_REP_RCVD (the RTU was lost) and across our
        // own DREQ.
        (I::RecvDreq, S::Established | S::RepSent | S::MraRepRcvd | S::DreqSent) => {
            telling(S::DreqRcvd, E::DreqReceived)
        }
        (I::SendDrep, S::DreqRcvd) => into_timewait(Some(M::Drep), None),
        (I::RecvDrep, S::DreqSent) => into_timewait(None, Some(E::DrepReceived)),
        // cm_send_rej_locked(): before a REP is sent the connection goes back to idle,
        // after it through timewait.
        (
            I::SendRej,
            S::ReqSent | S::MraReqRcvd | S::ReqRcvd | S::MraReqSent | S::RepRcvd | S::MraRepSent,
        ) => sending(S::Idle, M::Rej),
        (I::SendRej, S::RepSent | S::MraRepRcvd) => into_timewait(Some(M::Rej), None),
        // cm_rej_handler(): before a REP arrived back to idle (a stale connection's REJ aside,
        // which upstream sends through timewait), after it through timewait.
        (
            I::RecvRej,
            S::ReqSent | S::MraReqRcvd | S::RepSent | S::MraRepRcvd | S::ReqRcvd | S::MraReqSent,
        ) => telling(S::Idle, E::RejReceived),
        (I::RecvRej, S::RepRcvd | S::MraRepSent | S::DreqSent | S::Established) => {
            into_timewait(None, Some(E::RejReceived))
        }
        // cm_process_send_error().
        (I::SendTimeout, S::ReqSent | S::MraReqRcvd) => telling(S::Idle, E::ReqError),
        (I::SendTimeout, S::RepSent | S::MraRepRcvd) => telling(S::Idle, E::RepError),
        (I::SendTimeout, S::DreqSent) => into_timewait(None, Some(E::DreqError)),
        (I::SendTimeout, S::SidrReqSent) => telling(S::Idle, E::SidrReqError),
        (I::TimewaitEnd, S::Timewait) => telling(S::Idle, E::TimewaitExit),
        (I::SendSidrReq, S::Idle) => sending(S::SidrReqSent, M::SidrReq),
        (I::RecvSidrReq, S::Idle) => telling(S::SidrReqRcvd, E::SidrReqReceived),
        (I::SendSidrRep, S::SidrReqRcvd) => sending(S::Idle, M::SidrRep),
        (I::RecvSidrRep, S::SidrReqSent) => telling(S::Idle, E::SidrRepReceived),
        (
            I::RecvReq
            | I::RecvMra
            | I::RecvRep
            | I::RecvRtu
            | I::RecvDreq
            | I::RecvDrep
            | I::RecvRej
            | I::RecvSidrReq
            | I::RecvSidrRep
            | I::SendTimeout
            | I::TimewaitEnd,
            _,
        ) => return Err(EPROTO),
        _ => return Err(EINVAL),
    };
    Ok(r)
}

#[kunit_tests(ib_core_rs_cm_state)]
mod tests {
    use super::*;
    use CmState as S;
    use Input as I;

    /// Runs `inputs` from `s`; the states passed through.
    fn run(mut s: CmState, inputs: &[Input]) -> Result<CmState> {
        for i in inputs {
            s = step(s, *i)?.state;
        }
        Ok(s)
    }

    #[test]
    fn both_ends_of_a_connection_and_its_disconnect() -> Result {
        // Active: REQ, REP received, RTU; DREQ, DREP received, timewait, idle.
        let a = run(S::Idle, &[I::SendReq, I::RecvRep, I::SendRtu])?;
        assert_eq!(a, S::Established);
        let d = step(a, I::SendDreq)?;
        assert_eq!((d.state, d.send), (S::DreqSent, Some(CmAttr::Dreq)));
        let t = step(d.state, I::RecvDrep)?;
        assert_eq!(t.event, Some(CmEventKind::DrepReceived));
        assert!(t.timewait);
        assert_eq!(run(t.state, &[I::TimewaitEnd])?, S::Idle);
        // Passive: REQ received, REP, RTU received; DREQ received, DREP.
        let p = run(S::Idle, &[I::RecvReq, I::SendRep, I::RecvRtu, I::RecvDreq])?;
        assert_eq!(p, S::DreqRcvd);
        let t = step(p, I::SendDrep)?;
        assert_eq!(
            (t.state, t.send, t.timewait),
            (S::Timewait, Some(CmAttr::Drep), true)
        );
        Ok(())
    }

    #[test]
    fn calls_out_of_order_are_einval_messages_eproto() {
        assert_eq!(step(S::Idle, I::SendRep).err(), Some(EINVAL));
        assert_eq!(step(S::ReqSent, I::SendReq).err(), Some(EINVAL));
        assert_eq!(step(S::Established, I::SendDrep).err(), Some(EINVAL));
        assert_eq!(step(S::Idle, I::SendRej).err(), Some(EINVAL));
        assert_eq!(step(S::Idle, I::RecvRep).err(), Some(EPROTO));
        assert_eq!(step(S::Established, I::RecvRtu).err(), Some(EPROTO));
        assert_eq!(step(S::Listen, I::TimewaitEnd).err(), Some(EPROTO));
    }

    #[test]
    fn reject_timeout_and_mra() -> Result {
        // A REJ before the REP goes back to idle; after our REP, through timewait.
        assert_eq!(step(S::ReqRcvd, I::SendRej)?.state, S::Idle);
        assert!(step(S::RepSent, I::SendRej)?.timewait);
        let r = step(S::ReqSent, I::RecvRej)?;
        assert_eq!(
            (r.state, r.event),
            (S::Idle, Some(CmEventKind::RejReceived))
        );
        // An unanswered REQ: REQ_ERROR; an MRA first extends it.
        let m = step(S::ReqSent, I::RecvMra)?;
        assert_eq!(m.state, S::MraReqRcvd);
        assert_eq!(
            step(m.state, I::SendTimeout)?.event,
            Some(CmEventKind::ReqError)
        );
        assert_eq!(run(S::MraReqRcvd, &[I::RecvRep])?, S::RepRcvd);
        // SIDR.
        assert_eq!(run(S::Idle, &[I::SendSidrReq, I::RecvSidrRep])?, S::Idle);
        assert_eq!(run(S::Idle, &[I::RecvSidrReq, I::SendSidrRep])?, S::Idle);
        Ok(())
    }

    #[test]
    fn iba_times_convert_as_upstream() {
        // upstream CMA_CM_RESPONSE_TIMEOUT 20: 4096 ms; times up to 8 round up to 1 ms.
        assert_eq!(convert_to_ms(20), 4096);
        assert_eq!(convert_to_ms(8), 1);
        assert_eq!(convert_to_ms(0), 1);
        assert_eq!(convert_to_ms(18), 1024);
        // cm_ack_timeout(): mlx5's ACK delay 16 with RoCE's life time 16, a short and a long
        // path, the cap.
        assert_eq!(ack_timeout(16, 16), 18);
        assert_eq!(ack_timeout(16, 4), 16);
        assert_eq!(ack_timeout(16, 14), 17);
        assert_eq!(ack_timeout(0, 30), 31);
    }
}
