// SPDX-License-Identifier: GPL-2.0

//! The device types every object names: the driver ([`Mlx5Ib`]), the device
//! ([`Mlx5IbDev`], upstream `struct mlx5_ib_dev`) and its ports ([`IbPort`]), and the
//! numbering of the driver's uverbs namespace ([`DRIVER_NS`], [`driver_ids!`]).
//!
//! The device data holds what the ops need for as long as the core's device lives: a
//! `'static` handle on the hardware, the attributes probe computed, the ports, the kernel UAR
//! page, the device's event tables. Verbs objects hold the device, so an object a kernel
//! consumer leaks past remove can still be destroyed (its commands go to the same function).
//!
//! This file imports no object: the objects (`crate::ib::cq`, `crate::ib::qp`, ...) import
//! it, and `crate::ib::ops` ties the two together (the [`Driver`](ib_core_rs::driver::Driver)
//! impl naming each object's driver data is there).

use crate::attrs::{DeviceAttrs, GenCaps, PortAttrs, PortImmutable as Mlx5PortImmutable};
use crate::hw::Mlx5Hw;
use crate::ib::deferred::DeferredDeallocs;
use crate::ib::events::{EventTable, Target};
use crate::ib::memic::MemicDb;
use ib_core_rs::attr::{DeviceAttr, LinkLayer};
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::Arc;

/// `1 << UVERBS_ID_NS_SHIFT`: the first id of the driver namespace, where the driver's
/// objects, methods and attributes (`crate::ib::uar`, `crate::ib::devx`, `crate::ib::dm`;
/// mlx5_user_ioctl_cmds.h) are numbered.
pub(crate) const DRIVER_NS: u16 = 1 << 12;

