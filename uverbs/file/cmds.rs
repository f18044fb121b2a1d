// SPDX-License-Identifier: GPL-2.0

//! The CQ, QP and MR write commands (upstream `uverbs_cmd.c`:
//! `create_cq()`, `ib_uverbs_destroy_cq()`, `create_qp()`, `modify_qp()`,
//! `ib_uverbs_query_qp()`, `ib_uverbs_destroy_qp()`, `ib_uverbs_reg_mr()`)
//! and the matching ioctl methods (`uverbs_std_types_cq.c`,
//! `uverbs_std_types_qp.c`). Offsets are those of the 7.3 uapi structs on
//! x86_64 (checked with a C compiler against `ib_user_verbs.h`).
//!
//! Order of checks and errnos follow upstream, because the raw-ABI test
//! compares them with upstream's in the same VM: request parsing, then the
//! command's own field checks, then the handle lookups in upstream's order,
//! then the core verb and the driver.
//!
//! Completion channels: `CREATE_COMP_CHANNEL` makes one; a CQ created with
//! it queues its user handle there on each completion the driver reports;
//! any other fd is `EBADF`, as upstream. A CQ's and a QP's asynchronous
//! events go to the file's first async event file with the object's user
//! handle. Each object counts its events read by the process, and its
//! destroy drops those still unread and reports the counts ([`UEvents`]).
//!
//! SRQs (`CREATE_SRQ`, `MODIFY_SRQ`, `QUERY_SRQ`, `DESTROY_SRQ` and the ioctl methods
//! `SRQ_CREATE`/`SRQ_DESTROY`, upstream `__uverbs_create_xsrq()`, `ib_uverbs_modify_srq()`,
//! `ib_uverbs_query_srq()`, `ib_uverbs_destroy_srq()`, `uverbs_std_types_srq.c`): basic SRQs,
//! their events on the async event file, QPs created on them.
//!
//! Not supported, and saying so: XRC (XRC SRQs: `EOPNOTSUPP`), RSS
//! indirection tables (`EINVAL`, as upstream for a device without the
//! object), raw packet QPs (`EOPNOTSUPP`), QP create flags and
//! CQ flags (`EOPNOTSUPP`: our QP/CQ init attributes carry none yet), the
//! alternate path.

use super::{
    copy_out_or_zero, ptr_in, with_udata, Inner, NewObj, ObjKind, Outputs, UFile, UObject,
    WriteBufs,
};
use crate::attr::{Gid, LinkLayer};
use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::{
    ids::{attr, obj},
    parse::{AttrValue, Bundle},
    write as w, Errno,
};
use crate::uverbs::async_event::{AsyncEventFile, EventCount};
use crate::uverbs::resp::Out;
use crate::verbs::{
    AccessFlags, Ah, AhAttr, Cq, CqHandler, CqInitAttr, GlobalRoute, Mr, Qp, QpAttr, QpAttrMask,
    QpCap, QpEvent, QpHandler, QpInitAttr, QpState, QpType, ReregFlags, Srq, SrqAttrMask, SrqEvent,
    SrqHandler, SrqInitAttr, UserCtx, UserMrReq,
};
use kernel::fs::file::{flags, FileDescriptorReservation};
use kernel::prelude::*;
use kernel::sync::Arc;

fn kerr(e: Errno) -> Error {
    Error::from_errno(e.to_errno())
}

fn rd8(b: &[u8], off: usize) -> u8 {
    b.get(off).copied().unwrap_or(0)
}

/// The `N` bytes at `off` of `b`; zeros if `b` ends before them.
fn rd_bytes<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    if let Some(s) = b.get(off..off + N) {
        a.copy_from_slice(s);
    }
    a
}

fn rd16(b: &[u8], off: usize) -> u16 {
    u16::from_ne_bytes(rd_bytes(b, off))
}

fn rd32(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(rd_bytes(b, off))
}

fn rd64(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(rd_bytes(b, off))
}

/// `uverbs_request()` into a fixed buffer.
fn request<const N: usize>(core_in: &[u8]) -> Result<[u8; N]> {
    let mut r = [0u8; N];
    w::uverbs_request(&mut r, core_in).map_err(kerr)?;
    Ok(r)
}

/// `IB_QP_*` bits of `enum ib_qp_attr_mask` used here.
const IB_QP_CUR_STATE: u32 = 1 << 1;
const IB_QP_ALT_PATH: u32 = 1 << 14;
const IB_QP_RATE_LIMIT: u32 = 1 << 25;
/// `IB_QP_ATTR_STANDARD_BITS` = `GENMASK(20, 0)`.
const IB_QP_ATTR_STANDARD_BITS: u32 = (1 << 21) - 1;
/// `IB_QP_SET_QKEY`: a privileged Q_Key.
const IB_QP_SET_QKEY: u32 = 0x8000_0000;
/// `IB_QP_CREATE_*` flags upstream's `create_qp()` lets through to the driver.
const QP_CREATE_ALLOWED: u32 = (1 << 1) // BLOCK_MULTICAST_LOOPBACK
    | (1 << 3) // CROSS_CHANNEL
    | (1 << 4) // MANAGED_SEND
    | (1 << 5) // MANAGED_RECV
    | (1 << 8) // SCATTER_FCS
    | (1 << 9) // CVLAN_STRIPPING
    | (1 << 10) // SOURCE_QPN
    | (1 << 11); // PCI_WRITE_END_PADDING
/// `IB_UVERBS_CREATE_QP_SUP_COMP_MASK` (= `IB_UVERBS_CREATE_QP_MASK_IND_TABLE`).
const CREATE_QP_SUP_COMP_MASK: u32 = 1;

/// The fields of `struct ib_uverbs_ex_create_cq` (the legacy command is
/// converted into it, as upstream).
struct CreateCq {
    user_handle: u64,
    cqe: u32,
    comp_vector: u32,
    comp_channel: i32,
    flags: u32,
}

/// The fields of `struct ib_uverbs_ex_create_qp`.
struct CreateQp {
    user_handle: u64,
    pd_handle: u32,
    send_cq_handle: u32,
    recv_cq_handle: u32,
    srq_handle: u32,
    cap: QpCap,
    sq_sig_all: bool,
    qp_type: u8,
    is_srq: bool,
    comp_mask: u32,
    create_flags: u32,
}

impl CreateQp {
    /// Decodes from the `user_handle` member on (offset 8 in the legacy
    /// command, 0 in the extended one).
    fn decode(r: &[u8], o: usize) -> Self {
        CreateQp {
            user_handle: rd64(r, o),
            pd_handle: rd32(r, o + 8),
            send_cq_handle: rd32(r, o + 12),
            recv_cq_handle: rd32(r, o + 16),
            srq_handle: rd32(r, o + 20),
            cap: QpCap {
                max_send_wr: rd32(r, o + 24),
                max_recv_wr: rd32(r, o + 28),
                max_send_sge: rd32(r, o + 32),
                max_recv_sge: rd32(r, o + 36),
                max_inline_data: rd32(r, o + 40),
            },
            sq_sig_all: rd8(r, o + 44) != 0,
            qp_type: rd8(r, o + 45),
            is_srq: rd8(r, o + 46) != 0,
            comp_mask: 0,
            create_flags: 0,
        }
    }
}

/// `struct ib_uverbs_qp_dest` (32 bytes).
struct QpDest {
    dgid: [u8; 16],
    flow_label: u32,
    dlid: u16,
    sgid_index: u8,
    hop_limit: u8,
    traffic_class: u8,
    sl: u8,
    is_global: bool,
    port_num: u8,
}

impl QpDest {
    fn decode(r: &[u8], o: usize) -> Self {
        let mut dgid = [0u8; 16];
        if let Some(s) = r.get(o..o + 16) {
            dgid.copy_from_slice(s);
        }
        QpDest {
            dgid,
            flow_label: rd32(r, o + 16),
            dlid: rd16(r, o + 20),
            sgid_index: rd8(r, o + 24),
            hop_limit: rd8(r, o + 25),
            traffic_class: rd8(r, o + 26),
            sl: rd8(r, o + 27),
            is_global: rd8(r, o + 30) != 0,
            port_num: rd8(r, o + 31),
        }
    }
}

