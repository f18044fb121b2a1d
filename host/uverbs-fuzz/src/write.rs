// SPDX-License-Identifier: GPL-2.0

//! write() commands from `std_types::WRITE_OBJECTS`: the header and core
//! request of the declared sizes, the fields that name objects filled with
//! handles of this file, then one field mutated (header words, command
//! bits, the extended header, the response pointer, a handle, a count, the
//! write length, the buffer pointer).

use crate::abi::ids::{cmd, obj};
use crate::abi::spec::{ObjectSpec, WriteCmdSpec};
use crate::abi::std_types::WRITE_OBJECTS;
use crate::abi::write::{CmdHdr, ExCmdHdr};
use crate::fuzzer::{Call, Fuzzer};
use crate::names;
use crate::state::{handle_mutation, Pick};

/// Driver data in and out of the creates: room for every driver's response
/// (rxe's `mminfo`s, mlx5's create responses).
const UDATA_OUT: usize = 64;

#[derive(Clone, Copy)]
enum F {
    /// A u32 handle of the object type.
    H(u16),
    /// A handle being destroyed.
    D(u16),
    /// An fd of the object type, or -1.
    Fd(u16),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    /// The fuzzer's MR buffer address.
    Mem,
    /// A destination GID (16 bytes): `fe80::` without `-g`, else one of the `-g` addresses
    /// (as GIDs) or `fe80::`.
    Dgid,
    /// A source GID index: 0 without `-g`, else 0-7 (the default GIDs, the IP GIDs of the
    /// `-g` addresses, empty entries).
    SgidIndex,
}

/// The request fields that matter, `(offset, field)`, per command, from
/// the 7.3 uapi structs (`struct ib_uverbs_<cmd>`).
fn fields(c: u32, ex: bool) -> &'static [(usize, F)] {
    use F::*;
    match (c, ex) {
        (cmd::DEALLOC_PD, false) => &[(0, D(obj::PD))],
        (cmd::CREATE_AH, false) => &[
            (16, H(obj::PD)),
            (45, U8(64)),
            (53, U8(1)),
            (54, U8(1)),
            (24, Dgid),
            (44, SgidIndex),
        ],
        (cmd::DESTROY_AH, false) => &[(0, D(obj::AH))],
        (cmd::CREATE_CQ, false) => &[(16, U32(16)), (24, Fd(obj::COMP_CHANNEL))],
        (cmd::DESTROY_CQ, false) => &[(8, D(obj::CQ))],
        (cmd::POLL_CQ, false) => &[(8, H(obj::CQ)), (12, U32(1))],
        (cmd::REQ_NOTIFY_CQ, false) => &[(0, H(obj::CQ))],
        (cmd::RESIZE_CQ, false) => &[(8, H(obj::CQ)), (12, U32(32))],
        (cmd::EX_CREATE_CQ, true) => &[(8, U32(16)), (16, Fd(obj::COMP_CHANNEL))],
        (cmd::EX_MODIFY_CQ, true) => &[(0, H(obj::CQ)), (4, U32(1)), (8, U16(1)), (10, U16(1))],
        (cmd::QUERY_PORT, false) => &[(8, U8(1))],
        (cmd::DEREG_MR, false) => &[(0, D(obj::MR))],
        (cmd::REG_MR, false) => &[
            (8, Mem),
            (16, U64(4096)),
            (24, Mem),
            (32, H(obj::PD)),
            (36, U32(1)),
        ],
        // struct ib_uverbs_rereg_mr: mr_handle, flags (IB_MR_REREG_PD | IB_MR_REREG_ACCESS),
        // start, length, hca_va (for a TRANS flag a mutation sets), pd_handle, access_flags.
        (cmd::REREG_MR, false) => &[
            (8, H(obj::MR)),
            (12, U32(6)),
            (16, Mem),
            (24, U64(4096)),
            (32, Mem),
            (40, H(obj::PD)),
            (44, U32(1)),
        ],
        (cmd::CREATE_QP, false) => &[
            (16, H(obj::PD)),
            (20, H(obj::CQ)),
            (24, H(obj::CQ)),
            (32, U32(4)),
            (36, U32(4)),
            (40, U32(1)),
            (44, U32(1)),
            (53, U8(2)),
        ],
        (cmd::DESTROY_QP, false) => &[(8, D(obj::QP))],
        (cmd::MODIFY_QP, false) => &[(64, H(obj::QP)), (68, U32(1)), (96, U8(6))],
        (cmd::POST_SEND, false) | (cmd::POST_RECV, false) => &[(8, H(obj::QP))],
        (cmd::QUERY_QP, false) => &[(8, H(obj::QP)), (12, U32(1))],
        (cmd::EX_CREATE_QP, true) => &[
            (8, H(obj::PD)),
            (12, H(obj::CQ)),
            (16, H(obj::CQ)),
            (24, U32(4)),
            (28, U32(4)),
            (32, U32(1)),
            (36, U32(1)),
            (45, U8(2)),
        ],
        (cmd::EX_MODIFY_QP, true) => &[(64, H(obj::QP)), (68, U32(1)), (96, U8(6))],
        // struct ib_uverbs_create_srq: pd_handle, max_wr, max_sge, srq_limit.
        (cmd::CREATE_SRQ, false) => &[(16, H(obj::PD)), (20, U32(16)), (24, U32(1))],
        // struct ib_uverbs_modify_srq: srq_handle, attr_mask (IB_SRQ_LIMIT), max_wr, limit.
        (cmd::MODIFY_SRQ, false) => &[(0, H(obj::SRQ)), (4, U32(2)), (8, U32(16)), (12, U32(4))],
        (cmd::QUERY_SRQ, false) => &[(8, H(obj::SRQ))],
        (cmd::DESTROY_SRQ, false) => &[(8, D(obj::SRQ))],
        // struct ib_uverbs_alloc_mw: response, pd_handle, mw_type (IB_MW_TYPE_1).
        (cmd::ALLOC_MW, false) => &[(8, H(obj::PD)), (12, U8(1))],
        // struct ib_uverbs_dealloc_mw: mw_handle.
        (cmd::DEALLOC_MW, false) => &[(0, D(obj::MW))],
        _ => &[],
    }
}

