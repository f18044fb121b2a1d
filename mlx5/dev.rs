// SPDX-License-Identifier: GPL-2.0

//! The probe of a function and its profile (upstream `mlx5r_probe()`, `__mlx5_ib_add()` and
//! `pf_profile`, main.c).
//!
//! One mlx5 device is one struct, [`Mlx5IbDev`] (upstream `struct mlx5_ib_dev`), embedded in
//! the core's device allocation: probe allocates the device first
//! ([`Device::alloc_unique`], upstream `ib_alloc_device()`), the profile's stages fill its data
//! (identity, device and port attributes, GIDs and P_Keys, the kernel PD, Q counter and UAR)
//! and its op table in order, and `IB_REG` registers it. [`Mlx5Dev`] is what probe keeps: the
//! handle on the device and how many stages completed. A failing stage unwinds the completed
//! ones; dropping the state (remove) runs their cleanups in reverse, then deallocates the
//! device.

use crate::attrs::{device_attrs, Caps, DeviceIds, GenCaps};
use crate::cmd::exec;
use crate::cmd::query::{
    HcaVport, NicVport, QueryAdapter, QueryHcaVportContext, QueryNicVportContext,
};
use crate::cmd::reg::{AccessReg, NodeDesc};
use crate::cmd::res::{AllocPd, AllocQCounter, AllocUar, DeallocPd, DeallocQCounter, DeallocUar};
use crate::eth::{EthNetdev, PortNetdev};
use crate::hw::{CapType, Mlx5Hw};
use crate::ib::device::{IbPort, Mlx5Ib, Mlx5IbDev, OpGroups};
use crate::ib::ops::{assemble_ops, DM_OPS, MW_OPS, ROCE_GID_OPS, XRC_OPS};
use crate::ib::port::{clear_gids, program_default_gids, programmed_gids, query_port};
use crate::netdev::NetDev;
use crate::prm::ctx::cmd_hca_cap;
use crate::stages::{self, Stage};
use core::pin::Pin;
use ib_core_rs::attr::LinkLayer;
use ib_core_rs::device::Device;
use kernel::{device, prelude::*, str::CString, sync::aref::ARef, sync::Arc, sync::UniqueArc};

/// The device while probe builds it (upstream `mlx5r_probe()`'s `dev`): the core's device
/// allocation, held alone while the stages fill it, shared from `IB_REG` on.
enum Slot {
    /// Allocated, not shared: the stages fill its data and ops.
    Unique(Pin<UniqueArc<Device<Mlx5Ib>>>),
    /// `IB_REG` shared it (registered, or its registration failed).
    Shared(Arc<Device<Mlx5Ib>>),
}

/// A probed function: the handle on its device (whose data, [`Mlx5IbDev`], is everything probe
/// learned and the ops read) and what remove must undo.
pub(crate) struct Mlx5Dev {
    /// The device; None only while `IB_REG` shares it.
    dev: Option<Slot>,
    /// Stages completed, so that drop cleans up exactly those.
    stages_done: usize,
    /// The RDMA device's parent (upstream `ib_dev.dev.parent = mdev->device`): the sysfs
    /// `device` link of `mlx5_N` and of its `uverbsN`. None in KUnit probes.
    parent: Option<ARef<device::Device>>,
    /// The Ethernet interfaces of the RoCE ports (`NETDEV`): a simulated function's, which
    /// this driver registers (an mlx5_core function's is mlx5e's).
    netdevs: KVec<PortNetdev>,
}

impl Mlx5Dev {
    /// Runs the profile on `hw`, with no parent device (KUnit).
    ///
    /// # Errors
    ///
    /// The failing stage's error, after everything done before it was undone.
    pub(crate) fn probe(hw: Arc<dyn Mlx5Hw>) -> Result<Self> {
        Self::probe_under(hw, None)
    }

