// SPDX-License-Identifier: GPL-2.0

//! The IB CM run over QP1 (upstream `cm.c`): a MAD agent of the CM class on each port with
//! the CM capability ([`CmClient`]), connections by local communication id, listeners by
//! service id, each message through the state machine ([`super::state::step`]) to the
//! connection's [`CmConnHandler`], and the QP attributes a connection implies
//! ([`CmConn::init_qp_attr`], upstream `ib_cm_init_qp_attr()`).
//!
//! A REQ, a REP, a DREQ and a SIDR REQ wait for their answer with upstream's timeouts and
//! retries (the MAD layer resends them; the answer cancels them, `ib_cancel_mad()`), and run
//! out as `IB_CM_REQ_ERROR`, `IB_CM_REP_ERROR`, `IB_CM_DREQ_ERROR` (timewait) and
//! `IB_CM_SIDR_REQ_ERROR`; an MRA received stretches the wait (`ib_modify_mad()`). A
//! duplicate REQ (the same remote id and CA GUID) is dropped as upstream's
//! `cm_dup_req_handler()` drops one in `REQ_RCVD`.
//!
//! A duplicate REP of an established connection gets the RTU again, a DREQ in timewait the
//! DREP again (`cm_dup_rep_handler()`, `cm_dreq_handler()`).
//!
//! Differences from upstream: no MRA is sent (upstream's rdma_cm sends none either), a REQ of
//! a connection in timewait is dropped rather than rejected as stale, timewait sleeps on the
//! core's workqueue. A LAP or APR is counted (`cm_rx_msgs/lap`, `apr`) and goes no further:
//! upstream has no kernel API that sends either, and its rdma_cm drops the LAP event of a
//! connection (`cma_ib_handler()`: "unexpected IB CM event"), so an rdma_cm connection has no
//! use for the alternate path a LAP carries.

use super::msg::{self, CmAttr, Dreq, Ids, Mra, Rej, Rep, Req, ReqPath, SidrRep, SidrReq};
use super::state::{self, step, CmEventKind, CmState, Input};
use crate::attr::Gid;
use crate::ib_device::DeviceCore;
use crate::mad::{Mad, MadHdr};
use crate::mad_agent::{MadAgent, MadAgentHandler, MadRecv, MadRegReq, MadSend, MadSendDone};
use crate::mad_qp::{MadGrh, QP1_QKEY};
use crate::port_agents::PortAgents;
use crate::verbs::{AhAttr, GlobalRoute, QpAttr, QpState};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, Mutex};
use kernel::time::{delay::fsleep, Delta};

/// upstream `IB_CM_REJ_INVALID_SERVICE_ID`.
pub const REJ_INVALID_SERVICE_ID: u16 = 8;
/// upstream `IB_CM_REJ_TIMEOUT`.
pub const REJ_TIMEOUT: u16 = 1;
/// upstream `IB_CM_REJ_CONSUMER_DEFINED`.
pub const REJ_CONSUMER_DEFINED: u16 = 28;
/// upstream `enum cm_msg_response`: what a REJ's MessageRejected names.
#[derive(Clone, Copy)]
#[repr(u8)]
enum RejMsg {
    Req = 0,
    Rep = 1,
    Other = 2,
}
/// upstream `enum ib_cm_sidr_status`: `IB_SIDR_SUCCESS`.
pub const SIDR_SUCCESS: u8 = 0;
/// `IB_SIDR_UNSUPPORTED`: no listener for the service id.
pub const SIDR_UNSUPPORTED: u8 = 1;
/// `IB_SIDR_REJECT`.
pub const SIDR_REJECT: u8 = 2;

/// What a message or a timer brought (the message decoded).
pub enum CmMsg {
    /// A REQ (the new connection's first event).
    Req(KBox<Req>),
    /// A REP.
    Rep(KBox<Rep>),
    /// An RTU, a DREP or a DREQ (their ids and private data).
    Ids(KBox<Ids>),
    /// A REJ.
    Rej(KBox<Rej>),
    /// A SIDR REP.
    SidrRep(KBox<SidrRep>),
    /// Nothing (timewait's end, a timeout).
    None,
}

/// What a connection's user gets (upstream `struct ib_cm_event`).
pub struct CmConnEvent {
    /// The event.
    pub kind: CmEventKind,
    /// The message.
    pub msg: CmMsg,
}

/// A connection's user (upstream the `cm_handler` of an `ib_cm_id`). Called from the MAD
/// layer's worker or the core's workqueue, never inside a call on the connection.
pub trait CmConnHandler: Send + Sync + 'static {
    /// `ev` happened on `conn`.
    fn event(&self, conn: &Arc<CmConn>, ev: CmConnEvent);
}

/// A listener (upstream an `ib_cm_id` in `IB_CM_LISTEN`): a REQ for its service id makes a
/// connection and asks it for the connection's handler; an error rejects the REQ.
pub trait CmListener: Send + Sync + 'static {
    /// A REQ arrived as `conn` (in `IB_CM_REQ_RCVD`).
    fn req(&self, conn: &Arc<CmConn>, req: &Req) -> Result<Arc<dyn CmConnHandler>>;
    /// A SIDR REQ arrived as `conn` (in `IB_CM_SIDR_REQ_RCVD`); an error answers it with a
    /// SIDR REP of `IB_SIDR_REJECT`.
    fn sidr_req(&self, conn: &Arc<CmConn>, req: &SidrReq) -> Result<Arc<dyn CmConnHandler>>;
}

/// A connection's address vector (upstream `struct cm_av`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CmAv {
    /// An InfiniBand path: LID-routed, a GRH only when the hop limit is above 0 (upstream
    /// `ib_init_ah_attr_from_path()`); else RoCE (always a GRH).
    pub ib: bool,
    /// The destination LID (InfiniBand).
    pub dlid: u16,
    /// The source LID (InfiniBand).
    pub slid: u16,
    /// The device's index.
    pub dev_index: u32,
    /// The port.
    pub port: u32,
    /// The source GID's index.
    pub sgid_index: u8,
    /// The source GID.
    pub sgid: [u8; 16],
    /// The destination GID.
    pub dgid: [u8; 16],
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label.
    pub flow_label: u32,
    /// Service level.
    pub sl: u8,
    /// Path MTU (`enum ib_mtu`).
    pub mtu: u8,
    /// Packet life time (log2 of 4.096 us).
    pub packet_life_time: u8,
}

impl CmAv {
    /// Whether the path needs a GRH (upstream `ib_init_ah_attr_from_path()`: RoCE, or a hop
    /// limit above 0).
    pub fn has_grh(&self) -> bool {
        !self.ib || self.hop_limit > 0
    }

    /// The address handle attributes of the path.
    pub fn ah_attr(&self) -> AhAttr {
        AhAttr {
            dlid: if self.ib { self.dlid } else { 0 },
            sl: self.sl,
            port_num: self.port,
            grh: self.has_grh().then_some(GlobalRoute {
                dgid: Gid(self.dgid),
                flow_label: self.flow_label,
                sgid_index: self.sgid_index,
                hop_limit: self.hop_limit,
                traffic_class: self.traffic_class,
            }),
            dmac: [0; 6],
        }
    }
}

