//! The schedule of one batch, simulated: workers taking tasks in the engine's order, prefetch
//! readers, on a number of cores shared fairly, over a disk whose latency grows with the reads in
//! flight.
//!
//! A task is its measured CPU time cut into equal pieces around its on-demand reads (where in the
//! task a read falls is not recorded; spreading them evenly is the assumption). A read is one
//! wait of `k * device_reads_per_key * latency(reads in flight)`, fixed when it is issued. Runnable
//! threads share the cores as processor sharing: with `n` runnable on `c` cores each runs at
//! `min(1, c / n)` of a core; switching costs nothing. Each of these is a term the checks against
//! measured runs can find off.

use crate::{DiskModel, ReadCpuCurve};
use bal_replay_engine::TaskProfile;

/// What the disk costs a key read: `k * device_reads_per_key * latency(depth)`.
#[derive(Debug, Clone, Copy)]
pub struct ReadCost<'a> {
    /// The disk.
    pub disk: &'a DiskModel,
    /// Device reads per key read (the run's own counters).
    pub device_reads_per_key: f64,
    /// The calibrated factor between the disk's latency and a key read's wait.
    pub k: f64,
    /// The CPU a worker's read costs at other depths than the profile's, if known.
    pub cpu: Option<ReadCpu<'a>>,
}

/// A worker's on-demand read costs `profiled_ns` of CPU in the profile, where its reads were
/// issued at a mean relative CPU of `reference` (1.0: one read in flight each time), and
/// `profiled_ns * curve.relative(depth) / reference` when issued with `depth` reads in flight:
/// the difference comes off the CPU the task runs after the read.
#[derive(Debug, Clone, Copy)]
pub struct ReadCpu<'a> {
    /// CPU per read relative to one in flight.
    pub curve: &'a ReadCpuCurve,
    /// CPU per read in the profile, ns.
    pub profiled_ns: f64,
    /// The mean of `curve.relative(depth)` over the profile's own reads, as simulated.
    pub reference: f64,
}

impl ReadCost<'_> {
    fn wait_ns(&self, depth: usize) -> f64 {
        self.k * self.device_reads_per_key * self.disk.latency_ns(depth as f64)
    }

    /// CPU a worker's read issued at `depth` costs less than in the profile, ns.
    fn cpu_saved_ns(&self, depth: usize) -> f64 {
        self.cpu.map_or(0.0, |c| {
            c.profiled_ns * (1.0 - c.curve.relative(depth as f64) / c.reference.max(1e-9))
        })
    }
}

/// A machine to simulate on.
#[derive(Debug, Clone, Copy)]
pub struct Cores {
    /// CPU cores (fractional: what other work leaves of a shared machine).
    pub cores: f64,
    /// Speed of one core relative to the one the profile was taken on (2.0: twice as fast).
    pub cpu_speed: f64,
}

/// Prefetch readers of one batch: `readers` threads splitting `keys` evenly, each key costing
/// `cpu_per_key_ns` of CPU and one read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Readers {
    /// Reader threads.
    pub readers: usize,
    /// Keys read.
    pub keys: u64,
    /// CPU per key, ns.
    pub cpu_per_key_ns: f64,
}

/// When a simulated phase ended.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseTimes {
    /// The last task's end, ns (0 without tasks).
    pub tasks_end_ns: f64,
    /// The last reader's end, ns (0 without readers).
    pub readers_end_ns: f64,
    /// The longest task's wall time, ns.
    pub longest_task_ns: f64,
    /// Workers' reads issued, and the sum of the read-CPU curve's relative value at the depth
    /// each was issued at (0 without a curve).
    pub worker_reads: u64,
    /// See `worker_reads`.
    pub worker_read_cpu_relative: f64,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Idle,
    Cpu {
        remaining: f64,
    },
    /// Waiting on a read until `until`; the CPU piece after it is `saved` shorter.
    Io {
        until: f64,
        saved: f64,
    },
}

#[derive(Debug, Clone, Copy)]
struct Job {
    chunk: f64,
    ios_left: u64,
    start: f64,
}

#[derive(Debug, Clone, Copy)]
struct Actor {
    worker: bool,
    state: State,
    job: Job,
}

/// Relative tolerance for "this segment ends now".
const EPS: f64 = 1e-9;

