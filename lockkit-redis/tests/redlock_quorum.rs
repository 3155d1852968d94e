//! Redlock under faults, against 5 real Redis masters from the testkit: too few
//! masters, paused masters, masters dying one after another; and URL parsing.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_core::LockError;
use lockkit_core::driver::acquire;
use lockkit_redis::{RedlockDriver, RedlockOptions};
use lockkit_testkit::RedisMasters;
use tokio::time::Instant;

mod common;
use common::redlock_locker;

/// The default cap on one request to one master (see `RedlockOptions`).
const REQUEST_TIMEOUT: Duration = Duration::from_millis(250);
/// Slack for a loaded 2-core machine on top of a bound the driver promises.
const SLACK: Duration = Duration::from_millis(750);

fn expect_quorum_error<T>(r: Result<T, LockError>, answered: usize, what: &str) {
    let expected = format!("{answered} of 5 masters answered, 3 needed");
    match r {
        Err(LockError::Connection { message, .. }) => assert!(
            message.contains("Redlock quorum unreachable") && message.contains(&expected),
            "{what}: unexpected message: {message}"
        ),
        Err(e) => panic!("{what}: expected the quorum error, got: {e}"),
        Ok(_) => panic!("{what}: granted with only {answered} of 5 masters up"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_of_five_killed_try_lock_fails_fast_with_the_quorum_error() {
    let mut masters = RedisMasters::start(5).await.unwrap();
    let locker = redlock_locker(&masters.url()).await;
    for node in &mut masters.nodes[..3] {
        node.kill();
    }
    let started = Instant::now();
    let r = locker.try_lock("orders:1").await;
    let took = started.elapsed();
    expect_quorum_error(r, 2, "try_lock");
    assert!(
        took < REQUEST_TIMEOUT * 2 + SLACK,
        "try_lock took {took:?} to fail"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_of_five_killed_waiting_lock_ends_with_the_quorum_error_at_its_deadline() {
    let mut masters = RedisMasters::start(5).await.unwrap();
    let locker = redlock_locker(&masters.url()).await;
    for node in &mut masters.nodes[..3] {
        node.kill();
    }
    let wait = Duration::from_secs(2);
    let started = Instant::now();
    let r = locker.lock("orders:1").wait(wait).await;
    let took = started.elapsed();
    expect_quorum_error(r, 2, "lock().wait(2s)");
    // It keeps retrying (masters may come back) until the wait is over, no longer.
    assert!(took >= wait, "gave up after {took:?}, before the wait");
    assert!(
        took < wait + Duration::from_secs(1),
        "gave up only after {took:?}"
    );
}

/// A wait-forever acquire must not hang either: it gives up with the quorum error
/// after 10 s of unbroken unreachability (the documented patience).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_of_five_killed_wait_forever_gives_up_after_the_documented_patience() {
    use lockkit_core::{AcquireRequest, LockKey, OwnerId, Wait};
    let mut masters = RedisMasters::start(5).await.unwrap();
    let driver = RedlockDriver::connect(RedlockOptions::from_url(&masters.url()).unwrap())
        .await
        .unwrap();
    for node in &mut masters.nodes[..3] {
        node.kill();
    }
    let req = AcquireRequest::new(
        LockKey::new("orders:1").unwrap(),
        OwnerId::new(),
        Duration::from_secs(10),
        Wait::Forever,
    );
    let patience = Duration::from_secs(10);
    let started = Instant::now();
    let r = tokio::time::timeout(patience * 2, acquire(&driver, &req))
        .await
        .expect("a wait-forever acquire hung with 3 of 5 masters dead");
    let took = started.elapsed();
    expect_quorum_error(r, 2, "acquire(Wait::Forever)");
    assert!(
        took >= patience,
        "gave up after {took:?}, before the patience"
    );
    assert!(
        took < patience + Duration::from_secs(1),
        "gave up only after {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_needs_only_a_quorum_and_names_the_count_when_it_has_none() {
    let mut masters = RedisMasters::start(5).await.unwrap();
    let url = masters.url();
    for node in &mut masters.nodes[..2] {
        node.kill();
    }
    // 3 of 5 up: connects and locks.
    let g = redlock_locker(&url)
        .await
        .try_lock("orders:1")
        .await
        .unwrap();
    g.release().await.unwrap();
    masters.nodes[2].kill();
    let started = Instant::now();
    let r = RedlockDriver::connect(RedlockOptions::from_url(&url).unwrap()).await;
    let took = started.elapsed();
    match r {
        Err(LockError::Connection { message, .. }) => assert!(
            message.contains("2 of 5 masters answered, 3 needed"),
            "unexpected message: {message}"
        ),
        Err(e) => panic!("expected a connection error, got: {e}"),
        Ok(d) => panic!("connected with 2 of 5 masters up: {d:?}"),
    }
    assert!(
        took < Duration::from_secs(3) + SLACK,
        "connect took {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_minority_does_not_stall_acquire_beyond_the_request_timeout() {
    let masters = RedisMasters::start(5).await.unwrap();
    let (a, b) = (
        redlock_locker(&masters.url()).await,
        redlock_locker(&masters.url()).await,
    );
    // Warm every connection first, so the pause hits established connections.
    a.try_lock("warm").await.unwrap().release().await.unwrap();
    b.try_lock("warm").await.unwrap().release().await.unwrap();
    masters.nodes[3].pause();
    masters.nodes[4].pause();

    let started = Instant::now();
    let g = a.try_lock("orders:1").await.unwrap();
    let took = started.elapsed();
    assert!(
        took < REQUEST_TIMEOUT + SLACK,
        "acquire with 2 of 5 masters paused took {took:?}"
    );

    let started = Instant::now();
    let r = b.try_lock("orders:1").await;
    let took = started.elapsed();
    assert!(
        matches!(r, Err(LockError::Contended { .. })),
        "expected Contended, got {:?}",
        r.map(|g| g.token())
    );
    // One acquire round plus the release round after a failed attempt, each
    // bounded by the request timeout.
    assert!(
        took < REQUEST_TIMEOUT * 2 + SLACK,
        "contended try_lock with 2 masters paused took {took:?}"
    );

    let started = Instant::now();
    g.release().await.unwrap();
    let took = started.elapsed();
    assert!(
        took < REQUEST_TIMEOUT + SLACK,
        "release with 2 masters paused took {took:?}"
    );
    masters.nodes[3].resume();
    masters.nodes[4].resume();
}

/// Skews one master's fencing counter far ahead of the others, then kills masters
/// one after another down to the quorum — first the one with the high counter,
/// while a holder has its token — with a new holder after each death: tokens must
/// keep increasing. Without the write-back of the quorum's maximum
/// (`raise_fence.lua`), the token after the first death would fall from 101 to 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_strictly_increase_while_masters_die_down_to_the_quorum() {
    let mut masters = RedisMasters::start(5).await.unwrap();
    let url = masters.url();
    let key = "inventory:sku-42";
    // The documented mapping: `<prefix>:{K}:fence` is the counter.
    let skewed = redis::Client::open(masters.nodes[0].url()).unwrap();
    let mut conn = common::admin(&skewed).await;
    let _: () = redis::cmd("SET")
        .arg(format!("lockkit:{{{key}}}:fence"))
        .arg(100)
        .query_async(&mut conn)
        .await
        .unwrap();

    let mut tokens = Vec::new();
    for victim in [Some(0), Some(1), None] {
        // A holder whose fixed lease runs out while a master dies.
        let a = redlock_locker(&url).await;
        let ga = a
            .lock(key)
            .lease(Duration::from_millis(300))
            .no_wait()
            .await
            .unwrap();
        tokens.push(ga.token().get());
        if let Some(v) = victim {
            masters.nodes[v].kill();
        }
        // The next holder takes over after the expiry, and releases.
        let b = redlock_locker(&url).await;
        let gb = b
            .lock(key)
            .lease(Duration::from_secs(10))
            .wait(Duration::from_secs(5))
            .await
            .unwrap();
        tokens.push(gb.token().get());
        gb.release().await.unwrap();
        drop(ga);
    }
    assert_eq!(tokens[0], 101, "the first token is the quorum's maximum");
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens did not strictly increase: {tokens:?}"
    );
    // Below the quorum, locking stops with the clear error.
    let last = redlock_locker(&url).await;
    masters.nodes[2].kill();
    expect_quorum_error(
        last.try_lock(key).await.map(|_| ()),
        2,
        "after the third death",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentrant_driver_acquire_keeps_the_written_back_token() {
    use lockkit_core::{AcquireRequest, LockDriver, LockKey, OwnerId, Wait};
    let masters = RedisMasters::start(5).await.unwrap();
    let key = LockKey::new("orders:7").unwrap();
    let skewed = redis::Client::open(masters.nodes[4].url()).unwrap();
    let mut conn = common::admin(&skewed).await;
    let _: () = redis::cmd("SET")
        .arg("lockkit:{orders:7}:fence")
        .arg(41)
        .query_async(&mut conn)
        .await
        .unwrap();
    let driver = RedlockDriver::connect(RedlockOptions::from_url(&masters.url()).unwrap())
        .await
        .unwrap();
    let owner = OwnerId::new();
    let req = AcquireRequest::new(
        key.clone(),
        owner.clone(),
        Duration::from_secs(10),
        Wait::NoWait,
    );
    let first = acquire(&driver, &req).await.unwrap();
    let again = acquire(&driver, &req).await.unwrap();
    assert_eq!(first.token.get(), 42);
    assert_eq!(again.token, first.token);
    // Every master now carries the quorum's token in the lock value.
    for node in &masters.nodes {
        let client = redis::Client::open(node.url()).unwrap();
        let mut c = common::admin(&client).await;
        let value: String = redis::cmd("GET")
            .arg("lockkit:{orders:7}:lock")
            .query_async(&mut c)
            .await
            .unwrap();
        assert_eq!(value, format!("{}:42", owner.to_hex()));
    }
    assert!(driver.release(&key, &owner).await.unwrap());
}

/// EVALSHA calls each master has run so far.
async fn script_calls(masters: &RedisMasters) -> Vec<u64> {
    let mut calls = Vec::new();
    for node in &masters.nodes {
        let client = redis::Client::open(node.url()).unwrap();
        let mut c = common::admin(&client).await;
        calls.push(common::script_calls(&mut c).await);
    }
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn masters_that_agree_on_the_token_skip_the_raise_round() {
    let masters = RedisMasters::start(5).await.unwrap();
    let key = "orders:8";
    let l = redlock_locker(&masters.url()).await;
    // Loads the scripts (a first EVALSHA answers NOSCRIPT).
    l.try_lock(key).await.unwrap().release().await.unwrap();
    // Counters in step: each lock+release is one acquire and one release script
    // call per master.
    let before = script_calls(&masters).await;
    let mut tokens = Vec::new();
    for _ in 0..10 {
        let g = l.try_lock(key).await.unwrap();
        tokens.push(g.token().get());
        g.release().await.unwrap();
    }
    let after = script_calls(&masters).await;
    let per_master: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert_eq!(per_master, vec![20; 5], "script calls per master");
    assert_eq!(tokens, (2..=11).collect::<Vec<u64>>());
    // One master ahead: the masters disagree, so the quorum's maximum is written
    // back to every master (a third call) and the next grants agree again.
    let skewed = redis::Client::open(masters.nodes[2].url()).unwrap();
    let mut conn = common::admin(&skewed).await;
    let _: () = redis::cmd("SET")
        .arg(format!("lockkit:{{{key}}}:fence"))
        .arg(50)
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut per_pair = Vec::new();
    for expected in [51, 52] {
        let before = script_calls(&masters).await;
        let g = l.try_lock(key).await.unwrap();
        assert_eq!(g.token().get(), expected);
        g.release().await.unwrap();
        let after = script_calls(&masters).await;
        per_pair.push(after.iter().zip(&before).map(|(a, b)| a - b).min());
    }
    // At least 3: the raise script's first call may also load it (NOSCRIPT).
    assert!(per_pair[0] >= Some(3), "no raise round: {per_pair:?}");
    assert_eq!(per_pair[1], Some(2), "agreeing again, no raise round");
}

#[test]
fn bad_urls_are_typed_errors_that_never_show_the_password() {
    let bad = [
        (
            "redis://:hunter2@127.0.0.1:6379",
            "the scheme must be redlock",
        ),
        ("redlock://:hunter2@", "no masters"),
        ("redlock://:hunter2@h1:6379,,h2:6379", "master #2 is empty"),
        ("redlock://:hunter2@h1:6379,h2:abc", "port `abc`"),
        ("redlock://:hunter2@h1:6379,h2:0", "port `0`"),
        ("redlock://:hunter2@h1:6379,h1:6379", "listed twice"),
        ("redlock://:hunter2@h1:6379?drift_ms=soon", "drift_ms"),
        ("redlock://:hunter2@h1:6379?retry_ms=0", "retry_ms"),
        ("redlock://:hunter2@h1:6379?prefix={x}", "prefix"),
        (
            "redlock://:hunter2@h1:6379?password=hunter2",
            "unknown option `password`",
        ),
    ];
    for (url, says) in bad {
        match RedlockOptions::from_url(url) {
            Err(e @ LockError::InvalidUrl { .. }) => {
                let (shown, debug) = (e.to_string(), format!("{e:?}"));
                assert!(
                    shown.contains(says),
                    "{url}: message `{shown}` lacks `{says}`"
                );
                assert!(!shown.contains("hunter2"), "password in Display: {shown}");
                assert!(!debug.contains("hunter2"), "password in Debug: {debug}");
            }
            Err(e) => panic!("{url}: expected InvalidUrl, got: {e}"),
            Ok(o) => panic!("{url}: accepted as {o:?}"),
        }
    }
    assert!(matches!(
        RedlockOptions::from_masters(Vec::<String>::new()),
        Err(LockError::Config(_))
    ));
    match RedlockOptions::from_masters(["http://:hunter2@h1:6379"]) {
        Err(e @ LockError::InvalidUrl { .. }) => assert!(!format!("{e} {e:?}").contains("hunter2")),
        other => panic!("expected InvalidUrl, got {other:?}"),
    }
}

#[test]
fn good_urls_parse_and_debug_hides_the_password() {
    let o = RedlockOptions::from_url(
        "redlock://app:hunter2@h1:6379,h2:6380,h3?prefix=billing&drift_ms=5&retry_ms=50&timeout_ms=100",
    )
    .unwrap();
    assert_eq!((o.masters(), o.quorum()), (3, 2));
    assert_eq!(o.key_prefix(), "billing");
    let debug = format!("{o:?}");
    assert!(!debug.contains("hunter2"), "{debug}");
    assert!(debug.contains("***@h2:6380"), "{debug}");

    let o = RedlockOptions::from_masters([
        "redis://:one@h1:6379",
        "redis://:two@h2:6379",
        "redis://h3:6379",
        "redis://h4:6379",
        "redis://h5:6379",
    ])
    .unwrap()
    .prefix("jobs")
    .unwrap();
    assert_eq!((o.masters(), o.quorum()), (5, 3));
    let debug = format!("{o:?}");
    assert!(
        !debug.contains(":one@") && !debug.contains(":two@"),
        "{debug}"
    );
}
