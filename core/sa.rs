// SPDX-License-Identifier: GPL-2.0

//! The SA client (upstream `sa_query.c`): a MAD agent on QP1 of each InfiniBand port
//! ([`SaClient`], `ib_sa_add_one()`) and queries to the port's SM, each sent to the SM's LID
//! and SL with the default P_Key and resent as upstream's `send_mad()` does (the timeout
//! split over 10 tries): PathRecord Gets ([`path_rec_get`], `ib_sa_path_rec_get()`: a
//! SubnAdmGet with the record's components; the answer's first record, or `-EINVAL` for an
//! answer with a non-zero status, `-ETIMEDOUT` when none came, goes to the query's handler
//! from the core's workqueue) and the MCMemberRecord joins and leaves of the multicast
//! groups (`sa/mcast.rs`, upstream `multicast.c`).
//!
//! Not done: the path record cache, other attributes, SA event subscriptions
//! (`ib_sa_register_event_handler()`-style notices), cancelling a query (a query's handler
//! runs once, after the id that asked may have moved on; rdma_cm checks).

#[path = "sa/mcast.rs"]
pub mod mcast;

use crate::ib_device::DeviceCore;
use crate::mad::{Mad, CLASS_SUBN_ADM, MGMT_BASE_VERSION};
use crate::mad_agent::{MadAgentHandler, MadRecv, MadSend, MadSendDone};
use crate::mad_qp::QP1_QKEY;
use crate::port_agents::PortAgents;
use kernel::prelude::*;
use kernel::sync::Arc;

/// `IB_SA_CLASS_VERSION`.
const SA_CLASS_VERSION: u8 = 2;
/// `IB_MGMT_METHOD_GET`.
const METHOD_GET: u8 = 0x01;
/// `IB_SA_ATTR_PATH_REC`.
const ATTR_PATH_REC: u16 = 0x35;
/// `IB_SA_ATTR_MC_MEMBER_REC`.
const ATTR_MC_MEMBER_REC: u16 = 0x38;
/// Where the SA header's component mask is (`struct ib_sa_mad`: MAD header 24, RMPP 12,
/// SM_Key 8, attribute offset 2, reserved 2).
const OFF_COMP_MASK: usize = 48;
/// Where the SA data (the record) starts.
const OFF_DATA: usize = 56;
/// upstream `send_mad()`'s `nmbr_sa_query_retries`.
const SA_QUERY_RETRIES: u32 = 10;

/// `IB_SA_PATH_REC_SERVICE_ID` (components 0 and 1).
pub const PR_SERVICE_ID: u64 = 0b11;
/// `IB_SA_PATH_REC_DGID`.
pub const PR_DGID: u64 = 1 << 2;
/// `IB_SA_PATH_REC_SGID`.
pub const PR_SGID: u64 = 1 << 3;
/// `IB_SA_PATH_REC_TRAFFIC_CLASS`.
pub const PR_TRAFFIC_CLASS: u64 = 1 << 10;
/// `IB_SA_PATH_REC_REVERSIBLE`.
pub const PR_REVERSIBLE: u64 = 1 << 11;
/// `IB_SA_PATH_REC_NUMB_PATH`.
pub const PR_NUMB_PATH: u64 = 1 << 12;
/// `IB_SA_PATH_REC_PKEY`.
pub const PR_PKEY: u64 = 1 << 13;
/// `IB_SA_PATH_REC_QOS_CLASS`.
pub const PR_QOS_CLASS: u64 = 1 << 14;

/// A PathRecord (upstream `struct sa_path_rec` of type IB), host order, its wire layout
/// IBA 15.2.5.16.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SaPathRec {
    /// ServiceID.
    pub service_id: u64,
    /// DGID.
    pub dgid: [u8; 16],
    /// SGID.
    pub sgid: [u8; 16],
    /// DLID.
    pub dlid: u16,
    /// SLID.
    pub slid: u16,
    /// RawTraffic.
    pub raw_traffic: bool,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// TClass.
    pub traffic_class: u8,
    /// Reversible.
    pub reversible: bool,
    /// NumbPath (7 bits).
    pub numb_path: u8,
    /// P_Key.
    pub pkey: u16,
    /// QoSClass (12 bits).
    pub qos_class: u16,
    /// SL (4 bits).
    pub sl: u8,
    /// MTUSelector and MTU (`enum ib_mtu`).
    pub mtu_selector: u8,
    /// MTU.
    pub mtu: u8,
    /// RateSelector.
    pub rate_selector: u8,
    /// Rate (`enum ib_rate`).
    pub rate: u8,
    /// PacketLifeTimeSelector.
    pub packet_life_time_selector: u8,
    /// PacketLifeTime.
    pub packet_life_time: u8,
    /// Preference.
    pub preference: u8,
}

