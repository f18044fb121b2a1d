// SPDX-License-Identifier: GPL-2.0

//! The simulated InfiniBand switch of a fabric: its ports, its subnet management agent and
//! how it forwards.
//!
//! What is modeled: one switch per InfiniBand fabric, no multi-switch topologies. Its
//! external ports 1..N are linked to the functions' InfiniBand ports in fabric order
//! (function 0's port 1 at switch port 1, ...); port 0 is its management port, which holds
//! the switch's LID and where its SMA (and the embedded subnet manager, `sm.rs`) sit. The
//! SMA answers SMPs (IBA 14.2.5) to the switch: NodeInfo (a switch, NodeType 2),
//! NodeDescription, SwitchInfo, LinearForwardingTable (Get and Set, 64 LIDs a block, up to
//! [`LFT_CAP`] LIDs), MulticastForwardingTable (Get and Set, 32 MLIDs a block and 16 ports a
//! position, [`MFT_CAP`] MLIDs from 0xC000), PortInfo of every port (port 0 holds the LID,
//! LMC, SM LID, SM SL and SubnetTimeOut; an external port's state follows its peer's link
//! and the SM's Sets), a
//! P_KeyTable of the default partition, Mellanox's MLNXExtendedPortInfo (no FDR10), and SMInfo
//! Get while the embedded SM runs (MASTER). No M_Key is checked (the switch's M_Key is 0), no
//! random forwarding table, no MulticastFDBTop, no SL-to-VL or VL arbitration table, no traps.
//!
//! Forwarding: [`Switch::route_lid`] gives the out port of a LID-routed packet by the linear
//! forwarding table (an unprogrammed LID, or one above LinearFDBTop, is dropped, as hardware
//! does); [`Switch::route_mlid`] gives the out ports of a packet to a multicast LID by the
//! multicast forwarding table (an unprogrammed MLID is dropped); [`Switch::dr_forward`]
//! moves a directed-route SMP through the switch with IBA 14.2.2's hop pointer rules (the
//! initial path outbound, the return path recorded on the way out and followed back, the D
//! bit), the switch-side mirror of upstream `smi.c`.

use super::mad::{self, be16, be32, class, off, put, status, MadBytes, MadOutcome};
use super::mcmember::McGroups;
pub(crate) use super::mcmember::MLID_BASE;
use super::sma::{attr, port_state};

/// The largest number of external ports.
pub(crate) const MAX_PORTS: usize = 36;

/// LinearFDBCap: how many LIDs the linear forwarding table holds (a multiple of 64).
pub(crate) const LFT_CAP: usize = 0x4400;

/// LIDs per LinearForwardingTable block.
pub(crate) const LFT_BLOCK: usize = 64;

/// MulticastFDBCap: how many MLIDs the multicast forwarding table holds, from
/// [`MLID_BASE`] (a multiple of [`MFT_BLOCK`]).
pub(crate) const MFT_CAP: usize = 256;

/// MLIDs per MulticastForwardingTable block.
pub(crate) const MFT_BLOCK: usize = 32;

/// Port mask words of an MFT entry (16 ports each: ports 0..=[`MAX_PORTS`]).
pub(crate) const MFT_POSITIONS: usize = MAX_PORTS / 16 + 1;

// Every group of the SA has an entry.
const _: () = assert!(super::mcmember::MAX_GROUPS <= MFT_CAP);

/// An LFT entry for no port: the packet is dropped.
pub(crate) const NO_PORT: u8 = 0xff;

/// The permissive LID.
pub(crate) const PERMISSIVE_LID: u16 = 0xffff;

/// Entries of the P_Key table (PartitionEnforcementCap).
const PKEYS: usize = 32;

/// SwitchInfo (IBA 14.2.5.4).
pub(crate) const ATTR_SWITCH_INFO: u16 = 0x0012;
/// LinearForwardingTable (IBA 14.2.5.10).
pub(crate) const ATTR_LFT: u16 = 0x0019;
/// MulticastForwardingTable (IBA 14.2.5.12).
pub(crate) const ATTR_MFT: u16 = 0x001b;
/// SMInfo (IBA 14.2.5.13).
pub(crate) const ATTR_SM_INFO: u16 = 0x0020;
/// MLNXExtendedPortInfo (Mellanox vendor-specific SMP attribute).
pub(crate) const ATTR_MLNX_EXT_PORT_INFO: u16 = 0xff90;

