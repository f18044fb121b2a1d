// SPDX-License-Identifier: GPL-2.0

//! The device as the core's subsystems and its clients see it, whatever its driver (upstream
//! the driver-independent part of `struct ib_device` in `include/rdma/ib_verbs.h`, with the
//! callbacks it holds: `struct ib_client`, `struct ib_event_handler`, `struct ib_event`).
//!
//! These are the shared types of the core: [`DeviceCore`] (names, phase, the registration
//! refcount, the cached attributes and ports, the client and handler lists), [`IbDevice`] (a
//! device of any driver), [`DeviceRef`] (a registration reference), and the callback traits
//! whose objects a device holds. This file imports none of the subsystems built on it
//! (registry, clients, events, cache, sysfs, nldev, registration): they import it.
//!
//! Locks, outermost first: `reg` (upstream `unregistration_lock`), the global client lock,
//! the global registry lock, then the short per-device `ident`, `info`, `clients` and
//! `handlers` locks.

use crate::attr::{DeviceAttr, Gid, GidType, PortAttr, PortImmutable, PortState};
use crate::class::Decimal;
use crate::counters::{CounterInfo, Counters};
use crate::net_notify::NetDevRef;
use crate::restrack::Restrack;
use core::ops::Deref;
use kernel::prelude::*;
use kernel::str::BStr;
use kernel::sync::aref::ARef;
use kernel::sync::atomic::{Atomic, Full, Relaxed};
use kernel::sync::{Arc, ArcBorrow, Completion, Mutex};

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
pub(crate) struct Ident {
    pub(crate) name: DevName,
    pub(crate) index: Option<u32>,
}

/// Per-port data: immutable data and the cache (upstream
/// `struct ib_port_data` with `struct ib_port_cache`).
pub(crate) struct PortData {
    pub(crate) immutable: PortImmutable,
    pub(crate) cache: PortCache,
}

pub(crate) struct Info {
    pub(crate) attrs: DeviceAttr,
    pub(crate) ports: KVec<PortData>,
    /// upstream `ib_device.node_desc` (64 bytes, NUL-padded).
    node_desc: [u8; 64],
    /// upstream `ib_device.dev.parent`: the `device` link in sysfs.
    parent: Option<ARef<kernel::device::Device>>,
}

/// The data of `port`, checking it (upstream `rdma_is_port_valid()`).
///
/// # Errors
///
/// `EINVAL` for port 0 or a port beyond the device's.
pub(crate) fn port_data(info: &Info, port: u32) -> Result<&PortData> {
    if port == 0 {
        return Err(EINVAL);
    }
    info.ports.get(port as usize - 1).ok_or(EINVAL)
}

/// The cached data of one port (upstream `struct ib_port_cache` plus the
/// GID table).
pub(crate) struct PortCache {
    pub(crate) gids: KVec<Gid>,
    pub(crate) gid_types: KVec<GidType>,
    /// The netdev of each GID of a core-owned RoCE table (upstream `ib_gid_attr.ndev`), as
    /// long as `gids`; empty for a table read from the driver.
    pub(crate) gid_ndevs: KVec<Option<NetDevRef>>,
    /// Whether the core owns the GID table (upstream `rdma_cap_roce_gid_table()`: a RoCE port
    /// whose driver has `add_gid` and `del_gid`; `roce_gid.rs` fills it from netdevs).
    pub(crate) roce_table: bool,
    /// upstream `ib_gid_table.default_gid_indices`: the indexes reserved for default GIDs.
    pub(crate) default_gid_mask: u64,
    pub(crate) pkeys: KVec<u16>,
    pub(crate) state: PortState,
    pub(crate) lmc: u8,
    pub(crate) subnet_prefix: u64,
    /// The base LID, the SM's LID and SL (upstream reads these with `ib_query_port()`; kept
    /// here so that the MAD layer knows the port's own LID without calling the driver).
    pub(crate) lid: u32,
    pub(crate) sm_lid: u32,
    pub(crate) sm_sl: u8,
}

impl PortCache {
    pub(crate) fn new() -> Self {
        PortCache {
            gids: KVec::new(),
            gid_types: KVec::new(),
            gid_ndevs: KVec::new(),
            roce_table: false,
            default_gid_mask: 0,
            pkeys: KVec::new(),
            state: PortState::Nop,
            lmc: 0,
            subnet_prefix: 0,
            lid: 0,
            sm_lid: 0,
            sm_sl: 0,
        }
    }
}

