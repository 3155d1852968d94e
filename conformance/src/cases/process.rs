//! A holder process killed with SIGKILL.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::time::{Instant, timeout};

use super::{expect_contended, reference_op, tolerance};
use crate::check::{CaseError, CaseResult, ensure, fail};
use crate::harness::Ctx;
use crate::holder;

/// A child process takes the lock (with the watchdog) and is killed with SIGKILL;
/// the lock is refused while it lives and renews, and is free within one TTL of the
/// kill, with a greater token.
pub(crate) async fn abandoned_by_killed_process_is_freed_after_ttl(ctx: &Ctx) -> CaseResult {
    if !ctx.capabilities().cross_process {
        return Err(CaseError::Skipped("holds are process-local".into()));
    }
    let (Some(url), Some(command)) = (ctx.harness.holder_url(), ctx.holder.as_ref()) else {
        return Err(CaseError::Skipped(
            "the harness cannot start a holder process".into(),
        ));
    };
    let b = ctx.locker().await?;
    let reference = reference_op(ctx, &b).await?;
    let key = ctx.key("abandoned");
    let ttl = Duration::from_millis(1000);
    let mut cmd = tokio::process::Command::from(command());
    cmd.env(holder::ENV_URL, url)
        .env(holder::ENV_KEY, &key)
        .env(holder::ENV_TTL_MS, ttl.as_millis().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => fail!("could not start the holder process: {e}"),
    };
    let Some(stdout) = child.stdout.take() else {
        fail!("the holder's stdout was not captured");
    };
    let mut lines = BufReader::new(stdout).lines();
    let read_token = async {
        while let Ok(Some(line)) = lines.next_line().await {
            // A test harness may print its own prefix on the same line.
            if let Some(at) = line.find(holder::ACQUIRED) {
                return line[at + holder::ACQUIRED.len()..]
                    .trim()
                    .parse::<u64>()
                    .ok();
            }
        }
        None
    };
    let child_token = match timeout(Duration::from_secs(30), read_token).await {
        Ok(Some(t)) => t,
        Ok(None) => fail!("the holder process exited without taking the lock"),
        Err(_) => fail!("the holder process did not take the lock within 30 s"),
    };
    expect_contended(b.try_lock(key.as_str()).await, "while the holder lives")?;
    // Past one TTL the child must still hold: its watchdog renews.
    tokio::time::sleep(ttl + ttl / 2).await;
    expect_contended(
        b.try_lock(key.as_str()).await,
        "1.5×TTL in, while the holder renews",
    )?;

    if let Err(e) = child.start_kill() {
        fail!("could not kill the holder: {e}");
    }
    let killed = Instant::now();
    let _ = child.wait().await;
    let g = b
        .lock(key.as_str())
        .lease(Duration::from_secs(10))
        .wait(ttl * 3 + Duration::from_secs(5))
        .await?;
    let after = killed.elapsed();
    let limit = ttl + tolerance(Duration::from_millis(700), reference);
    ensure!(
        after <= limit,
        "freed {after:?} after the kill; limit {limit:?}"
    );
    ensure!(
        g.token().get() > child_token,
        "token {} after the kill is not greater than the dead holder's {child_token}",
        g.token()
    );
    g.release().await?;
    Ok(())
}
