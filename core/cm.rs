// SPDX-License-Identifier: GPL-2.0

//! The IB connection manager (upstream `drivers/infiniband/core/cm.c`, `include/rdma/ib_cm.h`):
//! its messages ([`msg`]) and its connection state machine ([`state`]). Not done yet: running
//! them over QP1 (the MAD agent, the connection table by communication id, listeners by service
//! id, response timeouts and retries, timewait's timer, `ib_cm_init_qp_attr()`), so rdma_cm has
//! no connection.

#[path = "cm/msg.rs"]
pub mod msg;
#[path = "cm/service.rs"]
pub mod service;
#[path = "cm/state.rs"]
pub mod state;
