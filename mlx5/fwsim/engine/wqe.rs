// SPDX-License-Identifier: GPL-2.0

//! The send and receive WQE formats of libmlx5 44 (`providers/mlx5/qp.c`, `mlx5dv.h`), as
//! bytes read from a queue: the control segment's fields ([`Wqe`]), the data segments
//! (`byte_count`, `lkey`, `addr`) or inline data (`len | 0x80000000`, then the bytes, padded
//! to 16) of a scatter/gather list ([`next_seg`]), and a UD address vector ([`Av`]). Everything
//! here is untrusted: a short or malformed buffer decodes to zeros or to `Err`, never a panic.

use crate::prm::wqe::{INLINE_SEG, INVALID_LKEY};

/// A parsed SQ WQE (the bytes stay in the caller's buffer).
#[derive(Clone, Copy, Debug)]
pub(super) struct Wqe {
    pub(super) opcode: u8,
    pub(super) idx: u16,
    /// Bytes (`ds * 16`).
    pub(super) len: usize,
    /// WQEBBs it takes.
    pub(super) nbb: u16,
    pub(super) flags: u8,
    pub(super) imm: [u8; 4],
}

/// The `N` bytes at byte `at` of `b` (zeros when they run past its end).
fn word<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut w = [0u8; N];
    if let Some(s) = b.get(at..at + N) {
        w.copy_from_slice(s);
    }
    w
}

/// The big-endian 16-bit word at byte `at` of `b` (0 past its end).
pub(super) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(word(b, at))
}

/// The big-endian 32-bit word at byte `at` of `b` (0 past its end).
pub(super) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(word(b, at))
}

/// The big-endian 64-bit word at byte `at` of `b` (0 past its end).
pub(super) fn be64(b: &[u8], at: usize) -> u64 {
    (u64::from(be32(b, at)) << 32) | u64::from(be32(b, at + 4))
}

/// One segment of a scatter/gather list.
#[derive(Clone, Copy, Debug)]
pub(super) enum Seg {
    /// A data segment.
    Ptr { lkey: u32, addr: u64, len: u32 },
    /// Inline data at `at..at + len` of the segment bytes.
    Inline { at: usize, len: usize },
}

/// The next segment of `segs` from `*pos`; `rq` lists end at [`INVALID_LKEY`]. `Err` for a
/// malformed list (inline data running past the WQE, a partial segment).
pub(super) fn next_seg(segs: &[u8], pos: &mut usize, rq: bool) -> Result<Option<Seg>, ()> {
    if *pos >= segs.len() {
        return Ok(None);
    }
    let bc = be32(segs, *pos);
    if !rq && bc & INLINE_SEG != 0 {
        let len = usize::try_from(bc & !INLINE_SEG).map_err(|_| ())?;
        let at = *pos + 4;
        let end = at.checked_add(len).ok_or(())?;
        if end > segs.len() {
            return Err(());
        }
        *pos = (*pos + 4 + len).next_multiple_of(16);
        return Ok(Some(Seg::Inline { at, len }));
    }
    if *pos + 16 > segs.len() {
        return if rq { Ok(None) } else { Err(()) };
    }
    let lkey = be32(segs, *pos + 4);
    if rq && lkey == INVALID_LKEY {
        return Ok(None);
    }
    let addr = be64(segs, *pos + 8);
    *pos += 16;
    Ok(Some(Seg::Ptr {
        lkey,
        addr,
        len: bc,
    }))
}

/// A UD address vector (`struct mlx5_wqe_av`, as libmlx5's `mlx5_create_ah()` and
/// `_set_datagram_seg()` write it).
#[derive(Clone, Copy, Debug)]
pub(super) struct Av {
    pub(super) qkey: u32,
    pub(super) dqpn: u32,
    pub(super) sl: u8,
    pub(super) rlid: u16,
    pub(super) grh: bool,
    pub(super) sgid_index: u8,
    pub(super) flow_label: u32,
    pub(super) tclass: u8,
    pub(super) hop_limit: u8,
    pub(super) rgid: [u8; 16],
}

impl Av {
    /// Decodes the address vector `b` (`eth`: sent from a RoCE port, where the SL is in
    /// other bits and the GRH is implied).
    pub(super) fn parse(b: &[u8], eth: bool) -> Av {
        let srsl = b.get(12).copied().unwrap_or(0);
        let gfl = be32(b, 28);
        Av {
            qkey: be32(b, 0),
            dqpn: be32(b, 8) & 0x00ff_ffff,
            sl: if eth { (srsl >> 1) & 7 } else { srsl & 0xf },
            rlid: be16(b, 14),
            // RoCE packets always carry a GRH (the bit is reserved there).
            grh: eth || gfl & (1 << 30) != 0,
            sgid_index: ((gfl >> 20) & 0xff) as u8,
            flow_label: gfl & 0xf_ffff,
            tclass: b.get(26).copied().unwrap_or(0),
            hop_limit: b.get(27).copied().unwrap_or(0),
            rgid: word(b, 32),
        }
    }
}
