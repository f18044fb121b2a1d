// SPDX-License-Identifier: GPL-2.0

//! Host tests of the data path: objects created through the real commands, WQEs laid out as
//! libmlx5 44 lays them out (`providers/mlx5/qp.c`: control, remote address, atomic,
//! datagram, data and inline segments, wrapping at the end of the SQ), CQEs polled as
//! libmlx5's `mlx5_poll_one()` polls them, over a fake bus space whose unmapped gaps and
//! write-protected ranges turn every stray access into a fault the test sees.

use std::boxed::Box;
use std::cell::RefCell;
use std::vec;
use std::vec::Vec;

use super::dma::{DmaFault, DmaMem};
use super::engine::{self, Left, Node, RunResult, Wire};
use super::events::{Event, QpEvent, SrqEvent};
use super::profile::{LinkLayer, CONNECTX6_DX, CONNECTX7};
use super::syndrome as syn;
use super::tests::{alloc_pd, alloc_uar, destroy_in, inbox, ok, query_qp};
use super::*;
use crate::prm::cmd::*;
use crate::prm::consts::*;
use crate::prm::ctx::*;
use crate::prm::layout::Member;
use crate::prm::status::Status;
use crate::prm::wqe::{cqe_op, ctrl, syndrome as csyn, wqe_op, INLINE_SEG, INVALID_LKEY};

// ---------------------------------------------------------------------------------------
// Fake memory.

/// One mapped range.
struct Range {
    base: u64,
    data: Vec<u8>,
    writable: bool,
}

/// A bus space of mapped ranges with unmapped guard pages between them. Accesses outside a
/// range (or writes to a read-only one) fault and are counted; a faulting write writes
/// nothing, as the [`DmaMem`] contract says.
pub(super) struct Mem {
    ranges: RefCell<Vec<Range>>,
    next: RefCell<u64>,
    /// Faulted accesses.
    pub(super) faults: RefCell<u32>,
}

impl Mem {
    pub(super) fn new(base: u64) -> Self {
        Mem {
            ranges: RefCell::new(Vec::new()),
            next: RefCell::new(base),
            faults: RefCell::new(0),
        }
    }

    /// Maps `len` zeroed bytes (page aligned, a guard page after) and returns the address.
    pub(super) fn map(&self, len: usize, writable: bool) -> u64 {
        let mut next = self.next.borrow_mut();
        let base = *next;
        let pages = len.div_ceil(4096).max(1) as u64;
        *next = base + (pages + 1) * 4096;
        self.ranges.borrow_mut().push(Range {
            base,
            data: vec![0; len],
            writable,
        });
        base
    }

    fn with<R>(&self, addr: u64, len: usize, f: impl FnOnce(&mut [u8], bool) -> R) -> Option<R> {
        let mut rs = self.ranges.borrow_mut();
        for r in rs.iter_mut() {
            let end = r.base + r.data.len() as u64;
            if addr >= r.base && addr.checked_add(len as u64)? <= end {
                let o = (addr - r.base) as usize;
                let w = r.writable;
                return Some(f(&mut r.data[o..o + len], w));
            }
        }
        None
    }

    fn fault(&self, addr: u64) -> DmaFault {
        *self.faults.borrow_mut() += 1;
        DmaFault { addr }
    }

    /// Maps `len` zeroed bytes at `base` (the device's own memory at
    /// [`crate::fwsim::dma::DEV_MEM_BUS`], as the kernel backend's IOMMU has it).
    pub(super) fn map_at(&self, base: u64, len: usize) {
        self.ranges.borrow_mut().push(Range {
            base,
            data: vec![0; len],
            writable: true,
        });
    }

    /// Test access: read bytes.
    pub(super) fn get(&self, addr: u64, len: usize) -> Vec<u8> {
        self.with(addr, len, |d, _| d.to_vec()).expect("test read")
    }

    /// Test access: write bytes (even to read-only ranges).
    pub(super) fn put(&self, addr: u64, data: &[u8]) {
        self.with(addr, data.len(), |d, _| d.copy_from_slice(data))
            .expect("test write")
    }

    pub(super) fn put32(&self, addr: u64, v: u32) {
        self.put(addr, &v.to_be_bytes());
    }

    pub(super) fn faults(&self) -> u32 {
        *self.faults.borrow()
    }
}

impl DmaMem for Mem {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        let len = buf.len();
        self.with(addr, len, |d, _| buf.copy_from_slice(d))
            .ok_or_else(|| self.fault(addr))
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), DmaFault> {
        match self.with(addr, data.len(), |d, w| {
            if w {
                d.copy_from_slice(data);
            }
            w
        }) {
            Some(true) => Ok(()),
            _ => Err(self.fault(addr)),
        }
    }

    fn cmp_swap64(&self, addr: u64, compare: u64, swap: u64) -> Result<u64, DmaFault> {
        if !addr.is_multiple_of(8) {
            return Err(self.fault(addr));
        }
        match self.with(addr, 8, |d, w| {
            let old = u64::from_le_bytes(d.try_into().unwrap());
            if w && old == compare {
                d.copy_from_slice(&swap.to_le_bytes());
            }
            (old, w)
        }) {
            Some((old, true)) => Ok(old),
            _ => Err(self.fault(addr)),
        }
    }

    fn fetch_add64(&self, addr: u64, add: u64) -> Result<u64, DmaFault> {
        if !addr.is_multiple_of(8) {
            return Err(self.fault(addr));
        }
        match self.with(addr, 8, |d, w| {
            let old = u64::from_le_bytes(d.try_into().unwrap());
            if w {
                d.copy_from_slice(&old.wrapping_add(add).to_le_bytes());
            }
            (old, w)
        }) {
            Some((old, true)) => Ok(old),
            _ => Err(self.fault(addr)),
        }
    }
}

// ---------------------------------------------------------------------------------------
// A function with its memory, and objects made through the real commands.

pub(super) struct Host {
    pub(super) fw: Box<Fw>,
    pub(super) mem: Mem,
    pub(super) pd: u32,
    pub(super) uar: u32,
}

/// Offset between an MR's bus address and its iova (MTT mkeys translate for real).
const IOVA: u64 = 0x7f00_0000_0000;

impl Host {
    pub(super) fn new(ll: LinkLayer, serial: u32) -> Host {
        let profile = if ll == LinkLayer::Ib {
            CONNECTX7
        } else {
            CONNECTX6_DX
        };
        let mut fw = Box::new(
            Fw::new(Config {
                profile,
                link_layer: ll,
                num_ports: 1,
                serial,
                memic: true,
            })
            .unwrap(),
        );
        // The fabric's SM gives the port its LID and makes it ACTIVE.
        crate::fwsim::sm::sweep(&mut fw, &mut crate::fwsim::switch::Switch::new(1, 1), 1);
        while fw.next_port_event().is_some() {}
        let pd = alloc_pd(&mut fw, 0);
        let uar = alloc_uar(&mut fw, 0);
        Host {
            fw,
            mem: Mem::new(0x1000_0000 * u64::from(serial)),
            pd,
            uar,
        }
    }

    pub(super) fn lid(&self) -> u16 {
        self.fw.port_lid(0)
    }

    /// SET_ROCE_ADDRESS of entry `index` (version 2 unless `v1`; IPv4 when the GID is
    /// IPv4-mapped).
    pub(super) fn set_gid(&mut self, index: u32, gid: [u8; 16], v1: bool) {
        let mut b = inbox(op::SET_ROCE_ADDRESS, 0, 0, set_roce_address_in::SIZE_BYTES);
        let a = |m| set_roce_address_in::roce_address.inner(m);
        set_roce_address_in::roce_address_index
            .set(&mut b, index)
            .unwrap();
        a(roce_addr_layout::source_l3_address)
            .set_bytes(&mut b, &gid)
            .unwrap();
        a(roce_addr_layout::roce_version)
            .set(&mut b, if v1 { 0 } else { ROCE_VERSION_2 })
            .unwrap();
        let v4 = gid[..12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
        a(roce_addr_layout::roce_l3_type)
            .set(&mut b, u32::from(!v4))
            .unwrap();
        ok(&mut self.fw, &b, 16);
    }

    /// A CQ of `2^log` 64-byte CQEs (128-byte when `big`), initialized as libmlx5 does
    /// (opcode invalid, owner 0).
    pub(super) fn cq(&mut self, log: u32, big: bool) -> CqH {
        self.cq_oi(log, big, false)
    }

    /// A CQ as [`Host::cq`], with `cqc.oi` (overrun ignore) set to `oi`.
    pub(super) fn cq_oi(&mut self, log: u32, big: bool, oi: bool) -> CqH {
        let stride = if big { 128 } else { 64 };
        let len = stride << log;
        let buf = self.mem.map(len, true);
        for i in 0..(1u64 << log) {
            self.mem
                .put(buf + i * stride as u64 + stride as u64 - 1, &[0xf0]);
        }
        let dbr = self.mem.map(8, true);
        let pages = len.div_ceil(4096);
        let mut b = inbox(op::CREATE_CQ, 0, 0, create_cq_in::SIZE_BYTES + 8 * pages);
        let c = |f| create_cq_in::cq_context.inner(f);
        c(cqc::log_cq_size).set(&mut b, log).unwrap();
        c(cqc::cqe_sz).set(&mut b, u32::from(big)).unwrap();
        c(cqc::uar_page).set(&mut b, self.uar).unwrap();
        c(cqc::oi).set(&mut b, u32::from(oi)).unwrap();
        c(cqc::dbr_addr).set64(&mut b, dbr).unwrap();
        for p in 0..pages {
            let at = create_cq_in::SIZE_BYTES + 8 * p;
            b[at..at + 8].copy_from_slice(&(buf + 4096 * p as u64).to_be_bytes());
        }
        let out = ok(&mut self.fw, &b, create_cq_out::SIZE_BYTES);
        CqH {
            cqn: create_cq_out::cqn.get(&out).unwrap(),
            buf,
            dbr,
            log,
            stride: stride as u64,
            ci: 0,
            arm_sn: 0,
        }
    }

    /// A QP of service `st` with `2^log_sq` WQEBBs and `2^log_rq` receive WQEs of
    /// `16 << log_stride` bytes.
    pub(super) fn qp(&mut self, st: u32, scq: &CqH, rcq: &CqH, sizes: (u32, u32, u32)) -> QpH {
        let (log_sq, log_rq, log_stride) = sizes;
        let rq_bytes = (16usize << log_stride) << log_rq;
        let len = rq_bytes + (64usize << log_sq);
        let buf = self.mem.map(len, true);
        let dbr = self.mem.map(8, true);
        let pages = len.div_ceil(4096);
        let mut b = inbox(op::CREATE_QP, 0, 0, create_qp_in::SIZE_BYTES + 8 * pages);
        let q = |f| create_qp_in::qpc.inner(f);
        q(qpc::st).set(&mut b, st).unwrap();
        q(qpc::pd).set(&mut b, self.pd).unwrap();
        q(qpc::uar_page).set(&mut b, self.uar).unwrap();
        q(qpc::cqn_snd).set(&mut b, scq.cqn).unwrap();
        q(qpc::cqn_rcv).set(&mut b, rcq.cqn).unwrap();
        q(qpc::log_sq_size).set(&mut b, log_sq).unwrap();
        q(qpc::log_rq_size).set(&mut b, log_rq).unwrap();
        q(qpc::log_rq_stride).set(&mut b, log_stride).unwrap();
        q(qpc::log_msg_max).set(&mut b, 30).unwrap();
        q(qpc::user_index)
            .set(&mut b, 0x4000 + pages as u32)
            .unwrap();
        q(qpc::dbr_addr).set64(&mut b, dbr).unwrap();
        for p in 0..pages {
            let at = create_qp_in::SIZE_BYTES + 8 * p;
            b[at..at + 8].copy_from_slice(&(buf + 4096 * p as u64).to_be_bytes());
        }
        let out = ok(&mut self.fw, &b, create_qp_out::SIZE_BYTES);
        let qpn = create_qp_out::qpn.get(&out).unwrap();
        QpH {
            qpn,
            st,
            uidx: 0x4000 + pages as u32,
            buf,
            dbr,
            sq_off: rq_bytes as u64,
            log_sq,
            log_rq,
            rq_stride: 16 << log_stride,
            cur_post: 0,
            rq_head: 0,
        }
    }

    /// An MTT mkey over `len` new bytes (`access` bits: the `mkc` lr/lw/rr/rw/a flags as
    /// [`MrAccess`]); returns (key, iova, bus).
    pub(super) fn mr(&mut self, len: usize, access: MrAccess) -> Mr {
        let bus = self.mem.map(len, true);
        self.mr_at(bus, len, access)
    }

    /// An MTT mkey over memory already mapped at `bus`.
    pub(super) fn mr_at(&mut self, bus: u64, len: usize, access: MrAccess) -> Mr {
        let pages = len.div_ceil(4096).max(1);
        let octwords = pages.div_ceil(2);
        let mut b = inbox(
            op::CREATE_MKEY,
            0,
            0,
            create_mkey_in::SIZE_BYTES + 16 * octwords,
        );
        let m = |f| create_mkey_in::memory_key_mkey_entry.inner(f);
        m(mkc::pd).set(&mut b, self.pd).unwrap();
        m(mkc::qpn).set(&mut b, 0xff_ffff).unwrap();
        m(mkc::access_mode_1_0)
            .set(&mut b, MKC_ACCESS_MODE_MTT)
            .unwrap();
        m(mkc::mkey_7_0).set(&mut b, 0x3c).unwrap();
        m(mkc::lr).set(&mut b, 1).unwrap();
        m(mkc::lw).set(&mut b, u32::from(access.lw)).unwrap();
        m(mkc::rr).set(&mut b, u32::from(access.rr)).unwrap();
        m(mkc::rw).set(&mut b, u32::from(access.rw)).unwrap();
        m(mkc::a).set(&mut b, u32::from(access.a)).unwrap();
        m(mkc::start_addr).set64(&mut b, IOVA + bus).unwrap();
        m(mkc::len).set64(&mut b, len as u64).unwrap();
        m(mkc::log_page_size).set(&mut b, 12).unwrap();
        m(mkc::translations_octword_size)
            .set(&mut b, octwords as u32)
            .unwrap();
        create_mkey_in::translations_octword_actual_size
            .set(&mut b, octwords as u32)
            .unwrap();
        for p in 0..pages {
            let at = create_mkey_in::SIZE_BYTES + 8 * p;
            b[at..at + 8].copy_from_slice(&(bus + 4096 * p as u64).to_be_bytes());
        }
        let out = ok(&mut self.fw, &b, create_mkey_out::SIZE_BYTES);
        let index = create_mkey_out::mkey_index.get(&out).unwrap();
        Mr {
            key: (index << 8) | 0x3c,
            va: IOVA + bus,
            bus,
        }
    }

    /// RST2INIT, INIT2RTR (to `dest`), RTR2RTS.
    pub(super) fn connect(&mut self, qp: &QpH, dest: &Path) {
        self.to_rtr(qp, dest);
        self.to_rts(qp, dest);
    }

    /// RST2INIT, INIT2RTR (to `dest`).
    pub(super) fn to_rtr(&mut self, qp: &QpH, dest: &Path) {
        let m = |op: u16| {
            let mut b = inbox(op, 0, 0, rst2init_qp_in::SIZE_BYTES);
            rst2init_qp_in::qpn.set(&mut b, qp.qpn).unwrap();
            b
        };
        let q = |f| rst2init_qp_in::qpc.inner(f);
        let p = |f| q(qpc::primary_address_path).inner(f);
        let mut b = m(op::RST2INIT_QP);
        p(ads::vhca_port_num).set(&mut b, 1).unwrap();
        q(qpc::q_key).set(&mut b, dest.own_qkey).unwrap();
        q(qpc::counter_set_id)
            .set(&mut b, dest.counter_set)
            .unwrap();
        for f in [qpc::rre, qpc::rwe, qpc::rae] {
            q(f).set(&mut b, 1).unwrap();
        }
        ok(&mut self.fw, &b, 16);
        let mut b = m(op::INIT2RTR_QP);
        q(qpc::mtu).set(&mut b, dest.mtu).unwrap();
        q(qpc::log_msg_max).set(&mut b, 30).unwrap();
        q(qpc::remote_qpn).set(&mut b, dest.qpn).unwrap();
        q(qpc::next_rcv_psn).set(&mut b, dest.rq_psn).unwrap();
        q(qpc::min_rnr_nak).set(&mut b, dest.min_rnr_nak).unwrap();
        q(qpc::q_key).set(&mut b, dest.own_qkey).unwrap();
        for f in [qpc::rre, qpc::rwe, qpc::rae] {
            q(f).set(&mut b, u32::from(dest.remote_access)).unwrap();
        }
        p(ads::vhca_port_num).set(&mut b, 1).unwrap();
        p(ads::rlid).set(&mut b, u32::from(dest.lid)).unwrap();
        if let Some(g) = dest.gid {
            p(ads::grh).set(&mut b, 1).unwrap();
            p(ads::rgid_rip).set_bytes(&mut b, &g).unwrap();
            p(ads::hop_limit).set(&mut b, 64).unwrap();
            p(ads::src_addr_index)
                .set(&mut b, u32::from(dest.sgid_index))
                .unwrap();
        }
        ok(&mut self.fw, &b, 16);
    }

    /// RTR2RTS (the members `connect` gives for `dest`).
    pub(super) fn to_rts(&mut self, qp: &QpH, dest: &Path) {
        let mut b = inbox(op::RTR2RTS_QP, 0, 0, rst2init_qp_in::SIZE_BYTES);
        rst2init_qp_in::qpn.set(&mut b, qp.qpn).unwrap();
        let q = |f| rst2init_qp_in::qpc.inner(f);
        let p = |f| q(qpc::primary_address_path).inner(f);
        q(qpc::next_send_psn).set(&mut b, dest.sq_psn).unwrap();
        q(qpc::retry_count).set(&mut b, dest.retry).unwrap();
        q(qpc::rnr_retry).set(&mut b, dest.rnr_retry).unwrap();
        q(qpc::log_sra_max).set(&mut b, dest.sra).unwrap();
        p(ads::ack_timeout).set(&mut b, dest.ack_timeout).unwrap();
        // RTR2RTS takes these members again; mlx5_ib sends its merged attributes.
        q(qpc::min_rnr_nak).set(&mut b, dest.min_rnr_nak).unwrap();
        for f in [qpc::rre, qpc::rwe, qpc::rae] {
            q(f).set(&mut b, u32::from(dest.remote_access)).unwrap();
        }
        ok(&mut self.fw, &b, 16);
    }

    /// A bare transition (2ERR, 2RST), completed as the kernel side completes commands.
    pub(super) fn modify(&mut self, qp: &QpH, opcode: u16) {
        let mut b = inbox(opcode, 0, 0, rst2init_qp_in::SIZE_BYTES);
        rst2init_qp_in::qpn.set(&mut b, qp.qpn).unwrap();
        ok(&mut self.fw, &b, 16);
        self.complete();
    }

    /// What the last commands left for the worker, as the kernel side completes them.
    pub(super) fn complete(&mut self) -> Left {
        self.fw.complete_commands(&self.mem)
    }

    pub(super) fn state(&mut self, qp: &QpH) -> u32 {
        let out = query_qp(&mut self.fw, 0, qp.qpn);
        query_qp_out::qpc.inner(qpc::state).get(&out).unwrap()
    }

    pub(super) fn psns(&mut self, qp: &QpH) -> (u32, u32) {
        let out = query_qp(&mut self.fw, 0, qp.qpn);
        let g = |f| query_qp_out::qpc.inner(f).get(&out).unwrap();
        (g(qpc::next_send_psn), g(qpc::next_rcv_psn))
    }

    /// Posts a send WR as libmlx5's `mlx5_post_send()` lays it out, and rings the record.
    pub(super) fn post(&mut self, qp: &mut QpH, wr: &Wr) {
        let w = encode(qp, wr);
        self.post_bytes(qp, &w);
    }

    /// Posts a WQE given as its bytes (the control segment's index and QPN are the caller's).
    pub(super) fn post_bytes(&mut self, qp: &mut QpH, w: &[u8]) {
        let sq_bytes = 64u64 << qp.log_sq;
        let start = u64::from(qp.cur_post) * 64;
        for (i, b) in w.iter().enumerate() {
            let at = qp.buf + qp.sq_off + (start + i as u64) % sq_bytes;
            self.mem.put(at, &[*b]);
        }
        qp.cur_post = qp.cur_post.wrapping_add(w.len().div_ceil(64) as u16);
        self.mem.put32(qp.dbr + 4, u32::from(qp.cur_post));
        let mut first = [0u8; 8];
        first.copy_from_slice(&w[..8]);
        self.fw.sq_doorbell(self.uar, u64::from_be_bytes(first));
    }

    /// Posts a receive WQE (data segments, `MLX5_INVALID_LKEY` terminated when shorter).
    pub(super) fn post_recv(&mut self, qp: &mut QpH, sges: &[(u32, u64, u32)]) {
        let idx = u64::from(qp.rq_head) & ((1 << qp.log_rq) - 1);
        let at = qp.buf + idx * qp.rq_stride;
        let mut w = vec![0u8; qp.rq_stride as usize];
        let mut n = 0;
        for (lkey, addr, len) in sges {
            if *len == 0 {
                continue;
            }
            data_seg(&mut w[n * 16..], *lkey, *addr, *len);
            n += 1;
        }
        if n * 16 < w.len() {
            data_seg(&mut w[n * 16..], INVALID_LKEY, 0, 0);
        }
        self.mem.put(at, &w);
        qp.rq_head = qp.rq_head.wrapping_add(1);
        self.mem.put32(qp.dbr, u32::from(qp.rq_head));
    }

    /// Polls one CQE as libmlx5 does; updates the consumer index record.
    pub(super) fn poll(&mut self, cq: &mut CqH) -> Option<Polled> {
        let idx = u64::from(cq.ci) & ((1 << cq.log) - 1);
        let at = cq.buf + idx * cq.stride + cq.stride - 64;
        let c = self.mem.get(at, 64);
        let op_own = c[63];
        if op_own >> 4 == cqe_op::INVALID || u32::from(op_own & 1) != (cq.ci >> cq.log) & 1 {
            return None;
        }
        cq.ci = cq.ci.wrapping_add(1);
        self.mem.put32(cq.dbr, cq.ci & 0xff_ffff);
        let be32 = |o: usize| u32::from_be_bytes(c[o..o + 4].try_into().unwrap());
        Some(Polled {
            opcode: op_own >> 4,
            syndrome: c[55],
            byte_cnt: be32(44),
            qpn: be32(56) & 0xff_ffff,
            wqe_opcode: (be32(56) >> 24) as u8,
            wqe_counter: u16::from_be_bytes([c[60], c[61]]),
            imm: be32(36),
            flags_rqpn: be32(24),
            slid: u16::from_be_bytes([c[22], c[23]]),
            uidx: be32(32) & 0xff_ffff,
        })
    }

    pub(super) fn poll_all(&mut self, cq: &mut CqH) -> Vec<Polled> {
        let mut v = Vec::new();
        while let Some(p) = self.poll(cq) {
            v.push(p);
        }
        v
    }

    /// Arms a CQ as `mlx5_arm_cq()`: the record, then (if `uar`) the UAR store.
    pub(super) fn arm(&mut self, cq: &mut CqH, solicited: bool, uar: bool) {
        let v = ((cq.arm_sn & 3) << 28) | (u32::from(solicited) << 24) | (cq.ci & 0xff_ffff);
        self.mem.put32(cq.dbr + 4, v);
        if uar {
            self.fw
                .cq_doorbell(self.uar, (u64::from(v) << 32) | u64::from(cq.cqn));
        }
    }

    /// MODIFY_CQ op_mod 1 to `2^log` 64-byte entries in a new buffer, as mlx5_ib's
    /// `mlx5_ib_resize_cq()` sends it; the command alone, `Err` with its status and syndrome.
    pub(super) fn resize_cmd(&mut self, cq: &CqH, log: u32) -> Result<u64, (Status, u32)> {
        let len = 64usize << log;
        let buf = self.mem.map(len, true);
        for i in 0..(1u64 << log) {
            self.mem.put(buf + i * 64 + 63, &[0xf0]);
        }
        let pages = len.div_ceil(4096);
        let mut b = inbox(
            op::MODIFY_CQ,
            0,
            CQ_OPMOD_RESIZE,
            modify_cq_in::SIZE_BYTES + 8 * pages,
        );
        modify_cq_in::cqn.set(&mut b, cq.cqn).unwrap();
        // MLX5_MODIFY_CQ_MASK_LOG_SIZE | _PG_OFFSET | _PG_SIZE.
        modify_cq_in::modify_field_select_resize_field_select
            .set(&mut b, 0x7)
            .unwrap();
        let c = |f| modify_cq_in::cq_context.inner(f);
        c(cqc::log_cq_size).set(&mut b, log).unwrap();
        for p in 0..pages {
            let at = modify_cq_in::SIZE_BYTES + 8 * p;
            b[at..at + 8].copy_from_slice(&(buf + 4096 * p as u64).to_be_bytes());
        }
        // As the kernel side runs it: the device may read the CQ's doorbell record.
        let mut out = [0u8; 16];
        let c = self.fw.exec_with_mem(&b, &mut out, &self.mem).unwrap();
        if c.status != Status::OK {
            return Err((c.status, c.syndrome));
        }
        Ok(buf)
    }

    /// A whole resize as libibverbs + libmlx5 do it: the command (after which the kernel
    /// side completes it), then `mlx5_cq_resize_copy_cqes()`.
    pub(super) fn resize(&mut self, cq: &mut CqH, log: u32) {
        let buf = self.resize_cmd(cq, log).unwrap();
        self.fw.complete_commands(&self.mem);
        let mut i = cq.ci;
        loop {
            let at = cq.buf + u64::from(i & ((1 << cq.log) - 1)) * cq.stride + cq.stride - 64;
            let e = self.mem.get(at, 64);
            assert_ne!(
                e[63] >> 4,
                cqe_op::INVALID,
                "expected a CQE in software ownership"
            );
            if e[63] >> 4 == cqe_op::RESIZE_CQ {
                break;
            }
            let j = u64::from((i + 1) & ((1 << log) - 1));
            let mut d = e.clone();
            d[63] = (d[63] & !1) | u8::from((i + 1) & (1 << log) != 0);
            self.mem.put(buf + j * 64, &d);
            i += 1;
        }
        cq.ci += 1;
        cq.buf = buf;
        cq.log = log;
        cq.stride = 64;
    }

    pub(super) fn events(&mut self) -> Vec<Event> {
        let mut v = Vec::new();
        while let Some(e) = self.fw.next_event() {
            v.push(e);
        }
        // What the kernel side asks before it delivers (`Fabric::deliver`).
        assert!(!self.fw.has_events());
        v
    }
}

#[derive(Clone, Copy, Default)]
pub(super) struct MrAccess {
    pub(super) lw: bool,
    pub(super) rr: bool,
    pub(super) rw: bool,
    pub(super) a: bool,
}

const ALL: MrAccess = MrAccess {
    lw: true,
    rr: true,
    rw: true,
    a: true,
};

#[derive(Clone, Copy, Debug)]
pub(super) struct Mr {
    pub(super) key: u32,
    pub(super) va: u64,
    pub(super) bus: u64,
}

impl Mr {
    pub(super) fn sge(&self, off: u64, len: u32) -> (u32, u64, u32) {
        (self.key, self.va + off, len)
    }
}

pub(super) struct CqH {
    pub(super) cqn: u32,
    buf: u64,
    dbr: u64,
    log: u32,
    stride: u64,
    ci: u32,
    pub(super) arm_sn: u32,
}

#[derive(Clone, Copy)]
pub(super) struct QpH {
    pub(super) qpn: u32,
    st: u32,
    pub(super) uidx: u32,
    pub(super) buf: u64,
    pub(super) dbr: u64,
    sq_off: u64,
    pub(super) log_sq: u32,
    log_rq: u32,
    rq_stride: u64,
    pub(super) cur_post: u16,
    rq_head: u16,
}

/// The remote end of a connection, plus the knobs a test turns.
#[derive(Clone, Copy)]
pub(super) struct Path {
    pub(super) qpn: u32,
    pub(super) lid: u16,
    pub(super) gid: Option<[u8; 16]>,
    /// The source GID index (`src_addr_index`).
    pub(super) sgid_index: u8,
    pub(super) mtu: u32,
    pub(super) retry: u32,
    pub(super) rnr_retry: u32,
    pub(super) ack_timeout: u32,
    pub(super) min_rnr_nak: u32,
    pub(super) own_qkey: u32,
    pub(super) remote_access: bool,
    /// The Q counter set RST2INIT names (`counter_set_id`; 0: none).
    pub(super) counter_set: u32,
    /// The first PSNs (`next_rcv_psn` at INIT2RTR, `next_send_psn` at RTR2RTS).
    pub(super) rq_psn: u32,
    pub(super) sq_psn: u32,
    /// log2 of the READs and atomics the requester keeps in flight (`log_sra_max`).
    pub(super) sra: u32,
}

impl Path {
    pub(super) fn to(qpn: u32, lid: u16) -> Path {
        Path {
            qpn,
            lid,
            gid: None,
            sgid_index: 0,
            // 1024 bytes.
            mtu: 3,
            retry: 7,
            rnr_retry: 7,
            ack_timeout: 14,
            min_rnr_nak: 12,
            own_qkey: 0x1111_1111,
            remote_access: true,
            counter_set: 0,
            rq_psn: 0x100,
            sq_psn: 0x200,
            sra: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Polled {
    pub(super) opcode: u8,
    pub(super) syndrome: u8,
    pub(super) byte_cnt: u32,
    pub(super) qpn: u32,
    pub(super) wqe_opcode: u8,
    pub(super) wqe_counter: u16,
    pub(super) imm: u32,
    pub(super) flags_rqpn: u32,
    pub(super) slid: u16,
    pub(super) uidx: u32,
}

/// A UD destination as `mlx5_create_ah()` encodes it.
#[derive(Clone, Copy)]
pub(super) struct Ah {
    pub(super) dqpn: u32,
    pub(super) qkey: u32,
    pub(super) rlid: u16,
    pub(super) sl: u8,
    pub(super) grh: Option<([u8; 16], u8)>,
    pub(super) eth: bool,
}

/// A send work request.
#[derive(Clone, Default)]
pub(super) struct Wr {
    pub(super) opcode: u8,
    pub(super) sges: Vec<(u32, u64, u32)>,
    pub(super) inline: Option<Vec<u8>>,
    pub(super) signaled: bool,
    pub(super) solicited: bool,
    pub(super) imm: u32,
    pub(super) remote: Option<(u64, u32)>,
    pub(super) atomic: Option<(u64, u64)>,
    pub(super) ah: Option<Ah>,
    /// Overrides the control segment's ds (fuzzing bad WQEs).
    pub(super) ds: Option<u8>,
    /// The remote XRC SRQ of an XRC initiator's WQE (`struct mlx5_wqe_xrc_seg`).
    pub(super) xrc_srqn: Option<u32>,
}

impl Wr {
    pub(super) fn new(opcode: u8) -> Wr {
        Wr {
            opcode,
            signaled: true,
            ..Wr::default()
        }
    }
    pub(super) fn sge(mut self, s: (u32, u64, u32)) -> Wr {
        self.sges.push(s);
        self
    }
    pub(super) fn remote(mut self, mr: &Mr, off: u64) -> Wr {
        self.remote = Some((mr.va + off, mr.key));
        self
    }
}

fn data_seg(b: &mut [u8], lkey: u32, addr: u64, len: u32) {
    b[0..4].copy_from_slice(&len.to_be_bytes());
    b[4..8].copy_from_slice(&lkey.to_be_bytes());
    b[8..16].copy_from_slice(&addr.to_be_bytes());
}

/// Lays out a WQE as libmlx5's `_mlx5_post_send()` does.
fn encode(qp: &QpH, wr: &Wr) -> Vec<u8> {
    let mut w = vec![0u8; 16];
    if let Some(srqn) = wr.xrc_srqn {
        // libmlx5 mlx5_post_send(): IBV_QPT_XRC_SEND puts the XRC segment right after the
        // control segment.
        let mut x = [0u8; 16];
        x[0..4].copy_from_slice(&srqn.to_be_bytes());
        w.extend_from_slice(&x);
    }
    if let Some(ah) = wr.ah {
        let mut av = [0u8; 48];
        av[0..4].copy_from_slice(&ah.qkey.to_be_bytes());
        av[8..12].copy_from_slice(&(ah.dqpn | 0x8000_0000).to_be_bytes());
        if ah.eth {
            av[12] = (ah.sl & 7) << 1;
        } else {
            av[12] = ah.sl & 0xf;
            av[14..16].copy_from_slice(&ah.rlid.to_be_bytes());
        }
        if let Some((gid, index)) = ah.grh {
            av[26] = 3; // tclass
            av[27] = 64; // hop limit
            let grh_bit = u32::from(!ah.eth) << 30;
            av[28..32]
                .copy_from_slice(&(grh_bit | (u32::from(index) << 20) | 0x12345).to_be_bytes());
            av[32..48].copy_from_slice(&gid);
        }
        w.extend_from_slice(&av);
    }
    if let Some((raddr, rkey)) = wr.remote {
        let mut r = [0u8; 16];
        r[0..8].copy_from_slice(&raddr.to_be_bytes());
        r[8..12].copy_from_slice(&rkey.to_be_bytes());
        w.extend_from_slice(&r);
    }
    if let Some((swap_add, compare)) = wr.atomic {
        w.extend_from_slice(&swap_add.to_be_bytes());
        w.extend_from_slice(&compare.to_be_bytes());
    }
    if let Some(d) = &wr.inline {
        if !d.is_empty() {
            w.extend_from_slice(&(d.len() as u32 | INLINE_SEG).to_be_bytes());
            w.extend_from_slice(d);
            w.resize(w.len().next_multiple_of(16), 0);
        }
    } else {
        for (lkey, addr, len) in &wr.sges {
            if *len == 0 {
                continue;
            }
            let mut s = [0u8; 16];
            data_seg(&mut s, *lkey, *addr, *len);
            w.extend_from_slice(&s);
        }
    }
    let ds = wr.ds.unwrap_or((w.len() / 16) as u8);
    let idx = u32::from(qp.cur_post);
    w[0..4].copy_from_slice(&((idx << 8) | u32::from(wr.opcode)).to_be_bytes());
    w[4..8].copy_from_slice(&((qp.qpn << 8) | u32::from(ds)).to_be_bytes());
    w[11] = (if wr.signaled { ctrl::CQ_UPDATE } else { 0 })
        | (if wr.solicited { ctrl::SOLICITED } else { 0 });
    w[12..16].copy_from_slice(&wr.imm.to_be_bytes());
    let _ = qp.st;
    w
}

/// Runs the fabric of `hosts` until it is idle.
pub(super) fn run(hosts: &mut [&mut Host], now: u64) -> RunResult {
    let mut nodes: Vec<Node<'_>> = hosts
        .iter_mut()
        .map(|h| Node {
            fw: &mut h.fw,
            mem: &h.mem,
            wire: None,
        })
        .collect();
    engine::run(&mut nodes, now, 10_000, &|| false)
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Two RC QPs on one function, connected to each other (loopback through the port's LID).
struct Pair {
    h: Host,
    scq: CqH,
    rcq: CqH,
    a: QpH,
    b: QpH,
}

fn pair_with(st: u32, sizes: (u32, u32, u32), tweak: impl Fn(&mut Path)) -> Pair {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let scq = h.cq(6, false);
    let rcq = h.cq(6, false);
    let a = h.qp(st, &scq, &rcq, sizes);
    let b = h.qp(st, &scq, &rcq, sizes);
    let lid = h.lid();
    let mut pa = Path::to(b.qpn, lid);
    tweak(&mut pa);
    h.connect(&a, &pa);
    let mut pb = Path::to(a.qpn, lid);
    tweak(&mut pb);
    h.connect(&b, &pb);
    Pair { h, scq, rcq, a, b }
}

fn pair(st: u32) -> Pair {
    pair_with(st, (6, 6, 2), |_| {})
}

impl Pair {
    fn run(&mut self, now: u64) -> RunResult {
        run(&mut [&mut self.h], now)
    }
    fn sends(&mut self) -> Vec<Polled> {
        self.h.poll_all(&mut self.scq)
    }
    fn recvs(&mut self) -> Vec<Polled> {
        self.h.poll_all(&mut self.rcq)
    }
}

// ---------------------------------------------------------------------------------------
// RC.

#[test]
fn rc_send_multi_sge_byte_exact() {
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(8192, ALL);
    let dst = p.h.mr(8192, ALL);
    let data = pattern(5000, 7);
    p.h.mem.put(src.bus, &data);
    // Three receive SGEs (1000 + 3000 + 2000), two send SGEs (1200 + 3800).
    let mut b = p.b;
    p.h.post_recv(
        &mut b,
        &[dst.sge(0, 1000), dst.sge(2000, 3000), dst.sge(6000, 2000)],
    );
    let mut a = p.a;
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::SEND)
            .sge(src.sge(0, 1200))
            .sge(src.sge(1200, 3800)),
    );
    let r = p.run(0);
    assert_eq!((r.wqes, r.more), (1, false));
    let s = p.sends();
    assert_eq!(s.len(), 1);
    assert_eq!(
        (s[0].opcode, s[0].wqe_counter, s[0].qpn, s[0].wqe_opcode),
        (cqe_op::REQ, 0, a.qpn, wqe_op::SEND)
    );
    assert_eq!(s[0].uidx, a.uidx);
    let rv = p.recvs();
    assert_eq!(rv.len(), 1);
    let c = rv[0];
    assert_eq!(
        (c.opcode, c.byte_cnt, c.qpn),
        (cqe_op::RESP_SEND, 5000, b.qpn)
    );
    assert_eq!(c.flags_rqpn & 0xff_ffff, a.qpn);
    assert_eq!((c.slid, c.uidx, c.wqe_counter), (p.h.lid(), b.uidx, 0));
    assert_eq!(p.h.mem.get(dst.bus, 1000), data[..1000]);
    assert_eq!(p.h.mem.get(dst.bus + 1000, 1000), vec![0; 1000]);
    assert_eq!(p.h.mem.get(dst.bus + 2000, 3000), data[1000..4000]);
    assert_eq!(p.h.mem.get(dst.bus + 6000, 1000), data[4000..]);
    assert_eq!(p.h.mem.get(dst.bus + 7000, 1000), vec![0; 1000]);
    assert_eq!(p.h.mem.faults(), 0);
    // PSNs: 5000 bytes at MTU 1024 are 5 packets.
    assert_eq!(p.h.psns(&a).0, 0x200 + 5);
    assert_eq!(p.h.psns(&b).1, 0x100 + 5);
    // QUERY_QP also reports the consumer counters.
    let out = query_qp(&mut p.h.fw, 0, a.qpn);
    let g = |f| query_qp_out::qpc.inner(f).get(&out).unwrap();
    assert_eq!(g(qpc::hw_sq_wqebb_counter), 1);
    let out = query_qp(&mut p.h.fw, 0, b.qpn);
    let g = |f| query_qp_out::qpc.inner(f).get(&out).unwrap();
    assert_eq!(g(qpc::hw_rq_counter), 1);
}

#[test]
fn rc_send_imm_write_imm_write_read() {
    let mut p = pair(QPC_ST_RC);
    let (mut a, mut b) = (p.a, p.b);
    let local = p.h.mr(4096, ALL);
    let remote = p.h.mr(4096, ALL);
    let data = pattern(3000, 1);
    p.h.mem.put(local.bus, &data);
    p.h.post_recv(&mut b, &[remote.sge(0, 64)]);
    p.h.post_recv(&mut b, &[remote.sge(64, 64)]);
    let mut w = Wr::new(wqe_op::SEND_IMM).sge(local.sge(0, 16));
    w.imm = 0xdead_beef;
    p.h.post(&mut a, &w);
    let mut w = Wr::new(wqe_op::RDMA_WRITE_IMM)
        .sge(local.sge(0, 3000))
        .remote(&remote, 1000);
    w.imm = 0x0102_0304;
    p.h.post(&mut a, &w);
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(local.sge(100, 100))
            .remote(&remote, 200),
    );
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(local.sge(3000, 1000))
            .remote(&remote, 1000),
    );
    assert_eq!(p.run(0).wqes, 4);
    let s = p.sends();
    assert_eq!(s.len(), 4, "{s:x?}");
    assert_eq!(
        s.iter()
            .map(|c| (c.opcode, c.wqe_counter, c.wqe_opcode))
            .collect::<Vec<_>>(),
        vec![
            (cqe_op::REQ, 0, wqe_op::SEND_IMM),
            (cqe_op::REQ, 1, wqe_op::RDMA_WRITE_IMM),
            (cqe_op::REQ, 2, wqe_op::RDMA_WRITE),
            (cqe_op::REQ, 3, wqe_op::RDMA_READ),
        ]
    );
    assert_eq!(s[3].byte_cnt, 1000);
    let r = p.recvs();
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].opcode, r[0].byte_cnt, r[0].imm),
        (cqe_op::RESP_SEND_IMM, 16, 0xdead_beef)
    );
    assert_eq!(
        (r[1].opcode, r[1].byte_cnt, r[1].imm, r[1].wqe_counter),
        (cqe_op::RESP_WR_IMM, 3000, 0x0102_0304, 1)
    );
    assert_eq!(p.h.mem.get(remote.bus + 1000, 3000), data);
    // The plain WRITE overwrote 200..300 with local 100..200 (which is data[100..200]).
    assert_eq!(p.h.mem.get(remote.bus + 200, 100), data[100..200]);
    // The READ brought remote 1000..2000 (data[0..1000]) into local 3000..4000.
    assert_eq!(p.h.mem.get(local.bus + 3000, 1000), data[..1000]);
}