/// What the active side puts in its REQ (upstream `struct ib_cm_req_param`).
pub struct ReqParams<'a> {
    /// Service id.
    pub service_id: u64,
    /// Local QPN.
    pub qp_num: u32,
    /// Starting PSN.
    pub starting_psn: u32,
    /// Responder resources.
    pub responder_resources: u8,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Retry count.
    pub retry_count: u8,
    /// RNR retry count.
    pub rnr_retry_count: u8,
    /// End-to-end flow control.
    pub flow_control: bool,
    /// SRQ.
    pub srq: bool,
    /// The local CA GUID.
    pub local_ca_guid: u64,
    /// The CM response timeout asked of the peer and given for this end (log2 of 4.096 us,
    /// upstream `remote_cm_response_timeout`, `local_cm_response_timeout`).
    pub cm_response_timeout: u8,
    /// How many times a REQ, REP or DREQ is sent again (upstream `max_cm_retries`).
    pub max_cm_retries: u8,
    /// Private data (at most 92 bytes).
    pub private_data: &'a [u8],
}

/// What the passive side puts in its REP (upstream `struct ib_cm_rep_param`).
pub struct RepParams<'a> {
    /// Local QPN.
    pub qp_num: u32,
    /// Starting PSN.
    pub starting_psn: u32,
    /// Responder resources.
    pub responder_resources: u8,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// RNR retry count.
    pub rnr_retry_count: u8,
    /// End-to-end flow control.
    pub flow_control: bool,
    /// SRQ.
    pub srq: bool,
    /// The local CA GUID.
    pub local_ca_guid: u64,
    /// Private data (at most 196 bytes).
    pub private_data: &'a [u8],
}

struct ConnState {
    state: CmState,
    remote_id: u32,
    av: CmAv,
    local_qpn: u32,
    remote_qpn: u32,
    /// The PSN this end receives from: its own starting PSN (upstream `rq_psn`).
    rq_psn: u32,
    /// The PSN this end sends from: the peer's starting PSN (upstream `sq_psn`).
    sq_psn: u32,
    responder_resources: u8,
    initiator_depth: u8,
    retry_count: u8,
    rnr_retry_count: u8,
    /// The TID of the exchange (upstream: the REQ's, kept for the whole connection).
    tid: u64,
    /// The peer's CA GUID (a REQ's; upstream the remote id table's key with the remote id).
    remote_ca_guid: u64,
    /// How long a REQ, REP or DREQ waits for its answer (upstream `cm_id_priv->timeout_ms`).
    timeout_ms: u32,
    /// How many times it is sent again (upstream `max_cm_retries`).
    max_cm_retries: u8,
    /// A send of this connection waits on the MAD layer (upstream `cm_id_priv->msg`).
    waiting: bool,
    /// The service id of a SIDR REQ received (its REP names it).
    service_id: u64,
    /// The QP's local ACK timeout (upstream `av.timeout`): the packet life time plus one, on
    /// the active side `cm_ack_timeout()` of the REP's target ACK delay.
    qp_timeout: u8,
    handler: Option<Arc<dyn CmConnHandler>>,
}

/// A connection (upstream `struct cm_id_private`).
#[pin_data]
pub struct CmConn {
    local_id: u32,
    #[pin]
    st: Mutex<ConnState>,
}

/// The counter groups of a port (upstream `cm_counter_groups`, the directories of
/// `/sys/class/infiniband/DEV/ports/N/`), in [`CmCounters`]' order.
pub const COUNTER_GROUPS: [&CStr; 4] = [
    c"cm_tx_msgs",
    c"cm_tx_retries",
    c"cm_rx_msgs",
    c"cm_rx_duplicates",
];
/// [`COUNTER_GROUPS`]: each send and resend.
const XMIT: usize = 0;
/// [`COUNTER_GROUPS`]: each resend.
const XMIT_RETRIES: usize = 1;
/// [`COUNTER_GROUPS`]: each message received.
const RECV: usize = 2;
/// [`COUNTER_GROUPS`]: each duplicate received.
const RECV_DUPLICATES: usize = 3;

/// The files of each counter group: the messages by attribute, `CmAttr` - 0x10 (upstream
/// `CM_REQ_COUNTER` .. `CM_APR_COUNTER`).
pub const COUNTER_NAMES: [&CStr; 11] = [
    c"req",
    c"mra",
    c"rej",
    c"rep",
    c"rtu",
    c"dreq",
    c"drep",
    c"sidr_req",
    c"sidr_rep",
    c"lap",
    c"apr",
];

/// The CM's message counters of one port (upstream `cm_port.counters`).
struct CmCounters {
    dev_index: u32,
    port: u32,
    n: [[Atomic<u64>; COUNTER_NAMES.len()]; COUNTER_GROUPS.len()],
}

/// The IB CM's tables (upstream `struct ib_cm`).
pub(crate) struct CmTables {
    ports: PortAgents,
    conns: KVec<Arc<CmConn>>,
    listens: KVec<(u64, Arc<dyn CmListener>)>,
    next_id: u32,
    /// The counters of each port with an agent.
    counters: KVec<CmCounters>,
    /// The attribute of each send that waits for its answer, by its context, for the count
    /// of its resends when it completes.
    waits: KVec<(u64, u16)>,
}

impl CmTables {
    /// Adds `v` to counter `attr_id` of `group` on `dev_index`'s `port`.
    fn count(&self, dev_index: u32, port: u32, group: usize, attr_id: u16, v: u64) {
        let i = usize::from(attr_id.wrapping_sub(CmAttr::Req as u16));
        let c = self
            .counters
            .iter()
            .find(|c| c.dev_index == dev_index && c.port == port);
        if let Some(n) = c.and_then(|c| c.n.get(group)).and_then(|g| g.get(i)) {
            n.fetch_add(v, Relaxed);
        }
    }
}

/// The value of counter `index` ([`COUNTER_NAMES`]) of `group` ([`COUNTER_GROUPS`]) of
/// `dev_index`'s `port`: 0 where the CM has no agent.
pub(crate) fn counter(dev_index: u32, port: u32, group: usize, index: usize) -> u64 {
    let t = tables();
    let c = t
        .counters
        .iter()
        .find(|c| c.dev_index == dev_index && c.port == port);
    c.and_then(|c| c.n.get(group))
        .and_then(|g| g.get(index))
        .map_or(0, |n| n.load(Relaxed))
}

impl CmTables {
    /// Empty tables.
    pub(crate) const fn new() -> Self {
        CmTables {
            ports: PortAgents::new(),
            conns: KVec::new(),
            listens: KVec::new(),
            next_id: 1,
            counters: KVec::new(),
            waits: KVec::new(),
        }
    }
}

fn tables() -> impl core::ops::DerefMut<Target = CmTables> {
    crate::global::CM.lock()
}

fn copy_pd<const N: usize>(pd: &[u8]) -> Result<[u8; N]> {
    let mut out = [0u8; N];
    out.get_mut(..pd.len()).ok_or(EINVAL)?.copy_from_slice(pd);
    Ok(out)
}

/// A listening service id (upstream `ib_cm_listen()`); dropping it stops listening.
pub struct CmListen {
    service_id: u64,
}

