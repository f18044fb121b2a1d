// SPDX-License-Identifier: GPL-2.0

//! ioctl requests from the spec tables: a valid bundle for a method of
//! `std_types::CORE_OBJECTS` (every mandatory attribute, the optional ones
//! at random, values a device accepts), then, most of the time, one field
//! mutated: an attribute dropped, doubled or unknown, a length at or past
//! a boundary, an unknown flag, a reserved field set, a bad pointer, a
//! handle that is stale, of another file or of another type, a header field
//! off by one, another driver id, an unknown object or method.

use crate::abi::ids::{attr, cmd, method, obj, UVERBS_ATTR_UHW_IN, UVERBS_ATTR_UHW_OUT};
use crate::abi::ioctl::{IoctlHdr, UAttr, RDMA_VERBS_IOCTL, UVERBS_ATTR_F_MANDATORY};
use crate::abi::spec::{Access, AttrKind, AttrSpec, ObjectSpec};
use crate::abi::std_types::CORE_OBJECTS;
use crate::fuzzer::{Call, Fuzzer};
use crate::names;
use crate::state::{handle_mutation, Pick};

/// Bytes of scratch memory each attribute may point at.
const SLOT: usize = 1024;
/// The attributes' memory: 24 slots and the largest length past the last.
pub(crate) const SCRATCH: usize = SLOT * 24 + 0x10000 + 4096;

#[derive(Clone, Copy)]
enum Role {
    Plain,
    New(u16),
    Destroy(Option<usize>),
}

struct Built {
    ua: UAttr,
    role: Role,
    /// Pool index of the live handle a create is made with (READ/WRITE
    /// IDR or fd attributes).
    parent: Option<usize>,
    /// The spec attribute this one was made from (None: unknown id).
    spec: Option<AttrSpec>,
    tag: String,
}

/// Values a device accepts for the attributes whose content matters (`gids`: the device has
/// IP GIDs, `-g`, so GID_ENTRY queries pick among the first 8 indexes).
fn value(o: u16, m: u16, a: u16, pick: u64, mem: u64, gids: bool) -> Option<u64> {
    Some(match (o, m, a) {
        (obj::DEVICE, method::QUERY_GID_ENTRY, attr::QUERY_GID_ENTRY_GID_INDEX) if gids => pick % 8,
        (obj::DEVICE, method::QUERY_PORT, attr::QUERY_PORT_PORT_NUM) => 1,
        (obj::DEVICE, method::INVOKE_WRITE, attr::WRITE_CMD) => [
            cmd::QUERY_DEVICE,
            cmd::QUERY_PORT,
            cmd::ALLOC_PD,
            cmd::CREATE_COMP_CHANNEL,
        ][pick as usize % 4]
            .into(),
        (obj::DEVICE, method::INFO_HANDLES, attr::INFO_OBJECT_ID) => {
            [obj::PD, obj::CQ, obj::QP, obj::MR, obj::COMP_CNTR, 0xffff][pick as usize % 6].into()
        }
        (obj::DEVICE, method::QUERY_GID_TABLE, attr::QUERY_GID_TABLE_ENTRY_SIZE) => 32,
        (obj::DEVICE, method::QUERY_GID_ENTRY, attr::QUERY_GID_ENTRY_PORT) => 1,
        (obj::CQ, method::CQ_CREATE, attr::CREATE_CQ_CQE) => 16,
        (obj::CQ, method::CQ_CREATE, attr::CREATE_CQ_USER_HANDLE) => pick,
        (obj::CQ, method::CQ_CREATE, attr::CREATE_CQ_BUFFER_FD) => u64::MAX,
        (obj::QP, method::QP_CREATE, attr::CREATE_QP_USER_HANDLE) => pick,
        (obj::QP, method::QP_CREATE, attr::CREATE_QP_TYPE) => [2, 4][pick as usize % 2],
        (obj::MR, method::REG_MR, attr::REG_MR_IOVA) => mem,
        (obj::MR, method::REG_MR, attr::REG_MR_ADDR) => mem,
        (obj::MR, method::REG_MR, attr::REG_MR_LENGTH) => 4096,
        (obj::MR, method::REG_MR, attr::REG_MR_ACCESS_FLAGS) => 1,
        (obj::MR, method::REG_MR, attr::REG_MR_FD) => u64::MAX,
        (obj::SRQ, method::SRQ_CREATE, attr::CREATE_SRQ_MAX_WR) => 16,
        (obj::SRQ, method::SRQ_CREATE, attr::CREATE_SRQ_MAX_SGE) => 1,
        (obj::SRQ, method::SRQ_CREATE, attr::CREATE_SRQ_USER_HANDLE) => pick,
        (obj::SRQ, method::SRQ_CREATE, attr::CREATE_SRQ_TYPE) => 0,
        _ => return None,
    })
}