/// SMInfo SMState of the embedded SM: MASTER.
const SM_STATE_MASTER: u8 = 3;

/// One port of the switch.
#[derive(Clone, Copy)]
struct SwPort {
    /// The logical state (IBA 7.2): DOWN while the peer's link is down; INIT when it comes
    /// up; ARMED and ACTIVE by the SM's Sets.
    state: u8,
    /// MLNXExtendedPortInfo StateChangeEnable.
    state_change_enable: bool,
}

/// Port 0 and the switch's state: everything but the tables.
#[derive(Clone, Copy)]
struct Head {
    /// External ports.
    nports: u8,
    /// NodeGUID, SystemImageGUID and port 0's PortGUID.
    guid: u64,
    /// Port 0's LID, LMC, SM LID, SM SL, SubnetTimeOut.
    lid: u16,
    lmc: u8,
    sm_lid: u16,
    sm_sl: u8,
    subnet_timeout: u8,
    /// Port 0's CapabilityMask (IsSM when the embedded SM runs).
    cap_mask: u32,
    /// The embedded SM's SMInfo ActCount: its sweeps so far.
    sm_act_count: u32,
    /// Ports 0..=N.
    ports: [SwPort; MAX_PORTS + 1],
    /// SwitchInfo: LinearFDBTop, DefaultPort, LifeTimeValue, PortStateChange.
    lft_top: u16,
    default_port: u8,
    life_time: u8,
    port_state_change: bool,
    pkeys: [u16; PKEYS],
}

impl Head {
    /// `nports` external ports (at most [`MAX_PORTS`]), GUID `guid`: links down, no LID.
    const fn new(nports: u8, guid: u64) -> Self {
        let mut pkeys = [0u16; PKEYS];
        pkeys[0] = 0xffff;
        let mut ports = [SwPort {
            state: port_state::DOWN,
            state_change_enable: false,
        }; MAX_PORTS + 1];
        // Port 0 is up in INIT (the management port has no link).
        ports[0].state = port_state::INIT;
        Head {
            nports: if nports as usize > MAX_PORTS {
                MAX_PORTS as u8
            } else {
                nports
            },
            guid,
            lid: 0,
            lmc: 0,
            sm_lid: 0,
            sm_sl: 0,
            subnet_timeout: 0,
            cap_mask: 0,
            sm_act_count: 0,
            ports,
            lft_top: 0,
            default_port: 0,
            life_time: 0x13,
            port_state_change: false,
            pkeys,
        }
    }
}

/// The forwarding tables (built in place in the kernel: too big for its stack).
struct Fdb {
    /// The linear forwarding table: the out port of each LID, [`NO_PORT`] when unset.
    lft: [u8; LFT_CAP],
    /// The multicast forwarding table: the port mask of each MLID from [`MLID_BASE`], 16
    /// ports a word (word `i` holds ports `16 * i ..= 16 * i + 15`).
    mft: [[u16; MFT_POSITIONS]; MFT_CAP],
}

impl Fdb {
    #[cfg(not(MODULE))]
    fn new() -> Self {
        Fdb {
            lft: [NO_PORT; LFT_CAP],
            mft: [[0; MFT_POSITIONS]; MFT_CAP],
        }
    }

    #[cfg(MODULE)]
    fn new_in_place() -> impl pin_init::Init<Self> {
        pin_init::init!(Fdb {
            lft <- pin_init::init_array_from_fn(|_| NO_PORT),
            mft <- pin_init::init_array_from_fn(|_| [0; MFT_POSITIONS]),
        })
    }
}

/// The switch (see the module comment).
pub(crate) struct Switch {
    h: Head,
    fdb: Fdb,
    /// The embedded SM's multicast groups (its SA's MCMemberRecords, `mcmember.rs`).
    pub(crate) groups: McGroups,
}

/// Where a directed-route SMP goes from the switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DrStep {
    /// To the switch's own SMA (outbound, the path ends here).
    Agent,
    /// To the subnet manager of the switch (returning, the path is back at its start).
    Sm,
    /// Out of this external port.
    Out(u8),
    /// Dropped (a bad hop pointer or port).
    Drop,
}

impl Switch {
    /// A switch with `nports` external ports (at most [`MAX_PORTS`]) and GUID `guid`: links
    /// down, no LID, empty forwarding tables, no multicast group.
    #[cfg(not(MODULE))]
    pub(crate) fn new(nports: u8, guid: u64) -> Self {
        Switch {
            h: Head::new(nports, guid),
            fdb: Fdb::new(),
            groups: McGroups::new(),
        }
    }

