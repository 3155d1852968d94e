//! One master: its connection, its wake-up subscription, its requests, and the
//! script calls.
//!
//! The script calls are small free functions so that a change to a script's keys or
//! arguments is a change in one place. Each builds its [`Call`] once; a round
//! sends it to every master it is the same for.

use std::future::Future;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use lockkit_core::driver::WakeUpHealth;
use lockkit_core::url::redact_urls_in;
use lockkit_core::{LockError, Result};
use redis::RedisResult;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::call::Call;
use crate::eviction::{self, Checked, Eviction};
use crate::keys::Names;
use crate::options::FenceSeed;
use crate::scripts::Scripts;
use crate::wait::{Subscriptions, Waiter};

/// Longest pause between attempts to subscribe to a master that is down.
const SUBSCRIBE_BACKOFF_MAX: Duration = Duration::from_secs(5);

/// How long loading the scripts in the background may wait for a master.
const BACKGROUND_PRIME_LIMIT: Duration = Duration::from_secs(5);

/// One Redlock master.
pub(crate) struct Master {
    /// The master's URL without its password, for messages.
    pub(crate) shown: String,
    conn: ConnectionManager,
    client: redis::Client,
    /// Whether its eviction policy was found safe (see [`call`](Self::call)).
    checked: Checked,
    /// `Redlock master <shown>`, as a refusal names it.
    server: String,
    /// This driver's wake channel on this master, once subscribed.
    wake: Arc<OnceLock<Arc<Subscriptions>>>,
}

