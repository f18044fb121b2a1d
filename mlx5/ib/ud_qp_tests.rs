// SPDX-License-Identifier: GPL-2.0

//! KUnit suite of the IPoIB UD QPs (`crate::ib::ud_qp`), opened through the core's
//! `open_ud_qp`: datagrams between the UD QPs of two simulated InfiniBand functions on one
//! fabric, unicast and to a multicast group the embedded SM made.

use crate::ib::gsi;
use crate::ib::ud_qp::{MAX_PAYLOAD, SEND_SLOTS};
use ib_core_rs::attr::Gid;
use ib_core_rs::device::Device;
use ib_core_rs::ib_device::IbDevice;
use ib_core_rs::ipoib::MCAST_QPN;
use ib_core_rs::mad::Mad;
use ib_core_rs::mad_qp::{MadDest, MadGrh, MadQpCompletion, MadQpNotify, QP1_QKEY};
use ib_core_rs::sa::{
    McMemberRec, MC_FLOW_LABEL, MC_JOIN_STATE, MC_MGID, MC_PKEY, MC_PORT_GID, MC_QKEY, MC_SL,
    MC_TRAFFIC_CLASS,
};
use ib_core_rs::ud_qp::{UdCompletion, UdDest, UdQp, UdQpConfig, UdQpNotify, UdRecvInfo};
use ib_core_rs::verbs::WcStatus;
use kernel::new_spinlock_irq;
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::time::{delay::fsleep, Delta};

/// The Q_Key of the QPs and of the group.
const QKEY: u32 = 0x0b1b;
/// IPoIB's default payload (a 2048-byte IB MTU less its 4-byte header).
const PAYLOAD: u32 = 2044;

struct Nothing;

impl UdQpNotify for Nothing {
    fn notify(&self) {}
}

impl MadQpNotify for Nothing {
    fn notify(&self) {}
}

/// A datagram of `len` bytes, `seed` its first.
fn datagram(len: usize, seed: u8) -> Result<KVec<u8>> {
    let mut v = KVec::with_capacity(len, GFP_KERNEL)?;
    for i in 0..len {
        v.push(seed.wrapping_add(i as u8), GFP_KERNEL)?;
    }
    Ok(v)
}

/// Polls `q` (`ms` milliseconds at most) for the next receive (`recv`) or send completion;
/// the other kind is dropped. Each poll runs under a spinlock with interrupts off (lockdep
/// reports a sleeping lock taken there).
fn wait(q: &Arc<dyn UdQp>, recv: bool, ms: u32) -> Option<UdCompletion> {
    let atomic = KBox::pin_init(new_spinlock_irq!(()), GFP_KERNEL).ok()?;
    for _ in 0..ms.div_ceil(10) {
        let mut got = None;
        let guard = atomic.lock();
        q.poll(&mut |c| {
            let is_recv = matches!(c, UdCompletion::Recv { .. });
            if got.is_none() && is_recv == recv {
                got = Some(c);
            }
        });
        drop(guard);
        if got.is_some() {
            return got;
        }
        fsleep(Delta::from_millis(10));
    }
    None
}

/// The next datagram `q` receives within `ms` milliseconds.
fn recv(q: &Arc<dyn UdQp>, ms: u32) -> Option<(KVec<u8>, UdRecvInfo)> {
    match wait(q, true, ms)? {
        UdCompletion::Recv { data, info } => Some((data, info)),
        UdCompletion::Send { .. } => None,
    }
}

/// Every datagram `q` receives within `ms` milliseconds, or until `n` came.
fn recv_all(q: &Arc<dyn UdQp>, n: usize, ms: u32) -> Result<KVec<KVec<u8>>> {
    let mut got = KVec::new();
    for _ in 0..ms.div_ceil(10) {
        let mut r = Ok(());
        q.poll(&mut |c| {
            if let UdCompletion::Recv { data, .. } = c {
                r = r.and(got.push(data, GFP_KERNEL).map_err(|_| ENOMEM));
            }
        });
        r?;
        if got.len() >= n {
            break;
        }
        fsleep(Delta::from_millis(10));
    }
    Ok(got)
}

