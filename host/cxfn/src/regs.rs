// SPDX-License-Identifier: GPL-2.0

//! BAR 0 layout. Offsets of `struct mlx5_init_seg` (include/linux/mlx5/device.h); all its
//! registers are big-endian 32-bit words (`ioread32be`).

/// `fw_rev`: minor << 16 | major.
pub const FW_REV: u64 = 0x0;
/// `cmdif_rev_fw_sub`: command interface revision << 16 | firmware subminor.
pub const CMDIF_REV_FW_SUB: u64 = 0x4;
/// `cmdq_addr_h`: high 32 bits of the command queue's bus address (driver writes).
pub const CMDQ_ADDR_H: u64 = 0x10;
/// `cmdq_addr_l_sz`: address bits 31:12 (driver writes), NIC interface state in bits 10:8,
/// log2 of the queue size in 7:4 and of the entry stride in 3:0 (device reports).
pub const CMDQ_ADDR_L_SZ: u64 = 0x14;
/// `cmd_dbell`: the driver writes `1 << slot`.
pub const CMD_DBELL: u64 = 0x18;
/// `initializing`: bit 31 set while the firmware is not ready.
pub const INITIALIZING: u64 = 0x1fc;
/// `health` (`struct health_buffer`, 64 bytes): all zero on a healthy device.
pub const HEALTH: u64 = 0x200;
/// `health.synd` (byte).
pub const HEALTH_SYND: u64 = 0x200 + 0x3d;
/// `cmd_exec_to`: 0 means "no timeouts in the init segment" (driver defaults).
pub const CMD_EXEC_TO: u64 = 0xff8;
/// `cmd_q_init_to`.
pub const CMD_Q_INIT_TO: u64 = 0xffc;
/// `internal_timer_h`.
pub const INTERNAL_TIMER_H: u64 = 0x1000;
/// `internal_timer_l`.
pub const INTERNAL_TIMER_L: u64 = 0x1004;
/// `health_counter`: must keep changing (`poll_health()`: three unchanged reads 2 s apart are
/// fatal).
pub const HEALTH_COUNTER: u64 = 0x1010;
/// `real_time_h`.
pub const REAL_TIME_H: u64 = 0x1040;
/// `real_time_l`.
pub const REAL_TIME_L: u64 = 0x1044;
/// End of the init segment (`sizeof(struct mlx5_init_seg)`, 0x2010 with the 1588 clock).
pub const INIT_SEG_END: u64 = 0x2010;

/// MSI-X table (16 bytes a vector, little-endian like every PCI structure), BAR 0.
pub const MSIX_TABLE: u64 = 0x2000;
/// MSI-X pending bit array, BAR 0.
pub const MSIX_PBA: u64 = 0x3000;
/// MSI-X vectors.
pub const MSIX_VECTORS: u16 = 16;

/// The UAR page size (`uar_sz` 0, `log_uar_page_sz` 0): UAR index N is BAR 0 page N.
pub const UAR_PAGE: u64 = 4096;
/// BAR 0 size: 1 MiB, 256 pages, room for the model's 64 UARs from index 4.
pub const BAR0_SIZE: u64 = 1 << 20;

/// Command queue geometry reported in `cmdq_addr_l_sz`: 32 entries of 64 bytes, one page.
pub const CMDQ_LOG_SIZE: u32 = 5;
/// See [`CMDQ_LOG_SIZE`].
pub const CMDQ_LOG_STRIDE: u32 = 6;

/// Offsets in a UAR page that the data path takes (upstream `MLX5_CQ_DOORBELL`, the
/// blue-flame registers from `MLX5_BF_OFFSET`): a 64-bit big-endian store, as one 8-byte write
/// or two 4-byte writes, lower address first.
pub const UAR_CQ_DB: u64 = 0x20;
/// First blue-flame register: the send doorbell (the first 8 bytes of the last WQE).
pub const UAR_BF_START: u64 = 0x800;
/// End of the blue-flame registers (four 512-byte registers of a 4 KiB UAR page).
pub const UAR_BF_END: u64 = 0x1000;
