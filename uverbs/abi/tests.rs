// SPDX-License-Identifier: GPL-2.0

//! Host tests of the whole pure ABI: one test per errno rule of the ioctl
//! and write() paths, the merged spec tree, and a bounded deterministic
//! fuzz test. (Header-only rules are tested in `ioctl.rs`, key encoding in
//! `spec.rs`.)

use std::vec::Vec;

use super::ids::{self, attr, cmd, method, obj};
use super::ioctl::{IoctlHdr, UAttr, RDMA_VERBS_IOCTL, UVERBS_ATTR_F_MANDATORY};
use super::parse::{self, finish_method, AttrEnv, AttrValue, UdataIn};
use super::spec::{
    Access, AttrKind, AttrSpec, CoreHandler, DriverOp, DriverOps, Handler, MethodSpec, ObjectSpec,
    PtrSpec, TypeClass, UA_MANDATORY, UA_OPTIONAL,
};
use super::std_types::{CORE_API, DEFAULT_UVERBS_CMD_MASK};
use super::uapi::{DeviceDesc, UapiTree, WriteMethod, MAX_METHODS};
use super::write::{invoke_write_method, plan_write, uverbs_request, CmdHdr, ExCmdHdr, Response};
use super::Errno;

const MLX5: u32 = 1;

// A driver table shaped like mlx5's: attributes added to a core method, a
// driver object with its own methods, an ENUM_IN and an IDRS_ARRAY.
const DRV_OBJ: u16 = ids::UVERBS_ID_DRIVER_NS;
const DRV_METHOD: u16 = ids::UVERBS_ID_DRIVER_NS;
const DRV_ATTR_UAR: u16 = ids::UVERBS_ID_DRIVER_NS_WITH_UHW;
const DRV_ATTR_ENUM: u16 = 0;
const DRV_ATTR_ARR: u16 = 1;
const DRV_ATTR_OUT: u16 = 2;
const ENUM_ELEMS: &[AttrKind] = &[
    AttrKind::PtrIn(PtrSpec::ty(4)),
    AttrKind::PtrIn(PtrSpec::structure(4, 8)),
    AttrKind::PtrOut(PtrSpec::ty(4)),
];
const DRV_CQ_EXT: &[AttrSpec] = &[AttrSpec::ptr_in(DRV_ATTR_UAR, PtrSpec::ty(4), UA_OPTIONAL)];
const DRV_METHOD_ATTRS: &[AttrSpec] = &[
    AttrSpec::enum_in(DRV_ATTR_ENUM, ENUM_ELEMS, UA_OPTIONAL),
    AttrSpec::idrs_arr(DRV_ATTR_ARR, obj::CQ, Access::Read, 1, 4, UA_OPTIONAL),
    AttrSpec::ptr_out(DRV_ATTR_OUT, PtrSpec::ty(8), UA_OPTIONAL),
    AttrSpec::uhw_in(),
    AttrSpec::uhw_out(),
];
const DRIVER: &[ObjectSpec] = &[
    ObjectSpec {
        id: obj::CQ,
        type_class: None,
        methods: &[MethodSpec {
            id: method::CQ_CREATE,
            attrs: DRV_CQ_EXT,
            handler: None,
            needs: &[],
        }],
        writes: &[],
        needs: &[],
    },
    ObjectSpec {
        id: DRV_OBJ,
        type_class: Some(TypeClass::Idr),
        methods: &[MethodSpec {
            id: DRV_METHOD,
            attrs: DRV_METHOD_ATTRS,
            handler: Some(Handler::Driver(7)),
            needs: &[],
        }],
        writes: &[],
        needs: &[],
    },
];

fn dev(ops: DriverOps) -> DeviceDesc {
    DeviceDesc {
        driver_id: MLX5,
        ops,
        uverbs_cmd_mask: DEFAULT_UVERBS_CMD_MASK,
    }
}

fn tree() -> UapiTree {
    UapiTree::build(CORE_API, &[DRIVER], &dev(DriverOps::ALL)).expect("tree")
}

/// A user-memory model: `mem` mapped at `BASE`; everything else faults.
#[derive(Default)]
struct Env {
    mem: Vec<u8>,
    uobj_err: Option<Errno>,
    copy_err: Option<Errno>,
    copies: Vec<(usize, u64, usize)>,
    uobjs: Vec<(usize, u16, Access, i64)>,
}

const BASE: u64 = 0x7f00_0000_0000;

impl AttrEnv for Env {
    fn user_buffer_cleared(&mut self, addr: u64, len: usize) -> bool {
        let Some(off) = addr.checked_sub(BASE) else {
            return false;
        };
        let Ok(off) = usize::try_from(off) else {
            return false;
        };
        match self.mem.get(off..off.saturating_add(len)) {
            Some(b) => b.iter().all(|x| *x == 0),
            None => false,
        }
    }
    fn alloc_and_copy(&mut self, idx: usize, addr: u64, len: usize) -> Result<(), Errno> {
        self.copies.push((idx, addr, len));
        self.copy_err.map_or(Ok(()), Err)
    }
    fn get_uobject(
        &mut self,
        idx: usize,
        _uattr_idx: usize,
        obj_type: u16,
        access: Access,
        id: i64,
    ) -> Result<(), Errno> {
        self.uobjs.push((idx, obj_type, access, id));
        self.uobj_err.map_or(Ok(()), Err)
    }
    fn get_uobjects_array(
        &mut self,
        _idx: usize,
        _obj_type: u16,
        _access: Access,
        _data: u64,
        _len: u16,
    ) -> Result<(), Errno> {
        self.uobj_err.map_or(Ok(()), Err)
    }
}

fn ua(attr_id: u16, len: u16, data: u64) -> UAttr {
    UAttr {
        attr_id,
        len,
        data,
        ..UAttr::default()
    }
}

fn req(object_id: u16, method_id: u16, attrs: &[UAttr]) -> Vec<u8> {
    let h = IoctlHdr {
        length: (IoctlHdr::SIZE + attrs.len() * UAttr::SIZE) as u16,
        object_id,
        method_id,
        num_attrs: attrs.len() as u16,
        driver_id: MLX5,
        ..IoctlHdr::default()
    };
    let mut v = h.to_bytes().to_vec();
    for a in attrs {
        v.extend_from_slice(&a.to_bytes());
    }
    v
}

fn run(t: &UapiTree, buf: &[u8], env: &mut Env) -> Result<(), Errno> {
    parse::parse_ioctl(t, RDMA_VERBS_IOCTL, buf, env).map(|_| ())
}

/// A valid QUERY_PORT: CONST_IN port (inline u64) + RESP (pointer, 48).
fn query_port(extra: &[UAttr]) -> Vec<u8> {
    let mut a = std::vec![
        ua(attr::QUERY_PORT_PORT_NUM, 8, 1),
        ua(attr::QUERY_PORT_RESP, 48, BASE),
    ];
    a.extend_from_slice(extra);
    req(obj::DEVICE, method::QUERY_PORT, &a)
}

