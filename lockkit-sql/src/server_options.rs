//! [`ServerOptions`]: the settings of a database server's drivers (PostgreSQL,
//! MySQL), one type whose [`ServerKind`] says how that database's URL is read.

use std::fmt;
use std::str::FromStr;

use lockkit_core::LockError;
use lockkit_core::url::redact_urls_in;
use sqlx::{Connection, Database, Pool};

use crate::table::{ServerSettings, ServerUrl, validate_table};

/// The client's connect options of a database.
pub(crate) type ConnectOptions<DB> = <<DB as Database>::Connection as Connection>::Options;

/// A database server lockkit reaches through sqlx: how its URL is read.
pub trait ServerKind: Send + Sync + 'static {
    /// The sqlx database.
    type Db: Database;
    /// The lease driver's name in messages (`"postgres"`).
    const NAME: &'static str;
    /// The options type's name, for `Debug` (`"PgOptions"`).
    const OPTIONS: &'static str;
    /// How its URL is read.
    const URL: ServerUrl;

    /// The client's connect options as lockkit uses them, from what the URL
    /// says.
    fn client_defaults(options: ConnectOptions<Self::Db>) -> ConnectOptions<Self::Db> {
        options
    }
}

/// Settings for a database server's drivers. `Debug` never shows the password.
pub struct ServerOptions<K: ServerKind> {
    pub(crate) connect: ConnectOptions<K::Db>,
    pub(crate) settings: ServerSettings,
}

impl<K: ServerKind> Clone for ServerOptions<K> {
    fn clone(&self) -> Self {
        Self {
            connect: self.connect.clone(),
            settings: self.settings.clone(),
        }
    }
}

impl<K: ServerKind> fmt::Debug for ServerOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(K::OPTIONS)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl<K: ServerKind> ServerOptions<K> {
    /// Parses the database's URL (`postgres://…` or `postgresql://…`; `mysql://…`
    /// or `mariadb://…`; the scheme in any case).
    ///
    /// lockkit's options: `table=NAME`, `mode=lease|advisory` (PostgreSQL) or
    /// `mode=lease|get_lock` (MySQL), `key=hashed|raw` (with a session mode: see
    /// [`raw_keys`](Self::raw_keys)), `connect_timeout_ms=N` (connecting, and
    /// waiting for a pooled connection; default 5000) and `request_timeout_ms=N`
    /// (each statement; default 5000). The database client's own options (TLS:
    /// `sslmode`, `sslrootcert`, `sslcert`, `sslkey` or `ssl-mode`, `ssl-ca`,
    /// `ssl-cert`, `ssl-key`; `application_name`, `options`, `charset`,
    /// `timezone`, …) go to it as written. Any other option is an error that
    /// names it.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong (the password redacted).
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let (settings, client_url) = ServerSettings::parse(url, K::URL)?;
        let connect = <ConnectOptions<K::Db> as FromStr>::from_str(&client_url)
            .map_err(|e| LockError::invalid_url(url, redact_urls_in(&e.to_string())))?;
        let connect = K::client_defaults(connect);
        Ok(Self { connect, settings })
    }

    /// Uses the lease table `name` (letters, digits and `_`).
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] if `name` is not a plain SQL identifier.
    pub fn table(mut self, name: &str) -> Result<Self, LockError> {
        self.settings.table = validate_table(name)?;
        Ok(self)
    }

    /// The connection pool size (default 8; 32 in a session-bound mode, advisory
    /// or `GET_LOCK`, where every held lock keeps a connection). PostgreSQL opens
    /// one listener connection besides. A pooled connection is pinged before use
    /// only after it sat idle for a second or more (sqlx pings each connection it
    /// takes back), so a statement in steady use costs one round trip, not two.
    pub fn max_connections(mut self, n: u32) -> Self {
        self.settings.pool_size = Some(n.max(1));
        self
    }

    /// The pool size this driver will open (see
    /// [`max_connections`](Self::max_connections)).
    pub fn pool_size(&self) -> u32 {
        self.settings.pool_size()
    }

    /// The lease table's name.
    pub fn table_name(&self) -> &str {
        &self.settings.table
    }

    /// In a session-bound mode, names each lock by its key itself (`key=raw`),
    /// so that it is the lock other clients take by that name:
    /// `pg_advisory_lock(n)` for the key `n` (a 64-bit integer, as written), or
    /// `GET_LOCK('name', …)` for the key `name` (at most 64 characters). By
    /// default (`key=hashed`) the lock is named by a hash of the table and the
    /// key, which never meets another client's. Semaphores need derived names and
    /// are refused (`Unsupported`) with raw keys; a key that cannot name such a
    /// lock is a [`LockError::Config`] error when it is acquired.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] when the driver holds leases, not session locks.
    pub fn raw_keys(mut self, on: bool) -> Result<Self, LockError> {
        if on && !self.settings.session_mode {
            return Err(LockError::Config(format!(
                "raw keys name the server's own session locks: use them with mode={}",
                K::URL.session
            )));
        }
        self.settings.raw_keys = on;
        Ok(self)
    }

    /// Session-bound locks instead of leases, or not.
    pub(crate) fn session_mode(mut self, on: bool) -> Self {
        self.settings.session_mode = on;
        self.settings.raw_keys &= on;
        self
    }

    /// Opens the connection pool (see [`crate::connect::open_pool`]).
    pub(crate) async fn pool(&self) -> lockkit_core::Result<Pool<K::Db>> {
        self.pool_with(|pool| pool).await
    }

    /// [`pool`](Self::pool), with `sessions` adding to the pool's options (see
    /// [`crate::connect::open_pool`]).
    pub(crate) async fn pool_with(
        &self,
        sessions: impl FnOnce(sqlx::pool::PoolOptions<K::Db>) -> sqlx::pool::PoolOptions<K::Db>,
    ) -> lockkit_core::Result<Pool<K::Db>> {
        crate::connect::open_pool::<K::Db>(K::NAME, &self.settings, self.connect.clone(), sessions)
            .await
    }
}
