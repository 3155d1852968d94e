//! What the runner asks a backend directly: how many requests it has served (to count
//! commands per hand-off) and how long its cheapest request takes (one round trip).

use std::time::{Duration, Instant};

use sqlx::Connection;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub(crate) type Failure = Box<dyn std::error::Error + Send + Sync>;

/// A backend under test, by kind and address(es).
#[derive(Debug)]
pub(crate) enum Backend {
    /// One or more independent Redis masters.
    Redis(Vec<RedisServer>),
    /// One etcd member's client address.
    Etcd(String),
    /// One ZooKeeper server.
    ZooKeeper(String),
    /// One MySQL or MariaDB server, by URL.
    MySql(String),
    /// One PostgreSQL server, by URL, with `pg_stat_statements` loaded (see
    /// `suite::counting_statements`).
    Postgres(String),
}

/// One Redis server and the runner's connection to it, opened on first use and
/// kept, so counting sends one INFO and nothing else.
pub(crate) struct RedisServer {
    address: String,
    conn: tokio::sync::OnceCell<redis::aio::MultiplexedConnection>,
}

impl std::fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.address)
    }
}

impl RedisServer {
    /// The server at `host:port`.
    pub(crate) fn new(address: String) -> Self {
        Self {
            address,
            conn: tokio::sync::OnceCell::new(),
        }
    }

    async fn connection(&self) -> Result<redis::aio::MultiplexedConnection, Failure> {
        let conn = self
            .conn
            .get_or_try_init(|| async {
                redis::Client::open(format!("redis://{}", self.address))?
                    .get_multiplexed_async_connection()
                    .await
            })
            .await?;
        Ok(conn.clone())
    }

    /// Calls of every command the server has run, or of `only` that one.
    async fn calls_of(&self, only: Option<&str>) -> Result<u64, Failure> {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut self.connection().await?)
            .await?;
        Ok(info
            .lines()
            .filter(|l| l.starts_with("cmdstat_"))
            .filter(|l| only.is_none_or(|c| l.starts_with(&format!("cmdstat_{c}:"))))
            .filter_map(|l| {
                l.split([':', ','])
                    .find_map(|kv| kv.strip_prefix("calls="))?
                    .parse::<u64>()
                    .ok()
            })
            .sum())
    }
}

/// `n` and a tenth more one-row UPDATEs on a fresh `$connection` to `$url`, after
/// its `$setup` statements, each timed into `$samples`: MySQL's and PostgreSQL's
/// round trip, one loop for both connection types.
macro_rules! sql_round_trips {
    ($connection:ty, $url:expr, $setup:expr, $n:expr, $samples:expr) => {{
        let mut conn = <$connection>::connect($url).await?;
        for setup in $setup {
            sqlx::query(setup).execute(&mut conn).await?;
        }
        for _ in 0..$n + $n / 10 {
            let t = Instant::now();
            sqlx::query("UPDATE lockkit_bench_round_trip SET n = n + 1 WHERE id = 1")
                .execute(&mut conn)
                .await?;
            $samples.push(t.elapsed());
        }
    }};
}

