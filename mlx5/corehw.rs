// SPDX-License-Identifier: GPL-2.0

//! Backend 1: functions of real ConnectX adapters through the in-tree C mlx5_core.
//!
//! mlx5_core owns the PCI function, the command queue, EQs, pages and the capability cache;
//! it creates a `mlx5_core.rdma.N` auxiliary device per function (if `CONFIG_MLX5_INFINIBAND`)
//! and we bind it like upstream `mlx5_ib` does. Commands go through `mlx5_cmd_do()`, whose
//! semantics [`Mlx5Hw::cmd_do`] copies (`EREMOTEIO` with the outbox left in place), so the
//! status handling and the log line are the same code as for the simulator
//! ([`crate::hw::Mlx5Hw::exec`]). The unsafe part is `rust/mlx5_core.rs` + `rust/mlx5_core.c`.
//!
//! The handle is revocable ([`CoreDev`]): the RDMA device and user contexts share it, and once
//! the auxiliary device is unbound every call fails with `ENODEV`. Umems and kernel buffers
//! are mapped with the DMA API for the PCI function. Without a ConnectX this runs against the
//! emulated PCI function of `host/cxfn` (`make pcifn`, suite `vm_pcifn_ib`,
//! Documentation/pcifn.md); its refusal of auxiliary devices that are not mlx5_core's is a
//! KUnit test.

use crate::hw::HwEvent;
use crate::hw::{
    CapType, DmaDomain, DmaMap, Doorbell, Identity, Mlx5Events, Mlx5Hw, UarMem, CAP_BYTES,
};
use crate::mlx5_core::{CoreDev, CoreEvents, DEV_EVENT_SYS_ERROR, EVENT_COMP};
use crate::prm::cmd::{destroy_cq_in, mbox_in};
use crate::prm::consts::EVENT_TYPE_PORT_CHANGE;
use crate::prm::consts::{CAP_GENERAL, CAP_PORT_TYPE_ETH, CAP_ROCE};
use crate::prm::ctx::cmd_hca_cap;
use crate::prm::event::{QpEvent, QueueEvent};
use crate::prm::opcode as op;
use ib_core_rs::attr::LinkLayer;
use ib_core_rs::page_ref::PageRef;
use kernel::sync::Arc;
use kernel::{auxiliary, device, prelude::*, str::CString};

/// Marketing names of the PCI device ids mlx5_core binds (`mlx5_core_pci_table`, main.c), for
/// log lines.
fn model(device_id: u16) -> &'static str {
    match device_id {
        0x1011 => "Connect-IB",
        0x1013 => "ConnectX-4",
        0x1014 => "ConnectX-4 VF",
        0x1015 => "ConnectX-4 Lx",
        0x1016 => "ConnectX-4 Lx VF",
        0x1017 => "ConnectX-5",
        0x1018 => "ConnectX-5 VF",
        0x1019 => "ConnectX-5 Ex",
        0x101a => "ConnectX-5 Ex VF",
        0x101b => "ConnectX-6",
        0x101c => "ConnectX-6 VF",
        0x101d => "ConnectX-6 Dx",
        0x101e => "ConnectX Family mlx5Gen Virtual Function",
        0x101f => "ConnectX-6 Lx",
        0x1021 => "ConnectX-7",
        0x1023 => "ConnectX-8",
        0x1025 => "ConnectX-9",
        0xa2d2 | 0xa2d6 | 0xa2dc => "BlueField",
        _ => "ConnectX",
    }
}

/// An mlx5_core function: the revocable handle, and what was learned at bind time.
///
/// The capability pages are copied when the function is bound (mlx5_core does not change them
/// while an RDMA auxiliary device exists), so [`Mlx5Hw::caps`] needs no access to the
/// function; everything that talks to the device goes through the handle and fails with
/// `ENODEV` once the binding has ended.
pub(crate) struct CoreFunction {
    dev: Arc<CoreDev>,
    identity: Identity,
    name: CString,
    general: KVec<u8>,
    /// `mlx5_comp_vectors_max()` at bind time.
    comp_vectors: u32,
    roce: Option<KVec<u8>>,
    atomic: Option<KVec<u8>>,
}

