//! The raw-operation floor: the least work a hand-rolled lock on a backend does,
//! sent without lockkit to the same server.
//!
//! - SQLite and PostgreSQL: an upsert with `RETURNING` that takes the row when it is
//!   free or expired and returns the fencing counter, then a releasing `UPDATE`.
//! - MySQL/MariaDB: an `UPDATE` with `LAST_INSERT_ID(fence + 1)`, then a releasing
//!   `UPDATE` (the rows are inserted once, by [`Floor::prepare`]).
//! - Redis: the raw fenced lock, an EVALSHA that increments the key's counter and
//!   sets the lock with the token in its value (`SET NX PX`), then an EVALSHA
//!   compare-and-delete.
//! - Redlock: the Redis floor's two scripts, each sent to every master at once;
//!   granted by a majority.
//! - etcd: one txn (put if the key's create_revision is 0, else get), then a delete.
//! - ZooKeeper: an EPHEMERAL_SEQUENTIAL create under the key's parent, a getChildren
//!   of the parent and a delete (three round trips, on a session of its own).
//! - Consul (`consul://`): `PUT /v1/kv/<key>?acquire=<session>`, then
//!   `PUT ?release=<session>` (two HTTP round trips, one session per client).
//! - `mem://`: an insert and a remove in a mutex-guarded map.
//!
//! A floor never waits: under contention it retries at once (a spin lock), which is
//! the most grants per second those commands can give.
//!
//! Each backend's floor lives in a module of its own and implements [`RawLock`];
//! [`Floor`] picks one from the URL and forwards to it.

use lockkit::LockError;

/// Deletes the SQL floor's rows (all its keys are under `lockkit-bench/`) and drops
/// its table once empty; the statements are the same on every database.
macro_rules! clean_floor_table {
    ($pool:expr) => {{
        let pool = $pool;
        let _ = sqlx::query("DELETE FROM lockkit_bench_floor WHERE name LIKE 'lockkit-bench/%'")
            .execute(pool)
            .await;
        let left: Result<i64, _> = sqlx::query_scalar("SELECT COUNT(*) FROM lockkit_bench_floor")
            .fetch_one(pool)
            .await;
        if matches!(left, Ok(0)) {
            let _ = sqlx::query("DROP TABLE IF EXISTS lockkit_bench_floor")
                .execute(pool)
                .await;
        }
    }};
}

mod consul;
#[cfg(feature = "etcd")]
mod etcd;
mod held;
mod mem;
mod mysql;
mod postgres;
mod redis;
mod redlock;
mod sqlite;
mod zk;

/// A failed floor statement (SQL), reported as the `bench-floor` driver's.
fn floor_error(e: impl std::error::Error + Send + Sync + 'static) -> LockError {
    LockError::backend("bench-floor", e)
}

/// What the floor's release needs: the owner string, or the ZooKeeper node's path.
pub(crate) struct Hold(String);

/// A hand-rolled lock on one backend: the raw commands a floor client sends.
pub(crate) trait RawLock {
    /// Creates what `keys` need before the first acquire. Idempotent; most backends
    /// need nothing.
    async fn prepare(&self, _keys: &[String]) -> Result<(), LockError> {
        Ok(())
    }

    /// Removes every trace of `keys` this floor left. Best effort.
    async fn clean_up(&self, keys: &[String]);

    /// One attempt to take `key` for `owner`, without waiting: what release needs if
    /// it was granted, `None` if another holder has it.
    async fn try_acquire(&self, key: &str, owner: &str) -> Result<Option<Hold>, LockError>;

    /// Releases what [`RawLock::try_acquire`] granted.
    async fn release(&self, key: &str, held: Hold) -> Result<(), LockError>;
}

/// One floor client: its own connection (or pool, or session) to the backend.
pub(crate) enum Floor {
    Sqlite(sqlite::SqliteFloor),
    Postgres(postgres::PostgresFloor),
    MySql(mysql::MySqlFloor),
    Mem(mem::MemFloor),
    Redis(redis::RedisFloor),
    Redlock(redlock::RedlockFloor),
    #[cfg(feature = "etcd")]
    Etcd(etcd::EtcdFloor),
    Zk(zk::ZkFloor),
    Consul(consul::ConsulFloor),
}

/// Runs `$body` with `$floor` bound to the backend floor inside `$self`.
macro_rules! each_floor {
    ($self:expr, $floor:ident => $body:expr) => {
        match $self {
            Floor::Sqlite($floor) => $body,
            Floor::Postgres($floor) => $body,
            Floor::MySql($floor) => $body,
            Floor::Mem($floor) => $body,
            Floor::Redis($floor) => $body,
            Floor::Redlock($floor) => $body,
            #[cfg(feature = "etcd")]
            Floor::Etcd($floor) => $body,
            Floor::Zk($floor) => $body,
            Floor::Consul($floor) => $body,
        }
    };
}

