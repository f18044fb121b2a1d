// SPDX-License-Identifier: GPL-2.0

//! What the fuzzer knows about its uverbs files and the objects it made in
//! them, and how it picks a handle for an attribute or a write field.
//!
//! Every pick draws from the generator exactly once whether or not a
//! candidate exists, so the sequence of decisions depends on the seed only;
//! what a pick found (a live handle, none, a stale one) goes into the call's
//! description, and the differential mode compares a call only when both
//! stacks described it alike.

use crate::rng::Rng;

/// One open uverbs file descriptor. Slots opened by `dup()` share `file`
/// (the identity of the open file) with their source.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FileSlot {
    pub(crate) fd: i32,
    pub(crate) file: u32,
    pub(crate) has_ctx: bool,
    /// The fd belongs to this process or thread (a thread never closes
    /// the main's descriptors: they share one table).
    pub(crate) owned: bool,
}

/// An object handle (IDR objects) or fd (ASYNC_EVENT, COMP_CHANNEL) the
/// fuzzer was given by a successful create.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Handle {
    pub(crate) file: u32,
    pub(crate) obj: u16,
    pub(crate) value: u32,
    pub(crate) live: bool,
    /// Made by this process/thread: only owned handles are destroyed, so
    /// that children and threads never change the main sequence's objects.
    pub(crate) owned: bool,
    /// Identity within the pool (handle values repeat across files).
    pub(crate) uid: u64,
    /// Live objects made with this one (a QP on a PD or CQ, an MR on a
    /// PD): destroying it is then `EBUSY` on both stacks, so a destroy's
    /// description says `busy` (and the two stacks' calls are compared only
    /// if both made the same dependents).
    pub(crate) users: u32,
    /// The objects this one was made with (`uid`s, 0 = none).
    pub(crate) parents: [u64; 3],
}

/// How a handle field was filled: part of the call's description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    Live,
    None,
    Stale,
    OtherFile,
    WrongType,
    Random,
    /// A stale handle or one of another file whose number names a live
    /// object of the same type in this file (ids are reused): the call
    /// acts on that object.
    Aliased,
}

impl Pick {
    pub(crate) fn tag(self) -> &'static str {
        match self {
            Pick::Live => "live",
            Pick::None => "none",
            Pick::Stale => "stale",
            Pick::OtherFile => "otherfile",
            Pick::WrongType => "wrongtype",
            Pick::Random => "random",
            Pick::Aliased => "aliased",
        }
    }
}

pub(crate) const MAX_HANDLES: usize = 128;

#[derive(Clone, Debug, Default)]
pub(crate) struct Pool {
    pub(crate) handles: Vec<Handle>,
    /// The next `uid`: threads and children start their own range.
    pub(crate) next_uid: u64,
}

impl Pool {
    /// Adds a new live handle made with the handles at `parents` (pool
    /// indices, before the add): they gain a user.
    pub(crate) fn add(&mut self, mut h: Handle, parents: &[usize]) {
        let mut up = [0u64; 3];
        for (k, &i) in parents.iter().take(3).enumerate() {
            if let Some(p) = self.handles.get_mut(i) {
                p.users += 1;
                up[k] = p.uid;
            }
        }
        self.next_uid += 1;
        h.uid = self.next_uid;
        h.users = 0;
        h.parents = up;
        if self.handles.len() >= MAX_HANDLES {
            // Forget the oldest dead one first, else the oldest.
            let i = self.handles.iter().position(|h| !h.live).unwrap_or(0);
            self.handles.remove(i);
        }
        self.handles.push(h);
    }

    /// Whether the handle at `i` has live dependents (its destroy is
    /// `EBUSY`).
    pub(crate) fn busy(&self, i: Option<usize>) -> bool {
        i.and_then(|i| self.handles.get(i))
            .is_some_and(|h| h.users > 0)
    }

