// SPDX-License-Identifier: GPL-2.0

//! The driver data (udata) of libmlx5's verbs objects: parsers of the requests and builders of
//! the responses of ALLOC_PD, CREATE_CQ and CREATE_QP (layouts from
//! `include/uapi/rdma/mlx5-abi.h`), with upstream's validation and errnos.
//!
//! Pure `core` code over byte slices (no kernel API, no allocation, no `unsafe`): compiled into
//! `mlx5_ib_rs` and, for unit tests, into the host crate `host/prm`. The checks that need the
//! device's capabilities take them as plain values ([`CqCaps`], [`QpCaps`]). User-space ABI
//! structs are in the CPU's byte order.
//!
//! The order of checks is upstream's, so that a request with several faults gets the errno
//! upstream returns first. Steps between them that touch memory (pinning the buffer, mapping
//! the doorbell) are the driver's (`crate::ib::cq`, `crate::ib::qp`, `crate::ib::srq`); the
//! functions here are split at those points.

use crate::uapi_layout::{uapi_c_member, uapi_structs, AbiField, Layout};

// The structs of `include/uapi/rdma/mlx5-abi.h` (and `mlx5_ib_uapi_reg` of
// `mlx5_user_ioctl_verbs.h`) this driver reads or writes, members named as in C;
// `tools/uabi-check` compares each layout with the kernel's header.
uapi_structs! {
    /// `struct mlx5_ib_alloc_ucontext_req` (the v0 request).
    mlx5_ib_alloc_ucontext_req => pub(crate) struct AllocUcontextReqV0(8) {
        total_num_bfregs: u32,
        num_low_latency_bfregs: u32,
    }

    /// `struct mlx5_ib_create_qp_dci_streams`.
    mlx5_ib_create_qp_dci_streams => pub(crate) struct CreateQpDciStreams(2) {
        log_num_concurent: u8,
        log_num_errored: u8,
    }

    /// `struct mlx5_ib_alloc_mw`.
    mlx5_ib_alloc_mw => pub(crate) struct AllocMw(8) {
        comp_mask: u32,
        num_klms: u8,
        reserved1: u8,
        reserved2: u16,
    }

    /// `struct mlx5_ib_uapi_reg`.
    mlx5_ib_uapi_reg => pub(crate) struct UapiReg(8) {
        value: u32,
        mask: u32,
    }

    /// `struct mlx5_ib_alloc_ucontext_req_v2`.
    mlx5_ib_alloc_ucontext_req_v2 => pub(crate) struct AllocUcontextReqV2(32) {
        total_num_bfregs: u32,
        num_low_latency_bfregs: u32,
        flags: u32,
        comp_mask: u32,
        max_cqe_version: u8,
        reserved0: u8,
        reserved1: u16,
        reserved2: u32,
        lib_caps: u64,
    }

    /// `struct mlx5_ib_alloc_ucontext_resp`.
    mlx5_ib_alloc_ucontext_resp => pub(crate) struct AllocUcontextResp(72) {
        qp_tab_size: u32,
        bf_reg_size: u32,
        tot_bfregs: u32,
        cache_line_size: u32,
        max_sq_desc_sz: u16,
        max_rq_desc_sz: u16,
        max_send_wqebb: u32,
        max_recv_wr: u32,
        max_srq_recv_wr: u32,
        num_ports: u16,
        flow_action_flags: u16,
        comp_mask: u32,
        response_length: u32,
        cqe_version: u8,
        cmds_supp_uhw: u8,
        eth_min_inline: u8,
        clock_info_versions: u8,
        hca_core_clock_offset: u64,
        log_uar_size: u32,
        num_uars_per_page: u32,
        num_dyn_bfregs: u32,
        dump_fill_mkey: u32,
    }

    /// `struct mlx5_ib_alloc_pd_resp`.
    mlx5_ib_alloc_pd_resp => pub(crate) struct AllocPdResp(4) {
        pdn: u32,
    }

    /// `struct mlx5_ib_create_cq`.
    mlx5_ib_create_cq => pub(crate) struct CreateCq(32) {
        buf_addr: u64,
        db_addr: u64,
        cqe_size: u32,
        cqe_comp_en: u8,
        cqe_comp_res_format: u8,
        flags: u16,
        uar_page_index: u16,
        reserved0: u16,
        reserved1: u32,
    }

    /// `struct mlx5_ib_create_cq_resp`.
    mlx5_ib_create_cq_resp => pub(crate) struct CreateCqResp(8) {
        cqn: u32,
        reserved: u32,
    }

    /// `struct mlx5_ib_resize_cq`.
    mlx5_ib_resize_cq => pub(crate) struct ResizeCq(16) {
        buf_addr: u64,
        cqe_size: u16,
        reserved0: u16,
        reserved1: u32,
    }

    /// `struct mlx5_ib_create_qp`.
    mlx5_ib_create_qp => pub(crate) struct CreateQp(56) {
        buf_addr: u64,
        db_addr: u64,
        sq_wqe_count: u32,
        rq_wqe_count: u32,
        rq_wqe_shift: u32,
        flags: u32,
        uidx: u32,
        bfreg_index: u32,
        /// The union of `sq_buf_addr` and `access_key` (DCT).
        sq_buf_addr: u64,
        ece_options: u32,
        dci_streams: CreateQpDciStreams,
        reserved: u16,
    }

    /// `struct mlx5_ib_create_qp_resp`.
    mlx5_ib_create_qp_resp => pub(crate) struct CreateQpResp(40) {
        bfreg_index: u32,
        ece_options: u32,
        comp_mask: u32,
        tirn: u32,
        tisn: u32,
        rqn: u32,
        sqn: u32,
        reserved1: u32,
        tir_icm_addr: u64,
    }

    /// `struct mlx5_ib_create_srq`.
    mlx5_ib_create_srq => pub(crate) struct CreateSrq(32) {
        buf_addr: u64,
        db_addr: u64,
        flags: u32,
        reserved0: u32,
        uidx: u32,
        reserved1: u32,
    }

    /// `struct mlx5_ib_create_srq_resp`.
    mlx5_ib_create_srq_resp => pub(crate) struct CreateSrqResp(8) {
        srqn: u32,
        reserved: u32,
    }

    /// `struct mlx5_ib_tso_caps`.
    mlx5_ib_tso_caps => pub(crate) struct TsoCaps(8) {
        max_tso: u32,
        supported_qpts: u32,
    }

    /// `struct mlx5_ib_rss_caps`.
    mlx5_ib_rss_caps => pub(crate) struct RssCaps(16) {
        rx_hash_fields_mask: u64,
        rx_hash_function: u8,
        reserved: [u8; 7],
    }

    /// `struct mlx5_ib_cqe_comp_caps`.
    mlx5_ib_cqe_comp_caps => pub(crate) struct CqeCompCaps(8) {
        max_num: u32,
        supported_format: u32,
    }

    /// `struct mlx5_packet_pacing_caps`.
    mlx5_packet_pacing_caps => pub(crate) struct PacketPacingCaps(16) {
        qp_rate_limit_min: u32,
        qp_rate_limit_max: u32,
        supported_qpts: u32,
        cap_flags: u8,
        reserved: [u8; 3],
    }

    /// `struct mlx5_ib_sw_parsing_caps`.
    mlx5_ib_sw_parsing_caps => pub(crate) struct SwParsingCaps(8) {
        sw_parsing_offloads: u32,
        supported_qpts: u32,
    }

    /// `struct mlx5_ib_striding_rq_caps`.
    mlx5_ib_striding_rq_caps => pub(crate) struct StridingRqCaps(24) {
        min_single_stride_log_num_of_bytes: u32,
        max_single_stride_log_num_of_bytes: u32,
        min_single_wqe_log_num_of_strides: u32,
        max_single_wqe_log_num_of_strides: u32,
        supported_qpts: u32,
        reserved: u32,
    }

    /// `struct mlx5_ib_dci_streams_caps`.
    mlx5_ib_dci_streams_caps => pub(crate) struct DciStreamsCaps(2) {
        max_log_num_concurent: u8,
        max_log_num_errored: u8,
    }

    /// `struct mlx5_ib_query_device_resp`.
    mlx5_ib_query_device_resp => pub(crate) struct QueryDeviceResp(112) {
        comp_mask: u32,
        response_length: u32,
        tso_caps: TsoCaps,
        rss_caps: RssCaps,
        cqe_comp_caps: CqeCompCaps,
        packet_pacing_caps: PacketPacingCaps,
        mlx5_ib_support_multi_pkt_send_wqes: u32,
        flags: u32,
        sw_parsing_caps: SwParsingCaps,
        striding_rq_caps: StridingRqCaps,
        tunnel_offloads_caps: u32,
        dci_streams_caps: DciStreamsCaps,
        reserved: u16,
        reg_c0: UapiReg,
    }

    /// `struct mlx5_ib_create_ah_resp`.
    mlx5_ib_create_ah_resp => pub(crate) struct CreateAhResp(16) {
        response_length: u32,
        dmac: [u8; 6],
        reserved: [u8; 6],
    }
}