/// A valid CQ_CREATE (all mandatory attributes).
fn cq_create(extra: &[UAttr]) -> Vec<u8> {
    let mut a = std::vec![
        ua(attr::CREATE_CQ_HANDLE, 0, 0),
        ua(attr::CREATE_CQ_CQE, 4, 16),
        ua(attr::CREATE_CQ_USER_HANDLE, 8, 0xdead),
        ua(attr::CREATE_CQ_COMP_VECTOR, 4, 0),
        ua(attr::CREATE_CQ_RESP_CQE, 4, BASE),
    ];
    a.extend_from_slice(extra);
    req(obj::CQ, method::CQ_CREATE, &a)
}

fn drv(extra: &[UAttr]) -> Vec<u8> {
    req(DRV_OBJ, DRV_METHOD, extra)
}

// ---- the ioctl path, one test per errno rule ----

#[test]
fn valid_requests_parse() {
    let t = tree();
    let mut env = Env::default();
    assert_eq!(run(&t, &query_port(&[]), &mut env), Ok(()));
    assert_eq!(run(&t, &cq_create(&[]), &mut env), Ok(()));
    assert_eq!(env.uobjs, [(0, obj::CQ, Access::New, 0)]);
}

#[test]
fn driver_id_mismatch_is_einval() {
    let t = tree();
    let mut b = query_port(&[]);
    b[16] = 2; // driver_id = 2
    assert_eq!(run(&t, &b, &mut Env::default()), Err(Errno::EINVAL));
}

#[test]
fn unknown_object_or_method_is_eprotonosupport() {
    let t = tree();
    let mut env = Env::default();
    // XRCD has one method (XRCD_DESTROY, 0); method 1 is unknown.
    assert_eq!(
        run(&t, &req(obj::XRCD, 1, &[]), &mut env),
        Err(Errno::EPROTONOSUPPORT)
    );
    // Outside the key space.
    assert_eq!(
        run(&t, &req(0x0800, 0, &[]), &mut env),
        Err(Errno::EPROTONOSUPPORT)
    );
    assert_eq!(
        run(&t, &req(obj::DEVICE, 20, &[]), &mut env),
        Err(Errno::EPROTONOSUPPORT)
    );
    assert_eq!(
        run(
            &t,
            &req(obj::DEVICE, method::QUERY_PORT_SPEED, &[]),
            &mut env
        ),
        Err(Errno::EPROTONOSUPPORT)
    );
}

#[test]
fn disassociated_driver_method_is_eio() {
    let mut t = tree();
    let mut env = Env::default();
    assert_eq!(run(&t, &drv(&[]), &mut env), Ok(()));
    t.disassociate();
    assert_eq!(run(&t, &drv(&[]), &mut env), Err(Errno::EIO));
    // Core methods keep their handler (they check the device themselves).
    assert_eq!(run(&t, &query_port(&[]), &mut env), Ok(()));
    // EIO comes after the lookup: an unknown method is still EPROTONOSUPPORT.
    assert_eq!(
        run(&t, &req(DRV_OBJ, 0x1001, &[]), &mut env),
        Err(Errno::EPROTONOSUPPORT)
    );
}

#[test]
fn unknown_attribute_mandatory_flag_decides() {
    let t = tree();
    let mut env = Env::default();
    let mut unknown = ua(9, 4, 0);
    assert_eq!(run(&t, &query_port(&[unknown]), &mut env), Ok(()));
    unknown.flags = UVERBS_ATTR_F_MANDATORY;
    assert_eq!(
        run(&t, &query_port(&[unknown]), &mut env),
        Err(Errno::EPROTONOSUPPORT)
    );
    // Unknown driver-namespace id, and ids outside the key space.
    for id in [0x1005, 0x2000, 0xffff] {
        let mut a = ua(id, 0, 0);
        assert_eq!(run(&t, &query_port(&[a]), &mut env), Ok(()));
        a.flags = UVERBS_ATTR_F_MANDATORY | 0x8000;
        assert_eq!(
            run(&t, &query_port(&[a]), &mut env),
            Err(Errno::EPROTONOSUPPORT)
        );
    }
}

#[test]
fn duplicate_attribute_is_einval() {
    let t = tree();
    let b = query_port(&[ua(attr::QUERY_PORT_PORT_NUM, 8, 2)]);
    assert_eq!(run(&t, &b, &mut Env::default()), Err(Errno::EINVAL));
}

#[test]
fn missing_mandatory_is_einval() {
    let t = tree();
    let b = req(
        obj::DEVICE,
        method::QUERY_PORT,
        &[ua(attr::QUERY_PORT_PORT_NUM, 8, 1)],
    );
    assert_eq!(run(&t, &b, &mut Env::default()), Err(Errno::EINVAL));
    // Optional attributes are not required.
    assert_eq!(
        run(
            &t,
            &req(obj::DEVICE, method::QUERY_CONTEXT, &[]),
            &mut Env::default()
        ),
        Ok(())
    );
}

#[test]
fn ptr_len_below_min_is_einval() {
    let t = tree();
    // RESP min_len is 48.
    let b = req(
        obj::DEVICE,
        method::QUERY_PORT,
        &[
            ua(attr::QUERY_PORT_PORT_NUM, 8, 1),
            ua(attr::QUERY_PORT_RESP, 40, BASE),
        ],
    );
    assert_eq!(run(&t, &b, &mut Env::default()), Err(Errno::EINVAL));
    // CONST_IN is exactly 8 bytes.
    let b = req(
        obj::DEVICE,
        method::QUERY_PORT,
        &[
            ua(attr::QUERY_PORT_PORT_NUM, 4, 1),
            ua(attr::QUERY_PORT_RESP, 48, BASE),
        ],
    );
    assert_eq!(run(&t, &b, &mut Env::default()), Err(Errno::EINVAL));
}

#[test]
fn ptr_len_above_len_is_einval_unless_zero_trailing() {
    let t = tree();
    // CQE is UVERBS_ATTR_TYPE(u32): 5 bytes is too long.
    let mut b = cq_create(&[]);
    b[24 + 16 + 2] = 5;
    assert_eq!(run(&t, &b, &mut Env::default()), Err(Errno::EINVAL));
    // QUERY_PORT_RESP is a zero-trailing PTR_OUT: longer is fine, and
    // trailing bytes of an output are not checked.
    let b = query_port(&[]);
    let mut b2 = b.clone();
    b2[24 + 16 + 2] = 200;
    let mut env = Env::default();
    assert_eq!(run(&t, &b2, &mut env), Ok(()));
}

