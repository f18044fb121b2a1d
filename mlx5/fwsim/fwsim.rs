// SPDX-License-Identifier: GPL-2.0

//! fwsim: a ConnectX firmware model behind the PRM command interface.
//!
//! [`Fw::exec`] takes the same inbox bytes `mlx5_cmd_exec()` would post to a ConnectX command
//! queue and fills the outbox the way the firmware does: `mbox_out.status` and
//! `mbox_out.syndrome` on failure, the command's output layout on success. It keeps the
//! device's resource tables (PD, UAR, transport domain, user context, CQ, QP, mkey) with PRM
//! numbering, per-uid ownership, the QP state machine and the advertised limits, so that a
//! driver bug shows up as the status a real adapter would return. Pure `core`: the kernel side
//! wraps it in a lock, maps statuses with `cmd_status_to_err()` semantics, and exposes
//! [`Fw::counts`] in debugfs. What is modeled and why is in `Documentation/fwsim.md`.

#[path = "cqe.rs"]
pub(crate) mod cqe;
#[path = "dct.rs"]
pub(crate) mod dct;
#[path = "dma.rs"]
pub(crate) mod dma;
#[path = "engine.rs"]
pub(crate) mod engine;
#[path = "events.rs"]
pub(crate) mod events;
#[path = "fault.rs"]
pub(crate) mod fault;
// The kernel simulator is built initialized and never sends the init commands nor creates EQs;
// their caller is the emulated PCI function (host/cxfn).
#[cfg_attr(MODULE, expect(dead_code, reason = "its caller is host/cxfn"))]
#[path = "hca.rs"]
pub(crate) mod hca;
#[path = "mad.rs"]
pub(crate) mod mad;
#[path = "mcg.rs"]
pub(crate) mod mcg;
#[path = "mcmember.rs"]
pub(crate) mod mcmember;
#[path = "memic.rs"]
pub(crate) mod memic;
#[path = "node_desc.rs"]
pub(crate) mod node_desc;
#[path = "objects.rs"]
mod objects;
#[path = "pma.rs"]
pub(crate) mod pma;
#[path = "profile.rs"]
pub(crate) mod profile;
#[path = "qp.rs"]
mod qp;
#[path = "query.rs"]
mod query;
#[path = "ring.rs"]
pub(crate) mod ring;
// No kernel caller yet: the packet transport of issue 38 is to use it; the host tests do.
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "its caller is the uplink transport")
)]
#[path = "roce.rs"]
pub(crate) mod roce;
#[path = "sm.rs"]
pub(crate) mod sm;
#[path = "sma.rs"]
pub(crate) mod sma;
#[path = "spec.rs"]
pub(crate) mod spec;
#[path = "srq.rs"]
pub(crate) mod srq;
#[path = "switch.rs"]
pub(crate) mod switch;
#[path = "syndrome.rs"]
pub(crate) mod syndrome;
#[path = "table.rs"]
pub(crate) mod table;
#[path = "umem.rs"]
mod umem;
#[path = "xlat.rs"]
pub(crate) mod xlat;
#[path = "xrc.rs"]
pub(crate) mod xrc;

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

#[cfg(test)]
#[path = "fuzz_tests.rs"]
mod fuzz_tests;

#[cfg(test)]
#[path = "engine_tests.rs"]
mod engine_tests;

#[cfg(test)]
#[path = "hca_tests.rs"]
mod hca_tests;

#[cfg(test)]
#[path = "upstream_ib_tests.rs"]
mod upstream_ib_tests;

#[cfg(test)]
#[path = "umem_tests.rs"]
mod umem_tests;

#[cfg(test)]
#[path = "ring_tests.rs"]
mod ring_tests;

#[cfg(test)]
#[path = "sma_tests.rs"]
mod sma_tests;

#[cfg(test)]
#[path = "switch_tests.rs"]
mod switch_tests;

use crate::prm::cmd::{mbox_in, mbox_out};
use crate::prm::command::{OpMod, PrmCommand};
use crate::prm::layout::{Buf, BufMut, Field, Member};
use crate::prm::opcode as op;
use crate::prm::status::Status;
use fault::{FaultAction, FaultPlan};
use profile::{LinkLayer, Profile};
use syndrome::CmdError;
use table::ResTable;

/// Simulator capacities. The device advertises the real adapter's `log_max_*` limits, but the
/// model has room for only this many objects of each kind (everything is in fixed arrays, no
/// allocation); past that, creation fails with `NO_RES_ERR` like a device out of ICM memory.
pub(crate) mod capacity {
    /// Protection domains (room for `vm_mlx5_unplug_load`: 100 processes with 4 PDs each).
    pub(crate) const PD: usize = 512;
    /// UAR pages (the contexts' and libmlx5's dynamic ones).
    pub(crate) const UAR: usize = 512;
    /// Transport domains (one per RoCE context).
    pub(crate) const TD: usize = 128;
    /// User contexts (DEVX uids).
    pub(crate) const UCTX: usize = 128;
    /// Completion queues.
    pub(crate) const CQ: usize = 128;
    /// Queue pairs.
    pub(crate) const QP: usize = 128;
    /// Memory keys.
    pub(crate) const MKEY: usize = 256;
    /// Shared receive queues (RMPs).
    pub(crate) const SRQ: usize = 32;
    /// DEVX umems (`log_max_umem` is the adapter's).
    pub(crate) const UMEM: usize = 64;
    /// Q counter sets (`max_qp_cnt`; their ids are 8 bits).
    pub(crate) const Q_COUNTER: usize = 16;
    /// Ports per function. A ConnectX function has one port (a dual-port card is two PCI
    /// functions); two are allowed for multi-port tests.
    pub(crate) const PORTS: usize = 2;
}

