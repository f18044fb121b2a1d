// SPDX-License-Identifier: GPL-2.0

//! Host tests of the queue buffers (`ring.rs`): ring geometry, counter wrap and phase, the
//! pages a `pas[]` translates, entries and doorbell words read through the translation.

use std::vec;
use std::vec::Vec;

use super::engine_tests::Mem;
use super::ring::{Buf, Ring};
use super::xlat::Xlat;

/// A `pas[]` of the given page addresses.
fn pas(pages: &[u64]) -> Vec<u8> {
    pages.iter().flat_map(|p| p.to_be_bytes()).collect()
}

#[test]
fn geometry() {
    let r = Ring::new(3, 6, 0x100);
    assert_eq!(r.entries(), 8);
    assert_eq!(r.stride(), 64);
    assert_eq!(r.bytes(), 512);
    assert_eq!(r.end(), 0x300);
    assert_eq!(r.at(0), 0x100);
    assert_eq!(r.at(7), 0x100 + 7 * 64);
    // Counters wrap to the ring; the phase flips on each pass.
    assert_eq!(r.at(8), 0x100);
    assert_eq!(r.at(13), 0x100 + 5 * 64);
    assert!(!r.phase(7));
    assert!(r.phase(8));
    assert!(!r.phase(16));
    assert!(r.phase(0x00ff_ffff));
}

#[test]
fn geometry_out_of_range() {
    // 2^32 entries do not fit the counters: every counter value is its own entry.
    let r = Ring::new(32, 4, 0);
    assert_eq!(r.entries(), 0);
    assert_eq!(r.at(5), 5 << 4);
    assert!(!r.phase(u32::MAX));
    assert_eq!(Ring::new(60, 10, 0).bytes(), u64::MAX);
    assert_eq!(Ring::new(60, 10, 1).end(), u64::MAX);
}

#[test]
fn from_pas_translates_the_pages_reached() {
    // Pages of 8 KiB (log_page_size 1), the first byte half a page in (page_offset 32):
    // 12 KiB reach into the second page, not the third.
    let p = pas(&[0x10_0000, 0x10_4000, 0x10_8000]);
    let b = Buf::from_pas(&p, 0, 1, 32, 0x3000, 0x77).unwrap();
    assert_eq!(b.off, 0x1000);
    assert_eq!(b.dbr, 0x77);
    assert_eq!(b.xlat.at(0x1000), Some((0x10_1000, 0x1000)));
    assert_eq!(b.xlat.at(0x2000), Some((0x10_4000, 0x2000)));
    assert_eq!(b.xlat.at(0x4000), None);
    // The pas[] of an inbox, after its fixed layout.
    let mut inbox = vec![0u8; 16];
    inbox.extend_from_slice(&pas(&[0x10_2000]));
    let b = Buf::from_pas(&inbox, 16, 0, 0, 64, 0).unwrap();
    assert_eq!(b.off, 0);
    assert_eq!(b.xlat.at(0), Some((0x10_2000, 0x1000)));
    assert_eq!(b.xlat.at(0x1000), None);
}

#[test]
fn from_pas_bad_page_size_translates_nothing() {
    let b = Buf::from_pas(&pas(&[0x10_0000]), 0, 64, 0, 64, 0).unwrap();
    assert_eq!(b.xlat.at(0), None);
}

#[test]
fn entries_through_the_translation() {
    let mem = Mem::new(0x10_0000);
    let lo = mem.map(0x1000, true);
    let hi = mem.map(0x1000, true);
    let db = mem.map(8, true);
    // The buffer's second page is the lower one on the bus.
    let p = pas(&[hi, lo]);
    let mut b = Buf::from_pas(&p, 0, 0, 0, 0x2000, db).unwrap();
    let rq = Ring::new(5, 7, 0);
    let sq = Ring::new(6, 6, rq.end());
    assert_eq!(sq.start, 0x1000);
    assert!(b.write(&mem, sq.at(1), &[1, 2, 3, 4]));
    let mut got = [0u8; 4];
    // Counter 65 is entry 1 again.
    assert!(sq.read(&mem, &b, 65, &mut got));
    assert_eq!(got, [1, 2, 3, 4]);
    assert_eq!(mem.get(lo + 0x40, 4), [1, 2, 3, 4]);
    // RQ entry 3 is in the first page of the buffer.
    assert!(b.write(&mem, rq.at(3), &[9]));
    assert_eq!(mem.get(hi + 3 * 128, 1), [9]);
    // Past the translation.
    assert!(!b.read(&mem, 0x2000, &mut got));
    // The doorbell record's words are big-endian.
    mem.put32(db + 4, 0x102);
    assert_eq!(b.db(&mem, 4), Some(0x102));
    b.dbr = 0;
    assert_eq!(b.db(&mem, 4), None);
    // Moved into a umem: the new translation starts at the buffer's first byte.
    let mut moved = Buf::from_pas(&p, 0, 0, 16, 64, 0).unwrap();
    assert_eq!(moved.off, 1024);
    moved.move_to(Xlat::from_pages(&pas(&[lo]), 0, 1, 4096).unwrap());
    assert!(moved.read(&mem, 0x40, &mut got));
    assert_eq!(got, [1, 2, 3, 4]);
}

#[test]
fn from_ctx_reads_the_placement_members() {
    use crate::prm::ctx::cqc;
    let mut ctx = vec![0u8; cqc::SIZE_BYTES];
    cqc::log_page_size.set(&mut ctx, 1).unwrap();
    cqc::page_offset.set(&mut ctx, 32).unwrap();
    cqc::dbr_addr.set64(&mut ctx, 0x1234_5678_9ab0).unwrap();
    let p = pas(&[0x10_0000, 0x10_4000]);
    let place = [cqc::log_page_size, cqc::page_offset, cqc::dbr_addr];
    let b = Buf::from_ctx(&ctx, place, &p, 0, 0x1000).unwrap();
    let a = Buf::from_pas(&p, 0, 1, 32, 0x1000, 0x1234_5678_9ab0).unwrap();
    assert_eq!((b.off, b.dbr), (0x1000, 0x1234_5678_9ab0));
    assert_eq!((a.off, a.dbr), (b.off, b.dbr));
    assert_eq!(b.xlat.at(0x1000), a.xlat.at(0x1000));
    // 4 KiB from half way into the first 8 KiB page: the second page is not reached.
    assert_eq!(b.xlat.at(0x2000), None);
}
