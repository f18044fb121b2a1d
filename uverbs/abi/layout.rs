// SPDX-License-Identifier: GPL-2.0

//! Typed user-ABI structs: one declaration per C struct of the uapi headers
//! (`include/uapi/rdma/ib_user_verbs.h`, `rdma_user_ioctl_cmds.h`,
//! `ib_user_ioctl_verbs.h`, `mlx5-abi.h`), from which [`uapi_structs!`] makes
//!
//! * a `#[repr(C)]` struct with the C members (flexible arrays left out),
//! * a compile-time assert of its size,
//! * `from_bytes()` (zero-extended, as `uverbs_request()` and
//!   `ib_copy_validate_udata_in()` copy a short request) and `to_bytes()`,
//!   decoding and encoding member by member at `offset_of!` offsets, in the
//!   CPU's byte order (user and kernel share the CPU): no `unsafe`, no
//!   transmute, so the code stays pure and builds on the host too,
//! * an entry of the invocation's `LAYOUTS` table: the C name, size and
//!   every member's offset and size, which `tools/uabi-check` compares with
//!   what a C compiler says about the kernel's headers.
//!
//! Every ABI struct the code reads or writes is declared with the macro, so
//! the check covers all of them without a list of its own.
//!
//! This file is mounted by the uverbs ABI (`uverbs/abi.rs`) and by the mlx5
//! driver (`mlx5/mlx5_ib_rs.rs`, `host/prm`): each crate gets its own copy.

/// A member type of a user-ABI struct.
pub(crate) trait AbiField: Copy + Default {
    /// `sizeof` the member.
    const SIZE: usize;
    /// Decodes from the first `SIZE` bytes of `b`, zero-extended if `b` is shorter.
    fn read(b: &[u8]) -> Self;
    /// Encodes into the first `SIZE` bytes of `b` (which has them).
    fn write(&self, b: &mut [u8]);
}

macro_rules! abi_int {
    ($($t:ty),*) => {$(
        impl AbiField for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            fn read(b: &[u8]) -> Self {
                let mut a = [0u8; core::mem::size_of::<$t>()];
                let n = b.len().min(a.len());
                if let (Some(d), Some(s)) = (a.get_mut(..n), b.get(..n)) {
                    d.copy_from_slice(s);
                }
                <$t>::from_ne_bytes(a)
            }
            fn write(&self, b: &mut [u8]) {
                let a = self.to_ne_bytes();
                if let Some(d) = b.get_mut(..a.len()) {
                    d.copy_from_slice(&a);
                }
            }
        }
    )*};
}
abi_int!(u8, u16, u32, u64, i32, i64);

impl<T: AbiField, const N: usize> AbiField for [T; N]
where
    [T; N]: Default,
{
    const SIZE: usize = T::SIZE * N;
    fn read(b: &[u8]) -> Self {
        let mut a = <[T; N]>::default();
        for (i, e) in a.iter_mut().enumerate() {
            *e = T::read(b.get(i * T::SIZE..).unwrap_or(&[]));
        }
        a
    }
    fn write(&self, b: &mut [u8]) {
        for (i, e) in self.iter().enumerate() {
            if let Some(d) = b.get_mut(i * T::SIZE..) {
                e.write(d);
            }
        }
    }
}

/// One struct of a `LAYOUTS` table.
#[allow(
    dead_code,
    reason = "read by the ABI check's host binary (uabi-fields), not by the modules"
)]
pub(crate) struct Layout {
    /// The C struct's name (`ib_uverbs_create_cq`).
    pub(crate) name: &'static str,
    /// `sizeof`.
    pub(crate) size: usize,
    /// Each member: its C name (a member designator such as
    /// `attr_data.enum_data.elem_id` where the Rust member is a union's
    /// part), `offsetof` and `sizeof`.
    pub(crate) fields: &'static [(&'static str, usize, usize)],
}

/// The C member name of a field: its own, or the designator given with `as`.
macro_rules! uapi_c_member {
    ($f:ident) => {
        stringify!($f)
    };
    ($f:ident, $c:literal) => {
        $c
    };
}
pub(crate) use uapi_c_member;

/// Declares user-ABI structs and a `LAYOUTS` table of them (see the module
/// documentation). `AbiField`, `Layout` and `uapi_c_member` must be in scope.
/// The generated methods and the table carry `#[allow(dead_code)]`, not
/// `#[expect]`: each crate uses another part of them.
///
/// ```ignore
/// uapi_structs! {
///     /// `struct ib_uverbs_destroy_cq`.
///     ib_uverbs_destroy_cq => pub(crate) struct DestroyCq(16) {
///         response: u64,
///         cq_handle: u32,
///         reserved: u32,
///     }
/// }
/// ```
macro_rules! uapi_structs {
    ($(
        $(#[$m:meta])*
        $cname:ident => $vis:vis struct $name:ident($size:literal) {
            $( $(#[$fm:meta])* $field:ident $(as $cf:literal)? : $ty:ty ),* $(,)?
        }
    )*) => {
        $(
            $(#[$m])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
            $vis struct $name {
                $( $(#[$fm])* pub(crate) $field: $ty, )*
            }

            const _: () = assert!(core::mem::size_of::<$name>() == $size);

            impl $name {
                /// `sizeof` the C struct.
                #[allow(dead_code)]
                pub(crate) const SIZE: usize = $size;

                /// Decodes the struct from the start of `b`, zero-extended
                /// as `copy_struct_from_user()` copies a shorter struct (a
                /// member `b` ends in keeps the bytes `b` has).
                #[allow(dead_code)]
                pub(crate) fn from_bytes(b: &[u8]) -> Self {
                    let mut a = [0u8; $size];
                    let n = b.len().min($size);
                    if let (Some(d), Some(s)) = (a.get_mut(..n), b.get(..n)) {
                        d.copy_from_slice(s);
                    }
                    Self {
                        $( $field: <$ty as AbiField>::read(
                            a.get(core::mem::offset_of!($name, $field)..).unwrap_or(&[]),
                        ), )*
                    }
                }

                /// Encodes the struct.
                #[allow(dead_code)]
                pub(crate) fn to_bytes(self) -> [u8; $size] {
                    let mut b = [0u8; $size];
                    $(
                        if let Some(d) = b.get_mut(core::mem::offset_of!($name, $field)..) {
                            AbiField::write(&self.$field, d);
                        }
                    )*
                    b
                }
            }

            impl AbiField for $name {
                const SIZE: usize = $size;
                fn read(b: &[u8]) -> Self {
                    Self::from_bytes(b)
                }
                fn write(&self, b: &mut [u8]) {
                    let a = self.to_bytes();
                    if let Some(d) = b.get_mut(..a.len()) {
                        d.copy_from_slice(&a);
                    }
                }
            }
        )*

        /// Every struct declared in this file, for the ABI check
        /// (`tools/uabi-check`).
        #[allow(dead_code)]
        pub(crate) const LAYOUTS: &[Layout] = &[$(
            Layout {
                name: stringify!($cname),
                size: core::mem::size_of::<$name>(),
                fields: &[$(
                    (
                        uapi_c_member!($field $(, $cf)?),
                        core::mem::offset_of!($name, $field),
                        core::mem::size_of::<$ty>(),
                    ),
                )*],
            },
        )*];
    };
}
pub(crate) use uapi_structs;
