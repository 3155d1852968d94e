//! The JSON shapes Consul sends, field for field (PascalCase, Go's order).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;

use super::state::{Entry, NODE, Session};

/// A KV entry (`structs.DirEntry`): `Session` only when locked; `Value` base64,
/// or `null` when empty or left out (transaction writes).
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct EntryJson<'a> {
    lock_index: u64,
    key: &'a str,
    flags: u64,
    value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    create_index: u64,
    modify_index: u64,
}

impl<'a> EntryJson<'a> {
    /// The entry, with its value when `with_value`.
    pub(crate) fn new(e: &'a Entry, with_value: bool) -> Self {
        let value = e
            .value
            .as_deref()
            .filter(|v| with_value && !v.is_empty())
            .map(|v| STANDARD.encode(v));
        Self {
            lock_index: e.lock_index,
            key: &e.key,
            flags: e.flags,
            value,
            session: e.session.as_deref(),
            create_index: e.create_index,
            modify_index: e.modify_index,
        }
    }
}

/// A session (`structs.Session`), `LockDelay` in nanoseconds.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct SessionJson<'a> {
    #[serde(rename = "ID")]
    id: &'a str,
    name: &'a str,
    node: &'static str,
    lock_delay: i64,
    behavior: &'static str,
    #[serde(rename = "TTL")]
    ttl: &'a str,
    node_checks: &'a [String],
    service_checks: Option<()>,
    create_index: u64,
    modify_index: u64,
}

impl<'a> SessionJson<'a> {
    pub(crate) fn new(s: &'a Session) -> Self {
        Self {
            id: &s.id,
            name: &s.name,
            node: NODE,
            lock_delay: s.lock_delay_ns,
            behavior: s.behavior.as_str(),
            ttl: &s.ttl,
            node_checks: &s.node_checks,
            service_checks: None,
            create_index: s.create_index,
            modify_index: s.modify_index,
        }
    }
}

/// One result of a transaction: `{"KV": entry}`.
#[derive(Debug, Serialize)]
pub(crate) struct TxnResultJson<'a> {
    #[serde(rename = "KV")]
    pub(crate) kv: EntryJson<'a>,
}

/// One error of a rolled-back transaction.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct TxnErrorJson {
    pub(crate) op_index: usize,
    pub(crate) what: String,
}

/// A transaction's reply: `Results` on success, `Errors` on rollback, the other
/// `null`. A read-only transaction also carries the query metadata fields (Go
/// embeds `QueryMeta` in `TxnReadResponse`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct TxnReplyJson<'a> {
    pub(crate) results: Option<Vec<TxnResultJson<'a>>>,
    pub(crate) errors: Option<Vec<TxnErrorJson>>,
    #[serde(flatten)]
    pub(crate) read_meta: Option<ReadMetaJson>,
}

/// `QueryMeta` as a read-only transaction's body shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct ReadMetaJson {
    pub(crate) index: u64,
    pub(crate) last_contact: u64,
    pub(crate) known_leader: bool,
    pub(crate) consistency_level: &'static str,
    pub(crate) not_modified: bool,
    pub(crate) backend: u8,
    #[serde(rename = "ResultsFilteredByACLs")]
    pub(crate) results_filtered_by_acls: bool,
}
