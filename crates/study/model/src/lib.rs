//! A model of the engine's schedule past this machine's cores: per-task profiles of a measured
//! run (`bench --task-profile`) replayed in simulation for other worker, core and disk counts.
//!
//! The model keeps what the engine does: the same tasks in the same order, the same batch
//! boundaries and commits, batched I/O's prefetch before execution, hybrid's prefetch and the
//! verifying full BAL's reads beside it. What it measures it takes from the profile: each task's
//! CPU time and on-demand reads, each prefetch's keys and CPU time, each commit. What it assumes
//! is in [`simulate`]. One factor is fitted per run, on a one-worker run only: `k`, between the
//! disk's latency per depth (fio, or a device's spec) and what a key read waits. Everything at
//! other worker counts is then a prediction, checked against runs the fit did not see
//! ([`Check`]). Terms tried and not kept: docs/notes/2026-11-26-model-terms-not-kept.md.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod bounds;
mod disk;
pub mod simulate;

pub use disk::{
    DiskModel, DiskModelError, DiskPoint, IOPS_RANGE, LATENCY_US_RANGE, MAX_DEPTH, MAX_DISK_POINTS,
    MAX_DISK_TABLE_BYTES, RESEARCH_ROCKSDB_READS,
};

use bal_replay_engine::{BatchProfile, IoDesign, TaskProfile, WorkerStartCost};
use simulate::{Cores, PhaseTimes, Race, ReadCost, Readers, simulate_phase};

/// A measured run with its profile: what the model is calibrated on.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfiledRun {
    /// The design.
    pub design: IoDesign,
    /// Blocks per batch.
    pub batch: usize,
    /// Workers it ran with.
    pub workers: usize,
    /// Gas replayed.
    pub gas: u64,
    /// Device reads per key read (0 for a run that read none from the device).
    pub device_reads_per_key: f64,
    /// Each batch's profile.
    pub batches: Vec<BatchProfile>,
    /// What a key read cost the CPU in this profile, ns (on-demand reads are inside their tasks'
    /// CPU time, prefetched keys inside the readers'), if known: see [`read_cpu_ns`].
    pub read_cpu_ns: Option<f64>,
    /// Whether the model is to simulate the race of a prefetch that ran beside execution
    /// (hybrid's, in key order) with the tasks ([`simulate::Race`]): only a profile that counted
    /// the race (its tasks' `raced` and `prefetch_hits`) can. `false`: each task reads what it
    /// read in the profile, at any worker count.
    pub simulate_race: bool,
    /// What was measured.
    pub measured: Measured,
}

impl ProfiledRun {
    /// The same run with every task's CPU scaled by `factor` (its reads and everything else as
    /// profiled): what [`Check::error_at_run_task_cpu`] simulates.
    pub fn with_task_cpu_scaled(&self, factor: f64) -> Self {
        let mut run = self.clone();
        for task in run.batches.iter_mut().flat_map(|b| &mut b.tasks) {
            task.cpu_ns = (task.cpu_ns as f64 * factor.max(0.0)).round() as u64;
        }
        run
    }

    /// Every task's CPU, summed, ns ([`task_totals`]).
    pub fn task_cpu_ns(&self) -> f64 {
        task_totals(&self.batches).0
    }

    /// Every task's on-demand reads, summed ([`task_totals`]).
    pub fn on_demand_reads(&self) -> u64 {
        task_totals(&self.batches).1
    }
}

/// The CPU a key read costs, estimated from two one-worker profiles of the same chain and batch
/// size: parallel I/O's tasks (which read on demand) less full BAL's (which read nothing), over
/// parallel I/O's on-demand reads. `None` without reads.
pub fn read_cpu_ns(parallel: &ProfiledRun, full: &ProfiledRun) -> Option<f64> {
    let reads = parallel.on_demand_reads();
    (reads > 0).then(|| ((parallel.task_cpu_ns() - full.task_cpu_ns()) / reads as f64).max(0.0))
}

/// Every task's CPU (ns) and on-demand reads in `batches`, summed: what a run's tasks took.
pub fn task_totals(batches: &[BatchProfile]) -> (f64, u64) {
    batches
        .iter()
        .flat_map(|b| &b.tasks)
        .fold((0.0, 0), |(cpu, reads), t| {
            (cpu + t.cpu_ns as f64, reads.saturating_add(t.reads))
        })
}

/// A run's figures, measured or predicted, in the research's terms.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Measured {
    /// Execution with I/O (prefetch before execution plus execution), s.
    pub exec_with_io_s: f64,
    /// Sum over batches of the longest transaction, s.
    pub longest_txs_s: f64,
    /// Execution with I/O plus commits and whatever runs beside execution past its end, s.
    pub total_s: f64,
    /// On-demand reads the workers made (0 where unknown: a run without a task profile). Where
    /// a prefetch races the tasks, how many it lost is part of the prediction.
    pub on_demand_reads: f64,
    /// The tasks' CPU, s: measured, each task's thread CPU summed; predicted, the profile's
    /// less what a target's cheaper reads save. Where a check misses, their ratio says how much
    /// of the miss is the tasks' CPU itself changing with the workers (caches shared by more
    /// threads than cores, reads costing more CPU in flight together), which a one-worker
    /// profile cannot show. 0 where unknown.
    pub task_cpu_s: f64,
    /// The workers' time runnable but off a core, summed over them, s: measured, the kernel's
    /// (`BatchProfile::worker_run_delay_ns`; 0 where the kernel did not say); predicted,
    /// the simulation's sharing of the cores. Where they differ, the kernel did not run a woken
    /// worker where the model did.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub worker_run_delay_s: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Measured {
    /// Throughput over execution with I/O, Mgas/s.
    pub fn mgas_per_s(&self, gas: u64) -> f64 {
        if self.exec_with_io_s > 0.0 {
            gas as f64 / self.exec_with_io_s / 1e6
        } else {
            0.0
        }
    }
}

