// SPDX-License-Identifier: GPL-2.0

//! uverbs: the `/dev/infiniband/uverbsN` character devices and the ioctl and
//! write() ABI that rdma-core speaks. Compiled into the `ib_core_rs` crate.
//!
//! At module load (upstream `ib_uverbs_init()`): the char device numbers
//! (231:192..223 and a dynamic range of 8160), the `infiniband_verbs` class
//! with its `abi_version` attribute and `infiniband/uverbsN` (0666) device
//! nodes, and the uverbs client of the core. Per device ([`device`]): the
//! `uverbsN` class device with its cdev. Per open file ([`file`]): the ioctl
//! and write() paths over the pure parser of [`abi`], the uobject table,
//! close cleanup and disassociation. See `Documentation/uverbs.md`.

use crate::chrdev::ChrdevRegion;
use crate::class::{Class, ClassAttr, Devnode, SysfsBuf};
use core::fmt::Write;
use kernel::prelude::*;
use kernel::sync::Arc;

#[path = "abi.rs"]
pub(crate) mod abi;
mod abi_kunit;
mod async_event;
mod device;
pub mod driver_api;
mod driver_fd;
mod driver_object;
mod file;
mod mmap;
mod resp;
pub mod ucma;
pub mod uobject_table;

/// `IB_UVERBS_MAJOR`.
pub const IB_UVERBS_MAJOR: u32 = 231;
/// `IB_UVERBS_BASE_MINOR`.
pub const IB_UVERBS_BASE_MINOR: u32 = 192;
/// `IB_UVERBS_NUM_FIXED_MINOR`.
pub const IB_UVERBS_NUM_FIXED_MINOR: u32 = 32;
/// `IB_UVERBS_NUM_DYNAMIC_MINOR` (`IB_UVERBS_MAX_DEVICES - IB_UVERBS_NUM_FIXED_MINOR`).
pub const IB_UVERBS_NUM_DYNAMIC_MINOR: u32 = (1 << 13) - IB_UVERBS_NUM_FIXED_MINOR;

fn show_class_abi_version(b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "{}", UVERBS_CLASS_ABI_VERSION).map_err(|_| EINVAL)
}

static CLASS_ATTRS: [&ClassAttr; 1] = {
    static ABI_VERSION: ClassAttr = ClassAttr::ro(c"abi_version", show_class_abi_version);
    [&ABI_VERSION]
};

/// What uverbs registers at module load (upstream `ib_uverbs_init()`); dropped at unload
/// (upstream `ib_uverbs_cleanup()`: class, then the dynamic and the fixed ranges).
pub(crate) struct UverbsGlobal {
    // Dropped first: removes every uverbsN before the class and regions go.
    _client: crate::client::ClientRegistration,
    _shared: Arc<UverbsShared>,
}

/// The class and device number ranges, shared with the client.
#[pin_data]
pub(crate) struct UverbsShared {
    pub(crate) class: Class,
    pub(crate) dynamic: ChrdevRegion,
    pub(crate) fixed: ChrdevRegion,
    /// Which `uverbsN` numbers are taken (upstream `dev_ida`).
    #[pin]
    pub(crate) ida: kernel::sync::Mutex<KVec<bool>>,
}

impl UverbsGlobal {
    /// Registers the fixed and dynamic char device ranges and the `infiniband_verbs` class.
    ///
    /// # Errors
    ///
    /// `EBUSY` if the upstream `ib_uverbs` holds the fixed range (logged), `EEXIST` for the
    /// class, `ENOMEM`.
    pub(crate) fn register(module: &'static ThisModule) -> Result<Self> {
        let fixed = ChrdevRegion::register(
            IB_UVERBS_MAJOR,
            IB_UVERBS_BASE_MINOR,
            IB_UVERBS_NUM_FIXED_MINOR,
            c"infiniband_verbs",
        )?;
        let dynamic = ChrdevRegion::alloc(0, IB_UVERBS_NUM_DYNAMIC_MINOR, c"infiniband_verbs")?;
        let class = Class::register(
            c"infiniband_verbs",
            Some(Devnode {
                dir: c"infiniband",
                mode: Some(0o666),
            }),
            &CLASS_ATTRS,
        )
        .inspect_err(|e| pr_err!("ib_core_rs: class infiniband_verbs: {:?}\n", e))?;
        let shared = Arc::pin_init(
            pin_init!(UverbsShared {
                class,
                dynamic,
                fixed,
                ida <- kernel::new_mutex!(KVec::new(), "uverbs_ida"),
            }),
            GFP_KERNEL,
        )?;
        let client = device::UverbsClient::new(module, shared.clone())?;
        let client = crate::client::register_client(client)?;
        Ok(Self {
            _client: client,
            _shared: shared,
        })
    }
}

/// `abi_version` of the `infiniband_verbs` class (upstream
/// `IB_USER_VERBS_ABI_VERSION`, `include/uapi/rdma/ib_user_verbs.h`).
pub const UVERBS_CLASS_ABI_VERSION: u32 = 6;

/// `RDMA_VERBS_IOCTL` = `_IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr)`.
pub const RDMA_VERBS_IOCTL: u32 = 0xc018_1b01;

#[kunit_tests(ib_core_rs_uverbs_abi)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_number_matches_iowr() {
        // _IOWR(type, nr, size) = (3 << 30) | (size << 16) | (type << 8) | nr.
        let hdr_size = 24u32;
        assert_eq!(
            RDMA_VERBS_IOCTL,
            (3 << 30) | (hdr_size << 16) | (0x1b << 8) | 1
        );
    }
}
