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
#[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
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
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if the field is not inside `buf`, [`PrmError::Shape`] for a
    /// field wider than 32 bits or crossing a dword.
    pub(crate) fn get(self, buf: &[u8]) -> Result<u32, PrmError> {
        let (byte, shift) = self.dword()?;
        Ok((Self::load(buf, byte)? >> shift) & self.mask32())
    }

    /// `MLX5_SET`: read-modify-write of the field's bits inside its dword.
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if the field is not inside `buf`, [`PrmError::Shape`] for a
    /// field wider than 32 bits or crossing a dword, [`PrmError::ValueTooWide`] if `v` does not
    /// fit the field.
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
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if the field is not inside `buf`, [`PrmError::Shape`] unless
    /// it is a 64-bit aligned 64-bit field.
    pub(crate) fn get64(self, buf: &[u8]) -> Result<u64, PrmError> {
        let byte = self.qword()?;
        let hi = Self::load(buf, byte)?;
        let lo = Self::load(buf, byte.checked_add(4).ok_or(PrmError::OutOfBounds)?)?;
        Ok((u64::from(hi) << 32) | u64::from(lo))
    }

    /// `MLX5_SET64`.
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if the field is not inside `buf`, [`PrmError::Shape`] unless
    /// it is a 64-bit aligned 64-bit field.
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
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if the field is not inside `buf`, [`PrmError::Shape`] unless
    /// it is byte aligned and whole bytes wide.
    pub(crate) fn bytes(self, buf: &[u8]) -> Result<&[u8], PrmError> {
        buf.get(self.byte_range()?).ok_or(PrmError::OutOfBounds)
    }

    /// Mutable [`Field::bytes`].
    ///
    /// # Errors
    ///
    /// As for `bytes`.
    pub(crate) fn bytes_mut(self, buf: &mut [u8]) -> Result<&mut [u8], PrmError> {
        buf.get_mut(self.byte_range()?).ok_or(PrmError::OutOfBounds)
    }

    /// Copies `src` into a byte-array field; `src` must be exactly the field's size.
    ///
    /// # Errors
    ///
    /// As for `bytes`, and [`PrmError::LengthMismatch`] if `src` is not exactly the field's
    /// size.
    pub(crate) fn set_bytes(self, buf: &mut [u8], src: &[u8]) -> Result<(), PrmError> {
        let dst = self.bytes_mut(buf)?;
        if dst.len() != src.len() {
            return Err(PrmError::LengthMismatch);
        }
        dst.copy_from_slice(src);
        Ok(())
    }
}

/// The `struct mlx5_ifc_<name>_bits` a layout module stands for: implemented by the module's
/// `Bits` type, so that a [`Member`], a [`Buf`] or a [`BufMut`] names its layout in its type.
pub(crate) trait PrmLayout {
    /// `MLX5_ST_SZ_BYTES`: the fixed part; a flexible array member starts here.
    const SIZE_BYTES: usize;
}

/// A member of layout `L`.
///
/// The type is what makes the accessors safe to call without a `?`: a [`Buf<L>`] or
/// [`BufMut<L>`] was length-checked against `L::SIZE_BYTES` once, and `prm_layouts!` asserts
/// at compile time that every member lies inside its layout, has a shape some accessor accepts
/// and, if it embeds a layout, is exactly that layout's width; so a typed access cannot leave
/// the buffer. Reading or setting a member of another layout does not compile.
pub(crate) struct Member<L> {
    /// The member name exactly as in `mlx5_ifc.h`.
    pub(crate) name: &'static str,
    /// Bit offset from the start of `L`.
    pub(crate) bit_off: u32,
    /// Width in bits.
    pub(crate) bit_width: u32,
    _layout: core::marker::PhantomData<fn() -> L>,
}

impl<L> Clone for Member<L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L> Copy for Member<L> {}

impl<L> core::fmt::Debug for Member<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.field().fmt(f)
    }
}

impl<L> Member<L> {
    /// Declares a member; used by the [`prm_layouts!`] tables.
    pub(crate) const fn new(name: &'static str, bit_off: u32, bit_width: u32) -> Self {
        Self {
            name,
            bit_off,
            bit_width,
            _layout: core::marker::PhantomData,
        }
    }

    /// The untyped field, for raw accesses (host tests, the ifc check).
    pub(crate) const fn field(self) -> Field {
        Field::new(self.name, self.bit_off, self.bit_width)
    }

