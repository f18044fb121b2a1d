// SPDX-License-Identifier: GPL-2.0

//! Field values from mlx5_ifc.h, device.h, driver.h, qp.h and cq.h that commands carry: QP
//! states and service types, capability types, register ids. Upstream names without the
//! `MLX5_` prefix.

/// `MLX5_QPC_STATE_RST`.
pub(crate) const QPC_STATE_RST: u32 = 0x0;
/// `MLX5_QPC_STATE_INIT`.
pub(crate) const QPC_STATE_INIT: u32 = 0x1;
/// `MLX5_QPC_STATE_RTR`.
pub(crate) const QPC_STATE_RTR: u32 = 0x2;
/// `MLX5_QPC_STATE_RTS`.
pub(crate) const QPC_STATE_RTS: u32 = 0x3;
/// `MLX5_QPC_STATE_SQER`.
pub(crate) const QPC_STATE_SQER: u32 = 0x4;
/// `MLX5_QPC_STATE_ERR`.
pub(crate) const QPC_STATE_ERR: u32 = 0x6;
/// `MLX5_QPC_STATE_SQD`.
pub(crate) const QPC_STATE_SQD: u32 = 0x7;

/// `MLX5_QPC_ST_RC`.
pub(crate) const QPC_ST_RC: u32 = 0x0;
/// `MLX5_QPC_ST_UC`.
pub(crate) const QPC_ST_UC: u32 = 0x1;
/// `MLX5_QPC_ST_UD`.
pub(crate) const QPC_ST_UD: u32 = 0x2;
/// `MLX5_QPC_ST_XRC`.
pub(crate) const QPC_ST_XRC: u32 = 0x3;
/// `MLX5_QPC_ST_DCI`: a DC initiator (`fwsim/dct.rs`).
pub(crate) const QPC_ST_DCI: u32 = 0x5;
/// `MLX5_QP_ST_DCT` (qp.h): no `qpc` names it; the simulator stores a DC target in its QP
/// table under this service type (`fwsim/dct.rs`).
pub(crate) const QPC_ST_DCT: u32 = 0x6;
/// `MLX5_QPC_ST_QP0` (SMI): upstream ib_core's MAD layer creates it on an IB port whose
/// vport context has `has_smi`.
pub(crate) const QPC_ST_QP0: u32 = 0x7;
/// `MLX5_QP_ST_REG_UMR` (qp.h): upstream mlx5_ib's UMR QP, created at the first user MR
/// (`mlx5r_umr_resource_init()`) whether or not UMR is then used.
pub(crate) const QPC_ST_REG_UMR: u32 = 0xc;
/// `MLX5_QPC_ST_QP1` (GSI).
pub(crate) const QPC_ST_QP1: u32 = 0x8;

/// `MLX5_QPC_MTU_256_BYTES`, the smallest path MTU encoding.
pub(crate) const QPC_MTU_256_BYTES: u32 = 0x1;
/// `MLX5_QPC_MTU_4K_BYTES`, the largest IB path MTU encoding.
pub(crate) const QPC_MTU_4K_BYTES: u32 = 0x5;

/// `MLX5_NON_ZERO_RQ` (qp.h): the QP has its own receive queue.
pub(crate) const NON_ZERO_RQ: u32 = 0x0;
/// `MLX5_SRQ_RQ` (qp.h): receives come from an SRQ.
pub(crate) const SRQ_RQ: u32 = 0x1;
/// `MLX5_ZERO_LEN_RQ` (qp.h): no receive queue.
pub(crate) const ZERO_LEN_RQ: u32 = 0x3;

/// `MLX5_MKC_ACCESS_MODE_PA`.
pub(crate) const MKC_ACCESS_MODE_PA: u32 = 0x0;
/// `MLX5_MKC_ACCESS_MODE_MTT`.
pub(crate) const MKC_ACCESS_MODE_MTT: u32 = 0x1;
/// `MLX5_MKC_ACCESS_MODE_KLMS`.
pub(crate) const MKC_ACCESS_MODE_KLMS: u32 = 0x2;
/// `MLX5_MKC_ACCESS_MODE_KSM`.
pub(crate) const MKC_ACCESS_MODE_KSM: u32 = 0x3;
/// `MLX5_MKC_ACCESS_MODE_MEMIC`: `start_addr` is an address of the device's on-chip memory.
pub(crate) const MKC_ACCESS_MODE_MEMIC: u32 = 0x5;

