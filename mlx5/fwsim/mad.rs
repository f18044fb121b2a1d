// SPDX-License-Identifier: GPL-2.0

//! Management datagrams at the device: the MAD_IFC command and the device's MAD handler,
//! which hands a MAD to the subnet management agent (`sma.rs`, classes 0x01 and 0x81) or the
//! performance management agent (`pma.rs`, class 0x04).
//!
//! [`Fw::process_mad`] is the one entry: MAD_IFC calls it for the driver (upstream
//! `mlx5_MAD_IFC()` -> `mlx5_cmd_mad_ifc()`), and the embedded subnet manager (`sm.rs`) calls
//! it for the SMPs it "sends", so an agent cannot tell who asked. Formats are IBA Vol 1
//! chapters 13, 14 and 16.1 as upstream encodes them (`include/rdma/ib_mad.h`, `ib_smi.h`,
//! `ib_pma.h`): big-endian fields, the 24-byte common header, SMP data at byte 64.

use super::syndrome::{self as syn, CmdError};
use super::{fail, Cmd, Done, Fw};
use crate::fwsim::profile::LinkLayer;
use crate::prm::cmd::{mad_ifc_in, mad_ifc_out};
use crate::prm::command::MadIfc;
use crate::prm::status::Status;

/// Bytes of every MAD (upstream `IB_MGMT_MAD_SIZE`).
pub(crate) const MAD_SIZE: usize = 256;

/// One MAD as on the wire.
pub(crate) type MadBytes = [u8; MAD_SIZE];

/// Management classes (`IB_MGMT_CLASS_*`, ib_mad.h).
pub(crate) mod class {
    /// LID-routed SMPs.
    pub(crate) const SUBN_LID_ROUTED: u8 = 0x01;
    /// Subnet administration (the SA, `engine/sa.rs`).
    pub(crate) const SUBN_ADM: u8 = 0x03;
    /// Performance management (the PMA).
    pub(crate) const PERF_MGMT: u8 = 0x04;
    /// Directed-route SMPs.
    pub(crate) const SUBN_DIRECTED_ROUTE: u8 = 0x81;
}

/// Methods (`IB_MGMT_METHOD_*`, ib_mad.h).
pub(crate) mod method {
    /// Get.
    pub(crate) const GET: u8 = 0x01;
    /// Set.
    pub(crate) const SET: u8 = 0x02;
    /// The response bit.
    pub(crate) const RESP: u8 = 0x80;
    /// GetResp, the answer to Get and Set.
    pub(crate) const GET_RESP: u8 = 0x81;
    /// TrapRepress (the SM's answer to a trap: no response).
    pub(crate) const TRAP_REPRESS: u8 = 0x07;
    /// SubnAdmDelete (`IB_SA_METHOD_DELETE`) and its response.
    pub(crate) const SA_DELETE: u8 = 0x15;
    pub(crate) const SA_DELETE_RESP: u8 = 0x95;
}

/// MAD status codes (`IB_MGMT_MAD_STATUS_*`, ib_mad.h).
pub(crate) mod status {
    /// The base or class version (or their combination) is not supported.
    pub(crate) const BAD_VERSION: u16 = 0x0004;
    /// The method is not supported.
    pub(crate) const UNSUPPORTED_METHOD: u16 = 0x0008;
    /// The method/attribute combination is not supported.
    pub(crate) const UNSUPPORTED_METHOD_ATTRIB: u16 = 0x000c;
    /// A field of the attribute or the attribute modifier has an invalid value.
    pub(crate) const INVALID_ATTRIB_VALUE: u16 = 0x001c;
    /// The D bit of a directed-route SMP's status (`IB_SMP_DIRECTION`): set on the way back.
    pub(crate) const DIRECTION: u16 = 0x8000;
    /// The SA's statuses (IBA 15.2.5, its class-specific bits 8..14): no resources, an
    /// invalid request, no records, an invalid GID, too few components.
    pub(crate) const SA_ERR_NO_RESOURCES: u16 = 0x0100;
    pub(crate) const SA_ERR_REQ_INVALID: u16 = 0x0200;
    pub(crate) const SA_ERR_NO_RECORDS: u16 = 0x0300;
    pub(crate) const SA_ERR_REQ_INVALID_GID: u16 = 0x0500;
    pub(crate) const SA_ERR_REQ_INSUFFICIENT_COMPONENTS: u16 = 0x0600;
}