/// The errno a malformed request gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AbiError {
    /// `EINVAL`.
    Inval,
    /// `EOPNOTSUPP`.
    NotSupp,
}

type Result<T> = core::result::Result<T, AbiError>;

/// upstream `_ib_copy_validate_udata_in()`: `EINVAL` below the struct's first version
/// (`min`), `EOPNOTSUPP` for non-zero bytes beyond the kernel's struct (`copy_struct_from_user()`
/// `E2BIG`); the copy is zero-extended.
fn copy_validate<T: AbiField>(input: &[u8], min: usize) -> Result<T> {
    if input.len() < min {
        return Err(AbiError::Inval);
    }
    if input.iter().skip(T::SIZE).any(|b| *b != 0) {
        return Err(AbiError::NotSupp);
    }
    Ok(T::read(input))
}

// ---- ALLOC_PD ----

/// `sizeof(struct mlx5_ib_alloc_pd_resp)`.
pub(crate) const ALLOC_PD_RESP_LEN: usize = AllocPdResp::SIZE;

/// `struct mlx5_ib_alloc_pd_resp { __u32 pdn; }`.
pub(crate) fn alloc_pd_resp(pdn: u32) -> [u8; ALLOC_PD_RESP_LEN] {
    AllocPdResp { pdn }.to_bytes()
}

// ---- CREATE_CQ ----

/// `offsetofend(struct mlx5_ib_create_cq, cqe_comp_res_format)`: the first version's end.
pub(crate) const CREATE_CQ_MIN: usize = 22;
/// `sizeof(struct mlx5_ib_create_cq_resp)`.
pub(crate) const CREATE_CQ_RESP_LEN: usize = CreateCqResp::SIZE;

/// `MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD`.
pub(crate) const CQ_FLAGS_CQE_128B_PAD: u16 = 1 << 0;
/// `MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX`.
pub(crate) const CQ_FLAGS_UAR_PAGE_INDEX: u16 = 1 << 1;
/// `MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS`.
pub(crate) const CQ_FLAGS_REAL_TIME_TS: u16 = 1 << 2;

/// `struct mlx5_ib_create_cq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CreateCqReq {
    /// User address of the CQE buffer.
    pub(crate) buf_addr: u64,
    /// User address of the doorbell record.
    pub(crate) db_addr: u64,
    /// 64 or 128.
    pub(crate) cqe_size: u32,
    /// CQE compression requested (1).
    pub(crate) cqe_comp_en: u8,
    /// `MLX5_IB_CQE_RES_FORMAT_*` of compressed CQEs.
    pub(crate) cqe_comp_res_format: u8,
    /// `MLX5_IB_CREATE_CQ_FLAGS_*`.
    pub(crate) flags: u16,
    /// UAR page (with `UAR_PAGE_INDEX`).
    pub(crate) uar_page_index: u16,
}

/// The first checks of upstream `create_cq_user()`, before the buffer is pinned:
/// `ib_copy_validate_udata_in(udata, ucmd, cqe_comp_res_format)` (`EINVAL` below 22 bytes,
/// `EOPNOTSUPP` for non-zero bytes past 32), unknown flags `EINVAL`, a CQE size other than 64
/// or 128 or non-zero reserved members `EINVAL`.
///
/// # Errors
///
/// `AbiError::Inval` for a short or malformed request (non-zero reserved members, unknown
/// flags, a CQE size other than 64 or 128).
pub(crate) fn parse_create_cq(input: &[u8]) -> Result<CreateCqReq> {
    let b = copy_validate::<CreateCq>(input, CREATE_CQ_MIN)?;
    let r = CreateCqReq {
        buf_addr: b.buf_addr,
        db_addr: b.db_addr,
        cqe_size: b.cqe_size,
        cqe_comp_en: b.cqe_comp_en,
        cqe_comp_res_format: b.cqe_comp_res_format,
        flags: b.flags,
        uar_page_index: b.uar_page_index,
    };
    let (reserved0, reserved1) = (b.reserved0, b.reserved1);
    if r.flags & !(CQ_FLAGS_CQE_128B_PAD | CQ_FLAGS_UAR_PAGE_INDEX | CQ_FLAGS_REAL_TIME_TS) != 0 {
        return Err(AbiError::Inval);
    }
    if (r.cqe_size != 64 && r.cqe_size != 128) || reserved0 != 0 || reserved1 != 0 {
        return Err(AbiError::Inval);
    }
    Ok(r)
}

/// The general capabilities `create_cq_user()` reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CqCaps {
    /// `cqe_compression`.
    pub(crate) cqe_compression: bool,
    /// `cqe_compression_128`.
    pub(crate) cqe_compression_128: bool,
    /// `mini_cqe_resp_stride_index`.
    pub(crate) mini_cqe_resp_stride_index: bool,
    /// `cqe_128_always`.
    pub(crate) cqe_128_always: bool,
}

/// `cqc.cqe_sz` (`CQE_STRIDE_*`, include/linux/mlx5/cq.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CqeStride {
    /// 64-byte CQEs (0).
    B64,
    /// 128-byte CQEs (1).
    B128,
    /// 128-byte CQEs, 64-byte CQEs padded (2).
    B128Pad,
}

/// What a validated user CQ request asks of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UserCqParams {
    /// CQE size in bytes (64 or 128): the buffer holds `entries * cqe_size` bytes.
    pub(crate) cqe_size: u32,
    /// `cqc.cqe_sz`.
    pub(crate) stride: CqeStride,
    /// `cqc.mini_cqe_res_format` with `cqe_comp_en`, if compression was asked for.
    pub(crate) mini_cqe_format: Option<u8>,
    /// `cqc.uar_page`.
    pub(crate) uar_index: u32,
    /// `MLX5_IB_CQ_PR_FLAGS_REAL_TIME_TS` (QPs on this CQ then need real-time timestamps).
    pub(crate) real_time_ts: bool,
}

