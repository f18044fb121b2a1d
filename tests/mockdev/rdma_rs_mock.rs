// SPDX-License-Identifier: GPL-2.0

//! A mock RDMA device for user-space tests of uverbs: one device `rxe_mock0`
//! with one InfiniBand port, registered at load and removed at unload. It
//! claims `RDMA_DRIVER_RXE` and librxe's ABI version (`RXE_UVERBS_ABI_VERSION`
//! = 2 in rdma-core 44 / Linux 7.3 `rdma_user_rxe.h`), so that Debian's librxe
//! provider binds it and `ibv_devinfo` runs through our uverbs. It has no data
//! path: a user CQ's, QP's or SRQ's create response offers librxe a page to
//! `mmap()` for each of its queues, as rxe's does, so that `ibv_create_cq()` and
//! `ibv_create_qp()` work (the slab figures of `make bench-uverbs` create 10k of
//! each), but nothing is ever written to those pages. Its CQs and QPs exist for the raw uverbs
//! tests (`tests/userspace/uverbs_abi.c`) and the uverbs fuzzer's differential
//! mode, which compares it errno by errno with upstream `rdma_rxe`: so its
//! verbs check what rxe's check (the QP and SRQ limits and udata rules of
//! `rxe_create_qp()`/`rxe_qp_chk_init()`, `rxe_create_srq()`/`rxe_srq_chk_*()`,
//! the CQE count, the QP state machine through the core's
//! `modify_qp_is_ok()`, REREG_MR as `rxe_rereg_user_mr()`). The QP keeps its state and port, an SRQ its size,
//! SGEs and limit, nothing else; the queue pages are at offsets of the context's
//! own (rxe's queue mmap info).
//!
//! For the tests of the core's user-memory and mmap support it also:
//!
//! * pins user memory at GET_CONTEXT when the driver request (UHW_IN) is a
//!   [`PinReq`] (`Umem::get`, the errno of which GET_CONTEXT then returns),
//!   answers [`pin_resp`] and keeps the pages pinned until the context is
//!   released (close, or disassociate at hot unplug); with flag 1 it also
//!   maps two doorbell records, at `addr` and `addr + 64`, through
//!   `DbPages`;
//! * maps a per-context page filled with [`pattern`] at `mmap()` offset 0
//!   (`UserVma::map_page`); every other offset is `EINVAL` (upstream
//!   drivers' answer to an unknown offset).
//!
//! For the tests of event delivery, a modify of a QP to `ERR` reports, as a
//! device's event queue interrupt handler would (with interrupts disabled,
//! under a spinlock), a completion on the QP's send CQ, `IB_EVENT_CQ_ERR` on
//! that CQ and `IB_EVENT_QP_FATAL` on the QP.

use ib_core_rs::attr::{DeviceAttr, Gid, LinkLayer, PortAttr, PortImmutable, PortState};
use ib_core_rs::device::Device;
use ib_core_rs::driver::{Driver, DriverId};
use ib_core_rs::event::{Event, EventKind};
use ib_core_rs::mm::{UserPage, UserVma};
use ib_core_rs::ops::{DeviceOps, Ops};
use ib_core_rs::verbs::CqHandler;
use ib_core_rs::verbs::{
    modify_qp_is_ok, AccessFlags, Cq, CqInitAttr, DbPages, MmapEntry, MmapRegistry, Mr, MrCreated,
    Mw, MwCreated, MwType, Pd, Qp, QpAttr, QpAttrMask, QpCreated, QpEvent, QpInitAttr, QpState,
    QpType, ReregFlags, Reregistered, Srq, SrqAttrMask, SrqHandler, SrqInitAttr, Ucontext,
    UcontextPriv, Udata, Umem, UserCtx, UserDb, UserMrReq,
};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, SpinLockIrq};

module! {
    type: RdmaRsMock,
    name: "rdma_rs_mock",
    authors: ["rdma-rs developers"],
    description: "rdma-rs: a mock RDMA device (driver id RXE) for uverbs tests",
    license: "GPL",
}

struct Mock;

#[pin_data]
struct MockDev {
    ucontexts: Atomic<i32>,
    /// Held, interrupts off, while events are reported (the context of a
    /// device's interrupt handler).
    #[pin]
    irq: SpinLockIrq<()>,
}

