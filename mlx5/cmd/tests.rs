// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `mlx5_ib_rs_cmd`: every typed command against the simulator, success and the
//! errno of a firmware refusal, with the simulator's resource counts back to zero.

use super::cq::{CqeSize, CreateCq, DestroyCq, QueryCq};
use super::qp::{
    CreateQp, DestroyQp, Init2Rtr, ModifyQp, QpServiceType, QpState, QpcAttrs, QueryQp, RqType,
    Rst2Init, Rtr2Rts, ToErr, ToRst,
};
use super::query::{QueryHcaCap, QueryHcaVportGid, TableIndex};
use super::reg::{AccessReg, Paos, PortStatus};
use super::res::{
    AllocPd, AllocTransportDomain, AllocUar, CreateMkey, DeallocPd, DeallocTransportDomain,
    DeallocUar, DestroyMkey, MkeyAccess, MkeyTranslation, RoceAddr, RoceL3Type, RoceVersion,
    SetRoceAddress,
};
use super::{exec, QueueBuf};
use crate::hw::{CapType, CAP_BYTES};
use crate::simdev::SimFunction;
use kernel::{prelude::*, sync::Arc};

fn sim(eth: bool) -> Result<Arc<SimFunction>> {
    SimFunction::one_port(fmt!("kunit.cmd"), eth, 5)
}

#[kunit_tests(mlx5_ib_rs_cmd)]
mod suite {
    use super::*;

    #[test]
    fn numbered_objects_round_trip() -> Result {
        let f = sim(false)?;
        let hw = &*f;
        let pd = exec(hw, &AllocPd { uid: 0 })?;
        let uar = exec(hw, &AllocUar { uid: 0 })?;
        let td = exec(hw, &AllocTransportDomain { uid: 0 })?;
        let c = f.counts();
        assert_eq!((c.pd, c.uar, c.td), (1, 1, 1));
        exec(hw, &DeallocTransportDomain { id: td, uid: 0 })?;
        exec(hw, &DeallocUar { id: uar, uid: 0 })?;
        exec(hw, &DeallocPd { id: pd, uid: 0 })?;
        // A stale number: BAD_RES_ERR -> EINVAL.
        assert_eq!(exec(hw, &DeallocPd { id: pd, uid: 0 }), Err(EINVAL));
        assert!(f.counts().is_zero());
        Ok(())
    }

    #[test]
    fn caps_and_tables() -> Result {
        let ib = sim(false)?;
        let page = exec(&*ib, &QueryHcaCap(CapType::General))?;
        assert_eq!(page.len(), CAP_BYTES);
        assert_eq!(
            Some(&page[..]),
            crate::hw::Mlx5Hw::caps(&*ib, CapType::General)
        );
        // No RoCE page on an InfiniBand function: BAD_PARAM_ERR.
        assert_eq!(exec(&*ib, &QueryHcaCap(CapType::Roce)).err(), Some(EINVAL));
        let one = exec(
            &*ib,
            &QueryHcaVportGid {
                port: 1,
                index: TableIndex::One(0),
            },
        )?;
        assert_eq!(one.len(), 1);
        assert_eq!(one[0][0], 0xfe);
        // Index beyond the table.
        assert_eq!(
            exec(
                &*ib,
                &QueryHcaVportGid {
                    port: 1,
                    index: TableIndex::One(8),
                },
            )
            .err(),
            Some(EINVAL)
        );
        Ok(())
    }

    #[test]
    fn paos_write_takes_the_port_down() -> Result {
        let f = sim(true)?;
        let hw = &*f;
        let read = || {
            exec(
                hw,
                &AccessReg::read(Paos {
                    port: 1,
                    admin_status: None,
                }),
            )
        };
        assert_eq!(read()?.admin, PortStatus::Up);
        exec(
            hw,
            &AccessReg::write(Paos {
                port: 1,
                admin_status: Some(PortStatus::Down),
            }),
        )?;
        assert_eq!(read()?.admin, PortStatus::Down);
        assert_eq!(read()?.oper, 2);
        exec(
            hw,
            &AccessReg::write(Paos {
                port: 1,
                admin_status: Some(PortStatus::Up),
            }),
        )?;
        assert_eq!(read()?.admin, PortStatus::Up);
        Ok(())
    }

