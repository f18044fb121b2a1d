// SPDX-License-Identifier: GPL-2.0

//! `/sys/class/infiniband/<dev>/` (upstream `drivers/infiniband/core/sysfs.c`).
//!
//! A registered device is a class device of the `infiniband` class holding an [`IbSysfs`]
//! (a reference on the device). Its files, with upstream's formats:
//!
//! * `node_type` (`1: CA`), `node_guid` and `sys_image_guid` (`%04x:%04x:%04x:%04x`),
//!   `fw_ver` (the driver's `get_dev_fw_str`), `node_desc`, the `device` link to the parent
//!   (when the driver set one), and an optional driver group ([`DriverGroup`]; mlx5's
//!   `hw_rev`, `hca_type`, `board_id`, ...);
//! * `ports/N/`: `state`, `lid`, `lid_mask_count`, `sm_lid`, `sm_sl`, `cap_mask`, `rate`,
//!   `phys_state`, `link_layer` (each `show` queries the driver like upstream's
//!   `ib_query_port()`), `gids/I` (the zero GID for an empty entry), `pkeys/I` (only with a
//!   P_Key table), `gid_attrs/{ndevs,types}/I` (`EINVAL` for an empty entry or no netdev).
//!
//! The device is added with its uevent held back and announced once the clients are added
//! (upstream `ib_register_device()`); it is removed at unregister after the last registration
//! reference is back (upstream `__ib_unregister_device()`: `ib_free_port_attrs()`,
//! `device_del()`).

use crate::attr::{LinkLayer, PortAttr, PortState};
use crate::class::{AttrGroup, Class, ClassDevice, DeviceSpec, DirAttr};
use crate::global::IB_CLASS;
use crate::ib_device::{DeviceCore, IbDevice};
use core::fmt::Write;
use kernel::prelude::*;
use kernel::sync::Arc;

pub use crate::class::{DevAttr, SysfsBuf};

/// `RDMA_NODE_IB_CA`: every device of this stack is a channel adapter.
pub const RDMA_NODE_IB_CA: u8 = 1;

/// What the class device of an RDMA device holds: the device, for the `show` functions.
pub struct IbSysfs {
    pub(crate) dev: Arc<dyn IbDevice>,
}

impl IbSysfs {
    /// A sysfs view of `dev` (for tests of `show` functions; registration makes its own).
    pub fn new(dev: Arc<dyn IbDevice>) -> Self {
        IbSysfs { dev }
    }

    /// The device's core part.
    pub fn core(&self) -> &DeviceCore {
        self.dev.core()
    }
}

/// A driver's attribute group (upstream `ib_device_ops.device_group` /
/// `rdma_set_device_sysfs_group()`): files in the device's directory (or in a subdirectory
/// `name`), whose `show` get the [`IbSysfs`].
pub struct DriverGroup {
    /// Subdirectory name; `None` for the device directory itself.
    pub name: Option<&'static CStr>,
    /// The attributes, `static`s made with [`DevAttr::ro`].
    pub attrs: &'static [&'static DevAttr<IbSysfs>],
}

fn fmt_err(_: core::fmt::Error) -> Error {
    EINVAL
}

fn write_guid(b: &mut SysfsBuf<'_>, g: u64) -> Result {
    writeln!(
        b,
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (g >> 48) & 0xffff,
        (g >> 32) & 0xffff,
        (g >> 16) & 0xffff,
        g & 0xffff
    )
    .map_err(fmt_err)
}

fn node_type_show(d: &IbSysfs, b: &mut SysfsBuf<'_>) -> Result {
    let _ = d;
    writeln!(b, "{}: CA", RDMA_NODE_IB_CA).map_err(fmt_err)
}

fn node_guid_show(d: &IbSysfs, b: &mut SysfsBuf<'_>) -> Result {
    write_guid(b, d.core().attrs().node_guid)
}

fn sys_image_guid_show(d: &IbSysfs, b: &mut SysfsBuf<'_>) -> Result {
    write_guid(b, d.core().attrs().sys_image_guid)
}

/// Writes the first `n` bytes of `text` as a line; `EINVAL` if they are not UTF-8.
fn write_text_line(b: &mut SysfsBuf<'_>, text: &[u8], n: usize) -> Result {
    let s = core::str::from_utf8(text.get(..n).unwrap_or(&[])).map_err(|_| EINVAL)?;
    writeln!(b, "{}", s).map_err(fmt_err)
}

