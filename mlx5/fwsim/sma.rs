// SPDX-License-Identifier: GPL-2.0

//! The subnet management agent of an InfiniBand port (IBA Vol 1 chapter 14, what ConnectX
//! firmware answers through MAD_IFC): SubnGet and SubnSet of NodeInfo, NodeDescription,
//! PortInfo, GUIDInfo, P_KeyTable, SLtoVLMappingTable and VLArbitrationTable, the M_Key
//! check, and the port's logical state machine (IBA 7.2): the link coming up puts the port
//! in INIT; only a subnet manager's PortInfo Set moves it to ARMED (from INIT) and then
//! ACTIVE (from ARMED); the link going down puts it in DOWN. The LID, LMC, SM LID and SM SL
//! the port has are the ones a Set gave it (0 until then).
//!
//! Every change a Set makes raises the PRM port change event upstream mlx5_ib maps
//! (`handle_port_change()`): LID (also for an SM LID or SM SL change: mlx5 has no SM
//! subtype), ACTIVE, DOWN, CLIENT_REREG, PKEY and GUID.

use super::mad::{self, be16, be32, be64, off, put, status, Dropped, MadBytes, MadOutcome};
use super::Fw;
use crate::prm::consts::{
    PORT_CHANGE_SUBTYPE_ACTIVE, PORT_CHANGE_SUBTYPE_CLIENT_REREG, PORT_CHANGE_SUBTYPE_DOWN,
    PORT_CHANGE_SUBTYPE_GUID, PORT_CHANGE_SUBTYPE_LID, PORT_CHANGE_SUBTYPE_PKEY,
};

/// SMP attribute ids (`IB_SMP_ATTR_*`, ib_smi.h).
pub(crate) mod attr {
    /// NodeDescription.
    pub(crate) const NODE_DESC: u16 = 0x0010;
    /// NodeInfo.
    pub(crate) const NODE_INFO: u16 = 0x0011;
    /// GUIDInfo.
    pub(crate) const GUID_INFO: u16 = 0x0014;
    /// PortInfo.
    pub(crate) const PORT_INFO: u16 = 0x0015;
    /// P_KeyTable.
    pub(crate) const PKEY_TABLE: u16 = 0x0016;
    /// SLtoVLMappingTable.
    pub(crate) const SL_TO_VL_TABLE: u16 = 0x0017;
    /// VLArbitrationTable.
    pub(crate) const VL_ARB_TABLE: u16 = 0x0018;
}

/// The logical port states (`enum ib_port_state`; PortInfo PortState).
pub(crate) mod port_state {
    /// Set: no change.
    pub(crate) const NOP: u8 = 0;
    /// Down: the link is not up.
    pub(crate) const DOWN: u8 = 1;
    /// Init: the link is up, no subnet manager has configured the port.
    pub(crate) const INIT: u8 = 2;
    /// Armed: configured; receives, does not send.
    pub(crate) const ARMED: u8 = 3;
    /// Active: carries traffic.
    pub(crate) const ACTIVE: u8 = 4;
}

/// PortInfo byte offsets in the attribute data (`struct ib_port_info`, ib_smi.h).
mod pi {
    pub(super) const MKEY: usize = 0;
    pub(super) const GID_PREFIX: usize = 8;
    pub(super) const LID: usize = 16;
    pub(super) const SM_LID: usize = 18;
    pub(super) const CAP_MASK: usize = 20;
    pub(super) const MKEY_LEASE: usize = 26;
    pub(super) const LOCAL_PORT: usize = 28;
    pub(super) const WIDTH_ENABLED: usize = 29;
    pub(super) const WIDTH_SUPPORTED: usize = 30;
    pub(super) const WIDTH_ACTIVE: usize = 31;
    pub(super) const SPEED_STATE: usize = 32;
    pub(super) const PHYS_LINKDOWN: usize = 33;
    pub(super) const MKEYPROT_LMC: usize = 34;
    pub(super) const SPEED_ACTIVE_ENABLED: usize = 35;
    pub(super) const NEIGHBOR_MTU_SMSL: usize = 36;
    pub(super) const VLCAP_INITTYPE: usize = 37;
    pub(super) const VL_HIGH_LIMIT: usize = 38;
    pub(super) const VL_ARB_HIGH_CAP: usize = 39;
    pub(super) const VL_ARB_LOW_CAP: usize = 40;
    pub(super) const MTU_CAP: usize = 41;
    pub(super) const HOQLIFE: usize = 42;
    pub(super) const OPERATIONAL_VLS: usize = 43;
    pub(super) const MKEY_VIOLATIONS: usize = 44;
    pub(super) const GUID_CAP: usize = 50;
    pub(super) const REREG_SUBNET_TIMEOUT: usize = 51;
    pub(super) const RESP_TIME: usize = 52;
    pub(super) const CAP_MASK2: usize = 60;
    pub(super) const SPEED_EXT: usize = 62;
    pub(super) const SPEED_EXT_ENABLED: usize = 63;
}

