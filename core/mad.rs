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
