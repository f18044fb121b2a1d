// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `ib_core_rs_uverbs_spec`: the pure uverbs ABI of [`super::abi`] run inside the
//! kernel, one case per rule of the ioctl header checks, the attribute parser, the merged spec
//! tree and the write() header planner (issue 4).
//!
//! The same rules are host-tested with more cases and a fuzz test (`uverbs/abi/tests.rs`); this
//! suite checks the code the module actually runs: built by the kernel's toolchain against
//! `core` only, with the kernel's `PAGE_SIZE`, the tree on the heap as a device holds it.
//! Requests are laid out as user space sends them, in fixed arrays; user memory is a small array
//! behind a fake [`AttrEnv`](super::abi::parse::AttrEnv). Every case has a valid control next to
//! the broken request, so it fails both if the rule stopped firing and if it fired on valid
//! input.

use kernel::prelude::*;

#[kunit_tests(ib_core_rs_uverbs_spec)]
mod tests {
    use crate::uverbs::abi::ids::{self, attr, cmd, method, obj};
    use crate::uverbs::abi::ioctl::{
        IoctlHdr, UAttr, MAX_IOCTL_ATTRS, PAGE_SIZE, RDMA_VERBS_IOCTL, UVERBS_ATTR_F_MANDATORY,
        UVERBS_ATTR_F_VALID_OUTPUT,
    };
    use crate::uverbs::abi::parse::{
        finish_method, lookup_method, parse_ioctl, AttrEnv, Bundle, FlagsWriteBack, Udata, UdataIn,
    };
    use crate::uverbs::abi::spec::{
        Access, AttrSpec, DriverOp, DriverOps, Handler, MethodSpec, ObjectSpec, PtrSpec, TypeClass,
        UA_MANDATORY, UA_OPTIONAL,
    };
    use crate::uverbs::abi::std_types::{CORE_API, DEFAULT_UVERBS_CMD_MASK};
    use crate::uverbs::abi::uapi::{DeviceDesc, UapiTree, WriteMethod};
    use crate::uverbs::abi::write::{plan_write, CmdHdr, ExCmdHdr, WritePlan};
    use crate::uverbs::abi::Errno;
    use kernel::prelude::*;

    // ---- test-only helpers shared by the cases (no assertions in here) ----

    /// The device's `driver_id` (mlx5's value; any would do).
    const DRIVER_ID: u32 = 1;

    /// Where the fake user memory of [`Env`] is mapped.
    const BASE: u64 = 0x7f00_0000_0000;

    /// A driver table shaped like mlx5's: an attribute added to the core CQ_CREATE, and a driver
    /// object with a UHW method and a method that needs an op the device may lack.
    const DRV_OBJ: u16 = ids::UVERBS_ID_DRIVER_NS;
    const DRV_METHOD: u16 = ids::UVERBS_ID_DRIVER_NS;
    const DRV_METHOD_NEEDY: u16 = ids::UVERBS_ID_DRIVER_NS + 1;
    /// The driver's attribute of CQ_CREATE: the first driver id after UHW_IN/UHW_OUT.
    const DRV_ATTR_CQ: u16 = ids::UVERBS_ID_DRIVER_NS_WITH_UHW;
    /// `UVERBS_ATTR_STRUCT` of 2 required and 4 known bytes: zero-trailing, inline.
    const DRV_ATTR_SHORT: u16 = 0;
    const DRV_ATTR_OUT: u16 = 1;

