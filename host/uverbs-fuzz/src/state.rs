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
        }
    }
}

pub(crate) const MAX_HANDLES: usize = 128;

#[derive(Clone, Debug, Default)]
pub(crate) struct Pool {
    pub(crate) handles: Vec<Handle>,
}

impl Pool {
    pub(crate) fn add(&mut self, h: Handle) {
        if self.handles.len() >= MAX_HANDLES {
            // Forget the oldest dead one first, else the oldest.
            let i = self.handles.iter().position(|h| !h.live).unwrap_or(0);
            self.handles.remove(i);
        }
        self.handles.push(h);
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
            Pick::Live | Pick::None => self.choose(rng, |h| {
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
            Some(i) => (self.handles[i].value, how, Some(i)),
            // Nothing of the kind: a small number that may or may not name
            // an object (of a thread, a child, a stale slot): the outcome
            // depends on object numbers, so the call is not compared.
            None => (random % 16, Pick::None, None),
        }
    }

    pub(crate) fn kill(&mut self, i: usize) {
        if let Some(h) = self.handles.get_mut(i) {
            h.live = false;
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
    pub(crate) fn borrowed(&self) -> Pool {
        let mut p = self.clone();
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
