//! The driver's ZooKeeper session: one at a time, replaced when it ends.
//!
//! Every lock node is ephemeral, so a hold lasts exactly as long as the session
//! that created it. A task per session follows its state: when the connection
//! drops (`Disconnected`) every hold of that session is signalled lost at once,
//! because the servers may expire the session before the client hears of it
//! (invariant Z3); when
//! the session ends (`Expired`, `AuthFailed`, `Closed`) the nodes are gone for
//! sure. The next acquire then opens a new session.
//!
//! The session knows nothing of its holds: it keeps one [`LossSignal`] per
//! connection and fires it when that connection drops (then starts a fresh one,
//! since the session may reconnect and grant again); each hold's signal is a
//! [`LossSignal::child`] of it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lockkit_core::sync::lock;
use lockkit_core::{LockError, LossSignal, Result};
use tokio::sync::Mutex;
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError, SessionState};

use crate::error::zk_error;
use crate::options::ZkOptions;

/// One ZooKeeper session.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) client: Client,
    pub(crate) id: i64,
    /// How long one request may take (`request_timeout_ms`).
    request_timeout: Duration,
    /// Its connection drops, shared with the task that follows its state.
    drops: Arc<Drops>,
}

/// How often a session's connection dropped, and the loss signal of its current
/// connection.
#[derive(Debug, Default)]
struct Drops {
    /// How often the connection dropped or the session ended: a grant confirmed
    /// while this number did not change was confirmed on a live connection
    /// (invariant Z3).
    count: AtomicU64,
    /// Fired when the current connection drops (or the session ends).
    loss: std::sync::Mutex<LossSignal>,
}

impl Drops {
    fn loss(&self) -> std::sync::MutexGuard<'_, LossSignal> {
        lock(&self.loss)
    }

    /// Counts a drop, then fires the current connection's signal, `why`. A
    /// session that may come back (`last` false) gets a fresh signal for its next
    /// connection: a hold's signal taken before this swap fires with it, and one
    /// taken after sees the count changed.
    fn dropped(&self, why: &str, last: bool) {
        self.count.fetch_add(1, Ordering::SeqCst);
        let fired = if last {
            self.loss().clone()
        } else {
            std::mem::take(&mut *self.loss())
        };
        fired.fire(why);
    }
}

impl Session {
    pub(crate) fn drops(&self) -> u64 {
        self.drops.count.load(Ordering::SeqCst)
    }

    /// A loss signal for a hold of this session: fired when the current
    /// connection drops or the session ends, or on its own (the node deleted).
    pub(crate) fn hold_loss(&self) -> LossSignal {
        self.drops.loss().child()
    }

    /// Runs one request of this session, failing it with [`ZkError::Timeout`] (an
    /// unknown outcome, as for a reply lost with the connection) if it takes
    /// longer than the request timeout.
    pub(crate) async fn within<T>(
        &self,
        request: impl Future<Output = std::result::Result<T, ZkError>>,
    ) -> std::result::Result<T, ZkError> {
        tokio::time::timeout(self.request_timeout, request)
            .await
            .unwrap_or(Err(ZkError::Timeout))
    }

    /// Brings this session's server up to the leader's latest word (`sync`),
    /// resending while the outcome is unknown: reads after it see every write
    /// the ensemble had committed when it was called. In an ensemble, a follower
    /// may not have seen a grant made through another server yet. A `path` that
    /// does not exist is fine: the sync is of the server, not of the node.
    pub(crate) async fn caught_up(&self, path: &str) -> Result<()> {
        match self.answered(|| self.client.sync(path)).await.reply {
            Ok(()) | Err(ZkError::NoNode) => Ok(()),
            Err(e) => Err(zk_error("catching up with the leader", e)),
        }
    }

    /// How long the ensemble may keep this session, and so its nodes, after its
    /// client stops sending: the negotiated timeout, plus up to one server tick,
    /// because the server expires sessions at tick boundaries. The server clamps a
    /// session timeout to at least 2 ticks, so a tick is at most half of it.
    pub(crate) fn outlives_its_client(&self) -> Duration {
        self.client.session_timeout() * 3 / 2
    }

    /// Whether the session is connected right now.
    pub(crate) fn is_connected(&self) -> bool {
        self.client.state() == SessionState::SyncConnected
    }

    /// Whether the session is over for good.
    pub(crate) fn is_over(&self) -> bool {
        self.client.state().is_terminated()
    }
}

/// Hands out the current session, opening a new one when the last has ended.
#[derive(Debug)]
pub(crate) struct Sessions {
    options: ZkOptions,
    current: Mutex<Option<Arc<Session>>>,
    /// The application's client, until its session is first used: with one,
    /// the driver has that session only and opens none of its own.
    given: Option<std::sync::Mutex<Option<Client>>>,
}

