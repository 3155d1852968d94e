//! A key's holds as every lease table keeps them, whatever the database: the key
//! row, and the holders table for shared holds and permits.
//!
//! The key row carries the fencing counter for every mode. Its owner is the
//! exclusive holder, or [`MANY`] while the holds are rows of `<table>_holders`,
//! with the key row's expiry the latest of theirs — so the exclusive path, one
//! statement on the key row, sees a key with readers or permits as held. A holder
//! row counts only while the key row is [`MANY`] and live: a key taken over by an
//! exclusive holder after every hold expired leaves its old rows behind, dead.
//!
//! Each database reads these rows with the lease left in milliseconds (its own
//! clock), and [`holds`] turns them into [`Hold`]s for
//! [`lockkit_core::driver::admit`] and into an [`Inspection`].

use std::time::Duration;

use lockkit_core::driver::{Hold, Holder, Inspection, LockMode};
use lockkit_core::{FencingToken, LockKey, OwnerId};

use crate::mode_names::mode_of;

/// The key row's owner while its holds are in the holders table.
pub(crate) const MANY: &str = "*";

/// A key row: owner, fence, milliseconds left, label.
pub(crate) type KeyRow = (Option<String>, i64, i64, Option<String>);

/// A holders row: owner, mode, limit, token, milliseconds left, label.
pub(crate) type HolderRow = (String, String, Option<i64>, i64, i64, Option<String>);

/// One row of a query that reads the key row and its holders rows together
/// (`k` or `h` first, then the columns of a [`KeyRow`] or a [`HolderRow`], the
/// others NULL): what PostgreSQL and MySQL read in one statement.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) type InspectRow = (
    String,
    Option<String>,
    Option<String>,
    Option<i64>,
    i64,
    i64,
    Option<String>,
);

/// Splits [`InspectRow`]s into the key row and the holders rows.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn split(rows: Vec<InspectRow>) -> (Option<KeyRow>, Vec<HolderRow>) {
    let mut row = None;
    let mut many = Vec::new();
    for (kind, owner, mode, lim, token, left, label) in rows {
        if kind == "k" {
            row = Some((owner, token, left, label));
        } else {
            let mode = mode.unwrap_or_default();
            many.push((owner.unwrap_or_default(), mode, lim, token, left, label));
        }
    }
    (row, many)
}

/// A live hold, with its lease left and its holder's label.
#[derive(Debug, Clone)]
pub(crate) struct LiveHold {
    pub(crate) held: Hold,
    pub(crate) left: Duration,
    pub(crate) label: Option<String>,
}

fn owner_bits(hex: &str) -> u128 {
    OwnerId::from_hex(hex).map_or(0, |o| o.as_u128())
}

fn left(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// The live holds of a key: the key row's exclusive holder, or the holders rows
/// while the key row is [`MANY`] and live.
pub(crate) fn holds(row: Option<&KeyRow>, many: &[HolderRow]) -> Vec<LiveHold> {
    match row {
        Some((Some(owner), fence, ms, label)) if *ms > 0 && owner != MANY => vec![LiveHold {
            held: Hold {
                owner: owner_bits(owner),
                mode: LockMode::Exclusive,
                token: FencingToken(*fence as u64),
            },
            left: left(*ms),
            label: label.clone(),
        }],
        Some((Some(_), _, ms, _)) if *ms > 0 => many
            .iter()
            .filter(|h| h.4 > 0)
            .map(|(owner, mode, lim, token, ms, label)| LiveHold {
                held: Hold {
                    owner: owner_bits(owner),
                    mode: mode_of(mode, *lim),
                    token: FencingToken(*token as u64),
                },
                left: left(*ms),
                label: label.clone(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Just the [`Hold`]s, for [`lockkit_core::driver::admit`].
pub(crate) fn held(row: Option<&KeyRow>, many: &[HolderRow]) -> Vec<Hold> {
    holds(row, many).into_iter().map(|h| h.held).collect()
}

/// Whether `req`, a shared hold or permit, must wait beside these rows (as
/// [`lockkit_core::driver::admit`] would decide).
pub(crate) fn must_wait(
    driver: &'static str,
    req: &lockkit_core::driver::AcquireRequest,
    row: Option<&KeyRow>,
    many: &[HolderRow],
) -> bool {
    req.mode != LockMode::Exclusive
        && matches!(
            lockkit_core::driver::admit(driver, req, &held(row, many), []),
            lockkit_core::driver::Admission::Wait
        )
}

/// What inspection shows of `key`.
pub(crate) fn inspection(key: &LockKey, row: Option<&KeyRow>, many: &[HolderRow]) -> Inspection {
    let holders = holds(row, many)
        .into_iter()
        .map(|h| {
            Holder::new(h.held.mode, h.held.token)
                .with_remaining(h.left)
                .with_label(h.label)
        })
        .collect();
    Inspection::free(key.clone()).with_holders(holders)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_row(owner: &str, ms: i64) -> KeyRow {
        (Some(owner.to_string()), 7, ms, None)
    }

    fn reader(token: i64, ms: i64) -> HolderRow {
        (
            OwnerId::new().to_hex(),
            "shared".into(),
            None,
            token,
            ms,
            None,
        )
    }

    #[test]
    fn holder_rows_count_only_under_a_live_many_key_row() {
        let many = [reader(1, 500), reader(2, 0)];
        assert_eq!(holds(Some(&key_row(MANY, 500)), &many).len(), 1);
        assert!(holds(Some(&key_row(MANY, 0)), &many).is_empty());
        let exclusive = OwnerId::new().to_hex();
        let only = holds(Some(&key_row(&exclusive, 500)), &many);
        assert_eq!(only.len(), 1);
        assert_eq!(only[0].held.mode, LockMode::Exclusive);
        assert_eq!(only[0].held.token, FencingToken(7));
    }

    #[test]
    fn a_permit_row_keeps_its_limit() {
        let row = (
            OwnerId::new().to_hex(),
            "permit".into(),
            Some(3),
            4,
            100,
            None,
        );
        let h = holds(Some(&key_row(MANY, 100)), &[row]);
        assert_eq!(h[0].held.mode, LockMode::Permit { limit: 3 });
    }
}
