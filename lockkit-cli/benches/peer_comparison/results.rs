//! What one run found: each library's timings on each backend, the floor's, and
//! each backend group's failures and skips.

use std::time::Duration;

use crate::backend::Backend;
use crate::in_round_trips::InRoundTrips;
use crate::paired::{Noise, Paired, paired};
use crate::rounds::Uncontended;
use crate::server_cpu::ServerCpu;

/// Percentiles (nearest rank) and rate of a set of timings.
#[derive(Debug, Clone)]
pub(crate) struct Stats {
    pub(crate) samples: usize,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    /// Timed operations per second of their summed time.
    pub(crate) per_second: f64,
}

impl Stats {
    pub(crate) fn from_ns(ns: &[u64]) -> Self {
        let mut s = ns.to_vec();
        s.sort_unstable();
        let pct = |q: f64| {
            let rank = (q * s.len() as f64).ceil() as usize;
            s.get(rank.clamp(1, s.len().max(1)) - 1)
                .copied()
                .unwrap_or(0) as f64
                / 1000.0
        };
        let total: u64 = s.iter().sum();
        Self {
            samples: s.len(),
            p50_us: pct(0.5),
            p99_us: pct(0.99),
            per_second: s.len() as f64 / (total as f64 / 1e9).max(1e-9),
        }
    }
}

/// One waiter count's hand-offs.
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    pub(crate) stats: Stats,
    /// Timed from the release's start instead of its return (this binary's
    /// participants only).
    pub(crate) from_release_start: Option<Stats>,
    /// The share of hand-offs whose grant landed before the release returned
    /// (their gaps read 0).
    pub(crate) granted_before_return: f64,
    /// Each hand-off ÷ the round trip measured around its round, timed from the
    /// release's return and from its start.
    pub(crate) in_round_trips: Option<InRoundTrips>,
    pub(crate) from_release_start_in_round_trips: Option<InRoundTrips>,
    pub(crate) commands_per_handoff: Option<f64>,
    /// The server's CPU time per hand-off, its waiters' queuing included.
    pub(crate) server_cpu_per_handoff: Option<std::time::Duration>,
}

/// One library on one backend.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) library: String,
    pub(crate) uncontended: Result<Uncontended, String>,
    pub(crate) handoffs: Vec<(u64, Result<Measured, String>)>,
}

impl Row {
    pub(crate) fn new(library: &str) -> Self {
        Self {
            library: library.to_owned(),
            uncontended: Err("not run".into()),
            handoffs: Vec::new(),
        }
    }

    pub(crate) fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .uncontended
            .as_ref()
            .err()
            .cloned()
            .into_iter()
            .collect();
        for (waiters, h) in &self.handoffs {
            if let Err(e) = h {
                out.push(format!("{waiters} waiters: {e}"));
            }
        }
        out
    }

    pub(crate) fn handoff(&self, waiters: u64) -> Option<&Measured> {
        self.handoffs
            .iter()
            .find(|(w, _)| *w == waiters)
            .and_then(|(_, h)| h.as_ref().ok())
    }
}

/// The raw floor and lockkit, measured alternating pair by pair by `lockkit bench`.
#[derive(Debug)]
pub(crate) struct Floor {
    pub(crate) stats: Stats,
    /// lockkit in the same process, alternating with the floor.
    pub(crate) lockkit: Stats,
    pub(crate) description: String,
}

/// One backend's results.
#[derive(Debug)]
pub(crate) struct Group {
    pub(crate) title: &'static str,
    pub(crate) backend: Backend,
    pub(crate) server: String,
    /// The server processes, whose CPU time the uncontended rounds read.
    pub(crate) servers: ServerCpu,
    pub(crate) round_trip: Option<Duration>,
    pub(crate) floor: Option<Floor>,
    pub(crate) rows: Vec<Row>,
    /// lockkit measured a second time, in its own process, in the same rounds.
    pub(crate) control: Option<Result<Uncontended, String>>,
    /// The run's noise, from the control.
    pub(crate) noise: Option<Noise>,
    /// Libraries that could not run here, and why.
    pub(crate) skipped: Vec<String>,
    pub(crate) failures: Vec<String>,
    /// Uncontended pairs only: no floor, no hand-offs (a primitive other than
    /// the mutex).
    pub(crate) uncontended_only: bool,
    /// Hand-offs only, with these waiter counts: an election's failover, from
    /// the leader's resignation to the next candidate leading.
    pub(crate) handoffs_only: Option<Vec<u64>>,
    /// No floor: lockkit's row times another request than the one `lockkit
    /// bench` alternates with the floor (a fair request, two keys).
    pub(crate) without_floor: bool,
    /// lockkit's uncontended p50 may be at most this many times the floor's.
    pub(crate) floor_target: f64,
    /// Rows shown for context but not held as targets, with why: rslock hands
    /// out no fencing token, whose price lockkit pays; the lease table takes no
    /// part in the application's transaction.
    pub(crate) context: Vec<(&'static str, &'static str)>,
}

impl Group {
    pub(crate) fn new(title: &'static str, backend: Backend, server: String) -> Self {
        Self {
            title,
            backend,
            server,
            servers: ServerCpu::default(),
            round_trip: None,
            floor: None,
            rows: Vec::new(),
            control: None,
            noise: None,
            skipped: Vec::new(),
            failures: Vec::new(),
            uncontended_only: false,
            handoffs_only: None,
            without_floor: false,
            floor_target: 1.2,
            context: Vec::new(),
        }
    }

    /// Holds lockkit to `times` the floor's uncontended p50.
    pub(crate) fn with_floor_target(mut self, times: f64) -> Self {
        self.floor_target = times;
        self
    }

    /// Shows `library` as a reference, not a target, because `why`.
    pub(crate) fn with_context(mut self, library: &'static str, why: &'static str) -> Self {
        self.context.push((library, why));
        self
    }

    /// Reads the CPU time of these server processes around each batch.
    pub(crate) fn with_servers(mut self, pids: impl IntoIterator<Item = Option<u32>>) -> Self {
        self.servers = ServerCpu::new(pids);
        self
    }

    pub(crate) fn lockkit(&self) -> Option<&Row> {
        self.rows.iter().find(|r| r.library == "lockkit")
    }

    /// lockkit's uncontended rate ÷ `row`'s, paired round by round.
    pub(crate) fn paired_with(&self, row: &Row) -> Option<Paired> {
        let lockkit = self.lockkit()?.uncontended.as_ref().ok()?;
        paired(&lockkit.rounds, &row.uncontended.as_ref().ok()?.rounds)
    }

    /// The waiter counts of its hand-offs.
    pub(crate) fn waiters<'a>(&'a self, default: &'a [u64]) -> &'a [u64] {
        self.handoffs_only.as_deref().unwrap_or(default)
    }

    /// The noise band's half-width (0 when the control did not run).
    pub(crate) fn band(&self) -> f64 {
        self.noise.map_or(0.0, |n| n.band)
    }
}
