// SPDX-License-Identifier: GPL-2.0

//! The MAD layer (upstream `drivers/infiniband/core/mad.c`, `agent.c`): per port with a MAD
//! capability a [`MadPort`] (upstream `ib_mad_port_open()`), agents registered on it by
//! management class, class version and method mask ([`register_agent`], upstream
//! `ib_register_mad_agent()`), sends with timeouts and retries ([`MadAgent::post_send`],
//! upstream `ib_post_send_mad()`), and receive dispatch: responses to the agent whose
//! `hi_tid` is the upper half of their TID, requests to the agent that registered their
//! class and method (upstream `find_mad_agent()`).
//!
//! **Where a MAD goes.**
//! * a directed-route SMP whose path ends at this port (hop count 0, upstream
//!   `handle_outgoing_dr_smp()` with `smi.c`'s checks) goes to the driver's `process_mad`, and
//!   its reply comes back to the sending agent as a received MAD, as upstream's local
//!   completion does;
//! * a LID-routed MAD to the port's own LID (an SMP, or a GMP such as a PerfMgt Get to the
//!   local port) goes to `process_mad` as upstream's receive path hands a MAD that arrived on
//!   QP0/QP1 to it (upstream loops such a MAD back through the hardware QP; here it is
//!   delivered without one): a reply goes back to the sender, an unanswered request is
//!   dispatched to the agent registered for its class and method, a response to the agent
//!   its TID names;
//! * anything else leaves the node through the driver's special QPs (`open_mad_qp`); a
//!   driver without them drops it at the port: a send that waits for a response completes
//!   with `IB_WC_RESP_TIMEOUT_ERR` after its timeout and retries, one that does not with
//!   `IB_WC_GENERAL_ERR`.
//!
//! **RMPP** (upstream `mad_rmpp.c`) for an agent the kernel does RMPP for: received DATA
//! segments are reassembled (ACKs by a window of [`RMPP_WINDOW`] segments, ABORTs as
//! upstream's for bad segments, types, versions and a message that takes longer than 40 s)
//! and handed over as one [`MadRecv`]; an RMPP-active send goes out in segments by the
//! receiver's window, sent again from the last acknowledged one when no ACK comes in 2 s, and
//! completes with its last ACK (or, with a timeout, with the response).
//!
//! **Handlers** ([`MadAgentHandler`]) run on the core's workqueue, in order, never inside
//! [`MadAgent::post_send`] (upstream queues local completions too): the port's worker is a
//! [`Timer`] that delivers queued completions and expires waiting sends. Dropping a
//! [`MadAgent`] unregisters it (upstream `ib_unregister_mad_agent()`): its waiting sends are
//! cancelled (their handler sees `IB_WC_WR_FLUSH_ERR`, as upstream's `cancel_mads()`), and no
//! handler of it runs after the drop returns.
//!
//! Not done: RMPP to the own port (an RMPP-active send there is `EOPNOTSUPP`), the
//! double-sided RMPP transaction's window (`init_newwin()`), OPA MADs, the MAD security
//! checks (no LSM hooks), flow control of solicited MADs.

use crate::attr::{LinkLayer, CORE_CAP_IB_CM, CORE_CAP_IB_MAD, CORE_CAP_IB_SMI};
use crate::ib_device::{DeviceCore, IbDevice};
use crate::mad::{
    self, Mad, MadHdr, MadRecvInfo, CLASS_SUBN_DIRECTED_ROUTE, CLASS_SUBN_LID_ROUTED,
    MAD_RESULT_CONSUMED, MAD_RESULT_REPLY, MAD_RESULT_SUCCESS, MGMT_RMPP_VERSION,
};
use crate::mad_qp::{MadDest, MadGrh, MadQp, MadQpCompletion, MadQpNotify};
use crate::smi::{self, DrRoute};
use crate::verbs::WcStatus;
use crate::wq::{self, Timer, TimerFire};
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex, SpinLockIrq};

/// `MAX_MGMT_VERSION`: class versions are below it.
const MAX_MGMT_VERSION: u8 = 0x83;
/// `MAX_MGMT_CLASS`: classes are below it, the directed-route class aside.
const MAX_MGMT_CLASS: u8 = 80;

/// upstream `IB_MAD_USER_RMPP`: the agent does RMPP itself (user space).
pub const MAD_USER_RMPP: u32 = 1;

/// The special QP an agent uses (upstream `IB_QPT_SMI`, `IB_QPT_GSI`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialQp {
    /// QP0.
    Smi,
    /// QP1.
    Gsi,
}

impl SpecialQp {
    /// The QP number.
    pub fn qpn(self) -> u32 {
        match self {
            SpecialQp::Smi => 0,
            SpecialQp::Gsi => 1,
        }
    }
}

/// A registration request (upstream `struct ib_mad_reg_req`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MadRegReq {
    /// The management class.
    pub mgmt_class: u8,
    /// The class version.
    pub mgmt_class_version: u8,
    /// The OUI, for the vendor classes 0x30..0x4f.
    pub oui: [u8; 3],
    /// The methods to receive requests of (bit `m` of word `m / 64`).
    pub method_mask: [u64; 2],
}

impl MadRegReq {
    fn has_method(&self, m: u8) -> bool {
        let m = usize::from(m);
        self.method_mask
            .get(m / 64)
            .is_some_and(|w| w & (1u64 << (m % 64)) != 0)
    }

    fn overlaps(&self, other: &MadRegReq) -> bool {
        self.method_mask
            .iter()
            .zip(other.method_mask.iter())
            .any(|(a, b)| a & b != 0)
    }
}

/// A MAD to send (upstream `struct ib_mad_send_buf` with its address handle).
#[derive(Clone)]
pub struct MadSend {
    /// The MAD (padded to 256 bytes).
    pub mad: Mad,
    /// The destination QP.
    pub remote_qpn: u32,
    /// The destination LID.
    pub dlid: u16,
    /// The service level.
    pub sl: u8,
    /// The P_Key index to send with.
    pub pkey_index: u16,
    /// The destination's Q_Key (upstream `ud_wr.remote_qkey`; [`QP1_QKEY`](crate::mad_qp::QP1_QKEY) for QP1, any
    /// value for QP0).
    pub remote_qkey: u32,
    /// The source path bits.
    pub src_path_bits: u8,
    /// The global route (mandatory on RoCE).
    pub grh: Option<MadGrh>,
    /// How long to wait for a response (0: none expected).
    pub timeout_ms: u32,
    /// How many times to resend when no response came.
    pub retries: u32,
    /// The sender's cookie, handed back with the completion.
    pub context: u64,
}

/// A send's completion (upstream `struct ib_mad_send_wc`).
#[derive(Clone, Copy, Debug)]
pub struct MadSendDone {
    /// The [`MadSend::context`] of the send.
    pub context: u64,
    /// Its status.
    pub status: WcStatus,
    /// How many times a send that waited for its response went out again (upstream
    /// `send_buf->retries`); 0 for an RMPP transfer.
    pub retries: u32,
}

/// A received MAD (upstream `struct ib_mad_recv_wc`).
pub struct MadRecv {
    /// The MAD, or the first segment of a message the MAD layer reassembled (RMPP).
    pub mad: Mad,
    /// Where it came from.
    pub info: MadRecvInfo,
    /// The message's length (upstream `mad_len`): [`mad::MAD_SIZE`] for a single MAD; for
    /// an RMPP message the headers and the data of every segment, the last one's padding
    /// cut.
    pub len: usize,
    /// The data of the segments after the first, in order (their headers left out), up to
    /// [`MadRecv::len`]; empty for a single MAD.
    pub rest: KVec<u8>,
}

impl MadRecv {
    /// A single MAD.
    pub fn single(mad: Mad, info: MadRecvInfo) -> Self {
        MadRecv {
            mad,
            info,
            len: mad::MAD_SIZE,
            rest: KVec::new(),
        }
    }
}

/// What an agent's user gets (upstream the agent's `send_handler` and `recv_handler`).
/// Called from the core's workqueue, one call at a time per agent.
pub trait MadAgentHandler: Send + Sync + 'static {
    /// A send completed; `agent` is the agent's `hi_tid`.
    fn send_done(&self, agent: u32, done: MadSendDone);
    /// A MAD arrived for the agent; `send` is the context of the send it answers, if any.
    fn recv(&self, agent: u32, recv: MadRecv, send: Option<u64>);
}

/// One queued handler call.
#[allow(clippy::large_enum_variant)] // Queued briefly; most are receives.
enum Completion {
    Recv(Arc<AgentInner>, MadRecv, Option<u64>),
    Send(Arc<AgentInner>, MadSendDone),
}

/// A send waiting for its response or its timeout (upstream the agent's `wait_list`).
struct Waiting {
    agent: Arc<AgentInner>,
    tid: u64,
    class: u8,
    context: u64,
    timeout_ms: u32,
    retries_left: u32,
    /// How many times it went out again.
    resent: u32,
    deadline: u64,
    /// What a retry sends again on the wire (upstream `retry_send()`), `None` for a MAD that
    /// stayed in the node.
    resend: Option<KBox<Resend>>,
}

/// A MAD sent on the wire again when its response does not come.
struct Resend {
    mad: Mad,
    dest: MadDest,
    qp: SpecialQp,
}