/// What a successful create returns at the start of its response.
fn creates(c: u32, ex: bool) -> Option<u16> {
    Some(match (c, ex) {
        (cmd::ALLOC_PD, false) => obj::PD,
        (cmd::CREATE_AH, false) => obj::AH,
        (cmd::CREATE_COMP_CHANNEL, false) => obj::COMP_CHANNEL,
        (cmd::CREATE_CQ, false) | (cmd::EX_CREATE_CQ, true) => obj::CQ,
        (cmd::REG_MR, false) => obj::MR,
        (cmd::CREATE_QP, false) | (cmd::EX_CREATE_QP, true) => obj::QP,
        (cmd::CREATE_SRQ, false) => obj::SRQ,
        (cmd::ALLOC_MW, false) => obj::MW,
        (cmd::GET_CONTEXT, false) => obj::ASYNC_EVENT,
        _ => return None,
    })
}

/// Whether the differential mode compares a call: not when driver data was
/// mutated (the driver's to judge), nor when a handle field found nothing
/// of its kind and carries a small number that may name some other object
/// (the outcome then depends on object numbers).
///
/// A CQ or QP created by ioctl without UHW_OUT is not compared either:
/// whether a driver needs room for its response is the driver's (rxe
/// refuses, the mock does not).
pub(crate) fn comparable(desc: &str, udata_touched: bool) -> bool {
    let create = desc.starts_with("ioctl CQ.CREATE") || desc.starts_with("ioctl QP.CREATE");
    !udata_touched
        && !desc.contains(":none")
        && !desc.contains(" none")
        && (!create || desc.contains("0x1001"))
}

fn put(b: &mut [u8], off: usize, bytes: &[u8]) {
    if let Some(d) = b.get_mut(off..off + bytes.len()) {
        d.copy_from_slice(bytes);
    }
}

impl Fuzzer {
    /// GET_CONTEXT by write() on slot `i` (a new file's usual first call).
    pub(crate) fn get_context(&mut self, i: usize) {
        let spec = WRITE_OBJECTS
            .iter()
            .flat_map(|o| o.writes.iter())
            .find(|w| w.cmd == cmd::GET_CONTEXT && !w.is_ex)
            .copied();
        if let (Some(w), Some(s)) = (spec, self.slot(i)) {
            self.write_one(&w, s, false, 0, 0, 0);
        }
    }

