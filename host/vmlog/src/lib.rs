//! The judge of an rdma-rs test VM's console log.
//!
//! The VM prints everything on one serial console: the kernel's messages
//! (including the KTAP of every KUnit suite, printed when a module that
//! carries suites is loaded) and the output of the user-space test scripts,
//! which print KTAP in the same shape. This crate reads that log and decides:
//!
//! * every KTAP test case, grouped by suite (`# Subtest:` lines), as passed,
//!   failed or skipped;
//! * every kernel report that means a bug even when all tests passed: oops,
//!   BUG, WARN, KASAN, lockdep, kmemleak, panics, hung tasks, call traces;
//! * whether the VM reached the end of its script (the done marker): a log
//!   truncated by a crash or by the harness's timeout is a failure;
//! * zero tests run is a failure.

#![deny(warnings, unreachable_pub, rust_2018_idioms)]

/// The line the VM's init prints after its last step, right before it powers
/// off. A log without it was cut short.
pub const DONE_MARKER: &str = "RDMARS-VM-DONE";

/// Outcome of one test case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `ok`.
    Passed,
    /// `not ok`.
    Failed,
    /// `ok ... # SKIP`.
    Skipped,
}

/// One test case result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The suite (innermost `# Subtest:`) it belongs to; `-` if none.
    pub suite: String,
    /// The case's name.
    pub name: String,
    /// Its outcome.
    pub outcome: Outcome,
}

/// A kernel report that fails the run by itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Splat {
    /// 1-based line number in the log.
    pub line: usize,
    /// What kind of report (the pattern that matched).
    pub kind: &'static str,
    /// The line itself.
    pub text: String,
}

/// The verdict on a whole log.
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    /// Every test case, in log order.
    pub cases: Vec<Case>,
    /// Every kernel report found.
    pub splats: Vec<Splat>,
    /// Suites whose result line never came (the suite crashed or the log
    /// was cut short).
    pub unfinished_suites: Vec<String>,
    /// Suites whose own result line says `not ok` although none of their
    /// cases failed (e.g. the suite's init failed).
    pub failed_suites: Vec<String>,
    /// Whether the done marker was seen.
    pub done: bool,
}

/// Kernel report patterns: (substring, kind). Order matters only for the
/// kind shown; every line is checked against all of them.
const SPLAT_PATTERNS: &[(&str, &str)] = &[
    ("BUG: KASAN:", "KASAN"),
    ("KASAN:", "KASAN"),
    ("BUG:", "BUG"),
    ("kernel BUG at", "BUG"),
    ("Oops:", "oops"),
    ("general protection fault", "oops"),
    ("WARNING: possible circular locking", "lockdep"),
    ("WARNING: possible recursive locking", "lockdep"),
    ("WARNING: inconsistent lock state", "lockdep"),
    ("WARNING: suspicious RCU usage", "lockdep"),
    ("WARNING:", "WARN"),
    ("possible deadlock", "lockdep"),
    ("new suspected memory leaks", "kmemleak"),
    ("unreferenced object 0x", "kmemleak"),
    ("Kernel panic", "panic"),
    ("panicked at", "rust panic"),
    ("UBSAN:", "UBSAN"),
    ("INFO: task ", "hung task"),
    ("ODEBUG:", "debugobjects"),
    ("Call Trace:", "call trace"),
];

/// Removes the printk timestamp (`[    1.234567] `) and trailing CR.
fn strip(line: &str) -> &str {
    let line = line.trim_end_matches(['\r', '\n']);
    if let Some(rest) = line.strip_prefix('[') {
        if let Some(end) = rest.find(']') {
            let ts = &rest[..end];
            if ts.trim().chars().all(|c| c.is_ascii_digit() || c == '.') && !ts.trim().is_empty() {
                let after = &rest[end + 1..];
                return after.strip_prefix(' ').unwrap_or(after);
            }
        }
    }
    line
}

