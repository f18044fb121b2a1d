// SPDX-License-Identifier: GPL-2.0
//! The harness judges its sample logs the way it must judge a real run.

use rdma_rs_vmlog::{judge, Outcome};

fn sample(name: &str) -> String {
    let path = format!("{}/tests/samples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn clean_log_passes() {
    let v = judge(&sample("pass.log"));
    assert_eq!(v.counts(), (4, 0, 1));
    assert!(v.problems().is_empty(), "{:?}", v.problems());
    assert!(v.passed());
    let suites: Vec<_> = v.per_suite().into_iter().map(|s| s.0).collect();
    assert_eq!(
        suites,
        ["ib_core_rs_ops", "ib_core_rs_uverbs_abi", "vm_userspace"]
    );
    assert_eq!(v.cases[0].suite, "ib_core_rs_ops");
    assert_eq!(v.cases[4].outcome, Outcome::Skipped);
}

#[test]
fn failing_ktap_case_fails() {
    let v = judge(&sample("failing_case.log"));
    assert_eq!(v.counts(), (3, 1, 1));
    assert!(!v.passed());
    let failed: Vec<_> = v
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Failed)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].name, "missing_op_is_named");
    // The suite's own `not ok` is explained by its failed case: no extra problem.
    assert!(v.failed_suites.is_empty());
}

#[test]
fn kasan_report_fails_even_with_all_tests_passing() {
    let v = judge(&sample("kasan.log"));
    assert_eq!(v.counts().1, 0);
    assert!(!v.passed());
    assert!(v.splats.iter().any(|s| s.kind == "KASAN"));
}

#[test]
fn warn_fails() {
    let v = judge(&sample("warn.log"));
    assert!(!v.passed());
    assert_eq!(v.splats.len(), 1);
    assert_eq!(v.splats[0].kind, "WARN");
}

#[test]
fn truncated_log_fails() {
    let v = judge(&sample("timeout.log"));
    assert!(!v.passed());
    assert!(!v.done);
    assert!(v.unfinished_suites.contains(&"ib_core_rs_ops".to_string()));
    assert!(v
        .problems()
        .iter()
        .any(|p| p.contains("did not reach its end")));
}

#[test]
fn zero_tests_fail() {
    let v = judge("booted\nRDMARS-VM-DONE\n");
    assert!(v.cases.is_empty());
    assert!(!v.passed());
    assert!(v.problems().iter().any(|p| p == "zero tests ran"));
}

#[test]
fn kmemleak_and_lockdep_fail() {
    let base = sample("pass.log");
    for extra in [
        "kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
        "unreferenced object 0xffff888004b1c000 (size 64):",
        "WARNING: possible circular locking dependency detected",
        "Oops: general protection fault, probably for non-canonical address",
        "rust_kernel: panicked at mlx5/cmd.rs:10:5:",
        "rust_kernel: attempted to create `Error` with out of range `errno`: 0",
    ] {
        let v = judge(&format!("{base}[    9.0] {extra}\n"));
        assert!(!v.passed(), "{extra} was not judged a failure");
    }
}

#[test]
fn suite_not_ok_without_failed_case_is_a_problem() {
    let log = "    # Subtest: s\n    1..1\n    ok 1 a\nnot ok 1 s\nRDMARS-VM-DONE\n";
    let v = judge(log);
    assert_eq!(v.failed_suites, ["s"]);
    assert!(!v.passed());
}
