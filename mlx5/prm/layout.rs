// SPDX-License-Identifier: GPL-2.0

//! PRM field access with `MLX5_SET`/`MLX5_GET` semantics.
//!
//! `mlx5_ifc.h` describes every firmware structure as a C struct of `u8 name[width_in_bits]`
//! members, so that `offsetof` is the bit offset and `sizeof` the bit width of a field. A
//! [`Field`] carries exactly those two numbers (plus the name, so the table can be diffed against
//! the header by `tools/prm-check`). The accessors here implement the same byte order as the C
//! macros in `include/linux/mlx5/device.h`: the buffer is a sequence of big-endian 32-bit dwords,
//! a sub-dword field is read-modify-written inside its dword, 64-bit fields are two dwords, most
//! significant first. Unlike the C macros, every access is checked against the buffer length and
//! the field shape, because the simulator applies them to bytes that a driver (or a fuzzer)
//! controls: nothing here can panic.

/// One member of a `struct mlx5_ifc_*_bits` layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    /// The member name exactly as in `mlx5_ifc.h`, so the table can be diffed against it.
    pub(crate) name: &'static str,
    /// Bit offset from the start of the enclosing layout (`__mlx5_bit_off`).
    pub(crate) bit_off: u32,
    /// Width in bits (`__mlx5_bit_sz`).
    pub(crate) bit_width: u32,
}

/// A whole `struct mlx5_ifc_*_bits` layout: its size and the members the project declares.
#[derive(Clone, Copy, Debug)]
// The kernel crate only declares layouts; their names and member lists are read by
// `tools/prm-check` and the host table tests.
#[cfg_attr(MODULE, allow(dead_code))]
pub(crate) struct Layout {
    /// The layout name without the `mlx5_ifc_` prefix and `_bits` suffix.
    pub(crate) name: &'static str,
    /// `MLX5_ST_SZ_BITS`: also the offset of a trailing flexible array member, if any.
    pub(crate) size_bits: u32,
    /// The declared members (reserved members are never declared).
    pub(crate) fields: &'static [Field],
}

/// Why a field access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PrmError {
    /// The field does not lie inside the buffer.
    OutOfBounds,
    /// The accessor does not fit the field's shape: a dword accessor on a field wider than 32
    /// bits or crossing a dword boundary, a 64-bit accessor on a field that is not a 64-bit
    /// aligned 64-bit field, a byte accessor on a field that is not byte aligned.
    Shape,
    /// `set` was given a value that does not fit the field's width (the C macro would silently
    /// truncate it; here that is a driver bug worth an error).
    ValueTooWide,
    /// A byte-array copy had a source of the wrong length.
    LengthMismatch,
}

impl Field {
    /// Declares a field; used by the [`prm_layout!`] tables.
    pub(crate) const fn new(name: &'static str, bit_off: u32, bit_width: u32) -> Self {
        Self {
            name,
            bit_off,
            bit_width,
        }
    }

    /// A member of a nested layout, addressed from the outer layout: for example
    /// `create_qp_in::qpc.inner(qpc::state)` is `MLX5_ADDR_OF(create_qp_in, in, qpc)` followed by
    /// `MLX5_GET(qpc, qpc, state)`. Saturates instead of overflowing so a nonsense offset is
    /// caught by the bounds check of the access rather than by a panic.
    pub(crate) const fn inner(self, member: Field) -> Field {
        Field {
            name: member.name,
            bit_off: self.bit_off.saturating_add(member.bit_off),
            bit_width: member.bit_width,
        }
    }

    /// The same field `n` elements further on, for arrays of equal-sized entries (GID and PKey
    /// tables that follow a command header as a flexible array member).
    pub(crate) const fn nth(self, n: u32) -> Field {
        Field {
            name: self.name,
            bit_off: self
                .bit_off
                .saturating_add(n.saturating_mul(self.bit_width)),
            bit_width: self.bit_width,
        }
    }

    /// Mask of the field's width, for values of at most 32 bits.
    const fn mask32(self) -> u32 {
        if self.bit_width >= 32 {
            u32::MAX
        } else {
            (1u32 << self.bit_width) - 1
        }
    }

    /// Byte index of the dword holding a sub-dword field, and the field's shift inside it.
    fn dword(self) -> Result<(usize, u32), PrmError> {
        let in_dw = self.bit_off % 32;
        if self.bit_width == 0 || self.bit_width > 32 || in_dw + self.bit_width > 32 {
            return Err(PrmError::Shape);
        }
        let byte = usize::try_from(self.bit_off / 32)
            .ok()
            .and_then(|dw| dw.checked_mul(4))
            .ok_or(PrmError::OutOfBounds)?;
        Ok((byte, 32 - in_dw - self.bit_width))
    }