impl Floor {
    /// A floor client for `url`, with a description of what it sends; `None` when
    /// there is no floor for that backend.
    pub(crate) async fn connect(url: &str) -> Result<Option<(Floor, &'static str)>, LockError> {
        let floor = if url.starts_with("mem:") {
            (Floor::Mem(mem::MemFloor), mem::DESCRIPTION)
        } else if url.starts_with("postgres") {
            let floor = postgres::PostgresFloor::connect(url).await?;
            (Floor::Postgres(floor), postgres::DESCRIPTION)
        } else if url.starts_with("redis://") {
            let floor = redis::RedisFloor::connect_to(url).await?;
            (Floor::Redis(floor), redis::DESCRIPTION)
        } else if url.starts_with("redlock://") {
            let floor = redlock::RedlockFloor::connect(url).await?;
            (Floor::Redlock(floor), redlock::DESCRIPTION)
        } else if url.starts_with("etcd://") || url.starts_with("etcds://") {
            #[cfg(feature = "etcd")]
            {
                let floor = etcd::EtcdFloor::connect(url).await?;
                (Floor::Etcd(floor), etcd::DESCRIPTION)
            }
            #[cfg(not(feature = "etcd"))]
            return Ok(None);
        } else if url.starts_with("zk://") {
            (Floor::Zk(zk::ZkFloor::connect(url).await?), zk::DESCRIPTION)
        } else if url.starts_with("consul://") {
            let floor = consul::ConsulFloor::connect(url).await?;
            (Floor::Consul(floor), consul::DESCRIPTION)
        } else if url.starts_with("mysql") || url.starts_with("mariadb") {
            let floor = mysql::MySqlFloor::connect(url).await?;
            (Floor::MySql(floor), mysql::DESCRIPTION)
        } else {
            let Some(floor) = sqlite::SqliteFloor::connect(url).await? else {
                return Ok(None);
            };
            (Floor::Sqlite(floor), sqlite::DESCRIPTION)
        };
        Ok(Some(floor))
    }

    /// Creates what the floor's keys need before the first acquire: MySQL rows and
    /// ZooKeeper parent nodes. Idempotent; other backends need nothing.
    pub(crate) async fn prepare(&self, keys: &[String]) -> Result<(), LockError> {
        each_floor!(self, floor => floor.prepare(keys).await)
    }

    /// Removes every trace of the floor's `keys`: SQL rows (all of `lockkit-bench/`,
    /// and the floor table once it is empty), ZooKeeper parent nodes (and the floor's root once empty),
    /// Consul's released keys, and any Redis or etcd key a failed run left. Best
    /// effort.
    pub(crate) async fn clean_up(&self, keys: &[String]) {
        each_floor!(self, floor => floor.clean_up(keys).await)
    }

    /// One attempt to take `key` for `owner`, without waiting: what release needs if
    /// it was granted, `None` if another holder has it.
    pub(crate) async fn try_acquire(
        &self,
        key: &str,
        owner: &str,
    ) -> Result<Option<Hold>, LockError> {
        each_floor!(self, floor => floor.try_acquire(key, owner).await)
    }

    /// Releases what [`Floor::try_acquire`] granted.
    pub(crate) async fn release(&self, key: &str, held: Hold) -> Result<(), LockError> {
        each_floor!(self, floor => floor.release(key, held).await)
    }

    /// One uncontended lock+release pair on `key` (what the latency floor times).
    pub(crate) async fn lock_release(&self, key: &str, owner: &str) -> Result<(), LockError> {
        match self.try_acquire(key, owner).await? {
            Some(held) => self.release(key, held).await,
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn mem_floor_grants_one_holder_at_a_time() {
        let (a, _) = Floor::connect("mem://").await.unwrap().unwrap();
        let (b, _) = Floor::connect("mem://").await.unwrap().unwrap();
        let key = "floor-test/one-at-a-time";
        let held = a.try_acquire(key, "a").await.unwrap().unwrap();
        assert!(b.try_acquire(key, "b").await.unwrap().is_none());
        a.release(key, held).await.unwrap();
        let held = b.try_acquire(key, "b").await.unwrap().unwrap();
        b.release(key, held).await.unwrap();
    }

    #[tokio::test]
    async fn sqlite_floor_grants_one_holder_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("f.db").display());
        let (a, _) = Floor::connect(&url).await.unwrap().unwrap();
        let (b, _) = Floor::connect(&url).await.unwrap().unwrap();
        let key = "floor-test/one-at-a-time";
        let held = a.try_acquire(key, "a").await.unwrap().unwrap();
        assert!(b.try_acquire(key, "b").await.unwrap().is_none());
        a.release(key, held).await.unwrap();
        let held = b.try_acquire(key, "b").await.unwrap().unwrap();
        b.release(key, held).await.unwrap();
    }
}
