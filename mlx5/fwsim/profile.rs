// SPDX-License-Identifier: GPL-2.0

//! Device identities and capability profiles.
//!
//! Values are what the real adapters report, so that `ibv_devinfo` on the simulator looks like
//! the hardware. Sources:
//!
//! * PCI ids: `drivers/net/ethernet/mellanox/mlx5/core/main.c` `mlx5_core_pci_table`
//!   (0x101d ConnectX-6 Dx, 0x1021 ConnectX-7), vendor 0x15b3; IEEE vendor id 0x02c9 is the
//!   `vendor_id` every mlx5 `ibv_devinfo` prints (it comes from QUERY_ADAPTER).
//! * Limits: public `ibv_devinfo -v` outputs of ConnectX-5/6 adapters (e.g. openucx/ucx#8229,
//!   open-mpi/ompi#6137): max_qp 262144 (`log_max_qp` 18), max_qp_wr 32768 (`log_max_qp_sz`
//!   15), max_cq 16777216 (`log_max_cq` 24), max_cqe 4194303 (`log_max_cq_sz` 22, mlx5_ib
//!   reports `2^n - 1`), max_mr and max_pd 16777216 (`log_max_mkey`, `log_max_pd` 24),
//!   max_qp_rd_atom 16 (`log_max_ra_res_qp`/`log_max_ra_req_qp` 4), max_mcast_grp 2097152
//!   (`log_max_mcg` 21), max_srq 8388608 / max_srq_wr 32767 (`log_max_srq` 23,
//!   `log_max_srq_sz` 15). The ConnectX-7 values are the same family limits.
//! * Firmware branches: ConnectX-6 Dx firmware is 22.x, ConnectX-7 is 28.x (the first number is
//!   the device family; e.g. ConnectX-7 "fw 28.43.1014" in ROCm/rocm-xio#100).
//! * `cqe_version` 1 is what libmlx5 expects from current firmware (it accepts 0 or 1).
//! * `gid_table_size`/`pkey_table_size` are encodings: 0 means 8 GIDs
//!   (`mlx5_get_gid_table_len()`) and 128 PKeys (`mlx5_to_sw_pkey_sz()`).
//!
//! Values that only the real silicon would know (board id, GUIDs, MACs) are marked as simulated
//! rather than copied from a real card: the board id says `RDMARS`, the GUIDs and MACs use the
//! NVIDIA/Mellanox OUI 0c:42:a1 with a per-device serial.

/// Link layer of the device's ports, fixed at construction (a ConnectX function's `port_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkLayer {
    /// InfiniBand: LIDs, subnet manager, PKeys, no RoCE address table.
    Ib,
    /// Ethernet (RoCE): GIDs are programmed with SET_ROCE_ADDRESS.
    Ethernet,
}