#[test]
fn rc_atomics() {
    let mut p = pair(QPC_ST_RC);
    let mut a = p.a;
    let local = p.h.mr(4096, ALL);
    let remote = p.h.mr(4096, ALL);
    p.h.mem.put(remote.bus + 8, &100u64.to_le_bytes());
    let mut cas = Wr::new(wqe_op::ATOMIC_CS)
        .sge(local.sge(0, 8))
        .remote(&remote, 8);
    cas.atomic = Some((555, 100));
    p.h.post(&mut a, &cas);
    // A compare that fails: returns 555 and leaves it.
    let mut cas2 = Wr::new(wqe_op::ATOMIC_CS)
        .sge(local.sge(8, 8))
        .remote(&remote, 8);
    cas2.atomic = Some((777, 100));
    p.h.post(&mut a, &cas2);
    let mut fa = Wr::new(wqe_op::ATOMIC_FA)
        .sge(local.sge(16, 8))
        .remote(&remote, 8);
    fa.atomic = Some((45, 0));
    p.h.post(&mut a, &fa);
    assert_eq!(p.run(0).wqes, 3);
    let s = p.sends();
    assert_eq!(s.len(), 3, "{s:x?}");
    assert!(
        s.iter().all(|c| c.opcode == cqe_op::REQ && c.byte_cnt == 8),
        "{s:x?}"
    );
    let le = |b: Vec<u8>| u64::from_le_bytes(b.try_into().unwrap());
    assert_eq!(le(p.h.mem.get(local.bus, 8)), 100);
    assert_eq!(le(p.h.mem.get(local.bus + 8, 8)), 555);
    assert_eq!(le(p.h.mem.get(local.bus + 16, 8)), 555);
    assert_eq!(le(p.h.mem.get(remote.bus + 8, 8)), 600);
    // Atomics are one packet each.
    assert_eq!(p.h.psns(&a).0, 0x200 + 3);
}

#[test]
fn inline_wrapping_zero_length_and_unsignaled() {
    let mut p = pair_with(QPC_ST_RC, (3, 6, 2), |_| {});
    let (mut a, mut b) = (p.a, p.b);
    let dst = p.h.mr(8192, ALL);
    // Move the SQ to 6 of 8 WQEBBs with NOPs (unsignaled, retired by the next signaled).
    for _ in 0..5 {
        let mut n = Wr::new(wqe_op::NOP);
        n.signaled = false;
        p.h.post(&mut a, &n);
    }
    p.h.post(&mut a, &Wr::new(wqe_op::NOP));
    assert_eq!(p.run(0).wqes, 6);
    let s = p.sends();
    assert_eq!(s.len(), 1, "unsignaled WQEs produce no CQE");
    assert_eq!(
        s[0].wqe_counter, 5,
        "the signaled one retires the earlier ones"
    );
    // 236 bytes inline (ib_send_lat's size): ctrl + 4 + 236 = 256 bytes, 4 WQEBBs that wrap
    // from WQEBB 6 to 1.
    let data = pattern(236, 9);
    p.h.post_recv(&mut b, &[dst.sge(0, 4096)]);
    let mut w = Wr::new(wqe_op::SEND);
    w.inline = Some(data.clone());
    p.h.post(&mut a, &w);
    assert_eq!(a.cur_post, 10);
    // Zero-length SEND and WRITE.
    p.h.post_recv(&mut b, &[dst.sge(4096, 16)]);
    p.h.post(&mut a, &Wr::new(wqe_op::SEND));
    p.h.post(&mut a, &Wr::new(wqe_op::RDMA_WRITE).remote(&dst, 0));
    assert_eq!(p.run(0).wqes, 3);
    assert_eq!(p.h.mem.get(dst.bus, 236), data);
    let r = p.recvs();
    assert_eq!(
        r.iter().map(|c| c.byte_cnt).collect::<Vec<_>>(),
        vec![236, 0]
    );
    let s = p.sends();
    assert_eq!(
        s.iter().map(|c| c.wqe_counter).collect::<Vec<_>>(),
        vec![6, 10, 11]
    );
    assert_eq!(p.h.mem.faults(), 0);
}

#[test]
fn queues_wrap_over_many_iterations() {
    // SQ of 8 WQEBBs, RQ of 4, CQs of 64: every ring wraps many times.
    let mut p = pair_with(QPC_ST_RC, (3, 2, 1), |_| {});
    let (mut a, mut b) = (p.a, p.b);
    let src = p.h.mr(4096, ALL);
    let dst = p.h.mr(4096, ALL);
    for i in 0..1000u32 {
        let len = 1 + (i * 37) % 3000;
        let data = pattern(len as usize, i as u8);
        p.h.mem.put(src.bus, &data);
        p.h.post_recv(&mut b, &[dst.sge(0, 4096)]);
        let mut w = Wr::new(if i % 3 == 0 {
            wqe_op::SEND_IMM
        } else {
            wqe_op::SEND
        })
        .sge(src.sge(0, len));
        w.imm = i;
        w.signaled = i % 4 == 3;
        p.h.post(&mut a, &w);
        assert_eq!(p.run(u64::from(i)).wqes, 1);
        let r = p.recvs();
        assert_eq!(r.len(), 1, "iteration {i}");
        assert_eq!((r[0].byte_cnt, r[0].wqe_counter), (len, i as u16));
        assert_eq!(p.h.mem.get(dst.bus, len as usize), data);
        let s = p.sends();
        assert_eq!(s.len(), usize::from(i % 4 == 3));
        if let Some(c) = s.first() {
            assert_eq!(c.wqe_counter, i as u16);
        }
    }
    assert_eq!(p.h.mem.faults(), 0);
}

// ---------------------------------------------------------------------------------------
// UC and UD.

#[test]
fn uc_send_write_and_silent_drop() {
    let mut p = pair(QPC_ST_UC);
    let (mut a, mut b) = (p.a, p.b);
    let src = p.h.mr(4096, ALL);
    let dst = p.h.mr(4096, ALL);
    p.h.mem.put(src.bus, &pattern(100, 3));
    // No receive posted: UC drops, the requester completes successfully.
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 100)));
    // A WRITE with a bad rkey is dropped too.
    let mut bad = Wr::new(wqe_op::RDMA_WRITE).sge(src.sge(0, 100));
    bad.remote = Some((dst.va, dst.key ^ 0x100));
    p.h.post(&mut a, &bad);
    p.run(0);
    p.h.post_recv(&mut b, &[dst.sge(0, 4096)]);
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 100)));
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(src.sge(0, 100))
            .remote(&dst, 1000),
    );
    // READ is not a UC operation.
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(src.sge(0, 8))
            .remote(&dst, 0),
    );
    p.run(0);
    let s = p.sends();
    assert_eq!(
        s.iter().map(|c| (c.opcode, c.syndrome)).collect::<Vec<_>>(),
        vec![
            (cqe_op::REQ, 0),
            (cqe_op::REQ, 0),
            (cqe_op::REQ, 0),
            (cqe_op::REQ, 0),
            (cqe_op::REQ_ERR, csyn::LOCAL_QP_OP)
        ],
        "{s:x?}"
    );
    let r = p.recvs();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].byte_cnt, 100);
    assert_eq!(p.h.mem.get(dst.bus + 1000, 100), pattern(100, 3));
    assert_eq!(p.h.state(&a), QPC_STATE_ERR);
    assert_eq!(p.h.state(&b), QPC_STATE_RTS);
}

/// Brings a UD QP to RTS (no path: the AV of each WQE says where).
fn ud_up(h: &mut Host, qp: &QpH, qkey: u32) {
    let mut p = Path::to(0, 0);
    p.own_qkey = qkey;
    h.connect(qp, &p);
}

#[test]
fn ud_two_nodes_grh_qkey_and_byte_cnt() {
    let mut h1 = Host::new(LinkLayer::Ib, 1);
    let mut h2 = Host::new(LinkLayer::Ib, 2);
    assert_ne!(h1.lid(), h2.lid());
    let (c1, mut c2) = (h1.cq(5, false), h2.cq(5, true));
    let mut s = h1.qp(QPC_ST_UD, &c1, &c1, (5, 5, 2));
    let mut r = h2.qp(QPC_ST_UD, &c2, &c2, (5, 5, 2));
    ud_up(&mut h1, &s, 0x42);
    ud_up(&mut h2, &r, 0x77);
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(8192, ALL);
    let data = pattern(2000, 5);
    h1.mem.put(src.bus, &data);
    h2.mem.put(dst.bus, &[0xee; 64]);
    for i in 0..3u64 {
        h2.post_recv(&mut r, &[dst.sge(i * 2048, 2048 + 40)]);
    }
    let ah = Ah {
        dqpn: r.qpn,
        qkey: 0x77,
        rlid: h2.lid(),
        sl: 5,
        grh: None,
        eth: false,
    };
    let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 2000));
    w.ah = Some(ah);
    h1.post(&mut s, &w);
    // Wrong Q_Key: silently dropped; the requester completes.
    let mut bad = w.clone();
    bad.ah = Some(Ah { qkey: 0x78, ..ah });
    h1.post(&mut s, &bad);
    // With a GRH.
    let gid = {
        let mut g = [0u8; 16];
        g[0] = 0xfe;
        g[1] = 0x80;
        g[8..].copy_from_slice(&(h2.fw.node_guid() | 1).to_be_bytes());
        g
    };
    let mut g = w.clone();
    g.ah = Some(Ah {
        grh: Some((gid, 0)),
        ..ah
    });
    h1.post(&mut s, &g);
    run(&mut [&mut h1, &mut h2], 0);
    let mut c1 = c1;
    let sc = h1.poll_all(&mut c1);
    assert_eq!(sc.len(), 3);
    assert!(sc.iter().all(|c| c.opcode == cqe_op::REQ));
    let rc = h2.poll_all(&mut c2);
    assert_eq!(rc.len(), 2, "the Q_Key mismatch was dropped");
    // No GRH: byte_cnt still counts the 40-byte area, which is not written.
    assert_eq!(rc[0].byte_cnt, 2040);
    assert_eq!(rc[0].flags_rqpn, (5 << 24) | s.qpn);
    assert_eq!(rc[0].slid, h1.lid());
    assert_eq!(h2.mem.get(dst.bus, 40), vec![0xee; 40]);
    assert_eq!(h2.mem.get(dst.bus + 40, 2000), data);
    // With the GRH: g = 1, and the GRH in the first 40 bytes.
    assert_eq!(rc[1].flags_rqpn, (1 << 28) | (5 << 24) | s.qpn);
    let grh = h2.mem.get(dst.bus + 2048, 40);
    assert_eq!(grh[0] >> 4, 6);
    assert_eq!(grh[6], 0x1b);
    assert_eq!(grh[7], 64);
    assert_eq!(&grh[8..16], &0xfe80_0000_0000_0000u64.to_be_bytes());
    assert_eq!(&grh[16..24], &(h1.fw.node_guid() | 1).to_be_bytes());
    assert_eq!(&grh[24..40], &gid);
    assert_eq!(h2.mem.get(dst.bus + 2048 + 40, 2000), data);
    // A UD message above the MTU is a local length error.
    let mut big = Wr::new(wqe_op::SEND).sge(src.sge(0, 4096));
    big.ah = Some(ah);
    let mem = h1.mr(8192, ALL);
    big.sges = vec![mem.sge(0, 5000)];
    h1.post(&mut s, &big);
    run(&mut [&mut h1, &mut h2], 0);
    let sc = h1.poll_all(&mut c1);
    assert_eq!(
        (sc[0].opcode, sc[0].syndrome),
        (cqe_op::REQ_ERR, csyn::LOCAL_LENGTH)
    );
}

#[test]
fn rc_between_two_functions_by_lid() {
    let mut h1 = Host::new(LinkLayer::Ib, 1);
    let mut h2 = Host::new(LinkLayer::Ib, 2);
    let mut h3 = Host::new(LinkLayer::Ib, 3);
    let (mut c1, mut c2) = (h1.cq(4, false), h2.cq(4, false));
    let c3 = h3.cq(4, false);
    let mut a = h1.qp(QPC_ST_RC, &c1, &c1, (4, 4, 2));
    let mut b = h2.qp(QPC_ST_RC, &c2, &c2, (4, 4, 2));
    // A QP with the same number on a third function must not be reached.
    let decoy = h3.qp(QPC_ST_RC, &c3, &c3, (4, 4, 2));
    assert_eq!(decoy.qpn, b.qpn);
    h1.connect(&a, &Path::to(b.qpn, h2.lid()));
    h2.connect(&b, &Path::to(a.qpn, h1.lid()));
    h3.connect(&decoy, &Path::to(a.qpn, h1.lid()));
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(4096, ALL);
    let other = h3.mr(4096, ALL);
    h1.mem.put(src.bus, &pattern(3000, 8));
    h2.post_recv(&mut b, &[dst.sge(0, 4096)]);
    let mut d = decoy;
    h3.post_recv(&mut d, &[other.sge(0, 4096)]);
    h1.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 3000)));
    // h2 writes back into h1 over its own connection.
    h2.post(
        &mut b,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(dst.sge(0, 0))
            .remote(&src, 3000),
    );
    run(&mut [&mut h1, &mut h2, &mut h3], 0);
    assert_eq!(h1.poll_all(&mut c1).len(), 1);
    let r = h2.poll_all(&mut c2);
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].opcode, r[0].byte_cnt, r[0].slid),
        (cqe_op::RESP_SEND, 3000, h1.lid())
    );
    assert_eq!(h2.mem.get(dst.bus, 3000), pattern(3000, 8));
    assert_eq!(
        h3.mem.get(other.bus, 16),
        vec![0; 16],
        "the decoy saw nothing"
    );
    assert_eq!(h3.mem.faults(), 0);
}

/// Runs `hosts` linked to switch `sw` (host `i`'s port at switch port `i + 1`) until idle.
fn run_switched(hosts: &mut [&mut Host], sw: &mut crate::fwsim::switch::Switch) -> RunResult {
    let firsts: Vec<u8> = (1..=hosts.len() as u8).collect();
    let mut wire = Some(Wire {
        switch: sw,
        first_ports: &firsts,
    });
    let mut nodes: Vec<Node<'_>> = hosts
        .iter_mut()
        .map(|h| Node {
            fw: &mut h.fw,
            mem: &h.mem,
            wire: wire.take(),
        })
        .collect();
    engine::run(&mut nodes, 0, 10_000, &|| false)
}

#[test]
fn lids_cross_the_switch_by_its_forwarding_table() {
    use crate::fwsim::switch::Switch;
    let mut h1 = Host::new(LinkLayer::Ib, 1);
    let mut h2 = Host::new(LinkLayer::Ib, 2);
    // A switch no SM has swept: its table routes nothing.
    let mut sw = Box::new(Switch::new(2, 0x5a));
    crate::fwsim::sm::links(&h1.fw, &mut sw, 1);
    crate::fwsim::sm::links(&h2.fw, &mut sw, 2);
    let (c1, mut c2) = (h1.cq(5, false), h2.cq(5, false));
    let mut s = h1.qp(QPC_ST_UD, &c1, &c1, (5, 5, 2));
    let mut r = h2.qp(QPC_ST_UD, &c2, &c2, (5, 5, 2));
    ud_up(&mut h1, &s, 0x42);
    ud_up(&mut h2, &r, 0x77);
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(4096, ALL);
    h1.mem.put(src.bus, &pattern(100, 3));
    for i in 0..2u64 {
        h2.post_recv(&mut r, &[dst.sge(i * 2048, 2048)]);
    }
    let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 100));
    w.ah = Some(Ah {
        dqpn: r.qpn,
        qkey: 0x77,
        rlid: h2.lid(),
        sl: 0,
        grh: None,
        eth: false,
    });
    h1.post(&mut s, &w);
    run_switched(&mut [&mut h1, &mut h2], &mut sw);
    assert!(
        h2.poll_all(&mut c2).is_empty(),
        "an unprogrammed LID is dropped"
    );
    // The embedded SM's sweep programs the table (the ports are ACTIVE already).
    assert_eq!(crate::fwsim::sm::sweep(&mut h1.fw, &mut sw, 1), 0);
    assert_eq!(crate::fwsim::sm::sweep(&mut h2.fw, &mut sw, 2), 0);
    assert_eq!(sw.route_lid(h2.lid()), Some(2));
    h1.post(&mut s, &w);
    run_switched(&mut [&mut h1, &mut h2], &mut sw);
    let got = h2.poll_all(&mut c2);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].byte_cnt, got[0].slid), (140, h1.lid()));
    // The peer's switch port going down drops it again.
    sw.link(2, false);
    h1.post(&mut s, &w);
    run_switched(&mut [&mut h1, &mut h2], &mut sw);
    assert!(h2
        .poll_all(&mut c2)
        .iter()
        .all(|c| c.opcode != cqe_op::RESP_SEND));
}

