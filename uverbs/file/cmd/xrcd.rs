// SPDX-License-Identifier: GPL-2.0

//! The XRC commands (upstream `ib_uverbs_open_xrcd()`, `ib_uverbs_close_xrcd()` (its
//! [`WriteCtx::perform_destroy`] ends in `uverbs_free_xrcd()` and `ib_uverbs_dealloc_xrcd()`,
//! [`UXrcd::close`]), `ib_uverbs_open_qp()`, and `__uverbs_create_xsrq()` for both SRQ
//! write commands).
//!
//! An XRC domain opened with a file descriptor is shared by inode: the device keeps a table
//! of (inode, domain) (upstream `ib_uverbs_device.xrcd_tree`), every OPEN_XRCD of the same
//! inode on the device gets the same domain, and the domain is deallocated when its last
//! handle is closed. A handle cannot be closed while XRC SRQs or target QPs created (or
//! opened) through it live (upstream `uxrcd->refcnt`: `EBUSY`).

use crate::driver::Driver;
use crate::inode::InodeRef;
use crate::restrack::Owner;
use crate::uverbs::abi::{ids::obj, structs as s};
use crate::uverbs::file::cmd::{respond, with_user_ctx, WriteBufs, WriteCtx};
use crate::uverbs::file::events::UEvents;
use crate::uverbs::file::uobject::{Inner, ObjKind, TgtQpRefs};
use crate::uverbs::file::xrcd_tree::{Node, UXrcd};
use crate::uverbs::file::UFile;
use crate::verbs::{Qp, QpCap, QpHandler, Srq, SrqHandler, SrqInitAttr, Xrcd};
use kernel::prelude::*;
use kernel::sync::Arc;

/// `O_CREAT`.
const O_CREAT: u32 = 0o100;
/// `O_EXCL`.
const O_EXCL: u32 = 0o200;

impl<D: Driver> UFile<D> {
    pub(in crate::uverbs::file) fn xrcd_by_handle(
        inner: &Inner<D>,
        h: u32,
    ) -> Result<Arc<UXrcd<D>>> {
        match Self::obj_at(inner, inner.find(obj::XRCD, i64::from(h))?)? {
            ObjKind::Xrcd(x) => Ok(x.clone()),
            _ => Err(EINVAL),
        }
    }

    /// upstream `create_qp()` for `IB_QPT_XRC_TGT`: the QP is created in the domain of
    /// `xrcd_handle` with no PD, CQs or driver data, and this handle opens it.
    pub(in crate::uverbs::file) fn tgt_qp_create(
        &self,
        inner: &Inner<D>,
        xrcd_handle: u32,
        user_handle: u64,
        cap: QpCap,
    ) -> Result<ObjKind<D>> {
        let ux = Self::xrcd_by_handle(inner, xrcd_handle)?;
        let ev = UEvents::new(None, inner.async_file.clone(), user_handle)?;
        let handler: Arc<dyn QpHandler> = ev.clone();
        // Allocated before the QP: nothing to undo after it.
        let r = KBox::new(TgtQpRefs { ev, ux, handler }, GFP_KERNEL)?;
        let qp = Xrcd::create_tgt_qp(&r.ux.xrcd, cap, r.handler.clone(), Owner::current_task())?;
        r.ux.get();
        Ok(ObjKind::TgtQp(qp, r))
    }

    /// Closes a target QP handle (upstream `ib_destroy_qp_user()` → `__ib_destroy_shared_qp()`).
    pub(in crate::uverbs::file) fn tgt_qp_close(
        qp: &Arc<Qp<D>>,
        ux: &UXrcd<D>,
        handler: &Arc<dyn QpHandler>,
    ) -> Result {
        ux.xrcd.close_qp(qp, handler)?;
        ux.put();
        Ok(())
    }

