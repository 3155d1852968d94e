//! No password or token written in a URL is ever shown, whatever characters it
//! holds: passwords are drawn from the whole printable set, each with one of
//! `?#/@:%&` at least, written as they are and percent-encoded, in the
//! userinfo and as a token or password option, with every kind of mistake
//! around them; no part a parser could split off shows either. For
//! every scheme, neither the options' `Debug`, nor any error's `Display`,
//! `Debug` or cause chain from `lockkit::connect`, nor any line logged at
//! `TRACE` while connecting shows the password. The CLI's verbs:
//! `lockkit-cli/tests/secrets.rs`.

#![cfg(feature = "all-drivers")]
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_core::error_chain;
use lockkit_testkit::percent_encoded;
use proptest::prelude::*;

/// Every scheme that takes a password or a token.
const SCHEMES: &[&str] = &[
    "postgres",
    "postgresql",
    "mysql",
    "mariadb",
    "redis",
    "rediss",
    "redis-cluster",
    "redis-sentinel",
    "redlock",
    "etcd",
    "etcds",
    "zk",
    "consul",
    "consuls",
];

/// What may follow the userinfo: a good server part (a closed port, refused at
/// once), and each mistake a parser reports.
const TAILS: &[&str] = &[
    "127.0.0.1:1/lockkit?connect_timeout_ms=300",
    "127.0.0.1:1?bogus_option=1",
    "127.0.0.1:1?connect_timeout_ms=soon",
    "127.0.0.1",
    "127.0.0.1:99999",
    "127.0.0.1:1#fragment",
    "127.0.0.1:1,[::1",
    "",
];

/// A password from the printable set (no space) with one of the characters
/// that end a URL part somewhere in it.
fn password() -> impl Strategy<Value = String> {
    (
        "[!-~]{3,8}",
        prop::sample::select(vec!['?', '#', '/', '@', ':', '%', '&']),
        "[!-~]{3,8}",
    )
        .prop_map(|(a, c, b)| format!("{a}{c}{b}"))
}

/// The URLs that carry `password` for `scheme`: written as it is and
/// percent-encoded, after a user name and alone, with every tail; with a
/// slash or the scheme missing; and as the `token` or `password` option.
fn urls(scheme: &str, password: &str) -> Vec<String> {
    let enc = percent_encoded(password);
    let mut urls = Vec::new();
    for userinfo in [
        format!("app:{password}"),
        format!("app:{enc}"),
        password.to_owned(),
        enc.clone(),
    ] {
        for tail in TAILS {
            urls.push(format!("{scheme}://{userinfo}@{tail}"));
        }
        urls.push(format!("{scheme}:/{userinfo}@127.0.0.1:1"));
        urls.push(format!("{userinfo}@127.0.0.1:6379"));
    }
    for value in [password, enc.as_str()] {
        urls.push(format!("{scheme}://127.0.0.1:1?token={value}"));
        urls.push(format!(
            "{scheme}://127.0.0.1:1?password={value}&bogus_option=1"
        ));
    }
    urls
}

/// Everything lockkit shows of `url`: its options' `Debug` where they parse,
/// and the error `lockkit::connect` returns, as `Display`, `Debug` and chain.
async fn shown_text(url: &str) -> String {
    let options = match url.split(':').next().unwrap_or_default() {
        "postgres" | "postgresql" => {
            format!("{:?}", lockkit::postgres::PgOptions::from_url(url))
        }
        "mysql" | "mariadb" => format!("{:?}", lockkit::mysql::MySqlOptions::from_url(url)),
        "redlock" => format!("{:?}", lockkit::redis::RedlockOptions::from_url(url)),
        "etcd" | "etcds" => format!("{:?}", lockkit::etcd::EtcdOptions::from_url(url)),
        "zk" => format!("{:?}", lockkit::zk::ZkOptions::from_url(url)),
        "consul" | "consuls" => format!("{:?}", lockkit::consul::ConsulOptions::from_url(url)),
        _ => format!("{:?}", lockkit::redis::RedisOptions::from_url(url)),
    };
    let connected = tokio::time::timeout(Duration::from_secs(20), lockkit::connect(url)).await;
    let error = match connected {
        Ok(Ok(locker)) => format!("connected: {locker:?}"),
        Ok(Err(e)) => format!("{e} | {e:?} | {}", error_chain(&e)),
        Err(_) => "no answer within 20 s".to_owned(),
    };
    format!("{options}\n{error}")
}

