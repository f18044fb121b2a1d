// SPDX-License-Identifier: GPL-2.0

//! The ioctl methods of the core objects (upstream `uverbs_std_types_device.c`,
//! `uverbs_std_types_cq.c`, `uverbs_std_types_qp.c`, `uverbs_std_types_mr.c`,
//! `uverbs_std_types_srq.c`, `uverbs_std_types.c`); the generic DESTROY methods are
//! the parser's DESTROY attribute (`ioctl`).

use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::{
    ids::{attr, obj, UVERBS_IDR_ANY_OBJECT},
    parse::{AttrValue, Bundle},
    structs as s,
};
use crate::uverbs::driver_api::DriverCall;
use crate::uverbs::file::cmd::qp::{cap_resp, CREATE_QP_SUP_COMP_MASK, QP_CREATE_ALLOWED};
use crate::uverbs::file::cmd::srq::CreateSrq;
use crate::uverbs::file::cmd::with_user_ctx;
use crate::uverbs::file::cmd::xrcd::XsrqReq;
use crate::uverbs::file::ioctl::{ioctl_bufs, ptr_value, NewObj, Outputs};
use crate::uverbs::file::uobject::{Inner, ObjKind};
use crate::uverbs::file::{kerr, UFile};
use crate::uverbs::resp;
use crate::verbs::{AccessFlags, Dm, DmAllocAttr, DmMrAttr, Mr, SrqInitAttr, UserMrReq};
use kernel::prelude::*;

impl<D: Driver> UFile<D> {
    /// `UVERBS_METHOD_INFO_HANDLES`: the handles of one object type in
    /// this file, newest first, as many as the list holds. No context is
    /// needed. Only IDR objects are listed: the fd objects (async event
    /// file, completion channels) are not kept among `objs`.
    ///
    /// upstream: `UVERBS_HANDLER(UVERBS_METHOD_INFO_HANDLES)` and
    /// `gather_objects_handle()` (the `uobjects` list, where a commit adds
    /// at the head).
    ///
    /// # Errors
    ///
    /// `EINVAL` without a handle list or with a length not a multiple of 4,
    /// or an object id above `u16::MAX`; `ENOMSG` for
    /// `UVERBS_IDR_ANY_OBJECT`, `ENOENT` for an object the device does not
    /// have; `EFAULT` from the copies; `ENOENT` without the optional total
    /// (upstream's `uverbs_copy_to()` of an absent attribute, after the
    /// list was written).
    pub(super) fn ioctl_info_handles(
        &self,
        inner: &Inner<D>,
        b: &Bundle<'_>,
        out: &mut Outputs,
    ) -> Result {
        let out_len = b
            .ptr(attr::INFO_HANDLES_LIST)
            .map_or(0, |p| usize::from(p.len));
        if out_len == 0 || out_len % 4 != 0 {
            return Err(EINVAL);
        }
        let id = b
            .get_const_unsigned(attr::INFO_OBJECT_ID, u16::MAX.into(), None)
            .map_err(kerr)?;
        let id = u16::try_from(id).map_err(|_| EINVAL)?;
        if id == UVERBS_IDR_ANY_OBJECT {
            return Err(ENOMSG);
        }
        if self.udev.tree.object(id).is_none() {
            return Err(ENOENT);
        }
        let mut list = KVec::new();
        for (h, _) in inner
            .objs
            .newest_first()
            .filter(|(_, t)| *t == id)
            .take(out_len / 4)
        {
            list.extend_from_slice(&h.to_ne_bytes(), GFP_KERNEL)?;
        }
        let total = (list.len() / 4) as u64;
        out.put(b, attr::INFO_HANDLES_LIST, &list)?;
        out.put(b, attr::INFO_TOTAL_HANDLES, &total.to_ne_bytes())
    }