/// Listens for REQs of `service_id`.
///
/// # Errors
///
/// `EBUSY` when the service id is taken (upstream `ib_cm_listen()`'s `-EBUSY`); `ENOMEM`.
pub fn listen(service_id: u64, l: Arc<dyn CmListener>) -> Result<CmListen> {
    let mut t = tables();
    if t.listens.iter().any(|(s, _)| *s == service_id) {
        return Err(EBUSY);
    }
    t.listens.push((service_id, l), GFP_KERNEL)?;
    Ok(CmListen { service_id })
}

impl Drop for CmListen {
    fn drop(&mut self) {
        tables().listens.retain(|(s, _)| *s != self.service_id);
    }
}

/// The local CA ACK delay of `av`'s device (upstream `cm_dev->ack_delay`).
fn ca_ack_delay(av: &CmAv) -> u8 {
    crate::registry::device_arc(av.dev_index).map_or(0, |d| d.core().attrs().local_ca_ack_delay)
}

/// The CM agent of `av`'s port.
fn agent_of(av: &CmAv) -> Result<Arc<MadAgent>> {
    tables().ports.find(av.dev_index, av.port).ok_or(ENODEV)
}

/// Sends `mad` on `av`'s port to QP1 of its destination; `wait` is the timeout and the
/// retries of a message that waits for its answer (upstream `msg->timeout_ms`,
/// `msg->retries`).
fn send_on(av: &CmAv, mad: Mad, context: u64, wait: Option<(u32, u8)>) -> Result {
    let agent = agent_of(av)?;
    let (timeout_ms, retries) = wait.unwrap_or((0, 0));
    let attr = mad.attr_id();
    if wait.is_some() {
        let mut t = tables();
        t.waits.retain(|w| w.0 != context);
        t.waits.push((context, attr), GFP_KERNEL)?;
    }
    agent
        .post_send(
            MadSend {
                mad,
                remote_qpn: 1,
                dlid: if av.ib {
                    av.dlid
                } else {
                    crate::mad::LID_PERMISSIVE
                },
                sl: av.sl,
                pkey_index: 0,
                remote_qkey: QP1_QKEY,
                src_path_bits: 0,
                grh: av.has_grh().then_some(MadGrh {
                    dgid: Gid(av.dgid),
                    sgid_index: av.sgid_index,
                    hop_limit: av.hop_limit,
                    traffic_class: av.traffic_class,
                    flow_label: av.flow_label,
                }),
                timeout_ms,
                retries: retries.into(),
                context,
            },
            None,
        )
        .inspect(|()| tables().count(av.dev_index, av.port, XMIT, attr, 1))
}

/// Sends `mad`, the answer to a duplicate (upstream `cm_alloc_response_msg()` with
/// `direct_retry`): counted as upstream's `cm_send_handler()` counts a `CM_DIRECT_RETRY_CTX`
/// message, a resend of what the peer lost: twice in `cm_tx_msgs`, once in `cm_tx_retries`.
fn send_direct_retry(av: &CmAv, mad: Mad) {
    let attr = mad.attr_id();
    if send_on(av, mad, 0, None).is_ok() {
        let t = tables();
        t.count(av.dev_index, av.port, XMIT, attr, 1);
        t.count(av.dev_index, av.port, XMIT_RETRIES, attr, 1);
    }
}

impl CmConn {
    fn alloc(av: CmAv) -> Result<Arc<CmConn>> {
        let mut t = tables();
        let id = t.next_id;
        t.next_id = t.next_id.wrapping_add(1).max(1);
        let c = Arc::pin_init(
            pin_init!(CmConn {
                local_id: id,
                st <- kernel::new_mutex!(
                    ConnState {
                        state: CmState::Idle,
                        remote_id: 0,
                        av,
                        local_qpn: 0,
                        remote_qpn: 0,
                        rq_psn: 0,
                        sq_psn: 0,
                        responder_resources: 0,
                        initiator_depth: 0,
                        retry_count: 0,
                        rnr_retry_count: 0,
                        tid: 0,
                        remote_ca_guid: 0,
                        timeout_ms: 0,
                        max_cm_retries: 0,
                        waiting: false,
                        service_id: 0,
                        qp_timeout: (av.packet_life_time + 1).min(31),
                        handler: None,
                    },
                    "cm_conn"
                ),
            }),
            GFP_KERNEL,
        )?;
        t.conns.push(c.clone(), GFP_KERNEL)?;
        Ok(c)
    }

    /// The local communication id.
    pub fn local_id(&self) -> u32 {
        self.local_id
    }

    /// The state.
    pub fn state(&self) -> CmState {
        self.st.lock().state
    }

    /// The device index and port of the connection (for a received REQ or SIDR REQ, the port
    /// it came to).
    pub fn dev_port(&self) -> (u32, u32) {
        let s = self.st.lock();
        (s.av.dev_index, s.av.port)
    }

    /// Sends a REQ (upstream `ib_send_cm_req()`): a new connection on `av`'s port.
    ///
    /// # Errors
    ///
    /// `EINVAL` for private data over 92 bytes; `ENODEV` without a CM agent on the port; the
    /// MAD layer's errors.
    pub fn connect(
        av: CmAv,
        p: &ReqParams<'_>,
        handler: Arc<dyn CmConnHandler>,
    ) -> Result<Arc<CmConn>> {
        let pd = copy_pd::<{ msg::REQ_PRIVATE_DATA }>(p.private_data)?;
        let c = Self::alloc(av)?;
        // upstream cm_format_req(): the path's LIDs on InfiniBand, the permissive LID on
        // RoCE; subnet local for a hop limit of at most 1.
        let (local_lid, remote_lid) = if av.ib {
            (av.slid, av.dlid)
        } else {
            (crate::mad::LID_PERMISSIVE, crate::mad::LID_PERMISSIVE)
        };
        let path = ReqPath {
            local_lid,
            remote_lid,
            local_gid: av.sgid,
            remote_gid: av.dgid,
            flow_label: av.flow_label,
            packet_rate: 0,
            traffic_class: av.traffic_class,
            hop_limit: av.hop_limit,
            sl: av.sl,
            subnet_local: !av.ib || av.hop_limit <= 1,
            // upstream cm_format_req(): cm_ack_timeout() of the CA's ACK delay.
            local_ack_timeout: state::ack_timeout(ca_ack_delay(&av), av.packet_life_time),
        };
        // upstream CMA_CM_RESPONSE_TIMEOUT and CMA_MAX_CM_RETRIES.
        let req = Req {
            local_comm_id: c.local_id,
            vendor_id: 0,
            service_id: p.service_id,
            local_ca_guid: p.local_ca_guid,
            local_qkey: 0,
            local_qpn: p.qp_num & 0xff_ffff,
            responder_resources: p.responder_resources,
            local_eecn: 0,
            initiator_depth: p.initiator_depth,
            remote_eecn: 0,
            remote_cm_response_timeout: p.cm_response_timeout & 31,
            transport_type: 0,
            flow_control: p.flow_control,
            starting_psn: p.starting_psn & 0xff_ffff,
            local_cm_response_timeout: p.cm_response_timeout & 31,
            retry_count: p.retry_count & 7,
            pkey: 0xffff,
            mtu: av.mtu,
            rdc_exists: false,
            rnr_retry_count: p.rnr_retry_count & 7,
            max_cm_retries: p.max_cm_retries & 15,
            srq: p.srq,
            ext_transport_type: 0,
            primary: path,
            alternate: ReqPath::default(),
            private_data: pd,
        };
        let tid = u64::from(c.local_id);
        {
            let mut s = c.st.lock();
            let next = step(s.state, Input::SendReq)?;
            s.state = next.state;
            s.local_qpn = req.local_qpn;
            s.rq_psn = req.starting_psn;
            s.responder_resources = p.responder_resources;
            s.initiator_depth = p.initiator_depth;
            s.retry_count = req.retry_count;
            s.rnr_retry_count = req.rnr_retry_count;
            s.tid = tid;
            // upstream ib_send_cm_req(): twice the packet life time and the peer's response
            // time.
            s.timeout_ms = state::convert_to_ms(av.packet_life_time) * 2
                + state::convert_to_ms(req.remote_cm_response_timeout);
            s.max_cm_retries = req.max_cm_retries;
            s.waiting = true;
            s.handler = Some(handler);
        }
        let wait = Some((c.st.lock().timeout_ms, req.max_cm_retries));
        if let Err(e) = send_on(&av, req.encode(tid), u64::from(c.local_id), wait) {
            c.destroy();
            return Err(e);
        }
        Ok(c)
    }

