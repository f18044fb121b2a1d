// SPDX-License-Identifier: GPL-2.0

//! Memory access: keys and the data they reach. An lkey or rkey names an mkey (or, as an
//! rkey, a bound memory window) whose translation turns a virtual address into bus
//! addresses ([`MkeyInfo`]); a scatter/gather list is checked against its keys once
//! ([`check_sgl`]) and then walked by a [`Cur`], as is a remote region; [`transfer`] moves a
//! message between two cursors in chunks, each side's faults told apart ([`Fault`]).

use super::qp_state::{next_seg, Seg, Snap};
use crate::fwsim::dma::DmaMem;
use crate::fwsim::xlat::{Access, MkeyInfo, Window, NO_QPN};
use crate::fwsim::Fw;
use crate::prm::wqe::syndrome as syn;

/// Bytes moved per DMA chunk.
const CHUNK: usize = 256;

/// Looks up a local or remote key: the index must name a live mkey whose `mkey_7_0` is the
/// key's low byte and whose PD is the QP's.
/// A memory window is never a local key; an indirect mkey with a layout is ([`indirect`]).
pub(super) fn mkey(fw: &Fw, key: u32, pd: u32) -> Option<MkeyInfo> {
    let m = fw.mkeys.get(key >> 8)?;
    if m.info.key_byte != (key & 0xff) as u8 || m.pd != pd || revoked(m) {
        return None;
    }
    match m.win {
        None => Some(m.info),
        Some(w) => indirect(fw, &w, m.info),
    }
}

/// The translation of an indirect mkey (a UMR-configured KLM mkey, `info`), if it has a
/// layout whose entries' mkeys all still live with the keys the layout named.
fn indirect(fw: &Fw, w: &Window, info: MkeyInfo) -> Option<MkeyInfo> {
    let live = w.indirect?.keys().iter().all(|k| {
        fw.mkeys
            .get(k >> 8)
            .is_some_and(|e| e.win.is_none() && !revoked(e) && e.info.key_byte == (k & 0xff) as u8)
    });
    live.then_some(info)
}

/// An MR's mkey in the free state (`mkc.free`: upstream's `mlx5r_umr_revoke_mr()` puts it
/// there while a UMR changes its translation): no key reaches it. Windows are free while
/// unbound and are looked up through their binding instead.
pub(super) fn revoked(m: &crate::fwsim::Mkey) -> bool {
    m.win.is_none() && crate::prm::ctx::mkc::free.get(&m.mkc) == Ok(1)
}

/// Looks up an rkey for responder `d`: an MR's mkey as [`mkey`], or a bound memory window of
/// `d`'s PD, bound to `d` if it is a type 2 window (IB spec o10-37.2.x), over an MR that still
/// lives with the key it was bound with (an MR deregistered under a window ends its access).
pub(super) fn remote_key(fw: &Fw, key: u32, d: &Snap) -> Option<MkeyInfo> {
    let m = fw.mkeys.get(key >> 8)?;
    if m.info.key_byte != (key & 0xff) as u8 || m.pd != d.pd || revoked(m) {
        return None;
    }
    let Some(w) = m.win else {
        return Some(m.info);
    };
    if w.indirect.is_some() {
        return indirect(fw, &w, m.info);
    }
    let b = w.bound?;
    if b.qpn != NO_QPN && b.qpn != d.qpn {
        return None;
    }
    let mr = fw.mkeys.get(b.mr_key >> 8)?;
    if mr.win.is_some() || revoked(mr) || mr.info.key_byte != (b.mr_key & 0xff) as u8 {
        return None;
    }
    Some(mr.info.window(&b, m.info.key_byte))
}

