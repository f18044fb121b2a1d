// SPDX-License-Identifier: GPL-2.0

//! Subdirectories of a class device: kobjects whose files are `'static` [`DirAttr`]s or
//! attributes built at run time (indexed or named files).

use super::attr::{attr, build_group, emit, CGroup, Decimal, SysfsBuf};
use kernel::{bindings, ffi::c_char, prelude::*, types::Opaque};

/// A `show` over a class device's data and the index of the subdirectory holding the file.
pub(crate) type DirShowFn<T> = fn(&T, u32, &mut SysfsBuf<'_>) -> Result;

/// A read-only attribute in a subdirectory of a class device, declared as a `static`; its
/// `show` also gets the subdirectory's index (the port number of `ports/N/`).
#[repr(C)]
pub(crate) struct DirAttr<T: 'static> {
    pub(super) raw: Opaque<bindings::attribute>,
    show: DirShowFn<T>,
}

// SAFETY: as `DevAttr`.
unsafe impl<T> Sync for DirAttr<T> {}

impl<T: 'static> DirAttr<T> {
    /// A 0444 attribute `name`.
    pub(crate) const fn ro(name: &'static CStr, show: DirShowFn<T>) -> Self {
        Self {
            raw: Opaque::new(attr(name, 0o444)),
            show,
        }
    }
}

/// The files of a subdirectory ([`Dir`]): how their group is built and a read is answered.
pub(super) trait DirFiles<T: 'static>: Sized + 'static {
    /// The group of the files.
    fn group(&self) -> Result<KBox<CGroup>>;

    /// Shows file `attr` of the directory with index `index` over `data`.
    ///
    /// # Safety
    ///
    /// `attr` is an attribute of a group built by [`DirFiles::group`] of `self`.
    unsafe fn show(
        &self,
        data: &T,
        index: u32,
        attr: *mut bindings::attribute,
        b: &mut SysfsBuf<'_>,
    ) -> Result;
}

/// The files of [`ClassDevice::add_dir`](super::ClassDevice::add_dir): `'static` [`DirAttr`]s.
pub(super) struct StaticFiles<T: 'static>(pub(super) &'static [&'static DirAttr<T>]);

impl<T: 'static> DirFiles<T> for StaticFiles<T> {
    fn group(&self) -> Result<KBox<CGroup>> {
        build_group(None, self.0.iter().map(|a| a.raw.get()))
    }

    unsafe fn show(
        &self,
        data: &T,
        index: u32,
        attr: *mut bindings::attribute,
        b: &mut SysfsBuf<'_>,
    ) -> Result {
        // SAFETY: `attr` is the first field of one of our `'static` `DirAttr<T>`s (function
        // safety requirement).
        let a = unsafe { &*attr.cast::<DirAttr<T>>() };
        (a.show)(data, index, b)
    }
}

/// A subdirectory of a class device: a kobject with attribute files.
#[repr(C)]
pub(super) struct Dir<T: 'static, F: DirFiles<T>> {
    pub(super) kobj: Opaque<bindings::kobject>,
    pub(super) data: *const T,
    pub(super) index: u32,
    pub(super) group: KBox<CGroup>,
    pub(super) files: F,
}

impl<T: 'static, F: DirFiles<T>> Dir<T, F> {
    const SYSFS_OPS: bindings::sysfs_ops = bindings::sysfs_ops {
        show: Some(Self::show),
        store: None,
    };

    const KTYPE: bindings::kobj_type = {
        // SAFETY: all-zero is a valid `kobj_type`.
        let mut t: bindings::kobj_type = unsafe { core::mem::zeroed() };
        t.release = Some(Self::release);
        t.sysfs_ops = &Self::SYSFS_OPS;
        t
    };

    pub(super) const fn ktype() -> &'static bindings::kobj_type {
        &Self::KTYPE
    }

    /// # Safety
    ///
    /// Called by sysfs for a file of a `Dir<T, F>`, whose attributes are those of its `group`.
    pub(super) unsafe extern "C" fn show(
        kobj: *mut bindings::kobject,
        attr: *mut bindings::attribute,
        buf: *mut c_char,
    ) -> isize {
        // SAFETY: `kobj` is the first field of a live `Dir<T, F>`; its `data` is valid while its
        // files exist (the device is deleted only after its directories, see
        // `ClassDevice`'s `drop`).
        let dir = unsafe { &*kobj.cast::<Self>() };
        // SAFETY: as above.
        let data = unsafe { &*dir.data };
        // SAFETY: sysfs `show` contract; `attr` is a file of `dir.group`, which was built by
        // `dir.files.group()`.
        unsafe { emit(buf, |b| dir.files.show(data, dir.index, attr, b)) }
    }

    /// # Safety
    ///
    /// Called once by the kobject core after the last `kobject_put()`.
    unsafe extern "C" fn release(kobj: *mut bindings::kobject) {
        // SAFETY: `kobj` is the first field of a `Dir<T, F>` from `KBox::into_raw`.
        drop(unsafe { KBox::from_raw(kobj.cast::<Self>()) });
    }
}