    /// Reads a 4-byte big-endian word at `byte`.
    fn load(buf: &[u8], byte: usize) -> Result<u32, PrmError> {
        let end = byte.checked_add(4).ok_or(PrmError::OutOfBounds)?;
        let b = buf.get(byte..end).ok_or(PrmError::OutOfBounds)?;
        let mut w = [0u8; 4];
        w.copy_from_slice(b);
        Ok(u32::from_be_bytes(w))
    }

    /// Writes a 4-byte big-endian word at `byte`.
    fn store(buf: &mut [u8], byte: usize, v: u32) -> Result<(), PrmError> {
        let end = byte.checked_add(4).ok_or(PrmError::OutOfBounds)?;
        let b = buf.get_mut(byte..end).ok_or(PrmError::OutOfBounds)?;
        b.copy_from_slice(&v.to_be_bytes());
        Ok(())
    }

    /// `MLX5_GET`: a field of at most 32 bits that does not cross a dword boundary.
    pub(crate) fn get(self, buf: &[u8]) -> Result<u32, PrmError> {
        let (byte, shift) = self.dword()?;
        Ok((Self::load(buf, byte)? >> shift) & self.mask32())
    }

    /// `MLX5_SET`: read-modify-write of the field's bits inside its dword.
    pub(crate) fn set(self, buf: &mut [u8], v: u32) -> Result<(), PrmError> {
        let (byte, shift) = self.dword()?;
        let mask = self.mask32();
        if v & !mask != 0 {
            return Err(PrmError::ValueTooWide);
        }
        let old = Self::load(buf, byte)?;
        Self::store(buf, byte, (old & !(mask << shift)) | (v << shift))
    }

    /// Checks the `MLX5_SET64` shape rule (64 bits wide, 64-bit aligned) and gives the byte index.
    fn qword(self) -> Result<usize, PrmError> {
        if self.bit_width != 64 || self.bit_off & 63 != 0 {
            return Err(PrmError::Shape);
        }
        usize::try_from(self.bit_off / 8).map_err(|_| PrmError::OutOfBounds)
    }

    /// `MLX5_GET64`.
    // No kernel caller yet (the driver will read 64-bit GUIDs with it); host-tested.
    #[cfg_attr(MODULE, allow(dead_code))]
    pub(crate) fn get64(self, buf: &[u8]) -> Result<u64, PrmError> {
        let byte = self.qword()?;
        let hi = Self::load(buf, byte)?;
        let lo = Self::load(buf, byte.checked_add(4).ok_or(PrmError::OutOfBounds)?)?;
        Ok((u64::from(hi) << 32) | u64::from(lo))
    }

    /// `MLX5_SET64`.
    pub(crate) fn set64(self, buf: &mut [u8], v: u64) -> Result<(), PrmError> {
        let byte = self.qword()?;
        // Check the whole range first so a short buffer is not left half written.
        let end = byte.checked_add(8).ok_or(PrmError::OutOfBounds)?;
        let b = buf.get_mut(byte..end).ok_or(PrmError::OutOfBounds)?;
        b.copy_from_slice(&v.to_be_bytes());
        Ok(())
    }

    /// Byte range of a byte-aligned field whose width is a whole number of bytes.
    fn byte_range(self) -> Result<core::ops::Range<usize>, PrmError> {
        if self.bit_off & 7 != 0 || self.bit_width & 7 != 0 || self.bit_width == 0 {
            return Err(PrmError::Shape);
        }
        let start = usize::try_from(self.bit_off / 8).map_err(|_| PrmError::OutOfBounds)?;
        let len = usize::try_from(self.bit_width / 8).map_err(|_| PrmError::OutOfBounds)?;
        let end = start.checked_add(len).ok_or(PrmError::OutOfBounds)?;
        Ok(start..end)
    }

    /// `MLX5_ADDR_OF` for byte arrays and nested layouts (GIDs, MACs, a whole `qpc`).
    pub(crate) fn bytes(self, buf: &[u8]) -> Result<&[u8], PrmError> {
        buf.get(self.byte_range()?).ok_or(PrmError::OutOfBounds)
    }

    /// Mutable [`Field::bytes`].
    pub(crate) fn bytes_mut(self, buf: &mut [u8]) -> Result<&mut [u8], PrmError> {
        buf.get_mut(self.byte_range()?).ok_or(PrmError::OutOfBounds)
    }

