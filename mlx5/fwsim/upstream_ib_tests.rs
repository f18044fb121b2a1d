// SPDX-License-Identifier: GPL-2.0

//! What upstream C mlx5_ib sends that our driver does not, as the emulated function saw it
//! (Documentation/pcifn.md, "Upstream mlx5_ib on the function"): each command the way
//! `mlx5_ib_probe()` builds it, answered as a ConnectX answers it.

use super::profile::{LinkLayer, CONNECTX7};
use super::syndrome as syn;
use super::tests::{
    alloc_pd, alloc_uar, create_cq, create_uctx, destroy_in, err, fw, inbox, modify_in, ok, qp_in,
    query_qp,
};
use super::Fw;
use crate::prm::cmd::*;
use crate::prm::consts::{QPC_ST_QP0, QPC_ST_REG_UMR, QPC_ST_UD, SHARED_RESOURCE_UID};
use crate::prm::ctx::{ads, qpc};
use crate::prm::layout::Member;
use crate::prm::opcode as op;
use crate::prm::status::Status;

/// `mlx5_ib_alloc_counters()` on a function with `log_max_uctx`: the set is allocated with
/// the shared-resource uid, queried and freed by the kernel (uid 0), and usable by a DEVX
/// context; any other unknown uid is still refused.
#[test]
fn q_counter_with_the_shared_resource_uid() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let a = inbox(
        op::ALLOC_Q_COUNTER,
        SHARED_RESOURCE_UID,
        0,
        alloc_q_counter_in::SIZE_BYTES,
    );
    let out = ok(&mut f, &a, alloc_q_counter_out::SIZE_BYTES);
    let id = alloc_q_counter_out::counter_set_id.get(&out).unwrap();
    assert_ne!(id, 0);
    let uid = create_uctx(&mut f, 0);
    for who in [0, uid] {
        let mut q = inbox(op::QUERY_Q_COUNTER, who, 0, query_q_counter_in::SIZE_BYTES);
        query_q_counter_in::counter_set_id.set(&mut q, id).unwrap();
        ok(&mut f, &q, query_q_counter_out::SIZE_BYTES);
    }
    let bad = inbox(op::ALLOC_Q_COUNTER, 0x77, 0, alloc_q_counter_in::SIZE_BYTES);
    assert_eq!(
        err(&mut f, &bad, alloc_q_counter_out::SIZE_BYTES),
        (Status::BAD_PARAM_ERR, syn::UID_UNKNOWN)
    );
    // Other commands do not take the shared uid.
    let pd = inbox(
        op::ALLOC_PD,
        SHARED_RESOURCE_UID,
        0,
        alloc_pd_in::SIZE_BYTES,
    );
    assert_eq!(
        err(&mut f, &pd, alloc_pd_out::SIZE_BYTES),
        (Status::BAD_PARAM_ERR, syn::UID_UNKNOWN)
    );
    let d = destroy_in(
        op::DEALLOC_Q_COUNTER,
        0,
        dealloc_q_counter_in::counter_set_id,
        id,
    );
    ok(&mut f, &d, dealloc_q_counter_out::SIZE_BYTES);
    assert_eq!(
        err(&mut f, &d, dealloc_q_counter_out::SIZE_BYTES),
        (Status::BAD_PARAM_ERR, syn::Q_COUNTER_UNKNOWN)
    );
}

