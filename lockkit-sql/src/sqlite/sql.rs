//! The statements, with the table name spliced in (validated as an identifier).
//!
//! The key table has one row per key: its fencing counter, and either its exclusive
//! holder or [`MANY`], meaning shared holds or permits, which live in the holders
//! table, with the row's expiry the latest of theirs.

use std::sync::Arc;

use crate::holds::MANY;

/// Every statement, built once per driver.
#[derive(Debug)]
pub(super) struct Statements {
    pub(super) table: String,
    pub(super) acquire: Arc<str>,
    pub(super) extend: Arc<str>,
    pub(super) proclaim: Arc<str>,
    pub(super) list: Arc<str>,
    pub(super) release: Arc<str>,
    pub(super) force_release: Arc<str>,
    pub(super) purge: Arc<str>,
    pub(super) key_row: Arc<str>,
    pub(super) live_holders: Arc<str>,
    pub(super) drop_expired: Arc<str>,
    pub(super) claim_for_many: Arc<str>,
    pub(super) insert_holder: Arc<str>,
    pub(super) extend_holder: Arc<str>,
    pub(super) raise_expiry: Arc<str>,
    pub(super) release_holder: Arc<str>,
    pub(super) settle: Arc<str>,
    pub(super) forget_holders: Arc<str>,
    pub(super) enqueue: Arc<str>,
    pub(super) dequeue: Arc<str>,
    pub(super) live_queue: Arc<str>,
}

impl Statements {
    pub(super) fn new(table: &str) -> Self {
        Self {
            table: table.to_string(),
            acquire: acquire(table).into(),
            extend: extend(table).into(),
            proclaim: proclaim(table).into(),
            list: list(table).into(),
            release: release(table).into(),
            force_release: force_release(table).into(),
            purge: purge(table).into(),
            key_row: key_row(table).into(),
            live_holders: live_holders(table).into(),
            drop_expired: drop_expired(table).into(),
            claim_for_many: claim_for_many(table).into(),
            insert_holder: insert_holder(table).into(),
            extend_holder: extend_holder(table).into(),
            raise_expiry: raise_expiry(table).into(),
            release_holder: release_holder(table).into(),
            settle: settle(table).into(),
            forget_holders: forget_holders(table).into(),
            enqueue: enqueue(table).into(),
            dequeue: dequeue(table).into(),
            live_queue: live_queue(table).into(),
        }
    }
}

/// Creates the key table if it is missing.
pub(super) fn create_table(table: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {table} (
            name TEXT PRIMARY KEY NOT NULL,
            owner TEXT,
            fence INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            label TEXT
        ) WITHOUT ROWID"
    )
}

/// The key table's columns, to add `label` to a table made before it existed.
pub(super) fn table_columns(table: &str) -> String {
    format!("SELECT name FROM pragma_table_info('{table}')")
}

/// The main database's file: `''` in memory.
pub(super) const MAIN_FILE: &str = "SELECT file FROM pragma_database_list WHERE name = 'main'";

/// Adds the `label` column.
pub(super) fn add_label(table: &str) -> String {
    format!("ALTER TABLE {table} ADD COLUMN label TEXT")
}

/// Creates the holders table (shared holds and permits) if it is missing.
pub(super) fn create_holders(table: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {table}_holders (
            name TEXT NOT NULL,
            owner TEXT NOT NULL,
            mode TEXT NOT NULL,
            lim INTEGER,
            token INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            label TEXT,
            PRIMARY KEY (name, owner)
        ) WITHOUT ROWID"
    )
}

/// Takes the lock exclusively if it is already ours, or free or expired and
/// our turn ([`crate::turns`]: no live reader queued ahead of us, or when fair
/// no one); bumps the fencing counter unless the current live holder is
/// re-acquiring (invariants S1, S2). Returns the token, or no row. (Shared holds
/// and permits keep the row's owner at [`MANY`], which is nobody's id.)
///
/// `?1` name, `?2` owner, `?3` new expiry, `?4` now, `?5` label, `?6` 1 when fair.
pub(super) fn acquire(table: &str) -> String {
    format!(
        "INSERT INTO {table} (name, owner, fence, expires_at, label) VALUES (?1, ?2, 1, ?3, ?5)
         ON CONFLICT(name) DO UPDATE SET
             fence = CASE WHEN owner = excluded.owner AND expires_at > ?4
                          THEN fence ELSE fence + 1 END,
             owner = excluded.owner,
             expires_at = excluded.expires_at,
             label = excluded.label
         WHERE (owner = excluded.owner AND expires_at > ?4)
            OR ((owner IS NULL OR expires_at <= ?4)
                AND NOT EXISTS (
                    SELECT 1 FROM {table}_queue q
                    WHERE q.name = ?1 AND q.waiter <> ?2 AND q.expires_at > ?4
                      AND (?6 = 1 OR q.mode = 'shared')
                      AND NOT EXISTS (
                          SELECT 1 FROM {table}_queue m
                          WHERE m.name = ?1 AND m.waiter = ?2 AND m.expires_at > ?4
                            AND (m.since < q.since
                                 OR (m.since = q.since AND m.waiter < q.waiter)))))
         RETURNING fence"
    )
}

