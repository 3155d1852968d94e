//! [`admit`]: whether a request may join a key's holders — the mode rules, written
//! once for the drivers that keep holders in a table or a map (mem, SQL).

use super::request::{AcquireRequest, LockMode};
use crate::error::LockError;
use crate::types::FencingToken;

/// One live hold of a key, as a driver keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    /// The holder's [`crate::OwnerId::as_u128`].
    pub owner: u128,
    /// Its mode.
    pub mode: LockMode,
    /// Its token.
    pub token: FencingToken,
}

/// What [`admit`] decides.
#[derive(Debug)]
pub enum Admission {
    /// The owner already holds the key in a mode that covers the request: grant
    /// again with this token (and refresh the lease).
    Reenter(FencingToken),
    /// Grant, with the key's next token.
    Admit,
    /// Someone holds (or waits ahead) in a way the request must wait for.
    Wait,
    /// The request can never be granted as it stands: a permit whose limit differs
    /// from the holders' ([`LockError::Config`]), an upgrade of a shared hold
    /// ([`LockError::Unsupported`]), a mode of another family than the owner's hold.
    Refuse(LockError),
}

/// How many holds of `mode` a key admits at once.
fn capacity(mode: LockMode) -> usize {
    match mode {
        LockMode::Exclusive => 1,
        LockMode::Shared => usize::MAX,
        LockMode::Permit { limit } => limit as usize,
    }
}

/// Whether `req` may be granted beside the live `holders`, behind the modes of the
/// waiters queued `ahead` of it (first come, first served: a request never overtakes
/// a waiter it is incompatible with, and queued permits count against the limit).
/// A driver that does not order waiters passes no `ahead`. `driver` is named in an
/// [`LockError::Unsupported`].
///
/// # Examples
///
/// ```
/// use lockkit::driver::{AcquireRequest, Admission, Hold, Wait, admit};
/// use lockkit::{FencingToken, LockKey, LockMode, OwnerId};
/// use std::time::Duration;
///
/// let reader = |n| Hold { owner: n, mode: LockMode::Shared, token: FencingToken(n as u64) };
/// let req = AcquireRequest::new(LockKey::new("k")?, OwnerId::new(), Duration::from_secs(5), Wait::NoWait);
/// let read = req.clone().with_mode(LockMode::Shared);
/// assert!(matches!(admit("mem", &read, &[reader(1), reader(2)], []), Admission::Admit));
/// assert!(matches!(admit("mem", &req, &[reader(1)], []), Admission::Wait));
/// // A reader does not overtake a queued writer.
/// assert!(matches!(admit("mem", &read, &[reader(1)], [LockMode::Exclusive]), Admission::Wait));
/// # Ok::<(), lockkit::LockError>(())
/// ```
pub fn admit(
    driver: &'static str,
    req: &AcquireRequest,
    holders: &[Hold],
    ahead: impl IntoIterator<Item = LockMode>,
) -> Admission {
    if req.mode.limit() == Some(0) {
        return Admission::Refuse(LockError::Config(format!(
            "semaphore `{}`: a limit of 0 permits can never be granted",
            req.key
        )));
    }
    let me = req.owner.as_u128();
    if let Some(own) = holders.iter().find(|h| h.owner == me) {
        return reenter(driver, req, own);
    }
    if let Some(limit) = req.mode.limit()
        && let Some(other) = holders
            .iter()
            .find_map(|h| h.mode.limit().filter(|l| *l != limit))
    {
        return Admission::Refuse(limit_mismatch(req, other, limit));
    }
    if has_room(req.mode, holders.iter().map(|h| h.mode).chain(ahead)) {
        Admission::Admit
    } else {
        Admission::Wait
    }
}

/// Whether a hold of `mode` fits beside `taken` — the modes of the holders and of
/// the waiters ahead of it: it is compatible with each, and their number leaves
/// room (1 for exclusive, `limit` for a permit, any for shared).
pub fn has_room(mode: LockMode, taken: impl IntoIterator<Item = LockMode>) -> bool {
    let mut count = 0usize;
    for other in taken {
        if !mode.compatible_with(other) {
            return false;
        }
        count += 1;
    }
    count < capacity(mode)
}

/// The error for a permit of `limit` when holders use `theirs`.
pub fn limit_mismatch(req: &AcquireRequest, theirs: u32, limit: u32) -> LockError {
    LockError::Config(format!(
        "semaphore `{}` is held with a limit of {theirs} permits; this request says {limit} \
         (every user of a semaphore must give the same limit)",
        req.key
    ))
}

