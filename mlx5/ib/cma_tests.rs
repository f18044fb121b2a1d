// SPDX-License-Identifier: GPL-2.0

//! The kernel rdma_cm consumer test (KUnit builds only): two kernel RC QPs connected through
//! the core's kernel rdma_cm API as NVMe-oF's host and target connect theirs
//! (`nvme_rdma_alloc_queue()`, `nvmet_rdma_queue_connect()`): a listening id, a connecting id
//! whose address and route resolve, a PD, CQ, DMA MR and QP on each id's device (the QP made
//! by the id, `CmId::create_qp`, upstream `rdma_create_qp()`), connect and accept with
//! private data (the target's buffer address and rkey in the REP), a SEND and an RDMA WRITE
//! with every byte checked, disconnect (both QPs in ERR), the event sequence of each side and
//! everything destroyed.
//!
//! It needs IP addresses on the RoCE functions' interfaces, which a VM suite assigns, so it is
//! not a KUnit suite run at `insmod`: writing `SRC DST PORT` (IPv4 addresses, the port the
//! target listens on) to `/sys/kernel/debug/mlx5_fwsim/kcm` runs it; the write returns 0
//! when every check passed, the failing check's errno otherwise (its line logged), and each
//! side's events are logged (`kcm: active side: ...`).

use crate::hw::DmaBuf;
use crate::ib::device::Mlx5Ib;
use ib_core_rs::cma::{
    sockaddr::SockAddr, CmEvent, CmEventType, CmHandler, CmId, ConnParam, PortSpace, QPT_RC,
};
use ib_core_rs::device::Device;
use ib_core_rs::net_notify::IpAddr;
use ib_core_rs::verbs::{
    send_flags, AccessFlags, Cq, CqInitAttr, Mr, Pd, Qp, QpCap, QpInitAttr, QpState, QpType,
    RecvWr, SendWr, Sge, WcOpcode, WcStatus, WrOpcode,
};
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};
use kernel::time::{delay::fsleep, Delta, Instant, Monotonic};
use kernel::uaccess::UserSliceReader;

/// A failed check: its line logged, `EINVAL`.
fn check(ok: bool, line: u32) -> Result {
    if ok {
        Ok(())
    } else {
        pr_err!("kcm: check at line {} failed\n", line);
        Err(EINVAL)
    }
}

/// The private data of the REQ and the REP begin with these.
const REQ_MAGIC: &[u8; 8] = b"kcm-req\0";
const REP_MAGIC: &[u8; 8] = b"kcm-rep\0";
/// Bytes each transfer moves.
const LEN: usize = 4096;
/// How long an event may take (the IB CM's first REQ goes out at once; the MADs cross the
/// simulated wire).
const EVENT_MS: i64 = 20_000;

/// One event as its handler saw it.
struct Rec {
    ev: CmEventType,
    status: i32,
    /// The first bytes of the event's private data.
    pd: [u8; 24],
    new_id: Option<Arc<CmId>>,
}

/// An id's handler: records every event but `RDMA_CM_EVENT_TIMEWAIT_EXIT` (upstream reports
/// it when the connection's timewait ends, which may be before or after the test's end).
#[pin_data]
struct Log {
    #[pin]
    recs: Mutex<KVec<Rec>>,
}

impl Log {
    fn new() -> Result<Arc<Log>> {
        Arc::pin_init(
            pin_init!(Log {
                recs <- kernel::new_mutex!(KVec::new(), "kcm_log"),
            }),
            GFP_KERNEL,
        )
    }

    /// Waits until `n` events arrived; the `n`-th event's type, status and private data.
    fn wait(&self, n: usize) -> Result<(CmEventType, i32, [u8; 24])> {
        let t0 = Instant::<Monotonic>::now();
        loop {
            if let Some(r) = self.recs.lock().get(n - 1) {
                return Ok((r.ev, r.status, r.pd));
            }
            if t0.elapsed().as_millis() > EVENT_MS {
                pr_err!("kcm: no event {} after {} ms\n", n, EVENT_MS);
                return Err(ETIMEDOUT);
            }
            fsleep(Delta::from_millis(5));
        }
    }

    /// The new id of event `n` (a connection request), taken.
    fn take_new_id(&self, n: usize) -> Option<Arc<CmId>> {
        self.recs.lock().get_mut(n - 1)?.new_id.take()
    }

    /// The events' types.
    fn events(&self) -> Result<KVec<CmEventType>> {
        let l = self.recs.lock();
        let mut v = KVec::with_capacity(l.len(), GFP_KERNEL)?;
        for r in l.iter() {
            v.push(r.ev, GFP_KERNEL)?;
        }
        Ok(v)
    }
}

