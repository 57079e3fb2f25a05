//! `bal-replay project`: the engine's schedule simulated from measured task profiles, checked
//! against the runs the profiles did not come from, and projected onto another machine.

use crate::count;
use bal_replay_bench::{BenchResult, RunResult, StoreKind, point_reads::BenchDbReport};
use bal_replay_engine::{
    BatchProfile, ExecMode, IoDesign, PrefetchOrder, WORKER_START_ROUNDS, WORKER_START_WORKERS,
    WorkerStartCost, measure_worker_start,
};
use bal_replay_model::{
    BusyCores, Calibration, CalibrationRow, Check, DiskModel, Fit, Machine, MachineDescription,
    Measured, ProfiledRun, Projection, ProjectionReport, ReadCpuCurve, ReadCpuPoint,
    RemoteCompletions, Repeats, batch_overhead_at, batch_overhead_ns, busy_cores, calibrate,
    predict, read_cpu_reference, remote_completions, task_totals,
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
    /// Also calibrate on each group's two-worker run: the time per batch it took beyond the
    /// simulation (workers off their cores between tasks, a late start: what one worker cannot
    /// show) is added to every batch of the checked predictions at two or more workers, and the
    /// two-worker run is no longer checked. For a design that waited on device reads, only full
    /// BAL's fitted time (threads) stays per batch; the rest (read waits) shrinks as more workers
    /// overlap it: 2/N of it at N workers. Projections onto a target machine leave it out: it is
    /// this machine's.
    #[arg(long)]
    pub batch_overhead: bool,
    /// The CPU a read costs by reads in flight on the machine the inputs ran on: a `bal-replay
    /// bench-db --json` result with point reads at several thread counts (RocksDB, disk-resident,
    /// the same state). The profiles' per-read CPU, taken by one worker with one read in flight,
    /// is scaled by it at the depth each simulated read is issued at. Checks only: projections
    /// onto a target machine leave it out.
    #[arg(long)]
    pub read_cpu: Option<PathBuf>,
    /// Leave out the race between hybrid's prefetch and its tasks: each task then reads at any
    /// worker count what it read in the profile, as profiles recorded before the race was
    /// counted do (for comparison).
    #[arg(long)]
    pub no_prefetch_race: bool,
    /// Simulate prefetch readers running ahead of the workers whenever they wake (as CFS ran
    /// a thread waking from a wait), instead of every runnable thread getting the same share.
    #[arg(long)]
    pub readers_first: bool,
    /// Start every simulated worker at once and for nothing, instead of as the engine does: one
    /// thread starting a batch's workers one after another, sharing the cores with those it has
    /// started, at what starting one cost on the machine the inputs ran on (measured by the
    /// profiling bench before its store opened, or now, here, for inputs recorded before it
    /// was). Projections onto a target machine start workers at the same cost.
    #[arg(long)]
    pub no_worker_start: bool,
    /// One-worker runs of the same chain and state with every core kept busy (`bal-replay bench
    /// --busy-cores --threads 1 --task-profile --json`): a parallel I/O worker's read issued in a
    /// simulation while every core has another thread to run then waits and costs the CPU it did
    /// there, in place of the profile's (where each read left a core idle, and on a VM paid its
    /// wake-up). Parallel I/O only: beside a prefetch the two runs differ in more than idling.
    /// Checks only: projections onto a target machine leave it out.
    #[arg(long, conflicts_with = "read_cpu")]
    pub busy_cores: Vec<PathBuf>,
    /// One-worker runs of the same chain and state pinned to the cores the disk's completions do
    /// not arrive on (`taskset -c <cores> bal-replay bench --threads 1 --task-profile --json`;
    /// on this VM the disk interrupts CPU 1, so `taskset -c 0`): a parallel I/O worker's read
    /// issued in a simulation from such a core while some core idles then waits and costs the
    /// CPU it did there. The cores the completions arrive on are the machine's less the pinned
    /// ones. Parallel I/O only; checks only, as `--busy-cores`.
    #[arg(long, conflicts_with = "read_cpu")]
    pub remote_completions: Vec<PathBuf>,
    /// Give the CPU other threads took beside each batch's tasks in the profile (RocksDB's
    /// flushes and compactions after a commit, measured as the process's CPU over the batch's
    /// execution less its tasks') a share of the cores, as one more runnable thread from the
    /// batch's start: a one-worker run leaves it a core of its own, more workers than cores do
    /// not. Checks and projections alike (a target machine's store has the same work to do).
    #[arg(long)]
    pub beside_cpu: bool,
}

