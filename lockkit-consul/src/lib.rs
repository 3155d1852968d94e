#![doc = include_str!("lib.md")]

mod acquire;
mod api;
mod driver;
mod error;
mod holds;
mod inspect;
mod keys;
mod list;
mod observe;
mod options;
mod permit;
mod permit_release;
mod permit_sessions;
mod renew;
mod semaphore;
mod session;
mod tls;
mod txn_ops;
mod values;
mod wait;

pub use driver::ConsulDriver;
pub use options::{ConsulOptions, DEFAULT_LOCK_DELAY, DEFAULT_SESSION_TTL};

use std::sync::Arc;

use lockkit_core::driver::{Driver, DriverEntry, LockDriver};

/// How the `lockkit` facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<ConsulDriver>();

impl Driver for ConsulDriver {
    const NAME: &'static str = driver::NAME;
    const URL_SCHEMES: &'static [&'static str] = options::SCHEMES;
    type Options = ConsulOptions;

    fn options(url: &str) -> lockkit_core::Result<ConsulOptions> {
        ConsulOptions::from_url(url)
    }

    async fn connect(options: ConsulOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
        Ok(Arc::new(ConsulDriver::connect(options).await?))
    }
}