/// A UD SEND to a multicast LID crosses the switch by its multicast forwarding table to the
/// QPs attached to the packet's DGID on every port of the group but the sender's; an
/// unprogrammed MLID, a QP of another group and a packet without a GRH get nothing.
#[test]
fn a_multicast_lid_reaches_the_attached_qps_through_the_switch() {
    use crate::fwsim::switch::Switch;
    let mut h1 = Host::new(LinkLayer::Ib, 1);
    let mut h2 = Host::new(LinkLayer::Ib, 2);
    let mut h3 = Host::new(LinkLayer::Ib, 3);
    let mut sw = Box::new(Switch::new(3, 0x5a));
    for (i, h) in [&mut h1, &mut h2, &mut h3].into_iter().enumerate() {
        crate::fwsim::sm::sweep(&mut h.fw, &mut sw, i as u8 + 1);
    }
    let (c1, mut c2, mut c3) = (h1.cq(8, false), h2.cq(8, false), h3.cq(8, false));
    let mut s = h1.qp(QPC_ST_UD, &c1, &c1, (8, 8, 2));
    let mut r2 = h2.qp(QPC_ST_UD, &c2, &c2, (8, 8, 2));
    let mut o2 = h2.qp(QPC_ST_UD, &c2, &c2, (8, 8, 2));
    let mut r3 = h3.qp(QPC_ST_UD, &c3, &c3, (8, 8, 2));
    ud_up(&mut h1, &s, 0x11);
    ud_up(&mut h2, &r2, 0x11);
    ud_up(&mut h2, &o2, 0x11);
    ud_up(&mut h3, &r3, 0x11);
    let mut mgid = [0u8; 16];
    mgid[..4].copy_from_slice(&[0xff, 0x12, 0xa0, 0x1b]);
    mgid[15] = 1;
    let mut other = mgid;
    other[15] = 2;
    h2.fw.mcg.attach(mgid, r2.qpn).unwrap();
    h2.fw.mcg.attach(other, o2.qpn).unwrap();
    h3.fw.mcg.attach(mgid, r3.qpn).unwrap();
    // The sender's QP is attached too: its own port gets no copy from the switch.
    h1.fw.mcg.attach(mgid, s.qpn).unwrap();
    let src = h1.mr(4096, ALL);
    h1.mem.put(src.bus, &pattern(64, 5));
    let d2 = h2.mr(8192, ALL);
    let d3 = h3.mr(4096, ALL);
    for i in 0..2u64 {
        h2.post_recv(&mut r2, &[d2.sge(i * 512, 512)]);
        h2.post_recv(&mut o2, &[d2.sge(4096 + i * 512, 512)]);
        h3.post_recv(&mut r3, &[d3.sge(i * 512, 512)]);
    }
    let ah = Ah {
        dqpn: 0xff_ffff,
        qkey: 0x11,
        rlid: 0xc000,
        sl: 0,
        grh: Some((mgid, 0)),
        eth: false,
    };
    let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 64));
    w.ah = Some(ah);
    h1.post(&mut s, &w);
    run_switched(&mut [&mut h1, &mut h2, &mut h3], &mut sw);
    assert!(h2.poll_all(&mut c2).is_empty(), "an unprogrammed MLID");
    assert!(h3.poll_all(&mut c3).is_empty());
    // The SM programs the group on switch ports 1..=3.
    assert!(crate::fwsim::sm::program_mft(&mut sw, 0xc000, 0b1110));
    assert_eq!(sw.route_mlid(0xc000), Some(0b1110));
    h1.post(&mut s, &w);
    let mut nogrh = w.clone();
    nogrh.ah = Some(Ah { grh: None, ..ah });
    h1.post(&mut s, &nogrh);
    run_switched(&mut [&mut h1, &mut h2, &mut h3], &mut sw);
    let mut c1 = c1;
    assert_eq!(h1.poll_all(&mut c1).len(), 3, "every send completes");
    let g2 = h2.poll_all(&mut c2);
    let g3 = h3.poll_all(&mut c3);
    assert_eq!((g2.len(), g3.len()), (1, 1));
    assert_eq!((g2[0].qpn, g3[0].qpn), (r2.qpn, r3.qpn));
    assert_eq!(g2[0].byte_cnt, 104);
    assert_eq!(g2[0].slid, h1.lid());
    assert_eq!(
        g2[0].flags_rqpn,
        (1 << 28) | s.qpn,
        "a GRH, the sender's QPN"
    );
    assert_eq!(
        &h2.mem.get(d2.bus + 24, 16)[..],
        &mgid[..],
        "the GRH's DGID"
    );
    assert_eq!(h3.mem.get(d3.bus + 40, 64), pattern(64, 5));
    // The group without host 3's port.
    assert!(crate::fwsim::sm::program_mft(&mut sw, 0xc000, 0b0110));
    h1.post(&mut s, &w);
    run_switched(&mut [&mut h1, &mut h2, &mut h3], &mut sw);
    assert_eq!(h2.poll_all(&mut c2).len(), 1);
    assert!(h3.poll_all(&mut c3).is_empty());
}

#[test]
fn smi_qp0_talks_only_to_the_peer_qp0_by_lid() {
    let mut h1 = Host::new(LinkLayer::Ib, 1);
    let mut h2 = Host::new(LinkLayer::Ib, 2);
    let (mut c1, mut c2) = (h1.cq(4, false), h2.cq(4, false));
    let mut s0 = h1.qp(QPC_ST_QP0, &c1, &c1, (4, 4, 2));
    let mut d0 = h2.qp(QPC_ST_QP0, &c2, &c2, (4, 4, 2));
    let mut d1 = h2.qp(QPC_ST_QP1, &c2, &c2, (4, 4, 2));
    let mut ud = h1.qp(QPC_ST_UD, &c1, &c1, (4, 4, 2));
    ud_up(&mut h1, &s0, 0);
    ud_up(&mut h2, &d0, 0);
    ud_up(&mut h2, &d1, 0x8001_0000);
    ud_up(&mut h1, &ud, 0x8001_0000);
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(4096, ALL);
    h1.mem.put(src.bus, &pattern(256, 9));
    h2.post_recv(&mut d0, &[dst.sge(0, 256 + 40)]);
    h2.post_recv(&mut d1, &[dst.sge(1024, 256 + 40)]);
    let lid2 = h2.lid();
    let to = |dqpn| Ah {
        dqpn,
        qkey: 0x8001_0000,
        rlid: lid2,
        sl: 0,
        grh: None,
        eth: false,
    };
    // An SMP to QPN 1 and a UD message to QPN 0 go nowhere.
    let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 256));
    w.ah = Some(to(1));
    h1.post(&mut s0, &w);
    w.ah = Some(to(0));
    h1.post(&mut ud, &w);
    run(&mut [&mut h1, &mut h2], 0);
    assert_eq!(h1.poll_all(&mut c1).len(), 2, "both complete at the sender");
    assert!(h2.poll_all(&mut c2).is_empty());
    // The SMP to QPN 0 (any Q_Key) reaches the peer's QP0 with source QPN 0.
    w.ah = Some(Ah {
        qkey: 0x1234,
        ..to(0)
    });
    h1.post(&mut s0, &w);
    run(&mut [&mut h1, &mut h2], 0);
    let r = h2.poll_all(&mut c2);
    assert_eq!(r.len(), 1);
    assert_eq!(
        (r[0].opcode, r[0].byte_cnt, r[0].qpn, r[0].slid),
        (cqe_op::RESP_SEND, 296, d0.qpn, h1.lid())
    );
    assert_eq!(
        r[0].flags_rqpn & 0xff_ffff,
        0,
        "the source QPN on the wire is 0"
    );
    assert_eq!(h2.mem.get(dst.bus + 40, 256), pattern(256, 9));
    // A directed-route SMP's permissive DLID routes nowhere on the data path.
    w.ah = Some(Ah {
        rlid: 0xffff,
        ..to(0)
    });
    h1.post(&mut s0, &w);
    run(&mut [&mut h1, &mut h2], 0);
    assert!(h2.poll_all(&mut c2).is_empty());
}

/// An SMP: class `cls`, Get of `attr_id`; a directed-route one with initial path `path`
/// (entries 1..), its pointer on hop 1 as the sender's MAD layer leaves it.
fn smp_bytes(cls: u8, attr_id: u16, path: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[0] = 1;
    m[1] = cls;
    m[2] = 1;
    m[3] = 1; // Get
    m[8..16].copy_from_slice(&0x99u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr_id.to_be_bytes());
    if cls == 0x81 {
        m[6] = 1;
        m[7] = path.len() as u8;
        m[32..36].copy_from_slice(&[0xff; 4]);
        for (i, p) in path.iter().enumerate() {
            m[128 + 1 + i] = *p;
        }
    }
    m
}

#[test]
fn smps_through_the_switch_directed_and_to_its_lid() {
    use crate::fwsim::switch::Switch;
    let mut h1 = Host::new(LinkLayer::Ib, 1);
    let mut h2 = Host::new(LinkLayer::Ib, 2);
    let mut sw = Box::new(Switch::new(2, 0x5a));
    crate::fwsim::sm::sweep(&mut h1.fw, &mut sw, 1);
    crate::fwsim::sm::sweep(&mut h2.fw, &mut sw, 2);
    let (mut c1, mut c2) = (h1.cq(8, false), h2.cq(8, false));
    let mut q1 = h1.qp(QPC_ST_QP0, &c1, &c1, (8, 8, 2));
    let mut q2 = h2.qp(QPC_ST_QP0, &c2, &c2, (8, 8, 2));
    ud_up(&mut h1, &q1, 0);
    ud_up(&mut h2, &q2, 0);
    let src = h1.mr(4096, ALL);
    let back = h2.mr(4096, ALL);
    let r1 = h1.mr(4096, ALL);
    let r2 = h2.mr(4096, ALL);
    for i in 0..3u64 {
        h1.post_recv(&mut q1, &[r1.sge(i * 1024, 296)]);
    }
    h2.post_recv(&mut q2, &[r2.sge(0, 296)]);
    let ah = |rlid| Ah {
        dqpn: 0,
        qkey: 0,
        rlid,
        sl: 0,
        grh: None,
        eth: false,
    };
    let send = |h: &mut Host, q: &mut QpH, mr: &Mr, at: u64, rlid: u16, bytes: &[u8]| {
        h.mem.put(mr.bus + at, bytes);
        let mut w = Wr::new(wqe_op::SEND).sge(mr.sge(at, 256));
        w.ah = Some(ah(rlid));
        h.post(q, &w);
    };
    // h1 -> switch port 1 -> port 2 -> h2: the pointer at the end of the path, the return
    // path holding the port it entered the switch by.
    send(
        &mut h1,
        &mut q1,
        &src,
        0,
        0xffff,
        &smp_bytes(0x81, 0x11, &[1, 2]),
    );
    run_switched(&mut [&mut h1, &mut h2], &mut sw);
    let got = h2.poll_all(&mut c2);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].byte_cnt, got[0].flags_rqpn & 0xff_ffff), (296, 0));
    let arrived = h2.mem.get(r2.bus + 40, 256);
    assert_eq!((arrived[6], arrived[7], arrived[192 + 1]), (2, 2, 1));
    // h2's MAD layer answers (the D bit, its pointer stepped back onto hop 2): back at h1.
    let mut resp = arrived.clone();
    resp[3] = 0x81;
    resp[4] = 0x80;
    resp[6] = 2;
    send(&mut h2, &mut q2, &back, 0, 0xffff, &resp);
    run_switched(&mut [&mut h1, &mut h2], &mut sw);
    let got = h1.poll_all(&mut c1);
    assert_eq!(
        got.iter().filter(|c| c.opcode == cqe_op::RESP_SEND).count(),
        1
    );
    let came = h1.mem.get(r1.bus + 40, 256);
    assert_eq!(
        (came[3], came[6], came[8..16].to_vec()),
        (0x81, 1, 0x99u64.to_be_bytes().to_vec())
    );
    // A directed route ending at the switch: its SMA answers NodeInfo (a switch), back at h1.
    send(
        &mut h1,
        &mut q1,
        &src,
        256,
        0xffff,
        &smp_bytes(0x81, 0x11, &[1]),
    );
    run_switched(&mut [&mut h1, &mut h2], &mut sw);
    let got: Vec<_> = h1
        .poll_all(&mut c1)
        .into_iter()
        .filter(|c| c.opcode == cqe_op::RESP_SEND)
        .collect();
    assert_eq!(got.len(), 1);
    let ni = h1.mem.get(r1.bus + 1024 + 40, 256);
    assert_eq!((ni[3], ni[4] & 0x80, ni[6]), (0x81, 0x80, 1));
    assert_eq!((ni[64 + 2], ni[64 + 3], ni[64 + 36]), (2, 2, 1));
    // LID-routed to the switch's LID: answered, from that LID, routed back by the table.
    let swlid = sw.port0_lid();
    send(
        &mut h1,
        &mut q1,
        &src,
        512,
        swlid,
        &smp_bytes(0x01, 0x11, &[]),
    );
    run_switched(&mut [&mut h1, &mut h2], &mut sw);
    let got: Vec<_> = h1
        .poll_all(&mut c1)
        .into_iter()
        .filter(|c| c.opcode == cqe_op::RESP_SEND)
        .collect();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].slid, swlid);
    let ni = h1.mem.get(r1.bus + 2048 + 40, 256);
    assert_eq!((ni[3], ni[64 + 2]), (0x81, 2));
    // A path out of a port the switch does not have goes nowhere.
    h2.post_recv(&mut q2, &[r2.sge(1024, 296)]);
    send(
        &mut h1,
        &mut q1,
        &src,
        768,
        0xffff,
        &smp_bytes(0x81, 0x11, &[1, 7]),
    );
    run_switched(&mut [&mut h1, &mut h2], &mut sw);
    assert!(h2
        .poll_all(&mut c2)
        .iter()
        .all(|c| c.opcode != cqe_op::RESP_SEND));
}

#[test]
fn gsi_qp1_traffic_reaches_the_peer_gsi_qp() {
    let mut h1 = Host::new(LinkLayer::Ib, 1);
    let mut h2 = Host::new(LinkLayer::Ib, 2);
    let (mut c1, mut c2) = (h1.cq(4, false), h2.cq(4, false));
    let mut g1 = h1.qp(QPC_ST_QP1, &c1, &c1, (4, 4, 2));
    let mut g2 = h2.qp(QPC_ST_QP1, &c2, &c2, (4, 4, 2));
    // IB_QP1_QKEY.
    ud_up(&mut h1, &g1, 0x8001_0000);
    ud_up(&mut h2, &g2, 0x8001_0000);
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(4096, ALL);
    h1.mem.put(src.bus, &pattern(256, 4));
    h2.post_recv(&mut g2, &[dst.sge(0, 256 + 40)]);
    let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 256));
    w.ah = Some(Ah {
        dqpn: 1,
        qkey: 0x8001_0000,
        rlid: h2.lid(),
        sl: 0,
        grh: None,
        eth: false,
    });
    h1.post(&mut g1, &w);
    run(&mut [&mut h1, &mut h2], 0);
    assert_eq!(h1.poll_all(&mut c1)[0].opcode, cqe_op::REQ);
    let r = h2.poll_all(&mut c2);
    assert_eq!(
        (r[0].opcode, r[0].byte_cnt, r[0].qpn),
        (cqe_op::RESP_SEND, 296, g2.qpn)
    );
    assert_eq!(
        r[0].flags_rqpn & 0xff_ffff,
        1,
        "the source QPN on the wire is 1"
    );
    assert_eq!(h2.mem.get(dst.bus + 40, 256), pattern(256, 4));
}

fn gid_v6(n: u8) -> [u8; 16] {
    [
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x0e, 0x42, 0xa1, 0xff, 0xfe, 0, 0, n,
    ]
}

fn gid_v4(n: u8) -> [u8; 16] {
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 0, n]
}

#[test]
fn roce_routing_by_gid_rc_and_ud() {
    let mut h1 = Host::new(LinkLayer::Ethernet, 3);
    let mut h2 = Host::new(LinkLayer::Ethernet, 4);
    h1.set_gid(0, gid_v6(1), true);
    h1.set_gid(1, gid_v4(1), false);
    h1.set_gid(2, gid_v6(1), false);
    h2.set_gid(0, gid_v6(2), true);
    h2.set_gid(1, gid_v4(2), false);
    h2.set_gid(2, gid_v6(2), false);
    let (mut c1, mut c2) = (h1.cq(5, false), h2.cq(5, false));
    let mut a = h1.qp(QPC_ST_RC, &c1, &c1, (5, 5, 2));
    let mut b = h2.qp(QPC_ST_RC, &c2, &c2, (5, 5, 2));
    // Both paths from the IPv4 RoCE v2 entries (index 1).
    let mut pa = Path::to(b.qpn, 0);
    pa.gid = Some(gid_v4(2));
    pa.sgid_index = 1;
    h1.connect(&a, &pa);
    let mut pb = Path::to(a.qpn, 0);
    pb.gid = Some(gid_v4(1));
    pb.sgid_index = 1;
    h2.connect(&b, &pb);
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(4096, ALL);
    h1.mem.put(src.bus, &pattern(500, 2));
    h2.post_recv(&mut b, &[dst.sge(0, 4096)]);
    h1.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 500)));
    run(&mut [&mut h1, &mut h2], 0);
    assert_eq!(h1.poll_all(&mut c1).len(), 1);
    let r = h2.poll_all(&mut c2);
    assert_eq!(
        (r[0].opcode, r[0].byte_cnt, r[0].slid),
        (cqe_op::RESP_SEND, 500, 0)
    );
    assert_eq!(h2.mem.get(dst.bus, 500), pattern(500, 2));
    // UD: RoCE always has a GRH; v2 over IPv4 puts the IPv4 header in the last 20 bytes.
    let mut us = h1.qp(QPC_ST_UD, &c1, &c1, (5, 5, 2));
    let mut ur = h2.qp(QPC_ST_UD, &c2, &c2, (5, 5, 2));
    ud_up(&mut h1, &us, 1);
    ud_up(&mut h2, &ur, 9);
    h2.post_recv(&mut ur, &[dst.sge(0, 1000)]);
    h2.post_recv(&mut ur, &[dst.sge(1000, 1000)]);
    for (gid, index) in [(gid_v4(2), 1u8), (gid_v6(2), 2)] {
        let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 100));
        w.ah = Some(Ah {
            dqpn: ur.qpn,
            qkey: 9,
            rlid: 0,
            sl: 3,
            grh: Some((gid, index)),
            eth: true,
        });
        h1.post(&mut us, &w);
    }
    // A GID nobody has: dropped, the UD requester completes.
    let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 100));
    w.ah = Some(Ah {
        dqpn: ur.qpn,
        qkey: 9,
        rlid: 0,
        sl: 3,
        grh: Some((gid_v6(99), 0)),
        eth: true,
    });
    h1.post(&mut us, &w);
    // From an empty source entry (index 5) to a GID h2 owns: never leaves h1, though a
    // receive waits for it.
    h2.post_recv(&mut ur, &[dst.sge(2000, 1000)]);
    let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 100));
    w.ah = Some(Ah {
        dqpn: ur.qpn,
        qkey: 9,
        rlid: 0,
        sl: 3,
        grh: Some((gid_v4(2), 5)),
        eth: true,
    });
    h1.post(&mut us, &w);
    run(&mut [&mut h1, &mut h2], 0);
    assert_eq!(h1.poll_all(&mut c1).len(), 4);
    let r = h2.poll_all(&mut c2);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].byte_cnt, 140);
    // g = 1; the sl bits carry the RoCE L3 type (2 IPv4, 1 IPv6).
    assert_eq!(r[0].flags_rqpn, (1 << 28) | (2 << 24) | us.qpn);
    assert_eq!(r[1].flags_rqpn, (1 << 28) | (1 << 24) | us.qpn);
    let v4 = h2.mem.get(dst.bus, 40);
    assert_eq!(v4[20], 0x45);
    assert_eq!(v4[29], 17);
    assert_eq!(&v4[32..36], &[192, 168, 0, 1]);
    assert_eq!(&v4[36..40], &[192, 168, 0, 2]);
    // The IPv4 header checksum verifies.
    let sum: u32 = v4[20..40]
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    assert_eq!((sum & 0xffff) + (sum >> 16), 0xffff);
    let v6 = h2.mem.get(dst.bus + 1000, 40);
    assert_eq!((v6[0] >> 4, v6[6]), (6, 17));
    assert_eq!(&v6[8..24], &gid_v6(1));
    assert_eq!(&v6[24..40], &gid_v6(2));
    assert_eq!(h2.mem.get(dst.bus + 1040, 100), pattern(100, 2));
}

/// Two functions, each with a RoCE v1 (index 0) and a RoCE v2 (index 1) entry of its
/// link-local GID, and an RC QP on each, connected from the source GID indexes `ia` and `ib`;
/// a SEND from the first: what its requester completes with, and how many receives came.
fn rc_by_versions(ia: u8, ib: u8) -> (u8, u8, usize) {
    let mut h1 = Host::new(LinkLayer::Ethernet, 7);
    let mut h2 = Host::new(LinkLayer::Ethernet, 8);
    for (h, n) in [(&mut h1, 1), (&mut h2, 2)] {
        h.set_gid(0, gid_v6(n), true);
        h.set_gid(1, gid_v6(n), false);
    }
    let (mut c1, mut c2) = (h1.cq(5, false), h2.cq(5, false));
    let a = h1.qp(QPC_ST_RC, &c1, &c1, (5, 5, 2));
    let mut b = h2.qp(QPC_ST_RC, &c2, &c2, (5, 5, 2));
    let mut pa = Path::to(b.qpn, 0);
    pa.gid = Some(gid_v6(2));
    pa.sgid_index = ia;
    pa.retry = 2;
    pa.ack_timeout = 8;
    h1.connect(&a, &pa);
    let mut pb = Path::to(a.qpn, 0);
    pb.gid = Some(gid_v6(1));
    pb.sgid_index = ib;
    h2.connect(&b, &pb);
    let src = h1.mr(4096, ALL);
    let dst = h2.mr(4096, ALL);
    h2.post_recv(&mut b, &[dst.sge(0, 4096)]);
    let mut a = a;
    h1.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 64)));
    let mut now = 0;
    while let Some(d) = run(&mut [&mut h1, &mut h2], now).next_deadline_ns {
        now = d;
    }
    let s = h1.poll_all(&mut c1);
    let r = h2.poll_all(&mut c2);
    (s[0].opcode, s[0].syndrome, r.len())
}

#[test]
fn roce_v1_and_v2_qps_meet_only_their_own_version() {
    // v1 to v1 and v2 to v2: delivered.
    assert_eq!(rc_by_versions(0, 0), (cqe_op::REQ, 0, 1));
    assert_eq!(rc_by_versions(1, 1), (cqe_op::REQ, 0, 1));
    // A v1 requester and a v2 responder, or the other way round: the frames are not what the
    // responder QP takes, no ACK comes back, the requester exceeds its retries.
    assert_eq!(rc_by_versions(0, 1), (cqe_op::REQ_ERR, csyn::RETRY_EXC, 0));
    assert_eq!(rc_by_versions(1, 0), (cqe_op::REQ_ERR, csyn::RETRY_EXC, 0));
}

#[test]
fn ib_and_ethernet_never_meet() {
    let mut ib = Host::new(LinkLayer::Ib, 5);
    let mut eth = Host::new(LinkLayer::Ethernet, 6);
    let mut c = ib.cq(4, false);
    let ce = eth.cq(4, false);
    let mut a = ib.qp(QPC_ST_UD, &c, &c, (4, 4, 2));
    let b = eth.qp(QPC_ST_UD, &ce, &ce, (4, 4, 2));
    ud_up(&mut ib, &a, 1);
    ud_up(&mut eth, &b, 1);
    let src = ib.mr(4096, ALL);
    let mut w = Wr::new(wqe_op::SEND).sge(src.sge(0, 10));
    w.ah = Some(Ah {
        dqpn: b.qpn,
        qkey: 1,
        rlid: 0,
        sl: 0,
        grh: Some((gid_v6(1), 0)),
        eth: false,
    });
    eth.set_gid(0, gid_v6(1), false);
    ib.post(&mut a, &w);
    run(&mut [&mut ib, &mut eth], 0);
    assert_eq!(ib.poll_all(&mut c).len(), 1);
    assert_eq!(eth.mem.faults(), 0);
}

// ---------------------------------------------------------------------------------------
// Errors.

#[test]
fn bad_lkey_is_local_protection_and_flushes_the_rest() {
    let mut p = pair(QPC_ST_RC);
    let (mut a, mut b) = (p.a, p.b);
    let src = p.h.mr(4096, ALL);
    let dst = p.h.mr(4096, ALL);
    p.h.post_recv(&mut b, &[dst.sge(0, 4096)]);
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::SEND).sge((src.key ^ 1, src.va, 10)),
    );
    let mut un = Wr::new(wqe_op::SEND).sge(src.sge(0, 10));
    un.signaled = false;
    p.h.post(&mut a, &un);
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 10)));
    // Outside the MR's range.
    let mut c = pair(QPC_ST_RC);
    let (mut ca, mut cb) = (c.a, c.b);
    let m = c.h.mr(4096, ALL);
    c.h.post_recv(&mut cb, &[m.sge(0, 64)]);
    c.h.post(&mut ca, &Wr::new(wqe_op::SEND).sge(m.sge(4000, 200)));
    c.run(0);
    assert_eq!(c.sends()[0].syndrome, csyn::LOCAL_PROT);

    p.run(0);
    let s = p.sends();
    assert_eq!(
        s.iter()
            .map(|c| (c.opcode, c.syndrome, c.wqe_counter))
            .collect::<Vec<_>>(),
        vec![
            (cqe_op::REQ_ERR, csyn::LOCAL_PROT, 0),
            (cqe_op::REQ_ERR, csyn::FLUSH, 1),
            (cqe_op::REQ_ERR, csyn::FLUSH, 2),
        ],
        "errors and flushes are reported even for unsignaled WQEs"
    );
    assert_eq!(p.h.state(&a), QPC_STATE_ERR);
    // The receiver saw nothing and is fine.
    assert!(p.recvs().is_empty());
    assert_eq!(p.h.state(&b), QPC_STATE_RTS);
    // Work posted while in ERR is flushed too.
    p.h.post(&mut a, &Wr::new(wqe_op::NOP));
    p.run(0);
    assert_eq!(p.sends()[0].syndrome, csyn::FLUSH);
}

#[test]
fn receive_too_small_is_local_length_at_the_responder() {
    let mut p = pair(QPC_ST_RC);
    let (mut a, mut b) = (p.a, p.b);
    let src = p.h.mr(4096, ALL);
    let dst = p.h.mr(4096, ALL);
    p.h.post_recv(&mut b, &[dst.sge(0, 100)]);
    p.h.post_recv(&mut b, &[dst.sge(100, 100)]);
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 101)));
    p.run(0);
    let s = p.sends();
    assert_eq!(
        (s[0].opcode, s[0].syndrome),
        (cqe_op::REQ_ERR, csyn::REMOTE_INVAL_REQ)
    );
    let r = p.recvs();
    assert_eq!(
        r.iter()
            .map(|c| (c.opcode, c.syndrome, c.wqe_counter))
            .collect::<Vec<_>>(),
        vec![
            (cqe_op::RESP_ERR, csyn::LOCAL_LENGTH, 0),
            (cqe_op::RESP_ERR, csyn::FLUSH, 1)
        ]
    );
    assert_eq!(p.h.state(&a), QPC_STATE_ERR);
    assert_eq!(p.h.state(&b), QPC_STATE_ERR);
    // A bad lkey in the receive WQE: local protection at the responder.
    let mut q = pair(QPC_ST_RC);
    let (mut qa, mut qb) = (q.a, q.b);
    let m = q.h.mr(4096, ALL);
    q.h.post_recv(&mut qb, &[(m.key + 0x100, m.va, 100)]);
    q.h.post(&mut qa, &Wr::new(wqe_op::SEND).sge(m.sge(0, 10)));
    q.run(0);
    assert_eq!(q.recvs()[0].syndrome, csyn::LOCAL_PROT);
    assert_eq!(q.sends()[0].syndrome, csyn::REMOTE_OP);
}

fn q_alloc(h: &mut Host) -> u32 {
    let b = inbox(op::ALLOC_Q_COUNTER, 0, 0, alloc_q_counter_in::SIZE_BYTES);
    let out = ok(&mut h.fw, &b, alloc_q_counter_out::SIZE_BYTES);
    alloc_q_counter_out::counter_set_id.get(&out).unwrap()
}

/// rx_write, rx_read, rx_atomic, out_of_buffer, req/resp remote access errors of set `id`.
fn q_query(h: &mut Host, id: u32, clear: bool) -> [u32; 6] {
    let mut b = inbox(op::QUERY_Q_COUNTER, 0, 0, query_q_counter_in::SIZE_BYTES);
    query_q_counter_in::counter_set_id.set(&mut b, id).unwrap();
    query_q_counter_in::clear
        .set(&mut b, u32::from(clear))
        .unwrap();
    let out = ok(&mut h.fw, &b, query_q_counter_out::SIZE_BYTES);
    let g = |f: Member<query_q_counter_out::Bits>| f.get(&out).unwrap();
    [
        g(query_q_counter_out::rx_write_requests),
        g(query_q_counter_out::rx_read_requests),
        g(query_q_counter_out::rx_atomic_requests),
        g(query_q_counter_out::out_of_buffer),
        g(query_q_counter_out::req_remote_access_errors),
        g(query_q_counter_out::resp_remote_access_errors),
    ]
}