/// `enum mlx5_cap_type` `MLX5_CAP_GENERAL` (device.h).
pub(crate) const CAP_GENERAL: u32 = 0;
/// `enum mlx5_cap_type` `MLX5_CAP_ATOMIC` (device.h).
pub(crate) const CAP_ATOMIC: u32 = 3;
/// `enum mlx5_cap_type` `MLX5_CAP_ROCE` (device.h).
pub(crate) const CAP_ROCE: u32 = 4;
/// `enum mlx5_cap_type` `MLX5_CAP_FLOW_TABLE` (device.h): `struct flow_table_nic_cap`.
pub(crate) const CAP_FLOW_TABLE: u32 = 7;
/// `enum mlx5_cap_type` `MLX5_CAP_DEV_MEM` (device.h).
pub(crate) const CAP_DEV_MEM: u32 = 0xf;
/// `HCA_CAP_OPMOD_GET_MAX` (device.h): bit 0 of `query_hca_cap_in.op_mod`.
#[cfg_attr(MODULE, expect(dead_code, reason = "host tests read the maximum"))]
pub(crate) const HCA_CAP_OPMOD_GET_MAX: u32 = 0;
/// `HCA_CAP_OPMOD_GET_CUR` (device.h).
pub(crate) const HCA_CAP_OPMOD_GET_CUR: u32 = 1;

/// `MLX5_CAP_PORT_TYPE_IB` (mlx5_ifc.h), `cmd_hca_cap.port_type`.
pub(crate) const CAP_PORT_TYPE_IB: u32 = 0x0;
/// `MLX5_CAP_PORT_TYPE_ETH` (mlx5_ifc.h).
pub(crate) const CAP_PORT_TYPE_ETH: u32 = 0x1;

/// `MLX5_REG_PMTU` (driver.h).
pub(crate) const REG_PMTU: u32 = 0x5003;
/// `MLX5_REG_PTYS` (driver.h).
pub(crate) const REG_PTYS: u32 = 0x5004;
/// `MLX5_REG_PAOS` (driver.h).
pub(crate) const REG_PAOS: u32 = 0x5006;
/// `MLX5_REG_PVLC` (driver.h).
pub(crate) const REG_PVLC: u32 = 0x500f;
/// `access_register_in.op_mod` for a write (`mlx5_core_access_reg()` sends `!write`).
pub(crate) const ACCESS_REG_WRITE: u32 = 0;
/// `access_register_in.op_mod` for a read.
pub(crate) const ACCESS_REG_READ: u32 = 1;

/// `MLX5_PTYS_IB` (driver.h), `ptys_reg.proto_mask`.
pub(crate) const PTYS_IB: u32 = 1 << 0;
/// `MLX5_PTYS_EN` (driver.h).
pub(crate) const PTYS_EN: u32 = 1 << 2;

/// `MLX5_CQ_OPMOD_RESIZE` (cq.h), `modify_cq_in.op_mod`; 0 modifies moderation.
pub(crate) const CQ_OPMOD_RESIZE: u32 = 1;
/// `MLX5_CQ_MODIFY_PERIOD` (cq.h).
pub(crate) const CQ_MODIFY_PERIOD: u32 = 1 << 0;
/// `MLX5_CQ_MODIFY_COUNT` (cq.h).
pub(crate) const CQ_MODIFY_COUNT: u32 = 1 << 1;
/// `MLX5_MODIFY_CQ_MASK_LOG_SIZE` (cq.h).
pub(crate) const MODIFY_CQ_MASK_LOG_SIZE: u32 = 1 << 0;

/// `MLX5_ROCE_VERSION_2` (mlx5_ifc.h), `roce_addr_layout.roce_version`.
pub(crate) const ROCE_VERSION_2: u32 = 2;