    /// Runs the profile on `hw`; the RDMA device it registers has `parent` as its parent.
    ///
    /// Upstream `mlx5r_probe()`: `ib_alloc_device()` (here with the main op table and the port
    /// table of the link layer; the stages add the optional ones), then `__mlx5_ib_add()`. The
    /// device is deallocated when this state drops (remove, or a failed probe), after the
    /// stages' cleanups.
    ///
    /// # Errors
    ///
    /// The failing stage's error, after everything done before it was undone; `ENOMEM`.
    pub(crate) fn probe_under(
        hw: Arc<dyn Mlx5Hw>,
        parent: Option<&device::Device>,
    ) -> Result<Self> {
        let id = *hw.identity();
        let name = CString::try_from_fmt(fmt!("{}", hw.name()))?;
        let ops = assemble_ops(id.link_layer)?;
        let dev = Device::alloc_unique(&ops, u32::from(id.num_ports), Mlx5IbDev::new(hw))?;
        let mut d = Self {
            dev: Some(Slot::Unique(dev)),
            parent: parent.map(ARef::from),
            stages_done: 0,
            netdevs: KVec::new(),
        };
        let table = profile();
        stages::init_all(&name, &table, &mut d)?;
        d.stages_done = table.len();
        Ok(d)
    }

    /// The device's data: what probe learned.
    ///
    /// # Errors
    ///
    /// `ENODEV` while `IB_REG` shares the device (never seen outside it).
    pub(crate) fn data(&self) -> Result<&Mlx5IbDev> {
        match self.dev.as_ref().ok_or(ENODEV)? {
            Slot::Unique(u) => Ok(u.data()),
            Slot::Shared(a) => Ok(a.data()),
        }
    }

    /// The device before `IB_REG` shares it, for the stages to fill.
    ///
    /// # Errors
    ///
    /// `EBUSY` once it is shared (a stage after `IB_REG`: none is).
    fn unique(&mut self) -> Result<Pin<&mut Device<Mlx5Ib>>> {
        match self.dev.as_mut() {
            Some(Slot::Unique(u)) => Ok(u.as_mut()),
            _ => Err(EBUSY),
        }
    }

    /// The data of the device before `IB_REG` shares it.
    fn filling(&mut self) -> Result<&mut Mlx5IbDev> {
        Ok(self.unique()?.data_mut())
    }

    /// Shares the device (from `IB_REG` on, the core and verbs objects hold it too).
    fn share(&mut self) -> Result<Arc<Device<Mlx5Ib>>> {
        let arc = match self.dev.take().ok_or(ENODEV)? {
            Slot::Unique(u) => Arc::from(u),
            Slot::Shared(a) => a,
        };
        self.dev = Some(Slot::Shared(arc.clone()));
        Ok(arc)
    }

    /// Logs an error as upstream's `mlx5_ib_err()` does: on the function's device, or, in a
    /// KUnit probe without one, under the function's name.
    fn err(&self, hw: &dyn Mlx5Hw, msg: core::fmt::Arguments<'_>) {
        match &self.parent {
            Some(p) => dev_err!(p, "{}", msg),
            None => pr_err!("{}: {}", hw.name(), msg),
        }
    }

    /// The interface of RoCE port `port` (1-based), if the driver registered one (`NETDEV`):
    /// what the port's state follows and the core binds the port to.
    pub(crate) fn netdev(&self, port: u8) -> Option<&NetDev<EthNetdev>> {
        self.netdevs
            .iter()
            .find(|n| n.netdev().data().port() == port)
            .map(PortNetdev::netdev)
    }

    /// The RDMA device once `IB_REG` shared it (upstream `dev->ib_dev`): registered, outside a
    /// probe whose registration failed.
    pub(crate) fn ib(&self) -> Option<&Arc<Device<Mlx5Ib>>> {
        match self.dev.as_ref()? {
            Slot::Shared(a) => Some(a),
            Slot::Unique(_) => None,
        }
    }
}

