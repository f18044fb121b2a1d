// SPDX-License-Identifier: GPL-2.0

//! The global device registry: names, indices and lookups (upstream the
//! `devices` XArray, `assign_name()`, `alloc_name()`,
//! `ib_device_get_by_name()` and `ib_device_get_by_index()` in
//! `drivers/infiniband/core/device.c`).
//!
//! A device enters at registration (its name and index are assigned) and
//! leaves at dealloc, as upstream: the name stays taken between unregister
//! and dealloc.

use crate::global::REGISTRY;
use crate::ib_device::{DevName, DeviceRef, IbDevice};
use kernel::prelude::*;
use kernel::sync::Arc;

/// Largest device index (upstream `xa_limit_31b`).
const MAX_INDEX: u32 = i32::MAX as u32;

struct Entry {
    index: u32,
    name: DevName,
    dev: Arc<dyn IbDevice>,
}

/// The registry (behind [`REGISTRY`]).
pub(crate) struct Registry {
    devices: KVec<Entry>,
    next_index: u32,
}

impl Registry {
    /// An empty registry.
    pub(crate) const fn new() -> Self {
        Registry {
            devices: KVec::new(),
            next_index: 0,
        }
    }

    fn name_taken(&self, name: &DevName) -> bool {
        self.devices.iter().any(|e| e.name == *name)
    }

    fn index_taken(&self, index: u32) -> bool {
        self.devices.iter().any(|e| e.index == index)
    }

    /// Lowest number `n` such that `prefix n suffix` is not a device name
    /// (upstream `__alloc_name_id()`: an ida over the matching names).
    fn lowest_free_id(&self, prefix: &[u8], suffix: &[u8]) -> Result<DevName> {
        let mut n: u32 = 0;
        loop {
            let name = DevName::format(prefix, n, suffix)?;
            if !self.name_taken(&name) {
                return Ok(name);
            }
            n = n.checked_add(1).ok_or(ENFILE)?;
        }
    }
}

/// Parses a name or a `%d` pattern into (prefix, suffix) when it is one.
fn split_pattern(pattern: &[u8]) -> Result<Option<(&[u8], &[u8])>> {
    let Some(pos) = pattern.iter().position(|&b| b == b'%') else {
        return Ok(None);
    };
    let rest = &pattern[pos..];
    if rest.len() < 2 || rest[1] != b'd' || rest[2..].contains(&b'%') {
        // Only one `%d` is meaningful in a device name.
        return Err(EINVAL);
    }
    Ok(Some((&pattern[..pos], &rest[2..])))
}

/// Assigns a unique name and index to `dev` and enters it (upstream
/// `assign_name()`): a `%d` in `pattern` becomes the lowest number not in
/// use; the index is allocated cyclically.
///
/// # Errors
///
/// `EINVAL` for a bad pattern or a name of 64 bytes or more, `ENFILE` when
/// the name is taken or no index is left, `ENOMEM`.
pub(crate) fn assign(pattern: &CStr, dev: Arc<dyn IbDevice>) -> Result<(DevName, u32)> {
    let bytes = pattern.to_bytes();
    let mut reg = REGISTRY.lock();
    let name = match split_pattern(bytes)? {
        Some((prefix, suffix)) => reg.lowest_free_id(prefix, suffix)?,
        None => {
            let name = DevName::new(bytes)?;
            if reg.name_taken(&name) {
                return Err(ENFILE);
            }
            name
        }
    };
    let start = reg.next_index;
    let mut index = start;
    while reg.index_taken(index) {
        index = if index >= MAX_INDEX { 0 } else { index + 1 };
        if index == start {
            return Err(ENFILE);
        }
    }
    reg.devices.push(Entry { index, name, dev }, GFP_KERNEL)?;
    reg.next_index = if index >= MAX_INDEX { 0 } else { index + 1 };
    Ok((name, index))
}

/// Renames the device with `index` to `name` (upstream `ib_device_rename()` under
/// `devices_rwsem` held for writing): its own name is accepted with nothing done (`Ok(false)`),
/// a name another device has is `EEXIST`; otherwise `apply` renames the device (its sysfs
/// directory and its `ident`) and the registry takes the name (`Ok(true)`). `apply` runs under
/// the registry lock, so no registration can take the name meanwhile.
///
/// # Errors
///
/// `EINVAL` for an index not in the registry, `EEXIST`, `apply`'s error (nothing changed).
pub(crate) fn rename(index: u32, name: DevName, apply: impl FnOnce() -> Result) -> Result<bool> {
    let mut reg = REGISTRY.lock();
    let pos = reg
        .devices
        .iter()
        .position(|e| e.index == index)
        .ok_or(EINVAL)?;
    if reg.devices.get(pos).is_some_and(|e| e.name == name) {
        return Ok(false);
    }
    if reg.name_taken(&name) {
        return Err(EEXIST);
    }
    apply()?;
    if let Some(e) = reg.devices.get_mut(pos) {
        e.name = name;
    }
    Ok(true)
}

