//! TLS to PostgreSQL and MariaDB servers that accept TLS connections only: the URL
//! options sqlx documents work (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`;
//! `ssl-mode`, `ssl-ca`, `ssl-cert`, `ssl-key`), and each way of getting TLS wrong
//! — no TLS, an unknown CA, a client certificate the server does not trust — fails
//! with a typed error that says what to change, and never shows a key.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::path::Path;

use lockkit_core::{LockError, Locker};
use lockkit_testkit::{CertAuthority, MariaDb, Postgres};

/// A CA (and client certificate) that none of the servers trusts.
fn stranger() -> (tempfile::TempDir, CertAuthority) {
    let dir = tempfile::tempdir().unwrap();
    let certs = CertAuthority::generate(dir.path()).unwrap();
    (dir, certs)
}

fn q(path: &Path) -> String {
    path.display().to_string()
}

async fn connect(url: &str) -> Result<Locker, LockError> {
    lockkit::connect(url).await
}

/// The error of connecting to `url`: a `Connection` error whose message names
/// `option`, and shows no key.
async fn refused(url: &str, option: &str, key: Option<&Path>) -> String {
    let err = match connect(url).await {
        Ok(_) => panic!("{url}: connected"),
        Err(e) => e,
    };
    let text = err.to_string();
    eprintln!("{url}:\n  {text}");
    assert!(
        matches!(err, LockError::Connection { .. }),
        "{url}: expected a Connection error, got {err:?}"
    );
    assert!(text.contains(option), "{url}: `{option}` not named: {text}");
    if let Some(key) = key {
        let pem = std::fs::read_to_string(key).unwrap();
        let body = pem.lines().nth(1).unwrap();
        for shown in [text.clone(), format!("{err:?}")] {
            assert!(!shown.contains(body), "a key is shown: {shown}");
            assert!(!shown.contains("PRIVATE KEY"), "a key is shown: {shown}");
        }
    }
    text
}

#[tokio::test]
async fn postgres_over_tls_locks_and_releases() {
    let server = Postgres::start_tls().await.unwrap();
    let locker = connect(&server.url()).await.unwrap();
    let guard = locker.try_lock("tls").await.unwrap();
    guard.release().await.unwrap();
}

#[tokio::test]
async fn postgres_without_tls_to_a_tls_only_server_says_to_use_sslmode() {
    let server = Postgres::start_tls().await.unwrap();
    let url = format!("{}?sslmode=disable", server.plain_url());
    refused(&url, "sslmode=", None).await;
}

#[tokio::test]
async fn postgres_with_an_unknown_ca_says_to_check_sslrootcert() {
    let server = Postgres::start_tls().await.unwrap();
    let (_dir, other) = stranger();
    let url = format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        server.plain_url(),
        q(&other.ca)
    );
    refused(&url, "sslrootcert", None).await;
}

#[tokio::test]
async fn postgres_with_an_untrusted_client_certificate_says_to_check_sslcert() {
    let server = Postgres::start_mutual_tls().await.unwrap();
    let ca = &server.tls_files().unwrap().ca;
    let (_dir, other) = stranger();
    let url = format!(
        "{}?sslmode=verify-full&sslrootcert={}&sslcert={}&sslkey={}",
        server.plain_url(),
        q(ca),
        q(&other.client_cert),
        q(&other.client_key)
    );
    refused(&url, "sslcert", Some(&other.client_key)).await;
    // The server's own client certificate is accepted.
    let locker = connect(&server.url()).await.unwrap();
    locker.try_lock("k").await.unwrap().release().await.unwrap();
}

#[tokio::test]
async fn mariadb_over_tls_locks_and_releases() {
    let server = MariaDb::start_tls().await.unwrap();
    let locker = connect(&server.url()).await.unwrap();
    let guard = locker.try_lock("tls").await.unwrap();
    guard.release().await.unwrap();
}

#[tokio::test]
async fn mariadb_without_tls_to_a_tls_only_server_says_to_use_ssl_mode() {
    let server = MariaDb::start_tls().await.unwrap();
    let url = format!("{}?ssl-mode=DISABLED", server.plain_url());
    refused(&url, "ssl-mode=", None).await;
}

#[tokio::test]
async fn mariadb_with_an_unknown_ca_says_to_check_ssl_ca() {
    let server = MariaDb::start_tls().await.unwrap();
    let (_dir, other) = stranger();
    let url = format!(
        "{}?ssl-mode=VERIFY_IDENTITY&ssl-ca={}",
        server.plain_url(),
        q(&other.ca)
    );
    refused(&url, "ssl-ca", None).await;
}

#[tokio::test]
async fn mariadb_with_an_untrusted_client_certificate_says_to_check_ssl_cert() {
    let server = MariaDb::start_mutual_tls().await.unwrap();
    let ca = &server.tls_files().unwrap().ca;
    let (_dir, other) = stranger();
    let url = format!(
        "{}?ssl-mode=VERIFY_IDENTITY&ssl-ca={}&ssl-cert={}&ssl-key={}",
        server.plain_url(),
        q(ca),
        q(&other.client_cert),
        q(&other.client_key)
    );
    refused(&url, "ssl-cert", Some(&other.client_key)).await;
    let locker = connect(&server.url()).await.unwrap();
    locker.try_lock("k").await.unwrap().release().await.unwrap();
}