/// Simulates `workers` workers running `tasks` in order beside `readers`, from time 0.
pub fn simulate_phase(
    tasks: &[TaskProfile],
    workers: usize,
    readers: Readers,
    machine: Cores,
    read: ReadCost<'_>,
) -> PhaseTimes {
    let speed = machine.cpu_speed.max(1e-9);
    let task_job = |t: &TaskProfile, now: f64| Job {
        chunk: t.cpu_ns as f64 / speed / (t.reads + 1) as f64,
        ios_left: t.reads,
        start: now,
    };
    let mut actors: Vec<Actor> = Vec::with_capacity(workers + readers.readers);
    let mut next_task = 0;
    for _ in 0..workers {
        let state_job = tasks.get(next_task).map(|t| {
            next_task += 1;
            task_job(t, 0.0)
        });
        actors.push(match state_job {
            Some(job) => Actor {
                worker: true,
                state: State::Cpu {
                    remaining: job.chunk,
                },
                job,
            },
            None => Actor {
                worker: true,
                state: State::Idle,
                job: Job {
                    chunk: 0.0,
                    ios_left: 0,
                    start: 0.0,
                },
            },
        });
    }
    if readers.readers > 0 && readers.keys > 0 {
        let n = readers.readers as u64;
        for r in 0..n {
            // Keys split as evenly as the engine's chunks.
            let keys = readers.keys / n + u64::from(r < readers.keys % n);
            if keys == 0 {
                continue;
            }
            let job = Job {
                chunk: keys as f64 * readers.cpu_per_key_ns / speed / (keys + 1) as f64,
                ios_left: keys,
                start: 0.0,
            };
            actors.push(Actor {
                worker: false,
                state: State::Cpu {
                    remaining: job.chunk,
                },
                job,
            });
        }
    }
    let cores = machine.cores.max(0.05);
    let mut out = PhaseTimes::default();
    let mut now = 0.0f64;
    let mut in_flight = 0usize;
    loop {
        // Settle every actor at a boundary now (a zero-length piece ends at once).
        loop {
            let mut changed = false;
            for a in actors.iter_mut() {
                match a.state {
                    State::Cpu { remaining } if remaining <= EPS * now.max(1.0) => {
                        changed = true;
                        if a.job.ios_left > 0 {
                            a.job.ios_left -= 1;
                            in_flight += 1;
                            // Prefetch readers' CPU per key was measured at their own depth.
                            let saved = if a.worker {
                                if let Some(c) = read.cpu {
                                    out.worker_reads += 1;
                                    out.worker_read_cpu_relative +=
                                        c.curve.relative(in_flight as f64);
                                }
                                read.cpu_saved_ns(in_flight) / speed
                            } else {
                                0.0
                            };
                            a.state = State::Io {
                                until: now + read.wait_ns(in_flight),
                                saved,
                            };
                        } else if a.worker {
                            out.longest_task_ns = out.longest_task_ns.max(now - a.job.start);
                            out.tasks_end_ns = out.tasks_end_ns.max(now);
                            match tasks.get(next_task) {
                                Some(t) => {
                                    next_task += 1;
                                    a.job = task_job(t, now);
                                    a.state = State::Cpu {
                                        remaining: a.job.chunk,
                                    };
                                }
                                None => a.state = State::Idle,
                            }
                        } else {
                            out.readers_end_ns = out.readers_end_ns.max(now);
                            a.state = State::Idle;
                        }
                    }
                    State::Io { until, saved } if until <= now + EPS * now.max(1.0) => {
                        changed = true;
                        in_flight -= 1;
                        a.state = State::Cpu {
                            remaining: (a.job.chunk - saved).max(0.0),
                        };
                    }
                    _ => {}
                }
            }
            if !changed {
                break;
            }
        }
        let running = actors
            .iter()
            .filter(|a| matches!(a.state, State::Cpu { .. }))
            .count();
        let rate = if running as f64 > cores {
            cores / running as f64
        } else {
            1.0
        };
        let mut dt = f64::INFINITY;
        for a in &actors {
            match a.state {
                State::Cpu { remaining } => dt = dt.min(remaining / rate),
                State::Io { until, .. } => dt = dt.min(until - now),
                State::Idle => {}
            }
        }
        if !dt.is_finite() {
            break;
        }
        let dt = dt.max(0.0);
        now += dt;
        for a in actors.iter_mut() {
            if let State::Cpu { remaining } = &mut a.state {
                *remaining -= dt * rate;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(cpu_us: u64, reads: u64) -> TaskProfile {
        TaskProfile {
            block: 1,
            index: 1,
            worker: 0,
            start_ns: 0,
            wall_ns: 0,
            cpu_ns: cpu_us * 1000,
            reads,
            read_wait_ns: 0,
            gas: 21_000,
        }
    }

    fn flat_disk(latency_us: f64) -> DiskModel {
        DiskModel::from_spec(1e12, latency_us).unwrap()
    }

    #[test]
    fn cpu_only_tasks_share_the_cores() {
        let disk = flat_disk(100.0);
        let read = ReadCost {
            disk: &disk,
            device_reads_per_key: 1.0,
            k: 1.0,
            cpu: None,
        };
        let tasks: Vec<_> = (0..8).map(|_| task(100, 0)).collect();
        let on = |workers, cores| {
            simulate_phase(
                &tasks,
                workers,
                Readers::default(),
                Cores {
                    cores: cores as f64,
                    cpu_speed: 1.0,
                },
                read,
            )
        };
        // 800 µs of CPU: one worker 800 µs; 2 on 2 cores 400; 8 on 2 cores still 400, each
        // task then taking 400 µs of wall time (sharing a core with three others).
        assert!((on(1, 2).tasks_end_ns - 800e3).abs() < 1.0);
        assert!((on(2, 2).tasks_end_ns - 400e3).abs() < 1.0);
        let eight = on(8, 2);
        assert!((eight.tasks_end_ns - 400e3).abs() < 1.0);
        assert!((eight.longest_task_ns - 400e3).abs() < 1.0);
    }

    #[test]
    fn reads_overlap_across_workers_but_not_within_one() {
        let disk = flat_disk(100.0);
        let read = ReadCost {
            disk: &disk,
            device_reads_per_key: 2.0,
            k: 0.5,
            cpu: None,
        };
        // Each task: 10 µs of CPU and 4 reads of 0.5 * 2 * 100 µs.
        let tasks: Vec<_> = (0..4).map(|_| task(10, 4)).collect();
        let machine = Cores {
            cores: 2.0,
            cpu_speed: 1.0,
        };
        let one = simulate_phase(&tasks, 1, Readers::default(), machine, read);
        assert!((one.tasks_end_ns - 4.0 * 410e3).abs() < 1.0, "{one:?}");
        // Four workers wait for their reads at the same time: the CPU is the only queue.
        let four = simulate_phase(&tasks, 4, Readers::default(), machine, read);
        assert!(
            four.tasks_end_ns < 430e3 && four.tasks_end_ns > 410e3,
            "{four:?}"
        );
        // A core twice as fast halves only the CPU part.
        let fast = simulate_phase(
            &tasks,
            1,
            Readers::default(),
            Cores {
                cores: 2.0,
                cpu_speed: 2.0,
            },
            read,
        );
        assert!((fast.tasks_end_ns - 4.0 * 405e3).abs() < 1.0, "{fast:?}");
    }

    #[test]
    fn reads_in_flight_together_cost_the_cpu_the_curve_says() {
        use crate::read_cpu::ReadCpuPoint;
        let disk = flat_disk(100.0);
        // A read costs 8 µs of CPU alone and half that with 2 or more in flight.
        let curve = ReadCpuCurve::new(
            vec![
                ReadCpuPoint {
                    depth: 1.0,
                    cpu_ns: 8e3,
                },
                ReadCpuPoint {
                    depth: 2.0,
                    cpu_ns: 4e3,
                },
            ],
            "test",
        )
        .unwrap();
        let read = ReadCost {
            disk: &disk,
            device_reads_per_key: 1.0,
            k: 1.0,
            cpu: Some(ReadCpu {
                curve: &curve,
                profiled_ns: 8e3,
                reference: 1.0,
            }),
        };
        let machine = Cores {
            cores: 2.0,
            cpu_speed: 1.0,
        };
        // Each task: 2 reads, 12 µs of CPU in the profile (3 pieces of 4 µs).
        let tasks: Vec<_> = (0..2).map(|_| task(12, 2)).collect();
        // One worker: one read in flight at a time, the profile's CPU: 2 x (12 + 200) µs.
        let one = simulate_phase(&tasks, 1, Readers::default(), machine, read);
        assert!((one.tasks_end_ns - 424e3).abs() < 1.0, "{one:?}");
        // Two workers: of each pair of reads issued at the same moment, the second is issued
        // with the first in flight (depth 2) and costs 4 µs less, so its next piece takes 0 µs
        // instead of 4. Each worker gets one such read: 4 + 100 + 4 + 100 + 0 = 208 µs.
        let two = simulate_phase(&tasks, 2, Readers::default(), machine, read);
        assert!((two.tasks_end_ns - 208e3).abs() < 1.0, "{two:?}");
        // Without the curve, the same two workers keep the profile's CPU: 212 µs.
        let flat = simulate_phase(
            &tasks,
            2,
            Readers::default(),
            machine,
            ReadCost { cpu: None, ..read },
        );
        assert!((flat.tasks_end_ns - 212e3).abs() < 1.0, "{flat:?}");
    }

    #[test]
    fn a_saturated_disk_bounds_the_readers() {
        // 10k IOPS at 100 µs: a knee at depth 1; 8 readers of 1000 keys each, no CPU.
        let disk = DiskModel::from_spec(10_000.0, 100.0).unwrap();
        let read = ReadCost {
            disk: &disk,
            device_reads_per_key: 1.0,
            k: 1.0,
            cpu: None,
        };
        let readers = Readers {
            readers: 8,
            keys: 8000,
            cpu_per_key_ns: 0.0,
        };
        let machine = Cores {
            cores: 2.0,
            cpu_speed: 1.0,
        };
        let out = simulate_phase(&[], 1, readers, machine, read);
        // 8000 reads at 10k IOPS: 0.8 s, whatever the depth.
        let secs = out.readers_end_ns / 1e9;
        assert!((secs - 0.8).abs() < 0.01, "{secs}");
        assert_eq!(out.tasks_end_ns, 0.0);
    }
}
