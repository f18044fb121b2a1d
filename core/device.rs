// SPDX-License-Identifier: GPL-2.0

//! Devices: allocation, registration, the registration refcount,
//! unregistration and dealloc (upstream `_ib_alloc_device()`,
//! `ib_register_device()`, `ib_device_try_get()`/`ib_device_put()`,
//! `ib_unregister_device()`, `ib_unregister_device_queued()`,
//! `ib_dealloc_device()` in `drivers/infiniband/core/device.c`).
//!
//! Ownership: a [`Device<D>`] lives in an [`Arc`]; the driver, the registry
//! (from registration to dealloc) and every verbs object hold one. Memory
//! goes when the last one is dropped, so dealloc is separate from both
//! unregister and freeing, as upstream (`put_device()` ... `kfree_rcu`).
//!
//! The registration refcount is separate: it is 1 while registered (the
//! registration's own reference), [`Device::try_get`] takes more while it is
//! non-zero, and unregister drops the base reference and waits on a
//! [`Completion`] until every taken reference is back.
//!
//! Locks, outermost first: `reg` (upstream `unregistration_lock`), the
//! global client lock, the global registry lock, then the short per-device
//! `ident`, `info`, `clients` and `handlers` locks.

use crate::attr::{DeviceAttr, PortAttr, PortImmutable};
use crate::class::Decimal;
use crate::client::{self, ClientCtx};
use crate::driver::Driver;
use crate::event::{self, Event, HandlerEntry};
use crate::ops::Ops;
use crate::registry;
use crate::restrack::Restrack;
use crate::sysfs::{DriverGroup, Sysfs};
use core::ops::Deref;
use kernel::prelude::*;
use kernel::str::BStr;
use kernel::sync::aref::ARef;
use kernel::sync::atomic::{Atomic, Full, Relaxed};
use kernel::sync::{Arc, Completion, Mutex, UniqueArc};

/// Upstream `IB_DEVICE_NAME_MAX`: names are at most 63 bytes.
pub const IB_DEVICE_NAME_MAX: usize = 64;

/// A device name (upstream `ib_device.name`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DevName {
    buf: [u8; IB_DEVICE_NAME_MAX],
    len: usize,
}

impl DevName {
    /// The empty name of a device not yet registered.
    pub const EMPTY: DevName = DevName {
        buf: [0; IB_DEVICE_NAME_MAX],
        len: 0,
    };

    /// A name from bytes.
    ///
    /// # Errors
    ///
    /// `EINVAL` when empty or longer than 63 bytes.
    pub fn new(b: &[u8]) -> Result<DevName> {
        if b.is_empty() || b.len() >= IB_DEVICE_NAME_MAX {
            return Err(EINVAL);
        }
        let mut n = DevName::EMPTY;
        n.buf[..b.len()].copy_from_slice(b);
        n.len = b.len();
        Ok(n)
    }

    /// `prefix` `n` `suffix`, as `%d` formats it.
    ///
    /// # Errors
    ///
    /// `EINVAL` if the name would not fit `IB_DEVICE_NAME_MAX` with its NUL.
    pub(crate) fn format(prefix: &[u8], n: u32, suffix: &[u8]) -> Result<DevName> {
        let digits = Decimal::new(n);
        let d = digits.as_bytes();
        let len = prefix.len() + d.len() + suffix.len();
        if len >= IB_DEVICE_NAME_MAX {
            return Err(EINVAL);
        }
        let mut name = DevName::EMPTY;
        name.buf[..prefix.len()].copy_from_slice(prefix);
        name.buf[prefix.len()..prefix.len() + d.len()].copy_from_slice(d);
        name.buf[prefix.len() + d.len()..len].copy_from_slice(suffix);
        name.len = len;
        Ok(name)
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl kernel::fmt::Display for DevName {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        kernel::fmt::Display::fmt(BStr::from_bytes(self.as_bytes()), f)
    }
}

/// Where a device is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Phase {
    /// Allocated, not registered (or registration failed and unwound).
    Allocated = 0,
    /// Registered: visible to clients and lookups.
    Registered = 1,
    /// Unregister is waiting for references to come back.
    Unregistering = 2,
    /// Unregistered; waiting for dealloc.
    Unregistered = 3,
}

#[derive(Clone, Copy)]
struct Ident {
    name: DevName,
    index: Option<u32>,
}

/// Per-port data: immutable data and the cache (upstream
/// `struct ib_port_data` with `struct ib_port_cache`).
pub(crate) struct PortData {
    pub(crate) immutable: PortImmutable,
    pub(crate) cache: crate::cache::PortCache,
}