/// A machine to project onto.
#[derive(Debug, Clone)]
pub struct Machine {
    /// CPU cores (fractional: what other work leaves of a shared machine).
    pub cores: f64,
    /// One core's speed relative to the profiled machine's.
    pub cpu_speed: f64,
    /// The disk.
    pub disk: DiskModel,
    /// What a key read costs the CPU there, ns, where it differs from the profile's (a VM's
    /// I/O path against bare metal's); `None`: as profiled.
    pub read_cpu_ns: Option<f64>,
    /// Prefetch reader threads there, where they differ from the profile's (2 x the engine's
    /// `--io-threads`, as profiles record them): the same keys split among them.
    pub readers: Option<usize>,
    /// What starting a batch's worker costs there ([`simulate::Cores::worker_start`]), where
    /// the simulation is to start them as the engine does.
    pub worker_start: Option<WorkerStartCost>,
}

/// What one calibration found.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Calibration {
    /// Wait of a key read per device read at the disk's latency (1.0: a key read waits exactly
    /// the device reads it makes, at fio's latency).
    pub k: f64,
    /// How the fit ended.
    pub fit: Fit,
    /// The simulated run at `k` over the measured one, minus one (0 for an exact fit; what the
    /// model cannot explain otherwise).
    pub residual: f64,
}

/// How a calibration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fit {
    /// `k` makes the simulation take the measured time.
    Exact,
    /// Nothing to fit: the run read nothing from the device (no key reads, or none reached it:
    /// a cache-resident state), so its time is its CPU and its serial part alone.
    NoDeviceReads,
    /// The simulation is slower than the measured run with reads that wait for nothing but the
    /// disk's best IOPS (`k` = 0), and no `k` brings it down to it (slower reads can, where
    /// readers beside execution then leave the cores to the workers: that is an exact fit).
    CpuExceeds,
    /// No `k` from 0.01 to 1000 explains the measured time: the closest is kept.
    AtBound,
}

impl Fit {
    /// A short name for tables.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::NoDeviceReads => "no device reads",
            Self::CpuExceeds => "CPU exceeds",
            Self::AtBound => "at bound",
        }
    }
}

/// Simulates `run`'s batches for `workers` workers on `machine`, with read cost factor `k`.
pub fn predict(run: &ProfiledRun, workers: usize, machine: &Machine, k: f64) -> Measured {
    let read = ReadCost {
        disk: &machine.disk,
        device_reads_per_key: run.device_reads_per_key,
        k,
    };
    let cores = Cores {
        cores: machine.cores,
        cpu_speed: machine.cpu_speed,
        worker_start: machine.worker_start,
    };
    // CPU a read costs less here than in the profile (more, where negative).
    let saved = match (run.read_cpu_ns, machine.read_cpu_ns) {
        (Some(profiled), Some(here)) => profiled - here,
        _ => 0.0,
    };
    let mut out = Measured::default();
    let race = run.simulate_race.then(|| Race {
        read_cpu_ns: machine.read_cpu_ns.or(run.read_cpu_ns).unwrap_or(0.0),
    });
    for b in &run.batches {
        let raced = race.filter(|_| b.prefetch.is_some_and(|p| p.concurrent));
        let readers = b.prefetch.map(|p| Readers {
            readers: machine.readers.unwrap_or(p.readers as usize),
            // Under a simulated race, every key the prefetch was to read: those it read, and
            // those the profile's tasks read first (it found them cached and skipped them; the
            // simulation skips what its own tasks read first).
            keys: p.keys.saturating_add(raced.map_or(0, |_| {
                b.tasks
                    .iter()
                    .fold(0u64, |sum, t| sum.saturating_add(t.raced.min(t.reads)))
            })),
            cpu_per_key_ns: if p.keys > 0 {
                (p.cpu_ns as f64 / p.keys as f64 - saved).max(0.0)
            } else {
                0.0
            },
            race: raced,
        });
        let adjusted: Vec<TaskProfile>;
        let tasks = if saved != 0.0 {
            adjusted = b
                .tasks
                .iter()
                .map(|t| TaskProfile {
                    cpu_ns: (t.cpu_ns as f64 - t.reads as f64 * saved).max(0.0) as u64,
                    ..*t
                })
                .collect();
            &adjusted[..]
        } else {
            &b.tasks[..]
        };
        let (before, exec) = match readers {
            // Batched I/O: the prefetch, then execution.
            Some(r) if !b.prefetch.is_some_and(|p| p.concurrent) => {
                let prefetch = simulate_phase(&[], 0, r, cores, read);
                let exec = simulate_phase(tasks, workers, Readers::default(), cores, read);
                (prefetch.readers_end_ns, exec)
            }
            Some(r) => (0.0, simulate_phase(tasks, workers, r, cores, read)),
            None => (
                0.0,
                simulate_phase(tasks, workers, Readers::default(), cores, read),
            ),
        };
        let PhaseTimes {
            tasks_end_ns,
            readers_end_ns,
            longest_task_ns,
            worker_reads,
            worker_run_delay_ns,
        } = exec;
        // The batch's serial part (starting workers; checking receipts and building the net
        // change after the last task), as measured.
        let serial = b.serial_ns() as f64 / machine.cpu_speed.max(1e-9);
        let tasks_end_ns = tasks_end_ns + serial;
        out.exec_with_io_s += (before + tasks_end_ns) / 1e9;
        out.on_demand_reads += worker_reads as f64;
        out.worker_run_delay_s += worker_run_delay_ns / 1e9;
        out.task_cpu_s += tasks.iter().map(|t| t.cpu_ns as f64).sum::<f64>() / 1e9;
        out.longest_txs_s += longest_task_ns / 1e9;
        out.total_s += (before + tasks_end_ns.max(readers_end_ns) + b.commit_ns as f64) / 1e9;
    }
    out
}