/// PortInfo CapabilityMask bit IsSM (`IB_PORT_SM`): set while an SM runs on the port.
pub(crate) const CAP_IS_SM: u32 = 1 << 1;

/// The CapabilityMask of a ConnectX port without an SM (`ibv_devinfo` port_cap_flags
/// 0x2651e848: trap, automatic migration, SL map, LED, sys image GUID, PKey switch ext port
/// trap, extended speeds, capability mask 2, client reregistration, vendor class, ...): what
/// QUERY_HCA_VPORT_CONTEXT's `cap_mask1` carries as well.
pub(crate) const CAP_MASK1: u32 = 0x2651_e848;

/// The CapabilityMask bits the host's agents may set and clear (MODIFY_HCA_VPORT_CONTEXT's
/// `cap_mask1_field_select`, reported by QUERY_HCA_VPORT_CONTEXT): IsSM (ib_umad's `issm`),
/// IsNoticeSupported, IsCM (ib_cm), IsSNMPTunneling, IsDeviceManagement, IsVendorClass,
/// IsBootManagement.
pub(crate) const CAP_MASK1_HOST: u32 =
    CAP_IS_SM | (1 << 2) | (1 << 16) | (1 << 17) | (1 << 19) | (1 << 24) | (1 << 27);

/// P_Key table entries (PartitionCap; mlx5's `pkey_table_size` 0 is 128).
pub(crate) const PKEYS: usize = 128;
/// GUIDInfo entries (GUIDCap): one block of 8.
pub(crate) const GUIDS: usize = 8;
/// VLArbitrationTable blocks (attribute modifier 1..4: low 0-31, high 0-31, low 32-63,
/// high 32-63), 32 two-byte entries each.
const VL_ARB_BLOCKS: usize = 4;

/// The SMA's state of one port.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PortSma {
    /// PortState ([`port_state`]).
    pub(crate) state: u8,
    /// The port's M_Key (0: not protected).
    pub(crate) mkey: u64,
    /// M_KeyProtectBits.
    pub(crate) mkey_protect: u8,
    /// M_KeyLeasePeriod (kept, not timed).
    mkey_lease: u16,
    /// M_KeyViolations.
    mkey_violations: u16,
    /// GIDPrefix.
    pub(crate) gid_prefix: u64,
    /// The base LID (0: none assigned).
    pub(crate) lid: u16,
    /// The SM's LID (MasterSMLID).
    pub(crate) sm_lid: u16,
    /// MasterSMSL.
    pub(crate) sm_sl: u8,
    /// LMC.
    pub(crate) lmc: u8,
    /// CapabilityMask (IsSM is the host's to set).
    pub(crate) cap_mask: u32,
    /// SubnetTimeOut.
    pub(crate) subnet_timeout: u8,
    /// LinkWidthEnabled.
    width_enabled: u8,
    /// LinkSpeedEnabled.
    speed_enabled: u8,
    /// NeighborMTU.
    neighbor_mtu: u8,
    /// OperationalVLs.
    operational_vls: u8,
    /// VLHighLimit.
    vl_high_limit: u8,
    /// HOQLife (low 5 bits) and VLStallCount (high 3).
    hoqlife: u8,
    /// GUIDInfo: entry 0 is the port GUID, the others are the SM's to set.
    pub(crate) guids: [u64; GUIDS],
    /// P_KeyTable.
    pub(crate) pkeys: [u16; PKEYS],
    /// SLtoVLMappingTable: 16 four-bit entries.
    sl2vl: [u8; 8],
    /// VLArbitrationTable.
    vl_arb: [[u8; 64]; VL_ARB_BLOCKS],
    /// Port change events not yet taken: bit n is `MLX5_PORT_CHANGE_SUBTYPE` n.
    pub(crate) events: u16,
}

