// SPDX-License-Identifier: GPL-2.0

//! Bounded, deterministic fuzzing of the decoder (a xorshift PRNG, no crates), sized to run in
//! a few seconds under a debug `cargo test`.
//!
//! 1. Random inboxes of random lengths, half of them with a real opcode and a plausible header,
//!    against random outbox lengths: `exec` must never panic, must always answer with a known
//!    status, and a failed command's outbox must hold nothing but the header.
//! 2. A random valid command sequence checked against a model of the resource graph (which
//!    destroys must be `RES_BUSY`, which transitions `BAD_RES_STATE_ERR`), ending by destroying
//!    everything it created and asserting every count is back to zero.

use std::vec;
use std::vec::Vec;

use super::profile::{LinkLayer, CONNECTX6_DX, CONNECTX7};
use super::tests::*;
use super::*;
use crate::prm::cmd::*;
use crate::prm::consts::*;
use crate::prm::status;

/// xorshift64*: deterministic, good enough to shake a decoder.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const OPCODES: &[u16] = &[
    op::QUERY_HCA_CAP,
    op::QUERY_ADAPTER,
    op::QUERY_SPECIAL_CONTEXTS,
    op::QUERY_NIC_VPORT_CONTEXT,
    op::QUERY_HCA_VPORT_CONTEXT,
    op::QUERY_HCA_VPORT_GID,
    op::QUERY_HCA_VPORT_PKEY,
    op::ACCESS_REG,
    op::SET_ROCE_ADDRESS,
    op::ALLOC_PD,
    op::DEALLOC_PD,
    op::ALLOC_UAR,
    op::DEALLOC_UAR,
    op::ALLOC_TRANSPORT_DOMAIN,
    op::DEALLOC_TRANSPORT_DOMAIN,
    op::CREATE_UCTX,
    op::DESTROY_UCTX,
    op::CREATE_CQ,
    op::DESTROY_CQ,
    op::QUERY_CQ,
    op::MODIFY_CQ,
    op::CREATE_QP,
    op::DESTROY_QP,
    op::QUERY_QP,
    op::RST2INIT_QP,
    op::INIT2INIT_QP,
    op::INIT2RTR_QP,
    op::RTR2RTS_QP,
    op::RTS2RTS_QP,
    op::_2ERR_QP,
    op::_2RST_QP,
    op::CREATE_MKEY,
    op::DESTROY_MKEY,
    op::QUERY_MKEY,
    op::CREATE_RMP,
    op::MODIFY_RMP,
    op::QUERY_RMP,
    op::DESTROY_RMP,
    op::CREATE_UMEM,
    op::DESTROY_UMEM,
    op::CREATE_DCT,
    op::DRAIN_DCT,
    op::QUERY_DCT,
    op::DESTROY_DCT,
];

