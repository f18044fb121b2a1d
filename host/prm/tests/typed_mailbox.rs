// SPDX-License-Identifier: GPL-2.0

//! The typed mailboxes refuse, at compile time, a member that is not of their layout: a member
//! of another command's layout, an outbox member in an inbox, an inbox member read from an
//! outbox, a context member without its projection. Each case is a small crate that mounts
//! `mlx5/prm.rs` as the driver does and is compiled with `rustc`: it must fail with E0308
//! (mismatched types) where it names the wrong member, and the same crate with the right member
//! must compile, so a failure is the typing and not a broken harness. (A compile_fail doctest
//! cannot reach `pub(crate)` items; this needs no trybuild.)

use std::path::{Path, PathBuf};
use std::process::Command;

/// The crate around one access: `fill` sets `$set` in CREATE_CQ's inbox, `read` reads `$get`
/// from its outbox, both through the command table's types as `mlx5/cmd/cq.rs` does.
fn source(prm: &Path, set: &str, get: &str) -> String {
    format!(
        r#"#![no_std]
#![allow(dead_code)]
#[path = "{prm}"]
mod prm;
use prm::command::{{CreateCq, PrmCommand}};
use prm::layout::{{Buf, BufMut}};
pub fn fill(b: &mut [u8]) -> Option<()> {{
    let mut inbox = BufMut::<<CreateCq as PrmCommand>::In>::new(b).ok()?;
    inbox.set({set}, 1).ok()
}}
pub fn read(b: &[u8]) -> Option<u32> {{
    let outbox = Buf::<<CreateCq as PrmCommand>::Out>::new(b).ok()?;
    Some(outbox.get({get}))
}}
"#,
        prm = prm.display()
    )
}

/// Compiles `src` as a library (metadata only); the compiler's diagnostics on failure.
fn compile(name: &str, src: &str) -> Result<(), String> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("typed_mailbox");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join(format!("{name}.rs"));
    std::fs::write(&file, src).map_err(|e| e.to_string())?;
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "lib",
            "--emit",
            "metadata",
        ])
        .arg("--crate-name")
        .arg(name)
        .arg("--out-dir")
        .arg(&dir)
        .arg(&file)
        .output()
        .map_err(|e| format!("running rustc: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn prm_rs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../mlx5/prm.rs")
}

/// The control: CREATE_CQ's own inbox and outbox members compile.
const SET_OK: &str = "prm::cmd::create_cq_in::cq_umem_valid";
const GET_OK: &str = "prm::cmd::create_cq_out::cqn";

fn assert_refused(name: &str, set: &str, get: &str, wrong: &str) {
    let err = match compile(name, &source(&prm_rs(), set, get)) {
        Ok(()) => panic!("{name}: `{wrong}` compiled in CREATE_CQ's mailbox"),
        Err(e) => e,
    };
    assert!(
        err.contains("error[E0308]") && err.contains(wrong),
        "{name}: not refused for its member's type:\n{err}"
    );
}

#[test]
fn own_members_compile() {
    if let Err(e) = compile("typed_ok", &source(&prm_rs(), SET_OK, GET_OK)) {
        panic!("the control crate does not compile:\n{e}");
    }
}

#[test]
fn member_of_another_command_does_not_compile() {
    let wrong = "prm::cmd::create_qp_in::input_qpn";
    assert_refused("typed_other_cmd", wrong, GET_OK, wrong);
}

#[test]
fn outbox_member_in_inbox_does_not_compile() {
    let wrong = "prm::cmd::create_cq_out::cqn";
    assert_refused("typed_out_in_in", wrong, GET_OK, wrong);
}

#[test]
fn inbox_member_read_from_outbox_does_not_compile() {
    let wrong = "prm::cmd::create_cq_in::uid";
    assert_refused("typed_in_from_out", SET_OK, wrong, wrong);
}

#[test]
fn context_member_without_its_projection_does_not_compile() {
    // `cqc` members reach the inbox only through `create_cq_in::cq_context` (`c(cqc::..)`).
    let wrong = "prm::ctx::cqc::log_cq_size";
    assert_refused("typed_ctx_bare", wrong, GET_OK, wrong);
}