/// upstream `mini_cqe_res_format_to_hw()`.
fn mini_cqe_format(caps: &CqCaps, f: u8) -> Result<u8> {
    match f {
        // MLX5_IB_CQE_RES_FORMAT_HASH -> MLX5_CQE_RES_FORMAT_HASH
        1 => Ok(0),
        // _CSUM -> _CSUM
        2 => Ok(1),
        // _CSUM_STRIDX -> _CSUM_STRIDX (3) if the device can
        4 if caps.mini_cqe_resp_stride_index => Ok(3),
        4 => Err(AbiError::NotSupp),
        _ => Err(AbiError::Inval),
    }
}

/// The rest of upstream `create_cq_user()`, after the buffer and the doorbell are mapped: the
/// UAR page (the `UAR_PAGE_INDEX` flag; a context with dynamic UARs must send it, `EINVAL`),
/// CQE compression (`EOPNOTSUPP` where the device cannot compress CQEs of that size; the
/// format as `mini_cqe_res_format_to_hw()`), 128-byte padding (`EOPNOTSUPP` unless 128-byte
/// CQEs and `cqe_128_always`). Contexts with static UARs do not exist in this driver
/// (`lib_uar_dyn` is always set), so there is no `sys_pages[0]` fallback.
///
/// # Errors
///
/// `AbiError::Inval` for values upstream refuses, `AbiError::NotSupp` for CQE compression or a
/// feature the capabilities do not offer.
pub(crate) fn user_cq_params(req: &CreateCqReq, caps: &CqCaps) -> Result<UserCqParams> {
    if req.flags & CQ_FLAGS_UAR_PAGE_INDEX == 0 {
        return Err(AbiError::Inval);
    }
    let uar_index = u32::from(req.uar_page_index);
    let mut mini = None;
    if req.cqe_comp_en == 1 {
        let ok = (req.cqe_size == 128 && caps.cqe_compression_128)
            || (req.cqe_size == 64 && caps.cqe_compression);
        if !ok {
            return Err(AbiError::NotSupp);
        }
        mini = Some(mini_cqe_format(caps, req.cqe_comp_res_format)?);
    }
    let pad = req.flags & CQ_FLAGS_CQE_128B_PAD != 0;
    if pad && (req.cqe_size != 128 || !caps.cqe_128_always) {
        return Err(AbiError::NotSupp);
    }
    let stride = match (pad, req.cqe_size) {
        (true, _) => CqeStride::B128Pad,
        (false, 64) => CqeStride::B64,
        _ => CqeStride::B128,
    };
    Ok(UserCqParams {
        cqe_size: req.cqe_size,
        stride,
        mini_cqe_format: mini,
        uar_index,
        real_time_ts: req.flags & CQ_FLAGS_REAL_TIME_TS != 0,
    })
}

/// `struct mlx5_ib_create_cq_resp { __u32 cqn; __u32 reserved; }`.
pub(crate) fn create_cq_resp(cqn: u32) -> [u8; CREATE_CQ_RESP_LEN] {
    CreateCqResp { cqn, reserved: 0 }.to_bytes()
}

// ---- RESIZE_CQ ----

/// `sizeof(struct mlx5_ib_resize_cq)`, also its first version's end (`reserved1`).
pub(crate) const RESIZE_CQ_LEN: usize = ResizeCq::SIZE;

/// `struct mlx5_ib_resize_cq { __aligned_u64 buf_addr; __u16 cqe_size; __u16 reserved0;
/// __u32 reserved1; }`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ResizeCqReq {
    /// User address of the new CQE buffer.
    pub(crate) buf_addr: u64,
    /// 64 or 128.
    pub(crate) cqe_size: u16,
}

/// upstream `resize_user()`: `ib_copy_validate_udata_in(udata, ucmd, reserved1)` (`EINVAL`
/// below 16 bytes, `EOPNOTSUPP` for non-zero bytes past them), non-zero reserved members
/// `EINVAL`. Deviation: a CQE size other than 64 or 128 is `EINVAL` (upstream passes any size
/// to `ib_umem_get_va()` and maps everything but 64 to 128-byte CQEs).
///
/// # Errors
///
/// `AbiError::Inval` for a short or malformed request.
pub(crate) fn parse_resize_cq(input: &[u8]) -> Result<ResizeCqReq> {
    let b = copy_validate::<ResizeCq>(input, RESIZE_CQ_LEN)?;
    let r = ResizeCqReq {
        buf_addr: b.buf_addr,
        cqe_size: b.cqe_size,
    };
    if b.reserved0 != 0 || b.reserved1 != 0 {
        return Err(AbiError::Inval);
    }
    if r.cqe_size != 64 && r.cqe_size != 128 {
        return Err(AbiError::Inval);
    }
    Ok(r)
}

// ---- CREATE_QP ----

/// `offsetof(struct mlx5_ib_create_qp, ece_options)`: what rdma-core before ECE sends.
pub(crate) const CREATE_QP_MIN: usize = core::mem::offset_of!(CreateQp, ece_options);
/// `offsetof(struct mlx5_ib_create_qp, reserved)`: bytes from here on must be zero.
const CREATE_QP_RESERVED: usize = core::mem::offset_of!(CreateQp, reserved);
/// `sizeof(struct mlx5_ib_create_qp_resp)`.
pub(crate) const CREATE_QP_RESP_LEN: usize = CreateQpResp::SIZE;

/// `MLX5_QP_FLAG_*` (mlx5-abi.h).
pub(crate) mod qp_flag {
    /// `MLX5_QP_FLAG_SIGNATURE`.
    pub(crate) const SIGNATURE: u32 = 1 << 0;
    /// `MLX5_QP_FLAG_SCATTER_CQE`.
    pub(crate) const SCATTER_CQE: u32 = 1 << 1;
    /// `MLX5_QP_FLAG_BFREG_INDEX`.
    pub(crate) const BFREG_INDEX: u32 = 1 << 3;
    /// `MLX5_QP_FLAG_TYPE_DCT`.
    pub(crate) const TYPE_DCT: u32 = 1 << 4;
    /// `MLX5_QP_FLAG_TYPE_DCI`.
    pub(crate) const TYPE_DCI: u32 = 1 << 5;
    /// `MLX5_QP_FLAG_ALLOW_SCATTER_CQE`.
    pub(crate) const ALLOW_SCATTER_CQE: u32 = 1 << 8;
    /// `MLX5_QP_FLAG_PACKET_BASED_CREDIT_MODE`.
    pub(crate) const PACKET_BASED_CREDIT_MODE: u32 = 1 << 9;
    /// `MLX5_QP_FLAG_UAR_PAGE_INDEX`.
    pub(crate) const UAR_PAGE_INDEX: u32 = 1 << 10;
    /// `MLX5_QP_FLAG_DCI_STREAM`.
    pub(crate) const DCI_STREAM: u32 = 1 << 11;
}

/// `MLX5_IB_DEFAULT_UIDX`: "no user index" (CQE version 0).
pub(crate) const DEFAULT_UIDX: u32 = 0xff_ffff;
/// `MLX5_IB_INVALID_BFREG` (`BIT(31)`): the response's `bfreg_index` for a QP that named its
/// UAR page itself.
pub(crate) const INVALID_BFREG: u32 = 1 << 31;