/// ib_core's QP0 and mlx5_ib's UMR QP (`mlx5r_umr_resource_init()`): created and moved to
/// RTS as upstream does; XRC is still refused.
#[test]
fn special_and_umr_qps_reach_rts() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let pd = alloc_pd(&mut f, 0);
    let uar = alloc_uar(&mut f, 0);
    let cq = create_cq(&mut f, 0, uar);
    for st in [QPC_ST_QP0, QPC_ST_REG_UMR] {
        // upstream sets no PD in the UMR QP's context.
        let qpd = if st == QPC_ST_REG_UMR { 0 } else { pd };
        let out = ok(
            &mut f,
            &qp_in(0, st, qpd, uar, cq, cq),
            create_qp_out::SIZE_BYTES,
        );
        let qpn = create_qp_out::qpn.get(&out).unwrap();
        for o in [op::RST2INIT_QP, op::INIT2RTR_QP, op::RTR2RTS_QP] {
            ok(&mut f, &modify_in(o, 0, qpn), 16);
        }
        let q = query_qp(&mut f, 0, qpn);
        assert_eq!(
            query_qp_out::qpc.inner(qpc::state).get(&q).unwrap(),
            crate::prm::consts::QPC_STATE_RTS
        );
    }
    // Any other QP still needs a live PD.
    assert_eq!(
        err(
            &mut f,
            &qp_in(0, QPC_ST_QP0, 0, uar, cq, cq),
            create_qp_out::SIZE_BYTES
        )
        .1,
        syn::PD_UNKNOWN
    );
}

/// A UD QP moved as upstream mlx5_ib moves it for libmlx5 (`ibv_modify_qp()` with
/// `IBV_QP_STATE` only at INIT->RTR, `STATE | SQ_PSN` at RTR->RTS): the transitions carry a
/// zeroed Q_Key and primary path without their `opt_param_mask` bits, and the context keeps
/// what RST2INIT set, as on a ConnectX; with `MLX5_QP_OPTPAR_Q_KEY` the new Q_Key is taken.
#[test]
fn optional_parameters_need_their_opt_param_bit() {
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let pd = alloc_pd(&mut f, 0);
    let uar = alloc_uar(&mut f, 0);
    let cq = create_cq(&mut f, 0, uar);
    let out = ok(
        &mut f,
        &qp_in(0, QPC_ST_UD, pd, uar, cq, cq),
        create_qp_out::SIZE_BYTES,
    );
    let qpn = create_qp_out::qpn.get(&out).unwrap();
    let q = |f| rst2init_qp_in::qpc.inner(f);
    let mut b = inbox(op::RST2INIT_QP, 0, 0, rst2init_qp_in::SIZE_BYTES);
    rst2init_qp_in::qpn.set(&mut b, qpn).unwrap();
    q(qpc::primary_address_path.inner(ads::vhca_port_num))
        .set(&mut b, 1)
        .unwrap();
    q(qpc::q_key).set(&mut b, 0x1111_1111).unwrap();
    ok(&mut f, &b, 16);
    let blank = |o: u16, opt: u32| {
        let mut b = inbox(o, 0, 0, rst2init_qp_in::SIZE_BYTES);
        rst2init_qp_in::qpn.set(&mut b, qpn).unwrap();
        rst2init_qp_in::opt_param_mask.set(&mut b, opt).unwrap();
        b
    };
    ok(&mut f, &blank(op::INIT2RTR_QP, 0), 16);
    ok(&mut f, &blank(op::RTR2RTS_QP, 0), 16);
    let ctx = |f: &mut Fw, m: Member<qpc::Bits>| {
        let out = query_qp(f, 0, qpn);
        query_qp_out::qpc.inner(m).get(&out).unwrap()
    };
    assert_eq!(ctx(&mut f, qpc::q_key), 0x1111_1111);
    assert_eq!(
        ctx(&mut f, qpc::primary_address_path.inner(ads::vhca_port_num)),
        1
    );
    // RTS2RTS with MLX5_QP_OPTPAR_Q_KEY (1 << 5) takes the new one.
    let mut b = blank(op::RTS2RTS_QP, 1 << 5);
    q(qpc::q_key).set(&mut b, 0x2222_2222).unwrap();
    ok(&mut f, &b, 16);
    assert_eq!(ctx(&mut f, qpc::q_key), 0x2222_2222);
    // Without it, a zeroed Q_Key changes nothing.
    ok(&mut f, &blank(op::RTS2RTS_QP, 0), 16);
    assert_eq!(ctx(&mut f, qpc::q_key), 0x2222_2222);
}
