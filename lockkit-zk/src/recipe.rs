//! Whose lock recipe the queue nodes follow (`?recipe=`): lockkit's own, or the
//! names Apache Curator or kazoo give theirs, so that lockkit and those libraries
//! queue on one path, in one sequence order.
//!
//! | recipe | lock path of key `K` | exclusive node | shared node |
//! |---|---|---|---|
//! | `lockkit` | `<chroot>/lockkit/<K escaped>` | `w-<owner>-` | `r-<owner>-` |
//! | `curator` | `<chroot>/<K>` | `_c_<owner uuid>-lock-` (`InterProcessMutex`) | refused |
//! | `curator-rw` | `<chroot>/<K>` | `_c_<owner uuid>-__WRIT__` | `_c_<owner uuid>-__READ__` (`InterProcessReadWriteLock`) |
//! | `kazoo` | `<chroot>/<K>` | `<owner>__lock__` (`Lock`, `WriteLock`) | `<owner>__rlock__` (`ReadLock`) |
//!
//! ZooKeeper appends the 10-digit sequence to each. Whatever the recipe, lockkit
//! reads every sequential child ([`crate::nodes`]): `__READ__` and `__rlock__`
//! nodes as shared, any other as exclusive.

use lockkit_core::{LockError, LockKey, LockMode, OwnerId};
use zookeeper_client::CreateMode;

/// Whose names a driver gives its queue nodes, and where a key's queue lives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recipe {
    /// lockkit's own (the default): every lock under `<chroot>/lockkit`, one
    /// escaped node name per key, and semaphores.
    #[default]
    Lockkit,
    /// Apache Curator's `InterProcessMutex`: the key is the lock's path. No
    /// shared holds (Curator's mutex would not see them as readers).
    Curator,
    /// Apache Curator's `InterProcessReadWriteLock`: the key is the lock's path.
    CuratorRw,
    /// kazoo's `Lock`, `WriteLock` and `ReadLock`: the key is the lock's path.
    Kazoo,
}

impl Recipe {
    /// The URL names (`?recipe=`), with each recipe.
    pub(crate) const NAMES: [(&'static str, Recipe); 4] = [
        ("lockkit", Self::Lockkit),
        ("curator", Self::Curator),
        ("curator-rw", Self::CuratorRw),
        ("kazoo", Self::Kazoo),
    ];

    /// Whether this recipe has lockkit's own semaphores (the others' use
    /// layouts of their own, which lockkit does not write).
    pub(crate) fn has_permits(self) -> bool {
        self == Self::Lockkit
    }

    /// Whether this recipe has shared holds.
    pub(crate) fn has_shared(self) -> bool {
        self != Self::Curator
    }

    /// The lock path of `key`: under `root` for lockkit's recipe, else the key
    /// itself under `chroot` (a leading `/` of the key is allowed).
    pub(crate) fn dir(self, root: &str, chroot: &str, key: &LockKey) -> String {
        match self {
            Self::Lockkit => format!("{root}/{}", key.to_segment()),
            _ => format!("{chroot}/{}", key.as_str().trim_start_matches('/')),
        }
    }

    /// Refuses a key that is no ZooKeeper path (with a foreign recipe, the key
    /// is the lock's path).
    pub(crate) fn check(self, key: &LockKey) -> Result<(), LockError> {
        let path = key.as_str().trim_start_matches('/');
        if self != Self::Lockkit
            && path
                .split('/')
                .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return Err(LockError::Config(format!(
                "with recipe={} a key is the lock's ZooKeeper path, and `{}` is not \
                 one: use `/`-separated names, none empty, `.` or `..`",
                self.name(),
                key.as_str()
            )));
        }
        if self != Self::Lockkit
            && let Some(c) = path.chars().find(|&c| refused_in_paths(c))
        {
            return Err(LockError::Config(format!(
                "with recipe={} a key is the lock's ZooKeeper path, and ZooKeeper refuses \
                 U+{:04X} in a path (characters outside the Basic Multilingual Plane, such \
                 as emoji, private-use and control characters): use recipe=lockkit, which \
                 escapes keys",
                self.name(),
                u32::from(c)
            )));
        }
        Ok(())
    }

    /// The name prefix (before the sequence number) of `owner`'s node in `mode`.
    pub(crate) fn node_prefix(self, mode: LockMode, owner: &OwnerId) -> String {
        let shared = mode == LockMode::Shared;
        match self {
            Self::Lockkit => {
                let tag = match mode {
                    LockMode::Shared => "r".to_owned(),
                    LockMode::Permit { limit } => format!("p{limit}"),
                    _ => "w".to_owned(),
                };
                format!("{tag}-{}-", owner.to_hex())
            }
            Self::Curator => format!("_c_{}-lock-", uuid_form(owner)),
            Self::CuratorRw if shared => format!("_c_{}-__READ__", uuid_form(owner)),
            Self::CuratorRw => format!("_c_{}-__WRIT__", uuid_form(owner)),
            Self::Kazoo if shared => format!("{}__rlock__", owner.to_hex()),
            Self::Kazoo => format!("{}__lock__", owner.to_hex()),
        }
    }

