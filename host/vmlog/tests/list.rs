// SPDX-License-Identifier: GPL-2.0
//! The judge against a suite list: a suite that is missing, aborted or cut
//! short, a KUnit suite that never reported or was truncated, a mode
//! script that failed, each is a failure that names it; a complete log
//! passes.

use rdma_rs_vmlog::{judge_with, Kind, ListProblem, Manifest, EXIT_MARKER};

const LIST: &str = "\
# a test list
vm     vm_a        a_suite          check,solo
vm     vm_b        b_suite          check   # trailing comment
vm     vm_solo     solo_suite       solo
vm     vm_leaks    kmemleak_check   check,solo
kunit  k_one       mod_one          check
kunit  k_two       mod_two          check
";

fn list() -> Manifest {
    Manifest::parse(LIST).expect("the test list parses")
}

/// A console log in the VM's shapes, built piece by piece.
#[derive(Default)]
struct Log(String);

impl Log {
    fn boot(mode: &str) -> Log {
        let mut l = Log::default();
        l.line("[    0.000000] Linux version 7.3.4 (root@host) #1 SMP");
        l.line(&format!("rdma-rs VM: mode {mode}, kernel 7.3.4"));
        l
    }
    fn line(&mut self, s: &str) -> &mut Log {
        self.0.push_str(s);
        self.0.push('\n');
        self
    }
    /// A module's KUnit output: the module header, then each suite with
    /// its cases (all passing).
    fn kunit(&mut self, suites: &[(&str, usize)]) -> &mut Log {
        self.line("[    5.000000] KTAP version 1");
        self.line(&format!("[    5.000001] 1..{}", suites.len()));
        for (n, (name, cases)) in suites.iter().enumerate() {
            self.kunit_suite(name, *cases, *cases);
            self.line(&format!("[    5.100000] ok {} {name}", n + 1));
        }
        self
    }
    /// One KUnit suite's header, plan and `printed` of its `plan` cases;
    /// the caller prints its result line.
    fn kunit_suite(&mut self, name: &str, plan: usize, printed: usize) -> &mut Log {
        self.line("[    5.000002]     KTAP version 1");
        self.line(&format!("[    5.000003]     # Subtest: {name}"));
        self.line("[    5.000004]     # speed: normal");
        self.line(&format!("[    5.000005]     1..{plan}"));
        for i in 1..=printed {
            self.line(&format!("[    5.01000{i}]     ok {i} case_{i}"));
        }
        self
    }
    /// A user-space suite as tests/vm/lib.sh prints it.
    fn vm(&mut self, name: &str, cases: usize) -> &mut Log {
        self.begin(name);
        self.line("+ insmod /lib/modules/rdma-rs/ib_core_rs.ko");
        self.ktap(name, cases, cases)
    }
    fn begin(&mut self, name: &str) -> &mut Log {
        self.line(&format!("--- suite {name}"))
    }
    fn ktap(&mut self, name: &str, plan: usize, printed: usize) -> &mut Log {
        self.line("    KTAP version 1");
        self.line(&format!("    # Subtest: {name}"));
        self.line(&format!("    1..{plan}"));
        for i in 1..=printed {
            self.line(&format!("    ok {i} step {i}"));
        }
        self.line(&format!("ok 1 {name}"))
    }
    fn exit(&mut self, mode: &str, status: i32) -> &mut Log {
        self.line(&format!("{EXIT_MARKER} mode={mode} status={status}"))
    }
    fn done(&mut self) -> String {
        self.line("RDMARS-VM-DONE");
        self.0.clone()
    }
}

/// The complete log of mode `check` of the test list.
fn complete() -> Log {
    let mut l = Log::boot("check");
    l.vm("vm_a", 2);
    l.begin("vm_b").kunit(&[("k_one", 3), ("k_two", 2)]);
    l.ktap("vm_b", 2, 2);
    l.vm("vm_leaks", 1);
    l
}

fn problems_with(v: &rdma_rs_vmlog::Verdict, needle: &str) -> Vec<String> {
    v.problems()
        .into_iter()
        .filter(|p| p.contains(needle))
        .collect()
}