/// Checks a scatter/gather list against the keys (`need` rights, ranges); its byte total.
pub(super) fn check_sgl(fw: &Fw, pd: u32, segs: &[u8], rq: bool, need: Access) -> Result<u64, u8> {
    let mut pos = 0;
    let mut total = 0u64;
    while let Some(s) = next_seg(segs, &mut pos, rq).map_err(|()| syn::LOCAL_QP_OP)? {
        let len = match s {
            Seg::Inline { len, .. } => u64::try_from(len).unwrap_or(u64::MAX),
            Seg::Ptr { len: 0, .. } => 0,
            Seg::Ptr { lkey, addr, len } => {
                let m = mkey(fw, lkey, pd).ok_or(syn::LOCAL_PROT)?;
                if !m.access.allows(need) || !m.covers(addr, u64::from(len)) {
                    return Err(syn::LOCAL_PROT);
                }
                u64::from(len)
            }
        };
        total = total.checked_add(len).ok_or(syn::LOCAL_LENGTH)?;
    }
    Ok(total)
}

/// A DMA cursor over a scatter/gather list (checked with [`check_sgl`] first).
pub(super) struct SglCur<'a> {
    fw: &'a Fw,
    segs: &'a [u8],
    rq: bool,
    pd: u32,
    pos: usize,
    cur: Option<(Seg, u64, Option<MkeyInfo>)>,
}

/// A DMA cursor over a remote region (`rkey`, `raddr`; checked first).
pub(super) struct RegionCur {
    info: MkeyInfo,
    va: u64,
}

/// Where data is read from or written to.
pub(super) enum Cur<'a> {
    Sgl(SglCur<'a>),
    Region(RegionCur),
}

impl<'a> Cur<'a> {
    /// A cursor over the scatter/gather list `segs` (`rq`: a receive WQE's) of a QP of PD `pd`.
    pub(super) fn sgl(fw: &'a Fw, segs: &'a [u8], rq: bool, pd: u32) -> Self {
        Cur::Sgl(SglCur {
            fw,
            segs,
            rq,
            pd,
            pos: 0,
            cur: None,
        })
    }

    /// A cursor over a remote region from virtual address `va` of `info`.
    pub(super) fn region(info: MkeyInfo, va: u64) -> Self {
        Cur::Region(RegionCur { info, va })
    }

    /// The current segment with bytes left, its offset, and its mkey.
    fn piece(c: &mut SglCur<'a>) -> Result<Option<(Seg, u64, Option<MkeyInfo>)>, ()> {
        loop {
            if let Some((s, done, m)) = c.cur {
                let len = match s {
                    Seg::Ptr { len, .. } => u64::from(len),
                    Seg::Inline { len, .. } => u64::try_from(len).map_err(|_| ())?,
                };
                if done < len {
                    return Ok(Some((s, done, m)));
                }
            }
            let Some(s) = next_seg(c.segs, &mut c.pos, c.rq)? else {
                c.cur = None;
                return Ok(None);
            };
            let m = match s {
                Seg::Ptr { lkey, len, .. } if len > 0 => Some(mkey(c.fw, lkey, c.pd).ok_or(())?),
                _ => None,
            };
            c.cur = Some((s, 0, m));
        }
    }

    /// Reads up to `out.len()` bytes; how many (0 at the end). `Err` on a DMA fault.
    pub(super) fn read(&mut self, mem: &dyn DmaMem, out: &mut [u8]) -> Result<usize, ()> {
        match self {
            Cur::Region(r) => {
                let (bus, contig) = r.info.translate(r.va).ok_or(())?;
                let n = usize::try_from(contig).unwrap_or(usize::MAX).min(out.len());
                mem.read(bus, out.get_mut(..n).ok_or(())?).map_err(|_| ())?;
                r.va = r.va.wrapping_add(n as u64);
                Ok(n)
            }
            Cur::Sgl(c) => {
                let mut got = 0;
                while got < out.len() {
                    let Some((s, done, m)) = Self::piece(c)? else {
                        break;
                    };
                    let want = out.len() - got;
                    let n = match s {
                        Seg::Inline { at, len } => {
                            let d = usize::try_from(done).map_err(|_| ())?;
                            let n = (len - d).min(want);
                            let src = c.segs.get(at + d..at + d + n).ok_or(())?;
                            out.get_mut(got..got + n).ok_or(())?.copy_from_slice(src);
                            n
                        }
                        Seg::Ptr { addr, len, .. } => {
                            let (bus, contig) =
                                m.ok_or(())?.translate(addr.wrapping_add(done)).ok_or(())?;
                            let n = (u64::from(len) - done).min(contig);
                            let n = usize::try_from(n).unwrap_or(usize::MAX).min(want);
                            mem.read(bus, out.get_mut(got..got + n).ok_or(())?)
                                .map_err(|_| ())?;
                            n
                        }
                    };
                    if let Some((_, d, _)) = c.cur.as_mut() {
                        *d += n as u64;
                    }
                    got += n;
                }
                Ok(got)
            }
        }
    }