    /// Moves the state for a local call, then sends what `build` makes (with the
    /// connection's TID); the state is left as it was when the send fails.
    fn call(&self, input: Input, build: impl FnOnce(&ConnState) -> Mad) -> Result {
        // upstream: a REP and a DREQ wait for their answer (the RTU, the DREP); a new message
        // ends the wait of the one before (`ib_cancel_mad()`).
        let waits = matches!(input, Input::SendRep | Input::SendDreq);
        let (mad, av, old, timewait, wait) = {
            let mut s = self.st.lock();
            let next = step(s.state, input)?;
            let mad = build(&s);
            let old = s.state;
            s.state = next.state;
            let wait = waits.then_some((s.timeout_ms, s.max_cm_retries));
            (mad, s.av, old, next.timewait, wait)
        };
        self.cancel();
        // Marked before the send: an answer may come before send_on() returns.
        self.st.lock().waiting = wait.is_some();
        if let Err(e) = send_on(&av, mad, u64::from(self.local_id), wait) {
            let mut s = self.st.lock();
            s.state = old;
            s.waiting = false;
            return Err(e);
        }
        if timewait {
            self.enter_timewait();
        }
        Ok(())
    }

    /// Sends a REP (upstream `ib_send_cm_rep()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` unless a REQ was received (and not answered), for private data over 196
    /// bytes; the send's errors.
    pub fn rep(&self, p: &RepParams<'_>) -> Result {
        let pd = copy_pd::<{ msg::REP_PRIVATE_DATA }>(p.private_data)?;
        {
            let mut s = self.st.lock();
            s.local_qpn = p.qp_num & 0xff_ffff;
            s.rq_psn = p.starting_psn & 0xff_ffff;
            s.responder_resources = p.responder_resources;
            s.initiator_depth = p.initiator_depth;
        }
        let id = self.local_id;
        let delay = ca_ack_delay(&self.st.lock().av);
        self.call(Input::SendRep, |s| {
            Rep {
                local_comm_id: id,
                remote_comm_id: s.remote_id,
                local_qkey: 0,
                local_qpn: s.local_qpn,
                local_eecn: 0,
                starting_psn: s.rq_psn,
                responder_resources: p.responder_resources,
                initiator_depth: p.initiator_depth,
                target_ack_delay: delay,
                // upstream IB_CM_REP_FAILOVER_NOT_SUPPORTED.
                failover_accepted: 1,
                flow_control: p.flow_control,
                rnr_retry_count: p.rnr_retry_count & 7,
                srq: p.srq,
                local_ca_guid: p.local_ca_guid,
                private_data: pd,
            }
            .encode(s.tid)
        })
    }

    fn ids_msg(&self, attr: CmAttr, input: Input, pd: &[u8]) -> Result {
        let pd = copy_pd::<{ msg::RTU_PRIVATE_DATA }>(pd)?;
        let id = self.local_id;
        self.call(input, |s| {
            Ids {
                local_comm_id: id,
                remote_comm_id: s.remote_id,
                private_data: pd,
            }
            .encode(attr, s.tid)
        })
    }

    /// Sends an RTU (upstream `ib_send_cm_rtu()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` unless a REP was received; the send's errors.
    pub fn rtu(&self, pd: &[u8]) -> Result {
        self.ids_msg(CmAttr::Rtu, Input::SendRtu, pd)
    }

    /// Sends a DREP (upstream `ib_send_cm_drep()`); timewait follows.
    ///
    /// # Errors
    ///
    /// `EINVAL` unless a DREQ was received; the send's errors.
    pub fn drep(&self, pd: &[u8]) -> Result {
        self.ids_msg(CmAttr::Drep, Input::SendDrep, pd)
    }

    /// Sends a DREQ (upstream `ib_send_cm_dreq()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` unless established, for private data over 220 bytes; the send's errors.
    pub fn dreq(&self, pd: &[u8]) -> Result {
        let pd = copy_pd::<{ msg::DREQ_PRIVATE_DATA }>(pd)?;
        let id = self.local_id;
        self.call(Input::SendDreq, |s| {
            Dreq {
                local_comm_id: id,
                remote_comm_id: s.remote_id,
                remote_qpn: s.remote_qpn,
                private_data: pd,
            }
            .encode(s.tid)
        })
    }

    /// Sends a REJ (upstream `ib_send_cm_rej()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` in a state without a REJ, for private data over 148 bytes; the send's errors.
    pub fn rej(&self, reason: u16, pd: &[u8]) -> Result {
        self.rej_ari(reason, &[], pd)
    }

    /// Sends a REJ with `ari` as its additional rejection information (at most 72 bytes).
    fn rej_ari(&self, reason: u16, ari: &[u8], pd: &[u8]) -> Result {
        let pd = copy_pd::<{ msg::REJ_PRIVATE_DATA }>(pd)?;
        let ari_length = u8::try_from(ari.len()).map_err(|_| EINVAL)?;
        let ari = copy_pd::<{ msg::REJ_ARI }>(ari)?;
        let id = self.local_id;
        self.call(Input::SendRej, |s| {
            // upstream cm_format_rej(): the message rejected by the state; before the REP
            // no local comm id of this end's.
            let (local_comm_id, message_rejected) = match s.state {
                CmState::ReqRcvd => (0, RejMsg::Req),
                CmState::MraReqSent => (id, RejMsg::Req),
                CmState::RepRcvd | CmState::MraRepSent => (id, RejMsg::Rep),
                _ => (id, RejMsg::Other),
            };
            Rej {
                local_comm_id,
                remote_comm_id: s.remote_id,
                message_rejected: message_rejected as u8,
                ari_length,
                reason,
                ari,
                private_data: pd,
            }
            .encode(s.tid)
        })
    }