impl std::fmt::Debug for Master {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// What one master said to one request.
#[derive(Debug)]
pub(crate) enum Reply<T> {
    /// Not collected: the round ended before it arrived.
    Pending,
    /// The script ran and returned this.
    Answered(T),
    /// An error or no answer in time (with a message naming the master).
    Failed(String),
}

impl Master {
    /// Primes this master in the background (see [`prime`]), for one that did not
    /// answer before start-up had a quorum.
    pub(crate) fn prime_in_background(&self, scripts: Arc<Scripts>) {
        let conn = self.conn.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(BACKGROUND_PRIME_LIMIT, prime(scripts, conn)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(error = %e, "Redlock master: scripts not loaded yet"),
                Err(_) => tracing::debug!("Redlock master: scripts not loaded yet (no answer)"),
            }
        });
    }

    /// A lazily connected master: nothing is sent until the first request, so a dead
    /// master does not fail the driver's start-up.
    pub(crate) fn new(
        url: &str,
        shown: String,
        connect_timeout: Duration,
        tls: Option<&crate::tls::Certs>,
        eviction: Eviction,
    ) -> Result<Self> {
        let client = crate::tls::client(url, tls).map_err(|e| LockError::InvalidUrl {
            url: shown.clone(),
            reason: redact_urls_in(&e.to_string()),
        })?;
        // Bounded and quick: a dead master must fail its request fast (one connect,
        // one retry a few ms later) and is tried again on the next request; the
        // quorum absorbs a master that is down.
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(5))
            .set_max_delay(Duration::from_millis(20))
            .set_connection_timeout(Some(connect_timeout))
            // Every request is bounded by its round's deadline (`gather`), or by
            // `timed`: a second timer per request would only cost a wake-up.
            .set_response_timeout(None);
        let conn =
            ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(|e| {
                LockError::Connection {
                    driver: super::NAME,
                    message: format!(
                        "cannot set up master {shown}: {}",
                        redact_urls_in(&e.to_string())
                    ),
                    source: Some(Box::new(e)),
                }
            })?;
        Ok(Self {
            server: format!("Redlock master {shown}"),
            shown,
            conn,
            client,
            checked: Checked::new(eviction),
            wake: Arc::default(),
        })
    }

    /// Subscribes to this driver's wake channel on this master, waiting at most
    /// `limit`; returns whether it did. A master that answered start-up is
    /// subscribed before `connect` returns, so the driver's first requests do not
    /// share the machine with its subscriptions' connections (over TLS, a
    /// handshake each).
    pub(crate) async fn subscribe(&self, wake_prefix: &str, limit: Duration) -> bool {
        let attempt = Subscriptions::connect(
            vec![self.client.clone()],
            wake_prefix,
            wake_health(&self.shown),
        );
        match tokio::time::timeout(limit, attempt).await {
            Ok(Ok(subs)) => {
                let _ = self.wake.set(subs);
                true
            }
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "Redlock master: no wake-ups yet");
                false
            }
            Err(_) => false,
        }
    }

    /// Subscribes to this driver's wake channel on this master, in the background
    /// (a master that is down must not hold up the driver), retrying with backoff
    /// until it succeeds or the driver is gone. Until then, waiters poll it.
    pub(crate) fn subscribe_in_background(&self, wake_prefix: String) {
        let (client, wake): (_, Weak<_>) = (self.client.clone(), Arc::downgrade(&self.wake));
        let shown = self.shown.clone();
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(50);
            loop {
                if wake.strong_count() == 0 {
                    return;
                }
                let health = wake_health(&shown);
                match Subscriptions::connect(vec![client.clone()], &wake_prefix, health).await {
                    Ok(subs) => {
                        if let Some(wake) = wake.upgrade() {
                            let _ = wake.set(subs);
                        }
                        return;
                    }
                    Err(e) => tracing::debug!(error = %e, "Redlock master: no wake-ups yet"),
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(SUBSCRIBE_BACKOFF_MAX);
            }
        });
    }

    /// Registers a waiter on this master's wake channel, if it is subscribed.
    pub(crate) fn waiter(&self) -> Option<Waiter> {
        self.wake.get().map(|subs| subs.waiter())
    }

    /// The refusal of this master's eviction policy, if its last check refused it.
    pub(crate) fn refused(&self) -> Option<String> {
        self.checked.refused()
    }

    /// Whether releases on this master can wake our waiters right now.
    pub(crate) fn wakes(&self) -> bool {
        self.wake.get().is_some_and(|subs| subs.is_live())
    }

    /// Runs `call` on this master's connection, with no time limit of its own
    /// (every caller bounds it: [`gather`](super::fan_out::gather) bounds a
    /// round, [`timed`](Self::timed) a lone request). First, if it is due, the
    /// master's eviction policy is checked: a master whose policy is refused fails
    /// every request with the refusal, and so counts as failed for the quorum (see
    /// [`RedlockOptions::eviction`](super::RedlockOptions::eviction)).
    pub(crate) async fn call<T, F, Fut>(&self, call: F) -> Reply<T>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let checked_call = async {
            let mut conn = self.conn.clone();
            self.checked
                .ensure(eviction::check_server(&mut conn, &self.server))
                .await?;
            call(conn)
                .await
                .inspect_err(|e| self.checked.after_error(e))
        };
        match checked_call.await {
            Ok(v) => Reply::Answered(v),
            Err(e) => match eviction::refusal(&e) {
                Some(why) => Reply::Failed(why),
                None => Reply::Failed(format!(
                    "{}: {}",
                    self.shown,
                    redact_urls_in(&e.to_string())
                )),
            },
        }
    }

    /// [`call`](Self::call), giving up after `limit`.
    pub(crate) async fn timed<T, F, Fut>(&self, limit: Duration, call: F) -> Reply<T>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        tokio::time::timeout(limit, self.call(call))
            .await
            .unwrap_or_else(|_| Reply::Failed(self.no_answer(limit)))
    }

    /// The failure of a request this master did not answer within `limit`.
    pub(crate) fn no_answer(&self, limit: Duration) -> String {
        format!("{}: no answer within {limit:?}", self.shown)
    }
}

/// How a master's wake-up connection reports its losses and returns, naming the
/// master.
fn wake_health(shown: &str) -> WakeUpHealth {
    WakeUpHealth::new(super::NAME, format!("pub/sub connection to master {shown}"))
}

/// Loads every script into the master's script cache: this connects, checks that
/// it answers, and spares the first acquire the NOSCRIPT round trips (which, on a
/// short lease's per-request timeout, could fail it).
pub(crate) async fn prime(scripts: Arc<Scripts>, mut conn: ConnectionManager) -> RedisResult<()> {
    scripts.load_all(&mut conn).await
}

