//! The one error type of lockkit.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use crate::human::human_duration;
use crate::types::{MAX_KEY_LEN, MAX_TTL, MIN_TTL};
use crate::url::redact_url;

/// A `Result` whose error defaults to [`LockError`].
pub type Result<T, E = LockError> = std::result::Result<T, E>;

/// Everything that can go wrong when taking, keeping or giving back a lock.
///
/// Messages say what failed and what to do about it. They never contain a password,
/// an ACL token or an owner id: URLs are redacted before they get here.
#[derive(Debug)]
#[non_exhaustive]
pub enum LockError {
    /// The lock name is not acceptable.
    InvalidKey(KeyError),

    /// The lease length is out of bounds.
    InvalidTtl(TtlError),

    /// The connection URL could not be understood.
    InvalidUrl {
        /// The URL with any password or token replaced by `***`.
        url: String,
        /// What is wrong with it and how to fix it.
        reason: String,
    },

    /// A setting (other than the URL itself) is wrong.
    Config(String),

    /// `lock()` waited for the whole wait budget without getting the lock.
    Timeout {
        /// The lock that was waited for.
        key: String,
        /// How long we waited.
        waited: Duration,
    },

    /// `try_lock()` found the lock held by someone else.
    Contended {
        /// The lock that was busy.
        key: String,
    },

    /// The caller stopped waiting (its acquire future was dropped). Drivers return
    /// this to the client; applications do not see it.
    Cancelled {
        /// The lock that was being acquired.
        key: String,
    },

    /// The hold is gone: it expired, was taken over, or its session ended.
    Lost {
        /// The lock that was lost.
        key: String,
        /// Why we believe so.
        reason: String,
    },

    /// The driver cannot do what was asked.
    Unsupported {
        /// The driver's name.
        driver: &'static str,
        /// The missing capability.
        capability: &'static str,
    },

    /// A release failed, and kept failing until the hold's lease ended: the
    /// lock was not given back, and is freed as `then` says.
    ReleaseFailed {
        /// The lock that was not released.
        key: String,
        /// How many times the release was sent.
        attempts: u32,
        /// When the lock is freed instead: at the end of its lease, or of the
        /// driver's session.
        then: &'static str,
        /// The last attempt's error.
        last: Box<LockError>,
    },

    /// The backend could not be reached, or the connection broke.
    Connection {
        /// The driver's name.
        driver: &'static str,
        /// What happened, with secrets removed.
        message: String,
        /// The underlying error.
        source: Option<Box<dyn StdError + Send + Sync>>,
    },

    /// The backend answered with an error.
    Backend {
        /// The driver's name.
        driver: &'static str,
        /// What happened, with secrets removed.
        message: String,
        /// The underlying error.
        source: Option<Box<dyn StdError + Send + Sync>>,
    },
}

impl LockError {
    /// Whether repeating the same operation may succeed (used by the watchdog to decide
    /// between "retry the renewal" and "the lock is gone").
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LockError::Connection { .. } | LockError::Backend { .. }
        )
    }

    /// Whether the error means the hold no longer exists.
    pub fn is_lost(&self) -> bool {
        matches!(self, LockError::Lost { .. })
    }

    /// A [`LockError::Lost`] for `key`.
    pub fn lost(key: impl fmt::Display, reason: impl Into<String>) -> Self {
        LockError::Lost {
            key: key.to_string(),
            reason: reason.into(),
        }
    }

    /// A [`LockError::InvalidUrl`] for `url`, with any secret in it redacted.
    pub fn invalid_url(url: &str, reason: impl Into<String>) -> Self {
        LockError::InvalidUrl {
            url: redact_url(url),
            reason: reason.into(),
        }
    }

    /// A [`LockError::Connection`] from a driver's client error.
    pub fn connection(driver: &'static str, source: impl StdError + Send + Sync + 'static) -> Self {
        LockError::Connection {
            driver,
            message: source.to_string(),
            source: Some(Box::new(source)),
        }
    }

    /// A [`LockError::Backend`] from a driver's client error.
    pub fn backend(driver: &'static str, source: impl StdError + Send + Sync + 'static) -> Self {
        LockError::Backend {
            driver,
            message: source.to_string(),
            source: Some(Box::new(source)),
        }
    }
}