#[test]
fn zero_trailing_nonzero_inline_is_eopnotsupp() {
    // A zero-trailing PTR_IN whose data is inline: STRUCT(2, 4), 6 bytes.
    const SHORT: &[AttrSpec] = &[AttrSpec::ptr_in(0, PtrSpec::structure(2, 4), UA_OPTIONAL)];
    const TBL: &[ObjectSpec] = &[ObjectSpec {
        id: DRV_OBJ,
        type_class: None,
        methods: &[MethodSpec {
            id: DRV_METHOD,
            attrs: SHORT,
            handler: Some(Handler::Driver(1)),
            needs: &[],
        }],
        writes: &[],
        needs: &[],
    }];
    let t2 = UapiTree::build(CORE_API, &[TBL], &dev(DriverOps::ALL)).expect("tree");
    let ok = ua(0, 6, u64::from_ne_bytes([1, 2, 3, 4, 0, 0, 0, 0]));
    assert_eq!(run(&t2, &drv(&[ok]), &mut Env::default()), Ok(()));
    let bad = ua(0, 6, u64::from_ne_bytes([1, 2, 3, 4, 0, 9, 0, 0]));
    assert_eq!(
        run(&t2, &drv(&[bad]), &mut Env::default()),
        Err(Errno::EOPNOTSUPP)
    );
    // Bytes past `len` (6..8) are not looked at.
    let junk = ua(0, 6, u64::from_ne_bytes([1, 2, 3, 4, 0, 0, 7, 7]));
    assert_eq!(run(&t2, &drv(&[junk]), &mut Env::default()), Ok(()));
}

#[test]
fn zero_trailing_nonzero_user_bytes_is_eopnotsupp() {
    let t = tree();
    // QP CAP is STRUCT(ib_uverbs_qp_cap, max_inline_data): 20 known bytes.
    let cap = |len: u16| ua(attr::CREATE_QP_CAP, len, BASE);
    let qp = |c: UAttr| {
        req(
            obj::QP,
            method::QP_CREATE,
            &[
                ua(attr::CREATE_QP_HANDLE, 0, 0),
                ua(attr::CREATE_QP_USER_HANDLE, 8, 1),
                c,
                ua(attr::CREATE_QP_TYPE, 8, 2),
                ua(attr::CREATE_QP_RESP_CAP, 20, BASE),
                ua(attr::CREATE_QP_RESP_QP_NUM, 4, BASE),
            ],
        )
    };
    let mut env = Env {
        mem: std::vec![0; 64],
        ..Env::default()
    };
    assert_eq!(run(&t, &qp(cap(32)), &mut env), Ok(()));
    env.mem[25] = 1;
    assert_eq!(run(&t, &qp(cap(32)), &mut env), Err(Errno::EOPNOTSUPP));
    // The non-zero byte is within the known 20: fine.
    env.mem[25] = 0;
    env.mem[19] = 1;
    assert_eq!(run(&t, &qp(cap(32)), &mut env), Ok(()));
    // Unreadable trailing bytes count as non-zero (ib_is_buffer_cleared).
    assert_eq!(run(&t, &qp(cap(100)), &mut env), Err(Errno::EOPNOTSUPP));
    // Below min_len.
    assert_eq!(run(&t, &qp(cap(16)), &mut env), Err(Errno::EINVAL));
}

#[test]
fn zero_trailing_check_precedes_reserved_check() {
    let t = tree();
    let mut env = Env {
        mem: std::vec![1; 64],
        ..Env::default()
    };
    let mut c = ua(attr::CREATE_QP_CAP, 32, BASE);
    c.elem_reserved = 1;
    let b = req(obj::QP, method::QP_CREATE, &[c]);
    assert_eq!(run(&t, &b, &mut env), Err(Errno::EOPNOTSUPP));
    env.mem.fill(0);
    assert_eq!(run(&t, &b, &mut env), Err(Errno::EINVAL));
}

#[test]
fn reserved_attr_data_is_einval() {
    let t = tree();
    let mut env = Env::default();
    let mut p = ua(attr::QUERY_PORT_PORT_NUM, 8, 1);
    p.elem_id = 1; // attr_data.reserved != 0
    let b = req(
        obj::DEVICE,
        method::QUERY_PORT,
        &[p, ua(attr::QUERY_PORT_RESP, 48, BASE)],
    );
    assert_eq!(run(&t, &b, &mut env), Err(Errno::EINVAL));
    let mut h = ua(attr::CREATE_CQ_HANDLE, 0, 0);
    h.elem_reserved = 1;
    assert_eq!(
        run(&t, &req(obj::CQ, method::CQ_CREATE, &[h]), &mut env),
        Err(Errno::EINVAL)
    );
    assert!(env.uobjs.is_empty());
}

#[test]
fn idr_and_fd_with_len_is_einval() {
    let t = tree();
    let mut env = Env::default();
    let b = req(
        obj::PD,
        method::PD_DESTROY,
        &[ua(attr::DESTROY_PD_HANDLE, 4, 3)],
    );
    assert_eq!(run(&t, &b, &mut env), Err(Errno::EINVAL));
    let b = req(
        obj::ASYNC_EVENT,
        method::ASYNC_EVENT_ALLOC,
        &[ua(attr::ASYNC_EVENT_ALLOC_FD_HANDLE, 8, 0)],
    );
    assert_eq!(run(&t, &b, &mut env), Err(Errno::EINVAL));
    let b = req(
        obj::PD,
        method::PD_DESTROY,
        &[ua(attr::DESTROY_PD_HANDLE, 0, 3)],
    );
    assert_eq!(run(&t, &b, &mut env), Ok(()));
    assert_eq!(env.uobjs, [(0, obj::PD, Access::Destroy, 3)]);
}

#[test]
fn raw_fd_out_of_int_range_is_einval() {
    let t = tree();
    let fd = |v: i64| cq_create(&[ua(attr::CREATE_CQ_BUFFER_FD, 0, v as u64)]);
    let mut env = Env::default();
    assert_eq!(run(&t, &fd(-1), &mut env), Ok(()));
    assert_eq!(run(&t, &fd(i64::from(i32::MIN)), &mut env), Ok(()));
    assert_eq!(
        run(&t, &fd(i64::from(i32::MAX) + 1), &mut env),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        run(&t, &fd(i64::from(i32::MIN) - 1), &mut env),
        Err(Errno::EINVAL)
    );
    let with_len = cq_create(&[ua(attr::CREATE_CQ_BUFFER_FD, 4, 3)]);
    assert_eq!(run(&t, &with_len, &mut env), Err(Errno::EINVAL));
    let p = parse::parse_ioctl(&t, RDMA_VERBS_IOCTL, &fd(-5), &mut env).expect("parse");
    assert_eq!(p.get(attr::CREATE_CQ_BUFFER_FD), Ok(AttrValue::RawFd(-5)));
}

#[test]
fn enum_in_rules() {
    let t = tree();
    let mut env = Env::default();
    let e = |elem: u8, res: u8, len: u16| {
        let mut a = ua(DRV_ATTR_ENUM, len, 7);
        a.elem_id = elem;
        a.elem_reserved = res;
        drv(&[a])
    };
    assert_eq!(run(&t, &e(0, 0, 4), &mut env), Ok(()));
    // Out of range.
    assert_eq!(run(&t, &e(3, 0, 4), &mut env), Err(Errno::EOPNOTSUPP));
    assert_eq!(run(&t, &e(255, 1, 4), &mut env), Err(Errno::EOPNOTSUPP));
    // Reserved byte.
    assert_eq!(run(&t, &e(0, 1, 4), &mut env), Err(Errno::EINVAL));
    // A PTR_OUT element.
    assert_eq!(run(&t, &e(2, 0, 4), &mut env), Err(Errno::EOPNOTSUPP));
    // The element's size rules apply.
    assert_eq!(run(&t, &e(0, 0, 8), &mut env), Err(Errno::EINVAL));
    let b = parse::parse_ioctl(&t, RDMA_VERBS_IOCTL, &e(1, 0, 4), &mut env).expect("parse");
    assert_eq!(b.enum_id(DRV_ATTR_ENUM), Ok(1));
}

