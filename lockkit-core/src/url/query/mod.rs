//! [`Query`]: a URL's `?name=value&…` options, taken one by one by the driver, with
//! anything left over reported by name.

use std::ops::RangeInclusive;
use std::time::Duration;

use super::percent_decode;
use super::prefix::PrefixRule;
use super::redact::{is_secret_option, redact_url};
use super::suggest::did_you_mean;
use crate::error::LockError;

/// The options of a connection URL, taken one by one.
///
/// A driver takes each option it knows ([`take`](Self::take) and friends; the value
/// comes back percent-decoded), then calls [`finish`](Self::finish): an option
/// nobody took is an error that names it, suggests the nearest known name, and lists
/// them all, because a silently ignored typo (`fence_sed=clock`) turns a safety
/// setting off without a word. Every name the driver asked for counts as known,
/// whether or not the URL gave it.
///
/// # Examples
///
/// ```
/// use lockkit_core::url::Query;
///
/// let mut q = Query::parse("redis://h:6379?wake=poll&fence_sed=clock", "wake=poll&fence_sed=clock");
/// assert_eq!(q.take("wake")?.as_deref(), Some("poll"));
/// assert_eq!(q.take("fence_seed")?, None);
/// let err = q.finish().unwrap_err().to_string();
/// assert!(err.contains("unknown option `fence_sed`"), "{err}");
/// assert!(err.contains("did you mean `fence_seed`"), "{err}");
/// # Ok::<(), lockkit::LockError>(())
/// ```
#[derive(Debug)]
pub struct Query {
    shown_url: String,
    params: Vec<Param>,
    known: Vec<&'static str>,
}

#[derive(Debug)]
struct Param {
    name: String,
    /// The value as written (percent-encoded).
    value: String,
    /// `name=value` as written, for a client library that parses it itself.
    raw: String,
    taken: bool,
    /// After a secret option: maybe the rest of its value (see [`Query::parse`]).
    split_off: bool,
}

