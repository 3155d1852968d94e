//! Renewals: `extend` of one hold, and `extend_many` (the watchdog), which renews
//! every hold with **one keep-alive round per lease** and, at the same time, **one
//! progress request on the watch stream**: nothing per lock.
//!
//! A hold the watch stream vouches for (its watch acknowledged on the stream
//! generation that answered this round's progress request) needs no request; the
//! rest get one read-only compare txn per [`MAX_TXN_OPS`] holds. A lease the
//! server says is gone reports every hold on it `Lost`; a failed round makes their
//! renewals fail retryably. The deadline of a renewed hold counts from before its
//! lease's round, and never passes the lease's own expiry (invariants E4, E5).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse};
use lockkit_core::{LockError, LockKey, OwnerId, Renewal, Result};
use tokio::time::Instant;

use super::connection::Inner;
use super::error::{batch_error, deleted, gone};
use super::lease::{Lease, round_limit};
use super::request::within;

/// etcd's default `--max-txn-ops`: compares per existence-check txn.
const MAX_TXN_OPS: usize = 128;

/// A hold to renew: its index in the renewals, its key and its create_revision.
type Due = (usize, String, i64);

/// Each renewal's answer, filled in as it is known.
type Answers = [Option<Result<Instant>>];

/// One renewal round: when it started, and the watch stream generation that
/// answered its progress request (`None`: none did in time).
#[derive(Debug, Clone, Copy)]
struct Round {
    sent: Instant,
    live: Option<u64>,
}

