// SPDX-License-Identifier: GPL-2.0

//! PD, UAR, transport domain, user context, CQ and mkey commands.
//!
//! Every object records the uid that created it. A destroy of an object that others still
//! reference fails with `RES_BUSY` and leaves everything as it was. ConnectX firmware refuses
//! such destroys too (upstream only sees it when its own `usecnt` bookkeeping is wrong, since
//! ib_core returns `EBUSY` first); modeling it makes that driver bug visible instead of leaving a
//! QP that points at a freed CQ.

use super::cqe::CqState;
use super::syndrome::{self as syn, CmdError};
use super::xlat::{self, Fragmented, MkeyInfo};
use super::{
    fail, Cmd, Cq, Done, Fw, Mkey, Owned, QCnt, QCounter, Uctx, CQC_BYTES, MKC_BYTES, QCNT_N,
};
use crate::prm::cmd::*;
use crate::prm::command::*;
use crate::prm::consts;
use crate::prm::ctx::{cqc, mkc};
use crate::prm::status::Status;

/// `NO_RES_ERR` for a translation that does not fit the compressed form.
pub(super) fn fragmented(_: Fragmented) -> CmdError {
    CmdError::new(Status::NO_RES_ERR, syn::TRANSLATION_FRAGMENTED)
}

impl Fw {
    /// ALLOC_PD: a protection domain for the command's uid.
    pub(super) fn alloc_pd(&mut self, c: &mut Cmd<'_, AllocPd>) -> Done {
        let pd = self.pds.insert(Owned { uid: c.uid })?;
        c.set(alloc_pd_out::pd, pd)
    }

    /// DEALLOC_PD: refused while a QP or an mkey uses the PD.
    pub(super) fn dealloc_pd(&mut self, c: &mut Cmd<'_, DeallocPd>) -> Done {
        let pd = c.get(dealloc_pd_in::pd);
        self.pd_usable(c.uid, pd)?;
        if self.qps.iter().any(|(_, q)| q.pd == pd) || self.mkeys.iter().any(|(_, m)| m.pd == pd) {
            return fail(Status::RES_BUSY, syn::PD_BUSY);
        }
        if self.rmps.iter().any(|(_, r)| r.pd == pd) {
            return fail(Status::RES_BUSY, syn::PD_BUSY_RMP);
        }
        if self.xrc.uses_pd(pd) {
            return fail(Status::RES_BUSY, syn::PD_BUSY_XRC_SRQ);
        }
        self.pds.free(pd);
        Ok(())
    }

    /// Checks that `pd` exists and `uid` may use it.
    pub(super) fn pd_usable(&self, uid: u16, pd: u32) -> Result<(), CmdError> {
        self.pds.lookup_owned(pd, uid, syn::PD_UNKNOWN).map(|_| ())
    }

    /// ALLOC_UAR: a doorbell page.
    pub(super) fn alloc_uar(&mut self, c: &mut Cmd<'_, AllocUar>) -> Done {
        let uar = self.uars.insert(Owned { uid: c.uid })?;
        c.set(alloc_uar_out::uar, uar)
    }

    /// DEALLOC_UAR: refused while a CQ or a QP rings doorbells through it.
    pub(super) fn dealloc_uar(&mut self, c: &mut Cmd<'_, DeallocUar>) -> Done {
        let uar = c.get(dealloc_uar_in::uar);
        self.uars.lookup_owned(uar, c.uid, syn::UAR_UNKNOWN)?;
        if self.cqs.iter().any(|(_, q)| q.uar == uar) || self.qps.iter().any(|(_, q)| q.uar == uar)
        {
            return fail(Status::RES_BUSY, syn::UAR_BUSY);
        }
        self.uars.free(uar);
        Ok(())
    }

    /// Checks that a UAR named by a CQ or QP context exists. UARs of the kernel (uid 0) may be
    /// used by user objects: mlx5_ib allocates the UARs of user contexts without a uid.
    pub(super) fn uar_usable(&self, uid: u16, uar: u32) -> Result<(), CmdError> {
        let o = self.uars.lookup(uar, syn::UAR_UNKNOWN)?;
        if o.uid == 0 {
            return Ok(());
        }
        Self::owned(uid, o.uid)
    }

