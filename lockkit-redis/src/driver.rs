//! [`RedisDriver`]: a single Redis server or a Redis Cluster.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, LockDriver, LockError, LockKey, OwnerId,
    Renewal, Result, WakeUp, async_trait, renew_in_batches,
};
use redis::cluster_routing::Slot;
use tokio::time::Instant;

use super::connection::Conn;
use super::contender::Contending;
use super::keys::{Names, lock_name, names, wake_prefix};
use super::options::{FenceSeed, RedisOptions, WakeMode};
use super::scripts::Scripts;
use super::tls;
use super::wait::{Subscriptions, Waiter};

const NAME: &str = "redis";

/// Most locks renewed by one script call (bounds the script's run time, during
/// which the server serves nobody else).
const MAX_BATCH: usize = 500;

/// How long a waiters entry lives without a refresh: a waiter that died is skipped
/// by releases after this.
pub(crate) const ENTRY_LIFETIME: Duration = Duration::from_secs(3);

pub(crate) fn redis_error(e: redis::RedisError) -> LockError {
    if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout() {
        LockError::connection(NAME, e)
    } else {
        LockError::backend(NAME, e)
    }
}

/// Why connecting failed, said so a person can act on it: a server that does not
/// answer in time names the option to change; a refused password or database is a
/// configuration error (not "check that the server is running").
fn connect_error(e: redis::RedisError, options: &RedisOptions) -> LockError {
    use redis::ErrorKind;
    let text = lockkit_core::redact_url(&e.to_string());
    if e.is_timeout() || text.contains("timed out") {
        return LockError::Connection {
            driver: NAME,
            message: format!(
                "cannot connect to Redis: no answer within {} (connect_timeout_ms, \
                 request_timeout_ms); is Redis listening on that port?",
                lockkit_core::human_duration(options.timeouts.connect)
            ),
            source: Some(Box::new(e)),
        };
    }
    match e.kind() {
        ErrorKind::AuthenticationFailed => {
            return LockError::Config(format!("Redis refused the credentials in the URL: {text}"));
        }
        ErrorKind::Server(_) | ErrorKind::Extension if text.contains("DB index") => {
            return LockError::Config(format!(
                "Redis refused the database in the URL's path: {text}; a server has \
                 16 databases (0 to 15) unless its `databases` setting says otherwise"
            ));
        }
        ErrorKind::Server(_) | ErrorKind::Extension => {
            return LockError::Backend {
                driver: NAME,
                message: format!("Redis refused the connection: {text}"),
                source: Some(Box::new(e)),
            };
        }
        _ => {}
    }
    let hint = if options.nodes.iter().any(|n| n.starts_with("rediss://")) {
        tls::hint(&text).to_string()
    } else {
        tls::plain_hint(&text, "rediss")
    };
    LockError::Connection {
        driver: NAME,
        message: format!("cannot connect to Redis: {text}{hint}"),
        source: Some(Box::new(e)),
    }
}

/// Errors a cluster answers while it changes shape: a slot migrating with only
/// some of a script's keys moved (TRYAGAIN), or a failover in progress.
pub(crate) fn is_transient(e: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    matches!(
        e.kind(),
        ErrorKind::Server(
            ServerErrorKind::TryAgain | ServerErrorKind::ClusterDown | ServerErrorKind::MasterDown
        )
    )
}

pub(crate) fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX / 2)
}

/// The Redis driver for a single server or a Redis Cluster. See the
/// [crate docs](crate).
#[derive(Debug, Clone)]
pub struct RedisDriver {
    conn: Conn,
    scripts: Arc<Scripts>,
    /// `None` in [`WakeMode::Poll`].
    pub(crate) subs: Option<Arc<Subscriptions>>,
    prefix: Arc<str>,
    wake_prefix: Arc<str>,
    fence_seed: FenceSeed,
}

pub(crate) enum Outcome {
    Granted(Grant),
    Busy { pttl_ms: i64 },
}

impl RedisDriver {
    /// Connects (with automatic reconnection; to the cluster if the URL names one
    /// or the server is a cluster node) and subscribes to this driver's wake
    /// channel.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] if the server cannot be reached.
    pub async fn connect(options: RedisOptions) -> Result<Self> {
        let conn = Conn::connect(&options)
            .await
            .map_err(|e| connect_error(e, &options))?;
        let scripts = Arc::new(Scripts::new());
        let mut loading = conn.clone();
        scripts.load_all(&mut loading).await.map_err(redis_error)?;
        let wake_prefix = wake_prefix(&options.prefix);
        let subs = match options.wake {
            WakeMode::Poll => None,
            WakeMode::Notify => {
                let clients = options
                    .nodes
                    .iter()
                    .map(|n| tls::client(n, options.tls.as_ref()))
                    .collect::<redis::RedisResult<Vec<_>>>()
                    .map_err(redis_error)?;
                Some(
                    Subscriptions::connect(clients, &wake_prefix)
                        .await
                        .map_err(redis_error)?,
                )
            }
        };
        Ok(Self {
            conn,
            scripts,
            subs,
            fence_seed: options.fence_seed,
            prefix: options.prefix.into(),
            wake_prefix: wake_prefix.into(),
        })
    }

