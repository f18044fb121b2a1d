// SPDX-License-Identifier: GPL-2.0

//! The firmware simulator as a device: the kernel backend of [`Mlx5Hw`].
//!
//! Each simulated function is a [`SimFunction`] (its [`Fw`] on a fabric shared with the other
//! functions of its link layer ([`fabric`]; an Ethernet fabric is an Ethernet segment,
//! [`ether`], that the functions' interfaces send frames through), its simulated IOMMU ([`iommu`]), the identity,
//! and the capability pages cached at creation the way mlx5_core caches them) exposed
//! as the auxiliary device `mlx5_ib_rs.rdma.<N>` under the faux device `mlx5_fwsim`, the same
//! shape as mlx5_core's `mlx5_core.rdma.<N>` devices, so the driver binds both through one
//! auxiliary driver. Functions are created at load time from the `sim=` module parameter
//! ([`crate::fwsim::spec`]); their resource counts and fault knobs are in debugfs under
//! `/sys/kernel/debug/mlx5_fwsim/<aux device name>/`.

#[path = "simdev/debugfs.rs"]
mod debugfs;
#[path = "simdev/engine_glue.rs"]
mod engine_glue;
#[path = "simdev/ether.rs"]
pub(crate) mod ether;
#[path = "simdev/fabric.rs"]
pub(crate) mod fabric;
#[path = "simdev/iommu.rs"]
pub(crate) mod iommu;
#[path = "simdev/trap_order.rs"]
mod trap_order;

use crate::aux_parent::AuxParent;
use crate::fwsim::engine::Left;
use crate::fwsim::fault::FaultPlan;
use crate::fwsim::profile::LinkLayer as SimLinkLayer;
use crate::fwsim::{spec, Config, Counts, ExecError, Fw, Stats};
use crate::hw::{
    CapType, DmaMap, Doorbell, EthPort, Identity, Mlx5Events, Mlx5Hw, UarMem, CAP_BYTES,
    PCI_VENDOR_MELLANOX,
};
use crate::prm::cmd::{dealloc_uar_in, mbox_in, query_hca_cap_in, query_hca_cap_out};
use crate::prm::opcode;
use crate::prm::status::Status;
use crate::uplink::Uplink;
use ether::Segment;
use fabric::FabricWorker;
use ib_core_rs::attr::LinkLayer;
use ib_core_rs::mm::{TrapHandler, TrapPage};
use ib_core_rs::page_ref::PageRef;
use ib_core_rs::verbs::UmemPages;
use iommu::Iommu;
use kernel::{
    debugfs::{Dir, Scope},
    new_mutex,
    prelude::*,
    str::CString,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex,
    },
    time::{delay::fsleep, Delta, Instant, Monotonic},
    types::CovariantForLt,
};

/// The auxiliary device name under the module's name: `mlx5_ib_rs.rdma.<N>`, like
/// mlx5_core's `mlx5_core.rdma.<N>` (`MLX5_ADEV_NAME` ".rdma", upstream dev.c).
pub(crate) const AUX_NAME: &CStr = c"rdma";

/// Name of the faux parent device and of the debugfs directory.
const PARENT_NAME: &CStr = c"mlx5_fwsim";

/// The NodeGUID of an InfiniBand fabric's switch (`fwsim/switch.rs`).
const SWITCH_GUID: u64 = 0x0c42_a103_00fe_0000;

/// What a simulated auxiliary device carries for its driver (`Registration` data).
pub(crate) type SimRegData = CovariantForLt!(Arc<SimFunction>);

/// One simulated ConnectX function.
#[pin_data]
pub(crate) struct SimFunction {
    name: CString,
    identity: Identity,
    caps_general: KVec<u8>,
    caps_roce: Option<KVec<u8>>,
    caps_atomic: Option<KVec<u8>>,
    /// `device_mem_cap`, with `device_memory` (the function then owns its on-chip memory:
    /// [`Iommu::add_dev_mem`]).
    caps_dev_mem: Option<KVec<u8>>,
    /// The fabric holding the device state ([`fabric::Fabric::with_fw`]; commands are
    /// serialized, as on a ConnectX command queue with one entry in flight; the delay knob
    /// sleeps outside the lock) and its worker.
    fabric: Arc<FabricWorker>,
    /// This function's index on the fabric.
    index: usize,
    /// What the device reaches.
    iommu: Arc<Iommu>,
    /// The pages that stand for the doorbell pages of live UARs (`(index, page)`), created
    /// when first asked for ([`Mlx5Hw::uar_mem`]) and dropped when DEALLOC_UAR succeeds.
    /// Lock order: the fabric lock, then `uar_pages`.
    #[pin]
    uar_pages: Mutex<KVec<(u32, Arc<TrapPage>)>>,
    /// Nanoseconds spent in [`Mlx5Hw::cmd_do`] executing commands (the fabric lock wait and
    /// the delay knob excluded): the simulator's own share of a control-path benchmark
    /// (debugfs `stats`, `exec_ns`).
    exec_ns: Atomic<u64>,
    /// Nanoseconds commands waited for the fabric lock before executing (the worker's and
    /// the faulting tasks' engine passes hold it), and the longest such wait (debugfs
    /// `stats`, `cmd_wait_ns`, `cmd_wait_max_ns`).
    cmd_wait_ns: Atomic<u64>,
    cmd_wait_max_ns: Atomic<u64>,
}

