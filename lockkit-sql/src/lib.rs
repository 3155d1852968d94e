//! SQL lease-table drivers for lockkit. Not for direct use; see the `lockkit` crate.
//!
//! One design for every SQL database: a table with one row per lock name holding the
//! owner, a fencing counter and an expiry. Acquire, extend and release are each one
//! atomic statement; the counter is bumped by the acquiring statement and never
//! reset, so tokens strictly increase per key.
//!
//! | module | feature | URLs | expiry clock | waiters woken by |
//! |---|---|---|---|---|
//! | [`sqlite`] | `sqlite` | `sqlite://path`, `sqlite::memory:` | machine-wide monotonic | polling (+ in-process) |
//! | [`postgres`] | `postgres` | `postgres://`, `postgresql://` | server's `clock_timestamp()` | `LISTEN/NOTIFY` + polling fallback |
//! | [`mysql`] | `mysql` | `mysql://`, `mariadb://` | server's `UTC_TIMESTAMP(6)` | `GET_LOCK` on a bell (+ in-process) |
//!
//! PostgreSQL and MySQL/MariaDB connect over TLS with sqlx's own URL options
//! (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`; `ssl-mode`, `ssl-ca`, `ssl-cert`,
//! `ssl-key`), through rustls with ring and the system's root certificates: lease
//! tables, session modes and the LISTEN connection alike.
#![cfg_attr(not(test), forbid(clippy::panic))]
#![doc(test(attr(deny(warnings))))]

#[cfg(any(feature = "postgres", feature = "mysql"))]
mod connect;
#[cfg(feature = "_sql")]
mod error;
#[cfg(feature = "_sql")]
mod holds;
#[cfg(feature = "_sql")]
mod lease;
#[cfg(feature = "_sql")]
mod renew;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod server_options;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod session;
#[cfg(feature = "_sql")]
mod table;
#[cfg(feature = "_sql")]
mod wait;

#[cfg(feature = "_sql")]
pub use lease::LeaseDriver;
#[cfg(feature = "_sql")]
pub use table::DEFAULT_TABLE;

#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;
