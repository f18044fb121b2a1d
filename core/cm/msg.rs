// SPDX-License-Identifier: GPL-2.0

//! The IB CM's messages (IBA vol. 1 chapter 12, upstream `include/rdma/ibta_vol1_c12.h` and
//! the `IBA_GET`/`IBA_SET` accessors of `include/rdma/iba.h`): each a MAD of the CM class
//! (0x07, class version 2, method Send) whose attribute names the message, with its fields as
//! big-endian bit strings located by byte and bit offset (counted from the most significant
//! bit) after the 24-byte common header. [`Req`], [`Rep`], [`Rej`], [`Mra`], [`Rtu`],
//! [`Dreq`], [`Drep`], [`SidrReq`] and [`SidrRep`] encode into and decode from a [`Mad`]; a
//! decode reads every field, so a message of any content decodes (the protocol judges the
//! values). No allocation, no kernel calls.

use crate::mad::{Mad, METHOD_RESP, MGMT_BASE_VERSION, MGMT_MAD_HDR};
use kernel::prelude::*;

/// `IB_MGMT_CLASS_CM`.
pub const CLASS_CM: u8 = 0x07;
/// `IB_CM_CLASS_VERSION`.
pub const CM_CLASS_VERSION: u8 = 2;
/// `IB_MGMT_METHOD_SEND`: every CM message is a Send.
pub const METHOD_SEND: u8 = 0x03;

upstream_enum! {
    /// The CM attributes (upstream `CM_*_ATTR_ID`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CmAttr: u16 {
        Req = 0x0010 => CM_REQ_ATTR_ID,
        Mra = 0x0011 => CM_MRA_ATTR_ID,
        Rej = 0x0012 => CM_REJ_ATTR_ID,
        Rep = 0x0013 => CM_REP_ATTR_ID,
        Rtu = 0x0014 => CM_RTU_ATTR_ID,
        Dreq = 0x0015 => CM_DREQ_ATTR_ID,
        Drep = 0x0016 => CM_DREP_ATTR_ID,
        SidrReq = 0x0017 => CM_SIDR_REQ_ATTR_ID,
        SidrRep = 0x0018 => CM_SIDR_REP_ATTR_ID,
        Lap = 0x0019 => CM_LAP_ATTR_ID,
        Apr = 0x001a => CM_APR_ATTR_ID,
    }
}

/// A field: its first bit (from the most significant bit of the first byte after the MAD
/// header) and its width in bits (upstream `CM_FIELD*_LOC`).
#[derive(Clone, Copy)]
struct F {
    bit: usize,
    width: usize,
}

/// upstream `CM_FIELD_BLOC(struct, byte, bit, width)`.
const fn f(byte: usize, bit: usize, width: usize) -> F {
    F {
        bit: byte * 8 + bit,
        width,
    }
}

fn get(m: &Mad, fl: F) -> u64 {
    let mut v = 0u64;
    for i in 0..fl.width {
        let b = fl.bit + i;
        let byte = m.0[MGMT_MAD_HDR + b / 8];
        v = (v << 1) | u64::from((byte >> (7 - b % 8)) & 1);
    }
    v
}

fn set(m: &mut Mad, fl: F, v: u64) {
    for i in 0..fl.width {
        let b = fl.bit + i;
        let bit = (v >> (fl.width - 1 - i)) & 1;
        let byte = &mut m.0[MGMT_MAD_HDR + b / 8];
        let mask = 1u8 << (7 - b % 8);
        if bit != 0 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

fn get_bytes<const N: usize>(m: &Mad, byte: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&m.0[MGMT_MAD_HDR + byte..MGMT_MAD_HDR + byte + N]);
    out
}

fn set_bytes(m: &mut Mad, byte: usize, b: &[u8]) {
    m.0[MGMT_MAD_HDR + byte..MGMT_MAD_HDR + byte + b.len()].copy_from_slice(b);
}

/// A MAD of the CM class with `attr` and transaction id `tid` (upstream
/// `cm_format_mad_hdr()`).
pub fn new_mad(attr: CmAttr, tid: u64) -> Mad {
    let mut m = Mad::zeroed();
    m.0[0] = MGMT_BASE_VERSION;
    m.0[1] = CLASS_CM;
    m.0[2] = CM_CLASS_VERSION;
    m.0[3] = METHOD_SEND;
    m.0[8..16].copy_from_slice(&tid.to_be_bytes());
    m.0[16..18].copy_from_slice(&(attr as u16).to_be_bytes());
    m
}

/// The CM attribute of a received MAD, if it is a CM Send of class version 2 (upstream
/// `cm_recv_handler()` dispatches on the attribute).
pub fn attr_of(m: &Mad) -> Option<CmAttr> {
    if m.mgmt_class() != CLASS_CM || m.0[2] != CM_CLASS_VERSION {
        return None;
    }
    if m.method() & !METHOD_RESP != METHOD_SEND {
        return None;
    }
    CmAttr::from_raw(m.attr_id())
}

/// One path of a REQ (upstream the primary or alternate path fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReqPath {
    /// Local port LID (0xffff, permissive, on RoCE).
    pub local_lid: u16,
    /// Remote port LID.
    pub remote_lid: u16,
    /// Local port GID.
    pub local_gid: [u8; 16],
    /// Remote port GID.
    pub remote_gid: [u8; 16],
    /// Flow label.
    pub flow_label: u32,
    /// Packet rate (`enum ib_rate`).
    pub packet_rate: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Service level.
    pub sl: u8,
    /// Subnet local.
    pub subnet_local: bool,
    /// Local ACK timeout.
    pub local_ack_timeout: u8,
}