fn fw_ver_show(d: &IbSysfs, b: &mut SysfsBuf<'_>) -> Result {
    let mut fw = [0u8; 64];
    let n = d.dev.fw_str(&mut fw);
    write_text_line(b, &fw, n)
}

fn node_desc_show(d: &IbSysfs, b: &mut SysfsBuf<'_>) -> Result {
    let desc = d.core().node_desc();
    let n = desc.iter().position(|&c| c == 0).unwrap_or(desc.len());
    write_text_line(b, &desc, n)
}

static NODE_TYPE: DevAttr<IbSysfs> = DevAttr::ro(c"node_type", node_type_show);
static NODE_GUID: DevAttr<IbSysfs> = DevAttr::ro(c"node_guid", node_guid_show);
static SYS_IMAGE_GUID: DevAttr<IbSysfs> = DevAttr::ro(c"sys_image_guid", sys_image_guid_show);
static FW_VER: DevAttr<IbSysfs> = DevAttr::ro(c"fw_ver", fw_ver_show);
static NODE_DESC: DevAttr<IbSysfs> = DevAttr::ro(c"node_desc", node_desc_show);
static DEV_ATTRS: [&DevAttr<IbSysfs>; 5] =
    [&NODE_TYPE, &NODE_GUID, &SYS_IMAGE_GUID, &FW_VER, &NODE_DESC];

/// upstream `ib_port_state_to_str()`.
pub fn port_state_str(s: PortState) -> &'static str {
    match s {
        PortState::Nop => "NOP",
        PortState::Down => "DOWN",
        PortState::Init => "INIT",
        PortState::Armed => "ARMED",
        PortState::Active => "ACTIVE",
        PortState::ActiveDefer => "ACTIVE_DEFER",
    }
}

/// upstream `phys_state_to_str()`.
pub fn phys_state_str(s: u8) -> &'static str {
    match s {
        1 => "Sleep",
        2 => "Polling",
        3 => "Disabled",
        4 => "PortConfigurationTraining",
        5 => "LinkUp",
        6 => "LinkErrorRecovery",
        7 => "Phy Test",
        _ => "<unknown>",
    }
}

/// upstream `rate_show()` (`ib_port_attr_to_speed_info()`, `ib_width_enum_to_int()`).
fn write_rate(b: &mut SysfsBuf<'_>, a: &PortAttr) -> Result {
    let (speed, name) = match a.active_speed {
        2 => (50, " DDR"),
        4 => (100, " QDR"),
        8 => (100, " FDR10"),
        16 => (140, " FDR"),
        32 => (250, " EDR"),
        64 => (500, " HDR"),
        128 => (1000, " NDR"),
        256 => (2000, " XDR"),
        _ => (25, " SDR"),
    };
    let width: i32 = match a.active_width {
        1 => 1,
        16 => 2,
        2 => 4,
        4 => 8,
        8 => 12,
        _ => -1,
    };
    let rate = speed * width;
    if rate < 0 {
        return Err(EINVAL);
    }
    writeln!(
        b,
        "{}{} Gb/sec ({}X{})",
        rate / 10,
        if rate % 10 != 0 { ".5" } else { "" },
        width,
        name
    )
    .map_err(fmt_err)
}

fn query(d: &IbSysfs, port: u32) -> Result<PortAttr> {
    d.dev.query_port_attr(port)
}

fn state_show(d: &IbSysfs, port: u32, b: &mut SysfsBuf<'_>) -> Result {
    let a = query(d, port)?;
    writeln!(b, "{}: {}", a.state as u8, port_state_str(a.state)).map_err(fmt_err)
}

fn lid_show(d: &IbSysfs, port: u32, b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "0x{:x}", query(d, port)?.lid).map_err(fmt_err)
}

fn lid_mask_count_show(d: &IbSysfs, port: u32, b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "{}", query(d, port)?.lmc).map_err(fmt_err)
}

fn sm_lid_show(d: &IbSysfs, port: u32, b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "0x{:x}", query(d, port)?.sm_lid).map_err(fmt_err)
}

fn sm_sl_show(d: &IbSysfs, port: u32, b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "{}", query(d, port)?.sm_sl).map_err(fmt_err)
}

fn cap_mask_show(d: &IbSysfs, port: u32, b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "0x{:08x}", query(d, port)?.port_cap_flags).map_err(fmt_err)
}

fn rate_show(d: &IbSysfs, port: u32, b: &mut SysfsBuf<'_>) -> Result {
    write_rate(b, &query(d, port)?)
}

