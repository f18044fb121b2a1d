// SPDX-License-Identifier: GPL-2.0

//! The file's user objects (upstream `rdma_core.c`): the handle table, lookup by
//! handle and type (`rdma_lookup_get_uobject()`), commit (`rdma_alloc_commit_uobject()`)
//! and destroy (`uverbs_destroy_uobject()`).

use crate::driver::Driver;
use crate::uverbs::abi::ids::obj;
use crate::uverbs::async_event::AsyncEventFile;
use crate::uverbs::driver_api::DriverObject;
use crate::uverbs::file::events::{Reported, UEvents};
use crate::uverbs::file::UFile;
use crate::verbs::{Ah, Cq, Mr, Pd, Qp, Srq, Ucontext};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A committed user object (upstream `struct ib_uobject` of an IDR type).
pub(super) enum ObjKind<D: Driver> {
    Pd(Arc<Pd<D>>),
    Cq(Arc<Cq<D>>, Arc<UEvents>),
    Qp(Arc<Qp<D>>, Arc<UEvents>),
    Srq(Arc<Srq<D>>, Arc<UEvents>),
    Mr(Arc<Mr<D>>),
    Ah(Arc<Ah<D>>),
    /// An object of a driver's object type (destroyed by dropping it).
    Driver(DriverObject),
}

pub(super) struct UObject<D: Driver> {
    pub(super) id: u32,
    pub(super) obj_type: u16,
    pub(super) kind: ObjKind<D>,
}

pub(super) struct Inner<D: Driver> {
    /// Disassociated or closed: every call is `EIO`.
    pub(super) dead: bool,
    pub(super) ucontext: Option<Arc<Ucontext<D>>>,
    /// Committed objects, oldest first (upstream `uobjects` list, where
    /// commit adds at the head: cleanup walks this from the end).
    pub(super) objs: KVec<UObject<D>>,
    pub(super) async_file: Option<Arc<AsyncEventFile>>,
    /// The completion channels created on this file (upstream: FD uobjects
    /// of `UVERBS_OBJECT_COMP_CHANNEL`); a channel's queue lives while its
    /// fd or a CQ using it does.
    pub(super) comp_channels: KVec<Arc<AsyncEventFile>>,
}

impl<D: Driver> Inner<D> {
    /// The lowest free handle (upstream `xa_alloc()` with `xa_limit_32b`).
    pub(super) fn free_id(&self, also_taken: Option<u32>) -> u32 {
        let mut id = 0u32;
        while self.objs.iter().any(|o| o.id == id) || also_taken == Some(id) {
            id += 1;
        }
        id
    }

    pub(super) fn ctx(&self) -> Result<&Arc<Ucontext<D>>> {
        // upstream: ib_uverbs_get_ucontext_file(): EINVAL before GET_CONTEXT.
        self.ucontext.as_ref().ok_or(EINVAL)
    }

    pub(super) fn find(&self, obj_type: u16, id: i64) -> Result<usize> {
        // upstream lookup_get_idr_uobject(): a negative id is EINVAL; ids
        // are allocated below 2^32 (xa_limit_32b), so a larger one finds
        // nothing (xa_load(): ENOENT).
        if id < 0 {
            return Err(EINVAL);
        }
        let id = u32::try_from(id).map_err(|_| ENOENT)?;
        let pos = self.objs.iter().position(|o| o.id == id).ok_or(ENOENT)?;
        // upstream rdma_lookup_get_uobject(): another type is EINVAL.
        match self.objs.get(pos) {
            Some(o) if o.obj_type == obj_type => Ok(pos),
            _ => Err(EINVAL),
        }
    }
}
impl<D: Driver> UFile<D> {
    /// Destroys the object at `pos` (upstream `uverbs_destroy_uobject()`
    /// with `RDMA_REMOVE_DESTROY`): `EBUSY` leaves it in place.
    pub(super) fn destroy_at(inner: &mut Inner<D>, pos: usize) -> Result<Reported> {
        let o = inner.objs.remove(pos).map_err(|_| EINVAL)?;
        let none = Reported::default();
        let r = match o.kind {
            ObjKind::Pd(pd) => Pd::dealloc(pd)
                .map(|()| none)
                .map_err(|e| (e.err, ObjKind::Pd(e.obj))),
            ObjKind::Cq(cq, ev) => match Cq::destroy(cq) {
                Ok(()) => Ok(ev.release()),
                Err(e) => Err((e.err, ObjKind::Cq(e.obj, ev))),
            },
            ObjKind::Qp(qp, ev) => match Qp::destroy(qp) {
                Ok(()) => Ok(ev.release()),
                Err(e) => Err((e.err, ObjKind::Qp(e.obj, ev))),
            },
            ObjKind::Srq(srq, ev) => match Srq::destroy(srq) {
                Ok(()) => Ok(ev.release()),
                Err(e) => Err((e.err, ObjKind::Srq(e.obj, ev))),
            },
            ObjKind::Mr(mr) => Mr::dereg(mr)
                .map(|()| none)
                .map_err(|e| (e.err, ObjKind::Mr(e.obj))),
            ObjKind::Ah(ah) => Ah::destroy(ah)
                .map(|()| none)
                .map_err(|e| (e.err, ObjKind::Ah(e.obj))),
            ObjKind::Driver(o) => {
                drop(o);
                Ok(none)
            }
        };
        match r {
            Ok(rep) => Ok(rep),
            Err((err, kind)) => {
                inner
                    .objs
                    .insert_within_capacity(pos, UObject { kind, ..o })
                    .ok();
                Err(err)
            }
        }
    }

    pub(super) fn obj_at(inner: &Inner<D>, pos: usize) -> Result<&ObjKind<D>> {
        inner.objs.get(pos).map(|o| &o.kind).ok_or(EINVAL)
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

    pub(super) fn srq_by_handle(inner: &Inner<D>, h: u32) -> Result<Arc<Srq<D>>> {
        match Self::obj_at(inner, inner.find(obj::SRQ, i64::from(h))?)? {
            ObjKind::Srq(s, _) => Ok(s.clone()),
            _ => Err(EINVAL),
        }
    }

    pub(super) fn qp_by_handle(inner: &Inner<D>, h: u32) -> Result<Arc<Qp<D>>> {
        match Self::obj_at(inner, inner.find(obj::QP, i64::from(h))?)? {
            ObjKind::Qp(q, _) => Ok(q.clone()),
            _ => Err(EINVAL),
        }
    }

    /// Commits a new object under `id` (upstream `rdma_alloc_commit_uobject()`).
    pub(super) fn commit(inner: &mut Inner<D>, id: u32, obj_type: u16, kind: ObjKind<D>) -> Result {
        inner
            .objs
            .push(UObject { id, obj_type, kind }, GFP_KERNEL)?;
        Ok(())
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
            if let Ok(pos) = inner.find(obj_type, i64::from(id)) {
                let _ = Self::destroy_at(inner, pos);
            }
            return Err(e);
        }
        Ok(())
    }
}
