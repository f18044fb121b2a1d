// SPDX-License-Identifier: GPL-2.0

//! Command opcodes (`MLX5_CMD_OP_*` in mlx5_ifc.h). The names drop the `MLX5_CMD_OP_` prefix
//! (`_2ERR_QP`, `_2RST_QP`: a Rust name cannot start with a digit). Every command of the table
//! ([`crate::prm::command`]) has its constant here, generated from its row; [`OTHERS`] are the
//! few opcodes named without a modeled command. `tools/prm-check` compares both with the header.

macro_rules! opcode_consts {
    ($($ty:ident: $op:ident = $val:literal, $in:ident => $out:ident, $rule:ident, $method:ident;)*) => {
        $(
            #[doc = concat!("`MLX5_CMD_OP_", stringify!($op), "` (a row of the command table).")]
            // Generated for every row: the driver names the commands it sends by type, the
            // simulator and the host tools read others, so each crate leaves some unread.
            #[allow(dead_code)]
            pub(crate) const $op: u16 = $val;
        )*
    };
}

crate::prm::command::prm_commands!(opcode_consts);

/// `MLX5_CMD_OP_MANAGE_PAGES`: never needed (the simulator asks for no pages), so refused as
/// an unknown command; named for the tests that check so and for the log.
pub(crate) const MANAGE_PAGES: u16 = 0x108;
/// `MLX5_CMD_OP_QUERY_EQ`: not modeled.
// The driver reads it; of the host crates only some do, so no `expect` fits every build.
#[cfg_attr(not(MODULE), allow(dead_code))]
pub(crate) const QUERY_EQ: u16 = 0x303;

/// Opcodes named without a row in the command table.
// The driver reads it; of the host crates only some do, so no `expect` fits every build.
#[cfg_attr(not(MODULE), allow(dead_code))]
pub(crate) const OTHERS: &[(&str, u16)] = &[("MANAGE_PAGES", MANAGE_PAGES), ("QUERY_EQ", QUERY_EQ)];

/// The `MLX5_CMD_OP_*` name of an opcode (upstream `mlx5_command_str()`).
// The driver reads it; of the host crates only some do, so no `expect` fits every build.
#[cfg_attr(not(MODULE), allow(dead_code))]
pub(crate) fn name(op: u16) -> Option<&'static str> {
    if let Some(c) = crate::prm::command::spec(op) {
        return Some(c.name);
    }
    OTHERS.iter().find(|(_, v)| *v == op).map(|(n, _)| *n)
}
