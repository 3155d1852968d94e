//! The one server setting lockkit's keys need: `maxmemory-policy noeviction`
//! (invariant R4).
//!
//! Any other policy lets a Redis that reaches `maxmemory` evict keys: under
//! `allkeys-*`, a fencing counter (it has no TTL), after which the key's tokens
//! start again and repeat; under `volatile-*` (and `allkeys-*`), a held lock
//! before its lease ends, after which two clients hold it. So the policy of every
//! server lockkit writes to is read (`CONFIG GET maxmemory-policy`, or `INFO
//! memory` where `CONFIG` is renamed or denied) when it connects, again after
//! any error that may mean the client reconnected, and at least every
//! [`RECHECK`] while it is in use (the cluster client, and a RESP3 connection,
//! reconnect without telling); and a policy other than `noeviction`, or one that
//! cannot be read, is refused with [`LockError::Config`] unless the URL says
//! `eviction=accept`.

use std::future::Future;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use lockkit_core::LockError;
use lockkit_core::sync::lock;
use lockkit_core::url::{Query, redact_urls_in};
use redis::aio::ConnectionLike;
#[cfg(feature = "cluster")]
use redis::cluster_async::ClusterConnection;
#[cfg(feature = "cluster")]
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::{Cmd, ErrorKind, RedisError, RedisResult, Value};
use tokio::time::Instant;

use crate::error::is_transient;

/// What the driver does with a server whose eviction policy can evict its keys
/// (any `maxmemory-policy` but `noeviction`), or whose policy it cannot read.
///
/// The check of invariant R4 reads the policy (`CONFIG GET maxmemory-policy`, or
/// `INFO memory` where `CONFIG` is renamed or denied, as on managed services) of
/// every server it writes to: the server, every Cluster master, the Sentinel
/// master and every master a failover moves it to, every Redlock master. It reads it
/// when it connects (the application-client constructors too), again before the
/// next request after any error after which the client may reconnect, and at
/// least every 10 s while in use (the cluster client reconnects to a node
/// without reporting it). Any policy but `noeviction`, or one it cannot read, is
/// refused with a [`LockError::Config`](lockkit_core::LockError::Config) naming
/// the setting, what it can evict and the fix: `CONFIG SET maxmemory-policy
/// noeviction` (and in the config file), or a Redis of its own for the locks.
/// After connect, the refusal fails the requests instead (on a Cluster, while a
/// master cannot be asked during a failover, requests go ahead and the check
/// waits for it); a Redlock master refused after connect counts as failed for
/// the quorum (see [`RedlockOptions::eviction`](crate::RedlockOptions::eviction)).
///
/// `?eviction=accept` ([`Eviction::Accept`]) connects without reading the
/// policy. **It is unsafe** on a server that may evict: RELIABILITY.md's
/// *allkeys-lru, eviction=accept* row shows a cache filling such a Redis, its
/// fencing counter evicted and tokens starting again from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Eviction {
    /// Refuse it: connecting, or the next request after a reconnect to it, fails
    /// with [`LockError::Config`] naming the policy, what it can evict and the fix
    /// (`?eviction=refuse`, the default).
    #[default]
    Refuse,
    /// **Unsafe.** Use it anyway, without reading the policy (`?eviction=accept`).
    /// When Redis reaches `maxmemory` it may evict a fencing counter (the key's
    /// tokens start again: the resource refuses the new holders, or takes stale
    /// writes) or a held lock (two clients hold it). Only for a server known to
    /// stay below `maxmemory`, or one that lockkit cannot ask but that is known to
    /// run `noeviction`.
    Accept,
}

/// `eviction=refuse|accept` (default `refuse`).
pub(crate) fn take_eviction(query: &mut Query) -> Result<Eviction, LockError> {
    Ok(query
        .take_choice(
            "eviction",
            &[("refuse", Eviction::Refuse), ("accept", Eviction::Accept)],
        )?
        .unwrap_or_default())
}

/// How long a passed check holds while nothing suggests a reconnect.
pub(crate) const RECHECK: Duration = Duration::from_secs(10);

/// The code of the error a refusal travels in through the redis crate, until
/// [`refusal`] turns it into a [`LockError::Config`].
const REFUSED: &str = "LOCKKIT_EVICTION";

/// The refusal's message, if `e` is one.
pub(crate) fn refusal(e: &RedisError) -> Option<String> {
    (e.code() == Some(REFUSED)).then(|| e.detail().unwrap_or_default().to_owned())
}

/// An error that [`refusal`] turns into a [`LockError::Config`] with `message`
/// (also for refusals other than the eviction policy's).
pub(crate) fn refuse(message: String) -> RedisError {
    redis::make_extension_error(REFUSED.to_owned(), Some(message))
}

