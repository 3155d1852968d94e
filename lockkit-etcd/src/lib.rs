//! The etcd driver for lockkit. Not for direct use; see the `lockkit` crate.
//!
//! URL: `etcd://[user:password@]host:port[,host:port…][?prefix=NAME]`, and
//! `etcds://…[?tls_ca=PATH][&tls_cert=PATH&tls_key=PATH]` for TLS to every
//! endpoint (rustls with ring; without `tls_ca` the server is verified against the
//! system roots). See [`EtcdOptions::from_url`].
//!
//! # Invariants
//!
//! What exclusion and fencing rest on, server settings included. Code that
//! relies on one cites its number (E1…); each names the test that proves it: the
//! conformance suites in `conformance_etcd.rs` (one member, three, over TLS
//! too), this crate's tests, and the fault trials of the reliability suite.
//!
//! 1. **The queue decides, in create_revision order.** An entry holds only when
//!    the queue, read in the txn that put it or after, says so: a writer's entry
//!    has the smallest create_revision, a reader's has no writer's before it, a
//!    permit's is among the first `limit` behind permits only. Every delete (a
//!    release, an expiry, a given-up wait, `force_release`) compares
//!    create_revision or names the owner's own key, so it never removes another
//!    owner's entry (`mutual_exclusion_under_contention`,
//!    `writer_excludes_readers_and_writers`,
//!    `at_most_limit_permits_under_contention`, `fifo_order`,
//!    `release_never_deletes_a_newer_holders_lock`; with `etcdctl lock`,
//!    `etcdctl_lock_holds_lockkit_off_until_it_releases`,
//!    `lockkit_holds_etcdctl_off_and_the_queue_order_is_kept`).
//! 2. **The token is the entry's create_revision**, which etcd's revisions make
//!    strictly increasing across the cluster, purges included; moving a hold to
//!    another lease keeps it. etcd acknowledges a write once a quorum has it in
//!    its fsynced log, so holds and tokens survive a restart and the leader's
//!    loss (never run it with `--unsafe-no-fsync`)
//!    (`fencing_tokens_increase_across_holders`,
//!    `permit_tokens_increase_across_permits`, `etcd_server_killed_and_restarted`,
//!    `etcd_cluster_leader_killed`,
//!    `leader_kill_keeps_the_hold_or_signals_lost_and_acquires_resume_after_election`).
//! 3. **A grant stands on a live lease.** Before it reads the queue, a waiter
//!    confirms its lease with a keep-alive round, so it is never granted on an
//!    expired lease whose entry etcd has not deleted yet (etcd issue 11456:
//!    `a_waiter_whose_lease_was_revoked_is_granted_only_on_a_live_lease`).
//! 4. **The guard's deadline never outlives the lease.** It is the earlier of
//!    two ends: the TTL counted from before the request that found (or renewed)
//!    the hold, and the lease's TTL counted from before its last confirmed
//!    keep-alive round. A lease is
//!    whole seconds, and at least etcd's floor of 1.5 × `--election-timeout`:
//!    etcd raises a shorter one, so a holder that dies keeps its lock that long
//!    (the grant's effective TTL says so; the suite on etcd's default timing,
//!    `etcd_default_flags`). A keep-alive answered TTL 0 reports every hold on
//!    the lease `Lost`; while rounds fail, the deadline runs out before etcd can
//!    expire the lease (`watchdog_keeps_lock_past_ttl`,
//!    `black_holed_holder_sees_lost_before_another_client_is_granted`,
//!    `abandoned_by_killed_process_is_freed_after_ttl`,
//!    `etcd::holder_paused_past_its_lease`, `etcd::client_server_partition`).
//! 5. **A hold deleted behind its back is reported.** Each held key is watched;
//!    a renewal vouches for a hold without a request only if its watch was
//!    acknowledged on the stream that answered the round's progress request, and
//!    checks the others with a compare txn (`lost_signal_fires_when_hold_disappears`,
//!    `extend_keeps_the_lock_and_fails_after_loss`,
//!    `a_hold_deleted_while_the_watch_stream_is_down_is_reported_lost_once_it_is_back`).
//!    On etcd before 3.4.24 / 3.5.8 a delete may be reported one round late
//!    (etcd issue 15220).
//! 6. **A watch only wakes.** A waiter watches the entry ahead of it from the
//!    revision it read, so no delete is missed; woken, it confirms its lease (a
//!    keep-alive round from the last third of the TTL) and reads the queue again
//!    (E3), and a watch that ends, fails or is cancelled (a
//!    compaction) makes it read again. A permit's pass to the next waiter is best
//!    effort, looked at again after a TTL at the latest
//!    (`a_permit_release_wakes_one_waiter_not_the_queue`; hand-offs resume after
//!    `etcd::client_server_partition`; no test loses a single event).
//!
//! # TLS
//!
//! With the `tls` feature (lockkit's `tls`; without it, `etcds://` is a `Config`
//! error naming the feature), `etcds://` speaks TLS to every endpoint through
//! etcd-client's rustls (ring
//! provider; the process's default rustls provider if the application installed
//! one). The server is verified against `tls_ca` alone when given, else against
//! the system roots; `tls_cert` + `tls_key` present a client certificate for a
//! server started with `--client-cert-auth`. The files are read and checked when
//! the URL is parsed ([`lockkit_core::LockError::Config`] naming the option and
//! path); a certificate the client refuses, or a server that closes the connection
//! for want of a client certificate, makes `connect` fail at once with a
//! [`lockkit_core::LockError::Connection`] naming the problem.
//!
//! # Mapping
//!
//! Lock `K` is a queue of keys under `<prefix>/<K>/`, one per waiting or holding
//! owner: `<prefix>/<K>/<owner id as 32 hex digits>` (in `K`, `%` is written
//! `%25` and `/` is written `%2F`, so lock `a` never sees lock `a/b`'s entries).
//! A reader's entry is `<prefix>/<K>/r-<owner id>`: hex digits sort before `r`,
//! so the writers alone are one key range. The value is the owner's label, for
//! people reading etcd. Keying entries by owner lets many owners share one driver
//! (and one lease) without colliding, and makes a repeated acquire by the holder
//! find its own entry: same token.
//!
//! The holder is the entry with the smallest create_revision, or, when that is a
//! reader's, every reader before the first writer; the **fencing token** is its
//! create_revision (invariant E2).
//!
//! # Sharing locks with `etcdctl lock` and Go's `concurrency.Mutex`
//!
//! `etcdctl lock P/K` and Go's `concurrency.NewMutex(session, "P/K")` queue under
//! `P/K/`, one key per contender (`P/K/<lease id in hex>`, its create_revision
//! its place): the layout above. So lockkit's lock `K` under `?prefix=P` (a `K`
//! without `/` or `%`, which lockkit escapes) **is** their lock:
//!
//! - each waits for the other, in create_revision order (`tests/interop_etcdctl.rs`,
//!   against Debian's `etcdctl`, both ways);
//! - a Go key counts as a writer for lockkit's readers (hex digits sort in the
//!   writers' range), and lockkit's readers count as holders for Go;
//! - **tokens:** lockkit's token is its key's create_revision. A Go holder gets a
//!   comparable one by reading `m.Key()` and taking `Kvs[0].CreateRevision` (or
//!   `etcdctl get -w json KEY`'s `create_revision`), **not** `m.Header().Revision`
//!   (etcdctl's `ETCD_LOCK_REV`): that is the revision at which the wait ended,
//!   which can exceed a later holder's create_revision.
//!
//! `contrib/recipes`' `RWMutex` keeps its readers and writers under `P/K/read/`
//! and `P/K/write/`, which this layout cannot follow without breaking the above:
//! lockkit reads those keys as writers of its own queue, but its readers do not
//! see a Go writer (`write/` sorts after the writers' range), and Go's readers do
//! not see lockkit's writers. Do not share a name between lockkit's read-write
//! locks and `RWMutex`.
//!
//! # Acquire (as etcd's concurrency mutex)
//!
//! One txn puts our entry with our lease if its create_revision is 0 (otherwise
//! refreshes its lease) and reads the first entry we wait behind: the queue's for
//! a writer, the first writer's for a reader. A writer that is not first watches
//! only its predecessor (the largest create_revision below ours), a reader that
//! has a writer before it only the last such writer, for a delete, from the
//! revision it read (as etcd's `contrib/recipes` read-write lock): a release wakes
//! the next writer or the readers behind a writer, no herd, and waiters are served
//! strictly in create_revision order (`fair`), so a reader never overtakes a queued
//! writer. A read under the owner's own write hold re-enters the write hold; a
//! write under its own read hold is refused (`Unsupported`).
//!
//! # Semaphores
//!
//! A permit's entry is `<prefix>/<K>/.p-<owner id>`, its value `<limit>:<label>`.
//! Behind permits only, the first `limit` entries hold; a permit waits for any lock
//! or reader entry before it, and another limit is a `Config` error. The first
//! waiter after the holders watches the queue for any delete; each later waiter
//! watches the entry before it, and a waiter granted after waiting rewrites its
//! entry to wake the next one (`permit.rs`). A release thus wakes the waiter it
//! lets in and the one that moves up, not every waiter (`tests/semaphore.rs`
//! counts the messages). Permits share the driver's leases, as locks do: O(1)
//! renewal however many are held. `try_lock`, a timed-out and a cancelled acquire
//! delete the entry they created.
//!
//! # Leases: one per TTL, not one per lock
//!
//! etcd leases have whole-second TTLs. A driver keeps **one lease per distinct TTL
//! (rounded up to whole seconds)** and attaches every entry with that TTL to it:
//! with the `Locker`'s default watchdog TTL that is one lease for all its locks.
//! A lease is kept alive by a keep-alive stream the driver drives itself, one
//! round per renewal of *all* holds on it:
//!
//! - `extend_many` (the watchdog, every ttl/3) sends **one keep-alive round per
//!   lease** and, at the same time, **one progress request on the driver's watch
//!   stream**, however many holds it renews: no per-lock requests. If the
//!   keep-alive answers TTL 0, every hold on that lease is reported `Lost` (so each
//!   guard's `lost()` fires) and the next acquire grants a new lease. If rounds
//!   fail, renewals fail retryably and each guard's deadline runs out (invariant
//!   E4).
//! - A hold deleted behind our back (`force_release`, or by hand) is noticed by
//!   **a watch on its key**: every granted hold gets one, all multiplexed on one
//!   etcd watch stream per driver (client-chosen watch ids, from the revision after
//!   the key's create_revision, deletes only; cancelled when the hold ends). A
//!   DELETE event marks the hold gone at once; the next renewal reports it `Lost`.
//!   One watch per held key rather than one prefix watch per driver, because a
//!   prefix watch would carry every other client's releases to every driver.
//!   A quiet stream proves nothing (a black-holed endpoint), hence invariant E5's
//!   vouching; the others (watch not yet acknowledged, stream broken or silent)
//!   get the old check for that round: one read-only compare txn per 128 holds. A
//!   broken stream is reopened with backoff and every watch
//!   re-created from the hold's revision, so a delete while it was down is still
//!   seen (after a compaction: read once, then watched from that read). The client
//!   sets `require_leader`, so a member cut off from its leader ends our streams
//!   rather than leaving them quiet. A delete is reported by the first round
//!   after its event arrives — typically milliseconds, where the txn saw it at
//!   the next round (on old etcd, see invariant E5: a progress answer may
//!   overtake events).
//! - A fixed-TTL lock (`.lease(ttl)`) is on the lease of its TTL, and `extend`
//!   moves it to the lease of the new TTL.
//!   Waiting acquires keep their lease alive while they wait.
//! - Because a lease is shared and whole-second, the driver does not leave expiry
//!   to the lease alone: it deletes each hold's key (compare-and-delete on its
//!   create_revision) the moment its deadline passes without an extend. So a 300 ms
//!   lock is free after 300 ms while its holder process lives; if the holder dies,
//!   the server frees it when the lease lapses: within TTL rounded up to whole
//!   seconds after the last renewal, plus up to ~0.5 s (etcd's expiry sweep).
//!
//! # Failure modes
//!
//! - **A holder that dies** keeps its lock until its lease lapses: its TTL
//!   rounded up to whole seconds and raised to etcd's floor (invariant E4), plus
//!   etcd's expiry sweep. `guard.effective_ttl()` says how long that is for each
//!   grant; the conformance suite judges the killed-holder case by it, and runs in
//!   full against a default-flag etcd (`etcd_default_flags`; `lockkit check` too).
//! - **A waiter whose lease dies** re-queues at the back.
//! - **A member cut off from its leader** ends the driver's streams
//!   (`require_leader`), and its holds are signalled lost at once.
//! - **A leader failover** keeps grants and leases (E2).
//!
//! # Server settings
//!
//! - Never `--unsafe-no-fsync` (invariant E2).
//! - A lease is at least 1.5 × `--election-timeout`: 2 s with default flags (a
//!   1 s TTL becomes 2 s; invariant E4).
//! - etcd 3.4.24 / 3.5.8 or later, so that a delete made just before a renewal
//!   round is reported in that round (etcd issue 15220, invariant E5).
//! - `--client-cert-auth` for mutual TLS (see TLS above).
//!
//! # Using the client you already have
//!
//! [`EtcdDriver::from_client`] builds the driver on the application's
//! `etcd_client::Client`, using clones of it (one channel) for leases,
//! keep-alives and watches, and never closing it. Build it
//! `with_require_leader(true)`, as lockkit does, so that a member cut off from its
//! leader ends the streams and holds are signalled lost at once
//! (`tests/app_client.rs`).
//!
//! # Timeouts
//!
//! `connect_timeout_ms` (default 5000) and `request_timeout_ms` (each request,
//! default 5000): see [`EtcdOptions::from_url`].
//!
//! # Tested against
//!
//! Real etcd 3.4 servers started by the testkit: the whole conformance suite,
//! `fifo_order` included, on one node, a 3-node cluster, both over TLS, and on
//! default flags; the leader killed during a hold; a black-holed holder (through
//! the fault proxy) past its lease; a thousand locks on one lease; `etcdctl lock`
//! on the same keys (`tests/interop_etcdctl.rs`).
//!
//! # Guarantees and limits
//!
//! - Leases survive a leader failover (the new leader extends them).
//! - etcd-client balances over every endpoint and keeps sending some requests to
//!   a dead one, so transient errors are retried with backoff: by an acquire
//!   within its wait (`try_lock`, and `release`/`force_release`, for up to
//!   750 ms), by the watchdog for renewals. Requests retried this way are
//!   idempotent (the entry's key names its owner; deletes compare
//!   create_revision).

mod at_once;
mod connection;
mod contender;
mod driver;
mod error;
mod holds;
mod inspect;
mod keys;
mod lease;
mod list;
mod observe;
mod options;
mod permit;
mod proclaim;
mod queue;
mod release;
mod renew;
mod request;
mod tls;
mod turn;
mod watch;

pub use driver::EtcdDriver;
pub use options::EtcdOptions;

use lockkit_core::driver::DriverEntry;

/// How the `lockkit` facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<EtcdDriver>();