fn phys_state_show(d: &IbSysfs, port: u32, b: &mut SysfsBuf<'_>) -> Result {
    let a = query(d, port)?;
    writeln!(b, "{}: {}", a.phys_state, phys_state_str(a.phys_state)).map_err(fmt_err)
}

fn link_layer_show(d: &IbSysfs, port: u32, b: &mut SysfsBuf<'_>) -> Result {
    let s = match d.core().port_immutable(port)?.link_layer {
        LinkLayer::Infiniband => "InfiniBand",
        LinkLayer::Ethernet => "Ethernet",
    };
    writeln!(b, "{}", s).map_err(fmt_err)
}

static STATE: DirAttr<IbSysfs> = DirAttr::ro(c"state", state_show);
static LID: DirAttr<IbSysfs> = DirAttr::ro(c"lid", lid_show);
static LID_MASK_COUNT: DirAttr<IbSysfs> = DirAttr::ro(c"lid_mask_count", lid_mask_count_show);
static SM_LID: DirAttr<IbSysfs> = DirAttr::ro(c"sm_lid", sm_lid_show);
static SM_SL: DirAttr<IbSysfs> = DirAttr::ro(c"sm_sl", sm_sl_show);
static CAP_MASK: DirAttr<IbSysfs> = DirAttr::ro(c"cap_mask", cap_mask_show);
static RATE: DirAttr<IbSysfs> = DirAttr::ro(c"rate", rate_show);
static PHYS_STATE: DirAttr<IbSysfs> = DirAttr::ro(c"phys_state", phys_state_show);
static LINK_LAYER: DirAttr<IbSysfs> = DirAttr::ro(c"link_layer", link_layer_show);
static PORT_ATTRS: [&DirAttr<IbSysfs>; 9] = [
    &STATE,
    &LID,
    &LID_MASK_COUNT,
    &SM_LID,
    &SM_SL,
    &CAP_MASK,
    &RATE,
    &PHYS_STATE,
    &LINK_LAYER,
];

/// upstream `show_port_gid()`: `%pI6` (eight groups of four hex digits), the zero GID when
/// the entry is empty or unreadable.
fn gid_show(d: &IbSysfs, port: u32, index: u32, b: &mut SysfsBuf<'_>) -> Result {
    let g = d
        .core()
        .query_gid(port, index)
        .map(|g| g.0)
        .unwrap_or([0; 16]);
    for i in 0..8 {
        let w = u16::from_be_bytes([g[2 * i], g[2 * i + 1]]);
        write!(b, "{}{:04x}", if i == 0 { "" } else { ":" }, w).map_err(fmt_err)?;
    }
    writeln!(b).map_err(fmt_err)
}

/// Most hardware counters a port may have (one read fills a stack array).
const MAX_HW_STATS: usize = 64;

/// upstream `hw_stat_port_show()` (`%llu`), fresh from the driver on every read; the file after
/// the counters is `lifespan` (upstream `show_stats_lifespan()`: the default 10 ms; this core
/// does not cache the values, so the lifespan is not used, and the file cannot be written).
fn hw_counter_show(d: &IbSysfs, port: u32, index: u32, b: &mut SysfsBuf<'_>) -> Result {
    let dev = &d.dev;
    let n = dev.hw_stat_names(port).map_or(0, |n| n.len());
    let i = usize::try_from(index)?;
    if i == n {
        return writeln!(b, "10").map_err(fmt_err);
    }
    let mut v = [0u64; MAX_HW_STATS];
    let got = dev.hw_stats(port, &mut v)?;
    if i >= got.min(MAX_HW_STATS) {
        return Err(EINVAL);
    }
    writeln!(b, "{}", v.get(i).copied().unwrap_or(0)).map_err(fmt_err)
}

/// upstream `cm_show_counter()` (`%ld`) for group `group` of
/// [`crate::cm::service::COUNTER_GROUPS`].
fn cm_counter_show(
    d: &IbSysfs,
    port: u32,
    group: usize,
    index: u32,
    b: &mut SysfsBuf<'_>,
) -> Result {
    let v = crate::cm::service::counter(d.core().index(), port, group, usize::try_from(index)?);
    writeln!(b, "{}", v).map_err(fmt_err)
}

/// `cm_tx_msgs/`.
fn cm_tx_msgs_show(d: &IbSysfs, port: u32, index: u32, b: &mut SysfsBuf<'_>) -> Result {
    cm_counter_show(d, port, 0, index, b)
}

