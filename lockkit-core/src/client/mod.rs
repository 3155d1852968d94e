//! The client machinery, written once over [`crate::LockDriver`]: reentrancy, the
//! watchdog, the lost signal, release on drop and cancellation safety — for every
//! mode: locks, read-write locks and semaphore permits.

mod acquire;
mod at_once;
mod election;
mod guard;
mod hold;
mod job;
mod label;
mod leadership;
mod locker;
mod lost;
pub mod metrics;
mod multi;
mod observe;
mod pending;
mod registry;
mod release;
mod request;
mod semaphore;
mod watchdog;

pub use election::{Election, Leader};
pub use guard::LockGuard;
pub use hold::LostReason;
pub use job::{DEFAULT_JOB_AT_MOST_FOR, Job, JobRun};
pub use label::default_label;
pub use leadership::Leadership;
pub use locker::{DEFAULT_WATCHDOG_TTL, Locker};
pub use multi::{MultiLockGuard, MultiLockRequest};
pub use observe::{DEFAULT_OBSERVE_INTERVAL, Observer};
pub use request::LockRequest;
pub use semaphore::Semaphore;