impl PortSma {
    /// A port whose link is down, as the firmware boots: no LID, no SM, the default
    /// partition only.
    pub(crate) const fn new() -> Self {
        let mut pkeys = [0u16; PKEYS];
        pkeys[0] = 0xffff;
        let mut vl_arb = [[0u8; 64]; VL_ARB_BLOCKS];
        // Low and high priority tables: VL0 with weight 255 first.
        vl_arb[0][1] = 0xff;
        vl_arb[1][1] = 0xff;
        PortSma {
            state: port_state::DOWN,
            mkey: 0,
            mkey_protect: 0,
            mkey_lease: 0,
            mkey_violations: 0,
            gid_prefix: 0xfe80_0000_0000_0000,
            lid: 0,
            sm_lid: 0,
            sm_sl: 0,
            lmc: 0,
            cap_mask: CAP_MASK1,
            subnet_timeout: 0,
            width_enabled: 0x3,
            speed_enabled: 0x7,
            neighbor_mtu: 5,
            operational_vls: 1,
            vl_high_limit: 0,
            hoqlife: 0x0f,
            guids: [0; GUIDS],
            pkeys,
            sl2vl: [0; 8],
            vl_arb,
            events: 0,
        }
    }

    /// Queues port change subtype `sub`.
    fn raise(&mut self, sub: u8) {
        self.events |= 1u16 << (sub & 0xf);
    }

    /// The link went up (INIT) or down (DOWN, with the event when it was not already).
    pub(crate) fn link(&mut self, up: bool) {
        match (up, self.state) {
            (true, port_state::DOWN) => self.state = port_state::INIT,
            (false, port_state::DOWN) => {}
            (false, _) => {
                self.state = port_state::DOWN;
                self.raise(PORT_CHANGE_SUBTYPE_DOWN);
            }
            _ => {}
        }
    }
}

/// PortInfo speed fields from PTYS `ib_proto` bits (SDR bit 0 ... NDR bit 7): LinkSpeed
/// (SDR 1, DDR 2, QDR 4) and LinkSpeedExt (FDR 1, EDR 2, HDR 4, NDR 8), supported and active.
fn speeds(proto: u32) -> (u8, u8, u8, u8) {
    let base = (proto & 0x7) as u8;
    let ext = ((proto >> 4) & 0xf) as u8;
    let top = 31u32.saturating_sub(proto.leading_zeros());
    let (active, ext_active) = if ext != 0 {
        (1, 1u8 << (top.saturating_sub(4) & 3))
    } else if base != 0 {
        (1u8 << (top & 3), 0)
    } else {
        (1, 0)
    };
    (base.max(1), active, ext, ext_active)
}

impl Fw {
    /// The SMA of (0-based) port `port`, if the function has it.
    pub(crate) fn sma(&self, port: usize) -> Option<&PortSma> {
        if port >= usize::from(self.cfg.num_ports) {
            return None;
        }
        self.ports.get(port).map(|p| &p.sma)
    }

    /// Sets or clears CapabilityMask bits of (1-based) port `port` as the host may (IsSM
    /// and the other host-owned bits, upstream `ib_modify_port()`); `false` for a port the
    /// function does not have.
    pub(crate) fn set_port_caps(&mut self, port: u8, set: u32, clear: u32) -> bool {
        if port == 0 || port > self.cfg.num_ports {
            return false;
        }
        match self.ports.get_mut(usize::from(port) - 1) {
            Some(p) => {
                p.sma.cap_mask = (p.sma.cap_mask | set) & !clear;
                true
            }
            None => false,
        }
    }

    /// Whether a port change event waits ([`Fw::next_port_event`]).
    pub(crate) fn has_port_events(&self) -> bool {
        self.ports.iter().any(|p| p.sma.events != 0)
    }

