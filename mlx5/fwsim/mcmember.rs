// SPDX-License-Identifier: GPL-2.0

//! The embedded SM's multicast groups: what its SA (`engine/sa.rs`) answers for an
//! MCMemberRecord (IBA 15.2.5.17) SubnAdmSet (join) or SubnAdmDelete (leave), kept on the
//! switch the SM runs on.
//!
//! A join (the record's PortGID, JoinState and the components the mask names) of a group
//! that exists must agree with the group's Q_Key, P_Key, TClass, FlowLabel, SL, HopLimit,
//! and its MTU and rate by their selectors; the port becomes a member (its join states
//! added). A join of a group that does not exist creates it, when it is a full member's and
//! names the Q_Key, P_Key, SL, FlowLabel and TClass (IBA C15-0.2.2): the MGID the request's,
//! or assigned when zero (`ff1S:a01b:PPPP::N`, the SA-assigned signature upstream
//! `cma_set_mgid()` recognises, S the scope, P the P_Key), an MLID from 0xC000 (the group's
//! slot), MTU 4096 and rate 40 Gb/s unless the request asks exactly for less, packet life
//! time 18. A leave takes the record's join states from the member, the member goes with its
//! last, the group with its last member. The answer is the group's record with the
//! member's PortGID and join states.
//!
//! Statuses (IBA 15.2.5.17, the SA's `ERR_*` in bits 8..14): a missing required component
//! `ERR_REQ_INSUFFICIENT_COMPONENTS`, a PortGID no ACTIVE port has `ERR_REQ_INVALID_GID`, a
//! component that disagrees with the group, an MGID that is not multicast, a creation by a
//! member that is not full, a partition other than the default, a leave of a group or member
//! that does not exist `ERR_REQ_INVALID`; no free slot `ERR_NO_RESOURCES`.

use super::mad::status::{
    SA_ERR_NO_RESOURCES, SA_ERR_REQ_INSUFFICIENT_COMPONENTS, SA_ERR_REQ_INVALID,
    SA_ERR_REQ_INVALID_GID,
};

/// The first multicast LID.
pub(crate) const MLID_BASE: u16 = 0xc000;
/// Groups the SA keeps (each has the MLID of its slot).
pub(crate) const MAX_GROUPS: usize = 16;
/// Member ports of one group.
pub(crate) const MAX_MEMBERS: usize = 8;
/// Bytes of an MCMemberRecord.
pub(crate) const REC_LEN: usize = 52;

/// The record's components by their bit in the component mask (upstream
/// `IB_SA_MCMEMBER_REC_*`).
#[derive(Clone, Copy)]
pub(crate) enum Comp {
    Mgid = 0,
    PortGid = 1,
    Qkey = 2,
    MtuSelector = 4,
    Mtu = 5,
    TrafficClass = 6,
    Pkey = 7,
    RateSelector = 8,
    Rate = 9,
    Sl = 12,
    FlowLabel = 13,
    HopLimit = 14,
    Scope = 15,
    JoinState = 16,
}

impl Comp {
    /// The component's bit in the mask.
    pub(crate) const fn bit(self) -> u64 {
        1 << self as u32
    }
}

/// The mask of components `c`.
pub(crate) const fn mask(c: &[Comp]) -> u64 {
    let mut m = 0;
    let mut i = 0;
    while i < c.len() {
        m |= c[i].bit();
        i += 1;
    }
    m
}

/// JoinState FullMember.
const FULL_MEMBER: u8 = 1;
/// The fabric's MTU (4096) and rate (40 Gb/s) as `enum ib_mtu`/`ib_rate`.
const FABRIC_MTU: u8 = 5;
const FABRIC_RATE: u8 = 7;
/// Selector "exactly".
const SEL_EXACTLY: u8 = 2;
/// The packet life time the SA gives a group.
const PACKET_LIFE_TIME: u8 = 18;