/// The status of `q`'s next send completion.
fn sent(q: &Arc<dyn UdQp>) -> Option<(u64, WcStatus)> {
    match wait(q, false, 2000)? {
        UdCompletion::Send { wr_id, status } => Some((wr_id, status)),
        UdCompletion::Recv { .. } => None,
    }
}

/// Joins `mgid` for port 1 of `ib` as a full member through the embedded SM's SA (an
/// MCMemberRecord SubnAdmSet from the port's QP1, which creates the group), as an IPoIB
/// interface joins its broadcast group: the group's MLID.
fn join(ib: &Arc<Device<crate::ib::device::Mlx5Ib>>, mgid: &Gid) -> Result<u16> {
    let port = Device::query_port(ib, 1)?;
    let rec = McMemberRec {
        mgid: mgid.0,
        port_gid: ib.query_gid(1, 0)?.0,
        qkey: QKEY,
        pkey: 0xffff,
        join_state: 1,
        ..McMemberRec::default()
    };
    let mask = MC_MGID
        | MC_PORT_GID
        | MC_QKEY
        | MC_PKEY
        | MC_SL
        | MC_FLOW_LABEL
        | MC_TRAFFIC_CLASS
        | MC_JOIN_STATE;
    let mut m = Mad::zeroed();
    // Base version 1, class SubnAdm, class version 2, method Set; TID; MCMemberRecord.
    m.0[..4].copy_from_slice(&[1, 0x03, 2, 0x02]);
    m.0[8..16].copy_from_slice(&0x1b1bu64.to_be_bytes());
    m.0[16..18].copy_from_slice(&0x38u16.to_be_bytes());
    m.0[48..56].copy_from_slice(&mask.to_be_bytes());
    m.0[56..108].copy_from_slice(&rec.pack());
    let n: Arc<dyn MadQpNotify> = Arc::new(Nothing, GFP_KERNEL)?;
    let qp1 = gsi::open(ib, 1, 1, n)?;
    let to_sa = MadDest {
        dlid: u16::try_from(port.sm_lid).map_err(|_| EINVAL)?,
        remote_qpn: 1,
        remote_qkey: QP1_QKEY,
        ..MadDest::default()
    };
    qp1.post_send(&m, 256, &to_sa, 1)?;
    for _ in 0..200 {
        let mut answer = None;
        qp1.poll(&mut |c| {
            if let MadQpCompletion::Recv { mad, .. } = c {
                answer = Some(mad);
            }
        });
        if let Some(a) = answer {
            // SubnAdmGetResp, status 0.
            if a.0[3..6] != [0x81, 0, 0] {
                pr_err!("udqp: SA answer {:x?}\n", &a.0[..8]);
                return Err(EPROTO);
            }
            let mut r = [0u8; 52];
            r.copy_from_slice(&a.0[56..108]);
            return Ok(McMemberRec::unpack(&r).mlid);
        }
        fsleep(Delta::from_millis(10));
    }
    Err(ETIMEDOUT)
}

#[kunit_tests(mlx5_ib_rs_udqp)]
mod tests {
    use super::*;
    use crate::dev::Mlx5Dev;
    use crate::fwsim::profile::{LinkLayer as SimLinkLayer, CONNECTX7};
    use crate::fwsim::Config;
    use crate::simdev::SimFunction;
    use kernel::str::CString;

    fn lid(d: &Mlx5Dev) -> Result<u16> {
        let ib = d.ib().ok_or(ENODEV)?;
        u16::try_from(Device::query_port(ib, 1)?.lid).map_err(|_| EINVAL)
    }