/// Whether the policy behind one connection was found safe since it last may
/// have reconnected, and less than [`RECHECK`] ago.
#[derive(Debug)]
pub(crate) struct Checked {
    eviction: Eviction,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Bumped by every error after which the client may reconnect.
    epoch: u64,
    /// The epoch and time of the last check that passed.
    passed: Option<(u64, Instant)>,
    /// The last check's refusal.
    refused: Option<String>,
}

impl Checked {
    pub(crate) fn new(eviction: Eviction) -> Self {
        Self {
            eviction,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Runs `check` unless `eviction=accept`, or a check passed recently on this
    /// connection. `check` says whether it could read every server (a cluster
    /// master that does not answer is checked at the next request instead).
    ///
    /// # Errors
    ///
    /// The refusal, or the error that kept `check` from reading the policy.
    pub(crate) async fn ensure(
        &self,
        check: impl Future<Output = RedisResult<bool>>,
    ) -> RedisResult<()> {
        let epoch = {
            let s = self.state();
            let fresh = |&(e, at): &(u64, Instant)| e == s.epoch && at.elapsed() < RECHECK;
            if self.eviction == Eviction::Accept || s.passed.as_ref().is_some_and(fresh) {
                return Ok(());
            }
            s.epoch
        };
        let started = Instant::now();
        let result = check.await;
        let mut s = self.state();
        match &result {
            Ok(true) => {
                s.passed = Some((epoch, started));
                s.refused = None;
            }
            Ok(false) => {}
            Err(e) => {
                let refused = refusal(e);
                // At connect the refusal is the connect's error; later, the
                // requests it fails say only that much, so it is logged once.
                if let Some(why) = &refused
                    && s.refused.is_none()
                    && s.passed.is_some()
                {
                    tracing::warn!(reason = %why, "Redis eviction policy refused after a reconnect");
                }
                s.refused = refused;
            }
        }
        result.map(|_| ())
    }

    /// After `e`: if the client may reconnect, the next request checks again.
    pub(crate) fn after_error(&self, e: &RedisError) {
        if is_transient(e) || e.is_unrecoverable_error() {
            self.state().epoch += 1;
        }
    }

    /// The last check's refusal, if it refused.
    pub(crate) fn refused(&self) -> Option<String> {
        self.state().refused.clone()
    }
}

/// What one server said to one of the two questions: the reply, or its refusal
/// of the command (renamed, unknown, denied).
type Answer = Result<Value, String>;

/// `r` as an [`Answer`]; an error the server did not decide (the connection, a
/// timeout, `LOADING`) is passed on.
fn answer(r: RedisResult<Value>) -> RedisResult<Answer> {
    let r = match r {
        Ok(Value::ServerError(e)) => Err(RedisError::from(e)),
        other => other,
    };
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(e)
            if matches!(e.kind(), ErrorKind::Server(_) | ErrorKind::Extension)
                && !is_transient(&e) =>
        {
            Ok(Err(redact_urls_in(&e.to_string())))
        }
        Err(e) => Err(e),
    }
}

fn config_get() -> Cmd {
    redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .to_owned()
}

fn info_memory() -> Cmd {
    redis::cmd("INFO").arg("memory").to_owned()
}

fn text(v: &Value) -> Option<String> {
    redis::from_redis_value_ref::<String>(v).ok()
}

/// The policy in a `CONFIG GET maxmemory-policy` reply: a name and a value, in an
/// array (RESP2) or a map (RESP3).
fn from_config(reply: &Answer) -> Option<String> {
    let pair = match reply.as_ref().ok()? {
        Value::Array(items) => (items.first()?, items.get(1)?),
        Value::Map(pairs) => pairs.first().map(|(k, v)| (k, v))?,
        _ => return None,
    };
    (text(pair.0)? == "maxmemory-policy").then(|| text(pair.1))?
}

/// The policy in an `INFO memory` reply (`maxmemory_policy:…`).
fn from_info(reply: &Answer) -> Option<String> {
    let info = text(reply.as_ref().ok()?)?;
    let policy = info
        .lines()
        .find_map(|l| l.strip_prefix("maxmemory_policy:"))?;
    Some(policy.trim().to_owned())
}

/// One server's policy, or why it could not be read.
fn policy(config: &Answer, info: Option<&Answer>) -> Result<String, String> {
    if let Some(p) = from_config(config).or_else(|| info.and_then(from_info)) {
        return Ok(p);
    }
    let said = |a: Option<&Answer>| match a {
        Some(Err(refused)) => format!("refused ({refused})"),
        _ => "no policy in the reply".to_owned(),
    };
    Err(format!(
        "CONFIG GET maxmemory-policy: {}; INFO memory: {}",
        said(Some(config)),
        said(info)
    ))
}

/// Checks the policy of the one server behind `conn`, named `server` in the
/// refusal. Always `Ok(true)` when it passes.
pub(crate) async fn check_server<C: ConnectionLike>(
    conn: &mut C,
    server: &str,
) -> RedisResult<bool> {
    let config = answer(conn.req_packed_command(&config_get()).await)?;
    let info = match from_config(&config) {
        Some(_) => None,
        None => Some(answer(conn.req_packed_command(&info_memory()).await)?),
    };
    verdict(&[(server.to_owned(), policy(&config, info.as_ref()))])
}

/// Checks the policy of every master of the cluster. `Ok(false)` when some master
/// could not be asked (it is down, or failing over): it is asked again at the next
/// request, which goes ahead meanwhile, so that the cluster client sees the
/// failure and follows the new slot map.
#[cfg(feature = "cluster")]
pub(crate) async fn check_cluster(conn: &mut ClusterConnection) -> RedisResult<bool> {
    let Some(config) = each_master(conn, config_get()).await? else {
        return Ok(false);
    };
    let info = if config.iter().all(|(_, a)| from_config(a).is_some()) {
        Vec::new()
    } else {
        match each_master(conn, info_memory()).await? {
            Some(info) => info,
            None => return Ok(false),
        }
    };
    let reads: Vec<_> = config
        .iter()
        .map(|(node, a)| {
            let info = info.iter().find(|(n, _)| n == node).map(|(_, i)| i);
            (format!("Redis Cluster master {node}"), policy(a, info))
        })
        .collect();
    verdict(&reads)
}

/// `cmd`'s answer from every master, by address; `None` if some could not be
/// reached.
#[cfg(feature = "cluster")]
async fn each_master(
    conn: &mut ClusterConnection,
    cmd: Cmd,
) -> RedisResult<Option<Vec<(String, Answer)>>> {
    let routing = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
    let reply = match conn.route_command(cmd, routing).await {
        Ok(Value::Map(replies)) => replies,
        Ok(_) => return Ok(None),
        Err(e) => {
            tracing::debug!(error = %e, "eviction policy: a cluster master did not answer");
            return Ok(None);
        }
    };
    let mut answers = Vec::with_capacity(reply.len());
    for (node, r) in reply {
        answers.push((text(&node).unwrap_or_default(), answer(Ok(r))?));
    }
    Ok(Some(answers))
}

/// `Ok(true)` if every server runs `noeviction`, else the refusal naming the
/// first that does not, or whose policy could not be read.
fn verdict(reads: &[(String, Result<String, String>)]) -> RedisResult<bool> {
    if let Some((server, p)) = reads
        .iter()
        .find_map(|(s, r)| Some((s, r.as_ref().ok()?)).filter(|(_, p)| *p != "noeviction"))
    {
        return Err(refuse(unsafe_policy(server, p)));
    }
    if let Some((server, why)) = reads.iter().find_map(|(s, r)| Some((s, r.as_ref().err()?))) {
        return Err(refuse(format!(
            "cannot read the `maxmemory-policy` of {server} ({why}), so cannot tell \
             whether it may evict lockkit's keys: any policy but `noeviction` can evict \
             its fencing counters (repeated fencing tokens) or held locks (two holders). \
             Allow `CONFIG GET` or `INFO` to lockkit's Redis user; or, only if the \
             server runs `noeviction`, add `eviction=accept` to the URL"
        )));
    }
    Ok(true)
}

/// Why `maxmemory-policy <policy>` is refused, and the fix.
fn unsafe_policy(server: &str, policy: &str) -> String {
    let what = if policy.starts_with("volatile-") {
        "keys with a TTL, lockkit's held locks among them, before their lease ends: \
         two clients then hold the same lock"
    } else {
        "any key, lockkit's fencing counters too (they have no TTL): the key's tokens \
         then start again and repeat, so the resource refuses new holders or takes \
         stale writes; and held locks before their lease ends: two clients then hold \
         the same lock"
    };
    format!(
        "{server} has `maxmemory-policy {policy}`: when it reaches `maxmemory` it may \
         evict {what}. Set `CONFIG SET maxmemory-policy noeviction` (and \
         `maxmemory-policy noeviction` in its config file), or give the locks a Redis \
         of their own; `eviction=accept` in the URL connects anyway, unsafely"
    )
}

#[cfg(test)]
mod tests;