/// `struct ib_uverbs_qp_cap` (or the same five fields of a create
/// response) at `off`.
fn encode_cap<const N: usize>(o: &mut Out<N>, off: usize, cap: &QpCap) {
    o.u32(off, cap.max_send_wr);
    o.u32(off + 4, cap.max_recv_wr);
    o.u32(off + 8, cap.max_send_sge);
    o.u32(off + 12, cap.max_recv_sge);
    o.u32(off + 16, cap.max_inline_data);
}

/// upstream `copy_ah_attr_to_uverbs()`.
fn encode_dest<const N: usize>(o: &mut Out<N>, off: usize, ah: &AhAttr) {
    if let Some(g) = &ah.grh {
        o.bytes(off, &g.dgid.0);
        o.u32(off + 16, g.flow_label);
        o.u8(off + 24, g.sgid_index);
        o.u8(off + 25, g.hop_limit);
        o.u8(off + 26, g.traffic_class);
        o.u8(off + 30, 1);
    }
    o.u16(off + 20, ah.dlid);
    o.u8(off + 27, ah.sl);
    o.u8(off + 31, ah.port_num as u8);
}

/// `struct ib_uverbs_destroy_cq_resp`.
pub(super) fn destroy_cq_resp(r: Reported) -> [u8; 8] {
    let mut o = [0u8; 8];
    o[..4].copy_from_slice(&r.comp.to_ne_bytes());
    o[4..].copy_from_slice(&r.events.to_ne_bytes());
    o
}

/// `IB_EVENT_CQ_ERR`.
const IB_EVENT_CQ_ERR: u32 = 0;

/// The events of a user CQ or QP (upstream `ib_uverbs_comp_handler()`,
/// `ib_uverbs_cq_event_handler()`, `ib_uverbs_qp_event_handler()` with the
/// object's `ib_ucq_object`/`ib_uevent_object`): completions go to the CQ's
/// completion channel, asynchronous events to the async event file, each
/// with the object's user handle and counted when read.
pub(super) struct UEvents {
    comp_chan: Option<Arc<AsyncEventFile>>,
    async_file: Option<Arc<AsyncEventFile>>,
    user_handle: u64,
    comp: Arc<EventCount>,
    events: Arc<EventCount>,
}

/// What a destroy response reports (`ib_uverbs_destroy_cq_resp`,
/// `ib_uverbs_destroy_qp_resp`): the events the process read.
#[derive(Clone, Copy, Default)]
pub(super) struct Reported {
    pub(super) comp: u32,
    pub(super) events: u32,
}

impl UEvents {
    fn new(
        comp_chan: Option<Arc<AsyncEventFile>>,
        async_file: Option<Arc<AsyncEventFile>>,
        user_handle: u64,
    ) -> Result<Arc<Self>> {
        Ok(Arc::new(
            UEvents {
                comp_chan,
                async_file,
                user_handle,
                comp: EventCount::new()?,
                events: EventCount::new()?,
            },
            GFP_KERNEL,
        )?)
    }

    /// At the object's destroy (upstream `ib_uverbs_release_ucq()`,
    /// `ib_uverbs_release_uevent()`): its unread events are dropped; the
    /// counts of those read are returned.
    pub(super) fn release(&self) -> Reported {
        if let Some(c) = &self.comp_chan {
            c.purge(&self.comp);
        }
        if let Some(a) = &self.async_file {
            a.purge(&self.events);
        }
        Reported {
            comp: self.comp.reported(),
            events: self.events.reported(),
        }
    }
}

impl CqHandler for UEvents {
    fn completion(&self) {
        if let Some(c) = &self.comp_chan {
            c.queue_comp(self.user_handle, &self.comp);
        }
    }

    fn event(&self) {
        if let Some(a) = &self.async_file {
            a.queue_obj_event(self.user_handle, IB_EVENT_CQ_ERR, &self.events);
        }
    }
}

impl QpHandler for UEvents {
    fn event(&self, event: QpEvent) {
        if let Some(a) = &self.async_file {
            a.queue_obj_event(self.user_handle, event.ib_event_type(), &self.events);
        }
    }
}

impl SrqHandler for UEvents {
    fn event(&self, event: SrqEvent) {
        if let Some(a) = &self.async_file {
            a.queue_obj_event(self.user_handle, event.ib_event_type(), &self.events);
        }
    }
}

/// The fields of `struct ib_uverbs_create_srq` (and of the ioctl method).
struct CreateSrq {
    user_handle: u64,
    pd_handle: u32,
    attr: SrqInitAttr,
}

/// upstream `rdma_get_ll_mac()`: the MAC of a link-local (EUI-64) GID.
fn ll_mac(gid: &[u8; 16]) -> Option<[u8; 6]> {
    if gid[0] != 0xfe || gid[1] & 0xc0 != 0x80 || gid[11] != 0xff || gid[12] != 0xfe {
        return None;
    }
    Some([gid[8] ^ 2, gid[9], gid[10], gid[13], gid[14], gid[15]])
}

/// upstream `create_qp()`'s QP type switch: the types it knows but this
/// stack does not implement are `EOPNOTSUPP`, unknown ones `EINVAL`.
fn qp_type(v: u8) -> Result<QpType> {
    match v {
        2 => Ok(QpType::Rc),
        3 => Ok(QpType::Uc),
        4 => Ok(QpType::Ud),
        // RAW_PACKET, XRC_INI, XRC_TGT, DRIVER
        8 | 9 | 10 | 0xff => Err(EOPNOTSUPP),
        _ => Err(EINVAL),
    }
}

impl<D: Driver> UFile<D> {
    fn obj_at(inner: &Inner<D>, pos: usize) -> Result<&ObjKind<D>> {
        inner.objs.get(pos).map(|o| &o.kind).ok_or(EINVAL)
    }

    fn cq_by_handle(inner: &Inner<D>, h: u32) -> Result<Arc<Cq<D>>> {
        match Self::obj_at(inner, inner.find(obj::CQ, i64::from(h))?)? {
            ObjKind::Cq(c, _) => Ok(c.clone()),
            _ => Err(EINVAL),
        }
    }

    fn pd_by_handle(inner: &Inner<D>, h: u32) -> Result<Arc<crate::verbs::Pd<D>>> {
        match Self::obj_at(inner, inner.find(obj::PD, i64::from(h))?)? {
            ObjKind::Pd(p) => Ok(p.clone()),
            _ => Err(EINVAL),
        }
    }

    fn srq_by_handle(inner: &Inner<D>, h: u32) -> Result<Arc<Srq<D>>> {
        match Self::obj_at(inner, inner.find(obj::SRQ, i64::from(h))?)? {
            ObjKind::Srq(s, _) => Ok(s.clone()),
            _ => Err(EINVAL),
        }
    }

    /// upstream `__uverbs_create_xsrq()` for a basic SRQ, up to the driver.
    fn srq_create_common(
        &self,
        inner: &Inner<D>,
        c: &CreateSrq,
        b: &WriteBufs,
    ) -> Result<(Arc<Srq<D>>, Arc<UEvents>)> {
        let ctx = inner.ctx()?.clone();
        let pd = Self::pd_by_handle(inner, c.pd_handle)?;
        let ev = UEvents::new(None, inner.async_file.clone(), c.user_handle)?;
        let handler: Arc<dyn SrqHandler> = ev.clone();
        let srq = with_udata(b, |ud| {
            Srq::create_user(
                &pd,
                &c.attr,
                Some(handler),
                Owner::current_task(),
                &mut UserCtx::new(&ctx, ud),
            )
        })?;
        Ok((srq, ev))
    }

