//! Batched renewals, for drivers that can renew many holds in one request.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::driver::Renewal;
use crate::error::{LockError, Result};

/// Renews `renewals` in as few requests as possible: one per distinct TTL, at most
/// `max_batch` holds each. `renew(ttl, batch)` sends one request and answers, per
/// hold of the batch in order, whether it was still ours and is now renewed.
///
/// A hold answered `false` gets [`LockError::Lost`]; a failed request fails its
/// whole batch with a retryable [`LockError::Backend`], so the watchdog retries.
/// Deadlines are measured from before each request.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use lockkit_core::driver::Renewal;
/// use lockkit_core::renew_in_batches;
/// use lockkit::{LockKey, OwnerId};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let renewals = vec![
///     Renewal::new(LockKey::new("a").unwrap(), OwnerId::new(), Duration::from_secs(3)),
///     Renewal::new(LockKey::new("b").unwrap(), OwnerId::new(), Duration::from_secs(3)),
/// ];
/// // A backend that still has "a" but lost "b".
/// let results = renew_in_batches("demo", &renewals, 100, |_ttl, batch| async move {
///     Ok(batch.iter().map(|r| r.key.as_str() == "a").collect())
/// })
/// .await;
/// assert!(results[0].is_ok());
/// assert!(results[1].as_ref().is_err_and(|e| e.is_lost()));
/// # }
/// ```
pub async fn renew_in_batches<F, Fut>(
    driver: &'static str,
    renewals: &[Renewal],
    max_batch: usize,
    mut renew: F,
) -> Vec<Result<Instant>>
where
    F: FnMut(Duration, Vec<Renewal>) -> Fut,
    Fut: Future<Output = Result<Vec<bool>>>,
{
    let mut results: Vec<Option<Result<Instant>>> = renewals.iter().map(|_| None).collect();
    let mut ttls: Vec<Duration> = renewals.iter().map(|r| r.ttl).collect();
    ttls.sort();
    ttls.dedup();
    for ttl in ttls {
        let idx: Vec<usize> = (0..renewals.len())
            .filter(|&i| renewals[i].ttl == ttl)
            .collect();
        for chunk in idx.chunks(max_batch.max(1)) {
            let sent = Instant::now();
            let batch = chunk.iter().map(|&i| renewals[i].clone()).collect();
            match renew(ttl, batch).await {
                Ok(renewed) => {
                    for (j, &i) in chunk.iter().enumerate() {
                        results[i] = Some(if renewed.get(j) == Some(&true) {
                            Ok(sent + ttl)
                        } else {
                            Err(LockError::lost(
                                &renewals[i].key,
                                "the backend no longer has it for this owner",
                            ))
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
