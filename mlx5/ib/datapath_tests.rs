// SPDX-License-Identifier: GPL-2.0

//! KUnit `mlx5_ib_rs_kdatapath`: kernel consumers move data through the simulated ConnectX.
//!
//! Two kernel RC QPs, on one function (loopback) and on two functions of one fabric, exchange
//! SEND, SEND_IMM, RDMA_WRITE (signaled and unsignaled), RDMA_WRITE_IMM, RDMA_READ and the
//! atomics through the core's kernel verbs (`Qp::post_send`/`post_recv`, `Cq::poll`), every
//! byte checked; completions arrive through `poll_cq` and through the completion handler
//! after `req_notify_cq`. A bad lkey completes with `IB_WC_LOC_PROT_ERR` and the QP's other
//! work is flushed; a bus address the device was never given is a DMA fault (an error CQE,
//! the IOMMU's fault count), not an access. Every case ends with the simulator's counts, the
//! IOMMU's mappings and the event table back to zero.

use crate::dev::Mlx5Dev;
use crate::fwsim::profile::{LinkLayer, CONNECTX7};
use crate::fwsim::Config;
use crate::hw::{DmaBuf, Mlx5Hw};
use crate::ib::device::Mlx5Ib;
use crate::simdev::SimFunction;
use ib_core_rs::attr::Gid;
use ib_core_rs::device::Device;
use ib_core_rs::verbs::{
    send_flags, wc_flags, AccessFlags, AhAttr, Cq, CqHandler, CqInitAttr, CqNotify, GlobalRoute,
    Mr, Pd, Qp, QpAttr, QpAttrMask, QpCap, QpEvent, QpHandler, QpInitAttr, QpState, QpType, RecvWr,
    SendWr, Sge, Wc, WcOpcode, WcStatus, WrOpcode,
};
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::Arc;
use kernel::time::{delay::fsleep, Delta, Instant, Monotonic};

/// `assert_eq!` for helpers: KUnit turns assertions into test failures only in a test's own
/// body, so helpers log and return `EINVAL` instead of panicking.
macro_rules! ensure_eq {
    ($a:expr, $b:expr $(,)?) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            pr_err!("kdatapath: line {}: {:?} != {:?}\n", line!(), a, b);
            return Err(EINVAL);
        }
    }};
}

/// `assert!` for helpers (see [`ensure_eq`]).
macro_rules! ensure {
    ($c:expr $(,)?) => {{
        if !$c {
            pr_err!("kdatapath: line {}: {}\n", line!(), stringify!($c));
            return Err(EINVAL);
        }
    }};
}

/// Counts completion events and CQ error events.
struct Comps(Atomic<u32>, Atomic<u32>);

impl CqHandler for Comps {
    fn completion(&self) {
        self.0.fetch_add(1, Relaxed);
    }

    fn event(&self) {
        self.1.fetch_add(1, Relaxed);
    }
}

/// Records the QP events seen, one bit per `ib_event_type`.
struct QpEvents(Atomic<u32>);

impl QpHandler for QpEvents {
    fn event(&self, e: QpEvent) {
        let bit = 1u32 << e.ib_event_type();
        let mut cur = self.0.load(Relaxed);
        while let Err(now) = self.0.cmpxchg(cur, cur | bit, Relaxed) {
            cur = now;
        }
    }
}

fn owner() -> ib_core_rs::restrack::Owner {
    ib_core_rs::kernel_owner!()
}

/// One side: a registered function's device, its PD, CQ, MR over all memory and a QP.
struct Side {
    cq: Arc<Cq<Mlx5Ib>>,
    qp: Arc<Qp<Mlx5Ib>>,
    mr: Arc<Mr<Mlx5Ib>>,
    _pd: Arc<Pd<Mlx5Ib>>,
    comps: Arc<Comps>,
    events: Arc<QpEvents>,
    lid: u16,
    /// RoCE: the port's RoCE v2 GID (index 1) and MAC.
    roce: Option<(Gid, [u8; 6])>,
}

impl Side {
    fn new(ib: &Arc<Device<Mlx5Ib>>) -> Result<Self> {
        Self::with(ib, 16, 63)
    }

    /// A side with queues of `depth` requests and a CQ of at least `cqe` entries.
    fn with(ib: &Arc<Device<Mlx5Ib>>, depth: u32, cqe: u32) -> Result<Self> {
        Self::on_vector(ib, depth, cqe, 0)
    }

