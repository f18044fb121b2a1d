// SPDX-License-Identifier: GPL-2.0

//! The committed objects of one file (upstream: the file's `idr` xarray of
//! uobjects, its `uobjects` list and `xa_alloc()`): by handle for lookups, in
//! commit order for cleanup (newest first), and the lowest free handle.
//!
//! A lookup, a commit and a destroy are O(log n) (two red-black trees) and the
//! lowest free handle is a bitmap scan, so that a file with 100k objects costs
//! per call what one with 10 does (`make bench-uverbs`, the `scale` figures;
//! a vector scanned per call made a file of 10k objects take seconds per
//! allocation). Handles are positions for the callers: `get`/`take` by handle.

use super::UObject;
use crate::driver::Driver;
use kernel::bitmap::BitmapVec;
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode, RBTreeNodeReservation};

/// What `take` kept to put an object back without allocating (a destroy that
/// failed, e.g. `EBUSY`): its commit sequence number and the two tree nodes.
pub(super) struct Spare<D: Driver> {
    seq: u64,
    id_node: RBTreeNodeReservation<u32, (u64, UObject<D>)>,
    seq_node: RBTreeNodeReservation<u64, u32>,
}

pub(super) struct Objs<D: Driver> {
    /// Handle -> (commit sequence number, object).
    by_id: RBTree<u32, (u64, UObject<D>)>,
    /// Commit sequence numbers -> handle, oldest first.
    by_seq: RBTree<u64, u32>,
    /// Bit `id` set: handle `id` is committed.
    used: BitmapVec,
    next_seq: u64,
    count: usize,
}

impl<D: Driver> Objs<D> {
    pub(super) fn new() -> Self {
        Objs {
            by_id: RBTree::new(),
            by_seq: RBTree::new(),
            used: BitmapVec::new_inline(),
            next_seq: 0,
            count: 0,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The object with handle `id`.
    pub(super) fn get(&self, id: usize) -> Option<&UObject<D>> {
        let id = u32::try_from(id).ok()?;
        self.by_id.get(&id).map(|(_, o)| o)
    }

    /// The first free handle at or after `from`.
    fn free_from(&self, from: usize) -> usize {
        if from >= self.used.len() {
            return from;
        }
        self.used.next_zero_bit(from).unwrap_or(self.used.len())
    }

    /// The lowest free handle other than `also_taken` (upstream `xa_alloc()`
    /// with `xa_limit_32b`; `also_taken`: one reserved by this method already).
    pub(super) fn free_id(&self, also_taken: Option<u32>) -> u32 {
        let a = self.free_from(0);
        let id = if also_taken.map(|t| t as usize) == Some(a) {
            self.free_from(a + 1)
        } else {
            a
        };
        u32::try_from(id).unwrap_or(u32::MAX)
    }

    /// Commits `o` (its handle free, from `free_id`) as the newest object.
    pub(super) fn push(&mut self, o: UObject<D>, flags: kernel::alloc::Flags) -> Result {
        let id = o.id;
        let bit = id as usize;
        if self.by_id.get(&id).is_some() {
            return Err(EEXIST);
        }
        if bit >= self.used.len() {
            let n = (bit + 1)
                .max(self.used.len() * 2)
                .max(BitmapVec::MAX_INLINE_LEN * 2);
            let mut grown = BitmapVec::new(n, flags)?;
            grown.copy_and_extend(&self.used);
            self.used = grown;
        }
        let seq_node = RBTreeNode::new(self.next_seq, id, flags)?;
        let id_node = RBTreeNode::new(id, (self.next_seq, o), flags)?;
        self.by_seq.insert(seq_node);
        self.by_id.insert(id_node);
        self.used.set_bit(bit);
        self.next_seq += 1;
        self.count += 1;
        Ok(())
    }

    /// Removes the object with handle `id`.
    pub(super) fn remove(&mut self, id: usize) -> Option<UObject<D>> {
        let id = u32::try_from(id).ok()?;
        let (seq, o) = self.by_id.remove(&id)?;
        self.by_seq.remove(&seq);
        self.used.clear_bit(id as usize);
        self.count -= 1;
        Some(o)
    }

    /// Removes the object with handle `id`, keeping what `restore` needs to put
    /// it back in its place without allocating (`ENOMEM` before anything
    /// changes if that cannot be had).
    pub(super) fn take(&mut self, id: usize) -> Result<(UObject<D>, Spare<D>)> {
        let key = u32::try_from(id).map_err(|_| EINVAL)?;
        let seq = self.by_id.get(&key).map(|(s, _)| *s).ok_or(EINVAL)?;
        let id_node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let seq_node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let o = self.remove(id).ok_or(EINVAL)?;
        Ok((
            o,
            Spare {
                seq,
                id_node,
                seq_node,
            },
        ))
    }

    /// Puts back an object `take` removed, in its place in commit order.
    pub(super) fn restore(&mut self, o: UObject<D>, spare: Spare<D>) {
        let Spare {
            seq,
            id_node,
            seq_node,
        } = spare;
        let id = o.id;
        // `take` removed it: the handle and the sequence number are free, and
        // the bitmap still covers the handle (it never shrinks).
        self.by_seq.insert(seq_node.into_node(seq, id));
        self.by_id.insert(id_node.into_node(id, (seq, o)));
        self.used.set_bit(id as usize);
        self.count += 1;
    }

    /// The newest object committed before sequence number `before`:
    /// `(sequence number, handle)`.
    pub(super) fn newest_before(&self, before: u64) -> Option<(u64, u32)> {
        match self.by_seq.cursor_lower_bound(&before) {
            Some(c) => c.peek_prev().map(|(s, id)| (*s, *id)),
            None => self.by_seq.cursor_back().map(|c| {
                let (s, id) = c.current();
                (*s, *id)
            }),
        }
    }

    /// Removes the newest object.
    pub(super) fn pop(&mut self) -> Option<UObject<D>> {
        let (_, id) = self.newest_before(u64::MAX)?;
        self.remove(id as usize)
    }
}
