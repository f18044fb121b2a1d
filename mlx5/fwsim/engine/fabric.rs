// SPDX-License-Identifier: GPL-2.0

//! The fabric: the functions one pass serves and how a message finds its destination. The
//! functions of one link layer reach each other by LID on InfiniBand and by RoCE GID on
//! Ethernet; a port that is administratively down neither sends nor receives.

use crate::fwsim::dma::DmaMem;
use crate::fwsim::profile::LinkLayer;
use crate::fwsim::{Fw, QCnt};

/// One function on the fabric: its firmware state and the memory its device reaches.
pub(crate) struct Node<'a> {
    /// The function.
    pub(crate) fw: &'a mut Fw,
    /// What the function's device can reach (bus addresses).
    pub(crate) mem: &'a dyn DmaMem,
}

/// Counts `k` in counter set `set` of node `i`.
pub(super) fn q_count(nodes: &mut [Node<'_>], i: usize, set: u32, k: QCnt) {
    if let Some(n) = nodes.get_mut(i) {
        n.fw.q_count(set, k);
    }
}

/// The node and port that own `lid` (InfiniBand) or `gid` (Ethernet), among the nodes of
/// `ll`; the port must be up.
pub(super) fn route(nodes: &[Node<'_>], ll: LinkLayer, lid: u16, gid: &[u8; 16]) -> Option<usize> {
    nodes.iter().position(|n| {
        let fw = &*n.fw;
        fw.cfg.link_layer == ll
            && (0..usize::from(fw.cfg.num_ports)).any(|p| {
                fw.port_up(p)
                    && match ll {
                        LinkLayer::Ib => fw.port_lid(p) == lid,
                        LinkLayer::Ethernet => fw.has_gid(p, gid),
                    }
            })
    })
}

impl Fw {
    /// The LID of (0-based) port `port`: unique per function on a fabric, from the serial
    /// (`0x100 + serial * 2 + port`; the SM is LID 1).
    pub(crate) fn port_lid(&self, port: usize) -> u16 {
        let p = u16::try_from(port & 1).unwrap_or(0);
        0x100 + (((self.cfg.serial & 0x1fff) as u16) << 1) + p
    }

    /// Whether a (0-based) port is administratively up (PAOS).
    pub(super) fn port_up(&self, port: usize) -> bool {
        port < usize::from(self.cfg.num_ports)
            && self.ports.get(port).is_some_and(|p| p.admin_status == 1)
    }

    /// Whether a (0-based) port's RoCE address table holds `gid`.
    fn has_gid(&self, port: usize, gid: &[u8; 16]) -> bool {
        self.ports
            .get(port)
            .is_some_and(|p| p.roce.iter().flatten().any(|a| a.gid == *gid))
    }

    /// The largest UD message: the path MTU of the port (InfiniBand 4096; Ethernet: the
    /// largest IB MTU that fits the port MTU less the L2 overhead, as mlx5_ib reports it).
    pub(super) fn ud_mtu(&self, port: usize) -> u32 {
        match self.cfg.link_layer {
            LinkLayer::Ib => 4096,
            LinkLayer::Ethernet => {
                let payload = self
                    .ports
                    .get(port)
                    .map_or(1500, |p| p.admin_mtu.saturating_sub(22));
                [4096, 2048, 1024, 512]
                    .into_iter()
                    .find(|m| *m <= payload)
                    .unwrap_or(256)
            }
        }
    }
}