impl Backend {
    /// How the backend counts, for the table: what one unit of
    /// [`commands`](Self::commands) is.
    pub(crate) fn counted(&self) -> &'static str {
        match self {
            Self::Redis(_) => {
                "Redis commands run (INFO commandstats, summed over the masters; commands run \
                 inside Lua scripts count too)"
            }
            Self::Etcd(_) => {
                "gRPC messages received (grpc_server_msg_received_total: each unary request, \
                 each watch or keep-alive stream message)"
            }
            Self::ZooKeeper(_) => "packets received (mntr zk_packets_received)",
            Self::MySql(_) => "statements received (global status Questions)",
            Self::Postgres(_) => {
                "statements run (pg_stat_statements calls, loaded for this run; LISTEN \
                 included)"
            }
        }
    }

    /// What [`round_trip`](Self::round_trip) times.
    pub(crate) fn cheapest_request(&self) -> &'static str {
        match self {
            Self::Redis(masters) if masters.len() > 1 => {
                "a PING to every master at once, until every one answered: the round each \
                 Redlock step waits for"
            }
            Self::Redis(_) => "PING",
            Self::Etcd(_) => "a linearizable get of a missing key",
            Self::ZooKeeper(_) => "an exists of `/`",
            Self::MySql(_) | Self::Postgres(_) => {
                "a one-row autocommit UPDATE: every grant is a committed write, which no \
                 wake-up can skip"
            }
        }
    }

    /// Requests served between two [`commands`](Self::commands) snapshots, less
    /// those the first snapshot sent itself.
    pub(crate) fn commands_between(&self, before: u64, after: u64) -> u64 {
        // Redis counts an INFO once it has run, and pg_stat_statements a statement
        // once it has ended: the one (per master) that took `before` shows in
        // `after`.
        let own = match self {
            Self::Redis(masters) => masters.len() as u64,
            Self::Postgres(_) => 1,
            _ => 0,
        };
        after.saturating_sub(before + own)
    }

    /// Scripts (EVALSHA) run so far, on Redis.
    pub(crate) async fn script_calls(&self) -> Result<Option<u64>, Failure> {
        let Self::Redis(masters) = self else {
            return Ok(None);
        };
        let mut total = 0;
        for master in masters {
            total += master.calls_of(Some("evalsha")).await?;
        }
        Ok(Some(total))
    }

    /// Requests served so far (see [`commands_between`](Self::commands_between)).
    pub(crate) async fn commands(&self) -> Result<Option<u64>, Failure> {
        match self {
            Self::Redis(masters) => {
                let mut total = 0;
                for master in masters {
                    total += master.calls_of(None).await?;
                }
                Ok(Some(total))
            }
            Self::Etcd(address) => {
                let metrics = http_get(address, "/metrics").await?;
                Ok(Some(
                    metrics
                        .lines()
                        .filter(|l| l.starts_with("grpc_server_msg_received_total{"))
                        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                        .sum::<f64>() as u64,
                ))
            }
            Self::ZooKeeper(address) => {
                let mntr = four_letter_word(address, "mntr").await?;
                Ok(mntr
                    .lines()
                    .find_map(|l| l.strip_prefix("zk_packets_received")?.trim().parse().ok()))
            }
            Self::MySql(url) => {
                let mut conn = sqlx::MySqlConnection::connect(url).await?;
                // Less this connection's own statements (its set-up at connect).
                let questions: f64 = sqlx::query_scalar(
                    "SELECT CAST((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
                     WHERE VARIABLE_NAME = 'QUESTIONS') - (SELECT VARIABLE_VALUE \
                     FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'QUESTIONS') \
                     AS DOUBLE)",
                )
                .fetch_one(&mut conn)
                .await?;
                Ok(Some(questions as u64))
            }
            Self::Postgres(url) => {
                let mut conn = sqlx::PgConnection::connect(url).await?;
                let calls: i64 = sqlx::query_scalar(
                    "SELECT COALESCE(sum(calls), 0)::int8 FROM pg_stat_statements",
                )
                .fetch_one(&mut conn)
                .await?;
                Ok(Some(calls as u64))
            }
        }
    }

    /// The p50 of `n` of the backend's cheapest requests on one connection: Redis
    /// PING (on Redlock's masters, one to each at once), an etcd linearizable get of a missing key, a ZooKeeper exists of `/`,
    /// a MySQL or PostgreSQL one-row UPDATE (see
    /// [`cheapest_request`](Self::cheapest_request)).
    pub(crate) async fn round_trip(&self, n: usize) -> Result<Option<Duration>, Failure> {
        let mut samples = Vec::with_capacity(n);
        match self {
            Self::Redis(masters) => {
                let mut conns = Vec::with_capacity(masters.len());
                for master in masters {
                    conns.push(master.connection().await?);
                }
                if conns.is_empty() {
                    return Err("no Redis server".into());
                }
                // On several masters (Redlock), each sample is a PING to every
                // master at once, until every one answered: what each Redlock
                // step waits for.
                let ping = redis::cmd("PING");
                for _ in 0..n + n / 10 {
                    let t = Instant::now();
                    let pings = conns.iter_mut().map(|c| ping.query_async::<String>(c));
                    for pong in futures_util::future::join_all(pings).await {
                        pong?;
                    }
                    samples.push(t.elapsed());
                }
            }
            Self::Etcd(address) => {
                let mut client = etcd_client::Client::connect([address.as_str()], None).await?;
                for _ in 0..n + n / 10 {
                    let t = Instant::now();
                    client.get("lockkit-bench-round-trip", None).await?;
                    samples.push(t.elapsed());
                }
            }
            Self::ZooKeeper(address) => {
                let client = zookeeper_client::Client::connect(address).await?;
                for _ in 0..n + n / 10 {
                    let t = Instant::now();
                    client.check_stat("/").await?;
                    samples.push(t.elapsed());
                }
            }
            Self::Postgres(url) => sql_round_trips!(
                sqlx::PgConnection,
                url,
                [
                    "CREATE TABLE IF NOT EXISTS lockkit_bench_round_trip \
                     (id INT PRIMARY KEY, n BIGINT NOT NULL)",
                    "INSERT INTO lockkit_bench_round_trip VALUES (1, 0) ON CONFLICT DO NOTHING",
                ],
                n,
                samples
            ),
            Self::MySql(url) => sql_round_trips!(
                sqlx::MySqlConnection,
                url,
                [
                    "CREATE TABLE IF NOT EXISTS lockkit_bench_round_trip \
                     (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB",
                    "INSERT IGNORE INTO lockkit_bench_round_trip VALUES (1, 0)",
                ],
                n,
                samples
            ),
        }
        // The first tenth warms the connection up.
        let mut samples = samples.split_off(n / 10);
        samples.sort();
        Ok(samples.get(samples.len() / 2).copied())
    }
}

/// The reply to a plain HTTP/1.0 GET (the body and headers; enough for /metrics).
async fn http_get(address: &str, path: &str) -> Result<String, Failure> {
    let mut s = TcpStream::connect(address).await?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").as_bytes())
        .await?;
    let mut reply = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut reply)).await??;
    Ok(reply)
}

/// A ZooKeeper four-letter word's reply.
pub(crate) async fn four_letter_word(address: &str, word: &str) -> Result<String, Failure> {
    let mut s = TcpStream::connect(address).await?;
    s.write_all(word.as_bytes()).await?;
    let mut reply = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut reply)).await??;
    Ok(reply)
}