// Record offsets (IBA 15.2.5.17).
const R_PORT_GID: usize = 16;
const R_QKEY: usize = 32;
const R_MLID: usize = 36;
const R_MTU: usize = 38;
const R_TCLASS: usize = 39;
const R_PKEY: usize = 40;
const R_RATE: usize = 42;
const R_PLT: usize = 43;
const R_SL_FL_HL: usize = 44;
const R_SCOPE_JS: usize = 48;

#[derive(Clone, Copy)]
struct Member {
    gid: [u8; 16],
    /// 0: a free slot.
    join_state: u8,
}

#[derive(Clone, Copy)]
struct Group {
    /// The group's record (PortGID and JoinState zero); the MGID 0 for a free slot.
    rec: [u8; REC_LEN],
    members: [Member; MAX_MEMBERS],
}

const FREE_GROUP: Group = Group {
    rec: [0; REC_LEN],
    members: [Member {
        gid: [0; 16],
        join_state: 0,
    }; MAX_MEMBERS],
};

/// The SA's groups (see the module comment).
pub(crate) struct McGroups {
    groups: [Group; MAX_GROUPS],
    /// The last assigned MGID's number.
    assigned: u32,
}

/// What a request did to a group: the MLID whose members changed (its MFT entry must follow).
pub(crate) type Changed = Option<u16>;

