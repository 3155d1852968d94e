//! Lockkit's tables, made or brought up to date at connect: created if missing,
//! a `label` column made by an earlier lockkit (none, or in the server's
//! default character set, latin1 on MariaDB) turned into utf8mb4 (invariant
//! M6), and the key table given the columns added since.

use sqlx::mysql::MySqlPool;
use sqlx::{AssertSqlSafe, Error};

use super::sql::{LABEL, LATER_COLUMNS};

/// The character set of a table's column (NULL for a column that holds no
/// text); no row if it has no such column. Binds: table, column.
const COLUMN_CHARSET: &str = "SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?";

/// Runs `ddl` (`CREATE TABLE IF NOT EXISTS …`), then gives each of `labelled`
/// a utf8mb4 `label` column, and the key table `later` (if any) the columns
/// an earlier lockkit did not make ([`super::sql::LATER_COLUMNS`]).
pub(super) async fn tables(
    pool: &MySqlPool,
    ddl: &[String],
    labelled: &[String],
    later: Option<&str>,
) -> Result<(), Error> {
    for statement in ddl {
        sqlx::query(AssertSqlSafe(statement.clone()))
            .execute(pool)
            .await?;
    }
    for table in labelled {
        match charset(pool, table, "label").await? {
            None => add(pool, table, "ADD COLUMN", ("label", LABEL)).await?,
            Some(Some(charset)) if charset == "utf8mb4" => {}
            Some(_) => add(pool, table, "MODIFY", ("label", LABEL)).await?,
        }
    }
    for column in later
        .into_iter()
        .flat_map(|t| LATER_COLUMNS.map(|c| (t, c)))
    {
        let (table, (name, definition)) = column;
        if charset(pool, table, name).await?.is_none() {
            add(pool, table, "ADD COLUMN", (name, definition)).await?;
        }
    }
    Ok(())
}

/// Checks, for `tables=existing`, that `table` is in the URL's database with
/// the columns added since the first lockkit ([`LATER_COLUMNS`]): a look that
/// writes nothing.
pub(super) async fn existing(pool: &MySqlPool, table: &str) -> lockkit_core::Result<()> {
    let later = LATER_COLUMNS
        .map(|(name, _)| format!("'{name}'"))
        .join(", ");
    let (found, columns): (i64, i64) = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT (SELECT COUNT(*) FROM information_schema.TABLES
                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?),
                (SELECT COUNT(*) FROM information_schema.COLUMNS
                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?
                   AND COLUMN_NAME IN ({later}))"
    )))
    .bind(table)
    .bind(table)
    .fetch_one(pool)
    .await
    .map_err(|e| crate::error::db_error("mysql", e))?;
    if found == 0 {
        return Err(crate::table::no_lock_table(table, "this MySQL database"));
    }
    if columns < LATER_COLUMNS.len() as i64 {
        return Err(crate::table::outdated_tables(table, "MySqlDriver::migrate"));
    }
    Ok(())
}

/// `Some` with the column's character set if `table` has the column.
async fn charset(
    pool: &MySqlPool,
    table: &str,
    column: &str,
) -> Result<Option<Option<String>>, Error> {
    sqlx::query_scalar(COLUMN_CHARSET)
        .bind(table)
        .bind(column)
        .fetch_optional(pool)
        .await
}

/// `ALTER TABLE table change name definition`.
async fn add(
    pool: &MySqlPool,
    table: &str,
    change: &str,
    (name, definition): (&str, &str),
) -> Result<(), Error> {
    let altered = sqlx::query(AssertSqlSafe(format!(
        "ALTER TABLE {table} {change} {name} {definition}"
    )))
    .execute(pool)
    .await;
    match altered {
        // Another driver may have added it meanwhile (42S21: duplicate column).
        Err(e) if e.as_database_error().and_then(|d| d.code()).as_deref() == Some("42S21") => {
            Ok(())
        }
        other => other.map(drop),
    }
}
