// SPDX-License-Identifier: GPL-2.0

//! Specs as data: what an attribute, a method and an object look like
//! (upstream `struct uverbs_attr_spec`, `uverbs_method_def`,
//! `uverbs_object_def`, `uapi_definition`), and the uapi key encoding of
//! `include/rdma/uverbs_ioctl.h`.

use super::ids;

/// Items of upstream's uapi key encoding and spec kinds that the host tests (and the fuzzer)
/// use and the module does not: each gets the module build's `expect(dead_code)`, written
/// once here.
macro_rules! host_only {
    ($($item:item)+) => {
        $(
            #[cfg_attr(
                MODULE,
                expect(
                    dead_code,
                    reason = "part of the uapi key encoding and spec kinds of upstream; the host \
                              tests use it"
                )
            )]
            $item
        )+
    };
}

/// upstream: `enum uverbs_obj_access`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Shared use of an existing object (`UVERBS_ACCESS_READ`).
    Read,
    /// Exclusive use of an existing object (`UVERBS_ACCESS_WRITE`).
    Write,
    /// A new object the method creates (`UVERBS_ACCESS_NEW`).
    New,
    /// The object the method destroys (`UVERBS_ACCESS_DESTROY`).
    Destroy,
}

/// The size rules of a PTR_IN / PTR_OUT attribute (upstream `u.ptr` plus the
/// `zero_trailing` and `alloc_and_copy` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtrSpec {
    /// Size the kernel knows (`u.ptr.len`).
    pub(crate) len: u16,
    /// The user may not provide less (`u.ptr.min_len`).
    pub(crate) min_len: u16,
    /// More than `len` is allowed if the excess is zero (`zero_trailing`).
    pub(crate) zero_trailing: bool,
    /// PTR_IN only: the parser copies the data in (`alloc_and_copy`).
    pub(crate) alloc_and_copy: bool,
}

impl PtrSpec {
    /// upstream: `UVERBS_ATTR_SIZE(min_len, len)`.
    pub const fn size(min_len: u16, len: u16) -> Self {
        Self {
            len,
            min_len,
            zero_trailing: false,
            alloc_and_copy: false,
        }
    }

    /// upstream: `UVERBS_ATTR_TYPE(type)`: exactly `size` bytes.
    pub const fn ty(size: u16) -> Self {
        Self::size(size, size)
    }

    /// upstream: `UVERBS_ATTR_MIN_SIZE(min)`: at least `min`, up to 65535.
    pub const fn min_size(min_len: u16) -> Self {
        Self::size(min_len, u16::MAX)
    }

    /// upstream: `UVERBS_ATTR_STRUCT(type, last)`: at least
    /// `offsetofend(type, last)`, and anything past `sizeof(type)` must be
    /// zero.
    pub const fn structure(last_end: u16, size: u16) -> Self {
        Self {
            len: size,
            min_len: last_end,
            zero_trailing: true,
            alloc_and_copy: false,
        }
    }

    /// upstream: `UA_ALLOC_AND_COPY`.
    pub(crate) const fn alloc_and_copy(mut self) -> Self {
        self.alloc_and_copy = true;
        self
    }
}

/// upstream: `enum uverbs_attr_type` with each type's part of the unions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttrKind {
    /// upstream: `UVERBS_ATTR_PTR_IN`.
    PtrIn(PtrSpec),
    /// upstream: `UVERBS_ATTR_PTR_OUT`.
    PtrOut(PtrSpec),
    /// upstream: `UVERBS_ATTR_CONST_IN`: a PTR_IN of exactly 8 bytes (always
    /// inline), read with `uverbs_get_const()`.
    ConstIn,
    /// upstream: `UVERBS_ATTR_FLAGS_IN`: a PTR_IN of 4 to 8 bytes, read with
    /// `uverbs_get_flags32/64()`.
    FlagsIn,
    /// upstream: `UVERBS_ATTR_ENUM_IN`: `elem_id` selects one of the specs
    /// (upstream supports only PTR_IN ones; anything else is `EOPNOTSUPP` at
    /// parse time, as upstream).
    EnumIn(&'static [AttrKind]),
    /// upstream: `UVERBS_ATTR_IDR`.
    Idr { obj_type: u16, access: Access },
    /// upstream: `UVERBS_ATTR_FD`.
    Fd { obj_type: u16, access: Access },
    /// upstream: `UVERBS_ATTR_RAW_FD`.
    RawFd,
    /// upstream: `UVERBS_ATTR_IDRS_ARR`.
    IdrsArray {
        obj_type: u16,
        access: Access,
        min_len: u16,
        max_len: u16,
    },
}

