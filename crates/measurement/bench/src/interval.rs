//! Ratios of repeated runs with the interval their repeats allow, and whether a difference is
//! inside the noise: one definition for the bench's tables, its JSON, the report's charts and the
//! study's page. Where both runs were repeated at least [`MIN_BOOTSTRAP_REPEATS`] times in the same
//! rounds, the interval is a bootstrap 95% interval over the paired repeats; otherwise the range of
//! their extremes.

use crate::{RunResult, StoreKind};
use bal_replay_engine::{ExecMode, IoDesign};

/// Paired repeats from which a ratio's interval is bootstrapped rather than taken from the extremes.
pub const MIN_BOOTSTRAP_REPEATS: usize = 3;

/// Resamples a bootstrap interval draws.
const BOOTSTRAP_RESAMPLES: usize = 4000;

/// How [`Interval::ratio`] makes its interval, as the pages say it.
pub const INTERVAL_METHOD: &str = "a bootstrap 95% interval over the paired repeats (round r of one configuration with round r of the other, the ratio of the resampled medians, 4,000 resamples) where both ran at least 3 times; otherwise the range of the repeats' extremes (the slowest over the other's fastest, and the other way round)";

/// A ratio with the interval its repeats allow: the ratio of the runs' medians, and the low and
/// high ends of a bootstrap 95% interval over their paired repeats (or of their extremes, where
/// fewer than [`MIN_BOOTSTRAP_REPEATS`] pair).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interval {
    /// The ratio of the medians.
    pub median: f64,
    /// The lowest the repeats allow.
    pub low: f64,
    /// The highest.
    pub high: f64,
}

impl Interval {
    /// `numerator / denominator` of two repeated runs: bootstrapped over their paired repeats
    /// where both have [`MIN_BOOTSTRAP_REPEATS`] in the same rounds, else from their extremes.
    pub fn ratio(numerator: &RunResult, denominator: &RunResult) -> Self {
        let (n, d) = (&numerator.throughput, &denominator.throughput);
        let (ns, ds) = (&numerator.repeat_mgas_per_s, &denominator.repeat_mgas_per_s);
        if ns.len() == ds.len() && ns.len() >= MIN_BOOTSTRAP_REPEATS && d.mgas_per_s > 0.0 {
            return Self::bootstrap(n.mgas_per_s / d.mgas_per_s, ns, ds);
        }
        Self::of_extremes(
            [n.mgas_per_s, n.mgas_per_s_min, n.mgas_per_s_max],
            [d.mgas_per_s, d.mgas_per_s_min, d.mgas_per_s_max],
        )
    }

    /// [`Interval::ratio`] where either run was repeated; `None` for two single runs, whose
    /// ratio has no range to tell.
    pub fn of_repeats(numerator: &RunResult, denominator: &RunResult) -> Option<Self> {
        (numerator.throughput.repeats > 1 || denominator.throughput.repeats > 1)
            .then(|| Self::ratio(numerator, denominator))
    }

    /// The ratio of two figures given as `[median, lowest, highest]` over their repeats. An
    /// extreme that is not positive (a result of one run, written before runs carried their
    /// spread) stands for the median.
    pub fn of_extremes(numerator: [f64; 3], denominator: [f64; 3]) -> Self {
        let ([n, n_min, n_max], [d, d_min, d_max]) = (numerator, denominator);
        let median = n / d;
        let low = positive(n_min, n) / positive(d_max, d);
        let high = positive(n_max, n) / positive(d_min, d);
        Self {
            median,
            low: low.min(median),
            high: high.max(median),
        }
    }

    /// The ratio `median` (of the medians) with a bootstrap 95% interval over the pairs
    /// `(numerator[i], denominator[i])`: the pairs resampled with replacement, the ratio of the
    /// resampled medians each time. The resampling is seeded, so one bench gives one interval.
    pub fn bootstrap(median: f64, numerator: &[f64], denominator: &[f64]) -> Self {
        let n = numerator.len();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ n as u64;
        let mut next = || {
            // xorshift64*: enough for picking indices.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
        };
        let mut ratios = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
        let (mut num, mut den) = (vec![0.0; n], vec![0.0; n]);
        for _ in 0..BOOTSTRAP_RESAMPLES {
            for k in 0..n {
                let i = next();
                num[k] = numerator[i];
                den[k] = denominator[i];
            }
            let d = median_of(&mut den);
            if d > 0.0 {
                ratios.push(median_of(&mut num) / d);
            }
        }
        if ratios.is_empty() {
            return Self {
                median,
                low: median,
                high: median,
            };
        }
        ratios.sort_by(f64::total_cmp);
        let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
        Self {
            median,
            low: at(0.025).min(median),
            high: at(0.975).max(median),
        }
    }

    /// Whether 1.0 (no difference) lies inside the range: the difference is within the noise.
    pub fn includes_one(&self) -> bool {
        self.low <= 1.0 && 1.0 <= self.high
    }

    /// Whether the repeats left a range to tell: a ratio of two single runs (or of repeats that
    /// all agree) is its own low and high, and a range "0.44-0.44" would claim a spread measured.
    pub fn has_range(&self) -> bool {
        self.low < self.high
    }

    /// The ratio with its range as the pages print them, two decimals: "0.58 (0.57-0.60)", or
    /// "0.58" alone where [`Interval::has_range`] does not hold.
    pub fn median_and_range(&self) -> String {
        if self.has_range() {
            format!("{:.2} ({:.2}-{:.2})", self.median, self.low, self.high)
        } else {
            format!("{:.2}", self.median)
        }
    }