    /// `IB_USER_VERBS_CMD_CREATE_SRQ`: the response has the handle and the sizes the driver
    /// created (`srqn` is only for XRC SRQs, 0 here).
    pub(super) fn create_srq(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        let r = request::<32>(&b.core_in)?;
        let c = CreateSrq {
            user_handle: rd64(&r, 8),
            pd_handle: rd32(&r, 16),
            attr: SrqInitAttr {
                max_wr: rd32(&r, 20),
                max_sge: rd32(&r, 24),
                srq_limit: rd32(&r, 28),
            },
        };
        let (srq, ev) = self.srq_create_common(inner, &c, b)?;
        let id = inner.free_id(None);
        let a = srq.attr();
        let mut o = Out::<16>::new();
        o.u32(0, id);
        o.u32(4, a.max_wr);
        o.u32(8, a.max_sge);
        let out = b.core_out;
        Self::commit_and_respond(inner, id, obj::SRQ, ObjKind::Srq(srq, ev), || {
            copy_out_or_zero(out.0, out.1, &o.0)
        })
    }

    /// `IB_USER_VERBS_CMD_MODIFY_SRQ`: upstream hands `attr_mask` to the driver unchecked.
    pub(super) fn modify_srq(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        inner.ctx()?;
        let r = request::<16>(&b.core_in)?;
        let srq = Self::srq_by_handle(inner, rd32(&r, 0))?;
        let attr = SrqInitAttr {
            max_wr: rd32(&r, 8),
            max_sge: 0,
            srq_limit: rd32(&r, 12),
        };
        with_udata(b, |ud| srq.modify_user(&attr, SrqAttrMask(rd32(&r, 4)), ud))
    }

    /// `IB_USER_VERBS_CMD_QUERY_SRQ`.
    pub(super) fn query_srq(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        inner.ctx()?;
        let r = request::<16>(&b.core_in)?;
        let srq = Self::srq_by_handle(inner, rd32(&r, 8))?;
        let a = srq.query()?;
        let mut o = Out::<16>::new();
        o.u32(0, a.max_wr);
        o.u32(4, a.max_sge);
        o.u32(8, a.srq_limit);
        copy_out_or_zero(b.core_out.0, b.core_out.1, &o.0)
    }

    /// `IB_USER_VERBS_CMD_DESTROY_SRQ`: the response counts the events the process read;
    /// `EBUSY` while a QP uses the SRQ.
    pub(super) fn destroy_srq(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        inner.ctx()?;
        let r = request::<16>(&b.core_in)?;
        let pos = inner.find(obj::SRQ, i64::from(rd32(&r, 8)))?;
        let rep = Self::destroy_at(inner, pos)?;
        copy_out_or_zero(b.core_out.0, b.core_out.1, &rep.events.to_ne_bytes())
    }

    fn qp_by_handle(inner: &Inner<D>, h: u32) -> Result<Arc<Qp<D>>> {
        match Self::obj_at(inner, inner.find(obj::QP, i64::from(h))?)? {
            ObjKind::Qp(q, _) => Ok(q.clone()),
            _ => Err(EINVAL),
        }
    }

    /// Commits a new object under `id` (upstream `rdma_alloc_commit_uobject()`).
    fn commit(inner: &mut Inner<D>, id: u32, obj_type: u16, kind: ObjKind<D>) -> Result {
        inner
            .objs
            .push(UObject { id, obj_type, kind }, GFP_KERNEL)?;
        Ok(())
    }

    /// Commits, then writes the response; a failed write destroys the
    /// object again (upstream: the method fails, its NEW object is aborted).
    fn commit_and_respond(
        inner: &mut Inner<D>,
        id: u32,
        obj_type: u16,
        kind: ObjKind<D>,
        respond: impl FnOnce() -> Result,
    ) -> Result {
        Self::commit(inner, id, obj_type, kind)?;
        if let Err(e) = respond() {
            if let Ok(pos) = inner.find(obj_type, i64::from(id)) {
                let _ = Self::destroy_at(inner, pos);
            }
            return Err(e);
        }
        Ok(())
    }

    /// upstream `create_cq()` up to the driver.
    fn cq_create_common(
        &self,
        inner: &Inner<D>,
        c: &CreateCq,
        b: &WriteBufs,
    ) -> Result<(Arc<Cq<D>>, Arc<UEvents>)> {
        let ctx = inner.ctx()?.clone();
        // One completion vector (GET_CONTEXT answers num_comp_vectors 1).
        if c.comp_vector >= 1 {
            return Err(EINVAL);
        }
        if c.cqe == 0 {
            return Err(EINVAL);
        }
        // upstream ib_uverbs_lookup_comp_file(): a completion channel of
        // this file, else EBADF.
        let chan = if c.comp_channel >= 0 {
            let chan = inner
                .comp_channels
                .iter()
                .find(|e| AsyncEventFile::fd_is(e, i64::from(c.comp_channel)))
                .ok_or(EBADF)?;
            Some(chan.clone())
        } else {
            None
        };
        let ev = UEvents::new(chan, inner.async_file.clone(), c.user_handle)?;
        if c.flags != 0 {
            return Err(EOPNOTSUPP);
        }
        let attr = CqInitAttr {
            cqe: c.cqe,
            comp_vector: c.comp_vector,
        };
        let handler: Arc<dyn CqHandler> = ev.clone();
        let cq = with_udata(b, |ud| {
            Cq::create_user(
                &self.dev,
                &attr,
                Some(handler),
                Owner::current_task(),
                &mut UserCtx::new(&ctx, ud),
            )
        })?;
        Ok((cq, ev))
    }

    /// `IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL` (upstream
    /// `ib_uverbs_create_comp_channel()`): a new `[infinibandevent]` fd
    /// reading `struct ib_uverbs_comp_event_desc`.
    pub(super) fn create_comp_channel(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        request::<8>(&b.core_in)?;
        inner.ctx()?;
        let fd = FileDescriptorReservation::get_unused_fd_flags(flags::O_CLOEXEC)?;
        let chan = AsyncEventFile::new_comp_channel()?;
        let file = AsyncEventFile::file(&chan)?;
        copy_out_or_zero(b.core_out.0, b.core_out.1, &fd.reserved_fd().to_ne_bytes())?;
        inner.comp_channels.push(chan, GFP_KERNEL)?;
        fd.fd_install(file);
        Ok(())
    }

    /// `IB_USER_VERBS_CMD_CREATE_CQ` / `IB_USER_VERBS_EX_CMD_CREATE_CQ`.
    pub(super) fn create_cq(&self, inner: &mut Inner<D>, b: &mut WriteBufs, ex: bool) -> Result {
        let c = if ex {
            let r = request::<32>(&b.core_in)?;
            // comp_mask, reserved
            if rd32(&r, 20) != 0 || rd32(&r, 28) != 0 {
                return Err(EINVAL);
            }
            CreateCq {
                user_handle: rd64(&r, 0),
                cqe: rd32(&r, 8),
                comp_vector: rd32(&r, 12),
                comp_channel: rd32(&r, 16) as i32,
                flags: rd32(&r, 24),
            }
        } else {
            let r = request::<32>(&b.core_in)?;
            CreateCq {
                user_handle: rd64(&r, 8),
                cqe: rd32(&r, 16),
                comp_vector: rd32(&r, 20),
                comp_channel: rd32(&r, 24) as i32,
                flags: 0,
            }
        };
        let (cq, ev) = self.cq_create_common(inner, &c, b)?;
        let id = inner.free_id(None);
        let mut o = Out::<16>::new();
        o.u32(0, id);
        o.u32(4, cq.cqe());
        let out = b.core_out;
        Self::commit_and_respond(inner, id, obj::CQ, ObjKind::Cq(cq, ev), || {
            if ex {
                o.u32(12, w::uverbs_response_length(out.1, 16) as u32);
                copy_out_or_zero(out.0, out.1, &o.0)
            } else {
                copy_out_or_zero(out.0, out.1, o.0.get(..8).unwrap_or(&[]))
            }
        })
    }

    /// `IB_USER_VERBS_CMD_DESTROY_CQ`: the response counts the completion
    /// and asynchronous events the process read.
    pub(super) fn destroy_cq(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        inner.ctx()?;
        let r = request::<16>(&b.core_in)?;
        let pos = inner.find(obj::CQ, i64::from(rd32(&r, 8)))?;
        let rep = Self::destroy_at(inner, pos)?;
        copy_out_or_zero(b.core_out.0, b.core_out.1, &destroy_cq_resp(rep))
    }