impl CmHandler for Log {
    fn event(&self, _id: &Arc<CmId>, ev: CmEvent) {
        if ev.event == CmEventType::TimewaitExit {
            return;
        }
        let mut pd = [0u8; 24];
        if let Some(c) = &ev.conn {
            let n = usize::from(c.private_data_len).min(pd.len());
            pd[..n].copy_from_slice(&c.private_data[..n]);
        }
        let rec = Rec {
            ev: ev.event,
            status: ev.status,
            pd,
            new_id: ev.new_id,
        };
        if self.recs.lock().push(rec, GFP_KERNEL).is_err() {
            pr_err!("kcm: an event lost (no memory)\n");
        }
    }
}

/// The ids made, destroyed on every path (upstream `rdma_destroy_id()`).
struct Ids(KVec<Arc<CmId>>);

impl Ids {
    fn add(&mut self, id: &Arc<CmId>) -> Result {
        self.0.push(id.clone(), GFP_KERNEL)?;
        Ok(())
    }
}

impl Drop for Ids {
    fn drop(&mut self) {
        for id in self.0.iter().rev() {
            id.destroy();
        }
    }
}

/// One end's kernel verbs objects on the device its id is bound to.
struct End {
    qp: Arc<Qp<Mlx5Ib>>,
    cq: Arc<Cq<Mlx5Ib>>,
    mr: Arc<Mr<Mlx5Ib>>,
    pd: Arc<Pd<Mlx5Ib>>,
    buf: DmaBuf,
}

fn owner() -> ib_core_rs::restrack::Owner {
    ib_core_rs::kernel_owner!()
}

