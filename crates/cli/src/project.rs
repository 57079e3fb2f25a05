//! `bal-replay project`: the engine's schedule simulated from measured task profiles, checked
//! against the runs the profiles did not come from, and projected onto another machine.

use crate::count;
use bal_replay_bench::{BenchResult, RunResult, StoreKind};
use bal_replay_engine::{
    BatchProfile, ExecMode, IoDesign, PrefetchOrder, WORKER_START_ROUNDS, WORKER_START_WORKERS,
    WorkerStartCost, measure_worker_start,
};
use bal_replay_model::{
    Calibration, CalibrationRow, Check, DiskModel, Machine, MachineDescription, Measured,
    ProfiledRun, Projection, ProjectionReport, Repeats, calibrate, predict, task_totals,
};
use clap::Args;
use eyre::WrapErr;
use std::{
    num::NonZeroUsize,
    path::{Path, PathBuf},
};

/// The research's machine: 16 cores, an NVMe array of about 960k IOPS at about 85 µs.
const RESEARCH_CORES: usize = 16;
const RESEARCH_IOPS: f64 = 960_000.0;
const RESEARCH_LATENCY_US: f64 = 85.0;

/// Predict runs from per-task profiles, check the predictions against measured runs, and project
/// onto another machine (every projected figure is the model's, not a measurement).
#[derive(Debug, Clone, Args)]
pub struct ProjectCommand {
    /// JSON files written by `bal-replay bench --json --task-profile`: each design and batch
    /// size's one-worker run is the calibration; its runs at other worker counts are checked.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The disk the inputs were measured on: the table `scripts/fio-random-reads.sh` prints
    /// (`depth iops mean_latency_us` per line), run over the same filesystem.
    #[arg(long)]
    pub disk: PathBuf,
    /// Cores of the machine the inputs ran on. By default each run's own: the count the bench
    /// recorded, less the CPU other processes and interrupts used during that run (this
    /// machine is shared).
    #[arg(long, value_parser = count)]
    pub cores: Option<NonZeroUsize>,
    /// Project onto the research's machine: 16 cores, 960k IOPS at 85 µs (sets the --target-*
    /// options it names unless given).
    #[arg(long)]
    pub research_machine: bool,
    /// Project onto a machine with this many cores.
    #[arg(long, value_parser = count)]
    pub target_cores: Option<NonZeroUsize>,
    /// Its disk as a measured curve (the fio table's format).
    #[arg(long, conflicts_with_all = ["target_iops", "target_latency_us"])]
    pub target_disk: Option<PathBuf>,
    /// Its disk as a spec: best random-read IOPS ...
    #[arg(long, requires = "target_latency_us")]
    pub target_iops: Option<f64>,
    /// ... and latency at low queue depth, µs.
    #[arg(long, requires = "target_iops")]
    pub target_latency_us: Option<f64>,
    /// One of its cores' speed relative to this machine's (2.0: twice as fast).
    #[arg(long, default_value_t = 1.0)]
    pub target_cpu_speed: f64,
    /// What a key read costs its CPU, µs (RocksDB's lookup and the I/O path), in place of what
    /// it cost in the profiles: estimated per batch size from the one-worker parallel I/O and
    /// full BAL profiles (their task CPU's difference over parallel I/O's reads).
    #[arg(long)]
    pub target_read_cpu_us: Option<f64>,
    /// Prefetch readers there as the engine's `--io-threads` (it runs twice as many reader
    /// threads, which the simulation then uses), in place of the profiles' own.
    #[arg(long, value_parser = count)]
    pub target_io_threads: Option<NonZeroUsize>,
    /// Worker counts to project.
    #[arg(long, value_delimiter = ',', value_parser = count, default_value = "1,2,4,8,16,32")]
    pub target_workers: Vec<NonZeroUsize>,
    /// Write the checks and projections as JSON (what `report` draws).
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// A configuration group: runs that differ only in their worker count.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Group {
    design: IoDesign,
    batch: usize,
    store: StoreKind,
    cold: bool,
    pipelined: bool,
    /// Hybrid's prefetch order: a different schedule of its reads.
    prefetch_order: Option<PrefetchOrder>,
}