impl SaPathRec {
    /// The record's 64 bytes (upstream `ib_pack(path_rec_table, ...)`).
    pub fn pack(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0..8].copy_from_slice(&self.service_id.to_be_bytes());
        b[8..24].copy_from_slice(&self.dgid);
        b[24..40].copy_from_slice(&self.sgid);
        b[40..42].copy_from_slice(&self.dlid.to_be_bytes());
        b[42..44].copy_from_slice(&self.slid.to_be_bytes());
        let w = (u32::from(self.raw_traffic) << 31)
            | ((self.flow_label & 0xf_ffff) << 8)
            | u32::from(self.hop_limit);
        b[44..48].copy_from_slice(&w.to_be_bytes());
        b[48] = self.traffic_class;
        b[49] = (u8::from(self.reversible) << 7) | (self.numb_path & 0x7f);
        b[50..52].copy_from_slice(&self.pkey.to_be_bytes());
        let q = ((self.qos_class & 0xfff) << 4) | u16::from(self.sl & 0xf);
        b[52..54].copy_from_slice(&q.to_be_bytes());
        b[54] = (self.mtu_selector << 6) | (self.mtu & 0x3f);
        b[55] = (self.rate_selector << 6) | (self.rate & 0x3f);
        b[56] = (self.packet_life_time_selector << 6) | (self.packet_life_time & 0x3f);
        b[57] = self.preference;
        b
    }

    /// The record in `b` (upstream `ib_unpack(path_rec_table, ...)`).
    pub fn unpack(b: &[u8; 64]) -> SaPathRec {
        let be16 = |o: usize| u16::from_be_bytes([b[o], b[o + 1]]);
        let mut sid = [0u8; 8];
        sid.copy_from_slice(&b[0..8]);
        let mut dgid = [0u8; 16];
        dgid.copy_from_slice(&b[8..24]);
        let mut sgid = [0u8; 16];
        sgid.copy_from_slice(&b[24..40]);
        let w = u32::from_be_bytes([b[44], b[45], b[46], b[47]]);
        let q = be16(52);
        SaPathRec {
            service_id: u64::from_be_bytes(sid),
            dgid,
            sgid,
            dlid: be16(40),
            slid: be16(42),
            raw_traffic: w >> 31 != 0,
            flow_label: (w >> 8) & 0xf_ffff,
            hop_limit: w as u8,
            traffic_class: b[48],
            reversible: b[49] >> 7 != 0,
            numb_path: b[49] & 0x7f,
            pkey: be16(50),
            qos_class: q >> 4,
            sl: (q & 0xf) as u8,
            mtu_selector: b[54] >> 6,
            mtu: b[54] & 0x3f,
            rate_selector: b[55] >> 6,
            rate: b[55] & 0x3f,
            packet_life_time_selector: b[56] >> 6,
            packet_life_time: b[56] & 0x3f,
            preference: b[57],
        }
    }
}

