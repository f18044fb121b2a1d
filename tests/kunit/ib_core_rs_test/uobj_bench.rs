// SPDX-License-Identifier: GPL-2.0

//! `uobj_bench=N`: the cost of a handle lookup and of a destroy plus a create in a uverbs
//! file's handle table ([`HandleTable`], `uverbs/uobject_table.rs`) holding 10, 1k, 10k and
//! 100k objects (those up to N), next to a linear table (a `KVec` searched linearly,
//! new ids found by rescanning it, `LinearTable` below). Figures for
//! `Documentation/performance.md`, not a pass/fail test: nothing here depends on the device.

use ib_core_rs::uverbs::uobject_table::HandleTable;
use kernel::prelude::*;
use kernel::time::{Instant, Monotonic};

/// A linear table for comparison: objects oldest first, found by position.
struct LinearTable {
    objs: KVec<(u32, u16, u64)>,
}

impl LinearTable {
    fn free_id(&self) -> u32 {
        let mut id = 0u32;
        while self.objs.iter().any(|o| o.0 == id) {
            id += 1;
        }
        id
    }

    fn find(&self, id: u32) -> Option<usize> {
        self.objs.iter().position(|o| o.0 == id)
    }
}

/// A small xorshift: handles to look up, spread over the table.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u32) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % u64::from(n.max(1))) as u32
    }
}

/// Nanoseconds per round of `rounds` rounds of `f`.
fn per_round(rounds: u32, mut f: impl FnMut() -> Result) -> Result<i64> {
    let t0 = Instant::<Monotonic>::now();
    for _ in 0..rounds {
        f()?;
    }
    Ok(t0.elapsed().as_nanos() / i64::from(rounds.max(1)))
}

fn one_size(n: u32) -> Result {
    let mut t = HandleTable::<u64>::new();
    let mut lin = LinearTable { objs: KVec::new() };
    for i in 0..n {
        t.insert(t.free_id(None), 1, u64::from(i))?;
        lin.objs.push((i, 1, u64::from(i)), GFP_KERNEL)?;
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut sum = 0u64;
    let lookups = 20_000;
    let lookup = per_round(lookups, || {
        let id = t.lookup(1, i64::from(rng.below(n)))?;
        sum = sum.wrapping_add(t.get(id).copied().unwrap_or(0));
        Ok(())
    })?;
    // A destroy of a random object, then a create (the lowest free handle is the one
    // just freed).
    let pairs = 5_000;
    let churn = per_round(pairs, || {
        let id = t.lookup(1, i64::from(rng.below(n)))?;
        let v = t.take(id).ok_or(EINVAL)?;
        t.remove(id);
        t.insert(t.free_id(None), 1, v)
    })?;
    // The linear table: fewer rounds where a round is long (its cost grows with n).
    let lin_lookups = (2_000_000 / n.max(1)).clamp(10, lookups);
    let lin_lookup = per_round(lin_lookups, || {
        let pos = lin.find(rng.below(n)).ok_or(ENOENT)?;
        sum = sum.wrapping_add(lin.objs.get(pos).map_or(0, |o| o.2));
        Ok(())
    })?;
    // free_id() rescans the table once per candidate: at 100k objects one create is
    // billions of comparisons, so that size is not measured.
    let lin_churn = if n <= 10_000 {
        let rounds = (200_000 / n.max(1)).clamp(3, pairs);
        Some(per_round(rounds, || {
            let pos = lin.find(rng.below(n)).ok_or(ENOENT)?;
            let o = lin.objs.remove(pos).map_err(|_| EINVAL)?;
            let id = lin.free_id();
            lin.objs.push((id, o.1, o.2), GFP_KERNEL)?;
            Ok(())
        })?)
    } else {
        None
    };
    match lin_churn {
        Some(c) => pr_info!(
            "ib_core_rs uobject bench: {} objects: lookup {} ns, destroy+create {} ns; linear table: lookup {} ns, destroy+create {} ns ({})\n",
            n, lookup, churn, lin_lookup, c, sum % 2
        ),
        None => pr_info!(
            "ib_core_rs uobject bench: {} objects: lookup {} ns, destroy+create {} ns; linear table: lookup {} ns, destroy+create not measured ({})\n",
            n, lookup, churn, lin_lookup, sum % 2
        ),
    }
    Ok(())
}

/// Runs the sizes up to `max` objects.
pub(crate) fn run(max: u32) -> Result {
    for n in [10u32, 1_000, 10_000, 100_000] {
        if n <= max {
            one_size(n)?;
        }
    }
    Ok(())
}