/// First object numbers. Never 0 (a zeroed field must not name a live object) and different
/// per kind, so a number of the wrong kind rarely names a live object by accident. QP numbers
/// start above the special QPs 0 and 1; mkey indices start above the special mkeys that
/// QUERY_SPECIAL_CONTEXTS reports.
mod base {
    pub(super) const PD: u32 = 0x1;
    pub(super) const UAR: u32 = 0x1;
    pub(super) const TD: u32 = 0x1;
    /// Q counter set ids: 0 in a QPC counts nowhere.
    pub(super) const Q_COUNTER: u32 = 0x1;
    pub(super) const UCTX: u32 = 0x1;
    pub(super) const CQ: u32 = 0x40;
    pub(super) const QP: u32 = 0x100;
    pub(super) const MKEY: u32 = 0x10;
    pub(super) const RMP: u32 = 0x300;
    pub(super) const UMEM: u32 = 0x20;
}

/// Construction parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// The adapter model.
    pub(crate) profile: Profile,
    /// Link layer of every port.
    pub(crate) link_layer: LinkLayer,
    /// Ports of this function, `1..=capacity::PORTS`.
    pub(crate) num_ports: u8,
    /// Distinguishes simulated devices: it goes into the GUIDs and MAC addresses.
    pub(crate) serial: u32,
    /// On-chip device memory (`cmd_hca_cap.device_memory`, the MEMIC page, ALLOC_MEMIC):
    /// the backend must then give the data path [`memic::SIZE`] bytes at
    /// [`dma::DEV_MEM_BUS`]. The emulated PCI function has no BAR window for it and says no.
    pub(crate) memic: bool,
}

/// Why a [`Config`] was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConfigError {
    /// `num_ports` is 0 or above `capacity::PORTS`.
    Ports,
    /// InfiniBand asked of an Ethernet-only adapter.
    LinkLayer,
}

/// Why [`Fw::exec`] produced no completion at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExecError {
    /// The outbox cannot even hold the 16-byte `mbox_out` header (on hardware the first 16
    /// bytes are part of the command queue entry, so this is a caller bug).
    OutboxTooShort,
    /// An injected timeout: the device never completed the command (the driver's
    /// `mlx5_cmd_exec()` would return `-ETIMEDOUT`). The outbox is left zeroed.
    Timeout,
}

/// A completed command, as reported in the outbox header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Completion {
    /// `mbox_out.status`.
    pub(crate) status: Status,
    /// `mbox_out.syndrome` (0 on success).
    pub(crate) syndrome: u32,
    /// Microseconds the caller should wait before reporting completion (the delay knob).
    pub(crate) delay_us: u32,
}

/// Live objects per kind, and command statistics, for debugfs and for leak checks in tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Protection domains.
    pub(crate) pd: usize,
    /// UAR pages.
    pub(crate) uar: usize,
    /// Transport domains.
    pub(crate) td: usize,
    /// User contexts.
    pub(crate) uctx: usize,
    /// Completion queues.
    pub(crate) cq: usize,
    /// Queue pairs.
    pub(crate) qp: usize,
    /// Memory keys.
    pub(crate) mkey: usize,
    /// Shared receive queues (RMPs).
    pub(crate) srq: usize,
    /// XRC domains and XRC SRQs (`xrc.rs`; debugfs `resources` line `xrc`).
    pub(crate) xrc: usize,
    /// DEVX umems (`umem.rs`).
    pub(crate) umem: usize,
    /// On-chip memory allocations (`memic.rs`).
    pub(crate) memic: usize,
}

impl Counts {
    /// True when no object of any kind is alive.
    pub(crate) fn is_zero(&self) -> bool {
        *self == Counts::default()
    }
}

/// Command statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    /// Commands passed to [`Fw::exec`].
    pub(crate) commands: u64,
    /// Commands completed with a status other than OK (injected ones included).
    pub(crate) failed: u64,
    /// Commands failed or timed out by fault injection.
    pub(crate) injected: u64,
}

/// A PD, UAR or transport domain: only its owner matters.
#[derive(Clone, Copy, Debug)]
struct Owned {
    uid: u16,
}