    /// As [`Side::with`], the CQ on completion vector `comp_vector`.
    fn on_vector(ib: &Arc<Device<Mlx5Ib>>, depth: u32, cqe: u32, comp_vector: u32) -> Result<Self> {
        let pd = Pd::alloc(ib, owner())?;
        let comps = Arc::new(Comps(Atomic::new(0), Atomic::new(0)), GFP_KERNEL)?;
        let events = Arc::new(QpEvents(Atomic::new(0)), GFP_KERNEL)?;
        let qh: Arc<dyn QpHandler> = events.clone();
        let h: Arc<dyn CqHandler> = comps.clone();
        let cq = Cq::create(
            ib,
            &CqInitAttr {
                cqe,
                comp_vector,
                flags: 0,
            },
            Some(h),
            owner(),
        )?;
        let qp = Qp::create(
            &pd,
            &QpInitAttr {
                send_cq: &cq,
                recv_cq: &cq,
                srq: None,
                qp_type: QpType::Rc,
                cap: QpCap {
                    max_send_wr: depth,
                    max_recv_wr: depth,
                    max_send_sge: 2,
                    max_recv_sge: 2,
                    max_inline_data: 0,
                },
                sq_sig_all: false,
                event_handler: Some(qh),
            },
            owner(),
        )?;
        let access = AccessFlags(
            AccessFlags::LOCAL_WRITE.0
                | AccessFlags::REMOTE_READ.0
                | AccessFlags::REMOTE_WRITE.0
                | AccessFlags::REMOTE_ATOMIC.0,
        );
        let mr = Mr::get_dma_mr(&pd, access, owner())?;
        let lid = u16::try_from(Device::query_port(ib, 1)?.lid).map_err(|_| EINVAL)?;
        let roce = match ib.data().ports.first().and_then(|p| p.mac) {
            Some(mac) => Some((ib.query_gid(1, 1)?, mac)),
            None => None,
        };
        Ok(Side {
            cq,
            qp,
            mr,
            _pd: pd,
            comps,
            events,
            lid,
            roce,
        })
    }

    /// RST → INIT → RTR → RTS towards `peer`.
    fn connect(&self, peer: &Side) -> Result {
        self.to_rtr(peer)?;
        self.to_rts()
    }

    /// RST → INIT → RTR towards `peer`.
    fn to_rtr(&self, peer: &Side) -> Result {
        let m = |a: &[QpAttrMask]| a.iter().fold(QpAttrMask(0), |x, y| x | *y);
        self.qp.modify(
            &QpAttr {
                qp_state: QpState::Init,
                port_num: 1,
                qp_access_flags: AccessFlags::REMOTE_READ.0
                    | AccessFlags::REMOTE_WRITE.0
                    | AccessFlags::REMOTE_ATOMIC.0,
                ..QpAttr::default()
            },
            m(&[
                QpAttrMask::STATE,
                QpAttrMask::PORT,
                QpAttrMask::PKEY_INDEX,
                QpAttrMask::ACCESS_FLAGS,
            ]),
        )?;
        self.qp.modify(
            &QpAttr {
                qp_state: QpState::Rtr,
                path_mtu: 3,
                dest_qp_num: peer.qp.qp_num(),
                rq_psn: 0x100,
                max_dest_rd_atomic: 4,
                min_rnr_timer: 1,
                ah_attr: match peer.roce {
                    // RoCE: the GRH is mandatory, routing is by GID (v2 at index 1).
                    Some((dgid, dmac)) => AhAttr {
                        port_num: 1,
                        grh: Some(GlobalRoute {
                            dgid,
                            flow_label: 0,
                            sgid_index: 1,
                            hop_limit: 64,
                            traffic_class: 0,
                        }),
                        dmac,
                        ..AhAttr::default()
                    },
                    None => AhAttr {
                        dlid: peer.lid,
                        port_num: 1,
                        ..AhAttr::default()
                    },
                },
                ..QpAttr::default()
            },
            m(&[
                QpAttrMask::STATE,
                QpAttrMask::AV,
                QpAttrMask::PATH_MTU,
                QpAttrMask::DEST_QPN,
                QpAttrMask::RQ_PSN,
                QpAttrMask::MAX_DEST_RD_ATOMIC,
                QpAttrMask::MIN_RNR_TIMER,
            ]),
        )
    }

    /// RTR → RTS.
    fn to_rts(&self) -> Result {
        let m = |a: &[QpAttrMask]| a.iter().fold(QpAttrMask(0), |x, y| x | *y);
        self.qp.modify(
            &QpAttr {
                qp_state: QpState::Rts,
                sq_psn: 0x100,
                timeout: 14,
                retry_cnt: 7,
                rnr_retry: 7,
                max_rd_atomic: 4,
                ..QpAttr::default()
            },
            m(&[
                QpAttrMask::STATE,
                QpAttrMask::SQ_PSN,
                QpAttrMask::TIMEOUT,
                QpAttrMask::RETRY_CNT,
                QpAttrMask::RNR_RETRY,
                QpAttrMask::MAX_QP_RD_ATOMIC,
            ]),
        )
    }
}

