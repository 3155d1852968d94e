//! What a backend stores of a holder beside its owner id: its label and, for an
//! election's leader, its value, kept as one text so that every driver that stores
//! a label stores the value too, with no layout of its own.

use crate::error::{LockError, Result};

/// Separates the label from the value in a holder's text. A label never contains
/// it: labels are cut of control characters ([`crate::OwnerId::with_label`]).
const SEPARATOR: char = '\u{1e}';

/// The longest election value kept, in bytes.
pub const MAX_VALUE_LEN: usize = 4096;

/// The text stored for a holder with `label` and `value`: the label alone, or the
/// label, `U+001E` and the value. `None` when there is neither.
///
/// # Examples
///
/// ```
/// use lockkit_core::driver::{holder_text, split_holder_text};
///
/// let text = holder_text(Some("web-1"), Some("http://10.0.0.7:8080")).unwrap();
/// assert_eq!(
///     split_holder_text(&text),
///     (Some("web-1".to_string()), Some("http://10.0.0.7:8080".to_string()))
/// );
/// assert_eq!(holder_text(Some("web-1"), None).as_deref(), Some("web-1"));
/// ```
pub fn holder_text(label: Option<&str>, value: Option<&str>) -> Option<String> {
    match (label, value) {
        (label, Some(value)) => Some(format!("{}{SEPARATOR}{value}", label.unwrap_or(""))),
        (Some(label), None) => Some(label.to_owned()),
        (None, None) => None,
    }
}

/// A holder's label and value from its stored text ([`holder_text`]). An empty
/// label is none.
pub fn split_holder_text(text: &str) -> (Option<String>, Option<String>) {
    let (label, value) = match text.split_once(SEPARATOR) {
        Some((label, value)) => (label, Some(value.to_owned())),
        None => (text, None),
    };
    ((!label.is_empty()).then(|| label.to_owned()), value)
}

/// Checks an election value: at most [`MAX_VALUE_LEN`] bytes, and no NUL (which
/// SQL text columns refuse).
///
/// # Errors
///
/// [`LockError::Config`] saying what is wrong, without the value.
pub fn validate_value(value: &str) -> Result<()> {
    if value.len() > MAX_VALUE_LEN {
        return Err(LockError::Config(format!(
            "an election value is at most {MAX_VALUE_LEN} bytes; this one has {}",
            value.len()
        )));
    }
    if value.contains('\0') {
        return Err(LockError::Config(
            "an election value cannot contain a NUL character".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_with_the_separator_survives_the_round_trip() {
        let text = holder_text(None, Some("a\u{1e}b")).unwrap();
        assert_eq!(
            split_holder_text(&text),
            (None, Some("a\u{1e}b".to_owned()))
        );
    }

    #[test]
    fn an_empty_value_is_kept_apart_from_none() {
        let text = holder_text(Some("l"), Some("")).unwrap();
        assert_eq!(
            split_holder_text(&text),
            (Some("l".to_owned()), Some(String::new()))
        );
        assert_eq!(split_holder_text("l"), (Some("l".to_owned()), None));
    }

    #[test]
    fn oversized_and_nul_values_are_config_errors() {
        assert!(validate_value(&"x".repeat(MAX_VALUE_LEN)).is_ok());
        assert!(matches!(
            validate_value(&"x".repeat(MAX_VALUE_LEN + 1)),
            Err(LockError::Config(_))
        ));
        assert!(matches!(validate_value("a\0b"), Err(LockError::Config(_))));
    }
}
