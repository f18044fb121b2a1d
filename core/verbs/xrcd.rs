// SPDX-License-Identifier: GPL-2.0

//! XRC domains and their target QPs (upstream `ib_alloc_xrcd_user()`,
//! `ib_dealloc_xrcd_user()`, `create_xrc_qp_user()`, `ib_open_qp()`,
//! `__ib_destroy_shared_qp()` and `__ib_shared_qp_event_handler()`).
//!
//! An XRC domain is used (its `usecnt`) by the XRC SRQs in it and by its XRC target QPs;
//! deallocating it while used is `EBUSY`. A target QP belongs to the domain, not to the
//! process that created it: the domain keeps it in its table (upstream `xrcd->tgt_qps`), each
//! creator or opener holds an opened handle with its own event handler (every opener sees
//! the QP's events), and the QP is destroyed when the last handle is closed.

use super::{destroy, destroy_at_drop, verbs_object, DestroyError, Destroyable, ObjCore, Object};
use super::{Qp, QpCap, QpEvent, QpHandler, Ucontext, UserCtx};
use crate::device::Device;
use crate::driver::Driver;
use crate::restrack::Owner;
use kernel::new_spinlock_irq;
use kernel::prelude::*;
use kernel::sync::atomic::Atomic;
use kernel::sync::{Arc, Mutex, SpinLockIrq};

/// The handlers of every opened handle of one target QP (upstream `real_qp->open_list`
/// walked by `__ib_shared_qp_event_handler()`).
#[pin_data]
pub struct SharedQpEvents {
    #[pin]
    openers: SpinLockIrq<KVec<Arc<dyn QpHandler>>>,
}

impl SharedQpEvents {
    fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(SharedQpEvents {
                openers <- new_spinlock_irq!(KVec::new()),
            }),
            GFP_KERNEL,
        )
    }

    fn add(&self, h: Arc<dyn QpHandler>) -> Result {
        self.openers.lock().push(h, GFP_ATOMIC)?;
        Ok(())
    }

    /// Removes `h`; how many openers are left.
    fn remove(&self, h: &Arc<dyn QpHandler>) -> usize {
        let mut l = self.openers.lock();
        if let Some(i) = l.iter().position(|x| same_handler(x, h)) {
            let _ = l.remove(i);
        }
        l.len()
    }

    fn count(&self) -> usize {
        self.openers.lock().len()
    }
}

impl QpHandler for SharedQpEvents {
    fn event(&self, event: QpEvent) {
        for h in self.openers.lock().iter() {
            h.event(event);
        }
    }
}

/// The same handler object (compared by address, not by vtable).
fn same_handler(a: &Arc<dyn QpHandler>, b: &Arc<dyn QpHandler>) -> bool {
    core::ptr::addr_eq(
        core::ptr::from_ref::<dyn QpHandler>(&**a),
        core::ptr::from_ref::<dyn QpHandler>(&**b),
    )
}

struct Tgt<D: Driver> {
    qp: Arc<Qp<D>>,
    events: Arc<SharedQpEvents>,
}

/// An XRC domain (upstream `struct ib_xrcd`); `xrcdn` is the driver's number for it.
#[pin_data(PinnedDrop)]
pub struct Xrcd<D: Driver> {
    dev: Arc<Device<D>>,
    core: ObjCore<Atomic<i32>>,
    uctx: Option<Arc<Ucontext<D>>>,
    xrcdn: u32,
    #[pin]
    tgt: Mutex<KVec<Tgt<D>>>,
}

verbs_object!(Xrcd, count = Atomic<i32>);

impl<D: Driver> Xrcd<D> {
    /// Allocates an XRC domain of a user context (upstream `ib_alloc_xrcd_user()` from
    /// `ib_uverbs_open_xrcd()`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `alloc_xrcd`, `ENOMEM`, the driver's error.
    pub fn alloc_user(dev: &Arc<Device<D>>, user: &mut UserCtx<'_, '_, D>) -> Result<Arc<Self>> {
        let op = dev.ops().alloc_xrcd.ok_or(EOPNOTSUPP)?;
        if dev.ops().dealloc_xrcd.is_none() {
            return Err(EOPNOTSUPP);
        }
        let uctx = user.ctx().clone();
        let xrcdn = op(dev, Some(user))?;
        let r = Arc::pin_init(
            pin_init!(Xrcd {
                dev: dev.clone(),
                core: ObjCore::new(Atomic::new(0)),
                uctx: Some(uctx),
                xrcdn,
                tgt <- core_mutex!(KVec::new(), c"ib_xrcd_tgt_qps"),
            }),
            GFP_KERNEL,
        );
        if r.is_err() {
            // Nothing of ours holds it yet: give the number back.
            if let Some(f) = dev.ops().dealloc_xrcd {
                let _ = f(dev, xrcdn);
            }
        }
        r
    }