impl CoreFunction {
    /// Binds the mlx5_core function behind `adev`; the handle is revoked when `adev` is
    /// unbound.
    ///
    /// # Errors
    ///
    /// `ENODEV` (with a log line) if `adev` is not an auxiliary device mlx5_core created, or if
    /// mlx5_core has no general capability page for it; `EIO` for an unreadable page; `ENOMEM`.
    pub(crate) fn new(adev: &auxiliary::Device<device::Bound>) -> Result<Arc<Self>> {
        let dev = CoreDev::from_aux(adev).inspect_err(|_| {
            dev_err!(
                adev.as_ref(),
                "not an mlx5_core function (parent is not bound to mlx5_core); refused\n"
            );
        })?;
        let general = dev.caps_cur(CAP_GENERAL)?.ok_or(ENODEV)?;
        if general.len() < CAP_BYTES {
            return Err(ENODEV);
        }
        let port_type = cmd_hca_cap::port_type.get(&general).map_err(|_| EIO)?;
        let num_ports = cmd_hca_cap::num_ports.get(&general).map_err(|_| EIO)?;
        let has_atomic = cmd_hca_cap::atomic.get(&general).map_err(|_| EIO)? != 0;
        let link_layer = if port_type == CAP_PORT_TYPE_ETH {
            LinkLayer::Ethernet
        } else {
            LinkLayer::Infiniband
        };
        let page = |t: u32| -> Result<Option<KVec<u8>>> {
            Ok(dev.caps_cur(t)?.filter(|p| p.len() >= CAP_BYTES))
        };
        // The atomic page is filled only with `MLX5_CAP_GEN(atomic)` (upstream
        // handle_hca_cap_atomic()); the RoCE page exists for every function but is filled only
        // where the device has RoCE (upstream mlx5_core_get_caps() is called only then).
        let atomic = if has_atomic {
            page(crate::prm::consts::CAP_ATOMIC)?
        } else {
            None
        };
        let roce = if link_layer == LinkLayer::Ethernet {
            page(CAP_ROCE)?
        } else {
            None
        };
        let id = dev.ident()?;
        let identity = Identity {
            model: model(id.pci_device),
            pci_vendor: id.pci_vendor,
            pci_device: id.pci_device,
            pci_revision: id.pci_revision,
            fw_rev: id.fw_rev,
            link_layer,
            num_ports: u8::try_from(num_ports).map_err(|_| EIO)?,
        };
        let name = CString::try_from_fmt(fmt!("{}", adev.as_ref().name()))?;
        let comp_vectors = dev.comp_vectors()?.max(1);
        Ok(Arc::new(
            Self {
                dev,
                identity,
                name,
                general,
                comp_vectors,
                roce,
                atomic,
            },
            GFP_KERNEL,
        )?)
    }
}

/// The driver's event table as mlx5_core's callbacks reach it (upstream `mlx5_ib_cq_comp()`,
/// `mlx5_ib_cq_event()`, `mlx5_ib_qp_event()` via `rsc_event_notifier()`,
/// `srq_event_notifier()`): the EQE type becomes a [`HwEvent`].
struct CoreSink(Arc<dyn Mlx5Events>);

impl CoreEvents for CoreSink {
    fn event(&self, event_type: u32, num: u32) {
        if event_type == EVENT_COMP {
            self.0
                .event(HwEvent::Queue(QueueEvent::Completion { cqn: num }));
            return;
        }
        // upstream mlx5_ib_sys_error_event(): atomic context; the table queues the work.
        if event_type == DEV_EVENT_SYS_ERROR {
            self.0.event(HwEvent::DeviceFatal);
            return;
        }
        // `num`: the port (bits 7:0) and the EQE's subtype (bits 15:8), from the shim.
        if event_type == u32::from(EVENT_TYPE_PORT_CHANGE) {
            self.0.event(HwEvent::PortChange {
                port: (num & 0xff) as u8,
                subtype: ((num >> 8) & 0xff) as u8,
            });
            return;
        }
        // `enum mlx5_event` numbers are below 0x100.
        let Ok(t) = u8::try_from(event_type) else {
            return;
        };
        let ev = match QueueEvent::from_eqe(t, num) {
            // SQ drained, path migration: not reported by the driver yet.
            None
            | Some(QueueEvent::Qp {
                kind: QpEvent::SqDrained,
                ..
            }) => return,
            Some(ev) => HwEvent::Queue(ev),
        };
        self.0.event(ev);
    }
}

impl Mlx5Hw for CoreFunction {
    // CREATE_CQ and DESTROY_CQ go through mlx5_core's CQ API (as upstream mlx5_ib's
    // `mlx5_core_create_cq()`), which puts the CQ into its EQs' tables: that is how its
    // completions and errors come back. Everything else is a plain command.
    fn cmd_do(&self, inbox: &[u8], outbox: &mut [u8]) -> Result {
        let opcode = mbox_in::opcode.get(inbox).unwrap_or(0);
        if opcode == u32::from(op::CREATE_CQ) {
            return self.dev.create_cq(inbox, outbox);
        }
        if opcode == u32::from(op::DESTROY_CQ) {
            if let Ok(cqn) = destroy_cq_in::cqn.get(inbox) {
                if let Some(r) = self.dev.destroy_cq(cqn) {
                    return r;
                }
            }
        }
        self.dev.cmd_do(inbox, outbox)
    }

    fn caps(&self, cap: CapType) -> Option<&[u8]> {
        match cap {
            CapType::General => Some(&self.general),
            CapType::Roce => self.roce.as_deref(),
            CapType::Atomic => self.atomic.as_deref(),
            // Not cached: DM on an mlx5_core function is EOPNOTSUPP (no BAR mapping of the
            // MEMIC window yet; the emulated function reports no `device_memory` either).
            CapType::DevMem => None,
        }
    }

