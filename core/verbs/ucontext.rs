// SPDX-License-Identifier: GPL-2.0

//! User contexts (upstream `struct ib_ucontext`, `ib_alloc_ucontext()` and
//! `ops.alloc_ucontext`/`ops.dealloc_ucontext`, called from uverbs'
//! `ib_init_ucontext()` and `ufile_destroy_ucontext()`).
//!
//! A ucontext is what one open `/dev/infiniband/uverbsN` file gets from the
//! driver at GET_CONTEXT: the driver's per-process state (mlx5: UARs,
//! transport domain). It is restrack-tracked (`RDMA_RESTRACK_CTX`) with the
//! user task that created it as owner.
//!
//! The driver's private part is a `KBox<dyn Any + Send + Sync>`, not a
//! `Driver::UcontextData` associated type: adding an associated type to
//! [`Driver`] would break every driver implementing it today. A driver
//! reaches its data with [`Ucontext::data`] (a checked downcast).

use super::{Liveness, MmapRegistry};
use crate::device::Device;
use crate::driver::Driver;
use crate::restrack::{Owner, ResType};
use core::any::Any;
use kernel::prelude::*;
use kernel::sync::{Arc, UniqueArc};

/// The driver's private part of a ucontext (`None`: the driver keeps none).
pub type UcontextPriv = Option<KBox<dyn Any + Send + Sync>>;

/// A verb called from user space (upstream: the `udata` argument of a
/// driver op together with `rdma_udata_to_drv_context()`): the calling
/// file's user context and the driver-data buffers of the command. Kernel
/// consumers pass `None` where an op takes `Option<&mut UserCtx>`.
pub struct UserCtx<'a, 'b, D: Driver> {
    ctx: &'a Arc<Ucontext<D>>,
    udata: &'a mut Udata<'b>,
}

impl<'a, 'b, D: Driver> UserCtx<'a, 'b, D> {
    /// The user context `ctx` with the command's driver data `udata`.
    pub fn new(ctx: &'a Arc<Ucontext<D>>, udata: &'a mut Udata<'b>) -> Self {
        UserCtx { ctx, udata }
    }

    /// The calling file's user context.
    pub fn ctx(&self) -> &Arc<Ucontext<D>> {
        self.ctx
    }

    /// The command's driver data.
    pub fn udata(&mut self) -> &mut Udata<'b> {
        self.udata
    }
}

/// The driver-data buffers of one command (upstream `struct ib_udata`),
/// already copied: the uverbs layer reads the user's request into `input`
/// before the op and writes what the driver put into `output` back after it.
pub struct Udata<'a> {
    input: &'a [u8],
    output: &'a mut [u8],
    written: usize,
}

impl<'a> Udata<'a> {
    /// Buffers over a request and a (zeroed) response of the user's length.
    pub fn new(input: &'a [u8], output: &'a mut [u8]) -> Self {
        Udata {
            input,
            output,
            written: 0,
        }
    }

    /// No driver data in either direction (kernel callers).
    pub fn empty() -> Udata<'static> {
        Udata {
            input: &[],
            output: &mut [],
            written: 0,
        }
    }

    /// The driver's request bytes (upstream `udata->inbuf`, `inlen`).
    pub fn input(&self) -> &[u8] {
        self.input
    }

    /// The length of the user's response buffer (upstream `udata->outlen`).
    pub fn outlen(&self) -> usize {
        self.output.len()
    }

    /// Writes the driver's response: `min(src.len(), outlen)` bytes (upstream
    /// drivers call `ib_copy_to_udata(udata, &resp, min(udata->outlen,
    /// sizeof(resp)))`).
    pub fn copy_to(&mut self, src: &[u8]) {
        let n = src.len().min(self.output.len());
        if let (Some(d), Some(s)) = (self.output.get_mut(..n), src.get(..n)) {
            d.copy_from_slice(s);
        }
        self.written = self.written.max(n);
    }

    /// How many response bytes the driver wrote.
    pub fn written(&self) -> usize {
        self.written
    }
}

/// A user context (upstream `struct ib_ucontext` with the driver's part).
pub struct Ucontext<D: Driver> {
    dev: Arc<Device<D>>,
    res_id: u32,
    owner: Owner,
    live: Liveness,
    mmap: Arc<MmapRegistry>,
    drv: UcontextPriv,
}

impl<D: Driver> Ucontext<D> {
    /// Allocates a user context for `owner` (upstream `ib_init_ucontext()`:
    /// `rdma_restrack_new(RDMA_RESTRACK_CTX)`, `ops.alloc_ucontext(ucontext,
    /// udata)`, `rdma_restrack_add()`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `alloc_ucontext`, `ENOMEM`, the driver's error
    /// (nothing is left tracked then).
    pub fn alloc(dev: &Arc<Device<D>>, owner: Owner, udata: &mut Udata<'_>) -> Result<Arc<Self>> {
        let op = dev.ops().alloc_ucontext.ok_or(EOPNOTSUPP)?;
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        let mmap = MmapRegistry::new()?;
        let res_id = dev.restrack().add(ResType::Ctx, owner)?;
        let drv = op(dev, udata).inspect_err(|_| dev.restrack().del(ResType::Ctx, res_id))?;
        Ok(slot
            .write(Ucontext {
                dev: dev.clone(),
                res_id,
                owner,
                live: Liveness::new(),
                mmap,
                drv,
            })
            .into())
    }

    /// Deallocates the context (upstream `ufile_destroy_ucontext()`:
    /// `ops.dealloc_ucontext`, `rdma_restrack_del()`). Idempotent; also
    /// done when the last reference is dropped.
    pub fn dealloc(&self) {
        if self.live.claim() {
            if let Some(f) = self.dev.ops().dealloc_ucontext {
                f(self);
            }
            // upstream: WARN_ON(!xa_empty(&ucontext->mmap_xa)) — the driver
            // removes its entries, and mappings are gone (closed, or zapped
            // at disassociate) by now.
            let left = self.mmap.count();
            if left != 0 {
                ibdev_warn!(
                    self.dev.name(),
                    "ucontext freed with {} mmap entries left\n",
                    left
                );
            }
            self.dev.restrack().del(ResType::Ctx, self.res_id);
        }
    }

    /// The context's mmap entries (upstream `ucontext->mmap_xa` and the
    /// `rdma_user_mmap_entry_*()` calls on it).
    pub fn mmap_entries(&self) -> &Arc<MmapRegistry> {
        &self.mmap
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device<D>> {
        &self.dev
    }

    /// The driver's private data, if it is a `T`.
    pub fn data<T: Any>(&self) -> Option<&T> {
        self.drv.as_deref().and_then(|d| d.downcast_ref::<T>())
    }

    /// The owner (the task that called GET_CONTEXT).
    pub fn owner(&self) -> Owner {
        self.owner
    }

    /// The restrack ID.
    pub fn res_id(&self) -> u32 {
        self.res_id
    }
}

impl<D: Driver> Drop for Ucontext<D> {
    fn drop(&mut self) {
        self.dealloc();
    }
}
