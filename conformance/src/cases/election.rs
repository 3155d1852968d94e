//! Elections ([`lockkit_core::Election`]): one leader at a time, increasing terms,
//! hand-over on resign and on a leader's death, and what `leader` and `observe`
//! show of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use lockkit_core::{Leader, LockError, Observer};
use tokio::time::{Instant, timeout};

use super::counted::Counted;
use super::process::outside_holder;
use super::{reference_op, tolerance};
use crate::check::{CaseError, CaseResult, ensure, fail};
use crate::harness::Ctx;

const TTL: Duration = Duration::from_secs(10);
const LABEL: &str = "conformance/candidate";
/// How long a reading of `observe` may take to show a change.
const SEEN_WITHIN: Duration = Duration::from_secs(10);

/// Four candidates, each on its own driver, campaign three times each: no two
/// lead at once, and each term is greater than the one before it.
pub(crate) async fn one_leader_at_a_time_with_increasing_terms(ctx: &Ctx) -> CaseResult {
    const CANDIDATES: usize = 4;
    const TERMS: usize = 3;
    let name = ctx.key("election-contended");
    let leading = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let last_term = Arc::new(AtomicU64::new(0));
    let regressions = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..CANDIDATES {
        let election = ctx.locker().await?.election(name.as_str()).ttl(TTL);
        let (leading, overlaps) = (leading.clone(), overlaps.clone());
        let (last_term, regressions) = (last_term.clone(), regressions.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..TERMS {
                let lead = timeout(Duration::from_secs(60), election.campaign(format!("c{i}")))
                    .await
                    .map_err(|_| LockError::Config("a campaign took over 60 s".into()))??;
                if leading.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                let term = lead.term().get();
                if term <= last_term.swap(term, Ordering::SeqCst) {
                    regressions.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
                leading.fetch_sub(1, Ordering::SeqCst);
                lead.resign().await?;
            }
            Ok::<_, LockError>(())
        }));
    }
    for task in tasks {
        match task.await {
            Ok(r) => r?,
            Err(e) => fail!("a candidate task panicked: {e}"),
        }
    }
    ensure!(
        overlaps.load(Ordering::SeqCst) == 0,
        "{} terms overlapped another leader's",
        overlaps.load(Ordering::SeqCst)
    );
    ensure!(
        regressions.load(Ordering::SeqCst) == 0,
        "a leader's term was not greater than the previous leader's"
    );
    Ok(())
}

/// While A leads, B's campaign waits; when A resigns, B leads with a greater
/// term.
pub(crate) async fn resign_hands_the_lead_to_the_next_candidate(ctx: &Ctx) -> CaseResult {
    let name = ctx.key("election-resign");
    let a = ctx.locker().await?.election(name.as_str()).ttl(TTL);
    let b = ctx.locker().await?.election(name.as_str()).ttl(TTL);
    let a_lead = a.campaign("a").await?;
    let b_campaign = tokio::spawn(async move { b.campaign("b").await });
    // B has had ample time to be granted if it wrongly could be: the reference
    // round trips of a fresh lock, done while A leads.
    let reference = reference_op(ctx, &ctx.locker().await?).await?;
    tokio::time::sleep(reference * 5).await;
    ensure!(
        !b_campaign.is_finished(),
        "B's campaign returned while A led"
    );
    ensure!(!a_lead.is_lost(), "A lost its lead while B campaigned");
    let a_term = a_lead.term();
    a_lead.resign().await?;
    let b_lead = match timeout(Duration::from_secs(30), b_campaign).await {
        Ok(Ok(r)) => r?,
        Ok(Err(e)) => fail!("B's campaign panicked: {e}"),
        Err(_) => fail!("B did not lead within 30 s of A's resignation"),
    };
    ensure!(
        b_lead.term() > a_term,
        "B's term {} is not greater than A's {a_term}",
        b_lead.term()
    );
    b_lead.resign().await?;
    Ok(())
}

