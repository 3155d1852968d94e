//! Elections between two blocking lockers, each on its own connection.

use std::thread;
use std::time::Duration;

use lockkit::blocking::Observer;
use lockkit::{Leader, LockError};

use super::locker;

const PATIENCE: Duration = Duration::from_secs(10);

/// The next leader `observer` sees that has a value (a hand-over may show nobody
/// in between).
fn next_leader(observer: &mut Observer) -> Leader {
    loop {
        if let Some(leader) = observer.changed_within(PATIENCE).unwrap() {
            return leader;
        }
    }
}

#[test]
fn one_of_two_candidates_leads_and_the_other_leads_after_it_resigns() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (locker(&dir), locker(&dir));
    let mut observer = a
        .election("scheduler")
        .observe()
        .interval(Duration::from_millis(20));
    assert_eq!(observer.changed().unwrap(), None, "nobody leads yet");

    let leading = a.election("scheduler").campaign("node-a").unwrap();
    assert_eq!(leading.value(), "node-a");
    let seen = next_leader(&mut observer);
    assert_eq!(
        (seen.term, seen.value.as_deref()),
        (leading.term(), Some("node-a"))
    );
    // Nothing changes while node-a leads.
    assert!(matches!(
        observer.changed_within(Duration::from_millis(100)),
        Err(LockError::Timeout { .. })
    ));

    // node-b waits its turn: in vain for 200 ms, then until node-a resigns.
    let election = b.election("scheduler");
    assert!(matches!(
        election.campaign_within("node-b", Duration::from_millis(200)),
        Err(LockError::Timeout { .. })
    ));
    let candidate = thread::spawn(move || election.campaign("node-b").unwrap());
    let first_term = leading.term();
    leading.resign().unwrap();
    let next = candidate.join().unwrap();
    assert!(
        next.term() > first_term,
        "{} after {first_term}",
        next.term()
    );

    let seen = next_leader(&mut observer);
    assert_eq!(
        (seen.term, seen.value.as_deref()),
        (next.term(), Some("node-b"))
    );
    let leader = a.election("scheduler").leader().unwrap().unwrap();
    assert_eq!(leader.term, next.term());
    next.resign().unwrap();
    assert_eq!(a.election("scheduler").leader().unwrap(), None);
}

#[test]
fn a_dropped_leadership_resigns_and_the_waiting_candidate_takes_over() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (locker(&dir), locker(&dir));
    let leading = a.election("primary").campaign("node-a").unwrap();
    let first_term = leading.term();
    let candidate = thread::spawn(move || {
        b.election("primary")
            .campaign_within("node-b", PATIENCE)
            .unwrap()
    });
    drop(leading); // resigned when drop returns
    let next = candidate.join().unwrap();
    assert!(next.term() > first_term);

    next.proclaim("node-b:8080").unwrap();
    let leader = a.election("primary").leader().unwrap().unwrap();
    assert_eq!(
        (leader.term, leader.value.as_deref()),
        (next.term(), Some("node-b:8080"))
    );
}