#[test]
fn complete_log_passes() {
    let v = judge_with(&complete().exit("check", 0).done(), &list(), Some("check"));
    assert!(v.problems().is_empty(), "{:#?}", v.problems());
    assert!(v.passed());
    // 2 + 2 + 1 user-space steps and 3 + 2 KUnit cases.
    assert_eq!(v.counts(), (10, 0, 0));
    assert_eq!(v.began, ["vm_a", "vm_b", "vm_leaks"]);
    assert_eq!(v.ended, ["vm_a", "k_one", "k_two", "vm_b", "vm_leaks"]);
    assert_eq!(v.mode.as_deref(), Some("check"));
    // The mode may also come from the log alone.
    let v = judge_with(&complete().exit("check", 0).done(), &list(), None);
    assert!(v.passed(), "{:#?}", v.problems());
}

#[test]
fn missing_suite_fails_by_name() {
    let mut l = Log::boot("check");
    l.vm("vm_a", 2);
    l.kunit(&[("k_one", 3), ("k_two", 2)]);
    l.vm("vm_leaks", 1);
    let v = judge_with(&l.exit("check", 0).done(), &list(), Some("check"));
    assert!(!v.passed());
    assert_eq!(
        v.counts().1,
        0,
        "no test case failed: only the suite is missing"
    );
    assert!(matches!(&v.list_problems[..], [ListProblem::Missing(e)] if e.name == "vm_b"));
    let p = problems_with(&v, "vm_b");
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].contains("suite vm_b is missing") && p[0].contains("b_suite"),
        "{p:?}"
    );
    assert_eq!(v.problems().len(), 1, "{:#?}", v.problems());
}

#[test]
fn aborted_suite_fails_by_name() {
    // vm_b began, then its KTAP block never came (the script went on).
    let mut l = Log::boot("check");
    l.vm("vm_a", 2);
    l.begin("vm_b").kunit(&[("k_one", 3), ("k_two", 2)]);
    l.line("+ some step that killed the suite");
    l.vm("vm_leaks", 1);
    let v = judge_with(&l.exit("check", 0).done(), &list(), Some("check"));
    assert!(!v.passed());
    assert!(matches!(&v.list_problems[..], [ListProblem::Aborted(e)] if e.name == "vm_b"));
    let p = v.problems();
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].contains("suite vm_b began but never ended"), "{p:?}");
}

#[test]
fn truncated_log_names_the_suite_it_cut_and_those_it_lost() {
    // The VM died (or was killed) inside vm_b: no result, no exit, no done.
    let mut l = Log::boot("check");
    l.vm("vm_a", 2);
    l.begin("vm_b").kunit(&[("k_one", 3), ("k_two", 2)]);
    l.line("rdma-rs: VM timed out after 2400 s; killed");
    let v = judge_with(&l.0, &list(), Some("check"));
    assert!(!v.passed());
    assert!(!v.done);
    assert!(v
        .list_problems
        .iter()
        .any(|p| matches!(p, ListProblem::Aborted(e) if e.name == "vm_b")));
    assert!(v
        .list_problems
        .iter()
        .any(|p| matches!(p, ListProblem::Missing(e) if e.name == "vm_leaks")));
    assert_eq!(problems_with(&v, "vm_b began but never ended").len(), 1);
    assert_eq!(problems_with(&v, "suite vm_leaks is missing").len(), 1);
    assert_eq!(problems_with(&v, "did not reach its end").len(), 1);

    // Cut inside a user-space KTAP block: the plan says 4, two came.
    let mut l = Log::boot("check");
    l.vm("vm_a", 2);
    l.begin("vm_b").kunit(&[("k_one", 3), ("k_two", 2)]);
    l.line("    KTAP version 1\n    # Subtest: vm_b\n    1..4\n    ok 1 step 1\n    ok 2 step 2");
    let v = judge_with(&l.0, &list(), Some("check"));
    assert!(!v.passed());
    assert_eq!(problems_with(&v, "vm_b began but never ended").len(), 1);
    assert!(
        problems_with(&v, "vm_b did not finish").is_empty(),
        "said once"
    );
}

#[test]
fn missing_kunit_suite_fails_by_name_and_module() {
    let mut l = Log::boot("check");
    l.vm("vm_a", 2);
    l.begin("vm_b").kunit(&[("k_one", 3)]);
    l.ktap("vm_b", 2, 2);
    l.vm("vm_leaks", 1);
    let v = judge_with(&l.exit("check", 0).done(), &list(), Some("check"));
    assert!(!v.passed());
    match &v.list_problems[..] {
        [ListProblem::Missing(e)] => {
            assert_eq!((e.kind, e.name.as_str()), (Kind::Kunit, "k_two"));
        }
        other => panic!("{other:#?}"),
    }
    let p = v.problems();
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(
        p[0].contains("KUnit suite k_two never reported (module mod_two"),
        "{p:?}"
    );
}