    #[test]
    fn cq_create_query_destroy() -> Result {
        let f = sim(false)?;
        let hw = &*f;
        let uar = exec(hw, &AllocUar { uid: 0 })?;
        let pas = [0x10_0000u64, 0x20_0000];
        let cq = |log| CreateCq {
            buf: QueueBuf {
                uid: 0,
                log_page_size: 0,
                page_offset: 0,
                dbr_addr: 0x3000,
                pas: &pas,
            },
            log_cq_size: log,
            cqe_size: CqeSize::B64,
            uar_page: uar,
            eqn: 0,
            compression: None,
            overrun_ignore: false,
        };
        let cqn = exec(hw, &cq(6))?;
        let ctx = exec(hw, &QueryCq { cqn })?;
        assert_eq!((ctx.log_cq_size, ctx.uar_page, ctx.status), (6, uar, 0));
        // Beyond log_max_cq_sz (22): LIM_ERR -> ENOMEM.
        assert_eq!(exec(hw, &cq(23)).err(), Some(ENOMEM));
        // The UAR is in use by the CQ: RES_BUSY -> EBUSY.
        assert_eq!(exec(hw, &DeallocUar { id: uar, uid: 0 }), Err(EBUSY));
        exec(hw, &DestroyCq { cqn, uid: 0 })?;
        exec(hw, &DeallocUar { id: uar, uid: 0 })?;
        assert!(f.counts().is_zero());
        Ok(())
    }

    #[test]
    fn qp_lifecycle_and_transitions() -> Result {
        let f = sim(false)?;
        let hw = &*f;
        let pd = exec(hw, &AllocPd { uid: 0 })?;
        let uar = exec(hw, &AllocUar { uid: 0 })?;
        let pas = [0x10_0000u64];
        let cqn = exec(
            hw,
            &CreateCq {
                buf: QueueBuf {
                    uid: 0,
                    log_page_size: 0,
                    page_offset: 0,
                    dbr_addr: 0x3000,
                    pas: &pas,
                },
                log_cq_size: 4,
                cqe_size: CqeSize::B64,
                uar_page: uar,
                eqn: 0,
                compression: None,
                overrun_ignore: false,
            },
        )?;
        let (qpn, _) = exec(
            hw,
            &CreateQp {
                buf: QueueBuf {
                    uid: 0,
                    log_page_size: 0,
                    page_offset: 0,
                    dbr_addr: 0x4000,
                    pas: &pas,
                },
                st: QpServiceType::Rc,
                pd,
                sq: Some((cqn, 4)),
                rq: RqType::Regular {
                    cqn,
                    log_size: 4,
                    log_stride: 2,
                },
                uar_page: uar,
                user_index: 0,
                wq_signature: false,
                ece: 0,
                ts_format: 0,
            },
        )?;
        let info = exec(hw, &QueryQp { qpn })?;
        assert_eq!(
            (info.state, info.st, info.pd),
            (QpState::Rst, QpServiceType::Rc, pd)
        );
        // RTR2RTS from RST is illegal: BAD_RES_STATE_ERR -> EINVAL, nothing changes.
        assert_eq!(
            exec(hw, &ModifyQp::<Rtr2Rts>::new(qpn, QpcAttrs::default())),
            Err(EINVAL)
        );
        exec(
            hw,
            &ModifyQp::<Rst2Init>::new(
                qpn,
                QpcAttrs {
                    port: Some(1),
                    pkey_index: Some(0),
                    rre_rwe_rae: Some((true, true, false)),
                    ..QpcAttrs::default()
                },
            ),
        )?;
        exec(
            hw,
            &ModifyQp::<Init2Rtr>::new(
                qpn,
                QpcAttrs {
                    mtu: Some(5),
                    log_msg_max: Some(30),
                    remote_qpn: Some(0x123),
                    next_rcv_psn: Some(7),
                    rlid: Some(3),
                    port: Some(1),
                    ..QpcAttrs::default()
                },
            ),
        )?;
        exec(
            hw,
            &ModifyQp::<Rtr2Rts>::new(
                qpn,
                QpcAttrs {
                    next_send_psn: Some(9),
                    retry_count: Some(7),
                    rnr_retry: Some(7),
                    ack_timeout: Some(14),
                    ..QpcAttrs::default()
                },
            ),
        )?;
        let info = exec(hw, &QueryQp { qpn })?;
        assert_eq!(info.state, QpState::Rts);
        assert_eq!((info.remote_qpn, info.next_rcv_psn), (0x123, 7));
        assert_eq!((info.next_send_psn, info.mtu, info.port), (9, 5, 1));
        // The CQ is in use: EBUSY.
        assert_eq!(exec(hw, &DestroyCq { cqn, uid: 0 }), Err(EBUSY));
        exec(hw, &ModifyQp::<ToErr>::new(qpn, QpcAttrs::default()))?;
        assert_eq!(exec(hw, &QueryQp { qpn })?.state, QpState::Err);
        exec(hw, &ModifyQp::<ToRst>::new(qpn, QpcAttrs::default()))?;
        assert_eq!(exec(hw, &QueryQp { qpn })?.state, QpState::Rst);
        exec(hw, &DestroyQp { qpn, uid: 0 })?;
        exec(hw, &DestroyCq { cqn, uid: 0 })?;
        exec(hw, &DeallocUar { id: uar, uid: 0 })?;
        exec(hw, &DeallocPd { id: pd, uid: 0 })?;
        assert!(f.counts().is_zero());
        Ok(())
    }

