// SPDX-License-Identifier: GPL-2.0

//! The mmap entries of a user context (upstream `struct rdma_user_mmap_entry`,
//! `ucontext->mmap_xa`, `rdma_user_mmap_entry_insert[_range]()`,
//! `rdma_user_mmap_entry_get[_pgoff]()`, `rdma_user_mmap_entry_put()`,
//! `rdma_user_mmap_entry_remove()`, `rdma_user_mmap_get_offset()`,
//! `drivers/infiniband/core/ib_core_uverbs.c`).
//!
//! A driver that hands user space something to `mmap()` (a UAR page, a
//! queue buffer) inserts an entry holding its data and gets a unique page
//! offset for it ([`MmapEntry::offset`], what the user passes to `mmap()`).
//! Its `mmap` op then looks the entry up by the VMA's offset
//! ([`MmapRegistry::get`]), which takes a counted reference
//! ([`MmapEntryRef`]) that the mapped VMA keeps until it is unmapped or
//! zapped. [`MmapRegistry::remove`] drops the driver's reference: no new
//! mapping can find the entry, existing ones keep it. The offsets stay
//! reserved until the last reference is gone (upstream keeps them unique the
//! same way); then the registry forgets the entry, and its data is dropped
//! with the last `Arc<MmapEntry>` (upstream `ops.mmap_free`: the data's
//! `Drop`).
//!
//! The registry is a sorted vector under a mutex rather than an XArray: a
//! context has a handful of entries. Its mutex is a leaf (taken under the
//! `mmap_lock` and the file's mapping list).

use crate::mm::{MapRef, UserVma};
use core::any::Any;
use core::ops::Deref;
use kernel::page::{PAGE_SHIFT, PAGE_SIZE};
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

/// One mmap entry (upstream `struct rdma_user_mmap_entry` with the driver's
/// data).
pub struct MmapEntry {
    start_pgoff: u32,
    npages: u32,
    data: KBox<dyn Any + Send + Sync>,
}

impl MmapEntry {
    /// The byte offset user space passes to `mmap()` (upstream
    /// `rdma_user_mmap_get_offset()`).
    pub fn offset(&self) -> u64 {
        u64::from(self.start_pgoff) << PAGE_SHIFT
    }

    /// The first page offset (upstream `entry->start_pgoff`).
    pub fn pgoff(&self) -> u32 {
        self.start_pgoff
    }

    /// How many pages the entry spans (upstream `entry->npages`).
    pub fn npages(&self) -> u32 {
        self.npages
    }

    /// The driver's data, if it is a `T`.
    pub fn data<T: Any>(&self) -> Option<&T> {
        self.data.downcast_ref::<T>()
    }
}

struct Slot {
    entry: Arc<MmapEntry>,
    /// upstream `entry->ref`: the driver's (until removed) and one per VMA
    /// or lookup.
    refs: usize,
    /// upstream `entry->driver_removed`.
    driver_removed: bool,
}

impl Slot {
    fn end(&self) -> u64 {
        u64::from(self.entry.start_pgoff) + u64::from(self.entry.npages)
    }
}

/// The mmap entries of one user context (upstream `ucontext->mmap_xa`).
#[pin_data]
pub struct MmapRegistry {
    /// Sorted by `start_pgoff`, ranges disjoint.
    #[pin]
    slots: Mutex<KVec<Slot>>,
}