impl End {
    /// A PD, a CQ, an RC QP made by `id` (INIT), a DMA MR and a buffer of two transfers.
    fn new(id: &CmId) -> Result<End> {
        let idx = id.info().dev.ok_or(EINVAL)?.dev_index;
        let ib: Arc<Device<Mlx5Ib>> = crate::mlx5_bound::by_index(idx).ok_or(ENODEV)?;
        let pd = Pd::alloc(&ib, owner())?;
        let cq = Cq::create(
            &ib,
            &CqInitAttr {
                cqe: 15,
                comp_vector: 0,
                flags: 0,
            },
            None,
            owner(),
        )?;
        let qp = id.create_qp(
            &pd,
            &QpInitAttr {
                send_cq: &cq,
                recv_cq: &cq,
                srq: None,
                qp_type: QpType::Rc,
                cap: QpCap {
                    max_send_wr: 8,
                    max_recv_wr: 8,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: false,
                event_handler: None,
            },
            owner(),
        )?;
        let mr = Mr::get_dma_mr(
            &pd,
            AccessFlags(AccessFlags::LOCAL_WRITE.0 | AccessFlags::REMOTE_WRITE.0),
            owner(),
        )?;
        let buf = ib.data().hw.alloc_coherent(2 * LEN)?;
        check(qp.query()?.qp_state == QpState::Init, line!())?;
        Ok(End {
            qp,
            cq,
            mr,
            pd,
            buf,
        })
    }

    fn sge(&self, off: usize) -> Sge {
        Sge {
            addr: self.buf.bus(off),
            length: LEN as u32,
            lkey: self.mr.lkey(),
        }
    }

    /// Destroys the objects in reverse order (upstream `rdma_destroy_qp()` for the QP).
    fn destroy(self, id: &CmId) -> Result {
        id.destroy_qp(self.qp)?;
        Mr::dereg(self.mr).map_err(|e| e.err)?;
        Cq::destroy(self.cq).map_err(|e| e.err)?;
        Pd::dealloc(self.pd).map_err(|e| e.err)?;
        drop(self.buf);
        Ok(())
    }
}

/// Polls `cq` for one completion (2 s at most).
fn poll_one(cq: &Cq<Mlx5Ib>) -> Result<ib_core_rs::verbs::Wc> {
    let t0 = Instant::<Monotonic>::now();
    loop {
        let mut wc = [ib_core_rs::verbs::Wc::default(); 1];
        if cq.poll(&mut wc)? == 1 {
            return Ok(wc[0]);
        }
        if t0.elapsed().as_millis() > 2000 {
            pr_err!("kcm: no completion\n");
            return Err(ETIMEDOUT);
        }
        fsleep(Delta::from_micros(500));
    }
}

/// A pattern of `seed` in `b`.
fn fill(b: &DmaBuf, seed: u8) -> Result {
    let mut chunk = [0u8; 256];
    for off in (0..b.len()).step_by(256) {
        for (i, x) in chunk.iter_mut().enumerate() {
            *x = seed ^ (off / 256) as u8 ^ (i as u8).wrapping_mul(7);
        }
        b.write(off, &chunk)?;
    }
    Ok(())
}

/// Whether `a[off..off + LEN]` equals `b[off..off + LEN]`.
fn same(a: &DmaBuf, b: &DmaBuf, off: usize) -> Result<bool> {
    let (mut x, mut y) = ([0u8; 256], [0u8; 256]);
    for o in (off..off + LEN).step_by(256) {
        a.read(o, &mut x)?;
        b.read(o, &mut y)?;
        if x != y {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The connection's life between an active end from `src` and a passive end listening on
/// `dst`:`port`.
fn run(src: [u8; 4], dst: [u8; 4], port: u16) -> Result {
    let (alog, plog) = (Log::new()?, Log::new()?);
    let mut ids = Ids(KVec::new());
    let listen = CmId::create(
        plog.clone(),
        PortSpace::Tcp,
        QPT_RC,
        ib_core_rs::kernel_owner!(),
    )?;
    ids.add(&listen)?;
    listen.bind_addr(&SockAddr::from_ip(IpAddr::V4(dst), port))?;
    listen.listen(8)?;

    // The active side (nvme_rdma_alloc_queue()): address, route, then its queues.
    let act = CmId::create(
        alog.clone(),
        PortSpace::Tcp,
        QPT_RC,
        ib_core_rs::kernel_owner!(),
    )?;
    ids.add(&act)?;
    act.resolve_addr(
        Some(&SockAddr::from_ip(IpAddr::V4(src), 0)),
        &SockAddr::from_ip(IpAddr::V4(dst), port),
        2000,
    )?;
    check(alog.wait(1)?.0 == CmEventType::AddrResolved, line!())?;
    act.resolve_route(2000)?;
    check(alog.wait(2)?.0 == CmEventType::RouteResolved, line!())?;
    let a = End::new(&act)?;
    let mut cp = ConnParam {
        responder_resources: 1,
        initiator_depth: 1,
        retry_count: 7,
        rnr_retry_count: 7,
        private_data_len: REQ_MAGIC.len() as u8,
        ..ConnParam::default()
    };
    cp.private_data[..REQ_MAGIC.len()].copy_from_slice(REQ_MAGIC);
    act.connect(&cp)?;

    // The passive side (nvmet_rdma_queue_connect()): its queues on the request's device, a
    // receive posted, the accept with its buffer's address and rkey.
    let (ev, _, pd) = plog.wait(1)?;
    check(
        ev == CmEventType::ConnectRequest && pd[..8] == REQ_MAGIC[..],
        line!(),
    )?;
    let pas = plog.take_new_id(1).ok_or(EINVAL)?;
    ids.add(&pas)?;
    let p = End::new(&pas)?;
    let rs = [p.sge(0)];
    p.qp.post_recv(&[RecvWr {
        wr_id: 0x51,
        sg_list: &rs,
    }])?;
    let mut cp = ConnParam {
        responder_resources: 1,
        initiator_depth: 1,
        rnr_retry_count: 7,
        private_data_len: 20,
        ..ConnParam::default()
    };
    cp.private_data[..8].copy_from_slice(REP_MAGIC);
    cp.private_data[8..16].copy_from_slice(&p.buf.bus(LEN).to_be_bytes());
    cp.private_data[16..20].copy_from_slice(&p.mr.rkey().to_be_bytes());
    pas.accept(Some(&cp))?;
    check(p.qp.query()?.qp_state == QpState::Rts, line!())?;

    // ESTABLISHED on both: the active side's QP moved to RTS by its id at the REP.
    let (ev, st, pd) = alog.wait(3)?;
    check(ev == CmEventType::Established && st == 0, line!())?;
    check(pd[..8] == REP_MAGIC[..], line!())?;
    let raddr = u64::from_be_bytes(pd[8..16].try_into().map_err(|_| EINVAL)?);
    let rkey = u32::from_be_bytes(pd[16..20].try_into().map_err(|_| EINVAL)?);
    check(a.qp.query()?.qp_state == QpState::Rts, line!())?;
    check(plog.wait(2)?.0 == CmEventType::Established, line!())?;

    // A SEND into the posted receive, an RDMA WRITE to the address of the REP.
    fill(&a.buf, 0x5a)?;
    let s = [a.sge(0)];
    a.qp.post_send(&[SendWr {
        wr_id: 0xa1,
        opcode: WrOpcode::Send,
        send_flags: send_flags::SIGNALED,
        sg_list: &s,
        ..SendWr::default()
    }])?;
    let w = poll_one(&a.cq)?;
    check(w.wr_id == 0xa1 && w.status == WcStatus::Success, line!())?;
    let w = poll_one(&p.cq)?;
    check(
        w.wr_id == 0x51
            && w.status == WcStatus::Success
            && w.opcode == WcOpcode::Recv
            && w.byte_len == LEN as u32,
        line!(),
    )?;
    check(same(&a.buf, &p.buf, 0)?, line!())?;
    let s = [a.sge(LEN)];
    a.qp.post_send(&[SendWr {
        wr_id: 0xa2,
        opcode: WrOpcode::RdmaWrite,
        send_flags: send_flags::SIGNALED,
        sg_list: &s,
        remote_addr: raddr,
        rkey,
        ..SendWr::default()
    }])?;
    let w = poll_one(&a.cq)?;
    check(
        w.wr_id == 0xa2 && w.status == WcStatus::Success && w.opcode == WcOpcode::RdmaWrite,
        line!(),
    )?;
    check(same(&a.buf, &p.buf, LEN)?, line!())?;

    // The host disconnects, the target answers the DREQ with its own disconnect (the DREP).
    act.disconnect()?;
    check(a.qp.query()?.qp_state == QpState::Err, line!())?;
    let (ev, st, _) = plog.wait(3)?;
    check(ev == CmEventType::Disconnected && st == 0, line!())?;
    pas.disconnect()?;
    check(p.qp.query()?.qp_state == QpState::Err, line!())?;
    let (ev, st, _) = alog.wait(4)?;
    check(ev == CmEventType::Disconnected && st == 0, line!())?;

    // Each side's events, then everything destroyed.
    let (ae, pe) = (alog.events()?, plog.events()?);
    pr_info!("kcm: active side: {:?}\n", &ae[..]);
    pr_info!("kcm: passive side: {:?}\n", &pe[..]);
    check(
        ae[..]
            == [
                CmEventType::AddrResolved,
                CmEventType::RouteResolved,
                CmEventType::Established,
                CmEventType::Disconnected,
            ],
        line!(),
    )?;
    check(
        pe[..]
            == [
                CmEventType::ConnectRequest,
                CmEventType::Established,
                CmEventType::Disconnected,
            ],
        line!(),
    )?;
    p.destroy(&pas)?;
    a.destroy(&act)?;
    drop(ids);
    pr_info!(
        "kcm: kernel rdma_cm consumer passed (listen, resolve, connect/accept with private data, SEND and RDMA WRITE of {} bytes checked, disconnect)\n",
        LEN
    );
    Ok(())
}

/// An IPv4 address in dotted-quad form.
fn parse_ip(s: &[u8]) -> Result<[u8; 4]> {
    let mut ip = [0u8; 4];
    let mut parts = s.split(|c| *c == b'.');
    for b in ip.iter_mut() {
        *b = parse_dec(parts.next().ok_or(EINVAL)?)?
            .try_into()
            .map_err(|_| EINVAL)?;
    }
    if parts.next().is_some() {
        return Err(EINVAL);
    }
    Ok(ip)
}

fn parse_dec(s: &[u8]) -> Result<u32> {
    if s.is_empty() || s.len() > 5 {
        return Err(EINVAL);
    }
    s.iter().try_fold(0u32, |n, c| {
        if c.is_ascii_digit() {
            Ok(n * 10 + u32::from(c - b'0'))
        } else {
            Err(EINVAL)
        }
    })
}

/// The `kcm` file's write: `SRC DST PORT` runs the test.
pub(crate) fn write_kcm(_: &(), r: &mut UserSliceReader) -> Result {
    let mut buf = [0u8; 64];
    let n = r.len();
    let input = buf.get_mut(..n).ok_or(EINVAL)?;
    r.read_slice(input)?;
    let mut w = input
        .split(|c| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty());
    let src = parse_ip(w.next().ok_or(EINVAL)?)?;
    let dst = parse_ip(w.next().ok_or(EINVAL)?)?;
    let port = u16::try_from(parse_dec(w.next().ok_or(EINVAL)?)?).map_err(|_| EINVAL)?;
    if w.next().is_some() || port == 0 {
        return Err(EINVAL);
    }
    run(src, dst, port).inspect_err(|e| pr_err!("kcm: failed: {:?}\n", e))
}
