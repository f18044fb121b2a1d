// SPDX-License-Identifier: GPL-2.0

//! Netlink message and attribute codec over byte slices: no allocation, no `unsafe`, no panic
//! on any input.
//!
//! The kernel side (`rust/netlink.rs`) hands the parser the bytes of a received `sk_buff` and
//! the builder the tailroom of a reply `sk_buff`; the same file is compiled on the host by
//! `host/netlink` for unit tests and a bounded fuzz test.
//!
//! Layouts (`include/uapi/linux/netlink.h`): `struct nlmsghdr { u32 len; u16 type; u16 flags;
//! u32 seq; u32 pid; }` (16 bytes, host byte order), `struct nlattr { u16 len; u16 type; }`
//! (4 bytes); messages and attributes are padded to 4 bytes (`NLMSG_ALIGN`, `NLA_ALIGN`); an
//! attribute's length counts its header and payload but not its padding.

#![allow(dead_code)]

use core::marker::PhantomData;

/// `NLMSG_HDRLEN`.
pub(crate) const NLMSG_HDRLEN: usize = 16;
/// `NLA_HDRLEN`.
pub(crate) const NLA_HDRLEN: usize = 4;
/// `NLM_F_REQUEST`.
pub(crate) const NLM_F_REQUEST: u16 = 0x01;
/// `NLM_F_MULTI`.
pub(crate) const NLM_F_MULTI: u16 = 0x02;
/// `NLM_F_ACK`.
pub(crate) const NLM_F_ACK: u16 = 0x04;
/// `NLM_F_DUMP` (`NLM_F_ROOT | NLM_F_MATCH`).
pub(crate) const NLM_F_DUMP: u16 = 0x300;
/// `NLMSG_ERROR`.
pub(crate) const NLMSG_ERROR: u16 = 2;
/// `NLMSG_DONE`.
pub(crate) const NLMSG_DONE: u16 = 3;
/// `NLMSG_MIN_TYPE`: types below are control messages.
pub(crate) const NLMSG_MIN_TYPE: u16 = 0x10;
/// `NLA_F_NESTED`.
pub(crate) const NLA_F_NESTED: u16 = 1 << 15;
/// `NLA_F_NET_BYTEORDER`.
pub(crate) const NLA_F_NET_BYTEORDER: u16 = 1 << 14;
/// `NLA_TYPE_MASK`.
pub(crate) const NLA_TYPE_MASK: u16 = !(NLA_F_NESTED | NLA_F_NET_BYTEORDER);

/// `NLMSG_ALIGN` / `NLA_ALIGN`: rounds `len` up to 4 bytes, saturating.
pub(crate) const fn align4(len: usize) -> usize {
    match len.checked_add(3) {
        Some(l) => l & !3,
        None => usize::MAX & !3,
    }
}

/// Why bytes could not be parsed or a message could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CodecError {
    /// Fewer bytes than a header, or a length field pointing past the end (`EINVAL`).
    Truncated,
    /// A length field smaller than its header (`EINVAL`).
    BadLength,
    /// An attribute payload of the wrong size for its type, or a string without NUL
    /// (`EINVAL`).
    BadPayload,
    /// The output buffer is full (`EMSGSIZE`).
    NoSpace,
    /// Builder misuse: an attribute outside a message, or a length over 65535 (`EINVAL`).
    Misuse,
}

fn rd_u16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_ne_bytes([s[0], s[1]]))
}

fn rd_u32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

/// A parsed `struct nlmsghdr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NlMsgHdr {
    /// `nlmsg_len`: header plus payload.
    pub(crate) len: u32,
    /// `nlmsg_type`.
    pub(crate) ty: u16,
    /// `nlmsg_flags`.
    pub(crate) flags: u16,
    /// `nlmsg_seq`.
    pub(crate) seq: u32,
    /// `nlmsg_pid`.
    pub(crate) pid: u32,
}