/// The counters of a Q counter set that the data path moves (upstream mlx5_ib's
/// `basic_q_cnts`, `out_of_seq_q_cnts`, `retrans_q_cnts` and the remote access errors of
/// `extended_err_cnts`); QUERY_Q_COUNTER answers 0 for the others. The transport counters
/// move only in RC in packets (`engine/rc.rs`): the engine's direct moves lose nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub(crate) enum QCnt {
    /// `rx_write_requests`: RDMA WRITEs a responder QP of the set accepted.
    RxWrite,
    /// `rx_read_requests`: RDMA READs a responder QP of the set served.
    RxRead,
    /// `rx_atomic_requests`: atomics a responder QP of the set executed.
    RxAtomic,
    /// `out_of_buffer`: messages that found no receive WQE (RNR NAK or UD drop).
    OutOfBuffer,
    /// `req_remote_access_errors`: requests of the set's QPs the responder refused with a
    /// remote access error.
    ReqRemoteAccess,
    /// `resp_remote_access_errors`: requests a responder QP of the set refused so.
    RespRemoteAccess,
    /// `out_of_sequence`: requests a responder QP of the set received past the expected PSN
    /// (answered by a PSN sequence error NAK).
    OutOfSequence,
    /// `duplicate_request`: requests a responder QP of the set received before the expected
    /// PSN (acknowledged or answered again, never executed twice).
    DuplicateRequest,
    /// `rnr_nak_retry_err`: RNR NAKs a requester QP of the set received and retried after.
    RnrNak,
    /// `packet_seq_err`: PSN sequence error NAKs a requester QP of the set received.
    PacketSeqErr,
    /// `implied_nak_seq_err`: responses a requester QP of the set received past the one it
    /// expected for a READ or atomic (the responses between lost: sent again from there).
    ImpliedNak,
    /// `local_ack_timeout_err`: ACK timer expiries of a requester QP of the set that sent
    /// its window again (the retry count not spent).
    LocalAckTimeout,
}

/// Number of [`QCnt`] values.
const QCNT_N: usize = 12;

/// A Q counter set (ALLOC_Q_COUNTER).
#[derive(Clone, Copy, Debug)]
struct QCounter {
    uid: u16,
    v: [u32; QCNT_N],
}

/// A user context (DEVX uid).
#[derive(Clone, Copy, Debug)]
struct Uctx {
    cap: u32,
}

/// Bytes of a stored `cqc`.
const CQC_BYTES: usize = crate::prm::ctx::cqc::SIZE_BYTES;
/// Bytes of a stored `qpc`.
const QPC_BYTES: usize = crate::prm::ctx::qpc::SIZE_BYTES;
/// Bytes of a stored `mkc`.
const MKC_BYTES: usize = crate::prm::ctx::mkc::SIZE_BYTES;

/// A completion queue: its context as created (and modified), and its data-path state.
#[derive(Clone, Copy, Debug)]
struct Cq {
    uid: u16,
    uar: u32,
    cqc: [u8; CQC_BYTES],
    q: cqe::CqState,
    /// The umems of a DEVX CQ's buffer and doorbell record (0: none).
    umems: [u32; 2],
}

/// A queue pair: its context as the transitions left it.
#[derive(Clone, Copy, Debug)]
struct Qp {
    uid: u16,
    state: u32,
    pd: u32,
    uar: u32,
    send_cq: Option<u32>,
    recv_cq: Option<u32>,
    qpc: [u8; QPC_BYTES],
    q: engine::QpState,
    /// RC in packets: the transport's state (`engine/rc.rs`); outside `q`, which every
    /// engine step copies.
    rc: engine::RcWire,
    /// The umems of a DEVX QP's work queue buffer and doorbell record (0: none).
    umems: [u32; 2],
    /// A DC target's context: the entry is a DCT, not a QP (`dct.rs`).
    dct: Option<dct::Dct>,
}

/// Bytes of a stored `rmpc`.
const RMPC_BYTES: usize = crate::prm::ctx::rmpc::SIZE_BYTES;

/// A receive memory pool (the SRQ object of ISSI 1): its context as created, and the linked
/// list the data path consumes.
#[derive(Clone, Copy, Debug)]
struct Rmp {
    uid: u16,
    pd: u32,
    rmpc: [u8; RMPC_BYTES],
    q: srq::SrqState,
    /// The umems of a DEVX RMP's buffer and doorbell record (0: none).
    umems: [u32; 2],
}

/// A memory key: its context as created, and what the data path checks and translates.
#[derive(Clone, Copy, Debug)]
struct Mkey {
    uid: u16,
    pd: u32,
    mkc: [u8; MKC_BYTES],
    info: xlat::MkeyInfo,
    /// A memory window (`free`, `umr_en`, KLM access mode at CREATE_MKEY): its binding.
    win: Option<xlat::Window>,
}

table::owner_is_uid!(Owned, Cq, Qp, Rmp, Mkey);

/// One RoCE address table entry (SET_ROCE_ADDRESS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RoceAddr {
    /// `source_l3_address`: the GID.
    pub(crate) gid: [u8; 16],
    /// Source MAC.
    pub(crate) mac: [u8; 6],
    /// `vlan_valid` and `vlan_id`.
    pub(crate) vlan: Option<u16>,
    /// `roce_version` (`MLX5_ROCE_VERSION_1`/`_2`).
    pub(crate) version: u8,
    /// `roce_l3_type` (0 IPv4, 1 IPv6).
    pub(crate) l3_type: u8,
}

/// Size of the modeled RoCE address table; matches `roce_cap.roce_address_table_size`.
const ROCE_GIDS: usize = 256;

/// Per-port state that registers can change.
#[derive(Clone, Copy, Debug)]
struct Port {
    /// PAOS admin status: 1 up, 2 down.
    admin_status: u32,
    /// PMTU admin MTU in bytes.
    admin_mtu: u32,
    roce: [Option<RoceAddr>; ROCE_GIDS],
    /// The subnet management agent's state of the port (`sma.rs`).
    sma: sma::PortSma,
    /// What the data path moved through the port (`pma.rs`).
    traffic: pma::Traffic,
}

