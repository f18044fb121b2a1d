// SPDX-License-Identifier: GPL-2.0

//! The ucma command ABI (upstream `include/uapi/rdma/rdma_user_cm.h`, ABI version 4): command
//! numbers, the size of each command struct (which upstream copies whole from behind the
//! 8-byte header, whatever `in` says), the offsets of their fields and of the responses. All
//! fields are native-endian unless named `be`; sockaddrs are as `struct sockaddr_*`.

/// `RDMA_USER_CM_ABI_VERSION`.
pub(crate) const ABI_VERSION: i32 = 4;
/// `RDMA_MAX_PRIVATE_DATA`.
pub(crate) const MAX_PRIVATE_DATA: usize = 256;

/// `sizeof(struct rdma_ucm_cmd_hdr)`: `cmd`, `in`, `out`.
pub(crate) const HDR: usize = 8;

upstream_enum! {
    /// The commands (`RDMA_USER_CM_CMD_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Cmd: u32 {
        CreateId = 0 => RDMA_USER_CM_CMD_CREATE_ID,
        DestroyId = 1 => RDMA_USER_CM_CMD_DESTROY_ID,
        BindIp = 2 => RDMA_USER_CM_CMD_BIND_IP,
        ResolveIp = 3 => RDMA_USER_CM_CMD_RESOLVE_IP,
        ResolveRoute = 4 => RDMA_USER_CM_CMD_RESOLVE_ROUTE,
        QueryRoute = 5 => RDMA_USER_CM_CMD_QUERY_ROUTE,
        Connect = 6 => RDMA_USER_CM_CMD_CONNECT,
        Listen = 7 => RDMA_USER_CM_CMD_LISTEN,
        Accept = 8 => RDMA_USER_CM_CMD_ACCEPT,
        Reject = 9 => RDMA_USER_CM_CMD_REJECT,
        Disconnect = 10 => RDMA_USER_CM_CMD_DISCONNECT,
        InitQpAttr = 11 => RDMA_USER_CM_CMD_INIT_QP_ATTR,
        GetEvent = 12 => RDMA_USER_CM_CMD_GET_EVENT,
        GetOption = 13 => RDMA_USER_CM_CMD_GET_OPTION,
        SetOption = 14 => RDMA_USER_CM_CMD_SET_OPTION,
        Notify = 15 => RDMA_USER_CM_CMD_NOTIFY,
        JoinIpMcast = 16 => RDMA_USER_CM_CMD_JOIN_IP_MCAST,
        LeaveMcast = 17 => RDMA_USER_CM_CMD_LEAVE_MCAST,
        MigrateId = 18 => RDMA_USER_CM_CMD_MIGRATE_ID,
        Query = 19 => RDMA_USER_CM_CMD_QUERY,
        Bind = 20 => RDMA_USER_CM_CMD_BIND,
        ResolveAddr = 21 => RDMA_USER_CM_CMD_RESOLVE_ADDR,
        JoinMcast = 22 => RDMA_USER_CM_CMD_JOIN_MCAST,
        ResolveIbService = 23 => RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE,
        WriteCmEvent = 24 => RDMA_USER_CM_CMD_WRITE_CM_EVENT,
    }
}

/// `ARRAY_SIZE(ucma_cmd_table)`: a command at or above it is `EINVAL`.
pub(crate) const CMD_COUNT: u32 = 25;

/// `sizeof(struct rdma_ucm_conn_param)`.
pub(crate) const CONN_PARAM: usize = 4 + 4 + MAX_PRIVATE_DATA + 8;
/// `sizeof(struct rdma_ucm_ece)`: the end of `CONNECT` and `ACCEPT`.
pub(crate) const ECE: usize = 8;
/// `sizeof(struct rdma_ucm_ud_param)`.
pub(crate) const UD_PARAM: usize = 4 + 4 + 32 + MAX_PRIVATE_DATA + 8;

