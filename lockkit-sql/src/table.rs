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
