// SPDX-License-Identifier: GPL-2.0

//! rdma-rs mlx5 RDMA driver: drives NVIDIA ConnectX adapters through PRM
//! firmware commands and implements the core's [`ib_core_rs::driver::Driver`].
//!
//! So far the crate holds the driver's identity and firmware-version format;
//! it binds no device yet (issue: mlx5 driver).

use ib_core_rs::driver::{DeviceAttr, Driver, DriverId};
use ib_core_rs::ops::{self, OpSet};
use kernel::prelude::*;
use kernel::str::CString;

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

struct Mlx5IbRs;

impl kernel::Module for Mlx5IbRs {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // The core's registration check, across the module boundary.
        ops::check_mandatory(OpSet::of::<Mlx5Ib>()).map_err(|op| {
            pr_err!("mlx5_ib_rs: driver lacks mandatory op {}\n", op.name());
            EINVAL
        })?;
        pr_info!("mlx5_ib_rs: loaded; ops accepted by ib_core_rs; no device bound yet\n");
        Ok(Mlx5IbRs)
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
