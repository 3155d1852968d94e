//! For driver authors: the contract a backend implements. Applications use
//! [`crate::Locker`] and need none of this.
//!
//! A driver implements [`LockDriver`]: a [`Contender`] for each acquire in a
//! [`LockMode`] (the engine, [`acquire`], makes its attempts and owns the
//! wait), extend, release, inspect, force-release and purge. It implements
//! [`Driver`] once, so that its [`DriverEntry`] lets [`crate::connect`] find it
//! by URL scheme. [`admit`] applies the mode rules to holders a driver keeps
//! itself, and [`LossSignal`] tells the client a session-bound hold is gone.
//! The `lockkit-conformance` crate proves a driver keeps the contract.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use lockkit::{Locker, driver};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), lockkit::LockError> {
//! // The drivers compiled in (`sqlite` is the default feature), found by URL scheme.
//! let sqlite = driver::DRIVERS.iter().find(|d| d.accepts("sqlite::memory:"));
//! assert_eq!(sqlite.map(|d| d.name), Some("sqlite"));
//!
//! // The bare driver, for a `Locker` with settings of its own.
//! let bare = driver::connect("sqlite::memory:").await?;
//! let locker = Locker::with_default_ttl(bare, Duration::from_secs(10));
//! locker.try_lock("jobs/nightly").await?.release().await?;
//!
//! // A mistyped scheme is refused with a suggestion.
//! let err = driver::connect("postgress://db/app").await.err();
//! assert!(err.is_some_and(|e| e.to_string().contains("did you mean `postgres://`?")));
//! # Ok(()) }
//! ```

use std::sync::Arc;

// The contract.
pub use lockkit_core::LossSignal;
pub use lockkit_core::driver::{
    AcquireRequest, Cancellation, ChangeSignal, Grant, LockDriver, LockMode, Renewal, Wait,
    async_trait,
};
// What a backend can do, and what it shows.
pub use lockkit_core::driver::{Capabilities, Holder, Inspect, Inspection, WakeUp};
// The engine and a driver's side of it.
pub use lockkit_core::driver::{
    Attempt, Backoff, Busy, Contender, Contention, Jitter, Patience, WaitPolicy, Wake, acquire,
};
// The mode rules, for a driver that keeps a key's holders itself.
pub use lockkit_core::driver::{Admission, Hold, admit};
// Finding a driver by URL.
pub use lockkit_core::driver::{ConnectFuture, Driver, DriverEntry};

use crate::{LockError, Result};

/// The drivers compiled into this build, in the order [`connect`] tries them.
pub const DRIVERS: &[DriverEntry] = &[
    #[cfg(feature = "mem")]
    lockkit_core::mem::DRIVER,
    #[cfg(feature = "sqlite")]
    lockkit_sql::sqlite::DRIVER,
    #[cfg(feature = "postgres")]
    lockkit_sql::postgres::DRIVER,
    #[cfg(feature = "mysql")]
    lockkit_sql::mysql::DRIVER,
    #[cfg(feature = "redis")]
    lockkit_redis::DRIVER,
    #[cfg(feature = "redis")]
    lockkit_redis::REDLOCK_DRIVER,
    #[cfg(feature = "etcd")]
    lockkit_etcd::DRIVER,
    #[cfg(feature = "zk")]
    lockkit_zk::DRIVER,
    #[cfg(feature = "consul")]
    lockkit_consul::DRIVER,
];

/// Connects to the backend named by `url` and returns the bare driver: for the
/// conformance suite, or to build a [`crate::Locker`] with other settings
/// ([`crate::Locker::with_default_ttl`]).
///
/// # Errors
///
/// As [`crate::connect`].
pub async fn connect(url: &str) -> Result<Arc<dyn LockDriver>> {
    if let Some(driver) = DRIVERS.iter().find(|d| d.accepts(url)) {
        return (driver.connect)(url).await;
    }
    Err(LockError::invalid_url(url, crate::known::no_driver(url)))
}
