//! Where a lock lives in etcd.
//!
//! Lock `K` owned by `O` is the key `<prefix>/<K escaped>/<O as 32 hex digits>`,
//! where escaping replaces `%` with `%25` and `/` with `%2F`. The escaped name has
//! no `/`, so `<prefix>/<K escaped>/` is a key prefix that holds exactly the queue
//! of lock `K`: lock `a` never sees the entries of lock `a/b`. A reader's entry is
//! `…/r-<O>`: hex digits sort before `r`, so the writers alone are the range from
//! the queue prefix to `…/g`. A permit's is `…/.p-<O>`, inside that range: readers
//! wait for permits as for writers. Its value is `<limit>:<label>`.

use lockkit_core::{LockKey, LockMode, OwnerId};

/// The queue prefix of `key`: `<prefix>/<escaped key>/`.
pub(crate) fn queue(prefix: &str, key: &LockKey) -> String {
    let mut out = String::with_capacity(prefix.len() + key.as_str().len() + 2);
    out.push_str(prefix);
    out.push('/');
    let mut out = escape_into(out, key.as_str());
    out.push('/');
    out
}

/// `out` followed by `name` escaped (`%` as `%25`, `/` as `%2F`).
pub(crate) fn escape_into(mut out: String, name: &str) -> String {
    for c in name.chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            c => out.push(c),
        }
    }
    out
}

/// A name escaped by [`escape_into`], as it was.
pub(crate) fn unescape(escaped: &str) -> String {
    escaped.replace("%2F", "/").replace("%25", "%")
}

/// The queue entry of `owner` for `key` in `mode`: a reader's, or a writer's (the
/// lock's).
pub(crate) fn entry(prefix: &str, key: &LockKey, owner: &OwnerId, mode: LockMode) -> String {
    let mut out = queue(prefix, key);
    match mode {
        LockMode::Shared => out.push_str("r-"),
        LockMode::Permit { .. } => out.push_str(".p-"),
        _ => {}
    }
    out.push_str(&owner.to_hex());
    out
}

/// The mode of the entry `name` with `value`: a permit's limit is in its value.
pub(crate) fn mode_of(name: &[u8], value: &[u8]) -> LockMode {
    let last = name.rsplit(|b| *b == b'/').next().unwrap_or_default();
    if last.starts_with(b"r-") {
        LockMode::Shared
    } else if last.starts_with(b".p-") {
        let limit = std::str::from_utf8(value)
            .ok()
            .and_then(|v| v.split_once(':'))
            .and_then(|(l, _)| l.parse().ok())
            .unwrap_or(1);
        LockMode::Permit { limit }
    } else {
        LockMode::Exclusive
    }
}

/// The value of an entry in `mode`: the owner's label, after `<limit>:` for a
/// permit.
pub(crate) fn value(mode: LockMode, label: &str) -> String {
    match mode.limit() {
        Some(limit) => format!("{limit}:{label}"),
        None => label.to_owned(),
    }
}

/// The label in an entry's value.
pub(crate) fn label_of(name: &[u8], value: &[u8]) -> Option<String> {
    let value = std::str::from_utf8(value).ok()?;
    let label = match mode_of(name, value.as_bytes()) {
        LockMode::Permit { .. } => value.split_once(':').map_or("", |(_, l)| l),
        _ => value,
    };
    (!label.is_empty()).then(|| label.to_owned())
}

/// The end (exclusive) of the writers' range of `queue`: its entries from `queue`
/// up to this are the writers', in create order the ones readers wait for.
pub(crate) fn writers_end(queue: &str) -> String {
    format!("{queue}g")
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
        let permit = entry("p", &key, &owner, LockMode::Permit { limit: 3 });
        let end = writers_end(&q);
        assert!(q.as_str() <= writer.as_str() && writer < end);
        assert!(q.as_str() <= permit.as_str() && permit < end);
        assert!(reader > end && reader.starts_with(&q));
        assert_eq!(mode_of(reader.as_bytes(), b""), LockMode::Shared);
        assert_eq!(mode_of(writer.as_bytes(), b"x:y"), LockMode::Exclusive);
        let held = value(LockMode::Permit { limit: 3 }, "job:7");
        assert_eq!(
            mode_of(permit.as_bytes(), held.as_bytes()),
            LockMode::Permit { limit: 3 }
        );
        assert_eq!(
            label_of(permit.as_bytes(), held.as_bytes()).as_deref(),
            Some("job:7")
        );
        assert_eq!(
            label_of(writer.as_bytes(), b"job:7").as_deref(),
            Some("job:7")
        );
    }
}