impl Driver for Mock {
    type DevData = MockDev;
    type PdData = ();
    /// A user CQ's queue page (rxe's CQ queue, mapped by librxe at create).
    type CqData = Option<QueueMap>;
    type QpData = MockQp;
    type SrqData = MockSrq;
    /// Shared with the MR that a re-registration puts in its place (rxe changes the MR in
    /// place; the core here always takes a new one, with the same pinned memory).
    type MrData = Arc<Umem>;
    type AhData = ();
    type MwData = ();
    type DmData = ();
}

/// A mock QP: its state and port, for QUERY_QP.
struct MockQp {
    state: Atomic<u32>,
    port: Atomic<u32>,
    /// A user QP's receive (without an SRQ) and send queue pages.
    _rq: Option<QueueMap>,
    _sq: Option<QueueMap>,
}

/// A mock SRQ: what rxe keeps of one for its verbs (`rxe_srq`: the queue's index mask, the
/// scatter entries, the limit); no receive queue behind it.
struct MockSrq {
    /// The queue's slots minus one (rxe `srq->rq.queue->buf->index_mask`): what
    /// QUERY_SRQ reports as `max_wr`.
    index_mask: Atomic<u32>,
    max_sge: u32,
    limit: Atomic<u32>,
    /// A user SRQ's queue page, mappable at the offset of its create response.
    _queue: Option<QueueMap>,
}

/// The page a user SRQ's create response offers to `mmap()` (rxe: the queue buffer,
/// `rxe_create_mmap_info()`, an offset of the context's own): an entry of the context's mmap
/// registry, removed with the SRQ (existing mappings keep the page).
struct QueueMap {
    reg: Arc<MmapRegistry>,
    entry: Arc<MmapEntry>,
}

impl Drop for QueueMap {
    fn drop(&mut self) {
        self.reg.remove(&self.entry);
    }
}

impl QueueMap {
    /// A new page in `u`'s context's mmap registry (offsets from 1: page offset 0 is the
    /// context's pattern page), and its `struct mminfo` (`offset`, `size`, `pad`) as rxe's
    /// `do_mmap_info()` answers it, for librxe to `mmap()`.
    /// `head` is written at the start of the page (a queue's `struct rxe_queue_buf` header).
    fn new(u: &mut UserCtx<'_, '_, Mock>, head: &[u8]) -> Result<(Self, [u8; MMINFO])> {
        let reg = u.ctx().mmap_entries().clone();
        let page = UserPage::new()?;
        if !head.is_empty() {
            page.write(0, head)?;
        }
        let entry = reg.insert_range(
            Arc::new(page, GFP_KERNEL)?,
            kernel::page::PAGE_SIZE,
            1,
            u32::MAX,
        )?;
        let mut mi = [0u8; MMINFO];
        mi[0..8].copy_from_slice(&entry.offset().to_ne_bytes());
        mi[8..12].copy_from_slice(&(kernel::page::PAGE_SIZE as u32).to_ne_bytes());
        Ok((QueueMap { reg, entry }, mi))
    }
}

/// `sizeof(struct mminfo)` (`rdma_user_rxe.h`): `offset`, `size`, `pad`.
const MMINFO: usize = 16;

/// `sizeof(struct rxe_create_cq_resp)`: one `struct mminfo`.
const CREATE_CQ_RESP: usize = MMINFO;

/// The start of a CQ's `struct rxe_queue_buf` (`rdma_user_rxe.h`), which librxe reads right
/// after the mmap: `log2_elem_size` (rxe's CQE is a `struct ib_uverbs_wc`, 48 bytes, in slots
/// of 64: librxe refuses a CQ whose slots are smaller) and `index_mask` (the slots that fit
/// the one page after the 384-byte header, 32, less one). The indices stay 0: no completion
/// ever arrives.
fn cq_queue_head() -> [u8; 8] {
    let mut h = [0u8; 8];
    h[0..4].copy_from_slice(&6u32.to_ne_bytes());
    h[4..8].copy_from_slice(&31u32.to_ne_bytes());
    h
}

/// rxe's SRQ limits (`rxe_param.h`): `RXE_MAX_SRQ_WR` (`DEFAULT_MAX_VALUE`, 1 << 20),
/// `RXE_MAX_SRQ_SGE`, `RXE_MIN_SRQ_SGE`, `RXE_MAX_SRQ`.
const MAX_SRQ_WR: u32 = 1 << 20;
const MAX_SRQ_SGE: u32 = 27;
const MIN_SRQ_SGE: u32 = 1;
const MAX_SRQ: u32 = (1 << 20) - 0x0002_0001;