/// Direction of a pointer attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PtrDir {
    In,
    Out,
}

impl AttrKind {
    /// The pointer rules of PTR_IN-like (PTR_IN, CONST_IN, FLAGS_IN) and
    /// PTR_OUT attributes, as upstream's macros expand them.
    pub(crate) const fn ptr(&self) -> Option<(PtrDir, PtrSpec)> {
        match *self {
            AttrKind::PtrIn(p) => Some((PtrDir::In, p)),
            AttrKind::PtrOut(p) => Some((PtrDir::Out, p)),
            // UVERBS_ATTR_SIZE(sizeof(u64), sizeof(u64))
            AttrKind::ConstIn => Some((PtrDir::In, PtrSpec::ty(8))),
            // UVERBS_ATTR_SIZE(sizeof(u32), sizeof(u64))
            AttrKind::FlagsIn => Some((PtrDir::In, PtrSpec::size(4, 8))),
            _ => None,
        }
    }

    /// The object type an object attribute refers to (upstream
    /// `uapi_get_obj_id()`).
    pub(crate) const fn obj_type(&self) -> Option<u16> {
        match *self {
            AttrKind::Idr { obj_type, .. }
            | AttrKind::Fd { obj_type, .. }
            | AttrKind::IdrsArray { obj_type, .. } => Some(obj_type),
            _ => None,
        }
    }
}

/// upstream: `struct uverbs_attr_def` (id + `struct uverbs_attr_spec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttrSpec {
    pub(crate) id: u16,
    pub(crate) kind: AttrKind,
    /// upstream: `UA_MANDATORY`.
    pub(crate) mandatory: bool,
    /// upstream: `is_udata` (set by `UVERBS_ATTR_UHW()`).
    pub(crate) is_udata: bool,
}

/// upstream: `UA_MANDATORY`.
pub const UA_MANDATORY: bool = true;
/// upstream: `UA_OPTIONAL`.
pub const UA_OPTIONAL: bool = false;

impl AttrSpec {
    const fn new(id: u16, kind: AttrKind, mandatory: bool) -> Self {
        Self {
            id,
            kind,
            mandatory,
            is_udata: false,
        }
    }

    /// upstream: `UVERBS_ATTR_PTR_IN()`.
    pub const fn ptr_in(id: u16, p: PtrSpec, mandatory: bool) -> Self {
        Self::new(id, AttrKind::PtrIn(p), mandatory)
    }

    /// upstream: `UVERBS_ATTR_PTR_OUT()`.
    pub const fn ptr_out(id: u16, p: PtrSpec, mandatory: bool) -> Self {
        Self::new(id, AttrKind::PtrOut(p), mandatory)
    }

    /// upstream: `UVERBS_ATTR_CONST_IN()`.
    pub const fn const_in(id: u16, mandatory: bool) -> Self {
        Self::new(id, AttrKind::ConstIn, mandatory)
    }

    /// upstream: `UVERBS_ATTR_FLAGS_IN()`.
    pub const fn flags_in(id: u16, mandatory: bool) -> Self {
        Self::new(id, AttrKind::FlagsIn, mandatory)
    }

    /// upstream: `UVERBS_ATTR_IDR()`.
    pub const fn idr(id: u16, obj_type: u16, access: Access, mandatory: bool) -> Self {
        Self::new(id, AttrKind::Idr { obj_type, access }, mandatory)
    }

    /// upstream: `UVERBS_ATTR_FD()`.
    pub const fn fd(id: u16, obj_type: u16, access: Access, mandatory: bool) -> Self {
        Self::new(id, AttrKind::Fd { obj_type, access }, mandatory)
    }

    /// upstream: `UVERBS_ATTR_RAW_FD()`.
    pub(crate) const fn raw_fd(id: u16, mandatory: bool) -> Self {
        Self::new(id, AttrKind::RawFd, mandatory)
    }

