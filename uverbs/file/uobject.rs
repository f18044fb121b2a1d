// SPDX-License-Identifier: GPL-2.0

//! The file's user objects (upstream `rdma_core.c`): the handle table, lookup by
//! handle and type (`rdma_lookup_get_uobject()`), commit (`rdma_alloc_commit_uobject()`)
//! and destroy (`uverbs_destroy_uobject()`).

use crate::attr::Gid;
use crate::driver::Driver;
use crate::uverbs::abi::ids::obj;
use crate::uverbs::async_event::AsyncEventFile;
use crate::uverbs::driver_fd::DriverFd;
use crate::uverbs::driver_object::{AnyObject, DriverObject, DriverUobject};
use crate::uverbs::file::events::{Reported, UEvents};
use crate::uverbs::file::xrcd_tree::UXrcd;
use crate::uverbs::file::UFile;
use crate::uverbs::uobject_table::HandleTable;
use crate::verbs::{Ah, Cq, DestroyError, Dm, Mr, Mw, Pd, Qp, QpHandler, Srq, Ucontext};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A committed user object (upstream `struct ib_uobject` of an IDR type).
pub(super) enum ObjKind<D: Driver> {
    Pd(Arc<Pd<D>>),
    Cq(Arc<Cq<D>>, Arc<UEvents>),
    Qp(Arc<Qp<D>>, Arc<UEvents>),
    Srq(Arc<Srq<D>>, Arc<UEvents>),
    /// An XRC SRQ and the XRCD handle it counts in (upstream `us->uxrcd`).
    XSrq(Arc<Srq<D>>, Arc<UEvents>, Arc<UXrcd<D>>),
    /// An XRCD handle (upstream `struct ib_uxrcd_object`).
    Xrcd(Arc<UXrcd<D>>),
    /// An opened handle of an XRC target QP (the QP belongs to its domain): the XRCD handle
    /// it was created or opened through, and this handle's event handler.
    TgtQp(Arc<Qp<D>>, KBox<TgtQpRefs<D>>),
    Mr(Arc<Mr<D>>),
    Ah(Arc<Ah<D>>),
    Mw(Arc<Mw<D>>),
    /// Device memory (upstream `UVERBS_OBJECT_DM`).
    Dm(Arc<Dm<D>>),
    /// An object of a driver's object type (destroyed by dropping it).
    Driver(DriverObject),
}

/// What an opened handle of an XRC target QP holds besides the QP: the XRCD handle it was
/// created or opened through and this handle's events and event handler. Boxed, so that this
/// rare handle does not make every object's node in the handle table larger: with the four
/// references inline the enum took 48 bytes and a PD's node `kmalloc-128`; boxed it takes 32
/// and the node fits `kmalloc-96` (`slab_bytes_pd`, `Documentation/performance.md`).
pub(super) struct TgtQpRefs<D: Driver> {
    pub(super) ev: Arc<UEvents>,
    pub(super) ux: Arc<UXrcd<D>>,
    pub(super) handler: Arc<dyn QpHandler>,
}

pub(crate) struct Inner<D: Driver> {
    /// Disassociated or closed: every call is `EIO`.
    pub(super) dead: bool,
    pub(super) ucontext: Option<Arc<Ucontext<D>>>,
    /// Committed objects by handle and in commit order (upstream `ufile->idr` and the
    /// `uobjects` list, where commit adds at the head: cleanup walks it newest first).
    pub(super) objs: HandleTable<ObjKind<D>>,
    pub(super) async_file: Option<Arc<AsyncEventFile>>,
    /// The completion channels created on this file (upstream: FD uobjects
    /// of `UVERBS_OBJECT_COMP_CHANNEL`); a channel's queue lives while its
    /// fd or a CQ using it does.
    pub(super) comp_channels: KVec<Arc<AsyncEventFile>>,
    /// The fd objects of driver types, oldest first (upstream: FD uobjects on the
    /// `uobjects` list; `seq` places them in the commit order of `objs`). An entry whose
    /// fd was closed (destroyed then) is dropped at the next fd commit or the cleanup.
    pub(crate) fds: KVec<FdEntry>,
    /// The multicast attachments of the file's QPs (upstream `uqp->mcast_list`): the QP's
    /// handle, the QP, the group and its LID.
    pub(super) mcast: KVec<(u32, Arc<Qp<D>>, Gid, u16)>,
}

/// A driver fd object in the file's commit order.
pub(crate) struct FdEntry {
    pub(crate) seq: u64,
    pub(crate) fd: Arc<DriverFd>,
}