    /// ALLOC_TRANSPORT_DOMAIN.
    pub(super) fn alloc_td(&mut self, c: &mut Cmd<'_, AllocTransportDomain>) -> Done {
        let td = self.tds.insert(Owned { uid: c.uid })?;
        c.set(alloc_transport_domain_out::transport_domain, td)
    }

    /// DEALLOC_TRANSPORT_DOMAIN (TIRs and TISes, its users, are not modeled).
    pub(super) fn dealloc_td(&mut self, c: &mut Cmd<'_, DeallocTransportDomain>) -> Done {
        let td = c.get(dealloc_transport_domain_in::transport_domain);
        self.tds.free_owned(td, c.uid, syn::TD_UNKNOWN)
    }

    /// ALLOC_Q_COUNTER: a counter set, all zero (upstream `mlx5_ib_alloc_counters()` takes one
    /// per port; a QP counts into the set its QPC's `counter_set_id` names).
    pub(super) fn alloc_q_counter(&mut self, c: &mut Cmd<'_, AllocQCounter>) -> Done {
        let id = self.qcounters.insert(QCounter {
            uid: c.uid,
            v: [0; QCNT_N],
        })?;
        c.set(alloc_q_counter_out::counter_set_id, id)
    }

    pub(super) fn q_counter_usable(&self, uid: u16, id: u32) -> Result<(), CmdError> {
        let o = self
            .qcounters
            .get(id)
            .ok_or(CmdError::new(Status::BAD_PARAM_ERR, syn::Q_COUNTER_UNKNOWN))?;
        // A set allocated with the shared-resource uid belongs to every context.
        if o.uid == crate::prm::consts::SHARED_RESOURCE_UID {
            return Ok(());
        }
        Self::owned(uid, o.uid)
    }

    /// DEALLOC_Q_COUNTER. QPs still naming the set count nowhere afterwards.
    pub(super) fn dealloc_q_counter(&mut self, c: &mut Cmd<'_, DeallocQCounter>) -> Done {
        let id = c.get(dealloc_q_counter_in::counter_set_id);
        self.q_counter_usable(c.uid, id)?;
        self.qcounters.free(id);
        Ok(())
    }

    /// QUERY_Q_COUNTER of this function's set (`other_vport` is `BAD_PARAM_ERR`: no eswitch),
    /// zeroed afterwards with `clear`.
    pub(super) fn query_q_counter(&mut self, c: &mut Cmd<'_, QueryQCounter>) -> Done {
        if c.get(query_q_counter_in::other_vport) != 0 {
            return fail(Status::BAD_PARAM_ERR, syn::Q_COUNTER_UNKNOWN);
        }
        let id = c.get(query_q_counter_in::counter_set_id);
        self.q_counter_usable(c.uid, id)?;
        let clear = c.get(query_q_counter_in::clear) != 0;
        let v = self.qcounters.get(id).map(|q| q.v).unwrap_or([0; QCNT_N]);
        let g = |k: QCnt| v.get(k as usize).copied().unwrap_or(0);
        c.set(query_q_counter_out::rx_write_requests, g(QCnt::RxWrite))?;
        c.set(query_q_counter_out::rx_read_requests, g(QCnt::RxRead))?;
        c.set(query_q_counter_out::rx_atomic_requests, g(QCnt::RxAtomic))?;
        c.set(query_q_counter_out::out_of_buffer, g(QCnt::OutOfBuffer))?;
        c.set(query_q_counter_out::out_of_sequence, g(QCnt::OutOfSequence))?;
        c.set(
            query_q_counter_out::duplicate_request,
            g(QCnt::DuplicateRequest),
        )?;
        c.set(query_q_counter_out::rnr_nak_retry_err, g(QCnt::RnrNak))?;
        c.set(query_q_counter_out::packet_seq_err, g(QCnt::PacketSeqErr))?;
        c.set(
            query_q_counter_out::implied_nak_seq_err,
            g(QCnt::ImpliedNak),
        )?;
        c.set(
            query_q_counter_out::local_ack_timeout_err,
            g(QCnt::LocalAckTimeout),
        )?;
        c.set(
            query_q_counter_out::req_remote_access_errors,
            g(QCnt::ReqRemoteAccess),
        )?;
        c.set(
            query_q_counter_out::resp_remote_access_errors,
            g(QCnt::RespRemoteAccess),
        )?;
        if clear {
            if let Some(q) = self.qcounters.get_mut(id) {
                q.v = [0; QCNT_N];
            }
        }
        Ok(())
    }

