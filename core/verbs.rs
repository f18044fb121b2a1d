// SPDX-License-Identifier: GPL-2.0

//! Kernel verbs: PD, CQ, SRQ, QP and MR for kernel consumers (upstream
//! `drivers/infiniband/core/verbs.c` and the inline data-path verbs of
//! `include/rdma/ib_verbs.h`).
//!
//! Every object is one allocation holding the core part and the driver's
//! private data (upstream `rdma_zalloc_drv_obj()`), made in upstream's
//! order: allocate the object and its restrack entry, call the driver,
//! then (infallibly) take the references on the parents. So the only step
//! after the driver's create is one that cannot fail, and a create has
//! nothing to unwind on the driver's side.
//!
//! The usecnt graph (upstream `atomic_t usecnt` and `ib_qp_usecnt_inc()`)
//! is expressed by [`Uses`]: a QP holds `Uses` of its PD, send CQ, receive
//! CQ (two when they are the same CQ) and SRQ; an SRQ and an MR hold one of
//! their PD. Destroying an object that still has users returns `EBUSY`
//! (upstream `uverbs_free_pd()`, `ib_destroy_cq_user()`,
//! `ib_destroy_srq_user()`, `ib_destroy_qp_user()`) and hands the object
//! back in a [`DestroyError`].
//!
//! Dropping the last `Arc` of an object that was not destroyed destroys it
//! (the driver's error is logged), so nothing can leak from the core's side.

use crate::restrack::ResEntry;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Full, Relaxed};
use kernel::sync::Arc;

mod ah;
mod cq;
mod dm;
mod mmap;
mod mr;
mod mw;
mod pd;
mod qp;
mod srq;
pub(crate) mod types;
mod ucontext;
mod umem;
mod xrcd;

pub use ah::Ah;
pub use cq::{Cq, CqHandler, CqInitAttr, CqNotify};
pub use dm::{Dm, DmAllocAttr, DmMrAttr};
pub use mmap::{MmapEntry, MmapEntryRef, MmapRegistry};
pub use mr::{AccessFlags, Mr, MrCreated, MrType, ReregFlags, Reregistered, UserMrReq};
pub use mw::{Mw, MwCreated, MwType};
pub use pd::Pd;
pub use qp::{
    modify_qp_is_ok, AhAttr, GlobalRoute, Qp, QpAttr, QpAttrMask, QpCap, QpCreated, QpEvent,
    QpHandler, QpInitAttr, QpState, QpType,
};
pub use srq::{Srq, SrqAttrMask, SrqEvent, SrqHandler, SrqInitAttr, XrcSrqCreated};
pub use types::{send_flags, wc_flags, RecvWr, SendWr, Sge, Wc, WcOpcode, WcStatus, WrOpcode};
pub use ucontext::{Ucontext, UcontextPriv, Udata, UserCtx};
pub use umem::{DbPages, DmaBlocks, Umem, UmemPages, UserDb};
pub use xrcd::{SharedQpEvents, Xrcd};

/// A destroy that did not happen: the error and the object, still alive.
pub struct DestroyError<T> {
    /// `EBUSY` while the object has users, or the driver's error.
    pub err: Error,
    /// The object, as it was.
    pub obj: T,
}

impl<T> core::fmt::Debug for DestroyError<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "DestroyError({:?})", self.err)
    }
}

/// An object other objects can use (it has an upstream `usecnt`): a PD (its QPs, SRQs, MRs,
/// AHs and MWs), a CQ (its QPs, one counted twice when it uses the CQ for both queues, and its
/// XRC SRQs), an SRQ (its QPs), a QP, a DM (its MRs) and an XRC domain (its XRC SRQs and target
/// QPs; upstream's `xrcd->usecnt` also counts the uverbs opens). Every verbs object whose
/// `ObjCore` has a counter is one.
pub trait Counted {
    /// The use count.
    fn usecnt_ref(&self) -> &Atomic<i32>;

    /// Number of objects using it (upstream `pd->usecnt`, `cq->usecnt`, ...).
    fn usecnt(&self) -> i32 {
        self.usecnt_ref().load(Relaxed)
    }
}

impl<T: Object> Counted for T
where
    T::Count: Counter,
{
    fn usecnt_ref(&self) -> &Atomic<i32> {
        self.core().count.counter()
    }
}

