// SPDX-License-Identifier: GPL-2.0

//! The `RDMA_VERBS_IOCTL` wire format (`include/uapi/rdma/
//! rdma_user_ioctl_cmds.h`): the 24-byte header, the 16-byte attributes, and
//! the header checks of `ib_uverbs_ioctl()`.
//!
//! The structs themselves are declared in [`super::structs`] (decoded and
//! encoded member by member in the CPU's byte order: the user and the kernel
//! share the CPU).

use super::Errno;

/// upstream: `RDMA_IOCTL_MAGIC`.
pub(crate) const RDMA_IOCTL_MAGIC: u32 = 0x1b;

/// upstream: `RDMA_VERBS_IOCTL` = `_IOWR(RDMA_IOCTL_MAGIC, 1, struct
/// ib_uverbs_ioctl_hdr)`: dir 3 (read|write) << 30 | size << 16 | type << 8
/// | nr.
pub(crate) const RDMA_VERBS_IOCTL: u32 =
    (3 << 30) | ((IoctlHdr::SIZE as u32) << 16) | (RDMA_IOCTL_MAGIC << 8) | 1;
const _: () = assert!(RDMA_VERBS_IOCTL == 0xC018_1B01);

/// upstream: `UVERBS_ATTR_F_MANDATORY` (user input): the kernel must fail
/// with `EPROTONOSUPPORT` if it does not know the attribute.
pub(crate) const UVERBS_ATTR_F_MANDATORY: u16 = 1 << 0;
/// upstream: `UVERBS_ATTR_F_VALID_OUTPUT` (kernel output): the kernel wrote
/// this output attribute.
pub(crate) const UVERBS_ATTR_F_VALID_OUTPUT: u16 = 1 << 1;

/// `PAGE_SIZE` of x86_64, the bound `ib_uverbs_ioctl()` puts on
/// `hdr.length`. The kernel side asserts it equals `kernel::page::PAGE_SIZE`.
pub(crate) const PAGE_SIZE: usize = 4096;

/// The most attributes a header can announce and still pass the length
/// check: `(PAGE_SIZE - 24) / 16` = 254.
pub(crate) const MAX_IOCTL_ATTRS: usize = (PAGE_SIZE - IoctlHdr::SIZE) / UAttr::SIZE;

pub(crate) use super::structs::{IoctlHdr, UAttr};

const _: () = assert!(core::mem::align_of::<IoctlHdr>() == 8);

impl IoctlHdr {
    /// Decodes the header from the start of `b`; `None` if `b` is shorter
    /// than 24 bytes (the kernel side copies exactly 24, `EFAULT` on fault).
    pub(crate) fn from_prefix(b: &[u8]) -> Option<Self> {
        let head = b.get(..Self::SIZE)?;
        let arr: &[u8; Self::SIZE] = head.try_into().ok()?;
        Some(Self::from_bytes(arr))
    }

    /// The number of bytes of the attribute array that follows the header
    /// (`num_attrs * 16`); valid after [`check_ioctl_hdr`] succeeded.
    pub(crate) fn attrs_len(&self) -> usize {
        usize::from(self.num_attrs) * UAttr::SIZE
    }
}

const _: () = assert!(core::mem::align_of::<UAttr>() == 8);

impl UAttr {
    /// Byte offset of `flags` in the user's attribute (for the
    /// `VALID_OUTPUT` write-back, upstream `uverbs_set_output()`).
    pub(crate) const FLAGS_OFFSET: usize = 4;
    /// Byte offset of `data` (for writing back a NEW object's id).
    pub(crate) const DATA_OFFSET: usize = 8;

    /// `attr_data.reserved` (the u16 view of the union) is non-zero.
    pub(crate) fn attr_data_reserved(&self) -> bool {
        self.elem_id != 0 || self.elem_reserved != 0
    }

    /// `data_s64`: the signed view of `data` (FD and RAW_FD attributes).
    pub(crate) fn data_s64(&self) -> i64 {
        i64::from_ne_bytes(self.data.to_ne_bytes())
    }
}

/// Iterates over the attributes of a copied-in attribute array; a trailing
/// partial attribute (impossible after [`check_ioctl_hdr`]) is ignored.
pub(crate) fn uattrs(bytes: &[u8]) -> impl Iterator<Item = UAttr> + '_ {
    bytes.chunks_exact(UAttr::SIZE).filter_map(|c| {
        let arr: &[u8; UAttr::SIZE] = c.try_into().ok()?;
        Some(UAttr::from_bytes(arr))
    })
}

/// The header checks `ib_uverbs_ioctl()` makes before it looks at the
/// device, in upstream's order.
///
/// upstream: `ib_uverbs_ioctl()`.
///
/// # Errors
///
/// * `ENOIOCTLCMD` if `cmd` is not `RDMA_VERBS_IOCTL` (the VFS reports it as
///   `ENOTTY`).
/// * `EINVAL` if `hdr.length > PAGE_SIZE` or `hdr.length != 24 + 16 *
///   num_attrs` (`struct_size(&hdr, attrs, hdr.num_attrs)`).
/// * `EPROTONOSUPPORT` if `reserved1` or `reserved2` is non-zero.
pub(crate) fn check_ioctl_hdr(cmd: u32, hdr: &IoctlHdr) -> Result<(), Errno> {
    if cmd != RDMA_VERBS_IOCTL {
        return Err(Errno::ENOIOCTLCMD);
    }
    let want = IoctlHdr::SIZE + hdr.attrs_len();
    let length = usize::from(hdr.length);
    if length > PAGE_SIZE || length != want {
        return Err(Errno::EINVAL);
    }
    if hdr.reserved1 != 0 || hdr.reserved2 != 0 {
        return Err(Errno::EPROTONOSUPPORT);
    }
    Ok(())
}

