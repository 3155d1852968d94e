//! The run's backend groups: each backend's throwaway servers, started here and
//! stopped on return, and the programs measured on them; and the Consul smoke test.

use lockkit_testkit::{ConsulStandIn, Etcd, MariaDb, Redis, RedisMasters, ZooKeeper};

use crate::Args;
use crate::backend::{self, Backend, Failure, RedisServer};
use crate::machine;
use crate::measure::{LEASE, lockkit_bench, run_group};
use crate::programs::Programs;
use crate::results::Group;

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
        );
        groups.push(
            run_group(
                args,
                group,
                &redis.url(),
                vec![
                    programs.rust("lockkit", "lockkit", redis.url()),
                    programs.rust("lockkit-lease", LEASE, redis.url()),
                    programs.rust("rslock", "rslock (Rust)", address.clone()),
                    py("redis-py", "redis-py Lock"),
                    py("python-redis-lock", "python-redis-lock"),
                    py("pottery", "pottery Redlock"),
                ],
            )
            .await,
        );
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
        );
        groups.push(
            run_group(
                args,
                group,
                &masters.url(),
                vec![
                    programs.rust("lockkit", "lockkit", masters.url()),
                    programs.rust("lockkit-lease", LEASE, masters.url()),
                    programs.rust("rslock", "rslock (Rust)", target.clone()),
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
        );
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
                        address,
                    ),
                ],
            )
            .await,
        );
    }
    if args.wants("zk") {
        let zk = ZooKeeper::start().await?;
        pin_server(zk.pid());
        let address = zk.address();
        let backend = Backend::ZooKeeper(address.clone());
        let server = zk_version(&backend).await;
        let group = Group::new("ZooKeeper, standalone", backend, server);
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
                    programs.curator("Curator InterProcessMutex", address),
                ],
            )
            .await,
        );
    }
    if args.wants("mariadb") {
        let db = MariaDb::start().await?;
        pin_server(db.pid());
        let url = db.url();
        let group = Group::new(
            "MariaDB, one server",
            Backend::MySql(url.clone()),
            version("mariadbd", &["--version"]).await,
        );
        let lockkit = vec![programs.rust("lockkit", "lockkit", url.clone())];
        groups.push(run_group(args, group, &url, lockkit).await);
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

/// Puts a server on the servers' CPU (see [`machine::SERVER_CPU`]).
fn pin_server(pid: Option<u32>) {
    if let Some(pid) = pid {
        machine::pin(pid, machine::SERVER_CPU);
    }
}

/// The first line `program ARGS` prints, or why not.
async fn version(program: &str, args: &[&str]) -> String {
    match tokio::process::Command::new(program)
        .args(args)
        .output()
        .await
    {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
        Err(e) => format!("{program}: {e}"),
    }
}

async fn zk_version(backend: &Backend) -> String {
    let Backend::ZooKeeper(address) = backend else {
        return String::new();
    };
    backend::four_letter_word(address, "srvr")
        .await
        .ok()
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_else(|| format!("ZooKeeper at {address}"))
}