/// How often an optional attribute goes into a valid request (of 10):
/// the ones a create needs to succeed nearly always, the exotic ones
/// rarely.
fn optional_chance(o: u16, m: u16, a: &AttrSpec) -> u64 {
    match (o, m, a.id) {
        (obj::QP, method::QP_CREATE, attr::CREATE_QP_PD_HANDLE)
        | (obj::QP, method::QP_CREATE, attr::CREATE_QP_SEND_CQ_HANDLE)
        | (obj::QP, method::QP_CREATE, attr::CREATE_QP_RECV_CQ_HANDLE)
        | (obj::MR, method::REG_MR, attr::REG_MR_ADDR)
        | (obj::SRQ, method::SRQ_CREATE, attr::CREATE_SRQ_PD_HANDLE) => 9,
        (_, _, UVERBS_ATTR_UHW_OUT) => 8,
        (obj::DEVICE, _, _) => 6,
        _ => 2,
    }
}

/// The length of a pointer attribute in a valid request.
fn ptr_len(o: u16, m: u16, a: &AttrSpec, min: u16, max: u16) -> u16 {
    if max != u16::MAX {
        return max;
    }
    match (o, m, a.id) {
        (_, _, UVERBS_ATTR_UHW_OUT) => 64,
        (_, _, UVERBS_ATTR_UHW_IN) => 0,
        (obj::DEVICE, method::QUERY_GID_TABLE, attr::QUERY_GID_TABLE_RESP_ENTRIES) => 32 * 4,
        (obj::DEVICE, method::INVOKE_WRITE, attr::CORE_IN) => 16,
        (obj::DEVICE, method::INVOKE_WRITE, attr::CORE_OUT) => 184,
        _ => min + 8,
    }
}

