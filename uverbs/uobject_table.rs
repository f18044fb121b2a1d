// SPDX-License-Identifier: GPL-2.0

//! The handle table of a uverbs file: what upstream keeps in `ufile->idr` (an xarray, new
//! handles from `xa_alloc()` with `xa_limit_32b`: the lowest free id) and in the
//! `ufile->uobjects` list (commit order: close cleanup walks it newest first).
//!
//! The shape is rust_binder's (`process.rs`: handles in an `RBTree`, ids from an id pool):
//!
//! * `by_id`: handle -> object, an [`RBTree`]: a lookup is `O(log n)`;
//! * `ids`: a [`BitmapVec`] of the handles in use, and `full`, one bit per 64 handles that
//!   are all in use: the lowest free handle is a `find_next_zero_bit()` in `full` (one word
//!   per 4,096 handles), then one in the word of `ids` it names;
//! * `by_seq`: commit sequence number -> handle, an [`RBTree`]: newest first for close
//!   cleanup and `INFO_HANDLES`, and an object whose destroy failed keeps its place.
//!
//! A destroy allocates nothing: the object is taken out of its slot ([`HandleTable::take`]),
//! and either the slot goes ([`HandleTable::remove`], frees only) or the object is put back
//! ([`HandleTable::put_back`]), so a destroy never fails for lack of memory (upstream's
//! on-stack bundle has the same property).
//!
//! Before this table the handles were a `KVec` searched linearly and new ids were found by
//! rescanning it once per candidate id (`Documentation/performance.md`, "uobject table").

use kernel::bitmap::BitmapVec;
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNodeReservation};

/// One committed object.
struct Slot<V> {
    obj_type: u16,
    seq: u64,
    /// `None` while a destroy has it.
    value: Option<V>,
}

/// upstream `UVERBS_IDR_ANY_OBJECT`: a lookup that accepts any type.
const ANY_OBJECT: u16 = 0xFFFF;

/// The objects of one file, by handle and in commit order.
pub struct HandleTable<V> {
    by_id: RBTree<u32, Slot<V>>,
    by_seq: RBTree<u64, u32>,
    /// Bit `id` is set while handle `id` is in `by_id`.
    ids: BitmapVec,
    /// Bit `w` is set while handles `64 * w .. 64 * w + 63` are all in use.
    full: BitmapVec,
    next_seq: u64,
    len: usize,
    /// The nodes of the last destroyed object, kept for the next commit: a destroy followed
    /// by a create (the common churn) allocates nothing.
    spare_id: Option<RBTreeNodeReservation<u32, Slot<V>>>,
    spare_seq: Option<RBTreeNodeReservation<u64, u32>>,
}

impl<V> Default for HandleTable<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> HandleTable<V> {
    /// An empty table (no allocation).
    pub fn new() -> Self {
        HandleTable {
            by_id: RBTree::new(),
            by_seq: RBTree::new(),
            ids: BitmapVec::new_inline(),
            full: BitmapVec::new_inline(),
            next_seq: 0,
            len: 0,
            spare_id: None,
            spare_seq: None,
        }
    }

    /// A sequence number in this table's commit order for an object kept outside it (an fd
    /// object, upstream on the same `uobjects` list): newer than every object committed so
    /// far, older than every later one.
    pub fn take_seq(&mut self) -> u64 {
        let s = self.next_seq;
        self.next_seq += 1;
        s
    }

    /// The commit sequence number of handle `id`.
    pub fn seq_of(&self, id: u32) -> Option<u64> {
        self.by_id.get(&id).map(|s| s.seq)
    }

    /// The number of committed objects.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No object is committed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The lowest free handle at or above `from` (`ids.len()` or more: past the bitmap).
    fn next_free(&self, from: usize) -> usize {
        const W: usize = 64;
        let len = self.ids.len();
        if from >= len {
            return from;
        }
        let w = from / W;
        // The first word at or after `from`'s that is not full (`full` has a bit for every
        // word of `ids`, and more, clear, past them).
        let first = match self.full.next_zero_bit(w) {
            Some(c) if c < len / W => c,
            _ => return len,
        };
        // That word has a free handle: the search ends in it, unless it is `from`'s own
        // word and its free handles are below `from` (a NEW handle reserved by the method
        // in progress, rare): then the search goes on past it.
        let start = if first == w { from } else { first * W };
        self.ids.next_zero_bit(start).unwrap_or(len)
    }