/// Two connected RC QPs counting into two new sets: (host, a, b, a's set, b's set).
fn counted_pair(rnr_retry: u32) -> (Host, QpH, QpH, u32, u32) {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let (sa, sb) = (q_alloc(&mut h), q_alloc(&mut h));
    let scq = h.cq(6, false);
    let rcq = h.cq(6, false);
    let a = h.qp(QPC_ST_RC, &scq, &rcq, (6, 6, 2));
    let b = h.qp(QPC_ST_RC, &scq, &rcq, (6, 6, 2));
    let lid = h.lid();
    let mut pa = Path::to(b.qpn, lid);
    pa.counter_set = sa;
    pa.rnr_retry = rnr_retry;
    h.connect(&a, &pa);
    let mut pb = Path::to(a.qpn, lid);
    pb.counter_set = sb;
    h.connect(&b, &pb);
    (h, a, b, sa, sb)
}

/// ALLOC_Q_COUNTER, QUERY_Q_COUNTER (with `clear`), DEALLOC_Q_COUNTER, and the data path
/// counting into the sets the QPCs name: the responder's set what it served, the
/// requester's set its refused requests.
#[test]
fn q_counters_count_what_the_responder_served() {
    let (mut h, mut a, _b, sa, sb) = counted_pair(0);
    assert!(sa != 0 && sb != 0 && sa != sb, "set id 0 counts nowhere");
    let m = h.mr(4096, ALL);
    for i in 0..3 {
        h.post(
            &mut a,
            &Wr::new(wqe_op::RDMA_WRITE)
                .sge(m.sge(0, 64))
                .remote(&m, 64 * i),
        );
    }
    h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_READ).sge(m.sge(0, 64)).remote(&m, 512),
    );
    let mut fa = Wr::new(wqe_op::ATOMIC_FA).sge(m.sge(0, 8)).remote(&m, 1024);
    fa.atomic = Some((1, 0));
    h.post(&mut a, &fa);
    run(&mut [&mut h], 0);
    assert_eq!(q_query(&mut h, sb, false), [3, 1, 1, 0, 0, 0]);
    assert_eq!(
        q_query(&mut h, sa, false),
        [0; 6],
        "the requester counts no rx_*"
    );
    // A SEND without a receive WQE: out_of_buffer (then RNR retries exceeded: rnr_retry 0).
    h.post(&mut a, &Wr::new(wqe_op::SEND).sge(m.sge(0, 8)));
    run(&mut [&mut h], 0);
    assert_eq!(q_query(&mut h, sb, true), [3, 1, 1, 1, 0, 0]);
    assert_eq!(q_query(&mut h, sb, false), [0; 6], "clear zeroed the set");

    // A refused WRITE counts on both sides.
    let (mut h, mut a, _b, sa, sb) = counted_pair(7);
    let ro = h.mr(
        4096,
        MrAccess {
            lw: true,
            rr: true,
            ..MrAccess::default()
        },
    );
    let src = h.mr(4096, ALL);
    h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(src.sge(0, 8))
            .remote(&ro, 0),
    );
    run(&mut [&mut h], 0);
    assert_eq!(q_query(&mut h, sa, false), [0, 0, 0, 0, 1, 0]);
    assert_eq!(q_query(&mut h, sb, false), [0, 0, 0, 0, 0, 1]);
    // DEALLOC_Q_COUNTER: the set is gone; an unknown set is BAD_PARAM.
    let mut d = inbox(
        op::DEALLOC_Q_COUNTER,
        0,
        0,
        dealloc_q_counter_in::SIZE_BYTES,
    );
    dealloc_q_counter_in::counter_set_id
        .set(&mut d, sa)
        .unwrap();
    ok(&mut h.fw, &d, dealloc_q_counter_out::SIZE_BYTES);
    let mut q = inbox(op::QUERY_Q_COUNTER, 0, 0, query_q_counter_in::SIZE_BYTES);
    query_q_counter_in::counter_set_id.set(&mut q, sa).unwrap();
    assert_eq!(
        super::tests::err(&mut h.fw, &q, query_q_counter_out::SIZE_BYTES),
        (Status::BAD_PARAM_ERR, syn::Q_COUNTER_UNKNOWN as u32)
    );
}

/// RTS2RTS with `MLX5_QP_OPTPAR_COUNTER_SET_ID` (upstream `__mlx5_ib_qp_set_counter()`, what
/// a counter bind or unbind of a QP in RTS sends: nothing else in the context): the QP counts
/// into the new set from then on, keeps its ACK timeout (not an optional parameter upstream
/// passes), and an unknown set is `BAD_PARAM` with nothing changed.
#[test]
fn rts2rts_moves_a_qp_to_another_counter_set() {
    let (mut h, mut a, b, _sa, sb) = counted_pair(0);
    let sc = q_alloc(&mut h);
    let m = h.mr(4096, ALL);
    let write = |h: &mut Host, a: &mut QpH| {
        h.post(
            a,
            &Wr::new(wqe_op::RDMA_WRITE).sge(m.sge(0, 64)).remote(&m, 0),
        );
        run(&mut [h], 0);
    };
    write(&mut h, &mut a);
    let move_to = |set: u32| {
        let mut x = inbox(op::RTS2RTS_QP, 0, 0, rts2rts_qp_in::SIZE_BYTES);
        rts2rts_qp_in::qpn.set(&mut x, b.qpn).unwrap();
        rts2rts_qp_in::opt_param_mask
            .set(&mut x, qp_optpar::COUNTER_SET_ID)
            .unwrap();
        rts2rts_qp_in::qpc
            .inner(qpc::counter_set_id)
            .set(&mut x, set)
            .unwrap();
        x
    };
    let x = move_to(200);
    assert_eq!(
        super::tests::err(&mut h.fw, &x, 16),
        (Status::BAD_PARAM_ERR, syn::Q_COUNTER_UNKNOWN as u32)
    );
    let x = move_to(sc);
    ok(&mut h.fw, &x, 16);
    write(&mut h, &mut a);
    write(&mut h, &mut a);
    assert_eq!(
        q_query(&mut h, sb, false)[0],
        1,
        "the old set keeps what it counted"
    );
    assert_eq!(
        q_query(&mut h, sc, false)[0],
        2,
        "the new set counts from the move on"
    );
    let out = query_qp(&mut h.fw, 0, b.qpn);
    let g = |f| query_qp_out::qpc.inner(f).get(&out).unwrap();
    assert_eq!(g(qpc::counter_set_id), sc);
    assert_eq!(g(qpc::primary_address_path.inner(ads::ack_timeout)), 14);
    assert_eq!(g(qpc::state), QPC_STATE_RTS);
    // max_qp_cnt sets in all: one more ALLOC_Q_COUNTER is NO_RES_ERR.
    for _ in 3..capacity::Q_COUNTER {
        q_alloc(&mut h);
    }
    let x = inbox(op::ALLOC_Q_COUNTER, 0, 0, alloc_q_counter_in::SIZE_BYTES);
    assert_eq!(
        super::tests::err(&mut h.fw, &x, alloc_q_counter_out::SIZE_BYTES),
        (Status::NO_RES_ERR, syn::TABLE_FULL as u32)
    );
}

/// INIT2INIT (what librdmacm's `ucma_modify_qp_rtr()` sends before RTR) leaves the Q counter
/// set RST2INIT gave: upstream sends `counter_set_id` zeroed there, without
/// `MLX5_QP_OPTPAR_COUNTER_SET_ID`; with the bit it moves the QP.
#[test]
fn init2init_keeps_the_counter_set() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let (sa, sb) = (q_alloc(&mut h), q_alloc(&mut h));
    let cq = h.cq(6, false);
    let q = h.qp(QPC_ST_RC, &cq, &cq, (6, 6, 2));
    let mut b = super::tests::modify_in(op::RST2INIT_QP, 0, q.qpn);
    rst2init_qp_in::qpc
        .inner(qpc::counter_set_id)
        .set(&mut b, sa)
        .unwrap();
    ok(&mut h.fw, &b, 16);
    let set = |h: &mut Host| {
        let out = query_qp(&mut h.fw, 0, q.qpn);
        query_qp_out::qpc
            .inner(qpc::counter_set_id)
            .get(&out)
            .unwrap()
    };
    ok(
        &mut h.fw,
        &super::tests::modify_in(op::INIT2INIT_QP, 0, q.qpn),
        16,
    );
    assert_eq!(set(&mut h), sa);
    let mut b = super::tests::modify_in(op::INIT2INIT_QP, 0, q.qpn);
    init2init_qp_in::opt_param_mask
        .set(&mut b, qp_optpar::COUNTER_SET_ID)
        .unwrap();
    init2init_qp_in::qpc
        .inner(qpc::counter_set_id)
        .set(&mut b, sb)
        .unwrap();
    ok(&mut h.fw, &b, 16);
    assert_eq!(set(&mut h), sb);
}

#[test]
fn remote_access_error_moves_both_to_err() {
    let mut p = pair(QPC_ST_RC);
    let (mut a, mut b) = (p.a, p.b);
    let src = p.h.mr(4096, ALL);
    let ro = p.h.mr(
        4096,
        MrAccess {
            lw: true,
            rr: true,
            ..MrAccess::default()
        },
    );
    p.h.post_recv(&mut b, &[ro.sge(0, 64)]);
    p.h.post_recv(&mut b, &[ro.sge(0, 64)]);
    // WRITE into an mkey without remote write.
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(src.sge(0, 8))
            .remote(&ro, 0),
    );
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 8)));
    p.run(0);
    let s = p.sends();
    assert_eq!(
        s.iter().map(|c| (c.opcode, c.syndrome)).collect::<Vec<_>>(),
        vec![
            (cqe_op::REQ_ERR, csyn::REMOTE_ACCESS),
            (cqe_op::REQ_ERR, csyn::FLUSH)
        ]
    );
    // The responder: no CQE for the WRITE itself, its RQ flushed, a WQ_ACCESS event.
    let r = p.recvs();
    assert_eq!(r.len(), 2);
    assert!(r.iter().all(|c| c.syndrome == csyn::FLUSH));
    assert_eq!(p.h.state(&b), QPC_STATE_ERR);
    assert_eq!(
        p.h.events(),
        vec![Event::Qp {
            qpn: b.qpn,
            kind: QpEvent::WqAccess
        }]
    );
    assert_eq!(p.h.mem.get(ro.bus, 8), vec![0; 8]);
    // READ beyond the region, and an unaligned atomic.
    let mut q = pair(QPC_ST_RC);
    let mut qa = q.a;
    let m = q.h.mr(4096, ALL);
    q.h.post(
        &mut qa,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(m.sge(0, 200))
            .remote(&m, 4000),
    );
    q.run(0);
    assert_eq!(q.sends()[0].syndrome, csyn::REMOTE_ACCESS);
    let mut q = pair(QPC_ST_RC);
    let mut qa = q.a;
    let m = q.h.mr(4096, ALL);
    let mut fa = Wr::new(wqe_op::ATOMIC_FA).sge(m.sge(0, 8)).remote(&m, 4);
    fa.atomic = Some((1, 0));
    q.h.post(&mut qa, &fa);
    q.run(0);
    assert_eq!(q.sends()[0].syndrome, csyn::REMOTE_INVAL_REQ);
    assert_eq!(
        q.h.events(),
        vec![Event::Qp {
            qpn: q.b.qpn,
            kind: QpEvent::WqInvalReq
        }]
    );
}

#[test]
fn rnr_retry_then_success_and_exceeded() {
    // min_rnr_nak 12 = 0.64 ms; rnr_retry 2.
    let mut p = pair_with(QPC_ST_RC, (6, 6, 2), |p| p.rnr_retry = 2);
    let (mut a, mut b) = (p.a, p.b);
    let m = p.h.mr(4096, ALL);
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(m.sge(0, 10)));
    let r = p.run(1000);
    assert_eq!(r.next_deadline_ns, Some(1000 + 640_000));
    assert!(p.sends().is_empty());
    // Too early: still waiting.
    assert_eq!(p.run(500_000).next_deadline_ns, Some(641_000));
    // A receive appears; the retry succeeds.
    p.h.post_recv(&mut b, &[m.sge(100, 100)]);
    p.run(641_000);
    assert_eq!(p.sends()[0].opcode, cqe_op::REQ);
    assert_eq!(p.recvs()[0].byte_cnt, 10);
    // Now with no receive ever: the first RNR NAK and 2 retries, then RNR_RETRY_EXC.
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(m.sge(0, 10)));
    let mut now = 1_000_000;
    let mut naks = 0;
    loop {
        let r = p.run(now);
        match r.next_deadline_ns {
            Some(d) => {
                naks += 1;
                assert_eq!(d, now + 640_000);
                now = d;
            }
            None => break,
        }
    }
    assert_eq!(naks, 2);
    let s = p.sends();
    assert_eq!(
        (s[0].opcode, s[0].syndrome),
        (cqe_op::REQ_ERR, csyn::RNR_RETRY_EXC)
    );
    assert_eq!(p.h.state(&a), QPC_STATE_ERR);
}

#[test]
fn destination_gone_is_retry_exceeded_after_timeouts() {
    // ack_timeout 10: 4.096 us << 10 = 4.19 ms; retry_count 3.
    let mut p = pair_with(QPC_ST_RC, (6, 6, 2), |p| {
        p.retry = 3;
        p.ack_timeout = 10;
    });
    let mut a = p.a;
    let m = p.h.mr(4096, ALL);
    let t = 4096u64 << 10;
    // Destroy the responder QP with traffic on its way.
    let b = p.b;
    ok(
        &mut p.h.fw,
        &destroy_in(op::DESTROY_QP, 0, destroy_qp_in::qpn, b.qpn),
        16,
    );
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(m.sge(0, 10)));
    let mut now = 0;
    let mut timeouts = 0;
    loop {
        let r = p.run(now);
        match r.next_deadline_ns {
            Some(d) => {
                assert_eq!(d, now + t);
                timeouts += 1;
                now = d;
            }
            None => break,
        }
    }
    // The original and 3 retries each waited a timeout.
    assert_eq!(timeouts, 4);
    assert_eq!(now, 4 * t);
    let s = p.sends();
    assert_eq!(
        (s[0].opcode, s[0].syndrome),
        (cqe_op::REQ_ERR, csyn::RETRY_EXC)
    );
    // ack_timeout 0: infinite, the QP stalls (until moved to ERR).
    let mut q = pair_with(QPC_ST_RC, (6, 6, 2), |p| p.ack_timeout = 0);
    let mut qa = q.a;
    q.h.modify(&q.b, op::_2ERR_QP);
    q.h.post(&mut qa, &Wr::new(wqe_op::NOP));
    q.h.post(&mut qa, &Wr::new(wqe_op::SEND).sge((0, 0, 0)));
    let r = q.run(0);
    assert_eq!((r.wqes, r.next_deadline_ns), (1, None));
    assert_eq!(q.run(u64::MAX / 2).wqes, 0);
    q.h.modify(&qa, op::_2ERR_QP);
    q.run(0);
    let s = q.sends();
    assert_eq!(
        s.iter().map(|c| c.syndrome).collect::<Vec<_>>(),
        vec![0, csyn::FLUSH]
    );
}

#[test]
fn to_err_flushes_everything_and_to_rst_resets() {
    let mut p = pair(QPC_ST_RC);
    let (mut a, mut b) = (p.a, p.b);
    let m = p.h.mr(4096, ALL);
    for i in 0..3 {
        p.h.post_recv(&mut a, &[m.sge(i * 64, 64)]);
    }
    // Posted but not yet executed.
    for _ in 0..4 {
        p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(m.sge(0, 10)));
    }
    p.h.modify(&a, op::_2ERR_QP);
    assert_eq!(p.h.state(&a), QPC_STATE_ERR);
    // Flushed on the transition (`complete_commands` after the command), before any pass.
    assert_eq!(p.run(0).wqes, 0);
    let s = p.sends();
    assert_eq!(
        s.iter()
            .map(|c| (c.syndrome, c.wqe_counter))
            .collect::<Vec<_>>(),
        vec![(5, 0), (5, 1), (5, 2), (5, 3)]
    );
    let r = p.recvs();
    assert_eq!(r.len(), 3);
    assert!(r
        .iter()
        .all(|c| c.opcode == cqe_op::RESP_ERR && c.syndrome == csyn::FLUSH));
    assert!(r.iter().all(|c| c.qpn == a.qpn));
    assert!(p.recvs().is_empty());
    // 2RST: counters back to 0, no CQEs; libmlx5 zeroes the records and starts over.
    p.h.modify(&a, op::_2RST_QP);
    p.h.mem.put(a.dbr, &[0; 8]);
    a.cur_post = 0;
    a.rq_head = 0;
    assert_eq!(p.run(0).wqes, 0);
    p.h.connect(&a, &Path::to(b.qpn, p.h.lid()));
    p.h.post_recv(&mut b, &[m.sge(0, 64)]);
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(m.sge(100, 10)));
    p.run(0);
    assert_eq!(p.sends()[0].wqe_counter, 0);
    assert_eq!(p.recvs()[0].byte_cnt, 10);
}

/// What the worker's periodic rescan waits for (`Fw::has_served_qp`): a QP in RTS or ERR.
/// Idle QPs (RESET, as a hundred user contexts hold them, or back in RESET) keep no rescan
/// going.
#[test]
fn only_rts_and_err_qps_are_served() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let cq = h.cq(6, false);
    assert!(!h.fw.has_served_qp());
    let a = h.qp(QPC_ST_RC, &cq, &cq, (6, 6, 2));
    let b = h.qp(QPC_ST_RC, &cq, &cq, (6, 6, 2));
    assert!(!h.fw.has_served_qp(), "RESET QPs");
    let lid = h.lid();
    h.connect(&a, &Path::to(b.qpn, lid));
    assert!(h.fw.has_served_qp(), "an RTS QP");
    h.modify(&a, op::_2RST_QP);
    assert!(!h.fw.has_served_qp(), "back in RESET");
    h.modify(&b, op::_2ERR_QP);
    assert!(h.fw.has_served_qp(), "an ERR QP (flushes)");
}

/// `complete_commands` after RTR2RTS reports work (the simdev then wakes its worker) only
/// for the function's first QP a pass serves (the worker's rescans start) and when WQEs were
/// posted while the QP was in RTR (the next pass sends them).
#[test]
fn rtr2rts_reports_the_first_served_qp_and_wqes_posted_in_rtr() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let scq = h.cq(6, false);
    let rcq = h.cq(6, false);
    let mut a = h.qp(QPC_ST_RC, &scq, &rcq, (6, 6, 2));
    let mut b = h.qp(QPC_ST_RC, &scq, &rcq, (6, 6, 2));
    let c = h.qp(QPC_ST_RC, &scq, &rcq, (6, 6, 2));
    assert_eq!(h.complete(), Left::Nothing, "CREATE_QP");
    let lid = h.lid();
    let (pa, pb) = (Path::to(b.qpn, lid), Path::to(a.qpn, lid));
    h.to_rtr(&b, &pb);
    assert_eq!(h.complete(), Left::Nothing, "RST2INIT, INIT2RTR");
    h.to_rts(&b, &pb);
    assert_eq!(h.complete(), Left::Served, "the first served QP");
    h.to_rtr(&c, &pb);
    h.to_rts(&c, &pb);
    assert_eq!(h.complete(), Left::Nothing, "a second, with an empty SQ");
    let mr = h.mr(4096, ALL);
    h.post_recv(&mut b, &[mr.sge(0, 64)]);
    h.to_rtr(&a, &pa);
    h.post(&mut a, &Wr::new(wqe_op::SEND).sge(mr.sge(64, 16)));
    assert_eq!(h.complete(), Left::Nothing, "posted in RTR, not yet RTS");
    h.to_rts(&a, &pa);
    assert_eq!(h.complete(), Left::Work, "RTR2RTS with a WQE posted");
    assert_eq!(h.complete(), Left::Nothing, "reported once");
    run(&mut [&mut h], 0);
    let mut scq = scq;
    assert_eq!(h.poll_all(&mut scq).len(), 1, "the pass sent it");
}

#[test]
fn dma_fault_of_an_unmapped_buffer() {
    let mut p = pair(QPC_ST_RC);
    let (mut a, mut b) = (p.a, p.b);
    let dst = p.h.mr(4096, ALL);
    p.h.mem.put(dst.bus, &[0x55; 64]);
    // An mkey whose pages were never mapped (the MTT names a guard gap).
    let hole = p.h.mem.map(4096, true) + 4096 * 50;
    let src = p.h.mr_at(hole, 4096, ALL);
    p.h.post_recv(&mut b, &[dst.sge(0, 64)]);
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 64)));
    p.run(0);
    assert_eq!(p.sends()[0].syndrome, csyn::LOCAL_PROT);
    assert!(p.h.mem.faults() > 0);
    assert_eq!(p.h.mem.get(dst.bus, 64), vec![0x55; 64], "nothing written");
    assert!(p.recvs().is_empty());
    // A read-only (write-protected) receive buffer: the responder faults writing it.
    let mut q = pair(QPC_ST_RC);
    let (mut qa, mut qb) = (q.a, q.b);
    let ro = q.h.mem.map(4096, false);
    let rmr = q.h.mr_at(ro, 4096, ALL);
    let s = q.h.mr(4096, ALL);
    q.h.post_recv(&mut qb, &[rmr.sge(0, 64)]);
    q.h.post(&mut qa, &Wr::new(wqe_op::SEND).sge(s.sge(0, 64)));
    q.run(0);
    assert_eq!(q.recvs()[0].syndrome, csyn::LOCAL_PROT);
    assert_eq!(q.sends()[0].syndrome, csyn::REMOTE_OP);
    assert_eq!(q.h.mem.get(ro, 64), vec![0; 64]);
}

#[test]
fn bad_wqes_are_local_qp_op_errors() {
    let mut p = pair(QPC_ST_RC);
    let mut a = p.a;
    let m = p.h.mr(4096, ALL);
    let mut w = Wr::new(wqe_op::SEND).sge(m.sge(0, 8));
    w.ds = Some(0);
    p.h.post(&mut a, &w);
    p.run(0);
    assert_eq!(p.sends()[0].syndrome, csyn::LOCAL_QP_OP);
    let mut p = pair(QPC_ST_RC);
    let mut a = p.a;
    p.h.post(&mut a, &Wr::new(0x3f));
    p.run(0);
    assert_eq!(p.sends()[0].syndrome, csyn::LOCAL_QP_OP);
    // Inline data running past the WQE.
    let mut p = pair(QPC_ST_RC);
    let mut a = p.a;
    let mut w = Wr::new(wqe_op::SEND);
    w.inline = Some(vec![1; 40]);
    w.ds = Some(2);
    p.h.post(&mut a, &w);
    p.run(0);
    assert_eq!(p.sends()[0].syndrome, csyn::LOCAL_QP_OP);
}

// ---------------------------------------------------------------------------------------
// CQs and events.

#[test]
fn cq_arm_next_solicited_immediate_and_once() {
    let mut p = pair(QPC_ST_RC);
    let (mut a, mut b) = (p.a, p.b);
    let m = p.h.mr(4096, ALL);
    let rcqn = p.rcq.cqn;
    for i in 0..8 {
        p.h.post_recv(&mut b, &[m.sge(i * 64, 64)]);
    }
    // Next: fires on the next CQE, once.
    p.h.arm(&mut p.rcq, false, true);
    let send = Wr::new(wqe_op::SEND).sge(m.sge(1024, 8));
    p.h.post(&mut a, &send);
    p.h.post(&mut a, &send);
    assert!(!p.h.fw.has_events());
    p.run(0);
    assert!(p.h.fw.has_events());
    assert_eq!(p.h.events(), vec![Event::Completion { cqn: rcqn }]);
    assert_eq!(p.recvs().len(), 2);
    // The same arm again (same sn): ignored; no event for new CQEs.
    p.h.arm(&mut p.rcq, false, true);
    p.h.post(&mut a, &send);
    p.run(0);
    assert!(p.h.events().is_empty());
    // A new sn with the consumer behind the producer: fires at once (UAR store).
    p.rcq.arm_sn += 1;
    let ci = p.rcq.ci;
    p.h.arm(&mut p.rcq, false, true);
    assert_eq!(p.h.events(), vec![Event::Completion { cqn: rcqn }]);
    assert_eq!(p.rcq.ci, ci);
    p.recvs();
    // Solicited: an unsolicited SEND does not fire, a solicited one does. The arm is seen
    // from the record alone (no UAR store).
    p.rcq.arm_sn += 1;
    p.h.arm(&mut p.rcq, true, false);
    p.h.post(&mut a, &send);
    p.run(0);
    assert!(p.h.events().is_empty());
    let mut sol = send.clone();
    sol.solicited = true;
    p.h.post(&mut a, &sol);
    p.run(0);
    assert_eq!(p.h.events(), vec![Event::Completion { cqn: rcqn }]);
    // The send CQ, armed through the record only, fires for its CQEs.
    let scqn = p.scq.cqn;
    p.sends();
    p.h.arm(&mut p.scq, false, false);
    p.h.post(&mut a, &send);
    p.run(0);
    assert_eq!(p.h.events(), vec![Event::Completion { cqn: scqn }]);
    // Solicited arm fires for an error CQE.
    p.recvs();
    p.rcq.arm_sn += 1;
    p.h.arm(&mut p.rcq, true, true);
    p.h.modify(&b, op::_2ERR_QP);
    p.run(0);
    assert_eq!(p.h.events(), vec![Event::Completion { cqn: rcqn }]);
}

#[test]
fn cq_overrun_is_a_cq_error_and_drops() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut cq = h.cq(2, false);
    let mut a = h.qp(QPC_ST_RC, &cq, &cq, (4, 4, 2));
    let b = h.qp(QPC_ST_RC, &cq, &cq, (4, 4, 2));
    let lid = h.lid();
    h.connect(&a, &Path::to(b.qpn, lid));
    h.connect(&b, &Path::to(a.qpn, lid));
    for _ in 0..6 {
        h.post(&mut a, &Wr::new(wqe_op::NOP));
    }
    run(&mut [&mut h], 0);
    assert_eq!(h.events(), vec![Event::CqError { cqn: cq.cqn }]);
    assert_eq!(h.poll_all(&mut cq).len(), 4, "the 5th and 6th were dropped");
    h.post(&mut a, &Wr::new(wqe_op::NOP));
    run(&mut [&mut h], 0);
    assert!(h.poll_all(&mut cq).is_empty(), "the CQ stays in error");
    // QUERY_CQ: status CQ_OVERFLOW (0x9), producer counter 4.
    let out = ok(
        &mut h.fw,
        &destroy_in(op::QUERY_CQ, 0, query_cq_in::cqn, cq.cqn),
        query_cq_out::SIZE_BYTES,
    );
    let g = |f| query_cq_out::cq_context.inner(f).get(&out).unwrap();
    assert_eq!((g(cqc::status), g(cqc::producer_counter)), (0x9, 4));
}

#[test]
fn cq_with_overrun_ignore_never_overruns() {
    // upstream mlx5_ib sets `cqc.oi` for IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN: the device then
    // writes on over unread CQEs, with no CQ error.
    let mut h = Host::new(LinkLayer::Ib, 1);
    let cq = h.cq_oi(2, false, true);
    let mut a = h.qp(QPC_ST_RC, &cq, &cq, (4, 4, 2));
    let b = h.qp(QPC_ST_RC, &cq, &cq, (4, 4, 2));
    let lid = h.lid();
    h.connect(&a, &Path::to(b.qpn, lid));
    h.connect(&b, &Path::to(a.qpn, lid));
    for _ in 0..6 {
        h.post(&mut a, &Wr::new(wqe_op::NOP));
    }
    run(&mut [&mut h], 0);
    assert!(h.events().is_empty(), "no CQ error with oi");
    // QUERY_CQ: status OK, all 6 CQEs produced.
    let out = ok(
        &mut h.fw,
        &destroy_in(op::QUERY_CQ, 0, query_cq_in::cqn, cq.cqn),
        query_cq_out::SIZE_BYTES,
    );
    let g = |f| query_cq_out::cq_context.inner(f).get(&out).unwrap();
    assert_eq!((g(cqc::status), g(cqc::producer_counter)), (0, 6));
}

#[test]
fn events_are_never_lost() {
    // Every CQ of a full table armed and fired, plus QP events: all of them come out.
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut cqs = Vec::new();
    while cqs.len() < capacity::CQ {
        cqs.push(h.cq(1, false));
    }
    for c in cqs.iter_mut() {
        // Arm with ci 0 while a fake producer index says one CQE is pending: fire at once.
        h.arm(c, false, true);
    }
    // None fired yet (nothing was produced); make CQEs through flushes of QPs.
    let mut qps = Vec::new();
    for i in 0..capacity::CQ / 2 {
        let c = &cqs[i * 2];
        let d = &cqs[i * 2 + 1];
        let mut q = h.qp(QPC_ST_RC, c, d, (2, 2, 2));
        h.mem.put32(q.dbr, 1);
        q.rq_head = 1;
        h.post(&mut q, &Wr::new(wqe_op::NOP));
        h.modify(&q, op::_2ERR_QP);
        qps.push(q);
    }
    run(&mut [&mut h], 0);
    let ev = h.events();
    assert_eq!(ev.len(), capacity::CQ);
    for c in &cqs {
        assert!(ev.contains(&Event::Completion { cqn: c.cqn }));
    }
    // Raising more than the ring could hold if it queued duplicates.
    for _ in 0..5 {
        for (slot, _) in qps.iter().enumerate() {
            h.fw.events.qp(slot, QpEvent::WqCatas);
            h.fw.events.qp(slot, QpEvent::CommEst);
        }
    }
    let ev = h.events();
    assert_eq!(ev.len(), 2 * qps.len());
}