    /// upstream `__uverbs_create_xsrq()` for `IB_SRQT_XRC`, up to the driver: the PD, the
    /// XRCD (its handle's refcnt) and the CQ.
    pub(in crate::uverbs::file) fn xsrq_create_common(
        &self,
        inner: &Inner<D>,
        c: &XsrqReq,
        b: &WriteBufs,
    ) -> Result<ObjKind<D>> {
        let ctx = inner.ctx()?.clone();
        let ux = Self::xrcd_by_handle(inner, c.xrcd_handle)?;
        let cq = Self::cq_by_handle(inner, c.cq_handle)?;
        let pd = Self::pd_by_handle(inner, c.pd_handle)?;
        let ev = UEvents::new(None, inner.async_file.clone(), c.user_handle)?;
        let handler: Arc<dyn SrqHandler> = ev.clone();
        let srq = with_user_ctx(b, &ctx, |uc| {
            Srq::create_xrc_user(
                &pd,
                &ux.xrcd,
                &cq,
                &c.attr,
                Some(handler),
                Owner::current_task(),
                uc,
            )
        })?;
        ux.get();
        Ok(ObjKind::XSrq(srq, ev, ux))
    }
}

impl<D: Driver> WriteCtx<'_, D> {
    /// `IB_USER_VERBS_CMD_OPEN_XRCD`, in upstream's order: the fd's inode (`EBADF`), an
    /// unknown inode without `O_CREAT` (`EAGAIN`), a known one with `O_EXCL` (`EINVAL`),
    /// then the handle and, for a new domain, `alloc_xrcd`.
    pub(in crate::uverbs::file) fn open_xrcd(&mut self) -> Result {
        let r = self.request::<s::OpenXrcd>()?;
        let ctx = self.inner.ctx()?.clone();
        let mut nodes = self.file.xrcds.nodes.lock();
        let inode = if r.fd != u32::MAX {
            Some(InodeRef::of_fd(r.fd)?)
        } else {
            None
        };
        let key = inode.as_ref().map(|i| i.key());
        let found = key.and_then(|k| nodes.iter().position(|n| n.inode.key() == k));
        if inode.is_some() {
            if found.is_none() && r.oflags & O_CREAT == 0 {
                return Err(EAGAIN);
            }
            if found.is_some() && r.oflags & O_EXCL != 0 {
                return Err(EINVAL);
            }
        }
        let xrcd = match found.and_then(|i| nodes.get(i)) {
            Some(n) => n.xrcd.clone(),
            None => self.with_user_ctx(&ctx, |uc| Xrcd::alloc_user(&self.file.dev, uc))?,
        };
        match (found, inode) {
            (Some(i), _) => {
                if let Some(n) = nodes.get_mut(i) {
                    n.opens += 1;
                }
            }
            (None, Some(inode)) => {
                if let Err(e) = nodes.push(
                    Node {
                        inode,
                        xrcd: xrcd.clone(),
                        opens: 1,
                    },
                    GFP_KERNEL,
                ) {
                    let _ = Xrcd::dealloc(xrcd);
                    return Err(e.into());
                }
            }
            (None, None) => {}
        }
        drop(nodes);
        let ux = UXrcd::new(xrcd, self.file.xrcds.clone(), key)?;
        self.commit_new(obj::XRCD, ObjKind::Xrcd(ux), |b, xrcd_handle| {
            respond(b, &s::OpenXrcdResp { xrcd_handle }.to_bytes())
        })
    }

    /// `IB_USER_VERBS_CMD_OPEN_QP` (upstream `ib_uverbs_open_qp()`): the XRCD handle is
    /// `pd_handle`; only `IB_QPT_XRC_TGT` (else `EINVAL`), a QP number the domain has (else
    /// `EINVAL`, `ib_open_qp()`); the response is `ib_uverbs_create_qp_resp` with the handle
    /// and the number.
    pub(in crate::uverbs::file) fn open_qp(&mut self) -> Result {
        self.inner.ctx()?;
        let r = self.request::<s::OpenQp>()?;
        // upstream: a failed uobj_get_read() of the XRCD is EINVAL here.
        let ux = UFile::xrcd_by_handle(self.inner, r.pd_handle).map_err(|_| EINVAL)?;
        if r.qp_type != 10 {
            return Err(EINVAL);
        }
        let ev = UEvents::new(None, self.inner.async_file.clone(), r.user_handle)?;
        let handler: Arc<dyn QpHandler> = ev.clone();
        // Allocated before the QP is opened: nothing to undo after it.
        let refs = KBox::new(TgtQpRefs { ev, ux, handler }, GFP_KERNEL)?;
        let qp = refs.ux.xrcd.open_qp(r.qpn, refs.handler.clone())?;
        let qpn = qp.qp_num();
        refs.ux.get();
        self.commit_new(obj::QP, ObjKind::TgtQp(qp, refs), |b, qp_handle| {
            let o = s::CreateQpResp {
                qp_handle,
                qpn,
                ..Default::default()
            };
            respond(b, &o.to_bytes())
        })
    }

    /// `IB_USER_VERBS_CMD_CREATE_XSRQ` / `IB_USER_VERBS_CMD_CREATE_SRQ` (upstream
    /// `__uverbs_create_xsrq()`; `ib_uverbs_create_srq()` converts its request into `struct
    /// ib_uverbs_create_xsrq` of a basic SRQ, as here for `!xsrq`): a basic SRQ, or an XRC
    /// SRQ in an XRCD with its CQ (the response's `srqn` is its number, 0 for a basic SRQ);
    /// tag matching is `EOPNOTSUPP` (no driver here has it); another type `EINVAL`.
    pub(in crate::uverbs::file) fn create_xsrq(&mut self, xsrq: bool) -> Result {
        let r = self.request_ex::<s::CreateXsrq, s::CreateSrq>(xsrq)?;
        let attr = SrqInitAttr {
            max_wr: r.max_wr,
            max_sge: r.max_sge,
            srq_limit: r.srq_limit,
        };
        let kind = match r.srq_type {
            0 => {
                let c = super::srq::CreateSrq {
                    user_handle: r.user_handle,
                    pd_handle: r.pd_handle,
                    attr,
                };
                let (srq, ev) = self.file.srq_create_common(self.inner, &c, self.b)?;
                ObjKind::Srq(srq, ev)
            }
            1 => {
                // upstream __uverbs_create_xsrq(): an XRCD handle that does not look up is
                // EINVAL, whatever the lookup's errno (the uverbs fuzzer's differential run
                // found ENOENT here).
                UFile::xrcd_by_handle(self.inner, r.xrcd_handle).map_err(|_| EINVAL)?;
                let c = XsrqReq {
                    user_handle: r.user_handle,
                    pd_handle: r.pd_handle,
                    xrcd_handle: r.xrcd_handle,
                    cq_handle: r.cq_handle,
                    attr,
                };
                self.file.xsrq_create_common(self.inner, &c, self.b)?
            }
            2 => {
                // upstream looks the CQ up first: a bad handle is its errno.
                UFile::cq_by_handle(self.inner, r.cq_handle)?;
                return Err(EOPNOTSUPP);
            }
            _ => return Err(EINVAL),
        };
        let (a, srqn) = match &kind {
            ObjKind::Srq(s, _) | ObjKind::XSrq(s, _, _) => (s.attr(), s.srq_num()),
            _ => return Err(EINVAL),
        };
        self.commit_new(obj::SRQ, kind, |b, srq_handle| {
            let o = s::CreateSrqResp {
                srq_handle,
                max_wr: a.max_wr,
                max_sge: a.max_sge,
                srqn,
            };
            respond(b, &o.to_bytes())
        })
    }
}

/// The fields of an XRC SRQ create (the write command and the ioctl method).
pub(in crate::uverbs::file) struct XsrqReq {
    pub(in crate::uverbs::file) user_handle: u64,
    pub(in crate::uverbs::file) pd_handle: u32,
    pub(in crate::uverbs::file) xrcd_handle: u32,
    pub(in crate::uverbs::file) cq_handle: u32,
    pub(in crate::uverbs::file) attr: SrqInitAttr,
}
