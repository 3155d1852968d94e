//! "Did you mean …": the nearest known name to a mistyped one.

/// The candidate nearest to `word`, if `word` looks like a typo of it: at most one
/// edit away for words of up to four characters, two for longer ones, or the start
/// of the candidate (`drift` for `drift_ms`). Letters are compared
/// case-insensitively; an edit is an insertion, deletion, substitution or a swap of
/// two neighbours.
///
/// # Examples
///
/// ```
/// use lockkit_core::url::did_you_mean;
///
/// assert_eq!(did_you_mean("fence_sed", ["prefix", "fence_seed"]), Some("fence_seed"));
/// assert_eq!(did_you_mean("postgre", ["postgres", "mysql"]), Some("postgres"));
/// assert_eq!(did_you_mean("colour", ["prefix", "wake"]), None);
/// ```
pub fn did_you_mean<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    let word = word.to_ascii_lowercase();
    let limit = if word.chars().count() <= 4 { 1 } else { 2 };
    candidates
        .into_iter()
        .map(|c| {
            let lower = c.to_ascii_lowercase();
            let d = distance(&word, &lower);
            let truncated = word.len() >= 4 && lower.starts_with(&word);
            (if truncated { d.min(limit) } else { d }, c)
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Optimal string alignment distance (Levenshtein plus adjacent swaps).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[n][m]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_edits_and_swaps() {
        assert_eq!(distance("redis", "redis"), 0);
        assert_eq!(distance("reids", "redis"), 1);
        assert_eq!(distance("postgre", "postgres"), 1);
        assert_eq!(distance("", "abc"), 3);
    }

    #[test]
    fn short_words_allow_one_edit_only() {
        assert_eq!(did_you_mean("zkk", ["zk", "etcd"]), Some("zk"));
        assert_eq!(did_you_mean("ab", ["zk"]), None);
        assert_eq!(did_you_mean("REDIS", ["redis"]), Some("redis"));
        assert_eq!(
            did_you_mean("drift", ["prefix", "drift_ms"]),
            Some("drift_ms")
        );
    }
}