    /// upstream: `UVERBS_ATTR_UMEM()`: a `struct ib_uverbs_buffer_desc`.
    pub(crate) const fn umem(id: u16, mandatory: bool) -> Self {
        Self::ptr_in(id, PtrSpec::ty(32), mandatory)
    }

    /// upstream: the first half of `UVERBS_ATTR_UHW()`.
    pub(crate) const fn uhw_in() -> Self {
        let mut s = Self::ptr_in(ids::UVERBS_ATTR_UHW_IN, PtrSpec::min_size(0), UA_OPTIONAL);
        s.is_udata = true;
        s
    }

    /// upstream: the second half of `UVERBS_ATTR_UHW()`.
    pub(crate) const fn uhw_out() -> Self {
        let mut s = Self::ptr_out(ids::UVERBS_ATTR_UHW_OUT, PtrSpec::min_size(0), UA_OPTIONAL);
        s.is_udata = true;
        s
    }
}

host_only! {
    /// The spec kinds of upstream no method of the module declares yet.
    impl AttrSpec {
        /// upstream: `UVERBS_ATTR_ENUM_IN()`.
        pub(crate) const fn enum_in(id: u16, elems: &'static [AttrKind], mandatory: bool) -> Self {
            Self::new(id, AttrKind::EnumIn(elems), mandatory)
        }

        /// upstream: `UVERBS_ATTR_IDRS_ARR()`.
        pub(crate) const fn idrs_arr(
            id: u16,
            obj_type: u16,
            access: Access,
            min_len: u16,
            max_len: u16,
            mandatory: bool,
        ) -> Self {
            Self::new(
                id,
                AttrKind::IdrsArray {
                    obj_type,
                    access,
                    min_len,
                    max_len,
                },
                mandatory,
            )
        }
    }
}

host_only! {
    /// The device ops a method or object needs (upstream
    /// `UAPI_DEF_OBJ_NEEDS_FN` / `UAPI_DEF_METHOD_NEEDS_FN` name a member of
    /// `struct ib_device_ops`). The kernel side fills a [`DriverOps`] from the
    /// driver trait's `HAS_*` constants.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[repr(u8)]
    pub(crate) enum DriverOp {
        AllocUcontext,
        DeallocUcontext,
        QueryDevice,
        QueryPort,
        AllocPd,
        DeallocPd,
        CreateCq,
        DestroyCq,
        PollCq,
        ReqNotifyCq,
        ResizeUserCq,
        ModifyCq,
        CreateQp,
        DestroyQp,
        ModifyQp,
        QueryQp,
        PostSend,
        PostRecv,
        AttachMcast,
        DetachMcast,
        RegUserMr,
        ReregUserMr,
        DeregMr,
        CreateUserAh,
        DestroyAh,
        AllocMw,
        DeallocMw,
        CreateSrq,
        DestroySrq,
        ModifySrq,
        QuerySrq,
        PostSrqRecv,
        DeallocXrcd,
        AllocDm,
        DeallocDm,
        RegDmMr,
        CreateFlow,
        DestroyFlow,
        CreateWq,
        DestroyWq,
        ModifyWq,
        CreateRwqIndTable,
        DestroyRwqIndTable,
        AllocXrcd,
    }
}

/// The set of [`DriverOp`]s a device implements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DriverOps(u64);

impl DriverOps {
    /// No op.
    pub(crate) const NONE: Self = Self(0);
    /// Every op.
    pub(crate) const ALL: Self = Self(u64::MAX);

    /// This set plus `op`.
    pub(crate) const fn with(self, op: DriverOp) -> Self {
        Self(self.0 | (1u64 << op as u8))
    }

    /// This set minus `op`.
    pub(crate) const fn without(self, op: DriverOp) -> Self {
        Self(self.0 & !(1u64 << op as u8))
    }

    /// Whether `op` is implemented.
    pub(crate) const fn has(self, op: DriverOp) -> bool {
        self.0 & (1u64 << op as u8) != 0
    }

    /// Whether every op of `needs` is implemented.
    pub(crate) fn has_all(self, needs: &[DriverOp]) -> bool {
        needs.iter().all(|op| self.has(*op))
    }
}

