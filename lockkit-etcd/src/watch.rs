//! Loss detection without per-lock requests: one watch per held key, all on one
//! etcd watch stream per driver.
//!
//! When a hold is granted its key gets a watch (client-chosen watch id, from the
//! revision after its create_revision, deletes only), sent on the driver's single
//! watch stream: etcd multiplexes any number of watches over it. A DELETE event on
//! the key marks the hold gone at once (the next renewal reports it `Lost`). A
//! released, expired or lost hold's watch is cancelled.
//!
//! A quiet stream proves nothing by itself (an endpoint black-holed, a member cut
//! off from its leader), so each renewal round also sends one progress request on
//! the stream and counts a hold as covered only if that request was answered, on
//! the same stream whose creation of the hold's watch was acknowledged. Holds that
//! are not covered (their watch not yet acknowledged, the stream broken or
//! silent) are checked with the compare txn instead, for that round. A broken
//! stream is opened again with backoff and every hold's watch re-created from the
//! revision after its create_revision, so a delete while it was down is still
//! seen; if that revision was compacted, the key is read once and watched from
//! the revision of that read.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use etcd_client::{
    Client, EventType, WatchFilterType, WatchOptions, WatchRequestSender, WatchResponse,
    WatchResponseStream,
};
use tokio::sync::{Notify, mpsc};
use tokio::time::{Instant, sleep};

use super::holds::Holds;

use lockkit_core::sync::lock;

/// How long opening the watch stream may take.
const OPEN_LIMIT: Duration = Duration::from_secs(3);
/// How long a compacted hold's read may take.
const READ_LIMIT: Duration = Duration::from_secs(2);
/// Backoff between attempts to open the stream.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(1);
/// Unanswered progress requests remembered per stream.
const MAX_ASKED: usize = 64;

/// What the holds and renewals ask of the watch task.
#[derive(Debug)]
pub(crate) enum Cmd {
    /// Watch `name` for the hold created at `rev`.
    Watch { name: String, rev: i64 },
    /// Stop watching `name` for the hold created at `rev`.
    Unwatch { name: String, rev: i64 },
    /// Ask the stream for a progress answer (a liveness check).
    Progress { asked: Instant },
}

/// What the watch task tells renewals.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// The stream generation (bumped on every new stream) and when the latest
    /// answered progress request was asked.
    answered: Mutex<Option<(u64, Instant)>>,
    notify: Notify,
    /// Progress requests sent, for tests and benchmarks.
    pub(crate) rounds: AtomicU64,
}

impl Progress {
    fn answered(&self) -> Option<(u64, Instant)> {
        *lock(&self.answered)
    }

    /// The stream generation that answered a progress request asked at or after
    /// `since`, asking one if needed and waiting up to `limit`. `None` when the
    /// stream did not answer in time: callers then check holds with a txn.
    pub(crate) async fn alive_since(
        &self,
        cmds: &mpsc::UnboundedSender<Cmd>,
        since: Instant,
        limit: Duration,
    ) -> Option<u64> {
        let fresh = |p: Option<(u64, Instant)>| p.filter(|(_, at)| *at >= since).map(|(g, _)| g);
        if let Some(g) = fresh(self.answered()) {
            return Some(g);
        }
        let asked = Instant::now();
        let notified = self.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        self.rounds.fetch_add(1, Ordering::Relaxed);
        cmds.send(Cmd::Progress { asked }).ok()?;
        let until = asked + limit;
        loop {
            if let Some(g) = fresh(self.answered()) {
                return Some(g);
            }
            tokio::select! {
                _ = notified.as_mut() => {
                    notified.set(self.notify.notified());
                    notified.as_mut().enable();
                }
                _ = tokio::time::sleep_until(until) => return fresh(self.answered()),
            }
        }
    }

    fn record(&self, generation: u64, asked: Instant) {
        let mut a = lock(&self.answered);
        if a.is_none_or(|(_, at)| at <= asked) {
            *a = Some((generation, asked));
        }
        drop(a);
        self.notify.notify_waiters();
    }
}

