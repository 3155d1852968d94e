//! The key table's statements, with the table name spliced in (validated as an
//! identifier). The holders table's are in [`super::holder_sql`], the queue's in
//! [`super::queue_sql`].

use super::queue_sql;

/// The key table's columns an earlier lockkit did not make, with their
/// definitions: `sleeper` ([`super::first_in_line`]) and `readers_until`
/// ([`acquire`]).
pub(super) const LATER_COLUMNS: [(&str, &str); 2] = [
    ("sleeper", "BIGINT UNSIGNED NULL"),
    ("readers_until", "DATETIME(6) NULL"),
];

/// Every lockkit table's text, whatever the server's default character set
/// (MariaDB's built-in default is latin1): keys, labels and election values
/// hold any Unicode text, emoji included, compared byte by byte.
pub(super) const TEXT: &str = "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

/// A `label` column: the owner's label and an election's value, any text.
pub(super) const LABEL: &str = "TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL";

/// Creates the key table if missing.
pub(super) fn create_table(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t} (
            name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
            owner CHAR(32) NULL,
            fence BIGINT NOT NULL,
            expires_at DATETIME(6) NOT NULL,
            label {LABEL},
            sleeper BIGINT UNSIGNED NULL,
            readers_until DATETIME(6) NULL
        ) ENGINE=InnoDB {TEXT}"
    )
}

/// What [`acquire`] reports as its last-insert id when the key is free but a
/// reader may wait in its queue: then [`acquire_in_turn`] decides. Never a
/// token, which is a signed `BIGINT`.
pub(super) const READERS_QUEUED: u64 = u64::MAX;

/// A key row that no exclusive hold has: free, or its lease over.
const FREE: &str = "(owner IS NULL OR expires_at <= UTC_TIMESTAMP(6))";

/// Takes the key if free, expired or ours, in one statement: a key never seen
/// is created held by us with token 1, an existing row is taken if already ours
/// and live (then with its token kept), or free or expired and no reader may
/// be queued on it. The token comes back as the statement's last-insert id, 0
/// if the key is someone else's, [`READERS_QUEUED`] if it is free but a reader
/// may be queued (the row is then left as it was).
///
/// This is a non-fair write hold's attempt. Its turn ([`queue_sql::turn`]) is
/// always ours unless a reader waits, and reading the queue costs the server
/// twice the rest of the statement (about 110 µs on MariaDB, even in a branch
/// never taken). So the key row keeps `readers_until`, which a queued reader
/// pushes out past its queue row's expiry ([`queue_sql::readers_queued`]),
/// and only a free key with a live `readers_until` takes a second statement.
/// Binds: [`acquire_in_turn`]'s, without the turn's.
pub(super) fn acquire(t: &str) -> String {
    let readers_gone = "(readers_until IS NULL OR readers_until <= UTC_TIMESTAMP(6))";
    // `~0` is READERS_QUEUED, all ones; both branches unsigned, or the
    // server converts it to a signed integer, and fails.
    let refused = format!("IF({FREE}, ~0, CAST(0 AS UNSIGNED))");
    upsert(t, "NULL", readers_gone, &refused)
}

/// [`acquire`] for any exclusive request, fair or not, with its turn read
/// from the queue ([`queue_sql::turn`]): the token as the last-insert id, or 0.
/// (Shared holds and permits keep the owner at [`crate::holds::MANY`], which is
/// nobody's id.)
///
/// The turn is read once, in the inserted row: its `sleeper` is NULL in our
/// turn and 0 if not, both of which a new row reads as "no sleeper"
/// ([`super::first_in_line`]), and every assignment asks `VALUES(sleeper)`.
/// (Read in each assignment, the queue's subquery cost the server about
/// 50 µs each, five times per attempt.) Binds: name, owner, TTL µs, label,
/// then [`queue_sql::turn`]'s; then, each after a take's owner: owner
/// (`fence`); label; nothing (`sleeper`); owner; TTL µs.
pub(super) fn acquire_in_turn(t: &str) -> String {
    let turn = queue_sql::turn(t);
    upsert(
        t,
        &format!("IF({turn}, NULL, 0)"),
        "VALUES(sleeper) IS NULL",
        "0",
    )
}