    fn identity(&self) -> &Identity {
        &self.identity
    }

    fn name(&self) -> &CStr {
        &self.name
    }

    // upstream uar_index2paddress(): the firmware owns the index (ALLOC_UAR checked it); the
    // BAR page is mapped as IO memory.
    fn uar_mem(&self, index: u32) -> Result<UarMem> {
        Ok(UarMem::Io {
            phys: self.dev.uar_paddr(index)?,
        })
    }

    fn wc_supported(&self) -> bool {
        self.dev.wc_supported()
    }

    // upstream maps a umem with `ib_dma_map_sgtable_attrs()` on `mdev->device` and allocates
    // queue buffers with `dma_alloc_coherent()`; here each page is `dma_map_page()`d for the
    // PCI function (without an IOMMU the addresses are physical and not contiguous, so the
    // map keeps one address per page).
    fn map_pages(&self, pages: &[PageRef], _writable: bool) -> Result<DmaMap> {
        if pages.is_empty() {
            return Err(EINVAL);
        }
        let addrs = self.dev.dma_map(pages)?;
        let domain: Arc<dyn DmaDomain> = self.dev.clone();
        Ok(DmaMap::scattered(addrs, domain))
    }

    fn num_comp_vectors(&self) -> u32 {
        self.comp_vectors
    }

    fn comp_eqn(&self, vector: u32) -> Result<u32> {
        self.dev.comp_eqn(vector)
    }

    // The kernel UAR page is `ioremap()`ed (upstream `mlx5_get_uars_page()`), and a kernel
    // queue rings with `mlx5_write64()` into it: 0x20 for a CQ arm, 0x800 for the send queue
    // (upstream alternates 0x800/0x900 for blue-flame copies of the WQE, which kernel queues
    // here do not write; a doorbell-only store is the same at either).
    fn map_kernel_uar(&self, index: u32) -> Result {
        self.dev.map_kernel_uar(index)
    }

    fn unmap_kernel_uar(&self, _index: u32) {
        self.dev.unmap_kernel_uar();
    }

    fn ring(&self, uar: u32, db: Doorbell, value: u64) -> Result {
        self.dev.kernel_uar_write64(uar, db.offset(), value)
    }

    // Completions through each CQ's `mlx5_core_cq.comp` (CQs are created through mlx5_core,
    // `cmd_do`), CQ errors through `mcq->event`, QP and SRQ events through a notifier of
    // mlx5_core's async EQ (`mlx5_notifier_register()`).
    fn set_events(&self, handler: Option<Arc<dyn Mlx5Events>>) {
        let sink = match handler {
            Some(h) => match Arc::new(CoreSink(h), GFP_KERNEL) {
                Ok(s) => Some(s as Arc<dyn CoreEvents>),
                Err(_) => {
                    pr_err!("{}: no memory for the event binding\n", self.name());
                    None
                }
            },
            None => None,
        };
        self.dev.set_events(sink);
    }
}

/// Mappings made for the PCI function are undone through the handle (also after it was
/// revoked: see [`CoreDev::dma_unmap`]).
impl DmaDomain for CoreDev {
    fn unmap(&self, _iova: u64, addrs: &[u64]) {
        self.dma_unmap(addrs);
    }
}

#[kunit_tests(mlx5_ib_rs_corehw)]
mod tests {
    use crate::aux_parent::AuxParent;
    use crate::fwsim::profile::{LinkLayer, CONNECTX7};
    use crate::fwsim::Config;
    use crate::simdev::{SimFunction, SimRegData};
    use kernel::{prelude::*, str::CString};

    /// An auxiliary device named like mlx5_core's (`mlx5_core.rdma.N`) but created by someone
    /// else (here: under a faux parent, carrying a simulated function) is refused by the
    /// mlx5_core backend before it reads anything: the shim checks the parent's driver. The
    /// refusal is logged ("not an mlx5_core function"; the VM suite greps it); what is
    /// checked here is that the driver neither crashed nor touched the function behind it.
    #[test]
    fn foreign_mlx5_core_named_device_is_refused() -> Result {
        let f = SimFunction::new(
            CString::try_from_fmt(fmt!("kunit.fake_core"))?,
            Config {
                profile: CONNECTX7,
                link_layer: LinkLayer::Ib,
                num_ports: 1,
                serial: 9,
                memic: false,
            },
        )?;
        let before = f.stats().commands;
        let mut parent = AuxParent::<SimRegData>::new(c"mlx5_ib_rs_kunit_fake_core")?;
        // Probing (if the driver is registered by now) happens inside this call.
        parent.add(c"rdma", 77, c"mlx5_core", f.clone())?;
        drop(parent);
        assert_eq!(f.stats().commands, before);
        assert!(f.counts().is_zero());
        Ok(())
    }
}