/// Component mask bit of the MGID (upstream `IB_SA_MCMEMBER_REC_MGID`).
pub const MC_MGID: u64 = 1 << 0;
/// ... of the PortGID.
pub const MC_PORT_GID: u64 = 1 << 1;
/// ... of the Q_Key.
pub const MC_QKEY: u64 = 1 << 2;
/// ... of the MTUSelector.
pub const MC_MTU_SELECTOR: u64 = 1 << 4;
/// ... of the MTU.
pub const MC_MTU: u64 = 1 << 5;
/// ... of the TClass.
pub const MC_TRAFFIC_CLASS: u64 = 1 << 6;
/// ... of the P_Key.
pub const MC_PKEY: u64 = 1 << 7;
/// ... of the RateSelector.
pub const MC_RATE_SELECTOR: u64 = 1 << 8;
/// ... of the Rate.
pub const MC_RATE: u64 = 1 << 9;
/// ... of the SL.
pub const MC_SL: u64 = 1 << 12;
/// ... of the FlowLabel.
pub const MC_FLOW_LABEL: u64 = 1 << 13;
/// ... of the HopLimit.
pub const MC_HOP_LIMIT: u64 = 1 << 14;
/// ... of the JoinState.
pub const MC_JOIN_STATE: u64 = 1 << 16;

/// An MCMemberRecord (upstream `struct ib_sa_mcmember_rec`), host order, its wire layout
/// IBA 15.2.5.17.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct McMemberRec {
    /// MGID.
    pub mgid: [u8; 16],
    /// PortGID.
    pub port_gid: [u8; 16],
    /// Q_Key.
    pub qkey: u32,
    /// MLID.
    pub mlid: u16,
    /// MTUSelector and MTU (`enum ib_mtu`).
    pub mtu_selector: u8,
    /// MTU.
    pub mtu: u8,
    /// TClass.
    pub traffic_class: u8,
    /// P_Key.
    pub pkey: u16,
    /// RateSelector and Rate (`enum ib_rate`).
    pub rate_selector: u8,
    /// Rate.
    pub rate: u8,
    /// PacketLifeTimeSelector and PacketLifeTime.
    pub packet_life_time_selector: u8,
    /// PacketLifeTime.
    pub packet_life_time: u8,
    /// SL (4 bits), FlowLabel (20 bits), HopLimit.
    pub sl: u8,
    /// FlowLabel.
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// Scope (4 bits), JoinState (4 bits: full member, non-member, send-only non-member,
    /// send-only full member).
    pub scope: u8,
    /// JoinState.
    pub join_state: u8,
    /// ProxyJoin.
    pub proxy_join: bool,
}

/// Bytes of an MCMemberRecord.
pub const MC_REC_LEN: usize = 52;

impl McMemberRec {
    /// The record's bytes (upstream `ib_pack(mcmember_rec_table, ...)`).
    pub fn pack(&self) -> [u8; MC_REC_LEN] {
        let mut b = [0u8; MC_REC_LEN];
        b[0..16].copy_from_slice(&self.mgid);
        b[16..32].copy_from_slice(&self.port_gid);
        b[32..36].copy_from_slice(&self.qkey.to_be_bytes());
        b[36..38].copy_from_slice(&self.mlid.to_be_bytes());
        b[38] = (self.mtu_selector << 6) | (self.mtu & 0x3f);
        b[39] = self.traffic_class;
        b[40..42].copy_from_slice(&self.pkey.to_be_bytes());
        b[42] = (self.rate_selector << 6) | (self.rate & 0x3f);
        b[43] = (self.packet_life_time_selector << 6) | (self.packet_life_time & 0x3f);
        let w = (u32::from(self.sl & 0xf) << 28)
            | ((self.flow_label & 0xf_ffff) << 8)
            | u32::from(self.hop_limit);
        b[44..48].copy_from_slice(&w.to_be_bytes());
        b[48] = (self.scope << 4) | (self.join_state & 0xf);
        b[49] = u8::from(self.proxy_join) << 7;
        b
    }

    /// The record in `b` (upstream `ib_unpack(mcmember_rec_table, ...)`).
    pub fn unpack(b: &[u8; MC_REC_LEN]) -> McMemberRec {
        let mut mgid = [0u8; 16];
        mgid.copy_from_slice(&b[0..16]);
        let mut port_gid = [0u8; 16];
        port_gid.copy_from_slice(&b[16..32]);
        let w = u32::from_be_bytes([b[44], b[45], b[46], b[47]]);
        McMemberRec {
            mgid,
            port_gid,
            qkey: u32::from_be_bytes([b[32], b[33], b[34], b[35]]),
            mlid: u16::from_be_bytes([b[36], b[37]]),
            mtu_selector: b[38] >> 6,
            mtu: b[38] & 0x3f,
            traffic_class: b[39],
            pkey: u16::from_be_bytes([b[40], b[41]]),
            rate_selector: b[42] >> 6,
            rate: b[42] & 0x3f,
            packet_life_time_selector: b[43] >> 6,
            packet_life_time: b[43] & 0x3f,
            sl: (w >> 28) as u8,
            flow_label: (w >> 8) & 0xf_ffff,
            hop_limit: w as u8,
            scope: b[48] >> 4,
            join_state: b[48] & 0xf,
            proxy_join: b[49] >> 7 != 0,
        }
    }
}