    /// The same member `n` elements further on (arrays of equal-sized entries).
    pub(crate) const fn nth(self, n: u32) -> Self {
        let f = self.field().nth(n);
        Self::new(f.name, f.bit_off, f.bit_width)
    }

    /// A member of a layout nested in this one, addressed from the outer layout: for example
    /// `create_qp_in::qpc.inner(qpc::state)` is `MLX5_ADDR_OF(create_qp_in, in, qpc)` followed
    /// by `MLX5_GET(qpc, qpc, state)`; also one arm of a union (`capability` holds the
    /// `hca_cap_union`). The result is a member of the outer layout. Which inner layout is
    /// meant is the caller's word (the table asserts each embedded layout's width).
    /// Saturates instead of overflowing, so a nonsense offset fails the access's bounds check.
    pub(crate) const fn inner<M: PrmLayout>(self, member: Member<M>) -> Member<L> {
        Member::new(
            member.name,
            self.bit_off.saturating_add(member.bit_off),
            member.bit_width,
        )
    }

    /// `MLX5_GET` on raw bytes.
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if the field is not inside `buf`, [`PrmError::Shape`] for a
    /// field wider than 32 bits or crossing a dword.
    pub(crate) fn get(self, buf: &[u8]) -> Result<u32, PrmError> {
        self.field().get(buf)
    }

    /// `MLX5_SET` on raw bytes.
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if the field is not inside `buf`, [`PrmError::Shape`] for a
    /// field wider than 32 bits or crossing a dword, [`PrmError::ValueTooWide`] if `v` does not
    /// fit the field.
    pub(crate) fn set(self, buf: &mut [u8], v: u32) -> Result<(), PrmError> {
        self.field().set(buf, v)
    }

    /// `MLX5_GET64` on raw bytes.
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if the field is not inside `buf`, [`PrmError::Shape`] unless
    /// it is a 64-bit aligned 64-bit field.
    pub(crate) fn get64(self, buf: &[u8]) -> Result<u64, PrmError> {
        self.field().get64(buf)
    }

    /// `MLX5_SET64` on raw bytes.
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if the field is not inside `buf`, [`PrmError::Shape`] unless
    /// it is a 64-bit aligned 64-bit field.
    pub(crate) fn set64(self, buf: &mut [u8], v: u64) -> Result<(), PrmError> {
        self.field().set64(buf, v)
    }

    /// `MLX5_ADDR_OF` on raw bytes.
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if the field is not inside `buf`, [`PrmError::Shape`] unless
    /// it is byte aligned and whole bytes wide.
    pub(crate) fn bytes(self, buf: &[u8]) -> Result<&[u8], PrmError> {
        self.field().bytes(buf)
    }

    /// Mutable [`Member::bytes`].
    ///
    /// # Errors
    ///
    /// As for `bytes`.
    pub(crate) fn bytes_mut(self, buf: &mut [u8]) -> Result<&mut [u8], PrmError> {
        self.field().bytes_mut(buf)
    }

    /// Copies `src` into a byte-array member of raw bytes.
    ///
    /// # Errors
    ///
    /// As for `bytes`, and [`PrmError::LengthMismatch`] if `src` is not exactly the field's
    /// size.
    pub(crate) fn set_bytes(self, buf: &mut [u8], src: &[u8]) -> Result<(), PrmError> {
        self.field().set_bytes(buf, src)
    }
}

/// A [`Field`] or a [`Member`] of any layout: for raw helpers (host tests) that take either.
#[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
pub(crate) trait AnyField: Copy {
    /// The untyped field.
    fn any_field(self) -> Field;
}

impl AnyField for Field {
    fn any_field(self) -> Field {
        self
    }
}

impl<L> AnyField for Member<L> {
    fn any_field(self) -> Field {
        self.field()
    }
}

/// Whether a member's shape suits one of the accessors (`prm_layouts!` asserts it for every
/// member): inside one dword, a 64-bit aligned qword, or whole aligned bytes.
pub(crate) const fn member_ok(off: u32, width: u32, size: u32) -> bool {
    let inside = width > 0 && off <= size && width <= size - off;
    let dword = width <= 32 && off % 32 + width <= 32;
    let qword = width == 64 && off.is_multiple_of(64);
    let bytes = off.is_multiple_of(8) && width.is_multiple_of(8);
    inside && (dword || qword || bytes)
}

/// Bytes of layout `L`, length-checked once ([`Buf::new`]), so reading a member cannot fail.
pub(crate) struct Buf<'a, L> {
    b: &'a [u8],
    _layout: core::marker::PhantomData<fn() -> L>,
}