    /// Counts one event `k` in counter set `id` (0 or a freed set: nowhere).
    pub(super) fn q_count(&mut self, id: u32, k: QCnt) {
        if id == 0 {
            return;
        }
        if let Some(q) = self.qcounters.get_mut(id) {
            if let Some(x) = q.v.get_mut(k as usize) {
                *x = x.wrapping_add(1);
            }
        }
    }

    /// CREATE_UCTX: a DEVX user context; its number is the uid later commands carry.
    pub(super) fn create_uctx(&mut self, c: &mut Cmd<'_, CreateUctx>) -> Done {
        if c.uid != 0 {
            return fail(Status::BAD_PARAM_ERR, syn::UCTX_NESTED);
        }
        let cap = c.get(create_uctx_in::uctx.inner(crate::prm::ctx::uctx::cap));
        if cap & !self.cfg.profile.uctx_cap != 0 {
            return fail(Status::BAD_PARAM_ERR, syn::UCTX_CAP);
        }
        // uids are 16-bit; the table is far smaller, so every number fits.
        let uid = self.uctxs.insert(Uctx { cap })?;
        c.set(create_uctx_out::uid, uid)
    }

    /// DESTROY_UCTX: refused while any object still belongs to the uid.
    pub(super) fn destroy_uctx(&mut self, c: &mut Cmd<'_, DestroyUctx>) -> Done {
        let uid = c.get(destroy_uctx_in::uid);
        if self.uctxs.get(uid).is_none() || c.uid != 0 {
            return fail(Status::BAD_RES_ERR, syn::UCTX_UNKNOWN);
        }
        let owns = |o: u16| u32::from(o) == uid;
        let busy = self.pds.iter().any(|(_, o)| owns(o.uid))
            || self.uars.iter().any(|(_, o)| owns(o.uid))
            || self.tds.iter().any(|(_, o)| owns(o.uid))
            || self.cqs.iter().any(|(_, o)| owns(o.uid))
            || self.qps.iter().any(|(_, o)| owns(o.uid))
            || self.mkeys.iter().any(|(_, o)| owns(o.uid))
            || self.rmps.iter().any(|(_, o)| owns(o.uid))
            || self.qcounters.iter().any(|(_, o)| owns(o.uid))
            || self.uid_owns_umem(uid);
        if busy {
            return fail(Status::RES_BUSY, syn::UCTX_BUSY);
        }
        self.uctxs.free(uid);
        Ok(())
    }

    /// Checks that `cqn` exists and `uid` may use it.
    pub(super) fn cq_usable(&self, uid: u16, cqn: u32, syndrome: u32) -> Result<(), CmdError> {
        self.cqs.lookup_owned(cqn, uid, syndrome).map(|_| ())
    }