/// Private data sizes (bytes).
pub const REQ_PRIVATE_DATA: usize = 92;
/// REP private data size.
pub const REP_PRIVATE_DATA: usize = 196;
/// REJ private data size.
pub const REJ_PRIVATE_DATA: usize = 148;
/// REJ additional reject information size.
pub const REJ_ARI: usize = 72;
/// RTU, DREP private data size.
pub const RTU_PRIVATE_DATA: usize = 224;
/// DREQ private data size.
pub const DREQ_PRIVATE_DATA: usize = 220;
/// MRA private data size.
pub const MRA_PRIVATE_DATA: usize = 222;
/// SIDR REQ private data size.
pub const SIDR_REQ_PRIVATE_DATA: usize = 216;
/// SIDR REP private data size.
pub const SIDR_REP_PRIVATE_DATA: usize = 136;

/// A REQ (IBA Table 106).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Req {
    /// Local communication id.
    pub local_comm_id: u32,
    /// Vendor id (24 bits).
    pub vendor_id: u32,
    /// Service id.
    pub service_id: u64,
    /// Local CA GUID.
    pub local_ca_guid: u64,
    /// Local Q_Key.
    pub local_qkey: u32,
    /// Local QPN (24 bits).
    pub local_qpn: u32,
    /// Responder resources.
    pub responder_resources: u8,
    /// Local EECN.
    pub local_eecn: u32,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Remote EECN.
    pub remote_eecn: u32,
    /// Remote CM response timeout (5 bits).
    pub remote_cm_response_timeout: u8,
    /// Transport service type (2 bits: 0 RC, 1 UC, 3 the extended type).
    pub transport_type: u8,
    /// End-to-end flow control.
    pub flow_control: bool,
    /// Starting PSN (24 bits).
    pub starting_psn: u32,
    /// Local CM response timeout (5 bits).
    pub local_cm_response_timeout: u8,
    /// Retry count (3 bits).
    pub retry_count: u8,
    /// Partition key.
    pub pkey: u16,
    /// Path packet payload MTU (4 bits).
    pub mtu: u8,
    /// RDC exists.
    pub rdc_exists: bool,
    /// RNR retry count (3 bits).
    pub rnr_retry_count: u8,
    /// Max CM retries (4 bits).
    pub max_cm_retries: u8,
    /// SRQ.
    pub srq: bool,
    /// Extended transport type (3 bits: 1 XRC).
    pub ext_transport_type: u8,
    /// Primary path.
    pub primary: ReqPath,
    /// Alternate path.
    pub alternate: ReqPath,
    /// Private data.
    pub private_data: [u8; REQ_PRIVATE_DATA],
}

/// The path fields' byte offsets: primary at 52, alternate at 96.
fn get_path(m: &Mad, o: usize) -> ReqPath {
    ReqPath {
        local_lid: get(m, f(o, 0, 16)) as u16,
        remote_lid: get(m, f(o + 2, 0, 16)) as u16,
        local_gid: get_bytes(m, o + 4),
        remote_gid: get_bytes(m, o + 20),
        flow_label: get(m, f(o + 36, 0, 20)) as u32,
        packet_rate: get(m, f(o + 39, 2, 6)) as u8,
        traffic_class: get(m, f(o + 40, 0, 8)) as u8,
        hop_limit: get(m, f(o + 41, 0, 8)) as u8,
        sl: get(m, f(o + 42, 0, 4)) as u8,
        subnet_local: get(m, f(o + 42, 4, 1)) != 0,
        local_ack_timeout: get(m, f(o + 43, 0, 5)) as u8,
    }
}