    /// The range as the tables print it, two decimals: "0.58-0.60", with ", within noise" where
    /// it holds 1.0.
    pub fn range_label(&self) -> String {
        let noise = if self.includes_one() {
            ", within noise"
        } else {
            ""
        };
        format!("{:.2}-{:.2}{noise}", self.low, self.high)
    }
}

/// One parallel design's throughput over full BAL's, at the same batch size and worker count over
/// the state's store: the ratio the tables print beside each design.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DesignRatio {
    /// The design compared.
    pub design: IoDesign,
    /// Blocks per batch.
    pub batch: usize,
    /// Workers.
    pub threads: usize,
    /// Its throughput over full BAL's: the ratio of the medians, with the range the repeats allow
    /// (low and high equal to it where neither was repeated).
    pub ratio: Interval,
    /// Whether 1.0 lies in that range: the difference from full BAL is within the noise.
    pub within_noise: bool,
}

impl DesignRatio {
    /// Every parallel design other than full BAL over `store` against full BAL at its batch size
    /// and worker count, in run order; a configuration without a full BAL run (or one of no
    /// throughput) has none.
    pub fn of_runs(runs: &[RunResult], store: StoreKind) -> Vec<Self> {
        let parallel = |r: &&RunResult| r.mode == ExecMode::Parallel && r.store == store;
        runs.iter()
            .filter(parallel)
            .filter(|r| r.design != IoDesign::Full)
            .filter_map(|r| {
                let full = runs.iter().filter(parallel).find(|f| {
                    f.design == IoDesign::Full && f.batch == r.batch && f.threads == r.threads
                })?;
                (full.throughput.mgas_per_s > 0.0).then(|| {
                    let ratio = Interval::ratio(r, full);
                    Self {
                        design: r.design,
                        batch: r.batch,
                        threads: r.threads,
                        ratio,
                        within_noise: ratio.includes_one(),
                    }
                })
            })
            .collect()
    }
}

/// The median of `values` (sorted in place): the middle one, or the mean of the middle two.
pub fn median_of(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// `value` where it is positive (a repeat's extreme), else `fallback` (a result of one run).
fn positive(value: f64, fallback: f64) -> f64 {
    if value > 0.0 { value } else { fallback }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_pairs_each_side_with_the_others_opposite_extreme() {
        // 59 (58-61) over 100 (98-102).
        let i = Interval::of_extremes([59.0, 58.0, 61.0], [100.0, 98.0, 102.0]);
        assert_eq!(i.median, 0.59);
        assert_eq!(i.low, 58.0 / 102.0);
        assert_eq!(i.high, 61.0 / 98.0);
        assert!(!i.includes_one());
        assert_eq!(i.range_label(), "0.57-0.62");
    }

    #[test]
    fn a_range_that_crosses_one_is_within_noise() {
        let i = Interval::of_extremes([97.0, 95.0, 104.0], [100.0, 99.0, 101.0]);
        assert_eq!(i.median, 0.97);
        assert_eq!(i.low, 95.0 / 101.0);
        assert_eq!(i.high, 104.0 / 99.0);
        assert!(i.includes_one());
        assert_eq!(i.range_label(), "0.94-1.05, within noise");
        // Touching 1.0 counts: no difference is one the repeats allow.
        assert!(Interval::of_extremes([90.0, 90.0, 100.0], [100.0, 100.0, 100.0]).includes_one());
    }

    #[test]
    fn paired_repeats_give_a_bootstrap_interval_inside_the_extremes() {
        // Five rounds; the numerator is about 0.6 of the denominator in every round, and a noisy
        // round moves both.
        let num = [60.0, 59.0, 66.0, 61.0, 58.0];
        let den = [100.0, 99.0, 108.0, 101.0, 98.0];
        let i = Interval::bootstrap(60.0 / 100.0, &num, &den);
        let extremes = Interval::of_extremes([60.0, 58.0, 66.0], [100.0, 98.0, 108.0]);
        assert_eq!(i.median, 0.6);
        assert!(i.low <= 0.6 && 0.6 <= i.high, "{i:?}");
        // The bootstrap's ends lie within the extremes' (58/108 to 66/98).
        assert!(
            i.low >= extremes.low && i.high <= extremes.high,
            "{i:?} {extremes:?}"
        );
        assert!(i.high - i.low < extremes.high - extremes.low);
        assert!(!i.includes_one());
        // Seeded: the same pairs give the same interval.
        assert_eq!(i, Interval::bootstrap(0.6, &num, &den));
        // Equal throughputs in every round: no difference, within noise.
        let same = Interval::bootstrap(1.0, &den, &den);
        assert_eq!((same.low, same.high), (1.0, 1.0));
        assert!(same.includes_one());
    }

    #[test]
    fn extremes_of_a_single_run_stand_for_its_median() {
        let i = Interval::of_extremes([50.0, 0.0, 0.0], [100.0, 0.0, 0.0]);
        assert_eq!((i.median, i.low, i.high), (0.5, 0.5, 0.5));
        assert!(!i.includes_one());
        // No range to tell: the share alone, not "0.50 (0.50-0.50)".
        assert!(!i.has_range());
        assert_eq!(i.median_and_range(), "0.50");
        let repeated = Interval::of_extremes([50.0, 48.0, 51.0], [100.0, 99.0, 102.0]);
        assert_eq!(repeated.median_and_range(), "0.50 (0.47-0.52)");
    }
}
