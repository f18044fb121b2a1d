// SPDX-License-Identifier: GPL-2.0

//! Resource tracking: `RES_GET` (per-type counts) and the `RES_*_GET` dumps (`rdma res
//! show`: one message per device with a table of entries from restrack; upstream
//! `res_get_common_dumpit()` and the `fill_res_*_entry()` functions).

use super::request::{fill_handle, get_u32, parse, req_device, DeviceReply};
use crate::cma::sockaddr::SIZE_KSS;
use crate::cma::CmIdRes;
use crate::ib_device::DeviceCore;
use crate::ib_device::IbDevice;
use crate::netlink::codec::MsgWriter;
use crate::netlink::codec::NLM_F_MULTI;
use crate::netlink::nldev_uapi::*;
use crate::netlink::DumpCursor;
use crate::netlink::Request;
use crate::restrack::Owner;
use crate::restrack::ResDetails;
use crate::restrack::ResInfo;
use crate::restrack::ResType;
use kernel::prelude::*;

/// upstream `fill_res_info()`: every restrack type with its count and the device's limit.
///
/// # Errors
///
/// `EMSGSIZE` when the message is full.
pub(crate) fn fill_res_info(wr: &mut MsgWriter<'_>, dev: &dyn IbDevice) -> Result {
    let core = dev.core();
    let attrs = core.attrs();
    let rt = core.restrack();
    let cm_ids = crate::cma::res_of_device(core.index())?.len();
    fill_handle(wr, core)?;
    let table = wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_SUMMARY)?;
    // upstream's order (enum rdma_restrack_type) and names.
    let rows: [(&[u8], u64, u64); 7] = [
        (b"pd", rt.count(ResType::Pd) as u64, u64::from(attrs.max_pd)),
        (b"cq", rt.count(ResType::Cq) as u64, u64::from(attrs.max_cq)),
        (b"qp", rt.count(ResType::Qp) as u64, u64::from(attrs.max_qp)),
        (b"cm_id", cm_ids as u64, 0),
        (b"mr", rt.count(ResType::Mr) as u64, u64::from(attrs.max_mr)),
        (b"ctx", rt.count(ResType::Ctx) as u64, 0),
        (b"srq", rt.count(ResType::Srq) as u64, 0),
    ];
    for (name, curr, max) in rows {
        let e = wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY)?;
        wr.put_str(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, name)?;
        wr.put_u64(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, curr)?;
        if max != 0 {
            wr.put_u64(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_MAX, max)?;
        }
        wr.nest_end(e)?;
    }
    Ok(wr.nest_end(table)?)
}

/// `RES_GET` (upstream `nldev_res_get_doit()`, `nldev_res_get_dumpit()`).
pub(super) struct ResSummary;