    /// Whether the 64 handles of word `w` are all in use.
    fn word_full(&self, w: usize) -> bool {
        let end = (w + 1) * 64;
        end <= self.ids.len() && self.ids.next_zero_bit(w * 64).is_none_or(|z| z >= end)
    }

    /// The lowest free handle, other than `also_taken` (a handle a method in progress
    /// reserved and has not committed yet). upstream `xa_alloc()` with `xa_limit_32b`.
    pub fn free_id(&self, also_taken: Option<u32>) -> u32 {
        let mut id = self.next_free(0);
        if also_taken.map(|t| t as usize) == Some(id) {
            id = self.next_free(id + 1);
        }
        // Handles stay below the bitmap's limit (i32::MAX), far below u32::MAX.
        id as u32
    }

    /// Commits `value` under the handle `id` (upstream `rdma_alloc_commit_uobject()`): it
    /// becomes the newest object.
    ///
    /// # Errors
    ///
    /// `EINVAL` if `id` is in use; `ENOMEM` (the value is dropped then, as a failed
    /// commit drops its object).
    pub fn insert(&mut self, id: u32, obj_type: u16, value: V) -> Result {
        let idx = id as usize;
        if self.by_id.get(&id).is_some() {
            return Err(EINVAL);
        }
        if idx >= self.ids.len() {
            let mut n = self.ids.len().max(BitmapVec::MAX_INLINE_LEN);
            while n <= idx {
                n = n.checked_mul(2).ok_or(ENOMEM)?;
            }
            let mut bigger = BitmapVec::new(n, GFP_KERNEL)?;
            let mut bigger_full = BitmapVec::new(n / 64, GFP_KERNEL)?;
            bigger.copy_and_extend(&self.ids);
            bigger_full.copy_and_extend(&self.full);
            self.ids = bigger;
            self.full = bigger_full;
        }
        let seq_node = match self.spare_seq.take() {
            Some(r) => r,
            None => RBTreeNodeReservation::new(GFP_KERNEL)?,
        };
        let id_node = match self.spare_id.take() {
            Some(r) => r,
            None => match RBTreeNodeReservation::new(GFP_KERNEL) {
                Ok(r) => r,
                Err(e) => {
                    self.spare_seq = Some(seq_node);
                    return Err(e);
                }
            },
        };
        let seq = self.next_seq;
        self.by_seq.insert(seq_node.into_node(seq, id));
        let slot = Slot {
            obj_type,
            seq,
            value: Some(value),
        };
        self.by_id.insert(id_node.into_node(id, slot));
        self.next_seq += 1;
        self.ids.set_bit(idx);
        if self.word_full(idx / 64) {
            self.full.set_bit(idx / 64);
        }
        self.len += 1;
        Ok(())
    }

    /// The handle of an object of type `obj_type` (upstream `lookup_get_idr_uobject()` and
    /// the type check of `rdma_lookup_get_uobject()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a negative handle or an object of another type; `ENOENT` for a handle
    /// that is not committed (ids are below 2^32: a larger one finds nothing).
    pub fn lookup(&self, obj_type: u16, id: i64) -> Result<u32> {
        if id < 0 {
            return Err(EINVAL);
        }
        let id = u32::try_from(id).map_err(|_| ENOENT)?;
        match self.by_id.get(&id) {
            None => Err(ENOENT),
            // upstream: an attribute of UVERBS_IDR_ANY_OBJECT takes any type.
            Some(s) if s.obj_type == obj_type || obj_type == ANY_OBJECT => Ok(id),
            Some(_) => Err(EINVAL),
        }
    }