/// The simulated device.
///
/// About 230 KiB: the kernel side must build it in place (a zeroing allocation plus
/// [`Fw::reset`] reinitializes it without moving), not on the stack.
pub(crate) struct Fw {
    cfg: Config,
    pds: ResTable<Owned, { capacity::PD }>,
    uars: ResTable<Owned, { capacity::UAR }>,
    tds: ResTable<Owned, { capacity::TD }>,
    uctxs: ResTable<Uctx, { capacity::UCTX }>,
    cqs: ResTable<Cq, { capacity::CQ }>,
    qps: ResTable<Qp, { capacity::QP }>,
    mkeys: ResTable<Mkey, { capacity::MKEY }>,
    rmps: ResTable<Rmp, { capacity::SRQ }>,
    qcounters: ResTable<QCounter, { capacity::Q_COUNTER }>,
    umems: ResTable<umem::Umem, { capacity::UMEM }>,
    ports: [Port; capacity::PORTS],
    faults: FaultPlan,
    stats: Stats,
    /// Data-path events for the kernel side ([`Fw::next_event`]).
    events: events::EventQueue,
    /// The QP a send doorbell named last ([`Fw::sq_doorbell`]).
    sq_hint: Option<u32>,
    /// A MODIFY_CQ resize whose RESIZE CQE is still to be written: the CQ and its new buffer
    /// ([`Fw::complete_commands`]).
    resize: Option<(u32, cqe::CqState)>,
    /// A QP the last command moved to ERR: [`Fw::complete_commands`] flushes it.
    flush: Option<u32>,
    /// A QP the last command moved from RTR to RTS, and whether it is the function's first QP
    /// a pass serves ([`Fw::has_served_qp`]): [`Fw::complete_commands`] tells whether the
    /// worker must look (its first served QP starts its rescans; WQEs posted before RTS are
    /// executed by its pass).
    started: Option<(u32, bool)>,
    /// The QP slot the next [`engine::run`] pass starts at (fairness under a budget).
    scan_start: usize,
    /// Life cycle, negotiated settings and EQs (`hca.rs`).
    hca: hca::Hca,
    /// XRC domains and XRC SRQs (`xrc.rs`).
    xrc: xrc::Xrc,
    /// On-chip memory allocations (`memic.rs`).
    memic: memic::Memic,
    /// Multicast group attachments (`mcg.rs`).
    mcg: mcg::Mcg,
    /// RoCE v2 packets the data path queued for the wire (`engine/wire.rs`).
    wire_tx: engine::WireTx,
}

/// The decoded common header of a command, plus its mailboxes, before the command's row is
/// known: [`RawCmd::typed`] turns it into the [`Cmd`] of one command.
struct RawCmd<'a> {
    inbox: &'a [u8],
    out: &'a mut [u8],
    uid: u16,
    op_mod: u32,
    mem: Option<&'a dyn dma::DmaMem>,
}

impl<'a> RawCmd<'a> {
    /// The mailboxes as command `C`'s layouts. The decoder checked both lengths against the
    /// row ([`crate::prm::command::spec`]), so this cannot fail in practice.
    fn typed<C: PrmCommand>(self) -> Result<Cmd<'a, C>, CmdError> {
        Ok(Cmd {
            inbox: Buf::new(self.inbox)
                .map_err(|_| CmdError::new(Status::BAD_INP_LEN_ERR, syndrome::INBOX_SHORT))?,
            out: BufMut::new(self.out)
                .map_err(|_| CmdError::new(Status::BAD_OUTP_LEN_ERR, syndrome::OUTBOX_SHORT))?,
            uid: self.uid,
            op_mod: self.op_mod,
            mem: self.mem,
            _cmd: core::marker::PhantomData,
        })
    }
}

/// One command as its simulator method sees it: the inbox typed by the row's `*_in` layout,
/// the outbox by its `*_out` layout (so a method can only read members of its own inbox and
/// write members of its own outbox), and the header's `uid` and `op_mod`.
struct Cmd<'a, C: PrmCommand> {
    inbox: Buf<'a, C::In>,
    out: BufMut<'a, C::Out>,
    uid: u16,
    op_mod: u32,
    /// The host memory the device reads while executing the command (doorbell records), when
    /// the caller gives it ([`Fw::exec_with_mem`]).
    mem: Option<&'a dyn dma::DmaMem>,
    _cmd: core::marker::PhantomData<C>,
}