fn set_path(m: &mut Mad, o: usize, p: &ReqPath) {
    set(m, f(o, 0, 16), p.local_lid.into());
    set(m, f(o + 2, 0, 16), p.remote_lid.into());
    set_bytes(m, o + 4, &p.local_gid);
    set_bytes(m, o + 20, &p.remote_gid);
    set(m, f(o + 36, 0, 20), p.flow_label.into());
    set(m, f(o + 39, 2, 6), p.packet_rate.into());
    set(m, f(o + 40, 0, 8), p.traffic_class.into());
    set(m, f(o + 41, 0, 8), p.hop_limit.into());
    set(m, f(o + 42, 0, 4), p.sl.into());
    set(m, f(o + 42, 4, 1), p.subnet_local.into());
    set(m, f(o + 43, 0, 5), p.local_ack_timeout.into());
}

impl Req {
    /// Decodes the REQ in `m`.
    pub fn decode(m: &Mad) -> Req {
        Req {
            local_comm_id: get(m, f(0, 0, 32)) as u32,
            vendor_id: get(m, f(5, 0, 24)) as u32,
            service_id: get(m, f(8, 0, 64)),
            local_ca_guid: get(m, f(16, 0, 64)),
            local_qkey: get(m, f(28, 0, 32)) as u32,
            local_qpn: get(m, f(32, 0, 24)) as u32,
            responder_resources: get(m, f(35, 0, 8)) as u8,
            local_eecn: get(m, f(36, 0, 24)) as u32,
            initiator_depth: get(m, f(39, 0, 8)) as u8,
            remote_eecn: get(m, f(40, 0, 24)) as u32,
            remote_cm_response_timeout: get(m, f(43, 0, 5)) as u8,
            transport_type: get(m, f(43, 5, 2)) as u8,
            flow_control: get(m, f(43, 7, 1)) != 0,
            starting_psn: get(m, f(44, 0, 24)) as u32,
            local_cm_response_timeout: get(m, f(47, 0, 5)) as u8,
            retry_count: get(m, f(47, 5, 3)) as u8,
            pkey: get(m, f(48, 0, 16)) as u16,
            mtu: get(m, f(50, 0, 4)) as u8,
            rdc_exists: get(m, f(50, 4, 1)) != 0,
            rnr_retry_count: get(m, f(50, 5, 3)) as u8,
            max_cm_retries: get(m, f(51, 0, 4)) as u8,
            srq: get(m, f(51, 4, 1)) != 0,
            ext_transport_type: get(m, f(51, 5, 3)) as u8,
            primary: get_path(m, 52),
            alternate: get_path(m, 96),
            private_data: get_bytes(m, 140),
        }
    }

    /// Encodes the REQ into a new MAD with `tid`.
    pub fn encode(&self, tid: u64) -> Mad {
        let mut m = new_mad(CmAttr::Req, tid);
        set(&mut m, f(0, 0, 32), self.local_comm_id.into());
        set(&mut m, f(5, 0, 24), self.vendor_id.into());
        set(&mut m, f(8, 0, 64), self.service_id);
        set(&mut m, f(16, 0, 64), self.local_ca_guid);
        set(&mut m, f(28, 0, 32), self.local_qkey.into());
        set(&mut m, f(32, 0, 24), self.local_qpn.into());
        set(&mut m, f(35, 0, 8), self.responder_resources.into());
        set(&mut m, f(36, 0, 24), self.local_eecn.into());
        set(&mut m, f(39, 0, 8), self.initiator_depth.into());
        set(&mut m, f(40, 0, 24), self.remote_eecn.into());
        set(&mut m, f(43, 0, 5), self.remote_cm_response_timeout.into());
        set(&mut m, f(43, 5, 2), self.transport_type.into());
        set(&mut m, f(43, 7, 1), self.flow_control.into());
        set(&mut m, f(44, 0, 24), self.starting_psn.into());
        set(&mut m, f(47, 0, 5), self.local_cm_response_timeout.into());
        set(&mut m, f(47, 5, 3), self.retry_count.into());
        set(&mut m, f(48, 0, 16), self.pkey.into());
        set(&mut m, f(50, 0, 4), self.mtu.into());
        set(&mut m, f(50, 4, 1), self.rdc_exists.into());
        set(&mut m, f(50, 5, 3), self.rnr_retry_count.into());
        set(&mut m, f(51, 0, 4), self.max_cm_retries.into());
        set(&mut m, f(51, 4, 1), self.srq.into());
        set(&mut m, f(51, 5, 3), self.ext_transport_type.into());
        set_path(&mut m, 52, &self.primary);
        set_path(&mut m, 96, &self.alternate);
        set_bytes(&mut m, 140, &self.private_data);
        m
    }
}

