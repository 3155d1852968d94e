//! [`RedisOptions`]: which server, and under which key prefix.

use std::fmt;

use lockkit_core::{LockError, redact_url};

/// Settings for [`super::RedisDriver`]. `Debug` never shows the password.
#[derive(Clone)]
pub struct RedisOptions {
    pub(crate) client_url: String,
    pub(crate) prefix: String,
    shown: String,
}

impl fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisOptions")
            .field("url", &self.shown)
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl RedisOptions {
    /// Parses `redis://[user:password@]host:port[/db][?prefix=NAME]`.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong (the password redacted).
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        if !url.starts_with("redis://") {
            return Err(LockError::invalid_url(
                url,
                "a Redis URL starts with redis://",
            ));
        }
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut prefix = "lockkit".to_string();
        let mut rest = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("prefix", v)) if !v.is_empty() && !v.contains(['{', '}']) => {
                    prefix = v.to_string()
                }
                Some(("prefix", _)) => {
                    return Err(LockError::invalid_url(
                        url,
                        "prefix must be non-empty and contain no braces",
                    ));
                }
                _ => rest.push(pair),
            }
        }
        let client_url = if rest.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        redis::Client::open(client_url.as_str())
            .map_err(|e| LockError::invalid_url(url, redact_url(&e.to_string())))?;
        Ok(Self {
            client_url,
            prefix,
            shown: redact_url(url),
        })
    }

    /// The key prefix (default `lockkit`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}
