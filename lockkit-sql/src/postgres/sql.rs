//! The key table's statements, with the table name spliced in (validated as an
//! identifier). The holders table's are in [`super::holder_sql`].

use super::waiter_sql;
use crate::holds::MANY;

/// Creates the key table if missing, and gives a table made by an earlier
/// lockkit its `label` and `wake_until` columns. `wake_until`: until when a
/// release must notify ([`super::waiter_sql::push_wake`]).
pub(super) fn create_table(t: &str) -> [String; 3] {
    [
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (
                name TEXT PRIMARY KEY,
                owner TEXT,
                fence BIGINT NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                label TEXT,
                wake_until TIMESTAMPTZ
            )"
        ),
        format!("ALTER TABLE {t} ADD COLUMN IF NOT EXISTS label TEXT"),
        format!("ALTER TABLE {t} ADD COLUMN IF NOT EXISTS wake_until TIMESTAMPTZ"),
    ]
}

/// Takes the lock if free, expired or ours. `$1` name, `$2` owner, `$3` TTL in
/// ms, `$4` label, `$5` 1 when fair. (Shared holds and permits keep the owner at
/// [`MANY`], which is nobody's id.)
pub(super) fn acquire(t: &str) -> String {
    format!(
        "INSERT INTO {t} AS l (name, owner, fence, expires_at, label)
         VALUES ($1, $2, 1, clock_timestamp() + $3::float8 * interval '1 millisecond', $4)
         {}",
        take_if_free(t, "$2", "$5")
    )
}

/// [`acquire`] for a waiter's next attempt, which will more often than not find
/// the key held. A key the statement's snapshot shows held by someone else
/// inserts nothing, so the attempt ends there: no conflict, so no row lock. The
/// lock would cost a transaction id (its commit then writes, and with
/// `synchronous_commit` flushes, the WAL), and would queue the attempt behind a
/// grant in progress. A snapshot that shows the key free goes on to the upsert,
/// whose `WHERE` re-checks the row's latest version. Not for a first attempt:
/// the look costs an uncontended acquire an index probe. `$1`–`$4` as
/// [`acquire`]; the waiter's row is named `me` and the fairness flag `fair`
/// (parameters, as `$N`).
pub(super) fn acquire_if_free(t: &str, me: &str, fair: &str) -> String {
    format!(
        "INSERT INTO {t} AS l (name, owner, fence, expires_at, label)
         SELECT $1, $2, 1, clock_timestamp() + $3::float8 * interval '1 millisecond', $4
         WHERE NOT EXISTS (
             SELECT 1 FROM {t}
             WHERE name = $1 AND owner <> $2 AND expires_at > clock_timestamp())
         {}",
        take_if_free(t, me, fair)
    )
}

/// The upsert of [`acquire`] and [`acquire_if_free`]: a new token unless the
/// owner already holds the lease. A free or expired key is taken only in turn
/// ([`crate::turns`]): with no live reader's row of the queue ahead of `me`'s
/// (the waiter's row: its owner's for a polling waiter; every row is ahead of
/// a request not queued), or, when `fair` (an int parameter, 1 for fair), no
/// row at all. `me`'s place is read once, not once per row of the queue
/// (a plan made while the table was empty could otherwise scan it once per
/// row); with no live row of its own, it is `('infinity', '')`, behind
/// every row.
fn take_if_free(t: &str, me: &str, fair: &str) -> String {
    format!(
        "ON CONFLICT (name) DO UPDATE SET
             fence = CASE WHEN l.owner = EXCLUDED.owner AND l.expires_at > clock_timestamp()
                          THEN l.fence ELSE l.fence + 1 END,
             owner = EXCLUDED.owner,
             expires_at = EXCLUDED.expires_at,
             label = EXCLUDED.label
         WHERE (l.owner = EXCLUDED.owner AND l.expires_at > clock_timestamp())
            OR ((l.owner IS NULL OR l.expires_at <= clock_timestamp())
                AND NOT EXISTS (
                    SELECT 1 FROM {t}_waiters q
                    WHERE q.name = $1 AND q.expires_at > clock_timestamp()
                      AND q.waiter IS DISTINCT FROM {me}
                      AND ({fair}::int8 = 1 OR q.mode = 'shared')
                      AND (q.since, q.waiter) < (
                          SELECT coalesce(max(m.since), 'infinity'), coalesce(max(m.waiter), '')
                          FROM {t}_waiters m
                          WHERE m.name = $1 AND m.waiter = {me}
                            AND m.expires_at > clock_timestamp())))
         RETURNING fence"
    )
}

/// Stores a new label and election value on our live exclusive lease. `$1` name,
/// `$2` owner, `$3` text.
pub(super) fn proclaim(t: &str) -> String {
    format!(
        "WITH stored AS (UPDATE {t} SET label = $3
                         WHERE name = $1 AND owner = $2 AND expires_at > clock_timestamp()
                         RETURNING 1)
         SELECT count(*) FROM stored"
    )
}

/// The live keys whose names start with a prefix. `$1` the prefix's length in
/// characters, `$2` the prefix, `$3` the most rows.
pub(super) fn list(t: &str) -> String {
    format!(
        "SELECT name FROM {t}
         WHERE owner IS NOT NULL AND expires_at > clock_timestamp() AND left(name, $1::int4) = $2
         ORDER BY name LIMIT $3"
    )
}