/// One open stream and what was sent on it.
struct Stream {
    generation: u64,
    sender: WatchRequestSender,
    responses: WatchResponseStream,
    next_id: i64,
    /// Watch id → (key, create_revision of the hold).
    by_id: HashMap<i64, (String, i64)>,
    /// Key → watch id.
    by_name: HashMap<String, i64>,
    /// Progress requests not yet answered, oldest first.
    asked: VecDeque<Instant>,
}

/// The watch task: runs until the driver is dropped (which aborts it).
pub(crate) async fn run(
    client: Client,
    prefix: String,
    holds: Arc<Holds>,
    progress: Arc<Progress>,
    mut cmds: mpsc::UnboundedReceiver<Cmd>,
) {
    // The holds to watch, surviving broken streams: key → create_revision, and
    // the revision to watch from (after a compaction, later than rev + 1).
    let mut wanted: HashMap<String, (i64, i64)> = HashMap::new();
    let mut generation = 0;
    let mut backoff = RETRY_FIRST;
    loop {
        generation += 1;
        let mut stream = match open(&client, &prefix, generation).await {
            Ok(s) => {
                backoff = RETRY_FIRST;
                s
            }
            Err(e) => {
                tracing::debug!(error = %e, "cannot open the watch stream; retrying");
                // Keep taking commands meanwhile, so holds come and go.
                let retry = sleep(backoff);
                tokio::pin!(retry);
                loop {
                    tokio::select! {
                        _ = retry.as_mut() => break,
                        cmd = cmds.recv() => match cmd {
                            None => return,
                            Some(Cmd::Watch { name, rev }) => { wanted.insert(name, (rev, rev + 1)); }
                            Some(Cmd::Unwatch { name, rev }) => {
                                if wanted.get(&name).is_some_and(|(r, _)| *r == rev) {
                                    wanted.remove(&name);
                                }
                            }
                            // Unanswered: that round falls back to txns.
                            Some(Cmd::Progress { .. }) => {}
                        },
                    }
                }
                backoff = (backoff * 2).min(RETRY_MAX);
                continue;
            }
        };
        let mut ok = true;
        let again: Vec<(String, (i64, i64))> =
            wanted.iter().map(|(k, v)| (k.clone(), *v)).collect();
        for (name, (rev, from)) in again {
            ok &= stream.watch(name, rev, from).await;
        }
        while ok {
            tokio::select! {
                cmd = cmds.recv() => match cmd {
                    None => return,
                    Some(Cmd::Watch { name, rev }) => {
                        wanted.insert(name.clone(), (rev, rev + 1));
                        ok = stream.watch(name, rev, rev + 1).await;
                    }
                    Some(Cmd::Unwatch { name, rev }) => {
                        if wanted.get(&name).is_some_and(|(r, _)| *r == rev) {
                            wanted.remove(&name);
                            ok = stream.unwatch(&name).await;
                        }
                    }
                    Some(Cmd::Progress { asked }) => {
                        // A stream that stopped answering is not believed anyway;
                        // keep the queue bounded.
                        if stream.asked.len() >= MAX_ASKED {
                            stream.asked.pop_front();
                        }
                        stream.asked.push_back(asked);
                        ok = stream.sender.request_progress().await.is_ok();
                    }
                },
                msg = stream.responses.message() => match msg {
                    Ok(Some(resp)) => {
                        ok = stream.handle(resp, &client, &holds, &progress, &mut wanted).await;
                    }
                    Ok(None) => {
                        tracing::debug!("the watch stream closed; opening another");
                        ok = false;
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "the watch stream broke; opening another");
                        ok = false;
                    }
                },
            }
        }
    }
}

