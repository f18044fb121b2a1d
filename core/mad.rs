// SPDX-License-Identifier: GPL-2.0

//! Management datagrams (upstream `include/rdma/ib_mad.h`): the 256-byte MAD, what the
//! receive side knows about where one came from, and the result bits of a driver's
//! `process_mad` (upstream `ops.process_mad`, which mlx5 answers through the firmware's
//! MAD_IFC command).

/// The size of every MAD of the IB classes (upstream `IB_MGMT_MAD_SIZE`).
pub const MAD_SIZE: usize = 256;

/// One MAD as it is on the wire: big-endian fields, the common header first (upstream
/// `struct ib_mad`).
#[derive(Clone)]
pub struct Mad(pub [u8; MAD_SIZE]);

impl Mad {
    /// An all-zero MAD.
    pub const fn zeroed() -> Self {
        Mad([0; MAD_SIZE])
    }

    /// The management class (byte 1 of the common header).
    pub fn mgmt_class(&self) -> u8 {
        self.0[1]
    }

    /// The method (byte 3 of the common header, the response bit included).
    pub fn method(&self) -> u8 {
        self.0[3]
    }

    /// The attribute id (bytes 16..18).
    pub fn attr_id(&self) -> u16 {
        u16::from_be_bytes([self.0[16], self.0[17]])
    }
}

/// Where a received MAD came from (upstream the `struct ib_wc` and `struct ib_grh` that
/// `process_mad` gets with an incoming MAD).
#[derive(Clone, Copy, Debug, Default)]
pub struct MadRecvInfo {
    /// The sender's LID.
    pub slid: u16,
    /// The service level it came on.
    pub sl: u8,
    /// The sender's QP (0 or 1 for SMPs and GMPs).
    pub src_qp: u32,
    /// The P_Key index it was received with.
    pub pkey_index: u16,
    /// The destination LID's path bits.
    pub dlid_path_bits: u8,
    /// The global route header, when the packet carried one.
    pub grh: Option<[u8; 40]>,
}

/// `process_mad` result: the call succeeded (upstream `IB_MAD_RESULT_SUCCESS`).
pub const MAD_RESULT_SUCCESS: u32 = 1 << 0;
/// `process_mad` result: the output MAD is a reply to send (`IB_MAD_RESULT_REPLY`).
pub const MAD_RESULT_REPLY: u32 = 1 << 1;
/// `process_mad` result: the MAD was consumed, nothing else may see it
/// (`IB_MAD_RESULT_CONSUMED`).
pub const MAD_RESULT_CONSUMED: u32 = 1 << 2;

/// `process_mad` flag: do not check the M_Key (upstream `IB_MAD_IGNORE_MKEY`).
pub const MAD_IGNORE_MKEY: u32 = 1;
/// `process_mad` flag: do not check the B_Key (`IB_MAD_IGNORE_BKEY`).
pub const MAD_IGNORE_BKEY: u32 = 2;