impl Cmd {
    /// `sizeof` the command's struct: what upstream's `copy_from_user()` reads.
    pub(crate) fn size(self) -> usize {
        match self {
            Cmd::CreateId => 24,
            Cmd::DestroyId | Cmd::LeaveMcast => 16,
            Cmd::BindIp => 8 + 28 + 4,
            Cmd::ResolveIp => 28 + 28 + 4 + 4,
            Cmd::ResolveRoute | Cmd::Listen | Cmd::Notify => 8,
            Cmd::QueryRoute | Cmd::Query | Cmd::InitQpAttr | Cmd::MigrateId => 16,
            Cmd::Connect => CONN_PARAM + 4 + 4 + 8,
            Cmd::Accept => 8 + CONN_PARAM + 4 + 4 + 8,
            Cmd::Reject => 4 + 4 + MAX_PRIVATE_DATA,
            Cmd::Disconnect => 4,
            Cmd::GetEvent => 8,
            Cmd::GetOption | Cmd::SetOption => 24,
            Cmd::JoinIpMcast => 8 + 8 + 28 + 4,
            Cmd::Bind => 4 + 2 + 2 + 128,
            Cmd::ResolveAddr => 4 + 4 + 2 + 2 + 4 + 128 + 128,
            Cmd::JoinMcast => 8 + 8 + 4 + 2 + 2 + 128,
            Cmd::ResolveIbService => 8 + 8 + 64 + 4 + 4,
            Cmd::WriteCmEvent => 16 + 304,
        }
    }
}

/// A command's bytes (as large as the largest struct).
pub(crate) struct CmdBuf(pub(crate) [u8; 320]);

impl CmdBuf {
    pub(crate) fn u8(&self, off: usize) -> u8 {
        self.0[off]
    }
    pub(crate) fn u16(&self, off: usize) -> u16 {
        u16::from_ne_bytes([self.0[off], self.0[off + 1]])
    }
    pub(crate) fn u32(&self, off: usize) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.0[off..off + 4]);
        u32::from_ne_bytes(b)
    }
    pub(crate) fn u64(&self, off: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[off..off + 8]);
        u64::from_ne_bytes(b)
    }
    pub(crate) fn bytes(&self, off: usize, len: usize) -> &[u8] {
        &self.0[off..off + len]
    }
}

/// `sizeof(struct rdma_ucm_event_resp)`.
pub(crate) const EVENT_RESP: usize = 8 + 4 + 4 + 4 + 304 + 4 + 8;
/// The smallest `out` GET_EVENT takes: without `reserved` and `ece` (old 32-bit user
/// space, upstream `ucma_get_event()`).
pub(crate) const EVENT_RESP_MIN: usize = EVENT_RESP - 4 - 8;

/// `sizeof(struct rdma_ucm_query_route_resp)`.
pub(crate) const QUERY_ROUTE_RESP: usize = 8 + 2 * PATH_REC + 28 + 28 + 4 + 4 + 4 + 4;
/// `sizeof(struct ib_user_path_rec)`.
pub(crate) const PATH_REC: usize = 64;
/// `sizeof(struct rdma_ucm_query_addr_resp)`.
pub(crate) const QUERY_ADDR_RESP: usize = 8 + 1 + 1 + 2 + 2 + 2 + 128 + 128 + 4 + 4;
/// `offsetof(struct rdma_ucm_query_addr_resp, ibdev_index)`: the smallest `out` taken.
pub(crate) const QUERY_ADDR_IBDEV_INDEX: usize = QUERY_ADDR_RESP - 8;
/// `sizeof(struct ib_path_rec_data)`.
pub(crate) const PATH_REC_DATA: usize = 4 + 4 + 64;

/// `RDMA_USER_CM_QUERY_*`.
pub(crate) const QUERY_ADDR: u32 = 0;
pub(crate) const QUERY_PATH: u32 = 1;
pub(crate) const QUERY_GID: u32 = 2;

/// `RDMA_OPTION_ID` and its names.
pub(crate) const OPTION_ID: u32 = 0;
pub(crate) const OPTION_IB: u32 = 1;
pub(crate) const OPTION_ID_TOS: u32 = 0;
pub(crate) const OPTION_ID_REUSEADDR: u32 = 1;
pub(crate) const OPTION_ID_AFONLY: u32 = 2;
pub(crate) const OPTION_ID_ACK_TIMEOUT: u32 = 3;
/// `RDMA_OPTION_IB_PATH`.
pub(crate) const OPTION_IB_PATH: u32 = 1;

