//! The ZooKeeper floor: an EPHEMERAL_SEQUENTIAL create under the key's parent, a
//! getChildren of the parent and a delete (three round trips, on a session of its own).

use lockkit::{LockError, redact_url};

use super::{Hold, RawLock};

/// What the ZooKeeper floor sends.
pub(super) const DESCRIPTION: &str =
    "raw create(ephemeral sequential) + getChildren + delete via zookeeper-client, same server";

/// The persistent parent of the ZooKeeper floor's key nodes.
const ZK_FLOOR_ROOT: &str = "/lockkit-bench-floor";

/// A ZooKeeper floor client: a session of its own.
pub(crate) struct ZkFloor(zookeeper_client::Client);

/// The ZooKeeper parent node of a floor key (created by [`RawLock::prepare`]).
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

/// Creates the persistent node `path`; one that exists already is fine.
async fn zk_create_parent(client: &zookeeper_client::Client, path: &str) -> Result<(), LockError> {
    let parent =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    match client.create(path, &[], &parent).await {
        Ok(_) | Err(zookeeper_client::Error::NodeExists) => Ok(()),
        Err(e) => Err(LockError::backend("zookeeper", e)),
    }
}

impl ZkFloor {
    /// A session on the servers of a `zk://` URL, with the floor's root node.
    pub(super) async fn connect(url: &str) -> Result<Self, LockError> {
        let hosts = zk_hosts(url)
            .ok_or_else(|| LockError::Config(format!("no host:port in {}", redact_url(url))))?;
        let client = zookeeper_client::Client::connect(hosts)
            .await
            .map_err(|e| LockError::connection("zookeeper", e))?;
        zk_create_parent(&client, ZK_FLOOR_ROOT).await?;
        Ok(Self(client))
    }
}

impl RawLock for ZkFloor {
    async fn prepare(&self, keys: &[String]) -> Result<(), LockError> {
        for key in keys {
            zk_create_parent(&self.0, &zk_parent(key)).await?;
        }
        Ok(())
    }

    async fn clean_up(&self, keys: &[String]) {
        for key in keys {
            let _ = self.0.delete(&zk_parent(key), None).await;
        }
        // Fails while another run still uses it: it then cleans up.
        let _ = self.0.delete(ZK_FLOOR_ROOT, None).await;
    }

    async fn try_acquire(&self, key: &str, _owner: &str) -> Result<Option<Hold>, LockError> {
        let client = &self.0;
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
            Ok(Some(Hold(path)))
        } else {
            // A spinning floor does not queue: withdraw and try again.
            client.delete(&path, None).await.map_err(zerr)?;
            Ok(None)
        }
    }

    async fn release(&self, _key: &str, held: Hold) -> Result<(), LockError> {
        // What the ZooKeeper floor holds is its node's path.
        let Hold(node) = held;
        self.0
            .delete(&node, None)
            .await
            .map_err(|e| LockError::backend("zookeeper", e))?;
        Ok(())
    }
}

#[cfg(test)]
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
}
