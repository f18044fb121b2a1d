// SPDX-License-Identifier: GPL-2.0

//! Registration, the registration refcount, unregistration and dealloc of a [`Device<D>`]
//! (upstream `ib_register_device()`, `ib_device_try_get()`/`ib_device_put()`,
//! `ib_device_rename()`, `ib_unregister_device()`, `ib_unregister_device_queued()`,
//! `ib_dealloc_device()` in `drivers/infiniband/core/device.c`), and the [`IbDevice`] view of
//! a `Device<D>` that the registry and the clients hold.
//!
//! The registration refcount is 1 while registered (the registration's own reference),
//! [`Device::try_get`] takes more while it is non-zero, and unregister drops the base
//! reference and waits on a completion until every taken reference is back.

use super::Device;
use crate::attr::{DeviceAttr, GidAttr, PortAttr};
use crate::client;
use crate::counters::CounterInfo;
use crate::driver::Driver;
use crate::event::{self, queue_device_event, Event};
use crate::ib_device::{
    DevName, DeviceCore, DeviceRef, IbDevice, Ident, Phase, PortCache, PortData,
};
use crate::nldev::{self, NotifyEvent};
use crate::registry;
use crate::roce_gid;
use crate::sysfs::Sysfs;
use kernel::prelude::*;
use kernel::sync::atomic::{Full, Relaxed};
use kernel::sync::{Arc, ArcBorrow};

/// The extension point through which registration makes the uverbs layer's driver-typed
/// handle of a device (stored opaque in `DeviceCore`, read back by the uverbs client's
/// `add`). Only the generic registration sees the driver type, and the uverbs layer is
/// built on the core: it implements this trait for every driver (`uverbs/device.rs`), so
/// the code is instantiated for `D` here without the core importing uverbs.
pub(crate) trait UverbsRegistration: Driver {
    /// The uverbs handle of `dev`.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    fn uverbs_handle(dev: &Arc<Device<Self>>) -> Result<Arc<dyn core::any::Any + Send + Sync>>;
}

impl<D: Driver> IbDevice for Device<D> {
    fn core(&self) -> &DeviceCore {
        &self.core
    }

    fn unregister(&self) {
        Device::unregister(self)
    }