/// Polls `cq` until `n` completions arrived (2 s at most: the worker rescans every jiffy).
fn poll_n(cq: &Cq<Mlx5Ib>, n: usize) -> Result<KVec<Wc>> {
    let mut out = KVec::with_capacity(n, GFP_KERNEL)?;
    let t0 = Instant::<Monotonic>::now();
    while out.len() < n {
        let mut wc = [Wc::default(); 4];
        let got = cq.poll(&mut wc)?;
        for w in wc.iter().take(got) {
            out.push(*w, GFP_KERNEL)?;
        }
        if got == 0 {
            if t0.elapsed().as_millis() > 2000 {
                pr_err!("kdatapath: {} of {} completions\n", out.len(), n);
                return Err(ETIMEDOUT);
            }
            fsleep(Delta::from_micros(500));
        }
    }
    Ok(out)
}

/// Waits until `c` counted at least `n` completion events.
fn wait_events(c: &Comps, n: u32) -> Result {
    let t0 = Instant::<Monotonic>::now();
    while c.0.load(Relaxed) < n {
        if t0.elapsed().as_millis() > 2000 {
            return Err(ETIMEDOUT);
        }
        fsleep(Delta::from_micros(500));
    }
    Ok(())
}

fn fill(b: &DmaBuf, seed: u8) -> Result {
    let mut chunk = [0u8; 256];
    for off in (0..b.len()).step_by(256) {
        for (i, x) in chunk.iter_mut().enumerate() {
            *x = seed.wrapping_add((off / 256) as u8).wrapping_mul(31) ^ i as u8;
        }
        b.write(off, &chunk)?;
    }
    Ok(())
}

/// Whether `a[ao..ao+len]` equals `b[bo..bo+len]`.
fn same(a: &DmaBuf, ao: usize, b: &DmaBuf, bo: usize, len: usize) -> Result<bool> {
    let mut x = [0u8; 256];
    let mut y = [0u8; 256];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(256);
        a.read(ao + done, &mut x[..n])?;
        b.read(bo + done, &mut y[..n])?;
        if x[..n] != y[..n] {
            return Ok(false);
        }
        done += n;
    }
    Ok(true)
}

fn sge(b: &DmaBuf, off: usize, len: u32, mr: &Mr<Mlx5Ib>) -> Sge {
    Sge {
        addr: b.bus(off),
        length: len,
        lkey: mr.lkey(),
    }
}

