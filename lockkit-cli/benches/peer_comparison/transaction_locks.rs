//! lockkit's locks in the application's own transaction, as participants
//! (`participant lockkit-transaction URL …`, `lockkit-transaction-advisory URL …`):
//! a pair is a transaction begun on the client's pool, the key's lock taken in it
//! with [`TransactionLocks`](lockkit::postgres::TransactionLocks), and the commit
//! that ends it. A hold is the open transaction; its release is the commit.

use std::sync::Arc;
use std::time::Duration;

use sqlx::{MySql, MySqlPool, PgPool, Postgres, Transaction};

use crate::backend::Failure;

/// A waiter's lock statement waits at most this long.
const WAIT: Duration = Duration::from_secs(30);

/// One client: a pool of its own, and its `TransactionLocks`.
#[derive(Clone)]
pub(crate) enum TxClient {
    Postgres {
        pool: PgPool,
        locks: Arc<lockkit::postgres::TransactionLocks>,
        advisory: bool,
    },
    MySql {
        pool: MySqlPool,
        locks: Arc<lockkit::mysql::TransactionLocks>,
    },
}

/// A lock held in an open transaction.
pub(crate) enum TxHold {
    Postgres(Transaction<'static, Postgres>),
    MySql(Transaction<'static, MySql>),
}

impl TxClient {
    /// A client of the PostgreSQL or MySQL server at `url`; `advisory` takes
    /// `pg_advisory_xact_lock` instead of the key's row (PostgreSQL only).
    pub(crate) async fn connect(url: &str, advisory: bool) -> Result<Self, Failure> {
        if url.starts_with("postgres") {
            let pool = PgPool::connect(url).await?;
            let locks = lockkit::postgres::TransactionLocks::new(pool.clone()).await?;
            Ok(Self::Postgres {
                pool,
                locks: Arc::new(locks),
                advisory,
            })
        } else if advisory {
            Err("advisory transaction locks are PostgreSQL's".into())
        } else {
            let pool = MySqlPool::connect(url).await?;
            let locks = lockkit::mysql::TransactionLocks::new(pool.clone()).await?;
            Ok(Self::MySql {
                pool,
                locks: Arc::new(locks),
            })
        }
    }

    /// Begins a transaction and takes `key`'s lock in it.
    pub(crate) async fn acquire(&self, key: &str) -> Result<TxHold, Failure> {
        match self {
            Self::Postgres {
                pool,
                locks,
                advisory,
            } => {
                let mut tx = pool.begin().await?;
                let request = locks.lock(&mut tx, key).wait(WAIT);
                let request = if *advisory {
                    request.advisory()
                } else {
                    request
                };
                request.await?;
                Ok(TxHold::Postgres(tx))
            }
            Self::MySql { pool, locks } => {
                let mut tx = pool.begin().await?;
                locks.lock(&mut tx, key).wait(WAIT).await?;
                Ok(TxHold::MySql(tx))
            }
        }
    }
}

impl TxHold {
    /// Commits: the lock ends with the transaction.
    pub(crate) async fn release(self) -> Result<(), Failure> {
        match self {
            Self::Postgres(tx) => tx.commit().await?,
            Self::MySql(tx) => tx.commit().await?,
        }
        Ok(())
    }
}