pub(crate) struct Info {
    pub(crate) attrs: DeviceAttr,
    pub(crate) ports: KVec<PortData>,
    /// upstream `ib_device.node_desc` (64 bytes, NUL-padded).
    node_desc: [u8; 64],
    /// upstream `ib_device.dev.parent`: the `device` link in sysfs.
    parent: Option<ARef<kernel::device::Device>>,
    /// upstream `ops.device_group`: the driver's sysfs attributes.
    driver_group: Option<&'static DriverGroup>,
}

/// The driver-independent part of a device (upstream the core fields of
/// `struct ib_device`). Clients and event handlers see this.
#[pin_data]
pub struct DeviceCore {
    #[pin]
    reg: Mutex<()>,
    phase: Atomic<i32>,
    #[pin]
    ident: Mutex<Ident>,
    refcount: Atomic<i32>,
    #[pin]
    unreg_completion: Completion,
    #[pin]
    unregistered: Completion,
    registered: Atomic<bool>,
    unreg_queued: Atomic<bool>,
    phys_port_cnt: u32,
    /// Completion vectors (upstream `ib_device.num_comp_vectors`; 1 until the driver says).
    num_comp_vectors: Atomic<u32>,
    #[pin]
    pub(crate) info: Mutex<Info>,
    #[pin]
    pub(crate) clients: Mutex<KVec<ClientCtx>>,
    #[pin]
    pub(crate) handlers: Mutex<KVec<HandlerEntry>>,
    next_handler: Atomic<i32>,
    #[pin]
    restrack: Restrack,
    #[pin]
    counters: crate::counters::Counters,
    #[pin]
    sysfs: Mutex<Option<Sysfs>>,
    /// The driver-typed entry points of the uverbs layer (set at
    /// registration when the driver has `alloc_ucontext`, cleared at
    /// unregistration; it holds the device, so it must not outlive it).
    ///
    /// The one client hook in the core, and why it is not a general
    /// extension point: clients see the device as the untyped [`DeviceCore`]
    /// (upstream: `struct ib_device` with its `ops` table of erased
    /// function pointers), and every client but uverbs needs nothing more
    /// (sysfs, nldev, the cache, the kernel consumers' clients read the
    /// core's data or call `Device<D>` themselves). uverbs alone creates
    /// objects of the driver for a file it does not know the driver of, so
    /// it needs code instantiated for the driver type `D` (`UFile<D>`), and
    /// only the generic [`Device::register`] sees `D`: a client-data slot
    /// filled by the client's `add` (upstream `ib_set_client_data()`) would
    /// be filled from non-generic code and cannot make that instantiation.
    /// A second client needing typed code would turn this into a list of
    /// typed handles, one per such client, made here the same way.
    #[pin]
    pub(crate) uverbs: Mutex<Option<Arc<dyn crate::uverbs::UverbsDriver>>>,
}

impl DeviceCore {
    fn new(phys_port_cnt: u32) -> impl PinInit<Self> {
        pin_init!(DeviceCore {
            reg <- core_mutex!((), c"ib_device.unregistration_lock"),
            phase: Atomic::new(Phase::Allocated as i32),
            ident <- core_mutex!(
                Ident {
                    name: DevName::EMPTY,
                    index: None,
                },
                c"ib_device.ident"
            ),
            refcount: Atomic::new(0),
            unreg_completion <- Completion::new(),
            unregistered <- Completion::new(),
            registered: Atomic::new(false),
            unreg_queued: Atomic::new(false),
            phys_port_cnt,
            num_comp_vectors: Atomic::new(1),
            info <- core_mutex!(
                Info {
                    attrs: DeviceAttr::default(),
                    ports: KVec::new(),
                    node_desc: [0; 64],
                    parent: None,
                    driver_group: None,
                },
                c"ib_device.cache_lock"
            ),
            clients <- core_mutex!(KVec::new(), c"ib_device.client_data_lock"),
            handlers <- core_mutex!(KVec::new(), c"ib_device.event_handler_lock"),
            next_handler: Atomic::new(0),
            restrack <- Restrack::new(),
            counters <- crate::counters::Counters::new(),
            sysfs <- core_mutex!(None, c"ib_device.sysfs"),
            uverbs <- core_mutex!(None, c"ib_device.uverbs"),
        })
    }

    /// The node description (upstream `ib_device.node_desc`), NUL-padded.
    pub fn node_desc(&self) -> [u8; 64] {
        self.info.lock().node_desc
    }

