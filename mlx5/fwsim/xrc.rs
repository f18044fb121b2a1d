// SPDX-License-Identifier: GPL-2.0

//! XRC domains (ALLOC_XRCD/DEALLOC_XRCD) and XRC SRQs (CREATE_XRC_SRQ/DESTROY_XRC_SRQ).
//!
//! Upstream mlx5_ib needs both before it registers a device: `mlx5_ib_dev_res_init()` refuses
//! a function without `cmd_hca_cap.xrc` (`-EOPNOTSUPP`) and allocates two XRCDs, and the first
//! QP of the device (ib_core's GSI QP at registration) runs `mlx5_ib_dev_res_srq_init()`,
//! which creates an XRC SRQ on XRCD 0 (`create_xrc_srq_cmd()`) and a basic SRQ (an RMP,
//! `srq.rs`). The model keeps the objects and checks what a ConnectX checks when they are
//! created and destroyed (owner, PD, CQ, XRCD, sizes; an XRCD or PD in use is busy).
//!
//! An XRC SRQ keeps the same linked-list queue state as an RMP (`srq.rs`): an XRC send
//! (`qpc.st` XRC, an initiator QP) names the SRQ in the XRC segment after its control segment
//! (`struct mlx5_wqe_xrc_seg`, big-endian `xrc_srqn`); the responder's XRC target QP (the QP
//! the message is addressed to, `no_sq`, its `qpc.xrcd`) takes the WQE at that SRQ's head
//! when the SRQ belongs to the target's XRC domain, checks the scatter list against the SRQ's
//! PD, and completes on the SRQ's CQ with the SRQ's `user_index` (`engine/responder.rs`). An SRQ of
//! another domain, or none, is an Invalid Request NAK (`REMOTE_INVAL_REQ` at the requester)
//! and the target QP goes to ERR with a WQ invalid-request event, as for other malformed
//! requests.

use super::ring::{Buf, Ring};
use super::srq::SrqState;
use super::syndrome::{self as syn, CmdError};
use super::table::ResTable;
use super::{fail, Cmd, Done, Fw, Owned};
use crate::prm::cmd::*;
use crate::prm::command::*;
use crate::prm::ctx::xrc_srqc;
use crate::prm::status::Status;

/// XRC domains the model has room for.
pub(crate) const XRCD_CAPACITY: usize = 32;
/// XRC SRQs the model has room for.
pub(crate) const XRC_SRQ_CAPACITY: usize = 16;
/// First XRCD number.
const XRCD_BASE: u32 = 0x1;
/// First XRC SRQ number: SRQ numbers (RMPs start at 0x300, 32 of them) are one space.
const XRC_SRQ_BASE: u32 = 0x380;
/// `MLX5_XRC_SRQC_STATE_GOOD`.
const XRC_SRQC_STATE_GOOD: u32 = 0;

/// An XRC SRQ: who owns it and what it uses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct XrcSrq {
    uid: u16,
    /// Its XRC domain.
    pub(crate) xrcd: u32,
    /// The PD the receive buffers are checked against.
    pub(crate) pd: u32,
    /// The CQ its receives complete on.
    pub(crate) cqn: u32,
    /// `user_index` (the CQE's `srqn_uidx` with CQE version 1).
    pub(crate) user_index: u32,
    /// The queue the data path consumes.
    pub(crate) q: SrqState,
}

super::table::owner_is_uid!(XrcSrq);

/// The XRC objects of one function.
pub(crate) struct Xrc {
    xrcds: ResTable<Owned, XRCD_CAPACITY>,
    srqs: ResTable<XrcSrq, XRC_SRQ_CAPACITY>,
}

impl Xrc {
    /// No object.
    pub(crate) const fn new() -> Self {
        Self {
            xrcds: ResTable::new(XRCD_BASE),
            srqs: ResTable::new(XRC_SRQ_BASE),
        }
    }

    /// [`Xrc::new`] as an in-place initializer, for the kernel (the SRQ table keeps each
    /// SRQ's translation: a few KiB).
    #[cfg(MODULE)]
    pub(crate) fn new_in_place() -> impl pin_init::Init<Self> {
        pin_init::init!(Self {
            xrcds <- ResTable::new_in_place(XRCD_BASE),
            srqs <- ResTable::new_in_place(XRC_SRQ_BASE),
        })
    }

    /// XRC SRQ `srqn`.
    pub(crate) fn srq(&self, srqn: u32) -> Option<&XrcSrq> {
        self.srqs.get(srqn)
    }

    /// XRC SRQ `srqn`, to consume from.
    pub(crate) fn srq_mut(&mut self, srqn: u32) -> Option<&mut XrcSrq> {
        self.srqs.get_mut(srqn)
    }