/// The core's link layer for a simulated function's port type (the simulator's profile keeps
/// its own enum: it is pure code, built on the host without the core).
fn link_layer_of(ll: SimLinkLayer) -> LinkLayer {
    match ll {
        SimLinkLayer::Ib => LinkLayer::Infiniband,
        SimLinkLayer::Ethernet => LinkLayer::Ethernet,
    }
}

/// Runs QUERY_HCA_CAP (current values) on a device that is not shared yet and returns the
/// capability page (upstream mlx5_core `mlx5_core_get_caps_mode()` at function init).
fn query_caps(fw: &mut Fw, cap: CapType) -> Result<KVec<u8>> {
    let mut inbox = [0u8; query_hca_cap_in::SIZE_BYTES];
    let field = |r: core::result::Result<(), crate::prm::layout::PrmError>| r.map_err(|_| EINVAL);
    field(mbox_in::opcode.set(&mut inbox, u32::from(opcode::QUERY_HCA_CAP)))?;
    field(mbox_in::op_mod.set(&mut inbox, cap.op_mod_cur()))?;
    let mut out = KVec::from_elem(0u8, query_hca_cap_out::SIZE_BYTES, GFP_KERNEL)?;
    let c = fw.exec(&inbox, &mut out).map_err(|_| EIO)?;
    if c.status != Status::OK {
        pr_err!(
            "mlx5_fwsim: QUERY_HCA_CAP op_mod 0x{:x}: status 0x{:x} syndrome 0x{:x}\n",
            cap.op_mod_cur(),
            c.status.0,
            c.syndrome
        );
        return Err(EIO);
    }
    let page = query_hca_cap_out::capability.bytes(&out).map_err(|_| EIO)?;
    let mut v = KVec::with_capacity(CAP_BYTES, GFP_KERNEL)?;
    v.extend_from_slice(page, GFP_KERNEL)?;
    Ok(v)
}

impl SimFunction {
    /// KUnit: a one-port function named `name`: a ConnectX-6 Dx with a RoCE port if `eth`, else
    /// a ConnectX-7 with an InfiniBand port.
    ///
    /// # Errors
    ///
    /// As [`SimFunction::new`].
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn one_port(
        name: core::fmt::Arguments<'_>,
        eth: bool,
        serial: u32,
    ) -> Result<Arc<Self>> {
        use crate::fwsim::profile::{CONNECTX6_DX, CONNECTX7};
        let (profile, link_layer) = if eth {
            (CONNECTX6_DX, SimLinkLayer::Ethernet)
        } else {
            (CONNECTX7, SimLinkLayer::Ib)
        };
        Self::new(
            CString::try_from_fmt(name)?,
            Config {
                profile,
                link_layer,
                num_ports: 1,
                serial,
                memic: true,
            },
        )
    }

    /// A powered-on function with empty resource tables, its capabilities queried and cached,
    /// alone on a fabric of its own.
    ///
    /// # Errors
    ///
    /// As [`SimFunction::new_fabric`].
    pub(crate) fn new(name: CString, cfg: Config) -> Result<Arc<Self>> {
        let mut list = KVec::with_capacity(1, GFP_KERNEL)?;
        list.push((name, cfg), GFP_KERNEL)?;
        let mut v = Self::new_fabric(list)?;
        v.pop().ok_or(EINVAL)
    }

    /// Functions on one fabric, in order (function `i` is index `i` on the fabric), with the
    /// fabric's worker running.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an empty list, functions of different link layers or a configuration a
    /// profile refuses, `ENOMEM`, or `EIO` if a capability query fails.
    pub(crate) fn new_fabric(list: KVec<(CString, Config)>) -> Result<KVec<Arc<Self>>> {
        Self::new_fabric_on(list, None)
    }