    /// Writes all of `data`. `Err` on a DMA fault or when the list is too short.
    pub(super) fn write(&mut self, mem: &dyn DmaMem, data: &[u8]) -> Result<(), ()> {
        match self {
            Cur::Region(r) => {
                let mut done = 0;
                while done < data.len() {
                    let (bus, contig) = r.info.translate(r.va).ok_or(())?;
                    let n = usize::try_from(contig)
                        .unwrap_or(usize::MAX)
                        .min(data.len() - done)
                        .max(1);
                    mem.write(bus, data.get(done..done + n).ok_or(())?)
                        .map_err(|_| ())?;
                    r.va = r.va.wrapping_add(n as u64);
                    done += n;
                }
                Ok(())
            }
            Cur::Sgl(c) => {
                let mut done = 0;
                while done < data.len() {
                    let Some((Seg::Ptr { addr, len, .. }, off, Some(m))) = Self::piece(c)? else {
                        return Err(());
                    };
                    let (bus, contig) = m.translate(addr.wrapping_add(off)).ok_or(())?;
                    let n = (u64::from(len) - off).min(contig);
                    let n = usize::try_from(n)
                        .unwrap_or(usize::MAX)
                        .min(data.len() - done);
                    mem.write(bus, data.get(done..done + n).ok_or(())?)
                        .map_err(|_| ())?;
                    if let Some((_, d, _)) = c.cur.as_mut() {
                        *d += n as u64;
                    }
                    done += n;
                }
                Ok(())
            }
        }
    }
}

/// Which side of a transfer faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fault {
    /// Reading the source.
    Src,
    /// Writing the destination.
    Dst,
}

/// Moves `len` bytes from `src` to `dst` in chunks.
pub(super) fn transfer(
    src: &mut Cur<'_>,
    smem: &dyn DmaMem,
    dst: &mut Cur<'_>,
    dmem: &dyn DmaMem,
    len: u64,
) -> Result<(), Fault> {
    let mut chunk = [0u8; CHUNK];
    let mut left = len;
    while left > 0 {
        let n = usize::try_from(left).unwrap_or(CHUNK).min(CHUNK);
        let buf = chunk.get_mut(..n).ok_or(Fault::Src)?;
        let got = src.read(smem, buf).map_err(|()| Fault::Src)?;
        if got == 0 {
            return Err(Fault::Src);
        }
        dst.write(dmem, chunk.get(..got).ok_or(Fault::Src)?)
            .map_err(|()| Fault::Dst)?;
        left -= got as u64;
    }
    Ok(())
}

/// Skips `n` bytes of a receive scatter list (the GRH area of a UD receive without a GRH).
pub(super) fn skip_bytes(dst: &mut Cur<'_>, n: u32) -> Result<(), Fault> {
    let Cur::Sgl(c) = dst else {
        return Err(Fault::Dst);
    };
    let mut left = u64::from(n);
    while left > 0 {
        let Some((s, done, _)) = Cur::piece(c).map_err(|()| Fault::Dst)? else {
            return Err(Fault::Dst);
        };
        let len = match s {
            Seg::Ptr { len, .. } => u64::from(len),
            Seg::Inline { .. } => return Err(Fault::Dst),
        };
        let k = (len - done).min(left);
        if let Some((_, d, _)) = c.cur.as_mut() {
            *d += k;
        }
        left -= k;
    }
    Ok(())
}
