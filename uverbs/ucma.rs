// SPDX-License-Identifier: GPL-2.0

//! ucma (upstream `drivers/infiniband/core/ucma.c`): the misc device
//! `/dev/infiniband/rdma_cm` (mode 0666, `abi_version` 4 in `/sys/class/misc/rdma_cm/`) whose
//! `write()` takes a `struct rdma_ucm_cmd_hdr` and a command (`uverbs/ucma/abi.rs`), each on
//! an rdma_cm id of the kernel ([`crate::cma`]) named by a context number that is global
//! across files (upstream `ctx_table`) and usable only from the file that made it. Events of
//! a file's ids queue on the file; `GET_EVENT` takes the first (blocking unless `O_NONBLOCK`),
//! `poll()` reports `EPOLLIN` while one waits.
//!
//! Commands as upstream: `CREATE_ID`, `DESTROY_ID` (the id's pending events dropped, the count
//! of its reported ones returned), `BIND_IP`, `BIND`, `RESOLVE_IP`, `RESOLVE_ADDR`,
//! `RESOLVE_ROUTE`, `QUERY_ROUTE`, `QUERY` (address, path, GID), `LISTEN`, `CONNECT`, `ACCEPT`,
//! `REJECT`, `DISCONNECT`, `INIT_QP_ATTR`, `GET_EVENT`, `SET_OPTION` (`RDMA_OPTION_ID`),
//! `NOTIFY`, `MIGRATE_ID`, `JOIN_IP_MCAST`, `JOIN_MCAST` and `LEAVE_MCAST` (a group has a
//! number of its own, upstream `multicast_table`), `WRITE_CM_EVENT` (a user event queued on
//! the id), `RESOLVE_IB_SERVICE` (upstream's checks; no SA client, so `EOPNOTSUPP` where
//! upstream would query one). `RDMA_OPTION_IB_PATH` is `EOPNOTSUPP`; `GET_OPTION` is `ENOSYS`
//! as upstream. Not done: upstream's `ib_safe_file_access()` check (`EACCES` when the writer's
//! credentials are not the opener's) and the `net.rdma_ucm.max_backlog` sysctl (fixed at its
//! default, 1024).

use crate::chrdev::{CharDevice, MiscDev};
use crate::cma::sockaddr::{ip_to_gid, SockAddr, AF_IB, SIZE_IB, SIZE_IN6, SIZE_KSS};
use crate::cma::{
    CmEvent, CmEventType, CmHandler, CmId, PortSpace, JOIN_FULLMEMBER, JOIN_SENDONLY_FULLMEMBER,
    QPT_RC, QPT_UD,
};
use crate::restrack::Owner;
use crate::verbs::QpState;
use kernel::fs::File;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::poll::{PollCondVar, PollTable};
use kernel::sync::{Arc, ArcBorrow, Mutex};
use kernel::uaccess::{UserPtr, UserSlice};

#[path = "ucma/abi.rs"]
pub mod abi;

use abi::{Cmd, CmdBuf};

/// upstream `max_backlog`.
const MAX_BACKLOG: u32 = 1024;

const EPOLLIN: u32 = 0x1;
const EPOLLRDNORM: u32 = 0x40;

/// What ucma registers at module load (upstream `ucma_init()`).
pub(crate) struct UcmaGlobal {
    _misc: MiscDev<UcmaDev>,
}

impl UcmaGlobal {
    /// Registers `/dev/infiniband/rdma_cm`.
    ///
    /// # Errors
    ///
    /// `EBUSY` while upstream's `rdma_ucm` has the name; `ENOMEM`.
    pub(crate) fn register() -> Result<Self> {
        let shared = Arc::pin_init(
            pin_init!(UcmaShared {
                ctxs <- kernel::new_mutex!(KVec::new(), "ucma_ctx_table"),
                mcs <- kernel::new_mutex!(KVec::new(), "ucma_multicast_table"),
                files <- kernel::new_mutex!(KVec::new(), "ucma_files"),
            }),
            GFP_KERNEL,
        )?;
        let misc = MiscDev::register(
            c"rdma_cm",
            c"infiniband/rdma_cm",
            0o666,
            abi::ABI_VERSION,
            UcmaDev { shared },
        )?;
        Ok(UcmaGlobal { _misc: misc })
    }
}

/// The device's data: the context table every file shares.
struct UcmaDev {
    shared: Arc<UcmaShared>,
}

/// upstream `ctx_table`: context numbers, lowest free first.
#[pin_data]
struct UcmaShared {
    #[pin]
    ctxs: Mutex<KVec<Option<Arc<UcmaCtx>>>>,
    /// upstream `multicast_table`: the groups joined through any file, by number.
    #[pin]
    mcs: Mutex<KVec<Option<Arc<UcmaMc>>>>,
    /// The open rdma_cm files' `struct file` addresses (`MIGRATE_ID` tells an rdma_cm fd from
    /// another, as upstream's `f_op != &ucma_fops`).
    #[pin]
    files: Mutex<KVec<usize>>,
}

/// A group a context joined (upstream `struct ucma_multicast`).
struct UcmaMc {
    id: u32,
    ctx: Arc<UcmaCtx>,
    uid: u64,
    addr: SockAddr,
    /// Joined and answered (upstream: the table entry is stored after the join's response).
    live: Atomic<bool>,
    /// upstream `mc->events_reported`.
    reported: Atomic<u32>,
}

/// A context (upstream `struct ucma_context`).
#[pin_data]
struct UcmaCtx {
    id: u32,
    /// The file's address, as its identity (`ctx->file`; `MIGRATE_ID` changes it).
    file: Atomic<usize>,
    cm_id: Arc<CmId>,
    /// The id's handler, whose uid `ACCEPT` sets on a connection request's context.
    ev: Arc<CtxEvents>,
    /// upstream `ctx->mutex`: one command at a time on the id.
    #[pin]
    mutex: Mutex<()>,
    /// upstream `ctx->backlog`.
    backlog: kernel::sync::atomic::Atomic<u32>,
}

/// One queued event (upstream `struct ucma_event`).
struct UEvent {
    /// The context the event names (a connection request's new one).
    ctx_id: u32,
    /// The context it counts for (upstream `uevent->ctx`: the listener's for a connection
    /// request; librdmacm's `rdma_destroy_id()` waits until it acknowledged as many events of
    /// an id as `DESTROY_ID` reports).
    owner: u32,
    /// The group of a multicast event (upstream `uevent->mc`).
    mc: Option<Arc<UcmaMc>>,
    resp: [u8; abi::EVENT_RESP],
}