/// `struct mlx5_ib_create_qp` (the non-RSS form).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CreateQpReq {
    /// User address of the WQE buffer (RQ, then SQ).
    pub(crate) buf_addr: u64,
    /// User address of the doorbell record.
    pub(crate) db_addr: u64,
    /// Send WQE basic blocks (a power of two, or 0).
    pub(crate) sq_wqe_count: u32,
    /// Receive WQEs.
    pub(crate) rq_wqe_count: u32,
    /// log2 of the receive WQE size.
    pub(crate) rq_wqe_shift: u32,
    /// `MLX5_QP_FLAG_*`.
    pub(crate) flags: u32,
    /// User index (CQE version 1), or `MLX5_IB_DEFAULT_UIDX`.
    pub(crate) uidx: u32,
    /// The UAR page (`UAR_PAGE_INDEX`) or bfreg (`BFREG_INDEX`).
    pub(crate) bfreg_index: u32,
    /// Raw packet QPs: the SQ buffer (or DCT `access_key`).
    pub(crate) sq_buf_addr: u64,
    /// ECE options (0 from rdma-core before ECE).
    pub(crate) ece_options: u32,
}

/// upstream `process_udata_size()` + `check_ucmd_data()` + the copy in `mlx5_ib_create_qp()`
/// for a non-RSS QP: `EINVAL` below `offsetof(ece_options)` (48 bytes) and for non-zero
/// bytes from `reserved` (offset 54) on; the copy is zero-extended.
///
/// # Errors
///
/// `AbiError::Inval` for a short or malformed request.
pub(crate) fn parse_create_qp(input: &[u8]) -> Result<CreateQpReq> {
    if input.len() < CREATE_QP_MIN {
        return Err(AbiError::Inval);
    }
    if input.iter().skip(CREATE_QP_RESERVED).any(|b| *b != 0) {
        return Err(AbiError::Inval);
    }
    let b = CreateQp::from_bytes(input);
    Ok(CreateQpReq {
        buf_addr: b.buf_addr,
        db_addr: b.db_addr,
        sq_wqe_count: b.sq_wqe_count,
        rq_wqe_count: b.rq_wqe_count,
        rq_wqe_shift: b.rq_wqe_shift,
        flags: b.flags,
        uidx: b.uidx,
        bfreg_index: b.bfreg_index,
        sq_buf_addr: b.sq_buf_addr,
        ece_options: b.ece_options,
    })
}

/// The QP types user QPs are created for here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UserQpType {
    /// `IB_QPT_RC`.
    Rc,
    /// `IB_QPT_UC`.
    Uc,
    /// `IB_QPT_UD`.
    Ud,
    /// `IB_QPT_XRC_INI`.
    XrcIni,
    /// `IB_QPT_DRIVER` with `MLX5_QP_FLAG_TYPE_DCI` (upstream `MLX5_IB_QPT_DCI`).
    Dci,
    /// `IB_QPT_DRIVER` with `MLX5_QP_FLAG_TYPE_DCT` (upstream `MLX5_IB_QPT_DCT`).
    Dct,
}

/// upstream `process_vendor_flags()`'s subtype of an `IB_QPT_DRIVER` QP: exactly one of
/// `MLX5_QP_FLAG_TYPE_DCI` and `_DCT`.
///
/// # Errors
///
/// `AbiError::Inval` for neither or both.
pub(crate) fn dc_type(flags: u32) -> Result<UserQpType> {
    match flags & (qp_flag::TYPE_DCT | qp_flag::TYPE_DCI) {
        qp_flag::TYPE_DCI => Ok(UserQpType::Dci),
        qp_flag::TYPE_DCT => Ok(UserQpType::Dct),
        _ => Err(AbiError::Inval),
    }
}

/// The general capabilities the user QP path reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct QpCaps {
    /// `log_max_qp_sz`.
    pub(crate) log_max_qp_sz: u32,
    /// `max_wqe_sz_sq`.
    pub(crate) max_wqe_sz_sq: u32,
    /// `sctr_data_cqe` (not in the cached subset: false).
    pub(crate) sctr_data_cqe: bool,
    /// `qp_packet_based`.
    pub(crate) qp_packet_based: bool,
    /// `log_max_dci_stream_channels != 0` (not in the cached subset: false).
    pub(crate) dci_streams: bool,
}

/// upstream `process_vendor_flags()`: returns the accepted flags (`qp->flags_en`). A DC type
/// flag belongs to a DCI or DCT (of `IB_QPT_DRIVER`, [`dc_type`]); on an RC, UC or UD QP it is a
/// deviation (`EOPNOTSUPP`; upstream turns the QP into a DC QP). Scatter-to-CQE flags the
/// device cannot honour are dropped silently, as upstream; any other flag left over is
/// `EINVAL`.
///
/// # Errors
///
/// `AbiError::NotSupp` for a flag this driver or the device does not offer, `AbiError::Inval`
/// for a contradictory combination.
pub(crate) fn qp_vendor_flags(flags: u32, t: UserQpType, caps: &QpCaps) -> Result<u32> {
    use qp_flag::*;
    let dc = match t {
        UserQpType::Dci => TYPE_DCI,
        UserQpType::Dct => TYPE_DCT,
        _ => 0,
    };
    if flags & (TYPE_DCT | TYPE_DCI) & !dc != 0 {
        return Err(AbiError::NotSupp);
    }
    let mut left = flags & !dc;
    let mut en = dc;
    let mut take = |flag: u32, cond: bool, left: &mut u32| {
        if *left & flag == 0 {
            return;
        }
        if cond {
            en |= flag;
            *left &= !flag;
        } else if flag == SCATTER_CQE || flag == ALLOW_SCATTER_CQE {
            *left &= !(SCATTER_CQE | ALLOW_SCATTER_CQE);
        }
    };
    take(DCI_STREAM, caps.dci_streams, &mut left);
    take(SIGNATURE, true, &mut left);
    take(SCATTER_CQE, caps.sctr_data_cqe, &mut left);
    take(ALLOW_SCATTER_CQE, caps.sctr_data_cqe, &mut left);
    if t == UserQpType::Rc {
        take(PACKET_BASED_CREDIT_MODE, caps.qp_packet_based, &mut left);
    }
    take(BFREG_INDEX, true, &mut left);
    take(UAR_PAGE_INDEX, true, &mut left);
    if left != 0 {
        return Err(AbiError::Inval);
    }
    Ok(en)
}

/// upstream `get_qp_user_index()` + `verify_assign_uidx()` (the request always holds `uidx`:
/// it is at least 48 bytes): with CQE version 0 only `MLX5_IB_DEFAULT_UIDX` is accepted; with
/// version 1 the index must be a 24-bit value other than the default.
///
/// # Errors
///
/// `AbiError::Inval` for a user index the context's CQE version does not allow.
pub(crate) fn qp_user_index(cqe_version: u8, uidx: u32) -> Result<u32> {
    if cqe_version == 0 {
        return if uidx == DEFAULT_UIDX {
            Ok(DEFAULT_UIDX)
        } else {
            Err(AbiError::Inval)
        };
    }
    if uidx == DEFAULT_UIDX || uidx & !0xff_ffff != 0 {
        return Err(AbiError::Inval);
    }
    Ok(uidx)
}