/// `cm_tx_retries/`.
fn cm_tx_retries_show(d: &IbSysfs, port: u32, index: u32, b: &mut SysfsBuf<'_>) -> Result {
    cm_counter_show(d, port, 1, index, b)
}

/// `cm_rx_msgs/`.
fn cm_rx_msgs_show(d: &IbSysfs, port: u32, index: u32, b: &mut SysfsBuf<'_>) -> Result {
    cm_counter_show(d, port, 2, index, b)
}

/// `cm_rx_duplicates/`.
fn cm_rx_duplicates_show(d: &IbSysfs, port: u32, index: u32, b: &mut SysfsBuf<'_>) -> Result {
    cm_counter_show(d, port, 3, index, b)
}

/// The show function of each CM counter group, in `COUNTER_GROUPS`' order.
#[allow(clippy::type_complexity)]
const CM_COUNTER_SHOW: [fn(&IbSysfs, u32, u32, &mut SysfsBuf<'_>) -> Result; 4] = [
    cm_tx_msgs_show,
    cm_tx_retries_show,
    cm_rx_msgs_show,
    cm_rx_duplicates_show,
];

/// upstream `show_port_pkey()`.
fn pkey_show(d: &IbSysfs, port: u32, index: u32, b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "0x{:04x}", d.core().get_cached_pkey(port, index)?).map_err(fmt_err)
}

/// upstream `show_port_gid_attr_gid_type()`: `EINVAL` for an empty entry.
fn gid_type_show(d: &IbSysfs, port: u32, index: u32, b: &mut SysfsBuf<'_>) -> Result {
    let t = d.core().query_gid_type(port, index).map_err(|_| EINVAL)?;
    writeln!(b, "{}", t.as_str()).map_err(fmt_err)
}

/// upstream `show_port_gid_attr_ndev()`: the name of the GID's netdev; `EINVAL` for an empty
/// entry or a GID without a netdev (a table the driver reports).
fn gid_ndev_show(d: &IbSysfs, port: u32, index: u32, b: &mut SysfsBuf<'_>) -> Result {
    let nd = d.core().gid_ndev(port, index).map_err(|_| EINVAL)?;
    let nd = nd.ok_or(EINVAL)?;
    writeln!(b, "{}", nd.name()).map_err(fmt_err)
}

/// The `show` functions, for KUnit tests (the KUnit kthread cannot read `/sys`).
pub mod show {
    use super::*;

    /// A device attribute by name (`node_type`, `node_guid`, ...).
    ///
    /// # Errors
    ///
    /// `ENOENT` for a name the device directory does not have; the attribute's own errors (a
    /// driver query).
    pub fn dev(d: &IbSysfs, name: &str, b: &mut SysfsBuf<'_>) -> Result {
        let f = match name {
            "node_type" => node_type_show,
            "node_guid" => node_guid_show,
            "sys_image_guid" => sys_image_guid_show,
            "fw_ver" => fw_ver_show,
            "node_desc" => node_desc_show,
            _ => return Err(ENOENT),
        };
        f(d, b)
    }

    /// A file of `ports/N/` by its path below it (`state`, `gids/0`, `pkeys/1`,
    /// `gid_attrs/types/0`, ...).
    ///
    /// # Errors
    ///
    /// `ENOENT` for a path the port directory does not have (or a bad index), `EINVAL` for a
    /// bad port; the attribute's own errors (a driver query).
    pub fn port(d: &IbSysfs, port: u32, path: &str, b: &mut SysfsBuf<'_>) -> Result {
        let f = match path {
            "state" => state_show,
            "lid" => lid_show,
            "lid_mask_count" => lid_mask_count_show,
            "sm_lid" => sm_lid_show,
            "sm_sl" => sm_sl_show,
            "cap_mask" => cap_mask_show,
            "rate" => rate_show,
            "phys_state" => phys_state_show,
            "link_layer" => link_layer_show,
            _ => {
                let (dir, idx) = path.rsplit_once('/').ok_or(ENOENT)?;
                let idx: u32 = idx.parse().map_err(|_| ENOENT)?;
                let f = match dir {
                    "gids" => gid_show,
                    "pkeys" => pkey_show,
                    "gid_attrs/types" => gid_type_show,
                    "gid_attrs/ndevs" => gid_ndev_show,
                    _ => return Err(ENOENT),
                };
                return f(d, port, idx, b);
            }
        };
        f(d, port, b)
    }
}