    /// `IB_USER_VERBS_CMD_RESIZE_CQ` (upstream `ib_uverbs_resize_cq()`): `cqe == 0` is
    /// `EINVAL`; the driver's udata carries the new buffer; the response is
    /// `struct ib_uverbs_resize_cq_resp { cqe; reserved; }` with the CQ's new size.
    pub(super) fn resize_cq(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        let ctx = inner.ctx()?.clone();
        let r = request::<16>(&b.core_in)?;
        let cqe = rd32(&r, 12);
        if cqe == 0 {
            return Err(EINVAL);
        }
        let cq = Self::cq_by_handle(inner, rd32(&r, 8))?;
        with_udata(b, |ud| cq.resize_user(cqe, &mut UserCtx::new(&ctx, ud)))?;
        let mut o = Out::<8>::new();
        o.u32(0, cq.cqe());
        copy_out_or_zero(b.core_out.0, b.core_out.1, &o.0)
    }

    /// `IB_USER_VERBS_EX_CMD_MODIFY_CQ` (upstream `ib_uverbs_ex_modify_cq()`): `struct
    /// ib_uverbs_ex_modify_cq { cq_handle; attr_mask; attr { cq_count; cq_period; }; reserved;
    /// }`; no mask or a reserved word is `EINVAL`, a mask beyond `IB_CQ_MODERATE` `EOPNOTSUPP`.
    pub(super) fn modify_cq(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        /// `IB_CQ_MODERATE`.
        const CQ_MODERATE: u32 = 1;
        let r = request::<16>(&b.core_in)?;
        let mask = rd32(&r, 4);
        if mask == 0 || rd32(&r, 12) != 0 {
            return Err(EINVAL);
        }
        if mask > CQ_MODERATE {
            return Err(EOPNOTSUPP);
        }
        inner.ctx()?;
        let cq = Self::cq_by_handle(inner, rd32(&r, 0))?;
        cq.set_moderation(rd16(&r, 8), rd16(&r, 10))
    }

    /// upstream `create_qp()` for RC/UC/UD QPs on a PD.
    fn qp_create_common(
        &self,
        inner: &Inner<D>,
        c: &CreateQp,
        b: &WriteBufs,
    ) -> Result<(Arc<Qp<D>>, Arc<UEvents>)> {
        let ctx = inner.ctx()?.clone();
        let t = qp_type(c.qp_type)?;
        if c.comp_mask & CREATE_QP_SUP_COMP_MASK != 0 {
            // An RSS indirection table: upstream looks the handle up, but no
            // device here has the RWQ_IND_TBL object (no
            // destroy_rwq_ind_table: the uapi drops it), and a lookup of an
            // object type the device lacks is EINVAL (rdma_lookup_get_uobject()).
            return Err(EINVAL);
        }
        let srq = if c.is_srq {
            Some(Self::srq_by_handle(inner, c.srq_handle)?)
        } else {
            None
        };
        let rcq = if c.recv_cq_handle != c.send_cq_handle {
            Some(Self::cq_by_handle(inner, c.recv_cq_handle)?)
        } else {
            None
        };
        let scq = Self::cq_by_handle(inner, c.send_cq_handle)?;
        let rcq = rcq.unwrap_or_else(|| scq.clone());
        let pd = Self::pd_by_handle(inner, c.pd_handle)?;
        if c.create_flags & !QP_CREATE_ALLOWED != 0 {
            return Err(EINVAL);
        }
        if c.create_flags != 0 {
            return Err(EOPNOTSUPP);
        }
        let ev = UEvents::new(None, inner.async_file.clone(), c.user_handle)?;
        let handler: Arc<dyn QpHandler> = ev.clone();
        let attr = QpInitAttr {
            send_cq: &scq,
            recv_cq: &rcq,
            srq: srq.as_ref(),
            qp_type: t,
            cap: c.cap,
            sq_sig_all: c.sq_sig_all,
            event_handler: Some(handler),
        };
        let qp = with_udata(b, |ud| {
            Qp::create_user(
                &pd,
                &attr,
                Owner::current_task(),
                &mut UserCtx::new(&ctx, ud),
            )
        })?;
        Ok((qp, ev))
    }

    /// `IB_USER_VERBS_CMD_CREATE_QP` / `IB_USER_VERBS_EX_CMD_CREATE_QP`.
    pub(super) fn create_qp(&self, inner: &mut Inner<D>, b: &mut WriteBufs, ex: bool) -> Result {
        let c = if ex {
            let r = request::<64>(&b.core_in)?;
            let mut c = CreateQp::decode(&r, 0);
            c.comp_mask = rd32(&r, 48);
            c.create_flags = rd32(&r, 52);
            // upstream ib_uverbs_ex_create_qp(): comp_mask, reserved
            if c.comp_mask & !CREATE_QP_SUP_COMP_MASK != 0 || rd8(&r, 47) != 0 {
                return Err(EINVAL);
            }
            c
        } else {
            let r = request::<56>(&b.core_in)?;
            CreateQp::decode(&r, 8)
        };
        let (qp, ev) = self.qp_create_common(inner, &c, b)?;
        let id = inner.free_id(None);
        let cap = qp.cap();
        let mut o = Out::<40>::new();
        o.u32(0, id);
        o.u32(4, qp.qp_num());
        encode_cap(&mut o, 8, &cap);
        let out = b.core_out;
        Self::commit_and_respond(inner, id, obj::QP, ObjKind::Qp(qp, ev), || {
            if ex {
                o.u32(36, w::uverbs_response_length(out.1, 40) as u32);
                copy_out_or_zero(out.0, out.1, &o.0)
            } else {
                copy_out_or_zero(out.0, out.1, o.0.get(..32).unwrap_or(&[]))
            }
        })
    }

    /// `IB_USER_VERBS_CMD_MODIFY_QP` / `IB_USER_VERBS_EX_CMD_MODIFY_QP`
    /// (upstream `modify_qp()`).
    pub(super) fn modify_qp(&self, inner: &mut Inner<D>, b: &mut WriteBufs, ex: bool) -> Result {
        inner.ctx()?;
        let r = if ex {
            let r = request::<120>(&b.core_in)?;
            if rd32(&r, 68) & !(IB_QP_ATTR_STANDARD_BITS | IB_QP_RATE_LIMIT) != 0 {
                return Err(EOPNOTSUPP);
            }
            r
        } else {
            let mut r = [0u8; 120];
            w::uverbs_request(&mut r[..112], &b.core_in).map_err(kerr)?;
            if rd32(&r, 68) & !IB_QP_ATTR_STANDARD_BITS != 0 {
                return Err(EOPNOTSUPP);
            }
            r
        };
        let qp = Self::qp_by_handle(inner, rd32(&r, 64))?;
        self.modify_qp_with(&qp, &r)?;
        if ex {
            let mut o = Out::<8>::new();
            o.u32(4, w::uverbs_response_length(b.core_out.1, 8) as u32);
            copy_out_or_zero(b.core_out.0, b.core_out.1, &o.0)?;
        }
        Ok(())
    }