    /// [`Self::new_fabric`], an Ethernet fabric's segment `ether` if given (one with its
    /// uplink attached already).
    fn new_fabric_on(
        list: KVec<(CString, Config)>,
        ether: Option<Arc<Segment>>,
    ) -> Result<KVec<Arc<Self>>> {
        let link_layer = list.first().ok_or(EINVAL)?.1.link_layer;
        let mut fws = KVec::with_capacity(list.len(), GFP_KERNEL)?;
        let mut caps = KVec::with_capacity(list.len(), GFP_KERNEL)?;
        // An InfiniBand fabric's switch: one external port per function port
        // (`fwsim/switch.rs`).
        let mut switch = match link_layer {
            SimLinkLayer::Ib => {
                let ports: usize = list.iter().map(|(_, c)| usize::from(c.num_ports)).sum();
                let n = u8::try_from(ports)
                    .ok()
                    .filter(|n| usize::from(*n) <= crate::fwsim::switch::MAX_PORTS)
                    .ok_or(EINVAL)?;
                Some(KVBox::init(
                    crate::fwsim::switch::Switch::new_in_place(n, SWITCH_GUID),
                    GFP_KERNEL,
                )?)
            }
            SimLinkLayer::Ethernet => None,
        };
        let mut first_ports = KVec::with_capacity(list.len(), GFP_KERNEL)?;
        let mut next_port = 1u8;
        for (_, cfg) in list.iter() {
            if cfg.link_layer != link_layer {
                return Err(EINVAL);
            }
            let init = Fw::new_in_place(*cfg).map_err(|_| EINVAL)?;
            let mut fw = KVBox::init(init, GFP_KERNEL)?;
            let general = query_caps(&mut fw, CapType::General)?;
            let roce = match cfg.link_layer {
                SimLinkLayer::Ethernet => Some(query_caps(&mut fw, CapType::Roce)?),
                SimLinkLayer::Ib => None,
            };
            // upstream handle_hca_cap_atomic(): the atomic page only with `MLX5_CAP_GEN(atomic)`.
            let atomic = if crate::prm::ctx::cmd_hca_cap::atomic.get(&general) == Ok(1) {
                Some(query_caps(&mut fw, CapType::Atomic)?)
            } else {
                None
            };
            // upstream mlx5_query_hca_caps(): the device memory page only with `device_memory`.
            let dev_mem = if crate::prm::ctx::cmd_hca_cap::device_memory.get(&general) == Ok(1) {
                Some(query_caps(&mut fw, CapType::DevMem)?)
            } else {
                None
            };
            // The function's ports are linked to the switch; the fabric's embedded subnet
            // manager sweeps them as their links come up (`fwsim/sm.rs`), unless `sm=0`
            // leaves that to a host SM.
            first_ports.push(next_port, GFP_KERNEL)?;
            if let Some(sw) = switch.as_deref_mut() {
                if embedded_sm() {
                    crate::fwsim::sm::sweep(&mut fw, sw, next_port);
                } else {
                    crate::fwsim::sm::links(&fw, sw, next_port);
                }
            }
            next_port = next_port.saturating_add(cfg.num_ports);
            // Before the driver: nobody to tell of the port changes.
            while fw.next_port_event().is_some() {}
            fws.push(fw, GFP_KERNEL)?;
            caps.push((general, roce, atomic, dev_mem), GFP_KERNEL)?;
        }
        let worker = FabricWorker::new(link_layer, fws, switch, first_ports, ether)?;
        let mut out = KVec::with_capacity(list.len(), GFP_KERNEL)?;
        for (index, ((name, cfg), (caps_general, caps_roce, caps_atomic, caps_dev_mem))) in
            list.into_iter().zip(caps).enumerate()
        {
            let identity = Identity {
                model: cfg.profile.name,
                pci_vendor: PCI_VENDOR_MELLANOX,
                pci_device: cfg.profile.device_id,
                // Revision 0, as the first silicon steps report.
                pci_revision: 0,
                fw_rev: cfg.profile.fw_rev,
                link_layer: link_layer_of(cfg.link_layer),
                num_ports: cfg.num_ports,
            };
            let iommu = worker.fabric().iommu(index).ok_or(EINVAL)?.clone();
            // The on-chip memory the MEMIC page announces: the device's own pages.
            if caps_dev_mem.is_some() {
                iommu.add_dev_mem(crate::fwsim::memic::SIZE)?;
            }
            let fabric = worker.clone();
            let f = Arc::pin_init(
                try_pin_init!(SimFunction {
                    name,
                    identity,
                    caps_general,
                    caps_roce,
                    caps_atomic,
                    caps_dev_mem,
                    fabric,
                    index,
                    iommu,
                    uar_pages <- new_mutex!(KVec::new()),
                    exec_ns: Atomic::new(0),
                    cmd_wait_ns: Atomic::new(0),
                    cmd_wait_max_ns: Atomic::new(0),
                }),
                GFP_KERNEL,
            )?;
            out.push(f, GFP_KERNEL)?;
        }
        Ok(out)
    }

    /// The function's fabric and worker.
    pub(crate) fn fabric(&self) -> &Arc<FabricWorker> {
        &self.fabric
    }

    /// The function's index on its fabric.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Runs `f` on this function's device state, under the fabric lock.
    pub(crate) fn with_fw<R>(&self, f: impl FnOnce(&mut Fw) -> R) -> R {
        match self.fabric.fabric().with_fw(self.index, f) {
            Ok(r) => r,
            // INVARIANT: the fabric was built with this function at `index` and never shrinks.
            Err(_) => unreachable!(),
        }
    }

    /// The function's IOMMU (leak checks: its mappings go back to zero).
    pub(crate) fn iommu(&self) -> &Arc<Iommu> {
        &self.iommu
    }

    /// Live objects per kind (debugfs `resources`, leak checks).
    pub(crate) fn counts(&self) -> Counts {
        self.with_fw(|fw| fw.counts())
    }

    /// Command statistics.
    pub(crate) fn stats(&self) -> Stats {
        self.with_fw(|fw| fw.stats())
    }

    /// How many user doorbell stores to this function's UAR pages arrived as trap faults.
    pub(crate) fn uar_traps(&self) -> u64 {
        self.fabric.fabric().uar_traps(self.index)
    }

    /// How the engine passes of this function's fabric ran.
    pub(crate) fn served(&self) -> &fabric::Served {
        self.fabric.fabric().served()
    }

    /// Nanoseconds spent executing commands so far (see the field).
    pub(crate) fn exec_ns(&self) -> u64 {
        self.exec_ns.load(Relaxed)
    }