#[test]
fn random_inboxes_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Boxed: two devices by value outgrow a test thread's stack in a debug build.
    let mut devs = [
        std::boxed::Box::new(fw(CONNECTX7, LinkLayer::Ib)),
        std::boxed::Box::new(fw(CONNECTX6_DX, LinkLayer::Ethernet)),
    ];
    let mut inb = vec![0u8; 700];
    let mut out = vec![0u8; 4200];
    for i in 0..200_000u32 {
        let f = &mut devs[(i & 1) as usize];
        let in_len = rng.below(inb.len());
        let out_len = if rng.chance(80) {
            16 + rng.below(out.len() - 16)
        } else {
            rng.below(64)
        };
        let inbox = &mut inb[..in_len];
        // Mostly small numbers, so random handles sometimes name live objects.
        for b in inbox.iter_mut() {
            *b = if rng.chance(70) {
                0
            } else {
                rng.next() as u8 & 0x7
            };
        }
        if in_len >= 16 && rng.chance(60) {
            let opcode = OPCODES[rng.below(OPCODES.len())];
            mbox_in::opcode.set(inbox, u32::from(opcode)).unwrap();
            mbox_in::uid
                .set(
                    inbox,
                    if rng.chance(80) {
                        0
                    } else {
                        rng.below(4) as u32
                    },
                )
                .unwrap();
            let op_mod = if rng.chance(80) {
                0
            } else {
                rng.below(10) as u32
            };
            mbox_in::op_mod.set(inbox, op_mod).unwrap();
        }
        let outbox = &mut out[..out_len];
        match f.exec(inbox, outbox) {
            Ok(c) => {
                assert!(status::ALL.iter().any(|(_, s)| *s == c.status), "{c:?}");
                assert_eq!(mbox_out::status.get(outbox).unwrap(), u32::from(c.status.0));
                if c.status != Status::OK {
                    assert!(outbox[16..].iter().all(|&b| b == 0));
                }
            }
            Err(ExecError::OutboxTooShort) => assert!(out_len < 16),
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    // Random commands do create objects; the tables stay within their capacities.
    for f in &devs {
        let c = f.counts();
        assert!(c.pd <= capacity::PD && c.qp <= capacity::QP && c.mkey <= capacity::MKEY);
        assert!(f.stats().commands > 0);
    }
}

/// The model's view of one QP.
struct ModelQp {
    qpn: u32,
    pd: u32,
    cq: u32,
    state: u32,
}

#[test]
fn random_valid_sequences_leave_nothing_behind() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut f = fw(CONNECTX7, LinkLayer::Ib);
    let uar = alloc_uar(&mut f, 0);
    let mut pds: Vec<u32> = Vec::new();
    let mut cqs: Vec<u32> = Vec::new();
    let mut qps: Vec<ModelQp> = Vec::new();
    let mut mkeys: Vec<(u32, u32)> = Vec::new();
    for _ in 0..20_000 {
        match rng.below(9) {
            0 if pds.len() < capacity::PD => pds.push(alloc_pd(&mut f, 0)),
            1 if cqs.len() < capacity::CQ => cqs.push(create_cq(&mut f, 0, uar)),
            2 if !pds.is_empty() && !cqs.is_empty() && qps.len() < capacity::QP => {
                let pd = pds[rng.below(pds.len())];
                let cq = cqs[rng.below(cqs.len())];
                let qpn = create_qp(&mut f, 0, pd, uar, cq);
                qps.push(ModelQp {
                    qpn,
                    pd,
                    cq,
                    state: QPC_STATE_RST,
                });
            }
            3 if !pds.is_empty() && mkeys.len() < capacity::MKEY => {
                let pd = pds[rng.below(pds.len())];
                let out = ok(&mut f, &mkey_in(0, pd, 2, 32), create_mkey_out::SIZE_BYTES);
                mkeys.push((create_mkey_out::mkey_index.get(&out).unwrap(), pd));
            }
            4 if !qps.is_empty() => {
                // A random transition; the model says whether it is legal.
                let i = rng.below(qps.len());
                let ops = [
                    (op::RST2INIT_QP, Some(QPC_STATE_RST), QPC_STATE_INIT),
                    (op::INIT2INIT_QP, Some(QPC_STATE_INIT), QPC_STATE_INIT),
                    (op::INIT2RTR_QP, Some(QPC_STATE_INIT), QPC_STATE_RTR),
                    (op::RTR2RTS_QP, Some(QPC_STATE_RTR), QPC_STATE_RTS),
                    (op::RTS2RTS_QP, Some(QPC_STATE_RTS), QPC_STATE_RTS),
                    (op::_2ERR_QP, None, QPC_STATE_ERR),
                    (op::_2RST_QP, None, QPC_STATE_RST),
                ];
                let (opcode, from, to) = ops[rng.below(ops.len())];
                let q = &mut qps[i];
                let b = modify_in(opcode, 0, q.qpn);
                if from.is_none_or(|s| s == q.state) {
                    ok(&mut f, &b, 16);
                    q.state = to;
                } else {
                    assert_eq!(err(&mut f, &b, 16).0, Status::BAD_RES_STATE_ERR);
                }
                let out = query_qp(&mut f, 0, q.qpn);
                assert_eq!(
                    query_qp_out::qpc
                        .inner(crate::prm::ctx::qpc::state)
                        .get(&out)
                        .unwrap(),
                    q.state
                );
            }
            5 if !qps.is_empty() => {
                let q = qps.swap_remove(rng.below(qps.len()));
                ok(
                    &mut f,
                    &destroy_in(op::DESTROY_QP, 0, destroy_qp_in::qpn, q.qpn),
                    16,
                );
            }
            6 if !cqs.is_empty() => {
                let i = rng.below(cqs.len());
                let b = destroy_in(op::DESTROY_CQ, 0, destroy_cq_in::cqn, cqs[i]);
                if qps.iter().any(|q| q.cq == cqs[i]) {
                    assert_eq!(err(&mut f, &b, 16).0, Status::RES_BUSY);
                } else {
                    ok(&mut f, &b, 16);
                    cqs.swap_remove(i);
                }
            }
            7 if !pds.is_empty() => {
                let i = rng.below(pds.len());
                let b = destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, pds[i]);
                if qps.iter().any(|q| q.pd == pds[i]) || mkeys.iter().any(|m| m.1 == pds[i]) {
                    assert_eq!(err(&mut f, &b, 16).0, Status::RES_BUSY);
                } else {
                    ok(&mut f, &b, 16);
                    pds.swap_remove(i);
                }
            }
            8 if !mkeys.is_empty() => {
                let (index, _) = mkeys.swap_remove(rng.below(mkeys.len()));
                ok(
                    &mut f,
                    &destroy_in(op::DESTROY_MKEY, 0, destroy_mkey_in::mkey_index, index),
                    16,
                );
            }
            _ => {}
        }
        let c = f.counts();
        assert_eq!(
            (c.pd, c.cq, c.qp, c.mkey),
            (pds.len(), cqs.len(), qps.len(), mkeys.len())
        );
    }
    for q in qps.drain(..) {
        ok(
            &mut f,
            &destroy_in(op::DESTROY_QP, 0, destroy_qp_in::qpn, q.qpn),
            16,
        );
    }
    for (index, _) in mkeys.drain(..) {
        ok(
            &mut f,
            &destroy_in(op::DESTROY_MKEY, 0, destroy_mkey_in::mkey_index, index),
            16,
        );
    }
    for cq in cqs.drain(..) {
        ok(
            &mut f,
            &destroy_in(op::DESTROY_CQ, 0, destroy_cq_in::cqn, cq),
            16,
        );
    }
    for pd in pds.drain(..) {
        ok(
            &mut f,
            &destroy_in(op::DEALLOC_PD, 0, dealloc_pd_in::pd, pd),
            16,
        );
    }
    ok(
        &mut f,
        &destroy_in(op::DEALLOC_UAR, 0, dealloc_uar_in::uar, uar),
        16,
    );
    assert!(f.counts().is_zero(), "{:?}", f.counts());
}