    /// Deallocates the domain (upstream `ib_dealloc_xrcd_user()`).
    ///
    /// # Errors
    ///
    /// `EBUSY` while XRC SRQs or target QPs use it, `EINVAL` if already deallocated, the
    /// driver's error; the domain is handed back.
    pub fn dealloc(this: Arc<Self>) -> core::result::Result<(), DestroyError<Arc<Self>>> {
        destroy(this)
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device<D>> {
        &self.dev
    }

    /// The driver's number of the domain (mlx5: `xrcdn`).
    pub fn xrcdn(&self) -> u32 {
        self.xrcdn
    }

    /// The user context it was allocated on.
    pub fn ucontext(&self) -> Option<&Arc<Ucontext<D>>> {
        self.uctx.as_ref()
    }

    /// Target QPs in the domain.
    pub fn tgt_qps(&self) -> usize {
        self.tgt.lock().len()
    }

    /// Creates a target QP in the domain and opens it for `handler` (upstream
    /// `ib_create_qp_user()` with `IB_QPT_XRC_TGT`: `create_qp()` without udata, then
    /// `create_xrc_qp_user()`). The QP uses the domain; the handle returned is the QP.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `create_xrc_tgt_qp`, `EINVAL` for a dead domain, `ENOMEM`, the
    /// driver's error.
    pub fn create_tgt_qp(
        this: &Arc<Self>,
        cap: QpCap,
        handler: Arc<dyn QpHandler>,
        owner: Owner,
    ) -> Result<Arc<Qp<D>>> {
        this.check_alive()?;
        let events = SharedQpEvents::new()?;
        events.add(handler)?;
        let mut tgt = this.tgt.lock();
        tgt.reserve(1, GFP_KERNEL)?;
        let shared: Arc<dyn QpHandler> = events.clone();
        let qp = Qp::create_xrc_tgt(this, cap, shared, owner)?;
        tgt.push(
            Tgt {
                qp: qp.clone(),
                events,
            },
            GFP_KERNEL,
        )?;
        Ok(qp)
    }

    /// Opens target QP `qpn` of the domain for `handler` (upstream `ib_open_qp()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` when the domain has no target QP `qpn` (upstream), `ENOMEM`.
    pub fn open_qp(&self, qpn: u32, handler: Arc<dyn QpHandler>) -> Result<Arc<Qp<D>>> {
        let tgt = self.tgt.lock();
        let t = tgt.iter().find(|t| t.qp.qp_num() == qpn).ok_or(EINVAL)?;
        t.events.add(handler)?;
        Ok(t.qp.clone())
    }

    /// Closes the handle of `handler` on target QP `qp` (upstream `__ib_destroy_shared_qp()`):
    /// the last close destroys the QP and ends its use of the domain.
    ///
    /// # Errors
    ///
    /// `EINVAL` when `qp` is not a target QP of the domain; the driver's error of the last
    /// close's destroy (the QP is then kept, with no opener, as upstream's `ib_destroy_qp()`
    /// failure leaves it).
    pub fn close_qp(&self, qp: &Arc<Qp<D>>, handler: &Arc<dyn QpHandler>) -> Result {
        let mut tgt = self.tgt.lock();
        let i = tgt
            .iter()
            .position(|t| Arc::ptr_eq(&t.qp, qp))
            .ok_or(EINVAL)?;
        let left = tgt.get(i).map_or(0, |t| t.events.remove(handler));
        if left != 0 {
            return Ok(());
        }
        let t = tgt.remove(i).map_err(|_| EINVAL)?;
        drop(tgt);
        Qp::destroy(t.qp).map_err(|e| e.err)
    }

    /// Number of handles open on target QP `qp` (0 when it is not one of the domain's).
    pub fn openers(&self, qp: &Arc<Qp<D>>) -> usize {
        self.tgt
            .lock()
            .iter()
            .find(|t| Arc::ptr_eq(&t.qp, qp))
            .map_or(0, |t| t.events.count())
    }
}

impl<D: Driver> Destroyable for Xrcd<D> {
    const OP: &'static str = "dealloc_xrcd";

    fn driver_destroy(&self) -> Result {
        self.dev
            .ops()
            .dealloc_xrcd
            .map_or(Ok(()), |f| f(&self.dev, self.xrcdn))
    }

    fn dev_name(&self) -> crate::ib_device::DevName {
        self.dev.name()
    }
}

// `#[pinned_drop]` makes this pin-init's `unsafe impl PinnedDrop`; the code in it is safe.
#[allow(unsafe_code)]
#[pinned_drop]
impl<D: Driver> PinnedDrop for Xrcd<D> {
    fn drop(self: Pin<&mut Self>) {
        destroy_at_drop(&*self);
    }
}
