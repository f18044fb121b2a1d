// SPDX-License-Identifier: GPL-2.0

//! The performance management agent of a port (IBA Vol 1 16.1, `include/rdma/ib_pma.h`):
//! ClassPortInfo, PortCounters and PortCountersExtended over the traffic the data path moves.
//!
//! The engine counts per port what a packet-level link would carry for each message it
//! executes ([`Traffic`]): the packets at the path MTU and their octets, each packet with
//! its LRH, BTH, ICRC and VCRC (26 bytes; the extended transport headers are not counted)
//! plus its payload. A message counts on the sending port as transmitted and on the
//! receiving port as received; an RDMA READ's payload flows the other way (one request
//! packet out, the response packets back). ACKs are not counted. Data counters are in
//! 4-byte words, as the PMA reports them.

use super::mad::{self, be16, method, off, put, status, MadBytes, MadOutcome};
use super::Fw;

/// PMA attribute ids (`IB_PMA_*`, ib_pma.h).
pub(crate) mod attr {
    /// ClassPortInfo.
    pub(crate) const CLASS_PORT_INFO: u16 = 0x0001;
    /// PortCounters.
    pub(crate) const PORT_COUNTERS: u16 = 0x0012;
    /// PortCountersExtended.
    pub(crate) const PORT_COUNTERS_EXT: u16 = 0x001d;
}

/// ClassPortInfo CapabilityMask bit: PortCountersExtended without the NoIETF counters
/// limitation (`IB_PMA_CLASS_CAP_EXT_WIDTH`).
pub(crate) const CAP_EXT_WIDTH: u16 = 1 << 9;

/// Header octets of one packet as counted: LRH 8, BTH 12, ICRC 4, VCRC 2.
pub(crate) const PACKET_OVERHEAD: u64 = 26;

/// What a port moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Traffic {
    /// Octets transmitted.
    pub(crate) xmit_bytes: u64,
    /// Octets received.
    pub(crate) rcv_bytes: u64,
    /// Packets transmitted.
    pub(crate) xmit_pkts: u64,
    /// Packets received.
    pub(crate) rcv_pkts: u64,
}

impl Traffic {
    /// Nothing moved.
    pub(crate) const ZERO: Traffic = Traffic {
        xmit_bytes: 0,
        rcv_bytes: 0,
        xmit_pkts: 0,
        rcv_pkts: 0,
    };

    /// Counts `pkts` packets carrying `payload` bytes out of the port.
    pub(crate) fn xmit(&mut self, pkts: u32, payload: u64) {
        let (p, b) = octets(pkts, payload);
        self.xmit_pkts = self.xmit_pkts.saturating_add(p);
        self.xmit_bytes = self.xmit_bytes.saturating_add(b);
    }

    /// Clears the counters `sel` names: bit 0 transmitted octets, 1 received octets, 2
    /// transmitted packets, 3 received packets.
    fn clear(&mut self, sel: u16) {
        for (bit, c) in [
            &mut self.xmit_bytes,
            &mut self.rcv_bytes,
            &mut self.xmit_pkts,
            &mut self.rcv_pkts,
        ]
        .into_iter()
        .enumerate()
        {
            if sel & (1 << bit) != 0 {
                *c = 0;
            }
        }
    }

    /// Counts `pkts` packets carrying `payload` bytes into the port.
    pub(crate) fn rcv(&mut self, pkts: u32, payload: u64) {
        let (p, b) = octets(pkts, payload);
        self.rcv_pkts = self.rcv_pkts.saturating_add(p);
        self.rcv_bytes = self.rcv_bytes.saturating_add(b);
    }
}

/// Packets and octets of `pkts` packets with `payload` bytes in all.
fn octets(pkts: u32, payload: u64) -> (u64, u64) {
    let p = u64::from(pkts.max(1));
    (p, payload.saturating_add(p.saturating_mul(PACKET_OVERHEAD)))
}