impl Query {
    /// The options in `query` (the text after `?`, without it) of `url` (used, with
    /// any secret redacted, in error messages).
    pub fn parse(url: &str, query: &str) -> Self {
        // Any part after a secret option may be the rest of its value, split at
        // an unescaped `&` (`token=a&b=c` may be the token `a&b=c`): such a
        // part's name and value are never shown.
        let mut after_secret = false;
        let params = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|pair| {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                let name = percent_decode(name).unwrap_or_else(|| name.to_string());
                let split_off = after_secret;
                after_secret = after_secret || is_secret_option(&name);
                Param {
                    name,
                    value: value.to_string(),
                    raw: pair.to_string(),
                    taken: false,
                    split_off,
                }
            })
            .collect();
        Self {
            shown_url: redact_url(url),
            params,
            known: Vec::new(),
        }
    }

    /// An option's value as an error may show it: `***` for a secret option's,
    /// and for any option after one (see [`Query::parse`]).
    fn shown<'v>(&self, name: &str, value: &'v str) -> &'v str {
        let after_secret = self.params.iter().any(|p| p.name == name && p.split_off);
        if after_secret || is_secret_option(name) {
            "***"
        } else {
            value
        }
    }

    /// An [`LockError::InvalidUrl`] for this URL.
    pub fn invalid(&self, reason: impl Into<String>) -> LockError {
        LockError::InvalidUrl {
            url: self.shown_url.clone(),
            reason: reason.into(),
        }
    }

    /// Takes option `name`: its value, percent-decoded, or `None` if the URL does not
    /// give it. An option written without `=` has the empty value.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] if the option is given twice, or its value is not
    /// valid percent-encoded UTF-8.
    pub fn take(&mut self, name: &'static str) -> Result<Option<String>, LockError> {
        if !self.known.contains(&name) {
            self.known.push(name);
        }
        let mut found: Option<String> = None;
        for p in self.params.iter_mut().filter(|p| p.name == name) {
            if found.is_some() {
                return Err(LockError::InvalidUrl {
                    url: self.shown_url.clone(),
                    reason: format!("option `{name}` is given twice; keep one"),
                });
            }
            p.taken = true;
            found = Some(p.value.clone());
        }
        found
            .map(|v| {
                percent_decode(&v).ok_or_else(|| {
                    self.invalid(format!("`{name}` is not valid percent-encoded UTF-8"))
                })
            })
            .transpose()
    }

    /// Takes option `name` and checks it is not empty.
    ///
    /// # Errors
    ///
    /// As [`take`](Self::take), and for an empty value.
    pub fn take_nonempty(&mut self, name: &'static str) -> Result<Option<String>, LockError> {
        match self.take(name)? {
            Some(v) if v.is_empty() => Err(self.invalid(format!("`{name}` needs a value"))),
            other => Ok(other),
        }
    }

    /// Takes option `name`, a whole number of milliseconds within `range`.
    ///
    /// # Errors
    ///
    /// As [`take`](Self::take), and for a value that is not such a number.
    pub fn take_millis(
        &mut self,
        name: &'static str,
        range: RangeInclusive<u64>,
    ) -> Result<Option<Duration>, LockError> {
        let Some(v) = self.take(name)? else {
            return Ok(None);
        };
        match v.parse::<u64>() {
            Ok(ms) if range.contains(&ms) => Ok(Some(Duration::from_millis(ms))),
            _ => Err(self.invalid(format!(
                "`{name}` must be a whole number of milliseconds from {} to {}, got `{}`",
                range.start(),
                range.end(),
                self.shown(name, &v)
            ))),
        }
    }

    /// Takes option `name`, one of `choices` (`(text, value)` pairs).
    ///
    /// # Errors
    ///
    /// As [`take`](Self::take), and for any other value, naming the choices.
    pub fn take_choice<T: Copy>(
        &mut self,
        name: &'static str,
        choices: &[(&str, T)],
    ) -> Result<Option<T>, LockError> {
        let Some(v) = self.take(name)? else {
            return Ok(None);
        };
        match choices.iter().find(|(text, _)| *text == v) {
            Some((_, value)) => Ok(Some(*value)),
            None => {
                let names: Vec<&str> = choices.iter().map(|(t, _)| *t).collect();
                Err(self.invalid(format!(
                    "`{name}` must be {}, got `{}`",
                    one_of(&names),
                    self.shown(name, &v)
                )))
            }
        }
    }

    /// Takes the timeouts every networked driver has, `connect_timeout_ms` and
    /// `request_timeout_ms` (1 ms to 1 hour), over `defaults`.
    ///
    /// # Errors
    ///
    /// As [`take_millis`](Self::take_millis).
    pub fn take_timeouts(&mut self, defaults: Timeouts) -> Result<Timeouts, LockError> {
        const RANGE: RangeInclusive<u64> = 1..=3_600_000;
        Ok(Timeouts {
            connect: self
                .take_millis("connect_timeout_ms", RANGE)?
                .unwrap_or(defaults.connect),
            request: self
                .take_millis("request_timeout_ms", RANGE)?
                .unwrap_or(defaults.request),
        })
    }

    /// Takes `prefix`, the namespace every lock key of a driver lives under, checked by
    /// `rule`; `default` when the URL gives none.
    ///
    /// # Errors
    ///
    /// As [`take`](Self::take), and for a prefix `rule` refuses, saying why.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockkit_core::url::{PrefixRule, Query};
    ///
    /// let mut q = Query::parse("etcd://h:1?prefix=app/locks/", "prefix=app/locks/");
    /// assert_eq!(q.take_prefix("lockkit", PrefixRule::Path)?, "app/locks");
    /// let mut q = Query::parse("redis://h:1?prefix=a{b}", "prefix=a{b}");
    /// assert!(q.take_prefix("lockkit", PrefixRule::NoBraces).is_err());
    /// # Ok::<(), lockkit::LockError>(())
    /// ```
    pub fn take_prefix(&mut self, default: &str, rule: PrefixRule) -> Result<String, LockError> {
        let Some(v) = self.take("prefix")? else {
            return Ok(default.to_string());
        };
        rule.check(&v).map_err(|why| self.invalid(why))
    }

    /// Ends parsing: every option must have been taken.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming the first unknown option, the nearest known
    /// name if it looks like a typo of one, and every known option.
    pub fn finish(self) -> Result<(), LockError> {
        self.finish_passing(&[]).map(|_| ())
    }

    /// Ends parsing, passing the options the driver's client library understands
    /// (`client`, as written) on to it; every other option must have been taken.
    ///
    /// # Errors
    ///
    /// As [`finish`](Self::finish).
    pub fn finish_passing(self, client: &[&str]) -> Result<Vec<String>, LockError> {
        let mut passed = Vec::new();
        for p in &self.params {
            if p.taken {
                continue;
            }
            if client.contains(&p.name.as_str()) {
                passed.push(p.raw.clone());
                continue;
            }
            if p.split_off {
                return Err(self.invalid(
                    "an unknown option after a secret one (not shown: it may be the rest \
                     of the secret, if that holds `&`; percent-encode `&` in a secret as %26)",
                ));
            }
            let mut known: Vec<&str> = self.known.clone();
            known.extend_from_slice(client);
            return Err(self.invalid(unknown_option(&p.name, &known)));
        }
        Ok(passed)
    }
}

/// "unknown option `x` (did you mean `y`?); the options are: a, b, c".
fn unknown_option(name: &str, known: &[&str]) -> String {
    // Only a name that looks like one is repeated: `?s3cret` may be a secret.
    let plain = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '[' | ']'));
    let mut out = if plain {
        format!("unknown option `{name}`")
    } else {
        "an unknown option".to_string()
    };
    if plain && let Some(near) = did_you_mean(name, known.iter().copied()) {
        out.push_str(&format!(" (did you mean `{near}`?)"));
    }
    if known.is_empty() {
        out.push_str("; this URL takes no options");
    } else {
        out.push_str(&format!("; the options are: {}", known.join(", ")));
    }
    out
}

/// "a, b or c".
pub(crate) fn one_of(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// How long a driver waits to connect, and for any one request to its backend.
///
/// Every networked driver has both, with defaults of its own, and takes them from
/// the URL as `connect_timeout_ms` and `request_timeout_ms`
/// ([`Query::take_timeouts`]). A server that accepts connections but never answers
/// then fails `connect` within about the connect timeout, with a
/// [`LockError::Connection`] that says so, instead of hanging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Timeouts {
    /// Connecting: the TCP connection, TLS and the backend's handshake, up to the
    /// first answer.
    pub connect: Duration,
    /// One request (a blocking wait on the backend, such as a Consul blocking
    /// query, gets this on top of its wait).
    pub request: Duration,
}

impl Timeouts {
    /// Timeouts of `connect` and `request`.
    pub const fn new(connect: Duration, request: Duration) -> Self {
        Self { connect, request }
    }
}

#[cfg(test)]
mod tests;