#[test]
fn comm_est_on_rtr_and_psns_in_query_qp() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut c = h.cq(6, false);
    let mut a = h.qp(QPC_ST_RC, &c, &c, (6, 6, 2));
    let b = h.qp(QPC_ST_RC, &c, &c, (6, 6, 2));
    let lid = h.lid();
    h.connect(&a, &Path::to(b.qpn, lid));
    // b only to RTR.
    let m = |op: u16, qpn: u32| {
        let mut x = inbox(op, 0, 0, rst2init_qp_in::SIZE_BYTES);
        rst2init_qp_in::qpn.set(&mut x, qpn).unwrap();
        x
    };
    let q = |f| rst2init_qp_in::qpc.inner(f);
    let mut x = m(op::RST2INIT_QP, b.qpn);
    q(qpc::primary_address_path.inner(ads::vhca_port_num))
        .set(&mut x, 1)
        .unwrap();
    q(qpc::rwe).set(&mut x, 1).unwrap();
    ok(&mut h.fw, &x, 16);
    let mut x = m(op::INIT2RTR_QP, b.qpn);
    q(qpc::mtu).set(&mut x, 1).unwrap();
    q(qpc::log_msg_max).set(&mut x, 30).unwrap();
    q(qpc::remote_qpn).set(&mut x, a.qpn).unwrap();
    q(qpc::next_rcv_psn).set(&mut x, 0xff_fffe).unwrap();
    q(qpc::rwe).set(&mut x, 1).unwrap();
    q(qpc::primary_address_path.inner(ads::vhca_port_num))
        .set(&mut x, 1)
        .unwrap();
    ok(&mut h.fw, &x, 16);
    let mr = h.mr(8192, ALL);
    h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(mr.sge(0, 4096))
            .remote(&mr, 4096),
    );
    h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(mr.sge(0, 1))
            .remote(&mr, 4096),
    );
    run(&mut [&mut h], 0);
    assert_eq!(h.poll_all(&mut c).len(), 2);
    assert_eq!(
        h.events(),
        vec![Event::Qp {
            qpn: b.qpn,
            kind: QpEvent::CommEst
        }]
    );
    // The requester's MTU (1024): 4 + 1 packets; the responder's PSN wraps at 24 bits.
    assert_eq!(h.psns(&a).0, 0x205);
    assert_eq!(h.psns(&b).1, (0xff_fffe + 5) & 0xff_ffff);
}

#[test]
fn fragmented_translations_are_refused_and_lids_are_unique() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    // A CQ of 16 pages, all discontiguous.
    let mut b = inbox(op::CREATE_CQ, 0, 0, create_cq_in::SIZE_BYTES + 8 * 16);
    let c = |f| create_cq_in::cq_context.inner(f);
    c(cqc::log_cq_size).set(&mut b, 10).unwrap();
    c(cqc::uar_page).set(&mut b, h.uar).unwrap();
    for p in 0..16 {
        let at = create_cq_in::SIZE_BYTES + 8 * p;
        b[at..at + 8].copy_from_slice(&(0x100_0000 + 0x2000 * p as u64).to_be_bytes());
    }
    assert_eq!(
        super::tests::err(&mut h.fw, &b, 16),
        (
            crate::prm::status::Status::NO_RES_ERR,
            syn::TRANSLATION_FRAGMENTED
        )
    );
    // Contiguous pages: one run.
    for p in 0..16 {
        let at = create_cq_in::SIZE_BYTES + 8 * p;
        b[at..at + 8].copy_from_slice(&(0x100_0000 + 0x1000 * p as u64).to_be_bytes());
    }
    let out = ok(&mut h.fw, &b, create_cq_out::SIZE_BYTES);
    let cqn = create_cq_out::cqn.get(&out).unwrap();
    assert_eq!(h.fw.cqs.get(cqn).unwrap().q.buf.xlat.runs().len(), 1);
    let lids: Vec<u16> = (1..=8).map(|s| Host::new(LinkLayer::Ib, s).lid()).collect();
    for (i, l) in lids.iter().enumerate() {
        assert!(*l > 1 && *l < 0xc000);
        assert!(!lids[i + 1..].contains(l));
    }
}

#[test]
fn resize_cq_below_the_cqes_it_holds_is_refused() {
    // A ConnectX refuses to resize a CQ to fewer entries than the CQEs it still holds
    // (upstream mlx5_ib_resize_cq() returns the command's EINVAL).
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut cq = h.cq(3, false);
    let mut q = h.qp(QPC_ST_RC, &cq, &cq, (4, 4, 2));
    let lid = h.lid();
    h.connect(&q, &Path::to(0x999, lid));
    for _ in 0..6 {
        h.post(&mut q, &Wr::new(wqe_op::NOP));
    }
    run(&mut [&mut h], 0);
    // Six CQEs held: four entries are too few, eight are enough once two are consumed.
    assert_eq!(
        h.resize_cmd(&cq, 2),
        Err((Status::BAD_PARAM_ERR, syn::CQ_RESIZE_TOO_SMALL))
    );
    assert_eq!(h.poll(&mut cq).unwrap().wqe_counter, 0);
    assert_eq!(h.poll(&mut cq).unwrap().wqe_counter, 1);
    assert_eq!(
        h.resize_cmd(&cq, 2),
        Err((Status::BAD_PARAM_ERR, syn::CQ_RESIZE_TOO_SMALL)),
        "four held, four entries"
    );
    h.resize(&mut cq, 3);
    let got: Vec<u16> = h.poll_all(&mut cq).iter().map(|c| c.wqe_counter).collect();
    assert_eq!(got, vec![2, 3, 4, 5]);
}

#[test]
fn resize_cq_writes_the_resize_cqe_and_moves_on() {
    // NOPs complete without a peer: any destination will do.
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut cq = h.cq(2, false);
    let mut q = h.qp(QPC_ST_RC, &cq, &cq, (4, 4, 2));
    let lid = h.lid();
    h.connect(&q, &Path::to(0x999, lid));
    for _ in 0..3 {
        h.post(&mut q, &Wr::new(wqe_op::NOP));
    }
    run(&mut [&mut h], 0);
    assert_eq!(h.poll(&mut cq).unwrap().wqe_counter, 0);
    // A second resize before the first one's RESIZE CQE is written is refused.
    h.resize_cmd(&cq, 3).unwrap();
    assert_eq!(
        h.resize_cmd(&cq, 3),
        Err((Status::BAD_RES_STATE_ERR, syn::CQ_RESIZE_PENDING))
    );
    h.fw.complete_commands(&h.mem);
    // Start over from a fresh CQ for the libmlx5 flow.
    let mut cq = h.cq(2, false);
    let mut q = h.qp(QPC_ST_RC, &cq, &cq, (4, 4, 2));
    h.connect(&q, &Path::to(0x999, lid));
    for _ in 0..3 {
        h.post(&mut q, &Wr::new(wqe_op::NOP));
    }
    run(&mut [&mut h], 0);
    assert_eq!(h.poll(&mut cq).unwrap().wqe_counter, 0);
    h.resize(&mut cq, 4);
    // The two unpolled CQEs were copied; new ones land after them in the new buffer.
    for _ in 0..5 {
        h.post(&mut q, &Wr::new(wqe_op::NOP));
    }
    run(&mut [&mut h], 0);
    let got: Vec<u16> = h.poll_all(&mut cq).iter().map(|c| c.wqe_counter).collect();
    assert_eq!(got, vec![1, 2, 3, 4, 5, 6, 7]);
    assert!(h.events().is_empty(), "no overrun, no event");
}

#[test]
fn a_small_budget_serves_every_qp_in_turn() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut cq = h.cq(8, false);
    let lid = h.lid();
    let mut qps: Vec<QpH> = (0..20)
        .map(|_| h.qp(QPC_ST_RC, &cq, &cq, (6, 2, 2)))
        .collect();
    for q in qps.iter_mut() {
        h.connect(q, &Path::to(0x999, lid));
        for _ in 0..40 {
            let mut n = Wr::new(wqe_op::NOP);
            n.signaled = false;
            h.post(q, &n);
        }
        h.post(q, &Wr::new(wqe_op::NOP));
    }
    // 20 QPs with 41 WQEs each, 16 per QP per round: a budget of 16 per call.
    let mut calls = 0;
    loop {
        let r = run_budget(&mut h, 16);
        calls += 1;
        if !r.more {
            break;
        }
        assert!(calls < 200, "every QP gets its turn");
    }
    let done: Vec<u32> = h.poll_all(&mut cq).iter().map(|c| c.qpn).collect();
    assert_eq!(done.len(), 20);
}

#[test]
fn a_pass_gives_way_to_a_waiting_command_after_one_wqe() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut cq = h.cq(8, false);
    let lid = h.lid();
    let mut q = h.qp(QPC_ST_RC, &cq, &cq, (6, 2, 2));
    h.connect(&mut q, &Path::to(0x999, lid));
    for _ in 0..10 {
        h.post(&mut q, &Wr::new(wqe_op::NOP));
    }
    // A command waits from the start: each pass executes one WQE, then gives way (`more`).
    let asked = core::cell::Cell::new(0u32);
    let waiting = || {
        asked.set(asked.get() + 1);
        true
    };
    for n in 1..=10u32 {
        let r = {
            let mut nodes = [Node {
                fw: &mut h.fw,
                mem: &h.mem,
                wire: None,
            }];
            engine::run(&mut nodes, 0, 256, &waiting)
        };
        assert_eq!(r.wqes, 1, "pass {n}: one WQE, then the command's turn");
        assert!(r.more, "pass {n}: the worker must come back");
    }
    assert!(asked.get() >= 10);
    assert_eq!(
        h.poll_all(&mut cq).len(),
        10,
        "every WQE completed, one per pass"
    );
    // Nothing waits: one pass executes everything posted and asks for no other.
    for _ in 0..10 {
        h.post(&mut q, &Wr::new(wqe_op::NOP));
    }
    let r = run_budget(&mut h, 256);
    assert_eq!((r.wqes, r.more), (10, false));
    assert_eq!(h.poll_all(&mut cq).len(), 10);
}

fn run_budget(h: &mut Host, budget: u32) -> RunResult {
    let mut nodes = [Node {
        fw: &mut h.fw,
        mem: &h.mem,
        wire: None,
    }];
    engine::run(&mut nodes, 0, budget, &|| false)
}

#[test]
fn atomic_caps_page_gives_ib_atomic_hca() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let op_mod = (CAP_ATOMIC << 1) | HCA_CAP_OPMOD_GET_CUR;
    let out = ok(
        &mut h.fw,
        &inbox(op::QUERY_HCA_CAP, 0, op_mod, 16),
        query_hca_cap_out::SIZE_BYTES,
    );
    let g = |f| query_hca_cap_out::capability.inner(f).get(&out).unwrap();
    // upstream get_atomic_caps(): CMP_SWAP | FETCH_ADD, 8-byte QP atomics, host endianness.
    assert_eq!(g(atomic_caps::atomic_operations) & 3, 3);
    assert_ne!(g(atomic_caps::atomic_size_qp) & (1 << 3), 0);
    assert_eq!(g(atomic_caps::atomic_req_8B_endianness_mode), 1);
}

#[test]
fn destroy_with_pending_work_leaves_nothing_dangling() {
    let mut p = pair(QPC_ST_RC);
    let mut a = p.a;
    let m = p.h.mr(4096, ALL);
    for _ in 0..5 {
        p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(m.sge(0, 8)));
    }
    p.h.arm(&mut p.scq, false, true);
    ok(
        &mut p.h.fw,
        &destroy_in(op::DESTROY_QP, 0, destroy_qp_in::qpn, a.qpn),
        16,
    );
    assert_eq!(p.run(0).wqes, 0);
    assert!(p.sends().is_empty());
    // A destroyed CQ's pending events go with it.
    p.h.modify(&p.b, op::_2ERR_QP);
    let b = p.b;
    p.h.post_recv(&mut p.b, &[m.sge(0, 8)]);
    p.h.arm(&mut p.rcq, false, true);
    p.run(0);
    ok(
        &mut p.h.fw,
        &destroy_in(op::DESTROY_QP, 0, destroy_qp_in::qpn, b.qpn),
        16,
    );
    ok(
        &mut p.h.fw,
        &destroy_in(op::DESTROY_CQ, 0, destroy_cq_in::cqn, p.rcq.cqn),
        16,
    );
    assert!(p.h.events().is_empty());
}

// ---------------------------------------------------------------------------------------
// Fuzzing.

/// xorshift64* (as in fuzz_tests.rs): deterministic, no crates.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

/// A random but plausible segment list: real keys (or near misses) and addresses in or
/// around the MRs, random lengths, sometimes inline data, sometimes garbage.
fn fuzz_wr(rng: &mut Rng, mrs: &[Mr]) -> Wr {
    let any = rng.next() as u8;
    let opcode = rng.pick(&[
        wqe_op::NOP,
        wqe_op::RDMA_WRITE,
        wqe_op::RDMA_WRITE_IMM,
        wqe_op::SEND,
        wqe_op::SEND_IMM,
        wqe_op::RDMA_READ,
        wqe_op::ATOMIC_CS,
        wqe_op::ATOMIC_FA,
        any,
    ]);
    let mut w = Wr::new(opcode);
    w.signaled = rng.chance(70);
    w.solicited = rng.chance(30);
    w.imm = rng.next() as u32;
    let key = |rng: &mut Rng| {
        let m = rng.pick(mrs);
        match rng.below(10) {
            0 => rng.next() as u32,
            1 => m.key ^ 1,
            2 => INVALID_LKEY,
            _ => m.key,
        }
    };
    let addr = |rng: &mut Rng| {
        let m = rng.pick(mrs);
        match rng.below(10) {
            0 => rng.next(),
            1 => m.bus,
            _ => m.va + rng.below(4200),
        }
    };
    let len = |rng: &mut Rng| match rng.below(10) {
        0 => rng.next() as u32,
        1 => 0,
        _ => rng.below(3000) as u32,
    };
    if matches!(
        opcode,
        wqe_op::RDMA_WRITE
            | wqe_op::RDMA_WRITE_IMM
            | wqe_op::RDMA_READ
            | wqe_op::ATOMIC_CS
            | wqe_op::ATOMIC_FA
    ) || rng.chance(10)
    {
        let a = addr(rng);
        w.remote = Some((if rng.chance(80) { a & !7 } else { a }, key(rng)));
    }
    if matches!(opcode, wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA) {
        w.atomic = Some((rng.next(), rng.next()));
    }
    if rng.chance(15) {
        let n = rng.below(300) as usize;
        w.inline = Some((0..n).map(|_| rng.next() as u8).collect());
    } else {
        for _ in 0..rng.below(5) {
            w.sges.push((key(rng), addr(rng), len(rng)));
        }
    }
    if rng.chance(10) {
        w.ds = Some(rng.next() as u8);
    }
    w
}

#[test]
fn fuzz_queues_doorbells_and_commands() {
    let mut rng = Rng(0x5eed_0ff0_0dca_fe01);
    let mut total = (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    for round in 0..120 {
        let mut h1 = Host::new(LinkLayer::Ib, 1);
        let mut h2 = Host::new(LinkLayer::Ib, 2);
        let lids = [h1.lid(), h2.lid()];
        let mut cqs: [Vec<CqH>; 2] = [Vec::new(), Vec::new()];
        let mut mrs: [Vec<Mr>; 2] = [Vec::new(), Vec::new()];
        let mut canaries = Vec::new();
        for (i, h) in [&mut h1, &mut h2].into_iter().enumerate() {
            for _ in 0..3 {
                let log = 1 + rng.below(4) as u32;
                cqs[i].push(h.cq(log, rng.chance(30)));
            }
            for _ in 0..3 {
                let acc = MrAccess {
                    lw: rng.chance(80),
                    rr: rng.chance(80),
                    rw: rng.chance(80),
                    a: rng.chance(80),
                };
                let mr = h.mr(4096 + rng.below(8192) as usize, acc);
                // Half of them may be changed by UMR WQEs (upstream's rereg, below).
                if rng.chance(50) {
                    let m = h.fw.mkeys.get_mut(mr.key >> 8).unwrap();
                    mkc::umr_en.set(&mut m.mkc, 1).unwrap();
                }
                mrs[i].push(mr);
            }
            // Read-only memory behind a fully writable mkey: the device may try, never write.
            let ro = h.mem.map(4096, false);
            let content: Vec<u8> = (0..4096).map(|_| rng.next() as u8).collect();
            h.mem.put(ro, &content);
            mrs[i].push(h.mr_at(ro, 4096, ALL));
            canaries.push((i, ro, content));
            // An indirect mkey (zero-based) that UMR WQEs below give random layouts.
            let key = dv_mkey(h);
            mrs[i].push(Mr { key, va: 0, bus: 0 });
        }
        // QP pairs across the two functions (and one loopback pair on h1).
        let mut qps: Vec<(usize, QpH, Path)> = Vec::new();
        for k in 0..4 {
            let st = rng.pick(&[QPC_ST_RC, QPC_ST_RC, QPC_ST_UC, QPC_ST_UD]);
            let sizes = (
                rng.below(5) as u32,
                rng.below(5) as u32,
                rng.below(4) as u32,
            );
            let (ia, ib) = if k == 3 { (0, 0) } else { (0, 1) };
            let ca = rng.below(3) as usize;
            let cb = rng.below(3) as usize;
            let a = h1.qp(st, &cqs[0][ca], &cqs[0][ca], sizes);
            let b = if ib == 1 {
                h2.qp(st, &cqs[1][cb], &cqs[1][cb], sizes)
            } else {
                h1.qp(st, &cqs[0][cb], &cqs[0][cb], sizes)
            };
            let mut pa = Path::to(b.qpn, lids[ib]);
            pa.retry = rng.below(3) as u32;
            pa.rnr_retry = rng.pick(&[0, 1, 7]);
            pa.ack_timeout = rng.below(4) as u32;
            pa.min_rnr_nak = rng.below(32) as u32;
            pa.mtu = 1 + rng.below(5) as u32;
            pa.remote_access = rng.chance(80);
            let mut pb = pa;
            pb.qpn = a.qpn;
            pb.lid = lids[ia];
            h1.connect(&a, &pa);
            if ib == 1 {
                h2.connect(&b, &pb);
            } else {
                h1.connect(&b, &pb);
            }
            qps.push((ia, a, pa));
            qps.push((ib, b, pb));
        }
        let mut now = 0u64;
        for _ in 0..40 {
            let n = rng.below(qps.len() as u64) as usize;
            let (hi, mut q, path) = qps[n];
            let h: &mut Host = if hi == 0 { &mut h1 } else { &mut h2 };
            let m = &mrs[hi];
            match rng.below(12) {
                0..=3 => {
                    let mut w = fuzz_wr(&mut rng, m);
                    if q.st == QPC_ST_UD || rng.chance(5) {
                        w.ah = Some(Ah {
                            dqpn: qps[rng.below(qps.len() as u64) as usize].1.qpn,
                            qkey: {
                                let any = rng.next() as u32;
                                rng.pick(&[0x1111_1111, any, 0x8000_0000])
                            },
                            rlid: rng.pick(&lids),
                            sl: rng.next() as u8,
                            grh: rng.chance(50).then(|| ([0xfe; 16], rng.next() as u8)),
                            eth: false,
                        });
                    }
                    if encode(&q, &w).len() <= 64 << q.log_sq {
                        h.post(&mut q, &w);
                    }
                }
                4 | 5 => {
                    let sges: Vec<(u32, u64, u32)> = (0..rng.below(4))
                        .map(|_| {
                            let x = rng.pick(m);
                            (x.key, x.va + rng.below(4096), rng.below(5000) as u32)
                        })
                        .collect();
                    if sges.len() * 16 <= q.rq_stride as usize {
                        h.post_recv(&mut q, &sges);
                    }
                }
                6 => {
                    // Raw garbage in the queue buffer.
                    let len = (q.sq_off + (64 << q.log_sq)) as usize;
                    let at = rng.below(len as u64);
                    let n = (rng.below(64) as usize).min(len - at as usize);
                    let g: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                    h.mem.put(q.buf + at, &g);
                }
                7 => {
                    // Random doorbell records.
                    h.mem.put32(q.dbr, rng.next() as u32);
                    h.mem.put32(q.dbr + 4, rng.next() as u32);
                }
                8 => {
                    let c = rng.below(3) as usize;
                    let cq = &mut cqs[hi][c];
                    if rng.chance(50) {
                        h.arm(cq, rng.chance(50), rng.chance(50));
                        cq.arm_sn += 1;
                    } else {
                        h.mem.put32(cq.dbr, rng.next() as u32);
                        h.fw.cq_doorbell(h.uar, rng.next());
                        h.fw.sq_doorbell(h.uar, rng.next());
                    }
                }
                9 if rng.chance(40) => h.modify(&q, op::_2ERR_QP),
                9 => {
                    // Back to RESET and up again, as libmlx5 resets its indices.
                    h.modify(&q, op::_2RST_QP);
                    h.mem.put(q.dbr, &[0; 8]);
                    q.cur_post = 0;
                    q.rq_head = 0;
                    h.connect(&q, &path);
                }
                10 => {
                    let c = rng.below(3) as usize;
                    for c in h.poll_all(&mut cqs[hi][c]) {
                        match c.opcode {
                            cqe_op::REQ | cqe_op::RESP_SEND | cqe_op::RESP_SEND_IMM => total.4 += 1,
                            _ => total.5 += 1,
                        }
                    }
                }
                11 if rng.chance(50) => {
                    // A UMR layout WQE for the indirect key (the last of `m`): a KLM list or
                    // a repeated block over random keys, addresses and lengths.
                    let ind = m[m.len() - 1].key;
                    let ent = |rng: &mut Rng| {
                        let x = rng.pick(&m[..m.len() - 1]);
                        let key = if rng.chance(10) {
                            rng.next() as u32
                        } else {
                            x.key
                        };
                        (key, x.va + rng.below(4096), rng.below(2048) as u32)
                    };
                    let (xlat, len) = if rng.chance(50) {
                        let e: Vec<_> = (0..1 + rng.below(4)).map(|_| ent(&mut rng)).collect();
                        let len = e.iter().map(|e| u64::from(e.2)).sum::<u64>();
                        (klms(&e), len)
                    } else {
                        let rep = 1 + rng.below(4) as u32;
                        let e: Vec<_> = (0..1 + rng.below(3))
                            .map(|_| {
                                let (k, a, l) = ent(&mut rng);
                                (k, a, l as u16 % 300, rng.below(600) as u16)
                            })
                            .collect();
                        let len = u64::from(rep) * e.iter().map(|e| u64::from(e.2)).sum::<u64>();
                        (repeat_block(rep, &e), len)
                    };
                    let len = if rng.chance(10) {
                        rng.next() % 8192
                    } else {
                        len
                    };
                    let acc = rng.next() as u8 & 0x78;
                    let w = umr_layout_wqe(&q, ind, acc, len, &xlat);
                    if w.len() <= 64 << q.log_sq {
                        h.post_bytes(&mut q, &w);
                    }
                }
                11 if rng.chance(50) => {
                    // upstream's rereg UMR on a random MR: random rights, maybe another PD.
                    let x = rng.pick(m);
                    let pd = if rng.chance(80) {
                        h.pd
                    } else {
                        rng.next() as u32
                    };
                    let w = umr_rereg_wqe(&q, x.key, rng.next() as u8 & 0x78, pd);
                    if w.len() <= 64 << q.log_sq {
                        h.post_bytes(&mut q, &w);
                    }
                }
                11 if rng.chance(50) => {
                    // upstream's translation change on a random MR: the revoke, or new MTTs
                    // (over the MRs' pages or garbage) read through another MR's key from
                    // its memory (not the canary's, the last but one).
                    let x = rng.pick(m);
                    let w = if rng.chance(30) {
                        umr_revoke_wqe(&q, x.key, h.pd)
                    } else {
                        let y = rng.pick(&m[..m.len() - 2]);
                        let n = 1 + rng.below(4);
                        let mut mtts = Vec::new();
                        for _ in 0..n {
                            let p = rng.pick(&m[..m.len() - 1]).bus & !0xfff;
                            let a = if rng.chance(10) { rng.next() } else { p };
                            mtts.extend_from_slice(&(a | 3).to_be_bytes());
                        }
                        h.mem.put(y.bus, &mtts);
                        let octo = (n.div_ceil(2) + u64::from(rng.chance(10))) as u16;
                        let va = (rng.next() & 0xffff_ffff_f000) | rng.below(4096);
                        let len = rng.below(n * 4096 + 1);
                        let acc = rng.next() as u8 & 0x78;
                        umr_pas_wqe(&q, x.key, h.pd, acc, va, len, octo, (y.key, y.va))
                    };
                    if w.len() <= 64 << q.log_sq {
                        h.post_bytes(&mut q, &w);
                    }
                }
                _ => now += rng.below(10_000_000_000),
            }
            qps[n].1 = q;
            // Mostly keep the fabric busy with fresh work rather than garbage.
            let (hi, mut q, _) = qps[rng.below(qps.len() as u64) as usize];
            if rng.chance(60) && q.st != QPC_ST_UD {
                let h: &mut Host = if hi == 0 { &mut h1 } else { &mut h2 };
                let m = &mrs[hi];
                let x = rng.pick(m);
                if rng.chance(50) {
                    let wr = Wr::new(wqe_op::SEND).sge(x.sge(0, rng.below(100) as u32));
                    h.post(&mut q, &wr);
                } else if q.rq_stride >= 32 {
                    h.post_recv(&mut q, &[x.sge(0, 4096)]);
                }
                if let Some(e) = qps.iter_mut().find(|e| e.1.qpn == q.qpn && e.0 == hi) {
                    e.1 = q;
                }
            }
            let budget = 1 + rng.below(300) as u32;
            let mut nodes = vec![
                Node {
                    fw: &mut h1.fw,
                    mem: &h1.mem,
                    wire: None,
                },
                Node {
                    fw: &mut h2.fw,
                    mem: &h2.mem,
                    wire: None,
                },
            ];
            let r = engine::run(&mut nodes, now, budget, &|| false);
            assert!(r.wqes <= budget, "round {round}: {r:?}");
            total.0 += u64::from(r.wqes);
            total.1 += u64::from(r.more);
            for h in [&mut h1, &mut h2] {
                let mut n = 0;
                while h.fw.next_event().is_some() {
                    total.2 += 1;
                    n += 1;
                    assert!(n <= capacity::CQ + 6 * capacity::QP, "events must run out");
                }
            }
        }
        total.3 += u64::from(h1.mem.faults() + h2.mem.faults());
        for (i, ro, content) in &canaries {
            let h = if *i == 0 { &h1 } else { &h2 };
            assert_eq!(
                &h.mem.get(*ro, 4096),
                content,
                "round {round}: read-only memory"
            );
        }
    }
    std::eprintln!("fuzz: wqes, budget-outs, events, faults, good CQEs, error CQEs = {total:?}");
    assert!(
        total.0 > 500 && total.2 > 10 && total.4 > 10,
        "the fuzzer reached the data path: {total:?}"
    );
}

// ---------------------------------------------------------------------------------------
// SRQ (RMP): the linked list of WQEs as libmlx5 44 lays it out (`providers/mlx5/srq.c`).

/// An SRQ as libmlx5 keeps it: `mlx5_alloc_srq_buf()` links WQE i to i + 1, `head` 0 and
/// `tail` the last WQE; `mlx5_post_srq_recv()` fills the head and follows its
/// `next_wqe_index`; `mlx5_free_srq_wqe()` links a completed WQE after the tail.
struct SrqH {
    rmpn: u32,
    buf: u64,
    dbr: u64,
    shift: u32,
    max_gs: usize,
    head: u16,
    tail: u16,
    counter: u16,
}

impl Host {
    /// CREATE_RMP of `2^log` WQEs of `2^shift` bytes (as `create_rmp_cmd()` fills it).
    fn srq(&mut self, log: u32, shift: u32, lwm: u32) -> SrqH {
        self.rmp(log, shift, lwm, WQ_TYPE_LINKED_LIST)
    }

    /// CREATE_RMP of `wq_type` `ty`.
    fn rmp(&mut self, log: u32, shift: u32, lwm: u32, ty: u32) -> SrqH {
        let len = 1usize << (log + shift);
        let buf = self.mem.map(len, false);
        let n = 1u16 << log;
        for i in 0..n {
            let at = buf + (u64::from(i) << shift) + 2;
            self.mem
                .put(at, &(i.wrapping_add(1) & (n - 1)).to_be_bytes());
        }
        let dbr = self.mem.map(8, true);
        let pages = len.div_ceil(4096);
        let mut b = inbox(op::CREATE_RMP, 0, 0, create_rmp_in::SIZE_BYTES + 8 * pages);
        let w = |f| create_rmp_in::ctx.inner(rmpc::wq.inner(f));
        create_rmp_in::ctx
            .inner(rmpc::state)
            .set(&mut b, RMPC_STATE_RDY)
            .unwrap();
        w(wq::wq_type).set(&mut b, ty).unwrap();
        w(wq::log_wq_stride).set(&mut b, shift).unwrap();
        w(wq::log_wq_sz).set(&mut b, log).unwrap();
        w(wq::lwm).set(&mut b, lwm).unwrap();
        w(wq::pd).set(&mut b, self.pd).unwrap();
        w(wq::dbr_addr).set64(&mut b, dbr).unwrap();
        for p in 0..pages {
            let at = create_rmp_in::SIZE_BYTES + 8 * p;
            b[at..at + 8].copy_from_slice(&(buf + 4096 * p as u64).to_be_bytes());
        }
        let out = ok(&mut self.fw, &b, create_rmp_out::SIZE_BYTES);
        SrqH {
            rmpn: create_rmp_out::rmpn.get(&out).unwrap(),
            buf,
            dbr,
            shift,
            max_gs: (1 << shift) / 16 - 1,
            head: 0,
            tail: n - 1,
            counter: 0,
        }
    }

    /// A QP of service `st` receiving from `srq` (`rq_type` SRQ, as `create_qp_common()`).
    fn srq_qp(&mut self, st: u32, scq: &CqH, rcq: &CqH, log_sq: u32, srq: &SrqH) -> QpH {
        let len = 64usize << log_sq;
        let buf = self.mem.map(len, true);
        let dbr = self.mem.map(8, true);
        let pages = len.div_ceil(4096);
        let mut b = inbox(op::CREATE_QP, 0, 0, create_qp_in::SIZE_BYTES + 8 * pages);
        let q = |f| create_qp_in::qpc.inner(f);
        q(qpc::st).set(&mut b, st).unwrap();
        q(qpc::pd).set(&mut b, self.pd).unwrap();
        q(qpc::uar_page).set(&mut b, self.uar).unwrap();
        q(qpc::cqn_snd).set(&mut b, scq.cqn).unwrap();
        q(qpc::cqn_rcv).set(&mut b, rcq.cqn).unwrap();
        q(qpc::rq_type).set(&mut b, SRQ_RQ).unwrap();
        q(qpc::srqn_rmpn_xrqn).set(&mut b, srq.rmpn).unwrap();
        q(qpc::log_sq_size).set(&mut b, log_sq).unwrap();
        q(qpc::log_msg_max).set(&mut b, 30).unwrap();
        q(qpc::user_index).set(&mut b, 0x5000 + log_sq).unwrap();
        q(qpc::dbr_addr).set64(&mut b, dbr).unwrap();
        for p in 0..pages {
            let at = create_qp_in::SIZE_BYTES + 8 * p;
            b[at..at + 8].copy_from_slice(&(buf + 4096 * p as u64).to_be_bytes());
        }
        let out = ok(&mut self.fw, &b, create_qp_out::SIZE_BYTES);
        QpH {
            qpn: create_qp_out::qpn.get(&out).unwrap(),
            st,
            uidx: 0x5000 + log_sq,
            buf,
            dbr,
            sq_off: 0,
            log_sq,
            log_rq: 0,
            rq_stride: 16,
            cur_post: 0,
            rq_head: 0,
        }
    }

    /// `mlx5_post_srq_recv()`: one WQE at the head; `Err` when full (head == tail).
    fn post_srq(&mut self, s: &mut SrqH, sges: &[(u32, u64, u32)]) -> Result<u16, ()> {
        if s.head == s.tail {
            return Err(());
        }
        let idx = s.head;
        let at = s.buf + (u64::from(idx) << s.shift);
        let next = self.mem.get(at + 2, 2);
        s.head = u16::from_be_bytes([next[0], next[1]]);
        let mut w = vec![0u8; (1 << s.shift) - 16];
        for (i, (lkey, addr, len)) in sges.iter().enumerate() {
            data_seg(&mut w[i * 16..], *lkey, *addr, *len);
        }
        if sges.len() < s.max_gs {
            data_seg(&mut w[sges.len() * 16..], INVALID_LKEY, 0, 0);
        }
        self.mem.put(at + 16, &w);
        s.counter = s.counter.wrapping_add(1);
        self.mem.put32(s.dbr, u32::from(s.counter));
        Ok(idx)
    }

    /// `mlx5_free_srq_wqe()` for the CQE's `wqe_counter`.
    fn free_srq(&mut self, s: &mut SrqH, ind: u16) {
        let at = s.buf + (u64::from(s.tail) << s.shift) + 2;
        self.mem.put(at, &ind.to_be_bytes());
        s.tail = ind;
    }

    fn arm_srq(&mut self, s: &SrqH, lwm: u32) -> (Status, u32) {
        let mut b = inbox(op::MODIFY_RMP, 0, 0, modify_rmp_in::SIZE_BYTES);
        modify_rmp_in::rmp_state
            .set(&mut b, RMPC_STATE_RDY)
            .unwrap();
        modify_rmp_in::rmpn.set(&mut b, s.rmpn).unwrap();
        modify_rmp_in::bitmask
            .inner(rmp_bitmask::lwm)
            .set(&mut b, 1)
            .unwrap();
        let ctx = modify_rmp_in::ctx;
        ctx.inner(rmpc::state).set(&mut b, RMPC_STATE_RDY).unwrap();
        ctx.inner(rmpc::wq.inner(wq::lwm)).set(&mut b, lwm).unwrap();
        let (c, _) = super::tests::run(&mut self.fw, &b, 16);
        (c.status, c.syndrome)
    }

    fn query_srq(&mut self, s: &SrqH) -> (u32, u32) {
        let mut b = inbox(op::QUERY_RMP, 0, 0, query_rmp_in::SIZE_BYTES);
        query_rmp_in::rmpn.set(&mut b, s.rmpn).unwrap();
        let out = ok(&mut self.fw, &b, query_rmp_out::SIZE_BYTES);
        let w = |f| query_rmp_out::rmp_context.inner(rmpc::wq.inner(f));
        (
            w(wq::lwm).get(&out).unwrap(),
            w(wq::hw_counter).get(&out).unwrap(),
        )
    }
}

#[test]
fn srq_feeds_several_qps_in_list_order_with_limit_and_rnr() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut scq = h.cq(6, false);
    let mut rcq = h.cq(6, false);
    // 8 WQEs of 32 bytes (the next segment and one data segment), as libmlx5 lays out
    // max_sge 1.
    let mut s = h.srq(3, 5, 0);
    let a = h.qp(QPC_ST_RC, &scq, &rcq, (6, 6, 2));
    let b1 = h.srq_qp(QPC_ST_RC, &scq, &rcq, 6, &s);
    let b2 = h.srq_qp(QPC_ST_RC, &scq, &rcq, 5, &s);
    let a2 = h.qp(QPC_ST_RC, &scq, &rcq, (6, 6, 2));
    let lid = h.lid();
    h.connect(&a, &Path::to(b1.qpn, lid));
    h.connect(&b1, &Path::to(a.qpn, lid));
    h.connect(&a2, &Path::to(b2.qpn, lid));
    h.connect(&b2, &Path::to(a2.qpn, lid));
    let src = h.mr(4096, ALL);
    let dst = h.mr(8 * 512, ALL);
    for i in 0..20u8 {
        h.mem.put(src.bus + u64::from(i) * 100, &pattern(100, i));
    }
    // Three receives: indices 0, 1, 2.
    for i in 0..3u64 {
        assert_eq!(h.post_srq(&mut s, &[dst.sge(i * 512, 512)]), Ok(i as u16));
    }
    // Arm the limit at 2: the first consumption leaves 2 (not below), the second 1.
    assert_eq!(h.arm_srq(&s, 2), (Status::OK, 0));
    assert_eq!(h.query_srq(&s), (2, 0));
    let (mut a, mut a2) = (a, a2);
    h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 100)));
    h.post(&mut a2, &Wr::new(wqe_op::SEND).sge(src.sge(100, 100)));
    run(&mut [&mut h], 0);
    let rv = h.poll_all(&mut rcq);
    assert_eq!(rv.len(), 2);
    // Each QP's CQE names the SRQ WQE it consumed, in the list's order.
    // (Which QP the engine served first depends on its scan order.)
    let mut got: Vec<(u32, u32)> = rv.iter().map(|c| (c.qpn, c.uidx)).collect();
    got.sort();
    assert_eq!(got, [(b1.qpn, b1.uidx), (b2.qpn, b2.uidx)]);
    let mut wqes: Vec<u16> = rv.iter().map(|c| c.wqe_counter).collect();
    wqes.sort();
    assert_eq!(wqes, [0, 1]);
    let by_wqe = |w: u16| rv.iter().find(|c| c.wqe_counter == w).unwrap().qpn;
    let first = if by_wqe(0) == b1.qpn { 0 } else { 100 };
    let second = 100 - first;
    assert_eq!(
        h.mem.get(dst.bus + 512, 100),
        h.mem.get(src.bus + second, 100)
    );
    assert_eq!(h.mem.get(dst.bus, 100), h.mem.get(src.bus + first, 100));
    assert_eq!(
        h.events(),
        [Event::Srq {
            srqn: s.rmpn,
            kind: SrqEvent::Limit
        }]
    );
    // Fired once: disarmed.
    assert_eq!(h.query_srq(&s), (0, 2));
    h.free_srq(&mut s, 0);
    h.free_srq(&mut s, 1);
    // The freed WQEs come back after the tail (7): posting walks 3..=7, then 0; 1 is the
    // new tail, which libmlx5 never posts.
    let mut posted = Vec::new();
    while let Ok(i) = h.post_srq(&mut s, &[dst.sge(0, 512)]) {
        posted.push(i);
    }
    assert_eq!(posted, [3, 4, 5, 6, 7, 0]);
    // 7 posted now (index 2 still posted): consumed in list order.
    let mut seen = Vec::new();
    for _ in 0..7 {
        h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 10)));
        run(&mut [&mut h], 0);
        let c = h.poll_all(&mut rcq);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].opcode, c[0].byte_cnt), (cqe_op::RESP_SEND, 10));
        seen.push(c[0].wqe_counter);
        let _ = h.poll_all(&mut scq);
    }
    assert_eq!(seen, [2, 3, 4, 5, 6, 7, 0]);
    // Empty: an RC send waits on RNR, and the limit (not armed) raises nothing.
    h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 10)));
    let r = run(&mut [&mut h], 1000);
    assert!(r.next_deadline_ns.is_some());
    assert!(h.poll_all(&mut rcq).is_empty());
    assert!(h.events().is_empty());
    assert_eq!(h.mem.faults(), 0);
}

