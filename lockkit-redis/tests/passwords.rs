//! A password holding the characters that end a URL part reaches the server
//! whole, written as it is (lockkit reads the userinfo up to the last `@`) or
//! percent-encoded, on a single server and on Redlock's masters.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use lockkit_testkit::{Redis, RedisMasters};

const PASSWORD: &str = "p@ss/w:rd";
const ENCODED: &str = "p%40ss%2Fw%3Ard";

/// `url` (`redis://127.0.0.1:P…`) with `:password@` written in.
fn with_password(url: &str, password: &str) -> String {
    url.replacen("://", &format!("://:{password}@"), 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_with_url_characters_reaches_a_server_whole() {
    let server = Redis::start().await.unwrap();
    server
        .ask(&format!("CONFIG SET requirepass {PASSWORD}"))
        .await
        .unwrap();
    for password in [PASSWORD, ENCODED] {
        let locker = lockkit::connect(&with_password(&server.url(), password))
            .await
            .unwrap();
        locker.try_lock("k").await.unwrap().release().await.unwrap();
    }
    let wrong = lockkit::connect(&with_password(&server.url(), "p@ss/wrong")).await;
    assert!(wrong.is_err(), "a wrong password was accepted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_with_url_characters_reaches_every_redlock_master_whole() {
    let masters = RedisMasters::start(3).await.unwrap();
    for node in &masters.nodes {
        node.ask(&format!("CONFIG SET requirepass {PASSWORD}"))
            .await
            .unwrap();
    }
    let locker = lockkit::connect(&with_password(&masters.url(), PASSWORD))
        .await
        .unwrap();
    locker.try_lock("k").await.unwrap().release().await.unwrap();
}