/// Declares the members of upstream's driver-namespace enums (`enum mlx5_ib_objects`,
/// `enum mlx5_ib_devx_methods`, ...; mlx5_user_ioctl_cmds.h) as private `u16` consts numbered
/// as the C enum numbers them: each list's first member is [`DRIVER_NS`] (or `= start` where
/// the driver leaves earlier members out), each next one more. The doc comment is the first
/// member's.
macro_rules! driver_ids {
    (@next $prev:ident) => {};
    (@next $prev:ident $name:ident $($rest:ident)*) => {
        const $name: u16 = $prev + 1;
        crate::ib::device::driver_ids!(@next $name $($rest)*);
    };
    ($($(#[$doc:meta])* $first:ident $(= $start:expr)? $(, $rest:ident)*;)*) => {
        $(
            $(#[$doc])*
            const $first: u16 = crate::ib::device::driver_ids!(@start $($start)?);
            crate::ib::device::driver_ids!(@next $first $($rest)*);
        )*
    };
    (@start) => {
        crate::ib::device::DRIVER_NS
    };
    (@start $start:expr) => {
        $start
    };
}
pub(crate) use driver_ids;

/// The mlx5 driver's types.
pub(crate) struct Mlx5Ib;

/// One port (upstream `struct mlx5_ib_port`, with what the `PORTS` stage learned).
pub(crate) struct IbPort {
    /// 1-based port number.
    pub(crate) num: u8,
    /// Link layer.
    pub(crate) link_layer: LinkLayer,
    /// `query_port` at probe (the `query_port` op asks the firmware again, as upstream).
    pub(crate) attrs: PortAttrs,
    /// `get_port_immutable`.
    pub(crate) immutable: Mlx5PortImmutable,
    /// InfiniBand: the GID table from firmware at probe (RoCE GIDs are in `roce_gids`).
    pub(crate) gids: KVec<[u8; 16]>,
    /// InfiniBand: the P_Key table at probe (Ethernet has the one default P_Key).
    pub(crate) pkeys: KVec<u16>,
    /// Ethernet: the port MAC (NIC vport `permanent_address`).
    pub(crate) mac: Option<[u8; 6]>,
    /// Ethernet: the GID table as programmed with SET_ROCE_ADDRESS at `IB_REG` (upstream keeps
    /// it in the core's software GID table; `query_gid` reads it here).
    pub(crate) roce_gids: KVec<[u8; 16]>,
}

/// Optional op groups chosen by capability (upstream `NON_DEFAULT_CB` and the `*_ops` tables
/// `mlx5_ib_stage_caps_init()` adds), for the core's op-table assembly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct OpGroups {
    /// `mlx5_ib_dev_xrc_ops` (`MLX5_CAP_GEN(xrc)`).
    pub(crate) xrc: bool,
    /// `mlx5_ib_dev_mw_ops` (`imaicl`).
    pub(crate) mw: bool,
    /// `mlx5_ib_dev_common_roce_ops` (Ethernet link layer).
    pub(crate) roce: bool,
    /// `mlx5_ib_dev_ipoib_enhanced_ops` is not offered: no IPoIB offloads here.
    pub(crate) ipoib: bool,
}

/// The device (upstream `struct mlx5_ib_dev`), embedded in the core's device allocation:
/// allocated before the probe stages ([`crate::dev::Mlx5Dev::probe`], upstream `mlx5r_probe()`
/// calls `ib_alloc_device()`), filled by them, read by the ops.
pub(crate) struct Mlx5IbDev {
    /// The function, whichever backend reaches it.
    pub(crate) hw: Arc<dyn Mlx5Hw>,
    /// QUERY_ADAPTER (`INIT`).
    pub(crate) vendor_id: u32,
    /// Board id (PSID, QUERY_ADAPTER), NUL padding dropped.
    pub(crate) board_id: KVec<u8>,
    /// Node GUID (`INIT`; the core's `node_guid` comes from `attrs`).
    pub(crate) node_guid: u64,
    /// System image GUID (`INIT`).
    pub(crate) sys_image_guid: u64,
    /// Node description (the NODE_DESC register, `INIT`), NUL padded.
    pub(crate) node_desc: [u8; 64],
    /// `query_device`, computed in `CAPS`.
    pub(crate) attrs: DeviceAttrs,
    /// Optional op groups (`NON_DEFAULT_CB`).
    pub(crate) ops: OpGroups,
    /// Ports, in order (`PORTS`).
    pub(crate) ports: KVec<IbPort>,
    /// The kernel PD (upstream `devr->p0`, `DEVICE_RESOURCES`).
    pub(crate) pdn: Option<u32>,
    /// The port's Q counter set (upstream `dev->port[0].cnts.set_id`, `COUNTERS`; None: the
    /// device reports no `max_qp_cnt`).
    pub(crate) qcnt: Option<u32>,
    /// The kernel UAR page (`BFREG`): CQ and QP doorbells of kernel objects.
    pub(crate) uar: u32,
    /// upstream `dev->mkey_var`: the variant byte of the next mkey.
    pub(crate) mkey_var: Atomic<u32>,
    /// The CQ and QP tables the device's events are delivered through (registered with the
    /// function as its event handler while the device is registered).
    pub(crate) events: Arc<EventTable>,
    /// User UARs whose deallocation the device refused while CQs or QPs still named them.
    pub(crate) deferred_deallocs: Arc<DeferredDeallocs>,
    /// The MEMIC window and its page bitmap (upstream `dev->dm`), with `device_mem_cap.memic`
    /// (`IB_REG`).
    pub(crate) memic: Option<Arc<MemicDb>>,
}

impl Mlx5IbDev {
    /// The device of `hw` as allocated, before the stages fill it.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new(hw: Arc<dyn Mlx5Hw>) -> Result<Self> {
        Ok(Self {
            deferred_deallocs: DeferredDeallocs::new(hw.clone())?,
            hw,
            vendor_id: 0,
            board_id: KVec::new(),
            node_guid: 0,
            sys_image_guid: 0,
            node_desc: [0; 64],
            attrs: DeviceAttrs::default(),
            ops: OpGroups::default(),
            ports: KVec::new(),
            pdn: None,
            qcnt: None,
            uar: 0,
            mkey_var: Atomic::new(0),
            events: EventTable::new()?,
            memic: None,
        })
    }

    /// The port's Q counter set id, 0 without one.
    pub(crate) fn qcnt_set(&self) -> u32 {
        self.qcnt.unwrap_or(0)
    }

    /// The port `num` (1-based).
    ///
    /// # Errors
    ///
    /// `EINVAL` for port 0 or a port the function does not have.
    pub(crate) fn port(&self, num: u32) -> Result<&IbPort> {
        let i = usize::try_from(num).map_err(|_| EINVAL)?;
        self.ports
            .get(i.checked_sub(1).ok_or(EINVAL)?)
            .ok_or(EINVAL)
    }

    /// sysfs `hw_rev` (upstream `hw_rev_show()`: `%x` of the PCI revision).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn hw_rev(&self) -> Result<CString> {
        CString::try_from_fmt(fmt!("{:x}", self.hw.identity().pci_revision))
    }

    /// sysfs `hca_type` (upstream `hca_type_show()`: `MT%d` of the PCI device id).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn hca_type(&self) -> Result<CString> {
        CString::try_from_fmt(fmt!("MT{}", self.hw.identity().pci_device))
    }

    /// sysfs `board_id` (upstream `board_id_show()`: the PSID).
    ///
    /// # Errors
    ///
    /// `EINVAL` if the board id is not UTF-8, `ENOMEM`.
    pub(crate) fn board_id(&self) -> Result<CString> {
        let s = core::str::from_utf8(&self.board_id).map_err(|_| EINVAL)?;
        CString::try_from_fmt(fmt!("{}", s))
    }

    /// `fw_ver` (upstream `get_dev_fw_str()`: `%d.%d.%04d` of fw_rev_maj/min/sub).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn fw_ver(&self) -> Result<CString> {
        let (a, b, c) = self.hw.identity().fw_rev;
        CString::try_from_fmt(fmt!("{}.{}.{:04}", a, b, c))
    }

    /// sysfs `fw_pages` and `reg_pages` (upstream `fw_pages_show()`/`reg_pages_show()`:
    /// `mdev->priv.fw_pages` / `reg_pages`, pages given to firmware by MANAGE_PAGES). The
    /// simulator asks for no pages (it has no boot/init page requests), so both are 0; the
    /// mlx5_core backend does not register an RDMA device yet.
    pub(crate) fn fw_pages(&self) -> (u32, u32) {
        (0, 0)
    }

    /// A CQ's or QP's destroy: its event target leaves the device's table, then the DESTROY
    /// command; when it succeeds, the UARs whose deallocation waited for the object are
    /// retried, when the device refuses it, the target goes back.
    ///
    /// # Errors
    ///
    /// `destroy`'s.
    pub(crate) fn destroy_detached<T: Target>(
        &self,
        target: &Arc<T>,
        destroy: impl FnOnce() -> Result,
    ) -> Result {
        let detached = self.events.detach(target);
        let r = destroy();
        match r {
            Ok(()) => self.deferred_deallocs.retry(),
            Err(_) => self.events.reattach(target, detached),
        }
        r
    }

    /// The variant byte of a new mkey (upstream `assign_mkey_variant()`).
    pub(crate) fn next_mkey_variant(&self) -> u8 {
        (self.mkey_var.fetch_add(1, Relaxed).wrapping_add(1) & 0xff) as u8
    }
}