impl DeviceReply for ResSummary {
    const CMD: u16 = RDMA_NLDEV_CMD_RES_GET;
    const FILL: fn(&mut MsgWriter<'_>, &dyn IbDevice) -> Result = fill_res_info;
}

/// upstream `fill_res_name_pid()`.
pub(super) fn fill_owner(wr: &mut MsgWriter<'_>, owner: &Owner) -> Result {
    match owner {
        Owner::Kernel(m) => Ok(wr.put_str(RDMA_NLDEV_ATTR_RES_KERN_NAME, m.to_bytes())?),
        Owner::User { pid, .. } if *pid > 0 => {
            Ok(wr.put_u32(RDMA_NLDEV_ATTR_RES_PID, *pid as u32)?)
        }
        Owner::User { .. } => Ok(()),
    }
}

/// upstream `!rdma_is_kernel_res()`: a resource created for a user process.
fn is_user(e: &ResInfo) -> bool {
    matches!(e.owner, Owner::User { .. })
}

/// The context number of a user PD or CQ (upstream: `RES_CTXN` only when not a kernel
/// resource).
fn fill_ctxn(wr: &mut MsgWriter<'_>, e: &ResInfo) -> Result {
    match e.links.ctxn {
        Some(n) if is_user(e) => Ok(wr.put_u32(RDMA_NLDEV_ATTR_RES_CTXN, n)?),
        _ => Ok(()),
    }
}

/// The PD number of a user QP or MR (upstream: `RES_PDN` only when not a kernel resource).
fn fill_pdn(wr: &mut MsgWriter<'_>, e: &ResInfo) -> Result {
    match e.links.pdn {
        Some(n) if is_user(e) => Ok(wr.put_u32(RDMA_NLDEV_ATTR_RES_PDN, n)?),
        _ => Ok(()),
    }
}

/// One restrack type's dump: the table attribute, the entry attribute and the entry filler
/// (upstream `fill_entries[]` and `fill_res_*_entry()`).
struct ResKind {
    kind: ResType,
    table: u16,
    entry: u16,
    fill: ResFill,
}

/// An entry filler of [`ResKind`].
type ResFill = fn(&mut MsgWriter<'_>, &ResInfo, bool) -> Result;

impl ResKind {
    const fn new(kind: ResType, table: u16, entry: u16, fill: ResFill) -> Self {
        Self {
            kind,
            table,
            entry,
            fill,
        }
    }
}

/// upstream `fill_res_pd_entry()`.
fn fill_pd(wr: &mut MsgWriter<'_>, e: &ResInfo, admin: bool) -> Result {
    if admin {
        // No device-wide local DMA lkey (upstream `pd->local_dma_lkey`) yet: 0.
        wr.put_u32(RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY, 0)?;
    }
    wr.put_u64(RDMA_NLDEV_ATTR_RES_USECNT, e.usecnt.max(0) as u64)?;
    wr.put_u32(RDMA_NLDEV_ATTR_RES_PDN, e.id)?;
    fill_ctxn(wr, e)?;
    fill_owner(wr, &e.owner)
}

/// upstream `fill_res_cq_entry()`.
fn fill_cq(wr: &mut MsgWriter<'_>, e: &ResInfo, _admin: bool) -> Result {
    // The current number of entries (`num`: a resize changes it).
    wr.put_u32(RDMA_NLDEV_ATTR_RES_CQE, e.num)?;
    wr.put_u64(RDMA_NLDEV_ATTR_RES_USECNT, e.usecnt.max(0) as u64)?;
    if matches!(e.owner, Owner::Kernel(_)) {
        // ib_create_cq() leaves poll_ctx 0 (IB_POLL_SOFTIRQ).
        wr.put_u8(RDMA_NLDEV_ATTR_RES_POLL_CTX, 0)?;
    }
    wr.put_u8(RDMA_NLDEV_ATTR_DEV_DIM, 0)?;
    wr.put_u32(RDMA_NLDEV_ATTR_RES_CQN, e.id)?;
    fill_ctxn(wr, e)?;
    fill_owner(wr, &e.owner)
}

/// upstream `fill_res_qp_entry()` + `fill_res_qp_entry_query()`: the port, state, PSNs and
/// destination QP number from the last successful modifies that set them instead of a driver
/// query.
fn fill_qp(wr: &mut MsgWriter<'_>, e: &ResInfo, _admin: bool) -> Result {
    let qp_type = match e.details {
        ResDetails::Qp { qp_type, .. } => qp_type,
        _ => 0,
    };
    if e.qp_port != 0 {
        wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, e.qp_port)?;
    }
    wr.put_u32(RDMA_NLDEV_ATTR_RES_LQPN, e.num)?;
    fill_pdn(wr, e)?;
    fill_owner(wr, &e.owner)?;
    // RC/UC: RQPN and RQ_PSN, as upstream's query.
    if qp_type == 2 || qp_type == 3 {
        wr.put_u32(RDMA_NLDEV_ATTR_RES_RQPN, e.dest_qpn)?;
        wr.put_u32(RDMA_NLDEV_ATTR_RES_RQ_PSN, e.rq_psn)?;
    }
    wr.put_u32(RDMA_NLDEV_ATTR_RES_SQ_PSN, e.sq_psn)?;
    if qp_type == 2 || qp_type == 3 {
        // IB_MIG_MIGRATED.
        wr.put_u8(RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, 0)?;
    }
    wr.put_u8(RDMA_NLDEV_ATTR_RES_TYPE, qp_type)?;
    Ok(wr.put_u8(RDMA_NLDEV_ATTR_RES_STATE, e.state)?)
}

/// upstream `fill_res_mr_entry()`: keys only for `CAP_NET_ADMIN`.
fn fill_mr(wr: &mut MsgWriter<'_>, e: &ResInfo, admin: bool) -> Result {
    if admin {
        wr.put_u32(RDMA_NLDEV_ATTR_RES_RKEY, e.rkey)?;
        wr.put_u32(RDMA_NLDEV_ATTR_RES_LKEY, e.num)?;
    }
    let length = match e.details {
        ResDetails::Mr { length } => length,
        _ => 0,
    };
    wr.put_u64(RDMA_NLDEV_ATTR_RES_MRLEN, length)?;
    wr.put_u32(RDMA_NLDEV_ATTR_RES_MRN, e.id)?;
    fill_pdn(wr, e)?;
    fill_owner(wr, &e.owner)
}

/// upstream `fill_res_ctx_entry()`: a user context's id and owner; a kernel one's entry is
/// empty.
fn fill_ctx(wr: &mut MsgWriter<'_>, e: &ResInfo, _admin: bool) -> Result {
    if !is_user(e) {
        return Ok(());
    }
    wr.put_u32(RDMA_NLDEV_ATTR_RES_CTXN, e.id)?;
    fill_owner(wr, &e.owner)
}

/// upstream `fill_res_range_qp_entry()`.
fn fill_qp_range(wr: &mut MsgWriter<'_>, min: u32, max: u32) -> Result {
    if min == 0 {
        return Ok(());
    }
    let ent = wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_QP_ENTRY)?;
    if min == max {
        wr.put_u32(RDMA_NLDEV_ATTR_RES_LQPN, min)?;
    } else {
        wr.put_u32(RDMA_NLDEV_ATTR_MIN_RANGE, min)?;
        wr.put_u32(RDMA_NLDEV_ATTR_MAX_RANGE, max)?;
    }
    Ok(wr.nest_end(ent)?)
}