/// The CPU per read by reads in flight, from the RocksDB point-read rows of a `bench-db --json`
/// result.
fn read_cpu_curve(path: &Path) -> eyre::Result<ReadCpuCurve> {
    let bytes = std::fs::read(path).wrap_err_with(|| format!("reading {}", path.display()))?;
    let reports: Vec<BenchDbReport> = serde_json::from_slice(&bytes).wrap_err_with(|| {
        format!(
            "{}: not a `bal-replay bench-db --json` result",
            path.display()
        )
    })?;
    let points = reports
        .iter()
        .filter(|r| r.backend == "rocksdb")
        .flat_map(|r| &r.rows)
        .filter(|row| row.multiget_keys.is_none() && row.reads > 0)
        .map(|row| ReadCpuPoint {
            depth: row.threads as f64,
            cpu_ns: row.cpu_s / row.reads as f64 * 1e9,
        })
        .collect();
    Ok(ReadCpuCurve::new(
        points,
        format!("bench-db point reads, {}", path.display()),
    )?)
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
        read_cpu_reference: None,
        busy_cores: None,
        remote_completions: None,
        measured: measured(r),
    }
}

fn measured(r: &RunResult) -> Measured {
    let (task_cpu_ns, reads) = task_totals(&r.batch_profiles);
    Measured {
        exec_with_io_s: r.exec_with_io_s,
        longest_txs_s: r.longest_txs_s,
        total_s: r.exec_with_io_s + r.commit_s,
        on_demand_reads: reads as f64,
        task_cpu_s: task_cpu_ns / 1e9,
        busy_core_reads: 0.0,
        remote_completion_reads: 0.0,
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
    Repeats::new(r.repeats, r.mgas_per_s, r.mgas_per_s_min, r.mgas_per_s_max)
}

fn load(path: &Path) -> eyre::Result<BenchResult> {
    let bytes = std::fs::read(path).wrap_err_with(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes)
        .wrap_err_with(|| format!("{}: not a `bal-replay bench --json` result", path.display()))
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
                read_cpu_curve: None,
                readers_first: self.readers_first,
                worker_start,
                beside_cpu: self.beside_cpu,
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
        let read_cpu = self.read_cpu.as_deref().map(read_cpu_curve).transpose()?;
        let mut runs: Vec<InputRun> = Vec::new();
        let mut recorded_start = None;
        for (input, path) in self.inputs.iter().enumerate() {
            let bench = load(path)?;
            if bench.busy_cores {
                eyre::bail!(
                    "{}: its runs kept every core busy (bench --busy-cores): give it as \
                     --busy-cores, not as a run to calibrate on or check",
                    path.display()
                );
            }
            if let Some(pinned) = &bench.pinned_cpus {
                eyre::bail!(
                    "{}: its runs were pinned to CPUs {pinned:?} of {} (taskset): give it as \
                     --remote-completions, not as a run to calibrate on or check",
                    path.display(),
                    bench.online_cpus.map_or("?".into(), |n| n.to_string())
                );
            }
            recorded_start = recorded_start.or(bench.worker_start);
            runs.extend(bench.runs.into_iter().map(|run| InputRun {
                run,
                cpus: bench.cpus,
                input,
            }));
        }
        let mut busy_runs: Vec<(RunResult, usize)> = Vec::new();
        for path in &self.busy_cores {
            let bench = load(path)?;
            if !bench.busy_cores {
                eyre::bail!(
                    "{}: not a busy-cores bench (its JSON has no \"busy_cores\": true; run \
                     bench with --busy-cores)",
                    path.display()
                );
            }
            busy_runs.extend(bench.runs.into_iter().map(|r| (r, bench.cpus)));
        }
        let mut remote_runs: Vec<PinnedRun> = Vec::new();
        for path in &self.remote_completions {
            let bench = load(path)?;
            let (Some(pinned), Some(online)) = (&bench.pinned_cpus, bench.online_cpus) else {
                eyre::bail!(
                    "{}: not a pinned bench (its JSON has no \"pinned_cpus\" and \
                     \"online_cpus\"; run bench under taskset -c <the cores the disk does not \
                     interrupt>)",
                    path.display()
                );
            };
            if bench.busy_cores {
                eyre::bail!(
                    "{}: its runs kept every core busy (bench --busy-cores): give it as \
                     --busy-cores",
                    path.display()
                );
            }
            let irq_cores = online.saturating_sub(pinned.len());
            for r in &bench.runs {
                // The pinned CPUs should have taken none of the disk's completions.
                if let Some(irq) = r
                    .disk
                    .interrupts
                    .filter(|i| i.device > 0 && i.device_on_run_cpus as f64 > 0.1 * i.device as f64)
                {
                    eprintln!(
                        "note: {}: {} at batch {}: the pinned CPUs {pinned:?} took {} of the run's \
                         {} device interrupts: not away from the disk's completions",
                        path.display(),
                        r.design,
                        r.batch,
                        irq.device_on_run_cpus,
                        irq.device
                    );
                }
            }
            remote_runs.extend(bench.runs.into_iter().map(|run| PinnedRun {
                run,
                pinned_cores: pinned.len(),
                irq_cores,
            }));
        }
        let worker_start = if self.no_worker_start {
            None
        } else {
            recorded_start.or_else(|| {
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
            })
        };
        let target = self.target(worker_start)?;
        let here = Here {
            disk: &disk,
            cores: self.cores,
            batch_overhead: self.batch_overhead,
            read_cpu_curve: read_cpu.as_ref(),
            prefetch_race: !self.no_prefetch_race,
            readers_first: self.readers_first,
            worker_start,
            beside_cpu: self.beside_cpu,
            busy_runs: &busy_runs,
            remote_runs: &remote_runs,
        };
        let mut report = project(&runs, &here, target.as_ref(), &self.target_workers);
        report.inputs = self
            .inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        print_report(&report);
        if let Some(json) = &self.json {
            std::fs::write(json, serde_json::to_vec_pretty(&report)?)
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

/// The machine the inputs ran on, and the model's optional terms there.
struct Here<'a> {
    disk: &'a DiskModel,
    /// Its cores, where given; otherwise each run's own.
    cores: Option<NonZeroUsize>,
    batch_overhead: bool,
    read_cpu_curve: Option<&'a ReadCpuCurve>,
    prefetch_race: bool,
    readers_first: bool,
    worker_start: Option<WorkerStartCost>,
    beside_cpu: bool,
    /// One-worker runs with every core kept busy (`--busy-cores`).
    busy_runs: &'a [(RunResult, usize)],
    /// One-worker runs pinned away from the disk's completions (`--remote-completions`).
    remote_runs: &'a [PinnedRun],
}

/// A run of a bench pinned away from the cores the disk's completions arrive on.
struct PinnedRun {
    run: RunResult,
    /// CPUs it was pinned to.
    pinned_cores: usize,
    /// Cores the completions arrive on: the machine's less the pinned ones.
    irq_cores: usize,
}

/// Whether `r` is `group`'s one-worker run with a task profile: what each calibration takes.
fn one_worker_profile_of(r: &RunResult, group: Group) -> bool {
    Group::of(r) == Some(group) && r.threads == 1 && !r.batch_profiles.is_empty()
}

/// Says so where a term's `kind` runs were given but `unfitted` for a parallel I/O group that
/// reads on demand: its reads then cost what they did in the profile `otherwise`.
fn note_unfitted(unfitted: bool, base: &ProfiledRun, group: Group, kind: &str, otherwise: &str) {
    if unfitted && base.on_demand_reads() > 0 && group.design == IoDesign::Parallel {
        eprintln!(
            "note: {} at batch {}: no one-worker {kind} run of the same chain with a task \
             profile, its reads cost what they did in the profile {otherwise}",
            group.design, group.batch
        );
    }
}

/// Calibrates on each group's one-worker run with a profile, checks its other runs, and projects
/// onto `target` at `workers`.
fn project(
    runs: &[InputRun],
    terms: &Here<'_>,
    target: Option<&Machine>,
    workers: &[NonZeroUsize],
) -> ProjectionReport {
    let Here {
        disk,
        cores,
        batch_overhead,
        read_cpu_curve,
        prefetch_race,
        readers_first,
        worker_start,
        beside_cpu,
        busy_runs,
        remote_runs,
    } = *terms;
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
        cores: match (cores, run.and_then(|r| r.disk.cpu)) {
            (Some(c), _) => c.get() as f64,
            (None, Some(cpu)) => cpu.cpus_free(cpus),
            (None, None) => cpus as f64,
        },
        cpu_speed: 1.0,
        disk: disk.clone(),
        read_cpu_ns: None,
        readers: None,
        read_cpu_curve: read_cpu_curve.cloned(),
        readers_first,
        worker_start,
        beside_cpu,
    };
    let mut report = ProjectionReport {
        inputs: Vec::new(),
        measured_on: MachineDescription::from(&here(runs.first().map_or(1, |i| i.cpus), None)),
        calibrations: Vec::new(),
        checks: Vec::new(),
        target: target.map(MachineDescription::from),
        projections: Vec::new(),
    };
    // Each group's calibration first: the thread part of a reading design's batch overhead is
    // what full BAL (which reads nothing) fitted at the same batch size.
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
        let (runs_made, base_repeats) = (base.repeats, repeats(base));
        let mut base = profiled(base);
        base.read_cpu_ns = read_cpu(runs, group);
        if !prefetch_race {
            base.prefetch_race = None;
        }
        let calibration = calibrate(&base, &machine);
        // What a read costs where no core idles, from the group's busy-cores run, if given.
        base.busy_cores = busy_runs
            .iter()
            .find(|(r, _)| one_worker_profile_of(r, group))
            .and_then(|(r, cpus)| busy_cores(&base, &profiled(r), &here(*cpus, Some(r))));
        note_unfitted(
            !busy_runs.is_empty() && base.busy_cores.is_none(),
            &base,
            group,
            "busy-cores",
            "at any worker count",
        );
        // What a read costs from a core the disk does not interrupt, from the group's pinned
        // run, if given. Its machine is the pinned cores, whole: what else ran meanwhile ran
        // on the others.
        base.remote_completions = remote_runs
            .iter()
            .find(|p| one_worker_profile_of(&p.run, group))
            .and_then(|p| {
                let pinned_machine = Machine {
                    cores: p.pinned_cores as f64,
                    ..here(p.pinned_cores, Some(&p.run))
                };
                remote_completions(&base, &profiled(&p.run), &pinned_machine, p.irq_cores)
            });
        note_unfitted(
            !remote_runs.is_empty() && base.remote_completions.is_none(),
            &base,
            group,
            "pinned",
            "from any core",
        );
        // Where its reads were issued on the read-CPU curve, on the machine it ran on: once.
        base.read_cpu_reference =
            read_cpu_curve.map(|curve| read_cpu_reference(&base, &machine, calibration.k, curve));
        // The second calibration point, when asked for.
        let two = batch_overhead
            .then(|| in_group().find(|i| i.run.threads == 2 && !i.run.batch_profiles.is_empty()))
            .flatten();
        if batch_overhead && two.is_none() {
            eprintln!(
                "note: {} at batch {}: no two-worker run with a task profile, checked without a \
                 batch overhead (bench with --threads 1,2 and --task-profile)",
                group.design, group.batch
            );
        }
        let overhead = two.map(|InputRun { run: r, cpus, .. }| {
            (
                batch_overhead_ns(&base, &profiled(r), &here(*cpus, Some(r)), calibration.k),
                r.threads,
            )
        });
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
            batch_overhead_ns: overhead.map(|(ns, _)| ns),
            busy_cores: base.busy_cores,
            remote_completions: base.remote_completions,
        });
        fitted.push(Fitted {
            group,
            base,
            calibration,
            two: two.map(|i| &i.run),
            overhead,
            repeats: base_repeats,
        });
    }
    for f in &fitted {
        let group = f.group;
        let in_group = || runs.iter().filter(|i| Group::of(&i.run) == Some(group));
        // Where the design waited on device reads and full BAL fitted a thread cost at this
        // batch size, the rest of the fitted time is read waits (`batch_overhead_at`); elsewhere
        // all of it is per batch.
        let thread_ns = fitted
            .iter()
            .find(|t| {
                t.group
                    == Group {
                        design: IoDesign::Full,
                        prefetch_order: None,
                        ..group
                    }
            })
            .and_then(|t| t.overhead.map(|(ns, _)| ns))
            .filter(|_| f.calibration.fit != Fit::NoDeviceReads && group.design != IoDesign::Full);
        let calibrated_on =
            |r: &RunResult| r.threads == 1 || f.two.is_some_and(|t| std::ptr::eq(t, r));
        for InputRun {
            run: r,
            cpus,
            input,
        } in in_group().filter(|i| !calibrated_on(&i.run))
        {
            let machine = here(*cpus, Some(r));
            let predicted = predict(&f.base, r.threads, &machine, f.calibration.k);
            let overhead_ns = f.overhead.map(|(ns, at)| match thread_ns {
                Some(thread) => batch_overhead_at(ns, at, thread, r.threads),
                None => ns,
            });
            let plus_overhead = |predicted: Measured| {
                overhead_ns.map_or(predicted, |ns| {
                    predicted.plus_per_batch(f.base.batches.len(), ns)
                })
            };
            let predicted = plus_overhead(predicted);
            let measured = measured(r);
            // How much of the error is the tasks' CPU: the same simulation at the run's. Without
            // the read-CPU curve or the busy cores' CPU: the run's CPU already has its reads'
            // cost in it (the busy cores' waits stay).
            let profile_cpu_s = f.base.task_cpu_ns() / 1e9;
            let error_at_run_task_cpu =
                (measured.task_cpu_s > 0.0 && profile_cpu_s > 0.0).then(|| {
                    let mut scaled = f
                        .base
                        .with_task_cpu_scaled(measured.task_cpu_s / profile_cpu_s);
                    scaled.busy_cores = scaled.busy_cores.map(|b| BusyCores {
                        read_cpu_saved_ns: 0.0,
                        ..b
                    });
                    scaled.remote_completions =
                        scaled.remote_completions.map(|r| RemoteCompletions {
                            read_cpu_extra_ns: 0.0,
                            ..r
                        });
                    let plain = Machine {
                        read_cpu_curve: None,
                        ..machine.clone()
                    };
                    let at = plus_overhead(predict(&scaled, r.threads, &plain, f.calibration.k));
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
                batch_overhead_ns: overhead_ns,
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
            // The busy cores' and remote completions' costs are this machine's hypervisor's and
            // disk's, not the target's.
            let portable = (f.base.busy_cores.is_some() || f.base.remote_completions.is_some())
                .then(|| ProfiledRun {
                    busy_cores: None,
                    remote_completions: None,
                    ..f.base.clone()
                });
            let base = portable.as_ref().unwrap_or(&f.base);
            for w in workers {
                report.projections.push(Projection {
                    design: group.design,
                    prefetch_order: group.prefetch_order,
                    batch: group.batch,
                    workers: w.get(),
                    k: f.calibration.k,
                    gas: f.base.gas,
                    predicted: predict(base, w.get(), target, f.calibration.k),
                });
            }
        }
    }
    report
}

/// A group's calibration: its one-worker profile, the fitted `k`, and the second calibration
/// point with the worker count it was fitted at.
struct Fitted<'a> {
    group: Group,
    base: ProfiledRun,
    calibration: Calibration,
    two: Option<&'a RunResult>,
    overhead: Option<(f64, usize)>,
    /// The one-worker run's repeats, where the bench made more than one.
    repeats: Option<Repeats>,
}