/// A send on the wire whose send completion has not come (upstream the agent's
/// `send_list`).
struct Inflight {
    wr_id: u64,
    /// `None` for a response of the port's own agent (upstream `agent.c`).
    agent: Option<Arc<AgentInner>>,
    context: u64,
    /// It waits for a response (it is on the wait list): its send completion reports
    /// nothing unless it failed.
    waits: bool,
}

struct PortState {
    closed: bool,
    agents: KVec<Arc<AgentInner>>,
    waiting: KVec<Waiting>,
    completions: KVec<Completion>,
    /// The port's special QPs on the wire (`[QP0, QP1]`), `None` where the port has none or
    /// the driver does not make them (then MADs that leave the node are dropped at the
    /// port).
    qps: [Option<Arc<dyn MadQp>>; 2],
    inflight: KVec<Inflight>,
    next_wr_id: u64,
    /// RMPP messages being received (upstream the agents' `rmpp_list`).
    rmpp_recvs: KVec<RmppRecv>,
    /// RMPP messages being sent, until their last segment is acknowledged.
    rmpp_sends: KVec<RmppSend>,
}

/// How many segments an RMPP receiver lets the sender send past the last one it
/// acknowledged (upstream `window_size()`: an eighth of the receive queue; the special QPs'
/// receive queues have 64 slots, `mlx5/ib/gsi.rs`).
const RMPP_WINDOW: u32 = 8;
/// How long an RMPP message may take to arrive (upstream `start_rmpp()`: 40 s).
const RMPP_RECV_TIMEOUT_MS: u64 = 40_000;
/// How long a received RMPP message is remembered to acknowledge a resent segment again
/// (upstream `complete_rmpp()`: 10 s).
const RMPP_RECV_CLEANUP_MS: u64 = 10_000;
/// How long an RMPP sender waits for an ACK (upstream `send_next_seg()`: 2 s at most).
const RMPP_ACK_TIMEOUT_MS: u32 = 2_000;

/// An RMPP message being received (upstream `struct mad_rmpp_recv`).
struct RmppRecv {
    agent: Arc<AgentInner>,
    tid: u64,
    src_qp: u32,
    slid: u16,
    class: u8,
    class_version: u8,
    method: u8,
    /// The last segment arrived: the message went to the agent.
    complete: bool,
    /// The segments that arrived, by segment number.
    segs: KVec<Mad>,
    /// Where the first segment came from (the ACKs go back there).
    info: MadRecvInfo,
    /// The last segment of the in-order run from 1.
    seg_num: u32,
    last_ack: u32,
    newwin: u32,
    /// When it times out (active) or is forgotten (complete).
    deadline: u64,
}

/// An RMPP message being sent (upstream an `ib_mad_send_wr_private` with its `rmpp_list`).
struct RmppSend {
    agent: Arc<AgentInner>,
    context: u64,
    tid: u64,
    class: u8,
    /// Every segment, headers in place.
    segs: KVec<Mad>,
    dest: MadDest,
    qp: SpecialQp,
    /// The last segment sent.
    seg_num: u32,
    last_ack: u32,
    newwin: u32,
    retries: u32,
    retries_left: u32,
    /// How long to wait for the response once every segment is acknowledged (0: none).
    timeout_ms: u32,
    deadline: u64,
}

/// The MAD layer of one port (upstream `struct ib_mad_port_private`).
#[pin_data]
pub struct MadPort {
    dev_index: u32,
    port: u32,
    has_smi: bool,
    has_cm: bool,
    link_layer: LinkLayer,
    /// The device while the port is open; held during `process_mad` (so that closing the
    /// port waits for a call in progress).
    #[pin]
    dev: Mutex<Option<Arc<dyn IbDevice>>>,
    #[pin]
    state: Mutex<PortState>,
    /// The worker: completions, timeouts, the special QPs' completions. `None` once closed.
    /// A spinlock: the special QPs' completion handlers arm it.
    #[pin]
    timer: SpinLockIrq<Option<Timer<MadPort>>>,
}

/// upstream `struct ib_mad_agent_private`.
#[pin_data]
struct AgentInner {
    port: Arc<MadPort>,
    hi_tid: u32,
    qp: SpecialQp,
    reg: Option<MadRegReq>,
    rmpp_version: u8,
    flags: u32,
    handler: Arc<dyn MadAgentHandler>,
    /// Whether handlers may still be called; held while one runs.
    #[pin]
    live: Mutex<bool>,
}

/// A registered agent (upstream `struct ib_mad_agent`); dropping it unregisters it.
pub struct MadAgent {
    inner: Arc<AgentInner>,
}

/// The next `hi_tid` (upstream `ib_mad_client_next`, 24 bits: mlx4 uses the top byte).
static NEXT_HI_TID: kernel::sync::atomic::Atomic<u32> = kernel::sync::atomic::Atomic::new(1);

fn alloc_hi_tid() -> u32 {
    use kernel::sync::atomic::Relaxed;
    let v = NEXT_HI_TID.fetch_add(1, Relaxed) & 0x00ff_ffff;
    if v == 0 {
        NEXT_HI_TID.fetch_add(1, Relaxed) & 0x00ff_ffff
    } else {
        v
    }
}

/// upstream `convert_mgmt_class()`: the directed-route class shares the table slot of class 0.
fn table_class(class: u8) -> u8 {
    if class == CLASS_SUBN_DIRECTED_ROUTE {
        0
    } else {
        class
    }
}

impl MadPort {
    /// The port number.
    pub fn port_num(&self) -> u32 {
        self.port
    }

    /// The RDMA device's index.
    pub fn dev_index(&self) -> u32 {
        self.dev_index
    }

    /// Whether the port has QP0 (an InfiniBand port: upstream `rdma_cap_ib_smi()`).
    pub fn has_smi(&self) -> bool {
        self.has_smi
    }

    /// The device, while the port is open.
    pub fn device(&self) -> Option<Arc<dyn IbDevice>> {
        self.dev.lock().clone()
    }

    fn queue(&self, st: &mut PortState, c: Completion) -> Result {
        st.completions.push(c, GFP_KERNEL)?;
        self.arm(0);
        Ok(())
    }

    fn arm(&self, ms: u32) {
        if let Some(t) = &*self.timer.lock() {
            t.arm(ms);
        }
    }

    /// Arms the worker for the earliest deadline (queued completions: at once).
    fn rearm(&self, st: &PortState) {
        if !st.completions.is_empty() {
            self.arm(0);
            return;
        }
        let waits = st.waiting.iter().map(|w| w.deadline);
        let recvs = st.rmpp_recvs.iter().map(|r| r.deadline);
        let sends = st.rmpp_sends.iter().map(|r| r.deadline);
        let d = Iterator::chain(Iterator::chain(waits, recvs), sends).min();
        if let Some(d) = d {
            let now = wq::now_ms();
            self.arm(u32::try_from(d.saturating_sub(now)).unwrap_or(u32::MAX));
        }
    }

    /// The agent a received MAD goes to (upstream `find_mad_agent()`): a response to the
    /// agent whose `hi_tid` is the TID's upper half, a request to the one registered for its
    /// class, version, method (and OUI for a vendor class).
    fn find_agent(st: &PortState, m: &[u8], qp: SpecialQp) -> Option<Arc<AgentInner>> {
        let h = MadHdr(m);
        let found = if h.is_response() {
            let hi = (h.tid() >> 32) as u32;
            st.agents.iter().find(|a| a.hi_tid == hi)
        } else {
            let class = table_class(h.mgmt_class());
            st.agents.iter().find(|a| {
                a.reg.as_ref().is_some_and(|r| {
                    table_class(r.mgmt_class) == class
                        && r.mgmt_class_version == h.class_version()
                        && r.has_method(h.method())
                        && (!mad::is_vendor_class(class)
                            || m.get(37..40).is_some_and(|o| o == r.oui))
                })
            })
        };
        // upstream validate_mad(): SMPs only on QP0, the rest only on QP1.
        found.filter(|a| a.qp == qp).cloned()
    }

    /// The worker: the special QPs' completions, timeouts, then the queued completions in
    /// order.
    fn work(&self) {
        self.poll_wire();
        let now = wq::now_ms();
        let list = {
            let mut st = self.state.lock();
            self.rmpp_timeouts(&mut st, now);
            let mut i = 0;
            while i < st.waiting.len() {
                let Some(w) = st.waiting.get_mut(i) else {
                    break;
                };
                if w.deadline > now {
                    i += 1;
                    continue;
                }
                // upstream timeout_sends()/retry_send(): resend while retries are left, then
                // IB_WC_RESP_TIMEOUT_ERR.
                if w.retries_left > 0 {
                    w.retries_left -= 1;
                    w.resent += 1;
                    w.deadline = now + u64::from(w.timeout_ms);
                    let again = w
                        .resend
                        .as_ref()
                        .map(|r| (r.mad.clone(), r.dest, r.qp, w.agent.clone(), w.context));
                    if let Some((mad, dest, qp, agent, context)) = again {
                        // A resend that cannot go out waits for its next deadline.
                        let _ =
                            self.send_wire(&mut st, &mad, &dest, qp, Some(agent), context, true);
                    }
                    i += 1;
                    continue;
                }
                // Without room for the completion the send stays: the next pass reports it.
                if st.completions.reserve(1, GFP_KERNEL).is_err() {
                    break;
                }
                if let Ok(w) = st.waiting.remove(i) {
                    let done = MadSendDone {
                        context: w.context,
                        status: WcStatus::RespTimeoutErr,
                        retries: w.resent,
                    };
                    let _ = st
                        .completions
                        .push(Completion::Send(w.agent, done), GFP_KERNEL);
                }
            }
            let list = core::mem::take(&mut st.completions);
            self.rearm(&st);
            list
        };
        for c in list {
            match c {
                Completion::Recv(a, r, ctx) => a.deliver(|h, id| h.recv(id, r, ctx)),
                Completion::Send(a, d) => a.deliver(|h, id| h.send_done(id, d)),
            }
        }
    }

