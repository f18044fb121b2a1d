// SPDX-License-Identifier: GPL-2.0

//! The narrow hardware interface between the mlx5 driver and whatever executes its firmware
//! commands (ARCHITECTURE: "Mlx5Hw").
//!
//! Two backends implement [`Mlx5Hw`]: the firmware simulator
//! ([`crate::simdev::SimFunction`], bound through `mlx5_ib_rs.rdma.N` auxiliary devices) and
//! the in-tree C `mlx5_core` ([`crate::corehw::CoreFunction`], `mlx5_core.rdma.N`, through
//! `mlx5_cmd_do()`). The driver
//! sees only this trait, so the same probe and verbs code runs on both. What is here so far is
//! what upstream `mlx5_ib` needs first: command execution with upstream's status handling, the
//! cached HCA capabilities, the function's identity, what user space maps for a UAR page
//! ([`UarMem`]), DMA mapping ([`DmaMap`], [`DmaBuf`]: the only addresses the driver gives the
//! device are bus addresses from here), doorbells of kernel queues, and the event hook
//! ([`Mlx5Events`]: completions and asynchronous CQ/QP events, upstream's EQ handlers).

use crate::netdev::NetDevice;
use crate::prm::cmd::{mbox_in, mbox_out};
use crate::prm::event::QueueEvent;
use crate::prm::opcode;
use crate::prm::status::{self, Status};
use ib_core_rs::attr::LinkLayer;
use ib_core_rs::mm::{MapRef, TrapPage, UserVma};
use ib_core_rs::page_ref::PageRef;
use ib_core_rs::verbs::UmemPages;
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::sync::aref::ARef;
use kernel::sync::Arc;

/// Capability types the backend caches at function init (`enum mlx5_cap_type`, device.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CapType {
    /// `MLX5_CAP_GENERAL`: `cmd_hca_cap`.
    General,
    /// `MLX5_CAP_ROCE`: `roce_cap` (Ethernet functions only).
    Roce,
    /// `MLX5_CAP_ATOMIC`: `atomic_caps` (functions with the `atomic` general cap).
    Atomic,
    /// `MLX5_CAP_DEV_MEM`: `device_mem_cap` (functions with the `device_memory` general cap).
    DevMem,
}

impl CapType {
    /// The `op_mod` of QUERY_HCA_CAP for the current values (`cap_type << 1 |
    /// HCA_CAP_OPMOD_GET_CUR`, upstream `mlx5_core_get_caps_mode()`).
    pub(crate) const fn op_mod_cur(self) -> u32 {
        let ty = match self {
            CapType::General => crate::prm::consts::CAP_GENERAL,
            CapType::Roce => crate::prm::consts::CAP_ROCE,
            CapType::Atomic => crate::prm::consts::CAP_ATOMIC,
            CapType::DevMem => crate::prm::consts::CAP_DEV_MEM,
        };
        ty << 1 | crate::prm::consts::HCA_CAP_OPMOD_GET_CUR
    }
}

/// Bytes of one cached capability page (`union mlx5_ifc_hca_cap_union_bits`, the
/// `capability` member of `query_hca_cap_out`): upstream caches the same 4 KiB per type in
/// `mdev->caps.hca[type]->cur`.
pub(crate) const CAP_BYTES: usize =
    (crate::prm::cmd::query_hca_cap_out::capability.bit_width / 8) as usize;

/// Who the function is, as mlx5_core knows it before any RDMA command: the PCI ids, the
/// firmware revision from the initialization segment, and the port type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    /// Adapter model, for logs ("ConnectX-7").
    pub(crate) model: &'static str,
    /// PCI vendor id (0x15b3).
    pub(crate) pci_vendor: u16,
    /// PCI device id (`hca_type` in sysfs is "MT" + this in decimal).
    pub(crate) pci_device: u16,
    /// PCI revision id (sysfs `hw_rev`, `ib_device_attr.hw_ver`).
    pub(crate) pci_revision: u8,
    /// Firmware major.minor.subminor (`fw_rev_maj/min/sub`).
    pub(crate) fw_rev: (u16, u16, u16),
    /// Link layer of the function's port(s) (`MLX5_CAP_GEN(port_type)`, upstream
    /// `mlx5_port_type_cap_to_rdma_ll()`), as the core names it.
    pub(crate) link_layer: LinkLayer,
    /// Ports of the function.
    pub(crate) num_ports: u8,
}

