//! The Lua scripts, one per file under `scripts/`, sent with EVALSHA.
//!
//! Two sets share the directory. A single server or a Cluster runs the
//! queue-aware scripts, each prefixed with `queue.lua` and `holds.lua` (the lock's
//! keys, its queue of waiters and its shared holds; not scripts of their own).
//! Redlock runs a simpler set on each master, where `wake_next.lua` is prefixed to
//! release, force-release and leave to wake one waiter.

use std::time::Duration;

use redis::Script;

/// Most holds renewed by one `renew_holds.lua` or `extend_many.lua` call (bounds
/// the script's run time, during which the server serves nobody else).
pub(crate) const MAX_BATCH: usize = 500;

/// A TTL as the scripts' millisecond argument.
pub(crate) fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX / 2)
}

/// Prepends the queue and holds preludes to a single-server script file.
macro_rules! with_queue {
    ($file:literal) => {
        concat!(
            include_str!("../scripts/queue.lua"),
            include_str!("../scripts/holds.lua"),
            include_str!(concat!("../scripts/", $file))
        )
    };
}

/// Prepends a fast path (its own file, run before any helper is made) and the
/// queue and holds preludes to a single-server script file.
macro_rules! with_fast_path {
    ($fast:literal, $file:literal) => {
        concat!(
            include_str!(concat!("../scripts/", $fast)),
            with_queue!($file)
        )
    };
}

/// Prepends the shared `wake_next` function to a Redlock script file.
macro_rules! with_wake_next {
    ($file:literal) => {
        concat!(
            include_str!("../scripts/wake_next.lua"),
            include_str!(concat!("../scripts/", $file))
        )
    };
}

/// Every script the drivers run, loaded once.
#[derive(Debug)]
pub(crate) struct Scripts {
    /// A write (exclusive) hold; readers queue behind it.
    pub(crate) acquire_exclusive: Script,
    /// A read (shared) hold.
    pub(crate) acquire_shared: Script,
    /// One permit of a semaphore.
    pub(crate) acquire_permit: Script,
    /// Renews holds of any mode, many in one call.
    pub(crate) renew_holds: Script,
    /// Releases a hold of any mode and wakes whom that admits.
    pub(crate) release_hold: Script,
    pub(crate) force_release_all: Script,
    pub(crate) leave_queue: Script,
    /// Stores an election leader's new value on its exclusive hold.
    pub(crate) proclaim: Script,
    /// Reads a key's holders and waiter count, changing nothing.
    pub(crate) inspect: Script,
    /// Redlock: one master's acquire, release, force-release and leave.
    pub(crate) acquire: Script,
    pub(crate) release: Script,
    pub(crate) force_release: Script,
    pub(crate) leave: Script,
    /// Redlock: renews one hold, or many in one call.
    pub(crate) extend: Script,
    pub(crate) extend_many: Script,
    /// Redlock: writes the quorum's token back (see `redlock`).
    pub(crate) raise_fence: Script,
    /// Several free locks at once (see `acquire_all`).
    pub(crate) acquire_all: Script,
}

impl Scripts {
    /// Loads every script into the server's script cache (on a cluster, every
    /// master), so that even the first call of each is a single EVALSHA.
    pub(crate) async fn load_all(
        &self,
        conn: &mut impl redis::aio::ConnectionLike,
    ) -> redis::RedisResult<()> {
        for script in [
            &self.acquire_exclusive,
            &self.acquire_shared,
            &self.acquire_permit,
            &self.renew_holds,
            &self.release_hold,
            &self.force_release_all,
            &self.leave_queue,
            &self.inspect,
            &self.proclaim,
            &self.acquire,
            &self.release,
            &self.force_release,
            &self.leave,
            &self.extend,
            &self.extend_many,
            &self.raise_fence,
            &self.acquire_all,
        ] {
            script.prepare_invoke().load_async(conn).await?;
        }
        Ok(())
    }

    pub(crate) fn new() -> Self {
        Self {
            acquire_exclusive: Script::new(with_fast_path!(
                "acquire_exclusive_fast.lua",
                "acquire_exclusive.lua"
            )),
            acquire_shared: Script::new(with_queue!("acquire_shared.lua")),
            acquire_permit: Script::new(with_queue!("acquire_permit.lua")),
            renew_holds: Script::new(include_str!("../scripts/renew_holds.lua")),
            release_hold: Script::new(with_fast_path!("release_hold_fast.lua", "release_hold.lua")),
            force_release_all: Script::new(with_queue!("force_release_all.lua")),
            leave_queue: Script::new(with_queue!("leave_queue.lua")),
            inspect: Script::new(with_queue!("inspect.lua")),
            proclaim: Script::new(include_str!("../scripts/proclaim.lua")),
            acquire: Script::new(include_str!("../scripts/acquire.lua")),
            release: Script::new(with_wake_next!("release.lua")),
            force_release: Script::new(with_wake_next!("force_release.lua")),
            leave: Script::new(with_wake_next!("leave.lua")),
            extend: Script::new(include_str!("../scripts/extend.lua")),
            extend_many: Script::new(include_str!("../scripts/extend_many.lua")),
            raise_fence: Script::new(include_str!("../scripts/raise_fence.lua")),
            acquire_all: Script::new(include_str!("../scripts/acquire_all.lua")),
        }
    }
}
