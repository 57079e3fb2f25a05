//! A projection from bench results: runs grouped by configuration, each group calibrated on its
//! one-worker run, checked against its other runs, and projected onto a target machine.

use crate::{
    bench_run::{BenchRun, Group, recorded_worker_start, runs_of},
    error::ProjectionError,
    target::TargetOptions,
};
use bal_replay_bench::BenchResult;
use bal_replay_engine::IoDesign;
use bal_replay_host::{
    WORKER_START_ROUNDS, WORKER_START_WORKERS, WorkerStartCost, measure_worker_start,
};
use bal_replay_model::{
    CalibrationRow, Check, DiskModel, Machine, MachineDescription, ProfiledRun, Projection,
    ProjectionReport, SCHEMA_VERSION, calibrate, predict,
};
use std::{
    fmt,
    num::NonZeroUsize,
    path::{Path, PathBuf},
};

/// What `bal-replay project` is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectOptions {
    /// Files written by `bal-replay bench --json --task-profile`: each configuration's
    /// one-worker run is its calibration; its runs at other worker counts are checked.
    pub inputs: Vec<PathBuf>,
    /// The disk the inputs were measured on: the fio table `scripts/fio-random-reads.sh` prints.
    pub disk: PathBuf,
    /// Cores of the machine the inputs ran on; `None`: each run's own (its bench's, less what
    /// other processes used meanwhile).
    pub cores: Option<NonZeroUsize>,
    /// The machine to project onto.
    pub target: TargetOptions,
    /// Worker counts to project.
    pub target_workers: Vec<NonZeroUsize>,
}

/// Something a projection tells its user beside its report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProjectionNote {
    /// No input recorded what starting a worker costs: it was measured on this machine now.
    WorkerStartMeasuredHere(WorkerStartCost),
    /// A configuration without a one-worker run with a task profile: not calibrated, so
    /// neither checked nor projected.
    NotCalibrated {
        /// Its design.
        design: IoDesign,
        /// Its blocks per batch.
        batch: usize,
    },
}

impl fmt::Display for ProjectionNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WorkerStartMeasuredHere(cost) => write!(
                f,
                "the inputs did not record what starting a worker costs; measured here now: \
                 {:.1} µs to start, {:.1} µs its thread, {:.1} µs to join",
                cost.spawn_ns / 1e3,
                cost.thread_ns / 1e3,
                cost.join_ns / 1e3
            ),
            Self::NotCalibrated { design, batch } => write!(
                f,
                "{design} at batch {batch}: no one-worker run with a task profile, not calibrated \
                 (bench with --threads 1 and --task-profile)"
            ),
        }
    }
}

/// The machine the inputs were measured on.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredMachine {
    /// Its disk.
    pub disk: DiskModel,
    /// Its cores, where given; otherwise each run's own.
    pub cores: Option<NonZeroUsize>,
    /// What starting a worker cost there, where known.
    pub worker_start: Option<WorkerStartCost>,
}

impl MeasuredMachine {
    /// The machine as `run` had it: its cores less what everything else used meanwhile, on a
    /// bench of `cpus` CPUs.
    fn as_run_had_it(&self, cpus: usize, run: Option<&BenchRun>) -> Machine {
        Machine {
            cores: match (self.cores, run.and_then(|r| r.cpus_free)) {
                (Some(c), _) => c.get() as f64,
                (None, Some(free)) => free,
                (None, None) => cpus as f64,
            },
            cpu_speed: 1.0,
            disk: self.disk.clone(),
            read_cpu_ns: None,
            readers: None,
            worker_start: self.worker_start,
        }
    }
}

/// Reads the inputs and the disk, and projects: see [`project_benches`]. What starting a
/// worker costs is the first input's that recorded it, or is measured here (and `notes` told).
pub fn project(
    options: &ProjectOptions,
    notes: &mut dyn FnMut(ProjectionNote),
) -> Result<ProjectionReport, ProjectionError> {
    let disk = DiskModel::from_fio_file(&options.disk)?;
    let benches = options
        .inputs
        .iter()
        .map(|path| load_bench(path))
        .collect::<Result<Vec<_>, _>>()?;
    let worker_start = recorded_worker_start(&benches).or_else(|| {
        let now = measure_worker_start(WORKER_START_WORKERS, WORKER_START_ROUNDS);
        if let Some(cost) = now {
            notes(ProjectionNote::WorkerStartMeasuredHere(cost));
        }
        now
    });
    let target = options.target.machine(worker_start)?;
    let measured_on = MeasuredMachine {
        disk,
        cores: options.cores,
        worker_start,
    };
    let mut report = project_benches(
        &benches,
        &measured_on,
        target.as_ref(),
        &options.target_workers,
        notes,
    );
    report.inputs = options
        .inputs
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    Ok(report)
}

fn load_bench(path: &Path) -> Result<BenchResult, ProjectionError> {
    Ok(BenchResult::read_json(path)?)
}

