// SPDX-License-Identifier: GPL-2.0

//! Host build of the pure netlink code of `rust/netlink/`: the nlmsg/nlattr codec and the RDMA
//! nldev uapi constants.
//!
//! The same source files are compiled unchanged into `ib_core_rs`; this crate only mounts them
//! so that `cargo test` runs their inline tests (layout, length validation, a bounded
//! deterministic fuzz test of the parsers and the builder).

#![no_std]
#![deny(warnings, unreachable_pub, rust_2018_idioms)]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

// Everything is `pub(crate)` and consumed by the kernel side, which this crate does not
// contain.
#[allow(dead_code)]
#[path = "../../../rust/netlink/codec.rs"]
pub(crate) mod codec;
#[allow(dead_code)]
#[path = "../../../rust/netlink/nldev_uapi.rs"]
pub(crate) mod nldev_uapi;
