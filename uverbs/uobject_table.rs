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
//! * commit order: a doubly linked list through the slots (`older`/`newer`, by handle; upstream's
//!   `list_head` in each uobject), newest at `newest`: close cleanup and `INFO_HANDLES` walk it
//!   newest first, and an object whose destroy failed keeps its place. A slot also keeps its
//!   commit sequence number, which orders it against the fd objects kept outside the table.
//!
//! A destroy allocates nothing: the object is taken out of its slot ([`HandleTable::take`]),
//! and either the slot goes ([`HandleTable::remove`], frees only) or the object is put back
//! ([`HandleTable::put_back`]), so a destroy never fails for lack of memory (upstream's
//! on-stack bundle has the same property). A commit allocates one tree node, none after a
//! destroy (the freed node is kept); the list costs no allocation (a second tree, ordered by
//! sequence number, cost a 64-byte node an object: `slab_bytes_pd` in
//! `Documentation/performance.md`). The node holds the object's value inline, so the value's
//! size sets every object's node: uverbs keeps its variants small (`ObjKind`, the XRC target
//! QP's references boxed) so that a node fits `kmalloc-96`.
//!
//! A `KVec` searched linearly, with new ids found by rescanning it once per candidate, costs
//! 98 ms a create at 10k handles (`Documentation/performance.md`, "uobject table").

use kernel::bitmap::BitmapVec;
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNodeReservation};

/// One committed object.
struct Slot<V> {
    obj_type: u16,
    /// The next older object in commit order ([`NONE`]: this is the oldest).
    older: u32,
    /// The next newer object in commit order ([`NONE`]: this is the newest).
    newer: u32,
    seq: u64,
    /// `None` while a destroy has it.
    value: Option<V>,
}

/// No handle: the end of the commit-order list. [`HandleTable::insert`] refuses it as a handle.
const NONE: u32 = u32::MAX;

/// upstream `UVERBS_IDR_ANY_OBJECT`: a lookup that accepts any type.
const ANY_OBJECT: u16 = 0xFFFF;

/// The objects of one file, by handle and in commit order.
pub struct HandleTable<V> {
    by_id: RBTree<u32, Slot<V>>,
    /// The newest object in commit order ([`NONE`]: the table is empty).
    newest: u32,
    /// Bit `id` is set while handle `id` is in `by_id`.
    ids: BitmapVec,
    /// Bit `w` is set while handles `64 * w .. 64 * w + 63` are all in use.
    full: BitmapVec,
    next_seq: u64,
    len: usize,
    /// The node of the last destroyed object, kept for the next commit: a destroy followed
    /// by a create (the common churn) allocates nothing.
    spare: Option<RBTreeNodeReservation<u32, Slot<V>>>,
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
            newest: NONE,
            ids: BitmapVec::new_inline(),
            full: BitmapVec::new_inline(),
            next_seq: 0,
            len: 0,
            spare: None,
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
    /// `EINVAL` if `id` is in use or is `u32::MAX`; `ENOMEM` (the value is dropped then, as a
    /// failed commit drops its object).
    pub fn insert(&mut self, id: u32, obj_type: u16, value: V) -> Result {
        let idx = id as usize;
        if id == NONE || self.by_id.get(&id).is_some() {
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
        let node = match self.spare.take() {
            Some(r) => r,
            None => RBTreeNodeReservation::new(GFP_KERNEL)?,
        };
        let slot = Slot {
            obj_type,
            older: NONE,
            newer: NONE,
            seq: 0,
            value: Some(value),
        };
        self.by_id.insert(node.into_node(id, slot));
        self.link_newest(id);
        self.ids.set_bit(idx);
        if self.word_full(idx / 64) {
            self.full.set_bit(idx / 64);
        }
        self.len += 1;
        Ok(())
    }

    /// Puts the unlinked slot `id` at the head of the commit order, with a new sequence number.
    fn link_newest(&mut self, id: u32) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let head = self.newest;
        if let Some(s) = self.by_id.get_mut(&id) {
            s.older = head;
            s.newer = NONE;
            s.seq = seq;
        }
        if let Some(h) = self.by_id.get_mut(&head) {
            h.newer = id;
        }
        self.newest = id;
    }