    /// Takes the next port change event: `(1-based port, MLX5_PORT_CHANGE_SUBTYPE_*)`, in
    /// the order a subnet manager's changes happen: down, the addresses and tables, then
    /// active, then the request to reregister.
    pub(crate) fn next_port_event(&mut self) -> Option<(u8, u8)> {
        const ORDER: [u8; 6] = [
            PORT_CHANGE_SUBTYPE_DOWN,
            PORT_CHANGE_SUBTYPE_LID,
            PORT_CHANGE_SUBTYPE_PKEY,
            PORT_CHANGE_SUBTYPE_GUID,
            PORT_CHANGE_SUBTYPE_ACTIVE,
            PORT_CHANGE_SUBTYPE_CLIENT_REREG,
        ];
        let n = usize::from(self.cfg.num_ports);
        for (i, p) in self.ports.iter_mut().enumerate().take(n) {
            if let Some(sub) = ORDER.iter().find(|s| p.sma.events & (1 << **s) != 0) {
                p.sma.events &= !(1 << *sub);
                return Some((u8::try_from(i + 1).unwrap_or(1), *sub));
            }
            p.sma.events = 0;
        }
        None
    }

    /// An SMP (LID-routed or directed-route, the route already checked) at port `port`.
    pub(super) fn smp(&mut self, port: usize, flags: u32, m: &mut MadBytes) -> MadOutcome {
        let set = match mad::smp_method(m) {
            Ok(set) => set,
            Err(o) => return o,
        };
        if flags & mad::IGNORE_MKEY == 0 {
            if let Some(o) = self.mkey_check(port, set, m) {
                return o;
            }
        }
        let id = be16(m, off::ATTR_ID);
        let amod = be32(m, off::ATTR_MOD);
        let st = match id {
            attr::NODE_INFO if !set => self.node_info(port, m),
            attr::NODE_DESC if !set => {
                let d = self.node_desc();
                put(m, off::DATA, &d);
                0
            }
            attr::PORT_INFO => self.port_info(port, set, amod, m),
            attr::GUID_INFO => self.guid_info(port, set, amod, m),
            attr::PKEY_TABLE => self.pkey_table(port, set, amod, m),
            attr::SL_TO_VL_TABLE => self.sl2vl(port, set, m),
            attr::VL_ARB_TABLE => self.vl_arb(port, set, amod, m),
            _ => status::UNSUPPORTED_METHOD_ATTRIB,
        };
        mad::respond(m, st);
        MadOutcome::Reply
    }

    /// The M_Key check (IBA 14.2.4): with a port M_Key of 0, or the MAD's M_Key equal to it,
    /// everything passes. Otherwise a Set is dropped and counted as a violation, and so is a
    /// Get at protection levels 2 and 3; a Get at levels 0 and 1 is answered (at level 1
    /// with the M_Key in PortInfo read as 0).
    fn mkey_check(&mut self, port: usize, set: bool, m: &mut MadBytes) -> Option<MadOutcome> {
        let p = &mut self.ports.get_mut(port)?.sma;
        if p.mkey == 0 || be64(m, off::MKEY) == p.mkey {
            return None;
        }
        if !set && p.mkey_protect < 2 {
            return None;
        }
        p.mkey_violations = p.mkey_violations.saturating_add(1);
        Some(MadOutcome::Dropped(Dropped::MkeyViolation))
    }

    /// NodeInfo (IBA 14.2.5.3): a channel adapter with the function's ports and GUIDs.
    fn node_info(&self, port: usize, m: &mut MadBytes) -> u16 {
        let d = off::DATA;
        m[d] = 1; // BaseVersion
        m[d + 1] = 1; // ClassVersion
        m[d + 2] = 1; // NodeType: channel adapter
        m[d + 3] = self.cfg.num_ports;
        put(m, d + 4, &self.node_guid().to_be_bytes());
        put(m, d + 12, &self.node_guid().to_be_bytes());
        put(m, d + 20, &self.port_guid(port + 1).to_be_bytes());
        put(m, d + 28, &(PKEYS as u16).to_be_bytes());
        put(m, d + 30, &self.cfg.profile.device_id.to_be_bytes());
        // Revision: the firmware's major.minor.
        let (maj, min, _) = self.cfg.profile.fw_rev;
        put(
            m,
            d + 32,
            &((u32::from(maj) << 16) | u32::from(min)).to_be_bytes(),
        );
        m[d + 36] = u8::try_from(port + 1).unwrap_or(1);
        // VendorID 0x0002c9 (Mellanox).
        put(m, d + 37, &[0x00, 0x02, 0xc9]);
        0
    }