/// rxe's QP limits (`rxe_param.h`): `RXE_MAX_QP_WR`, `RXE_MAX_SGE`, `RXE_MAX_INLINE_DATA`
/// (`RXE_MAX_WQE_SIZE` less the send WQE: 32 SGEs of 16 bytes).
const MAX_QP_WR: u32 = 1 << 20;
const MAX_SGE: u32 = 32;
const MAX_INLINE_DATA: u32 = 32 * 16;

/// `sizeof(struct rxe_create_qp_resp)`: two `struct mminfo` (the RQ's and the SQ's).
const CREATE_QP_RESP: usize = 32;

/// `sizeof(struct rxe_create_srq_resp)`: `struct mminfo` (16 bytes), `srq_num`, `reserved`.
const CREATE_SRQ_RESP: usize = 24;

/// rxe_queue_init(): the slots are `max_wr + 1` rounded up to a power of two; the queue
/// holds one less.
fn srq_index_mask(max_wr: u32) -> Result<u32> {
    let slots = max_wr
        .checked_add(1)
        .and_then(u32::checked_next_power_of_two)
        .ok_or(EINVAL)?;
    Ok(slots - 1)
}

const SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;

/// The ALLOC_PD driver request that raises a port event: "mockevnt".
const EVENT_MAGIC: u64 = 0x6d6f_636b_6576_6e74;

/// `PinReq.magic`: "mockumem".
const PIN_MAGIC: u64 = 0x6d6f_636b_756d_656d;

/// The test's GET_CONTEXT driver request: `{ u64 magic, addr, len; u32 access, flags }`.
struct PinReq {
    addr: u64,
    len: u64,
    access: u32,
    flags: u32,
}

impl PinReq {
    const SIZE: usize = 32;

    fn parse(b: &[u8]) -> Option<Self> {
        let u64_at = |o: usize| -> Option<u64> {
            Some(u64::from_ne_bytes(b.get(o..o + 8)?.try_into().ok()?))
        };
        if b.len() < Self::SIZE || u64_at(0)? != PIN_MAGIC {
            return None;
        }
        Some(PinReq {
            addr: u64_at(8)?,
            len: u64_at(16)?,
            access: u32::from_ne_bytes(b.get(24..28)?.try_into().ok()?),
            flags: u32::from_ne_bytes(b.get(28..32)?.try_into().ok()?),
        })
    }
}

/// The response: `{ u64 npages, offset, length; u32 writable, pages_ok; u64
/// db_delta, db_pages }` (`pages_ok`: every page address is non-zero and page
/// aligned; `db_delta`: the second doorbell record's address minus the
/// first's; `db_pages`: pages pinned for them).
fn pin_resp(u: &Umem, dbs: &[UserDb], db_pages: usize) -> [u8; 48] {
    let mut r = [0u8; 48];
    let page_mask = (kernel::page::PAGE_SIZE - 1) as u64;
    let ok = u.dma_blocks().len() == u.page_count()
        && u.dma_blocks().all(|a| a != 0 && a & page_mask == 0);
    r[0..8].copy_from_slice(&(u.page_count() as u64).to_ne_bytes());
    r[8..16].copy_from_slice(&(u.offset() as u64).to_ne_bytes());
    r[16..24].copy_from_slice(&(u.length() as u64).to_ne_bytes());
    r[24..28].copy_from_slice(&u32::from(u.writable()).to_ne_bytes());
    r[28..32].copy_from_slice(&u32::from(ok).to_ne_bytes());
    if let [a, b] = dbs {
        r[32..40].copy_from_slice(&b.dma().wrapping_sub(a.dma()).to_ne_bytes());
    }
    r[40..48].copy_from_slice(&(db_pages as u64).to_ne_bytes());
    r
}

/// Byte `i` of the page mapped at offset 0.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8 ^ 0x5a
}

/// The mock's part of a user context.
/// upstream `RXE_ACCESS_SUPPORTED_MR` (rxe_verbs.h): the remote rights, local write, MW
/// bind, on-demand, the flush flags and the optional ones; not zero-based or huge pages.
const RXE_ACCESS_SUPPORTED_MR: AccessFlags = AccessFlags(
    AccessFlags::REMOTE_READ.0
        | AccessFlags::REMOTE_WRITE.0
        | AccessFlags::REMOTE_ATOMIC.0
        | AccessFlags::LOCAL_WRITE.0
        | AccessFlags::MW_BIND.0
        | AccessFlags::ON_DEMAND.0
        | AccessFlags::FLUSH_GLOBAL.0
        | AccessFlags::FLUSH_PERSISTENT.0
        | AccessFlags::OPTIONAL.0,
);

