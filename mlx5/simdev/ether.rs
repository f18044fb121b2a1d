// SPDX-License-Identifier: GPL-2.0

//! The Ethernet segment of an Ethernet fabric: the functions' ports on one learning switch.
//!
//! Every function of an Ethernet fabric (`sim=eth,eth`) has one port on the segment
//! ([`Segment`]), indexed as on the fabric. A frame sent out of a port (its interface's
//! `ndo_start_xmit`, [`SegmentPort::transmit`]) is switched by destination MAC ([`Fdb`]): the
//! source MAC is learned on the sending port; a destination learned on another port gets the
//! frame alone; unknown unicast, broadcast and multicast are flooded to every other port;
//! nothing goes back out of the port it came in on. A port whose interface is down, or whose
//! PAOS admin status is down, neither sends nor receives.
//!
//! Delivery is direct, in the sender's context, as veth delivers (`veth_xmit()` →
//! `__netif_rx()`): the destinations' interfaces are taken (counted references) under the
//! segment's lock, the lock is released, and each gets a copy through `netif_rx()`, which
//! only queues the skb on the CPU's backlog (the receive path runs later in softirq: no
//! recursion into the sender's transmit). The segment's locks are leaves (IRQ-safe: transmits
//! come from softirq context) and are never held across `netif_rx()`, the uplink's transmit
//! or a [`RoceRx`] call.
//!
//! A segment may have an uplink (`uplink=eth0`, [`crate::uplink`]): a real interface of the
//! VM as one more switch port, [`UPLINK`]. Frames the switch sends to it (unknown unicast,
//! broadcast, multicast, and addresses learned behind it) leave through `dev_queue_xmit()`;
//! frames the interface receives that are not its own (it is promiscuous, as a bridge port)
//! come in through its rx_handler and are switched like a function's, never back out of it.
//!
//! RoCE v2 frames (UDP port 4791, `roce::is_roce_v2`) for a function go to its fabric's data
//! path instead of its interface ([`RoceRx`], as a ConnectX's steering hands RoCE traffic to
//! its RDMA engine, not to the netdev); the data path's own packets come in through
//! [`Segment::send`] from the fabric's worker after its pass (`engine/wire.rs`), with the
//! fabric lock held (the segment's lock is a leaf below it; nothing takes the fabric lock
//! under the segment's).

use crate::fwsim::roce::is_roce_v2;
use crate::fwsim::spec::MAX_FUNCTIONS;
use crate::hw::EthPort;
use crate::netdev::NetDevice;
use crate::uplink::{UplinkRx, UplinkXmit};
use kernel::new_spinlock_irq;
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::sync::{Arc, SpinLockIrq};

/// A MAC address.
pub(crate) type Mac = [u8; 6];

/// The switch port of the segment's uplink (after the functions' ports).
pub(crate) const UPLINK: usize = MAX_FUNCTIONS;

/// Learned addresses per segment; when full, the oldest entry is replaced.
const FDB_SIZE: usize = 64;

/// Where a frame goes ([`Fdb::forward`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Forward {
    /// To this port only.
    Port(usize),
    /// To every port but the one it came in on.
    Flood,
    /// Nowhere: the destination is on the port it came from.
    Drop,
}

/// Whether `mac` is a group (broadcast or multicast) address: the I/G bit.
fn is_group(mac: &Mac) -> bool {
    mac[0] & 1 != 0
}

/// A learning switch's forwarding database (pure: no lock, no allocation).
pub(crate) struct Fdb {
    entries: [Option<(Mac, usize)>; FDB_SIZE],
    /// The slot the next new address takes when the table is full.
    next: usize,
}

impl Fdb {
    /// An empty table.
    pub(crate) const fn new() -> Self {
        Fdb {
            entries: [None; FDB_SIZE],
            next: 0,
        }
    }