/// SEND, SEND_IMM, WRITE (unsignaled + signaled), WRITE_IMM, READ and the atomics from `a`
/// to `b`, every byte checked. `ha`/`hb` are the functions' hardware (memory
/// is mapped for the device that accesses it).
fn exchange(a: &Side, ha: &dyn Mlx5Hw, b: &Side, hb: &dyn Mlx5Hw) -> Result {
    let src = ha.alloc_coherent(4 * 4096)?;
    let dst = hb.alloc_coherent(4 * 4096)?;
    fill(&src, 7)?;

    // SEND of 4 KiB from two SGEs into a receive of two SGEs, the completion handler armed.
    a.cq.req_notify(CqNotify::NextComp)?;
    b.cq.req_notify(CqNotify::NextComp)?;
    let rs = [sge(&dst, 0, 1000, &b.mr), sge(&dst, 1000, 3096, &b.mr)];
    b.qp.post_recv(&[RecvWr {
        wr_id: 0xb1,
        sg_list: &rs,
    }])?;
    let ss = [sge(&src, 0, 2048, &a.mr), sge(&src, 2048, 2048, &a.mr)];
    a.qp.post_send(&[SendWr {
        wr_id: 0xa1,
        opcode: WrOpcode::Send,
        send_flags: send_flags::SIGNALED,
        sg_list: &ss,
        ..SendWr::default()
    }])?;
    let w = poll_n(&a.cq, 1)?;
    ensure_eq!(
        (w[0].wr_id, w[0].status, w[0].opcode, w[0].qp_num),
        (0xa1, WcStatus::Success, WcOpcode::Send, a.qp.qp_num())
    );
    let w = poll_n(&b.cq, 1)?;
    ensure_eq!(
        (w[0].wr_id, w[0].status, w[0].opcode, w[0].byte_len),
        (0xb1, WcStatus::Success, WcOpcode::Recv, 4096)
    );
    ensure_eq!(w[0].src_qp, a.qp.qp_num());
    ensure!(same(&src, 0, &dst, 0, 4096)?);
    wait_events(&a.comps, 1)?;
    wait_events(&b.comps, 1)?;

    // SEND_IMM of 0 bytes: the immediate only.
    b.qp.post_recv(&[RecvWr {
        wr_id: 0xb2,
        sg_list: &[],
    }])?;
    a.qp.post_send(&[SendWr {
        wr_id: 0xa2,
        opcode: WrOpcode::SendImm,
        send_flags: send_flags::SIGNALED,
        imm_data: 0x1234_5678,
        ..SendWr::default()
    }])?;
    ensure_eq!(poll_n(&a.cq, 1)?[0].status, WcStatus::Success);
    let w = poll_n(&b.cq, 1)?;
    ensure_eq!(
        (
            w[0].wr_id,
            w[0].byte_len,
            w[0].imm_data,
            w[0].wc_flags & wc_flags::WITH_IMM
        ),
        (0xb2, 0, 0x1234_5678, wc_flags::WITH_IMM)
    );

    // Three unsignaled WRITEs and a signaled one: one completion retires all four.
    let mut wrs = [SendWr::default(); 4];
    let segs = [
        [sge(&src, 4096, 1024, &a.mr)],
        [sge(&src, 5120, 1024, &a.mr)],
        [sge(&src, 6144, 1024, &a.mr)],
        [sge(&src, 7168, 1024, &a.mr)],
    ];
    for (i, (w, s)) in wrs.iter_mut().zip(segs.iter()).enumerate() {
        *w = SendWr {
            wr_id: 0xa10 + i as u64,
            opcode: WrOpcode::RdmaWrite,
            send_flags: if i == 3 { send_flags::SIGNALED } else { 0 },
            sg_list: s,
            remote_addr: dst.bus(4096 + i * 1024),
            rkey: b.mr.rkey(),
            ..SendWr::default()
        };
    }
    a.qp.post_send(&wrs)?;
    let w = poll_n(&a.cq, 1)?;
    ensure_eq!(
        (w[0].wr_id, w[0].status, w[0].opcode),
        (0xa13, WcStatus::Success, WcOpcode::RdmaWrite)
    );
    ensure!(same(&src, 4096, &dst, 4096, 4096)?);

    // WRITE_IMM: data at the remote address, the immediate in a receive completion.
    b.qp.post_recv(&[RecvWr {
        wr_id: 0xb3,
        sg_list: &[],
    }])?;
    let s = [sge(&src, 8192, 512, &a.mr)];
    a.qp.post_send(&[SendWr {
        wr_id: 0xa3,
        opcode: WrOpcode::RdmaWriteImm,
        send_flags: send_flags::SIGNALED,
        sg_list: &s,
        remote_addr: dst.bus(8192),
        rkey: b.mr.rkey(),
        imm_data: 0xfeed,
        ..SendWr::default()
    }])?;
    ensure_eq!(poll_n(&a.cq, 1)?[0].opcode, WcOpcode::RdmaWrite);
    let w = poll_n(&b.cq, 1)?;
    ensure_eq!(
        (w[0].wr_id, w[0].opcode, w[0].imm_data),
        (0xb3, WcOpcode::RecvRdmaWithImm, 0xfeed)
    );
    ensure!(same(&src, 8192, &dst, 8192, 512)?);

    // READ back what the first SEND delivered, into a fresh part of the source buffer.
    let s = [sge(&src, 12288, 4096, &a.mr)];
    a.qp.post_send(&[SendWr {
        wr_id: 0xa4,
        opcode: WrOpcode::RdmaRead,
        send_flags: send_flags::SIGNALED,
        sg_list: &s,
        remote_addr: dst.bus(0),
        rkey: b.mr.rkey(),
        ..SendWr::default()
    }])?;
    let w = poll_n(&a.cq, 1)?;
    ensure_eq!(
        (w[0].wr_id, w[0].status, w[0].opcode, w[0].byte_len),
        (0xa4, WcStatus::Success, WcOpcode::RdmaRead, 4096)
    );
    ensure!(same(&dst, 0, &src, 12288, 4096)?);

    // Fetch-and-add, then compare-and-swap on a remote 8-byte word.
    dst.write(12288, &40u64.to_ne_bytes())?;
    let s = [sge(&src, 12288, 8, &a.mr)];
    a.qp.post_send(&[SendWr {
        wr_id: 0xa5,
        opcode: WrOpcode::AtomicFetchAdd,
        send_flags: send_flags::SIGNALED,
        sg_list: &s,
        remote_addr: dst.bus(12288),
        rkey: b.mr.rkey(),
        compare_add: 2,
        ..SendWr::default()
    }])?;
    let w = poll_n(&a.cq, 1)?;
    ensure_eq!(
        (w[0].status, w[0].opcode, w[0].byte_len),
        (WcStatus::Success, WcOpcode::FetchAdd, 8)
    );
    let mut v = [0u8; 8];
    src.read(12288, &mut v)?;
    ensure_eq!(u64::from_ne_bytes(v), 40);
    a.qp.post_send(&[SendWr {
        wr_id: 0xa6,
        opcode: WrOpcode::AtomicCmpSwap,
        send_flags: send_flags::SIGNALED,
        sg_list: &s,
        remote_addr: dst.bus(12288),
        rkey: b.mr.rkey(),
        compare_add: 42,
        swap: 7,
        ..SendWr::default()
    }])?;
    ensure_eq!(poll_n(&a.cq, 1)?[0].opcode, WcOpcode::CompSwap);
    src.read(12288, &mut v)?;
    ensure_eq!(u64::from_ne_bytes(v), 42);
    dst.read(12288, &mut v)?;
    ensure_eq!(u64::from_ne_bytes(v), 7);
    Ok(())
}

