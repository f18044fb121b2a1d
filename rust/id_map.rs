// SPDX-License-Identifier: GPL-2.0

//! A map from integer indices to owned values on an XArray (`xa_store()`, `xa_erase()`,
//! `xa_load()`, `xa_find()`), with the in-order walk that 7.3's `kernel::xarray::XArray` does
//! not offer (its iterator is private).
//!
//! Upstream's restrack keeps one XArray per resource type; an XArray costs about 9 bytes an
//! entry when the indices are dense (a 576-byte node per 64 slots), where a red-black tree
//! costs a 64-byte node each (`Documentation/performance.md`, `slab_bytes_pd`).
//!
//! Exclusion: mutation takes `Pin<&mut Self>` and a borrowed value lives no longer than
//! `&self`, so the owner's lock (the map is structurally pinned inside a `Mutex`'s data)
//! serializes them; the XArray's own spinlock, which `xa_store()`/`xa_erase()` take, only
//! protects its nodes.

use core::{iter, marker::PhantomData, pin::Pin, ptr::NonNull};
use kernel::{bindings, prelude::*, types::ForeignOwnable, types::Opaque};

/// Values of type `T` at `usize` indices.
///
/// # Invariants
///
/// `xa` is an initialized XArray whose every entry came from `T::into_foreign()` and is owned
/// by this map.
#[pin_data(PinnedDrop)]
pub(crate) struct IdMap<T: ForeignOwnable> {
    #[pin]
    xa: Opaque<bindings::xarray>,
    _p: PhantomData<T>,
}

// SAFETY: the map owns its values; sending it sends them.
unsafe impl<T: ForeignOwnable + Send> Send for IdMap<T> {}
// SAFETY: through `&self` only borrows of the values are handed out (mutation needs
// `Pin<&mut Self>`), so sharing the map shares `&T`-like borrows.
unsafe impl<T: ForeignOwnable + Send + Sync> Sync for IdMap<T> {}

impl<T: ForeignOwnable> IdMap<T> {
    /// An empty map.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(IdMap {
            // SAFETY: `xa` is valid for writes while the closure runs; a zero flag word is a
            // plain XArray (no ID allocation, no IRQ-safe lock).
            //
            // INVARIANT: initialized, empty.
            xa <- Opaque::ffi_init(|xa| unsafe { bindings::xa_init_flags(xa, 0) }),
            _p: PhantomData,
        })
    }

    /// The value at `index`.
    pub(crate) fn get(&self, index: usize) -> Option<T::Borrowed<'_>> {
        // SAFETY: `xa` is initialized (type invariant).
        let p = unsafe { bindings::xa_load(self.xa.get(), index) };
        let p = NonNull::new(p)?;
        // SAFETY: `p` came from `T::into_foreign()` (type invariant) and stays in the map for
        // as long as `&self` is borrowed (removal needs `Pin<&mut Self>`).
        Some(unsafe { T::borrow(p.as_ptr()) })
    }

    /// Whether `index` holds a value.
    pub(crate) fn contains(&self, index: usize) -> bool {
        // SAFETY: `xa` is initialized (type invariant).
        !unsafe { bindings::xa_load(self.xa.get(), index) }.is_null()
    }

    /// Stores `value` at the free `index`.
    ///
    /// # Errors
    ///
    /// `EBUSY` if `index` holds a value, `ENOMEM`; `value` is dropped then.
    pub(crate) fn insert(self: Pin<&mut Self>, index: usize, value: T) -> Result {
        if self.contains(index) {
            return Err(EBUSY);
        }
        let new = value.into_foreign();
        // SAFETY: `xa` is initialized (type invariant); `new` came from `T::into_foreign()`
        // (pointers of the `ForeignOwnable`s used here are at least 4-byte aligned, as an
        // XArray needs of a normal entry).
        let old = unsafe { bindings::xa_store(self.xa.get(), index, new, bindings::GFP_KERNEL) };
        // SAFETY: `old` is what `xa_store()` returned.
        let err = unsafe { bindings::xa_err(old) };
        if err != 0 {
            // SAFETY: on error the XArray did not take `new`, which is still ours.
            drop(unsafe { T::from_foreign(new) });
            return Err(Error::from_errno(err));
        }
        // INVARIANT: the entry is `new`, from `T::into_foreign()`; the slot was empty, so
        // nothing was replaced (`old` is NULL).
        Ok(())
    }

    /// Takes the value at `index` out of the map.
    pub(crate) fn remove(self: Pin<&mut Self>, index: usize) -> Option<T> {
        // SAFETY: `xa` is initialized (type invariant).
        let p = unsafe { bindings::xa_erase(self.xa.get(), index) };
        // SAFETY: `p` is NULL or an entry that came from `T::into_foreign()` (type invariant),
        // now out of the map and ours; `Pin<&mut Self>` means no borrow of it is alive.
        unsafe { T::try_from_foreign(p) }
    }

    /// The values at indices `first..=last`, in index order.
    pub(crate) fn range(
        &self,
        first: usize,
        last: usize,
    ) -> impl Iterator<Item = T::Borrowed<'_>> + '_ {
        let mut index = first;
        let mut started = false;
        iter::from_fn(move || {
            let xa = self.xa.get();
            let p = if started {
                if index >= last {
                    return None;
                }
                // SAFETY: `xa` is initialized (type invariant); `index` is a valid in/out
                // cursor.
                unsafe { bindings::xa_find_after(xa, &mut index, last, bindings::XA_PRESENT) }
            } else {
                started = true;
                // SAFETY: as above.
                unsafe { bindings::xa_find(xa, &mut index, last, bindings::XA_PRESENT) }
            };
            let p = NonNull::new(p)?;
            // SAFETY: as in `get`.
            Some(unsafe { T::borrow(p.as_ptr()) })
        })
    }

    /// Every value, in index order.
    pub(crate) fn values(&self) -> impl Iterator<Item = T::Borrowed<'_>> + '_ {
        self.range(0, usize::MAX)
    }
}

