//! The raw-operation floor: the least work a hand-rolled lock on a backend does,
//! sent without lockkit to the same server.
//!
//! - SQLite and PostgreSQL: an upsert with `RETURNING` that takes the row when it is
//!   free or expired and returns the fencing counter, then a releasing `UPDATE`.
//! - MySQL/MariaDB: an `UPDATE` with `LAST_INSERT_ID(fence + 1)`, then a releasing
//!   `UPDATE` (the rows are inserted once, by [`Floor::prepare`]).
//! - Redis: `SET NX PX`, then an EVALSHA compare-and-delete.
//! - etcd: one txn (put if the key's create_revision is 0, else get), then a delete.
//! - ZooKeeper: an EPHEMERAL_SEQUENTIAL create under the key's parent, a getChildren
//!   of the parent and a delete (three round trips, on a session of its own).
//! - Consul (`consul://`): `PUT /v1/kv/<key>?acquire=<session>`, then
//!   `PUT ?release=<session>` (two HTTP round trips, one session per client).
//! - `mem://`: an insert and a remove in a mutex-guarded map.
//!
//! A floor never waits: under contention it retries at once (a spin lock), which is
//! the most grants per second those commands can give.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use lockkit::{LockError, redact_url};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

/// One floor client: its own connection (or pool, or session) to the backend.
pub(crate) enum Floor {
    Sqlite(SqlitePool),
    Postgres(sqlx::PgPool),
    MySql(sqlx::MySqlPool),
    Mem,
    Redis(redis::aio::MultiplexedConnection, redis::Script),
    Etcd(Box<etcd_client::Client>),
    Zk(zookeeper_client::Client),
    Consul(ConsulFloor),
}

/// A raw Consul client: base URL, ACL token and one session of its own.
pub(crate) struct ConsulFloor {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    session: String,
}

/// Where the Consul floor's keys live.
const CONSUL_FLOOR_PREFIX: &str = "lockkit-bench-floor";

impl ConsulFloor {
    async fn connect(url: &str) -> Result<Self, LockError> {
        let options = lockkit::consul::ConsulOptions::from_url(url)?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| LockError::Config(format!("cannot build an HTTP client: {e}")))?;
        let mut floor = Self {
            http,
            base: options.base_url().to_owned(),
            token: options.token().map(str::to_owned),
            session: String::new(),
        };
        let body = floor
            .send(
                reqwest::Method::PUT,
                "/v1/session/create".to_owned(),
                r#"{"TTL":"10s","Behavior":"delete","LockDelay":"0s"}"#.to_owned(),
            )
            .await?;
        let created: serde_json::Value = serde_json::from_str(&body).map_err(|e| {
            LockError::Config(format!("Consul's session reply is not JSON ({e}): {body}"))
        })?;
        floor.session = created["ID"]
            .as_str()
            .ok_or_else(|| LockError::Config(format!("Consul's session reply has no ID: {body}")))?
            .to_owned();
        Ok(floor)
    }

    /// Sends one request; the body of a 2xx reply.
    async fn send(
        &self,
        method: reqwest::Method,
        path: String,
        body: String,
    ) -> Result<String, LockError> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .body(body);
        if let Some(token) = &self.token {
            request = request.header("X-Consul-Token", token);
        }
        let failed =
            |e: reqwest::Error| LockError::Config(format!("Consul floor: {}", e.without_url()));
        let response = request.send().await.map_err(failed)?;
        let status = response.status();
        let text = response.text().await.map_err(failed)?;
        if !status.is_success() {
            return Err(LockError::Config(format!(
                "Consul floor: {status}: {}",
                text.trim()
            )));
        }
        Ok(text)
    }

    fn key_path(key: &str, query: &str) -> String {
        format!(
            "/v1/kv/{CONSUL_FLOOR_PREFIX}/{}?{query}",
            key.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_")
        )
    }
}

/// What the floor's release needs: the owner string, or the ZooKeeper node's path.
pub(crate) struct Held(String);

/// Keys held by `mem://` floor clients in this process (shared, like `mem://` locks).
fn mem_table() -> &'static Mutex<HashMap<String, String>> {
    static TABLE: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    TABLE.get_or_init(Mutex::default)
}