impl Fuzzer {
    pub(crate) fn ioctl_step(&mut self) {
        let objs: Vec<&ObjectSpec> = CORE_OBJECTS
            .iter()
            .filter(|o| !o.methods.is_empty())
            .collect();
        let o = objs[self.rng.below(objs.len())];
        let m = &o.methods[self.rng.below(o.methods.len())];
        let (_, slot) = self.any_slot();
        let mutate = self.rng.chance(3, 5);
        let mkind = self.rng.below(16);
        let mtarget = self.rng.next() as usize;
        let mval = self.rng.next();
        let file = slot.map(|s| s.file).unwrap_or(0);
        let name = names::method(o.id, m.id);

        // The attributes' memory lives as long as the fuzzer: the kernel
        // zero-fills a pointer attribute up to its length
        // (`uverbs_copy_to_struct_or_zero()`), and a mutated length of
        // 0xffff must still land in the fuzzer's own buffer.
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.resize(SCRATCH, 0);
        scratch[..SLOT * 24].fill(0);
        let base = scratch.as_ptr() as u64;
        let mut attrs: Vec<Built> = Vec::new();
        for a in m.attrs {
            let include = a.mandatory || self.rng.chance(optional_chance(o.id, m.id, a), 10);
            let pick = self.rng.next();
            let hpick = self.pool.pick(
                &mut self.rng,
                file,
                a.kind.obj_type().unwrap_or(0),
                Pick::Live,
                matches!(
                    a.kind,
                    AttrKind::Idr {
                        access: Access::Destroy,
                        ..
                    } | AttrKind::Fd {
                        access: Access::Destroy,
                        ..
                    }
                ),
            );
            if !include {
                continue;
            }
            let i = attrs.len();
            let addr = base + (i * SLOT) as u64;
            let flags = if a.mandatory {
                UVERBS_ATTR_F_MANDATORY
            } else {
                0
            };
            let mut ua = UAttr {
                attr_id: a.id,
                len: 0,
                flags,
                elem_id: 0,
                elem_reserved: 0,
                data: 0,
            };
            let mut role = Role::Plain;
            let mut parent = None;
            let mut tag = format!("{:#x}", a.id);
            let v = value(
                o.id,
                m.id,
                a.id,
                pick,
                self.mem.mr_buf,
                !self.gids.is_empty(),
            );
            match a.kind {
                AttrKind::PtrIn(p) | AttrKind::PtrOut(p) => {
                    ua.len = ptr_len(o.id, m.id, a, p.min_len, p.len);
                    let inline = matches!(a.kind, AttrKind::PtrIn(_)) && ua.len <= 8;
                    if inline {
                        ua.data = v.unwrap_or(0);
                    } else {
                        if o.id == obj::QP && a.id == attr::CREATE_QP_CAP {
                            // struct ib_uverbs_qp_cap: 4 send WRs, 4 recv WRs, 1 SGE each
                            for (k, w) in [4u32, 4, 1, 1, 0].iter().enumerate() {
                                scratch[i * SLOT + 4 * k..][..4].copy_from_slice(&w.to_ne_bytes());
                            }
                        }
                        ua.data = if ua.len == 0 { 0 } else { addr };
                    }
                }
                AttrKind::ConstIn | AttrKind::FlagsIn => {
                    ua.len = 8;
                    ua.data = v.unwrap_or(0);
                }
                AttrKind::EnumIn(_) => {
                    ua.len = 8;
                }
                AttrKind::Idr { obj_type, access } | AttrKind::Fd { obj_type, access } => {
                    if access == Access::New {
                        // Preset: a success that wrote no handle back
                        // hands out none.
                        ua.data = u64::MAX;
                        role = Role::New(obj_type);
                    } else {
                        ua.data = u64::from(hpick.0);
                        if access == Access::Destroy {
                            tag =
                                format!("{:#x}:{}", a.id, self.pool.destroy_tag(hpick.1, hpick.2));
                            role = Role::Destroy(hpick.2);
                        } else {
                            tag = format!("{:#x}:{}", a.id, hpick.1.tag());
                            if hpick.1 == Pick::Live {
                                parent = hpick.2;
                            }
                        }
                    }
                }
                AttrKind::RawFd => {
                    ua.data = v.unwrap_or(u64::MAX);
                }
                AttrKind::IdrsArray { min_len, .. } => {
                    ua.len = 4 * min_len.max(1);
                    ua.data = addr;
                }
            }
            attrs.push(Built {
                ua,
                role,
                parent,
                spec: Some(*a),
                tag,
            });
        }

        let mut hdr = IoctlHdr {
            length: 0,
            object_id: o.id,
            method_id: m.id,
            num_attrs: 0,
            reserved1: 0,
            driver_id: self.driver_id,
            reserved2: 0,
        };
        let mut cmd = RDMA_VERBS_IOCTL;
        let mut mdesc = String::from("valid");
        let mut hdr_len: Option<u16> = None;
        let mut nattrs: Option<u16> = None;
        let mut udata_touched = false;
        if mutate {
            let n = attrs.len();
            let t = if n == 0 { 0 } else { mtarget % n };
            let pv = (mval >> 8) as usize;
            match mkind {
                0 if n > 0 => {
                    let b = attrs.remove(t);
                    udata_touched = b.spec.is_some_and(|s| s.is_udata);
                    mdesc = format!("drop {}", b.tag);
                }
                1 if n > 0 => {
                    let b = Built {
                        ua: attrs[t].ua,
                        role: Role::Plain,
                        parent: None,
                        spec: attrs[t].spec,
                        tag: attrs[t].tag.clone(),
                    };
                    mdesc = format!("dup {}", b.tag);
                    attrs.push(b);
                }
                2 => {
                    let id = [31u16, 0x1000 + 30, 40, 0x1000 + 2][pv % 4];
                    let mandatory = mval & 1 != 0;
                    attrs.push(Built {
                        ua: UAttr {
                            attr_id: id,
                            len: 8,
                            flags: if mandatory {
                                UVERBS_ATTR_F_MANDATORY
                            } else {
                                0
                            },
                            elem_id: 0,
                            elem_reserved: 0,
                            data: 0,
                        },
                        role: Role::Plain,
                        parent: None,
                        spec: None,
                        tag: format!("{id:#x}"),
                    });
                    mdesc = format!("unknown attr {id:#x} mandatory {mandatory}");
                }
                3 if n > 0 => {
                    let (min, max) = match attrs[t].spec.and_then(|s| s.kind.ptr()) {
                        Some((_, p)) => (p.min_len, p.len),
                        None => (0, 0),
                    };
                    let l = attrs[t].ua.len;
                    let choices = [
                        0,
                        min.wrapping_sub(1),
                        max.wrapping_add(1),
                        l.wrapping_add(8),
                        0xffff,
                        l.wrapping_sub(1),
                    ];
                    let nl = choices[pv % choices.len()];
                    attrs[t].ua.len = nl;
                    let nonptr = attrs[t].spec.is_some_and(|s| s.kind.ptr().is_none());
                    if attrs[t].ua.data == 0 && !nonptr {
                        attrs[t].ua.data = base + (t * SLOT) as u64;
                    }
                    udata_touched = attrs[t].spec.is_some_and(|s| s.is_udata);
                    mdesc = format!("len {} {} -> {nl}", attrs[t].tag, l);
                }
                4 if n > 0 => {
                    if mval & 1 != 0 {
                        let bit = 1u16 << (2 + pv % 14);
                        attrs[t].ua.flags |= bit;
                        mdesc = format!("flag {bit:#x} on {}", attrs[t].tag);
                    } else {
                        attrs[t].ua.flags ^= UVERBS_ATTR_F_MANDATORY;
                        mdesc = format!("mandatory flag flipped on {}", attrs[t].tag);
                    }
                }
                5 if n > 0 => {
                    if mval & 1 != 0 {
                        attrs[t].ua.elem_reserved = 1;
                        mdesc = format!("elem_reserved on {}", attrs[t].tag);
                    } else {
                        attrs[t].ua.elem_id = 1 + (pv % 3) as u8;
                        mdesc = format!("elem_id on {}", attrs[t].tag);
                    }
                }
                6 => {
                    // A bad pointer on a pointer attribute (not inline).
                    let c: Vec<usize> = (0..n)
                        .filter(|&k| {
                            attrs[k].ua.len > 8
                                || (attrs[k].ua.data != 0
                                    && attrs[k]
                                        .spec
                                        .is_some_and(|s| matches!(s.kind, AttrKind::PtrOut(_))))
                        })
                        .collect();
                    if c.is_empty() {
                        mdesc = "badptr none".into();
                    } else {
                        let k = c[pv % c.len()];
                        let (p, what) = self.mem.bad_ptr(
                            &mut crate::rng::Rng::new(mval),
                            usize::from(attrs[k].ua.len),
                        );
                        attrs[k].ua.data = p;
                        udata_touched = attrs[k].spec.is_some_and(|s| s.is_udata);
                        mdesc = format!("badptr {what} on {}", attrs[k].tag);
                    }
                }
                7 => {
                    let c: Vec<usize> = (0..n)
                        .filter(|&k| {
                            attrs[k].spec.is_some_and(|s| {
                                matches!(s.kind, AttrKind::Idr { .. } | AttrKind::Fd { .. })
                            })
                        })
                        .collect();
                    let mut r = crate::rng::Rng::new(mval);
                    let how = handle_mutation(&mut r);
                    if c.is_empty() {
                        mdesc = "handle none".into();
                    } else {
                        let k = c[pv % c.len()];
                        let ob = attrs[k].spec.and_then(|s| s.kind.obj_type()).unwrap_or(0);
                        let (v, got, idx) = self.pool.pick(&mut r, file, ob, how, false);
                        attrs[k].ua.data = u64::from(v);
                        attrs[k].parent = None;
                        if let Role::Destroy(_) = attrs[k].role {
                            // An aliased number destroys the live object it names.
                            attrs[k].role =
                                Role::Destroy(if got == Pick::Aliased { idx } else { None });
                        }
                        mdesc = format!("handle {} {}", attrs[k].tag, got.tag());
                    }
                }
                8 => {
                    let real = (IoctlHdr::SIZE + attrs.len() * UAttr::SIZE) as u16;
                    let l = [
                        real.wrapping_sub(16),
                        real + 16,
                        23,
                        0,
                        0xffff,
                        real.wrapping_sub(1),
                    ][pv % 6];
                    hdr_len = Some(l);
                    mdesc = format!("hdr.length {l} (real {real})");
                }
                9 => {
                    let v = [
                        attrs.len() as u16 + 1,
                        (attrs.len() as u16).wrapping_sub(1),
                        0,
                        255,
                        0xffff,
                    ][pv % 5];
                    nattrs = Some(v);
                    mdesc = format!("hdr.num_attrs {v}");
                }
                10 => {
                    if mval & 1 != 0 {
                        hdr.reserved1 = 1 << (pv % 64);
                        mdesc = "hdr.reserved1".into();
                    } else {
                        hdr.reserved2 = 1;
                        mdesc = "hdr.reserved2".into();
                    }
                }
                11 => {
                    hdr.driver_id = [0, 1, 99, u32::MAX][pv % 4];
                    mdesc = format!("hdr.driver_id {}", hdr.driver_id);
                }
                12 => {
                    hdr.object_id = [20, 0x1000, 0x1000 + 11, 0xffff, obj::SRQ, obj::AH][pv % 6];
                    mdesc = format!("hdr.object_id {:#x}", hdr.object_id);
                }
                13 => {
                    hdr.method_id = [m.id + 20, 0x1000, 0x1000 + 7, 0xffff, m.id + 1][pv % 5];
                    mdesc = format!("hdr.method_id {:#x}", hdr.method_id);
                }
                14 => {
                    cmd = [
                        RDMA_VERBS_IOCTL + 1,
                        RDMA_VERBS_IOCTL ^ (1 << 16),
                        RDMA_VERBS_IOCTL & !0xff00,
                    ][pv % 3];
                    mdesc = format!("ioctl cmd {cmd:#x}");
                }
                15 if n > 0 => {
                    let v = [0u64, u64::MAX, 0x8000_0000, 0x1_0000_0000, mval][pv % 5];
                    if attrs[t].ua.len <= 8 || attrs[t].ua.data == 0 {
                        attrs[t].ua.data = v;
                    } else {
                        let off = t * SLOT;
                        scratch[off..off + 8].copy_from_slice(&v.to_ne_bytes());
                    }
                    // A handle attribute given a value that names a live
                    // object of its type in this file acts on that one.
                    let mut alias = match attrs[t].spec.map(|s| s.kind) {
                        Some(AttrKind::Idr { obj_type, .. }) => u32::try_from(v)
                            .ok()
                            .and_then(|v| self.pool.alias(file, obj_type, v)),
                        _ => None,
                    };
                    // A thread or child never acts on the main sequence's
                    // objects through an alias: a number above any handle.
                    if alias.is_some_and(|i| !self.pool.handles[i].owned) {
                        attrs[t].ua.data = 0x10_0000;
                        alias = None;
                    }
                    if let Role::Destroy(_) = attrs[t].role {
                        attrs[t].role = Role::Destroy(alias);
                        attrs[t].parent = None;
                    } else {
                        attrs[t].parent = alias;
                    }
                    udata_touched = attrs[t].spec.is_some_and(|s| s.is_udata);
                    let aliased = if alias.is_some() { " aliased" } else { "" };
                    mdesc = format!("value {v:#x} on {}{aliased}", attrs[t].tag);
                }
                _ => mdesc = "valid".into(),
            }
        }
        let get_context = o.id == obj::DEVICE && m.id == method::GET_CONTEXT;
        let Some(slot) = slot.filter(|_| !(get_context && self.no_ioctl_get_context)) else {
            self.scratch = scratch;
            return;
        };

        let n = attrs.len();
        hdr.num_attrs = nattrs.unwrap_or(n as u16);
        hdr.length = hdr_len.unwrap_or((IoctlHdr::SIZE + n * UAttr::SIZE) as u16);
        let mut buf = vec![0u8; 4096 + 64];
        buf[..IoctlHdr::SIZE].copy_from_slice(&hdr.to_bytes());
        for (k, b) in attrs.iter().enumerate() {
            let off = IoctlHdr::SIZE + k * UAttr::SIZE;
            if off + UAttr::SIZE <= buf.len() {
                buf[off..off + UAttr::SIZE].copy_from_slice(&b.ua.to_bytes());
            }
        }
        let tags: Vec<&str> = attrs.iter().map(|b| b.tag.as_str()).collect();
        let desc = format!(
            "ioctl {name} [{}] {mdesc}{}",
            tags.join(","),
            Self::ctx_tag(&slot)
        );
        self.announce(&desc);
        let e = crate::sys::ioctl_buf(slot.fd, cmd, &mut buf);
        self.scratch = scratch;

        if e == 0 {
            if get_context && hdr.object_id == o.id && hdr.method_id == m.id {
                self.set_ctx(slot.file, true);
            }
            let parents: Vec<usize> = attrs.iter().filter_map(|b| b.parent).collect();
            for (k, b) in attrs.iter().enumerate() {
                let off = IoctlHdr::SIZE + k * UAttr::SIZE + UAttr::DATA_OFFSET;
                let v = u64::from_ne_bytes(buf[off..off + 8].try_into().unwrap_or([0; 8]));
                match b.role {
                    Role::New(t) if v != u64::MAX && (!crate::state::is_fd_object(t) || v > 2) => {
                        self.add_handle(slot.file, t, v as u32, &parents)
                    }
                    Role::Destroy(Some(i)) => self.pool.kill(i),
                    _ => {}
                }
            }
        }
        for b in &attrs {
            if let Some(s) = b.spec {
                self.stats.attr(format!("{name}/{:#x}", s.id), e == 0);
            }
        }
        // Driver data (UHW attributes, the udata of GET_CONTEXT and the
        // creates) is the driver's to judge: a call whose mutation touched
        // it is not compared; INFO_HANDLES counts objects of any kind.
        // GET_CONTEXT by ioctl is not sent to upstream (-u), so not compared.
        let compare = crate::write::comparable(&desc, udata_touched) && !get_context;
        self.record(Call {
            key: &format!("ioctl {name}"),
            desc,
            errno: e,
            compare,
        });
        // A failed GET_CONTEXT, an INVOKE_WRITE (its command may be
        // GET_CONTEXT) or a changed object/method may have made a context.
        if (get_context && e != 0) || o.id == obj::DEVICE || (mutate && matches!(mkind, 12 | 13)) {
            self.probe_ctx();
        }
    }
}
