//! [`SqliteOptions`]: where the lock table lives and how to reach it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockkit_core::LockError;
use lockkit_core::url::ParsedUrl;

use crate::table::{DEFAULT_TABLE, Tables, validate_table};

/// The URL schemes the SQLite driver takes.
pub(super) const SCHEMES: &[&str] = &["sqlite"];

/// How long a statement waits for SQLite's write lock before failing.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Settings for [`super::SqliteDriver`].
///
/// # Examples
///
/// ```
/// use lockkit::sqlite::SqliteOptions;
///
/// let opts = SqliteOptions::from_url("sqlite:///tmp/locks.db?table=app_locks").unwrap();
/// assert_eq!(opts.table_name(), "app_locks");
/// assert!(SqliteOptions::from_url("sqlite::memory:").unwrap().is_memory());
/// assert!(SqliteOptions::from_url("sqlite://x.db?tabel=t").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    location: Location,
    table: String,
    busy_timeout: Duration,
    max_connections: u32,
    /// Whether opening may create the file and the tables (`tables=`).
    pub(super) tables: Tables,
}

#[derive(Debug, Clone)]
enum Location {
    File(PathBuf),
    Memory,
}

impl SqliteOptions {
    /// A lock table in the database file at `path` (created if missing).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self::with_location(Location::File(path.into()))
    }

    /// A private in-memory database: for tests within one driver.
    pub fn memory() -> Self {
        Self::with_location(Location::Memory)
    }

    fn with_location(location: Location) -> Self {
        Self {
            location,
            table: DEFAULT_TABLE.to_string(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            max_connections: 4,
            tables: Tables::Create,
        }
    }

    /// Parses `sqlite://path`, `sqlite:///abs/path`, `sqlite:path` or
    /// `sqlite::memory:`, with optional `?table=NAME&busy_timeout_ms=N`, and
    /// `tables=existing` to open only a file and a table that exist (a look
    /// that writes nothing).
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong.
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let mut parsed = ParsedUrl::parse(url, SCHEMES, "sqlite://locks.db")?;
        let path = parsed.body();
        let mut opts = if path == ":memory:" || path == "//:memory:" {
            Self::memory()
        } else {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(parsed.invalid(
                    "no database path; write `sqlite://locks.db`, `sqlite:///abs/path.db` or `sqlite::memory:`",
                ));
            }
            Self::new(path)
        };
        let query = &mut parsed.query;
        if let Some(table) = query.take("table")? {
            opts = opts
                .table(&table)
                .map_err(|e| query.invalid(e.to_string()))?;
        }
        if let Some(busy) = query.take_millis("busy_timeout_ms", 0..=3_600_000)? {
            opts = opts.busy_timeout(busy);
        }
        opts.tables = query
            .take_choice("tables", &Tables::CHOICES)?
            .unwrap_or_default();
        if query
            .take_choice("mode", &[("memory", true)])?
            .unwrap_or(false)
        {
            opts.location = Location::Memory;
        }
        parsed.query.finish()?;
        Ok(opts)
    }

    /// Uses the lease table `name` (letters, digits and `_`, not starting with a digit).
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] if `name` is not a plain SQL identifier.
    pub fn table(mut self, name: &str) -> Result<Self, LockError> {
        self.table = validate_table(name)?;
        Ok(self)
    }

    /// How long a statement waits for the write lock (default 5 s).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// The connection pool size (default 4; always 1 for `:memory:`).
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// The lease table's name.
    pub fn table_name(&self) -> &str {
        &self.table
    }

    /// Whether this is a private in-memory database.
    pub fn is_memory(&self) -> bool {
        matches!(self.location, Location::Memory)
    }

    /// The database file, if on disk.
    pub fn path(&self) -> Option<&Path> {
        match &self.location {
            Location::File(p) => Some(p),
            Location::Memory => None,
        }
    }

    pub(super) fn busy_timeout_value(&self) -> Duration {
        self.busy_timeout
    }

    pub(super) fn pool_size(&self) -> u32 {
        if self.is_memory() {
            1
        } else {
            self.max_connections
        }
    }

    /// Checks what can be checked before connecting: the directory must exist.
    pub(super) fn preflight(&self) -> Result<(), LockError> {
        let Some(path) = self.path() else {
            return Ok(());
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(LockError::Config(format!(
                "the directory `{}` for the SQLite lock file does not exist; create it or choose another path",
                dir.display()
            )));
        }
        if path.is_dir() {
            return Err(LockError::Config(format!(
                "`{}` is a directory; give the path of a database file inside it",
                path.display()
            )));
        }
        Ok(())
    }
}
