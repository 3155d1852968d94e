//! A Consul stand-in: an in-process HTTP server that follows Consul's documented
//! API semantics for sessions, KV, transactions and blocking queries.
//!
//! **It is a test double, not Consul.** No Consul agent can be installed where
//! lockkit is built, so the Consul driver is tested against this. It was written
//! from Consul's API documentation (`website/content/api-docs/{session,kv,txn}.mdx`,
//! `features/blocking.mdx`) and checked against Consul's sources for what the
//! documentation leaves open (`agent/*_endpoint.go`, `agent/consul/state/kvs.go`,
//! `session.go`, `txn.go`, `agent/consul/session_ttl.go`, `rpc.go`); where the two
//! differ, it does what the source does. It is one server, one datacenter (`dc1`),
//! one node (`lockkit-standin`), always the leader.
//!
//! # What it implements
//!
//! - **One raft index** for every write, starting at 1; reads report
//!   `X-Consul-Index` (never 0), `X-Consul-KnownLeader: true`,
//!   `X-Consul-LastContact: 0`. Writes, as in Consul, carry none of these.
//! - **Sessions**: `PUT /v1/session/create` (`Name`, `TTL` 10s–24h or none,
//!   `Behavior` `release`/`delete`, `LockDelay` as a Go duration or a number of
//!   nanoseconds — under 1000 meaning seconds — default 15s, cut to 60s when
//!   applied; `Checks`/`NodeChecks` may only name `serfHealth`), `renew`,
//!   `destroy`, `info`, `node`, `list`.
//! - **TTL invalidation** between TTL and 2×TTL after the last renewal: each
//!   renewal draws a factor uniformly in [1, 2]; a task sleeps until the next
//!   deadline. Invalidation (or `destroy`) releases or deletes the session's keys
//!   and puts each under the session's lock-delay; a normal release does not.
//! - **KV**: `GET` (`?recurse`, `?keys`, `?separator`, `?raw`), `PUT` (`?flags`,
//!   `?cas`, `?acquire`, `?release`), `DELETE` (`?cas`, `?recurse`), with
//!   tombstones so a key's index never slides back.
//! - **Transactions** (`PUT /v1/txn`): every KV verb, all or nothing, Consul's
//!   result shapes and error texts, up to 128 operations.
//! - **Blocking queries** on KV and session reads: `?index=` and `?wait=`
//!   (default 5 min, at most 10, plus up to wait/16 of jitter); a single-key read
//!   wakes when that key changes (deletion included).
//! - **ACLs** with [`StandInOptions::with_acl_token`]: the token (`X-Consul-Token`,
//!   `?token=` or `Authorization: Bearer`) may do anything, another token gets
//!   `403 ACL not found`, no token is Consul's anonymous token under a `deny`
//!   default policy (`403 Permission denied: anonymous token lacks permission …`;
//!   lists are filtered empty instead). `/v1/status/*` needs no token.
//! - `GET /v1/status/leader`, `/v1/status/peers`, a minimal `/v1/agent/self`;
//!   Consul's 404 (empty body), 405 (with `Allow`), 400 and 500 texts.
//!
//! # What it does not
//!
//! ACL policies, roles and the `/v1/acl` endpoints; other datacenters (`?dc=`
//! other than `dc1` is `500 No path to datacenter`); namespaces and partitions;
//! health checks (sessions can only use the always-passing `serfHealth`);
//! catalog, services, agent endpoints beyond `self`; non-KV transaction
//! operations (400); raft itself (no snapshots, no followers: consistency modes
//! `?stale`, `?consistent` are accepted and change nothing but the
//! `X-Consul-Effective-Consistency` header); tombstone reaping; the key-name
//! character checks of Consul 1.21.5+ (see hashicorp/consul#22822); HTTP/2, TLS.
//!
//! [`StandInOptions::with_ttl_scale`] and [`StandInOptions::with_min_session_ttl`]
//! exist only here: the first shortens every session TTL so a test sees
//! invalidation in milliseconds while clients still send TTLs Consul accepts; the
//! second accepts TTLs under Consul's 10 s minimum, so client and stand-in agree
//! on a short TTL.

mod duration;
mod http;
mod kv;
mod query;
mod server;
mod session;
mod state;
mod tls;
mod txn;
mod wire;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::task::{AbortHandle, JoinHandle};

