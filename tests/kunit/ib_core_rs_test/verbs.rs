// SPDX-License-Identifier: GPL-2.0

//! Kernel verbs and the usecnt graph.

use kernel::prelude::*;

#[kunit_tests(ib_core_rs_verbs)]
mod tests {
    use super::super::*;
    use ib_core_rs::restrack::ResType;
    use ib_core_rs::verbs::{
        modify_qp_is_ok, Counted, CqHandler, QpAttrMask, QpCap, QpState, QpType, Sge,
    };

    struct CompCounter(Atomic<i32>);

    impl CqHandler for CompCounter {
        fn completion(&self) {
            self.0.fetch_add(1, Relaxed);
        }
    }

    fn cq(dev: &Arc<Device<Mock>>) -> Result<Arc<Cq<Mock>>> {
        Cq::create(
            dev,
            &CqInitAttr {
                cqe: 16,
                comp_vector: 0,
                flags: 0,
            },
            None,
            ib_core_rs::kernel_owner!(),
        )
    }

    fn qp(
        pd: &Arc<Pd<Mock>>,
        scq: &Arc<Cq<Mock>>,
        rcq: &Arc<Cq<Mock>>,
        srq: Option<&Arc<Srq<Mock>>>,
    ) -> Result<Arc<Qp<Mock>>> {
        Qp::create(
            pd,
            &QpInitAttr {
                send_cq: scq,
                recv_cq: rcq,
                srq,
                qp_type: QpType::Rc,
                cap: QpCap {
                    max_send_wr: 8,
                    max_recv_wr: 8,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: true,
                event_handler: None,
            },
            ib_core_rs::kernel_owner!(),
        )
    }

    /// upstream `ib_modify_qp_is_ok()`: the RC, UC and UD transitions libibverbs users make,
    /// a missing required attribute, a disallowed optional one, `IB_QP_CUR_STATE` from INIT,
    /// and transitions the table does not list (RESET to ERR, INIT to RTS).
    #[test]
    fn modify_qp_is_ok_follows_the_upstream_table() {
        use QpAttrMask as M;
        use QpState as S;
        let init = M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;
        let rtr = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN;
        let rc_rtr = rtr | M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER;
        let rc_rts =
            M::STATE | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::SQ_PSN | M::MAX_QP_RD_ATOMIC;
        assert!(modify_qp_is_ok(S::Reset, S::Init, QpType::Rc, init));
        assert!(modify_qp_is_ok(S::Init, S::Rtr, QpType::Rc, rc_rtr));
        assert!(modify_qp_is_ok(S::Rtr, S::Rts, QpType::Rc, rc_rts));
        assert!(modify_qp_is_ok(S::Init, S::Rtr, QpType::Uc, rtr));
        assert!(modify_qp_is_ok(
            S::Rtr,
            S::Rts,
            QpType::Uc,
            M::STATE | M::SQ_PSN
        ));
        let ud_init = M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY;
        assert!(modify_qp_is_ok(S::Reset, S::Init, QpType::Ud, ud_init));
        assert!(modify_qp_is_ok(S::Init, S::Rtr, QpType::Ud, M::STATE));
        assert!(modify_qp_is_ok(
            S::Rtr,
            S::Rts,
            QpType::Ud,
            M::STATE | M::SQ_PSN
        ));
        // Optional attributes: MIN_RNR_TIMER into RTS on RC, not on UC.
        assert!(modify_qp_is_ok(
            S::Rts,
            S::Rts,
            QpType::Rc,
            M::MIN_RNR_TIMER
        ));
        assert!(!modify_qp_is_ok(
            S::Rts,
            S::Rts,
            QpType::Uc,
            M::MIN_RNR_TIMER
        ));
        // A required attribute missing.
        assert!(!modify_qp_is_ok(S::Init, S::Rtr, QpType::Rc, rtr));
        assert!(!modify_qp_is_ok(S::Reset, S::Init, QpType::Ud, init));
        // An attribute the transition does not take.
        assert!(!modify_qp_is_ok(
            S::Reset,
            S::Init,
            QpType::Rc,
            init | M::SQ_PSN
        ));
        assert!(!modify_qp_is_ok(
            S::Init,
            S::Err,
            QpType::Rc,
            M::STATE | M::QKEY
        ));
        // IB_QP_CUR_STATE only from RTR, RTS, SQD, SQE.
        assert!(!modify_qp_is_ok(
            S::Init,
            S::Init,
            QpType::Rc,
            M::STATE | M::CUR_STATE
        ));
        assert!(modify_qp_is_ok(
            S::Rts,
            S::Rts,
            QpType::Rc,
            M::STATE | M::CUR_STATE
        ));
        // Anything to RESET and ERR, except RESET to ERR; no skipping states.
        assert!(modify_qp_is_ok(S::Rts, S::Reset, QpType::Rc, M::STATE));
        assert!(modify_qp_is_ok(S::Rtr, S::Err, QpType::Ud, M::STATE));
        assert!(!modify_qp_is_ok(S::Reset, S::Err, QpType::Rc, M::STATE));
        assert!(!modify_qp_is_ok(S::Init, S::Rts, QpType::Rc, rc_rts));
        assert!(modify_qp_is_ok(
            S::Rts,
            S::Sqd,
            QpType::Rc,
            M::STATE | M::EN_SQD_ASYNC_NOTIFY
        ));
        // The values of enum ib_qp_state.
        assert_eq!(QpState::try_from(3u8), Ok(S::Rts));
        assert_eq!(QpState::try_from(7u8), Err(EINVAL));
    }

    #[test]
    fn pd_with_qp_and_cq_with_qp_busy() -> Result {
        let dev = registered(1)?;
        let pd = Pd::alloc(&dev, ib_core_rs::kernel_owner!())?;
        let scq = cq(&dev)?;
        let rcq = cq(&dev)?;
        let q = qp(&pd, &scq, &rcq, None)?;
        assert_eq!(pd.usecnt(), 1);
        assert_eq!(scq.usecnt(), 1);
        assert_eq!(rcq.usecnt(), 1);
        let pd = match Pd::dealloc(pd) {
            Err(e) => {
                assert_eq!(e.err, EBUSY);
                e.obj
            }
            Ok(()) => return Err(EINVAL),
        };
        let scq = match Cq::destroy(scq) {
            Err(e) => {
                assert_eq!(e.err, EBUSY);
                e.obj
            }
            Ok(()) => return Err(EINVAL),
        };
        // Nothing was destroyed by the refused calls.
        assert_eq!(dev.data().destroyed.load(Relaxed), 0);
        assert_eq!(dev.restrack().total(), 4);
        assert!(Qp::destroy(q).is_ok());
        assert_eq!(pd.usecnt(), 0);
        assert_eq!(scq.usecnt(), 0);
        assert_eq!(rcq.usecnt(), 0);
        assert!(Cq::destroy(scq).is_ok());
        assert!(Cq::destroy(rcq).is_ok());
        assert!(Pd::dealloc(pd).is_ok());
        assert_eq!(dev.data().destroyed.load(Relaxed), 4);
        assert_eq!(dev.restrack().total(), 0);
        assert_eq!(Device::dealloc(dev), 0);
        Ok(())
    }

    #[test]
    fn same_cq_counted_twice_and_srq_used() -> Result {
        let dev = registered(1)?;
        let pd = Pd::alloc(&dev, ib_core_rs::kernel_owner!())?;
        let c = cq(&dev)?;
        let srq = Srq::create(
            &pd,
            &SrqInitAttr {
                max_wr: 4,
                max_sge: 1,
                srq_limit: 0,
            },
            None,
            ib_core_rs::kernel_owner!(),
        )?;
        assert_eq!(pd.usecnt(), 1);
        let q1 = qp(&pd, &c, &c, Some(&srq))?;
        let q2 = qp(&pd, &c, &c, None)?;
        assert_eq!(c.usecnt(), 4);
        assert_eq!(pd.usecnt(), 3);
        assert_eq!(srq.usecnt(), 1);
        assert_ne!(q1.qp_num(), q2.qp_num());
        let srq = match Srq::destroy(srq) {
            Err(e) => {
                assert_eq!(e.err, EBUSY);
                e.obj
            }
            Ok(()) => return Err(EINVAL),
        };
        assert!(Qp::destroy(q1).is_ok());
        assert_eq!(c.usecnt(), 2);
        assert_eq!(srq.usecnt(), 0);
        assert!(Srq::destroy(srq).is_ok());
        // Dropping the last reference destroys, too.
        drop(q2);
        assert_eq!(c.usecnt(), 0);
        assert_eq!(pd.usecnt(), 0);
        drop(c);
        drop(pd);
        assert_eq!(dev.data().destroyed.load(Relaxed), 5);
        assert_eq!(dev.restrack().total(), 0);
        assert_eq!(Device::dealloc(dev), 0);
        Ok(())
    }

    #[test]
    fn pd_with_mr_busy_and_mr_types() -> Result {
        let dev = registered(1)?;
        let pd = Pd::alloc(&dev, ib_core_rs::kernel_owner!())?;
        let dma = Mr::get_dma_mr(&pd, AccessFlags::LOCAL_WRITE, ib_core_rs::kernel_owner!())?;
        assert_eq!((dma.lkey(), dma.rkey()), (0x11, 0x22));
        assert_eq!(dma.mr_type(), MrType::Dma);
        assert_eq!(*dma.data(), 1);
        let frmr = Mr::alloc(&pd, MrType::MemReg, 32, ib_core_rs::kernel_owner!())?;
        assert_eq!((frmr.lkey(), frmr.rkey()), (0x33, 0x44));
        assert_eq!(*frmr.data(), 32);
        assert_eq!(
            Mr::alloc(&pd, MrType::Integrity, 1, ib_core_rs::kernel_owner!()).err(),
            Some(EINVAL)
        );
        assert_eq!(pd.usecnt(), 2);
        assert_eq!(dev.restrack().count(ResType::Mr), 2);
        let pd = match Pd::dealloc(pd) {
            Err(e) => {
                assert_eq!(e.err, EBUSY);
                e.obj
            }
            Ok(()) => return Err(EINVAL),
        };
        assert!(Mr::dereg(dma).is_ok());
        assert!(Mr::dereg(frmr).is_ok());
        assert_eq!(pd.usecnt(), 0);
        assert!(Pd::dealloc(pd).is_ok());
        assert_eq!(dev.restrack().total(), 0);
        assert_eq!(Device::dealloc(dev), 0);
        Ok(())
    }

    #[test]
    fn failed_create_leaves_no_trace() -> Result {
        let dev = registered(1)?;
        let pd = Pd::alloc(&dev, ib_core_rs::kernel_owner!())?;
        let c = cq(&dev)?;
        dev.data().fail_create_qp.store(true, Relaxed);
        assert_eq!(qp(&pd, &c, &c, None).err(), Some(ENOSPC));
        assert_eq!(pd.usecnt(), 0);
        assert_eq!(c.usecnt(), 0);
        assert_eq!(dev.restrack().count(ResType::Qp), 0);
        // Objects of another device are refused.
        let other = registered(1)?;
        let oc = cq(&other)?;
        dev.data().fail_create_qp.store(false, Relaxed);
        assert_eq!(qp(&pd, &c, &oc, None).err(), Some(EINVAL));
        assert_eq!(
            Cq::create(
                &dev,
                &CqInitAttr {
                    cqe: 0,
                    comp_vector: 0,
                    flags: 0
                },
                None,
                ib_core_rs::kernel_owner!()
            )
            .err(),
            Some(EINVAL)
        );
        drop(oc);
        drop(c);
        drop(pd);
        assert_eq!(dev.restrack().total(), 0);
        assert_eq!(Device::dealloc(other), 0);
        assert_eq!(Device::dealloc(dev), 0);
        Ok(())
    }

    #[test]
    fn data_path_reaches_driver() -> Result {
        let dev = registered(1)?;
        let pd = Pd::alloc(&dev, ib_core_rs::kernel_owner!())?;
        let comps = Arc::new(CompCounter(Atomic::new(0)), GFP_KERNEL)?;
        let c = Cq::create(
            &dev,
            &CqInitAttr {
                cqe: 16,
                comp_vector: 0,
                flags: 0,
            },
            Some(comps.clone()),
            ib_core_rs::kernel_owner!(),
        )?;
        let q = qp(&pd, &c, &c, None)?;
        let sge = [Sge {
            addr: 0x1000,
            length: 64,
            lkey: 0x11,
        }];
        let wr = SendWr {
            wr_id: 1,
            opcode: ib_core_rs::verbs::WrOpcode::Send,
            send_flags: 0,
            sg_list: &sge,
            ..Default::default()
        };
        c.req_notify(CqNotify::NextComp)?;
        q.post_send(&[wr, wr, wr])?;
        q.post_recv(&[RecvWr {
            wr_id: 9,
            sg_list: &sge,
        }])?;
        let d = dev.data();
        assert_eq!(d.notifies.load(Relaxed), 1);
        assert_eq!(d.posted_send.load(Relaxed), 3);
        assert_eq!(d.posted_recv.load(Relaxed), 1);
        // The completion handler ran once (the CQ was armed once).
        assert_eq!(comps.0.load(Relaxed), 1);
        let mut wc = [Wc::default(); 2];
        assert_eq!(c.poll(&mut wc)?, 2);
        assert_eq!(c.poll(&mut wc)?, 1);
        assert_eq!(c.poll(&mut wc)?, 0);
        assert_eq!(d.polls.load(Relaxed), 3);
        drop(q);
        drop(c);
        drop(pd);
        assert_eq!(Device::dealloc(dev), 0);
        Ok(())
    }

    #[test]
    fn qp_modify_and_query() -> Result {
        let dev = registered(1)?;
        let pd = Pd::alloc(&dev, ib_core_rs::kernel_owner!())?;
        let c = cq(&dev)?;
        let q = qp(&pd, &c, &c, None)?;
        assert_eq!(q.query()?.qp_state, QpState::Reset);
        let attr = QpAttr {
            qp_state: QpState::Init,
            port_num: 1,
            ..QpAttr::default()
        };
        q.modify(&attr, QpAttrMask::STATE | QpAttrMask::PORT)?;
        assert_eq!(q.query()?.qp_state, QpState::Init);
        // upstream _ib_modify_qp(): a port the device lacks is EINVAL.
        let bad = QpAttr {
            qp_state: QpState::Rtr,
            port_num: 2,
            ..QpAttr::default()
        };
        assert_eq!(
            q.modify(&bad, QpAttrMask::STATE | QpAttrMask::PORT),
            Err(EINVAL)
        );
        assert_eq!(q.query()?.qp_state, QpState::Init);
        for s in [QpState::Rtr, QpState::Rts] {
            q.modify(
                &QpAttr {
                    qp_state: s,
                    ..QpAttr::default()
                },
                QpAttrMask::STATE,
            )?;
        }
        assert_eq!(q.query()?.qp_state, QpState::Rts);
        assert!(Qp::destroy(q).is_ok());
        drop(c);
        drop(pd);
        assert_eq!(Device::dealloc(dev), 0);
        Ok(())
    }

    #[test]
    fn missing_verbs_are_eopnotsupp() -> Result {
        let ops = Ops::assemble(&[&Ops::of::<MinimalOps>()])?;
        let dev = Device::alloc(&ops, 1, Ok(MockDev::new(Step::None)))?;
        Device::register(&dev, c"mock_%d")?;
        assert_eq!(
            Pd::alloc(&dev, ib_core_rs::kernel_owner!()).err(),
            Some(EOPNOTSUPP)
        );
        assert_eq!(dev.restrack().total(), 0);
        assert_eq!(Device::dealloc(dev), 0);
        Ok(())
    }
}
