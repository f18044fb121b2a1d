// SPDX-License-Identifier: GPL-2.0
//! The judge of an rdma-rs test VM's console log.
//!
//! The VM prints everything on one serial console: the kernel's messages
//! (including the KTAP of every KUnit suite, printed when a module that
//! carries suites is loaded) and the output of the user-space test scripts,
//! which print KTAP in the same shape. This crate reads that log and decides:
//!
//! * every KTAP test case, grouped by suite (`# Subtest:` lines), as passed,
//!   failed or skipped; a suite whose plan (`1..N`) does not match the
//!   results it printed was cut short;
//! * every kernel report that means a bug even when all tests passed: oops,
//!   BUG, WARN, KASAN, lockdep, kmemleak, panics, hung tasks, call traces;
//! * whether the VM reached the end of its script (the done marker): a log
//!   truncated by a crash or by the harness's timeout is a failure;
//! * whether the mode's script (`tests/vm/check.sh` for `make check`)
//!   exited with status 0 (the init's exit marker);
//! * zero tests run is a failure.
//!
//! Against the suite list (`tests/vm/suites.list`, the one list the VM's
//! scripts run from, built into the judge: [`Manifest::builtin`]),
//! [`judge_with`] also fails, by name, every suite of the log's mode that
//! never began, began but never ended, every KUnit suite that never
//! reported, and every suite in the log that the list does not name.

#![deny(warnings, unreachable_pub, rust_2018_idioms)]

/// The line the VM's init prints after its last step, right before it powers
/// off. A log without it was cut short.
pub const DONE_MARKER: &str = "RDMARS-VM-DONE";

/// The init's line with the mode script's exit status:
/// `RDMARS-VM-EXIT mode=check status=0`.
pub const EXIT_MARKER: &str = "RDMARS-VM-EXIT";

/// What `suite_begin NAME` (tests/vm/lib.sh) prints: `--- suite NAME`.
pub const SUITE_BEGIN: &str = "--- suite ";

/// The init's first line: `rdma-rs VM: mode check, kernel ...`.
pub const MODE_LINE: &str = "rdma-rs VM: mode ";

/// `tests/vm/suites.list` as it was when the judge was built.
pub const SUITES_LIST: &str = include_str!("../../../tests/vm/suites.list");

/// Where the suite list lives in the repository (for messages).
pub const SUITES_LIST_PATH: &str = "tests/vm/suites.list";

/// A suite of the list: a user-space VM suite or a KUnit suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `vm`: a shell function of tests/vm/*.sh run by `run_suites`.
    Vm,
    /// `kunit`: a KUnit suite that runs when its module is loaded.
    Kunit,
}

/// One line of the suite list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `vm` or `kunit`.
    pub kind: Kind,
    /// The suite's name, as its KTAP `# Subtest:` line gives it.
    pub name: String,
    /// The shell function that runs it (`vm`) or the module that carries
    /// it (`kunit`).
    pub runner: String,
    /// The VM modes it runs in (`check` is `make check`).
    pub modes: Vec<String>,
    /// 1-based line in the list.
    pub line: usize,
}

impl Entry {
    /// Whether it runs in `mode`.
    pub fn in_mode(&self, mode: &str) -> bool {
        self.modes.iter().any(|m| m == mode)
    }
}

/// The suite list: every suite of the VM, once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The lines, in file order (the order the suites run in).
    pub entries: Vec<Entry>,
}

fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl Manifest {
    /// Parses the list: `KIND NAME RUNNER MODES` a line, blank-separated,
    /// `#` to the end of a line is a comment. Errors name the line.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let mut m = Manifest::default();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("");
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.is_empty() {
                continue;
            }
            let at = format!("{SUITES_LIST_PATH}:{}", i + 1);
            if f.len() != 4 {
                return Err(format!(
                    "{at}: {} columns, want 4 (kind name function-or-module modes)",
                    f.len()
                ));
            }
            let kind = match f[0] {
                "vm" => Kind::Vm,
                "kunit" => Kind::Kunit,
                k => return Err(format!("{at}: unknown kind {k:?} (vm or kunit)")),
            };
            for w in [f[1], f[2]] {
                if !is_word(w) {
                    return Err(format!("{at}: {w:?} is not a name"));
                }
            }
            let modes: Vec<String> = f[3].split(',').map(str::to_string).collect();
            if modes.iter().any(|m| !is_word(m)) {
                return Err(format!("{at}: bad mode list {:?}", f[3]));
            }
            if let Some(prev) = m.get(f[1]) {
                return Err(format!(
                    "{at}: suite {} is already listed at line {}",
                    f[1], prev.line
                ));
            }
            m.entries.push(Entry {
                kind,
                name: f[1].to_string(),
                runner: f[2].to_string(),
                modes,
                line: i + 1,
            });
        }
        if m.entries.is_empty() {
            return Err(format!("{SUITES_LIST_PATH}: no suites"));
        }
        Ok(m)
    }

    /// The list built into the judge ([`SUITES_LIST`]).
    pub fn builtin() -> Result<Manifest, String> {
        Manifest::parse(SUITES_LIST)
    }

    /// The entry of a suite.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The suites of a mode, in order.
    pub fn of_mode<'a>(&'a self, mode: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries.iter().filter(move |e| e.in_mode(mode))
    }

    /// Every mode named, in first-seen order.
    pub fn modes(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for e in &self.entries {
            for m in &e.modes {
                if !out.contains(&m.as_str()) {
                    out.push(m);
                }
            }
        }
        out
    }
}

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
    /// The mode the init announced (its first line).
    pub mode: Option<String>,
    /// The init's exit marker: the mode and the script's status as printed.
    pub exit: Option<(String, String)>,
    /// Suites whose start (`--- suite NAME`) was seen, in log order.
    pub began: Vec<String>,
    /// Top-level suites (user-space and KUnit) that printed their result
    /// line, in log order (a KUnit suite once per load of its module).
    pub ended: Vec<String>,
    /// Suites whose result line came with a different number of results
    /// than their plan announced: (suite, planned, reported).
    pub plan_mismatches: Vec<(String, usize, usize)>,
    /// What the suite list says is wrong: missing, aborted, unlisted suites
    /// and mode problems (filled by [`judge_with`]).
    pub list_problems: Vec<ListProblem>,
}

/// A problem found by holding the log against the suite list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListProblem {
    /// A suite of the mode that never began (never reported, for KUnit).
    Missing(Entry),
    /// A suite of the mode that began but never printed its result.
    Aborted(Entry),
    /// A suite in the log that the list does not name.
    Unlisted(String),
    /// The log's mode line is missing.
    NoMode,
    /// The log is of another mode than the one asked for: (log, asked).
    WrongMode(String, String),
    /// The list has no suite for the mode.
    EmptyMode(String),
}

impl std::fmt::Display for ListProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListProblem::Missing(e) if e.kind == Kind::Vm => write!(
                f,
                "suite {} is missing: it never began (function {}, {SUITES_LIST_PATH}:{})",
                e.name, e.runner, e.line
            ),
            ListProblem::Missing(e) => write!(
                f,
                "KUnit suite {} never reported (module {}, {SUITES_LIST_PATH}:{})",
                e.name, e.runner, e.line
            ),
            ListProblem::Aborted(e) if e.kind == Kind::Vm => write!(
                f,
                "suite {} began but never ended: aborted, or the log is cut short (function {})",
                e.name, e.runner
            ),
            ListProblem::Aborted(e) => write!(
                f,
                "KUnit suite {} began but never ended: truncated (module {})",
                e.name, e.runner
            ),
            ListProblem::Unlisted(s) => {
                write!(f, "suite {s} ran but is not listed in {SUITES_LIST_PATH}")
            }
            ListProblem::NoMode => write!(
                f,
                "the log names no VM mode ({MODE_LINE:?} missing): the init never ran"
            ),
            ListProblem::WrongMode(log, want) => {
                write!(
                    f,
                    "the log is of mode {log}, the judge was asked for {want}"
                )
            }
            ListProblem::EmptyMode(m) => write!(f, "{SUITES_LIST_PATH} has no suite of mode {m}"),
        }
    }
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
    // The kernel crate's `Error::from_errno()` given a value that is no errno (its
    // stand-in for a WARN_ONCE): a bug in the caller.
    ("with out of range `errno`", "bad errno"),
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
    plan: Option<usize>,
    children: usize,
    failed_children: usize,
}

