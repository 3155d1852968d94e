//! Throwaway real servers for lockkit's tests, and a TCP fault proxy: Redis (single, TLS,
//! N masters, Cluster), etcd (single, cluster), ZooKeeper (standalone, ensemble),
//! PostgreSQL and MariaDB.
//!
//! Every server runs as a child process in its own process group, on a free
//! 127.0.0.1 port, in a temp dir named `lockkit-testkit-*`. Handles offer `url()`,
//! `pause()` (SIGSTOP), `resume()`, `kill()` (SIGKILL) and `restart()` on the same
//! data dir, and kill the whole process group on drop — also when a test panics.
//! What every start would repeat (PostgreSQL's `initdb`, `mariadb-install-db`,
//! ZooKeeper's class-data archive) is done once per machine, as a
//! `lockkit-template-*` directory under the temp dir.
//! Binaries come from Debian packages that `ci/setup` installs; a missing one is
//! reported as "X not found — run ci/setup".
//!
//! One exception runs in-process: [`ConsulStandIn`], a test double that follows
//! Consul's documented HTTP API for sessions, KV, transactions and blocking
//! queries (no Consul agent can be installed where lockkit is built).
//!
//! Nothing here talks to anything but 127.0.0.1.

mod consul;
mod error;
mod etcd;
mod foreign;
mod logs;
mod mariadb;
mod pgbouncer;
mod port;
mod postgres;
mod process;
mod process_tree;
mod proxy;
mod redis;
mod scratch_dir;
mod silent;
mod sysv_shm;
mod template;
mod tls;
mod zookeeper;

pub use consul::{ConsulStandIn, StandInOptions};
pub use error::TestkitError;
pub use etcd::{Etcd, EtcdCluster};
pub use foreign::{ForeignClient, curator_holder, foreign_program, interop_python};
pub use logs::LogCapture;
pub use mariadb::{HOSTILE_SETTINGS as MARIADB_HOSTILE_SETTINGS, MariaDb};
pub use pgbouncer::{PgBouncer, PoolMode};
pub use port::free_port;
pub use postgres::Postgres;
pub use process::Server;
pub use proxy::{Fault, FaultProxy};
pub use redis::{Redis, RedisCluster, RedisMasters, RedisSentinels, RedisSettings, TlsFiles};
pub use silent::SilentServer;
pub use zookeeper::{ZooKeeper, ZooKeeperEnsemble};

// Its own group: throwaway certificates for the TLS servers above.
pub use tls::CertAuthority;

/// `s` with every byte but ASCII letters and digits written `%XX`: a password
/// as a URL carries it, for the tests that check it never shows.
pub fn percent_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