    /// Sends `mad` on the special QP `qp` of the port (upstream `ib_send_mad()`); the send
    /// completion comes to the worker as `wr_id`, which names `agent`'s send `context`.
    #[allow(clippy::too_many_arguments)]
    fn send_wire(
        &self,
        st: &mut PortState,
        mad: &Mad,
        dest: &MadDest,
        qp: SpecialQp,
        agent: Option<Arc<AgentInner>>,
        context: u64,
        waits: bool,
    ) -> Result {
        let q = st
            .qps
            .get(qp.qpn() as usize)
            .and_then(|q| q.clone())
            .ok_or(ENODEV)?;
        let wr_id = st.next_wr_id;
        st.next_wr_id = st.next_wr_id.wrapping_add(1);
        st.inflight.push(
            Inflight {
                wr_id,
                agent,
                context,
                waits,
            },
            GFP_KERNEL,
        )?;
        let r = q.post_send(mad, mad.0.len(), dest, wr_id);
        if r.is_err() {
            st.inflight.retain(|f| f.wr_id != wr_id);
        }
        r
    }

    /// Takes the special QPs' completions (upstream `ib_mad_completion_handler()`): send
    /// completions end their sends, received MADs are dispatched.
    fn poll_wire(&self) {
        let qps = self.state.lock().qps.clone();
        for (n, q) in qps.iter().enumerate() {
            let Some(q) = q else { continue };
            let qp = if n == 0 {
                SpecialQp::Smi
            } else {
                SpecialQp::Gsi
            };
            let mut got = KVec::new();
            q.poll(&mut |c| {
                // Without memory to hold it the completion is lost: a send then times out,
                // a received MAD is dropped as upstream drops one it has no buffer for.
                let _ = got.push(c, GFP_KERNEL);
            });
            for c in got {
                match c {
                    MadQpCompletion::Send { wr_id, status } => self.wire_send_done(wr_id, status),
                    MadQpCompletion::Recv { mad, info } => self.wire_recv(qp, &mad, info),
                }
            }
        }
    }

    /// upstream `ib_mad_send_done()`: a send without a response to wait for completes; one
    /// that waits stays on the wait list unless it failed.
    fn wire_send_done(&self, wr_id: u64, status: WcStatus) {
        let mut st = self.state.lock();
        let Some(pos) = st.inflight.iter().position(|f| f.wr_id == wr_id) else {
            return;
        };
        let Ok(f) = st.inflight.remove(pos) else {
            return;
        };
        let Some(agent) = f.agent else {
            return;
        };
        if f.waits && status == WcStatus::Success {
            return;
        }
        let mut retries = 0;
        if f.waits {
            let w = st
                .waiting
                .iter()
                .position(|w| Arc::ptr_eq(&w.agent, &agent) && w.context == f.context);
            match w {
                Some(i) => {
                    retries = st.waiting.remove(i).map_or(0, |w| w.resent);
                }
                // Answered or timed out already.
                None => return,
            }
        }
        let done = MadSendDone {
            context: f.context,
            status,
            retries,
        };
        let _ = self.queue(&mut st, Completion::Send(agent, done));
    }

    /// A MAD that arrived on special QP `qp` (upstream `ib_mad_recv_done()`): checked as
    /// upstream's `validate_mad()`, a directed-route SMP through `smi.c`
    /// (`handle_ib_smi()`), then the driver's `process_mad`, whose reply is sent back
    /// (`agent_send_response()`); otherwise a response goes to the agent whose send it
    /// answers, a request to the agent registered for it, and a Get or Set nobody takes is
    /// answered "unsupported method/attribute" (`generate_unmatched_resp()`).
    fn wire_recv(&self, qp: SpecialQp, mad: &Mad, info: MadRecvInfo) {
        let h = MadHdr(&mad.0);
        let class = h.mgmt_class();
        let smp = class == CLASS_SUBN_LID_ROUTED || class == CLASS_SUBN_DIRECTED_ROUTE;
        // upstream validate_mad(): the base version, SMPs only on QP0 and only SMPs there.
        if mad.0[0] != mad::MGMT_BASE_VERSION || smp != (qp == SpecialQp::Smi) {
            return;
        }
        let mut mad = mad.clone();
        let mut ret = 0;
        {
            let guard = self.dev.lock();
            let Some(dev) = guard.as_ref() else {
                return;
            };
            if class == CLASS_SUBN_DIRECTED_ROUTE
                && !smi::handle_dr_smp_recv(&mut mad.0, self.port, dev.has_process_mad())
            {
                return;
            }
            if dev.has_process_mad() {
                let mut reply = Mad::zeroed();
                ret = dev
                    .process_mad(self.port, 0, Some(&info), &mad, &mut reply)
                    .unwrap_or(0);
                drop(guard);
                if ret & MAD_RESULT_SUCCESS != 0 {
                    if ret & MAD_RESULT_CONSUMED != 0 {
                        return;
                    }
                    if ret & MAD_RESULT_REPLY != 0 {
                        self.send_response(qp, reply, &info);
                        return;
                    }
                }
            }
        }
        let is_resp = MadHdr(&mad.0).is_response();
        let method = MadHdr(&mad.0).method();
        let mut st = self.state.lock();
        if st.closed {
            return;
        }
        // upstream ib_mad_complete_recv(): a kernel-RMPP agent's RMPP MADs go through
        // ib_process_rmpp_recv_wc() first; what comes out is a whole message.
        let rmad = match MadPort::find_agent(&st, &mad.0, qp) {
            Some(t)
                if t.kernel_rmpp()
                    && mad::is_rmpp_class(class)
                    && MadHdr(&mad.0).rmpp_flags() & mad::MGMT_RMPP_FLAG_ACTIVE != 0 =>
            {
                // upstream is_kernel_rmpp_data_response(): the DATA of a response nobody
                // waits for is dropped, not acknowledged.
                let h = MadHdr(&mad.0);
                if is_resp
                    && h.rmpp_type() == mad::MGMT_RMPP_TYPE_DATA
                    && !st
                        .waiting
                        .iter()
                        .any(|w| Arc::ptr_eq(&w.agent, &t) && w.tid == h.tid() && w.class == class)
                {
                    return;
                }
                match self.rmpp_recv(&mut st, t, qp, mad, info) {
                    Some(r) => r,
                    None => return,
                }
            }
            _ => MadRecv::single(mad, info),
        };
        if is_resp {
            if let Some((t, ctx, resent)) = MadAgent::take_waiting(&mut st, &rmad.mad.0, qp) {
                let _ = self.queue(&mut st, Completion::Recv(t.clone(), rmad, Some(ctx)));
                let done = MadSendDone {
                    context: ctx,
                    status: WcStatus::Success,
                    retries: resent,
                };
                let _ = self.queue(&mut st, Completion::Send(t, done));
            }
            return;
        }
        if let Some(t) = MadPort::find_agent(&st, &rmad.mad.0, qp) {
            let _ = self.queue(&mut st, Completion::Recv(t, rmad, None));
            return;
        }
        drop(st);
        // upstream generate_unmatched_resp().
        if ret & MAD_RESULT_SUCCESS != 0 && matches!(method, mad::METHOD_GET | mad::METHOD_SET) {
            let mut resp = rmad.mad;
            resp.0[3] = mad::METHOD_GET_RESP;
            let mut status = mad::MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
            if class == CLASS_SUBN_DIRECTED_ROUTE {
                status |= mad::SMP_DIRECTION;
            }
            resp.0[4..6].copy_from_slice(&status.to_be_bytes());
            self.send_response(qp, resp, &rmad.info);
        }
    }

    /// upstream `agent_send_response()`: `reply` back to where `info` says its request came
    /// from, a directed-route reply along its return path (`smi.c` on its way out).
    fn send_response(&self, qp: SpecialQp, reply: Mad, info: &MadRecvInfo) {
        let mut reply = reply;
        let dlid = if reply.mgmt_class() == CLASS_SUBN_DIRECTED_ROUTE {
            match smi::route_outgoing_dr_smp(&mut reply.0, self.port, true) {
                Some(DrRoute::Wire) => mad::LID_PERMISSIVE,
                _ => return,
            }
        } else {
            info.slid
        };
        let dest = MadDest {
            dlid,
            ..Self::dest_back(info)
        };
        let mut st = self.state.lock();
        if st.closed {
            return;
        }
        // A response that cannot go out is lost, as upstream's when its send fails.
        let _ = self.send_wire(&mut st, &reply, &dest, qp, None, 0, false);
    }

