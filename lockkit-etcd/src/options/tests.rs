//! The URL and builder forms of [`super::EtcdOptions`].

use super::*;

#[test]
fn endpoints_credentials_and_prefix_are_parsed() {
    let o = EtcdOptions::from_url("etcd://u:p%40ss@h1:1,[::1]:2?prefix=app/locks/").unwrap();
    assert_eq!(o.endpoints(), ["http://h1:1", "http://[::1]:2"]);
    assert_eq!(o.user, Some(("u".into(), "p@ss".into())));
    assert_eq!(o.prefix(), "app/locks");
    let plain = EtcdOptions::from_url("etcd://127.0.0.1:2379").unwrap();
    assert_eq!(plain.prefix(), "lockkit");
    assert_eq!(plain.user(), None);
}

#[test]
fn debug_and_display_never_show_the_password() {
    let o = EtcdOptions::from_url("etcd://root:hunter2@h:1").unwrap();
    for shown in [format!("{o:?}"), o.to_string()] {
        assert!(!shown.contains("hunter2"), "{shown}");
    }
    // The user is shown as the options' own field, never in the URL.
    assert!(format!("{o:?}").contains("root"));
    assert!(!o.to_string().contains("root"), "{o}");
}

#[test]
fn bad_urls_get_typed_errors_without_the_password() {
    for url in [
        "etcd://root:hunter2@",
        "etcd://root:hunter2@h1:1,,h2:2",
        "etcd://root:hunter2@h1",
        "etcd://root:hunter2@h1:99999",
        "etcd://root:hunter2@h1:0",
        "etcd://root:hunter2@h1:1/path",
        "etcd://root:hunter2@h1:1?prefix=",
        "etcd://root:hunter2@h1:1?colour=blue",
        "etcd://root:hunter2@h 1:1",
        "etcd://hunter2@h1:1",
        "etcd://:hunter2@h1:1",
        "etcd://root:hunter2%zz@h1:1",
        "redis://root:hunter2@h1:1",
        "root:hunter2@h1:1",
    ] {
        let e = EtcdOptions::from_url(url).unwrap_err();
        assert!(matches!(e, LockError::InvalidUrl { .. }), "{url}: {e:?}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
    }
}

#[test]
fn etcds_endpoints_are_https_and_without_tls_ca_use_the_system_roots() {
    let o = EtcdOptions::from_url("etcds://u:hunter2@h1:1,h2:2?prefix=p").unwrap();
    assert_eq!(o.endpoints(), ["https://h1:1", "https://h2:2"]);
    assert!(o.is_tls());
    assert!(o.tls.as_ref().is_some_and(|t| !t.has_ca()));
    assert!(!o.tls.as_ref().is_some_and(Tls::has_client_cert));
    let shown = format!("{o:?}");
    assert!(shown.contains("system roots"), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(!EtcdOptions::from_url("etcd://h:1").unwrap().is_tls());
}

#[test]
fn tls_options_on_plain_etcd_ask_for_etcds() {
    for url in [
        "etcd://root:hunter2@h:1?tls_ca=/etc/ssl/ca.pem",
        "etcd://root:hunter2@h1:1,h2:2?tls_cert=/c.pem&tls_key=/k.pem",
        "etcd://root:hunter2@h:1?prefix=p&tls_key=/k.pem",
    ] {
        let e = EtcdOptions::from_url(url).unwrap_err();
        assert!(matches!(e, LockError::InvalidUrl { .. }), "{url}: {e:?}");
        assert!(e.to_string().contains("use etcds://"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}

#[test]
fn a_missing_tls_file_is_a_config_error_naming_the_option_and_path() {
    for (option, url) in [
        (
            "tls_ca",
            "etcds://root:hunter2@h:1?tls_ca=/nonexistent/lockkit/ca.pem",
        ),
        (
            "tls_cert",
            "etcds://root:hunter2@h:1?tls_cert=/nonexistent/lockkit/ca.pem&tls_key=/k",
        ),
        (
            "tls_ca",
            "etcds://root:hunter2@h:1?tls_ca=/nonexistent/lockkit%20dir/ca.pem",
        ),
    ] {
        let e = EtcdOptions::from_url(url).unwrap_err();
        assert!(matches!(e, LockError::Config(_)), "{url}: {e:?}");
        let text = e.to_string();
        assert!(
            text.contains(&format!("{option}=/nonexistent/lockkit")),
            "{text}"
        );
        assert!(text.contains("cannot read the file"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
    // The path is percent-decoded before it is read.
    let e =
        EtcdOptions::from_url("etcds://h:1?tls_ca=/nonexistent/lockkit%20dir/ca.pem").unwrap_err();
    assert!(
        e.to_string().contains("/nonexistent/lockkit dir/ca.pem"),
        "{e}"
    );
}

#[test]
fn a_tls_file_that_is_not_pem_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "this is not a certificate\n").unwrap();
    let junk = junk.display();
    for (option, url) in [
        ("tls_ca", format!("etcds://root:hunter2@h:1?tls_ca={junk}")),
        (
            "tls_cert",
            format!("etcds://root:hunter2@h:1?tls_cert={junk}&tls_key={junk}"),
        ),
    ] {
        let e = EtcdOptions::from_url(&url).unwrap_err();
        assert!(matches!(e, LockError::Config(_)), "{url}: {e:?}");
        let text = e.to_string();
        assert!(text.contains(&format!("{option}={junk}")), "{text}");
        assert!(text.contains("no PEM certificate"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }
    // A file with a certificate but no key, given as the key.
    let cert_only = dir.path().join("cert-only.pem");
    std::fs::write(
        &cert_only,
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let e = EtcdOptions::from_url(&format!(
        "etcds://h:1?tls_cert={junk}&tls_key={}",
        cert_only.display()
    ))
    .unwrap_err();
    // The certificate is checked first, and it is junk.
    assert!(e.to_string().contains("tls_cert="), "{e}");
}

#[test]
fn a_client_cert_without_its_key_or_an_empty_path_is_an_invalid_url() {
    for url in [
        "etcds://root:hunter2@h:1?tls_cert=/c.pem",
        "etcds://root:hunter2@h:1?tls_key=/k.pem",
        "etcds://root:hunter2@h:1?tls_ca=",
        "etcds://root:hunter2@h:1?tls_ca=%zz",
    ] {
        let e = EtcdOptions::from_url(url).unwrap_err();
        assert!(matches!(e, LockError::InvalidUrl { .. }), "{url}: {e:?}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
    }
    let e = EtcdOptions::from_url("etcds://h:1?tls_cert=/c.pem").unwrap_err();
    assert!(e.to_string().contains("both tls_cert and tls_key"), "{e}");
}
