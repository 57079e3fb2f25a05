//! Projections from bench results built here: which groups are calibrated, checked and projected,
//! from which runs, on which machine; and a projection read back, or refused for its version.

use bal_replay_bench::{
    BenchResult, CacheCounts, Latency, MeanBalSizes, ResultReadError, RunResult, RunTiming,
    StoreKind, Throughput,
};
use bal_replay_engine::{
    BatchProfile, ExecMode, IoDesign, PrefetchProfile, TaskProfile, WorkerStartCost,
};
use bal_replay_model::{DiskModel, Repeats};
use bal_replay_probe::{DiskEvidence, device};
use bal_replay_projection::{
    MeasuredMachine, ProjectOptions, ProjectionError, ProjectionNote, ProjectionReport,
    ReadProjectionError, SCHEMA_VERSION, TargetDisk, TargetOptions, project, project_benches,
    read_projection,
};
use std::{num::NonZeroUsize, path::Path};

const BATCH: usize = 10;
/// Tasks per batch, and batches per run.
const TASKS: u64 = 40;
const BATCHES: u64 = 3;
const TASK_GAS: u64 = 100_000;

fn n(x: usize) -> NonZeroUsize {
    NonZeroUsize::new(x).unwrap()
}

/// `BATCHES` batches of `TASKS` tasks, each of `cpu_ns` and `reads` on-demand reads (of which
/// the prefetch beside execution served `prefetch_hits` more, for hybrid).
fn profiles(cpu_ns: u64, reads: u64, prefetch_hits: u64) -> Vec<BatchProfile> {
    (0..BATCHES)
        .map(|b| BatchProfile {
            first_block: b,
            last_block: b,
            tasks: (0..TASKS)
                .map(|i| TaskProfile {
                    block: b,
                    index: i,
                    worker: 0,
                    start_ns: 0,
                    wall_ns: 0,
                    cpu_ns,
                    reads,
                    read_wait_ns: 0,
                    gas: TASK_GAS,
                    raced: 0,
                    prefetch_hits,
                })
                .collect(),
            prefetch: (prefetch_hits > 0).then_some(PrefetchProfile {
                keys: TASKS * prefetch_hits,
                readers: 2,
                wall_ns: 0,
                cpu_ns: TASKS * prefetch_hits * 5_000,
                concurrent: true,
            }),
            exec_ns: 0,
            worker_run_delay_ns: Some(1_000),
            process_cpu_ns: None,
            commit_ns: 1_000,
        })
        .collect()
}

/// A BAL-parallel run of `design` at `threads` workers, of the profile `batch_profiles` (none:
/// not profiled), taking `exec_with_io_s`.
fn run(
    design: IoDesign,
    threads: usize,
    batch_profiles: Vec<BatchProfile>,
    exec_with_io_s: f64,
) -> RunResult {
    let gas = TASKS * BATCHES * TASK_GAS;
    let mgas = gas as f64 / exec_with_io_s / 1e6;
    RunResult {
        mode: ExecMode::Parallel,
        design,
        threads,
        batch: BATCH,
        store: StoreKind::Rocksdb,
        cold: false,
        io_threads: None,
        blocks: BATCHES,
        txs: TASKS * BATCHES,
        gas,
        throughput: Throughput {
            mgas_per_s: mgas,
            end_to_end_mgas_per_s: mgas,
            repeats: 1,
            mgas_per_s_min: mgas,
            mgas_per_s_max: mgas,
        },
        repeat_mgas_per_s: Vec::new(),
        timing: RunTiming {
            exec_with_io_s,
            prefetch_s: 0.0,
            longest_txs_s: 0.001,
            commit_s: 0.002,
            wall_s: exec_with_io_s + 0.002,
            read_dump_s: None,
        },
        cache: CacheCounts::default(),
        latency: Latency::default(),
        disk: DiskEvidence {
            device_reads_per_key: Some(1.5),
            ..Default::default()
        },
        cpu: None,
        batches: Vec::new(),
        batch_profiles,
    }
}

const WORKER_START: WorkerStartCost = WorkerStartCost {
    spawn_ns: 8_000.0,
    thread_ns: 15_000.0,
    join_ns: 1_000.0,
    workers: 8,
    rounds: 100,
};

fn bench(runs: Vec<RunResult>) -> BenchResult {
    BenchResult {
        schema_version: bal_replay_bench::SCHEMA_VERSION,
        build_profile: "dev".into(),
        engine_commit: None,
        dump: "dump".into(),
        blocks: BATCHES,
        cpus: 2,
        bal_sizes: MeanBalSizes::default(),
        rocksdb_io_uring: false,
        independent_blocks: false,
        worker_start: Some(WORKER_START),
        pinned_workers: None,
        dump_identity: None,
        ratios_to_full: Vec::new(),
        read_floors: Vec::new(),
        runs,
    }
}

