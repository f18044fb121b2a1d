// SPDX-License-Identifier: GPL-2.0

//! The broadcast group of an IPoIB interface (upstream `ipoib_multicast.c`:
//! `ipoib_mcast_join_task()`, `ipoib_mcast_join()`, `ipoib_mcast_join_complete()`,
//! `ipoib_mcast_join_finish()`, `ipoib_mcast_leave()`).
//!
//! An interface that goes up joins its partition's IPv4 broadcast group
//! ([`super::broadcast_mgid`]) as a full member through the SA client (`sa/mcast.rs`): first
//! as upstream does, with the MGID, PortGID, P_Key and JoinState only, so that a group the SM
//! made (opensm's, with its Q_Key and MTU) is joined as it is; when the SA refuses that (the
//! group does not exist: the embedded SM makes none), again with what creating the group
//! needs (IBA C15-0.2.2): the Q_Key [`super::IPOIB_QKEY`], the port's active MTU, TClass 0,
//! SL 0, FlowLabel 0, HopLimit 0, as an SM configured for IPoIB would create it. The group's
//! record gives where broadcasts go ([`Bcast`]: its MLID, SL, Q_Key and a GRH to the MGID)
//! and the Q_Key of every send; the QP is attached to the group, and the carrier goes on.
//! A group whose Q_Key is not the QP's (the QP's Q_Key is set when it is opened) is refused:
//! the carrier stays off. A join that fails otherwise is asked again after 1 s, doubling up
//! to 16 s (upstream's backoff). A port event after which the SA holds no membership (port
//! error, LID change, client reregister: the SA client's `ENETRESET`) detaches the QP, turns
//! the carrier off and joins again. Going down detaches and leaves.
//!
//! Other multicast groups (IPv6 neighbour discovery's, `ip maddr` joins) are not joined and
//! no send-only join is made (upstream `ipoib_mcast_send()`): a packet to one is dropped and
//! counted as a tx drop.

use super::IPOIB_QKEY;
use crate::attr::Gid;
use crate::mad_qp::MadGrh;
use crate::sa::{self, McMemberRec};
use crate::ud_qp::UdDest;
use kernel::prelude::*;

/// upstream `IB_SA_EQ`: an MTU selector of exactly the MTU given.
const SA_EQ: u8 = 2;

/// The first and the longest wait before a failed join is asked again (upstream
/// `ipoib_mcast_join_task()`'s backoff: 1 s doubled up to `IPOIB_MAX_BACKOFF_SECONDS` 16).
pub(crate) const BACKOFF_FIRST_MS: u32 = 1000;
pub(crate) const BACKOFF_MAX_MS: u32 = 16000;

/// The joined broadcast group: where broadcasts go.
#[derive(Clone, Copy)]
pub(crate) struct Bcast {
    /// The group's record as the SA answered.
    pub(crate) rec: McMemberRec,
}

impl Bcast {
    /// The group's MGID.
    pub(crate) fn mgid(&self) -> Gid {
        Gid(self.rec.mgid)
    }

    /// Where a broadcast goes (upstream `ipoib_mcast_join_finish()`'s address handle: the
    /// MLID, the group's SL, a GRH to the MGID with its flow label, hop limit and traffic
    /// class; QPN 0xffffff and the group's Q_Key).
    pub(crate) fn dest(&self) -> UdDest {
        UdDest {
            dlid: self.rec.mlid,
            sl: self.rec.sl,
            remote_qpn: super::MCAST_QPN,
            remote_qkey: self.rec.qkey,
            grh: Some(MadGrh {
                dgid: self.mgid(),
                sgid_index: 0,
                hop_limit: self.rec.hop_limit,
                traffic_class: self.rec.traffic_class,
                flow_label: self.rec.flow_label,
            }),
        }
    }
}

/// The join of the broadcast group `mgid` by `port_gid` in partition `pkey`, with what
/// creating the group needs when `create` (`ib_mtu`: the MTU as `enum ib_mtu`).
pub(crate) fn join_request(
    mgid: &Gid,
    port_gid: &Gid,
    pkey: u16,
    create: Option<u8>,
) -> (McMemberRec, u64) {
    let mut rec = McMemberRec {
        mgid: mgid.0,
        port_gid: port_gid.0,
        pkey,
        join_state: 1,
        ..Default::default()
    };
    let mut mask = sa::MC_MGID | sa::MC_PORT_GID | sa::MC_PKEY | sa::MC_JOIN_STATE;
    if let Some(mtu) = create {
        rec.qkey = IPOIB_QKEY;
        rec.mtu_selector = SA_EQ;
        rec.mtu = mtu;
        mask |= sa::MC_QKEY
            | sa::MC_MTU_SELECTOR
            | sa::MC_MTU
            | sa::MC_TRAFFIC_CLASS
            | sa::MC_SL
            | sa::MC_FLOW_LABEL
            | sa::MC_HOP_LIMIT;
    }
    (rec, mask)
}

#[kunit_tests(ib_core_rs_ipoib_bcast)]
mod tests {
    use super::*;

    #[test]
    fn join_then_create_request_and_broadcast_destination() {
        let mgid = super::super::broadcast_mgid(0xffff);
        let mut pg = [0u8; 16];
        pg[0] = 0xfe;
        pg[15] = 1;
        let (r, m) = join_request(&mgid, &Gid(pg), 0xffff, None);
        // upstream ipoib_mcast_join() for the broadcast group: four components.
        assert_eq!(
            m,
            sa::MC_MGID | sa::MC_PORT_GID | sa::MC_PKEY | sa::MC_JOIN_STATE
        );
        assert_eq!((r.join_state, r.qkey), (1, 0));
        let (r, m) = join_request(&mgid, &Gid(pg), 0xffff, Some(4));
        assert_ne!(m & sa::MC_QKEY, 0);
        assert_eq!((r.qkey, r.mtu_selector, r.mtu), (0x0b1b, 2, 4));
        let b = Bcast {
            rec: McMemberRec {
                mlid: 0xc001,
                sl: 2,
                qkey: 0x0b1b,
                hop_limit: 1,
                ..r
            },
        };
        let d = b.dest();
        assert_eq!(
            (d.dlid, d.sl, d.remote_qpn, d.remote_qkey),
            (0xc001, 2, 0xff_ffff, 0x0b1b)
        );
        assert_eq!(d.grh.map(|g| g.dgid), Some(mgid));
    }
}