    /// PortInfo Get and Set (IBA 14.2.5.6). The attribute modifier's low byte names the port,
    /// 0 the port the SMP came in on (a CA answers only for that one); its bit 31 is the SM's
    /// SMSupportsExtendedSpeeds (opensm sets it when CapabilityMask has IsExtendedSpeeds), the
    /// rest is reserved.
    fn port_info(&mut self, port: usize, set: bool, amod: u32, m: &mut MadBytes) -> u16 {
        let amod = amod & 0xff;
        if amod != 0 && amod != port as u32 + 1 {
            self.port_info_get(port, m);
            return status::INVALID_ATTRIB_VALUE;
        }
        let st = if set { self.port_info_set(port, m) } else { 0 };
        self.port_info_get(port, m);
        st
    }

    /// Fills PortInfo of port `port` into `m`'s data.
    fn port_info_get(&self, port: usize, m: &mut MadBytes) {
        let Some(p) = self.ports.get(port).map(|p| &p.sma) else {
            return;
        };
        let up = self.port_up(port);
        let (speed_sup, speed_act, ext_sup, ext_act) = speeds(self.cfg.profile.ib_proto);
        let mut d = [0u8; mad::SMP_DATA];
        // At protection level 1 a Get with the wrong M_Key reads it as 0.
        let mkey_ok = p.mkey == 0 || be64(m, off::MKEY) == p.mkey || p.mkey_protect == 0;
        put(
            &mut d,
            pi::MKEY,
            &(if mkey_ok { p.mkey } else { 0 }).to_be_bytes(),
        );
        put(&mut d, pi::GID_PREFIX, &p.gid_prefix.to_be_bytes());
        put(&mut d, pi::LID, &p.lid.to_be_bytes());
        put(&mut d, pi::SM_LID, &p.sm_lid.to_be_bytes());
        put(&mut d, pi::CAP_MASK, &p.cap_mask.to_be_bytes());
        put(&mut d, pi::MKEY_LEASE, &p.mkey_lease.to_be_bytes());
        d[pi::LOCAL_PORT] = u8::try_from(port + 1).unwrap_or(1);
        d[pi::WIDTH_ENABLED] = p.width_enabled;
        d[pi::WIDTH_SUPPORTED] = 0x3; // 1X, 4X
        d[pi::WIDTH_ACTIVE] = 0x2; // 4X
        d[pi::SPEED_STATE] = (speed_sup << 4) | (p.state & 0xf);
        // PortPhysicalState LinkUp (5) or Disabled (3); LinkDownDefaultState Polling (2).
        d[pi::PHYS_LINKDOWN] = (if up { 5 } else { 3 } << 4) | 2;
        d[pi::MKEYPROT_LMC] = ((p.mkey_protect & 3) << 6) | (p.lmc & 7);
        d[pi::SPEED_ACTIVE_ENABLED] = (speed_act << 4) | (p.speed_enabled & 0xf);
        d[pi::NEIGHBOR_MTU_SMSL] = ((p.neighbor_mtu & 0xf) << 4) | (p.sm_sl & 0xf);
        // VLCap VL0 only (1); InitType 0.
        d[pi::VLCAP_INITTYPE] = 1 << 4;
        d[pi::VL_HIGH_LIMIT] = p.vl_high_limit;
        d[pi::VL_ARB_HIGH_CAP] = 8;
        d[pi::VL_ARB_LOW_CAP] = 8;
        // MTUCap 4096 (5).
        d[pi::MTU_CAP] = 5;
        d[pi::HOQLIFE] = p.hoqlife;
        d[pi::OPERATIONAL_VLS] = (p.operational_vls & 0xf) << 4;
        put(
            &mut d,
            pi::MKEY_VIOLATIONS,
            &p.mkey_violations.to_be_bytes(),
        );
        d[pi::GUID_CAP] = GUIDS as u8;
        d[pi::REREG_SUBNET_TIMEOUT] = p.subnet_timeout & 0x1f;
        // RespTimeValue 2^16 x 4.096 us (as ConnectX reports).
        d[pi::RESP_TIME] = 16;
        put(&mut d, pi::CAP_MASK2, &0u16.to_be_bytes());
        d[pi::SPEED_EXT] = (ext_act << 4) | ext_sup;
        d[pi::SPEED_EXT_ENABLED] = ext_sup & 0x1f;
        put(m, off::DATA, &d);
    }

