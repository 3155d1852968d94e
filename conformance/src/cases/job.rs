//! Scheduled jobs ([`lockkit_core::Locker::job`]): one node runs the job, and
//! every node skips it while it runs and until `at_least_for` after it began.

use std::time::Duration;

use lockkit_core::{FencingToken, JobRun, LockError, Locker};
use tokio::time::Instant;

use crate::check::{CaseResult, ensure, fail};
use crate::harness::Ctx;

/// How long a run keeps the job's lock after it began.
const AT_LEAST: Duration = Duration::from_millis(700);
/// How long the job may take, however slow the backend.
const AT_MOST: Duration = Duration::from_secs(20);

/// The first run holds the job's lock for `at_least_for` after it began, though
/// it finished at once: runs on another node and on the same one skip, and none
/// is granted before then (a run that returned "ran" before `at_least_for` had
/// passed would prove an early grant). Afterwards the job runs again, with a
/// greater token. An `at_least_for` above `at_most_for` is a `Config` error.
pub(crate) async fn a_scheduled_job_runs_once_and_holds_at_least_for(ctx: &Ctx) -> CaseResult {
    let key = ctx.key("job");
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let began = Instant::now();
    let deadline = began + AT_LEAST + AT_MOST;
    let JobRun::Ran { output, token } = run(&a, &key, deadline).await? else {
        fail!("the first run of a free job skipped it");
    };
    ensure!(
        output == token,
        "the job ran with {output:?}, not its token {token:?}"
    );
    let (mut skipped, mut first_return) = (0, None);
    let next = loop {
        let node = if skipped % 2 == 0 { &b } else { &a };
        let outcome = run(node, &key, deadline).await?;
        let returned = began.elapsed();
        first_return.get_or_insert(returned);
        match outcome {
            JobRun::Ran { .. } if returned < AT_LEAST => fail!(
                "the job ran again {returned:?} after the first run began, before its \
                 at_least_for of {AT_LEAST:?} (after {skipped} skipped runs)"
            ),
            JobRun::Ran { token: next, .. } => break next,
            JobRun::Skipped => skipped += 1,
        }
        ensure!(
            Instant::now() < deadline,
            "the job never ran again within {:?} of the first run",
            AT_LEAST + AT_MOST
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    ensure!(
        skipped > 0 || first_return.is_some_and(|r| r >= AT_LEAST),
        "no run skipped the job while the first held it"
    );
    ensure!(
        next > token,
        "the second run's token {next:?} is not above {token:?}"
    );

    match a
        .job(key.as_str())
        .at_most_for(Duration::from_secs(1))
        .at_least_for(Duration::from_secs(2))
        .run(|_| async {})
        .await
    {
        Err(LockError::Config(_)) => Ok(()),
        other => fail!("at_least_for above at_most_for: expected Config, got {other:?}"),
    }
}

/// One scheduled run of the case's job on `node`, returning its own token. A
/// connection error (an ensemble member killed mid-case) is tried again until
/// `deadline`.
async fn run(
    node: &Locker,
    key: &str,
    deadline: Instant,
) -> Result<JobRun<FencingToken>, LockError> {
    loop {
        let outcome = node
            .job(key)
            .at_most_for(AT_MOST)
            .at_least_for(AT_LEAST)
            .run(|t| async move { t })
            .await;
        match outcome {
            Err(e) if e.is_retryable() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}
