//! Go's duration strings (`time.ParseDuration`), which Consul takes for `TTL`,
//! `LockDelay` and `?wait=`, and Go's `%q` quoting, which its error messages use.

/// Nanoseconds in one unit of each suffix Go accepts.
const UNITS: &[(&str, i128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),  // µ (micro sign)
    ("\u{3bc}s", 1_000), // μ (Greek small mu)
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parses a Go duration ("15s", "1m30s", "1.5h", "-2ms", "0") into nanoseconds,
/// with Go's error text on failure (`time: invalid duration "x"`, …).
pub(crate) fn parse_go_duration(text: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", go_quote(text));
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    // Each round consumes one "<number><unit>"; the string shrinks every round.
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &rest[..int_len];
        rest = &rest[int_len..];
        let mut frac_part = "";
        if let Some(after_dot) = rest.strip_prefix('.') {
            let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &after_dot[..frac_len];
            rest = &after_dot[frac_len..];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {}", go_quote(text)));
        }
        let Some(&(_, scale)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                go_quote(unit),
                go_quote(text)
            ));
        };
        let whole: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut value = whole.checked_mul(scale).ok_or_else(invalid)?;
        // The fraction, truncated to whole nanoseconds like Go.
        let mut place = scale;
        for digit in frac_part.bytes().take(30) {
            place /= 10;
            if place == 0 {
                break;
            }
            value += i128::from(digit - b'0') * place;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > i128::from(i64::MAX) {
            return Err(invalid());
        }
    }
    let signed = if negative { -total } else { total };
    i64::try_from(signed).map_err(|_| invalid())
}

/// Go's `%q` for a string: double quotes, with `"` `\` and control characters
/// escaped; other printable characters as they are.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_go_parses() {
        let s = 1_000_000_000;
        assert_eq!(parse_go_duration("15s"), Ok(15 * s));
        assert_eq!(parse_go_duration("0"), Ok(0));
        assert_eq!(parse_go_duration("0s"), Ok(0));
        assert_eq!(parse_go_duration("1m30s"), Ok(90 * s));
        assert_eq!(parse_go_duration("1.5h"), Ok(5400 * s));
        assert_eq!(parse_go_duration(".5s"), Ok(s / 2));
        assert_eq!(parse_go_duration("-2ms"), Ok(-2_000_000));
        assert_eq!(parse_go_duration("100\u{b5}s"), Ok(100_000));
        assert_eq!(parse_go_duration("24h"), Ok(86_400 * s));
    }

    #[test]
    fn rejects_with_go_messages() {
        assert_eq!(
            parse_go_duration("abc"),
            Err("time: invalid duration \"abc\"".into())
        );
        assert_eq!(
            parse_go_duration("10"),
            Err("time: missing unit in duration \"10\"".into())
        );
        assert_eq!(
            parse_go_duration("10x"),
            Err("time: unknown unit \"x\" in duration \"10x\"".into())
        );
        assert!(parse_go_duration("").is_err());
        assert!(parse_go_duration("99999999999h").is_err());
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(go_quote("é"), "\"é\"");
    }
}