impl Drop for Mlx5Dev {
    fn drop(&mut self) {
        let table = profile();
        let done = self.stages_done.min(table.len());
        stages::cleanup_all(table.get(..done).unwrap_or(&[]), self);
        // upstream mlx5r_remove() (and a failed mlx5r_probe()): ib_dealloc_device() after the
        // stages' cleanups.
        let ib = match self.dev.take() {
            Some(Slot::Unique(u)) => Arc::from(u),
            Some(Slot::Shared(a)) => a,
            None => return,
        };
        let hw = ib.data().hw.clone();
        let left = Device::dealloc(ib);
        if left != 0 {
            self.err(&*hw, fmt!("{} verbs object(s) left at remove\n", left));
        }
    }
}

/// The profile (upstream `pf_profile`, reduced to the stages this driver has; their order is
/// upstream's). `PORTS` is not an upstream stage: upstream computes port attributes inside
/// `IB_REG` (`ib_register_device()` calls `get_port_immutable` and the cache queries ports);
/// here they are computed before it so that registration only publishes them.
pub(crate) fn profile() -> [Stage<Mlx5Dev>; 10] {
    [
        Stage {
            name: "INIT",
            init: stage_init,
            cleanup: None,
        },
        Stage {
            name: "CAPS",
            init: stage_caps,
            cleanup: None,
        },
        Stage {
            name: "NON_DEFAULT_CB",
            init: stage_non_default_cb,
            cleanup: None,
        },
        Stage {
            name: "ROCE",
            init: stage_roce,
            cleanup: None,
        },
        Stage {
            name: "NETDEV",
            init: stage_netdev,
            cleanup: Some(stage_netdev_cleanup),
        },
        Stage {
            name: "PORTS",
            init: stage_ports,
            cleanup: None,
        },
        Stage {
            name: "DEVICE_RESOURCES",
            init: stage_dev_res,
            cleanup: Some(stage_dev_res_cleanup),
        },
        Stage {
            name: "COUNTERS",
            init: stage_counters,
            cleanup: Some(stage_counters_cleanup),
        },
        Stage {
            name: "BFREG",
            init: stage_bfreg,
            cleanup: Some(stage_bfreg_cleanup),
        },
        Stage {
            name: "IB_REG",
            init: stage_ib_reg,
            cleanup: Some(stage_ib_reg_cleanup),
        },
    ]
}

/// upstream `mlx5_ib_stage_init_init()`: the function's identity, node and system image GUIDs
/// (`mlx5_query_node_guid()`, through the vport access method), board and vendor id.
fn stage_init(d: &mut Mlx5Dev) -> Result {
    let x = d.filling()?;
    let hw = &*x.hw;
    let id = *hw.identity();
    if id.num_ports == 0 {
        return Err(EINVAL);
    }
    let adapter = exec(hw, &QueryAdapter)?;
    x.vendor_id = adapter.ieee_vendor_id;
    x.board_id = KVec::new();
    x.board_id
        .extend_from_slice(adapter.board_id(), GFP_KERNEL)?;
    // mlx5_get_vport_access_method(): NIC vport on Ethernet, HCA vport on InfiniBand (upstream
    // uses MAD_IFC on InfiniBand functions without `ib_virt`; MAD_IFC is not implemented).
    let (node, sys) = match id.link_layer {
        LinkLayer::Ethernet => {
            let v: NicVport = exec(hw, &QueryNicVportContext)?;
            (v.node_guid, v.system_image_guid)
        }
        LinkLayer::Infiniband => {
            let v: HcaVport = exec(hw, &QueryHcaVportContext { port: 1 })?;
            (v.node_guid, v.sys_image_guid)
        }
    };
    x.node_guid = node;
    x.sys_image_guid = sys;
    // upstream init_node_data(): the node description from the firmware (NODE_DESC; MAD_IFC
    // NodeDescription when it uses MAD_IFC, which this driver does not).
    x.node_desc = exec(hw, &AccessReg::read(NodeDesc))?;
    Ok(())
}