/// The flags word the kernel writes back into a user attribute it filled:
/// the user's flags with `UVERBS_ATTR_F_VALID_OUTPUT` added (nothing else
/// changes; `MANDATORY` stays as the user set it).
///
/// upstream: `uverbs_set_output()`.
pub(crate) const fn valid_output_flags(user_flags: u16) -> u16 {
    user_flags | UVERBS_ATTR_F_VALID_OUTPUT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(num_attrs: u16) -> IoctlHdr {
        IoctlHdr {
            length: (IoctlHdr::SIZE + usize::from(num_attrs) * UAttr::SIZE) as u16,
            num_attrs,
            ..IoctlHdr::default()
        }
    }

    #[test]
    fn layout_roundtrip() {
        let h = IoctlHdr {
            length: 0x1234,
            object_id: 0x1001,
            method_id: 7,
            num_attrs: 3,
            reserved1: 0x0102_0304_0506_0708,
            driver_id: 1,
            reserved2: 9,
        };
        let b = h.to_bytes();
        assert_eq!(IoctlHdr::from_bytes(&b), h);
        assert_eq!(&b[0..2], &0x1234u16.to_ne_bytes());
        assert_eq!(&b[16..20], &1u32.to_ne_bytes());
        let a = UAttr {
            attr_id: 0x1001,
            len: 8,
            flags: 1,
            elem_id: 2,
            elem_reserved: 3,
            data: u64::MAX - 1,
        };
        let ab = a.to_bytes();
        assert_eq!(UAttr::from_bytes(&ab), a);
        assert_eq!(ab[6], 2);
        assert_eq!(ab[7], 3);
        assert_eq!(&ab[UAttr::DATA_OFFSET..], &(u64::MAX - 1).to_ne_bytes());
        assert_eq!(&ab[UAttr::FLAGS_OFFSET..6], &1u16.to_ne_bytes());
    }

    #[test]
    fn ioctl_number() {
        assert_eq!(RDMA_VERBS_IOCTL, 0xC018_1B01);
        assert_eq!(MAX_IOCTL_ATTRS, 254);
    }

    #[test]
    fn wrong_ioctl_cmd_is_enoioctlcmd() {
        assert_eq!(
            check_ioctl_hdr(0xC018_1B02, &hdr(0)),
            Err(Errno::ENOIOCTLCMD)
        );
        assert_eq!(check_ioctl_hdr(RDMA_VERBS_IOCTL, &hdr(0)), Ok(()));
    }

    #[test]
    fn length_mismatch_is_einval() {
        let mut h = hdr(2);
        h.length += 1;
        assert_eq!(check_ioctl_hdr(RDMA_VERBS_IOCTL, &h), Err(Errno::EINVAL));
        let mut h = hdr(2);
        h.length = 24;
        assert_eq!(check_ioctl_hdr(RDMA_VERBS_IOCTL, &h), Err(Errno::EINVAL));
    }

    #[test]
    fn length_over_page_is_einval() {
        // 255 attributes: consistent length 4104 > 4096.
        let h = hdr(255);
        assert_eq!(usize::from(h.length), 24 + 255 * 16);
        assert_eq!(check_ioctl_hdr(RDMA_VERBS_IOCTL, &h), Err(Errno::EINVAL));
        assert_eq!(check_ioctl_hdr(RDMA_VERBS_IOCTL, &hdr(254)), Ok(()));
        // num_attrs whose byte count wraps u16 must not alias a short length.
        let mut h = hdr(0);
        h.num_attrs = 4096;
        h.length = 24;
        assert_eq!(check_ioctl_hdr(RDMA_VERBS_IOCTL, &h), Err(Errno::EINVAL));
    }

    #[test]
    fn reserved_is_eprotonosupport() {
        let mut h = hdr(1);
        h.reserved1 = 1;
        assert_eq!(
            check_ioctl_hdr(RDMA_VERBS_IOCTL, &h),
            Err(Errno::EPROTONOSUPPORT)
        );
        let mut h = hdr(1);
        h.reserved2 = 1 << 31;
        assert_eq!(
            check_ioctl_hdr(RDMA_VERBS_IOCTL, &h),
            Err(Errno::EPROTONOSUPPORT)
        );
        // The length check comes first.
        h.length = 0;
        assert_eq!(check_ioctl_hdr(RDMA_VERBS_IOCTL, &h), Err(Errno::EINVAL));
    }

    #[test]
    fn valid_output_keeps_user_bits() {
        assert_eq!(valid_output_flags(0), UVERBS_ATTR_F_VALID_OUTPUT);
        assert_eq!(valid_output_flags(UVERBS_ATTR_F_MANDATORY), 3);
        assert_eq!(valid_output_flags(0xfff0), 0xfff2);
    }
}
