// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (upstream `ib_create_srq_user()`, `ib_modify_srq()`,
//! `ib_query_srq()`, `ib_destroy_srq_user()`, and the SRQ's `event_handler`).

use super::{
    destroy, destroy_op, verbs_object, Cq, DestroyError, Destroyable, ObjCore, Object, Pd,
    Ucontext, Udata, UserCtx, Uses, Xrcd,
};
use crate::driver::Driver;
use crate::restrack::{Owner, ResDetails, ResEntry, ResType};
use kernel::prelude::*;
use kernel::sync::{Arc, UniqueArc};

/// SRQ attributes (upstream `struct ib_srq_attr`): at create the request, which the driver
/// updates to what it created (upstream `init_attr->attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqInitAttr {
    /// Maximum outstanding work requests.
    pub max_wr: u32,
    /// Maximum scatter entries per work request.
    pub max_sge: u32,
    /// The limit (`srq_limit`; upstream ignores it at create for basic SRQs).
    pub srq_limit: u32,
}

/// What [`Srq::modify`] changes (upstream `enum ib_srq_attr_mask`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttrMask(pub u32);

impl SrqAttrMask {
    /// `IB_SRQ_MAX_WR`: resize.
    pub const MAX_WR: u32 = 1 << 0;
    /// `IB_SRQ_LIMIT`: arm the limit event.
    pub const LIMIT: u32 = 1 << 1;

    /// Whether `bit` is set.
    pub fn has(self, bit: u32) -> bool {
        self.0 & bit != 0
    }
}

/// An asynchronous SRQ event (upstream `enum ib_event_type`, the SRQ kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrqEvent {
    /// `IB_EVENT_SRQ_ERR`.
    Err,
    /// `IB_EVENT_SRQ_LIMIT_REACHED`: fewer WQEs than the armed limit (the SRQ is disarmed).
    LimitReached,
}

impl SrqEvent {
    /// The `enum ib_event_type` value (what the async event file reports).
    pub fn ib_event_type(self) -> u32 {
        match self {
            SrqEvent::Err => 14,
            SrqEvent::LimitReached => 15,
        }
    }
}

/// The consumer's handler of an SRQ's asynchronous events (upstream `srq->event_handler`
/// with `srq_context`); called from any context.
pub trait SrqHandler: Send + Sync {
    /// One event.
    fn event(&self, event: SrqEvent);
}

/// What the driver's `create_xrc_srq` returns: its data and the SRQ number (upstream
/// `srq->ext.xrc.srq_num`, what XRC senders name).
pub struct XrcSrqCreated<T> {
    /// The driver's private data.
    pub data: T,
    /// The XRC SRQ number.
    pub srq_num: u32,
}

/// An XRC SRQ's uses of its domain and its CQ.
type XrcUses<D> = (Uses<Xrcd<D>>, Uses<Cq<D>>);

/// An XRC SRQ's domain and CQ, at create.
type XrcParents<'a, D> = (&'a Arc<Xrcd<D>>, &'a Arc<Cq<D>>);

/// A shared receive queue (upstream `struct ib_srq`); it uses its PD, and an XRC SRQ its
/// XRC domain and its CQ (upstream `srq->ext.xrc.xrcd`, `srq->ext.cq`).
pub struct Srq<D: Driver> {
    pd: Uses<Pd<D>>,
    xrc: Option<XrcUses<D>>,
    srq_num: u32,
    core: ObjCore<Arc<ResEntry>>,
    /// What the driver created (upstream `init_attr->attr` after `ops.create_srq`).
    attr: SrqInitAttr,
    /// The user context of a user SRQ.
    uctx: Option<Arc<Ucontext<D>>>,
    handler: Option<Arc<dyn SrqHandler>>,
    drv: D::SrqData,
}

verbs_object!(Srq, count = Arc<ResEntry>, data = SrqData);

impl<D: Driver> Srq<D> {
    /// Creates an SRQ on `pd` (upstream `ib_create_srq_user()` without udata); the PD's
    /// usecnt goes up.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `create_srq`, `EINVAL` for a dead PD,
    /// `ENOMEM`, the driver's error.
    pub fn create(
        pd: &Arc<Pd<D>>,
        attr: &SrqInitAttr,
        handler: Option<Arc<dyn SrqHandler>>,
        owner: Owner,
    ) -> Result<Arc<Self>> {
        Self::create_with(pd, attr, handler, owner, None)
    }

