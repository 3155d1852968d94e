//! [`MySqlOptions`]: where the lock table lives.

use std::fmt;
use std::str::FromStr;

use lockkit_core::{LockError, redact_url};
use sqlx::mysql::MySqlConnectOptions;

use crate::table::{ServerSettings, take_lockkit_params, validate_table};

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
        let settings = ServerSettings::from_url(url, &params, "get_lock")?;
        let connect = MySqlConnectOptions::from_str(&params.client_url)
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
