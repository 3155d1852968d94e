//! Batched renewals: one statement per distinct TTL, results mapped back to each
//! renewal.

use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;

use lockkit_core::{LockError, LockKey, Renewal, Result};
use tokio::time::Instant;

/// Largest batch in one statement (keeps bind counts well under every database's
/// limit).
const CHUNK: usize = 400;

/// The error for a hold that is no longer ours.
pub(crate) fn not_ours(key: &LockKey) -> LockError {
    LockError::lost(key, "the row is no longer ours, or its lease ran out")
}

/// Renews `renewals` with `renew(ttl, batch)`, which sends one statement for the
/// batch of `(name, owner hex)` pairs and returns the pairs it renewed. Everything not returned is
/// `Lost`; a failed statement fails its whole batch with a retryable error.
pub(crate) async fn by_ttl<F, Fut>(
    driver: &'static str,
    renewals: &[Renewal],
    mut renew: F,
) -> Vec<Result<Instant>>
where
    F: FnMut(Duration, Vec<(String, String)>) -> Fut,
    Fut: Future<Output = std::result::Result<HashSet<(String, String)>, sqlx::Error>>,
{
    let mut results: Vec<Option<Result<Instant>>> = renewals.iter().map(|_| None).collect();
    let mut ttls: Vec<Duration> = renewals.iter().map(|r| r.ttl).collect();
    ttls.sort();
    ttls.dedup();
    for ttl in ttls {
        let idx: Vec<usize> = (0..renewals.len())
            .filter(|&i| renewals[i].ttl == ttl)
            .collect();
        for chunk in idx.chunks(CHUNK) {
            let sent = Instant::now();
            let batch = chunk
                .iter()
                .map(|&i| {
                    (
                        renewals[i].key.as_str().to_string(),
                        renewals[i].owner.to_hex(),
                    )
                })
                .collect();
            match renew(ttl, batch).await {
                Ok(renewed) => {
                    for &i in chunk {
                        let r = &renewals[i];
                        let pair = (r.key.as_str().to_string(), r.owner.to_hex());
                        results[i] = Some(if renewed.contains(&pair) {
                            Ok(sent + ttl)
                        } else {
                            Err(not_ours(&r.key))
                        });
                    }
                }
                Err(e) => {
                    let message = e.to_string();
                    for &i in chunk {
                        results[i] = Some(Err(LockError::Backend {
                            driver,
                            message: message.clone(),
                            source: None,
                        }));
                    }
                }
            }
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(LockError::Config("BUG: renewal not attempted".into()))))
        .collect()
}
