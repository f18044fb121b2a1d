// SPDX-License-Identifier: GPL-2.0

//! An emulated ConnectX PCI function: what upstream `mlx5_core` sees of a ConnectX-7 (or
//! ConnectX-6 Dx) through PCI, answered by the project's firmware model (`mlx5/fwsim/`,
//! compiled here unchanged, as in `host/prm`).
//!
//! * [`config`]: the 4 KiB configuration space (Mellanox ids, a 64-bit prefetchable BAR 0,
//!   the MSI-X and PCI Express capabilities).
//! * [`regs`]: BAR 0 offsets (`struct mlx5_init_seg`, MSI-X table and PBA, UAR pages).
//! * [`cmdq`]: the command queue in guest memory (`struct mlx5_cmd_layout`, mailbox chains of
//!   `struct mlx5_cmd_prot_block`), decoded into [`fwsim`] commands.
//! * [`function`]: [`CxFunction`], which ties them together: BAR 0 reads and writes, the
//!   doorbell, EQ doorbells in UAR pages, health counter and timer, MSI-X delivery, and the
//!   data path (UAR CQ-arm and send doorbells run the model's engine over guest memory;
//!   its events become EQEs).
//! * [`iova`]: page lists of CQs, QPs and mkeys kept on the host side, for buffers of more
//!   scattered pages than the model's 8 runs per object.
//!
//! The transport (vfio-user, `Documentation/pcifn.md`) is not part of this crate: it calls
//! [`CxFunction`] with the bytes of config and BAR accesses and gives it guest memory as a
//! [`GuestMemory`]. Nothing a guest writes can panic the model: every guest-controlled length
//! and address is checked.

#![deny(warnings, rust_2018_idioms)]
#![forbid(unsafe_code)]

// The pure layers, compiled as in host/prm; this crate uses only part of them.
#[allow(dead_code, unreachable_pub)]
#[path = "../../../mlx5/prm.rs"]
mod prm;

#[allow(dead_code, unreachable_pub)]
#[path = "../../../mlx5/fwsim/fwsim.rs"]
mod fwsim;

pub mod cmdq;
pub mod config;
pub mod function;
pub mod iova;
pub mod mem;
pub mod regs;
pub mod vfio_user;

pub use function::{CxFunction, Model};
pub use mem::{GuestMemory, MemError, VecMemory};
