//! Where a lock lives in etcd.
//!
//! Lock `K` owned by `O` is the key `<prefix>/<K escaped>/<O as 32 hex digits>`,
//! where escaping replaces `%` with `%25` and `/` with `%2F`. The escaped name has
//! no `/`, so `<prefix>/<K escaped>/` is a key prefix that holds exactly the queue
//! of lock `K`: lock `a` never sees the entries of lock `a/b`. A reader's entry is
//! `…/r-<O>`: hex digits sort before `r`, so the writers alone are the range from
//! the queue prefix to `…/g`.

use lockkit_core::{LockKey, LockMode, OwnerId};

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

/// The queue entry of `owner` for `key` in `mode`: a reader's, or a writer's (the
/// lock's).
pub(crate) fn entry(prefix: &str, key: &LockKey, owner: &OwnerId, mode: LockMode) -> String {
    let mut out = queue(prefix, key);
    if mode == LockMode::Shared {
        out.push_str("r-");
    }
    out.push_str(&owner.to_hex());
    out
}

/// The end (exclusive) of the writers' range of `queue`: its entries from `queue`
/// up to this are the writers', in create order the ones readers wait for.
pub(crate) fn writers_end(queue: &str) -> String {
    format!("{queue}g")
}

/// Whether the entry `name` is a reader's.
pub(crate) fn is_reader(name: &[u8]) -> bool {
    name.rsplit(|b| *b == b'/')
        .next()
        .is_some_and(|last| last.starts_with(b"r-"))
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

    #[test]
    fn writers_sort_before_readers_and_have_a_range_of_their_own() {
        let key = LockKey::new("k").unwrap();
        let (q, owner) = (queue("p", &key), OwnerId::new());
        let writer = entry("p", &key, &owner, LockMode::Exclusive);
        let reader = entry("p", &key, &owner, LockMode::Shared);
        let end = writers_end(&q);
        assert!(q.as_str() <= writer.as_str() && writer < end);
        assert!(reader > end && reader.starts_with(&q));
        assert!(is_reader(reader.as_bytes()) && !is_reader(writer.as_bytes()));
    }
}