/// upstream `mlx5_ib_stage_caps_init()` + `mlx5_ib_query_device()`: the device attributes from
/// the cached capabilities.
fn stage_caps(d: &mut Mlx5Dev) -> Result {
    let x = d.filling()?;
    let hw = &*x.hw;
    let id = *hw.identity();
    let ids = DeviceIds {
        fw_rev: id.fw_rev,
        vendor_id: x.vendor_id,
        pci_device: id.pci_device,
        pci_revision: id.pci_revision,
        sys_image_guid: x.sys_image_guid,
        node_guid: x.node_guid,
        num_ports: id.num_ports,
    };
    let mut attrs = device_attrs(GenCaps::of(hw)?, &ids)?;
    attrs.atomic_cap = crate::attrs::atomic_cap(hw.caps(CapType::Atomic).and_then(Caps::new))?;
    attrs.max_dm_size = crate::attrs::max_dm_size(hw.caps(CapType::DevMem).and_then(Caps::new));
    x.attrs = attrs;
    Ok(())
}

/// upstream `mlx5_ib_stage_non_default_cb()` and the capability checks of `caps_init`.
fn stage_non_default_cb(d: &mut Mlx5Dev) -> Result {
    let x = d.filling()?;
    let hw = &*x.hw;
    let gen = GenCaps::of(hw)?;
    x.ops = OpGroups {
        xrc: gen.get(cmd_hca_cap::xrc) != 0,
        mw: gen.get(cmd_hca_cap::imaicl) != 0,
        roce: hw.identity().link_layer == LinkLayer::Ethernet,
        ipoib: false,
    };
    Ok(())
}

/// upstream `mlx5_ib_roce_init()` for Ethernet functions: RoCE must be available. Upstream
/// also enables it on the NIC vport (MODIFY_NIC_VPORT_CONTEXT `roce_en`, not implemented here:
/// mlx5_core enables it on the PF by default and the simulator reports it on) and registers a
/// netdev notifier (no netdev binding yet).
fn stage_roce(d: &mut Mlx5Dev) -> Result {
    let hw = &*d.data()?.hw;
    if hw.identity().link_layer != LinkLayer::Ethernet {
        return Ok(());
    }
    if GenCaps::of(hw)?.get(cmd_hca_cap::roce) == 0 || hw.caps(CapType::Roce).is_none() {
        d.err(hw, fmt!("Ethernet function without RoCE capability\n"));
        return Err(EOPNOTSUPP);
    }
    Ok(())
}

/// The RoCE ports' Ethernet interfaces ([`PortNetdev`]), registered and brought up; not an
/// upstream stage: upstream mlx5_core registers mlx5e's netdev and mlx5_ib's `ROCE` stage
/// finds it. Before `PORTS`, so that the port attributes probe computes see the port up.
fn stage_netdev(d: &mut Mlx5Dev) -> Result {
    let (hw, events) = {
        let x = d.data()?;
        (x.hw.clone(), x.events.clone())
    };
    if hw.identity().link_layer != LinkLayer::Ethernet {
        return Ok(());
    }
    let parent = d.parent.clone();
    let mut netdevs = KVec::new();
    for num in 1..=hw.identity().num_ports {
        // On failure the interfaces made so far are dropped (unregistered) with `netdevs`.
        if let Some(n) = PortNetdev::new(&hw, num, &events, parent.as_deref())? {
            netdevs.push(n, GFP_KERNEL)?;
        }
    }
    d.netdevs = netdevs;
    for num in 1..=hw.identity().num_ports {
        if let Some(n) = d.netdev(num) {
            pr_info!(
                "{}: port {} interface {} (ifindex {})\n",
                hw.name(),
                num,
                n.name(),
                n.ifindex()
            );
        }
    }
    Ok(())
}

/// Unregisters the interfaces, last first.
fn stage_netdev_cleanup(d: &mut Mlx5Dev) {
    while let Some(n) = d.netdevs.pop() {
        drop(n);
    }
}

/// What `get_port_immutable` and `query_port` will return, per port, with the GID/P_Key tables.
/// The ports are memory of the device: they go with it (no cleanup).
fn stage_ports(d: &mut Mlx5Dev) -> Result {
    let x = d.filling()?;
    let id = *x.hw.identity();
    let mut ports = KVec::with_capacity(usize::from(id.num_ports), GFP_KERNEL)?;
    for num in 1..=id.num_ports {
        ports.push(query_port(&*x.hw, num, id.link_layer)?, GFP_KERNEL)?;
    }
    x.ports = ports;
    Ok(())
}