    /// The object under `id` (none while a destroy holds it).
    pub fn get(&self, id: u32) -> Option<&V> {
        self.by_id.get(&id).and_then(|s| s.value.as_ref())
    }

    /// The type of the object under `id`.
    pub fn obj_type(&self, id: u32) -> Option<u16> {
        self.by_id.get(&id).map(|s| s.obj_type)
    }

    /// Takes the object under `id` out for a destroy; its handle and place stay until
    /// [`Self::remove`] (the destroy worked) or [`Self::put_back`] (it failed).
    pub fn take(&mut self, id: u32) -> Option<V> {
        self.by_id.get_mut(&id).and_then(|s| s.value.take())
    }

    /// Puts an object back after a failed destroy, at its old place in commit order.
    pub fn put_back(&mut self, id: u32, value: V) {
        if let Some(s) = self.by_id.get_mut(&id) {
            s.value = Some(value);
        }
    }

    /// Frees the handle `id` (its object was destroyed or taken) and returns what was left
    /// in it. Allocates nothing; its nodes are kept for the next [`Self::insert`].
    pub fn remove(&mut self, id: u32) -> Option<V> {
        let slot = self.by_id.get_mut(&id)?;
        let value = slot.value.take();
        let seq = slot.seq;
        if let Some(n) = self.by_id.remove_node(&id) {
            self.spare_id = Some(n.into_reservation());
        }
        if let Some(n) = self.by_seq.remove_node(&seq) {
            self.spare_seq = Some(n.into_reservation());
        }
        self.ids.clear_bit(id as usize);
        if (id as usize / 64) < self.full.len() {
            self.full.clear_bit(id as usize / 64);
        }
        self.len -= 1;
        value
    }

    /// Replaces the object under `id` by `value`, which becomes the newest object
    /// (upstream `rdma_assign_uobject()` then `rdma_alloc_commit_uobject()` of a
    /// REREG_MR); returns the old object.
    ///
    /// # Errors
    ///
    /// `ENOENT` if `id` is not committed; `ENOMEM` (the table is unchanged, `value` dropped).
    pub fn renew(&mut self, id: u32, value: V) -> Result<Option<V>> {
        let old_seq = self.by_id.get(&id).ok_or(ENOENT)?.seq;
        let seq = self.next_seq;
        self.by_seq.try_create_and_insert(seq, id, GFP_KERNEL)?;
        self.next_seq += 1;
        self.by_seq.remove(&old_seq);
        let slot = self.by_id.get_mut(&id).ok_or(ENOENT)?;
        slot.seq = seq;
        Ok(slot.value.replace(value))
    }

    /// The newest committed object: (sequence number, handle).
    fn newest(&self) -> Option<(u64, u32)> {
        self.by_seq.cursor_back().map(|c| {
            let (s, i) = c.current();
            (*s, *i)
        })
    }

    /// The newest object committed before the sequence number `seq` (which need not be in
    /// the table any more).
    fn older_than(&self, seq: u64) -> Option<(u64, u32)> {
        match self.by_seq.cursor_lower_bound(&seq) {
            Some(c) => c.peek_prev().map(|(s, i)| (*s, *i)),
            None => self.newest(),
        }
    }

    /// The handles and types, newest first (upstream's `uobjects` list, where a commit adds
    /// at the head). The table may change between two steps: each step looks up the next
    /// older object from where the last one was.
    pub fn newest_first(&self) -> NewestFirst<'_, V> {
        NewestFirst {
            table: self,
            next: self.newest(),
        }
    }

    /// The handle committed before `seq_of(id)` (for walks that destroy as they go).
    pub fn handle_before(&self, id: u32) -> Option<u32> {
        let seq = self.by_id.get(&id)?.seq;
        self.older_than(seq).map(|(_, i)| i)
    }

    /// The newest handle.
    pub fn newest_handle(&self) -> Option<u32> {
        self.newest().map(|(_, i)| i)
    }
}

/// [`HandleTable::newest_first`].
pub struct NewestFirst<'a, V> {
    table: &'a HandleTable<V>,
    next: Option<(u64, u32)>,
}

