// SPDX-License-Identifier: GPL-2.0

//! Clients (add in order, remove LIFO) and event dispatch.

use ib_core_rs::client::Client;
use ib_core_rs::device::DeviceCore;
use ib_core_rs::event::{Event, EventHandler};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, Mutex};

/// An ordered record of client calls: `(client tag, b'+' add / b'-' remove / b'e' event)`.
#[pin_data]
pub(crate) struct Log {
    #[pin]
    entries: Mutex<KVec<(u8, u8)>>,
}

impl Log {
    pub(crate) fn new() -> Result<Arc<Log>> {
        Arc::pin_init(
            pin_init!(Log {
                entries <- kernel::new_mutex!(KVec::new()),
            }),
            GFP_KERNEL,
        )
    }

    fn push(&self, tag: u8, what: u8) {
        let _ = self.entries.lock().push((tag, what), GFP_KERNEL);
    }

    /// The log as `tag what` pairs, then cleared.
    pub(crate) fn take(&self) -> KVec<(u8, u8)> {
        core::mem::replace(&mut *self.entries.lock(), KVec::new())
    }
}

pub(crate) struct LogClient {
    pub(crate) tag: u8,
    pub(crate) fail_add: bool,
    pub(crate) log: Arc<Log>,
}

impl Client for LogClient {
    fn name(&self) -> &'static CStr {
        c"log_client"
    }

    fn add(&self, dev: &DeviceCore) -> Result {
        // A client sees a registered device with its name and cache.
        if !dev.is_registered() || dev.name().as_bytes().is_empty() {
            return Err(EINVAL);
        }
        self.log.push(self.tag, b'+');
        if self.fail_add {
            Err(ENOMEM)
        } else {
            Ok(())
        }
    }

    fn remove(&self, _dev: &DeviceCore) {
        self.log.push(self.tag, b'-');
    }

    fn event(&self, _dev: &DeviceCore, _ev: &Event) {
        self.log.push(self.tag, b'e');
    }
}

pub(crate) struct CountingHandler {
    pub(crate) count: Atomic<i32>,
    pub(crate) last_port: Atomic<i32>,
    pub(crate) pkey_seen: Atomic<i32>,
}

impl EventHandler for CountingHandler {
    fn handle(&self, dev: &DeviceCore, ev: &Event) {
        self.count.fetch_add(1, Relaxed);
        self.last_port.store(ev.port as i32, Relaxed);
        // The cache is refreshed before handlers run (upstream
        // ib_cache_event_task()).
        if let Ok(k) = dev.get_cached_pkey(ev.port, 1) {
            self.pkey_seen.store(i32::from(k), Relaxed);
        }
    }
}

#[kunit_tests(ib_core_rs_clients)]
mod tests {
    use super::super::*;
    use super::*;
    use ib_core_rs::client::{client_count, register_client};
    use ib_core_rs::event::{register_event_handler, EventKind};

    fn client(tag: u8, fail_add: bool, log: &Arc<Log>) -> Result<Arc<dyn Client>> {
        let c: Arc<dyn Client> = Arc::new(
            LogClient {
                tag,
                fail_add,
                log: log.clone(),
            },
            GFP_KERNEL,
        )?;
        Ok(c)
    }

    /// How many of ib_core_rs's own clients (uverbs, the MAD layer, umad) a mock device
    /// gets: the MAD layer and umad attach to its IB port with a MAD capability.
    fn core_clients() -> Result<usize> {
        let d = registered(1)?;
        let n = d.client_count();
        Device::dealloc(d);
        Ok(n)
    }

