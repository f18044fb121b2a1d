// SPDX-License-Identifier: GPL-2.0

//! KUnit suite of `process_mad` (`crate::ib::mad`) against the simulator's SMA and PMA
//! through MAD_IFC: the result bits, the responses, a PortInfo Set the port then reports.

use crate::dev::Mlx5Dev;
use crate::ib::device::Mlx5Ib;
use crate::ib::ops::Mlx5IbPortOps;
use crate::ib::port::query_port_common;
use crate::simdev::SimFunction;
use ib_core_rs::device::Device;
use ib_core_rs::event::register_event_handler;
use ib_core_rs::ib_device::{DeviceCore, Event, EventHandler, EventKind, IbDevice};
use ib_core_rs::mad::{
    Mad, MadRecvInfo, MAD_RESULT_CONSUMED, MAD_RESULT_REPLY, MAD_RESULT_SUCCESS,
};
use ib_core_rs::ops::DeviceOps;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::time::{delay::fsleep, Delta};
use kernel::{prelude::*, sync::Arc};

fn sim(eth: bool) -> Result<Arc<SimFunction>> {
    SimFunction::one_port(fmt!("kunit.mad"), eth, 9)
}

fn ib_of(d: &Mlx5Dev) -> Result<&Arc<Device<Mlx5Ib>>> {
    d.ib().ok_or(ENODEV)
}

/// A MAD of class `cls`, method `meth`, attribute `attr`.
fn mad(cls: u8, meth: u8, attr: u16) -> Mad {
    let mut m = Mad::zeroed();
    m.0[0] = 1;
    m.0[1] = cls;
    m.0[2] = 1;
    m.0[3] = meth;
    m.0[16..18].copy_from_slice(&attr.to_be_bytes());
    m
}

fn process(ib: &Device<Mlx5Ib>, m: &Mad, out: &mut Mad) -> Result<u32> {
    Mlx5IbPortOps::process_mad(ib, 1, 0, None, m, out)
}

const OK_REPLY: u32 = MAD_RESULT_SUCCESS | MAD_RESULT_REPLY;

/// Counts the LID change and client reregister events of port 1.
struct Seen {
    lid: Atomic<u32>,
    rereg: Atomic<u32>,
}

impl EventHandler for Seen {
    fn handle(&self, _dev: &DeviceCore, ev: &Event) {
        match (ev.port, ev.kind) {
            (1, EventKind::LidChange) => self.lid.add(1, Relaxed),
            (1, EventKind::ClientReregister) => self.rereg.add(1, Relaxed),
            _ => {}
        }
    }
}

#[kunit_tests(mlx5_ib_rs_mad)]
mod tests {
    use super::*;

    #[test]
    fn smps_reach_the_sma() -> Result {
        let f = sim(false)?;
        let d = Mlx5Dev::probe(f.clone())?;
        let ib = ib_of(&d)?;
        let mut out = Mad::zeroed();
        // Directed route to the local port: NodeInfo, the D bit in the response.
        let r = process(ib, &mad(0x81, 0x01, 0x0011), &mut out)?;
        assert_eq!(r, OK_REPLY);
        assert_eq!(out.method(), 0x81);
        assert_eq!(out.0[4] & 0x80, 0x80);
        // NodeType: a channel adapter.
        assert_eq!(out.0[64 + 2], 1);
        let guid = u64::from_be_bytes(out.0[64 + 12..64 + 20].try_into().map_err(|_| EINVAL)?);
        assert_eq!(guid, ib.data().node_guid);
        // PortInfo: the embedded SM's LID, SM LID 1, ACTIVE.
        let r = process(ib, &mad(0x01, 0x01, 0x0015), &mut out)?;
        assert_eq!(r, OK_REPLY);
        let lid = u16::from_be_bytes([out.0[64 + 16], out.0[64 + 17]]);
        assert_eq!(lid, f.with_fw(|fw| fw.port_lid(0)));
        assert_ne!(lid, 0);
        assert_eq!(u16::from_be_bytes([out.0[64 + 18], out.0[64 + 19]]), 1);
        assert_eq!(out.0[64 + 32] & 0xf, 4);
        // A PortInfo Set of another LID (state unchanged): the port reports it.
        let mut set = mad(0x01, 0x02, 0x0015);
        set.0[64..128].copy_from_slice(&out.0[64..128]);
        set.0[64 + 16..64 + 18].copy_from_slice(&0x0777u16.to_be_bytes());
        set.0[64 + 32] &= 0xf0;
        set.0[64 + 33] &= 0x0f;
        assert_eq!(process(ib, &set, &mut out)?, OK_REPLY);
        assert_eq!(u16::from_be_bytes([out.0[4], out.0[5]]), 0);
        let (a, _) = query_port_common(ib, 1)?;
        assert_eq!(a.lid, 0x777);
        // An attribute the SMA lacks: a reply with status 0x0c.
        assert_eq!(process(ib, &mad(0x01, 0x01, 0x00ee), &mut out)?, OK_REPLY);
        assert_eq!(u16::from_be_bytes([out.0[4], out.0[5]]), 0x000c);
        // SMInfo and other methods are left to the MAD layer; a trap from LID 0 is consumed.
        assert_eq!(
            process(ib, &mad(0x01, 0x01, 0x0020), &mut out)?,
            MAD_RESULT_SUCCESS
        );
        assert_eq!(
            process(ib, &mad(0x01, 0x06, 0x0015), &mut out)?,
            MAD_RESULT_SUCCESS
        );
        let recv = MadRecvInfo::default();
        let trap = mad(0x01, 0x05, 0x0002);
        assert_eq!(
            Mlx5IbPortOps::process_mad(ib, 1, 0, Some(&recv), &trap, &mut out)?,
            MAD_RESULT_SUCCESS | MAD_RESULT_CONSUMED
        );
        // A response is not the device's (upstream: SUCCESS alone).
        assert_eq!(
            process(ib, &mad(0x01, 0x81, 0x0015), &mut out)?,
            MAD_RESULT_SUCCESS
        );
        // A directed route that does not end here: the SMA drops it, MAD_IFC fails
        // (upstream IB_MAD_RESULT_FAILURE: nothing to send).
        let mut mid = mad(0x81, 0x01, 0x0011);
        mid.0[6] = 1;
        mid.0[7] = 3;
        assert_eq!(process(ib, &mid, &mut out)?, 0);
        // Other classes are not the device's.
        assert_eq!(
            process(ib, &mad(0x07, 0x01, 0x0010), &mut out)?,
            MAD_RESULT_SUCCESS
        );
        assert!(process(ib, &mad(0x01, 0x01, 0x0015), &mut out).is_ok());
        assert_eq!(
            Mlx5IbPortOps::process_mad(ib, 2, 0, None, &mad(0x01, 0x01, 0x0015), &mut out),
            Err(EINVAL)
        );
        Ok(())
    }

