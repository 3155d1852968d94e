//! [`VersionedUpdate`]: optimistic concurrency's `UPDATE`, with no lock at all.

use super::sql::{Placeholders, check_identifier, placeholder};
use crate::error::LockError;

/// The `UPDATE` of optimistic concurrency for any table: the row is written only
/// if its version column still holds the version read, and the version goes up by
/// one in the same statement. Zero rows affected means another writer got there
/// first (or the row is gone): read again and retry, as
/// [`Optimistic::run`](super::Optimistic::run) does.
///
/// Unlike [`FencedUpdate`](super::FencedUpdate), no lock is taken: every writer
/// reads, computes and writes, and all but one of a set of concurrent writers
/// retry. It suits rows written rarely at once; under heavy contention a lock
/// wastes less work.
///
/// Identifiers are checked (letters, digits and `_`, not starting with a digit), so
/// the statement is safe to run as built.
///
/// # Examples
///
/// ```
/// use lockkit::fence::{Placeholders, VersionedUpdate};
///
/// let update = VersionedUpdate::new("inventory", "sku").set("stock");
/// // Bind stock, sku, then the version read.
/// assert_eq!(
///     update.sql(Placeholders::Dollar)?,
///     "UPDATE inventory SET stock = $1, version = version + 1 WHERE sku = $2 AND version = $3"
/// );
/// assert_eq!(
///     update.sql(Placeholders::Question)?,
///     "UPDATE inventory SET stock = ?, version = version + 1 WHERE sku = ? AND version = ?"
/// );
/// # Ok::<(), lockkit::LockError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedUpdate {
    table: String,
    key_column: String,
    version_column: String,
    set: Vec<String>,
}

impl VersionedUpdate {
    /// An update of `table`'s row whose `key_column` is bound after the values,
    /// with the version kept in column `version` unless
    /// [`version_column`](Self::version_column) says otherwise.
    pub fn new(table: impl Into<String>, key_column: impl Into<String>) -> Self {
        Self {
            table: table.into(),
            key_column: key_column.into(),
            version_column: "version".into(),
            set: Vec::new(),
        }
    }

    /// Writes `column` (bound in the order the columns are added).
    pub fn set(mut self, column: impl Into<String>) -> Self {
        self.set.push(column.into());
        self
    }

    /// The column that keeps the row's version (`BIGINT NOT NULL DEFAULT 0`).
    pub fn version_column(mut self, column: impl Into<String>) -> Self {
        self.version_column = column.into();
        self
    }

    /// The statement. Bind the [`set`](Self::set) values in order, then the key,
    /// then the version the row had when it was read. Every placeholder style
    /// binds the same order.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] for an identifier that is not plain, or no column to
    /// set.
    pub fn sql(&self, style: Placeholders) -> Result<String, LockError> {
        for name in [&self.table, &self.key_column, &self.version_column]
            .into_iter()
            .chain(&self.set)
        {
            check_identifier(name)?;
        }
        if self.set.is_empty() {
            return Err(LockError::Config(
                "a versioned update sets at least one column: add .set(\"column\")".into(),
            ));
        }
        let n = self.set.len();
        let sets: Vec<String> = self
            .set
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} = {}", placeholder(style, i + 1)))
            .collect();
        let version = &self.version_column;
        Ok(format!(
            "UPDATE {} SET {}, {version} = {version} + 1 WHERE {} = {} AND {version} = {}",
            self.table,
            sets.join(", "),
            self.key_column,
            placeholder(style, n + 1),
            placeholder(style, n + 2),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_columns_a_named_version_and_bad_identifiers() {
        let u = VersionedUpdate::new("accounts", "id")
            .set("balance")
            .set("updated_by")
            .version_column("rev");
        assert_eq!(
            u.sql(Placeholders::QuestionNumbered).unwrap(),
            "UPDATE accounts SET balance = ?1, updated_by = ?2, rev = rev + 1 WHERE id = ?3 AND rev = ?4"
        );
        assert!(
            VersionedUpdate::new("t", "k")
                .sql(Placeholders::Dollar)
                .is_err()
        );
        assert!(
            VersionedUpdate::new("t", "k")
                .set("v")
                .version_column("v; --")
                .sql(Placeholders::Dollar)
                .is_err()
        );
    }
}
