// SPDX-License-Identifier: GPL-2.0

//! The `RDMA_VERBS_IOCTL` wire format (`include/uapi/rdma/
//! rdma_user_ioctl_cmds.h`): the 24-byte header, the 16-byte attributes, and
//! the header checks of `ib_uverbs_ioctl()`.
//!
//! Decoding is native-endian (`from_ne_bytes`), as the C structs are: the
//! user and the kernel share the CPU.

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

/// upstream: `struct ib_uverbs_ioctl_hdr` (without the flexible `attrs[]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct IoctlHdr {
    /// Total length of the header plus the attribute array, in bytes.
    pub(crate) length: u16,
    pub(crate) object_id: u16,
    pub(crate) method_id: u16,
    pub(crate) num_attrs: u16,
    pub(crate) reserved1: u64,
    /// `enum rdma_driver_id` the user expects (rdma-core sends its
    /// provider's id, RDMA_DRIVER_MLX5 = 1).
    pub(crate) driver_id: u32,
    pub(crate) reserved2: u32,
}

const _: () = assert!(core::mem::size_of::<IoctlHdr>() == 24);
const _: () = assert!(core::mem::align_of::<IoctlHdr>() == 8);

impl IoctlHdr {
    /// `sizeof(struct ib_uverbs_ioctl_hdr)`.
    pub(crate) const SIZE: usize = 24;

    /// Decodes the header from the bytes copied from user space.
    pub(crate) fn from_bytes(b: &[u8; Self::SIZE]) -> Self {
        let [l0, l1, o0, o1, m0, m1, n0, n1, r0, r1, r2, r3, r4, r5, r6, r7, d0, d1, d2, d3, s0, s1, s2, s3] =
            *b;
        Self {
            length: u16::from_ne_bytes([l0, l1]),
            object_id: u16::from_ne_bytes([o0, o1]),
            method_id: u16::from_ne_bytes([m0, m1]),
            num_attrs: u16::from_ne_bytes([n0, n1]),
            reserved1: u64::from_ne_bytes([r0, r1, r2, r3, r4, r5, r6, r7]),
            driver_id: u32::from_ne_bytes([d0, d1, d2, d3]),
            reserved2: u32::from_ne_bytes([s0, s1, s2, s3]),
        }
    }

    /// Decodes the header from the start of `b`; `None` if `b` is shorter
    /// than 24 bytes (the kernel side copies exactly 24, `EFAULT` on fault).
    pub(crate) fn from_prefix(b: &[u8]) -> Option<Self> {
        let head = b.get(..Self::SIZE)?;
        let arr: &[u8; Self::SIZE] = head.try_into().ok()?;
        Some(Self::from_bytes(arr))
    }

    /// Encodes the header (tests, and user-space style request builders).
    pub(crate) fn to_bytes(self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        let fields: [(usize, &[u8]); 7] = [
            (0, &self.length.to_ne_bytes()),
            (2, &self.object_id.to_ne_bytes()),
            (4, &self.method_id.to_ne_bytes()),
            (6, &self.num_attrs.to_ne_bytes()),
            (8, &self.reserved1.to_ne_bytes()),
            (16, &self.driver_id.to_ne_bytes()),
            (20, &self.reserved2.to_ne_bytes()),
        ];
        for (off, src) in fields {
            if let Some(dst) = out.get_mut(off..off + src.len()) {
                dst.copy_from_slice(src);
            }
        }
        out
    }

    /// The number of bytes of the attribute array that follows the header
    /// (`num_attrs * 16`); valid after [`check_ioctl_hdr`] succeeded.
    pub(crate) fn attrs_len(&self) -> usize {
        usize::from(self.num_attrs) * UAttr::SIZE
    }
}

/// upstream: `struct ib_uverbs_attr`.
///
/// `attr_data` is a union of `{u8 elem_id; u8 reserved}` (ENUM_IN) and
/// `u16 reserved` (everything else); it is kept as its two bytes, which makes
/// both views endian-independent. `data` is a union of `u64 data` and `s64
/// data_s64` (FD and RAW_FD attributes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct UAttr {
    pub(crate) attr_id: u16,
    /// Length of the pointed-to (or inline, when <= 8) data.
    pub(crate) len: u16,
    /// `UVERBS_ATTR_F_*`.
    pub(crate) flags: u16,
    /// `attr_data.enum_data.elem_id`.
    pub(crate) elem_id: u8,
    /// `attr_data.enum_data.reserved`.
    pub(crate) elem_reserved: u8,
    /// Pointer to the data, the data itself when `len <= 8`, an IDR handle
    /// or an fd.
    pub(crate) data: u64,
}

const _: () = assert!(core::mem::size_of::<UAttr>() == 16);
const _: () = assert!(core::mem::align_of::<UAttr>() == 8);

impl UAttr {
    /// `sizeof(struct ib_uverbs_attr)`.
    pub(crate) const SIZE: usize = 16;
    /// Byte offset of `flags` in the user's attribute (for the
    /// `VALID_OUTPUT` write-back, upstream `uverbs_set_output()`).
    pub(crate) const FLAGS_OFFSET: usize = 4;
    /// Byte offset of `data` (for writing back a NEW object's id).
    pub(crate) const DATA_OFFSET: usize = 8;

    /// Decodes one attribute.
    pub(crate) fn from_bytes(b: &[u8; Self::SIZE]) -> Self {
        let [a0, a1, l0, l1, f0, f1, e, r, d0, d1, d2, d3, d4, d5, d6, d7] = *b;
        Self {
            attr_id: u16::from_ne_bytes([a0, a1]),
            len: u16::from_ne_bytes([l0, l1]),
            flags: u16::from_ne_bytes([f0, f1]),
            elem_id: e,
            elem_reserved: r,
            data: u64::from_ne_bytes([d0, d1, d2, d3, d4, d5, d6, d7]),
        }
    }

    /// Encodes one attribute.
    pub(crate) fn to_bytes(self) -> [u8; Self::SIZE] {
        let [a0, a1] = self.attr_id.to_ne_bytes();
        let [l0, l1] = self.len.to_ne_bytes();
        let [f0, f1] = self.flags.to_ne_bytes();
        let [d0, d1, d2, d3, d4, d5, d6, d7] = self.data.to_ne_bytes();
        [
            a0,
            a1,
            l0,
            l1,
            f0,
            f1,
            self.elem_id,
            self.elem_reserved,
            d0,
            d1,
            d2,
            d3,
            d4,
            d5,
            d6,
            d7,
        ]
    }

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