/// An outbox write that did not fit: the outbox is too short for a trailing array, or (a
/// simulator bug) a value is wider than its member.
const OUT_SHORT: CmdError = CmdError::new(Status::BAD_OUTP_LEN_ERR, syndrome::OUTBOX_SHORT);
impl<C: PrmCommand> Cmd<'_, C> {
    /// `MLX5_GET` on the inbox (its fixed part was length-checked before the method runs).
    fn get(&self, m: Member<C::In>) -> u32 {
        self.inbox.get(m)
    }

    /// A byte range of the inbox (a context or an address).
    fn in_bytes(&self, m: Member<C::In>) -> &[u8] {
        self.inbox.bytes(m)
    }

    /// Refuses a command about another function or vport (`other_function`, `other_vport`,
    /// a `function_id`: any of `members` non-zero): a function here has no others to manage.
    fn own_function(&self, members: &[Member<C::In>]) -> Done {
        if members.iter().any(|m| self.get(*m) != 0) {
            return fail(Status::BAD_PARAM_ERR, syndrome::OTHER_FUNCTION);
        }
        Ok(())
    }

    /// `MLX5_SET` on the outbox.
    fn set(&mut self, m: Member<C::Out>, v: u32) -> Result<(), CmdError> {
        self.out.set(m, v).map_err(|_| OUT_SHORT)
    }

    /// `MLX5_SET64` on the outbox.
    fn set64(&mut self, m: Member<C::Out>, v: u64) -> Result<(), CmdError> {
        self.out.set64(m, v).map_err(|_| OUT_SHORT)
    }

    /// Copies `src` to a byte range of the outbox.
    fn set_bytes(&mut self, m: Member<C::Out>, src: &[u8]) -> Result<(), CmdError> {
        self.out.set_bytes(m, src).map_err(|_| OUT_SHORT)
    }

    /// `MLX5_SET` of an entry of a trailing array of the outbox.
    fn set_tail(&mut self, f: Field, v: u32) -> Result<(), CmdError> {
        f.set(self.out.raw_mut(), v).map_err(|_| OUT_SHORT)
    }

    /// Copies `src` to an entry of a trailing array of the outbox.
    fn set_tail_bytes(&mut self, f: Field, src: &[u8]) -> Result<(), CmdError> {
        f.set_bytes(self.out.raw_mut(), src).map_err(|_| OUT_SHORT)
    }

    /// The whole inbox, fixed part and trailing arrays (`pas[]`, MTT entries).
    fn inbox_raw(&self) -> &[u8] {
        self.inbox.raw()
    }

    /// Checks that the inbox holds a trailing array of `n` entries of `entry` bytes after its
    /// fixed part (the MTT entries of CREATE_MKEY and CREATE_UMEM).
    fn tail_fits(&self, n: u64, entry: usize) -> Done {
        let needed = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(entry))
            .and_then(|b| b.checked_add(<C::In as crate::prm::layout::PrmLayout>::SIZE_BYTES));
        if !matches!(needed, Some(b) if self.inbox_raw().len() >= b) {
            return fail(Status::BAD_INP_LEN_ERR, syndrome::INBOX_SHORT);
        }
        Ok(())
    }

    /// Length of the outbox, fixed part and room for trailing arrays.
    fn out_len(&self) -> usize {
        self.out.len()
    }
}

/// What a command's method returns: `Ok` (the outbox is filled) or the status and syndrome.
type Done = Result<(), CmdError>;

/// Shorthand for a failed check.
fn fail<T>(status: Status, syndrome: u32) -> Result<T, CmdError> {
    Err(CmdError::new(status, syndrome))
}

/// The dispatch, generated from the command table (`prm_commands!`): each opcode runs the
/// method its row names, with a [`Cmd`] typed by the row's layouts.
macro_rules! fw_dispatch {
    ($($ty:ident: $op:ident = $val:literal, $in:ident => $out:ident, $rule:ident, $method:ident;)*) => {
        impl Fw {
            fn dispatch(&mut self, opcode: u16, c: RawCmd<'_>) -> Result<(), CmdError> {
                match opcode {
                    $($val => self.$method(&mut c.typed::<crate::prm::command::$ty>()?),)*
                    _ => fail(Status::BAD_OP_ERR, syndrome::BAD_OPCODE),
                }
            }
        }
    };
}

crate::prm::command::prm_commands!(fw_dispatch);

const EMPTY_PORT: Port = Port {
    admin_status: 1,
    admin_mtu: 0,
    roce: [None; ROCE_GIDS],
    sma: sma::PortSma::new(),
    traffic: pma::Traffic::ZERO,
};

impl Fw {
    /// A powered-on device with empty tables.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] if the port count or the link layer does not fit the profile.
    // Host only: returns 230 KiB by value. The kernel uses `Fw::new_in_place`.
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    pub(crate) fn new(cfg: Config) -> Result<Self, ConfigError> {
        Self::check(&cfg)?;
        let mut fw = Fw {
            cfg,
            pds: ResTable::new(base::PD),
            uars: ResTable::new(base::UAR),
            tds: ResTable::new(base::TD),
            uctxs: ResTable::new(base::UCTX),
            cqs: ResTable::new(base::CQ),
            qps: ResTable::new(base::QP),
            mkeys: ResTable::new(base::MKEY),
            rmps: ResTable::new(base::RMP),
            qcounters: ResTable::new(base::Q_COUNTER),
            umems: ResTable::new(base::UMEM),
            ports: [EMPTY_PORT; capacity::PORTS],
            faults: FaultPlan::new(),
            stats: Stats::default(),
            events: events::EventQueue::new(),
            sq_hint: None,
            resize: None,
            flush: None,
            started: None,
            scan_start: 0,
            hca: hca::Hca::new(),
            xrc: xrc::Xrc::new(),
            memic: memic::Memic::new(),
            mcg: mcg::Mcg::new(),
            wire_tx: engine::WireTx::new(),
        };
        fw.reset_ports();
        Ok(fw)
    }