/// Full BAL (50 µs per task) and parallel I/O (80 µs and 3 reads per task: 10 µs of CPU per
/// read) at 1 and 2 workers, full BAL's one-worker run repeated three times; hybrid at 1 and 2
/// workers; batched I/O at 2 workers only; a sequential run.
fn matrix() -> BenchResult {
    let mut full_one = run(IoDesign::Full, 1, profiles(50_000, 0, 0), 0.0065);
    (
        full_one.throughput.repeats,
        full_one.throughput.mgas_per_s_min,
        full_one.throughput.mgas_per_s_max,
    ) = (3, 1500.0, 2000.0);
    full_one.throughput.mgas_per_s = 1800.0;
    let mut sequential = run(IoDesign::Full, 1, profiles(50_000, 0, 0), 0.007);
    sequential.mode = ExecMode::Sequential;
    let hybrid = |threads, exec| run(IoDesign::Hybrid, threads, profiles(60_000, 1, 2), exec);
    bench(vec![
        sequential,
        full_one,
        run(IoDesign::Full, 2, profiles(52_000, 0, 0), 0.0036),
        run(IoDesign::Parallel, 1, profiles(80_000, 3, 0), 0.012),
        run(IoDesign::Parallel, 2, profiles(85_000, 3, 0), 0.007),
        run(IoDesign::Batched, 2, profiles(60_000, 0, 0), 0.006),
        hybrid(1, 0.009),
        hybrid(2, 0.005),
    ])
}

fn disk() -> DiskModel {
    DiskModel::parse_fio_table("1 25000 40\n16 90000 177\n", "fio.txt").unwrap()
}

fn measured_on(cores: Option<NonZeroUsize>) -> MeasuredMachine {
    MeasuredMachine {
        disk: disk(),
        cores,
        worker_start: Some(WORKER_START),
    }
}

fn research_machine() -> bal_replay_model::Machine {
    TargetOptions {
        research_machine: true,
        ..TargetOptions::default()
    }
    .machine(Some(WORKER_START))
    .unwrap()
    .unwrap()
}

/// `benches` projected onto the research's machine at 1 and 16 workers, with the notes.
fn project_onto_research(
    benches: &[BenchResult],
    cores: Option<NonZeroUsize>,
) -> (ProjectionReport, Vec<ProjectionNote>) {
    let mut notes = Vec::new();
    let report = project_benches(
        benches,
        &measured_on(cores),
        Some(&research_machine()),
        &[n(1), n(16)],
        &mut |note| notes.push(note),
    );
    (report, notes)
}

const FULL: IoDesign = IoDesign::Full;
const PARALLEL: IoDesign = IoDesign::Parallel;
const HYBRID: IoDesign = IoDesign::Hybrid;

/// Each group calibrated on its one-worker run: full BAL's the median of three runs, with their
/// spread.
fn assert_calibrations(report: &ProjectionReport) {
    let calibrated: Vec<IoDesign> = report.calibrations.iter().map(|c| c.design).collect();
    assert_eq!(calibrated, [FULL, PARALLEL, HYBRID]);
    for c in &report.calibrations {
        assert_eq!((c.batch, c.workers), (BATCH, 1), "{c:?}");
        assert_eq!(c.device_reads_per_key, 1.5);
        // Parallel I/O's tasks took 30 µs more than full BAL's for 3 reads each.
        let read_cpu_ns = c.read_cpu_ns.unwrap();
        assert!((read_cpu_ns - 10_000.0).abs() < 1e-6, "{c:?}");
    }
    // Full BAL's one-worker run: the median of three runs, with their spread.
    let full = &report.calibrations[0];
    assert_eq!(full.runs, 3);
    assert_eq!(full.repeats, Repeats::new(3, 1800.0, 1500.0, 2000.0));
    assert!((full.spread.unwrap() - (2000.0 / 1500.0 - 1.0)).abs() < 1e-12);
    let gas = (TASKS * BATCHES * TASK_GAS) as f64;
    assert!((full.measured_mgas_per_s - gas / 0.0065 / 1e6).abs() < 1e-9);
    assert_eq!(
        (report.calibrations[1].runs, report.calibrations[1].spread),
        (1, None)
    );
}

