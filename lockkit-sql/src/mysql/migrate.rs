//! Lockkit's tables, made or brought up to date at connect: created if missing,
//! and a `label` column made by an earlier lockkit (none, or in the server's
//! default character set, latin1 on MariaDB) turned into utf8mb4 (invariant M6).

use sqlx::mysql::MySqlPool;
use sqlx::{AssertSqlSafe, Error};

use super::sql::LABEL;

/// The character set of a table's `label` column; no row if it has none.
/// Binds: table.
const LABEL_CHARSET: &str = "SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'label'";

/// Runs `ddl` (`CREATE TABLE IF NOT EXISTS …`), then gives each of `labelled`
/// a utf8mb4 `label` column.
pub(super) async fn tables(
    pool: &MySqlPool,
    ddl: &[String],
    labelled: &[String],
) -> Result<(), Error> {
    for statement in ddl {
        sqlx::query(AssertSqlSafe(statement.clone()))
            .execute(pool)
            .await?;
    }
    for table in labelled {
        let charset: Option<Option<String>> = sqlx::query_scalar(LABEL_CHARSET)
            .bind(table)
            .fetch_optional(pool)
            .await?;
        let change = match charset {
            None => "ADD COLUMN",
            Some(Some(charset)) if charset == "utf8mb4" => continue,
            Some(_) => "MODIFY",
        };
        let altered = sqlx::query(AssertSqlSafe(format!(
            "ALTER TABLE {table} {change} label {LABEL}"
        )))
        .execute(pool)
        .await;
        match altered {
            // Another driver may have added it meanwhile (42S21: duplicate column).
            Err(e) if e.as_database_error().and_then(|d| d.code()).as_deref() == Some("42S21") => {}
            other => {
                other?;
            }
        }
    }
    Ok(())
}
