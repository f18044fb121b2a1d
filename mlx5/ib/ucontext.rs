// SPDX-License-Identifier: GPL-2.0

//! The mlx5 user ABI of a user context and of `EX_QUERY_DEVICE` (upstream
//! `mlx5_ib_alloc_ucontext()`, `set_ucontext_resp()`, `mlx5_ib_dealloc_ucontext()` and the udata
//! part of `mlx5_ib_query_device()`, main.c; layouts from `include/uapi/rdma/mlx5-abi.h`).
//!
//! What libmlx5 (rdma-core 44, `mlx5_alloc_context()`) sends: `mlx5_ib_alloc_ucontext_req_v2`
//! with `lib_caps = 4K_UAR | DYN_UAR`, `max_cqe_version = 1`, first with the DEVX flag, then
//! without, each at three lengths (full, `offsetof(lib_caps)`, `offsetof(max_cqe_version)`).
//!
//! Deviations, each honest about what is missing rather than faking it:
//! * DEVX (`MLX5_IB_ALLOC_UCTX_DEVX`): CREATE_UCTX gives the context its uid (`EINVAL` when
//!   the function has no `log_max_uctx`, as upstream `mlx5_ib_devx_create()`), which the
//!   context's transport domain and PDs carry, and DEVX commands ([`crate::ib::devx`]); the UCTX
//!   is destroyed last at dealloc. Its `cap` is 0: `MLX5_UCTX_CAP_RAW_TX` needs a raw packet
//!   QP (none here) and `_INTERNAL_DEV_RES` `CAP_SYS_RAWIO` plus the whitelist uid (not done);
//!   no `ucaps` (`RDMA_UCAP_MLX5_CTRL_*`). UAR pages are allocated with uid 0 (upstream: the
//!   context's uid): a UAR can outlive its context (the last mapping goes after the close),
//!   and the UCTX cannot be destroyed while it owns one.
//! * Only dynamic UARs (`MLX5_LIB_CAP_DYN_UAR`, `tot_bfregs` 0): the legacy static UAR pages
//!   need `mmap`, which uverbs does not have yet; a request without `DYN_UAR` is `EOPNOTSUPP`.
//! * No core clock / clock info page (`MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET`,
//!   `clock_info_versions`): libmlx5 would `mmap` them.
//! * `bf_reg_size` 0: upstream reports it only when `mlx5_wc_support_get()` found
//!   write-combining to work, which needs a BAR; the simulator has none.
//! * No `dump_fill_mkey` (needs QUERY_SPECIAL_CONTEXTS) and no loopback enabling at
//!   transport-domain allocation (needs MODIFY_NIC_VPORT_CONTEXT).

use crate::attrs::GenCaps;
use crate::cmd::exec;
use crate::cmd::query::QueryNicVportContext;
use crate::cmd::res::{AllocTransportDomain, CreateUctx, DeallocTransportDomain, DestroyUctx};
use crate::ib::deferred::Deferred;
use crate::ib::device::Mlx5Ib;
use crate::ib::user_mem::DbPages;
use crate::prm::ctx::cmd_hca_cap;
use crate::uabi;
use ib_core_rs::attr::LinkLayer;
use ib_core_rs::device::Device;
use ib_core_rs::uverbs::driver_api::{
    AttrSpec, DriverCall, MethodSpec, ObjectSpec, PtrSpec, UA_MANDATORY,
};
use ib_core_rs::verbs::{Ucontext, UcontextPriv, Udata};
use kernel::prelude::*;
use kernel::sync::Arc;

/// `sizeof(struct mlx5_ib_alloc_ucontext_req)` (the v0 request).
const REQ_V0_LEN: usize = uabi::AllocUcontextReqV0::SIZE;
/// `offsetof(struct mlx5_ib_alloc_ucontext_req_v2, max_cqe_version)`: the shortest v2.
const REQ_V2_MIN_LEN: usize = core::mem::offset_of!(uabi::AllocUcontextReqV2, max_cqe_version);
/// `sizeof(struct mlx5_ib_alloc_ucontext_resp)`.
pub(crate) const UCONTEXT_RESP_LEN: usize = uabi::AllocUcontextResp::SIZE;