#[test]
fn idrs_array_rules() {
    let t = tree();
    let mut env = Env::default();
    let arr = |len: u16| drv(&[ua(DRV_ATTR_ARR, len, BASE)]);
    assert_eq!(run(&t, &arr(4), &mut env), Ok(()));
    assert_eq!(run(&t, &arr(16), &mut env), Ok(()));
    assert_eq!(run(&t, &arr(6), &mut env), Err(Errno::EINVAL));
    assert_eq!(run(&t, &arr(0), &mut env), Err(Errno::EINVAL));
    assert_eq!(run(&t, &arr(20), &mut env), Err(Errno::EINVAL));
    let mut a = ua(DRV_ATTR_ARR, 4, 1);
    a.elem_id = 1;
    assert_eq!(run(&t, &drv(&[a]), &mut env), Err(Errno::EINVAL));
    env.uobj_err = Some(Errno::ENOENT);
    assert_eq!(run(&t, &arr(4), &mut env), Err(Errno::ENOENT));
}

#[test]
fn env_errors_propagate_in_order() {
    let t = tree();
    let mut env = Env {
        uobj_err: Some(Errno::EFAULT),
        ..Env::default()
    };
    // The handle's lookup fails before the later duplicate is seen.
    let b = cq_create(&[ua(attr::CREATE_CQ_CQE, 4, 1)]);
    assert_eq!(run(&t, &b, &mut env), Err(Errno::EFAULT));
    env.uobj_err = None;
    assert_eq!(run(&t, &b, &mut env), Err(Errno::EINVAL));
}

#[test]
fn alloc_and_copy_only_for_pointers() {
    let t = tree();
    let mut env = Env::default();
    let fd_arr = |len: u16| {
        req(
            obj::DEVICE,
            method::GET_CONTEXT,
            &[ua(attr::GET_CONTEXT_FD_ARR, len, BASE)],
        )
    };
    assert_eq!(run(&t, &fd_arr(8), &mut env), Ok(()));
    assert!(env.copies.is_empty());
    assert_eq!(run(&t, &fd_arr(12), &mut env), Ok(()));
    assert_eq!(env.copies, [(2, BASE, 12)]);
    env.copy_err = Some(Errno::EFAULT);
    assert_eq!(run(&t, &fd_arr(12), &mut env), Err(Errno::EFAULT));
    env.copy_err = Some(Errno::ENOMEM);
    assert_eq!(run(&t, &fd_arr(12), &mut env), Err(Errno::ENOMEM));
}

#[test]
fn const_and_flags_accessors() {
    let t = tree();
    let mut env = Env::default();
    let b = req(
        obj::DEVICE,
        method::QUERY_GID_ENTRY,
        &[
            ua(attr::QUERY_GID_ENTRY_PORT, 8, 300),
            ua(attr::QUERY_GID_ENTRY_GID_INDEX, 8, 0),
            ua(attr::QUERY_GID_ENTRY_FLAGS, 4, 0xffff_ffff_0000_0000),
            ua(attr::QUERY_GID_ENTRY_RESP_ENTRY, 32, BASE),
        ],
    );
    let bundle = parse::parse_ioctl(&t, RDMA_VERBS_IOCTL, &b, &mut env).expect("parse");
    // u8 port: 300 is out of range; u32 is fine.
    assert_eq!(
        bundle.get_const_unsigned(attr::QUERY_GID_ENTRY_PORT, u8::MAX.into(), None),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        bundle.get_const_unsigned(attr::QUERY_GID_ENTRY_PORT, u32::MAX.into(), None),
        Ok(300)
    );
    assert_eq!(
        bundle.get_const_signed(attr::QUERY_GID_ENTRY_PORT, -128, 127, None),
        Err(Errno::EINVAL)
    );
    // A 4-byte flags word reads the first 4 bytes of `data` only.
    assert_eq!(bundle.get_flags64(attr::QUERY_GID_ENTRY_FLAGS, 0), Ok(0));
    // Absent flags are 0; absent const with/without default.
    let b = req(
        obj::DEVICE,
        method::QUERY_GID_TABLE,
        &[
            ua(attr::QUERY_GID_TABLE_ENTRY_SIZE, 8, 32),
            ua(attr::QUERY_GID_TABLE_RESP_ENTRIES, 64, BASE),
            ua(attr::QUERY_GID_TABLE_RESP_NUM_ENTRIES, 8, BASE),
        ],
    );
    let bundle = parse::parse_ioctl(&t, RDMA_VERBS_IOCTL, &b, &mut env).expect("parse");
    assert_eq!(bundle.get_flags32(attr::QUERY_GID_TABLE_FLAGS, 0), Ok(0));
    assert_eq!(
        bundle.ptr_array_size(attr::QUERY_GID_TABLE_RESP_ENTRIES, 32),
        Ok(2)
    );
    assert_eq!(
        bundle.ptr_array_size(attr::QUERY_GID_TABLE_RESP_ENTRIES, 48),
        Err(Errno::EINVAL)
    );
    assert_eq!(bundle.get(attr::QUERY_GID_TABLE_FLAGS), Err(Errno::ENOENT));
}

#[test]
fn flags_in_unknown_bits_is_einval() {
    let t = tree();
    let mut env = Env::default();
    let mut flags = |len: u16, v: u64| {
        let b = cq_create(&[ua(attr::CREATE_CQ_FLAGS, len, v)]);
        let r = parse::parse_ioctl(&t, RDMA_VERBS_IOCTL, &b, &mut env)
            .and_then(|bd| bd.get_flags64(attr::CREATE_CQ_FLAGS, 0b11));
        r
    };
    assert_eq!(flags(8, 0b01), Ok(1));
    assert_eq!(flags(8, 0b100), Err(Errno::EINVAL));
    assert_eq!(flags(4, 0b10), Ok(2));
    assert_eq!(flags(4, 0x4_0000_0000), Ok(0));
    // FLAGS_IN accepts 4..=8 bytes at parse time; 6 fails in the accessor.
    assert_eq!(flags(6, 1), Err(Errno::EINVAL));
    assert_eq!(flags(2, 1), Err(Errno::EINVAL));
    let b = cq_create(&[ua(attr::CREATE_CQ_FLAGS, 8, 1 << 40)]);
    let bd = parse::parse_ioctl(&t, RDMA_VERBS_IOCTL, &b, &mut env).expect("parse");
    assert_eq!(
        bd.get_flags32(attr::CREATE_CQ_FLAGS, u64::MAX),
        Err(Errno::EINVAL)
    );
}