    fn modify_qp_with(&self, qp: &Arc<Qp<D>>, r: &[u8; 120]) -> Result {
        let dev = &self.dev;
        let port_ok = |p: u8| p != 0 && u32::from(p) <= dev.phys_port_cnt();
        let mut mask = rd32(r, 68);
        let qkey = rd32(r, 72);
        let state = rd8(r, 96);
        let cur_state = rd8(r, 97);
        let port_num = rd8(r, 104);
        let dest = QpDest::decode(r, 0);
        let alt_dest = QpDest::decode(r, 32);
        if mask & QpAttrMask::PORT.0 != 0 && !port_ok(port_num) {
            return Err(EINVAL);
        }
        let mut port = port_num;
        if mask & QpAttrMask::AV.0 != 0 {
            if !port_ok(dest.port_num) {
                return Err(EINVAL);
            }
            if mask & QpAttrMask::STATE.0 != 0 && state == QpState::Rtr as u8 {
                // INIT->RTR: the AV's port must be the QP's.
                if u32::from(dest.port_num) != qp.port() {
                    return Err(EINVAL);
                }
            } else {
                let both = QpAttrMask::AV.0 | QpAttrMask::PORT.0;
                if mask & both == both && port_num != dest.port_num {
                    return Err(EINVAL);
                }
                if mask & both == QpAttrMask::AV.0 {
                    mask |= QpAttrMask::PORT.0;
                    port = dest.port_num;
                }
            }
        }
        if mask & IB_QP_ALT_PATH != 0
            && (!port_ok(rd8(r, 108))
                || !port_ok(alt_dest.port_num)
                || rd8(r, 108) != alt_dest.port_num)
        {
            return Err(EINVAL);
        }
        let err = QpState::Err as u8;
        if (mask & IB_QP_CUR_STATE != 0 && cur_state > err)
            || (mask & QpAttrMask::STATE.0 != 0 && state > err)
        {
            return Err(EINVAL);
        }
        if mask & QpAttrMask::QKEY.0 != 0 && qkey & IB_QP_SET_QKEY != 0 {
            // upstream: needs rdma_nl_get_privileged_qkey() or CAP_NET_RAW.
            return Err(EPERM);
        }
        let mut a = QpAttr {
            qp_access_flags: rd32(r, 88),
            qkey,
            rq_psn: rd32(r, 76),
            sq_psn: rd32(r, 80),
            dest_qp_num: rd32(r, 84),
            pkey_index: rd16(r, 92),
            path_mtu: rd8(r, 98),
            max_rd_atomic: rd8(r, 101),
            max_dest_rd_atomic: rd8(r, 102),
            min_rnr_timer: rd8(r, 103),
            port_num: u32::from(port),
            timeout: rd8(r, 105),
            retry_cnt: rd8(r, 106),
            rnr_retry: rd8(r, 107),
            ..QpAttr::default()
        };
        if mask & QpAttrMask::STATE.0 != 0 {
            a.qp_state = QpState::try_from(state)?;
        }
        if mask & QpAttrMask::AV.0 != 0 {
            a.ah_attr = self.ah_from_dest(&dest)?;
        }
        qp.modify(&a, QpAttrMask(mask))
    }

    /// upstream `copy_ah_attr_from_uverbs()`; on an Ethernet port the
    /// destination MAC of a link-local GID is derived from it (upstream
    /// `ib_resolve_eth_dmac()`); other GIDs would need a neighbour lookup,
    /// which is not done (the MAC stays zero).
    fn ah_from_dest(&self, d: &QpDest) -> Result<AhAttr> {
        let mut ah = AhAttr {
            dlid: d.dlid,
            sl: d.sl,
            port_num: u32::from(d.port_num),
            ..AhAttr::default()
        };
        if d.is_global {
            ah.grh = Some(GlobalRoute {
                dgid: Gid(d.dgid),
                flow_label: d.flow_label,
                sgid_index: d.sgid_index,
                hop_limit: d.hop_limit,
                traffic_class: d.traffic_class,
            });
            let eth = self
                .dev
                .port_immutable(u32::from(d.port_num))
                .map(|i| i.link_layer == LinkLayer::Ethernet)
                .unwrap_or(false);
            if eth {
                if let Some(mac) = ll_mac(&d.dgid) {
                    ah.dmac = mac;
                }
            }
        }
        Ok(ah)
    }

    /// `IB_USER_VERBS_CMD_QUERY_QP` (upstream `ib_uverbs_query_qp()`).
    pub(super) fn query_qp(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        inner.ctx()?;
        let r = request::<16>(&b.core_in)?;
        let qp = Self::qp_by_handle(inner, rd32(&r, 8))?;
        let a = qp.query()?;
        let cap = qp.cap();
        let mut o = Out::<128>::new();
        encode_dest(&mut o, 0, &a.ah_attr);
        encode_cap(&mut o, 64, &cap);
        o.u32(84, a.qkey);
        o.u32(88, a.rq_psn);
        o.u32(92, a.sq_psn);
        o.u32(96, a.dest_qp_num);
        o.u32(100, a.qp_access_flags);
        o.u16(104, a.pkey_index);
        o.u8(108, a.qp_state as u8);
        o.u8(109, a.qp_state as u8);
        o.u8(110, a.path_mtu);
        o.u8(113, a.max_rd_atomic);
        o.u8(114, a.max_dest_rd_atomic);
        o.u8(115, a.min_rnr_timer);
        o.u8(116, a.port_num as u8);
        o.u8(117, a.timeout);
        o.u8(118, a.retry_cnt);
        o.u8(119, a.rnr_retry);
        o.u8(122, u8::from(qp.sq_sig_all()));
        copy_out_or_zero(b.core_out.0, b.core_out.1, &o.0)
    }

    /// `IB_USER_VERBS_CMD_DESTROY_QP`.
    pub(super) fn destroy_qp(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        inner.ctx()?;
        let r = request::<16>(&b.core_in)?;
        let pos = inner.find(obj::QP, i64::from(rd32(&r, 8)))?;
        let rep = Self::destroy_at(inner, pos)?;
        copy_out_or_zero(b.core_out.0, b.core_out.1, &rep.events.to_ne_bytes())
    }

    /// `IB_USER_VERBS_CMD_REG_MR` (upstream `ib_uverbs_reg_mr()`).
    pub(super) fn reg_mr(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        let r = request::<40>(&b.core_in)?;
        let req = UserMrReq {
            start: rd64(&r, 8),
            length: rd64(&r, 16),
            iova: rd64(&r, 24),
            access: AccessFlags(rd32(&r, 36)),
        };
        let page_mask = (kernel::page::PAGE_SIZE as u64) - 1;
        if req.start & page_mask != req.iova & page_mask {
            return Err(EINVAL);
        }
        let ctx = inner.ctx()?.clone();
        req.access.check()?;
        let pd = Self::pd_by_handle(inner, rd32(&r, 32))?;
        let mr = with_udata(b, |ud| {
            Mr::reg_user(
                &pd,
                &req,
                Owner::current_task(),
                &mut UserCtx::new(&ctx, ud),
            )
        })?;
        let id = inner.free_id(None);
        let mut o = Out::<12>::new();
        o.u32(0, id);
        o.u32(4, mr.lkey());
        o.u32(8, mr.rkey());
        let out = b.core_out;
        Self::commit_and_respond(inner, id, obj::MR, ObjKind::Mr(mr), || {
            copy_out_or_zero(out.0, out.1, &o.0)
        })
    }

