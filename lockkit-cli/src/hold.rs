//! `lockkit __hold`: the holder child process for `check`'s killed-holder case.

use std::process::ExitCode;

use lockkit::LockError;

pub(crate) async fn run() -> Result<ExitCode, LockError> {
    lockkit_conformance::holder::child_main(|url: String| async move {
        lockkit::driver::connect(&url).await
    })
    .await;
    Ok(ExitCode::SUCCESS)
}
