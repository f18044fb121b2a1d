// SPDX-License-Identifier: GPL-2.0

//! rdma-rs mlx5 RDMA driver: drives NVIDIA ConnectX adapters through PRM
//! firmware commands and implements the core's [`ib_core_rs::driver::Driver`].
//!
//! So far the crate holds the driver's identity and firmware-version format,
//! the PRM layout table, the firmware simulator and its kernel backend
//! (simulated functions as `mlx5_ib_rs.rdma.N` auxiliary devices, created from
//! `sim=`), the [`hw::Mlx5Hw`] interface, and an auxiliary driver that binds
//! functions and runs their first commands. It registers no RDMA device yet
//! (issue: mlx5 driver).

mod prm;

#[path = "fwsim/fwsim.rs"]
mod fwsim;

#[path = "../rust/aux_parent.rs"]
mod aux_parent;
#[path = "../rust/fwsim_param.rs"]
mod fwsim_param;
#[path = "../rust/mlx5_core.rs"]
mod mlx5_core;

mod attrs;
mod cmd;
mod corehw;
mod dev;
mod hw;
mod probe;
mod simdev;
mod stages;

use ib_core_rs::driver::{DeviceAttr, Driver, DriverId};
use ib_core_rs::ops::{self, OpSet};
use kernel::{auxiliary, driver, prelude::*, str::CString, InPlaceModule};

/// The module's name (`KBUILD_MODNAME`): the prefix of the simulated auxiliary devices.
pub(crate) const MODULE_NAME: &CStr = <LocalModule as kernel::ModuleMetadata>::NAME;

module! {
    type: Mlx5IbRs,
    name: "mlx5_ib_rs",
    authors: ["rdma-rs developers"],
    description: "rdma-rs: mlx5 RDMA driver (NVIDIA ConnectX)",
    license: "GPL",
}

/// Firmware revision as the HCA's initialization segment reports it
/// (upstream `fw_rev_maj/min/sub`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FwRev {
    maj: u16,
    min: u16,
    sub: u16,
}

impl FwRev {
    /// The 64-bit encoding upstream `mlx5_ib_query_device` puts in
    /// `ib_device_attr.fw_ver`: major << 32 | minor << 16 | subminor.
    fn encode(self) -> u64 {
        u64::from(self.maj) << 32 | u64::from(self.min) << 16 | u64::from(self.sub)
    }
}

/// One mlx5 RDMA device. No device is bound yet; the type carries what
/// the driver reports once it is.
pub(crate) struct Mlx5Ib {
    fw: FwRev,
    vendor_part_id: u32,
}

#[vtable]
impl Driver for Mlx5Ib {
    const DRIVER_ID: DriverId = DriverId::Mlx5;

    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            fw_ver: self.fw.encode(),
            vendor_id: 0x02c9,
            vendor_part_id: self.vendor_part_id,
            ..DeviceAttr::default()
        })
    }

    // upstream: mlx5_ib get_dev_fw_str(), "%d.%d.%04d".
    fn get_dev_fw_str(&self) -> Result<CString> {
        CString::try_from_fmt(fmt!("{}.{}.{:04}", self.fw.maj, self.fw.min, self.fw.sub))
    }

    fn query_port(&self, _port: u32) -> Result<()> {
        Err(EOPNOTSUPP)
    }

    fn get_port_immutable(&self, _port: u32) -> Result<()> {
        Err(EOPNOTSUPP)
    }
}

/// The module: the auxiliary driver, and the simulated functions of `sim=`.
///
/// Drop order is field order: the driver is unregistered first (every bound function is
/// removed, as `rmmod mlx5_ib` does before mlx5_core goes), then the simulated devices.
#[pin_data]
struct Mlx5IbRs {
    #[pin]
    _driver: driver::Registration<auxiliary::Adapter<probe::Mlx5AuxDriver>>,
    _sim: Option<simdev::SimDevices>,
}

/// The core's registration check, across the module boundary.
fn check_ops() -> Result {
    ops::check_mandatory(OpSet::of::<Mlx5Ib>()).map_err(|op| {
        pr_err!("mlx5_ib_rs: driver lacks mandatory op {}\n", op.name());
        EINVAL
    })
}

impl InPlaceModule for Mlx5IbRs {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            // Simulated devices first: they wait unbound until the driver registers below,
            // which then probes them (and any mlx5_core.rdma.N already present).
            _sim: {
                check_ops()?;
                fwsim_param::with_sim_param(|list| simdev::SimDevices::from_list(list, MODULE_NAME))?
            },
            _driver <- driver::Registration::new(MODULE_NAME, module),
        })
        .pin_chain(|_| {
            pr_info!("mlx5_ib_rs: loaded; ops accepted by ib_core_rs\n");
            Ok(())
        })
    }
}

#[kunit_tests(mlx5_ib_rs_driver)]
mod tests {
    use super::*;

    fn dev() -> Mlx5Ib {
        Mlx5Ib {
            fw: FwRev {
                maj: 22,
                min: 39,
                sub: 1002,
            },
            vendor_part_id: 0x101d,
        }
    }

    #[test]
    fn ops_pass_core_check() {
        assert_eq!(ops::check_mandatory(OpSet::of::<Mlx5Ib>()), Ok(()));
        assert!(OpSet::of::<Mlx5Ib>().contains(ops::Op::GetDevFwStr));
    }

    #[test]
    fn fw_ver_format() -> Result {
        let s = dev().get_dev_fw_str()?;
        assert_eq!(s.to_bytes(), b"22.39.1002");
        let s = Mlx5Ib {
            fw: FwRev {
                maj: 16,
                min: 35,
                sub: 12,
            },
            ..dev()
        }
        .get_dev_fw_str()?;
        assert_eq!(s.to_bytes(), b"16.35.0012");
        Ok(())
    }

    #[test]
    fn query_device_reports_identity() -> Result {
        let a = dev().query_device()?;
        assert_eq!(a.vendor_id, 0x02c9);
        assert_eq!(a.vendor_part_id, 0x101d);
        assert_eq!(a.fw_ver, 22u64 << 32 | 39 << 16 | 1002);
        assert_eq!(<Mlx5Ib as Driver>::DRIVER_ID as u32, 1);
        Ok(())
    }
}
