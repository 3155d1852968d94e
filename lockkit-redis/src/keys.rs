//! Where a lock lives in Redis.

use lockkit_core::LockKey;

/// The Redis names of one lock, sharing the hash tag `{K}` so that in a cluster
/// they live in one slot and one script can touch them all.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    /// `<prefix>:{K}:lock`: `<owner>:<token>`, or `<owner>:<token>:<label>`, with a
    /// `PX` TTL.
    pub(crate) lock: String,
    /// `<prefix>:{K}:fence`: the fencing counter, never expired.
    pub(crate) fence: String,
    /// `<prefix>:{K}:waiters`: who waits, scored by entry expiry.
    pub(crate) waiters: String,
    /// `<prefix>:{K}:permits`: a semaphore's holders, scored by lease end.
    pub(crate) permits: String,
    /// `<prefix>:{K}:permit_tokens`: each permit holder's `token[:label]`.
    pub(crate) permit_tokens: String,
}

pub(crate) fn names(prefix: &str, key: &LockKey) -> Names {
    let base = format!("{prefix}:{{{}}}", key.as_str());
    Names {
        lock: format!("{base}:lock"),
        fence: format!("{base}:fence"),
        waiters: format!("{base}:waiters"),
        permits: format!("{base}:permits"),
        permit_tokens: format!("{base}:permit_tokens"),
    }
}

/// Just the lock's name (what extend and the watchdog's renewals touch), without
/// formatting the other two.
pub(crate) fn lock_name(prefix: &str, key: &LockKey) -> String {
    format!("{prefix}:{{{}}}:lock", key.as_str())
}

/// The prefix of every driver's wake channel: `<prefix>:wake:`; a driver listens on
/// that plus its own id.
pub(crate) fn wake_prefix(prefix: &str) -> String {
    format!("{prefix}:wake:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_share_one_hash_tag() {
        let n = names("lockkit", &LockKey::new("orders:{eu}:7").unwrap());
        // Redis hashes the text between the first `{` and the next `}`: the same
        // for all of them, even when the key itself has braces.
        let tag = |s: &str| {
            let open = s.find('{').unwrap();
            let close = open + s[open..].find('}').unwrap();
            s[open + 1..close].to_string()
        };
        assert_eq!(tag(&n.lock), tag(&n.fence));
        assert_eq!(tag(&n.lock), tag(&n.waiters));
        assert_eq!(tag(&n.lock), tag(&n.permits));
        assert_eq!(tag(&n.lock), tag(&n.permit_tokens));
        assert_eq!(
            lock_name("lockkit", &LockKey::new("orders:{eu}:7").unwrap()),
            n.lock
        );
    }
}
