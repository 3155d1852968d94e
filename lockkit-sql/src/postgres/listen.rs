//! One `LISTEN` connection per process for each server, database, user and
//! channel, shared by every driver that would listen there: it wakes the
//! drivers' waiters and observers of each released key, which the
//! notification's payload names (and of a queued key, only the waiter it
//! names). PostgreSQL signals every listening backend of the database at each
//! commit that notifies, so a listener per driver made each release cost the
//! server one wake-up per driver (64 waiters, each with its own driver: a
//! hand-off three times slower than with one listener).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

use lockkit_core::driver::WakeUpHealth;
use lockkit_core::sync::lock;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{AssertSqlSafe, PgPool};
use tokio::task::JoinHandle;

use super::advisory_sql::KEEP_SESSION;
use super::leases::NAME;
use super::queue::Wakeups;

/// A shared `LISTEN` connection and the wake-ups it feeds; its task stops when
/// the last driver holding it goes.
#[derive(Debug, Clone)]
pub(super) struct Listener(Arc<Shared>);

struct Shared {
    wakeups: Arc<Wakeups>,
    /// The first driver's pool's settings, for a pool of one connection of the
    /// listener's own: a driver that closes its pool does not silence the
    /// others.
    pool: PgPoolOptions,
    connect: PgConnectOptions,
    channel: String,
    task: Mutex<JoinHandle<()>>,
}

/// Never the connection settings: they hold the password.
impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        lock(&self.task).abort();
    }
}

/// Who may share a listener: drivers whose connections the server would see
/// alike (server, user, database, `application_name`, startup options, TLS
/// mode), listening on one channel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Audience {
    host: String,
    port: u16,
    socket: Option<PathBuf>,
    user: String,
    database: Option<String>,
    application_name: Option<String>,
    options: Option<String>,
    tls: String,
    channel: String,
}

/// This process's listeners, by audience.
static LISTENERS: LazyLock<Mutex<HashMap<Audience, Weak<Shared>>>> = LazyLock::new(Mutex::default);

impl Listener {
    /// The process's listener for `pool`'s server, user and database on
    /// `channel`: the one another driver started, or a new one.
    pub(super) fn shared(pool: &PgPool, channel: &str) -> Self {
        let options = pool.connect_options();
        let audience = Audience {
            host: options.get_host().to_owned(),
            port: options.get_port(),
            socket: options.get_socket().cloned(),
            user: options.get_username().to_owned(),
            database: options.get_database().map(str::to_owned),
            application_name: options.get_application_name().map(str::to_owned),
            options: options.get_options().map(str::to_owned),
            tls: format!("{:?}", options.get_ssl_mode()),
            channel: channel.to_owned(),
        };
        let mut listeners = lock(&LISTENERS);
        listeners.retain(|_, shared| shared.strong_count() > 0);
        if let Some(shared) = listeners.get(&audience).and_then(Weak::upgrade) {
            let listener = Self(shared);
            listener.keep_running();
            return listener;
        }
        let wakeups = Arc::new(Wakeups::default());
        let (pool, connect) = (pool.options().clone(), (*options).clone());
        let task = spawn(
            pool.clone(),
            connect.clone(),
            channel.to_owned(),
            wakeups.clone(),
        );
        let shared = Arc::new(Shared {
            wakeups,
            pool,
            connect,
            channel: channel.to_owned(),
            task: Mutex::new(task),
        });
        listeners.insert(audience, Arc::downgrade(&shared));
        Self(shared)
    }

    /// The wake-ups this listener feeds.
    pub(super) fn wakeups(&self) -> &Arc<Wakeups> {
        &self.0.wakeups
    }

    /// Starts the listener's task again on this runtime if the runtime it ran
    /// on is gone (a driver made on another runtime shares it). Cheap: called
    /// before each wait.
    pub(super) fn keep_running(&self) {
        let mut task = lock(&self.0.task);
        if task.is_finished() && tokio::runtime::Handle::try_current().is_ok() {
            let shared = &self.0;
            *task = spawn(
                shared.pool.clone(),
                shared.connect.clone(),
                shared.channel.clone(),
                shared.wakeups.clone(),
            );
        }
    }
}

/// Listens on `channel` and wakes whoever each notification is for
/// ([`Wakeups::route`]): the key's observers and waiters, or its one named waiter.
/// Reconnects with backoff; waiters poll meanwhile, so nothing waits forever. A
/// lost connection is logged once per outage, and so is its return
/// ([`WakeUpHealth`]). Whenever the connection was lost, however briefly (sqlx
/// reconnects at once where it can), every waiter is woken once: a release may
/// have been notified while no one listened.
fn spawn(
    pool: PgPoolOptions,
    connect: PgConnectOptions,
    channel: String,
    wakeups: Arc<Wakeups>,
) -> JoinHandle<()> {
    // A pool of one connection, made on this runtime.
    let pool = pool
        .max_connections(1)
        .min_connections(0)
        .connect_lazy_with(connect);
    tokio::spawn(async move {
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
    })
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