/// UCX's cyclic SRQ (`uct_rc_mlx5_iface_srq_post_recv()`): WQE `i` at ring slot `i mod size`,
/// the doorbell record the posted count.
fn post_cyclic(h: &mut Host, s: &mut SrqH, sge: (u32, u64, u32)) {
    let at = s.buf + (u64::from(s.counter & s.tail) << s.shift);
    // UCX keeps its own bookkeeping in the first segment; the device ignores it.
    h.mem.put(at, &[0xa5; 16]);
    let mut w = vec![0u8; 16];
    data_seg(&mut w, sge.0, sge.1, sge.2);
    h.mem.put(at + 16, &w);
    s.counter = s.counter.wrapping_add(1);
    h.mem.put32(s.dbr, u32::from(s.counter));
}

#[test]
fn cyclic_rmp_consumes_in_ring_order_and_reports_the_count() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut scq = h.cq(6, false);
    let mut rcq = h.cq(6, false);
    // 4 WQEs of 32 bytes, cyclic.
    let mut s = h.rmp(2, 5, 0, WQ_TYPE_CYCLIC);
    let mut a = h.qp(QPC_ST_RC, &scq, &rcq, (6, 6, 2));
    let b = h.srq_qp(QPC_ST_RC, &scq, &rcq, 6, &s);
    let lid = h.lid();
    h.connect(&a, &Path::to(b.qpn, lid));
    h.connect(&b, &Path::to(a.qpn, lid));
    let src = h.mr(4096, ALL);
    let dst = h.mr(4 * 256, ALL);
    for i in 0..4u64 {
        post_cyclic(&mut h, &mut s, dst.sge(i * 256, 256));
    }
    let mut counters = Vec::new();
    for i in 0..6u8 {
        h.mem.put(src.bus, &pattern(64, i));
        h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 64)));
        run(&mut [&mut h], 0);
        let c = h.poll_all(&mut rcq);
        assert_eq!(c.len(), 1, "message {i}");
        assert_eq!((c[0].opcode, c[0].byte_cnt), (cqe_op::RESP_SEND, 64));
        counters.push(c[0].wqe_counter);
        // Slot i mod 4 got message i.
        let slot = u64::from(i % 4) * 256;
        assert_eq!(h.mem.get(dst.bus + slot, 64), pattern(64, i));
        let _ = h.poll_all(&mut scq);
        // Repost the consumed slot after the first four, as UCX does.
        if i >= 2 {
            let n = u64::from(s.counter & s.tail) * 256;
            post_cyclic(&mut h, &mut s, dst.sge(n, 256));
        }
    }
    // The CQE reports the running count, not the slot (UCX masks it).
    assert_eq!(counters, [0, 1, 2, 3, 4, 5]);
    assert_eq!(h.query_srq(&s), (0, 6));
    assert_eq!(h.mem.faults(), 0);
}

/// RMPs under random use (UCX's cyclic receive queue in a umem, libmlx5's linked list): WQEs
/// with good and garbage segments, garbage written over the ring, random doorbell counters,
/// limit arms, and SENDs of random lengths into them. The device never panics, writes only the
/// destination MR (the canary around it stays), and every CQE it writes is one a requester or
/// responder may see.
#[test]
fn fuzz_rmp_receives() {
    let mut rng = Rng(0x0dd_ba11_5eed_f00d);
    let mut delivered = [0u32; 2];
    for _round in 0..80 {
        let mut h = Host::new(LinkLayer::Ib, 1);
        let mut scq = h.cq(7, false);
        let mut rcq = h.cq(7, false);
        let cyclic = rng.chance(50);
        let log = 1 + rng.below(4) as u32;
        let shift = 5 + rng.below(3) as u32;
        let ty = if cyclic {
            WQ_TYPE_CYCLIC
        } else {
            WQ_TYPE_LINKED_LIST
        };
        let mut s = h.rmp(log, shift, 0, ty);
        let mut a = h.qp(QPC_ST_RC, &scq, &scq, (6, 0, 1));
        let b = h.srq_qp(QPC_ST_RC, &scq, &rcq, 6, &s);
        let lid = h.lid();
        h.connect(&a, &Path::to(b.qpn, lid));
        h.connect(&b, &Path::to(a.qpn, lid));
        let src = h.mr(4096, ALL);
        let canary = h.mem.map(4096, true);
        h.mem.put(canary, &[0x3c; 4096]);
        let dst = h.mr(4096, ALL);
        let canary_mr = h.mr_at(canary, 4096, ALL);
        for _ in 0..40 {
            let sge = match rng.below(10) {
                0 => (rng.next() as u32, rng.next(), rng.below(8192) as u32),
                1 => {
                    let off = rng.below(4096);
                    dst.sge(off, rng.below(4097 - off) as u32)
                }
                _ => {
                    let off = rng.below(2048);
                    dst.sge(off, (4096 - off) as u32)
                }
            };
            match rng.below(16) {
                0..=5 => {
                    if cyclic {
                        post_cyclic(&mut h, &mut s, sge);
                    } else {
                        let _ = h.post_srq(&mut s, &[sge]);
                    }
                }
                6 => {
                    let slot = rng.below(1 << log);
                    let at = s.buf + (slot << shift);
                    let mut junk: Vec<u8> =
                        (0..1usize << shift).map(|_| rng.next() as u8).collect();
                    // A linked list's next index stays in the ring (the host's own
                    // bookkeeping follows it); the device may still find any list shape.
                    if !cyclic {
                        let next = rng.below(1 << log) as u16;
                        junk[2..4].copy_from_slice(&next.to_be_bytes());
                    }
                    h.mem.put(at, &junk);
                }
                7 => h.mem.put32(s.dbr, rng.next() as u32),
                8 => {
                    let _ = h.arm_srq(&s, rng.below(1 << log) as u32);
                }
                _ => {
                    let len = rng.below(600) as u32;
                    h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, len)));
                    run(&mut [&mut h], 0);
                    for c in h.poll_all(&mut rcq) {
                        assert!(
                            matches!(c.opcode, cqe_op::RESP_SEND | cqe_op::RESP_ERR),
                            "receive CQE opcode {}",
                            c.opcode
                        );
                        delivered[usize::from(c.opcode == cqe_op::RESP_ERR)] += 1;
                        if !cyclic && c.opcode == cqe_op::RESP_SEND {
                            h.free_srq(&mut s, c.wqe_counter);
                        }
                    }
                    for c in h.poll_all(&mut scq) {
                        assert!(matches!(c.opcode, cqe_op::REQ | cqe_op::REQ_ERR));
                    }
                }
            }
        }
        // Only the destination MR is written: the canary next to it keeps its bytes.
        assert_eq!(h.mem.get(canary_mr.bus, 4096), vec![0x3c; 4096]);
    }
    // Both outcomes were reached: messages landed, and bad WQEs failed them.
    assert!(delivered[0] > 40 && delivered[1] > 10, "{delivered:?}");
}

#[test]
fn rmp_commands_check_their_inputs_and_busy() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let cq = h.cq(4, false);
    let s = h.srq(2, 5, 0);
    // A limit not below the WQEs; an unknown RMP.
    assert_eq!(h.arm_srq(&s, 4), (Status::BAD_PARAM_ERR, syn::RMP_LWM));
    let bad = SrqH { rmpn: 0x7777, ..s };
    assert_eq!(h.arm_srq(&bad, 1).1, syn::RMP_UNKNOWN);
    // A wq_type other than linked list and cyclic (2: the striding-RQ list).
    let mut b = inbox(op::CREATE_RMP, 0, 0, create_rmp_in::SIZE_BYTES + 8);
    let w = |f| create_rmp_in::ctx.inner(rmpc::wq.inner(f));
    create_rmp_in::ctx
        .inner(rmpc::state)
        .set(&mut b, RMPC_STATE_RDY)
        .unwrap();
    w(wq::wq_type).set(&mut b, 2).unwrap();
    w(wq::log_wq_stride).set(&mut b, 5).unwrap();
    w(wq::pd).set(&mut b, h.pd).unwrap();
    let (c, _) = super::tests::run(&mut h.fw, &b, 16);
    assert_eq!(
        (c.status, c.syndrome),
        (Status::BAD_PARAM_ERR, syn::RMP_WQ_TYPE)
    );
    // A QP on a missing RMP.
    let mut b = inbox(op::CREATE_QP, 0, 0, create_qp_in::SIZE_BYTES);
    let q = |f| create_qp_in::qpc.inner(f);
    q(qpc::st).set(&mut b, QPC_ST_RC).unwrap();
    q(qpc::pd).set(&mut b, h.pd).unwrap();
    q(qpc::uar_page).set(&mut b, h.uar).unwrap();
    q(qpc::cqn_snd).set(&mut b, cq.cqn).unwrap();
    q(qpc::cqn_rcv).set(&mut b, cq.cqn).unwrap();
    q(qpc::rq_type).set(&mut b, SRQ_RQ).unwrap();
    q(qpc::srqn_rmpn_xrqn).set(&mut b, 0x7777).unwrap();
    let (c, _) = super::tests::run(&mut h.fw, &b, create_qp_out::SIZE_BYTES);
    assert_eq!((c.status, c.syndrome), (Status::BAD_RES_ERR, syn::QP_SRQ));
    // The RMP and its PD are busy while a QP uses it.
    let qp = h.srq_qp(QPC_ST_RC, &cq, &cq, 4, &s);
    assert_eq!(h.fw.counts().srq, 1);
    let (c, _) = super::tests::run(
        &mut h.fw,
        &destroy_in(op::DESTROY_RMP, 0, destroy_rmp_in::rmpn, s.rmpn),
        16,
    );
    assert_eq!((c.status, c.syndrome), (Status::RES_BUSY, syn::RMP_BUSY));
    ok(
        &mut h.fw,
        &destroy_in(op::DESTROY_QP, 0, destroy_qp_in::qpn, qp.qpn),
        16,
    );
    let (c, _) = super::tests::run(
        &mut h.fw,
        &destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, h.pd),
        16,
    );
    assert_eq!((c.status, c.syndrome), (Status::RES_BUSY, syn::PD_BUSY_RMP));
    ok(
        &mut h.fw,
        &destroy_in(op::DESTROY_RMP, 0, destroy_rmp_in::rmpn, s.rmpn),
        16,
    );
    assert_eq!(h.fw.counts().srq, 0);
}

// ---------------------------------------------------------------------------------------
// XRC: initiator QPs send to a target QP, which receives into the XRC SRQ each message names.

impl Host {
    /// ALLOC_XRCD.
    fn xrcd(&mut self) -> u32 {
        let b = inbox(op::ALLOC_XRCD, 0, 0, alloc_xrcd_in::SIZE_BYTES);
        let out = ok(&mut self.fw, &b, alloc_xrcd_out::SIZE_BYTES);
        alloc_xrcd_out::xrcd.get(&out).unwrap()
    }

    /// CREATE_XRC_SRQ of `2^log` WQEs of `2^shift` bytes in `xrcd`, completing on `cq`, as
    /// `create_xrc_srq_cmd()` fills it (the list linked as libmlx5 links it).
    fn xrc_srq(&mut self, xrcd: u32, cq: &CqH, log: u32, shift: u32, uidx: u32) -> SrqH {
        let len = 1usize << (log + shift);
        let buf = self.mem.map(len, false);
        let n = 1u16 << log;
        for i in 0..n {
            let at = buf + (u64::from(i) << shift) + 2;
            self.mem
                .put(at, &(i.wrapping_add(1) & (n - 1)).to_be_bytes());
        }
        let dbr = self.mem.map(8, true);
        let pages = len.div_ceil(4096);
        let mut b = inbox(
            op::CREATE_XRC_SRQ,
            0,
            0,
            create_xrc_srq_in::SIZE_BYTES + 8 * pages,
        );
        let x = |f| create_xrc_srq_in::xrc_srq_context_entry.inner(f);
        x(xrc_srqc::log_xrc_srq_size).set(&mut b, log).unwrap();
        x(xrc_srqc::log_rq_stride).set(&mut b, shift - 4).unwrap();
        x(xrc_srqc::xrcd).set(&mut b, xrcd).unwrap();
        x(xrc_srqc::pd).set(&mut b, self.pd).unwrap();
        x(xrc_srqc::cqn).set(&mut b, cq.cqn).unwrap();
        x(xrc_srqc::user_index).set(&mut b, uidx).unwrap();
        x(xrc_srqc::db_record_addr_h)
            .set(&mut b, (dbr >> 32) as u32)
            .unwrap();
        x(xrc_srqc::db_record_addr_l)
            .set(&mut b, (dbr as u32) >> 2)
            .unwrap();
        for p in 0..pages {
            let at = create_xrc_srq_in::SIZE_BYTES + 8 * p;
            b[at..at + 8].copy_from_slice(&(buf + 4096 * p as u64).to_be_bytes());
        }
        let out = ok(&mut self.fw, &b, create_xrc_srq_out::SIZE_BYTES);
        SrqH {
            rmpn: create_xrc_srq_out::xrc_srqn.get(&out).unwrap(),
            buf,
            dbr,
            shift,
            max_gs: (1 << shift) / 16 - 1,
            head: 0,
            tail: n - 1,
            counter: 0,
        }
    }

    /// An XRC initiator (`Some(scq)`: send queue, no receive queue) or target (`None`: no
    /// send queue, `rq_type` SRQ, no PD or CQ of its own, in `xrcd`) as our driver creates
    /// them.
    fn xrc_qp(&mut self, scq: Option<&CqH>, xrcd: u32, log_sq: u32) -> QpH {
        let len = if scq.is_some() { 64usize << log_sq } else { 0 };
        let buf = self.mem.map(len.max(64), true);
        let dbr = self.mem.map(8, true);
        let pages = len.div_ceil(4096);
        let mut b = inbox(op::CREATE_QP, 0, 0, create_qp_in::SIZE_BYTES + 8 * pages);
        let q = |f| create_qp_in::qpc.inner(f);
        q(qpc::st).set(&mut b, QPC_ST_XRC).unwrap();
        q(qpc::uar_page).set(&mut b, self.uar).unwrap();
        q(qpc::log_msg_max).set(&mut b, 30).unwrap();
        q(qpc::dbr_addr).set64(&mut b, dbr).unwrap();
        match scq {
            Some(cq) => {
                q(qpc::pd).set(&mut b, self.pd).unwrap();
                q(qpc::cqn_snd).set(&mut b, cq.cqn).unwrap();
                q(qpc::log_sq_size).set(&mut b, log_sq).unwrap();
                q(qpc::rq_type).set(&mut b, ZERO_LEN_RQ).unwrap();
                q(qpc::user_index).set(&mut b, 0x6000).unwrap();
            }
            None => {
                q(qpc::no_sq).set(&mut b, 1).unwrap();
                q(qpc::rq_type).set(&mut b, SRQ_RQ).unwrap();
                q(qpc::xrcd).set(&mut b, xrcd).unwrap();
            }
        }
        for p in 0..pages {
            let at = create_qp_in::SIZE_BYTES + 8 * p;
            b[at..at + 8].copy_from_slice(&(buf + 4096 * p as u64).to_be_bytes());
        }
        let out = ok(&mut self.fw, &b, create_qp_out::SIZE_BYTES);
        QpH {
            qpn: create_qp_out::qpn.get(&out).unwrap(),
            st: QPC_ST_XRC,
            uidx: 0x6000,
            buf,
            dbr,
            sq_off: 0,
            log_sq,
            log_rq: 0,
            rq_stride: 16,
            cur_post: 0,
            rq_head: 0,
        }
    }
}

#[test]
fn xrc_send_lands_in_the_named_srq_of_the_targets_domain() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut scq = h.cq(5, false);
    let mut rcq = h.cq(5, false);
    let mut rcq2 = h.cq(5, false);
    let (x1, x2) = (h.xrcd(), h.xrcd());
    // Two SRQs in x1 (on different CQs), one in x2.
    let mut s1 = h.xrc_srq(x1, &rcq, 2, 5, 0x7001);
    let mut s1b = h.xrc_srq(x1, &rcq2, 2, 5, 0x7002);
    let mut s2 = h.xrc_srq(x2, &rcq, 2, 5, 0x7003);
    let mut ini = h.xrc_qp(Some(&scq), 0, 5);
    let tgt = h.xrc_qp(None, x1, 0);
    let lid = h.lid();
    h.connect(&ini, &Path::to(tgt.qpn, lid));
    h.connect(&tgt, &Path::to(ini.qpn, lid));
    let src = h.mr(4096, ALL);
    let dst = h.mr(4096, ALL);
    h.mem.put(src.bus, &pattern(300, 7));
    h.post_srq(&mut s1, &[dst.sge(0, 512)]).unwrap();
    h.post_srq(&mut s1b, &[dst.sge(1024, 512)]).unwrap();
    h.post_srq(&mut s2, &[dst.sge(2048, 512)]).unwrap();
    // A send naming s1: s1's WQE, s1's CQ, the target's QPN, s1's user index.
    let wr = |srqn: u32, off: u64, len: u32| Wr {
        xrc_srqn: Some(srqn),
        ..Wr::new(wqe_op::SEND).sge(src.sge(off, len))
    };
    h.post(&mut ini, &wr(s1.rmpn, 0, 300));
    run(&mut [&mut h], 0);
    let sc = h.poll_all(&mut scq);
    assert_eq!((sc.len(), sc[0].opcode), (1, cqe_op::REQ));
    let rv = h.poll_all(&mut rcq);
    assert_eq!(rv.len(), 1);
    assert_eq!(
        (
            rv[0].opcode,
            rv[0].qpn,
            rv[0].uidx,
            rv[0].byte_cnt,
            rv[0].wqe_counter
        ),
        (cqe_op::RESP_SEND, tgt.qpn, 0x7001, 300, 0)
    );
    assert_eq!(h.mem.get(dst.bus, 300), pattern(300, 7));
    assert!(h.poll_all(&mut rcq2).is_empty());
    // The other SRQ of the domain, on the other CQ.
    h.post(&mut ini, &wr(s1b.rmpn, 0, 40));
    run(&mut [&mut h], 0);
    assert_eq!(h.poll_all(&mut scq).len(), 1);
    let rv = h.poll_all(&mut rcq2);
    assert_eq!((rv.len(), rv[0].uidx, rv[0].qpn), (1, 0x7002, tgt.qpn));
    assert_eq!(h.mem.get(dst.bus + 1024, 40), pattern(40, 7));
    // An empty SRQ: RNR (the WQE stays, the send waits).
    h.post(&mut ini, &wr(s1.rmpn, 0, 10));
    let r = run(&mut [&mut h], 1000);
    assert!(r.next_deadline_ns.is_some());
    assert!(h.poll_all(&mut rcq).is_empty());
    h.free_srq(&mut s1, 0);
    h.post_srq(&mut s1, &[dst.sge(0, 512)]).unwrap();
    run(&mut [&mut h], 1_000_000_000);
    assert_eq!(h.poll_all(&mut rcq).len(), 1);
    assert_eq!(h.poll_all(&mut scq).len(), 1);
    assert!(h.events().iter().all(|e| matches!(
        e,
        Event::Qp {
            kind: QpEvent::CommEst,
            ..
        }
    )));
    // An SRQ of another domain: Invalid Request NAK, the target to ERR with an event, s2's
    // WQE untouched.
    h.post(&mut ini, &wr(s2.rmpn, 0, 10));
    run(&mut [&mut h], 2_000_000_000);
    let sc = h.poll_all(&mut scq);
    assert_eq!(sc.len(), 1);
    assert_eq!(
        (sc[0].opcode, sc[0].syndrome),
        (cqe_op::REQ_ERR, csyn::REMOTE_INVAL_REQ)
    );
    assert!(h.poll_all(&mut rcq).is_empty());
    assert_eq!(h.state(&tgt), QPC_STATE_ERR);
    assert_eq!(
        h.events(),
        [Event::Qp {
            qpn: tgt.qpn,
            kind: QpEvent::WqInvalReq
        }]
    );
    assert_eq!(h.mem.faults(), 0);
    // DEALLOC_XRCD is busy while an XRC SRQ or an XRC target QP lives in the domain.
    let dx = |x: u32| destroy_in(op::DEALLOC_XRCD, 0, dealloc_xrcd_in::xrcd, x);
    let busy = |h: &mut Host, b: &[u8]| {
        let (c, _) = super::tests::run(&mut h.fw, b, 16);
        (c.status, c.syndrome)
    };
    assert_eq!(busy(&mut h, &dx(x1)), (Status::RES_BUSY, syn::XRCD_BUSY));
    for s in [&s1, &s1b] {
        let d = destroy_in(op::DESTROY_XRC_SRQ, 0, destroy_xrc_srq_in::xrc_srqn, s.rmpn);
        ok(&mut h.fw, &d, 16);
    }
    assert_eq!(busy(&mut h, &dx(x1)), (Status::RES_BUSY, syn::XRCD_BUSY_QP));
    for q in [&ini, &tgt] {
        ok(
            &mut h.fw,
            &destroy_in(op::DESTROY_QP, 0, destroy_qp_in::qpn, q.qpn),
            16,
        );
    }
    ok(&mut h.fw, &dx(x1), 16);
    let d = destroy_in(
        op::DESTROY_XRC_SRQ,
        0,
        destroy_xrc_srq_in::xrc_srqn,
        s2.rmpn,
    );
    ok(&mut h.fw, &d, 16);
    ok(&mut h.fw, &dx(x2), 16);
    assert_eq!(h.fw.counts().xrc, 0);
}

