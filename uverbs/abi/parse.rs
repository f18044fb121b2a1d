// SPDX-License-Identifier: GPL-2.0

//! The ioctl parsing path: method lookup, attribute processing into a
//! fixed-size bundle, the mandatory check, and the accessors handlers use,
//! errno for errno with upstream `ib_uverbs_cmd_verbs()`,
//! `ib_uverbs_run_method()`, `uverbs_set_attr()` and
//! `uverbs_process_attr()`.
//!
//! Where upstream touches user memory or uobjects in the middle of parsing,
//! the parser calls an [`AttrEnv`] hook at that exact point, so a request
//! with several faults fails with the same errno as upstream.

use super::ioctl::{
    check_ioctl_hdr, uattrs, valid_output_flags, IoctlHdr, UAttr, UVERBS_ATTR_F_MANDATORY,
};
use super::spec::{uapi_key_attr, Access, AttrKind, PtrDir};
use super::uapi::{MethodEntry, UapiTree, MAX_METHOD_ATTRS};
use super::Errno;

/// Size of `ib_uverbs_attr.data`: a pointer attribute of at most this many
/// bytes carries its data inline.
pub(crate) const INLINE_LEN: u16 = 8;

/// The effects of parsing that the kernel side provides.
pub(crate) trait AttrEnv {
    /// Whether `len` user bytes at `addr` are all zero; `false` if they
    /// cannot be read.
    ///
    /// upstream: `ib_is_buffer_cleared()`.
    fn user_buffer_cleared(&mut self, addr: u64, len: usize) -> bool;

    /// An `alloc_and_copy` PTR_IN of more than 8 bytes: allocate `len`
    /// bytes for attribute index `idx` and copy them from `addr`.
    ///
    /// upstream: `uverbs_alloc()` + `copy_from_user()` in
    /// `uverbs_process_attr()` (`ENOMEM`, `EFAULT`).
    fn alloc_and_copy(&mut self, idx: usize, addr: u64, len: usize) -> Result<(), Errno>;

    /// An IDR or FD attribute: look up (or, for NEW, allocate) the uobject
    /// and for NEW write its id to the user's `attrs[uattr_idx].data`.
    ///
    /// upstream: `uverbs_get_uobject_from_file()` + `put_user()`.
    fn get_uobject(
        &mut self,
        idx: usize,
        uattr_idx: usize,
        obj_type: u16,
        access: Access,
        id: i64,
    ) -> Result<(), Errno>;

    /// An IDRS_ARRAY attribute that passed the length checks: copy the
    /// `len / 4` handles (from `data` if `len > 8`, else the inline bytes
    /// of `data`) and look every one up.
    ///
    /// upstream: the second half of `uverbs_process_idrs_array()`.
    fn get_uobjects_array(
        &mut self,
        idx: usize,
        obj_type: u16,
        access: Access,
        data: u64,
        len: u16,
    ) -> Result<(), Errno>;
}

/// A decoded pointer attribute (upstream `struct uverbs_ptr_attr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PtrAttr {
    /// The user pointer, or the inline data when `len <= 8`.
    pub(crate) data: u64,
    pub(crate) len: u16,
    /// Position of the attribute in the user's array (for write-backs).
    pub(crate) uattr_idx: u16,
    /// ENUM_IN: the selected element.
    pub(crate) enum_id: u8,
    /// The user's flags word (for the VALID_OUTPUT write-back).
    pub(crate) flags: u16,
}

impl PtrAttr {
    /// upstream: `uverbs_attr_ptr_is_inline()`.
    pub(crate) fn is_inline(&self) -> bool {
        self.len <= INLINE_LEN
    }

    /// The inline bytes (`None` for a pointer).
    pub(crate) fn inline_bytes(&self) -> Option<InlineBytes> {
        self.is_inline().then(|| InlineBytes {
            buf: self.data.to_ne_bytes(),
            len: self.len as u8,
        })
    }
}

/// Up to 8 bytes carried inline in an attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct InlineBytes {
    buf: [u8; 8],
    len: u8,
}

impl InlineBytes {
    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        self.buf.get(..usize::from(self.len)).unwrap_or(&[])
    }
}

