//! The `mem://` floor: an insert and a remove in a mutex-guarded map shared by every
//! floor client of the process (like `mem://` locks).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use lockkit::LockError;

use super::{Hold, RawLock};

use lockkit_core::sync::lock;

/// What the `mem://` floor sends.
pub(super) const DESCRIPTION: &str = "insert + remove in a Mutex<HashMap>";

/// A `mem://` floor client (all of them share [`mem_table`]).
pub(crate) struct MemFloor;

/// Keys held by `mem://` floor clients in this process (shared, like `mem://` locks).
fn mem_table() -> &'static Mutex<HashMap<String, String>> {
    static TABLE: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    TABLE.get_or_init(Mutex::default)
}

impl RawLock for MemFloor {
    async fn clean_up(&self, keys: &[String]) {
        let mut table = lock(mem_table());
        for key in keys {
            table.remove(key);
        }
    }

    async fn try_acquire(&self, key: &str, owner: &str) -> Result<Option<Hold>, LockError> {
        let mut table = lock(mem_table());
        if table.contains_key(key) {
            return Ok(None);
        }
        table.insert(key.to_owned(), owner.to_owned());
        Ok(Some(Hold(owner.to_owned())))
    }

    async fn release(&self, key: &str, held: Hold) -> Result<(), LockError> {
        let Hold(owner) = held;
        let mut table = lock(mem_table());
        if table.get(key) == Some(&owner) {
            table.remove(key);
        }
        Ok(())
    }
}