#[test]
fn truncated_kunit_suite_fails_by_name() {
    // k_two announced 3 cases and printed 2 before its result line (lost
    // console lines).
    let mut l = Log::boot("check");
    l.vm("vm_a", 2);
    l.begin("vm_b");
    l.line("[    5.000000] KTAP version 1\n[    5.000001] 1..2");
    l.kunit_suite("k_one", 3, 3).line("[    5.1] ok 1 k_one");
    l.kunit_suite("k_two", 3, 2).line("[    5.2] ok 2 k_two");
    l.ktap("vm_b", 2, 2);
    l.vm("vm_leaks", 1);
    let v = judge_with(&l.exit("check", 0).done(), &list(), Some("check"));
    assert!(!v.passed());
    assert_eq!(v.plan_mismatches, [("k_two".to_string(), 3, 2)]);
    let p = v.problems();
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].contains("suite k_two: its plan announced 3 results, it printed 2"));

    // k_two cut before its result line, the next module's output follows.
    let mut l = Log::boot("check");
    l.vm("vm_a", 2);
    l.begin("vm_b");
    l.line("[    5.000000] KTAP version 1\n[    5.000001] 1..2");
    l.kunit_suite("k_one", 3, 3).line("[    5.1] ok 1 k_one");
    l.kunit_suite("k_two", 3, 1);
    l.ktap("vm_b", 2, 2);
    l.vm("vm_leaks", 1);
    let v = judge_with(&l.exit("check", 0).done(), &list(), Some("check"));
    assert!(!v.passed());
    assert!(matches!(&v.list_problems[..], [ListProblem::Aborted(e)] if e.name == "k_two"));
    let p = v.problems();
    assert_eq!(p.len(), 1, "{p:#?}");
    assert!(p[0].contains("KUnit suite k_two began but never ended: truncated (module mod_two)"));
}

#[test]
fn kunit_suites_report_once_per_load_and_each_report_counts() {
    // Modules are loaded more than once: a complete first report does not
    // hide a truncated second one.
    let mut l = complete();
    l.kunit(&[("k_one", 3)]);
    l.kunit_suite("k_one", 3, 2).line("[    6.0] ok 2 k_one");
    let v = judge_with(&l.exit("check", 0).done(), &list(), Some("check"));
    assert_eq!(v.ended.iter().filter(|s| *s == "k_one").count(), 3);
    assert_eq!(v.plan_mismatches, [("k_one".to_string(), 3, 2)]);
    assert!(!v.passed());
}

#[test]
fn failing_mode_script_is_reported() {
    for status in [1, 2, 127, 139] {
        let v = judge_with(&complete().exit("check", status).done(), &list(), None);
        assert!(!v.passed(), "status {status}");
        let p = v.problems();
        assert_eq!(
            p,
            [format!(
                "the VM's tests/vm/check.sh exited with status {status}"
            )]
        );
    }
    // A check.sh that died before its first suite (a syntax error in a
    // script it sources): its status and every suite, by name.
    let mut l = Log::boot("check");
    l.line("/rdma-rs/new.sh: line 3: syntax error: unexpected \"}\"");
    let v = judge_with(&l.exit("check", 2).done(), &list(), None);
    let p = v.problems();
    assert!(p
        .iter()
        .any(|p| p.contains("check.sh exited with status 2")));
    for s in ["vm_a", "vm_b", "vm_leaks", "k_one", "k_two"] {
        assert_eq!(problems_with(&v, &format!(" {s} ")).len(), 1, "{s}: {p:#?}");
    }
    // The init always prints the status: its absence is a failure too.
    let v = judge_with(&complete().done(), &list(), None);
    assert_eq!(
        v.problems(),
        ["the VM's init printed no exit status of its mode script (RDMARS-VM-EXIT missing)"]
    );
}

