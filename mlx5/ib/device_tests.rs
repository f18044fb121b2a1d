// SPDX-License-Identifier: GPL-2.0

//! KUnit suites of the RDMA device against the simulator: registration of an InfiniBand and a
//! RoCE function through the core, unwind of every probe command, and kernel verbs through the
//! core checked against the simulator's resource tables.

use crate::dev::Mlx5Dev;
use crate::fwsim::fault::FaultAction;
use crate::fwsim::profile::{CONNECTX6_DX, CONNECTX7};
use crate::ib::device::Mlx5Ib;
use crate::ib::ops::{DEV_OPS, IB_PORT_OPS, ROCE_PORT_OPS};
use crate::ib::port::default_gid;
use crate::prm::opcode;
use crate::prm::status::Status;
use crate::simdev::SimFunction;
use ib_core_rs::attr::{Gid, LinkLayer as IbLinkLayer, PortState};
use ib_core_rs::device::{Device, Phase};
use ib_core_rs::driver::DriverId;
use ib_core_rs::ops::{DeviceOps, Op, Ops};
use ib_core_rs::registry;
use ib_core_rs::restrack::ResType;
use ib_core_rs::verbs::{
    AccessFlags, AhAttr, Counted, Cq, CqInitAttr, GlobalRoute, Mr, MrType, Pd, Qp, QpAttr,
    QpAttrMask, QpCap, QpInitAttr, QpState, QpType,
};
use kernel::{prelude::*, str::CString, sync::Arc};

fn sim(eth: bool) -> Result<Arc<SimFunction>> {
    SimFunction::one_port(fmt!("kunit.ib"), eth, 7)
}

fn ib_of(d: &Mlx5Dev) -> Result<&Arc<Device<Mlx5Ib>>> {
    d.ib().ok_or(ENODEV)
}

#[kunit_tests(mlx5_ib_rs_ib)]
mod tests {
    use super::*;

    #[test]
    fn ops_assembled_first_setter_wins() -> Result {
        for (ll, port) in [
            (IbLinkLayer::Infiniband, &IB_PORT_OPS),
            (IbLinkLayer::Ethernet, &ROCE_PORT_OPS),
        ] {
            let ops = crate::ib::ops::assemble_ops(ll)?;
            assert_eq!(ops.check_mandatory(), Ok(()));
            assert_eq!(ops.driver_id(), DriverId::Mlx5);
            assert_eq!(ops.uverbs_abi_ver(), 1);
            assert_eq!(ops.owner().map(|o| o.to_bytes()), Some(&b"mlx5_ib_rs"[..]));
            for op in [
                Op::QueryGid,
                Op::QueryPkey,
                Op::AllocPd,
                Op::CreateQp,
                Op::DeregMr,
            ] {
                assert!(ops.has(op));
            }
            // The kernel data path (cq.rs, qp/wr.rs).
            for op in [Op::PostSend, Op::PostRecv, Op::PollCq, Op::ReqNotifyCq] {
                assert!(ops.has(op));
            }
            // The port table alone has no driver id; the main table brings it.
            assert!(port.has(Op::QueryPort) && !DEV_OPS.has(Op::QueryPort));
        }
        // Assembled the other way round, the port table's ops still fill only empty slots.
        let ops = Ops::assemble(&[&IB_PORT_OPS, &DEV_OPS])?;
        assert_eq!(ops.driver_id(), DriverId::Mlx5);
        Ok(())
    }

