// SPDX-License-Identifier: GPL-2.0

//! Fixed-capacity resource tables with hardware-style 24-bit object numbers.

use super::syndrome::CmdError;
use crate::prm::status::Status;

/// A table of up to `N` objects of type `T`, addressed by the number firmware hands out
/// (`pdn`, `cqn`, `qpn`, `mkey_index`, ...): number = `base` + slot.
///
/// Allocation is next-fit (a cursor walks forward past the last allocation and wraps), not
/// lowest-free: a number just freed is the last to be reused, so a driver that keeps using a
/// stale handle gets `BAD_RES_ERR` instead of silently reaching the object that replaced it. No
/// allocation happens after construction; a full table is how the simulator runs out of ICM.
pub(crate) struct ResTable<T: Copy, const N: usize> {
    slots: [Option<T>; N],
    next: usize,
    base: u32,
}

impl<T: Copy, const N: usize> ResTable<T, N> {
    /// The largest number a table may hand out: object numbers are 24-bit in the PRM.
    pub(crate) const MAX_NUMBER: u32 = 0x00ff_ffff;

    /// An empty table whose first object gets number `base` (never 0: a zeroed inbox field must
    /// not name a live object).
    pub(crate) const fn new(base: u32) -> Self {
        Self {
            slots: [None; N],
            next: 0,
            base,
        }
    }

    /// [`ResTable::new`] as an in-place initializer, for the kernel: the QP table alone is
    /// about 40 KiB, too big to pass through a kernel stack.
    #[cfg(MODULE)]
    pub(crate) fn new_in_place(base: u32) -> impl pin_init::Init<Self> {
        pin_init::init!(Self {
            slots <- pin_init::init_array_from_fn(|_| None),
            next: 0,
            base,
        })
    }

    /// Forgets every object in place (device reset), without moving the table.
    pub(crate) fn clear(&mut self) {
        for s in self.slots.iter_mut() {
            *s = None;
        }
        self.next = 0;
    }

    /// Stores `v` and returns its number, or `None` if the table is full.
    pub(crate) fn alloc(&mut self, v: T) -> Option<u32> {
        for i in 0..N {
            let slot = (self.next + i) % N;
            let number = self.base.checked_add(u32::try_from(slot).ok()?)?;
            if number > Self::MAX_NUMBER {
                continue;
            }
            if let Some(s @ None) = self.slots.get_mut(slot) {
                *s = Some(v);
                self.next = (slot + 1) % N;
                return Some(number);
            }
        }
        None
    }

    /// [`alloc`](Self::alloc) as a command's method needs it: a full table is the firmware's
    /// `NO_RES_ERR` ([`CmdError::TABLE_FULL`]).
    pub(crate) fn insert(&mut self, v: T) -> Result<u32, CmdError> {
        self.alloc(v).ok_or(CmdError::TABLE_FULL)
    }

    /// [`get`](Self::get) as a command's method needs it: a number that names no object is
    /// `BAD_RES_ERR` with the syndrome `unknown` of the table's kind.
    pub(crate) fn lookup(&self, number: u32, unknown: u32) -> Result<&T, CmdError> {
        self.get(number)
            .ok_or(CmdError::new(Status::BAD_RES_ERR, unknown))
    }

    /// [`get_mut`](Self::get_mut) with the error of [`lookup`](Self::lookup).
    pub(crate) fn lookup_mut(&mut self, number: u32, unknown: u32) -> Result<&mut T, CmdError> {
        self.get_mut(number)
            .ok_or(CmdError::new(Status::BAD_RES_ERR, unknown))
    }

    fn slot(&self, number: u32) -> Option<usize> {
        let idx = usize::try_from(number.checked_sub(self.base)?).ok()?;
        (idx < N).then_some(idx)
    }

    /// The object with this number, if it exists.
    pub(crate) fn get(&self, number: u32) -> Option<&T> {
        self.slots.get(self.slot(number)?)?.as_ref()
    }