    /// Ends the connection (upstream `ib_destroy_cm_id()`, `cm_destroy_id()`): an established
    /// one sends a DREQ, one with a DREQ received the DREP, one whose REQ is unanswered a REJ
    /// of reason timeout with the device's node GUID, one whose REQ or REP came or went
    /// unanswered a REJ of reason consumer defined, one with a SIDR REQ received a SIDR REP of
    /// `IB_SIDR_REJECT`; no handler call follows.
    pub fn destroy(&self) {
        let (state, av) = {
            let mut s = self.st.lock();
            s.handler = None;
            (s.state, s.av)
        };
        // Best effort, as upstream's cm_destroy_id().
        let _ = match state {
            CmState::Established => self.dreq(&[]),
            CmState::DreqRcvd => self.drep(&[]),
            CmState::ReqSent | CmState::MraReqRcvd => {
                let guid = crate::registry::device_arc(av.dev_index)
                    .map_or(0, |d| d.core().attrs().node_guid);
                self.rej_ari(REJ_TIMEOUT, &guid.to_be_bytes(), &[])
            }
            CmState::ReqRcvd
            | CmState::MraReqSent
            | CmState::RepRcvd
            | CmState::MraRepSent
            | CmState::RepSent
            | CmState::MraRepRcvd => self.rej(REJ_CONSUMER_DEFINED, &[]),
            CmState::SidrReqRcvd => self.sidr_rep(SIDR_REJECT, 0, 0, &[]),
            _ => Ok(()),
        };
        // upstream cm_destroy_id(): a DREQ sent is not waited for (ib_cancel_mad()).
        self.cancel();
        let me: *const CmConn = self;
        tables().conns.retain(|c| !core::ptr::eq(&**c, me));
    }

    /// Ends the wait of the message sent last (upstream `ib_cancel_mad(cm_id_priv->msg)`).
    fn cancel(&self) {
        let av = {
            let mut s = self.st.lock();
            if !core::mem::replace(&mut s.waiting, false) {
                return;
            }
            s.av
        };
        if let Ok(a) = agent_of(&av) {
            a.modify(u64::from(self.local_id), 0);
        }
    }

    /// Sends a SIDR REQ (upstream `ib_send_cm_sidr_req()`): `timeout_ms` and `retries` as
    /// the caller's (rdma_cm: `1 << (CMA_CM_RESPONSE_TIMEOUT - 8)` and `CMA_MAX_CM_RETRIES`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for private data over 216 bytes; `ENODEV` without a CM agent on the port; the
    /// MAD layer's errors.
    pub fn sidr_req(
        av: CmAv,
        service_id: u64,
        pd: &[u8],
        timeout_ms: u32,
        retries: u8,
        handler: Arc<dyn CmConnHandler>,
    ) -> Result<Arc<CmConn>> {
        let pd = copy_pd::<{ msg::SIDR_REQ_PRIVATE_DATA }>(pd)?;
        let c = Self::alloc(av)?;
        let tid = u64::from(c.local_id);
        {
            let mut s = c.st.lock();
            s.state = step(s.state, Input::SendSidrReq)?.state;
            s.tid = tid;
            s.timeout_ms = timeout_ms;
            s.max_cm_retries = retries;
            s.waiting = true;
            s.handler = Some(handler);
        }
        let req = SidrReq {
            request_id: c.local_id,
            pkey: 0xffff,
            service_id,
            private_data: pd,
        };
        let wait = Some((timeout_ms, retries));
        if let Err(e) = send_on(&av, req.encode(tid), u64::from(c.local_id), wait) {
            c.destroy();
            return Err(e);
        }
        Ok(c)
    }

    /// Answers a SIDR REQ (upstream `ib_send_cm_sidr_rep()`); the connection ends.
    ///
    /// # Errors
    ///
    /// `EINVAL` unless a SIDR REQ was received (and not answered), for private data over 136
    /// bytes; the send's errors.
    pub fn sidr_rep(&self, status: u8, qpn: u32, qkey: u32, pd: &[u8]) -> Result {
        let pd = copy_pd::<{ msg::SIDR_REP_PRIVATE_DATA }>(pd)?;
        let (mad, av) = {
            let mut s = self.st.lock();
            s.state = step(s.state, Input::SendSidrRep)?.state;
            let rep = SidrRep {
                request_id: s.remote_id,
                status,
                info_length: 0,
                qpn: qpn & 0xff_ffff,
                service_id: s.service_id,
                qkey,
                info: [0; 72],
                private_data: pd,
            };
            (rep.encode(s.tid), s.av)
        };
        let r = send_on(&av, mad, u64::from(self.local_id), None);
        let me: *const CmConn = self;
        tables().conns.retain(|c| !core::ptr::eq(&**c, me));
        r
    }

    /// Sends an RTU or a DREP again, without private data, for a duplicate REP or DREQ
    /// (best effort, as upstream's response MADs; counted as a direct retry).
    fn resend(&self, attr: CmAttr) {
        let (mad, av) = {
            let s = self.st.lock();
            let ids = Ids {
                local_comm_id: self.local_id,
                remote_comm_id: s.remote_id,
                private_data: [0; msg::RTU_PRIVATE_DATA],
            };
            (ids.encode(attr, s.tid), s.av)
        };
        send_direct_retry(&av, mad);
    }

    /// An MRA arrived (upstream `cm_mra_handler()`): the message it names waits the service
    /// timeout and the packet life time longer (`ib_modify_mad()`).
    fn mra(&self, m: &Mra) {
        let (av, timeout) = {
            let mut s = self.st.lock();
            let ok = matches!(
                (m.message_mraed, s.state),
                (0, CmState::ReqSent) | (1, CmState::RepSent)
            );
            let Ok(next) = step(s.state, Input::RecvMra) else {
                return;
            };
            if !ok || !s.waiting {
                return;
            }
            s.state = next.state;
            let t = state::convert_to_ms(m.service_timeout)
                + state::convert_to_ms(s.av.packet_life_time.saturating_add(1));
            (s.av, t)
        };
        if let Ok(a) = agent_of(&av) {
            a.modify(u64::from(self.local_id), timeout);
        }
    }

    /// Starts timewait (upstream `cm_enter_timewait()`): `TIMEWAIT_EXIT` after twice the
    /// packet life time, on the core's workqueue.
    fn enter_timewait(&self) {
        let Some(me) = tables()
            .conns
            .iter()
            .find(|c| c.local_id == self.local_id)
            .cloned()
        else {
            return;
        };
        let wait = state::convert_to_ms(self.st.lock().av.packet_life_time.saturating_add(1));
        let _ = crate::wq::queue().try_spawn(GFP_KERNEL, move || {
            fsleep(Delta::from_millis(i64::from(wait)));
            me.input(Input::TimewaitEnd, CmMsg::None);
        });
    }

