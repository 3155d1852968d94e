//! What the driver writes into KV values: a hold's owner and label (the lock key,
//! a semaphore's contender keys), and a semaphore's `.lock` record in the layout
//! of Consul's own `api/semaphore.go`.

use std::collections::BTreeMap;

use lockkit_core::{AcquireRequest, LockError};
use serde::{Deserialize, Serialize};

use crate::driver::NAME;

/// The value of a lock key or a contender key: who holds (or contends), and its
/// label for inspection. A contender admitted to the semaphore is rewritten with
/// `holding` set, so that the admitting write changes it (Consul skips a write
/// that changes nothing) and its `ModifyIndex` is the permit's token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct HoldValue {
    /// The owner id, hex: a release whose acquire's reply was lost finds its hold
    /// by it.
    pub(crate) owner: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) label: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) holding: bool,
}

impl HoldValue {
    /// The value for the hold `req` asks for (or, with `holding` false, its
    /// contention): its owner, and its label and election value
    /// ([`AcquireRequest::stored_label`]).
    pub(crate) fn of(req: &AcquireRequest, holding: bool) -> Self {
        Self {
            owner: req.owner.to_hex(),
            label: req.stored_label(),
            holding,
        }
    }

    /// The JSON bytes written to Consul.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a value; `None` for one another client wrote (Consul's `api.Lock`
    /// users write anything).
    pub(crate) fn parse(bytes: Option<&[u8]>) -> Option<Self> {
        serde_json::from_slice(bytes?).ok()
    }
}

/// The `.lock` key of a semaphore: its limit, and the sessions holding a slot
/// (Consul's `semaphoreLock`: `{"Limit":N,"Holders":{"<session>":true}}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct SemaphoreRecord {
    pub(crate) limit: u32,
    #[serde(default)]
    pub(crate) holders: BTreeMap<String, bool>,
}

impl SemaphoreRecord {
    /// The JSON bytes written to Consul.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a `.lock` value: an empty one (as Consul's recipe treats a missing
    /// one) has no holders.
    ///
    /// # Errors
    ///
    /// [`LockError::Backend`] for a value that is not a semaphore's record: the
    /// key is used for something else, and guessing would break it.
    pub(crate) fn parse(key: &str, bytes: Option<&[u8]>) -> Result<Option<Self>, LockError> {
        let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
            return Ok(None);
        };
        serde_json::from_slice(bytes)
            .map(Some)
            .map_err(|e| LockError::Backend {
                driver: NAME,
                message: format!("`{key}` does not hold a semaphore's record ({e})"),
                source: None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockkit_core::{LockKey, OwnerId, Wait};

    /// The `.lock` record is byte for byte what Consul's Go client writes and
    /// reads.
    #[test]
    fn the_semaphore_record_has_consuls_layout() {
        let mut r = SemaphoreRecord {
            limit: 3,
            holders: BTreeMap::new(),
        };
        r.holders.insert("4f1c-session".into(), true);
        let bytes = r.to_bytes();
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            r#"{"Limit":3,"Holders":{"4f1c-session":true}}"#
        );
        assert_eq!(SemaphoreRecord::parse("k", Some(&bytes)).unwrap(), Some(r));
        assert_eq!(SemaphoreRecord::parse("k", None).unwrap(), None);
        assert!(SemaphoreRecord::parse("k", Some(b"not json")).is_err());
    }

    /// A hold's value carries the owner and label; a foreign value is no hold of
    /// ours.
    #[test]
    fn hold_values_round_trip_and_foreign_values_are_ignored() {
        let owner = OwnerId::new().with_label("web-1");
        let req = AcquireRequest::new(
            LockKey::new("k").unwrap(),
            owner,
            std::time::Duration::from_secs(1),
            Wait::NoWait,
        );
        let v = HoldValue::of(&req, true);
        assert_eq!(HoldValue::parse(Some(&v.to_bytes())), Some(v.clone()));
        assert_eq!(v.label.as_deref(), Some("web-1"));
        assert_ne!(HoldValue::of(&req, false).to_bytes(), v.to_bytes());
        assert_eq!(HoldValue::parse(Some(b"some app data")), None);
    }
}
