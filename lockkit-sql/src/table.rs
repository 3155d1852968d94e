//! The lease table's name, and the URL parameters every SQL driver shares.

use lockkit_core::LockError;

/// The default lease table.
pub const DEFAULT_TABLE: &str = "lockkit_locks";

/// Checks that `name` is a plain SQL identifier (it is spliced into statements).
///
/// # Errors
///
/// [`LockError::Config`] naming the rule.
pub(crate) fn validate_table(name: &str) -> Result<String, LockError> {
    let ok = name.len() <= 63
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(LockError::Config(format!(
            "table name `{name}` must be 1-63 letters, digits or `_`, not starting with a digit"
        )));
    }
    Ok(name.to_string())
}

/// lockkit's own parameters in a database URL.
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[derive(Debug)]
pub(crate) struct UrlParams {
    /// The URL without lockkit's parameters, for the database client.
    pub(crate) client_url: String,
    /// `table=NAME`.
    pub(crate) table: String,
    /// `mode=…`, if given.
    pub(crate) mode: Option<String>,
}

/// lockkit's settings for a database server, beside the client's own connect
/// options (shared by the PostgreSQL and MySQL options).
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[derive(Clone)]
pub(crate) struct ServerSettings {
    /// The URL with any password redacted (what `Debug` shows).
    pub(crate) url: String,
    /// The lease table.
    pub(crate) table: String,
    /// Session-bound locks instead of leases.
    pub(crate) session_mode: bool,
    /// The pool size, if set explicitly.
    pub(crate) pool_size: Option<u32>,
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl std::fmt::Debug for ServerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSettings")
            .field("url", &self.url) // already redacted
            .field("table", &self.table)
            .field("session_mode", &self.session_mode)
            .field("pool_size", &self.pool_size())
            .finish()
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl ServerSettings {
    /// Settings from a URL whose lockkit parameters are `params`; `session` names
    /// the session-bound mode (`advisory`, `get_lock`).
    pub(crate) fn from_url(
        url: &str,
        params: &UrlParams,
        session: &str,
    ) -> Result<Self, LockError> {
        Ok(Self {
            url: lockkit_core::redact_url(url),
            table: params.table.clone(),
            session_mode: params.session_mode(url, session)?,
            pool_size: None,
        })
    }

    /// The pool size: as set, else 8 for leases and 32 for session-bound locks,
    /// where every held lock keeps a connection.
    pub(crate) fn pool_size(&self) -> u32 {
        self.pool_size
            .unwrap_or(if self.session_mode { 32 } else { 8 })
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl UrlParams {
    /// Whether `mode=` asks for the session-bound mode named `session` (the
    /// default, and `mode=lease`, is leases).
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] for any other mode, naming both.
    pub(crate) fn session_mode(&self, url: &str, session: &str) -> Result<bool, LockError> {
        match self.mode.as_deref() {
            None | Some("lease") => Ok(false),
            Some(m) if m == session => Ok(true),
            Some(other) => Err(LockError::invalid_url(
                url,
                format!("unknown mode `{other}`; use mode=lease (default) or mode={session}"),
            )),
        }
    }
}

/// Splits lockkit's own parameters (`table=`, `mode=`) off a database URL; the rest
/// goes to the database client untouched.
///
/// # Errors
///
/// [`LockError::InvalidUrl`] for a bad table name.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn take_lockkit_params(url: &str) -> Result<UrlParams, LockError> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut table = DEFAULT_TABLE.to_string();
    let mut mode = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("table", v)) => {
                table =
                    validate_table(v).map_err(|e| LockError::invalid_url(url, e.to_string()))?;
            }
            Some(("mode", v)) => mode = Some(v.to_string()),
            _ => rest.push(pair),
        }
    }
    let client_url = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok(UrlParams {
        client_url,
        table,
        mode,
    })
}
