//! The test binary a driver's conformance file builds with [`crate::main!`]: one
//! test per case that applies to what each suite's driver claims.
//!
//! The cases are picked when the binary lists its tests, before any server
//! starts, so each suite states the [`Capabilities`] its driver claims; the
//! suite's `capabilities_are_as_claimed` test connects and fails unless the
//! driver's own capabilities are exactly those. A case the claims do not call for
//! is not listed at all (neither passed nor ignored); a case in the suite's skip
//! list is listed as ignored.

use std::process::{Command, ExitCode};
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use lockkit_core::Capabilities;

use crate::cases::{CASES, Case};
use crate::harness::{Harness, TestHarness};
use crate::report::Outcome;
use crate::runner::{HolderCommand, run_one};

/// Cases a suite cannot pass, each with the reason: `(case, why)`.
pub type Skips = &'static [(&'static str, &'static str)];

/// The name of the test a killed-holder case starts its child process with.
const HOLDER_ENTRY: &str = "holder_process_entry";

/// The tests of one conformance binary, suite by suite. [`crate::main!`] builds
/// it; use it directly only to add tests of your own beside the suites.
#[derive(Default)]
pub struct Suites {
    trials: Vec<Trial>,
}

impl std::fmt::Debug for Suites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Suites")
            .field("tests", &self.trials.len())
            .finish()
    }
}

impl Suites {
    /// No suites yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the suite `name`: every case that applies to a driver with `claims`,
    /// run against a fresh `H` each; the cases in `skip` listed as ignored.
    pub fn suite<H: TestHarness>(
        &mut self,
        name: &'static str,
        claims: Capabilities,
        skip: Skips,
    ) -> &mut Self {
        for case in CASES.iter().filter(|c| c.applies_to(&claims)) {
            let skipped = skip.iter().any(|(s, _)| *s == case.name);
            let trial = Trial::test(format!("{name}::{}", case.name), move || {
                block_on(run_case::<H>(case, name))
            });
            self.trials.push(trial.with_ignored_flag(skipped));
        }
        self.trials.push(Trial::test(
            format!("{name}::capabilities_are_as_claimed"),
            move || block_on(check_claims::<H>(claims, skip)),
        ));
        self.trials.push(
            Trial::test(format!("{name}::{HOLDER_ENTRY}"), || {
                block_on(async {
                    crate::holder::child_main(|url: String| async move { H::connect(&url).await })
                        .await;
                    Ok(())
                })
            })
            .with_ignored_flag(true),
        );
        self
    }

    /// Runs the tests the command line selects, as libtest would, and returns the
    /// exit code.
    pub fn run(self) -> ExitCode {
        libtest_mimic::run(&Arguments::from_args(), self.trials).exit_code()
    }
}

/// Runs `test` on a runtime of its own, as `#[tokio::test(flavor =
/// "multi_thread", worker_threads = 2)]` would.
fn block_on(test: impl Future<Output = Result<(), Failed>>) -> Result<(), Failed> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(format!("cannot start a tokio runtime: {e}")))?
        .block_on(test)
}

/// Runs `case` against a fresh harness; the killed-holder case re-runs this
/// binary as its child, selecting the suite's holder entry.
async fn run_case<H: TestHarness>(case: &Case, suite: &'static str) -> Result<(), Failed> {
    let harness: Arc<dyn Harness> = Arc::new(H::start().await);
    let holder: HolderCommand = Arc::new(move || {
        let mut cmd = Command::new(std::env::current_exe().unwrap_or_default());
        cmd.args([
            format!("{suite}::{HOLDER_ENTRY}").as_str(),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ]);
        cmd
    });
    match run_one(case, harness, Some(holder)).await.outcome {
        Outcome::Passed => Ok(()),
        Outcome::Failed(m) => Err(format!("conformance case `{}` failed: {m}", case.name).into()),
        Outcome::Skipped(m) => Err(format!(
            "conformance case `{name}` cannot run on this driver ({m}); add (\"{name}\", \"why\") \
             to the suite's skip list",
            name = case.name
        )
        .into()),
    }
}

/// Fails unless the driver's capabilities are exactly `claims`, and every
/// skipped case is one the suite lists.
async fn check_claims<H: TestHarness>(claims: Capabilities, skip: Skips) -> Result<(), Failed> {
    let listed = |name: &str| {
        CASES
            .iter()
            .any(|c| c.name == name && c.applies_to(&claims))
    };
    let strays: Vec<&str> = skip
        .iter()
        .map(|(s, _)| *s)
        .filter(|s| !listed(s))
        .collect();
    if !strays.is_empty() {
        return Err(
            format!("the skip list names cases this suite does not run: {strays:?}").into(),
        );
    }
    let harness = H::start().await;
    let caps = harness
        .driver()
        .await
        .map_err(|e| format!("could not connect: {e}"))?
        .capabilities();
    if caps != claims {
        return Err(format!(
            "the suite's claims differ from the driver's capabilities ({}); the cases \
             run are picked from the claims, so they must be the driver's",
            differences(&claims, &caps)
        )
        .into());
    }
    Ok(())
}

/// The fields where `claims` and `caps` differ: "fair: claimed false, has true".
fn differences(claims: &Capabilities, caps: &Capabilities) -> String {
    let fields = |c: &Capabilities| -> Vec<String> {
        let text = format!("{c:?}");
        let inner = text
            .split_once('{')
            .map_or("", |(_, rest)| rest.trim_end_matches('}'));
        inner.split(',').map(|f| f.trim().to_string()).collect()
    };
    fields(claims)
        .iter()
        .zip(fields(caps))
        .filter(|(claimed, has)| *claimed != has)
        .map(|(claimed, has)| {
            let (name, value) = claimed.split_once(": ").unwrap_or((claimed, ""));
            let has = has.split_once(": ").map_or(has.as_str(), |(_, v)| v);
            format!("{name}: claimed {value}, has {has}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}
