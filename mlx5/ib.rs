// SPDX-License-Identifier: GPL-2.0

//! The RDMA device of a function (upstream `drivers/infiniband/hw/mlx5/`), one file per verbs
//! object as upstream's cq.c, qp.c, srq.c, mr.c, ... Each object's file holds both its kernel
//! path (kernel consumers) and its user path (libmlx5 through uverbs).
//!
//! Imports run one way, down this list (and into the crate's lower files: `hw`, `attrs`,
//! `cmd`, `prm`, `uabi`):
//!
//! 1. [`ops`]: the op tables, the `Driver` impl and `assemble_ops`; the one file that names
//!    every object. Above it only the probe (`crate::dev`, `crate::stages`, `crate::probe`),
//!    which builds the device and installs the tables.
//! 2. The objects: [`devx`], [`uar`] (UAR objects and the mmap op), [`dm`], [`counters`],
//!    [`cq`] (with the kernel CQ's poll and arm), [`mw`], [`mr`], [`umr`] (the UMR QP and its
//!    WQEs), [`qp`] (with the kernel QP's queues; [`qp::modify`], [`qp::wr`]), [`srq`], [`ah`],
//!    [`xrcd`], [`pd`],
//!    [`ucontext`], [`port`], [`sysfs`], [`mad`] (MADs to the device through MAD_IFC). An
//!    object may use one listed after it (a DM is mapped
//!    through the mmap op, a DM MR is an MR, a QP names its context's doorbell pages), never
//!    the op table, the probe or `crate::dev`.
//! 3. What the objects share: [`queue`] (queue memory), [`user_mem`] (pinned user memory),
//!    [`device`] (the device types: `Mlx5Ib`, `Mlx5IbDev`, `IbPort`; it imports no object),
//!    [`memic`] (the MEMIC window), [`deferred`] (refused teardowns retried), [`events`] (the
//!    device's CQ/QP/SRQ tables that deliver device events to the objects' handlers),
//!    [`devx_events`] (DEVX event subscriptions).

pub(crate) mod ah;
pub(crate) mod counters;
pub(crate) mod cq;
pub(crate) mod deferred;
pub(crate) mod device;
pub(crate) mod devx;
pub(crate) mod devx_events;
pub(crate) mod dgram;
pub(crate) mod dm;
pub(crate) mod events;
pub(crate) mod gsi;
pub(crate) mod mad;
pub(crate) mod memic;
pub(crate) mod mkey;
pub(crate) mod mr;
pub(crate) mod mw;
pub(crate) mod ops;
pub(crate) mod pd;
pub(crate) mod pgsz;
pub(crate) mod port;
pub(crate) mod qp;
pub(crate) mod queue;
pub(crate) mod srq;
pub(crate) mod sysfs;
pub(crate) mod uar;
pub(crate) mod ucontext;
pub(crate) mod ud_qp;
pub(crate) mod umr;
pub(crate) mod user_mem;
pub(crate) mod xrcd;

#[cfg(CONFIG_KUNIT)]
pub(crate) mod cma_tests;
mod datapath_tests;
mod device_tests;
mod gsi_tests;
mod mad_tests;
mod port_tests;
mod ud_qp_tests;
mod user_tests;