/// PCI vendor id of Mellanox/NVIDIA networking (`PCI_VENDOR_ID_MELLANOX`).
pub(crate) const PCI_VENDOR_MELLANOX: u16 = 0x15b3;

/// What user space maps for one UAR page (upstream `mlx5_ib_mmap_offset()` maps
/// `uar_index2paddress()` with `pgprot_noncached()` or `pgprot_writecombine()`). Read by the
/// driver's `mmap`.
pub(crate) enum UarMem {
    /// A simulated function: the kernel page that stands for the doorbell page, zeroed when
    /// first handed out and kept until the UAR is deallocated (the simulator has no BAR). It is
    /// mapped as a write trap ([`ib_core_rs::mm::TrapPage`]): a store to it wakes the device.
    Trap(Arc<TrapPage>),
    /// A function of a real adapter: the physical address of the UAR's system page in BAR 0
    /// (`mdev->bar_addr + index / uars_per_page * PAGE_SIZE`), to be mapped as IO memory.
    Io {
        /// Physical address, page aligned.
        phys: u64,
    },
}

/// The translation side of a device's DMA mappings: what a [`DmaMap`] returns its range to.
pub(crate) trait DmaDomain: Send + Sync {
    /// Removes the mapping that starts at bus address `iova`; `addrs` are the bus addresses of
    /// its pages when they are not contiguous (the DMA API without an IOMMU), else empty
    /// (upstream `dma_unmap_sg()`).
    fn unmap(&self, iova: u64, addrs: &[u64]);
}

/// Pages mapped for the device (upstream: a DMA-mapped scatterlist of a umem,
/// `ib_dma_map_sgtable_attrs()`; for the simulator one contiguous range of its IOMMU).
/// Dropping it unmaps them: from then on the device faults on them.
pub(crate) struct DmaMap {
    iova: u64,
    pages: usize,
    /// The bus address of each page where they are not one contiguous range.
    addrs: KVec<u64>,
    domain: Arc<dyn DmaDomain>,
}

impl DmaMap {
    /// A mapping of `pages` pages at one contiguous range from `iova` in `domain` (for
    /// [`Mlx5Hw`] backends).
    pub(crate) fn new(iova: u64, pages: usize, domain: Arc<dyn DmaDomain>) -> Self {
        DmaMap {
            iova,
            pages,
            addrs: KVec::new(),
            domain,
        }
    }

    /// A mapping whose pages are at the bus addresses `addrs`, in order (at least one).
    pub(crate) fn scattered(addrs: KVec<u64>, domain: Arc<dyn DmaDomain>) -> Self {
        DmaMap {
            iova: addrs.first().copied().unwrap_or(0),
            pages: addrs.len(),
            addrs,
            domain,
        }
    }

    /// The bus address of the first byte of the first page.
    pub(crate) fn iova(&self) -> u64 {
        self.iova
    }

    /// How many pages.
    pub(crate) fn page_count(&self) -> usize {
        self.pages
    }

    /// The bus address of page `i`.
    fn page_addr(&self, i: usize) -> Option<u64> {
        if i >= self.pages {
            return None;
        }
        if self.addrs.is_empty() {
            Some(self.iova + i as u64 * PAGE_SIZE as u64)
        } else {
            self.addrs.get(i).copied()
        }
    }

    /// The bus address of every page in order: `pas[]` of a queue, the MTT of an MR.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn page_addrs(&self) -> Result<KVec<u64>> {
        let mut v = KVec::with_capacity(self.pages, GFP_KERNEL)?;
        for i in 0..self.pages {
            v.push(self.page_addr(i).ok_or(EINVAL)?, GFP_KERNEL)?;
        }
        Ok(v)
    }
}

impl Drop for DmaMap {
    fn drop(&mut self) {
        self.domain.unmap(self.iova, &self.addrs);
    }
}

/// Kernel memory shared with the device (upstream `dma_alloc_coherent()` / `mlx5_frag_buf`):
/// the CPU reaches it through [`DmaBuf::read`]/[`DmaBuf::write`], the device through
/// [`DmaBuf::bus`] addresses.
///
/// Drop order (field order): the mapping goes before the pages.
pub(crate) struct DmaBuf {
    map: DmaMap,
    pages: KVec<PageRef>,
}

impl DmaBuf {
    /// Bytes in the buffer (whole pages).
    pub(crate) fn len(&self) -> usize {
        self.pages.len() * PAGE_SIZE
    }

    /// The mapping (for `pas[]`).
    pub(crate) fn map(&self) -> &DmaMap {
        &self.map
    }