/// Why a key was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// The key is the empty string.
    Empty,
    /// The key is longer than [`MAX_KEY_LEN`] bytes.
    TooLong {
        /// The key's length in bytes.
        len: usize,
    },
    /// The key contains a control character such as NUL or newline.
    ControlCharacter {
        /// Byte offset of the character.
        position: usize,
        /// The character's code point.
        code: u32,
    },
}

/// Why a TTL was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TtlError {
    /// Shorter than [`MIN_TTL`].
    TooShort {
        /// The rejected TTL.
        ttl: Duration,
    },
    /// Longer than [`MAX_TTL`].
    TooLong {
        /// The rejected TTL.
        ttl: Duration,
    },
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::InvalidKey(e) => write!(f, "invalid lock key: {e}"),
            LockError::InvalidTtl(e) => write!(f, "invalid TTL: {e}"),
            LockError::InvalidUrl { url, reason } => write!(f, "invalid URL `{url}`: {reason}"),
            LockError::Config(why) => write!(f, "configuration error: {why}"),
            LockError::Timeout { key, waited } => write!(
                f,
                "timed out after {} waiting for lock `{key}`; raise the wait or find the holder",
                human_duration(*waited)
            ),
            LockError::Contended { key } => write!(f, "lock `{key}` is held by another owner"),
            LockError::Cancelled { key } => write!(f, "acquiring lock `{key}` was cancelled"),
            LockError::Lost { key, reason } => write!(f, "lock `{key}` was lost: {reason}"),
            LockError::Unsupported { driver, capability } => {
                write!(f, "the {driver} driver does not support {capability}")
            }
            LockError::ReleaseFailed {
                key,
                attempts,
                then,
                last,
            } => write!(
                f,
                "lock `{key}` could not be released ({attempts} attempts; the last: {last}); {then}"
            ),
            LockError::Connection {
                driver, message, ..
            } => write!(f, "connection error ({driver}): {message}"),
            LockError::Backend {
                driver, message, ..
            } => write!(f, "backend error ({driver}): {message}"),
        }
    }
}

impl StdError for LockError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            LockError::InvalidKey(e) => Some(e),
            LockError::InvalidTtl(e) => Some(e),
            LockError::ReleaseFailed { last, .. } => Some(&**last),
            LockError::Connection { source, .. } | LockError::Backend { source, .. } => {
                source.as_deref().map(|e| e as &(dyn StdError + 'static))
            }
            _ => None,
        }
    }
}

impl From<KeyError> for LockError {
    fn from(e: KeyError) -> Self {
        LockError::InvalidKey(e)
    }
}

impl From<TtlError> for LockError {
    fn from(e: TtlError) -> Self {
        LockError::InvalidTtl(e)
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::Empty => {
                f.write_str("the key is empty; give the lock a name such as \"orders:42\"")
            }
            KeyError::TooLong { len } => write!(
                f,
                "the key is {len} bytes long; the limit is {MAX_KEY_LEN} bytes (hash long names first)"
            ),
            KeyError::ControlCharacter { position, code } => write!(
                f,
                "the key contains control character U+{code:04X} at byte {position}; use printable characters only"
            ),
        }
    }
}

impl StdError for KeyError {}

impl fmt::Display for TtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TtlError::TooShort { ttl } => write!(
                f,
                "{} is shorter than the minimum of {}; a lease must outlive a round trip",
                human_duration(*ttl),
                human_duration(MIN_TTL)
            ),
            TtlError::TooLong { ttl } => write!(
                f,
                "{} is longer than the maximum of {}: a lease is how long a crashed holder keeps the \
                 lock, so keep it to seconds or minutes and let the watchdog renew it (`.ttl(d)`) for as \
                 long as you hold the lock",
                human_duration(*ttl),
                human_duration(MAX_TTL)
            ),
        }
    }
}

impl StdError for TtlError {}

/// `e` and its causes, `: `-separated, each said once: a cause whose text is
/// already in the message is skipped. Client libraries often put the useful part
/// ("connection refused", a certificate problem) a few sources down, under a
/// message that says only "transport error" or "error sending request".
///
/// # Examples
///
/// ```
/// let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
/// let wrapped = std::io::Error::other(refused);
/// assert_eq!(lockkit_core::error_chain(&wrapped), "connection refused");
/// ```
pub fn error_chain(e: &(dyn StdError + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !out.contains(&text) {
            if out.is_empty() {
                out = text;
            } else {
                out.push_str(": ");
                out.push_str(&text);
            }
        }
        next = cause.source();
    }
    out
}
