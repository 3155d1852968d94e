//! The resource side of fencing.
//!
//! A lease can run out while its holder is paused (GC, SIGSTOP, swap); the holder then
//! writes believing it still holds the lock. Fencing makes that write harmless: the
//! protected resource accepts a write only if its token is at least the highest token
//! it has seen, and records that token — atomically, in the same step as the write.
//!
//! For a SQL resource, keep the highest token in a column and make it part of the
//! `WHERE` clause ([`FencedUpdate`] writes that statement for any table); zero rows
//! affected means "stale, rejected". For an in-process resource, use [`FencedCell`].
//!
//! Beside fencing, the lock-free alternative: optimistic versions. A row keeps a
//! version; a write names the version it read and bumps it ([`VersionedUpdate`]),
//! and a writer that lost the race reads again and retries ([`Optimistic`]).
//! Bind a token as the `BIGINT` SQL drivers take with `i64::try_from(token)`
//! ([`crate::FencingToken`] converts, checked).
//!
//! # Examples
//!
//! ```
//! use lockkit::FencingToken;
//! use lockkit::fence::{FencedCell, FencedUpdate, Placeholders, StaleToken};
//!
//! // In process: the holder with token 8 has written; a paused one with 7 is refused.
//! let balance = FencedCell::new(100i64);
//! balance.write(FencingToken(8), |b| *b -= 30)?;
//! let refused = balance.write(FencingToken(7), |b| *b -= 30);
//! assert_eq!(refused, Err(StaleToken { presented: FencingToken(7), highest: FencingToken(8) }));
//! assert_eq!(balance.get(), 70);
//!
//! // In SQL: bind the balance, the token as `i64`, then the account id.
//! let sql = FencedUpdate::new("accounts", "id").set("balance").sql(Placeholders::Dollar)?;
//! assert_eq!(sql, "UPDATE accounts SET balance = $1, fence = $2 WHERE id = $3 AND fence <= $2");
//! assert_eq!(i64::try_from(FencingToken(8))?, 8);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::sync::Mutex;

use crate::sync::lock;
use crate::types::FencingToken;

mod optimistic;
mod sql;
mod versioned;

pub use optimistic::{Attempt, Optimistic, OptimisticError};
pub use sql::{FencedUpdate, Placeholders};
pub use versioned::VersionedUpdate;

/// A write was refused because a newer holder has already written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaleToken {
    /// The token that came with the refused write.
    pub presented: FencingToken,
    /// The highest token the resource had accepted.
    pub highest: FencingToken,
}

impl fmt::Display for StaleToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stale fencing token {}: the resource has already seen {}",
            self.presented, self.highest
        )
    }
}

impl std::error::Error for StaleToken {}

/// A value guarded by fencing tokens.
///
/// # Examples
///
/// ```
/// use lockkit::{FencingToken, fence::FencedCell};
///
/// let stock = FencedCell::new(10u32);
/// stock.write(FencingToken(5), |s| *s -= 1).unwrap();
/// // A paused old holder with token 4 wakes up and tries to write: refused.
/// assert!(stock.write(FencingToken(4), |s| *s -= 1).is_err());
/// assert_eq!(stock.get(), 9);
/// ```
pub struct FencedCell<T> {
    inner: Mutex<(Option<FencingToken>, T)>,
}

impl<T: fmt::Debug> fmt::Debug for FencedCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = lock(&self.inner);
        f.debug_struct("FencedCell")
            .field("highest", &inner.0)
            .field("value", &inner.1)
            .finish()
    }
}

impl<T> FencedCell<T> {
    /// A cell that has seen no token yet.
    pub fn new(value: T) -> Self {
        Self {
            inner: Mutex::new((None, value)),
        }
    }

    /// Applies `f` if `token` is at least the highest token seen, and records it.
    ///
    /// # Errors
    ///
    /// [`StaleToken`] if a higher token has already written; `f` is not called.
    pub fn write<R>(
        &self,
        token: FencingToken,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<R, StaleToken> {
        let mut inner = lock(&self.inner);
        if let Some(highest) = inner.0
            && token < highest
        {
            return Err(StaleToken {
                presented: token,
                highest,
            });
        }
        inner.0 = Some(token);
        Ok(f(&mut inner.1))
    }

    /// The highest token accepted so far.
    pub fn highest(&self) -> Option<FencingToken> {
        lock(&self.inner).0
    }
}

impl<T: Clone> FencedCell<T> {
    /// A copy of the value.
    pub fn get(&self) -> T {
        lock(&self.inner).1.clone()
    }
}