fn ib_of(d: &Mlx5Dev) -> Result<&Arc<Device<Mlx5Ib>>> {
    d.ib().ok_or(ENODEV)
}

/// Whether the simulator's objects and the IOMMU's mappings are back to zero.
fn is_clean(f: &SimFunction) -> bool {
    f.counts().is_zero() && f.iommu().mappings() == 0
}

#[kunit_tests(mlx5_ib_rs_kdatapath)]
mod tests {
    use super::*;

    #[test]
    fn loopback_on_one_function() -> Result {
        for eth in [false, true] {
            loopback(eth)?;
        }
        Ok(())
    }

    /// Loopback on an InfiniBand function (by LID) or a RoCE one (by GID).
    fn loopback(eth: bool) -> Result {
        let f = SimFunction::one_port(fmt!("kunit.kdp"), eth, 11)?;
        {
            let d = Mlx5Dev::probe(f.clone())?;
            let ib = ib_of(&d)?;
            let base = (f.counts(), f.iommu().mappings());
            {
                let a = Side::new(ib)?;
                let b = Side::new(ib)?;
                a.connect(&b)?;
                b.connect(&a)?;
                exchange(&a, &*f, &b, &*f)?;
                // The UAR entry points the UAR trap uses: a kick and stores at unknown
                // offsets are wake-ups only.
                f.kick();
                f.uar_doorbell(ib.data().uar, 0x40, 0);
                ensure_eq!(ib.data().events.len(), (2, 2));
            }
            ensure_eq!((f.counts(), f.iommu().mappings()), base);
            ensure_eq!(ib.data().events.len(), (0, 0));
        }
        ensure!(is_clean(&f));
        Ok(())
    }

    #[test]
    fn two_functions_of_one_fabric() -> Result {
        for ll in [LinkLayer::Ib, LinkLayer::Ethernet] {
            two_functions(ll)?;
        }
        Ok(())
    }

    /// Two functions of one fabric: by LID on InfiniBand, by GID on RoCE.
    fn two_functions(link_layer: LinkLayer) -> Result {
        let mut list = KVec::new();
        for i in 0..2u32 {
            list.push(
                (
                    CString::try_from_fmt(fmt!("kunit.kdp2.{}", i))?,
                    Config {
                        profile: CONNECTX7,
                        link_layer,
                        num_ports: 1,
                        serial: 21 + i,
                        memic: true,
                    },
                ),
                GFP_KERNEL,
            )?;
        }
        let fs = SimFunction::new_fabric(list)?;
        let (fa, fb) = match (fs.first(), fs.get(1)) {
            (Some(a), Some(b)) => (a.clone(), b.clone()),
            _ => return Err(EINVAL),
        };
        ensure!(Arc::ptr_eq(fa.fabric(), fb.fabric()));
        {
            let da = Mlx5Dev::probe(fa.clone())?;
            let db = Mlx5Dev::probe(fb.clone())?;
            let a = Side::new(ib_of(&da)?)?;
            let b = Side::new(ib_of(&db)?)?;
            // Unique LIDs (GIDs on RoCE) per function: that is how the fabric routes.
            if link_layer == LinkLayer::Ib {
                ensure!(a.lid != b.lid);
            } else {
                ensure!(a.roce.map(|r| r.0) != b.roce.map(|r| r.0));
            }
            a.connect(&b)?;
            b.connect(&a)?;
            exchange(&a, &*fa, &b, &*fb)?;
        }
        ensure!(is_clean(&fa));
        ensure!(is_clean(&fb));
        Ok(())
    }

