#![doc = include_str!("design.md")]
//!
//! # Where each part lives
//!
//! - `driver.rs`: [`RedlockDriver`] and its `LockDriver` impl; `connect.rs`:
//!   start-up (scripts primed and wake channels subscribed on a quorum);
//! - `acquire.rs`: one acquire round and the fencing write-back; `contender.rs`:
//!   the waits and retries around it;
//! - `renew.rs`: extend and the watchdog's renewals;
//! - `fan_out.rs`: one request to every master at once, under one deadline;
//!   `quorum.rs`: counting the answers; `validity.rs`: request timeouts, drift
//!   and deadlines;
//! - `master.rs`: one master's connection, subscription and script calls, each
//!   encoded once for every master (`crate::call::Call`);
//! - `options.rs`: [`RedlockOptions`]. This text is `design.md`, which is also
//!   the documentation of [`RedlockDriver`].

mod acquire;
mod connect;
mod contender;
mod driver;
mod fan_out;
mod master;
mod options;
mod quorum;
mod renew;
mod validity;

pub(crate) use options::SCHEMES;

pub use driver::RedlockDriver;
pub use options::RedlockOptions;

/// The driver's name in messages and reports.
pub(crate) const NAME: &str = "redlock";
