// SPDX-License-Identifier: GPL-2.0

//! What upstream C mlx5_ib sends that our driver does not, as the emulated function saw it
//! (Documentation/pcifn.md, "Upstream mlx5_ib on the function"): each command the way
//! `mlx5_ib_probe()` builds it, answered as a ConnectX answers it.

use super::profile::{LinkLayer, CONNECTX7};
use super::syndrome as syn;
use super::tests::{create_uctx, destroy_in, err, fw, inbox, ok};
use crate::prm::cmd::*;
use crate::prm::consts::SHARED_RESOURCE_UID;
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