    /// Small queues wrap many times: a 4-deep SQ and RQ and 8-entry CQs (the owner bit flips
    /// every 8 CQEs), 150 SENDs of varying sizes in pairs, the first of each pair unsignaled,
    /// every completion's wr_id and length and every received byte checked.
    #[test]
    fn queues_wrap_around() -> Result {
        let f = SimFunction::one_port(fmt!("kunit.kdp.wrap"), false, 15)?;
        {
            let d = Mlx5Dev::probe(f.clone())?;
            let ib = ib_of(&d)?;
            let a = Side::with(ib, 4, 7)?;
            let b = Side::with(ib, 4, 7)?;
            assert_eq!(a.cq.data().log_size, 3);
            a.connect(&b)?;
            b.connect(&a)?;
            let src = f.alloc_coherent(2 * 4096)?;
            let dst = f.alloc_coherent(2 * 4096)?;
            fill(&src, 3)?;
            for i in 0..75u64 {
                let len = |k: u64| 1 + ((i * 2 + k) * 97 % 4000) as u32;
                let off = |k: u64| ((i * 2 + k) * 61 % 4096) as usize;
                let r0 = [sge(&dst, 0, 4096, &b.mr)];
                let r1 = [sge(&dst, 4096, 4096, &b.mr)];
                b.qp.post_recv(&[
                    RecvWr {
                        wr_id: i * 2,
                        sg_list: &r0,
                    },
                    RecvWr {
                        wr_id: i * 2 + 1,
                        sg_list: &r1,
                    },
                ])?;
                let s0 = [sge(&src, off(0), len(0), &a.mr)];
                let s1 = [sge(&src, off(1), len(1), &a.mr)];
                a.qp.post_send(&[
                    SendWr {
                        wr_id: i * 2,
                        sg_list: &s0,
                        ..SendWr::default()
                    },
                    SendWr {
                        wr_id: i * 2 + 1,
                        send_flags: send_flags::SIGNALED,
                        sg_list: &s1,
                        ..SendWr::default()
                    },
                ])?;
                let w = poll_n(&a.cq, 1)?;
                assert_eq!((w[0].wr_id, w[0].status), (i * 2 + 1, WcStatus::Success));
                let w = poll_n(&b.cq, 2)?;
                for (k, c) in w.iter().enumerate() {
                    let k = k as u64;
                    assert_eq!(
                        (c.wr_id, c.status, c.byte_len),
                        (i * 2 + k, WcStatus::Success, len(k))
                    );
                    let at = k as usize * 4096;
                    assert!(same(&src, off(k), &dst, at, len(k) as usize)?);
                }
            }
        }
        assert!(is_clean(&f));
        Ok(())
    }

    /// A CQ that overruns (more completions than entries, none polled) raises a CQ error,
    /// delivered to the consumer's handler as IB_EVENT_CQ_ERR.
    #[test]
    fn cq_overrun_is_a_cq_error_event() -> Result {
        let f = SimFunction::one_port(fmt!("kunit.kdp.ovr"), false, 16)?;
        {
            let d = Mlx5Dev::probe(f.clone())?;
            let ib = ib_of(&d)?;
            let a = Side::with(ib, 16, 7)?;
            let b = Side::new(ib)?;
            a.connect(&b)?;
            b.connect(&a)?;
            let wrs = [SendWr {
                wr_id: 9,
                opcode: WrOpcode::Send,
                send_flags: send_flags::SIGNALED,
                ..SendWr::default()
            }; 12];
            for i in 0..12 {
                b.qp.post_recv(&[RecvWr {
                    wr_id: i,
                    sg_list: &[],
                }])?;
            }
            a.qp.post_send(&wrs)?;
            let t0 = Instant::<Monotonic>::now();
            while a.comps.1.load(Relaxed) == 0 && t0.elapsed().as_millis() < 2000 {
                fsleep(Delta::from_micros(500));
            }
            assert_eq!(a.comps.1.load(Relaxed), 1);
            assert_eq!(b.comps.1.load(Relaxed), 0);
            assert_eq!(poll_n(&b.cq, 12)?.len(), 12);
        }
        assert!(is_clean(&f));
        Ok(())
    }

    /// Destroying a QP and its CQ while their work is executing: the destroys succeed, no
    /// completion handler runs after the CQ's destroy returned, and everything (mappings
    /// included) is released.
    #[test]
    fn destroy_while_traffic_flows() -> Result {
        let f = SimFunction::one_port(fmt!("kunit.kdp.destroy"), false, 17)?;
        {
            let d = Mlx5Dev::probe(f.clone())?;
            let ib = ib_of(&d)?;
            let a = Side::new(ib)?;
            let b = Side::new(ib)?;
            a.connect(&b)?;
            b.connect(&a)?;
            let src = f.alloc_coherent(16 * 4096)?;
            let dst = f.alloc_coherent(16 * 4096)?;
            for round in 0..4u64 {
                let rs = [sge(&dst, 0, 16 * 4096, &b.mr)];
                for i in 0..8 {
                    b.qp.post_recv(&[RecvWr {
                        wr_id: round * 8 + i,
                        sg_list: &rs,
                    }])?;
                }
                a.cq.req_notify(CqNotify::NextComp)?;
                let ss = [sge(&src, 0, 16 * 4096, &a.mr)];
                let wrs = [SendWr {
                    wr_id: round,
                    opcode: WrOpcode::Send,
                    send_flags: send_flags::SIGNALED,
                    sg_list: &ss,
                    ..SendWr::default()
                }; 8];
                a.qp.post_send(&wrs)?;
                // Drain some, then let the next round pile up.
                if round < 3 {
                    poll_n(&a.cq, 8)?;
                    poll_n(&b.cq, 8)?;
                }
            }
            assert!(Qp::destroy(a.qp.clone()).is_ok());
            assert!(Cq::destroy(a.cq.clone()).is_ok());
            let seen = a.comps.0.load(Relaxed);
            fsleep(Delta::from_millis(20));
            assert_eq!(a.comps.0.load(Relaxed), seen);
        }
        assert!(is_clean(&f));
        Ok(())
    }