/// `IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL`.
pub(crate) const PATH_FLAGS: u32 = (1 << 0) | (1 << 1) | (1 << 4);
/// `IB_SA_EQ`: the selectors of a locally built path.
const SA_EQ: u8 = 2;

use crate::cma::{ConnParam, PathRec, UdParam};
use crate::verbs::QpAttr;

/// upstream `ib_copy_path_rec_to_user()`: `struct ib_user_path_rec` of a path.
pub(crate) fn user_path_rec(p: &PathRec) -> [u8; PATH_REC] {
    let mut b = [0u8; PATH_REC];
    b[..16].copy_from_slice(&p.dgid);
    b[16..32].copy_from_slice(&p.sgid);
    // dlid, slid (0 on RoCE); raw_traffic 0.
    b[32..34].copy_from_slice(&p.dlid.to_be_bytes());
    b[34..36].copy_from_slice(&p.slid.to_be_bytes());
    b[40..44].copy_from_slice(&p.flow_label.to_be_bytes());
    b[44..48].copy_from_slice(&u32::from(p.reversible).to_ne_bytes());
    b[48..52].copy_from_slice(&u32::from(p.mtu).to_ne_bytes());
    b[52..54].copy_from_slice(&p.pkey.to_be_bytes());
    b[54] = p.hop_limit;
    b[55] = p.traffic_class;
    // numb_path 0: cma_resolve_iboe_route() leaves it.
    b[57] = p.sl;
    b[58] = SA_EQ; // mtu_selector
    b[59] = SA_EQ; // rate_selector
    b[60] = p.rate;
    b[61] = SA_EQ; // packet_life_time_selector
    b[62] = p.packet_life_time;
    b
}

/// upstream `ib_sa_pack_path()`: the 64-byte PathRecord on the wire (IBA 15.2.5.16), as
/// `ucma_query_path()` returns it.
pub(crate) fn packed_path_rec(p: &PathRec) -> [u8; 64] {
    let mut b = [0u8; 64];
    b[..8].copy_from_slice(&p.service_id.to_be_bytes());
    b[8..24].copy_from_slice(&p.dgid);
    b[24..40].copy_from_slice(&p.sgid);
    // dlid, slid (0 on RoCE); raw_traffic 0.
    b[40..42].copy_from_slice(&p.dlid.to_be_bytes());
    b[42..44].copy_from_slice(&p.slid.to_be_bytes());
    let w = ((p.flow_label & 0x000f_ffff) << 8) | u32::from(p.hop_limit);
    b[44..48].copy_from_slice(&w.to_be_bytes());
    b[48] = p.traffic_class;
    b[49] = u8::from(p.reversible) << 7;
    b[50..52].copy_from_slice(&p.pkey.to_be_bytes());
    b[52..54].copy_from_slice(&u16::from(p.sl & 0xf).to_be_bytes());
    b[54] = (SA_EQ << 6) | (p.mtu & 0x3f);
    b[55] = (SA_EQ << 6) | (p.rate & 0x3f);
    b[56] = (SA_EQ << 6) | (p.packet_life_time & 0x3f);
    b
}

/// `struct rdma_ucm_conn_param` from its bytes (upstream `ucma_copy_conn_param()`).
pub(crate) fn get_conn_param(b: &[u8]) -> ConnParam {
    let mut p = ConnParam::default();
    if b.len() < CONN_PARAM {
        return p;
    }
    p.qp_num = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    p.qkey = u32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
    p.private_data.copy_from_slice(&b[8..8 + MAX_PRIVATE_DATA]);
    let o = 8 + MAX_PRIVATE_DATA;
    p.private_data_len = b[o];
    p.srq = b[o + 1];
    p.responder_resources = b[o + 2];
    p.initiator_depth = b[o + 3];
    p.flow_control = b[o + 4];
    p.retry_count = b[o + 5];
    p.rnr_retry_count = b[o + 6];
    p
}

