//! A Redis Cluster's own failover: a master killed, one of its replicas promoted
//! by the other masters' vote, read from `CLUSTER NODES` as a client would.

use std::time::Duration;

use tokio::time::Instant;

use super::ask::{ask, drop_replicas, role, wait_caught_up};
use super::{RedisCluster, TlsFiles};
use crate::TestkitError;

/// One line of `CLUSTER NODES`: a node's port, id, roles and slots.
#[derive(Debug)]
struct NodeLine {
    id: String,
    port: u16,
    master: bool,
    failed: bool,
    /// The id of the master a replica follows (`-` for a master).
    follows: String,
    /// Slot ranges, inclusive.
    slots: Vec<(u16, u16)>,
}

impl NodeLine {
    /// `<id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slots>…`.
    fn parse(line: &str) -> Option<Self> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let address = fields.get(1)?;
        let port = address.split(['@', ',']).next()?.rsplit(':').next()?;
        let flags = fields.get(2)?;
        let slots = fields
            .iter()
            .skip(8)
            .filter(|f| !f.starts_with('['))
            .filter_map(|range| match range.split_once('-') {
                Some((from, to)) => Some((from.parse().ok()?, to.parse().ok()?)),
                None => range.parse().ok().map(|s| (s, s)),
            })
            .collect();
        Some(Self {
            id: fields.first()?.to_string(),
            port: port.parse().ok()?,
            master: flags.contains("master"),
            failed: flags.contains("fail"),
            follows: fields.get(3)?.to_string(),
            slots,
        })
    }

    fn serves(&self, slot: u16) -> bool {
        self.slots
            .iter()
            .any(|&(from, to)| from <= slot && slot <= to)
    }
}

/// The cluster as the node on `port` sees it.
async fn nodes_seen_by(port: u16, tls: Option<&TlsFiles>) -> Option<Vec<NodeLine>> {
    let lines = ask(port, tls, "CLUSTER NODES").await?;
    Some(lines.iter().filter_map(|l| NodeLine::parse(l)).collect())
}

/// Whether the node on `port` says `cluster_state:ok`.
async fn cluster_ok(port: u16, tls: Option<&TlsFiles>) -> bool {
    ask(port, tls, "CLUSTER INFO")
        .await
        .is_some_and(|lines| lines.iter().any(|l| l == "cluster_state:ok"))
}

/// Whether the node on `port` sees every master that serves slots followed by a
/// replica that is not failed: right after `--cluster create`, a node can still
/// see a replica as a master of nothing until gossip tells it otherwise.
async fn sees_every_master_replicated(port: u16, tls: Option<&TlsFiles>) -> bool {
    let Some(seen) = nodes_seen_by(port, tls).await else {
        return false;
    };
    seen.iter()
        .filter(|m| m.master && !m.failed && !m.slots.is_empty())
        .all(|m| seen.iter().any(|r| r.follows == m.id && !r.failed))
}

/// Whether the replica on `port` is linked to its master and in sync.
async fn in_sync(port: u16, tls: Option<&TlsFiles>) -> bool {
    ask(port, tls, "INFO replication")
        .await
        .is_some_and(|lines| lines.iter().any(|l| l == "master_link_status:up"))
}

fn setup(detail: String) -> TestkitError {
    TestkitError::Setup {
        step: "redis cluster failover".into(),
        detail,
    }
}

impl RedisCluster {
    fn tls_files(&self) -> Option<&TlsFiles> {
        self.tls.as_ref().map(|(files, _)| files)
    }