    #[test]
    fn port_info_set_raises_the_port_events() -> Result {
        let f = sim(false)?;
        let d = Mlx5Dev::probe(f.clone())?;
        let ib = ib_of(&d)?;
        let seen = Arc::new(
            Seen {
                lid: Atomic::new(0),
                rereg: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        let dev: Arc<dyn IbDevice> = ib.clone();
        let reg = register_event_handler(dev, seen.clone())?;
        let mut out = Mad::zeroed();
        assert_eq!(process(ib, &mad(0x01, 0x01, 0x0015), &mut out)?, OK_REPLY);
        // A new LID and ClientReregister, as an SM sets them after a restart.
        let mut set = mad(0x01, 0x02, 0x0015);
        set.0[64..128].copy_from_slice(&out.0[64..128]);
        set.0[64 + 16..64 + 18].copy_from_slice(&0x0555u16.to_be_bytes());
        set.0[64 + 32] &= 0xf0;
        set.0[64 + 33] &= 0x0f;
        set.0[64 + 51] |= 0x80;
        assert_eq!(process(ib, &set, &mut out)?, OK_REPLY);
        // PORT_CHANGE EQEs from the device's worker, then the core's event work.
        for _ in 0..400 {
            if seen.lid.load(Relaxed) != 0 && seen.rereg.load(Relaxed) != 0 {
                break;
            }
            fsleep(Delta::from_millis(5));
        }
        assert_eq!((seen.lid.load(Relaxed), seen.rereg.load(Relaxed)), (1, 1));
        drop(reg);
        Ok(())
    }

    #[test]
    fn pma_through_mad_ifc() -> Result {
        let f = sim(false)?;
        let d = Mlx5Dev::probe(f.clone())?;
        let ib = ib_of(&d)?;
        let mut out = Mad::zeroed();
        // ClassPortInfo announces PortCountersExtended.
        assert_eq!(process(ib, &mad(0x04, 0x01, 0x0001), &mut out)?, OK_REPLY);
        assert_eq!(u16::from_be_bytes([out.0[66], out.0[67]]), 1 << 9);
        // PortCountersExtended: what the port moved.
        f.with_fw(|fw| fw.count_traffic(0, |t| t.xmit(2, 100)));
        assert_eq!(process(ib, &mad(0x04, 0x01, 0x001d), &mut out)?, OK_REPLY);
        let be = |o: usize| -> Result<u64> {
            Ok(u64::from_be_bytes(
                out.0[64 + o..64 + o + 8].try_into().map_err(|_| EINVAL)?,
            ))
        };
        assert_eq!((be(8)?, be(24)?), ((100 + 2 * 26) / 4, 2));
        Ok(())
    }
}
