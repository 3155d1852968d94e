//! The etcd floor: one txn (put if the key's create_revision is 0, else get), then a
//! delete.

use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use lockkit::LockError;

use super::{Hold, RawLock};

/// What the etcd floor sends.
pub(super) const DESCRIPTION: &str =
    "raw txn (put if create_revision = 0, else get) + delete, same server";

/// An etcd floor client: a client of its own.
pub(crate) struct EtcdFloor(Box<etcd_client::Client>);

impl EtcdFloor {
    /// A client of its own, set up from the same URL as lockkit's: endpoints,
    /// credentials, TLS.
    pub(super) async fn connect(url: &str) -> Result<Self, LockError> {
        let client = lockkit::etcd::EtcdOptions::from_url(url)?
            .connect_client()
            .await?;
        Ok(Self(Box::new(client)))
    }
}

impl RawLock for EtcdFloor {
    async fn clean_up(&self, keys: &[String]) {
        let mut kv = self.0.kv_client();
        for key in keys {
            let _ = kv.delete(key.as_str(), None).await;
        }
    }

    async fn try_acquire(&self, key: &str, owner: &str) -> Result<Option<Hold>, LockError> {
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key, owner, None)])
            .or_else([TxnOp::get(key, None)]);
        let reply = self
            .0
            .kv_client()
            .txn(txn)
            .await
            .map_err(|e| LockError::backend("etcd", e))?;
        Ok(reply.succeeded().then(|| Hold(owner.to_owned())))
    }

    async fn release(&self, key: &str, _held: Hold) -> Result<(), LockError> {
        self.0
            .kv_client()
            .delete(key, None)
            .await
            .map_err(|e| LockError::backend("etcd", e))?;
        Ok(())
    }
}