    /// Waits until every replica that answers is linked to its master and in sync,
    /// and every node that answers sees every master's replica (30 s at most).
    ///
    /// # Errors
    ///
    /// `Setup` if one is not in time.
    pub async fn wait_until_replicas_sync(&self) -> Result<(), TestkitError> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut ready = true;
            for node in &self.nodes {
                // A node that does not answer was killed: it sees nothing.
                let (port, tls) = (node.port(), self.tls_files());
                match role(port, tls).await.as_deref() {
                    None => continue,
                    Some("slave") => ready &= in_sync(port, tls).await,
                    Some(_) => {}
                }
                ready &= sees_every_master_replicated(port, tls).await;
            }
            if ready {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(setup("a replica did not sync within 30 s".into()));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The hash slot of `key` (a key without whitespace; a `{tag}` counts as Redis
    /// counts it), the master that serves it, and that master's replicas, as the
    /// first node sees them.
    async fn slot_master(&self, key: &str) -> Result<(u16, NodeLine, Vec<u16>), TestkitError> {
        let seed = self.nodes[0].port();
        let slot: u16 = ask(seed, self.tls_files(), &format!("CLUSTER KEYSLOT {key}"))
            .await
            .and_then(|reply| reply.first()?.parse().ok())
            .ok_or_else(|| setup(format!("no slot for {key:?}")))?;
        let mut seen = nodes_seen_by(seed, self.tls_files())
            .await
            .ok_or_else(|| setup("CLUSTER NODES did not answer".into()))?;
        let at = seen
            .iter()
            .position(|n| n.master && n.serves(slot))
            .ok_or_else(|| setup(format!("no master serves slot {slot}")))?;
        let master = seen.swap_remove(at);
        let replicas: Vec<u16> = seen
            .iter()
            .filter(|n| n.follows == master.id)
            .map(|n| n.port)
            .collect();
        if replicas.is_empty() {
            return Err(setup(format!("the master of slot {slot} has no replica")));
        }
        Ok((slot, master, replicas))
    }

    /// Cuts the replicas of the master that serves `key`'s slot off it, once they
    /// are in sync: each is paused (SIGSTOP) and the master drops its links to
    /// them (`CLIENT KILL TYPE replica`), so nothing written to that master from
    /// now on reaches a replica, as when replication lags. The next
    /// [`fail_over_master_of`](Self::fail_over_master_of) resumes them once the
    /// master is dead. Returns the master's port.
    ///
    /// # Errors
    ///
    /// `Setup` if the master has no replica, or does not drop them.
    pub async fn cut_replicas_of(&mut self, key: &str) -> Result<u16, TestkitError> {
        self.wait_until_replicas_sync().await?;
        let (_, master, replicas) = self.slot_master(key).await?;
        for node in self.nodes.iter().filter(|n| replicas.contains(&n.port())) {
            node.pause();
        }
        self.cut = true;
        drop_replicas(master.port, self.tls_files(), replicas.len()).await?;
        Ok(master.port)
    }

    /// Kills (SIGKILL) the master that serves `key`'s hash slot (a key without
    /// whitespace; a `{tag}` counts as Redis counts it) once its replicas have
    /// applied everything it wrote (or at once, and resuming them, after
    /// [`cut_replicas_of`](Self::cut_replicas_of)), and waits until the cluster has
    /// promoted one of them: it serves the slot, answers `ROLE` as a master, and
    /// says `cluster_state:ok`. Returns the new master's port. The old master stays
    /// down.
    ///
    /// # Errors
    ///
    /// `Setup` if the slot's master has no replica, or none is promoted within
    /// `within`.
    pub async fn fail_over_master_of(
        &mut self,
        key: &str,
        within: Duration,
    ) -> Result<u16, TestkitError> {
        let cut = self.cut;
        if !cut {
            self.wait_until_replicas_sync().await?;
        }
        let (slot, old, replicas) = self.slot_master(key).await?;
        if !cut {
            wait_caught_up(old.port, &replicas, self.tls_files()).await?;
        }
        let old_port = old.port;
        self.nodes
            .iter_mut()
            .find(|n| n.port() == old_port)
            .ok_or_else(|| setup(format!("no node on the master's port {old_port}")))?
            .kill();
        if std::mem::take(&mut self.cut) {
            for node in &self.nodes {
                node.resume();
            }
        }
        let survivor = self
            .nodes
            .iter()
            .map(|n| n.port())
            .find(|&p| p != old_port)
            .ok_or_else(|| setup("no node survives".into()))?;
        let deadline = Instant::now() + within;
        loop {
            let tls = self.tls_files();
            let promoted = nodes_seen_by(survivor, tls).await.and_then(|seen| {
                seen.into_iter()
                    .find(|n| n.master && !n.failed && n.port != old_port && n.serves(slot))
            });
            if let Some(new) = promoted
                && role(new.port, tls).await.as_deref() == Some("master")
                && cluster_ok(new.port, tls).await
            {
                return Ok(new.port);
            }
            if Instant::now() >= deadline {
                return Err(setup(format!("no replica promoted within {within:?}")));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