    /// How the key's own node is made. A container, which the server deletes
    /// once its queue is empty, except with kazoo's recipe: kazoo makes the lock's
    /// path persistent, and a kazoo `Lock` remembers that its path exists, so
    /// once the server swept it, that `Lock`'s next acquire fails with
    /// `NoNodeError`. With `recipe=kazoo` the path stays, as kazoo leaves it.
    pub(crate) fn key_node_mode(self) -> CreateMode {
        match self {
            Self::Kazoo => CreateMode::Persistent,
            _ => CreateMode::Container,
        }
    }

    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, r)| *r == self)
            .map_or("lockkit", |(n, _)| n)
    }
}

/// Whether ZooKeeper refuses `c` in a path: it checks the Java string, so any
/// character outside the Basic Multilingual Plane (a surrogate pair there),
/// and control, private-use and `U+FFF0`… characters.
fn refused_in_paths(c: char) -> bool {
    matches!(u32::from(c), 0..=0x1F | 0x7F..=0x9F | 0xE000..=0xF8FF | 0xFFF0..)
}

/// The owner's 32 hex digits as a UUID is written (8-4-4-4-12), as Curator
/// writes the id of its protected nodes.
pub(crate) fn uuid_form(owner: &OwnerId) -> String {
    let hex = owner.to_hex();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_one_safe_node_name() {
        let k = |s: &str| Recipe::Lockkit.dir("/lockkit", "", &LockKey::new(s).unwrap());
        assert_eq!(k("inventory:sku-42"), "/lockkit/inventory:sku-42");
        assert_eq!(k("a/b c"), "/lockkit/a%2Fb%20c");
        assert_eq!(k(".."), "/lockkit/..%00");
        assert_eq!(k("é"), "/lockkit/%C3%A9");
    }

    #[test]
    fn a_foreign_recipe_refuses_keys_zookeeper_refuses_in_paths() {
        for recipe in [Recipe::Curator, Recipe::Kazoo] {
            for key in ["orders/🔒", "a\u{E000}"] {
                let e = recipe.check(&LockKey::new(key).unwrap()).unwrap_err();
                assert!(e.to_string().contains("refuses U+"), "{e}");
            }
            assert!(recipe.check(&LockKey::new("склад/工人/é").unwrap()).is_ok());
        }
        assert!(
            Recipe::Lockkit
                .check(&LockKey::new("orders/🔒").unwrap())
                .is_ok()
        );
    }

    #[test]
    fn with_a_foreign_recipe_the_key_is_the_path() {
        let key = |s: &str| LockKey::new(s).unwrap();
        for recipe in [Recipe::Curator, Recipe::CuratorRw, Recipe::Kazoo] {
            assert_eq!(
                recipe.dir("/c/lockkit", "/c", &key("locks/orders")),
                "/c/locks/orders"
            );
            assert_eq!(
                recipe.dir("/lockkit", "", &key("/locks/orders")),
                "/locks/orders"
            );
            assert!(recipe.check(&key("/locks/orders")).is_ok());
            for bad in ["a//b", "a/", "/", "a/../b", "./a"] {
                assert!(
                    matches!(recipe.check(&key(bad)), Err(LockError::Config(_))),
                    "{bad}"
                );
            }
        }
        assert!(Recipe::Lockkit.check(&key("a//b")).is_ok());
    }

    #[test]
    fn nodes_are_named_as_each_library_names_its_own() {
        let owner = OwnerId::new();
        let (hex, uuid) = (owner.to_hex(), uuid_form(&owner));
        assert_eq!(uuid.len(), 36);
        assert_eq!(uuid.replace('-', ""), hex);
        let name = |r: Recipe, m| r.node_prefix(m, &owner);
        assert_eq!(
            name(Recipe::Lockkit, LockMode::Exclusive),
            format!("w-{hex}-")
        );
        assert_eq!(
            name(Recipe::Lockkit, LockMode::Permit { limit: 3 }),
            format!("p3-{hex}-")
        );
        assert_eq!(
            name(Recipe::Curator, LockMode::Exclusive),
            format!("_c_{uuid}-lock-")
        );
        assert_eq!(
            name(Recipe::CuratorRw, LockMode::Exclusive),
            format!("_c_{uuid}-__WRIT__")
        );
        assert_eq!(
            name(Recipe::CuratorRw, LockMode::Shared),
            format!("_c_{uuid}-__READ__")
        );
        assert_eq!(
            name(Recipe::Kazoo, LockMode::Exclusive),
            format!("{hex}__lock__")
        );
        assert_eq!(
            name(Recipe::Kazoo, LockMode::Shared),
            format!("{hex}__rlock__")
        );
    }
}