/// Fits `k` so that the simulation of `run` on the machine it ran on (`machine`, with `run`'s
/// own worker count) takes its measured execution with I/O.
pub fn calibrate(run: &ProfiledRun, machine: &Machine) -> Calibration {
    let target = run.measured.exec_with_io_s;
    let at = |k: f64| predict(run, run.workers, machine, k).exec_with_io_s;
    let residual = |k: f64| {
        if target > 0.0 {
            at(k) / target - 1.0
        } else {
            0.0
        }
    };
    let reads = run
        .batches
        .iter()
        .flat_map(|b| {
            b.tasks
                .iter()
                .map(|t| t.reads)
                .chain(b.prefetch.map(|p| p.keys))
        })
        .fold(0u64, u64::saturating_add);
    // Below this, device reads are too few to fit anything on.
    if reads == 0 || run.device_reads_per_key < 0.01 {
        return Calibration {
            k: 0.0,
            fit: Fit::NoDeviceReads,
            residual: residual(0.0),
        };
    }
    // The simulated time is not monotone in k where readers run beside execution (hybrid, the
    // verifying full BAL): slower reads leave the cores to the workers. So: a log-spaced scan
    // for the first k where the simulation reaches the measured time, then bisection there.
    let ks: Vec<f64> = std::iter::once(0.0)
        .chain((0..=60).map(|i| 10f64.powf(-2.0 + 5.0 * i as f64 / 60.0)))
        .collect();
    let times: Vec<f64> = ks.iter().map(|&k| at(k)).collect();
    if times[0] >= target {
        // Slower than measured with instant reads. Where readers run beside execution, slower
        // reads can still make it faster: readers waiting on the disk leave the cores to the
        // workers (the verifying full BAL's readers, 16 of them beside one worker). The first k
        // that brings it down to the measured time, if any.
        let Some(i) = times.iter().position(|&t| t <= target) else {
            return Calibration {
                k: 0.0,
                fit: Fit::CpuExceeds,
                residual: residual(0.0),
            };
        };
        // At i == 0 instant reads take exactly the measured time: k is 0 (lo = hi).
        let (mut lo, mut hi) = (ks[i.saturating_sub(1)], ks[i]);
        for _ in 0..50 {
            let mid = (lo + hi) / 2.0;
            if at(mid) > target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let k = (lo + hi) / 2.0;
        return Calibration {
            k,
            fit: Fit::Exact,
            residual: residual(k),
        };
    }
    let Some(i) = times.iter().position(|&t| t >= target) else {
        // No k reaches it: the closest one, said so.
        let (best, _) = times
            .iter()
            .enumerate()
            .min_by(|a, b| (a.1 - target).abs().total_cmp(&(b.1 - target).abs()))
            .expect("the scan has points");
        return Calibration {
            k: ks[best],
            fit: Fit::AtBound,
            residual: residual(ks[best]),
        };
    };
    // `times[0] < target` here, so `i > 0`.
    let (mut lo, mut hi) = (ks[i - 1], ks[i]);
    for _ in 0..50 {
        let mid = (lo + hi) / 2.0;
        if at(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let k = (lo + hi) / 2.0;
    Calibration {
        k,
        fit: Fit::Exact,
        residual: residual(k),
    }
}

/// A prediction next to the run it predicts.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Check {
    /// The design.
    pub design: IoDesign,
    /// Blocks per batch.
    pub batch: usize,
    /// Workers of the predicted run.
    pub workers: usize,
    /// Workers of the run the model was calibrated on.
    pub calibrated_on_workers: usize,
    /// Cores the held-out run had (the machine's, less what other work used meanwhile).
    pub cores: f64,
    /// The fitted factor.
    pub k: f64,
    /// Gas.
    pub gas: u64,
    /// Measured.
    pub measured: Measured,
    /// Predicted.
    pub predicted: Measured,
    /// Where the predicted run's tasks took other CPU than the profile's
    /// ([`Check::task_cpu_ratio`]): the throughput error of the same prediction with each task's
    /// CPU scaled to the run's total ([`ProfiledRun::with_task_cpu_scaled`]). Not a prediction
    /// (it uses the held-out run's CPU): it says how much of the error is the tasks' CPU and
    /// how much the schedule's other terms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_at_run_task_cpu: Option<f64>,
    /// The repeats of the checked run's configuration (`bench --repeat`), where there were more
    /// than one: `measured` is their median run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_repeats: Option<Repeats>,
    /// The repeats of the calibration's configuration, where there were more than one: the
    /// prediction comes from their median run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration_repeats: Option<Repeats>,
    /// Which of the report's inputs the checked run came from ([`ProjectionReport::inputs`]):
    /// given two benches of the same chain, each configuration is checked in both against the
    /// first's calibration, and whether an error repeats from one bench to the next tells the
    /// model's from the host's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<usize>,
}

/// A bench's repeats of one configuration: how many, and their throughput.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Repeats {
    /// Runs made.
    pub runs: usize,
    /// The median run's throughput, MGas/s (the run the figures come from).
    pub median_mgas_per_s: f64,
    /// The lowest run's.
    pub min_mgas_per_s: f64,
    /// The highest run's.
    pub max_mgas_per_s: f64,
}

impl Repeats {
    /// The repeats of a configuration run `runs` times, or `None` for one run (or for figures
    /// that cannot be a run's: a lowest above the median, a median above the highest, or any of
    /// them not above zero), whose noise is unseen.
    pub fn new(runs: usize, median: f64, min: f64, max: f64) -> Option<Self> {
        (runs > 1 && min > 0.0 && min <= median && median <= max).then_some(Self {
            runs,
            median_mgas_per_s: median,
            min_mgas_per_s: min,
            max_mgas_per_s: max,
        })
    }

    /// Highest throughput over lowest, less 1.
    pub fn spread(&self) -> f64 {
        self.max_mgas_per_s / self.min_mgas_per_s - 1.0
    }

    /// The lowest and the highest run's throughput over the median's: what a figure of the
    /// median run becomes at either extreme, to first order.
    pub fn relative(&self) -> (f64, f64) {
        (
            self.min_mgas_per_s / self.median_mgas_per_s,
            self.max_mgas_per_s / self.median_mgas_per_s,
        )
    }
}

/// How a check's throughput error stands against the 15% target and against the noise its two
/// runs carry ([`Check::error_range`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within 15% of the measured run.
    Within,
    /// Off by more than 15%, but somewhere between the repeats' extremes the error is within
    /// 15%: the repeats cannot tell this error from their own noise.
    InsideNoise,
    /// Off by more than 15% between every pair of the repeats' extremes (or with no repeats to
    /// say otherwise): a term of the model is off.
    Miss,
}