    /// `IB_USER_VERBS_CMD_REREG_MR` (upstream `ib_uverbs_rereg_mr()`): `struct
    /// ib_uverbs_rereg_mr` (48 bytes), checks in upstream's order: the flags and the
    /// translation's page offsets ([`ReregFlags::check_request`]), the MR handle (`ENOENT`,
    /// another type `EINVAL`), the access flags when they change, the new PD's handle when the
    /// PD changes, then [`Mr::rereg_user`]. The new MR takes the old one's handle and goes to
    /// the newest end of the file's objects (upstream `rdma_assign_uobject()` then
    /// `rdma_alloc_commit_uobject()`), and the old MR is deregistered
    /// (`uobj_put_destroy()`); the response is `{ lkey, rkey }` of the new MR.
    pub(super) fn rereg_mr(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        let r = request::<48>(&b.core_in)?;
        let handle = rd32(&r, 8);
        let flags = ReregFlags(rd32(&r, 12));
        let req = UserMrReq {
            start: rd64(&r, 16),
            length: rd64(&r, 24),
            iova: rd64(&r, 32),
            access: AccessFlags(rd32(&r, 44)),
        };
        flags.check_request(req.start, req.iova)?;
        let ctx = inner.ctx()?.clone();
        let pos = inner.find(obj::MR, i64::from(handle))?;
        let mr = match Self::obj_at(inner, pos)? {
            ObjKind::Mr(m) => m.clone(),
            _ => return Err(EINVAL),
        };
        if flags.has(ReregFlags::ACCESS) {
            req.access.check()?;
        }
        let new_pd = if flags.has(ReregFlags::PD) {
            Some(Self::pd_by_handle(inner, rd32(&r, 40))?)
        } else {
            None
        };
        let new = with_udata(b, |ud| {
            Mr::rereg_user(
                &mr,
                flags,
                &req,
                new_pd.as_ref(),
                Owner::current_task(),
                &mut UserCtx::new(&ctx, ud),
            )
        })?;
        drop(mr);
        let mut o = Out::<8>::new();
        o.u32(0, new.lkey());
        o.u32(4, new.rkey());
        let old = inner.objs.remove(pos).map_err(|_| EINVAL)?;
        // One entry was just removed: there is room for the new one.
        if let Err(e) = inner.objs.push_within_capacity(UObject {
            id: handle,
            obj_type: obj::MR,
            kind: ObjKind::Mr(new),
        }) {
            drop(e);
            return Err(ENOMEM);
        }
        if let ObjKind::Mr(m) = old.kind {
            if let Err(e) = Mr::dereg(m) {
                pr_warn!(
                    "uverbs: rereg_mr: the old MR's dereg failed ({:?})\n",
                    e.err
                );
            }
        }
        copy_out_or_zero(b.core_out.0, b.core_out.1, &o.0)
    }

    /// `IB_USER_VERBS_CMD_CREATE_AH` (upstream `ib_uverbs_create_ah()`): `struct
    /// ib_uverbs_create_ah` (56 bytes: `attr` at 24 is `struct ib_uverbs_ah_attr`), checks in
    /// upstream's order: the port (`EINVAL`), the PD handle (`EINVAL`), then
    /// [`Ah::create_user`]. On an Ethernet port the destination MAC of a link-local GID is
    /// derived from it (upstream `ib_resolve_eth_dmac()`), so the driver can hand it to the
    /// provider (mlx5: `mlx5_ib_create_ah_resp.dmac`).
    pub(super) fn create_ah(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        let r = request::<56>(&b.core_in)?;
        let ctx = inner.ctx()?.clone();
        let port = rd8(&r, 54);
        let imm = self
            .dev
            .port_immutable(u32::from(port))
            .map_err(|_| EINVAL)?;
        // upstream: uobj_get_obj_read() failing is EINVAL here.
        let pd = Self::pd_by_handle(inner, rd32(&r, 16)).map_err(|_| EINVAL)?;
        let mut ah = AhAttr {
            dlid: rd16(&r, 48),
            sl: rd8(&r, 50),
            port_num: u32::from(port),
            ..AhAttr::default()
        };
        if rd8(&r, 53) != 0 {
            let dgid = rd_bytes::<16>(&r, 24);
            ah.grh = Some(GlobalRoute {
                dgid: Gid(dgid),
                flow_label: rd32(&r, 40),
                sgid_index: rd8(&r, 44),
                hop_limit: rd8(&r, 45),
                traffic_class: rd8(&r, 46),
            });
            if imm.link_layer == LinkLayer::Ethernet {
                if let Some(mac) = ll_mac(&dgid) {
                    ah.dmac = mac;
                }
            }
        }
        let ah = with_udata(b, |ud| {
            Ah::create_user(&pd, &ah, &mut UserCtx::new(&ctx, ud))
        })?;
        let id = inner.free_id(None);
        let out = b.core_out;
        Self::commit_and_respond(inner, id, obj::AH, ObjKind::Ah(ah), || {
            copy_out_or_zero(out.0, out.1, &id.to_ne_bytes())
        })
    }

    /// `IB_USER_VERBS_CMD_DESTROY_AH` (upstream `ib_uverbs_destroy_ah()`).
    pub(super) fn destroy_ah(&self, inner: &mut Inner<D>, b: &mut WriteBufs) -> Result {
        inner.ctx()?;
        let r = request::<4>(&b.core_in)?;
        let pos = inner.find(obj::AH, i64::from(rd32(&r, 0)))?;
        Self::destroy_at(inner, pos).map(|_| ())
    }

    // ---- ioctl methods ----

    /// `UVERBS_METHOD_QUERY_GID_TABLE` (upstream `uverbs_std_types_device.c`
    /// with `rdma_query_gid_table()` and `copy_gid_entries_to_user()`): every
    /// valid GID of every port as `struct ib_uverbs_gid_entry` (32 bytes: gid,
    /// gid_index, port_num, gid_type, netdev_ifindex 0: no netdevs here),
    /// each in `ENTRY_SIZE` bytes of the user's array (cut or zero-padded).
    pub(super) fn ioctl_query_gid_table(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        out: &mut Outputs,
    ) -> Result {
        const ENTRY: usize = 32;
        bd.get_flags32(attr::QUERY_GID_TABLE_FLAGS, 0)
            .map_err(kerr)?;
        let esize = bd
            .get_const_unsigned(attr::QUERY_GID_TABLE_ENTRY_SIZE, u64::from(u16::MAX), None)
            .map_err(kerr)? as usize;
        if esize == 0 {
            return Err(EINVAL);
        }
        let max = bd
            .ptr_array_size(attr::QUERY_GID_TABLE_RESP_ENTRIES, esize)
            .map_err(kerr)?;
        if max == 0 {
            return Err(EINVAL);
        }
        inner.ctx()?;
        let mut buf = KVec::new();
        let mut n = 0usize;
        for port in 1..=self.dev.phys_port_cnt() {
            let len = self.dev.port_immutable(port)?.gid_tbl_len;
            for index in 0..len {
                let Ok(gid) = self.dev.query_gid(port, index) else {
                    continue;
                };
                if n >= max {
                    return Err(EINVAL);
                }
                let t = self.dev.query_gid_type(port, index).unwrap_or_default();
                let mut e = Out::<ENTRY>::new();
                e.bytes(0, &gid.0);
                e.u32(16, index);
                e.u32(20, port);
                e.u32(24, t as u32);
                buf.extend_from_slice(e.0.get(..esize.min(ENTRY)).unwrap_or(&[]), GFP_KERNEL)?;
                for _ in ENTRY..esize {
                    buf.push(0u8, GFP_KERNEL)?;
                }
                n += 1;
            }
        }
        out.put(
            bd,
            attr::QUERY_GID_TABLE_RESP_NUM_ENTRIES,
            &(n as u64).to_ne_bytes(),
        )?;
        out.put(bd, attr::QUERY_GID_TABLE_RESP_ENTRIES, &buf)
    }

    /// `UVERBS_METHOD_CQ_CREATE` (upstream `uverbs_std_types_cq.c`).
    pub(super) fn ioctl_cq_create(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        uattrs: &[u8],
        out: &mut Outputs,
        new: NewObj,
    ) -> Result {
        let NewObj::Idr { id, .. } = new else {
            return Err(EINVAL);
        };
        // The externally supplied CQ buffer (BUFFER_VA/LENGTH/FD/OFFSET,
        // BUF_UMEM) is the driver's to take: upstream's handler never looks
        // at it and passes it to `create_user_cq`, which no driver of ours
        // has; with `create_cq` (rxe, mlx5) it is ignored, so it is here.
        let c = CreateCq {
            cqe: ptr_u32(bd, attr::CREATE_CQ_CQE)?,
            user_handle: ptr_u64(bd, attr::CREATE_CQ_USER_HANDLE)?,
            comp_vector: ptr_u32(bd, attr::CREATE_CQ_COMP_VECTOR)?,
            // The parser checked that the fd is one of this file's
            // completion channels.
            comp_channel: match bd.get(attr::CREATE_CQ_COMP_CHANNEL) {
                Ok(AttrValue::Obj { id, .. }) => i32::try_from(id).map_err(|_| EBADF)?,
                _ => -1,
            },
            flags: bd.get_flags32(attr::CREATE_CQ_FLAGS, 0x3).map_err(kerr)?,
        };
        let bufs = ioctl_bufs(bd, uattrs)?;
        let (cq, ev) = self.cq_create_common(inner, &c, &bufs)?;
        let cqe = cq.cqe();
        Self::commit_and_respond(inner, id, obj::CQ, ObjKind::Cq(cq, ev), || {
            out.put(bd, attr::CREATE_CQ_RESP_CQE, &cqe.to_ne_bytes())
        })
    }

