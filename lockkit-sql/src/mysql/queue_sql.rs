//! The queue of waiters, `<table>_queue` ([`crate::turns`]): its table, its
//! statements, and the turn clause the exclusive statements carry.

use super::sql::TEXT;

/// Creates the queue if it is missing. A waiter's place (`since`) is an
/// auto-increment number: later rows, of any key, have larger ones.
pub(super) fn create_queue(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t}_queue (
            name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
            waiter CHAR(32) NOT NULL,
            mode VARCHAR(9) NOT NULL,
            since BIGINT NOT NULL AUTO_INCREMENT,
            expires_at DATETIME(6) NOT NULL,
            PRIMARY KEY (name, waiter),
            KEY (since)
        ) ENGINE=InnoDB {TEXT}"
    )
}

/// Queues a waiter behind the key's last, or pushes its row out (it keeps its
/// place). Binds: name, waiter, mode, lifetime µs, lifetime µs.
pub(super) fn enqueue(t: &str) -> String {
    format!(
        "INSERT INTO {t}_queue (name, waiter, mode, expires_at)
         VALUES (?, ?, ?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)
         ON DUPLICATE KEY UPDATE expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND"
    )
}

/// Marks the key's row as having a reader queued until at least `lifetime`
/// from now, which a reader runs after each [`enqueue`], so past its queue
/// row's expiry: a write hold's [`super::sql::acquire`] then reads its turn.
/// Nothing pulls it back; it lapses. Binds: lifetime µs, name.
pub(super) fn readers_queued(t: &str) -> String {
    format!(
        "UPDATE {t} SET readers_until = GREATEST(COALESCE(readers_until, UTC_TIMESTAMP(6)),
                                                 UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)
         WHERE name = ?"
    )
}

/// Takes a waiter's row out, and the key's lapsed ones. Binds: name, waiter.
pub(super) fn dequeue(t: &str) -> String {
    format!(
        "DELETE FROM {t}_queue WHERE name = ? AND (waiter = ? OR expires_at <= UTC_TIMESTAMP(6))"
    )
}

/// The key's live queue, in order. Binds: name.
pub(super) fn live_queue(t: &str) -> String {
    format!(
        "SELECT waiter, mode, since FROM {t}_queue
         WHERE name = ? AND expires_at > UTC_TIMESTAMP(6) ORDER BY since"
    )
}

/// Whether it is a write hold's turn to take a free key: no live reader's row
/// queued ahead of it, nor, when fair, anyone's. It reads only the queue, never
/// the key row, so an assignment of the key's upsert gets the same answer
/// wherever the server puts it (invariant M3). Binds: name, waiter, 1 when fair,
/// waiter.
pub(super) fn turn(t: &str) -> String {
    format!(
        "NOT EXISTS (
            SELECT 1 FROM {t}_queue q
            WHERE q.name = ? AND q.waiter <> ? AND q.expires_at > UTC_TIMESTAMP(6)
              AND (? = 1 OR q.mode = 'shared')
              AND NOT EXISTS (
                  SELECT 1 FROM {t}_queue m
                  WHERE m.name = q.name AND m.waiter = ? AND m.expires_at > UTC_TIMESTAMP(6)
                    AND m.since < q.since))"
    )
}