#[pinned_drop]
impl<T: ForeignOwnable> PinnedDrop for IdMap<T> {
    fn drop(self: Pin<&mut Self>) {
        let xa = self.xa.get();
        let mut index = 0usize;
        loop {
            // SAFETY: `xa` is initialized (type invariant).
            let p = unsafe { bindings::xa_find(xa, &mut index, usize::MAX, bindings::XA_PRESENT) };
            if p.is_null() {
                break;
            }
            // SAFETY: as above.
            unsafe { bindings::xa_erase(xa, index) };
            // SAFETY: `p` came from `T::into_foreign()` (type invariant) and is out of the map.
            drop(unsafe { T::from_foreign(p) });
        }
        // SAFETY: `xa` is initialized and empty; it is not used after this.
        unsafe { bindings::xa_destroy(xa) };
    }
}

#[kunit_tests(ib_core_rs_id_map)]
mod tests {
    use super::*;
    use kernel::sync::atomic::{Atomic, Relaxed};
    use kernel::sync::Arc;

    /// A value that counts its drops.
    struct Probe {
        v: usize,
        drops: Arc<Atomic<usize>>,
    }

    impl Drop for Probe {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Relaxed);
        }
    }

    /// Values stored at sparse indices (IDs of two types, `type << 32 | id` as restrack's)
    /// are found, walked in index order within a range, taken out once, and freed with the
    /// map; a refused insert drops its value.
    #[test]
    fn stores_walks_in_order_and_frees() -> Result {
        let drops = Arc::new(Atomic::new(0usize), GFP_KERNEL)?;
        let probe = |v: usize| {
            KBox::new(
                Probe {
                    v,
                    drops: drops.clone(),
                },
                GFP_KERNEL,
            )
        };
        let mut m = KBox::pin_init(IdMap::<KBox<Probe>>::new(), GFP_KERNEL)?;
        let hi = 1usize << 32;
        for i in [5, 1, 3, hi | 2, hi] {
            m.as_mut().insert(i, probe(i)?)?;
        }
        assert_eq!(m.as_mut().insert(3, probe(33)?), Err(EBUSY));
        assert_eq!(drops.load(Relaxed), 1);
        assert!(m.contains(3) && !m.contains(4));
        assert_eq!(m.get(5).map(|p| p.v), Some(5));
        assert!(m.get(2).is_none());
        let mut low = KVec::new();
        for p in m.range(0, u32::MAX as usize) {
            low.push(p.v, GFP_KERNEL)?;
        }
        assert_eq!(low.as_slice(), &[1, 3, 5]);
        let mut high = KVec::new();
        for p in m.range(hi, hi | u32::MAX as usize) {
            high.push(p.v, GFP_KERNEL)?;
        }
        assert_eq!(high.as_slice(), &[hi, hi | 2]);
        assert_eq!(m.values().count(), 5);
        assert_eq!(m.as_mut().remove(3).map(|p| p.v), Some(3));
        assert_eq!(drops.load(Relaxed), 2);
        assert!(m.as_mut().remove(3).is_none());
        assert_eq!(m.values().count(), 4);
        drop(m);
        assert_eq!(drops.load(Relaxed), 6);
        Ok(())
    }
}
