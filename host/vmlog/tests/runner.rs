// SPDX-License-Identifier: GPL-2.0
//! The VM's suite runner (tests/vm/lib.sh: run_suites) on the host, with
//! a stand-in for the init, judged by the judge: what the runner prints is
//! what the judge reads, and a suite that is missing, dies or takes its
//! script down is a failure by name.

use rdma_rs_vmlog::{judge_with, ListProblem, Manifest};
use std::path::{Path, PathBuf};
use std::process::Command;

const LIST: &str = "\
vm  vm_one   one_suite       check
vm  vm_two   two_suite       check
vm  vm_last  last_suite      check
";

/// The shell the VM runs (busybox ash) if the host has it, else `sh`.
fn shell() -> Command {
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    match busybox {
        Some(b) => {
            let mut c = Command::new(b);
            c.arg("sh");
            c
        }
        None => Command::new("sh"),
    }
}

fn lib_sh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vm/lib.sh")
}

/// Runs `mode_script` as the init does (its status in the exit marker)
/// with `LIST` as the suite list; returns the console.
fn run(tag: &str, mode_script: &str) -> String {
    let dir = std::env::temp_dir().join(format!("vmlog-runner-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("suites.list"), LIST).unwrap();
    std::fs::write(
        dir.join("mode.sh"),
        format!(". \"{}\"\n{mode_script}\n", lib_sh().display()),
    )
    .unwrap();
    let init = "echo 'rdma-rs VM: mode check, kernel host'\n\
                sh \"$D/mode.sh\"\n\
                echo \"RDMARS-VM-EXIT mode=check status=$?\"\n\
                echo RDMARS-VM-DONE\n";
    let out = shell()
        .arg("-c")
        .arg(init)
        .env("D", &dir)
        .env("RDMARS_SUITES", dir.join("suites.list"))
        .env("RDMARS_RESULTS", dir.join("results"))
        .env("RDMARS_KMEMLEAK", dir.join("no-kmemleak"))
        .output()
        .expect("a shell runs");
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn list() -> Manifest {
    Manifest::parse(LIST).unwrap()
}

const SUITES: &str = "\
one_suite() { t_ok 'first'; t_check 'true runs' true; }
two_suite() { t_ok 'second'; t_skip 'skipped' 'why'; }
last_suite() { t_ok 'third'; }
";

#[test]
fn the_runner_runs_the_list_and_the_judge_passes_it() {
    let log = run("pass", &format!("{SUITES}run_suites check"));
    let v = judge_with(&log, &list(), Some("check"));
    assert!(v.passed(), "{:#?}\n{log}", v.problems());
    assert_eq!(v.began, ["vm_one", "vm_two", "vm_last"]);
    assert_eq!(v.ended, ["vm_one", "vm_two", "vm_last"]);
    assert_eq!(v.counts(), (4, 0, 1));
}

#[test]
fn an_undefined_suite_function_fails_the_suite_and_the_script() {
    let log = run(
        "undefined",
        "one_suite() { t_ok a; }\nlast_suite() { t_ok c; }\nrun_suites check",
    );
    let v = judge_with(&log, &list(), Some("check"));
    assert!(!v.passed());
    let failed: Vec<_> = v
        .cases
        .iter()
        .filter(|c| c.outcome == rdma_rs_vmlog::Outcome::Failed)
        .map(|c| format!("{}.{}", c.suite, c.name))
        .collect();
    assert_eq!(failed, ["vm_two.suite function two_suite is defined"]);
    assert!(
        v.problems()
            .contains(&"the VM's tests/vm/check.sh exited with status 1".to_string()),
        "{:#?}",
        v.problems()
    );
}

#[test]
fn a_suite_that_takes_its_script_down_is_named() {
    // vm_two's function exits the shell: vm_two began and never ended,
    // vm_last never began, the script's status is reported.
    let log = run(
        "exit",
        &format!("{SUITES}two_suite() {{ t_ok x; exit 3; }}\nrun_suites check"),
    );
    let v = judge_with(&log, &list(), Some("check"));
    assert!(!v.passed());
    let m = list();
    assert_eq!(
        v.list_problems,
        [
            ListProblem::Aborted(m.get("vm_two").unwrap().clone()),
            ListProblem::Missing(m.get("vm_last").unwrap().clone()),
        ],
        "{log}"
    );
    assert!(v
        .problems()
        .contains(&"the VM's tests/vm/check.sh exited with status 3".to_string()));
}

#[test]
fn a_script_that_cannot_parse_is_reported_with_every_suite() {
    let log = run(
        "syntax",
        &format!("{SUITES}if then fi }}\nrun_suites check"),
    );
    let v = judge_with(&log, &list(), Some("check"));
    assert!(!v.passed());
    assert_eq!(
        v.list_problems
            .iter()
            .filter(|p| matches!(p, ListProblem::Missing(_)))
            .count(),
        3,
        "{log}"
    );
    assert!(
        v.problems().iter().any(|p| p
            .starts_with("the VM's tests/vm/check.sh exited with status ")
            && !p.ends_with("status 0")),
        "{:#?}",
        v.problems()
    );
}

#[test]
fn the_real_scripts_define_every_listed_function() {
    // Every tests/vm/*.sh sourced as run_mode does (source_all): they
    // parse, run nothing at source time, and define each listed function.
    let m = Manifest::builtin().unwrap();
    let fns: Vec<&str> = m
        .entries
        .iter()
        .filter(|e| e.kind == rdma_rs_vmlog::Kind::Vm)
        .map(|e| e.runner.as_str())
        .collect();
    let dir = lib_sh().parent().unwrap().to_path_buf();
    let script = format!(
        ". \"$RDMARS_DIR/lib.sh\"\nsource_all\nfor f in {}; do case \"$(type $f 2>/dev/null)\" in *function*) ;; *) echo \"undefined: $f\" ;; esac; done\necho sourced-all\n",
        fns.join(" ")
    );
    let out = shell()
        .arg("-c")
        .arg(&script)
        .env("RDMARS_DIR", &dir)
        .env("RDMARS_KMEMLEAK", "/nonexistent")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text, "sourced-all\n",
        "sourcing printed or missed something"
    );
}
