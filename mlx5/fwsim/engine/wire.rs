// SPDX-License-Identifier: GPL-2.0

//! RoCE v2 packets between an Ethernet fabric's functions and the hosts behind its uplink
//! (`Documentation/wire.md`). A message to a GID that a function of the fabric holds is
//! still moved directly (`requester.rs`, `responder.rs`); one to any other GID is what this
//! file carries:
//!
//! * [`send_ud`]: a UD SEND (with immediate) leaves as one RoCE v2 packet built by
//!   `roce.rs` from the sender's RoCE address entry (source MAC, GID, IPv4 or IPv6) and the
//!   address vector (destination MAC, GID, QPN, Q_Key, traffic class, hop limit), its payload
//!   gathered straight into the frame. It goes into the function's [`WireTx`] queue, which the
//!   device glue empties onto the fabric's Ethernet segment after the pass (outside the
//!   engine); UD completes once the packet is queued, as a ConnectX completes a UD send once
//!   it is on the wire.
//! * [`receive`]: a frame the segment steered to the function's data path (UDP port 4791)
//!   is checked by `roce::parse` (lengths, IP checksum, ICRC: a bad one is dropped) and must
//!   be addressed to one of the port's GIDs; a UD SEND to one of the function's UD QPs with
//!   its Q_Key is received as a local one is: the GRH area holds the packet's IPv6 header (or
//!   for IPv4 its header in the last 20 bytes), the CQE reports the L3 type and the source
//!   QPN from the DETH.
//!
//! * [`queue_frame`] and [`conn_headers`]: what RC, UC and XRC in packets (`rc.rs`) build
//!   their packets with; [`receive`] hands such a packet back for it. A UD SEND to QPN 1 is
//!   for the port's GSI QP.
//!
//! Not carried in packets: QP0, RoCE v1 (an address entry of version 1 sends nothing out).

use super::completer::ReqRes;
use super::fabric::Node;
use super::mem::{mkey, Cur};
use super::message::Message;
use super::qp_state::{next_seg, snap, Seg, Snap};
use super::responder::{resp_ok, wire_qpn, write_rwqe, Lead};
use crate::fwsim::cqe::Cqe;
use crate::fwsim::dma::DmaMem;
use crate::fwsim::mcg;
use crate::fwsim::roce::{self, opcode, Bth, Deth, Eth, Headers, Ip, Packet, RoceError};
use crate::fwsim::xlat::MkeyInfo;
use crate::fwsim::{capacity, Fw, RoceAddr};
use crate::prm::consts::{
    QPC_STATE_RST, QPC_STATE_RTR, QPC_STATE_RTS, QPC_ST_QP1, QPC_ST_UD, ROCE_VERSION_2,
};
use crate::prm::ctx::{ads, qpc};
use crate::prm::wqe::{cqe_off, cqe_op, syndrome as syn, wqe_op};

/// The largest frame: a 4096-byte payload and the largest RoCE v2 headers (802.1Q, IPv6, UDP,
/// BTH, DETH, ImmDt, pad, ICRC: 106 bytes).
pub(crate) const MAX_FRAME: usize = 4096 + 128;

/// Frames a function's queue holds until the glue sends them.
const TX_SLOTS: usize = 8;

/// Bytes of the GRH area a UD receive buffer starts with.
const GRH_BYTES: usize = 40;

/// The packets a function's data path queued for the wire during a pass.
pub(crate) struct WireTx {
    buf: [u8; TX_SLOTS * MAX_FRAME],
    lens: [usize; TX_SLOTS],
    /// The oldest queued frame's slot, and how many are queued.
    head: usize,
    n: usize,
    /// Packets not sent because the queue was full.
    overflow: u64,
    /// RC packets (`rc.rs`) wait for room: the next pass sends them.
    pub(super) backlog: bool,
    /// What RC in packets counted.
    pub(super) stats: RcStats,
}

/// Counters of RC in packets (`rc.rs`), for the device's debugfs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RcStats {
    /// Request packets the requesters sent again (ACK timeout, NAK, RNR NAK).
    pub(crate) retransmits: u64,
    /// Requests the responders found past the expected PSN (answered by a sequence NAK).
    pub(crate) out_of_sequence: u64,
    /// Requests the responders found before the expected PSN (duplicates).
    pub(crate) duplicates: u64,
    /// Frames dropped for a bad ICRC (any service).
    pub(crate) bad_icrc: u64,
}

