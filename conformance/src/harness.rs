//! What a driver supplies to the suite.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use lockkit_core::sync::lock;
use lockkit_core::{Capabilities, LockDriver, LockError, LockKey, Locker};

use crate::runner::HolderCommand;

/// Supplies drivers and fault injection to the conformance cases.
#[async_trait]
pub trait Harness: Send + Sync + 'static {
    /// A fresh driver with its own connection, as if from another process.
    async fn driver(&self) -> Result<Arc<dyn LockDriver>, LockError>;

    /// Makes whoever holds `key` lose it behind its back (delete the key, expire
    /// the session).
    async fn vanish(&self, key: &LockKey) -> Result<(), LockError>;

    /// A URL another process can connect with to reach the same backend; `None`
    /// when the backend is process-local.
    fn holder_url(&self) -> Option<String> {
        None
    }
}

/// A [`Harness`] the [`crate::main!`] suites can build, once per test.
#[async_trait]
pub trait TestHarness: Harness + Sized {
    /// Starts the backend (a temp file, a throwaway server) and the harness.
    async fn start() -> Self;

    /// Connects to `url` from a child process (see [`Harness::holder_url`]).
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError>;
}

/// A backend reached by URL, which is what most drivers are: implement this and
/// run the suite with [`UrlHarness`]:
///
/// ```ignore
/// struct Pg;
///
/// #[lockkit_core::async_trait]
/// impl UrlBackend for Pg {
///     type Server = lockkit_testkit::Postgres;
///     async fn start() -> (Self::Server, String) {
///         let server = lockkit_testkit::Postgres::start().await.unwrap();
///         let url = server.url();
///         (server, url)
///     }
///     async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
///         lockkit_sql::postgres::connect(PgOptions::from_url(url)?).await
///     }
/// }
///
/// lockkit_conformance::main! { postgres: UrlHarness<Pg>, claims CLAIMS; }
/// ```
///
/// Holds vanish through [`LockDriver::force_release`]; child processes connect
/// with the same URL.
#[async_trait]
pub trait UrlBackend: Send + Sync + 'static {
    /// Whatever must stay alive for the test (a server handle, a temp dir).
    type Server: Send + Sync + 'static;

    /// Starts a throwaway backend and returns it with the URL that reaches it.
    async fn start() -> (Self::Server, String);

    /// Connects a fresh driver to `url`.
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError>;
}

/// The [`Harness`] of a [`UrlBackend`].
pub struct UrlHarness<B: UrlBackend> {
    _server: B::Server,
    url: String,
    admin: Arc<dyn LockDriver>,
}

impl<B: UrlBackend> std::fmt::Debug for UrlHarness<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlHarness")
            .field("url", &lockkit_core::redact_url(&self.url))
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<B: UrlBackend> Harness for UrlHarness<B> {
    async fn driver(&self) -> Result<Arc<dyn LockDriver>, LockError> {
        B::connect(&self.url).await
    }

    async fn vanish(&self, key: &lockkit_core::LockKey) -> Result<(), LockError> {
        self.admin.force_release(key).await.map(|_| ())
    }

    fn holder_url(&self) -> Option<String> {
        Some(self.url.clone())
    }
}

/// How long a harness keeps trying its first connection to a new backend.
const FIRST_CONNECT: std::time::Duration = std::time::Duration::from_secs(15);

#[async_trait]
impl<B: UrlBackend> TestHarness for UrlHarness<B> {
    #[allow(clippy::panic)] // Test setup: a backend that cannot start fails the test.
    async fn start() -> Self {
        let (server, url) = B::start().await;
        // A server that just started may not finish its first handshake in the
        // client's connect timeout on a loaded machine (a JVM's first TLS session
        // is slow): the first connection is retried for a while.
        let ready_by = tokio::time::Instant::now() + FIRST_CONNECT;
        let admin = loop {
            match B::connect(&url).await {
                Ok(admin) => break admin,
                Err(e) if e.is_retryable() && tokio::time::Instant::now() < ready_by => {
                    tracing::debug!(error = %e, "the test backend is not ready yet");
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
                Err(e) => panic!("cannot connect to the test backend: {e}"),
            }
        };
        Self {
            _server: server,
            url,
            admin,
        }
    }

    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        B::connect(url).await
    }
}

