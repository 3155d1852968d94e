//! The value types every driver and client shares: keys, owners, tokens, TTLs.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{KeyError, LockError, TtlError};

mod owner;
pub(crate) use owner::clean_label;
pub use owner::{MAX_LABEL_LEN, OwnerId};

/// The longest key lockkit accepts, in bytes.
///
/// Every backend can store a key of this size under its own prefix (a Redis key, an
/// etcd key, a ZooKeeper path segment, a SQL `TEXT` primary key).
pub const MAX_KEY_LEN: usize = 512;

/// The shortest lease lockkit accepts.
pub const MIN_TTL: Duration = Duration::from_millis(10);

/// The longest lease lockkit accepts (30 days). Anything longer is almost certainly a
/// unit mistake, and would make an abandoned lock practically permanent.
pub const MAX_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// A validated lock name.
///
/// A key is non-empty, at most [`MAX_KEY_LEN`] bytes of UTF-8, and contains no control
/// characters (no NUL, no newline), so it is safe in every backend's namespace and in
/// log lines. Each driver maps it into its own namespace and documents the mapping.
///
/// # Examples
///
/// ```
/// use lockkit::LockKey;
///
/// let key = LockKey::new("inventory:sku-42").unwrap();
/// assert_eq!(key.as_str(), "inventory:sku-42");
/// assert!(LockKey::new("").is_err());
/// assert!(LockKey::new("a\0b").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockKey(String);

impl LockKey {
    /// Validates `name` and wraps it.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidKey`] when the name is empty, longer than [`MAX_KEY_LEN`]
    /// bytes, or contains a control character.
    pub fn new(name: impl Into<String>) -> Result<Self, LockError> {
        let name = name.into();
        if name.is_empty() {
            return Err(KeyError::Empty.into());
        }
        if name.len() > MAX_KEY_LEN {
            return Err(KeyError::TooLong { len: name.len() }.into());
        }
        if let Some(pos) = name.char_indices().find(|(_, c)| c.is_control()) {
            return Err(KeyError::ControlCharacter {
                position: pos.0,
                code: u32::from(pos.1),
            }
            .into());
        }
        Ok(Self(name))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key as one path segment, for backends that keep locks in a tree (a
    /// ZooKeeper node, a Consul KV key): every byte outside `A-Z a-z 0-9 - _ : .`
    /// written `%XX`, and `.` or `..` (not a name in a tree) followed by `%00`.
    /// Distinct keys give distinct segments.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockkit::LockKey;
    ///
    /// assert_eq!(LockKey::new("inventory/sku 42")?.to_segment(), "inventory%2Fsku%2042");
    /// assert_eq!(LockKey::new("..")?.to_segment(), "..%00");
    /// # Ok::<(), lockkit::LockError>(())
    /// ```
    pub fn to_segment(&self) -> String {
        let mut out = String::with_capacity(self.0.len());
        for b in self.0.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':' | b'.') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        if out == "." || out == ".." {
            out.push_str("%00");
        }
        out
    }
}

impl LockKey {
    /// The key a [`to_segment`](LockKey::to_segment) segment names, or `None` for
    /// a segment `to_segment` never makes.
    ///
    /// ```
    /// use lockkit::LockKey;
    ///
    /// let key = LockKey::new("inventory/sku 42")?;
    /// assert_eq!(LockKey::from_segment(&key.to_segment()), Some(key));
    /// assert_eq!(LockKey::from_segment("..%00"), Some(LockKey::new("..")?));
    /// assert_eq!(LockKey::from_segment("a%2"), None);
    /// # Ok::<(), lockkit::LockError>(())
    /// ```
    pub fn from_segment(segment: &str) -> Option<LockKey> {
        let segment = match segment.strip_suffix("%00") {
            Some(dots) if dots == "." || dots == ".." => dots,
            _ => segment,
        };
        LockKey::new(decode_escaped(segment, b'%')?).ok()
    }
}

/// `text` with every `<escape>XX` (two hex digits) turned back into the byte
/// `XX`: how drivers read back a lock name they escaped into a backend's key
/// (`%XX` in [`LockKey::to_segment`], `_XX` in Consul's keys). `None` for a
/// broken escape or bytes that are not UTF-8.
///
/// ```
/// use lockkit_core::driver::decode_escaped;
///
/// assert_eq!(decode_escaped("jobs_2Fa", b'_').as_deref(), Some("jobs/a"));
/// assert_eq!(decode_escaped("a%2", b'%'), None);
/// ```
pub fn decode_escaped(text: &str, escape: u8) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == escape {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl fmt::Debug for LockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for LockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for LockKey {
    type Err = LockError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<&str> for LockKey {
    type Error = LockError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl TryFrom<String> for LockKey {
    type Error = LockError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

/// A fencing token: strictly increasing per key across successive holders.
///
/// Hand it to the protected resource with every write, and have the resource reject
/// any write whose token is lower than the highest it has seen (see [`crate::fence`]).
/// A reentrant acquisition by the same owner returns the same token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FencingToken(pub u64);

impl FencingToken {
    /// The token as a number.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl From<FencingToken> for u64 {
    fn from(token: FencingToken) -> Self {
        token.0
    }
}

/// The `BIGINT` a SQL driver binds: every backend's tokens fit (etcd and ZooKeeper
/// count in `i64`, Redis's clock seed stays under 2^52), but the conversion is
/// checked all the same.
///
/// ```
/// use lockkit::FencingToken;
///
/// assert_eq!(i64::try_from(FencingToken(42)), Ok(42));
/// assert!(i64::try_from(FencingToken(u64::MAX)).is_err());
/// ```
impl TryFrom<FencingToken> for i64 {
    type Error = std::num::TryFromIntError;

    fn try_from(token: FencingToken) -> Result<Self, Self::Error> {
        i64::try_from(token.0)
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Checks that `ttl` is within [`MIN_TTL`]..=[`MAX_TTL`].
///
/// # Errors
///
/// [`LockError::InvalidTtl`] naming the bound that was crossed.
pub fn validate_ttl(ttl: Duration) -> Result<Duration, LockError> {
    if ttl < MIN_TTL {
        return Err(TtlError::TooShort { ttl }.into());
    }
    if ttl > MAX_TTL {
        return Err(TtlError::TooLong { ttl }.into());
    }
    Ok(ttl)
}
