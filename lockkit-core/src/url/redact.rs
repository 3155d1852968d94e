//! Redaction: a URL made fit to show, before anything parses it.
//!
//! A password may hold any character, written percent-encoded or not, so no
//! parse of the URL is trusted to find where it ends. The userinfo is taken to
//! run from `://` to the *last* `@` of the whole URL, and is masked whole: a `?`,
//! `#` or `/` in a password that was not percent-encoded is masked with it. An
//! `@` in an option value makes more than the userinfo masked, never less.

/// The characters that end a user name in a URL, or mark it as possibly part of
/// a secret written in the wrong place.
const RESERVED: [char; 7] = ['@', '/', '?', '#', '&', '=', ':'];

/// Option names whose values are secrets: any name that contains one of these.
const SECRET_OPTIONS: [&str; 7] = [
    "password",
    "pass",
    "token",
    "secret",
    "auth",
    "credential",
    "apikey",
];

/// Replaces the whole userinfo (`user:password@`, or a token written there) and
/// the values of secret options (`token`, `password`, …) with `***`, so the URL
/// can be shown in errors and logs. It reads the URL as text: whatever is
/// malformed in it (no `//`, no scheme, a reserved character unescaped), no
/// secret is shown.
///
/// # Examples
///
/// ```
/// use lockkit::redact_url;
///
/// assert_eq!(redact_url("redis://user:hunter2@host:6379/0"), "redis://***@host:6379/0");
/// // Unescaped `@`, `/`, `?` or `#` in a password: still hidden whole.
/// assert_eq!(redact_url("redis://user:p@ss/w@host"), "redis://***@host");
/// assert_eq!(redact_url("redis://app:hunter2?x@127.0.0.1:1"), "redis://***@127.0.0.1:1");
/// assert_eq!(redact_url("redis://app:p@ss:w/rd#?%&@h:1"), "redis://***@h:1");
/// // Slashes or a scheme missing: masked from the start.
/// assert_eq!(redact_url("redis:/app:hunter2@h:1"), "***@h:1");
/// // (a user name without a scheme is masked with the password)
/// assert_eq!(redact_url("app:hunter2@h:1"), "***@h:1");
/// assert_eq!(redact_url("s3cret@h:1"), "***@h:1");
/// // Every option after a secret one is masked too: it may be the secret's rest.
/// assert_eq!(redact_url("consul://host?dc=x&token=abc&y=1"), "consul://host?dc=x&token=***&***");
/// assert_eq!(redact_url("zk://s3cret@host:2181"), "zk://***@host:2181");
/// assert_eq!(redact_url("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
/// ```
pub fn redact_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    // After `scheme://`, or from the start: without its slashes, what precedes
    // a `:` may be the userinfo's (`app:pw@h`, `p:w@h`), so a URL missing its
    // slashes is masked from the start, its scheme with it.
    let rest = match url.split_once("://") {
        Some((scheme, rest)) => {
            out.push_str(scheme);
            out.push_str("://");
            rest
        }
        None => url,
    };
    let rest = match rest.rsplit_once('@') {
        // The last `@` may be inside an option's value (`?name=…@…`): the
        // rest is masked whole, since what follows may be the rest of that
        // value (`token=a@&b`).
        Some((masked, _after))
            if masked
                .split_once('?')
                .is_some_and(|(_, options)| options.contains('=')) =>
        {
            out.push_str("***@***");
            return out;
        }
        Some((_userinfo, after)) => {
            out.push_str("***@");
            after
        }
        None => rest,
    };
    match rest.split_once('?') {
        Some((base, query)) => {
            out.push_str(base);
            out.push('?');
            push_masked_query(&mut out, query);
        }
        None => out.push_str(rest),
    }
    out
}