/// Handlers of the core methods; the kernel side dispatches on this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CoreHandler {
    InvokeWrite,
    InfoHandles,
    QueryPort,
    GetContext,
    QueryContext,
    QueryGidTable,
    QueryGidEntry,
    CqCreate,
    CqDestroy,
    QpCreate,
    QpDestroy,
    SrqCreate,
    SrqDestroy,
    QueryMr,
    RegMr,
    DmMrReg,
    DmAlloc,
    AsyncEventAlloc,
    /// upstream: `uverbs_destroy_def_handler` (DECLARE_UVERBS_NAMED_METHOD_
    /// DESTROY): the DESTROY attribute does all the work. Never a driver
    /// method, so it survives disassociation.
    DestroyDefault,
}

/// Who implements a method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Handler {
    Core(CoreHandler),
    /// A driver's handler, numbered by the driver.
    Driver(u16),
}

/// upstream: `struct uverbs_method_def` plus its `UAPI_DEF_METHOD_NEEDS_FN`.
#[derive(Clone, Copy, Debug)]
pub struct MethodSpec {
    pub(crate) id: u16,
    pub(crate) attrs: &'static [AttrSpec],
    /// `None`: the spec only adds attributes to a method that an earlier
    /// table defines (upstream `ADD_UVERBS_ATTRIBUTES_SIMPLE`).
    pub(crate) handler: Option<Handler>,
    /// The method is not exposed unless the device has all of these.
    pub(crate) needs: &'static [DriverOp],
}

impl MethodSpec {
    /// A driver method whose handler is the driver's `uverbs_method` op,
    /// called with `handler` (upstream `DECLARE_UVERBS_NAMED_METHOD` in a
    /// driver's `uapi_definition` chain).
    pub const fn driver(id: u16, attrs: &'static [AttrSpec], handler: u16) -> Self {
        MethodSpec {
            id,
            attrs,
            handler: Some(Handler::Driver(handler)),
            needs: &[],
        }
    }

    /// Attributes a driver adds to a method an earlier table defines (upstream
    /// `ADD_UVERBS_ATTRIBUTES_SIMPLE`, e.g. mlx5's outputs of `UVERBS_METHOD_DM_ALLOC`): the
    /// core handler runs and the driver's op reads them.
    pub const fn extend(id: u16, attrs: &'static [AttrSpec]) -> Self {
        MethodSpec {
            id,
            attrs,
            handler: None,
            needs: &[],
        }
    }

    /// A destroy method whose DESTROY attribute does all the work (upstream
    /// `DECLARE_UVERBS_NAMED_METHOD_DESTROY` with `uverbs_destroy_def_handler`).
    pub const fn destroy(id: u16, attrs: &'static [AttrSpec]) -> Self {
        MethodSpec {
            id,
            attrs,
            handler: Some(Handler::Core(CoreHandler::DestroyDefault)),
            needs: &[],
        }
    }
}

impl ObjectSpec {
    /// A driver's object of global methods, with no objects of its own (upstream
    /// `DECLARE_UVERBS_GLOBAL_METHODS`).
    pub const fn driver_global(id: u16, methods: &'static [MethodSpec]) -> Self {
        ObjectSpec {
            id,
            type_class: None,
            methods,
            writes: &[],
            needs: &[],
        }
    }

    /// Methods of a core object a driver extends ([`MethodSpec::extend`]; upstream
    /// `UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_*, ..)` in a driver's chain).
    pub const fn extend(id: u16, methods: &'static [MethodSpec]) -> Self {
        ObjectSpec {
            id,
            type_class: None,
            methods,
            writes: &[],
            needs: &[],
        }
    }

    /// A driver's IDR object type with its methods (upstream
    /// `DECLARE_UVERBS_NAMED_OBJECT(.., UVERBS_IDR_TYPE(..))`); its objects are
    /// what the driver's methods commit, destroyed by dropping them.
    pub const fn driver_idr(id: u16, methods: &'static [MethodSpec]) -> Self {
        ObjectSpec {
            id,
            type_class: Some(TypeClass::Idr),
            methods,
            writes: &[],
            needs: &[],
        }
    }

    /// A driver's fd object type with its methods (upstream
    /// `DECLARE_UVERBS_NAMED_OBJECT(.., UVERBS_TYPE_ALLOC_FD(..))`): its objects are files a
    /// method with a NEW FD attribute makes (the driver's `DriverFdOps`).
    pub const fn driver_fd(id: u16, methods: &'static [MethodSpec]) -> Self {
        ObjectSpec {
            id,
            type_class: Some(TypeClass::Fd),
            methods,
            writes: &[],
            needs: &[],
        }
    }
}

