//! How every verb takes its backend URL: as a positional argument, as `--url`, or
//! from `LOCKKIT_URL` — whichever the user writes.

use lockkit::LockError;

/// One backend (`check`, `run`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct OneUrl {
    /// The backend, e.g. sqlite:///tmp/locks.db (or --url URL, or LOCKKIT_URL).
    #[arg(value_name = "URL")]
    positional: Option<String>,
    /// The backend, as an option (the same as the positional URL).
    #[arg(long = "url", value_name = "URL")]
    flag: Option<String>,
}

impl OneUrl {
    /// The URL given.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] when none is given, or two different ones.
    pub(crate) fn get(&self) -> Result<String, LockError> {
        match (&self.positional, &self.flag) {
            (Some(a), Some(b)) if a != b => Err(LockError::Config(
                "two different URLs: give the backend once, as URL or as --url URL".into(),
            )),
            (Some(url), _) | (None, Some(url)) => Ok(url.clone()),
            (None, None) => from_env().ok_or_else(|| {
                LockError::Config(
                    "no backend URL: give one as URL, --url URL or LOCKKIT_URL \
                 (e.g. sqlite:///tmp/locks.db)"
                        .into(),
                )
            }),
        }
    }
}

/// Connects to `url` to look, not to lock (`inspect`, `ls`, `break`): on the SQL
/// backends with `tables=existing`, so that looking creates no table (nor a
/// SQLite file). A database where nothing was ever locked is then an error that
/// says so.
///
/// # Errors
///
/// As [`lockkit::connect`].
pub(crate) async fn connect_to_look(url: &str) -> Result<lockkit::Locker, LockError> {
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    let sql = matches!(
        scheme.as_deref(),
        Some("postgres" | "postgresql" | "mysql" | "mariadb" | "sqlite")
    );
    if !sql || url.contains("tables=") {
        return lockkit::connect(url).await;
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    lockkit::connect(&format!("{url}{sep}tables=existing")).await
}

/// `LOCKKIT_URL`, when nothing on the command line names a backend.
fn from_env() -> Option<String> {
    std::env::var("LOCKKIT_URL").ok().filter(|u| !u.is_empty())
}

/// A backend and a name after it (`inspect`, `break`: a key; `elect`: an
/// election): `URL NAME`, or `NAME` alone with `--url URL` or `LOCKKIT_URL`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct UrlAndName {
    /// The backend and the name: `URL NAME`, or `NAME` alone with --url URL or
    /// LOCKKIT_URL (e.g. redis://127.0.0.1:6379 orders).
    #[arg(value_name = "[URL] NAME", num_args = 1..=2, required = true)]
    positional: Vec<String>,
    /// The backend, as an option.
    #[arg(long = "url", value_name = "URL")]
    flag: Option<String>,
}

impl UrlAndName {
    /// The URL and the name given.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] when no URL is given, or two different ones.
    pub(crate) fn get(&self) -> Result<(String, String), LockError> {
        let (url, name) = match self.positional.as_slice() {
            [url, name] => (Some(url.clone()), name.clone()),
            [name] => (None, name.clone()),
            _ => return Err(LockError::Config("give the backend URL and a name".into())),
        };
        let one = OneUrl {
            positional: url,
            flag: self.flag.clone(),
        };
        Ok((one.get()?, name))
    }
}

/// One or more backends (`bench`, `compare`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ManyUrls {
    /// The backends, e.g. sqlite:///tmp/locks.db redis://127.0.0.1:6379 (or --url
    /// URL, repeated, or LOCKKIT_URL for one).
    #[arg(value_name = "URL")]
    positional: Vec<String>,
    /// A backend, as an option (repeat it for more).
    #[arg(long = "url", value_name = "URL")]
    flag: Vec<String>,
}

impl ManyUrls {
    /// Every URL given, positional ones first.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] when none is given.
    pub(crate) fn get(&self) -> Result<Vec<String>, LockError> {
        let mut urls: Vec<String> = self
            .positional
            .iter()
            .chain(self.flag.iter())
            .cloned()
            .collect();
        if urls.is_empty() {
            urls.extend(from_env());
        }
        if urls.is_empty() {
            return Err(LockError::Config(
                "no backend URL: give one or more as URL…, --url URL or LOCKKIT_URL \
                 (e.g. sqlite:///tmp/locks.db)"
                    .into(),
            ));
        }
        Ok(urls)
    }
}
