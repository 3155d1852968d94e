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

/// Splits lockkit's own `table=` parameter off a database URL; the rest of the URL
/// goes to the database client untouched.
///
/// # Errors
///
/// [`LockError::InvalidUrl`] for a bad table name.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn take_table_param(url: &str) -> Result<(String, String), LockError> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), DEFAULT_TABLE.to_string()));
    };
    let mut table = DEFAULT_TABLE.to_string();
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("table", v)) => {
                table =
                    validate_table(v).map_err(|e| LockError::invalid_url(url, e.to_string()))?;
            }
            _ => rest.push(pair),
        }
    }
    let url = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok((url, table))
}
