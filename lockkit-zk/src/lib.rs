//! The ZooKeeper driver for lockkit. Not for direct use; see the `lockkit` crate.
//!
//! URL: `zk://[user:password@]host:port[,host:port…][/chroot][?session_timeout_ms=N&recipe=NAME]`
//! (see [`ZkOptions::from_url`]).
//!
//! # Invariants
//!
//! What exclusion and fencing rest on, server settings included. Code that
//! relies on one cites its number (Z1…); each names the test that proves it: the
//! conformance suites in `conformance_zk.rs` (a standalone server, over TLS, an
//! ensemble, one losing a member), this crate's tests, and the fault trials of
//! the reliability suite.
//!
//! 1. **Sequence order decides.** Each holder or waiter is one ephemeral
//!    sequential node under the key's node. An exclusive node holds when it is
//!    first in sequence order, a shared one when no exclusive node is ahead of
//!    it, a permit when it is among the first `limit` behind permits only; a
//!    sequential child lockkit did not make is a contender too, never granted
//!    past (exclusive, unless it is Curator's or kazoo's reader). The listing
//!    that decides follows our create in the same session, so it sees every node
//!    created before ours that is still there
//!    (`mutual_exclusion_under_contention`,
//!    `writer_excludes_readers_and_writers`,
//!    `at_most_limit_permits_under_contention`, `fifo_order`,
//!    `zk_ensemble_losing_a_member`,
//!    `a_foreign_sequential_node_is_an_exclusive_contender`,
//!    `curator_mutex_and_lockkit_take_turns_in_queue_order`,
//!    `kazoo_locks_and_lockkit_take_turns_share_readers_and_exclude_writers`).
//! 2. **The token is the node's czxid**: the zxid of the transaction that
//!    created it, which ZooKeeper makes strictly increasing across the ensemble.
//!    A repeated acquire by the holder finds the same node, so the same token. A
//!    write is acknowledged once a quorum has logged it (fsynced, with
//!    `forceSync=yes`, the default), so tokens keep rising across a restart and
//!    the loss of a minority, leader included
//!    (`fencing_tokens_increase_across_holders`,
//!    `permit_tokens_increase_across_permits`,
//!    `reentrant_acquire_returns_same_token`,
//!    `zookeeper_server_killed_and_restarted`,
//!    `zookeeper_ensemble_leader_killed`).
//! 3. **A hold lasts as long as its session, and a dropped connection counts as
//!    lost.** The nodes are ephemeral: the ensemble deletes them when it expires
//!    the session, the session timeout after it last heard from the client
//!    (`session_timeout_ms`, default 10 s, clamped by the server to its
//!    `minSessionTimeout`..`maxSessionTimeout`). The client gives a connection up
//!    after 2/5 of that without a reply; at that `Disconnected` every guard's
//!    `lost()` fires, before the servers can expire the session, and a grant
//!    made while the connection dropped is born lost
//!    (`paused_server_past_the_session_timeout_signals_lost_before_another_client_acquires`,
//!    `killing_the_member_a_holder_uses_signals_lost_and_the_lock_moves_on`,
//!    `abandoned_by_killed_process_is_freed_after_ttl`,
//!    `zookeeper::server_paused`, `zookeeper::client_server_partition`). A
//!    holder *paused* (GC, SIGSTOP) past the session timeout loses its lock before
//!    it can notice, and learns it when it resumes; fencing tokens checked by the
//!    protected resource are the defence (`zookeeper::holder_paused_past_its_lease`).
//! 4. **A deleted node is reported.** Each hold watches its own node, and an
//!    explicit `extend` syncs its server with the leader and reads the node
//!    (`lost_signal_fires_when_hold_disappears`,
//!    `extend_keeps_the_lock_and_fails_after_loss`,
//!    `a_permit_granted_after_waiting_still_learns_of_its_deletion`). With
//!    `user:password@` every node gets the ACL `auth`: only that `digest`
//!    identity may touch it, so give every client of the same locks the same
//!    credentials (`digest_credentials_keep_other_identities_off_the_lock`);
//!    without credentials nodes are open to every client.
//! 5. **A watch only wakes.** Woken by the node it watches or by a change of
//!    its session's state, a waiter lists the queue again. A watch lost anyway,
//!    or a permit's pass that never comes, costs at most a session timeout, after
//!    which it looks again (`a_permit_release_wakes_one_waiter_not_the_queue`;
//!    no test loses a watch).
//!
//! # TLS
//!
//! With the `tls` feature (lockkit's `tls`; without it, `zks://` is a `Config`
//! error naming the feature), `zks://…?tls_ca=PATH` connects to every server's
//! `secureClientPort` over TLS
//! (rustls with ring, through zookeeper-client), verifying it against `tls_ca` —
//! required, since that client does not use the system's roots —
//! and `&tls_cert=PATH&tls_key=PATH` present a client certificate, for servers with
//! `ssl.clientAuth=need`. A server's certificate must name the host of the URL.
//!
//! # The recipe
//!
//! Lock `K` is a container node `<chroot>/lockkit/<K escaped>` whose children are
//! the queue: one **ephemeral sequential** node per holder or waiter, named
//! `w-<owner>-<seq>` (exclusive: [`lockkit_core::Locker::lock`] and
//! [`lockkit_core::Locker::write_lock`]) or `r-<owner>-<seq>` (shared:
//! [`lockkit_core::Locker::read_lock`]), where `<owner>` is the owner id's 32 hex
//! digits.
//!
//! - **Acquire:** create our node, list the queue. An exclusive node holds the lock
//!   when it is first; a shared node holds it when no exclusive node is ahead of it.
//!   Otherwise it watches **exactly one node**: an exclusive waiter the node just
//!   before it, a shared waiter the nearest exclusive node before it. A release
//!   wakes only the nodes watching it (the next writer, or the readers behind a
//!   writer), never the whole queue, and the queue is served in creation order
//!   (`fair`): a reader that arrives after a queued writer waits for it, so
//!   writers do not starve.
//! - **Semaphores:** a permit's node is `p<limit>-<owner>-<seq>`. Behind permits
//!   only, the first `limit` nodes hold (a different limit is a `Config` error).
//!   The first waiter after them watches the queue itself (any holder going lets it
//!   in); each later waiter watches the node just before it. A waiter granted after
//!   waiting rewrites its node's data, which wakes the next waiter to take its
//!   place as the first. A release thus wakes the one waiter it lets in, plus the
//!   one that moves up, not every waiter (`tests/semaphore.rs` counts the
//!   packets). Permits are session-bound, like locks.
//! - **A lost create reply** (the connection dropped while the create was in
//!   flight) is resolved by listing the queue for a node carrying our owner id,
//!   instead of creating a second one that would leak. Requests in the same session
//!   are applied in order, so the list sees the create if it was applied.
//! - **The fencing token** is our node's `czxid` (invariant Z2).
//! - **Release** deletes our node; `try_lock`, a timed-out and a cancelled acquire
//!   delete the node they queued (retried in the background while the outcome is
//!   unknown: a node left in a live session would block the queue).
//! - **Cleanup:** each key's node is a *container* node, which the server deletes
//!   once its last child is gone, so keys used once do not accumulate. ZooKeeper's
//!   container manager runs every `znode.container.checkIntervalMs` (default 60 s)
//!   and deletes at most `znode.container.maxPerMinute` (default 10,000) per minute.
//!   With `recipe=kazoo` the key's node is persistent, as kazoo makes it: a kazoo
//!   `Lock` remembers that its path exists, and fails with `NoNodeError` once the
//!   server swept it.
//!
//! # Sharing locks with Curator and kazoo (`?recipe=`)
//!
//! Whatever the recipe, lockkit counts every sequential child of a lock's node
//! as a contender (invariant Z1; Curator's and kazoo's readers, `__READ__` and
//! `__rlock__`, as shared). To let those libraries see lockkit's nodes too, name
//! them as the library does ([`Recipe`]):
//!
//! - `recipe=curator`: Curator's `InterProcessMutex` (`_c_<owner uuid>-lock-`).
//!   Shared holds are `Unsupported`: the mutex would not read them as readers.
//! - `recipe=curator-rw`: Curator's `InterProcessReadWriteLock` (`__WRIT__`,
//!   `__READ__`).
//! - `recipe=kazoo`: kazoo's `Lock` and `WriteLock` (`__lock__`) and `ReadLock`
//!   (`__rlock__`).
//!
//! With a recipe, the key **is the lock's path** under the chroot (`locks/orders`
//! or `/locks/orders` is `<chroot>/locks/orders`, parents made as needed), and a
//! key that is no path is a `Config` error. lockkit and the library then exclude
//! each other and are served in the order they queued, both ways; readers share.
//! Semaphores are `Unsupported` (Curator's and kazoo's use layouts of their own),
//! and so is listing. A lockkit token is its node's czxid: a Curator or kazoo
//! holder reads its own node's `Stat.czxid` for a comparable one. Curator's mutex
//! and read-write lock on one path do not see each other as the other's kind
//! (Curator's own limit), and kazoo's `Lock` ignores its `ReadLock`s.
//!
//! # Sessions and the lost signal
//!
//! A hold lasts as long as the driver's ZooKeeper session (there is no per-lock
//! TTL on the server: the capability `lease_expiry` is false). The session's
//! heartbeat keeps every node alive, so renewing costs no request: the watchdog's
//! rounds (`extend_many`) only check, locally, that the session is connected and
//! the node was not deleted; an explicit `guard.extend()` asks the ensemble
//! (invariant Z4), so it reports `Lost` for a node deleted a moment ago through
//! another member.
//!
//! - **Disconnected:** every guard's `lost()` fires at once (invariant Z3); if the
//!   session survives, the node is still there and `release` deletes it as usual.
//! - **Expired** (or closed): every guard is lost and the nodes are gone. The next
//!   acquire opens a new session.
//! - **Node deleted** (`force_release`, or by hand): `lost()` fires when the
//!   deletion event arrives (invariant Z4).
//!
//! The session timeout bounds how long a crashed or partitioned holder keeps its
//! locks (invariant Z3). A reply later than the client's 2/5 of it is not a
//! failure of a one-shot request: a `try_lock`, a
//! release, an inspection or a listing tries again for 2/5 of the session timeout
//! plus 1 s, on the reconnected session (a release's delete and the reads are
//! safe to send twice; a `try_lock` finds by owner the node a lost create left).
//! Holds are still signalled lost at the disconnect.
//!
//! # Server settings
//!
//! - `forceSync=yes` (the default), so that tokens and holds survive a restart
//!   (invariant Z2).
//! - `minSessionTimeout`..`maxSessionTimeout` admitting the `session_timeout_ms`
//!   you ask for: the server clamps it (invariant Z3), and it bounds how long a
//!   dead or cut-off holder keeps its locks.
//! - `znode.container.checkIntervalMs` sets how soon empty key nodes are swept
//!   (see *Cleanup* under the recipe above).
//! - For TLS, a `secureClientPort`, and `ssl.clientAuth=need` for client
//!   certificates.
//!
//! # Using the client you already have
//!
//! [`ZkDriver::from_client`] builds the driver on the application's
//! `zookeeper_client::Client`: its one session, and the session's events from the
//! client's state watcher (a dropped connection signals every hold lost). Paths
//! are under the client's chroot. When that session ends, the driver opens no
//! other: requests fail with `Connection`, and the application builds a new driver
//! on a new client (`tests/app_client.rs`).
//!
//! # Timeouts
//!
//! `session_timeout_ms` (default 10000), `connect_timeout_ms` (opening a session,
//! default 5000) and `request_timeout_ms` (each request, default 5000): see
//! [`ZkOptions::from_url`].
//!
//! # Tested against
//!
//! Real ZooKeeper 3.8 servers started by the testkit: the whole conformance
//! suite, `fifo_order` and the read-write cases included, on a standalone server,
//! over TLS with client certificates, on a 3-node ensemble, and on a 3-node
//! ensemble with a member SIGKILLed mid-case (the two lease-expiry cases are
//! skipped: there is no per-lock TTL); the server paused past the session
//! timeout; the holder's only member killed; a node deleted behind its holder; a
//! lost create reply; digest ACLs; Curator's and kazoo's locks on the same paths
//! (`tests/interop_recipes.rs`).
//!
//! # Guarantees and limits
//!
//! - Every change is a ZooKeeper write, ordered by the ensemble's leader and
//!   acknowledged by a quorum: a grant survives the loss of a minority of members.
//!   A follower cut off from the quorum stops serving, its clients see
//!   Disconnected, and their holds are signalled lost.
//! - One session per driver: every lock of a driver is lost together when its
//!   session is.

mod cleanup;
mod contender;
mod driver;
mod error;
mod holds;
mod inspect;
mod late_reply;
mod list;
mod nodes;
mod observe;
mod options;
mod proclaim;
mod queue;
mod recipe;
mod renew;
mod session;

pub use driver::ZkDriver;
pub use options::{DEFAULT_SESSION_TIMEOUT, ZkOptions};
pub use recipe::Recipe;

use std::sync::Arc;

use lockkit_core::driver::{Driver, DriverEntry, LockDriver};

/// How the `lockkit` facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<ZkDriver>();

impl Driver for ZkDriver {
    const NAME: &'static str = driver::NAME;
    const URL_SCHEMES: &'static [&'static str] = options::SCHEMES;
    type Options = ZkOptions;

    fn options(url: &str) -> lockkit_core::Result<ZkOptions> {
        ZkOptions::from_url(url)
    }

    async fn connect(options: ZkOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
        Ok(Arc::new(ZkDriver::connect(options).await?))
    }
}
