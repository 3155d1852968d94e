//! What a driver can do: [`Capabilities`].

use super::request::LockMode;

/// How waiters learn that a lock was released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WakeUp {
    /// The backend notifies (in-process notify, pub/sub, watch, LISTEN/NOTIFY…).
    Notify,
    /// Waiters poll with jittered backoff.
    Poll,
}

/// What [`crate::LockDriver::inspect`] can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Inspect {
    /// Nothing: inspection is refused with [`crate::LockError::Unsupported`].
    No,
    /// Who holds a key (mode, token, lease, label).
    Holders,
    /// Who holds a key, and how many wait for it.
    HoldersAndWaiters,
}

/// What a driver can do; the conformance suite runs the cases its capabilities
/// call for, and skips the others saying why.
///
/// Every driver grants exclusive holds with a fencing token, recognises its own
/// owner's repeated acquire, and renews; those are the contract, not capabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Shared (read) holds: read-write locks ([`LockMode::Shared`]).
    pub shared: bool,
    /// Permits of counting semaphores ([`LockMode::Permit`]).
    pub permits: bool,
    /// What inspection reports.
    pub inspect: Inspect,
    /// Waiters are served first-come first-served, always.
    pub fair: bool,
    /// A request made [`fair`](crate::LockRequest::fair) is served in arrival
    /// order among the key's waiters, where waiting is not fair by default. A
    /// request that is not fair may still take a free key ahead of them: a key is
    /// fair when every user of it asks for fairness.
    pub fair_on_request: bool,
    /// Holds are visible to other processes (false for the in-process `mem` driver).
    pub cross_process: bool,
    /// A hold the holder stops renewing expires on the backend after its TTL (false
    /// for session-bound locks, which last exactly as long as the holder's session).
    pub lease_expiry: bool,
    /// How waiters are woken.
    pub wake_up: WakeUp,
    /// A holder can replace the value stored with its hold
    /// ([`crate::LockDriver::proclaim`]): an election leader's `proclaim`.
    pub proclaim: bool,
    /// Held locks can be listed by name prefix ([`crate::LockDriver::list`]).
    pub list: bool,
    /// The backend signals changes to a key's holders ([`crate::LockDriver::watch`]):
    /// election observers wake on it instead of waiting their interval.
    pub watch: bool,
    /// The backend also locks inside the application's own database
    /// transaction, held until it commits or rolls back (the SQL backends'
    /// `TransactionLocks`): no lease runs out under a holder whose writes go to
    /// the same database.
    pub transaction_locks: bool,
    /// Exclusive holds of several free keys are taken in one request to the
    /// backend, all or none ([`crate::LockDriver::try_acquire_all`]): what
    /// [`crate::Locker::lock_all`] tries first. Elsewhere, and whenever a key is
    /// held, it takes the keys one by one in their order.
    pub several_keys_at_once: bool,
}

impl Capabilities {
    /// Exclusive holds only, no inspection, unfair, across processes, expiring,
    /// polling waiters: the least a driver offers.
    pub const fn baseline() -> Self {
        Self {
            shared: false,
            permits: false,
            inspect: Inspect::No,
            fair: false,
            fair_on_request: false,
            cross_process: true,
            lease_expiry: true,
            wake_up: WakeUp::Poll,
            proclaim: false,
            list: false,
            watch: false,
            transaction_locks: false,
            several_keys_at_once: false,
        }
    }

    /// Whether requests in `mode` are granted.
    pub fn supports(&self, mode: LockMode) -> bool {
        match mode {
            LockMode::Exclusive => true,
            LockMode::Shared => self.shared,
            LockMode::Permit { .. } => self.permits,
        }
    }

    /// With (or without) shared holds.
    pub const fn with_shared(mut self, shared: bool) -> Self {
        self.shared = shared;
        self
    }

    /// With (or without) permits.
    pub const fn with_permits(mut self, permits: bool) -> Self {
        self.permits = permits;
        self
    }

    /// With inspection reporting `inspect`.
    pub const fn with_inspect(mut self, inspect: Inspect) -> Self {
        self.inspect = inspect;
        self
    }

    /// With (or without) [`crate::LockDriver::proclaim`].
    pub const fn with_proclaim(mut self, proclaim: bool) -> Self {
        self.proclaim = proclaim;
        self
    }

    /// With (or without) [`crate::LockDriver::list`].
    pub const fn with_list(mut self, list: bool) -> Self {
        self.list = list;
        self
    }

    /// With (or without) [`crate::LockDriver::watch`].
    pub const fn with_watch(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }

    /// With (or without) backend-side lease expiry.
    pub const fn with_lease_expiry(mut self, lease_expiry: bool) -> Self {
        self.lease_expiry = lease_expiry;
        self
    }

    /// With waiters woken as `wake_up` says.
    pub const fn with_wake_up(mut self, wake_up: WakeUp) -> Self {
        self.wake_up = wake_up;
        self
    }

    /// With (or without) first-come first-served waiters.
    pub const fn with_fair(mut self, fair: bool) -> Self {
        self.fair = fair;
        self
    }

    /// With (or without) fairness for the requests that ask for it.
    pub const fn with_fair_on_request(mut self, fair_on_request: bool) -> Self {
        self.fair_on_request = fair_on_request;
        self
    }

    /// With (or without) locks in the application's own transaction.
    pub const fn with_transaction_locks(mut self, transaction_locks: bool) -> Self {
        self.transaction_locks = transaction_locks;
        self
    }

    /// With (or without) [`crate::LockDriver::try_acquire_all`].
    pub const fn with_several_keys_at_once(mut self, at_once: bool) -> Self {
        self.several_keys_at_once = at_once;
        self
    }

    /// With holds visible to other processes, or not.
    pub const fn with_cross_process(mut self, cross_process: bool) -> Self {
        self.cross_process = cross_process;
        self
    }
}
