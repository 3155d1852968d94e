//! Parsing Redis URLs: credentials kept out of errors and `Debug`, TLS options,
//! and the choices of each option.

use super::*;

#[test]
fn cluster_seeds_each_get_the_credentials_and_options() {
    let o =
        RedisOptions::from_url("redis-cluster://u:pw@h1:1,h2:2?prefix=p&protocol=resp3").unwrap();
    assert_eq!(
        o.nodes,
        [
            "redis://u:pw@h1:1?protocol=resp3",
            "redis://u:pw@h2:2?protocol=resp3"
        ]
    );
    assert_eq!(o.prefix(), "p");
    assert!(!format!("{o:?}").contains("pw"));
}

#[test]
fn bad_urls_get_typed_errors_without_the_password() {
    for url in [
        "redis://:hunter2@h1:1,h2:2",
        "redis-cluster://:hunter2@h1:1,,h2:2",
        "redis-cluster://:hunter2@h1:1/3",
        "redis://:hunter2@h:1?prefix={x}",
        "redis://:hunter2@h:1?wake=sometimes",
        "redis://:hunter2@h:1?eviction=sometimes",
        "memcache://:hunter2@h:1",
    ] {
        let e = RedisOptions::from_url(url).unwrap_err();
        assert!(matches!(e, LockError::InvalidUrl { .. }), "{url}: {e:?}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
    }
}

#[test]
fn eviction_is_refused_unless_the_url_accepts_it() {
    let default = RedisOptions::from_url("redis://h:1").unwrap();
    assert_eq!(default.eviction(), crate::Eviction::Refuse);
    let accept = RedisOptions::from_url("redis-sentinel://s:1/m?eviction=accept").unwrap();
    assert_eq!(accept.eviction(), crate::Eviction::Accept);
    let redlock = crate::RedlockOptions::from_url("redlock://h1:1,h2:2,h3:3?eviction=accept");
    assert_eq!(redlock.unwrap().eviction, crate::Eviction::Accept);
}

/// A file in the temp dir holding `text`, removed on drop.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "lockkit-redis-{}-{}-{name}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::write(&path, text).unwrap();
        Self(path)
    }
    fn path(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn assert_no_password(e: &LockError) {
    assert!(!e.to_string().contains("hunter2"), "{e}");
    assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
}

#[test]
fn tls_options_on_plain_redis_ask_for_rediss() {
    for url in [
        "redis://:hunter2@h:1?tls_ca=/etc/ssl/ca.pem",
        "redis-cluster://:hunter2@h1:1,h2:2?tls_cert=/c.pem&tls_key=/k.pem",
    ] {
        let e = RedisOptions::from_url(url).unwrap_err();
        assert!(matches!(e, LockError::InvalidUrl { .. }), "{url}: {e:?}");
        assert!(e.to_string().contains("use rediss://"), "{e}");
        assert_no_password(&e);
    }
}

#[test]
fn a_missing_tls_file_names_the_option_and_path() {
    for (option, url) in [
        (
            "tls_ca",
            "rediss://:hunter2@h:1?tls_ca=/nonexistent/lockkit/ca.pem",
        ),
        (
            "tls_cert",
            "rediss://:hunter2@h:1?tls_cert=/nonexistent/lockkit/ca.pem&tls_key=/k",
        ),
    ] {
        let e = RedisOptions::from_url(url).unwrap_err();
        assert!(matches!(e, LockError::Config(_)), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains(&format!("{option}=/nonexistent/lockkit/ca.pem")),
            "{text}"
        );
        assert!(text.contains("cannot read"), "{text}");
        assert_no_password(&e);
    }
}

#[test]
fn a_tls_file_that_is_not_pem_is_refused() {
    let junk = TempFile::new("junk.pem", "this is not a certificate\n");
    let url = format!("rediss://:hunter2@h:1?tls_ca={}", junk.path());
    let e = RedisOptions::from_url(&url).unwrap_err();
    assert!(matches!(e, LockError::Config(_)), "{e:?}");
    assert!(
        e.to_string().contains(&format!("tls_ca={}", junk.path())),
        "{e}"
    );
    assert!(e.to_string().contains("no PEM certificate"), "{e}");
    assert_no_password(&e);

    let url = format!(
        "rediss://:hunter2@h:1?tls_cert={}&tls_key={}",
        junk.path(),
        junk.path()
    );
    let e = RedisOptions::from_url(&url).unwrap_err();
    assert!(e.to_string().contains("tls_cert="), "{e}");
    assert_no_password(&e);
}

#[test]
fn a_client_certificate_needs_its_key_and_paths_are_not_empty() {
    for url in [
        "rediss://:hunter2@h:1?tls_cert=/c.pem",
        "rediss://:hunter2@h:1?tls_key=/k.pem",
        "rediss://:hunter2@h:1?tls_ca=",
    ] {
        let e = RedisOptions::from_url(url).unwrap_err();
        assert!(matches!(e, LockError::InvalidUrl { .. }), "{url}: {e:?}");
        assert_no_password(&e);
    }
}

#[test]
fn rediss_without_tls_options_uses_the_system_roots() {
    let o = RedisOptions::from_url("rediss://:hunter2@h:1/2?prefix=p").unwrap();
    assert!(o.tls.is_none());
    assert_eq!(o.nodes, ["rediss://:hunter2@h:1/2"]);
    assert!(!format!("{o:?}").contains("hunter2"));
}

#[test]
fn wake_mode_is_parsed() {
    let o = RedisOptions::from_url("redis://h:1?wake=poll").unwrap();
    assert_eq!(o.wake(), WakeMode::Poll);
    assert_eq!(o.nodes, ["redis://h:1"]);
}

#[test]
fn fence_seed_is_parsed_and_a_bad_one_names_the_choices() {
    let o = RedisOptions::from_url("redis://h:1?fence_seed=clock").unwrap();
    assert_eq!(o.fence_seed(), FenceSeed::Clock);
    assert_eq!(o.nodes, ["redis://h:1"]);
    let o = RedisOptions::from_url("redis://h:1").unwrap();
    assert_eq!(o.fence_seed(), FenceSeed::Counter);
    let e = RedisOptions::from_url("redis://:pw@h:1?fence_seed=time").unwrap_err();
    assert!(e.to_string().contains("counter or clock"), "{e}");
    assert!(!e.to_string().contains("pw"), "{e}");
    let e = crate::RedlockOptions::from_url("redlock://a:1,b:1,c:1?fence_seed=x").unwrap_err();
    assert!(e.to_string().contains("counter or clock"), "{e}");
}
