// SPDX-License-Identifier: GPL-2.0

//! The events of user objects (upstream `ib_uverbs_comp_handler()`,
//! `ib_uverbs_cq_event_handler()`, `ib_uverbs_qp_event_handler()`,
//! `ib_uverbs_srq_event_handler()`) and the file's async event files.

use crate::uverbs::abi::structs as s;
use crate::uverbs::async_event::{AsyncEventFile, EventCount};
use crate::verbs::{CqHandler, QpEvent, QpHandler, SrqEvent, SrqHandler};
use kernel::prelude::*;
use kernel::sync::Arc;

/// `IB_EVENT_CQ_ERR`.
pub(super) const IB_EVENT_CQ_ERR: u32 = 0;

/// The events of a user CQ or QP (upstream `ib_uverbs_comp_handler()`,
/// `ib_uverbs_cq_event_handler()`, `ib_uverbs_qp_event_handler()` with the
/// object's `ib_ucq_object`/`ib_uevent_object`): completions go to the CQ's
/// completion channel, asynchronous events to the async event file, each
/// with the object's user handle and counted when read.
pub(super) struct UEvents {
    pub(super) comp_chan: Option<Arc<AsyncEventFile>>,
    pub(super) async_file: Option<Arc<AsyncEventFile>>,
    pub(super) user_handle: u64,
    pub(super) comp: Arc<EventCount>,
    pub(super) events: Arc<EventCount>,
}

/// What a destroy response reports: the events the process read. Its responses serve the
/// write command and the ioctl method alike.
#[derive(Clone, Copy, Default)]
pub(super) struct Reported {
    pub(super) comp: u32,
    pub(super) events: u32,
}

impl Reported {
    /// `struct ib_uverbs_destroy_cq_resp`.
    pub(super) fn cq_resp(self) -> [u8; s::DestroyCqResp::SIZE] {
        s::DestroyCqResp {
            comp_events_reported: self.comp,
            async_events_reported: self.events,
        }
        .to_bytes()
    }

    /// `struct ib_uverbs_destroy_qp_resp`.
    pub(super) fn qp_resp(self) -> [u8; s::DestroyQpResp::SIZE] {
        s::DestroyQpResp {
            events_reported: self.events,
        }
        .to_bytes()
    }

    /// `struct ib_uverbs_destroy_srq_resp`.
    pub(super) fn srq_resp(self) -> [u8; s::DestroySrqResp::SIZE] {
        s::DestroySrqResp {
            events_reported: self.events,
        }
        .to_bytes()
    }
}

impl UEvents {
    pub(super) fn new(
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
