// SPDX-License-Identifier: GPL-2.0

//! Multicast groups through the SA (upstream `multicast.c`: `ib_sa_join_multicast()`,
//! `ib_sa_free_multicast()`). One SA membership per port and group, shared by the port's
//! joiners: a join ([`join_multicast`]) whose join states the port holds already (the SA
//! answered an earlier join with them) gets the group's record at once; otherwise an
//! MCMemberRecord SubnAdmSet goes to the SM with the joiner's record, component mask and
//! join state, one at a time per group (upstream `mcast_work_handler()`), its answer the
//! joiner's and the group's record. A join of the zero MGID asks the SA to create a group
//! and is a group of its own. Dropping the [`SaMulticast`] leaves: the join states no joiner
//! of the port holds any more go back to the SA in a SubnAdmDelete (MGID, PortGID and
//! JoinState; upstream `send_leave()`), and the group is forgotten with its last joiner.
//!
//! The handler runs once per join, from the core's workqueue, never inside the call; it may
//! run while the [`SaMulticast`] is dropped (rdma_cm checks that its group is still joined).
//! A port event that loses the SA's memberships (upstream `mcast_event_handler()`: port
//! error, LID change, client reregister; [`port_reset`]) fails every joined member of the
//! port's groups with `ENETRESET` (rdma_cm: `RDMA_CM_EVENT_MULTICAST_ERROR`) and forgets the
//! port's join states without a leave: its joiners join again, as upstream's do.

use super::{
    send, tables, McMemberRec, SaRequest, Waiter, ATTR_MC_MEMBER_REC, MC_JOIN_STATE, MC_MGID,
    MC_PORT_GID, MC_REC_LEN,
};
use kernel::prelude::*;
use kernel::sync::Arc;

/// `IB_MGMT_METHOD_SET`, `IB_SA_METHOD_DELETE`.
const METHOD_SET: u8 = 0x02;
const METHOD_DELETE: u8 = 0x15;
/// upstream `send_join()`'s and `send_leave()`'s timeout.
const TIMEOUT_MS: u32 = 3000;

/// Who gets a join's result (upstream the multicast's `callback`).
pub trait SaMcastHandler: Send + Sync + 'static {
    /// The group's record (the SA's answer to this port's membership), or the error:
    /// `EINVAL` the SA refused (a non-zero status), `ETIMEDOUT` no answer, the send's error
    /// (`ENETUNREACH`: no SM).
    fn joined(&self, r: Result<McMemberRec>);
}

/// A join (upstream `struct ib_sa_multicast`); dropping it leaves (upstream
/// `ib_sa_free_multicast()`).
pub struct SaMulticast {
    id: u64,
}

