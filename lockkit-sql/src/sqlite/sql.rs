//! The statements, with the table name spliced in (validated as an identifier).

/// Creates the lease table if it is missing.
pub(super) fn create_table(table: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {table} (
            name TEXT PRIMARY KEY NOT NULL,
            owner TEXT,
            fence INTEGER NOT NULL,
            expires_at INTEGER NOT NULL
        ) WITHOUT ROWID"
    )
}

/// Takes the lock if it is free, expired or already ours; bumps the fencing counter
/// unless the current live holder is re-acquiring. Returns the token, or no row.
///
/// `?1` name, `?2` owner, `?3` new expiry, `?4` now.
pub(super) fn acquire(table: &str) -> String {
    format!(
        "INSERT INTO {table} (name, owner, fence, expires_at) VALUES (?1, ?2, 1, ?3)
         ON CONFLICT(name) DO UPDATE SET
             fence = CASE WHEN owner = excluded.owner AND expires_at > ?4
                          THEN fence ELSE fence + 1 END,
             owner = excluded.owner,
             expires_at = excluded.expires_at
         WHERE owner IS NULL OR owner = excluded.owner OR expires_at <= ?4
         RETURNING fence"
    )
}

/// Pushes out our live lease. `?1` name, `?2` owner, `?3` new expiry, `?4` now.
pub(super) fn extend(table: &str) -> String {
    format!(
        "UPDATE {table} SET expires_at = ?3
         WHERE name = ?1 AND owner = ?2 AND expires_at > ?4"
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
        "UPDATE {table} SET owner = NULL, expires_at = 0
         WHERE name = ?1 AND owner = ?2 AND expires_at > ?3"
    )
}

/// Frees whoever holds the lock (operator break-glass, fault injection).
pub(super) fn force_release(table: &str) -> String {
    format!("UPDATE {table} SET owner = NULL, expires_at = 0 WHERE name = ?1")
}

/// Deletes the lock's row, fencing counter and all (`purge`: throwaway keys only).
/// `?1` name.
pub(super) fn purge(table: &str) -> String {
    format!("DELETE FROM {table} WHERE name = ?1")
}
