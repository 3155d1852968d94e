//! [`lock`]: one way to take a `std::sync::Mutex`, for every lockkit crate.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, and takes its guard even if a thread panicked while holding
/// it. lockkit's mutexes guard maps and flags that each change in one step, so
/// a panic elsewhere leaves them whole; refusing them would turn one panic into
/// a panic of every thread that touches the lock afterwards.
///
/// # Examples
///
/// ```
/// use std::sync::Mutex;
/// use lockkit_core::sync::lock;
///
/// let seen = Mutex::new(Vec::new());
/// lock(&seen).push("orders");
/// assert_eq!(lock(&seen).len(), 1);
/// ```
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