/// The kind of uobject an object type allocates (upstream `type_class`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TypeClass {
    /// upstream: `uverbs_idr_class`.
    Idr,
    /// upstream: `uverbs_fd_class`.
    Fd,
}

/// upstream: `struct uverbs_object_def` plus the object's
/// `DECLARE_UVERBS_WRITE*` and `UAPI_DEF_OBJ_NEEDS_FN` definitions. The same
/// object id may appear in several specs of a table (upstream declares
/// DEVICE once for its ioctl methods and once for its write commands); they
/// are merged.
#[derive(Clone, Copy, Debug)]
pub struct ObjectSpec {
    pub(crate) id: u16,
    pub(crate) type_class: Option<TypeClass>,
    pub(crate) methods: &'static [MethodSpec],
    pub(crate) writes: &'static [WriteCmdSpec],
    /// The object (and everything under it) is not exposed unless the
    /// device has all of these.
    pub(crate) needs: &'static [DriverOp],
}

// upstream: enum uapi_radix_data.
/// upstream: `UVERBS_API_NS_FLAG`.
pub(crate) const UVERBS_API_NS_FLAG: u16 = ids::UVERBS_ID_DRIVER_NS;
/// upstream: `UVERBS_API_ATTR_KEY_BITS`.
pub(crate) const UVERBS_API_ATTR_KEY_BITS: u32 = 6;
host_only! {
    /// upstream: `UVERBS_API_ATTR_KEY_MASK`.
    pub(crate) const UVERBS_API_ATTR_KEY_MASK: u32 = (1 << UVERBS_API_ATTR_KEY_BITS) - 1;
    /// upstream: `UVERBS_API_ATTR_BKEY_LEN`: attribute slots per method (63).
    pub(crate) const UVERBS_API_ATTR_BKEY_LEN: u32 = (1 << UVERBS_API_ATTR_KEY_BITS) - 1;
}
/// upstream: `UVERBS_API_WRITE_KEY_NUM`.
pub(crate) const UVERBS_API_WRITE_KEY_NUM: u32 = 1 << UVERBS_API_ATTR_KEY_BITS;
/// upstream: `UVERBS_API_METHOD_KEY_BITS`.
pub(crate) const UVERBS_API_METHOD_KEY_BITS: u32 = 5;
/// upstream: `UVERBS_API_METHOD_KEY_SHIFT`.
pub(crate) const UVERBS_API_METHOD_KEY_SHIFT: u32 = UVERBS_API_ATTR_KEY_BITS;
/// upstream: `UVERBS_API_METHOD_KEY_NUM_CORE`.
pub(crate) const UVERBS_API_METHOD_KEY_NUM_CORE: u32 = 22;
/// upstream: `UVERBS_API_METHOD_IS_WRITE`.
pub(crate) const UVERBS_API_METHOD_IS_WRITE: u32 = 30 << UVERBS_API_METHOD_KEY_SHIFT;
/// upstream: `UVERBS_API_METHOD_IS_WRITE_EX`.
pub(crate) const UVERBS_API_METHOD_IS_WRITE_EX: u32 = 31 << UVERBS_API_METHOD_KEY_SHIFT;
/// upstream: `UVERBS_API_METHOD_KEY_NUM_DRIVER`.
pub(crate) const UVERBS_API_METHOD_KEY_NUM_DRIVER: u32 =
    (UVERBS_API_METHOD_IS_WRITE >> UVERBS_API_METHOD_KEY_SHIFT) - UVERBS_API_METHOD_KEY_NUM_CORE;
host_only! {
    /// upstream: `UVERBS_API_METHOD_KEY_MASK`.
    pub(crate) const UVERBS_API_METHOD_KEY_MASK: u32 =
        ((1 << UVERBS_API_METHOD_KEY_BITS) - 1) << UVERBS_API_METHOD_KEY_SHIFT;
}
/// upstream: `UVERBS_API_OBJ_KEY_BITS`.
pub(crate) const UVERBS_API_OBJ_KEY_BITS: u32 = 5;
/// upstream: `UVERBS_API_OBJ_KEY_SHIFT`.
pub(crate) const UVERBS_API_OBJ_KEY_SHIFT: u32 =
    UVERBS_API_METHOD_KEY_BITS + UVERBS_API_METHOD_KEY_SHIFT;
