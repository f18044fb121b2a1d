// SPDX-License-Identifier: GPL-2.0

//! Clients: kernel components that want to know about every device
//! (upstream `struct ib_client`, `ib_register_client()`,
//! `ib_unregister_client()`, `add_client_context()`,
//! `remove_client_context()` in `drivers/infiniband/core/device.c`).
//!
//! Every client add and remove, on device registration, device
//! unregistration, client registration and client unregistration, runs with
//! the global client lock held (upstream `clients_rwsem`), so a client never
//! sees `remove` for a device before `add` completed. Callbacks must not
//! register or unregister clients or devices.
//!
//! Order: a device gets its clients in registration order and loses them in
//! reverse (LIFO), as upstream's `disable_device()`.

pub use crate::ib_device::{Client, ClientNlInfo};

use crate::global::CLIENTS;
use crate::ib_device::{ClientCtx, DeviceCore, IbDevice};
use crate::registry;
use kernel::prelude::*;
use kernel::sync::Arc;

/// Asks the client named `name` for its char device (upstream `ib_get_client_nl_info()`):
/// on `dev`, among the clients attached to it, or among all registered clients without a
/// device.
///
/// # Errors
///
/// `EOPNOTSUPP` when no such client is attached (upstream turns `ENOENT` into it), the
/// client's error (`ENOENT` from a client becomes `EINVAL`).
pub fn get_nl_info(
    dev: Option<&DeviceCore>,
    name: &[u8],
    port: Option<u32>,
) -> Result<ClientNlInfo> {
    let fix = |r: Result<ClientNlInfo>| match r {
        Err(e) if e == ENOENT => Err(EINVAL),
        r => r,
    };
    match dev {
        Some(dev) => {
            let list = dev.clients.lock();
            let c = list
                .iter()
                .find(|c| c.client.name().to_bytes() == name)
                .ok_or(EOPNOTSUPP)?;
            fix(c.client.get_nl_info(dev, port))
        }
        None => {
            let t = CLIENTS.lock();
            let c = t
                .clients
                .iter()
                .find(|c| c.client.name().to_bytes() == name)
                .ok_or(EOPNOTSUPP)?;
            fix(c.client.get_global_nl_info())
        }
    }
}

struct Registered {
    id: u32,
    client: Arc<dyn Client>,
}

/// The registered clients (behind [`CLIENTS`]).
pub(crate) struct ClientTable {
    clients: KVec<Registered>,
    next_id: u32,
}

impl ClientTable {
    /// An empty table.
    pub(crate) const fn new() -> Self {
        ClientTable {
            clients: KVec::new(),
            next_id: 0,
        }
    }
}

/// Registration of a client; dropping it unregisters the client: it is
/// removed from every device it was added to, in device index order
/// (upstream `ib_unregister_client()`).
pub struct ClientRegistration {
    id: u32,
}

/// Registers `client` and adds it to every registered device (upstream
/// `ib_register_client()`).
///
/// # Errors
///
/// `ENOMEM`.
pub fn register_client(client: Arc<dyn Client>) -> Result<ClientRegistration> {
    let mut t = CLIENTS.lock();
    let id = t.next_id;
    t.clients.push(
        Registered {
            id,
            client: client.clone(),
        },
        GFP_KERNEL,
    )?;
    t.next_id = t.next_id.wrapping_add(1);
    let mut after = None;
    while let Some(dev) = registry::next_registered(after) {
        after = Some(dev.core().index());
        add_client_context(dev.core(), id, &client);
    }
    Ok(ClientRegistration { id })
}

impl Drop for ClientRegistration {
    // upstream: ib_unregister_client().
    fn drop(&mut self) {
        let mut t = CLIENTS.lock();
        let mut after = None;
        while let Some(dev) = registry::next_registered(after) {
            after = Some(dev.core().index());
            remove_client_context(dev.core(), self.id);
        }
        t.clients.retain(|r| r.id != self.id);
    }
}

/// Adds one client to one device (upstream `add_client_context()`). The
/// caller holds the client lock.
fn add_client_context(dev: &DeviceCore, id: u32, client: &Arc<dyn Client>) {
    if dev.clients.lock().iter().any(|c| c.id == id) {
        return;
    }
    if let Err(e) = client.add(dev) {
        pr_info!(
            "ib_core_rs: {}: client {:?} add failed ({:?}); not attached\n",
            dev.name(),
            client.name(),
            e
        );
        return;
    }
    let ctx = ClientCtx {
        id,
        client: client.clone(),
    };
    if dev.clients.lock().push(ctx, GFP_KERNEL).is_err() {
        ibdev_err!(
            dev.name(),
            "no memory to attach client {:?}\n",
            client.name()
        );
        client.remove(dev);
    }
}

/// Removes one client from one device (upstream `remove_client_context()`).
fn remove_client_context(dev: &DeviceCore, id: u32) {
    let mut taken = None;
    {
        let mut list = dev.clients.lock();
        if let Some(pos) = list.iter().position(|c| c.id == id) {
            taken = list.remove(pos).ok();
        }
    }
    if let Some(ctx) = taken {
        ctx.client.remove(dev);
    }
}

/// Marks `dev` registered and adds every client in registration order
/// (upstream `enable_device_and_get()`); `enable` runs first, under the
/// client lock, as upstream's `ops.enable_driver`.
///
/// # Errors
///
/// The error of `enable`; the device is left unmarked then.
pub(crate) fn enable_device(dev: &dyn IbDevice, enable: impl FnOnce() -> Result) -> Result {
    let t = CLIENTS.lock();
    dev.core().set_registered(true);
    if let Err(e) = enable() {
        dev.core().set_registered(false);
        return Err(e);
    }
    for r in t.clients.iter() {
        add_client_context(dev.core(), r.id, &r.client);
    }
    Ok(())
}

/// Unmarks `dev` and removes its clients, newest first (upstream
/// `disable_device()`).
pub(crate) fn disable_device(dev: &DeviceCore) {
    let _t = CLIENTS.lock();
    dev.set_registered(false);
    loop {
        let ctx = dev.clients.lock().pop();
        match ctx {
            Some(ctx) => ctx.client.remove(dev),
            None => break,
        }
    }
}

/// Frees the client table's storage at module exit (see
/// [`registry::shutdown`]).
pub(crate) fn shutdown() {
    let old = core::mem::replace(&mut CLIENTS.lock().clients, KVec::new());
    registry::free_at_exit(old);
}

/// Number of registered clients.
pub fn client_count() -> usize {
    CLIENTS.lock().clients.len()
}
