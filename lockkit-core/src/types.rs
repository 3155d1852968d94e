//! The value types every driver and client shares: keys, owners, tokens, TTLs.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{KeyError, LockError, TtlError};

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
/// use lockkit::driver::decode_escaped;
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

/// Who holds a lock: 128 random bits, plus an optional human label.
///
/// The random part is drawn from the operating system's CSPRNG, so nobody can guess
/// another holder's id and release its lock. The label (`host/pid/task`) is only for
/// people reading logs and backend state; it never decides ownership.
///
/// # Examples
///
/// ```
/// use lockkit::OwnerId;
///
/// let a = OwnerId::new();
/// let b = OwnerId::new().with_label("web-1/4242/checkout");
/// assert_ne!(a, b);
/// assert_eq!(b.label(), Some("web-1/4242/checkout"));
/// // Display and Debug show a prefix only: the full id is a release capability.
/// assert_eq!(a.to_hex().len(), 32);
/// assert!(a.to_hex().starts_with(a.to_string().trim_end_matches('…')));
/// assert_eq!(OwnerId::from_hex(&a.to_hex()).unwrap(), a);
/// ```
///
/// Two owner ids are equal when their random parts are: the label is not part of
/// the identity.
#[derive(Clone)]
pub struct OwnerId {
    id: u128,
    label: Option<String>,
}

impl OwnerId {
    /// A fresh, unguessable owner id.
    pub fn new() -> Self {
        let mut bytes = [0u8; 16];
        if getrandom::fill(&mut bytes).is_err() {
            // The OS CSPRNG is unavailable (should not happen on supported platforms);
            // fall back to a seeded PRNG mixed with the time so ids still differ.
            let mut rng = fastrand::Rng::new();
            bytes = rng.u128(..).to_le_bytes();
        }
        Self {
            id: u128::from_le_bytes(bytes),
            label: None,
        }
    }

    /// Rebuilds an owner id from its 32-hex-digit form (as returned by
    /// [`to_hex`](Self::to_hex)).
    ///
    /// Use this to resume ownership after a restart, for example when the id was
    /// persisted next to the work it protects.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] when `hex` is not 32 hexadecimal digits.
    pub fn from_hex(hex: &str) -> Result<Self, LockError> {
        if hex.len() != 32 {
            return Err(LockError::Config(format!(
                "an owner id is 32 hex digits, got {} characters",
                hex.len()
            )));
        }
        let id = u128::from_str_radix(hex, 16).map_err(|_| {
            LockError::Config("an owner id is 32 hex digits (0-9, a-f)".to_string())
        })?;
        Ok(Self { id, label: None })
    }

    /// Attaches a human-readable label, such as `host/pid/task`: control
    /// characters are dropped and it is cut to [`MAX_LABEL_LEN`] characters.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(clean_label(label.into()));
        self
    }

    /// Attaches a label that is already clean ([`clean_label`]): the `Locker`'s own,
    /// cleaned once when it was set rather than on every acquire.
    pub(crate) fn with_clean_label(mut self, label: String) -> Self {
        self.label = Some(label);
        self
    }

    /// The label, if one was attached.
    pub fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// The 128-bit identity.
    pub fn as_u128(&self) -> u128 {
        self.id
    }

    /// The identity as 32 lowercase hex digits: what drivers store.
    pub fn to_hex(&self) -> String {
        // Every acquire and release sends it: written digit by digit, not through
        // the formatting machinery.
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let hex: Vec<u8> = (0..32)
            .rev()
            .map(|i| DIGITS[((self.id >> (4 * i)) & 0xf) as usize])
            .collect();
        String::from_utf8(hex).unwrap_or_default()
    }
}

impl PartialEq for OwnerId {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for OwnerId {}

impl std::hash::Hash for OwnerId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

/// The longest owner label kept, in characters.
pub const MAX_LABEL_LEN: usize = 128;

/// `label` without control characters, cut to [`MAX_LABEL_LEN`] characters.
pub(crate) fn clean_label(label: String) -> String {
    label
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_LABEL_LEN)
        .collect()
}

impl Default for OwnerId {
    fn default() -> Self {
        Self::new()
    }
}

impl OwnerId {
    fn short(&self) -> String {
        // Only a prefix: enough to correlate log lines, not enough to impersonate.
        format!("{:08x}…", (self.id >> 96) as u32)
    }
}

impl fmt::Display for OwnerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.short())
    }
}

impl fmt::Debug for OwnerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let short = self.short();
        match &self.label {
            Some(label) => write!(f, "OwnerId({short}, {label:?})"),
            None => write!(f, "OwnerId({short})"),
        }
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