    const DRV_CQ_EXT: &[AttrSpec] = &[AttrSpec::ptr_in(DRV_ATTR_CQ, PtrSpec::ty(4), UA_OPTIONAL)];
    const DRV_METHOD_ATTRS: &[AttrSpec] = &[
        AttrSpec::ptr_in(DRV_ATTR_SHORT, PtrSpec::structure(2, 4), UA_OPTIONAL),
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
            methods: &[
                MethodSpec::driver(DRV_METHOD, DRV_METHOD_ATTRS, 7),
                MethodSpec {
                    id: DRV_METHOD_NEEDY,
                    attrs: &[],
                    handler: Some(Handler::Driver(8)),
                    needs: &[DriverOp::ModifyWq],
                },
            ],
            writes: &[],
            needs: &[],
        },
    ];

    fn kerr(e: Errno) -> Error {
        Error::from_errno(e.to_errno())
    }

    /// Builds a device's tree on the heap, as `uverbs/device.rs` does. The outer result is the
    /// allocation, the inner one `build_in()`'s verdict.
    fn try_build(
        driver: &[&'static [ObjectSpec]],
        ops: DriverOps,
    ) -> Result<(KBox<UapiTree>, Result<(), Errno>)> {
        let mut t = KBox::new(UapiTree::EMPTY, GFP_KERNEL)?;
        let desc = DeviceDesc {
            driver_id: DRIVER_ID,
            ops,
            uverbs_cmd_mask: DEFAULT_UVERBS_CMD_MASK,
        };
        let r = t.build_in(CORE_API, driver, &desc);
        Ok((t, r))
    }

    fn tree_with(driver: &[&'static [ObjectSpec]], ops: DriverOps) -> Result<KBox<UapiTree>> {
        let (t, r) = try_build(driver, ops)?;
        r.map_err(kerr)?;
        Ok(t)
    }

    /// The core tables merged with [`DRIVER`], every op present.
    fn tree() -> Result<KBox<UapiTree>> {
        tree_with(&[DRIVER], DriverOps::ALL)
    }

    /// User memory: `mem` mapped at [`BASE`], everything else faults; counts the uobject
    /// lookups the parser asked for.
    struct Env {
        mem: [u8; 64],
        uobjs: usize,
    }

    impl Env {
        fn new() -> Self {
            Self {
                mem: [0; 64],
                uobjs: 0,
            }
        }
    }

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

        fn alloc_and_copy(&mut self, _idx: usize, _addr: u64, _len: usize) -> Result<(), Errno> {
            Ok(())
        }

        fn get_uobject(
            &mut self,
            _idx: usize,
            _uattr_idx: usize,
            _obj_type: u16,
            _access: Access,
            _id: i64,
        ) -> Result<(), Errno> {
            self.uobjs += 1;
            Ok(())
        }

        fn get_uobjects_array(
            &mut self,
            _idx: usize,
            _obj_type: u16,
            _access: Access,
            _data: u64,
            _len: u16,
        ) -> Result<(), Errno> {
            Ok(())
        }
    }

    /// One user attribute.
    fn ua(attr_id: u16, len: u16, data: u64) -> UAttr {
        UAttr {
            attr_id,
            len,
            data,
            ..UAttr::default()
        }
    }

    /// A consistent header for `num_attrs` attributes.
    fn hdr(object_id: u16, method_id: u16, num_attrs: u16) -> IoctlHdr {
        IoctlHdr {
            length: (IoctlHdr::SIZE + usize::from(num_attrs) * UAttr::SIZE) as u16,
            object_id,
            method_id,
            num_attrs,
            driver_id: DRIVER_ID,
            ..IoctlHdr::default()
        }
    }

    const REQ_ATTRS: usize = 8;

    /// An ioctl request as user space lays it out: the header, then the attributes.
    struct Req {
        buf: [u8; IoctlHdr::SIZE + REQ_ATTRS * UAttr::SIZE],
        len: usize,
    }

    impl Req {
        /// `h` followed by `attrs` (`h` is taken as given, so tests can break it).
        fn with_hdr(h: IoctlHdr, attrs: &[UAttr]) -> Result<Self> {
            let mut r = Self {
                buf: [0; IoctlHdr::SIZE + REQ_ATTRS * UAttr::SIZE],
                len: IoctlHdr::SIZE + attrs.len() * UAttr::SIZE,
            };
            r.buf
                .get_mut(..IoctlHdr::SIZE)
                .ok_or(EINVAL)?
                .copy_from_slice(&h.to_bytes());
            for (i, a) in attrs.iter().enumerate() {
                let off = IoctlHdr::SIZE + i * UAttr::SIZE;
                r.buf
                    .get_mut(off..off + UAttr::SIZE)
                    .ok_or(EINVAL)?
                    .copy_from_slice(&a.to_bytes());
            }
            Ok(r)
        }

        fn bytes(&self) -> &[u8] {
            self.buf.get(..self.len).unwrap_or(&[])
        }
    }

    /// A valid request for `(object_id, method_id)` with `attrs`.
    fn req(object_id: u16, method_id: u16, attrs: &[UAttr]) -> Result<Req> {
        let n = u16::try_from(attrs.len())?;
        Req::with_hdr(hdr(object_id, method_id, n), attrs)
    }

    /// The whole pure ioctl path over `r`, as `ib_uverbs_ioctl()` runs it.
    fn parse<'t>(t: &'t UapiTree, r: &Req, env: &mut Env) -> Result<Bundle<'t>, Errno> {
        parse_ioctl(t, RDMA_VERBS_IOCTL, r.bytes(), env)
    }

    fn run(t: &UapiTree, r: &Req, env: &mut Env) -> Result<(), Errno> {
        parse(t, r, env).map(|_| ())
    }

    /// The header check and method lookup alone (no attribute array needed).
    fn lookup(t: &UapiTree, h: &IoctlHdr) -> Result<(u16, u16), Errno> {
        lookup_method(t, RDMA_VERBS_IOCTL, h).map(|m| (m.object_id, m.method_id))
    }

    /// A valid DEVICE/QUERY_PORT: CONST_IN port (inline) and RESP (48 bytes at BASE), then
    /// `extra`.
    fn query_port(extra: &[UAttr]) -> Result<Req> {
        let mut a = [UAttr::default(); REQ_ATTRS];
        a[0] = ua(attr::QUERY_PORT_PORT_NUM, 8, 1);
        a[1] = ua(attr::QUERY_PORT_RESP, 48, BASE);
        let n = 2 + extra.len();
        a.get_mut(2..n).ok_or(EINVAL)?.copy_from_slice(extra);
        req(obj::DEVICE, method::QUERY_PORT, a.get(..n).ok_or(EINVAL)?)
    }

    /// A valid CQ/CQ_CREATE (its five mandatory attributes), then `extra`.
    fn cq_create(extra: &[UAttr]) -> Result<Req> {
        let mut a = [UAttr::default(); REQ_ATTRS];
        a[0] = ua(attr::CREATE_CQ_HANDLE, 0, 0);
        a[1] = ua(attr::CREATE_CQ_CQE, 4, 16);
        a[2] = ua(attr::CREATE_CQ_USER_HANDLE, 8, 0xdead);
        a[3] = ua(attr::CREATE_CQ_COMP_VECTOR, 4, 0);
        a[4] = ua(attr::CREATE_CQ_RESP_CQE, 4, BASE);
        let n = 5 + extra.len();
        a.get_mut(5..n).ok_or(EINVAL)?.copy_from_slice(extra);
        req(obj::CQ, method::CQ_CREATE, a.get(..n).ok_or(EINVAL)?)
    }

    /// A write() buffer: the command header, `ex` if given, zeros up to `count`.
    struct WBuf {
        buf: [u8; 64],
    }

    impl WBuf {
        fn new(command: u32, in_words: u16, out_words: u16, ex: Option<ExCmdHdr>) -> Self {
            let mut buf = [0u8; 64];
            let h = CmdHdr {
                command,
                in_words,
                out_words,
            };
            if let Some(d) = buf.get_mut(..CmdHdr::SIZE) {
                d.copy_from_slice(&h.to_bytes());
            }
            if let Some(ex) = ex {
                let end = CmdHdr::SIZE + ExCmdHdr::SIZE;
                if let Some(d) = buf.get_mut(CmdHdr::SIZE..end) {
                    d.copy_from_slice(&ex.to_bytes());
                }
            }
            Self { buf }
        }

        /// `plan_write()` of a `count`-byte write of this buffer.
        fn plan(&self, t: &UapiTree, count: usize) -> Result<WritePlan, Errno> {
            plan_write(t, &self.buf, count)
        }
    }

    /// `plan_write()` of a non-ex command, `count` bytes.
    fn w(
        t: &UapiTree,
        command: u32,
        in_words: u16,
        out_words: u16,
        count: usize,
    ) -> Result<WriteMethod, Errno> {
        WBuf::new(command, in_words, out_words, None)
            .plan(t, count)
            .map(|p| p.method)
    }

    /// EX_QUERY_DEVICE with `ex`: 24 bytes of headers plus `extra` bytes.
    fn ex_query_device(
        t: &UapiTree,
        in_words: u16,
        out_words: u16,
        ex: ExCmdHdr,
        extra: usize,
    ) -> Result<WritePlan, Errno> {
        let command = cmd::FLAG_EXTENDED | cmd::EX_QUERY_DEVICE;
        WBuf::new(command, in_words, out_words, Some(ex)).plan(t, 24 + extra)
    }

    fn ex_with_response() -> ExCmdHdr {
        ExCmdHdr {
            response: BASE,
            ..ExCmdHdr::default()
        }
    }

    // ---- the ioctl header ----

    #[test]
    fn ioctl_hdr_length_mismatch_is_einval() -> Result {
        let t = tree()?;
        let good = hdr(obj::DEVICE, method::QUERY_PORT, 2);
        assert_eq!(lookup(&t, &good), Ok((obj::DEVICE, method::QUERY_PORT)));
        let mut h = good;
        h.length += 1;
        assert_eq!(lookup(&t, &h), Err(Errno::EINVAL));
        h.length = IoctlHdr::SIZE as u16;
        assert_eq!(lookup(&t, &h), Err(Errno::EINVAL));
        // num_attrs whose byte count wraps u16 may not alias a short length.
        h.num_attrs = 4096;
        assert_eq!(lookup(&t, &h), Err(Errno::EINVAL));
        Ok(())
    }

    #[test]
    fn ioctl_hdr_over_a_page_is_einval() -> Result {
        let t = tree()?;
        // The parser's bound is the kernel's page.
        assert_eq!(PAGE_SIZE, kernel::page::PAGE_SIZE);
        let most = u16::try_from(MAX_IOCTL_ATTRS)?;
        let fits = hdr(obj::DEVICE, method::QUERY_PORT, most);
        assert!(usize::from(fits.length) <= PAGE_SIZE);
        assert_eq!(lookup(&t, &fits), Ok((obj::DEVICE, method::QUERY_PORT)));
        // One attribute more: a consistent length of 4104 bytes.
        let over = hdr(obj::DEVICE, method::QUERY_PORT, most + 1);
        assert!(usize::from(over.length) > PAGE_SIZE);
        assert_eq!(lookup(&t, &over), Err(Errno::EINVAL));
        Ok(())
    }

    #[test]
    fn ioctl_hdr_reserved_is_eprotonosupport() -> Result {
        let t = tree()?;
        let mut env = Env::new();
        assert_eq!(run(&t, &query_port(&[])?, &mut env), Ok(()));
        let mut h = hdr(obj::DEVICE, method::QUERY_PORT, 2);
        h.reserved1 = 1;
        assert_eq!(lookup(&t, &h), Err(Errno::EPROTONOSUPPORT));
        h.reserved1 = 0;
        h.reserved2 = 1 << 31;
        assert_eq!(lookup(&t, &h), Err(Errno::EPROTONOSUPPORT));
        // The length check comes first.
        h.length = 0;
        assert_eq!(lookup(&t, &h), Err(Errno::EINVAL));
        Ok(())
    }

    #[test]
    fn ioctl_foreign_driver_id_is_einval() -> Result {
        let t = tree()?;
        let mut h = hdr(obj::DEVICE, method::QUERY_PORT, 2);
        assert_eq!(lookup(&t, &h), Ok((obj::DEVICE, method::QUERY_PORT)));
        h.driver_id = DRIVER_ID + 1;
        assert_eq!(lookup(&t, &h), Err(Errno::EINVAL));
        // Through the whole path too.
        let a = [
            ua(attr::QUERY_PORT_PORT_NUM, 8, 1),
            ua(attr::QUERY_PORT_RESP, 48, BASE),
        ];
        let r = Req::with_hdr(h, &a)?;
        assert_eq!(run(&t, &r, &mut Env::new()), Err(Errno::EINVAL));
        Ok(())
    }

    #[test]
    fn ioctl_unknown_object_or_method_is_eprotonosupport() -> Result {
        let t = tree()?;
        let look = |o: u16, m: u16| lookup(&t, &hdr(o, m, 0));
        assert_eq!(
            look(obj::DEVICE, method::QUERY_CONTEXT),
            Ok((obj::DEVICE, method::QUERY_CONTEXT))
        );
        assert_eq!(look(DRV_OBJ, DRV_METHOD), Ok((DRV_OBJ, DRV_METHOD)));
        // A core object's unknown method (XRCD has only XRCD_DESTROY, 0), and an object
        // outside the key space.
        assert_eq!(look(obj::XRCD, 1), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(look(0x0800, 0), Err(Errno::EPROTONOSUPPORT));
        // A core method id outside the key space, a core method we do not implement, a
        // driver method the driver did not declare, a driver object nobody declared.
        assert_eq!(look(obj::DEVICE, 20), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(
            look(obj::DEVICE, method::QUERY_PORT_SPEED),
            Err(Errno::EPROTONOSUPPORT)
        );
        assert_eq!(look(DRV_OBJ, DRV_METHOD + 7), Err(Errno::EPROTONOSUPPORT));
        assert_eq!(look(DRV_OBJ + 1, DRV_METHOD), Err(Errno::EPROTONOSUPPORT));
        // Not RDMA_VERBS_IOCTL at all.
        let h = hdr(obj::DEVICE, method::QUERY_CONTEXT, 0);
        assert!(lookup_method(&t, RDMA_VERBS_IOCTL + 1, &h).err() == Some(Errno::ENOIOCTLCMD));
        Ok(())
    }

    // ---- attributes ----

    #[test]
    fn attr_unknown_fails_only_with_mandatory() -> Result {
        let t = tree()?;
        let mut env = Env::new();
        for id in [9, 0x1005, 0x2000, 0xffff] {
            let mut unknown = ua(id, 4, 0);
            assert_eq!(run(&t, &query_port(&[unknown])?, &mut env), Ok(()));
            unknown.flags = UVERBS_ATTR_F_MANDATORY;
            assert_eq!(
                run(&t, &query_port(&[unknown])?, &mut env),
                Err(Errno::EPROTONOSUPPORT)
            );
        }
        Ok(())
    }

    #[test]
    fn attr_duplicate_is_einval() -> Result {
        let t = tree()?;
        let mut env = Env::new();
        let other = ua(attr::QUERY_PORT_PORT_NUM, 8, 2);
        assert_eq!(run(&t, &query_port(&[])?, &mut env), Ok(()));
        assert_eq!(
            run(&t, &query_port(&[other])?, &mut env),
            Err(Errno::EINVAL)
        );
        Ok(())
    }

    #[test]
    fn attr_missing_mandatory_is_einval() -> Result {
        let t = tree()?;
        let mut env = Env::new();
        let port = ua(attr::QUERY_PORT_PORT_NUM, 8, 1);
        let resp = ua(attr::QUERY_PORT_RESP, 48, BASE);
        let both = req(obj::DEVICE, method::QUERY_PORT, &[port, resp])?;
        assert_eq!(run(&t, &both, &mut env), Ok(()));
        let no_resp = req(obj::DEVICE, method::QUERY_PORT, &[port])?;
        assert_eq!(run(&t, &no_resp, &mut env), Err(Errno::EINVAL));
        let no_port = req(obj::DEVICE, method::QUERY_PORT, &[resp])?;
        assert_eq!(run(&t, &no_port, &mut env), Err(Errno::EINVAL));
        // Optional attributes are not required.
        let none = req(obj::DEVICE, method::QUERY_CONTEXT, &[])?;
        assert_eq!(run(&t, &none, &mut env), Ok(()));
        Ok(())
    }

    #[test]
    fn attr_zero_trailing_nonzero_excess_is_eopnotsupp() -> Result {
        let t = tree()?;
        let mut env = Env::new();
        // Inline data: STRUCT(2, 4) sent as 6 bytes; bytes 4 and 5 must be zero.
        let short = |b: [u8; 8]| {
            req(
                DRV_OBJ,
                DRV_METHOD,
                &[ua(DRV_ATTR_SHORT, 6, u64::from_ne_bytes(b))],
            )
        };
        assert_eq!(run(&t, &short([1, 2, 3, 4, 0, 0, 0, 0])?, &mut env), Ok(()));
        assert_eq!(
            run(&t, &short([1, 2, 3, 4, 0, 9, 0, 0])?, &mut env),
            Err(Errno::EOPNOTSUPP)
        );
        // Bytes past `len` are not the user's: not looked at.
        assert_eq!(run(&t, &short([1, 2, 3, 4, 0, 0, 7, 7])?, &mut env), Ok(()));

        // User memory: QP_CREATE's CAP is STRUCT(ib_uverbs_qp_cap, max_inline_data), 20 known
        // bytes, sent as 32 at BASE.
        let qp = |cap_len: u16| {
            req(
                obj::QP,
                method::QP_CREATE,
                &[
                    ua(attr::CREATE_QP_HANDLE, 0, 0),
                    ua(attr::CREATE_QP_USER_HANDLE, 8, 1),
                    ua(attr::CREATE_QP_CAP, cap_len, BASE),
                    ua(attr::CREATE_QP_TYPE, 8, 2),
                    ua(attr::CREATE_QP_RESP_CAP, 20, BASE),
                    ua(attr::CREATE_QP_RESP_QP_NUM, 4, BASE),
                ],
            )
        };
        env.mem[19] = 1;
        assert_eq!(run(&t, &qp(32)?, &mut env), Ok(()));
        env.mem[25] = 1;
        assert_eq!(run(&t, &qp(32)?, &mut env), Err(Errno::EOPNOTSUPP));
        // Unreadable excess counts as non-zero (ib_is_buffer_cleared()).
        env.mem[25] = 0;
        assert_eq!(run(&t, &qp(100)?, &mut env), Err(Errno::EOPNOTSUPP));
        Ok(())
    }

    #[test]
    fn attr_reserved_fields_are_einval() -> Result {
        let t = tree()?;
        let mut env = Env::new();
        // A pointer attribute: attr_data.reserved is elem_id and elem_reserved.
        let mut port = ua(attr::QUERY_PORT_PORT_NUM, 8, 1);
        let resp = ua(attr::QUERY_PORT_RESP, 48, BASE);
        port.elem_id = 1;
        let r = req(obj::DEVICE, method::QUERY_PORT, &[port, resp])?;
        assert_eq!(run(&t, &r, &mut env), Err(Errno::EINVAL));
        port.elem_id = 0;
        port.elem_reserved = 1;
        let r = req(obj::DEVICE, method::QUERY_PORT, &[port, resp])?;
        assert_eq!(run(&t, &r, &mut env), Err(Errno::EINVAL));
        // An IDR attribute is refused before its uobject is looked up.
        let mut handle = ua(attr::CREATE_CQ_HANDLE, 0, 0);
        handle.elem_reserved = 1;
        let r = req(obj::CQ, method::CQ_CREATE, &[handle])?;
        assert_eq!(run(&t, &r, &mut env), Err(Errno::EINVAL));
        assert_eq!(env.uobjs, 0);
        assert_eq!(run(&t, &cq_create(&[])?, &mut env), Ok(()));
        assert_eq!(env.uobjs, 1);
        Ok(())
    }

    #[test]
    fn attr_valid_output_planned_on_outputs() -> Result {
        let t = tree()?;
        let mut env = Env::new();
        // An output the handler filled: the user's flags plus VALID_OUTPUT, at its position.
        let r = query_port(&[])?;
        let b = parse(&t, &r, &mut env).map_err(kerr)?;
        assert!(
            b.set_output(attr::QUERY_PORT_RESP)
                == Ok(FlagsWriteBack {
                    uattr_idx: 1,
                    flags: UVERBS_ATTR_F_VALID_OUTPUT,
                })
        );
        // Not supplied: nothing to write back.
        let none = req(obj::DEVICE, method::QUERY_CONTEXT, &[])?;
        let b = parse(&t, &none, &mut env).map_err(kerr)?;
        assert!(b.set_output(attr::QUERY_CONTEXT_CORE_SUPPORT) == Err(Errno::ENOENT));
        // A UHW method: after a successful handler UHW_OUT is flagged, keeping MANDATORY.
        let mut out = ua(ids::UVERBS_ATTR_UHW_OUT, 16, BASE);
        out.flags = UVERBS_ATTR_F_MANDATORY;
        let r = req(DRV_OBJ, DRV_METHOD, &[ua(DRV_ATTR_OUT, 8, BASE), out])?;
        let b = parse(&t, &r, &mut env).map_err(kerr)?;
        let want = FlagsWriteBack {
            uattr_idx: 1,
            flags: UVERBS_ATTR_F_MANDATORY | UVERBS_ATTR_F_VALID_OUTPUT,
        };
        assert!(finish_method(&b, Ok(())) == Ok(Some(want)));
        // A failed handler writes nothing back; EPROTONOSUPPORT becomes EINVAL.
        assert!(finish_method(&b, Err(Errno::ENOMEM)) == Err(Errno::ENOMEM));
        assert!(finish_method(&b, Err(Errno::EPROTONOSUPPORT)) == Err(Errno::EINVAL));
        // Without UHW_OUT there is nothing to flag.
        let r = req(DRV_OBJ, DRV_METHOD, &[])?;
        let b = parse(&t, &r, &mut env).map_err(kerr)?;
        assert!(finish_method(&b, Ok(())) == Ok(None));
        Ok(())
    }

    #[test]
    fn attr_driver_namespace_and_uhw_reach_udata() -> Result {
        let t = tree()?;
        let mut env = Env::new();
        // CQ_CREATE with the driver's attribute (bit 12), UHW_IN inline, UHW_OUT a pointer.
        let r = cq_create(&[
            ua(DRV_ATTR_CQ, 4, 0x55),
            ua(ids::UVERBS_ATTR_UHW_IN, 4, 0xabcd),
            ua(ids::UVERBS_ATTR_UHW_OUT, 16, BASE + 8),
        ])?;
        let b = parse(&t, &r, &mut env).map_err(kerr)?;
        assert!(b.ptr(DRV_ATTR_CQ).map(|p| (p.data, p.len)) == Ok((0x55, 4)));
        let u = b.udata(ids::UVERBS_ATTR_UHW_IN, ids::UVERBS_ATTR_UHW_OUT);
        assert!(
            u == Udata {
                inbuf: UdataIn::Inline { uattr_idx: 6 },
                inlen: 4,
                outbuf: BASE + 8,
                outlen: 16,
            }
        );
        // A UHW_IN longer than 8 bytes is a user pointer.
        let r = cq_create(&[ua(ids::UVERBS_ATTR_UHW_IN, 24, BASE)])?;
        let b = parse(&t, &r, &mut env).map_err(kerr)?;
        let u = b.udata(ids::UVERBS_ATTR_UHW_IN, ids::UVERBS_ATTR_UHW_OUT);
        assert!(u.inbuf == UdataIn::User(BASE));
        assert!((u.inlen, u.outbuf, u.outlen) == (24, 0, 0));
        // Without the driver's table the driver attribute is unknown to CQ_CREATE.
        let core = tree_with(&[], DriverOps::ALL)?;
        let mut drv = ua(DRV_ATTR_CQ, 4, 0x55);
        assert_eq!(run(&core, &cq_create(&[drv])?, &mut env), Ok(()));
        drv.flags = UVERBS_ATTR_F_MANDATORY;
        assert_eq!(
            run(&core, &cq_create(&[drv])?, &mut env),
            Err(Errno::EPROTONOSUPPORT)
        );
        assert_eq!(run(&t, &cq_create(&[drv])?, &mut env), Ok(()));
        Ok(())
    }

    // ---- the spec tree ----

    #[test]
    fn tree_merges_core_and_driver_tables() -> Result {
        let core = tree_with(&[], DriverOps::ALL)?;
        let t = tree()?;
        let core_cq = core.method(obj::CQ, method::CQ_CREATE).map_err(kerr)?;
        let cq = t.method(obj::CQ, method::CQ_CREATE).map_err(kerr)?;
        // The driver's attribute follows the core ones; the core method keeps its handler.
        let n = core_cq.num_attrs();
        assert_eq!(cq.num_attrs(), n + 1);
        assert_eq!(cq.attr_index(DRV_ATTR_CQ), Some(n));
        assert_eq!(core_cq.attr_index(DRV_ATTR_CQ), None);
        assert!(cq.handler == core_cq.handler);
        assert!(cq.has_udata);
        assert!(!cq.driver_method);
        assert_eq!(cq.mandatory, core_cq.mandatory);
        // The driver object and its method, a driver method (EIO after disassociation).
        assert!(core.object(DRV_OBJ).is_none());
        assert!(t.object(DRV_OBJ).and_then(|o| o.type_class) == Some(TypeClass::Idr));
        let dm = t.method(DRV_OBJ, DRV_METHOD).map_err(kerr)?;
        assert!(dm.handler == Handler::Driver(7));
        assert!(dm.driver_method);
        assert!(dm.has_udata);
        // Keys stay sorted and unique: core methods plus the driver's two.
        let mut prev = None;
        let mut sorted = true;
        for m in t.methods() {
            if let Some(p) = prev {
                sorted &= p < m.key;
            }
            prev = Some(m.key);
        }
        assert!(sorted);
        assert_eq!(t.methods().count(), core.methods().count() + 2);
        Ok(())
    }

    #[test]
    fn tree_method_without_its_driver_op_is_not_exposed() -> Result {
        let t = tree()?;
        assert_eq!(
            lookup(&t, &hdr(DRV_OBJ, DRV_METHOD_NEEDY, 0)),
            Ok((DRV_OBJ, DRV_METHOD_NEEDY))
        );
        let lacking = tree_with(&[DRIVER], DriverOps::ALL.without(DriverOp::ModifyWq))?;
        assert_eq!(
            lookup(&lacking, &hdr(DRV_OBJ, DRV_METHOD_NEEDY, 0)),
            Err(Errno::EPROTONOSUPPORT)
        );
        // The rest of the object stays.
        assert_eq!(
            lookup(&lacking, &hdr(DRV_OBJ, DRV_METHOD, 0)),
            Ok((DRV_OBJ, DRV_METHOD))
        );
        // Without dealloc_pd there are no PDs: PD_DESTROY goes, and REG_MR with its
        // mandatory PD handle too.
        let no_pd = tree_with(&[DRIVER], DriverOps::ALL.without(DriverOp::DeallocPd))?;
        assert!(t.method(obj::MR, method::REG_MR).is_ok());
        assert!(no_pd.method(obj::PD, method::PD_DESTROY).err() == Some(Errno::EPROTONOSUPPORT));
        assert!(no_pd.method(obj::MR, method::REG_MR).err() == Some(Errno::EPROTONOSUPPORT));
        Ok(())
    }

    /// One-method driver tables that `build_in()` must refuse.
    const fn bad_table(obj_id: u16, m: &'static [MethodSpec]) -> [ObjectSpec; 1] {
        [ObjectSpec {
            id: obj_id,
            type_class: None,
            methods: m,
            writes: &[],
            needs: &[],
        }]
    }

    #[test]
    fn tree_bad_spec_table_is_rejected_at_build() -> Result {
        // The same attribute id twice in one method.
        const DUP: &[ObjectSpec] = &bad_table(
            DRV_OBJ,
            &[MethodSpec::driver(
                DRV_METHOD,
                &[
                    AttrSpec::ptr_in(1, PtrSpec::ty(4), UA_OPTIONAL),
                    AttrSpec::ptr_out(1, PtrSpec::ty(4), UA_OPTIONAL),
                ],
                1,
            )],
        );
        // A driver re-declaring a core attribute of CQ_CREATE.
        const REDEF: &[ObjectSpec] = &bad_table(
            obj::CQ,
            &[MethodSpec {
                id: method::CQ_CREATE,
                attrs: &[AttrSpec::ptr_in(
                    attr::CREATE_CQ_CQE,
                    PtrSpec::ty(4),
                    UA_OPTIONAL,
                )],
                handler: None,
                needs: &[],
            }],
        );
        // A second handler for a core method.
        const TWICE: &[ObjectSpec] =
            &bad_table(obj::CQ, &[MethodSpec::driver(method::CQ_CREATE, &[], 1)]);
        // min_len above len.
        const MINLEN: &[ObjectSpec] = &bad_table(
            DRV_OBJ,
            &[MethodSpec::driver(
                DRV_METHOD,
                &[AttrSpec::ptr_in(1, PtrSpec::size(8, 4), UA_OPTIONAL)],
                1,
            )],
        );
        // An optional NEW attribute.
        const OPTNEW: &[ObjectSpec] = &bad_table(
            DRV_OBJ,
            &[MethodSpec::driver(
                DRV_METHOD,
                &[AttrSpec::idr(0, obj::CQ, Access::New, UA_OPTIONAL)],
                1,
            )],
        );
        // An attribute id outside the key space.
        const BIGID: &[ObjectSpec] = &bad_table(
            DRV_OBJ,
            &[MethodSpec::driver(
                DRV_METHOD,
                &[AttrSpec::ptr_in(32, PtrSpec::ty(4), UA_MANDATORY)],
                1,
            )],
        );
        let cases: [(&'static [ObjectSpec], Errno); 6] = [
            (DUP, Errno::EEXIST),
            (REDEF, Errno::EEXIST),
            (TWICE, Errno::EINVAL),
            (MINLEN, Errno::EINVAL),
            (OPTNEW, Errno::EINVAL),
            (BIGID, Errno::EOVERFLOW),
        ];
        for (table, errno) in cases {
            let (_, r) = try_build(&[table], DriverOps::ALL)?;
            assert_eq!(r, Err(errno));
        }
        // The good driver table builds.
        let (_, r) = try_build(&[DRIVER], DriverOps::ALL)?;
        assert_eq!(r, Ok(()));
        Ok(())
    }

    // ---- write() ----

    #[test]
    fn write_in_words_must_match_count() -> Result {
        let t = tree()?;
        // ALLOC_PD: 8-byte request + header = 4 words, 1 word of response.
        let ok = w(&t, cmd::ALLOC_PD, 4, 1, 16);
        assert!(matches!(ok, Ok(WriteMethod::Cmd(c)) if c.cmd == cmd::ALLOC_PD));
        assert_eq!(w(&t, cmd::ALLOC_PD, 5, 1, 16), Err(Errno::EINVAL));
        assert_eq!(w(&t, cmd::ALLOC_PD, 3, 1, 16), Err(Errno::EINVAL));
        Ok(())
    }

    #[test]
    fn write_out_words_below_response_is_enospc() -> Result {
        let t = tree()?;
        assert_eq!(w(&t, cmd::ALLOC_PD, 4, 0, 16), Err(Errno::ENOSPC));
        // QUERY_DEVICE: a 176-byte response is 44 words.
        assert_eq!(w(&t, cmd::QUERY_DEVICE, 4, 43, 16), Err(Errno::ENOSPC));
        assert!(w(&t, cmd::QUERY_DEVICE, 4, 44, 16).is_ok());
        Ok(())
    }

    #[test]
    fn write_ex_header_lengths() -> Result {
        let t = tree()?;
        let ex = ex_with_response();
        // in_words and provider_in_words count 8-byte words after the 24 bytes of headers.
        let p = ex_query_device(&t, 1, 23, ex, 8).map_err(kerr)?;
        assert!((p.core_in, p.core_out) == ((24, 8), (0, 184)));
        assert!(ex_query_device(&t, 1, 23, ex, 16).err() == Some(Errno::EINVAL));
        assert!(ex_query_device(&t, 2, 23, ex, 8).err() == Some(Errno::EINVAL));
        let drv = ExCmdHdr {
            provider_in_words: 1,
            ..ex
        };
        assert!(ex_query_device(&t, 1, 23, drv, 16).is_ok());
        assert!(ex_query_device(&t, 1, 23, drv, 8).err() == Some(Errno::EINVAL));
        // An extended command shorter than both headers.
        let b = WBuf::new(cmd::FLAG_EXTENDED | cmd::EX_QUERY_DEVICE, 0, 0, Some(ex));
        assert!(b.plan(&t, 20).err() == Some(Errno::EINVAL));
        Ok(())
    }

    #[test]
    fn write_ex_reserved_is_einval() -> Result {
        let t = tree()?;
        let ex = ex_with_response();
        assert!(ex_query_device(&t, 1, 23, ex, 8).is_ok());
        let reserved = ExCmdHdr {
            cmd_hdr_reserved: 1,
            ..ex
        };
        assert!(ex_query_device(&t, 1, 23, reserved, 8).err() == Some(Errno::EINVAL));
        Ok(())
    }

    #[test]
    fn write_ex_response_and_out_words_must_agree() -> Result {
        let t = tree()?;
        let ex = ex_with_response();
        let none = ExCmdHdr::default();
        assert!(ex_query_device(&t, 1, 23, ex, 8).is_ok());
        assert!(ex_query_device(&t, 1, 0, none, 8).is_ok());
        // A response pointer without output words, output words without a pointer.
        assert!(ex_query_device(&t, 1, 0, ex, 8).err() == Some(Errno::EINVAL));
        assert!(ex_query_device(&t, 1, 23, none, 8).err() == Some(Errno::EINVAL));
        let drv_out = ExCmdHdr {
            provider_out_words: 2,
            ..none
        };
        assert!(ex_query_device(&t, 1, 0, drv_out, 8).err() == Some(Errno::EINVAL));
        // Driver output words alone are enough for a pointer.
        let drv_out = ExCmdHdr {
            provider_out_words: 2,
            ..ex
        };
        assert!(ex_query_device(&t, 1, 0, drv_out, 8).is_ok());
        Ok(())
    }

    #[test]
    fn write_truncated_command() -> Result {
        let t = tree()?;
        // Shorter than the command header.
        let b = WBuf::new(cmd::ALLOC_PD, 1, 1, None);
        assert!(b.plan(&t, 4).err() == Some(Errno::EINVAL));
        assert!(b.plan(&t, 7).err() == Some(Errno::EINVAL));
        // Consistent words, but the core request is cut short (ALLOC_PD needs 8 bytes).
        assert_eq!(w(&t, cmd::ALLOC_PD, 3, 1, 12), Err(Errno::ENOSPC));
        // The caller gave fewer bytes than `count` claims: nothing to decode.
        assert!(plan_write(&t, &[0u8; 4], 8).err() == Some(Errno::EFAULT));
        Ok(())
    }

    #[test]
    fn write_oversized_command() -> Result {
        let t = tree()?;
        // More bytes than in_words announces, and the reverse.
        assert_eq!(w(&t, cmd::ALLOC_PD, 4, 1, 24), Err(Errno::EINVAL));
        assert_eq!(w(&t, cmd::ALLOC_PD, 6, 1, 16), Err(Errno::EINVAL));
        // A longer request is driver data (udata), not an error.
        let p = WBuf::new(cmd::ALLOC_PD, 6, 4, None)
            .plan(&t, 24)
            .map_err(kerr)?;
        assert!(
            (p.core_in, p.udata_in, p.core_out, p.udata_out) == ((8, 8), (16, 8), (0, 4), (4, 12))
        );
        // Command numbers: bits outside FLAG_EXTENDED | 0xff, past the highest command, in
        // range but not supported.
        assert_eq!(w(&t, 0x100 | cmd::ALLOC_PD, 4, 1, 16), Err(Errno::EINVAL));
        assert_eq!(w(&t, 200, 2, 0, 8), Err(Errno::EOPNOTSUPP));
        assert_eq!(w(&t, cmd::POLL_CQ, 6, 2, 24), Ok(WriteMethod::NotSupp));
        Ok(())
    }
}
