// SPDX-License-Identifier: GPL-2.0

//! RMP commands (CREATE_RMP, MODIFY_RMP, QUERY_RMP, DESTROY_RMP: the basic SRQ object that
//! mlx5_ib creates on an ISSI 1 device, upstream `create_rmp_cmd()` in `srq_cmd.c`) and the
//! state the data path keeps of an SRQ.
//!
//! The receive WQEs form a linked list (`wq_type` linked list), as libmlx5 lays them out: each
//! WQE starts with a 16-byte `mlx5_wqe_srq_next_seg` whose big-endian `next_wqe_index` (bytes
//! 2..4) names the WQE after it, followed by data segments. The doorbell record's first word
//! is the count of posted WQEs (libmlx5 `srq->counter`). The device consumes the WQE at its
//! head, reports that index as the CQE's `wqe_counter` (libmlx5 frees exactly that WQE), and
//! moves its head to the WQE's `next_wqe_index`. With a limit armed (`lwm`, MODIFY_RMP), the
//! consumption that leaves fewer posted WQEs than the limit raises
//! `MLX5_EVENT_TYPE_SRQ_RQ_LIMIT` once and disarms the SRQ.
//!
//! A cyclic RMP (`wq_type` cyclic, as UCX's `rc_mlx5` creates through DEVX,
//! `uct_rc_mlx5_devx_init_rx()`) keeps the same WQE layout (the 16-byte segment first, which the
//! device does not read) but consumes its WQEs in ring order: the WQE at `consumed mod size`,
//! reported in the CQE's `wqe_counter` as the 16-bit consumed count (UCX masks it with the
//! ring size). A DEVX RMP names umems for its buffer (`wq_umem_id`, `wq_umem_offset`) and its
//! doorbell record (`dbr_umem_id`, `dbr_addr` an offset in it); the kernel sets the `*_valid`
//! bits (`devx_set_umem_valid()`).

use super::ring::{Buf, Ring};
use super::syndrome::{self as syn, CmdError};
use super::{fail, Cmd, Done, Fw, Rmp, RMPC_BYTES};
use crate::prm::cmd::*;
use crate::prm::command::*;
use crate::prm::consts::{RMPC_STATE_RDY, WQ_TYPE_CYCLIC, WQ_TYPE_LINKED_LIST};
use crate::prm::ctx::{rmp_bitmask, rmpc, wq};
use crate::prm::layout::Member;
use crate::prm::status::Status;

/// Bytes of the `mlx5_wqe_srq_next_seg` each SRQ WQE starts with.
pub(crate) const NEXT_SEG: usize = 16;

/// What the data path keeps of an SRQ.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SrqState {
    /// The buffer; its doorbell record is the posted-WQE counter (big-endian, low 16 bits
    /// used).
    pub(crate) buf: Buf,
    /// The WQEs.
    pub(crate) ring: Ring,
    /// Index of the next WQE to consume.
    pub(crate) head: u16,
    /// WQEs consumed so far (compared with the doorbell record's counter).
    pub(crate) ci: u16,
    /// The armed limit (`lwm`), 0 when not armed.
    pub(crate) lwm: u16,
    /// Consumed in ring order (`wq_type` cyclic), not by `next_wqe_index`.
    pub(crate) cyclic: bool,
}

/// One SRQ WQE taken from the head: its index, the index after it and the scatter entries'
/// bytes length (they are at `NEXT_SEG..NEXT_SEG + len` of the caller's buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SrqWqe {
    /// The WQE index (the CQE's `wqe_counter`).
    pub(crate) idx: u16,
    /// Its `next_wqe_index`.
    pub(crate) next: u16,
}

impl SrqState {
    /// A linked-list SRQ of the WQEs of `ring` in `buf`, nothing consumed, no limit armed (an
    /// XRC SRQ: `xrc.rs`).
    pub(crate) fn new(buf: Buf, ring: Ring) -> SrqState {
        SrqState {
            buf,
            ring,
            head: 0,
            ci: 0,
            lwm: 0,
            cyclic: false,
        }
    }

