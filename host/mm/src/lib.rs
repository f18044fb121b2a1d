// SPDX-License-Identifier: GPL-2.0

//! Host build of the pure part of `rust/mm.rs`: the decoder of the x86-64 store instructions
//! that a trap page's fault emulates (`rust/mm/x86_store.rs`).
//!
//! The same source file is compiled unchanged into `ib_core_rs`; this crate only mounts it so
//! that `cargo test` runs its inline tests (every accepted form against hand-assembled bytes,
//! the refused forms, truncated instructions).

#![no_std]
#![deny(warnings, unreachable_pub, rust_2018_idioms)]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

// Everything is `pub(crate)` and consumed by the kernel side, which this crate does not
// contain.
#[allow(dead_code)]
#[path = "../../../rust/mm/x86_store.rs"]
pub(crate) mod x86_store;
