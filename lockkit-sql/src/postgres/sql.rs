//! The statements, with the table name spliced in (validated as an identifier).

/// Creates the lease table if missing.
pub(super) fn create_table(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t} (
            name TEXT PRIMARY KEY,
            owner TEXT,
            fence BIGINT NOT NULL,
            expires_at TIMESTAMPTZ NOT NULL
        )"
    )
}

/// Takes the lock if free, expired or ours. `$1` name, `$2` owner, `$3` TTL in ms.
pub(super) fn acquire(t: &str) -> String {
    format!(
        "INSERT INTO {t} AS l (name, owner, fence, expires_at)
         VALUES ($1, $2, 1, clock_timestamp() + $3::float8 * interval '1 millisecond')
         ON CONFLICT (name) DO UPDATE SET
             fence = CASE WHEN l.owner = EXCLUDED.owner AND l.expires_at > clock_timestamp()
                          THEN l.fence ELSE l.fence + 1 END,
             owner = EXCLUDED.owner,
             expires_at = EXCLUDED.expires_at
         WHERE l.owner IS NULL OR l.owner = EXCLUDED.owner OR l.expires_at <= clock_timestamp()
         RETURNING fence"
    )
}

/// Pushes out our live lease. `$1` name, `$2` owner, `$3` TTL in ms.
pub(super) fn extend(t: &str) -> String {
    format!(
        "UPDATE {t} SET expires_at = clock_timestamp() + $3::float8 * interval '1 millisecond'
         WHERE name = $1 AND owner = $2 AND expires_at > clock_timestamp()"
    )
}

/// Pushes out many live leases. `$1` TTL in ms, `$2` names, `$3` owners.
pub(super) fn extend_many(t: &str) -> String {
    format!(
        "UPDATE {t} AS l SET expires_at = clock_timestamp() + $1::float8 * interval '1 millisecond'
         FROM unnest($2::text[], $3::text[]) AS r(name, owner)
         WHERE l.name = r.name AND l.owner = r.owner AND l.expires_at > clock_timestamp()
         RETURNING l.name, l.owner"
    )
}

/// Frees our live lease and notifies waiters. `$1` name, `$2` owner, `$3` channel.
pub(super) fn release(t: &str) -> String {
    format!(
        "WITH freed AS (
             UPDATE {t} SET owner = NULL, expires_at = '-infinity'
             WHERE name = $1 AND owner = $2 AND expires_at > clock_timestamp()
             RETURNING name)
         SELECT count(pg_notify($3, name)) FROM freed"
    )
}

/// Frees whoever holds the lock, and notifies. `$1` name, `$2` channel.
pub(super) fn force_release(t: &str) -> String {
    format!(
        "WITH freed AS (
             UPDATE {t} SET owner = NULL, expires_at = '-infinity'
             WHERE name = $1 AND expires_at > clock_timestamp()
             RETURNING name)
         SELECT count(pg_notify($2, name)) FROM freed"
    )
}

/// Deletes the lock's row, fencing counter and all (`purge`: throwaway keys only).
/// `$1` name.
pub(super) fn purge(t: &str) -> String {
    format!("DELETE FROM {t} WHERE name = $1")
}
