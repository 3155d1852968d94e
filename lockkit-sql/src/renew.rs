//! What the SQL drivers share around renewals; the batching itself is
//! [`lockkit_core::renew_in_batches`].

use lockkit_core::{LockError, LockKey};

/// Largest batch in one statement (keeps bind counts well under every database's
/// limit).
pub(crate) const MAX_BATCH: usize = 400;

/// The error for a hold that is no longer ours.
pub(crate) fn not_ours(key: &LockKey) -> LockError {
    LockError::lost(key, "the row is no longer ours, or its lease ran out")
}

/// Which of `batch` a statement renewed, given the `(name, owner hex)` rows it
/// returned.
#[cfg(any(feature = "postgres", feature = "sqlite"))]
pub(crate) fn renewed_flags(
    batch: &[lockkit_core::Renewal],
    rows: Vec<(String, String)>,
) -> Vec<bool> {
    let renewed: std::collections::HashSet<(String, String)> = rows.into_iter().collect();
    batch
        .iter()
        .map(|r| renewed.contains(&(r.key.as_str().to_string(), r.owner.to_hex())))
        .collect()
}
