// SPDX-License-Identifier: GPL-2.0

//! The ioctl methods of the core objects (upstream `uverbs_std_types_device.c`,
//! `uverbs_std_types_cq.c`, `uverbs_std_types_qp.c`, `uverbs_std_types_mr.c`,
//! `uverbs_std_types_srq.c`, `uverbs_std_types.c`); the generic DESTROY methods are
//! the parser's DESTROY attribute (`ioctl`).

use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::{
    ids::{attr, obj, UVERBS_IDR_ANY_OBJECT},
    parse::AttrValue,
    structs as s,
};
use crate::uverbs::file::cmd::qp::{cap_resp, CREATE_QP_SUP_COMP_MASK, QP_CREATE_ALLOWED};
use crate::uverbs::file::cmd::srq::CreateSrq;
use crate::uverbs::file::cmd::with_user_ctx;
use crate::uverbs::file::cmd::xrcd::XsrqReq;
use crate::uverbs::file::ioctl::{ptr_value, MethodCtx, NewObj};
use crate::uverbs::file::uobject::ObjKind;
use crate::uverbs::file::{kerr, UFile};
use crate::uverbs::resp;
use crate::verbs::{AccessFlags, Dm, DmAllocAttr, DmMrAttr, Mr, SrqInitAttr, UserMrReq};
use kernel::prelude::*;
use kernel::sync::Arc;

impl<D: Driver> MethodCtx<'_, '_, D> {
    /// The access flags of an MR method's ACCESS_FLAGS attribute (upstream
    /// `uverbs_get_flags32()` with `IB_ACCESS_SUPPORTED`: `EINVAL` past it).
    fn access_flags(&self, id: u16) -> Result<AccessFlags> {
        let f = self
            .bd
            .get_flags32(id, u64::from(AccessFlags::SUPPORTED.0))
            .map_err(kerr)?;
        Ok(AccessFlags(f))
    }

    /// Commits a new MR under the method's NEW handle `id`, then writes its LKEY and RKEY to
    /// the attributes `lkey_attr` and `rkey_attr` ([`UFile::commit_and_respond`]).
    fn commit_mr(&mut self, id: u32, mr: Arc<Mr<D>>, lkey_attr: u16, rkey_attr: u16) -> Result {
        let (lkey, rkey) = (mr.lkey(), mr.rkey());
        UFile::commit_and_respond(self.inner, id, obj::MR, ObjKind::Mr(mr), || {
            self.out.put(self.bd, lkey_attr, &lkey.to_ne_bytes())?;
            self.out.put(self.bd, rkey_attr, &rkey.to_ne_bytes())
        })
    }

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
    pub(super) fn ioctl_info_handles(&mut self) -> Result {
        let out_len = self
            .bd
            .ptr(attr::INFO_HANDLES_LIST)
            .map_or(0, |p| usize::from(p.len));
        if out_len == 0 || out_len % 4 != 0 {
            return Err(EINVAL);
        }
        let id = self
            .bd
            .get_const_unsigned(attr::INFO_OBJECT_ID, u16::MAX.into(), None)
            .map_err(kerr)?;
        let id = u16::try_from(id).map_err(|_| EINVAL)?;
        if id == UVERBS_IDR_ANY_OBJECT {
            return Err(ENOMSG);
        }
        if self.file.tree.object(id).is_none() {
            return Err(ENOENT);
        }
        let mut list = KVec::new();
        for (h, _) in self
            .inner
            .objs
            .newest_first()
            .filter(|(_, t)| *t == id)
            .take(out_len / 4)
        {
            list.extend_from_slice(&h.to_ne_bytes(), GFP_KERNEL)?;
        }
        let total = (list.len() / 4) as u64;
        self.put(attr::INFO_HANDLES_LIST, &list)?;
        self.put(attr::INFO_TOTAL_HANDLES, &total.to_ne_bytes())
    }

