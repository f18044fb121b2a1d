// SPDX-License-Identifier: GPL-2.0

//! The PRM (Programmer's Reference Manual) layer: firmware command layouts as data.
//!
//! Pure `core` code with no kernel API, shared by the mlx5 driver (which builds commands) and the
//! firmware simulator (which decodes them), and compiled on the host for unit tests and for
//! `tools/prm-check`, which diffs every declared offset and width against the kernel's own
//! `include/linux/mlx5/mlx5_ifc.h`.

/// Declares named constants of type `$ty`, each with its doc, and `ALL`, every one with its name,
/// for a check that reads them all (`tools/prm-check` against mlx5_ifc.h, a uniqueness test).
/// The attributes before `ALL` are `ALL`'s.
macro_rules! named_consts {
    (
        $(#[$all:meta])*
        ALL: $ty:ty;
        $($(#[$doc:meta])* $name:ident = $val:expr,)*
    ) => {
        $($(#[$doc])* pub(crate) const $name: $ty = $val;)*
        $(#[$all])*
        pub(crate) const ALL: &[(&str, $ty)] = &[$((stringify!($name), $name)),*];
    };
}
pub(crate) use named_consts;

#[macro_use]
#[path = "prm/layout.rs"]
pub(crate) mod layout;

// The tables mirror mlx5_ifc.h member for member so they can be diffed against it; not every
// member has a reader in every build (the driver and the simulator read different halves), so
// `prm_layout!` marks the members it generates, and the constants each crate does not read are
// marked where they are declared.
#[path = "prm/cmd.rs"]
pub(crate) mod cmd;
// The table of commands (`prm_commands!`) and the types it generates.
#[path = "prm/command.rs"]
pub(crate) mod command;
#[path = "prm/consts.rs"]
pub(crate) mod consts;
#[path = "prm/ctx.rs"]
pub(crate) mod ctx;
// Every DEVX opcode upstream's allow-lists name; the driver matches some, `ALL` is the host
// tests'.
#[cfg_attr(
    MODULE,
    expect(
        dead_code,
        reason = "the table names opcodes the driver does not match"
    )
)]
#[cfg_attr(
    not(MODULE),
    allow(dead_code, reason = "host crates build the PRM code without DEVX")
)]
#[path = "prm/devx_ops.rs"]
pub(crate) mod devx_ops;
// The CQ, QP and SRQ events of EQEs.
#[path = "prm/event.rs"]
pub(crate) mod event;
#[path = "prm/opcode.rs"]
pub(crate) mod opcode;
#[path = "prm/status.rs"]
pub(crate) mod status;
#[path = "prm/wqe.rs"]
pub(crate) mod wqe;

use layout::Layout;

/// Every declared layout (each file's `prm_layouts!` lists what it declares), for
/// `tools/prm-check` and the table tests: a layout the code can name is a layout the check
/// compares with mlx5_ifc.h.
#[cfg_attr(MODULE, expect(dead_code, reason = "prm-check and host tests"))]
pub(crate) fn all_layouts() -> impl Iterator<Item = &'static Layout> {
    cmd::ALL.iter().chain(ctx::ALL.iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Catches typos the C check would also catch, but without needing a kernel tree: fields
    /// inside their layout, no two members overlapping, and the dword rule every sub-dword
    /// member of mlx5_ifc.h follows.
    #[test]
    fn table_is_self_consistent() {
        for l in all_layouts() {
            assert_eq!(l.size_bits % 32, 0, "{}", l.name);
            let mut prev_end = 0;
            for f in l.fields {
                assert!(f.bit_width > 0, "{}.{}", l.name, f.name);
                assert!(f.bit_off >= prev_end, "{}.{} overlaps", l.name, f.name);
                prev_end = f.bit_off + f.bit_width;
                assert!(prev_end <= l.size_bits, "{}.{} outside", l.name, f.name);
                if f.bit_width < 32 {
                    assert!(f.bit_off % 32 + f.bit_width <= 32, "{}.{}", l.name, f.name);
                }
            }
        }
    }

    /// The `qpc.state` values (`MLX5_QPC_STATE_*`) are distinct and fit the 4-bit field (the
    /// driver's `QpState` decodes all seven).
    #[test]
    fn qpc_states_fit_the_state_field() {
        use consts::*;
        let states = [
            QPC_STATE_RST,
            QPC_STATE_INIT,
            QPC_STATE_RTR,
            QPC_STATE_RTS,
            QPC_STATE_SQER,
            QPC_STATE_ERR,
            QPC_STATE_SQD,
        ];
        let mut b = [0u8; ctx::qpc::SIZE_BYTES];
        for (i, v) in states.iter().enumerate() {
            assert!(!states[..i].contains(v));
            assert_eq!(ctx::qpc::state.set(&mut b, *v), Ok(()));
            assert_eq!(ctx::qpc::state.get(&b), Ok(*v));
        }
    }
}
