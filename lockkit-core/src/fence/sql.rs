//! [`FencedUpdate`]: the fenced `UPDATE` of any table, for any SQL database.

use crate::error::LockError;

/// How a database numbers the parameters of a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Placeholders {
    /// `$1, $2, …` (PostgreSQL; SQLite accepts `?1, ?2, …`, see
    /// [`Placeholders::QuestionNumbered`]).
    Dollar,
    /// `?1, ?2, …` (SQLite).
    QuestionNumbered,
    /// `?, ?, …`, bound in order (MySQL, MariaDB). The token is bound twice.
    Question,
}

/// A fenced `UPDATE` for any table: the row is written only if its fence column is
/// at most the token, and the token is recorded in the same statement. Zero rows
/// affected means a newer holder has written: the write is stale, discard the work.
///
/// Identifiers are checked (letters, digits and `_`, not starting with a digit), so
/// the statement is safe to run as built.
///
/// # Examples
///
/// ```
/// use lockkit::fence::{FencedUpdate, Placeholders};
///
/// let update = FencedUpdate::new("inventory", "sku")
///     .set("stock")
///     .fence_column("fence");
/// assert_eq!(
///     update.sql(Placeholders::Dollar)?,
///     "UPDATE inventory SET stock = $1, fence = $2 WHERE sku = $3 AND fence <= $2"
/// );
/// // MySQL: bind stock, token, sku, token.
/// assert_eq!(
///     update.sql(Placeholders::Question)?,
///     "UPDATE inventory SET stock = ?, fence = ? WHERE sku = ? AND fence <= ?"
/// );
/// assert!(FencedUpdate::new("inventory; DROP TABLE x", "sku").set("stock").sql(Placeholders::Dollar).is_err());
/// # Ok::<(), lockkit::LockError>(())
/// ```
///
/// With sqlx 0.9, whose `query()` takes a built `String` only inside
/// `sqlx::AssertSqlSafe` (the statement is safe as built: its identifiers were
/// checked, and every value is bound):
///
/// ```
/// use lockkit::FencingToken;
/// use lockkit::fence::{FencedUpdate, Placeholders};
/// use sqlx::Connection;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut db = sqlx::SqliteConnection::connect("sqlite::memory:").await?;
/// sqlx::query("CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock BIGINT, fence BIGINT NOT NULL DEFAULT 0)")
///     .execute(&mut db)
///     .await?;
/// sqlx::query("INSERT INTO inventory (sku, stock) VALUES ('sku-42', 10)").execute(&mut db).await?;
///
/// let update = FencedUpdate::new("inventory", "sku").set("stock").sql(Placeholders::QuestionNumbered)?;
/// let written = sqlx::query(sqlx::AssertSqlSafe(update.clone()))
///     .bind(9_i64) // stock
///     .bind(i64::try_from(FencingToken(8))?) // the holder's token
///     .bind("sku-42")
///     .execute(&mut db)
///     .await?;
/// assert_eq!(written.rows_affected(), 1);
///
/// // A holder that stalled past its lease comes back with token 7: refused.
/// let stale = sqlx::query(sqlx::AssertSqlSafe(update))
///     .bind(8_i64)
///     .bind(i64::try_from(FencingToken(7))?)
///     .bind("sku-42")
///     .execute(&mut db)
///     .await?;
/// assert_eq!(stale.rows_affected(), 0); // stale: discard the work
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedUpdate {
    table: String,
    key_column: String,
    fence_column: String,
    set: Vec<String>,
}

impl FencedUpdate {
    /// An update of `table`'s row whose `key_column` is bound last, with the
    /// fence kept in column `fence` unless [`fence_column`](Self::fence_column)
    /// says otherwise.
    pub fn new(table: impl Into<String>, key_column: impl Into<String>) -> Self {
        Self {
            table: table.into(),
            key_column: key_column.into(),
            fence_column: "fence".into(),
            set: Vec::new(),
        }
    }

    /// Writes `column` (bound in the order the columns are added).
    pub fn set(mut self, column: impl Into<String>) -> Self {
        self.set.push(column.into());
        self
    }

    /// The column that keeps the highest token written (`BIGINT NOT NULL DEFAULT
    /// 0`).
    pub fn fence_column(mut self, column: impl Into<String>) -> Self {
        self.fence_column = column.into();
        self
    }

    /// The statement. Bind the [`set`](Self::set) values in order, then the token
    /// (as `i64`), then the key; with [`Placeholders::Question`], bind the token
    /// once more after the key.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] for an identifier that is not plain, or no column to
    /// set.
    pub fn sql(&self, style: Placeholders) -> Result<String, LockError> {
        for name in [&self.table, &self.key_column, &self.fence_column]
            .into_iter()
            .chain(&self.set)
        {
            check_identifier(name)?;
        }
        if self.set.is_empty() {
            return Err(LockError::Config(
                "a fenced update sets at least one column: add .set(\"column\")".into(),
            ));
        }
        let n = self.set.len();
        let p = |i: usize| placeholder(style, i);
        let sets: Vec<String> = self
            .set
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} = {}", p(i + 1)))
            .collect();
        let (token, key) = (p(n + 1), p(n + 2));
        let fence = &self.fence_column;
        Ok(format!(
            "UPDATE {} SET {}, {fence} = {token} WHERE {} = {key} AND {fence} <= {token}",
            self.table,
            sets.join(", "),
            self.key_column,
        ))
    }
}

/// Parameter `i` (from 1) written in `style`.
pub(super) fn placeholder(style: Placeholders, i: usize) -> String {
    match style {
        Placeholders::Dollar => format!("${i}"),
        Placeholders::QuestionNumbered => format!("?{i}"),
        Placeholders::Question => "?".to_string(),
    }
}

/// Checks that `name` is a plain SQL identifier, safe to write into a statement.
pub(super) fn check_identifier(name: &str) -> Result<(), LockError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(LockError::Config(format!(
            "`{name}` is not a plain SQL identifier (letters, digits and `_`, not \
             starting with a digit, at most 63)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_columns_and_every_placeholder_style() {
        let u = FencedUpdate::new("accounts", "id")
            .set("balance")
            .set("updated_by")
            .fence_column("token");
        assert_eq!(
            u.sql(Placeholders::QuestionNumbered).unwrap(),
            "UPDATE accounts SET balance = ?1, updated_by = ?2, token = ?3 WHERE id = ?4 AND token <= ?3"
        );
        assert!(
            FencedUpdate::new("t", "k")
                .sql(Placeholders::Dollar)
                .is_err()
        );
        assert!(
            FencedUpdate::new("t", "1k")
                .set("v")
                .sql(Placeholders::Dollar)
                .is_err()
        );
    }
}