/// A child process leads (holds the election's lock with the watchdog) and is
/// killed with SIGKILL: a waiting candidate leads within the dead leader's lease
/// of the kill, with a greater term.
pub(crate) async fn a_killed_leader_is_replaced_within_its_lease(ctx: &Ctx) -> CaseResult {
    let b = ctx.locker().await?;
    let name = ctx.key("election-killed");
    let ttl = Duration::from_millis(1000);
    let (child, child_term) = outside_holder(ctx, &name, ttl).await?;
    let reference = reference_op(ctx, &b).await?;
    let child_ttl = child.effective_ttl();
    let election = b.election(name.as_str()).ttl(Duration::from_secs(10));
    let limit = child_ttl.max(ttl) + tolerance(Duration::from_millis(700), reference);
    let killed = Instant::now();
    child.kill().await;
    let lead = match timeout(limit + Duration::from_secs(5), election.campaign("b")).await {
        Ok(r) => r?,
        Err(_) => fail!("no new leader within the dead leader's lease and 5 s of the kill"),
    };
    let after = killed.elapsed();
    ensure!(
        after <= limit,
        "a new leader {} after the kill; limit {}",
        lockkit_core::human_duration(after),
        lockkit_core::human_duration(limit)
    );
    ensure!(
        lead.term().get() > child_term,
        "the new term {} is not greater than the dead leader's {child_term}",
        lead.term()
    );
    lead.resign().await?;
    Ok(())
}

/// Checks a leader reading against what the leadership says.
fn check_leader(seen: Option<&Leader>, term: u64, value: &str, what: &str) -> CaseResult {
    let Some(seen) = seen else {
        fail!("{what}: no leader shown");
    };
    ensure!(
        seen.term.get() == term,
        "{what}: term {} shown, {term} held",
        seen.term
    );
    ensure!(
        seen.value.as_deref() == Some(value),
        "{what}: value {:?} shown, {value:?} stored",
        seen.value
    );
    ensure!(
        seen.label.as_deref() == Some(LABEL),
        "{what}: label {:?} shown, {LABEL:?} set",
        seen.label
    );
    Ok(())
}

/// A candidate for the election `name` on its own driver, labelled [`LABEL`],
/// and an onlooker on another driver.
async fn candidate_and_onlooker(
    ctx: &Ctx,
    name: &str,
) -> Result<(lockkit_core::Election, lockkit_core::Election), CaseError> {
    let candidate = ctx
        .locker()
        .await?
        .with_label(LABEL)
        .election(name)
        .ttl(TTL);
    Ok((candidate, ctx.locker().await?.election(name)))
}

/// `leader` shows nobody, then the leader's value, term and label, then nobody
/// after it resigns.
pub(crate) async fn the_leader_is_shown_with_its_value_term_and_label(ctx: &Ctx) -> CaseResult {
    let name = ctx.key("election-shown");
    let (election, reader) = candidate_and_onlooker(ctx, &name).await?;
    ensure!(
        reader.leader().await?.is_none(),
        "a leader shown before any campaign"
    );
    let value = "http://10.0.0.7:8080/a b:c";
    let lead = election.campaign(value).await?;
    check_leader(
        reader.leader().await?.as_ref(),
        lead.term().get(),
        value,
        "while leading",
    )?;
    lead.resign().await?;
    ensure!(
        reader.leader().await?.is_none(),
        "a leader shown after it resigned"
    );
    Ok(())
}

/// The next reading of `observer`, within [`SEEN_WITHIN`].
async fn next(observer: &mut Observer, what: &str) -> Result<Option<Leader>, CaseError> {
    match timeout(SEEN_WITHIN, observer.changed()).await {
        Ok(r) => Ok(r?),
        Err(_) => Err(CaseError::Failed(format!("observe did not show {what}"))),
    }
}

/// `observe` shows each change, in order: nobody, A, nobody (A resigned), B (a
/// greater term), nobody; and never the same leader twice in a row.
pub(crate) async fn observe_sees_every_change_in_order(ctx: &Ctx) -> CaseResult {
    let name = ctx.key("election-observed");
    let locker = ctx.locker().await?.with_label(LABEL);
    let election = locker.election(name.as_str()).ttl(TTL);
    let mut observer = ctx
        .locker()
        .await?
        .election(name.as_str())
        .observe()
        .interval(Duration::from_millis(20));
    ensure!(
        next(&mut observer, "the start").await?.is_none(),
        "a leader before any campaign"
    );
    let a = election.campaign("a").await?;
    check_leader(
        next(&mut observer, "A").await?.as_ref(),
        a.term().get(),
        "a",
        "A",
    )?;
    let a_term = a.term();
    a.resign().await?;
    ensure!(
        next(&mut observer, "A's resignation").await?.is_none(),
        "a leader after A resigned"
    );
    let b = election.campaign("b").await?;
    check_leader(
        next(&mut observer, "B").await?.as_ref(),
        b.term().get(),
        "b",
        "B",
    )?;
    ensure!(
        b.term() > a_term,
        "B's term {} is not above A's {a_term}",
        b.term()
    );
    b.resign().await?;
    ensure!(
        next(&mut observer, "B's resignation").await?.is_none(),
        "a leader after B resigned"
    );
    Ok(())
}