#[test]
fn unlisted_suite_fails() {
    let mut l = complete();
    l.vm("vm_new", 1);
    l.kunit(&[("k_new", 1)]);
    let v = judge_with(&l.exit("check", 0).done(), &list(), None);
    assert!(!v.passed());
    assert_eq!(
        v.list_problems,
        [
            ListProblem::Unlisted("vm_new".into()),
            ListProblem::Unlisted("k_new".into())
        ]
    );
    assert!(
        problems_with(
            &v,
            "suite vm_new ran but is not listed in tests/vm/suites.list"
        )
        .len()
            == 1
    );
}

#[test]
fn other_modes_require_their_own_suites() {
    let mut l = Log::boot("solo");
    l.vm("vm_a", 1);
    l.vm("vm_solo", 1);
    l.vm("vm_leaks", 1);
    let log = l.exit("solo", 0).done();
    let v = judge_with(&log, &list(), None);
    assert!(v.passed(), "{:#?}", v.problems());
    // Judged as `make check`, the same log lacks vm_b and the KUnit suites.
    let v = judge_with(&log, &list(), Some("check"));
    assert!(!v.passed());
    assert!(v
        .list_problems
        .contains(&ListProblem::WrongMode("solo".into(), "check".into())));
    assert_eq!(
        v.list_problems
            .iter()
            .filter(|p| matches!(p, ListProblem::Missing(_)))
            .count(),
        3
    );
    // No mode line: the init never ran.
    let v = judge_with("booted\n", &list(), Some("check"));
    assert!(v.list_problems.contains(&ListProblem::NoMode));
    // A mode the list does not know.
    let mut l = Log::boot("nosuch");
    l.vm("vm_a", 1);
    let v = judge_with(&l.exit("nosuch", 0).done(), &list(), None);
    assert!(v
        .list_problems
        .contains(&ListProblem::EmptyMode("nosuch".into())));
}

#[test]
fn list_format_errors_name_the_line() {
    for (text, want) in [
        ("vm a f\n", ":1: 3 columns"),
        ("vm a f check extra\n", ":1: 5 columns"),
        ("# c\nsuite a f check\n", ":2: unknown kind"),
        (
            "vm a f check\nkunit a m check\n",
            ":2: suite a is already listed at line 1",
        ),
        ("vm a f check,,solo\n", ":1: bad mode list"),
        ("vm a f() check\n", ":1: \"f()\" is not a name"),
        ("# nothing\n\n", "no suites"),
    ] {
        let e = Manifest::parse(text).expect_err(text);
        assert!(e.contains(want), "{text:?}: {e}");
    }
    let m = list();
    assert_eq!(m.modes(), ["check", "solo"]);
    let check: Vec<_> = m.of_mode("check").map(|e| e.name.as_str()).collect();
    assert_eq!(check, ["vm_a", "vm_b", "vm_leaks", "k_one", "k_two"]);
    assert_eq!(m.get("vm_b").map(|e| e.line), Some(3));
}

#[test]
fn the_real_list_judges_a_complete_check_run() {
    // A log with every suite of the built-in list's `check` mode, in the
    // shapes the VM prints, passes; without any one of them it fails.
    let m = Manifest::builtin().expect("tests/vm/suites.list parses");
    let names: Vec<_> = m.of_mode("check").collect();
    assert!(names.iter().filter(|e| e.kind == Kind::Vm).count() >= 16);
    assert!(names.iter().filter(|e| e.kind == Kind::Kunit).count() >= 22);
    let build = |skip: Option<&str>| {
        let mut l = Log::boot("check");
        let kunit: Vec<(&str, usize)> = names
            .iter()
            .filter(|e| e.kind == Kind::Kunit && Some(e.name.as_str()) != skip)
            .map(|e| (e.name.as_str(), 2))
            .collect();
        let mut kunit_done = false;
        for e in names.iter().filter(|e| e.kind == Kind::Vm) {
            if Some(e.name.as_str()) == skip {
                continue;
            }
            l.begin(&e.name);
            if !kunit_done {
                l.kunit(&kunit);
                kunit_done = true;
            }
            l.ktap(&e.name, 3, 3);
        }
        l.exit("check", 0).done()
    };
    let v = judge_with(&build(None), &m, Some("check"));
    assert!(v.passed(), "{:#?}", v.problems());
    for e in &names {
        let v = judge_with(&build(Some(&e.name)), &m, Some("check"));
        assert!(!v.passed(), "{} not missed", e.name);
        assert_eq!(v.list_problems, [ListProblem::Missing((*e).clone())]);
    }
}