/// `MLX5_REG_NODE_DESC` (driver.h): the node description (fwsim `node_desc.rs`).
pub(crate) const REG_NODE_DESC: u32 = 0x6001;
/// `MLX5_REG_HOST_ENDIANNESS` (driver.h): the register `set_hca_ctrl()` writes at init.
pub(crate) const REG_HOST_ENDIANNESS: u32 = 0x7004;
/// `MLX5_REG_DTOR` (driver.h): the device's default timeouts, read by `tout_query_dtor()`
/// when the init segment reports timeouts (`cmd_q_init_to` not 0).
pub(crate) const REG_DTOR: u32 = 0xC00E;
/// `MLX5_SET_HOST_ENDIANNESS` on a little-endian host (device.h): `he` byte of that register.
pub(crate) const SET_HOST_ENDIANNESS_LE: u8 = 0x80;
/// `MLX5_EVENT_TYPE_CMD` (device.h): command completion EQE.
pub(crate) const EVENT_TYPE_CMD: u8 = 0x0a;
/// `MLX5_EVENT_TYPE_PAGE_REQUEST` (device.h).
#[cfg_attr(MODULE, expect(dead_code, reason = "no page requests; host tests"))]
pub(crate) const EVENT_TYPE_PAGE_REQUEST: u8 = 0x0b;
/// `MLX5_EVENT_TYPE_PORT_CHANGE` (device.h): `mlx5_eqe_port_state`, the subtype below.
#[cfg_attr(
    not(MODULE),
    allow(dead_code, reason = "the host crates use part of them")
)]
pub(crate) const EVENT_TYPE_PORT_CHANGE: u8 = 0x09;
// `MLX5_PORT_CHANGE_SUBTYPE_*` (device.h): the driver maps them all, the device model's SMA
// raises DOWN, ACTIVE, LID, PKEY, GUID and CLIENT_REREG (`fwsim/sma.rs`).
/// `MLX5_PORT_CHANGE_SUBTYPE_DOWN`.
#[cfg_attr(
    not(MODULE),
    allow(dead_code, reason = "the host crates use part of them")
)]
pub(crate) const PORT_CHANGE_SUBTYPE_DOWN: u8 = 1;
/// `MLX5_PORT_CHANGE_SUBTYPE_ACTIVE`.
#[cfg_attr(
    not(MODULE),
    allow(dead_code, reason = "the host crates use part of them")
)]
pub(crate) const PORT_CHANGE_SUBTYPE_ACTIVE: u8 = 4;
/// `MLX5_PORT_CHANGE_SUBTYPE_INITIALIZED`.
#[cfg_attr(not(MODULE), expect(dead_code, reason = "the driver's"))]
pub(crate) const PORT_CHANGE_SUBTYPE_INITIALIZED: u8 = 5;
/// `MLX5_PORT_CHANGE_SUBTYPE_LID`.
pub(crate) const PORT_CHANGE_SUBTYPE_LID: u8 = 6;
/// `MLX5_PORT_CHANGE_SUBTYPE_PKEY`.
pub(crate) const PORT_CHANGE_SUBTYPE_PKEY: u8 = 7;
/// `MLX5_PORT_CHANGE_SUBTYPE_GUID`.
pub(crate) const PORT_CHANGE_SUBTYPE_GUID: u8 = 8;
/// `MLX5_PORT_CHANGE_SUBTYPE_CLIENT_REREG`.
pub(crate) const PORT_CHANGE_SUBTYPE_CLIENT_REREG: u8 = 9;
/// `MLX5_EVENT_TYPE_COMP` (device.h): a CQ completion EQE.
pub(crate) const EVENT_TYPE_COMP: u8 = 0x00;
/// `MLX5_EVENT_TYPE_CQ_ERROR` (device.h).
pub(crate) const EVENT_TYPE_CQ_ERROR: u8 = 0x04;
/// `MLX5_EVENT_TYPE_COMM_EST` (device.h).
pub(crate) const EVENT_TYPE_COMM_EST: u8 = 0x02;
/// `MLX5_EVENT_TYPE_SQ_DRAINED` (device.h).
pub(crate) const EVENT_TYPE_SQ_DRAINED: u8 = 0x03;
/// `MLX5_EVENT_TYPE_WQ_CATAS_ERROR` (device.h).
pub(crate) const EVENT_TYPE_WQ_CATAS_ERROR: u8 = 0x05;
/// `MLX5_EVENT_TYPE_WQ_INVAL_REQ_ERROR` (device.h).
pub(crate) const EVENT_TYPE_WQ_INVAL_REQ_ERROR: u8 = 0x10;
/// `MLX5_EVENT_TYPE_WQ_ACCESS_ERROR` (device.h).
pub(crate) const EVENT_TYPE_WQ_ACCESS_ERROR: u8 = 0x11;
/// `MLX5_EVENT_TYPE_SRQ_LAST_WQE` (device.h).
pub(crate) const EVENT_TYPE_SRQ_LAST_WQE: u8 = 0x13;
/// `MLX5_SHARED_RESOURCE_UID` (mlx5_ifc.h): completion EQs are created with it.
pub(crate) const SHARED_RESOURCE_UID: u16 = 0xffff;
/// `MLX5_QUERY_PAGES_IN_OP_MOD_BOOT_PAGES` (mlx5_ifc.h).
pub(crate) const QUERY_PAGES_BOOT: u32 = 0x1;
/// `MLX5_QUERY_PAGES_IN_OP_MOD_REGULAR_PAGES` (mlx5_ifc.h); INIT_PAGES (0x2) lies between.
pub(crate) const QUERY_PAGES_REGULAR: u32 = 0x3;
/// `MLX5_TEARDOWN_HCA_IN_PROFILE_GRACEFUL_CLOSE` (mlx5_ifc.h).
pub(crate) const TEARDOWN_GRACEFUL_CLOSE: u32 = 0x0;