    /// The kernel's constructor: an initializer that builds the device in place (in a `KVBox`),
    /// because `Fw` is about 230 KiB and [`Fw::new`] returns it by value, which only a host
    /// thread's stack can take. Same result as [`Fw::new`].
    ///
    /// # Errors
    ///
    /// [`ConfigError`] as for [`Fw::new`], before anything is initialized.
    #[cfg(MODULE)]
    pub(crate) fn new_in_place(cfg: Config) -> Result<impl pin_init::Init<Self>, ConfigError> {
        Self::check(&cfg)?;
        let port = || {
            pin_init::init!(Port {
                admin_status: EMPTY_PORT.admin_status,
                admin_mtu: 0,
                roce <- pin_init::init_array_from_fn(|_| None),
                sma: sma::PortSma::new(),
                traffic: pma::Traffic::ZERO,
            })
        };
        let fw = pin_init::init!(Fw {
            cfg,
            pds <- ResTable::new_in_place(base::PD),
            uars <- ResTable::new_in_place(base::UAR),
            tds <- ResTable::new_in_place(base::TD),
            uctxs <- ResTable::new_in_place(base::UCTX),
            cqs <- ResTable::new_in_place(base::CQ),
            qps <- ResTable::new_in_place(base::QP),
            mkeys <- ResTable::new_in_place(base::MKEY),
            qcounters <- ResTable::new_in_place(base::Q_COUNTER),
            rmps <- ResTable::new_in_place(base::RMP),
            umems <- ResTable::new_in_place(base::UMEM),
            ports <- pin_init::init_array_from_fn(|_| port()),
            faults: FaultPlan::new(),
            stats: Stats::default(),
            events: events::EventQueue::new(),
            sq_hint: None,
            resize: None,
            flush: None,
            started: None,
            scan_start: 0,
            hca <- hca::Hca::new_in_place(),
            xrc <- xrc::Xrc::new_in_place(),
            memic: memic::Memic::new(),
            mcg: mcg::Mcg::new(),
            wire_tx <- engine::WireTx::new_in_place(),
        });
        Ok(pin_init::Init::chain(fw, |fw| {
            fw.reset_ports();
            Ok(())
        }))
    }

    fn check(cfg: &Config) -> Result<(), ConfigError> {
        if cfg.num_ports == 0 || usize::from(cfg.num_ports) > capacity::PORTS {
            return Err(ConfigError::Ports);
        }
        if cfg.link_layer == LinkLayer::Ib && !cfg.profile.supports_ib {
            return Err(ConfigError::LinkLayer);
        }
        Ok(())
    }

    fn reset_ports(&mut self) {
        let mtu = self.max_mtu();
        let default_mtu = match self.cfg.link_layer {
            LinkLayer::Ib => mtu,
            // 1500 bytes of payload plus the 22 bytes of L2 overhead mlx5e adds
            // (MLX5E_SW2HW_MTU: ETH_HLEN + VLAN_HLEN + ETH_FCS_LEN).
            LinkLayer::Ethernet => 1522,
        };
        // Member by member: a whole `Port` is about 7 KiB, which must not pass through a kernel
        // stack as a temporary.
        let ib = self.cfg.link_layer == LinkLayer::Ib;
        for p in self.ports.iter_mut() {
            p.admin_status = EMPTY_PORT.admin_status;
            p.admin_mtu = default_mtu;
            p.roce.fill(None);
            // The link comes up: the port is INIT until a subnet manager configures it.
            p.sma = sma::PortSma::new();
            p.sma.link(ib && p.admin_status == 1);
            p.sma.events = 0;
            p.traffic = pma::Traffic::ZERO;
        }
    }

    /// Reinitializes the device in place with a new configuration (like a firmware reset):
    /// every object is gone, faults and statistics are cleared.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] as for [`Fw::new`]; the device is then left unchanged.
    // A firmware reset; no kernel caller until the driver models device recovery.
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    pub(crate) fn reset(&mut self, cfg: Config) -> Result<(), ConfigError> {
        Self::check(&cfg)?;
        self.cfg = cfg;
        self.clear_objects();
        self.faults = FaultPlan::new();
        self.stats = Stats::default();
        self.hca.reset(hca::Lifecycle::Initialized);
        Ok(())
    }

    /// The configuration the device was built with.
    pub(crate) fn config(&self) -> &Config {
        &self.cfg
    }

    /// Q counter sets allocated (debugfs `qcounters`).
    #[cfg_attr(not(MODULE), expect(dead_code))]
    pub(crate) fn q_counter_sets(&self) -> usize {
        self.qcounters.count()
    }

    /// Live objects per kind.
    /// The multicast group attachments (`mcg.rs`).
    pub(crate) fn mcg_attached(&self) -> usize {
        self.mcg.count()
    }

    pub(crate) fn counts(&self) -> Counts {
        Counts {
            pd: self.pds.count(),
            uar: self.uars.count(),
            td: self.tds.count(),
            uctx: self.uctxs.count(),
            cq: self.cqs.count(),
            qp: self.qps.count(),
            mkey: self.mkeys.count(),
            srq: self.rmps.count(),
            xrc: self.xrc.count(),
            umem: self.umems.count(),
            memic: self.memic.count(),
        }
    }

    /// The uid that allocated UAR `index`, or `None` if no such UAR is allocated (the kernel
    /// side backs each live UAR with a page user space can map).
    pub(crate) fn uar_owner(&self, index: u32) -> Option<u16> {
        self.uars.get(index).map(|o| o.uid)
    }

