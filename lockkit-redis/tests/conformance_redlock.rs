//! The conformance suite against Redlock over 5 real Redis masters from the testkit:
//! all healthy, all healthy over TLS (`redlocks://`, every master TLS-only), and with
//! 2 of the 5 killed in the middle of every case.

// Test code, built without libtest's harness, so clippy.toml's allowances for
// tests do not reach it: a backend that cannot start fails the test.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockkit_conformance::url_backend;
use lockkit_conformance::{UrlBackend, UrlHarness};
use lockkit_core::{Capabilities, LockDriver, LockError, WakeUp};
use lockkit_redis::{RedlockDriver, RedlockOptions};
use lockkit_testkit::RedisMasters;
use tokio::task::JoinHandle;
use tokio::time::Instant;

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    Ok(Arc::new(
        RedlockDriver::connect(RedlockOptions::from_url(url)?).await?,
    ))
}

url_backend!(
    /// Five healthy masters.
    Five: RedisMasters = RedisMasters::start(5), |s| s.url(), connect
);

url_backend!(
    /// Five masters that accept TLS connections only, one CA for all.
    FiveTls: RedisMasters = RedisMasters::start_tls(5, false),
    |s| {
        let url = s.url();
        assert!(url.starts_with("redlocks://"), "{url}");
        url
    },
    connect
);

/// Five masters, two of which are killed (SIGKILL) while the case runs.
///
/// When to kill: a timer alone would often fire before the case starts (and so
/// test only "2 of 5 dead at start") or after a short case has ended. Instead a
/// watcher polls master #0 every 5 ms and kills masters #0 and #1 as soon as it has
/// any key — i.e. right after the case's first acquire landed, while that case is
/// running and usually while a lock is held on the masters about to die. So every
/// case starts with 5 masters (the harness's admin driver and the case's drivers
/// connect to all 5) and finishes on 3, with holds, renewals and releases crossing
/// the kill. A case that never reaches the masters (invalid input) gets the kill
/// after 1.5 s at the latest. The child process of the killed-holder case connects
/// with the same URL after the kill and must still lock (start-up needs only a
/// quorum).
struct TwoOfFiveKilled;

/// The masters plus the watcher that kills two of them.
struct KilledMidRun {
    _masters: Arc<Mutex<RedisMasters>>,
    watcher: JoinHandle<()>,
}

impl Drop for KilledMidRun {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

async fn first_key_or_deadline(port: u16, deadline: Instant) {
    let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}")) else {
        return;
    };
    let Ok(mut conn) = client.get_multiplexed_async_connection().await else {
        return;
    };
    while Instant::now() < deadline {
        let size: redis::RedisResult<i64> = redis::cmd("DBSIZE").query_async(&mut conn).await;
        if !matches!(size, Ok(0)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[lockkit_core::async_trait]
impl UrlBackend for TwoOfFiveKilled {
    type Server = KilledMidRun;
    async fn start() -> (KilledMidRun, String) {
        let masters = RedisMasters::start(5).await.unwrap();
        let url = masters.url();
        let watched = masters.nodes[0].port();
        let masters = Arc::new(Mutex::new(masters));
        let victims = masters.clone();
        let watcher = tokio::spawn(async move {
            first_key_or_deadline(watched, Instant::now() + Duration::from_millis(1500)).await;
            let _ = tokio::task::spawn_blocking(move || {
                let mut m = victims.lock().unwrap();
                m.nodes[0].kill();
                m.nodes[1].kill();
            })
            .await;
        });
        (
            KilledMidRun {
                _masters: masters,
                watcher,
            },
            url,
        )
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

/// The mutex alone: a majority of independent servers cannot queue waiters,
/// share a read hold, or count permits.
const REDLOCK: Capabilities = Capabilities::baseline().with_wake_up(WakeUp::Notify);

lockkit_conformance::main! {
    redlock: UrlHarness<Five>, claims REDLOCK;
    redlock_tls: UrlHarness<FiveTls>, claims REDLOCK;
    redlock_two_of_five_killed: UrlHarness<TwoOfFiveKilled>, claims REDLOCK;
}
