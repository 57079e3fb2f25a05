//! What a projection read back may hold ([`ProjectionReport`]'s check): every number the report
//! divides or draws, within [`bal_replay_results::bounds`]. A crafted or damaged file is refused
//! at load, naming its field, instead of drawing a chart whose axis never ends (a residual of
//! -1 predicts an infinite throughput; a median of 0 an infinite spread).

use crate::Repeats;
use crate::{CalibrationRow, Check, MachineDescription, Measured, Projection, ProjectionReport};
use bal_replay_engine::WorkerStartCost;
use bal_replay_results::FieldError;
use bal_replay_results::bounds::{self as ranges, MAX_COUNT, MAX_RATIO, MAX_THREADS, within};

/// Device reads per key read: a RocksDB read of one key reads at most an index, a filter and a
/// data block per level; an MDBX one, a page per level of its B-tree.
const MAX_DEVICE_READS_PER_KEY: f64 = 1_024.0;

/// The fitted factor: a multiple of the disk's latency a read waits.
const MAX_K: f64 = 1e6;

/// A relative error or residual: from "predicted nothing" (-1, excluded: the report divides
/// by one plus it) to [`MAX_RATIO`].
const RELATIVE: (f64, f64) = (-1.0 + 1e-9, MAX_RATIO);

/// A core's speed relative to the profiled machine's.
pub const CPU_SPEED_RANGE: (f64, f64) = (1e-3, 1e3);

/// What a key read costs the CPU, ns: from a nanosecond to a second.
pub const READ_CPU_NS_RANGE: (f64, f64) = (1.0, 1e9);

/// Checks every number of `report`.
pub fn check_projection(report: &ProjectionReport) -> Result<(), FieldError> {
    check_machine("measured_on", &report.measured_on)?;
    if let Some(target) = &report.target {
        check_machine("target", target)?;
    }
    for (i, row) in report.calibrations.iter().enumerate() {
        check_calibration(&format!("calibrations[{i}]"), row)?;
    }
    for (i, check) in report.checks.iter().enumerate() {
        check_check(&format!("checks[{i}]"), check, report.inputs.len())?;
    }
    for (i, projection) in report.projections.iter().enumerate() {
        check_projected(&format!("projections[{i}]"), projection)?;
    }
    Ok(())
}

fn check_machine(at: &str, machine: &MachineDescription) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    within(
        || field("cores"),
        machine.cores,
        (1e-3, MAX_THREADS as f64),
        "cores",
    )?;
    within(
        || field("cpu_speed"),
        machine.cpu_speed,
        CPU_SPEED_RANGE,
        "a core's speed relative to the profiled one's",
    )?;
    check_read_cpu_ns(&field("read_cpu_ns"), machine.read_cpu_ns)?;
    if let Some(readers) = machine.readers {
        ranges::threads(|| field("readers"), readers as u64)?;
    }
    if let Some(cost) = &machine.worker_start {
        check_worker_start(&field("worker_start"), cost)?;
    }
    Ok(())
}

fn check_worker_start(at: &str, cost: &WorkerStartCost) -> Result<(), FieldError> {
    // Starting a thread takes microseconds; a second is far past any machine's.
    for (name, ns) in [
        ("spawn_ns", cost.spawn_ns),
        ("thread_ns", cost.thread_ns),
        ("join_ns", cost.join_ns),
    ] {
        within(|| format!("{at}.{name}"), ns, (0.0, 1e9), "ns")?;
    }
    ranges::count(|| format!("{at}.workers"), cost.workers as u64)?;
    ranges::count(|| format!("{at}.rounds"), cost.rounds as u64)
}

/// A configuration's design, batch and workers.
fn check_shape(at: &str, batch: usize, workers: usize) -> Result<(), FieldError> {
    ranges::count(|| format!("{at}.batch"), batch as u64)?;
    ranges::threads(|| format!("{at}.workers"), workers as u64)
}

/// A machine's or a calibration's reads' CPU per key read, where it has one.
fn check_read_cpu_ns(field: &str, ns: Option<f64>) -> Result<(), FieldError> {
    match ns {
        Some(ns) => within(
            || field.to_string(),
            ns,
            (0.0, READ_CPU_NS_RANGE.1),
            "ns of CPU per key read",
        ),
        None => Ok(()),
    }
}

fn check_k(at: &str, k: f64) -> Result<(), FieldError> {
    within(
        || format!("{at}.k"),
        k,
        (0.0, MAX_K),
        "a multiple of the disk's latency",
    )
}

