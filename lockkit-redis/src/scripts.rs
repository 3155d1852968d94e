//! The Lua scripts, one per file under `scripts/`, sent with EVALSHA.
//!
//! `wake_next.lua` is not a script of its own: it defines the local function that
//! release, force-release and leave share to wake exactly one waiter, and is
//! prepended to each of them here.

use std::time::Duration;

use redis::Script;

/// Most locks renewed by one `extend_many.lua` call (bounds the script's run time,
/// during which the server serves nobody else).
pub(crate) const MAX_BATCH: usize = 500;

/// A TTL as the scripts' millisecond argument.
pub(crate) fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX / 2)
}

/// Prepends the shared `wake_next` function to a script file.
macro_rules! with_wake_next {
    ($file:literal) => {
        concat!(
            include_str!("../scripts/wake_next.lua"),
            include_str!(concat!("../scripts/", $file))
        )
    };
}

/// Every script this driver runs, loaded once.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) acquire: Script,
    /// One permit of a semaphore.
    pub(crate) acquire_permit: Script,
    pub(crate) extend: Script,
    pub(crate) extend_many: Script,
    /// Renews permits, many in one call.
    pub(crate) extend_many_permits: Script,
    pub(crate) release: Script,
    pub(crate) force_release: Script,
    pub(crate) leave: Script,
    /// Reads a lock's holder and waiter count, changing nothing.
    pub(crate) inspect: Script,
    /// Redlock only: writes the quorum's token back (see `redlock`).
    pub(crate) raise_fence: Script,
}

impl Scripts {
    /// Loads every script into the server's script cache (on a cluster, every
    /// master), so that even the first call of each is a single EVALSHA.
    pub(crate) async fn load_all(
        &self,
        conn: &mut impl redis::aio::ConnectionLike,
    ) -> redis::RedisResult<()> {
        for script in [
            &self.acquire,
            &self.acquire_permit,
            &self.extend,
            &self.extend_many,
            &self.extend_many_permits,
            &self.release,
            &self.force_release,
            &self.leave,
            &self.inspect,
            &self.raise_fence,
        ] {
            script.prepare_invoke().load_async(conn).await?;
        }
        Ok(())
    }

    pub(crate) fn new() -> Self {
        Self {
            acquire: Script::new(include_str!("../scripts/acquire.lua")),
            acquire_permit: Script::new(include_str!("../scripts/acquire_permit.lua")),
            extend: Script::new(include_str!("../scripts/extend.lua")),
            extend_many: Script::new(include_str!("../scripts/extend_many.lua")),
            extend_many_permits: Script::new(include_str!("../scripts/extend_many_permits.lua")),
            release: Script::new(with_wake_next!("release.lua")),
            force_release: Script::new(with_wake_next!("force_release.lua")),
            leave: Script::new(with_wake_next!("leave.lua")),
            inspect: Script::new(include_str!("../scripts/inspect.lua")),
            raise_fence: Script::new(include_str!("../scripts/raise_fence.lua")),
        }
    }
}
