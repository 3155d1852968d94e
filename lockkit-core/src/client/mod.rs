//! The client machinery, written once over [`crate::LockDriver`]: reentrancy, the
//! watchdog, the lost signal, release on drop and cancellation safety.

mod guard;
mod hold;
mod locker;
mod lost;
mod pending;
mod watchdog;

pub use guard::LockGuard;
pub use hold::LostReason;
pub use locker::{DEFAULT_WATCHDOG_TTL, LockRequest, Locker};
