//! Paired ratios and the run's noise band.
//!
//! Two libraries that took turns in the same rounds are compared round by round:
//! the ratio of their batch times in each round, and the median of those. The
//! control (lockkit measured twice, in two processes) gives the run's noise: the
//! 95% interval of its median ratio, bootstrapped over rounds, and how far that
//! median is from 1. A target met by less than that is *tied*, not *met*.

/// A paired comparison of `a` with `b`: `a`'s rate ÷ `b`'s.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paired {
    /// The median over rounds of `b`'s batch time ÷ `a`'s.
    pub(crate) median: f64,
    /// The 95% bootstrap interval of that median.
    pub(crate) low: f64,
    pub(crate) high: f64,
}

/// Bootstrap resamples of the rounds.
const RESAMPLES: usize = 2000;

/// `a`'s rate ÷ `b`'s, from the batch times of the rounds both ran; `None` with
/// fewer than 5 such rounds.
pub(crate) fn paired(a: &[u64], b: &[u64]) -> Option<Paired> {
    let ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(a, _)| **a > 0)
        .map(|(a, b)| *b as f64 / *a as f64)
        .collect();
    if ratios.len() < 5 {
        return None;
    }
    let (low, high) = bootstrap(ratios.len(), |picked| {
        median(picked.iter().map(|&i| ratios[i]).collect())
    });
    Some(Paired {
        median: median(ratios),
        low,
        high,
    })
}

/// The 95% bootstrap interval of `statistic` over `units` resampled with
/// replacement: `statistic` gets the indices of one resample.
pub(crate) fn bootstrap(units: usize, mut statistic: impl FnMut(&[usize]) -> f64) -> (f64, f64) {
    // A fixed seed: the same rounds give the same interval.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % n
    };
    let mut picked = vec![0; units];
    let mut values: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            picked.iter_mut().for_each(|i| *i = next(units));
            statistic(&picked)
        })
        .collect();
    values.sort_by(f64::total_cmp);
    (
        values[RESAMPLES * 25 / 1000],
        values[RESAMPLES * 975 / 1000 - 1],
    )
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The run's noise: how far a ratio can stray from the truth by the machine alone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Noise {
    /// The control's paired ratio (lockkit ÷ lockkit in another process).
    pub(crate) control: Paired,
    /// Half-width of the band around 1: the control's interval, or its distance
    /// from 1, whichever is wider.
    pub(crate) band: f64,
}

impl Noise {
    pub(crate) fn from_control(control: Paired) -> Self {
        let band = (control.high - control.median)
            .max(control.median - control.low)
            .max((control.median - 1.0).abs());
        Self { control, band }
    }
}

/// How a measured value stands against a target, given the noise band `band`.
pub(crate) fn verdict(value: f64, target: f64, higher_is_better: bool, band: f64) -> &'static str {
    verdict_between(value, value, target, higher_is_better, band)
}

/// How a value known to lie in `low..=high` stands against a target: met if all
/// of it, widened by the noise band `band`, meets the target; missed if none of
/// it does; else tied.
pub(crate) fn verdict_between(
    low: f64,
    high: f64,
    target: f64,
    higher_is_better: bool,
    band: f64,
) -> &'static str {
    let (met, tied) = if higher_is_better {
        (low * (1.0 - band) >= target, high * (1.0 + band) >= target)
    } else {
        (high * (1.0 + band) <= target, low * (1.0 - band) <= target)
    };
    match (met, tied) {
        (true, _) => "met",
        (false, true) => "tied (inside the noise band)",
        _ => "**missed**",
    }
}
