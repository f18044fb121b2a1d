// SPDX-License-Identifier: GPL-2.0

//! Command failures: a PRM status plus the 32-bit syndrome the simulator reports with it.
//!
//! Real firmware reports an opaque per-check syndrome that NVIDIA support can decode; upstream
//! prints it (`mlx5_cmd_out_err()`) but never interprets it. The simulator's syndromes are its
//! own, one per check, so a failing test or a kernel log line names the exact check that fired.
//! They all carry `0x5f` in the top byte ("sim fw") so they cannot be mistaken for real ones;
//! the second byte groups them by command family. The table is documented in
//! `Documentation/fwsim.md`.

use crate::prm::status::Status;

/// A failed command: what goes into `mbox_out.status` and `mbox_out.syndrome`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CmdError {
    /// `mbox_out.status`.
    pub(crate) status: Status,
    /// `mbox_out.syndrome`.
    pub(crate) syndrome: u32,
}

impl CmdError {
    /// A failure with the given status and syndrome.
    pub(crate) const fn new(status: Status, syndrome: u32) -> Self {
        Self { status, syndrome }
    }

    /// An object table (or the QP's range of numbers) has no free entry.
    pub(crate) const TABLE_FULL: CmdError = CmdError::new(Status::NO_RES_ERR, TABLE_FULL);
}