impl<V> Iterator for NewestFirst<'_, V> {
    /// (handle, object type).
    type Item = (u32, u16);

    fn next(&mut self) -> Option<(u32, u16)> {
        let (seq, id) = self.next?;
        self.next = self.table.older_than(seq);
        Some((id, self.table.obj_type(id).unwrap_or(u16::MAX)))
    }
}

#[kunit_tests(ib_core_rs_uobject_table)]
mod tests {
    use super::HandleTable;
    use kernel::prelude::*;

    fn table(n: u32) -> Result<HandleTable<u32>> {
        let mut t = HandleTable::new();
        for i in 0..n {
            let id = t.free_id(None);
            t.insert(id, (i % 3) as u16, i * 10)?;
        }
        Ok(t)
    }

    #[test]
    fn lowest_free_handle_and_lookup_errnos() -> Result {
        let mut t = table(200)?;
        assert_eq!(t.len(), 200);
        assert_eq!(t.free_id(None), 200);
        // A freed handle is the next one, unless the method in progress holds it.
        assert_eq!(t.remove(70), Some(700));
        assert_eq!(t.free_id(None), 70);
        assert_eq!(t.free_id(Some(70)), 200);
        assert_eq!(t.insert(5, 0, 0), Err(EINVAL));
        // upstream's errnos: negative EINVAL, unknown ENOENT, other type EINVAL.
        assert_eq!(t.lookup(1, 7), Ok(7));
        assert_eq!(t.lookup(0, 7), Err(EINVAL));
        assert_eq!(t.lookup(1, -1), Err(EINVAL));
        assert_eq!(t.lookup(1, 70), Err(ENOENT));
        assert_eq!(t.lookup(1, 1 << 40), Err(ENOENT));
        assert_eq!(t.get(199), Some(&1990));
        Ok(())
    }

    #[test]
    fn commit_order_survives_failed_destroys_and_renew() -> Result {
        let mut t = table(4)?;
        let order = |t: &HandleTable<u32>| -> Result<KVec<u32>> {
            let mut v = KVec::new();
            for (h, _) in t.newest_first() {
                v.push(h, GFP_KERNEL)?;
            }
            Ok(v)
        };
        assert_eq!(&order(&t)?[..], &[3, 2, 1, 0]);
        // A destroy that fails (EBUSY) puts the object back in its place.
        let v = t.take(2).ok_or(EINVAL)?;
        assert_eq!(t.get(2), None);
        t.put_back(2, v);
        assert_eq!(&order(&t)?[..], &[3, 2, 1, 0]);
        // REREG_MR: the handle stays, the object becomes the newest.
        assert_eq!(t.renew(1, 11)?, Some(10));
        assert_eq!(&order(&t)?[..], &[1, 3, 2, 0]);
        assert_eq!(t.renew(9, 0), Err(ENOENT));
        // A walk that destroys as it goes (close cleanup).
        let mut next = t.newest_handle();
        while let Some(id) = next {
            next = t.handle_before(id);
            t.remove(id);
        }
        assert!(t.is_empty());
        assert_eq!(t.free_id(None), 0);
        Ok(())
    }

    #[test]
    fn handles_past_the_inline_bitmap() -> Result {
        // 64 handles fit the inline bitmap; the 65th and later grow it.
        let mut t = table(300)?;
        assert_eq!(t.free_id(None), 300);
        // A hole in a full word, past a full word (the summary bitmap), then refilled.
        t.remove(200);
        assert_eq!(t.free_id(None), 200);
        assert_eq!(t.free_id(Some(200)), 300);
        t.insert(200, 0, 0)?;
        assert_eq!(t.free_id(None), 300);
        for id in (0..300).step_by(2) {
            t.remove(id);
        }
        assert_eq!(t.free_id(None), 0);
        assert_eq!(t.len(), 150);
        t.insert(1000, 1, 1)?;
        assert_eq!(t.lookup(1, 1000), Ok(1000));
        assert_eq!(t.newest_handle(), Some(1000));
        Ok(())
    }
}