/// The exclusive upsert: a new row held by us with its `sleeper`; an existing
/// row taken if ours and live, or [`FREE`] and `our_turn`; else left as it
/// was, with `refused` as the last-insert id (compared, not added, to the
/// signed `fence`, which [`READERS_QUEUED`] would overflow).
///
/// Its meaning does not depend on the order in which the server assigns
/// (invariant M3: `SIMULTANEOUS_ASSIGNMENT` reads old values, the default
/// reads each assigned column's new one). Every assignment but the last reads
/// only columns assigned after it, columns no assignment changes
/// (`readers_until`), and `VALUES(…)`; the last, `expires_at`, asks "ours and
/// live, or free and our turn?", which has the same answer on the old row and
/// on the new one: taken, the new owner is ours and the old expiry tells which
/// of the two it was; refused, owner and expiry are unchanged. A grant clears
/// the key's `sleeper`.
fn upsert(t: &str, sleeper: &str, our_turn: &str, refused: &str) -> String {
    let take = format!("(owner = ? AND expires_at > UTC_TIMESTAMP(6)) OR ({FREE} AND {our_turn})");
    format!(
        "INSERT INTO {t} (name, owner, fence, expires_at, label, sleeper)
         VALUES (?, ?, LAST_INSERT_ID(1), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, ?,
                 {sleeper})
         ON DUPLICATE KEY UPDATE
             fence = IF({take},
                 LAST_INSERT_ID(IF(owner = ? AND expires_at > UTC_TIMESTAMP(6), fence, fence + 1)),
                 fence + 0 * (LAST_INSERT_ID({refused}) > 0)),
             label = IF({take}, ?, label),
             sleeper = IF({take}, NULL, sleeper),
             owner = IF({take}, ?, owner),
             expires_at = IF({take}, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, expires_at)"
    )
}

/// Takes the key if it is free or expired and our turn, by updating its row:
/// what a waiter that a release woke runs, expecting the key free ([`acquire`]
/// takes a missing or held row's answer). The token is the last-insert id; no
/// row changes if the key is held, has no row, or is not our turn. Binds:
/// owner, label, TTL µs, name, then [`queue_sql::turn`]'s.
pub(super) fn take_free(t: &str) -> String {
    let turn = queue_sql::turn(t);
    format!(
        "UPDATE {t} SET fence = LAST_INSERT_ID(fence + 1), owner = ?, label = ?,
             expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, sleeper = NULL
         WHERE name = ? AND {FREE} AND {turn}"
    )
}

/// Stores a new label and election value on our live exclusive lease. Binds:
/// text, name, owner.
pub(super) fn proclaim(t: &str) -> String {
    format!(
        "UPDATE {t} SET label = ?
         WHERE name = ? AND owner = ? AND expires_at > UTC_TIMESTAMP(6)"
    )
}

/// The live keys whose names start with a prefix. Binds: the prefix's length in
/// characters, the prefix, the most rows.
pub(super) fn list(t: &str) -> String {
    format!(
        "SELECT name FROM {t}
         WHERE owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(6) AND LEFT(name, ?) = ?
         ORDER BY name LIMIT ?"
    )
}

/// Pushes out our live lease. Binds: TTL µs, name, owner.
pub(super) fn extend(t: &str) -> String {
    format!(
        "UPDATE {t} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
         WHERE name = ? AND owner = ? AND expires_at > UTC_TIMESTAMP(6)"
    )
}

/// Frees our live lease, and reports in `LAST_INSERT_ID` the row's `sleeper`
/// mark (a connection id, 0 if none: see [`super::first_in_line`]), which it
/// clears: whether a waiter first in line may be asleep on the key's bell. (Not `IS_USED_LOCK` of the bell, which in a
/// statement that writes is unsafe for statement-based replication: invariant
/// M5.) `fence + 0 * …` leaves the fence as it is, and reads `sleeper` before
/// any order of assignment clears it (invariant M3). Binds: name, owner.
pub(super) fn release(t: &str) -> String {
    format!(
        "UPDATE {t} SET owner = NULL, expires_at = '1970-01-01 00:00:01',
             fence = fence + 0 * LAST_INSERT_ID(COALESCE(sleeper, 0)), sleeper = NULL
         WHERE name = ? AND owner = ? AND expires_at > UTC_TIMESTAMP(6)"
    )
}

/// Frees whoever holds the lock (the key row locked, its holders rows deleted
/// first). Binds: name.
pub(super) fn force_release(t: &str) -> String {
    format!(
        "UPDATE {t} SET owner = NULL, expires_at = '1970-01-01 00:00:01', label = NULL
         WHERE name = ? AND owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(6)"
    )
}

/// Deletes the lock's row, fencing counter and all (`purge`: throwaway keys only;
/// its holders rows go first). `?` name.
pub(super) fn purge(t: &str) -> String {
    format!("DELETE FROM {t} WHERE name = ?")
}

/// The milliseconds left of a lease ending at `column`, 0 once it has ended.
pub(super) fn ms_left(column: &str) -> String {
    format!("GREATEST(0, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), {column}) DIV 1000)")
}