impl<D: Driver> Inner<D> {
    /// The object under handle `h`, whatever its type (a driver method's READ/WRITE
    /// attribute, already looked up by the parser).
    pub(crate) fn any_object(&self, h: u32) -> Option<AnyObject<'_, D>> {
        Some(match self.objs.get(h)? {
            ObjKind::Cq(c, _) => AnyObject::Cq(c),
            ObjKind::Qp(q, _) => AnyObject::Qp(q),
            ObjKind::Srq(s, _) => AnyObject::Srq(s),
            ObjKind::Driver(o) => {
                let o: &dyn DriverUobject = &**o;
                AnyObject::Driver(o as &dyn core::any::Any)
            }
            _ => AnyObject::Other,
        })
    }

    /// The lowest free handle (upstream `xa_alloc()` with `xa_limit_32b`), other than
    /// `also_taken` (a NEW handle of the method in progress).
    pub(super) fn free_id(&self, also_taken: Option<u32>) -> u32 {
        self.objs.free_id(also_taken)
    }

    pub(super) fn ctx(&self) -> Result<&Arc<Ucontext<D>>> {
        // upstream: ib_uverbs_get_ucontext_file(): EINVAL before GET_CONTEXT.
        self.ucontext.as_ref().ok_or(EINVAL)
    }

    /// The handle `id` of an object of type `obj_type` (upstream `lookup_get_idr_uobject()`:
    /// a negative id is `EINVAL`, an unknown one `ENOENT`; `rdma_lookup_get_uobject()`:
    /// another type is `EINVAL`).
    pub(super) fn find(&self, obj_type: u16, id: i64) -> Result<u32> {
        self.objs.lookup(obj_type, id)
    }
}

/// What [`UFile::destroy_at`] makes of one destroy: the events to report, or the error and the
/// object to put back under its handle.
type DestroyOutcome<D> = core::result::Result<Reported, (Error, ObjKind<D>)>;

/// The outcome of destroying an object whose response counts no events (PD, MR, AH, MW, DM):
/// a refusal hands the object back as `kind` wraps it.
fn unreported<D: Driver, T>(
    r: core::result::Result<(), DestroyError<T>>,
    kind: fn(T) -> ObjKind<D>,
) -> DestroyOutcome<D> {
    r.map(|()| Reported::default())
        .map_err(|e| (e.err, kind(e.obj)))
}

/// The outcome of destroying an object with an event queue (CQ, QP, SRQ): the events the
/// process read ([`UEvents::release`]), or the object and its queue handed back as `kind`
/// wraps them.
fn with_events<D: Driver, T>(
    r: core::result::Result<(), DestroyError<T>>,
    ev: Arc<UEvents>,
    kind: fn(T, Arc<UEvents>) -> ObjKind<D>,
) -> DestroyOutcome<D> {
    match r {
        Ok(()) => Ok(ev.release()),
        Err(e) => Err((e.err, kind(e.obj, ev))),
    }
}

