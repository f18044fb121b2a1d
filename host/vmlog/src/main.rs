//! `vmlog LOG`: prints per-suite results and the problems found in an
//! rdma-rs VM console log, then one line `TOTAL passed failed skipped`
//! (the harness adds its own counts and prints the final summary). A
//! problem outside test cases counts as one failure. Exit status 0 if the
//! run passed, 1 if not, 2 on usage errors.

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: vmlog CONSOLE_LOG");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("vmlog: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let v = rdma_rs_vmlog::judge(&String::from_utf8_lossy(&bytes));
    for (suite, p, f, s) in v.per_suite() {
        let mark = if f == 0 { "PASS" } else { "FAIL" };
        println!("  {mark} {suite}: {p} passed, {f} failed, {s} skipped");
    }
    for c in v
        .cases
        .iter()
        .filter(|c| c.outcome == rdma_rs_vmlog::Outcome::Failed)
    {
        println!("  failed: {}.{}", c.suite, c.name);
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
