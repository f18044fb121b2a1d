// SPDX-License-Identifier: GPL-2.0

//! The network headers a message is seen with at its destination: the 40 bytes of GRH (or
//! IPv4 header) a UD receive buffer starts with, and the RoCE L3 type a UD receive CQE
//! reports. They follow from the sender's port and GID table entry and the address vector.

use super::qp_state::{Av, Snap};
use crate::fwsim::profile::LinkLayer;
use crate::fwsim::Fw;
use crate::prm::consts::ROCE_VERSION_2;

impl Fw {
    /// The source GID of a message of `s` with GID index `index`.
    fn sgid(&self, port: usize, index: u8) -> [u8; 16] {
        match self.cfg.link_layer {
            LinkLayer::Ib if index == 0 => {
                let mut g = [0u8; 16];
                g[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
                g[8..].copy_from_slice(&self.port_guid(port + 1).to_be_bytes());
                g
            }
            LinkLayer::Ib => [0; 16],
            LinkLayer::Ethernet => self
                .ports
                .get(port)
                .and_then(|p| p.roce.get(usize::from(index)).copied().flatten())
                .map_or([0; 16], |a| a.gid),
        }
    }

    /// The RoCE entry of a sender's GID index: (version 2, IPv4).
    fn roce_kind(&self, port: usize, index: u8) -> (bool, bool) {
        self.ports
            .get(port)
            .and_then(|p| p.roce.get(usize::from(index)).copied().flatten())
            .map_or((false, false), |a| {
                (u32::from(a.version) == ROCE_VERSION_2, a.l3_type == 0)
            })
    }

    /// The RoCE L3 header type a UD receive CQE reports in its `sl` bits
    /// (`MLX5_CQE_ROCE_L3_HEADER_TYPE_*`: 0 GRH (RoCE v1), 1 IPv6, 2 IPv4).
    pub(super) fn roce_l3(&self, s: &Snap, av: Option<Av>) -> u8 {
        let index = av.map_or(s.sgid_index, |a| a.sgid_index);
        match self.roce_kind(s.port, index) {
            (false, _) => 0,
            (true, false) => 1,
            (true, true) => 2,
        }
    }

    /// The 40 bytes a UD receive buffer starts with: an IPv6-style GRH (InfiniBand, RoCE v1,
    /// RoCE v2 over IPv6), or for RoCE v2 over IPv4 the IPv4 header in the last 20 bytes.
    pub(super) fn grh_bytes(&self, s: &Snap, av: &Av, len: u64) -> Option<[u8; 40]> {
        let sgid = self.sgid(s.port, av.sgid_index);
        let eth = self.cfg.link_layer == LinkLayer::Ethernet;
        let (v2, v4) = if eth {
            self.roce_kind(s.port, av.sgid_index)
        } else {
            (false, false)
        };
        // BTH + DETH + payload + ICRC, plus UDP for RoCE v2.
        let l4 = 12 + 8 + len + 4 + if v2 { 8 } else { 0 };
        let mut h = [0u8; 40];
        if v2 && v4 {
            let total = u16::try_from(20 + l4).ok()?;
            let ip = h.get_mut(20..40)?;
            ip[0] = 0x45;
            ip[1] = av.tclass;
            ip[2..4].copy_from_slice(&total.to_be_bytes());
            ip[6] = 0x40; // DF
            ip[8] = av.hop_limit;
            ip[9] = 17; // UDP
            ip[12..16].copy_from_slice(sgid.get(12..16)?);
            ip[16..20].copy_from_slice(av.rgid.get(12..16)?);
            let mut sum = 0u32;
            for i in (0..20).step_by(2) {
                sum += u32::from(u16::from_be_bytes([ip[i], ip[i + 1]]));
            }
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
            return Some(h);
        }
        let w0 = (6u32 << 28) | (u32::from(av.tclass) << 20) | (av.flow_label & 0xf_ffff);
        h[0..4].copy_from_slice(&w0.to_be_bytes());
        h[4..6].copy_from_slice(&u16::try_from(l4).ok()?.to_be_bytes());
        // Next header: the IB BTH (0x1b) or UDP for RoCE v2.
        h[6] = if v2 { 17 } else { 0x1b };
        h[7] = av.hop_limit;
        h[8..24].copy_from_slice(&sgid);
        h[24..40].copy_from_slice(&av.rgid);
        Some(h)
    }
}
