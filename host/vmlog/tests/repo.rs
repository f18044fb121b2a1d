// SPDX-License-Identifier: GPL-2.0
//! The suite list (`tests/vm/suites.list`) against the repository: every
//! suite is listed once and nowhere else, every listed function and module
//! exists, every KUnit suite in the source is listed.

use rdma_rs_vmlog::{Kind, Manifest};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn list() -> Manifest {
    Manifest::builtin().expect("tests/vm/suites.list parses")
}

/// (file name, text) of every tests/vm/*.sh.
fn scripts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in fs::read_dir(root().join("tests/vm")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sh") {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            out.push((name, fs::read_to_string(&p).unwrap()));
        }
    }
    out.sort();
    out
}

/// Shell functions defined at the start of a line: `name() {`.
fn functions(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_once("() {").map(|(n, _)| n))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(str::to_string)
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_listed_function_is_defined_once_and_names_are_unique() {
    let scripts = scripts();
    // All scripts are sourced into one shell (run_mode): a function defined
    // twice would silently replace the other.
    let mut seen: Vec<(String, String)> = Vec::new();
    for (file, text) in &scripts {
        for f in functions(text) {
            if let Some((other, _)) = seen.iter().find(|(_, g)| *g == f) {
                panic!("function {f} is defined in {other} and {file}");
            }
            seen.push((file.clone(), f));
        }
    }
    for e in list().entries.iter().filter(|e| e.kind == Kind::Vm) {
        assert!(
            seen.iter().any(|(_, f)| *f == e.runner),
            "suite {}: no tests/vm/*.sh defines {}()",
            e.name,
            e.runner
        );
    }
}

#[test]
fn every_mode_has_its_script() {
    for m in list().modes() {
        let p = root().join(format!("tests/vm/{m}.sh"));
        assert!(p.exists(), "mode {m}: {} is missing", p.display());
    }
}

#[test]
fn suites_begin_only_in_the_runner() {
    // No second list: suite_begin/suite_end are called by run_suites only,
    // and check.sh names no suite.
    for (file, text) in scripts() {
        // A helper's untracked scratch*.sh runs chosen suites by hand (common.md); no mode
        // sources it.
        if file.starts_with("scratch") {
            continue;
        }
        for (n, l) in text.lines().enumerate() {
            let code = l.split('#').next().unwrap_or("").trim_start();
            let calls = code.starts_with("suite_begin ") || code == "suite_end";
            if calls && file != "lib.sh" {
                panic!(
                    "tests/vm/{file}:{}: suites run from tests/vm/suites.list, not by hand",
                    n + 1
                );
            }
        }
    }
    let check = fs::read_to_string(root().join("tests/vm/check.sh")).unwrap();
    for e in &list().entries {
        assert!(
            !check.contains(&e.name) && !check.contains(&format!("{}\n", e.runner)),
            "check.sh names suite {}: the list is the only one",
            e.name
        );
    }
}

#[test]
fn every_kunit_suite_of_the_source_is_listed_and_back() {
    let m = list();
    let mut files = Vec::new();
    for d in ["core", "mlx5", "uverbs", "rust", "tests"] {
        rust_files(&root().join(d), &mut files);
    }
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for f in files {
        let text = fs::read_to_string(&f).unwrap();
        for l in text.lines() {
            if let Some(rest) = l.trim_start().strip_prefix("#[kunit_tests(") {
                if let Some(name) = rest.split(')').next() {
                    found.push((name.trim().to_string(), f.clone()));
                }
            }
        }
    }
    assert!(found.len() >= 19, "found only {found:?}");
    for (name, file) in &found {
        let e = m.get(name).unwrap_or_else(|| {
            panic!(
                "KUnit suite {name} ({}) is not in tests/vm/suites.list: add \
                 `kunit {name} <module> check`",
                file.display()
            )
        });
        assert_eq!(e.kind, Kind::Kunit, "{name} is listed as a vm suite");
    }
    // `vmlinux` suites are the kernel's own (its rust/kernel/).
    for e in m
        .entries
        .iter()
        .filter(|e| e.kind == Kind::Kunit && e.runner != "vmlinux")
    {
        assert!(
            found.iter().any(|(n, _)| *n == e.name),
            "listed KUnit suite {} is in no #[kunit_tests(...)] of the source",
            e.name
        );
    }
}

#[test]
fn every_kunit_module_is_built() {
    let kbuild = fs::read_to_string(root().join("Kbuild")).unwrap();
    let modules: Vec<&str> = kbuild
        .lines()
        .filter_map(|l| l.strip_prefix("obj-m += "))
        .map(|o| o.trim().trim_end_matches(".o"))
        .collect();
    for e in list().entries.iter().filter(|e| e.kind == Kind::Kunit) {
        assert!(
            e.runner == "vmlinux" || modules.contains(&e.runner.as_str()),
            "KUnit suite {}: module {} is not an obj-m of Kbuild ({modules:?})",
            e.name,
            e.runner
        );
    }
}

#[test]
fn the_leak_scan_is_last_in_its_mode() {
    let m = list();
    for mode in m.modes() {
        let vm: Vec<_> = m.of_mode(mode).filter(|e| e.kind == Kind::Vm).collect();
        if let Some(i) = vm.iter().position(|e| e.runner == "kmemleak_check") {
            assert_eq!(
                i,
                vm.len() - 1,
                "mode {mode}: {} runs after the kmemleak scan {}",
                vm[vm.len() - 1].name,
                vm[i].name
            );
        }
    }
}