/// A REP (IBA Table 111).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rep {
    /// Local communication id.
    pub local_comm_id: u32,
    /// Remote communication id.
    pub remote_comm_id: u32,
    /// Local Q_Key.
    pub local_qkey: u32,
    /// Local QPN (24 bits).
    pub local_qpn: u32,
    /// Local EE context number (24 bits).
    pub local_eecn: u32,
    /// Starting PSN (24 bits).
    pub starting_psn: u32,
    /// Responder resources.
    pub responder_resources: u8,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Target ACK delay (5 bits).
    pub target_ack_delay: u8,
    /// Failover accepted (2 bits).
    pub failover_accepted: u8,
    /// End-to-end flow control.
    pub flow_control: bool,
    /// RNR retry count (3 bits).
    pub rnr_retry_count: u8,
    /// SRQ.
    pub srq: bool,
    /// Local CA GUID.
    pub local_ca_guid: u64,
    /// Private data.
    pub private_data: [u8; REP_PRIVATE_DATA],
}

impl Rep {
    /// Decodes the REP in `m`.
    pub fn decode(m: &Mad) -> Rep {
        Rep {
            local_comm_id: get(m, f(0, 0, 32)) as u32,
            remote_comm_id: get(m, f(4, 0, 32)) as u32,
            local_qkey: get(m, f(8, 0, 32)) as u32,
            local_qpn: get(m, f(12, 0, 24)) as u32,
            local_eecn: get(m, f(16, 0, 24)) as u32,
            starting_psn: get(m, f(20, 0, 24)) as u32,
            responder_resources: get(m, f(24, 0, 8)) as u8,
            initiator_depth: get(m, f(25, 0, 8)) as u8,
            target_ack_delay: get(m, f(26, 0, 5)) as u8,
            failover_accepted: get(m, f(26, 5, 2)) as u8,
            flow_control: get(m, f(26, 7, 1)) != 0,
            rnr_retry_count: get(m, f(27, 0, 3)) as u8,
            srq: get(m, f(27, 3, 1)) != 0,
            local_ca_guid: get(m, f(28, 0, 64)),
            private_data: get_bytes(m, 36),
        }
    }

    /// Encodes the REP into a new MAD with `tid`.
    pub fn encode(&self, tid: u64) -> Mad {
        let mut m = new_mad(CmAttr::Rep, tid);
        set(&mut m, f(0, 0, 32), self.local_comm_id.into());
        set(&mut m, f(4, 0, 32), self.remote_comm_id.into());
        set(&mut m, f(8, 0, 32), self.local_qkey.into());
        set(&mut m, f(12, 0, 24), self.local_qpn.into());
        set(&mut m, f(16, 0, 24), self.local_eecn.into());
        set(&mut m, f(20, 0, 24), self.starting_psn.into());
        set(&mut m, f(24, 0, 8), self.responder_resources.into());
        set(&mut m, f(25, 0, 8), self.initiator_depth.into());
        set(&mut m, f(26, 0, 5), self.target_ack_delay.into());
        set(&mut m, f(26, 5, 2), self.failover_accepted.into());
        set(&mut m, f(26, 7, 1), self.flow_control.into());
        set(&mut m, f(27, 0, 3), self.rnr_retry_count.into());
        set(&mut m, f(27, 3, 1), self.srq.into());
        set(&mut m, f(28, 0, 64), self.local_ca_guid);
        set_bytes(&mut m, 36, &self.private_data);
        m
    }
}

/// A REJ (IBA Table 110).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rej {
    /// Local communication id.
    pub local_comm_id: u32,
    /// Remote communication id.
    pub remote_comm_id: u32,
    /// Which message is rejected (2 bits: 0 REQ, 1 REP, 2 other).
    pub message_rejected: u8,
    /// Length of the additional reject information (7 bits).
    pub ari_length: u8,
    /// Reason (`enum ib_cm_rej_reason`).
    pub reason: u16,
    /// Additional reject information.
    pub ari: [u8; REJ_ARI],
    /// Private data.
    pub private_data: [u8; REJ_PRIVATE_DATA],
}