static RUN: AtomicU64 = AtomicU64::new(0);

/// What a case gets: the harness, and where to run a holder process.
pub struct Ctx {
    pub(crate) harness: Arc<dyn Harness>,
    pub(crate) holder: Option<HolderCommand>,
    pub(crate) caps: Capabilities,
    prefix: String,
    /// Every key handed out, purged when the case ends.
    keys: std::sync::Mutex<Vec<String>>,
    /// A driver that only looks ([`LockDriver::inspect`]), connected once.
    pub(crate) inspector: tokio::sync::OnceCell<Arc<dyn LockDriver>>,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Ctx {
    pub(crate) fn new(
        harness: Arc<dyn Harness>,
        holder: Option<HolderCommand>,
        caps: Capabilities,
        case: &str,
    ) -> Self {
        // Unique per run, so a live backend can be checked repeatedly.
        let run = RUN.fetch_add(1, Ordering::Relaxed);
        let nonce = lockkit_core::OwnerId::new().to_hex();
        let prefix = format!("lockkit-conformance/{}-{run}/{case}", &nonce[..8]);
        Self {
            harness,
            holder,
            caps,
            prefix,
            keys: std::sync::Mutex::default(),
            inspector: tokio::sync::OnceCell::new(),
        }
    }

    /// A key unique to this case run, purged from the backend when the case ends
    /// (see [`Ctx::purge_keys`]).
    pub fn key(&self, name: &str) -> String {
        let key = format!("{}/{name}", self.prefix);
        let mut keys = lock(&self.keys);
        if !keys.contains(&key) {
            keys.push(key.clone());
        }
        key
    }

    /// Removes every key this case used from the backend, fencing counters and
    /// all ([`lockkit_core::LockDriver::purge`]), so that a live backend checked
    /// again and again keeps nothing. Best effort: a driver that cannot purge, or
    /// a backend a fault case left down, keeps them.
    pub async fn purge_keys(&self) {
        let keys = std::mem::take(&mut *lock(&self.keys));
        if keys.is_empty() {
            return;
        }
        let Ok(driver) = self.harness.driver().await else {
            return;
        };
        for key in keys {
            let Ok(key) = LockKey::new(key) else { continue };
            // A busy backend (SQLite's write lock, under load) may refuse a try:
            // three, 100 ms apart.
            for attempt in 1..=3 {
                match driver.purge(&key).await {
                    Ok(_) => break,
                    Err(LockError::Unsupported { .. }) => return,
                    Err(error) => {
                        tracing::debug!(%key, %error, attempt, "could not purge a conformance key");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                }
            }
        }
    }

    /// A new client over a fresh driver.
    pub async fn locker(&self) -> Result<Locker, LockError> {
        Ok(Locker::new(self.harness.driver().await?))
    }

    /// Makes the hold on `key` vanish behind its holder's back; a harness that
    /// cannot do that skips the case.
    pub async fn vanish(&self, key: &lockkit_core::LockKey) -> Result<(), crate::CaseError> {
        match self.harness.vanish(key).await {
            Ok(()) => Ok(()),
            Err(LockError::Unsupported { .. }) => Err(crate::CaseError::Skipped(
                "the harness cannot make a hold vanish (no force_release)".into(),
            )),
            Err(e) => Err(crate::CaseError::Failed(format!(
                "could not make the hold vanish: {e}"
            ))),
        }
    }

    /// Skips the case unless holds expire on the backend.
    pub fn require_lease_expiry(&self) -> Result<(), crate::CaseError> {
        if self.caps.lease_expiry {
            Ok(())
        } else {
            Err(crate::CaseError::Skipped(
                "holds are session-bound and never expire on the backend".into(),
            ))
        }
    }

    /// The driver's capabilities.
    pub fn capabilities(&self) -> Capabilities {
        self.caps
    }
}
