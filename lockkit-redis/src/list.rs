//! Listing held locks on a single server: `SCAN` for the lock keys
//! (`<prefix>:{K}:lock`) whose names start with the prefix asked for. Only lock
//! keys that exist are found, and a lock key exists only while held. A Cluster
//! would need a scan of every master; it is refused, as is a listing with
//! `keys=plain`, where a lock may be any key.

use lockkit_core::{LockError, LockKey, Result};

use crate::driver::{NAME, RedisDriver};
use crate::error::redis_error;

/// Keys examined per `SCAN` call.
const SCAN_COUNT: usize = 1000;
/// The most `SCAN` calls one listing makes (bounds a listing of a huge keyspace).
const MAX_SCANS: usize = 10_000;

impl RedisDriver {
    /// The held keys whose names start with `prefix`, in order, at most `limit`.
    pub(crate) async fn list_keys(&self, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
        if self.is_cluster() {
            return Err(LockError::Unsupported {
                driver: NAME,
                capability: "listing held locks on a Cluster (it needs a scan of every master)",
            });
        }
        if self.keys == crate::KeyLayout::Plain {
            return Err(LockError::Unsupported {
                driver: NAME,
                capability: "listing held locks with keys=plain (a lock is any key)",
            });
        }
        let head = format!("{}:{{", self.prefix);
        let pattern = format!("{}{}*}}:lock", glob_escape(&head), glob_escape(prefix));
        let mut conn = self.conn.clone();
        let mut cursor: u64 = 0;
        let mut keys = Vec::new();
        for _ in 0..MAX_SCANS {
            let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(SCAN_COUNT)
                .query_async(&mut conn)
                .await
                .map_err(redis_error)?;
            keys.extend(found.iter().filter_map(|k| {
                let name = k.strip_prefix(&head)?.strip_suffix("}:lock")?;
                LockKey::new(name).ok()
            }));
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        keys.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        keys.dedup();
        keys.truncate(limit);
        Ok(keys)
    }
}

/// `s` with Redis glob's special characters escaped.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::glob_escape;

    #[test]
    fn glob_characters_in_a_prefix_match_only_themselves() {
        assert_eq!(glob_escape("jobs/*[a]?\\"), "jobs/\\*\\[a\\]\\?\\\\");
        assert_eq!(glob_escape("plain:{x}"), "plain:{x}");
    }
}