#[test]
fn handler_eprotonosupport_becomes_einval_and_uhw_out_gets_valid_output() {
    let t = tree();
    let mut env = Env::default();
    let mut out = ua(ids::UVERBS_ATTR_UHW_OUT, 16, BASE);
    out.flags = UVERBS_ATTR_F_MANDATORY;
    let b = cq_create(&[out, ua(ids::UVERBS_ATTR_UHW_IN, 4, 0xabcd)]);
    let bundle = parse::parse_ioctl(&t, RDMA_VERBS_IOCTL, &b, &mut env).expect("parse");
    assert_eq!(
        finish_method(&bundle, Err(Errno::EPROTONOSUPPORT)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        finish_method(&bundle, Err(Errno::ENOMEM)),
        Err(Errno::ENOMEM)
    );
    let wb = finish_method(&bundle, Ok(()))
        .expect("ok")
        .expect("uhw out");
    assert_eq!((wb.uattr_idx, wb.flags), (5, 3));
    // udata: inline input, pointer output.
    let u = bundle.udata(ids::UVERBS_ATTR_UHW_IN, ids::UVERBS_ATTR_UHW_OUT);
    assert_eq!(u.inbuf, UdataIn::Inline { uattr_idx: 6 });
    assert_eq!((u.inlen, u.outbuf, u.outlen), (4, BASE, 16));
    // Without UHW_OUT there is nothing to flag.
    let bundle = parse::parse_ioctl(&t, RDMA_VERBS_IOCTL, &cq_create(&[]), &mut env).expect("p");
    assert_eq!(finish_method(&bundle, Ok(())), Ok(None));
    assert_eq!(
        bundle.set_output(attr::CREATE_CQ_RESP_CQE).map(|w| w.flags),
        Ok(2)
    );
    assert_eq!(bundle.copy_to_len(attr::CREATE_CQ_RESP_CQE, 8), Ok(4));
}

#[test]
fn short_buffers_are_efault() {
    let t = tree();
    let b = query_port(&[]);
    assert_eq!(run(&t, &b[..20], &mut Env::default()), Err(Errno::EFAULT));
    assert_eq!(
        run(&t, &b[..b.len() - 1], &mut Env::default()),
        Err(Errno::EFAULT)
    );
}

// ---- the merged tree ----

#[test]
fn merged_tree_shape() {
    let t = tree();
    let m = t.method(obj::CQ, method::CQ_CREATE).expect("cq create");
    // Core attributes first, then the driver's extension.
    assert_eq!(m.num_attrs(), 16);
    assert_eq!(m.attr_index(DRV_ATTR_UAR), Some(15));
    assert_eq!(m.attr_index(ids::UVERBS_ATTR_UHW_OUT), Some(14));
    assert!(m.has_udata);
    assert!(!m.driver_method);
    assert_eq!(m.handler, Handler::Core(CoreHandler::CqCreate));
    // HANDLE, CQE, USER_HANDLE, COMP_VECTOR, RESP_CQE.
    assert_eq!(m.mandatory, 0b101_0111);
    let d = t.method(obj::CQ, method::CQ_DESTROY).expect("cq destroy");
    assert_eq!(d.destroy_idx, Some(0));
    let dm = t.method(DRV_OBJ, DRV_METHOD).expect("driver method");
    assert!(dm.driver_method);
    assert_eq!(dm.handler, Handler::Driver(7));
    let pd = t.method(obj::PD, method::PD_DESTROY).expect("pd destroy");
    assert!(!pd.driver_method);
    assert!(t.object(DRV_OBJ).is_some());
    assert_eq!(
        t.object(obj::COMP_CHANNEL).and_then(|o| o.type_class),
        Some(TypeClass::Fd)
    );
    // Keys are sorted and unique.
    let keys: Vec<u32> = t.methods().map(|m| m.key).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(keys.len(), 24);
}

#[test]
fn missing_driver_op_hides_objects_and_dependent_methods() {
    let t = UapiTree::build(
        CORE_API,
        &[DRIVER],
        &dev(DriverOps::ALL.without(DriverOp::DeallocPd)),
    )
    .expect("tree");
    assert!(t.object(obj::PD).is_none());
    assert!(t.object(obj::COMP_CHANNEL).is_none());
    assert_eq!(
        t.method(obj::PD, method::PD_DESTROY).err(),
        Some(Errno::EPROTONOSUPPORT)
    );
    // REG_MR has a mandatory PD handle: not callable without PDs.
    assert_eq!(
        t.method(obj::MR, method::REG_MR).err(),
        Some(Errno::EPROTONOSUPPORT)
    );
    // QUERY_MR only needs MR; CQ_CREATE's COMP_CHANNEL is optional.
    assert!(t.method(obj::MR, method::QUERY_MR).is_ok());
    assert!(t.method(obj::CQ, method::CQ_CREATE).is_ok());
    // The write command goes with its method-level need.
    assert_eq!(t.write_method(cmd::DEALLOC_PD), Ok(WriteMethod::NotSupp));

    // Without alloc_ucontext the whole DEVICE object goes, writes included.
    let t = UapiTree::build(
        CORE_API,
        &[],
        &dev(DriverOps::ALL.without(DriverOp::AllocUcontext)),
    )
    .expect("tree");
    assert!(t.method(obj::DEVICE, method::QUERY_PORT).is_err());
    assert_eq!(t.write_method(cmd::GET_CONTEXT), Ok(WriteMethod::NotSupp));
    assert_eq!(
        t.write_method(cmd::FLAG_EXTENDED | cmd::EX_QUERY_DEVICE),
        Ok(WriteMethod::NotSupp)
    );
}

// upstream uverbs_cmd.c: UVERBS_OBJECT_XRCD with UAPI_DEF_OBJ_NEEDS_FN(alloc_xrcd) and
// (dealloc_xrcd); CREATE_XSRQ in the SRQ object (needs create_srq).
#[test]
fn xrc_writes_need_the_xrcd_ops() {
    let t = tree();
    for c in [
        cmd::OPEN_XRCD,
        cmd::CLOSE_XRCD,
        cmd::OPEN_QP,
        cmd::CREATE_XSRQ,
    ] {
        assert!(
            matches!(t.write_method(c), Ok(WriteMethod::Cmd(s)) if s.cmd == c),
            "{c}"
        );
    }
    assert!(t.object(obj::XRCD).is_some());
    let t = UapiTree::build(
        CORE_API,
        &[DRIVER],
        &dev(DriverOps::ALL.without(DriverOp::AllocXrcd)),
    )
    .expect("tree");
    assert!(t.object(obj::XRCD).is_none());
    for c in [cmd::OPEN_XRCD, cmd::CLOSE_XRCD] {
        assert_eq!(t.write_method(c), Ok(WriteMethod::NotSupp), "{c}");
    }
    // OPEN_QP was the highest write command: past the highest left (CREATE_XSRQ).
    assert_eq!(t.write_method(cmd::OPEN_QP).err(), Some(Errno::EOPNOTSUPP));
    // An XRC SRQ needs an XRCD, but CREATE_XSRQ also makes basic SRQs: it stays.
    assert!(matches!(
        t.write_method(cmd::CREATE_XSRQ),
        Ok(WriteMethod::Cmd(_))
    ));
}

#[test]
fn method_needs_hide_method() {
    const NEEDY: &[ObjectSpec] = &[ObjectSpec {
        id: DRV_OBJ,
        type_class: None,
        methods: &[MethodSpec {
            id: DRV_METHOD,
            attrs: &[],
            handler: Some(Handler::Driver(1)),
            needs: &[DriverOp::ModifyWq],
        }],
        writes: &[],
        needs: &[],
    }];
    let ops = DriverOps::ALL.without(DriverOp::ModifyWq);
    let t = UapiTree::build(CORE_API, &[NEEDY], &dev(ops)).expect("tree");
    assert_eq!(
        t.method(DRV_OBJ, DRV_METHOD).err(),
        Some(Errno::EPROTONOSUPPORT)
    );
    let t = UapiTree::build(CORE_API, &[NEEDY], &dev(DriverOps::ALL)).expect("tree");
    assert!(t.method(DRV_OBJ, DRV_METHOD).is_ok());
}

fn build_one(attrs: &'static [AttrSpec], handler: Option<Handler>, obj_id: u16, mid: u16) -> Errno {
    // Leak a one-object table: tests only.
    let methods: &'static [MethodSpec] =
        std::boxed::Box::leak(std::boxed::Box::new([MethodSpec {
            id: mid,
            attrs,
            handler,
            needs: &[],
        }]));
    let objs: &'static [ObjectSpec] = std::boxed::Box::leak(std::boxed::Box::new([ObjectSpec {
        id: obj_id,
        type_class: None,
        methods,
        writes: &[],
        needs: &[],
    }]));
    match UapiTree::build(CORE_API, &[objs], &dev(DriverOps::ALL)) {
        Ok(_) => panic!("expected a build error"),
        Err(e) => e,
    }
}