    /// The WQE the device takes next: its index in the ring and the CQE's `wqe_counter`.
    pub(crate) fn next_idx(&self) -> u16 {
        if self.cyclic {
            self.ci
        } else {
            self.head
        }
    }

    /// Decodes a `wq` plus the `pas[]` at byte `pas` of the inbox.
    fn parse(w: &[u8], inbox: &[u8], pas: usize) -> Result<SrqState, CmdError> {
        let g = |f: Member<wq::Bits>| f.get(w).unwrap_or(0);
        let log_sz = u8::try_from(g(wq::log_wq_sz)).unwrap_or(0);
        let shift = u8::try_from(g(wq::log_wq_stride)).unwrap_or(4);
        let ring = Ring::new(log_sz, shift, 0);
        let place = [wq::log_wq_pg_sz, wq::page_offset, wq::dbr_addr];
        let buf = Buf::from_ctx(w, place, inbox, pas, ring.bytes())
            .map_err(super::objects::fragmented)?;
        Ok(SrqState {
            lwm: u16::try_from(g(wq::lwm)).unwrap_or(0),
            cyclic: g(wq::wq_type) == WQ_TYPE_CYCLIC,
            ..SrqState::new(buf, ring)
        })
    }

    /// Consumes the head WQE `w` with `posted` WQEs counted in the doorbell record; true when
    /// this crossed the armed limit (the SRQ is then disarmed).
    pub(crate) fn consume(&mut self, w: SrqWqe, posted: u16) -> bool {
        if !self.cyclic {
            self.head = w.next & ((1u16 << self.ring.log.min(15)).wrapping_sub(1));
        }
        self.ci = self.ci.wrapping_add(1);
        if self.lwm != 0 && posted.wrapping_sub(self.ci) < self.lwm {
            self.lwm = 0;
            return true;
        }
        false
    }
}

impl Fw {
    /// Checks that `rmpn` names an RMP `uid` may use.
    pub(super) fn rmp_usable(&self, uid: u16, rmpn: u32, syndrome: u32) -> Result<(), CmdError> {
        self.rmps.lookup_owned(rmpn, uid, syndrome).map(|_| ())
    }

    /// CREATE_RMP: validates the context `create_rmp_cmd()` fills and stores the RMP.
    pub(super) fn create_rmp(&mut self, c: &mut Cmd<'_, CreateRmp>) -> Done {
        let ctx = create_rmp_in::ctx;
        let w = |f| ctx.inner(rmpc::wq.inner(f));
        if c.get(ctx.inner(rmpc::state)) != RMPC_STATE_RDY {
            return fail(Status::BAD_PARAM_ERR, syn::RMP_STATE);
        }
        let wq_type = c.get(w(wq::wq_type));
        // Cyclic WQEs without the 16-byte segment need `basic_cyclic_rcv_wqe`, not advertised.
        if (wq_type != WQ_TYPE_LINKED_LIST && wq_type != WQ_TYPE_CYCLIC)
            || c.get(ctx.inner(rmpc::basic_cyclic_rcv_wqe)) != 0
        {
            return fail(Status::BAD_PARAM_ERR, syn::RMP_WQ_TYPE);
        }
        let log_sz = c.get(w(wq::log_wq_sz));
        if log_sz > self.cfg.profile.log_max_srq_sz {
            return fail(Status::LIM_ERR, syn::RMP_TOO_BIG);
        }
        // 16 bytes (the next segment alone) up to max_wqe_sz_rq (512).
        if !(4..=9).contains(&c.get(w(wq::log_wq_stride))) {
            return fail(Status::BAD_PARAM_ERR, syn::RMP_STRIDE);
        }
        if c.get(w(wq::lwm)) >= 1 << log_sz {
            return fail(Status::BAD_PARAM_ERR, syn::RMP_LWM);
        }
        let pd = c.get(w(wq::pd));
        self.pd_usable(c.uid, pd)?;
        let bytes: [u8; RMPC_BYTES] = c.inbox.array(ctx);
        let wbytes = rmpc::wq
            .bytes(&bytes)
            .map_err(|_| CmdError::new(Status::INT_ERR, 0))?;
        // pas[] follows the fixed layout.
        let mut q = SrqState::parse(wbytes, c.inbox_raw(), create_rmp_in::SIZE_BYTES)?;
        // DEVX: the buffer and the doorbell record in umems (`umem.rs`).
        let umem = c.get(w(wq::wq_umem_valid)) != 0;
        let wq_umem = umem.then(|| {
            let off = c.inbox.get64(w(wq::wq_umem_offset));
            (c.get(w(wq::wq_umem_id)), off)
        });
        let dbr = (c.get(w(wq::dbr_umem_valid)) != 0).then(|| c.get(w(wq::dbr_umem_id)));
        let umems = self.umem_place(c.uid, &mut q.buf, q.ring.bytes(), wq_umem, dbr)?;
        let rmp = Rmp {
            uid: c.uid,
            pd,
            rmpc: bytes,
            q,
            umems,
        };
        let rmpn = self.rmps.insert(rmp)?;
        c.set(create_rmp_out::rmpn, rmpn)
    }