    /// The route back to where `info` says a MAD came from (upstream
    /// `ib_init_ah_attr_from_wc()`: the sender's LID and QP, the GRH's source as the
    /// destination GID).
    fn dest_back(info: &MadRecvInfo) -> MadDest {
        let grh = info.grh.map(|g| {
            let vtf = u32::from_be_bytes([g[0], g[1], g[2], g[3]]);
            let mut dgid = [0u8; 16];
            dgid.copy_from_slice(&g[8..24]);
            MadGrh {
                dgid: crate::attr::Gid(dgid),
                sgid_index: 0,
                hop_limit: 0xff,
                traffic_class: ((vtf >> 20) & 0xff) as u8,
                flow_label: vtf & 0xf_ffff,
            }
        });
        MadDest {
            dlid: info.slid,
            sl: info.sl,
            src_path_bits: info.dlid_path_bits,
            remote_qpn: info.src_qp,
            remote_qkey: crate::mad_qp::QP1_QKEY,
            pkey_index: info.pkey_index,
            grh,
        }
    }

    /// Closes the port (upstream `ib_mad_port_close()`): no send is accepted any more, the
    /// worker is stopped, pending completions and waiting sends are dropped, the device is
    /// released after any `process_mad` in progress.
    fn close(&self) {
        let (qps, waiting, completions, inflight, rmpp) = {
            let mut st = self.state.lock();
            st.closed = true;
            (
                core::mem::take(&mut st.qps),
                core::mem::take(&mut st.waiting),
                core::mem::take(&mut st.completions),
                core::mem::take(&mut st.inflight),
                (
                    core::mem::take(&mut st.rmpp_recvs),
                    core::mem::take(&mut st.rmpp_sends),
                ),
            )
        };
        // upstream ib_mad_port_close(): the QPs go first (their completion handlers stop),
        // then the worker.
        drop(qps);
        let timer = self.timer.lock().take();
        if let Some(mut t) = timer {
            t.stop();
        }
        drop(waiting);
        drop(completions);
        drop(inflight);
        drop(rmpp);
        let dev = self.dev.lock().take();
        drop(dev);
    }
}

/// RMPP (upstream `mad_rmpp.c`) for agents the kernel does RMPP for: the receiver's
/// reassembly with its ACKs, the sender's segments sent by the receiver's window.
impl MadPort {
    /// Sends an RMPP ACK or ABORT of `type` in answer to `src` (its headers copied, the
    /// method's response bit flipped; upstream `format_ack()`, `nack_recv()`); no
    /// completion is reported, a send that fails is lost as upstream's.
    #[allow(clippy::too_many_arguments)]
    fn rmpp_answer(
        &self,
        st: &mut PortState,
        qp: SpecialQp,
        src: &Mad,
        dest: &MadDest,
        rtype: u8,
        status: u8,
        seg_num: u32,
        newwin: u32,
    ) {
        let hdr_len = mad::data_offset(src.mgmt_class()).min(mad::MAD_SIZE);
        let mut m = Mad::zeroed();
        m.0[..hdr_len].copy_from_slice(&src.0[..hdr_len]);
        m.0[3] ^= mad::METHOD_RESP;
        mad::set_rmpp(
            &mut m.0,
            rtype,
            mad::MGMT_RMPP_FLAG_ACTIVE,
            status,
            seg_num,
            newwin,
        );
        let _ = self.send_wire(st, &m, dest, qp, None, 0, false);
    }

    /// upstream `nack_recv()`: an ABORT with `status` back to the sender of `src`.
    fn rmpp_nack(
        &self,
        st: &mut PortState,
        qp: SpecialQp,
        src: &Mad,
        info: &MadRecvInfo,
        status: u8,
    ) {
        let dest = Self::dest_back(info);
        self.rmpp_answer(st, qp, src, &dest, mad::MGMT_RMPP_TYPE_ABORT, status, 0, 0);
    }

    /// upstream `ack_recv()`: acknowledges the in-order segments of receive `i`.
    fn rmpp_ack_recv(&self, st: &mut PortState, i: usize, qp: SpecialQp) {
        let Some(r) = st.rmpp_recvs.get_mut(i) else {
            return;
        };
        r.last_ack = r.seg_num;
        let (seg, win, dest) = (r.seg_num, r.newwin, Self::dest_back(&r.info));
        let Some(first) = r.segs.first().cloned() else {
            return;
        };
        self.rmpp_answer(st, qp, &first, &dest, mad::MGMT_RMPP_TYPE_ACK, 0, seg, win);
    }

    /// upstream `ib_process_rmpp_recv_wc()`: an RMPP MAD (the ACTIVE flag set) for kernel-RMPP
    /// agent `agent`; returns the whole message once its last segment is in.
    fn rmpp_recv(
        &self,
        st: &mut PortState,
        agent: Arc<AgentInner>,
        qp: SpecialQp,
        m: Mad,
        info: MadRecvInfo,
    ) -> Option<MadRecv> {
        let h = MadHdr(&m.0);
        if h.rmpp_version() != MGMT_RMPP_VERSION {
            self.rmpp_abort_send(st, &agent, &m, mad::MGMT_RMPP_STATUS_UNV);
            self.rmpp_nack(st, qp, &m, &info, mad::MGMT_RMPP_STATUS_UNV);
            return None;
        }
        match h.rmpp_type() {
            mad::MGMT_RMPP_TYPE_DATA => self.rmpp_data(st, agent, qp, m, info),
            mad::MGMT_RMPP_TYPE_ACK => {
                self.rmpp_ack(st, &agent, qp, &m, &info);
                None
            }
            t @ (mad::MGMT_RMPP_TYPE_STOP | mad::MGMT_RMPP_TYPE_ABORT) => {
                // upstream process_rmpp_stop()/process_rmpp_abort().
                let s = h.rmpp_status();
                let ok = if t == mad::MGMT_RMPP_TYPE_STOP {
                    s == mad::MGMT_RMPP_STATUS_RESX
                } else {
                    (mad::MGMT_RMPP_STATUS_T2L..=mad::MGMT_RMPP_STATUS_ABORT_MAX).contains(&s)
                };
                if ok {
                    self.rmpp_abort_send(st, &agent, &m, s);
                } else {
                    self.rmpp_abort_send(st, &agent, &m, mad::MGMT_RMPP_STATUS_BAD_STATUS);
                    self.rmpp_nack(st, qp, &m, &info, mad::MGMT_RMPP_STATUS_BAD_STATUS);
                }
                None
            }
            _ => {
                self.rmpp_abort_send(st, &agent, &m, mad::MGMT_RMPP_STATUS_BADT);
                self.rmpp_nack(st, qp, &m, &info, mad::MGMT_RMPP_STATUS_BADT);
                None
            }
        }
    }

    /// upstream `process_rmpp_data()`, `start_rmpp()`, `continue_rmpp()`.
    fn rmpp_data(
        &self,
        st: &mut PortState,
        agent: Arc<AgentInner>,
        qp: SpecialQp,
        m: Mad,
        info: MadRecvInfo,
    ) -> Option<MadRecv> {
        let h = MadHdr(&m.0);
        let seg = h.rmpp_seg_num();
        let first = h.rmpp_flags() & mad::MGMT_RMPP_FLAG_FIRST != 0;
        if h.rmpp_status() != 0 {
            self.rmpp_nack(st, qp, &m, &info, mad::MGMT_RMPP_STATUS_BAD_STATUS);
            return None;
        }
        if (seg == 1) != first {
            self.rmpp_nack(st, qp, &m, &info, mad::MGMT_RMPP_STATUS_BAD_SEG);
            return None;
        }
        let (tid, class, cv, method) = (h.tid(), h.mgmt_class(), h.class_version(), h.method());
        // upstream find_rmpp_recv().
        let found = st.rmpp_recvs.iter().position(|r| {
            Arc::ptr_eq(&r.agent, &agent)
                && r.tid == tid
                && r.src_qp == info.src_qp
                && r.slid == info.slid
                && r.class == class
                && r.class_version == cv
                && r.method == method
        });
        let now = wq::now_ms();
        let i = match found {
            Some(i) => i,
            None if seg == 1 => {
                let mut segs = KVec::new();
                segs.push(m.clone(), GFP_KERNEL).ok()?;
                let r = RmppRecv {
                    agent: agent.clone(),
                    tid,
                    src_qp: info.src_qp,
                    slid: info.slid,
                    class,
                    class_version: cv,
                    method,
                    complete: false,
                    segs,
                    info,
                    seg_num: 1,
                    last_ack: 0,
                    newwin: 1,
                    deadline: now + RMPP_RECV_TIMEOUT_MS,
                };
                st.rmpp_recvs.push(r, GFP_KERNEL).ok()?;
                let i = st.rmpp_recvs.len() - 1;
                if h.rmpp_flags() & mad::MGMT_RMPP_FLAG_LAST != 0 {
                    return self.rmpp_complete(st, i, qp);
                }
                if let Some(r) = st.rmpp_recvs.get_mut(i) {
                    r.newwin += RMPP_WINDOW;
                }
                self.rmpp_ack_recv(st, i, qp);
                self.rearm(st);
                return None;
            }
            // A later segment of no message: dropped.
            None => return None,
        };
        let r = st.rmpp_recvs.get_mut(i)?;
        if seg > r.newwin {
            return None;
        }
        if seg <= r.last_ack || r.complete {
            // A resent segment: acknowledged again.
            self.rmpp_ack_recv(st, i, qp);
            return None;
        }
        // upstream find_seg_location(): in order of segment number, a duplicate dropped.
        let pos = r
            .segs
            .iter()
            .position(|s| MadHdr(&s.0).rmpp_seg_num() >= seg)
            .unwrap_or(r.segs.len());
        if r.segs
            .get(pos)
            .is_some_and(|s| MadHdr(&s.0).rmpp_seg_num() == seg)
        {
            return None;
        }
        r.segs.reserve(1, GFP_KERNEL).ok()?;
        r.segs.insert_within_capacity(pos, m).ok()?;
        // upstream update_seg_num().
        while r
            .segs
            .get(r.seg_num as usize)
            .is_some_and(|s| MadHdr(&s.0).rmpp_seg_num() == r.seg_num + 1)
        {
            r.seg_num += 1;
        }
        let last = r
            .segs
            .get(r.seg_num as usize - 1)
            .is_some_and(|s| MadHdr(&s.0).rmpp_flags() & mad::MGMT_RMPP_FLAG_LAST != 0);
        if last {
            return self.rmpp_complete(st, i, qp);
        }
        if r.seg_num == r.newwin {
            r.newwin += RMPP_WINDOW;
            self.rmpp_ack_recv(st, i, qp);
        }
        None
    }