impl Group {
    fn of(r: &RunResult) -> Option<Self> {
        (r.mode == ExecMode::Parallel).then_some(Self {
            design: r.design,
            batch: r.batch,
            store: r.store,
            cold: r.cold,
            pipelined: r.pipelined,
            prefetch_order: r.prefetch_order,
        })
    }
}

/// The CPU a key read cost in the profiles at `group`'s batch size, from the one-worker parallel
/// I/O and full BAL runs ([`bal_replay_model::read_cpu_ns`]).
fn read_cpu(runs: &[InputRun], group: Group) -> Option<f64> {
    let one = |design| {
        runs.iter()
            .map(|i| &i.run)
            .find(|r| {
                Group::of(r)
                    == Some(Group {
                        design,
                        prefetch_order: None,
                        ..group
                    })
                    && r.threads == 1
                    && !r.batch_profiles.is_empty()
            })
            .map(profiled)
    };
    bal_replay_model::read_cpu_ns(&one(IoDesign::Parallel)?, &one(IoDesign::Full)?)
}

/// What the model needs of a measured run.
fn profiled(r: &RunResult) -> ProfiledRun {
    ProfiledRun {
        design: r.design,
        batch: r.batch,
        workers: r.threads,
        gas: r.gas,
        device_reads_per_key: r.disk.device_reads_per_key.unwrap_or(0.0),
        batches: r.batch_profiles.clone(),
        read_cpu_ns: None,
        // Only a profile that counted the race can simulate it.
        prefetch_race: r.prefetch_order.filter(|_| {
            r.batch_profiles
                .iter()
                .flat_map(|b| &b.tasks)
                .any(|t| t.raced + t.prefetch_hits > 0)
        }),
        measured: measured(r),
    }
}

fn measured(r: &RunResult) -> Measured {
    let (task_cpu_ns, reads) = task_totals(&r.batch_profiles);
    Measured {
        exec_with_io_s: r.timing.exec_with_io_s,
        longest_txs_s: r.timing.longest_txs_s,
        total_s: r.timing.exec_with_io_s + r.timing.commit_s,
        on_demand_reads: reads as f64,
        task_cpu_s: task_cpu_ns / 1e9,
        worker_run_delay_s: batches_sum_s(r, |b| b.worker_run_delay_ns),
        beside_cpu_s: batches_sum_s(r, BatchProfile::beside_cpu_ns),
    }
}

/// A per-batch figure in ns, where the profile has it, summed over the run, in seconds.
fn batches_sum_s(r: &RunResult, figure: impl Fn(&BatchProfile) -> Option<u64>) -> f64 {
    r.batch_profiles.iter().filter_map(figure).sum::<u64>() as f64 / 1e9
}

/// A bench's repeats of one configuration, where it made more than one run.
fn repeats(r: &RunResult) -> Option<Repeats> {
    Repeats::new(
        r.throughput.repeats,
        r.throughput.mgas_per_s,
        r.throughput.mgas_per_s_min,
        r.throughput.mgas_per_s_max,
    )
}

fn load(path: &Path) -> eyre::Result<BenchResult> {
    Ok(BenchResult::read_json(path)?)
}

impl ProjectCommand {
    /// The target machine, if one is asked for.
    fn target(&self, worker_start: Option<WorkerStartCost>) -> eyre::Result<Option<Machine>> {
        let cores = self
            .target_cores
            .map(NonZeroUsize::get)
            .or(self.research_machine.then_some(RESEARCH_CORES));
        let disk = match (&self.target_disk, self.target_iops, self.target_latency_us) {
            (Some(path), _, _) => Some(DiskModel::from_fio_file(path)?),
            (None, Some(iops), Some(latency)) => Some(DiskModel::from_spec(iops, latency)?),
            _ if self.research_machine => {
                Some(DiskModel::from_spec(RESEARCH_IOPS, RESEARCH_LATENCY_US)?)
            }
            _ => None,
        };
        match (cores, disk) {
            (None, None) => Ok(None),
            (Some(cores), Some(disk)) => Ok(Some(Machine {
                cores: cores as f64,
                cpu_speed: self.target_cpu_speed,
                disk,
                read_cpu_ns: self.target_read_cpu_us.map(|us| us * 1e3),
                // The engine's reader threads: 2 x --io-threads (what profiles record).
                readers: self.target_io_threads.map(|n| 2 * n.get()),
                worker_start,
            })),
            _ => eyre::bail!(
                "a target machine needs both its cores (--target-cores) and its disk \
                 (--target-disk, or --target-iops with --target-latency-us), or --research-machine"
            ),
        }
    }

