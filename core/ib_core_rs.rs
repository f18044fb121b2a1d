// SPDX-License-Identifier: GPL-2.0

//! rdma-rs RDMA core: the root of the stack.
//!
//! Device drivers (`mlx5_ib_rs`) implement [`driver::Driver`]; the core checks
//! and assembles their operations. The uverbs layer (`uverbs/`) is compiled
//! into this crate so that the only Rust link between modules is
//! driver -> core.

use kernel::prelude::*;

#[path = "../rust/chrdev.rs"]
pub(crate) mod chrdev;
#[path = "../rust/class.rs"]
pub(crate) mod class;
pub mod driver;
#[path = "../rust/netlink.rs"]
pub(crate) mod netlink;
mod nldev;
pub mod ops;
#[path = "../uverbs/uverbs.rs"]
pub mod uverbs;

module! {
    type: IbCoreRs,
    name: "ib_core_rs",
    authors: ["rdma-rs developers"],
    description: "rdma-rs: RDMA core (device registry, ops, verbs) and uverbs",
    license: "GPL",
}

struct IbCoreRs {
    // The NETLINK_RDMA socket first: it is what collides with a loaded upstream ib_core.
    _nldev: netlink::NlSocket<nldev::NlDev>,
    _uverbs: uverbs::UverbsGlobal,
}

impl kernel::Module for IbCoreRs {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let nldev =
            netlink::NlSocket::new(module, kernel::sync::Arc::new(nldev::NlDev, GFP_KERNEL)?)?;
        let uverbs = uverbs::UverbsGlobal::register()?;
        pr_info!(
            "ib_core_rs: loaded (uverbs ABI {})\n",
            uverbs::UVERBS_CLASS_ABI_VERSION
        );
        Ok(IbCoreRs {
            _nldev: nldev,
            _uverbs: uverbs,
        })
    }
}

impl Drop for IbCoreRs {
    fn drop(&mut self) {
        pr_info!("ib_core_rs: unloaded\n");
    }
}
