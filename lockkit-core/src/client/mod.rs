//! The client machinery, written once over [`crate::LockDriver`]: reentrancy, the
//! watchdog, the lost signal, release on drop and cancellation safety — for every
//! mode: locks, read-write locks and semaphore permits.

mod acquire;
mod guard;
mod hold;
mod label;
mod locker;
mod lost;
mod pending;
mod registry;
mod request;
mod semaphore;
mod watchdog;

pub use guard::LockGuard;
pub use hold::LostReason;
pub use label::default_label;
pub use locker::{DEFAULT_WATCHDOG_TTL, Locker};
pub use request::LockRequest;
pub use semaphore::Semaphore;