    // ---- ioctl methods ----
    /// `UVERBS_METHOD_QUERY_GID_TABLE` (upstream `uverbs_std_types_device.c`
    /// with `rdma_query_gid_table()` and `copy_gid_entries_to_user()`): every
    /// valid GID of every port as `struct ib_uverbs_gid_entry` (32 bytes: gid,
    /// gid_index, port_num, gid_type, netdev_ifindex 0: no netdevs here),
    /// each in `ENTRY_SIZE` bytes of the user's array (cut or zero-padded).
    pub(super) fn ioctl_query_gid_table(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        out: &mut Outputs,
    ) -> Result {
        const ENTRY: usize = 32;
        bd.get_flags32(attr::QUERY_GID_TABLE_FLAGS, 0)
            .map_err(kerr)?;
        let esize = bd
            .get_const_unsigned(attr::QUERY_GID_TABLE_ENTRY_SIZE, u64::from(u16::MAX), None)
            .map_err(kerr)? as usize;
        if esize == 0 {
            return Err(EINVAL);
        }
        let max = bd
            .ptr_array_size(attr::QUERY_GID_TABLE_RESP_ENTRIES, esize)
            .map_err(kerr)?;
        if max == 0 {
            return Err(EINVAL);
        }
        inner.ctx()?;
        let mut buf = KVec::new();
        let mut n = 0usize;
        for port in 1..=self.dev.phys_port_cnt() {
            let len = self.dev.port_immutable(port)?.gid_tbl_len;
            for index in 0..len {
                let Ok(gid) = self.dev.query_gid(port, index) else {
                    continue;
                };
                if n >= max {
                    return Err(EINVAL);
                }
                let t = self.dev.query_gid_type(port, index).unwrap_or_default();
                let e = resp::gid_entry(&gid, index, port, t).to_bytes();
                buf.extend_from_slice(e.get(..esize.min(ENTRY)).unwrap_or(&[]), GFP_KERNEL)?;
                for _ in ENTRY..esize {
                    buf.push(0u8, GFP_KERNEL)?;
                }
                n += 1;
            }
        }
        out.put(
            bd,
            attr::QUERY_GID_TABLE_RESP_NUM_ENTRIES,
            &(n as u64).to_ne_bytes(),
        )?;
        out.put(bd, attr::QUERY_GID_TABLE_RESP_ENTRIES, &buf)
    }

    /// `UVERBS_METHOD_CQ_CREATE` (upstream `uverbs_std_types_cq.c`).
    pub(super) fn ioctl_cq_create(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        uattrs: &[u8],
        out: &mut Outputs,
        new: NewObj,
    ) -> Result {
        let id = new.idr()?;
        // The externally supplied CQ buffer (BUFFER_VA/LENGTH/FD/OFFSET,
        // BUF_UMEM) is the driver's to take: upstream's handler never looks
        // at it and passes it to `create_user_cq`, which no driver of ours
        // has; with `create_cq` (rxe, mlx5) it is ignored, so it is here.
        let c = s::ExCreateCq {
            cqe: ptr_value::<u32>(bd, attr::CREATE_CQ_CQE)?,
            user_handle: ptr_value::<u64>(bd, attr::CREATE_CQ_USER_HANDLE)?,
            comp_vector: ptr_value::<u32>(bd, attr::CREATE_CQ_COMP_VECTOR)?,
            // The parser checked that the fd is one of this file's
            // completion channels.
            comp_channel: match bd.get(attr::CREATE_CQ_COMP_CHANNEL) {
                Ok(AttrValue::Obj { id, .. }) => i32::try_from(id).map_err(|_| EBADF)?,
                _ => -1,
            },
            flags: bd.get_flags32(attr::CREATE_CQ_FLAGS, 0x3).map_err(kerr)?,
            ..Default::default()
        };
        let bufs = ioctl_bufs(bd, uattrs)?;
        let (cq, ev) = self.cq_create_common(inner, &c, &bufs)?;
        let cqe = cq.cqe();
        Self::commit_and_respond(inner, id, obj::CQ, ObjKind::Cq(cq, ev), || {
            out.put(bd, attr::CREATE_CQ_RESP_CQE, &cqe.to_ne_bytes())
        })
    }