    /// CREATE_CQ: validates the context a driver fills (`mlx5_ib_create_cq()`) and stores it.
    pub(super) fn create_cq(&mut self, c: &mut Cmd<'_, CreateCq>) -> Done {
        let ctx = create_cq_in::cq_context;
        if c.get(ctx.inner(cqc::status)) != 0 {
            return fail(Status::BAD_PARAM_ERR, syn::CQ_STATUS);
        }
        if c.get(ctx.inner(cqc::log_cq_size)) > self.cfg.profile.log_max_cq_sz {
            return fail(Status::LIM_ERR, syn::CQ_TOO_BIG);
        }
        // cqe_sz: 0 = 64 bytes, 1 = 128 bytes.
        if c.get(ctx.inner(cqc::cqe_sz)) > 1 {
            return fail(Status::BAD_PARAM_ERR, syn::CQ_CQE_SZ);
        }
        if c.get(ctx.inner(cqc::c_eqn_or_apu_element)) >> self.cfg.profile.log_max_eq != 0 {
            return fail(Status::BAD_PARAM_ERR, syn::CQ_EQN);
        }
        let uar = c.get(ctx.inner(cqc::uar_page));
        self.uar_usable(c.uid, uar)?;
        let cqc: [u8; CQC_BYTES] = c.inbox.array(ctx);
        // pas[] follows the fixed layout.
        let mut q =
            CqState::parse(&cqc, c.inbox_raw(), create_cq_in::SIZE_BYTES).map_err(fragmented)?;
        // DEVX: the buffer and the doorbell record in umems (`umem.rs`).
        let wq = (c.get(create_cq_in::cq_umem_valid) != 0).then(|| {
            let off = c.inbox.get64(umem_refs::CQ_UMEM_OFFSET);
            (c.get(umem_refs::CQ_UMEM_ID), off)
        });
        let dbr = (c.get(ctx.inner(cqc::dbr_umem_valid)) != 0)
            .then(|| c.get(ctx.inner(umem_refs::CQC_DBR_UMEM_ID)));
        let bytes = q.buf_bytes();
        let umems = self.umem_place(c.uid, &mut q.buf, bytes, wq, dbr)?;
        let cq = Cq {
            uid: c.uid,
            uar,
            cqc,
            q,
            umems,
        };
        let cqn = self.cqs.insert(cq)?;
        c.set(create_cq_out::cqn, cqn)
    }

    /// DESTROY_CQ: refused while a QP sends or receives through it.
    pub(super) fn destroy_cq(&mut self, c: &mut Cmd<'_, DestroyCq>) -> Done {
        let cqn = c.get(destroy_cq_in::cqn);
        self.cq_usable(c.uid, cqn, syn::CQ_UNKNOWN)?;
        if self
            .qps
            .iter()
            .any(|(_, q)| q.send_cq == Some(cqn) || q.recv_cq == Some(cqn))
        {
            return fail(Status::RES_BUSY, syn::CQ_BUSY);
        }
        if self.xrc.uses_cq(cqn) {
            return fail(Status::RES_BUSY, syn::CQ_BUSY);
        }
        if let Some(slot) = self.cqs.slot_of(cqn) {
            self.events.forget_cq(slot);
        }
        if self.resize.is_some_and(|(n, _)| n == cqn) {
            self.resize = None;
        }
        self.cqs.free(cqn);
        Ok(())
    }

    /// QUERY_CQ: the stored context with the data path's live state: `status`
    /// `MLX5_CQC_STATUS_CQ_OVERFLOW` (0x9) after an overrun or a failed CQE write, and the
    /// `producer_counter`.
    pub(super) fn query_cq(&mut self, c: &mut Cmd<'_, QueryCq>) -> Done {
        let cqn = c.get(query_cq_in::cqn);
        let cq = self.cqs.lookup_owned(cqn, c.uid, syn::CQ_UNKNOWN)?;
        let (bytes, failed, pi) = (cq.cqc, cq.q.failed, cq.q.pi);
        c.set_bytes(query_cq_out::cq_context, &bytes)?;
        let ctx = query_cq_out::cq_context;
        if failed {
            c.set(ctx.inner(cqc::status), 0x9)?;
        }
        c.set(ctx.inner(cqc::producer_counter), pi & 0x00ff_ffff)
    }