    // ---- ioctl methods ----
    /// `UVERBS_METHOD_QUERY_GID_TABLE` (upstream `uverbs_std_types_device.c`
    /// with `rdma_query_gid_table()` and `copy_gid_entries_to_user()`): every
    /// valid GID of every port as `struct ib_uverbs_gid_entry` (32 bytes: gid,
    /// gid_index, port_num, gid_type, netdev_ifindex 0: no netdevs here),
    /// each in `ENTRY_SIZE` bytes of the user's array (cut or zero-padded).
    pub(super) fn ioctl_query_gid_table(&mut self) -> Result {
        const ENTRY: usize = 32;
        self.bd
            .get_flags32(attr::QUERY_GID_TABLE_FLAGS, 0)
            .map_err(kerr)?;
        let esize = self
            .bd
            .get_const_unsigned(attr::QUERY_GID_TABLE_ENTRY_SIZE, u64::from(u16::MAX), None)
            .map_err(kerr)? as usize;
        if esize == 0 {
            return Err(EINVAL);
        }
        let max = self
            .bd
            .ptr_array_size(attr::QUERY_GID_TABLE_RESP_ENTRIES, esize)
            .map_err(kerr)?;
        if max == 0 {
            return Err(EINVAL);
        }
        self.inner.ctx()?;
        let mut buf = KVec::new();
        let mut n = 0usize;
        for port in 1..=self.file.dev.phys_port_cnt() {
            let len = self.file.dev.port_immutable(port)?.gid_tbl_len;
            for index in 0..len {
                let Ok(gid) = self.file.dev.query_gid(port, index) else {
                    continue;
                };
                if n >= max {
                    return Err(EINVAL);
                }
                let t = self
                    .file
                    .dev
                    .query_gid_type(port, index)
                    .unwrap_or_default();
                let ifindex = self.file.dev.gid_ndev_ifindex(port, index).unwrap_or(0);
                let e = resp::gid_entry(&gid, index, port, t, ifindex).to_bytes();
                buf.extend_from_slice(e.get(..esize.min(ENTRY)).unwrap_or(&[]), GFP_KERNEL)?;
                for _ in ENTRY..esize {
                    buf.push(0u8, GFP_KERNEL)?;
                }
                n += 1;
            }
        }
        self.put(
            attr::QUERY_GID_TABLE_RESP_NUM_ENTRIES,
            &(n as u64).to_ne_bytes(),
        )?;
        self.put(attr::QUERY_GID_TABLE_RESP_ENTRIES, &buf)
    }

    /// `UVERBS_METHOD_CQ_CREATE` (upstream `uverbs_std_types_cq.c`).
    pub(super) fn ioctl_cq_create(&mut self, new: NewObj) -> Result {
        let id = new.idr()?;
        // The externally supplied CQ buffer (BUFFER_VA/LENGTH/FD/OFFSET,
        // BUF_UMEM) is the driver's to take: upstream's handler never looks
        // at it and passes it to `create_user_cq`, which no driver of ours
        // has; with `create_cq` (rxe, mlx5) it is ignored, so it is here.
        let c = s::ExCreateCq {
            cqe: ptr_value::<u32>(self.bd, attr::CREATE_CQ_CQE)?,
            user_handle: ptr_value::<u64>(self.bd, attr::CREATE_CQ_USER_HANDLE)?,
            comp_vector: ptr_value::<u32>(self.bd, attr::CREATE_CQ_COMP_VECTOR)?,
            // The parser checked that the fd is one of this file's
            // completion channels.
            comp_channel: match self.bd.get(attr::CREATE_CQ_COMP_CHANNEL) {
                Ok(AttrValue::Obj { id, .. }) => i32::try_from(id).map_err(|_| EBADF)?,
                _ => -1,
            },
            flags: self
                .bd
                .get_flags32(attr::CREATE_CQ_FLAGS, 0x3)
                .map_err(kerr)?,
            ..Default::default()
        };
        let bufs = self.bufs()?;
        let (cq, ev) = self.file.cq_create_common(self.inner, &c, &bufs)?;
        let cqe = cq.cqe();
        UFile::commit_and_respond(self.inner, id, obj::CQ, ObjKind::Cq(cq, ev), || {
            self.out
                .put(self.bd, attr::CREATE_CQ_RESP_CQE, &cqe.to_ne_bytes())
        })
    }