/// Creates the queue of waiters ([`crate::turns`]) if it is missing.
pub(super) fn create_queue(table: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {table}_queue (
            name TEXT NOT NULL,
            waiter TEXT NOT NULL,
            mode TEXT NOT NULL,
            since INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            PRIMARY KEY (name, waiter)
        ) WITHOUT ROWID"
    )
}

/// Queues a waiter behind the key's last, or pushes its row out (it keeps its
/// place). `?1` name, `?2` waiter, `?3` mode, `?4` expiry.
pub(super) fn enqueue(table: &str) -> String {
    format!(
        "INSERT INTO {table}_queue (name, waiter, mode, since, expires_at)
         VALUES (?1, ?2, ?3,
                 COALESCE((SELECT MAX(since) FROM {table}_queue WHERE name = ?1), 0) + 1, ?4)
         ON CONFLICT(name, waiter) DO UPDATE SET expires_at = excluded.expires_at"
    )
}

/// Takes a waiter's row out, and the key's lapsed ones. `?1` name, `?2` waiter,
/// `?3` now.
pub(super) fn dequeue(table: &str) -> String {
    format!("DELETE FROM {table}_queue WHERE name = ?1 AND (waiter = ?2 OR expires_at <= ?3)")
}

/// The key's live queue, in order. `?1` name, `?2` now.
pub(super) fn live_queue(table: &str) -> String {
    format!(
        "SELECT waiter, mode, since FROM {table}_queue
         WHERE name = ?1 AND expires_at > ?2 ORDER BY since, waiter"
    )
}

/// The key row, with its milliseconds left. `?1` name, `?2` now.
pub(super) fn key_row(table: &str) -> String {
    format!("SELECT owner, fence, expires_at - ?2, label FROM {table} WHERE name = ?1")
}

/// The key's live shared holds or permits, oldest first, with their milliseconds
/// left. `?1` name, `?2` now.
pub(super) fn live_holders(table: &str) -> String {
    format!(
        "SELECT owner, mode, lim, token, expires_at - ?2, label FROM {table}_holders
         WHERE name = ?1 AND expires_at > ?2 ORDER BY token"
    )
}

/// Forgets the key's expired holds. `?1` name, `?2` now.
pub(super) fn drop_expired(table: &str) -> String {
    format!("DELETE FROM {table}_holders WHERE name = ?1 AND expires_at <= ?2")
}

/// Bumps the counter of a key whose holds go in the holders table, keeping the
/// row's expiry the latest of theirs. `?1` name, `?2` the new hold's expiry.
pub(super) fn claim_for_many(table: &str) -> String {
    format!(
        "INSERT INTO {table} (name, owner, fence, expires_at) VALUES (?1, '{MANY}', 1, ?2)
         ON CONFLICT(name) DO UPDATE SET
             fence = fence + 1,
             expires_at = CASE WHEN owner = '{MANY}' THEN MAX(expires_at, ?2) ELSE ?2 END,
             owner = '{MANY}',
             label = NULL
         RETURNING fence"
    )
}

/// Records a shared hold or permit. `?1` name, `?2` owner, `?3` mode, `?4` limit,
/// `?5` token, `?6` expiry, `?7` label.
pub(super) fn insert_holder(table: &str) -> String {
    format!(
        "INSERT INTO {table}_holders (name, owner, mode, lim, token, expires_at, label)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(name, owner) DO UPDATE SET
             mode = excluded.mode, lim = excluded.lim, token = excluded.token,
             expires_at = excluded.expires_at, label = excluded.label"
    )
}