/// The error for `req` when the backend refused it because its owner already holds
/// the key in `held`: the same rule, and message, as [`admit`], for drivers that
/// find the owner's own hold by name rather than in a list of holders (an upgrade
/// of a read hold is [`LockError::Unsupported`], a mode of another family or a
/// permit of another limit [`LockError::Config`]).
///
/// # Examples
///
/// ```
/// use lockkit_core::driver::{AcquireRequest, Wait, refuse_reentry};
/// use lockkit::{LockError, LockKey, LockMode, OwnerId};
/// use std::time::Duration;
///
/// let write = AcquireRequest::new(LockKey::new("k")?, OwnerId::new(), Duration::from_secs(5), Wait::NoWait);
/// let upgrade = refuse_reentry("etcd", &write, LockMode::Shared);
/// assert!(matches!(upgrade, LockError::Unsupported { .. }));
/// # Ok::<(), lockkit::LockError>(())
/// ```
pub fn refuse_reentry(driver: &'static str, req: &AcquireRequest, held: LockMode) -> LockError {
    let own = Hold {
        owner: req.owner.as_u128(),
        mode: held,
        token: FencingToken(0),
    };
    match reenter(driver, req, &own) {
        Admission::Refuse(e) => e,
        _ => LockError::Config(format!(
            "`{}` is held by this owner as {held}; it cannot also be taken as {}",
            req.key, req.mode
        )),
    }
}

fn reenter(driver: &'static str, req: &AcquireRequest, own: &Hold) -> Admission {
    match (own.mode, req.mode) {
        (held, asked) if held == asked => Admission::Reenter(own.token),
        // The write hold covers reading.
        (LockMode::Exclusive, LockMode::Shared) => Admission::Reenter(own.token),
        (LockMode::Shared, LockMode::Exclusive) => Admission::Refuse(LockError::Unsupported {
            driver,
            capability: "upgrading a read hold to a write hold (release the read hold first)",
        }),
        (LockMode::Permit { limit: theirs }, LockMode::Permit { limit }) => {
            Admission::Refuse(limit_mismatch(req, theirs, limit))
        }
        (held, asked) => Admission::Refuse(LockError::Config(format!(
            "`{}` is held by this owner as {held}; it cannot also be taken as {asked}",
            req.key
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::driver::Wait;
    use crate::types::{LockKey, OwnerId};

    fn req(mode: LockMode) -> AcquireRequest {
        let key = LockKey::new("k").unwrap();
        AcquireRequest::new(key, OwnerId::new(), Duration::from_secs(1), Wait::NoWait)
            .with_mode(mode)
    }

    fn held(owner: u128, mode: LockMode) -> Hold {
        Hold {
            owner,
            mode,
            token: FencingToken(owner as u64),
        }
    }

    const PERMIT2: LockMode = LockMode::Permit { limit: 2 };

    #[test]
    fn permits_are_admitted_up_to_the_limit_counting_those_queued_ahead() {
        let r = req(PERMIT2);
        assert!(matches!(
            admit("test", &r, &[held(1, PERMIT2)], []),
            Admission::Admit
        ));
        assert!(matches!(
            admit("test", &r, &[held(1, PERMIT2)], [PERMIT2]),
            Admission::Wait
        ));
        assert!(matches!(
            admit("test", &r, &[held(1, PERMIT2), held(2, PERMIT2)], []),
            Admission::Wait
        ));
    }

    #[test]
    fn a_permit_with_another_limit_is_refused_with_config() {
        let r = req(LockMode::Permit { limit: 3 });
        let Admission::Refuse(e) = admit("test", &r, &[held(1, PERMIT2)], []) else {
            panic!("a limit mismatch was not refused");
        };
        assert!(matches!(e, LockError::Config(_)));
        assert!(e.to_string().contains("limit of 2"), "{e}");
    }

    #[test]
    fn an_owner_reenters_its_mode_and_reads_under_its_write_hold() {
        let r = req(LockMode::Shared);
        let me = r.owner.as_u128();
        let write = held(me, LockMode::Exclusive);
        assert!(
            matches!(admit("test", &r, &[write], []), Admission::Reenter(t) if t == write.token)
        );
        let w = AcquireRequest {
            mode: LockMode::Exclusive,
            ..r
        };
        let read = held(me, LockMode::Shared);
        assert!(matches!(
            admit("test", &w, &[read], []),
            Admission::Refuse(LockError::Unsupported { .. })
        ));
    }

    #[test]
    fn exclusive_waits_for_any_holder_or_anyone_ahead() {
        let r = req(LockMode::Exclusive);
        assert!(matches!(admit("test", &r, &[], []), Admission::Admit));
        assert!(matches!(
            admit("test", &r, &[], [LockMode::Shared]),
            Admission::Wait
        ));
        assert!(matches!(
            admit("test", &r, &[held(1, LockMode::Shared)], []),
            Admission::Wait
        ));
        assert!(matches!(
            admit("test", &req(LockMode::Permit { limit: 0 }), &[], []),
            Admission::Refuse(LockError::Config(_))
        ));
    }
}