/// upstream `fill_res_srq_entry()` with `fill_res_srq_qps()`: the SRQ's id, type and PD, then
/// its QPs as ranges of ascending QP numbers, then the owner. `qps` are the QP numbers that
/// receive from it, ascending.
fn fill_srq_with(wr: &mut MsgWriter<'_>, e: &ResInfo, qps: &[u32]) -> Result {
    let (srq_type, pdn) = match e.details {
        ResDetails::Srq { srq_type, pdn } => (srq_type, pdn),
        _ => (0, 0),
    };
    wr.put_u32(RDMA_NLDEV_ATTR_RES_SRQN, e.id)?;
    wr.put_u8(RDMA_NLDEV_ATTR_RES_TYPE, srq_type)?;
    wr.put_u32(RDMA_NLDEV_ATTR_RES_PDN, pdn)?;
    let table = wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_QP)?;
    let (mut min, mut prev) = (0u32, 0u32);
    for &n in qps {
        if min == 0 {
            min = n;
        } else if n > prev + 1 {
            fill_qp_range(wr, min, prev)?;
            min = n;
        }
        prev = n;
    }
    fill_qp_range(wr, min, prev)?;
    wr.nest_end(table)?;
    fill_owner(wr, &e.owner)
}

/// upstream `fill_entries[]`: the restrack types the generic dump serves, in one table.
const RES_KINDS: [ResKind; 5] = [
    ResKind::new(
        ResType::Ctx,
        RDMA_NLDEV_ATTR_RES_CTX,
        RDMA_NLDEV_ATTR_RES_CTX_ENTRY,
        fill_ctx,
    ),
    ResKind::new(
        ResType::Pd,
        RDMA_NLDEV_ATTR_RES_PD,
        RDMA_NLDEV_ATTR_RES_PD_ENTRY,
        fill_pd,
    ),
    ResKind::new(
        ResType::Cq,
        RDMA_NLDEV_ATTR_RES_CQ,
        RDMA_NLDEV_ATTR_RES_CQ_ENTRY,
        fill_cq,
    ),
    ResKind::new(
        ResType::Qp,
        RDMA_NLDEV_ATTR_RES_QP,
        RDMA_NLDEV_ATTR_RES_QP_ENTRY,
        fill_qp,
    ),
    ResKind::new(
        ResType::Mr,
        RDMA_NLDEV_ATTR_RES_MR,
        RDMA_NLDEV_ATTR_RES_MR_ENTRY,
        fill_mr,
    ),
];