    /// Calibrates, checks, projects, prints the tables and writes the JSON if asked.
    pub fn run(&self) -> eyre::Result<()> {
        let disk = DiskModel::from_fio_file(&self.disk)?;
        let mut runs: Vec<InputRun> = Vec::new();
        let mut recorded_start = None;
        for (input, path) in self.inputs.iter().enumerate() {
            let bench = load(path)?;
            recorded_start = recorded_start.or(bench.worker_start);
            runs.extend(bench.runs.into_iter().map(|run| InputRun {
                run,
                cpus: bench.cpus,
                input,
            }));
        }
        let worker_start = recorded_start.or_else(|| {
            let now = measure_worker_start(WORKER_START_WORKERS, WORKER_START_ROUNDS);
            if let Some(cost) = now {
                eprintln!(
                    "note: the inputs did not record what starting a worker costs; measured \
                     here now: {:.1} µs to start, {:.1} µs its thread, {:.1} µs to join",
                    cost.spawn_ns / 1e3,
                    cost.thread_ns / 1e3,
                    cost.join_ns / 1e3
                );
            }
            now
        });
        let target = self.target(worker_start)?;
        let here = Here {
            disk: &disk,
            cores: self.cores,
            worker_start,
        };
        let mut report = project(&runs, &here, target.as_ref(), &self.target_workers);
        report.inputs = self
            .inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        print_report(&report);
        if let Some(json) = &self.json {
            bal_replay_bench::write_result_file(json, &serde_json::to_vec_pretty(&report)?)
                .wrap_err_with(|| format!("writing {}", json.display()))?;
            println!("wrote {}", json.display());
        }
        Ok(())
    }
}

/// A run of one of the inputs, with the CPUs its bench had.
struct InputRun {
    run: RunResult,
    cpus: usize,
    /// Which input it came from (its index among them).
    input: usize,
}

/// The machine the inputs ran on.
struct Here<'a> {
    disk: &'a DiskModel,
    /// Its cores, where given; otherwise each run's own.
    cores: Option<NonZeroUsize>,
    /// What starting a worker cost there, where known.
    worker_start: Option<WorkerStartCost>,
}

/// Whether `r` is `group`'s one-worker run with a task profile: what each calibration takes.
fn one_worker_profile_of(r: &RunResult, group: Group) -> bool {
    Group::of(r) == Some(group) && r.threads == 1 && !r.batch_profiles.is_empty()
}

