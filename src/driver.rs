//! For driver authors: the contract a backend implements, and the pieces every
//! driver shares. Applications use [`crate::Locker`] and need none of this.
//!
//! A driver implements [`LockDriver`] (a [`Contender`] for each acquire in a
//! [`crate::LockMode`], extend, release, inspect, force-release, purge): the
//! engine, [`acquire`], makes its attempts and owns the wait. It
//! implements [`Driver`] once so that its [`DriverEntry`] lets [`crate::connect`]
//! find it by URL scheme. [`url`] parses its URL the way every other driver does,
//! [`admit`] applies the mode rules to holders a driver keeps itself,
//! [`LossSignal`] tells the client a session-bound hold is gone, and
//! [`renew_in_batches`] renews many holds in few requests. The
//! `lockkit-conformance` crate proves a driver keeps the contract.
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

pub use lockkit_core::driver::*;
pub use lockkit_core::{
    LossSignal, error_chain, human_duration, renew_in_batches, shown_user, url,
};

use crate::{LockError, Result};

/// The `tls_ca`, `tls_cert` and `tls_key` URL options of the TLS-capable drivers.
pub use lockkit_core::tls;

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