    pub(crate) fn write_step(&mut self) {
        let all: Vec<&WriteCmdSpec> = WRITE_OBJECTS
            .iter()
            .flat_map(|o: &ObjectSpec| o.writes.iter())
            .collect();
        let w = *all[self.rng.below(all.len())];
        let (_, slot) = self.any_slot();
        let mutate = self.rng.chance(3, 5);
        let mkind = self.rng.below(14);
        let mval = self.rng.next();
        let hseed = self.rng.next();
        let Some(slot) = slot else { return };
        self.write_one(&w, slot, mutate, mkind, mval, hseed);
    }

    fn write_one(
        &mut self,
        w: &WriteCmdSpec,
        slot: crate::state::FileSlot,
        mutate: bool,
        mkind: usize,
        mval: u64,
        hseed: u64,
    ) {
        let name = names::write_cmd(w.cmd, w.is_ex);
        let mut rng = crate::rng::Rng::new(hseed);
        let req = usize::from(w.req_size);
        let core_in = if w.is_ex { req.div_ceil(8) * 8 } else { req };
        let mut resp_len = usize::from(w.resp_size);
        if w.cmd == cmd::POLL_CQ && !w.is_ex {
            resp_len += 64;
        }
        let udata_out = if w.has_udata { UDATA_OUT } else { 0 };
        // The response buffer lives as long as the fuzzer: a response
        // pointer with 0xffff output words puts the driver's data half a
        // megabyte past it, which must still be the fuzzer's memory. A
        // create's first word is preset, so that a success that wrote no
        // response hands out no handle.
        let out = &mut self.out;
        out[..4096].fill(0);
        out[..4].copy_from_slice(&u32::MAX.to_ne_bytes());
        let out_addr = out.as_mut_ptr() as u64;
        let hsize = CmdHdr::SIZE + if w.is_ex { ExCmdHdr::SIZE } else { 0 };
        let mut buf = vec![0u8; hsize + core_in + 64];
        let body = hsize;
        let mut tags = Vec::new();
        let mut destroy: Option<usize> = None;
        let mut udata_touched = false;
        // `(offset, pool index)` of the live handles a create is made with.
        let mut parents: Vec<(usize, usize)> = Vec::new();
        // A byte of a user pointer was mutated: where that lands depends on
        // each process's address-space layout, not on the stack.
        let mut layout_dependent = false;

        if w.has_resp && !w.is_ex {
            put(&mut buf, body, &out_addr.to_ne_bytes());
        }
        let fl = fields(w.cmd, w.is_ex);
        for &(off, f) in fl {
            match f {
                F::H(o) | F::D(o) | F::Fd(o) => {
                    let d = matches!(f, F::D(_));
                    let use_fd = !matches!(f, F::Fd(_)) || rng.chance(1, 3);
                    let (v, got, idx) = self.pool.pick(&mut rng, slot.file, o, Pick::Live, d);
                    if !use_fd {
                        put(&mut buf, body + off, &(-1i32).to_ne_bytes());
                        tags.push(format!("{off}:nofd"));
                        continue;
                    }
                    put(&mut buf, body + off, &v.to_ne_bytes());
                    if d {
                        tags.push(format!("{off}:{}", self.pool.destroy_tag(got, idx)));
                        destroy = idx;
                    } else {
                        tags.push(format!("{off}:{}", got.tag()));
                        if let (Pick::Live, Some(i), F::H(_)) = (got, idx, f) {
                            parents.push((off, i));
                        }
                    }
                }
                F::U8(v) => put(&mut buf, body + off, &[v]),
                F::U16(v) => put(&mut buf, body + off, &v.to_ne_bytes()),
                F::U32(v) => put(&mut buf, body + off, &v.to_ne_bytes()),
                F::U64(v) => put(&mut buf, body + off, &v.to_ne_bytes()),
                F::Mem => put(&mut buf, body + off, &self.mem.mr_buf.to_ne_bytes()),
                F::Dgid => {
                    let mut g = [0u8; 16];
                    g[0] = 0xfe;
                    g[1] = 0x80;
                    if !self.gids.is_empty() {
                        let i = rng.below(self.gids.len() + 1);
                        if let Some(a) = self.gids.get(i) {
                            g = *a;
                        }
                        tags.push(format!("{off}:gid{i}"));
                    }
                    put(&mut buf, body + off, &g);
                }
                F::SgidIndex => {
                    if !self.gids.is_empty() {
                        put(&mut buf, body + off, &[rng.below(8) as u8]);
                    }
                }
            }
        }
        let mut command = w.cmd | if w.is_ex { cmd::FLAG_EXTENDED } else { 0 };
        let (mut in_words, mut out_words) = if w.is_ex {
            ((core_in / 8) as u16, (resp_len.div_ceil(8)) as u16)
        } else {
            (
                ((CmdHdr::SIZE + core_in) / 4) as u16,
                ((resp_len + udata_out) / 4) as u16,
            )
        };
        let mut ex = ExCmdHdr {
            response: out_addr,
            provider_in_words: 0,
            // Driver output room for the extended creates too (rxe refuses
            // a CQ or QP without room for its response).
            provider_out_words: if w.has_udata || creates(w.cmd, w.is_ex).is_some() {
                (UDATA_OUT / 8) as u16
            } else {
                0
            },
            cmd_hdr_reserved: 0,
        };
        if w.is_ex && resp_len == 0 {
            ex.response = 0;
        }
        let mut count = hsize + core_in;
        if w.cmd == cmd::GET_CONTEXT && !w.is_ex && !self.ctx_udata.is_empty() {
            // The driver's ucontext request (mlx5: alloc_ucontext_req_v2).
            let u = self.ctx_udata.clone();
            buf.resize(hsize + core_in + u.len() + 64, 0);
            put(&mut buf, hsize + core_in, &u);
            in_words += (u.len() / 4) as u16;
            out_words = ((resp_len + 256) / 4) as u16;
            count += u.len();
        }
        let mut bad: Option<(u64, &str)> = None;
        let mut mdesc = String::from("valid");
        if mutate {
            let pv = (mval >> 8) as usize;
            match mkind {
                0 => {
                    in_words = [
                        in_words.wrapping_add(1),
                        in_words.wrapping_sub(1),
                        0,
                        0xffff,
                    ][pv % 4];
                    mdesc = format!("in_words {in_words}");
                }
                1 => {
                    out_words = [out_words.wrapping_sub(1), 0, 0xffff][pv % 3];
                    mdesc = format!("out_words {out_words}");
                    udata_touched = w.has_udata;
                }
                2 => {
                    count = [count - 4, count + 4, 7, 0, 23][pv % 5];
                    if count > buf.len() {
                        count = buf.len();
                    }
                    mdesc = format!("count {count}");
                }
                3 => {
                    command = [
                        70,
                        0x7f,
                        0x4000_0000 | w.cmd,
                        41,
                        49,
                        cmd::FLAG_EXTENDED | 63,
                    ][pv % 6];
                    mdesc = format!("command {command:#x}");
                }
                4 => {
                    command ^= cmd::FLAG_EXTENDED;
                    mdesc = "extended flag flipped".into();
                }
                5 if w.is_ex => {
                    match pv % 4 {
                        0 => ex.cmd_hdr_reserved = 1,
                        1 => ex.response = 0,
                        2 => ex.provider_in_words = 1,
                        _ => ex.provider_out_words = 0xffff,
                    }
                    udata_touched = pv % 4 >= 2;
                    mdesc = format!("ex header {}", pv % 4);
                }
                6 if w.has_resp || w.is_ex => {
                    let (p, what) = self.mem.bad_ptr(&mut rng, resp_len);
                    if w.is_ex {
                        ex.response = p;
                    } else {
                        put(&mut buf, body, &p.to_ne_bytes());
                    }
                    mdesc = format!("response {what}");
                }
                7 => {
                    let c: Vec<(usize, u16)> = fl
                        .iter()
                        .filter_map(|&(o, f)| match f {
                            F::H(t) | F::D(t) | F::Fd(t) => Some((o, t)),
                            _ => None,
                        })
                        .collect();
                    let how = handle_mutation(&mut rng);
                    if let Some(&(off, t)) = c.get(pv % c.len().max(1)) {
                        let (v, got, idx) = self.pool.pick(&mut rng, slot.file, t, how, false);
                        put(&mut buf, body + off, &v.to_ne_bytes());
                        // An aliased number destroys the live object it names.
                        let is_d = fl.iter().any(|&(o, f)| o == off && matches!(f, F::D(_)));
                        destroy = if is_d && got == Pick::Aliased {
                            idx
                        } else {
                            None
                        };
                        parents.retain(|p| p.0 != off);
                        mdesc = format!("handle {off} {}", got.tag());
                    } else {
                        mdesc = "handle none".into();
                    }
                }
                8 => {
                    let c: Vec<usize> = fl
                        .iter()
                        .filter_map(|&(o, f)| {
                            matches!(f, F::U32(_) | F::U16(_) | F::U8(_) | F::U64(_)).then_some(o)
                        })
                        .collect();
                    if let Some(&off) = c.get(pv % c.len().max(1)) {
                        let v = [0u32, u32::MAX, 0x8000_0000, 0x10000][mval as usize % 4];
                        put(&mut buf, body + off, &v.to_ne_bytes());
                        destroy = None;
                        mdesc = format!("value {off} {v:#x}");
                    } else {
                        mdesc = "value none".into();
                    }
                }
                // A byte near the end of the request set.
                9 if core_in > 0 => {
                    let off = body + core_in - 1 - (pv % core_in.min(8));
                    buf[off] |= 0x80;
                    let r = off - body;
                    // The handle changed only if the byte is in it.
                    if fl
                        .iter()
                        .any(|&(o, f)| matches!(f, F::D(_)) && (o..o + 4).contains(&r))
                    {
                        destroy = None;
                    }
                    parents.retain(|p| !(p.0..p.0 + 4).contains(&r));
                    layout_dependent = w.has_resp && !w.is_ex && r < 8;
                    mdesc = format!("byte {} set", off - body);
                }
                10 => {
                    bad = Some(self.mem.bad_ptr(&mut rng, count));
                    mdesc = format!("buffer {}", bad.map(|b| b.1).unwrap_or(""));
                }
                11 if w.has_udata => {
                    // Driver input after the core request.
                    let extra = [8usize, 16, 64][pv % 3];
                    buf.resize(hsize + core_in + extra + 64, 0);
                    if w.is_ex {
                        ex.provider_in_words = (extra / 8) as u16;
                    } else {
                        in_words = in_words.wrapping_add((extra / 4) as u16);
                    }
                    count += extra;
                    udata_touched = true;
                    mdesc = format!("udata in {extra}");
                }
                _ => {}
            }
        }
        let hdr = CmdHdr {
            command,
            in_words,
            out_words,
        };
        put(&mut buf, 0, &hdr.to_bytes());
        if w.is_ex {
            put(&mut buf, CmdHdr::SIZE, &ex.to_bytes());
        }
        let desc = format!(
            "write {name} [{}] {mdesc}{}",
            tags.join(","),
            Self::ctx_tag(&slot)
        );
        self.announce(&desc);
        let e = match bad {
            Some((p, _)) => crate::sys::write_addr(slot.fd, p, count),
            None => crate::sys::write_buf(slot.fd, &buf[..count.min(buf.len())]),
        };
        if e == 0 {
            let first = u32::from_ne_bytes(self.out[..4].try_into().unwrap_or([0; 4]));
            if let Some(t) = creates(w.cmd, w.is_ex) {
                if command & cmd::COMMAND_MASK == w.cmd
                    && first != u32::MAX
                    && (!crate::state::is_fd_object(t) || first > 2)
                {
                    let p: Vec<usize> = parents.iter().map(|p| p.1).collect();
                    self.add_handle(slot.file, t, first, &p);
                }
                if t == obj::ASYNC_EVENT && command == w.cmd {
                    self.set_ctx(slot.file, true);
                }
            }
            if let Some(i) = destroy {
                self.pool.kill(i);
            }
        }
        let compare = comparable(&desc, udata_touched) && !layout_dependent;
        self.record(Call {
            key: &format!("write {name}"),
            desc,
            errno: e,
            compare,
        });
        // A GET_CONTEXT that failed may or may not have left a context (on
        // either stack); a mutated command may have reached GET_CONTEXT.
        if (w.cmd == cmd::GET_CONTEXT && !w.is_ex && e != 0) || (mutate && matches!(mkind, 3 | 4)) {
            self.probe_ctx();
        }
    }
}