/// Identity and limits of one adapter model.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Profile {
    /// Marketing name, for logs.
    pub(crate) name: &'static str,
    /// PCI device id (`hca_type` in sysfs is "MT" + this in decimal).
    pub(crate) device_id: u16,
    /// Firmware version major.minor.subminor (reported by the init segment, not a command).
    pub(crate) fw_rev: (u16, u16, u16),
    /// Whether the silicon can run InfiniBand (ConnectX-6 Dx is Ethernet only).
    pub(crate) supports_ib: bool,
    /// PSID / board id, 16 bytes of ASCII padded with NULs (QUERY_ADAPTER `vsd_contd_psid`).
    pub(crate) psid: [u8; 16],
    /// `cmd_hca_cap.log_max_qp`.
    pub(crate) log_max_qp: u32,
    /// `cmd_hca_cap.log_max_qp_sz`.
    pub(crate) log_max_qp_sz: u32,
    /// `cmd_hca_cap.log_max_cq`.
    pub(crate) log_max_cq: u32,
    /// `cmd_hca_cap.log_max_cq_sz`.
    pub(crate) log_max_cq_sz: u32,
    /// `cmd_hca_cap.log_max_mkey`.
    pub(crate) log_max_mkey: u32,
    /// `cmd_hca_cap.log_max_pd`.
    pub(crate) log_max_pd: u32,
    /// `cmd_hca_cap.log_max_srq`.
    pub(crate) log_max_srq: u32,
    /// `cmd_hca_cap.log_max_srq_sz`.
    pub(crate) log_max_srq_sz: u32,
    /// `cmd_hca_cap.log_max_msg` (1 GiB messages).
    pub(crate) log_max_msg: u32,
    /// `cmd_hca_cap.max_qp_mcg`.
    pub(crate) max_qp_mcg: u32,
    /// `cmd_hca_cap.log_max_mcg`.
    pub(crate) log_max_mcg: u32,
    /// `cmd_hca_cap.log_max_ra_req_qp` and `log_max_ra_res_qp`.
    pub(crate) log_max_ra_qp: u32,
    /// `cmd_hca_cap.log_max_eq`.
    pub(crate) log_max_eq: u32,
    /// `cmd_hca_cap.log_max_transport_domain`.
    pub(crate) log_max_transport_domain: u32,
    /// `cmd_hca_cap.log_max_uctx`.
    pub(crate) log_max_uctx: u32,
    /// `cmd_hca_cap.uctx_cap` (`MLX5_UCTX_CAP_RAW_TX | MLX5_UCTX_CAP_INTERNAL_DEV_RES`).
    pub(crate) uctx_cap: u32,
    /// `roce_cap.roce_address_table_size` (RoCE GID table length).
    pub(crate) roce_address_table_size: u32,
    /// PTYS Ethernet: the extended protocol bit the port runs (`MLX5E_*` in port.h).
    pub(crate) ext_eth_proto: u32,
    /// PTYS IB: `ib_proto_oper` bit (NDR = bit 7).
    pub(crate) ib_proto: u32,
}

/// Pads an ASCII board id to the 16-byte PSID field.
const fn psid(s: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    let mut i = 0;
    while i < s.len() && i < 16 {
        out[i] = s[i];
        i += 1;
    }
    out
}

/// Limits shared by the ConnectX-5/6/7 generations (see the module documentation).
const CONNECTX_LIMITS: Profile = Profile {
    name: "",
    device_id: 0,
    fw_rev: (0, 0, 0),
    supports_ib: false,
    psid: [0; 16],
    log_max_qp: 18,
    log_max_qp_sz: 15,
    log_max_cq: 24,
    log_max_cq_sz: 22,
    log_max_mkey: 24,
    log_max_pd: 24,
    log_max_srq: 23,
    log_max_srq_sz: 15,
    log_max_msg: 30,
    max_qp_mcg: 240,
    log_max_mcg: 21,
    log_max_ra_qp: 4,
    log_max_eq: 8,
    log_max_transport_domain: 24,
    log_max_uctx: 16,
    uctx_cap: 0x3,
    roce_address_table_size: 256,
    ext_eth_proto: 0,
    ib_proto: 0,
};

/// ConnectX-6 Dx (MT4125, PCI 0x101d): Ethernet only, 2x100GbE.
pub(crate) const CONNECTX6_DX: Profile = Profile {
    name: "ConnectX-6 Dx",
    device_id: 0x101d,
    fw_rev: (22, 43, 1014),
    supports_ib: false,
    psid: psid(b"RDMARS_CX6DX"),
    // MLX5E_100GAUI_2_100GBASE_CR2_KR2
    ext_eth_proto: 1 << 10,
    ..CONNECTX_LIMITS
};

/// ConnectX-7 (MT4129, PCI 0x1021): VPI, NDR InfiniBand or 400GbE.
pub(crate) const CONNECTX7: Profile = Profile {
    name: "ConnectX-7",
    device_id: 0x1021,
    fw_rev: (28, 43, 1014),
    supports_ib: true,
    psid: psid(b"RDMARS_CX7"),
    // MLX5E_400GAUI_4_400GBASE_CR4_KR4
    ext_eth_proto: 1 << 16,
    // NDR
    ib_proto: 1 << 7,
    ..CONNECTX_LIMITS
};
