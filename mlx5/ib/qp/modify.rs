// SPDX-License-Identifier: GPL-2.0

//! A QP's state machine and attributes (upstream `mlx5_ib_modify_qp()` →
//! `__mlx5_ib_modify_qp()`, `mlx5_ib_query_qp()`, qp.c), and the counter set a QP counts into
//! (`mlx5_ib_qp_set_counter()`).

use crate::cmd::exec;
use crate::cmd::qp::{
    Grh, Init2Init, Init2Rtr, ModifyQp, QpcAttrs, QueryQp, Rst2Init, Rtr2Rts, Rts2Rts, ToErr, ToRst,
};
use crate::ib::device::{gen, Mlx5Ib, Mlx5IbDev};
use crate::ib::qp::QpKind;
use crate::ib::queue::ilog2_ceil;
use crate::ib::queue::QueueMem;
use crate::prm::ctx::cmd_hca_cap;
use ib_core_rs::attr::{Gid, LinkLayer};
use ib_core_rs::device::Device;
use ib_core_rs::verbs::{
    AccessFlags, AhAttr, GlobalRoute, Qp, QpAttr, QpAttrMask, QpState, QpType, Udata,
};
use kernel::prelude::*;

/// `MLX5_QP_OPTPAR_*`, shared with the simulator.
use crate::prm::consts::qp_optpar as optpar;

/// upstream `ib_mask_to_mlx5_opt()` (the members this driver handles).
fn mask_to_opt(m: QpAttrMask) -> u32 {
    let mut o = 0;
    // IB_QP_MAX_DEST_RD_ATOMIC as IB_QP_ACCESS_FLAGS: remote read and atomics are enabled only
    // with responder resources (`to_mlx5_access_flags()`), so the access bits change with it.
    if m.contains(QpAttrMask::ACCESS_FLAGS) || m.contains(QpAttrMask::MAX_DEST_RD_ATOMIC) {
        o |= optpar::RRE | optpar::RAE | optpar::RWE;
    }
    if m.contains(QpAttrMask::PKEY_INDEX) {
        o |= optpar::PKEY_INDEX;
    }
    if m.contains(QpAttrMask::PORT) {
        o |= optpar::PRI_PORT;
    }
    if m.contains(QpAttrMask::QKEY) {
        o |= optpar::Q_KEY;
    }
    if m.contains(QpAttrMask::MIN_RNR_TIMER) {
        o |= optpar::RNR_TIMEOUT;
    }
    o
}

/// Merges the members of `a` selected by `mask` into `cur` (upstream keeps them in the
/// `mlx5_ib_qp` and the firmware context).
fn merge(cur: &mut QpAttr, a: &QpAttr, mask: QpAttrMask) {
    let has = |b: QpAttrMask| mask.contains(b);
    if has(QpAttrMask::PORT) {
        cur.port_num = a.port_num;
    }
    if has(QpAttrMask::PKEY_INDEX) {
        cur.pkey_index = a.pkey_index;
    }
    if has(QpAttrMask::ACCESS_FLAGS) {
        cur.qp_access_flags = a.qp_access_flags;
    }
    if has(QpAttrMask::QKEY) {
        cur.qkey = a.qkey;
    }
    if has(QpAttrMask::AV) {
        cur.ah_attr = a.ah_attr;
    }
    if has(QpAttrMask::PATH_MTU) {
        cur.path_mtu = a.path_mtu;
    }
    if has(QpAttrMask::DEST_QPN) {
        cur.dest_qp_num = a.dest_qp_num;
    }
    if has(QpAttrMask::RQ_PSN) {
        cur.rq_psn = a.rq_psn;
    }
    if has(QpAttrMask::SQ_PSN) {
        cur.sq_psn = a.sq_psn;
    }
    if has(QpAttrMask::TIMEOUT) {
        cur.timeout = a.timeout;
    }
    if has(QpAttrMask::RETRY_CNT) {
        cur.retry_cnt = a.retry_cnt;
    }
    if has(QpAttrMask::RNR_RETRY) {
        cur.rnr_retry = a.rnr_retry;
    }
    if has(QpAttrMask::MIN_RNR_TIMER) {
        cur.min_rnr_timer = a.min_rnr_timer;
    }
    if has(QpAttrMask::MAX_QP_RD_ATOMIC) {
        cur.max_rd_atomic = a.max_rd_atomic;
    }
    if has(QpAttrMask::MAX_DEST_RD_ATOMIC) {
        cur.max_dest_rd_atomic = a.max_dest_rd_atomic;
    }
}

