// SPDX-License-Identifier: GPL-2.0

//! rdma-rs mlx5 RDMA driver: drives NVIDIA ConnectX adapters through PRM
//! firmware commands and implements the core's driver interface
//! ([`ib_core_rs::driver::Driver`] and [`ib_core_rs::ops::DeviceOps`]).
//!
//! The crate holds the PRM layout table, the firmware simulator and its kernel
//! backend (simulated functions as `mlx5_ib_rs.rdma.N` auxiliary devices,
//! created from `sim=`), the [`hw::Mlx5Hw`] interface, the auxiliary driver
//! whose probe runs the profile stages, and the RDMA device those stages
//! register as `mlx5_%d` ([`ib`], one file per verbs object, each issuing PRM commands).
//!
//! The files of this crate (Kbuild builds one crate per module, so files outside `mlx5/` are
//! mounted with `#[path]`):
//!
//! | files | what |
//! | --- | --- |
//! | `mlx5/*.rs`, `mlx5/cmd/`, `mlx5/ib/` | the driver: hardware interface, typed commands, the RDMA device |
//! | `mlx5/prm/`, `mlx5/fwsim/`, `mlx5/uabi.rs` | pure; also compiled by the host crate `host/prm` |
//! | `mlx5/simdev.rs`, `mlx5/simdev/` | the simulated functions (the simulator's kernel backend) |
//! | `uverbs/abi/layout.rs` | the typed user-ABI struct macro, shared with the core's uverbs (`uapi_layout`) |
//! | `rust/{aux_parent,dev_attr,eventfd,fwsim_param,kthread,mlx5_bound,mlx5_core,net_notify_mlx5,uplink}.rs` | the unsafe abstractions this crate uses (`rust/README.md`) |
//!
//! Imports run one way: `prm`, `uabi`, `fwsim` <- `hw` and its backends <- `cmd` <- `ib`
//! (device types <- objects <- `ib::ops`) <- `eth` (a RoCE port's interface) <- `dev`,
//! `stages`, `probe` (`ib.rs` and
//! `Documentation/architecture.md` give the rule; `tools/modgraph.py` checks it).

// The unsafe boundary: `unsafe` is allowed only in the `rust/` mounts below
// (Documentation/architecture.md, "The unsafe boundary"; tools/modgraph.py checks it).
#![deny(unsafe_code)]

mod prm;

#[path = "fwsim/fwsim.rs"]
mod fwsim;

#[allow(unsafe_code)]
#[path = "../rust/aux_parent.rs"]
mod aux_parent;
#[allow(unsafe_code)]
#[path = "../rust/dev_attr.rs"]
mod dev_attr;
#[allow(unsafe_code)]
#[path = "../rust/eventfd.rs"]
mod eventfd;
#[allow(unsafe_code)]
#[path = "../rust/fwsim_param.rs"]
mod fwsim_param;
#[allow(unsafe_code)]
#[path = "../rust/kthread.rs"]
mod kthread;
#[allow(unsafe_code)]
#[cfg(CONFIG_KUNIT)]
#[path = "../rust/mlx5_bound.rs"]
mod mlx5_bound;
#[allow(unsafe_code)]
#[path = "../rust/mlx5_core.rs"]
mod mlx5_core;
#[allow(unsafe_code)]
#[path = "../rust/net_notify_mlx5.rs"]
mod net_notify_mlx5;
/// The core's network interfaces (`rust/netdev.rs`, compiled into the core crate).
pub(crate) use ib_core_rs::netdev;
#[allow(unsafe_code)]
#[path = "../rust/uplink.rs"]
mod uplink;

mod attrs;
mod cmd;
mod corehw;
mod dev;
mod eth;
mod hw;
mod ib;
mod probe;
mod simdev;
mod stages;
mod uabi;
/// Typed user-ABI structs (`uapi_structs!`), shared with uverbs.
#[path = "../uverbs/abi/layout.rs"]
pub(crate) mod uapi_layout;

use ib_core_rs::attr::LinkLayer;
use kernel::{auxiliary, driver, prelude::*, InPlaceModule};

/// The module's name (`KBUILD_MODNAME`): the prefix of the simulated auxiliary devices.
pub(crate) const MODULE_NAME: &CStr = <LocalModule as kernel::ModuleMetadata>::NAME;

module! {
    type: Mlx5IbRs,
    name: "mlx5_ib_rs",
    authors: ["rdma-rs developers"],
    description: "rdma-rs: mlx5 RDMA driver (NVIDIA ConnectX)",
    license: "GPL",
    params: {
        sm: bool {
            default: true,
            description: "The simulated InfiniBand fabrics' embedded subnet manager (sm=0: ports stay INIT with LID 0 until a host SM sweeps them)",
        },
        mad_qps: bool {
            default: false,
            description: "QP0 and QP1 of every port for the MAD layer (mad_qps=1: MADs leave the host on the wire; 0: the MAD layer keeps them in the node)",
        },
        wire_drop: u32 {
            default: 0,
            description: "Fault injection: drop 1 in N of the RoCE v2 frames the Ethernet fabrics' functions send and receive (0: none)",
        },
        wire_dup: u32 {
            default: 0,
            description: "Fault injection: duplicate 1 in N of the RoCE v2 frames the Ethernet fabrics' functions send and receive (0: none)",
        },
        wire_reorder: u32 {
            default: 0,
            description: "Fault injection: hold back 1 in N of the RoCE v2 frames the Ethernet fabrics' functions send and receive behind the next one (0: none)",
        },
        wire_corrupt: u32 {
            default: 0,
            description: "Fault injection: flip a bit in 1 in N of the RoCE v2 frames the Ethernet fabrics' functions send and receive, inside what the ICRC covers (0: none)",
        },
    },
}

/// The module: the auxiliary driver, and the simulated functions of `sim=`.
///
/// Drop order is field order: the driver is unregistered first (every bound function is
/// removed, as `rmmod mlx5_ib` does before mlx5_core goes), then the simulated devices, then
/// any device worker thread still running (of a function something leaked).
#[pin_data]
struct Mlx5IbRs {
    #[pin]
    _driver: driver::Registration<auxiliary::Adapter<probe::Mlx5AuxDriver>>,
    _sim: Option<simdev::SimDevices>,
    _threads: kthread::Threads,
}

/// The core's registration check of both assemblies, across the module boundary.
fn check_ops() -> Result {
    for ll in [LinkLayer::Infiniband, LinkLayer::Ethernet] {
        ib::ops::assemble_ops(ll)?.check_mandatory().map_err(|op| {
            pr_err!("mlx5_ib_rs: driver lacks mandatory op {}\n", op.name());
            EINVAL
        })?;
    }
    Ok(())
}

impl InPlaceModule for Mlx5IbRs {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            // Simulated devices first: they wait unbound until the driver registers below,
            // which then probes them (and any mlx5_core.rdma.N already present).
            _sim: {
                kthread::init();
                #[cfg(CONFIG_KUNIT)]
                mlx5_bound::init();
                check_ops()?;
                fwsim_param::with_sim_param(|list| {
                    fwsim_param::with_uplink_param(|uplink| {
                        simdev::SimDevices::from_list(list, uplink, MODULE_NAME)
                    })
                })?
            },
            _driver <- driver::Registration::new(MODULE_NAME, module),
            _threads: kthread::Threads,
        })
        .pin_chain(|_| {
            pr_info!("mlx5_ib_rs: loaded; ops accepted by ib_core_rs\n");
            Ok(())
        })
    }
}