/// Registers the `infiniband` class (module init).
///
/// # Errors
///
/// `EEXIST` if the class exists (the upstream `ib_core` is loaded), `ENOMEM`.
pub(crate) fn init() -> Result {
    let class = Arc::new(Class::register(c"infiniband", None, &[])?, GFP_KERNEL)?;
    *IB_CLASS.lock() = Some(class);
    Ok(())
}

/// Unregisters the class (module exit, after every device is gone).
pub(crate) fn exit() {
    let class = IB_CLASS.lock().take();
    drop(class);
}

/// The class device of a registered RDMA device.
pub(crate) struct Sysfs(ClassDevice<IbSysfs>);

impl Sysfs {
    /// Adds the device and its port directories (upstream `ib_setup_device_attrs()`,
    /// `device_add()`, `ib_setup_port_attrs()`), with the `KOBJ_ADD` uevent held back until
    /// [`Sysfs::announce`].
    ///
    /// # Errors
    ///
    /// `ENODEV` if the class is not registered, `ENOMEM`, `EEXIST`.
    pub(crate) fn add(
        dev: Arc<dyn IbDevice>,
        driver_group: Option<&'static DriverGroup>,
    ) -> Result<Sysfs> {
        let core = dev.core();
        let name = core.name();
        let nports = core.phys_port_cnt();
        let parent = core.parent();
        let mut groups = KVec::new();
        groups.push(
            AttrGroup {
                name: None,
                attrs: &DEV_ATTRS,
            },
            GFP_KERNEL,
        )?;
        if let Some(g) = driver_group {
            groups.push(
                AttrGroup {
                    name: g.name,
                    attrs: g.attrs,
                },
                GFP_KERNEL,
            )?;
        }
        let mut imm = KVec::new();
        for port in 1..=nports {
            imm.push(core.port_immutable(port)?, GFP_KERNEL)?;
        }
        let mut cd = {
            let class = IB_CLASS.lock();
            let class = class.as_ref().ok_or(ENODEV)?;
            ClassDevice::register_quiet(
                DeviceSpec {
                    class,
                    parent: parent.as_deref(),
                    devt: None,
                    groups: &groups,
                },
                fmt!("{}", name),
                IbSysfs { dev: dev.clone() },
            )?
        };
        let ports = cd.add_dir(None, fmt!("ports"), 0, &[])?;
        for (i, im) in imm.iter().enumerate() {
            let port = i as u32 + 1;
            let p = cd.add_dir(Some(ports), fmt!("{}", port), port, &PORT_ATTRS)?;
            cd.add_indexed_dir(Some(p), fmt!("gids"), port, im.gid_tbl_len, gid_show)?;
            if im.pkey_tbl_len != 0 {
                cd.add_indexed_dir(Some(p), fmt!("pkeys"), port, im.pkey_tbl_len, pkey_show)?;
            }
            let ga = cd.add_dir(Some(p), fmt!("gid_attrs"), port, &[])?;
            cd.add_indexed_dir(Some(ga), fmt!("ndevs"), port, im.gid_tbl_len, gid_ndev_show)?;
            cd.add_indexed_dir(Some(ga), fmt!("types"), port, im.gid_tbl_len, gid_type_show)?;
            if let Some(names) = dev.hw_stat_names(port) {
                let mut files = KVec::with_capacity(names.len() + 1, GFP_KERNEL)?;
                files.extend_from_slice(names, GFP_KERNEL)?;
                files.push(c"lifespan", GFP_KERNEL)?;
                cd.add_named_dir(Some(p), fmt!("hw_counters"), port, &files, hw_counter_show)?;
            }
            // upstream cm_add_one(): ib_port_register_client_groups(cm_counter_groups).
            for (name, show) in crate::cm::service::COUNTER_GROUPS
                .iter()
                .zip(CM_COUNTER_SHOW)
            {
                let names = &crate::cm::service::COUNTER_NAMES;
                cd.add_named_dir(Some(p), fmt!("{}", name.to_str()?), port, names, show)?;
            }
        }
        Ok(Sysfs(cd))
    }

    /// Renames the class device (upstream `device_rename(&ibdev->dev, name)`).
    ///
    /// # Errors
    ///
    /// [`ClassDevice::rename`]'s.
    pub(crate) fn rename(&self, name: &CStr) -> Result {
        self.0.rename(name)
    }

    /// Sends the held-back `KOBJ_ADD` (upstream: after `enable_device_and_get()`).
    pub(crate) fn announce(&self) {
        self.0.announce();
    }
}
