#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Waker};

use tokio::sync::Notify;

use super::Wakeups;

/// A wake-up armed now, so that one that comes before it is polled counts.
fn armed(notify: Arc<Notify>) -> impl Future<Output = ()> + Unpin {
    let mut woken = Box::pin(notify.notified_owned());
    woken.as_mut().enable();
    woken
}

/// Whether `woken` has been woken.
fn rung(mut woken: impl Future<Output = ()> + Unpin) -> bool {
    Pin::new(&mut woken)
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_ready()
}

#[test]
fn a_payload_naming_a_waiter_wakes_it_and_the_observers_only() {
    let wakeups = Wakeups::default();
    let observer = armed(wakeups.all.notify("stock"));
    let first = armed(wakeups.named.notify("a1"));
    let second = armed(wakeups.named.notify("b2"));
    let other_key = armed(wakeups.queued.notify("stock"));

    wakeups.route("stock\u{1f}a1");

    assert!(rung(observer));
    assert!(rung(first));
    assert!(!rung(second));
    assert!(!rung(other_key));
}

#[test]
fn a_payload_naming_no_waiter_wakes_every_waiter_of_its_key() {
    let wakeups = Wakeups::default();
    let observer = armed(wakeups.all.notify("stock"));
    let queued = armed(wakeups.queued.notify("stock"));
    let elsewhere = armed(wakeups.queued.notify("other"));
    let named = armed(wakeups.named.notify("a1"));

    wakeups.route("stock");

    assert!(rung(observer));
    assert!(rung(queued));
    assert!(!rung(elsewhere));
    assert!(!rung(named));
}

#[test]
fn waking_all_wakes_every_queued_waiter() {
    let wakeups = Wakeups::default();
    let named = armed(wakeups.named.notify("a1"));
    let queued = armed(wakeups.queued.notify("stock"));

    wakeups.wake_all();

    assert!(rung(named));
    assert!(rung(queued));
}
