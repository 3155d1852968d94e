//! [`EtcdDriver`]: the [`LockDriver`] over one etcd cluster. Each operation is
//! done by the module named for it: acquire by [`super::contender`] (over
//! [`super::queue`]), renewals by [`super::renew`], release by
//! [`super::release`], inspection by [`super::inspect`]; the shared connection is
//! [`super::connection`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::Contention;
use lockkit_core::driver::{ChangeSignal, Driver, Inspect, Inspection};
use lockkit_core::{
    AcquireRequest, Capabilities, Grant, LockDriver, LockKey, OwnerId, Renewal, Result, WakeUp,
    async_trait,
};
use tokio::time::Instant;

use super::connection::Inner;
use super::contender::Contending;
use super::options::EtcdOptions;
use super::{at_once, inspect, list, observe, proclaim, release, renew};

/// What an HTTP/2 client sends first: a plain gRPC server answers it.
#[cfg(feature = "tls")]
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The driver's name, in its errors.
pub(crate) const NAME: &str = "etcd";

/// The etcd driver. Cheap to clone; clones share the connection, the leases and
/// the holds.
///
/// See the [crate docs](crate) for the key layout, the lease mapping and what
/// survives a failover.
#[derive(Clone)]
pub struct EtcdDriver {
    pub(crate) inner: Arc<Inner>,
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
    /// [`lockkit_core::LockError::Connection`] if no endpoint answers within 5 s,
    /// or the credentials are refused.
    pub async fn connect(options: EtcdOptions) -> Result<Self> {
        let tls_at = options
            .tls
            .is_some()
            .then(|| options.endpoints.first().and_then(|e| e.split_once("://")))
            .flatten()
            .map(|(_, host_port)| host_port.to_owned());
        match Inner::connect(options).await {
            Ok(inner) => Ok(Self {
                inner: Arc::new(inner),
            }),
            // A plain member answers HTTP/2's preface with its SETTINGS frame.
            Err(e) => Err(match tls_at {
                #[cfg(feature = "tls")]
                Some(at) => lockkit_core::tls::hint_if_plain(e, &at, HTTP2_PREFACE, "etcd").await,
                _ => e,
            }),
        }
    }

    /// The driver on the application's `etcd_client::Client`: its endpoints,
    /// credentials and TLS settings are the client's. Only `options`' lockkit
    /// settings are used (prefix, timeouts). The client is checked with one
    /// request.
    ///
    /// The driver uses clones of the client (they share its channel) for its
    /// leases, keep-alives and watches; it never closes the client. Build the
    /// client with `ConnectOptions::with_require_leader(true)`, as lockkit's own
    /// is built: then a member cut off from its leader ends the keep-alive and
    /// watch streams at once, and holds are signalled lost then, not at lease
    /// expiry.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use lockkit::Locker;
    /// use lockkit::etcd::{EtcdDriver, EtcdOptions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let connect = etcd_client::ConnectOptions::new().with_require_leader(true);
    /// let client = etcd_client::Client::connect(["127.0.0.1:2379"], Some(connect)).await?;
    /// let options = EtcdOptions::default().with_prefix("app")?;
    /// let locks = Locker::new(Arc::new(EtcdDriver::from_client(client, options).await?));
    /// locks.lock("orders").await?.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`lockkit_core::LockError::Connection`] if the client cannot reach the
    /// cluster within the connect timeout.
    pub async fn from_client(client: etcd_client::Client, options: EtcdOptions) -> Result<Self> {
        crate::connection::probe(&client, &options).await?;
        Ok(Self {
            inner: Arc::new(Inner::on(client, options)),
        })
    }
}

impl Driver for EtcdDriver {
    const NAME: &'static str = NAME;
    const URL_SCHEMES: &'static [&'static str] = crate::options::SCHEMES;
    type Options = EtcdOptions;

    fn options(url: &str) -> Result<EtcdOptions> {
        EtcdOptions::from_url(url)
    }

    async fn connect(options: EtcdOptions) -> Result<Arc<dyn LockDriver>> {
        Ok(Arc::new(EtcdDriver::connect(options).await?))
    }
}

#[async_trait]
impl LockDriver for EtcdDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
            .with_shared(true)
            .with_permits(true)
            .with_fair(true)
            .with_inspect(Inspect::HoldersAndWaiters)
            .with_wake_up(WakeUp::Notify)
            .with_proclaim(true)
            .with_list(true)
            .with_watch(true)
            .with_several_keys_at_once(true)
    }

    async fn try_acquire_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        at_once::take_all(&self.inner, reqs).await
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        inspect::inspect(&self.inner, key).await
    }

    async fn watch(&self, key: &LockKey) -> Result<ChangeSignal> {
        observe::watch(&self.inner, key).await
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
        list::list(&self.inner, prefix, limit).await
    }

    async fn proclaim(&self, key: &LockKey, owner: &OwnerId, text: &str) -> Result<()> {
        proclaim::proclaim(&self.inner, key, owner, text).await
    }

    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>> {
        Ok(Contending::new(&self.inner, req)?.contention())
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        renew::extend_one(&self.inner, key, owner, ttl).await
    }

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        renew::extend_many(&self.inner, renewals).await
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        release::release(&self.inner, key, owner).await
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        release::force_release(&self.inner, key).await
    }

    /// Deletes every entry of the key's queue. The token is the holder's
    /// create_revision, etcd's own counter: nothing else is left to remove.
    async fn purge(&self, key: &LockKey) -> Result<()> {
        release::purge(&self.inner, key).await
    }
}
