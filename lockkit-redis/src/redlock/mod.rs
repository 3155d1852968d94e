//! Redlock: one lock over N independent Redis masters. The algorithm, the fencing
//! tokens and their limits are documented on [`RedlockDriver`].

mod contender;
mod driver;
mod master;
mod options;
mod quorum;

pub use driver::RedlockDriver;
pub use options::RedlockOptions;

/// The driver's name in messages and reports.
pub(crate) const NAME: &str = "redlock";
