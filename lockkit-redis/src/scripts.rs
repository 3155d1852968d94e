//! The Lua scripts, one per file under `scripts/`, sent with EVALSHA.

use redis::Script;

/// Every script this driver runs, loaded once.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) acquire: Script,
    pub(crate) extend: Script,
    pub(crate) extend_many: Script,
    pub(crate) release: Script,
    pub(crate) force_release: Script,
    /// Redlock only: writes the quorum's token back (see `redlock`).
    pub(crate) raise_fence: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        Self {
            acquire: Script::new(include_str!("../scripts/acquire.lua")),
            extend: Script::new(include_str!("../scripts/extend.lua")),
            extend_many: Script::new(include_str!("../scripts/extend_many.lua")),
            release: Script::new(include_str!("../scripts/release.lua")),
            force_release: Script::new(include_str!("../scripts/force_release.lua")),
            raise_fence: Script::new(include_str!("../scripts/raise_fence.lua")),
        }
    }
}
