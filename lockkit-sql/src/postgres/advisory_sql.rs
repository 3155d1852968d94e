//! Advisory mode's statements. Lock ids: the key's own is
//! `hashtextextended('<table>:<key>', 0)`, or with raw keys (`key=raw`) the
//! number the key is, `'<key>'::bigint`; slot `i` of a semaphore is
//! `hashtextextended('<table>:<key>\x01i', 0)` — a key cannot hold a control
//! character, so no key's own id is another key's slot. A permit holds its slot
//! exclusively and the key's own id shared, so a permit excludes an exclusive
//! holder.

/// The advisory id of the lock whose name is the parameter `param`: a hash of
/// the name, or with raw keys the number the name is.
pub(super) fn id_of(param: &str, raw: bool) -> String {
    if raw {
        format!("({param}::bigint)")
    } else {
        format!("hashtextextended({param}, 0)")
    }
}

/// Keeps the session alive while it holds a lock (invariant P3): PostgreSQL 14+
/// ends a session idle for `idle_session_timeout`, and its advisory locks with
/// it, between two of the watchdog's checks. Turned off for this session,
/// where the server has the setting. A second column of each statement that
/// takes a lock, so that it costs no round trip.
macro_rules! keep_session {
    () => {
        "(SELECT set_config('idle_session_timeout', '0', false)
          WHERE current_setting('idle_session_timeout', true) IS NOT NULL)"
    };
}

/// The same on its own, for the `LISTEN` connection, also a long-lived idle
/// session: a server that ended it every `idle_session_timeout` would leave
/// releases unheard while it reconnects.
pub(super) const KEEP_SESSION: &str = concat!("SELECT ", keep_session!());

/// Tries the key's own lock, `pg_try_advisory_lock` or `…_shared`, without
/// waiting. `$1` the key's lock name.
pub(super) fn try_lock(function: &str, raw: bool) -> String {
    format!(
        "SELECT {function}({}), {}",
        id_of("$1", raw),
        keep_session!()
    )
}

/// The fences table.
pub(super) fn create_fences(t: &str) -> String {
    format!("CREATE TABLE IF NOT EXISTS {t}_fences (name TEXT PRIMARY KEY, fence BIGINT NOT NULL)")
}

/// The holds' records, for inspection and the semaphore's limit check.
pub(super) fn create_holds(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t}_session_holds (
            name TEXT NOT NULL,
            session INTEGER NOT NULL,  -- pg_backend_pid() of the holding session
            lock_id BIGINT NOT NULL,
            mode TEXT NOT NULL,
            lim BIGINT,
            token BIGINT NOT NULL,
            label TEXT,
            PRIMARY KEY (name, session, lock_id)
        )"
    )
}

/// Bumps a key's counter and records the hold. `$1` name, `$2` lock name (the
/// key's, or a slot's: `<key's>\x01i`), `$3` mode, `$4` limit, `$5` label.
pub(super) fn bump_fence(t: &str, raw: bool) -> String {
    let id = id_of("$2", raw);
    format!(
        "WITH f AS (INSERT INTO {t}_fences AS f (name, fence) VALUES ($1, 1)
                    ON CONFLICT (name) DO UPDATE SET fence = f.fence + 1 RETURNING fence),
         h AS (INSERT INTO {t}_session_holds AS h (name, session, lock_id, mode, lim, token, label)
               SELECT $1, pg_backend_pid(), {id}, $3, $4, f.fence, $5 FROM f
               ON CONFLICT (name, session, lock_id) DO UPDATE SET
                   mode = EXCLUDED.mode, lim = EXCLUDED.lim, token = EXCLUDED.token,
                   label = EXCLUDED.label)
         SELECT fence FROM f"
    )
}

/// Takes the key's own id shared, then the first free slot of `$2..$3`: the
/// slot, -1 when every one was taken (the shared lock is then held), -2 when an
/// exclusive holder refused the shared lock. `$1` the key's lock name.
pub(super) const TRY_PERMIT: &str = concat!(
    "SELECT CASE WHEN pg_try_advisory_lock_shared(hashtextextended($1, 0))
                 THEN COALESCE((SELECT s FROM generate_series($2::int4, $3::int4) AS s
                                WHERE pg_try_advisory_lock(hashtextextended($1 || chr(1) || s, 0))
                                LIMIT 1), -1)
                 ELSE -2 END, ",
    keep_session!()
);

/// The first free slot of `$2..$3` (the key's shared id already held), or -1.
/// `$1` the key's lock name.
pub(super) const TRY_SLOTS: &str =
    "SELECT COALESCE((SELECT s FROM generate_series($2::int4, $3::int4) AS s
                     WHERE pg_try_advisory_lock(hashtextextended($1 || chr(1) || s, 0))
                     LIMIT 1), -1)";

/// Gives back the lock of a hold and forgets its record: `unlock` is
/// `pg_advisory_unlock` or `pg_advisory_unlock_shared` on the key's own id; a
/// permit (`slot` true) gives back its slot, `$3`, and the key's shared id. `$1`
/// the key's lock name, `$2` name. Returns whether every lock was held. (Raw
/// keys have no slots.)
pub(super) fn unlock(t: &str, unlock: &str, slot: bool, raw: bool) -> String {
    let own = id_of("$1", raw);
    let (record, gives) = if slot {
        let slot_id = "hashtextextended($1 || chr(1) || $3::int4, 0)";
        (
            slot_id.to_string(),
            format!("pg_advisory_unlock({slot_id}) AND pg_advisory_unlock_shared({own})"),
        )
    } else {
        (own.clone(), format!("{unlock}({own})"))
    };
    format!(
        "WITH gone AS (DELETE FROM {t}_session_holds
                       WHERE name = $2 AND session = pg_backend_pid() AND lock_id = {record}),
         given AS (SELECT {gives} AS ok)
         SELECT ok FROM given"
    )
}

/// The records whose session holds their lock: mode, limit, token, label,
/// session. `$1` name.
pub(super) fn live_holds(t: &str) -> String {
    format!(
        "SELECT h.mode, h.lim, h.token, h.label, h.session FROM {t}_session_holds AS h
         WHERE h.name = $1 AND EXISTS (
             SELECT 1 FROM pg_locks AS l
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
               AND l.pid = h.session
               AND ((l.classid::bigint << 32) | l.objid::bigint) = h.lock_id)
         ORDER BY h.token"
    )
}