    /// A send with a bad lkey completes with IB_WC_LOC_PROT_ERR; the QP is in error, and
    /// what was posted after it is flushed (IB_WC_WR_FLUSH_ERR).
    #[test]
    fn bad_lkey_then_flush() -> Result {
        let f = SimFunction::one_port(fmt!("kunit.kdp.err"), false, 12)?;
        {
            let d = Mlx5Dev::probe(f.clone())?;
            let ib = ib_of(&d)?;
            let a = Side::new(ib)?;
            let b = Side::new(ib)?;
            a.connect(&b)?;
            b.connect(&a)?;
            let buf = f.alloc_coherent(4096)?;
            let bad = [Sge {
                addr: buf.bus(0),
                length: 64,
                lkey: a.mr.lkey() ^ 0x5500,
            }];
            let good = [sge(&buf, 0, 64, &a.mr)];
            b.qp.post_recv(&[RecvWr {
                wr_id: 0xb1,
                sg_list: &good,
            }])?;
            a.qp.post_send(&[SendWr {
                wr_id: 1,
                opcode: WrOpcode::Send,
                send_flags: send_flags::SIGNALED,
                sg_list: &bad,
                ..SendWr::default()
            }])?;
            let w = poll_n(&a.cq, 1)?;
            assert_eq!((w[0].wr_id, w[0].status), (1, WcStatus::LocProtErr));
            a.qp.post_send(&[SendWr {
                wr_id: 2,
                opcode: WrOpcode::Send,
                send_flags: send_flags::SIGNALED,
                sg_list: &good,
                ..SendWr::default()
            }])?;
            let w = poll_n(&a.cq, 1)?;
            assert_eq!((w[0].wr_id, w[0].status), (2, WcStatus::WrFlushErr));
            assert_eq!(a.qp.query()?.qp_state, QpState::Err);
        }
        assert!(is_clean(&f));
        Ok(())
    }

    /// QP events reach the consumer's handler through the device's QP table: the first
    /// message into a QP still in RTR is IB_EVENT_COMM_EST; a WRITE with a bad rkey completes
    /// with IB_WC_REM_ACCESS_ERR at the requester and is IB_EVENT_QP_ACCESS_ERR at the
    /// responder.
    #[test]
    fn qp_events_reach_the_handler() -> Result {
        let f = SimFunction::one_port(fmt!("kunit.kdp.ev"), false, 14)?;
        {
            let d = Mlx5Dev::probe(f.clone())?;
            let ib = ib_of(&d)?;
            let a = Side::new(ib)?;
            let b = Side::new(ib)?;
            a.connect(&b)?;
            b.to_rtr(&a)?;
            let buf = f.alloc_coherent(4096)?;
            b.qp.post_recv(&[RecvWr {
                wr_id: 0xb1,
                sg_list: &[],
            }])?;
            a.qp.post_send(&[SendWr {
                wr_id: 1,
                opcode: WrOpcode::Send,
                send_flags: send_flags::SIGNALED,
                ..SendWr::default()
            }])?;
            assert_eq!(poll_n(&b.cq, 1)?[0].status, WcStatus::Success);
            assert_eq!(poll_n(&a.cq, 1)?[0].status, WcStatus::Success);
            // Events are delivered after the engine's pass, the CQE may be polled before.
            let comm_est = 1 << QpEvent::CommEst.ib_event_type();
            let t0 = Instant::<Monotonic>::now();
            while b.events.0.load(Relaxed) & comm_est == 0 && t0.elapsed().as_millis() < 2000 {
                fsleep(Delta::from_micros(500));
            }
            assert_eq!(b.events.0.load(Relaxed), comm_est);
            b.to_rts()?;
            let s = [sge(&buf, 0, 64, &a.mr)];
            a.qp.post_send(&[SendWr {
                wr_id: 2,
                opcode: WrOpcode::RdmaWrite,
                send_flags: send_flags::SIGNALED,
                sg_list: &s,
                remote_addr: buf.bus(0),
                rkey: b.mr.rkey() ^ 0x5500,
                ..SendWr::default()
            }])?;
            let w = poll_n(&a.cq, 1)?;
            assert_eq!((w[0].wr_id, w[0].status), (2, WcStatus::RemAccessErr));
            let access = 1 << QpEvent::AccessErr.ib_event_type();
            let t0 = Instant::<Monotonic>::now();
            while b.events.0.load(Relaxed) & access == 0 && t0.elapsed().as_millis() < 2000 {
                fsleep(Delta::from_micros(500));
            }
            assert_eq!(b.events.0.load(Relaxed), comm_est | access);
            assert_eq!(a.events.0.load(Relaxed), 0);
        }
        assert!(is_clean(&f));
        Ok(())
    }