/// `IB_MGMT_BASE_VERSION`.
pub const MGMT_BASE_VERSION: u8 = 1;
/// `IB_MGMT_CLASS_SUBN_LID_ROUTED`.
pub const CLASS_SUBN_LID_ROUTED: u8 = 0x01;
/// `IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE`.
pub const CLASS_SUBN_DIRECTED_ROUTE: u8 = 0x81;
/// `IB_MGMT_CLASS_SUBN_ADM`.
pub const CLASS_SUBN_ADM: u8 = 0x03;
/// `IB_MGMT_CLASS_PERF_MGMT`.
pub const CLASS_PERF_MGMT: u8 = 0x04;
/// `IB_MGMT_CLASS_BM`.
pub const CLASS_BM: u8 = 0x05;
/// `IB_BM_ATTR_MOD_RESP`.
pub const BM_ATTR_MOD_RESP: u32 = 1 << 31;
/// `IB_MGMT_CLASS_DEVICE_MGMT`.
pub const CLASS_DEVICE_MGMT: u8 = 0x06;
/// `IB_MGMT_CLASS_BIS`.
pub const CLASS_BIS: u8 = 0x12;
/// `IB_MGMT_CLASS_VENDOR_RANGE2_START`.
pub const CLASS_VENDOR_RANGE2_START: u8 = 0x30;
/// `IB_MGMT_CLASS_VENDOR_RANGE2_END`.
pub const CLASS_VENDOR_RANGE2_END: u8 = 0x4f;
/// `IB_MGMT_METHOD_GET`.
pub const METHOD_GET: u8 = 0x01;
/// `IB_MGMT_METHOD_SET`.
pub const METHOD_SET: u8 = 0x02;
/// `IB_MGMT_METHOD_GET_RESP`.
pub const METHOD_GET_RESP: u8 = 0x81;
/// `IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB`.
pub const MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB: u16 = 0x000c;
/// `IB_SMP_DIRECTION`: the D bit of a directed-route SMP's status.
pub const SMP_DIRECTION: u16 = 0x8000;
/// `IB_MGMT_METHOD_TRAP_REPRESS`.
pub const METHOD_TRAP_REPRESS: u8 = 0x07;
/// `IB_MGMT_METHOD_RESP`: the response bit of the method.
pub const METHOD_RESP: u8 = 0x80;
/// `IB_MGMT_MAX_METHODS`.
pub const MGMT_MAX_METHODS: usize = 128;
/// `IB_MGMT_RMPP_VERSION`.
pub const MGMT_RMPP_VERSION: u8 = 1;
/// `IB_MGMT_MAD_HDR`: the common header's size.
pub const MGMT_MAD_HDR: usize = 24;
/// `IB_MGMT_RMPP_HDR`: the common and the RMPP header.
pub const MGMT_RMPP_HDR: usize = 36;
/// `IB_MGMT_VENDOR_HDR`.
pub const MGMT_VENDOR_HDR: usize = 40;
/// `IB_MGMT_SA_HDR`.
pub const MGMT_SA_HDR: usize = 56;
/// `IB_MGMT_DEVICE_HDR`.
pub const MGMT_DEVICE_HDR: usize = 64;
/// `IB_MGMT_RMPP_FLAG_ACTIVE` (the RMPP header's `rmpp_rtime_flags`, byte 26 of the MAD).
pub const MGMT_RMPP_FLAG_ACTIVE: u8 = 1;
/// `IB_MGMT_RMPP_FLAG_FIRST`.
pub const MGMT_RMPP_FLAG_FIRST: u8 = 2;
/// `IB_MGMT_RMPP_FLAG_LAST`.
pub const MGMT_RMPP_FLAG_LAST: u8 = 4;
/// `IB_MGMT_RMPP_TYPE_DATA`.
pub const MGMT_RMPP_TYPE_DATA: u8 = 1;
/// `IB_MGMT_RMPP_TYPE_ACK`.
pub const MGMT_RMPP_TYPE_ACK: u8 = 2;
/// `IB_MGMT_RMPP_TYPE_STOP`.
pub const MGMT_RMPP_TYPE_STOP: u8 = 3;
/// `IB_MGMT_RMPP_TYPE_ABORT`.
pub const MGMT_RMPP_TYPE_ABORT: u8 = 4;
/// `IB_MGMT_RMPP_STATUS_RESX`: a STOP's status (resources exhausted).
pub const MGMT_RMPP_STATUS_RESX: u8 = 1;
/// `IB_MGMT_RMPP_STATUS_T2L`: total time too long (the first of the ABORT statuses).
pub const MGMT_RMPP_STATUS_T2L: u8 = 118;
/// `IB_MGMT_RMPP_STATUS_BAD_SEG`: inconsistent first and segment number.
pub const MGMT_RMPP_STATUS_BAD_SEG: u8 = 120;
/// `IB_MGMT_RMPP_STATUS_BADT`: bad RMPP type.
pub const MGMT_RMPP_STATUS_BADT: u8 = 121;
/// `IB_MGMT_RMPP_STATUS_W2S`: NewWindowLast too small.
pub const MGMT_RMPP_STATUS_W2S: u8 = 122;
/// `IB_MGMT_RMPP_STATUS_S2B`: segment number too big.
pub const MGMT_RMPP_STATUS_S2B: u8 = 123;
/// `IB_MGMT_RMPP_STATUS_BAD_STATUS`: illegal status.
pub const MGMT_RMPP_STATUS_BAD_STATUS: u8 = 124;
/// `IB_MGMT_RMPP_STATUS_UNV`: unsupported version.
pub const MGMT_RMPP_STATUS_UNV: u8 = 125;
/// `IB_MGMT_RMPP_STATUS_ABORT_MAX`: the last of the ABORT statuses.
pub const MGMT_RMPP_STATUS_ABORT_MAX: u8 = 127;
/// `IB_MGMT_RMPP_DATA`: the payload of an RMPP segment after the common and RMPP headers.
pub const MGMT_RMPP_DATA: usize = MAD_SIZE - MGMT_RMPP_HDR;
/// `IB_LID_PERMISSIVE`.
pub const LID_PERMISSIVE: u16 = 0xffff;
/// `IB_SMP_MAX_PATH_HOPS`.
pub const SMP_MAX_PATH_HOPS: u8 = 64;

/// Whether `class` is one RMPP may carry (upstream `ib_is_mad_class_rmpp()`).
pub fn is_rmpp_class(class: u8) -> bool {
    matches!(class, CLASS_SUBN_ADM | CLASS_DEVICE_MGMT | CLASS_BIS)
        || (CLASS_VENDOR_RANGE2_START..=CLASS_VENDOR_RANGE2_END).contains(&class)
}