    /// Learns that `src` is behind `port` (a group address is never learned; an address that
    /// moved is updated).
    pub(crate) fn learn(&mut self, src: &Mac, port: usize) {
        if is_group(src) || *src == [0; 6] {
            return;
        }
        if let Some(e) = self.entries.iter_mut().flatten().find(|(m, _)| m == src) {
            e.1 = port;
            return;
        }
        let slot = match self.entries.iter().position(|e| e.is_none()) {
            Some(i) => i,
            None => {
                let i = self.next % FDB_SIZE;
                self.next = (i + 1) % FDB_SIZE;
                i
            }
        };
        if let Some(e) = self.entries.get_mut(slot) {
            *e = Some((*src, port));
        }
    }

    /// Where a frame to `dst` that came in on `from` goes.
    pub(crate) fn forward(&self, dst: &Mac, from: usize) -> Forward {
        if is_group(dst) {
            return Forward::Flood;
        }
        match self.entries.iter().flatten().find(|(m, _)| m == dst) {
            Some(&(_, p)) if p == from => Forward::Drop,
            Some(&(_, p)) => Forward::Port(p),
            None => Forward::Flood,
        }
    }

    /// Forgets every address learned on `port` (its interface went away).
    pub(crate) fn forget_port(&mut self, port: usize) {
        for e in self.entries.iter_mut() {
            if matches!(e, Some((_, p)) if *p == port) {
                *e = None;
            }
        }
    }
}

/// Where the RoCE v2 frames for the functions go: their fabric's data path.
pub(crate) trait RoceRx: Send + Sync {
    /// A RoCE v2 frame for the function on port `port`, in the sender's context (softirq for
    /// the uplink's), outside the segment's lock.
    fn roce_rx(&self, port: usize, frame: &[u8]);
}

/// One port of the segment.
struct Port {
    /// The interface received frames go to.
    dev: Option<ARef<NetDevice>>,
    /// The interface is up (`ndo_open` .. `ndo_stop`).
    open: bool,
    /// The port's PAOS admin status is up.
    admin: bool,
}

impl Port {
    fn passes(&self) -> bool {
        self.open && self.admin && self.dev.is_some()
    }
}

/// The ports and the switch's table.
struct State {
    ports: [Port; MAX_FUNCTIONS],
    /// The uplink interface, if one is attached.
    uplink: Option<ARef<NetDevice>>,
    fdb: Fdb,
}

/// Frames switched (debugfs `stats`): copies delivered (to the interfaces and out of the
/// uplink), and copies not delivered because the destination port was down or the uplink
/// refused the frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SegmentStats {
    pub(crate) delivered: u64,
    pub(crate) dropped: u64,
}

/// The segment of one Ethernet fabric.
#[pin_data]
pub(crate) struct Segment {
    #[pin]
    state: SpinLockIrq<State>,
    #[pin]
    stats: SpinLockIrq<SegmentStats>,
    /// The functions' data path (their fabric), while it runs.
    #[pin]
    roce: SpinLockIrq<Option<Arc<dyn RoceRx>>>,
}

