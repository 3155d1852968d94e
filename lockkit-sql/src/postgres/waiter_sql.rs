//! The statements of the waiter queue: `<table>_waiters`, one row per exclusive
//! acquire that waits, so that a release can name the one waiter to wake
//! ([`super::sql::release`]) instead of waking every driver's waiters.
//!
//! A waiter's row is written once, by the statement right after its first
//! attempt was refused ([`join_queue`]; the first attempt itself is the plain
//! upsert, so an acquire that does not wait pays nothing for the queue), and
//! again only to push its expiry out while it waits ([`requeue`]). Its later
//! refused attempts take no transaction id. It is deleted by the attempt that
//! grants, by the waiter leaving without a grant, or, once it has expired, by
//! the next waiter to join the key's queue.

use super::sql::acquire_if_free;

/// Creates the waiters table if missing, and gives one made by an earlier
/// lockkit its `mode` column (its rows were all exclusive waiters').
pub(super) fn create_waiters(t: &str) -> [String; 2] {
    [
        format!(
            "CREATE TABLE IF NOT EXISTS {t}_waiters (
                name TEXT NOT NULL,
                waiter TEXT NOT NULL,
                since TIMESTAMPTZ NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                mode TEXT NOT NULL DEFAULT 'exclusive',
                PRIMARY KEY (name, waiter)
            )"
        ),
        format!(
            "ALTER TABLE {t}_waiters ADD COLUMN IF NOT EXISTS mode TEXT NOT NULL DEFAULT 'exclusive'"
        ),
    ]
}

/// Pushes the key's `wake_until` out to `ttl` (a parameter, as `$N`, in ms)
/// from now, unless `condition` fails: a CTE named `woke`, whose `free` says
/// whether the key's latest version has no live exclusive holder. `$1` name.
///
/// A release notifies only while `wake_until` is live ([`super::sql::release`]),
/// so whoever waits or watches pushes it first. Both write the key row, so one
/// of them reads the other's write: a release that commits first, and so sent
/// nothing, leaves `free` true (this `UPDATE` re-reads the row's latest
/// version), and the waiter attempts again at once instead of waiting for a
/// notification that will not come.
///
/// A statement that writes both the key row and waiter rows writes the key row
/// first, so that two of them never wait for each other: its main query reads
/// `woke` (PostgreSQL runs a data-modifying CTE that nothing reads after the
/// main query). It also names the key table first, the order the migration
/// locks the tables in.
fn push_wake(t: &str, ttl: &str, condition: &str) -> String {
    format!(
        "woke AS (
             UPDATE {t} SET wake_until = GREATEST(wake_until,
                 clock_timestamp() + {ttl}::float8 * interval '1 millisecond')
             WHERE name = $1 AND {condition}
             RETURNING owner IS NULL OR expires_at <= clock_timestamp() AS free)"
    )
}

/// Whether the key was free when [`push_wake`]'s `woke` pushed, or had no row
/// to push (then the waiter attempts again too).
const FREE: &str = "coalesce((SELECT free FROM woke), true)";

/// Queues a shared or permit waiter (the lease table's polling waiters, named
/// by their owner id), or pushes its row out: a CTE named `queued`, whose
/// `fresh` says the row is new. `$1` name, `$2` waiter, `$3` time to live in
/// ms, `$4` mode.
fn polling_row(t: &str) -> String {
    format!(
        "queued AS (
             INSERT INTO {t}_waiters AS w (name, waiter, since, expires_at, mode)
             VALUES ($1, $2, clock_timestamp(),
                     clock_timestamp() + $3::float8 * interval '1 millisecond', $4)
             ON CONFLICT (name, waiter) DO UPDATE SET expires_at = EXCLUDED.expires_at
             RETURNING w.xmax = 0 AS fresh)"
    )
}

/// Queues a polling waiter ([`polling_row`]) and pushes the key's
/// `wake_until` as far ([`push_wake`]). Returns whether a release may have
/// passed the waiter by unnotified: the key is free now, and the row is new
/// (a refresh extends a live `wake_until`, which no release missed; a key free
/// only because of the queue's turns would otherwise wake the waiter at each).
/// `$1` name, `$2` waiter, `$3` time to live in ms, `$4` mode.
pub(super) fn enqueue(t: &str) -> String {
    format!(
        "WITH {}, {}
         SELECT {FREE} AND (SELECT fresh FROM queued)",
        push_wake(t, "$3", "true"),
        polling_row(t)
    )
}

/// An observer's interest in the key ([`crate::lease::LeaseBackend::watching`]):
/// pushes its `wake_until` out, making the key's row if it has none (free,
/// with no token handed out yet). `$1` name, `$2` time to live in ms.
pub(super) fn watch(t: &str) -> String {
    format!(
        "INSERT INTO {t} AS l (name, owner, fence, expires_at, wake_until)
         VALUES ($1, NULL, 0, '-infinity',
                 clock_timestamp() + $2::float8 * interval '1 millisecond')
         ON CONFLICT (name) DO UPDATE
             SET wake_until = GREATEST(l.wake_until, EXCLUDED.wake_until)"
    )
}

/// Takes a polling waiter's row out. `$1` name, `$2` waiter.
pub(super) fn leave(t: &str) -> String {
    format!("DELETE FROM {t}_waiters WHERE name = $1 AND waiter = $2")
}

