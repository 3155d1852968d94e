//! The lease table's name, and the URL parameters every SQL driver shares.

use lockkit_core::LockError;

/// The default lease table.
pub const DEFAULT_TABLE: &str = "lockkit_locks";

/// Checks that `name` is a plain SQL identifier (it is spliced into statements).
///
/// # Errors
///
/// [`LockError::Config`] naming the rule.
pub(crate) fn validate_table(name: &str) -> Result<String, LockError> {
    let ok = name.len() <= 63
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(LockError::Config(format!(
            "table name `{name}` must be 1-63 letters, digits or `_`, not starting with a digit"
        )));
    }
    Ok(name.to_string())
}

/// What a database server URL says, for lockkit and for the database client.
/// Whether connecting creates lockkit's tables (`tables=create`, the default)
/// or only uses tables that exist (`tables=existing`): a look that writes
/// nothing, as `lockkit inspect`, `ls` and `break` take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Tables {
    #[default]
    Create,
    Existing,
}

impl Tables {
    /// The `tables=` option's values.
    pub(crate) const CHOICES: [(&'static str, Tables); 2] =
        [("create", Tables::Create), ("existing", Tables::Existing)];
}

/// The error of `tables=existing` on tables an earlier lockkit made, which
/// lack columns this one writes: `migrate` is the driver's call that adds them.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn outdated_tables(table: &str, migrate: &str) -> LockError {
    LockError::Config(format!(
        "the lock table `{table}` was made by an earlier lockkit and lacks columns this one \
         needs, and with tables=existing lockkit changes no table: connect once without \
         tables=existing (or call {migrate}) to add them"
    ))
}

/// The error of `tables=existing` when `table` is missing from the database.
pub(crate) fn no_lock_table(table: &str, database: &str) -> LockError {
    LockError::Config(format!(
        "no lock table `{table}` in {database}: nothing has been locked there yet, or the \
         URL names another database or table (with tables=existing, lockkit creates none)"
    ))
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
#[derive(Debug, Clone, Copy)]
pub struct ServerUrl {
    /// The schemes, the first being the one the client library takes.
    pub(crate) schemes: &'static [&'static str],
    /// What a URL looks like, for errors.
    pub(crate) example: &'static str,
    /// The options the client library understands (passed on as written).
    pub(crate) client_options: &'static [&'static str],
    /// The session-bound mode's name (`advisory`, `get_lock`).
    pub(crate) session: &'static str,
    /// The server's name in messages ("PostgreSQL").
    pub(crate) server: &'static str,
    /// Whether a URL must name a database (MySQL has no default one, where
    /// PostgreSQL takes the user's name).
    pub(crate) database_required: bool,
    /// How this database's URL spells its TLS options, for error messages.
    pub(crate) tls: TlsNames,
    /// Whether the URL takes `pooler=detect|transaction` (PostgreSQL).
    pub(crate) pooler: bool,
}

/// A database's TLS option names and the `mode` values that matter.
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct TlsNames {
    /// `sslmode`, `ssl-mode`.
    pub(crate) mode: &'static str,
    /// The CA file option: `sslrootcert`, `ssl-ca`.
    pub(crate) ca: &'static str,
    /// The client certificate option: `sslcert`, `ssl-cert`.
    pub(crate) cert: &'static str,
    /// Its key: `sslkey`, `ssl-key`.
    pub(crate) key: &'static str,
    /// The mode without TLS: `disable`, `DISABLED`.
    pub(crate) disabled: &'static str,
    /// The mode that verifies the server and its name: `verify-full`,
    /// `VERIFY_IDENTITY`.
    pub(crate) verify: &'static str,
    /// The mode that encrypts without verifying: `require`, `REQUIRED`.
    pub(crate) require: &'static str,
    /// The modes that connect without TLS when the server (or the build) has
    /// none: `disable`, `allow`, `prefer`; `DISABLED`, `PREFERRED`.
    pub(crate) plain_modes: &'static [&'static str],
    /// Other spellings of the same options, as the client accepts them:
    /// (alias, canonical) pairs.
    pub(crate) aliases: &'static [(&'static str, &'static str)],
}