impl WireTx {
    /// An empty queue.
    pub(crate) const fn new() -> Self {
        WireTx {
            buf: [0; TX_SLOTS * MAX_FRAME],
            lens: [0; TX_SLOTS],
            head: 0,
            n: 0,
            overflow: 0,
            backlog: false,
            stats: RcStats {
                retransmits: 0,
                out_of_sequence: 0,
                duplicates: 0,
                bad_icrc: 0,
            },
        }
    }

    /// An empty queue, built in place (it is 17 KiB).
    #[cfg(MODULE)]
    pub(crate) fn new_in_place() -> impl pin_init::Init<Self> {
        pin_init::init!(WireTx {
            buf <- pin_init::init_array_from_fn(|_| 0u8),
            lens: [0; TX_SLOTS],
            head: 0,
            n: 0,
            overflow: 0,
            backlog: false,
            stats: RcStats::default(),
        })
    }

    /// The slot the next frame takes, if one is free.
    fn free_slot(&self) -> Option<usize> {
        (self.n < TX_SLOTS).then_some((self.head + self.n) % TX_SLOTS)
    }

    fn frame_mut(&mut self, slot: usize) -> Option<&mut [u8]> {
        self.buf.get_mut(slot * MAX_FRAME..(slot + 1) * MAX_FRAME)
    }

    /// Queues the frame of `len` bytes written into `slot` (the one [`Self::free_slot`] gave).
    fn commit(&mut self, slot: usize, len: usize) {
        if let Some(l) = self.lens.get_mut(slot) {
            *l = len;
            self.n += 1;
        }
    }

    /// Hands every queued frame to `out`, oldest first, and empties the queue.
    fn drain(&mut self, mut out: impl FnMut(&[u8])) {
        while self.n > 0 {
            let slot = self.head;
            let len = self.lens.get(slot).copied().unwrap_or(0);
            if let Some(f) = self
                .buf
                .get(slot * MAX_FRAME..slot * MAX_FRAME + len.min(MAX_FRAME))
            {
                out(f);
            }
            self.head = (self.head + 1) % TX_SLOTS;
            self.n -= 1;
        }
    }
}

impl Fw {
    /// Hands each RoCE v2 frame the data path queued for the wire to `out` (the device's
    /// port transmits it), oldest first.
    pub(crate) fn wire_drain(&mut self, out: impl FnMut(&[u8])) {
        self.wire_tx.drain(out);
    }

    /// Packets the data path could not queue for the wire (its queue was full).
    pub(crate) fn wire_overflow(&self) -> u64 {
        self.wire_tx.overflow
    }

    /// What RC in packets counted.
    pub(crate) fn wire_rc_stats(&self) -> RcStats {
        self.wire_tx.stats
    }

    /// RC packets wait for room in the queue: another pass must follow the drain.
    pub(crate) fn wire_backlog(&self) -> bool {
        self.wire_tx.backlog
    }
}

/// The IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`).
fn v4_of(gid: &[u8; 16]) -> [u8; 4] {
    let mut a = [0u8; 4];
    a.copy_from_slice(&gid[12..]);
    a
}

/// The IPv4-mapped GID of an IPv4 address.
fn gid_of_v4(a: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&a);
    g
}

/// The UDP source port of a QP's packets: from the QPN, in the dynamic range (RoCE v2
/// leaves the choice to the sender for ECMP entropy; rxe hashes the QPN as well).
fn udp_src(qpn: u32) -> u16 {
    0xc000 | (qpn & 0x3fff) as u16
}