struct FileInner {
    events: KVec<UEvent>,
    /// The file's contexts (upstream `ctx_list`), with the count of events taken from each.
    ctxs: KVec<(Arc<UcmaCtx>, u32)>,
}

/// An open `rdma_cm` (upstream `struct ucma_file`).
#[pin_data]
struct UcmaFile {
    shared: Arc<UcmaShared>,
    /// The `struct file` it was opened as (compared with `MIGRATE_ID`'s `fd`).
    fptr: usize,
    #[pin]
    inner: Mutex<FileInner>,
    #[pin]
    wait: PollCondVar,
}

/// The handler of a context's id: its events go to the file (upstream
/// `ucma_event_handler()`).
#[pin_data]
struct CtxEvents {
    id: u32,
    /// upstream `ctx->uid`: 0 on a connection request's context until `ACCEPT` (its events
    /// are dropped until then).
    uid: Atomic<u64>,
    /// The file the events go to (`MIGRATE_ID` changes it; held while one is queued).
    #[pin]
    file: Mutex<Arc<UcmaFile>>,
}

impl CmHandler for CtxEvents {
    fn event(&self, _id: &Arc<CmId>, ev: CmEvent) {
        let uid = self.uid.load(Relaxed);
        // upstream ucma_connect_event_handler(): a request gets a context of its own (with
        // uid 0), named in the event.
        let mut id = self.id;
        if ev.event == CmEventType::ConnectRequest {
            let Some(nid) = ev.new_id.clone() else {
                return;
            };
            let f = self.file.lock().clone();
            match f.new_ctx(nid.clone(), 0) {
                Ok(c) => id = c.id,
                Err(_) => {
                    nid.destroy();
                    return;
                }
            }
        } else if uid == 0 {
            return;
        }
        // upstream ucma_create_uevent(): the id's uid and number (a group's for a multicast
        // event) and the connection's parameters (all zero for an address or route event).
        let mut mc = None;
        let mut uid = uid;
        let mut resp_id = id;
        if matches!(
            ev.event,
            CmEventType::MulticastJoin | CmEventType::MulticastError
        ) {
            let f = self.file.lock().clone();
            let t = f.shared.mcs.lock();
            let Some(Some(m)) = t.get(ev.mc_context as usize) else {
                return;
            };
            uid = m.uid;
            resp_id = m.id;
            mc = Some(m.clone());
        }
        let mut resp = [0u8; abi::EVENT_RESP];
        resp[..8].copy_from_slice(&uid.to_ne_bytes());
        resp[8..12].copy_from_slice(&resp_id.to_ne_bytes());
        if let Some(p) = ev.conn.as_deref() {
            abi::put_conn_param(&mut resp[20..20 + abi::CONN_PARAM], p);
        }
        if let Some(p) = ev.ud.as_deref() {
            abi::put_ud_param(&mut resp[20..20 + abi::UD_PARAM], p);
        }
        resp[12..16].copy_from_slice(&(ev.event as u32).to_ne_bytes());
        resp[16..20].copy_from_slice(&ev.status.to_ne_bytes());
        let file = self.file.lock();
        let mut inner = file.inner.lock();
        // upstream: an event that cannot be allocated is dropped.
        if inner
            .events
            .push(
                UEvent {
                    ctx_id: id,
                    owner: self.id,
                    mc,
                    resp,
                },
                GFP_KERNEL,
            )
            .is_ok()
        {
            drop(inner);
            file.wait.notify_all();
        }
    }
}

/// Takes `ctx` out of the table (upstream `xa_cmpxchg()` to `XA_ZERO_ENTRY`, then erased).
fn free_slot(t: &mut KVec<Option<Arc<UcmaCtx>>>, ctx: &Arc<UcmaCtx>) {
    if let Some(slot) = t.get_mut(ctx.id as usize) {
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, ctx)) {
            *slot = None;
        }
    }
    while t.last().is_some_and(|s| s.is_none()) {
        t.pop();
    }
}

/// Writes `bytes` to the user's `response` address (`EFAULT`).
fn respond(response: u64, bytes: &[u8]) -> Result {
    UserSlice::new(UserPtr::from_addr(response as usize), bytes.len())
        .writer()
        .write_slice(bytes)
}

impl UcmaFile {
    /// The file's identity in its contexts.
    fn key(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }

    /// upstream `ucma_get_ctx()`: `ENOENT` for no such context, `EINVAL` for another file's.
    fn get_ctx(&self, id: u32) -> Result<Arc<UcmaCtx>> {
        let t = self.shared.ctxs.lock();
        match t.get(id as usize) {
            Some(Some(c)) if c.file.load(Relaxed) == self.key() => Ok(c.clone()),
            Some(Some(_)) => Err(EINVAL),
            _ => Err(ENOENT),
        }
    }

    /// upstream `ucma_get_ctx_dev()`: also `EINVAL` for an id without a device.
    fn get_ctx_dev(&self, id: u32) -> Result<Arc<UcmaCtx>> {
        let c = self.get_ctx(id)?;
        if c.cm_id.info().dev.is_none() {
            return Err(EINVAL);
        }
        Ok(c)
    }

