// SPDX-License-Identifier: GPL-2.0

//! Prints every user-ABI struct declared with `uapi_structs!` for `tools/uabi-check/run.sh`,
//! one item a line:
//!
//! * `struct NAME SIZE`
//! * `field NAME.MEMBER OFFSET SIZE`
//!
//! The script turns the same list into a C program that prints `sizeof`/`offsetof` from the
//! kernel's uapi headers, so the names are written once, in the Rust declarations.

// The binary mounts the declaring modules on their own and reads only their tables.
#![allow(dead_code)]

#[path = "../../../../uverbs/abi/layout.rs"]
mod layout;

/// The uverbs structs (`uverbs/abi/structs.rs`, whose `super::layout` is the module above).
#[path = "../../../../uverbs/abi/structs.rs"]
mod structs;

/// The mlx5 driver's structs (`mlx5/uabi.rs`, which reads `crate::uapi_layout`).
use layout as uapi_layout;
#[path = "../../../../mlx5/uabi.rs"]
mod uabi;

fn main() {
    for l in structs::LAYOUTS.iter().chain(uabi::LAYOUTS) {
        println!("struct {} {}", l.name, l.size);
        for (m, off, size) in l.fields {
            println!("field {}.{} {} {}", l.name, m, off, size);
        }
    }
}