/// upstream `mlx5_ib_dev_res_init()`: the kernel PD (`devr->p0`). Upstream also creates a CQ,
/// two XRCDs and two SRQs there; those need EQs and XRC/SRQ commands this driver does not have
/// yet.
fn stage_dev_res(d: &mut Mlx5Dev) -> Result {
    let x = d.filling()?;
    x.pdn = Some(exec(&*x.hw, &AllocPd { uid: 0 })?);
    Ok(())
}

fn stage_dev_res_cleanup(d: &mut Mlx5Dev) {
    let Ok(x) = d.data() else { return };
    if let Some(pd) = x.pdn {
        // A failure is logged by exec; there is nothing else to do on teardown (upstream
        // ignores mlx5_cmd_dealloc_pd()'s result the same way).
        let _ = exec(&*x.hw, &DeallocPd { id: pd, uid: 0 });
    }
}

/// upstream `mlx5_ib_counters_init()` → `mlx5_ib_alloc_counters()`: with `max_qp_cnt`, one
/// ALLOC_Q_COUNTER (uid 0: no DEVX here) for the function's port; QPs count into it from
/// RESET->INIT on, and `get_hw_stats` reads it.
fn stage_counters(d: &mut Mlx5Dev) -> Result {
    let x = d.filling()?;
    if GenCaps::of(&*x.hw)?.get(cmd_hca_cap::max_qp_cnt) == 0 {
        return Ok(());
    }
    x.qcnt = Some(exec(&*x.hw, &AllocQCounter { uid: 0 })?);
    Ok(())
}

fn stage_counters_cleanup(d: &mut Mlx5Dev) {
    let Ok(x) = d.data() else { return };
    if let Some(id) = x.qcnt {
        let _ = exec(&*x.hw, &DeallocQCounter { id, uid: 0 });
    }
}

/// upstream `mlx5_ib_stage_bfreg_init()`: the UAR page kernel consumers ring doorbells
/// through. Upstream takes it from mlx5_core's shared pool (`mlx5_get_uars_page()`), which
/// issues ALLOC_UAR and maps it; here it is ALLOC_UAR directly, then mapped by the backend
/// ([`Mlx5Hw::map_kernel_uar`]: `ioremap()` on an mlx5_core function).
fn stage_bfreg(d: &mut Mlx5Dev) -> Result {
    let x = d.filling()?;
    let uar = exec(&*x.hw, &AllocUar { uid: 0 })?;
    if let Err(e) = x.hw.map_kernel_uar(uar) {
        let _ = exec(&*x.hw, &DeallocUar { id: uar, uid: 0 });
        return Err(e);
    }
    x.uar = uar;
    Ok(())
}

/// Runs only when `BFREG` completed, so `uar` is the page it allocated.
fn stage_bfreg_cleanup(d: &mut Mlx5Dev) {
    let Ok(x) = d.data() else { return };
    x.hw.unmap_kernel_uar(x.uar);
    let _ = exec(&*x.hw, &DeallocUar { id: x.uar, uid: 0 });
}