    /// Sets port `port`'s (1-based) administrative state, PAOS `admin_status` 1 (up) or 2
    /// (down), as a PAOS write would: the vport context's port state and the data path
    /// follow it. `false` for a port the function does not have.
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    pub(crate) fn set_port_up(&mut self, port: u8, up: bool) -> bool {
        if u32::from(port) > u32::from(self.cfg.num_ports) {
            return false;
        }
        let Some(p) = usize::from(port)
            .checked_sub(1)
            .and_then(|i| self.ports.get_mut(i))
        else {
            return false;
        };
        p.admin_status = if up { 1 } else { 2 };
        if self.cfg.link_layer == LinkLayer::Ib {
            p.sma.link(up);
        }
        true
    }

    /// Whether port `port` (1-based) is administratively up (PAOS `admin_status` 1); `false`
    /// for a port the function does not have.
    pub(crate) fn port_admin_up(&self, port: u8) -> bool {
        u32::from(port) <= u32::from(self.cfg.num_ports)
            && usize::from(port)
                .checked_sub(1)
                .and_then(|i| self.ports.get(i))
                .is_some_and(|p| p.admin_status == 1)
    }

    /// Command statistics.
    pub(crate) fn stats(&self) -> Stats {
        self.stats
    }

    /// The fault-injection knobs.
    pub(crate) fn faults_mut(&mut self) -> &mut FaultPlan {
        &mut self.faults
    }

    /// The capability bits a live user context was created with (`uctx.cap`).
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    pub(crate) fn uctx_cap(&self, uid: u16) -> Option<u32> {
        self.uctxs.get(u32::from(uid)).map(|u| u.cap)
    }

    /// A RoCE address table entry, as SET_ROCE_ADDRESS left it (`port` is 1-based).
    pub(crate) fn roce_addr(&self, port: u8, index: usize) -> Option<RoceAddr> {
        let p = self.ports.get(usize::from(port).checked_sub(1)?)?;
        *p.roce.get(index)?
    }

    /// Executes one command: decodes `inbox` as a ConnectX would and writes the whole `outbox`
    /// (zeroed first, then the header and, on success, the command's output).
    ///
    /// # Errors
    ///
    /// [`ExecError`] when there is no completion to report; every command failure is a
    /// [`Completion`] with a non-OK status instead.
    pub(crate) fn exec(
        &mut self,
        inbox: &[u8],
        outbox: &mut [u8],
    ) -> Result<Completion, ExecError> {
        self.exec_in(inbox, outbox, None)
    }

    /// [`Fw::exec`] with the host memory the command may read (a CQ's doorbell record for a
    /// resize: the consumer index says how many CQEs the CQ still holds).
    ///
    /// # Errors
    ///
    /// As [`Fw::exec`].
    pub(crate) fn exec_with_mem(
        &mut self,
        inbox: &[u8],
        outbox: &mut [u8],
        mem: &dyn dma::DmaMem,
    ) -> Result<Completion, ExecError> {
        self.exec_in(inbox, outbox, Some(mem))
    }

    fn exec_in(
        &mut self,
        inbox: &[u8],
        outbox: &mut [u8],
        mem: Option<&dyn dma::DmaMem>,
    ) -> Result<Completion, ExecError> {
        if outbox.len() < mbox_out::SIZE_BYTES {
            return Err(ExecError::OutboxTooShort);
        }
        outbox.fill(0);
        self.stats.commands = self.stats.commands.saturating_add(1);
        let delay_us = self.faults.delay_us;

        let result = self.decode(inbox, outbox, mem);
        let err = match result {
            Ok(()) => None,
            Err(Decoded::Failed(e)) => Some(e),
            Err(Decoded::Injected(FaultAction::Fail { status, syndrome })) => {
                self.stats.injected = self.stats.injected.saturating_add(1);
                Some(CmdError::new(status, syndrome))
            }
            Err(Decoded::Injected(FaultAction::Timeout)) => {
                self.stats.injected = self.stats.injected.saturating_add(1);
                outbox.fill(0);
                return Err(ExecError::Timeout);
            }
        };
        let e = match err {
            None => {
                return Ok(Completion {
                    status: Status::OK,
                    syndrome: 0,
                    delay_us,
                })
            }
            Some(e) => e,
        };
        self.stats.failed = self.stats.failed.saturating_add(1);
        // A failed command's outbox carries only the header, like the firmware's.
        outbox.fill(0);
        // The outbox holds at least the header (checked above), so this cannot fail; if it
        // did, reporting no completion is safer than an outbox that reads as success.
        if mbox_out::status.set(outbox, u32::from(e.status.0)).is_err()
            || mbox_out::syndrome.set(outbox, e.syndrome).is_err()
        {
            return Err(ExecError::OutboxTooShort);
        }
        Ok(Completion {
            status: e.status,
            syndrome: e.syndrome,
            delay_us,
        })
    }

