// SPDX-License-Identifier: GPL-2.0

//! The QP commands (upstream `create_qp()`, `modify_qp()`, `ib_uverbs_query_qp()`;
//! `ib_uverbs_destroy_qp()` is [`WriteCtx::destroy_reporting`]).

use crate::attr::{Gid, LinkLayer};
use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::{ids::obj, structs as s, write as w};
use crate::uverbs::file::cmd::ah::eth_dmac;
use crate::uverbs::file::cmd::{create_response, with_udata, with_user_ctx, WriteBufs, WriteCtx};
use crate::uverbs::file::events::UEvents;
use crate::uverbs::file::uobject::{Inner, ObjKind};
use crate::uverbs::file::UFile;
use crate::verbs::{
    AhAttr, GlobalRoute, Qp, QpAttr, QpAttrMask, QpCap, QpHandler, QpInitAttr, QpState, QpType,
};
use kernel::prelude::*;
use kernel::sync::Arc;

/// `IB_QP_*` bits of `enum ib_qp_attr_mask` used here.
pub(in crate::uverbs::file) const IB_QP_CUR_STATE: u32 = 1 << 1;

pub(in crate::uverbs::file) const IB_QP_ALT_PATH: u32 = 1 << 14;

pub(in crate::uverbs::file) const IB_QP_RATE_LIMIT: u32 = 1 << 25;

/// `IB_QP_ATTR_STANDARD_BITS` = `GENMASK(20, 0)`.
pub(in crate::uverbs::file) const IB_QP_ATTR_STANDARD_BITS: u32 = (1 << 21) - 1;

/// `IB_QP_SET_QKEY`: a privileged Q_Key.
pub(in crate::uverbs::file) const IB_QP_SET_QKEY: u32 = 0x8000_0000;

/// `IB_QP_CREATE_*` flags upstream's `create_qp()` lets through to the driver.
pub(in crate::uverbs::file) const QP_CREATE_ALLOWED: u32 = (1 << 1) // BLOCK_MULTICAST_LOOPBACK
    | (1 << 3) // CROSS_CHANNEL
    | (1 << 4) // MANAGED_SEND
    | (1 << 5) // MANAGED_RECV
    | (1 << 8) // SCATTER_FCS
    | (1 << 9) // CVLAN_STRIPPING
    | (1 << 10) // SOURCE_QPN
    | (1 << 11); // PCI_WRITE_END_PADDING

/// `IB_UVERBS_CREATE_QP_SUP_COMP_MASK` (= `IB_UVERBS_CREATE_QP_MASK_IND_TABLE`).
pub(in crate::uverbs::file) const CREATE_QP_SUP_COMP_MASK: u32 = 1;

/// `struct ib_uverbs_qp_cap` of a QP's capabilities.
pub(in crate::uverbs::file) fn cap_resp(cap: &QpCap) -> s::QpCap {
    s::QpCap {
        max_send_wr: cap.max_send_wr,
        max_recv_wr: cap.max_recv_wr,
        max_send_sge: cap.max_send_sge,
        max_recv_sge: cap.max_recv_sge,
        max_inline_data: cap.max_inline_data,
    }
}

/// upstream `copy_ah_attr_to_uverbs()`.
fn dest_resp(ah: &AhAttr) -> s::QpDest {
    let mut d = s::QpDest {
        dlid: ah.dlid,
        sl: ah.sl,
        port_num: ah.port_num as u8,
        ..Default::default()
    };
    if let Some(g) = &ah.grh {
        d.dgid = g.dgid.0;
        d.flow_label = g.flow_label;
        d.sgid_index = g.sgid_index;
        d.hop_limit = g.hop_limit;
        d.traffic_class = g.traffic_class;
        d.is_global = 1;
    }
    d
}

