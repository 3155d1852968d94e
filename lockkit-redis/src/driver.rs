//! [`RedisDriver`]: single-instance Redis.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, LockDriver, LockError, LockKey, OwnerId,
    Renewal, Result, WakeUp, async_trait, renew_in_batches,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::time::{Instant, sleep_until};

use super::keys::{Names, names};
use super::options::RedisOptions;
use super::scripts::Scripts;
use super::wait::Subscriptions;

const NAME: &str = "redis";

/// Most locks renewed by one script call (bounds the script's run time, during
/// which the server serves nobody else).
const MAX_BATCH: usize = 500;

/// Longest wait for a release message before trying again anyway (a lost message,
/// a broken subscriber connection).
const POLL_FALLBACK: Duration = Duration::from_millis(500);

fn redis_error(e: redis::RedisError) -> LockError {
    if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout() {
        LockError::connection(NAME, e)
    } else {
        LockError::backend(NAME, e)
    }
}

fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX / 2)
}

/// The single-instance Redis driver. See the [crate docs](crate).
#[derive(Debug, Clone)]
pub struct RedisDriver {
    conn: ConnectionManager,
    scripts: Arc<Scripts>,
    subs: Arc<Subscriptions>,
    prefix: Arc<str>,
}

enum Attempt {
    Granted(Grant),
    Busy { pttl_ms: i64 },
}

impl RedisDriver {
    /// Connects (with automatic reconnection) and starts the release subscriber.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] if the server cannot be reached.
    pub async fn connect(options: RedisOptions) -> Result<Self> {
        let client = redis::Client::open(options.client_url.as_str()).map_err(redis_error)?;
        // Bounded: a dead server is reported within seconds, not after a long backoff;
        // later reconnects happen on use.
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500))
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(5)));
        let conn = ConnectionManager::new_with_config(client.clone(), config)
            .await
            .map_err(|e| LockError::Connection {
                driver: NAME,
                message: format!(
                    "cannot connect to Redis: {}",
                    lockkit_core::redact_url(&e.to_string())
                ),
                source: Some(Box::new(e)),
            })?;
        let subs = Subscriptions::connect(&client).await.map_err(redis_error)?;
        Ok(Self {
            conn,
            scripts: Arc::new(Scripts::new()),
            subs,
            prefix: options.prefix.into(),
        })
    }

    fn names(&self, key: &LockKey) -> Names {
        names(&self.prefix, key)
    }

    async fn attempt(&self, req: &AcquireRequest, n: &Names) -> Result<Attempt> {
        let sent = Instant::now();
        let mut conn = self.conn.clone();
        let (held, value): (i64, i64) = self
            .scripts
            .acquire
            .key(&n.lock)
            .key(&n.fence)
            .arg(req.owner.to_hex())
            .arg(ttl_ms(req.ttl))
            .invoke_async(&mut conn)
            .await
            .map_err(redis_error)?;
        if held == 1 {
            let token = FencingToken(u64::try_from(value).unwrap_or(0));
            return Ok(Attempt::Granted(Grant::new(
                req.key.clone(),
                req.owner.clone(),
                token,
                sent + req.ttl,
            )));
        }
        Ok(Attempt::Busy { pttl_ms: value })
    }
}

#[async_trait]
impl LockDriver for RedisDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline().with_wake_up(WakeUp::Notify)
    }

    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        let started = Instant::now();
        let n = self.names(&req.key);
        // First try without subscribing: the uncontended path is one round trip.
        if let Attempt::Granted(g) = self.attempt(req, &n).await? {
            return Ok(g);
        }
        req.keep_waiting(started)?;
        // Subscribe before retrying, so a release in between is not missed.
        let watch = self.subs.watch(&n.channel).await.ok();
        loop {
            let woken = watch.as_ref().map(|w| w.notify.notified());
            tokio::pin!(woken);
            if let Some(w) = woken.as_mut().as_pin_mut() {
                w.enable();
            }
            let pttl_ms = match self.attempt(req, &n).await? {
                Attempt::Granted(g) => return Ok(g),
                Attempt::Busy { pttl_ms } => pttl_ms,
            };
            let give_up = req.keep_waiting(started)?;
            // Wake at the holder's expiry at the latest (plus jitter), and never
            // later than the fallback poll.
            let jitter = Duration::from_millis(fastrand::u64(0..20));
            let expiry = Duration::from_millis(u64::try_from(pttl_ms.max(1)).unwrap_or(1));
            let retry = Instant::now() + expiry.min(POLL_FALLBACK) + jitter;
            let until = give_up.map_or(retry, |d| d.min(retry));
            tokio::select! {
                _ = async {
                    match woken.as_mut().as_pin_mut() {
                        Some(w) => w.await,
                        None => std::future::pending().await,
                    }
                } => {}
                _ = sleep_until(until) => {}
                _ = req.cancel.cancelled() => return Err(req.cancelled()),
            }
        }
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let sent = Instant::now();
        let mut conn = self.conn.clone();
        let extended: i64 = self
            .scripts
            .extend
            .key(self.names(key).lock)
            .arg(owner.to_hex())
            .arg(ttl_ms(ttl))
            .invoke_async(&mut conn)
            .await
            .map_err(redis_error)?;
        if extended == 1 {
            Ok(sent + ttl)
        } else {
            Err(LockError::lost(
                key,
                "the lock key is gone or belongs to another owner",
            ))
        }
    }

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        renew_in_batches(NAME, renewals, MAX_BATCH, |ttl, batch| async move {
            let mut invocation = self.scripts.extend_many.prepare_invoke();
            invocation.arg(ttl_ms(ttl));
            for r in &batch {
                invocation.key(self.names(&r.key).lock);
                invocation.arg(r.owner.to_hex());
            }
            let mut conn = self.conn.clone();
            let flags: Vec<i64> = invocation
                .invoke_async(&mut conn)
                .await
                .map_err(redis_error)?;
            Ok(flags.into_iter().map(|f| f == 1).collect())
        })
        .await
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let n = self.names(key);
        let mut conn = self.conn.clone();
        let released: i64 = self
            .scripts
            .release
            .key(&n.lock)
            .key(&n.channel)
            .arg(owner.to_hex())
            .invoke_async(&mut conn)
            .await
            .map_err(redis_error)?;
        Ok(released == 1)
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let n = self.names(key);
        let mut conn = self.conn.clone();
        let deleted: i64 = self
            .scripts
            .force_release
            .key(&n.lock)
            .key(&n.channel)
            .invoke_async(&mut conn)
            .await
            .map_err(redis_error)?;
        Ok(deleted == 1)
    }
}
