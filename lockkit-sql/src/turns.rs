//! Turns: the order in which a lease table's waiters take a key, so that neither
//! the readers nor the writers of a read-write lock starve, and a fair request
//! is served in arrival order.
//!
//! A waiting acquire queues a row in `<table>_queue` after its first refused
//! attempt: the key, the waiter (its owner id), its mode, its place (`since`,
//! one more than the key's last), and an expiry it pushes out every
//! [`REFRESH`] while it waits ([`LIFETIME`]). A grant or a give-up deletes the
//! row; a waiter that died is skipped once its row lapses.
//!
//! Whom a request lets go first ([`must_wait`]), among the live rows *ahead* of
//! it (queued before its own, or every row for a request not queued):
//!
//! - a read hold: every writer, so a stream of readers cannot keep a queued
//!   writer out: a writer waits at most for the readers in before it;
//! - a write hold: every reader, so a line of writers cannot keep a queued
//!   reader out;
//! - a fair request ([`lockkit_core::LockRequest::fair`]): everyone;
//! - a permit: no one by default; a fair permit, every waiter that is not a
//!   permit waiter, and the permit waiters that fill the free permits.
//!
//! The exclusive path is one statement on the key row, so each database writes
//! the write hold's rule into it as SQL: a write hold that takes a key over may
//! not pass a live reader's row queued ahead of it, nor, when fair, anyone's.

use std::future::Future;
use std::time::Duration;

use lockkit_core::driver::Admission;
use lockkit_core::{AcquireRequest, LockMode};

use crate::mode_names::mode_name;

/// How long a waiter's row lives unless the waiter pushes it out.
pub(crate) const LIFETIME: Duration = Duration::from_secs(2);

/// How often a waiter pushes its row out.
pub(crate) const REFRESH: Duration = Duration::from_millis(600);

/// A live row of a key's queue: waiter, mode, place. Read in queue order.
pub(crate) type QueueRow = (String, String, i64);

/// The admission of a shared hold or permit ([`lockkit_core::driver::admit`]),
/// as its turn lets it stand: an admitted request that must let a waiter go
/// first ([`must_wait`]) waits. `queue` reads the key's live queue, in the
/// transaction that decides; it is read only for an admitted request.
pub(crate) async fn in_turn<F, Fut, E>(
    admission: Admission,
    req: &AcquireRequest,
    permits_held: usize,
    queue: F,
) -> Result<Admission, E>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Vec<QueueRow>, E>>,
{
    Ok(match admission {
        Admission::Admit if must_wait(req, &queue().await?, permits_held) => Admission::Wait,
        other => other,
    })
}

/// Whether `req` must let a waiter in `queue` go first, `permits_held` being the
/// permits of the key held now (for a permit request).
pub(crate) fn must_wait(req: &AcquireRequest, queue: &[QueueRow], permits_held: usize) -> bool {
    let me = req.owner.to_hex();
    let mine = queue.iter().position(|(waiter, _, _)| *waiter == me);
    let ahead = &queue[..mine.unwrap_or(queue.len())];
    let shared = mode_name(LockMode::Shared);
    let permit = mode_name(LockMode::Permit { limit: 1 });
    match req.mode {
        LockMode::Permit { limit } => {
            if !req.fair {
                return false;
            }
            let permits = ahead.iter().filter(|(_, m, _)| m == permit).count();
            permits < ahead.len() || permits_held + permits >= limit as usize
        }
        _ if req.fair => !ahead.is_empty(),
        LockMode::Shared => ahead.iter().any(|(_, m, _)| m != shared),
        _ => ahead.iter().any(|(_, m, _)| m == shared),
    }
}

#[cfg(test)]
mod tests {
    use lockkit_core::{LockKey, OwnerId, Wait};

    use super::*;

    fn req(mode: LockMode, fair: bool) -> AcquireRequest {
        let mut req = AcquireRequest::new(
            LockKey::new("k").unwrap(),
            OwnerId::new(),
            Duration::from_secs(1),
            Wait::Forever,
        )
        .with_mode(mode);
        req.fair = fair;
        req
    }

    fn row(waiter: &str, mode: LockMode, since: i64) -> QueueRow {
        (waiter.into(), mode_name(mode).into(), since)
    }

    #[test]
    fn readers_wait_for_writers_ahead_and_writers_for_readers_ahead() {
        let (shared, exclusive) = (LockMode::Shared, LockMode::Exclusive);
        let writer_queued = [row("w", exclusive, 1)];
        assert!(must_wait(&req(shared, false), &writer_queued, 0));
        assert!(!must_wait(&req(exclusive, false), &writer_queued, 0));
        assert!(must_wait(&req(exclusive, true), &writer_queued, 0));

        let reader_queued = [row("r", shared, 1)];
        assert!(must_wait(&req(exclusive, false), &reader_queued, 0));
        assert!(!must_wait(&req(shared, false), &reader_queued, 0));

        // Queued ahead of the others: nobody ahead.
        let first = req(exclusive, true);
        let queue = [
            row(&first.owner.to_hex(), exclusive, 1),
            row("r", shared, 2),
        ];
        assert!(!must_wait(&first, &queue, 0));
    }

    #[test]
    fn a_fair_permit_lets_the_permits_ahead_fill_the_free_ones() {
        let permit = LockMode::Permit { limit: 3 };
        let queue = [row("p", permit, 1)];
        assert!(!must_wait(&req(permit, false), &queue, 2));
        assert!(!must_wait(&req(permit, true), &queue, 1));
        assert!(must_wait(&req(permit, true), &queue, 2));
        let writer = [row("w", LockMode::Exclusive, 1)];
        assert!(must_wait(&req(permit, true), &writer, 0));
    }
}