impl Rej {
    /// Decodes the REJ in `m`.
    pub fn decode(m: &Mad) -> Rej {
        Rej {
            local_comm_id: get(m, f(0, 0, 32)) as u32,
            remote_comm_id: get(m, f(4, 0, 32)) as u32,
            message_rejected: get(m, f(8, 0, 2)) as u8,
            ari_length: get(m, f(9, 0, 7)) as u8,
            reason: get(m, f(10, 0, 16)) as u16,
            ari: get_bytes(m, 12),
            private_data: get_bytes(m, 84),
        }
    }

    /// Encodes the REJ into a new MAD with `tid`.
    pub fn encode(&self, tid: u64) -> Mad {
        let mut m = new_mad(CmAttr::Rej, tid);
        set(&mut m, f(0, 0, 32), self.local_comm_id.into());
        set(&mut m, f(4, 0, 32), self.remote_comm_id.into());
        set(&mut m, f(8, 0, 2), self.message_rejected.into());
        set(&mut m, f(9, 0, 7), self.ari_length.into());
        set(&mut m, f(10, 0, 16), self.reason.into());
        set_bytes(&mut m, 12, &self.ari);
        set_bytes(&mut m, 84, &self.private_data);
        m
    }
}

/// An MRA (IBA Table 107).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mra {
    /// Local communication id.
    pub local_comm_id: u32,
    /// Remote communication id.
    pub remote_comm_id: u32,
    /// Which message is MRAed (2 bits: 0 REQ, 1 REP, 2 LAP).
    pub message_mraed: u8,
    /// Service timeout (5 bits).
    pub service_timeout: u8,
    /// Private data.
    pub private_data: [u8; MRA_PRIVATE_DATA],
}

impl Mra {
    /// Decodes the MRA in `m`.
    pub fn decode(m: &Mad) -> Mra {
        Mra {
            local_comm_id: get(m, f(0, 0, 32)) as u32,
            remote_comm_id: get(m, f(4, 0, 32)) as u32,
            message_mraed: get(m, f(8, 0, 2)) as u8,
            service_timeout: get(m, f(9, 0, 5)) as u8,
            private_data: get_bytes(m, 10),
        }
    }

    /// Encodes the MRA into a new MAD with `tid`.
    pub fn encode(&self, tid: u64) -> Mad {
        let mut m = new_mad(CmAttr::Mra, tid);
        set(&mut m, f(0, 0, 32), self.local_comm_id.into());
        set(&mut m, f(4, 0, 32), self.remote_comm_id.into());
        set(&mut m, f(8, 0, 2), self.message_mraed.into());
        set(&mut m, f(9, 0, 5), self.service_timeout.into());
        set_bytes(&mut m, 10, &self.private_data);
        m
    }
}

/// RTU and DREP (IBA Tables 112, 115): the two ids and private data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ids {
    /// Local communication id.
    pub local_comm_id: u32,
    /// Remote communication id.
    pub remote_comm_id: u32,
    /// Private data.
    pub private_data: [u8; RTU_PRIVATE_DATA],
}

/// An RTU.
pub type Rtu = Ids;
/// A DREP.
pub type Drep = Ids;

impl Ids {
    /// Decodes the RTU or DREP in `m`.
    pub fn decode(m: &Mad) -> Ids {
        Ids {
            local_comm_id: get(m, f(0, 0, 32)) as u32,
            remote_comm_id: get(m, f(4, 0, 32)) as u32,
            private_data: get_bytes(m, 8),
        }
    }

    /// Encodes the message as `attr` (RTU or DREP) with `tid`.
    pub fn encode(&self, attr: CmAttr, tid: u64) -> Mad {
        let mut m = new_mad(attr, tid);
        set(&mut m, f(0, 0, 32), self.local_comm_id.into());
        set(&mut m, f(4, 0, 32), self.remote_comm_id.into());
        set_bytes(&mut m, 8, &self.private_data);
        m
    }
}

/// A DREQ (IBA Table 114).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dreq {
    /// Local communication id.
    pub local_comm_id: u32,
    /// Remote communication id.
    pub remote_comm_id: u32,
    /// The remote QPN or EECN (24 bits).
    pub remote_qpn: u32,
    /// Private data.
    pub private_data: [u8; DREQ_PRIVATE_DATA],
}