#[test]
fn xrc_target_qp_needs_a_domain() {
    let mut h = Host::new(LinkLayer::Ib, 1);
    let mut b = inbox(op::CREATE_QP, 0, 0, create_qp_in::SIZE_BYTES);
    let q = |f| create_qp_in::qpc.inner(f);
    q(qpc::st).set(&mut b, QPC_ST_XRC).unwrap();
    q(qpc::uar_page).set(&mut b, h.uar).unwrap();
    q(qpc::no_sq).set(&mut b, 1).unwrap();
    q(qpc::rq_type).set(&mut b, SRQ_RQ).unwrap();
    let (c, _) = super::tests::run(&mut h.fw, &b, create_qp_out::SIZE_BYTES);
    assert_eq!(
        (c.status, c.syndrome),
        (Status::BAD_PARAM_ERR, syn::XRC_QP_XRCD)
    );
    q(qpc::xrcd).set(&mut b, 0x77).unwrap();
    let (c, _) = super::tests::run(&mut h.fw, &b, create_qp_out::SIZE_BYTES);
    assert_eq!(
        (c.status, c.syndrome),
        (Status::BAD_RES_ERR, syn::XRCD_UNKNOWN)
    );
    let x = h.xrcd();
    q(qpc::xrcd).set(&mut b, x).unwrap();
    q(qpc::rq_type).set(&mut b, ZERO_LEN_RQ).unwrap();
    let (c, _) = super::tests::run(&mut h.fw, &b, create_qp_out::SIZE_BYTES);
    assert_eq!(
        (c.status, c.syndrome),
        (Status::BAD_PARAM_ERR, syn::QP_RQ_TYPE)
    );
    assert_eq!(h.fw.counts().qp, 0);
}

// ---------------------------------------------------------------------------------------
// A pass over one UAR page's queues (what a trapped doorbell store announces).

#[test]
fn run_uar_serves_only_the_queues_of_that_page() {
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(4096, ALL);
    let dst = p.h.mr(4096, ALL);
    let data = pattern(300, 3);
    p.h.mem.put(src.bus, &data);
    let mut b = p.b;
    p.h.post_recv(&mut b, &[dst.sge(0, 300)]);
    let mut a = p.a;
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(src.sge(0, 300)));
    let uar = p.h.uar;
    let pass = |h: &mut Host, uar: u32| {
        let mut nodes = [Node {
            fw: &mut h.fw,
            mem: &h.mem,
            wire: None,
        }];
        engine::run_uar(&mut nodes, 0, uar, 0, 16, &|| false)
    };
    // Another page's store announces nothing of these QPs; nor does another function's.
    assert_eq!(pass(&mut p.h, uar + 1).wqes, 0);
    assert!(p.recvs().is_empty());
    // The page the QPs ring: the send runs, into the peer's receive.
    let r = pass(&mut p.h, uar);
    assert_eq!((r.wqes, r.more), (1, false));
    assert_eq!(p.sends().len(), 1);
    let rv = p.recvs();
    assert_eq!((rv.len(), rv[0].byte_cnt), (1, 300));
    assert_eq!(p.h.mem.get(dst.bus, 300), data);
    // Nothing left: a second pass is idle, and so is a full one.
    assert_eq!(pass(&mut p.h, uar).wqes, 0);
    assert_eq!(p.run(0).wqes, 0);
}

// ---------------------------------------------------------------------------------------
// Memory windows: CREATE_MKEY of a window, UMR bind/invalidate WQEs, SEND with invalidate.

/// A window's mkey as upstream `mlx5_ib_alloc_mw()` creates it; returns its key.
fn alloc_mw(h: &mut Host, type2: bool) -> u32 {
    let mut b = inbox(op::CREATE_MKEY, 0, 0, create_mkey_in::SIZE_BYTES);
    let m = |f| create_mkey_in::memory_key_mkey_entry.inner(f);
    m(mkc::free).set(&mut b, 1).unwrap();
    m(mkc::umr_en).set(&mut b, 1).unwrap();
    m(mkc::lr).set(&mut b, 1).unwrap();
    m(mkc::access_mode_1_0)
        .set(&mut b, MKC_ACCESS_MODE_KLMS)
        .unwrap();
    m(mkc::en_rinval).set(&mut b, u32::from(type2)).unwrap();
    m(mkc::translations_octword_size).set(&mut b, 4).unwrap();
    m(mkc::qpn).set(&mut b, 0xff_ffff).unwrap();
    m(mkc::pd).set(&mut b, h.pd).unwrap();
    m(mkc::mkey_7_0).set(&mut b, 0x51).unwrap();
    let out = ok(&mut h.fw, &b, create_mkey_out::SIZE_BYTES);
    (create_mkey_out::mkey_index.get(&out).unwrap() << 8) | 0x51
}

/// What a bind names (libmlx5's `struct ibv_mw_bind_info`; `None`: an invalidation).
#[derive(Clone, Copy)]
struct Bind {
    mr: u32,
    addr: u64,
    len: u64,
    /// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_*`.
    access: u8,
}

/// A UMR WQE as libmlx5 44's `set_bind_wr()` lays it out: `key` is the window's current key,
/// `new_byte` the new key's low byte; `type2` binds to `qp`.
fn umr_wqe(qp: &QpH, key: u32, new_byte: u8, type2: bool, bind: Option<Bind>) -> Vec<u8> {
    use engine::umr;
    let size = if bind.is_some() { 192 } else { 128 };
    let mut w = vec![0u8; size];
    let idx = u32::from(qp.cur_post);
    w[0..4].copy_from_slice(&((idx << 8) | u32::from(wqe_op::UMR)).to_be_bytes());
    w[4..8].copy_from_slice(&((qp.qpn << 8) | (size / 16) as u32).to_be_bytes());
    w[11] = ctrl::CQ_UPDATE;
    w[12..16].copy_from_slice(&key.to_be_bytes());
    let mut flags = 0x80 | 0x10; // INLINE | TRNSLATION_OFFSET
    let mut mask = umr::MASK_FREE | umr::MASK_MKEY;
    if type2 {
        mask |= umr::MASK_QPN;
    }
    let qpn_field = if type2 && bind.is_some() {
        qp.qpn << 8
    } else {
        0xffff_ff00
    };
    w[umr::MKC + 4..umr::MKC + 8].copy_from_slice(&(qpn_field | u32::from(new_byte)).to_be_bytes());
    match bind {
        Some(b) => {
            if type2 {
                flags |= umr::CHECK_FREE;
            }
            mask |= umr::MASK_LEN | umr::MASK_START_ADDR | (0xf << 18);
            w[umr::MKC + 2] = b.access;
            w[umr::MKC + 16..umr::MKC + 24].copy_from_slice(&b.addr.to_be_bytes());
            w[umr::MKC + 24..umr::MKC + 32].copy_from_slice(&b.len.to_be_bytes());
            w[umr::KLM..umr::KLM + 4].copy_from_slice(&(b.len as u32).to_be_bytes());
            w[umr::KLM + 4..umr::KLM + 8].copy_from_slice(&b.mr.to_be_bytes());
            w[umr::KLM + 8..umr::KLM + 16].copy_from_slice(&b.addr.to_be_bytes());
        }
        None => {
            w[umr::MKC] = umr::CTX_FREE;
            if type2 {
                flags |= umr::CHECK_QPN;
            }
        }
    }
    w[umr::FLAGS] = flags;
    w[umr::MKEY_MASK..umr::MKEY_MASK + 8].copy_from_slice(&mask.to_be_bytes());
    w
}

const RW: u8 = engine::umr::ACC_REMOTE_WRITE | engine::umr::ACC_REMOTE_READ;

fn write_via(p: &mut Pair, src: &Mr, addr: u64, rkey: u32, len: u32) -> Polled {
    let mut a = p.a;
    let mut w = Wr::new(wqe_op::RDMA_WRITE).sge(src.sge(0, len));
    w.remote = Some((addr, rkey));
    p.h.post(&mut a, &w);
    p.a = a;
    p.run(0);
    let s = p.sends();
    assert_eq!(s.len(), 1, "{s:x?}");
    s[0]
}

#[test]
fn type2_window_bind_write_read_range_access_and_local_invalidate() {
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(4096, ALL);
    let mr = p.h.mr(8192, ALL);
    let key = alloc_mw(&mut p.h, true);
    // Before any bind the window gives no access.
    let c = write_via(&mut p, &src, mr.va, key, 16);
    assert_eq!(
        (c.opcode, c.syndrome),
        (cqe_op::REQ_ERR, csyn::REMOTE_ACCESS)
    );

    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(4096, ALL);
    let mr = p.h.mr(8192, ALL);
    let key = alloc_mw(&mut p.h, true);
    let data = pattern(256, 3);
    p.h.mem.put(src.bus, &data);
    // The responder b binds [va + 1024, +2048) with remote write and read, new key byte 0x52.
    let mut b = p.b;
    let bind = Bind {
        mr: mr.key,
        addr: mr.va + 1024,
        len: 2048,
        access: RW,
    };
    {
        let w = umr_wqe(&b, key, 0x52, true, Some(bind));
        p.h.post_bytes(&mut b, &w);
    }
    p.b = b;
    p.run(0);
    let s = p.sends();
    assert_eq!(
        (s[0].opcode, s[0].wqe_opcode, s[0].qpn),
        (cqe_op::REQ, wqe_op::UMR, b.qpn)
    );
    let rkey = (key & !0xff) | 0x52;
    // The old key is gone.
    let c = write_via(&mut p, &src, mr.va + 1024, key, 16);
    assert_eq!(c.syndrome, csyn::REMOTE_ACCESS);
    // New pair state: a and b went to ERR; start again with a fresh pair for the good path.
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(4096, ALL);
    let mr = p.h.mr(8192, ALL);
    let key = alloc_mw(&mut p.h, true);
    p.h.mem.put(src.bus, &data);
    let mut b = p.b;
    let bind = Bind {
        mr: mr.key,
        addr: mr.va + 1024,
        len: 2048,
        access: RW,
    };
    {
        let w = umr_wqe(&b, key, 0x52, true, Some(bind));
        p.h.post_bytes(&mut b, &w);
    }
    p.b = b;
    p.run(0);
    assert_eq!(p.sends()[0].opcode, cqe_op::REQ);
    let c = write_via(&mut p, &src, mr.va + 1024 + 100, rkey, 256);
    assert_eq!(c.opcode, cqe_op::REQ);
    assert_eq!(p.h.mem.get(mr.bus + 1124, 256), data);
    // READ back through the window.
    let mut a = p.a;
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(src.sge(1024, 256))
            .remote(&Mr { key: rkey, ..mr }, 1124),
    );
    p.a = a;
    p.run(0);
    assert_eq!(p.sends()[0].opcode, cqe_op::REQ);
    assert_eq!(p.h.mem.get(src.bus + 1024, 256), data);
    // A type 2 window is bound to b: a second bind (CHECK_FREE) is an MW bind error... later;
    // first invalidate locally on b, then the key gives no access.
    let mut b = p.b;
    {
        // libmlx5's IBV_WR_LOCAL_INV carries key byte 0: the key is kept.
        let w = umr_wqe(&b, rkey, 0, true, None);
        p.h.post_bytes(&mut b, &w);
    }
    p.b = b;
    p.run(0);
    assert_eq!(p.sends()[0].opcode, cqe_op::REQ);
    // Free again: a bind naming the kept key works; invalidate it once more.
    let k2 = (key & !0xff) | 0x54;
    let mut b = p.b;
    let w = umr_wqe(&b, rkey, 0x54, true, Some(bind));
    p.h.post_bytes(&mut b, &w);
    let w = umr_wqe(&b, k2, 0, true, None);
    p.h.post_bytes(&mut b, &w);
    p.b = b;
    p.run(0);
    let s = p.sends();
    assert_eq!(
        s.iter().map(|c| c.opcode).collect::<Vec<_>>(),
        vec![cqe_op::REQ, cqe_op::REQ],
        "{s:x?}"
    );
    let c = write_via(&mut p, &src, mr.va + 1024, k2, 16);
    assert_eq!(
        (c.opcode, c.syndrome),
        (cqe_op::REQ_ERR, csyn::REMOTE_ACCESS)
    );
}

#[test]
fn window_range_and_rights_are_checked() {
    for (off, len, read) in [
        (1023u64, 16u32, false),
        (1024 + 2040, 16, false),
        (1024, 16, true),
    ] {
        let mut p = pair(QPC_ST_RC);
        let src = p.h.mr(4096, ALL);
        let mr = p.h.mr(8192, ALL);
        let key = alloc_mw(&mut p.h, true);
        let mut b = p.b;
        let bind = Bind {
            mr: mr.key,
            addr: mr.va + 1024,
            len: 2048,
            // Write only: a READ is outside the window's rights.
            access: engine::umr::ACC_REMOTE_WRITE,
        };
        {
            let w = umr_wqe(&b, key, 0x60, true, Some(bind));
            p.h.post_bytes(&mut b, &w);
        }
        p.b = b;
        p.run(0);
        assert_eq!(p.sends()[0].opcode, cqe_op::REQ);
        let rkey = (key & !0xff) | 0x60;
        let c = if read {
            let mut a = p.a;
            let mut w = Wr::new(wqe_op::RDMA_READ).sge(src.sge(0, len));
            w.remote = Some((mr.va + off, rkey));
            p.h.post(&mut a, &w);
            p.run(0);
            p.sends()[0]
        } else {
            write_via(&mut p, &src, mr.va + off, rkey, len)
        };
        assert_eq!(
            (c.opcode, c.syndrome),
            (cqe_op::REQ_ERR, csyn::REMOTE_ACCESS),
            "off {off} len {len} read {read}"
        );
    }
}

#[test]
fn type1_window_any_qp_of_the_pd_and_rebind() {
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(4096, ALL);
    let mr = p.h.mr(8192, ALL);
    let key = alloc_mw(&mut p.h, false);
    // Type 1: bound through a's own SQ (no QPN), used by a's RDMA to b.
    let mut a = p.a;
    let bind = Bind {
        mr: mr.key,
        addr: mr.va,
        len: 4096,
        access: RW,
    };
    {
        let w = umr_wqe(&a, key, 0x61, false, Some(bind));
        p.h.post_bytes(&mut a, &w);
    }
    p.a = a;
    p.run(0);
    assert_eq!(p.sends()[0].opcode, cqe_op::REQ);
    let k1 = (key & !0xff) | 0x61;
    assert_eq!(write_via(&mut p, &src, mr.va, k1, 64).opcode, cqe_op::REQ);
    // Rebind (type 1 needs no invalidation first) with key byte 0x62: the old key stops.
    let mut a = p.a;
    {
        let w = umr_wqe(&a, k1, 0x62, false, Some(bind));
        p.h.post_bytes(&mut a, &w);
    }
    p.a = a;
    p.run(0);
    assert_eq!(p.sends()[0].opcode, cqe_op::REQ);
    let k2 = (key & !0xff) | 0x62;
    assert_eq!(write_via(&mut p, &src, mr.va, k2, 64).opcode, cqe_op::REQ);
    // Deregistering the MR ends the window's access.
    ok(
        &mut p.h.fw,
        &destroy_in(
            op::DESTROY_MKEY,
            0,
            destroy_mkey_in::mkey_index,
            mr.key >> 8,
        ),
        destroy_mkey_out::SIZE_BYTES,
    );
    let c = write_via(&mut p, &src, mr.va, k2, 64);
    assert_eq!(c.syndrome, csyn::REMOTE_ACCESS);
}

#[test]
fn bind_errors_are_mw_bind_err() {
    let no_lw = MrAccess {
        lw: false,
        rr: true,
        rw: true,
        a: false,
    };
    // (MR rights, offset, length, second bind of a bound type 2 window)
    for (acc, off, len, twice) in [
        (no_lw, 0u64, 64u64, false),
        (ALL, 4000, 200, false),
        (ALL, 0, 0, false),
        (ALL, 0, 64, true),
    ] {
        let mut p = pair(QPC_ST_RC);
        let mr = p.h.mr(4096, acc);
        let key = alloc_mw(&mut p.h, true);
        let mut b = p.b;
        let bind = Bind {
            mr: mr.key,
            addr: mr.va + off,
            len,
            access: RW,
        };
        let mut k = key;
        if twice {
            {
                let w = umr_wqe(&b, key, 0x70, true, Some(bind));
                p.h.post_bytes(&mut b, &w);
            }
            k = (key & !0xff) | 0x70;
        }
        {
            let w = umr_wqe(&b, k, 0x71, true, Some(bind));
            p.h.post_bytes(&mut b, &w);
        }
        p.b = b;
        p.run(0);
        let s = p.sends();
        let last = s.last().copied().unwrap();
        assert_eq!(
            (last.opcode, last.syndrome),
            (cqe_op::REQ_ERR, csyn::MW_BIND),
            "{off} {len} {twice}"
        );
        assert_eq!(p.h.state(&b), QPC_STATE_ERR);
    }
}

#[test]
fn send_with_invalidate_frees_a_type2_window() {
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(4096, ALL);
    let mr = p.h.mr(8192, ALL);
    let key = alloc_mw(&mut p.h, true);
    let mut b = p.b;
    let bind = Bind {
        mr: mr.key,
        addr: mr.va,
        len: 4096,
        access: RW,
    };
    {
        let w = umr_wqe(&b, key, 0x53, true, Some(bind));
        p.h.post_bytes(&mut b, &w);
    }
    p.h.post_recv(&mut b, &[mr.sge(4096, 64)]);
    p.b = b;
    p.run(0);
    assert_eq!(p.sends()[0].opcode, cqe_op::REQ);
    let rkey = (key & !0xff) | 0x53;
    let mut a = p.a;
    let mut w = Wr::new(wqe_op::SEND_INVAL).sge(src.sge(0, 32));
    w.imm = rkey;
    p.h.post(&mut a, &w);
    p.a = a;
    p.run(0);
    assert_eq!(p.sends()[0].opcode, cqe_op::REQ);
    let r = p.recvs();
    assert_eq!(
        (r[0].opcode, r[0].imm, r[0].byte_cnt),
        (cqe_op::RESP_SEND_INV, rkey, 32)
    );
    let c = write_via(&mut p, &src, mr.va, rkey, 16);
    assert_eq!(c.syndrome, csyn::REMOTE_ACCESS);
}

/// A UMR WQE as libmlx5 44's `mlx5dv_wr_mr_list()`/`mlx5dv_wr_mr_interleaved()` lay it out
/// (`mlx5_send_wr_mkey_configure()`, `mlx5_send_wr_set_mkey_layout()`): `key` the indirect
/// mkey, `access` its `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_*`, `len` the bytes mapped and
/// `xlat` the translation (KLMs or a repeated block), padded to 64 bytes.
fn umr_layout_wqe(qp: &QpH, key: u32, access: u8, len: u64, xlat: &[u8]) -> Vec<u8> {
    use engine::umr;
    let pad = xlat.len().div_ceil(64) * 64;
    let size = umr::KLM + pad;
    let mut w = vec![0u8; size];
    let idx = u32::from(qp.cur_post);
    w[0..4].copy_from_slice(&((idx << 8) | u32::from(wqe_op::UMR)).to_be_bytes());
    w[4..8].copy_from_slice(&((qp.qpn << 8) | (size / 16) as u32).to_be_bytes());
    w[11] = ctrl::CQ_UPDATE;
    w[12..16].copy_from_slice(&key.to_be_bytes());
    w[umr::FLAGS] = 0x80; // INLINE
    w[umr::KLM_OCTOWORDS..umr::KLM_OCTOWORDS + 2]
        .copy_from_slice(&((pad / 16) as u16).to_be_bytes());
    let mask = umr::MASK_FREE | umr::MASK_MKEY | umr::MASK_LEN | (0xf << 18);
    w[umr::MKEY_MASK..umr::MKEY_MASK + 8].copy_from_slice(&mask.to_be_bytes());
    w[umr::MKC + 2] = access;
    w[umr::MKC + 4..umr::MKC + 8].copy_from_slice(&(0xffff_ff00 | (key & 0xff)).to_be_bytes());
    w[umr::MKC + 24..umr::MKC + 32].copy_from_slice(&len.to_be_bytes());
    w[umr::KLM..umr::KLM + xlat.len()].copy_from_slice(xlat);
    w
}

/// A KLM list (`umr_sg_list_create()`): (lkey, addr, bytes) each.
fn klms(entries: &[(u32, u64, u32)]) -> Vec<u8> {
    let mut v = Vec::new();
    for (key, addr, len) in entries {
        v.extend_from_slice(&len.to_be_bytes());
        v.extend_from_slice(&key.to_be_bytes());
        v.extend_from_slice(&addr.to_be_bytes());
    }
    v
}

/// A repeated block (`umr_strided_seg_create()`): `repeat` times the entries (lkey, addr,
/// bytes, stride).
fn repeat_block(repeat: u32, entries: &[(u32, u64, u16, u16)]) -> Vec<u8> {
    let bytes: u32 = entries.iter().map(|e| u32::from(e.2)).sum();
    let mut v = Vec::new();
    v.extend_from_slice(&bytes.to_be_bytes());
    v.extend_from_slice(&engine::umr::REPEAT_BLOCK_OP.to_be_bytes());
    v.extend_from_slice(&repeat.to_be_bytes());
    v.extend_from_slice(&0u16.to_be_bytes());
    v.extend_from_slice(&(entries.len() as u16).to_be_bytes());
    for (key, addr, n, stride) in entries {
        v.extend_from_slice(&stride.to_be_bytes());
        v.extend_from_slice(&n.to_be_bytes());
        v.extend_from_slice(&key.to_be_bytes());
        v.extend_from_slice(&addr.to_be_bytes());
    }
    v
}

/// An indirect mkey as libmlx5's `mlx5dv_create_mkey()` creates it (`mkey_7_0` 0, `en_rinval`
/// for MLX5DV_MKEY_INIT_ATTR_FLAGS_REMOTE_INVALIDATE); its key.
fn dv_mkey(h: &mut Host) -> u32 {
    let mut b = inbox(op::CREATE_MKEY, 0, 0, create_mkey_in::SIZE_BYTES);
    let m = |f| create_mkey_in::memory_key_mkey_entry.inner(f);
    m(mkc::free).set(&mut b, 1).unwrap();
    m(mkc::umr_en).set(&mut b, 1).unwrap();
    m(mkc::lr).set(&mut b, 1).unwrap();
    m(mkc::access_mode_1_0)
        .set(&mut b, MKC_ACCESS_MODE_KLMS)
        .unwrap();
    m(mkc::en_rinval).set(&mut b, 1).unwrap();
    m(mkc::translations_octword_size).set(&mut b, 4).unwrap();
    m(mkc::qpn).set(&mut b, 0xff_ffff).unwrap();
    m(mkc::pd).set(&mut b, h.pd).unwrap();
    let out = ok(&mut h.fw, &b, create_mkey_out::SIZE_BYTES);
    create_mkey_out::mkey_index.get(&out).unwrap() << 8
}

/// Posts [`umr_layout_wqe`] on `b` of `p`, runs, and returns b's send completion.
fn umr_on_b(p: &mut Pair, key: u32, access: u8, len: u64, xlat: &[u8]) -> Polled {
    let mut b = p.b;
    let w = umr_layout_wqe(&b, key, access, len, xlat);
    p.h.post_bytes(&mut b, &w);
    p.b = b;
    p.run(0);
    let s = p.sends();
    assert_eq!(s.len(), 1, "{s:x?}");
    s[0]
}

fn read_via(p: &mut Pair, dst: &Mr, off: u64, addr: u64, rkey: u32, len: u32) -> Polled {
    let mut a = p.a;
    let mut w = Wr::new(wqe_op::RDMA_READ).sge(dst.sge(off, len));
    w.remote = Some((addr, rkey));
    p.h.post(&mut a, &w);
    p.a = a;
    p.run(0);
    let s = p.sends();
    assert_eq!(s.len(), 1, "{s:x?}");
    s[0]
}

#[test]
fn umr_klm_list_mkey_reaches_its_entries_and_is_remotely_invalidated() {
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(8192, ALL);
    let m1 = p.h.mr(4096, ALL);
    let m2 = p.h.mr(4096, ALL);
    let key = dv_mkey(&mut p.h);
    // [0, 300) = m1[100..400), [300, 1300) = m2[0..1000), [1300, 1500) = m1[3000..3200).
    let list = klms(&[
        (m1.key, m1.va + 100, 300),
        (m2.key, m2.va, 1000),
        (m1.key, m1.va + 3000, 200),
    ]);
    let c = umr_on_b(&mut p, key, RW, 1500, &list);
    assert_eq!((c.opcode, c.wqe_opcode), (cqe_op::REQ, wqe_op::UMR));
    // A WRITE of 1400 bytes from offset 50 crosses all three entries.
    let data = pattern(1400, 9);
    p.h.mem.put(src.bus, &data);
    let c = write_via(&mut p, &src, 50, key, 1400);
    assert_eq!(c.opcode, cqe_op::REQ);
    assert_eq!(p.h.mem.get(m1.bus + 150, 250), data[..250]);
    assert_eq!(p.h.mem.get(m2.bus, 1000), data[250..1250]);
    assert_eq!(p.h.mem.get(m1.bus + 3000, 150), data[1250..]);
    // READ it all back (zero-based, 1500 bytes).
    let c = read_via(&mut p, &src, 4096, 0, key, 1500);
    assert_eq!(c.opcode, cqe_op::REQ);
    let mut want = p.h.mem.get(m1.bus + 100, 300);
    want.extend(p.h.mem.get(m2.bus, 1000));
    want.extend(p.h.mem.get(m1.bus + 3000, 200));
    assert_eq!(p.h.mem.get(src.bus + 4096, 1500), want);
    // Past the length: a remote access error.
    let c = write_via(&mut p, &src, 1400, key, 200);
    assert_eq!(c.syndrome, csyn::REMOTE_ACCESS);

    // A fresh pair: SEND with invalidate frees the key; a WRITE with it then fails.
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(4096, ALL);
    let m1 = p.h.mr(4096, ALL);
    let key = dv_mkey(&mut p.h);
    let list = klms(&[(m1.key, m1.va, 2048)]);
    assert_eq!(umr_on_b(&mut p, key, RW, 2048, &list).opcode, cqe_op::REQ);
    assert_eq!(write_via(&mut p, &src, 0, key, 64).opcode, cqe_op::REQ);
    let mut b = p.b;
    p.h.post_recv(&mut b, &[m1.sge(3072, 64)]);
    p.b = b;
    let mut a = p.a;
    let mut w = Wr::new(wqe_op::SEND_INVAL).sge(src.sge(0, 32));
    w.imm = key;
    p.h.post(&mut a, &w);
    p.a = a;
    p.run(0);
    assert_eq!(p.sends()[0].opcode, cqe_op::REQ);
    let r = p.recvs();
    assert_eq!((r[0].opcode, r[0].imm), (cqe_op::RESP_SEND_INV, key));
    let c = write_via(&mut p, &src, 0, key, 16);
    assert_eq!(c.syndrome, csyn::REMOTE_ACCESS);
}

