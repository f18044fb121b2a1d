// SPDX-License-Identifier: GPL-2.0

//! Multicast groups: ATTACH_TO_MCG and DETACH_FROM_MCG (upstream `mlx5_cmd_attach_mcg()`,
//! `mlx5_cmd_detach_mcg()`, which `mlx5_ib_mcg_attach()` sends for `ib_attach_mcast()`), and
//! the QPs a multicast packet reaches ([`Mcg::members`]).
//!
//! The model keeps a table of (MGID, QPN) attachments, [`MAX_ATTACH`] of them per function
//! (`NO_RES_ERR` beyond). A UD QP may be attached to a group once (a second attach is
//! `BAD_PARAM_ERR`, a detach of an attachment that does not exist too); a QP's attachments go
//! with the QP (DESTROY_QP). A UD SEND whose BTH names QPN 0xffffff and whose destination GID
//! is a group is delivered to each attached QP (`engine/wire.rs`).

use super::{fail, syndrome as syn, Cmd, Done, Fw};
use crate::prm::cmd::{attach_to_mcg_in, detach_from_mcg_in};
use crate::prm::command::{AttachToMcg, DetachFromMcg};
use crate::prm::consts::QPC_ST_UD;
use crate::prm::ctx::qpc;
use crate::prm::status::Status;

/// Attachments kept per function.
pub(crate) const MAX_ATTACH: usize = 64;

/// One attachment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Attach {
    mgid: [u8; 16],
    qpn: u32,
    live: bool,
}

/// The attachments of one function.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mcg {
    table: [Attach; MAX_ATTACH],
}

impl Mcg {
    /// No attachment.
    pub(crate) const fn new() -> Self {
        Mcg {
            table: [Attach {
                mgid: [0; 16],
                qpn: 0,
                live: false,
            }; MAX_ATTACH],
        }
    }

    /// The QPs attached to `mgid`, into `out`; how many.
    pub(crate) fn members(&self, mgid: &[u8; 16], out: &mut [u32]) -> usize {
        let mut n = 0;
        for a in self.table.iter().filter(|a| a.live && a.mgid == *mgid) {
            if let Some(o) = out.get_mut(n) {
                *o = a.qpn;
                n += 1;
            }
        }
        n
    }

    /// Whether some QP is attached to `mgid`.
    pub(crate) fn has(&self, mgid: &[u8; 16]) -> bool {
        self.table.iter().any(|a| a.live && a.mgid == *mgid)
    }

    /// Attaches QP `qpn` to `mgid`: `BAD_PARAM_ERR` when it is, `NO_RES_ERR` when the table
    /// is full.
    pub(crate) fn attach(&mut self, mgid: [u8; 16], qpn: u32) -> Done {
        let t = &mut self.table;
        if t.iter().any(|a| a.live && a.qpn == qpn && a.mgid == mgid) {
            return fail(Status::BAD_PARAM_ERR, syn::MCG_PARAM);
        }
        let Some(free) = t.iter_mut().find(|a| !a.live) else {
            return fail(Status::NO_RES_ERR, syn::MCG_FULL);
        };
        *free = Attach {
            mgid,
            qpn,
            live: true,
        };
        Ok(())
    }

    /// Live attachments (debugfs `stats`: `mcg_attached`).
    pub(crate) fn count(&self) -> usize {
        self.table.iter().filter(|a| a.live).count()
    }

    /// Drops the attachments of QP `qpn` (its DESTROY_QP).
    pub(crate) fn forget_qp(&mut self, qpn: u32) {
        for a in self.table.iter_mut().filter(|a| a.qpn == qpn) {
            a.live = false;
        }
    }
}

/// Whether `gid` is a multicast group: an IPv6 multicast address (`ff00::/8`), or an
/// IPv4-mapped one of `224.0.0.0/4` (a RoCE v2 group of an IPv4 address, upstream
/// `cma_iboe_set_mgid()`).
pub(crate) fn is_mgid(gid: &[u8; 16]) -> bool {
    gid[0] == 0xff || (gid[..10] == [0; 10] && gid[10..12] == [0xff, 0xff] && gid[12] >> 4 == 0xe)
}

impl Fw {
    /// ATTACH_TO_MCG: UD QP `qpn` of the caller joins group `multicast_gid`.
    pub(super) fn attach_to_mcg(&mut self, c: &mut Cmd<'_, AttachToMcg>) -> Done {
        let qpn = c.get(attach_to_mcg_in::qpn);
        let mut mgid = [0u8; 16];
        mgid.copy_from_slice(c.in_bytes(attach_to_mcg_in::multicast_gid));
        let q = self.qp_owned(c.uid, qpn)?;
        if qpc::st.get(&q.qpc) != Ok(QPC_ST_UD) || !is_mgid(&mgid) {
            return fail(Status::BAD_PARAM_ERR, syn::MCG_PARAM);
        }
        self.mcg.attach(mgid, qpn)
    }

    /// DETACH_FROM_MCG: QP `qpn` of the caller leaves group `multicast_gid`.
    pub(super) fn detach_from_mcg(&mut self, c: &mut Cmd<'_, DetachFromMcg>) -> Done {
        let qpn = c.get(detach_from_mcg_in::qpn);
        let mut mgid = [0u8; 16];
        mgid.copy_from_slice(c.in_bytes(detach_from_mcg_in::multicast_gid));
        self.qp_owned(c.uid, qpn)?;
        let Some(a) = self
            .mcg
            .table
            .iter_mut()
            .find(|a| a.live && a.qpn == qpn && a.mgid == mgid)
        else {
            return fail(Status::BAD_PARAM_ERR, syn::MCG_PARAM);
        };
        a.live = false;
        Ok(())
    }
}