    /// The bus address of byte `offset` (0 past the end, which no mapping covers).
    pub(crate) fn bus(&self, offset: usize) -> u64 {
        self.map
            .page_addr(offset / PAGE_SIZE)
            .map_or(0, |a| a + (offset % PAGE_SIZE) as u64)
    }

    /// Calls `f(page, offset in page, range of the caller's bytes)` for each page piece of
    /// `[offset, offset + len)`.
    fn for_each_piece(
        &self,
        offset: usize,
        len: usize,
        mut f: impl FnMut(&PageRef, usize, core::ops::Range<usize>) -> Result,
    ) -> Result {
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end > self.len() {
            return Err(EINVAL);
        }
        let mut done = 0;
        while done < len {
            let at = offset + done;
            let in_page = at % PAGE_SIZE;
            let n = (PAGE_SIZE - in_page).min(len - done);
            let page = self.pages.get(at / PAGE_SIZE).ok_or(EINVAL)?;
            f(page, in_page, done..done + n)?;
            done += n;
        }
        Ok(())
    }

    /// Copies bytes at `offset` into `buf`.
    ///
    /// # Errors
    ///
    /// `EINVAL` past the end.
    pub(crate) fn read(&self, offset: usize, buf: &mut [u8]) -> Result {
        self.for_each_piece(offset, buf.len(), |p, o, r| {
            p.read(o, buf.get_mut(r).ok_or(EINVAL)?)
        })
    }

    /// Copies `data` to `offset`.
    ///
    /// # Errors
    ///
    /// `EINVAL` past the end.
    pub(crate) fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.for_each_piece(offset, data.len(), |p, o, r| {
            p.write(o, data.get(r).ok_or(EINVAL)?)
        })
    }

    /// Writes a big-endian 32-bit value (a doorbell record counter) at `offset`.
    ///
    /// # Errors
    ///
    /// `EINVAL` past the end.
    pub(crate) fn write_be32(&self, offset: usize, v: u32) -> Result {
        self.write(offset, &v.to_be_bytes())
    }
}

/// What the device reports asynchronously (upstream: EQEs of the completion and async EQs,
/// `mlx5_eq_comp_int()` / `mlx5_eq_async_int()`, `enum mlx5_event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HwEvent {
    /// A CQ, QP or SRQ event (upstream `mlx5_ib_cq_comp()`, `mlx5_ib_cq_event()`,
    /// `mlx5_ib_qp_event()`, `srq_event_notifier()`).
    Queue(QueueEvent),
    /// The function entered its error state (mlx5_core's `MLX5_DEV_EVENT_SYS_ERROR` from
    /// `mlx5_enter_error_state()`): upstream mlx5_ib reports `IB_EVENT_DEVICE_FATAL`.
    DeviceFatal,
    /// A port event (`MLX5_EVENT_TYPE_PORT_CHANGE`, upstream `handle_port_change()`).
    PortChange {
        /// The port (1-based, `data.port.port` bits 7:4).
        port: u8,
        /// `MLX5_PORT_CHANGE_SUBTYPE_*`.
        subtype: u8,
    },
}

/// The driver's handler of device events (upstream: the EQ interrupt handlers' calls into
/// mlx5_ib, `mlx5_ib_cq_comp()`, `mlx5_ib_cq_event()`, `mlx5_ib_qp_event()`). Called from the
/// device's context (the simulator's worker thread; an EQ interrupt on hardware): it must not
/// sleep for long and must not call back into the device's command interface under its locks.
pub(crate) trait Mlx5Events: Send + Sync {
    /// One event.
    fn event(&self, ev: HwEvent);
}

/// The doorbells a kernel queue rings through [`Mlx5Hw::ring`] (offsets in the UAR page,
/// upstream `MLX5_CQ_DOORBELL` 0x20 and the blue-flame register 0x800).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Doorbell {
    /// CQ arm (`mlx5_cq_arm()`: `sn << 28 | cmd | ci` << 32 | cqn at UAR + 0x20).
    CqArm,
    /// Send queue (the first 8 bytes of the last WQE at UAR + 0x800).
    Sq,
}

impl Doorbell {
    /// The doorbell's offset in the UAR page (upstream `MLX5_CQ_DOORBELL`, `MLX5_BF_OFFSET`):
    /// where a kernel queue rings it.
    pub(crate) const fn offset(self) -> u32 {
        match self {
            Doorbell::CqArm => 0x20,
            Doorbell::Sq => 0x800,
        }
    }