/// Parses a KTAP result line (`ok 3 name`, `not ok 1 name # SKIP why`)
/// after its indentation. Returns (outcome, name).
fn parse_result(body: &str) -> Option<(Outcome, String)> {
    let (failed, rest) = if let Some(r) = body.strip_prefix("not ok ") {
        (true, r)
    } else if let Some(r) = body.strip_prefix("ok ") {
        (false, r)
    } else {
        return None;
    };
    let (num, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (name, directive) = match rest.split_once(" # ") {
        Some((n, d)) => (n, Some(d)),
        None => (rest, None),
    };
    let skipped =
        directive.is_some_and(|d| d.trim_start().to_ascii_uppercase().starts_with("SKIP"));
    let outcome = if failed {
        Outcome::Failed
    } else if skipped {
        Outcome::Skipped
    } else {
        Outcome::Passed
    };
    Some((outcome, name.trim().to_string()))
}

struct Frame {
    name: String,
    indent: usize,
    children: usize,
    failed_children: usize,
}

/// Judges a console log.
pub fn judge(log: &str) -> Verdict {
    let mut v = Verdict::default();
    let mut stack: Vec<Frame> = Vec::new();
    for (i, raw) in log.lines().enumerate() {
        let line = strip(raw);
        if line.contains(DONE_MARKER) {
            v.done = true;
        }
        for (pat, kind) in SPLAT_PATTERNS {
            if line.contains(pat) {
                v.splats.push(Splat {
                    line: i + 1,
                    kind,
                    text: line.trim().to_string(),
                });
                break;
            }
        }
        let body = line.trim_start_matches([' ', '\t']);
        let indent = line.len() - body.len();
        if let Some(name) = body.strip_prefix("# Subtest: ") {
            // A new subtest at the same or a shallower level ends any deeper
            // frame that never printed its result.
            while stack.last().is_some_and(|f| f.indent >= indent) {
                if let Some(f) = stack.pop() {
                    v.unfinished_suites.push(f.name);
                }
            }
            stack.push(Frame {
                name: name.trim().to_string(),
                indent,
                children: 0,
                failed_children: 0,
            });
            continue;
        }
        let Some((outcome, name)) = parse_result(body) else {
            continue;
        };
        // Frames deeper than this line are closed by it.
        let mut closed: Option<Frame> = None;
        while stack.last().is_some_and(|f| f.indent > indent) {
            let f = stack.pop();
            if let Some(prev) = closed.take() {
                v.unfinished_suites.push(prev.name);
            }
            closed = f;
        }
        match closed {
            Some(f) if f.name == name && f.children > 0 => {
                // The frame's own summary line.
                if outcome == Outcome::Failed && f.failed_children == 0 {
                    v.failed_suites.push(f.name);
                }
                if let Some(parent) = stack.last_mut() {
                    parent.children += 1;
                    if outcome == Outcome::Failed {
                        parent.failed_children += 1;
                    }
                }
                continue;
            }
            Some(f) => {
                if f.name != name {
                    v.unfinished_suites.push(f.name);
                }
                // A frame with no cases (e.g. `1..0`) reports as one case.
            }
            None => {}
        }
        let suite = stack
            .last()
            .map_or_else(|| "-".to_string(), |f| f.name.clone());
        if let Some(parent) = stack.last_mut() {
            parent.children += 1;
            if outcome == Outcome::Failed {
                parent.failed_children += 1;
            }
        }
        v.cases.push(Case {
            suite,
            name,
            outcome,
        });
    }
    v.unfinished_suites
        .extend(stack.into_iter().map(|f| f.name));
    v
}

impl Verdict {
    /// Counts (passed, failed, skipped) test cases.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for case in &self.cases {
            match case.outcome {
                Outcome::Passed => c.0 += 1,
                Outcome::Failed => c.1 += 1,
                Outcome::Skipped => c.2 += 1,
            }
        }
        c
    }

    /// Problems outside the test cases that fail the run, one line each.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        for s in &self.splats {
            p.push(format!(
                "kernel report ({}) at log line {}: {}",
                s.kind, s.line, s.text
            ));
        }
        for s in &self.unfinished_suites {
            p.push(format!("suite {s} did not finish"));
        }
        for s in &self.failed_suites {
            p.push(format!("suite {s} reported not ok"));
        }
        if !self.done {
            p.push(format!(
                "the VM did not reach its end ({DONE_MARKER} missing): crash or timeout"
            ));
        }
        if self.cases.is_empty() {
            p.push("zero tests ran".to_string());
        }
        p
    }

    /// Whether the run passes: no failed case and no problem.
    pub fn passed(&self) -> bool {
        self.counts().1 == 0 && self.problems().is_empty()
    }

    /// Per-suite (suite, passed, failed, skipped), in first-seen order.
    pub fn per_suite(&self) -> Vec<(String, usize, usize, usize)> {
        let mut out: Vec<(String, usize, usize, usize)> = Vec::new();
        for c in &self.cases {
            let idx = match out.iter().position(|s| s.0 == c.suite) {
                Some(i) => i,
                None => {
                    out.push((c.suite.clone(), 0, 0, 0));
                    out.len() - 1
                }
            };
            let e = &mut out[idx];
            match c.outcome {
                Outcome::Passed => e.1 += 1,
                Outcome::Failed => e.2 += 1,
                Outcome::Skipped => e.3 += 1,
            }
        }
        out
    }
}