/// A waiter's entry in a lock's `waiters` and `queue` sets on one master, how long
/// it lives without a refresh, and its place in the queue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry<'a> {
    pub(crate) id: &'a str,
    pub(crate) lifetime_ms: u64,
    /// The waiter's rank, the same on every master (`wake_next.lua`).
    pub(crate) rank: u64,
    /// An earlier attempt was refused: the entry may be in the set already.
    pub(crate) queued: bool,
}

/// `acquire.lua`: `(1, token)` if now held by `owner`, `(0, pttl)` if by another;
/// a refused waiter with an `entry` joins (or refreshes) the lock's waiters set.
pub(crate) fn acquire<'s>(
    s: &'s Scripts,
    n: &Names,
    owner: &str,
    ttl_ms: u64,
    seed: FenceSeed,
    entry: Option<Entry<'_>>,
) -> Call<'s> {
    let mut call = Call::on_keys(&s.acquire, &[n.lock(), n.fence(), n.waiters(), n.queue()]);
    call.arg(owner)
        .arg(ttl_ms)
        .arg(entry.map_or("", |e| e.id))
        .arg(entry.map_or(0, |e| e.lifetime_ms))
        .arg(seed.script_arg())
        .arg(if entry.is_some_and(|e| e.queued) {
            "1"
        } else {
            ""
        })
        .arg(entry.map_or(0, |e| e.rank));
    call
}

/// `leave.lua`: removes a waiter's entry, passing on a wake-up if the lock is
/// free; answers an integer.
pub(crate) fn leave<'s>(s: &'s Scripts, n: &Names, entry: &str, wake_prefix: &str) -> Call<'s> {
    let mut call = Call::on_keys(&s.leave, &[n.lock(), n.waiters(), n.queue()]);
    call.arg(entry).arg(wake_prefix);
    call
}

/// `raise_fence.lua`: 1 if the lock is `owner`'s and now carries `token`.
pub(crate) fn raise_fence<'s>(s: &'s Scripts, n: &Names, owner: &str, token: u64) -> Call<'s> {
    let mut call = Call::on_keys(&s.raise_fence, &[n.lock(), n.fence()]);
    call.arg(owner).arg(token);
    call
}

/// `extend.lua`: 1 if `owner`'s hold was extended.
pub(crate) fn extend<'s>(s: &'s Scripts, n: &Names, owner: &str, ttl_ms: u64) -> Call<'s> {
    let mut call = Call::on_keys(&s.extend, &[n.lock()]);
    call.arg(owner).arg(ttl_ms);
    call
}

/// `extend_many.lua`: one 1/0 per `(lock key, owner)`.
pub(crate) fn extend_many<'s>(s: &'s Scripts, holds: &[(String, String)], ttl_ms: u64) -> Call<'s> {
    let locks: Vec<&str> = holds.iter().map(|(lock, _)| lock.as_str()).collect();
    let mut call = Call::on_keys(&s.extend_many, &locks);
    call.arg(ttl_ms);
    for (_, owner) in holds {
        call.arg(owner);
    }
    call
}

/// `release.lua`: 1 if `owner`'s hold was deleted (then one waiter is woken).
pub(crate) fn release<'s>(s: &'s Scripts, n: &Names, owner: &str, wake_prefix: &str) -> Call<'s> {
    let mut call = Call::on_keys(&s.release, &[n.lock(), n.waiters(), n.queue()]);
    call.arg(owner).arg(wake_prefix);
    call
}

/// `force_release.lua`: 1 if there was a holder (then one waiter is woken).
pub(crate) fn force_release<'s>(s: &'s Scripts, n: &Names, wake_prefix: &str) -> Call<'s> {
    let mut call = Call::on_keys(&s.force_release, &[n.lock(), n.waiters(), n.queue()]);
    call.arg(wake_prefix);
    call
}

/// Deletes the lock, its counter and its waiters on this master (`purge`).
pub(crate) async fn purge(mut conn: ConnectionManager, n: &Names) -> RedisResult<i64> {
    redis::cmd("DEL")
        .arg(n.lock())
        .arg(n.fence())
        .arg(n.waiters())
        .arg(n.queue())
        .query_async(&mut conn)
        .await
}