    /// Runs a received message or a timer through the state machine and tells the handler.
    fn input(self: &Arc<Self>, input: Input, m: CmMsg) {
        let (handler, ev, timewait) = {
            let mut s = self.st.lock();
            let Ok(next) = step(s.state, input) else {
                return;
            };
            s.state = next.state;
            match &m {
                CmMsg::Rep(r) => {
                    s.remote_id = r.local_comm_id;
                    s.remote_qpn = r.local_qpn;
                    s.sq_psn = r.starting_psn;
                    // upstream cm_rep_handler().
                    s.qp_timeout = state::ack_timeout(r.target_ack_delay, s.av.packet_life_time);
                }
                CmMsg::Rej(_) | CmMsg::Ids(_) | CmMsg::Req(_) | CmMsg::SidrRep(_) => {}
                CmMsg::None => {}
            }
            if input == Input::SendTimeout {
                s.waiting = false;
            }
            (s.handler.clone(), next.event, next.timewait)
        };
        // upstream: the answer ends the wait of the message it answers (ib_cancel_mad()).
        if !matches!(input, Input::SendTimeout | Input::TimewaitEnd) {
            self.cancel();
        }
        if timewait {
            self.enter_timewait();
        }
        if let (Some(h), Some(kind)) = (handler, ev) {
            h.event(self, CmConnEvent { kind, msg: m });
        }
        if self.state() == CmState::Idle && input == Input::TimewaitEnd {
            let me: *const CmConn = &**self;
            tables().conns.retain(|c| !core::ptr::eq(&**c, me));
        }
    }

    /// The QP attributes for `state` (upstream `ib_cm_init_qp_attr()`:
    /// `cm_init_qp_init_attr()`, `cm_init_qp_rtr_attr()`, `cm_init_qp_rts_attr()`) and the
    /// `IB_QP_*` mask.
    ///
    /// # Errors
    ///
    /// `EINVAL` for another state or a connection not far enough for it.
    pub fn init_qp_attr(&self, qp_state: QpState) -> Result<(QpAttr, u32)> {
        let s = self.st.lock();
        let mut a = QpAttr {
            qp_state,
            ..Default::default()
        };
        let mask;
        match qp_state {
            QpState::Init => {
                if !matches!(
                    s.state,
                    CmState::ReqSent
                        | CmState::MraReqRcvd
                        | CmState::ReqRcvd
                        | CmState::MraReqSent
                        | CmState::RepRcvd
                        | CmState::MraRepSent
                        | CmState::RepSent
                        | CmState::MraRepRcvd
                        | CmState::Established
                ) {
                    return Err(EINVAL);
                }
                a.qp_access_flags = ACCESS_REMOTE_WRITE
                    | if s.responder_resources != 0 {
                        ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC
                    } else {
                        0
                    };
                a.pkey_index = 0;
                a.port_num = s.av.port;
                mask = QP_STATE | QP_ACCESS_FLAGS | QP_PKEY_INDEX | QP_PORT;
            }
            QpState::Rtr => {
                if !matches!(
                    s.state,
                    CmState::ReqRcvd
                        | CmState::MraReqSent
                        | CmState::RepRcvd
                        | CmState::MraRepSent
                        | CmState::RepSent
                        | CmState::MraRepRcvd
                        | CmState::Established
                ) {
                    return Err(EINVAL);
                }
                a.ah_attr = s.av.ah_attr();
                a.path_mtu = s.av.mtu;
                a.dest_qp_num = s.remote_qpn;
                a.rq_psn = s.rq_psn;
                a.max_dest_rd_atomic = s.responder_resources;
                // upstream: min_rnr_timer 0 unless the consumer set one.
                a.min_rnr_timer = 0;
                mask = QP_STATE
                    | QP_AV
                    | QP_PATH_MTU
                    | QP_DEST_QPN
                    | QP_RQ_PSN
                    | QP_MAX_DEST_RD_ATOMIC
                    | QP_MIN_RNR_TIMER;
            }
            QpState::Rts => {
                if !matches!(
                    s.state,
                    CmState::ReqRcvd
                        | CmState::MraReqSent
                        | CmState::RepRcvd
                        | CmState::MraRepSent
                        | CmState::RepSent
                        | CmState::MraRepRcvd
                        | CmState::Established
                ) {
                    return Err(EINVAL);
                }
                a.sq_psn = s.sq_psn;
                a.timeout = s.qp_timeout;
                a.retry_cnt = s.retry_count;
                a.rnr_retry = s.rnr_retry_count;
                a.max_rd_atomic = s.initiator_depth;
                mask = QP_STATE
                    | QP_SQ_PSN
                    | QP_TIMEOUT
                    | QP_RETRY_CNT
                    | QP_RNR_RETRY
                    | QP_MAX_QP_RD_ATOMIC;
            }
            _ => return Err(EINVAL),
        }
        Ok((a, mask))
    }
}

/// `IB_ACCESS_REMOTE_WRITE`, `_READ`, `_ATOMIC`.
const ACCESS_REMOTE_WRITE: u32 = 1 << 1;
const ACCESS_REMOTE_READ: u32 = 1 << 2;
const ACCESS_REMOTE_ATOMIC: u32 = 1 << 3;

/// `enum ib_qp_attr_mask`.
pub const QP_STATE: u32 = 1 << 0;
/// `IB_QP_ACCESS_FLAGS`.
pub const QP_ACCESS_FLAGS: u32 = 1 << 3;
/// `IB_QP_PKEY_INDEX`.
pub const QP_PKEY_INDEX: u32 = 1 << 4;
/// `IB_QP_PORT`.
pub const QP_PORT: u32 = 1 << 5;
/// `IB_QP_AV`.
pub const QP_AV: u32 = 1 << 7;
/// `IB_QP_PATH_MTU`.
pub const QP_PATH_MTU: u32 = 1 << 8;
/// `IB_QP_TIMEOUT`.
pub const QP_TIMEOUT: u32 = 1 << 9;
/// `IB_QP_RETRY_CNT`.
pub const QP_RETRY_CNT: u32 = 1 << 10;
/// `IB_QP_RNR_RETRY`.
pub const QP_RNR_RETRY: u32 = 1 << 11;
/// `IB_QP_RQ_PSN`.
pub const QP_RQ_PSN: u32 = 1 << 12;
/// `IB_QP_MAX_QP_RD_ATOMIC`.
pub const QP_MAX_QP_RD_ATOMIC: u32 = 1 << 13;
/// `IB_QP_MIN_RNR_TIMER`.
pub const QP_MIN_RNR_TIMER: u32 = 1 << 15;
/// `IB_QP_SQ_PSN`.
pub const QP_SQ_PSN: u32 = 1 << 16;
/// `IB_QP_MAX_DEST_RD_ATOMIC`.
pub const QP_MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
/// `IB_QP_DEST_QPN`.
pub const QP_DEST_QPN: u32 = 1 << 20;

/// A port's receive side (upstream `cm_recv_handler()`).
struct PortHandler {
    dev_index: u32,
    port: u32,
}

fn find(id: u32) -> Option<Arc<CmConn>> {
    tables().conns.iter().find(|c| c.local_id == id).cloned()
}

