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

use crate::device::{DeviceCore, IbDevice};
use kernel::prelude::*;
use kernel::sync::Arc;

/// Event types (upstream `enum ib_event_type`, the device and port ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `IB_EVENT_DEVICE_FATAL`.
    DeviceFatal,
    /// `IB_EVENT_PORT_ACTIVE`.
    PortActive,
    /// `IB_EVENT_PORT_ERR`.
    PortErr,
    /// `IB_EVENT_LID_CHANGE`.
    LidChange,
    /// `IB_EVENT_PKEY_CHANGE`.
    PkeyChange,
    /// `IB_EVENT_SM_CHANGE`.
    SmChange,
    /// `IB_EVENT_CLIENT_REREGISTER`.
    ClientReregister,
    /// `IB_EVENT_GID_CHANGE`.
    GidChange,
}

impl EventKind {
    /// The `enum ib_event_type` value (what the async event file reports).
    pub fn ib_event_type(self) -> u32 {
        match self {
            EventKind::DeviceFatal => 8,
            EventKind::PortActive => 9,
            EventKind::PortErr => 10,
            EventKind::LidChange => 11,
            EventKind::PkeyChange => 12,
            EventKind::SmChange => 13,
            EventKind::ClientReregister => 17,
            EventKind::GidChange => 18,
        }
    }

    /// Whether the event invalidates the port cache (upstream
    /// `ib_cache_event()` plus `PORT_ERR`/`PORT_ACTIVE`, which change the
    /// cached port state).
    pub fn updates_cache(self) -> bool {
        !matches!(self, EventKind::DeviceFatal)
    }
}

/// One event: its type and, for port events, the port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// The type.
    pub kind: EventKind,
    /// The port (1-based) for port events, 0 for device events.
    pub port: u32,
}

/// A receiver of a device's events (upstream `struct ib_event_handler`).
pub trait EventHandler: Send + Sync + 'static {
    /// Handles one event.
    fn handle(&self, dev: &DeviceCore, ev: &Event);
}

pub(crate) struct HandlerEntry {
    pub(crate) id: u32,
    pub(crate) handler: Arc<dyn EventHandler>,
}

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