fn be32(b: &[u8], o: usize) -> u32 {
    b.get(o..o + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

/// Whether a value `v` meets the request's selector `sel` and value `want` (IBA 15.2.5.16:
/// 0 greater than, 1 less than, 2 exactly, 3 the largest).
fn selects(sel: u8, want: u8, v: u8) -> bool {
    match sel {
        0 => v > want,
        1 => v < want,
        2 => v == want,
        _ => true,
    }
}

impl McGroups {
    /// No group.
    pub(crate) const fn new() -> Self {
        McGroups {
            groups: [FREE_GROUP; MAX_GROUPS],
            assigned: 0,
        }
    }

    fn find(&self, mgid: &[u8]) -> Option<usize> {
        self.groups
            .iter()
            .position(|g| g.rec[0] != 0 && g.rec[..16] == *mgid)
    }

    /// The MLID of group slot `i`.
    fn mlid(i: usize) -> u16 {
        MLID_BASE + (i % MAX_GROUPS) as u16
    }

    /// The PortGIDs of the members of the group with `mlid`.
    pub(crate) fn members(&self, mlid: u16) -> impl Iterator<Item = &[u8; 16]> + '_ {
        let i = usize::from(mlid.wrapping_sub(MLID_BASE));
        self.groups
            .get(i)
            .filter(|g| g.rec[0] != 0)
            .into_iter()
            .flat_map(|g| g.members.iter())
            .filter(|m| m.join_state != 0)
            .map(|m| &m.gid)
    }

    /// Live groups.
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.groups.iter().filter(|g| g.rec[0] != 0).count()
    }

    /// A SubnAdmSet of MCMemberRecord `rec` (answered in place) with `mask`; `port_ok` says
    /// whether a PortGID is an ACTIVE port's. The group whose members changed, or the SA's
    /// status.
    pub(crate) fn join(
        &mut self,
        rec: &mut [u8; REC_LEN],
        mask: u64,
        port_ok: impl Fn(&[u8]) -> bool,
    ) -> Result<Changed, u16> {
        let js = rec[R_SCOPE_JS] & 0xf;
        if mask & Comp::PortGid.bit() == 0 || mask & Comp::JoinState.bit() == 0 || js == 0 {
            return Err(SA_ERR_REQ_INSUFFICIENT_COMPONENTS);
        }
        if !port_ok(&rec[R_PORT_GID..R_PORT_GID + 16]) {
            return Err(SA_ERR_REQ_INVALID_GID);
        }
        let zero = mask & Comp::Mgid.bit() == 0 || rec[..16] == [0; 16];
        if !zero && rec[0] != 0xff {
            return Err(SA_ERR_REQ_INVALID);
        }
        let i = match self.find(&rec[..16]).filter(|_| !zero) {
            Some(i) => {
                if !Self::agrees(&self.groups[i].rec, rec, mask) {
                    return Err(SA_ERR_REQ_INVALID);
                }
                i
            }
            None => self.create(rec, mask, zero)?,
        };
        let mut port_gid = [0u8; 16];
        port_gid.copy_from_slice(&rec[R_PORT_GID..R_PORT_GID + 16]);
        let g = &mut self.groups[i];
        let slot = g
            .members
            .iter()
            .position(|m| m.join_state != 0 && m.gid == port_gid)
            .or_else(|| g.members.iter().position(|m| m.join_state == 0));
        let Some(slot) = slot else {
            if g.members.iter().all(|m| m.join_state == 0) {
                *g = FREE_GROUP;
            }
            return Err(SA_ERR_NO_RESOURCES);
        };
        let m = &mut g.members[slot];
        let new_member = m.join_state == 0;
        m.gid = port_gid;
        m.join_state |= js;
        let js = m.join_state;
        *rec = g.rec;
        rec[R_PORT_GID..R_PORT_GID + 16].copy_from_slice(&port_gid);
        rec[R_SCOPE_JS] |= js;
        Ok(new_member.then(|| Self::mlid(i)))
    }

    /// Whether the components of `req` that `mask` names agree with group record `g`.
    fn agrees(g: &[u8; REC_LEN], req: &[u8; REC_LEN], mask: u64) -> bool {
        let same = |bit: u64, r: core::ops::Range<usize>| {
            mask & bit == 0 || g.get(r.clone()) == req.get(r)
        };
        let slfh = |bit: u64, m: u32| {
            mask & bit == 0 || be32(g, R_SL_FL_HL) & m == be32(req, R_SL_FL_HL) & m
        };
        let sel = |sbit: u64, vbit: u64, o: usize| {
            mask & vbit == 0
                || selects(
                    if mask & sbit != 0 {
                        req[o] >> 6
                    } else {
                        SEL_EXACTLY
                    },
                    req[o] & 0x3f,
                    g[o] & 0x3f,
                )
        };
        same(Comp::Qkey.bit(), R_QKEY..R_QKEY + 4)
            && same(Comp::TrafficClass.bit(), R_TCLASS..R_TCLASS + 1)
            // The P_Key's membership bit aside.
            && (mask & Comp::Pkey.bit() == 0 || (g[R_PKEY] ^ req[R_PKEY]) & 0x7f == 0 && g[R_PKEY + 1] == req[R_PKEY + 1])
            && slfh(Comp::Sl.bit(), 0xf000_0000)
            && slfh(Comp::FlowLabel.bit(), 0x0fff_ff00)
            && slfh(Comp::HopLimit.bit(), 0xff)
            && sel(Comp::MtuSelector.bit(), Comp::Mtu.bit(), R_MTU)
            && sel(Comp::RateSelector.bit(), Comp::Rate.bit(), R_RATE)
    }

    /// A new group for `req` (assigning its MGID when `zero`): its slot.
    fn create(&mut self, req: &[u8; REC_LEN], mask: u64, zero: bool) -> Result<usize, u16> {
        let need = self::mask(&[
            Comp::Qkey,
            Comp::Pkey,
            Comp::Sl,
            Comp::FlowLabel,
            Comp::TrafficClass,
        ]);
        if mask & need != need {
            return Err(SA_ERR_REQ_INSUFFICIENT_COMPONENTS);
        }
        let pkey = u16::from_be_bytes([req[R_PKEY], req[R_PKEY + 1]]);
        if req[R_SCOPE_JS] & FULL_MEMBER == 0 || pkey & 0x7fff != 0x7fff {
            return Err(SA_ERR_REQ_INVALID);
        }
        // MTU and rate: the fabric's, or what the request asks for exactly.
        let pick = |sbit: u64, vbit: u64, o: usize, fabric: u8, lo: u8| {
            if mask & vbit == 0 {
                return Some(fabric);
            }
            let (sel, want) = (
                if mask & sbit != 0 {
                    req[o] >> 6
                } else {
                    SEL_EXACTLY
                },
                req[o] & 0x3f,
            );
            match sel {
                SEL_EXACTLY => (lo..=fabric).contains(&want).then_some(want),
                _ => selects(sel, want, fabric).then_some(fabric),
            }
        };
        let (Some(mtu), Some(rate)) = (
            pick(
                Comp::MtuSelector.bit(),
                Comp::Mtu.bit(),
                R_MTU,
                FABRIC_MTU,
                1,
            ),
            pick(
                Comp::RateSelector.bit(),
                Comp::Rate.bit(),
                R_RATE,
                FABRIC_RATE,
                2,
            ),
        ) else {
            return Err(SA_ERR_REQ_INVALID);
        };
        let i = self
            .groups
            .iter()
            .position(|g| g.rec[0] == 0)
            .ok_or(SA_ERR_NO_RESOURCES)?;
        let scope = if mask & Comp::Scope.bit() != 0 {
            req[R_SCOPE_JS] >> 4
        } else {
            2
        };
        let mut r = [0u8; REC_LEN];
        if zero {
            self.assigned = self.assigned.wrapping_add(1);
            r[0] = 0xff;
            r[1] = 0x10 | scope;
            r[2] = 0xa0;
            r[3] = 0x1b;
            r[4..6].copy_from_slice(&(pkey | 0x8000).to_be_bytes());
            r[12..16].copy_from_slice(&self.assigned.to_be_bytes());
        } else {
            r[..16].copy_from_slice(&req[..16]);
        }
        r[R_QKEY..R_QKEY + 4].copy_from_slice(&req[R_QKEY..R_QKEY + 4]);
        r[R_MLID..R_MLID + 2].copy_from_slice(&Self::mlid(i).to_be_bytes());
        r[R_MTU] = (SEL_EXACTLY << 6) | mtu;
        r[R_TCLASS] = req[R_TCLASS];
        r[R_PKEY..R_PKEY + 2].copy_from_slice(&(pkey | 0x8000).to_be_bytes());
        r[R_RATE] = (SEL_EXACTLY << 6) | rate;
        r[R_PLT] = (SEL_EXACTLY << 6) | PACKET_LIFE_TIME;
        let hl = if mask & Comp::HopLimit.bit() != 0 {
            0xff
        } else {
            0
        };
        let w = be32(req, R_SL_FL_HL) & (0xffff_ff00 | hl);
        r[R_SL_FL_HL..R_SL_FL_HL + 4].copy_from_slice(&w.to_be_bytes());
        r[R_SCOPE_JS] = scope << 4;
        self.groups[i] = Group {
            rec: r,
            members: FREE_GROUP.members,
        };
        Ok(i)
    }

    /// A SubnAdmDelete of MCMemberRecord `rec` (answered in place) with `mask`: the status
    /// and the group whose members changed, or the SA's status.
    pub(crate) fn leave(&mut self, rec: &mut [u8; REC_LEN], mask: u64) -> Result<Changed, u16> {
        let need = self::mask(&[Comp::Mgid, Comp::PortGid, Comp::JoinState]);
        let js = rec[R_SCOPE_JS] & 0xf;
        if mask & need != need || js == 0 {
            return Err(SA_ERR_REQ_INSUFFICIENT_COMPONENTS);
        }
        let Some(i) = self.find(&rec[..16]) else {
            return Err(SA_ERR_REQ_INVALID);
        };
        let g = &mut self.groups[i];
        let port_gid = &rec[R_PORT_GID..R_PORT_GID + 16];
        let Some(m) = g
            .members
            .iter_mut()
            .find(|m| m.join_state != 0 && m.gid[..] == *port_gid)
        else {
            return Err(SA_ERR_REQ_INVALID);
        };
        m.join_state &= !js;
        let gone = m.join_state == 0;
        let mut port = [0u8; 16];
        port.copy_from_slice(port_gid);
        *rec = g.rec;
        rec[R_PORT_GID..R_PORT_GID + 16].copy_from_slice(&port);
        rec[R_SCOPE_JS] |= js;
        if g.members.iter().all(|m| m.join_state == 0) {
            *g = FREE_GROUP;
        }
        Ok(gone.then(|| Self::mlid(i)))
    }
}