impl PortHandler {
    // upstream cm_req_handler(): a listener by service id, else a REJ.
    fn req(&self, m: &Mad) {
        let req = Req::decode(m);
        let tid = MadHdr(&m.0).tid();
        let p = req.primary;
        let Some(dev) = crate::registry::device_arc(self.dev_index) else {
            return;
        };
        let sgid_index = find_gid(dev.core(), self.port, &p.remote_gid);
        let ib = dev
            .core()
            .port_immutable(self.port)
            .is_ok_and(|i| i.link_layer == crate::attr::LinkLayer::Infiniband);
        drop(dev);
        // upstream cm_format_paths_from_req(): the REQ's path seen from this end.
        let av = CmAv {
            ib,
            dlid: p.local_lid,
            slid: p.remote_lid,
            dev_index: self.dev_index,
            port: self.port,
            sgid_index: sgid_index.unwrap_or(0),
            sgid: p.remote_gid,
            dgid: p.local_gid,
            hop_limit: p.hop_limit,
            traffic_class: p.traffic_class,
            flow_label: p.flow_label,
            sl: p.sl,
            mtu: req.mtu,
            packet_life_time: p.local_ack_timeout.saturating_sub(1),
        };
        // upstream cm_insert_remote_id() / cm_dup_req_handler(): a REQ resent while the first
        // is being answered is dropped.
        let dup = tables().conns.iter().any(|c| {
            let s = c.st.lock();
            s.remote_id == req.local_comm_id
                && s.remote_ca_guid == req.local_ca_guid
                && s.state != CmState::Idle
        });
        if dup {
            self.count_dup(CmAttr::Req);
            return;
        }
        let listener = tables()
            .listens
            .iter()
            .find(|(s, _)| *s == req.service_id)
            .map(|(_, l)| l.clone());
        let Ok(c) = CmConn::alloc(av) else {
            return;
        };
        {
            let mut s = c.st.lock();
            s.state = CmState::ReqRcvd;
            s.remote_id = req.local_comm_id;
            s.remote_qpn = req.local_qpn;
            s.sq_psn = req.starting_psn;
            // The passive side's resources are the active side's depth, and back.
            s.responder_resources = req.initiator_depth;
            s.initiator_depth = req.responder_resources;
            s.retry_count = req.retry_count;
            s.rnr_retry_count = req.rnr_retry_count;
            s.tid = tid;
            s.remote_ca_guid = req.local_ca_guid;
            // upstream cm_req_handler(): the REP and DREQ wait as the peer asked.
            s.timeout_ms = state::convert_to_ms(req.local_cm_response_timeout);
            s.max_cm_retries = req.max_cm_retries;
        }
        let handler = match (listener, sgid_index) {
            (Some(l), Some(_)) => l.req(&c, &req).ok(),
            _ => None,
        };
        match handler {
            Some(h) => c.st.lock().handler = Some(h),
            None => {
                let _ = c.rej(REJ_INVALID_SERVICE_ID, &[]);
                c.destroy();
            }
        }
    }
}

impl PortHandler {
    /// The way back to the sender of `recv` (upstream `cm_create_response_msg_ah()` with
    /// `ib_init_ah_attr_from_wc()`): its GRH's GIDs reversed, hop limit 0xff; without a GRH
    /// (InfiniBand in the subnet) the sender's LID from this port's GID 0. With the index of
    /// the source GID, if the port has it.
    fn reply_av(&self, recv: &MadRecv) -> Option<(CmAv, Option<u8>)> {
        let dev = crate::registry::device_arc(self.dev_index)?;
        let ib = dev
            .core()
            .port_immutable(self.port)
            .is_ok_and(|i| i.link_layer == crate::attr::LinkLayer::Infiniband);
        let (dgid, sgid, hop_limit) = match recv.info.grh.as_ref().map(msg::hdr_gids) {
            Some((d, s)) => (d, s, 0xff),
            None if ib => ([0; 16], dev.core().query_gid(self.port, 0).ok()?.0, 0),
            None => return None,
        };
        let sgid_index = find_gid(dev.core(), self.port, &sgid);
        let av = CmAv {
            ib,
            dlid: recv.info.slid,
            slid: 0,
            dev_index: self.dev_index,
            port: self.port,
            sgid_index: sgid_index.unwrap_or(0),
            sgid,
            dgid,
            hop_limit,
            traffic_class: 0,
            flow_label: 0,
            sl: recv.info.sl,
            mtu: 0,
            packet_life_time: 0,
        };
        Some((av, sgid_index))
    }

    // upstream cm_sidr_req_handler(): the reply goes back the way the REQ came (its GRH), to
    // the listener of the service id, else a SIDR REP of IB_SIDR_UNSUPPORTED.
    fn sidr_req(&self, recv: &MadRecv) {
        let m = &recv.mad;
        let req = SidrReq::decode(m);
        let tid = MadHdr(&m.0).tid();
        let Some((av, sgid_index)) = self.reply_av(recv) else {
            return;
        };
        let dgid = av.dgid;
        let dup = tables().conns.iter().any(|c| {
            let s = c.st.lock();
            s.state == CmState::SidrReqRcvd
                && s.remote_id == req.request_id
                && s.av.dgid == dgid
                && s.av.dlid == av.dlid
        });
        if dup {
            self.count_dup(CmAttr::SidrReq);
            return;
        }
        let listener = tables()
            .listens
            .iter()
            .find(|(s, _)| *s == req.service_id)
            .map(|(_, l)| l.clone());
        let Ok(c) = CmConn::alloc(av) else {
            return;
        };
        {
            let mut s = c.st.lock();
            s.state = CmState::SidrReqRcvd;
            s.remote_id = req.request_id;
            s.service_id = req.service_id;
            s.tid = tid;
        }
        let (handler, status) = match (listener, sgid_index) {
            (Some(l), Some(_)) => (l.sidr_req(&c, &req).ok(), SIDR_REJECT),
            _ => (None, SIDR_UNSUPPORTED),
        };
        match handler {
            Some(h) => c.st.lock().handler = Some(h),
            None => {
                let _ = c.sidr_rep(status, 0, 0, &[]);
            }
        }
    }
}

/// The index of `gid` in `port`'s table, RoCE v2 first.
fn find_gid(dev: &DeviceCore, port: u32, gid: &[u8; 16]) -> Option<u8> {
    let (n, _) = dev.cached_table_lens(port).ok()?;
    let hits = (0..n as u32).filter(|i| dev.query_gid(port, *i).is_ok_and(|g| g.0 == *gid));
    let mut first = None;
    for i in hits {
        if dev
            .query_gid_type(port, i)
            .is_ok_and(|t| t == crate::attr::GidType::RoceV2)
        {
            return u8::try_from(i).ok();
        }
        first = first.or(u8::try_from(i).ok());
    }
    first
}

/// The CM's MAD handler on every port: the port is its agent's.
struct CmAgentHandler;

impl MadAgentHandler for CmAgentHandler {
    // upstream cm_send_handler() -> cm_process_send_error(): a message whose retries ran out.
    fn send_done(&self, agent: u32, done: MadSendDone) {
        {
            // upstream cm_send_handler(): the resends counted, once each as a send too.
            let mut t = tables();
            let attr = t.waits.iter().find(|w| w.0 == done.context).map(|w| w.1);
            t.waits.retain(|w| w.0 != done.context);
            if let (Some(attr), Some((d, p))) = (attr, t.ports.port_of(agent)) {
                let r = u64::from(done.retries);
                t.count(d, p, XMIT, attr, r);
                t.count(d, p, XMIT_RETRIES, attr, r);
            }
        }
        if done.status != crate::verbs::WcStatus::RespTimeoutErr {
            return;
        }
        if let Some(c) = u32::try_from(done.context).ok().and_then(find) {
            c.input(Input::SendTimeout, CmMsg::None);
        }
    }