/// Calibrates on each configuration group's one-worker run with a profile, checks the group's
/// other runs (of every bench, each check naming its bench's index), and projects onto
/// `target` at `workers`. A group without such a run is left out, and `notes` told. The
/// report names no inputs.
pub fn project_benches(
    benches: &[BenchResult],
    measured_on: &MeasuredMachine,
    target: Option<&Machine>,
    workers: &[NonZeroUsize],
    notes: &mut dyn FnMut(ProjectionNote),
) -> ProjectionReport {
    let runs = runs_of(benches);
    let fitted = calibrate_groups(&runs, measured_on, notes);
    let mut report = ProjectionReport {
        schema_version: SCHEMA_VERSION,
        inputs: Vec::new(),
        measured_on: MachineDescription::from(
            &measured_on.as_run_had_it(runs.first().map_or(1, |r| r.cpus), None),
        ),
        calibrations: fitted.iter().map(|f| f.row).collect(),
        checks: Vec::new(),
        target: target.map(MachineDescription::from),
        projections: Vec::new(),
    };
    for f in &fitted {
        report.checks.extend(check_group(&runs, measured_on, f));
        if let Some(target) = target {
            report.projections.extend(project_group(f, target, workers));
        }
    }
    report
}

/// A group's calibration: its one-worker profile and the fit.
struct Fitted {
    group: Group,
    base: ProfiledRun,
    row: CalibrationRow,
}

/// The configuration groups of `runs`, in the order they first appear.
fn groups_of(runs: &[BenchRun]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for g in runs.iter().filter_map(BenchRun::group) {
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    groups
}

/// Each group of `runs` calibrated on its one-worker run with a profile (the first such run).
fn calibrate_groups(
    runs: &[BenchRun],
    measured_on: &MeasuredMachine,
    notes: &mut dyn FnMut(ProjectionNote),
) -> Vec<Fitted> {
    let mut fitted = Vec::new();
    for group in groups_of(runs) {
        let Some(run) = runs.iter().find(|r| r.is_one_worker_profile_of(group)) else {
            notes(ProjectionNote::NotCalibrated {
                design: group.design,
                batch: group.batch,
            });
            continue;
        };
        let machine = measured_on.as_run_had_it(run.cpus, Some(run));
        let repeats = run.repeats();
        let mut base = run.profiled();
        base.read_cpu_ns = read_cpu_ns(runs, group);
        let calibration = calibrate(&base, &machine);
        let row = CalibrationRow {
            design: group.design,
            batch: group.batch,
            workers: base.workers,
            device_reads_per_key: base.device_reads_per_key,
            calibration,
            read_cpu_ns: base.read_cpu_ns,
            measured_mgas_per_s: base.measured.mgas_per_s(base.gas),
            runs: run.runs_made,
            spread: repeats.map(|r| r.spread()),
            repeats,
        };
        fitted.push(Fitted { group, base, row });
    }
    fitted
}

/// The CPU a key read cost in the profiles at `group`'s batch size, from the one-worker parallel
/// I/O and full BAL runs ([`bal_replay_model::read_cpu_ns`]).
fn read_cpu_ns(runs: &[BenchRun], group: Group) -> Option<f64> {
    let one = |design| {
        runs.iter()
            .find(|r| r.is_one_worker_profile_of(Group { design, ..group }))
            .map(BenchRun::profiled)
    };
    bal_replay_model::read_cpu_ns(&one(IoDesign::Parallel)?, &one(IoDesign::Full)?)
}

/// `f`'s prediction of each run of its group at another worker count than one, next to it.
fn check_group(runs: &[BenchRun], measured_on: &MeasuredMachine, f: &Fitted) -> Vec<Check> {
    let k = f.row.calibration.k;
    runs.iter()
        .filter(|r| r.group() == Some(f.group) && r.workers != 1)
        .map(|r| {
            let machine = measured_on.as_run_had_it(r.cpus, Some(r));
            let predicted = predict(&f.base, r.workers, &machine, k);
            let measured = r.measured();
            // How much of the error is the tasks' CPU: the same simulation at the run's.
            let profile_cpu_s = f.base.task_cpu_ns() / 1e9;
            let error_at_run_task_cpu =
                (measured.task_cpu_s > 0.0 && profile_cpu_s > 0.0).then(|| {
                    let scaled = f
                        .base
                        .with_task_cpu_scaled(measured.task_cpu_s / profile_cpu_s);
                    let at = predict(&scaled, r.workers, &machine, k);
                    at.mgas_per_s(r.gas) / measured.mgas_per_s(r.gas) - 1.0
                });
            Check {
                design: f.group.design,
                batch: f.group.batch,
                workers: r.workers,
                calibrated_on_workers: f.base.workers,
                cores: machine.cores,
                k,
                gas: r.gas,
                measured,
                predicted,
                error_at_run_task_cpu,
                measured_repeats: r.repeats(),
                calibration_repeats: f.row.repeats,
                input: Some(r.input),
            }
        })
        .collect()
}

/// `f`'s group projected onto `target` at each of `workers`.
fn project_group(f: &Fitted, target: &Machine, workers: &[NonZeroUsize]) -> Vec<Projection> {
    workers
        .iter()
        .map(|w| Projection {
            design: f.group.design,
            batch: f.group.batch,
            workers: w.get(),
            k: f.row.calibration.k,
            gas: f.base.gas,
            predicted: predict(&f.base, w.get(), target, f.row.calibration.k),
        })
        .collect()
}
