//! [`PgOptions`]: where the lock table lives.

use std::fmt;
use std::str::FromStr;

use lockkit_core::{LockError, redact_url};
use sqlx::postgres::PgConnectOptions;

use crate::table::{DEFAULT_TABLE, take_lockkit_params, validate_table};

/// Settings for [`super::PgDriver`]. `Debug` never shows the password.
#[derive(Clone)]
pub struct PgOptions {
    pub(super) connect: PgConnectOptions,
    pub(super) table: String,
    pub(super) max_connections: u32,
    pub(super) session_mode: bool,
    shown: String,
}

impl fmt::Debug for PgOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgOptions")
            .field("url", &self.shown)
            .field("table", &self.table)
            .field("max_connections", &self.max_connections)
            .field("session_mode", &self.session_mode)
            .finish()
    }
}

impl PgOptions {
    /// Parses `postgres://…` or `postgresql://…`. `table=NAME` and `mode=lease|advisory`
    /// are lockkit's; every other parameter (`sslmode`, …) goes to the Postgres client.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong (the password redacted).
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(LockError::invalid_url(
                url,
                "a PostgreSQL URL starts with postgres://",
            ));
        }
        let params = take_lockkit_params(url)?;
        let session_mode = params.session_mode(url, "advisory")?;
        let connect = PgConnectOptions::from_str(&params.client_url)
            .map_err(|e| LockError::invalid_url(url, redact_url(&e.to_string())))?;
        Ok(Self {
            connect,
            table: params.table,
            max_connections: if session_mode { 32 } else { 8 },
            session_mode,
            shown: redact_url(url),
        })
    }

    /// Uses the lease table `name` (letters, digits and `_`).
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] if `name` is not a plain SQL identifier.
    pub fn table(mut self, name: &str) -> Result<Self, LockError> {
        self.table = validate_table(name)?;
        Ok(self)
    }

    /// Session-bound advisory locks instead of leases (see the `session` docs in
    /// the README): no TTL, freed when the holding session ends.
    pub fn advisory(mut self, on: bool) -> Self {
        self.session_mode = on;
        self
    }

    /// The connection pool size (default 8; 32 in advisory mode, where every held
    /// lock keeps a connection), plus one listener connection.
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// The lease table's name.
    pub fn table_name(&self) -> &str {
        &self.table
    }
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            connect: PgConnectOptions::new(),
            table: DEFAULT_TABLE.to_string(),
            max_connections: 8,
            session_mode: false,
            shown: "postgres://".into(),
        }
    }
}