    /// An SGE naming a bus address the device was never given (here: past the end of a
    /// mapping, in its guard page) is a DMA fault: an error completion and the IOMMU's fault
    /// count, never an access to memory.
    #[test]
    fn unmapped_bus_address_is_a_dma_fault() -> Result {
        let f = SimFunction::one_port(fmt!("kunit.kdp.fault"), false, 13)?;
        {
            let d = Mlx5Dev::probe(f.clone())?;
            let ib = ib_of(&d)?;
            let a = Side::new(ib)?;
            let b = Side::new(ib)?;
            a.connect(&b)?;
            b.connect(&a)?;
            let src = f.alloc_coherent(4096)?;
            let dst = f.alloc_coherent(4096)?;
            let faults = f.iommu().faults();
            // The page after `src` is its guard page: mapped to nothing.
            let s = [Sge {
                addr: src.bus(4096),
                length: 64,
                lkey: a.mr.lkey(),
            }];
            a.qp.post_send(&[SendWr {
                wr_id: 3,
                opcode: WrOpcode::RdmaWrite,
                send_flags: send_flags::SIGNALED,
                sg_list: &s,
                remote_addr: dst.bus(0),
                rkey: b.mr.rkey(),
                ..SendWr::default()
            }])?;
            let w = poll_n(&a.cq, 1)?;
            assert_eq!(w[0].wr_id, 3);
            assert_ne!(w[0].status, WcStatus::Success);
            assert!(f.iommu().faults() > faults);
            let mut z = [0xffu8; 64];
            dst.read(0, &mut z)?;
            assert_eq!(z, [0u8; 64]);
        }
        assert!(is_clean(&f));
        Ok(())
    }
}

/// KUnit `mlx5_ib_rs_fn_kverbs`: the exchange above between two kernel RC QPs on the RDMA
/// device of every bound mlx5_core function (upstream's backend, `crate::corehw`): kernel
/// queues whose buffers are DMA API mappings of the PCI function, doorbells stored into the
/// `ioremap()`ed kernel UAR page, completions through mlx5_core's completion EQ (the handler
/// after `req_notify_cq`), the atomics included. Mode `pcifn` runs it on the emulated
/// ConnectX function (`host/cxfn`) and `vm_pcifn_ib` checks its report line. Where no mlx5_core function is bound (the
/// other modes: mlx5_core has no PCI function there) it says so and checks nothing; the same
/// exchange on the simulator is `mlx5_ib_rs_kdatapath`.
#[kunit_tests(mlx5_ib_rs_fn_kverbs)]
mod fn_tests {
    use super::*;

    #[test]
    fn loopback_on_each_bound_function() -> Result {
        let devs = crate::mlx5_bound::snapshot()?;
        if devs.is_empty() {
            pr_info!("mlx5_ib_rs_fn_kverbs: no mlx5_core function bound, nothing to run\n");
        }
        for ib in devs.iter() {
            let hw = ib.data().hw.clone();
            let base = ib.data().events.len();
            // The second side's CQ on the function's last completion vector (its own EQ).
            let last = ib.num_comp_vectors() - 1;
            {
                let a = Side::new(ib)?;
                let b = Side::on_vector(ib, 16, 63, last)?;
                a.connect(&b)?;
                b.connect(&a)?;
                exchange(&a, &*hw, &b, &*hw)?;
            }
            ensure_eq!(ib.data().events.len(), base);
            pr_info!(
                "mlx5_ib_rs_fn_kverbs: {}: kernel RC loopback passed (SEND, SEND_IMM, RDMA WRITE, RDMA WRITE_IMM, RDMA READ, atomics, completion events; CQs on vectors 0 and {} of {})\n",
                ib.name(),
                last,
                ib.num_comp_vectors()
            );
        }
        Ok(())
    }
}