    /// `UVERBS_METHOD_QP_CREATE` (upstream `uverbs_std_types_qp.c`).
    pub(super) fn ioctl_qp_create(&mut self, new: NewObj) -> Result {
        let id = new.idr()?;
        // upstream UVERBS_HANDLER(UVERBS_METHOD_QP_CREATE) (uverbs_std_types_qp.c), in its
        // order: CAP, USER_HANDLE, TYPE; then by type the handles, an absent one ENOENT
        // (uverbs_attr_get_obj()); then the flags.
        let cap = ptr_value::<s::QpCap>(self.bd, attr::CREATE_QP_CAP)?;
        let user_handle = ptr_value::<u64>(self.bd, attr::CREATE_QP_USER_HANDLE)?;
        let t = self
            .bd
            .get_const_unsigned(attr::CREATE_QP_TYPE, u8::MAX.into(), None)
            .map_err(kerr)? as u8;
        let idr = |a| self.idr_handle(a, ENOENT);
        const XRC_TGT: u8 = 10;
        const XRC_INI: u8 = 9;
        let (pd_handle, send_cq_handle, recv_cq_handle) = match t {
            // The XRCD handle travels in pd_handle, as the write command has it.
            XRC_TGT => {
                if self.bd.is_valid(attr::CREATE_QP_RECV_CQ_HANDLE)
                    || self.bd.is_valid(attr::CREATE_QP_SEND_CQ_HANDLE)
                    || self.bd.is_valid(attr::CREATE_QP_PD_HANDLE)
                    || self.bd.is_valid(attr::CREATE_QP_IND_TABLE_HANDLE)
                {
                    return Err(EINVAL);
                }
                (idr(attr::CREATE_QP_XRCD_HANDLE)?, 0, 0)
            }
            // RAW_PACKET (CAP_NET_RAW is the driver's to refuse here), RC, UC, UD,
            // XRC_INI, DRIVER.
            8 | 2 | 3 | 4 | XRC_INI | 0xff => {
                if self.bd.is_valid(attr::CREATE_QP_XRCD_HANDLE)
                    || (self.bd.is_valid(attr::CREATE_QP_SRQ_HANDLE) && t == XRC_INI)
                {
                    return Err(EINVAL);
                }
                let pd = idr(attr::CREATE_QP_PD_HANDLE)?;
                if self.bd.is_valid(attr::CREATE_QP_IND_TABLE_HANDLE) {
                    if cap.max_recv_wr != 0
                        || cap.max_recv_sge != 0
                        || self.bd.is_valid(attr::CREATE_QP_RECV_CQ_HANDLE)
                        || self.bd.is_valid(attr::CREATE_QP_SRQ_HANDLE)
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
            is_srq: u8::from(self.bd.is_valid(attr::CREATE_QP_SRQ_HANDLE)),
            comp_mask: if self.bd.is_valid(attr::CREATE_QP_IND_TABLE_HANDLE) {
                CREATE_QP_SUP_COMP_MASK
            } else {
                0
            },
            create_flags: self
                .bd
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
        if self.bd.is_valid(attr::CREATE_QP_SOURCE_QPN) {
            ptr_value::<u32>(self.bd, attr::CREATE_QP_SOURCE_QPN)?;
            c.create_flags |= 1 << 10;
        }
        // upstream: an SRQ must be an XRC SRQ exactly for a target QP (EINVAL).
        if self.bd.is_valid(attr::CREATE_QP_SRQ_HANDLE) {
            let srq = UFile::srq_by_handle(self.inner, c.srq_handle)?;
            if srq.is_xrc() != (t == XRC_TGT) {
                return Err(EINVAL);
            }
        }
        let bufs = self.bufs()?;
        let kind = self.file.qp_create_common(self.inner, &c, &bufs)?;
        let qp = match &kind {
            ObjKind::Qp(q, _) | ObjKind::TgtQp(q, _) => q.clone(),
            _ => return Err(EINVAL),
        };
        let cap = cap_resp(&qp.cap());
        let qpn = qp.qp_num();
        UFile::commit_and_respond(self.inner, id, obj::QP, kind, || {
            self.out
                .put(self.bd, attr::CREATE_QP_RESP_CAP, &cap.to_bytes())?;
            self.out
                .put(self.bd, attr::CREATE_QP_RESP_QP_NUM, &qpn.to_ne_bytes())
        })
    }

    /// `UVERBS_METHOD_QUERY_MR` (upstream `UVERBS_HANDLER(UVERBS_METHOD_QUERY_MR)`,
    /// `uverbs_std_types_mr.c`): LKEY, RKEY, LENGTH, then the optional IOVA, in that
    /// order (a copy that faults stops there: `EFAULT`); an absent IOVA is no error
    /// (`IS_UVERBS_COPY_ERR()`).
    pub(super) fn ioctl_query_mr(&mut self) -> Result {
        let h = match self.bd.get(attr::QUERY_MR_HANDLE) {
            Ok(AttrValue::Obj { id, .. }) => id,
            _ => return Err(EINVAL),
        };
        let mr = match UFile::obj_at(self.inner, self.inner.find(obj::MR, h)?)? {
            ObjKind::Mr(m) => m.clone(),
            _ => return Err(EINVAL),
        };
        self.put(attr::QUERY_MR_RESP_LKEY, &mr.lkey().to_ne_bytes())?;
        self.put(attr::QUERY_MR_RESP_RKEY, &mr.rkey().to_ne_bytes())?;
        self.put(attr::QUERY_MR_RESP_LENGTH, &mr.length().to_ne_bytes())?;
        self.out
            .put_opt(self.bd, attr::QUERY_MR_RESP_IOVA, &mr.iova().to_ne_bytes())
    }

    /// `UVERBS_METHOD_SRQ_CREATE` (upstream `UVERBS_HANDLER(UVERBS_METHOD_SRQ_CREATE)`,
    /// `uverbs_std_types_srq.c`), in its order: MAX_SGE, MAX_WR, LIMIT, USER_HANDLE, TYPE;
    /// an XRC or tag-matching SRQ needs a CQ (absent: ENOENT, `uverbs_attr_get_obj()`),
    /// XRC an XRC domain (none exists here: ENOENT), tag matching MAX_NUM_TAGS (absent:
    /// ENOENT), then the driver refuses it (no driver here has them, rxe neither:
    /// `EOPNOTSUPP`); an unknown type is `EINVAL`. BUF_UMEM is declared but not read
    /// upstream: ignored here too.
    pub(super) fn ioctl_srq_create(&mut self, new: NewObj) -> Result {
        let id = new.idr()?;
        let pd_handle = self.idr_handle(attr::CREATE_SRQ_PD_HANDLE, EINVAL)?;
        let max_sge = ptr_value::<u32>(self.bd, attr::CREATE_SRQ_MAX_SGE)?;
        let max_wr = ptr_value::<u32>(self.bd, attr::CREATE_SRQ_MAX_WR)?;
        let srq_limit = ptr_value::<u32>(self.bd, attr::CREATE_SRQ_LIMIT)?;
        let user_handle = ptr_value::<u64>(self.bd, attr::CREATE_SRQ_USER_HANDLE)?;
        let t = self
            .bd
            .get_const_unsigned(attr::CREATE_SRQ_TYPE, u32::MAX.into(), None)
            .map_err(kerr)?;
        // IB_UVERBS_SRQT_BASIC, _XRC, _TM.
        if (t == 1 || t == 2) && !self.bd.is_valid(attr::CREATE_SRQ_CQ_HANDLE) {
            return Err(ENOENT);
        }
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
                let bufs = self.bufs()?;
                let (srq, ev) = self.file.srq_create_common(self.inner, &c, &bufs)?;
                ObjKind::Srq(srq, ev)
            }
            1 => {
                let c = XsrqReq {
                    user_handle,
                    pd_handle,
                    xrcd_handle: self.idr_handle(attr::CREATE_SRQ_XRCD_HANDLE, ENOENT)?,
                    cq_handle: self.idr_handle(attr::CREATE_SRQ_CQ_HANDLE, ENOENT)?,
                    attr: init,
                };
                let bufs = self.bufs()?;
                self.file.xsrq_create_common(self.inner, &c, &bufs)?
            }
            2 => {
                if !self.bd.is_valid(attr::CREATE_SRQ_MAX_NUM_TAGS) {
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
        UFile::commit_and_respond(self.inner, id, obj::SRQ, kind, || {
            self.out.put(
                self.bd,
                attr::CREATE_SRQ_RESP_MAX_WR,
                &a.max_wr.to_ne_bytes(),
            )?;
            self.out.put(
                self.bd,
                attr::CREATE_SRQ_RESP_MAX_SGE,
                &a.max_sge.to_ne_bytes(),
            )?;
            if self.bd.is_valid(attr::CREATE_SRQ_RESP_SRQ_NUM) {
                self.out
                    .put(self.bd, attr::CREATE_SRQ_RESP_SRQ_NUM, &srqn.to_ne_bytes())?;
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
    pub(super) fn ioctl_reg_mr(&mut self, new: NewObj) -> Result {
        let id = new.idr()?;
        let iova = ptr_value::<u64>(self.bd, attr::REG_MR_IOVA)?;
        let length = ptr_value::<u64>(self.bd, attr::REG_MR_LENGTH)?;
        let addr = if self.bd.is_valid(attr::REG_MR_ADDR) {
            Some(ptr_value::<u64>(self.bd, attr::REG_MR_ADDR)?)
        } else {
            None
        };
        let has_fd_offset = self.bd.is_valid(attr::REG_MR_FD_OFFSET);
        if has_fd_offset {
            ptr_value::<u64>(self.bd, attr::REG_MR_FD_OFFSET)?;
        }
        if self.bd.is_valid(attr::REG_MR_FD) {
            return Err(EOPNOTSUPP);
        }
        let Some(start) = addr.filter(|_| !has_fd_offset) else {
            return Err(EINVAL);
        };
        let page_mask = (kernel::page::PAGE_SIZE as u64) - 1;
        if start & page_mask != iova & page_mask {
            return Err(EINVAL);
        }
        if self.bd.is_valid(attr::REG_MR_DMA_HANDLE) {
            return Err(EOPNOTSUPP);
        }
        let access = self.access_flags(attr::REG_MR_ACCESS_FLAGS)?;
        access.check()?;
        let pd_handle = self.idr_handle(attr::REG_MR_PD_HANDLE, EINVAL)?;
        let pd = UFile::pd_by_handle(self.inner, pd_handle)?;
        let ctx = self.inner.ctx()?.clone();
        let req = UserMrReq {
            start,
            length,
            iova,
            access,
        };
        let bufs = self.bufs()?;
        let mr = with_user_ctx(&bufs, &ctx, |uc| {
            Mr::reg_user(&pd, &req, Owner::current_task(), uc)
        })?;
        self.commit_mr(id, mr, attr::REG_MR_RESP_LKEY, attr::REG_MR_RESP_RKEY)
    }

    /// `UVERBS_METHOD_DM_ALLOC` (upstream `uverbs_std_types_dm.c`): `EOPNOTSUPP` without
    /// `alloc_dm`, the LENGTH and ALIGNMENT, then the driver's `alloc_dm`, which reads the
    /// driver's attributes of the method and writes its outputs (mlx5: the start offset and the
    /// mmap page index).
    pub(super) fn ioctl_dm_alloc(&mut self, new: NewObj) -> Result {
        let id = new.idr()?;
        if self.file.dev.ops().alloc_dm.is_none() {
            return Err(EOPNOTSUPP);
        }
        let attr = DmAllocAttr {
            length: ptr_value::<u64>(self.bd, attr::ALLOC_DM_LENGTH)?,
            alignment: ptr_value::<u32>(self.bd, attr::ALLOC_DM_ALIGNMENT)?,
        };
        // The core commits the DM: the driver makes no NEW object.
        let mut call = self.driver_call(false, false)?;
        let ctx = call.ctx;
        let dm = Dm::alloc_user(ctx, &attr, &mut call)?;
        UFile::commit(self.inner, id, obj::DM, ObjKind::Dm(dm))
    }

    /// `UVERBS_METHOD_DM_MR_REG` (upstream `uverbs_std_types_mr.c`): `EOPNOTSUPP` without
    /// `reg_dm_mr`; the OFFSET, LENGTH and ACCESS_FLAGS (`EINVAL` past `IB_ACCESS_SUPPORTED`);
    /// the rest of upstream's checks in [`Mr::reg_dm`]; the LKEY and RKEY out.
    pub(super) fn ioctl_dm_mr_reg(&mut self, new: NewObj) -> Result {
        let id = new.idr()?;
        let pd_handle = self.idr_handle(attr::REG_DM_MR_PD_HANDLE, EINVAL)?;
        let pd = UFile::pd_by_handle(self.inner, pd_handle)?;
        let dm_handle = self.idr_handle(attr::REG_DM_MR_DM_HANDLE, EINVAL)?;
        let dm = UFile::dm_by_handle(self.inner, dm_handle)?;
        if self.file.dev.ops().reg_dm_mr.is_none() {
            return Err(EOPNOTSUPP);
        }
        let offset = ptr_value::<u64>(self.bd, attr::REG_DM_MR_OFFSET)?;
        let length = ptr_value::<u64>(self.bd, attr::REG_DM_MR_LENGTH)?;
        let access = self.access_flags(attr::REG_DM_MR_ACCESS_FLAGS)?;
        let a = DmMrAttr {
            offset,
            length,
            access,
        };
        let mr = Mr::reg_dm(&pd, &dm, &a, Owner::current_task())?;
        self.commit_mr(id, mr, attr::REG_DM_MR_RESP_LKEY, attr::REG_DM_MR_RESP_RKEY)
    }
}
