//! `lockkit inspect URL KEY`: who holds a key — mode, fencing token, lease left,
//! label — and how many wait for it, as a table or `--json`.

use std::process::ExitCode;

use crate::url_arg::UrlAndName;
use lockkit::{Holder, Inspection, LockError, LockMode};
use lockkit_core::human_duration as human;
use serde_json::{Value, json};

/// What `inspect` takes.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: UrlAndName,
    /// Prints JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Reads the key's holders and prints them.
pub(crate) async fn run(args: Args) -> Result<ExitCode, LockError> {
    let (url, key) = args.target.get()?;
    let locker = crate::url_arg::connect_to_look(&url).await?;
    let seen = locker.inspect(key.as_str()).await?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&seen)).unwrap_or_default()
        );
    } else {
        print!("{}", table(&seen));
    }
    Ok(ExitCode::SUCCESS)
}

/// A mode as the CLI names it: `exclusive`, `shared`, `permit`.
pub(crate) fn mode_name(mode: LockMode) -> &'static str {
    match mode {
        LockMode::Shared => "shared",
        LockMode::Permit { .. } => "permit",
        _ => "exclusive",
    }
}

fn holder_json(h: &Holder) -> Value {
    json!({
        "mode": mode_name(h.mode),
        "limit": h.mode.limit(),
        "token": h.token.get(),
        "remaining_ms": h.remaining.map(|d| d.as_millis() as u64),
        "label": h.label,
        "value": h.value,
    })
}

/// The inspection as JSON: `key`, `held`, `holders` and `waiters` (null where
/// the backend does not count them).
pub(crate) fn to_json(seen: &Inspection) -> Value {
    json!({
        "key": seen.key.as_str(),
        "held": seen.is_held(),
        "holders": seen.holders.iter().map(holder_json).collect::<Vec<_>>(),
        "waiters": seen.waiters,
    })
}

/// One holder as a table line: mode (a permit with its limit), token, lease
/// left (or "session-bound"), label.
pub(crate) fn holder_line(h: &Holder) -> String {
    let mode = match h.mode.limit() {
        Some(limit) => format!("permit of {limit}"),
        None => mode_name(h.mode).to_string(),
    };
    let left = h
        .remaining
        .map_or_else(|| "session-bound".to_string(), human);
    let label = h.label.as_deref().unwrap_or("-");
    format!("{mode:<18} {:>12}  {left:<16} {label}", h.token.get())
}

/// The inspection as a table, one holder a line.
pub(crate) fn table(seen: &Inspection) -> String {
    let mut out = if seen.is_held() {
        let n = seen.holders.len();
        let mut out = format!(
            "`{}` is held by {n} holder{}\n",
            seen.key,
            if n == 1 { "" } else { "s" }
        );
        out.push_str(&format!(
            "  {:<18} {:>12}  {:<16} {}\n",
            "mode", "token", "lease left", "label"
        ));
        for h in &seen.holders {
            out.push_str(&format!("  {}\n", holder_line(h)));
            if let Some(value) = &h.value {
                out.push_str(&format!("  {:<18} {value}\n", "  leader's value:"));
            }
        }
        out
    } else {
        format!("`{}` is free\n", seen.key)
    };
    match seen.waiters {
        Some(n) => out.push_str(&format!("waiters: {n}\n")),
        None => out.push_str("waiters: not counted by this backend\n"),
    }
    out
}
