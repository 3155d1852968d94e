//! Every verb takes its backend URL in each of the three forms the README
//! promises: as an argument, as `--url URL`, or from `LOCKKIT_URL`.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::process::Command;

/// How the URL is given.
#[derive(Debug, Clone, Copy)]
enum Form {
    Argument,
    Option,
    Environment,
}

/// Runs `lockkit VERB [URL] REST…` with the URL given as `form` says: the exit
/// code and what it printed.
fn lockkit(verb: &str, url: &str, rest: &[&str], form: Form) -> (i32, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lockkit"));
    command.arg(verb).env_remove("LOCKKIT_URL");
    match form {
        Form::Argument => {
            command.arg(url);
        }
        Form::Option => {
            command.args(["--url", url]);
        }
        Form::Environment => {
            command.env("LOCKKIT_URL", url);
        }
    }
    let out = command.args(rest).output().unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), printed)
}

#[test]
fn every_verb_takes_the_url_as_an_argument_an_option_or_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("locks.db").display());
    // Looking (inspect, ls, break) creates no table: a first lock makes them.
    let (code, out) = lockkit("run", &url, &["--key", "setup", "--", "true"], Form::Option);
    assert_eq!(code, 0, "the first run: {out}");
    for form in [Form::Argument, Form::Option, Form::Environment] {
        let (code, out) = lockkit("inspect", &url, &["orders"], form);
        assert_eq!(code, 0, "inspect, {form:?}: {out}");
        assert!(out.contains("`orders` is free"), "inspect, {form:?}: {out}");
        let (code, out) = lockkit("ls", &url, &[], form);
        assert_eq!(code, 0, "ls, {form:?}: {out}");
        // Nothing held: `break` says so, and exits 1.
        let (code, out) = lockkit("break", &url, &["orders", "--yes"], form);
        assert_eq!(code, 1, "break, {form:?}: {out}");
        let (code, out) = lockkit("run", &url, &["--key", "orders", "--", "true"], form);
        assert_eq!(code, 0, "run, {form:?}: {out}");
        let (code, out) = lockkit("elect", &url, &["leader", "--", "true"], form);
        assert_eq!(code, 0, "elect, {form:?}: {out}");
        let (code, out) = lockkit("check", &url, &["--filter", "try_lock"], form);
        assert_eq!(code, 0, "check, {form:?}: {out}");
    }
}

#[test]
fn a_verb_without_a_url_says_how_to_give_one() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lockkit"));
    let out = command
        .args(["inspect", "orders"])
        .env_remove("LOCKKIT_URL")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("LOCKKIT_URL") && err.contains("--url"),
        "{err}"
    );
}
