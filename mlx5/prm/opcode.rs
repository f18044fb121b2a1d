// SPDX-License-Identifier: GPL-2.0

//! Command opcodes (`MLX5_CMD_OP_*` in mlx5_ifc.h) of the commands this project sends or
//! simulates. The names drop the `MLX5_CMD_OP_` prefix; `tools/prm-check` compares every value
//! in [`ALL`] with the header's enum.

/// Declares the opcode constants and the [`ALL`] table from one list, so nothing is listed twice.
macro_rules! opcodes {
    ($($name:ident = $val:expr,)*) => {
        $(
            #[doc = concat!("`MLX5_CMD_OP_", stringify!($name), "`.")]
            pub(crate) const $name: u16 = $val;
        )*
        /// Every opcode with its mlx5_ifc.h name (without the `MLX5_CMD_OP_` prefix).
        pub(crate) const ALL: &[(&str, u16)] = &[$((stringify!($name), $name)),*];
    };
}

opcodes! {
    QUERY_HCA_CAP = 0x100,
    QUERY_ADAPTER = 0x101,
    INIT_HCA = 0x102,
    TEARDOWN_HCA = 0x103,
    ENABLE_HCA = 0x104,
    DISABLE_HCA = 0x105,
    QUERY_PAGES = 0x107,
    MANAGE_PAGES = 0x108,
    SET_HCA_CAP = 0x109,
    QUERY_ISSI = 0x10a,
    SET_ISSI = 0x10b,
    SET_DRIVER_VERSION = 0x10d,
    CREATE_MKEY = 0x200,
    QUERY_MKEY = 0x201,
    DESTROY_MKEY = 0x202,
    QUERY_SPECIAL_CONTEXTS = 0x203,
    CREATE_EQ = 0x301,
    DESTROY_EQ = 0x302,
    QUERY_EQ = 0x303,
    CREATE_CQ = 0x400,
    DESTROY_CQ = 0x401,
    QUERY_CQ = 0x402,
    MODIFY_CQ = 0x403,
    CREATE_QP = 0x500,
    DESTROY_QP = 0x501,
    RST2INIT_QP = 0x502,
    INIT2RTR_QP = 0x503,
    RTR2RTS_QP = 0x504,
    RTS2RTS_QP = 0x505,
    _2ERR_QP = 0x507,
    _2RST_QP = 0x50a,
    QUERY_QP = 0x50b,
    INIT2INIT_QP = 0x50e,
    CREATE_XRC_SRQ = 0x705,
    DESTROY_XRC_SRQ = 0x706,
    QUERY_NIC_VPORT_CONTEXT = 0x754,
    SET_ROCE_ADDRESS = 0x761,
    QUERY_HCA_VPORT_CONTEXT = 0x762,
    QUERY_HCA_VPORT_GID = 0x764,
    QUERY_HCA_VPORT_PKEY = 0x765,
    ALLOC_Q_COUNTER = 0x771,
    DEALLOC_Q_COUNTER = 0x772,
    QUERY_Q_COUNTER = 0x773,
    ALLOC_PD = 0x800,
    DEALLOC_PD = 0x801,
    ALLOC_UAR = 0x802,
    DEALLOC_UAR = 0x803,
    ACCESS_REG = 0x805,
    ALLOC_TRANSPORT_DOMAIN = 0x816,
    DEALLOC_TRANSPORT_DOMAIN = 0x817,
    ALLOC_XRCD = 0x80e,
    DEALLOC_XRCD = 0x80f,
    CREATE_RMP = 0x90c,
    MODIFY_RMP = 0x90d,
    DESTROY_RMP = 0x90e,
    QUERY_RMP = 0x90f,
    CREATE_UCTX = 0xa04,
    DESTROY_UCTX = 0xa06,
}