    // upstream ucma_write()
    fn write_cmd(self: &Arc<Self>, file: &File, buf: UserPtr, len: usize) -> Result<usize> {
        if len < abi::HDR {
            return Err(EINVAL);
        }
        let mut hdr = [0u8; abi::HDR];
        UserSlice::new(buf, abi::HDR)
            .reader()
            .read_slice(&mut hdr)?;
        let cmd = u32::from_ne_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
        let in_len = usize::from(u16::from_ne_bytes([hdr[4], hdr[5]]));
        let out_len = usize::from(u16::from_ne_bytes([hdr[6], hdr[7]]));
        if cmd >= abi::CMD_COUNT {
            return Err(EINVAL);
        }
        if in_len + abi::HDR > len {
            return Err(EINVAL);
        }
        let cmd = Cmd::from_raw(cmd).ok_or(EINVAL)?;
        if cmd == Cmd::GetOption {
            return Err(ENOSYS);
        }
        // upstream: each handler copies its whole struct from behind the header, but CONNECT
        // and ACCEPT copy `in` of it (the ECE at the end is optional), which must reach their
        // `reserved` (`offsetofend()`).
        let mut c = CmdBuf([0; 320]);
        let mut n = cmd.size();
        if matches!(cmd, Cmd::Connect | Cmd::Accept) {
            if in_len < n - abi::ECE {
                return Err(EINVAL);
            }
            n = n.min(in_len);
        }
        UserSlice::new(buf.wrapping_byte_add(abi::HDR), n)
            .reader()
            .read_slice(&mut c.0[..n])?;
        match cmd {
            Cmd::CreateId => self.create_id(&c, out_len),
            Cmd::DestroyId => self.destroy_id(&c, out_len),
            Cmd::BindIp => self.bind_ip(&c),
            Cmd::Bind => self.bind(&c),
            Cmd::ResolveIp => self.resolve_ip(&c),
            Cmd::ResolveAddr => self.resolve_addr(&c),
            Cmd::ResolveRoute => self.resolve_route(&c),
            Cmd::QueryRoute => self.query_route(&c, out_len),
            Cmd::Query => self.query(&c, out_len),
            Cmd::Listen => self.listen(&c),
            Cmd::Connect => self.connect(&c),
            Cmd::Accept => self.accept(&c),
            Cmd::Reject => self.reject(&c),
            Cmd::Disconnect => self.disconnect(&c),
            Cmd::InitQpAttr => self.init_qp_attr(&c, out_len),
            Cmd::GetEvent => self.get_event(file, &c, out_len),
            Cmd::SetOption => self.set_option(&c),
            Cmd::Notify => self.notify(&c),
            Cmd::MigrateId => self.migrate_id(&c),
            Cmd::JoinIpMcast => self.join_ip_mcast(&c, out_len),
            Cmd::JoinMcast => self.join_mcast(&c, out_len),
            Cmd::LeaveMcast => self.leave_mcast(&c, out_len),
            Cmd::ResolveIbService => self.resolve_ib_service(&c),
            Cmd::WriteCmEvent => self.write_cm_event(&c),
            Cmd::GetOption => Err(ENOSYS),
        }?;
        Ok(len)
    }

    // upstream ucma_create_id()
    fn create_id(self: &Arc<Self>, c: &CmdBuf, out_len: usize) -> Result {
        if out_len < 4 {
            return Err(ENOSPC);
        }
        let (uid, response, ps, qp_type) = (c.u64(0), c.u64(8), c.u16(16), c.u8(18));
        // upstream ucma_get_qp_type().
        let ps = PortSpace::from_raw(ps).ok_or(EINVAL)?;
        let qp_type = match ps {
            PortSpace::Tcp => QPT_RC,
            PortSpace::Udp | PortSpace::Ipoib => QPT_UD,
            PortSpace::Ib => qp_type,
        };
        let ctx = self.alloc_ctx(uid, |h| CmId::create(h, ps, qp_type, Owner::current_task()))?;
        if let Err(e) = respond(response, &ctx.id.to_ne_bytes()) {
            self.drop_ctx(&ctx);
            return Err(e);
        }
        Ok(())
    }

    /// A context for the id `make` creates with the context's handler (upstream
    /// `ucma_alloc_ctx()`, `ucma_set_ctx_cm_id()`, `ucma_finish_ctx()`).
    fn alloc_ctx(
        self: &Arc<Self>,
        uid: u64,
        make: impl FnOnce(Arc<dyn CmHandler>) -> Result<Arc<CmId>>,
    ) -> Result<Arc<UcmaCtx>> {
        // The number is reserved (upstream XA_ZERO_ENTRY) while the table is held.
        let mut t = self.shared.ctxs.lock();
        let id = match t.iter().position(|s| s.is_none()) {
            Some(i) => i,
            None => {
                t.push(None, GFP_KERNEL)?;
                t.len() - 1
            }
        } as u32;
        let ev = Arc::pin_init(
            pin_init!(CtxEvents {
                id,
                uid: Atomic::new(uid),
                file <- kernel::new_mutex!(self.clone(), "ucma_ctx_file"),
            }),
            GFP_KERNEL,
        )?;
        let cm_id = make(ev.clone())?;
        let key = self.key();
        let cm_id2 = cm_id.clone();
        let ctx = Arc::pin_init(
            pin_init!(UcmaCtx {
                id,
                file: Atomic::new(key),
                cm_id: cm_id2,
                ev,
                mutex <- kernel::new_mutex!((), "ucma_ctx"),
                backlog: Atomic::new(0),
            }),
            GFP_KERNEL,
        );
        // The id is destroyed after the table is released (its handler lock may be held
        // around the table's, by a listener's connection request).
        let ctx = match ctx {
            Ok(c) => c,
            Err(e) => {
                drop(t);
                cm_id.destroy();
                return Err(e);
            }
        };
        let mut inner = self.inner.lock();
        if let Err(e) = inner.ctxs.push((ctx.clone(), 0), GFP_KERNEL) {
            drop(inner);
            drop(t);
            cm_id.destroy();
            return Err(e.into());
        }
        if let Some(slot) = t.get_mut(id as usize) {
            *slot = Some(ctx.clone());
        }
        Ok(ctx)
    }

    /// A connection request's context for `nid` (upstream `ucma_connect_event_handler()`).
    fn new_ctx(self: &Arc<Self>, nid: Arc<CmId>, uid: u64) -> Result<Arc<UcmaCtx>> {
        self.alloc_ctx(uid, |h| {
            nid.set_handler(h);
            Ok(nid.clone())
        })
    }

    /// Takes a context out of the table and destroys it.
    fn drop_ctx(&self, ctx: &Arc<UcmaCtx>) {
        free_slot(&mut self.shared.ctxs.lock(), ctx);
        self.destroy_ctx(ctx);
    }