    #[test]
    fn registers_ib_and_roce_functions() -> Result {
        let fib = sim(false)?;
        let feth = sim(true)?;
        let dib = Mlx5Dev::probe(fib.clone())?;
        let deth = Mlx5Dev::probe(feth.clone())?;
        for (d, eth) in [(&dib, false), (&deth, true)] {
            let ib = ib_of(d)?;
            assert_eq!(ib.phase(), Phase::Registered);
            let name = ib.name();
            assert!(name.as_bytes().starts_with(b"mlx5_"));
            let r = registry::get_by_name(name.as_bytes()).ok_or(ENODEV)?;
            assert_eq!(r.index(), ib.index());
            drop(r);
            assert_eq!(ib.ops().driver_id(), DriverId::Mlx5);
            assert_eq!(ib.ops().uverbs_abi_ver(), 1);
            // query_device: the attributes CAPS computed from the profile.
            let a = ib.attrs();
            let p = if eth { CONNECTX6_DX } else { CONNECTX7 };
            assert_eq!(a.vendor_id, 0x02c9);
            assert_eq!(a.vendor_part_id, u32::from(p.device_id));
            assert_eq!(a.max_qp, 1 << p.log_max_qp);
            assert_eq!(a.max_cq, 1 << p.log_max_cq);
            assert_eq!(a.max_cqe, (1 << p.log_max_cq_sz) - 1);
            assert_eq!(a.max_mr, 1 << p.log_max_mkey);
            assert_eq!(a.max_pd, 1 << p.log_max_pd);
            assert_eq!(a.node_guid, ib.data().node_guid);
            assert!(ib.ops().has(Op::GetDevFwStr));
            let fw = crate::ib::ops::Mlx5DevOps::get_dev_fw_str(ib)?;
            assert_eq!(fw.to_bytes(), ib.data().fw_ver()?.to_bytes());
            let imm = ib.port_immutable(1)?;
            assert_eq!(
                imm.link_layer,
                if eth {
                    IbLinkLayer::Ethernet
                } else {
                    IbLinkLayer::Infiniband
                }
            );
            assert_eq!(ib.get_cached_port_state(1)?, PortState::Active);
            assert_eq!(ib.get_cached_pkey(1, 0)?, 0xffff);
            let g0 = ib.query_gid(1, 0)?;
            if eth {
                let mac = ib.data().ports[0].mac.ok_or(EINVAL)?;
                assert_eq!(g0, Gid(default_gid(&mac)));
                assert_eq!(ib.query_gid(1, 1)?, g0);
                assert_eq!(ib.query_gid(1, 2), Err(ENOENT));
                // The device's RoCE address table holds v1 at 0 and v2 at 1.
                let e0 = feth.roce_addr(1, 0).ok_or(ENOENT)?;
                let e1 = feth.roce_addr(1, 1).ok_or(ENOENT)?;
                assert_eq!((e0.gid, e0.mac, e0.version), (g0.0, mac, 0));
                assert_eq!((e1.gid, e1.version), (g0.0, 2));
                assert_eq!(ib.get_cached_subnet_prefix(1)?, 0);
            } else {
                assert_eq!(g0.0, ib.data().ports[0].gids[0]);
                assert_eq!(&g0.0[..2], &[0xfe, 0x80]);
                assert_eq!(ib.get_cached_subnet_prefix(1)?, 0xfe80_0000_0000_0000);
                assert_eq!(ib.get_cached_lmc(1)?, 0);
            }
            // sysfs values of the driver group.
            let data = ib.data();
            let hca = CString::try_from_fmt(fmt!("MT{}", p.device_id))?;
            assert_eq!(data.hca_type()?.to_bytes(), hca.to_bytes());
            let board: &[u8] = if eth { b"RDMARS_CX6DX" } else { b"RDMARS_CX7" };
            assert_eq!(data.board_id()?.to_bytes(), board);
            assert_eq!(data.hw_rev()?.to_bytes(), b"0");
            assert_eq!(data.fw_pages(), (0, 0));
        }
        let n_ib = ib_of(&dib)?.name();
        assert_ne!(n_ib.as_bytes(), ib_of(&deth)?.name().as_bytes());
        drop(dib);
        drop(deth);
        assert!(registry::get_by_name(n_ib.as_bytes()).is_none());
        assert!(fib.counts().is_zero() && feth.counts().is_zero());
        assert!(feth.roce_addr(1, 0).is_none() && feth.roce_addr(1, 1).is_none());
        Ok(())
    }

