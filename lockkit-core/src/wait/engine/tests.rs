use std::collections::VecDeque;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::*;
use crate::types::{FencingToken, LockKey, OwnerId};
use crate::wait::{Backoff, Jitter};

const MS: Duration = Duration::from_millis(1);

/// Answers from a script, recording when each attempt came and why it gave up.
struct Scripted {
    req: AcquireRequest,
    script: VecDeque<Step>,
    attempts: Vec<Duration>,
    start: Instant,
    gave_up: Vec<String>,
}

enum Step {
    Grant,
    Busy(Busy),
    /// Busy with no wake-up and no retry time: the poll decides.
    Poll,
    Transient,
    Fail,
}

impl Scripted {
    fn new(wait: Wait, script: impl IntoIterator<Item = Step>) -> Self {
        let key = LockKey::new("k").unwrap();
        Self {
            req: AcquireRequest::new(key, OwnerId::new(), Duration::from_secs(1), wait),
            script: script.into_iter().collect(),
            attempts: Vec::new(),
            start: Instant::now(),
            gave_up: Vec::new(),
        }
    }

    fn at_ms(&self) -> Vec<u128> {
        self.attempts.iter().map(Duration::as_millis).collect()
    }

    async fn run(&mut self, policy: &WaitPolicy) -> Result<Grant> {
        let req = self.req.clone();
        wait_for_grant(&req, "scripted", policy, self).await
    }
}

#[async_trait]
impl Contender for Scripted {
    async fn attempt(&mut self) -> Result<Attempt> {
        self.attempts.push(self.start.elapsed());
        match self.script.pop_front().unwrap_or(Step::Poll) {
            Step::Grant => Ok(Attempt::Granted(Grant::of(
                &self.req,
                FencingToken(1),
                Instant::now() + self.req.ttl,
            ))),
            Step::Busy(b) => Ok(Attempt::Busy(b)),
            Step::Poll => Ok(Attempt::Busy(Busy::poll())),
            Step::Transient => Ok(Attempt::Transient(LockError::Backend {
                driver: "scripted",
                message: "flapping".into(),
                source: None,
            })),
            Step::Fail => Err(LockError::Config("broken".into())),
        }
    }

    async fn give_up(&mut self, why: &LockError) {
        self.gave_up.push(why.to_string());
    }
}

fn steady_poll(every: Duration) -> WaitPolicy {
    WaitPolicy::default()
        .with_poll(Backoff::new(every, every, Jitter::None))
        .with_transient(Patience::DEFAULT.with_backoff(Backoff::new(every, every, Jitter::None)))
}

fn wait_ms(ms: u64) -> Wait {
    Wait::at_most(Duration::from_millis(ms))
}

#[tokio::test(start_paused = true)]
async fn a_wake_up_brings_the_next_attempt_at_once() {
    let woken_at = Duration::from_millis(30);
    let wake = Busy::woken_by(async move {
        tokio::time::sleep(woken_at).await;
        Ok(())
    });
    let mut c = Scripted::new(wait_ms(5_000), [Step::Busy(wake), Step::Grant]);
    c.run(&steady_poll(1_000 * MS)).await.unwrap();
    assert_eq!(c.at_ms(), [0, 30]);
    assert!(c.gave_up.is_empty());
}

