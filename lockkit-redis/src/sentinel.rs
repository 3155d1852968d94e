//! Redis Sentinel: the master found through the sentinels, and followed across a
//! failover.
//!
//! [`SentinelConn`] asks the sentinels (`SENTINEL get-master-addr-by-name`) for
//! the master, checks that the node answers `ROLE` as a master, and sends every
//! command on a reconnecting connection to it. When a command fails in a way that
//! says the master moved (the connection broke, or the node answers `READONLY`
//! because it was demoted), it asks the sentinels again and moves to the new
//! master, where it sends the command once more: the old master's part no longer
//! counts, except what it replicated, and every script takes the same owner's
//! hold as its own again. While no other master is promoted yet, the command
//! fails as `MASTERDOWN`, which a waiting acquire retries for as long as it
//! waits.
//!
//! Every master it moves to has its eviction policy checked before it is used
//! (see [`eviction`](crate::eviction)): a promoted replica that may evict
//! lockkit's keys fails the request with the refusal instead.

use std::sync::{Arc, RwLock};

use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::{
    Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult, ServerErrorKind, Value,
};

use crate::connection::Conn;
use crate::eviction::{self, Eviction};
use crate::options::{RedisOptions, SentinelTarget};
use crate::tls;

/// The master of a Sentinel-watched group, followed across failovers.
#[derive(Clone)]
pub(crate) struct SentinelConn {
    shared: Arc<Shared>,
}

struct Shared {
    options: RedisOptions,
    target: SentinelTarget,
    /// The master's address and the connection to it.
    current: RwLock<(String, ConnectionManager)>,
    /// One refresh at a time.
    refreshing: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for SentinelConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelConn")
            .field("master", &self.shared.target.master)
            .finish_non_exhaustive()
    }
}

impl SentinelConn {
    /// Finds the master through the sentinels and connects to it.
    pub(crate) async fn connect(
        options: &RedisOptions,
        target: &SentinelTarget,
    ) -> RedisResult<Self> {
        let addr = master_addr(options, target).await?;
        let conn = connect_master(options, target, &addr).await?;
        Ok(Self {
            shared: Arc::new(Shared {
                options: options.clone(),
                target: target.clone(),
                current: RwLock::new((addr, conn)),
                refreshing: tokio::sync::Mutex::new(()),
            }),
        })
    }

    fn current(&self) -> (String, ConnectionManager) {
        self.shared
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Asks the sentinels for the master again, and moves to it if it changed
    /// since `seen` (another caller may have moved already). Whether the master
    /// is now another node than `seen`.
    async fn refresh(&self, seen: &str) -> RedisResult<bool> {
        let _one = self.shared.refreshing.lock().await;
        if self.current().0 != seen {
            return Ok(true);
        }
        let (options, target) = (&self.shared.options, &self.shared.target);
        let addr = master_addr(options, target).await?;
        if addr == seen {
            return Ok(false);
        }
        tracing::info!(from = seen, to = %addr, "the Sentinel master moved");
        let conn = connect_master(options, target, &addr).await?;
        let mut current = self
            .shared
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner());
        *current = (addr, conn);
        Ok(true)
    }

    /// Clients for every data node the sentinels know (master first, then the
    /// replicas), for the wake-up subscription: a `PUBLISH` on the master reaches
    /// subscribers on its replicas too, so any of them serves after a failover.
    pub(crate) async fn data_clients(&self) -> RedisResult<Vec<redis::Client>> {
        let (options, target) = (&self.shared.options, &self.shared.target);
        let mut addrs = vec![self.current().0];
        let mut sentinel = first_sentinel(options).await?;
        let replicas: Vec<Vec<String>> = redis::cmd("SENTINEL")
            .arg("replicas")
            .arg(&target.master)
            .query_async(&mut sentinel)
            .await?;
        for fields in replicas {
            let field = |name: &str| {
                let i = fields.iter().position(|f| f == name)?;
                fields.get(i + 1).cloned()
            };
            if let (Some(ip), Some(port)) = (field("ip"), field("port")) {
                addrs.push(format!("{ip}:{port}"));
            }
        }
        addrs
            .iter()
            .map(|a| tls::client(&target.node_url(a), options.tls.as_ref()))
            .collect()
    }
}

/// Whether `e` says the command went to a node that is no longer the master, or
/// could not reach it.
fn master_moved(e: &RedisError) -> bool {
    is_readonly(e) || e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal()
}

/// `e` as the transient error a failover in progress is (`MASTERDOWN`), so that
/// a waiting acquire tries again instead of giving up.
fn failing_over(e: RedisError) -> RedisError {
    RedisError::from((
        ErrorKind::Server(ServerErrorKind::MasterDown),
        "the Sentinel master is unreachable or demoted, and no other is promoted yet",
        e.to_string(),
    ))
}