/// upstream: `UVERBS_API_OBJ_KEY_NUM_CORE`.
pub(crate) const UVERBS_API_OBJ_KEY_NUM_CORE: u32 = 20;
/// upstream: `UVERBS_API_OBJ_KEY_NUM_DRIVER`.
pub(crate) const UVERBS_API_OBJ_KEY_NUM_DRIVER: u32 =
    (1 << UVERBS_API_OBJ_KEY_BITS) - UVERBS_API_OBJ_KEY_NUM_CORE;
/// upstream: `UVERBS_API_OBJ_KEY_MASK` (`GENMASK(31, OBJ_KEY_SHIFT)`).
pub(crate) const UVERBS_API_OBJ_KEY_MASK: u32 = !((1 << UVERBS_API_OBJ_KEY_SHIFT) - 1);

/// The key of an object; `None` is upstream's `UVERBS_API_KEY_ERR` (the id
/// does not fit: never in the tree).
///
/// upstream: `uapi_key_obj()`.
pub(crate) const fn uapi_key_obj(id: u16) -> Option<u32> {
    let mut id = id as u32;
    if id & UVERBS_API_NS_FLAG as u32 != 0 {
        id &= !(UVERBS_API_NS_FLAG as u32);
        if id >= UVERBS_API_OBJ_KEY_NUM_DRIVER {
            return None;
        }
        id += UVERBS_API_OBJ_KEY_NUM_CORE;
    } else if id >= UVERBS_API_OBJ_KEY_NUM_CORE {
        return None;
    }
    Some(id << UVERBS_API_OBJ_KEY_SHIFT)
}

/// The method part of an ioctl method's key (core ids are shifted by one:
/// method key 0 is the object itself).
///
/// upstream: `uapi_key_ioctl_method()`.
pub(crate) const fn uapi_key_ioctl_method(id: u16) -> Option<u32> {
    let mut id = id as u32;
    if id & UVERBS_API_NS_FLAG as u32 != 0 {
        id &= !(UVERBS_API_NS_FLAG as u32);
        if id >= UVERBS_API_METHOD_KEY_NUM_DRIVER {
            return None;
        }
        id += UVERBS_API_METHOD_KEY_NUM_CORE;
    } else {
        id += 1;
        if id >= UVERBS_API_METHOD_KEY_NUM_CORE {
            return None;
        }
    }
    Some(id << UVERBS_API_METHOD_KEY_SHIFT)
}

/// The attribute part of a key: core and driver ids interleave (core id `n`
/// is `2n + 1`, driver id `0x1000 + n` is `2(n + 1)`), so that a method's
/// typical attributes fit one 64-slot radix node.
///
/// upstream: `uapi_key_attr()`.
pub(crate) const fn uapi_key_attr(id: u16) -> Option<u32> {
    let mut id = id as u32;
    let limit = 1 << (UVERBS_API_ATTR_KEY_BITS - 1);
    if id & UVERBS_API_NS_FLAG as u32 != 0 {
        id &= !(UVERBS_API_NS_FLAG as u32);
        id += 1;
        if id >= limit {
            return None;
        }
        id <<= 1;
    } else {
        if id >= limit {
            return None;
        }
        id = (id << 1) | 1;
    }
    Some(id)
}

host_only! {
    /// The bit index of an attribute key in upstream's `attr_present` bitmaps
    /// (0..63); `attr_key` is a non-zero output of [`uapi_key_attr`].
    ///
    /// upstream: `uapi_bkey_attr()`.
    pub(crate) const fn uapi_bkey_attr(attr_key: u32) -> u32 {
        attr_key.wrapping_sub(1)
    }

    /// upstream: `uapi_key_write_method()`.
    pub(crate) const fn uapi_key_write_method(cmd: u32) -> Option<u32> {
        if cmd >= UVERBS_API_WRITE_KEY_NUM {
            return None;
        }
        Some(UVERBS_API_METHOD_IS_WRITE | cmd)
    }

    /// upstream: `uapi_key_write_ex_method()`.
    pub(crate) const fn uapi_key_write_ex_method(cmd: u32) -> Option<u32> {
        if cmd >= UVERBS_API_WRITE_KEY_NUM {
            return None;
        }
        Some(UVERBS_API_METHOD_IS_WRITE_EX | cmd)
    }

    /// The key of an ioctl method: object key | method key.
    pub(crate) const fn uapi_key_method(object_id: u16, method_id: u16) -> Option<u32> {
        match (uapi_key_obj(object_id), uapi_key_ioctl_method(method_id)) {
            (Some(o), Some(m)) => Some(o | m),
            _ => None,
        }
    }
}

