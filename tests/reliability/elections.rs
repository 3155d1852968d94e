//! Election rows: three workers campaign, lead (a fenced write with the term),
//! and resign, on every backend, while an outside leader process is paused past
//! its lease (its fenced write must then be refused) or killed (the next leader
//! must follow within its lease). The history checks that no two terms overlap
//! in known-held time, and that terms only rise.

use super::*;

holder_faults_on!(
    redis_election,
    Primitive::Election,
    "redis (election)",
    Redis::start(),
    |s: &Redis| s.url()
);
holder_faults_on!(
    sqlite_election,
    Primitive::Election,
    "sqlite (election)",
    async { tempfile::tempdir() },
    sqlite_url,
    fixed_holder_lease
);
holder_faults_on!(
    etcd_election,
    Primitive::Election,
    "etcd (election)",
    Etcd::start(),
    |s: &Etcd| s.url()
);
holder_faults_on!(
    zookeeper_election,
    Primitive::Election,
    "zookeeper (election)",
    ZooKeeper::start(),
    |s: &ZooKeeper| format!("{}?session_timeout_ms=1000", s.url())
);
holder_faults_on!(
    postgres_election,
    Primitive::Election,
    "postgres (election)",
    Postgres::start(),
    |s: &Postgres| s.url()
);
holder_faults_on!(
    mysql_election,
    Primitive::Election,
    "mysql (election)",
    MariaDb::start(),
    |s: &MariaDb| s.url()
);
holder_faults_on!(
    consul_election,
    Primitive::Election,
    "consul (election)",
    ConsulStandIn::start_with(
        StandInOptions::default().with_min_session_ttl(Duration::from_millis(100))
    ),
    |s: &ConsulStandIn| format!("{}?session_ttl_ms=1000&lock_delay_ms=0", s.url())
);