/// A counted use of a parent object: holds it alive and counts in its
/// `usecnt` until released or dropped (one edge of upstream's usecnt graph).
pub struct Uses<T: Counted> {
    obj: Arc<T>,
    released: Atomic<bool>,
}

impl<T: Counted> Uses<T> {
    pub(crate) fn new(obj: Arc<T>) -> Self {
        obj.usecnt_ref().fetch_add(1, Full);
        Uses {
            obj,
            released: Atomic::new(false),
        }
    }

    /// The parent object.
    pub fn get(&self) -> &Arc<T> {
        &self.obj
    }

    /// Stops counting (the object that used the parent is destroyed); the
    /// memory reference stays until drop.
    pub(crate) fn release(&self) {
        if !self.released.xchg(true, Full) {
            self.obj.usecnt_ref().fetch_sub(1, Full);
        }
    }
}

impl<T: Counted> Drop for Uses<T> {
    fn drop(&mut self) {
        self.release();
    }
}

/// The destroyed flag of an object: claimed by one destroy at a time.
pub(crate) struct Liveness(Atomic<bool>);

impl Liveness {
    pub(crate) fn new() -> Self {
        Liveness(Atomic::new(false))
    }

    /// Claims the destroy; `false` if it is destroyed or being destroyed.
    pub(crate) fn claim(&self) -> bool {
        !self.0.xchg(true, Full)
    }

    /// Gives a claim back after the driver refused.
    pub(crate) fn unclaim(&self) {
        self.0.store(false, kernel::sync::atomic::Release);
    }

    /// Whether destroyed (or being destroyed).
    pub(crate) fn is_dead(&self) -> bool {
        self.0.load(Relaxed)
    }
}

/// Where a verbs object's use count lives: the `C` of its [`ObjCore`].
pub(crate) trait UseCount {
    /// The objects using it; a destroy is `EBUSY` while there are any.
    fn users(&self) -> i32;
}

/// No use count: nothing can use the object (AH, MR, MW).
impl UseCount for () {
    fn users(&self) -> i32 {
        0
    }
}

/// A use count that [`Uses`] counts in.
pub(crate) trait Counter {
    /// The counter.
    fn counter(&self) -> &Atomic<i32>;
}

impl<C: Counter> UseCount for C {
    fn users(&self) -> i32 {
        self.counter().load(Relaxed)
    }
}

/// A counter of the object's own: a DM or an XRC domain, which upstream keeps no restrack
/// entry for.
impl Counter for Atomic<i32> {
    fn counter(&self) -> &Atomic<i32> {
        self
    }
}

/// The restrack entry's counter (PD, CQ, SRQ, QP): nldev reports it from there.
impl Counter for Arc<ResEntry> {
    fn counter(&self) -> &Atomic<i32> {
        &self.usecnt
    }
}

/// The core's part of a verbs object, which upstream's `struct ib_pd`, `ib_cq`, ... each
/// declare: the destroyed flag and the use count `C` ([`UseCount`]): the restrack entry of a
/// tracked object (`Arc<ResEntry>`), a counter of its own (`Atomic<i32>`) or none (`()`).
pub(crate) struct ObjCore<C> {
    count: C,
    live: Liveness,
}

impl<C> ObjCore<C> {
    /// The core part of a new, live object.
    pub(crate) fn new(count: C) -> Self {
        ObjCore {
            count,
            live: Liveness::new(),
        }
    }
}

impl ObjCore<Arc<ResEntry>> {
    /// The restrack entry, which keeps the object's changing state for nldev.
    pub(crate) fn res(&self) -> &ResEntry {
        &self.count
    }

    /// The restrack ID (upstream `res.id`).
    pub(crate) fn res_id(&self) -> u32 {
        self.count.id
    }
}

/// A verbs object: it holds an [`ObjCore`]. One whose use count has a counter is [`Counted`].
pub(crate) trait Object {
    /// Where the use count lives.
    type Count: UseCount;

    /// The destroyed flag and the use count.
    fn core(&self) -> &ObjCore<Self::Count>;

    /// Whether the object is still live (not destroyed).
    ///
    /// # Errors
    ///
    /// `EINVAL` once it is destroyed (or being destroyed).
    fn check_alive(&self) -> Result {
        if self.core().live.is_dead() {
            Err(EINVAL)
        } else {
            Ok(())
        }
    }
}