    /// upstream `complete_rmpp()`: the last ACK, the message whole (`get_mad_len()`); the
    /// receive is kept a while to acknowledge resent segments.
    fn rmpp_complete(&self, st: &mut PortState, i: usize, qp: SpecialQp) -> Option<MadRecv> {
        self.rmpp_ack_recv(st, i, qp);
        let r = st.rmpp_recvs.get_mut(i)?;
        r.complete = true;
        r.deadline = wq::now_ms() + RMPP_RECV_CLEANUP_MS;
        let n = r.seg_num as usize;
        let first = r.segs.first()?.clone();
        let hdr_len = mad::data_offset(first.mgmt_class()).min(mad::MAD_SIZE);
        let data_size = mad::MAD_SIZE - hdr_len;
        let last = r.segs.get(n - 1)?;
        let pad = mad::MGMT_RMPP_DATA
            .checked_sub(MadHdr(&last.0).rmpp_paylen_newwin() as usize)
            .filter(|p| *p <= mad::MGMT_RMPP_DATA)
            .unwrap_or(0);
        let len = (hdr_len + n * data_size).saturating_sub(pad).max(hdr_len);
        let mut rest = KVec::new();
        let want = len.saturating_sub(mad::MAD_SIZE);
        for s in r.segs.iter().take(n).skip(1) {
            let left = want - rest.len();
            if left == 0 {
                break;
            }
            let d = &s.0[hdr_len..];
            rest.extend_from_slice(&d[..d.len().min(left)], GFP_KERNEL)
                .ok()?;
        }
        let info = r.info;
        self.rearm(st);
        Some(MadRecv {
            mad: first,
            info,
            len,
            rest,
        })
    }

    /// upstream `abort_send()`: the RMPP send `m` answers ends with `IB_WC_REM_ABORT_ERR`.
    fn rmpp_abort_send(&self, st: &mut PortState, agent: &Arc<AgentInner>, m: &Mad, _status: u8) {
        let h = MadHdr(&m.0);
        let Some(i) = st.rmpp_sends.iter().position(|r| {
            Arc::ptr_eq(&r.agent, agent) && r.tid == h.tid() && r.class == h.mgmt_class()
        }) else {
            return;
        };
        if let Ok(r) = st.rmpp_sends.remove(i) {
            let done = MadSendDone {
                context: r.context,
                status: WcStatus::RemAbortErr,
                retries: 0,
            };
            let _ = self.queue(st, Completion::Send(r.agent, done));
        }
    }

    /// upstream `process_rmpp_ack()`: an ACK of the receiver of one of `agent`'s RMPP sends.
    fn rmpp_ack(
        &self,
        st: &mut PortState,
        agent: &Arc<AgentInner>,
        qp: SpecialQp,
        m: &Mad,
        info: &MadRecvInfo,
    ) {
        let h = MadHdr(&m.0);
        if h.rmpp_status() != 0 {
            self.rmpp_abort_send(st, agent, m, mad::MGMT_RMPP_STATUS_BAD_STATUS);
            self.rmpp_nack(st, qp, m, info, mad::MGMT_RMPP_STATUS_BAD_STATUS);
            return;
        }
        let (seg, newwin) = (h.rmpp_seg_num(), h.rmpp_paylen_newwin());
        if newwin < seg {
            self.rmpp_abort_send(st, agent, m, mad::MGMT_RMPP_STATUS_W2S);
            self.rmpp_nack(st, qp, m, info, mad::MGMT_RMPP_STATUS_W2S);
            return;
        }
        // Unmatched, or the ACK of a message already done.
        let Some(i) = st.rmpp_sends.iter().position(|r| {
            Arc::ptr_eq(&r.agent, agent) && r.tid == h.tid() && r.class == h.mgmt_class()
        }) else {
            return;
        };
        let Some(r) = st.rmpp_sends.get_mut(i) else {
            return;
        };
        let count = r.segs.len() as u32;
        if seg > count || seg > r.newwin {
            self.rmpp_abort_send(st, agent, m, mad::MGMT_RMPP_STATUS_S2B);
            self.rmpp_nack(st, qp, m, info, mad::MGMT_RMPP_STATUS_S2B);
            return;
        }
        if newwin < r.newwin || seg < r.last_ack {
            return;
        }
        if seg > r.last_ack {
            r.last_ack = seg;
            r.retries_left = r.retries;
        }
        r.newwin = newwin;
        if r.last_ack < count {
            self.rmpp_send_window(st, i);
            return;
        }
        // Every segment acknowledged: done, or wait for the response.
        let Ok(r) = st.rmpp_sends.remove(i) else {
            return;
        };
        if r.timeout_ms == 0 {
            let done = MadSendDone {
                context: r.context,
                status: WcStatus::Success,
                retries: 0,
            };
            let _ = self.queue(st, Completion::Send(r.agent, done));
            return;
        }
        let w = Waiting {
            agent: r.agent,
            tid: r.tid,
            class: r.class,
            context: r.context,
            timeout_ms: r.timeout_ms,
            retries_left: 0,
            resent: 0,
            deadline: wq::now_ms() + u64::from(r.timeout_ms),
            resend: None,
        };
        if st.waiting.push(w, GFP_KERNEL).is_ok() {
            self.rearm(st);
        }
    }

    /// upstream `send_next_seg()` while the window allows: the segments after the last one
    /// sent, up to the receiver's NewWindowLast; the ACK timer restarts.
    fn rmpp_send_window(&self, st: &mut PortState, i: usize) {
        let Some(r) = st.rmpp_sends.get_mut(i) else {
            return;
        };
        let end = r.newwin.min(r.segs.len() as u32);
        let mut out = KVec::new();
        while r.seg_num < end {
            let Some(m) = r.segs.get(r.seg_num as usize) else {
                break;
            };
            if out.push(m.clone(), GFP_KERNEL).is_err() {
                break;
            }
            r.seg_num += 1;
        }
        let ack_ms = match r.timeout_ms {
            0 => RMPP_ACK_TIMEOUT_MS,
            t => t.min(RMPP_ACK_TIMEOUT_MS),
        };
        r.deadline = wq::now_ms() + u64::from(ack_ms);
        let (dest, qp) = (r.dest, r.qp);
        for m in out {
            // A segment that cannot go out is sent again after the ACK timeout.
            let _ = self.send_wire(st, &m, &dest, qp, None, 0, false);
        }
        self.rearm(st);
    }

    /// The RMPP timers: a receive past its time is aborted (upstream
    /// `recv_timeout_handler()`, ABORT T2L) or forgotten (`recv_cleanup_handler()`); a send
    /// without its ACK sends again from the last acknowledged segment while retries are left
    /// (`ib_retry_rmpp()`), then completes with `IB_WC_RESP_TIMEOUT_ERR`.
    fn rmpp_timeouts(&self, st: &mut PortState, now: u64) {
        let mut i = 0;
        while i < st.rmpp_recvs.len() {
            let Some(r) = st.rmpp_recvs.get(i) else {
                break;
            };
            if r.deadline > now {
                i += 1;
                continue;
            }
            let Ok(r) = st.rmpp_recvs.remove(i) else {
                break;
            };
            if !r.complete {
                if let Some(first) = r.segs.first() {
                    let qp = r.agent.qp;
                    self.rmpp_nack(st, qp, first, &r.info, mad::MGMT_RMPP_STATUS_T2L);
                }
            }
        }
        let mut i = 0;
        while i < st.rmpp_sends.len() {
            let Some(r) = st.rmpp_sends.get_mut(i) else {
                break;
            };
            if r.deadline > now {
                i += 1;
                continue;
            }
            if r.retries_left > 0 {
                r.retries_left -= 1;
                r.seg_num = r.last_ack;
                self.rmpp_send_window(st, i);
                i += 1;
                continue;
            }
            if let Ok(r) = st.rmpp_sends.remove(i) {
                let done = MadSendDone {
                    context: r.context,
                    status: WcStatus::RespTimeoutErr,
                    retries: 0,
                };
                let _ = st
                    .completions
                    .push(Completion::Send(r.agent, done), GFP_KERNEL);
            }
        }
    }
}