    /// upstream `ucma_destroy_private_ctx()` once the number is taken out of the table: the
    /// id destroyed, its pending events dropped; the count of events the user took.
    fn destroy_ctx(&self, ctx: &Arc<UcmaCtx>) -> u32 {
        ctx.cm_id.destroy();
        // upstream ucma_cleanup_multicast(): the id left its groups.
        {
            let mut t = self.shared.mcs.lock();
            for slot in t.iter_mut() {
                if slot.as_ref().is_some_and(|m| Arc::ptr_eq(&m.ctx, ctx)) {
                    *slot = None;
                }
            }
            while t.last().is_some_and(|s| s.is_none()) {
                t.pop();
            }
        }
        let mut inner = self.inner.lock();
        inner
            .events
            .retain(|e| e.ctx_id != ctx.id && e.owner != ctx.id);
        let mut reported = 0;
        inner.ctxs.retain(|(c, n)| {
            if Arc::ptr_eq(c, ctx) {
                reported = *n;
                false
            } else {
                true
            }
        });
        reported
    }

    // upstream ucma_migrate_id(): the context `id` of the rdma_cm file open as `fd` moves to
    // this file with its pending events (librdmacm's rdma_migrate_id(), which its synchronous
    // rdma_get_request() calls); the count of events taken from it is returned.
    // (upstream takes any `out`.)
    fn migrate_id(self: &Arc<Self>, c: &CmdBuf) -> Result {
        let (response, id, fd) = (c.u64(0), c.u32(8), c.u32(12));
        let f = kernel::fs::LocalFile::fget(fd).map_err(|_| ENOENT)?;
        let fptr = f.as_ptr() as usize;
        if !self.shared.files.lock().contains(&fptr) {
            return Err(EINVAL);
        }
        let ctx = {
            let t = self.shared.ctxs.lock();
            match t.get(id as usize) {
                Some(Some(x)) => x.clone(),
                _ => return Err(ENOENT),
            }
        };
        let _g = ctx.mutex.lock();
        // Held until the move is done: no event of the id is queued meanwhile.
        let mut evf = ctx.ev.file.lock();
        let cur = evf.clone();
        if cur.fptr != fptr {
            return Err(EINVAL);
        }
        if ctx.file.load(Relaxed) != cur.key() {
            return Err(ENOENT);
        }
        let reported = if Arc::ptr_eq(&cur, self) {
            cur.inner
                .lock()
                .ctxs
                .iter()
                .find(|(x, _)| Arc::ptr_eq(x, &ctx))
                .map_or(0, |(_, n)| *n)
        } else {
            // The context joins this file first (with 0 events taken, set below) and the
            // room for its events is made, so that nothing fails once it left the other file
            // (upstream's list moves cannot fail): `evf` keeps the id's new events out, so the
            // events to move are at most those pending now.
            let n = cur
                .inner
                .lock()
                .events
                .iter()
                .filter(|e| e.owner == id)
                .count();
            let mut moved = KVec::with_capacity(n, GFP_KERNEL)?;
            {
                let mut inner = self.inner.lock();
                inner.events.reserve(n, GFP_KERNEL)?;
                inner.ctxs.push((ctx.clone(), 0), GFP_KERNEL)?;
            }
            let taken = {
                let mut inner = cur.inner.lock();
                let entry = inner
                    .ctxs
                    .iter()
                    .position(|(x, _)| Arc::ptr_eq(x, &ctx))
                    .and_then(|pos| inner.ctxs.remove(pos).ok());
                let Some((_, taken)) = entry else {
                    // Destroyed meanwhile (DESTROY_ID on the other file): it stays gone.
                    drop(inner);
                    self.inner
                        .lock()
                        .ctxs
                        .retain(|(x, _)| !Arc::ptr_eq(x, &ctx));
                    return Err(ENOENT);
                };
                let mut i = 0;
                while i < inner.events.len() {
                    if inner.events.get(i).is_some_and(|e| e.owner == id) {
                        if let Ok(e) = inner.events.remove(i) {
                            // Within the capacity: at most `n` of them.
                            let _ = moved.push(e, GFP_KERNEL);
                        }
                    } else {
                        i += 1;
                    }
                }
                taken
            };
            ctx.file.store(self.key(), Relaxed);
            *evf = self.clone();
            let mut inner = self.inner.lock();
            if let Some((_, n)) = inner.ctxs.iter_mut().find(|(x, _)| Arc::ptr_eq(x, &ctx)) {
                *n = taken;
            }
            // Within the room reserved above, unless another context's events took it
            // meanwhile: only then can a push allocate (an event that finds no memory is
            // dropped, as upstream drops one it cannot allocate).
            for e in moved {
                let _ = inner.events.push(e, GFP_KERNEL);
            }
            drop(inner);
            self.wait.notify_all();
            taken
        };
        drop(evf);
        respond(response, &reported.to_ne_bytes())
    }

    // upstream ucma_destroy_id()
    fn destroy_id(&self, c: &CmdBuf, out_len: usize) -> Result {
        if out_len < 4 {
            return Err(ENOSPC);
        }
        let (response, id) = (c.u64(0), c.u32(8));
        let ctx = {
            let mut t = self.shared.ctxs.lock();
            let ctx = match t.get(id as usize) {
                Some(Some(x)) if x.file.load(Relaxed) == self.key() => x.clone(),
                Some(Some(_)) => return Err(EINVAL),
                _ => return Err(ENOENT),
            };
            free_slot(&mut t, &ctx);
            ctx
        };
        let reported = self.destroy_ctx(&ctx);
        respond(response, &reported.to_ne_bytes())
    }

    // upstream ucma_bind_ip()
    fn bind_ip(&self, c: &CmdBuf) -> Result {
        // rdma_addr_size_in6(): a family whose sockaddr fits a sockaddr_in6.
        let addr = SockAddr::parse(c.bytes(8, SIZE_IN6)).ok_or(EINVAL)?;
        let ctx = self.get_ctx(c.u32(8 + SIZE_IN6))?;
        let _g = ctx.mutex.lock();
        ctx.cm_id.bind_addr(&addr)
    }

    // upstream ucma_bind()
    fn bind(&self, c: &CmdBuf) -> Result {
        let (id, size, reserved) = (c.u32(0), c.u16(4), c.u16(6));
        let addr = SockAddr::parse(c.bytes(8, SIZE_KSS));
        let asize = addr.map_or(0, |a| a.size());
        if reserved != 0 || size == 0 || usize::from(size) != asize {
            return Err(EINVAL);
        }
        let addr = addr.ok_or(EINVAL)?;
        let ctx = self.get_ctx(id)?;
        let _g = ctx.mutex.lock();
        ctx.cm_id.bind_addr(&addr)
    }