/// An object under the shared destroy protocol: the destroyed flag and the use count of its
/// [`ObjCore`], a driver op and the core side to release once the driver agreed.
pub(crate) trait Destroyable: Object {
    /// The driver op, named in the message when it fails at drop.
    const OP: &'static str;

    /// The driver op (`Ok` without one).
    fn driver_destroy(&self) -> Result;

    /// The name of the object's device, for the message of a failed destroy at drop.
    fn dev_name(&self) -> crate::ib_device::DevName;

    /// Releases the core side: the restrack entry and the uses of parents
    /// (nothing for an object with neither: DM, XRCD).
    fn release(&self) {}
}

/// The [`Destroyable::OP`] and [`Destroyable::driver_destroy`] of an object whose driver op
/// `op` takes the object alone (`Ok` without one), on the device of its `dev` field or of its
/// PD (`pd`, a [`Uses`]).
macro_rules! destroy_op {
    ($op:ident, dev) => {
        const OP: &'static str = stringify!($op);

        fn driver_destroy(&self) -> Result {
            self.dev.ops().$op.map_or(Ok(()), |f| f(self))
        }

        fn dev_name(&self) -> crate::ib_device::DevName {
            self.dev.name()
        }
    };
    ($op:ident, pd) => {
        const OP: &'static str = stringify!($op);

        fn driver_destroy(&self) -> Result {
            self.pd.get().device().ops().$op.map_or(Ok(()), |f| f(self))
        }

        fn dev_name(&self) -> crate::ib_device::DevName {
            self.pd.get().device().name()
        }
    };
}
pub(crate) use destroy_op;

/// Declares `Type<D>` a verbs object, from its `core: ObjCore<Count>` field: its [`Object`]
/// impl; with `data = Name`, also its `data()` accessor of the driver's private data
/// (`drv: D::Name`) and its `Drop` as [`destroy_at_drop`] (an object dropped without a destroy
/// still runs its driver op and releases its core side).
macro_rules! verbs_object {
    ($t:ident, count = $count:ty) => {
        impl<D: crate::driver::Driver> crate::verbs::Object for $t<D> {
            type Count = $count;

            fn core(&self) -> &crate::verbs::ObjCore<$count> {
                &self.core
            }
        }
    };
    ($t:ident, count = $count:ty, data = $data:ident) => {
        crate::verbs::verbs_object!($t, count = $count);

        impl<D: crate::driver::Driver> $t<D> {
            /// The driver's private data.
            pub fn data(&self) -> &D::$data {
                &self.drv
            }
        }

        impl<D: crate::driver::Driver> Drop for $t<D> {
            fn drop(&mut self) {
                crate::verbs::destroy_at_drop(self);
            }
        }
    };
}
pub(crate) use verbs_object;

/// Runs the shared destroy protocol: `EBUSY` while the object has users,
/// `EINVAL` if already destroyed, else the driver op; on success the core
/// side is released.
///
/// # Errors
///
/// `EBUSY` while the object has users, `EINVAL` if it is already destroyed,
/// or the driver op's error; each hands the object back in [`DestroyError`].
pub(crate) fn destroy<T: Destroyable>(
    this: Arc<T>,
) -> core::result::Result<(), DestroyError<Arc<T>>> {
    if this.core().count.users() != 0 {
        return Err(DestroyError {
            err: EBUSY,
            obj: this,
        });
    }
    if !this.core().live.claim() {
        return Err(DestroyError {
            err: EINVAL,
            obj: this,
        });
    }
    if let Err(err) = this.driver_destroy() {
        this.core().live.unclaim();
        return Err(DestroyError { err, obj: this });
    }
    this.release();
    Ok(())
}

/// Destroys an object dropped without a destroy: the driver op (its error
/// is logged, the object goes anyway), then the core side.
pub(crate) fn destroy_at_drop<T: Destroyable>(obj: &T) {
    if obj.core().live.claim() {
        if let Err(e) = obj.driver_destroy() {
            ibdev_err!(obj.dev_name(), "{} failed at drop: {:?}\n", T::OP, e);
        }
        obj.release();
    }
}