impl Verdict {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Within => "within 15%",
            Self::InsideNoise => "inside the runs' noise",
            Self::Miss => "miss",
        }
    }
}

/// The error a check is held to: 15%, the model's target on held-out runs.
pub const TARGET_ERROR: f64 = 0.15;

impl Check {
    /// Predicted over measured throughput, minus one (0.1: the model predicts 10% more
    /// throughput than was measured).
    pub fn throughput_error(&self) -> f64 {
        let m = self.measured.mgas_per_s(self.gas);
        if m > 0.0 {
            self.predicted.mgas_per_s(self.gas) / m - 1.0
        } else {
            0.0
        }
    }

    /// Measured over predicted task CPU (1.1: the tasks took 10% more CPU than the profile's),
    /// where both are known.
    pub fn task_cpu_ratio(&self) -> Option<f64> {
        (self.measured.task_cpu_s > 0.0 && self.predicted.task_cpu_s > 0.0)
            .then(|| self.measured.task_cpu_s / self.predicted.task_cpu_s)
    }

    /// The throughput error between the extremes of the two runs' repeats, lowest and highest:
    /// the prediction from the calibration's slowest repeat against the checked configuration's
    /// fastest, and from the calibration's fastest against the checked one's slowest. `None`
    /// where neither was repeated.
    ///
    /// The prediction is taken to scale with its calibration's throughput (first order: a
    /// calibration run the host slowed by some factor has its tasks' CPU, and its fitted read
    /// wait, slowed by about that factor, and so has every prediction made from it). The
    /// median of each is what [`Check::throughput_error`] compares.
    pub fn error_range(&self) -> Option<(f64, f64)> {
        if self.measured_repeats.is_none() && self.calibration_repeats.is_none() {
            return None;
        }
        let predicted = self.predicted.mgas_per_s(self.gas);
        let measured = self.measured.mgas_per_s(self.gas);
        if predicted <= 0.0 || measured <= 0.0 {
            return None;
        }
        let (cal_low, cal_high) = self
            .calibration_repeats
            .map_or((1.0, 1.0), |c| c.relative());
        // The checked run's extremes relative to its median, applied to the median measured
        // here (the same run's figure).
        let (m_low, m_high) = self.measured_repeats.map_or((1.0, 1.0), |m| m.relative());
        Some((
            predicted * cal_low / (measured * m_high) - 1.0,
            predicted * cal_high / (measured * m_low) - 1.0,
        ))
    }