    /// `UVERBS_METHOD_QP_CREATE` (upstream `uverbs_std_types_qp.c`).
    pub(super) fn ioctl_qp_create(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        uattrs: &[u8],
        out: &mut Outputs,
        new: NewObj,
    ) -> Result {
        let id = new.idr()?;
        // upstream UVERBS_HANDLER(UVERBS_METHOD_QP_CREATE) (uverbs_std_types_qp.c), in its
        // order: CAP, USER_HANDLE, TYPE; then by type the handles, an absent one ENOENT
        // (uverbs_attr_get_obj()); then the flags.
        let cap = ptr_value::<s::QpCap>(bd, attr::CREATE_QP_CAP)?;
        let user_handle = ptr_value::<u64>(bd, attr::CREATE_QP_USER_HANDLE)?;
        let t = bd
            .get_const_unsigned(attr::CREATE_QP_TYPE, u8::MAX.into(), None)
            .map_err(kerr)? as u8;
        let idr = |a: u16| -> Result<u32> {
            match bd.get(a) {
                Ok(AttrValue::Obj { id, .. }) => u32::try_from(id).map_err(|_| ENOENT),
                _ => Err(ENOENT),
            }
        };
        const XRC_TGT: u8 = 10;
        const XRC_INI: u8 = 9;
        let (pd_handle, send_cq_handle, recv_cq_handle) = match t {
            // The XRCD handle travels in pd_handle, as the write command has it.
            XRC_TGT => {
                if bd.is_valid(attr::CREATE_QP_RECV_CQ_HANDLE)
                    || bd.is_valid(attr::CREATE_QP_SEND_CQ_HANDLE)
                    || bd.is_valid(attr::CREATE_QP_PD_HANDLE)
                    || bd.is_valid(attr::CREATE_QP_IND_TABLE_HANDLE)
                {
                    return Err(EINVAL);
                }
                (idr(attr::CREATE_QP_XRCD_HANDLE)?, 0, 0)
            }
            // RAW_PACKET (CAP_NET_RAW is the driver's to refuse here), RC, UC, UD,
            // XRC_INI, DRIVER.
            8 | 2 | 3 | 4 | XRC_INI | 0xff => {
                if bd.is_valid(attr::CREATE_QP_XRCD_HANDLE)
                    || (bd.is_valid(attr::CREATE_QP_SRQ_HANDLE) && t == XRC_INI)
                {
                    return Err(EINVAL);
                }
                let pd = idr(attr::CREATE_QP_PD_HANDLE)?;
                if bd.is_valid(attr::CREATE_QP_IND_TABLE_HANDLE) {
                    if cap.max_recv_wr != 0
                        || cap.max_recv_sge != 0
                        || bd.is_valid(attr::CREATE_QP_RECV_CQ_HANDLE)
                        || bd.is_valid(attr::CREATE_QP_SRQ_HANDLE)
                    {
                        return Err(EINVAL);
                    }
                    let scq = if cap.max_send_wr != 0 {
                        idr(attr::CREATE_QP_SEND_CQ_HANDLE)?
                    } else {
                        idr(attr::CREATE_QP_SEND_CQ_HANDLE).unwrap_or(0)
                    };
                    (pd, scq, scq)
                } else {
                    let scq = idr(attr::CREATE_QP_SEND_CQ_HANDLE)?;
                    let rcq = if t == XRC_INI {
                        scq
                    } else {
                        idr(attr::CREATE_QP_RECV_CQ_HANDLE)?
                    };
                    (pd, scq, rcq)
                }
            }
            _ => return Err(EINVAL),
        };
        let mut c = s::ExCreateQp {
            user_handle,
            pd_handle,
            send_cq_handle,
            recv_cq_handle,
            srq_handle: idr(attr::CREATE_QP_SRQ_HANDLE).unwrap_or(0),
            max_send_wr: cap.max_send_wr,
            max_recv_wr: cap.max_recv_wr,
            max_send_sge: cap.max_send_sge,
            max_recv_sge: cap.max_recv_sge,
            max_inline_data: cap.max_inline_data,
            sq_sig_all: 0,
            qp_type: t,
            is_srq: u8::from(bd.is_valid(attr::CREATE_QP_SRQ_HANDLE)),
            comp_mask: if bd.is_valid(attr::CREATE_QP_IND_TABLE_HANDLE) {
                CREATE_QP_SUP_COMP_MASK
            } else {
                0
            },
            create_flags: bd
                .get_flags32(
                    attr::CREATE_QP_FLAGS,
                    u64::from(QP_CREATE_ALLOWED) | 1 << 12,
                )
                .map_err(kerr)?,
            ..Default::default()
        };
        // IB_UVERBS_QP_CREATE_SQ_SIG_ALL is a flag of the ioctl method.
        if c.create_flags & (1 << 12) != 0 {
            c.sq_sig_all = 1;
            c.create_flags &= !(1 << 12);
        }
        // upstream: a SOURCE_QPN attribute is read (u32) and adds
        // IB_QP_CREATE_SOURCE_QPN to the flags, which the driver then judges
        // (rxe: any create flag is EOPNOTSUPP; so here).
        if bd.is_valid(attr::CREATE_QP_SOURCE_QPN) {
            ptr_value::<u32>(bd, attr::CREATE_QP_SOURCE_QPN)?;
            c.create_flags |= 1 << 10;
        }
        // upstream: an SRQ must be an XRC SRQ exactly for a target QP (EINVAL).
        if bd.is_valid(attr::CREATE_QP_SRQ_HANDLE) {
            let srq = Self::srq_by_handle(inner, c.srq_handle)?;
            if srq.is_xrc() != (t == XRC_TGT) {
                return Err(EINVAL);
            }
        }
        let bufs = ioctl_bufs(bd, uattrs)?;
        let kind = self.qp_create_common(inner, &c, &bufs)?;
        let qp = match &kind {
            ObjKind::Qp(q, _) | ObjKind::TgtQp(q, _, _, _) => q.clone(),
            _ => return Err(EINVAL),
        };
        let cap = cap_resp(&qp.cap());
        let qpn = qp.qp_num();
        Self::commit_and_respond(inner, id, obj::QP, kind, || {
            out.put(bd, attr::CREATE_QP_RESP_CAP, &cap.to_bytes())?;
            out.put(bd, attr::CREATE_QP_RESP_QP_NUM, &qpn.to_ne_bytes())
        })
    }