/// A decoded attribute value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttrValue {
    Absent,
    /// PTR_IN, PTR_OUT, CONST_IN, FLAGS_IN, ENUM_IN.
    Ptr(PtrAttr),
    /// IDR or FD: the user's handle (`data_s64`); the uobject is the
    /// kernel side's (looked up by [`AttrEnv::get_uobject`]).
    Obj {
        id: i64,
        uattr_idx: u16,
    },
    /// RAW_FD.
    RawFd(i32),
    /// IDRS_ARRAY: `len / 4` handles at `data` (or inline).
    IdrsArray {
        data: u64,
        len: u16,
    },
}

/// The parsed attributes of one ioctl, indexed by the method's attribute
/// index (upstream `struct uverbs_attr_bundle`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bundle<'t> {
    pub(crate) method: &'t MethodEntry,
    attrs: [AttrValue; MAX_METHOD_ATTRS],
    present: u64,
}

/// A flags word to store back into the user's `attrs[uattr_idx].flags`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlagsWriteBack {
    pub(crate) uattr_idx: u16,
    pub(crate) flags: u16,
}

/// upstream `struct ib_udata` as offsets: where the driver's buffers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UdataIn {
    None,
    /// Inline in the user's `attrs[uattr_idx].data`.
    Inline {
        uattr_idx: u16,
    },
    /// A user pointer.
    User(u64),
}

/// upstream: the result of `uverbs_fill_udata()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Udata {
    pub(crate) inbuf: UdataIn,
    pub(crate) inlen: usize,
    /// User pointer of the output (0 = NULL).
    pub(crate) outbuf: u64,
    pub(crate) outlen: usize,
}

/// Validates the header and finds the method, in upstream's order.
///
/// upstream: `ib_uverbs_ioctl()` and the start of `ib_uverbs_cmd_verbs()` /
/// `ib_uverbs_run_method()` (before the attribute copy).
///
/// # Errors
///
/// Those of [`check_ioctl_hdr`], then `EINVAL` for a `driver_id` that is not
/// the device's, `EPROTONOSUPPORT` for an unknown object or method, `EIO`
/// for a driver method after disassociation.
pub(crate) fn lookup_method<'t>(
    tree: &'t UapiTree,
    cmd: u32,
    hdr: &IoctlHdr,
) -> Result<&'t MethodEntry, Errno> {
    check_ioctl_hdr(cmd, hdr)?;
    find_method(tree, hdr)
}

/// [`lookup_method`] after [`check_ioctl_hdr`] passed (the kernel's ioctl path checks the
/// header as it copies it, then looks the method up before it touches the open file).
///
/// # Errors
///
/// `EINVAL` for a `driver_id` that is not the device's, `EPROTONOSUPPORT` for an unknown
/// object or method, `EIO` for a driver method after disassociation.
pub(crate) fn find_method<'t>(
    tree: &'t UapiTree,
    hdr: &IoctlHdr,
) -> Result<&'t MethodEntry, Errno> {
    if hdr.driver_id != tree.driver_id() {
        return Err(Errno::EINVAL);
    }
    let m = tree.method(hdr.object_id, hdr.method_id)?;
    // upstream: the handler is NULL'ed by uverbs_disassociate_api_pre().
    if m.driver_method && tree.is_disassociated() {
        return Err(Errno::EIO);
    }
    Ok(m)
}

/// Processes the attribute array (`num_attrs * 16` bytes copied from user
/// space) into a bundle, then checks the mandatory attributes.
///
/// upstream: the loop and the `bitmap_subset()` check of
/// `ib_uverbs_run_method()`.
///
/// # Errors
///
/// * `EPROTONOSUPPORT`: an attribute the method does not know, flagged
///   `UVERBS_ATTR_F_MANDATORY` (unknown ones without the flag are ignored).
/// * `EINVAL`: a duplicate attribute; a missing mandatory attribute; the
///   per-type rules of [`process_attr`].
/// * `EOPNOTSUPP`: an ENUM_IN element out of range or not PTR_IN; non-zero
///   bytes past a zero-trailing PTR_IN's known size.
/// * whatever the [`AttrEnv`] hooks return.
pub(crate) fn parse_attrs<'t>(
    method: &'t MethodEntry,
    attr_bytes: &[u8],
    env: &mut dyn AttrEnv,
) -> Result<Bundle<'t>, Errno> {
    let mut b = Bundle::new(method);
    parse_attrs_into(&mut b, attr_bytes, env)?;
    Ok(b)
}