    /// Completion vectors (upstream `ib_device.num_comp_vectors`): a CQ names one of
    /// `0..num_comp_vectors()`; what uverbs GET_CONTEXT reports.
    pub fn num_comp_vectors(&self) -> u32 {
        self.num_comp_vectors.load(Relaxed)
    }

    /// Sets the number of completion vectors (at least 1), before registration (upstream
    /// drivers set `ib_dev.num_comp_vectors` before `ib_register_device()`).
    pub fn set_num_comp_vectors(&self, n: u32) {
        self.num_comp_vectors.store(n.max(1), Relaxed);
    }

    /// Sets the node description (at most 64 bytes are kept).
    pub fn set_node_desc(&self, desc: &[u8]) {
        let mut d = [0u8; 64];
        let n = desc.len().min(64);
        d[..n].copy_from_slice(&desc[..n]);
        self.info.lock().node_desc = d;
    }

    /// Sets the parent device (upstream `ib_dev->dev.parent`, the sysfs `device` link);
    /// effective at the next registration.
    pub fn set_parent(&self, parent: &kernel::device::Device) {
        self.info.lock().parent = Some(ARef::from(parent));
    }

    /// Adds a driver attribute group to the device's sysfs directory (upstream
    /// `rdma_set_device_sysfs_group()`); effective at the next registration.
    pub fn set_sysfs_group(&self, group: &'static DriverGroup) {
        self.info.lock().driver_group = Some(group);
    }

    pub(crate) fn sysfs_setup(
        &self,
    ) -> (
        Option<ARef<kernel::device::Device>>,
        Option<&'static DriverGroup>,
    ) {
        let info = self.info.lock();
        (info.parent.clone(), info.driver_group)
    }

    /// The device name (empty before registration).
    pub fn name(&self) -> DevName {
        self.ident.lock().name
    }

    /// Renames a registered device (upstream `ib_device_rename()`, from nldev `SET` with
    /// `DEV_NAME`): the same name is accepted with nothing done, a name another device has is
    /// `EEXIST`; otherwise the sysfs directory (`device_rename()`), the registry and the name
    /// every later lookup, nldev reply and `uverbsN/ibdev` sees change together. Returns
    /// whether the name changed (upstream then notifies `RDMA_RENAME_EVENT`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for an empty name or one of 64 bytes or more, or a device not registered;
    /// `EEXIST`; `device_rename()`'s errno. Nothing changes on error.
    pub fn rename(&self, new: &[u8]) -> Result<bool> {
        let name = DevName::new(new)?;
        let index = self.ident.lock().index.ok_or(EINVAL)?;
        registry::rename(index, name, || {
            let c = kernel::str::CString::try_from_fmt(fmt!("{}", name))?;
            {
                let s = self.sysfs.lock();
                s.as_ref().ok_or(EINVAL)?.rename(&c)?;
            }
            self.ident.lock().name = name;
            Ok(())
        })
    }

    /// The device index (upstream `ib_device.index`); `u32::MAX` before
    /// registration.
    pub fn index(&self) -> u32 {
        self.ident.lock().index.unwrap_or(u32::MAX)
    }

    /// The phase of the device's life.
    pub fn phase(&self) -> Phase {
        match self.phase.load(Relaxed) {
            0 => Phase::Allocated,
            1 => Phase::Registered,
            2 => Phase::Unregistering,
            _ => Phase::Unregistered,
        }
    }

    fn set_phase(&self, p: Phase) {
        self.phase.store(p as i32, kernel::sync::atomic::Release);
    }

    /// Whether the device is registered and visible (upstream the
    /// `DEVICE_REGISTERED` mark).
    pub fn is_registered(&self) -> bool {
        self.registered.load(Relaxed)
    }

    pub(crate) fn set_registered(&self, v: bool) {
        self.registered.store(v, kernel::sync::atomic::Release);
    }

    /// Number of physical ports (upstream `phys_port_cnt`).
    pub fn phys_port_cnt(&self) -> u32 {
        self.phys_port_cnt
    }

    /// The registration refcount (upstream `ib_device.refcount`): 0 when not
    /// registered, 1 when registered and unused.
    pub fn refcount(&self) -> i32 {
        self.refcount.load(Relaxed)
    }

    /// The device's resource tracker.
    pub fn restrack(&self) -> &Restrack {
        &self.restrack
    }

    /// The device's per-QP counters (upstream `port_data[].port_counter`).
    pub fn counters(&self) -> &crate::counters::Counters {
        &self.counters
    }