/// `MLX5_IB_ALLOC_UCTX_DEVX`.
const ALLOC_UCTX_DEVX: u32 = 1 << 0;
/// `MLX5_LIB_CAP_DYN_UAR`.
const LIB_CAP_DYN_UAR: u64 = 1 << 1;
/// `MLX5_NON_FP_BFREGS_PER_UAR`.
const NON_FP_BFREGS_PER_UAR: u32 = 2;
/// `MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE | MLX5_USER_CMDS_SUPP_UHW_CREATE_AH`.
const CMDS_SUPP_UHW: u8 = (1 << 0) | (1 << 1);
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE`.
const RESP_MASK_ECE: u32 = 1 << 2;
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_SQD2RTS`.
const RESP_MASK_SQD2RTS: u32 = 1 << 3;
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_MKEY_UPDATE_TAG`.
const RESP_MASK_MKEY_UPDATE_TAG: u32 = 1 << 5;
/// `MLX5_ADAPTER_PAGE_SHIFT`.
const ADAPTER_PAGE_SHIFT: u32 = 12;
/// `cache_line_size()` on x86-64 and arm64 (`L1_CACHE_BYTES`).
const CACHE_LINE_SIZE: u32 = 64;

/// The driver part of a user context (upstream `struct mlx5_ib_ucontext`, what is used).
pub(crate) struct Mlx5Ucontext {
    /// The transport domain (`context->tdn`), freed at dealloc.
    pub(crate) tdn: u32,
    /// `context->cqe_version`: CREATE_QP's user index rules.
    pub(crate) cqe_version: u8,
    /// `context->lib_caps` (always with `MLX5_LIB_CAP_DYN_UAR`).
    #[expect(
        dead_code,
        reason = "kept as upstream keeps it; no reader until DEVX/UAR flags"
    )]
    pub(crate) lib_caps: u64,
    /// The pinned doorbell pages of the context's CQs and QPs (`db_page_list`).
    pub(crate) db_pages: Arc<DbPages>,
    /// `context->devx_uid`: the firmware user context's uid, 0 without DEVX.
    pub(crate) devx_uid: u16,
}

/// upstream: v0 if `inlen == sizeof(req)`, v2 if at least `offsetof(max_cqe_version)`, else
/// `EINVAL`; `ib_copy_from_udata(&req, udata, min(inlen, sizeof(req)))` (the rest stays zero).
fn parse_req(input: &[u8]) -> Result<uabi::AllocUcontextReqV2> {
    if input.len() != REQ_V0_LEN && input.len() < REQ_V2_MIN_LEN {
        return Err(EINVAL);
    }
    Ok(uabi::AllocUcontextReqV2::from_bytes(input))
}

fn gen(dev: &Device<Mlx5Ib>) -> Result<GenCaps<'_>> {
    GenCaps::of(&*dev.data().hw)
}

fn pow2(log: u32) -> u32 {
    1u32.checked_shl(log).unwrap_or(0)
}

/// upstream `mlx5_ib_alloc_ucontext()`.
///
/// # Errors
///
/// `EINVAL` for a malformed request, `EOPNOTSUPP` for a version, flag or feature this driver
/// does not offer, `ENOMEM`, or the errno of ALLOC_TRANSPORT_DOMAIN / the UAR allocation
/// (`Mlx5Hw::exec`); everything allocated before is released then.
pub(crate) fn alloc_ucontext(dev: &Device<Mlx5Ib>, udata: &mut Udata<'_>) -> Result<UcontextPriv> {
    let d = dev.data();
    let mut req = parse_req(udata.input())?;
    if req.flags & !ALLOC_UCTX_DEVX != 0 {
        return Err(EOPNOTSUPP);
    }
    if req.comp_mask != 0 || req.reserved0 != 0 || req.reserved1 != 0 || req.reserved2 != 0 {
        return Err(EOPNOTSUPP);
    }
    // ALIGN(total_num_bfregs, MLX5_NON_FP_BFREGS_PER_UAR); the unsigned `total - 1` of
    // upstream (a total of 0 never refuses).
    req.total_num_bfregs = req
        .total_num_bfregs
        .checked_add(NON_FP_BFREGS_PER_UAR - 1)
        .ok_or(EINVAL)?
        & !(NON_FP_BFREGS_PER_UAR - 1);
    if req.num_low_latency_bfregs > req.total_num_bfregs.wrapping_sub(1) {
        return Err(EINVAL);
    }
    let caps = gen(dev)?;
    if req.lib_caps & LIB_CAP_DYN_UAR == 0 {
        return Err(EOPNOTSUPP);
    }
    let mut devx_uid = 0;
    if req.flags & ALLOC_UCTX_DEVX != 0 {
        // upstream mlx5_ib_devx_create(): "0 means not supported".
        if caps.get(cmd_hca_cap::log_max_uctx) == 0 {
            return Err(EINVAL);
        }
        devx_uid = exec(&*d.hw, &CreateUctx { cap: 0 })?;
    }
    let destroy_uctx = || {
        if devx_uid != 0 {
            let _ = exec(&*d.hw, &DestroyUctx { uid: devx_uid });
        }
    };

    // upstream mlx5_ib_alloc_transport_domain() with the context's uid.
    let tdn =
        exec(&*d.hw, &AllocTransportDomain { uid: devx_uid }).inspect_err(|_| destroy_uctx())?;
    let free_td = || {
        let _ = exec(
            &*d.hw,
            &DeallocTransportDomain {
                id: tdn,
                uid: devx_uid,
            },
        );
        destroy_uctx();
    };
    let cqe_version = (caps.get(cmd_hca_cap::cqe_version) as u8).min(req.max_cqe_version);
    let resp = ucontext_resp(dev, cqe_version, udata.outlen()).inspect_err(|_| free_td())?;
    let db_pages = DbPages::new().inspect_err(|_| free_td())?;
    udata.copy_to(&resp.to_bytes());
    KBox::new(
        Mlx5Ucontext {
            tdn,
            cqe_version,
            lib_caps: req.lib_caps,
            db_pages,
            devx_uid,
        },
        GFP_KERNEL,
    )
    .map(|b| Some(b as KBox<dyn core::any::Any + Send + Sync>))
    .inspect_err(|_| free_td())
    .map_err(Into::into)
}

/// upstream `set_ucontext_resp()` for a context with dynamic UARs.
fn ucontext_resp(
    dev: &Device<Mlx5Ib>,
    cqe_version: u8,
    outlen: usize,
) -> Result<uabi::AllocUcontextResp> {
    let d = dev.data();
    let c = gen(dev)?;
    let mut comp_mask = RESP_MASK_MKEY_UPDATE_TAG;
    if c.get(cmd_hca_cap::ece_support) != 0 {
        comp_mask |= RESP_MASK_ECE;
    }
    // drain_sigerr lives in cmd_hca_cap_2, which is not cached: SQD2RTS not offered.
    let _ = RESP_MASK_SQD2RTS;
    let eth_min_inline = if d.ports.first().map(|p| p.link_layer) == Some(LinkLayer::Ethernet) {
        // mlx5_query_min_inline(): the vport-context case (the ETH cap page that says which
        // case applies is not cached), then `+ 1` (MLX5_USER_INLINE_MODE_*).
        let v = exec(&*d.hw, &QueryNicVportContext)?;
        v.min_wqe_inline_mode.saturating_add(1)
    } else {
        0
    };
    let uar_4k = c.get(cmd_hca_cap::uar_4k) != 0;
    Ok(uabi::AllocUcontextResp {
        qp_tab_size: pow2(c.get(cmd_hca_cap::log_max_qp)),
        // No write-combining check (see the module doc).
        bf_reg_size: 0,
        // Dynamic UARs.
        tot_bfregs: 0,
        cache_line_size: CACHE_LINE_SIZE,
        max_sq_desc_sz: c.get(cmd_hca_cap::max_wqe_sz_sq) as u16,
        max_rq_desc_sz: c.get(cmd_hca_cap::max_wqe_sz_rq) as u16,
        max_send_wqebb: pow2(c.get(cmd_hca_cap::log_max_qp_sz)),
        max_recv_wr: pow2(c.get(cmd_hca_cap::log_max_qp_sz)),
        max_srq_recv_wr: pow2(c.get(cmd_hca_cap::log_max_srq_sz)),
        num_ports: u16::try_from(d.ports.len()).map_err(|_| EINVAL)?,
        comp_mask,
        response_length: outlen.min(UCONTEXT_RESP_LEN) as u32,
        cqe_version,
        cmds_supp_uhw: CMDS_SUPP_UHW,
        eth_min_inline,
        // clock_info_versions 0, hca_core_clock_offset 0: no clock pages (see the module doc).
        log_uar_size: if uar_4k {
            ADAPTER_PAGE_SHIFT
        } else {
            kernel::page::PAGE_SHIFT as u32
        },
        num_uars_per_page: if uar_4k {
            c.get(cmd_hca_cap::num_of_uars_per_page)
        } else {
            1
        },
        // None with lib_uar_dyn.
        num_dyn_bfregs: 0,
        ..Default::default()
    })
}

crate::ib::device::driver_ids! {
    /// `MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX` (mlx5_user_ioctl_cmds.h).
    ATTR_QUERY_CONTEXT_RESP_UCTX;
}
/// `UVERBS_OBJECT_DEVICE`, `UVERBS_METHOD_QUERY_CONTEXT` (ib_user_ioctl_cmds.h).
const OBJECT_DEVICE: u16 = 0;
const METHOD_QUERY_CONTEXT: u16 = 4;

/// upstream `ADD_UVERBS_ATTRIBUTES_SIMPLE(mlx5_ib_query_context, UVERBS_OBJECT_DEVICE,
/// UVERBS_METHOD_QUERY_CONTEXT, ..)`: the whole `mlx5_ib_alloc_ucontext_resp` (up to
/// `dump_fill_mkey`), mandatory.
const QUERY_CONTEXT_ATTRS: &[AttrSpec] = &[AttrSpec::ptr_out(
    ATTR_QUERY_CONTEXT_RESP_UCTX,
    PtrSpec::structure(UCONTEXT_RESP_LEN as u16, UCONTEXT_RESP_LEN as u16),
    UA_MANDATORY,
)];
const DEVICE_METHODS: &[MethodSpec] = &[MethodSpec::extend(
    METHOD_QUERY_CONTEXT,
    QUERY_CONTEXT_ATTRS,
)];
/// The attributes mlx5 adds to the core's DEVICE object (upstream `mlx5_ib_defs`'
/// `UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DEVICE, &mlx5_ib_query_context)`).
pub(crate) const DEVICE_OBJECT: ObjectSpec = ObjectSpec::extend(OBJECT_DEVICE, DEVICE_METHODS);

/// upstream `mlx5_ib_query_ucontext()`: the context's `alloc_ucontext` response again
/// (`set_ucontext_resp()`), `response_length` the smaller of the user's attribute and the
/// struct, copied with the rest of the user's buffer zeroed.
///
/// # Errors
///
/// `EINVAL` for a context without driver data or an attribute the user did not pass,
/// `EFAULT`; the errno of QUERY_NIC_VPORT_CONTEXT on an Ethernet port.
pub(crate) fn query_ucontext(
    ctx: &Ucontext<Mlx5Ib>,
    call: &mut DriverCall<'_, '_, Mlx5Ib>,
) -> Result {
    let u = mlx5_ctx(ctx)?;
    let len = call.len(ATTR_QUERY_CONTEXT_RESP_UCTX)?;
    let resp = ucontext_resp(ctx.device(), u.cqe_version, len)?;
    call.put_struct_or_zero(ATTR_QUERY_CONTEXT_RESP_UCTX, &resp.to_bytes())
}

/// upstream `mlx5_ib_dealloc_ucontext()`: the transport domain.
pub(crate) fn dealloc_ucontext(ctx: &Ucontext<Mlx5Ib>) {
    let d = ctx.device().data();
    if let Some(u) = ctx.data::<Mlx5Ucontext>() {
        // A refusal cannot be handed back (dealloc cannot fail; exec logged it): retried
        // later (upstream drops it, leaving the domain in the device). The kernel (uid 0) may
        // free an object of any uid, so a retry does not need the UCTX.
        if exec(
            &*d.hw,
            &DeallocTransportDomain {
                id: u.tdn,
                uid: u.devx_uid,
            },
        )
        .is_err()
        {
            d.deferred_deallocs.defer(Deferred::Td(u.tdn));
        }
        // upstream: mlx5_ib_devx_destroy() last. Every object of the context is gone by now
        // (uverbs destroyed them before the context); a refusal (an injected fault, or the
        // transport domain above was refused) is retried like the domain (upstream ignores
        // it).
        if u.devx_uid != 0 && exec(&*d.hw, &DestroyUctx { uid: u.devx_uid }).is_err() {
            d.deferred_deallocs.defer(Deferred::Uctx(u.devx_uid));
        }
    }
    // What the device refused before (a UAR page of this context whose last unmap came
    // before its close, say) may go now.
    d.deferred_deallocs.retry();
}

/// The udata part of upstream `mlx5_ib_query_device()`: `EINVAL` for a response shorter
/// than `comp_mask` + `response_length` or a request with non-zero bytes
/// (`ib_is_udata_in_empty()`); each section counted in `response_length` when the user's
/// buffer holds it. Sections computed from capability pages that are not cached (ETH
/// offloads: TSO, RSS, multi-packet WQEs, SW parsing, tunnels; QoS: packet pacing; the
/// e-switch `reg_c0`) are zero, as upstream reports for a device without those capabilities.
///
/// # Errors
///
/// `EINVAL` for a malformed request (short, non-zero comp_mask or reserved bytes), `EIO`
/// without a capability page.
pub(crate) fn query_device_udata(dev: &Device<Mlx5Ib>, udata: &mut Udata<'_>) -> Result {
    let outlen = udata.outlen();
    if outlen == 0 {
        return Ok(());
    }
    if outlen < 8 {
        return Err(EINVAL);
    }
    if udata.input().iter().any(|b| *b != 0) {
        return Err(EINVAL);
    }
    let c = gen(dev)?;
    let mut r = uabi::QueryDeviceResp::default();
    // upstream field_avail(): the user's buffer holds the member; then it counts in
    // response_length.
    macro_rules! avail {
        ($f:ident) => {
            core::mem::offset_of!(uabi::QueryDeviceResp, $f) + core::mem::size_of_val(&r.$f)
                <= outlen
        };
    }
    let mut len = 0usize;
    macro_rules! count {
        ($($f:ident),*) => {$(
            if avail!($f) {
                len += core::mem::size_of_val(&r.$f);
            }
        )*};
    }
    // eth_net_offloads absent reads as upstream's else branch: tso_caps and rss_caps
    // counted, zero.
    count!(comp_mask, response_length, tso_caps, rss_caps);
    if avail!(cqe_comp_caps) && c.get(cmd_hca_cap::cqe_compression) != 0 {
        r.cqe_comp_caps.max_num = c.get(cmd_hca_cap::cqe_compression_max_num);
        let mut fmt = 1 | 2; // MLX5_IB_CQE_RES_FORMAT_HASH | _CSUM
        if c.get(cmd_hca_cap::mini_cqe_resp_stride_index) != 0 {
            fmt |= 4;
        }
        r.cqe_comp_caps.supported_format = fmt;
    }
    count!(
        cqe_comp_caps,
        packet_pacing_caps,
        mlx5_ib_support_multi_pkt_send_wqes
    );
    if avail!(flags) {
        let mut flags = 1 << 3; // MLX5_IB_QUERY_DEV_RESP_FLAGS_SCAT2CQE_DCT
        if c.get(cmd_hca_cap::cqe_compression_128) != 0 {
            flags |= 1 << 0;
        }
        if c.get(cmd_hca_cap::cqe_128_always) != 0 {
            flags |= 1 << 1;
        }
        if c.get(cmd_hca_cap::qp_packet_based) != 0 {
            flags |= 1 << 2;
        }
        r.flags = flags;
    }
    // striding_rq_caps: raw_support, no multi-port.
    count!(
        flags,
        sw_parsing_caps,
        striding_rq_caps,
        tunnel_offloads_caps,
        dci_streams_caps,
        reserved,
        reg_c0
    );
    let len = len as u32;
    r.response_length = len;
    udata.copy_to(&r.to_bytes());
    Ok(())
}

pub(crate) fn mlx5_ctx(ctx: &Ucontext<Mlx5Ib>) -> Result<&Mlx5Ucontext> {
    ctx.data::<Mlx5Ucontext>().ok_or(EINVAL)
}

/// The errno of a malformed request.
pub(crate) fn abi_err(e: uabi::AbiError) -> Error {
    match e {
        uabi::AbiError::Inval => EINVAL,
        uabi::AbiError::NotSupp => EOPNOTSUPP,
    }
}

#[kunit_tests(mlx5_ib_rs_ucontext)]
mod tests {
    use super::*;

    #[test]
    fn request_lengths() -> Result {
        assert_eq!(parse_req(&[0; 4]), Err(EINVAL));
        assert_eq!(parse_req(&[0; 12]), Err(EINVAL));
        assert!(parse_req(&[0; 8]).is_ok());
        assert!(parse_req(&[0; 16]).is_ok());
        assert!(parse_req(&[0; 64]).is_ok());
        let mut b = [0u8; 32];
        b[16] = 1;
        b[24] = 3;
        let r = parse_req(&b)?;
        assert_eq!(r.max_cqe_version, 1);
        assert_eq!(r.lib_caps, 3);
        // The shorter lengths libmlx5 retries with leave lib_caps / max_cqe_version zero.
        let r = parse_req(&b[..24])?;
        assert_eq!(r.lib_caps, 0);
        assert_eq!(r.max_cqe_version, 1);
        Ok(())
    }
}
