// SPDX-License-Identifier: GPL-2.0

//! The driver trait: the types a driver keeps in the core's allocations.
//!
//! Upstream a driver embeds `struct ib_device` at the start of its own
//! device struct (`ib_alloc_device(mlx5_ib_dev, ib_dev)`) and asks the core
//! for driver-sized objects (`rdma_zalloc_drv_obj()` with `INIT_RDMA_OBJ_SIZE`).
//! Here the driver names its private types and the core embeds them:
//! [`Device<D>`](crate::device::Device) holds a `D::DevData`,
//! [`Pd<D>`](crate::verbs::Pd) a `D::PdData`, and so on, in the same
//! allocation as the core part, so neither side needs a cast.
//!
//! The operations themselves are in [`crate::ops`]: a driver provides one or
//! more partial tables ([`crate::ops::DeviceOps`] impls), as mlx5 installs
//! several `ib_device_ops` tables.

/// Identifies the driver to user space (upstream `enum rdma_driver_id`,
/// `include/uapi/rdma/rdma_user_ioctl_cmds.h`). rdma-core matches its
/// provider library by this value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum DriverId {
    /// `RDMA_DRIVER_UNKNOWN`: no id set (a partial table that does not
    /// claim one).
    Unknown = 0,
    /// `RDMA_DRIVER_MLX5`.
    Mlx5 = 1,
    /// `RDMA_DRIVER_RXE` (the 15th entry of `enum rdma_driver_id`, after
    /// QEDR = 11, HNS = 12 and USNIC = 13).
    Rxe = 14,
}

/// An RDMA device driver: the private data it keeps per device and per
/// object. The core allocates the objects; the driver's ops create the
/// private parts.
pub trait Driver: Sized + Send + Sync + 'static {
    /// Per-device private data (upstream: the driver struct that embeds
    /// `struct ib_device`, e.g. `struct mlx5_ib_dev`).
    type DevData: Send + Sync;
    /// Per-PD private data (upstream `struct mlx5_ib_pd`).
    type PdData: Send + Sync;
    /// Per-CQ private data (upstream `struct mlx5_ib_cq`).
    type CqData: Send + Sync;
    /// Per-QP private data (upstream `struct mlx5_ib_qp`).
    type QpData: Send + Sync;
    /// Per-SRQ private data (upstream `struct mlx5_ib_srq`).
    type SrqData: Send + Sync;
    /// Per-MR private data (upstream `struct mlx5_ib_mr`).
    type MrData: Send + Sync;
    /// The driver part of an address handle.
    type AhData: Send + Sync;
    /// The driver part of a memory window (upstream `struct mlx5_ib_mw`).
    type MwData: Send + Sync;
    /// The driver part of device memory (upstream `struct mlx5_ib_dm`).
    type DmData: Send + Sync;
}

/// The types of the uverbs driver API that the core's op table and verbs objects name: a
/// driver's uverbs object declarations and the call of one of its uverbs methods.
///
/// The uverbs layer is built on the core (it is compiled into this crate, above it), so the
/// core does not import it: it names these types through this trait, which the uverbs layer
/// implements once for every driver (`uverbs/driver_api.rs`: `ObjectSpec` and
/// `DriverCall<'a, 'a, D>`). A driver never implements it; it writes the uverbs types in its
/// [`DeviceOps`](crate::ops::DeviceOps) impl, which are the same types.
pub trait UverbsApi: Driver {
    /// A driver's uverbs object declaration (uverbs `driver_api::ObjectSpec`).
    type ObjectSpec: 'static;
    /// One call of a driver's uverbs method (uverbs `driver_api::DriverCall`).
    type Call<'a>;
}
