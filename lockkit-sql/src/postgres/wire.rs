//! How the lease mode's statements reach the server (invariant P4): prepared,
//! by name, as sqlx does by default; or, behind a transaction-mode pooler such
//! as PgBouncer, as plain text with their values written in.
//!
//! Behind such a pooler a client connection's statements run on whichever
//! server connection is free at the time. A named prepared statement
//! (`sqlx_s_1`) belongs to the server connection, so two clients collide on
//! its name; sqlx's unnamed statements are worse, as their parse and their
//! execution are two requests that may reach two server connections, running
//! another client's statement with our values. So there each statement goes
//! as one simple-protocol query, its values inlined as literals
//! ([`literal`]): one request, one server connection, nothing left behind.

use std::sync::Arc;

use sqlx::postgres::{PgConnection, PgRow, Postgres};
use sqlx::{AssertSqlSafe, Executor};

use crate::warm::{Warm, ran_to_end};

/// One value a statement is sent with, for its `$n` placeholder.
#[derive(Debug, Clone)]
pub(super) enum Value<'a> {
    Text(&'a str),
    MaybeText(Option<&'a str>),
    Int(i64),
    MaybeInt(Option<i64>),
    Float(f64),
    Texts(Vec<&'a str>),
}

/// How statements reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    /// Prepared once per connection, then sent by name with bound values.
    Prepared,
    /// As text, values inlined: behind a transaction-mode pooler.
    Simple,
}

/// Where a statement runs: on a connection the driver keeps warm
/// (from `&Warm<Postgres>`), or on one the caller holds, such as a
/// transaction's (from `&mut PgConnection`).
pub(super) enum On<'c> {
    Warm(&'c Warm<Postgres>),
    Conn(&'c mut PgConnection),
}

impl<'c> From<&'c Warm<Postgres>> for On<'c> {
    fn from(warm: &'c Warm<Postgres>) -> Self {
        On::Warm(warm)
    }
}

impl<'c> From<&'c mut PgConnection> for On<'c> {
    fn from(conn: &'c mut PgConnection) -> Self {
        On::Conn(conn)
    }
}

impl Wire {
    /// Runs `sql` with `values` `on` a connection: every row it returns.
    pub(super) async fn rows<'c>(
        self,
        on: impl Into<On<'c>>,
        sql: &Arc<str>,
        values: &[Value<'_>],
    ) -> Result<Vec<PgRow>, sqlx::Error> {
        match on.into() {
            On::Warm(warm) => {
                let mut conn = warm.conn().await?;
                let rows = self.rows_on(&mut *conn, sql, values).await;
                conn.done(ran_to_end(&rows));
                rows
            }
            On::Conn(conn) => self.rows_on(conn, sql, values).await,
        }
    }

    /// Runs `sql` with `values` on `executor`: every row it returns.
    async fn rows_on<'e>(
        self,
        executor: impl Executor<'e, Database = Postgres>,
        sql: &Arc<str>,
        values: &[Value<'_>],
    ) -> Result<Vec<PgRow>, sqlx::Error> {
        match self {
            Wire::Prepared => {
                let mut query = sqlx::query(AssertSqlSafe(sql.clone()));
                for value in values {
                    query = match value {
                        Value::Text(v) => query.bind(*v),
                        Value::MaybeText(v) => query.bind(*v),
                        Value::Int(v) => query.bind(*v),
                        Value::MaybeInt(v) => query.bind(*v),
                        Value::Float(v) => query.bind(*v),
                        Value::Texts(v) => query.bind(v.clone()),
                    };
                }
                query.fetch_all(executor).await
            }
            Wire::Simple => {
                let sql = inline(sql, values)?;
                sqlx::raw_sql(AssertSqlSafe(sql)).fetch_all(executor).await
            }
        }
    }