/// The common checks of an SMP at an SMA (IBA 13.4.4, 14.2.5): base and class version 1
/// (else answered `BAD_VERSION`), a TrapRepress consumed, a method other than Get and Set
/// answered `UNSUPPORTED_METHOD`. `Ok` with whether it is a Set, or the outcome.
pub(crate) fn smp_method(m: &mut MadBytes) -> Result<bool, MadOutcome> {
    if m[off::BASE_VERSION] != 1 || m[off::CLASS_VERSION] != 1 {
        respond(m, status::BAD_VERSION);
        return Err(MadOutcome::Reply);
    }
    match m[off::METHOD] {
        method::TRAP_REPRESS => Err(MadOutcome::Consumed),
        method::GET => Ok(false),
        method::SET => Ok(true),
        _ => {
            respond(m, status::UNSUPPORTED_METHOD);
            Err(MadOutcome::Reply)
        }
    }
}

/// Byte offsets in a MAD (`struct ib_mad_hdr`, `struct ib_smp`).
pub(crate) mod off {
    /// `base_version`.
    pub(crate) const BASE_VERSION: usize = 0;
    /// `class_version`.
    pub(crate) const CLASS_VERSION: usize = 2;
    /// `method`.
    pub(crate) const METHOD: usize = 3;
    /// `status` (16 bits).
    pub(crate) const STATUS: usize = 4;
    /// A directed-route SMP's `hop_ptr`.
    pub(crate) const HOP_PTR: usize = 6;
    /// A directed-route SMP's `hop_cnt`.
    pub(crate) const HOP_CNT: usize = 7;
    /// `tid` (64 bits).
    pub(crate) const TID: usize = 8;
    /// `attr_id` (16 bits).
    pub(crate) const ATTR_ID: usize = 16;
    /// `attr_mod` (32 bits).
    pub(crate) const ATTR_MOD: usize = 20;
    /// An SMP's `mkey` (64 bits).
    pub(crate) const MKEY: usize = 24;
    /// A directed-route SMP's `dr_slid`.
    pub(crate) const DR_SLID: usize = 32;
    /// A directed-route SMP's `dr_dlid`.
    pub(crate) const DR_DLID: usize = 34;
    /// The attribute data of an SMP (64 bytes) and of a PMA MAD (after 40 reserved bytes).
    pub(crate) const DATA: usize = 64;
    /// A directed-route SMP's `initial_path` (64 bytes).
    pub(crate) const INITIAL_PATH: usize = 128;
    /// A directed-route SMP's `return_path` (64 bytes).
    pub(crate) const RETURN_PATH: usize = 192;
}

/// Bytes of an SMP's attribute data (`IB_SMP_DATA_SIZE`).
pub(crate) const SMP_DATA: usize = 64;

/// The largest hop count of a directed route (`IB_SMP_MAX_PATH_HOPS`).
pub(crate) const MAX_PATH_HOPS: u8 = 63;

/// MAD_IFC `op_mod` bit: do not check the M_Key (upstream `mlx5_MAD_IFC()`, set for
/// `IB_MAD_IGNORE_MKEY` or a MAD without a receive completion).
pub(crate) const IGNORE_MKEY: u32 = 0x1;
/// MAD_IFC `op_mod` bit: do not check the B_Key.
pub(crate) const IGNORE_BKEY: u32 = 0x2;

/// Why the device answers a MAD with nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// A Set (or a Get under M_Key protection level 2 or 3) with the wrong M_Key: the SMA
    /// drops it and counts an M_Key violation (IBA 14.2.4).
    MkeyViolation,
    /// A directed-route SMP whose path does not end at this port, or a response.
    NotForUs,
}

/// What [`Fw::process_mad`] made of a MAD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MadOutcome {
    /// The output MAD is the response to send.
    Reply,
    /// Handled; nothing to send (a TrapRepress).
    Consumed,
    /// Dropped, without a response.
    Dropped(Dropped),
}

/// Reads a big-endian u16 at `at`.
pub(crate) fn be16(m: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([
        m.get(at).copied().unwrap_or(0),
        m.get(at + 1).copied().unwrap_or(0),
    ])
}

/// Reads a big-endian u32 at `at`.
pub(crate) fn be32(m: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    if let Some(s) = m.get(at..at + 4) {
        b.copy_from_slice(s);
    }
    u32::from_be_bytes(b)
}

/// Reads a big-endian u64 at `at`.
pub(crate) fn be64(m: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = m.get(at..at + 8) {
        b.copy_from_slice(s);
    }
    u64::from_be_bytes(b)
}

/// Writes `v` big-endian at `at` (nothing if it does not fit).
pub(crate) fn put(m: &mut [u8], at: usize, v: &[u8]) {
    if let Some(d) = m.get_mut(at..at + v.len()) {
        d.copy_from_slice(v);
    }
}

/// Turns `m` (a copy of the request) into its GetResp with MAD status `st`; a
/// directed-route SMP's D bit is set (upstream `mlx5_ib_process_mad()` sets it as well).
pub(crate) fn respond(m: &mut MadBytes, st: u16) {
    m[off::METHOD] = method::GET_RESP;
    let d = if m[1] == class::SUBN_DIRECTED_ROUTE {
        status::DIRECTION
    } else {
        0
    };
    put(m, off::STATUS, &(st | d).to_be_bytes());
}