/// Renews `renewals`: holds whose lease covers the requested TTL together, per
/// lease; the others one by one ([`extend_one`]).
pub(crate) async fn extend_many(inner: &Inner, renewals: &[Renewal]) -> Vec<Result<Instant>> {
    let mut out: Vec<Option<Result<Instant>>> = renewals.iter().map(|_| None).collect();
    let mut by_lease: HashMap<i64, (Arc<Lease>, Vec<Due>)> = HashMap::new();
    let mut one_by_one = Vec::new();
    for (i, r) in renewals.iter().enumerate() {
        let name = inner.holds.entry_of(&inner.prefix, &r.key, &r.owner);
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
    let groups: Vec<&(Arc<Lease>, Vec<Due>)> = by_lease.values().collect();
    let limit = groups
        .iter()
        .map(|(l, _)| round_limit(l.ttl))
        .max()
        .unwrap_or(Duration::ZERO);
    let rounds = async {
        let mut confirmed = Vec::with_capacity(groups.len());
        for (lease, _) in &groups {
            confirmed.push(inner.confirm(lease, sent).await);
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
    for ((lease, due), confirmed) in groups.into_iter().zip(confirmed) {
        let round = Round { sent, live };
        on_lease(inner, lease, confirmed, round, renewals, due, &mut out).await;
    }
    for i in one_by_one {
        let r = &renewals[i];
        out[i] = Some(extend_one(inner, &r.key, &r.owner, r.ttl).await);
    }
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(LockError::Config("BUG: renewal not attempted".into()))))
        .collect()
}

/// Finishes renewing the holds `due`, all on `lease`, whose keep-alive round of
/// `round` ended with `confirmed`.
async fn on_lease(
    inner: &Inner,
    lease: &Arc<Lease>,
    confirmed: Result<Instant>,
    round: Round,
    renewals: &[Renewal],
    due: &[Due],
    out: &mut Answers,
) {
    if let Err(e) = confirmed {
        if e.is_lost() {
            inner.leases.forget(lease);
        }
        for (i, name, _) in due {
            out[*i] = Some(if e.is_lost() {
                inner.holds.remove(name);
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
    for (i, name, rev) in due {
        let deadline = (sent + renewals[*i].ttl).min(lease.alive_until());
        match inner.holds.get(name).filter(|r| r.rev == *rev) {
            Some(r) if r.gone => {
                inner.holds.remove(name);
                out[*i] = Some(Err(deleted(&renewals[*i].key)));
            }
            Some(r) if live.is_some() && r.watched == live => {
                out[*i] = Some(if inner.holds.renewed(name, *rev, lease, deadline) {
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
        check_exist(inner, lease, sent, renewals, chunk, out).await;
    }
}

/// The holds `chunk` (at most [`MAX_TXN_OPS`]), which the watch stream could not
/// vouch for: one read-only txn compares each key's create_revision (and reads
/// the keys when one differs).
async fn check_exist(
    inner: &Inner,
    lease: &Arc<Lease>,
    sent: Instant,
    renewals: &[Renewal],
    chunk: &[Due],
    out: &mut Answers,
) {
    inner.existence_checks.fetch_add(1, Ordering::Relaxed);
    let compares: Vec<Compare> = chunk
        .iter()
        .map(|(_, name, rev)| Compare::create_revision(name.as_str(), CompareOp::Equal, *rev))
        .collect();
    let reads: Vec<TxnOp> = chunk
        .iter()
        .map(|(_, name, _)| TxnOp::get(name.as_str(), Some(GetOptions::new().with_keys_only())))
        .collect();
    let txn = Txn::new().when(compares).or_else(reads);
    let mut kv = inner.client.kv_client();
    let resp = match within(inner.timeouts.request, "renew", kv.txn(txn)).await {
        Ok(resp) => resp,
        Err(e) => {
            for (i, _, _) in chunk {
                out[*i] = Some(Err(batch_error(&e)));
            }
            return;
        }
    };
    let ops = resp.op_responses();
    for (j, (i, name, rev)) in chunk.iter().enumerate() {
        let present = resp.succeeded()
            || matches!(ops.get(j), Some(TxnOpResponse::Get(g))
                if g.kvs().first().is_some_and(|kv| kv.create_revision() == *rev));
        let deadline = (sent + renewals[*i].ttl).min(lease.alive_until());
        out[*i] = Some(
            if present && inner.holds.renewed(name, *rev, lease, deadline) {
                Ok(deadline)
            } else {
                inner.holds.remove(name);
                Err(gone(&renewals[*i].key))
            },
        );
    }
}

/// Renews one hold for `ttl`: a keep-alive round on the lease of that TTL, and
/// one txn that checks the key (and moves it to that lease if it is on another).
pub(crate) async fn extend_one(
    inner: &Inner,
    key: &LockKey,
    owner: &OwnerId,
    ttl: Duration,
) -> Result<Instant> {
    let name = inner.holds.entry_of(&inner.prefix, key, owner);
    let Some(record) = inner.holds.get(&name) else {
        return Err(LockError::lost(
            key,
            "this driver holds no such lock (released, expired or lost)",
        ));
    };
    if record.gone {
        inner.holds.remove(&name);
        return Err(deleted(key));
    }
    let lease = inner.leases.for_ttl(&inner.client, ttl).await?;
    let sent = Instant::now();
    if let Err(e) = inner.confirm(&lease, sent).await {
        if e.is_lost() {
            inner.leases.forget(&lease);
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
        // Move the key to the lease of the new TTL, keeping its value (label and
        // any election value); its create_revision (the token) stays (invariant
        // E2).
        txn = txn.and_then([TxnOp::put(
            name.as_str(),
            "",
            Some(PutOptions::new().with_lease(lease.id).with_ignore_value()),
        )]);
    }
    let mut kv = inner.client.kv_client();
    let resp = within(inner.timeouts.request, "extend", kv.txn(txn)).await?;
    let deadline = (sent + ttl).min(lease.alive_until());
    if resp.succeeded() && inner.holds.renewed(&name, record.rev, &lease, deadline) {
        Ok(deadline)
    } else {
        inner.holds.remove(&name);
        Err(gone(key))
    }
}

#[cfg(test)]
mod tests;