#[tokio::test(start_paused = true)]
async fn no_wait_is_contended_after_one_busy_attempt_and_gives_up() {
    let mut c = Scripted::new(Wait::NoWait, [Step::Poll, Step::Grant]);
    let e = c.run(&steady_poll(10 * MS)).await.unwrap_err();
    assert!(matches!(e, LockError::Contended { .. }), "{e:?}");
    assert_eq!(c.at_ms(), [0]);
    assert_eq!(c.gave_up.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn polls_until_the_deadline_then_times_out_with_one_last_attempt() {
    let mut c = Scripted::new(wait_ms(35), []);
    let e = c.run(&steady_poll(10 * MS)).await.unwrap_err();
    assert!(matches!(e, LockError::Timeout { .. }), "{e:?}");
    assert_eq!(c.at_ms(), [0, 10, 20, 30, 35]);
    assert_eq!(c.gave_up.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn poll_pauses_double_to_the_cap() {
    let policy = WaitPolicy::default().with_poll(Backoff::new(2 * MS, 8 * MS, Jitter::None));
    let mut c = Scripted::new(
        wait_ms(5_000),
        [Step::Poll, Step::Poll, Step::Poll, Step::Poll, Step::Grant],
    );
    c.run(&policy).await.unwrap();
    assert_eq!(c.at_ms(), [0, 2, 6, 14, 22]);
}

#[tokio::test(start_paused = true)]
async fn a_wake_up_with_a_retry_time_is_trusted_until_then() {
    let at = Instant::now() + 300 * MS;
    let busy = Busy::woken_by(std::future::pending()).or_at(at);
    let mut c = Scripted::new(wait_ms(5_000), [Step::Busy(busy), Step::Grant]);
    c.run(&steady_poll(10 * MS)).await.unwrap();
    assert_eq!(c.at_ms(), [0, 300]);
}

#[tokio::test(start_paused = true)]
async fn a_retry_time_without_a_wake_up_is_capped_by_the_poll() {
    let far = Busy::until(Instant::now() + 300 * MS);
    let now = Busy::until(Instant::now());
    let mut c = Scripted::new(
        wait_ms(5_000),
        [Step::Busy(far), Step::Busy(now), Step::Grant],
    );
    c.run(&steady_poll(10 * MS)).await.unwrap();
    assert_eq!(c.at_ms(), [0, 10, 10]);
}

#[tokio::test(start_paused = true)]
async fn a_try_lock_retries_transient_failures_only_within_its_patience() {
    let impatient = steady_poll(10 * MS);
    let mut c = Scripted::new(Wait::NoWait, [Step::Transient, Step::Grant]);
    assert!(matches!(
        c.run(&impatient).await,
        Err(LockError::Backend { .. })
    ));
    assert_eq!((c.at_ms(), c.gave_up.len()), (vec![0], 1));

    let patient = impatient.with_transient(
        Patience::DEFAULT
            .with_no_wait(25 * MS)
            .with_backoff(Backoff::new(10 * MS, 10 * MS, Jitter::None)),
    );
    let mut c = Scripted::new(
        Wait::NoWait,
        [Step::Transient, Step::Transient, Step::Grant],
    );
    c.run(&patient).await.unwrap();
    assert_eq!(c.at_ms(), [0, 10, 20]);
    let mut c = Scripted::new(
        Wait::NoWait,
        std::iter::repeat_with(|| Step::Transient).take(10),
    );
    assert!(matches!(
        c.run(&patient).await,
        Err(LockError::Backend { .. })
    ));
    assert_eq!(c.at_ms(), [0, 10, 20, 25]);
}

#[tokio::test(start_paused = true)]
async fn a_busy_attempt_ends_a_run_of_transient_failures() {
    let policy = steady_poll(10 * MS).with_transient(
        Patience::DEFAULT
            .with_longest_run(15 * MS)
            .with_backoff(Backoff::new(10 * MS, 10 * MS, Jitter::None)),
    );
    let script = [
        Step::Transient,
        Step::Transient,
        Step::Poll,
        Step::Transient,
        Step::Transient,
        Step::Transient,
    ];
    let mut c = Scripted::new(wait_ms(5_000), script);
    assert!(matches!(
        c.run(&policy).await,
        Err(LockError::Backend { .. })
    ));
    // Run 1: 0, 10, then busy at 15; run 2 starts at 25: 25, 35, 40 (spent).
    assert_eq!(c.at_ms(), [0, 10, 15, 25, 35, 40]);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_wait_may_outlast_a_run_limit_meant_for_endless_waits() {
    let policy = steady_poll(10 * MS).with_transient(
        Patience::DEFAULT
            .with_longest_endless_run(15 * MS)
            .with_backoff(Backoff::new(10 * MS, 10 * MS, Jitter::None)),
    );
    let flapping = || std::iter::repeat_with(|| Step::Transient).take(100);
    let mut c = Scripted::new(wait_ms(45), flapping());
    assert!(matches!(
        c.run(&policy).await,
        Err(LockError::Backend { .. })
    ));
    assert_eq!(c.at_ms(), [0, 10, 20, 30, 40, 45]);
    let mut c = Scripted::new(Wait::Forever, flapping());
    assert!(matches!(
        c.run(&policy).await,
        Err(LockError::Backend { .. })
    ));
    assert_eq!(c.at_ms(), [0, 10, 15]);
}

#[tokio::test(start_paused = true)]
async fn cancellation_ends_the_wait_and_gives_up() {
    let mut c = Scripted::new(Wait::Forever, []);
    let cancel = c.req.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(25)).await;
        cancel.cancel();
    });
    let e = c.run(&steady_poll(10 * MS)).await.unwrap_err();
    assert!(matches!(e, LockError::Cancelled { .. }), "{e:?}");
    assert_eq!(c.at_ms(), [0, 10, 20]);
    assert_eq!(c.gave_up.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_error_or_a_wake_up_error_ends_the_acquire() {
    let mut c = Scripted::new(Wait::Forever, [Step::Poll, Step::Fail, Step::Grant]);
    assert!(matches!(
        c.run(&steady_poll(MS)).await,
        Err(LockError::Config(_))
    ));
    assert_eq!((c.at_ms().len(), c.gave_up.len()), (2, 1));

    let broken = Busy::woken_by(async { Err(LockError::Config("watch refused".into())) });
    let mut c = Scripted::new(Wait::Forever, [Step::Busy(broken), Step::Grant]);
    assert!(matches!(
        c.run(&steady_poll(MS)).await,
        Err(LockError::Config(_))
    ));
    assert_eq!(c.gave_up, ["configuration error: watch refused"]);
}

#[tokio::test(start_paused = true)]
async fn a_wake_up_that_breaks_is_retried_as_a_transient_failure() {
    let broken = || {
        Busy::woken_by(async {
            Err(LockError::Connection {
                driver: "scripted",
                message: "watch stream reset".into(),
                source: None,
            })
        })
    };
    let mut c = Scripted::new(wait_ms(5_000), [Step::Busy(broken()), Step::Grant]);
    c.run(&steady_poll(10 * MS)).await.unwrap();
    assert_eq!(c.at_ms(), [0, 10]);
    let mut c = Scripted::new(
        wait_ms(25),
        std::iter::repeat_with(|| Step::Busy(broken())).take(9),
    );
    // The last attempt finds the lock busy at the deadline: a timeout.
    assert!(matches!(
        c.run(&steady_poll(10 * MS)).await,
        Err(LockError::Timeout { .. })
    ));
    assert_eq!(c.at_ms(), [0, 10, 20, 25]);
}