    /// Nanoseconds commands waited for the fabric lock so far, and the longest wait.
    pub(crate) fn cmd_wait_ns(&self) -> (u64, u64) {
        (
            self.cmd_wait_ns.load(Relaxed),
            self.cmd_wait_max_ns.load(Relaxed),
        )
    }

    /// A RoCE address table entry (`port` 1-based), as SET_ROCE_ADDRESS left it.
    pub(crate) fn roce_addr(&self, port: u8, index: usize) -> Option<crate::fwsim::RoceAddr> {
        self.with_fw(|fw| fw.roce_addr(port, index))
    }

    /// How many UAR pages are backed by a kernel page (leak checks).
    pub(crate) fn uar_pages(&self) -> usize {
        self.uar_pages.lock().len()
    }

    /// Whether a UAR page of this function has a mapping installed, where a store lands
    /// without a fault and only the worker's rescans see it. With none, a QP's first doorbell
    /// after its RTR2RTS faults, and the fault wakes the worker (or serves the page in the
    /// storing task), so the first served QP need not wake it: a wake-up preempts the caller
    /// of RTR2RTS for nothing (`Documentation/performance.md`, "The simulator's worker and the
    /// QP commands"). A page whose fault
    /// is installing it right now is not listed yet; that fault rings next.
    fn uar_installed(&self) -> bool {
        self.uar_pages
            .lock()
            .iter()
            .any(|(_, p)| p.installed() != 0)
    }

    /// Runs `f` on the fault-injection knobs, under the device lock.
    pub(crate) fn with_faults<R>(&self, f: impl FnOnce(&mut FaultPlan) -> R) -> R {
        self.with_fw(|fw| f(fw.faults_mut()))
    }
}

/// Commands after which the fabric's worker has something to look at: the flushes and events
/// of a QP moved to ERR, a CQ change. The worker rescans while a QP it serves exists
/// (`Fw::has_served_qp`: one in RTS with a send queue, or in ERR), so RTR2RTS kicks it when it
/// finds WQEs posted before it, and when it makes the function's first such QP while one of
/// the function's UAR pages is installed (a store there would not fault) wakes it if it
/// sleeps until kicked (`Fabric::kick_served`; [`Fw::complete_commands`] says which). The
/// other QP commands do not: a new QP is in RESET, in INIT a QP neither sends nor receives, a
/// move to RTR only lets the QP accept what a peer sends next (a message it refused before is
/// sent again at the peer's retry deadline, which the worker keeps), RTS2RTS changes
/// attributes, 2RST discards what the QP had (no flush, no event: a QP in RESET completes
/// nothing, and the worker's next pass finds it no longer served); none of them queues a CQE
/// or an event. A kick there would only run a pass with nothing new in it, wake a real-time
/// thread that can preempt the caller and hold the fabric lock the next command waits for: a
/// third of each transition's time on the benchmark kernel (`Documentation/performance.md`,
/// "The simulator's worker and the QP commands").
fn wakes_worker(op: u16) -> bool {
    matches!(op, opcode::_2ERR_QP | opcode::MODIFY_CQ)
}

/// Whether the fabrics' embedded subnet manager runs (module parameter `sm`).
pub(crate) fn embedded_sm() -> bool {
    crate::module_parameters::sm.value()
}