/// The driver-independent part of a device (upstream the core fields of
/// `struct ib_device`). Clients and event handlers see this.
#[pin_data]
pub struct DeviceCore {
    #[pin]
    pub(crate) reg: Mutex<()>,
    pub(crate) phase: Atomic<i32>,
    #[pin]
    pub(crate) ident: Mutex<Ident>,
    pub(crate) refcount: Atomic<i32>,
    #[pin]
    pub(crate) unreg_completion: Completion,
    #[pin]
    pub(crate) unregistered: Completion,
    registered: Atomic<bool>,
    pub(crate) unreg_queued: Atomic<bool>,
    pub(crate) phys_port_cnt: u32,
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
    counters: Counters,
    /// The driver-typed entry points of the uverbs layer (set at registration when the
    /// driver has `alloc_ucontext`, cleared at unregistration; it holds the device, so it
    /// must not outlive it). Opaque here: the uverbs layer makes it, through the extension
    /// point [`UverbsRegistration`](crate::device::registration::UverbsRegistration) that the generic
    /// registration calls, and reads it back in its client's `add`.
    ///
    /// The one client hook in the core, and why it is not a general extension point:
    /// clients see the device as the untyped [`DeviceCore`] (upstream: `struct ib_device`
    /// with its `ops` table of erased function pointers), and every client but uverbs needs
    /// nothing more. uverbs alone creates objects of the driver for a file it does not know
    /// the driver of, so it needs code instantiated for the driver type `D`, and only the
    /// generic registration sees `D`: a client-data slot filled by the client's `add`
    /// (upstream `ib_set_client_data()`) would be filled from non-generic code and cannot
    /// make that instantiation.
    #[pin]
    pub(crate) uverbs: Mutex<Option<Arc<dyn core::any::Any + Send + Sync>>>,
    /// The netdev of each port (upstream `ib_port_data.netdev`, set by
    /// `ib_device_set_netdev()`), index `port - 1`; empty until the first is set.
    #[pin]
    pub(crate) netdevs: Mutex<KVec<Option<NetDevRef>>>,
    /// Serializes the changes of the core-owned RoCE GID tables (upstream
    /// `ib_gid_table.lock`, one per device here) and the driver's `add_gid`/`del_gid` calls.
    #[pin]
    pub(crate) gid_lock: Mutex<()>,
    /// upstream `ib_device_enable_gid_updates()`: netdev and address events change this
    /// device's GID tables (from the table setup at registration to the cleanup at
    /// unregistration). Read and written under `gid_lock`.
    pub(crate) gid_updates: Atomic<bool>,
}