/// `text` with every URL in it redacted as [`redact_url`] does: for the error
/// messages of client libraries, which may quote the URL they were given. A
/// URL is the run of characters around a `://`, from its scheme to the next
/// white space, quote or bracket; the rest of the text is left as it is (an
/// `@` in "Access denied for user 'app'@'host'" is not a URL's).
///
/// # Examples
///
/// ```
/// use lockkit_core::url::redact_urls_in;
///
/// assert_eq!(
///     redact_urls_in("cannot reach redis://app:s3cret@h:1/0 (refused)"),
///     "cannot reach redis://***@h:1/0 (refused)"
/// );
/// let denied = "Access denied for user 'root'@'127.0.0.1' (using password: NO)";
/// assert_eq!(redact_urls_in(denied), denied);
/// ```
pub fn redact_urls_in(text: &str) -> String {
    let ends_url = |c: char| c.is_whitespace() || "\"'`<>()[]{}".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let end = rest[at + 3..]
            .find(ends_url)
            .map_or(rest.len(), |i| at + 3 + i);
        out.push_str(&rest[..start]);
        out.push_str(&redact_url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A user name as `Debug` and logs may show it: `***` if it holds a character
/// that ends a user name in a URL (`@`, `/`, `?`, `#`, `:`, …), which a user
/// name parsed out of a URL does only when a password with such a character
/// unescaped was split in the wrong place (the same rule as [`redact_url`]).
///
/// ```
/// use lockkit_core::shown_user;
/// assert_eq!(shown_user("root"), "root");
/// assert_eq!(shown_user("s3cret@["), "***");
/// ```
pub fn shown_user(user: &str) -> &str {
    if user.contains(RESERVED) { "***" } else { user }
}

/// The options, each secret one's value masked; and every `&`-part after a
/// secret value, whole: any of them may be the rest of a value with an
/// unescaped `&` in it (`token=a&b=c` may be the token `a&b=c`).
fn push_masked_query(out: &mut String, query: &str) {
    let mut after_secret = false;
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        let name = pair.split_once('=').map(|(name, _)| name);
        match name {
            _ if after_secret => out.push_str("***"),
            Some(name) if is_secret_option(name) => {
                out.push_str(name);
                out.push_str("=***");
                after_secret = true;
            }
            _ => out.push_str(pair),
        }
    }
}

/// Whether an option's value is a secret, by its name (percent-decoded, as the
/// drivers read it).
pub(crate) fn is_secret_option(name: &str) -> bool {
    let name = super::percent_decode(name)
        .unwrap_or_else(|| name.to_owned())
        .to_ascii_lowercase();
    SECRET_OPTIONS.iter().any(|s| name.contains(s))
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn every_character_of_a_password_is_masked_wherever_it_would_end_a_parse() {
        for password in [
            "p@ss:w/rd#?%&",
            "a?b",
            "a#b",
            "a/b",
            "a@b",
            "%zz",
            "a&token=b",
        ] {
            let url = format!("redis://app:{password}@127.0.0.1:6379/0?prefix=x");
            let shown = redact_url(&url);
            assert_eq!(shown, "redis://***@127.0.0.1:6379/0?prefix=x", "{password}");
        }
    }

    #[test]
    fn a_token_written_as_the_userinfo_is_masked_whole() {
        assert_eq!(redact_url("consul://ab:cd@h:1"), "consul://***@h:1");
        assert_eq!(redact_url("zk://s3cret@h:1"), "zk://***@h:1");
    }

    #[test]
    fn secret_options_are_masked_in_any_case() {
        assert_eq!(
            redact_url("consul://h:1?x=1&AUTH_key=z"),
            "consul://h:1?x=1&AUTH_key=***"
        );
        // After a secret, every part is masked: `x=1` may be the token's rest.
        assert_eq!(
            redact_url("consul://h:1?Token=abc&x=1&AUTH_key=z"),
            "consul://h:1?Token=***&***&***"
        );
        // Written percent-encoded, as the drivers decode it.
        assert_eq!(
            redact_url("consul://h:1?tok%65n=abc"),
            "consul://h:1?tok%65n=***"
        );
    }
}
