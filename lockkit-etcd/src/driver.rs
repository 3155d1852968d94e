//! [`EtcdDriver`]: the [`LockDriver`] over one etcd cluster.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, PutOptions, SortOrder, SortTarget, Txn,
    TxnOp, TxnOpResponse,
};
use lockkit_core::driver::{Inspect, Inspection};
use lockkit_core::{
    AcquireRequest, Capabilities, Grant, LockDriver, LockError, LockKey, OwnerId, Renewal, Result,
    WakeUp, async_trait,
};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::NAME;
use super::contender::Contending;
use super::error::{with_patience, within};
use super::holds::{Holds, sweep};
use super::keys;
use super::lease::{Lease, Leases, round_limit};
use super::options::EtcdOptions;
use super::tls;
use super::watch::{self, Progress};

/// How long release and force_release retry transient errors.
const PATIENCE: Duration = Duration::from_millis(750);
/// etcd's default `--max-txn-ops`: compares per existence-check txn.
const MAX_TXN_OPS: usize = 128;

/// The etcd driver. Cheap to clone; clones share the connection, the leases and
/// the holds.
///
/// See the [crate docs](crate) for the key layout, the lease mapping and what
/// survives a failover.
#[derive(Clone)]
pub struct EtcdDriver {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) client: Client,
    pub(crate) prefix: String,
    pub(crate) leases: Leases,
    /// Connecting, and each request.
    pub(crate) timeouts: lockkit_core::url::Timeouts,
    pub(crate) holds: Arc<Holds>,
    /// The watch stream's progress answers: is it alive?
    progress: Arc<Progress>,
    /// Existence-check txns sent by renewals (the fallback when the watch
    /// stream cannot vouch for a hold).
    existence_checks: AtomicU64,
    sweeper: JoinHandle<()>,
    watcher: JoinHandle<()>,
    shown: String,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.sweeper.abort();
        self.watcher.abort();
    }
}

impl fmt::Debug for EtcdDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdDriver")
            .field("url", &self.inner.shown)
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

impl EtcdDriver {
    /// Connects to the cluster and checks that it answers.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] if no endpoint answers within 5 s, or the
    /// credentials are refused.
    pub async fn connect(options: EtcdOptions) -> Result<Self> {
        // require_leader: a member cut off from its leader ends our streams
        // (watches, keep-alives) instead of leaving them quiet.
        let mut connect = ConnectOptions::new()
            .with_timeout(options.timeouts.request)
            .with_connect_timeout(options.timeouts.connect)
            .with_require_leader(true);
        if let Some((user, password)) = &options.user {
            connect = connect.with_user(user.clone(), password.clone());
        }
        if let Some(tls) = &options.tls {
            connect = connect.with_tls(tls.options());
        }
        let shown = options.to_string();
        let unreachable = |message: String| {
            let hint = tls::hint(options.tls.as_ref(), &message);
            LockError::Connection {
                driver: NAME,
                message: format!("{shown}: {message}{hint}"),
                source: None,
            }
        };
        let connect_timeout = options.timeouts.connect;
        let client = match tokio::time::timeout(
            connect_timeout,
            Client::connect(&options.endpoints, Some(connect)),
        )
        .await
        {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(unreachable(super::error::describe(&e))),
            Err(_) => {
                return Err(unreachable(format!(
                    "no answer within {} (connect_timeout_ms)",
                    lockkit_core::human_duration(connect_timeout)
                )));
            }
        };
        // The channel connects lazily: make one request so a wrong URL fails here.
        let mut kv = client.kv_client();
        let probe = GetOptions::new().with_count_only();
        within(
            connect_timeout,
            "connect",
            kv.get(options.prefix.as_bytes().to_vec(), Some(probe)),
        )
        .await
        .map_err(|e| match e {
            LockError::Connection { message, .. } | LockError::Backend { message, .. } => {
                unreachable(message)
            }
            other => other,
        })?;
        let (watch_commands, watch_queue) = tokio::sync::mpsc::unbounded_channel();
        let holds = Arc::new(Holds::new(watch_commands));
        let progress = Arc::new(Progress::default());
        let sweeper = tokio::spawn(sweep(holds.clone(), client.clone()));
        let watcher = tokio::spawn(watch::run(
            client.clone(),
            options.prefix.clone(),
            holds.clone(),
            progress.clone(),
            watch_queue,
        ));
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                prefix: options.prefix,
                leases: Leases::default(),
                timeouts: options.timeouts,
                holds,
                progress,
                existence_checks: AtomicU64::new(0),
                sweeper,
                watcher,
                shown,
            }),
        })
    }

    /// The ids of the leases this driver currently uses: one per distinct TTL
    /// (in whole seconds) of its holds and waiters.
    pub fn lease_ids(&self) -> Vec<i64> {
        self.inner.leases.ids()
    }

    /// How many lease keep-alive rounds this driver has sent (renewal traffic).
    pub fn keep_alive_rounds(&self) -> u64 {
        self.inner.leases.rounds.load(Ordering::Relaxed)
    }

    /// How many existence-check txns renewals have sent: only for holds the
    /// watch stream could not vouch for (watch not yet acknowledged, stream
    /// broken or silent). Zero in the steady state.
    pub fn existence_checks(&self) -> u64 {
        self.inner.existence_checks.load(Ordering::Relaxed)
    }

    /// How many watch-stream progress requests renewals have sent (one per
    /// renewal round, however many holds).
    pub fn watch_progress_rounds(&self) -> u64 {
        self.inner.progress.rounds.load(Ordering::Relaxed)
    }

    /// The underlying etcd client (for inspection and benchmarks).
    pub fn client(&self) -> &Client {
        &self.inner.client
    }
}