impl Mlx5Hw for SimFunction {
    fn cmd_do(&self, inbox: &[u8], outbox: &mut [u8]) -> Result {
        let asked = Instant::<Monotonic>::now();
        let cmd = self.fabric.fabric().with_fw_cmd_sm(self.index, |fw, sw| {
            let t0 = Instant::<Monotonic>::now();
            let waited = u64::try_from((t0 - asked).as_nanos()).unwrap_or(0);
            self.cmd_wait_ns.add(waited, Relaxed);
            if waited > self.cmd_wait_max_ns.load(Relaxed) {
                // Under the fabric lock: no other writer.
                self.cmd_wait_max_ns.store(waited, Relaxed);
            }
            let delay_us = fw.faults_mut().delay_us;
            // The device reads host memory while executing some commands (a resize reads the
            // CQ's doorbell record).
            let mem: &dyn crate::fwsim::dma::DmaMem = &*self.iommu;
            let r = fw.exec_with_mem(inbox, outbox, mem);
            // What the command left for the data path (the flush CQEs of a 2ERR, the RESIZE
            // CQE of a resize) is written before the completion is reported, as hardware does.
            let left_work = fw.complete_commands(mem);
            // A port whose link changed (a PAOS write) changes its switch port; the embedded
            // SM sweeps it.
            if mbox_in::opcode.get(inbox) == Ok(u32::from(opcode::ACCESS_REG)) {
                if let Some((sw, first)) = sw {
                    if embedded_sm() {
                        crate::fwsim::sm::sweep(fw, sw, first);
                    } else {
                        crate::fwsim::sm::links(fw, sw, first);
                    }
                }
            }
            // A port change (a MAD_IFC Set, a link change) is an event to deliver.
            let left_work = if fw.has_port_events() {
                Left::Work
            } else {
                left_work
            };
            if matches!(r, Ok(c) if c.status == Status::OK)
                && mbox_in::opcode.get(inbox) == Ok(u32::from(opcode::DEALLOC_UAR))
            {
                // The UAR is gone: so is the page that stood for it.
                if let Ok(index) = dealloc_uar_in::uar.get(inbox) {
                    self.uar_pages.lock().retain(|(i, _)| *i != index);
                }
            }
            // A register write may have changed the port's PAOS admin status, which the
            // segment follows (a port that is down neither sends nor receives).
            let admin = (mbox_in::opcode.get(inbox) == Ok(u32::from(opcode::ACCESS_REG)))
                .then(|| fw.port_admin_up(1));
            let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(0);
            self.exec_ns.add(ns, Relaxed);
            (r, delay_us, left_work, admin)
        });
        let (r, delay_us, left_work, admin) = match cmd {
            Ok(v) => v,
            // INVARIANT: as in `with_fw`.
            Err(_) => unreachable!(),
        };
        if let (Some(up), Some(seg)) = (admin, self.fabric.fabric().ether()) {
            seg.set_admin(self.index, up);
        }
        if delay_us != 0 {
            // The delay knob: the command has executed, its completion arrives late (as a
            // slow firmware would deliver it). Sleeping outside the lock lets other callers
            // run meanwhile, which is what widens race windows.
            fsleep(Delta::from_micros(i64::from(delay_us)));
        }
        match r {
            Ok(c) if c.status == Status::OK => {
                // A QP moved to ERR or a CQ change: the worker must look (commands
                // ring no doorbell) and deliver what the command queued (e.g. a completion
                // event of a flush on an armed CQ); or a QP now in RTS that is the function's
                // first the worker serves or has WQEs posted before.
                let op = mbox_in::opcode.get(inbox).unwrap_or(0);
                if left_work == Left::Work || wakes_worker(u16::try_from(op).unwrap_or(0)) {
                    self.kick();
                } else if left_work == Left::Served && self.uar_installed() {
                    self.fabric.fabric().kick_served();
                }
                Ok(())
            }
            Ok(_) => Err(EREMOTEIO),
            Err(ExecError::Timeout) => {
                let op = mbox_in::opcode.get(inbox).unwrap_or(0);
                let op = u16::try_from(op).unwrap_or(u16::MAX);
                // upstream: wait_func() "cmd[%d]: %s(0x%x) timeout. Will cause a leak ..."
                pr_err!(
                    "{}: {}(0x{:x}) timeout (injected)\n",
                    &*self.name,
                    crate::hw::opcode_name(op),
                    op
                );
                Err(ETIMEDOUT)
            }
            Err(ExecError::OutboxTooShort) => Err(EINVAL),
        }
    }

    fn caps(&self, cap: CapType) -> Option<&[u8]> {
        match cap {
            CapType::General => Some(&self.caps_general),
            CapType::Roce => self.caps_roce.as_deref(),
            CapType::Atomic => self.caps_atomic.as_deref(),
            CapType::DevMem => self.caps_dev_mem.as_deref(),
        }
    }

    /// The device's on-chip memory pages, mapped into user space (where a ConnectX has its
    /// BAR window): the very pages the data path reads and writes at `DEV_MEM_BUS`.
    fn map_dev_mem(
        &self,
        vma: &mut ib_core_rs::mm::UserVma<'_>,
        bar_off: u64,
        entry: Option<KBox<dyn ib_core_rs::mm::MapRef>>,
    ) -> Result {
        use crate::fwsim::memic::{BAR_START, SIZE};
        let page = kernel::page::PAGE_SIZE as u64;
        let n = vma.len().div_ceil(kernel::page::PAGE_SIZE);
        let end = bar_off.checked_add(n as u64 * page).ok_or(EINVAL)?;
        if self.caps_dev_mem.is_none() {
            return Err(EOPNOTSUPP);
        }
        if bar_off < BAR_START || end > BAR_START + SIZE || bar_off % page != 0 {
            return Err(EINVAL);
        }
        let first = usize::try_from((bar_off - BAR_START) / page).map_err(|_| EINVAL)?;
        let pages = self.iommu.dev_mem_pages(first, n)?;
        vma.map_page_refs(&pages, entry)
    }

    fn identity(&self) -> &Identity {
        &self.identity
    }

    fn name(&self) -> &CStr {
        &self.name
    }

    fn uar_mem(&self, index: u32) -> Result<UarMem> {
        self.with_fw(|fw| {
            if fw.uar_owner(index).is_none() {
                return Err(EINVAL);
            }
            let mut pages = self.uar_pages.lock();
            if let Some((_, p)) = pages.iter().find(|(i, _)| *i == index) {
                return Ok(UarMem::Trap(p.clone()));
            }
            let bell: Arc<dyn TrapHandler> = Arc::new(
                fabric::UarBell::new(self.fabric.fabric(), self.index, index),
                GFP_KERNEL,
            )?;
            let page = TrapPage::new(
                bell,
                &<crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE,
            )?;
            pages.push((index, page.clone()), GFP_KERNEL)?;
            Ok(UarMem::Trap(page))
        })
    }

    fn map_pages(&self, pages: &[PageRef], writable: bool) -> Result<DmaMap> {
        self.iommu.map(pages, writable)
    }

    fn map_umem(&self, pages: UmemPages, writable: bool, addr: u64) -> Result<DmaMap> {
        self.iommu.map_umem(pages, writable, addr)
    }

    fn ring(&self, uar: u32, db: Doorbell, value: u64) -> Result {
        self.fabric.fabric().ring(self.index, uar, db, value);
        Ok(())
    }

