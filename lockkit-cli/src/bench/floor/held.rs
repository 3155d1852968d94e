//! The SQL floors' connections, as a hand-rolled client keeps them: each taken
//! from a small sqlx pool once and used statement after statement, never given
//! back. (A connection given back to a sqlx pool is pinged first, a round trip
//! after every statement that a client on its own connection does not send.)

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, PoisonError};

use sqlx::pool::PoolConnection;
use sqlx::{Database, Pool};

/// A pool, and the connections taken from it that wait for the next statement.
pub(super) struct Held<DB: Database> {
    pool: Pool<DB>,
    idle: Mutex<Vec<PoolConnection<DB>>>,
}

impl<DB: Database> Held<DB> {
    pub(super) fn new(pool: Pool<DB>) -> Self {
        Self {
            pool,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// The pool itself, for setting up and cleaning up.
    pub(super) fn pool(&self) -> &Pool<DB> {
        &self.pool
    }

    /// A connection for one statement: one that waits, else a new one from the
    /// pool.
    pub(super) async fn conn(&self) -> Result<HeldConn<'_, DB>, sqlx::Error> {
        let waiting = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let conn = match waiting {
            Some(conn) => conn,
            None => self.pool.acquire().await?,
        };
        Ok(HeldConn { conn, home: self })
    }
}

/// A connection out of [`Held`] for one statement, until [`HeldConn::done`].
pub(super) struct HeldConn<'a, DB: Database> {
    conn: PoolConnection<DB>,
    home: &'a Held<DB>,
}

impl<DB: Database> HeldConn<'_, DB> {
    /// The statement is done: the connection waits for the next.
    pub(super) fn done(self) {
        let mut idle = self
            .home
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        idle.push(self.conn);
    }
}

impl<DB: Database> Deref for HeldConn<'_, DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        &self.conn
    }
}

impl<DB: Database> DerefMut for HeldConn<'_, DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        &mut self.conn
    }
}