    /// MODIFY_CQ: moderation (op_mod 0: period/count) or resize (op_mod 1: log size).
    pub(super) fn modify_cq(&mut self, c: &mut Cmd<'_, ModifyCq>) -> Done {
        let cqn = c.get(modify_cq_in::cqn);
        self.cq_usable(c.uid, cqn, syn::CQ_UNKNOWN)?;
        let select = c.get(modify_cq_in::modify_field_select_resize_field_select);
        let ctx = modify_cq_in::cq_context;
        let max_sz = self.cfg.profile.log_max_cq_sz;
        // Collect the new values first so a refused command changes nothing.
        let mut updates: [Option<(crate::prm::layout::Member<cqc::Bits>, u32)>; 2] = [None, None];
        let mut resize = None;
        match c.op_mod {
            0 => {
                let known = consts::CQ_MODIFY_PERIOD | consts::CQ_MODIFY_COUNT;
                if select == 0 || select & !known != 0 {
                    return fail(Status::BAD_PARAM_ERR, syn::CQ_MODIFY_SELECT);
                }
                if select & consts::CQ_MODIFY_PERIOD != 0 {
                    updates[0] = Some((cqc::cq_period, c.get(ctx.inner(cqc::cq_period))));
                }
                if select & consts::CQ_MODIFY_COUNT != 0 {
                    updates[1] = Some((cqc::cq_max_count, c.get(ctx.inner(cqc::cq_max_count))));
                }
            }
            consts::CQ_OPMOD_RESIZE => {
                // A new buffer in a umem is not modeled.
                if c.get(modify_cq_in::cq_umem_valid) != 0 {
                    return fail(Status::BAD_PARAM_ERR, syn::UMEM_NOT_MODELED);
                }
                if select & consts::MODIFY_CQ_MASK_LOG_SIZE == 0 {
                    return fail(Status::BAD_PARAM_ERR, syn::CQ_MODIFY_SELECT);
                }
                let log = c.get(ctx.inner(cqc::log_cq_size));
                if log > max_sz {
                    return fail(Status::LIM_ERR, syn::CQ_TOO_BIG);
                }
                if c.get(ctx.inner(cqc::cqe_sz)) > 1 {
                    return fail(Status::BAD_PARAM_ERR, syn::CQ_CQE_SZ);
                }
                if self.resize.is_some() {
                    return fail(Status::BAD_RES_STATE_ERR, syn::CQ_RESIZE_PENDING);
                }
                // The new buffer (its pas[] after the fixed layout) takes over once the RESIZE
                // CQE is in the old one (`Fw::complete_commands`).
                let new: [u8; CQC_BYTES] = c.inbox.array(ctx);
                let q = CqState::parse(&new, c.inbox_raw(), modify_cq_in::SIZE_BYTES)
                    .map_err(fragmented)?;
                // The new size must hold the CQEs the CQ still holds (upstream
                // mlx5_ib_resize_cq() then fails with the command's EINVAL). The device reads
                // the consumer index from the doorbell record when it has the memory.
                let held = c
                    .mem
                    .and_then(|m| self.cqs.get(cqn).and_then(|cq| cq.q.held(m)));
                if held.is_some_and(|h| h >= q.ring.entries()) {
                    return fail(Status::BAD_PARAM_ERR, syn::CQ_RESIZE_TOO_SMALL);
                }
                resize = Some(q);
                updates[0] = Some((cqc::log_cq_size, log));
            }
            _ => return fail(Status::BAD_PARAM_ERR, syn::BAD_OP_MOD),
        }
        let cq = self.cqs.lookup_mut(cqn, syn::CQ_UNKNOWN)?;
        for (f, v) in updates.iter().flatten() {
            f.set(&mut cq.cqc, *v)
                .map_err(|_| CmdError::new(Status::INT_ERR, syn::RESERVED_NOT_ZERO))?;
        }
        if let Some(q) = resize {
            self.resize = Some((cqn, q));
        }
        Ok(())
    }

