//! Waiting for a held lock, written once for every driver.
//!
//! A driver supplies a [`Contender`]: one [`attempt`](Contender::attempt) that
//! grants, says the lock is [`Busy`] (and what to wait for: a backend's wake-up, a
//! time to try again), or reports a [`Transient`](Attempt::Transient) failure; and
//! a [`give_up`](Contender::give_up) that undoes what attempts left behind.
//! [`wait_for_grant`] owns the rest, the same for every backend: the wait's
//! deadline ([`crate::Wait`]), cancellation, the fallback poll with jittered
//! backoff when no wake-up comes, and patience with transient failures
//! ([`WaitPolicy`]). (DistributedLock keeps this in one `BusyWaitHelper` too.)
//!
//! # Examples
//!
//! A contender over an in-process flag, woken by a [`tokio::sync::Notify`]:
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::time::Duration;
//! use lockkit::driver::{AcquireRequest, Attempt, Busy, Contender, Grant, Wait, WaitPolicy, wait_for_grant};
//! use lockkit::{FencingToken, LockError, LockKey, OwnerId};
//! use tokio::sync::Notify;
//! use tokio::time::Instant;
//!
//! struct Flag<'a> { req: &'a AcquireRequest, taken: Arc<AtomicBool>, freed: Arc<Notify> }
//!
//! #[lockkit::driver::async_trait]
//! impl Contender for Flag<'_> {
//!     async fn attempt(&mut self) -> Result<Attempt, LockError> {
//!         if self.taken.swap(true, Ordering::SeqCst) {
//!             let freed = self.freed.clone();
//!             return Ok(Attempt::Busy(Busy::woken_by(async move {
//!                 freed.notified().await;
//!                 Ok(())
//!             })));
//!         }
//!         let deadline = Instant::now() + self.req.ttl;
//!         Ok(Attempt::Granted(Grant::of(self.req, FencingToken(1), deadline)))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), LockError> {
//! let taken = Arc::new(AtomicBool::new(true)); // someone holds it
//! let freed = Arc::new(Notify::new());
//! let req = AcquireRequest::new(LockKey::new("k")?, OwnerId::new(), Duration::from_secs(1), Wait::at_most(Duration::from_secs(5)));
//! let (t, f) = (taken.clone(), freed.clone());
//! tokio::spawn(async move { t.store(false, Ordering::SeqCst); f.notify_one(); });
//! let grant = wait_for_grant(&req, &WaitPolicy::default(), &mut Flag { req: &req, taken, freed }).await?;
//! assert_eq!(grant.token, FencingToken(1));
//! # Ok(()) }
//! ```

mod attempt;
mod backoff;
mod engine;
mod key_wakers;
mod policy;
mod wake_health;

pub use attempt::{Attempt, Busy, Contender, Wake};
pub use backoff::{Backoff, Jitter, Pauses};
pub use engine::wait_for_grant;
pub use key_wakers::KeyWakers;
pub use policy::{Patience, WaitPolicy};
pub use wake_health::WakeUpHealth;