/// [`parse_attrs`] into a bundle the caller holds (from [`Bundle::new`]): the kernel's
/// ioctl path parses in place, so that the bundle (about 800 bytes) is not copied on its
/// way out (under TCG a copy of that size costs a measurable share of a light ioctl).
///
/// # Errors
///
/// Those of [`parse_attrs`].
pub(crate) fn parse_attrs_into(
    b: &mut Bundle<'_>,
    attr_bytes: &[u8],
    env: &mut dyn AttrEnv,
) -> Result<(), Errno> {
    for (i, ua) in uattrs(attr_bytes).enumerate() {
        // num_attrs <= 254 after check_ioctl_hdr().
        let uattr_idx = u16::try_from(i).map_err(|_| Errno::EINVAL)?;
        set_attr(b, &ua, uattr_idx, env)?;
    }
    if b.method.mandatory & !b.present != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// The whole pure ioctl path over one buffer holding the header and the
/// attribute array (host tests and fuzzing; the kernel side calls
/// [`lookup_method`] and [`parse_attrs`] around its two `copy_from_user`s).
///
/// # Errors
///
/// Those of [`lookup_method`] and [`parse_attrs`]; `EFAULT` if `buf` is
/// shorter than the header or than `hdr.length`.
pub(crate) fn parse_ioctl<'t>(
    tree: &'t UapiTree,
    cmd: u32,
    buf: &[u8],
    env: &mut dyn AttrEnv,
) -> Result<Bundle<'t>, Errno> {
    let hdr = IoctlHdr::from_prefix(buf).ok_or(Errno::EFAULT)?;
    let method = lookup_method(tree, cmd, &hdr)?;
    let attrs = buf
        .get(IoctlHdr::SIZE..IoctlHdr::SIZE + hdr.attrs_len())
        .ok_or(Errno::EFAULT)?;
    parse_attrs(method, attrs, env)
}

/// upstream: `uverbs_set_attr()`.
fn set_attr(
    b: &mut Bundle<'_>,
    ua: &UAttr,
    uattr_idx: u16,
    env: &mut dyn AttrEnv,
) -> Result<(), Errno> {
    let idx = uapi_key_attr(ua.attr_id).and_then(|k| b.method.attr_index_by_key(k));
    let Some(idx) = idx else {
        // The kernel does not know it; fatal only if the user says so.
        if ua.flags & UVERBS_ATTR_F_MANDATORY != 0 {
            return Err(Errno::EPROTONOSUPPORT);
        }
        return Ok(());
    };
    if b.present & (1u64 << idx) != 0 {
        return Err(Errno::EINVAL);
    }
    let v = process_attr(b.method, idx, ua, uattr_idx, env)?;
    if let Some(slot) = b.attrs.get_mut(idx) {
        *slot = v;
    }
    b.present |= 1u64 << idx;
    Ok(())
}

/// Whether the bytes of `ua` past `known` are zero.
///
/// upstream: `uverbs_is_attr_cleared()`.
fn attr_cleared(ua: &UAttr, known: u16, env: &mut dyn AttrEnv) -> bool {
    let extra = usize::from(ua.len.saturating_sub(known));
    if ua.len > INLINE_LEN {
        return env.user_buffer_cleared(ua.data.wrapping_add(u64::from(known)), extra);
    }
    let bytes = ua.data.to_ne_bytes();
    match bytes.get(usize::from(known)..usize::from(ua.len)) {
        Some(tail) => tail.iter().all(|b| *b == 0),
        None => true,
    }
}