    /// The doorbell a store at `offset` of a UAR page rings: 0x20 the CQ arm, 0x800/0x900 the
    /// send doorbell (blue-flame registers 0 and 1); `None` elsewhere.
    pub(crate) const fn at(offset: u32) -> Option<Self> {
        match offset {
            0x20 => Some(Doorbell::CqArm),
            0x800 | 0x900 => Some(Doorbell::Sq),
            _ => None,
        }
    }
}

/// The Ethernet side of a function's port, for the interface the driver registers on it
/// (upstream: mlx5e's send and receive queues on the uplink).
pub(crate) trait EthPort: Send + Sync {
    /// Connects the port's interface (received frames are handed to it) or, with `None`,
    /// disconnects it; after a disconnect returns no frame is handed to the old interface and
    /// its reference is put.
    fn connect(&self, dev: Option<ARef<NetDevice>>);

    /// Whether the interface is up: a port whose interface is down neither sends nor
    /// receives.
    fn set_open(&self, open: bool);

    /// Sends one Ethernet frame out of the port (from the transmit path: never sleeps).
    /// `false`: dropped (the port is down, or the frame is not Ethernet).
    fn transmit(&self, frame: &[u8]) -> bool;
}

/// A device that executes mlx5 firmware commands.
pub(crate) trait Mlx5Hw: Send + Sync {
    /// Executes one command: `inbox` is the `*_in` layout, `outbox` receives the `*_out`
    /// layout (upstream `mlx5_cmd_do()`).
    ///
    /// # Errors
    ///
    /// `EREMOTEIO` when the device completed the command with a status other than OK; the
    /// outbox then holds that status and syndrome. Any other errno is a delivery failure
    /// (`ETIMEDOUT` for a command the device never completed, `EINVAL` for an outbox that
    /// cannot hold the 16-byte header) and the outbox means nothing.
    fn cmd_do(&self, inbox: &[u8], outbox: &mut [u8]) -> Result;

    /// The current value of a capability page, queried once when the function came up
    /// (upstream `MLX5_CAP_GEN()` reads the same cache); `None` if the device has no such page.
    fn caps(&self, cap: CapType) -> Option<&[u8]>;

    /// The function's identity.
    fn identity(&self) -> &Identity;

    /// Name for log lines (the auxiliary device's name).
    fn name(&self) -> &CStr;

    /// What user space maps for the allocated UAR `index` (ALLOC_UAR's number).
    ///
    /// # Errors
    ///
    /// `EINVAL` if the function has no such UAR allocated (simulator), `ENOMEM`.
    fn uar_mem(&self, index: u32) -> Result<UarMem>;

    /// Maps the function's on-chip memory (MEMIC) from BAR offset `bar_off` (page aligned,
    /// inside the window `device_mem_cap` announces) over the whole of `vma` (upstream
    /// `mlx5_ib_mmap_offset()` for `MLX5_IB_MMAP_TYPE_MEMIC`: `rdma_user_mmap_io()` of
    /// `pci_resource_start(0) + bar_off`, write-combining). `entry` stays with the VMA.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` where the backend has no device memory to map; `EINVAL` outside it or for
    /// a VMA of another shape; the mapping's error.
    fn map_dev_mem(
        &self,
        _vma: &mut UserVma<'_>,
        _bar_off: u64,
        _entry: Option<KBox<dyn MapRef>>,
    ) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Whether write-combining mappings of UAR pages work (upstream `mlx5_wc_support_get()`):
    /// blue-flame UARs and `bf_reg_size` need it.
    fn wc_supported(&self) -> bool {
        false
    }

    /// Maps `pages` for the device, writable by the device if `writable` (upstream
    /// `ib_dma_map_sgtable_attrs()` of a umem, `dma_map_page()`): one contiguous bus range
    /// (the simulator's IOMMU) or a bus address per page (the DMA API).
    ///
    /// # Errors
    ///
    /// `ENOMEM`; `ENODEV` once an mlx5_core function is gone.
    fn map_pages(&self, pages: &[PageRef], writable: bool) -> Result<DmaMap>;