use crate::{CertAuthority, TestkitError};

use self::server::Shared;

/// How to run a [`ConsulStandIn`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StandInOptions {
    /// When set, every request (but `/v1/status/*`) must carry this token.
    pub acl_token: Option<String>,
    /// Every session TTL is multiplied by this (1.0: real time). Test acceleration
    /// only: `0.01` makes a `"10s"` session expire 100–200 ms after its last renewal.
    pub ttl_scale: f64,
    /// The shortest session TTL accepted (Consul: 10 s). Test acceleration only.
    pub min_session_ttl: std::time::Duration,
    /// `Some(mutual)`: serve HTTPS only, with a certificate from a throwaway CA,
    /// and with `mutual`, require client certificates from it.
    pub tls: Option<bool>,
}

impl Default for StandInOptions {
    fn default() -> Self {
        Self {
            acl_token: None,
            ttl_scale: 1.0,
            min_session_ttl: std::time::Duration::from_secs(10),
            tls: None,
        }
    }
}

impl StandInOptions {
    /// Requires `token` on every request (in `X-Consul-Token`, `?token=` or
    /// `Authorization: Bearer`); without one a request is Consul's anonymous
    /// caller and is refused with 403.
    pub fn with_acl_token(mut self, token: impl Into<String>) -> Self {
        self.acl_token = Some(token.into());
        self
    }

    /// Accepts session TTLs down to `ttl` instead of Consul's 10 s (a test
    /// acceleration: clients and the stand-in then agree on a short TTL, where
    /// [`with_ttl_scale`](Self::with_ttl_scale) shortens it behind the client's back).
    pub fn with_min_session_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.min_session_ttl = ttl;
        self
    }

    /// Serves HTTPS only, as an agent with TLS on its HTTP port does; with `mutual`,
    /// clients must present a certificate from the same CA (`verify_incoming`).
    /// [`ConsulStandIn::url`] is then `consuls://…?tls_ca=CA`.
    pub fn with_tls(mut self, mutual: bool) -> Self {
        self.tls = Some(mutual);
        self
    }

    /// Scales every session TTL by `scale` (a test acceleration; see the field).
    /// Lock-delays are not scaled: clients can ask for short ones directly.
    pub fn with_ttl_scale(mut self, scale: f64) -> Self {
        self.ttl_scale = scale;
        self
    }
}

/// A running stand-in on 127.0.0.1. Its tasks run on the runtime that started it;
/// dropping the handle stops them and closes every connection.
#[derive(Debug)]
pub struct ConsulStandIn {
    addr: SocketAddr,
    /// HTTPS: the certificates (and their dir), and whether clients need one.
    tls: Option<(CertAuthority, bool, tempfile::TempDir)>,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
    timers: JoinHandle<()>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
}

impl ConsulStandIn {
    /// Starts a stand-in with the default options (no ACLs, real-time TTLs).
    ///
    /// # Errors
    ///
    /// An I/O error if it cannot listen.
    pub async fn start() -> Result<Self, TestkitError> {
        Self::start_with(StandInOptions::default()).await
    }

