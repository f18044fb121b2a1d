// SPDX-License-Identifier: GPL-2.0

//! Host build of the pure uverbs ABI code in `uverbs/abi.rs`.
//!
//! The same source files are compiled unchanged into the kernel crate; this
//! crate only mounts them so that `cargo test` can run their inline tests
//! (one per errno rule, the merged spec tree, and a bounded fuzz test).

#![no_std]
#![deny(warnings, unreachable_pub, rust_2018_idioms)]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

// Everything in `abi` is `pub(crate)` and consumed by the kernel-side uverbs
// code, which this host crate does not contain: without the tests most items
// have no user here.
// The spec types a driver declares its objects with are `pub` (the kernel
// crate re-exports them in `uverbs::driver_api`): unreachable here.
#[allow(dead_code, unreachable_pub)]
#[path = "../../../uverbs/abi.rs"]
pub(crate) mod abi;