/// The user QP's queues and buffer as the request describes them, checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct UserQpLayout {
    /// Receive WQEs (0: no receive queue).
    pub(crate) rq_wqe_cnt: u32,
    /// log2 of the receive WQE size.
    pub(crate) rq_wqe_shift: u32,
    /// Send WQE basic blocks (0: no send queue).
    pub(crate) sq_wqe_cnt: u32,
    /// Byte offset of the SQ in the buffer (`rq_wqe_cnt << rq_wqe_shift`).
    pub(crate) sq_offset: u32,
    /// Bytes of the buffer (RQ + SQ); 0: no buffer to pin.
    pub(crate) buf_size: u32,
    /// `qpc.uar_page`.
    pub(crate) uar_index: u32,
}

/// `MLX5_SEND_WQE_BB` as a shift.
const SEND_WQE_SHIFT: u32 = 6;

/// upstream `create_user_qp()` up to the buffer: `set_rq_size()` with the request
/// (`max_recv_wr > 2^log_max_qp_sz` `EINVAL`; the user's RQ count and stride, a stride too
/// small for the signature `EINVAL`), the RQ in the request must be what that computed
/// (`EINVAL`), `sq_wqe_count ≤ 2^log_max_qp_sz`; then `_create_user_qp()`'s UAR choice (only
/// `UAR_PAGE_INDEX` is possible with dynamic UARs: `BFREG_INDEX`, both flags, or neither are
/// `EINVAL` as upstream's `bfregn_to_uar_index()`/`alloc_bfreg()` answer for `lib_uar_dyn`),
/// and `set_user_buf_size()` (SQ count a power of two, sizes without overflow, `EINVAL`).
///
/// # Errors
///
/// `AbiError::Inval` for queue sizes or a WQE shift upstream refuses, or a layout that
/// overflows.
pub(crate) fn user_qp_layout(
    req: &CreateQpReq,
    flags_en: u32,
    has_rq: bool,
    max_recv_wr: u32,
    caps: &QpCaps,
) -> Result<UserQpLayout> {
    let max_wqes = 1u64 << caps.log_max_qp_sz.min(32);
    if u64::from(max_recv_wr) > max_wqes {
        return Err(AbiError::Inval);
    }
    let (rq_cnt, rq_shift) = if has_rq {
        // check_shl_overflow(1, shift, &int)
        if req.rq_wqe_shift >= 31 {
            return Err(AbiError::Inval);
        }
        let wqe_size = 1u32 << req.rq_wqe_shift;
        let wq_sig = u32::from(flags_en & qp_flag::SIGNATURE != 0);
        if wqe_size / 16 < wq_sig {
            return Err(AbiError::Inval);
        }
        (req.rq_wqe_count, req.rq_wqe_shift)
    } else {
        (0, 0)
    };
    if req.rq_wqe_shift != rq_shift || req.rq_wqe_count != rq_cnt {
        return Err(AbiError::Inval);
    }
    if u64::from(req.sq_wqe_count) > max_wqes {
        return Err(AbiError::Inval);
    }
    let uar_index = match flags_en & (qp_flag::UAR_PAGE_INDEX | qp_flag::BFREG_INDEX) {
        qp_flag::UAR_PAGE_INDEX => req.bfreg_index,
        _ => return Err(AbiError::Inval),
    };
    // qp->sq.offset = rq.wqe_cnt << rq.wqe_shift, an int.
    let shl = |cnt: u32, shift: u32| -> Result<u32> {
        let v = u64::from(cnt) << shift;
        u32::try_from(v)
            .ok()
            .filter(|v| *v <= i32::MAX as u32)
            .ok_or(AbiError::Inval)
    };
    let sq_offset = shl(rq_cnt, rq_shift)?;
    // set_user_buf_size()
    if (1u32 << SEND_WQE_SHIFT) > caps.max_wqe_sz_sq {
        return Err(AbiError::Inval);
    }
    if req.sq_wqe_count != 0 && !req.sq_wqe_count.is_power_of_two() {
        return Err(AbiError::Inval);
    }
    let sq_bytes = shl(req.sq_wqe_count, SEND_WQE_SHIFT)?;
    let buf_size = sq_offset
        .checked_add(sq_bytes)
        .filter(|v| *v <= i32::MAX as u32)
        .ok_or(AbiError::Inval)?;
    Ok(UserQpLayout {
        rq_wqe_cnt: rq_cnt,
        rq_wqe_shift: rq_shift,
        sq_wqe_cnt: req.sq_wqe_count,
        sq_offset,
        buf_size,
        uar_index,
    })
}

/// upstream `get_qp_ts_format()`: the `qpc.ts_format` of a QP from the RoCE capability
/// `qp_ts_format` (`MLX5_TIMESTAMP_FORMAT_CAP_*`: 0 free running, 1 real time, 2 both; 0 where
/// the device has no RoCE page) and whether its send and receive CQs asked for real-time
/// timestamps (`MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS`): `EOPNOTSUPP` if real time is asked
/// and not supported, or the two CQs want different formats.
///
/// # Errors
///
/// `AbiError::NotSupp` for a timestamp format the device does not offer.
pub(crate) fn qp_ts_format(ts_cap: u32, send_rt: bool, recv_rt: bool) -> Result<u32> {
    // MLX5_TIMESTAMP_FORMAT_FREE_RUNNING 0, _DEFAULT 1, _REAL_TIME 2.
    let fr_sup = ts_cap == 0 || ts_cap == 2;
    let rt_sup = ts_cap == 1 || ts_cap == 2;
    let default_ts = if fr_sup { 0 } else { 1 };
    let of = |rt: bool| -> Result<u32> {
        match (rt, rt_sup) {
            (true, true) => Ok(2),
            (true, false) => Err(AbiError::NotSupp),
            (false, _) => Ok(default_ts),
        }
    };
    let (s, r) = (of(send_rt)?, of(recv_rt)?);
    if s != 1 && r != 1 && s != r {
        return Err(AbiError::NotSupp);
    }
    Ok(if s == default_ts { r } else { s })
}

/// `struct mlx5_ib_create_qp_resp` of an RC/UC/UD QP: `bfreg_index` (`MLX5_IB_INVALID_BFREG`
/// for a QP that named its UAR page), `ece_options`, no `comp_mask` sections (TIR/TIS/RQ/SQ
/// numbers are raw packet and RSS QPs').
pub(crate) fn create_qp_resp(bfreg_index: u32, ece_options: u32) -> [u8; CREATE_QP_RESP_LEN] {
    CreateQpResp {
        bfreg_index,
        ece_options,
        ..Default::default()
    }
    .to_bytes()
}

// ---- ALLOC_MW ----

/// upstream `mlx5_ib_alloc_mw()`'s request: no driver data is a request of zeros; otherwise
/// `ib_copy_validate_udata_in_cm(udata, req, reserved2, 0)` (`EINVAL` below 8 bytes,
/// `EOPNOTSUPP` for non-zero bytes past them or any `comp_mask` bit), then non-zero reserved
/// members `EOPNOTSUPP`. Returns the descriptors the window's mkey gets
/// (`translations_octword_size`): `num_klms` (at least 1) rounded up to 4.
pub(crate) fn parse_alloc_mw(input: &[u8]) -> Result<u32> {
    let req = if input.is_empty() {
        AllocMw::default()
    } else {
        copy_validate::<AllocMw>(input, AllocMw::SIZE)?
    };
    if req.comp_mask != 0 || req.reserved1 != 0 || req.reserved2 != 0 {
        return Err(AbiError::NotSupp);
    }
    Ok(u32::from(req.num_klms.max(1)).next_multiple_of(4))
}