/// A 32-bit PortCounters field: saturates at its maximum (IBA 16.1.3.5).
fn sat32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl Fw {
    /// The traffic (0-based) port `port` moved.
    pub(crate) fn port_traffic(&self, port: usize) -> Traffic {
        self.ports.get(port).map_or(Traffic::ZERO, |p| p.traffic)
    }

    /// Counts on (0-based) port `port`.
    pub(crate) fn count_traffic(&mut self, port: usize, f: impl FnOnce(&mut Traffic)) {
        if let Some(p) = self.ports.get_mut(port) {
            f(&mut p.traffic);
        }
    }

    /// A PerfMgt MAD at port `port`: Get of ClassPortInfo, PortCounters and
    /// PortCountersExtended; Set of the counters clears the ones CounterSelect names.
    pub(super) fn pma(&mut self, port: usize, m: &mut MadBytes) -> MadOutcome {
        if m[off::BASE_VERSION] != 1 || m[off::CLASS_VERSION] != 1 {
            mad::respond(m, status::BAD_VERSION);
            return MadOutcome::Reply;
        }
        let meth = m[off::METHOD];
        if meth != method::GET && meth != method::SET {
            mad::respond(m, status::UNSUPPORTED_METHOD);
            return MadOutcome::Reply;
        }
        let set = meth == method::SET;
        let d = off::DATA;
        let st = match be16(m, off::ATTR_ID) {
            attr::CLASS_PORT_INFO if !set => {
                m[d..].fill(0);
                m[d] = 1; // BaseVersion
                m[d + 1] = 1; // ClassVersion
                put(m, d + 2, &CAP_EXT_WIDTH.to_be_bytes());
                // CapabilityMask2 0, RespTimeValue 18.
                put(m, d + 4, &18u32.to_be_bytes());
                0
            }
            attr::PORT_COUNTERS => {
                let sel = be16(m, d + 2);
                if set {
                    // CounterSelect bits 12..15: PortXmitData, PortRcvData, PortXmitPkts,
                    // PortRcvPkts.
                    self.count_traffic(port, |t| t.clear(sel >> 12));
                }
                let t = self.port_traffic(port);
                let ps = m[d + 1];
                m[d..].fill(0);
                m[d + 1] = ps;
                put(m, d + 2, &sel.to_be_bytes());
                put(m, d + 24, &sat32(t.xmit_bytes / 4).to_be_bytes());
                put(m, d + 28, &sat32(t.rcv_bytes / 4).to_be_bytes());
                put(m, d + 32, &sat32(t.xmit_pkts).to_be_bytes());
                put(m, d + 36, &sat32(t.rcv_pkts).to_be_bytes());
                0
            }
            attr::PORT_COUNTERS_EXT => {
                let sel = be16(m, d + 2);
                if set {
                    // CounterSelect bits 0..3: PortXmitData, PortRcvData, PortXmitPkts,
                    // PortRcvPkts (the unicast ones with them: all traffic is unicast).
                    self.count_traffic(port, |t| t.clear(sel));
                }
                let t = self.port_traffic(port);
                let ps = m[d + 1];
                m[d..].fill(0);
                m[d + 1] = ps;
                put(m, d + 2, &sel.to_be_bytes());
                put(m, d + 8, &(t.xmit_bytes / 4).to_be_bytes());
                put(m, d + 16, &(t.rcv_bytes / 4).to_be_bytes());
                put(m, d + 24, &t.xmit_pkts.to_be_bytes());
                put(m, d + 32, &t.rcv_pkts.to_be_bytes());
                // Unicast packets: all of them (no multicast is modeled).
                put(m, d + 40, &t.xmit_pkts.to_be_bytes());
                put(m, d + 48, &t.rcv_pkts.to_be_bytes());
                0
            }
            _ => status::UNSUPPORTED_METHOD_ATTRIB,
        };
        mad::respond(m, st);
        MadOutcome::Reply
    }
}