impl NlMsgHdr {
    /// Parses a header from the start of `b` (without checking `len` against `b`).
    pub(crate) fn parse(b: &[u8]) -> Result<Self, CodecError> {
        let (Some(len), Some(ty), Some(flags), Some(seq), Some(pid)) = (
            rd_u32(b, 0),
            rd_u16(b, 4),
            rd_u16(b, 6),
            rd_u32(b, 8),
            rd_u32(b, 12),
        ) else {
            return Err(CodecError::Truncated);
        };
        Ok(Self {
            len,
            ty,
            flags,
            seq,
            pid,
        })
    }

    /// Writes the header into the first 16 bytes of `out`.
    pub(crate) fn write(&self, out: &mut [u8]) -> Result<(), CodecError> {
        let out = out.get_mut(..NLMSG_HDRLEN).ok_or(CodecError::NoSpace)?;
        out[0..4].copy_from_slice(&self.len.to_ne_bytes());
        out[4..6].copy_from_slice(&self.ty.to_ne_bytes());
        out[6..8].copy_from_slice(&self.flags.to_ne_bytes());
        out[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        out[12..16].copy_from_slice(&self.pid.to_ne_bytes());
        Ok(())
    }
}

/// One netlink message: its header and its payload (the bytes after the header, up to
/// `nlmsg_len`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NlMsg<'a> {
    /// The header.
    pub(crate) hdr: NlMsgHdr,
    /// The payload; for RDMA netlink a stream of attributes (no family header).
    pub(crate) payload: &'a [u8],
}

impl<'a> NlMsg<'a> {
    /// Parses the message at the start of `b`, validating `nlmsg_len` like
    /// `rdma_nl_rcv_skb()`: at least a header, at most the bytes present.
    pub(crate) fn parse(b: &'a [u8]) -> Result<Self, CodecError> {
        let hdr = NlMsgHdr::parse(b)?;
        let len = hdr.len as usize;
        if len < NLMSG_HDRLEN {
            return Err(CodecError::BadLength);
        }
        let payload = b.get(NLMSG_HDRLEN..len).ok_or(CodecError::Truncated)?;
        Ok(Self { hdr, payload })
    }

    /// The attributes of the payload.
    pub(crate) fn attrs(&self) -> AttrIter<'a> {
        AttrIter::new(self.payload)
    }
}

/// A record of a stream padded to 4 bytes: a message of a datagram, an attribute of a payload.
pub(crate) trait Record<'a>: Sized {
    /// Fewer bytes left than this end the stream without an error.
    const MIN: usize;

    /// The record at the start of `b` and its length.
    fn parse(b: &'a [u8]) -> Result<(Self, usize), CodecError>;
}

/// Iterates over a stream of records `T`, validating every length; yields at most one error,
/// then stops.
#[derive(Clone)]
pub(crate) struct Records<'a, T> {
    rest: &'a [u8],
    failed: bool,
    _record: PhantomData<T>,
}

impl<'a, T> Records<'a, T> {
    /// Iterates over the records in `b`.
    pub(crate) fn new(b: &'a [u8]) -> Self {
        Self {
            rest: b,
            failed: false,
            _record: PhantomData,
        }
    }
}

impl<'a, T: Record<'a>> Iterator for Records<'a, T> {
    type Item = Result<T, CodecError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.len() < T::MIN {
            return None;
        }
        match T::parse(self.rest) {
            Ok((item, len)) => {
                let step = align4(len).min(self.rest.len());
                self.rest = self.rest.get(step..).unwrap_or(&[]);
                Some(Ok(item))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl<'a> Record<'a> for NlMsg<'a> {
    const MIN: usize = NLMSG_HDRLEN;

    fn parse(b: &'a [u8]) -> Result<(Self, usize), CodecError> {
        NlMsg::parse(b).map(|m| (m, m.hdr.len as usize))
    }
}

/// Iterates over the messages of a datagram (several messages may be batched in one `send`).
pub(crate) type NlMsgIter<'a> = Records<'a, NlMsg<'a>>;

/// One attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attr<'a> {
    /// The type without `NLA_F_NESTED` and `NLA_F_NET_BYTEORDER`.
    pub(crate) ty: u16,
    /// Whether `NLA_F_NESTED` was set.
    pub(crate) nested_flag: bool,
    /// The payload (without padding).
    pub(crate) payload: &'a [u8],
}