/// upstream `mlx5_ib_stage_ib_reg_init()`: `ib_register_device(&dev->ib_dev, "mlx5_%d", ...)`.
///
/// Before that, as upstream's earlier stages do on the allocated device: the optional op
/// tables (`ib_set_device_ops()`), the MEMIC window, and the RoCE GIDs: a port with a netdev
/// is bound to it (`ib_device_set_netdev()`, upstream on `MLX5_DRIVER_EVENT_UPLINK_NETDEV`)
/// with the GID ops set, and the core adds its GIDs during registration through `add_gid`;
/// a port without one gets the default GIDs programmed here ([`program_default_gids`]), which
/// the core's GID cache reads during registration.
/// From here on the device is shared; a failed registration leaves it for the deallocation
/// after the earlier stages' cleanups (upstream order).
fn stage_ib_reg(d: &mut Mlx5Dev) -> Result {
    let parent = d.parent.clone();
    // The RoCE ports' interfaces (`NETDEV`). Only the core keeps a reference (from
    // `set_netdev` to unregistration): the interfaces are unregistered (`NETDEV` cleanup)
    // before the device's memory goes.
    let mut netdevs = KVec::new();
    for num in 1..=d.data()?.hw.identity().num_ports {
        if let Some(nd) = d.netdev(num).and_then(crate::net_notify_mlx5::core_ref) {
            netdevs.push((num, nd), GFP_KERNEL)?;
        }
    }
    let mut dev = d.unique()?;
    let hw = dev.data().hw.clone();
    let groups = dev.data().ops;
    // upstream: `if (MLX5_CAP_DEV_MEM(mdev, memic) || ..SW_ICM) ib_set_device_ops(..,
    // &mlx5_ib_dev_dm_ops)`.
    let memic = crate::ib::memic::MemicDb::new(&hw)?;
    {
        let ops = dev.as_mut().ops_mut();
        // upstream mlx5_ib_stage_caps_init(): `if (MLX5_CAP_GEN(mdev, imaicl))
        // ib_set_device_ops(&dev->ib_dev, &mlx5_ib_dev_mw_ops)`.
        if groups.mw {
            ops.set(&MW_OPS)?;
        }
        if groups.xrc {
            ops.set(&XRC_OPS)?;
        }
        if memic.is_some() {
            ops.set(&DM_OPS)?;
        }
        if !netdevs.is_empty() {
            // upstream mlx5_ib_dev_common_roce_ops: add_gid, del_gid.
            ops.set(&ROCE_GID_OPS)?;
        }
    }
    let x = dev.as_mut().data_mut();
    x.memic = memic;
    let clear_all = |ports: &KVec<IbPort>| {
        for p in ports.iter() {
            clear_gids(&*hw, programmed_gids(p));
        }
    };
    for i in 0..x.ports.len() {
        let Some(p) = x.ports.get(i) else { break };
        if p.link_layer != LinkLayer::Ethernet || netdevs.iter().any(|(n, _)| *n == p.num) {
            continue;
        }
        match program_default_gids(&*hw, p) {
            Ok(t) => {
                if let Some(p) = x.ports.get_mut(i) {
                    p.roce_gids = t;
                }
            }
            Err(e) => {
                clear_all(&x.ports);
                return Err(e);
            }
        }
    }
    dev.set_sysfs_group(&crate::ib::sysfs::MLX5_GROUP);
    dev.set_node_desc(&dev.data().node_desc);
    // upstream: `ib_dev.num_comp_vectors = mlx5_comp_vectors_max(mdev)`.
    dev.set_num_comp_vectors(hw.num_comp_vectors());
    if let Some(parent) = &parent {
        dev.set_parent(parent);
    }
    let dev = d.share()?;
    // upstream: ib_device_set_netdev() on MLX5_DRIVER_EVENT_UPLINK_NETDEV. The core drops the
    // bindings at unregistration; a failed registration drops them here, before the
    // interfaces' unregistration (`NETDEV` cleanup) waits for every reference.
    let unbind = |dev: &Device<Mlx5Ib>| {
        for (num, _) in netdevs.iter() {
            // Unbinding a valid port does not fail.
            let _ = dev.set_netdev(u32::from(*num), None);
        }
    };
    for (num, nd) in netdevs.iter() {
        if let Err(e) = dev.set_netdev(u32::from(*num), Some(nd.clone())) {
            unbind(&dev);
            clear_all(&dev.data().ports);
            return Err(e);
        }
    }
    // upstream: mlx5_core's EQs call into the CQ/QP tables from the first CQ/QP on.
    hw.set_events(Some(dev.data().events.clone()));
    if let Err(e) = Device::register(&dev, c"mlx5_%d") {
        hw.set_events(None);
        unbind(&dev);
        clear_all(&dev.data().ports);
        return Err(e);
    }
    // upstream MLX5_IB_STAGE_SYS_ERROR_NOTIFIER (after IB_REG): device events from here on.
    let eth = dev
        .data()
        .ports
        .iter()
        .any(|p| p.link_layer == LinkLayer::Ethernet);
    events_of(&dev).set_device(Some(dev.clone()), eth);
    Ok(())
}