/// upstream `mlx5_ib_alloc_mw()`'s response, `struct { __u32 comp_mask; __u32
/// response_length; }` with `response_length = min(8, outlen)`: the bytes to copy (none when
/// the library asked for no driver response, as libmlx5 44 does).
pub(crate) fn alloc_mw_resp(outlen: usize) -> ([u8; 8], usize) {
    let n = outlen.min(8);
    let mut b = [0u8; 8];
    b[4..].copy_from_slice(&(n as u32).to_ne_bytes());
    (b, n)
}

// ---- UAR objects (MLX5_IB_OBJECT_UAR) ----

/// `MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF`.
pub(crate) const UAR_ALLOC_TYPE_BF: u32 = 0;
/// `MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC`.
pub(crate) const UAR_ALLOC_TYPE_NC: u32 = 1;

/// upstream `MLX5_IB_METHOD_UAR_OBJ_ALLOC`'s type check: unknown types `EOPNOTSUPP`, and a
/// blue-flame (write-combining) page `EOPNOTSUPP` unless write-combining works. Returns
/// whether the page is mapped write-combining.
///
/// # Errors
///
/// `AbiError::NotSupp` for an unknown allocation type.
pub(crate) fn uar_alloc_type(alloc_type: u32, wc_supported: bool) -> Result<bool> {
    match alloc_type {
        UAR_ALLOC_TYPE_BF if wc_supported => Ok(true),
        UAR_ALLOC_TYPE_NC => Ok(false),
        _ => Err(AbiError::NotSupp),
    }
}

/// `MLX5_IB_MMAP_CMD_SHIFT`.
const MMAP_CMD_SHIFT: u32 = 8;

/// upstream `mlx5_entry_to_mmap_offset()`: the mmap offset user space passes for an entry
/// whose page offset (`rdma_user_mmap_entry.start_pgoff`, in `[MLX5_IB_MMAP_OFFSET_START << 16,
/// (MLX5_IB_MMAP_OFFSET_END << 16) + 0xffff]`) is `start_pgoff`: the command in bits 8..15 and
/// the index split around it, in bytes.
pub(crate) fn mmap_offset(start_pgoff: u64, page_shift: u32) -> u64 {
    let cmd = (start_pgoff >> 16) & 0xffff;
    let index = start_pgoff & 0xffff;
    (((index >> 8) << 16) | (cmd << MMAP_CMD_SHIFT) | (index & 0xff)) << page_shift
}

