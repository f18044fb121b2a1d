// SPDX-License-Identifier: GPL-2.0

//! Teardown commands the device refused where the refusal cannot be handed back to anyone
//! (a UAR page whose last mapping went, a closed context's transport domain and UCTX), kept
//! and retried ([`DeferredDeallocs`], one per device).

use crate::cmd::exec;
use crate::cmd::res::{DeallocTransportDomain, DeallocUar, DestroyUctx};
use crate::hw::Mlx5Hw;
use kernel::prelude::*;
use kernel::sync::Arc;

/// A teardown command the device refused where the refusal cannot be handed back to anyone.
#[derive(Clone, Copy)]
pub(crate) enum Deferred {
    /// DEALLOC_UAR of this index.
    Uar(u32),
    /// DEALLOC_TRANSPORT_DOMAIN of this number (a context's, at its close).
    Td(u32),
    /// DESTROY_UCTX of this uid (a DEVX context's, at its close).
    Uctx(u16),
}

/// UARs and transport domains whose deallocation the device refused (for a UAR: RES_BUSY,
/// because CQs or QPs still used it; or any other status): retried after every CQ and QP
/// destroy of the device and every context's close ([`DeferredDeallocs::retry`]) and when the
/// device data goes (after every object of the device). Upstream ignores such a refusal
/// (`mlx5_cmd_uar_dealloc()`, `mlx5_cmd_dealloc_transport_domain()` results are dropped), leaving
/// the object in the device; here it is retried until it succeeds or is refused again for a
/// reason other than RES_BUSY (then it is dropped: exec logged both refusals).
pub(crate) struct DeferredDeallocs {
    hw: Arc<dyn Mlx5Hw>,
    list: Pin<KBox<kernel::sync::SpinLock<KVec<Deferred>>>>,
}

impl DeferredDeallocs {
    /// An empty list for the device `hw`.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(hw: Arc<dyn Mlx5Hw>) -> Result<Arc<Self>> {
        let list = KBox::pin_init(kernel::new_spinlock!(KVec::new()), GFP_KERNEL)?;
        Ok(Arc::new(DeferredDeallocs { hw, list }, GFP_KERNEL)?)
    }

    /// Queues `d` for [`DeferredDeallocs::retry`].
    pub(crate) fn defer(&self, d: Deferred) {
        // Without memory the object stays allocated until the function goes (logged).
        if self.list.lock().push(d, GFP_ATOMIC).is_err() {
            let (what, n) = match d {
                Deferred::Uar(n) => ("UAR", n),
                Deferred::Td(n) => ("transport domain", n),
                Deferred::Uctx(n) => ("user context", u32::from(n)),
            };
            pr_err!(
                "{}: {} 0x{:x} left allocated (no memory to defer it)\n",
                self.hw.name(),
                what,
                n
            );
        }
    }

    /// Deallocates the deferred objects that nothing uses any more: passes over the list until
    /// one frees nothing (a UCTX is busy until its context's transport domain went).
    pub(crate) fn retry(&self) {
        loop {
            let mut busy = KVec::new();
            let mut progress = false;
            loop {
                let Some(d) = self.list.lock().pop() else {
                    break;
                };
                let r = match d {
                    Deferred::Uar(id) => exec(&*self.hw, &DeallocUar { id, uid: 0 }),
                    Deferred::Td(id) => exec(&*self.hw, &DeallocTransportDomain { id, uid: 0 }),
                    Deferred::Uctx(uid) => exec(&*self.hw, &DestroyUctx { uid }),
                };
                if r == Err(EBUSY) {
                    // Still used: back on the list, tried again after the next destroy.
                    // Without memory it stays allocated until the function goes.
                    if busy.push(d, GFP_ATOMIC).is_err() {
                        break;
                    }
                } else {
                    progress = true;
                }
            }
            let none_busy = busy.is_empty();
            let mut l = self.list.lock();
            for d in busy {
                let _ = l.push(d, GFP_ATOMIC);
            }
            if !progress || none_busy {
                return;
            }
        }
    }
}

impl Drop for DeferredDeallocs {
    fn drop(&mut self) {
        self.retry();
    }
}