    fn set_events(&self, handler: Option<Arc<dyn Mlx5Events>>) {
        self.fabric.fabric().set_events(self.index, handler);
    }

    fn eth_port(&self, port: u8) -> Result<Option<Arc<dyn EthPort>>> {
        match self.fabric.fabric().ether() {
            Some(seg) if port == 1 => seg.port(self.index).map(Some),
            _ => Ok(None),
        }
    }

    // The UAR page trap: a store at a doorbell ([`Doorbell::at`]) rings it; a store elsewhere
    // only kicks.
    fn uar_doorbell(&self, uar_index: u32, offset: u32, value: u64) {
        match Doorbell::at(offset) {
            Some(db) => self.fabric.fabric().ring(self.index, uar_index, db, value),
            None => self.kick(),
        }
    }

    fn kick(&self) {
        self.fabric.fabric().kick();
    }
}

/// The simulated functions of the module, their auxiliary devices and debugfs directories.
///
/// Drop order (field order): the uplink first (no frame comes in from it any more), debugfs (nothing can poke a knob of a function going away),
/// then the auxiliary devices (the driver unbinds from each, newest first) and the faux parent,
/// then the fabrics' workers.
pub(crate) struct SimDevices {
    _uplink: Option<UplinkAttachment>,
    /// `mlx5_fwsim/kcm`: the kernel rdma_cm consumer test (`ib/cma_tests.rs`).
    #[cfg(CONFIG_KUNIT)]
    _kcm: Pin<KBox<kernel::debugfs::File<()>>>,
    _debugfs: KVec<Pin<KBox<Scope<Arc<SimFunction>>>>>,
    _root: Dir,
    _parent: AuxParent<SimRegData>,
    _workers: Workers,
}

impl SimDevices {
    /// Creates the functions listed in `sim=`; `None` when the list is empty (the default: on a
    /// host with real adapters, loading the driver must not invent devices). A non-empty
    /// `uplink` names the interface attached to the first Ethernet fabric's segment.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a bad list (with a log line naming the entry) or an uplink without an
    /// Ethernet fabric, the uplink's attach error, or the first creation error; functions
    /// created before it are removed again.
    pub(crate) fn from_list(list: &[u8], uplink: &CStr, modname: &CStr) -> Result<Option<Self>> {
        let mut n = 0;
        let mut eth = 0;
        if let Err(e) = spec::parse::<()>(list, |_, cfg| {
            n += 1;
            if cfg.link_layer == SimLinkLayer::Ethernet {
                eth += 1;
            }
            Ok(())
        }) {
            pr_err!(
                "{}: sim=: {:?}; expected a comma-separated list of ib, eth, ib:cx7, eth:cx7, eth:cx6dx (at most {})\n",
                modname,
                e,
                spec::MAX_FUNCTIONS
            );
            return Err(EINVAL);
        }
        if !uplink.is_empty() && eth == 0 {
            pr_err!("{}: uplink= needs an Ethernet function in sim=\n", modname);
            return Err(EINVAL);
        }
        if n == 0 {
            return Ok(None);
        }
        // Functions of one link layer share a fabric: list them per link layer, in order.
        let mut per_ll: [KVec<(usize, CString, Config)>; 2] = [KVec::new(), KVec::new()];
        spec::parse::<Error>(list, |i, cfg| {
            let id = u32::try_from(i)?;
            let name = CString::try_from_fmt(fmt!("{}.{}.{}", modname, AUX_NAME, id))?;
            let k = match cfg.link_layer {
                SimLinkLayer::Ib => 0,
                SimLinkLayer::Ethernet => 1,
            };
            per_ll[k].push((i, name, cfg), GFP_KERNEL)?;
            Ok(())
        })
        .map_err(|_| EINVAL)??;
        // The uplink first, on the segment the first Ethernet fabric then uses: a failed
        // attach leaves nothing to take down.
        let mut uplink_seg = None;
        let uplink = if uplink.is_empty() {
            None
        } else {
            let seg = Segment::new()?;
            uplink_seg = Some(seg.clone());
            Some(UplinkAttachment::new(uplink, seg, modname)?)
        };
        let mut functions: KVec<(usize, Arc<SimFunction>)> = KVec::new();
        let mut workers = Workers(KVec::new());
        for group in per_ll {
            if group.is_empty() {
                continue;
            }
            let mut ids = KVec::with_capacity(group.len(), GFP_KERNEL)?;
            let mut entries = KVec::with_capacity(group.len(), GFP_KERNEL)?;
            for (i, name, cfg) in group {
                ids.push(i, GFP_KERNEL)?;
                entries.push((name, cfg), GFP_KERNEL)?;
            }
            let ether = match entries.first().map(|(_, cfg)| cfg.link_layer) {
                Some(SimLinkLayer::Ethernet) => uplink_seg.take(),
                _ => None,
            };
            let fs = SimFunction::new_fabric_on(entries, ether)?;
            if let Some(f) = fs.first() {
                workers.0.push(f.fabric().clone(), GFP_KERNEL)?;
            }
            for (i, f) in ids.into_iter().zip(fs) {
                functions.push((i, f), GFP_KERNEL)?;
            }
        }
        functions.sort_unstable_by_key(|(i, _)| *i);
        let mut parent = AuxParent::<SimRegData>::new(PARENT_NAME)?;
        let root = Dir::new(PARENT_NAME);
        let mut scopes = KVec::new();
        for (i, f) in functions {
            let id = u32::try_from(i)?;
            pr_info!(
                "{}: simulated {} ({} port, PCI {:04x}:{:04x}, fw {}.{}.{:04}), fabric {}\n",
                &*f.name,
                f.identity.model,
                match f.identity.link_layer {
                    LinkLayer::Infiniband => "InfiniBand",
                    LinkLayer::Ethernet => "Ethernet/RoCE",
                },
                f.identity.pci_vendor,
                f.identity.pci_device,
                f.identity.fw_rev.0,
                f.identity.fw_rev.1,
                f.identity.fw_rev.2,
                match f.identity.link_layer {
                    LinkLayer::Infiniband => "ib",
                    LinkLayer::Ethernet => "eth",
                },
            );
            let scope = KBox::pin_init(
                debugfs::function_dir(&root, &f.clone().name, f.clone()),
                GFP_KERNEL,
            )?;
            scopes.push(scope, GFP_KERNEL)?;
            parent.add(AUX_NAME, id, modname, f)?;
        }
        #[cfg(CONFIG_KUNIT)]
        let kcm = KBox::pin_init(
            root.write_callback_file(
                c"kcm",
                Ok::<(), Error>(()),
                &crate::ib::cma_tests::write_kcm,
            ),
            GFP_KERNEL,
        )?;
        let devs = Self {
            _uplink: uplink,
            #[cfg(CONFIG_KUNIT)]
            _kcm: kcm,
            _debugfs: scopes,
            _root: root,
            _parent: parent,
            _workers: workers,
        };
        Ok(Some(devs))
    }
}