impl Dreq {
    /// Decodes the DREQ in `m`.
    pub fn decode(m: &Mad) -> Dreq {
        Dreq {
            local_comm_id: get(m, f(0, 0, 32)) as u32,
            remote_comm_id: get(m, f(4, 0, 32)) as u32,
            remote_qpn: get(m, f(8, 0, 24)) as u32,
            private_data: get_bytes(m, 12),
        }
    }

    /// Encodes the DREQ into a new MAD with `tid`.
    pub fn encode(&self, tid: u64) -> Mad {
        let mut m = new_mad(CmAttr::Dreq, tid);
        set(&mut m, f(0, 0, 32), self.local_comm_id.into());
        set(&mut m, f(4, 0, 32), self.remote_comm_id.into());
        set(&mut m, f(8, 0, 24), self.remote_qpn.into());
        set_bytes(&mut m, 12, &self.private_data);
        m
    }
}

/// A SIDR REQ (IBA Table 119).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SidrReq {
    /// Request id.
    pub request_id: u32,
    /// Partition key.
    pub pkey: u16,
    /// Service id.
    pub service_id: u64,
    /// Private data.
    pub private_data: [u8; SIDR_REQ_PRIVATE_DATA],
}

impl SidrReq {
    /// Decodes the SIDR REQ in `m`.
    pub fn decode(m: &Mad) -> SidrReq {
        SidrReq {
            request_id: get(m, f(0, 0, 32)) as u32,
            pkey: get(m, f(4, 0, 16)) as u16,
            service_id: get(m, f(8, 0, 64)),
            private_data: get_bytes(m, 16),
        }
    }

    /// Encodes the SIDR REQ into a new MAD with `tid`.
    pub fn encode(&self, tid: u64) -> Mad {
        let mut m = new_mad(CmAttr::SidrReq, tid);
        set(&mut m, f(0, 0, 32), self.request_id.into());
        set(&mut m, f(4, 0, 16), self.pkey.into());
        set(&mut m, f(8, 0, 64), self.service_id);
        set_bytes(&mut m, 16, &self.private_data);
        m
    }
}

/// A SIDR REP (IBA Table 120).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SidrRep {
    /// Request id.
    pub request_id: u32,
    /// Status (`enum ib_cm_sidr_status`).
    pub status: u8,
    /// Additional information length.
    pub info_length: u8,
    /// QPN (24 bits).
    pub qpn: u32,
    /// Service id.
    pub service_id: u64,
    /// Q_Key.
    pub qkey: u32,
    /// Additional information.
    pub info: [u8; 72],
    /// Private data.
    pub private_data: [u8; SIDR_REP_PRIVATE_DATA],
}

impl SidrRep {
    /// Decodes the SIDR REP in `m`.
    pub fn decode(m: &Mad) -> SidrRep {
        SidrRep {
            request_id: get(m, f(0, 0, 32)) as u32,
            status: get(m, f(4, 0, 8)) as u8,
            info_length: get(m, f(5, 0, 8)) as u8,
            qpn: get(m, f(8, 0, 24)) as u32,
            service_id: get(m, f(12, 0, 64)),
            qkey: get(m, f(20, 0, 32)) as u32,
            info: get_bytes(m, 24),
            private_data: get_bytes(m, 96),
        }
    }

    /// Encodes the SIDR REP into a new MAD with `tid`.
    pub fn encode(&self, tid: u64) -> Mad {
        let mut m = new_mad(CmAttr::SidrRep, tid);
        set(&mut m, f(0, 0, 32), self.request_id.into());
        set(&mut m, f(4, 0, 8), self.status.into());
        set(&mut m, f(5, 0, 8), self.info_length.into());
        set(&mut m, f(8, 0, 24), self.qpn.into());
        set(&mut m, f(12, 0, 64), self.service_id);
        set(&mut m, f(20, 0, 32), self.qkey.into());
        set_bytes(&mut m, 24, &self.info);
        set_bytes(&mut m, 96, &self.private_data);
        m
    }
}

