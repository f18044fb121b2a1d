// SPDX-License-Identifier: GPL-2.0

//! The IB connection manager (upstream `drivers/infiniband/core/cm.c`, `include/rdma/ib_cm.h`):
//! its messages ([`msg`]). The protocol (the state machine over QP1, timewait, retries,
//! `ib_cm_init_qp_attr()`) is not done yet.

#[path = "cm/msg.rs"]
pub mod msg;
