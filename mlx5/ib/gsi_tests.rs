// SPDX-License-Identifier: GPL-2.0

//! KUnit suite of the special QPs (`crate::ib::gsi`): MADs between the QP0s and QP1s of two
//! simulated functions.

use crate::ib::gsi::open;
use ib_core_rs::device::Device;
use ib_core_rs::mad::Mad;
use ib_core_rs::mad_qp::{MadDest, MadQp, MadQpCompletion, MadQpNotify, QP1_QKEY};
use ib_core_rs::verbs::WcStatus;
use kernel::prelude::*;
use kernel::sync::Arc;

#[kunit_tests(mlx5_ib_rs_gsi)]
mod tests {
    use super::*;
    use crate::dev::Mlx5Dev;
    use crate::fwsim::profile::{LinkLayer as SimLinkLayer, CONNECTX7};
    use crate::fwsim::Config;
    use crate::simdev::SimFunction;
    use ib_core_rs::mad_qp::MadGrh;
    use kernel::str::CString;
    use kernel::time::{delay::fsleep, Delta};

    struct Nothing;

    impl MadQpNotify for Nothing {
        fn notify(&self) {}
    }

    /// Polls `q` (2 s at most) until one completion of the kind `recv` asks for came.
    fn wait(q: &Arc<dyn MadQp>, recv: bool) -> Option<MadQpCompletion> {
        for _ in 0..200 {
            let mut got = None;
            q.poll(&mut |c| {
                let is_recv = matches!(c, MadQpCompletion::Recv { .. });
                if got.is_none() && is_recv == recv {
                    got = Some(c);
                }
            });
            if got.is_some() {
                return got;
            }
            fsleep(Delta::from_millis(10));
        }
        None
    }

    fn lid(d: &Mlx5Dev) -> Result<u16> {
        let ib = d.ib().ok_or(ENODEV)?;
        u16::try_from(Device::query_port(ib, 1)?.lid).map_err(|_| EINVAL)
    }

    /// Two InfiniBand functions of one fabric: a GMP from A's QP1 arrives at B's QP1 with
    /// source QP 1 and A's LID, its bytes whole; one with another Q_Key does not; an SMP from
    /// A's QP0 arrives at B's QP0 with source QP 0. Everything is released afterwards.
    /// (Loaded with `mad_qps=1` the MAD layer's own special QPs would take the MADs.)
    #[test]
    fn mads_between_two_functions() -> Result {
        if crate::module_parameters::mad_qps.value() {
            return Ok(());
        }
        let mut list = KVec::new();
        for i in 0..2u32 {
            list.push(
                (
                    CString::try_from_fmt(fmt!("kunit.gsi.{}", i))?,
                    Config {
                        profile: CONNECTX7,
                        link_layer: SimLinkLayer::Ib,
                        num_ports: 1,
                        serial: 41 + i,
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
            assert_ne!(la, lb);
            let n: Arc<dyn MadQpNotify> = Arc::new(Nothing, GFP_KERNEL)?;
            let a1 = open(ia, 1, 1, n.clone())?;
            let b1 = open(ib, 1, 1, n.clone())?;
            let a0 = open(ia, 1, 0, n.clone())?;
            let b0 = open(ib, 1, 0, n.clone())?;
            // QP0 exists on InfiniBand ports only; QPN 2 is no special QP.
            assert_eq!(open(ia, 1, 2, n.clone()).err(), Some(EINVAL));
            let mut m = Mad::zeroed();
            for (i, b) in m.0.iter_mut().enumerate() {
                *b = i as u8;
            }
            m.0[..4].copy_from_slice(&[1, 0x32, 1, 1]);
            let to_b1 = MadDest {
                dlid: lb,
                remote_qpn: 1,
                remote_qkey: QP1_QKEY,
                ..MadDest::default()
            };
            a1.post_send(&m, 256, &to_b1, 7)?;
            match wait(&a1, false) {
                Some(MadQpCompletion::Send { wr_id, status }) => {
                    assert_eq!(wr_id, 7);
                    assert_eq!(status, WcStatus::Success);
                }
                _ => return Err(ETIMEDOUT),
            }
            match wait(&b1, true) {
                Some(MadQpCompletion::Recv { mad, info }) => {
                    assert!(mad.0 == m.0);
                    assert_eq!(info.src_qp, 1);
                    assert_eq!(info.slid, la);
                    assert!(info.grh.is_none());
                }
                _ => return Err(ETIMEDOUT),
            }
            // Another Q_Key: dropped at B's QP1.
            let bad = MadDest {
                remote_qkey: 0x1234,
                ..to_b1
            };
            a1.post_send(&m, 256, &bad, 8)?;
            assert!(wait(&a1, false).is_some());
            assert!(wait(&b1, true).is_none());
            // An SMP, QP0 to QP0.
            m.0[1] = 0x01;
            let to_b0 = MadDest {
                dlid: lb,
                remote_qpn: 0,
                grh: None::<MadGrh>,
                ..MadDest::default()
            };
            a0.post_send(&m, 256, &to_b0, 9)?;
            match wait(&b0, true) {
                Some(MadQpCompletion::Recv { mad, info }) => {
                    assert_eq!(mad.0[1], 0x01);
                    assert_eq!(info.src_qp, 0);
                }
                _ => return Err(ETIMEDOUT),
            }
            drop((a0, a1, b0, b1));
        }
        assert!(fa.counts().is_zero() && fa.iommu().mappings() == 0);
        assert!(fb.counts().is_zero() && fb.iommu().mappings() == 0);
        Ok(())
    }
}