impl Sessions {
    pub(crate) fn new(options: ZkOptions) -> Self {
        Self {
            options,
            current: Mutex::new(None),
            given: None,
        }
    }

    /// The sessions of a driver on the application's `client`: that one only.
    pub(crate) fn given(options: ZkOptions, client: Client) -> Self {
        Self {
            options,
            current: Mutex::new(None),
            given: Some(std::sync::Mutex::new(Some(client))),
        }
    }

    pub(crate) fn options(&self) -> &ZkOptions {
        &self.options
    }

    /// The ACLs of every node lockkit creates: the `digest` identity's only when
    /// the URL has credentials, else open.
    pub(crate) fn acls(&self) -> Acls<'static> {
        if self.options.digest.is_some() {
            Acls::creator_all()
        } else {
            Acls::anyone_all()
        }
    }

    /// The live session, or a new one if there is none.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] when no server accepts a session.
    pub(crate) async fn get(&self) -> Result<Arc<Session>> {
        let mut current = self.current.lock().await;
        if let Some(s) = current.as_ref()
            && !s.is_over()
        {
            return Ok(s.clone());
        }
        let client = match &self.given {
            None => self.connect().await?,
            Some(given) => lock(given).take().ok_or_else(given_session_ended)?,
        };
        let session = Arc::new(self.start(client).await?);
        *current = Some(session.clone());
        Ok(session)
    }

    /// A new session on the servers of the options.
    async fn connect(&self) -> Result<Client> {
        let o = &self.options;
        let mut connector = Client::connector()
            .with_session_timeout(o.session_timeout)
            .with_connection_timeout(o.timeouts.connect)
            .with_fail_eagerly();
        if let Some((user, password)) = &o.digest {
            connector = connector.with_auth("digest", format!("{user}:{password}").as_bytes());
        }
        // Without the `tls` feature no URL gets here with TLS settings.
        #[cfg(feature = "tls")]
        let tls = o.tls.as_ref().map(tls_options).transpose()?;
        let connecting = async move {
            #[cfg(feature = "tls")]
            if let Some(tls) = tls {
                return connector.with_tls(tls).secure_connect(&o.hosts).await;
            }
            connector.connect(&o.hosts).await
        };
        let started = tokio::time::Instant::now();
        let e = match tokio::time::timeout(o.timeouts.connect, connecting).await {
            Ok(Ok(client)) => return Ok(client),
            Ok(Err(e)) => connect_error(o, e, started.elapsed()),
            Err(_) => LockError::Connection {
                driver: crate::driver::NAME,
                message: format!(
                    "no ZooKeeper session with {}: no answer within {} (connect_timeout_ms)",
                    o.hosts,
                    lockkit_core::human_duration(o.timeouts.connect)
                ),
                source: None,
            },
        };
        // A plain server answers the four-letter `srvr` (on by default).
        match o.hosts.split(',').next().filter(|_| o.tls.is_some()) {
            #[cfg(feature = "tls")]
            Some(host) => Err(lockkit_core::tls::hint_if_plain(e, host, b"srvr", "zk").await),
            _ => Err(e),
        }
    }

    /// Starts using `client`'s session: creates the root if needed, and follows
    /// the session's state.
    async fn start(&self, client: Client) -> Result<Session> {
        let o = &self.options;
        // The root (`<chroot>/lockkit`) is persistent; each key's node is a
        // container under it, which the server deletes once its queue is empty.
        // Look first: creating under a node another identity owns is refused
        // even when the node exists.
        let exists = tokio::time::timeout(o.timeouts.request, client.check_stat(&o.root))
            .await
            .unwrap_or(Err(ZkError::Timeout))
            .map_err(|e| zk_error(&format!("looking up {}", o.root), e))?;
        if exists.is_none() {
            let root = CreateMode::Persistent.with_acls(self.acls());
            tokio::time::timeout(o.timeouts.request, client.mkdir(&o.root, &root))
                .await
                .unwrap_or(Err(ZkError::Timeout))
                .map_err(|e| zk_error(&format!("creating {}", o.root), e))?;
        }
        let id = client.session_id().0;
        let drops = Arc::new(Drops::default());
        tokio::spawn(follow_state(client.state_watcher(), id, drops.clone()));
        tracing::debug!(session = format_args!("{id:#x}"), timeout = ?client.session_timeout(), "ZooKeeper session opened");
        Ok(Session {
            client,
            id,
            request_timeout: o.timeouts.request,
            drops,
        })
    }
}