/// After `e` made the driver ask the sentinels (`refreshed`): `Ok` if it moved to
/// another master; else the error for the request: that master's eviction
/// policy refused, or `e` as a failover in progress.
fn moved(refreshed: RedisResult<bool>, e: RedisError) -> RedisResult<()> {
    match refreshed {
        Ok(true) => Ok(()),
        Err(refused) if eviction::refusal(&refused).is_some() => Err(refused),
        _ => Err(failing_over(e)),
    }
}

/// `READONLY`: the node was demoted to a replica, and wrote nothing.
fn is_readonly(e: &RedisError) -> bool {
    matches!(e.kind(), ErrorKind::Server(ServerErrorKind::ReadOnly))
}

impl ConnectionLike for SentinelConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (addr, mut conn) = self.current();
            match conn.req_packed_command(cmd).await {
                Err(e) if master_moved(&e) => {
                    moved(self.refresh(&addr).await, e)?;
                    // The old master is gone or demoted: what it did with the
                    // command no longer counts, except what it passed on to the
                    // new one, where every script takes the same owner's hold as
                    // its own again. So: once more, there.
                    let (_, mut conn) = self.current();
                    conn.req_packed_command(cmd).await
                }
                other => other,
            }
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (addr, mut conn) = self.current();
            match conn.req_packed_commands(pipeline, offset, count).await {
                Err(e) if master_moved(&e) => {
                    moved(self.refresh(&addr).await, e.clone())?;
                    Err(failing_over(e))
                }
                other => other,
            }
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// What the first sentinel that knows says to `ask` (on a connection of its own,
/// within the connect timeout); `None` when every sentinel answered and none
/// knew; the last error when some could not answer.
async fn ask_sentinels<T, F, Fut>(options: &RedisOptions, ask: F) -> RedisResult<Option<T>>
where
    F: Fn(MultiplexedConnection) -> Fut,
    Fut: Future<Output = RedisResult<Option<T>>>,
{
    let mut failed = None;
    for node in &options.nodes {
        let asked = async {
            let client = tls::client(node, options.tls.as_ref())?;
            ask(client.get_multiplexed_async_connection().await?).await
        };
        match tokio::time::timeout(options.timeouts.connect, asked).await {
            Ok(Ok(Some(answer))) => return Ok(Some(answer)),
            Ok(Ok(None)) => {}
            Ok(Err(e)) => failed = Some(e),
            Err(_) => {
                failed = Some(RedisError::from((
                    ErrorKind::Io,
                    "a sentinel did not answer",
                )))
            }
        }
    }
    failed.map_or(Ok(None), Err)
}

/// A connection to the first sentinel that answers.
async fn first_sentinel(options: &RedisOptions) -> RedisResult<MultiplexedConnection> {
    let first = ask_sentinels(options, |conn| async move { Ok(Some(conn)) }).await?;
    first.ok_or_else(|| RedisError::from((ErrorKind::Client, "no sentinel in the URL")))
}

/// `host:port` of the master, as the first sentinel that knows it says.
async fn master_addr(options: &RedisOptions, target: &SentinelTarget) -> RedisResult<String> {
    let found = ask_sentinels(options, |mut conn| async move {
        let addr: Option<(String, u16)> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(&target.master)
            .query_async(&mut conn)
            .await?;
        Ok(addr.map(|(host, port)| format!("{host}:{port}")))
    })
    .await?;
    found.ok_or_else(|| {
        RedisError::from((
            ErrorKind::Client,
            "the sentinels do not know the master name",
            target.master.clone(),
        ))
    })
}

/// A reconnecting connection to the master at `addr`, checked to answer `ROLE`
/// as a master (a sentinel may still name a node that was just demoted), and
/// its eviction policy checked.
async fn connect_master(
    options: &RedisOptions,
    target: &SentinelTarget,
    addr: &str,
) -> RedisResult<ConnectionManager> {
    let client = tls::client(&target.node_url(addr), options.tls.as_ref())?;
    let (mut conn, _) = Conn::single(client, options).await?;
    let role: Vec<Value> = redis::cmd("ROLE").query_async(&mut conn).await?;
    match role.first() {
        Some(Value::BulkString(r)) if r.as_slice() == b"master" => {
            if options.eviction == Eviction::Refuse {
                let server = format!("the Sentinel master `{}` at {addr}", target.master);
                eviction::check_server(&mut conn, &server).await?;
            }
            Ok(conn)
        }
        _ => Err(RedisError::from((
            ErrorKind::Client,
            "the node the sentinels name is not a master (yet)",
        ))),
    }
}
