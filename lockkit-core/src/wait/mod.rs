//! Waiting for a held lock, written once for every driver.
//!
//! An acquire runs strictly downward: [`crate::Locker`] → [`acquire`] (the
//! engine) → the driver's [`Contender`] → the wire. The engine refuses what no
//! driver is asked for (a mode the driver lacks, a semaphore of no permits),
//! then asks the driver to [`contend`](crate::LockDriver::contend): the driver
//! answers with a [`Contention`], its [`Contender`] and the [`WaitPolicy`] that
//! paces it. A contender makes one [`attempt`](Contender::attempt) at a time:
//! it grants, says the lock is [`Busy`] (and what to wait for: a backend's
//! wake-up, a time to try again), or reports a [`Transient`](Attempt::Transient)
//! failure; its [`give_up`](Contender::give_up) undoes what attempts left
//! behind. The engine owns the rest, the same for every backend: the wait's
//! deadline ([`crate::Wait`]), cancellation, the fallback poll with jittered
//! backoff when no wake-up comes, and patience with transient failures.
//! (DistributedLock keeps this in one `BusyWaitHelper` too.)
//!
//! # Examples
//!
//! A driver over an in-process flag, whose waiters a [`tokio::sync::Notify`]
//! wakes:
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::time::Duration;
//! use lockkit::driver::{
//!     AcquireRequest, Attempt, Busy, Capabilities, Contender, Contention, Grant, LockDriver,
//!     Wait, acquire, async_trait,
//! };
//! use lockkit::{FencingToken, LockError, LockKey, OwnerId};
//! use tokio::sync::Notify;
//! use tokio::time::Instant;
//!
//! #[derive(Debug, Default)]
//! struct Flag { taken: AtomicBool, freed: Arc<Notify> }
//!
//! /// One acquire of the flag.
//! struct Taking<'a> { flag: &'a Flag, req: &'a AcquireRequest }
//!
//! #[async_trait]
//! impl Contender for Taking<'_> {
//!     async fn attempt(&mut self) -> Result<Attempt, LockError> {
//!         // Armed before the attempt: a release while it runs is not missed.
//!         let mut freed = Box::pin(self.flag.freed.clone().notified_owned());
//!         freed.as_mut().enable();
//!         if self.flag.taken.swap(true, Ordering::SeqCst) {
//!             return Ok(Attempt::Busy(Busy::woken_by(async move {
//!                 freed.await;
//!                 Ok(())
//!             })));
//!         }
//!         let deadline = Instant::now() + self.req.ttl;
//!         Ok(Attempt::Granted(Grant::of(self.req, FencingToken(1), deadline)))
//!     }
//! }
//!
//! #[async_trait]
//! impl LockDriver for Flag {
//!     fn name(&self) -> &'static str { "flag" }
//!     fn capabilities(&self) -> Capabilities { Capabilities::baseline() }
//!     async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>, LockError> {
//!         Ok(Contention::new(Taking { flag: self, req }))
//!     }
//!     async fn extend(&self, _: &LockKey, _: &OwnerId, ttl: Duration) -> Result<Instant, LockError> {
//!         Ok(Instant::now() + ttl)
//!     }
//!     async fn release(&self, _: &LockKey, _: &OwnerId) -> Result<bool, LockError> {
//!         self.free();
//!         Ok(true)
//!     }
//! }
//!
//! impl Flag {
//!     fn free(&self) {
//!         self.taken.store(false, Ordering::SeqCst);
//!         self.freed.notify_waiters();
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), LockError> {
//! let flag = Arc::new(Flag { taken: AtomicBool::new(true), ..Flag::default() }); // someone holds it
//! let req = AcquireRequest::new(LockKey::new("k")?, OwnerId::new(), Duration::from_secs(1), Wait::at_most(Duration::from_secs(5)));
//! let releaser = flag.clone();
//! tokio::spawn(async move { releaser.free() });
//! let grant = acquire(&*flag, &req).await?;
//! assert_eq!(grant.token, FencingToken(1));
//! # Ok(()) }
//! ```

mod attempt;
mod backoff;
mod contention;
mod engine;
mod key_wakers;
mod policy;
mod wake_health;

pub use attempt::{Attempt, Busy, Contender, Wake};
pub use backoff::{Backoff, Jitter, Pauses};
pub(crate) use contention::refuse_impossible;
pub use contention::{Contention, acquire};
pub use key_wakers::KeyWakers;
pub use policy::{Patience, WaitPolicy};
pub use wake_health::WakeUpHealth;