    /// Device attributes read at registration (upstream `ib_device.attrs`).
    pub fn attrs(&self) -> DeviceAttr {
        self.info.lock().attrs
    }

    /// The immutable data of `port`.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a port the device does not have.
    pub fn port_immutable(&self, port: u32) -> Result<PortImmutable> {
        let info = self.info.lock();
        Ok(crate::cache::port(&info, port)?.immutable)
    }

    /// Number of clients attached to the device.
    pub fn client_count(&self) -> usize {
        self.clients.lock().len()
    }

    pub(crate) fn next_handler_id(&self) -> u32 {
        self.next_handler.fetch_add(1, Relaxed) as u32
    }

    /// Takes a registration reference if the count is not zero (upstream
    /// `ib_device_try_get()`: `refcount_inc_not_zero`).
    fn try_get_raw(&self) -> bool {
        let mut cur = self.refcount.load(Relaxed);
        loop {
            if cur <= 0 {
                return false;
            }
            match self.refcount.cmpxchg(cur, cur + 1, Full) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Drops a registration reference; the last one wakes unregister
    /// (upstream `ib_device_put()`).
    fn put_raw(&self) {
        if self.refcount.fetch_sub(1, Full) == 1 {
            self.unreg_completion.complete_all();
        }
    }

    /// Waits until an unregister (for example a queued one) has finished.
    pub fn wait_unregistered(&self) {
        self.unregistered.wait_for_completion();
    }
}

/// What the registry and clients hold: any device, whatever its driver.
pub trait IbDevice: Send + Sync + 'static {
    /// The driver-independent part.
    fn core(&self) -> &DeviceCore;

    /// Unregisters the device (see [`Device::unregister`]).
    fn unregister(&self);

    /// The device as `Any`, to get back to a `Device<D>` (driver sysfs attributes).
    fn as_any(&self) -> &dyn core::any::Any;

    /// Queries a port from the driver (upstream `ib_query_port()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port, the driver's error.
    fn query_port_attr(&self, port: u32) -> Result<PortAttr>;

    /// Reports an event (see [`Device::dispatch_event`]); process context.
    fn dispatch(&self, ev: Event);

    /// Writes the firmware version string (upstream `ib_get_device_fw_str()`) into `buf` and
    /// returns its length; 0 when the driver has no `get_dev_fw_str`.
    fn fw_str(&self, buf: &mut [u8]) -> usize;

    /// The names of port `port`'s hardware counters; `None` without
    /// `hw_port_stat_names`/`get_hw_stats` or for a bad port.
    fn hw_stat_names(&self, port: u32) -> Option<&'static [&'static CStr]>;

    /// Reads port `port`'s hardware counters (upstream `rdma_counter_get_hw_stats()` →
    /// `ops.get_hw_stats`) into `out`; returns how many were written.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without the ops, `EINVAL` for a bad port, the driver's error.
    fn hw_stats(&self, port: u32, out: &mut [u64]) -> Result<usize>;

    /// upstream `rdma_counter_set_auto_mode()` (`mask` 0: auto off).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without port statistics, `EINVAL` for a mask bit beyond type and pid,
    /// `EBUSY` for auto mode while counters exist.
    fn counter_set_auto_mode(&self, port: u32, mask: u32, opcnt: bool) -> Result;

    /// upstream `rdma_counter_get_mode()`: the port's mode, auto mask and op-counter flag.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    fn counter_get_mode(&self, port: u32) -> Result<(u32, u32, bool)>;

    /// upstream `rdma_counter_bind_qpn()`.
    ///
    /// # Errors
    ///
    /// `EINVAL` in auto mode, for a bound QP or another owner kind or port; `ENOENT` for an
    /// unknown QP or counter; the driver's error.
    fn counter_bind_qpn(&self, port: u32, qpn: u32, id: u32) -> Result;

    /// upstream `rdma_counter_bind_qpn_alloc()`: the new counter's id.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port, in auto mode or a QP of another port; `EOPNOTSUPP` without
    /// port statistics; `ENOENT` for an unknown QP; `ENOMEM` where upstream's
    /// `alloc_and_bind()` fails (no counter ops, a bound QP, the driver's error).
    fn counter_bind_qpn_alloc(&self, port: u32, qpn: u32) -> Result<u32>;

    /// upstream `rdma_counter_unbind_qpn()`.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port, a QP of another port, not bound to `id` or a port not in
    /// manual mode; `ENOENT` for an unknown QP; the driver's error.
    fn counter_unbind_qpn(&self, port: u32, qpn: u32, id: u32) -> Result;