    /// `UVERBS_METHOD_QUERY_MR` (upstream `UVERBS_HANDLER(UVERBS_METHOD_QUERY_MR)`,
    /// `uverbs_std_types_mr.c`): LKEY, RKEY, LENGTH, then the optional IOVA, in that
    /// order (a copy that faults stops there: `EFAULT`); an absent IOVA is no error
    /// (`IS_UVERBS_COPY_ERR()`).
    pub(super) fn ioctl_query_mr(
        &self,
        inner: &Inner<D>,
        bd: &Bundle<'_>,
        out: &mut Outputs,
    ) -> Result {
        let h = match bd.get(attr::QUERY_MR_HANDLE) {
            Ok(AttrValue::Obj { id, .. }) => id,
            _ => return Err(EINVAL),
        };
        let mr = match Self::obj_at(inner, inner.find(obj::MR, h)?)? {
            ObjKind::Mr(m) => m.clone(),
            _ => return Err(EINVAL),
        };
        out.put(bd, attr::QUERY_MR_RESP_LKEY, &mr.lkey().to_ne_bytes())?;
        out.put(bd, attr::QUERY_MR_RESP_RKEY, &mr.rkey().to_ne_bytes())?;
        out.put(bd, attr::QUERY_MR_RESP_LENGTH, &mr.length().to_ne_bytes())?;
        out.put_opt(bd, attr::QUERY_MR_RESP_IOVA, &mr.iova().to_ne_bytes())
    }

