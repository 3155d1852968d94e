//! What a test process logged: one `tracing` subscriber per test binary that keeps
//! every line at `INFO` and above (or any level it is asked for), for the tests that assert what a library logs
//! (a warning it owes, a password it must never show).
//!
//! Under `cargo test` every test of a binary shares it: look for your own lines.

use std::sync::{Mutex, Once};

/// Every line the subscriber wrote.
static LOGGED: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct Capture;

impl std::io::Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        LOGGED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the capturing subscriber, at `INFO`: once per process, the later
/// calls do nothing. (A process that set another subscriber first captures
/// nothing.)
pub fn capture_logs() {
    capture_logs_at(tracing_subscriber::filter::LevelFilter::INFO);
}

/// As [`capture_logs`], keeping every line, `TRACE` included: whichever of the
/// two a process calls first sets the level.
pub fn capture_every_log() {
    capture_logs_at(tracing_subscriber::filter::LevelFilter::TRACE);
}

fn capture_logs_at(level: tracing_subscriber::filter::LevelFilter) {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let _ = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_ansi(false)
            .with_writer(|| Capture)
            .try_init();
    });
}

/// Everything logged so far (since [`capture_logs`]).
pub fn logged() -> String {
    let logged = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    String::from_utf8_lossy(&logged).into_owned()
}

/// The lines logged so far (since [`capture_logs`]) that contain `text`.
pub fn logged_lines(text: &str) -> Vec<String> {
    let logged = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    String::from_utf8_lossy(&logged)
        .lines()
        .filter(|l| l.contains(text))
        .map(str::to_owned)
        .collect()
}

/// Waits until a line containing `text` is logged, checking every 10 ms for at
/// most `within`: whether one was.
pub async fn logged_within(text: &str, within: std::time::Duration) -> bool {
    let end = tokio::time::Instant::now() + within;
    while logged_lines(text).is_empty() {
        if tokio::time::Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    true
}

/// After a wake-up channel went down and came back: `Ok` if the log holds one
/// `wake-ups lost` warning, naming `channel`, and one `wake-ups back` info line;
/// else what it holds.
pub fn one_outage_logged(channel: &str) -> Result<(), String> {
    let (lost, back) = (logged_lines("wake-ups lost"), logged_lines("wake-ups back"));
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