    /// Creates an SRQ of a user context (upstream `ib_create_srq_user()` from
    /// `ib_uverbs_create_srq()`/`UVERBS_METHOD_SRQ_CREATE`).
    ///
    /// # Errors
    ///
    /// As [`Srq::create`].
    pub fn create_user(
        pd: &Arc<Pd<D>>,
        attr: &SrqInitAttr,
        handler: Option<Arc<dyn SrqHandler>>,
        owner: Owner,
        user: &mut UserCtx<'_, '_, D>,
    ) -> Result<Arc<Self>> {
        Self::create_with(pd, attr, handler, owner, Some(user))
    }

    fn create_with(
        pd: &Arc<Pd<D>>,
        attr: &SrqInitAttr,
        handler: Option<Arc<dyn SrqHandler>>,
        owner: Owner,
        user: Option<&mut UserCtx<'_, '_, D>>,
    ) -> Result<Arc<Self>> {
        let op = pd.device().ops().create_srq.ok_or(EOPNOTSUPP)?;
        pd.check_alive()?;
        let uctx = user.as_ref().map(|u| u.ctx().clone());
        Self::create_on(pd, None, attr, handler, owner, uctx, |attr, h| {
            let data = op(pd, attr, h, user)?;
            Ok(XrcSrqCreated { data, srq_num: 0 })
        })
    }

    /// Creates an XRC SRQ of a user context in `xrcd`, completing on `cq` (upstream
    /// `ib_create_srq_user()` with `IB_SRQT_XRC`): the PD, the domain and the CQ each gain a
    /// use.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `create_xrc_srq`, `EINVAL` for a dead PD or domain or objects
    /// of another device, `ENOMEM`, the driver's error.
    pub fn create_xrc_user(
        pd: &Arc<Pd<D>>,
        xrcd: &Arc<Xrcd<D>>,
        cq: &Arc<Cq<D>>,
        attr: &SrqInitAttr,
        handler: Option<Arc<dyn SrqHandler>>,
        owner: Owner,
        user: &mut UserCtx<'_, '_, D>,
    ) -> Result<Arc<Self>> {
        let dev = pd.device();
        let op = dev.ops().create_xrc_srq.ok_or(EOPNOTSUPP)?;
        pd.check_alive()?;
        xrcd.check_alive()?;
        if !Arc::ptr_eq(xrcd.device(), dev) || !Arc::ptr_eq(cq.device(), dev) {
            return Err(EINVAL);
        }
        let uctx = Some(user.ctx().clone());
        Self::create_on(
            pd,
            Some((xrcd, cq)),
            attr,
            handler,
            owner,
            uctx,
            |attr, h| op(pd, xrcd, cq, attr, h, user),
        )
    }

    /// What both kinds of SRQ do once their checks passed (upstream `ib_create_srq_user()`):
    /// the object's memory and restrack entry, the driver's create `op` (the entry goes again
    /// when it fails), then the uses of the PD and of an XRC SRQ's domain and CQ.
    fn create_on(
        pd: &Arc<Pd<D>>,
        xrc: Option<XrcParents<'_, D>>,
        attr: &SrqInitAttr,
        handler: Option<Arc<dyn SrqHandler>>,
        owner: Owner,
        uctx: Option<Arc<Ucontext<D>>>,
        op: impl FnOnce(
            &mut SrqInitAttr,
            Option<&Arc<dyn SrqHandler>>,
        ) -> Result<XrcSrqCreated<D::SrqData>>,
    ) -> Result<Arc<Self>> {
        let dev = pd.device();
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        let res = dev.restrack().add_entry(
            ResType::Srq,
            owner,
            ResDetails::Srq {
                // IB_SRQT_XRC or IB_SRQT_BASIC
                srq_type: if xrc.is_some() { 1 } else { 0 },
                pdn: pd.res_id(),
            },
        )?;
        let res_id = res.id;
        let mut attr = *attr;
        let created = op(&mut attr, handler.as_ref())
            .inspect_err(|_| dev.restrack().del(ResType::Srq, res_id))?;
        Ok(slot
            .write(Srq {
                pd: Uses::new(pd.clone()),
                xrc: xrc.map(|(x, c)| (Uses::new(x.clone()), Uses::new(c.clone()))),
                srq_num: created.srq_num,
                core: ObjCore::new(res),
                attr,
                uctx,
                handler,
                drv: created.data,
            })
            .into())
    }