/// Each group's two-worker run checked against its calibration, on the bench's 2 CPUs.
fn assert_checks(report: &ProjectionReport) {
    let checked: Vec<IoDesign> = report.checks.iter().map(|c| c.design).collect();
    assert_eq!(checked, [FULL, PARALLEL, HYBRID]);
    for (check, calibration) in report.checks.iter().zip(&report.calibrations) {
        assert_eq!(
            (check.workers, check.calibrated_on_workers, check.input),
            (2, 1, Some(0))
        );
        assert_eq!(check.cores, 2.0);
        assert_eq!(check.k, calibration.calibration.k);
        assert_eq!(check.calibration_repeats, calibration.repeats);
        assert_eq!(check.measured_repeats, None);
        assert!(check.predicted.exec_with_io_s > 0.0, "{check:?}");
        assert!(check.error_at_run_task_cpu.is_some(), "{check:?}");
    }
    let full_check = &report.checks[0];
    assert_eq!(full_check.measured.exec_with_io_s, 0.0036);
    assert!((full_check.measured.total_s - 0.0056).abs() < 1e-12);
    let task_cpu_s = (TASKS * BATCHES * 52_000) as f64 / 1e9;
    assert!((full_check.measured.task_cpu_s - task_cpu_s).abs() < 1e-12);
    assert!((full_check.measured.worker_run_delay_s - BATCHES as f64 * 1e-6).abs() < 1e-15);
    assert_eq!(
        report.checks[1].measured.on_demand_reads,
        (TASKS * BATCHES * 3) as f64
    );
}

/// Every calibrated group projected onto the research's machine.
fn assert_projections(report: &ProjectionReport) {
    let target = report.target.as_ref().unwrap();
    assert_eq!((target.cores, target.cpu_speed), (16.0, 1.0));
    assert_eq!(target.worker_start, Some(WORKER_START));
    let projected: Vec<(IoDesign, usize)> = report
        .projections
        .iter()
        .map(|p| (p.design, p.workers))
        .collect();
    assert_eq!(
        projected,
        [
            (FULL, 1),
            (FULL, 16),
            (PARALLEL, 1),
            (PARALLEL, 16),
            (HYBRID, 1),
            (HYBRID, 16)
        ]
    );
    let full_at = |workers| {
        let p = report
            .projections
            .iter()
            .find(|p| (p.design, p.workers) == (IoDesign::Full, workers))
            .unwrap();
        p.predicted.mgas_per_s(p.gas)
    };
    // Full BAL is CPU alone: 16 workers on 16 cores go several times faster than one.
    assert!(full_at(16) > 3.0 * full_at(1));
    assert_eq!(report.measured_on.cores, 2.0);
    assert_eq!(report.measured_on.worker_start, Some(WORKER_START));
}

#[test]
fn each_group_is_calibrated_on_its_one_worker_run_and_checked_on_the_others() {
    let benches = [matrix()];
    let (report, notes) = project_onto_research(&benches, None);
    assert_eq!(report.schema_version, SCHEMA_VERSION);
    assert!(report.inputs.is_empty());
    // Batched I/O has no one-worker run: left out, and said so; the sequential run is in no
    // group.
    assert_eq!(
        notes,
        [ProjectionNote::NotCalibrated {
            design: IoDesign::Batched,
            batch: BATCH
        }]
    );
    assert_eq!(
        notes[0].to_string(),
        "batched at batch 10: no one-worker run with a task profile, not calibrated (bench with \
         --threads 1 and --task-profile)"
    );
    assert_calibrations(&report);
    assert_checks(&report);
    assert_projections(&report);
}

#[test]
fn hybrid_alone_is_projected_and_runs_keep_the_cores_they_had() {
    let mut bench = matrix();
    bench.runs.retain(|r| r.design == IoDesign::Hybrid);
    // The two-worker run shared the machine: half a CPU went to others meanwhile.
    bench.runs[1].cpu = Some(device::CpuUse {
        wall_s: 2.0,
        process_s: 1.0,
        other_s: 1.0,
        steal_s: 0.0,
        ..Default::default()
    });
    let (report, notes) = project_onto_research(std::slice::from_ref(&bench), None);
    assert!(notes.is_empty(), "{notes:?}");
    assert!(report.projections.iter().all(|p| p.design == HYBRID));
    assert_eq!(report.projections.len(), 2);
    assert_eq!(report.checks[0].cores, 1.5);
    // Cores given for the machine are every run's.
    let (given, _) = project_onto_research(&[bench], Some(n(8)));
    assert_eq!(given.checks[0].cores, 8.0);
    assert_eq!(given.measured_on.cores, 8.0);
}