/// upstream `create_qp()`'s QP type switch: the types it knows but this
/// stack does not implement are `EOPNOTSUPP`, unknown ones `EINVAL`.
pub(in crate::uverbs::file) fn qp_type(v: u8) -> Result<QpType> {
    match v {
        2 => Ok(QpType::Rc),
        3 => Ok(QpType::Uc),
        4 => Ok(QpType::Ud),
        9 => Ok(QpType::XrcIni),
        10 => Ok(QpType::XrcTgt),
        // RAW_PACKET
        0xff => Ok(QpType::Driver),
        8 => Err(EOPNOTSUPP),
        _ => Err(EINVAL),
    }
}

impl<D: Driver> UFile<D> {
    /// upstream `create_qp()` for RC/UC/UD and XRC QPs; every form of the command (legacy,
    /// extended, ioctl) is converted into `struct ib_uverbs_ex_create_qp`, as upstream. An
    /// XRC target QP is created in the domain of the XRCD handle in `pd_handle` (no CQs,
    /// SRQ or driver data); an XRC initiator has no receive side (no receive CQ, no SRQ,
    /// `max_recv_wr` and `max_recv_sge` 0).
    pub(in crate::uverbs::file) fn qp_create_common(
        &self,
        inner: &Inner<D>,
        c: &s::ExCreateQp,
        b: &WriteBufs,
    ) -> Result<ObjKind<D>> {
        let ctx = inner.ctx()?.clone();
        let t = qp_type(c.qp_type)?;
        if t == QpType::XrcTgt {
            if c.comp_mask & CREATE_QP_SUP_COMP_MASK != 0 {
                return Err(EINVAL);
            }
            let cap = QpCap {
                max_send_wr: c.max_send_wr,
                max_recv_wr: c.max_recv_wr,
                max_send_sge: c.max_send_sge,
                max_recv_sge: c.max_recv_sge,
                max_inline_data: c.max_inline_data,
            };
            if c.create_flags & !QP_CREATE_ALLOWED != 0 {
                return Err(EINVAL);
            }
            if c.create_flags != 0 {
                return Err(EOPNOTSUPP);
            }
            return self.tgt_qp_create(inner, c.pd_handle, c.user_handle, cap);
        }
        let ini = t == QpType::XrcIni;
        if c.comp_mask & CREATE_QP_SUP_COMP_MASK != 0 {
            // An RSS indirection table: upstream looks the handle up, but no
            // device here has the RWQ_IND_TBL object (no
            // destroy_rwq_ind_table: the uapi drops it), and a lookup of an
            // object type the device lacks is EINVAL (rdma_lookup_get_uobject()).
            return Err(EINVAL);
        }
        let srq = if c.is_srq != 0 && !ini {
            let s = Self::srq_by_handle(inner, c.srq_handle)?;
            // upstream: an XRC SRQ serves only XRC target QPs.
            if s.is_xrc() {
                return Err(EINVAL);
            }
            Some(s)
        } else {
            None
        };
        let rcq = if c.recv_cq_handle != c.send_cq_handle && !ini {
            Some(Self::cq_by_handle(inner, c.recv_cq_handle)?)
        } else {
            None
        };
        let scq = Self::cq_by_handle(inner, c.send_cq_handle)?;
        let rcq = rcq.unwrap_or_else(|| scq.clone());
        let pd = Self::pd_by_handle(inner, c.pd_handle)?;
        if c.create_flags & !QP_CREATE_ALLOWED != 0 {
            return Err(EINVAL);
        }
        if c.create_flags != 0 {
            return Err(EOPNOTSUPP);
        }
        let ev = UEvents::new(None, inner.async_file.clone(), c.user_handle)?;
        let handler: Arc<dyn QpHandler> = ev.clone();
        let attr = QpInitAttr {
            send_cq: &scq,
            recv_cq: &rcq,
            srq: srq.as_ref(),
            qp_type: t,
            cap: QpCap {
                max_send_wr: c.max_send_wr,
                max_recv_wr: if ini { 0 } else { c.max_recv_wr },
                max_send_sge: c.max_send_sge,
                max_recv_sge: if ini { 0 } else { c.max_recv_sge },
                max_inline_data: c.max_inline_data,
            },
            sq_sig_all: c.sq_sig_all != 0,
            event_handler: Some(handler),
        };
        let qp = with_user_ctx(b, &ctx, |uc| {
            Qp::create_user(&pd, &attr, Owner::current_task(), uc)
        })?;
        Ok(ObjKind::Qp(qp, ev))
    }

