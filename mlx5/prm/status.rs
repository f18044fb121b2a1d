// SPDX-License-Identifier: GPL-2.0

//! Command completion status (`MLX5_CMD_STAT_*`, include/linux/mlx5/device.h), the byte at
//! `mbox_out.status`. The driver maps it with upstream's `cmd_status_to_err()` (cmd.c); the
//! simulator answers with it.

/// A `mbox_out.status` value. A newtype rather than an enum because firmware may report values
/// this table does not name (and fault injection may ask for any byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Status(pub(crate) u8);

/// Declares the named statuses and the [`ALL`] table from one list.
macro_rules! statuses {
    ($($name:ident = $val:expr,)*) => {
        impl Status {
            $(
                #[doc = concat!("`MLX5_CMD_STAT_", stringify!($name), "`.")]
                pub(crate) const $name: Status = Status($val);
            )*
        }
        /// Every named status with its device.h name (without the `MLX5_CMD_STAT_` prefix).
        pub(crate) const ALL: &[(&str, Status)] = &[$((stringify!($name), Status::$name)),*];
    };
}

statuses! {
    OK = 0x0,
    INT_ERR = 0x1,
    BAD_OP_ERR = 0x2,
    BAD_PARAM_ERR = 0x3,
    BAD_SYS_STATE_ERR = 0x4,
    BAD_RES_ERR = 0x5,
    RES_BUSY = 0x6,
    NOT_READY = 0x7,
    LIM_ERR = 0x8,
    BAD_RES_STATE_ERR = 0x9,
    IX_ERR = 0xa,
    NO_RES_ERR = 0xf,
    BAD_QP_STATE_ERR = 0x10,
    BAD_PKT_ERR = 0x30,
    BAD_SIZE_OUTS_CQES_ERR = 0x40,
    BAD_INP_LEN_ERR = 0x50,
    BAD_OUTP_LEN_ERR = 0x51,
}
