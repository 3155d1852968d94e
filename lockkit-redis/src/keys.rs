//! Where a lock lives in Redis.

use lockkit_core::LockKey;

/// The Redis names of one lock, sharing the hash tag `{K}` so that in a cluster
/// they live in one slot and one script can touch them all. `scripts/queue.lua`
/// describes what each holds.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    /// `<prefix>:{K}:lock`: an exclusive hold's `<owner>:<token>[:<label>]` with a
    /// `PX` lease, or the sentinel of shared holds or permits.
    pub(crate) lock: String,
    /// `<prefix>:{K}:fence`: the fencing counter, never expired.
    pub(crate) fence: String,
    /// `<prefix>:{K}:waiters`: who waits, scored by entry expiry.
    pub(crate) waiters: String,
    /// `<prefix>:{K}:queue`: the waiters in order of arrival.
    pub(crate) queue: String,
    /// `<prefix>:{K}:woken`: waiters woken and not back yet.
    pub(crate) woken: String,
    /// `<prefix>:{K}:holders`: shared holds and permits, scored by lease end.
    pub(crate) holders: String,
    /// `<prefix>:{K}:holds`: each of those holders' `token[:label]`.
    pub(crate) holds: String,
}

impl Names {
    /// The seven keys, in the order the single-server scripts take them.
    pub(crate) fn all(&self) -> [&str; 7] {
        [
            &self.lock,
            &self.fence,
            &self.waiters,
            &self.queue,
            &self.woken,
            &self.holders,
            &self.holds,
        ]
    }
}

pub(crate) fn names(prefix: &str, key: &LockKey) -> Names {
    let base = format!("{prefix}:{{{}}}", key.as_str());
    Names {
        lock: format!("{base}:lock"),
        fence: format!("{base}:fence"),
        waiters: format!("{base}:waiters"),
        queue: format!("{base}:queue"),
        woken: format!("{base}:woken"),
        holders: format!("{base}:holders"),
        holds: format!("{base}:holds"),
    }
}

/// Just the lock's name (what extend and the watchdog's renewals touch), without
/// formatting the others.
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
        for name in n.all() {
            assert_eq!(tag(name), tag(&n.lock), "{name}");
        }
        assert_eq!(
            lock_name("lockkit", &LockKey::new("orders:{eu}:7").unwrap()),
            n.lock
        );
    }
}
