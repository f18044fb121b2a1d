// SPDX-License-Identifier: GPL-2.0

//! Completion queues (upstream `__ib_create_cq()`, `ib_destroy_cq_user()`,
//! and the inline `ib_poll_cq()`, `ib_req_notify_cq()`).

use super::{
    destroy, destroy_op, verbs_object, DestroyError, Destroyable, ObjCore, Ucontext, UserCtx, Wc,
};
use crate::device::Device;
use crate::driver::Driver;
use crate::restrack::{Owner, ResDetails, ResEntry, ResLinks, ResType};
use kernel::prelude::*;
use kernel::sync::atomic::Relaxed;
use kernel::sync::{Arc, UniqueArc};

/// The driver's `poll_cq` op.
type PollFn<D> = fn(&Cq<D>, &mut [Wc]) -> Result<usize>;

/// CQ creation attributes (upstream `struct ib_cq_init_attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CqInitAttr {
    /// Minimum number of entries.
    pub cqe: u32,
    /// Completion vector.
    pub comp_vector: u32,
    /// `IB_UVERBS_CQ_FLAGS_*` ([`CqInitAttr::TIMESTAMP_COMPLETION`],
    /// [`CqInitAttr::IGNORE_OVERRUN`]); the driver refuses what it does not support
    /// (`EOPNOTSUPP`), as upstream drivers do.
    pub flags: u32,
}

impl CqInitAttr {
    /// `IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION`.
    pub const TIMESTAMP_COMPLETION: u32 = 1 << 0;
    /// `IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN`: the device may overwrite unread CQEs instead of
    /// failing the CQ.
    pub const IGNORE_OVERRUN: u32 = 1 << 1;
}

/// Which completions arm the notification (upstream `enum ib_cq_notify_flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqNotify {
    /// `IB_CQ_SOLICITED`.
    Solicited,
    /// `IB_CQ_NEXT_COMP`.
    NextComp,
}

/// The consumer's handlers of a CQ (upstream `comp_handler` and
/// `event_handler` with `cq_context`).
pub trait CqHandler: Send + Sync + 'static {
    /// A completion arrived after the CQ was armed.
    fn completion(&self);

    /// An asynchronous CQ error (upstream `IB_EVENT_CQ_ERR`).
    fn event(&self) {}
}

/// A completion queue (upstream `struct ib_cq` with the driver's
/// `D::CqData` in the same allocation).
pub struct Cq<D: Driver> {
    dev: Arc<Device<D>>,
    core: ObjCore<Arc<ResEntry>>,
    handler: Option<Arc<dyn CqHandler>>,
    /// The user context of a user CQ (upstream `cq->uobject->context`).
    uctx: Option<Arc<Ucontext<D>>>,
    /// The data-path ops, copied from the device's table at create (see
    /// `Qp`): a poll is one load and an indirect call.
    poll_op: Option<PollFn<D>>,
    notify_op: Option<fn(&Cq<D>, CqNotify) -> Result>,
    drv: D::CqData,
}

verbs_object!(Cq, count = Arc<ResEntry>, data = CqData);

impl<D: Driver> Cq<D> {
    /// Creates a CQ (upstream `__ib_create_cq()`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `create_cq`, `EINVAL` for `cqe == 0`,
    /// `ENOMEM`, the driver's error.
    pub fn create(
        dev: &Arc<Device<D>>,
        attr: &CqInitAttr,
        handler: Option<Arc<dyn CqHandler>>,
        owner: Owner,
    ) -> Result<Arc<Self>> {
        Self::create_with(dev, attr, handler, owner, None)
    }

    /// Creates a CQ of a user context (upstream `create_cq()` of
    /// `uverbs_cmd.c`): its buffers are described by `user`'s udata.
    ///
    /// # Errors
    ///
    /// As [`Cq::create`].
    pub fn create_user(
        dev: &Arc<Device<D>>,
        attr: &CqInitAttr,
        handler: Option<Arc<dyn CqHandler>>,
        owner: Owner,
        user: &mut UserCtx<'_, '_, D>,
    ) -> Result<Arc<Self>> {
        Self::create_with(dev, attr, handler, owner, Some(user))
    }