impl<L> Clone for Buf<'_, L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L> Copy for Buf<'_, L> {}

impl<'a, L: PrmLayout> Buf<'a, L> {
    /// Views `b` as an `L`.
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if `b` is shorter than `L`'s fixed part.
    pub(crate) fn new(b: &'a [u8]) -> Result<Self, PrmError> {
        if b.len() < L::SIZE_BYTES {
            return Err(PrmError::OutOfBounds);
        }
        Ok(Self {
            b,
            _layout: core::marker::PhantomData,
        })
    }

    /// `MLX5_GET`. A member wider than 32 bits reads with [`Buf::get64`] or [`Buf::bytes`];
    /// `get` of one is a program bug and reads 0 (never a panic).
    pub(crate) fn get(&self, m: Member<L>) -> u32 {
        m.get(self.b).unwrap_or(0)
    }

    /// `MLX5_GET64` (a 64-bit aligned 64-bit member; anything else reads 0).
    // The driver reads 64-bit members (GUIDs); the simulator only writes them.
    #[cfg_attr(not(MODULE), allow(dead_code))]
    pub(crate) fn get64(&self, m: Member<L>) -> u64 {
        m.get64(self.b).unwrap_or(0)
    }

    /// `MLX5_ADDR_OF` of a byte-aligned member (empty for one that is not).
    pub(crate) fn bytes(&self, m: Member<L>) -> &'a [u8] {
        m.bytes(self.b).unwrap_or(&[])
    }

    /// A byte-array member as an array (zeros if `N` is not its size).
    pub(crate) fn array<const N: usize>(&self, m: Member<L>) -> [u8; N] {
        self.bytes(m).try_into().unwrap_or([0; N])
    }

    /// Everything past the fixed part: a flexible array member (`register_data[]`, ...).
    #[cfg_attr(not(MODULE), allow(dead_code))]
    pub(crate) fn tail(&self) -> &'a [u8] {
        self.b.get(L::SIZE_BYTES..).unwrap_or(&[])
    }

    /// The whole buffer, fixed part and tail.
    pub(crate) fn raw(&self) -> &'a [u8] {
        self.b
    }
}

/// Mutable bytes of layout `L`, length-checked once ([`BufMut::new`]).
pub(crate) struct BufMut<'a, L> {
    b: &'a mut [u8],
    _layout: core::marker::PhantomData<fn() -> L>,
}

impl<'a, L: PrmLayout> BufMut<'a, L> {
    /// Views `b` as an `L`.
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if `b` is shorter than `L`'s fixed part.
    pub(crate) fn new(b: &'a mut [u8]) -> Result<Self, PrmError> {
        if b.len() < L::SIZE_BYTES {
            return Err(PrmError::OutOfBounds);
        }
        Ok(Self {
            b,
            _layout: core::marker::PhantomData,
        })
    }

    /// `MLX5_SET`.
    ///
    /// # Errors
    ///
    /// [`PrmError::ValueTooWide`] if `v` does not fit the member ([`PrmError::Shape`] for a
    /// member wider than 32 bits, a program bug).
    pub(crate) fn set(&mut self, m: Member<L>, v: u32) -> Result<(), PrmError> {
        m.set(self.b, v)
    }

    /// `MLX5_SET64`.
    ///
    /// # Errors
    ///
    /// [`PrmError::Shape`] if the member is not a 64-bit aligned 64-bit member.
    pub(crate) fn set64(&mut self, m: Member<L>, v: u64) -> Result<(), PrmError> {
        m.set64(self.b, v)
    }

    /// Copies `src` into a byte-array member.
    ///
    /// # Errors
    ///
    /// [`PrmError::LengthMismatch`] if `src` is not the member's size.
    pub(crate) fn set_bytes(&mut self, m: Member<L>, src: &[u8]) -> Result<(), PrmError> {
        m.set_bytes(self.b, src)
    }

    // The driver writes page lists; the simulator only reads them.
    #[cfg_attr(not(MODULE), allow(dead_code))]
    /// Writes `v` as the `n`-th 64-bit big-endian entry of the flexible array after the fixed
    /// part (`pas[]`, MTT entries).
    ///
    /// # Errors
    ///
    /// [`PrmError::OutOfBounds`] if the buffer is too short for it.
    pub(crate) fn set_tail64(&mut self, n: usize, v: u64) -> Result<(), PrmError> {
        let start = n
            .checked_mul(8)
            .and_then(|o| o.checked_add(L::SIZE_BYTES))
            .ok_or(PrmError::OutOfBounds)?;
        let end = start.checked_add(8).ok_or(PrmError::OutOfBounds)?;
        let dst = self.b.get_mut(start..end).ok_or(PrmError::OutOfBounds)?;
        dst.copy_from_slice(&v.to_be_bytes());
        Ok(())
    }