    // upstream ucma_resolve_ip()
    fn resolve_ip(&self, c: &CmdBuf) -> Result {
        let src_b = c.bytes(0, SIZE_IN6);
        let src_family = u16::from_ne_bytes([src_b[0], src_b[1]]);
        let src = SockAddr::parse(src_b);
        let dst = SockAddr::parse(c.bytes(SIZE_IN6, SIZE_IN6));
        if (src_family != 0 && src.is_none()) || dst.is_none() {
            return Err(EINVAL);
        }
        let dst = dst.ok_or(EINVAL)?;
        let ctx = self.get_ctx(c.u32(2 * SIZE_IN6))?;
        let timeout = c.u32(2 * SIZE_IN6 + 4);
        let _g = ctx.mutex.lock();
        ctx.cm_id.resolve_addr(src.as_ref(), &dst, timeout)
    }

    // upstream ucma_resolve_addr()
    fn resolve_addr(&self, c: &CmdBuf) -> Result {
        let (id, timeout, src_size, dst_size, reserved) =
            (c.u32(0), c.u32(4), c.u16(8), c.u16(10), c.u32(12));
        let src = SockAddr::parse(c.bytes(16, SIZE_KSS));
        let dst = SockAddr::parse(c.bytes(16 + SIZE_KSS, SIZE_KSS));
        let size_of = |a: &Option<SockAddr>| a.map_or(0, |a| a.size());
        if reserved != 0
            || (src_size != 0 && usize::from(src_size) != size_of(&src))
            || dst_size == 0
            || usize::from(dst_size) != size_of(&dst)
        {
            return Err(EINVAL);
        }
        let dst = dst.ok_or(EINVAL)?;
        let ctx = self.get_ctx(id)?;
        let _g = ctx.mutex.lock();
        ctx.cm_id.resolve_addr(src.as_ref(), &dst, timeout)
    }

    // upstream ucma_resolve_route()
    fn resolve_route(&self, c: &CmdBuf) -> Result {
        let ctx = self.get_ctx_dev(c.u32(0))?;
        let _g = ctx.mutex.lock();
        ctx.cm_id.resolve_route(c.u32(4))
    }

    // upstream ucma_query_route() with ucma_copy_iboe_route() or ucma_copy_ib_route()
    fn query_route(&self, c: &CmdBuf, out_len: usize) -> Result {
        // upstream: `out` reaches `ibdev_index` (older librdmacm's size); what fits is copied.
        if out_len < abi::QUERY_ROUTE_RESP - 8 {
            return Err(ENOSPC);
        }
        let ctx = self.get_ctx(c.u32(8))?;
        let _g = ctx.mutex.lock();
        let info = ctx.cm_id.info();
        let mut r = [0u8; abi::QUERY_ROUTE_RESP];
        let sa = 8 + 2 * abi::PATH_REC;
        // upstream: a sockaddr_in's or a sockaddr_in6's bytes by family.
        let copy_addr = |r: &mut [u8], off: usize, a: &SockAddr| {
            let b = a.as_bytes();
            let n = b.len().min(SIZE_IN6);
            r[off..off + n].copy_from_slice(&b[..n]);
        };
        copy_addr(&mut r, sa, &info.src);
        copy_addr(&mut r, sa + SIZE_IN6, &info.dst);
        if let Some(d) = info.dev {
            r[..8].copy_from_slice(&d.node_guid.to_be_bytes());
            let np = sa + 2 * SIZE_IN6;
            r[np + 4] = d.port as u8;
            r[np + 8..np + 12].copy_from_slice(&d.dev_index.to_ne_bytes());
            match info.route {
                Some(p) => {
                    r[np..np + 4].copy_from_slice(&1u32.to_ne_bytes());
                    r[8..8 + abi::PATH_REC].copy_from_slice(&abi::user_path_rec(&p));
                }
                // upstream ucma_copy_iboe_route(): the IPs' GIDs, P_Key 0xffff;
                // ucma_copy_ib_route(): the device address's GIDs and P_Key.
                None if d.roce => {
                    if let (Some(s), Some(t)) = (info.src.ip(), info.dst.ip()) {
                        r[8..24].copy_from_slice(&ip_to_gid(t));
                        r[24..40].copy_from_slice(&ip_to_gid(s));
                    }
                    r[8 + 52..8 + 54].copy_from_slice(&0xffffu16.to_be_bytes());
                }
                None => {
                    r[8..24].copy_from_slice(&info.dgid);
                    r[24..40].copy_from_slice(&d.sgid);
                    r[8 + 52..8 + 54].copy_from_slice(&d.pkey.to_be_bytes());
                }
            }
        }
        respond(c.u64(0), &r[..out_len.min(abi::QUERY_ROUTE_RESP)])
    }

