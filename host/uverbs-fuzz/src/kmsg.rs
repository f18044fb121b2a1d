// SPDX-License-Identifier: GPL-2.0

//! Watches the kernel log (`/dev/kmsg`) for the reports the log judge
//! fails on, so that the fuzzer can stop and print the calls that led to
//! one while they are still in its ring.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

const O_NONBLOCK: i32 = 0o4000;

/// The markers of `host/vmlog`'s judge (a subset: the ones a fuzzer can
/// provoke without the kernel panicking first).
const MARKERS: &[&str] = &[
    "BUG:",
    "WARNING:",
    "KASAN:",
    "UBSAN:",
    "kmemleak:",
    "panicked at",
    "Call Trace:",
    "ODEBUG:",
    "Oops:",
    "hung_task",
    "blocked for more than",
];

pub(crate) struct Watch(File);

impl Watch {
    pub(crate) fn open() -> Option<Self> {
        let mut f = OpenOptions::new()
            .read(true)
            .custom_flags(O_NONBLOCK)
            .open("/dev/kmsg")
            .ok()?;
        f.seek(SeekFrom::End(0)).ok()?;
        Some(Self(f))
    }

    /// The first new kernel log record that is a report, if any.
    pub(crate) fn poll(&mut self) -> Option<String> {
        let mut buf = [0u8; 8192];
        loop {
            match self.0.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => {
                    let rec = String::from_utf8_lossy(&buf[..n]);
                    let msg = rec.split_once(';').map(|x| x.1).unwrap_or(&rec).trim_end();
                    if MARKERS.iter().any(|m| msg.contains(m)) {
                        return Some(msg.lines().next().unwrap_or("").to_string());
                    }
                }
                // EPIPE: records were overwritten; keep reading.
                Err(e) if e.raw_os_error() == Some(32) => continue,
                Err(_) => return None,
            }
        }
    }
}
