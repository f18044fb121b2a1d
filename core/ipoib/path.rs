// SPDX-License-Identifier: GPL-2.0

//! Unicast paths of an IPoIB interface (upstream `ipoib_main.c`: `struct ipoib_path`,
//! `neigh_add_path()`, `path_rec_start()`, `path_rec_completion()`, `unicast_arp_send()`,
//! `ipoib_flush_paths()`).
//!
//! A unicast packet goes to the LID and SL of the path to its destination's GID, from a
//! cache of paths keyed by the destination GID ([`Paths`]). A miss makes an entry and a
//! PathRecord query to the SA (DGID, SGID, NumbPath 1, TClass 0 and the interface's P_Key, as
//! `path_rec_start()`), started by the interface's worker since the transmit must not sleep;
//! while it resolves up to [`MAX_PATH_REC_QUEUE`] packets wait in the entry (upstream
//! `IPOIB_MAX_PATH_REC_QUEUE`), more are dropped. The answer sends the waiting packets and
//! keeps the path; a failed query drops them and forgets the entry (the next packet asks
//! again). A port event flushes every path ([`Paths::flush`]): answers of queries asked
//! before it are ignored.

use crate::attr::Gid;
use crate::sa::{self, SaPathRec};
use crate::ud_qp::UdDest;
use kernel::prelude::*;

/// upstream `IPOIB_MAX_PATH_REC_QUEUE`: packets that wait for a path.
pub(crate) const MAX_PATH_REC_QUEUE: usize = 3;

/// Paths an interface keeps (upstream has no bound but the neighbour table's).
const MAX_PATHS: usize = 256;

/// upstream `path_rec_start()`'s query timeout.
pub(crate) const PATH_REC_TIMEOUT_MS: u32 = 1000;

/// A packet waiting for its path: the destination QP and the bytes for the wire.
pub(crate) struct Waiting {
    pub(crate) qpn: u32,
    pub(crate) wire: KVec<u8>,
}

/// One destination (upstream `struct ipoib_path`).
struct Path {
    dgid: Gid,
    /// The LID and SL once the SA answered.
    dest: Option<(u16, u8)>,
    /// The query is asked.
    asked: bool,
    queue: KVec<Waiting>,
}

/// What [`Paths::lookup`] decided for a packet.
pub(crate) enum Lookup {
    /// Send it to this LID and SL.
    Resolved(u16, u8),
    /// It waits for the path (`true`: a new query is to be asked).
    Queued(bool),
    /// Dropped: the queue or the cache is full, or no memory.
    Dropped,
}

/// An interface's path cache.
pub(crate) struct Paths {
    paths: KVec<Path>,
    /// Bumped by every flush: answers to queries asked before are stale.
    gen: u64,
}

impl Paths {
    /// No path.
    pub(crate) const fn new() -> Self {
        Paths {
            paths: KVec::new(),
            gen: 0,
        }
    }

    /// The path to `dgid` for a packet to `qpn` (`wire`: its bytes), queued (an atomic copy)
    /// while the path resolves.
    pub(crate) fn lookup(&mut self, dgid: &Gid, qpn: u32, wire: &[u8]) -> Lookup {
        let copy = |w: &[u8]| -> Option<Waiting> {
            let mut v = KVec::with_capacity(w.len(), GFP_ATOMIC).ok()?;
            v.extend_from_slice(w, GFP_ATOMIC).ok()?;
            Some(Waiting { qpn, wire: v })
        };
        if let Some(p) = self.paths.iter_mut().find(|p| p.dgid == *dgid) {
            if let Some((dlid, sl)) = p.dest {
                return Lookup::Resolved(dlid, sl);
            }
            if p.queue.len() >= MAX_PATH_REC_QUEUE {
                return Lookup::Dropped;
            }
            let Some(w) = copy(wire) else {
                return Lookup::Dropped;
            };
            return match p.queue.push(w, GFP_ATOMIC) {
                Ok(()) => Lookup::Queued(false),
                Err(_) => Lookup::Dropped,
            };
        }
        if self.paths.len() >= MAX_PATHS {
            return Lookup::Dropped;
        }
        let Some(w) = copy(wire) else {
            return Lookup::Dropped;
        };
        let mut queue = KVec::new();
        if queue.push(w, GFP_ATOMIC).is_err() {
            return Lookup::Dropped;
        }
        let p = Path {
            dgid: *dgid,
            dest: None,
            asked: false,
            queue,
        };
        match self.paths.push(p, GFP_ATOMIC) {
            Ok(()) => Lookup::Queued(true),
            Err(_) => Lookup::Dropped,
        }
    }

    /// The destinations whose query is still to be asked, marked asked, with the current
    /// generation.
    pub(crate) fn take_unasked(&mut self, out: &mut KVec<Gid>) -> u64 {
        for p in self.paths.iter_mut().filter(|p| !p.asked) {
            if out.push(p.dgid, GFP_ATOMIC).is_err() {
                break;
            }
            p.asked = true;
        }
        self.gen
    }