    /// The tag of a picked handle that is being destroyed.
    pub(crate) fn destroy_tag(&self, got: Pick, i: Option<usize>) -> &'static str {
        if got == Pick::Live && self.busy(i) {
            "busy"
        } else {
            got.tag()
        }
    }

    /// `(uid, users)` of every handle, to see what a thread or child changed.
    pub(crate) fn users_of(&self) -> Vec<(u64, u32)> {
        self.handles.iter().map(|h| (h.uid, h.users)).collect()
    }

    /// Applies the change of users a thread or child made to borrowed
    /// handles: `before` and `after` as from [`Pool::users_of`].
    pub(crate) fn apply_users(&mut self, before: &[(u64, u32)], after: &[(u64, u32)]) {
        for &(uid, now) in after {
            let Some(&(_, was)) = before.iter().find(|b| b.0 == uid) else {
                continue;
            };
            if let Some(h) = self.handles.iter_mut().find(|h| h.uid == uid) {
                h.users = (h.users + now).saturating_sub(was);
            }
        }
    }

    fn choose(&self, rng: &mut Rng, f: impl Fn(&Handle) -> bool) -> Option<usize> {
        let c: Vec<usize> = (0..self.handles.len())
            .filter(|&i| f(&self.handles[i]))
            .collect();
        let r = rng.below(c.len());
        c.get(r).copied()
    }

    /// A handle of type `obj` for `file`, filled as `how` asks (two draws).
    /// Returns the value, what was found, and the pool index of the handle.
    pub(crate) fn pick(
        &self,
        rng: &mut Rng,
        file: u32,
        obj: u16,
        how: Pick,
        destroy: bool,
    ) -> (u32, Pick, Option<usize>) {
        let random = rng.next() as u32;
        let found = match how {
            Pick::Live | Pick::None | Pick::Aliased => self.choose(rng, |h| {
                h.live && h.file == file && h.obj == obj && (h.owned || !destroy)
            }),
            Pick::Stale => self.choose(rng, |h| !h.live && h.file == file && h.obj == obj),
            Pick::OtherFile => self.choose(rng, |h| h.live && h.file != file && h.obj == obj),
            Pick::WrongType => self.choose(rng, |h| h.live && h.file == file && h.obj != obj),
            Pick::Random => {
                let _ = rng.next();
                // Above any handle either stack has handed out: the outcome
                // does not depend on how a stack numbers its objects.
                return (0x10_0000 + random % 64, Pick::Random, None);
            }
        };
        match found {
            Some(i) if matches!(how, Pick::Stale | Pick::OtherFile) => {
                let v = self.handles[i].value;
                match self.alias(file, obj, v) {
                    // A thread or child never acts on the main sequence's
                    // objects through an alias (the main one would not know).
                    Some(j) if !self.handles[j].owned => {
                        (0x10_0000 + random % 64, Pick::Random, None)
                    }
                    Some(j) => (v, Pick::Aliased, Some(j)),
                    None => (v, how, Some(i)),
                }
            }
            Some(i) => (self.handles[i].value, how, Some(i)),
            // Nothing of the kind: a small number that may or may not name
            // an object (of a thread, a child, a stale slot): the outcome
            // depends on object numbers, so the call is not compared. A
            // thread or child never names one of the main sequence's
            // objects so (a destroy of it would leave the main sequence
            // holding a handle that one stack has and the other has not,
            // depending on how the threads interleaved): a number above any
            // handle then.
            None => match self.alias(file, obj, random % 16) {
                Some(j) if !self.handles[j].owned => (0x10_0000 + random % 64, Pick::None, None),
                _ => (random % 16, Pick::None, None),
            },
        }
    }

    /// The live handle of `file` and type `obj` whose value is `v`.
    pub(crate) fn alias(&self, file: u32, obj: u16, v: u32) -> Option<usize> {
        self.handles
            .iter()
            .position(|h| h.live && h.file == file && h.obj == obj && h.value == v)
    }

    pub(crate) fn kill(&mut self, i: usize) {
        let Some(h) = self.handles.get_mut(i) else {
            return;
        };
        h.live = false;
        let parents = h.parents;
        for uid in parents.into_iter().filter(|&u| u != 0) {
            if let Some(p) = self.handles.iter_mut().find(|p| p.uid == uid) {
                p.users = p.users.saturating_sub(1);
            }
        }
    }

    /// A file was closed for good: its objects are gone.
    pub(crate) fn file_closed(&mut self, file: u32) -> Vec<i32> {
        let mut fds = Vec::new();
        for h in self.handles.iter_mut().filter(|h| h.file == file && h.live) {
            h.live = false;
            if is_fd_object(h.obj) && h.owned {
                fds.push(h.value as i32);
            }
        }
        fds
    }

    /// A copy for a child process or thread: nothing in it is its own.
    pub(crate) fn borrowed(&self, range: u64) -> Pool {
        let mut p = self.clone();
        p.next_uid = range << 32;
        for h in &mut p.handles {
            h.owned = false;
        }
        p
    }
}

pub(crate) fn is_fd_object(obj: u16) -> bool {
    obj == crate::abi::ids::obj::ASYNC_EVENT || obj == crate::abi::ids::obj::COMP_CHANNEL
}

/// The wrong handle a mutated request carries.
pub(crate) fn handle_mutation(rng: &mut Rng) -> Pick {
    match rng.below(4) {
        0 => Pick::Stale,
        1 => Pick::OtherFile,
        2 => Pick::WrongType,
        _ => Pick::Random,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cq(value: u32) -> Handle {
        Handle {
            file: 1,
            obj: crate::abi::ids::obj::CQ,
            value,
            live: true,
            owned: true,
            uid: 0,
            users: 0,
            parents: [0; 3],
        }
    }

    /// A thread or child with no CQ of its own never destroys one of the
    /// main sequence's by a small number (the seed-7 divergences: a CQ and an MR gone on
    /// one stack only).
    #[test]
    fn borrowed_destroy_never_names_a_main_object() {
        let mut main = Pool::default();
        for v in 0..4 {
            main.add(cq(v), &[]);
        }
        let child = main.borrowed(7);
        let mut named_small = 0;
        for seed in 0..2000 {
            let mut rng = Rng::new(seed);
            let (v, got, idx) = child.pick(&mut rng, 1, crate::abi::ids::obj::CQ, Pick::Live, true);
            assert_eq!(got, Pick::None);
            assert_eq!(idx, None);
            assert!(v >= 4, "seed {seed}: destroy names main CQ {v}");
            if v < 16 {
                named_small += 1;
            }
        }
        // Numbers that name nothing of the main's are still small ones.
        assert!(named_small > 0);
        // The main sequence's own picks are unchanged: a live CQ of its own.
        let mut rng = Rng::new(1);
        let (_, got, idx) = main.pick(&mut rng, 1, crate::abi::ids::obj::CQ, Pick::Live, true);
        assert_eq!(got, Pick::Live);
        assert!(idx.is_some());
    }

    /// The guard draws nothing more: a borrowed pick leaves the generator where an owned
    /// one does.
    #[test]
    fn the_guard_keeps_the_draws() {
        let mut main = Pool::default();
        main.add(cq(0), &[]);
        let child = main.borrowed(3);
        let empty = Pool::default();
        for seed in 0..200 {
            let (mut a, mut b) = (Rng::new(seed), Rng::new(seed));
            child.pick(&mut a, 1, crate::abi::ids::obj::CQ, Pick::Live, true);
            empty.pick(&mut b, 1, crate::abi::ids::obj::CQ, Pick::Live, true);
            assert_eq!(a.next(), b.next());
        }
    }
}