    /// `UVERBS_METHOD_QP_CREATE` (upstream `uverbs_std_types_qp.c`).
    pub(super) fn ioctl_qp_create(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        uattrs: &[u8],
        out: &mut Outputs,
        new: NewObj,
    ) -> Result {
        let NewObj::Idr { id, .. } = new else {
            return Err(EINVAL);
        };
        // upstream UVERBS_HANDLER(UVERBS_METHOD_QP_CREATE) (uverbs_std_types_qp.c), in its
        // order: CAP, USER_HANDLE, TYPE; then by type the handles, an absent one ENOENT
        // (uverbs_attr_get_obj()); then the flags.
        let capb = ptr_bytes::<20>(bd, attr::CREATE_QP_CAP)?;
        let user_handle = ptr_u64(bd, attr::CREATE_QP_USER_HANDLE)?;
        let t = bd
            .get_const_unsigned(attr::CREATE_QP_TYPE, u8::MAX.into(), None)
            .map_err(kerr)? as u8;
        let idr = |a: u16| -> Result<u32> {
            match bd.get(a) {
                Ok(AttrValue::Obj { id, .. }) => u32::try_from(id).map_err(|_| ENOENT),
                _ => Err(ENOENT),
            }
        };
        let cap = QpCap {
            max_send_wr: rd32(&capb, 0),
            max_recv_wr: rd32(&capb, 4),
            max_send_sge: rd32(&capb, 8),
            max_recv_sge: rd32(&capb, 12),
            max_inline_data: rd32(&capb, 16),
        };
        const XRC_TGT: u8 = 10;
        const XRC_INI: u8 = 9;
        let (pd_handle, send_cq_handle, recv_cq_handle) = match t {
            // No XRC domain exists here: its handle finds nothing.
            XRC_TGT => {
                if bd.is_valid(attr::CREATE_QP_RECV_CQ_HANDLE)
                    || bd.is_valid(attr::CREATE_QP_SEND_CQ_HANDLE)
                    || bd.is_valid(attr::CREATE_QP_PD_HANDLE)
                    || bd.is_valid(attr::CREATE_QP_IND_TABLE_HANDLE)
                {
                    return Err(EINVAL);
                }
                return Err(ENOENT);
            }
            // RAW_PACKET (CAP_NET_RAW is the driver's to refuse here), RC, UC, UD,
            // XRC_INI, DRIVER.
            8 | 2 | 3 | 4 | XRC_INI | 0xff => {
                if bd.is_valid(attr::CREATE_QP_XRCD_HANDLE)
                    || (bd.is_valid(attr::CREATE_QP_SRQ_HANDLE) && t == XRC_INI)
                {
                    return Err(EINVAL);
                }
                let pd = idr(attr::CREATE_QP_PD_HANDLE)?;
                if bd.is_valid(attr::CREATE_QP_IND_TABLE_HANDLE) {
                    if cap.max_recv_wr != 0
                        || cap.max_recv_sge != 0
                        || bd.is_valid(attr::CREATE_QP_RECV_CQ_HANDLE)
                        || bd.is_valid(attr::CREATE_QP_SRQ_HANDLE)
                    {
                        return Err(EINVAL);
                    }
                    let scq = if cap.max_send_wr != 0 {
                        idr(attr::CREATE_QP_SEND_CQ_HANDLE)?
                    } else {
                        idr(attr::CREATE_QP_SEND_CQ_HANDLE).unwrap_or(0)
                    };
                    (pd, scq, scq)
                } else {
                    let scq = idr(attr::CREATE_QP_SEND_CQ_HANDLE)?;
                    let rcq = if t == XRC_INI {
                        scq
                    } else {
                        idr(attr::CREATE_QP_RECV_CQ_HANDLE)?
                    };
                    (pd, scq, rcq)
                }
            }
            _ => return Err(EINVAL),
        };
        let mut c = CreateQp {
            user_handle,
            pd_handle,
            send_cq_handle,
            recv_cq_handle,
            srq_handle: idr(attr::CREATE_QP_SRQ_HANDLE).unwrap_or(0),
            cap,
            sq_sig_all: false,
            qp_type: t,
            is_srq: bd.is_valid(attr::CREATE_QP_SRQ_HANDLE),
            comp_mask: if bd.is_valid(attr::CREATE_QP_IND_TABLE_HANDLE) {
                CREATE_QP_SUP_COMP_MASK
            } else {
                0
            },
            create_flags: bd
                .get_flags32(
                    attr::CREATE_QP_FLAGS,
                    u64::from(QP_CREATE_ALLOWED) | 1 << 12,
                )
                .map_err(kerr)?,
        };
        // IB_UVERBS_QP_CREATE_SQ_SIG_ALL is a flag of the ioctl method.
        if c.create_flags & (1 << 12) != 0 {
            c.sq_sig_all = true;
            c.create_flags &= !(1 << 12);
        }
        // upstream: a SOURCE_QPN attribute is read (u32) and adds
        // IB_QP_CREATE_SOURCE_QPN to the flags, which the driver then judges
        // (rxe: any create flag is EOPNOTSUPP; so here).
        if bd.is_valid(attr::CREATE_QP_SOURCE_QPN) {
            ptr_u32(bd, attr::CREATE_QP_SOURCE_QPN)?;
            c.create_flags |= 1 << 10;
        }
        let bufs = ioctl_bufs(bd, uattrs)?;
        let (qp, ev) = self.qp_create_common(inner, &c, &bufs)?;
        let cap = qp.cap();
        let qpn = qp.qp_num();
        let mut o = Out::<20>::new();
        encode_cap(&mut o, 0, &cap);
        Self::commit_and_respond(inner, id, obj::QP, ObjKind::Qp(qp, ev), || {
            out.put(bd, attr::CREATE_QP_RESP_CAP, &o.0)?;
            out.put(bd, attr::CREATE_QP_RESP_QP_NUM, &qpn.to_ne_bytes())
        })
    }
}

impl<D: Driver> UFile<D> {
    /// `UVERBS_METHOD_QUERY_MR` (upstream `UVERBS_HANDLER(UVERBS_METHOD_QUERY_MR)`,
    /// `uverbs_std_types_mr.c`): LKEY, RKEY, LENGTH, then the optional IOVA, in that
    /// order (a copy that faults stops there: `EFAULT`); an absent IOVA is no error
    /// (`IS_UVERBS_COPY_ERR()`).
    pub(super) fn ioctl_query_mr(
        &self,
        inner: &Inner<D>,
        bd: &Bundle<'_>,
        out: &mut Outputs,
    ) -> Result {
        let h = match bd.get(attr::QUERY_MR_HANDLE) {
            Ok(AttrValue::Obj { id, .. }) => id,
            _ => return Err(EINVAL),
        };
        let mr = match Self::obj_at(inner, inner.find(obj::MR, h)?)? {
            ObjKind::Mr(m) => m.clone(),
            _ => return Err(EINVAL),
        };
        out.put(bd, attr::QUERY_MR_RESP_LKEY, &mr.lkey().to_ne_bytes())?;
        out.put(bd, attr::QUERY_MR_RESP_RKEY, &mr.rkey().to_ne_bytes())?;
        out.put(bd, attr::QUERY_MR_RESP_LENGTH, &mr.length().to_ne_bytes())?;
        out.put_opt(bd, attr::QUERY_MR_RESP_IOVA, &mr.iova().to_ne_bytes())
    }

