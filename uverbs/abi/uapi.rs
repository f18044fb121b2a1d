// SPDX-License-Identifier: GPL-2.0

//! The merged uapi: the core spec tables and a driver's spec tables merged,
//! validated and pruned ONCE per device into a lookup structure.
//!
//! upstream: `uverbs_alloc_api()` (uverbs_uapi.c) builds a radix tree keyed
//! by `uapi_key_*()`. Here the tree is two fixed-capacity arrays sorted by
//! the same keys (binary search) plus two 64-entry write command tables:
//!
//! * objects: [`MAX_OBJECTS`] = 32, the whole object key space (5 bits:
//!   20 core + 12 driver ids), so it can never overflow;
//! * methods: [`MAX_METHODS`] = 128. Upstream core declares about 70 ioctl
//!   methods and mlx5 about 60 more; the tables this project implements are
//!   far below that. Exceeding it is `ENOMEM` at build time (the analogue of
//!   upstream's `kzalloc()` failure), never at ioctl time;
//! * attributes are not copied: a method entry points at its (static) spec
//!   and at most one driver extension, and an attribute's index in the
//!   bundle is its position in `base.attrs ++ ext.attrs`, bounded by
//!   [`MAX_METHOD_ATTRS`] = 32 (upstream's largest method, QP_CREATE, has
//!   20 including UHW).
//!
//! The structure is about 7 KiB: the kernel side allocates it once per
//! device (`KBox`) and fills it with [`UapiTree::build_in`], never on the
//! stack.

use super::ids::UVERBS_IDR_ANY_OBJECT;
use super::ioctl::PAGE_SIZE;
use super::spec::{
    uapi_key_attr, uapi_key_ioctl_method, uapi_key_obj, Access, AttrKind, AttrSpec, CoreHandler,
    DriverOps, Handler, MethodSpec, ObjectSpec, TypeClass, WriteCmdSpec, UVERBS_API_WRITE_KEY_NUM,
};
use super::Errno;

/// Object capacity: the object key space.
pub(crate) const MAX_OBJECTS: usize = 32;
/// Ioctl method capacity.
pub(crate) const MAX_METHODS: usize = 128;
/// Attributes per method (core spec + driver extension).
pub(crate) const MAX_METHOD_ATTRS: usize = 32;
/// Write commands per kind (`UVERBS_API_WRITE_KEY_NUM`).
const WRITE_SLOTS: usize = UVERBS_API_WRITE_KEY_NUM as usize;

/// upstream: `struct uverbs_api_object`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ObjectEntry {
    pub(crate) key: u32,
    #[cfg_attr(MODULE, expect(dead_code, reason = "used by the host tests only"))]
    pub(crate) id: u16,
    pub(crate) type_class: Option<TypeClass>,
    disabled: bool,
}

/// upstream: `struct uverbs_api_ioctl_method` (after
/// `uapi_finalize_ioctl_method()`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct MethodEntry {
    pub(crate) key: u32,
    pub(crate) object_id: u16,
    pub(crate) method_id: u16,
    base: &'static MethodSpec,
    ext: Option<&'static MethodSpec>,
    pub(crate) handler: Handler,
    /// The handler lives in the driver module: after disassociation the
    /// method fails with `EIO` (upstream `driver_method`).
    pub(crate) driver_method: bool,
    /// Bit `i` set: attribute index `i` is mandatory.
    pub(crate) mandatory: u64,
    /// The method has `UVERBS_ATTR_UHW()`.
    pub(crate) has_udata: bool,
    /// Index of the `UVERBS_ACCESS_DESTROY` attribute, if any.
    pub(crate) destroy_idx: Option<u8>,
    disabled: bool,
}

impl MethodEntry {
    /// Number of attribute specs (bundle slots used).
    pub(crate) fn num_attrs(&self) -> usize {
        self.base.attrs.len() + self.ext.map_or(0, |e| e.attrs.len())
    }