    #[test]
    fn every_probe_command_failure_unwinds_registration_too() -> Result {
        for eth in [false, true] {
            let f = sim(eth)?;
            let before = registry::device_count();
            // The commands of probe alone (remove's are not counted).
            let s0 = f.stats().commands;
            let d = Mlx5Dev::probe(f.clone())?;
            let n = f.stats().commands - s0;
            drop(d);
            assert!(f.counts().is_zero());
            let mut tolerated = 0;
            for nth in 1..=n {
                f.with_faults(|p| {
                    p.fail_nth(
                        nth,
                        FaultAction::Fail {
                            status: Status::BAD_PARAM_ERR,
                            syndrome: 0x5f0000ff,
                        },
                    )
                });
                let r = Mlx5Dev::probe(f.clone());
                f.with_faults(|p| p.clear());
                match r {
                    Err(e) => assert_eq!(e, EINVAL),
                    // upstream __ib_cache_gid_add(): a failed add_gid leaves that GID out and
                    // the registration stands; the two default GIDs' SET_ROCE_ADDRESS are the
                    // commands of an Ethernet probe whose failure does not fail it.
                    Ok(d) => {
                        assert!(eth);
                        tolerated += 1;
                        drop(d);
                    }
                }
                assert!(f.counts().is_zero());
                assert_eq!(registry::device_count(), before);
                if eth {
                    assert!(f.roce_addr(1, 0).is_none() && f.roce_addr(1, 1).is_none());
                }
            }
            assert_eq!(tolerated, if eth { 2 } else { 0 });
            // A timeout in the GID reads (IB) fails the probe; SET_ROCE_ADDRESS timing out at
            // IB_REG (Ethernet: the core's add_gid) leaves the GIDs out, the device registered.
            if eth {
                f.with_faults(|p| p.fail_opcode(opcode::SET_ROCE_ADDRESS, FaultAction::Timeout));
                let d = Mlx5Dev::probe(f.clone());
                f.with_faults(|p| p.clear());
                assert_eq!(registry::device_count(), before + 1);
                drop(d?);
            } else {
                f.with_faults(|p| p.fail_opcode(opcode::QUERY_HCA_VPORT_GID, FaultAction::Timeout));
                assert_eq!(Mlx5Dev::probe(f.clone()).err(), Some(ETIMEDOUT));
                f.with_faults(|p| p.clear());
            }
            assert!(f.counts().is_zero());
            assert_eq!(registry::device_count(), before);
        }
        Ok(())
    }

