//! Faults aimed at the wake-up machinery: the connection that carries a driver's
//! wake-ups (PostgreSQL's `LISTEN` connection, Redis's pub/sub connection,
//! MariaDB's bell connections) killed by the server right after each grant and
//! right before each release, while the other workers wait. A wake-up is only a
//! hint: no two workers may hold the lock, and every hand-off still completes,
//! by a poll where the wake-up was lost.

use super::*;

/// How long the faults go on: a kill after each grant and before each release.
const FAULTS_FOR: Duration = Duration::from_secs(3);
/// The workers' hold, long enough for a kill to land inside it, and for the
/// others to be waiting when it does.
const HOLD: Duration = Duration::from_millis(200);
/// How long before a release the second kill is sent.
const BEFORE_RELEASE: Duration = Duration::from_millis(60);

/// Kills the wake-up connections after each new grant and shortly before its
/// release, for [`FAULTS_FOR`], with `kill`; then checks the history.
async fn wake_ups_killed<F, Fut>(backend: &'static str, url: &str, mut kill: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = usize>,
{
    let mut trial = Trial::new(backend, "wake-up connection killed around grants");
    trial.hold = HOLD;
    let running = trial.start_workers(url).await;
    let started = Instant::now();
    let (mut seen, mut killed) = (trial.recorder.inspect(|h| h.grants.len()), 0);
    while started.elapsed() < FAULTS_FOR {
        let next = trial
            .recorder
            .inspect(|h| h.grants.get(seen).map(|g| g.granted));
        let Some(granted) = next else {
            sleep(Duration::from_millis(2)).await;
            continue;
        };
        seen += 1;
        killed += kill().await;
        tokio::time::sleep_until(granted + HOLD - BEFORE_RELEASE).await;
        killed += kill().await;
    }
    let healed = Instant::now();
    eprintln!("{backend}: {killed} wake-up connections killed over {seen} grants");
    assert!(
        killed > 0,
        "{backend}: no wake-up connection was found to kill"
    );
    trial.finish(running, started, healed, Promise::Safe).await;
}

/// Runs `sql` through the server's own client (`psql -c` or `mariadb -e`): the
/// rows it printed.
async fn client_rows(mut client: tokio::process::Command, flag: &str, sql: &str) -> Vec<String> {
    let out = client.arg(flag).arg(sql).output().await.unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_wake_up_connection_killed_around_grants() {
    let server = Postgres::start().await.unwrap();
    let kill = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()";
    wake_ups_killed("postgres", &server.url(), || async {
        client_rows(server.psql().unwrap(), "-c", kill).await.len()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_wake_up_connection_killed_around_grants() {
    let server = Redis::start().await.unwrap();
    wake_ups_killed("redis", &server.url(), || async {
        let killed = server
            .ask("CLIENT KILL TYPE pubsub")
            .await
            .unwrap_or_default();
        killed
            .first()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_wake_up_connection_killed_around_grants() {
    let server = MariaDb::start().await.unwrap();
    // Bell connections: waiting in GET_LOCK or asleep as the first in line,
    // and the one that holds the key's bell (kept with a hold that waited).
    let find = "SELECT ID FROM information_schema.PROCESSLIST \
                WHERE (INFO LIKE 'SELECT GET_LOCK%' OR INFO LIKE '%SLEEP(%') \
                  AND ID <> CONNECTION_ID() \
                UNION SELECT IS_USED_LOCK(SHA1(CONCAT('lockkit-wake:', \
                  CONVERT(DATABASE() USING utf8mb4), '.', \
                  'lockkit_locks:reliability/wake-up-connection-killed-around-grants')))";
    wake_ups_killed("mysql", &server.url(), || async {
        let mut killed = 0;
        for id in client_rows(server.client().unwrap(), "-e", find).await {
            if id == "NULL" {
                continue;
            }
            let kill = format!("KILL {id}");
            let done = server.client().unwrap().args(["-e", &kill]).status().await;
            // A connection gone since it was found is not counted.
            if done.is_ok_and(|status| status.success()) {
                killed += 1;
            }
        }
        killed
    })
    .await;
}