    /// Two InfiniBand functions of one fabric, a UD QP each from the core's `open_ud_qp`:
    /// a bad `max_payload` is `EINVAL`; a unicast datagram from A arrives at B whole with A's
    /// LID and QPN and no GRH; a send longer than `max_payload` is `EMSGSIZE`; with every
    /// send slot taken (nothing polled) a send is `ENOBUFS`, and works again once the
    /// completions are polled; a datagram to a group B's QP is attached to arrives with the
    /// group's GID as its DGID and A's GID as its SGID, after the detach it does not (and a
    /// second detach is `EINVAL`). A UD QP dropped after its device was unregistered goes
    /// cleanly; nothing the functions hold is left afterwards.
    /// (Loaded with `mad_qps=1` the MAD layer's own QP1 would take the SA's answer.)
    #[test]
    fn datagrams_between_two_functions() -> Result {
        let mut step = 0;
        let r = run(&mut step);
        if let Err(e) = r {
            pr_err!("udqp: step {} failed: {:?}\n", step, e);
        }
        r
    }

    fn run(step: &mut u32) -> Result {
        if crate::module_parameters::mad_qps.value() {
            return Ok(());
        }
        let mut list = KVec::new();
        for i in 0..2u32 {
            list.push(
                (
                    CString::try_from_fmt(fmt!("kunit.udqp.{}", i))?,
                    Config {
                        profile: CONNECTX7,
                        link_layer: SimLinkLayer::Ib,
                        num_ports: 1,
                        serial: 61 + i,
                        memic: false,
                    },
                ),
                GFP_KERNEL,
            )?;
        }
        let fs = SimFunction::new_fabric(list)?;
        let (fa, fb) = match (fs.first(), fs.get(1)) {
            (Some(a), Some(b)) => (a.clone(), b.clone()),
            _ => return Err(EINVAL),
        };
        {
            let da = Mlx5Dev::probe(fa.clone())?;
            let db = Mlx5Dev::probe(fb.clone())?;
            let (ia, ib) = (da.ib().ok_or(ENODEV)?, db.ib().ok_or(ENODEV)?);
            let (la, lb) = (lid(&da)?, lid(&db)?);
            let n: Arc<dyn UdQpNotify> = Arc::new(Nothing, GFP_KERNEL)?;
            let cfg = UdQpConfig {
                qkey: QKEY,
                pkey_index: 0,
                max_payload: PAYLOAD,
            };
            let open = |d: &Arc<Device<crate::ib::device::Mlx5Ib>>, c: &UdQpConfig| {
                Arc::as_arc_borrow(d).open_ud_qp(1, c, n.clone())
            };
            for bad in [0, MAX_PAYLOAD + 1] {
                let c = UdQpConfig {
                    max_payload: bad,
                    ..cfg
                };
                assert_eq!(open(ia, &c).err(), Some(EINVAL));
            }
            *step += 1;
            let a = open(ia, &cfg)?;
            let b = open(ib, &cfg)?;
            assert_ne!(la, lb);

            *step += 1;
            // Unicast, a whole datagram of max_payload bytes.
            let d = datagram(PAYLOAD as usize, 7)?;
            let to_b = UdDest {
                dlid: lb,
                remote_qpn: b.qpn(),
                remote_qkey: QKEY,
                ..UdDest::default()
            };
            // As an interface's transmit does: in atomic context (a spinlock held,
            // interrupts off; lockdep reports a sleeping lock taken there).
            let atomic = KBox::pin_init(new_spinlock_irq!(()), GFP_KERNEL)?;
            let guard = atomic.lock();
            let r = a.post_send(&d, &to_b, 11);
            drop(guard);
            r?;
            assert_eq!(sent(&a), Some((11, WcStatus::Success)));
            let (data, info) = recv(&b, 2000).ok_or(ETIMEDOUT)?;
            assert!(data[..] == d[..]);
            assert_eq!((info.slid, info.src_qp), (la, a.qpn()));
            assert_eq!((info.dgid, info.sgid), (None, None));

            *step += 1;
            let long = datagram(PAYLOAD as usize + 1, 0)?;
            assert_eq!(a.post_send(&long, &to_b, 12), Err(EMSGSIZE));
            let bad_qpn = UdDest {
                remote_qpn: 1 << 24,
                ..to_b
            };
            assert_eq!(a.post_send(&d[..8], &bad_qpn, 13), Err(EINVAL));

            *step += 1;
            // Every send slot taken: ENOBUFS until the completions are polled.
            for i in 0..SEND_SLOTS as u64 {
                a.post_send(&d[..64], &to_b, 100 + i)?;
            }
            assert_eq!(a.post_send(&d[..64], &to_b, 99), Err(ENOBUFS));
            let mut done = 0;
            for _ in 0..200 {
                a.poll(&mut |c| {
                    if let UdCompletion::Send { status, .. } = c {
                        assert_eq!(status, WcStatus::Success);
                        done += 1;
                    }
                });
                if done == SEND_SLOTS {
                    break;
                }
                fsleep(Delta::from_millis(10));
            }
            assert_eq!(done, SEND_SLOTS);
            let got = recv_all(&b, SEND_SLOTS, 2000)?;
            assert_eq!(got.len(), SEND_SLOTS);
            assert!(got.iter().all(|g| g[..] == d[..64]));
            a.post_send(&d[..64], &to_b, 98)?;
            assert_eq!(sent(&a), Some((98, WcStatus::Success)));
            assert!(recv(&b, 2000).is_some());

            *step += 1;
            // Multicast: B joins a group through the SA and attaches its QP.
            let mut mgid = Gid([0; 16]);
            mgid.0[..4].copy_from_slice(&[0xff, 0x12, 0x40, 0x1b]);
            mgid.0[15] = 0x37;
            let mlid = join(ib, &mgid)?;
            assert!(mlid >= 0xc000);
            b.attach_mcast(&mgid, mlid)?;
            let to_group = UdDest {
                dlid: mlid,
                remote_qpn: MCAST_QPN,
                remote_qkey: QKEY,
                grh: Some(MadGrh {
                    dgid: mgid,
                    ..MadGrh::default()
                }),
                ..UdDest::default()
            };
            let m = datagram(300, 0x40)?;
            let mut arrived = None;
            // The SM programs the switch's forwarding table after its answer.
            for i in 0..10 {
                a.post_send(&m, &to_group, 200 + i)?;
                assert_eq!(sent(&a), Some((200 + i, WcStatus::Success)));
                arrived = recv(&b, 300);
                if arrived.is_some() {
                    break;
                }
            }
            *step += 1;
            let (data, info) = arrived.ok_or(ETIMEDOUT)?;
            assert!(data[..] == m[..]);
            assert_eq!(info.dgid, Some(mgid));
            assert_eq!(info.sgid, Some(ia.query_gid(1, 0)?));
            assert_eq!((info.slid, info.src_qp), (la, a.qpn()));
            b.detach_mcast(&mgid, mlid)?;
            let after = datagram(300, 0x80)?;
            a.post_send(&after, &to_group, 300)?;
            assert_eq!(sent(&a), Some((300, WcStatus::Success)));
            assert!(recv_all(&b, 1, 500)?.iter().all(|g| g[..] != after[..]));
            assert_eq!(b.detach_mcast(&mgid, mlid), Err(EINVAL));
            let not_group = Gid([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            assert_eq!(b.attach_mcast(&not_group, mlid), Err(EINVAL));

            *step += 1;
            // A's device unregistered with its UD QP open: dropped afterwards, as an
            // interface that holds it at the removal does.
            Device::unregister(ia);
            drop(a);
            drop(b);
        }
        assert!(fa.counts().is_zero() && fa.iommu().mappings() == 0);
        assert!(fb.counts().is_zero() && fb.iommu().mappings() == 0);
        Ok(())
    }
}