    #[test]
    fn mkeys() -> Result {
        let f = sim(false)?;
        let hw = &*f;
        let pd = exec(hw, &AllocPd { uid: 0 })?;
        let dma = exec(
            hw,
            &CreateMkey {
                uid: 0,
                pd,
                access: MkeyAccess {
                    local_write: true,
                    ..MkeyAccess::default()
                },
                key_byte: 0x42,
                translation: MkeyTranslation::Pa,
            },
        )?;
        assert_eq!(dma.key, dma.index << 8 | 0x42);
        let pages = [0x10_0000u64, 0x10_1000, 0x10_2000];
        let mr = exec(
            hw,
            &CreateMkey {
                uid: 0,
                pd,
                access: MkeyAccess {
                    remote_read: true,
                    remote_write: true,
                    local_write: true,
                    remote_atomic: false,
                },
                key_byte: 0,
                translation: MkeyTranslation::Mtt {
                    start: 0x7000_0000,
                    len: 3 * 4096,
                    log_page_size: 12,
                    pages: &pages,
                    room: 0,
                },
            },
        )?;
        assert_ne!(mr.index, dma.index);
        assert_eq!(f.counts().mkey, 2);
        // The PD is in use: EBUSY.
        assert_eq!(exec(hw, &DeallocPd { id: pd, uid: 0 }), Err(EBUSY));
        exec(
            hw,
            &DestroyMkey {
                id: mr.index,
                uid: 0,
            },
        )?;
        exec(
            hw,
            &DestroyMkey {
                id: dma.index,
                uid: 0,
            },
        )?;
        exec(hw, &DeallocPd { id: pd, uid: 0 })?;
        assert!(f.counts().is_zero());
        Ok(())
    }

    #[test]
    fn roce_addresses() -> Result {
        let f = sim(true)?;
        let hw = &*f;
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&[192, 0, 2, 1]);
        let entry = RoceAddr {
            gid,
            mac: [0x0c, 0x42, 0xa1, 0, 0, 1],
            vlan: Some(5),
            version: RoceVersion::V2,
            l3_type: RoceL3Type::Ipv4,
        };
        let set = |index, entry| SetRoceAddress {
            index,
            vhca_port: 0,
            entry,
        };
        exec(hw, &set(1, Some(entry)))?;
        exec(hw, &set(1, None))?;
        // Beyond roce_address_table_size (256).
        assert_eq!(exec(hw, &set(256, Some(entry))), Err(EINVAL));
        // No RoCE address table on an InfiniBand function.
        let ib = sim(false)?;
        assert_eq!(exec(&*ib, &set(0, Some(entry))), Err(EINVAL));
        Ok(())
    }
}