    // upstream ucma_query()
    fn query(&self, c: &CmdBuf, out_len: usize) -> Result {
        let (response, id, option) = (c.u64(0), c.u32(8), c.u32(12));
        let ctx = self.get_ctx(id)?;
        let _g = ctx.mutex.lock();
        let info = ctx.cm_id.info();
        match option {
            abi::QUERY_ADDR => {
                if out_len < abi::QUERY_ADDR_IBDEV_INDEX {
                    return Err(ENOSPC);
                }
                let mut r = [0u8; abi::QUERY_ADDR_RESP];
                let (s, d) = (info.src.as_bytes(), info.dst.as_bytes());
                r[12..14].copy_from_slice(&(s.len() as u16).to_ne_bytes());
                r[14..16].copy_from_slice(&(d.len() as u16).to_ne_bytes());
                r[16..16 + s.len()].copy_from_slice(s);
                r[16 + SIZE_KSS..16 + SIZE_KSS + d.len()].copy_from_slice(d);
                self.query_device_addr(&info, &mut r);
                respond(response, &r[..out_len.min(abi::QUERY_ADDR_RESP)])
            }
            abi::QUERY_PATH => {
                if out_len < 8 {
                    return Err(ENOSPC);
                }
                let n = u32::from(info.route.is_some());
                let mut r = [0u8; 8 + abi::PATH_REC_DATA];
                r[..4].copy_from_slice(&n.to_ne_bytes());
                let mut len = 8;
                if let Some(p) = info.route.filter(|_| out_len - 8 >= abi::PATH_REC_DATA) {
                    r[8..12].copy_from_slice(&abi::PATH_FLAGS.to_ne_bytes());
                    r[16..16 + 64].copy_from_slice(&abi::packed_path_rec(&p));
                    len += abi::PATH_REC_DATA;
                }
                respond(response, &r[..len])
            }
            abi::QUERY_GID => {
                if out_len < abi::QUERY_ADDR_IBDEV_INDEX {
                    return Err(ENOSPC);
                }
                let mut r = [0u8; abi::QUERY_ADDR_RESP];
                self.query_device_addr(&info, &mut r);
                let pkey = [r[10], r[11]];
                r[12..14].copy_from_slice(&(SIZE_IB as u16).to_ne_bytes());
                r[14..16].copy_from_slice(&(SIZE_IB as u16).to_ne_bytes());
                let addrs = [(16, info.src, true), (16 + SIZE_KSS, info.dst, false)];
                for (off, a, src) in addrs {
                    // upstream: an AF_IB id's own address.
                    if a.family() == AF_IB {
                        r[off..off + SIZE_IB].copy_from_slice(a.as_bytes());
                        continue;
                    }
                    // upstream: a sockaddr_ib of the id's GID (rdma_read_gids(): the IP's on
                    // RoCE, the device address's on InfiniBand) and service id
                    // (rdma_get_service_id(): the space and the port).
                    r[off..off + 2].copy_from_slice(&AF_IB.to_ne_bytes());
                    r[off + 2..off + 4].copy_from_slice(&pkey);
                    let gid = match info.dev {
                        Some(d) if !d.roce => Some(if src { d.sgid } else { info.dgid }),
                        Some(_) => a.ip().map(ip_to_gid),
                        None => None,
                    };
                    if let Some(g) = gid {
                        r[off + 8..off + 24].copy_from_slice(&g);
                    }
                    let sid = ((ctx.cm_id.ps() as u64) << 16) + u64::from(a.port());
                    r[off + 24..off + 32].copy_from_slice(&sid.to_be_bytes());
                }
                respond(response, &r[..out_len.min(abi::QUERY_ADDR_RESP)])
            }
            _ => Err(ENOSYS),
        }
    }

    /// upstream `ucma_query_device_addr()`: GUID, port, P_Key, device index.
    fn query_device_addr(&self, info: &crate::cma::CmIdInfo, r: &mut [u8]) {
        if let Some(d) = info.dev {
            r[..8].copy_from_slice(&d.node_guid.to_be_bytes());
            r[8] = d.port as u8;
            r[10..12].copy_from_slice(&d.pkey.to_be_bytes());
            let i = abi::QUERY_ADDR_IBDEV_INDEX;
            r[i..i + 4].copy_from_slice(&d.dev_index.to_ne_bytes());
        }
    }

    // upstream ucma_listen()
    fn listen(&self, c: &CmdBuf) -> Result {
        let ctx = self.get_ctx(c.u32(0))?;
        let backlog = match c.u32(4) {
            0 => MAX_BACKLOG,
            b => b.min(MAX_BACKLOG),
        };
        ctx.backlog.store(backlog, kernel::sync::atomic::Relaxed);
        let _g = ctx.mutex.lock();
        ctx.cm_id.listen(backlog)
    }

    // upstream ucma_connect()
    fn connect(&self, c: &CmdBuf) -> Result {
        let p = abi::get_conn_param(c.bytes(0, abi::CONN_PARAM));
        if c.u8(abi::CONN_PARAM - 1) == 0 {
            return Err(EINVAL);
        }
        let ctx = self.get_ctx_dev(c.u32(abi::CONN_PARAM))?;
        let _g = ctx.mutex.lock();
        ctx.cm_id.connect(&p)
    }

    // upstream ucma_accept(): with valid parameters the context takes the uid.
    fn accept(&self, c: &CmdBuf) -> Result {
        let uid = c.u64(0);
        let valid = c.u8(8 + abi::CONN_PARAM - 1) != 0;
        let p = abi::get_conn_param(c.bytes(8, abi::CONN_PARAM));
        let ctx = self.get_ctx_dev(c.u32(8 + abi::CONN_PARAM))?;
        let _g = ctx.mutex.lock();
        if valid {
            ctx.ev.uid.store(uid, Relaxed);
            ctx.cm_id.accept(Some(&p))
        } else {
            ctx.cm_id.accept(None)
        }
    }

    // upstream ucma_reject(): reason 0 is the consumer's; only that and the vendor option
    // (IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED) are taken.
    fn reject(&self, c: &CmdBuf) -> Result {
        let (id, len, reason) = (c.u32(0), c.u8(4), c.u8(5));
        let reason = match reason {
            0 => 28,
            28 | 35 => u16::from(reason),
            _ => return Err(EINVAL),
        };
        let ctx = self.get_ctx_dev(id)?;
        let _g = ctx.mutex.lock();
        ctx.cm_id.reject(c.bytes(8, usize::from(len)), reason)
    }

    // upstream ucma_disconnect()
    fn disconnect(&self, c: &CmdBuf) -> Result {
        let ctx = self.get_ctx_dev(c.u32(0))?;
        let _g = ctx.mutex.lock();
        ctx.cm_id.disconnect()
    }

    // upstream ucma_init_qp_attr(): struct ib_uverbs_qp_attr of rdma_init_qp_attr().
    fn init_qp_attr(&self, c: &CmdBuf, out_len: usize) -> Result {
        if out_len < abi::QP_ATTR {
            return Err(ENOSPC);
        }
        let qp_state = c.u32(12);
        let state = u8::try_from(qp_state)
            .ok()
            .and_then(|s| QpState::try_from(s).ok())
            .ok_or(EINVAL)?;
        let ctx = self.get_ctx_dev(c.u32(8))?;
        let _g = ctx.mutex.lock();
        let (a, mask) = ctx.cm_id.init_qp_attr(state)?;
        respond(c.u64(0), &abi::qp_attr(&a, mask))
    }