/// Who gets a query's answer (upstream the query's `callback`): once, from the core's
/// workqueue.
pub trait SaPathHandler: Send + Sync + 'static {
    /// The first path of the answer, or the error (`EINVAL`: the SA's status was not 0,
    /// `ETIMEDOUT`: no answer, `ENODEV`: the port went away).
    fn done(&self, r: Result<SaPathRec>);
}

/// Who gets a query's answer.
#[derive(Clone)]
enum Waiter {
    /// A PathRecord Get's handler.
    Path(Arc<dyn SaPathHandler>),
    /// A multicast join of `group` for `member`, or a leave (`member` 0; `mcast.rs`).
    Mcast { group: u64, member: u64 },
}

struct SaQuery {
    context: u64,
    waiter: Waiter,
}

/// The SA client's agents, its queries in flight (upstream `struct ib_sa_device` and the
/// `queries` xarray) and its multicast groups (upstream `multicast.c`'s `mcast_port`s).
pub(crate) struct SaTables {
    ports: PortAgents,
    queries: KVec<SaQuery>,
    next: u64,
    groups: KVec<mcast::McGroup>,
}

impl SaTables {
    /// Empty tables.
    pub(crate) const fn new() -> Self {
        SaTables {
            ports: PortAgents::new(),
            queries: KVec::new(),
            next: 1,
            groups: KVec::new(),
        }
    }
}

fn tables() -> impl core::ops::DerefMut<Target = SaTables> {
    crate::global::SA.lock()
}

/// The waiter of the query with `context`, taken out of the table.
fn take(context: u64) -> Option<Waiter> {
    let mut t = tables();
    let i = t.queries.iter().position(|q| q.context == context)?;
    t.queries.remove(i).ok().map(|q| q.waiter)
}

/// Hands query `context`'s result to its waiter.
fn answer(context: u64, r: Result<&[u8]>) {
    match take(context) {
        Some(Waiter::Path(h)) => h.done(r.map(|d| {
            let mut b = [0u8; 64];
            b.copy_from_slice(d.get(..64).unwrap_or(&[0; 64]));
            SaPathRec::unpack(&b)
        })),
        Some(Waiter::Mcast { group, member }) => mcast::answered(group, member, r),
        None => {}
    }
}

struct SaPortHandler;

impl MadAgentHandler for SaPortHandler {
    // upstream send_handler(): a query whose retries ran out.
    fn send_done(&self, _agent: u32, done: MadSendDone) {
        let err = match done.status {
            crate::verbs::WcStatus::Success => return,
            crate::verbs::WcStatus::RespTimeoutErr => ETIMEDOUT,
            _ => EIO,
        };
        answer(done.context, Err(err));
    }

    // upstream recv_handler() -> the query's callback: a non-zero status is -EINVAL.
    fn recv(&self, _agent: u32, recv: MadRecv, send: Option<u64>) {
        let Some(context) = send else {
            return;
        };
        let m = &recv.mad.0;
        let status = u16::from_be_bytes([m[4], m[5]]);
        let attr = u16::from_be_bytes([m[16], m[17]]);
        let ok = status == 0 && matches!(attr, ATTR_PATH_REC | ATTR_MC_MEMBER_REC);
        answer(context, if ok { Ok(&m[OFF_DATA..]) } else { Err(EINVAL) });
    }
}

/// One SA query: `method` of attribute `attr` with `comp_mask` and the record `data`.
struct SaRequest<'a> {
    method: u8,
    attr: u16,
    comp_mask: u64,
    data: &'a [u8],
    timeout_ms: u32,
}