/// The current name of the device with `index`, registered or not (what upstream's
/// `dev_name(&ibdev->dev)` reads).
pub(crate) fn name_of(index: u32) -> Option<DevName> {
    let reg = REGISTRY.lock();
    reg.devices
        .iter()
        .find(|e| e.index == index)
        .map(|e| e.name)
}

/// Removes the device with `index` (upstream `xa_erase(&devices, ...)` in
/// `ib_dealloc_device()`). The registry's reference is dropped after the
/// lock is released.
pub(crate) fn erase(index: u32) {
    let mut reg = REGISTRY.lock();
    let mut taken = None;
    if let Some(pos) = reg.devices.iter().position(|e| e.index == index) {
        taken = reg.devices.remove(pos).ok();
    }
    drop(reg);
    drop(taken);
}

/// The registered device with the smallest index above `after`, for walks
/// that must not hold the registry lock while calling out.
pub(crate) fn next_registered(after: Option<u32>) -> Option<Arc<dyn IbDevice>> {
    let reg = REGISTRY.lock();
    reg.devices
        .iter()
        .filter(|e| after.is_none_or(|a| e.index > a) && e.dev.core().is_registered())
        .min_by_key(|e| e.index)
        .map(|e| e.dev.clone())
}

/// The device with the smallest index above `after` that `f` accepts, registered or not,
/// with its index (the RoCE GID updates also reach a device during its registration).
pub(crate) fn next_where(
    after: Option<u32>,
    f: impl Fn(&dyn IbDevice) -> bool,
) -> Option<(u32, Arc<dyn IbDevice>)> {
    let reg = REGISTRY.lock();
    reg.devices
        .iter()
        .filter(|e| after.is_none_or(|a| e.index > a) && f(&*e.dev))
        .min_by_key(|e| e.index)
        .map(|e| (e.index, e.dev.clone()))
}

/// Frees the registry's storage at module exit: statics are never dropped,
/// and the vector keeps its capacity after the last device left.
/// Devices still present belong to modules already unloaded (their drop
/// code is gone): they are left alone, and the caller reports them.
pub(crate) fn shutdown() {
    let old = core::mem::replace(&mut REGISTRY.lock().devices, KVec::new());
    free_at_exit(old);
}

/// Frees the storage of a table taken out of its static at module exit, unless entries are
/// left: those belong to modules already unloaded (their drop code is gone), and are left
/// alone with the storage.
pub(crate) fn free_at_exit<T>(old: KVec<T>) {
    if old.is_empty() {
        drop(old);
    } else {
        core::mem::forget(old);
    }
}

/// Number of devices with a name (registered, or unregistered but not yet
/// deallocated).
pub fn device_count() -> usize {
    REGISTRY.lock().devices.len()
}

/// Looks up a registered device by name and takes a registration
/// reference (upstream `ib_device_get_by_name()`).
pub fn get_by_name(name: &[u8]) -> Option<DeviceRef> {
    let dev = {
        let reg = REGISTRY.lock();
        reg.devices
            .iter()
            .find(|e| e.name.as_bytes() == name && e.dev.core().is_registered())
            .map(|e| e.dev.clone())?
    };
    DeviceRef::try_get(dev)
}

/// Looks up a registered device by index and takes a registration
/// reference (upstream `ib_device_get_by_index()`).
pub fn get_by_index(index: u32) -> Option<DeviceRef> {
    let dev = {
        let reg = REGISTRY.lock();
        reg.devices
            .iter()
            .find(|e| e.index == index && e.dev.core().is_registered())
            .map(|e| e.dev.clone())?
    };
    DeviceRef::try_get(dev)
}

/// The device with `index` while it is in the registry, without a registration reference
/// (a client's `add` runs before the device can be looked up with [`get_by_index`] by others,
/// and holds what it keeps until its `remove`).
pub(crate) fn device_arc(index: u32) -> Option<Arc<dyn IbDevice>> {
    let reg = REGISTRY.lock();
    reg.devices
        .iter()
        .find(|e| e.index == index)
        .map(|e| e.dev.clone())
}