/// Decodes one attribute against its spec.
///
/// upstream: `uverbs_process_attr()` (and the first half of
/// `uverbs_process_idrs_array()`).
///
/// # Errors
///
/// * ENUM_IN: `EOPNOTSUPP` if `elem_id` is out of range, then `EINVAL` if
///   `enum_data.reserved` is set, then `EOPNOTSUPP` if the element is not a
///   PTR_IN; then as PTR_IN.
/// * PTR_IN: `EOPNOTSUPP` if `len` exceeds a zero-trailing spec's size and a
///   byte past it is non-zero; then as PTR_OUT.
/// * PTR_OUT: `EINVAL` if `len < min_len` or (not zero-trailing) `len >
///   len`, or `attr_data.reserved` is set (not for ENUM_IN).
/// * IDR, FD: `EINVAL` if `attr_data.reserved` is set or `len != 0`.
/// * RAW_FD: `EINVAL` if `attr_data.reserved` is set, `len != 0` or the
///   value does not fit an `int`.
/// * IDRS_ARRAY: `EINVAL` if `attr_data.reserved` is set, `len` is not a
///   multiple of 4 or the count is outside `min_len..=max_len`.
pub(crate) fn process_attr(
    method: &MethodEntry,
    idx: usize,
    ua: &UAttr,
    uattr_idx: u16,
    env: &mut dyn AttrEnv,
) -> Result<AttrValue, Errno> {
    let spec = method.attr(idx).ok_or(Errno::EINVAL)?;
    let mut enum_id = 0u8;
    let is_enum = matches!(spec.kind, AttrKind::EnumIn(_));
    let val_kind = match spec.kind {
        AttrKind::EnumIn(elems) => {
            let Some(k) = elems.get(usize::from(ua.elem_id)) else {
                return Err(Errno::EOPNOTSUPP);
            };
            if ua.elem_reserved != 0 {
                return Err(Errno::EINVAL);
            }
            // Only PTR_IN based enums are supported.
            if !matches!(k.ptr(), Some((PtrDir::In, _))) {
                return Err(Errno::EOPNOTSUPP);
            }
            enum_id = ua.elem_id;
            *k
        }
        k => k,
    };

    if let Some((dir, p)) = val_kind.ptr() {
        if dir == PtrDir::In && ua.len > p.len && p.zero_trailing && !attr_cleared(ua, p.len, env) {
            return Err(Errno::EOPNOTSUPP);
        }
        if ua.len < p.min_len || (!p.zero_trailing && ua.len > p.len) {
            return Err(Errno::EINVAL);
        }
        if !is_enum && ua.attr_data_reserved() {
            return Err(Errno::EINVAL);
        }
        if p.alloc_and_copy && ua.len > INLINE_LEN {
            env.alloc_and_copy(idx, ua.data, usize::from(ua.len))?;
        }
        return Ok(AttrValue::Ptr(PtrAttr {
            data: ua.data,
            len: ua.len,
            uattr_idx,
            enum_id,
            flags: ua.flags,
        }));
    }

    match val_kind {
        AttrKind::Idr { obj_type, access } | AttrKind::Fd { obj_type, access } => {
            if ua.attr_data_reserved() || ua.len != 0 {
                return Err(Errno::EINVAL);
            }
            env.get_uobject(idx, usize::from(uattr_idx), obj_type, access, ua.data_s64())?;
            Ok(AttrValue::Obj {
                id: ua.data_s64(),
                uattr_idx,
            })
        }
        AttrKind::RawFd => {
            let fd = i32::try_from(ua.data_s64());
            match fd {
                Ok(fd) if !ua.attr_data_reserved() && ua.len == 0 => Ok(AttrValue::RawFd(fd)),
                _ => Err(Errno::EINVAL),
            }
        }
        AttrKind::IdrsArray {
            obj_type,
            access,
            min_len,
            max_len,
        } => {
            // len % sizeof(u32)
            if ua.attr_data_reserved() || ua.len & 3 != 0 {
                return Err(Errno::EINVAL);
            }
            let n = ua.len / 4;
            if n < min_len || n > max_len {
                return Err(Errno::EINVAL);
            }
            env.get_uobjects_array(idx, obj_type, access, ua.data, ua.len)?;
            Ok(AttrValue::IdrsArray {
                data: ua.data,
                len: ua.len,
            })
        }
        // Pointer kinds returned above; ENUM_IN elements are pointers.
        _ => Err(Errno::EOPNOTSUPP),
    }
}

impl<'t> Bundle<'t> {
    /// An empty bundle of `method`, for [`parse_attrs_into`].
    pub(crate) fn new(method: &'t MethodEntry) -> Self {
        Bundle {
            method,
            attrs: [AttrValue::Absent; MAX_METHOD_ATTRS],
            present: 0,
        }
    }
}