/// An event's `struct rdma_ucm_conn_param` (upstream `ucma_copy_conn_event()`).
pub(crate) fn put_conn_param(b: &mut [u8], p: &ConnParam) {
    if b.len() < CONN_PARAM {
        return;
    }
    b[..4].copy_from_slice(&p.qp_num.to_ne_bytes());
    let n = usize::from(p.private_data_len).min(MAX_PRIVATE_DATA);
    b[8..8 + n].copy_from_slice(&p.private_data[..n]);
    let o = 8 + MAX_PRIVATE_DATA;
    b[o] = p.private_data_len;
    b[o + 1] = p.srq;
    b[o + 2] = p.responder_resources;
    b[o + 3] = p.initiator_depth;
    b[o + 4] = p.flow_control;
    b[o + 5] = p.retry_count;
    b[o + 6] = p.rnr_retry_count;
}

/// `sizeof(struct ib_uverbs_qp_attr)`.
pub(crate) const QP_ATTR: usize = 144;

/// upstream `ib_copy_qp_attr_to_user()`: `struct ib_uverbs_qp_attr`.
pub(crate) fn qp_attr(a: &QpAttr, mask: u32) -> [u8; QP_ATTR] {
    let mut b = [0u8; QP_ATTR];
    let mut put = |off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    put(0, mask);
    put(4, a.qp_state as u32);
    put(12, a.path_mtu.into());
    put(20, a.qkey);
    put(24, a.rq_psn);
    put(28, a.sq_psn);
    put(32, a.dest_qp_num);
    put(36, a.qp_access_flags);
    // ah_attr at 40 (struct ib_uverbs_ah_attr, upstream ib_copy_ah_attr_to_user()).
    if let Some(g) = a.ah_attr.grh {
        b[40..56].copy_from_slice(&g.dgid.0);
        b[56..60].copy_from_slice(&g.flow_label.to_ne_bytes());
        b[60] = g.sgid_index;
        b[61] = g.hop_limit;
        b[62] = g.traffic_class;
        b[69] = 1; // is_global
    }
    b[64..66].copy_from_slice(&a.ah_attr.dlid.to_ne_bytes());
    b[66] = a.ah_attr.sl;
    b[70] = a.ah_attr.port_num as u8;
    b[124..126].copy_from_slice(&a.pkey_index.to_ne_bytes());
    b[130] = a.max_rd_atomic;
    b[131] = a.max_dest_rd_atomic;
    b[132] = a.min_rnr_timer;
    b[133] = a.port_num as u8;
    b[134] = a.timeout;
    b[135] = a.retry_cnt;
    b[136] = a.rnr_retry;
    b
}

/// `RDMA_MC_JOIN_FLAG_FULLMEMBER`.
pub(crate) const MC_JOIN_FLAG_FULLMEMBER: u16 = 0;
/// `RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER`.
pub(crate) const MC_JOIN_FLAG_SENDONLY_FULLMEMBER: u16 = 1;

/// An event's `struct rdma_ucm_ud_param` (upstream `ucma_copy_ud_event()`,
/// `ib_copy_ah_attr_to_user()`): QPN, Q_Key, `struct ib_uverbs_ah_attr`, private data.
pub(crate) fn put_ud_param(b: &mut [u8], p: &UdParam) {
    if b.len() < UD_PARAM {
        return;
    }
    b[..4].copy_from_slice(&p.qp_num.to_ne_bytes());
    b[4..8].copy_from_slice(&p.qkey.to_ne_bytes());
    if let Some(ah) = p.ah_attr.as_ref() {
        let a = &mut b[8..8 + 32];
        if let Some(g) = ah.grh.as_ref() {
            a[..16].copy_from_slice(&g.dgid.0);
            a[16..20].copy_from_slice(&g.flow_label.to_ne_bytes());
            a[20] = g.sgid_index;
            a[21] = g.hop_limit;
            a[22] = g.traffic_class;
            // is_global
            a[29] = 1;
        }
        a[24..26].copy_from_slice(&ah.dlid.to_ne_bytes());
        a[26] = ah.sl;
        a[30] = ah.port_num as u8;
    }
    let n = usize::from(p.private_data_len).min(MAX_PRIVATE_DATA);
    b[40..40 + n].copy_from_slice(&p.private_data[..n]);
    b[40 + MAX_PRIVATE_DATA] = p.private_data_len;
}