    fn recv(&self, agent: u32, recv: MadRecv, _send: Option<u64>) {
        let port = {
            let t = tables();
            let port = t.ports.port_of(agent);
            // upstream cm_recv_handler(): every CM message counted as it arrives.
            if let (Some((d, p)), Some(a)) = (port, msg::attr_of(&recv.mad)) {
                t.count(d, p, RECV, a as u16, 1);
            }
            port
        };
        if let Some((dev_index, port)) = port {
            PortHandler { dev_index, port }.recv(&recv);
        }
    }
}

impl PortHandler {
    /// Counts a duplicate `attr` received on the port (upstream `CM_RECV_DUPLICATES`).
    fn count_dup(&self, attr: CmAttr) {
        tables().count(self.dev_index, self.port, RECV_DUPLICATES, attr as u16, 1);
    }

    fn recv(&self, recv: &MadRecv) {
        let m = &recv.mad;
        let Some(attr) = msg::attr_of(m) else {
            return;
        };
        match attr {
            CmAttr::Req => self.req(m),
            CmAttr::Rep => {
                let r = Rep::decode(m);
                match find(r.remote_comm_id) {
                    // upstream cm_dup_rep_handler(): the RTU was lost, it goes again.
                    Some(c) if c.state() == CmState::Established => {
                        self.count_dup(CmAttr::Rep);
                        c.resend(CmAttr::Rtu)
                    }
                    Some(c) => {
                        if let Ok(b) = KBox::new(r, GFP_KERNEL) {
                            c.input(Input::RecvRep, CmMsg::Rep(b));
                        }
                    }
                    None => {}
                }
            }
            CmAttr::Rtu | CmAttr::Drep => {
                let r = Ids::decode(m);
                let input = if attr == CmAttr::Rtu {
                    Input::RecvRtu
                } else {
                    Input::RecvDrep
                };
                if let (Some(c), Ok(b)) = (find(r.remote_comm_id), KBox::new(r, GFP_KERNEL)) {
                    c.input(input, CmMsg::Ids(b));
                }
            }
            CmAttr::Dreq => {
                let d = Dreq::decode(m);
                let ids = Ids {
                    local_comm_id: d.local_comm_id,
                    remote_comm_id: d.remote_comm_id,
                    private_data: [0; msg::RTU_PRIVATE_DATA],
                };
                match find(d.remote_comm_id) {
                    // upstream cm_dreq_handler() in timewait: the DREP was lost, it goes again.
                    Some(c) if c.state() == CmState::Timewait => {
                        self.count_dup(CmAttr::Dreq);
                        c.resend(CmAttr::Drep)
                    }
                    // upstream cm_dreq_handler() in IB_CM_DREQ_RCVD: counted, dropped.
                    Some(c) if c.state() == CmState::DreqRcvd => self.count_dup(CmAttr::Dreq),
                    Some(c) => {
                        if let Ok(b) = KBox::new(ids, GFP_KERNEL) {
                            c.input(Input::RecvDreq, CmMsg::Ids(b));
                        }
                    }
                    // upstream cm_dreq_handler() -> cm_issue_drep(): a connection this side
                    // no longer has (its DREP was lost) gets a DREP all the same.
                    None => {
                        self.count_dup(CmAttr::Dreq);
                        if let Some((av, _)) = self.reply_av(recv) {
                            let drep = Ids {
                                local_comm_id: d.remote_comm_id,
                                remote_comm_id: d.local_comm_id,
                                private_data: [0; msg::RTU_PRIVATE_DATA],
                            };
                            send_direct_retry(&av, drep.encode(CmAttr::Drep, MadHdr(&m.0).tid()));
                        }
                    }
                }
            }
            CmAttr::Rej => {
                let r = Rej::decode(m);
                if let (Some(c), Ok(b)) = (find(r.remote_comm_id), KBox::new(r, GFP_KERNEL)) {
                    c.input(Input::RecvRej, CmMsg::Rej(b));
                }
            }
            CmAttr::SidrReq => self.sidr_req(recv),
            CmAttr::SidrRep => {
                let r = SidrRep::decode(m);
                if let (Some(c), Ok(b)) = (find(r.request_id), KBox::new(r, GFP_KERNEL)) {
                    c.input(Input::RecvSidrRep, CmMsg::SidrRep(b));
                }
            }
            CmAttr::Mra => {
                let r = Mra::decode(m);
                if let Some(c) = find(r.remote_comm_id) {
                    c.mra(&r);
                }
            }
            CmAttr::Lap | CmAttr::Apr => {}
        }
    }
}

/// The IB CM as a client of the core (upstream `cm_client`: `cm_add_one()`,
/// `cm_remove_one()`): a CM-class agent on QP1 of each port with the CM capability.
pub(crate) struct CmClient;

impl crate::client::Client for CmClient {
    fn name(&self) -> &'static CStr {
        c"cm"
    }

    fn add(&self, dev: &DeviceCore) -> Result {
        let mut mask = [0u64; 2];
        mask[0] |= 1 << msg::METHOD_SEND;
        let reg = MadRegReq {
            mgmt_class: msg::CLASS_CM,
            mgmt_class_version: msg::CM_CLASS_VERSION,
            oui: [0; 3],
            method_mask: mask,
        };
        let agents = PortAgents::register(
            dev,
            Some(&reg),
            |_| true,
            |_| {
                let h: Arc<dyn MadAgentHandler> = Arc::new(CmAgentHandler, GFP_KERNEL)?;
                Ok(h)
            },
        )?;
        let mut t = tables();
        t.counters.reserve(agents.len(), GFP_KERNEL)?;
        for port in agents.ports() {
            t.counters.push(
                CmCounters {
                    dev_index: dev.index(),
                    port,
                    n: core::array::from_fn(|_| core::array::from_fn(|_| Atomic::new(0))),
                },
                GFP_KERNEL,
            )?;
        }
        t.ports.extend(agents)
    }

    // upstream cm_remove_one(): the agents go (outside the tables' lock: unregistering waits
    // for a handler in progress, which takes it).
    fn remove(&self, dev: &DeviceCore) {
        let gone = {
            let mut t = tables();
            t.counters.retain(|c| c.dev_index != dev.index());
            t.ports.take(Some(dev.index()))
        };
        drop(gone);
    }
}

/// Frees the tables' storage at module exit.
pub(crate) fn shutdown() {
    // Dropped outside the lock: an agent's drop waits for its handler, which takes it.
    let (ports, conns, listens) = {
        let mut t = tables();
        (
            t.ports.take(None),
            core::mem::take(&mut t.conns),
            core::mem::take(&mut t.listens),
        )
    };
    {
        let mut t = tables();
        t.counters = KVec::new();
        t.waits = KVec::new();
    }
    drop((ports, conns, listens));
}