    /// `UVERBS_METHOD_SRQ_CREATE` (upstream `UVERBS_HANDLER(UVERBS_METHOD_SRQ_CREATE)`,
    /// `uverbs_std_types_srq.c`), in its order: MAX_SGE, MAX_WR, LIMIT, USER_HANDLE, TYPE;
    /// an XRC or tag-matching SRQ needs a CQ (absent: ENOENT, `uverbs_attr_get_obj()`),
    /// XRC an XRC domain (none exists here: ENOENT), tag matching MAX_NUM_TAGS (absent:
    /// ENOENT), then the driver refuses it (no driver here has them, rxe neither:
    /// `EOPNOTSUPP`); an unknown type is `EINVAL`. BUF_UMEM is declared but not read
    /// upstream: ignored here too.
    pub(super) fn ioctl_srq_create(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        uattrs: &[u8],
        out: &mut Outputs,
        new: NewObj,
    ) -> Result {
        let id = new.idr()?;
        let pd_handle = match bd.get(attr::CREATE_SRQ_PD_HANDLE) {
            Ok(AttrValue::Obj { id, .. }) => u32::try_from(id).map_err(|_| EINVAL)?,
            _ => return Err(EINVAL),
        };
        let max_sge = ptr_value::<u32>(bd, attr::CREATE_SRQ_MAX_SGE)?;
        let max_wr = ptr_value::<u32>(bd, attr::CREATE_SRQ_MAX_WR)?;
        let srq_limit = ptr_value::<u32>(bd, attr::CREATE_SRQ_LIMIT)?;
        let user_handle = ptr_value::<u64>(bd, attr::CREATE_SRQ_USER_HANDLE)?;
        let t = bd
            .get_const_unsigned(attr::CREATE_SRQ_TYPE, u32::MAX.into(), None)
            .map_err(kerr)?;
        // IB_UVERBS_SRQT_BASIC, _XRC, _TM.
        if (t == 1 || t == 2) && !bd.is_valid(attr::CREATE_SRQ_CQ_HANDLE) {
            return Err(ENOENT);
        }
        let obj_id = |a: u16| -> Result<u32> {
            match bd.get(a) {
                Ok(AttrValue::Obj { id, .. }) => u32::try_from(id).map_err(|_| ENOENT),
                _ => Err(ENOENT),
            }
        };
        let init = SrqInitAttr {
            max_wr,
            max_sge,
            srq_limit,
        };
        let kind = match t {
            0 => {
                let c = CreateSrq {
                    user_handle,
                    pd_handle,
                    attr: init,
                };
                let bufs = ioctl_bufs(bd, uattrs)?;
                let (srq, ev) = self.srq_create_common(inner, &c, &bufs)?;
                ObjKind::Srq(srq, ev)
            }
            1 => {
                let c = XsrqReq {
                    user_handle,
                    pd_handle,
                    xrcd_handle: obj_id(attr::CREATE_SRQ_XRCD_HANDLE)?,
                    cq_handle: obj_id(attr::CREATE_SRQ_CQ_HANDLE)?,
                    attr: init,
                };
                let bufs = ioctl_bufs(bd, uattrs)?;
                self.xsrq_create_common(inner, &c, &bufs)?
            }
            2 => {
                if !bd.is_valid(attr::CREATE_SRQ_MAX_NUM_TAGS) {
                    return Err(ENOENT);
                }
                return Err(EOPNOTSUPP);
            }
            _ => return Err(EINVAL),
        };
        // The SRQ number is 0 for a basic SRQ.
        let (a, srqn) = match &kind {
            ObjKind::Srq(s, _) | ObjKind::XSrq(s, _, _) => (s.attr(), s.srq_num()),
            _ => return Err(EINVAL),
        };
        Self::commit_and_respond(inner, id, obj::SRQ, kind, || {
            out.put(bd, attr::CREATE_SRQ_RESP_MAX_WR, &a.max_wr.to_ne_bytes())?;
            out.put(bd, attr::CREATE_SRQ_RESP_MAX_SGE, &a.max_sge.to_ne_bytes())?;
            if bd.is_valid(attr::CREATE_SRQ_RESP_SRQ_NUM) {
                out.put(bd, attr::CREATE_SRQ_RESP_SRQ_NUM, &srqn.to_ne_bytes())?;
            }
            Ok(())
        })
    }