    /// The counters (of `port`, or the one with `id`) with fresh values.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    fn counter_dump(
        &self,
        port: Option<u32>,
        id: Option<u32>,
    ) -> Result<KVec<crate::counters::CounterInfo>>;
}

/// A registration reference (upstream `ib_device_try_get()` paired with
/// `ib_device_put()` on drop). While one exists, unregister waits.
pub struct DeviceRef {
    dev: Arc<dyn IbDevice>,
}

impl DeviceRef {
    /// Takes a registration reference on `dev`; `None` once unregister has
    /// dropped the count to zero (or before registration).
    pub fn try_get(dev: Arc<dyn IbDevice>) -> Option<DeviceRef> {
        if dev.core().try_get_raw() {
            Some(DeviceRef { dev })
        } else {
            None
        }
    }

    /// The device.
    pub fn device(&self) -> &Arc<dyn IbDevice> {
        &self.dev
    }
}

impl Deref for DeviceRef {
    type Target = DeviceCore;
    fn deref(&self) -> &DeviceCore {
        self.dev.core()
    }
}

impl Drop for DeviceRef {
    fn drop(&mut self) {
        self.dev.core().put_raw();
    }
}

/// An RDMA device of driver `D`: the core part, the assembled ops and the
/// driver's private data in one allocation (upstream `struct mlx5_ib_dev`
/// embedding `struct ib_device`).
#[pin_data]
pub struct Device<D: Driver> {
    #[pin]
    core: DeviceCore,
    ops: Ops<D>,
    #[pin]
    data: D::DevData,
}

impl<D: Driver> Deref for Device<D> {
    type Target = DeviceCore;
    fn deref(&self) -> &DeviceCore {
        &self.core
    }
}

impl<D: Driver> IbDevice for Device<D> {
    fn core(&self) -> &DeviceCore {
        &self.core
    }

    fn unregister(&self) {
        Device::unregister(self)
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }

    fn query_port_attr(&self, port: u32) -> Result<PortAttr> {
        Device::query_port(self, port)
    }

    fn dispatch(&self, ev: Event) {
        self.dispatch_event(ev)
    }

    fn hw_stat_names(&self, port: u32) -> Option<&'static [&'static CStr]> {
        self.ops.get_hw_stats?;
        let f = self.ops.hw_port_stat_names?;
        if port == 0 || port > self.core.phys_port_cnt() {
            return None;
        }
        f(self, port)
    }

    fn hw_stats(&self, port: u32, out: &mut [u64]) -> Result<usize> {
        let f = self.ops.get_hw_stats.ok_or(EOPNOTSUPP)?;
        if port == 0 || port > self.core.phys_port_cnt() {
            return Err(EINVAL);
        }
        let n = f(self, port, out)?;
        // upstream print_hw_stat(), stat_get_doit_default_counter(): the port's value plus
        // rdma_counter_get_hwstat_value() (the bound counters and the released ones).
        self.counter_add_port_sums(port, out, n);
        Ok(n)
    }

    fn counter_set_auto_mode(&self, port: u32, mask: u32, opcnt: bool) -> Result {
        self.counter_set_auto_mode_impl(port, mask, opcnt)
    }

    fn counter_get_mode(&self, port: u32) -> Result<(u32, u32, bool)> {
        self.counter_get_mode_impl(port)
    }

    fn counter_bind_qpn(&self, port: u32, qpn: u32, id: u32) -> Result {
        self.counter_bind_qpn_impl(port, qpn, id)
    }

    fn counter_bind_qpn_alloc(&self, port: u32, qpn: u32) -> Result<u32> {
        self.counter_bind_qpn_alloc_impl(port, qpn)
    }

    fn counter_unbind_qpn(&self, port: u32, qpn: u32, id: u32) -> Result {
        self.counter_unbind_qpn_impl(port, qpn, id)
    }

    fn counter_dump(
        &self,
        port: Option<u32>,
        id: Option<u32>,
    ) -> Result<KVec<crate::counters::CounterInfo>> {
        self.counter_dump_impl(port, id)
    }

    fn fw_str(&self, buf: &mut [u8]) -> usize {
        let Some(f) = self.ops.get_dev_fw_str else {
            return 0;
        };
        match f(self) {
            Ok(s) => {
                let b = s.to_bytes();
                let n = b.len().min(buf.len());
                buf[..n].copy_from_slice(&b[..n]);
                n
            }
            Err(_) => 0,
        }
    }
}

