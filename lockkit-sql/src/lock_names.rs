//! [`LockNames`]: the names session locks take on the server.

use lockkit_core::LockKey;

use crate::session::Taken;

/// How a session-lock driver names the server's locks (`GET_LOCK`'s names,
/// PostgreSQL's hashed advisory ids): `<table>:<key>`, or with raw keys
/// (`key=raw`) the key itself, so that another client's lock of that name is the
/// same lock. A semaphore's slot `i` is its key's name, `\u{1}`, then `i`.
#[derive(Debug)]
pub(crate) struct LockNames {
    /// The lock table's name, which namespaces the locks.
    pub(crate) namespace: String,
    /// `key=raw`.
    pub(crate) raw: bool,
}

impl LockNames {
    /// The name of `key`'s own lock.
    pub(crate) fn key(&self, key: &LockKey) -> String {
        if self.raw {
            key.as_str().to_owned()
        } else {
            format!("{}:{}", self.namespace, key.as_str())
        }
    }

    /// The name of the lock `taken`: the key's own, or a slot's.
    pub(crate) fn taken(&self, key: &LockKey, taken: Taken) -> String {
        match taken {
            Taken::Key => self.key(key),
            Taken::Slot(i) => format!("{}\u{1}{i}", self.key(key)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_named_after_its_key_and_raw_keys_are_their_own_names() {
        let key = LockKey::new("orders").unwrap();
        let names = LockNames {
            namespace: "lk".into(),
            raw: false,
        };
        assert_eq!(names.key(&key), "lk:orders");
        assert_eq!(names.taken(&key, Taken::Slot(3)), "lk:orders\u{1}3");
        let raw = LockNames {
            namespace: "lk".into(),
            raw: true,
        };
        assert_eq!(raw.taken(&key, Taken::Key), "orders");
    }
}