    /// `UVERBS_METHOD_REG_MR` (upstream `uverbs_std_types_mr.c`), checks in
    /// upstream's order: IOVA and LENGTH, the optional ADDR, FD_OFFSET and
    /// FD; an FD (a dma-buf) is `EOPNOTSUPP` (no driver of ours has
    /// `reg_user_mr_dmabuf`); without one, ADDR is required and FD_OFFSET
    /// refused (`EINVAL`), ADDR and IOVA must share their page offset
    /// (`EINVAL`); a DMA handle is `EOPNOTSUPP` (no DMAH objects); the
    /// access flags (`EINVAL` past `IB_ACCESS_SUPPORTED`, then
    /// `ib_check_mr_access()`); then the driver's `reg_user_mr` with the
    /// UHW driver data; the LKEY and RKEY out.
    pub(super) fn ioctl_reg_mr(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        uattrs: &[u8],
        out: &mut Outputs,
        new: NewObj,
    ) -> Result {
        let id = new.idr()?;
        let iova = ptr_value::<u64>(bd, attr::REG_MR_IOVA)?;
        let length = ptr_value::<u64>(bd, attr::REG_MR_LENGTH)?;
        let addr = if bd.is_valid(attr::REG_MR_ADDR) {
            Some(ptr_value::<u64>(bd, attr::REG_MR_ADDR)?)
        } else {
            None
        };
        let has_fd_offset = bd.is_valid(attr::REG_MR_FD_OFFSET);
        if has_fd_offset {
            ptr_value::<u64>(bd, attr::REG_MR_FD_OFFSET)?;
        }
        if bd.is_valid(attr::REG_MR_FD) {
            return Err(EOPNOTSUPP);
        }
        let Some(start) = addr.filter(|_| !has_fd_offset) else {
            return Err(EINVAL);
        };
        let page_mask = (kernel::page::PAGE_SIZE as u64) - 1;
        if start & page_mask != iova & page_mask {
            return Err(EINVAL);
        }
        if bd.is_valid(attr::REG_MR_DMA_HANDLE) {
            return Err(EOPNOTSUPP);
        }
        let access = AccessFlags(
            bd.get_flags32(
                attr::REG_MR_ACCESS_FLAGS,
                u64::from(AccessFlags::SUPPORTED.0),
            )
            .map_err(kerr)?,
        );
        access.check()?;
        let pd_handle = match bd.get(attr::REG_MR_PD_HANDLE) {
            Ok(AttrValue::Obj { id, .. }) => u32::try_from(id).map_err(|_| EINVAL)?,
            _ => return Err(EINVAL),
        };
        let pd = Self::pd_by_handle(inner, pd_handle)?;
        let ctx = inner.ctx()?.clone();
        let req = UserMrReq {
            start,
            length,
            iova,
            access,
        };
        let bufs = ioctl_bufs(bd, uattrs)?;
        let mr = with_user_ctx(&bufs, &ctx, |uc| {
            Mr::reg_user(&pd, &req, Owner::current_task(), uc)
        })?;
        let (lkey, rkey) = (mr.lkey(), mr.rkey());
        Self::commit_and_respond(inner, id, obj::MR, ObjKind::Mr(mr), || {
            out.put(bd, attr::REG_MR_RESP_LKEY, &lkey.to_ne_bytes())?;
            out.put(bd, attr::REG_MR_RESP_RKEY, &rkey.to_ne_bytes())
        })
    }