/// upstream `to_mlx5_access_flags()`: remote read and atomic need responder resources.
fn access_bits(a: &QpAttr) -> (bool, bool, bool) {
    let f = a.qp_access_flags;
    let mut acc = f;
    if a.max_dest_rd_atomic == 0 {
        acc &= AccessFlags::REMOTE_WRITE.0;
    }
    (
        acc & AccessFlags::REMOTE_READ.0 != 0,
        acc & AccessFlags::REMOTE_WRITE.0 != 0,
        acc & AccessFlags::REMOTE_ATOMIC.0 != 0,
    )
}

/// upstream `mlx5_set_path()` for the primary path: port, P_Key index, and the address
/// vector (LID and SL on InfiniBand; on Ethernet the GRH is mandatory and the remote MAC is
/// the address vector's, `EINVAL` otherwise).
fn set_path(d: &Mlx5IbDev, a: &QpAttr, with_av: bool, c: &mut QpcAttrs) -> Result {
    let port = u8::try_from(a.port_num).map_err(|_| EINVAL)?;
    let p = d.port(a.port_num)?;
    c.port = Some(port);
    c.pkey_index = Some(a.pkey_index);
    if !with_av {
        return Ok(());
    }
    let ah = &a.ah_attr;
    c.sl = Some(ah.sl & 0xf);
    if let Some(g) = ah.grh {
        if u32::from(g.sgid_index) >= p.immutable.gid_tbl_len {
            return Err(EINVAL);
        }
        c.grh = Some(Grh {
            dgid: g.dgid.0,
            sgid_index: g.sgid_index,
            hop_limit: g.hop_limit,
            tclass: g.traffic_class,
            flow_label: g.flow_label,
        });
    }
    match p.link_layer {
        LinkLayer::Infiniband => c.rlid = Some(ah.dlid),
        LinkLayer::Ethernet => {
            if ah.grh.is_none() {
                return Err(EINVAL);
            }
            c.rmac = Some(ah.dmac);
        }
    }
    Ok(())
}

/// upstream `modify_dci_qp_is_ok()`: the transitions of a DCI and their required and optional
/// attributes (no destination QPN, PSN of the responder or responder resources: a DCI has no
/// fixed peer).
fn modify_dci_qp_is_ok(cur: QpState, new: QpState, mask: QpAttrMask) -> bool {
    use QpAttrMask as M;
    use QpState::*;
    let valid = |req: M, opt: M| {
        let req = M(req.0 | M::STATE.0);
        mask.contains(req) && mask.0 & !(req.0 | opt.0) == 0
    };
    match (cur, new) {
        (_, Reset) => valid(M(0), M(0)),
        (Reset, Init) => valid(M::PKEY_INDEX | M::PORT, M(0)),
        (Init, Init) => valid(M(0), M::PKEY_INDEX | M::PORT),
        (Init, Rtr) => valid(M::PATH_MTU, M::PKEY_INDEX | M::AV),
        (Rtr, Rts) => valid(
            M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::MAX_QP_RD_ATOMIC | M::SQ_PSN,
            M::MIN_RNR_TIMER,
        ),
        (Rts, Rts) => valid(M(0), M::MIN_RNR_TIMER),
        (Reset, Err) => false,
        (_, Err) => valid(M(0), M(0)),
        _ => false,
    }
}

fn log2_rd(n: u8) -> Result<u8> {
    ilog2_ceil(u32::from(n))
}