    /// Whether this driver talks to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.conn.is_cluster()
    }

    pub(crate) fn names(&self, key: &LockKey) -> Names {
        names(&self.prefix, key)
    }

    pub(crate) async fn attempt(
        &self,
        req: &AcquireRequest,
        n: &Names,
        waiter: Option<&Waiter>,
    ) -> redis::RedisResult<Outcome> {
        let sent = Instant::now();
        let mut conn = self.conn.clone();
        let (held, value): (i64, i64) = self
            .scripts
            .acquire
            .key(&n.lock)
            .key(&n.fence)
            .key(&n.waiters)
            .arg(req.owner.to_hex())
            .arg(ttl_ms(req.ttl))
            .arg(waiter.map_or("", |w| w.entry.as_str()))
            .arg(ttl_ms(ENTRY_LIFETIME))
            .arg(self.fence_seed.script_arg())
            .invoke_async(&mut conn)
            .await?;
        if held == 1 {
            let token = FencingToken(u64::try_from(value).unwrap_or(0));
            return Ok(Outcome::Granted(Grant::of(req, token, sent + req.ttl)));
        }
        Ok(Outcome::Busy { pttl_ms: value })
    }

    /// A waiter gives up: drops its entry and passes on a wake-up it may have
    /// taken. Best effort: an entry left behind expires after [`ENTRY_LIFETIME`].
    pub(crate) async fn leave(&self, n: &Names, waiter: Option<&Waiter>) {
        let Some(waiter) = waiter else { return };
        let mut conn = self.conn.clone();
        let left: redis::RedisResult<i64> = self
            .scripts
            .leave
            .key(&n.lock)
            .key(&n.waiters)
            .arg(&waiter.entry)
            .arg(&*self.wake_prefix)
            .invoke_async(&mut conn)
            .await;
        if let Err(e) = left {
            tracing::debug!(error = %e, "could not remove a waiters entry; it will expire");
        }
    }

    /// Renews holds that all live in one hash slot, with one script call.
    async fn renew_slot(&self, ttl: Duration, batch: &[Renewal]) -> Result<Vec<bool>> {
        let mut invocation = self.scripts.extend_many.prepare_invoke();
        invocation.arg(ttl_ms(ttl));
        for r in batch {
            invocation.key(lock_name(&self.prefix, &r.key));
            invocation.arg(r.owner.to_hex());
        }
        let mut conn = self.conn.clone();
        let flags: Vec<i64> = invocation
            .invoke_async(&mut conn)
            .await
            .map_err(redis_error)?;
        Ok(flags.into_iter().map(|f| f == 1).collect())
    }
}

#[async_trait]
impl LockDriver for RedisDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline().with_wake_up(if self.subs.is_some() {
            WakeUp::Notify
        } else {
            WakeUp::Poll
        })
    }

    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        req.require_mode(NAME, self.capabilities())?;
        Contending::new(self, req).wait().await
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let sent = Instant::now();
        let mut conn = self.conn.clone();
        let extended: i64 = self
            .scripts
            .extend
            .key(lock_name(&self.prefix, key))
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
            if !self.conn.is_cluster() {
                return self.renew_slot(ttl, &batch).await;
            }
            // A script may only touch one slot: one call per slot, all sent at
            // once, so each node's connection carries them as one pipeline.
            let mut by_slot: HashMap<Slot, Vec<usize>> = HashMap::new();
            for (i, r) in batch.iter().enumerate() {
                by_slot
                    .entry(Slot::for_key(lock_name(&self.prefix, &r.key)))
                    .or_default()
                    .push(i);
            }
            let groups: Vec<Vec<usize>> = by_slot.into_values().collect();
            let answers = join_all(groups.iter().map(|idx| {
                let part: Vec<Renewal> = idx.iter().map(|&i| batch[i].clone()).collect();
                async move { self.renew_slot(ttl, &part).await }
            }))
            .await;
            let mut renewed = vec![false; batch.len()];
            for (idx, answer) in groups.iter().zip(answers) {
                for (&i, ok) in idx.iter().zip(answer?) {
                    renewed[i] = ok;
                }
            }
            Ok(renewed)
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
            .key(&n.waiters)
            .arg(owner.to_hex())
            .arg(&*self.wake_prefix)
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
            .key(&n.waiters)
            .arg(&*self.wake_prefix)
            .invoke_async(&mut conn)
            .await
            .map_err(redis_error)?;
        Ok(deleted == 1)
    }

    async fn purge(&self, key: &LockKey) -> Result<()> {
        let n = self.names(key);
        let mut conn = self.conn.clone();
        // One slot: the three share the key's hash tag.
        redis::cmd("DEL")
            .arg(&n.lock)
            .arg(&n.fence)
            .arg(&n.waiters)
            .exec_async(&mut conn)
            .await
            .map_err(redis_error)
    }
}