    /// Maps pinned user memory for the device (upstream `ib_dma_map_sgtable_attrs()` of a
    /// umem); `addr` is the user address of its first page. A backend that keeps what it maps
    /// referenced (the simulator's IOMMU) keeps `pages`, the pin itself, until the unmap: one
    /// owner for the range, dropped once, and no page reference taken and dropped per page
    /// (262,144 of each for a 1 GiB MR); it places the range at `addr`'s alignment within
    /// 2 MiB, as an IOMMU's contiguous range of a huge page is, so that an MR's mkey takes
    /// large pages ([`crate::ib::pgsz`]). The default maps a reference to each page with
    /// [`Mlx5Hw::map_pages`] (the DMA API of a real function keeps nothing after the call).
    ///
    /// # Errors
    ///
    /// [`Mlx5Hw::map_pages`]'s.
    fn map_umem(&self, pages: UmemPages, writable: bool, addr: u64) -> Result<DmaMap> {
        let _ = addr;
        self.map_pages(&pages.page_refs()?, writable)
    }

    /// Allocates `size` bytes (whole pages, zeroed) of kernel memory the device may read and
    /// write (upstream `dma_alloc_coherent()` through `mlx5_frag_buf_alloc_node()`): kernel
    /// queue buffers and doorbell records.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, [`Mlx5Hw::map_pages`]'s errors.
    fn alloc_coherent(&self, size: usize) -> Result<DmaBuf> {
        let n = size.max(1).div_ceil(PAGE_SIZE);
        let mut pages = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            pages.push(PageRef::alloc_zeroed()?, GFP_KERNEL)?;
        }
        let map = self.map_pages(&pages, true)?;
        Ok(DmaBuf { map, pages })
    }

    /// The function's completion vectors (upstream `mlx5_comp_vectors_max()`, the device's
    /// `num_comp_vectors`): CQs name one of `0..n`. The simulator has one.
    fn num_comp_vectors(&self) -> u32 {
        1
    }

    /// The completion EQ for `vector` (upstream `mlx5_comp_eqn_get()`, which creates the EQ on
    /// first use). The simulator delivers completions without EQs: vector 0 is EQ 0.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a vector the function does not have; the EQ creation's errors.
    fn comp_eqn(&self, vector: u32) -> Result<u32> {
        if vector != 0 {
            return Err(EINVAL);
        }
        Ok(0)
    }

    /// Makes the kernel UAR page `index` (ALLOC_UAR's number) ringable by [`Mlx5Hw::ring`]
    /// (upstream `mlx5_get_uars_page()` maps `mdev->priv.uar`): mlx5_core functions
    /// `ioremap()` it; the simulator needs nothing. Process context.
    ///
    /// # Errors
    ///
    /// `ENOMEM` when the mapping fails, `EBUSY` if a kernel UAR is mapped already, `ENODEV`
    /// once an mlx5_core function is gone.
    fn map_kernel_uar(&self, _index: u32) -> Result {
        Ok(())
    }

    /// Undoes [`Mlx5Hw::map_kernel_uar`]; no [`Mlx5Hw::ring`] of `index` afterwards.
    fn unmap_kernel_uar(&self, _index: u32) {}

    /// Rings a doorbell of a kernel queue on UAR page `uar` (upstream `mlx5_write64()` to the
    /// UAR, after the doorbell record was written). May be called in atomic context.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a UAR that [`Mlx5Hw::map_kernel_uar`] did not map (mlx5_core functions),
    /// `ENODEV` once an mlx5_core function is gone.
    fn ring(&self, uar: u32, db: Doorbell, value: u64) -> Result;

    /// A CPU store of `value` (the 8 bytes stored, read as a big-endian number) at `offset` of
    /// the UAR page `uar_index` that user space mapped (`UarMem::Page`): the simulator's UAR
    /// page trap reports stores here (0x20 CQ arm, 0x800/0x900 send doorbell; anything else
    /// only wakes the device). A real function sees its UAR stores itself: nothing to do.
    /// Never sleeps.
    fn uar_doorbell(&self, _uar_index: u32, _offset: u32, _value: u64) {}

    /// Wakes the device to look at its doorbell records (the simulator's worker; a real
    /// function needs no wake-up). Never sleeps.
    fn kick(&self) {}

    /// Installs (or with `None` removes) the driver's event handler. After a removal returns,
    /// the old handler is not called any more.
    fn set_events(&self, handler: Option<Arc<dyn Mlx5Events>>);

    /// The Ethernet side of port `port` (1-based) that the driver's own interface sends and
    /// receives through: a simulated Ethernet function's port on its fabric's segment. `None`
    /// for an mlx5_core function (its interface is mlx5e's, not this driver's) and for an
    /// InfiniBand port.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    fn eth_port(&self, _port: u8) -> Result<Option<Arc<dyn EthPort>>> {
        Ok(None)
    }

    /// Executes a command and turns a firmware failure into an errno, logging it once
    /// (upstream `mlx5_cmd_exec()` = `mlx5_cmd_do()` + `mlx5_cmd_check()`).
    ///
    /// # Errors
    ///
    /// The errno of [`status_to_errno`] for a firmware failure, or `cmd_do`'s delivery error.
    fn exec(&self, inbox: &[u8], outbox: &mut [u8]) -> Result {
        let r = self.cmd_do(inbox, outbox);
        cmd_check(self.name(), r, inbox, outbox)
    }
}