    #[test]
    fn kernel_verbs_through_the_core() -> Result {
        for eth in [false, true] {
            let f = sim(eth)?;
            let d = Mlx5Dev::probe(f.clone())?;
            let ib = ib_of(&d)?;
            let base = f.counts();
            let owner = || ib_core_rs::kernel_owner!();
            let pd = Pd::alloc(ib, owner())?;
            assert_eq!(f.counts().pd, base.pd + 1);
            let cq = Cq::create(
                ib,
                &CqInitAttr {
                    cqe: 100,
                    comp_vector: 0,
                    flags: 0,
                },
                None,
                owner(),
            )?;
            assert_eq!(cq.data().log_size, 7);
            assert_eq!(
                Cq::create(
                    ib,
                    &CqInitAttr {
                        cqe: 1,
                        comp_vector: 1,
                        flags: 0
                    },
                    None,
                    owner()
                )
                .err(),
                Some(EINVAL)
            );
            assert_eq!(
                Cq::create(
                    ib,
                    &CqInitAttr {
                        cqe: u32::MAX - 1,
                        comp_vector: 0,
                        flags: 0
                    },
                    None,
                    owner()
                )
                .err(),
                Some(EINVAL)
            );
            assert_eq!(f.counts().cq, 1);
            let cap = QpCap {
                max_send_wr: 64,
                max_recv_wr: 64,
                max_send_sge: 2,
                max_recv_sge: 2,
                max_inline_data: 0,
            };
            let init = |t| QpInitAttr {
                send_cq: &cq,
                recv_cq: &cq,
                srq: None,
                qp_type: t,
                cap,
                sq_sig_all: false,
                event_handler: None,
            };
            let rc = Qp::create(&pd, &init(QpType::Rc), owner())?;
            let ud = Qp::create(&pd, &init(QpType::Ud), owner())?;
            assert_eq!(f.counts().qp, 2);
            assert_eq!(ib.restrack().count(ResType::Qp), 2);
            // calc_send_wqe(): RC 16 + 120 + 2 * 16 -> 192 bytes; 64 WQEs -> 16 KiB = 2^8 BBs.
            // set_rq_size(): 2 * 16 -> 32-byte stride, 64 WQEs.
            assert_eq!((rc.data().log_sq_size, rc.data().log_rq_size), (8, 6));
            // UD: 16 + 48 + 32 -> 128 bytes; 64 WQEs -> 8 KiB = 2^7 BBs.
            assert_eq!(ud.data().log_sq_size, 7);
            assert_eq!(rc.query()?.qp_state, QpState::Reset);

            // RC: RST -> INIT -> RTR -> RTS with real attributes.
            let m = |a: &[QpAttrMask]| a.iter().fold(QpAttrMask(0), |x, y| x | *y);
            let to_init = QpAttr {
                qp_state: QpState::Init,
                port_num: 1,
                pkey_index: 0,
                qp_access_flags: (AccessFlags::REMOTE_READ.0 | AccessFlags::REMOTE_WRITE.0),
                ..QpAttr::default()
            };
            let init_mask = m(&[QpAttrMask::STATE, QpAttrMask::PORT, QpAttrMask::PKEY_INDEX]);
            // A required attribute missing: EINVAL (ib_modify_qp_is_ok()).
            assert_eq!(rc.modify(&to_init, init_mask), Err(EINVAL));
            rc.modify(&to_init, init_mask | QpAttrMask::ACCESS_FLAGS)?;
            // Illegal transition INIT -> RTS.
            let rts_only = QpAttr {
                qp_state: QpState::Rts,
                ..QpAttr::default()
            };
            assert_eq!(rc.modify(&rts_only, QpAttrMask::STATE), Err(EINVAL));
            let gid0 = ib.query_gid(1, 0)?;
            let ah = AhAttr {
                dlid: if eth { 0 } else { 0x17 },
                sl: 3,
                port_num: 1,
                grh: if eth {
                    Some(GlobalRoute {
                        dgid: gid0,
                        flow_label: 0,
                        sgid_index: 1,
                        hop_limit: 64,
                        traffic_class: 0,
                    })
                } else {
                    None
                },
                dmac: if eth {
                    [0x02, 0, 0, 0, 0, 0x42]
                } else {
                    [0; 6]
                },
            };
            let to_rtr = QpAttr {
                qp_state: QpState::Rtr,
                path_mtu: 3,
                dest_qp_num: ud.qp_num(),
                rq_psn: 0x1234,
                max_dest_rd_atomic: 4,
                min_rnr_timer: 12,
                ah_attr: ah,
                ..QpAttr::default()
            };
            let rtr_mask = m(&[
                QpAttrMask::STATE,
                QpAttrMask::AV,
                QpAttrMask::PATH_MTU,
                QpAttrMask::DEST_QPN,
                QpAttrMask::RQ_PSN,
                QpAttrMask::MAX_DEST_RD_ATOMIC,
                QpAttrMask::MIN_RNR_TIMER,
            ]);
            rc.modify(&to_rtr, rtr_mask)?;
            let to_rts = QpAttr {
                qp_state: QpState::Rts,
                sq_psn: 0x4321,
                timeout: 14,
                retry_cnt: 7,
                rnr_retry: 7,
                max_rd_atomic: 2,
                ..QpAttr::default()
            };
            let rts_mask = m(&[
                QpAttrMask::STATE,
                QpAttrMask::SQ_PSN,
                QpAttrMask::TIMEOUT,
                QpAttrMask::RETRY_CNT,
                QpAttrMask::RNR_RETRY,
                QpAttrMask::MAX_QP_RD_ATOMIC,
            ]);
            rc.modify(&to_rts, rts_mask)?;
            let q = rc.query()?;
            assert_eq!(q.qp_state, QpState::Rts);
            assert_eq!((q.port_num, q.pkey_index), (1, 0));
            assert_eq!(q.qp_access_flags, to_init.qp_access_flags);
            assert_eq!((q.path_mtu, q.dest_qp_num), (3, ud.qp_num()));
            assert_eq!((q.rq_psn, q.sq_psn), (0x1234, 0x4321));
            assert_eq!((q.max_dest_rd_atomic, q.max_rd_atomic), (4, 2));
            assert_eq!((q.min_rnr_timer, q.timeout), (12, 14));
            assert_eq!((q.retry_cnt, q.rnr_retry), (7, 7));
            assert_eq!(q.ah_attr.sl, 3);
            if eth {
                assert_eq!(
                    q.ah_attr.grh.map(|g| (g.dgid, g.sgid_index, g.hop_limit)),
                    Some((gid0, 1, 64))
                );
                assert_eq!(q.ah_attr.dmac, ah.dmac);
            } else {
                assert_eq!(q.ah_attr.dlid, 0x17);
                assert!(q.ah_attr.grh.is_none());
            }
            // -> ERR -> RST, then the attributes are gone.
            rc.modify(
                &QpAttr {
                    qp_state: QpState::Err,
                    ..QpAttr::default()
                },
                QpAttrMask::STATE,
            )?;
            assert_eq!(rc.query()?.qp_state, QpState::Err);
            rc.modify(&QpAttr::default(), QpAttrMask::STATE)?;
            assert_eq!(rc.query()?.qp_state, QpState::Reset);

            // UD: RST -> INIT (Q_Key) -> RTR -> RTS.
            ud.modify(
                &QpAttr {
                    qp_state: QpState::Init,
                    port_num: 1,
                    qkey: 0x1111_0000,
                    ..QpAttr::default()
                },
                init_mask | QpAttrMask::QKEY,
            )?;
            ud.modify(
                &QpAttr {
                    qp_state: QpState::Rtr,
                    ..QpAttr::default()
                },
                QpAttrMask::STATE,
            )?;
            assert_eq!(
                ud.modify(
                    &QpAttr {
                        qp_state: QpState::Rts,
                        ..QpAttr::default()
                    },
                    QpAttrMask::STATE
                ),
                Err(EINVAL)
            );
            ud.modify(
                &QpAttr {
                    qp_state: QpState::Rts,
                    sq_psn: 77,
                    ..QpAttr::default()
                },
                QpAttrMask::STATE | QpAttrMask::SQ_PSN,
            )?;
            let q = ud.query()?;
            assert_eq!(
                (q.qp_state, q.qkey, q.sq_psn, q.port_num),
                (QpState::Rts, 0x1111_0000, 77, 1)
            );

            // MRs.
            let dma = Mr::get_dma_mr(&pd, AccessFlags::LOCAL_WRITE, owner())?;
            let frmr = Mr::alloc(&pd, MrType::MemReg, 32, owner())?;
            assert_eq!(f.counts().mkey, 2);
            assert_ne!(dma.lkey(), frmr.lkey());
            assert_eq!(dma.lkey() >> 8, dma.data().index);
            assert_eq!(
                Mr::alloc(&pd, MrType::SgGaps, 32, owner()).err(),
                Some(EOPNOTSUPP)
            );

            // A kernel CQ with nothing completed polls empty.
            assert_eq!(cq.poll(&mut []), Ok(0));

            // EBUSY from the core while users remain; nothing reaches the device then.
            let pd = match Pd::dealloc(pd) {
                Err(e) => {
                    assert_eq!(e.err, EBUSY);
                    e.obj
                }
                Ok(()) => return Err(EINVAL),
            };
            let cq = match Cq::destroy(cq) {
                Err(e) => {
                    assert_eq!(e.err, EBUSY);
                    e.obj
                }
                Ok(()) => return Err(EINVAL),
            };
            assert_eq!(f.counts().pd, base.pd + 1);
            assert_eq!(f.counts().cq, 1);

            // A refused DESTROY_QP hands the QP back and the device keeps it.
            f.with_faults(|p| p.fail_opcode(opcode::DESTROY_QP, FaultAction::Timeout));
            let rc = match Qp::destroy(rc) {
                Err(e) => {
                    assert_eq!(e.err, ETIMEDOUT);
                    e.obj
                }
                Ok(()) => return Err(EINVAL),
            };
            f.with_faults(|p| p.clear());
            assert_eq!(f.counts().qp, 2);

            assert!(Mr::dereg(dma).is_ok() && Mr::dereg(frmr).is_ok());
            assert!(Qp::destroy(rc).is_ok() && Qp::destroy(ud).is_ok());
            assert!(Cq::destroy(cq).is_ok());
            assert!(Pd::dealloc(pd).is_ok());
            assert_eq!(f.counts().mkey, 0);
            assert_eq!((f.counts().qp, f.counts().cq), (0, 0));
            assert_eq!(f.counts().pd, base.pd);
            assert_eq!(ib.restrack().total(), 0);
            drop(d);
            assert!(f.counts().is_zero());
        }
        Ok(())
    }