    /// Header decoding, fault injection, length checks and dispatch.
    fn decode(
        &mut self,
        inbox: &[u8],
        outbox: &mut [u8],
        mem: Option<&dyn dma::DmaMem>,
    ) -> Result<(), Decoded> {
        if inbox.len() < mbox_in::SIZE_BYTES {
            return Err(Decoded::Failed(CmdError::new(
                Status::BAD_INP_LEN_ERR,
                syndrome::INBOX_HEADER_SHORT,
            )));
        }
        let hdr = |f: Member<mbox_in::Bits>| {
            f.get(inbox).map_err(|_| {
                Decoded::Failed(CmdError::new(
                    Status::BAD_INP_LEN_ERR,
                    syndrome::INBOX_HEADER_SHORT,
                ))
            })
        };
        let opcode = u16::try_from(hdr(mbox_in::opcode)?).unwrap_or(u16::MAX);
        let uid = u16::try_from(hdr(mbox_in::uid)?).unwrap_or(u16::MAX);
        let op_mod = hdr(mbox_in::op_mod)?;

        if let Some(action) = self.faults.check(opcode) {
            return Err(Decoded::Injected(action));
        }
        let Some(spec) = crate::prm::command::spec(opcode) else {
            return Err(Decoded::Failed(CmdError::new(
                Status::BAD_OP_ERR,
                syndrome::BAD_OPCODE,
            )));
        };
        if inbox.len() < spec.in_bytes() {
            return Err(Decoded::Failed(CmdError::new(
                Status::BAD_INP_LEN_ERR,
                syndrome::INBOX_SHORT,
            )));
        }
        if outbox.len() < spec.out_bytes() {
            return Err(Decoded::Failed(CmdError::new(
                Status::BAD_OUTP_LEN_ERR,
                syndrome::OUTBOX_SHORT,
            )));
        }
        // Before INIT_HCA only the init commands are accepted (`hca.rs`).
        if let Some(e) = self.state_check(opcode) {
            return Err(Decoded::Failed(e));
        }
        // Every command but CREATE_UCTX runs on behalf of a uid, which must be live; DESTROY_UCTX
        // names its uid in the body and is issued by the kernel (uid 0). Completion EQs are
        // created with the shared-resource uid (`create_map_eq()`), and so are upstream
        // mlx5_ib's Q counter sets on a function with user contexts
        // (`mlx5_ib_alloc_counters()`: `is_shared`, `log_max_uctx` != 0).
        let shared = matches!(opcode, op::CREATE_EQ | op::ALLOC_Q_COUNTER)
            && uid == crate::prm::consts::SHARED_RESOURCE_UID;
        if uid != 0 && !shared && self.uctxs.get(u32::from(uid)).is_none() {
            return Err(Decoded::Failed(CmdError::new(
                Status::BAD_PARAM_ERR,
                syndrome::UID_UNKNOWN,
            )));
        }
        // A reserved op_mod (the row says `zero`) is refused before the method runs.
        if spec.op_mod == OpMod::Zero && op_mod != 0 {
            return Err(Decoded::Failed(CmdError::new(
                Status::BAD_PARAM_ERR,
                syndrome::BAD_OP_MOD,
            )));
        }
        let cmd = RawCmd {
            inbox,
            out: outbox,
            uid,
            op_mod,
            mem,
        };
        self.dispatch(opcode, cmd).map_err(Decoded::Failed)
    }

    /// Checks that an object owned by `owner` may be used by a command from `uid`. Objects of
    /// the kernel (uid 0) may be used by the kernel only; the kernel may use any object (it
    /// tears user objects down when a context dies).
    fn owned(uid: u16, owner: u16) -> Result<(), CmdError> {
        if uid != 0 && uid != owner {
            return fail(Status::BAD_RES_ERR, syndrome::UID_MISMATCH);
        }
        Ok(())
    }

    /// The port's MTU ceiling in bytes (PMTU `max_mtu`).
    fn max_mtu(&self) -> u32 {
        match self.cfg.link_layer {
            LinkLayer::Ib => 4096,
            // The largest hardware MTU mlx5e accepts on ConnectX-6/7 (9978 + L2 overhead).
            LinkLayer::Ethernet => 10000,
        }
    }

    /// Checks a 1-based port number.
    fn port(&self, port: u32) -> Result<usize, CmdError> {
        let idx = usize::try_from(port)
            .ok()
            .and_then(|p| p.checked_sub(1))
            .filter(|&i| i < usize::from(self.cfg.num_ports));
        idx.ok_or(CmdError::new(Status::BAD_PARAM_ERR, syndrome::BAD_PORT))
    }

    /// Node GUID: NVIDIA OUI 0c:42:a1, `03` as ConnectX node GUIDs have, then the serial.
    /// It is also the system image GUID (NIC and HCA vport contexts).
    pub(crate) fn node_guid(&self) -> u64 {
        0x0c42_a103_0000_0000 | (u64::from(self.cfg.serial & 0x00ff_ffff) << 8)
    }

    /// Port GUID (1-based port): the node GUID plus the port's offset.
    fn port_guid(&self, port: usize) -> u64 {
        self.node_guid() | u64::try_from(port).unwrap_or(0)
    }

    /// Permanent MAC of a (0-based) port: OUI 0c:42:a1, then serial and port.
    fn mac(&self, port: usize) -> u64 {
        let low =
            (u64::from(self.cfg.serial & 0xffff) << 8) | (u64::try_from(port).unwrap_or(0) & 0xff);
        0x0c42_a100_0000 | low
    }
}

/// Outcome of decoding before the outbox is finalized.
enum Decoded {
    /// A check failed.
    Failed(CmdError),
    /// Fault injection took the command.
    Injected(FaultAction),
}
