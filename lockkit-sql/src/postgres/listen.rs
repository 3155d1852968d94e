//! One `LISTEN` connection per driver: wakes the driver's waiters and observers of
//! each released key, which the notification's payload names (and of a queued
//! key, only the waiter it names).

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::WakeUpHealth;
use sqlx::postgres::PgListener;
use sqlx::{AssertSqlSafe, PgPool};
use tokio::task::JoinHandle;

use super::advisory_sql::KEEP_SESSION;
use super::leases::NAME;
use super::queue::Wakeups;

/// Aborts the listener task when the last clone of the driver goes.
#[derive(Debug)]
pub(super) struct Listener(JoinHandle<()>);

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Listens on `channel` and wakes whoever each notification is for
/// ([`Wakeups::route`]): the key's observers and waiters, or its one named waiter.
/// Reconnects with backoff; waiters poll meanwhile, so nothing waits forever. A
/// lost connection is logged once per outage, and so is its return
/// ([`WakeUpHealth`]). Whenever the connection was lost, however briefly (sqlx
/// reconnects at once where it can), every waiter is woken once: a release may
/// have been notified while no one listened.
pub(super) fn spawn(pool: PgPool, channel: String, wakeups: Arc<Wakeups>) -> Listener {
    Listener(tokio::spawn(async move {
        let health = WakeUpHealth::new(NAME, "LISTEN connection");
        let mut pause = Duration::from_millis(50);
        loop {
            let listening = async {
                let mut listener = PgListener::connect_with(&pool).await?;
                keep_listening(&mut listener, &channel).await?;
                Ok::<_, sqlx::Error>(listener)
            };
            let mut listener = match listening.await {
                Ok(listener) => listener,
                Err(error) => {
                    health.down(&error);
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            health.up();
            pause = Duration::from_millis(50);
            // Anything released while we were not listening: wake everyone once.
            wakeups.wake_all();
            loop {
                match listener.try_recv().await {
                    Ok(Some(released)) => wakeups.route(released.payload()),
                    // Lost, and listening again already: anything notified in
                    // between is gone.
                    Ok(None) => {
                        tracing::debug!("LISTEN connection lost and re-established");
                        wakeups.wake_all();
                        if let Err(error) = keep_listening(&mut listener, &channel).await {
                            health.down(&error);
                            break;
                        }
                    }
                    Err(error) => {
                        health.down(&error);
                        break;
                    }
                }
            }
        }
    }))
}

/// Turns `idle_session_timeout` off for the listener's session (invariant P3),
/// then listens on `channel` (again, after sqlx reconnected: a no-op on a
/// channel it listens on), so that `LISTEN` is what `pg_stat_activity` shows.
async fn keep_listening(listener: &mut PgListener, channel: &str) -> Result<(), sqlx::Error> {
    sqlx::raw_sql(AssertSqlSafe(KEEP_SESSION))
        .execute(&mut *listener)
        .await?;
    listener.listen(channel).await
}