impl<D: Driver> UFile<D> {
    /// Destroys the object under the handle `id` (upstream `uverbs_destroy_uobject()`
    /// with `RDMA_REMOVE_DESTROY`): `EBUSY` leaves it in place. Allocates nothing.
    pub(super) fn destroy_at(inner: &mut Inner<D>, id: u32) -> Result<Reported> {
        // upstream uverbs_free_qp(): a user's destroy of a QP still attached to a group is
        // EBUSY; the file's cleanup detaches it first.
        if inner.mcast.iter().any(|(h, ..)| *h == id) {
            if !inner.dead {
                return Err(EBUSY);
            }
            inner.mcast.retain(|(h, qp, gid, lid)| {
                if *h == id {
                    let _ = qp.detach_mcast(gid, *lid);
                }
                *h != id
            });
        }
        let kind = inner.objs.take(id).ok_or(EINVAL)?;
        let none = Reported::default();
        let r = match kind {
            ObjKind::Pd(pd) => unreported(Pd::dealloc(pd), ObjKind::Pd),
            ObjKind::Cq(cq, ev) => with_events(Cq::destroy(cq), ev, ObjKind::Cq),
            ObjKind::Qp(qp, ev) => with_events(Qp::destroy(qp), ev, ObjKind::Qp),
            ObjKind::Srq(srq, ev) => with_events(Srq::destroy(srq), ev, ObjKind::Srq),
            ObjKind::XSrq(srq, ev, ux) => match Srq::destroy(srq) {
                Ok(()) => {
                    ux.put();
                    Ok(ev.release())
                }
                Err(e) => Err((e.err, ObjKind::XSrq(e.obj, ev, ux))),
            },
            // upstream uverbs_free_xrcd(): ib_destroy_usecnt() on the handle's refcnt,
            // then ib_uverbs_dealloc_xrcd().
            ObjKind::Xrcd(ux) => {
                if ux.users() != 0 {
                    Err((EBUSY, ObjKind::Xrcd(ux)))
                } else {
                    match ux.close() {
                        Ok(()) => Ok(none),
                        Err(e) => Err((e, ObjKind::Xrcd(ux))),
                    }
                }
            }
            ObjKind::TgtQp(qp, r) => match Self::tgt_qp_close(&qp, &r.ux, &r.handler) {
                Ok(()) => Ok(r.ev.release()),
                Err(e) => Err((e, ObjKind::TgtQp(qp, r))),
            },
            ObjKind::Mr(mr) => unreported(Mr::dereg(mr), ObjKind::Mr),
            ObjKind::Ah(ah) => unreported(Ah::destroy(ah), ObjKind::Ah),
            ObjKind::Mw(mw) => unreported(Mw::dealloc(mw), ObjKind::Mw),
            // upstream uverbs_free_dm(): EBUSY while MRs use it.
            ObjKind::Dm(dm) => unreported(Dm::dealloc(dm), ObjKind::Dm),
            // upstream: the type's destroy_object; a refusal keeps the object.
            ObjKind::Driver(o) => match o.destroy_hw() {
                Ok(()) => {
                    drop(o);
                    Ok(none)
                }
                Err(e) => Err((e, ObjKind::Driver(o))),
            },
        };
        match r {
            Ok(rep) => {
                inner.objs.remove(id);
                Ok(rep)
            }
            Err((err, kind)) => {
                inner.objs.put_back(id, kind);
                Err(err)
            }
        }
    }

    pub(super) fn obj_at(inner: &Inner<D>, id: u32) -> Result<&ObjKind<D>> {
        inner.objs.get(id).ok_or(EINVAL)
    }

    pub(super) fn cq_by_handle(inner: &Inner<D>, h: u32) -> Result<Arc<Cq<D>>> {
        match Self::obj_at(inner, inner.find(obj::CQ, i64::from(h))?)? {
            ObjKind::Cq(c, _) => Ok(c.clone()),
            _ => Err(EINVAL),
        }
    }

    pub(super) fn pd_by_handle(inner: &Inner<D>, h: u32) -> Result<Arc<crate::verbs::Pd<D>>> {
        match Self::obj_at(inner, inner.find(obj::PD, i64::from(h))?)? {
            ObjKind::Pd(p) => Ok(p.clone()),
            _ => Err(EINVAL),
        }
    }

    pub(super) fn dm_by_handle(inner: &Inner<D>, h: u32) -> Result<Arc<Dm<D>>> {
        match Self::obj_at(inner, inner.find(obj::DM, i64::from(h))?)? {
            ObjKind::Dm(d) => Ok(d.clone()),
            _ => Err(EINVAL),
        }
    }

    pub(super) fn srq_by_handle(inner: &Inner<D>, h: u32) -> Result<Arc<Srq<D>>> {
        match Self::obj_at(inner, inner.find(obj::SRQ, i64::from(h))?)? {
            ObjKind::Srq(s, _) | ObjKind::XSrq(s, _, _) => Ok(s.clone()),
            _ => Err(EINVAL),
        }
    }

    pub(super) fn qp_by_handle(inner: &Inner<D>, h: u32) -> Result<Arc<Qp<D>>> {
        match Self::obj_at(inner, inner.find(obj::QP, i64::from(h))?)? {
            ObjKind::Qp(q, _) | ObjKind::TgtQp(q, _) => Ok(q.clone()),
            _ => Err(EINVAL),
        }
    }

    /// Commits a new object under `id` (upstream `rdma_alloc_commit_uobject()`).
    pub(super) fn commit(inner: &mut Inner<D>, id: u32, obj_type: u16, kind: ObjKind<D>) -> Result {
        inner.objs.insert(id, obj_type, kind)
    }

    /// Commits, then writes the response; a failed write destroys the
    /// object again (upstream: the method fails, its NEW object is aborted).
    pub(super) fn commit_and_respond(
        inner: &mut Inner<D>,
        id: u32,
        obj_type: u16,
        kind: ObjKind<D>,
        respond: impl FnOnce() -> Result,
    ) -> Result {
        Self::commit(inner, id, obj_type, kind)?;
        if let Err(e) = respond() {
            if inner.find(obj_type, i64::from(id)).is_ok() {
                let _ = Self::destroy_at(inner, id);
            }
            return Err(e);
        }
        Ok(())
    }
}