impl<'a> Attr<'a> {
    fn fixed<const N: usize>(&self) -> Result<[u8; N], CodecError> {
        // Like the kernel's NLA_U* policies: at least N bytes (NL_VALIDATE_LIBERAL), read N.
        let s = self.payload.get(..N).ok_or(CodecError::BadPayload)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// The payload as a `u8`.
    pub(crate) fn u8(&self) -> Result<u8, CodecError> {
        Ok(self.fixed::<1>()?[0])
    }

    /// The payload as a `u16` (host byte order).
    pub(crate) fn u16(&self) -> Result<u16, CodecError> {
        Ok(u16::from_ne_bytes(self.fixed()?))
    }

    /// The payload as a `u32` (host byte order).
    pub(crate) fn u32(&self) -> Result<u32, CodecError> {
        Ok(u32::from_ne_bytes(self.fixed()?))
    }

    /// The payload as a `u64` (host byte order).
    pub(crate) fn u64(&self) -> Result<u64, CodecError> {
        Ok(u64::from_ne_bytes(self.fixed()?))
    }

    /// The payload as a NUL-terminated string (`NLA_NUL_STRING`), without the NUL.
    pub(crate) fn str(&self) -> Result<&'a [u8], CodecError> {
        let nul = self
            .payload
            .iter()
            .position(|&c| c == 0)
            .ok_or(CodecError::BadPayload)?;
        Ok(&self.payload[..nul])
    }

    /// The payload as a nested attribute stream.
    pub(crate) fn nested(&self) -> AttrIter<'a> {
        AttrIter::new(self.payload)
    }
}

impl<'a> Record<'a> for Attr<'a> {
    const MIN: usize = 1;

    /// `nla_ok()`.
    fn parse(b: &'a [u8]) -> Result<(Self, usize), CodecError> {
        // Trailing bytes shorter than a header: the kernel's nla_parse() reports these ("bytes
        // leftover after parsing attributes").
        let (Some(len), Some(ty)) = (rd_u16(b, 0), rd_u16(b, 2)) else {
            return Err(CodecError::Truncated);
        };
        let len = len as usize;
        if len < NLA_HDRLEN {
            return Err(CodecError::BadLength);
        }
        let payload = b.get(NLA_HDRLEN..len).ok_or(CodecError::Truncated)?;
        let attr = Attr {
            ty: ty & NLA_TYPE_MASK,
            nested_flag: ty & NLA_F_NESTED != 0,
            payload,
        };
        Ok((attr, len))
    }
}

/// Iterates over an attribute stream, validating every length (`nla_ok()`).
pub(crate) type AttrIter<'a> = Records<'a, Attr<'a>>;

/// Parses an attribute stream into `table`, indexed by type (`nla_parse()`): types outside the
/// table are ignored, a later duplicate replaces an earlier one, any malformed length fails the
/// whole parse.
pub(crate) fn parse_attrs<'a>(
    b: &'a [u8],
    table: &mut [Option<Attr<'a>>],
) -> Result<(), CodecError> {
    for slot in table.iter_mut() {
        *slot = None;
    }
    for a in AttrIter::new(b) {
        let a = a?;
        if let Some(slot) = table.get_mut(a.ty as usize) {
            *slot = Some(a);
        }
    }
    Ok(())
}

/// An open nested attribute; close it with [`MsgWriter::nest_end`].
#[must_use]
pub(crate) struct Nest {
    at: usize,
    msg: u32,
}

/// Builds netlink messages into a byte buffer (the tailroom of an `sk_buff` in the kernel).
///
/// A message is opened with [`MsgWriter::begin`], filled with attributes and closed with
/// [`MsgWriter::end`]; [`MsgWriter::cancel`] drops a partly written message (a dump that ran out
/// of room rolls back the entry it was writing). [`MsgWriter::len`] counts closed messages only.
pub(crate) struct MsgWriter<'a> {
    buf: &'a mut [u8],
    /// Bytes of closed messages.
    committed: usize,
    /// Write position inside the open message, if one is open.
    pos: Option<usize>,
    /// Counts opened messages, so that a [`Nest`] of an earlier message is refused.
    msg: u32,
}