/// `MLX5_IB_MMAP_OFFSET_START`: the first command number of entry-based mappings.
pub(crate) const MMAP_OFFSET_START: u64 = 9;
/// `MLX5_IB_MMAP_OFFSET_END`.
pub(crate) const MMAP_OFFSET_END: u64 = 255;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_mw_request_as_upstream() {
        assert_eq!(parse_alloc_mw(&[]), Ok(4));
        let mut b = [0u8; 8];
        assert_eq!(parse_alloc_mw(&b), Ok(4));
        b[4] = 5;
        assert_eq!(parse_alloc_mw(&b), Ok(8));
        assert_eq!(parse_alloc_mw(&b[..7]), Err(AbiError::Inval));
        b[0] = 1;
        assert_eq!(parse_alloc_mw(&b), Err(AbiError::NotSupp));
        b[0] = 0;
        b[5] = 1;
        assert_eq!(parse_alloc_mw(&b), Err(AbiError::NotSupp));
        b[5] = 0;
        let mut long = [0u8; 12];
        long[..8].copy_from_slice(&b);
        assert_eq!(parse_alloc_mw(&long), Ok(8));
        long[11] = 1;
        assert_eq!(parse_alloc_mw(&long), Err(AbiError::NotSupp));
        assert_eq!(alloc_mw_resp(0).1, 0);
        let (r, n) = alloc_mw_resp(64);
        assert_eq!((n, &r[4..]), (8, &8u32.to_ne_bytes()[..]));
    }

    fn cq_req(f: impl FnOnce(&mut [u8; 32])) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&0x1000u64.to_ne_bytes());
        b[8..16].copy_from_slice(&0x2000u64.to_ne_bytes());
        b[16..20].copy_from_slice(&64u32.to_ne_bytes());
        b[22..24].copy_from_slice(&CQ_FLAGS_UAR_PAGE_INDEX.to_ne_bytes());
        b[24..26].copy_from_slice(&5u16.to_ne_bytes());
        f(&mut b);
        b
    }

    #[test]
    fn create_cq_lengths() {
        let b = cq_req(|_| {});
        assert_eq!(parse_create_cq(&b[..21]), Err(AbiError::Inval));
        let r = parse_create_cq(&b[..22]).unwrap();
        // 22 bytes end before flags: they read as zero.
        assert_eq!(r.flags, 0);
        let r = parse_create_cq(&b).unwrap();
        assert_eq!(r.buf_addr, 0x1000);
        assert_eq!(r.db_addr, 0x2000);
        assert_eq!(r.cqe_size, 64);
        assert_eq!(r.flags, CQ_FLAGS_UAR_PAGE_INDEX);
        assert_eq!(r.uar_page_index, 5);
        // Longer requests: zero tail accepted, non-zero tail EOPNOTSUPP.
        let mut long = [0u8; 40];
        long[..32].copy_from_slice(&b);
        assert!(parse_create_cq(&long).is_ok());
        long[39] = 1;
        assert_eq!(parse_create_cq(&long), Err(AbiError::NotSupp));
    }

    #[test]
    fn resize_cq_request() {
        let mut b = [0u8; 24];
        b[0..8].copy_from_slice(&0x7000u64.to_ne_bytes());
        b[8..10].copy_from_slice(&64u16.to_ne_bytes());
        assert_eq!(parse_resize_cq(&b[..15]), Err(AbiError::Inval));
        let r = parse_resize_cq(&b[..16]).unwrap();
        assert_eq!((r.buf_addr, r.cqe_size), (0x7000, 64));
        // A zero tail is accepted, a non-zero one is EOPNOTSUPP.
        assert!(parse_resize_cq(&b).is_ok());
        b[20] = 1;
        assert_eq!(parse_resize_cq(&b), Err(AbiError::NotSupp));
        b[20] = 0;
        for (off, v) in [(10usize, 1u8), (12, 1), (15, 1)] {
            let mut c = b;
            c[off] = v;
            assert_eq!(parse_resize_cq(&c), Err(AbiError::Inval));
        }
        for size in [0u16, 32, 96, 256] {
            let mut c = b;
            c[8..10].copy_from_slice(&size.to_ne_bytes());
            assert_eq!(parse_resize_cq(&c), Err(AbiError::Inval));
        }
        b[8..10].copy_from_slice(&128u16.to_ne_bytes());
        assert_eq!(parse_resize_cq(&b).unwrap().cqe_size, 128);
    }

    #[test]
    fn create_cq_fields() {
        let bad_flag = cq_req(|b| b[22..24].copy_from_slice(&(1u16 << 3).to_ne_bytes()));
        assert_eq!(parse_create_cq(&bad_flag), Err(AbiError::Inval));
        for size in [0u32, 32, 96, 256] {
            let b = cq_req(|b| b[16..20].copy_from_slice(&size.to_ne_bytes()));
            assert_eq!(parse_create_cq(&b), Err(AbiError::Inval));
        }
        let b = cq_req(|b| b[16..20].copy_from_slice(&128u32.to_ne_bytes()));
        assert_eq!(parse_create_cq(&b).unwrap().cqe_size, 128);
        let b = cq_req(|b| b[27] = 1);
        assert_eq!(parse_create_cq(&b), Err(AbiError::Inval));
        let b = cq_req(|b| b[31] = 1);
        assert_eq!(parse_create_cq(&b), Err(AbiError::Inval));
    }

    #[test]
    fn user_cq_params_rules() {
        let caps = CqCaps::default();
        let r = parse_create_cq(&cq_req(|_| {})).unwrap();
        let p = user_cq_params(&r, &caps).unwrap();
        assert_eq!(p.uar_index, 5);
        assert_eq!(p.stride, CqeStride::B64);
        assert_eq!(p.mini_cqe_format, None);
        // Dynamic UARs without the page index flag: EINVAL.
        let r = parse_create_cq(&cq_req(|b| b[22..24].fill(0))).unwrap();
        assert_eq!(user_cq_params(&r, &caps), Err(AbiError::Inval));
        // Compression: not on this device -> EOPNOTSUPP; with the cap, formats.
        let r = parse_create_cq(&cq_req(|b| {
            b[20] = 1;
            b[21] = 1;
        }))
        .unwrap();
        assert_eq!(user_cq_params(&r, &caps), Err(AbiError::NotSupp));
        let comp = CqCaps {
            cqe_compression: true,
            ..caps
        };
        assert_eq!(user_cq_params(&r, &comp).unwrap().mini_cqe_format, Some(0));
        let r4 = CreateCqReq {
            cqe_comp_res_format: 4,
            ..r
        };
        assert_eq!(user_cq_params(&r4, &comp), Err(AbiError::NotSupp));
        let r3 = CreateCqReq {
            cqe_comp_res_format: 3,
            ..r
        };
        assert_eq!(user_cq_params(&r3, &comp), Err(AbiError::Inval));
        // cqe_comp_en other than 1 is ignored (upstream tests `== 1`).
        let r2 = CreateCqReq {
            cqe_comp_en: 2,
            ..r
        };
        assert!(user_cq_params(&r2, &caps).is_ok());
        // 128-byte padding.
        let pad = parse_create_cq(&cq_req(|b| {
            b[16..20].copy_from_slice(&128u32.to_ne_bytes());
            b[22..24]
                .copy_from_slice(&(CQ_FLAGS_UAR_PAGE_INDEX | CQ_FLAGS_CQE_128B_PAD).to_ne_bytes());
        }))
        .unwrap();
        assert_eq!(user_cq_params(&pad, &caps), Err(AbiError::NotSupp));
        let always = CqCaps {
            cqe_128_always: true,
            ..caps
        };
        assert_eq!(
            user_cq_params(&pad, &always).unwrap().stride,
            CqeStride::B128Pad
        );
        assert_eq!(create_cq_resp(0x41), {
            let mut e = [0u8; 8];
            e[..4].copy_from_slice(&0x41u32.to_ne_bytes());
            e
        });
    }

    fn qp_req(f: impl FnOnce(&mut [u8; 56])) -> [u8; 56] {
        let mut b = [0u8; 56];
        b[16..20].copy_from_slice(&64u32.to_ne_bytes()); // sq_wqe_count
        b[20..24].copy_from_slice(&16u32.to_ne_bytes()); // rq_wqe_count
        b[24..28].copy_from_slice(&5u32.to_ne_bytes()); // rq_wqe_shift
        b[28..32].copy_from_slice(&qp_flag::UAR_PAGE_INDEX.to_ne_bytes());
        b[32..36].copy_from_slice(&7u32.to_ne_bytes()); // uidx
        b[36..40].copy_from_slice(&3u32.to_ne_bytes()); // page id
        f(&mut b);
        b
    }

    const CAPS: QpCaps = QpCaps {
        log_max_qp_sz: 15,
        max_wqe_sz_sq: 1024,
        sctr_data_cqe: false,
        qp_packet_based: false,
        dci_streams: false,
    };

    #[test]
    fn create_qp_lengths() {
        let b = qp_req(|_| {});
        assert_eq!(parse_create_qp(&b[..47]), Err(AbiError::Inval));
        let r = parse_create_qp(&b[..48]).unwrap();
        assert_eq!(r.ece_options, 0);
        assert_eq!(r.sq_wqe_count, 64);
        let r = parse_create_qp(&b).unwrap();
        assert_eq!(r.bfreg_index, 3);
        // reserved (54..56) and anything beyond must be zero: EINVAL (check_ucmd_data()).
        let b2 = qp_req(|b| b[55] = 1);
        assert_eq!(parse_create_qp(&b2), Err(AbiError::Inval));
        let mut long = [0u8; 64];
        long[..56].copy_from_slice(&b);
        assert!(parse_create_qp(&long).is_ok());
        long[60] = 1;
        assert_eq!(parse_create_qp(&long), Err(AbiError::Inval));
    }

    #[test]
    fn vendor_flags() {
        use qp_flag::*;
        let t = UserQpType::Rc;
        assert_eq!(
            qp_vendor_flags(UAR_PAGE_INDEX, t, &CAPS),
            Ok(UAR_PAGE_INDEX)
        );
        assert_eq!(
            qp_vendor_flags(UAR_PAGE_INDEX | SIGNATURE, t, &CAPS),
            Ok(UAR_PAGE_INDEX | SIGNATURE)
        );
        // Scatter-to-CQE without the cap: silently dropped.
        assert_eq!(
            qp_vendor_flags(UAR_PAGE_INDEX | SCATTER_CQE | ALLOW_SCATTER_CQE, t, &CAPS),
            Ok(UAR_PAGE_INDEX)
        );
        assert_eq!(qp_vendor_flags(1 << 2, t, &CAPS), Err(AbiError::Inval));
        // DC: the type flag of a DCI or DCT is taken, on another QP type refused.
        assert_eq!(dc_type(TYPE_DCI), Ok(UserQpType::Dci));
        assert_eq!(dc_type(TYPE_DCT | UAR_PAGE_INDEX), Ok(UserQpType::Dct));
        assert_eq!(dc_type(TYPE_DCT | TYPE_DCI), Err(AbiError::Inval));
        assert_eq!(dc_type(UAR_PAGE_INDEX), Err(AbiError::Inval));
        assert_eq!(
            qp_vendor_flags(TYPE_DCI | UAR_PAGE_INDEX, UserQpType::Dci, &CAPS),
            Ok(TYPE_DCI | UAR_PAGE_INDEX)
        );
        assert_eq!(
            qp_vendor_flags(TYPE_DCT, UserQpType::Dci, &CAPS),
            Err(AbiError::NotSupp)
        );
        assert_eq!(qp_vendor_flags(TYPE_DCI, t, &CAPS), Err(AbiError::NotSupp));
        assert_eq!(
            qp_vendor_flags(PACKET_BASED_CREDIT_MODE, t, &CAPS),
            Err(AbiError::Inval)
        );
        let pb = QpCaps {
            qp_packet_based: true,
            ..CAPS
        };
        assert_eq!(
            qp_vendor_flags(PACKET_BASED_CREDIT_MODE, t, &pb),
            Ok(PACKET_BASED_CREDIT_MODE)
        );
        assert_eq!(
            qp_vendor_flags(PACKET_BASED_CREDIT_MODE, UserQpType::Ud, &pb),
            Err(AbiError::Inval)
        );
        assert_eq!(
            qp_vendor_flags(PACKET_BASED_CREDIT_MODE, UserQpType::Uc, &pb),
            Err(AbiError::Inval)
        );
        // upstream process_vendor_flags(): packet-based credits are an RC flag only, an XRC
        // initiator's too is EINVAL.
        assert_eq!(
            qp_vendor_flags(PACKET_BASED_CREDIT_MODE, UserQpType::XrcIni, &pb),
            Err(AbiError::Inval)
        );
        assert_eq!(
            qp_vendor_flags(SIGNATURE, UserQpType::XrcIni, &pb),
            Ok(SIGNATURE)
        );
        assert_eq!(qp_vendor_flags(DCI_STREAM, t, &CAPS), Err(AbiError::Inval));
        assert_eq!(qp_vendor_flags(TYPE_DCI, t, &CAPS), Err(AbiError::NotSupp));
        assert_eq!(qp_vendor_flags(1 << 20, t, &CAPS), Err(AbiError::Inval));
    }

    #[test]
    fn user_index() {
        assert_eq!(qp_user_index(0, DEFAULT_UIDX), Ok(DEFAULT_UIDX));
        assert_eq!(qp_user_index(0, 5), Err(AbiError::Inval));
        assert_eq!(qp_user_index(1, 5), Ok(5));
        assert_eq!(qp_user_index(1, DEFAULT_UIDX), Err(AbiError::Inval));
        assert_eq!(qp_user_index(1, 1 << 24), Err(AbiError::Inval));
    }

    #[test]
    fn qp_layout() {
        let r = parse_create_qp(&qp_req(|_| {})).unwrap();
        let en = qp_vendor_flags(r.flags, UserQpType::Rc, &CAPS).unwrap();
        let l = user_qp_layout(&r, en, true, 16, &CAPS).unwrap();
        assert_eq!(l.sq_offset, 16 << 5);
        assert_eq!(l.buf_size, (16 << 5) + (64 << 6));
        assert_eq!(l.uar_index, 3);
        // A QP without RQ must send 0/0.
        assert_eq!(
            user_qp_layout(&r, en, false, 0, &CAPS),
            Err(AbiError::Inval)
        );
        let norq = CreateQpReq {
            rq_wqe_count: 0,
            rq_wqe_shift: 0,
            ..r
        };
        let l = user_qp_layout(&norq, en, false, 0, &CAPS).unwrap();
        assert_eq!((l.sq_offset, l.buf_size), (0, 64 << 6));
        // Limits.
        assert_eq!(
            user_qp_layout(&r, en, true, 1 << 16, &CAPS),
            Err(AbiError::Inval)
        );
        let big = CreateQpReq {
            sq_wqe_count: 1 << 16,
            ..r
        };
        assert_eq!(
            user_qp_layout(&big, en, true, 16, &CAPS),
            Err(AbiError::Inval)
        );
        let npot = CreateQpReq {
            sq_wqe_count: 48,
            ..r
        };
        assert_eq!(
            user_qp_layout(&npot, en, true, 16, &CAPS),
            Err(AbiError::Inval)
        );
        let shift = CreateQpReq {
            rq_wqe_shift: 31,
            ..r
        };
        assert_eq!(
            user_qp_layout(&shift, en, true, 16, &CAPS),
            Err(AbiError::Inval)
        );
        // Signature needs a 16-byte stride at least.
        let tiny = CreateQpReq {
            rq_wqe_shift: 3,
            ..r
        };
        assert_eq!(
            user_qp_layout(&tiny, en | qp_flag::SIGNATURE, true, 16, &CAPS),
            Err(AbiError::Inval)
        );
        assert!(user_qp_layout(&tiny, en, true, 16, &CAPS).is_ok());
        // UAR choice: only the page index works with dynamic UARs.
        assert_eq!(user_qp_layout(&r, 0, true, 16, &CAPS), Err(AbiError::Inval));
        assert_eq!(
            user_qp_layout(&r, qp_flag::BFREG_INDEX, true, 16, &CAPS),
            Err(AbiError::Inval)
        );
        assert_eq!(
            user_qp_layout(
                &r,
                qp_flag::BFREG_INDEX | qp_flag::UAR_PAGE_INDEX,
                true,
                16,
                &CAPS
            ),
            Err(AbiError::Inval)
        );
        // Overflow of the RQ bytes.
        let huge = CreateQpReq {
            rq_wqe_count: 1 << 15,
            rq_wqe_shift: 20,
            ..r
        };
        assert_eq!(
            user_qp_layout(&huge, en, true, 16, &CAPS),
            Err(AbiError::Inval)
        );
    }

    #[test]
    fn timestamp_formats() {
        // Free running only (cap 0, also the value of an IB function): real time refused.
        assert_eq!(qp_ts_format(0, false, false), Ok(0));
        assert_eq!(qp_ts_format(0, true, false), Err(AbiError::NotSupp));
        // Real time only: the default format, or real time on both CQs.
        assert_eq!(qp_ts_format(1, false, false), Ok(1));
        assert_eq!(qp_ts_format(1, true, false), Ok(2));
        assert_eq!(qp_ts_format(1, false, true), Ok(2));
        // Both: free running by default; a real-time CQ with a free-running one conflicts.
        assert_eq!(qp_ts_format(2, false, false), Ok(0));
        assert_eq!(qp_ts_format(2, true, true), Ok(2));
        assert_eq!(qp_ts_format(2, true, false), Err(AbiError::NotSupp));
    }

    #[test]
    fn responses_and_offsets() {
        let r = create_qp_resp(INVALID_BFREG, 0x1000_0000);
        assert_eq!(&r[..4], &(1u32 << 31).to_ne_bytes());
        assert_eq!(&r[4..8], &0x1000_0000u32.to_ne_bytes());
        assert!(r[8..].iter().all(|b| *b == 0));
        assert_eq!(alloc_pd_resp(9), 9u32.to_ne_bytes());
        assert_eq!(uar_alloc_type(UAR_ALLOC_TYPE_NC, false), Ok(false));
        assert_eq!(
            uar_alloc_type(UAR_ALLOC_TYPE_BF, false),
            Err(AbiError::NotSupp)
        );
        assert_eq!(uar_alloc_type(UAR_ALLOC_TYPE_BF, true), Ok(true));
        assert_eq!(uar_alloc_type(2, true), Err(AbiError::NotSupp));
        const { assert!(MMAP_OFFSET_START < MMAP_OFFSET_END) };
        // The first entry-based offset: command 9, index 0 -> 9 << 8 pages.
        assert_eq!(mmap_offset(MMAP_OFFSET_START << 16, 12), (9 << 8) << 12);
        // Index 0x1ff: high byte above the command, low byte below.
        assert_eq!(
            mmap_offset((MMAP_OFFSET_START << 16) | 0x1ff, 12),
            ((1 << 16) | (9 << 8) | 0xff) << 12
        );
    }
}