    /// [`Switch::new`] built in place (the tables are too big for a kernel stack).
    #[cfg(MODULE)]
    pub(crate) fn new_in_place(nports: u8, guid: u64) -> impl pin_init::Init<Self> {
        pin_init::init!(Switch {
            h: Head::new(nports, guid),
            fdb <- Fdb::new_in_place(),
            groups: McGroups::new(),
        })
    }

    /// The switch's LID (port 0's; 0 before the SM set it).
    pub(crate) fn port0_lid(&self) -> u16 {
        self.h.lid
    }

    /// External ports.
    pub(crate) fn nports(&self) -> u8 {
        self.h.nports
    }

    /// Port 0's SM LID.
    pub(crate) fn sm_lid(&self) -> u16 {
        self.h.sm_lid
    }

    /// LinearFDBTop.
    pub(crate) fn lft_top(&self) -> u16 {
        self.h.lft_top
    }

    /// The programmed entries of the linear forwarding table up to LinearFDBTop: `(LID,
    /// port)`.
    pub(crate) fn lft_entries(&self) -> impl Iterator<Item = (u16, u8)> + '_ {
        self.fdb
            .lft
            .iter()
            .enumerate()
            .take(usize::from(self.h.lft_top) + 1)
            .filter(|(_, p)| **p != NO_PORT)
            .filter_map(|(l, p)| Some((u16::try_from(l).ok()?, *p)))
    }

    /// The embedded SM swept: its SMInfo ActCount moves on.
    pub(crate) fn sm_swept(&mut self) {
        self.h.sm_act_count = self.h.sm_act_count.wrapping_add(1);
    }

    /// Whether the embedded SM runs (IsSM in port 0's CapabilityMask).
    pub(crate) fn is_sm(&self) -> bool {
        self.h.cap_mask & super::sma::CAP_IS_SM != 0
    }

    /// Sets or clears IsSM in port 0's CapabilityMask (the embedded SM runs or not).
    pub(crate) fn set_is_sm(&mut self, on: bool) {
        let bit = super::sma::CAP_IS_SM;
        self.h.cap_mask = if on {
            self.h.cap_mask | bit
        } else {
            self.h.cap_mask & !bit
        };
    }

    /// The peer of external port `port` (1-based) has its link up or down: the port goes
    /// INIT or DOWN (a state change sets PortStateChange, as IBA 14.2.5.4 says).
    pub(crate) fn link(&mut self, port: u8, up: bool) {
        if port == 0 || port > self.h.nports {
            return;
        }
        if let Some(p) = self.h.ports.get_mut(usize::from(port)) {
            let new = match (up, p.state) {
                (true, port_state::DOWN) => port_state::INIT,
                (true, s) => s,
                (false, _) => port_state::DOWN,
            };
            if new != p.state {
                p.state = new;
                self.h.port_state_change = true;
            }
        }
    }

    /// The logical state of port `port` (0..=N).
    pub(crate) fn port_state(&self, port: u8) -> u8 {
        if port > self.h.nports {
            return port_state::DOWN;
        }
        self.h
            .ports
            .get(usize::from(port))
            .map_or(port_state::DOWN, |p| p.state)
    }

    /// The out port of a LID-routed packet to `dlid`: port 0 for the switch itself (its LID
    /// range), the LFT's port otherwise; `None` (dropped) for an unprogrammed LID, one above
    /// LinearFDBTop, or a port that is not ACTIVE.
    pub(crate) fn route_lid(&self, dlid: u16) -> Option<u8> {
        if self.h.lid != 0 && dlid >> self.h.lmc.min(7) == self.h.lid >> self.h.lmc.min(7) {
            return Some(0);
        }
        if dlid == 0 || dlid > self.h.lft_top {
            return None;
        }
        let out = *self.fdb.lft.get(usize::from(dlid))?;
        if out == 0 {
            return Some(0);
        }
        (out != NO_PORT && out <= self.h.nports && self.port_state(out) == port_state::ACTIVE)
            .then_some(out)
    }

    /// The out ports of a packet to multicast LID `mlid` (bit `k` for port `k`), as its
    /// MFT entry has them: `None` (dropped) for an MLID outside the table or with no port.
    /// The caller leaves out the port the packet came in on (IBA 18.2.4.3.3).
    pub(crate) fn route_mlid(&self, mlid: u16) -> Option<u64> {
        let e = self
            .fdb
            .mft
            .get(usize::from(mlid.checked_sub(MLID_BASE)?))?;
        let mask = e
            .iter()
            .enumerate()
            .fold(0u64, |m, (i, w)| m | (u64::from(*w) << (16 * i)));
        let ports = (1u64 << (u32::from(self.h.nports) + 1)) - 1;
        Some(mask & ports).filter(|m| *m != 0)
    }

    /// A directed-route SMP arriving on external port `in_port` (or sent by the switch's SM:
    /// `in_port` 0): what the switch does with it, the hop pointer and return path updated
    /// (IBA 14.2.2, C14-9 outbound and C14-13 returning; upstream `smi.c` does the same for a
    /// switch's receive and send halves, in one step here because the switch forwards at
    /// once).
    pub(crate) fn dr_forward(&self, in_port: u8, m: &mut MadBytes) -> DrStep {
        let cnt = m[off::HOP_CNT];
        let ptr = m[off::HOP_PTR];
        if cnt > mad::MAX_PATH_HOPS || in_port > self.h.nports {
            return DrStep::Drop;
        }
        let path = |m: &MadBytes, base: usize, i: u8| m.get(base + usize::from(i)).copied();
        let out = |p: Option<u8>| match p {
            Some(p) if (1..=self.h.nports).contains(&p) => DrStep::Out(p),
            _ => DrStep::Drop,
        };
        if be16(m, off::STATUS) & status::DIRECTION == 0 {
            if in_port == 0 {
                // C14-9:1 at the sender: the SM's SMP leaves through initial_path[1]; with
                // hop_cnt 0 it is for the switch's own SMA.
                if cnt == 0 {
                    return DrStep::Agent;
                }
                if ptr != 0 {
                    return DrStep::Drop;
                }
                m[off::HOP_PTR] = 1;
                return out(path(m, off::INITIAL_PATH, 1));
            }
            // C14-9:1: the sender should have advanced the pointer.
            if cnt != 0 && ptr == 0 {
                return DrStep::Drop;
            }
            if ptr < cnt {
                // C14-9:2, an intermediate hop: record the port it came in on, go on.
                put(m, off::RETURN_PATH + usize::from(ptr), &[in_port]);
                m[off::HOP_PTR] = ptr + 1;
                return out(path(m, off::INITIAL_PATH, ptr + 1));
            }
            if ptr == cnt {
                // C14-9:3, the end of the directed part: the switch's own SMA, or (a DR
                // DLID not permissive) on by LID.
                if cnt != 0 {
                    put(m, off::RETURN_PATH + usize::from(ptr), &[in_port]);
                }
                m[off::HOP_PTR] = ptr + 1;
                let dlid = be16(m, off::DR_DLID);
                if dlid == PERMISSIVE_LID {
                    return DrStep::Agent;
                }
                return match self.route_lid(dlid) {
                    Some(0) => DrStep::Agent,
                    Some(p) => DrStep::Out(p),
                    None => DrStep::Drop,
                };
            }
            // C14-9:4 and 5.
            return if ptr == cnt + 1 {
                DrStep::Agent
            } else {
                DrStep::Drop
            };
        }
        // Returning.
        if in_port == 0 {
            // C14-13:1 at the sender: the switch's own response goes back the way it came.
            if cnt != 0 && ptr == cnt + 1 {
                m[off::HOP_PTR] = ptr - 1;
                return out(path(m, off::RETURN_PATH, ptr - 1));
            }
            return if cnt == 0 { DrStep::Sm } else { DrStep::Drop };
        }
        if (2..=cnt).contains(&ptr) {
            // C14-13:2: back through the port recorded on the way out.
            m[off::HOP_PTR] = ptr - 1;
            return out(path(m, off::RETURN_PATH, ptr - 1));
        }
        if ptr == 1 {
            // C14-13:3: the start of the directed part. A permissive DR SLID: the SM is
            // here; otherwise on by LID.
            m[off::HOP_PTR] = 0;
            let slid = be16(m, off::DR_SLID);
            if slid == PERMISSIVE_LID {
                return DrStep::Sm;
            }
            return match self.route_lid(slid) {
                Some(0) => DrStep::Sm,
                Some(p) => DrStep::Out(p),
                None => DrStep::Drop,
            };
        }
        if ptr == 0 {
            DrStep::Sm
        } else {
            DrStep::Drop
        }
    }

    /// The switch's SMA: an SMP (its route already taken) that came in on port `in_port`,
    /// answered in place.
    pub(crate) fn smp(&mut self, in_port: u8, m: &mut MadBytes) -> MadOutcome {
        if !matches!(m[1], class::SUBN_LID_ROUTED | class::SUBN_DIRECTED_ROUTE) {
            mad::respond(m, status::BAD_VERSION);
            return MadOutcome::Reply;
        }
        let set = match mad::smp_method(m) {
            Ok(set) => set,
            Err(o) => return o,
        };
        let amod = be32(m, off::ATTR_MOD);
        let st = match be16(m, off::ATTR_ID) {
            attr::NODE_INFO if !set => self.node_info(in_port, m),
            attr::NODE_DESC if !set => {
                let mut d = [0u8; mad::SMP_DATA];
                let name = b"rdma-rs simulated switch";
                d[..name.len()].copy_from_slice(name);
                put(m, off::DATA, &d);
                0
            }
            ATTR_SWITCH_INFO => self.switch_info(set, m),
            ATTR_LFT => self.lft_block(set, amod, m),
            ATTR_MFT => self.mft_block(set, amod, m),
            attr::PORT_INFO => self.port_info(in_port, set, amod, m),
            ATTR_MLNX_EXT_PORT_INFO => self.mlnx_ext_port_info(set, amod, m),
            attr::PKEY_TABLE => self.pkey_table(set, amod, m),
            ATTR_SM_INFO if !set && self.h.cap_mask & super::sma::CAP_IS_SM != 0 => self.sm_info(m),
            _ => status::UNSUPPORTED_METHOD_ATTRIB,
        };
        mad::respond(m, st);
        MadOutcome::Reply
    }

    /// SMInfo Get (IBA 14.2.5.13) of the embedded SM, the master: its GUID (the switch's),
    /// SM_Key 0, ActCount, priority 0. The SM-to-SM Set (handover) is not modeled.
    fn sm_info(&self, m: &mut MadBytes) -> u16 {
        let mut d = [0u8; mad::SMP_DATA];
        put(&mut d, 0, &self.h.guid.to_be_bytes());
        put(&mut d, 16, &self.h.sm_act_count.to_be_bytes());
        d[20] = SM_STATE_MASTER;
        put(m, off::DATA, &d);
        0
    }

    /// NodeInfo (IBA 14.2.5.3) of a switch.
    fn node_info(&self, in_port: u8, m: &mut MadBytes) -> u16 {
        let mut d = [0u8; mad::SMP_DATA];
        d[0] = 1; // BaseVersion
        d[1] = 1; // ClassVersion
        d[2] = 2; // NodeType: switch
        d[3] = self.h.nports;
        put(&mut d, 4, &self.h.guid.to_be_bytes());
        put(&mut d, 12, &self.h.guid.to_be_bytes());
        // A switch's ports share port 0's GUID.
        put(&mut d, 20, &self.h.guid.to_be_bytes());
        put(&mut d, 28, &(PKEYS as u16).to_be_bytes());
        // DeviceID of a Quantum switch (0xd2f0), revision 0.
        put(&mut d, 30, &0xd2f0u16.to_be_bytes());
        d[36] = in_port;
        put(&mut d, 37, &[0x00, 0x02, 0xc9]);
        put(m, off::DATA, &d);
        0
    }

    /// SwitchInfo (IBA 14.2.5.4). A Set changes LinearFDBTop, DefaultPort, LifeTimeValue and
    /// clears PortStateChange when it writes 1 to it.
    fn switch_info(&mut self, set: bool, m: &mut MadBytes) -> u16 {
        if set {
            let top = be16(m, off::DATA + 6);
            if usize::from(top) >= LFT_CAP {
                self.switch_info_get(m);
                return status::INVALID_ATTRIB_VALUE;
            }
            self.h.lft_top = top;
            self.h.default_port = m[off::DATA + 8];
            let b = m[off::DATA + 11];
            self.h.life_time = b >> 3;
            if b & 0x4 != 0 {
                self.h.port_state_change = false;
            }
        }
        self.switch_info_get(m);
        0
    }

    fn switch_info_get(&self, m: &mut MadBytes) {
        let mut d = [0u8; mad::SMP_DATA];
        put(&mut d, 0, &(LFT_CAP as u16).to_be_bytes());
        // RandomFDBCap 0: not modeled.
        put(&mut d, 4, &(MFT_CAP as u16).to_be_bytes());
        put(&mut d, 6, &self.h.lft_top.to_be_bytes());
        d[8] = self.h.default_port;
        d[9] = 0xff;
        d[10] = 0xff;
        d[11] = (self.h.life_time << 3) | (u8::from(self.h.port_state_change) << 2);
        // LIDsPerPort 0; PartitionEnforcementCap.
        put(&mut d, 14, &(PKEYS as u16).to_be_bytes());
        put(m, off::DATA, &d);
    }

    /// LinearForwardingTable block `amod` (IBA 14.2.5.10): 64 ports, one per LID.
    fn lft_block(&mut self, set: bool, amod: u32, m: &mut MadBytes) -> u16 {
        let start = usize::try_from(amod)
            .unwrap_or(usize::MAX)
            .saturating_mul(LFT_BLOCK);
        let Some(block) = self.fdb.lft.get_mut(start..start.saturating_add(LFT_BLOCK)) else {
            return status::INVALID_ATTRIB_VALUE;
        };
        if set {
            if let Some(d) = m.get(off::DATA..off::DATA + LFT_BLOCK) {
                block.copy_from_slice(d);
            }
        }
        put(m, off::DATA, block);
        0
    }

    /// MulticastForwardingTable block (IBA 14.2.5.12): the modifier's bits 31..28 name the
    /// 16 ports (PortMask position), bits 8..0 the block of 32 MLIDs from [`MLID_BASE`];
    /// each entry is a 16-bit port mask.
    fn mft_block(&mut self, set: bool, amod: u32, m: &mut MadBytes) -> u16 {
        let pos = (amod >> 28) as usize;
        let start = ((amod & 0x1ff) as usize) * MFT_BLOCK;
        if pos > usize::from(self.h.nports) / 16 {
            return status::INVALID_ATTRIB_VALUE;
        }
        let Some(block) = self.fdb.mft.get_mut(start..start + MFT_BLOCK) else {
            return status::INVALID_ATTRIB_VALUE;
        };
        let mut d = [0u8; MFT_BLOCK * 2];
        for (i, e) in block.iter_mut().enumerate() {
            let Some(w) = e.get_mut(pos) else {
                return status::INVALID_ATTRIB_VALUE;
            };
            if set {
                *w = be16(m, off::DATA + 2 * i);
            }
            put(&mut d, 2 * i, &w.to_be_bytes());
        }
        put(m, off::DATA, &d);
        0
    }

    /// The port an attribute modifier names (its low byte; IBA 14.2.5.6 gives PortInfo's bit
    /// 31 to SMSupportsExtendedSpeeds), if the switch has it.
    fn amod_port(&self, amod: u32) -> Option<u8> {
        Some((amod & 0xff) as u8).filter(|p| *p <= self.h.nports)
    }

    /// PortInfo of the port in `amod`'s low byte (IBA 14.2.5.6; a switch answers for any of
    /// its ports); LocalPortNum is `in_port`, the port the SMP came in on (an SM compares it
    /// with the port it asks about to find the link it came through).
    fn port_info(&mut self, in_port: u8, set: bool, amod: u32, m: &mut MadBytes) -> u16 {
        let Some(port) = self.amod_port(amod) else {
            return status::INVALID_ATTRIB_VALUE;
        };
        let st = if set { self.port_info_set(port, m) } else { 0 };
        self.port_info_get(in_port, port, m);
        st
    }

    /// Mellanox's MLNXExtendedPortInfo of port `amod` (vendor attribute 0xff90, which opensm
    /// reads from a Mellanox switch): StateChangeEnable, and no FDR10 (LinkSpeedSupported,
    /// Enabled and Active 0). A Set may change StateChangeEnable; FDR10 cannot be enabled.
    fn mlnx_ext_port_info(&mut self, set: bool, amod: u32, m: &mut MadBytes) -> u16 {
        let Some(p) = self
            .amod_port(amod)
            .and_then(|p| self.h.ports.get_mut(usize::from(p)))
        else {
            return status::INVALID_ATTRIB_VALUE;
        };
        let mut st = 0;
        if set {
            if m[off::DATA + 11] != 0 {
                st = status::INVALID_ATTRIB_VALUE;
            } else {
                p.state_change_enable = m[off::DATA + 3] & 1 != 0;
            }
        }
        let mut d = [0u8; mad::SMP_DATA];
        d[3] = u8::from(p.state_change_enable);
        put(m, off::DATA, &d);
        st
    }

    fn port_info_get(&self, in_port: u8, port: u8, m: &mut MadBytes) {
        let mut d = [0u8; mad::SMP_DATA];
        let state = self.port_state(port);
        put(&mut d, 8, &0xfe80_0000_0000_0000u64.to_be_bytes());
        if port == 0 {
            put(&mut d, 16, &self.h.lid.to_be_bytes());
            put(&mut d, 18, &self.h.sm_lid.to_be_bytes());
            put(&mut d, 20, &self.h.cap_mask.to_be_bytes());
            d[34] = self.h.lmc & 7;
            d[36] = self.h.sm_sl & 0xf;
            d[51] = self.h.subnet_timeout & 0x1f;
        } else {
            d[36] = 5 << 4; // NeighborMTU 4096
        }
        d[28] = in_port;
        // LinkWidth: enabled and supported 1X and 4X, active 4X.
        d[29] = 0x3;
        d[30] = 0x3;
        d[31] = 0x2;
        // LinkSpeedSupported SDR/DDR/QDR (7), the state.
        d[32] = (7 << 4) | (state & 0xf);
        // PortPhysicalState: LinkUp (5) for port 0 and an up link, else Polling (2);
        // LinkDownDefaultState Polling.
        let phys = if port == 0 || state != port_state::DOWN {
            5
        } else {
            2
        };
        d[33] = (phys << 4) | 2;
        // LinkSpeedActive QDR (4), enabled SDR/DDR/QDR.
        d[35] = (4 << 4) | 7;
        d[37] = 1 << 4; // VLCap VL0
        d[39] = 8;
        d[40] = 8;
        d[41] = 5; // MTUCap 4096
        d[42] = 0x0f; // HOQLife
        d[43] = 1 << 4; // OperationalVLs
        put(m, off::DATA, &d);
    }

    fn port_info_set(&mut self, port: u8, m: &MadBytes) -> u16 {
        let a = |i: usize| m.get(off::DATA + i).copied().unwrap_or(0);
        let new_state = a(32) & 0xf;
        let cur = self.port_state(port);
        let ok = match new_state {
            port_state::NOP => true,
            port_state::DOWN => port != 0,
            port_state::ARMED => matches!(cur, port_state::INIT | port_state::ARMED),
            port_state::ACTIVE => matches!(cur, port_state::ARMED | port_state::ACTIVE),
            _ => false,
        };
        if !ok {
            return status::INVALID_ATTRIB_VALUE;
        }
        if port == 0 {
            let lid = be16(m, off::DATA + 16);
            let sm_lid = be16(m, off::DATA + 18);
            if lid >= 0xc000 || sm_lid >= 0xc000 {
                return status::INVALID_ATTRIB_VALUE;
            }
            self.h.lid = lid;
            self.h.sm_lid = sm_lid;
            self.h.lmc = a(34) & 7;
            self.h.sm_sl = a(36) & 0xf;
            self.h.subnet_timeout = a(51) & 0x1f;
        }
        if let Some(p) = self.h.ports.get_mut(usize::from(port)) {
            match new_state {
                // The link retrains: back to INIT.
                port_state::DOWN if p.state != port_state::DOWN => p.state = port_state::INIT,
                port_state::ARMED | port_state::ACTIVE => p.state = new_state,
                _ => {}
            }
        }
        0
    }

    /// P_KeyTable (IBA 14.2.5.7): block 0 of the one table every port shares; the port in
    /// the modifier's upper half must exist.
    fn pkey_table(&mut self, set: bool, amod: u32, m: &mut MadBytes) -> u16 {
        let (port, block) = (amod >> 16, amod & 0xffff);
        if port > u32::from(self.h.nports) || block != 0 {
            return status::INVALID_ATTRIB_VALUE;
        }
        if set {
            for (i, k) in self.h.pkeys.iter_mut().enumerate() {
                *k = be16(m, off::DATA + i * 2);
            }
        }
        for (i, k) in self.h.pkeys.iter().enumerate() {
            put(m, off::DATA + i * 2, &k.to_be_bytes());
        }
        0
    }
}