#[test]
fn bad_tables_fail_at_build_time() {
    let h = Some(Handler::Driver(1));
    const DUP: &[AttrSpec] = &[
        AttrSpec::ptr_in(1, PtrSpec::ty(4), UA_OPTIONAL),
        AttrSpec::ptr_out(1, PtrSpec::ty(4), UA_OPTIONAL),
    ];
    assert_eq!(build_one(DUP, h, DRV_OBJ, DRV_METHOD), Errno::EEXIST);
    // The driver re-declares a core attribute of CQ_CREATE.
    const REDEF: &[AttrSpec] = &[AttrSpec::ptr_in(
        attr::CREATE_CQ_CQE,
        PtrSpec::ty(4),
        UA_OPTIONAL,
    )];
    assert_eq!(
        build_one(REDEF, None, obj::CQ, method::CQ_CREATE),
        Errno::EEXIST
    );
    // A second handler for a core method.
    assert_eq!(build_one(&[], h, obj::CQ, method::CQ_CREATE), Errno::EINVAL);
    // Attributes for a method nobody defines.
    assert_eq!(build_one(&[], None, obj::CQ, 9), Errno::EINVAL);
    const MINLEN: &[AttrSpec] = &[AttrSpec::ptr_in(1, PtrSpec::size(8, 4), UA_OPTIONAL)];
    assert_eq!(build_one(MINLEN, h, DRV_OBJ, DRV_METHOD), Errno::EINVAL);
    const ARR0: &[AttrSpec] = &[AttrSpec::idrs_arr(
        1,
        obj::CQ,
        Access::Read,
        0,
        4,
        UA_OPTIONAL,
    )];
    assert_eq!(build_one(ARR0, h, DRV_OBJ, DRV_METHOD), Errno::EINVAL);
    const ARRBIG: &[AttrSpec] = &[AttrSpec::idrs_arr(
        1,
        obj::CQ,
        Access::Read,
        1,
        513,
        UA_OPTIONAL,
    )];
    assert_eq!(build_one(ARRBIG, h, DRV_OBJ, DRV_METHOD), Errno::EINVAL);
    const ARRNEW: &[AttrSpec] = &[AttrSpec::idrs_arr(
        1,
        obj::CQ,
        Access::New,
        1,
        4,
        UA_MANDATORY,
    )];
    assert_eq!(build_one(ARRNEW, h, DRV_OBJ, DRV_METHOD), Errno::EINVAL);
    const FDW: &[AttrSpec] = &[AttrSpec::fd(
        1,
        obj::ASYNC_EVENT,
        Access::Write,
        UA_OPTIONAL,
    )];
    assert_eq!(build_one(FDW, h, DRV_OBJ, DRV_METHOD), Errno::EINVAL);
    const TWONEW: &[AttrSpec] = &[
        AttrSpec::idr(0, obj::CQ, Access::New, UA_MANDATORY),
        AttrSpec::idr(1, obj::PD, Access::Destroy, UA_MANDATORY),
    ];
    assert_eq!(build_one(TWONEW, h, DRV_OBJ, DRV_METHOD), Errno::EINVAL);
    const OPTNEW: &[AttrSpec] = &[AttrSpec::idr(0, obj::CQ, Access::New, UA_OPTIONAL)];
    assert_eq!(build_one(OPTNEW, h, DRV_OBJ, DRV_METHOD), Errno::EINVAL);
    const BIGID: &[AttrSpec] = &[AttrSpec::ptr_in(32, PtrSpec::ty(4), UA_OPTIONAL)];
    assert_eq!(build_one(BIGID, h, DRV_OBJ, DRV_METHOD), Errno::EOVERFLOW);
    assert_eq!(build_one(&[], h, 0x1000 + 12, DRV_METHOD), Errno::EOVERFLOW);
    assert_eq!(build_one(&[], h, DRV_OBJ, 0x1000 + 8), Errno::EOVERFLOW);
}

#[test]
fn method_capacity_is_enomem() {
    // 5 driver objects x 29 method keys = 145 > MAX_METHODS.
    const fn methods() -> [MethodSpec; 29] {
        let mut out = [MethodSpec {
            id: 0,
            attrs: &[],
            handler: Some(Handler::Driver(0)),
            needs: &[],
        }; 29];
        let mut i = 0;
        while i < 29 {
            out[i].id = if i < 21 {
                i as u16
            } else {
                0x1000 + (i as u16 - 21)
            };
            i += 1;
        }
        out
    }
    const M: [MethodSpec; 29] = methods();
    const fn o(id: u16) -> ObjectSpec {
        ObjectSpec {
            id,
            type_class: None,
            methods: &M,
            writes: &[],
            needs: &[],
        }
    }
    const OBJS: &[ObjectSpec] = &[o(0x1000), o(0x1001), o(0x1002), o(0x1003), o(0x1004)];
    const FOUR: &[ObjectSpec] = &[o(0x1000), o(0x1001), o(0x1002)];
    const _: () = assert!(23 + 5 * 29 > MAX_METHODS);
    assert_eq!(
        UapiTree::build(CORE_API, &[OBJS], &dev(DriverOps::ALL)).err(),
        Some(Errno::ENOMEM)
    );
    let t = UapiTree::build(CORE_API, &[FOUR], &dev(DriverOps::ALL)).expect("fits");
    // 23 core methods.
    assert_eq!(t.methods().count(), 23 + 3 * 29);
    assert!(t.method(0x1002, 0x1007).is_ok());
}

// ---- write() ----