    /// upstream `modify_qp()` after the request checks: the port and state checks of
    /// `ib_modify_qp_with_udata()` / `_ib_modify_qp()` in upstream's order, then the verb.
    pub(in crate::uverbs::file) fn modify_qp_with(
        &self,
        qp: &Arc<Qp<D>>,
        r: &s::ModifyQp,
        b: &WriteBufs,
    ) -> Result {
        let dev = &self.dev;
        let port_ok = |p: u8| p != 0 && u32::from(p) <= dev.phys_port_cnt();
        let mut mask = r.attr_mask;
        let (qkey, state, cur_state, port_num) = (r.qkey, r.qp_state, r.cur_qp_state, r.port_num);
        let (dest, alt_dest) = (&r.dest, &r.alt_dest);
        if mask & QpAttrMask::PORT.0 != 0 && !port_ok(port_num) {
            return Err(EINVAL);
        }
        let mut port = port_num;
        if mask & QpAttrMask::AV.0 != 0 {
            if !port_ok(dest.port_num) {
                return Err(EINVAL);
            }
            if mask & QpAttrMask::STATE.0 != 0 && state == QpState::Rtr as u8 {
                // INIT->RTR: the AV's port must be the QP's.
                if u32::from(dest.port_num) != qp.port() {
                    return Err(EINVAL);
                }
            } else {
                let both = QpAttrMask::AV.0 | QpAttrMask::PORT.0;
                if mask & both == both && port_num != dest.port_num {
                    return Err(EINVAL);
                }
                if mask & both == QpAttrMask::AV.0 {
                    mask |= QpAttrMask::PORT.0;
                    port = dest.port_num;
                }
            }
        }
        if mask & IB_QP_ALT_PATH != 0
            && (!port_ok(r.alt_port_num)
                || !port_ok(alt_dest.port_num)
                || r.alt_port_num != alt_dest.port_num)
        {
            return Err(EINVAL);
        }
        // upstream: a state above IB_QPS_ERR is EINVAL; QpState::try_from is that check.
        if mask & IB_QP_CUR_STATE != 0 {
            QpState::try_from(cur_state)?;
        }
        let next = if mask & QpAttrMask::STATE.0 != 0 {
            Some(QpState::try_from(state)?)
        } else {
            None
        };
        if mask & QpAttrMask::QKEY.0 != 0 && qkey & IB_QP_SET_QKEY != 0 {
            // upstream: needs rdma_nl_get_privileged_qkey() or CAP_NET_RAW.
            return Err(EPERM);
        }
        let mut a = QpAttr {
            qp_access_flags: r.qp_access_flags,
            qkey,
            rq_psn: r.rq_psn,
            sq_psn: r.sq_psn,
            dest_qp_num: r.dest_qp_num,
            pkey_index: r.pkey_index,
            path_mtu: r.path_mtu,
            max_rd_atomic: r.max_rd_atomic,
            max_dest_rd_atomic: r.max_dest_rd_atomic,
            min_rnr_timer: r.min_rnr_timer,
            port_num: u32::from(port),
            timeout: r.timeout,
            retry_cnt: r.retry_cnt,
            rnr_retry: r.rnr_retry,
            ..QpAttr::default()
        };
        if let Some(next) = next {
            a.qp_state = next;
        }
        if mask & QpAttrMask::AV.0 != 0 {
            // upstream _ib_modify_qp(): a user's AV of a connected QP is resolved.
            let connected = matches!(
                qp.qp_type(),
                QpType::Rc | QpType::Uc | QpType::XrcIni | QpType::XrcTgt
            );
            a.ah_attr = self.ah_from_dest(dest, connected)?;
        }
        with_udata(b, |ud| qp.modify_user(&a, QpAttrMask(mask), ud))
    }

