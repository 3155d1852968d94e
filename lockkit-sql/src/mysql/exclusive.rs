//! An exclusive attempt's statements: the upsert that takes a key (which reads
//! the queue only when a reader may be in it, or for a fair request), and the
//! cheaper update a waiter that a release woke runs first. Each grants only in
//! its turn ([`crate::turns`]).

use lockkit_core::{AcquireRequest, FencingToken, Grant, Result};
use sqlx::AssertSqlSafe;
use sqlx::mysql::{MySql, MySqlArguments, MySqlConnection};
use tokio::time::Instant;

use super::leases::{MySqlLeases, db_error, ttl_us};
use super::sql::READERS_QUEUED;
use crate::connect::Within;
use crate::error::is_conflict;

impl MySqlLeases {
    /// One exclusive attempt on `conn`: one statement ([`super::sql::acquire`]), whose
    /// last-insert id is the token, or 0 if the key is someone else's (so a token
    /// is never 0: every hold lockkit grants has a fence of 1 or more). A second
    /// statement that reads the turn from the queue ([`super::sql::acquire_in_turn`])
    /// decides for a fair request, and where the key is free but a reader may be
    /// queued. A waiter woken by its bell attempts on the bell's connection,
    /// which just answered: no pool, no ping.
    pub(super) async fn acquire_exclusive_on(
        &self,
        conn: &mut MySqlConnection,
        req: &AcquireRequest,
    ) -> Result<Option<Grant>> {
        if !req.fair {
            match self.take(conn, req, self.upsert(req, false)).await? {
                Taken::ReadersQueued => {}
                taken => return Ok(taken.grant()),
            }
        }
        Ok(self.take(conn, req, self.upsert(req, true)).await?.grant())
    }

    /// An attempt on `conn` by a waiter that a release just woke: the key is
    /// most likely free, so first the cheaper statement that only takes a free
    /// or expired row ([`super::sql::take_free`]); if it took nothing (the key was taken
    /// again first, or has no row), the whole attempt ([`Self::acquire_exclusive_on`]).
    pub(super) async fn take_rung(
        &self,
        conn: &mut MySqlConnection,
        req: &AcquireRequest,
    ) -> Result<Option<Grant>> {
        let label = req.stored_label();
        let query = sqlx::query(AssertSqlSafe(self.statements.take_free.clone()))
            .bind(req.owner.to_hex())
            .bind(label.as_deref())
            .bind(ttl_us(req.ttl))
            .bind(req.key.as_str());
        let query = bind_turn(query, req);
        match self.take(conn, req, query).await? {
            Taken::Refused => self.acquire_exclusive_on(conn, req).await,
            taken => Ok(taken.grant()),
        }
    }

    /// Runs an exclusive attempt's statement on `conn`: granted if it set a
    /// last-insert id (the token, never 0) other than [`READERS_QUEUED`].
    async fn take(
        &self,
        conn: &mut MySqlConnection,
        req: &AcquireRequest,
        query: Query<'_>,
    ) -> Result<Taken> {
        let sent = Instant::now();
        match query.execute(&mut *conn).within(self.timeout).await {
            Ok(done) if done.last_insert_id() == READERS_QUEUED => Ok(Taken::ReadersQueued),
            Ok(done) if done.last_insert_id() > 0 => {
                let token = FencingToken(done.last_insert_id());
                Ok(Taken::Granted(Grant::of(req, token, sent + req.ttl)))
            }
            Ok(_) => Ok(Taken::Refused),
            // A deadlock (the first inserter of a new key rolled back with two
            // or more behind it): nothing took effect. Busy, as on the shared
            // path; a waiter attempts again.
            Err(e) if is_conflict(&e) => Ok(Taken::Conflict),
            Err(e) => Err(db_error(e)),
        }
    }

    /// [`super::sql::acquire`], or [`super::sql::acquire_in_turn`] (`in_turn`,
    /// with its turn's values), bound for `req`.
    fn upsert<'q>(&self, req: &'q AcquireRequest, in_turn: bool) -> Query<'q> {
        let statement = match in_turn {
            true => &self.statements.acquire_in_turn,
            false => &self.statements.acquire,
        };
        let owner = req.owner.to_hex();
        let (ttl, label) = (ttl_us(req.ttl), req.stored_label());
        let query = sqlx::query(AssertSqlSafe(statement.clone()))
            .bind(req.key.as_str())
            .bind(owner.clone())
            .bind(ttl)
            .bind(label.clone());
        let query = match in_turn {
            true => bind_turn(query, req),
            false => query,
        };
        // Each assignment asks whether the request takes the key (bound: owner),
        // then binds its own values.
        let take = |q: Query<'q>| q.bind(owner.clone());
        let query = take(query).bind(owner.clone());
        let query = take(query).bind(label);
        let query = take(query);
        let query = take(query).bind(owner.clone());
        take(query).bind(ttl)
    }
}

/// A statement on the pool or a connection, its values bound as they go.
pub(super) type Query<'q> = sqlx::query::Query<'q, MySql, MySqlArguments>;

/// Binds the values of [`super::queue_sql::turn`] for `req`.
fn bind_turn<'q>(query: Query<'q>, req: &'q AcquireRequest) -> Query<'q> {
    let owner = req.owner.to_hex();
    query
        .bind(req.key.as_str())
        .bind(owner.clone())
        .bind(i32::from(req.fair))
        .bind(owner)
}

/// What an exclusive attempt's statement came to.
enum Taken {
    Granted(Grant),
    /// The key is someone else's, or (for [`super::sql::take_free`]) has no row.
    Refused,
    /// The key is free, but a reader may be queued ([`super::sql::acquire`]):
    /// the turn decides.
    ReadersQueued,
    /// A deadlock: nothing took effect.
    Conflict,
}

impl Taken {
    /// The grant, if any.
    fn grant(self) -> Option<Grant> {
        match self {
            Taken::Granted(grant) => Some(grant),
            Taken::Refused | Taken::ReadersQueued | Taken::Conflict => None,
        }
    }
}