    /// Takes slot `id` out of the commit order (it stays in `by_id`).
    fn unlink(&mut self, id: u32) {
        let Some(s) = self.by_id.get(&id) else {
            return;
        };
        let (older, newer) = (s.older, s.newer);
        if let Some(o) = self.by_id.get_mut(&older) {
            o.newer = newer;
        }
        match self.by_id.get_mut(&newer) {
            Some(n) => n.older = older,
            None => self.newest = older,
        }
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
    /// in it. Allocates nothing; its node is kept for the next [`Self::insert`].
    pub fn remove(&mut self, id: u32) -> Option<V> {
        let value = self.by_id.get_mut(&id)?.value.take();
        self.unlink(id);
        if let Some(n) = self.by_id.remove_node(&id) {
            self.spare = Some(n.into_reservation());
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
    /// REREG_MR); returns the old object. Allocates nothing.
    ///
    /// # Errors
    ///
    /// `ENOENT` if `id` is not committed (`value` is dropped).
    pub fn renew(&mut self, id: u32, value: V) -> Result<Option<V>> {
        self.by_id.get(&id).ok_or(ENOENT)?;
        self.unlink(id);
        self.link_newest(id);
        let slot = self.by_id.get_mut(&id).ok_or(ENOENT)?;
        Ok(slot.value.replace(value))
    }

    /// The handles and types, newest first (upstream's `uobjects` list, where a commit adds
    /// at the head).
    pub fn newest_first(&self) -> NewestFirst<'_, V> {
        NewestFirst {
            table: self,
            next: self.newest,
        }
    }

    /// The handle committed just before `id` (for walks that destroy as they go: take it
    /// before destroying `id`).
    pub fn handle_before(&self, id: u32) -> Option<u32> {
        let older = self.by_id.get(&id)?.older;
        (older != NONE).then_some(older)
    }

    /// The newest handle.
    pub fn newest_handle(&self) -> Option<u32> {
        (self.newest != NONE).then_some(self.newest)
    }
}

/// [`HandleTable::newest_first`].
pub struct NewestFirst<'a, V> {
    table: &'a HandleTable<V>,
    next: u32,
}

impl<V> Iterator for NewestFirst<'_, V> {
    /// (handle, object type).
    type Item = (u32, u16);

    fn next(&mut self) -> Option<(u32, u16)> {
        let id = self.next;
        let s = self.table.by_id.get(&id)?;
        self.next = s.older;
        Some((id, s.obj_type))
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

    /// The handles, newest first.
    fn order(t: &HandleTable<u32>) -> Result<KVec<u32>> {
        let mut v = KVec::new();
        for (h, _) in t.newest_first() {
            v.push(h, GFP_KERNEL)?;
        }
        Ok(v)
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
    fn commit_order_after_removals_anywhere() -> Result {
        let mut t = table(6)?;
        // The newest, the oldest and one in the middle go; the list closes over each.
        assert_eq!(t.remove(5), Some(50));
        assert_eq!(t.remove(0), Some(0));
        assert_eq!(t.remove(3), Some(30));
        assert_eq!(&order(&t)?[..], &[4, 2, 1]);
        assert_eq!(t.handle_before(4), Some(2));
        assert_eq!(t.handle_before(1), None);
        assert_eq!(t.handle_before(3), None);
        // A new commit (reusing a freed handle and its node) is the newest; a renewed one
        // moves from the middle to the head.
        let id = t.free_id(None);
        assert_eq!(id, 0);
        t.insert(id, 1, 7)?;
        t.renew(2, 22)?;
        assert_eq!(&order(&t)?[..], &[2, 0, 4, 1]);
        assert!(t.seq_of(2) > t.seq_of(0) && t.seq_of(0) > t.seq_of(4));
        // The end-of-list marker is not a handle.
        assert_eq!(t.insert(u32::MAX, 0, 0), Err(EINVAL));
        assert_eq!(t.newest_handle(), Some(2));
        while let Some(id) = t.newest_handle() {
            t.remove(id);
        }
        assert!(t.is_empty() && t.newest_first().next().is_none());
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
