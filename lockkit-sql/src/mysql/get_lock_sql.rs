//! `GET_LOCK` mode's statements. A lock's name is `SHA1('<table>:<key>')` (40
//! characters, within `GET_LOCK`'s 64), or with raw keys the key itself; slot `i`
//! of a semaphore is `SHA1('<table>:<key>\x01i')`. The holds' records keep the
//! hash of the name a hold took.

use super::sql::{LABEL, TEXT};

/// The fences table of `GET_LOCK` mode.
pub(super) fn create_fences(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t}_fences (
            name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
            fence BIGINT NOT NULL
        ) ENGINE=InnoDB {TEXT}"
    )
}

/// The holds' records, for inspection and the semaphore's limit check.
pub(super) fn create_holds(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t}_session_holds (
            name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
            session BIGINT UNSIGNED NOT NULL,  -- CONNECTION_ID() of the holder
            lock_name CHAR(40) NOT NULL,
            mode VARCHAR(16) NOT NULL,
            lim BIGINT NULL,
            token BIGINT NOT NULL,
            label {LABEL},
            PRIMARY KEY (name, session, lock_name)
        ) ENGINE=InnoDB {TEXT}"
    )
}

/// Bumps a key's counter; the new value comes back as the last-insert id.
pub(super) fn bump_fence(t: &str) -> String {
    format!(
        "INSERT INTO {t}_fences (name, fence) VALUES (?, LAST_INSERT_ID(1))
         ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(fence + 1)"
    )
}

/// Records this session's hold with the token just bumped. Binds: name, lock
/// name, mode, limit, label.
pub(super) fn record_hold(t: &str) -> String {
    format!(
        "INSERT INTO {t}_session_holds (name, session, lock_name, mode, lim, token, label)
         VALUES (?, CONNECTION_ID(), SHA1(?), ?, ?, LAST_INSERT_ID(), ?)
         ON DUPLICATE KEY UPDATE mode = VALUES(mode), lim = VALUES(lim),
             token = VALUES(token), label = VALUES(label)"
    )
}

/// Forgets this session's record of a hold. Binds: name, lock name.
pub(super) fn forget_hold(t: &str) -> String {
    format!(
        "DELETE FROM {t}_session_holds
         WHERE name = ? AND session = CONNECTION_ID() AND lock_name = SHA1(?)"
    )
}

/// The records whose session holds their lock: mode, limit, token, label,
/// session. Binds: name. (The record keeps the hash of a lock's name; with raw
/// keys the lock's name is the key, `name`.)
pub(super) fn live_holds(t: &str, raw: bool) -> String {
    let lock = if raw { "name" } else { "lock_name" };
    format!(
        "SELECT mode, lim, token, label, session FROM {t}_session_holds
         WHERE name = ? AND IS_USED_LOCK({lock}) = session ORDER BY token"
    )
}

/// `SELECT CAST(<function>(<the bound name, hashed unless raw>) AS SIGNED)`.
pub(super) fn on_name(function: &str, raw: bool) -> String {
    let name = if raw { "?" } else { "SHA1(?)" };
    let rest = if function == "GET_LOCK" { ", 0" } else { "" };
    format!("SELECT CAST({function}({name}{rest}) AS SIGNED)")
}

/// Tries `n` slots of a semaphore in order, in one statement, each lock name
/// bound: `CASE WHEN GET_LOCK(SHA1(?), 0) = 1 THEN 0 … ELSE -1 END` (the
/// position of the first taken).
pub(super) fn try_slots(n: u32) -> String {
    let whens: String = (0..n)
        .map(|i| format!(" WHEN GET_LOCK(SHA1(?), 0) = 1 THEN {i}"))
        .collect();
    format!("SELECT CAST(CASE{whens} ELSE -1 END AS SIGNED)")
}
