// SPDX-License-Identifier: GPL-2.0

//! KUnit suite of the ports a probe computes (`crate::ib::port`: `query_port`,
//! `port_attrs`) on simulated InfiniBand and RoCE functions.

use crate::attrs::{core_cap, speed, width};
use crate::dev::Mlx5Dev;
use crate::simdev::SimFunction;
use ib_core_rs::attr::LinkLayer;
use kernel::{prelude::*, sync::Arc};

#[kunit_tests(mlx5_ib_rs_port)]
mod tests {
    use super::*;

    fn sim(eth: bool) -> Result<Arc<SimFunction>> {
        SimFunction::one_port(fmt!("kunit.probe"), eth, 3)
    }

    #[test]
    fn ib_port_attrs_from_the_simulator() -> Result {
        let f = sim(false)?;
        let probed = Mlx5Dev::probe(f.clone())?;
        let d = probed.data()?;
        assert_eq!(d.ports.len(), 1);
        let p = &d.ports[0];
        assert_eq!((p.num, p.link_layer), (1, LinkLayer::Infiniband));
        let a = &p.attrs;
        assert_eq!((a.state, a.phys_state), (4, 5));
        // Each function has a LID of its own on the fabric (Fw::port_lid), the SM is LID 1.
        let lid = f.with_fw(|fw| fw.port_lid(0));
        assert_eq!((a.lid, a.sm_lid), (u32::from(lid), 1));
        assert_eq!(a.port_cap_flags, 0x2651_e848);
        assert_eq!(a.gid_tbl_len, 8);
        assert_eq!(a.pkey_tbl_len, 128);
        assert_eq!(a.max_msg_sz, 1 << 30);
        assert_eq!(a.active_width, width::W4X);
        assert_eq!(a.active_speed, speed::NDR);
        assert_eq!((a.max_mtu, a.active_mtu), (5, 5));
        assert_eq!(a.max_vl_num, 3);
        assert_eq!(a.subnet_timeout, 18);
        assert_eq!(p.immutable.core_cap_flags, core_cap::PORT_IBA_IB);
        assert_eq!(p.immutable.max_mad_size, 256);
        assert_eq!(
            (p.immutable.gid_tbl_len, p.immutable.pkey_tbl_len),
            (8, 128)
        );
        // GID 0 is fe80::<port GUID>, the rest empty; P_Key 0 is the default.
        assert_eq!(p.gids.len(), 8);
        assert_eq!(&p.gids[0][..8], &[0xfe, 0x80, 0, 0, 0, 0, 0, 0]);
        assert_ne!(&p.gids[0][8..], &[0u8; 8]);
        assert_eq!(p.gids[1], [0u8; 16]);
        assert_eq!(p.pkeys.len(), 128);
        assert_eq!(p.pkeys[0], 0xffff);
        assert_eq!(p.pkeys[1], 0);
        Ok(())
    }

    #[test]
    fn roce_port_attrs_from_the_simulator() -> Result {
        let f = sim(true)?;
        let probed = Mlx5Dev::probe(f.clone())?;
        let d = probed.data()?;
        let p = &d.ports[0];
        assert_eq!(p.link_layer, LinkLayer::Ethernet);
        let a = &p.attrs;
        assert_eq!((a.state, a.phys_state), (4, 5));
        assert!(a.ip_gids);
        assert_eq!(a.gid_tbl_len, 256);
        assert_eq!(a.pkey_tbl_len, 1);
        assert_eq!(a.port_cap_flags, 1 << 16);
        // ConnectX-6 Dx profile: 100GAUI-2, which upstream reports as 2X HDR.
        assert_eq!((a.active_width, a.active_speed), (width::W2X, speed::HDR));
        assert_eq!(a.max_mtu, 5);
        assert_eq!(
            p.immutable.core_cap_flags,
            core_cap::PORT_RAW_PACKET | core_cap::PORT_IBA_ROCE | core_cap::PORT_IBA_ROCE_UDP_ENCAP
        );
        assert_eq!(p.pkeys.len(), 1);
        assert!(p.mac.is_some());
        assert!(d.ops.roce);
        Ok(())
    }
}