/// upstream `mlx5_ib_modify_qp()` → `__mlx5_ib_modify_qp()`: the transition of the current
/// state and the target state (`optab`), the core's `ib_modify_qp_is_ok()` check (`EINVAL` for
/// an illegal transition, a missing required or a disallowed attribute), the context members of the
/// transition and the optional-parameter mask (`opt_mask`), then the command.
///
/// # Errors
///
/// `EINVAL` for a transition or attribute upstream refuses (`ib_modify_qp_is_ok()`, a bad port,
/// path or MTU), the errno of the transition command (`Mlx5Hw::exec`).
pub(crate) fn modify_qp(
    qp: &Qp<Mlx5Ib>,
    attr: &QpAttr,
    mask: QpAttrMask,
    udata: Option<&mut Udata<'_>>,
) -> Result {
    let d = qp.device().data();
    let t = qp.qp_type();
    let mut st = qp.data().state.lock();
    let dci = matches!(qp.data().kind, QpKind::Dci);
    if let QpKind::Dct(init) = &qp.data().kind {
        return super::dct::modify(qp, init, &mut st, attr, mask, udata);
    }
    if matches!(qp.data().kind, QpKind::Umr) {
        return modify_umr_qp(d, qp, &mut st, attr, mask);
    }
    // upstream mqp->mutex also covers the counter binding (mlx5_ib_qp_set_counter()).
    let mut cnt = qp.data().events.cnt.lock();
    let cur = st.qp_state;
    let new = if mask.contains(QpAttrMask::STATE) {
        attr.qp_state
    } else {
        cur
    };
    let ok = if dci {
        modify_dci_qp_is_ok(cur, new, mask)
    } else {
        ib_core_rs::verbs::modify_qp_is_ok(cur, new, t, mask)
    };
    if !ok {
        return Err(EINVAL);
    }
    let mut next = *st;
    merge(&mut next, attr, mask);
    next.qp_state = new;
    let qpn = qp.data().qpn;
    // upstream mlx5_core_qp_modify(): every transition carries the QP's uid.
    let uid = qp.data().uid;
    let hw = &*d.hw;
    let rc = !matches!(t, QpType::Ud | QpType::Smi | QpType::Gsi);
    let mut c = QpcAttrs::default();
    let opt = mask_to_opt(mask);
    match (cur, new) {
        (_, QpState::Reset) => exec(hw, &ModifyQp::<ToRst>::new(qpn, c).by(uid))?,
        (_, QpState::Err) => exec(hw, &ModifyQp::<ToErr>::new(qpn, c).by(uid))?,
        (QpState::Reset, QpState::Init) | (QpState::Init, QpState::Init) => {
            set_path(d, &next, false, &mut c)?;
            if rc {
                c.rre_rwe_rae = Some(access_bits(&next));
            } else {
                c.q_key = Some(next.qkey);
            }
            if cur == QpState::Reset {
                // upstream __mlx5_ib_modify_qp(): the port's counter set
                // (mlx5_ib_get_counters_id()) at RESET->INIT.
                // A QP bound in RESET counts into its counter's set (`ibqp->counter->id`).
                let set = if cnt.set != 0 { cnt.set } else { d.qcnt_set() };
                c.counter_set_id = u8::try_from(set).ok().filter(|&id| id != 0);
                exec(hw, &ModifyQp::<Rst2Init>::new(qpn, c).by(uid))?;
            } else {
                let opt = opt
                    & (optpar::RRE
                        | optpar::RAE
                        | optpar::RWE
                        | optpar::PKEY_INDEX
                        | optpar::PRI_PORT
                        | optpar::Q_KEY);
                exec(hw, &ModifyQp::<Init2Init>::with_opt(qpn, c, opt).by(uid))?;
            }
        }
        (QpState::Init, QpState::Rtr) => {
            // A DCI's address vector is optional: its WQEs name their destinations.
            set_path(
                d,
                &next,
                rc && (!dci || mask.contains(QpAttrMask::AV)),
                &mut c,
            )?;
            let log_max_msg = gen(d)?.get(cmd_hca_cap::log_max_msg);
            c.log_msg_max = Some(u8::try_from(log_max_msg).map_err(|_| EIO)?);
            if rc {
                if !(1..=5).contains(&next.path_mtu) {
                    return Err(EINVAL);
                }
                c.mtu = Some(next.path_mtu);
                c.remote_qpn = Some(next.dest_qp_num & 0xff_ffff);
                c.next_rcv_psn = Some(next.rq_psn & 0xff_ffff);
                c.log_rra_max = Some(log2_rd(next.max_dest_rd_atomic)?);
                c.min_rnr_nak = Some(next.min_rnr_timer & 0x1f);
                c.rre_rwe_rae = Some(access_bits(&next));
            } else {
                c.q_key = Some(next.qkey);
            }
            let opt = opt
                & if rc {
                    optpar::RRE | optpar::RAE | optpar::RWE | optpar::PKEY_INDEX
                } else {
                    optpar::PKEY_INDEX | optpar::Q_KEY
                };
            exec(hw, &ModifyQp::<Init2Rtr>::with_opt(qpn, c, opt).by(uid))?;
        }
        (QpState::Rtr, QpState::Rts) | (QpState::Rts, QpState::Rts) => {
            let opt = opt
                & if rc {
                    optpar::RRE | optpar::RAE | optpar::RWE | optpar::RNR_TIMEOUT
                } else {
                    optpar::Q_KEY
                };
            if rc {
                c.ack_timeout = Some(next.timeout & 0x1f);
                c.min_rnr_nak = Some(next.min_rnr_timer & 0x1f);
                c.rre_rwe_rae = Some(access_bits(&next));
            } else {
                c.q_key = Some(next.qkey);
            }
            if cur == QpState::Rtr {
                c.next_send_psn = Some(next.sq_psn & 0xff_ffff);
                if rc {
                    c.retry_count = Some(next.retry_cnt & 7);
                    c.rnr_retry = Some(next.rnr_retry & 7);
                    c.log_sra_max = Some(log2_rd(next.max_rd_atomic)?);
                }
                exec(hw, &ModifyQp::<Rtr2Rts>::with_opt(qpn, c, opt).by(uid))?;
            } else {
                exec(hw, &ModifyQp::<Rts2Rts>::with_opt(qpn, c, opt).by(uid))?;
            }
        }
        _ => return Err(EINVAL),
    }
    cnt.state = new;
    // upstream __mlx5_ib_modify_qp(): a binding made after INIT is applied at RTS.
    if new == QpState::Rts && cnt.pending {
        let set = if cnt.set != 0 { cnt.set } else { d.qcnt_set() };
        if set_counter(d, qpn, set).is_ok() {
            cnt.pending = false;
        }
    }
    if new == QpState::Reset {
        // upstream: a kernel QP's queues start over.
        if let (Some(k), QueueMem::Kernel { buf }) = (&qp.data().kern, &qp.data().mem) {
            k.reset(buf)?;
        }
        // upstream: a QP back in RESET forgets its attributes (the context is reset).
        *st = QpAttr::default();
    } else {
        *st = next;
    }
    Ok(())
}