/// Whether `text` shows `password`, as written or percent-encoded, or a part
/// of it that a URL parser could have split off (at `@`, `&`, `?`, `#`, `=`),
/// six characters or more (shorter ones could be in any message by chance).
fn shows(text: &str, password: &str) -> bool {
    let parts = password.split(['@', '&', '?', '#', '=']);
    text.contains(password)
        || text.contains(&percent_encoded(password))
        || parts.filter(|p| p.len() >= 6).any(|p| text.contains(p))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(12, |cases: u32| cases.min(64)),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn no_password_is_shown_by_any_scheme_error_or_log_line(password in password()) {
        // This case's lines only: every thread of its runtime logs to `logs`.
        let logs = lockkit_testkit::LogCapture::every_level();
        let urls: Vec<String> = SCHEMES.iter().flat_map(|s| urls(s, &password)).collect();
        let shown: Vec<(String, String)> = logs.block_on(async {
            let tasks: Vec<_> = urls
                .into_iter()
                .map(|url| tokio::spawn(async move { (shown_text(&url).await, url) }))
                .collect();
            let mut shown = Vec::new();
            for task in tasks {
                shown.push(task.await.unwrap());
            }
            shown
        }).unwrap();
        for (text, url) in &shown {
            prop_assert!(!shows(text, &password), "{url}\n→ {text}");
        }
        let logged = logs.logged();
        prop_assert!(!logged.is_empty(), "nothing was logged at TRACE");
        prop_assert!(!shows(&logged, &password), "a log line shows it:\n{logged}");
    }
}

/// Passwords the property test found leaking, kept as a plain test: each URL
/// form, every scheme, errors and TRACE lines.
#[test]
fn passwords_found_leaking_stay_hidden() {
    for password in ["AAa&a0aAaA", "&A=?a0!", "aAA@&A0A!AA", "0Aa00:=!A"] {
        let logs = lockkit_testkit::LogCapture::every_level();
        let urls: Vec<String> = SCHEMES.iter().flat_map(|s| urls(s, password)).collect();
        let shown: Vec<(String, String)> = logs
            .block_on(async {
                let mut shown = Vec::new();
                for url in urls {
                    shown.push((shown_text(&url).await, url));
                }
                shown
            })
            .unwrap();
        for (text, url) in &shown {
            assert!(!shows(text, password), "{url}\n→ {text}");
        }
        assert!(
            !shows(&logs.logged(), password),
            "a log line shows {password}"
        );
    }
}

/// The cases the issue was found with, kept as plain tests, with the message
/// a user reads.
#[tokio::test]
async fn a_password_that_ends_the_userinfo_is_hidden_and_the_fix_is_named() {
    for url in [
        "redis://app:hunter2?x@127.0.0.1:1",
        "postgres://app:hunter2?x@127.0.0.1:1/db",
        "mysql://app:hunter2?x@127.0.0.1:1/db",
        "etcd://app:hunter2?x@127.0.0.1:1",
        "zk://app:hunter2?x@127.0.0.1:1",
        "redlock://u:hunter2?x@127.0.0.1:1,u:hunter2?x@127.0.0.1:2,u:hunter2?x@127.0.0.1:3",
        "consul://hunter2?x@127.0.0.1:1",
    ] {
        let e = lockkit::connect(url).await.unwrap_err();
        let text = format!("{e} | {e:?}");
        assert!(!text.contains("hunter2"), "{url} → {text}");
        assert!(text.contains("percent-encode"), "{url} → {text}");
    }
    let url = "redis://app:p@ss:w/rd#?%&@127.0.0.1:1";
    let e = lockkit::connect(url).await.unwrap_err().to_string();
    assert!(!e.contains("ss:w/rd"), "{e}");
}