    // upstream ucma_get_event()
    fn get_event(&self, file: &File, c: &CmdBuf, out_len: usize) -> Result {
        if out_len < abi::EVENT_RESP_MIN {
            return Err(ENOSPC);
        }
        let response = c.u64(0);
        let mut inner = self.inner.lock();
        while inner.events.is_empty() {
            if file.flags() & kernel::fs::file::flags::O_NONBLOCK != 0 {
                return Err(EAGAIN);
            }
            if self.wait.wait_interruptible(&mut inner) {
                return Err(ERESTARTSYS);
            }
        }
        let Some(ev) = inner.events.first() else {
            return Err(EAGAIN);
        };
        respond(response, &ev.resp[..out_len.min(abi::EVENT_RESP)])?;
        let ev = inner.events.remove(0).map_err(|_| EAGAIN)?;
        if let Some((_, n)) = inner.ctxs.iter_mut().find(|(c, _)| c.id == ev.owner) {
            *n += 1;
        }
        if let Some(m) = ev.mc.as_ref() {
            m.reported.fetch_add(1, Relaxed);
        }
        Ok(())
    }

    // upstream ucma_set_option()
    fn set_option(&self, c: &CmdBuf) -> Result {
        let (optval, id, level, name, optlen) =
            (c.u64(0), c.u32(8), c.u32(12), c.u32(16), c.u32(20));
        // upstream: KMALLOC_MAX_SIZE bounds the copy.
        if optlen as usize > (1 << 22) {
            return Err(EINVAL);
        }
        let ctx = self.get_ctx(id)?;
        let mut val = KVec::<u8>::new();
        val.resize(optlen as usize, 0, GFP_KERNEL)?;
        UserSlice::new(UserPtr::from_addr(optval as usize), optlen as usize)
            .reader()
            .read_slice(&mut val)?;
        let int_val = || -> Result<bool> {
            match val.as_slice() {
                [a, b, c, d] => Ok(i32::from_ne_bytes([*a, *b, *c, *d]) != 0),
                _ => Err(EINVAL),
            }
        };
        let byte_val = || -> Result<u8> {
            match val.as_slice() {
                [a] => Ok(*a),
                _ => Err(EINVAL),
            }
        };
        match level {
            abi::OPTION_ID => {
                let _g = ctx.mutex.lock();
                match name {
                    abi::OPTION_ID_TOS => {
                        ctx.cm_id.set_tos(byte_val()?);
                        Ok(())
                    }
                    abi::OPTION_ID_REUSEADDR => ctx.cm_id.set_reuseaddr(int_val()?),
                    abi::OPTION_ID_AFONLY => ctx.cm_id.set_afonly(int_val()?),
                    abi::OPTION_ID_ACK_TIMEOUT => ctx.cm_id.set_ack_timeout(byte_val()?),
                    _ => Err(ENOSYS),
                }
            }
            abi::OPTION_IB => match name {
                // upstream ucma_set_ib_path(): path records from user space (not done).
                abi::OPTION_IB_PATH => Err(EOPNOTSUPP),
                _ => Err(ENOSYS),
            },
            _ => Err(ENOSYS),
        }
    }

    // upstream ucma_join_ip_multicast(): a full member's join of an IPv4 or IPv6 address.
    fn join_ip_mcast(&self, c: &CmdBuf, out_len: usize) -> Result {
        let addr = SockAddr::parse(c.bytes(16, SIZE_IN6)).ok_or(EINVAL)?;
        let size = addr.size() as u16;
        self.process_join(
            c.u64(0),
            c.u64(8),
            c.u32(16 + SIZE_IN6),
            &addr,
            size,
            0,
            out_len,
        )
    }

    // upstream ucma_join_multicast()
    fn join_mcast(&self, c: &CmdBuf, out_len: usize) -> Result {
        let addr = SockAddr::parse(c.bytes(24, SIZE_KSS)).ok_or(EINVAL)?;
        self.process_join(
            c.u64(0),
            c.u64(8),
            c.u32(16),
            &addr,
            c.u16(20),
            c.u16(22),
            out_len,
        )
    }

    // upstream ucma_process_join(): the group gets a number of the multicast table; its
    // events carry `uid` and that number.
    #[allow(clippy::too_many_arguments)]
    fn process_join(
        &self,
        response: u64,
        uid: u64,
        id: u32,
        addr: &SockAddr,
        addr_size: u16,
        flags: u16,
        out_len: usize,
    ) -> Result {
        if out_len < 4 {
            return Err(ENOSPC);
        }
        if usize::from(addr_size) != addr.size() {
            return Err(EINVAL);
        }
        let join_state = match flags {
            abi::MC_JOIN_FLAG_FULLMEMBER => JOIN_FULLMEMBER,
            abi::MC_JOIN_FLAG_SENDONLY_FULLMEMBER => JOIN_SENDONLY_FULLMEMBER,
            _ => return Err(EINVAL),
        };
        let ctx = self.get_ctx_dev(id)?;
        let mc = {
            let mut t = self.shared.mcs.lock();
            let n = match t.iter().position(|s| s.is_none()) {
                Some(i) => i,
                None => {
                    t.push(None, GFP_KERNEL)?;
                    t.len() - 1
                }
            } as u32;
            let mc = Arc::new(
                UcmaMc {
                    id: n,
                    ctx: ctx.clone(),
                    uid,
                    addr: *addr,
                    live: Atomic::new(false),
                    reported: Atomic::new(0),
                },
                GFP_KERNEL,
            );
            let mc = match mc {
                Ok(m) => m,
                Err(e) => {
                    while t.last().is_some_and(|s| s.is_none()) {
                        t.pop();
                    }
                    return Err(e.into());
                }
            };
            if let Some(slot) = t.get_mut(n as usize) {
                *slot = Some(mc.clone());
            }
            mc
        };
        let g = ctx.mutex.lock();
        let r = ctx
            .cm_id
            .join_multicast(addr, join_state, u64::from(mc.id))
            .and_then(|()| {
                respond(response, &mc.id.to_ne_bytes()).inspect_err(|_| {
                    ctx.cm_id.leave_multicast(addr);
                })
            });
        drop(g);
        match r {
            Ok(()) => {
                mc.live.store(true, Relaxed);
                Ok(())
            }
            Err(e) => {
                self.drop_mc(&mc);
                Err(e)
            }
        }
    }