/// The UMR QP's transitions (upstream `mlx5r_umr_qp_rst2rts()` through `__mlx5_ib_modify_qp()`,
/// which skips `ib_modify_qp_is_ok()` for `MLX5_IB_QPT_REG_UMR`): RESET->INIT with the port
/// (P_Key index 0), INIT->RTR->RTS with no path, PSN or access attributes (the QP has no
/// peer), and to RESET or ERR.
///
/// # Errors
///
/// `EINVAL` for another transition or RESET->INIT without a port, the transition command's
/// errno.
fn modify_umr_qp(
    d: &Mlx5IbDev,
    qp: &Qp<Mlx5Ib>,
    st: &mut QpAttr,
    attr: &QpAttr,
    mask: QpAttrMask,
) -> Result {
    let hw = &*d.hw;
    let qpn = qp.data().qpn;
    let mut c = QpcAttrs::default();
    let new = if mask.contains(QpAttrMask::STATE) {
        attr.qp_state
    } else {
        return Err(EINVAL);
    };
    match (st.qp_state, new) {
        (_, QpState::Reset) => {
            exec(hw, &ModifyQp::<ToRst>::new(qpn, c))?;
            if let (Some(k), QueueMem::Kernel { buf }) = (&qp.data().kern, &qp.data().mem) {
                k.reset(buf)?;
            }
        }
        (_, QpState::Err) => exec(hw, &ModifyQp::<ToErr>::new(qpn, c))?,
        (QpState::Reset, QpState::Init) => {
            // upstream mlx5r_umr_qp_rst2rts(): port 1, P_Key index 0.
            if !mask.contains(QpAttrMask::PORT) {
                return Err(EINVAL);
            }
            c.port = Some(u8::try_from(attr.port_num).map_err(|_| EINVAL)?);
            c.pkey_index = Some(0);
            exec(hw, &ModifyQp::<Rst2Init>::new(qpn, c))?;
        }
        (QpState::Init, QpState::Rtr) => exec(hw, &ModifyQp::<Init2Rtr>::new(qpn, c))?,
        (QpState::Rtr, QpState::Rts) => exec(hw, &ModifyQp::<Rtr2Rts>::new(qpn, c))?,
        _ => return Err(EINVAL),
    }
    st.qp_state = new;
    Ok(())
}