/// An interface attached as a segment's uplink. Dropping it takes the interface off the
/// segment (no frame goes out any more), then detaches it (no frame comes in any more).
struct UplinkAttachment {
    _link: Uplink<Segment>,
    seg: Arc<Segment>,
}

impl UplinkAttachment {
    fn new(name: &CStr, seg: Arc<Segment>, modname: &CStr) -> Result<Self> {
        let link = Uplink::attach(name, seg.clone())
            .inspect_err(|e| pr_err!("{}: uplink={:?}: cannot attach: {:?}\n", modname, name, e))?;
        seg.set_uplink(Some(link.dev().clone()));
        pr_info!(
            "{}: uplink {:?} attached to the Ethernet segment\n",
            modname,
            name
        );
        Ok(Self { _link: link, seg })
    }
}

impl Drop for UplinkAttachment {
    fn drop(&mut self) {
        // The `_link` field, dropped after this body, detaches the interface.
        self.seg.set_uplink(None);
    }
}

/// The fabrics' workers, stopped when the simulated devices go (after the driver unbound
/// from every function), even if a leaked object still holds a function.
struct Workers(KVec<Arc<FabricWorker>>);

impl Drop for Workers {
    fn drop(&mut self) {
        for w in self.0.iter() {
            w.stop();
        }
    }
}

#[kunit_tests(mlx5_fwsim_kernel)]
mod tests {
    use super::*;
    use crate::fwsim::fault::FaultAction;
    use crate::fwsim::profile::CONNECTX7;
    use crate::fwsim::syndrome;
    use crate::prm::cmd::{alloc_pd_in, alloc_pd_out, dealloc_pd_in, dealloc_pd_out, mbox_out};
    use crate::prm::ctx::cmd_hca_cap;

    fn function(eth: bool) -> Result<Arc<SimFunction>> {
        SimFunction::one_port(fmt!("kunit.fwsim"), eth, 7)
    }

    fn hdr(op: u16, inbox: &mut [u8]) {
        assert_eq!(mbox_in::opcode.set(inbox, u32::from(op)), Ok(()));
    }

    fn alloc_pd(f: &SimFunction) -> Result<u32> {
        let mut inb = [0u8; alloc_pd_in::SIZE_BYTES];
        hdr(opcode::ALLOC_PD, &mut inb);
        let mut out = [0xaau8; alloc_pd_out::SIZE_BYTES];
        f.exec(&inb, &mut out)?;
        alloc_pd_out::pd.get(&out).map_err(|_| EIO)
    }

    fn dealloc_pd(f: &SimFunction, pd: u32) -> Result {
        let mut inb = [0u8; dealloc_pd_in::SIZE_BYTES];
        hdr(opcode::DEALLOC_PD, &mut inb);
        assert_eq!(dealloc_pd_in::pd.set(&mut inb, pd), Ok(()));
        let mut out = [0u8; dealloc_pd_out::SIZE_BYTES];
        f.exec(&inb, &mut out)
    }