    #[test]
    fn add_in_order_remove_lifo() -> Result {
        let log = Log::new()?;
        let own = core_clients()?;
        // ib_core_rs's own clients (uverbs, mad, umad) are registered already.
        let base = client_count();
        let ra = register_client(client(b'A', false, &log)?)?;
        let rb = register_client(client(b'B', false, &log)?)?;
        assert_eq!(client_count(), base + 2);
        let dev = registered(1)?;
        assert_eq!(&log.take()[..], &[(b'A', b'+'), (b'B', b'+')]);
        assert_eq!(dev.client_count(), own + 2);
        // A client registered later is added to the registered device...
        let rc = register_client(client(b'C', false, &log)?)?;
        assert_eq!(&log.take()[..], &[(b'C', b'+')]);
        // ...and removed first: LIFO.
        Device::unregister(&dev);
        assert_eq!(&log.take()[..], &[(b'C', b'-'), (b'B', b'-'), (b'A', b'-')]);
        assert_eq!(dev.client_count(), 0);
        // Unregistering the clients now touches no device.
        drop(rc);
        drop(rb);
        drop(ra);
        assert_eq!(log.take().len(), 0);
        assert_eq!(client_count(), base);
        Device::dealloc(dev);
        Ok(())
    }

    #[test]
    fn client_unregister_removes_from_devices() -> Result {
        let log = Log::new()?;
        let own = core_clients()?;
        let d0 = registered(1)?;
        let d1 = registered(1)?;
        let ra = register_client(client(b'A', false, &log)?)?;
        assert_eq!(&log.take()[..], &[(b'A', b'+'), (b'A', b'+')]);
        drop(ra);
        assert_eq!(&log.take()[..], &[(b'A', b'-'), (b'A', b'-')]);
        assert_eq!(d0.client_count(), own);
        assert_eq!(d1.client_count(), own);
        Device::dealloc(d0);
        Device::dealloc(d1);
        assert_eq!(log.take().len(), 0);
        Ok(())
    }

    #[test]
    fn failed_add_is_ignored_and_never_removed() -> Result {
        let log = Log::new()?;
        let own = core_clients()?;
        let ra = register_client(client(b'A', false, &log)?)?;
        let rf = register_client(client(b'F', true, &log)?)?;
        let dev = registered(1)?;
        assert_eq!(&log.take()[..], &[(b'A', b'+'), (b'F', b'+')]);
        assert_eq!(dev.client_count(), own + 1);
        Device::unregister(&dev);
        assert_eq!(&log.take()[..], &[(b'A', b'-')]);
        drop(rf);
        drop(ra);
        Device::dealloc(dev);
        Ok(())
    }

    #[test]
    fn events_reach_handlers_and_clients() -> Result {
        let log = Log::new()?;
        let ra = register_client(client(b'A', false, &log)?)?;
        let dev = registered(2)?;
        log.take();
        let h = Arc::new(
            CountingHandler {
                count: Atomic::new(0),
                last_port: Atomic::new(0),
                pkey_seen: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        let reg = register_event_handler(dev.clone(), h.clone())?;
        dev.dispatch_event(Event {
            kind: EventKind::PortErr,
            port: 2,
        });
        assert_eq!(h.count.load(Relaxed), 1);
        assert_eq!(h.last_port.load(Relaxed), 2);
        assert_eq!(&log.take()[..], &[(b'A', b'e')]);
        // A P_Key change refreshes the cache before the handlers run.
        dev.data().pkey1.store(0x8002, Relaxed);
        assert_eq!(dev.get_cached_pkey(1, 1)?, 0x8001);
        dev.dispatch_event(Event {
            kind: EventKind::PkeyChange,
            port: 1,
        });
        assert_eq!(dev.get_cached_pkey(1, 1)?, 0x8002);
        assert_eq!(h.pkey_seen.load(Relaxed), 0x8002);
        // Port state follows PORT_ERR / PORT_ACTIVE.
        dev.data().port_state.store(1, Relaxed);
        dev.dispatch_event(Event {
            kind: EventKind::PortErr,
            port: 1,
        });
        assert_eq!(dev.get_cached_port_state(1)?, PortState::Down);
        assert_eq!(h.count.load(Relaxed), 3);
        // Unregistered handlers see nothing more.
        drop(reg);
        dev.dispatch_event(Event {
            kind: EventKind::DeviceFatal,
            port: 0,
        });
        assert_eq!(h.count.load(Relaxed), 3);
        drop(ra);
        Device::dealloc(dev);
        Ok(())
    }
}
