//! The holder child process of the killed-holder case.
//!
//! The parent starts a child (a re-run of the test binary, or `lockkit hold`) with
//! `LOCKKIT_HOLDER_URL`, `LOCKKIT_HOLDER_KEY` and `LOCKKIT_HOLDER_TTL_MS` set. The
//! child connects, takes the lock with the watchdog, prints
//! `LOCKKIT-HOLDER ACQUIRED <token>` on stdout and waits (at most a minute) to be
//! killed. If it learns that the lock was lost first (for instance after being
//! stopped with SIGSTOP past its lease and resumed), it prints
//! `LOCKKIT-HOLDER LOST <reason>` and exits.

use std::future::Future;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockDriver, LockError, Locker};

/// The URL the child connects to.
pub const ENV_URL: &str = "LOCKKIT_HOLDER_URL";
/// The key the child locks.
pub const ENV_KEY: &str = "LOCKKIT_HOLDER_KEY";
/// The watchdog TTL the child uses, in milliseconds.
pub const ENV_TTL_MS: &str = "LOCKKIT_HOLDER_TTL_MS";
/// What the child prints once it holds the lock, followed by the token.
pub const ACQUIRED: &str = "LOCKKIT-HOLDER ACQUIRED";

/// What the child prints when its lock is lost, followed by the reason.
pub const LOST: &str = "LOCKKIT-HOLDER LOST";

/// How long a child waits to be killed before it exits on its own.
pub const CHILD_LIFETIME: Duration = Duration::from_secs(60);

/// The child's body. Returns at once when the environment is not set (so the entry
/// test is harmless when run by hand).
pub async fn child_main<F, Fut>(connect: F)
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<Arc<dyn LockDriver>, LockError>>,
{
    let (Ok(url), Ok(key), Ok(ttl)) = (
        std::env::var(ENV_URL),
        std::env::var(ENV_KEY),
        std::env::var(ENV_TTL_MS),
    ) else {
        return;
    };
    let Ok(ttl) = ttl.parse::<u64>().map(Duration::from_millis) else {
        let _ = writeln!(std::io::stderr(), "holder: {ENV_TTL_MS} is not a number");
        std::process::exit(2);
    };
    let result = async {
        let locker = Locker::new(connect(url).await?);
        let guard = locker
            .lock(key)
            .ttl(ttl)
            .wait(Duration::from_secs(30))
            .await?;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "\n{ACQUIRED} {}", guard.token());
        let _ = out.flush();
        drop(out);
        tokio::select! {
            () = tokio::time::sleep(CHILD_LIFETIME) => guard.release().await,
            reason = guard.lost() => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "\n{LOST} {reason}");
                let _ = out.flush();
                Ok(())
            }
        }
    }
    .await;
    if let Err(e) = result {
        let _ = writeln!(std::io::stderr(), "holder: {e}");
        std::process::exit(1);
    }
}
