// SPDX-License-Identifier: GPL-2.0

//! `mmap()` of an open uverbs file (upstream `ib_uverbs_mmap()` and the
//! mmap half of `ufile_destroy_ucontext()`, `uverbs_main.c`).
//!
//! The mapping machinery (tracked VMAs, `vm_ops`, the zap and the faults
//! after it) is `crate::mm::Umaps`; this file decides when a mapping may be
//! made and for which context:
//!
//! * before GET_CONTEXT: `EINVAL` (upstream `ib_uverbs_get_ucontext_file()`);
//! * while or after the file's objects are destroyed (close, disassociate):
//!   `EIO` (upstream: `down_read_trylock(&hw_destroy_rwsem)` fails, or the
//!   device is gone);
//! * a device without the `mmap` op: `ENODEV` (upstream's file operations
//!   then have no `.mmap`, and the VFS answers `ENODEV`).
//!
//! Locking: the gate mutex is held across the driver's op, under the
//! caller's `mmap_lock`. The file's method mutex is never taken here: a
//! method holds it while it copies user memory (which takes the
//! `mmap_lock`), so taking it under the `mmap_lock` would invert the order.
//! Cleanup closes the gate first (waiting for a running mmap), without the
//! method mutex held.

use crate::device::Device;
use crate::driver::Driver;
use crate::mm::Umaps;
use crate::verbs::Ucontext;
use kernel::mm::virt::VmaNew;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

enum Gate<D: Driver> {
    /// No GET_CONTEXT yet.
    NoContext,
    Live(Arc<Ucontext<D>>),
    /// Closed or disassociated.
    Dead,
}

/// The mmap state of one open file (upstream `ufile->umaps`, `umap_lock`,
/// and the `hw_destroy_rwsem` read side of `ib_uverbs_mmap()`).
#[pin_data]
pub(crate) struct FileMmap<D: Driver> {
    #[pin]
    gate: Mutex<Gate<D>>,
    umaps: Arc<Umaps>,
}

impl<D: Driver> FileMmap<D> {
    pub(crate) fn new(umaps: Arc<Umaps>) -> impl PinInit<Self> {
        pin_init!(FileMmap {
            gate <- core_mutex!(Gate::NoContext, c"uverbs_file_mmap"),
            umaps,
        })
    }

    /// The file got its context (GET_CONTEXT committed).
    pub(crate) fn set_ucontext(&self, ctx: &Arc<Ucontext<D>>) {
        let mut g = self.gate.lock();
        if matches!(*g, Gate::NoContext) {
            *g = Gate::Live(ctx.clone());
        }
    }

    /// upstream `ib_uverbs_mmap()`.
    pub(crate) fn mmap(&self, dev: &Device<D>, vma: &VmaNew) -> Result {
        let op = dev.ops().mmap.ok_or(ENODEV)?;
        let g = self.gate.lock();
        let ctx = match &*g {
            Gate::NoContext => return Err(EINVAL),
            Gate::Dead => return Err(EIO),
            Gate::Live(ctx) => ctx,
        };
        self.umaps.mmap(vma, |uvma| op(ctx, uvma))
    }

    /// No new mappings: called first by cleanup (waits for a running mmap).
    pub(crate) fn close(&self) {
        *self.gate.lock() = Gate::Dead;
    }

    /// upstream `uverbs_user_mmap_disassociate()`: zap every mapping of the
    /// file (driver removal; at close there are none: VMAs hold the file).
    pub(crate) fn zap(&self) {
        self.umaps.disassociate();
    }
}