/// UD message `m` of QP `s` on node `ni`, to a GID no function of the fabric holds: one RoCE
/// v2 packet queued for the wire. What the requester completes with: success once queued;
/// a message that cannot leave (no RoCE v2 address entry, a full queue) is dropped, as a UD
/// datagram may be; a fault reading the gather list is a local protection error.
pub(super) fn send_ud(nodes: &mut [Node<'_>], ni: usize, s: &Snap, m: &Message<'_>) -> ReqRes {
    let Some(n) = nodes.get_mut(ni) else {
        return m.dropped();
    };
    let (Some(av), Ok(len)) = (m.av, usize::try_from(m.len)) else {
        return m.dropped();
    };
    let Some(a) = v2_entry(n.fw, s.port, av.sgid_index) else {
        return m.dropped();
    };
    let ip = ip_of(&a, &av.rgid, av.tclass, av.hop_limit, av.flow_label);
    let imm = m.opcode == wqe_op::SEND_IMM;
    // IBA 10.2.5: a Q_Key with the high bit set means the QP's own.
    let qkey = if av.qkey & 0x8000_0000 != 0 {
        s.q_key
    } else {
        av.qkey
    };
    let h = Headers {
        eth: Eth {
            dst: av.rmac,
            src: a.mac,
            // The priority from the SL (the PCP), as mlx5 maps it by default.
            vlan: a.vlan.map(|v| (u16::from(av.sl & 7) << 13) | (v & 0xfff)),
        },
        ip,
        udp_src: udp_src(s.qpn),
        bth: Bth {
            opcode: opcode::UD
                | if imm {
                    opcode::SEND_ONLY_IMM
                } else {
                    opcode::SEND_ONLY
                },
            solicited: m.solicited,
            pkey: 0xffff,
            dest_qp: av.dqpn & 0x00ff_ffff,
            ..Bth::default()
        },
        xrceth: None,
        deth: Some(Deth {
            qkey,
            src_qp: wire_qpn(s),
        }),
        reth: None,
        atomic_eth: None,
        aeth: None,
        atomic_ack_eth: None,
        imm: imm.then_some(m.imm),
        ieth: None,
    };
    queue(n, s, m, &h, len)
}

/// Queues packet `h` of message `m` of `s` (its `len` bytes gathered into the frame) on node
/// `n`: success once queued; a full queue drops it (counted), a fault reading the gather list
/// is a local protection error.
fn queue(n: &mut Node<'_>, s: &Snap, m: &Message<'_>, h: &Headers, len: usize) -> ReqRes {
    let src = Src::Sgl {
        pd: s.pd,
        segs: m.segs,
        skip: 0,
    };
    match queue_frame(n, h, src, len) {
        Ok(()) => {}
        Err(Queued::Full) => {
            n.fw.wire_tx.overflow += 1;
            return m.dropped();
        }
        Err(Queued::Fault) => return ReqRes::Err(syn::LOCAL_PROT),
        Err(Queued::Bad) => return m.dropped(),
    }
    n.fw.count_traffic(s.port, |t| t.xmit(1, m.len));
    ReqRes::Ok {
        byte_cnt: m.byte_cnt(),
    }
}

/// Where a packet's payload comes from.
#[derive(Clone, Copy)]
pub(super) enum Src<'a> {
    /// Nowhere (no payload).
    Nothing,
    /// A send WQE's gather list `segs` (of a QP of PD `pd`), from byte `skip` of it.
    Sgl { pd: u32, segs: &'a [u8], skip: u64 },
    /// A region (an rkey checked by the caller) from a virtual address.
    Region(MkeyInfo, u64),
}

/// Why [`queue_frame`] queued nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Queued {
    /// The queue is full.
    Full,
    /// Reading the payload faulted.
    Fault,
    /// The headers do not build (a bug, or a length past the frame).
    Bad,
}

/// Builds packet `h` with `len` bytes of payload from `src` into a free slot of node `n`'s
/// queue and queues it.
pub(super) fn queue_frame(
    n: &mut Node<'_>,
    h: &Headers,
    src: Src<'_>,
    len: usize,
) -> Result<(), Queued> {
    let off = roce::payload_offset(h).map_err(|_| Queued::Bad)?;
    if off + len > MAX_FRAME {
        return Err(Queued::Bad);
    }
    let slot = n.fw.wire_tx.free_slot().ok_or(Queued::Full)?;
    match src {
        Src::Nothing => {}
        Src::Sgl { pd, segs, skip } => {
            gather(n, pd, segs, skip, slot, off, len).map_err(|()| Queued::Fault)?
        }
        Src::Region(info, va) => {
            let mut cur = Cur::region(info, va);
            let f = n.fw.wire_tx.frame_mut(slot).ok_or(Queued::Bad)?;
            let dst = f.get_mut(off..off + len).ok_or(Queued::Bad)?;
            read_all(&mut cur, n.mem, dst).map_err(|()| Queued::Fault)?;
        }
    }
    let built =
        n.fw.wire_tx
            .frame_mut(slot)
            .map(|f| roce::build_in_place(h, len, f));
    match built {
        Some(Ok(flen)) => {
            n.fw.wire_tx.commit(slot, flen);
            Ok(())
        }
        _ => Err(Queued::Bad),
    }
}