impl<D: Driver> Device<D> {
    /// Allocates a device with its driver data in the same allocation
    /// (upstream `_ib_alloc_device()`): the registration refcount is 0, the
    /// resource tracker empty, nothing is visible yet. `ops` is the table
    /// assembled from the driver's partial tables ([`Ops::assemble`]).
    ///
    /// # Errors
    ///
    /// `ENOMEM`, or the error of `data`.
    pub fn alloc(
        ops: &Ops<D>,
        phys_port_cnt: u32,
        data: impl PinInit<D::DevData, Error>,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Device {
                core <- DeviceCore::new(phys_port_cnt),
                ops: *ops,
                data <- data,
            }),
            GFP_KERNEL,
        )
    }

    /// Allocates a device as [`Device::alloc`] does, held by the caller alone (upstream
    /// `ib_alloc_device()` before `ib_register_device()`): until it is shared (`Arc::from`), the
    /// driver fills its data ([`Device::data_mut`]) and sets more ops ([`Device::ops_mut`],
    /// upstream `ib_set_device_ops()`), as upstream's probe stages do.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, or the error of `data`.
    pub fn alloc_unique(
        ops: &Ops<D>,
        phys_port_cnt: u32,
        data: impl PinInit<D::DevData, Error>,
    ) -> Result<Pin<UniqueArc<Self>>> {
        UniqueArc::try_pin_init(
            try_pin_init!(Device {
                core <- DeviceCore::new(phys_port_cnt),
                ops: *ops,
                data <- data,
            }),
            GFP_KERNEL,
        )
    }

    /// The driver's private data.
    pub fn data(&self) -> &D::DevData {
        &self.data
    }

    /// The driver's private data of a device nobody else holds yet ([`Device::alloc_unique`]).
    pub fn data_mut(self: Pin<&mut Self>) -> &mut D::DevData
    where
        D::DevData: Unpin,
    {
        self.project().data.get_mut()
    }

    /// The op table of a device nobody else holds yet: upstream `ib_set_device_ops()` before
    /// registration ([`Ops::set`]: the first setter of an op wins).
    pub fn ops_mut(self: Pin<&mut Self>) -> &mut Ops<D> {
        self.project().ops
    }

    /// The assembled op table.
    pub fn ops(&self) -> &Ops<D> {
        &self.ops
    }

    /// Registers the device (upstream `ib_register_device()`), in
    /// upstream's order: assign the name (`name` may hold one `%d`) and
    /// index; check the mandatory ops; read every port's immutable data and
    /// the device attributes; fill the port cache; mark the device
    /// registered, call `enable_driver` and add the clients; drop the
    /// registering thread's reference. Any failure unwinds every step
    /// before it: the name is free again and the device can be deallocated
    /// (or registered again).
    ///
    /// # Errors
    ///
    /// `EINVAL` when already registered, for a missing mandatory op (named
    /// in the log), no ports, or a bad name; `ENFILE` when the name is
    /// taken; `ENOMEM`; any error of the driver's ops.
    pub fn register(this: &Arc<Self>, name: &CStr) -> Result {
        let _unreg = this.core.reg.lock();
        if this.core.phase() != Phase::Allocated {
            return Err(EINVAL);
        }
        // upstream: assign_name()
        let (dev_name, index) = registry::assign(name, this.clone())?;
        *this.core.ident.lock() = Ident {
            name: dev_name,
            index: Some(index),
        };
        if let Err(e) = Self::setup_and_enable(this) {
            pr_err!("ib_core_rs: {}: registration failed: {:?}\n", dev_name, e);
            let sysfs = this.core.sysfs.lock().take();
            drop(sysfs);
            {
                let mut info = this.core.info.lock();
                info.ports.clear();
                info.attrs = DeviceAttr::default();
            }
            *this.core.ident.lock() = Ident {
                name: DevName::EMPTY,
                index: None,
            };
            registry::erase(index);
            return Err(e);
        }
        this.core.set_phase(Phase::Registered);
        // upstream: kobject_uevent(KOBJ_ADD) once the clients are added.
        if let Some(s) = this.core.sysfs.lock().as_ref() {
            s.announce();
        }
        // upstream ib_device_notify_register(): RDMA_REGISTER_EVENT after KOBJ_ADD.
        crate::nldev::notify(&this.core, crate::nldev::NotifyEvent::Register);
        // upstream: ib_device_put() of the registering thread's reference.
        this.core.put_raw();
        Ok(())
    }

    fn setup_and_enable(this: &Arc<Self>) -> Result {
        let name = this.core.name();
        // upstream: setup_device() -> ib_device_check_mandatory()
        this.ops.check_mandatory().map_err(|op| {
            pr_err!(
                "ib_core_rs: {}: driver lacks mandatory op {}\n",
                name,
                op.name()
            );
            EINVAL
        })?;
        // upstream: setup_port_data() (alloc_port_data + get_port_immutable)
        if this.core.phys_port_cnt == 0 {
            pr_err!("ib_core_rs: {}: device has no ports\n", name);
            return Err(EINVAL);
        }
        let get_imm = this.ops.get_port_immutable.ok_or(EINVAL)?;
        let mut ports = KVec::with_capacity(this.core.phys_port_cnt as usize, GFP_KERNEL)?;
        for port in 1..=this.core.phys_port_cnt {
            let immutable = get_imm(this, port).inspect_err(|e| {
                pr_err!(
                    "ib_core_rs: {}: get_port_immutable({}) failed: {:?}\n",
                    name,
                    port,
                    e
                )
            })?;
            ports.push(
                PortData {
                    immutable,
                    cache: crate::cache::PortCache::new(),
                },
                GFP_KERNEL,
            )?;
        }
        // upstream: setup_device() -> ops.query_device
        let query_device = this.ops.query_device.ok_or(EINVAL)?;
        let attrs = query_device(this)
            .inspect_err(|e| pr_err!("ib_core_rs: {}: query_device failed: {:?}\n", name, e))?;
        {
            let mut info = this.core.info.lock();
            info.ports = ports;
            info.attrs = attrs;
        }
        // upstream: ib_cache_setup_one()
        for port in 1..=this.core.phys_port_cnt {
            Self::cache_update(this, port)?;
        }
        // upstream: ib_setup_device_attrs(), device_add() (uevent suppressed),
        // ib_setup_port_attrs().
        let sysfs = Sysfs::add(this.clone())
            .inspect_err(|e| pr_err!("ib_core_rs: {}: sysfs setup failed: {:?}\n", name, e))?;
        *this.core.sysfs.lock() = Some(sysfs);
        // upstream: enable_device_and_get(): refcount 2 (the registration
        // and this thread), mark registered, enable_driver, add clients.
        this.core.refcount.store(2, kernel::sync::atomic::Release);
        if this.ops.alloc_ucontext.is_some() {
            *this.core.uverbs.lock() = Some(crate::uverbs::driver_handle(this)?);
        }
        let enable = this.ops.enable_driver;
        let r = client::enable_device(&**this, || match enable {
            Some(f) => f(this),
            None => Ok(()),
        });
        if r.is_err() {
            this.core.refcount.store(0, kernel::sync::atomic::Release);
            *this.core.uverbs.lock() = None;
        }
        r
    }

    /// Re-reads one port's cached data from the driver (upstream
    /// `ib_cache_update()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port, `ENOMEM`, any error of the driver's
    /// `query_port`, `query_gid`, `query_pkey`. The old cache stays then.
    pub fn cache_update(this: &Self, port: u32) -> Result {
        crate::cache::update(this, port)
    }

    /// Reports an asynchronous event (upstream `ib_dispatch_event()`):
    /// refreshes the port cache for port events, then calls the device's
    /// handlers and its clients.
    pub fn dispatch_event(&self, ev: Event) {
        if ev.kind.updates_cache() && ev.port != 0 {
            if let Err(e) = crate::cache::update(self, ev.port) {
                pr_err!(
                    "ib_core_rs: {}: cache update for port {} failed: {:?}\n",
                    self.core.name(),
                    ev.port,
                    e
                );
            }
        }
        event::deliver(&self.core, &ev);
    }

    /// Reports an event from any context, atomic included (upstream mlx5_ib queues its
    /// `ib_dispatch_event()` calls on a workqueue: mlx5_core's notifier, which reports port
    /// changes and fatal errors, runs in atomic context). [`Device::dispatch_event`] runs
    /// from the system workqueue (port events refresh the port cache first); the work item
    /// holds a registration reference, so [`Device::unregister`] waits for it. Nothing is
    /// queued for a device that is not registered.
    ///
    /// # Errors
    ///
    /// `ENOMEM` when the work item cannot be allocated.
    pub fn dispatch_event_queued(this: &Arc<Self>, ev: Event) -> Result {
        queue_device_event(this.clone(), ev)
    }

    /// Takes a registration reference (upstream `ib_device_try_get()`).
    pub fn try_get(this: &Arc<Self>) -> Option<DeviceRef> {
        DeviceRef::try_get(this.clone())
    }

    /// Unregisters the device and waits until it is no longer in use
    /// (upstream `ib_unregister_device()`): clears the registered mark,
    /// removes the clients newest first, drops the registration's reference
    /// and waits until every reference from [`Device::try_get`] is back.
    /// Does nothing if the device is not registered. The device stays
    /// allocated (and its name taken) until [`Device::dealloc`].
    pub fn unregister(&self) {
        let unreg = self.core.reg.lock();
        if self.core.phase() != Phase::Registered {
            return;
        }
        self.core.set_phase(Phase::Unregistering);
        // upstream: disable_device(), then rdma_nl_notify_event(RDMA_UNREGISTER_EVENT).
        client::disable_device(&self.core);
        crate::nldev::notify(&self.core, crate::nldev::NotifyEvent::Unregister);
        // The uverbs client is gone: break the handle's reference cycle.
        drop(self.core.uverbs.lock().take());
        self.core.put_raw();
        self.core.unreg_completion.wait_for_completion();
        // upstream: ib_free_port_attrs(), device_del(). The class device holds a reference
        // on the device, dropped here.
        let sysfs = self.core.sysfs.lock().take();
        drop(sysfs);
        self.core.set_phase(Phase::Unregistered);
        drop(unreg);
        self.core.unregistered.complete_all();
    }

    /// Unregisters from a workqueue, for callers that must not block
    /// (upstream `ib_unregister_device_queued()`). A second call while one
    /// is queued does nothing. [`DeviceCore::wait_unregistered`] waits for
    /// it.
    ///
    /// # Errors
    ///
    /// `ENOMEM` when the work item cannot be allocated.
    pub fn unregister_queued(this: &Arc<Self>) -> Result {
        queue_unregister(this.clone())
    }

    /// Deallocates the device (upstream `ib_dealloc_device()`): unregisters
    /// it if the driver has not, calls the driver's `dealloc_driver`,
    /// removes it from the registry (its name is free again), reports every
    /// resource still tracked with its owner, and drops the caller's
    /// reference. Memory is freed when the last reference (a leftover
    /// object's, or a client's) goes. Returns the number of leftovers.
    pub fn dealloc(this: Arc<Self>) -> usize {
        Device::unregister(&this);
        // Queued events and a queued unregistration hold references to the device until their
        // work item returns: wait for them, so that the caller's reference is the one that
        // frees the device (upstream: `ib_dealloc_device()` after the driver's queued work is
        // done). Never called from the core's work items.
        crate::wq::flush();
        if let Some(f) = this.ops.dealloc_driver {
            f(&this);
        }
        let ident = *this.core.ident.lock();
        if let Some(index) = ident.index {
            registry::erase(index);
        }
        let refs = this.core.refcount();
        if refs != 0 {
            pr_err!(
                "ib_core_rs: {}: dealloc with registration refcount {}\n",
                ident.name,
                refs
            );
        }
        this.core.restrack.report_leftovers(ident.name.as_bytes())
    }

    /// Queries the driver for the device attributes (not cached).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `query_device`; the driver's error.
    pub fn query_device(this: &Self) -> Result<DeviceAttr> {
        (this.ops.query_device.ok_or(EOPNOTSUPP)?)(this)
    }

    /// Queries the driver for a port's attributes (upstream
    /// `ib_query_port()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a port the device does not have, `EOPNOTSUPP`, the
    /// driver's error.
    pub fn query_port(this: &Self, port: u32) -> Result<PortAttr> {
        if port == 0 || port > this.core.phys_port_cnt {
            return Err(EINVAL);
        }
        (this.ops.query_port.ok_or(EOPNOTSUPP)?)(this, port)
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
                pr_warn!(
                    "ib_core_rs: {}: event {} on port {} dropped: no such port\n",
                    r.device().core().name(),
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

/// Non-generic so the work item's code lives in this module, whatever
/// driver module queued it.
fn queue_unregister(dev: Arc<dyn IbDevice>) -> Result {
    if dev.core().unreg_queued.xchg(true, Full) {
        return Ok(());
    }
    let core_ptr_dev = dev.clone();
    crate::wq::queue()
        .try_spawn(GFP_KERNEL, move || dev.unregister())
        .map_err(|_| {
            core_ptr_dev.core().unreg_queued.store(false, Relaxed);
            ENOMEM
        })
}