/// Calibrates on each group's one-worker run with a profile, checks its other runs, and projects
/// onto `target` at `workers`.
fn project(
    runs: &[InputRun],
    ran_on: &Here<'_>,
    target: Option<&Machine>,
    workers: &[NonZeroUsize],
) -> ProjectionReport {
    let Here {
        disk,
        cores,
        worker_start,
    } = *ran_on;
    let mut groups: Vec<Group> = Vec::new();
    for InputRun { run: r, .. } in runs {
        if let Some(g) = Group::of(r)
            && !groups.contains(&g)
        {
            groups.push(g);
        }
    }
    // The machine as a run had it: its cores less what everything else used meanwhile.
    let here = |cpus: usize, run: Option<&RunResult>| Machine {
        cores: match (cores, run.and_then(|r| r.cpu)) {
            (Some(c), _) => c.get() as f64,
            (None, Some(cpu)) => cpu.cpus_free(cpus),
            (None, None) => cpus as f64,
        },
        cpu_speed: 1.0,
        disk: disk.clone(),
        read_cpu_ns: None,
        readers: None,
        worker_start,
    };
    let mut report = ProjectionReport {
        inputs: Vec::new(),
        measured_on: MachineDescription::from(&here(runs.first().map_or(1, |i| i.cpus), None)),
        calibrations: Vec::new(),
        checks: Vec::new(),
        target: target.map(MachineDescription::from),
        projections: Vec::new(),
    };
    let mut fitted: Vec<Fitted> = Vec::new();
    for group in groups {
        let in_group = || runs.iter().filter(|i| Group::of(&i.run) == Some(group));
        let Some(InputRun {
            run: base, cpus, ..
        }) = in_group().find(|i| one_worker_profile_of(&i.run, group))
        else {
            eprintln!(
                "note: {} at batch {}: no one-worker run with a task profile, not calibrated \
                 (bench with --threads 1 and --task-profile)",
                group.design, group.batch
            );
            continue;
        };
        let machine = here(*cpus, Some(base));
        let (runs_made, base_repeats) = (base.throughput.repeats, repeats(base));
        let mut base = profiled(base);
        base.read_cpu_ns = read_cpu(runs, group);
        let calibration = calibrate(&base, &machine);
        report.calibrations.push(CalibrationRow {
            design: group.design,
            prefetch_order: group.prefetch_order,
            batch: group.batch,
            workers: base.workers,
            device_reads_per_key: base.device_reads_per_key,
            calibration,
            read_cpu_ns: base.read_cpu_ns,
            measured_mgas_per_s: base.measured.mgas_per_s(base.gas),
            runs: runs_made,
            spread: base_repeats.map(|r| r.spread()),
            repeats: base_repeats,
        });
        fitted.push(Fitted {
            group,
            base,
            calibration,
            repeats: base_repeats,
        });
    }
    for f in &fitted {
        let group = f.group;
        let in_group = || runs.iter().filter(|i| Group::of(&i.run) == Some(group));
        for InputRun {
            run: r,
            cpus,
            input,
        } in in_group().filter(|i| i.run.threads != 1)
        {
            let machine = here(*cpus, Some(r));
            let predicted = predict(&f.base, r.threads, &machine, f.calibration.k);
            let measured = measured(r);
            // How much of the error is the tasks' CPU: the same simulation at the run's.
            let profile_cpu_s = f.base.task_cpu_ns() / 1e9;
            let error_at_run_task_cpu =
                (measured.task_cpu_s > 0.0 && profile_cpu_s > 0.0).then(|| {
                    let scaled = f
                        .base
                        .with_task_cpu_scaled(measured.task_cpu_s / profile_cpu_s);
                    let at = predict(&scaled, r.threads, &machine, f.calibration.k);
                    at.mgas_per_s(r.gas) / measured.mgas_per_s(r.gas) - 1.0
                });
            report.checks.push(Check {
                design: group.design,
                prefetch_order: group.prefetch_order,
                batch: group.batch,
                workers: r.threads,
                calibrated_on_workers: f.base.workers,
                cores: machine.cores,
                k: f.calibration.k,
                gas: r.gas,
                measured,
                predicted,
                error_at_run_task_cpu,
                measured_repeats: repeats(r),
                calibration_repeats: f.repeats,
                input: Some(*input),
            });
        }
        // One projection per design and batch size: where hybrid was profiled in more than one
        // prefetch order, the engine's default one (the others are checked, not projected).
        let is_default = |o: Option<PrefetchOrder>| o.is_none_or(|o| o == PrefetchOrder::default());
        let default_profiled = fitted.iter().any(|o| {
            o.group
                == Group {
                    prefetch_order: Some(PrefetchOrder::default()),
                    ..group
                }
        });
        let projected = is_default(group.prefetch_order) || !default_profiled;
        if let Some(target) = target.filter(|_| projected) {
            for w in workers {
                report.projections.push(Projection {
                    design: group.design,
                    prefetch_order: group.prefetch_order,
                    batch: group.batch,
                    workers: w.get(),
                    k: f.calibration.k,
                    gas: f.base.gas,
                    predicted: predict(&f.base, w.get(), target, f.calibration.k),
                });
            }
        }
    }
    report
}

/// A group's calibration: its one-worker profile and the fitted `k`.
struct Fitted {
    group: Group,
    base: ProfiledRun,
    calibration: Calibration,
    /// The one-worker run's repeats, where the bench made more than one.
    repeats: Option<Repeats>,
}

fn print_report(report: &ProjectionReport) {
    print!("{}", bal_replay_report::render_projection_markdown(report));
}