    /// Everything past the fixed part.
    #[cfg_attr(not(MODULE), allow(dead_code))]
    pub(crate) fn tail_mut(&mut self) -> &mut [u8] {
        self.b.get_mut(L::SIZE_BYTES..).unwrap_or(&mut [])
    }

    /// Length of the whole buffer, fixed part and tail.
    pub(crate) fn len(&self) -> usize {
        self.b.len()
    }

    /// The whole buffer, for trailing arrays addressed by an untyped [`Field`].
    pub(crate) fn raw_mut(&mut self) -> &mut [u8] {
        self.b
    }
}

/// Declares `mlx5_ifc.h` layouts, each as a module of [`Member`] constants named exactly like
/// the C members, so that `MLX5_GET(qpc, c, state)` reads `qpc::state.get(c)`. Each module gets
/// `Bits` (its [`PrmLayout`] type), `SIZE_BITS`, `SIZE_BYTES` and `LAYOUT`; the invocation gets
/// `ALL`, every layout it declared, which is what `tools/prm-check` compares with the C header
/// (so a declared layout is a checked layout, with no list to keep). A member that embeds a
/// layout says which (`qpc @ 0xc0, 0x800 => crate::prm::ctx::qpc;`), and must be exactly that
/// layout's width.
///
/// Layouts that mlx5_ifc.h declares with the same members (the QP transitions' mailboxes) are
/// one entry, `a | b | c, SIZE { .. }`: each name still gets its own module and `Bits` type
/// (a member of `a` does not fill a mailbox of `b`), and its own line in `ALL`.
macro_rules! prm_layouts {
    (
        $(
            $(#[$doc:meta])*
            $($name:ident)|+, $size:literal { $($body:tt)* }
        )*
    ) => {
        $(
            prm_layouts!(@each [$(#[$doc])*] $size { $($body)* } $($name)+);
        )*

        /// Every layout declared in this file, for `tools/prm-check` and the table tests.
        pub(crate) const ALL: &[crate::prm::layout::Layout] = &[$($($name::LAYOUT),+),*];
    };
    (@each [$($attr:tt)*] $size:literal { $($body:tt)* } $name:ident $($rest:ident)*) => {
        prm_layouts!(@one $($attr)* $name, $size { $($body)* });
        prm_layouts!(@each [$($attr)*] $size { $($body)* } $($rest)*);
    };
    (@each [$($attr:tt)*] $size:literal { $($body:tt)* }) => {};
    (
        @one $(#[$doc:meta])*
        $name:ident, $size:literal {
            $($field:ident @ $off:expr, $width:expr $(=> $($nest:ident)::+)?;)*
        }
    ) => {
        $(#[$doc])*
        #[allow(non_upper_case_globals)]
        pub(crate) mod $name {
            use crate::prm::layout::{Layout, Member, PrmLayout};

            /// `MLX5_ST_SZ_BITS`; a trailing flexible array member starts here.
            pub(crate) const SIZE_BITS: u32 = $size;
            /// `MLX5_ST_SZ_BYTES`: the minimum mailbox length for this layout.
            pub(crate) const SIZE_BYTES: usize = ($size / 8) as usize;
            #[doc = concat!("`struct mlx5_ifc_", stringify!($name), "_bits`.")]
            #[derive(Clone, Copy, Debug)]
            pub(crate) enum Bits {}
            impl PrmLayout for Bits {
                const SIZE_BYTES: usize = SIZE_BYTES;
            }
            $(
                #[doc = concat!("`", stringify!($name), ".", stringify!($field), "` from mlx5_ifc.h.")]
                pub(crate) const $field: Member<Bits> =
                    Member::new(stringify!($field), $off, $width);
                const _: () = assert!(crate::prm::layout::member_ok($off, $width, $size));
                $(const _: () = assert!($width == $($nest)::+::SIZE_BITS);)?
            )*
            /// Every declared member, for the `tools/prm-check` comparison with mlx5_ifc.h.
            pub(crate) const LAYOUT: Layout = Layout {
                name: stringify!($name),
                size_bits: SIZE_BITS,
                fields: &[$($field.field()),*],
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