impl Segment {
    /// A segment with every port disconnected (admin up, interface down).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Segment {
                state <- new_spinlock_irq!(State {
                    ports: [const {
                        Port {
                            dev: None,
                            open: false,
                            admin: true,
                        }
                    }; MAX_FUNCTIONS],
                    uplink: None,
                    fdb: Fdb::new(),
                }),
                stats <- new_spinlock_irq!(SegmentStats::default()),
                roce <- new_spinlock_irq!(None),
            }),
            GFP_KERNEL,
        )
    }

    /// Port `index` of this segment, as the function's [`EthPort`].
    ///
    /// # Errors
    ///
    /// `EINVAL` for an index past the segment's ports, `ENOMEM`.
    pub(crate) fn port(self: &Arc<Self>, index: usize) -> Result<Arc<dyn EthPort>> {
        if index >= MAX_FUNCTIONS {
            return Err(EINVAL);
        }
        let p: Arc<dyn EthPort> = Arc::new(
            SegmentPort {
                seg: self.clone(),
                index,
            },
            GFP_KERNEL,
        )?;
        Ok(p)
    }

    /// Sets port `index`'s PAOS admin status (the function's firmware reports it after
    /// every register write).
    pub(crate) fn set_admin(&self, index: usize, up: bool) {
        if let Some(p) = self.state.lock().ports.get_mut(index) {
            p.admin = up;
        }
    }

    /// What was switched so far.
    pub(crate) fn stats(&self) -> SegmentStats {
        *self.stats.lock()
    }

    /// Sets (or with `None` clears) where the RoCE v2 frames for the functions go.
    pub(crate) fn set_roce_rx(&self, r: Option<Arc<dyn RoceRx>>) {
        let old = core::mem::replace(&mut *self.roce.lock(), r);
        // The old reference is put outside the lock.
        drop(old);
    }

    /// Attaches (or with `None` detaches) the uplink interface: port [`UPLINK`].
    pub(crate) fn set_uplink(&self, dev: Option<ARef<NetDevice>>) {
        let old = {
            let mut s = self.state.lock();
            s.fdb.forget_port(UPLINK);
            core::mem::replace(&mut s.uplink, dev)
        };
        // The old reference is put outside the lock.
        drop(old);
    }

    /// Sends `frame` out of port `from` (a function's, or [`UPLINK`] for a frame received on
    /// the uplink): switched to the other ports' interfaces and the uplink. `false` when the
    /// port is down or the frame has no Ethernet header.
    pub(crate) fn send(&self, from: usize, frame: &[u8]) -> bool {
        let (Some(dst), Some(src)) = (frame.get(0..6), frame.get(6..12)) else {
            return false;
        };
        let (Ok(dst), Ok(src)) = (Mac::try_from(dst), Mac::try_from(src)) else {
            return false;
        };
        let mut to: [Option<ARef<NetDevice>>; MAX_FUNCTIONS] = [const { None }; MAX_FUNCTIONS];
        let mut up = None;
        let mut down = 0u64;
        // RoCE v2 frames go to the functions' data path, not their interfaces.
        let roce = is_roce_v2(frame);
        let mut roce_ports = 0u64;
        let sink = if roce { self.roce.lock().clone() } else { None };
        {
            let mut s = self.state.lock();
            let open = if from == UPLINK {
                s.uplink.is_some()
            } else {
                s.ports.get(from).is_some_and(Port::passes)
            };
            if !open {
                return false;
            }
            s.fdb.learn(&src, from);
            let fwd = s.fdb.forward(&dst, from);
            for (i, (p, slot)) in s.ports.iter().zip(to.iter_mut()).enumerate() {
                let wanted = match fwd {
                    Forward::Port(d) => d == i,
                    Forward::Flood => i != from,
                    Forward::Drop => false,
                };
                if !wanted || p.dev.is_none() {
                    continue;
                }
                if p.passes() && roce {
                    roce_ports |= 1 << i;
                } else if p.passes() {
                    *slot = p.dev.clone();
                } else {
                    down += 1;
                }
            }
            let to_uplink = match fwd {
                Forward::Port(d) => d == UPLINK,
                Forward::Flood => from != UPLINK,
                Forward::Drop => false,
            };
            if to_uplink {
                up = s.uplink.clone();
            }
        }
        // Outside the lock: netif_rx() only queues, and the references are put here.
        let mut delivered = 0u64;
        for dev in to.iter().flatten() {
            if dev.rx(frame).is_ok() {
                delivered += 1;
            }
        }
        if let Some(r) = sink.as_ref() {
            for i in (0..MAX_FUNCTIONS).filter(|i| roce_ports & (1 << i) != 0) {
                r.roce_rx(i, frame);
                delivered += 1;
            }
        }
        // Out of the uplink: dev_queue_xmit() from this (softirq or BH-disabled) context, as a
        // stacked device's transmit does; the core's recursion limit stops a loop.
        if let Some(dev) = up.as_ref() {
            match dev.xmit(frame) {
                Ok(()) => delivered += 1,
                Err(_) => down += 1,
            }
        }
        drop(to);
        drop(up);
        drop(sink);
        let mut st = self.stats.lock();
        st.delivered += delivered;
        st.dropped += down;
        true
    }
}

/// Frames received on the uplink come in through port [`UPLINK`].
impl UplinkRx for Segment {
    fn rx(&self, frame: &[u8]) {
        self.send(UPLINK, frame);
    }
}