impl MmapRegistry {
    /// An empty registry.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(MmapRegistry {
                slots <- core_mutex!(KVec::new(), c"rdma_mmap_entries"),
            }),
            GFP_KERNEL,
        )
    }

    /// Inserts an entry of `length` bytes at the lowest free page offset
    /// in `min_pgoff..=max_pgoff` (upstream
    /// `rdma_user_mmap_entry_insert_range()`: the first offset must be at
    /// most `max_pgoff` and the range must not wrap `u32`).
    ///
    /// # Errors
    ///
    /// `ENOMEM` if no range is free (upstream) or out of memory; `EINVAL`
    /// for `length` 0 (upstream inserts an entry no lookup can find).
    pub fn insert_range<T: Any + Send + Sync>(
        &self,
        data: T,
        length: usize,
        min_pgoff: u32,
        max_pgoff: u32,
    ) -> Result<Arc<MmapEntry>> {
        let npages = u32::try_from(length.div_ceil(PAGE_SIZE)).map_err(|_| ENOMEM)?;
        if npages == 0 {
            return Err(EINVAL);
        }
        let data: KBox<dyn Any + Send + Sync> = KBox::new(data, GFP_KERNEL)?;
        let mut slots = self.slots.lock();
        let mut first = u64::from(min_pgoff);
        let mut pos = slots.len();
        for (i, s) in slots.iter().enumerate() {
            if s.end() <= first {
                continue;
            }
            if u64::from(s.entry.start_pgoff) >= first + u64::from(npages) {
                pos = i;
                break;
            }
            first = s.end();
        }
        if first > u64::from(max_pgoff) || first + u64::from(npages) > u64::from(u32::MAX) {
            return Err(ENOMEM);
        }
        let entry = Arc::new(
            MmapEntry {
                start_pgoff: first as u32,
                npages,
                data,
            },
            GFP_KERNEL,
        )?;
        slots.reserve(1, GFP_KERNEL)?;
        slots
            .insert_within_capacity(
                pos,
                Slot {
                    entry: entry.clone(),
                    refs: 1,
                    driver_removed: false,
                },
            )
            .map_err(|_| ENOMEM)?;
        Ok(entry)
    }

    /// [`Self::insert_range`] over all offsets (upstream
    /// `rdma_user_mmap_entry_insert()`).
    ///
    /// # Errors
    ///
    /// As [`Self::insert_range`].
    pub fn insert<T: Any + Send + Sync>(&self, data: T, length: usize) -> Result<Arc<MmapEntry>> {
        self.insert_range(data, length, 0, u32::MAX)
    }

    /// The entry starting at page offset `pgoff`, with a reference (upstream
    /// `rdma_user_mmap_entry_get_pgoff()`): `None` past `u32`, inside an
    /// entry but not at its start, or for a removed entry.
    pub fn get_pgoff(self: &Arc<Self>, pgoff: usize) -> Option<MmapEntryRef> {
        let pgoff = u32::try_from(pgoff).ok()?;
        let mut slots = self.slots.lock();
        let s = slots
            .iter_mut()
            .find(|s| s.entry.start_pgoff == pgoff && !s.driver_removed && s.refs > 0)?;
        s.refs += 1;
        Some(MmapEntryRef {
            reg: self.clone(),
            entry: s.entry.clone(),
        })
    }

    /// The entry a VMA maps, with a reference (upstream
    /// `rdma_user_mmap_entry_get()`): also `None` unless the VMA is shared
    /// and exactly as long as the entry.
    pub fn get(self: &Arc<Self>, vma: &UserVma<'_>) -> Option<MmapEntryRef> {
        if !vma.is_shared() {
            return None;
        }
        let e = self.get_pgoff(vma.pgoff())?;
        if e.npages as usize * PAGE_SIZE != vma.len() {
            return None;
        }
        Some(e)
    }

    /// Drops the driver's reference and hides the entry from lookups
    /// (upstream `rdma_user_mmap_entry_remove()`); mapped VMAs keep it.
    /// Removing twice does nothing.
    pub fn remove(&self, entry: &MmapEntry) {
        let gone = {
            let mut slots = self.slots.lock();
            let Some(i) = slots.iter().position(|s| core::ptr::eq(&*s.entry, entry)) else {
                return;
            };
            match slots.get_mut(i) {
                Some(s) if !s.driver_removed => s.driver_removed = true,
                _ => return,
            }
            Self::put_locked(&mut slots, i)
        };
        drop(gone);
    }

    /// How many entries are registered (removed ones still mapped included).
    pub fn count(&self) -> usize {
        self.slots.lock().len()
    }

    /// One reference less on slot `i`; at zero the slot goes (returned, to
    /// be dropped outside the lock: the data's drop may sleep).
    fn put_locked(slots: &mut KVec<Slot>, i: usize) -> Option<Slot> {
        let s = slots.get_mut(i)?;
        s.refs = s.refs.saturating_sub(1);
        if s.refs == 0 {
            slots.remove(i).ok()
        } else {
            None
        }
    }

    fn put(&self, entry: &MmapEntry) {
        let gone = {
            let mut slots = self.slots.lock();
            match slots.iter().position(|s| core::ptr::eq(&*s.entry, entry)) {
                Some(i) => Self::put_locked(&mut slots, i),
                None => None,
            }
        };
        drop(gone);
    }

    fn get_again(self: &Arc<Self>, entry: &Arc<MmapEntry>) -> Result<MmapEntryRef> {
        let mut slots = self.slots.lock();
        let s = slots
            .iter_mut()
            .find(|s| Arc::ptr_eq(&s.entry, entry))
            .ok_or(ENOENT)?;
        s.refs += 1;
        Ok(MmapEntryRef {
            reg: self.clone(),
            entry: entry.clone(),
        })
    }
}