    /// Applies a PortInfo Set; on an invalid field nothing is applied and the status says so.
    fn port_info_set(&mut self, port: usize, m: &MadBytes) -> u16 {
        let a = |i: usize| m.get(off::DATA + i).copied().unwrap_or(0);
        let lid = be16(m, off::DATA + pi::LID);
        let sm_lid = be16(m, off::DATA + pi::SM_LID);
        let new_state = a(pi::SPEED_STATE) & 0xf;
        let phys = a(pi::PHYS_LINKDOWN) >> 4;
        let lmc = a(pi::MKEYPROT_LMC) & 7;
        let Some(p) = self.ports.get_mut(port).map(|p| &mut p.sma) else {
            return status::INVALID_ATTRIB_VALUE;
        };
        // Unicast LIDs only (0xc000 and up are multicast, 0xffff permissive).
        if lid >= 0xc000 || sm_lid >= 0xc000 {
            return status::INVALID_ATTRIB_VALUE;
        }
        // IBA 7.2: ARMED only from INIT (or ARMED), ACTIVE only from ARMED (or ACTIVE);
        // INIT cannot be set.
        let ok = match new_state {
            port_state::NOP | port_state::DOWN => true,
            port_state::ARMED => matches!(p.state, port_state::INIT | port_state::ARMED),
            port_state::ACTIVE => matches!(p.state, port_state::ARMED | port_state::ACTIVE),
            _ => false,
        };
        // PortPhysicalState: no change or Polling; Disabled and the others are not modeled.
        if !ok || !matches!(phys, 0 | 2) {
            return status::INVALID_ATTRIB_VALUE;
        }
        p.mkey = be64(m, off::DATA + pi::MKEY);
        p.gid_prefix = be64(m, off::DATA + pi::GID_PREFIX);
        p.mkey_lease = be16(m, off::DATA + pi::MKEY_LEASE);
        p.mkey_protect = a(pi::MKEYPROT_LMC) >> 6;
        if a(pi::WIDTH_ENABLED) != 0 {
            p.width_enabled = a(pi::WIDTH_ENABLED);
        }
        if a(pi::SPEED_ACTIVE_ENABLED) & 0xf != 0 {
            p.speed_enabled = a(pi::SPEED_ACTIVE_ENABLED) & 0xf;
        }
        let nmtu = a(pi::NEIGHBOR_MTU_SMSL) >> 4;
        if (1..=5).contains(&nmtu) {
            p.neighbor_mtu = nmtu;
        }
        p.vl_high_limit = a(pi::VL_HIGH_LIMIT);
        p.hoqlife = a(pi::HOQLIFE);
        if a(pi::OPERATIONAL_VLS) >> 4 != 0 {
            p.operational_vls = a(pi::OPERATIONAL_VLS) >> 4;
        }
        p.subnet_timeout = a(pi::REREG_SUBNET_TIMEOUT) & 0x1f;
        let sm_sl = a(pi::NEIGHBOR_MTU_SMSL) & 0xf;
        if lid != p.lid || lmc != p.lmc || sm_lid != p.sm_lid || sm_sl != p.sm_sl {
            p.lid = lid;
            p.lmc = lmc;
            p.sm_lid = sm_lid;
            p.sm_sl = sm_sl;
            p.raise(PORT_CHANGE_SUBTYPE_LID);
        }
        match new_state {
            port_state::DOWN if p.state != port_state::DOWN => {
                // The link retrains and comes back: INIT, the port down in between.
                p.raise(PORT_CHANGE_SUBTYPE_DOWN);
                p.state = port_state::INIT;
            }
            port_state::ARMED => p.state = port_state::ARMED,
            port_state::ACTIVE if p.state != port_state::ACTIVE => {
                p.state = port_state::ACTIVE;
                p.raise(PORT_CHANGE_SUBTYPE_ACTIVE);
            }
            _ => {}
        }
        if a(pi::REREG_SUBNET_TIMEOUT) & 0x80 != 0 {
            p.raise(PORT_CHANGE_SUBTYPE_CLIENT_REREG);
        }
        0
    }

