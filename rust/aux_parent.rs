// SPDX-License-Identifier: GPL-2.0

//! A faux device that parents auxiliary devices for as long as it lives.
//!
//! `kernel::auxiliary::Registration::new()` borrows its parent as `&'a Device<Bound>` and the
//! registration carries `'a`, which is right for a PCI driver (the registrations live in the
//! parent's driver data, see `nova-core/driver.rs`). A module that creates the parent itself —
//! a faux device, here the firmware simulator's — would have to store the parent and the
//! registrations borrowing it in one struct, which safe Rust cannot express. [`AuxParent`]
//! owns both and guarantees the order: every child registration is dropped (devices deleted,
//! newest first, like mlx5_core's `mlx5_detach_device()`) before the faux device is destroyed.

use kernel::{
    auxiliary,
    device::{self, Bound},
    faux,
    prelude::*,
    types::ForLt,
};

/// A faux device and the auxiliary devices registered under it.
///
/// # Invariants
///
/// Every registration in `children` was created with `faux`'s device as parent, and `children`
/// is emptied before `faux` is dropped (see [`Drop`]); the `'static` parent borrow that each
/// registration's type carries never outlives the faux device.
pub(crate) struct AuxParent<F: ForLt + 'static>
where
    for<'a> F::Of<'a>: Send + Sync,
{
    children: KVec<auxiliary::Registration<'static, F>>,
    faux: faux::Registration,
}

impl<F: ForLt + 'static> AuxParent<F>
where
    for<'a> F::Of<'a>: Send + Sync,
{
    /// Creates the faux parent `/sys/devices/faux/<name>`.
    pub(crate) fn new(name: &CStr) -> Result<Self> {
        Ok(Self {
            children: KVec::new(),
            faux: faux::Registration::new(name, None)?,
        })
    }

    /// Registers the auxiliary device `<modname>.<name>.<id>` under the faux parent, with
    /// `data` as its registration data (what the auxiliary driver's probe reads).
    pub(crate) fn add<E>(
        &mut self,
        name: &CStr,
        id: u32,
        modname: &CStr,
        data: impl PinInit<F::Of<'static>, E>,
    ) -> Result
    where
        F::Of<'static>: 'static,
        Error: From<E>,
    {
        self.children.reserve(1, GFP_KERNEL)?;
        let parent: &device::Device<Bound> = self.faux.as_ref().as_ref();
        // SAFETY: `parent` points to the C `struct faux_device`'s device, not into `self`, so
        // moving `self` does not invalidate it; it stays bound until `self.faux` is dropped. The
        // `'static` borrow is only given to `Registration::new()`, which reads the pointer and
        // takes a device reference; the registration it returns lives in `self.children`, which
        // `Drop` empties before `self.faux` is dropped (type invariant). So no registration
        // outlives the parent it names.
        let parent: &'static device::Device<Bound> = unsafe { &*core::ptr::from_ref(parent) };
        let reg = auxiliary::Registration::<'static, F>::new(parent, name, id, modname, data)?;
        // INVARIANT: the child's parent is `self.faux`.
        self.children.push(reg, GFP_KERNEL)?;
        Ok(())
    }
}

impl<F: ForLt + 'static> Drop for AuxParent<F>
where
    for<'a> F::Of<'a>: Send + Sync,
{
    fn drop(&mut self) {
        // Children first, newest first; `self.faux` is dropped after this function returns.
        while let Some(child) = self.children.pop() {
            drop(child);
        }
    }
}
