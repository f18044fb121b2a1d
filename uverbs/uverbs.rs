// SPDX-License-Identifier: GPL-2.0

//! uverbs: the `/dev/infiniband/uverbsN` character devices and the ioctl and
//! write() ABI that rdma-core speaks. Compiled into the `ib_core_rs` crate.
//!
//! Not implemented yet: this module holds the ABI constants that the char
//! devices will publish (issue: uverbs).

use kernel::prelude::*;

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