/// The persistent parent of the ZooKeeper floor's key nodes.
const ZK_FLOOR_ROOT: &str = "/lockkit-bench-floor";

/// The ZooKeeper parent node of a floor key (created by [`Floor::prepare`]).
fn zk_parent(key: &str) -> String {
    format!("{ZK_FLOOR_ROOT}/{}", key.replace('/', "_"))
}

/// The ZooKeeper connect string (`host:port[,host:port…]`) in a `zk://` URL. The floor
/// needs only the servers: credentials before an `@`, a chroot path and query options
/// are dropped (the floor works at the root, under [`ZK_FLOOR_ROOT`]).
pub(crate) fn zk_hosts(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("zk://")?;
    let rest = rest.split(['?', '/']).next().unwrap_or(rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, hosts)| hosts);
    (!rest.is_empty()).then_some(rest)
}

/// The compare-and-delete every hand-rolled Redis lock sends on release.
const REDIS_DEL_IF_OWNER: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

const FLOOR_TABLE_PG: &str = "CREATE TABLE IF NOT EXISTS lockkit_bench_floor (name TEXT PRIMARY KEY, owner TEXT, fence BIGINT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)";
const FLOOR_TABLE_MY: &str = "CREATE TABLE IF NOT EXISTS lockkit_bench_floor (name VARCHAR(64) PRIMARY KEY, owner CHAR(32), fence BIGINT NOT NULL, expires_at DATETIME(6) NOT NULL) ENGINE=InnoDB";
const FLOOR_TABLE_SQLITE: &str = "CREATE TABLE IF NOT EXISTS lockkit_bench_floor (name TEXT PRIMARY KEY NOT NULL, owner TEXT, fence INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID";

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

