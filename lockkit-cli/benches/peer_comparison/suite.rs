//! The run's backend groups: each backend's throwaway servers, started here and
//! stopped on return, and the programs measured on them; and the Consul smoke test.

use lockkit_testkit::{ConsulStandIn, Etcd, MariaDb, Postgres, Redis, RedisMasters, ZooKeeper};

use crate::Args;
use crate::backend::{Backend, Failure, RedisServer};
use crate::measure::{LEASE, MYSQL_HANDOFF_FLOOR, PG_HANDOFF_FLOOR, lockkit_bench, run_group};
use crate::programs::Programs;
use crate::results::Group;
use crate::servers::{
    counting_statements, pin_server, pin_server_and_children, version, zk_version,
};

/// ZooKeeper's other primitives, uncontended, against the peers that have them:
/// (title, lockkit's and kazoo's suffix and Curator's recipe, kazoo's label,
/// Curator's label).
const ZK_PRIMITIVES: [(&str, &str, &str, &str); 3] = [
    (
        "ZooKeeper, a semaphore of 4 permits",
        "semaphore",
        "kazoo Semaphore",
        "Curator InterProcessSemaphoreV2",
    ),
    (
        "ZooKeeper, a read lock",
        "read",
        "kazoo ReadLock",
        "Curator InterProcessReadWriteLock (read)",
    ),
    (
        "ZooKeeper, a write lock",
        "write",
        "kazoo WriteLock",
        "Curator InterProcessReadWriteLock (write)",
    ),
];

/// rslock: a reference on Redis and Redlock, not a target.
const RSLOCK: &str = "rslock (Rust)";
/// Why rslock is a reference.
const UNFENCED: &str = "it hands out no fencing token: the difference is what fencing costs";

/// lockkit's default request beside its fair one.
const UNFAIR: &str = "lockkit, not fair (the default)";

/// lockkit's lease table beside its lock in the application's transaction: a
/// lock on connections of its own, acquired and released.
const LEASE_TABLE: &str = "lockkit, lease table (acquire + release)";
/// Why the lease table is a reference there.
const OUTSIDE_TRANSACTION: &str = "a lock outside the application's transaction, \
    which needs no BEGIN and COMMIT: a reference for what those cost";

/// The two keys of `lock_all`'s rows taken as two locks, one after the other.
const ONE_BY_ONE: &str = "lockkit, two locks one after the other";

/// Followers behind the leader in the election failover rows: each resignation
/// hands the lead to the next.
const FAILOVER_FOLLOWERS: [u64; 2] = [1, 8];