/// The receiving end of a directed-route SMP (IBA 14.2.2, upstream `smi.c`
/// `__smi_handle_dr_smp_recv()` for a CA): whether it is addressed to this port, with the
/// hop pointer advanced as the receiving port does. An outgoing SMP (D bit clear) is for
/// this node when its path ends here: `hop_cnt` 0 (the local port, `hop_ptr` 0), or
/// `hop_ptr == hop_cnt` on arrival (this port records itself in the return path and moves
/// the pointer past it), or `hop_ptr == hop_cnt + 1` (the MAD layer already did). A CA
/// forwards nothing, so any other pointer is not for it; neither is a returning SMP.
fn dr_arrived(m: &mut MadBytes, port: usize) -> bool {
    if be16(m, off::STATUS) & status::DIRECTION != 0 {
        return false;
    }
    let (ptr, cnt) = (m[off::HOP_PTR], m[off::HOP_CNT]);
    if cnt > MAX_PATH_HOPS {
        return false;
    }
    if cnt == 0 {
        return ptr == 0 || ptr == 1;
    }
    if ptr == cnt {
        let at = off::RETURN_PATH + usize::from(ptr);
        if let Some(b) = m.get_mut(at) {
            *b = u8::try_from(port + 1).unwrap_or(0);
        }
        m[off::HOP_PTR] = ptr + 1;
        return true;
    }
    ptr == cnt + 1
}

impl Fw {
    /// The device's MAD handler for a MAD that arrived at (0-based) port `port`: `flags` are
    /// the MAD_IFC `op_mod` bits ([`IGNORE_MKEY`], [`IGNORE_BKEY`]). `out` gets the response
    /// when the outcome is [`MadOutcome::Reply`].
    pub(crate) fn process_mad(
        &mut self,
        port: usize,
        flags: u32,
        inp: &MadBytes,
        out: &mut MadBytes,
    ) -> MadOutcome {
        *out = *inp;
        let cls = inp[1];
        let m = inp[off::METHOD];
        if m & method::RESP != 0 {
            // A response is for the agent that asked, never for the device.
            return MadOutcome::Dropped(Dropped::NotForUs);
        }
        if cls == class::SUBN_DIRECTED_ROUTE && !dr_arrived(out, port) {
            return MadOutcome::Dropped(Dropped::NotForUs);
        }
        match cls {
            class::SUBN_LID_ROUTED | class::SUBN_DIRECTED_ROUTE => self.smp(port, flags, out),
            class::PERF_MGMT => self.pma(port, out),
            _ => {
                respond(out, status::BAD_VERSION);
                MadOutcome::Reply
            }
        }
    }

    /// MAD_IFC (PRM "MAD_IFC"): the 256-byte MAD of the inbox to the port's agents, their
    /// response in `response_mad_packet`. `op_mod` bits 0 and 1 skip the M_Key and B_Key
    /// checks. A MAD the agents drop fails the command with `BAD_PKT_ERR` (the driver then
    /// sends nothing: upstream's `IB_MAD_RESULT_FAILURE`); a TrapRepress completes with an
    /// empty response. An Ethernet port has no SMA: SMPs to it are refused.
    pub(super) fn mad_ifc(&mut self, c: &mut Cmd<'_, MadIfc>) -> Done {
        if c.op_mod & !(IGNORE_MKEY | IGNORE_BKEY) != 0 {
            return fail(Status::BAD_PARAM_ERR, syn::BAD_OP_MOD);
        }
        let port = self.port(c.get(mad_ifc_in::port))?;
        let mut inp = [0u8; MAD_SIZE];
        let src = c.in_bytes(mad_ifc_in::mad);
        if src.len() != MAD_SIZE {
            return fail(Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT);
        }
        inp.copy_from_slice(src);
        let smp = matches!(inp[1], class::SUBN_LID_ROUTED | class::SUBN_DIRECTED_ROUTE);
        if smp && self.cfg.link_layer == LinkLayer::Ethernet {
            return fail(Status::BAD_PARAM_ERR, syn::MAD_NO_SMA);
        }
        let mut out = [0u8; MAD_SIZE];
        let op_mod = c.op_mod;
        match self.process_mad(port, op_mod, &inp, &mut out) {
            MadOutcome::Reply => c.set_bytes(mad_ifc_out::response_mad_packet, &out),
            MadOutcome::Consumed => Ok(()),
            MadOutcome::Dropped(Dropped::MkeyViolation) => {
                Err(CmdError::new(Status::BAD_PKT_ERR, syn::MAD_MKEY))
            }
            MadOutcome::Dropped(Dropped::NotForUs) => {
                Err(CmdError::new(Status::BAD_PKT_ERR, syn::MAD_DROPPED))
            }
        }
    }
}