/// `proclaim` changes the value `leader` and `observe` show, keeping the term; a
/// leader whose hold vanished cannot proclaim, and learns it lost.
pub(crate) async fn proclaim_is_seen_by_leader_and_observe(ctx: &Ctx) -> CaseResult {
    let name = ctx.key("election-proclaimed");
    let (election, reader) = candidate_and_onlooker(ctx, &name).await?;
    let mut observer = reader.observe().interval(Duration::from_millis(20));
    let lead = election.campaign("first").await?;
    let term = lead.term().get();
    check_leader(
        next(&mut observer, "the leader").await?.as_ref(),
        term,
        "first",
        "first value",
    )?;
    lead.proclaim("second").await?;
    ensure!(
        lead.value() == "second",
        "the leadership keeps {:?}",
        lead.value()
    );
    check_leader(
        reader.leader().await?.as_ref(),
        term,
        "second",
        "leader() after proclaim",
    )?;
    check_leader(
        next(&mut observer, "the proclaimed value").await?.as_ref(),
        term,
        "second",
        "observe after proclaim",
    )?;
    ctx.vanish(&lockkit_core::LockKey::new(name.as_str())?)
        .await?;
    match lead.proclaim("third").await {
        Err(LockError::Lost { .. }) => {}
        Err(e) => fail!("a proclaim after the hold vanished failed with {e}, not Lost"),
        Ok(()) => fail!("a proclaim after the hold vanished succeeded"),
    }
    ensure!(
        lead.is_lost(),
        "the refused proclaim did not mark the leadership lost"
    );
    ensure!(
        reader.leader().await?.is_none(),
        "a leader shown after the hold vanished"
    );
    Ok(())
}

/// An observer whose interval is a minute sees a resignation within seconds:
/// the backend's change signal woke it. It is armed before the observer's
/// reading, so a change right after that reading is not missed either.
pub(crate) async fn observe_wakes_on_the_backend_signal(ctx: &Ctx) -> CaseResult {
    let name = ctx.key("election-signalled");
    let lead = ctx
        .locker()
        .await?
        .with_label(LABEL)
        .election(name.as_str())
        .ttl(TTL)
        .campaign("a")
        .await?;
    let counted = Counted::new(ctx.harness.driver().await?);
    let mut observer = lockkit_core::Locker::new(counted.clone())
        .election(name.as_str())
        .observe()
        .interval(Duration::from_secs(60));
    check_leader(
        next(&mut observer, "the leader").await?.as_ref(),
        lead.term().get(),
        "a",
        "first",
    )?;
    let waiting = tokio::spawn(async move { observer.changed().await });
    // The observer's next reading has returned: it now waits on the signal.
    ensure!(
        counted.until_inspected(2, SEEN_WITHIN).await,
        "the observer did not read the leader again within {SEEN_WITHIN:?}"
    );
    let resigned = Instant::now();
    lead.resign().await?;
    let seen = match timeout(SEEN_WITHIN, waiting).await {
        Ok(Ok(r)) => r?,
        Ok(Err(e)) => fail!("the observer panicked: {e}"),
        Err(_) => fail!(
            "the observer did not see the resignation within {SEEN_WITHIN:?} (its interval is 60 s: no signal woke it)"
        ),
    };
    ensure!(
        seen.is_none(),
        "a leader shown after the resignation: {seen:?}"
    );
    ensure!(
        resigned.elapsed() < SEEN_WITHIN,
        "the resignation was seen only after {:?}",
        resigned.elapsed()
    );
    Ok(())
}
