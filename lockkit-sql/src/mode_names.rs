//! How lockkit-sql's tables name a hold's mode: the `mode` column of the lease
//! holders table and of `<table>_session_holds`.

use lockkit_core::LockMode;

/// The name a row gives `mode`.
pub(crate) fn mode_name(mode: LockMode) -> &'static str {
    match mode {
        LockMode::Shared => "shared",
        LockMode::Permit { .. } => "permit",
        _ => "exclusive",
    }
}

/// The mode a row names; a permit's row also has its limit.
pub(crate) fn mode_of(name: &str, limit: Option<i64>) -> LockMode {
    match (name, limit.and_then(|l| u32::try_from(l).ok())) {
        ("permit", Some(limit)) => LockMode::Permit { limit },
        ("shared", _) => LockMode::Shared,
        _ => LockMode::Exclusive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_reads_back_as_written() {
        for mode in [
            LockMode::Exclusive,
            LockMode::Shared,
            LockMode::Permit { limit: 7 },
        ] {
            assert_eq!(mode_of(mode_name(mode), mode.limit().map(i64::from)), mode);
        }
    }
}
