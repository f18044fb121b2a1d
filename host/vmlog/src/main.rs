// SPDX-License-Identifier: GPL-2.0
//! `vmlog [--mode MODE] [--manifest FILE | --no-manifest] LOG`: prints
//! per-suite results and the problems found in an rdma-rs VM console log,
//! then one line `TOTAL passed failed skipped` (the harness adds its own
//! counts and prints the final summary). A problem outside test cases
//! counts as one failure.
//!
//! The log is held against the suite list (`tests/vm/suites.list`, built
//! in; `--manifest FILE` reads another): every suite of MODE (default: the
//! mode the log names) must begin and end, every KUnit suite of MODE must
//! report, every suite in the log must be listed. Exit status 0 if the run
//! passed, 1 if not, 2 on usage errors or a bad list.

use rdma_rs_vmlog::{judge, judge_with, Kind, Manifest, Outcome};
use std::process::ExitCode;

const USAGE: &str = "usage: vmlog [--mode MODE] [--manifest FILE | --no-manifest] CONSOLE_LOG";

fn main() -> ExitCode {
    let mut mode: Option<String> = None;
    let mut manifest_path: Option<String> = None;
    let mut use_manifest = true;
    let mut log_path: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--mode" => mode = args.next(),
            "--manifest" => manifest_path = args.next(),
            "--no-manifest" => use_manifest = false,
            _ if a.starts_with("--") || log_path.is_some() => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
            _ => log_path = Some(a),
        }
    }
    let Some(path) = log_path else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("vmlog: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let log = String::from_utf8_lossy(&bytes);
    let manifest = if !use_manifest {
        None
    } else {
        let parsed = match &manifest_path {
            None => Manifest::builtin(),
            Some(p) => match std::fs::read_to_string(p) {
                Ok(t) => Manifest::parse(&t),
                Err(e) => Err(format!("{p}: {e}")),
            },
        };
        match parsed {
            Ok(m) => Some(m),
            Err(e) => {
                eprintln!("vmlog: {e}");
                return ExitCode::from(2);
            }
        }
    };
    let v = match &manifest {
        Some(m) => judge_with(&log, m, mode.as_deref()),
        None => judge(&log),
    };
    for (suite, p, f, s) in v.per_suite() {
        let mark = if f == 0 { "PASS" } else { "FAIL" };
        println!("  {mark} {suite}: {p} passed, {f} failed, {s} skipped");
    }
    for c in v.cases.iter().filter(|c| c.outcome == Outcome::Failed) {
        println!("  failed: {}.{}", c.suite, c.name);
    }
    if let (Some(m), Some(mode)) = (&manifest, mode.as_deref().or(v.mode.as_deref())) {
        let count = |kind: Kind| {
            let all: Vec<_> = m.of_mode(mode).filter(|e| e.kind == kind).collect();
            let ok = all.iter().filter(|e| v.ended.contains(&e.name)).count();
            format!("{ok}/{}", all.len())
        };
        println!(
            "  suite list (mode {mode}): {} VM suites and {} KUnit suites reported",
            count(Kind::Vm),
            count(Kind::Kunit)
        );
    }
    let problems = v.problems();
    for p in &problems {
        println!("  problem: {p}");
    }
    let (p, f, s) = v.counts();
    println!("TOTAL {} {} {}", p, f + problems.len(), s);
    if v.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