    /// Whether this is an XRC SRQ (`IB_SRQT_XRC`).
    pub fn is_xrc(&self) -> bool {
        self.xrc.is_some()
    }

    /// The XRC domain of an XRC SRQ.
    pub fn xrcd(&self) -> Option<&Arc<Xrcd<D>>> {
        self.xrc.as_ref().map(|(x, _)| x.get())
    }

    /// The CQ of an XRC SRQ.
    pub fn cq(&self) -> Option<&Arc<Cq<D>>> {
        self.xrc.as_ref().map(|(_, c)| c.get())
    }

    /// The XRC SRQ number (0 for a basic SRQ).
    pub fn srq_num(&self) -> u32 {
        self.srq_num
    }

    /// Changes the limit or the size (upstream `ib_modify_srq()`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `modify_srq`, `EINVAL` for a destroyed SRQ, the driver's error.
    pub fn modify(&self, attr: &SrqInitAttr, mask: SrqAttrMask) -> Result {
        self.modify_with(attr, mask, None)
    }

    /// Changes the limit or the size for a user's MODIFY_SRQ (upstream
    /// `ib_uverbs_modify_srq()`: the driver gets the command's driver data).
    ///
    /// # Errors
    ///
    /// As [`Srq::modify`].
    pub fn modify_user(
        &self,
        attr: &SrqInitAttr,
        mask: SrqAttrMask,
        udata: &mut Udata<'_>,
    ) -> Result {
        self.modify_with(attr, mask, Some(udata))
    }

    fn modify_with(
        &self,
        attr: &SrqInitAttr,
        mask: SrqAttrMask,
        udata: Option<&mut Udata<'_>>,
    ) -> Result {
        let op = self.pd.get().device().ops().modify_srq.ok_or(EOPNOTSUPP)?;
        self.check_alive()?;
        op(self, attr, mask, udata)
    }

    /// Reads the attributes (upstream `ib_query_srq()`: `max_wr`, `max_sge`, `srq_limit`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `query_srq`, the driver's error.
    pub fn query(&self) -> Result<SrqInitAttr> {
        (self.pd.get().device().ops().query_srq.ok_or(EOPNOTSUPP)?)(self)
    }

    /// The restrack ID (upstream `srq->res.id`).
    pub fn res_id(&self) -> u32 {
        self.core.res_id()
    }

    /// What the driver created: the sizes it reported back at create.
    pub fn attr(&self) -> SrqInitAttr {
        self.attr
    }

    /// The user context of a user SRQ (`None` for a kernel SRQ).
    pub fn ucontext(&self) -> Option<&Arc<Ucontext<D>>> {
        self.uctx.as_ref()
    }

    /// Called by the driver on an asynchronous event of the SRQ (upstream
    /// `srq->event_handler`); may be called from interrupt context.
    pub fn async_event(&self, event: SrqEvent) {
        if let Some(h) = &self.handler {
            h.event(event);
        }
    }

    /// The consumer's event handler (for a driver that delivers events itself).
    pub fn handler(&self) -> Option<&Arc<dyn SrqHandler>> {
        self.handler.as_ref()
    }

    /// Destroys the SRQ (upstream `ib_destroy_srq_user()`).
    ///
    /// # Errors
    ///
    /// `EBUSY` while QPs use it, `EINVAL` if already destroyed, the
    /// driver's error; the SRQ is handed back.
    pub fn destroy(this: Arc<Self>) -> core::result::Result<(), DestroyError<Arc<Self>>> {
        destroy(this)
    }

    /// The PD.
    pub fn pd(&self) -> &Arc<Pd<D>> {
        self.pd.get()
    }
}

impl<D: Driver> Destroyable for Srq<D> {
    destroy_op!(destroy_srq, pd);

    fn release(&self) {
        self.pd.release_child(ResType::Srq, self.res_id());
        if let Some((x, c)) = &self.xrc {
            x.release();
            c.release();
        }
    }
}
