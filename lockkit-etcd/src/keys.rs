//! Where a lock lives in etcd.
//!
//! Lock `K` owned by `O` is the key `<prefix>/<K escaped>/<O as 32 hex digits>`,
//! where escaping replaces `%` with `%25` and `/` with `%2F`. The escaped name has
//! no `/`, so `<prefix>/<K escaped>/` is a key prefix that holds exactly the queue
//! of lock `K`: lock `a` never sees the entries of lock `a/b`.

use lockkit_core::{LockKey, OwnerId};

/// The queue prefix of `key`: `<prefix>/<escaped key>/`.
pub(crate) fn queue(prefix: &str, key: &LockKey) -> String {
    let mut out = String::with_capacity(prefix.len() + key.as_str().len() + 2);
    out.push_str(prefix);
    out.push('/');
    for c in key.as_str().chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            c => out.push(c),
        }
    }
    out.push('/');
    out
}

/// The queue entry of `owner` for `key`.
pub(crate) fn entry(prefix: &str, key: &LockKey, owner: &OwnerId) -> String {
    let mut out = queue(prefix, key);
    out.push_str(&owner.to_hex());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_names_do_not_share_a_queue() {
        let a = queue("p", &LockKey::new("a").unwrap());
        let ab = queue("p", &LockKey::new("a/b").unwrap());
        assert_eq!(a, "p/a/");
        assert_eq!(ab, "p/a%2Fb/");
        assert!(!ab.starts_with(&a));
        assert_eq!(queue("p", &LockKey::new("50%").unwrap()), "p/50%25/");
    }
}