/// Opens a stream, with a watch on the bare prefix key (which no lock uses) to
/// start it: etcd-client opens a stream with a first watch.
async fn open(client: &Client, prefix: &str, generation: u64) -> Result<Stream, String> {
    let mut watches = client.watch_client();
    let anchor = WatchOptions::new()
        .with_watch_id(1)
        .with_filters([WatchFilterType::NoPut, WatchFilterType::NoDelete]);
    let opened = tokio::time::timeout(
        OPEN_LIMIT,
        watches.watch(prefix.as_bytes().to_vec(), Some(anchor)),
    )
    .await;
    let (sender, responses) = match opened {
        Ok(Ok(s)) => s.split(),
        Ok(Err(e)) => return Err(e.to_string()),
        Err(_) => return Err(format!("no answer within {OPEN_LIMIT:?}")),
    };
    Ok(Stream {
        generation,
        sender,
        responses,
        next_id: 2,
        by_id: HashMap::new(),
        by_name: HashMap::new(),
        asked: VecDeque::new(),
    })
}

impl Stream {
    /// Sends a create for `name` (the hold at `rev`) from revision `from`,
    /// replacing any watch on `name`. False if the stream is broken.
    async fn watch(&mut self, name: String, rev: i64, from: i64) -> bool {
        if !self.unwatch(&name).await {
            return false;
        }
        let id = self.next_id;
        self.next_id += 1;
        let opts = WatchOptions::new()
            .with_watch_id(id)
            .with_start_revision(from)
            .with_filters([WatchFilterType::NoPut]);
        self.by_id.insert(id, (name.clone(), rev));
        self.by_name.insert(name.clone(), id);
        self.sender.watch(name, Some(opts)).await.is_ok()
    }

    /// Cancels the watch on `name`, if any. False if the stream is broken.
    async fn unwatch(&mut self, name: &str) -> bool {
        match self.by_name.remove(name) {
            Some(id) => {
                self.by_id.remove(&id);
                self.sender.cancel(id).await.is_ok()
            }
            None => true,
        }
    }

    /// Handles one response. False if the stream must be opened again.
    async fn handle(
        &mut self,
        resp: WatchResponse,
        client: &Client,
        holds: &Holds,
        progress: &Progress,
        wanted: &mut HashMap<String, (i64, i64)>,
    ) -> bool {
        let id = resp.watch_id();
        let ours = self.by_id.get(&id).cloned();
        if resp.created()
            && let Some((name, rev)) = &ours
        {
            holds.watched(name, *rev, Some(self.generation));
        }
        for event in resp.events() {
            if event.event_type() != EventType::Delete {
                continue;
            }
            if let Some((name, rev)) = &ours {
                tracing::debug!(key = %name, "a held key was deleted behind our back");
                holds.vanished(name, *rev);
            }
        }
        if resp.canceled() {
            let Some((name, rev)) = ours else {
                return true;
            };
            self.by_id.remove(&id);
            self.by_name.remove(&name);
            // No longer watched: renewals check it with a txn until a new watch
            // is acknowledged.
            holds.watched(&name, rev, None);
            if resp.compact_revision() > 0 {
                // Events from rev + 1 are gone: read the key, then watch from
                // after that read.
                match read_from(client, &name, rev).await {
                    Some(Some(from)) => {
                        wanted.insert(name.clone(), (rev, from));
                        return self.watch(name, rev, from).await;
                    }
                    Some(None) => holds.vanished(&name, rev),
                    // Unread: the hold stays on the txn check.
                    None => {}
                }
            } else {
                tracing::debug!(key = %name, reason = resp.cancel_reason(), "etcd cancelled a hold's watch; it stays on the txn check");
            }
            return true;
        }
        if !resp.created() && resp.events().is_empty() && (id == -1 || ours.is_none()) {
            // A progress answer: they come in the order asked.
            if let Some(asked) = self.asked.pop_front() {
                progress.record(self.generation, asked);
            }
        }
        true
    }
}

/// Reads `name`: `Some(Some(revision + 1))` if it is still the hold created at
/// `rev`, `Some(None)` if not, `None` if the read failed.
async fn read_from(client: &Client, name: &str, rev: i64) -> Option<Option<i64>> {
    let mut kv = client.kv_client();
    let resp = tokio::time::timeout(READ_LIMIT, kv.get(name, None))
        .await
        .ok()?
        .ok()?;
    let at = resp.header().map(|h| h.revision())?;
    let same = resp
        .kvs()
        .first()
        .is_some_and(|kv| kv.create_revision() == rev);
    Some(same.then_some(at + 1))
}