struct MockCtx {
    page: UserPage,
    _dbs: KVec<UserDb>,
    _umem: Option<Umem>,
}

/// The QP state the mock keeps (`QpState as u32`).
fn state_of(v: u32) -> QpState {
    u8::try_from(v)
        .ok()
        .and_then(|v| QpState::try_from(v).ok())
        .unwrap_or(QpState::Reset)
}

/// The mock's `max_cqe`.
const MAX_CQE: u32 = 4096;

struct MockOps;

#[vtable]
impl DeviceOps for MockOps {
    type Driver = Mock;
    const DRIVER_ID: DriverId = DriverId::Rxe;
    const UVERBS_ABI_VER: u32 = 2;

    fn query_device(_dev: &Device<Mock>) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            fw_ver: (1 << 32) | (2 << 16) | 3,
            node_guid: 0x0002_c903_00ab_cdef,
            sys_image_guid: 0x0002_c903_00ab_cdef,
            vendor_id: 0x1234,
            vendor_part_id: 0x5678,
            hw_ver: 0x9,
            max_qp: 64,
            max_qp_wr: MAX_QP_WR,
            max_send_sge: MAX_SGE,
            max_recv_sge: MAX_SGE,
            max_cq: 64,
            max_cqe: MAX_CQE,
            max_mr: 256,
            max_pd: 32,
            max_srq: MAX_SRQ,
            max_srq_wr: MAX_SRQ_WR,
            max_srq_sge: MAX_SRQ_SGE,
            ..DeviceAttr::default()
        })
    }

    fn get_port_immutable(_dev: &Device<Mock>, _port: u32) -> Result<PortImmutable> {
        Ok(PortImmutable {
            pkey_tbl_len: 1,
            gid_tbl_len: 2,
            core_cap_flags: 1,
            max_mad_size: 256,
            link_layer: LinkLayer::Infiniband,
        })
    }

    fn query_port(_dev: &Device<Mock>, port: u32) -> Result<PortAttr> {
        Ok(PortAttr {
            subnet_prefix: SUBNET_PREFIX,
            state: PortState::Active,
            phys_state: 5,
            lid: 0x10 + port,
            lmc: 0,
            sm_lid: 1,
            sm_sl: 0,
            port_cap_flags: 0,
            active_width: 1,
            active_speed: 1,
            ..PortAttr::default()
        })
    }

    fn query_gid(_dev: &Device<Mock>, port: u32, index: u32) -> Result<Gid> {
        // Entry 1 is empty.
        Ok(if index == 1 {
            Gid::ZERO
        } else {
            Gid::new(SUBNET_PREFIX, 0x0002_c903_00ab_cd00 + u64::from(port))
        })
    }

    fn query_pkey(_dev: &Device<Mock>, _port: u32, _index: u32) -> Result<u16> {
        Ok(0xffff)
    }

    fn alloc_ucontext(dev: &Device<Mock>, udata: &mut Udata<'_>) -> Result<UcontextPriv> {
        let mut dbs = KVec::new();
        let umem = match PinReq::parse(udata.input()) {
            Some(req) => {
                let len = usize::try_from(req.len).map_err(|_| EINVAL)?;
                let u = Umem::get(dev, req.addr, len, AccessFlags(req.access))?;
                let table = DbPages::new()?;
                if req.flags & 1 != 0 {
                    dbs.push(table.map(dev, req.addr)?, GFP_KERNEL)?;
                    dbs.push(table.map(dev, req.addr + 64)?, GFP_KERNEL)?;
                }
                udata.copy_to(&pin_resp(&u, &dbs, table.page_count()));
                Some(u)
            }
            None => None,
        };
        let page = UserPage::new()?;
        let mut buf = KVec::from_elem(0u8, kernel::page::PAGE_SIZE, GFP_KERNEL)?;
        for (i, b) in buf.iter_mut().enumerate() {
            *b = pattern(i);
        }
        page.write(0, &buf)?;
        let ctx: KBox<dyn core::any::Any + Send + Sync> = KBox::new(
            MockCtx {
                page,
                _dbs: dbs,
                _umem: umem,
            },
            GFP_KERNEL,
        )?;
        dev.data().ucontexts.fetch_add(1, Relaxed);
        Ok(Some(ctx))
    }

    fn mmap(ctx: &Ucontext<Mock>, vma: &mut UserVma<'_>) -> Result {
        let c = ctx.data::<MockCtx>().ok_or(EINVAL)?;
        match vma.pgoff() {
            0 => vma.map_page(c.page.page(), None),
            // An SRQ's queue page: only this context's registry knows its offset
            // (upstream rdma_user_mmap_entry_get(): an offset of another context is EINVAL).
            _ => {
                let r = ctx.mmap_entries().get(vma).ok_or(EINVAL)?;
                let page = r.data::<Arc<UserPage>>().ok_or(EINVAL)?.clone();
                // The mapping keeps the entry (and so the page) until it goes.
                vma.map_page(page.page(), Some(r.into_map_ref()?))
            }
        }
    }

    fn dealloc_ucontext(ctx: &Ucontext<Mock>) {
        ctx.device().data().ucontexts.fetch_sub(1, Relaxed);
    }

    // A user PD whose driver request is `{ u64 EVENT_MAGIC; u32 port; }`
    // raises IB_EVENT_PORT_ERR on that port (the only way a test can make
    // the mock report an asynchronous event).
    fn alloc_pd(dev: &Device<Mock>, user: Option<&mut UserCtx<'_, '_, Mock>>) -> Result<()> {
        if let Some(u) = user {
            let inp = u.udata().input();
            if inp.len() >= 12 && inp[..8] == EVENT_MAGIC.to_ne_bytes() {
                let port = u32::from_ne_bytes([inp[8], inp[9], inp[10], inp[11]]);
                dev.dispatch_event(Event {
                    kind: EventKind::PortErr,
                    port,
                });
            }
        }
        Ok(())
    }

    fn dealloc_pd(_pd: &Pd<Mock>) -> Result {
        Ok(())
    }

    // upstream rxe_create_cq(): a user CQ needs room for `rxe_create_cq_resp` (EINVAL);
    // rxe_cq_chk_attr(): the CQE count (an int there) must be positive and at most the
    // device's max_cqe, else EINVAL; rxe_cq_from_init(): the response is the mmap info of
    // the CQ's queue, which librxe maps at once (the mock maps a page of its own, as for
    // an SRQ).
    fn create_cq(
        _dev: &Device<Mock>,
        attr: &CqInitAttr,
        _handler: Option<&Arc<dyn CqHandler>>,
        user: Option<&mut UserCtx<'_, '_, Mock>>,
    ) -> Result<Option<QueueMap>> {
        // upstream rxe_create_cq(): no CQ create flags (`EOPNOTSUPP`).
        if attr.flags != 0 {
            return Err(EOPNOTSUPP);
        }
        let mut user = user;
        if let Some(u) = user.as_mut() {
            if u.udata().outlen() < CREATE_CQ_RESP {
                return Err(EINVAL);
            }
        }
        if attr.cqe == 0 || attr.cqe > MAX_CQE {
            return Err(EINVAL);
        }
        let Some(u) = user else {
            return Ok(None);
        };
        let (q, mi) = QueueMap::new(u, &cq_queue_head())?;
        u.udata().copy_to(&mi);
        Ok(Some(q))
    }

    fn destroy_cq(_cq: &Cq<Mock>) -> Result {
        Ok(())
    }

    // upstream rxe_create_srq(): a user SRQ needs room for `rxe_create_srq_resp` (EINVAL);
    // then rxe_srq_chk_init(): `max_wr` 0 or past RXE_MAX_SRQ_WR, `max_sge` past
    // RXE_MAX_SRQ_SGE, EINVAL; the SGEs are raised to RXE_MIN_SRQ_SGE; rxe_srq_from_init():
    // the queue's size (rxe_queue_init()), the response: the mmap info of the queue (the mock
    // maps a page of its own, an entry of the context's mmap registry) and the SRQ number.
    fn create_srq(
        _pd: &Pd<Mock>,
        attr: &mut SrqInitAttr,
        _handler: Option<&Arc<dyn SrqHandler>>,
        user: Option<&mut UserCtx<'_, '_, Mock>>,
    ) -> Result<MockSrq> {
        static NEXT_SRQN: Atomic<u32> = Atomic::new(0x2_0001);
        let mut user = user;
        if let Some(u) = user.as_mut() {
            if u.udata().outlen() < CREATE_SRQ_RESP {
                return Err(EINVAL);
            }
        }
        if attr.max_wr > MAX_SRQ_WR || attr.max_wr == 0 || attr.max_sge > MAX_SRQ_SGE {
            return Err(EINVAL);
        }
        let max_sge = attr.max_sge.max(MIN_SRQ_SGE);
        let index_mask = srq_index_mask(attr.max_wr)?;
        let srqn = NEXT_SRQN.fetch_add(1, Relaxed);
        let mut queue = None;
        if let Some(u) = user {
            let (q, mi) = QueueMap::new(u, &[])?;
            let mut resp = [0u8; CREATE_SRQ_RESP];
            resp[..MMINFO].copy_from_slice(&mi);
            resp[16..20].copy_from_slice(&srqn.to_ne_bytes());
            u.udata().copy_to(&resp);
            queue = Some(q);
        }
        attr.max_wr = index_mask;
        attr.max_sge = max_sge;
        Ok(MockSrq {
            index_mask: Atomic::new(index_mask),
            max_sge,
            limit: Atomic::new(attr.srq_limit),
            _queue: queue,
        })
    }

    // upstream rxe_modify_srq(): a user's driver data is `rxe_modify_srq_cmd { u64
    // mmap_info_addr }` (ib_copy_validate_udata_in(): shorter EINVAL, a non-zero byte past it
    // EOPNOTSUPP); rxe_srq_chk_attr(): a new size 0 or past RXE_MAX_SRQ_WR or below the
    // armed limit, a limit past RXE_MAX_SRQ_WR or the queue's size, EINVAL; then the resize
    // (rxe_queue_resize()). rxe writes the new queue's mmap info to `mmap_info_addr`; the
    // mock has no queue to map and refuses a resize that asks for it (EOPNOTSUPP).
    fn modify_srq(
        srq: &Srq<Mock>,
        attr: &SrqInitAttr,
        mask: SrqAttrMask,
        udata: Option<&mut Udata<'_>>,
    ) -> Result {
        let mut mmap_info_addr = 0u64;
        if let Some(u) = udata {
            let i = u.input();
            let head = i.get(..8).ok_or(EINVAL)?;
            if i[8..].iter().any(|&b| b != 0) {
                return Err(EOPNOTSUPP);
            }
            let mut a = [0u8; 8];
            a.copy_from_slice(head);
            mmap_info_addr = u64::from_ne_bytes(a);
        }
        let s = srq.data();
        let limit = s.limit.load(Relaxed);
        if mask.has(SrqAttrMask::MAX_WR)
            && (attr.max_wr > MAX_SRQ_WR || attr.max_wr == 0 || (limit != 0 && attr.max_wr < limit))
        {
            return Err(EINVAL);
        }
        if mask.has(SrqAttrMask::LIMIT)
            && (attr.srq_limit > MAX_SRQ_WR || attr.srq_limit > s.index_mask.load(Relaxed))
        {
            return Err(EINVAL);
        }
        if mask.has(SrqAttrMask::MAX_WR) {
            if mmap_info_addr != 0 {
                return Err(EOPNOTSUPP);
            }
            s.index_mask.store(srq_index_mask(attr.max_wr)?, Relaxed);
        }
        if mask.has(SrqAttrMask::LIMIT) {
            s.limit.store(attr.srq_limit, Relaxed);
        }
        Ok(())
    }

    // upstream rxe_query_srq(): the queue's index mask, the SGEs, the limit.
    fn query_srq(srq: &Srq<Mock>) -> Result<SrqInitAttr> {
        let s = srq.data();
        Ok(SrqInitAttr {
            max_wr: s.index_mask.load(Relaxed),
            max_sge: s.max_sge,
            srq_limit: s.limit.load(Relaxed),
        })
    }

    fn destroy_srq(_srq: &Srq<Mock>) -> Result {
        Ok(())
    }

    // upstream rxe_create_qp(): a user QP sends no driver data (EINVAL) and has room for
    // `rxe_create_qp_resp` (two `struct mminfo`, EINVAL); then rxe_qp_chk_init() ->
    // rxe_qp_chk_cap(): the send and (without an SRQ) receive queue sizes, SGEs and inline
    // data within the device's (RXE_MAX_QP_WR, RXE_MAX_SGE, RXE_MAX_INLINE_DATA), EINVAL.
    fn create_qp(
        _pd: &Pd<Mock>,
        attr: &QpInitAttr<'_, Mock>,
        user: Option<&mut UserCtx<'_, '_, Mock>>,
    ) -> Result<QpCreated<MockQp>> {
        static NEXT_QPN: Atomic<u32> = Atomic::new(0x100);
        let mut user = user;
        if let Some(u) = user.as_mut() {
            if !u.udata().input().is_empty() || u.udata().outlen() < CREATE_QP_RESP {
                return Err(EINVAL);
            }
        }
        let c = &attr.cap;
        if c.max_send_wr > MAX_QP_WR
            || c.max_send_sge > MAX_SGE
            || (attr.srq.is_none() && (c.max_recv_wr > MAX_QP_WR || c.max_recv_sge > MAX_SGE))
            || c.max_inline_data > MAX_INLINE_DATA
        {
            return Err(EINVAL);
        }
        // rxe_qp_init_resp() via rxe_qp_init_req()/rxe_qp_init_resp(): the response is the
        // receive queue's mmap info (none with an SRQ) and the send queue's; librxe maps both.
        let (mut rq, mut sq) = (None, None);
        if let Some(u) = user {
            let mut resp = [0u8; CREATE_QP_RESP];
            if attr.srq.is_none() {
                let (q, mi) = QueueMap::new(u, &[])?;
                resp[..MMINFO].copy_from_slice(&mi);
                rq = Some(q);
            }
            let (q, mi) = QueueMap::new(u, &[])?;
            resp[MMINFO..2 * MMINFO].copy_from_slice(&mi);
            sq = Some(q);
            u.udata().copy_to(&resp);
        }
        Ok(QpCreated {
            data: MockQp {
                state: Atomic::new(0),
                port: Atomic::new(0),
                _rq: rq,
                _sq: sq,
            },
            qp_num: NEXT_QPN.fetch_add(1, Relaxed) & 0xff_ffff,
        })
    }

    // upstream rxe_modify_qp(): attributes past IB_QP_ATTR_STANDARD_BITS
    // (IB_QP_RATE_LIMIT, which EX_MODIFY_QP lets through) are EOPNOTSUPP;
    // then rxe_qp_chk_attr() (rxe_qp.c): the port, the access flags (RC and UC
    // only, RXE_ACCESS_SUPPORTED_QP), the path MTU (the port's max_mtu, 4096),
    // max_rd_atomic (RXE_MAX_QP_RD_ATOM), the timeout (at most 31), EINVAL;
    // then rxe_qp_from_attr() -> __qp_chk_state(): only a mask with
    // IB_QP_STATE is held against the transition table (ib_modify_qp_is_ok(),
    // EINVAL); without it rxe takes any set of attributes in any state.
    fn modify_qp(
        qp: &Qp<Mock>,
        attr: &QpAttr,
        mask: QpAttrMask,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result {
        const ACCESS_SUPPORTED_QP: u32 = 0x35f | (((1 << 30) - 1) & !((1 << 20) - 1));
        const MTU_4096: u8 = 5;
        const MAX_QP_RD_ATOM: u8 = 128;
        if mask.0 & !((1u32 << 21) - 1) != 0 {
            return Err(EOPNOTSUPP);
        }
        let rc_uc = matches!(qp.qp_type(), QpType::Rc | QpType::Uc);
        if (mask.contains(QpAttrMask::PORT) && attr.port_num != 1)
            || (mask.contains(QpAttrMask::ACCESS_FLAGS)
                && (!rc_uc || attr.qp_access_flags & !ACCESS_SUPPORTED_QP != 0))
            || (mask.contains(QpAttrMask::PATH_MTU) && attr.path_mtu > MTU_4096)
            || (mask.contains(QpAttrMask::MAX_QP_RD_ATOMIC) && attr.max_rd_atomic > MAX_QP_RD_ATOM)
            || (mask.contains(QpAttrMask::TIMEOUT) && attr.timeout > 31)
        {
            return Err(EINVAL);
        }
        let cur = state_of(qp.data().state.load(Relaxed));
        if mask.contains(QpAttrMask::STATE)
            && !modify_qp_is_ok(cur, attr.qp_state, qp.qp_type(), mask)
        {
            return Err(EINVAL);
        }
        if mask.contains(QpAttrMask::PORT) {
            qp.data().port.store(attr.port_num, Relaxed);
        }
        if mask.contains(QpAttrMask::STATE) {
            qp.data().state.store(attr.qp_state as u32, Relaxed);
            if attr.qp_state == QpState::Err {
                let _irq = qp.device().data().irq.lock();
                if let Some(cq) = qp.send_cq() {
                    cq.completion_event();
                    cq.async_event();
                }
                qp.async_event(QpEvent::Fatal);
            }
        }
        Ok(())
    }

    fn query_qp(qp: &Qp<Mock>) -> Result<QpAttr> {
        let state = state_of(qp.data().state.load(Relaxed));
        Ok(QpAttr {
            qp_state: state,
            port_num: qp.data().port.load(Relaxed),
            ..QpAttr::default()
        })
    }

    fn destroy_qp(_qp: &Qp<Mock>) -> Result {
        Ok(())
    }

    // upstream rxe_reg_user_mr(): the memory is pinned (`EFAULT` when it is
    // not mapped); the keys are made up from the restrack-free counter.
    fn reg_user_mr(
        pd: &Pd<Mock>,
        req: &UserMrReq,
        _user: &mut UserCtx<'_, '_, Mock>,
    ) -> Result<MrCreated<Arc<Umem>>> {
        static NEXT_KEY: Atomic<u32> = Atomic::new(0x100);
        let len = usize::try_from(req.length).map_err(|_| EINVAL)?;
        let umem = Arc::new(
            Umem::get(pd.device(), req.start, len, req.access)?,
            GFP_KERNEL,
        )?;
        let key = NEXT_KEY.fetch_add(0x100, Relaxed);
        Ok(MrCreated {
            data: umem,
            lkey: key,
            rkey: key,
        })
    }

    // upstream rxe_rereg_user_mr(): only the PD and the access flags change (a new
    // translation is `EOPNOTSUPP`); ib_umem_check_rereg(): writable access on memory pinned
    // read-only is `EACCES`; access flags outside `RXE_ACCESS_SUPPORTED_MR` are `EOPNOTSUPP`.
    // rxe changes the MR in place and keeps its keys: the MR the core puts in the old one's
    // place shares its pinned memory and has its keys.
    fn rereg_user_mr(
        mr: &Mr<Mock>,
        flags: ReregFlags,
        req: &UserMrReq,
        _new_pd: &Pd<Mock>,
        _user: &mut UserCtx<'_, '_, Mock>,
    ) -> Result<Reregistered<Arc<Umem>>> {
        if flags.has(ReregFlags::TRANS) {
            return Err(EOPNOTSUPP);
        }
        let umem = mr.data();
        if flags.has(ReregFlags::ACCESS) {
            if req.access.writable() && !umem.writable() {
                return Err(EACCES);
            }
            if req.access.0 & !RXE_ACCESS_SUPPORTED_MR.0 != 0 {
                return Err(EOPNOTSUPP);
            }
        }
        Ok(Reregistered::New(MrCreated {
            data: umem.clone(),
            lkey: mr.lkey(),
            rkey: mr.rkey(),
        }))
    }

    fn dereg_mr(_mr: &Mr<Mock>) -> Result {
        Ok(())
    }

    // upstream rxe_alloc_mw(): no driver data, the rkey from the pool index and a key byte.
    fn alloc_mw(
        _pd: &Pd<Mock>,
        _mw_type: MwType,
        _user: &mut UserCtx<'_, '_, Mock>,
    ) -> Result<MwCreated<()>> {
        static NEXT_MW: Atomic<u32> = Atomic::new(0x100);
        Ok(MwCreated {
            rkey: NEXT_MW.fetch_add(0x100, Relaxed),
            data: (),
        })
    }

    fn dealloc_mw(_mw: &Mw<Mock>) -> Result {
        Ok(())
    }
}

static MOCK_OPS: Ops<Mock> = Ops::of::<MockOps>();

struct RdmaRsMock {
    dev: Option<Arc<Device<Mock>>>,
}

impl kernel::Module for RdmaRsMock {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let dev = Device::alloc(
            &MOCK_OPS,
            1,
            try_pin_init!(MockDev {
                ucontexts: Atomic::new(0),
                irq <- kernel::new_spinlock_irq!((), "rdma_rs_mock_irq"),
            }? Error),
        )?;
        if let Err(e) = Device::register(&dev, c"rxe_mock%d") {
            Device::dealloc(dev);
            return Err(e);
        }
        Ok(RdmaRsMock { dev: Some(dev) })
    }
}

impl Drop for RdmaRsMock {
    fn drop(&mut self) {
        if let Some(dev) = self.dev.take() {
            Device::unregister(&dev);
            let left = dev.data().ucontexts.load(Relaxed);
            if left != 0 {
                pr_err!("rdma_rs_mock: {} ucontexts left after unregister\n", left);
            }
            let leaks = Device::dealloc(dev);
            if leaks != 0 {
                pr_err!("rdma_rs_mock: {} resources leaked\n", leaks);
            }
        }
    }
}