    /// The check against the 15% target and its runs' noise.
    pub fn verdict(&self) -> Verdict {
        if self.throughput_error().abs() <= TARGET_ERROR {
            Verdict::Within
        } else if self
            .error_range()
            .is_some_and(|(low, high)| low <= TARGET_ERROR && high >= -TARGET_ERROR)
        {
            Verdict::InsideNoise
        } else {
            Verdict::Miss
        }
    }

    /// Predicted over measured sum of longest transactions, minus one.
    pub fn longest_error(&self) -> f64 {
        if self.measured.longest_txs_s > 0.0 {
            self.predicted.longest_txs_s / self.measured.longest_txs_s - 1.0
        } else {
            0.0
        }
    }
}

/// Calibrates on `calibration` (a one-worker run) and predicts `held_out` (the same design and
/// batch size, any worker count) on the machine both ran on.
pub fn check(calibration: &ProfiledRun, held_out: &ProfiledRun, machine: &Machine) -> Check {
    let k = calibrate(calibration, machine).k;
    Check {
        design: held_out.design,
        batch: held_out.batch,
        workers: held_out.workers,
        calibrated_on_workers: calibration.workers,
        cores: machine.cores,
        k,
        gas: held_out.gas,
        measured: held_out.measured,
        predicted: predict(calibration, held_out.workers, machine, k),
        error_at_run_task_cpu: None,
        measured_repeats: None,
        calibration_repeats: None,
        input: None,
    }
}

/// A machine as a projection names it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MachineDescription {
    /// CPU cores.
    pub cores: f64,
    /// One core's speed relative to the profiled machine's.
    pub cpu_speed: f64,
    /// The disk model's description.
    pub disk: String,
    /// What a key read costs the CPU there, ns, where it replaces the profile's.
    pub read_cpu_ns: Option<f64>,
    /// Prefetch readers there, where they replace the profile's.
    pub readers: Option<usize>,
    /// What starting a worker cost there, where the simulation started them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_start: Option<WorkerStartCost>,
}

impl From<&Machine> for MachineDescription {
    fn from(m: &Machine) -> Self {
        Self {
            cores: m.cores,
            cpu_speed: m.cpu_speed,
            disk: m.disk.source.clone(),
            read_cpu_ns: m.read_cpu_ns,
            readers: m.readers,
            worker_start: m.worker_start,
        }
    }
}

/// One fitted calibration: which run, and the factor.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CalibrationRow {
    /// The design.
    pub design: IoDesign,
    /// Blocks per batch.
    pub batch: usize,
    /// Workers of the calibration run (1).
    pub workers: usize,
    /// Device reads per key read of that run.
    pub device_reads_per_key: f64,
    /// The fit.
    pub calibration: Calibration,
    /// What a key read cost the CPU in its profile, ns, where known.
    pub read_cpu_ns: Option<f64>,
    /// Its measured throughput, Mgas/s.
    pub measured_mgas_per_s: f64,
    /// Runs of that configuration the bench made (`bench --repeat`); the calibration is their
    /// median by throughput.
    pub runs: usize,
    /// Their spread, highest throughput over lowest less 1, where more than one run was made:
    /// run-to-run noise every check of the group inherits through its calibration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread: Option<f64>,
    /// Those runs' throughput, where more than one was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Repeats>,
}

/// A projection of one configuration onto another machine.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Projection {
    /// The design.
    pub design: IoDesign,
    /// Blocks per batch.
    pub batch: usize,
    /// Workers.
    pub workers: usize,
    /// The fitted factor used.
    pub k: f64,
    /// Gas.
    pub gas: u64,
    /// What the model predicts there.
    pub predicted: Measured,
}

/// The version of [`ProjectionReport`]'s JSON schema this build writes and reads: the report's
/// first field. Files written before it was recorded are version 1.
pub const SCHEMA_VERSION: u32 = 2;

/// What `bal-replay project` writes: predictions checked against measured runs on the machine
/// the profiles were taken on, and projections onto another machine. Every figure in
/// `projections` is a model's output, not a measurement.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProjectionReport {
    /// The schema version it was written in ([`SCHEMA_VERSION`] by this build): a reader checks
    /// it before the rest.
    pub schema_version: u32,
    /// The bench results the runs came from, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    /// Where the profiles and the checked runs were measured.
    pub measured_on: MachineDescription,
    /// One per calibration run.
    pub calibrations: Vec<CalibrationRow>,
    /// Each held-out run next to its prediction.
    pub checks: Vec<Check>,
    /// The machine projected onto, if any.
    pub target: Option<MachineDescription>,
    /// Its projections.
    pub projections: Vec<Projection>,
}

impl bal_replay_results::VersionedResult for ProjectionReport {
    const KIND: &'static str = "projection";
    const SCHEMA_VERSION: u32 = SCHEMA_VERSION;