fn write_buf(command: u32, in_words: u16, out_words: u16, total: usize) -> Vec<u8> {
    let mut v = CmdHdr {
        command,
        in_words,
        out_words,
    }
    .to_bytes()
    .to_vec();
    v.resize(total.max(8), 0);
    v
}

fn ex_buf(command: u32, in_w: u16, out_w: u16, ex: ExCmdHdr) -> Vec<u8> {
    let mut v = CmdHdr {
        command: command | cmd::FLAG_EXTENDED,
        in_words: in_w,
        out_words: out_w,
    }
    .to_bytes()
    .to_vec();
    v.extend_from_slice(&ex.to_bytes());
    v
}

#[test]
fn write_header_rules() {
    let t = tree();
    let w = |c: u32, i: u16, o: u16, n: usize| {
        plan_write(&t, &write_buf(c, i, o, n), n).map(|p| p.method)
    };
    // count < sizeof(hdr)
    assert_eq!(plan_write(&t, &[0; 4], 4).err(), Some(Errno::EINVAL));
    // Undefined command bits.
    assert_eq!(
        w(0x100 | cmd::ALLOC_PD, 4, 1, 16).err(),
        Some(Errno::EINVAL)
    );
    // POST_SEND is masked off by default: below the highest command (QUERY_SRQ) it is
    // upstream's notsupp method, checked like any other.
    assert_eq!(w(cmd::POST_SEND, 8, 1, 32), Ok(WriteMethod::NotSupp));
    // Past the highest command.
    assert_eq!(w(cmd::OPEN_QP + 1, 2, 0, 8).err(), Some(Errno::EOPNOTSUPP));
    assert_eq!(w(200, 2, 0, 8).err(), Some(Errno::EOPNOTSUPP));
    // In range but unsupported: verify_hdr first, then the handler's
    // EOPNOTSUPP.
    assert_eq!(w(cmd::POLL_CQ, 6, 2, 24), Ok(WriteMethod::NotSupp));
    assert_eq!(w(cmd::POLL_CQ, 6, 2, 20).err(), Some(Errno::EINVAL));
    // in_words must match count.
    assert_eq!(w(cmd::ALLOC_PD, 5, 1, 16).err(), Some(Errno::EINVAL));
    // Request below the core struct (ALLOC_PD: 8 bytes + header).
    assert_eq!(w(cmd::ALLOC_PD, 3, 1, 12).err(), Some(Errno::ENOSPC));
    // Response below the core struct (ALLOC_PD resp: 4 bytes).
    assert_eq!(w(cmd::ALLOC_PD, 4, 0, 16).err(), Some(Errno::ENOSPC));
    assert!(
        matches!(w(cmd::ALLOC_PD, 4, 1, 16), Ok(WriteMethod::Cmd(c)) if c.cmd == cmd::ALLOC_PD)
    );
    // QUERY_DEVICE: 176-byte response.
    assert_eq!(w(cmd::QUERY_DEVICE, 4, 43, 16).err(), Some(Errno::ENOSPC));
    assert!(w(cmd::QUERY_DEVICE, 4, 44, 16).is_ok());
}

#[test]
fn write_destroy_cq_16_byte_compat() {
    let t = tree();
    let p = plan_write(&t, &write_buf(cmd::DESTROY_CQ, 4, 2, 16), 16).expect("compat");
    // in_words was rewritten to 6: a 16-byte core request.
    assert_eq!(p.core_in, (8, 16));
    assert_eq!(
        plan_write(&t, &write_buf(cmd::DESTROY_QP, 4, 1, 16), 16).err(),
        Some(Errno::ENOSPC)
    );
    assert_eq!(
        plan_write(&t, &write_buf(cmd::DESTROY_CQ, 5, 2, 20), 20).err(),
        Some(Errno::ENOSPC)
    );
}

#[test]
fn write_udata_layout() {
    let t = tree();
    // ALLOC_PD with 8 bytes of driver input and 12 of driver output.
    let p = plan_write(&t, &write_buf(cmd::ALLOC_PD, 6, 4, 24), 24).expect("plan");
    assert_eq!(p.core_in, (8, 8));
    assert_eq!(p.udata_in, (16, 8));
    assert_eq!(p.response, Response::InRequest);
    assert_eq!(p.core_out, (0, 4));
    assert_eq!(p.udata_out, (4, 12));
    // DEALLOC_PD: no response, no udata.
    let p = plan_write(&t, &write_buf(cmd::DEALLOC_PD, 3, 0, 12), 12).expect("plan");
    assert_eq!(
        (p.core_in, p.udata_in, p.response),
        ((8, 4), (0, 0), Response::None)
    );
}

#[test]
fn write_ex_rules() {
    let t = tree();
    let ok_ex = ExCmdHdr {
        response: BASE,
        ..ExCmdHdr::default()
    };
    let ex = |i: u16, o: u16, e: ExCmdHdr, extra: usize| {
        let mut b = ex_buf(cmd::EX_QUERY_DEVICE, i, o, e);
        b.resize(24 + extra, 0);
        plan_write(&t, &b, b.len())
    };
    // count < hdr + ex_hdr
    let b = ex_buf(cmd::EX_QUERY_DEVICE, 1, 23, ok_ex);
    assert_eq!(plan_write(&t, &b, 20).err(), Some(Errno::EINVAL));
    // (in_words + provider_in_words) * 8 != count - 24
    assert_eq!(ex(1, 23, ok_ex, 16).err(), Some(Errno::EINVAL));
    let p = ex(1, 23, ok_ex, 8).expect("ok");
    assert_eq!(
        (p.core_in, p.core_out, p.response),
        ((24, 8), (0, 184), Response::Addr(BASE))
    );
    // cmd_hdr_reserved
    let r = ExCmdHdr {
        cmd_hdr_reserved: 1,
        ..ok_ex
    };
    assert_eq!(ex(1, 23, r, 8).err(), Some(Errno::EINVAL));
    // A response pointer without output words, and the reverse.
    assert_eq!(ex(1, 0, ok_ex, 8).err(), Some(Errno::EINVAL));
    assert_eq!(ex(1, 2, ExCmdHdr::default(), 8).err(), Some(Errno::EINVAL));
    // Upstream never copies an ex command's sizes into its method element:
    // a short ex request or response is the handler's problem, not ENOSPC.
    assert!(ex(0, 1, ok_ex, 0).is_ok());
    // Driver buffers follow the core ones.
    let d = ExCmdHdr {
        response: BASE,
        provider_in_words: 2,
        provider_out_words: 3,
        cmd_hdr_reserved: 0,
    };
    let p = ex(1, 23, d, 24).expect("ok");
    assert_eq!((p.udata_in, p.udata_out), ((32, 16), (184, 24)));
}

