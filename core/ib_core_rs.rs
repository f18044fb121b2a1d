// SPDX-License-Identifier: GPL-2.0

//! rdma-rs RDMA core: the root of the stack.
//!
//! Device drivers (`mlx5_ib_rs`) implement [`driver::Driver`]; the core checks
//! and assembles their operations. The uverbs layer (`uverbs/`) is compiled
//! into this crate so that the only Rust link between modules is
//! driver -> core.

use kernel::prelude::*;

pub mod driver;
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

struct IbCoreRs;

impl kernel::Module for IbCoreRs {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!(
            "ib_core_rs: loaded (uverbs ABI {})\n",
            uverbs::UVERBS_CLASS_ABI_VERSION
        );
        Ok(IbCoreRs)
    }
}

impl Drop for IbCoreRs {
    fn drop(&mut self) {
        pr_info!("ib_core_rs: unloaded\n");
    }
}