/// One write command (upstream `DECLARE_UVERBS_WRITE{,_EX}` with its
/// `UAPI_DEF_WRITE_*` size description and `UAPI_DEF_METHOD_NEEDS_FN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WriteCmdSpec {
    /// Command number without the extended flag.
    pub(crate) cmd: u32,
    pub(crate) is_ex: bool,
    /// Declared core request size (`sizeof(req)`, or `offsetofend(req,
    /// last)` for `_EX`).
    pub(crate) req_size: u16,
    /// Declared core response size.
    pub(crate) resp_size: u16,
    /// The request and response end in driver data (`UDATA` variants).
    pub(crate) has_udata: bool,
    /// The request starts with `u64 response` (`_IO` variants).
    pub(crate) has_resp: bool,
    pub(crate) needs: &'static [DriverOp],
}

impl WriteCmdSpec {
    /// upstream: `UAPI_DEF_WRITE_UDATA_IO(req, resp)`.
    pub(crate) const fn udata_io(
        cmd: u32,
        req: u16,
        resp: u16,
        needs: &'static [DriverOp],
    ) -> Self {
        Self {
            cmd,
            is_ex: false,
            req_size: req,
            resp_size: resp,
            has_udata: true,
            has_resp: true,
            needs,
        }
    }

    /// upstream: `UAPI_DEF_WRITE_UDATA_I(req)`.
    pub(crate) const fn udata_i(cmd: u32, req: u16, needs: &'static [DriverOp]) -> Self {
        Self {
            cmd,
            is_ex: false,
            req_size: req,
            resp_size: 0,
            has_udata: true,
            has_resp: false,
            needs,
        }
    }

    /// upstream: `UAPI_DEF_WRITE_IO(req, resp)`.
    pub(crate) const fn io(cmd: u32, req: u16, resp: u16, needs: &'static [DriverOp]) -> Self {
        Self {
            cmd,
            is_ex: false,
            req_size: req,
            resp_size: resp,
            has_udata: false,
            has_resp: true,
            needs,
        }
    }

    /// upstream: `UAPI_DEF_WRITE_I(req)`.
    pub(crate) const fn i(cmd: u32, req: u16, needs: &'static [DriverOp]) -> Self {
        Self {
            cmd,
            is_ex: false,
            req_size: req,
            resp_size: 0,
            has_udata: false,
            has_resp: false,
            needs,
        }
    }

    /// upstream: `DECLARE_UVERBS_WRITE_EX` with `UAPI_DEF_WRITE_IO_EX` /
    /// `_I_EX` / `_I`.
    pub(crate) const fn ex(cmd: u32, req: u16, resp: u16, needs: &'static [DriverOp]) -> Self {
        Self {
            cmd,
            is_ex: true,
            req_size: req,
            resp_size: resp,
            has_udata: false,
            has_resp: resp != 0,
            needs,
        }
    }

    /// The command number the handlers dispatch on: with the extended flag for a write_ex
    /// command (as `ib_uverbs_write()` and INVOKE_WRITE both reach the handler).
    pub(crate) const fn command(&self) -> u32 {
        if self.is_ex {
            self.cmd | ids::cmd::FLAG_EXTENDED
        } else {
            self.cmd
        }
    }

    /// The request size `verify_hdr()` and INVOKE_WRITE check against.
    ///
    /// upstream: `uapi_create_write()` copies `req_size`, `resp_size`,
    /// `has_udata` and `has_resp` into the method element only for non-ex
    /// commands, so for write_ex commands the checks compare against 0 and
    /// the handlers (`uverbs_request()`) do the size work. Kept as upstream.
    pub(crate) const fn elm_req_size(&self) -> usize {
        if self.is_ex {
            0
        } else {
            self.req_size as usize
        }
    }