    /// Forgets every object (TEARDOWN_HCA, cold boot, reset).
    pub(crate) fn clear(&mut self) {
        self.xrcds.clear();
        self.srqs.clear();
    }

    /// Live XRCDs plus XRC SRQs (`Counts::xrc`).
    pub(crate) fn count(&self) -> usize {
        self.xrcds.count() + self.srqs.count()
    }

    /// Whether an XRC SRQ uses PD `pd` (DEALLOC_PD is then busy).
    pub(crate) fn uses_pd(&self, pd: u32) -> bool {
        self.srqs.iter().any(|(_, s)| s.pd == pd)
    }

    /// Whether an XRC SRQ reports to CQ `cqn`.
    pub(crate) fn uses_cq(&self, cqn: u32) -> bool {
        self.srqs.iter().any(|(_, s)| s.cqn == cqn)
    }
}

impl Fw {
    /// ALLOC_XRCD: a new XRC domain for the caller's uid.
    pub(super) fn alloc_xrcd(&mut self, c: &mut Cmd<'_, AllocXrcd>) -> Done {
        let xrcd = self.xrc.xrcds.insert(Owned { uid: c.uid })?;
        c.set(alloc_xrcd_out::xrcd, xrcd)
    }

    /// DEALLOC_XRCD: refused while an XRC SRQ lives in the domain.
    pub(super) fn dealloc_xrcd(&mut self, c: &mut Cmd<'_, DeallocXrcd>) -> Done {
        let xrcd = c.get(dealloc_xrcd_in::xrcd);
        self.xrcd_usable(c.uid, xrcd)?;
        if self.xrc.srqs.iter().any(|(_, s)| s.xrcd == xrcd) {
            return fail(Status::RES_BUSY, syn::XRCD_BUSY);
        }
        if self.xrcd_has_qp(xrcd) {
            return fail(Status::RES_BUSY, syn::XRCD_BUSY_QP);
        }
        self.xrc.xrcds.free(xrcd);
        Ok(())
    }

    /// Checks that `xrcd` names an XRC domain `uid` may use.
    pub(super) fn xrcd_usable(&self, uid: u16, xrcd: u32) -> Result<(), CmdError> {
        self.xrc
            .xrcds
            .lookup_owned(xrcd, uid, syn::XRCD_UNKNOWN)
            .map(|_| ())
    }

    /// CREATE_XRC_SRQ: validates the context `create_xrc_srq_cmd()` fills (state GOOD, sizes
    /// within the caps, a live XRCD, PD and CQ of the caller, a kernel or user buffer given
    /// by `pas[]`, not a DEVX umem) and stores the SRQ.
    pub(super) fn create_xrc_srq(&mut self, c: &mut Cmd<'_, CreateXrcSrq>) -> Done {
        let x = |f| create_xrc_srq_in::xrc_srq_context_entry.inner(f);
        if c.get(x(xrc_srqc::state)) != XRC_SRQC_STATE_GOOD
            || c.get(create_xrc_srq_in::xrc_srq_umem_valid) != 0
            || c.get(x(xrc_srqc::dbr_umem_valid)) != 0
        {
            return fail(Status::BAD_PARAM_ERR, syn::XRC_SRQ_CTX);
        }
        // Sizes as for an RMP: up to log_max_srq_sz WQEs; the stride is log2(bytes) - 4,
        // 16 bytes up to max_wqe_sz_rq (512).
        if c.get(x(xrc_srqc::log_xrc_srq_size)) > self.cfg.profile.log_max_srq_sz {
            return fail(Status::LIM_ERR, syn::XRC_SRQ_SIZE);
        }
        if c.get(x(xrc_srqc::log_rq_stride)) > 5 {
            return fail(Status::BAD_PARAM_ERR, syn::XRC_SRQ_SIZE);
        }
        // At least one pas[] entry (8 bytes) after the fixed layout.
        if c.inbox_raw().len() < create_xrc_srq_in::SIZE_BYTES + 8 {
            return fail(Status::BAD_INP_LEN_ERR, syn::XRC_SRQ_NO_PAS);
        }
        let xrcd = c.get(x(xrc_srqc::xrcd));
        self.xrcd_usable(c.uid, xrcd)?;
        let pd = c.get(x(xrc_srqc::pd));
        self.pd_usable(c.uid, pd)?;
        let cqn = c.get(x(xrc_srqc::cqn));
        self.cq_usable(c.uid, cqn, syn::CQ_UNKNOWN)?;
        // The queue as `create_xrc_srq_cmd()` describes it: 2^log_xrc_srq_size WQEs of
        // 16 << log_rq_stride bytes, pages of 4096 << log_page_size, the first WQE at
        // page_offset 64-byte units into the first page.
        let ring = Ring::new(
            u8::try_from(c.get(x(xrc_srqc::log_xrc_srq_size))).unwrap_or(0),
            u8::try_from(c.get(x(xrc_srqc::log_rq_stride)) + 4).unwrap_or(4),
            0,
        );
        let dbr = (u64::from(c.get(x(xrc_srqc::db_record_addr_h))) << 32)
            | (u64::from(c.get(x(xrc_srqc::db_record_addr_l))) << 2);
        let buf = Buf::from_pas(
            c.inbox_raw(),
            create_xrc_srq_in::SIZE_BYTES,
            c.get(x(xrc_srqc::log_page_size)),
            c.get(x(xrc_srqc::page_offset)),
            ring.bytes(),
            dbr,
        )
        .map_err(super::objects::fragmented)?;
        let q = SrqState::new(buf, ring);
        let user_index = c.get(x(xrc_srqc::user_index));
        let srqn = self.xrc.srqs.insert(XrcSrq {
            uid: c.uid,
            xrcd,
            pd,
            cqn,
            user_index,
            q,
        })?;
        c.set(create_xrc_srq_out::xrc_srqn, srqn)
    }