    /// MODIFY_RMP: only the limit (`bitmask.lwm`, upstream `arm_rmp_cmd()`), in RDY.
    pub(super) fn modify_rmp(&mut self, c: &mut Cmd<'_, ModifyRmp>) -> Done {
        let rmpn = c.get(modify_rmp_in::rmpn);
        self.rmp_usable(c.uid, rmpn, syn::RMP_UNKNOWN)?;
        if c.get(modify_rmp_in::rmp_state) != RMPC_STATE_RDY
            || c.get(modify_rmp_in::ctx.inner(rmpc::state)) != RMPC_STATE_RDY
        {
            return fail(Status::BAD_PARAM_ERR, syn::RMP_STATE);
        }
        let mask = c.in_bytes(modify_rmp_in::bitmask);
        let lwm_bit = rmp_bitmask::lwm.get(mask).unwrap_or(0);
        if lwm_bit == 0 || mask.iter().map(|b| b.count_ones()).sum::<u32>() != 1 {
            return fail(Status::BAD_PARAM_ERR, syn::RMP_BITMASK);
        }
        let lwm = c.get(modify_rmp_in::ctx.inner(rmpc::wq.inner(wq::lwm)));
        let r = self.rmps.lookup_mut(rmpn, syn::RMP_UNKNOWN)?;
        if lwm >= 1 << r.q.ring.log {
            return fail(Status::BAD_PARAM_ERR, syn::RMP_LWM);
        }
        r.q.lwm = u16::try_from(lwm).unwrap_or(0);
        Ok(())
    }

    /// QUERY_RMP: the stored context with the live limit (0 once it fired) and the device's
    /// consumer counter (`wq.hw_counter`).
    pub(super) fn query_rmp(&mut self, c: &mut Cmd<'_, QueryRmp>) -> Done {
        let rmpn = c.get(query_rmp_in::rmpn);
        let r = self.rmps.lookup_owned(rmpn, c.uid, syn::RMP_UNKNOWN)?;
        let (bytes, lwm, ci) = (r.rmpc, r.q.lwm, r.q.ci);
        let ctx = query_rmp_out::rmp_context;
        c.set_bytes(ctx, &bytes)?;
        c.set(ctx.inner(rmpc::wq.inner(wq::lwm)), u32::from(lwm))?;
        c.set(ctx.inner(rmpc::wq.inner(wq::hw_counter)), u32::from(ci))?;
        c.set(ctx.inner(rmpc::state), RMPC_STATE_RDY)
    }

    /// DESTROY_RMP: refused while a QP receives from it.
    pub(super) fn destroy_rmp(&mut self, c: &mut Cmd<'_, DestroyRmp>) -> Done {
        let rmpn = c.get(destroy_rmp_in::rmpn);
        self.rmp_usable(c.uid, rmpn, syn::RMP_UNKNOWN)?;
        if self.qps.iter().any(|(_, q)| q.q.srq == Some(rmpn)) {
            return fail(Status::RES_BUSY, syn::RMP_BUSY);
        }
        if let Some(slot) = self.rmps.slot_of(rmpn) {
            self.events.forget_srq(slot);
        }
        self.rmps.free(rmpn);
        Ok(())
    }
}