/// Writes one message with the entries `snap[..max]` in table `table`, each an `entry` nest
/// that `fill` fills; returns how many were written.
#[allow(clippy::too_many_arguments)]
fn res_message<T>(
    wr: &mut MsgWriter<'_>,
    req_ty: u16,
    seq: u32,
    portid: u32,
    dev: &DeviceCore,
    (table, entry): (u16, u16),
    fill: fn(&mut MsgWriter<'_>, &T, bool) -> Result,
    snap: &[T],
    admin: bool,
    max: usize,
) -> core::result::Result<usize, usize> {
    let mut n = 0;
    let mut body = || -> Result {
        wr.begin(req_ty, NLM_F_MULTI, seq, portid)?;
        fill_handle(wr, dev)?;
        let t = wr.nest_start_noflag(table)?;
        for e in snap.iter().take(max) {
            let ent = wr.nest_start_noflag(entry)?;
            fill(wr, e, admin)?;
            wr.nest_end(ent)?;
            n += 1;
        }
        wr.nest_end(t)?;
        Ok(wr.end()?)
    };
    match body() {
        Ok(()) => Ok(n),
        Err(_) => {
            wr.cancel();
            Err(n)
        }
    }
}

/// One step of a dump of the entries `snap` from `start` on: as many as fit one message
/// ([`res_message`]); returns the index to resume from, or `None` when nothing was left.
#[allow(clippy::too_many_arguments)]
fn res_step<T>(
    wr: &mut MsgWriter<'_>,
    req_ty: u16,
    seq: u32,
    portid: u32,
    dev: &DeviceCore,
    attrs: (u16, u16),
    fill: fn(&mut MsgWriter<'_>, &T, bool) -> Result,
    snap: &[T],
    start: usize,
    admin: bool,
) -> Result<Option<usize>> {
    let rest = snap.get(start..).unwrap_or(&[]);
    if rest.is_empty() {
        return Ok(None);
    }
    let msg = |wr: &mut MsgWriter<'_>, max| {
        res_message(wr, req_ty, seq, portid, dev, attrs, fill, rest, admin, max)
    };
    let n = match msg(wr, rest.len()) {
        Ok(n) => n,
        // Not everything fits: as many entries as did (at least one, else the skb is too
        // small for anything).
        Err(0) => return Err(EMSGSIZE),
        Err(fit) => msg(wr, fit).map_err(|_| EMSGSIZE)?,
    };
    Ok(Some(start + n))
}

/// upstream `fill_res_cm_id_entry()`: the port and QP only when the id has them, the
/// addresses as whole `struct sockaddr_storage`s.
fn fill_cm_id(wr: &mut MsgWriter<'_>, e: &CmIdRes, _admin: bool) -> Result {
    if e.port != 0 {
        wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, e.port)?;
    }
    if e.qp_num != 0 {
        wr.put_u32(RDMA_NLDEV_ATTR_RES_LQPN, e.qp_num)?;
        wr.put_u8(RDMA_NLDEV_ATTR_RES_TYPE, e.qp_type)?;
    }
    wr.put_u32(RDMA_NLDEV_ATTR_RES_PS, e.ps)?;
    wr.put_u8(RDMA_NLDEV_ATTR_RES_STATE, e.state)?;
    for (attr, a) in [
        (RDMA_NLDEV_ATTR_RES_SRC_ADDR, &e.src),
        (RDMA_NLDEV_ATTR_RES_DST_ADDR, &e.dst),
    ] {
        if a.family() != 0 {
            let mut kss = [0u8; SIZE_KSS];
            let b = a.as_bytes();
            let n = b.len().min(SIZE_KSS);
            kss[..n].copy_from_slice(&b[..n]);
            wr.put(attr, &kss)?;
        }
    }
    wr.put_u32(RDMA_NLDEV_ATTR_RES_CM_IDN, e.idn)?;
    fill_owner(wr, &e.owner)
}

/// One step of `RES_CM_ID_GET`'s dump of `dev` (upstream `nldev_res_get_cm_id_dumpit()`).
///
/// # Errors
///
/// `EMSGSIZE` when not even one entry fits the message, `ENOMEM`.
fn cm_id_dump_step(
    wr: &mut MsgWriter<'_>,
    req_ty: u16,
    seq: u32,
    portid: u32,
    dev: &DeviceCore,
    port: Option<u32>,
    start: usize,
) -> Result<Option<usize>> {
    let mut snap = crate::cma::res_of_device(dev.index())?;
    // upstream fill_res_cm_id_entry(): a port asked for leaves out the ids of other ports
    // and those of none.
    if let Some(p) = port {
        snap.retain(|e| e.port == p);
    }
    res_step(
        wr,
        req_ty,
        seq,
        portid,
        dev,
        (RDMA_NLDEV_ATTR_RES_CM_ID, RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY),
        fill_cm_id,
        &snap,
        start,
        false,
    )
}

