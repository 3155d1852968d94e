//! Where a lock lives in Redis.

use lockkit_core::LockKey;

/// The three Redis names of one lock, sharing the hash tag `{K}`.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub(crate) lock: String,
    pub(crate) fence: String,
    pub(crate) channel: String,
}

pub(crate) fn names(prefix: &str, key: &LockKey) -> Names {
    let base = format!("{prefix}:{{{}}}", key.as_str());
    Names {
        lock: format!("{base}:lock"),
        fence: format!("{base}:fence"),
        channel: format!("{base}:released"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_share_one_hash_tag() {
        let n = names("lockkit", &LockKey::new("orders:{eu}:7").unwrap());
        // Redis hashes the text between the first `{` and the next `}`: the same
        // for all three, even when the key itself has braces.
        let tag = |s: &str| {
            let open = s.find('{').unwrap();
            let close = open + s[open..].find('}').unwrap();
            s[open + 1..close].to_string()
        };
        assert_eq!(tag(&n.lock), tag(&n.fence));
        assert_eq!(tag(&n.lock), tag(&n.channel));
    }
}
