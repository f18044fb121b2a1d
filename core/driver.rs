// SPDX-License-Identifier: GPL-2.0

//! The driver trait: what an RDMA device driver implements.
//!
//! Optional operations use the `#[vtable]` pattern: the core learns from the
//! generated `HAS_*` constants which ones a driver provides (upstream: the
//! NULL-or-not slots of `struct ib_device_ops`).

use kernel::{error::VTABLE_DEFAULT_ERROR, prelude::*, str::CString};

/// Identifies the driver to user space (upstream `enum rdma_driver_id`,
/// `include/uapi/rdma/rdma_user_ioctl_cmds.h`). rdma-core matches its
/// provider library by this value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum DriverId {
    /// `RDMA_DRIVER_UNKNOWN`.
    Unknown = 0,
    /// `RDMA_DRIVER_MLX5`.
    Mlx5 = 1,
    /// `RDMA_DRIVER_RXE`.
    Rxe = 11,
}

/// Device attributes (upstream `struct ib_device_attr`, the fields used so far).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Firmware version as the driver encodes it.
    pub fw_ver: u64,
    /// IEEE vendor id (0x02c9 for Mellanox/NVIDIA).
    pub vendor_id: u32,
    /// Vendor part id (the PCI device id for mlx5).
    pub vendor_part_id: u32,
    /// Hardware revision.
    pub hw_ver: u32,
    /// Maximum number of QPs.
    pub max_qp: u32,
    /// Maximum number of CQs.
    pub max_cq: u32,
    /// Maximum number of PDs.
    pub max_pd: u32,
}

/// The operations an RDMA driver provides to the core.
#[vtable]
pub trait Driver: Send + Sync + 'static {
    /// The driver id reported to user space.
    const DRIVER_ID: DriverId;

    /// Reports the device attributes (upstream `ops.query_device`).
    fn query_device(&self) -> Result<DeviceAttr>;

    /// Formats the firmware version as sysfs `fw_ver` shows it
    /// (upstream `ops.get_dev_fw_str`). Optional.
    fn get_dev_fw_str(&self) -> Result<CString> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports a port's attributes (upstream `ops.query_port`).
    fn query_port(&self, _port: u32) -> Result<()> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports a port's immutable data (upstream `ops.get_port_immutable`).
    fn get_port_immutable(&self, _port: u32) -> Result<()> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}
