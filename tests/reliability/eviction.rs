//! The row behind lockkit's refusal of Redis eviction policies: a Redis that is
//! also a cache (`maxmemory` with `allkeys-lru`), connected with `eviction=accept`,
//! filled by an application's cache writes while the workers lock and write.

use lockkit_testkit::RedisSettings;

use super::*;

/// The cache's memory limit: a few dozen of its values.
const MAXMEMORY: &str = "4mb";
/// One cache value.
const VALUE: usize = 64 * 1024;
/// The longest the cache writes: the row stops at the first breakage, or here.
const FILLING: Duration = Duration::from_secs(4);

/// While the cache writes, Redis evicts the least recently used keys, sampled,
/// with a 1 s clock, so lockkit's keys are as likely as any cache value written
/// in the same second: the fencing counter (the next grant's token starts again
/// from 1, below the tokens the resource has seen: a token regression, and the
/// resource refuses the holders until tokens climb back) or a held lock (another
/// worker is granted it: an exclusion violation). The row records what this
/// bounded run saw, breakage or none; the test asserts only that keys were
/// evicted, and says in its output what broke.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_used_as_a_cache_with_eviction_accepted() {
    let cache = RedisSettings::default()
        .maxmemory(MAXMEMORY)
        .maxmemory_policy("allkeys-lru");
    let server = Redis::start_with_settings(&cache).await.unwrap();
    let url = format!("{}?eviction=accept", server.url());
    let trial = Trial::new(
        "redis (allkeys-lru, eviction=accept)",
        "filled to maxmemory by a cache",
    );
    let running = trial.start_workers(&url).await;
    let started = Instant::now();
    let mut round = 0;
    while started.elapsed() < FILLING && trial.recorder.inspect(|h| history::check(h).is_safe()) {
        let prefix = format!("cache:{round}");
        server.write_values(&prefix, 16, VALUE).await.unwrap();
        round += 1;
    }
    let healed = Instant::now();
    let evicted = evicted_keys(&server).await;
    let v = trial
        .finish(running, started, healed, Promise::Documented(DANGER))
        .await;
    eprintln!(
        "evicted {evicted} keys in {:?}: {} token regressions, {} exclusion violations, \
         {} stale writes accepted, {} holders' writes refused",
        healed - started,
        v.token_regressions.len(),
        v.overlaps.len(),
        v.stale_accepted,
        v.current_rejected,
    );
    assert!(
        evicted > 0,
        "the cache evicted nothing: the row shows no fault"
    );
}

/// What lockkit says of such a server (it refuses it unless the URL accepts it).
const DANGER: &str = "a Redis with `maxmemory` and `allkeys-lru` (a cache) evicts \
     lockkit's keys when full: a fencing counter (tokens start again: token \
     regressions) or a held lock (two holders); lockkit refuses any \
     `maxmemory-policy` but `noeviction` unless the URL says `eviction=accept`, as \
     this row's does";

/// `evicted_keys` in the server's `INFO stats`.
async fn evicted_keys(server: &Redis) -> u64 {
    let stats = server.ask("INFO stats").await.unwrap();
    stats
        .iter()
        .find_map(|l| l.strip_prefix("evicted_keys:")?.parse().ok())
        .unwrap()
}