    /// Mutable [`ResTable::get`].
    pub(crate) fn get_mut(&mut self, number: u32) -> Option<&mut T> {
        let s = self.slot(number)?;
        self.slots.get_mut(s)?.as_mut()
    }

    /// Removes and returns the object with this number.
    pub(crate) fn free(&mut self, number: u32) -> Option<T> {
        let s = self.slot(number)?;
        self.slots.get_mut(s)?.take()
    }

    /// The slot of object number `number` (whether or not it is live).
    pub(crate) fn slot_of(&self, number: u32) -> Option<usize> {
        self.slot(number)
    }

    /// The number and the object in slot `slot`, if live.
    pub(crate) fn at_slot(&self, slot: usize) -> Option<(u32, &T)> {
        let n = self.base.checked_add(u32::try_from(slot).ok()?)?;
        self.slots.get(slot)?.as_ref().map(|v| (n, v))
    }

    /// Mutable [`ResTable::at_slot`].
    pub(crate) fn at_slot_mut(&mut self, slot: usize) -> Option<(u32, &mut T)> {
        let n = self.base.checked_add(u32::try_from(slot).ok()?)?;
        self.slots.get_mut(slot)?.as_mut().map(|v| (n, v))
    }

    /// Number of live objects.
    pub(crate) fn count(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// Live objects with their numbers.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &T)> + '_ {
        let base = self.base;
        self.slots.iter().enumerate().filter_map(move |(i, s)| {
            let n = base.checked_add(u32::try_from(i).ok()?)?;
            s.as_ref().map(|v| (n, v))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_fit_numbers_and_capacity() {
        let mut t: ResTable<u8, 3> = ResTable::new(0x10);
        assert_eq!(t.alloc(1), Some(0x10));
        assert_eq!(t.alloc(2), Some(0x11));
        assert_eq!(t.free(0x10), Some(1));
        // Not reused at once: the cursor moves on first.
        assert_eq!(t.alloc(3), Some(0x12));
        assert_eq!(t.alloc(4), Some(0x10));
        assert_eq!(t.alloc(5), None, "full");
        assert_eq!(t.count(), 3);
        assert_eq!(t.get(0xf), None);
        assert_eq!(t.get(0x13), None);
        assert_eq!(t.get(u32::MAX), None);
        assert_eq!(t.iter().map(|(n, _)| n).sum::<u32>(), 0x10 + 0x11 + 0x12);
        t.clear();
        assert_eq!(t.count(), 0);
    }
}

/// An object of a [`ResTable`] that belongs to a uid: 0 for the kernel's, else a user
/// context's (the `uid` of the command that created it).
pub(crate) trait Owner {
    /// The uid it was created with.
    fn owner(&self) -> u16;
}

/// Implements [`Owner`] for the object types that keep their creator's uid in a field `uid`.
macro_rules! owner_is_uid {
    ($($t:ty),* $(,)?) => {
        $(
            impl crate::fwsim::table::Owner for $t {
                fn owner(&self) -> u16 {
                    self.uid
                }
            }
        )*
    };
}
pub(crate) use owner_is_uid;

impl<T: Copy + Owner, const N: usize> ResTable<T, N> {
    /// [`lookup`](Self::lookup) of an object that a command from `uid` may use
    /// ([`Fw::owned`](super::Fw::owned): the kernel any, a user context its own; else
    /// `BAD_RES_ERR` with `UID_MISMATCH`).
    pub(crate) fn lookup_owned(&self, number: u32, uid: u16, unknown: u32) -> Result<&T, CmdError> {
        let o = self.lookup(number, unknown)?;
        super::Fw::owned(uid, o.owner())?;
        Ok(o)
    }

    /// Frees an object a command from `uid` may use (the checks of
    /// [`lookup_owned`](Self::lookup_owned)): the DESTROY or DEALLOC of an object nothing
    /// else can hold.
    pub(crate) fn free_owned(
        &mut self,
        number: u32,
        uid: u16,
        unknown: u32,
    ) -> Result<(), CmdError> {
        self.lookup_owned(number, uid, unknown)?;
        self.free(number);
        Ok(())
    }
}
