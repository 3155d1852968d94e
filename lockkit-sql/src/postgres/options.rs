//! [`PgOptions`]: where the lock table lives.

use std::fmt;
use std::str::FromStr;

use lockkit_core::{LockError, redact_url};
use sqlx::postgres::PgConnectOptions;

use crate::table::{DEFAULT_TABLE, ServerSettings, take_lockkit_params, validate_table};

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
        let settings = ServerSettings::from_url(url, &params, "advisory")?;
        let connect = PgConnectOptions::from_str(&params.client_url)
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
            settings: ServerSettings {
                url: "postgres://".into(),
                table: DEFAULT_TABLE.to_string(),
                session_mode: false,
                pool_size: None,
            },
        }
    }
}
