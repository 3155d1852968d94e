//! [`PrefixRule`]: what a driver's key prefix may be, checked the same way whether
//! it comes from a URL ([`Query::take_prefix`](super::Query::take_prefix)) or from code.

/// How a driver's `prefix` option is checked ([`Query::take_prefix`](super::Query::take_prefix)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrefixRule {
    /// A key path (etcd): trailing `/` dropped, no control characters.
    Path,
    /// A path that must not start with `/` either (Consul KV): `/` trimmed at both
    /// ends, no control characters.
    RelativePath,
    /// Part of a Redis key whose `{hash tag}` lockkit writes itself: no braces.
    NoBraces,
}

impl PrefixRule {
    /// `prefix` as this rule keeps it (trimmed of the slashes it drops), or why it
    /// is refused: for a prefix set in code rather than in a URL.
    ///
    /// # Errors
    ///
    /// The reason, for an empty prefix or a character the rule forbids.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockkit_core::url::PrefixRule;
    ///
    /// assert_eq!(PrefixRule::RelativePath.check("/app/locks/").as_deref(), Ok("app/locks"));
    /// assert!(PrefixRule::NoBraces.check("").is_err());
    /// ```
    pub fn check(self, prefix: &str) -> Result<String, &'static str> {
        let (kept, allowed, refusal) = match self {
            Self::Path => (
                prefix.trim_end_matches('/'),
                !prefix.chars().any(char::is_control),
                "prefix must be non-empty and contain no control characters",
            ),
            Self::RelativePath => (
                prefix.trim_matches('/'),
                !prefix.chars().any(char::is_control),
                "prefix must be non-empty and contain no control characters",
            ),
            Self::NoBraces => (
                prefix,
                !prefix.contains(['{', '}']),
                "prefix must be non-empty and contain no braces",
            ),
        };
        if kept.is_empty() || !allowed {
            return Err(refusal);
        }
        Ok(kept.to_string())
    }
}