/// One renewal round: when it started, and the watch stream generation that
/// answered its progress request (`None`: none did in time).
#[derive(Debug, Clone, Copy)]
struct Round {
    sent: Instant,
    live: Option<u64>,
}

/// The renewal answer for a hold whose key is no longer ours.
fn gone(key: &LockKey) -> LockError {
    LockError::lost(
        key,
        "its etcd key is gone (deleted, expired, or taken over)",
    )
}

/// A retryable error for every renewal in a failed batch.
fn batch_error(e: &LockError) -> LockError {
    LockError::Backend {
        driver: NAME,
        message: e.to_string(),
        source: None,
    }
}

impl Inner {
    /// Finishes renewing the holds `idx` of `renewals`, all on `lease`, whose
    /// keep-alive round of `round` ended with `confirmed`. A hold the watch
    /// stream vouches for (its watch acknowledged on the stream generation that
    /// answered the round's progress request) needs no request; the
    /// rest get one compare txn per [`MAX_TXN_OPS`] holds.
    async fn renew_on_lease(
        &self,
        lease: &Arc<Lease>,
        confirmed: Result<Instant>,
        round: Round,
        renewals: &[Renewal],
        idx: &[(usize, String, i64)],
        out: &mut [Option<Result<Instant>>],
    ) {
        if let Err(e) = confirmed {
            if e.is_lost() {
                self.leases.forget(lease);
            }
            for (i, name, _) in idx {
                out[*i] = Some(if e.is_lost() {
                    self.holds.remove(name);
                    Err(LockError::lost(
                        &renewals[*i].key,
                        "the etcd lease of this hold expired",
                    ))
                } else {
                    Err(batch_error(&e))
                });
            }
            return;
        }
        let Round { sent, live } = round;
        let mut unvouched = Vec::new();
        for (i, name, rev) in idx {
            let deadline = (sent + renewals[*i].ttl).min(lease.alive_until());
            match self.holds.get(name).filter(|r| r.rev == *rev) {
                Some(r) if r.gone => {
                    self.holds.remove(name);
                    out[*i] = Some(Err(LockError::lost(
                        &renewals[*i].key,
                        "its etcd key was deleted (force-released or removed by hand)",
                    )));
                }
                Some(r) if live.is_some() && r.watched == live => {
                    out[*i] = Some(if self.holds.renewed(name, *rev, lease, deadline) {
                        Ok(deadline)
                    } else {
                        Err(gone(&renewals[*i].key))
                    });
                }
                Some(_) => unvouched.push((*i, name.clone(), *rev)),
                None => {
                    out[*i] = Some(Err(gone(&renewals[*i].key)));
                }
            }
        }
        for chunk in unvouched.chunks(MAX_TXN_OPS) {
            self.existence_checks.fetch_add(1, Ordering::Relaxed);
            let compares: Vec<Compare> = chunk
                .iter()
                .map(|(_, name, rev)| {
                    Compare::create_revision(name.as_str(), CompareOp::Equal, *rev)
                })
                .collect();
            let reads: Vec<TxnOp> = chunk
                .iter()
                .map(|(_, name, _)| {
                    TxnOp::get(name.as_str(), Some(GetOptions::new().with_keys_only()))
                })
                .collect();
            let txn = Txn::new().when(compares).or_else(reads);
            let mut kv = self.client.kv_client();
            let resp = match within(self.timeouts.request, "renew", kv.txn(txn)).await {
                Ok(resp) => resp,
                Err(e) => {
                    for (i, _, _) in chunk {
                        out[*i] = Some(Err(batch_error(&e)));
                    }
                    continue;
                }
            };
            let ops = resp.op_responses();
            for (j, (i, name, rev)) in chunk.iter().enumerate() {
                let present = resp.succeeded()
                    || matches!(ops.get(j), Some(TxnOpResponse::Get(g))
                        if g.kvs().first().is_some_and(|kv| kv.create_revision() == *rev));
                let deadline = (sent + renewals[*i].ttl).min(lease.alive_until());
                out[*i] = Some(
                    if present && self.holds.renewed(name, *rev, lease, deadline) {
                        Ok(deadline)
                    } else {
                        self.holds.remove(name);
                        Err(gone(&renewals[*i].key))
                    },
                );
            }
        }
    }

