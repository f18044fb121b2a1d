// SPDX-License-Identifier: GPL-2.0

//! The QP commands (upstream `create_qp()`, `modify_qp()`, `ib_uverbs_query_qp()`,
//! `ib_uverbs_destroy_qp()`).

use crate::attr::{Gid, LinkLayer};
use crate::driver::Driver;
use crate::restrack::Owner;
use crate::uverbs::abi::{ids::obj, write as w};
use crate::uverbs::file::cmd::ah::ll_mac;
use crate::uverbs::file::cmd::{rd16, rd32, rd64, rd8, request, with_udata, WriteBufs};
use crate::uverbs::file::events::UEvents;
use crate::uverbs::file::uobject::{Inner, ObjKind};
use crate::uverbs::file::{copy_out_or_zero, kerr, UFile};
use crate::uverbs::resp::Out;
use crate::verbs::{
    AhAttr, GlobalRoute, Qp, QpAttr, QpAttrMask, QpCap, QpHandler, QpInitAttr, QpState, QpType,
    UserCtx,
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

/// The fields of `struct ib_uverbs_ex_create_qp`.
pub(in crate::uverbs::file) struct CreateQp {
    pub(in crate::uverbs::file) user_handle: u64,
    pub(in crate::uverbs::file) pd_handle: u32,
    pub(in crate::uverbs::file) send_cq_handle: u32,
    pub(in crate::uverbs::file) recv_cq_handle: u32,
    pub(in crate::uverbs::file) srq_handle: u32,
    pub(in crate::uverbs::file) cap: QpCap,
    pub(in crate::uverbs::file) sq_sig_all: bool,
    pub(in crate::uverbs::file) qp_type: u8,
    pub(in crate::uverbs::file) is_srq: bool,
    pub(in crate::uverbs::file) comp_mask: u32,
    pub(in crate::uverbs::file) create_flags: u32,
}

impl CreateQp {
    /// Decodes from the `user_handle` member on (offset 8 in the legacy
    /// command, 0 in the extended one).
    pub(in crate::uverbs::file) fn decode(r: &[u8], o: usize) -> Self {
        CreateQp {
            user_handle: rd64(r, o),
            pd_handle: rd32(r, o + 8),
            send_cq_handle: rd32(r, o + 12),
            recv_cq_handle: rd32(r, o + 16),
            srq_handle: rd32(r, o + 20),
            cap: QpCap {
                max_send_wr: rd32(r, o + 24),
                max_recv_wr: rd32(r, o + 28),
                max_send_sge: rd32(r, o + 32),
                max_recv_sge: rd32(r, o + 36),
                max_inline_data: rd32(r, o + 40),
            },
            sq_sig_all: rd8(r, o + 44) != 0,
            qp_type: rd8(r, o + 45),
            is_srq: rd8(r, o + 46) != 0,
            comp_mask: 0,
            create_flags: 0,
        }
    }
}
/// `struct ib_uverbs_qp_dest` (32 bytes).
pub(in crate::uverbs::file) struct QpDest {
    pub(in crate::uverbs::file) dgid: [u8; 16],
    pub(in crate::uverbs::file) flow_label: u32,
    pub(in crate::uverbs::file) dlid: u16,
    pub(in crate::uverbs::file) sgid_index: u8,
    pub(in crate::uverbs::file) hop_limit: u8,
    pub(in crate::uverbs::file) traffic_class: u8,
    pub(in crate::uverbs::file) sl: u8,
    pub(in crate::uverbs::file) is_global: bool,
    pub(in crate::uverbs::file) port_num: u8,
}

impl QpDest {
    pub(in crate::uverbs::file) fn decode(r: &[u8], o: usize) -> Self {
        let mut dgid = [0u8; 16];
        if let Some(s) = r.get(o..o + 16) {
            dgid.copy_from_slice(s);
        }
        QpDest {
            dgid,
            flow_label: rd32(r, o + 16),
            dlid: rd16(r, o + 20),
            sgid_index: rd8(r, o + 24),
            hop_limit: rd8(r, o + 25),
            traffic_class: rd8(r, o + 26),
            sl: rd8(r, o + 27),
            is_global: rd8(r, o + 30) != 0,
            port_num: rd8(r, o + 31),
        }
    }
}
/// `struct ib_uverbs_qp_cap` (or the same five fields of a create
/// response) at `off`.
pub(in crate::uverbs::file) fn encode_cap<const N: usize>(o: &mut Out<N>, off: usize, cap: &QpCap) {
    o.u32(off, cap.max_send_wr);
    o.u32(off + 4, cap.max_recv_wr);
    o.u32(off + 8, cap.max_send_sge);
    o.u32(off + 12, cap.max_recv_sge);
    o.u32(off + 16, cap.max_inline_data);
}

/// upstream `copy_ah_attr_to_uverbs()`.
pub(in crate::uverbs::file) fn encode_dest<const N: usize>(
    o: &mut Out<N>,
    off: usize,
    ah: &AhAttr,
) {
    if let Some(g) = &ah.grh {
        o.bytes(off, &g.dgid.0);
        o.u32(off + 16, g.flow_label);
        o.u8(off + 24, g.sgid_index);
        o.u8(off + 25, g.hop_limit);
        o.u8(off + 26, g.traffic_class);
        o.u8(off + 30, 1);
    }
    o.u16(off + 20, ah.dlid);
    o.u8(off + 27, ah.sl);
    o.u8(off + 31, ah.port_num as u8);
}

/// upstream `create_qp()`'s QP type switch: the types it knows but this
/// stack does not implement are `EOPNOTSUPP`, unknown ones `EINVAL`.
pub(in crate::uverbs::file) fn qp_type(v: u8) -> Result<QpType> {
    match v {
        2 => Ok(QpType::Rc),
        3 => Ok(QpType::Uc),
        4 => Ok(QpType::Ud),
        // RAW_PACKET, XRC_INI, XRC_TGT, DRIVER
        8 | 9 | 10 | 0xff => Err(EOPNOTSUPP),
        _ => Err(EINVAL),
    }
}

impl<D: Driver> UFile<D> {
    /// upstream `create_qp()` for RC/UC/UD QPs on a PD.
    pub(in crate::uverbs::file) fn qp_create_common(
        &self,
        inner: &Inner<D>,
        c: &CreateQp,
        b: &WriteBufs,
    ) -> Result<(Arc<Qp<D>>, Arc<UEvents>)> {
        let ctx = inner.ctx()?.clone();
        let t = qp_type(c.qp_type)?;
        if c.comp_mask & CREATE_QP_SUP_COMP_MASK != 0 {
            // An RSS indirection table: upstream looks the handle up, but no
            // device here has the RWQ_IND_TBL object (no
            // destroy_rwq_ind_table: the uapi drops it), and a lookup of an
            // object type the device lacks is EINVAL (rdma_lookup_get_uobject()).
            return Err(EINVAL);
        }
        let srq = if c.is_srq {
            Some(Self::srq_by_handle(inner, c.srq_handle)?)
        } else {
            None
        };
        let rcq = if c.recv_cq_handle != c.send_cq_handle {
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
            cap: c.cap,
            sq_sig_all: c.sq_sig_all,
            event_handler: Some(handler),
        };
        let qp = with_udata(b, |ud| {
            Qp::create_user(
                &pd,
                &attr,
                Owner::current_task(),
                &mut UserCtx::new(&ctx, ud),
            )
        })?;
        Ok((qp, ev))
    }

    /// `IB_USER_VERBS_CMD_CREATE_QP` / `IB_USER_VERBS_EX_CMD_CREATE_QP`.
    pub(in crate::uverbs::file) fn create_qp(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
        ex: bool,
    ) -> Result {
        let c = if ex {
            let r = request::<64>(&b.core_in)?;
            let mut c = CreateQp::decode(&r, 0);
            c.comp_mask = rd32(&r, 48);
            c.create_flags = rd32(&r, 52);
            // upstream ib_uverbs_ex_create_qp(): comp_mask, reserved
            if c.comp_mask & !CREATE_QP_SUP_COMP_MASK != 0 || rd8(&r, 47) != 0 {
                return Err(EINVAL);
            }
            c
        } else {
            let r = request::<56>(&b.core_in)?;
            CreateQp::decode(&r, 8)
        };
        let (qp, ev) = self.qp_create_common(inner, &c, b)?;
        let id = inner.free_id(None);
        let cap = qp.cap();
        let mut o = Out::<40>::new();
        o.u32(0, id);
        o.u32(4, qp.qp_num());
        encode_cap(&mut o, 8, &cap);
        let out = b.core_out;
        Self::commit_and_respond(inner, id, obj::QP, ObjKind::Qp(qp, ev), || {
            if ex {
                o.u32(36, w::uverbs_response_length(out.1, 40) as u32);
                copy_out_or_zero(out.0, out.1, &o.0)
            } else {
                copy_out_or_zero(out.0, out.1, o.0.get(..32).unwrap_or(&[]))
            }
        })
    }

    /// `IB_USER_VERBS_CMD_MODIFY_QP` / `IB_USER_VERBS_EX_CMD_MODIFY_QP`
    /// (upstream `modify_qp()`).
    pub(in crate::uverbs::file) fn modify_qp(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
        ex: bool,
    ) -> Result {
        inner.ctx()?;
        let r = if ex {
            let r = request::<120>(&b.core_in)?;
            if rd32(&r, 68) & !(IB_QP_ATTR_STANDARD_BITS | IB_QP_RATE_LIMIT) != 0 {
                return Err(EOPNOTSUPP);
            }
            r
        } else {
            let mut r = [0u8; 120];
            w::uverbs_request(&mut r[..112], &b.core_in).map_err(kerr)?;
            if rd32(&r, 68) & !IB_QP_ATTR_STANDARD_BITS != 0 {
                return Err(EOPNOTSUPP);
            }
            r
        };
        let qp = Self::qp_by_handle(inner, rd32(&r, 64))?;
        self.modify_qp_with(&qp, &r)?;
        if ex {
            let mut o = Out::<8>::new();
            o.u32(4, w::uverbs_response_length(b.core_out.1, 8) as u32);
            copy_out_or_zero(b.core_out.0, b.core_out.1, &o.0)?;
        }
        Ok(())
    }

    pub(in crate::uverbs::file) fn modify_qp_with(&self, qp: &Arc<Qp<D>>, r: &[u8; 120]) -> Result {
        let dev = &self.dev;
        let port_ok = |p: u8| p != 0 && u32::from(p) <= dev.phys_port_cnt();
        let mut mask = rd32(r, 68);
        let qkey = rd32(r, 72);
        let state = rd8(r, 96);
        let cur_state = rd8(r, 97);
        let port_num = rd8(r, 104);
        let dest = QpDest::decode(r, 0);
        let alt_dest = QpDest::decode(r, 32);
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
            && (!port_ok(rd8(r, 108))
                || !port_ok(alt_dest.port_num)
                || rd8(r, 108) != alt_dest.port_num)
        {
            return Err(EINVAL);
        }
        let err = QpState::Err as u8;
        if (mask & IB_QP_CUR_STATE != 0 && cur_state > err)
            || (mask & QpAttrMask::STATE.0 != 0 && state > err)
        {
            return Err(EINVAL);
        }
        if mask & QpAttrMask::QKEY.0 != 0 && qkey & IB_QP_SET_QKEY != 0 {
            // upstream: needs rdma_nl_get_privileged_qkey() or CAP_NET_RAW.
            return Err(EPERM);
        }
        let mut a = QpAttr {
            qp_access_flags: rd32(r, 88),
            qkey,
            rq_psn: rd32(r, 76),
            sq_psn: rd32(r, 80),
            dest_qp_num: rd32(r, 84),
            pkey_index: rd16(r, 92),
            path_mtu: rd8(r, 98),
            max_rd_atomic: rd8(r, 101),
            max_dest_rd_atomic: rd8(r, 102),
            min_rnr_timer: rd8(r, 103),
            port_num: u32::from(port),
            timeout: rd8(r, 105),
            retry_cnt: rd8(r, 106),
            rnr_retry: rd8(r, 107),
            ..QpAttr::default()
        };
        if mask & QpAttrMask::STATE.0 != 0 {
            a.qp_state = QpState::try_from(state)?;
        }
        if mask & QpAttrMask::AV.0 != 0 {
            a.ah_attr = self.ah_from_dest(&dest)?;
        }
        qp.modify(&a, QpAttrMask(mask))
    }

    /// upstream `copy_ah_attr_from_uverbs()`; on an Ethernet port the
    /// destination MAC of a link-local GID is derived from it (upstream
    /// `ib_resolve_eth_dmac()`); other GIDs would need a neighbour lookup,
    /// which is not done (the MAC stays zero).
    pub(in crate::uverbs::file) fn ah_from_dest(&self, d: &QpDest) -> Result<AhAttr> {
        let mut ah = AhAttr {
            dlid: d.dlid,
            sl: d.sl,
            port_num: u32::from(d.port_num),
            ..AhAttr::default()
        };
        if d.is_global {
            ah.grh = Some(GlobalRoute {
                dgid: Gid(d.dgid),
                flow_label: d.flow_label,
                sgid_index: d.sgid_index,
                hop_limit: d.hop_limit,
                traffic_class: d.traffic_class,
            });
            let eth = self
                .dev
                .port_immutable(u32::from(d.port_num))
                .map(|i| i.link_layer == LinkLayer::Ethernet)
                .unwrap_or(false);
            if eth {
                if let Some(mac) = ll_mac(&d.dgid) {
                    ah.dmac = mac;
                }
            }
        }
        Ok(ah)
    }

    /// `IB_USER_VERBS_CMD_QUERY_QP` (upstream `ib_uverbs_query_qp()`).
    pub(in crate::uverbs::file) fn query_qp(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        inner.ctx()?;
        let r = request::<16>(&b.core_in)?;
        let qp = Self::qp_by_handle(inner, rd32(&r, 8))?;
        let a = qp.query()?;
        let cap = qp.cap();
        let mut o = Out::<128>::new();
        encode_dest(&mut o, 0, &a.ah_attr);
        encode_cap(&mut o, 64, &cap);
        o.u32(84, a.qkey);
        o.u32(88, a.rq_psn);
        o.u32(92, a.sq_psn);
        o.u32(96, a.dest_qp_num);
        o.u32(100, a.qp_access_flags);
        o.u16(104, a.pkey_index);
        o.u8(108, a.qp_state as u8);
        o.u8(109, a.qp_state as u8);
        o.u8(110, a.path_mtu);
        o.u8(113, a.max_rd_atomic);
        o.u8(114, a.max_dest_rd_atomic);
        o.u8(115, a.min_rnr_timer);
        o.u8(116, a.port_num as u8);
        o.u8(117, a.timeout);
        o.u8(118, a.retry_cnt);
        o.u8(119, a.rnr_retry);
        o.u8(122, u8::from(qp.sq_sig_all()));
        copy_out_or_zero(b.core_out.0, b.core_out.1, &o.0)
    }

    /// `IB_USER_VERBS_CMD_DESTROY_QP`.
    pub(in crate::uverbs::file) fn destroy_qp(
        &self,
        inner: &mut Inner<D>,
        b: &mut WriteBufs,
    ) -> Result {
        inner.ctx()?;
        let r = request::<16>(&b.core_in)?;
        let pos = inner.find(obj::QP, i64::from(rd32(&r, 8)))?;
        let rep = Self::destroy_at(inner, pos)?;
        copy_out_or_zero(b.core_out.0, b.core_out.1, &rep.events.to_ne_bytes())
    }
}