/// Sends `q` to the SM of `dev_index`'s `port` (upstream `send_mad()`); its answer goes to
/// `waiter`.
///
/// # Errors
///
/// `ENODEV` for a port without the SA client (not InfiniBand, no QP1); `ENETUNREACH` while
/// the port has no SM (SM LID 0); the MAD layer's send errors; `ENOMEM`.
fn send(dev_index: u32, port: u32, q: &SaRequest<'_>, waiter: Waiter) -> Result<u64> {
    let dev = crate::registry::device_arc(dev_index).ok_or(ENODEV)?;
    let (sm_lid, sm_sl) = dev.core().get_cached_sm(port)?;
    // upstream update_sm_ah(): the P_Key index of the full default P_Key, else the limited.
    let pkey_index = dev
        .core()
        .find_cached_pkey(port, 0xffff)
        .or_else(|_| dev.core().find_cached_pkey(port, 0x7fff))
        .unwrap_or(0);
    drop(dev);
    if sm_lid == 0 {
        return Err(ENETUNREACH);
    }
    let (agent, context) = {
        let mut t = tables();
        let agent = t.ports.find(dev_index, port).ok_or(ENODEV)?;
        let context = t.next;
        t.next = t.next.wrapping_add(1).max(1);
        t.queries.push(SaQuery { context, waiter }, GFP_KERNEL)?;
        (agent, context)
    };
    let mut mad = Mad([0; crate::mad::MAD_SIZE]);
    let m = &mut mad.0;
    m[0] = MGMT_BASE_VERSION;
    m[1] = CLASS_SUBN_ADM;
    m[2] = SA_CLASS_VERSION;
    m[3] = q.method;
    let tid = (u64::from(agent.hi_tid()) << 32) | (context & 0xffff_ffff);
    m[8..16].copy_from_slice(&tid.to_be_bytes());
    m[16..18].copy_from_slice(&q.attr.to_be_bytes());
    m[OFF_COMP_MASK..OFF_COMP_MASK + 8].copy_from_slice(&q.comp_mask.to_be_bytes());
    let end = (OFF_DATA + q.data.len()).min(m.len());
    m[OFF_DATA..end].copy_from_slice(q.data.get(..end - OFF_DATA).unwrap_or(&[]));
    let r = agent.post_send(
        MadSend {
            mad,
            remote_qpn: 1,
            dlid: sm_lid as u16,
            sl: sm_sl,
            pkey_index: pkey_index as u16,
            remote_qkey: QP1_QKEY,
            src_path_bits: 0,
            grh: None,
            timeout_ms: (q.timeout_ms / SA_QUERY_RETRIES).max(1),
            retries: SA_QUERY_RETRIES,
            context,
        },
        None,
    );
    match r {
        Ok(()) => Ok(context),
        Err(e) => {
            take(context);
            Err(e)
        }
    }
}

/// Asks the SM of `dev_index`'s `port` for a path (upstream `ib_sa_path_rec_get()`): `rec`'s
/// fields of `comp_mask` are the query, the answer goes to `handler` within about
/// `timeout_ms`.
///
/// # Errors
///
/// `ENODEV` for a port without the SA client (not InfiniBand, no QP1); `ENETUNREACH` while
/// the port has no SM (SM LID 0); the MAD layer's send errors; `ENOMEM`.
pub fn path_rec_get(
    dev_index: u32,
    port: u32,
    rec: &SaPathRec,
    comp_mask: u64,
    timeout_ms: u32,
    handler: Arc<dyn SaPathHandler>,
) -> Result {
    let q = SaRequest {
        method: METHOD_GET,
        attr: ATTR_PATH_REC,
        comp_mask,
        data: &rec.pack(),
        timeout_ms,
    };
    send(dev_index, port, &q, Waiter::Path(handler)).map(|_| ())
}

/// The SA client as a client of the core (upstream `sa_client`): an agent on QP1 of each
/// InfiniBand port.
pub(crate) struct SaClient;