/// A KTAP plan line (`1..N`) after its indentation.
fn parse_plan(body: &str) -> Option<usize> {
    body.trim_end().strip_prefix("1..")?.parse().ok()
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
        if let Some(rest) = line.split_once(EXIT_MARKER).map(|(_, r)| r) {
            let field = |k: &str| {
                rest.split_whitespace()
                    .find_map(|w| w.strip_prefix(k))
                    .unwrap_or("?")
                    .to_string()
            };
            v.exit = Some((field("mode="), field("status=")));
        }
        if v.mode.is_none() {
            if let Some((_, rest)) = line.split_once(MODE_LINE) {
                let m = rest.split([',', ' ']).next().unwrap_or("");
                v.mode = Some(m.to_string());
            }
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
        if let Some(name) = line.strip_prefix(SUITE_BEGIN) {
            v.began.push(name.trim().to_string());
            continue;
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
                plan: None,
                children: 0,
                failed_children: 0,
            });
            continue;
        }
        if let Some(n) = parse_plan(body) {
            if let Some(f) = stack.last_mut() {
                if f.indent == indent && f.plan.is_none() && f.children == 0 {
                    f.plan = Some(n);
                }
            }
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
            Some(f) if f.name == name => {
                // The frame's own result line.
                if let Some(p) = f.plan {
                    if p != f.children {
                        v.plan_mismatches.push((f.name.clone(), p, f.children));
                    }
                }
                if stack.is_empty() {
                    v.ended.push(f.name.clone());
                }
                if f.children > 0 {
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
                // A frame with no cases (e.g. `1..0`) reports as one case.
            }
            Some(f) => v.unfinished_suites.push(f.name),
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

/// Judges a console log against the suite list. `mode` is the mode the
/// log must be of (`check` for `make check`); `None` takes the mode the
/// log names. Every suite of the mode must have begun and ended (a KUnit
/// suite: reported at least once), and every suite of the log must be
/// listed (in any mode).
pub fn judge_with(log: &str, manifest: &Manifest, mode: Option<&str>) -> Verdict {
    let mut v = judge(log);
    let mut lp = Vec::new();
    let mode = match (mode, v.mode.as_deref()) {
        (Some(want), Some(got)) if want != got => {
            lp.push(ListProblem::WrongMode(got.to_string(), want.to_string()));
            Some(want.to_string())
        }
        (Some(want), _) => Some(want.to_string()),
        (None, Some(got)) => Some(got.to_string()),
        (None, None) => None,
    };
    if v.mode.is_none() {
        lp.push(ListProblem::NoMode);
    }
    if let Some(mode) = &mode {
        if manifest.of_mode(mode).next().is_none() {
            lp.push(ListProblem::EmptyMode(mode.clone()));
        }
        for e in manifest.of_mode(mode) {
            let has = |l: &[String]| l.iter().any(|n| n == &e.name);
            if has(&v.ended) {
                continue;
            }
            if has(&v.began) || has(&v.unfinished_suites) {
                lp.push(ListProblem::Aborted(e.clone()));
            } else {
                lp.push(ListProblem::Missing(e.clone()));
            }
        }
    }
    let mut seen: Vec<&String> = Vec::new();
    for n in v.began.iter().chain(&v.ended) {
        if manifest.get(n).is_none() && !seen.contains(&n) {
            seen.push(n);
            lp.push(ListProblem::Unlisted(n.clone()));
        }
    }
    v.list_problems = lp;
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
        let aborted = |s: &String| {
            self.list_problems
                .iter()
                .any(|l| matches!(l, ListProblem::Aborted(e) if &e.name == s))
        };
        for s in self.unfinished_suites.iter().filter(|s| !aborted(s)) {
            p.push(format!("suite {s} did not finish"));
        }
        for (s, planned, got) in &self.plan_mismatches {
            p.push(format!(
                "suite {s}: its plan announced {planned} results, it printed {got}: truncated"
            ));
        }
        for l in &self.list_problems {
            p.push(l.to_string());
        }
        for s in &self.failed_suites {
            p.push(format!("suite {s} reported not ok"));
        }
        if !self.done {
            p.push(format!(
                "the VM did not reach its end ({DONE_MARKER} missing): crash or timeout"
            ));
        }
        match &self.exit {
            Some((mode, status)) if status != "0" => p.push(format!(
                "the VM's tests/vm/{mode}.sh exited with status {status}"
            )),
            Some(_) => {}
            None if self.done => p.push(format!(
                "the VM's init printed no exit status of its mode script ({EXIT_MARKER} missing)"
            )),
            None => {}
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