fn check_calibration(at: &str, row: &CalibrationRow) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    check_shape(at, row.batch, row.workers)?;
    within(
        || field("device_reads_per_key"),
        row.device_reads_per_key,
        (0.0, MAX_DEVICE_READS_PER_KEY),
        "device reads per key read",
    )?;
    check_k(&field("calibration"), row.calibration.k)?;
    within(
        || field("calibration.residual"),
        row.calibration.residual,
        RELATIVE,
        "the prediction's relative error: more than -1",
    )?;
    check_read_cpu_ns(&field("read_cpu_ns"), row.read_cpu_ns)?;
    ranges::mgas_per_s(|| field("measured_mgas_per_s"), row.measured_mgas_per_s)?;
    ranges::count(|| field("runs"), row.runs as u64)?;
    if let Some(spread) = row.spread {
        ranges::ratio(|| field("spread"), spread)?;
    }
    if let Some(repeats) = &row.repeats {
        check_repeats(&field("repeats"), repeats)?;
    }
    Ok(())
}

fn check_repeats(at: &str, repeats: &Repeats) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    ranges::count(|| field("runs"), repeats.runs as u64)?;
    for (name, value) in [
        ("median_mgas_per_s", repeats.median_mgas_per_s),
        ("min_mgas_per_s", repeats.min_mgas_per_s),
        ("max_mgas_per_s", repeats.max_mgas_per_s),
    ] {
        ranges::mgas_per_s(|| field(name), value)?;
    }
    let (min, median, max) = (
        repeats.min_mgas_per_s,
        repeats.median_mgas_per_s,
        repeats.max_mgas_per_s,
    );
    if !(min <= median && median <= max) {
        return Err(FieldError::new(
            field("median_mgas_per_s"),
            ranges::short(median),
            format!("from min_mgas_per_s ({min}) to max_mgas_per_s ({max})"),
        ));
    }
    Ok(())
}

fn check_check(at: &str, check: &Check, inputs: usize) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    check_shape(at, check.batch, check.workers)?;
    ranges::threads(
        || field("calibrated_on_workers"),
        check.calibrated_on_workers as u64,
    )?;
    within(
        || field("cores"),
        check.cores,
        (1e-3, MAX_THREADS as f64),
        "cores",
    )?;
    check_k(at, check.k)?;
    check_figures(&field("measured"), &check.measured, check.gas)?;
    check_figures(&field("predicted"), &check.predicted, check.gas)?;
    if let Some(error) = check.error_at_run_task_cpu {
        within(
            || field("error_at_run_task_cpu"),
            error,
            RELATIVE,
            "a relative error: more than -1",
        )?;
    }
    for (name, repeats) in [
        ("measured_repeats", &check.measured_repeats),
        ("calibration_repeats", &check.calibration_repeats),
    ] {
        if let Some(repeats) = repeats {
            check_repeats(&field(name), repeats)?;
        }
    }
    if let Some(input) = check.input
        && input >= inputs.max(1)
    {
        return Err(FieldError::new(
            field("input"),
            input,
            format!("the index of one of the {inputs} inputs"),
        ));
    }
    Ok(())
}

fn check_projected(at: &str, projection: &Projection) -> Result<(), FieldError> {
    check_shape(at, projection.batch, projection.workers)?;
    check_k(at, projection.k)?;
    check_figures(
        &format!("{at}.predicted"),
        &projection.predicted,
        projection.gas,
    )
}

/// A run's figures, measured or predicted, over `gas`: their throughput is drawn.
fn check_figures(at: &str, figures: &Measured, gas: u64) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    ranges::count(|| field("gas"), gas)?;
    ranges::seconds(|| field("exec_with_io_s"), figures.exec_with_io_s)?;
    let rate = figures.mgas_per_s(gas);
    if !(ranges::MIN_MGAS_PER_S..=ranges::MAX_MGAS_PER_S).contains(&rate) {
        return Err(FieldError::new(
            field("exec_with_io_s"),
            ranges::short(figures.exec_with_io_s),
            format!("the time of {gas} gas at 1e-6 to 1e7 Mgas/s"),
        ));
    }
    for (name, value) in [
        ("longest_txs_s", figures.longest_txs_s),
        ("total_s", figures.total_s),
        ("task_cpu_s", figures.task_cpu_s),
        ("worker_run_delay_s", figures.worker_run_delay_s),
    ] {
        ranges::part_seconds(|| field(name), value)?;
    }
    within(
        || field("on_demand_reads"),
        figures.on_demand_reads,
        (0.0, MAX_COUNT as f64),
        "reads",
    )?;
    Ok(())
}