/// Pushes out our live lease, exclusive or not, in one statement: the key row's
/// for an exclusive hold; a shared hold's or permit's row and the key row's
/// expiry with it (both to the same instant) otherwise. A shared hold or permit
/// locks the key row first (`k`, which re-reads the row's latest version if it
/// had to wait): while the key is '*' and live no exclusive acquire can take it,
/// and one that took it first leaves `k` empty, so the renewal fails. Returns how
/// many holds it renewed. `$1` name, `$2` owner, `$3` TTL in ms.
pub(super) fn extend(t: &str) -> String {
    format!(
        "WITH e AS (SELECT clock_timestamp() + $3::float8 * interval '1 millisecond' AS at),
         x AS (UPDATE {t} AS l SET expires_at = e.at FROM e
               WHERE l.name = $1 AND l.owner = $2 AND l.expires_at > clock_timestamp()
               RETURNING 1),
         k AS (SELECT name FROM {t}
               WHERE name = $1 AND owner = '{MANY}' AND expires_at > clock_timestamp()
               FOR UPDATE),
         h AS (UPDATE {t}_holders AS h SET expires_at = e.at FROM e, k
               WHERE h.name = k.name AND h.owner = $2 AND h.expires_at > clock_timestamp()
               RETURNING 1),
         raise AS (UPDATE {t} AS l SET expires_at = GREATEST(l.expires_at, e.at) FROM e
                   WHERE l.name = $1 AND l.owner = '{MANY}' AND EXISTS (SELECT 1 FROM h))
         SELECT (SELECT count(*) FROM x) + (SELECT count(*) FROM h)"
    )
}

/// Pushes out many live leases, exclusive or not, as [`extend`] does one (the
/// key rows locked in name order). `$1` TTL in ms, `$2` names, `$3` owners;
/// returns the renewed `(name, owner)`s.
pub(super) fn extend_many(t: &str) -> String {
    format!(
        "WITH e AS (SELECT clock_timestamp() + $1::float8 * interval '1 millisecond' AS at),
         r AS (SELECT * FROM unnest($2::text[], $3::text[]) AS r(name, owner)),
         x AS (UPDATE {t} AS l SET expires_at = e.at FROM e, r
               WHERE l.name = r.name AND l.owner = r.owner AND l.expires_at > clock_timestamp()
               RETURNING l.name, l.owner),
         k AS (SELECT name FROM {t}
               WHERE name IN (SELECT name FROM r) AND owner = '{MANY}'
                 AND expires_at > clock_timestamp()
               ORDER BY name FOR UPDATE),
         h AS (UPDATE {t}_holders AS h SET expires_at = e.at FROM e, r, k
               WHERE h.name = r.name AND h.owner = r.owner AND h.name = k.name
                 AND h.expires_at > clock_timestamp()
               RETURNING h.name, h.owner),
         raise AS (UPDATE {t} AS l SET expires_at = GREATEST(l.expires_at, e.at) FROM e
                   WHERE l.owner = '{MANY}' AND l.name IN (SELECT name FROM h))
         SELECT name, owner FROM x UNION ALL SELECT name, owner FROM h"
    )
}

/// Frees our live lease, and notifies if anyone waits for or watches the key
/// (its `wake_until` is live: [`super::waiter_sql::push_wake`]; with nobody,
/// the release costs no listener a wake-up, and reads no queue). The payload
/// is the key, followed by [`super::queue::SEPARATOR`] and the oldest live
/// queued waiter when there is one ([`super::waiter_sql`]), which alone of the
/// queued waiters is woken. One statement with no CTE, so that the server
/// sets up no more than the `UPDATE`. Returns a row if it freed the lease,
/// none otherwise. `$1` name, `$2` owner, `$3` channel.
pub(super) fn release(t: &str) -> String {
    format!(
        "UPDATE {t} SET owner = NULL, expires_at = '-infinity'
         WHERE name = $1 AND owner = $2 AND expires_at > clock_timestamp()
         RETURNING CASE WHEN wake_until > clock_timestamp() THEN {} END",
        waiter_sql::notify_next(t, "$3", None)
    )
}

/// Frees whoever holds the lock, shared holds and permits included, and
/// notifies. Run with the key row locked ([`super::holder_sql::lock_key`]), so
/// that no hold is added meanwhile. `$1` name, `$2` channel.
pub(super) fn force_release(t: &str) -> String {
    format!(
        "WITH gone AS (DELETE FROM {t}_holders WHERE name = $1),
         freed AS (
             UPDATE {t} SET owner = NULL, expires_at = '-infinity', label = NULL
             WHERE name = $1 AND owner IS NOT NULL AND expires_at > clock_timestamp()
             RETURNING name)
         SELECT count(pg_notify($2, name)) FROM freed"
    )
}

/// Deletes the lock's rows, fencing counter and all (`purge`: throwaway keys
/// only). `$1` name.
pub(super) fn purge(t: &str) -> String {
    format!(
        "WITH gone AS (DELETE FROM {t}_holders WHERE name = $1),
         unqueued AS (DELETE FROM {t}_waiters WHERE name = $1)
         DELETE FROM {t} WHERE name = $1"
    )
}

/// The milliseconds left of a lease ending at `column`, 0 once it has ended.
pub(super) fn ms_left(column: &str) -> String {
    format!(
        "CASE WHEN {column} > clock_timestamp()
              THEN (extract(epoch FROM {column} - clock_timestamp()) * 1000)::bigint
              ELSE 0 END"
    )
}
