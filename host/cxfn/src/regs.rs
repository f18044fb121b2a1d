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
/// `cmd_exec_to`: the command timeout mlx5_core takes when `cmd_q_init_to` is not 0
/// (`mlx5_tout_query_iseg()`): multiplier in bits 31:29 (0 ms, 1 s, 2 min, 3 h), value in 19:0.
pub const CMD_EXEC_TO: u64 = 0xff8;
/// `cmd_q_init_to`: the firmware-init timeout; not 0 also tells mlx5_core to read the
/// init segment's timeouts and the DTOR register.
pub const CMD_Q_INIT_TO: u64 = 0xffc;
/// The command timeout the function reports: 10 s (mlx5_core's default is 60 s; a hung
/// command then fails in 10 s plus mlx5_core's 5 s EQ-recovery wait).
pub const CMD_EXEC_TO_VALUE: u32 = (1 << 29) | 10;
/// The firmware-init timeout the function reports: 10 s.
pub const CMD_Q_INIT_TO_VALUE: u32 = (1 << 29) | 10;
/// NIC interface state "disabled" (`MLX5_INITIAL_SEG_NIC_INTERFACE_DISABLED`, bits 10:8 of
/// `cmdq_addr_l_sz`): what a function whose firmware stopped reports
/// (`mlx5_health_check_fatal_sensors()`: `MLX5_SENSOR_NIC_DISABLED`).
pub const NIC_IFC_DISABLED: u32 = 1;
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

/// The model's test window: the last page of BAR 0 (a ConnectX has nothing there; like
/// QEMU's `edu` device, it exists for tests). mlx5_core never maps it (the init segment,
/// MSI-X table and PBA are below 0x4000, and the function allocates no UAR at or above
/// [`UAR_LIMIT`]); a test in the guest writes it through
/// `/sys/bus/pci/devices/<bdf>/resource0` (`tests/userspace/cxfn_ctl.c`). Registers are
/// little-endian 32-bit words.
pub const TEST_WINDOW: u64 = BAR0_SIZE - UAR_PAGE;
/// UAR indices end below the test window's page.
pub const UAR_LIMIT: u32 = (TEST_WINDOW / UAR_PAGE) as u32;
/// Read only: [`TW_MAGIC`].
pub const TW_ID: u64 = 0x00;
/// Arguments of the next command.
pub const TW_ARG0: u64 = 0x04;
/// See [`TW_ARG0`].
pub const TW_ARG1: u64 = 0x08;
/// See [`TW_ARG0`].
pub const TW_ARG2: u64 = 0x0c;
/// Write: runs a command ([`tw_cmd`]) with the arguments; read: the last command.
pub const TW_CMD: u64 = 0x10;
/// Read only: the last command's result ([`tw_result`]).
pub const TW_RESULT: u64 = 0x14;
/// Read only: commands held (never completed) by a hang fault.
pub const TW_HELD: u64 = 0x18;
/// Read only: the NIC interface state the function reports.
pub const TW_NIC_STATE: u64 = 0x1c;
/// "CXTW" in memory order.
pub const TW_MAGIC: u32 = u32::from_le_bytes(*b"CXTW");

/// Commands of the test window.
pub mod tw_cmd {
    /// Fail every command of opcode ARG0 with status ARG1 (not 0) and syndrome ARG2, not
    /// executing it, until [`CLEAR`].
    pub const FAIL: u32 = 1;
    /// Hold every command of opcode ARG0: it is not executed and never completes (a hung
    /// firmware command) until [`RELEASE`].
    pub const HANG: u32 = 2;
    /// Disarm both.
    pub const CLEAR: u32 = 3;
    /// Complete the held commands late (status `INT_ERR`, only the entry written: mlx5_core
    /// has freed their mailboxes by then) and report them on the command EQ.
    pub const RELEASE: u32 = 4;
    /// Freeze (ARG0 1) or restart (ARG0 0) the health counter.
    pub const STALL_HEALTH: u32 = 5;
    /// Write an EQE of type ARG0 bits 7:0, subtype ARG0 bits 15:8, with the big-endian word
    /// ARG2 at byte ARG1 (0, 4, ... 24) of its 28 data bytes, everything else 0, to the
    /// first EQ whose mask takes the type; raise its vector if armed.
    pub const EQE: u32 = 6;
    /// A firmware fatal error: the firmware stops (every object and EQ gone, as after a
    /// crash and reset) and the NIC interface state reads "disabled" until the driver
    /// programs the command queue again.
    pub const FATAL: u32 = 7;
    /// Port 1 goes down (ARG0 0) or up (ARG0 1): its state changes (the vport context's
    /// port state, the data path) and a PORT_CHANGE EQE (subtype DOWN or ACTIVE, the port
    /// in `data.port.port` bits 7:4) goes to the EQ that takes it.
    pub const PORT: u32 = 8;
    /// The switch's embedded subnet manager stops (ARG0 0: the switch drops IsSM and
    /// answers no SMInfo; the ports keep their LIDs and states, and a port whose link comes
    /// up waits in INIT for a host SM such as opensm) or runs again (ARG0 1: it sweeps the
    /// ports that are not ACTIVE at once and after every command, as at power-on).
    pub const SM: u32 = 9;
}

/// Results of the test window's commands.
pub mod tw_result {
    /// Done.
    pub const OK: u32 = 0;
    /// An argument is out of range.
    pub const BAD_ARG: u32 = 1;
    /// No EQ takes the EQE's type (or it could not be written).
    pub const NO_EQ: u32 = 2;
    /// No such command.
    pub const UNKNOWN: u32 = 3;
}
