//! The contract of lockkit: types, errors, the driver trait and the client machinery.
//!
//! Not for direct use; see the `lockkit` crate, which re-exports everything here and
//! picks a driver by URL.
//!
//! - [`LockDriver`] is what a backend implements: atomic acquire, extend, release.
//! - [`Locker`] is what applications use: waiting, the watchdog, reentrancy, the lost
//!   signal and release on drop, written once over any driver.
//! - [`fence`] is for the protected resource: reject writes with stale tokens.
//! - [`mem`] is the process-local reference driver.
#![cfg_attr(not(test), forbid(clippy::panic))]
#![doc(test(attr(deny(warnings))))]

mod batch;
mod client;
pub mod driver;
mod error;
pub mod fence;
#[doc(hidden)]
pub mod holds;
mod human;
mod loss;
pub mod mem;
#[doc(hidden)]
pub mod sync;
pub mod tls;
mod types;
pub mod url;
mod wait;

pub use batch::renew_in_batches;
pub use client::{
    DEFAULT_JOB_AT_MOST_FOR, DEFAULT_OBSERVE_INTERVAL, DEFAULT_WATCHDOG_TTL, Election, Job, JobRun,
    Leader, Leadership, LockGuard, LockRequest, Locker, LostReason, MultiLockGuard,
    MultiLockRequest, Observer, Semaphore, default_label, metrics,
};
pub use driver::{
    AcquireRequest, Cancellation, Capabilities, ConnectFuture, DriverEntry, Grant, Holder, Inspect,
    Inspection, LockDriver, LockMode, Renewal, Wait, WakeUp, url_scheme,
};
pub use error::{KeyError, LockError, Result, TtlError, error_chain};
pub use human::human_duration;
pub use loss::LossSignal;
pub use types::{
    FencingToken, LockKey, MAX_KEY_LEN, MAX_LABEL_LEN, MAX_TTL, MIN_TTL, OwnerId, validate_ttl,
};
pub use url::{redact_url, shown_user};

/// Re-exported so drivers implement [`LockDriver`] with the same macro version.
pub use async_trait::async_trait;
