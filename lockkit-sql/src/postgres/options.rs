//! [`PgOptions`]: where the lock table lives.

use std::fmt;
use std::str::FromStr;

use lockkit_core::{LockError, redact_url};
use sqlx::postgres::PgConnectOptions;

use crate::table::{ServerSettings, ServerUrl, TlsNames, validate_table};

/// How a PostgreSQL URL is read.
const URL: ServerUrl = ServerUrl {
    schemes: &["postgres", "postgresql"],
    example: "postgres://user:password@host:5432/db",
    client_options: &[
        "sslmode",
        "ssl-mode",
        "sslrootcert",
        "ssl-root-cert",
        "ssl-ca",
        "sslcert",
        "ssl-cert",
        "sslkey",
        "ssl-key",
        "statement-cache-capacity",
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "application_name",
        "options",
    ],
    session: "advisory",
    server: "PostgreSQL",
    tls: TlsNames {
        mode: "sslmode",
        ca: "sslrootcert",
        cert: "sslcert",
        key: "sslkey",
        disabled: "disable",
        verify: "verify-full",
        require: "require",
        aliases: &[
            ("ssl-mode", "sslmode"),
            ("ssl-root-cert", "sslrootcert"),
            ("ssl-ca", "sslrootcert"),
            ("ssl-cert", "sslcert"),
            ("ssl-key", "sslkey"),
        ],
    },
};

/// Settings for [`super::PgDriver`]. `Debug` never shows the password.
#[derive(Clone)]
pub struct PgOptions {
    pub(super) connect: PgConnectOptions,
    pub(super) settings: ServerSettings,
}

impl fmt::Debug for PgOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgOptions")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl PgOptions {
    /// Parses `postgres://…` or `postgresql://…` (the scheme in any case).
    ///
    /// lockkit's options: `table=NAME`, `mode=lease|advisory`,
    /// `connect_timeout_ms=N` (connecting, and waiting for a pooled connection;
    /// default 5000) and `request_timeout_ms=N` (each statement; default 5000).
    /// The Postgres client's own options (`sslmode`, `sslrootcert`, `sslcert`,
    /// `sslkey`, `application_name`, `options`, …) go to it as written. Any other
    /// option is an error that names it.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong (the password redacted).
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let (settings, client_url) = ServerSettings::parse(url, URL)?;
        let connect = PgConnectOptions::from_str(&client_url)
            .map_err(|e| LockError::invalid_url(url, redact_url(&e.to_string())))?;
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

    /// Session-bound advisory locks instead of leases (see the `session` docs in
    /// the README): no TTL, freed when the holding session ends.
    pub fn advisory(mut self, on: bool) -> Self {
        self.settings.session_mode = on;
        self
    }

    /// The connection pool size (default 8; 32 in advisory mode, where every held
    /// lock keeps a connection), plus one listener connection.
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
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            connect: PgConnectOptions::new(),
            settings: ServerSettings::new("postgres://", URL),
        }
    }
}
