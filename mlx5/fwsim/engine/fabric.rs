// SPDX-License-Identifier: GPL-2.0

//! The fabric: the functions one pass serves and how a message finds its destination. The
//! functions of one link layer reach each other by LID on InfiniBand and by RoCE GID on
//! Ethernet; a port that is administratively down neither sends nor receives. On an
//! InfiniBand fabric with a switch ([`Wire`], `switch.rs`) a LID goes where the switch's
//! linear forwarding table sends it: a LID the subnet manager did not program (or routed to
//! a port that is not ACTIVE, or to the switch itself, which has no data path) is dropped.

use crate::fwsim::dma::DmaMem;
use crate::fwsim::profile::LinkLayer;
use crate::fwsim::switch::Switch;
use crate::fwsim::{Fw, QCnt};

/// What links the functions of an InfiniBand fabric: its switch and the switch port each
/// node's port 1 is linked to (by node index; port `p` is at `first_ports[i] + p`).
pub(crate) struct Wire<'a> {
    /// The switch (its SMA answers the SMPs that reach it: `smp.rs`).
    pub(crate) switch: &'a mut Switch,
    /// Per node: the switch port of its port 1.
    pub(crate) first_ports: &'a [u8],
}

/// One function on the fabric: its firmware state and the memory its device reaches.
pub(crate) struct Node<'a> {
    /// The function.
    pub(crate) fw: &'a mut Fw,
    /// What the function's device can reach (bus addresses).
    pub(crate) mem: &'a dyn DmaMem,
    /// The fabric's switch, held by one node (the first) of an InfiniBand fabric; `None` on
    /// every node: the functions reach each other directly.
    pub(crate) wire: Option<Wire<'a>>,
}

/// Counts `k` in counter set `set` of node `i`.
pub(super) fn q_count(nodes: &mut [Node<'_>], i: usize, set: u32, k: QCnt) {
    if let Some(n) = nodes.get_mut(i) {
        n.fw.q_count(set, k);
    }
}

/// The node and (0-based) port that own `lid` (InfiniBand: a port the subnet manager made
/// ACTIVE, whose LID range, the base LID and its 2^LMC path bits, holds `lid`) or `gid`
/// (Ethernet: in an entry of RoCE version `version`, the framing the packet left with), among
/// the nodes of `ll`; the port must be up. Through a switch: the node linked to the port the
/// switch's forwarding table gives for `lid`.
pub(super) fn route(
    nodes: &[Node<'_>],
    ll: LinkLayer,
    lid: u16,
    gid: &[u8; 16],
    version: Option<u8>,
) -> Option<(usize, usize)> {
    if ll == LinkLayer::Ib {
        if let Some(w) = nodes.iter().find_map(|n| n.wire.as_ref()) {
            let out = w.switch.route_lid(lid)?;
            return nodes.iter().enumerate().find_map(|(i, n)| {
                let first = *w.first_ports.get(i)?;
                let p = usize::from(out.checked_sub(first)?);
                (n.fw.cfg.link_layer == ll
                    && p < usize::from(n.fw.cfg.num_ports)
                    && n.fw.port_up(p)
                    && n.fw.owns_lid(p, lid))
                .then_some((i, p))
            });
        }
    }
    nodes.iter().enumerate().find_map(|(i, n)| {
        let fw = &*n.fw;
        if fw.cfg.link_layer != ll {
            return None;
        }
        (0..usize::from(fw.cfg.num_ports))
            .find(|&p| {
                fw.port_up(p)
                    && match ll {
                        LinkLayer::Ib => fw.owns_lid(p, lid),
                        LinkLayer::Ethernet => fw.has_gid(p, gid, version),
                    }
            })
            .map(|p| (i, p))
    })
}

impl Fw {
    /// The base LID of (0-based) port `port`, as the subnet manager set it through the SMA
    /// (`sma.rs`; 0 before).
    pub(crate) fn port_lid(&self, port: usize) -> u16 {
        self.sma(port).map_or(0, |s| s.lid)
    }

    /// Whether (0-based) port `port` is ACTIVE with `lid` in its LID range.
    fn owns_lid(&self, port: usize, lid: u16) -> bool {
        self.sma(port).is_some_and(|s| {
            s.state == crate::fwsim::sma::port_state::ACTIVE
                && s.lid != 0
                && lid >> s.lmc.min(7) == s.lid >> s.lmc.min(7)
        })
    }

    /// Whether a (0-based) port is administratively up (PAOS).
    pub(crate) fn port_up(&self, port: usize) -> bool {
        port < usize::from(self.cfg.num_ports)
            && self.ports.get(port).is_some_and(|p| p.admin_status == 1)
    }

    /// Whether a message may leave (0-based) port `port` with GID index `sgid_index`: on
    /// Ethernet the index must name a programmed RoCE address entry, whose GID and RoCE
    /// version the packet's L3 header carries (a ConnectX builds the headers from the entry;
    /// an empty entry has nothing to send from, the packet never leaves).
    pub(super) fn may_send_from(&self, port: usize, sgid_index: u8) -> bool {
        self.cfg.link_layer != LinkLayer::Ethernet
            || self
                .ports
                .get(port)
                .and_then(|p| p.roce.get(usize::from(sgid_index)))
                .is_some_and(|a| a.is_some())
    }

    /// Whether a (0-based) port's RoCE address table holds `gid` in an entry of RoCE version
    /// `version`: a ConnectX takes a RoCE v1 frame (Ethertype 0x8915, a GRH) for a v1 entry's
    /// GID and a RoCE v2 one (IP, UDP to 4791) for a v2 entry's, never the other way round.
    pub(super) fn has_gid(&self, port: usize, gid: &[u8; 16], version: Option<u8>) -> bool {
        self.ports.get(port).is_some_and(|p| {
            p.roce
                .iter()
                .flatten()
                .any(|a| a.gid == *gid && Some(a.version) == version)
        })
    }

    /// The RoCE version of a (0-based) port's GID entry `index` (`roce_version`:
    /// `MLX5_ROCE_VERSION_1` 0 or `_2` 2): the framing of what a QP or AV using it sends and
    /// expects; `None` for an empty entry or an InfiniBand port.
    pub(super) fn roce_version(&self, port: usize, index: u8) -> Option<u8> {
        if self.cfg.link_layer != LinkLayer::Ethernet {
            return None;
        }
        self.ports
            .get(port)
            .and_then(|p| p.roce.get(usize::from(index)).copied().flatten())
            .map(|a| a.version)
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