/// The source and destination GIDs of a received packet's 40-byte header area: a GRH, or
/// for RoCE v2 over IPv4 the IPv4 header in its last 20 bytes (upstream
/// `ib_get_rdma_header_version()`, `ib_get_gids_from_rdma_hdr()`: an IPv4 header whose
/// checksum verifies; its addresses as IPv4-mapped GIDs).
pub fn hdr_gids(h: &[u8; 40]) -> ([u8; 16], [u8; 16]) {
    let ip = &h[20..40];
    let sum = ip
        .chunks(2)
        .fold(0u32, |a, w| a + u32::from(u16::from_be_bytes([w[0], w[1]])));
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
    if ip[0] == 0x45 && sum == 0xffff {
        src[10] = 0xff;
        src[11] = 0xff;
        dst[10] = 0xff;
        dst[11] = 0xff;
        src[12..].copy_from_slice(&ip[12..16]);
        dst[12..].copy_from_slice(&ip[16..20]);
    } else {
        src.copy_from_slice(&h[8..24]);
        dst.copy_from_slice(&h[24..40]);
    }
    (src, dst)
}

#[kunit_tests(ib_core_rs_cm_msg)]
mod tests {
    use super::*;

    fn req() -> Req {
        let mut pd = [0u8; REQ_PRIVATE_DATA];
        pd[0] = 0xab;
        pd[REQ_PRIVATE_DATA - 1] = 0xcd;
        Req {
            local_comm_id: 0x1234_5678,
            vendor_id: 0x00_02c9,
            service_id: 0x0000_0000_0106_1d2f,
            local_ca_guid: 0x0002_c903_0000_0001,
            local_qkey: 0,
            local_qpn: 0x00_0123,
            responder_resources: 4,
            local_eecn: 0,
            initiator_depth: 4,
            remote_eecn: 0,
            remote_cm_response_timeout: 20,
            transport_type: 0,
            flow_control: true,
            starting_psn: 0x00ab_cdef,
            local_cm_response_timeout: 20,
            retry_count: 7,
            pkey: 0xffff,
            mtu: 3,
            rdc_exists: false,
            rnr_retry_count: 7,
            max_cm_retries: 15,
            srq: false,
            ext_transport_type: 0,
            primary: ReqPath {
                local_lid: 0xffff,
                remote_lid: 0xffff,
                local_gid: [1; 16],
                remote_gid: [2; 16],
                flow_label: 0xf_1234,
                packet_rate: 0,
                traffic_class: 0,
                hop_limit: 64,
                sl: 0,
                subnet_local: false,
                local_ack_timeout: 18,
            },
            alternate: ReqPath::default(),
            private_data: pd,
        }
    }

    #[test]
    fn req_round_trips_and_sits_where_iba_puts_it() {
        let r = req();
        let m = r.encode(0x11);
        assert_eq!(attr_of(&m), Some(CmAttr::Req));
        assert_eq!(Req::decode(&m), r);
        // The header: class 7 version 2, Send, attribute 0x0010, the TID.
        assert_eq!(&m.0[..4], &[1, 7, 2, 3]);
        assert_eq!(&m.0[16..18], &[0, 0x10]);
        assert_eq!(&m.0[8..16], &0x11u64.to_be_bytes());
        let d = &m.0[MGMT_MAD_HDR..];
        // local comm id at 0, service id at 8, local QPN in bytes 32..35 with the responder
        // resources in byte 35.
        assert_eq!(&d[..4], &[0x12, 0x34, 0x56, 0x78]);
        assert_eq!(&d[8..16], &0x0106_1d2fu64.to_be_bytes());
        assert_eq!(&d[32..36], &[0x00, 0x01, 0x23, 4]);
        // Byte 43: remote CM response timeout (20 = 10100b) then transport type 0 then flow
        // control 1: 1010_0001.
        assert_eq!(d[43], 0b1010_0001);
        // Byte 47: local CM response timeout 20, retry count 7: 1010_0111.
        assert_eq!(d[47], 0b1010_0111);
        // Byte 50: MTU 3, RDC 0, RNR retry 7: 0011_0111; byte 51: max CM retries 15.
        assert_eq!(d[50], 0b0011_0111);
        assert_eq!(d[51], 0b1111_0000);
        // The primary flow label (20 bits) from byte 88, the hop limit at 93.
        assert_eq!(&d[88..91], &[0xf1, 0x23, 0x40]);
        assert_eq!(d[93], 64);
        // Local ACK timeout 18 in the top five bits of byte 95.
        assert_eq!(d[95], 18 << 3);
        assert_eq!((d[140], d[140 + REQ_PRIVATE_DATA - 1]), (0xab, 0xcd));
    }

