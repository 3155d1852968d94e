//! The connection an [`EtcdDriver`](super::EtcdDriver) and its clones share:
//! the etcd client set up from [`EtcdOptions`] (endpoints, credentials, TLS,
//! `require_leader`) and checked with one request, and what is kept on it (the
//! leases, the holds, the sweeper and watch tasks). [`Inner`] and all its
//! methods live here; the recipe's modules are functions over it.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions, GetOptions};
use lockkit_core::url::Timeouts;
use lockkit_core::{LockError, Result};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::error::{connection, describe};
use super::holds::{Holds, sweep};
use super::lease::{Lease, Leases};
use super::options::EtcdOptions;
use super::request::within;
use super::tls;
use super::watch::{self, Progress};

/// One connected driver's state.
pub(crate) struct Inner {
    pub(crate) client: Client,
    pub(crate) prefix: String,
    pub(crate) leases: Leases,
    /// Connecting, and each request.
    pub(crate) timeouts: Timeouts,
    pub(crate) holds: Arc<Holds>,
    /// The watch stream's progress answers: is it alive?
    pub(crate) progress: Arc<Progress>,
    /// Existence-check txns sent by renewals (the fallback when the watch
    /// stream cannot vouch for a hold): zero in the steady state.
    pub(crate) existence_checks: AtomicU64,
    sweeper: JoinHandle<()>,
    watcher: JoinHandle<()>,
    /// The URL, password redacted.
    pub(crate) shown: String,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.sweeper.abort();
        self.watcher.abort();
    }
}

impl Inner {
    /// Connects to the cluster, checks that it answers, and starts the sweeper
    /// and the watch task.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] if no endpoint answers within the connect
    /// timeout, or the credentials or certificates are refused.
    pub(crate) async fn connect(options: EtcdOptions) -> Result<Self> {
        let client = open(&options).await?;
        Ok(Self::on(client, options))
    }

    /// The connection on `client`, already checked to answer: starts the
    /// sweeper and the watcher.
    pub(crate) fn on(client: Client, options: EtcdOptions) -> Self {
        let shown = options.to_string();
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
        Self {
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
        }
    }

    /// Makes sure `lease` was confirmed by a keep-alive round sent at or after
    /// `since` (one more round if not, counted in the driver's rounds), and
    /// returns when that round was sent. See [`Lease::confirm`].
    pub(crate) async fn confirm(&self, lease: &Lease, since: Instant) -> Result<Instant> {
        lease
            .confirm(&self.client, since, &self.leases.rounds)
            .await
    }

    /// A lease for `ttl`, confirmed to have at least 2/3 of it left, so that a
    /// watchdog renewing at ttl/3 is in time; `None` if the server no longer has
    /// it (it is forgotten, and the next call makes another).
    pub(crate) async fn confirmed_lease(&self, ttl: Duration) -> Result<Option<Arc<Lease>>> {
        let lease = self.leases.for_ttl(&self.client, ttl).await?;
        let since = Instant::now()
            .checked_sub(ttl / 3)
            .unwrap_or_else(Instant::now);
        match self.confirm(&lease, since).await {
            Ok(_) => Ok(Some(lease)),
            Err(e) if e.is_lost() => {
                self.leases.forget(&lease);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// An etcd client set up as `options` say (endpoints, credentials, TLS,
/// `require_leader`, timeouts) and checked with one request.
///
/// # Errors
///
/// [`LockError::Connection`] if no endpoint answers within the connect timeout,
/// or the credentials or certificates are refused.
pub(crate) async fn open(options: &EtcdOptions) -> Result<Client> {
    // require_leader: a member cut off from its leader ends our streams
    // (watches, keep-alives) instead of leaving them quiet.
    let mut connect = ConnectOptions::new()
        .with_timeout(options.timeouts.request)
        .with_connect_timeout(options.timeouts.connect)
        .with_require_leader(true);
    if let Some((user, password)) = &options.user {
        connect = connect.with_user(user.clone(), password.clone());
    }
    // Without the `tls` feature no URL gets here with TLS settings.
    #[cfg(feature = "tls")]
    if let Some(tls) = &options.tls {
        connect = connect.with_tls(tls.options());
    }
    let shown = options.to_string();
    let unreachable = |message: String| {
        let hint = tls::hint(options.tls.as_ref(), &message);
        connection(format!("{shown}: {message}{hint}"))
    };
    let connect_timeout = options.timeouts.connect;
    let client = match tokio::time::timeout(
        connect_timeout,
        Client::connect(&options.endpoints, Some(connect)),
    )
    .await
    {
        Ok(Ok(c)) => c,
        Ok(Err(e)) if refused_credentials(&e) => {
            return Err(LockError::Config(format!(
                "{shown}: etcd refused the credentials in the URL: {}",
                describe(&e)
            )));
        }
        Ok(Err(e)) => return Err(unreachable(describe(&e))),
        Err(_) => {
            return Err(unreachable(format!(
                "no answer within {} (connect_timeout_ms)",
                lockkit_core::human_duration(connect_timeout)
            )));
        }
    };
    // The channel connects lazily: make one request so a wrong URL fails here.
    probe(&client, options).await?;
    Ok(client)
}

/// One request on `client` within the connect timeout, so that a client that
/// cannot reach the cluster fails at connect, not at the first lock.
///
/// # Errors
///
/// [`LockError::Connection`] saying why.
pub(crate) async fn probe(client: &Client, options: &EtcdOptions) -> Result<()> {
    let mut kv = client.kv_client();
    let count_only = GetOptions::new().with_count_only();
    let shown = options.to_string();
    within(
        options.timeouts.connect,
        "connect",
        kv.get(options.prefix.as_bytes().to_vec(), Some(count_only)),
    )
    .await
    .map_err(|e| match e {
        LockError::Connection { message, .. } | LockError::Backend { message, .. } => {
            let hint = tls::hint(options.tls.as_ref(), &message);
            connection(format!("{shown}: {message}{hint}"))
        }
        other => other,
    })?;
    Ok(())
}

/// Whether etcd refused the URL's user name or password: a setting to fix, so a
/// [`LockError::Config`] as on every backend.
fn refused_credentials(e: &etcd_client::Error) -> bool {
    matches!(e, etcd_client::Error::GRpcStatus(s)
        if matches!(s.code(), tonic::Code::InvalidArgument | tonic::Code::Unauthenticated)
            && s.message().contains("authentication failed"))
}