/// The key's live queue, in order ([`crate::turns::QueueRow`]; the place is
/// the order the rows come in). `$1` name.
pub(super) fn live_queue(t: &str) -> String {
    format!(
        "SELECT waiter, mode, 0::int8 FROM {t}_waiters
         WHERE name = $1 AND expires_at > clock_timestamp() ORDER BY since, waiter"
    )
}

/// A waiter's row, `$1` name, the `waiter` and its time to live in ms `ttl`
/// (both parameters, as `$N`): added if `condition` holds, or its expiry pushed
/// out (keeping its place).
fn queue_row(t: &str, waiter: &str, ttl: &str, condition: &str) -> String {
    format!(
        "INSERT INTO {t}_waiters (name, waiter, since, expires_at)
         SELECT $1, {waiter}, clock_timestamp(),
                clock_timestamp() + {ttl}::float8 * interval '1 millisecond'
         WHERE {condition}
         ON CONFLICT (name, waiter) DO UPDATE SET expires_at = EXCLUDED.expires_at"
    )
}

/// Deletes the key's expired rows (dead waiters'): a CTE of every statement
/// that changes a waiter's row. `$1` name.
fn sweep(t: &str) -> String {
    format!(
        "swept AS (DELETE FROM {t}_waiters WHERE name = $1 AND expires_at <= clock_timestamp())"
    )
}

/// The key's oldest live waiter, but `except` (a parameter, as `$N`) if given:
/// a query of at most one row, one `waiter` column. `$1` name.
fn oldest_waiter(t: &str, except: Option<&str>) -> String {
    let except = except
        .map(|w| format!("AND waiter <> {w}"))
        .unwrap_or_default();
    format!(
        "SELECT waiter FROM {t}_waiters
         WHERE name = $1 {except} AND expires_at > clock_timestamp()
         ORDER BY since, waiter LIMIT 1"
    )
}

/// A `NOTIFY` on the channel `$N` `channel` for the key in the `name` column:
/// the key, and the oldest live waiter of its queue but `except` (as
/// [`oldest_waiter`]) if there is one. An expression, of type `void`; the
/// queue is read only when it is evaluated.
pub(super) fn notify_next(t: &str, channel: &str, except: Option<&str>) -> String {
    format!(
        "pg_notify({channel}, name || coalesce(chr(31) || ({}), ''))",
        oldest_waiter(t, except)
    )
}

/// A waiter's statement right after its first attempt ([`super::sql::acquire`])
/// was refused: the attempt again, looking first as [`super::sql::acquire_if_free`]
/// does; when it is refused, the waiter's row and the key's `wake_until`
/// pushed out ([`push_wake`]), and when it grants, the row an earlier join that
/// failed may have left deleted. Returns the token (NULL: refused) and whether
/// the key is free now. `$1` name, `$2` owner, `$3` TTL in ms, `$4` label, `$5`
/// waiter, `$6` the row's time to live in ms, `$7` 1 when fair.
pub(super) fn join_queue(t: &str) -> String {
    let refused = "NOT EXISTS (SELECT 1 FROM got)";
    format!(
        "WITH got AS ({}),
         queued AS ({}),
         {},
         dequeued AS (
             DELETE FROM {t}_waiters
             WHERE name = $1 AND waiter = $5 AND EXISTS (SELECT 1 FROM got)),
         {}
         SELECT (SELECT fence FROM got), {FREE}",
        acquire_if_free(t, "$5", "$7"),
        queue_row(t, "$5", "$6", refused),
        push_wake(t, "$6", refused),
        sweep(t)
    )
}

/// A queued waiter's next attempt: [`super::sql::acquire_if_free`], and when it
/// grants, the waiter's row deleted in the same statement (a refused attempt
/// deletes nothing, so it still takes no transaction id). `$1` name, `$2` owner,
/// `$3` TTL in ms, `$4` label, `$5` waiter, `$6` 1 when fair.
pub(super) fn acquire_queued(t: &str) -> String {
    format!(
        "WITH got AS ({}),
         dequeued AS (
             DELETE FROM {t}_waiters
             WHERE name = $1 AND waiter = $5 AND EXISTS (SELECT 1 FROM got))
         SELECT fence FROM got",
        acquire_if_free(t, "$5", "$6")
    )
}

/// Pushes a queued waiter's expiry out, or queues it again (last) if its row
/// is gone, and the key's `wake_until` as far. `$1` name, `$2` waiter, `$3`
/// time to live in ms.
pub(super) fn requeue(t: &str) -> String {
    format!(
        "WITH {}, {}, queued AS ({})
         SELECT count(*) FROM woke",
        push_wake(t, "$3", "true"),
        sweep(t),
        queue_row(t, "$2", "$3", "true")
    )
}

/// Deletes a waiter's row: it leaves without a grant. If the key is free, it
/// passes the wake-up on, as a release does (it may have been named by a
/// release it will not answer). `$1` name, `$2` waiter, `$3` channel.
pub(super) fn dequeue(t: &str) -> String {
    format!(
        "WITH gone AS (DELETE FROM {t}_waiters WHERE name = $1 AND waiter = $2 RETURNING name),
         {}
         SELECT count({}) FROM gone
         WHERE NOT EXISTS (
             SELECT 1 FROM {t}
             WHERE name = $1 AND owner IS NOT NULL AND expires_at > clock_timestamp())",
        sweep(t),
        notify_next(t, "$3", Some("$2"))
    )
}

/// How many wait for the key: its live rows. `$1` name.
pub(super) fn count_waiters(t: &str) -> String {
    format!("SELECT count(*) FROM {t}_waiters WHERE name = $1 AND expires_at > clock_timestamp()")
}
