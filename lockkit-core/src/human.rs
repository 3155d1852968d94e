//! Durations as people read them.

use std::time::Duration;

/// `d` as a person reads it: `850 µs`, `12.5 ms`, `1.00 s`, `2 min 5 s`.
///
/// Used in every message lockkit prints, where `Debug`'s `1.002565199s` would be
/// noise.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use lockkit_core::human_duration;
///
/// assert_eq!(human_duration(Duration::from_nanos(1_002_565_199)), "1.00 s");
/// assert_eq!(human_duration(Duration::from_micros(12_500)), "12.5 ms");
/// assert_eq!(human_duration(Duration::from_millis(250)), "250 ms");
/// assert_eq!(human_duration(Duration::from_micros(850)), "850 µs");
/// assert_eq!(human_duration(Duration::from_secs(125)), "2 min 5 s");
/// ```
pub fn human_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if d < Duration::from_millis(1) {
        format!("{} µs", d.as_micros())
    } else if d < Duration::from_secs(1) {
        let ms = secs * 1000.0;
        if ms < 10.0 {
            format!("{ms:.2} ms")
        } else if ms < 100.0 {
            format!("{ms:.1} ms")
        } else {
            format!("{ms:.0} ms")
        }
    } else if d < Duration::from_secs(60) {
        format!("{secs:.2} s")
    } else if d < Duration::from_secs(3600) {
        let s = d.as_secs();
        format!("{} min {} s", s / 60, s % 60)
    } else if d < Duration::from_secs(86_400) {
        let s = d.as_secs();
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    } else {
        format!("{:.1} days", secs / 86_400.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_range_has_its_unit() {
        assert_eq!(human_duration(Duration::ZERO), "0 µs");
        assert_eq!(human_duration(Duration::from_micros(2_340)), "2.34 ms");
        assert_eq!(human_duration(Duration::from_secs(59)), "59.00 s");
        assert_eq!(human_duration(Duration::from_secs(7260)), "2 h 1 min");
        assert_eq!(
            human_duration(Duration::from_secs(30 * 86_400)),
            "30.0 days"
        );
    }
}