fn events_of(dev: &Arc<Device<Mlx5Ib>>) -> &crate::ib::events::EventTable {
    &dev.data().events
}

/// upstream `mlx5_ib_stage_ib_reg_cleanup()`: `ib_unregister_device()`; the RoCE GIDs go with
/// it (upstream the core's GID cache deletes them through `del_gid` while unregistering).
fn stage_ib_reg_cleanup(d: &mut Mlx5Dev) {
    if let Some(ib) = d.ib() {
        events_of(ib).set_device(None, false);
        Device::unregister(ib);
        pr_info!("{}: unregistered {}\n", ib.data().hw.name(), ib.name());
        for p in ib.data().ports.iter() {
            clear_gids(&*ib.data().hw, programmed_gids(p));
        }
        // No event reaches the device's tables after this.
        ib.data().hw.set_events(None);
    }
}

#[kunit_tests(mlx5_ib_rs_probe)]
mod tests {
    use super::*;
    use crate::fwsim::fault::FaultAction;
    use crate::fwsim::profile::CONNECTX7;
    use crate::prm::opcode;
    use crate::prm::status::Status;
    use crate::simdev::SimFunction;

    fn sim(eth: bool) -> Result<Arc<SimFunction>> {
        SimFunction::one_port(fmt!("kunit.probe"), eth, 3)
    }

    /// Commands a successful probe sends.
    fn probe_commands(f: &Arc<SimFunction>) -> Result<u64> {
        let before = f.stats().commands;
        let d = Mlx5Dev::probe(f.clone())?;
        let n = f.stats().commands - before;
        drop(d);
        Ok(n)
    }

    #[test]
    fn probe_and_remove_leave_nothing() -> Result {
        for eth in [false, true] {
            let f = sim(eth)?;
            let d = Mlx5Dev::probe(f.clone())?;
            assert_eq!(f.counts().pd, 1);
            assert_eq!(f.counts().uar, 1);
            assert!(d.data()?.pdn.is_some());
            // One device: what the stages filled is the registered device's data.
            let ib = d.ib().ok_or(ENODEV)?;
            assert!(core::ptr::eq(d.data()?, ib.data()));
            drop(d);
            assert!(f.counts().is_zero());
        }
        Ok(())
    }

    #[test]
    fn every_command_failure_unwinds() -> Result {
        for eth in [false, true] {
            let f = sim(eth)?;
            let n = probe_commands(&f)?;
            // IB: 10 commands, Ethernet: 7 (see the stages).
            assert!(n >= 7);
            let mut tolerated = 0;
            for nth in 1..=n {
                f.with_faults(|p| {
                    p.fail_nth(
                        nth,
                        FaultAction::Fail {
                            status: Status::BAD_PARAM_ERR,
                            syndrome: 0x5f0000ff,
                        },
                    )
                });
                match Mlx5Dev::probe(f.clone()) {
                    Err(e) => assert_eq!(e, EINVAL),
                    // upstream __ib_cache_gid_add(): a failed add_gid (the default GIDs'
                    // SET_ROCE_ADDRESS of an Ethernet port with its interface) leaves the GID
                    // out; the probe stands.
                    Ok(d) => {
                        assert!(eth);
                        tolerated += 1;
                        drop(d);
                    }
                }
                assert!(f.counts().is_zero());
                f.with_faults(|p| p.clear());
            }
            assert_eq!(tolerated, if eth { 2 } else { 0 });
            // A timeout unwinds the same way.
            f.with_faults(|p| p.fail_opcode(opcode::ALLOC_UAR, FaultAction::Timeout));
            assert_eq!(Mlx5Dev::probe(f.clone()).err(), Some(ETIMEDOUT));
            assert!(f.counts().is_zero());
            f.with_faults(|p| p.clear());
            // And the function still probes afterwards.
            assert_eq!(probe_commands(&f)?, n);
            assert!(f.counts().is_zero());
        }
        Ok(())
    }