/// Fills `dst` from `cur`.
fn read_all(cur: &mut Cur<'_>, mem: &dyn DmaMem, dst: &mut [u8]) -> Result<(), ()> {
    let mut got = 0;
    while got < dst.len() {
        let k = cur.read(mem, dst.get_mut(got..).ok_or(())?)?;
        if k == 0 {
            return Err(());
        }
        got += k;
    }
    Ok(())
}

/// The headers every packet of connected QP `s` (RC, UC) of `fw` carries: Ethernet from its
/// RoCE v2 source entry to its destination MAC (`rmac`), IP with its address path's traffic
/// class, flow label and hop limit, the UDP source port of its QPN, a BTH to its remote QPN
/// with `op` (the PSN and flags left to the caller), no extension header. `None` when the
/// source entry is not RoCE v2.
pub(super) fn conn_headers(fw: &Fw, s: &Snap, op: u8) -> Option<Headers> {
    let (_, q) = fw.qps.at_slot(s.slot)?;
    let g = |f| qpc::primary_address_path.inner(f).get(&q.qpc).unwrap_or(0);
    let mut rmac = [0u8; 6];
    rmac[..2].copy_from_slice(&((g(ads::rmac_47_32) & 0xffff) as u16).to_be_bytes());
    rmac[2..].copy_from_slice(&g(ads::rmac_31_0).to_be_bytes());
    let tclass = (g(ads::tclass) & 0xff) as u8;
    let hop = (g(ads::hop_limit) & 0xff) as u8;
    let a = v2_entry(fw, s.port, s.sgid_index)?;
    Some(Headers {
        eth: Eth {
            dst: rmac,
            src: a.mac,
            vlan: a.vlan.map(|v| (u16::from(s.sl & 7) << 13) | (v & 0xfff)),
        },
        ip: ip_of(&a, &s.rgid, tclass, hop, g(ads::flow_label)),
        udp_src: udp_src(s.qpn),
        bth: Bth {
            opcode: op,
            pkey: 0xffff,
            dest_qp: s.remote_qpn & 0x00ff_ffff,
            ..Bth::default()
        },
        xrceth: None,
        deth: None,
        reth: None,
        atomic_eth: None,
        aeth: None,
        atomic_ack_eth: None,
        imm: None,
        ieth: None,
    })
}

/// The RoCE v2 address entry `index` of (0-based) port `port`: RoCE v1 (an Ethernet frame
/// with a GRH) is not built, so only a version 2 entry sends.
fn v2_entry(fw: &Fw, port: usize, index: u8) -> Option<RoceAddr> {
    fw.ports
        .get(port)
        .and_then(|p| p.roce.get(usize::from(index)).copied().flatten())
        .filter(|a| u32::from(a.version) == ROCE_VERSION_2)
}

/// The IP header fields of a packet from address entry `a` to `dgid` (a hop limit of 0 is
/// taken as 64).
fn ip_of(a: &RoceAddr, dgid: &[u8; 16], tclass: u8, hop: u8, flow: u32) -> Ip {
    let hop = if hop == 0 { 64 } else { hop };
    if a.l3_type == 0 {
        Ip::V4 {
            src: v4_of(&a.gid),
            dst: v4_of(dgid),
            tos: tclass,
            ttl: hop,
            id: 0,
            df: true,
        }
    } else {
        Ip::V6 {
            src: a.gid,
            dst: *dgid,
            traffic_class: tclass,
            flow_label: flow & 0xf_ffff,
            hop_limit: hop,
        }
    }
}

/// Gathers `len` bytes of gather list `segs` (of a QP of PD `pd`, checked by the
/// requester), from byte `skip` of it, into frame slot `slot` of node `n`'s queue at offset
/// `off`.
fn gather(
    n: &mut Node<'_>,
    pd: u32,
    segs: &[u8],
    mut skip: u64,
    slot: usize,
    off: usize,
    len: usize,
) -> Result<(), ()> {
    let mut pos = 0;
    let mut at = off;
    let end = off + len;
    while let Some(seg) = next_seg(segs, &mut pos, false)? {
        if at == end {
            break;
        }
        let seg_len = match seg {
            Seg::Inline { len: l, .. } => l as u64,
            Seg::Ptr { len: l, .. } => u64::from(l),
        };
        if skip >= seg_len {
            skip -= seg_len;
            continue;
        }
        let from = usize::try_from(skip).map_err(|_| ())?;
        skip = 0;
        let l = (usize::try_from(seg_len).map_err(|_| ())? - from).min(end - at);
        match seg {
            Seg::Inline { at: i, .. } => {
                let src = segs.get(i + from..i + from + l).ok_or(())?;
                let f = n.fw.wire_tx.frame_mut(slot).ok_or(())?;
                f.get_mut(at..at + l).ok_or(())?.copy_from_slice(src);
            }
            Seg::Ptr { lkey, addr, .. } => {
                let info = mkey(n.fw, lkey, pd).ok_or(())?;
                let mut cur = Cur::region(info, addr.wrapping_add(from as u64));
                let f = n.fw.wire_tx.frame_mut(slot).ok_or(())?;
                read_all(&mut cur, n.mem, f.get_mut(at..at + l).ok_or(())?)?;
            }
        }
        at += l;
    }
    if at == end {
        Ok(())
    } else {
        Err(())
    }
}

