// SPDX-License-Identifier: GPL-2.0

//! The fuzzer's only source of randomness: SplitMix64, so that a seed names
//! one sequence on every machine and every run.

/// A deterministic generator. Every draw advances it by one step whatever
/// the value is used for, so two runs with the same seed draw the same
/// numbers even when the kernels answer differently (the differential mode
/// depends on it: see `Fuzzer::step`).
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed ^ 0x0005_eed0_f0dd_ba11)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (0 when `n` is 0); always one draw.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let v = self.next();
        if n == 0 {
            0
        } else {
            (v % n as u64) as usize
        }
    }

    /// True with probability `num / den`; always one draw.
    pub(crate) fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next() % den < num
    }

    /// A generator of its own for a child process or a thread: one draw.
    pub(crate) fn fork(&mut self) -> Rng {
        Rng(self.next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..1000 {
            assert_eq!(a.next(), b.next());
        }
        assert_ne!(Rng::new(1).next(), Rng::new(2).next());
    }

    #[test]
    fn below_is_in_range() {
        let mut r = Rng::new(7);
        for n in 1..50 {
            assert!(r.below(n) < n);
        }
        assert_eq!(r.below(0), 0);
    }
}