    /// Starts a stand-in with `options`.
    ///
    /// # Errors
    ///
    /// [`TestkitError::Setup`] for a `ttl_scale` that is not a positive finite
    /// number; an I/O error if it cannot listen.
    pub async fn start_with(options: StandInOptions) -> Result<Self, TestkitError> {
        if !(options.ttl_scale.is_finite() && options.ttl_scale > 0.0) {
            return Err(TestkitError::Setup {
                step: "ConsulStandIn options".into(),
                detail: format!(
                    "ttl_scale must be a positive number, not {}",
                    options.ttl_scale
                ),
            });
        }
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mut shared = Shared::new(options.acl_token, options.ttl_scale);
        shared.min_ttl_ns = i64::try_from(options.min_session_ttl.as_nanos()).unwrap_or(i64::MAX);
        let shared = Arc::new(shared);
        let connections: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();

        let tls = match options.tls {
            Some(mutual) => {
                let dir = crate::scratch_dir::temp_dir()?;
                let certs = CertAuthority::generate(dir.path())?;
                Some((certs, mutual, dir))
            }
            None => None,
        };
        let acceptor = match &tls {
            Some((certs, mutual, _)) => Some(tls::acceptor(certs, *mutual)?),
            None => None,
        };
        let (sh, conns) = (shared.clone(), connections.clone());
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let sh = sh.clone();
                let task = match acceptor.clone() {
                    // A failed handshake closes the connection, as an agent does.
                    Some(acceptor) => tokio::spawn(async move {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            server::serve(sh, stream).await;
                        }
                    }),
                    None => tokio::spawn(server::serve(sh, stream)),
                };
                let mut conns = conns.lock().unwrap_or_else(|e| e.into_inner());
                conns.retain(|t| !t.is_finished());
                conns.push(task.abort_handle());
            }
        });
        let sh = shared.clone();
        let timers = tokio::spawn(async move {
            // Sleeps until the next TTL deadline, or until one may have moved.
            loop {
                match sh.read(|s| s.next_expiry()) {
                    Some(at) => {
                        tokio::select! {
                            () = tokio::time::sleep_until(at.into()) => {}
                            () = sh.timers.notified() => {}
                        }
                    }
                    None => sh.timers.notified().await,
                }
                sh.expire_due();
            }
        });
        Ok(Self {
            addr,
            tls,
            shared,
            accept,
            timers,
            connections,
        })
    }

    /// `consul://127.0.0.1:PORT`; over HTTPS `consuls://127.0.0.1:PORT?tls_ca=CA`
    /// (plus `tls_cert` and `tls_key` when it requires a client certificate).
    pub fn url(&self) -> String {
        match &self.tls {
            None => format!("consul://{}", self.addr),
            Some((certs, mutual, _)) => {
                let mut url = format!(
                    "consuls://{}?tls_ca={}",
                    self.addr,
                    crate::tls::query_path(&certs.ca)
                );
                if *mutual {
                    url.push_str(&format!(
                        "&tls_cert={}&tls_key={}",
                        crate::tls::query_path(&certs.client_cert),
                        crate::tls::query_path(&certs.client_key)
                    ));
                }
                url
            }
        }
    }

    /// The certificates of an HTTPS stand-in.
    pub fn tls_files(&self) -> Option<&CertAuthority> {
        self.tls.as_ref().map(|(certs, _, _)| certs)
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> String {
        self.addr.to_string()
    }

    /// The port on 127.0.0.1 (to put a [`crate::FaultProxy`] in front, say).
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The current raft index: the last one any write took.
    pub fn index(&self) -> u64 {
        self.shared.read(|s| s.index())
    }

    /// How many requests it has served for `method` on `route`, the route as
    /// Consul's router names it (`"PUT", "/v1/session/renew/"`, `"PUT", "/v1/txn"`,
    /// `"GET", "/v1/kv/"`): for tests that count what a client sends.
    pub fn requests(&self, method: &str, route: &str) -> u64 {
        self.shared
            .served
            .lock()
            .map(|s| s.get(&format!("{method} {route}")).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    /// How many sessions exist (not yet destroyed or invalidated).
    pub fn session_count(&self) -> usize {
        self.shared.read(|s| s.session_count())
    }

    /// Stops answering: requests are read but get no reply until
    /// [`resume`](Self::resume), as with an agent that cannot reach its servers.
    /// Session TTLs keep running (they live on the servers).
    pub fn pause(&self) {
        self.shared.set_paused(true);
    }

    /// Answers again, starting with the requests held while paused.
    pub fn resume(&self) {
        self.shared.set_paused(false);
    }

    /// Answers every request that needs Consul's servers `500 No cluster leader`,
    /// as Consul does while they elect a leader, until
    /// [`elect_leader`](Self::elect_leader); `/v1/status/leader` answers `""`.
    /// [`requests`](Self::requests) counts the refused requests too. Nothing
    /// changes meanwhile; session TTLs keep running.
    pub fn lose_leader(&self) {
        self.shared.set_leaderless(true);
    }

    /// Serves requests again after [`lose_leader`](Self::lose_leader).
    pub fn elect_leader(&self) {
        self.shared.set_leaderless(false);
    }
}

impl Drop for ConsulStandIn {
    fn drop(&mut self) {
        self.shared.set_paused(false);
        self.accept.abort();
        self.timers.abort();
        let mut conns = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        for task in conns.drain(..) {
            task.abort();
        }
    }
}
