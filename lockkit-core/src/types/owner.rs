//! [`OwnerId`]: who holds a lock.

use std::fmt;

use crate::error::LockError;

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
