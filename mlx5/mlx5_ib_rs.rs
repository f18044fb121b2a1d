// SPDX-License-Identifier: GPL-2.0

//! rdma-rs mlx5 RDMA driver: drives NVIDIA ConnectX adapters through PRM
//! firmware commands and implements the core's driver interface
//! ([`ib_core_rs::driver::Driver`] and [`ib_core_rs::ops::DeviceOps`]).
//!
//! So far the crate holds the driver's identity, its op tables and its
//! firmware-version format,
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

use ib_core_rs::attr::{DeviceAttr, PortAttr, PortImmutable};
use ib_core_rs::device::Device;
use ib_core_rs::driver::{Driver, DriverId};
use ib_core_rs::ops::{DeviceOps, Ops};
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

/// The mlx5 driver's types.
pub(crate) struct Mlx5Ib;

/// Per-device data (upstream `struct mlx5_ib_dev`, the part used so far),
/// embedded in the core's device allocation.
pub(crate) struct Mlx5IbDev {
    fw: FwRev,
    vendor_part_id: u32,
}

impl Driver for Mlx5Ib {
    type DevData = Mlx5IbDev;
    type PdData = ();
    type CqData = ();
    type QpData = ();
    type SrqData = ();
    type MrData = ();
}

/// The main table (upstream `mlx5_ib_dev_ops`).
pub(crate) struct Mlx5DevOps;

#[vtable]
impl DeviceOps for Mlx5DevOps {
    type Driver = Mlx5Ib;
    const DRIVER_ID: DriverId = DriverId::Mlx5;
    // upstream: MLX5_IB_UVERBS_ABI_VERSION
    const UVERBS_ABI_VER: u32 = 1;

    fn query_device(dev: &Device<Mlx5Ib>) -> Result<DeviceAttr> {
        let d = dev.data();
        Ok(DeviceAttr {
            fw_ver: d.fw.encode(),
            vendor_id: 0x02c9,
            vendor_part_id: d.vendor_part_id,
            ..DeviceAttr::default()
        })
    }

    // upstream: mlx5_ib get_dev_fw_str(), "%d.%d.%04d".
    fn get_dev_fw_str(dev: &Device<Mlx5Ib>) -> Result<CString> {
        let fw = dev.data().fw;
        CString::try_from_fmt(fmt!("{}.{}.{:04}", fw.maj, fw.min, fw.sub))
    }
}

/// The port table of a non-representor device (upstream
/// `mlx5_ib_dev_port_ops`). Port queries need firmware commands
/// (ACCESS_REG, vport context), which come with the device binding.
pub(crate) struct Mlx5PortOps;

#[vtable]
impl DeviceOps for Mlx5PortOps {
    type Driver = Mlx5Ib;

    fn query_port(_dev: &Device<Mlx5Ib>, _port: u32) -> Result<PortAttr> {
        Err(EOPNOTSUPP)
    }

    fn get_port_immutable(_dev: &Device<Mlx5Ib>, _port: u32) -> Result<PortImmutable> {
        Err(EOPNOTSUPP)
    }
}

const DEV_OPS: Ops<Mlx5Ib> = Ops::of::<Mlx5DevOps>();
const PORT_OPS: Ops<Mlx5Ib> = Ops::of::<Mlx5PortOps>();

/// The device's table, assembled as upstream's stages install them (the
/// main table first, then the port table).
fn assemble_ops() -> Result<Ops<Mlx5Ib>> {
    Ops::assemble(&[&DEV_OPS, &PORT_OPS])
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
    assemble_ops()?.check_mandatory().map_err(|op| {
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
    use ib_core_rs::device::Phase;
    use ib_core_rs::ops::Op;

    fn dev_data() -> Mlx5IbDev {
        Mlx5IbDev {
            fw: FwRev {
                maj: 22,
                min: 39,
                sub: 1002,
            },
            vendor_part_id: 0x101d,
        }
    }

    #[test]
    fn ops_pass_core_check() -> Result {
        let ops = assemble_ops()?;
        assert_eq!(ops.check_mandatory(), Ok(()));
        assert!(ops.has(Op::GetDevFwStr));
        assert!(!ops.has(Op::PostSend));
        assert_eq!(ops.driver_id(), DriverId::Mlx5);
        assert_eq!(ops.uverbs_abi_ver(), 1);
        assert_eq!(ops.owner().map(|o| o.to_bytes()), Some(&b"mlx5_ib_rs"[..]));
        Ok(())
    }

    #[test]
    fn device_embeds_driver_data_across_modules() -> Result {
        let dev = Device::alloc(&assemble_ops()?, 1, Ok(dev_data()))?;
        assert_eq!(dev.data().vendor_part_id, 0x101d);
        assert_eq!(dev.phase(), Phase::Allocated);
        // A core function reads the driver's data through the driver's op.
        let a = Device::query_device(&dev)?;
        assert_eq!(a.vendor_id, 0x02c9);
        assert_eq!(a.vendor_part_id, 0x101d);
        assert_eq!(a.fw_ver, 22u64 << 32 | 39 << 16 | 1002);
        // Port queries need the firmware: refused, not faked.
        assert_eq!(Device::query_port(&dev, 1), Err(EOPNOTSUPP));
        assert_eq!(Device::query_port(&dev, 2), Err(EINVAL));
        assert_eq!(Device::dealloc(dev), 0);
        Ok(())
    }

    #[test]
    fn fw_ver_format() -> Result {
        let dev = Device::alloc(&assemble_ops()?, 1, Ok(dev_data()))?;
        let s = Mlx5DevOps::get_dev_fw_str(&dev)?;
        assert_eq!(s.to_bytes(), b"22.39.1002");
        Device::dealloc(dev);
        let dev = Device::alloc(
            &assemble_ops()?,
            1,
            Ok(Mlx5IbDev {
                fw: FwRev {
                    maj: 16,
                    min: 35,
                    sub: 12,
                },
                ..dev_data()
            }),
        )?;
        let s = Mlx5DevOps::get_dev_fw_str(&dev)?;
        assert_eq!(s.to_bytes(), b"16.35.0012");
        Device::dealloc(dev);
        Ok(())
    }
}
