//! `lockkit break URL KEY`: the operator's break-glass. Shows who holds the key,
//! asks before freeing it (unless `--yes`), then force-releases it; the holder
//! learns at its next renewal. Exits 1 when nothing was held.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use lockkit::{LockError, LockKey};

use crate::inspect;
use crate::url_arg::UrlAndName;

/// What `break` takes.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: UrlAndName,
    /// Frees it without asking.
    #[arg(long, short = 'y')]
    yes: bool,
}

/// Shows the holders, asks, and force-releases.
pub(crate) async fn run(args: Args) -> Result<ExitCode, LockError> {
    let (url, key) = args.target.get()?;
    let key = LockKey::new(key)?;
    let locker = crate::url_arg::connect_to_look(&url).await?;
    match locker.inspect(key.as_str()).await {
        Ok(seen) if !seen.is_held() => {
            print!("{}", inspect::table(&seen));
            println!("nothing to break");
            return Ok(ExitCode::FAILURE);
        }
        Ok(seen) => print!("{}", inspect::table(&seen)),
        Err(LockError::Unsupported { driver, .. }) => {
            println!("`{key}`: {driver} cannot show who holds it");
        }
        Err(e) => return Err(e),
    }
    if !args.yes && !confirmed(&key)? {
        println!("left as it is");
        return Ok(ExitCode::FAILURE);
    }
    if locker.driver().force_release(&key).await? {
        println!("`{key}` freed; its holder learns at its next renewal");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("nothing held `{key}` any more");
        Ok(ExitCode::FAILURE)
    }
}

/// Asks on the terminal; without one, `--yes` is required.
fn confirmed(key: &LockKey) -> Result<bool, LockError> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(LockError::Config(
            "break asks before freeing a lock, and stdin is not a terminal: pass --yes".into(),
        ));
    }
    print!("free `{key}` from its holder? [y/N] ");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    stdin
        .lock()
        .read_line(&mut answer)
        .map_err(|e| LockError::Config(format!("cannot read the answer: {e}")))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}