impl Floor {
    /// A floor client for `url`, with a description of what it sends; `None` when
    /// there is no floor for that backend.
    pub(crate) async fn connect(url: &str) -> Result<Option<(Floor, &'static str)>, LockError> {
        if url.starts_with("mem:") {
            return Ok(Some((Floor::Mem, "insert + remove in a Mutex<HashMap>")));
        }
        let backend = |e| LockError::backend("bench-floor", e);
        if url.starts_with("postgres") {
            let (url, _) = url.split_once('?').unwrap_or((url, ""));
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(2)
                .connect(url)
                .await
                .map_err(|e| LockError::connection("postgres", e))?;
            sqlx::query(FLOOR_TABLE_PG)
                .execute(&pool)
                .await
                .map_err(backend)?;
            return Ok(Some((
                Floor::Postgres(pool),
                "raw INSERT … ON CONFLICT … RETURNING + UPDATE via sqlx, same server",
            )));
        }
        if url.starts_with("redis://") {
            let (url, _) = url.split_once('?').unwrap_or((url, ""));
            let conn = redis::Client::open(url)
                .map_err(|e| LockError::connection("redis", e))?
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| LockError::connection("redis", e))?;
            return Ok(Some((
                Floor::Redis(conn, redis::Script::new(REDIS_DEL_IF_OWNER)),
                "raw SET NX PX + EVALSHA compare-and-delete (two round trips), same server",
            )));
        }
        if url.starts_with("etcd://") || url.starts_with("etcds://") {
            // A client of its own, set up from the same URL: endpoints, credentials, TLS.
            let driver =
                lockkit::etcd::EtcdDriver::connect(lockkit::etcd::EtcdOptions::from_url(url)?)
                    .await?;
            return Ok(Some((
                Floor::Etcd(Box::new(driver.client().clone())),
                "raw txn (put if create_revision = 0, else get) + delete, same server",
            )));
        }
        if url.starts_with("zk://") {
            let hosts = zk_hosts(url)
                .ok_or_else(|| LockError::Config(format!("no host:port in {}", redact_url(url))))?;
            let client = zookeeper_client::Client::connect(hosts)
                .await
                .map_err(|e| LockError::connection("zookeeper", e))?;
            zk_create_parent(&client, ZK_FLOOR_ROOT).await?;
            return Ok(Some((
                Floor::Zk(client),
                "raw create(ephemeral sequential) + getChildren + delete via zookeeper-client, same server",
            )));
        }
        if url.starts_with("consul://") {
            return Ok(Some((
                Floor::Consul(ConsulFloor::connect(url).await?),
                "raw PUT /v1/kv ?acquire= + PUT ?release= via reqwest, one session per client, same agent",
            )));
        }
        if url.starts_with("mysql") || url.starts_with("mariadb") {
            let url = url.replacen("mariadb://", "mysql://", 1);
            let (url, _) = url.split_once('?').unwrap_or((&url, ""));
            let pool = sqlx::mysql::MySqlPoolOptions::new()
                .max_connections(2)
                .connect(url)
                .await
                .map_err(|e| LockError::connection("mysql", e))?;
            sqlx::query(FLOOR_TABLE_MY)
                .execute(&pool)
                .await
                .map_err(backend)?;
            return Ok(Some((
                Floor::MySql(pool),
                "raw UPDATE … LAST_INSERT_ID(fence + 1) + UPDATE via sqlx, same server",
            )));
        }
        let Ok(opts) = lockkit::sqlite::SqliteOptions::from_url(url) else {
            return Ok(None);
        };
        let Some(path) = opts.path() else {
            return Ok(None);
        };
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(connect)
            .await
            .map_err(|e| LockError::connection("sqlite", e))?;
        sqlx::query(FLOOR_TABLE_SQLITE)
            .execute(&pool)
            .await
            .map_err(|e| LockError::backend("sqlite", e))?;
        Ok(Some((
            Floor::Sqlite(pool),
            "raw upsert ... RETURNING + UPDATE via sqlx, same file and pool settings",
        )))
    }

    /// Creates what the floor's keys need before the first acquire: MySQL rows and
    /// ZooKeeper parent nodes. Idempotent; other backends need nothing.
    pub(crate) async fn prepare(&self, keys: &[String]) -> Result<(), LockError> {
        match self {
            Floor::MySql(pool) => {
                for chunk in keys.chunks(500) {
                    let mut q = sqlx::QueryBuilder::<sqlx::MySql>::new(
                        "INSERT IGNORE INTO lockkit_bench_floor (name, owner, fence, expires_at) ",
                    );
                    q.push_values(chunk, |mut row, key| {
                        row.push_bind(key).push("NULL").push("0").push("NOW(6)");
                    });
                    q.build()
                        .execute(pool)
                        .await
                        .map_err(|e| LockError::backend("bench-floor", e))?;
                }
                Ok(())
            }
            Floor::Zk(client) => {
                for key in keys {
                    zk_create_parent(client, &zk_parent(key)).await?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Removes every trace of the floor's `keys`: SQL rows (all of `lockkit-bench/`,
    /// and the floor table once it is empty), ZooKeeper parent nodes (and the floor's root once empty),
    /// Consul's released keys, and any Redis or etcd key a failed run left. Best
    /// effort.
    pub(crate) async fn clean_up(&self, keys: &[String]) {
        match self {
            Floor::Sqlite(pool) => clean_floor_table!(pool),
            Floor::Postgres(pool) => clean_floor_table!(pool),
            Floor::MySql(pool) => clean_floor_table!(pool),
            Floor::Mem => {
                let mut table = mem_table().lock().unwrap_or_else(|e| e.into_inner());
                for key in keys {
                    table.remove(key);
                }
            }
            Floor::Redis(conn, _) => {
                let mut conn = conn.clone();
                for key in keys {
                    let _: Result<i64, _> = redis::cmd("DEL").arg(key).query_async(&mut conn).await;
                }
            }
            Floor::Etcd(client) => {
                let mut kv = client.kv_client();
                for key in keys {
                    let _ = kv.delete(key.as_str(), None).await;
                }
            }
            Floor::Zk(client) => {
                for key in keys {
                    let _ = client.delete(&zk_parent(key), None).await;
                }
                // Fails while another run still uses it: it then cleans up.
                let _ = client.delete(ZK_FLOOR_ROOT, None).await;
            }
            Floor::Consul(c) => {
                // A released key stays in Consul's KV: remove them all at once.
                let path = format!("/v1/kv/{CONSUL_FLOOR_PREFIX}?recurse=true");
                let _ = c.send(reqwest::Method::DELETE, path, String::new()).await;
            }
        }
    }

    /// One attempt to take `key` for `owner`, without waiting: what release needs if
    /// it was granted, `None` if another holder has it.
    pub(crate) async fn try_acquire(
        &self,
        key: &str,
        owner: &str,
    ) -> Result<Option<Held>, LockError> {
        let err = |e| LockError::backend("bench-floor", e);
        let held = || Some(Held(owner.to_owned()));
        match self {
            Floor::Redis(conn, _) => {
                let mut conn = conn.clone();
                let set: Option<String> = redis::cmd("SET")
                    .arg(key)
                    .arg(owner)
                    .arg("NX")
                    .arg("PX")
                    .arg(30_000)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| LockError::backend("redis", e))?;
                Ok(set.and_then(|_| held()))
            }
            Floor::Etcd(client) => {
                use etcd_client::{Compare, CompareOp, Txn, TxnOp};
                let txn = Txn::new()
                    .when([Compare::create_revision(key, CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(key, owner, None)])
                    .or_else([TxnOp::get(key, None)]);
                let reply = client
                    .kv_client()
                    .txn(txn)
                    .await
                    .map_err(|e| LockError::backend("etcd", e))?;
                Ok(reply.succeeded().then(held).flatten())
            }
            Floor::Zk(client) => {
                let zerr = |e| LockError::backend("zookeeper", e);
                let parent = zk_parent(key);
                let node = zookeeper_client::CreateMode::EphemeralSequential
                    .with_acls(zookeeper_client::Acls::anyone_all());
                let (_, seq) = client
                    .create(&format!("{parent}/lock-"), &[], &node)
                    .await
                    .map_err(zerr)?;
                let path = format!("{parent}/lock-{seq}");
                // Held when our node sorts first (sequence numbers are zero-padded).
                let children = client.list_children(&parent).await.map_err(zerr)?;
                let ours = format!("lock-{seq}");
                if children.iter().min().is_some_and(|c| *c == ours) {
                    Ok(Some(Held(path)))
                } else {
                    // A spinning floor does not queue: withdraw and try again.
                    client.delete(&path, None).await.map_err(zerr)?;
                    Ok(None)
                }
            }
            Floor::Postgres(pool) => {
                let fence: Option<i64> = sqlx::query_scalar(
                    "INSERT INTO lockkit_bench_floor AS l (name, owner, fence, expires_at)
                     VALUES ($1, $2, 1, clock_timestamp() + interval '30 seconds')
                     ON CONFLICT (name) DO UPDATE SET fence = l.fence + 1, owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
                     WHERE l.owner IS NULL OR l.expires_at <= clock_timestamp() RETURNING fence",
                )
                .bind(key)
                .bind(owner)
                .fetch_optional(pool)
                .await
                .map_err(err)?;
                Ok(fence.and_then(|_| held()))
            }
            Floor::MySql(pool) => {
                let done = sqlx::query(
                    "UPDATE lockkit_bench_floor SET fence = LAST_INSERT_ID(fence + 1), owner = ?, expires_at = NOW(6) + INTERVAL 30 SECOND
                     WHERE name = ? AND (owner IS NULL OR expires_at <= NOW(6))",
                )
                .bind(owner)
                .bind(key)
                .execute(pool)
                .await
                .map_err(err)?;
                Ok((done.rows_affected() == 1).then(held).flatten())
            }
            Floor::Consul(c) => {
                let path = ConsulFloor::key_path(key, &format!("acquire={}", c.session));
                let reply = c.send(reqwest::Method::PUT, path, owner.to_owned()).await?;
                Ok((reply.trim() == "true").then(held).flatten())
            }
            Floor::Mem => {
                let mut table = mem_table().lock().unwrap_or_else(|e| e.into_inner());
                if table.contains_key(key) {
                    return Ok(None);
                }
                table.insert(key.to_owned(), owner.to_owned());
                Ok(held())
            }
            Floor::Sqlite(pool) => {
                let fence: Option<i64> = sqlx::query_scalar(
                    "INSERT INTO lockkit_bench_floor (name, owner, fence, expires_at) VALUES (?1, ?2, 1, ?3)
                     ON CONFLICT(name) DO UPDATE SET fence = fence + 1, owner = excluded.owner, expires_at = excluded.expires_at
                     WHERE owner IS NULL OR expires_at <= ?4 RETURNING fence",
                )
                .bind(key)
                .bind(owner)
                .bind(i64::MAX / 4)
                .bind(0i64)
                .fetch_optional(pool)
                .await
                .map_err(err)?;
                Ok(fence.and_then(|_| held()))
            }
        }
    }

    /// Releases what [`Floor::try_acquire`] granted.
    pub(crate) async fn release(&self, key: &str, held: Held) -> Result<(), LockError> {
        let err = |e| LockError::backend("bench-floor", e);
        let Held(owner) = held;
        match self {
            Floor::Redis(conn, del) => {
                let mut conn = conn.clone();
                let _: i64 = del
                    .key(key)
                    .arg(&owner)
                    .invoke_async(&mut conn)
                    .await
                    .map_err(|e| LockError::backend("redis", e))?;
            }
            Floor::Etcd(client) => {
                client
                    .kv_client()
                    .delete(key, None)
                    .await
                    .map_err(|e| LockError::backend("etcd", e))?;
            }
            Floor::Zk(client) => {
                // `owner` is the node's path here.
                client
                    .delete(&owner, None)
                    .await
                    .map_err(|e| LockError::backend("zookeeper", e))?;
            }
            Floor::Postgres(pool) => {
                sqlx::query("UPDATE lockkit_bench_floor SET owner = NULL, expires_at = '-infinity' WHERE name = $1 AND owner = $2")
                    .bind(key)
                    .bind(&owner)
                    .execute(pool)
                    .await
                    .map_err(err)?;
            }
            Floor::MySql(pool) => {
                sqlx::query(
                    "UPDATE lockkit_bench_floor SET owner = NULL WHERE name = ? AND owner = ?",
                )
                .bind(key)
                .bind(&owner)
                .execute(pool)
                .await
                .map_err(err)?;
            }
            Floor::Consul(c) => {
                let path = ConsulFloor::key_path(key, &format!("release={}", c.session));
                c.send(reqwest::Method::PUT, path, owner).await?;
            }
            Floor::Mem => {
                let mut table = mem_table().lock().unwrap_or_else(|e| e.into_inner());
                if table.get(key) == Some(&owner) {
                    table.remove(key);
                }
            }
            Floor::Sqlite(pool) => {
                sqlx::query("UPDATE lockkit_bench_floor SET owner = NULL, expires_at = 0 WHERE name = ?1 AND owner = ?2 AND expires_at > ?3")
                    .bind(key)
                    .bind(&owner)
                    .bind(0i64)
                    .execute(pool)
                    .await
                    .map_err(err)?;
            }
        }
        Ok(())
    }

    /// One uncontended lock+release pair on `key` (what the latency floor times).
    pub(crate) async fn lock_release(&self, key: &str, owner: &str) -> Result<(), LockError> {
        match self.try_acquire(key, owner).await? {
            Some(held) => self.release(key, held).await,
            None => Ok(()),
        }
    }
}

async fn zk_create_parent(client: &zookeeper_client::Client, path: &str) -> Result<(), LockError> {
    let parent =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    match client.create(path, &[], &parent).await {
        Ok(_) | Err(zookeeper_client::Error::NodeExists) => Ok(()),
        Err(e) => Err(LockError::backend("zookeeper", e)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.
mod tests {
    use super::*;

    #[test]
    fn zk_hosts_keeps_only_the_servers() {
        assert_eq!(zk_hosts("zk://127.0.0.1:2181"), Some("127.0.0.1:2181"));
        assert_eq!(
            zk_hosts("zk://a:1,b:2,c:3/chroot/x?session_timeout=5s"),
            Some("a:1,b:2,c:3")
        );
        assert_eq!(zk_hosts("zk://u:p@a:1?x=y"), Some("a:1"));
        assert_eq!(zk_hosts("zk://"), None);
        assert_eq!(zk_hosts("zk:///chroot"), None);
        assert_eq!(zk_hosts("etcd://a:1"), None);
    }

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