/// Everything, on servers started here and stopped on return.
pub(crate) async fn run(args: &Args) -> Result<Vec<Group>, Failure> {
    let programs = Programs { args };
    let mut groups = Vec::new();
    if args.wants("redis") {
        let redis = Redis::start().await?;
        pin_server(redis.pid());
        let address = format!("127.0.0.1:{}", redis.port());
        let py = |peer, label| {
            programs.python(
                args.python.as_deref(),
                "python",
                peer,
                label,
                address.clone(),
            )
        };
        let group = Group::new(
            "Redis, one server",
            Backend::Redis(vec![RedisServer::new(address.clone())]),
            version("redis-server", &["--version"]).await,
        )
        .with_servers([redis.pid()])
        .with_floor_target(1.1)
        .with_context(RSLOCK, UNFENCED);
        groups.push(
            run_group(
                args,
                group,
                &redis.url(),
                vec![
                    programs.rust("lockkit", "lockkit", redis.url()),
                    programs.rust("lockkit-lease", LEASE, redis.url()),
                    programs.rust("rslock", RSLOCK, address.clone()),
                    py("redis-py", "redis-py Lock"),
                    py("python-redis-lock", "python-redis-lock"),
                    py("pottery", "pottery Redlock"),
                ],
            )
            .await,
        );
        let mut group = Group::new(
            "Redis, one server: fair requests",
            Backend::Redis(vec![RedisServer::new(address.clone())]),
            version("redis-server", &["--version"]).await,
        )
        .with_servers([redis.pid()]);
        group.without_floor = true;
        let fair = vec![
            programs.rust("lockkit-fair", "lockkit", redis.url()),
            programs.rust("lockkit", UNFAIR, redis.url()),
        ];
        groups.push(run_group(args, group, &redis.url(), fair).await);
        let mut group = Group::new(
            "Redis, one server: two keys at once",
            Backend::Redis(vec![RedisServer::new(address.clone())]),
            version("redis-server", &["--version"]).await,
        )
        .with_servers([redis.pid()]);
        group.uncontended_only = true;
        let two_keys = vec![
            programs.rust("lockkit-two-keys", "lockkit", redis.url()),
            programs.rust("lockkit-two-locks", ONE_BY_ONE, redis.url()),
        ];
        groups.push(run_group(args, group, &redis.url(), two_keys).await);
    }
    if args.wants("redlock") {
        let masters = RedisMasters::start(5).await?;
        for node in &masters.nodes {
            pin_server(node.pid());
        }
        let addresses: Vec<String> = masters
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let target = addresses.join(",");
        let group = Group::new(
            "Redlock, five Redis masters",
            Backend::Redis(addresses.into_iter().map(RedisServer::new).collect()),
            version("redis-server", &["--version"]).await,
        )
        .with_servers(masters.nodes.iter().map(|n| n.pid()))
        .with_floor_target(1.1)
        .with_context(RSLOCK, UNFENCED);
        groups.push(
            run_group(
                args,
                group,
                &masters.url(),
                vec![
                    programs.rust("lockkit", "lockkit", masters.url()),
                    programs.rust("lockkit-lease", LEASE, masters.url()),
                    programs.rust("rslock", RSLOCK, target.clone()),
                    programs.python(
                        args.python.as_deref(),
                        "python",
                        "pottery",
                        "pottery Redlock",
                        target,
                    ),
                ],
            )
            .await,
        );
    }
    if args.wants("etcd") {
        let etcd = Etcd::start().await?;
        pin_server(etcd.pid());
        let address = format!("127.0.0.1:{}", etcd.port());
        let group = Group::new(
            "etcd, one member",
            Backend::Etcd(address.clone()),
            version("etcd", &["--version"]).await,
        )
        .with_servers([etcd.pid()]);
        groups.push(
            run_group(
                args,
                group,
                &etcd.url(),
                vec![
                    programs.rust("lockkit", "lockkit", etcd.url()),
                    programs.python(
                        args.etcd3_python.as_deref(),
                        "etcd3-python",
                        "etcd3",
                        "python-etcd3 Lock",
                        address.clone(),
                    ),
                ],
            )
            .await,
        );
        let mut group = Group::new(
            "etcd, election failover",
            Backend::Etcd(address.clone()),
            version("etcd", &["--version"]).await,
        )
        .with_servers([etcd.pid()]);
        group.handoffs_only = Some(FAILOVER_FOLLOWERS.to_vec());
        let programs = vec![
            programs.rust("lockkit-election", "lockkit", etcd.url()),
            programs.python(
                args.python.as_deref(),
                "python",
                "etcdctl-elect",
                "etcd Election (etcdctl elect)",
                address,
            ),
        ];
        groups.push(run_group(args, group, &etcd.url(), programs).await);
    }
    if args.wants("zk") {
        let zk = ZooKeeper::start().await?;
        pin_server(zk.pid());
        let address = zk.address();
        let backend = Backend::ZooKeeper(address.clone());
        let server = zk_version(&backend).await;
        let group = Group::new("ZooKeeper, standalone", backend, server).with_servers([zk.pid()]);
        groups.push(
            run_group(
                args,
                group,
                &zk.url(),
                vec![
                    programs.rust("lockkit", "lockkit", zk.url()),
                    programs.python(
                        args.python.as_deref(),
                        "python",
                        "kazoo",
                        "kazoo Lock",
                        address.clone(),
                    ),
                    programs.curator("Curator InterProcessMutex", address.clone()),
                ],
            )
            .await,
        );
        for (title, primitive, kazoo, curator) in ZK_PRIMITIVES {
            let backend = Backend::ZooKeeper(address.clone());
            let server = zk_version(&backend).await;
            let mut group = Group::new(title, backend, server).with_servers([zk.pid()]);
            group.uncontended_only = true;
            let programs = vec![
                programs.rust(&format!("lockkit-{primitive}"), "lockkit", zk.url()),
                programs.python(
                    args.python.as_deref(),
                    "python",
                    &format!("kazoo-{primitive}"),
                    kazoo,
                    address.clone(),
                ),
                programs.curator_recipe(primitive, curator, address.clone()),
            ];
            groups.push(run_group(args, group, &zk.url(), programs).await);
        }
        let backend = Backend::ZooKeeper(address.clone());
        let server = zk_version(&backend).await;
        let mut group =
            Group::new("ZooKeeper, two keys at once", backend, server).with_servers([zk.pid()]);
        group.without_floor = true;
        let two_keys = vec![
            programs.rust("lockkit-two-keys", "lockkit", zk.url()),
            programs.curator_recipe("multi", "Curator InterProcessMultiLock", address.clone()),
        ];
        groups.push(run_group(args, group, &zk.url(), two_keys).await);
        let backend = Backend::ZooKeeper(address.clone());
        let server = zk_version(&backend).await;
        let mut group =
            Group::new("ZooKeeper, election failover", backend, server).with_servers([zk.pid()]);
        group.handoffs_only = Some(FAILOVER_FOLLOWERS.to_vec());
        let programs = vec![
            programs.rust("lockkit-election", "lockkit", zk.url()),
            programs.curator_recipe("leader", "Curator LeaderLatch", address.clone()),
        ];
        groups.push(run_group(args, group, &zk.url(), programs).await);
    }
    if args.wants("mariadb") {
        let db = MariaDb::start().await?;
        pin_server(db.pid());
        let url = db.url();
        let group = Group::new(
            "MariaDB, one server",
            Backend::MySql(url.clone()),
            version("mariadbd", &["--version"]).await,
        )
        .with_servers([db.pid()]);
        let mutex = vec![
            programs.rust("lockkit", "lockkit", url.clone()),
            programs.rust("raw-mysql-bell", MYSQL_HANDOFF_FLOOR, url.clone()),
        ];
        groups.push(run_group(args, group, &url, mutex).await);
        let mut group = Group::new(
            "MariaDB, a lock in your transaction",
            Backend::MySql(url.clone()),
            version("mariadbd", &["--version"]).await,
        )
        .with_servers([db.pid()])
        .with_context(LEASE_TABLE, OUTSIDE_TRANSACTION);
        group.uncontended_only = true;
        let in_transaction = vec![
            programs.rust("lockkit-transaction", "lockkit", url.clone()),
            programs.rust("lockkit", LEASE_TABLE, url.clone()),
        ];
        groups.push(run_group(args, group, &url, in_transaction).await);
    }
    if args.wants("postgres") {
        let pg = counting_statements(Postgres::start().await?).await?;
        let url = pg.url();
        // Its background processes too; each session's process forks from it
        // later, pinned alike.
        pin_server_and_children(pg.pid());
        let postgres = pg.bin_dir().join("postgres").display().to_string();
        let group = Group::new(
            "PostgreSQL, one server",
            Backend::Postgres(url.clone()),
            version(&postgres, &["--version"]).await,
        )
        .with_servers([pg.pid()]);
        // No peer (none of the peer libraries has a PostgreSQL lock): the
        // server's own hand-off floor.
        let mutex = vec![
            programs.rust("lockkit", "lockkit", url.clone()),
            programs.rust("raw-postgres-bell", PG_HANDOFF_FLOOR, url.clone()),
        ];
        groups.push(run_group(args, group, &url, mutex).await);
        let mut group = Group::new(
            "PostgreSQL, a lock in your transaction",
            Backend::Postgres(url.clone()),
            version(&postgres, &["--version"]).await,
        )
        .with_servers([pg.pid()])
        .with_context(LEASE_TABLE, OUTSIDE_TRANSACTION);
        group.uncontended_only = true;
        let in_transaction = vec![
            programs.rust("lockkit-transaction", "lockkit", url.clone()),
            programs.rust(
                "lockkit-transaction-advisory",
                "lockkit, advisory (pg_advisory_xact_lock)",
                url.clone(),
            ),
            programs.rust("lockkit", LEASE_TABLE, url.clone()),
        ];
        groups.push(run_group(args, group, &url, in_transaction).await);
        let mut group = Group::new(
            "PostgreSQL, two keys at once",
            Backend::Postgres(url.clone()),
            version(&postgres, &["--version"]).await,
        )
        .with_servers([pg.pid()]);
        group.uncontended_only = true;
        let two_keys = vec![
            programs.rust("lockkit-two-keys", "lockkit", url.clone()),
            programs.rust("lockkit-two-locks", ONE_BY_ONE, url.clone()),
        ];
        groups.push(run_group(args, group, &url, two_keys).await);
    }
    Ok(groups)
}

/// The Consul smoke test: lockkit against the in-process stand-in, not a figure.
pub(crate) async fn consul_smoke() -> Result<String, Failure> {
    let consul = ConsulStandIn::start().await?;
    let report = lockkit_bench(&consul.url(), 200, &["--handoffs", "20", "--waiters", "8"]).await?;
    let queue = &report["queue"]["handoff"];
    Ok(format!(
        "ran: {} uncontended pairs and a queue of 8 waiters ({} hand-offs) completed",
        report["lockkit"]["samples"], queue["samples"]
    ))
}