#[test]
fn a_second_bench_is_checked_against_the_first_benchs_calibration() {
    let first = matrix();
    let mut second = matrix();
    for r in &mut second.runs {
        r.timing.exec_with_io_s *= 1.1;
    }
    let (report, _) = project_onto_research(&[first, second], None);
    assert_eq!(report.calibrations.len(), 3);
    assert_eq!(report.checks.len(), 6);
    for input in [0, 1] {
        let of_input: Vec<_> = report
            .checks
            .iter()
            .filter(|c| c.input == Some(input))
            .collect();
        assert_eq!(of_input.len(), 3);
        // The calibration is the first bench's whatever the input.
        assert_eq!(of_input[0].k, report.calibrations[0].calibration.k);
    }
    let full: Vec<f64> = report
        .checks
        .iter()
        .filter(|c| c.design == IoDesign::Full)
        .map(|c| c.measured.exec_with_io_s)
        .collect();
    assert_eq!(full.len(), 2);
    assert!((full[1] / full[0] - 1.1).abs() < 1e-12);
}

/// `benches` written as JSON files in `dir`, with a fio table there.
fn write_inputs(dir: &Path, benches: &[BenchResult]) -> ProjectOptions {
    let fio = dir.join("fio.txt");
    std::fs::write(
        &fio,
        "depth iops mean_latency_us\n1 25000 40\n16 90000 177\n",
    )
    .unwrap();
    let inputs = benches
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let path = dir.join(format!("bench{i}.json"));
            std::fs::write(&path, serde_json::to_vec_pretty(b).unwrap()).unwrap();
            path
        })
        .collect();
    ProjectOptions {
        inputs,
        disk: fio,
        cores: None,
        target: TargetOptions {
            cores: Some(n(4)),
            disk: Some(TargetDisk::Spec {
                iops: 500_000.0,
                latency_us: 100.0,
            }),
            cpu_speed: 1.5,
            read_cpu_us: Some(3.0),
            io_threads: Some(n(4)),
            ..TargetOptions::default()
        },
        target_workers: vec![n(2)],
    }
}

#[test]
fn project_reads_its_inputs_and_names_them() {
    let tmp = tempfile::tempdir().unwrap();
    let options = write_inputs(tmp.path(), &[matrix(), matrix()]);
    let mut notes = Vec::new();
    let report = project(&options, &mut |note| notes.push(note)).unwrap();
    let names: Vec<String> = options
        .inputs
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(report.inputs, names);
    assert_eq!(
        notes,
        [ProjectionNote::NotCalibrated {
            design: IoDesign::Batched,
            batch: BATCH
        }]
    );
    // The same as from the benches themselves.
    let (from_benches, _) = {
        let mut notes = Vec::new();
        let target = options.target.machine(Some(WORKER_START)).unwrap();
        let report = project_benches(
            &[matrix(), matrix()],
            &MeasuredMachine {
                disk: DiskModel::from_fio_file(&options.disk).unwrap(),
                cores: None,
                worker_start: Some(WORKER_START),
            },
            target.as_ref(),
            &options.target_workers,
            &mut |note| notes.push(note),
        );
        (report, notes)
    };
    assert_eq!(
        ProjectionReport {
            inputs: names,
            ..from_benches
        },
        report
    );
    let target = report.target.unwrap();
    assert_eq!(
        (
            target.cores,
            target.cpu_speed,
            target.read_cpu_ns,
            target.readers
        ),
        (4.0, 1.5, Some(3_000.0), Some(8))
    );
    assert_eq!(report.projections.len(), 3);
}

#[test]
fn project_names_the_input_it_cannot_read() {
    let tmp = tempfile::tempdir().unwrap();
    let mut options = write_inputs(tmp.path(), &[matrix()]);
    let missing = tmp.path().join("missing.json");
    options.inputs.push(missing.clone());
    let err = project(&options, &mut |_| {}).unwrap_err();
    assert!(
        matches!(&err, ProjectionError::Bench(ResultReadError::Read { path, .. }) if *path == missing),
        "{err:?}"
    );
    std::fs::write(&missing, b"{\"runs\": 3}").unwrap();
    let err = project(&options, &mut |_| {}).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: written with bench result schema version 1, this build reads versions 3, 4, 5, 6 and {}",
            missing.display(),
            bal_replay_bench::SCHEMA_VERSION
        )
    );
    // A target of cores alone is refused.
    options.inputs.pop();
    options.target = TargetOptions {
        cores: Some(n(4)),
        ..TargetOptions::default()
    };
    let err = project(&options, &mut |_| {}).unwrap_err();
    assert!(matches!(err, ProjectionError::IncompleteTarget), "{err:?}");
}