impl Bundle<'_> {
    /// The value at attribute index `idx`.
    pub(crate) fn at(&self, idx: usize) -> AttrValue {
        self.attrs.get(idx).copied().unwrap_or(AttrValue::Absent)
    }

    /// upstream: `uverbs_attr_is_valid()`.
    pub(crate) fn is_valid(&self, id: u16) -> bool {
        self.method
            .attr_index(id)
            .is_some_and(|i| self.present & (1u64 << i) != 0)
    }

    /// upstream: `uverbs_attr_get()`.
    ///
    /// # Errors
    ///
    /// `ENOENT` if attribute `id` was not supplied.
    pub(crate) fn get(&self, id: u16) -> Result<AttrValue, Errno> {
        let idx = self.method.attr_index(id).ok_or(Errno::ENOENT)?;
        if self.present & (1u64 << idx) == 0 {
            return Err(Errno::ENOENT);
        }
        Ok(self.at(idx))
    }

    /// A pointer attribute (`ENOENT` if absent, `EINVAL` if not a pointer).
    pub(crate) fn ptr(&self, id: u16) -> Result<PtrAttr, Errno> {
        match self.get(id)? {
            AttrValue::Ptr(p) => Ok(p),
            _ => Err(Errno::EINVAL),
        }
    }

    /// upstream: `uverbs_attr_get_len()`.
    pub(crate) fn len(&self, id: u16) -> Result<usize, Errno> {
        self.ptr(id).map(|p| usize::from(p.len))
    }

    /// upstream: `uverbs_attr_get_enum_id()`.
    #[cfg_attr(MODULE, expect(dead_code, reason = "used by the host tests only"))]
    pub(crate) fn enum_id(&self, id: u16) -> Result<u8, Errno> {
        self.ptr(id).map(|p| p.enum_id)
    }

    /// upstream: `uverbs_attr_ptr_get_array_size()`.
    ///
    /// # Errors
    ///
    /// `ENOENT` if absent, `EINVAL` if the length is not a multiple of
    /// `elem_size` (or `elem_size` is 0).
    pub(crate) fn ptr_array_size(&self, id: u16, elem_size: usize) -> Result<usize, Errno> {
        let len = self.len(id)?;
        if elem_size == 0 || len % elem_size != 0 {
            return Err(Errno::EINVAL);
        }
        Ok(len / elem_size)
    }

    /// A CONST_IN value for an unsigned type whose maximum is `upper`;
    /// `default` when absent (otherwise `ENOENT`).
    ///
    /// upstream: `_uverbs_get_const_unsigned()`.
    ///
    /// # Errors
    ///
    /// `ENOENT` if absent without default, `EINVAL` if above `upper`.
    pub(crate) fn get_const_unsigned(
        &self,
        id: u16,
        upper: u64,
        default: Option<u64>,
    ) -> Result<u64, Errno> {
        let v = match self.ptr(id) {
            Ok(p) => p.data,
            Err(Errno::ENOENT) => default.ok_or(Errno::ENOENT)?,
            Err(e) => return Err(e),
        };
        if v > upper {
            return Err(Errno::EINVAL);
        }
        Ok(v)
    }

    /// A CONST_IN value for a signed type in `lower..=upper`.
    ///
    /// upstream: `_uverbs_get_const_signed()`.
    ///
    /// # Errors
    ///
    /// `ENOENT` if absent without default, `EINVAL` if out of range.
    #[cfg_attr(MODULE, expect(dead_code, reason = "used by the host tests only"))]
    pub(crate) fn get_const_signed(
        &self,
        id: u16,
        lower: i64,
        upper: u64,
        default: Option<i64>,
    ) -> Result<i64, Errno> {
        let v = match self.ptr(id) {
            Ok(p) => i64::from_ne_bytes(p.data.to_ne_bytes()),
            Err(Errno::ENOENT) => default.ok_or(Errno::ENOENT)?,
            Err(e) => return Err(e),
        };
        if v < lower || (v > 0 && v.unsigned_abs() > upper) {
            return Err(Errno::EINVAL);
        }
        Ok(v)
    }

    /// A FLAGS_IN value (4 or 8 bytes; absent means 0).
    ///
    /// upstream: `uverbs_get_flags64()`.
    ///
    /// # Errors
    ///
    /// `EINVAL` for another length or a bit outside `allowed`.
    pub(crate) fn get_flags64(&self, id: u16, allowed: u64) -> Result<u64, Errno> {
        let p = match self.ptr(id) {
            Ok(p) => p,
            Err(Errno::ENOENT) => return Ok(0),
            Err(e) => return Err(e),
        };
        let flags = match p.len {
            8 => p.data,
            4 => {
                let [a, b, c, d, ..] = p.data.to_ne_bytes();
                u64::from(u32::from_ne_bytes([a, b, c, d]))
            }
            _ => return Err(Errno::EINVAL),
        };
        if flags & !allowed != 0 {
            return Err(Errno::EINVAL);
        }
        Ok(flags)
    }

    /// upstream: `uverbs_get_flags32()`.
    ///
    /// # Errors
    ///
    /// As [`Self::get_flags64`], and `EINVAL` above `u32::MAX`.
    pub(crate) fn get_flags32(&self, id: u16, allowed: u64) -> Result<u32, Errno> {
        let f = self.get_flags64(id, allowed)?;
        u32::try_from(f).map_err(|_| Errno::EINVAL)
    }

    /// The driver (or core) buffers of a method from an in/out attribute
    /// pair; absent attributes give NULL/0.
    ///
    /// upstream: `uverbs_fill_udata()`.
    pub(crate) fn udata(&self, attr_in: u16, attr_out: u16) -> Udata {
        let (inbuf, inlen) = match self.ptr(attr_in) {
            Ok(p) if p.is_inline() => (
                UdataIn::Inline {
                    uattr_idx: p.uattr_idx,
                },
                usize::from(p.len),
            ),
            Ok(p) => (UdataIn::User(p.data), usize::from(p.len)),
            Err(_) => (UdataIn::None, 0),
        };
        let (outbuf, outlen) = match self.ptr(attr_out) {
            Ok(p) => (p.data, usize::from(p.len)),
            Err(_) => (0, 0),
        };
        Udata {
            inbuf,
            inlen,
            outbuf,
            outlen,
        }
    }

    /// The flags word to write back after the kernel filled output
    /// attribute `id` (`ENOENT` if it is absent).
    ///
    /// upstream: `uverbs_set_output()` / `uverbs_output_written()`.
    pub(crate) fn set_output(&self, id: u16) -> Result<FlagsWriteBack, Errno> {
        let p = self.ptr(id)?;
        Ok(FlagsWriteBack {
            uattr_idx: p.uattr_idx,
            flags: valid_output_flags(p.flags),
        })
    }

    /// How many bytes `uverbs_copy_to()` writes for a `size`-byte kernel
    /// value into attribute `id`: `min(len, size)`.
    ///
    /// upstream: `uverbs_copy_to()`.
    #[cfg_attr(MODULE, expect(dead_code, reason = "used by the host tests only"))]
    pub(crate) fn copy_to_len(&self, id: u16, size: usize) -> Result<usize, Errno> {
        self.len(id).map(|l| l.min(size))
    }
}

/// After the handler ran: a successful method with UHW gets VALID_OUTPUT on
/// its UHW_OUT, and `EPROTONOSUPPORT` from a handler becomes `EINVAL`
/// (that errno is reserved for "the framework cannot call the method").
///
/// upstream: the end of `ib_uverbs_run_method()`.
///
/// # Errors
///
/// The handler's error, with `EPROTONOSUPPORT` mapped to `EINVAL`.
pub(crate) fn finish_method(
    bundle: &Bundle<'_>,
    handler_ret: Result<(), Errno>,
) -> Result<Option<FlagsWriteBack>, Errno> {
    let out = match handler_ret {
        Ok(()) if bundle.method.has_udata => {
            bundle.set_output(super::ids::UVERBS_ATTR_UHW_OUT).ok()
        }
        Ok(()) => None,
        Err(Errno::EPROTONOSUPPORT) => return Err(Errno::EINVAL),
        Err(e) => return Err(e),
    };
    Ok(out)
}