/// Why a driver on the application's client has no session any more.
fn given_session_ended() -> LockError {
    LockError::Connection {
        driver: crate::driver::NAME,
        message: "the application's ZooKeeper session has ended, and a driver built on \
                  the application's client opens no session of its own: build a new \
                  driver on a new client"
            .to_owned(),
        source: None,
    }
}

/// The ZooKeeper client's TLS options from the URL's checked PEM files. ring is
/// installed as the process's rustls provider first (unless the application
/// installed one), as the other drivers do.
#[cfg(feature = "tls")]
fn tls_options(tls: &lockkit_core::tls::TlsFiles) -> Result<zookeeper_client::TlsOptions> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let bad = |what: &str, e: zookeeper_client::Error| LockError::Config(format!("{what}: {e}"));
    let mut options = zookeeper_client::TlsOptions::new();
    if let Some(ca) = &tls.ca {
        let pem = String::from_utf8_lossy(&ca.pem);
        options = options
            .with_pem_ca(&pem)
            .map_err(|e| bad(&format!("tls_ca={}", ca.path), e))?;
    }
    if let Some(id) = &tls.identity {
        let cert = String::from_utf8_lossy(&id.cert.pem);
        let key = String::from_utf8_lossy(&id.key.pem);
        options = options.with_pem_identity(&cert, &key).map_err(|e| {
            bad(
                &format!("tls_cert={}, tls_key={}", id.cert.path, id.key.path),
                e,
            )
        })?;
    }
    Ok(options)
}

/// Why no session could be opened; `took` tells a refused connection (at once)
/// from a server that does not answer (the connect timeout).
fn connect_error(o: &ZkOptions, e: zookeeper_client::Error, took: Duration) -> LockError {
    match e {
        zookeeper_client::Error::AuthFailed => LockError::Config(format!(
            "ZooKeeper at {o} refused the digest credentials in the URL"
        )),
        zookeeper_client::Error::NoHosts if o.tls.is_some() => LockError::Connection {
            driver: crate::driver::NAME,
            message: format!(
                "no ZooKeeper session with {}: no server completed the TLS handshake \
                 and the session; check that tls_ca names the CA that signed the servers' \
                 certificates (which must name the host in the URL), that the port is their \
                 secureClientPort, and, for a server with ssl.clientAuth=need, that \
                 tls_cert and tls_key are a certificate it trusts",
                o.hosts
            ),
            source: Some(Box::new(e)),
        },
        zookeeper_client::Error::NoHosts if took < o.timeouts.connect / 2 => {
            LockError::Connection {
                driver: crate::driver::NAME,
                message: format!(
                    "no ZooKeeper session with {}: every server refused or closed the \
                     connection, or could not be reached; is ZooKeeper running there? (A \
                     secureClientPort accepts TLS only: use zks://…?tls_ca=PATH)",
                    o.hosts
                ),
                source: Some(Box::new(e)),
            }
        }
        zookeeper_client::Error::NoHosts | zookeeper_client::Error::Timeout => {
            LockError::Connection {
                driver: crate::driver::NAME,
                message: format!(
                    "no ZooKeeper session with {}: no server answered within {} \
                     (connect_timeout_ms); is ZooKeeper running there?",
                    o.hosts,
                    lockkit_core::human_duration(o.timeouts.connect)
                ),
                source: Some(Box::new(e)),
            }
        }
        e => LockError::Connection {
            driver: crate::driver::NAME,
            message: format!("no ZooKeeper session with {}: {e}", o.hosts),
            source: Some(Box::new(e)),
        },
    }
}

/// Follows one session's state until it ends, signalling its holds lost when the
/// connection drops or the session ends.
async fn follow_state(mut states: zookeeper_client::StateWatcher, session: i64, drops: Arc<Drops>) {
    loop {
        let state = states.changed().await;
        let why = match state {
            SessionState::Disconnected => {
                "the connection to ZooKeeper dropped; the session may expire before it is back"
            }
            SessionState::Expired => "the ZooKeeper session expired",
            SessionState::AuthFailed => "ZooKeeper authentication failed",
            SessionState::Closed => "the ZooKeeper session was closed",
            _ => {
                tracing::debug!(
                    session = format_args!("{session:#x}"),
                    ?state,
                    "ZooKeeper session state"
                );
                continue;
            }
        };
        if state == SessionState::Closed {
            // The driver was dropped: the normal end.
            tracing::debug!(session = format_args!("{session:#x}"), "{why}");
        } else {
            tracing::warn!(session = format_args!("{session:#x}"), ?state, "{why}");
        }
        drops.dropped(why, state.is_terminated());
        if state.is_terminated() {
            return;
        }
    }
}