    async fn extend_one(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let name = keys::entry(&self.prefix, key, owner);
        let Some(record) = self.holds.get(&name) else {
            return Err(LockError::lost(
                key,
                "this driver holds no such lock (released, expired or lost)",
            ));
        };
        if record.gone {
            self.holds.remove(&name);
            return Err(LockError::lost(
                key,
                "its etcd key was deleted (force-released or removed by hand)",
            ));
        }
        let lease = self.leases.for_ttl(&self.client, ttl).await?;
        let sent = Instant::now();
        if let Err(e) = lease.confirm(&self.client, sent, &self.leases.rounds).await {
            if e.is_lost() {
                self.leases.forget(&lease);
                return Err(batch_error(&e));
            }
            return Err(e);
        }
        let mut txn = Txn::new().when([Compare::create_revision(
            name.as_str(),
            CompareOp::Equal,
            record.rev,
        )]);
        if lease.id != record.lease.id {
            // Move the key to the lease of the new TTL; its create_revision (the
            // token) stays.
            let value = owner.label().unwrap_or("").to_string();
            txn = txn.and_then([TxnOp::put(
                name.as_str(),
                value,
                Some(PutOptions::new().with_lease(lease.id)),
            )]);
        }
        let mut kv = self.client.kv_client();
        let resp = within(self.timeouts.request, "extend", kv.txn(txn)).await?;
        let deadline = (sent + ttl).min(lease.alive_until());
        if resp.succeeded() && self.holds.renewed(&name, record.rev, &lease, deadline) {
            Ok(deadline)
        } else {
            self.holds.remove(&name);
            Err(LockError::lost(
                key,
                "its etcd key is gone (deleted, expired, or taken over)",
            ))
        }
    }
}

