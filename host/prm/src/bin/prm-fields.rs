// SPDX-License-Identifier: GPL-2.0

//! Prints the Rust PRM table for `tools/prm-check/run.sh`, one item a line:
//!
//! * `layout NAME SIZE_BITS`
//! * `field LAYOUT.MEMBER BIT_OFF BIT_WIDTH`
//! * `opcode NAME VALUE` (mlx5_ifc.h `MLX5_CMD_OP_NAME`): every row of the command table
//!   (`mlx5/prm/command.rs`), then the few opcodes named without a command and those of
//!   DEVX's allow-lists (`mlx5/prm/devx_ops.rs`)
//! * `status NAME VALUE` (device.h `MLX5_CMD_STAT_NAME`)
//!
//! The script turns the same list into the C program that prints the header's values, so the
//! names are listed once, in the Rust table. The layouts are every layout the PRM files declare
//! (`prm_layouts!` collects them), so nothing the code can name escapes the check.

// The binary compiles the table module on its own and reads only part of it.
#![allow(dead_code)]

#[path = "../../../../mlx5/prm.rs"]
mod prm;

fn main() {
    for l in prm::all_layouts() {
        println!("layout {} {}", l.name, l.size_bits);
        for f in l.fields {
            println!("field {}.{} {} {}", l.name, f.name, f.bit_off, f.bit_width);
        }
    }
    let table = prm::command::ALL.iter().map(|c| (c.name, c.opcode));
    let others = prm::opcode::OTHERS
        .iter()
        .chain(prm::devx_ops::ALL)
        .copied();
    for (name, v) in table.chain(others) {
        println!("opcode {} {}", name.trim_start_matches('_'), v);
    }
    for (name, s) in prm::status::ALL {
        println!("status {} {}", name, s.0);
    }
}
