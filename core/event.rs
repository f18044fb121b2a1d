// SPDX-License-Identifier: GPL-2.0

//! Asynchronous events (upstream `struct ib_event`,
//! `ib_register_event_handler()`, `ib_dispatch_event()`).
//!
//! Drivers report events with
//! [`Device::dispatch_event`](crate::device::Device::dispatch_event): port
//! events that change cached data refresh the port cache first (upstream
//! `ib_cache_event_task()`), then every handler registered on the device
//! and every client attached to it sees the event. Dispatch runs in process
//! context (upstream queues the work when called from interrupt context;
//! TODO when a driver needs it). Handlers run under the device's handler
//! lock and must not register or unregister handlers.

pub use crate::ib_device::{Event, EventHandler, EventKind};

use crate::ib_device::{DeviceCore, DeviceRef, HandlerEntry, IbDevice};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A registered event handler; dropping it unregisters it (upstream
/// `ib_unregister_event_handler()`).
pub struct EventHandlerRegistration {
    dev: Arc<dyn IbDevice>,
    id: u32,
}

/// Registers `handler` for the events of `dev` (upstream
/// `ib_register_event_handler()`).
///
/// # Errors
///
/// `ENOMEM`.
pub fn register_event_handler(
    dev: Arc<dyn IbDevice>,
    handler: Arc<dyn EventHandler>,
) -> Result<EventHandlerRegistration> {
    let core = dev.core();
    let id = core.next_handler_id();
    core.handlers
        .lock()
        .push(HandlerEntry { id, handler }, GFP_KERNEL)?;
    Ok(EventHandlerRegistration { dev, id })
}

impl Drop for EventHandlerRegistration {
    fn drop(&mut self) {
        let id = self.id;
        self.dev.core().handlers.lock().retain(|h| h.id != id);
    }
}

/// Delivers `ev` to the device's handlers, then to its clients.
pub(crate) fn deliver(dev: &DeviceCore, ev: &Event) {
    for h in dev.handlers.lock().iter() {
        h.handler.handle(dev, ev);
    }
    for c in dev.clients.lock().iter() {
        c.client.event(dev, ev);
    }
}

/// [`Device::dispatch_event_queued`] for a device known by its trait object.
/// Non-generic so the work item's code lives in this module, whatever
/// driver module queued it. Callable in atomic context.
///
/// # Errors
///
/// `ENOMEM`.
pub fn queue_device_event(dev: Arc<dyn IbDevice>, ev: Event) -> Result {
    let Some(r) = DeviceRef::try_get(dev) else {
        return Ok(());
    };
    // The core's queue, which `Device::dealloc` flushes: the reference `r` holds is never the
    // last one after the driver deallocated the device.
    crate::wq::queue()
        .try_spawn(GFP_ATOMIC, move || {
            let ports = r.device().core().phys_port_cnt;
            if ev.port == 0 || ev.port > ports {
                // upstream mlx5_ib_handle_event(): `rdma_is_port_valid()`.
                ibdev_warn!(
                    r.device().core().name(),
                    "event {} on port {} dropped: no such port\n",
                    ev.kind.ib_event_type(),
                    ev.port
                );
                return;
            }
            r.device().dispatch(ev);
            pr_info!(
                "ib_core_rs: {}: event {} on port {} dispatched\n",
                r.device().core().name(),
                ev.kind.ib_event_type(),
                ev.port
            );
            drop(r);
        })
        .map_err(|_| ENOMEM)
}