    /// upstream `copy_ah_attr_from_uverbs()`, then `rdma_fill_sgid_attr()`: a RoCE AV needs a
    /// GRH (`EINVAL`, upstream `rdma_check_ah_attr()`) whose source GID index names a valid
    /// entry ([`eth_dmac`]: `EINVAL`, `ENODATA`); with `resolve`, on an Ethernet port the
    /// destination MAC as upstream `ib_resolve_eth_dmac()` finds it
    /// ([`crate::addr::resolve_eth_dmac`]: link-local destinations of RoCE v1 GIDs from the
    /// GID, others by route and neighbour).
    pub(in crate::uverbs::file) fn ah_from_dest(
        &self,
        d: &s::QpDest,
        resolve: bool,
    ) -> Result<AhAttr> {
        let mut ah = AhAttr {
            dlid: d.dlid,
            sl: d.sl,
            port_num: u32::from(d.port_num),
            ..AhAttr::default()
        };
        let port = u32::from(d.port_num);
        let eth = self
            .dev
            .port_immutable(port)
            .is_ok_and(|i| i.link_layer == LinkLayer::Ethernet);
        if eth && d.is_global == 0 {
            return Err(EINVAL);
        }
        if d.is_global != 0 {
            let mut g = GlobalRoute {
                dgid: Gid(d.dgid),
                flow_label: d.flow_label,
                sgid_index: d.sgid_index,
                hop_limit: d.hop_limit,
                traffic_class: d.traffic_class,
            };
            if let Some(mac) = eth_dmac(&self.dev, port, &mut g, resolve)? {
                ah.dmac = mac;
            }
            ah.grh = Some(g);
        }
        Ok(ah)
    }
}