/// Whether `class` is in the vendor range with an OUI (upstream `is_vendor_class()`).
pub fn is_vendor_class(class: u8) -> bool {
    (CLASS_VENDOR_RANGE2_START..=CLASS_VENDOR_RANGE2_END).contains(&class)
}

/// Where the data of a MAD of `class` starts: the size of its headers (upstream
/// `ib_get_mad_data_offset()`).
pub fn data_offset(class: u8) -> usize {
    if class == CLASS_SUBN_ADM {
        MGMT_SA_HDR
    } else if class == CLASS_DEVICE_MGMT || class == CLASS_BIS {
        MGMT_DEVICE_HDR
    } else if is_vendor_class(class) {
        MGMT_VENDOR_HDR
    } else {
        MGMT_MAD_HDR
    }
}

/// A view of the common header of MAD bytes (at least [`MGMT_MAD_HDR`] long).
pub struct MadHdr<'a>(pub &'a [u8]);

impl MadHdr<'_> {
    fn byte(&self, i: usize) -> u8 {
        self.0.get(i).copied().unwrap_or(0)
    }

    /// The base version (byte 0).
    pub fn base_version(&self) -> u8 {
        self.byte(0)
    }

    /// The management class (byte 1).
    pub fn mgmt_class(&self) -> u8 {
        self.byte(1)
    }

    /// The class version (byte 2).
    pub fn class_version(&self) -> u8 {
        self.byte(2)
    }

    /// The method (byte 3).
    pub fn method(&self) -> u8 {
        self.byte(3)
    }

    /// The transaction id (bytes 8..16).
    pub fn tid(&self) -> u64 {
        let mut b = [0u8; 8];
        if let Some(s) = self.0.get(8..16) {
            b.copy_from_slice(s);
        }
        u64::from_be_bytes(b)
    }

    /// The attribute modifier (bytes 20..24).
    pub fn attr_mod(&self) -> u32 {
        u32::from_be_bytes([self.byte(20), self.byte(21), self.byte(22), self.byte(23)])
    }

    /// Whether the MAD is a response (upstream `ib_response_mad()`): the response bit, a
    /// TrapRepress, or a Baseboard Management MAD with the response bit of its modifier.
    pub fn is_response(&self) -> bool {
        self.method() & METHOD_RESP != 0
            || self.method() == METHOD_TRAP_REPRESS
            || (self.mgmt_class() == CLASS_BM && self.attr_mod() & BM_ATTR_MOD_RESP != 0)
    }

    /// The RMPP flags (the low 3 bits of `rmpp_rtime_flags`, byte 26; upstream
    /// `ib_get_rmpp_flags()`), meaningful for an RMPP class.
    pub fn rmpp_flags(&self) -> u8 {
        self.byte(26) & 0x7
    }

    /// The RMPP version (byte 24).
    pub fn rmpp_version(&self) -> u8 {
        self.byte(24)
    }

    /// The RMPP type (byte 25).
    pub fn rmpp_type(&self) -> u8 {
        self.byte(25)
    }

    /// The RMPP status (byte 27).
    pub fn rmpp_status(&self) -> u8 {
        self.byte(27)
    }

    /// The RMPP segment number (bytes 28..32).
    pub fn rmpp_seg_num(&self) -> u32 {
        u32::from_be_bytes([self.byte(28), self.byte(29), self.byte(30), self.byte(31)])
    }

    /// The RMPP PayloadLength or NewWindowLast (bytes 32..36).
    pub fn rmpp_paylen_newwin(&self) -> u32 {
        u32::from_be_bytes([self.byte(32), self.byte(33), self.byte(34), self.byte(35)])
    }
}

/// Writes an RMPP header into MAD bytes (at least [`MGMT_RMPP_HDR`] long): version, type,
/// the flags (upstream `ib_set_rmpp_flags()`: the response time bits kept), status, segment
/// number and PayloadLength/NewWindowLast.
pub fn set_rmpp(mad: &mut [u8], rtype: u8, flags: u8, status: u8, seg_num: u32, paylen: u32) {
    if mad.len() < MGMT_RMPP_HDR {
        return;
    }
    mad[24] = MGMT_RMPP_VERSION;
    mad[25] = rtype;
    mad[26] = (mad[26] & 0xf8) | (flags & 0x7);
    mad[27] = status;
    mad[28..32].copy_from_slice(&seg_num.to_be_bytes());
    mad[32..36].copy_from_slice(&paylen.to_be_bytes());
}

/// Sets the transaction id of MAD bytes (at least [`MGMT_MAD_HDR`] long).
pub fn set_tid(mad: &mut [u8], tid: u64) {
    if let Some(s) = mad.get_mut(8..16) {
        s.copy_from_slice(&tid.to_be_bytes());
    }
}