    /// `UVERBS_METHOD_SRQ_CREATE` (upstream `UVERBS_HANDLER(UVERBS_METHOD_SRQ_CREATE)`,
    /// `uverbs_std_types_srq.c`), in its order: MAX_SGE, MAX_WR, LIMIT, USER_HANDLE, TYPE;
    /// an XRC or tag-matching SRQ needs a CQ (absent: ENOENT, `uverbs_attr_get_obj()`),
    /// XRC an XRC domain (none exists here: ENOENT), tag matching MAX_NUM_TAGS (absent:
    /// ENOENT), then the driver refuses it (no driver here has them, rxe neither:
    /// `EOPNOTSUPP`); an unknown type is `EINVAL`. BUF_UMEM is declared but not read
    /// upstream: ignored here too.
    pub(super) fn ioctl_srq_create(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        uattrs: &[u8],
        out: &mut Outputs,
        new: NewObj,
    ) -> Result {
        let NewObj::Idr { id, .. } = new else {
            return Err(EINVAL);
        };
        let pd_handle = match bd.get(attr::CREATE_SRQ_PD_HANDLE) {
            Ok(AttrValue::Obj { id, .. }) => u32::try_from(id).map_err(|_| EINVAL)?,
            _ => return Err(EINVAL),
        };
        let max_sge = ptr_u32(bd, attr::CREATE_SRQ_MAX_SGE)?;
        let max_wr = ptr_u32(bd, attr::CREATE_SRQ_MAX_WR)?;
        let srq_limit = ptr_u32(bd, attr::CREATE_SRQ_LIMIT)?;
        let user_handle = ptr_u64(bd, attr::CREATE_SRQ_USER_HANDLE)?;
        let t = bd
            .get_const_unsigned(attr::CREATE_SRQ_TYPE, u32::MAX.into(), None)
            .map_err(kerr)?;
        // IB_UVERBS_SRQT_BASIC, _XRC, _TM.
        if (t == 1 || t == 2) && !bd.is_valid(attr::CREATE_SRQ_CQ_HANDLE) {
            return Err(ENOENT);
        }
        match t {
            0 => {}
            1 => return Err(ENOENT),
            2 => {
                if !bd.is_valid(attr::CREATE_SRQ_MAX_NUM_TAGS) {
                    return Err(ENOENT);
                }
                return Err(EOPNOTSUPP);
            }
            _ => return Err(EINVAL),
        }
        let c = CreateSrq {
            user_handle,
            pd_handle,
            attr: SrqInitAttr {
                max_wr,
                max_sge,
                srq_limit,
            },
        };
        let bufs = ioctl_bufs(bd, uattrs)?;
        let (srq, ev) = self.srq_create_common(inner, &c, &bufs)?;
        let a = srq.attr();
        Self::commit_and_respond(inner, id, obj::SRQ, ObjKind::Srq(srq, ev), || {
            out.put(bd, attr::CREATE_SRQ_RESP_MAX_WR, &a.max_wr.to_ne_bytes())?;
            out.put(bd, attr::CREATE_SRQ_RESP_MAX_SGE, &a.max_sge.to_ne_bytes())?;
            if bd.is_valid(attr::CREATE_SRQ_RESP_SRQ_NUM) {
                out.put(bd, attr::CREATE_SRQ_RESP_SRQ_NUM, &0u32.to_ne_bytes())?;
            }
            Ok(())
        })
    }
}

/// The value of a small PTR_IN attribute (its first `N` bytes, zero-filled).
fn ptr_bytes<const N: usize>(bd: &Bundle<'_>, id: u16) -> Result<[u8; N]> {
    let b = ptr_in(&bd.ptr(id).map_err(kerr)?)?;
    let mut v = [0u8; N];
    let n = b.len().min(N);
    v[..n].copy_from_slice(&b[..n]);
    Ok(v)
}

fn ptr_u32(bd: &Bundle<'_>, id: u16) -> Result<u32> {
    Ok(u32::from_ne_bytes(ptr_bytes::<4>(bd, id)?))
}

fn ptr_u64(bd: &Bundle<'_>, id: u16) -> Result<u64> {
    Ok(u64::from_ne_bytes(ptr_bytes::<8>(bd, id)?))
}

/// The driver data of an ioctl method as write-command buffers.
fn ioctl_bufs(bd: &Bundle<'_>, uattrs: &[u8]) -> Result<WriteBufs> {
    use crate::uverbs::abi::ids::{UVERBS_ATTR_UHW_IN, UVERBS_ATTR_UHW_OUT};
    let ud = bd.udata(UVERBS_ATTR_UHW_IN, UVERBS_ATTR_UHW_OUT);
    Ok(WriteBufs {
        core_in: KVec::new(),
        core_out: (0, 0),
        udata_in: super::udata_in(&ud, uattrs)?,
        udata_out: (ud.outbuf, ud.outlen),
    })
}

impl<D: Driver> UFile<D> {
    /// `UVERBS_METHOD_REG_MR` (upstream `uverbs_std_types_mr.c`), checks in
    /// upstream's order: IOVA and LENGTH, the optional ADDR, FD_OFFSET and
    /// FD; an FD (a dma-buf) is `EOPNOTSUPP` (no driver of ours has
    /// `reg_user_mr_dmabuf`); without one, ADDR is required and FD_OFFSET
    /// refused (`EINVAL`), ADDR and IOVA must share their page offset
    /// (`EINVAL`); a DMA handle is `EOPNOTSUPP` (no DMAH objects); the
    /// access flags (`EINVAL` past `IB_ACCESS_SUPPORTED`, then
    /// `ib_check_mr_access()`); then the driver's `reg_user_mr` with the
    /// UHW driver data; the LKEY and RKEY out.
    pub(super) fn ioctl_reg_mr(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        uattrs: &[u8],
        out: &mut Outputs,
        new: NewObj,
    ) -> Result {
        let NewObj::Idr { id, .. } = new else {
            return Err(EINVAL);
        };
        let iova = ptr_u64(bd, attr::REG_MR_IOVA)?;
        let length = ptr_u64(bd, attr::REG_MR_LENGTH)?;
        let addr = if bd.is_valid(attr::REG_MR_ADDR) {
            Some(ptr_u64(bd, attr::REG_MR_ADDR)?)
        } else {
            None
        };
        let has_fd_offset = bd.is_valid(attr::REG_MR_FD_OFFSET);
        if has_fd_offset {
            ptr_u64(bd, attr::REG_MR_FD_OFFSET)?;
        }
        if bd.is_valid(attr::REG_MR_FD) {
            return Err(EOPNOTSUPP);
        }
        let Some(start) = addr.filter(|_| !has_fd_offset) else {
            return Err(EINVAL);
        };
        let page_mask = (kernel::page::PAGE_SIZE as u64) - 1;
        if start & page_mask != iova & page_mask {
            return Err(EINVAL);
        }
        if bd.is_valid(attr::REG_MR_DMA_HANDLE) {
            return Err(EOPNOTSUPP);
        }
        let access = AccessFlags(
            bd.get_flags32(
                attr::REG_MR_ACCESS_FLAGS,
                u64::from(AccessFlags::SUPPORTED.0),
            )
            .map_err(kerr)?,
        );
        access.check()?;
        let pd_handle = match bd.get(attr::REG_MR_PD_HANDLE) {
            Ok(AttrValue::Obj { id, .. }) => u32::try_from(id).map_err(|_| EINVAL)?,
            _ => return Err(EINVAL),
        };
        let pd = Self::pd_by_handle(inner, pd_handle)?;
        let ctx = inner.ctx()?.clone();
        let req = UserMrReq {
            start,
            length,
            iova,
            access,
        };
        let bufs = ioctl_bufs(bd, uattrs)?;
        let mr = with_udata(&bufs, |ud| {
            Mr::reg_user(
                &pd,
                &req,
                Owner::current_task(),
                &mut UserCtx::new(&ctx, ud),
            )
        })?;
        let (lkey, rkey) = (mr.lkey(), mr.rkey());
        Self::commit_and_respond(inner, id, obj::MR, ObjKind::Mr(mr), || {
            out.put(bd, attr::REG_MR_RESP_LKEY, &lkey.to_ne_bytes())?;
            out.put(bd, attr::REG_MR_RESP_RKEY, &rkey.to_ne_bytes())
        })
    }
}
