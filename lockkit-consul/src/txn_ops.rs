//! The operations of a `/v1/txn` request, and what Consul answers to one.
//!
//! A transaction is one raft write: every key it writes gets the same
//! `ModifyIndex`, and it applies whole or not at all (Consul then lists every
//! operation that failed, with its reason).

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::api::KvEntry;

/// The flags Consul's own semaphore (`api/semaphore.go`) puts on its `.lock` and
/// contender keys, so that its clients recognise ours as a semaphore's.
pub(crate) const SEMAPHORE_FLAGS: u64 = 0xe0f6_9a2b_aa41_4de0;

/// The flags Consul's own lock (`api/lock.go`'s `LockFlagValue`, used by
/// `api.Lock` and `consul lock`) puts on its key. A Go contender that finds a key
/// with other flags fails with `ErrLockConflict`; with these, it waits its turn.
pub(crate) const LOCK_FLAGS: u64 = 0x2ddc_cbc0_58a5_0c18;

/// One operation of a `/v1/txn` request.
#[derive(Debug, Serialize)]
pub(crate) struct TxnOp {
    #[serde(rename = "KV")]
    kv: serde_json::Value,
}

fn base64(value: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(value)
}

impl TxnOp {
    /// Acquire `key` with `session`, writing `value` and `flags`.
    pub(crate) fn lock_flagged(key: &str, value: &[u8], session: &str, flags: u64) -> Self {
        Self {
            kv: json!({
                "Verb": "lock", "Key": key, "Value": base64(value),
                "Session": session, "Flags": flags,
            }),
        }
    }

    /// Write `key` if its ModifyIndex is `index` (0: only if it does not exist).
    pub(crate) fn cas(key: &str, value: &[u8], flags: u64, index: u64) -> Self {
        Self {
            kv: json!({
                "Verb": "cas", "Key": key, "Value": base64(value),
                "Flags": flags, "Index": index,
            }),
        }
    }

    /// Fail unless `key` exists with ModifyIndex `index`.
    pub(crate) fn check_index(key: &str, index: u64) -> Self {
        Self {
            kv: json!({"Verb": "check-index", "Key": key, "Index": index}),
        }
    }

    /// Fail if `key` exists.
    pub(crate) fn check_not_exists(key: &str) -> Self {
        Self {
            kv: json!({"Verb": "check-not-exists", "Key": key}),
        }
    }

    /// Delete `key`.
    pub(crate) fn delete(key: &str) -> Self {
        Self {
            kv: json!({"Verb": "delete", "Key": key}),
        }
    }

    /// Delete every key under `prefix`.
    pub(crate) fn delete_tree(prefix: &str) -> Self {
        Self {
            kv: json!({"Verb": "delete-tree", "Key": prefix}),
        }
    }

    /// Fail unless `key` is locked by `session`.
    pub(crate) fn check_session(key: &str, session: &str) -> Self {
        Self {
            kv: json!({"Verb": "check-session", "Key": key, "Session": session}),
        }
    }
}

/// What a transaction did.
#[derive(Debug)]
pub(crate) enum TxnOutcome {
    /// Applied; the entries of the operations that return one, in order.
    Applied(Vec<Option<KvEntry>>),
    /// Rolled back: the operations that failed, with Consul's reason.
    RolledBack(Vec<(usize, String)>),
}

impl TxnOutcome {
    /// Whether operation `op` is among those that failed.
    pub(crate) fn failed(errors: &[(usize, String)], op: usize) -> bool {
        errors.iter().any(|(i, _)| *i == op)
    }

    /// Whether Consul refused a lock because the session no longer exists.
    pub(crate) fn session_invalid(errors: &[(usize, String)]) -> bool {
        errors
            .iter()
            .any(|(_, what)| what.contains("invalid session"))
    }
}

/// The body of a `/v1/txn` reply.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct TxnReply {
    #[serde(default)]
    pub(crate) results: Option<Vec<TxnResult>>,
    #[serde(default)]
    pub(crate) errors: Option<Vec<TxnError>>,
}

#[derive(Deserialize)]
pub(crate) struct TxnResult {
    #[serde(rename = "KV", default)]
    pub(crate) kv: Option<KvEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct TxnError {
    pub(crate) op_index: usize,
    pub(crate) what: String,
}
