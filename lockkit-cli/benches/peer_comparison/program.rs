//! Runs one library's participant program and reads its measurements, the runner's
//! side of the peer protocol (bench/peers/README.md).

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio::task::JoinHandle;

use crate::backend::{Backend, Failure};
use crate::server_cpu::ServerCpu;

/// Hand-off rounds run first and not counted, as the pairs have their warm-up:
/// a fresh server's first round of 64 took 2.6–2.7× the next ones, for lockkit
/// and for PostgreSQL's own floor alike (each backend's first statements).
pub(crate) const WARM_UP_ROUNDS: u64 = 1;

/// No line from a participant for this long fails it (and kills it).
const LINE_TIMEOUT: Duration = Duration::from_secs(180);

/// A participant program: the command line before its `TARGET MODE …` arguments.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    /// What the tables call it.
    pub(crate) library: String,
    pub(crate) argv: Vec<String>,
    /// Its `TARGET`: a lockkit URL, or the addresses the library connects to.
    pub(crate) target: String,
}

/// The hand-offs of one waiter count, and what the backend served meanwhile.
#[derive(Debug, Clone, Default)]
pub(crate) struct Handoffs {
    pub(crate) gaps_ns: Vec<u64>,
    /// The same hand-offs timed from the release's start, from participants that
    /// send them (lockkit's, rslock's and the raw floors': this binary).
    pub(crate) from_release_start_ns: Option<Vec<u64>>,
    /// How many hand-offs each round gave, in order.
    pub(crate) per_round: Vec<usize>,
    /// The p50 of a block of the backend's cheapest requests before each round's
    /// go, and one after the last round (see [`crate::in_round_trips`]); `None`
    /// if a block failed.
    pub(crate) round_trips_ns: Option<Vec<u64>>,
    /// Requests served during the rounds (from the go to the last release).
    pub(crate) commands: Option<u64>,
    /// CPU time the server ran during the rounds (from the go to the last
    /// release).
    pub(crate) server_cpu: Option<Duration>,
}

/// A running participant, killed when dropped.
struct Running {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    /// Reads its stderr to the end: the last line it wrote (its error, when it fails).
    last_error: Option<JoinHandle<String>>,
}

impl Running {
    fn start(program: &Program, args: &[String]) -> Result<Self, Failure> {
        let (first, rest) = program.argv.split_first().ok_or("an empty command line")?;
        let mut child = Command::new(first)
            .args(rest)
            .arg(&program.target)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {first}: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let last_error = tokio::spawn(async move {
            let (mut lines, mut last) = (BufReader::new(stderr).lines(), String::new());
            while let Ok(Some(line)) = lines.next_line().await {
                if !line.trim().is_empty() {
                    last = line;
                }
            }
            last
        });
        Ok(Self {
            child,
            lines: BufReader::new(stdout).lines(),
            last_error: Some(last_error),
        })
    }

    /// Why it stopped answering: its last stderr line, once it has exited.
    async fn exit_reason(&mut self) -> String {
        let status = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        // Its stderr ends when it exits.
        let last = match self.last_error.take() {
            Some(reader) => tokio::time::timeout(Duration::from_secs(5), reader)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => String::new(),
        };
        match status {
            Ok(Ok(status)) if !last.is_empty() => format!("{last} ({status})"),
            Ok(Ok(status)) => format!("it exited with {status}"),
            _ => "it closed its stdout".to_owned(),
        }
    }

    async fn line(&mut self) -> Result<String, Failure> {
        match tokio::time::timeout(LINE_TIMEOUT, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => Ok(line),
            Ok(Ok(None)) => Err(self.exit_reason().await.into()),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(format!("no answer in {LINE_TIMEOUT:?}").into()),
        }
    }

    /// Reads a `ready` line.
    async fn ready(&mut self) -> Result<(), Failure> {
        match self.line().await? {
            line if line == "ready" => Ok(()),
            line => Err(format!("expected ready, read {line:.200}").into()),
        }
    }

    /// Starts a hand-off round.
    async fn go(&mut self) -> Result<(), Failure> {
        let stdin = self.child.stdin.as_mut().ok_or("no stdin")?;
        stdin.write_all(b"go\n").await?;
        Ok(stdin.flush().await?)
    }

    /// The next measurement line: `{"ns": [...]}`.
    async fn samples(&mut self) -> Result<Vec<u64>, Failure> {
        Ok(self.measurement().await?.ns)
    }

