//! `lockkit ls URL [--prefix P]`: the locks held now, one holder a line, or
//! `--json`. Backends that cannot list say why (exit 2).

use std::process::ExitCode;

use lockkit::{Inspection, LockError};
use serde_json::Value;

use crate::inspect::{holder_line, to_json};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    url: crate::url_arg::OneUrl,
    /// Only the locks whose names start with this.
    #[arg(long, default_value = "")]
    prefix: String,
    /// At most this many locks.
    #[arg(long, default_value_t = 1000)]
    limit: usize,
    /// Prints JSON (a list of what `inspect --json` prints) instead of a table.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, LockError> {
    let locker = crate::url_arg::connect_to_look(&args.url.get()?).await?;
    let held = locker.list(&args.prefix, args.limit).await?;
    if args.json {
        let all: Vec<Value> = held.iter().map(to_json).collect();
        println!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
    } else {
        print!("{}", table(&held));
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per holder of each held lock.
fn table(held: &[Inspection]) -> String {
    if held.is_empty() {
        return "no lock is held\n".to_string();
    }
    let mut out = format!(
        "{:<24} {:<18} {:>12}  {:<16} {}\n",
        "key", "mode", "token", "lease left", "label"
    );
    for seen in held {
        for h in &seen.holders {
            out.push_str(&format!("{:<24} {}\n", seen.key.as_str(), holder_line(h)));
        }
    }
    let n = held.len();
    out.push_str(&format!("{n} lock{} held\n", if n == 1 { "" } else { "s" }));
    out
}
