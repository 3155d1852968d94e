//! How a case says "failed" or "skipped".

use std::fmt;

use lockkit_core::LockError;

/// Why a case did not pass.
#[derive(Debug)]
pub enum CaseError {
    /// The behaviour was wrong.
    Failed(String),
    /// The case cannot run on this driver (a capability is missing).
    Skipped(String),
}

/// What a case returns.
pub type CaseResult = Result<(), CaseError>;

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaseError::Failed(m) => write!(f, "failed: {m}"),
            CaseError::Skipped(m) => write!(f, "skipped: {m}"),
        }
    }
}

impl From<LockError> for CaseError {
    fn from(e: LockError) -> Self {
        CaseError::Failed(format!("unexpected error: {e}"))
    }
}

/// Fails the case with a formatted message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err($crate::check::CaseError::Failed(format!($($msg)+)));
        }
    };
}
pub(crate) use ensure;

/// Fails the case with a formatted message.
macro_rules! fail {
    ($($msg:tt)+) => {
        return Err($crate::check::CaseError::Failed(format!($($msg)+)))
    };
}
pub(crate) use fail;