    #[test]
    fn alloc_pd_outbox_bytes() -> Result {
        let f = function(false)?;
        let mut inb = [0u8; alloc_pd_in::SIZE_BYTES];
        hdr(opcode::ALLOC_PD, &mut inb);
        // opcode 0x0800 big-endian in the first dword.
        assert_eq!(&inb[..4], &[0x08, 0x00, 0x00, 0x00]);
        let mut out = [0xaau8; alloc_pd_out::SIZE_BYTES];
        f.exec(&inb, &mut out)?;
        // status 0, syndrome 0, pd = 1 (the first PD number) in the low 24 bits of dword 2.
        assert_eq!(&out[..12], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(f.counts().pd, 1);
        dealloc_pd(&f, 1)?;
        assert!(f.counts().is_zero());
        Ok(())
    }

    #[test]
    fn status_maps_to_errno() -> Result {
        use crate::hw::status_to_errno;
        assert_eq!(status_to_errno(Status::OK), Ok(()));
        assert_eq!(status_to_errno(Status::BAD_OP_ERR), Err(EINVAL));
        assert_eq!(status_to_errno(Status::RES_BUSY), Err(EBUSY));
        assert_eq!(status_to_errno(Status::LIM_ERR), Err(ENOMEM));
        assert_eq!(status_to_errno(Status::NO_RES_ERR), Err(EAGAIN));
        assert_eq!(status_to_errno(Status::BAD_INP_LEN_ERR), Err(EIO));
        assert_eq!(status_to_errno(Status(0x77)), Err(EIO));

        let f = function(true)?;
        // An unknown opcode: cmd_do reports EREMOTEIO and leaves status and syndrome in the
        // outbox (mlx5_cmd_do); exec maps the status (mlx5_cmd_exec).
        let mut inb = [0u8; 16];
        hdr(0x7fff, &mut inb);
        let mut out = [0u8; 16];
        assert_eq!(f.cmd_do(&inb, &mut out), Err(EREMOTEIO));
        assert_eq!(out[0], Status::BAD_OP_ERR.0);
        assert_eq!(mbox_out::syndrome.get(&out), Ok(syndrome::BAD_OPCODE));
        assert_eq!(f.exec(&inb, &mut out), Err(EINVAL));
        // A stale PD: BAD_RES_ERR -> EINVAL, nothing changes.
        assert_eq!(dealloc_pd(&f, 0x123), Err(EINVAL));
        // No room for the header: no completion at all.
        let mut tiny = [0u8; 8];
        assert_eq!(f.cmd_do(&inb, &mut tiny), Err(EINVAL));
        assert!(f.counts().is_zero());
        Ok(())
    }

    #[test]
    fn fault_fail_nth() -> Result {
        let f = function(false)?;
        let lim = FaultAction::Fail {
            status: Status::LIM_ERR,
            syndrome: syndrome::INJECTED,
        };
        f.with_faults(|p| p.fail_nth(2, lim));
        let a = alloc_pd(&f)?;
        assert_eq!(alloc_pd(&f), Err(ENOMEM));
        let b = alloc_pd(&f)?;
        assert_eq!(f.counts().pd, 2);
        assert_eq!(f.stats().injected, 1);
        dealloc_pd(&f, a)?;
        dealloc_pd(&f, b)?;
        assert!(f.counts().is_zero());
        Ok(())
    }

    #[test]
    fn fault_opcode_and_timeout() -> Result {
        let f = function(true)?;
        let busy = FaultAction::Fail {
            status: Status::NO_RES_ERR,
            syndrome: 0x1234,
        };
        f.with_faults(|p| p.fail_opcode(opcode::ALLOC_PD, busy));
        assert_eq!(alloc_pd(&f), Err(EAGAIN));
        assert_eq!(alloc_pd(&f), Err(EAGAIN));
        // Other opcodes pass.
        let mut inb = [0u8; alloc_pd_in::SIZE_BYTES];
        hdr(opcode::QUERY_ADAPTER, &mut inb);
        let mut out = KVec::from_elem(
            0u8,
            crate::prm::cmd::query_adapter_out::SIZE_BYTES,
            GFP_KERNEL,
        )?;
        f.exec(&inb, &mut out)?;
        f.with_faults(|p| p.fail_opcode(opcode::ALLOC_PD, FaultAction::Timeout));
        assert_eq!(alloc_pd(&f), Err(ETIMEDOUT));
        f.with_faults(|p| p.clear());
        let pd = alloc_pd(&f)?;
        dealloc_pd(&f, pd)?;
        assert!(f.counts().is_zero());
        assert_eq!(f.stats().injected, 3);
        Ok(())
    }

    #[test]
    fn delay_knob_sleeps() -> Result {
        use kernel::time::{Instant, Monotonic};
        let f = function(false)?;
        f.with_faults(|p| p.delay_us = 2000);
        let t0 = Instant::<Monotonic>::now();
        let pd = alloc_pd(&f)?;
        assert!(t0.elapsed().as_micros_ceil() >= 2000);
        dealloc_pd(&f, pd)?;
        Ok(())
    }

    #[test]
    fn caps_are_cached_from_the_device() -> Result {
        let ib = function(false)?;
        let g = ib.caps(CapType::General).ok_or(EINVAL)?;
        assert_eq!(g.len(), CAP_BYTES);
        assert_eq!(cmd_hca_cap::log_max_qp.get(g), Ok(CONNECTX7.log_max_qp));
        assert_eq!(
            cmd_hca_cap::log_max_cq_sz.get(g),
            Ok(CONNECTX7.log_max_cq_sz)
        );
        assert!(ib.caps(CapType::Roce).is_none());
        assert_eq!(ib.identity().pci_device, 0x1021);
        let eth = function(true)?;
        assert!(eth.caps(CapType::Roce).is_some());
        assert_eq!(eth.identity().pci_device, 0x101d);
        assert_eq!(eth.identity().pci_vendor, 0x15b3);
        Ok(())
    }
}