    /// DESTROY_XRC_SRQ.
    pub(super) fn destroy_xrc_srq(&mut self, c: &mut Cmd<'_, DestroyXrcSrq>) -> Done {
        let srqn = c.get(destroy_xrc_srq_in::xrc_srqn);
        self.xrc.srqs.free_owned(srqn, c.uid, syn::XRC_SRQ_UNKNOWN)
    }
}

#[cfg(test)]
mod tests {
    use super::super::profile::{LinkLayer, CONNECTX7};
    use super::super::tests::{
        alloc, alloc_pd, alloc_uar, create_cq, destroy_in, err, fw, inbox, ok,
    };
    use super::*;
    use crate::prm::ctx::cmd_hca_cap;
    use crate::prm::opcode as op;
    use std::vec::Vec;

    /// What `create_xrc_srq_cmd()` sends for mlx5_ib's device resource `s0` (one WQE of one
    /// SGE: 32-byte stride, log size 0), with one page in `pas[]`.
    fn srq_in(uid: u16, xrcd: u32, pd: u32, cqn: u32) -> Vec<u8> {
        let mut b = inbox(
            op::CREATE_XRC_SRQ,
            uid,
            0,
            create_xrc_srq_in::SIZE_BYTES + 8,
        );
        let x = |f| create_xrc_srq_in::xrc_srq_context_entry.inner(f);
        x(xrc_srqc::log_rq_stride).set(&mut b, 1).unwrap();
        x(xrc_srqc::xrcd).set(&mut b, xrcd).unwrap();
        x(xrc_srqc::pd).set(&mut b, pd).unwrap();
        x(xrc_srqc::cqn).set(&mut b, cqn).unwrap();
        x(xrc_srqc::db_record_addr_l)
            .set(&mut b, 0x1000 >> 2)
            .unwrap();
        b[create_xrc_srq_in::SIZE_BYTES..][..8].copy_from_slice(&0x2000u64.to_be_bytes());
        b
    }

    fn create(f: &mut Fw, b: &[u8]) -> u32 {
        let out = ok(f, b, create_xrc_srq_out::SIZE_BYTES);
        create_xrc_srq_out::xrc_srqn.get(&out).unwrap()
    }