/// A projection of the matrix, written to `dir` as `project --json` writes it.
fn written_projection(dir: &Path) -> (std::path::PathBuf, ProjectionReport) {
    let (report, _) = project_onto_research(&[matrix()], None);
    let path = dir.join("projection.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&report).unwrap()).unwrap();
    (path, report)
}

/// `a` and `b` equal, but for numbers within a few units of the last place (serde_json's
/// parser can land a float one off the nearest).
fn assert_same_but_for_float_parsing(a: &serde_json::Value, b: &serde_json::Value, at: &str) {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-14 * x.abs().max(y.abs()),
                "{at}: {x} {y}"
            );
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                assert_same_but_for_float_parsing(x, y, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}"
            );
            for (key, x) in x {
                assert_same_but_for_float_parsing(x, &y[key], &format!("{at}.{key}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

#[test]
fn a_projection_reads_back_as_written_and_a_bench_result_is_none() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, report) = written_projection(tmp.path());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with(&format!("{{\n  \"schema_version\": {SCHEMA_VERSION},")),
        "{}",
        &text[..40]
    );
    let read = read_projection(&path).unwrap().unwrap();
    assert_same_but_for_float_parsing(
        &serde_json::to_value(&read).unwrap(),
        &serde_json::to_value(&report).unwrap(),
        "report",
    );
    let bench = tmp.path().join("bench.json");
    std::fs::write(&bench, serde_json::to_vec(&matrix()).unwrap()).unwrap();
    assert_eq!(read_projection(&bench).unwrap(), None);
}

#[test]
fn a_projection_of_another_schema_version_is_refused_naming_both() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, _) = written_projection(tmp.path());
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for (version, found) in [(None, 1), (Some(99), 99)] {
        let object = value.as_object_mut().unwrap();
        match version {
            None => object.remove("schema_version"),
            Some(v) => object.insert("schema_version".into(), v.into()),
        };
        std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
        let err = read_projection(&path).unwrap_err();
        assert!(
            matches!(
                err,
                ReadProjectionError::SchemaVersion { found: f, expected: SCHEMA_VERSION, .. }
                    if f == found
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "{}: written with projection schema version {found}, this build reads version 2",
                path.display()
            )
        );
    }
}

/// The matrix with parallel I/O's one-worker run's first `tasks` tasks of its first batch
/// reading `reads` each, written as `bench0.json`, and projected: its error, and how long it took.
fn project_with_crafted_reads(tasks: usize, reads: u64) -> (String, std::time::Duration) {
    let tmp = tempfile::tempdir().unwrap();
    let mut crafted = matrix();
    let run = &mut crafted.runs[3];
    assert_eq!((run.design, run.threads), (IoDesign::Parallel, 1));
    for task in &mut run.batch_profiles[0].tasks[..tasks] {
        task.reads = reads;
    }
    let options = write_inputs(tmp.path(), &[crafted]);
    let start = std::time::Instant::now();
    let err = project(&options, &mut |_| {}).unwrap_err();
    assert!(
        matches!(&err, ProjectionError::Bench(ResultReadError::Field { path, .. }) if *path == options.inputs[0]),
        "{err:?}"
    );
    let message = err
        .to_string()
        .replace(&tmp.path().display().to_string(), "DIR");
    (message, start.elapsed())
}

/// Reads no task can make, which overflowed the model's sums (two tasks of 2^64 - 1) or kept
/// it simulating for minutes (one of 10^12), are refused as the file is read, naming the field.
#[test]
fn crafted_reads_are_refused_naming_the_file_and_the_field() {
    let expected = "at most 1124 (1000 gas a read for the task's 100000 gas, and 1024 more)";
    let (message, took) = project_with_crafted_reads(2, u64::MAX);
    assert_eq!(
        message,
        format!(
            "DIR/bench0.json: runs[3].batch_profiles[0].tasks.reads[0] = 18446744073709551615: \
             expected {expected}"
        )
    );
    assert!(took.as_secs() < 5, "{took:?}");
    let (message, took) = project_with_crafted_reads(1, 1_000_000_000_000);
    assert_eq!(
        message,
        format!(
            "DIR/bench0.json: runs[3].batch_profiles[0].tasks.reads[0] = 1000000000000: \
             expected {expected}"
        )
    );
    assert!(took.as_secs() < 5, "{took:?}");
}

/// The projection format's golden file: a field changed without raising
/// [`SCHEMA_VERSION`] fails here.
#[test]
fn the_projection_format_is_its_golden_file() {
    let (report, _) = project_onto_research(&[matrix()], Some(n(2)));
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(
            || env!("CARGO_MANIFEST_DIR").into(),
            std::path::PathBuf::from,
        )
        .join("tests/golden");
    bal_replay_results::assert_golden(&dir, &report);
}
