//! [`MySqlOptions`]: where the lock table lives.

use std::fmt;
use std::str::FromStr;

use lockkit_core::{LockError, redact_url};
use sqlx::mysql::MySqlConnectOptions;

use crate::table::{take_lockkit_params, validate_table};

/// Settings for [`super::MySqlDriver`]. `Debug` never shows the password.
#[derive(Clone)]
pub struct MySqlOptions {
    pub(super) connect: MySqlConnectOptions,
    pub(super) table: String,
    pub(super) max_connections: u32,
    pub(super) session_mode: bool,
    shown: String,
}

impl fmt::Debug for MySqlOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MySqlOptions")
            .field("url", &self.shown)
            .field("table", &self.table)
            .field("max_connections", &self.max_connections)
            .field("session_mode", &self.session_mode)
            .finish()
    }
}

impl MySqlOptions {
    /// Parses `mysql://…` or `mariadb://…`. `table=NAME` and `mode=lease|get_lock`
    /// are lockkit's; every other parameter (`ssl-mode`, …) goes to the MySQL client.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong (the password redacted).
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let rest = url
            .strip_prefix("mysql://")
            .or_else(|| url.strip_prefix("mariadb://"))
            .ok_or_else(|| {
                LockError::invalid_url(url, "a MySQL URL starts with mysql:// or mariadb://")
            })?;
        let params = take_lockkit_params(&format!("mysql://{rest}"))?;
        let session_mode = params.session_mode(url, "get_lock")?;
        let connect = MySqlConnectOptions::from_str(&params.client_url)
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

    /// Session-bound `GET_LOCK` locks instead of leases: no TTL, freed when the
    /// holding session ends.
    pub fn get_lock(mut self, on: bool) -> Self {
        self.session_mode = on;
        self
    }

    /// The connection pool size (default 8; 32 in `GET_LOCK` mode, where every held
    /// lock keeps a connection).
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// The lease table's name.
    pub fn table_name(&self) -> &str {
        &self.table
    }
}