    /// The spec at attribute index `idx`.
    pub(crate) fn attr(&self, idx: usize) -> Option<&'static AttrSpec> {
        let n = self.base.attrs.len();
        if idx < n {
            self.base.attrs.get(idx)
        } else {
            self.ext.and_then(|e| e.attrs.get(idx - n))
        }
    }

    /// The attribute index of the spec whose key is `attr_key`.
    ///
    /// upstream: `uapi_get_attr_for_method()`.
    pub(crate) fn attr_index_by_key(&self, attr_key: u32) -> Option<usize> {
        (0..self.num_attrs()).find(|i| {
            self.attr(*i)
                .is_some_and(|a| uapi_key_attr(a.id) == Some(attr_key))
        })
    }

    /// The attribute index of attribute `id` (handlers' `uverbs_attr_get()`
    /// view).
    pub(crate) fn attr_index(&self, id: u16) -> Option<usize> {
        uapi_key_attr(id).and_then(|k| self.attr_index_by_key(k))
    }

    fn attrs(&self) -> impl Iterator<Item = &'static AttrSpec> + '_ {
        (0..self.num_attrs()).filter_map(|i| self.attr(i))
    }
}

/// What a command number resolves to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteMethod {
    /// A supported command.
    Cmd(&'static WriteCmdSpec),
    /// In range but not supported by this device: upstream's
    /// `notsupp_method` (non-ex, sizes 0, handler returns `EOPNOTSUPP`).
    NotSupp,
}

impl WriteMethod {
    pub(crate) fn is_ex(&self) -> bool {
        matches!(self, WriteMethod::Cmd(c) if c.is_ex)
    }
    pub(crate) fn req_size(&self) -> usize {
        match self {
            WriteMethod::Cmd(c) => c.elm_req_size(),
            WriteMethod::NotSupp => 0,
        }
    }
    pub(crate) fn resp_size(&self) -> usize {
        match self {
            WriteMethod::Cmd(c) => c.elm_resp_size(),
            WriteMethod::NotSupp => 0,
        }
    }
    pub(crate) fn has_udata(&self) -> bool {
        matches!(self, WriteMethod::Cmd(c) if c.elm_has_udata())
    }
    pub(crate) fn has_resp(&self) -> bool {
        matches!(self, WriteMethod::Cmd(c) if c.elm_has_resp())
    }
}

#[derive(Clone, Copy, Debug)]
struct WriteSlot {
    spec: &'static WriteCmdSpec,
    object_key: u32,
    disabled: bool,
}

/// What the tree needs to know about the device.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeviceDesc {
    /// `ib_device_ops.driver_id` (`enum rdma_driver_id`, mlx5 = 1).
    pub(crate) driver_id: u32,
    /// The ops the driver implements.
    pub(crate) ops: DriverOps,
    /// `ib_device.uverbs_cmd_mask`: non-ex write commands not in it are not
    /// exposed.
    pub(crate) uverbs_cmd_mask: u64,
}

/// The merged, validated lookup structure of one device.
///
/// upstream: `struct uverbs_api`.
#[derive(Debug)]
pub(crate) struct UapiTree {
    driver_id: u32,
    disassociated: bool,
    objects: [Option<ObjectEntry>; MAX_OBJECTS],
    num_objects: usize,
    methods: [Option<MethodEntry>; MAX_METHODS],
    num_methods: usize,
    write: [Option<WriteSlot>; WRITE_SLOTS],
    write_ex: [Option<WriteSlot>; WRITE_SLOTS],
    num_write: u32,
    num_write_ex: u32,
}

impl UapiTree {
    /// An empty tree (nothing is supported).
    pub(crate) const EMPTY: Self = Self {
        driver_id: 0,
        disassociated: false,
        objects: [None; MAX_OBJECTS],
        num_objects: 0,
        methods: [None; MAX_METHODS],
        num_methods: 0,
        write: [None; WRITE_SLOTS],
        write_ex: [None; WRITE_SLOTS],
        num_write: 0,
        num_write_ex: 0,
    };