crate::prm::named_consts! {
    /// Every syndrome with its name.
    // Read by the host test that checks the syndromes are unique.
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    ALL: u32;
    // 0x5f00xxxx: mailbox framing, common to all commands.
    /// Inbox shorter than the 16-byte `mbox_in` header.
    INBOX_HEADER_SHORT = 0x5f00_0001,
    /// Opcode not implemented by this device model.
    BAD_OPCODE = 0x5f00_0002,
    /// Inbox shorter than the command's `*_in` layout (plus trailing arrays it announces).
    INBOX_SHORT = 0x5f00_0003,
    /// Outbox shorter than the command's `*_out` layout (plus the entries requested).
    OUTBOX_SHORT = 0x5f00_0004,
    /// `op_mod` non-zero on a command where it is reserved, or an unknown `op_mod`.
    BAD_OP_MOD = 0x5f00_0005,
    /// `mbox_in.uid` names no live user context.
    UID_UNKNOWN = 0x5f00_0006,
    /// A handle exists but belongs to another uid.
    UID_MISMATCH = 0x5f00_0007,
    /// A reserved field that must be zero is not.
    RESERVED_NOT_ZERO = 0x5f00_0008,
    /// `other_function`/`other_vport` set: no other functions or vports are modeled.
    OTHER_FUNCTION = 0x5f00_0009,
    /// Port number outside `1..=num_ports`.
    BAD_PORT = 0x5f00_000a,
    /// NO_RES_ERR: a CQ/QP buffer or an MTT mkey whose pages need more than `xlat::MAX_RUNS`
    /// bus-contiguous runs (translations are kept compressed, without allocation; the kernel
    /// backend's simulated IOMMU maps every buffer contiguously, so one run is the normal case).
    TRANSLATION_FRAGMENTED = 0x5f00_000b,
    /// Fault injected by the test harness (default syndrome of a fault knob).
    INJECTED = 0x5f00_00ff,

    // 0x5f01xxxx: queries, registers, addresses.
    /// QUERY_HCA_CAP of a capability type the device does not report.
    CAP_TYPE = 0x5f01_0001,
    /// GID or PKey index outside the table.
    TABLE_INDEX = 0x5f01_0002,
    /// ACCESS_REG of an unmodeled register id.
    REG_UNKNOWN = 0x5f01_0003,
    /// ACCESS_REG write of a register or value the model refuses.
    REG_BAD_WRITE = 0x5f01_0004,
    /// SET_ROCE_ADDRESS on an InfiniBand port.
    ROCE_ON_IB = 0x5f01_0005,
    /// SET_ROCE_ADDRESS with an unknown `roce_version`/`roce_l3_type`.
    ROCE_BAD_TYPE = 0x5f01_0006,

    // 0x5f02xxxx: PD, UAR, transport domain, user context.
    /// Resource table full (no ICM left).
    TABLE_FULL = 0x5f02_0001,
    /// No such PD.
    PD_UNKNOWN = 0x5f02_0002,
    /// PD still used by a QP or an mkey.
    PD_BUSY = 0x5f02_0003,
    /// No such UAR.
    UAR_UNKNOWN = 0x5f02_0004,
    /// UAR still used by a CQ or QP.
    UAR_BUSY = 0x5f02_0005,
    /// No such transport domain.
    TD_UNKNOWN = 0x5f02_0006,
    /// No such user context.
    UCTX_UNKNOWN = 0x5f02_0007,
    /// User context still owns objects.
    UCTX_BUSY = 0x5f02_0008,
    /// CREATE_UCTX asked for a capability bit outside `cmd_hca_cap.uctx_cap`.
    UCTX_CAP = 0x5f02_0009,
    /// CREATE_UCTX with a non-zero uid in the header (a user context cannot create another).
    UCTX_NESTED = 0x5f02_000a,
    /// No such Q counter set.
    Q_COUNTER_UNKNOWN = 0x5f02_000b,

    // 0x5f03xxxx: CQ.
    /// No such CQ.
    CQ_UNKNOWN = 0x5f03_0001,
    /// `log_cq_size` above `cmd_hca_cap.log_max_cq_sz`.
    CQ_TOO_BIG = 0x5f03_0002,
    /// CQ still used by a QP.
    CQ_BUSY = 0x5f03_0003,
    /// `cqe_sz` other than 64 or 128 bytes.
    CQ_CQE_SZ = 0x5f03_0004,
    /// `c_eqn` beyond `2^log_max_eq`.
    CQ_EQN = 0x5f03_0005,
    /// `cqc.status` (written by the device only) set on create.
    CQ_STATUS = 0x5f03_0006,
    /// MODIFY_CQ with no or unknown field-select bits.
    CQ_MODIFY_SELECT = 0x5f03_0007,
    /// MODIFY_CQ resize while an earlier resize's RESIZE CQE has not been written yet (the
    /// kernel side calls `Fw::complete_commands` after every command).
    CQ_RESIZE_PENDING = 0x5f03_0008,
    /// MODIFY_CQ resize to fewer entries than the CQEs the CQ still holds (producer counter
    /// minus the consumer index of its doorbell record).
    CQ_RESIZE_TOO_SMALL = 0x5f03_0009,

    // 0x5f04xxxx: QP.
    /// No such QP.
    QP_UNKNOWN = 0x5f04_0001,
    /// Transition from a state the command does not start from.
    QP_BAD_STATE = 0x5f04_0002,
    /// Unsupported service type (`qpc.st`).
    QP_ST = 0x5f04_0003,
    /// `qpc.state` non-zero on create.
    QP_CREATE_STATE = 0x5f04_0004,
    /// `log_sq_size`/`log_rq_size` above `log_max_qp_sz`.
    QP_TOO_BIG = 0x5f04_0005,
    /// `log_msg_max` above `log_max_msg`.
    QP_MSG_MAX = 0x5f04_0006,
    /// Send CQ does not exist or belongs to another uid.
    QP_SEND_CQ = 0x5f04_0007,
    /// Receive CQ does not exist or belongs to another uid.
    QP_RECV_CQ = 0x5f04_0008,
    /// `rq_type` SRQ with an `srqn_rmpn_xrqn` that names no RMP of the uid.
    QP_SRQ = 0x5f04_0009,
    /// `rq_type` value not defined.
    QP_RQ_TYPE = 0x5f04_000a,
    /// Path MTU outside 256..4096 at INIT2RTR.
    QP_MTU = 0x5f04_000b,
    /// `input_qpn` set without the capability to choose QP numbers.
    QP_INPUT_QPN = 0x5f04_000c,

    // 0x5f05xxxx: MKEY.
    /// No such mkey index.
    MKEY_UNKNOWN = 0x5f05_0001,
    /// `mkc.qpn` not 0xffffff (mkeys bound to a QP are not modeled).
    MKEY_QPN = 0x5f05_0002,
    /// Unsupported `access_mode`.
    MKEY_ACCESS_MODE = 0x5f05_0003,

    // 0x5f06xxxx: the function's life cycle and EQs (`hca.rs`).
    /// The command is not accepted in the function's current state (before ENABLE_HCA,
    /// before INIT_HCA, or an init command after INIT_HCA).
    HCA_STATE = 0x5f06_0001,
    /// SET_ISSI of an ISSI the device does not support.
    ISSI_UNSUPPORTED = 0x5f06_0002,
    /// SET_HCA_CAP of a value the device does not offer.
    CAP_NOT_WRITABLE = 0x5f06_0003,
    /// TEARDOWN_HCA with a profile other than graceful close.
    TEARDOWN_PROFILE = 0x5f06_0004,
    /// CREATE_EQ size or page size out of range.
    EQ_BAD_SIZE = 0x5f06_0005,
    /// CREATE_EQ names a UAR page that is not allocated.
    EQ_BAD_UAR = 0x5f06_0006,
    /// No such EQ number.
    EQ_UNKNOWN = 0x5f06_0007,

    // 0x5f07xxxx: RMP (the SRQ object of ISSI 1).
    /// No such RMP.
    RMP_UNKNOWN = 0x5f07_0001,
    /// `rmpc.state` other than RDY on create, or `rmp_state` other than RDY on modify.
    RMP_STATE = 0x5f07_0002,
    /// `wq_type` other than linked list.
    RMP_WQ_TYPE = 0x5f07_0003,
    /// `log_wq_sz` above `log_max_srq_sz`.
    RMP_TOO_BIG = 0x5f07_0004,
    /// `log_wq_stride` outside 16..=`max_wqe_sz_rq` bytes.
    RMP_STRIDE = 0x5f07_0005,
    /// RMP still used by a QP.
    RMP_BUSY = 0x5f07_0006,
    /// MODIFY_RMP with no or unknown bitmask bits.
    RMP_BITMASK = 0x5f07_0007,
    /// `lwm` not below the number of WQEs.
    RMP_LWM = 0x5f07_0008,
    /// PD still used by an RMP.
    PD_BUSY_RMP = 0x5f07_0009,

    // 0x5f08xxxx: XRC domains and XRC SRQs (`xrc.rs`).
    /// No such XRC domain.
    XRCD_UNKNOWN = 0x5f08_0001,
    /// XRC domain still used by an XRC SRQ.
    XRCD_BUSY = 0x5f08_0002,
    /// No such XRC SRQ.
    XRC_SRQ_UNKNOWN = 0x5f08_0003,
    /// `xrc_srqc.state` other than GOOD, or a umem (DEVX) buffer or doorbell: not modeled.
    XRC_SRQ_CTX = 0x5f08_0004,
    /// `log_xrc_srq_size` above `log_max_srq_sz`, or `log_rq_stride` outside 16 bytes to
    /// `max_wqe_sz_rq`.
    XRC_SRQ_SIZE = 0x5f08_0005,
    /// No `pas[]` entry for the buffer.
    XRC_SRQ_NO_PAS = 0x5f08_0006,
    /// PD still used by an XRC SRQ.
    PD_BUSY_XRC_SRQ = 0x5f08_0007,
    /// An XRC QP without an XRC domain (`qpc.xrcd`), or an XRC target QP with a send queue.
    XRC_QP_XRCD = 0x5f08_0008,
    /// XRC domain still used by an XRC target QP.
    XRCD_BUSY_QP = 0x5f08_0009,
    // 09: DEVX umems (`umem.rs`).
    /// No such umem, or a umem of another uid.
    UMEM_UNKNOWN = 0x5f09_0001,
    /// CREATE_UMEM without a uid (umems belong to DEVX user contexts).
    UMEM_NO_UID = 0x5f09_0002,
    /// CREATE_UMEM: `log_page_size` too big, `page_offset` not inside the first page, no MTT
    /// entry, or fewer entries in the inbox than `num_of_mtt`.
    UMEM_BAD_MTT = 0x5f09_0003,
    /// A buffer or doorbell record at a umem offset past the umem's end.
    UMEM_RANGE = 0x5f09_0004,
    /// DESTROY_UMEM of a umem a CQ or QP still uses.
    UMEM_BUSY = 0x5f09_0005,
    /// A umem where the model does not take one (MODIFY_CQ resize into a umem, an RMP).
    UMEM_NOT_MODELED = 0x5f09_0006,
    // 0x5f0axxxx: on-chip device memory (`memic.rs`).
    /// `memic_size` zero, not a multiple of the 64-byte granule, or larger than the memory.
    MEMIC_SIZE = 0x5f0a_0001,
    /// `log_memic_addr_alignment` above `log_max_memic_addr_alignment`.
    MEMIC_ALIGN = 0x5f0a_0002,
    /// The range is not inside the MEMIC window, not granule aligned, or smaller than the size.
    MEMIC_RANGE = 0x5f0a_0003,
    /// No free aligned run of that size in the range (the driver tries the next range).
    MEMIC_FULL = 0x5f0a_0004,
    /// DEALLOC_MEMIC of a start and size that is no live allocation.
    MEMIC_UNKNOWN = 0x5f0a_0005,
    /// A MEMIC mkey outside the window, or on a function without device memory.
    MEMIC_MKEY = 0x5f0a_0006,
    // 0x5f0bxxxx: MAD_IFC (`mad.rs`).
    /// BAD_PARAM_ERR: an SMP to an Ethernet port (no subnet management agent there).
    MAD_NO_SMA = 0x5f0b_0001,
    /// BAD_PKT_ERR: the SMA dropped the SMP for its M_Key (an M_Key violation).
    MAD_MKEY = 0x5f0b_0002,
    /// BAD_PKT_ERR: the MAD is not for this port (a directed route that does not end here, a
    /// response).
    MAD_DROPPED = 0x5f0b_0003,
    /// MODIFY_HCA_VPORT_CONTEXT: a `field_select` (GUIDs, state policy: a vport group
    /// manager's) or a `cap_mask1_field_select` bit the host may not change.
    VPORT_MODIFY = 0x5f0b_0004,
    // 0x5f0cxxxx: DC targets (`dct.rs`).
    /// No such DCT (or a QP number, which names no DCT).
    DCT_UNKNOWN = 0x5f0c_0001,
    /// CREATE_DCT: `dctc.state` other than ACTIVE, or an MTU outside 256..4096.
    DCT_CTX = 0x5f0c_0002,
    /// CREATE_DCT without an SRQ (`srqn_xrqn` names no RMP of the caller).
    DCT_SRQ = 0x5f0c_0003,
    /// DRAIN_DCT of a DCT that is not ACTIVE.
    DCT_STATE = 0x5f0c_0004,
    // 0x5f0dxxxx: multicast groups (`mcg.rs`).
    /// ATTACH_TO_MCG of a QP that is not UD, of a GID that is no group, of an attached QP;
    /// DETACH_FROM_MCG of a QP not attached.
    MCG_PARAM = 0x5f0d_0001,
    /// ATTACH_TO_MCG beyond the attachments the function keeps.
    MCG_FULL = 0x5f0d_0002,
}

#[cfg(test)]
mod tests {
    #[test]
    fn syndromes_are_unique_and_tagged() {
        for (i, (n, v)) in super::ALL.iter().enumerate() {
            assert_eq!(v >> 24, 0x5f, "{n}");
            for (m, w) in super::ALL.iter().skip(i + 1) {
                assert_ne!(v, w, "{n} and {m}");
            }
        }
    }
}
