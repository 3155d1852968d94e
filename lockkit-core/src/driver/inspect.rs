//! What inspection reports: [`Inspection`] and its [`Holder`]s.

use std::time::Duration;

use super::request::LockMode;
use crate::types::{FencingToken, LockKey};

/// Who holds a key, and how many wait for it: what
/// [`crate::LockDriver::inspect`] reads, without changing anything.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inspection {
    /// The key.
    pub key: LockKey,
    /// Its live holders (none when the key is free).
    pub holders: Vec<Holder>,
    /// How many acquires wait for it, where the backend knows; `None` otherwise.
    pub waiters: Option<usize>,
}

impl Inspection {
    /// A key nobody holds.
    pub fn free(key: LockKey) -> Self {
        Self {
            key,
            holders: Vec::new(),
            waiters: None,
        }
    }

    /// With these holders.
    pub fn with_holders(mut self, holders: Vec<Holder>) -> Self {
        self.holders = holders;
        self
    }

    /// With this many waiters.
    pub fn with_waiters(mut self, waiters: usize) -> Self {
        self.waiters = Some(waiters);
        self
    }

    /// Whether anyone holds the key.
    pub fn is_held(&self) -> bool {
        !self.holders.is_empty()
    }
}

/// One holder of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holder {
    /// What the hold excludes (a permit carries the semaphore's limit).
    pub mode: LockMode,
    /// Its fencing token.
    pub token: FencingToken,
    /// How long its lease has left, as the backend sees it; `None` for a hold bound
    /// to a session (it lasts as long as the session).
    pub remaining: Option<Duration>,
    /// The holder's human label (`host/pid/task` by default; see
    /// [`crate::Locker::with_label`]), if the backend stores it. Never the owner id.
    pub label: Option<String>,
    /// The value an election's leader stores with its hold
    /// ([`crate::Election`]); `None` for other holds.
    pub value: Option<String>,
}

impl Holder {
    /// A holder in `mode` with `token`.
    pub fn new(mode: LockMode, token: FencingToken) -> Self {
        Self {
            mode,
            token,
            remaining: None,
            label: None,
            value: None,
        }
    }

    /// With the lease left.
    pub fn with_remaining(mut self, remaining: Duration) -> Self {
        self.remaining = Some(remaining);
        self
    }

    /// With the text the backend stores beside the owner id: the holder's label
    /// and, for an election's leader, its value ([`super::holder_text`]).
    pub fn with_label(mut self, text: Option<String>) -> Self {
        let (label, value) = text
            .as_deref()
            .map_or((None, None), super::holder_text::split_holder_text);
        self.label = label;
        self.value = value;
        self
    }
}