#[async_trait]
impl LockDriver for EtcdDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
            .with_fair(true)
            .with_inspect(Inspect::HoldersAndWaiters)
            .with_wake_up(WakeUp::Notify)
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        self.inner.inspect(key).await
    }

    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        req.require_mode(super::NAME, self.capabilities())?;
        Contending::new(&self.inner, req).wait().await
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        self.inner.extend_one(key, owner, ttl).await
    }

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        let inner = &self.inner;
        let mut out: Vec<Option<Result<Instant>>> = renewals.iter().map(|_| None).collect();
        // Holds whose lease covers the requested TTL renew together, per lease.
        let mut by_lease: HashMap<i64, (Arc<Lease>, Vec<(usize, String, i64)>)> = HashMap::new();
        let mut one_by_one = Vec::new();
        for (i, r) in renewals.iter().enumerate() {
            let name = keys::entry(&inner.prefix, &r.key, &r.owner);
            match inner.holds.get(&name) {
                Some(rec) if rec.lease.ttl >= r.ttl && !rec.lease.is_dead() => {
                    by_lease
                        .entry(rec.lease.id)
                        .or_insert_with(|| (rec.lease.clone(), Vec::new()))
                        .1
                        .push((i, name, rec.rev));
                }
                _ => one_by_one.push(i),
            }
        }
        // One keep-alive round per lease, and (at the same time) one progress
        // request on the watch stream: nothing per lock.
        let sent = Instant::now();
        let groups: Vec<&(Arc<Lease>, Vec<(usize, String, i64)>)> = by_lease.values().collect();
        let limit = groups
            .iter()
            .map(|(l, _)| round_limit(l.ttl))
            .max()
            .unwrap_or(Duration::ZERO);
        let rounds = async {
            let mut confirmed = Vec::with_capacity(groups.len());
            for (lease, _) in &groups {
                confirmed.push(
                    lease
                        .confirm(&inner.client, sent, &inner.leases.rounds)
                        .await,
                );
            }
            confirmed
        };
        let vouch = async {
            if groups.is_empty() {
                None
            } else {
                inner
                    .progress
                    .alive_since(inner.holds.watch_commands(), sent, limit)
                    .await
            }
        };
        let (confirmed, live) = tokio::join!(rounds, vouch);
        for ((lease, idx), confirmed) in groups.into_iter().zip(confirmed) {
            inner
                .renew_on_lease(
                    lease,
                    confirmed,
                    Round { sent, live },
                    renewals,
                    idx,
                    &mut out,
                )
                .await;
        }
        for i in one_by_one {
            let r = &renewals[i];
            out[i] = Some(inner.extend_one(&r.key, &r.owner, r.ttl).await);
        }
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| Err(LockError::Config("BUG: renewal not attempted".into())))
            })
            .collect()
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let inner = &self.inner;
        let name = keys::entry(&inner.prefix, key, owner);
        match inner.holds.remove(&name) {
            Some(record) => {
                let released = with_patience(PATIENCE, || async {
                    let txn = Txn::new()
                        .when([Compare::create_revision(
                            name.as_str(),
                            CompareOp::Equal,
                            record.rev,
                        )])
                        .and_then([TxnOp::delete(name.as_str(), None)]);
                    let mut kv = inner.client.kv_client();
                    within(self.inner.timeouts.request, "release", kv.txn(txn)).await
                })
                .await;
                match released {
                    Ok(resp) => Ok(resp.succeeded()),
                    Err(e) => {
                        // Keep trying in the background; the caller learns it failed.
                        inner.holds.delete_later(name, record.rev);
                        Err(e)
                    }
                }
            }
            None => {
                // Our owner's entry by name: never another owner's.
                let resp = with_patience(PATIENCE, || async {
                    let mut kv = inner.client.kv_client();
                    within(
                        self.inner.timeouts.request,
                        "release",
                        kv.delete(name.as_str(), None),
                    )
                    .await
                })
                .await?;
                Ok(resp.deleted() > 0)
            }
        }
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let inner = &self.inner;
        let queue = keys::queue(&inner.prefix, key);
        with_patience(PATIENCE, || async {
            let mut kv = inner.client.kv_client();
            let opts = GetOptions::new()
                .with_prefix()
                .with_sort(SortTarget::Create, SortOrder::Ascend)
                .with_limit(1)
                .with_keys_only();
            let resp = within(
                self.inner.timeouts.request,
                "force release",
                kv.get(queue.as_str(), Some(opts)),
            )
            .await?;
            let Some(first) = resp.kvs().first() else {
                return Ok(false);
            };
            let txn = Txn::new()
                .when([Compare::create_revision(
                    first.key().to_vec(),
                    CompareOp::Equal,
                    first.create_revision(),
                )])
                .and_then([TxnOp::delete(first.key().to_vec(), None)]);
            let resp = within(self.inner.timeouts.request, "force release", kv.txn(txn)).await?;
            Ok(resp.succeeded())
        })
        .await
    }

    /// Deletes every entry of the key's queue. The token is the holder's
    /// create_revision, etcd's own counter: nothing else is left to remove.
    async fn purge(&self, key: &LockKey) -> Result<()> {
        let inner = &self.inner;
        let queue = keys::queue(&inner.prefix, key);
        with_patience(PATIENCE, || async {
            let mut kv = inner.client.kv_client();
            let opts = etcd_client::DeleteOptions::new().with_prefix();
            within(
                inner.timeouts.request,
                "purge",
                kv.delete(queue.as_str(), Some(opts)),
            )
            .await
            .map(|_| ())
        })
        .await
    }
}