/// Pushes out a live shared hold or permit. `?1` name, `?2` owner, `?3` new expiry,
/// `?4` now.
pub(super) fn extend_holder(table: &str) -> String {
    format!(
        "UPDATE {table}_holders SET expires_at = ?3
         WHERE name = ?1 AND owner = ?2 AND expires_at > ?4
           AND EXISTS (SELECT 1 FROM {table}
                       WHERE name = ?1 AND owner = '{MANY}' AND expires_at > ?4)"
    )
}

/// Keeps a key row's expiry the latest of its holds'. `?1` name, `?2` an expiry.
pub(super) fn raise_expiry(table: &str) -> String {
    format!(
        "UPDATE {table} SET expires_at = MAX(expires_at, ?2)
         WHERE name = ?1 AND owner = '{MANY}'"
    )
}

/// Removes a shared hold or permit, live or not. `?1` name, `?2` owner, `?3` now;
/// returns whether it was live.
pub(super) fn release_holder(table: &str) -> String {
    format!(
        "DELETE FROM {table}_holders WHERE name = ?1 AND owner = ?2
         RETURNING expires_at > ?3"
    )
}

/// After a shared hold or permit went: the key row's expiry becomes the latest of
/// the live holds left, and with none left the key is free. `?1` name, `?2` now.
pub(super) fn settle(table: &str) -> String {
    format!(
        "UPDATE {table} SET
             expires_at = COALESCE(
                 (SELECT MAX(expires_at) FROM {table}_holders
                  WHERE name = ?1 AND expires_at > ?2), 0),
             owner = CASE WHEN EXISTS (SELECT 1 FROM {table}_holders
                                       WHERE name = ?1 AND expires_at > ?2)
                          THEN owner ELSE NULL END
         WHERE name = ?1 AND owner = '{MANY}'"
    )
}

/// Forgets every shared hold and permit of the key. `?1` name.
pub(super) fn forget_holders(table: &str) -> String {
    format!("DELETE FROM {table}_holders WHERE name = ?1")
}

/// Pushes out our live lease. `?1` name, `?2` owner, `?3` new expiry, `?4` now.
pub(super) fn extend(table: &str) -> String {
    format!(
        "UPDATE {table} SET expires_at = ?3
         WHERE name = ?1 AND owner = ?2 AND expires_at > ?4"
    )
}

/// Stores a new label and election value on our live exclusive lease. `?1` name,
/// `?2` owner, `?3` text, `?4` now.
pub(super) fn proclaim(table: &str) -> String {
    format!(
        "UPDATE {table} SET label = ?3
         WHERE name = ?1 AND owner = ?2 AND expires_at > ?4"
    )
}

/// The live keys whose names start with a prefix. `?1` now, `?2` the prefix's
/// length in characters, `?3` the prefix, `?4` the most rows.
pub(super) fn list(table: &str) -> String {
    format!(
        "SELECT name FROM {table}
         WHERE owner IS NOT NULL AND expires_at > ?1 AND substr(name, 1, ?2) = ?3
         ORDER BY name LIMIT ?4"
    )
}

/// Pushes out many live leases of the same TTL in one statement.
/// `?1` new expiry, `?2` now, then `(name, owner)` pairs.
pub(super) fn extend_many(table: &str, pairs: usize) -> String {
    let values: Vec<String> = (0..pairs)
        .map(|i| format!("(?{}, ?{})", 3 + 2 * i, 4 + 2 * i))
        .collect();
    format!(
        "UPDATE {table} SET expires_at = ?1
         WHERE expires_at > ?2 AND (name, owner) IN (VALUES {})
         RETURNING name, owner",
        values.join(", ")
    )
}

/// Frees our live lease. `?1` name, `?2` owner, `?3` now.
pub(super) fn release(table: &str) -> String {
    format!(
        "UPDATE {table} SET owner = NULL, expires_at = 0, label = NULL
         WHERE name = ?1 AND owner = ?2 AND expires_at > ?3"
    )
}

/// Frees the key row if anyone holds it live, whoever that is (operator
/// break-glass, fault injection); [`forget_holders`] goes with it. `?1` name, `?2`
/// now.
pub(super) fn force_release(table: &str) -> String {
    format!(
        "UPDATE {table} SET owner = NULL, expires_at = 0, label = NULL
         WHERE name = ?1 AND owner IS NOT NULL AND expires_at > ?2"
    )
}

/// Deletes the lock's row, fencing counter and all (`purge`: throwaway keys only;
/// invariant S2).
/// `?1` name.
pub(super) fn purge(table: &str) -> String {
    format!("DELETE FROM {table} WHERE name = ?1")
}