/// A counted reference on an entry (upstream `kref_get(&entry->ref)`),
/// dropped with `rdma_user_mmap_entry_put()` semantics. Give it to
/// [`UserVma::map_page`]/[`UserVma::map_io`] (via [`Self::into_map_ref`])
/// so that the VMA holds it while mapped.
pub struct MmapEntryRef {
    reg: Arc<MmapRegistry>,
    entry: Arc<MmapEntry>,
}

impl MmapEntryRef {
    /// The entry itself (to keep beyond the reference).
    pub fn entry(&self) -> &Arc<MmapEntry> {
        &self.entry
    }

    /// Boxed for a VMA.
    ///
    /// # Errors
    ///
    /// `ENOMEM` (the reference is dropped then).
    pub fn into_map_ref(self) -> Result<KBox<dyn MapRef>> {
        let b: KBox<dyn MapRef> = KBox::new(self, GFP_KERNEL)?;
        Ok(b)
    }
}

impl Deref for MmapEntryRef {
    type Target = MmapEntry;

    fn deref(&self) -> &MmapEntry {
        &self.entry
    }
}

impl Drop for MmapEntryRef {
    fn drop(&mut self) {
        self.reg.put(&self.entry);
    }
}

impl MapRef for MmapEntryRef {
    fn dup(&self) -> Result<KBox<dyn MapRef>> {
        self.reg.get_again(&self.entry)?.into_map_ref()
    }
}

#[kunit_tests(ib_core_rs_mmap_entries)]
mod tests {
    use super::*;

    #[test]
    fn offsets_lookup_refs_and_removal() -> Result {
        let reg = MmapRegistry::new()?;
        let a = reg.insert(1u32, PAGE_SIZE)?;
        let b = reg.insert(2u32, 2 * PAGE_SIZE)?;
        let c = reg.insert(3u32, 1)?;
        assert_eq!((a.pgoff(), b.pgoff(), c.pgoff()), (0, 1, 3));
        assert_eq!(b.offset(), (1u64) << PAGE_SHIFT);
        assert_eq!(b.data::<u32>(), Some(&2));
        assert!(b.data::<u64>().is_none());
        // Only the first page of an entry finds it; past u32 nothing.
        assert!(reg.get_pgoff(2).is_none());
        assert!(reg.get_pgoff(1usize << 33).is_none());
        let r = reg.get_pgoff(1).ok_or(EINVAL)?;
        assert_eq!(r.npages(), 2);
        // Removed while referenced: hidden, but its offsets stay taken.
        reg.remove(&b);
        reg.remove(&b);
        assert!(reg.get_pgoff(1).is_none());
        assert_eq!(reg.count(), 3);
        let d = reg.insert(4u32, 2 * PAGE_SIZE)?;
        assert_eq!(d.pgoff(), 4);
        // A VMA's copy takes another reference.
        let dup = r.dup()?;
        drop(r);
        assert_eq!(reg.count(), 4);
        drop(dup);
        // The last reference frees the offsets.
        assert_eq!(reg.count(), 3);
        assert_eq!(reg.insert(5u32, PAGE_SIZE)?.pgoff(), 1);
        Ok(())
    }

    #[test]
    fn ranges_and_exhaustion() -> Result {
        let reg = MmapRegistry::new()?;
        assert_eq!(reg.insert_range((), PAGE_SIZE, 10, 10)?.pgoff(), 10);
        assert_eq!(reg.insert_range((), PAGE_SIZE, 10, 10).err(), Some(ENOMEM));
        assert_eq!(reg.insert_range((), PAGE_SIZE, 9, 11)?.pgoff(), 9);
        assert_eq!(reg.insert_range((), 2 * PAGE_SIZE, 9, 11)?.pgoff(), 11);
        // Would wrap u32.
        assert_eq!(
            reg.insert_range((), 2 * PAGE_SIZE, u32::MAX, u32::MAX)
                .err(),
            Some(ENOMEM)
        );
        assert_eq!(reg.insert((), 0).err(), Some(EINVAL));
        Ok(())
    }
}