impl Drop for SaMulticast {
    fn drop(&mut self) {
        let (group, member) = {
            let mut t = tables();
            let found = t.groups.iter_mut().find_map(|g| {
                let i = g.members.iter().position(|m| m.id == self.id)?;
                Some((g.id, g.members.remove(i).ok()))
            });
            match found {
                Some((g, m)) => (Some(g), m),
                None => (None, None),
            }
        };
        // Outside the lock: the handler may hold the last reference to its user.
        drop(member);
        if let Some(g) = group {
            // The leave's SubnAdmDelete from the workqueue (inline when that cannot be).
            if crate::wq::queue()
                .try_spawn(GFP_KERNEL, move || run_group(g))
                .is_err()
            {
                run_group(g);
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum MemberState {
    /// Waiting for the SA (or for the group's query in flight).
    Pending,
    /// Its handler has the group's record.
    Joined,
    /// Its handler has the error.
    Failed,
}

struct Member {
    id: u64,
    rec: McMemberRec,
    comp_mask: u64,
    handler: Arc<dyn SaMcastHandler>,
    state: MemberState,
}

/// A port's membership of a group (upstream `struct mcast_group`).
pub(crate) struct McGroup {
    id: u64,
    dev_index: u32,
    port: u32,
    /// Zero until the SA gives one to a group joined with the zero MGID.
    mgid: [u8; 16],
    /// The SA's last answer to a join of the port.
    rec: Option<McMemberRec>,
    /// The join states the SA holds for the port.
    join_state: u8,
    /// A query is in flight.
    busy: bool,
    members: KVec<Member>,
}

/// Joins `rec.mgid` (zero: a group the SA creates) on `dev_index`'s `port` with
/// `rec.join_state` (upstream `ib_sa_join_multicast()`); the record's fields of `comp_mask`
/// go to the SA with a join the port needs. The result goes to `handler`.
///
/// # Errors
///
/// `ENODEV` for a port without the SA client; `EINVAL` for no join state; `ENOMEM`.
pub fn join_multicast(
    dev_index: u32,
    port: u32,
    rec: &McMemberRec,
    comp_mask: u64,
    handler: Arc<dyn SaMcastHandler>,
) -> Result<SaMulticast> {
    if rec.join_state & 0xf == 0 {
        return Err(EINVAL);
    }
    let (id, group) = {
        let mut t = tables();
        t.ports.find(dev_index, port).ok_or(ENODEV)?;
        let id = t.next;
        t.next = t.next.wrapping_add(2).max(1);
        let member = Member {
            id,
            rec: *rec,
            comp_mask,
            handler,
            state: MemberState::Pending,
        };
        let zero = rec.mgid == [0; 16];
        let found = t
            .groups
            .iter_mut()
            .find(|g| !zero && g.dev_index == dev_index && g.port == port && g.mgid == rec.mgid);
        let group = match found {
            Some(g) => {
                g.members.push(member, GFP_KERNEL)?;
                g.id
            }
            None => {
                let mut members = KVec::new();
                members.push(member, GFP_KERNEL)?;
                t.groups.push(
                    McGroup {
                        id: id + 1,
                        dev_index,
                        port,
                        mgid: rec.mgid,
                        rec: None,
                        join_state: 0,
                        busy: false,
                        members,
                    },
                    GFP_KERNEL,
                )?;
                id + 1
            }
        };
        (id, group)
    };
    let mc = SaMulticast { id };
    crate::wq::queue().try_spawn(GFP_KERNEL, move || run_group(group))?;
    Ok(mc)
}

/// What a group needs next.
enum Step {
    /// A member's result.
    Call(Arc<dyn SaMcastHandler>, Result<McMemberRec>),
    /// A query to the SA, for `member` (0: a leave).
    Send(u32, u32, u8, McMemberRec, u64, u64),
}

/// The group's next step, the table locked (upstream `mcast_work_handler()`): a member
/// whose join states the port holds gets the record; else the first waiting member's join
/// goes to the SA; else the states nobody holds leave; a group without members and
/// memberships goes.
fn next_step(groups: &mut KVec<McGroup>, group: u64) -> Option<Step> {
    let gi = groups.iter().position(|g| g.id == group)?;
    let g = groups.get_mut(gi)?;
    if g.busy {
        return None;
    }
    if let Some(rec) = g.rec {
        let held = g.join_state;
        let covered = g
            .members
            .iter_mut()
            .find(|m| m.state == MemberState::Pending && m.rec.join_state & !held == 0);
        if let Some(m) = covered {
            m.state = MemberState::Joined;
            let mut r = rec;
            r.join_state = m.rec.join_state;
            return Some(Step::Call(m.handler.clone(), Ok(r)));
        }
    }
    if let Some(m) = g.members.iter().find(|m| m.state == MemberState::Pending) {
        g.busy = true;
        let mut rec = m.rec;
        if g.mgid != [0; 16] {
            rec.mgid = g.mgid;
        }
        return Some(Step::Send(
            g.dev_index,
            g.port,
            METHOD_SET,
            rec,
            m.comp_mask,
            m.id,
        ));
    }
    // upstream: the leave of the states no member holds any more.
    let wanted = g
        .members
        .iter()
        .filter(|m| m.state != MemberState::Failed)
        .fold(0, |s, m| s | m.rec.join_state);
    let leave = g.join_state & !wanted;
    if let (Some(rec), true) = (g.rec, leave != 0) {
        g.join_state &= !leave;
        let mut r = rec;
        r.join_state = leave;
        let mask = MC_MGID | MC_PORT_GID | MC_JOIN_STATE;
        return Some(Step::Send(g.dev_index, g.port, METHOD_DELETE, r, mask, 0));
    }
    if g.members.is_empty() {
        let _ = groups.remove(gi);
    }
    None
}

/// Moves group `group` on until it waits for the SA or has nothing to do.
fn run_group(group: u64) {
    loop {
        // The lock only for the step's choice: the handlers and the send take it.
        let step = next_step(&mut tables().groups, group);
        let Some(step) = step else {
            return;
        };
        match step {
            Step::Call(h, r) => h.joined(r),
            Step::Send(dev_index, port, method, rec, comp_mask, member) => {
                let data = rec.pack();
                let q = SaRequest {
                    method,
                    attr: ATTR_MC_MEMBER_REC,
                    comp_mask,
                    data: &data,
                    timeout_ms: TIMEOUT_MS,
                };
                let waiter = Waiter::Mcast { group, member };
                if let Err(e) = send(dev_index, port, &q, waiter) {
                    if member != 0 {
                        done(group, member, Err(e));
                    }
                }
            }
        }
    }
}

/// The SA's answer (`data`: the record) to a query of `group` for `member` (0: a leave,
/// whose answer changes nothing).
pub(super) fn answered(group: u64, member: u64, r: Result<&[u8]>) {
    if member == 0 {
        return;
    }
    let r = r.and_then(|d| {
        let mut b = [0u8; MC_REC_LEN];
        b.copy_from_slice(d.get(..MC_REC_LEN).ok_or(EINVAL)?);
        Ok(McMemberRec::unpack(&b))
    });
    done(group, member, r);
    run_group(group);
}

/// The end of `member`'s join query: the group's record and states, and its handler's call.
fn done(group: u64, member: u64, r: Result<McMemberRec>) {
    let call = {
        let mut t = tables();
        let Some(g) = t.groups.iter_mut().find(|g| g.id == group) else {
            return;
        };
        g.busy = false;
        let m = g.members.iter_mut().find(|m| m.id == member);
        match (r, m) {
            (Ok(rec), m) => {
                // The port's membership, whether its joiner is still there or not (a leave
                // follows then).
                g.join_state |= m.as_ref().map_or(rec.join_state, |m| m.rec.join_state);
                g.mgid = rec.mgid;
                g.rec = Some(rec);
                m.map(|m| {
                    m.state = MemberState::Joined;
                    (m.handler.clone(), Ok(rec))
                })
            }
            (Err(e), Some(m)) => {
                m.state = MemberState::Failed;
                Some((m.handler.clone(), Err(e)))
            }
            (Err(_), None) => None,
        }
    };
    if let Some((h, r)) = call {
        h.joined(r);
    }
}

/// upstream `mcast_groups_event(MCAST_GROUP_ERROR)` and `process_group_error()`: the joined
/// members of `dev_index`'s `port` get `ENETRESET`, from the workqueue (inline when that
/// cannot be); the port holds no join state any more, and their leaves send nothing.
pub(super) fn port_reset(dev_index: u32, port: u32) {
    let mut calls = KVec::new();
    {
        let mut t = tables();
        for g in t
            .groups
            .iter_mut()
            .filter(|g| g.dev_index == dev_index && g.port == port)
        {
            g.join_state = 0;
            for m in g
                .members
                .iter_mut()
                .filter(|m| m.state == MemberState::Joined)
            {
                if calls.push(m.handler.clone(), GFP_KERNEL).is_err() {
                    break;
                }
                m.state = MemberState::Failed;
            }
        }
    }
    if calls.is_empty() {
        return;
    }
    let run = |calls: &KVec<Arc<dyn SaMcastHandler>>| {
        for h in calls.iter() {
            h.joined(Err(ENETRESET));
        }
    };
    // A copy for the workqueue; the list itself runs inline when the copy or the spawn
    // cannot be had.
    let mut copy = KVec::new();
    let copied = calls
        .iter()
        .all(|h| copy.push(h.clone(), GFP_KERNEL).is_ok());
    if !copied
        || crate::wq::queue()
            .try_spawn(GFP_KERNEL, move || run(&copy))
            .is_err()
    {
        run(&calls);
    }
}

/// Forgets the groups of device `dev_index` (its removal: the ports are gone).
pub(super) fn remove_device(dev_index: u32) {
    let mut gone = KVec::new();
    {
        let mut t = tables();
        let mut i = 0;
        while i < t.groups.len() {
            if t.groups[i].dev_index == dev_index {
                if let Ok(g) = t.groups.remove(i) {
                    // Dropped outside the lock: a member's handler may hold references.
                    if gone.push(g, GFP_KERNEL).is_err() {
                        continue;
                    }
                }
            } else {
                i += 1;
            }
        }
    }
    drop(gone);
}

#[kunit_tests(ib_core_rs_sa_mcast)]
mod tests {
    use super::*;
    use kernel::sync::atomic::{Atomic, Relaxed};
    use kernel::time::{delay::fsleep, Delta};

    /// A joiner that keeps the last result it was given (1: a record, else the errno).
    struct Last(Atomic<i32>);

    impl SaMcastHandler for Last {
        fn joined(&self, r: Result<McMemberRec>) {
            self.0
                .store(r.map_or_else(|e| e.to_errno(), |_| 1), Relaxed);
        }
    }

    /// Ids no join of a device takes during the test.
    const GROUP: u64 = u64::MAX - 1;
    const MEMBER: u64 = u64::MAX - 2;
    const DEV: u32 = 0xfff0_0001;

    #[test]
    fn a_port_reset_fails_the_joined_members_and_sends_no_leave() -> Result {
        let h = Arc::new(Last(Atomic::new(0)), GFP_KERNEL)?;
        let rec = McMemberRec {
            mgid: [0xff; 16],
            join_state: 1,
            ..Default::default()
        };
        let mut members = KVec::new();
        members.push(
            Member {
                id: MEMBER,
                rec,
                comp_mask: 0,
                handler: h.clone(),
                state: MemberState::Joined,
            },
            GFP_KERNEL,
        )?;
        tables().groups.push(
            McGroup {
                id: GROUP,
                dev_index: DEV,
                port: 1,
                mgid: rec.mgid,
                rec: Some(rec),
                join_state: 1,
                busy: false,
                members,
            },
            GFP_KERNEL,
        )?;
        // Another port's reset leaves the group alone.
        port_reset(DEV, 2);
        fsleep(Delta::from_millis(20));
        assert_eq!(h.0.load(Relaxed), 0);
        port_reset(DEV, 1);
        for _ in 0..100 {
            if h.0.load(Relaxed) != 0 {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        assert_eq!(h.0.load(Relaxed), ENETRESET.to_errno());
        let mut t = tables();
        let g = t.groups.iter().find(|g| g.id == GROUP).ok_or(ENOENT)?;
        assert_eq!(g.join_state, 0);
        assert!(g.members.iter().all(|m| m.state == MemberState::Failed));
        // The member leaves: the SA holds nothing of the port, so nothing is sent, and the
        // group goes.
        if let Some(g) = t.groups.iter_mut().find(|g| g.id == GROUP) {
            g.members.clear();
        }
        assert!(next_step(&mut t.groups, GROUP).is_none());
        assert!(!t.groups.iter().any(|g| g.id == GROUP));
        Ok(())
    }
}