/// The TLS options a URL gave (their values are paths and modes, not secrets).
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[derive(Debug, Clone, Default)]
pub(crate) struct TlsGiven {
    pub(crate) mode: Option<String>,
    pub(crate) ca: Option<String>,
    pub(crate) cert: Option<String>,
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl TlsGiven {
    /// Reads them from the options passed on to the client (`name=value`).
    fn from_passed(passed: &[String], names: TlsNames) -> Self {
        let mut given = Self::default();
        for pair in passed {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = names
                .aliases
                .iter()
                .find(|(alias, _)| *alias == name)
                .map_or(name, |(_, canonical)| canonical);
            let value = lockkit_core::url::percent_decode(value).unwrap_or_default();
            if name == names.mode {
                given.mode = Some(value);
            } else if name == names.ca {
                given.ca = Some(value);
            } else if name == names.cert {
                given.cert = Some(value);
            }
        }
        given
    }

    /// In a build without TLS: a [`LockError::Config`] for a mode that needs TLS,
    /// or for certificate files, which nothing would read.
    fn refuse_without_tls(&self, names: TlsNames) -> Result<(), LockError> {
        if let Some(mode) = &self.mode
            && !names
                .plain_modes
                .iter()
                .any(|m| m.eq_ignore_ascii_case(mode))
        {
            return Err(lockkit_core::tls::not_built(&format!(
                "{}={mode}",
                names.mode
            )));
        }
        if let Some((option, _)) = [(names.ca, &self.ca), (names.cert, &self.cert)]
            .into_iter()
            .find(|(_, given)| given.is_some())
        {
            return Err(lockkit_core::tls::not_built(option));
        }
        Ok(())
    }
}

/// How long connecting (and waiting for a pooled connection) may take by default.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) const DEFAULT_TIMEOUTS: lockkit_core::url::Timeouts = lockkit_core::url::Timeouts::new(
    std::time::Duration::from_secs(5),
    std::time::Duration::from_secs(5),
);

/// What stands between lockkit and a PostgreSQL server, as the URL's `pooler=`
/// says.
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Pooler {
    /// Found out at connect (the default).
    #[default]
    Detect,
    /// A transaction-mode pooler (PgBouncer's `pool_mode=transaction`).
    Transaction,
    /// Nothing that shares sessions: the server itself, or a pooler in
    /// session mode, or a plain TCP proxy.
    None,
}

/// lockkit's settings for a database server, beside the client's own connect
/// options (shared by the PostgreSQL and MySQL options).
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[derive(Clone)]
pub(crate) struct ServerSettings {
    /// The URL with any password redacted (what `Debug` shows).
    pub(crate) url: String,
    /// The lease table.
    pub(crate) table: String,
    /// Session-bound locks instead of leases.
    pub(crate) session_mode: bool,
    /// `key=raw`: a session-bound lock is named by the key itself, so that other
    /// clients' advisory locks and `GET_LOCK`s are the same locks.
    pub(crate) raw_keys: bool,
    /// The pool size, if set explicitly.
    pub(crate) pool_size: Option<u32>,
    /// Connecting, and each statement.
    pub(crate) timeouts: lockkit_core::url::Timeouts,
    /// How the URL was read (the server's name and TLS option names).
    pub(crate) kind: ServerUrl,
    /// The TLS options it gave.
    pub(crate) tls: TlsGiven,
    /// What the URL says of a connection pooler (`pooler=`, PostgreSQL).
    pub(crate) pooler: Pooler,
    /// Whether connecting may create the tables (`tables=`).
    pub(crate) tables: Tables,
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl std::fmt::Debug for ServerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSettings")
            .field("url", &self.url) // already redacted
            .field("table", &self.table)
            .field("session_mode", &self.session_mode)
            .field("raw_keys", &self.raw_keys)
            .field("pool_size", &self.pool_size())
            .field("timeouts", &self.timeouts)
            .field("pooler", &self.pooler)
            .field("tables", &self.tables)
            .finish()
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl ServerSettings {
    /// Settings with the defaults, for a URL of `kind` shown as `url`.
    pub(crate) fn new(url: &str, kind: ServerUrl) -> Self {
        Self {
            url: lockkit_core::redact_url(url),
            table: DEFAULT_TABLE.to_string(),
            session_mode: false,
            raw_keys: false,
            pool_size: None,
            timeouts: DEFAULT_TIMEOUTS,
            kind,
            tls: TlsGiven::default(),
            pooler: Pooler::Detect,
            tables: Tables::Create,
        }
    }

    /// Parses `url` as `kind` says: lockkit's options (`table`, `mode`, `key`,
    /// `connect_timeout_ms`, `request_timeout_ms`) into settings, and returns with
    /// them the URL for the database client (its scheme lowercased, its own options
    /// as written).
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] for another scheme, a bad table name or mode, or
    /// an option neither lockkit nor the client knows, naming it.
    pub(crate) fn parse(url: &str, kind: ServerUrl) -> Result<(Self, String), LockError> {
        let mut parsed = lockkit_core::url::ParsedUrl::parse(url, kind.schemes, kind.example)?;
        let mut settings = Self::new(url, kind);
        let query = &mut parsed.query;
        if let Some(table) = query.take("table")? {
            settings.table = validate_table(&table).map_err(|e| query.invalid(e.to_string()))?;
        }
        settings.session_mode = query
            .take_choice("mode", &[("lease", false), (kind.session, true)])?
            .unwrap_or(false);
        settings.raw_keys = query
            .take_choice("key", &[("hashed", false), ("raw", true)])?
            .unwrap_or(false);
        if settings.raw_keys && !settings.session_mode {
            return Err(query.invalid(format!(
                "`key=raw` names the server's own session locks: use it with `mode={}`",
                kind.session
            )));
        }
        if kind.pooler {
            let choices = [
                ("detect", Pooler::Detect),
                ("transaction", Pooler::Transaction),
                ("none", Pooler::None),
            ];
            settings.pooler = query.take_choice("pooler", &choices)?.unwrap_or_default();
        }
        settings.tables = query
            .take_choice("tables", &Tables::CHOICES)?
            .unwrap_or_default();
        settings.timeouts = query.take_timeouts(DEFAULT_TIMEOUTS)?;
        if kind.database_required
            && parsed
                .server()
                .is_ok_and(|s| s.path.trim_matches('/').is_empty())
        {
            return Err(parsed.invalid(format!(
                "the URL names no database, and {} has no default one: name the database \
                 that keeps the lock tables, as in {}",
                kind.server, kind.example
            )));
        }
        let body = client_body(&parsed)?;
        let passed = parsed.query.finish_passing(kind.client_options)?;
        settings.tls = TlsGiven::from_passed(&passed, kind.tls);
        if !cfg!(feature = "tls") {
            settings.tls.refuse_without_tls(kind.tls)?;
        }
        let mut client_url = format!("{}:{body}", kind.schemes[0]);
        if !passed.is_empty() {
            client_url.push('?');
            client_url.push_str(&passed.join("&"));
        }
        Ok((settings, client_url))
    }

