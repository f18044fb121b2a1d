// SPDX-License-Identifier: GPL-2.0

//! The order of a fabric's UAR traps: whether they are a ping-pong.
//!
//! In a ping-pong each end's store is answered by the other end's, so the worker does not
//! need to re-arm a page: the peer's fault does (`Fabric::trap_rung` in `fabric.rs`).
//! Taking a stream for a ping-pong is costly, though: the stream's page is left installed
//! for a peer's fault that never comes, its later stores land without a fault, and only a
//! rescan (a jiffy or more later) finds their WQEs. A stream's first trap right after other
//! traps (a connection's setup, an earlier program's ping-pong) "alternates" with them, so
//! one change of page is not enough: only traps that go back and forth between the same two
//! pages, this page / the other / this page again, [`PINGPONG_AFTER`] times in a row, are a
//! ping-pong, and a page that traps twice in a row without the other ends it at once.
//!
//! Pure: no kernel types, so the host crate (`host/prm`) runs the tests below with `cargo`.

/// Traps in a row that came back to the page before the last one (A B A counts one, A B A B
/// two) before the traps are taken for a ping-pong. Two: a single exchange (a connection's
/// setup) is not yet a ping-pong, and the third trap of a real ping-pong is the last one that
/// wakes the worker.
pub(crate) const PINGPONG_AFTER: u32 = 2;

/// The recent order of traps on a fabric's pages, each page named by a non-zero number that
/// no other page of the fabric ever had (a page's address may be reused by a later page).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TrapOrder {
    /// The page of the last trap (0: none).
    last: u64,
    /// The page of the trap before it (0: none).
    before: u64,
    /// Traps in a row that came back to `before` (see [`PINGPONG_AFTER`]).
    returns: u32,
}

impl TrapOrder {
    /// No trap seen yet.
    pub(crate) const fn new() -> Self {
        TrapOrder {
            last: 0,
            before: 0,
            returns: 0,
        }
    }

    /// Records a trap of `page` (non-zero) and returns whether the traps are a ping-pong now
    /// ([`TrapOrder::pingpong`]).
    pub(crate) fn trap(&mut self, page: u64) -> bool {
        self.returns = if page != self.last && self.last != 0 && page == self.before {
            // This page, the other, this page again.
            self.returns.saturating_add(1)
        } else {
            // The same page twice in a row (a stream), a page that is neither of the last
            // two (another program, a third party), or the first trap.
            0
        };
        self.before = self.last;
        self.last = page;
        self.pingpong()
    }

    /// Whether the last traps went back and forth between two pages [`PINGPONG_AFTER`] times
    /// in a row: each end's store answers the other's.
    pub(crate) fn pingpong(&self) -> bool {
        self.returns >= PINGPONG_AFTER
    }

    /// Forgets the order: a page left to its peer's fault had stores that no trap served (a
    /// rescan found their WQEs), so the traps were not a ping-pong after all and must show the
    /// pattern again before the next page is left to its peer.
    pub(crate) fn reset(&mut self) {
        *self = TrapOrder::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// The answers of a fresh [`TrapOrder`] to `pages`, trap by trap.
    fn answers(order: &mut TrapOrder, pages: &[u64]) -> Vec<bool> {
        pages.iter().map(|&p| order.trap(p)).collect()
    }

    #[test]
    fn pingpong_after_the_pattern_twice() {
        let mut o = TrapOrder::new();
        // A B A: once; A B A B: twice, from the fourth trap on every trap is a ping-pong's.
        let got = answers(&mut o, &[1, 2, 1, 2, 1, 2, 1, 2]);
        assert_eq!(got, [false, false, false, true, true, true, true, true]);
    }

    #[test]
    fn stream_after_setup_traps_is_not_pingpong() {
        // A connection's exchange (or the last program's ping-pong on pages 1 and 2), then a
        // stream on a new page: its first trap follows another page's but goes back to none.
        let mut o = TrapOrder::new();
        answers(&mut o, &[1, 2, 1, 2, 1, 2]);
        assert!(o.pingpong());
        let got = answers(&mut o, &[3, 3, 3, 3]);
        assert_eq!(got, [false; 4]);
        // A single exchange before a stream on one of its own pages: not enough either.
        let mut o = TrapOrder::new();
        let got = answers(&mut o, &[5, 6, 5, 5, 5]);
        assert_eq!(got, [false; 5]);
    }

    #[test]
    fn one_page_twice_ends_pingpong() {
        let mut o = TrapOrder::new();
        answers(&mut o, &[1, 2, 1, 2, 1]);
        assert!(o.pingpong());
        // A ping-pong's end becomes a stream: the second trap in a row of page 1 ends it.
        assert!(!o.trap(1));
        assert!(!o.trap(1));
        // And only the pattern, twice again, brings it back.
        let got = answers(&mut o, &[2, 1, 2, 1]);
        assert_eq!(got, [false, false, true, true]);
    }

    #[test]
    fn stream_then_pingpong() {
        let mut o = TrapOrder::new();
        let got = answers(&mut o, &[4, 4, 4, 4]);
        assert_eq!(got, [false; 4]);
        // Page 7 answers the stream's page, which answers back: the stream's last trap is the
        // pattern's first (4 7 4 once, 7 4 7 twice).
        let got = answers(&mut o, &[7, 4, 7, 4, 7]);
        assert_eq!(got, [false, false, true, true, true]);
    }

    #[test]
    fn third_page_breaks_the_pattern() {
        let mut o = TrapOrder::new();
        answers(&mut o, &[1, 2, 1, 2]);
        assert!(o.pingpong());
        // Two ping-pongs interleaved on four pages, or a third page between them: the worker
        // serves them.
        let got = answers(&mut o, &[3, 1, 2, 3, 4, 1]);
        assert_eq!(got, [false; 6]);
    }

    #[test]
    fn reset_needs_the_pattern_again() {
        let mut o = TrapOrder::new();
        answers(&mut o, &[1, 2, 1, 2]);
        assert!(o.pingpong());
        o.reset();
        assert!(!o.pingpong());
        let got = answers(&mut o, &[1, 2, 1, 2]);
        assert_eq!(got, [false, false, false, true]);
    }
}