    /// Copies `src` into a byte-array field; `src` must be exactly the field's size.
    pub(crate) fn set_bytes(self, buf: &mut [u8], src: &[u8]) -> Result<(), PrmError> {
        let dst = self.bytes_mut(buf)?;
        if dst.len() != src.len() {
            return Err(PrmError::LengthMismatch);
        }
        dst.copy_from_slice(src);
        Ok(())
    }
}

/// Declares one `mlx5_ifc.h` layout as a module of [`Field`] constants named exactly like the C
/// members, so that `MLX5_GET(qpc, c, state)` reads `qpc::state.get(c)`. The module also gets
/// `SIZE_BITS`, `SIZE_BYTES` and a `LAYOUT` value listing every declared member for the
/// `tools/prm-check` comparison with the C header.
macro_rules! prm_layout {
    (
        $(#[$doc:meta])*
        $name:ident, $size:expr;
        $($field:ident @ $off:expr, $width:expr;)*
    ) => {
        $(#[$doc])*
        #[allow(non_upper_case_globals)]
        pub(crate) mod $name {
            use crate::prm::layout::{Field, Layout};

            /// `MLX5_ST_SZ_BITS`; a trailing flexible array member starts here.
            pub(crate) const SIZE_BITS: u32 = $size;
            /// `MLX5_ST_SZ_BYTES`: the minimum mailbox length for this layout.
            pub(crate) const SIZE_BYTES: usize = ($size / 8) as usize;
            $(
                #[doc = concat!("`", stringify!($name), ".", stringify!($field), "` from mlx5_ifc.h.")]
                pub(crate) const $field: Field = Field::new(stringify!($field), $off, $width);
            )*
            /// Every declared member, for the `tools/prm-check` comparison with mlx5_ifc.h.
            pub(crate) const LAYOUT: Layout = Layout {
                name: stringify!($name),
                size_bits: SIZE_BITS,
                fields: &[$($field),*],
            };
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Field = Field::new("a", 0x4, 0x4);
    const B: Field = Field::new("b", 0x8, 0x18);
    const W: Field = Field::new("w", 0x20, 0x20);
    const Q: Field = Field::new("q", 0x40, 0x40);
    const CROSS: Field = Field::new("cross", 0x1c, 0x8);

    #[test]
    fn set_get_is_big_endian_rmw() {
        let mut b = [0u8; 16];
        A.set(&mut b, 0xf).unwrap();
        B.set(&mut b, 0x12_3456).unwrap();
        assert_eq!(&b[..4], &[0x0f, 0x12, 0x34, 0x56]);
        A.set(&mut b, 0x3).unwrap();
        assert_eq!(&b[..4], &[0x03, 0x12, 0x34, 0x56]);
        assert_eq!(A.get(&b), Ok(3));
        assert_eq!(B.get(&b), Ok(0x12_3456));
        W.set(&mut b, 0xdead_beef).unwrap();
        assert_eq!(&b[4..8], &[0xde, 0xad, 0xbe, 0xef]);
        Q.set64(&mut b, 0x0102_0304_0506_0708).unwrap();
        assert_eq!(&b[8..], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(Q.get64(&b), Ok(0x0102_0304_0506_0708));
    }

    #[test]
    fn refuses_instead_of_panicking() {
        let mut short = [0u8; 3];
        assert_eq!(A.get(&short), Err(PrmError::OutOfBounds));
        assert_eq!(A.set(&mut short, 1), Err(PrmError::OutOfBounds));
        let mut b = [0u8; 16];
        assert_eq!(A.set(&mut b, 0x10), Err(PrmError::ValueTooWide));
        assert_eq!(CROSS.get(&b), Err(PrmError::Shape));
        assert_eq!(W.get64(&b), Err(PrmError::Shape));
        assert_eq!(Q.get(&b), Err(PrmError::Shape));
        assert_eq!(A.bytes(&b), Err(PrmError::Shape));
        assert_eq!(Q.set64(&mut b[..12], 1), Err(PrmError::OutOfBounds));
        assert_eq!(b, [0u8; 16], "a refused write must not touch the buffer");
        assert_eq!(Q.set_bytes(&mut b, &[1, 2]), Err(PrmError::LengthMismatch));
        let far = Field::new("far", u32::MAX - 3, 4);
        assert_eq!(far.get(&b), Err(PrmError::OutOfBounds));
        assert!(far.inner(far).get(&b).is_err());
    }

    #[test]
    fn inner_and_nth_address_nested_members() {
        let outer = Field::new("ctx", 0x80, 0x100);
        let f = outer.inner(B);
        assert_eq!((f.bit_off, f.bit_width), (0x88, 0x18));
        let g = Field::new("gid", 0x80, 0x80).nth(2);
        assert_eq!(g.bit_off, 0x180);
    }
}