    fn create_with(
        dev: &Arc<Device<D>>,
        attr: &CqInitAttr,
        handler: Option<Arc<dyn CqHandler>>,
        owner: Owner,
        user: Option<&mut UserCtx<'_, '_, D>>,
    ) -> Result<Arc<Self>> {
        let op = dev.ops().create_cq.ok_or(EOPNOTSUPP)?;
        let uctx = user.as_ref().map(|u| u.ctx().clone());
        if attr.cqe == 0 {
            return Err(EINVAL);
        }
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        // A user CQ names its context in `rdma res` (upstream `fill_res_cq_entry()`).
        let links = ResLinks {
            ctxn: uctx.as_ref().map(|c| c.res_id()),
            pdn: None,
        };
        let res = dev.restrack().add_linked(
            ResType::Cq,
            owner,
            ResDetails::Cq { cqe: attr.cqe },
            links,
        )?;
        let res_id = res.id;
        // The current number of entries lives in the restrack entry (a resize changes it and
        // nldev reports it).
        res.num.store(attr.cqe, Relaxed);
        let drv = op(dev, attr, handler.as_ref(), user)
            .inspect_err(|_| dev.restrack().del(ResType::Cq, res_id))?;
        Ok(slot
            .write(Cq {
                dev: dev.clone(),
                core: ObjCore::new(res),
                handler,
                uctx,
                poll_op: dev.ops().poll_cq,
                notify_op: dev.ops().req_notify_cq,
                drv,
            })
            .into())
    }

    /// Destroys the CQ (upstream `ib_destroy_cq_user()`).
    ///
    /// # Errors
    ///
    /// `EBUSY` while QPs use it, `EINVAL` if already destroyed, the
    /// driver's error; the CQ is handed back.
    pub fn destroy(this: Arc<Self>) -> core::result::Result<(), DestroyError<Arc<Self>>> {
        destroy(this)
    }

    /// Polls completions into `wc`; returns how many (upstream
    /// `ib_poll_cq()`: straight to the driver's op).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `poll_cq`; the driver's error.
    #[inline]
    pub fn poll(&self, wc: &mut [Wc]) -> Result<usize> {
        match self.poll_op {
            Some(f) => f(self, wc),
            None => Err(EOPNOTSUPP),
        }
    }

    /// Arms the completion notification (upstream `ib_req_notify_cq()`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `req_notify_cq`; the driver's error.
    #[inline]
    pub fn req_notify(&self, flags: CqNotify) -> Result {
        match self.notify_op {
            Some(f) => f(self, flags),
            None => Err(EOPNOTSUPP),
        }
    }

    /// Called by the driver when a completion arrives on an armed CQ
    /// (upstream `cq->comp_handler(cq, cq->cq_context)`).
    pub fn completion_event(&self) {
        if let Some(h) = &self.handler {
            h.completion();
        }
    }

    /// Called by the driver on a CQ error (upstream `cq->event_handler`).
    pub fn async_event(&self) {
        if let Some(h) = &self.handler {
            h.event();
        }
    }

    /// The user context of a user CQ (`None` for a kernel CQ).
    pub fn ucontext(&self) -> Option<&Arc<Ucontext<D>>> {
        self.uctx.as_ref()
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device<D>> {
        &self.dev
    }

    /// The number of entries: the requested one, or what the last resize set
    /// (upstream `cq->cqe`).
    pub fn cqe(&self) -> u32 {
        self.core.res().num.load(Relaxed)
    }

    /// Records the number of entries after a resize; for the driver's
    /// `resize_user_cq`, under its resize lock.
    pub fn set_cqe(&self, cqe: u32) {
        self.core.res().num.store(cqe, Relaxed);
    }

    /// Resizes a user CQ to at least `cqe` entries (upstream
    /// `ib_uverbs_resize_cq()`: `cqe == 0` is `EINVAL`, then
    /// `ops.resize_user_cq`); the new buffer is described by `user`'s udata.
    ///
    /// # Errors
    ///
    /// `EINVAL` for `cqe == 0` or a kernel CQ, `EOPNOTSUPP` without
    /// `resize_user_cq`, the driver's error.
    pub fn resize_user(&self, cqe: u32, user: &mut UserCtx<'_, '_, D>) -> Result {
        if cqe == 0 || self.uctx.is_none() {
            return Err(EINVAL);
        }
        let op = self.dev.ops().resize_user_cq.ok_or(EOPNOTSUPP)?;
        op(self, cqe, user)
    }

    /// Sets the event moderation: an event after `count` completions or
    /// `period` microseconds (upstream `rdma_set_cq_moderation()`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `modify_cq`; the driver's error.
    pub fn set_moderation(&self, count: u16, period: u16) -> Result {
        let op = self.dev.ops().modify_cq.ok_or(EOPNOTSUPP)?;
        op(self, count, period)
    }

    /// The restrack ID.
    pub fn res_id(&self) -> u32 {
        self.core.res_id()
    }
}

impl<D: Driver> Destroyable for Cq<D> {
    destroy_op!(destroy_cq, dev);

    fn release(&self) {
        self.dev.restrack().del(ResType::Cq, self.res_id());
    }
}