    /// Takes a group out of the table with its events not yet taken (upstream
    /// `ucma_cleanup_mc_events()` and the `multicast_table` erase).
    fn drop_mc(&self, mc: &Arc<UcmaMc>) {
        {
            let mut t = self.shared.mcs.lock();
            if let Some(slot) = t.get_mut(mc.id as usize) {
                if slot.as_ref().is_some_and(|m| Arc::ptr_eq(m, mc)) {
                    *slot = None;
                }
            }
            while t.last().is_some_and(|s| s.is_none()) {
                t.pop();
            }
        }
        self.inner
            .lock()
            .events
            .retain(|e| !e.mc.as_ref().is_some_and(|m| Arc::ptr_eq(m, mc)));
    }

    // upstream ucma_leave_multicast(): `ENOENT` for no such group, `EINVAL` for another
    // file's; the count of the group's events the user took.
    fn leave_mcast(&self, c: &CmdBuf, out_len: usize) -> Result {
        if out_len < 4 {
            return Err(ENOSPC);
        }
        let (response, id) = (c.u64(0), c.u32(8));
        let mc = {
            let t = self.shared.mcs.lock();
            match t.get(id as usize) {
                Some(Some(m)) if m.live.load(Relaxed) => m.clone(),
                _ => return Err(ENOENT),
            }
        };
        if mc.ctx.file.load(Relaxed) != self.key() {
            return Err(EINVAL);
        }
        {
            let _g = mc.ctx.mutex.lock();
            mc.ctx.cm_id.leave_multicast(&mc.addr);
        }
        self.drop_mc(&mc);
        respond(response, &mc.reported.load(Relaxed).to_ne_bytes())
    }

    // upstream ucma_resolve_ib_service() -> rdma_resolve_ib_service(): an id bound to a
    // device, in `RDMA_CM_ADDR_BOUND`; the service resolution needs the SA (`rdma_cap_ib_sa()`,
    // which no port here has: no SA client), so `EOPNOTSUPP` as upstream on RoCE.
    fn resolve_ib_service(&self, c: &CmdBuf) -> Result {
        let ctx = self.get_ctx(c.u32(0))?;
        let _g = ctx.mutex.lock();
        let info = ctx.cm_id.info();
        if info.dev.is_none() || info.state != crate::cma::CmState::AddrBound {
            return Err(EINVAL);
        }
        Err(EOPNOTSUPP)
    }

    // upstream ucma_write_cm_event(): a user's event (`RDMA_CM_EVENT_USER` or `_INTERNAL`)
    // queued on the id's file with its status and 8 bytes of parameter; `EINVAL` for another
    // event or a context without a uid (a connection request's, not accepted).
    fn write_cm_event(&self, c: &CmdBuf) -> Result {
        const EVENT_USER: u32 = 18;
        const EVENT_INTERNAL: u32 = 19;
        let (id, event, status) = (c.u32(0), c.u32(8), c.u32(12));
        if event != EVENT_USER && event != EVENT_INTERNAL {
            return Err(EINVAL);
        }
        let ctx = self.get_ctx(id)?;
        // The file lock stands for upstream's rdma_lock_handler(): no event of the id is
        // queued meanwhile, and the file cannot change under it (MIGRATE_ID takes it).
        let file = ctx.ev.file.lock();
        let uid = ctx.ev.uid.load(Relaxed);
        if uid == 0 {
            return Err(EINVAL);
        }
        let mut resp = [0u8; abi::EVENT_RESP];
        resp[..8].copy_from_slice(&uid.to_ne_bytes());
        resp[8..12].copy_from_slice(&ctx.id.to_ne_bytes());
        resp[12..16].copy_from_slice(&event.to_ne_bytes());
        resp[16..20].copy_from_slice(&status.to_ne_bytes());
        resp[20..28].copy_from_slice(c.bytes(16, 8));
        file.inner.lock().events.push(
            UEvent {
                ctx_id: ctx.id,
                owner: ctx.id,
                mc: None,
                resp,
            },
            GFP_KERNEL,
        )?;
        file.wait.notify_all();
        Ok(())
    }

    // upstream ucma_notify(): rdma_notify() of an id with a device (EINVAL without one).
    fn notify(&self, c: &CmdBuf) -> Result {
        let ctx = self.get_ctx(c.u32(0))?;
        let _g = ctx.mutex.lock();
        if ctx.cm_id.info().dev.is_none() {
            return Err(EINVAL);
        }
        ctx.cm_id.notify(c.u32(4))
    }

    // upstream ucma_close(): every context of the file destroyed.
    fn close(&self) {
        loop {
            let ctx = {
                let inner = self.inner.lock();
                match inner.ctxs.first() {
                    Some((c, _)) => c.clone(),
                    None => break,
                }
            };
            free_slot(&mut self.shared.ctxs.lock(), &ctx);
            self.destroy_ctx(&ctx);
        }
        self.inner.lock().events = KVec::new();
    }
}

#[vtable]
impl CharDevice for UcmaDev {
    type Ptr = Arc<UcmaFile>;

    // upstream ucma_open()
    fn open(dev: &Self, file: &File) -> Result<Self::Ptr> {
        let fptr = file.as_ptr() as usize;
        let f = Arc::pin_init(
            pin_init!(UcmaFile {
                shared: dev.shared.clone(),
                fptr,
                inner <- kernel::new_mutex!(
                    FileInner {
                        events: KVec::new(),
                        ctxs: KVec::new(),
                    },
                    "ucma_file"
                ),
                wait <- kernel::new_poll_condvar!("ucma_poll_wait"),
            }),
            GFP_KERNEL,
        )?;
        dev.shared.files.lock().push(fptr, GFP_KERNEL)?;
        Ok(f)
    }

    fn release(ptr: Self::Ptr, _file: &File) {
        ptr.shared.files.lock().retain(|f| *f != ptr.fptr);
        ptr.close();
    }

    fn write_at(
        ptr: ArcBorrow<'_, UcmaFile>,
        file: &File,
        buf: UserPtr,
        len: usize,
    ) -> Result<usize> {
        let f: Arc<UcmaFile> = ptr.into();
        f.write_cmd(file, buf, len)
    }

    // upstream ucma_poll()
    fn poll(ptr: ArcBorrow<'_, UcmaFile>, file: &File, table: PollTable<'_>) -> u32 {
        table.register_wait(file, &ptr.wait);
        if ptr.inner.lock().events.is_empty() {
            0
        } else {
            EPOLLIN | EPOLLRDNORM
        }
    }
}
