//! The statements of shared holds and permits: the holders table, and the key row
//! they keep at [`MANY`] (see [`crate::holds`]).
//!
//! Every change to a key's holders runs in a transaction whose first statement
//! locks the key row ([`lock_key`]); InnoDB's first consistent read, which comes
//! after, sees every hold committed before the lock was granted.

use super::sql::{LABEL, TEXT, ms_left};
use crate::holds::MANY;

/// Creates the holders table if missing.
pub(super) fn create_holders(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t}_holders (
            name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
            owner CHAR(32) NOT NULL,
            mode VARCHAR(8) NOT NULL,
            lim BIGINT NULL,
            token BIGINT NOT NULL,
            expires_at DATETIME(6) NOT NULL,
            label {LABEL},
            PRIMARY KEY (name, owner)
        ) ENGINE=InnoDB {TEXT}"
    )
}

/// Locks the key row and returns it: owner, fence, ms left, label. Binds: name.
pub(super) fn lock_key(t: &str) -> String {
    format!(
        "SELECT owner, fence, {}, label FROM {t} WHERE name = ? FOR UPDATE",
        ms_left("expires_at")
    )
}

/// Creates the key row, free, for a key never seen (and locks it). Binds: name.
pub(super) fn create_key(t: &str) -> String {
    format!(
        "INSERT INTO {t} (name, owner, fence, expires_at) VALUES (?, NULL, 0, '1970-01-01 00:00:01')
         ON DUPLICATE KEY UPDATE fence = fence"
    )
}

/// The key's holders rows, live or not, oldest first: owner, mode, limit, token,
/// ms left, label. Binds: name.
pub(super) fn holders(t: &str) -> String {
    format!(
        "SELECT owner, mode, lim, token, {}, label FROM {t}_holders
         WHERE name = ? ORDER BY token",
        ms_left("expires_at")
    )
}

/// Bumps the key's counter (the token comes back as the last-insert id) and
/// keeps the key row at [`MANY`] with the latest expiry. `expires_at` reads
/// the owner and is assigned before it, so it reads the old owner in whichever
/// order the server assigns (invariant M3). Binds: TTL µs, TTL µs, name.
pub(super) fn claim(t: &str) -> String {
    format!(
        "UPDATE {t} SET
             fence = LAST_INSERT_ID(fence + 1),
             expires_at = IF(owner = '{MANY}' AND expires_at > UTC_TIMESTAMP(6),
                             GREATEST(expires_at, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND),
                             UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND),
             owner = '{MANY}',
             label = NULL
         WHERE name = ?"
    )
}

/// Records the hold with the token [`claim`] made. Binds: name, owner, mode,
/// limit, TTL µs, label.
pub(super) fn insert_holder(t: &str) -> String {
    format!(
        "INSERT INTO {t}_holders (name, owner, mode, lim, token, expires_at, label)
         VALUES (?, ?, ?, ?, LAST_INSERT_ID(), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, ?)
         ON DUPLICATE KEY UPDATE mode = VALUES(mode), lim = VALUES(lim),
             token = VALUES(token), expires_at = VALUES(expires_at), label = VALUES(label)"
    )
}

/// Forgets one expired holders row. Binds: name, owner.
pub(super) fn forget_dead(t: &str) -> String {
    format!(
        "DELETE FROM {t}_holders WHERE name = ? AND owner = ? AND expires_at <= UTC_TIMESTAMP(6)"
    )
}

/// Pushes out a live shared hold or permit and the key row's expiry with it, to
/// the same instant, while the key row is [`MANY`] and live. The key row is
/// joined (and locked) first, as every transaction on the key's holders does, so
/// the two never wait for each other in opposite orders. Binds: TTL µs, TTL µs,
/// name, owner.
pub(super) fn extend_holder(t: &str) -> String {
    format!(
        "UPDATE {t} AS k STRAIGHT_JOIN {t}_holders AS h ON h.name = k.name SET
             h.expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND,
             k.expires_at = GREATEST(k.expires_at, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)
         WHERE k.name = ? AND h.owner = ? AND h.expires_at > UTC_TIMESTAMP(6)
           AND k.owner = '{MANY}' AND k.expires_at > UTC_TIMESTAMP(6)"
    )
}

/// Removes a live shared hold or permit (the key row locked). Binds: name, owner.
pub(super) fn release_holder(t: &str) -> String {
    format!(
        "DELETE FROM {t}_holders WHERE name = ? AND owner = ? AND expires_at > UTC_TIMESTAMP(6)"
    )
}

/// After a hold went: the key row's expiry becomes the latest of the live holds
/// left, and with none left the key is free. Both assignments read the joined
/// latest expiry, not each other, so the order the server assigns in does not
/// matter (invariant M3). Binds: name, name.
pub(super) fn settle(t: &str) -> String {
    format!(
        "UPDATE {t} AS k, (SELECT MAX(h.expires_at) AS latest FROM {t}_holders AS h
                          WHERE h.name = ? AND h.expires_at > UTC_TIMESTAMP(6)) AS l
         SET k.expires_at = COALESCE(l.latest, '1970-01-01 00:00:01'),
             k.owner = IF(l.latest IS NULL, NULL, '{MANY}')
         WHERE k.name = ? AND k.owner = '{MANY}'"
    )
}

/// Forgets every holders row of the key. Binds: name.
pub(super) fn forget_holders(t: &str) -> String {
    format!("DELETE FROM {t}_holders WHERE name = ?")
}

/// The key row and its holders rows in one snapshot, for inspection: a first
/// column says which (`k` or `h`), then the columns of
/// [`crate::holds::KeyRow`] or [`crate::holds::HolderRow`] (unused ones NULL).
/// Binds: name, name.
pub(super) fn inspect(t: &str) -> String {
    format!(
        "SELECT 'k', owner, NULL, NULL, fence, {}, label FROM {t} WHERE name = ?
         UNION ALL
         SELECT 'h', owner, mode, lim, token, {}, label FROM {t}_holders WHERE name = ?",
        ms_left("expires_at"),
        ms_left("expires_at")
    )
}