/// The name of file `i` of an indexed directory: decimal, NUL-terminated.
fn index_name(i: u32) -> [u8; 12] {
    let d = Decimal::new(i);
    let mut out = [0u8; 12];
    out[..d.as_bytes().len()].copy_from_slice(d.as_bytes());
    out
}

/// A `show` of an indexed directory's file: the device's data, the directory's index (the
/// port) and the file's index (the GID or P_Key table entry).
pub(crate) type IndexedShowFn<T> = fn(&T, u32, u32, &mut SysfsBuf<'_>) -> Result;

/// One run-time attribute of [`IndexedFiles`]: `raw.name` points to `name`.
#[repr(C)]
struct IndexedAttr {
    raw: Opaque<bindings::attribute>,
    index: u32,
    name: [u8; 12],
    /// A name of its own ([`IndexedFiles::named`]) instead of the index.
    named: Option<&'static CStr>,
}

impl IndexedAttr {
    /// File `index`, named `named` or, without one, by its index.
    fn new(index: u32, named: Option<&'static CStr>) -> Self {
        IndexedAttr {
            raw: Opaque::zeroed(),
            index,
            name: if named.is_some() {
                [0; 12]
            } else {
                index_name(index)
            },
            named,
        }
    }
}

/// The files of [`ClassDevice::add_indexed_dir`](super::ClassDevice::add_indexed_dir) (named
/// by their index: `gids/0`, `gids/1`, ...) and
/// [`ClassDevice::add_named_dir`](super::ClassDevice::add_named_dir), all shown by `show`.
pub(super) struct IndexedFiles<T: 'static> {
    show: IndexedShowFn<T>,
    attrs: KVec<IndexedAttr>,
}

impl<T: 'static> IndexedFiles<T> {
    /// `count` files named `0` .. `count - 1`.
    pub(super) fn numbered(count: u32, show: IndexedShowFn<T>) -> Result<Self> {
        // The attributes point to their own names: the vector is allocated once with its final
        // length and never grows, so the elements do not move.
        let mut attrs = KVec::with_capacity(count as usize, GFP_KERNEL)?;
        for i in 0..count {
            attrs.push(IndexedAttr::new(i, None), GFP_KERNEL)?;
        }
        Ok(IndexedFiles::init(
            show,
            attrs,
            kernel::static_lock_class!(),
        ))
    }

    /// One file per entry of `names`; file `names[i]` has index `i`.
    pub(super) fn named(names: &[&'static CStr], show: IndexedShowFn<T>) -> Result<Self> {
        let mut attrs = KVec::with_capacity(names.len(), GFP_KERNEL)?;
        for (i, n) in names.iter().enumerate() {
            attrs.push(IndexedAttr::new(u32::try_from(i)?, Some(n)), GFP_KERNEL)?;
        }
        Ok(IndexedFiles::init(
            show,
            attrs,
            kernel::static_lock_class!(),
        ))
    }

    /// Points each attribute at its name, mode 0444. `attrs` was allocated with its final
    /// length and never grows, so the elements (and the index names inside them) do not move.
    fn init(
        show: IndexedShowFn<T>,
        attrs: KVec<IndexedAttr>,
        key: Pin<&'static kernel::sync::LockClassKey>,
    ) -> Self {
        for a in attrs.iter() {
            let name: *const u8 = match a.named {
                Some(n) => n.as_char_ptr().cast(),
                None => a.name.as_ptr(),
            };
            // SAFETY: `a` is ours and does not move (see above); the name is NUL-terminated
            // and lives as long as the attribute (in it, or static).
            unsafe {
                let r = a.raw.get();
                (*r).name = name.cast();
                (*r).mode = 0o444;
                // upstream sysfs_attr_init(): attributes not in static memory need a
                // static key.
                #[cfg(CONFIG_DEBUG_LOCK_ALLOC)]
                {
                    (*r).key = key.as_ptr();
                }
            }
        }
        #[cfg(not(CONFIG_DEBUG_LOCK_ALLOC))]
        let _ = key;
        IndexedFiles { show, attrs }
    }
}

impl<T: 'static> DirFiles<T> for IndexedFiles<T> {
    fn group(&self) -> Result<KBox<CGroup>> {
        build_group(None, self.attrs.iter().map(|a| a.raw.get()))
    }

    unsafe fn show(
        &self,
        data: &T,
        index: u32,
        attr: *mut bindings::attribute,
        b: &mut SysfsBuf<'_>,
    ) -> Result {
        // SAFETY: `attr` is the first field of one of `self.attrs` (function safety
        // requirement).
        let a = unsafe { &*attr.cast::<IndexedAttr>() };
        (self.show)(data, index, a.index, b)
    }
}
