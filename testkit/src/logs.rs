//! What one test logged, for the tests that assert what a library logs (a
//! warning it owes once, a password it must never show).
//!
//! Under `cargo test` the tests of a binary are threads of one process, so a
//! process-wide subscriber would show each test its neighbours' lines too (a
//! neighbour's server dies, and its driver warns as well). A [`LogCapture`] has a
//! subscriber of its own, set as the `tracing` default of every thread of the
//! runtime it runs the test on ([`LogCapture::block_on`]): the test's own code,
//! the tasks its drivers spawn in the background, the blocking pool's threads.
//! It keeps the lines of those threads and no others. (A span would not do: a
//! driver's background tasks carry none of the test's.) `log` records, sqlx's,
//! come in as `tracing` events, on the thread that logs them.
//!
//! One thing is shared by the process, and is set up once: [`Elsewhere`], kept
//! registered so that `tracing` never decides for every thread from one thread's
//! default (see there).

use std::cell::RefCell;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing::dispatcher::DefaultGuard;
use tracing::subscriber::{Interest, Subscriber};
use tracing::{Dispatch, Event, Metadata, span};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::util::SubscriberInitExt;

thread_local! {
    /// A runtime thread's capture: set when the thread starts, unset when it stops.
    static THREAD_CAPTURE: RefCell<Option<DefaultGuard>> = const { RefCell::new(None) };
}

/// The lines one test logged: see the module docs.
///
/// # Examples
///
/// ```
/// let logs = lockkit_testkit::LogCapture::start();
/// logs.block_on(async {
///     tokio::spawn(async { tracing::warn!("from a task") }).await.unwrap();
/// })
/// .unwrap();
/// assert_eq!(logs.lines("from a task").len(), 1);
/// ```
#[derive(Clone)]
pub struct LogCapture {
    logged: Arc<Mutex<Vec<u8>>>,
    dispatch: Dispatch,
}

impl std::fmt::Debug for LogCapture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogCapture").finish_non_exhaustive()
    }
}

/// The capture's writer: appends to its buffer.
struct Capture(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Registered for the life of the process, the default of no thread: with only
/// one subscriber registered, `tracing` caches whether a callsite is wanted by
/// asking the default of the thread that reaches it first — a neighbour test's
/// thread, with none, caches "never", and a capture misses that line for good.
/// With this one registered too it asks every subscriber, and this one answers
/// "sometimes": each event asks its own thread's default.
struct Elsewhere;

impl Subscriber for Elsewhere {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }
    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::OFF)
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

impl LogCapture {
    /// A capture of the lines at `INFO` and above.
    pub fn start() -> Self {
        Self::at(LevelFilter::INFO)
    }

    /// A capture of every line, `TRACE` included.
    pub fn every_level() -> Self {
        Self::at(LevelFilter::TRACE)
    }

    fn at(level: LevelFilter) -> Self {
        static ELSEWHERE: std::sync::OnceLock<Dispatch> = std::sync::OnceLock::new();
        ELSEWHERE.get_or_init(|| Dispatch::new(Elsewhere));
        let logged = Arc::new(Mutex::new(Vec::new()));
        let writer = {
            let logged = logged.clone();
            move || Capture(logged.clone())
        };
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_ansi(false)
            .with_writer(writer)
            .finish();
        Self {
            logged,
            dispatch: Dispatch::new(subscriber),
        }
    }

    /// Runs `test` to its end on a runtime of its own, multi-threaded with two
    /// workers (as `#[tokio::test(flavor = "multi_thread", worker_threads =
    /// 2)]`), every thread of which, and this one meanwhile, logs here. The
    /// runtime goes when `test` ends, and with it every task the test left.
    ///
    /// # Errors
    ///
    /// An I/O error if the runtime cannot be built.
    pub fn block_on<F: Future>(&self, test: F) -> std::io::Result<F::Output> {
        // Set first, so that it is still set while the runtime goes.
        let _this_thread = self.dispatch.clone().set_default();
        let dispatch = self.dispatch.clone();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .on_thread_start(move || {
                let guard = dispatch.clone().set_default();
                THREAD_CAPTURE.with(|c| *c.borrow_mut() = Some(guard));
            })
            .on_thread_stop(|| drop(THREAD_CAPTURE.with(|c| c.borrow_mut().take())))
            .build()?;
        Ok(runtime.block_on(test))
    }

    /// Everything logged here so far.
    pub fn logged(&self) -> String {
        let logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&logged).into_owned()
    }

    /// The lines logged here so far that contain `text`.
    pub fn lines(&self, text: &str) -> Vec<String> {
        self.logged()
            .lines()
            .filter(|l| l.contains(text))
            .map(str::to_owned)
            .collect()
    }

    /// Waits until a line containing `text` is logged here, checking every 10 ms
    /// for at most `within`: whether one was.
    pub async fn logged_within(&self, text: &str, within: Duration) -> bool {
        let end = tokio::time::Instant::now() + within;
        while self.lines(text).is_empty() {
            if tokio::time::Instant::now() >= end {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }

    /// After a wake-up channel went down and came back: `Ok` if this capture
    /// holds one `wake-ups lost` warning, naming `channel`, and one `wake-ups
    /// back` info line; else what it holds.
    pub fn one_outage(&self, channel: &str) -> Result<(), String> {
        let (lost, back) = (self.lines("wake-ups lost"), self.lines("wake-ups back"));
        let warned = matches!(lost.as_slice(), [l] if l.contains("WARN") && l.contains(channel));
        let back_once = matches!(back.as_slice(), [l] if l.contains("INFO"));
        if warned && back_once {
            return Ok(());
        }
        Err(format!(
            "one outage of `{channel}`: one warning and one info line expected; logged \
             {lost:#?} and {back:#?}"
        ))
    }
}
