//! [`Optimistic`]: the retry loop of optimistic concurrency, bounded, with
//! jittered backoff between attempts.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use crate::wait::{Backoff, Jitter};

/// What one attempt of an optimistic write reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt<T> {
    /// The write went through (one row affected): the loop ends with `T`.
    Written(T),
    /// Another writer changed the row since it was read (zero rows affected):
    /// read again and retry.
    Conflict,
}

/// The loop gave up: every attempt met a conflict, or one failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptimisticError<E> {
    /// Each of `attempts` attempts met a conflict.
    Conflicts {
        /// How many attempts were made.
        attempts: u32,
    },
    /// An attempt failed with the application's own error; no retry followed.
    Failed(E),
}

impl<E: fmt::Display> fmt::Display for OptimisticError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Conflicts { attempts } => write!(
                f,
                "optimistic write gave up: each of {attempts} attempts met a newer version"
            ),
            Self::Failed(e) => write!(f, "optimistic write failed: {e}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for OptimisticError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Conflicts { .. } => None,
            Self::Failed(e) => Some(e),
        }
    }
}

/// Retries an optimistic write ([`VersionedUpdate`](super::VersionedUpdate)) on
/// conflicts: at most [`attempts`](Self::attempts) attempts (default 10), with
/// a pause between them that doubles from 2 ms up to 100 ms, each spread by a
/// random factor in [0.5, 1.5) so that writers that met do not meet again.
///
/// Each attempt must read the row afresh: its version, and the values the write
/// is computed from.
///
/// Under PostgreSQL's `REPEATABLE READ` or `SERIALIZABLE`, a row updated by a
/// concurrent transaction fails with SQLSTATE `40001` instead of affecting zero
/// rows: return [`Attempt::Conflict`] for it too, and run each attempt in a
/// transaction of its own.
///
/// # Examples
///
/// ```
/// use lockkit::fence::{Attempt, Optimistic, Placeholders, VersionedUpdate};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let db = sqlx::sqlite::SqlitePoolOptions::new().max_connections(1).idle_timeout(None).max_lifetime(None)
/// #     .connect("sqlite::memory:").await?;
/// sqlx::query("CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock BIGINT, version BIGINT NOT NULL DEFAULT 0)")
///     .execute(&db)
///     .await?;
/// sqlx::query("INSERT INTO inventory (sku, stock) VALUES ('sku-42', 10)").execute(&db).await?;
/// let update = VersionedUpdate::new("inventory", "sku").set("stock").sql(Placeholders::QuestionNumbered)?;
///
/// // Each attempt reads the row afresh, then writes with the version it read.
/// let (db, update) = (&db, &update);
/// let left = Optimistic::new()
///     .run(|_attempt| async move {
///         let (stock, version): (i64, i64) =
///             sqlx::query_as("SELECT stock, version FROM inventory WHERE sku = 'sku-42'")
///                 .fetch_one(db)
///                 .await?;
///         let written = sqlx::query(sqlx::AssertSqlSafe(update.clone()))
///             .bind(stock - 1)
///             .bind("sku-42")
///             .bind(version)
///             .execute(db)
///             .await?;
///         Ok::<_, sqlx::Error>(if written.rows_affected() == 1 {
///             Attempt::Written(stock - 1)
///         } else {
///             Attempt::Conflict // another writer was first: read again
///         })
///     })
///     .await?;
/// assert_eq!(left, 9);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Optimistic {
    attempts: u32,
    backoff: Backoff,
}

impl Default for Optimistic {
    fn default() -> Self {
        Self::new()
    }
}

impl Optimistic {
    /// At most 10 attempts, pausing 2 ms doubling to 100 ms between them.
    pub const fn new() -> Self {
        Self {
            attempts: 10,
            backoff: Backoff::new(
                Duration::from_millis(2),
                Duration::from_millis(100),
                Jitter::Spread,
            ),
        }
    }

    /// At most `attempts` attempts (at least one is always made).
    #[must_use]
    pub const fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = if attempts == 0 { 1 } else { attempts };
        self
    }

    /// Pauses from `first`, doubling up to `cap`, between attempts.
    #[must_use]
    pub const fn pauses(mut self, first: Duration, cap: Duration) -> Self {
        self.backoff = Backoff::new(first, cap, Jitter::Spread);
        self
    }

    /// Runs `attempt` (given the attempt's number, from 1) until it reports
    /// [`Attempt::Written`], fails, or the attempts run out.
    ///
    /// # Errors
    ///
    /// [`OptimisticError::Conflicts`] when every attempt met a conflict;
    /// [`OptimisticError::Failed`] with the first error an attempt returned.
    pub async fn run<T, E, F, Fut>(&self, mut attempt: F) -> Result<T, OptimisticError<E>>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<Attempt<T>, E>>,
    {
        let mut pauses = self.backoff.pauses();
        for n in 1..=self.attempts {
            match attempt(n).await.map_err(OptimisticError::Failed)? {
                Attempt::Written(t) => return Ok(t),
                Attempt::Conflict if n < self.attempts => {
                    tokio::time::sleep(pauses.next_pause()).await;
                }
                Attempt::Conflict => {}
            }
        }
        Err(OptimisticError::Conflicts {
            attempts: self.attempts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn conflicts_are_retried_up_to_the_bound_and_errors_are_not() {
        let mut calls = 0;
        let written = Optimistic::new()
            .run(|n| {
                calls += 1;
                async move {
                    Ok::<_, String>(if n < 3 {
                        Attempt::Conflict
                    } else {
                        Attempt::Written(n)
                    })
                }
            })
            .await;
        assert_eq!(written, Ok(3));
        assert_eq!(calls, 3);

        let gave_up = Optimistic::new()
            .attempts(4)
            .run(|_| async { Ok::<Attempt<()>, String>(Attempt::Conflict) })
            .await;
        assert_eq!(gave_up, Err(OptimisticError::Conflicts { attempts: 4 }));

        let mut calls = 0;
        let failed = Optimistic::new()
            .run(|_| {
                calls += 1;
                async { Err::<Attempt<()>, _>("down") }
            })
            .await;
        assert_eq!(failed, Err(OptimisticError::Failed("down")));
        assert_eq!(calls, 1);
    }
}
