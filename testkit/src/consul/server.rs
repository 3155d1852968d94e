//! The running server: the store behind its one mutex, the signals around it
//! (each write wakes the blocking queries, a TTL deadline may move, pause), and
//! the connections.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::{Notify, watch};

use super::http::{Req, route, text};
use super::state::Store;

/// The most of a request body the stand-in reads at all.
const BODY_LIMIT: usize = 4 * 1024 * 1024;

/// State and signals shared by the connections and the TTL task.
#[derive(Debug)]
pub(crate) struct Shared {
    store: Mutex<Store>,
    /// The raft index after each write: what blocking queries wait on.
    pub(super) changes: watch::Sender<u64>,
    /// Poked whenever a TTL deadline may have moved.
    pub(crate) timers: Notify,
    /// True while the stand-in holds every reply.
    paused: watch::Sender<bool>,
    /// True while Consul's servers have no leader: every request that needs one is
    /// answered "No cluster leader".
    leaderless: AtomicBool,
    pub(super) acl_token: Option<String>,
    /// The shortest session TTL accepted, in nanoseconds (Consul: 10 s).
    pub(super) min_ttl_ns: i64,
    /// Requests served, by `"METHOD route"`.
    pub(super) served: Mutex<std::collections::HashMap<String, u64>>,
}

impl Shared {
    pub(crate) fn new(acl_token: Option<String>, ttl_scale: f64) -> Self {
        let store = Store::new(ttl_scale);
        let (changes, _) = watch::channel(store.index());
        let (paused, _) = watch::channel(false);
        Self {
            store: Mutex::new(store),
            changes,
            timers: Notify::new(),
            paused,
            leaderless: AtomicBool::new(false),
            acl_token,
            min_ttl_ns: super::session::TTL_MIN_NS,
            served: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the store.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        f(&self.lock())
    }

    /// Changes the store, then wakes blocking queries if the index moved and
    /// (`reschedule`) the TTL task.
    fn change<R>(&self, reschedule: bool, f: impl FnOnce(&mut Store) -> R) -> R {
        let (result, before, after) = {
            let mut store = self.lock();
            let before = store.index();
            let result = f(&mut store);
            (result, before, store.index())
        };
        if after != before {
            self.changes.send_replace(after);
        }
        if reschedule {
            self.timers.notify_one();
        }
        result
    }

    /// A write from a request.
    pub(super) fn write<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        self.change(true, f)
    }

    /// Invalidates the sessions whose TTL has run out (the TTL task's own write,
    /// which needs no rescheduling).
    pub(crate) fn expire_due(&self) {
        self.change(false, |s| s.expire(Instant::now()));
    }

    pub(crate) fn set_paused(&self, paused: bool) {
        self.paused.send_replace(paused);
    }

    pub(crate) fn set_leaderless(&self, leaderless: bool) {
        self.leaderless.store(leaderless, Ordering::SeqCst);
    }

    pub(super) fn leaderless(&self) -> bool {
        self.leaderless.load(Ordering::SeqCst)
    }

    /// Returns once the stand-in is not paused.
    async fn unpaused(&self) {
        let mut rx = self.paused.subscribe();
        let _ = rx.wait_for(|paused| !paused).await;
    }
}

/// Serves one connection (plain or TLS) until the client closes it (or the task is
/// aborted).
pub(crate) async fn serve<S>(shared: std::sync::Arc<Shared>, stream: S)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(handle(&shared, req).await) }
    });
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Full<Bytes>> {
    shared.unpaused().await;
    let (parts, body) = req.into_parts();
    let reply = match Limited::new(body, BODY_LIMIT).collect().await {
        Err(_) => text(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large"),
        Ok(body) => match Req::new(parts.method, &parts.uri, parts.headers, body.to_bytes()) {
            Some(req) => route(shared, &req).await,
            None => text(StatusCode::BAD_REQUEST, "400 Bad Request"),
        },
    };
    // A reply computed while paused (a blocking query) waits too.
    shared.unpaused().await;
    reply.into_response()
}