    /// The pool size: as set, else 8 for leases and 32 for session-bound locks,
    /// where every held lock keeps a connection.
    pub(crate) fn pool_size(&self) -> u32 {
        self.pool_size
            .unwrap_or(if self.session_mode { 32 } else { 8 })
    }
}

/// The URL's body for sqlx's parser: as written, but with the userinfo
/// re-encoded, so that a password with an unescaped `/` or `@` reaches the
/// server whole.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn client_body(parsed: &lockkit_core::url::ParsedUrl<'_>) -> Result<String, LockError> {
    let body = parsed.body();
    match parsed.server() {
        Ok(server) => match server.userinfo {
            Some(userinfo) => {
                let userinfo = lockkit_core::url::reencoded_userinfo(userinfo)
                    .map_err(|why| parsed.invalid(why))?;
                Ok(format!("//{userinfo}@{}{}", server.hosts, server.path))
            }
            None => Ok(body.to_owned()),
        },
        Err(_) => Ok(body.to_owned()),
    }
}

/// For the options' tests.
#[cfg(test)]
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) mod tests {
    use super::{LockError, ServerSettings, ServerUrl};

    /// What a build without TLS says of `url`: `None` if it connects, else the
    /// refusal's text (a [`LockError::Config`]).
    fn refused_without_tls(url: &str, kind: ServerUrl) -> Option<String> {
        let (settings, _) = ServerSettings::parse(url, kind).unwrap();
        let refused = settings.tls.refuse_without_tls(kind.tls).err()?;
        assert!(matches!(refused, LockError::Config(_)), "{refused:?}");
        Some(refused.to_string())
    }

    /// In a build without TLS, each of `plain` connects, and each of `refused`
    /// is refused naming its option and the `tls` feature.
    pub(crate) fn check_without_tls(kind: ServerUrl, plain: &[&str], refused: &[(&str, &str)]) {
        for url in plain {
            assert_eq!(refused_without_tls(url, kind), None, "{url}");
        }
        for (url, named) in refused {
            let refused = refused_without_tls(url, kind).expect(url);
            assert!(
                refused.contains(named) && refused.contains("`tls` feature"),
                "{refused}"
            );
        }
    }
}
