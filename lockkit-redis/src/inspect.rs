//! Inspection: one read-only run of `inspect.lua` on the key's slot. The lock's
//! value names its holder (`owner:token[:label]`), its PTTL is the lease left, and
//! the live waiters are counted. While readers or a semaphore's permits hold, the
//! value is `~S` or `~P<limit>`, and each live hold comes back with its lease left
//! and `token[:label]`.

use std::time::Duration;

use lockkit_core::driver::{Holder, Inspection};
use lockkit_core::{FencingToken, LockKey, LockMode, Result};

use crate::driver::RedisDriver;
use crate::error::redis_error;

impl RedisDriver {
    /// The holder and the waiter count of `key`.
    pub(crate) async fn inspect_key(&self, key: &LockKey) -> Result<Inspection> {
        let n = self.names(key);
        let mut conn = self.conn.clone();
        let mut invocation = self.scripts.inspect.prepare_invoke();
        for key in n.all() {
            invocation.key(key);
        }
        let (value, pttl_ms, waiting, holds): (Vec<u8>, i64, usize, Vec<String>) = invocation
            .invoke_async(&mut conn)
            .await
            .map_err(redis_error)?;
        // Another library's value (`keys=plain`) may be any bytes.
        let value = String::from_utf8_lossy(&value);
        let holders = if value == "~S" {
            shared_holders(LockMode::Shared, &holds)
        } else if let Some(limit) = value.strip_prefix("~P") {
            match limit.parse::<u32>() {
                Ok(limit) => shared_holders(LockMode::Permit { limit }, &holds),
                Err(_) => Vec::new(),
            }
        } else {
            holder(&value, pttl_ms).into_iter().collect()
        };
        Ok(Inspection::free(key.clone())
            .with_holders(holders)
            .with_waiters(waiting))
    }
}

/// The holder a lock's value and PTTL describe; `None` for a free key. A value
/// that is not lockkit's is another library's hold (`keys=plain`): an exclusive
/// holder with token 0 (it took none), labelled as foreign.
fn holder(value: &str, pttl_ms: i64) -> Option<Holder> {
    if value.is_empty() {
        return None;
    }
    let Some((token, label)) = lockkit_hold(value) else {
        return Some(remaining(
            Holder::new(LockMode::Exclusive, FencingToken(0))
                .with_label(Some(FOREIGN_LABEL.to_owned())),
            pttl_ms,
        ));
    };
    let held = Holder::new(LockMode::Exclusive, FencingToken(token)).with_label(label);
    Some(remaining(held, pttl_ms))
}

/// What another library's hold is labelled as in an inspection.
pub(crate) const FOREIGN_LABEL: &str = "(not lockkit: another library's SET NX hold)";

/// The token and label of a lockkit value, `owner:token[:label]`, where the owner
/// is hex digits (32 of them) and the token a number.
fn lockkit_hold(value: &str) -> Option<(u64, Option<String>)> {
    let (owner, rest) = value.split_once(':')?;
    if owner.is_empty() || !owner.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let (token, label) = match rest.split_once(':') {
        Some((token, label)) => (token, Some(label.to_string())),
        None => (rest, None),
    };
    Some((token.parse::<u64>().ok()?, label))
}

/// `held` with the lease left that `pttl_ms` gives (-1: no expiry, not lockkit's
/// doing; -2: gone since the read).
fn remaining(held: Holder, pttl_ms: i64) -> Holder {
    match u64::try_from(pttl_ms) {
        Ok(ms) => held.with_remaining(Duration::from_millis(ms)),
        Err(_) => held,
    }
}

/// The live readers or permits, all in `mode`, from `inspect.lua`'s flat list of
/// ms left and `token[:label]`.
fn shared_holders(mode: LockMode, holds: &[String]) -> Vec<Holder> {
    holds
        .chunks_exact(2)
        .filter_map(|pair| {
            let left = pair[0].parse::<u64>().ok()?;
            let (token, label) = match pair[1].split_once(':') {
                Some((token, label)) => (token, Some(label.to_string())),
                None => (pair[1].as_str(), None),
            };
            let token = FencingToken(token.parse().ok()?);
            Some(
                Holder::new(mode, token)
                    .with_remaining(Duration::from_millis(left))
                    .with_label(label),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_with_a_label_names_token_label_and_lease() {
        let h = holder("ab12:42:host/7/task-3", 1500).unwrap();
        assert_eq!(h.token, FencingToken(42));
        assert_eq!(h.label.as_deref(), Some("host/7/task-3"));
        assert_eq!(h.remaining, Some(Duration::from_millis(1500)));
        assert_eq!(h.mode, LockMode::Exclusive);
    }

    #[test]
    fn a_label_may_hold_colons_and_redlock_values_have_none() {
        let h = holder("ab12:7:billing:eu", 10).unwrap();
        assert_eq!(h.label.as_deref(), Some("billing:eu"));
        let plain = holder("ab12:7", -1).unwrap();
        assert_eq!(
            (plain.token, plain.label, plain.remaining),
            (FencingToken(7), None, None)
        );
    }

    #[test]
    fn permits_come_with_their_limit_token_lease_and_label() {
        let list = ["900", "5:worker-a", "1200", "6"].map(String::from);
        let held = shared_holders(LockMode::Permit { limit: 3 }, &list);
        assert_eq!(held.len(), 2);
        assert_eq!(held[0].mode, LockMode::Permit { limit: 3 });
        assert_eq!(
            (held[0].token, held[0].label.as_deref()),
            (FencingToken(5), Some("worker-a"))
        );
        assert_eq!(
            (held[1].token, held[1].remaining),
            (FencingToken(6), Some(Duration::from_millis(1200)))
        );
        let readers = shared_holders(LockMode::Shared, &list[..2]);
        assert_eq!(readers[0].mode, LockMode::Shared);
    }

    #[test]
    fn a_free_key_has_no_holder_and_a_foreign_value_is_a_foreign_holder() {
        assert!(holder("", -2).is_none());
        // redis-py's token, a value with a non-hex owner, one without a token.
        for value in [
            "7f3a9c0e5b2d4e6f8a1b3c5d7e9f0a1b",
            "not-ours:12",
            "ab12:notanumber",
        ] {
            let h = holder(value, 100).unwrap();
            assert_eq!(
                (h.mode, h.token, h.label.as_deref()),
                (LockMode::Exclusive, FencingToken(0), Some(FOREIGN_LABEL)),
                "{value}"
            );
            assert_eq!(h.remaining, Some(Duration::from_millis(100)));
        }
    }
}