    /// The answer for `dgid` asked in generation `gen`: the waiting packets when it resolved
    /// (`Ok`), or `None` (stale, or failed: the entry and its packets go).
    pub(crate) fn answered(
        &mut self,
        dgid: &Gid,
        gen: u64,
        r: Result<(u16, u8)>,
    ) -> Option<KVec<Waiting>> {
        if gen != self.gen {
            return None;
        }
        let i = self.paths.iter().position(|p| p.dgid == *dgid)?;
        match r {
            Ok(d) => {
                let p = self.paths.get_mut(i)?;
                p.dest = Some(d);
                Some(core::mem::take(&mut p.queue))
            }
            Err(_) => {
                let _ = self.paths.remove(i);
                None
            }
        }
    }

    /// Forgets every path and their waiting packets (upstream `ipoib_flush_paths()`).
    pub(crate) fn flush(&mut self) {
        self.gen = self.gen.wrapping_add(1);
        self.paths.clear();
    }
}

/// The PathRecord query of the path from `sgid` to `dgid` in partition `pkey` (upstream
/// `path_rec_start()`): the record and its component mask.
pub(crate) fn query(sgid: &Gid, dgid: &Gid, pkey: u16) -> (SaPathRec, u64) {
    let rec = SaPathRec {
        dgid: dgid.0,
        sgid: sgid.0,
        numb_path: 1,
        pkey,
        ..Default::default()
    };
    let mask = sa::PR_DGID | sa::PR_SGID | sa::PR_NUMB_PATH | sa::PR_TRAFFIC_CLASS | sa::PR_PKEY;
    (rec, mask)
}

/// Where a unicast packet to `qpn` goes on the path (`dlid`, `sl`) with the broadcast
/// group's Q_Key (upstream: every interface of the partition uses it).
pub(crate) fn unicast_dest(dlid: u16, sl: u8, qpn: u32, qkey: u32) -> UdDest {
    UdDest {
        dlid,
        sl,
        remote_qpn: qpn,
        remote_qkey: qkey,
        grh: None,
    }
}

#[kunit_tests(ib_core_rs_ipoib_path)]
mod tests {
    use super::*;

    fn gid(last: u8) -> Gid {
        let mut g = [0u8; 16];
        g[0] = 0xfe;
        g[1] = 0x80;
        g[15] = last;
        Gid(g)
    }

    #[test]
    fn a_miss_queues_three_packets_and_the_answer_sends_them() -> Result {
        let mut p = Paths::new();
        let d = gid(2);
        // The first packet makes the entry and asks; two more wait; the fourth is dropped.
        assert!(matches!(p.lookup(&d, 0x48, &[1]), Lookup::Queued(true)));
        assert!(matches!(p.lookup(&d, 0x48, &[2]), Lookup::Queued(false)));
        assert!(matches!(p.lookup(&d, 0x49, &[3]), Lookup::Queued(false)));
        assert!(matches!(p.lookup(&d, 0x48, &[4]), Lookup::Dropped));
        let mut ask = KVec::new();
        let gen = p.take_unasked(&mut ask);
        assert_eq!(ask.len(), 1);
        // Asked once only.
        let mut again = KVec::new();
        p.take_unasked(&mut again);
        assert!(again.is_empty());
        let sent = p.answered(&d, gen, Ok((0x104, 3))).ok_or(EINVAL)?;
        let got: KVec<(u32, u8)> = {
            let mut v = KVec::new();
            for w in sent.iter() {
                v.push((w.qpn, w.wire[0]), GFP_KERNEL)?;
            }
            v
        };
        assert_eq!(&got[..], &[(0x48, 1), (0x48, 2), (0x49, 3)]);
        // Resolved: the next packet goes at once.
        assert!(matches!(
            p.lookup(&d, 0x48, &[5]),
            Lookup::Resolved(0x104, 3)
        ));
        Ok(())
    }

    #[test]
    fn a_failed_or_stale_answer_sends_nothing() {
        let mut p = Paths::new();
        let d = gid(3);
        assert!(matches!(p.lookup(&d, 1, &[1]), Lookup::Queued(true)));
        let mut ask = KVec::new();
        let gen = p.take_unasked(&mut ask);
        // A failure forgets the entry: the next packet asks again.
        assert!(p.answered(&d, gen, Err(ETIMEDOUT)).is_none());
        assert!(matches!(p.lookup(&d, 1, &[2]), Lookup::Queued(true)));
        let gen = p.take_unasked(&mut ask);
        // A port event flushes: the answer to the query asked before is ignored.
        p.flush();
        assert!(p.answered(&d, gen, Ok((0x104, 0))).is_none());
        assert!(matches!(p.lookup(&d, 1, &[3]), Lookup::Queued(true)));
    }
}