/// A frame that came in on the segment port of function `nodes[ni]` (port 1): a frame that
/// is not a valid RoCE v2 packet (ICRC included) or is for a GID the port does not hold is
/// dropped; a UD SEND to one of its UD QPs and a UC SEND ONLY to one of its UC QPs are taken
/// here; an RC packet is handed back for `rc.rs`; anything else is dropped.
pub(super) fn receive<'f>(nodes: &mut [Node<'_>], ni: usize, frame: &'f [u8]) -> Rx<'f> {
    let port = 0;
    let p = match roce::parse(frame) {
        Ok(p) => p,
        Err(e) => {
            if let (RoceError::BadIcrc { .. }, Some(n)) = (e, nodes.get_mut(ni)) {
                n.fw.wire_tx.stats.bad_icrc += 1;
            }
            return Rx::Taken(false);
        }
    };
    let dgid = match p.headers.ip {
        Ip::V4 { dst, .. } => gid_of_v4(dst),
        Ip::V6 { dst, .. } => dst,
    };
    // A group's packet is for the function while one of its QPs is attached (`mcg.rs`).
    let ours = nodes.get(ni).is_some_and(|n| {
        n.fw.port_up(port)
            && (n.fw.has_gid(port, &dgid, u8::try_from(ROCE_VERSION_2).ok())
                || (mcg::is_mgid(&dgid) && n.fw.mcg.has(&dgid)))
    });
    if !ours {
        return Rx::Taken(false);
    }
    let op = p.headers.bth.opcode;
    if op == opcode::UD | opcode::SEND_ONLY || op == opcode::UD | opcode::SEND_ONLY_IMM {
        return Rx::Taken(receive_ud(nodes, ni, port, frame, &p));
    }
    if matches!(op & 0xe0, opcode::RC | opcode::UC | opcode::XRC) {
        return Rx::Rc(port, p);
    }
    Rx::Taken(false)
}

/// What [`receive`] made of a frame.
#[allow(clippy::large_enum_variant)] // Returned once and taken apart at once.
pub(super) enum Rx<'f> {
    /// Taken by a UD or UC QP, or not (dropped).
    Taken(bool),
    /// An RC packet for a GID of (0-based) port `port`, for `rc.rs`.
    Rc(usize, Packet<'f>),
}

/// The GRH area of a UD receive of the packet in `frame` (headers `h`): the IPv6 header, or
/// the IPv4 header in its last 20 bytes.
fn grh_area(frame: &[u8], h: &Headers) -> Option<[u8; GRH_BYTES]> {
    let l3 = 14 + if h.eth.vlan.is_some() { 4 } else { 0 };
    let mut g = [0u8; GRH_BYTES];
    match h.ip {
        Ip::V4 { .. } => g.get_mut(20..)?.copy_from_slice(frame.get(l3..l3 + 20)?),
        Ip::V6 { .. } => g.copy_from_slice(frame.get(l3..l3 + GRH_BYTES)?),
    }
    Some(g)
}