impl<D: Driver> WriteCtx<'_, D> {
    /// `IB_USER_VERBS_CMD_ATTACH_MCAST` (upstream `ib_uverbs_attach_mcast()`): the QP joins
    /// the group (`ib_attach_mcast()`) and the file keeps the attachment; attaching again to
    /// a group the QP is attached to does nothing. A QP handle that does not look up is
    /// `EINVAL`.
    pub(in crate::uverbs::file) fn attach_mcast(&mut self) -> Result {
        let r = self.request::<s::AttachMcast>()?;
        let qp = UFile::qp_by_handle(self.inner, r.qp_handle).map_err(|_| EINVAL)?;
        let h = self.inner.find(obj::QP, i64::from(r.qp_handle))?;
        let gid = Gid(r.gid);
        if self
            .inner
            .mcast
            .iter()
            .any(|(x, _, g, l)| *x == h && *g == gid && *l == r.mlid)
        {
            return Ok(());
        }
        self.inner.mcast.reserve(1, GFP_KERNEL)?;
        qp.attach_mcast(&gid, r.mlid)?;
        self.inner.mcast.push((h, qp, gid, r.mlid), GFP_KERNEL)?;
        Ok(())
    }

    /// `IB_USER_VERBS_CMD_DETACH_MCAST` (upstream `ib_uverbs_detach_mcast()`): `EINVAL` for a
    /// QP handle that does not look up or an attachment the file does not have; else the
    /// attachment is forgotten and the QP leaves the group (`ib_detach_mcast()`).
    pub(in crate::uverbs::file) fn detach_mcast(&mut self) -> Result {
        let r = self.request::<s::AttachMcast>()?;
        let qp = UFile::qp_by_handle(self.inner, r.qp_handle).map_err(|_| EINVAL)?;
        let h = self.inner.find(obj::QP, i64::from(r.qp_handle))?;
        let gid = Gid(r.gid);
        let pos = self
            .inner
            .mcast
            .iter()
            .position(|(x, _, g, l)| *x == h && *g == gid && *l == r.mlid)
            .ok_or(EINVAL)?;
        let _ = self.inner.mcast.remove(pos);
        qp.detach_mcast(&gid, r.mlid)
    }

    /// `IB_USER_VERBS_CMD_CREATE_QP` / `IB_USER_VERBS_EX_CMD_CREATE_QP`.
    pub(in crate::uverbs::file) fn create_qp(&mut self, ex: bool) -> Result {
        let c = self.request_ex::<s::ExCreateQp, s::CreateQp>(ex)?;
        // upstream ib_uverbs_ex_create_qp(): comp_mask, reserved (0 in a legacy request).
        if c.comp_mask & !CREATE_QP_SUP_COMP_MASK != 0 || c.reserved != 0 {
            return Err(EINVAL);
        }
        let kind = self.file.qp_create_common(self.inner, &c, self.b)?;
        let qp = match &kind {
            ObjKind::Qp(q, _) | ObjKind::TgtQp(q, _) => q.clone(),
            _ => return Err(EINVAL),
        };
        let (qpn, cap) = (qp.qp_num(), cap_resp(&qp.cap()));
        self.commit_new(obj::QP, kind, |b, qp_handle| {
            let base = s::CreateQpResp {
                qp_handle,
                qpn,
                max_send_wr: cap.max_send_wr,
                max_recv_wr: cap.max_recv_wr,
                max_send_sge: cap.max_send_sge,
                max_recv_sge: cap.max_recv_sge,
                max_inline_data: cap.max_inline_data,
                reserved: 0,
            };
            create_response::<s::ExCreateQpResp>(b.core_out, ex, base)
        })
    }

    /// `IB_USER_VERBS_CMD_MODIFY_QP` / `IB_USER_VERBS_EX_CMD_MODIFY_QP`
    /// (upstream `modify_qp()`).
    pub(in crate::uverbs::file) fn modify_qp(&mut self, ex: bool) -> Result {
        self.inner.ctx()?;
        let r = self.request_ex::<s::ExModifyQp, s::ModifyQp>(ex)?.base;
        // The extended command also takes IB_QP_RATE_LIMIT.
        let known = if ex {
            IB_QP_ATTR_STANDARD_BITS | IB_QP_RATE_LIMIT
        } else {
            IB_QP_ATTR_STANDARD_BITS
        };
        if r.attr_mask & !known != 0 {
            return Err(EOPNOTSUPP);
        }
        let qp = UFile::qp_by_handle(self.inner, r.qp_handle)?;
        self.file.modify_qp_with(&qp, &r, self.b)?;
        if ex {
            let o = s::ExModifyQpResp {
                comp_mask: 0,
                response_length: w::uverbs_response_length(
                    self.b.core_out.1,
                    s::ExModifyQpResp::SIZE,
                ) as u32,
            };
            self.respond(&o.to_bytes())?;
        }
        Ok(())
    }

    /// `IB_USER_VERBS_CMD_QUERY_QP` (upstream `ib_uverbs_query_qp()`).
    pub(in crate::uverbs::file) fn query_qp(&mut self) -> Result {
        self.inner.ctx()?;
        let r = self.request::<s::QueryQp>()?;
        let qp = UFile::qp_by_handle(self.inner, r.qp_handle)?;
        let a = qp.query()?;
        let cap = cap_resp(&qp.cap());
        let o = s::QueryQpResp {
            dest: dest_resp(&a.ah_attr),
            max_send_wr: cap.max_send_wr,
            max_recv_wr: cap.max_recv_wr,
            max_send_sge: cap.max_send_sge,
            max_recv_sge: cap.max_recv_sge,
            max_inline_data: cap.max_inline_data,
            qkey: a.qkey,
            rq_psn: a.rq_psn,
            sq_psn: a.sq_psn,
            dest_qp_num: a.dest_qp_num,
            qp_access_flags: a.qp_access_flags,
            pkey_index: a.pkey_index,
            qp_state: a.qp_state as u8,
            cur_qp_state: a.qp_state as u8,
            path_mtu: a.path_mtu,
            max_rd_atomic: a.max_rd_atomic,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
            min_rnr_timer: a.min_rnr_timer,
            port_num: a.port_num as u8,
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            sq_sig_all: u8::from(qp.sq_sig_all()),
            ..Default::default()
        };
        self.respond(&o.to_bytes())
    }
}