/// `MLX5_RMPC_STATE_RDY` (mlx5_ifc.h).
pub(crate) const RMPC_STATE_RDY: u32 = 0x1;
/// `MLX5_RMPC_STATE_ERR` (mlx5_ifc.h).
#[expect(dead_code, reason = "the simulator's RMPs never fail")]
pub(crate) const RMPC_STATE_ERR: u32 = 0x3;
/// `MLX5_WQ_TYPE_LINKED_LIST` (mlx5_ifc.h): the receive WQEs of an RMP/SRQ, chained by
/// `next_wqe_index`.
pub(crate) const WQ_TYPE_LINKED_LIST: u32 = 0x0;
/// `MLX5_WQ_TYPE_CYCLIC` (mlx5_ifc.h): the receive WQEs of an RMP consumed in ring order.
pub(crate) const WQ_TYPE_CYCLIC: u32 = 0x1;
/// `MLX5_EVENT_TYPE_SRQ_CATAS_ERROR` (device.h).
pub(crate) const EVENT_TYPE_SRQ_CATAS_ERROR: u8 = 0x12;
/// `MLX5_EVENT_TYPE_SRQ_RQ_LIMIT` (device.h).
pub(crate) const EVENT_TYPE_SRQ_RQ_LIMIT: u8 = 0x14;
/// `MLX5_EVENT_TYPE_PATH_MIG` (device.h): not raised, a DEVX subscription may name it.
#[cfg_attr(not(MODULE), expect(dead_code, reason = "the driver's"))]
pub(crate) const EVENT_TYPE_PATH_MIG: u8 = 0x01;
/// `MLX5_EVENT_TYPE_PATH_MIG_FAILED` (device.h): not raised, a DEVX subscription may name it.
#[cfg_attr(not(MODULE), expect(dead_code, reason = "the driver's"))]
pub(crate) const EVENT_TYPE_PATH_MIG_FAILED: u8 = 0x07;
/// `MLX5_EVENT_TYPE_XRQ_ERROR` (device.h): not raised, a DEVX subscription may name it.
#[cfg_attr(not(MODULE), expect(dead_code, reason = "the driver's"))]
pub(crate) const EVENT_TYPE_XRQ_ERROR: u8 = 0x18;
/// `MLX5_EVENT_TYPE_DCT_DRAINED` (device.h): raised by DRAIN_DCT (`fwsim/dct.rs`).
pub(crate) const EVENT_TYPE_DCT_DRAINED: u8 = 0x1c;
/// `MLX5_EVENT_TYPE_DCT_KEY_VIOLATION` (device.h): not raised, a DEVX subscription may name it.
#[cfg_attr(not(MODULE), expect(dead_code, reason = "the driver's"))]
pub(crate) const EVENT_TYPE_DCT_KEY_VIOLATION: u8 = 0x1d;

/// `MLX5_QP_OPTPAR_*` (qp.h): the bits of a QP transition's `opt_param_mask`, which the driver
/// sets and the simulator applies (only the members whose bit is set).
pub(crate) mod qp_optpar {
    /// `MLX5_QP_OPTPAR_RRE`.
    pub(crate) const RRE: u32 = 1 << 1;
    /// `MLX5_QP_OPTPAR_RAE`.
    pub(crate) const RAE: u32 = 1 << 2;
    /// `MLX5_QP_OPTPAR_RWE`.
    pub(crate) const RWE: u32 = 1 << 3;
    /// `MLX5_QP_OPTPAR_PKEY_INDEX`.
    pub(crate) const PKEY_INDEX: u32 = 1 << 4;
    /// `MLX5_QP_OPTPAR_Q_KEY`.
    pub(crate) const Q_KEY: u32 = 1 << 5;
    /// `MLX5_QP_OPTPAR_RNR_TIMEOUT`.
    pub(crate) const RNR_TIMEOUT: u32 = 1 << 6;
    /// `MLX5_QP_OPTPAR_PRI_PORT`.
    // The driver sets it; the simulator ignores the port (one per function).
    #[cfg_attr(not(MODULE), allow(dead_code))]
    pub(crate) const PRI_PORT: u32 = 1 << 16;
    /// `MLX5_QP_OPTPAR_ACK_TIMEOUT`.
    pub(crate) const ACK_TIMEOUT: u32 = 1 << 14;
    /// `MLX5_QP_OPTPAR_COUNTER_SET_ID`.
    pub(crate) const COUNTER_SET_ID: u32 = 1 << 25;
}
