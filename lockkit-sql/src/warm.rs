//! Connections kept warm between a driver's statements: [`Warm`].
//!
//! sqlx pings every connection it takes back into its pool, in a task of its
//! own, before the next caller may have it. For a lock that is one more round
//! trip, and two more context switches, after each acquire and each release: on
//! the uncontended path, about a sixth of the time an acquire and release take.
//! A statement that ran to its end has left nothing to flush, so [`Warm`] keeps
//! its connection for the next statement instead. Every other way a connection
//! can come back (a statement cancelled or timed out half way, an I/O error,
//! one held too long) goes through sqlx's own release, ping and all.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::{Database, Pool};
use tokio::time::Instant;

use crate::connect::PING_IF_IDLE;

/// How long a connection may serve from [`Warm`] before it goes back through
/// sqlx's pool, whose checks it then passes again (its ping, `max_lifetime`,
/// `idle_timeout`). One ping a minute per connection.
const WARM_FOR: Duration = Duration::from_secs(60);

/// A driver's pool, and the few of its connections kept out of it between
/// statements.
#[derive(Debug)]
pub(crate) struct Warm<DB: Database> {
    pool: Pool<DB>,
    idle: Mutex<Vec<Kept<DB>>>,
    /// The most connections kept: none on an application's pool, whose
    /// connections lockkit does not sit on.
    keep: usize,
}

/// A connection kept, with when it came out of the pool and when it was last
/// used.
#[derive(Debug)]
struct Kept<DB: Database> {
    conn: PoolConnection<DB>,
    out_since: Instant,
    used: Instant,
}

impl<DB: Database> Warm<DB> {
    /// Keeps up to half of `pool`'s connections warm (`own`: lockkit made the
    /// pool), so that the rest serve the statements that take the pool itself;
    /// none when the pool is the application's.
    pub(crate) fn new(pool: Pool<DB>, own: bool) -> Self {
        let keep = match own {
            true => pool.options().get_max_connections() as usize / 2,
            false => 0,
        };
        Self {
            pool,
            idle: Mutex::new(Vec::new()),
            keep,
        }
    }

    /// How many connections are kept now.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// A connection for one statement: the one used last, if it was used
    /// within [`PING_IF_IDLE`], else one from the pool (which pings it first if
    /// it has been idle that long). Kept connections idle longer go back to the
    /// pool.
    pub(crate) async fn conn(&self) -> Result<WarmConn<'_, DB>, sqlx::Error> {
        let now = Instant::now();
        let found = {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            // Dropped here, each goes back through sqlx's release.
            idle.retain(|k| now.duration_since(k.used) < PING_IF_IDLE);
            idle.pop()
        };
        let (conn, out_since) = match found {
            Some(kept) => (kept.conn, kept.out_since),
            None => (self.pool.acquire().await?, now),
        };
        Ok(WarmConn {
            conn,
            out_since,
            home: self,
        })
    }
}

impl<DB: Database> Drop for Warm<DB> {
    /// A kept connection dropped goes back to the pool in a task of sqlx's,
    /// which needs a Tokio runtime. A driver dropped outside one (after its
    /// runtime ended) closes its kept connections instead.
    fn drop(&mut self) {
        if tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        let idle = self.idle.get_mut().unwrap_or_else(PoisonError::into_inner);
        for kept in idle.drain(..) {
            drop(kept.conn.detach());
        }
    }
}

/// A connection out of [`Warm`] for one statement. Given back with
/// [`WarmConn::done`], it is kept for the next; dropped, it goes back through
/// sqlx's pool, which pings it (and reads what a cancelled statement left) or
/// closes it.
pub(crate) struct WarmConn<'a, DB: Database> {
    conn: PoolConnection<DB>,
    out_since: Instant,
    home: &'a Warm<DB>,
}

impl<DB: Database> WarmConn<'_, DB> {
    /// Gives the connection back after its statements: kept if they ran to
    /// their end (`whole`: see [`ran_to_end`]), so the connection has nothing
    /// left to read; else dropped into sqlx's release.
    pub(crate) fn done(self, whole: bool) {
        let WarmConn {
            conn,
            out_since,
            home,
        } = self;
        let now = Instant::now();
        if !whole || now.duration_since(out_since) >= WARM_FOR {
            return;
        }
        let mut idle = home.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < home.keep {
            idle.push(Kept {
                conn,
                out_since,
                used: now,
            });
        }
    }
}

/// Whether a statement that came to `outcome` ran to its end: answered, or
/// refused by the server, which then waits for the next statement.
pub(crate) fn ran_to_end<T>(outcome: &Result<T, sqlx::Error>) -> bool {
    matches!(outcome, Ok(_) | Err(sqlx::Error::Database(_)))
}

impl<DB: Database> std::ops::Deref for WarmConn<'_, DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        &self.conn
    }
}

impl<DB: Database> std::ops::DerefMut for WarmConn<'_, DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        &mut self.conn
    }
}

#[cfg(all(test, feature = "postgres"))]
mod tests;
