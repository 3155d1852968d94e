//! Where a lock name lives in Consul's KV.
//!
//! Lock `K` is the key `<prefix>/<K>` ([`kv_key`]); a semaphore of the same name
//! lives under `<prefix>/<K>/` as Consul's `api/semaphore.go` lays one out: its
//! record at `<prefix>/<K>/.lock`, and one contender key per session,
//! `<prefix>/<K>/<session id>`.

use lockkit_core::LockKey;

/// The KV key lock `key` lives at under `prefix`: `<prefix>/<key>`, with every
/// byte of the key outside `A-Z a-z 0-9 - .` written `_XX` (hex), so any lock name
/// is one key segment of the characters every Consul version accepts. The names
/// `.` and `..` have their dots written `_2E` too: as URL path segments they
/// would mean "this folder" and "the folder above" (a literal `_2E` is written
/// `_5F2E`, so nothing else maps there).
pub(crate) fn kv_key(prefix: &str, key: &LockKey) -> String {
    let dots_only = key.as_str().bytes().all(|b| b == b'.');
    escape_into(format!("{prefix}/"), key.as_str(), dots_only)
}

/// `out` followed by `name` escaped as [`kv_key`] escapes a lock name (a prefix
/// of a name escapes to a prefix of its key, with `escape_dots` false).
pub(crate) fn escape_into(mut out: String, name: &str, escape_dots: bool) -> String {
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || (b == b'.' && !escape_dots) {
            out.push(b as char);
        } else {
            out.push_str(&format!("_{b:02X}"));
        }
    }
    out
}

/// The lock name whose [`kv_key`] under `prefix` is `kv_key`, or the one whose
/// semaphore `kv_key` belongs to; `None` for a key lockkit did not write.
pub(crate) fn name_of(prefix: &str, kv_key: &str) -> Option<LockKey> {
    let rest = kv_key.strip_prefix(prefix)?.strip_prefix('/')?;
    let segment = rest.split('/').next()?;
    LockKey::new(lockkit_core::driver::decode_escaped(segment, b'_')?).ok()
}

/// The keys of the semaphore named like the lock key `kv_key`.
#[derive(Debug, Clone)]
pub(crate) struct SemaphoreKeys {
    /// `<kv_key>/`: everything of the semaphore, read with `?recurse`.
    pub(crate) prefix: String,
    /// `<kv_key>/.lock`: the limit and the holders.
    pub(crate) record: String,
}

impl SemaphoreKeys {
    /// The semaphore beside lock key `kv_key`.
    pub(crate) fn of(kv_key: &str) -> Self {
        Self {
            prefix: format!("{kv_key}/"),
            record: format!("{kv_key}/.lock"),
        }
    }

    /// The contender key of `session`.
    pub(crate) fn contender(&self, session: &str) -> String {
        format!("{}{session}", self.prefix)
    }

    /// The session a contender key belongs to, if `key` is one (not the record).
    pub(crate) fn session_of<'a>(&self, key: &'a str) -> Option<&'a str> {
        key.strip_prefix(&self.prefix)
            .filter(|s| !s.is_empty() && *s != ".lock" && !s.contains('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lock name is one KV segment of characters every Consul accepts.
    #[test]
    fn lock_names_become_one_safe_kv_segment() {
        let k = |s: &str| kv_key("lockkit", &LockKey::new(s).unwrap());
        assert_eq!(k("inventory/sku_42"), "lockkit/inventory_2Fsku_5F42");
        assert_eq!(k("a-b.c"), "lockkit/a-b.c");
        assert_eq!(k("é"), "lockkit/_C3_A9");
        assert_eq!(k("."), "lockkit/_2E");
        assert_eq!(k(".."), "lockkit/_2E_2E");
        assert_eq!(k("..."), "lockkit/_2E_2E_2E");
        assert_eq!(k("_2E"), "lockkit/_5F2E");
    }

    /// A semaphore's keys sit under the lock key, as `consul lock -n` lays them
    /// out for that prefix.
    #[test]
    fn semaphore_keys_follow_consuls_layout() {
        let s = SemaphoreKeys::of("lockkit/pool");
        assert_eq!(s.record, "lockkit/pool/.lock");
        assert_eq!(s.contender("abc-123"), "lockkit/pool/abc-123");
        assert_eq!(s.session_of("lockkit/pool/abc-123"), Some("abc-123"));
        assert_eq!(s.session_of("lockkit/pool/.lock"), None);
        assert_eq!(s.session_of("lockkit/pool"), None);
    }
}
