#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

//! A set of keys taken at once on a warm connection, against a real
//! PostgreSQL: a refused set lets go of the keys it took before it returns.

use std::time::Duration;

use lockkit_core::{AcquireRequest, FencingToken, LockKey, OwnerId, Wait};
use lockkit_testkit::Postgres;
use sqlx::{Connection, PgConnection};

use super::super::{PgDriver, PgOptions};
use crate::lease::LeaseBackend;

fn request(key: &str, owner: &OwnerId) -> AcquireRequest {
    let ttl = Duration::from_secs(60);
    AcquireRequest::new(LockKey::new(key).unwrap(), owner.clone(), ttl, Wait::NoWait)
}

#[tokio::test]
async fn a_refused_set_frees_the_keys_it_took_before_it_returns() {
    let server = Postgres::start().await.unwrap();
    let options = PgOptions::from_url(&server.url()).unwrap();
    let driver = PgDriver::connect(options).await.unwrap();
    let leases = driver.backend();
    let (other, set) = (OwnerId::new(), OwnerId::new());
    // "free" has a row, and is free; "held" is someone else's.
    let first = leases
        .try_acquire(&request("free", &other))
        .await
        .unwrap()
        .unwrap();
    assert!(leases.release(&first.key, &other).await.unwrap());
    leases
        .try_acquire(&request("held", &other))
        .await
        .unwrap()
        .unwrap();

    let refused = leases
        .take_all(&[request("free", &set), request("held", &set)])
        .await
        .unwrap();
    assert!(refused.is_none());

    // The set's upsert row-locked "free"; that lock is gone now, not at the
    // set's connection's next statement.
    let mut admin = PgConnection::connect(&server.url()).await.unwrap();
    let locked = sqlx::query("SELECT 1 FROM lockkit_locks WHERE name = 'free' FOR UPDATE NOWAIT")
        .fetch_optional(&mut admin)
        .await;
    assert!(locked.is_ok(), "{locked:?}");
    admin.close().await.unwrap();

    // Nothing of the set was taken: "free" comes with the next token.
    let grant = leases
        .try_acquire(&request("free", &set))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(grant.token, FencingToken(first.token.0 + 1));
}