    #[test]
    fn device_attrs_follow_upstream_arithmetic() -> Result {
        let f = sim(false)?;
        let probed = Mlx5Dev::probe(f.clone())?;
        let d = probed.data()?;
        let p = CONNECTX7;
        let a = &d.attrs;
        assert_eq!(a.max_qp, 1 << p.log_max_qp);
        // mlx5_ib_calc_max_qp_wr(): 2^15 WQE basic blocks of 64 bytes / 256-byte WQEs.
        assert_eq!(a.max_qp_wr, (1 << p.log_max_qp_sz) * 64 / 256);
        assert_eq!(a.max_cq, 1 << p.log_max_cq);
        assert_eq!(a.max_cqe, (1 << p.log_max_cq_sz) - 1);
        assert_eq!(a.max_mr, 1 << p.log_max_mkey);
        assert_eq!(a.max_pd, 1 << p.log_max_pd);
        assert_eq!(a.max_srq, 1 << p.log_max_srq);
        assert_eq!(a.max_srq_wr, (1 << p.log_max_srq_sz) - 1);
        assert_eq!(a.max_qp_rd_atom, 1 << p.log_max_ra_qp);
        assert_eq!(a.max_qp_init_rd_atom, 1 << p.log_max_ra_qp);
        assert_eq!(
            a.max_res_rd_atom,
            (1 << p.log_max_ra_qp) * (1 << p.log_max_qp)
        );
        // The atomic page: 8-byte CAS and FADD on QPs, host endianness (get_atomic_caps()).
        assert_eq!(a.atomic_cap, crate::attrs::IB_ATOMIC_HCA);
        assert_eq!(a.max_mcast_grp, 1 << p.log_max_mcg);
        assert_eq!(a.max_mcast_qp_attach, p.max_qp_mcg);
        assert_eq!(a.max_total_mcast_qp_attach, p.max_qp_mcg << p.log_max_mcg);
        // max_wqe_sz_rq 512 / 16; min(max_wqe_sz_sq 1024, 512) - 32, / 16.
        assert_eq!(a.max_recv_sge, 32);
        assert_eq!(a.max_send_sge, 30);
        assert_eq!(a.max_srq_sge, 31);
        assert_eq!(a.max_sge_rd, 30);
        assert_eq!(a.max_fast_reg_page_list_len, 1 << 16);
        assert_eq!(a.page_size_cap, !0xfffu64);
        assert_eq!(a.max_pkeys, 128);
        assert_eq!(a.vendor_id, 0x02c9);
        assert_eq!(a.vendor_part_id, 0x1021);
        assert_eq!(a.fw_ver, 28u64 << 32 | 43 << 16 | 1014);
        assert_eq!(a.phys_port_cnt, 1);
        assert_eq!(a.max_ah, i32::MAX as u32);
        assert_eq!(a.node_guid, a.sys_image_guid);
        assert_ne!(a.node_guid, 0);
        use ib_core_rs::attr::device_cap::*;
        // The model has `cmd_hca_cap.xrc`: IB_DEVICE_XRC, as upstream.
        let base = CHANGE_PHY_PORT | PORT_ACTIVE_EVENT | SYS_IMAGE_GUID | RC_RNR_NAK_GEN | XRC;
        // No MEM_MGT_EXTENSIONS (the driver posts no fast-register WRs, `attrs.rs`), and
        // `imaicl`: memory windows, type 2B, 2^log_max_mkey of them (mlx5_ib_query_device()).
        assert_eq!(a.device_cap_flags, base | MEM_WINDOW | MEM_WINDOW_TYPE_2B);
        assert_eq!(a.max_mw, 1 << p.log_max_mkey);
        assert!(d.ops.mw);
        assert_eq!(d.hca_type()?.to_bytes(), b"MT4129");
        assert_eq!(d.fw_ver()?.to_bytes(), b"28.43.1014");
        assert_eq!(d.board_id()?.to_bytes(), b"RDMARS_CX7");
        assert_eq!(d.hw_rev()?.to_bytes(), b"0");
        Ok(())
    }
}