impl TimerFire for MadPort {
    fn fire(&self) {
        self.work();
    }
}

impl MadQpNotify for MadPort {
    fn notify(&self) {
        self.arm(0);
    }
}

impl AgentInner {
    /// upstream `ib_mad_kernel_rmpp_agent()`.
    fn kernel_rmpp(&self) -> bool {
        self.rmpp_version != 0 && self.flags & MAD_USER_RMPP == 0
    }

    /// Calls a handler unless the agent is unregistered (upstream: the agent's refcount keeps
    /// unregistration waiting for a handler in progress).
    fn deliver(&self, f: impl FnOnce(&dyn MadAgentHandler, u32)) {
        let live = self.live.lock();
        if *live {
            f(&*self.handler, self.hi_tid);
        }
        drop(live);
    }
}

/// Registers an agent on `port` of `dev` (upstream `ib_register_mad_agent()`, with its
/// checks in its order).
///
/// # Errors
///
/// `EPROTONOSUPPORT` for QP0 on a port without SMI; `EINVAL` for a bad RMPP version, class
/// version, class (0, beyond 80 but the directed-route class, a vendor class without OUI, an
/// SMP class on QP1 or a GSI class on QP0), an RMPP version for a class without RMPP, no
/// request with [`MAD_USER_RMPP`], or a method another agent of the port registered for the
/// same class and version; `ENODEV` for a port without a MAD layer; `ENOMEM`.
pub fn register_agent(
    dev: &DeviceCore,
    port: u32,
    qp: SpecialQp,
    reg: Option<&MadRegReq>,
    rmpp_version: u8,
    handler: Arc<dyn MadAgentHandler>,
    flags: u32,
) -> Result<MadAgent> {
    let mp = find_port(dev.index(), port);
    // upstream: rdma_cap_ib_smi() for QP0, rdma_cap_ib_cm() for QP1.
    let cap = match qp {
        SpecialQp::Smi => mp.as_ref().is_some_and(|p| p.has_smi),
        SpecialQp::Gsi => mp.as_ref().is_some_and(|p| p.has_cm),
    };
    if !cap {
        return Err(EPROTONOSUPPORT);
    }
    if rmpp_version != 0 && rmpp_version != MGMT_RMPP_VERSION {
        return Err(EINVAL);
    }
    if let Some(r) = reg {
        if r.mgmt_class_version >= MAX_MGMT_VERSION {
            return Err(EINVAL);
        }
        if r.mgmt_class >= MAX_MGMT_CLASS {
            if r.mgmt_class != CLASS_SUBN_DIRECTED_ROUTE {
                return Err(EINVAL);
            }
        } else if r.mgmt_class == 0 || (mad::is_vendor_class(r.mgmt_class) && r.oui == [0; 3]) {
            // Class 0 is reserved (it aliases the directed-route class); a vendor class of
            // the OUI range needs one.
            return Err(EINVAL);
        }
        if !mad::is_rmpp_class(r.mgmt_class) && rmpp_version != 0 {
            return Err(EINVAL);
        }
        let smp_class =
            r.mgmt_class == CLASS_SUBN_LID_ROUTED || r.mgmt_class == CLASS_SUBN_DIRECTED_ROUTE;
        if (qp == SpecialQp::Smi) != smp_class {
            return Err(EINVAL);
        }
    } else if flags & MAD_USER_RMPP != 0 {
        return Err(EINVAL);
    }
    let mp = mp.ok_or(ENODEV)?;
    let mp2 = mp.clone();
    let inner = Arc::pin_init(
        pin_init!(AgentInner {
            port: mp2,
            hi_tid: alloc_hi_tid(),
            qp,
            reg: reg.copied(),
            rmpp_version,
            flags,
            handler,
            live <- kernel::new_mutex!(true, "mad_agent_live"),
        }),
        GFP_KERNEL,
    )?;
    let mut st = mp.state.lock();
    if st.closed {
        return Err(ENODEV);
    }
    // upstream method_in_use() / is_vendor_method_in_use(): EINVAL.
    if let Some(r) = reg {
        let taken = st.agents.iter().any(|a| {
            a.reg.as_ref().is_some_and(|o| {
                table_class(o.mgmt_class) == table_class(r.mgmt_class)
                    && o.mgmt_class_version == r.mgmt_class_version
                    && (!mad::is_vendor_class(r.mgmt_class) || o.oui == r.oui)
                    && o.overlaps(r)
            })
        });
        if taken {
            return Err(EINVAL);
        }
    }
    st.agents.push(inner.clone(), GFP_KERNEL)?;
    drop(st);
    Ok(MadAgent { inner })
}

impl MadAgent {
    /// The agent's TID prefix (upstream `agent->hi_tid`): responses whose TID has it in its
    /// upper 32 bits come to this agent.
    pub fn hi_tid(&self) -> u32 {
        self.inner.hi_tid
    }

    /// The agent's RMPP version (0: none).
    pub fn rmpp_version(&self) -> u8 {
        self.inner.rmpp_version
    }

    /// Whether the kernel does RMPP for the agent (upstream `ib_mad_kernel_rmpp_agent()`).
    pub fn kernel_rmpp(&self) -> bool {
        self.inner.kernel_rmpp()
    }

    /// The special QP the agent is on.
    pub fn qp(&self) -> SpecialQp {
        self.inner.qp
    }

    /// Sends a MAD (upstream `ib_post_send_mad()`); its completion, and a response, come to
    /// the handler (see the module documentation for where a MAD goes).
    ///
    /// # Errors
    ///
    /// `rmpp`: the data of an RMPP-active send of a kernel-RMPP agent (everything after
    /// the class's headers, which are in `send.mad`; upstream `ib_create_send_mad()` with
    /// `rmpp_active`): it goes out in segments by the receiver's window, and completes when
    /// the last one is acknowledged (or, with a timeout, when the response comes).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a class without RMPP from an RMPP agent or a directed route upstream
    /// rejects (`smi.c`), or when `process_mad` answers neither success nor a reply;
    /// `EOPNOTSUPP` for an RMPP-active send that would not leave the node (to the own LID,
    /// or a port without the special QPs); `ENODEV` once the port is closed; `ENOMEM`; the
    /// driver's error from `process_mad`.
    pub fn post_send(&self, send: MadSend, rmpp: Option<KVec<u8>>) -> Result {
        let a = &self.inner;
        let port = &a.port;
        let mut send = send;
        let class = send.mad.mgmt_class();
        if !mad::is_rmpp_class(class) && a.rmpp_version != 0 {
            return Err(EINVAL);
        }
        if let Some(data) = rmpp {
            return self.post_rmpp(send, data);
        }
        let dev_guard = port.dev.lock();
        let Some(dev) = dev_guard.as_ref() else {
            return Err(ENODEV);
        };
        let local = if class == CLASS_SUBN_DIRECTED_ROUTE {
            match smi::route_outgoing_dr_smp(&mut send.mad.0, port.port, dev.has_process_mad()) {
                None => {
                    ibdev_err!(dev.core().name(), "Invalid directed route\n");
                    return Err(EINVAL);
                }
                Some(DrRoute::Local) => Some(MadRecvInfo {
                    slid: smi::dr_slid(&send.mad.0),
                    src_qp: 0,
                    pkey_index: send.pkey_index,
                    ..Default::default()
                }),
                Some(DrRoute::Wire) => None,
            }
        } else {
            let own = port.link_layer == LinkLayer::Infiniband
                && dev
                    .core()
                    .get_cached_lid(port.port)
                    .is_ok_and(|(lid, lmc)| {
                        lid != 0
                            && (send.dlid >> lmc) == (lid >> lmc)
                            && send.dlid != mad::LID_PERMISSIVE
                    });
            own.then(|| MadRecvInfo {
                slid: dev
                    .core()
                    .get_cached_lid(port.port)
                    .map(|(l, _)| l)
                    .unwrap_or(0),
                sl: send.sl,
                src_qp: a.qp.qpn(),
                pkey_index: send.pkey_index,
                ..Default::default()
            })
        };
        let h = MadHdr(&send.mad.0);
        let is_resp = h.is_response();
        let tid = h.tid();
        let mut st = port.state.lock();
        if st.closed {
            return Err(ENODEV);
        }
        // Room for what this send queues, before the driver sees it.
        st.completions.reserve(2, GFP_KERNEL)?;
        st.waiting.reserve(1, GFP_KERNEL)?;
        let Some(info) = local else {
            // Leaves the node: on the wire when the port has the special QP.
            if st.qps.get(a.qp.qpn() as usize).is_some_and(|q| q.is_some()) {
                return self.post_wire(&mut st, &send, tid, is_resp);
            }
            // Without it the MAD is dropped at the port.
            if send.timeout_ms != 0 && !is_resp {
                self.wait(&mut st, &send, tid, wq::now_ms());
            } else {
                let done = MadSendDone {
                    context: send.context,
                    status: WcStatus::GeneralErr,
                    retries: 0,
                };
                port.queue(&mut st, Completion::Send(a.clone(), done))?;
            }
            return Ok(());
        };
        drop(st);
        let dr = class == CLASS_SUBN_DIRECTED_ROUTE;
        // A response to the own LID goes straight to the agent waiting for it (upstream runs
        // it through process_mad, which passes responses on).
        let mut reply = Mad::zeroed();
        let res = if is_resp && !dr {
            MAD_RESULT_SUCCESS
        } else {
            dev.process_mad(port.port, 0, Some(&info), &send.mad, &mut reply)?
        };
        drop(dev_guard);
        if res & MAD_RESULT_SUCCESS == 0 {
            return Err(EINVAL);
        }
        let mut st = port.state.lock();
        if st.closed {
            return Err(ENODEV);
        }
        let ok = MadSendDone {
            context: send.context,
            status: WcStatus::Success,
            retries: 0,
        };
        if res & MAD_RESULT_REPLY != 0 {
            // upstream: a local DR SMP's reply goes to the sender's recv handler (a response
            // only); the reply to a MAD for the own LID is sent back to the sender's LID and
            // arrives there as a response.
            let rinfo = MadRecvInfo {
                slid: info.slid,
                src_qp: a.qp.qpn(),
                pkey_index: send.pkey_index,
                ..Default::default()
            };
            let rmad = MadRecv::single(reply, rinfo);
            if dr {
                if MadHdr(&rmad.mad.0).is_response() {
                    port.queue(
                        &mut st,
                        Completion::Recv(a.clone(), rmad, Some(send.context)),
                    )?;
                }
                return port.queue(&mut st, Completion::Send(a.clone(), ok));
            }
            return self.arrive_response(&mut st, rmad, &send, tid);
        }
        if res & MAD_RESULT_CONSUMED != 0 {
            return port.queue(&mut st, Completion::Send(a.clone(), ok));
        }
        // Not consumed, no reply: it arrives at the port as a received MAD.
        let rmad = MadRecv::single(send.mad.clone(), info);
        if is_resp {
            // A response from this agent to another one's request: to that request's sender.
            if let Some((t, ctx, resent)) = Self::take_waiting(&mut st, &rmad.mad.0, a.qp) {
                port.queue(&mut st, Completion::Recv(t.clone(), rmad, Some(ctx)))?;
                port.queue(
                    &mut st,
                    Completion::Send(
                        t,
                        MadSendDone {
                            context: ctx,
                            status: WcStatus::Success,
                            retries: resent,
                        },
                    ),
                )?;
            }
            return port.queue(&mut st, Completion::Send(a.clone(), ok));
        }
        if let Some(t) = MadPort::find_agent(&st, &rmad.mad.0, a.qp) {
            port.queue(&mut st, Completion::Recv(t, rmad, None))?;
        }
        if send.timeout_ms != 0 && !dr {
            self.wait(&mut st, &send, tid, wq::now_ms());
            Ok(())
        } else {
            port.queue(&mut st, Completion::Send(a.clone(), ok))
        }
    }