    fn rename(&self, new: &[u8]) -> Result<bool> {
        Device::rename(self, new)
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

    fn has_gid_ops(&self) -> bool {
        self.ops.add_gid.is_some() && self.ops.del_gid.is_some()
    }

    fn gid_op(&self, add: bool, attr: &GidAttr) -> Result {
        let f = if add {
            self.ops.add_gid
        } else {
            self.ops.del_gid
        };
        (f.ok_or(EOPNOTSUPP)?)(self, attr)
    }

    fn process_mad(
        &self,
        port: u32,
        flags: u32,
        recv: Option<&crate::mad::MadRecvInfo>,
        in_mad: &crate::mad::Mad,
        out: &mut crate::mad::Mad,
    ) -> Result<u32> {
        let f = self.ops.process_mad.ok_or(EOPNOTSUPP)?;
        if port == 0 || port > self.core.phys_port_cnt() {
            return Err(EINVAL);
        }
        f(self, port, flags, recv, in_mad, out)
    }

    fn has_process_mad(&self) -> bool {
        self.ops.process_mad.is_some()
    }

    fn open_mad_qp(
        self: ArcBorrow<'_, Self>,
        port: u32,
        qpn: u32,
        notify: Arc<dyn crate::mad_qp::MadQpNotify>,
    ) -> Result<Arc<dyn crate::mad_qp::MadQp>> {
        let f = self.ops.open_mad_qp.ok_or(EOPNOTSUPP)?;
        if port == 0 || port > self.core.phys_port_cnt() || qpn > 1 {
            return Err(EINVAL);
        }
        let this: Arc<Self> = self.into();
        f(&this, port, qpn, notify)
    }

    fn open_ud_qp(
        self: ArcBorrow<'_, Self>,
        port: u32,
        cfg: &crate::ud_qp::UdQpConfig,
        notify: Arc<dyn crate::ud_qp::UdQpNotify>,
    ) -> Result<Arc<dyn crate::ud_qp::UdQp>> {
        let f = self.ops.open_ud_qp.ok_or(EOPNOTSUPP)?;
        if port == 0 || port > self.core.phys_port_cnt() {
            return Err(EINVAL);
        }
        let this: Arc<Self> = self.into();
        f(&this, port, cfg, notify)
    }

    // upstream: ib_modify_port()
    fn modify_port(&self, port: u32, modify: &crate::attr::PortModify) -> Result {
        if port == 0 || port > self.core.phys_port_cnt() {
            return Err(EINVAL);
        }
        if let Some(f) = self.ops.modify_port {
            return f(self, port, modify);
        }
        let roce = self
            .core
            .port_immutable(port)
            .is_ok_and(|i| i.link_layer == crate::attr::LinkLayer::Ethernet);
        let cm = crate::attr::PORT_CM_SUP;
        if roce && (modify.set_port_cap_mask & !cm == 0 || modify.clr_port_cap_mask & !cm == 0) {
            Ok(())
        } else {
            Err(EOPNOTSUPP)
        }
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

    fn counter_dump(&self, port: Option<u32>, id: Option<u32>) -> Result<KVec<CounterInfo>> {
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
            ibdev_err!(dev_name, "registration failed: {:?}\n", e);
            // upstream: ib_cache_cleanup_one() on the error path.
            roce_gid::disable(&**this, false);
            let sysfs = this.sysfs.lock().take();
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
        if let Some(s) = this.sysfs.lock().as_ref() {
            s.announce();
        }
        // upstream ib_device_notify_register(): RDMA_REGISTER_EVENT after KOBJ_ADD.
        nldev::notify(&this.core, NotifyEvent::Register);
        // upstream: ib_device_put() of the registering thread's reference.
        this.core.put_raw();
        Ok(())
    }

    fn setup_and_enable(this: &Arc<Self>) -> Result {
        let name = this.core.name();
        // upstream: setup_device() -> ib_device_check_mandatory()
        this.ops.check_mandatory().map_err(|op| {
            ibdev_err!(name, "driver lacks mandatory op {}\n", op.name());
            EINVAL
        })?;
        // upstream: setup_port_data() (alloc_port_data + get_port_immutable)
        if this.core.phys_port_cnt == 0 {
            ibdev_err!(name, "device has no ports\n");
            return Err(EINVAL);
        }
        let get_imm = this.ops.get_port_immutable.ok_or(EINVAL)?;
        let mut ports = KVec::with_capacity(this.core.phys_port_cnt as usize, GFP_KERNEL)?;
        for port in 1..=this.core.phys_port_cnt {
            let immutable = get_imm(this, port).inspect_err(|e| {
                ibdev_err!(name, "get_port_immutable({}) failed: {:?}\n", port, e)
            })?;
            ports.push(
                PortData {
                    immutable,
                    cache: PortCache::new(),
                },
                GFP_KERNEL,
            )?;
        }
        // upstream: setup_device() -> ops.query_device
        let query_device = this.ops.query_device.ok_or(EINVAL)?;
        let attrs = query_device(this)
            .inspect_err(|e| ibdev_err!(name, "query_device failed: {:?}\n", e))?;
        {
            let mut info = this.core.info.lock();
            info.ports = ports;
            info.attrs = attrs;
        }
        // upstream: ib_cache_setup_one()
        for port in 1..=this.core.phys_port_cnt {
            Self::cache_update(this, port)?;
        }
        // upstream gid_table_setup_one(): GID updates on, the bound netdevs' GIDs added.
        roce_gid::enable(&**this);
        // upstream: ib_setup_device_attrs(), device_add() (uevent suppressed),
        // ib_setup_port_attrs().
        let group = *this.driver_group.lock();
        let sysfs = Sysfs::add(this.clone(), group)
            .inspect_err(|e| ibdev_err!(name, "sysfs setup failed: {:?}\n", e))?;
        *this.sysfs.lock() = Some(sysfs);
        // upstream: enable_device_and_get(): refcount 2 (the registration
        // and this thread), mark registered, enable_driver, add clients.
        this.core.refcount.store(2, kernel::sync::atomic::Release);
        if this.ops.alloc_ucontext.is_some() {
            *this.core.uverbs.lock() = Some(<D as UverbsRegistration>::uverbs_handle(this)?);
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
                ibdev_err!(
                    self.core.name(),
                    "cache update for port {} failed: {:?}\n",
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
        nldev::notify(&self.core, NotifyEvent::Unregister);
        // The uverbs client is gone: break the handle's reference cycle.
        drop(self.core.uverbs.lock().take());
        self.core.put_raw();
        self.core.unreg_completion.wait_for_completion();
        // upstream: free_netdevs(), ib_free_port_attrs(), device_del(), then
        // ib_cache_cleanup_one() (the GID tables emptied through the driver's del_gid). The
        // class device holds a reference on the device, dropped here.
        let sysfs = self.sysfs.lock().take();
        drop(sysfs);
        roce_gid::disable(self, true);
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
        // upstream ib_dealloc_device(): free_netdevs().
        roce_gid::free_netdevs(&this.core);
        let ident = *this.core.ident.lock();
        if let Some(index) = ident.index {
            registry::erase(index);
        }
        let refs = this.core.refcount();
        if refs != 0 {
            ibdev_err!(ident.name, "dealloc with registration refcount {}\n", refs);
        }
        this.core.restrack().report_leftovers(ident.name.as_bytes())
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
        let index = self.core.ident.lock().index.ok_or(EINVAL)?;
        registry::rename(index, name, || {
            let c = kernel::str::CString::try_from_fmt(fmt!("{}", name))?;
            {
                let s = self.sysfs.lock();
                s.as_ref().ok_or(EINVAL)?.rename(&c)?;
            }
            self.core.ident.lock().name = name;
            Ok(())
        })
    }
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