    #[test]
    fn rep_rej_mra_dreq_sidr_round_trip() {
        let rep = Rep {
            local_comm_id: 7,
            remote_comm_id: 8,
            local_qkey: 0,
            local_qpn: 0xab_cdef,
            local_eecn: 0,
            starting_psn: 0x12_3456,
            responder_resources: 1,
            initiator_depth: 2,
            target_ack_delay: 15,
            failover_accepted: 0,
            flow_control: true,
            rnr_retry_count: 7,
            srq: true,
            local_ca_guid: 42,
            private_data: [9; REP_PRIVATE_DATA],
        };
        let m = rep.encode(1);
        assert_eq!(attr_of(&m), Some(CmAttr::Rep));
        assert_eq!(Rep::decode(&m), rep);
        // RNR retry count 7 and SRQ in the top four bits of byte 27: 1111_0000.
        assert_eq!(m.0[MGMT_MAD_HDR + 27], 0b1111_0000);
        let rej = Rej {
            local_comm_id: 1,
            remote_comm_id: 2,
            message_rejected: 0,
            ari_length: 0,
            reason: 28,
            ari: [0; REJ_ARI],
            private_data: [3; REJ_PRIVATE_DATA],
        };
        assert_eq!(Rej::decode(&rej.encode(2)), rej);
        let mra = Mra {
            local_comm_id: 1,
            remote_comm_id: 2,
            message_mraed: 1,
            service_timeout: 31,
            private_data: [0; MRA_PRIVATE_DATA],
        };
        assert_eq!(Mra::decode(&mra.encode(3)), mra);
        let dreq = Dreq {
            local_comm_id: 5,
            remote_comm_id: 6,
            remote_qpn: 0x11,
            private_data: [0; DREQ_PRIVATE_DATA],
        };
        let m = dreq.encode(4);
        assert_eq!(attr_of(&m), Some(CmAttr::Dreq));
        assert_eq!(Dreq::decode(&m), dreq);
        let rtu = Ids {
            local_comm_id: 5,
            remote_comm_id: 6,
            private_data: [1; RTU_PRIVATE_DATA],
        };
        assert_eq!(Ids::decode(&rtu.encode(CmAttr::Rtu, 5)), rtu);
        let sreq = SidrReq {
            request_id: 9,
            pkey: 0xffff,
            service_id: 0x0111_0000 + 7174,
            private_data: [0; SIDR_REQ_PRIVATE_DATA],
        };
        assert_eq!(SidrReq::decode(&sreq.encode(6)), sreq);
        let srep = SidrRep {
            request_id: 9,
            status: 0,
            info_length: 0,
            qpn: 0x4d,
            service_id: 1,
            qkey: 0x0111_0000,
            info: [0; 72],
            private_data: [0; SIDR_REP_PRIVATE_DATA],
        };
        assert_eq!(SidrRep::decode(&srep.encode(7)), srep);
    }

    #[test]
    fn only_cm_sends_of_version_2_are_cm_messages() {
        let mut m = new_mad(CmAttr::Rtu, 0);
        assert_eq!(attr_of(&m), Some(CmAttr::Rtu));
        m.0[2] = 1;
        assert_eq!(attr_of(&m), None);
        m.0[2] = 2;
        m.0[3] = 1;
        assert_eq!(attr_of(&m), None);
        m.0[3] = 3;
        m.0[16..18].copy_from_slice(&0x0030u16.to_be_bytes());
        assert_eq!(attr_of(&m), None);
    }

    #[test]
    fn received_header_gids() {
        // RoCE v2 over IPv4: the IPv4 header in the last 20 bytes (checksum verifies).
        let mut h = [0u8; 40];
        h[20..40].copy_from_slice(&[
            0x45, 0, 0, 0x3c, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0, 10, 66, 0, 1, 10, 66, 0, 2,
        ]);
        let sum = h[20..40]
            .chunks(2)
            .fold(0u32, |a, w| a + u32::from(u16::from_be_bytes([w[0], w[1]])));
        let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
        h[30..32].copy_from_slice(&sum.to_be_bytes());
        let (src, dst) = hdr_gids(&h);
        assert_eq!(src[10..], [0xff, 0xff, 10, 66, 0, 1]);
        assert_eq!(dst[10..], [0xff, 0xff, 10, 66, 0, 2]);
        assert!(src[..10].iter().all(|b| *b == 0));
        // A wrong checksum: a GRH (its SGID and DGID).
        h[31] ^= 1;
        h[8] = 0xfe;
        h[24] = 0xfd;
        let (src, dst) = hdr_gids(&h);
        assert_eq!((src[0], dst[0]), (0xfe, 0xfd));
    }
}