/// Upstream `cmd_status_to_err()` (cmd.c): the errno a firmware status becomes.
///
/// # Errors
///
/// The errno of a non-OK status (upstream's table: `EIO`, `EINVAL`, `EBUSY`, `EAGAIN`,
/// `ENOMEM`, `ENOSPC`, `EFAULT`, ...).
pub(crate) fn status_to_errno(s: Status) -> Result {
    match s {
        Status::OK => Ok(()),
        Status::INT_ERR => Err(EIO),
        Status::BAD_OP_ERR => Err(EINVAL),
        Status::BAD_PARAM_ERR => Err(EINVAL),
        Status::BAD_SYS_STATE_ERR => Err(EIO),
        Status::BAD_RES_ERR => Err(EINVAL),
        Status::RES_BUSY => Err(EBUSY),
        Status::NOT_READY => Err(EAGAIN),
        Status::LIM_ERR => Err(ENOMEM),
        Status::BAD_RES_STATE_ERR => Err(EINVAL),
        Status::IX_ERR => Err(EINVAL),
        Status::NO_RES_ERR => Err(EAGAIN),
        Status::BAD_INP_LEN_ERR => Err(EIO),
        Status::BAD_OUTP_LEN_ERR => Err(EIO),
        Status::BAD_QP_STATE_ERR => Err(EINVAL),
        Status::BAD_PKT_ERR => Err(EINVAL),
        Status::BAD_SIZE_OUTS_CQES_ERR => Err(EINVAL),
        _ => Err(EIO),
    }
}

/// The `MLX5_CMD_OP_*` name of an opcode, for log lines (upstream `mlx5_command_str()`).
pub(crate) fn opcode_name(op: u16) -> &'static str {
    opcode::name(op).unwrap_or("unknown command opcode")
}

/// The `MLX5_CMD_STAT_*` name of a status (upstream `cmd_status_str()`).
pub(crate) fn status_name(s: Status) -> &'static str {
    status::ALL
        .iter()
        .find(|(_, v)| *v == s)
        .map_or("unknown status", |(n, _)| n)
}

/// Upstream `mlx5_cmd_check()`: a delivery error passes through; `EREMOTEIO` becomes the
/// status's errno, with one log line naming the command, status and syndrome. Like upstream
/// `cmd_status_print()`, the line is skipped for commands of a user context (uid != 0: DEVX
/// users see the status themselves), for DESTROY_MKEY and CREATE_UCTX (expected failures on
/// teardown and capability probing) and for NOT_READY.
fn cmd_check(name: &CStr, r: Result, inbox: &[u8], outbox: &[u8]) -> Result {
    match r {
        Ok(()) => {}
        Err(e) if e == EREMOTEIO => {}
        Err(e) => return Err(e),
    }
    // The outbox held at least the header (or cmd_do would have failed), so these reads cannot
    // fail; if they did, a status that is not OK is the safe reading.
    let st = mbox_out::status
        .get(outbox)
        .ok()
        .and_then(|v| u8::try_from(v).ok())
        .map_or(Status::INT_ERR, Status);
    let err = status_to_errno(st);
    if let Err(e) = err {
        let op = mbox_in::opcode.get(inbox).unwrap_or(0);
        let op = u16::try_from(op).unwrap_or(u16::MAX);
        let op_mod = mbox_in::op_mod.get(inbox).unwrap_or(0);
        let uid = mbox_in::uid.get(inbox).unwrap_or(0);
        let syndrome = mbox_out::syndrome.get(outbox).unwrap_or(0);
        if uid == 0
            && op != opcode::DESTROY_MKEY
            && op != opcode::CREATE_UCTX
            && st != Status::NOT_READY
        {
            pr_err!(
                "{}: {}(0x{:x}) op_mod(0x{:x}) failed, status {}(0x{:x}), syndrome (0x{:x}), err({})\n",
                name,
                opcode_name(op),
                op,
                op_mod,
                status_name(st),
                st.0,
                syndrome,
                e.to_errno()
            );
        }
    }
    err
}