impl<'a> MsgWriter<'a> {
    /// A writer over `buf`.
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Self {
            buf,
            committed: 0,
            pos: None,
            msg: 0,
        }
    }

    /// Bytes of closed messages (what to `skb_put()`).
    pub(crate) fn len(&self) -> usize {
        self.committed
    }

    /// Whether no message has been closed.
    pub(crate) fn is_empty(&self) -> bool {
        self.committed == 0
    }

    /// The closed messages.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..self.committed]
    }

    /// Opens a message (`nlmsg_put()`).
    pub(crate) fn begin(
        &mut self,
        ty: u16,
        flags: u16,
        seq: u32,
        pid: u32,
    ) -> Result<(), CodecError> {
        if self.pos.is_some() {
            return Err(CodecError::Misuse);
        }
        let start = self.committed;
        let end = start.checked_add(NLMSG_HDRLEN).ok_or(CodecError::NoSpace)?;
        let hdr = NlMsgHdr {
            len: NLMSG_HDRLEN as u32,
            ty,
            flags,
            seq,
            pid,
        };
        hdr.write(self.buf.get_mut(start..end).ok_or(CodecError::NoSpace)?)?;
        self.pos = Some(end);
        self.msg = self.msg.wrapping_add(1);
        Ok(())
    }

    /// Closes the open message (`nlmsg_end()`): sets `nlmsg_len`.
    pub(crate) fn end(&mut self) -> Result<(), CodecError> {
        let pos = self.pos.take().ok_or(CodecError::Misuse)?;
        let len = u32::try_from(pos - self.committed).map_err(|_| CodecError::Misuse)?;
        self.buf[self.committed..self.committed + 4].copy_from_slice(&len.to_ne_bytes());
        self.committed = pos;
        Ok(())
    }

    /// Drops the open message, if any (`nlmsg_cancel()`).
    pub(crate) fn cancel(&mut self) {
        self.pos = None;
    }

    /// Appends an attribute with `payload` (`nla_put()`), padded to 4 bytes with zeroes.
    pub(crate) fn put(&mut self, ty: u16, payload: &[u8]) -> Result<(), CodecError> {
        self.put_parts(ty, payload, &[])
    }

    fn put_parts(&mut self, ty: u16, a: &[u8], b: &[u8]) -> Result<(), CodecError> {
        let pos = self.pos.ok_or(CodecError::Misuse)?;
        let len = NLA_HDRLEN + a.len() + b.len();
        let attr_len = u16::try_from(len).map_err(|_| CodecError::Misuse)?;
        let end = pos.checked_add(align4(len)).ok_or(CodecError::NoSpace)?;
        let out = self.buf.get_mut(pos..end).ok_or(CodecError::NoSpace)?;
        out[0..2].copy_from_slice(&attr_len.to_ne_bytes());
        out[2..4].copy_from_slice(&ty.to_ne_bytes());
        out[4..4 + a.len()].copy_from_slice(a);
        out[4 + a.len()..len].copy_from_slice(b);
        out[len..].fill(0);
        self.pos = Some(end);
        Ok(())
    }

    /// `nla_put_u8()`.
    pub(crate) fn put_u8(&mut self, ty: u16, v: u8) -> Result<(), CodecError> {
        self.put(ty, &[v])
    }

    /// `nla_put_u16()`.
    pub(crate) fn put_u16(&mut self, ty: u16, v: u16) -> Result<(), CodecError> {
        self.put(ty, &v.to_ne_bytes())
    }

    /// `nla_put_u32()`.
    pub(crate) fn put_u32(&mut self, ty: u16, v: u32) -> Result<(), CodecError> {
        self.put(ty, &v.to_ne_bytes())
    }

    /// `nla_put_u64_64bit()` on an architecture with efficient unaligned access (x86-64, the
    /// only one built): no pad attribute.
    pub(crate) fn put_u64(&mut self, ty: u16, v: u64) -> Result<(), CodecError> {
        self.put(ty, &v.to_ne_bytes())
    }

    /// `nla_put_string()`: the bytes and a terminating NUL.
    pub(crate) fn put_str(&mut self, ty: u16, s: &[u8]) -> Result<(), CodecError> {
        if s.contains(&0) {
            return Err(CodecError::Misuse);
        }
        self.put_parts(ty, s, &[0])
    }

    /// Opens a nested attribute (`nla_nest_start()`, which sets `NLA_F_NESTED`).
    pub(crate) fn nest_start(&mut self, ty: u16) -> Result<Nest, CodecError> {
        let pos = self.pos.ok_or(CodecError::Misuse)?;
        self.put(ty | NLA_F_NESTED, &[])?;
        Ok(Nest {
            at: pos,
            msg: self.msg,
        })
    }

    /// Opens a nested attribute without `NLA_F_NESTED` (`nla_nest_start_noflag()`, which
    /// nldev's resource tables use).
    pub(crate) fn nest_start_noflag(&mut self, ty: u16) -> Result<Nest, CodecError> {
        let pos = self.pos.ok_or(CodecError::Misuse)?;
        self.put(ty, &[])?;
        Ok(Nest {
            at: pos,
            msg: self.msg,
        })
    }

    /// Closes a nested attribute (`nla_nest_end()`): its length covers everything put since.
    pub(crate) fn nest_end(&mut self, nest: Nest) -> Result<(), CodecError> {
        let pos = self.pos.ok_or(CodecError::Misuse)?;
        if nest.msg != self.msg {
            return Err(CodecError::Misuse);
        }
        let len = pos.checked_sub(nest.at).ok_or(CodecError::Misuse)?;
        let len = u16::try_from(len).map_err(|_| CodecError::Misuse)?;
        let at = self
            .buf
            .get_mut(nest.at..nest.at + 2)
            .ok_or(CodecError::Misuse)?;
        at.copy_from_slice(&len.to_ne_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(buf: &mut [u8]) -> usize {
        let mut w = MsgWriter::new(buf);
        w.begin(0x1401, NLM_F_MULTI, 7, 42).unwrap();
        w.put_u32(1, 0xdead_beef).unwrap();
        w.put_str(2, b"mlx5_0").unwrap();
        let n = w.nest_start(3).unwrap();
        w.put_u8(4, 9).unwrap();
        w.put_u64(5, 0x0102_0304_0506_0708).unwrap();
        w.nest_end(n).unwrap();
        w.end().unwrap();
        w.len()
    }

    #[test]
    fn build_then_parse_round_trips() {
        let mut buf = [0u8; 256];
        let len = msg(&mut buf);
        // 16 hdr + 8 u32 + 12 "mlx5_0\0" padded + 4 nest + 8 u8 + 12 u64
        assert_eq!(len, 16 + 8 + 12 + 4 + 8 + 12);
        let m = NlMsg::parse(&buf[..len]).unwrap();
        assert_eq!(m.hdr.len as usize, len);
        assert_eq!(
            (m.hdr.ty, m.hdr.flags, m.hdr.seq, m.hdr.pid),
            (0x1401, NLM_F_MULTI, 7, 42)
        );
        let mut tb = [None; 6];
        parse_attrs(m.payload, &mut tb).unwrap();
        assert_eq!(tb[1].unwrap().u32(), Ok(0xdead_beef));
        assert_eq!(tb[2].unwrap().str(), Ok(&b"mlx5_0"[..]));
        let nest = tb[3].unwrap();
        assert!(nest.nested_flag);
        let inner: [Attr<'_>; 2] = {
            let mut it = nest.nested();
            [it.next().unwrap().unwrap(), it.next().unwrap().unwrap()]
        };
        assert_eq!(inner[0].u8(), Ok(9));
        assert_eq!(inner[1].u64(), Ok(0x0102_0304_0506_0708));
    }

    #[test]
    fn attribute_bytes_match_the_kernel_layout() {
        let mut buf = [0xffu8; 64];
        let mut w = MsgWriter::new(&mut buf);
        w.begin(3, 2, 0, 0).unwrap();
        w.put_str(7, b"ab").unwrap();
        w.end().unwrap();
        let b = w.bytes();
        assert_eq!(&b[0..4], &24u32.to_ne_bytes());
        // nla_len 7 (4 + "ab\0"), type 7, "ab\0", one zero pad byte.
        assert_eq!(&b[16..], &[7, 0, 7, 0, b'a', b'b', 0, 0]);
    }

    #[test]
    fn full_buffer_is_no_space_and_cancel_rolls_back() {
        let mut buf = [0u8; 40];
        let mut w = MsgWriter::new(&mut buf);
        w.begin(1, 0, 0, 0).unwrap();
        w.put_u32(1, 1).unwrap();
        w.end().unwrap();
        assert_eq!(w.len(), 24);
        w.begin(1, 0, 0, 0).unwrap();
        assert_eq!(w.put_u64(1, 1), Err(CodecError::NoSpace));
        w.cancel();
        assert_eq!(w.len(), 24);
        assert_eq!(w.begin(1, 0, 0, 0), Ok(()));
        assert_eq!(w.begin(1, 0, 0, 0), Err(CodecError::Misuse));
    }

    #[test]
    fn attributes_outside_a_message_are_misuse() {
        let mut buf = [0u8; 40];
        let mut w = MsgWriter::new(&mut buf);
        assert_eq!(w.put_u32(1, 1), Err(CodecError::Misuse));
        assert_eq!(w.end(), Err(CodecError::Misuse));
        w.begin(1, 0, 0, 0).unwrap();
        assert_eq!(w.put_str(1, b"a\0b"), Err(CodecError::Misuse));
    }

    #[test]
    fn bad_lengths_are_rejected() {
        // nlmsg_len below the header.
        let mut b = [0u8; 16];
        b[0] = 8;
        assert_eq!(NlMsg::parse(&b).unwrap_err(), CodecError::BadLength);
        // nlmsg_len past the end.
        b[0] = 32;
        assert_eq!(NlMsg::parse(&b).unwrap_err(), CodecError::Truncated);
        assert_eq!(NlMsg::parse(&b[..3]).unwrap_err(), CodecError::Truncated);
        // nla_len 2 < 4.
        let a = [2u8, 0, 1, 0];
        assert_eq!(AttrIter::new(&a).next(), Some(Err(CodecError::BadLength)));
        // nla_len 8 > 6 bytes present.
        let a = [8u8, 0, 1, 0, 0, 0];
        let mut tb = [None; 2];
        assert_eq!(parse_attrs(&a, &mut tb), Err(CodecError::Truncated));
        // Leftover bytes shorter than a header.
        let a = [5u8, 0, 1, 0, 9, 0, 0, 0, 1, 2];
        let v: [Option<Result<Attr<'_>, CodecError>>; 3] = {
            let mut it = AttrIter::new(&a);
            [it.next(), it.next(), it.next()]
        };
        assert_eq!(v[0].unwrap().unwrap().u8(), Ok(9));
        assert_eq!(v[1], Some(Err(CodecError::Truncated)));
        assert_eq!(v[2], None);
    }

    #[test]
    fn short_payloads_and_unterminated_strings_are_bad() {
        let a = Attr {
            ty: 1,
            nested_flag: false,
            payload: &[1, 2, 3],
        };
        assert_eq!(a.u32(), Err(CodecError::BadPayload));
        assert_eq!(a.str(), Err(CodecError::BadPayload));
        assert_eq!(a.u16(), Ok(u16::from_ne_bytes([1, 2])));
    }

    #[test]
    fn message_stream_iterates_and_stops_at_the_first_error() {
        let mut buf = [0u8; 256];
        let one = msg(&mut buf);
        let copy: [u8; 256] = buf;
        buf[one..2 * one].copy_from_slice(&copy[..one]);
        // A third, broken header.
        buf[2 * one..2 * one + 4].copy_from_slice(&4u32.to_ne_bytes());
        let total = 2 * one + NLMSG_HDRLEN;
        let mut it = NlMsgIter::new(&buf[..total]);
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_ok());
        assert_eq!(it.next().unwrap().unwrap_err(), CodecError::BadLength);
        assert!(it.next().is_none());
    }

    #[test]
    fn rdma_types_split_into_client_and_op() {
        use super::super::nldev_uapi::*;
        let t = rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET);
        assert_eq!(t, 0x1406);
        assert_eq!(rdma_nl_get_client(t), RDMA_NL_NLDEV);
        assert_eq!(rdma_nl_get_op(t), RDMA_NLDEV_CMD_SYS_GET);
        // Pinned against include/uapi/rdma/rdma_netlink.h (7.3).
        assert_eq!(RDMA_NLDEV_CMD_GET_CHARDEV, 15);
        assert_eq!(RDMA_NLDEV_CMD_RES_GET, 9);
        assert_eq!(RDMA_NLDEV_ATTR_DEV_NAME, 2);
        assert_eq!(RDMA_NLDEV_ATTR_CHARDEV_TYPE, 69);
        assert_eq!(RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 73);
        assert_eq!(RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 93);
    }

    /// Deterministic xorshift64*.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    fn walk(b: &[u8], depth: u32) -> usize {
        let mut n = 0;
        for a in AttrIter::new(b) {
            let Ok(a) = a else { break };
            n += 1;
            let _ = (a.u8(), a.u16(), a.u32(), a.u64(), a.str());
            if depth < 4 {
                n += walk(a.payload, depth + 1);
            }
        }
        n
    }

    /// Random bytes, and valid messages with random mutations, through every parser: no panic,
    /// every yielded slice inside the input.
    #[test]
    fn fuzz_parsers_never_panic() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut buf = [0u8; 512];
        let mut seed_msg = [0u8; 256];
        let seed_len = msg(&mut seed_msg);
        for round in 0..200_000u32 {
            let len = (rng.next() % buf.len() as u64) as usize;
            if round % 2 == 0 {
                for b in buf[..len].iter_mut() {
                    *b = rng.next() as u8;
                }
            } else {
                let l = seed_len.min(len);
                buf[..l].copy_from_slice(&seed_msg[..l]);
                for _ in 0..(rng.next() % 4 + 1) {
                    if l == 0 {
                        break;
                    }
                    let at = (rng.next() % l as u64) as usize;
                    buf[at] = rng.next() as u8;
                }
            }
            let input = &buf[..len];
            for m in NlMsgIter::new(input) {
                let Ok(m) = m else { break };
                assert!(m.payload.len() <= input.len());
                let mut tb = [None; 8];
                let _ = parse_attrs(m.payload, &mut tb);
                walk(m.payload, 0);
            }
            walk(input, 0);
        }
    }

    /// Random builder call sequences into small buffers: no panic, and whatever was closed
    /// parses back.
    #[test]
    fn fuzz_builder_output_always_parses() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for _ in 0..20_000 {
            let mut buf = [0u8; 128];
            let size = (rng.next() % 129) as usize;
            let mut w = MsgWriter::new(&mut buf[..size]);
            let mut open: Option<Nest> = None;
            for _ in 0..(rng.next() % 12) {
                let r = match rng.next() % 8 {
                    0 => w.begin(0x1401, 0, 1, 2),
                    1 => w.end(),
                    2 => w.put_u32(1, 5),
                    3 => w.put_str(2, b"xyz"),
                    4 => w.put_u64(3, 7),
                    5 => match w.nest_start(4) {
                        Ok(n) => {
                            open = Some(n);
                            Ok(())
                        }
                        Err(e) => Err(e),
                    },
                    6 => match open.take() {
                        Some(n) => w.nest_end(n),
                        None => Ok(()),
                    },
                    _ => {
                        w.cancel();
                        Ok(())
                    }
                };
                let _ = r;
            }
            let bytes = w.bytes();
            for m in NlMsgIter::new(bytes) {
                let m = m.unwrap();
                for a in m.attrs() {
                    a.unwrap();
                }
            }
        }
    }
}