    /// GUIDInfo (IBA 14.2.5.5): block 0 of 8 GUIDs; entry 0 is the port GUID and read-only.
    fn guid_info(&mut self, port: usize, set: bool, amod: u32, m: &mut MadBytes) -> u16 {
        let pguid = self.port_guid(port + 1);
        let Some(p) = self.ports.get_mut(port).map(|p| &mut p.sma) else {
            return status::INVALID_ATTRIB_VALUE;
        };
        if amod != 0 {
            return status::INVALID_ATTRIB_VALUE;
        }
        if set {
            let mut changed = false;
            for (i, g) in p.guids.iter_mut().enumerate().skip(1) {
                let v = be64(m, off::DATA + i * 8);
                changed |= *g != v;
                *g = v;
            }
            if changed {
                p.raise(PORT_CHANGE_SUBTYPE_GUID);
            }
        }
        p.guids[0] = pguid;
        for (i, g) in p.guids.iter().enumerate() {
            put(m, off::DATA + i * 8, &g.to_be_bytes());
        }
        0
    }

    /// P_KeyTable (IBA 14.2.5.7): blocks of 32 entries; the attribute modifier's low 16 bits
    /// are the block.
    fn pkey_table(&mut self, port: usize, set: bool, amod: u32, m: &mut MadBytes) -> u16 {
        let block = (amod & 0xffff) as usize;
        let Some(p) = self.ports.get_mut(port).map(|p| &mut p.sma) else {
            return status::INVALID_ATTRIB_VALUE;
        };
        let Some(entries) = p.pkeys.get_mut(block * 32..block * 32 + 32) else {
            return status::INVALID_ATTRIB_VALUE;
        };
        if set {
            let mut changed = false;
            for (i, k) in entries.iter_mut().enumerate() {
                let v = be16(m, off::DATA + i * 2);
                changed |= *k != v;
                *k = v;
            }
            if changed {
                p.raise(PORT_CHANGE_SUBTYPE_PKEY);
            }
        }
        let mut d = [0u8; mad::SMP_DATA];
        if let Some(entries) = p.pkeys.get(block * 32..block * 32 + 32) {
            for (i, k) in entries.iter().enumerate() {
                put(&mut d, i * 2, &k.to_be_bytes());
            }
        }
        put(m, off::DATA, &d);
        0
    }

    /// SLtoVLMappingTable (IBA 14.2.5.8): 16 four-bit VLs.
    fn sl2vl(&mut self, port: usize, set: bool, m: &mut MadBytes) -> u16 {
        let Some(p) = self.ports.get_mut(port).map(|p| &mut p.sma) else {
            return status::INVALID_ATTRIB_VALUE;
        };
        if set {
            if let Some(s) = m.get(off::DATA..off::DATA + 8) {
                p.sl2vl.copy_from_slice(s);
            }
        }
        let mut d = [0u8; mad::SMP_DATA];
        put(&mut d, 0, &p.sl2vl);
        put(m, off::DATA, &d);
        0
    }

    /// VLArbitrationTable (IBA 14.2.5.9): attribute modifier bits 31:16 the block (1..4).
    fn vl_arb(&mut self, port: usize, set: bool, amod: u32, m: &mut MadBytes) -> u16 {
        let block = (amod >> 16) as usize;
        let Some(p) = self.ports.get_mut(port).map(|p| &mut p.sma) else {
            return status::INVALID_ATTRIB_VALUE;
        };
        let Some(b) = block.checked_sub(1).and_then(|i| p.vl_arb.get_mut(i)) else {
            return status::INVALID_ATTRIB_VALUE;
        };
        if set {
            if let Some(s) = m.get(off::DATA..off::DATA + 64) {
                b.copy_from_slice(s);
            }
        }
        let v = *b;
        put(m, off::DATA, &v);
        0
    }
}
