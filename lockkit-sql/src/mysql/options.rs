//! [`MySqlOptions`]: where the lock table lives.

use std::fmt;
use std::str::FromStr;

use lockkit_core::{LockError, redact_url};
use sqlx::mysql::MySqlConnectOptions;

use crate::table::{ServerSettings, ServerUrl, TlsNames, validate_table};

/// How a MySQL URL is read.
const URL: ServerUrl = ServerUrl {
    schemes: &["mysql", "mariadb"],
    example: "mysql://user:password@host:3306/db",
    client_options: &[
        "sslmode",
        "ssl-mode",
        "sslca",
        "ssl-ca",
        "sslcert",
        "ssl-cert",
        "sslkey",
        "ssl-key",
        "charset",
        "collation",
        "statement-cache-capacity",
        "socket",
        "timezone",
        "time-zone",
    ],
    session: "get_lock",
    server: "MySQL",
    tls: TlsNames {
        mode: "ssl-mode",
        ca: "ssl-ca",
        cert: "ssl-cert",
        key: "ssl-key",
        disabled: "DISABLED",
        verify: "VERIFY_IDENTITY",
        require: "REQUIRED",
        aliases: &[
            ("sslmode", "ssl-mode"),
            ("sslca", "ssl-ca"),
            ("sslcert", "ssl-cert"),
            ("sslkey", "ssl-key"),
        ],
    },
};

/// Settings for [`super::MySqlDriver`]. `Debug` never shows the password.
#[derive(Clone)]
pub struct MySqlOptions {
    pub(super) connect: MySqlConnectOptions,
    pub(super) settings: ServerSettings,
}

impl fmt::Debug for MySqlOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MySqlOptions")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl MySqlOptions {
    /// Parses `mysql://…` or `mariadb://…` (the scheme in any case).
    ///
    /// lockkit's options: `table=NAME`, `mode=lease|get_lock`,
    /// `connect_timeout_ms=N` (connecting, and waiting for a pooled connection;
    /// default 5000) and `request_timeout_ms=N` (each statement; default 5000).
    /// The MySQL client's own options (`ssl-mode`, `ssl-ca`, `ssl-cert`, `ssl-key`,
    /// `charset`, `timezone`, …) go to it as written. Any other option is an error
    /// that names it.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong (the password redacted).
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let (settings, client_url) = ServerSettings::parse(url, URL)?;
        let connect = MySqlConnectOptions::from_str(&client_url)
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

    /// Session-bound `GET_LOCK` locks instead of leases: no TTL, freed when the
    /// holding session ends.
    pub fn get_lock(mut self, on: bool) -> Self {
        self.settings.session_mode = on;
        self
    }

    /// The connection pool size (default 8; 32 in `GET_LOCK` mode, where every held
    /// lock keeps a connection).
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