    /// CREATE_MKEY: checks the PD, the access mode and that the inbox carries the translation
    /// entries it announces; returns the index (the driver ORs in its `mkey_7_0` byte).
    pub(super) fn create_mkey(&mut self, c: &mut Cmd<'_, CreateMkey>) -> Done {
        let ctx = create_mkey_in::memory_key_mkey_entry;
        // A DEVX mkey over a umem (`mkey_umem_valid`) is not modeled.
        if c.get(create_mkey_in::mkey_umem_valid) != 0 {
            return fail(Status::BAD_PARAM_ERR, syn::UMEM_NOT_MODELED);
        }
        let pd = c.get(ctx.inner(mkc::pd));
        self.pd_usable(c.uid, pd)?;
        if c.get(ctx.inner(mkc::qpn)) != 0x00ff_ffff {
            return fail(Status::BAD_PARAM_ERR, syn::MKEY_QPN);
        }
        let mode =
            (c.get(ctx.inner(mkc::access_mode_4_2)) << 2) | c.get(ctx.inner(mkc::access_mode_1_0));
        if !matches!(
            mode,
            consts::MKC_ACCESS_MODE_PA
                | consts::MKC_ACCESS_MODE_MTT
                | consts::MKC_ACCESS_MODE_KLMS
                | consts::MKC_ACCESS_MODE_KSM
                | consts::MKC_ACCESS_MODE_MEMIC
        ) {
            return fail(Status::BAD_PARAM_ERR, syn::MKEY_ACCESS_MODE);
        }
        // MEMIC (upstream mlx5_ib_get_dm_mr()): `start_addr` is a BAR offset inside the
        // window and `len` fits in it; only on a function with device memory.
        if mode == consts::MKC_ACCESS_MODE_MEMIC {
            let start = c.inbox.get64(ctx.inner(mkc::start_addr));
            let len = c.inbox.get64(ctx.inner(mkc::len));
            let len64 = c.get(ctx.inner(mkc::length64)) != 0;
            if !self.has_memic() || len64 || super::memic::Memic::bus(start, len).is_none() {
                return fail(Status::BAD_PARAM_ERR, syn::MEMIC_MKEY);
            }
        }
        // The translation entries (16-byte octwords) follow the fixed layout.
        let octwords = c.get(create_mkey_in::translations_octword_actual_size);
        c.tail_fits(u64::from(octwords), 16)?;
        let mkc: [u8; MKC_BYTES] = c.inbox.array(ctx);
        // The MTT entries follow the fixed layout.
        let info =
            MkeyInfo::parse(&mkc, c.inbox_raw(), create_mkey_in::SIZE_BYTES).map_err(fragmented)?;
        // upstream mlx5_ib_alloc_mw() and libmlx5's mlx5dv_create_mkey(): a free KLM mkey
        // that UMR WQEs may bind as a window or give a layout as an indirect key.
        let win = (mode == consts::MKC_ACCESS_MODE_KLMS
            && c.get(ctx.inner(mkc::free)) != 0
            && c.get(ctx.inner(mkc::umr_en)) != 0)
            .then(|| xlat::Window {
                remote_inval: c.get(ctx.inner(mkc::en_rinval)) != 0,
                bound: None,
                indirect: None,
            });
        let m = Mkey {
            uid: c.uid,
            pd,
            mkc,
            info,
            win,
        };
        let index = self.mkeys.insert(m)?;
        c.set(create_mkey_out::mkey_index, index)
    }

    /// DESTROY_MKEY.
    pub(super) fn destroy_mkey(&mut self, c: &mut Cmd<'_, DestroyMkey>) -> Done {
        let index = c.get(destroy_mkey_in::mkey_index);
        self.mkeys.free_owned(index, c.uid, syn::MKEY_UNKNOWN)
    }

    /// QUERY_MKEY: the stored `mkc`.
    pub(super) fn query_mkey(&mut self, c: &mut Cmd<'_, QueryMkey>) -> Done {
        let index = c.get(query_mkey_in::mkey_index);
        let m = self.mkeys.lookup_owned(index, c.uid, syn::MKEY_UNKNOWN)?;
        let bytes = m.mkc;
        c.set_bytes(query_mkey_out::memory_key_mkey_entry, &bytes)
    }
}
