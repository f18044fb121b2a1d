// SPDX-License-Identifier: GPL-2.0

//! Counters and the coverage report: which ioctl methods, attributes and
//! write commands of the spec tables were sent, and how many succeeded.

use std::collections::BTreeMap;

use crate::abi::std_types::{CORE_OBJECTS, WRITE_OBJECTS};
use crate::names;

#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    pub(crate) calls: u64,
    pub(crate) ok: u64,
    /// `ioctl OBJ.METHOD`, `write CMD`, `mmap`, ...: (calls, successes).
    pub(crate) by_key: BTreeMap<String, (u64, u64)>,
    /// `OBJ.METHOD/attr`: times sent, times in a call that succeeded.
    pub(crate) attrs: BTreeMap<String, (u64, u64)>,
    pub(crate) errnos: BTreeMap<i32, u64>,
}

impl Stats {
    pub(crate) fn record(&mut self, key: &str, errno: i32) {
        self.calls += 1;
        let e = self.by_key.entry(key.to_string()).or_default();
        e.0 += 1;
        if errno == 0 {
            self.ok += 1;
            e.1 += 1;
        }
        *self.errnos.entry(errno).or_default() += 1;
    }

    pub(crate) fn attr(&mut self, key: String, ok: bool) {
        let e = self.attrs.entry(key).or_default();
        e.0 += 1;
        if ok {
            e.1 += 1;
        }
    }

    pub(crate) fn merge(&mut self, o: &Stats) {
        self.calls += o.calls;
        self.ok += o.ok;
        for (k, v) in &o.by_key {
            let e = self.by_key.entry(k.clone()).or_default();
            e.0 += v.0;
            e.1 += v.1;
        }
        for (k, v) in &o.attrs {
            let e = self.attrs.entry(k.clone()).or_default();
            e.0 += v.0;
            e.1 += v.1;
        }
        for (k, v) in &o.errnos {
            *self.errnos.entry(*k).or_default() += v;
        }
    }

    /// The coverage lines and the summary figures (methods called / with a
    /// success / in the tables, the same for attributes and writes).
    pub(crate) fn coverage(&self) -> (Vec<String>, Coverage) {
        let mut lines = Vec::new();
        let mut c = Coverage::default();
        for o in CORE_OBJECTS {
            for m in o.methods {
                let name = names::method(o.id, m.id);
                let (n, ok) = self
                    .by_key
                    .get(&format!("ioctl {name}"))
                    .copied()
                    .unwrap_or_default();
                c.methods.total += 1;
                c.methods.called += u32::from(n > 0);
                c.methods.succeeded += u32::from(ok > 0);
                lines.push(format!("cov| ioctl {name:<28} calls {n:>9} ok {ok:>8}"));
                for a in m.attrs {
                    let key = format!("{name}/{:#x}", a.id);
                    let (n, ok) = self.attrs.get(&key).copied().unwrap_or_default();
                    c.attrs.total += 1;
                    c.attrs.called += u32::from(n > 0);
                    c.attrs.succeeded += u32::from(ok > 0);
                    lines.push(format!("cov|   attr {key:<27} sent  {n:>9} ok {ok:>8}"));
                }
            }
        }
        for o in WRITE_OBJECTS {
            for w in o.writes {
                let name = names::write_cmd(w.cmd, w.is_ex);
                let (n, ok) = self
                    .by_key
                    .get(&format!("write {name}"))
                    .copied()
                    .unwrap_or_default();
                c.writes.total += 1;
                c.writes.called += u32::from(n > 0);
                c.writes.succeeded += u32::from(ok > 0);
                lines.push(format!("cov| write {name:<28} calls {n:>9} ok {ok:>8}"));
            }
        }
        for (k, (n, ok)) in &self.by_key {
            if !k.starts_with("ioctl ") && !k.starts_with("write ") {
                lines.push(format!("cov| {k:<34} calls {n:>9} ok {ok:>8}"));
            }
        }
        for (e, n) in &self.errnos {
            lines.push(format!("errno| {:<16} {n}", names::errno(*e)));
        }
        (lines, c)
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    pub(crate) called: u32,
    pub(crate) succeeded: u32,
    pub(crate) total: u32,
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Coverage {
    pub(crate) methods: Counts,
    pub(crate) attrs: Counts,
    pub(crate) writes: Counts,
}