    /// The reply `process_mad` made to this agent's request `send` arrives at the sender's
    /// port: to the agent its TID names, if that is the sender (then the send completes with
    /// it) or an agent with a matching waiting send (upstream `ib_find_send_mad()`); the
    /// request, unanswered then, waits for its timeout if it has one.
    fn arrive_response(
        &self,
        st: &mut PortState,
        rmad: MadRecv,
        send: &MadSend,
        tid: u64,
    ) -> Result {
        let a = &self.inner;
        let port = &a.port;
        let to_me = MadPort::find_agent(st, &rmad.mad.0, a.qp).is_some_and(|t| Arc::ptr_eq(&t, a))
            && MadHdr(&rmad.mad.0).tid() == tid;
        if to_me {
            port.queue(st, Completion::Recv(a.clone(), rmad, Some(send.context)))?;
            let ok = MadSendDone {
                context: send.context,
                status: WcStatus::Success,
                retries: 0,
            };
            return port.queue(st, Completion::Send(a.clone(), ok));
        }
        if let Some((t, ctx, resent)) = Self::take_waiting(st, &rmad.mad.0, a.qp) {
            port.queue(st, Completion::Recv(t.clone(), rmad, Some(ctx)))?;
            let done = MadSendDone {
                context: ctx,
                status: WcStatus::Success,
                retries: resent,
            };
            port.queue(st, Completion::Send(t, done))?;
        }
        if send.timeout_ms != 0 {
            self.wait(st, send, tid, wq::now_ms());
            return Ok(());
        }
        let ok = MadSendDone {
            context: send.context,
            status: WcStatus::Success,
            retries: 0,
        };
        port.queue(st, Completion::Send(a.clone(), ok))
    }

    /// An RMPP-active send (upstream `alloc_send_rmpp_list()`, `ib_send_rmpp_mad()`): the
    /// segments built (FIRST with the whole PayloadLength, LAST with its own), the first
    /// window sent.
    fn post_rmpp(&self, send: MadSend, data: KVec<u8>) -> Result {
        let a = &self.inner;
        let port = &a.port;
        let class = send.mad.mgmt_class();
        let own = {
            let dev = port.dev.lock();
            let dev = dev.as_ref().ok_or(ENODEV)?;
            dev.core()
                .get_cached_lid(port.port)
                .is_ok_and(|(lid, lmc)| lid != 0 && (send.dlid >> lmc) == (lid >> lmc))
        };
        let hdr_len = mad::data_offset(class).min(mad::MAD_SIZE);
        let seg_size = mad::MAD_SIZE - hdr_len;
        let pad = match data.len() % seg_size {
            0 if !data.is_empty() => 0,
            r => seg_size - r,
        };
        let count = (data.len() + pad) / seg_size;
        let seg_rmpp = mad::MGMT_RMPP_DATA;
        let mut segs = KVec::with_capacity(count, GFP_KERNEL)?;
        for i in 1..=count {
            let mut m = send.mad.clone();
            m.0[hdr_len..].fill(0);
            let from = (i - 1) * seg_size;
            if let Some(d) = data.get(from..(from + seg_size).min(data.len())) {
                m.0[hdr_len..hdr_len + d.len()].copy_from_slice(d);
            }
            let mut flags = mad::MGMT_RMPP_FLAG_ACTIVE;
            let mut paylen = 0;
            if i == 1 {
                flags |= mad::MGMT_RMPP_FLAG_FIRST;
                paylen = count * seg_rmpp - pad;
            }
            if i == count {
                flags |= mad::MGMT_RMPP_FLAG_LAST;
                paylen = seg_rmpp - pad;
            }
            let paylen = u32::try_from(paylen).map_err(|_| EINVAL)?;
            mad::set_rmpp(
                &mut m.0,
                mad::MGMT_RMPP_TYPE_DATA,
                flags,
                0,
                i as u32,
                paylen,
            );
            segs.push(m, GFP_KERNEL)?;
        }
        let mut st = port.state.lock();
        if st.closed {
            return Err(ENODEV);
        }
        // Only on the wire: an RMPP message to the own port is not looped back.
        if own || !st.qps.get(a.qp.qpn() as usize).is_some_and(|q| q.is_some()) {
            return Err(EOPNOTSUPP);
        }
        let r = RmppSend {
            agent: a.clone(),
            context: send.context,
            tid: MadHdr(&send.mad.0).tid(),
            class,
            segs,
            dest: MadDest {
                dlid: send.dlid,
                sl: send.sl,
                src_path_bits: send.src_path_bits,
                remote_qpn: send.remote_qpn,
                remote_qkey: send.remote_qkey,
                pkey_index: send.pkey_index,
                grh: send.grh,
            },
            qp: a.qp,
            seg_num: 0,
            last_ack: 0,
            newwin: 1,
            retries: send.retries,
            retries_left: send.retries,
            timeout_ms: send.timeout_ms,
            deadline: 0,
        };
        st.rmpp_sends.push(r, GFP_KERNEL)?;
        let i = st.rmpp_sends.len() - 1;
        port.rmpp_send_window(&mut st, i);
        Ok(())
    }

    /// Sends `send` on the port's special QP (upstream `ib_send_mad()`), on the wait list
    /// first when it waits for a response.
    fn post_wire(&self, st: &mut PortState, send: &MadSend, tid: u64, is_resp: bool) -> Result {
        let a = &self.inner;
        // A directed-route SMP's LRH goes to the permissive LID (a DLID of 0 is no LID).
        let dlid = if send.mad.mgmt_class() == CLASS_SUBN_DIRECTED_ROUTE && send.dlid == 0 {
            mad::LID_PERMISSIVE
        } else {
            send.dlid
        };
        let dest = MadDest {
            dlid,
            sl: send.sl,
            src_path_bits: send.src_path_bits,
            remote_qpn: send.remote_qpn,
            remote_qkey: send.remote_qkey,
            pkey_index: send.pkey_index,
            grh: send.grh,
        };
        let waits = send.timeout_ms != 0 && !is_resp;
        if waits {
            let resend = KBox::new(
                Resend {
                    mad: send.mad.clone(),
                    dest,
                    qp: a.qp,
                },
                GFP_KERNEL,
            )?;
            self.wait_resend(st, send, tid, wq::now_ms(), Some(resend));
        }
        let r = a.port.send_wire(
            st,
            &send.mad,
            &dest,
            a.qp,
            Some(a.clone()),
            send.context,
            waits,
        );
        if r.is_err() && waits {
            st.waiting
                .retain(|w| !(Arc::ptr_eq(&w.agent, a) && w.context == send.context));
        }
        r
    }

