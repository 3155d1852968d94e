//! The keys `bench` and `compare` write on a live backend, and removing them
//! afterwards: lockkit's own keys with [`lockkit::LockDriver::purge`], fencing
//! counters included, so that measuring a backend again and again leaves nothing.
//! (`check` purges the keys of each conformance case itself.)

/// Where `bench` and `compare` lock: every key they use starts with this.
pub(crate) const PREFIX: &str = "lockkit-bench";

/// The key `name` under [`PREFIX`].
pub(crate) fn key(name: &str) -> String {
    format!("{PREFIX}/{name}")
}

/// Purges `keys` from the backend at `url`. Best effort: a backend that is down,
/// or a driver that cannot purge, keeps them (and says so in the debug log).
pub(crate) async fn purge(url: &str, keys: impl IntoIterator<Item = String>) {
    let driver = match lockkit::driver::connect(url).await {
        Ok(driver) => driver,
        Err(error) => {
            tracing::debug!(%error, "cannot connect to remove the benchmark's keys");
            return;
        }
    };
    for key in keys {
        let Ok(key) = lockkit::LockKey::new(key) else {
            continue;
        };
        // A busy backend (SQLite's write lock, under load) may refuse a try:
        // three, 100 ms apart.
        for attempt in 1..=3 {
            match driver.purge(&key).await {
                Ok(_) => break,
                Err(lockkit::LockError::Unsupported { .. }) => return,
                Err(error) => {
                    tracing::debug!(%key, %error, attempt, "cannot remove a benchmark key");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
    }
}
