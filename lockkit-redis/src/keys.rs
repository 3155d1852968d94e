//! Where a lock lives in Redis.

use lockkit_core::{LockError, LockKey};

/// Where a lock's own key lives (`?keys=`).
///
/// # Sharing locks with `SET NX` libraries (`?keys=plain`)
///
/// With `keys=plain` ([`KeyLayout::Plain`]) the lock `K` itself is the Redis key
/// `K`, a string with a `PX` TTL, as redis-py's `Lock`, rslock, node-redlock and
/// every other `SET K value NX PX ttl` library name theirs; the side keys stay
/// `<prefix>:{K}:…`, in `K`'s hash slot. Then:
///
/// - lockkit and such a library **exclude each other** in both directions: each
///   sees the key taken. lockkit's readers and permits keep it taken too.
/// - A library's hold has **no fencing token**; lockkit's tokens keep rising
///   across it. `inspect` shows it as an exclusive holder with token 0, labelled
///   as another library's.
/// - **No order across libraries.** A library's release wakes no lockkit waiter
///   (they retry every second), and a library polls, so it may take the lock
///   ahead of queued lockkit waiters.
/// - A key with a brace is refused (`Config`), and listing is `Unsupported`.
///
/// Redisson's hash layout is not supported: no Redisson client can be run where
/// lockkit is tested.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyLayout {
    /// `<prefix>:{K}:lock` (the default): every name of a lock under the prefix,
    /// sharing the hash tag `{K}`.
    #[default]
    Tagged,
    /// `K` itself, as every `SET K value NX PX ttl` library names it (redis-py's
    /// `Lock`, rslock, node-redlock…), so that lockkit and they exclude each other.
    /// The side keys stay `<prefix>:{K}:…`, in the same hash slot as `K`. A key
    /// with a brace is refused: its slot would differ from its side keys'.
    Plain,
}

impl KeyLayout {
    /// Refuses a key this layout cannot name.
    pub(crate) fn check(self, key: &LockKey) -> Result<(), LockError> {
        if self == Self::Plain && key.as_str().contains(['{', '}']) {
            return Err(LockError::Config(format!(
                "with keys=plain a key is the Redis key itself, and `{}` has a brace: \
                 Redis would hash it to another slot than its side keys",
                key.as_str()
            )));
        }
        Ok(())
    }
}

/// The Redis names of one lock, sharing the hash tag `{K}` so that in a cluster
/// they live in one slot and one script can touch them all (invariant R1; with
/// [`KeyLayout::Plain`] the lock itself is `K`, whose slot is `{K}`'s).
/// `scripts/queue.lua` describes what each holds. All seven live in one buffer,
/// built without the formatting machinery: every acquire and release names them.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    buf: String,
    /// Where each name ends in `buf`, in [`SUFFIXES`] order.
    ends: [usize; 7],
}

/// The side keys' suffixes after `<prefix>:{K}`, in the scripts' order; the lock
/// comes first.
const SUFFIXES: [&str; 7] = [
    ":lock", ":fence", ":waiters", ":queue", ":woken", ":holders", ":holds",
];

impl Names {
    fn name(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.buf[start..self.ends[i]]
    }

    /// `<prefix>:{K}:lock` (`K` with [`KeyLayout::Plain`]): an exclusive hold's
    /// `<owner>:<token>[:<label>]` with a `PX` lease, or the sentinel of shared
    /// holds or permits.
    pub(crate) fn lock(&self) -> &str {
        self.name(0)
    }

    /// `<prefix>:{K}:fence`: the fencing counter, never expired.
    pub(crate) fn fence(&self) -> &str {
        self.name(1)
    }

    /// `<prefix>:{K}:waiters`: who waits, scored by entry expiry.
    pub(crate) fn waiters(&self) -> &str {
        self.name(2)
    }

    /// `<prefix>:{K}:queue`: who waits, in order (on a single server by arrival;
    /// on a Redlock master by the rank each waiter sends).
    pub(crate) fn queue(&self) -> &str {
        self.name(3)
    }

    /// `<prefix>:{K}:holders`: shared holds and permits, scored by lease end.
    pub(crate) fn holders(&self) -> &str {
        self.name(5)
    }

    /// `<prefix>:{K}:holds`: each of those holders' `token[:label]`.
    pub(crate) fn holds(&self) -> &str {
        self.name(6)
    }

    /// The seven keys, in the order the single-server scripts take them: lock,
    /// fence, waiters, queue (in order of arrival), woken (waiters woken and not
    /// back yet), holders, holds.
    pub(crate) fn all(&self) -> [&str; 7] {
        std::array::from_fn(|i| self.name(i))
    }
}

pub(crate) fn names(prefix: &str, layout: KeyLayout, key: &LockKey) -> Names {
    let key = key.as_str();
    let base_len = prefix.len() + key.len() + 3;
    let mut buf = String::with_capacity(7 * base_len + 48);
    let mut ends = [0; 7];
    for (i, suffix) in SUFFIXES.iter().enumerate() {
        if i == 0 && layout == KeyLayout::Plain {
            buf.push_str(key);
        } else {
            buf.push_str(prefix);
            buf.push_str(":{");
            buf.push_str(key);
            buf.push('}');
            buf.push_str(suffix);
        }
        ends[i] = buf.len();
    }
    Names { buf, ends }
}

/// Just the lock's name (what extend and the watchdog's renewals touch), without
/// formatting the others.
pub(crate) fn lock_name(prefix: &str, layout: KeyLayout, key: &LockKey) -> String {
    match layout {
        KeyLayout::Tagged => format!("{prefix}:{{{}}}:lock", key.as_str()),
        KeyLayout::Plain => key.as_str().to_owned(),
    }
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
        let n = names(
            "lockkit",
            KeyLayout::Tagged,
            &LockKey::new("orders:{eu}:7").unwrap(),
        );
        // Redis hashes the text between the first `{` and the next `}`: the same
        // for all of them, even when the key itself has braces.
        let tag = |s: &str| {
            let open = s.find('{').unwrap();
            let close = open + s[open..].find('}').unwrap();
            s[open + 1..close].to_string()
        };
        for name in n.all() {
            assert_eq!(tag(name), tag(n.lock()), "{name}");
        }
        assert_eq!(
            lock_name(
                "lockkit",
                KeyLayout::Tagged,
                &LockKey::new("orders:{eu}:7").unwrap()
            ),
            n.lock()
        );
    }

    #[test]
    fn a_plain_lock_is_the_key_itself_in_its_side_keys_slot() {
        use redis::cluster_routing::Slot;
        let key = LockKey::new("orders:eu").unwrap();
        let n = names("lockkit", KeyLayout::Plain, &key);
        assert_eq!(n.lock(), "orders:eu");
        assert_eq!(n.fence(), "lockkit:{orders:eu}:fence");
        for name in n.all() {
            assert_eq!(Slot::for_key(name), Slot::for_key("orders:eu"), "{name}");
        }
        assert!(KeyLayout::Plain.check(&key).is_ok());
        let braced = LockKey::new("orders:{eu}").unwrap();
        assert!(matches!(
            KeyLayout::Plain.check(&braced),
            Err(LockError::Config(_))
        ));
        assert!(KeyLayout::Tagged.check(&braced).is_ok());
    }
}
