// SPDX-License-Identifier: GPL-2.0

//! Host build of the pure mlx5 layers: the PRM layout table (`mlx5/prm.rs`), the ConnectX
//! firmware simulator (`mlx5/fwsim/`), the pure part of its device glue
//! (`mlx5/simdev/trap_order.rs`) and of the RDMA driver (`mlx5/ib/pgsz.rs`). The same files
//! are compiled unchanged into the kernel crate `mlx5_ib_rs`; this crate only exists so their
//! inline tests, the fuzz test and `tools/prm-check` run with plain `cargo`. The module tree
//! matches the kernel crate's (`crate::prm`, `crate::fwsim` at the root), so `crate::` paths
//! resolve the same in both.

#![no_std]
#![deny(warnings, unreachable_pub, rust_2018_idioms)]
#![forbid(unsafe_code)]
// Nothing in this crate calls the simulator outside `cfg(test)`: its caller is the kernel crate.
#![cfg_attr(not(test), allow(dead_code))]

#[cfg(test)]
extern crate std;

#[path = "../../../mlx5/prm.rs"]
pub(crate) mod prm;

#[path = "../../../mlx5/fwsim/fwsim.rs"]
pub(crate) mod fwsim;

/// The pure part of the simulated device's glue (`mlx5/simdev/`): the order of UAR traps.
#[path = "../../../mlx5/simdev"]
pub(crate) mod simdev {
    pub(crate) mod trap_order;
}

/// The pure part of the RDMA driver (`mlx5/ib/`): an MTT mkey's page size and entries.
#[path = "../../../mlx5/ib"]
pub(crate) mod ib {
    pub(crate) mod pgsz;
}

#[path = "../../../mlx5/uabi.rs"]
pub(crate) mod uabi;
/// Typed user-ABI structs (`uapi_structs!`), shared with uverbs.
#[path = "../../../uverbs/abi/layout.rs"]
pub(crate) mod uapi_layout;