/// The general capability page.
///
/// # Errors
///
/// `EIO` if the function has no general capability page.
pub(crate) fn gen(d: &Mlx5IbDev) -> Result<GenCaps<'_>> {
    GenCaps::of(&*d.hw)
}

/// upstream `mlx5_ib_query_device()`: the attributes computed in `CAPS`.
pub(crate) fn device_attr(a: &DeviceAttrs) -> DeviceAttr {
    DeviceAttr {
        fw_ver: a.fw_ver,
        node_guid: a.node_guid,
        sys_image_guid: a.sys_image_guid,
        vendor_id: a.vendor_id,
        vendor_part_id: a.vendor_part_id,
        hw_ver: a.hw_ver,
        max_qp: a.max_qp,
        max_qp_wr: a.max_qp_wr,
        max_cq: a.max_cq,
        max_cqe: a.max_cqe,
        max_mr: a.max_mr,
        max_pd: a.max_pd,
        device_cap_flags: a.device_cap_flags,
        timestamp_mask: a.timestamp_mask,
        hca_core_clock: a.hca_core_clock,
        max_cq_moderation_count: a.max_cq_moderation_count,
        max_cq_moderation_period: a.max_cq_moderation_period,
        max_dm_size: a.max_dm_size,
        max_mr_size: a.max_mr_size,
        page_size_cap: a.page_size_cap,
        max_send_sge: a.max_send_sge,
        max_recv_sge: a.max_recv_sge,
        max_sge_rd: a.max_sge_rd,
        max_qp_rd_atom: a.max_qp_rd_atom,
        max_qp_init_rd_atom: a.max_qp_init_rd_atom,
        max_res_rd_atom: a.max_res_rd_atom,
        atomic_cap: a.atomic_cap,
        max_srq: a.max_srq,
        max_srq_wr: a.max_srq_wr,
        max_srq_sge: a.max_srq_sge,
        max_mw: a.max_mw,
        max_mcast_grp: a.max_mcast_grp,
        max_mcast_qp_attach: a.max_mcast_qp_attach,
        max_total_mcast_qp_attach: a.max_total_mcast_qp_attach,
        max_ah: a.max_ah,
        local_ca_ack_delay: a.local_ca_ack_delay,
    }
}
