//! [`WaitPolicy`]: how a driver's waits poll and how patient they are.

use std::time::Duration;

use super::backoff::{Backoff, Jitter};

/// How the engine ([`crate::driver::acquire`]) paces one driver's waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WaitPolicy {
    /// Pauses between attempts when a [`super::Busy`] names no time to try again
    /// (a wake-up may come first).
    pub poll: Backoff,
    /// How transient failures are retried.
    pub transient: Patience,
}

impl Default for WaitPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl WaitPolicy {
    /// Polls from 2 ms doubling to 100 ms, spread; retries transient failures
    /// as [`Patience::DEFAULT`].
    pub const DEFAULT: Self = Self {
        poll: Backoff::new(
            Duration::from_millis(2),
            Duration::from_millis(100),
            Jitter::Spread,
        ),
        transient: Patience::DEFAULT,
    };

    /// With polls of `poll`.
    pub const fn with_poll(mut self, poll: Backoff) -> Self {
        self.poll = poll;
        self
    }

    /// With `transient` patience.
    pub const fn with_transient(mut self, transient: Patience) -> Self {
        self.transient = transient;
        self
    }
}

/// How long transient failures are retried before their error ends the acquire.
///
/// A run of consecutive transient failures is measured from its first; a busy
/// attempt ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Patience {
    /// For an acquire that does not wait (`try_lock`): retry for this long from its
    /// start (zero: not at all).
    pub no_wait: Duration,
    /// For a wait with a deadline: the longest run retried; `None`: until the
    /// deadline.
    pub with_deadline: Option<Duration>,
    /// For a wait without a deadline: the longest run retried; `None`: for ever.
    pub forever: Option<Duration>,
    /// The pauses between retries, growing over the whole acquire.
    pub backoff: Backoff,
}

impl Default for Patience {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl Patience {
    /// Retries until the wait's deadline, for ever without one, not at all for a
    /// `try_lock`; pausing 20 ms doubling to 500 ms.
    pub const DEFAULT: Self = Self {
        no_wait: Duration::ZERO,
        with_deadline: None,
        forever: None,
        backoff: Backoff::new(
            Duration::from_millis(20),
            Duration::from_millis(500),
            Jitter::None,
        ),
    };

    /// Retries a `try_lock` for `no_wait`.
    pub const fn with_no_wait(mut self, no_wait: Duration) -> Self {
        self.no_wait = no_wait;
        self
    }

    /// Gives up a wait (with or without a deadline) after `run` of unbroken
    /// transient failures.
    pub const fn with_longest_run(mut self, run: Duration) -> Self {
        self.with_deadline = Some(run);
        self.forever = Some(run);
        self
    }

    /// Gives up a wait without a deadline after `run` of unbroken transient
    /// failures (a wait with one retries until it).
    pub const fn with_longest_endless_run(mut self, run: Duration) -> Self {
        self.forever = Some(run);
        self
    }

    /// Pauses between retries as `backoff` says.
    pub const fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }
}
