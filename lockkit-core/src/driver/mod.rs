//! The contract between the client machinery and a backend.
//!
//! A driver implements [`LockDriver`]: a [`Contender`] for each acquire in a
//! [`LockMode`] (the engine, [`acquire`], makes its attempts and owns the wait),
//! extend, release, inspect, force-release and purge, each keyed by `(key,
//! owner)`. Everything above that —
//! reentrancy counts, the watchdog, the lost signal, release on drop, cancellation
//! safety — is written once in [`crate::Locker`].
//!
//! - [`request`](AcquireRequest): what is asked — key, owner, mode, lease, wait,
//!   cancellation;
//! - [`Grant`]: what is answered, and the [`Renewal`]s of a watchdog round;
//! - [`Capabilities`]: which modes a driver grants, what its inspection tells, how
//!   its waiters wake;
//! - [`Inspection`]: who holds a key;
//! - [`Driver`] and [`DriverEntry`]: how the facade finds a driver by URL;
//! - [`acquire`]: the one wait loop, around a driver's [`Contender`];
//! - [`admit`]: the mode rules, for drivers that keep a key's holders themselves.
//!
//! # Examples
//!
//! The contract as the client machinery drives it, on the `mem` driver:
//!
//! ```
//! use std::time::Duration;
//! use lockkit::driver::{AcquireRequest, LockDriver, LockMode, Wait, acquire};
//! use lockkit::{LockError, LockKey, OwnerId, mem::MemDriver}; // `mem`: the `mem` feature
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), LockError> {
//! let driver = MemDriver::new();
//! assert!(driver.capabilities().supports(LockMode::Shared));
//! let (key, ttl) = (LockKey::new("orders")?, Duration::from_secs(10));
//! let first = AcquireRequest::new(key.clone(), OwnerId::new(), ttl, Wait::NoWait);
//! let grant = acquire(&driver, &first).await?;
//! let second = AcquireRequest::new(key.clone(), OwnerId::new(), ttl, Wait::NoWait);
//! assert!(matches!(acquire(&driver, &second).await, Err(LockError::Contended { .. })));
//! assert!(driver.release(&key, &grant.owner).await?);
//! assert!(acquire(&driver, &second).await?.token > grant.token);
//! # Ok(()) }
//! ```

mod admission;
mod capabilities;
mod change;
mod contract;
mod grant;
mod holder_text;
mod inspect;
mod registry;
mod request;

pub use crate::types::decode_escaped;
pub use crate::wait::{
    Attempt, Backoff, Busy, Contender, Contention, Jitter, KeyWakers, Patience, Pauses, WaitPolicy,
    Wake, WakeUpHealth, acquire,
};
pub use admission::{Admission, Hold, admit, has_room, limit_mismatch, refuse_reentry};
pub use capabilities::{Capabilities, Inspect, WakeUp};
pub use change::{ChangeSignal, armed};
pub use contract::LockDriver;
pub use grant::{Grant, Renewal};
pub use holder_text::{MAX_VALUE_LEN, holder_text, split_holder_text, validate_value};
pub use inspect::{Holder, Inspection};
pub use registry::{ConnectFuture, Driver, DriverEntry, url_scheme};
pub use request::{AcquireRequest, Cancellation, LockMode, Wait};

/// Re-exported so drivers implement [`LockDriver`] and [`Contender`] with the same
/// macro version.
pub use async_trait::async_trait;