    /// `UVERBS_METHOD_DM_ALLOC` (upstream `uverbs_std_types_dm.c`): `EOPNOTSUPP` without
    /// `alloc_dm`, the LENGTH and ALIGNMENT, then the driver's `alloc_dm`, which reads the
    /// driver's attributes of the method and writes its outputs (mlx5: the start offset and the
    /// mmap page index).
    pub(super) fn ioctl_dm_alloc(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        out: &mut Outputs,
        new: NewObj,
    ) -> Result {
        let id = new.idr()?;
        if self.dev.ops().alloc_dm.is_none() {
            return Err(EOPNOTSUPP);
        }
        let attr = DmAllocAttr {
            length: ptr_value::<u64>(bd, attr::ALLOC_DM_LENGTH)?,
            alignment: ptr_value::<u32>(bd, attr::ALLOC_DM_ALIGNMENT)?,
        };
        let ctx = inner.ctx()?.clone();
        let dm = {
            let mut call = DriverCall {
                ctx: &ctx,
                inner: &*inner,
                bundle: bd,
                out,
                new_obj: None,
                can_new: false,
                new_fd: None,
                can_new_fd: false,
            };
            Dm::alloc_user(&ctx, &attr, &mut call)?
        };
        Self::commit(inner, id, obj::DM, ObjKind::Dm(dm))
    }

    /// `UVERBS_METHOD_DM_MR_REG` (upstream `uverbs_std_types_mr.c`): `EOPNOTSUPP` without
    /// `reg_dm_mr`; the OFFSET, LENGTH and ACCESS_FLAGS (`EINVAL` past `IB_ACCESS_SUPPORTED`);
    /// the rest of upstream's checks in [`Mr::reg_dm`]; the LKEY and RKEY out.
    pub(super) fn ioctl_dm_mr_reg(
        &self,
        inner: &mut Inner<D>,
        bd: &Bundle<'_>,
        out: &mut Outputs,
        new: NewObj,
    ) -> Result {
        let id = new.idr()?;
        let handle = |a| match bd.get(a) {
            Ok(AttrValue::Obj { id, .. }) => u32::try_from(id).map_err(|_| EINVAL),
            _ => Err(EINVAL),
        };
        let pd = Self::pd_by_handle(inner, handle(attr::REG_DM_MR_PD_HANDLE)?)?;
        let dm = Self::dm_by_handle(inner, handle(attr::REG_DM_MR_DM_HANDLE)?)?;
        if self.dev.ops().reg_dm_mr.is_none() {
            return Err(EOPNOTSUPP);
        }
        let offset = ptr_value::<u64>(bd, attr::REG_DM_MR_OFFSET)?;
        let length = ptr_value::<u64>(bd, attr::REG_DM_MR_LENGTH)?;
        let access = AccessFlags(
            bd.get_flags32(
                attr::REG_DM_MR_ACCESS_FLAGS,
                u64::from(AccessFlags::SUPPORTED.0),
            )
            .map_err(kerr)?,
        );
        let a = DmMrAttr {
            offset,
            length,
            access,
        };
        let mr = Mr::reg_dm(&pd, &dm, &a, Owner::current_task())?;
        let (lkey, rkey) = (mr.lkey(), mr.rkey());
        Self::commit_and_respond(inner, id, obj::MR, ObjKind::Mr(mr), || {
            out.put(bd, attr::REG_DM_MR_RESP_LKEY, &lkey.to_ne_bytes())?;
            out.put(bd, attr::REG_DM_MR_RESP_RKEY, &rkey.to_ne_bytes())
        })
    }
}
