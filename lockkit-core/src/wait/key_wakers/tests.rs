#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;
use tokio::sync::Notify;
use tokio::sync::futures::OwnedNotified;

use super::KeyWakers;

/// A registered wait on `notify`, as a waiter arms it before its attempt.
fn armed(notify: &Arc<Notify>) -> Pin<Box<OwnedNotified>> {
    let mut waiting = Box::pin(notify.clone().notified_owned());
    waiting.as_mut().enable();
    waiting
}

#[test]
fn a_wake_reaches_the_waiters_of_its_key_only() {
    let wakers = KeyWakers::default();
    let (a, b) = (wakers.notify("a"), wakers.notify("b"));
    let (mut first_a, mut second_a, mut on_b) = (armed(&a), armed(&wakers.notify("a")), armed(&b));

    wakers.wake("a");

    assert!((&mut first_a).now_or_never().is_some());
    assert!((&mut second_a).now_or_never().is_some());
    assert!(
        (&mut on_b).now_or_never().is_none(),
        "b was woken by a's wake-up"
    );
}

#[test]
fn wake_all_reaches_every_key() {
    let wakers = KeyWakers::default();
    let (a, b) = (wakers.notify("a"), wakers.notify("b"));
    let (mut on_a, mut on_b) = (armed(&a), armed(&b));

    wakers.wake_all();

    assert!((&mut on_a).now_or_never().is_some());
    assert!((&mut on_b).now_or_never().is_some());
}

#[test]
fn a_key_nobody_waits_on_wakes_nobody() {
    let wakers = KeyWakers::default();
    let a = wakers.notify("a");
    let mut on_a = armed(&a);

    wakers.wake("never-waited-on");

    assert!((&mut on_a).now_or_never().is_none());
}

#[test]
fn keys_nobody_waits_on_any_more_are_swept() {
    let wakers = KeyWakers::default();
    let kept = wakers.notify("kept");
    for i in 0..10_000 {
        drop(wakers.notify(&format!("gone-{i}")));
    }
    let entries = wakers.keys().by_key.len();
    assert!(entries <= 128, "{entries} entries kept");
    // The live key survived every sweep, with the same wake-up.
    assert!(Arc::ptr_eq(&kept, &wakers.notify("kept")));
}