/// upstream `mlx5_ib_query_qp()` → `query_qp_attr()`: QUERY_QP, the context back to
/// `ib_qp_attr`.
///
/// # Errors
///
/// The errno of QUERY_QP (`Mlx5Hw::exec`), `EIO` for a state or value the firmware should not
/// report.
pub(crate) fn query_qp(qp: &Qp<Mlx5Ib>) -> Result<QpAttr> {
    let d = qp.device().data();
    let st = qp.data().state.lock();
    // A DCT answers the attributes it was given (upstream mlx5_ib_dct_query_qp() reads them
    // back with QUERY_DCT, which returns the same).
    if matches!(qp.data().kind, QpKind::Dct(_)) {
        return Ok(*st);
    }
    let q = exec(&*d.hw, &QueryQp { qpn: qp.data().qpn })?;
    use crate::cmd::qp::QpState as S;
    let state = match q.state {
        S::Rst => QpState::Reset,
        S::Init => QpState::Init,
        S::Rtr => QpState::Rtr,
        S::Rts => QpState::Rts,
        S::Sqer => QpState::Sqe,
        S::Sqd => QpState::Sqd,
        S::Err => QpState::Err,
    };
    let (rre, rwe, rae) = q.rre_rwe_rae;
    let mut access = 0;
    if rre {
        access |= AccessFlags::REMOTE_READ.0;
    }
    if rwe {
        access |= AccessFlags::REMOTE_WRITE.0;
    }
    if rae {
        access |= AccessFlags::REMOTE_ATOMIC.0;
    }
    let port_num = u32::from(q.port);
    let eth = d
        .port(port_num)
        .map(|p| p.link_layer == LinkLayer::Ethernet)
        .unwrap_or(false);
    Ok(QpAttr {
        qp_state: state,
        port_num,
        pkey_index: q.pkey_index,
        qp_access_flags: access,
        qkey: q.q_key,
        path_mtu: q.mtu,
        dest_qp_num: q.remote_qpn,
        rq_psn: q.next_rcv_psn,
        sq_psn: q.next_send_psn,
        ah_attr: AhAttr {
            dlid: if eth { 0 } else { q.rlid },
            sl: q.sl,
            port_num,
            grh: q.grh.map(|g| GlobalRoute {
                dgid: Gid(g.dgid),
                flow_label: g.flow_label,
                sgid_index: g.sgid_index,
                hop_limit: g.hop_limit,
                traffic_class: g.tclass,
            }),
            dmac: if eth { q.rmac } else { [0; 6] },
        },
        timeout: q.ack_timeout,
        retry_cnt: q.retry_count,
        rnr_retry: q.rnr_retry,
        min_rnr_timer: q.min_rnr_nak,
        max_rd_atomic: 1u8.checked_shl(u32::from(q.log_sra_max)).unwrap_or(0),
        max_dest_rd_atomic: 1u8.checked_shl(u32::from(q.log_rra_max)).unwrap_or(0),
    })
}

/// upstream `__mlx5_ib_qp_set_counter()`: RTS2RTS with only `counter_set_id`
/// (`MLX5_QP_OPTPAR_COUNTER_SET_ID`).
fn set_counter(d: &Mlx5IbDev, qpn: u32, set: u32) -> Result {
    let c = QpcAttrs {
        counter_set_id: Some(u8::try_from(set).map_err(|_| EINVAL)?),
        ..QpcAttrs::default()
    };
    exec(
        &*d.hw,
        &ModifyQp::<Rts2Rts>::with_opt(qpn, c, optpar::COUNTER_SET_ID),
    )
}

/// upstream `mlx5_ib_qp_set_counter()`: a QP in RESET takes the set at RESET->INIT, one in RTS
/// now (RTS2RTS; `EOPNOTSUPP` without `rts2rts_qp_counters_set_id`), one in between at its
/// move to RTS. `set` 0 is the port's own set (unbind).
pub(crate) fn qp_set_counter(dev: &Device<Mlx5Ib>, qpn: u32, set: u32) -> Result {
    let d = dev.data();
    let t = d.events.qp_target(qpn).ok_or(EINVAL)?;
    let mut cnt = t.cnt.lock();
    if cnt.state == QpState::Reset {
        cnt.set = set;
        return Ok(());
    }
    if gen(d)?.get(cmd_hca_cap::rts2rts_qp_counters_set_id) == 0 {
        return Err(EOPNOTSUPP);
    }
    if cnt.state == QpState::Rts {
        set_counter(d, qpn, if set != 0 { set } else { d.qcnt_set() })?;
        cnt.set = set;
        return Ok(());
    }
    cnt.pending = true;
    cnt.set = set;
    Ok(())
}