    #[test]
    fn xrcd_and_xrc_srq_lifecycle_as_mlx5_ib_probes() {
        let mut f = fw(CONNECTX7, LinkLayer::Ib);
        // The capability upstream mlx5_ib_dev_res_init() requires.
        let cur = inbox(op::QUERY_HCA_CAP, 0, 1, 16);
        let caps = ok(&mut f, &cur, query_hca_cap_out::SIZE_BYTES);
        assert_eq!(
            query_hca_cap_out::capability
                .inner(cmd_hca_cap::xrc)
                .get(&caps)
                .unwrap(),
            1
        );
        // Two XRCDs (xrcdn0, xrcdn1), distinct numbers.
        let x0 = alloc(&mut f, op::ALLOC_XRCD, 0, alloc_xrcd_out::xrcd);
        let x1 = alloc(&mut f, op::ALLOC_XRCD, 0, alloc_xrcd_out::xrcd);
        assert_ne!(x0, x1);
        assert_ne!(x0, 0);
        // mlx5_ib_dev_res_srq_init(): PD, CQ, then the XRC SRQ on xrcdn0.
        let pd = alloc_pd(&mut f, 0);
        let uar = alloc_uar(&mut f, 0);
        let cq = create_cq(&mut f, 0, uar);
        let s0 = create(&mut f, &srq_in(0, x0, pd, cq));
        assert_eq!(f.counts().xrc, 3);
        // Everything it uses is busy while it lives.
        let dx = destroy_in(op::DEALLOC_XRCD, 0, dealloc_xrcd_in::xrcd, x0);
        assert_eq!(
            err(&mut f, &dx, dealloc_xrcd_out::SIZE_BYTES),
            (Status::RES_BUSY, syn::XRCD_BUSY)
        );
        let dp = destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, pd);
        assert_eq!(
            err(&mut f, &dp, dealloc_pd_out::SIZE_BYTES),
            (Status::RES_BUSY, syn::PD_BUSY_XRC_SRQ)
        );
        let dc = destroy_in(op::DESTROY_CQ, 0, destroy_cq_in::cqn, cq);
        assert_eq!(
            err(&mut f, &dc, destroy_cq_out::SIZE_BYTES),
            (Status::RES_BUSY, syn::CQ_BUSY)
        );
        // Bad contexts: unknown XRCD, PD, CQ; a user of someone else's objects; sizes; no
        // pas[]; umem; another state.
        let bad = |f: &mut Fw, b: &[u8]| err(f, b, create_xrc_srq_out::SIZE_BYTES);
        assert_eq!(
            bad(&mut f, &srq_in(0, 0x77, pd, cq)),
            (Status::BAD_RES_ERR, syn::XRCD_UNKNOWN)
        );
        assert_eq!(bad(&mut f, &srq_in(0, x1, 0x777, cq)).1, syn::PD_UNKNOWN);
        assert_eq!(
            bad(&mut f, &srq_in(0, x1, pd, 0x7777)),
            (Status::BAD_RES_ERR, syn::CQ_UNKNOWN)
        );
        let x = |f| create_xrc_srq_in::xrc_srq_context_entry.inner(f);
        // (`log_xrc_srq_size` is 4 bits: 15, the profile's `log_max_srq_sz`, is its largest.)
        let mut b = srq_in(0, x1, pd, cq);
        x(xrc_srqc::log_rq_stride).set(&mut b, 6).unwrap();
        assert_eq!(bad(&mut f, &b), (Status::BAD_PARAM_ERR, syn::XRC_SRQ_SIZE));
        let b = srq_in(0, x1, pd, cq);
        assert_eq!(
            bad(&mut f, &b[..create_xrc_srq_in::SIZE_BYTES]),
            (Status::BAD_INP_LEN_ERR, syn::XRC_SRQ_NO_PAS)
        );
        let mut b = srq_in(0, x1, pd, cq);
        create_xrc_srq_in::xrc_srq_umem_valid
            .set(&mut b, 1)
            .unwrap();
        assert_eq!(bad(&mut f, &b), (Status::BAD_PARAM_ERR, syn::XRC_SRQ_CTX));
        let mut b = srq_in(0, x1, pd, cq);
        x(xrc_srqc::state).set(&mut b, 1).unwrap();
        assert_eq!(bad(&mut f, &b), (Status::BAD_PARAM_ERR, syn::XRC_SRQ_CTX));
        assert_eq!(f.counts().xrc, 3);
        // Teardown in mlx5_ib's order: the SRQ, then its CQ and PD, then the XRCDs.
        let ds = destroy_in(op::DESTROY_XRC_SRQ, 0, destroy_xrc_srq_in::xrc_srqn, s0);
        ok(&mut f, &ds, destroy_xrc_srq_out::SIZE_BYTES);
        assert_eq!(
            err(&mut f, &ds, destroy_xrc_srq_out::SIZE_BYTES),
            (Status::BAD_RES_ERR, syn::XRC_SRQ_UNKNOWN)
        );
        ok(&mut f, &dc, destroy_cq_out::SIZE_BYTES);
        ok(&mut f, &dp, dealloc_pd_out::SIZE_BYTES);
        ok(&mut f, &dx, dealloc_xrcd_out::SIZE_BYTES);
        let dx1 = destroy_in(op::DEALLOC_XRCD, 0, dealloc_xrcd_in::xrcd, x1);
        ok(&mut f, &dx1, dealloc_xrcd_out::SIZE_BYTES);
        assert_eq!(
            err(&mut f, &dx1, dealloc_xrcd_out::SIZE_BYTES),
            (Status::BAD_RES_ERR, syn::XRCD_UNKNOWN)
        );
        let d = destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, uar);
        ok(&mut f, &d, dealloc_uar_out::SIZE_BYTES);
        assert!(f.counts().is_zero());
        // TEARDOWN_HCA / cold boot forget them too.
        alloc(&mut f, op::ALLOC_XRCD, 0, alloc_xrcd_out::xrcd);
        f.cold_boot();
        assert_eq!(f.counts().xrc, 0);
    }
}
