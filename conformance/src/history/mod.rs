//! Recorded histories of lock use, and the checker that judges them.
//!
//! This is the evidence behind lockkit's safety claims. Several clients (tasks, each
//! with its own driver and connections, as if from separate processes) run the loop
//! an application runs: acquire, a fenced write to a shared resource, hold a while,
//! a second fenced write, release. A [`Recorder`] keeps every operation with its
//! invoke and complete times on the monotonic clock; the [`FencedResource`] orders
//! every write it sees. A nemesis (a paused or killed holder, a paused, killed or
//! partitioned server) runs meanwhile. [`check`] then decides, from the history
//! alone:
//!
//! - **(a) stale writes**: a write whose grant is older than a grant that has
//!   already written to the resource. Rejected is fencing doing its job; accepted is
//!   a safety violation.
//! - **(b) token order**: across grants, in the order they were granted, tokens
//!   strictly increase (concurrent readers and permits may return out of order).
//! - **(c) exclusion**: the intervals in which clients *knew* they held the lock
//!   never overlap, except readers' with readers' and permits' with permits' (see
//!   [`check`] for why this check is sound and complete);
//! - **(d) the permit limit**: never more permits known held at once than the
//!   semaphore's limit.
//!
//! Workers write without checking [`LockGuard::is_lost`](lockkit_core::LockGuard)
//! first, like an application stalled between its check and its write: fencing
//! must catch them.
//!
//! # Examples
//!
//! A history recorded by hand: a holder stalls past its lease and writes after its
//! successor has.
//!
//! ```
//! use std::time::Duration;
//! use lockkit_conformance::history::{FencedResource, Recorder, check};
//! use tokio::time::Instant;
//!
//! let recorder = Recorder::new();
//! let resource = FencedResource::new(recorder.clone());
//! let t0 = Instant::now();
//! let old = recorder.grant(0, 1, t0, t0); // client 0, token 1
//! recorder.held_until(old, t0 + Duration::from_millis(10)); // its lease ran out
//! let t1 = t0 + Duration::from_millis(20);
//! let new = recorder.grant(1, 2, t1, t1); // client 1, token 2
//! assert!(resource.write(new, 2));
//! assert!(!resource.write(old, 1)); // the stalled holder's late write: refused
//! let verdict = check(&recorder.history());
//! assert_eq!((verdict.grants, verdict.writes, verdict.stale_rejected), (2, 2, 1));
//! assert!(verdict.is_safe());
//! ```

mod checker;
mod record;
mod resource;
mod rules;
mod workload;

pub use checker::{Verdict, check};
pub use record::{Failure, GrantId, GrantRecord, History, Recorder, WriteRecord};
pub use resource::FencedResource;
pub use workload::{DEFAULT_HOLD, Primitive, Running, Workload};