#[test]
fn umr_interleaved_mkey_repeats_its_block_and_checks_its_entries() {
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(4096, ALL);
    let m1 = p.h.mr(4096, ALL);
    let m2 = p.h.mr(4096, ALL);
    let key = dv_mkey(&mut p.h);
    // 3 repetitions of (m1: 64 bytes every 256) then (m2: 32 bytes every 100): 288 bytes.
    let rb = repeat_block(3, &[(m1.key, m1.va, 64, 256), (m2.key, m2.va + 8, 32, 100)]);
    let c = umr_on_b(&mut p, key, RW, 288, &rb);
    assert_eq!(c.opcode, cqe_op::REQ);
    let data = pattern(288, 4);
    p.h.mem.put(src.bus, &data);
    assert_eq!(write_via(&mut p, &src, 0, key, 288).opcode, cqe_op::REQ);
    for r in 0..3usize {
        let at = r * 96;
        assert_eq!(p.h.mem.get(m1.bus + 256 * r as u64, 64), data[at..at + 64]);
        assert_eq!(
            p.h.mem.get(m2.bus + 8 + 100 * r as u64, 32),
            data[at + 64..at + 96]
        );
    }
    let c = read_via(&mut p, &src, 1024, 0, key, 288);
    assert_eq!(c.opcode, cqe_op::REQ);
    assert_eq!(p.h.mem.get(src.bus + 1024, 288), data);

    // A layout whose bytes do not add up to `len`, or naming an unknown key, or needing
    // more runs than the model keeps: the UMR fails (memory window bind error).
    let mut p = pair(QPC_ST_RC);
    let m1 = p.h.mr(4096, ALL);
    let key = dv_mkey(&mut p.h);
    let c = umr_on_b(&mut p, key, RW, 100, &klms(&[(m1.key, m1.va, 64)]));
    assert_eq!((c.opcode, c.syndrome), (cqe_op::REQ_ERR, csyn::MW_BIND));
    let mut p = pair(QPC_ST_RC);
    let key = dv_mkey(&mut p.h);
    let c = umr_on_b(&mut p, key, RW, 64, &klms(&[(0x7777_00, 0, 64)]));
    assert_eq!((c.opcode, c.syndrome), (cqe_op::REQ_ERR, csyn::MW_BIND));
    let mut p = pair(QPC_ST_RC);
    let m1 = p.h.mr(4096, ALL);
    let key = dv_mkey(&mut p.h);
    let rb = repeat_block(9, &[(m1.key, m1.va, 16, 32)]);
    let c = umr_on_b(&mut p, key, RW, 144, &rb);
    assert_eq!((c.opcode, c.syndrome), (cqe_op::REQ_ERR, csyn::MW_BIND));
    // A contiguous block repeated past the model's bound on entry uses (one run, but more
    // work than one WQE may take).
    let mut p = pair(QPC_ST_RC);
    let m1 = p.h.mr(1 << 16, ALL);
    let key = dv_mkey(&mut p.h);
    let rb = repeat_block(4097, &[(m1.key, m1.va, 8, 8)]);
    let c = umr_on_b(&mut p, key, RW, 4097 * 8, &rb);
    assert_eq!((c.opcode, c.syndrome), (cqe_op::REQ_ERR, csyn::MW_BIND));
    let mut p = pair(QPC_ST_RC);
    let m1 = p.h.mr(1 << 16, ALL);
    let key = dv_mkey(&mut p.h);
    let rb = repeat_block(4096, &[(m1.key, m1.va, 8, 8)]);
    let c = umr_on_b(&mut p, key, RW, 4096 * 8, &rb);
    assert_eq!(
        c.opcode,
        cqe_op::REQ,
        "4096 contiguous uses merge into one run"
    );
}

/// The UMR WQE of upstream `mlx5r_umr_rereg_pd_access()` for MR key `key`: access bits
/// `access` (`MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_*`) and PD `pd`, the key's variant kept.
fn umr_rereg_wqe(qp: &QpH, key: u32, access: u8, pd: u32) -> Vec<u8> {
    use engine::umr;
    let mut w = vec![0u8; umr::KLM];
    let idx = u32::from(qp.cur_post);
    w[0..4].copy_from_slice(&((idx << 8) | u32::from(wqe_op::UMR)).to_be_bytes());
    w[4..8].copy_from_slice(&((qp.qpn << 8) | (umr::KLM / 16) as u32).to_be_bytes());
    w[11] = ctrl::CQ_UPDATE;
    w[12..16].copy_from_slice(&key.to_be_bytes());
    w[umr::FLAGS] = 0x80 | 0x40; // MLX5_UMR_INLINE | MLX5_UMR_CHECK_FREE
    let mask = umr::MASK_ACCESS | umr::MASK_PD;
    w[umr::MKEY_MASK..umr::MKEY_MASK + 8].copy_from_slice(&mask.to_be_bytes());
    w[umr::MKC + 2] = access | umr::ACC_LOCAL_READ;
    w[umr::MKC + 4..umr::MKC + 8].copy_from_slice(&(0xffff_ff00 | (key & 0xff)).to_be_bytes());
    w[umr::MKC + 12..umr::MKC + 16].copy_from_slice(&pd.to_be_bytes());
    w
}

/// A pair with a source MR and a remotely read-only MR (its mkey made with `umr_en` when
/// `umr_en`), and a UMR of upstream's rereg posted on b for `key` with remote write added.
fn rereg_pair(umr_en: bool, key_xor: u32) -> (Pair, Mr, Mr, Polled) {
    let ro = MrAccess {
        lw: true,
        rr: true,
        rw: false,
        a: false,
    };
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(4096, ALL);
    let mr = p.h.mr(4096, ro);
    let m = p.h.fw.mkeys.get_mut(mr.key >> 8).unwrap();
    mkc::umr_en.set(&mut m.mkc, u32::from(umr_en)).unwrap();
    let mut b = p.b;
    let acc = RW | engine::umr::ACC_LOCAL_WRITE;
    let w = umr_rereg_wqe(&b, mr.key ^ key_xor, acc, p.h.pd);
    p.h.post_bytes(&mut b, &w);
    p.b = b;
    p.run(0);
    let c = p.sends();
    assert_eq!(c.len(), 1, "{c:x?}");
    (p, src, mr, c[0])
}

#[test]
fn umr_changes_an_mrs_access_in_place_keeping_its_key() {
    // Without umr_en, or with another key variant, the mkey is not changed.
    let (_, _, _, c) = rereg_pair(false, 0);
    assert_eq!((c.opcode, c.syndrome), (cqe_op::REQ_ERR, csyn::MW_BIND));
    let (_, _, _, c) = rereg_pair(true, 1);
    assert_eq!((c.opcode, c.syndrome), (cqe_op::REQ_ERR, csyn::MW_BIND));
    // Upstream's rereg UMR: remote write added, the key kept; the old rkey writes.
    let (mut p, src, mr, c) = rereg_pair(true, 0);
    assert_eq!((c.opcode, c.wqe_opcode), (cqe_op::REQ, wqe_op::UMR));
    let data = pattern(64, 5);
    p.h.mem.put(src.bus, &data);
    let c = write_via(&mut p, &src, mr.va + 8, mr.key, 64);
    assert_eq!(
        c.opcode,
        cqe_op::REQ,
        "the old rkey writes after the change"
    );
    assert_eq!(p.h.mem.get(mr.bus + 8, 64), data);
    let m = p.h.fw.mkeys.get(mr.key >> 8).unwrap();
    assert_eq!(
        mkc::rw.get(&m.mkc),
        Ok(1),
        "the stored context has the new rights"
    );
    // Before the change the same write is refused.
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(4096, ALL);
    let ro = p.h.mr(
        4096,
        MrAccess {
            lw: true,
            rr: true,
            rw: false,
            a: false,
        },
    );
    let c = write_via(&mut p, &src, ro.va, ro.key, 16);
    assert_eq!(c.syndrome, csyn::REMOTE_ACCESS);
}

/// upstream `mlx5r_umr_revoke_mr()`: the mkey `key` free, in PD `pd`.
fn umr_revoke_wqe(qp: &QpH, key: u32, pd: u32) -> Vec<u8> {
    use engine::umr;
    let mut w = umr_rereg_wqe(qp, key, 0, pd);
    w[umr::FLAGS] = umr::INLINE;
    let mask = umr::MASK_PD | umr::MASK_FREE;
    w[umr::MKEY_MASK..umr::MKEY_MASK + 8].copy_from_slice(&mask.to_be_bytes());
    w[umr::MKC] = umr::CTX_FREE;
    w[umr::MKC + 2] = 0;
    w
}

/// upstream `mlx5r_umr_update_mr_pas()` with `MLX5_IB_UPD_XLT_ENABLE`: `octo` octowords of
/// MTTs read through `lkey` at `addr`, the mkey `key` enabled over `[va, va + len)` with
/// `access` in PD `pd`.
#[allow(clippy::too_many_arguments)]
fn umr_pas_wqe(
    qp: &QpH,
    key: u32,
    pd: u32,
    access: u8,
    va: u64,
    len: u64,
    octo: u16,
    dseg: (u32, u64),
) -> Vec<u8> {
    use engine::umr;
    let mut w = umr_rereg_wqe(qp, key, access, pd);
    w.resize(umr::KLM + 16, 0);
    let ds = (w.len() / 16) as u32;
    w[4..8].copy_from_slice(&((qp.qpn << 8) | ds).to_be_bytes());
    w[umr::FLAGS] = umr::CHECK_FREE | umr::TRANSLATION_OFFSET;
    w[umr::KLM_OCTOWORDS..umr::KLM_OCTOWORDS + 2].copy_from_slice(&octo.to_be_bytes());
    let mask =
        umr::MASK_MKEY | umr::MASK_FREE | umr::MASK_ACCESS | umr::MASK_PD | umr::MASK_TRANSLATION;
    w[umr::MKEY_MASK..umr::MKEY_MASK + 8].copy_from_slice(&mask.to_be_bytes());
    w[umr::MKC] = 0;
    w[umr::MKC + 16..umr::MKC + 24].copy_from_slice(&va.to_be_bytes());
    w[umr::MKC + 24..umr::MKC + 32].copy_from_slice(&len.to_be_bytes());
    mkc::log_page_size
        .set(&mut w[umr::MKC..umr::KLM], 12)
        .unwrap();
    w[umr::KLM..umr::KLM + 4].copy_from_slice(&(u32::from(octo) * 16).to_be_bytes());
    w[umr::KLM + 4..umr::KLM + 8].copy_from_slice(&dseg.0.to_be_bytes());
    w[umr::KLM + 8..umr::KLM + 16].copy_from_slice(&dseg.1.to_be_bytes());
    w
}

/// Posts `w` on the pair's b and returns its completion.
fn umr_post_b(p: &mut Pair, w: &[u8]) -> Polled {
    let mut b = p.b;
    p.h.post_bytes(&mut b, w);
    p.b = b;
    p.run(0);
    let c = p.sends();
    assert_eq!(c.len(), 1, "{c:x?}");
    c[0]
}

#[test]
fn umr_replaces_an_mrs_translation_keeping_its_key() {
    use engine::umr;
    let setup = || {
        let mut p = pair(QPC_ST_RC);
        let src = p.h.mr(4096, ALL);
        let mr = p.h.mr(4096, ALL);
        let m = p.h.fw.mkeys.get_mut(mr.key >> 8).unwrap();
        mkc::umr_en.set(&mut m.mkc, 1).unwrap();
        // The new buffer (two pages, the second at a 1 KiB offset into it) and its MTTs.
        let new_bus = p.h.mem.map(8192, true);
        let xlt = p.h.mr(64, ALL);
        let mut mtts = (new_bus | 3).to_be_bytes().to_vec();
        mtts.extend_from_slice(&((new_bus + 4096) | 3).to_be_bytes());
        p.h.mem.put(xlt.bus, &mtts);
        (p, src, mr, new_bus, xlt)
    };
    let rw = RW | umr::ACC_LOCAL_WRITE;
    let va = 0x7000_0000_0400u64;
    // The mkey holds one octoword (two MTTs): upstream's revoke, then the new translation.
    let (mut p, src, mr, new_bus, xlt) = setup();
    let pd = p.h.pd;
    let c = {
        let w = umr_revoke_wqe(&p.b, mr.key, pd);
        umr_post_b(&mut p, &w)
    };
    assert_eq!(c.opcode, cqe_op::REQ, "{c:x?}");
    let w = umr_pas_wqe(&p.b, mr.key, pd, rw, va, 4096, 1, (xlt.key, xlt.va));
    let c = umr_post_b(&mut p, &w);
    assert_eq!(c.opcode, cqe_op::REQ, "{c:x?}");
    let data = pattern(64, 7);
    p.h.mem.put(src.bus, &data);
    // The old rkey at the new address reaches the new pages (across their boundary).
    let c = write_via(&mut p, &src, va + 3072 - 32, mr.key, 64);
    assert_eq!(c.opcode, cqe_op::REQ, "{c:x?}");
    assert_eq!(p.h.mem.get(new_bus + 0x400 + 3072 - 32, 64), data);
    let m = p.h.fw.mkeys.get(mr.key >> 8).unwrap();
    assert_eq!(mkc::start_addr.get64(&m.mkc), Ok(va));
    assert_eq!(mkc::free.get(&m.mkc), Ok(0));
    // The old range is gone.
    let c = write_via(&mut p, &src, mr.va, mr.key, 16);
    assert_eq!(c.syndrome, csyn::REMOTE_ACCESS);

    // A revoked mkey gives no access.
    let (mut p, src, mr, _, _) = setup();
    let pd = p.h.pd;
    {
        let w = umr_revoke_wqe(&p.b, mr.key, pd);
        umr_post_b(&mut p, &w)
    };
    let c = write_via(&mut p, &src, mr.va, mr.key, 16);
    assert_eq!(c.syndrome, csyn::REMOTE_ACCESS);

    // Refused: more pages than the mkey has room for (three); a translation on an mkey in
    // use (the update's CHECK_NOT_FREE); the MTTs behind a bad lkey. A padded XLT longer
    // than the room is fine (upstream pads it to MLX5_UMR_FLEX_ALIGNMENT).
    for (octo, len, revoke, lkey_xor, want) in [
        (2, 8192, true, 0, csyn::MW_BIND),
        (1, 4096, false, 0, csyn::MW_BIND),
        (1, 4096, true, 1, csyn::LOCAL_PROT),
        (4, 4096, true, 0, 0),
    ] {
        let (mut p, _, mr, _, xlt) = setup();
        let pd = p.h.pd;
        if revoke {
            let w = umr_revoke_wqe(&p.b, mr.key, pd);
            umr_post_b(&mut p, &w);
        }
        let dseg = (xlt.key ^ lkey_xor, xlt.va);
        let w = umr_pas_wqe(&p.b, mr.key, pd, rw, va, len, octo, dseg);
        let c = umr_post_b(&mut p, &w);
        if want == 0 {
            assert_eq!(c.opcode, cqe_op::REQ, "{c:x?}");
        } else {
            let got = (c.opcode, c.syndrome);
            assert_eq!(got, (cqe_op::REQ_ERR, want), "octo {octo} len {len}");
        }
    }
}

/// A backend without a device-side alias (the kernel's simulated IOMMU, this test memory)
/// keeps a UMR translation to `MAX_RUNS` runs: 8 scattered pages load, 9 complete
/// `MW_BIND_ERR` and the mkey keeps its translation.
#[test]
fn a_umr_translation_beyond_the_runs_needs_an_alias() {
    use engine::umr;
    let rw = RW | umr::ACC_LOCAL_WRITE;
    let va = 0x7000_0000_0000u64;
    for (n, ok) in [(8usize, true), (9, false)] {
        let mut p = pair(QPC_ST_RC);
        let pd = p.h.pd;
        let src = p.h.mr(4096, ALL);
        let mr = p.h.mr(16 * 4096, ALL);
        let m = p.h.fw.mkeys.get_mut(mr.key >> 8).unwrap();
        mkc::umr_en.set(&mut m.mkc, 1).unwrap();
        // Each page its own run (the test memory leaves a gap after each mapping).
        let pages: Vec<u64> = (0..n).map(|_| p.h.mem.map(4096, true)).collect();
        let xlt = p.h.mr(16 * 8, ALL);
        let mtts: Vec<u8> = pages.iter().flat_map(|b| (b | 3).to_be_bytes()).collect();
        p.h.mem.put(xlt.bus, &mtts);
        let w = umr_revoke_wqe(&p.b, mr.key, pd);
        umr_post_b(&mut p, &w);
        let octo = n.div_ceil(2) as u16;
        let len = (n * 4096) as u64;
        let w = umr_pas_wqe(&p.b, mr.key, pd, rw, va, len, octo, (xlt.key, xlt.va));
        let c = umr_post_b(&mut p, &w);
        if ok {
            assert_eq!(c.opcode, cqe_op::REQ, "{c:x?}");
            let data = pattern(64, 3);
            p.h.mem.put(src.bus, &data);
            let c = write_via(&mut p, &src, va + 4096 * (n as u64 - 1), mr.key, 64);
            assert_eq!(c.opcode, cqe_op::REQ, "{c:x?}");
            assert_eq!(p.h.mem.get(pages[n - 1], 64), data);
        } else {
            assert_eq!((c.opcode, c.syndrome), (cqe_op::REQ_ERR, csyn::MW_BIND));
            let m = p.h.fw.mkeys.get(mr.key >> 8).unwrap();
            assert_eq!(mkc::start_addr.get64(&m.mkc), Ok(mr.va));
        }
    }
}

/// CREATE_MKEY as upstream makes the mkeys of its pools (`mlx5r_create_mkeys()`): free,
/// `umr_en`, MTT, room for `ndescs` MTTs (`DIV_ROUND_UP(ndescs, 2)` octowords), no entries.
fn pool_mkey(h: &mut Host, ndescs: u32) -> u32 {
    let mut b = inbox(op::CREATE_MKEY, 0, 0, create_mkey_in::SIZE_BYTES);
    let m = |f| create_mkey_in::memory_key_mkey_entry.inner(f);
    m(mkc::pd).set(&mut b, h.pd).unwrap();
    m(mkc::qpn).set(&mut b, 0xff_ffff).unwrap();
    m(mkc::free).set(&mut b, 1).unwrap();
    m(mkc::umr_en).set(&mut b, 1).unwrap();
    m(mkc::access_mode_1_0)
        .set(&mut b, MKC_ACCESS_MODE_MTT)
        .unwrap();
    m(mkc::mkey_7_0).set(&mut b, 0x21).unwrap();
    m(mkc::lr).set(&mut b, 1).unwrap();
    m(mkc::translations_octword_size)
        .set(&mut b, ndescs.div_ceil(2))
        .unwrap();
    let out = ok(&mut h.fw, &b, create_mkey_out::SIZE_BYTES);
    (create_mkey_out::mkey_index.get(&out).unwrap() << 8) | 0x21
}

/// A PA mkey over the whole bus (`length64`; upstream's `get_dma_mr()`, whose lkey is a PD's
/// `local_dma_lkey`).
fn dma_mkey(h: &mut Host) -> u32 {
    let mut b = inbox(op::CREATE_MKEY, 0, 0, create_mkey_in::SIZE_BYTES);
    let m = |f| create_mkey_in::memory_key_mkey_entry.inner(f);
    m(mkc::pd).set(&mut b, h.pd).unwrap();
    m(mkc::qpn).set(&mut b, 0xff_ffff).unwrap();
    m(mkc::mkey_7_0).set(&mut b, 0x44).unwrap();
    m(mkc::lr).set(&mut b, 1).unwrap();
    m(mkc::length64).set(&mut b, 1).unwrap();
    let out = ok(&mut h.fw, &b, create_mkey_out::SIZE_BYTES);
    (create_mkey_out::mkey_index.get(&out).unwrap() << 8) | 0x44
}

#[test]
fn upstreams_umr_qp_loads_a_pool_mkey_and_revokes_it() {
    use engine::umr;
    let mut p = pair(QPC_ST_RC);
    let src = p.h.mr(4096, ALL);
    // upstream's UMR QP: REG_UMR, no PD in its context.
    let pd = p.h.pd;
    p.h.pd = 0;
    let mut u = p.h.qp(QPC_ST_REG_UMR, &p.scq, &p.rcq, (4, 0, 2));
    p.h.pd = pd;
    let lid = p.h.lid();
    p.h.connect(&u, &Path::to(u.qpn, lid));
    let key = pool_mkey(&mut p.h, 1);
    let dma = dma_mkey(&mut p.h);
    let new_bus = p.h.mem.map(4096, true);
    let xlt = p.h.mem.map(64, true);
    p.h.mem.put(xlt, &(new_bus | 3).to_be_bytes());
    // A free pool mkey gives no access; one MTT padded to 64 bytes (4 octowords) loads it.
    let va = 0x5000_0000u64;
    let rw = RW | umr::ACC_LOCAL_WRITE;
    let w = umr_pas_wqe(&u, key, pd, rw, va, 4096, 4, (dma, xlt));
    p.h.post_bytes(&mut u, &w);
    p.run(0);
    let c = p.sends();
    assert_eq!((c.len(), c[0].opcode), (1, cqe_op::REQ), "{c:x?}");
    let data = pattern(64, 3);
    p.h.mem.put(src.bus, &data);
    let c = write_via(&mut p, &src, va + 100, key, 64);
    assert_eq!(c.opcode, cqe_op::REQ, "{c:x?}");
    assert_eq!(p.h.mem.get(new_bus + 100, 64), data);
    // upstream's dereg to the pool: revoked, the key reaches nothing.
    let w = umr_revoke_wqe(&u, key, pd);
    p.h.post_bytes(&mut u, &w);
    p.run(0);
    assert_eq!(p.sends()[0].opcode, cqe_op::REQ);
    let c = write_via(&mut p, &src, va, key, 16);
    assert_eq!(c.syndrome, csyn::REMOTE_ACCESS);
}

// ---------------------------------------------------------------------------------------
// Device memory (MEMIC, `memic.rs`).

/// ALLOC_MEMIC of `size` bytes in the range of `pages` pages from the window's page `page`.
fn alloc_memic(h: &mut Host, page: u64, pages: u64, size: u32) -> Result<u64, (Status, u32)> {
    let mut b = inbox(op::ALLOC_MEMIC, 0, 0, alloc_memic_in::SIZE_BYTES);
    alloc_memic_in::range_start_addr
        .set64(&mut b, crate::fwsim::memic::BAR_START + page * 4096)
        .unwrap();
    alloc_memic_in::range_size
        .set(&mut b, (pages * 4096) as u32)
        .unwrap();
    alloc_memic_in::memic_size.set(&mut b, size).unwrap();
    let mut out = vec![0u8; alloc_memic_out::SIZE_BYTES];
    let c = h.fw.exec(&b, &mut out).unwrap();
    if c.status != Status::OK {
        return Err((c.status, c.syndrome));
    }
    Ok(alloc_memic_out::memic_start_addr.get64(&out).unwrap())
}

/// A zero-based MEMIC mkey (upstream `mlx5_ib_get_dm_mr()`) over `len` bytes from BAR offset
/// `start`; its `bus` is where the bytes are in the device's memory.
fn memic_mr(h: &mut Host, start: u64, len: u64) -> Mr {
    let mut b = inbox(op::CREATE_MKEY, 0, 0, create_mkey_in::SIZE_BYTES);
    let m = |f| create_mkey_in::memory_key_mkey_entry.inner(f);
    m(mkc::pd).set(&mut b, h.pd).unwrap();
    m(mkc::qpn).set(&mut b, 0xff_ffff).unwrap();
    m(mkc::access_mode_1_0).set(&mut b, 1).unwrap();
    m(mkc::access_mode_4_2).set(&mut b, 1).unwrap();
    m(mkc::mkey_7_0).set(&mut b, 0x5d).unwrap();
    for f in [mkc::lr, mkc::lw, mkc::rr, mkc::rw, mkc::a] {
        m(f).set(&mut b, 1).unwrap();
    }
    m(mkc::start_addr).set64(&mut b, start).unwrap();
    m(mkc::len).set64(&mut b, len).unwrap();
    let out = ok(&mut h.fw, &b, create_mkey_out::SIZE_BYTES);
    let index = create_mkey_out::mkey_index.get(&out).unwrap();
    Mr {
        key: (index << 8) | 0x5d,
        va: 0,
        bus: crate::fwsim::dma::DEV_MEM_BUS + (start - crate::fwsim::memic::BAR_START),
    }
}

#[test]
fn memic_mkeys_reach_the_devices_memory() {
    use crate::fwsim::dma::DEV_MEM_BUS;
    use crate::fwsim::memic::SIZE;
    let mut p = pair(QPC_ST_RC);
    p.h.mem.map_at(DEV_MEM_BUS, SIZE as usize);
    let (mut a, mut b) = (p.a, p.b);
    // Two allocations in the window's second page: the second follows the first.
    let first = alloc_memic(&mut p.h, 1, 1, 2048).unwrap();
    let second = alloc_memic(&mut p.h, 1, 1, 2048).unwrap();
    assert_eq!(second, first + 2048);
    assert_eq!(
        alloc_memic(&mut p.h, 1, 1, 64),
        Err((Status::NO_RES_ERR, syn::MEMIC_FULL))
    );
    let dm = memic_mr(&mut p.h, second, 2048);
    let host = p.h.mr(4096, ALL);
    let data = pattern(1024, 9);
    p.h.mem.put(host.bus, &data);
    // WRITE from host memory into DM, READ it back elsewhere, a SEND gathered from DM, a
    // receive scattered into DM, FETCH_ADD on a DM word.
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(host.sge(0, 1024))
            .remote(&dm, 512),
    );
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(host.sge(2048, 1024))
            .remote(&dm, 512),
    );
    p.h.post_recv(&mut b, &[host.sge(3072, 256)]);
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(dm.sge(512, 256)));
    assert_eq!(p.run(0).wqes, 3);
    assert_eq!(p.h.mem.get(dm.bus + 512, 1024), data);
    assert_eq!(p.h.mem.get(host.bus + 2048, 1024), data);
    assert_eq!(p.h.mem.get(host.bus + 3072, 256), data[..256]);
    p.h.post_recv(&mut b, &[dm.sge(0, 128)]);
    p.h.post(&mut a, &Wr::new(wqe_op::SEND).sge(host.sge(0, 128)));
    p.h.mem.put(dm.bus + 1600, &40u64.to_le_bytes());
    let mut fa = Wr::new(wqe_op::ATOMIC_FA)
        .sge(host.sge(4000, 8))
        .remote(&dm, 1600);
    fa.atomic = Some((2, 0));
    p.h.post(&mut a, &fa);
    assert_eq!(p.run(0).wqes, 2);
    assert_eq!(p.h.mem.get(dm.bus, 128), data[..128]);
    let le = |b: Vec<u8>| u64::from_le_bytes(b.try_into().unwrap());
    assert_eq!(le(p.h.mem.get(dm.bus + 1600, 8)), 42);
    assert_eq!(le(p.h.mem.get(host.bus + 4000, 8)), 40);
    // The allocation before the mkey's was never touched.
    assert_eq!(
        p.h.mem
            .get(DEV_MEM_BUS + (first - crate::fwsim::memic::BAR_START), 2048),
        vec![0; 2048]
    );
    let s = p.sends();
    assert!(s.iter().all(|c| c.opcode == cqe_op::REQ), "{s:x?}");
    assert_eq!(p.h.mem.faults(), 0);
    // Past the mkey's 2048 bytes: a remote access error, nothing written.
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(host.sge(0, 16))
            .remote(&dm, 2040),
    );
    p.run(0);
    let s = p.sends();
    assert_eq!(s.last().map(|c| c.opcode), Some(cqe_op::REQ_ERR), "{s:x?}");
    assert_eq!(p.h.mem.get(dm.bus + 2040, 8), vec![0; 8]);
}

// ---------------------------------------------------------------------------------------
// The PMA's port counters (`pma.rs`).

#[test]
fn pma_counts_the_packets_and_octets_of_messages() {
    use crate::fwsim::mad::{class, method, MAD_SIZE};
    let mut p = pair(QPC_ST_RC);
    let mut a = p.a;
    let local = p.h.mr(8192, ALL);
    let remote = p.h.mr(8192, ALL);
    // Path MTU 1024 (`Path::to`): a 3000-byte WRITE is 3 packets; a 1000-byte READ is one
    // request packet out and one response packet back.
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_WRITE)
            .sge(local.sge(0, 3000))
            .remote(&remote, 0),
    );
    p.h.post(
        &mut a,
        &Wr::new(wqe_op::RDMA_READ)
            .sge(local.sge(4096, 1000))
            .remote(&remote, 0),
    );
    assert_eq!(p.run(0).wqes, 2);
    // Both QPs are on the one port: it sends and receives everything.
    let octets = (3000 + 3 * 26) + 26 + (1000 + 26);
    let t = p.h.fw.port_traffic(0);
    assert_eq!((t.xmit_pkts, t.rcv_pkts), (5, 5));
    assert_eq!((t.xmit_bytes, t.rcv_bytes), (octets, octets));
    // PortCountersExtended through the PMA: data in 4-byte words.
    let mut m = [0u8; MAD_SIZE];
    m[0] = 1;
    m[1] = class::PERF_MGMT;
    m[2] = 1;
    m[3] = method::GET;
    m[16..18].copy_from_slice(&crate::fwsim::pma::attr::PORT_COUNTERS_EXT.to_be_bytes());
    let mut out = [0u8; MAD_SIZE];
    p.h.fw.process_mad(0, 0, &m, &mut out);
    let be = |o: usize| u64::from_be_bytes(out[64 + o..64 + o + 8].try_into().unwrap());
    assert_eq!(
        (be(8), be(16), be(24), be(32)),
        (octets / 4, octets / 4, 5, 5)
    );
}

#[path = "dct_tests.rs"]
mod dct_tests;
#[path = "engine/wire_tests.rs"]
mod wire_tests;

#[path = "engine/rc_tests.rs"]
mod rc_tests;