fn print_report(report: &ProjectionReport) {
    print!("{}", bal_replay_report::render_projection_markdown(report));
}

#[cfg(test)]
mod tests {
    use super::*;
    use bal_replay_bench::point_reads::BenchDbRow;

    fn row(threads: usize, reads: u64, cpu_s: f64, multiget_keys: Option<usize>) -> BenchDbRow {
        BenchDbRow {
            threads,
            reads,
            account_reads: reads / 2,
            slot_reads: reads - reads / 2,
            found: reads,
            wall_s: 1.0,
            iops: reads as f64,
            avg_latency_us: 100.0,
            cpu_s,
            cpu_pct: cpu_s * 100.0,
            device_reads: Some(reads),
            multiget_keys,
            io_uring: false,
            read_syscalls: Some(reads),
        }
    }

    fn report(backend: &str, rows: Vec<BenchDbRow>) -> BenchDbReport {
        BenchDbReport {
            backend: backend.into(),
            path: "/state".into(),
            key_scheme: "plain".into(),
            sampled_accounts: 10,
            sampled_slots: 10,
            total_accounts: 10,
            total_slots: 10,
            cold: true,
            cpus: 2,
            rows,
        }
    }

    #[test]
    fn the_read_cpu_curve_comes_from_rocksdb_point_reads_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench-db.json");
        let reports = vec![
            // 50 µs per read alone, 25 µs with 16 in flight; multi-gets and MDBX are left out.
            report(
                "rocksdb",
                vec![
                    row(1, 100_000, 5.0, None),
                    row(16, 100_000, 2.5, None),
                    row(16, 100_000, 1.0, Some(64)),
                ],
            ),
            report("mdbx", vec![row(4, 100_000, 9.0, None)]),
        ];
        std::fs::write(&path, serde_json::to_vec(&reports).unwrap()).unwrap();
        let curve = read_cpu_curve(&path).unwrap();
        let points: Vec<(f64, f64)> = curve.points().iter().map(|p| (p.depth, p.cpu_ns)).collect();
        assert_eq!(points, [(1.0, 50_000.0), (16.0, 25_000.0)]);
        assert_eq!(curve.relative(16.0), 0.5);

        // A file without RocksDB point reads, or not a bench-db result, says which and why.
        let only_mdbx = dir.path().join("mdbx.json");
        std::fs::write(&only_mdbx, serde_json::to_vec(&reports[1..]).unwrap()).unwrap();
        let err = read_cpu_curve(&only_mdbx).unwrap_err().to_string();
        assert!(
            err.contains("no point-read run to take the CPU per read from"),
            "{err}"
        );
        assert!(err.contains("mdbx.json"), "{err}");
        let garbage = dir.path().join("garbage.json");
        std::fs::write(&garbage, b"{}").unwrap();
        let err = read_cpu_curve(&garbage).unwrap_err().to_string();
        assert!(
            err.contains("not a `bal-replay bench-db --json` result"),
            "{err}"
        );
    }
}