    /// Every number the report divides or draws, within [`bounds`].
    fn check(&self) -> Result<(), bal_replay_results::FieldError> {
        bounds::check_projection(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bal_replay_engine::{PrefetchProfile, TaskProfile};

    fn disk() -> DiskModel {
        DiskModel::parse_fio_table("1 25000\n16 90000\n128 100000\n", "fio").unwrap()
    }

    /// Counts no run records (a crafted file's, where nothing held them back) saturate in the
    /// sums instead of overflowing them.
    #[test]
    fn task_totals_saturate_instead_of_overflowing() {
        let mut profiled = run(IoDesign::Parallel, 1);
        for task in &mut profiled.batches[0].tasks[..2] {
            task.reads = u64::MAX;
        }
        assert_eq!(task_totals(&profiled.batches).1, u64::MAX);
        assert_eq!(profiled.on_demand_reads(), u64::MAX);
    }

    /// A run of `batches` batches of 40 tasks, each task 50 µs of CPU and 3 reads.
    fn run(design: IoDesign, batches: usize) -> ProfiledRun {
        let batches = (0..batches as u64)
            .map(|b| BatchProfile {
                first_block: b,
                last_block: b,
                tasks: (0..40)
                    .map(|i| TaskProfile {
                        block: b,
                        index: i,
                        worker: 0,
                        start_ns: 0,
                        wall_ns: 0,
                        cpu_ns: 50_000,
                        reads: 3,
                        read_wait_ns: 0,
                        gas: 100_000,
                        raced: 0,
                        prefetch_hits: 0,
                    })
                    .collect(),
                prefetch: matches!(design, IoDesign::Batched | IoDesign::Hybrid).then_some(
                    PrefetchProfile {
                        keys: 200,
                        readers: 8,
                        wall_ns: 0,
                        cpu_ns: 200 * 5_000,
                        concurrent: design == IoDesign::Hybrid,
                    },
                ),
                exec_ns: 0,
                worker_run_delay_ns: None,
                process_cpu_ns: None,
                commit_ns: 1_000,
            })
            .collect();
        ProfiledRun {
            design,
            batch: 1,
            workers: 1,
            gas: 4_000_000 * 5,
            device_reads_per_key: 1.5,
            batches,
            read_cpu_ns: None,
            simulate_race: false,
            measured: Measured::default(),
        }
    }

    fn machine(cores: usize) -> Machine {
        Machine {
            cores: cores as f64,
            cpu_speed: 1.0,
            disk: disk(),
            read_cpu_ns: None,
            readers: None,
            worker_start: None,
        }
    }

    #[test]
    fn calibration_recovers_the_factor_a_run_was_made_with() {
        for design in [IoDesign::Parallel, IoDesign::Batched] {
            let mut r = run(design, 5);
            // A "measured" one-worker run made by the model itself at k = 0.7.
            r.measured = predict(&r, 1, &machine(2), 0.7);
            let c = calibrate(&r, &machine(2));
            assert_eq!(c.fit, Fit::Exact);
            assert!((c.k - 0.7).abs() < 1e-6, "{design}: {c:?}");
            assert!(c.residual.abs() < 1e-9);
            // Then a check at 4 workers predicts what the model says at 4 workers.
            let mut held_out = r.clone();
            held_out.workers = 4;
            held_out.measured = predict(&r, 4, &machine(2), 0.7);
            let check = check(&r, &held_out, &machine(2));
            assert!(check.throughput_error().abs() < 1e-6, "{check:?}");
            // More workers than cores still gain: the reads overlap (batched I/O's prefetch
            // phase does not change with the workers).
            let gain = r.measured.exec_with_io_s / check.predicted.exec_with_io_s;
            match design {
                IoDesign::Parallel => assert!(gain > 2.0, "{gain}"),
                _ => assert!(gain > 1.2, "{gain}"),
            }
        }
    }

    #[test]
    fn a_run_as_fast_as_instant_reads_calibrates_to_zero() {
        for design in [IoDesign::Parallel, IoDesign::Hybrid] {
            let mut r = run(design, 3);
            let m = machine(1);
            // Measured exactly as the simulation with instant reads: the scan's first point.
            r.measured = predict(&r, 1, &m, 0.0);
            let c = calibrate(&r, &m);
            assert_eq!(c.fit, Fit::Exact, "{design}: {c:?}");
            assert_eq!(c.k, 0.0, "{design}: {c:?}");
            assert_eq!(c.residual, 0.0, "{design}: {c:?}");
        }
    }

    #[test]
    fn readers_beside_execution_are_fitted_where_the_time_is_not_monotone() {
        // Hybrid: 8 readers share one core with the worker. Small k: readers busy on the CPU,
        // the worker slowed; larger k: readers wait on the disk, the worker runs, then its own
        // reads slow it. The fit still lands on a k whose simulation takes the measured time.
        let mut r = run(IoDesign::Hybrid, 3);
        let m = machine(1);
        r.measured = predict(&r, 1, &m, 0.5);
        let c = calibrate(&r, &m);
        assert_eq!(c.fit, Fit::Exact);
        // The simulation steps where events reorder: within 0.1%.
        assert!(c.residual.abs() < 1e-3, "{c:?}");
        // Beyond any k: the closest one, marked.
        r.measured.exec_with_io_s *= 1e6;
        assert_eq!(calibrate(&r, &m).fit, Fit::AtBound);
    }

    #[test]
    fn readers_beside_execution_that_must_wait_to_let_it_run_are_fitted() {
        // The verifying full BAL: tasks read nothing, 8 readers beside one worker on one core.
        // With instant reads the readers take 8/9 of the core and the run is slower than
        // measured; reads that wait on the disk leave the core to the worker.
        let mut r = run(IoDesign::FullVerify, 3);
        for t in r.batches.iter_mut().flat_map(|b| &mut b.tasks) {
            t.reads = 0;
        }
        for b in &mut r.batches {
            b.prefetch = Some(PrefetchProfile {
                keys: 200,
                readers: 8,
                wall_ns: 0,
                cpu_ns: 200 * 20_000,
                concurrent: true,
            });
        }
        let m = machine(1);
        let instant = predict(&r, 1, &m, 0.0).exec_with_io_s;
        r.measured = predict(&r, 1, &m, 2.0);
        assert!(
            r.measured.exec_with_io_s < instant,
            "{instant} {:?}",
            r.measured
        );
        let c = calibrate(&r, &m);
        assert_eq!(c.fit, Fit::Exact, "{c:?}");
        assert!(c.k > 0.0 && c.residual.abs() < 1e-3, "{c:?}");
        // Faster than even the worker alone: nothing brings it down, said so.
        r.measured.exec_with_io_s = 1e-6;
        assert_eq!(calibrate(&r, &m).fit, Fit::CpuExceeds);
    }

    #[test]
    fn a_cheaper_read_takes_its_cpu_out_of_each_task() {
        let mut parallel = run(IoDesign::Parallel, 2);
        let mut full = run(IoDesign::Full, 2);
        for b in &mut full.batches {
            for t in &mut b.tasks {
                // Full BAL reads nothing: 50 µs less 3 reads of 10 µs.
                t.cpu_ns = 20_000;
                t.reads = 0;
            }
        }
        assert_eq!(read_cpu_ns(&parallel, &full), Some(10_000.0));
        parallel.read_cpu_ns = Some(10_000.0);
        // A disk whose IOPS never holds the reads back.
        let here = Machine {
            disk: DiskModel::from_spec(1e12, 1.0).unwrap(),
            ..machine(2)
        };
        let there = Machine {
            read_cpu_ns: Some(4_000.0),
            ..here.clone()
        };
        // No reads' wait (k = 0): 80 tasks of 50 µs, or of 32 µs where a read costs 4 µs.
        let a = predict(&parallel, 1, &here, 0.0).exec_with_io_s;
        let b = predict(&parallel, 1, &there, 0.0).exec_with_io_s;
        assert!((a - 80.0 * 50e-6).abs() < 1e-9, "{a}");
        assert!((b - 80.0 * 32e-6).abs() < 1e-9, "{b}");
    }

    #[test]
    fn a_run_without_device_reads_is_its_cpu() {
        let mut r = run(IoDesign::Parallel, 2);
        r.device_reads_per_key = 0.0;
        r.measured.exec_with_io_s = 0.005;
        let c = calibrate(&r, &machine(2));
        assert_eq!((c.k, c.fit), (0.0, Fit::NoDeviceReads));
        // 80 tasks of 50 µs on one worker: 4 ms, 20% short of the 5 ms measured.
        assert!((c.residual + 0.2).abs() < 1e-9, "{c:?}");
        // CPU alone more than measured: k = 0, said so.
        r.device_reads_per_key = 1.0;
        r.measured.exec_with_io_s = 0.001;
        assert_eq!(calibrate(&r, &machine(2)).fit, Fit::CpuExceeds);
    }

    #[test]
    fn tasks_scaled_to_a_runs_cpu_take_that_cpu_and_no_other_time() {
        let mut r = run(IoDesign::Full, 2);
        r.device_reads_per_key = 0.0;
        // 80 tasks of 50 µs: 4 ms on one worker, 2 ms on two cores; at 1.25x the CPU, 5 and 2.5.
        let scaled = r.with_task_cpu_scaled(1.25);
        for (workers, s) in [(1, 0.004), (2, 0.002)] {
            let as_profiled = predict(&r, workers, &machine(2), 0.0);
            let at_more = predict(&scaled, workers, &machine(2), 0.0);
            assert!(
                (as_profiled.exec_with_io_s - s).abs() < 1e-9,
                "{as_profiled:?}"
            );
            assert!(
                (at_more.exec_with_io_s - 1.25 * s).abs() < 1e-9,
                "{at_more:?}"
            );
            assert!((at_more.task_cpu_s - 0.005).abs() < 1e-9, "{at_more:?}");
        }
        // Reads and the prefetch are left as profiled.
        assert_eq!(scaled.batches[0].tasks[0].reads, 3);
        assert_eq!(scaled.batches[0].prefetch, r.batches[0].prefetch);
    }

    #[test]
    fn hybrids_reads_grow_with_workers_only_where_the_race_is_simulated() {
        // Each task: 3 reads, of which 1 the prefetch lost, and 2 lookups it served.
        let mut r = run(IoDesign::Hybrid, 2);
        for t in r.batches.iter_mut().flat_map(|b| b.tasks.iter_mut()) {
            t.raced = 1;
            t.prefetch_hits = 2;
        }
        let m = machine(2);
        // Without the race, each task reads what its profile says, at any worker count.
        for workers in [1, 8] {
            let p = predict(&r, workers, &m, 1.0);
            assert_eq!(p.on_demand_reads, 2.0 * 40.0 * 3.0, "{workers}");
        }
        // With it, the 2 reads that are not the prefetch's stay (160 in all); of the 3 lookups
        // it was there to serve, more come before it at 8 workers than at 1.
        r.simulate_race = true;
        let one = predict(&r, 1, &m, 1.0).on_demand_reads;
        let eight = predict(&r, 8, &m, 1.0).on_demand_reads;
        assert!((160.0..400.0).contains(&one), "{one}");
        assert!(eight > one && eight <= 400.0, "{one} {eight}");
    }

    #[test]
    fn batched_io_prefetches_before_executing() {
        let r = run(IoDesign::Batched, 1);
        let m = machine(2);
        let with = predict(&r, 1, &m, 1.0);
        let mut no_prefetch = r.clone();
        no_prefetch.batches[0].prefetch = None;
        let without = predict(&no_prefetch, 1, &m, 1.0);
        // The prefetch adds its own phase: 200 keys on 8 readers; on 64, a shorter one.
        assert!(with.exec_with_io_s > without.exec_with_io_s);
        let more = Machine {
            readers: Some(64),
            ..machine(2)
        };
        let deeper = predict(&r, 1, &more, 1.0);
        assert!(deeper.exec_with_io_s < with.exec_with_io_s);
        assert!(deeper.exec_with_io_s > without.exec_with_io_s);
        assert!((with.total_s - with.exec_with_io_s - 1e-6).abs() < 1e-9);
    }

    /// A check of 1000 Mgas: measured at `measured_s`, predicted at `predicted_s`.
    fn check_of(measured_s: f64, predicted_s: f64) -> Check {
        let at = |s: f64| Measured {
            exec_with_io_s: s,
            total_s: s,
            ..Measured::default()
        };
        Check {
            design: IoDesign::Parallel,
            batch: 10,
            workers: 4,
            calibrated_on_workers: 1,
            cores: 2.0,
            k: 1.0,
            gas: 1_000_000_000,
            measured: at(measured_s),
            predicted: at(predicted_s),
            error_at_run_task_cpu: None,
            measured_repeats: None,
            calibration_repeats: None,
            input: None,
        }
    }

    #[test]
    fn a_checks_error_range_spans_its_runs_extremes() {
        // Measured 400 Mgas/s, predicted 500: +25%, a miss with no repeats to say otherwise.
        let mut c = check_of(2.5, 2.0);
        assert!((c.throughput_error() - 0.25).abs() < 1e-12);
        assert_eq!(c.error_range(), None);
        assert_eq!(c.verdict(), Verdict::Miss);

        // The checked run's three repeats: 360, 400 (its median) and 440 Mgas/s.
        c.measured_repeats = Repeats::new(3, 400.0, 360.0, 440.0);
        let (low, high) = c.error_range().unwrap();
        assert!((low - (500.0 / 440.0 - 1.0)).abs() < 1e-12, "{low}");
        assert!((high - (500.0 / 360.0 - 1.0)).abs() < 1e-12, "{high}");
        // +13.6% at its fastest run: inside the runs' noise.
        assert_eq!(c.verdict(), Verdict::InsideNoise);

        // A calibration whose median was 300 Mgas/s, its slowest 240: the prediction from the
        // slowest is 500 x 0.8 = 400 against 440 (-9.1%); from its fastest (330), 550 / 360.
        c.calibration_repeats = Repeats::new(3, 300.0, 240.0, 330.0);
        let (low, high) = c.error_range().unwrap();
        assert!((low - (400.0 / 440.0 - 1.0)).abs() < 1e-12, "{low}");
        assert!((high - (550.0 / 360.0 - 1.0)).abs() < 1e-12, "{high}");
        assert_eq!(c.verdict(), Verdict::InsideNoise);

        // Tight repeats leave a +25% error a miss: 390-410 measured, 295-305 calibration.
        c.measured_repeats = Repeats::new(3, 400.0, 390.0, 410.0);
        c.calibration_repeats = Repeats::new(3, 300.0, 295.0, 305.0);
        let (low, _) = c.error_range().unwrap();
        assert!((low - (500.0 * 295.0 / 300.0 / 410.0 - 1.0)).abs() < 1e-12);
        assert!(low > TARGET_ERROR);
        assert_eq!(c.verdict(), Verdict::Miss);

        // Within 15% at the medians is within, whatever the repeats.
        assert_eq!(check_of(2.5, 2.3).verdict(), Verdict::Within);
    }

    #[test]
    fn repeats_are_only_what_a_run_can_be() {
        assert_eq!(Repeats::new(1, 400.0, 400.0, 400.0), None);
        assert_eq!(Repeats::new(3, 400.0, 410.0, 440.0), None);
        assert_eq!(Repeats::new(3, 450.0, 360.0, 440.0), None);
        assert_eq!(Repeats::new(3, 400.0, 0.0, 440.0), None);
        assert!(Repeats::new(2, 400.0, 360.0, 400.0).is_some());
    }
}