/// Builds one step of a `RES_*_GET` dump of `dev` (upstream `res_get_common_dumpit()`): a
/// message with the device handle and a table of the entries from `start` on; returns the
/// index to resume from, or `None` when there was nothing left (the dump ends).
///
/// # Errors
///
/// `EINVAL` for a restrack type nldev does not dump, `EMSGSIZE` when not even one entry fits
/// the message, `ENOMEM`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn res_dump_step(
    wr: &mut MsgWriter<'_>,
    req_ty: u16,
    seq: u32,
    portid: u32,
    dev: &DeviceCore,
    kind: ResType,
    start: usize,
    admin: bool,
) -> Result<Option<usize>> {
    if kind == ResType::Srq {
        return srq_dump_step(wr, req_ty, seq, portid, dev, start);
    }
    let rk = RES_KINDS.iter().find(|rk| rk.kind == kind).ok_or(EINVAL)?;
    let snap = dev.restrack().dump(rk.kind)?;
    res_step(
        wr,
        req_ty,
        seq,
        portid,
        dev,
        (rk.table, rk.entry),
        rk.fill,
        &snap,
        start,
        admin,
    )
}

/// [`res_dump_step`] for SRQs: one SRQ a message (each carries the QP numbers of its QPs,
/// read from the QP table).
fn srq_dump_step(
    wr: &mut MsgWriter<'_>,
    req_ty: u16,
    seq: u32,
    portid: u32,
    dev: &DeviceCore,
    start: usize,
) -> Result<Option<usize>> {
    let snap = dev.restrack().dump(ResType::Srq)?;
    let Some(e) = snap.get(start) else {
        return Ok(None);
    };
    let mut qps = KVec::new();
    for q in dev.restrack().dump(ResType::Qp)?.iter() {
        if matches!(q.details, ResDetails::Qp { srq, .. } if srq == e.id + 1) && q.num != 0 {
            qps.push(q.num, GFP_KERNEL)?;
        }
    }
    qps.sort_unstable();
    let mut body = || -> Result {
        wr.begin(req_ty, NLM_F_MULTI, seq, portid)?;
        fill_handle(wr, dev)?;
        let table = wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_SRQ)?;
        let ent = wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_SRQ_ENTRY)?;
        fill_srq_with(wr, e, &qps)?;
        wr.nest_end(ent)?;
        wr.nest_end(table)?;
        Ok(wr.end()?)
    };
    if body().is_err() {
        wr.cancel();
        return Err(EMSGSIZE);
    }
    Ok(Some(start + 1))
}

/// What a `RES_*_GET` dump walks: a restrack type, or the rdma_cm ids (upstream's are in
/// restrack too; here the connection manager keeps them, `crate::cma::res_of_device`).
#[derive(Clone, Copy)]
pub(super) enum ResSel {
    /// A restrack type.
    Type(ResType),
    /// `RES_CM_ID_GET`.
    CmId,
}

pub(super) fn res_dump(
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    wr: &mut MsgWriter<'_>,
    sel: ResSel,
) -> Result {
    let tb = parse(req)?;
    let tb = &tb[..];
    let dev = req_device(tb)?;
    let port = get_u32(tb, RDMA_NLDEV_ATTR_PORT_INDEX)?;
    if let Some(p) = port {
        if p == 0 || p > dev.phys_port_cnt() {
            return Err(EINVAL);
        }
    }
    let start = cur.get(0) as usize;
    let (ty, seq, portid) = (req.msg.hdr.ty, req.seq(), req.portid);
    let next = match sel {
        ResSel::Type(kind) => res_dump_step(wr, ty, seq, portid, &dev, kind, start, req.admin)?,
        ResSel::CmId => cm_id_dump_step(wr, ty, seq, portid, &dev, port, start)?,
    };
    if let Some(next) = next {
        cur.set(0, next as u64);
    }
    Ok(())
}