/// UD SEND `p` (the packet in `frame`) at port `port` of node `di`: to the UD QP its BTH
/// names, in RTR or RTS, with the DETH's Q_Key; into the next receive WQE (none: dropped and
/// counted as out of buffer), the GRH area first.
fn receive_ud(
    nodes: &mut [Node<'_>],
    di: usize,
    port: usize,
    frame: &[u8],
    p: &Packet<'_>,
) -> bool {
    let h = &p.headers;
    if h.bth.dest_qp == MULTICAST_QPN {
        return receive_ud_group(nodes, di, port, frame, p);
    }
    receive_ud_qp(nodes, di, port, frame, p, h.bth.dest_qp)
}

/// The BTH destination QPN of a multicast packet (IBA 9.8.1.1, `0xffffff`).
const MULTICAST_QPN: u32 = 0x00ff_ffff;

/// A UD SEND to a multicast group (destination QPN 0xffffff): a copy to each QP of node `di`
/// attached to the group its destination GID names (`mcg.rs`). Whether one took it.
fn receive_ud_group(
    nodes: &mut [Node<'_>],
    di: usize,
    port: usize,
    frame: &[u8],
    p: &Packet<'_>,
) -> bool {
    let dgid = match p.headers.ip {
        Ip::V4 { dst, .. } => gid_of_v4(dst),
        Ip::V6 { dst, .. } => dst,
    };
    let mut qpns = [0u32; mcg::MAX_ATTACH];
    let n = nodes
        .get(di)
        .map_or(0, |node| node.fw.mcg.members(&dgid, &mut qpns));
    let mut taken = false;
    for qpn in qpns.iter().take(n) {
        taken |= receive_ud_qp(nodes, di, port, frame, p, *qpn);
    }
    taken
}

/// UD SEND `p` to QP `qpn` of node `di`.
fn receive_ud_qp(
    nodes: &mut [Node<'_>],
    di: usize,
    port: usize,
    frame: &[u8],
    p: &Packet<'_>,
    qpn: u32,
) -> bool {
    let h = &p.headers;
    let Some(deth) = h.deth else {
        return false;
    };
    let dest = nodes.get(di).and_then(|n| {
        // QPN 1 is the port's GSI QP, whatever number CREATE_QP gave it (QP0 is not on
        // RoCE).
        let slot = match qpn {
            1 => (0..capacity::QP).find(|&i| {
                n.fw.qps.at_slot(i).is_some_and(|(_, q)| {
                    qpc::st.get(&q.qpc) == Ok(QPC_ST_QP1) && q.state != QPC_STATE_RST
                })
            })?,
            q => n.fw.qps.slot_of(q)?,
        };
        let d = snap(n.fw, slot)?;
        let st = if qpn == 1 { QPC_ST_QP1 } else { QPC_ST_UD };
        (d.st == st
            && d.port == port
            && matches!(d.state, QPC_STATE_RTR | QPC_STATE_RTS)
            && d.q_key == deth.qkey)
            .then_some(d)
    });
    let (Some(d), Some(grh)) = (dest, grh_area(frame, h)) else {
        return false;
    };
    // A GRH came; the RoCE L3 header type (MLX5_CQE_ROCE_L3_HEADER_TYPE_*: 1 IPv6, 2 IPv4)
    // in the SL bits; the source QPN from the DETH.
    let l3: u32 = match h.ip {
        Ip::V4 { .. } => 2,
        Ip::V6 { .. } => 1,
    };
    let rqpn = (1 << 28) | (l3 << 24) | (deth.src_qp & 0x00ff_ffff);
    deliver(nodes, di, d, Some(&grh), p, rqpn)
}

/// The payload of SEND `p` into the next receive WQE of `d` on node `di` (after the GRH area
/// `grh` of a UD receive), and its receive CQE with `flags_rqpn`. Whether it was delivered.
fn deliver(
    nodes: &mut [Node<'_>],
    di: usize,
    mut d: Snap,
    grh: Option<&[u8; GRH_BYTES]>,
    p: &Packet<'_>,
    flags_rqpn: u32,
) -> bool {
    let h = &p.headers;
    let need = (p.payload.len() + grh.map_or(0, |g| g.len())) as u64;
    let lead = grh.map_or(Lead::Nothing, |g| Lead::Bytes(g));
    if write_rwqe(nodes, di, &mut d, lead, p.payload, need).is_err() {
        return false;
    }
    let opc = if h.imm.is_some() {
        cqe_op::RESP_SEND_IMM
    } else {
        cqe_op::RESP_SEND
    };
    let mut c = Cqe::new(opc, 0, d.qpn, d.rwqe_idx, d.q.user_index);
    c.put32(cqe_off::BYTE_CNT, u32::try_from(need).unwrap_or(u32::MAX));
    if let Some(i) = h.imm {
        c.put(cqe_off::IMM, &i);
    }
    c.put32(cqe_off::FLAGS_RQPN, flags_rqpn);
    resp_ok(nodes, di, &d, Some((c, h.bth.solicited)), 1);
    if let Some(n) = nodes.get_mut(di) {
        n.fw.count_traffic(d.port, |t| t.rcv(1, p.payload.len() as u64));
    }
    true
}
