//! SQL lease-table drivers for lockkit. Not for direct use; see the `lockkit` crate.
//!
//! One design for every SQL database: a table with one row per lock name holding the
//! owner, a fencing counter and an expiry. Acquire, extend and release are each one
//! atomic statement; the counter is bumped by the acquiring statement and never
//! reset, so tokens strictly increase per key.
//!
//! | module | feature | URLs | expiry clock | waiters woken by |
//! |---|---|---|---|---|
//! | [`sqlite`] | `sqlite` | `sqlite://path`, `sqlite:///abs/path`, `sqlite::memory:` | machine-wide monotonic | polling (+ in-process) |
//! | [`postgres`] | `postgres` | `postgres://`, `postgresql://` | server's `clock_timestamp()` | `LISTEN/NOTIFY` + polling fallback |
//! | [`mysql`] | `mysql` | `mysql://`, `mariadb://` | server's `UTC_TIMESTAMP(6)` | exclusive waiters: the key's bell (`GET_LOCK`, or `KILL QUERY` for the first in line); shared and permit waiters poll (+ in-process) |
//!
//! Each module is its database's page: URL, table layout, numbered invariants
//! (S1… for SQLite, P1… for PostgreSQL, M1… for MySQL), waiting, and the
//! application's own pool (`from_pool`). What the server-backed databases share
//! is below.
//!
//! # PostgreSQL and MySQL/MariaDB: failure modes
//!
//! - **Expiry is judged on the database server's wall clock** (SQL has no
//!   monotonic clock): a jump of that clock moves every lease with it. The
//!   client's own deadline (`lost()`) stays on its monotonic clock, measured from
//!   before each request, and fencing covers the rest.
//! - **The fencing counter is exactly as durable as a commit.** With PostgreSQL
//!   `synchronous_commit=off` or MariaDB `innodb_flush_log_at_trx_commit=0`, a
//!   server crash forgets the last commits and **tokens can repeat** (the
//!   server-kill test saw a token handed out again after a restart under those
//!   settings); keep the defaults, or at least settings that survive a process
//!   crash, where fencing matters.
//! - **A connection that fails under a waiting acquire** (the server restarting,
//!   a reply later than `request_timeout_ms`) does not end the wait: the pool
//!   opens a new one and the acquire tries again within its wait, in every mode
//!   (a `try_lock` reports the error). So does a server that ends the session
//!   itself: SQLSTATE class 08, and PostgreSQL's 57P01–57P03 (shutting down,
//!   crashed, still starting up, as in a restart or a managed failover) are
//!   `Connection` errors, not `Backend`. Attempting again is safe: a lease
//!   statement grants an owner that holds the lease again, with its token, and a
//!   session lock dies with its session (`tests/mysql_wake_up.rs`: MariaDB killed
//!   and restarted under a waiter on the bell; `tests/server_faults.rs`:
//!   PostgreSQL killed under a waiter and kept down past its connect timeout).
//!
//! # Session-bound modes
//!
//! `?mode=advisory` on PostgreSQL and `?mode=get_lock` on MySQL are for users who
//! want a lock tied to a database connection. Each held lock keeps its own pooled
//! connection (size the pool for the locks you hold at once; the default pool is
//! 32). There is **no TTL**: the lock is freed when the holder releases it or when
//! its session ends (the process dies, the server notices the connection is
//! gone, `pg_terminate_backend`, `KILL`) — so a holder that is merely paused (GC,
//! SIGSTOP) keeps the lock indefinitely, and a network partition frees it only
//! when the server's TCP keep-alive gives up. The watchdog checks the session
//! with `SELECT 1`; `lost()` fires when that fails. Tokens come from a
//! `<table>_fences` counter bumped on the holding connection. `force_release`
//! ends the holder's session. With `key=raw` a lock is the server's own lock of
//! that name, shared with other clients (`raw_keys` on `PgOptions` and
//! `MySqlOptions`).
//!
//! # Locks in the application's transaction
//!
//! Each database's `TransactionLocks` takes a lock in the application's own sqlx
//! transaction, held until it commits or rolls back: [`transaction_lock`] has what
//! they share, and each module its statements.
//!
//! # TLS
//!
//! PostgreSQL and MySQL/MariaDB connect over TLS with sqlx's own URL options
//! (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`; `ssl-mode`, `ssl-ca`, `ssl-cert`,
//! `ssl-key`), through rustls with ring and the system's root certificates: lease
//! tables, session modes and the LISTEN connection alike. As libpq and MySQL's
//! clients do, the default (`sslmode=prefer`, `ssl-mode=PREFERRED`) encrypts when
//! the server offers TLS but does not verify it: ask for `verify-full` /
//! `VERIFY_IDENTITY` to verify (`tests/tls.rs`; the `postgres_tls` suite on a
//! `hostssl`-only server, `mysql_tls` with `require_secure_transport`).
//!
//! TLS is compiled in with the `tls` feature (lockkit's `tls`). Without it, the
//! default mode connects in plain text, as it does to a server without TLS, and a
//! URL that asks for more (`sslmode=require`, `verify-ca`, `verify-full`;
//! `ssl-mode=REQUIRED`, `VERIFY_CA`, `VERIFY_IDENTITY`; or a certificate file) is
//! refused with a [`LockError::Config`](lockkit_core::LockError::Config) naming
//! the feature.
//!
//! A new TLS connection costs more than the handshake with sqlx 0.9.0: sqlx reads
//! the system's root certificates again for each connection that verifies the
//! server, and no longer turns Nagle's algorithm off (`TCP_NODELAY`;
//! launchbadge/sqlx#4335, mended upstream in #4336, not yet released). So the
//! handshake waits out the server's delayed ACK: once per connection on MariaDB,
//! twice on PostgreSQL, whose `ssl_ecdh_curve` default (`prime256v1`) asks rustls
//! for another key share (seen with `strace -tt`). lockkit's statements on an
//! open connection did not wait in those traces: each went out as one write.
//! The pools keep their connections open, so the cost is paid when a connection
//! opens: at connect, when a pool grows or replaces an idle or old connection,
//! and when a MySQL waiter opens a bell connection.
//!
//! # Timeouts and pools
//!
//! `connect_timeout_ms` (connecting, and waiting for a pooled connection; default
//! 5000) and `request_timeout_ms` (each statement; default 5000). The pool holds 8
//! connections by default, 32 in a session-bound mode; PostgreSQL opens one
//! listener connection besides. SQLite takes `busy_timeout_ms` (default 5000)
//! instead.
//!
//! sqlx pings each connection it takes back into the pool, a round trip after
//! every statement. So on a pool of its own (from a URL) a PostgreSQL or MySQL
//! lease driver keeps up to half the pool's connections out of it between its
//! lock statements, each for at most a minute and a second's idleness; a
//! statement that did not run to its end (cancelled, timed out, an I/O error)
//! gives its connection back to sqlx. On the application's pool (`from_pool`)
//! every connection goes back after its statement.
//!
//! # Tables
//!
//! Connecting creates lockkit's tables where they are missing (`tables=create`,
//! the default), on every backend and in every mode. `tables=existing` only uses
//! tables that are there, and creates nothing (nor a SQLite file): a database
//! where nothing was ever locked is then a [`Config`](lockkit_core::LockError::Config)
//! error that says so, and so are PostgreSQL or MySQL tables an earlier
//! lockkit made without the columns this one writes (the error names the fix:
//! connect once without it, or call the driver's `migrate`). `lockkit inspect`,
//! `ls` and `break` connect this way, so that looking writes nothing.
//!
//! # Tested against
//!
//! Real PostgreSQL 15 and MariaDB 10.11 servers started by the testkit, and SQLite
//! 3 as bundled by sqlx: the whole conformance suite on each, in every mode (the
//! session modes skip the two expiry-only cases: they have no TTL), plain and over
//! TLS; the server SIGKILLed and restarted during a hold; a SIGKILLed SQLite
//! holder process.
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
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod lock_names;
#[cfg(feature = "_sql")]
mod mode_names;
#[cfg(feature = "_sql")]
mod renew;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod server_options;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod session;
#[cfg(feature = "_sql")]
mod table;
#[cfg(feature = "_sql")]
pub mod transaction_lock;
#[cfg(feature = "_sql")]
mod turns;
#[cfg(feature = "_sql")]
mod wait;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod warm;

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
