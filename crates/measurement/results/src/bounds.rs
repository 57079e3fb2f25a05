//! The ranges every reader of a result holds its numbers to: what a real run can record, far
//! apart from what only a crafted or damaged file holds. A number past them is refused at load,
//! naming its field ([`FieldError`]), so no reader sums, divides or charts it: a throughput of
//! `1.7e308` or a time of `5e-324` drawn on an axis keeps a chart's key-point search spinning,
//! a throughput of 0 divides into infinities, and a count near `u64::MAX` overflows a sum.
//!
//! The bounds are loose on purpose: each lies orders of magnitude beyond any run of the engine
//! on any machine, and close enough that sums and ratios of bounded numbers stay finite.

use crate::FieldError;

/// Highest throughput a result may record, Mgas/s: 10 Tgas/s, thousands of times any executor's.
pub const MAX_MGAS_PER_S: f64 = 1e7;

/// Lowest throughput a result may record, Mgas/s: one gas a second. A run that replayed no gas,
/// or none in measurable time, measured nothing.
pub const MIN_MGAS_PER_S: f64 = 1e-6;

/// Shortest measured time a result may record, seconds: a nanosecond, the clocks' resolution.
pub const MIN_SECONDS: f64 = 1e-9;

/// Longest measured time a result may record, seconds: about 116 days. Times summed over
/// threads may be [`MAX_THREADS`] times this.
pub const MAX_SECONDS: f64 = 1e7;

/// Threads of a run, CPUs of a machine: more than any machine the tools run on has.
pub const MAX_THREADS: u64 = 4_096;

/// Largest count a result may record (reads, blocks, bytes, gas): 2^53, the largest that `f64`
/// holds exactly, so every ratio and sum a reader makes of counts is exact or close.
pub const MAX_COUNT: u64 = 1 << 53;

/// Largest ratio of two measurements (one design's throughput over another's, a spread, a
/// relative error): a million.
pub const MAX_RATIO: f64 = 1e6;

/// `value` at `field`, unless it is not a finite number from `low` to `high`, where a real run
/// records `what` (appended to the range in the error).
pub fn within(
    field: impl FnOnce() -> String,
    value: f64,
    (low, high): (f64, f64),
    what: &str,
) -> Result<(), FieldError> {
    if value.is_finite() && (low..=high).contains(&value) {
        return Ok(());
    }
    Err(FieldError::new(
        field(),
        short(value),
        format!("a number from {} to {} ({what})", short(low), short(high)),
    ))
}

/// `x` as a reader takes it in: `0`, `0.5`, `1e-9`, `1.7e308`, `NaN`, never hundreds of digits.
pub fn short(x: f64) -> String {
    if x == 0.0 || (1e-3..1e5).contains(&x.abs()) {
        x.to_string()
    } else {
        format!("{x:e}")
    }
}

/// A throughput, Mgas/s: from [`MIN_MGAS_PER_S`] to [`MAX_MGAS_PER_S`].
pub fn mgas_per_s(field: impl FnOnce() -> String, value: f64) -> Result<(), FieldError> {
    within(
        field,
        value,
        (MIN_MGAS_PER_S, MAX_MGAS_PER_S),
        "Mgas/s of a run that replayed gas",
    )
}

/// A measured time that divides (a run's wall time, its execution): from [`MIN_SECONDS`] to
/// [`MAX_SECONDS`].
pub fn seconds(field: impl FnOnce() -> String, value: f64) -> Result<(), FieldError> {
    within(
        field,
        value,
        (MIN_SECONDS, MAX_SECONDS),
        "seconds of a run that took time",
    )
}

/// A part of a run's time that may be none (its prefetch, its commits), or one summed over its
/// threads: from 0 to [`MAX_SECONDS`] times [`MAX_THREADS`].
pub fn part_seconds(field: impl FnOnce() -> String, value: f64) -> Result<(), FieldError> {
    within(
        field,
        value,
        (0.0, MAX_SECONDS * MAX_THREADS as f64),
        "seconds",
    )
}

/// A non-negative ratio of two measurements: from 0 to [`MAX_RATIO`].
pub fn ratio(field: impl FnOnce() -> String, value: f64) -> Result<(), FieldError> {
    within(
        field,
        value,
        (0.0, MAX_RATIO),
        "a ratio of two measurements",
    )
}

/// A count: at most [`MAX_COUNT`].
pub fn count(field: impl FnOnce() -> String, value: u64) -> Result<(), FieldError> {
    if value > MAX_COUNT {
        return Err(FieldError::new(
            field(),
            value,
            format!("at most {MAX_COUNT} (2^53)"),
        ));
    }
    Ok(())
}

/// A number of threads or CPUs: from 1 to [`MAX_THREADS`].
pub fn threads(field: impl FnOnce() -> String, value: u64) -> Result<(), FieldError> {
    if value == 0 || value > MAX_THREADS {
        return Err(FieldError::new(
            field(),
            value,
            format!("from 1 to {MAX_THREADS}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f() -> String {
        "runs[0].throughput.mgas_per_s".into()
    }

    #[test]
    fn a_throughput_must_be_real_and_plausible() {
        mgas_per_s(f, 750.0).unwrap();
        for (crafted, written) in [
            (1.7e308, "1.7e308"),
            (0.0, "0"),
            (-1.0, "-1"),
            (5e-324, "5e-324"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (1.1e7, "1.1e7"),
        ] {
            let err = mgas_per_s(f, crafted).unwrap_err();
            assert_eq!(err.field, "runs[0].throughput.mgas_per_s");
            assert_eq!(err.value, written);
            assert_eq!(
                err.expected,
                "a number from 1e-6 to 1e7 (Mgas/s of a run that replayed gas)"
            );
        }
    }

    #[test]
    fn a_time_that_divides_must_be_at_least_a_nanosecond() {
        seconds(f, 0.5).unwrap();
        for crafted in [5e-324, 0.0, 1e-10, 1e8, f64::NAN] {
            assert!(seconds(f, crafted).is_err(), "{crafted}");
        }
        part_seconds(f, 0.0).unwrap();
        assert!(part_seconds(f, -0.1).is_err());
    }

    #[test]
    fn counts_ratios_and_threads_are_bounded() {
        count(f, MAX_COUNT).unwrap();
        assert!(count(f, u64::MAX).is_err());
        ratio(f, 0.0).unwrap();
        assert!(ratio(f, -1.0).is_err());
        assert!(ratio(f, 1e300).is_err());
        threads(f, 1).unwrap();
        assert!(threads(f, 0).is_err());
        assert!(threads(f, MAX_THREADS + 1).is_err());
    }
}