    /// Puts a send on the wait list (room reserved by the caller).
    fn wait(&self, st: &mut PortState, send: &MadSend, tid: u64, now: u64) {
        self.wait_resend(st, send, tid, now, None)
    }

    /// [`Self::wait`] for a send on the wire, which a retry sends again.
    fn wait_resend(
        &self,
        st: &mut PortState,
        send: &MadSend,
        tid: u64,
        now: u64,
        resend: Option<KBox<Resend>>,
    ) {
        let w = Waiting {
            resend,
            agent: self.inner.clone(),
            tid,
            class: send.mad.mgmt_class(),
            context: send.context,
            timeout_ms: send.timeout_ms,
            retries_left: send.retries,
            resent: 0,
            deadline: now + u64::from(send.timeout_ms),
        };
        if st.waiting.push(w, GFP_KERNEL).is_ok() {
            self.inner.port.rearm(st);
        }
    }

    /// Changes the timeout of the waiting send `context` (upstream `ib_modify_mad()`): a new
    /// deadline `timeout_ms` from now, its retries kept; 0 cancels it (upstream
    /// `ib_cancel_mad()`), and its handler sees `IB_WC_WR_FLUSH_ERR`. A send no longer
    /// waiting is left alone.
    pub fn modify(&self, context: u64, timeout_ms: u32) {
        let a = &self.inner;
        let mut st = a.port.state.lock();
        let Some(pos) = st
            .waiting
            .iter()
            .position(|w| Arc::ptr_eq(&w.agent, a) && w.context == context)
        else {
            return;
        };
        if timeout_ms != 0 {
            if let Some(w) = st.waiting.get_mut(pos) {
                w.timeout_ms = timeout_ms;
                w.deadline = wq::now_ms() + u64::from(timeout_ms);
            }
            a.port.rearm(&st);
            return;
        }
        if let Ok(w) = st.waiting.remove(pos) {
            let done = MadSendDone {
                context: w.context,
                status: WcStatus::WrFlushErr,
                retries: 0,
            };
            // Without memory for the completion the cancel is silent (the send is gone).
            let _ = a.port.queue(&mut st, Completion::Send(w.agent, done));
        }
    }

    /// Finds the waiting send a response answers (upstream `ib_find_send_mad()`: the agent
    /// its TID names, the same TID and class) and takes it off the wait list; returns the
    /// agent and the send's context.
    fn take_waiting(
        st: &mut PortState,
        resp: &[u8],
        qp: SpecialQp,
    ) -> Option<(Arc<AgentInner>, u64, u32)> {
        let h = MadHdr(resp);
        let agent = MadPort::find_agent(st, resp, qp)?;
        let pos = st.waiting.iter().position(|w| {
            Arc::ptr_eq(&w.agent, &agent) && w.tid == h.tid() && w.class == h.mgmt_class()
        })?;
        let w = st.waiting.remove(pos).ok()?;
        Some((agent, w.context, w.resent))
    }
}

impl Drop for MadAgent {
    // upstream: ib_unregister_mad_agent() -> unregister_mad_agent(): cancel_mads(), remove
    // the registration, flush, wait for the references.
    fn drop(&mut self) {
        let a = &self.inner;
        let (cancelled, queued) = {
            let mut st = a.port.state.lock();
            st.agents.retain(|x| !Arc::ptr_eq(x, a));
            let mut cancelled = KVec::new();
            let mut i = 0;
            while i < st.waiting.len() {
                if st.waiting.get(i).is_some_and(|w| Arc::ptr_eq(&w.agent, a)) {
                    if let Ok(w) = st.waiting.remove(i) {
                        // Dropped rather than reported when there is no memory to list it.
                        let _ = cancelled.push(w.context, GFP_KERNEL);
                    }
                } else {
                    i += 1;
                }
            }
            st.rmpp_recvs.retain(|r| !Arc::ptr_eq(&r.agent, a));
            let mut i = 0;
            while i < st.rmpp_sends.len() {
                if st
                    .rmpp_sends
                    .get(i)
                    .is_some_and(|r| Arc::ptr_eq(&r.agent, a))
                {
                    if let Ok(r) = st.rmpp_sends.remove(i) {
                        let _ = cancelled.push(r.context, GFP_KERNEL);
                    }
                } else {
                    i += 1;
                }
            }
            let mut queued = KVec::new();
            let mut i = 0;
            while i < st.completions.len() {
                let mine = st.completions.get(i).is_some_and(|c| match c {
                    Completion::Recv(x, _, _) | Completion::Send(x, _) => Arc::ptr_eq(x, a),
                });
                if mine {
                    if let Ok(c) = st.completions.remove(i) {
                        let _ = queued.push(c, GFP_KERNEL);
                    }
                } else {
                    i += 1;
                }
            }
            (cancelled, queued)
        };
        drop(queued);
        // upstream cancel_mads(): the send handler sees IB_WC_WR_FLUSH_ERR for each.
        for ctx in cancelled {
            a.deliver(|h, id| {
                h.send_done(
                    id,
                    MadSendDone {
                        context: ctx,
                        status: WcStatus::WrFlushErr,
                        retries: 0,
                    },
                )
            });
        }
        *a.live.lock() = false;
    }
}

/// Frees the MAD port list's storage at module exit (statics are never dropped; every port is
/// closed by then).
pub(crate) fn shutdown() {
    let old = core::mem::take(&mut *crate::global::MAD_PORTS.lock());
    drop(old);
}

/// Finds the open MAD port of a device's port.
pub fn find_port(dev_index: u32, port: u32) -> Option<Arc<MadPort>> {
    crate::global::MAD_PORTS
        .lock()
        .iter()
        .find(|p| p.dev_index == dev_index && p.port == port)
        .cloned()
}

/// Opens the MAD port of every port of `dev` with a MAD capability.
fn open_ports(dev: &DeviceCore) -> Result {
    let ibdev = crate::registry::device_arc(dev.index()).ok_or(ENODEV)?;
    let mut opened = 0;
    for port in 1..=dev.phys_port_cnt() {
        let Ok(imm) = dev.port_immutable(port) else {
            continue;
        };
        if imm.core_cap_flags & CORE_CAP_IB_MAD == 0 {
            continue;
        }
        let d = ibdev.clone();
        let p = Arc::pin_init(
            pin_init!(MadPort {
                dev_index: dev.index(),
                port,
                has_smi: imm.core_cap_flags & CORE_CAP_IB_SMI != 0,
                has_cm: imm.core_cap_flags & CORE_CAP_IB_CM != 0,
                link_layer: imm.link_layer,
                dev <- kernel::new_mutex!(Some(d), "mad_port_dev"),
                state <- kernel::new_mutex!(
                    PortState {
                        closed: false,
                        agents: KVec::new(),
                        waiting: KVec::new(),
                        completions: KVec::new(),
                        qps: [None, None],
                        inflight: KVec::new(),
                        next_wr_id: 0,
                        rmpp_recvs: KVec::new(),
                        rmpp_sends: KVec::new(),
                    },
                    "mad_port_state"
                ),
                timer <- kernel::new_spinlock_irq!(None, "mad_port_timer"),
            }),
            GFP_KERNEL,
        )?;
        let timer = Timer::new(p.clone())?;
        *p.timer.lock() = Some(timer);
        if let Err(e) = crate::global::MAD_PORTS.lock().push(p.clone(), GFP_KERNEL) {
            p.close();
            return Err(e.into());
        }
        // upstream ib_mad_port_open(): QP0 where the port has an SMI, QP1; a driver without
        // the special QPs keeps MADs in the node.
        for qpn in [0u32, 1] {
            if qpn == 0 && !p.has_smi {
                continue;
            }
            let notify: Arc<dyn MadQpNotify> = p.clone();
            match ibdev.as_arc_borrow().open_mad_qp(port, qpn, notify) {
                Ok(q) => {
                    if let Some(slot) = p.state.lock().qps.get_mut(qpn as usize) {
                        *slot = Some(q);
                    }
                }
                Err(e) if e == EOPNOTSUPP => {}
                Err(e) => {
                    ibdev_err!(
                        dev.name(),
                        "Couldn't open port {} QP{}: {:?}\n",
                        port,
                        qpn,
                        e
                    );
                    return Err(e);
                }
            }
        }
        opened += 1;
    }
    if opened == 0 {
        return Err(EOPNOTSUPP);
    }
    Ok(())
}

/// The MAD layer as a client of the core (upstream `mad_client`: `ib_mad_init_device()`,
/// `ib_mad_remove_device()`). Registered before umad, so it is added to a device first and
/// removed from it last.
pub(crate) struct MadClient;

impl crate::client::Client for MadClient {
    fn name(&self) -> &'static CStr {
        c"mad"
    }

    // upstream: ib_mad_init_device() -> ib_mad_port_open() for each port with a MAD cap;
    // a failure closes the ports opened before it.
    fn add(&self, dev: &DeviceCore) -> Result {
        let r = open_ports(dev);
        if r.is_err() {
            self.remove(dev);
        }
        r
    }

    // upstream: ib_mad_remove_device() -> ib_mad_port_close().
    fn remove(&self, dev: &DeviceCore) {
        // Closing waits for the port's worker and a process_mad in progress; neither takes
        // the list's lock.
        crate::global::MAD_PORTS.lock().retain(|p| {
            if p.dev_index == dev.index() {
                p.close();
                false
            } else {
                true
            }
        });
    }
}