/// A function's port on its fabric's segment.
struct SegmentPort {
    seg: Arc<Segment>,
    index: usize,
}

impl EthPort for SegmentPort {
    fn connect(&self, dev: Option<ARef<NetDevice>>) {
        let old = {
            let mut s = self.seg.state.lock();
            s.fdb.forget_port(self.index);
            match s.ports.get_mut(self.index) {
                Some(p) => {
                    if dev.is_none() {
                        p.open = false;
                    }
                    core::mem::replace(&mut p.dev, dev)
                }
                None => dev,
            }
        };
        // The old reference is put outside the lock.
        drop(old);
    }

    fn set_open(&self, open: bool) {
        let mut s = self.seg.state.lock();
        if !open {
            s.fdb.forget_port(self.index);
        }
        if let Some(p) = s.ports.get_mut(self.index) {
            p.open = open;
        }
    }

    fn transmit(&self, frame: &[u8]) -> bool {
        self.seg.send(self.index, frame)
    }
}

#[kunit_tests(mlx5_fwsim_ether)]
mod tests {
    use super::*;

    const A: Mac = [0x0c, 0x42, 0xa1, 0, 0, 0];
    const B: Mac = [0x0c, 0x42, 0xa1, 0, 1, 0];
    const C: Mac = [0x0c, 0x42, 0xa1, 0, 2, 0];
    const BCAST: Mac = [0xff; 6];
    const MCAST: Mac = [0x33, 0x33, 0, 0, 0, 1];

    #[test]
    fn unknown_unicast_and_group_addresses_flood() {
        let f = Fdb::new();
        assert_eq!(f.forward(&B, 0), Forward::Flood);
        assert_eq!(f.forward(&BCAST, 0), Forward::Flood);
        assert_eq!(f.forward(&MCAST, 1), Forward::Flood);
    }

    #[test]
    fn learned_unicast_goes_to_its_port_only() {
        let mut f = Fdb::new();
        f.learn(&A, 0);
        f.learn(&B, 1);
        assert_eq!(f.forward(&B, 0), Forward::Port(1));
        assert_eq!(f.forward(&A, 1), Forward::Port(0));
        assert_eq!(f.forward(&C, 0), Forward::Flood);
        // Never back out of the port it came in on.
        assert_eq!(f.forward(&A, 0), Forward::Drop);
        // A station that moved is relearned.
        f.learn(&B, 2);
        assert_eq!(f.forward(&B, 0), Forward::Port(2));
        // Group sources are not learned.
        f.learn(&BCAST, 1);
        f.learn(&MCAST, 1);
        assert_eq!(f.forward(&BCAST, 0), Forward::Flood);
        f.forget_port(2);
        assert_eq!(f.forward(&B, 0), Forward::Flood);
        assert_eq!(f.forward(&A, 1), Forward::Port(0));
    }

    #[test]
    fn a_full_table_replaces_the_oldest() {
        let mut f = Fdb::new();
        for i in 0..FDB_SIZE {
            f.learn(&[2, 0, 0, 0, 0, i as u8], 1);
        }
        assert_eq!(f.forward(&[2, 0, 0, 0, 0, 0], 0), Forward::Port(1));
        f.learn(&A, 2);
        assert_eq!(f.forward(&A, 0), Forward::Port(2));
        // Slot 0 went to A.
        assert_eq!(f.forward(&[2, 0, 0, 0, 0, 0], 0), Forward::Flood);
        assert_eq!(f.forward(&[2, 0, 0, 0, 0, 1], 0), Forward::Port(1));
    }

    #[test]
    fn a_port_without_an_interface_sends_nothing() -> Result {
        let s = Segment::new()?;
        let p = s.port(0)?;
        let mut frame = [0u8; 60];
        frame[..6].copy_from_slice(&BCAST);
        frame[6..12].copy_from_slice(&A);
        assert!(!p.transmit(&frame));
        assert!(!p.transmit(&frame[..10]));
        assert_eq!(s.stats(), SegmentStats::default());
        Ok(())
    }
}
