//! The statements of shared holds and permits: the holders table, and the key row
//! they keep at [`MANY`] (see [`crate::holds`]).
//!
//! Every change to a key's holders runs in a transaction that first locks the key
//! row ([`lock_key`]). Under READ COMMITTED each later statement reads a fresh
//! snapshot, taken after that lock was granted, so it sees every hold committed
//! before: two transactions never decide on the same stale view.

use super::sql::ms_left;
use crate::holds::MANY;

/// Creates the holders table if missing.
pub(super) fn create_holders(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t}_holders (
            name TEXT NOT NULL,
            owner TEXT NOT NULL,
            mode TEXT NOT NULL,
            lim BIGINT,
            token BIGINT NOT NULL,
            expires_at TIMESTAMPTZ NOT NULL,
            label TEXT,
            PRIMARY KEY (name, owner)
        )"
    )
}

/// Locks the key row (creating it, free, for a key never seen) and returns it:
/// owner, fence, ms left, label. `$1` name.
pub(super) fn lock_key(t: &str) -> String {
    format!(
        "INSERT INTO {t} AS l (name, owner, fence, expires_at) VALUES ($1, NULL, 0, '-infinity')
         ON CONFLICT (name) DO UPDATE SET name = l.name
         RETURNING l.owner, l.fence, {}, l.label",
        ms_left("l.expires_at")
    )
}

/// The key's live holders rows, oldest first: owner, mode, limit, token, ms
/// left, label. `$1` name.
pub(super) fn live_holders(t: &str) -> String {
    format!(
        "SELECT owner, mode, lim, token, {}, label FROM {t}_holders
         WHERE name = $1 AND expires_at > clock_timestamp() ORDER BY token",
        ms_left("expires_at")
    )
}

/// Grants a shared hold or permit: bumps the key's counter, keeps the key row
/// at [`MANY`] with the latest expiry, forgets other owners' expired rows, and
/// records the hold with the new token. Returns the token. `$1` name, `$2`
/// owner, `$3` TTL in ms, `$4` mode, `$5` limit, `$6` label.
pub(super) fn grant(t: &str) -> String {
    format!(
        "WITH e AS (SELECT clock_timestamp() + $3::float8 * interval '1 millisecond' AS at),
         k AS (UPDATE {t} AS l SET
                   fence = l.fence + 1,
                   expires_at = CASE WHEN l.owner = '{MANY}'
                                     THEN GREATEST(l.expires_at, e.at) ELSE e.at END,
                   owner = '{MANY}',
                   label = NULL
               FROM e WHERE l.name = $1
               RETURNING l.fence, e.at),
         dead AS (DELETE FROM {t}_holders
                  WHERE name = $1 AND owner <> $2 AND expires_at <= clock_timestamp())
         INSERT INTO {t}_holders AS h (name, owner, mode, lim, token, expires_at, label)
         SELECT $1, $2, $4, $5, k.fence, k.at, $6 FROM k
         ON CONFLICT (name, owner) DO UPDATE SET
             mode = EXCLUDED.mode, lim = EXCLUDED.lim, token = EXCLUDED.token,
             expires_at = EXCLUDED.expires_at, label = EXCLUDED.label
         RETURNING token"
    )
}

/// Removes `owner`'s shared hold or permit (the key row locked): the key row's
/// expiry becomes the latest of the live holds left, and with none left the key
/// is free. Notifies when a live hold went; returns how many did (0 or 1).
/// `$1` name, `$2` owner, `$3` channel.
pub(super) fn release_holder(t: &str) -> String {
    format!(
        "WITH gone AS (DELETE FROM {t}_holders WHERE name = $1 AND owner = $2
                       RETURNING expires_at > clock_timestamp() AS live),
         rest AS (SELECT max(expires_at) AS at FROM {t}_holders
                  WHERE name = $1 AND owner <> $2 AND expires_at > clock_timestamp()),
         settle AS (UPDATE {t} AS l SET
                        expires_at = COALESCE(rest.at, '-infinity'),
                        owner = CASE WHEN rest.at IS NULL THEN NULL ELSE '{MANY}' END
                    FROM rest
                    WHERE l.name = $1 AND l.owner = '{MANY}'
                      AND EXISTS (SELECT 1 FROM gone WHERE live))
         SELECT count(pg_notify($3, $1)) FROM gone WHERE live"
    )
}

/// The key row and its holders rows in one snapshot, for inspection: a first
/// column says which (`k` or `h`), then the columns of
/// [`crate::holds::KeyRow`] or [`crate::holds::HolderRow`] (unused ones NULL).
/// `$1` name.
pub(super) fn inspect(t: &str) -> String {
    format!(
        "SELECT 'k', owner, NULL::text, NULL::bigint, fence, {}, label FROM {t} WHERE name = $1
         UNION ALL
         SELECT 'h', owner, mode, lim, token, {}, label FROM {t}_holders
         WHERE name = $1 AND expires_at > clock_timestamp()",
        ms_left("expires_at"),
        ms_left("expires_at")
    )
}