    /// Builds a tree by value (host tests; the kernel uses
    /// [`Self::build_in`] on a heap allocation).
    #[cfg_attr(MODULE, expect(dead_code, reason = "used by the host tests only"))]
    pub(crate) fn build(
        core: &[&'static [ObjectSpec]],
        driver: &[&'static [ObjectSpec]],
        dev: &DeviceDesc,
    ) -> Result<Self, Errno> {
        let mut t = Self::EMPTY;
        t.build_in(core, driver, dev)?;
        Ok(t)
    }

    /// Merges the core tables, then the driver tables, prunes what the
    /// device cannot support and finalizes every method.
    ///
    /// upstream: `uverbs_alloc_api()`.
    ///
    /// # Errors
    ///
    /// * `EOVERFLOW`: an id outside the key space (`UVERBS_API_KEY_ERR`).
    /// * `EEXIST`: an attribute id twice in a method, or a write command
    ///   declared twice.
    /// * `EINVAL`: a method defined twice with a handler, an extension of a
    ///   method nobody defines (or a second extension), two type classes
    ///   for one object, a bad size spec (`min_len > len`; IDRS_ARRAY with
    ///   `min_len == 0`, `max_len > PAGE_SIZE / 8` or `min_len > max_len`),
    ///   an IDRS_ARRAY with NEW/DESTROY access, an FD attribute with access
    ///   other than NEW/READ, an ENUM_IN of more than 255 elements, two
    ///   NEW/DESTROY attributes in a method, or an optional NEW/DESTROY.
    /// * `ENOMEM`: more than [`MAX_METHODS`] methods or more than
    ///   [`MAX_METHOD_ATTRS`] attributes in a method.
    pub(crate) fn build_in(
        &mut self,
        core: &[&'static [ObjectSpec]],
        driver: &[&'static [ObjectSpec]],
        dev: &DeviceDesc,
    ) -> Result<(), Errno> {
        *self = Self::EMPTY;
        self.driver_id = dev.driver_id;
        for table in core {
            self.merge(table, false, dev)?;
        }
        for table in driver {
            self.merge(table, true, dev)?;
        }
        self.finalize_disable();
        self.finalize()
    }

    /// The device's driver id (upstream `uapi->driver_id`).
    pub(crate) fn driver_id(&self) -> u32 {
        self.driver_id
    }

    /// Marks the device disassociated: driver methods lose their handler.
    ///
    /// upstream: `uverbs_disassociate_api_pre()`.
    #[cfg_attr(MODULE, expect(dead_code, reason = "used by the host tests only"))]
    pub(crate) fn disassociate(&mut self) {
        self.disassociated = true;
    }

    /// Whether [`Self::disassociate`] ran.
    pub(crate) fn is_disassociated(&self) -> bool {
        self.disassociated
    }

    fn object_pos(&self, key: u32) -> Result<usize, usize> {
        let live = self.objects.get(..self.num_objects).unwrap_or(&[]);
        live.binary_search_by_key(&key, |o| o.map_or(u32::MAX, |o| o.key))
    }

    fn method_pos(&self, key: u32) -> Result<usize, usize> {
        let live = self.methods.get(..self.num_methods).unwrap_or(&[]);
        live.binary_search_by_key(&key, |m| m.map_or(u32::MAX, |m| m.key))
    }

    /// The object `id`, if exposed.
    ///
    /// upstream: `uapi_get_object()`.
    pub(crate) fn object(&self, id: u16) -> Option<&ObjectEntry> {
        let key = uapi_key_obj(id)?;
        let pos = self.object_pos(key).ok()?;
        self.objects.get(pos)?.as_ref()
    }

    /// The ioctl method `(object_id, method_id)`.
    ///
    /// # Errors
    ///
    /// `EPROTONOSUPPORT` if the tree does not have it (upstream:
    /// `radix_tree_iter_lookup()` in `ib_uverbs_cmd_verbs()`).
    pub(crate) fn method(&self, object_id: u16, method_id: u16) -> Result<&MethodEntry, Errno> {
        let key = match (uapi_key_obj(object_id), uapi_key_ioctl_method(method_id)) {
            (Some(o), Some(m)) => o | m,
            _ => return Err(Errno::EPROTONOSUPPORT),
        };
        let pos = self.method_pos(key).map_err(|_| Errno::EPROTONOSUPPORT)?;
        self.methods
            .get(pos)
            .and_then(|m| m.as_ref())
            .ok_or(Errno::EPROTONOSUPPORT)
    }

    /// Every exposed ioctl method, in key order.
    pub(crate) fn methods(&self) -> impl Iterator<Item = &MethodEntry> + '_ {
        self.methods
            .get(..self.num_methods)
            .unwrap_or(&[])
            .iter()
            .filter_map(|m| m.as_ref())
    }

    /// Resolves a write command number.
    ///
    /// upstream: `uapi_get_method()`.
    ///
    /// # Errors
    ///
    /// `EINVAL` for bits outside `FLAG_EXTENDED | COMMAND_MASK`,
    /// `EOPNOTSUPP` past the highest supported command of its kind.
    pub(crate) fn write_method(&self, command: u32) -> Result<WriteMethod, Errno> {
        use super::ids::cmd::{COMMAND_MASK, FLAG_EXTENDED};
        let idx = command & COMMAND_MASK;
        if command & !(FLAG_EXTENDED | COMMAND_MASK) != 0 {
            return Err(Errno::EINVAL);
        }
        let (table, num) = if command & FLAG_EXTENDED != 0 {
            (&self.write_ex, self.num_write_ex)
        } else {
            (&self.write, self.num_write)
        };
        if idx >= num {
            return Err(Errno::EOPNOTSUPP);
        }
        Ok(match table.get(idx as usize).copied().flatten() {
            Some(slot) => WriteMethod::Cmd(slot.spec),
            None => WriteMethod::NotSupp,
        })
    }

    fn merge(
        &mut self,
        table: &'static [ObjectSpec],
        is_driver: bool,
        dev: &DeviceDesc,
    ) -> Result<(), Errno> {
        for obj in table {
            let okey = uapi_key_obj(obj.id).ok_or(Errno::EOVERFLOW)?;
            let opos = match self.object_pos(okey) {
                Ok(p) => p,
                Err(p) => {
                    insert_at(&mut self.objects, &mut self.num_objects, p)?;
                    if let Some(slot) = self.objects.get_mut(p) {
                        *slot = Some(ObjectEntry {
                            key: okey,
                            id: obj.id,
                            type_class: None,
                            disabled: false,
                        });
                    }
                    p
                }
            };
            let o = self
                .objects
                .get_mut(opos)
                .and_then(|o| o.as_mut())
                .ok_or(Errno::EINVAL)?;
            if let Some(tc) = obj.type_class {
                if o.type_class.is_some() {
                    return Err(Errno::EINVAL);
                }
                o.type_class = Some(tc);
            }
            // upstream: UAPI_DEF_OBJ_NEEDS_FN -> uapi_disable_elm()
            if !dev.ops.has_all(obj.needs) {
                o.disabled = true;
            }

            for w in obj.writes {
                self.merge_write(w, okey, dev)?;
            }
            for m in obj.methods {
                self.merge_method(obj.id, okey, m, is_driver, dev)?;
            }
        }
        Ok(())
    }

    /// upstream: `uapi_create_write()`.
    fn merge_write(
        &mut self,
        w: &'static WriteCmdSpec,
        object_key: u32,
        dev: &DeviceDesc,
    ) -> Result<(), Errno> {
        if w.cmd >= UVERBS_API_WRITE_KEY_NUM {
            return Err(Errno::EOVERFLOW);
        }
        let table = if w.is_ex {
            &mut self.write_ex
        } else {
            &mut self.write
        };
        let slot = table.get_mut(w.cmd as usize).ok_or(Errno::EOVERFLOW)?;
        if slot.is_some() {
            return Err(Errno::EEXIST);
        }
        let masked = !w.is_ex && dev.uverbs_cmd_mask & (1u64 << w.cmd) == 0;
        *slot = Some(WriteSlot {
            spec: w,
            object_key,
            disabled: masked || !dev.ops.has_all(w.needs),
        });
        Ok(())
    }

    /// upstream: `uapi_merge_method()`.
    fn merge_method(
        &mut self,
        object_id: u16,
        okey: u32,
        m: &'static MethodSpec,
        is_driver: bool,
        dev: &DeviceDesc,
    ) -> Result<(), Errno> {
        let mkey = okey | uapi_key_ioctl_method(m.id).ok_or(Errno::EOVERFLOW)?;
        let pos = match (self.method_pos(mkey), m.handler) {
            // A second definition with a handler.
            (Ok(_), Some(_)) => return Err(Errno::EINVAL),
            (Ok(p), None) => {
                let e = self
                    .methods
                    .get_mut(p)
                    .and_then(|e| e.as_mut())
                    .ok_or(Errno::EINVAL)?;
                if e.ext.is_some() {
                    return Err(Errno::EINVAL);
                }
                e.ext = Some(m);
                p
            }
            (Err(p), Some(handler)) => {
                insert_at(&mut self.methods, &mut self.num_methods, p)?;
                if let Some(slot) = self.methods.get_mut(p) {
                    *slot = Some(MethodEntry {
                        key: mkey,
                        object_id,
                        method_id: m.id,
                        base: m,
                        ext: None,
                        handler,
                        driver_method: is_driver
                            && handler != Handler::Core(CoreHandler::DestroyDefault),
                        mandatory: 0,
                        has_udata: false,
                        destroy_idx: None,
                        disabled: false,
                    });
                }
                p
            }
            // Attributes for a method nobody defines: upstream creates a
            // method without a handler (WARN_ON); refuse instead.
            (Err(_), None) => return Err(Errno::EINVAL),
        };
        let e = self
            .methods
            .get_mut(pos)
            .and_then(|e| e.as_mut())
            .ok_or(Errno::EINVAL)?;
        if e.num_attrs() > MAX_METHOD_ATTRS {
            return Err(Errno::ENOMEM);
        }
        if !dev.ops.has_all(m.needs) {
            e.disabled = true;
        }
        for a in m.attrs {
            validate_attr(a)?;
            // ENUM_IN points into the driver's .rodata.
            if is_driver && matches!(a.kind, AttrKind::EnumIn(_)) {
                e.driver_method = true;
            }
        }
        // Attributes may not be redefined (radix_tree_insert: EEXIST).
        for i in 0..e.num_attrs() {
            let ki = e.attr(i).and_then(|a| uapi_key_attr(a.id));
            for j in 0..i {
                if e.attr(j).and_then(|a| uapi_key_attr(a.id)) == ki {
                    return Err(Errno::EEXIST);
                }
            }
        }
        Ok(())
    }

    /// Removes disabled objects (with their methods and write commands),
    /// disabled methods and write commands, and methods with a mandatory
    /// object attribute whose object type is not exposed.
    ///
    /// upstream: `uapi_finalize_disable()`.
    fn finalize_disable(&mut self) {
        let objects = self.objects;
        let num_objects = self.num_objects;
        let live_objects = objects.get(..num_objects).unwrap_or(&[]);
        let obj_disabled = |key: u32| {
            live_objects
                .iter()
                .flatten()
                .any(|o| o.disabled && o.key == key)
        };

        for table in [&mut self.write, &mut self.write_ex] {
            for slot in table.iter_mut() {
                if slot.is_some_and(|w| w.disabled || obj_disabled(w.object_key)) {
                    *slot = None;
                }
            }
        }

        let obj_mask = super::spec::UVERBS_API_OBJ_KEY_MASK;
        let exposed = |id: u16| {
            uapi_key_obj(id).is_some_and(|k| {
                live_objects
                    .iter()
                    .flatten()
                    .any(|o| o.key == k && !o.disabled)
            })
        };
        for slot in self.methods.iter_mut() {
            let Some(m) = slot else { continue };
            let orphan = m.attrs().any(|a| {
                a.mandatory
                    && a.kind
                        .obj_type()
                        .is_some_and(|t| t != UVERBS_IDR_ANY_OBJECT && !exposed(t))
            });
            if m.disabled || obj_disabled(m.key & obj_mask) || orphan {
                *slot = None;
            }
        }
        compact(&mut self.methods, &mut self.num_methods);

        for slot in self.objects.iter_mut() {
            if slot.is_some_and(|o| o.disabled) {
                *slot = None;
            }
        }
        compact(&mut self.objects, &mut self.num_objects);
    }

    /// upstream: `uapi_finalize()` / `uapi_finalize_ioctl_method()`.
    fn finalize(&mut self) -> Result<(), Errno> {
        for m in self.methods.iter_mut().flatten() {
            let mut single_uobj = false;
            let mut mandatory = 0u64;
            let mut has_udata = false;
            let mut destroy_idx = None;
            for i in 0..m.num_attrs() {
                let Some(a) = m.attr(i) else { continue };
                if a.mandatory {
                    mandatory |= 1u64 << i;
                }
                has_udata |= a.is_udata;
                if let AttrKind::Idr { access, .. } | AttrKind::Fd { access, .. } = a.kind {
                    if matches!(access, Access::New | Access::Destroy) {
                        if single_uobj || !a.mandatory {
                            return Err(Errno::EINVAL);
                        }
                        single_uobj = true;
                    }
                    if access == Access::Destroy {
                        destroy_idx = u8::try_from(i).ok();
                    }
                }
            }
            m.mandatory = mandatory;
            m.has_udata = has_udata;
            m.destroy_idx = destroy_idx;
        }
        let max = |t: &[Option<WriteSlot>; WRITE_SLOTS]| {
            t.iter()
                .enumerate()
                .filter(|(_, s)| s.is_some())
                .map(|(i, _)| i as u32)
                .max()
                .unwrap_or(0)
        };
        self.num_write = max(&self.write) + 1;
        self.num_write_ex = max(&self.write_ex) + 1;
        Ok(())
    }
}

/// Build-time checks of one attribute spec (upstream's `BUILD_BUG_ON_ZERO`s
/// and `WARN_ON`s, plus `min_len <= len`).
fn validate_attr(a: &AttrSpec) -> Result<(), Errno> {
    if uapi_key_attr(a.id).is_none() {
        return Err(Errno::EOVERFLOW);
    }
    if let Some((_, p)) = a.kind.ptr() {
        if p.min_len > p.len {
            return Err(Errno::EINVAL);
        }
    }
    let bad = match a.kind {
        AttrKind::IdrsArray {
            access,
            min_len,
            max_len,
            ..
        } => {
            min_len == 0
                || usize::from(max_len) > PAGE_SIZE / 8
                || min_len > max_len
                || matches!(access, Access::New | Access::Destroy)
        }
        AttrKind::Fd { access, .. } => !matches!(access, Access::New | Access::Read),
        AttrKind::EnumIn(elems) => elems.len() > usize::from(u8::MAX),
        _ => false,
    };
    if bad {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Opens a `None` slot at `pos` of the sorted prefix `arr[..*len]`.
fn insert_at<T: Copy, const N: usize>(
    arr: &mut [Option<T>; N],
    len: &mut usize,
    pos: usize,
) -> Result<(), Errno> {
    if *len >= N || pos > *len {
        return Err(Errno::ENOMEM);
    }
    if let Some(s) = arr.get_mut(pos..=*len) {
        s.rotate_right(1);
    }
    if let Some(slot) = arr.get_mut(pos) {
        *slot = None;
    }
    *len += 1;
    Ok(())
}

/// Squeezes the `None`s out of `arr[..*len]`, keeping the order.
fn compact<T: Copy, const N: usize>(arr: &mut [Option<T>; N], len: &mut usize) {
    let mut w = 0;
    for r in 0..(*len).min(N) {
        let v = arr.get(r).copied().flatten();
        if let Some(v) = v {
            if let Some(slot) = arr.get_mut(w) {
                *slot = Some(v);
            }
            w += 1;
        }
    }
    for slot in arr.iter_mut().skip(w) {
        *slot = None;
    }
    *len = w;
}