    /// The next measurement line, with `"from_release_start_ns": [...]` if sent.
    async fn measurement(&mut self) -> Result<Samples, Failure> {
        let line = self.line().await?;
        serde_json::from_str(&line)
            .map_err(|e| format!("not a measurement ({e}): {line:.200}").into())
    }

    async fn finish(mut self) -> Result<(), Failure> {
        drop(self.child.stdin.take());
        let status = tokio::time::timeout(LINE_TIMEOUT, self.child.wait()).await??;
        if status.success() {
            Ok(())
        } else {
            Err(format!("it exited with {status}").into())
        }
    }
}

/// One measurement line.
#[derive(serde::Deserialize)]
struct Samples {
    ns: Vec<u64>,
    #[serde(default)]
    from_release_start_ns: Option<Vec<u64>>,
}

/// A library's long-lived `pairs` session: one client, warmed up, asked for one
/// batch of timed uncontended pairs at a time.
pub(crate) struct Session {
    running: Running,
}

impl Session {
    /// `n` acquire+release pairs, each timed.
    pub(crate) async fn batch(&mut self, n: u64) -> Result<Vec<u64>, Failure> {
        let stdin = self.running.child.stdin.as_mut().ok_or("no stdin")?;
        stdin.write_all(format!("{n}\n").as_bytes()).await?;
        stdin.flush().await?;
        self.running.samples().await
    }

    /// Ends the session: its stdin closes and it exits.
    pub(crate) async fn finish(self) -> Result<(), Failure> {
        self.running.finish().await
    }
}

impl Program {
    /// Starts the library's `pairs` session and waits until it is warmed up.
    pub(crate) async fn pairs(&self) -> Result<Session, Failure> {
        let mut running = Running::start(self, &["pairs".into()])?;
        running.ready().await?;
        Ok(Session { running })
    }

    /// `rounds` rounds of a holder and `waiters` queued waiters, after
    /// [`WARM_UP_ROUNDS`] not counted; the backend's request counter is read
    /// around each round.
    pub(crate) async fn handoffs(
        &self,
        backend: &Backend,
        servers: &ServerCpu,
        waiters: u64,
        rounds: u64,
    ) -> Result<Handoffs, Failure> {
        let all = rounds + WARM_UP_ROUNDS;
        let mut running = Running::start(
            self,
            &["handoff".into(), waiters.to_string(), all.to_string()],
        )?;
        for _ in 0..WARM_UP_ROUNDS {
            running.ready().await?;
            running.go().await?;
            running.measurement().await?;
        }
        let mut out = Handoffs {
            commands: Some(0),
            server_cpu: Some(Duration::ZERO),
            from_release_start_ns: Some(Vec::new()),
            round_trips_ns: Some(Vec::new()),
            ..Handoffs::default()
        };
        for _ in 0..rounds {
            running.ready().await?;
            // Before the counters are read: the block is not the round's work.
            block(backend, &mut out.round_trips_ns).await;
            let before = backend.commands().await?;
            let cpu_before = servers.snapshot();
            running.go().await?;
            let round = running.measurement().await?;
            out.server_cpu = match (out.server_cpu, cpu_before, servers.snapshot()) {
                (Some(sum), Some(b), Some(a)) => Some(sum + a.since(&b)),
                _ => None,
            };
            out.per_round.push(round.ns.len());
            out.gaps_ns.extend(round.ns);
            out.from_release_start_ns =
                match (out.from_release_start_ns, round.from_release_start_ns) {
                    (Some(mut all), Some(these)) => {
                        all.extend(these);
                        Some(all)
                    }
                    _ => None,
                };
            let after = backend.commands().await?;
            out.commands = match (out.commands, before, after) {
                (Some(sum), Some(b), Some(a)) => Some(sum + backend.commands_between(b, a)),
                _ => None,
            };
        }
        running.finish().await?;
        block(backend, &mut out.round_trips_ns).await;
        Ok(out)
    }
}

/// Adds the p50 of one more block of round trips to `blocks`, or drops them all
/// if it fails.
async fn block(backend: &Backend, blocks: &mut Option<Vec<u64>>) {
    let p50 = backend.round_trip(crate::in_round_trips::BLOCK).await;
    match (blocks.as_mut(), p50) {
        (Some(blocks), Ok(Some(p50))) => blocks.push(p50.as_nanos() as u64),
        _ => *blocks = None,
    }
}