    #[test]
    fn verbs_create_failures_leave_nothing() -> Result {
        let f = sim(false)?;
        let d = Mlx5Dev::probe(f.clone())?;
        let ib = ib_of(&d)?;
        let owner = || ib_core_rs::kernel_owner!();
        let base = f.counts();
        let fail = |op| {
            f.with_faults(|p| {
                p.fail_opcode(
                    op,
                    FaultAction::Fail {
                        status: Status::LIM_ERR,
                        syndrome: 0x5f0000ff,
                    },
                )
            })
        };
        fail(opcode::ALLOC_PD);
        assert_eq!(Pd::alloc(ib, owner()).err(), Some(ENOMEM));
        f.with_faults(|p| p.clear());
        let pd = Pd::alloc(ib, owner())?;
        fail(opcode::CREATE_CQ);
        assert_eq!(
            Cq::create(
                ib,
                &CqInitAttr {
                    cqe: 8,
                    comp_vector: 0,
                    flags: 0
                },
                None,
                owner()
            )
            .err(),
            Some(ENOMEM)
        );
        f.with_faults(|p| p.clear());
        let cq = Cq::create(
            ib,
            &CqInitAttr {
                cqe: 8,
                comp_vector: 0,
                flags: 0,
            },
            None,
            owner(),
        )?;
        fail(opcode::CREATE_QP);
        let init = QpInitAttr {
            send_cq: &cq,
            recv_cq: &cq,
            srq: None,
            qp_type: QpType::Rc,
            cap: QpCap {
                max_send_wr: 4,
                max_recv_wr: 4,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            event_handler: None,
        };
        assert_eq!(Qp::create(&pd, &init, owner()).err(), Some(ENOMEM));
        f.with_faults(|p| p.clear());
        fail(opcode::CREATE_MKEY);
        assert_eq!(
            Mr::get_dma_mr(&pd, AccessFlags::LOCAL_WRITE, owner()).err(),
            Some(ENOMEM)
        );
        f.with_faults(|p| p.clear());
        // A QP too big for the device is refused before any command.
        let big = QpInitAttr {
            cap: QpCap {
                max_send_wr: 1 << 30,
                ..init.cap
            },
            ..init
        };
        assert!(Qp::create(&pd, &big, owner()).is_err());
        assert_eq!((cq.usecnt(), pd.usecnt()), (0, 0));
        assert_eq!(ib.restrack().total(), 2);
        assert_eq!((f.counts().qp, f.counts().mkey), (0, 0));
        assert!(Cq::destroy(cq).is_ok() && Pd::dealloc(pd).is_ok());
        assert_eq!(f.counts().pd, base.pd);
        drop(d);
        assert!(f.counts().is_zero());
        Ok(())
    }
}