    /// The response size the checks use (see [`Self::elm_req_size`]).
    pub(crate) const fn elm_resp_size(&self) -> usize {
        if self.is_ex {
            0
        } else {
            self.resp_size as usize
        }
    }

    pub(crate) const fn elm_has_udata(&self) -> bool {
        !self.is_ex && self.has_udata
    }

    pub(crate) const fn elm_has_resp(&self) -> bool {
        !self.is_ex && self.has_resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_layout() {
        // Bits 0-5 attribute, 6-10 method, 11+ object.
        assert_eq!(uapi_key_obj(0), Some(0));
        assert_eq!(uapi_key_obj(3), Some(3 << 11));
        assert_eq!(uapi_key_obj(19), Some(19 << 11));
        assert_eq!(uapi_key_obj(20), None);
        assert_eq!(uapi_key_obj(0x1000), Some(20 << 11));
        assert_eq!(uapi_key_obj(0x1000 + 11), Some(31 << 11));
        assert_eq!(uapi_key_obj(0x1000 + 12), None);
        assert_eq!(uapi_key_obj(0x2000), None);
        assert_eq!(uapi_key_ioctl_method(0), Some(1 << 6));
        assert_eq!(uapi_key_ioctl_method(20), Some(21 << 6));
        assert_eq!(uapi_key_ioctl_method(21), None);
        assert_eq!(uapi_key_ioctl_method(0x1000), Some(22 << 6));
        assert_eq!(uapi_key_ioctl_method(0x1000 + 7), Some(29 << 6));
        assert_eq!(uapi_key_ioctl_method(0x1000 + 8), None);
        assert_eq!(uapi_key_attr(0), Some(1));
        assert_eq!(uapi_key_attr(1), Some(3));
        assert_eq!(uapi_key_attr(31), Some(63));
        assert_eq!(uapi_key_attr(32), None);
        assert_eq!(uapi_key_attr(ids::UVERBS_ATTR_UHW_IN), Some(2));
        assert_eq!(uapi_key_attr(ids::UVERBS_ATTR_UHW_OUT), Some(4));
        assert_eq!(uapi_key_attr(0x1000 + 30), Some(62));
        assert_eq!(uapi_key_attr(0x1000 + 31), None);
        assert_eq!(uapi_bkey_attr(1), 0);
        assert_eq!(uapi_bkey_attr(63), 62);
        assert_eq!(uapi_key_write_method(63), Some((30 << 6) | 63));
        assert_eq!(uapi_key_write_method(64), None);
        assert_eq!(uapi_key_write_ex_method(3), Some((31 << 6) | 3));
        assert_eq!(UVERBS_API_METHOD_KEY_NUM_DRIVER, 8);
        assert_eq!(UVERBS_API_OBJ_KEY_NUM_DRIVER, 12);
        assert_eq!(UVERBS_API_METHOD_KEY_MASK, 0x7c0);
        assert_eq!(UVERBS_API_OBJ_KEY_MASK, 0xffff_f800);
        // Object + method keys are distinct from the write keys.
        let k = uapi_key_method(ids::obj::DEVICE, 0x1000 + 7);
        assert_eq!(k, Some(29 << 6));
    }

    #[test]
    fn const_and_flags_sizes() {
        assert_eq!(
            AttrKind::ConstIn.ptr(),
            Some((PtrDir::In, PtrSpec::size(8, 8)))
        );
        assert_eq!(
            AttrKind::FlagsIn.ptr(),
            Some((PtrDir::In, PtrSpec::size(4, 8)))
        );
        assert_eq!(AttrKind::RawFd.ptr(), None);
    }

    #[test]
    fn driver_ops_set() {
        let ops = DriverOps::NONE
            .with(DriverOp::AllocPd)
            .with(DriverOp::DestroyRwqIndTable);
        assert!(ops.has(DriverOp::AllocPd));
        assert!(ops.has(DriverOp::DestroyRwqIndTable));
        assert!(!ops.has(DriverOp::DeallocPd));
        assert!(ops.has_all(&[DriverOp::AllocPd]));
        assert!(!ops.has_all(&[DriverOp::AllocPd, DriverOp::QueryPort]));
        assert!(!DriverOps::ALL
            .without(DriverOp::QueryPort)
            .has(DriverOp::QueryPort));
    }
}
