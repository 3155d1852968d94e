//! How a driver is found by URL: each driver implements [`Driver`] once, and its
//! `DRIVER` entry, [`DriverEntry::of`], is derived from it (as sqlx derives
//! `AnyDriver` from `Database::NAME` and `URL_SCHEMES`). Core names no driver:
//! the `lockkit` facade lists the entries of the drivers compiled in.
//!
//! # Examples
//!
//! ```
//! use lockkit_core::driver::url_scheme;
//! use lockkit::mem::DRIVER; // `mem`: the `mem` feature
//!
//! assert_eq!(url_scheme("sqlite::memory:"), Some("sqlite"));
//! assert!(DRIVER.accepts("MEM://jobs"));
//! assert!(!DRIVER.accepts("redis://localhost:6379"));
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::contract::LockDriver;
use crate::error::Result;

/// A boxed future returning a driver, as produced by a [`DriverEntry`].
pub type ConnectFuture = Pin<Box<dyn Future<Output = Result<Arc<dyn LockDriver>>> + Send>>;

/// A driver, as the facade sees it: its name and URL schemes, how it reads a URL
/// into options, and how it connects with them.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use lockkit::driver::{Driver, DriverEntry, LockDriver};
/// use lockkit::{LockError, mem::MemDriver}; // `mem`: the `mem` feature
///
/// struct Scratch;
///
/// impl Driver for Scratch {
///     const NAME: &'static str = "scratch";
///     const URL_SCHEMES: &'static [&'static str] = &["scratch"];
///     type Options = ();
///
///     fn options(url: &str) -> Result<(), LockError> {
///         lockkit_core::url::ParsedUrl::parse(url, Self::URL_SCHEMES, "scratch://")?
///             .query
///             .finish()
///     }
///
///     async fn connect(_: ()) -> Result<Arc<dyn LockDriver>, LockError> {
///         Ok(Arc::new(MemDriver::new()))
///     }
/// }
///
/// const DRIVER: DriverEntry = DriverEntry::of::<Scratch>();
/// assert!(DRIVER.accepts("SCRATCH://"));
/// ```
pub trait Driver: Send + Sync + 'static {
    /// Its name in messages and reports.
    const NAME: &'static str;
    /// The URL schemes it takes (without `://`), lowercase.
    const URL_SCHEMES: &'static [&'static str];
    /// What a URL says to it.
    type Options: Send + 'static;

    /// Reads `url` (whose scheme is one of [`Self::URL_SCHEMES`]).
    ///
    /// # Errors
    ///
    /// [`crate::LockError::InvalidUrl`] naming what is wrong, with secrets hidden.
    fn options(url: &str) -> Result<Self::Options>;

    /// Connects with `options`.
    fn connect(options: Self::Options) -> impl Future<Output = Result<Arc<dyn LockDriver>>> + Send;
}

/// How the facade finds a driver by URL scheme: each driver crate exports one of
/// these as `DRIVER`, [`DriverEntry::of`] its [`Driver`].
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct DriverEntry {
    /// The driver's name.
    pub name: &'static str,
    /// The URL schemes it accepts (without `://`).
    pub schemes: &'static [&'static str],
    /// Connects to the backend at `url`.
    pub connect: fn(&str) -> ConnectFuture,
}

fn connect_with<D: Driver>(url: &str) -> ConnectFuture {
    let options = D::options(url);
    Box::pin(async move { D::connect(options?).await })
}

impl DriverEntry {
    /// The entry of driver `D`.
    pub const fn of<D: Driver>() -> Self {
        Self {
            name: D::NAME,
            schemes: D::URL_SCHEMES,
            connect: connect_with::<D>,
        }
    }

    /// Whether this driver accepts `url`'s scheme (in any case).
    pub fn accepts(&self, url: &str) -> bool {
        url_scheme(url).is_some_and(|s| self.schemes.iter().any(|k| k.eq_ignore_ascii_case(s)))
    }
}

impl fmt::Debug for DriverEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverEntry")
            .field("name", &self.name)
            .field("schemes", &self.schemes)
            .finish_non_exhaustive()
    }
}

/// The scheme of `url`: the part before `:` (`sqlite::memory:` → `sqlite`).
pub fn url_scheme(url: &str) -> Option<&str> {
    let (scheme, _) = url.split_once(':')?;
    let valid = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}