    /// Runs `sql` with `values` `on` a connection: the first row, if any.
    pub(super) async fn row<'c>(
        self,
        on: impl Into<On<'c>>,
        sql: &Arc<str>,
        values: &[Value<'_>],
    ) -> Result<Option<PgRow>, sqlx::Error> {
        Ok(self.rows(on, sql, values).await?.into_iter().next())
    }

    /// Runs `sql` with `values` `on` a connection: the first column of its
    /// first row, which it must return.
    pub(super) async fn scalar<'c, T>(
        self,
        on: impl Into<On<'c>>,
        sql: &Arc<str>,
        values: &[Value<'_>],
    ) -> Result<T, sqlx::Error>
    where
        T: for<'r> sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
    {
        use sqlx::Row;
        let row = self.row(on, sql, values).await?;
        row.ok_or(sqlx::Error::RowNotFound)?.try_get(0)
    }
}

/// `sql` with each `$n` replaced by the literal of `values[n - 1]`. lockkit's
/// statements hold no `$` but their placeholders.
fn inline(sql: &str, values: &[Value<'_>]) -> Result<String, sqlx::Error> {
    let mut out = String::with_capacity(sql.len() + 16 * values.len());
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - at - 1);
        let n: usize = rest[at + 1..at + 1 + digits]
            .parse()
            .map_err(|_| sqlx::Error::Protocol(format!("a `$` without a number in {sql}")))?;
        let value = n
            .checked_sub(1)
            .and_then(|i| values.get(i))
            .ok_or_else(|| sqlx::Error::Protocol(format!("no value for ${n} in {sql}")))?;
        out.push_str(&literal(value)?);
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A value as an SQL literal: text as an escape string (`E'…'`, each `\` and
/// `'` doubled, so that it reads the same whatever
/// `standard_conforming_strings` says), numbers as they print, arrays as
/// `ARRAY[…]::text[]`. Text with a NUL, which PostgreSQL text cannot hold, is
/// refused.
fn literal(value: &Value<'_>) -> Result<String, sqlx::Error> {
    Ok(match value {
        Value::Text(v) => text(v)?,
        Value::MaybeText(None) => "NULL".to_owned(),
        Value::MaybeText(Some(v)) => text(v)?,
        Value::Int(v) | Value::MaybeInt(Some(v)) => format!("({v})::int8"),
        Value::MaybeInt(None) => "NULL::int8".to_owned(),
        Value::Float(v) if v.is_finite() => format!("({v:?})::float8"),
        Value::Float(_) => return Err(sqlx::Error::Protocol("a value that is no number".into())),
        Value::Texts(v) => {
            let items: Result<Vec<String>, _> = v.iter().map(|t| text(t)).collect();
            format!("ARRAY[{}]::text[]", items?.join(","))
        }
    })
}

fn text(v: &str) -> Result<String, sqlx::Error> {
    if v.contains('\0') {
        return Err(sqlx::Error::Protocol("text holding a NUL character".into()));
    }
    Ok(format!(
        "E'{}'",
        v.replace('\\', "\\\\").replace('\'', "''")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_in_as_literals_that_read_back_the_same() {
        let sql = "SELECT $1, $2, $3, $10, $4, $5";
        let mut values = vec![
            Value::Text("it's a \\ key"),
            Value::MaybeText(None),
            Value::Float(1500.0),
            Value::Int(-7),
            Value::Texts(vec!["a", "b'"]),
        ];
        values.resize(10, Value::Int(0));
        values[9] = Value::Text("tenth");
        assert_eq!(
            inline(sql, &values).unwrap(),
            "SELECT E'it''s a \\\\ key', NULL, (1500.0)::float8, E'tenth', (-7)::int8, \
             ARRAY[E'a',E'b''']::text[]"
        );
    }

    #[test]
    fn text_that_postgres_cannot_hold_is_refused() {
        assert!(inline("SELECT $1", &[Value::Text("a\0b")]).is_err());
        assert!(inline("SELECT $2", &[Value::Text("a")]).is_err());
    }
}
