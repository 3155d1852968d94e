//! No verb of the `lockkit` binary prints a password or token written in its
//! URL, whatever characters it holds, with every log line at `TRACE`: each
//! verb, against each backend family at a closed port, with passwords holding
//! the characters that end a URL part, written as they are and
//! percent-encoded, in the URL argument and in `LOCKKIT_URL`. The library's own
//! property test over every parser error: `tests/secrets.rs`.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::process::Command;
use std::thread;

use lockkit_testkit::percent_encoded;

/// Passwords with the characters that end a URL part.
const PASSWORDS: &[&str] = &["hunter2?x", "p@ss:w/rd#?%&", "Zq#7/t@x:y%&", "a%zzb?c#d"];

/// One URL per backend family, each to a closed port: `PW` is the password.
const URLS: &[&str] = &[
    "redis://app:PW@127.0.0.1:1",
    "redlock://app:PW@127.0.0.1:1,app:PW@127.0.0.1:2,app:PW@127.0.0.1:3",
    "redis-sentinel://app:PW@127.0.0.1:1/mymaster",
    "postgres://app:PW@127.0.0.1:1/db",
    "mysql://app:PW@127.0.0.1:1/db",
    "etcd://app:PW@127.0.0.1:1",
    "zk://app:PW@127.0.0.1:1",
    "consul://PW@127.0.0.1:1",
    "consul://127.0.0.1:1?token=PW",
];

/// Every verb, with `URL` where the backend goes.
const VERBS: &[&[&str]] = &[
    &["inspect", "URL", "k"],
    &["ls", "URL"],
    &["break", "URL", "k", "--yes"],
    &["run", "URL", "--key", "k", "--wait", "1s", "--", "true"],
    &["elect", "URL", "e", "--", "true"],
    &["check", "URL", "--filter", "try_lock"],
    &["bench", "URL", "--iterations", "1"],
    &[
        "compare",
        "URL",
        "--no-check",
        "--html",
        "HTML",
        "--json",
        "JSON",
    ],
    &["demo", "--workers", "2", "--stock", "2", "--url", "URL"],
];

/// Runs `lockkit` with `args`, the URL in `env` if given, everything logged:
/// what it printed on both streams.
fn printed(args: &[String], env_url: Option<&str>) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lockkit"));
    command.args(args).env("LOCKKIT_LOG", "trace");
    match env_url {
        Some(url) => command.env("LOCKKIT_URL", url),
        None => command.env_remove("LOCKKIT_URL"),
    };
    let out = command.output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn no_verb_prints_a_password_at_any_log_level() {
    let dir = tempfile::tempdir().unwrap();
    let (html, json) = (dir.path().join("r.html"), dir.path().join("r.json"));
    let mut runs = Vec::new();
    for password in PASSWORDS {
        for written in [password.to_string(), percent_encoded(password)] {
            for url in URLS {
                let url = url.replace("PW", &written);
                for verb in VERBS {
                    let args: Vec<String> = verb
                        .iter()
                        .map(|a| match *a {
                            "URL" => url.clone(),
                            "HTML" => html.display().to_string(),
                            "JSON" => json.display().to_string(),
                            other => other.to_owned(),
                        })
                        .collect();
                    runs.push((password, args, None));
                }
                // The URL from the environment, on a verb that reads it.
                runs.push((password, vec!["ls".into()], Some(url.clone())));
            }
        }
    }
    // Four at a time: each run is a process that fails at once, or within its
    // connect timeout.
    let chunks: Vec<Vec<_>> = runs
        .chunks(runs.len().div_ceil(4))
        .map(<[_]>::to_vec)
        .collect();
    let leaks: Vec<String> = thread::scope(|s| {
        let workers: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    let mut leaks = Vec::new();
                    for (password, args, env_url) in chunk {
                        let text = printed(&args, env_url.as_deref());
                        if text.contains(*password) || text.contains(&percent_encoded(password)) {
                            leaks.push(format!("{args:?} (LOCKKIT_URL {env_url:?}):\n{text}"));
                        }
                    }
                    leaks
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    assert!(
        leaks.is_empty(),
        "{} runs printed a password:\n{}",
        leaks.len(),
        leaks.join("\n---\n")
    );
    if json.exists() {
        let report = std::fs::read_to_string(&json).unwrap();
        assert!(PASSWORDS.iter().all(|p| !report.contains(p)), "{report}");
    }
}