impl DeviceCore {
    pub(crate) fn new(phys_port_cnt: u32) -> impl PinInit<Self> {
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
                },
                c"ib_device.cache_lock"
            ),
            clients <- core_mutex!(KVec::new(), c"ib_device.client_data_lock"),
            handlers <- core_mutex!(KVec::new(), c"ib_device.event_handler_lock"),
            next_handler: Atomic::new(0),
            restrack <- Restrack::new(),
            counters <- Counters::new(),
            uverbs <- core_mutex!(None, c"ib_device.uverbs"),
            netdevs <- core_mutex!(KVec::new(), c"ib_device.netdev_lock"),
            gid_lock <- core_mutex!((), c"ib_gid_table.lock"),
            gid_updates: Atomic::new(false),
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

    /// The parent device (upstream `ib_dev->dev.parent`), for the class devices of the
    /// device and of its clients.
    pub(crate) fn parent(&self) -> Option<ARef<kernel::device::Device>> {
        self.info.lock().parent.clone()
    }

    /// The device name (empty before registration).
    pub fn name(&self) -> DevName {
        self.ident.lock().name
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

    pub(crate) fn set_phase(&self, p: Phase) {
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
    pub fn counters(&self) -> &Counters {
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
        Ok(port_data(&info, port)?.immutable)
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
    pub(crate) fn try_get_raw(&self) -> bool {
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
    pub(crate) fn put_raw(&self) {
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

    /// Unregisters the device (see [`Device::unregister`](crate::device::Device::unregister)).
    fn unregister(&self);

    /// Renames the registered device (see [`Device::rename`](crate::device::Device::rename)).
    ///
    /// # Errors
    ///
    /// As [`Device::rename`](crate::device::Device::rename).
    fn rename(&self, new: &[u8]) -> Result<bool>;

    /// The device as `Any`, to get back to a `Device<D>` (driver sysfs attributes).
    fn as_any(&self) -> &dyn core::any::Any;

    /// Queries a port from the driver (upstream `ib_query_port()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port, the driver's error.
    fn query_port_attr(&self, port: u32) -> Result<PortAttr>;

    /// Lets the driver handle a MAD (upstream `ops.process_mad`; see
    /// [`DeviceOps::process_mad`](crate::ops::DeviceOps::process_mad)).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without the op, `EINVAL` for a bad port, the driver's error.
    fn process_mad(
        &self,
        port: u32,
        flags: u32,
        recv: Option<&crate::mad::MadRecvInfo>,
        in_mad: &crate::mad::Mad,
        out: &mut crate::mad::Mad,
    ) -> Result<u32>;

    /// Whether the driver has `process_mad` (upstream `device->ops.process_mad`).
    fn has_process_mad(&self) -> bool;

    /// Opens the special QP `qpn` (0 or 1) of `port` for the MAD layer (the driver's
    /// `open_mad_qp`, see [`crate::mad_qp`]).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without the op, `EINVAL` for a port the device does not have, the
    /// driver's errors.
    fn open_mad_qp(
        self: ArcBorrow<'_, Self>,
        port: u32,
        qpn: u32,
        notify: Arc<dyn crate::mad_qp::MadQpNotify>,
    ) -> Result<Arc<dyn crate::mad_qp::MadQp>>;

    /// Opens a kernel UD QP of `port` for datagrams (the driver's `open_ud_qp`, see
    /// [`crate::ud_qp`]).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without the op, `EINVAL` for a port the device does not have, the
    /// driver's errors.
    fn open_ud_qp(
        self: ArcBorrow<'_, Self>,
        port: u32,
        cfg: &crate::ud_qp::UdQpConfig,
        notify: Arc<dyn crate::ud_qp::UdQpNotify>,
    ) -> Result<Arc<dyn crate::ud_qp::UdQp>>;

    /// Changes a port's capability mask (upstream `ib_modify_port()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad port; `EOPNOTSUPP` without the driver's `modify_port` (a RoCE port
    /// accepts a change of `IsCM` alone, as upstream); the driver's error.
    fn modify_port(&self, port: u32, modify: &crate::attr::PortModify) -> Result;

    /// Reports an event (see [`Device::dispatch_event`](crate::device::Device::dispatch_event));
    /// process context.
    fn dispatch(&self, ev: Event);

    /// Whether the driver has `add_gid` and `del_gid` (with a RoCE port: upstream
    /// `rdma_cap_roce_gid_table()`).
    fn has_gid_ops(&self) -> bool;

    /// Calls the driver's `add_gid` (`add`) or `del_gid` for `attr` (upstream
    /// `add_roce_gid()`/`del_roce_gid()`); the caller holds `gid_lock`.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without the op; the driver's error.
    fn gid_op(&self, add: bool, attr: &crate::attr::GidAttr) -> Result;

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
    fn counter_dump(&self, port: Option<u32>, id: Option<u32>) -> Result<KVec<CounterInfo>>;
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

/// A kernel client of the RDMA core (upstream `struct ib_client`).
pub trait Client: Send + Sync + 'static {
    /// The client's name (upstream `ib_client.name`).
    fn name(&self) -> &'static CStr;

    /// A device became available (upstream `ib_client.add`).
    ///
    /// # Errors
    ///
    /// Any error: as upstream, it is logged and ignored, and this client
    /// gets no further calls for the device.
    fn add(&self, dev: &DeviceCore) -> Result;

    /// The device is going away; release everything taken from it
    /// (upstream `ib_client.remove`).
    fn remove(&self, dev: &DeviceCore);

    /// An asynchronous event on a device the client was added to.
    fn event(&self, _dev: &DeviceCore, _ev: &Event) {}

    /// Describes the client's char device for `dev` (upstream `ib_client.get_nl_info`, what
    /// nldev `GET_CHARDEV` answers; uverbs: `uverbsN`). `port` is the request's
    /// `PORT_INDEX`, if any.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` (the default) when the client has no char device; any error is returned
    /// to the requester (`ENOENT` becomes `EINVAL`, as upstream).
    fn get_nl_info(&self, _dev: &DeviceCore, _port: Option<u32>) -> Result<ClientNlInfo> {
        Err(EOPNOTSUPP)
    }

    /// As [`Client::get_nl_info`] for a request without a device (upstream
    /// `ib_client.get_global_nl_info`).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` (the default).
    fn get_global_nl_info(&self) -> Result<ClientNlInfo> {
        Err(EOPNOTSUPP)
    }
}

/// A client's char device as nldev `GET_CHARDEV` reports it (upstream
/// `struct ib_client_nl_info`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ClientNlInfo {
    /// The char device's number (`dev_t`, reported as `huge_encode_dev()`).
    pub devt: u32,
    /// The ABI version (`CHARDEV_ABI`).
    pub abi: u64,
    /// The char device's name (`CHARDEV_NAME`, e.g. `uverbs0`).
    pub name: DevName,
    /// `UVERBS_DRIVER_ID` (upstream: put by uverbs' `get_nl_info` unless the driver opts out).
    pub driver_id: Option<u32>,
}

/// A client attached to one device.
pub(crate) struct ClientCtx {
    pub(crate) id: u32,
    pub(crate) client: Arc<dyn Client>,
}
