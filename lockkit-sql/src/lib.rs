//! SQL lease-table drivers for lockkit. Not for direct use; see the `lockkit` crate.
//!
//! One design for every SQL database: a table with one row per lock name holding the
//! owner, a fencing counter and an expiry. Acquire, extend and release are each one
//! atomic statement; the counter is bumped by the acquiring statement and never
//! reset, so tokens strictly increase per key.
//!
//! | module | feature | URLs |
//! |---|---|---|
//! | [`sqlite`] | `sqlite` | `sqlite://path`, `sqlite:///abs/path`, `sqlite::memory:` |
#![cfg_attr(not(test), forbid(clippy::panic))]
#![doc(test(attr(deny(warnings))))]

mod clock;
mod wait;

#[cfg(feature = "sqlite")]
pub mod sqlite;
