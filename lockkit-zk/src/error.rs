//! ZooKeeper errors as [`LockError`]s.

use lockkit_core::LockError;

use crate::driver::NAME;
use zookeeper_client::Error as ZkError;

/// Maps a ZooKeeper error; `what` says what was being done.
pub(crate) fn zk_error(what: &str, e: ZkError) -> LockError {
    let message = format!("{what}: {e}");
    match e {
        ZkError::ConnectionLoss
        | ZkError::Timeout
        | ZkError::NoHosts
        | ZkError::SessionExpired
        | ZkError::SessionMoved
        | ZkError::ClientClosed
        | ZkError::Throttled
        | ZkError::Custom(_) => LockError::Connection {
            driver: NAME,
            message,
            source: Some(Box::new(e)),
        },
        ZkError::NoAuth | ZkError::AuthFailed => LockError::Config(format!(
            "{message}; check the user:password in the URL and the ACLs of the lock nodes"
        )),
        _ => LockError::Backend {
            driver: NAME,
            message,
            source: Some(Box::new(e)),
        },
    }
}

/// Whether a request may have been applied although no reply came back. The
/// client reports a socket error on the connection a request went out on
/// ("Connection reset by peer" when a member dies) as a `Custom` error.
pub(crate) fn outcome_unknown(e: &ZkError) -> bool {
    matches!(
        e,
        ZkError::ConnectionLoss
            | ZkError::Timeout
            | ZkError::SessionMoved
            | ZkError::Throttled
            | ZkError::Custom(_)
    )
}

/// Whether the session is over, so its ephemeral nodes are gone.
pub(crate) fn session_over(e: &ZkError) -> bool {
    matches!(
        e,
        ZkError::SessionExpired | ZkError::ClientClosed | ZkError::AuthFailed
    )
}