impl crate::client::Client for SaClient {
    fn name(&self) -> &'static CStr {
        c"sa"
    }

    // upstream ib_sa_add_one(): rdma_cap_ib_sa() ports only.
    fn add(&self, dev: &DeviceCore) -> Result {
        let agents = PortAgents::register(
            dev,
            None,
            |port| crate::cma::port_is_ib(dev, port),
            |_| {
                let h: Arc<dyn MadAgentHandler> = Arc::new(SaPortHandler, GFP_KERNEL)?;
                Ok(h)
            },
        )?;
        tables().ports.extend(agents)
    }

    // upstream ib_sa_remove_one(): the agents go (outside the lock: unregistering waits for
    // a handler in progress, which takes it); their queries in flight end with the send
    // completions the unregistering flushes; the device's groups go.
    fn remove(&self, dev: &DeviceCore) {
        let gone = tables().ports.take(Some(dev.index()));
        drop(gone);
        mcast::remove_device(dev.index());
    }
}

/// Frees the tables' storage at module exit.
pub(crate) fn shutdown() {
    let (ports, queries, groups) = {
        let mut t = tables();
        (
            t.ports.take(None),
            core::mem::take(&mut t.queries),
            core::mem::take(&mut t.groups),
        )
    };
    drop((ports, queries, groups));
}

#[kunit_tests(ib_core_rs_sa_path)]
mod tests {
    use super::*;

    #[test]
    fn path_record_round_trip_and_offsets() {
        let mut r = SaPathRec {
            service_id: 0x0000_0000_0106_1c2e,
            dlid: 0x104,
            slid: 0x103,
            flow_label: 0xabcde,
            hop_limit: 0xff,
            traffic_class: 0x20,
            reversible: true,
            numb_path: 1,
            pkey: 0xffff,
            qos_class: 0x123,
            sl: 5,
            mtu_selector: 2,
            mtu: 4,
            rate_selector: 2,
            rate: 3,
            packet_life_time_selector: 2,
            packet_life_time: 18,
            ..Default::default()
        };
        r.dgid[0] = 0xfe;
        r.dgid[15] = 2;
        r.sgid[0] = 0xfe;
        r.sgid[15] = 1;
        let b = r.pack();
        assert_eq!(SaPathRec::unpack(&b), r);
        // IBA 15.2.5.16: DLID at byte 40, SLID at 42, P_Key at 50, SL the low nibble of 53.
        assert_eq!(&b[40..44], &[0x01, 0x04, 0x01, 0x03]);
        assert_eq!(&b[44..48], &[0x0a, 0xbc, 0xde, 0xff]);
        assert_eq!(b[49], 0x81);
        assert_eq!(&b[50..54], &[0xff, 0xff, 0x12, 0x35]);
        assert_eq!(&b[54..57], &[0x84, 0x83, 0x92]);
    }
}

#[kunit_tests(ib_core_rs_sa_mcmember)]
mod mcmember_tests {
    use super::*;

    #[test]
    fn mcmember_record_round_trip_and_offsets() {
        let mut r = McMemberRec {
            qkey: 0x0123_4567,
            mlid: 0xc001,
            mtu_selector: 2,
            mtu: 4,
            traffic_class: 0x20,
            pkey: 0xffff,
            rate_selector: 2,
            rate: 7,
            packet_life_time_selector: 2,
            packet_life_time: 18,
            sl: 3,
            flow_label: 0xabcde,
            hop_limit: 0x40,
            scope: 2,
            join_state: 8,
            proxy_join: true,
            ..Default::default()
        };
        r.mgid[0] = 0xff;
        r.mgid[1] = 0x12;
        r.mgid[15] = 9;
        r.port_gid[0] = 0xfe;
        r.port_gid[15] = 1;
        let b = r.pack();
        assert_eq!(McMemberRec::unpack(&b), r);
        // IBA 15.2.5.17: Q_Key at 32, MLID at 36, SL/FlowLabel/HopLimit at 44, Scope and
        // JoinState at 48.
        assert_eq!(&b[32..38], &[0x01, 0x23, 0x45, 0x67, 0xc0, 0x01]);
        assert_eq!(&b[38..44], &[0x84, 0x20, 0xff, 0xff, 0x87, 0x92]);
        assert_eq!(&b[44..50], &[0x3a, 0xbc, 0xde, 0x40, 0x28, 0x80]);
    }
}