#[test]
fn invoke_write_rules() {
    let t = tree();
    // rdma-core's probe: QUERY_DEVICE with no buffers.
    assert_eq!(
        invoke_write_method(&t, u64::from(cmd::QUERY_DEVICE), 0, 0).err(),
        Some(Errno::ENOSPC)
    );
    assert_eq!(
        invoke_write_method(&t, u64::from(cmd::QUERY_DEVICE), 8, 175).err(),
        Some(Errno::ENOSPC)
    );
    assert!(invoke_write_method(&t, u64::from(cmd::QUERY_DEVICE), 8, 176).is_ok());
    assert_eq!(
        invoke_write_method(&t, 1 << 32, 8, 176).err(),
        Some(Errno::EINVAL)
    );
    assert_eq!(
        invoke_write_method(&t, 0x4000_0001, 8, 176).err(),
        Some(Errno::EINVAL)
    );
    assert_eq!(
        invoke_write_method(&t, 63, 0, 0).err(),
        Some(Errno::EOPNOTSUPP)
    );
    let ex = u64::from(cmd::FLAG_EXTENDED | cmd::EX_QUERY_DEVICE);
    assert!(invoke_write_method(&t, ex, 0, 0).is_ok());

    // The INVOKE_WRITE method spec itself: CORE_IN needs >= 4 bytes.
    let mut env = Env::default();
    let b = req(
        obj::DEVICE,
        method::INVOKE_WRITE,
        &[ua(attr::WRITE_CMD, 8, 1), ua(attr::CORE_IN, 2, 0)],
    );
    assert_eq!(run(&t, &b, &mut env), Err(Errno::EINVAL));
    let b = req(
        obj::DEVICE,
        method::INVOKE_WRITE,
        &[ua(attr::CORE_IN, 8, 0)],
    );
    assert_eq!(run(&t, &b, &mut env), Err(Errno::EINVAL));
    let b = req(
        obj::DEVICE,
        method::INVOKE_WRITE,
        &[ua(attr::WRITE_CMD, 8, 1)],
    );
    let bundle = parse::parse_ioctl(&t, RDMA_VERBS_IOCTL, &b, &mut env).expect("parse");
    let core = bundle.udata(attr::CORE_IN, attr::CORE_OUT);
    let wc = bundle.get_const_unsigned(attr::WRITE_CMD, u32::MAX.into(), None);
    assert_eq!(
        invoke_write_method(&t, wc.expect("cmd"), core.inlen, core.outlen).err(),
        Some(Errno::ENOSPC)
    );
}

#[test]
fn request_copy_rule() {
    let mut dst = [0xffu8; 8];
    assert_eq!(uverbs_request(&mut dst, &[1, 2, 3]), Ok(()));
    assert_eq!(dst, [1, 2, 3, 0, 0, 0, 0, 0]);
    assert_eq!(uverbs_request(&mut dst, &[9; 8]), Ok(()));
    let mut long = [7u8; 12];
    long[8..].fill(0);
    assert_eq!(uverbs_request(&mut dst, &long), Ok(()));
    long[11] = 1;
    assert_eq!(uverbs_request(&mut dst, &long), Err(Errno::EOPNOTSUPP));
}

// ---- bounded deterministic fuzzing ----

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn fuzz_ioctl_and_write() {
    let mut t = tree();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let targets: Vec<(u16, u16, Vec<u16>)> = t
        .methods()
        .map(|m| {
            let ids = (0..m.num_attrs())
                .filter_map(|i| m.attr(i).map(|a| a.id))
                .collect();
            (m.object_id, m.method_id, ids)
        })
        .collect();
    let lens = [0u16, 1, 4, 6, 8, 9, 12, 16, 20, 32, 48, 64, 0xffff];
    let allowed = [
        Errno::EINVAL,
        Errno::EPROTONOSUPPORT,
        Errno::EOPNOTSUPP,
        Errno::EIO,
        Errno::EFAULT,
        Errno::ENOIOCTLCMD,
        Errno::ENOENT,
        Errno::ENOMEM,
    ];
    let mut oks = 0;
    for iter in 0..100_000u32 {
        if iter == 80_000 {
            t.disassociate();
        }
        let (obj_id, meth_id, ids) = &targets[rng.below(targets.len() as u64) as usize];
        let n = rng.below(12) as usize;
        let mut attrs = Vec::new();
        for _ in 0..n {
            let id = if rng.below(5) == 0 {
                rng.next() as u16
            } else {
                ids[rng.below(ids.len() as u64) as usize]
            };
            let mut a = ua(id, lens[rng.below(lens.len() as u64) as usize], BASE);
            if rng.below(3) == 0 {
                a.data = rng.next();
            }
            if rng.below(4) == 0 {
                a.flags = rng.next() as u16;
            }
            if rng.below(4) == 0 {
                a.elem_id = rng.below(4) as u8;
            }
            if rng.below(8) == 0 {
                a.elem_reserved = rng.next() as u8;
            }
            attrs.push(a);
        }
        let mut b = req(*obj_id, *meth_id, &attrs);
        // Corrupt a few bytes now and then, and sometimes truncate.
        if rng.below(4) == 0 {
            for _ in 0..rng.below(4) + 1 {
                let i = rng.below(b.len() as u64) as usize;
                b[i] = rng.next() as u8;
            }
        }
        if rng.below(16) == 0 {
            let l = rng.below(b.len() as u64 + 1) as usize;
            b.truncate(l);
        }
        let mut env = Env {
            mem: std::vec![0; rng.below(80) as usize],
            uobj_err: (rng.below(16) == 0).then_some(Errno::ENOENT),
            copy_err: (rng.below(16) == 0).then_some(Errno::ENOMEM),
            ..Env::default()
        };
        if rng.below(4) == 0 {
            let l = env.mem.len() as u64;
            if l > 0 {
                env.mem[rng.below(l) as usize] = 1;
            }
        }
        match parse::parse_ioctl(&t, RDMA_VERBS_IOCTL, &b, &mut env) {
            Ok(bundle) => {
                oks += 1;
                // Every mandatory attribute is present in an Ok bundle.
                for i in 0..bundle.method.num_attrs() {
                    if bundle.method.mandatory & (1 << i) != 0 {
                        assert_ne!(bundle.at(i), AttrValue::Absent);
                    }
                }
                let _ = finish_method(&bundle, Ok(()));
            }
            Err(e) => assert!(allowed.contains(&e), "unexpected {e:?}"),
        }

        // write(): random headers over the real command range.
        let mut wb = std::vec![0u8; 24 + rng.below(64) as usize];
        for x in wb.iter_mut() {
            *x = rng.next() as u8;
        }
        let c = (rng.below(64) as u32)
            | if rng.below(2) == 0 {
                cmd::FLAG_EXTENDED
            } else {
                0
            };
        wb[..4].copy_from_slice(&c.to_ne_bytes());
        let count = if rng.below(2) == 0 {
            wb.len()
        } else {
            rng.below(wb.len() as u64 + 1) as usize
        };
        if rng.below(2) == 0 {
            let words = (count / 4) as u16;
            wb[4..6].copy_from_slice(&words.to_ne_bytes());
        }
        match plan_write(&t, &wb, count) {
            Ok(p) => {
                assert!(p.core_in.0 + p.core_in.1 <= 8 + 16 + 0xffff * 8);
            }
            Err(e) => assert!(
                [Errno::EINVAL, Errno::EOPNOTSUPP, Errno::ENOSPC].contains(&e),
                "unexpected {e:?}"
            ),
        }
    }
    // The generator reaches the success path, not only the errors.
    assert!(oks > 100, "only {oks} successful parses");
}
