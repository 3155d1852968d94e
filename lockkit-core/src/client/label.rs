//! The owner label a hold shows in inspection when the caller sets none.

use std::sync::OnceLock;

/// The label lockkit gives an owner when neither [`crate::Locker::with_label`] nor
/// the owner itself sets one: `host/pid`, and `/task-N` inside a Tokio task.
///
/// A label is for people reading [`crate::Locker::inspect`] and backend state; it
/// never decides ownership (the secret [`crate::OwnerId`] does).
///
/// # Examples
///
/// ```
/// let label = lockkit::default_label();
/// assert!(label.contains(&format!("/{}", std::process::id())));
/// ```
pub fn default_label() -> String {
    // Asked on every acquire of a Locker without a label: `host/pid` is made once.
    static HOST_PID: OnceLock<String> = OnceLock::new();
    let host_pid = HOST_PID.get_or_init(|| format!("{}/{}", host(), std::process::id()));
    match tokio::task::try_id() {
        Some(task) => {
            use std::fmt::Write;
            let mut label = String::with_capacity(host_pid.len() + 16);
            label.push_str(host_pid);
            let _ = write!(label, "/task-{task}");
            label
        }
        None => host_pid.clone(),
    }
}

/// This machine's name, read once.
fn host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .or_else(|| std::env::var("COMPUTERNAME").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_string())
    })
}
