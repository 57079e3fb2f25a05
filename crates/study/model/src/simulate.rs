//! The schedule of one batch, simulated: workers taking tasks in the engine's order, prefetch
//! readers, on a number of cores shared fairly, over a disk whose latency grows with the reads in
//! flight.
//!
//! A task is its measured CPU time cut into equal pieces around its on-demand reads (where in the
//! task a read falls is not recorded; spreading them evenly is the assumption). A read is one
//! wait of `k * device_reads_per_key * latency(reads in flight)`, fixed when it is issued, and no
//! shorter than the disk's IOPS allows behind the reads queued before it. Runnable
//! threads share the cores as processor sharing: with `n` runnable on `c` cores each runs at
//! `min(1, c / n)` of a core; switching costs nothing. Each of these is a term the checks against
//! measured runs can find off.

use crate::DiskModel;
use bal_replay_engine::{TaskProfile, WorkerStartCost};

/// What the disk costs a key read: `k * device_reads_per_key * latency(depth)`.
#[derive(Debug, Clone, Copy)]
pub struct ReadCost<'a> {
    /// The disk.
    pub disk: &'a DiskModel,
    /// Device reads per key read (the run's own counters).
    pub device_reads_per_key: f64,
    /// The calibrated factor between the disk's latency and a key read's wait.
    pub k: f64,
}

impl ReadCost<'_> {
    /// A read's wait issued at `depth`, ns.
    fn wait_ns(&self, depth: usize) -> f64 {
        self.k * self.device_reads_per_key * self.disk.latency_ns(depth as f64)
    }

    /// When a key read issued at `now` with `depth` key reads in flight is done: after its wait,
    /// and no sooner than the disk, at its best IOPS, has served its device reads behind those
    /// already queued (`disk_free`, moved on). The calibrated `k` scales a read's wait, not the
    /// disk's throughput: without this, many reads each waiting `k < 1` times the disk's latency
    /// at their depth would overlap into more reads a second than the disk gives at any depth.
    fn done_at(&self, now: f64, depth: usize, disk_free: &mut f64) -> f64 {
        *disk_free = disk_free.max(now) + self.device_reads_per_key * 1e9 / self.disk.best_iops();
        (now + self.wait_ns(depth)).max(*disk_free)
    }
}

/// A machine to simulate on.
#[derive(Debug, Clone, Copy)]
pub struct Cores {
    /// CPU cores (fractional: what other work leaves of a shared machine).
    pub cores: f64,
    /// Speed of one core relative to the one the profile was taken on (2.0: twice as fast).
    pub cpu_speed: f64,
    /// What starting a worker costs, where the simulation is to start them as the engine does:
    /// one starting thread, sharing the cores with the workers it has started, starts workers
    /// 1 to N - 1 one after the other (each then takes tasks), each worker but the first spends
    /// `thread_ns` when it ends, and the starting thread joins them. Worker 0's start is in the
    /// profile's serial part. `None`: every worker starts at once, for nothing.
    pub worker_start: Option<WorkerStartCost>,
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
    /// How the readers race the tasks for the keys both need (hybrid's prefetch beside
    /// execution), where the profile tells it: see [`Race`]. `None`: the tasks' reads are the
    /// profile's, whatever the readers do.
    pub race: Option<Race>,
}

/// The race between a prefetch beside execution and the tasks, for the keys the prefetch was
/// there to serve.
///
/// A task's profile says which of its lookups the prefetch was there to serve (`raced`, the
/// on-demand reads it lost, plus `prefetch_hits`, the lookups it served) and which it was not
/// (`reads - raced`: read-only keys and code, read on demand whatever the prefetch does). All are
/// spread evenly over the task's CPU. A lookup the prefetch serves is an on-demand read unless the
/// prefetch has loaded its key when the lookup comes. The prefetch reads in key order: the key is
/// in one reader's share (by a hash of the task and the lookup), which reaches the cache only
/// when that reader has read all of it.
///
/// A lookup the prefetch lost is the task's read, and the prefetch then finds that key cached and
/// skips it, as the engine's readers skip what is cached when its turn comes: one read and one
/// key's CPU fewer for the reader whose key it was. So the more workers win, the sooner the
/// prefetch ends.
///
/// The profile's CPU includes `read_cpu_ns` per read it made; a read the simulation adds or
/// drops adds or drops that much.
#[derive(Debug, Clone, Copy)]
pub struct Race {
    /// CPU of one on-demand read, ns (0 where unknown).
    pub read_cpu_ns: f64,
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
    /// Workers' reads issued (on-demand reads).
    pub worker_reads: u64,
    /// Time the workers were runnable but off a core, summed over them, ns: with `n` runnable
    /// on `c < n` cores, `n - c` per unit of time (the kernel's `run_delay`, as the engine's
    /// profiles record it; zero wherever the cores are enough).
    pub worker_run_delay_ns: f64,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Idle,
    /// A worker the starting thread has not started yet.
    Unstarted,
    Cpu {
        remaining: f64,
    },
    /// Waiting on a read until `until`.
    Io {
        until: f64,
    },
}

#[derive(Debug, Clone, Copy, Default)]
struct Job {
    chunk: f64,
    ios_left: u64,
    start: f64,
    /// Under a [`Race`]: the task's lookups the prefetch serves, where each falls.
    race: Option<RacedTask>,
    /// The worker's thread ending (no task left), not a task.
    exit: bool,
}

#[derive(Debug, Clone, Copy)]
struct RacedTask {
    /// The task's position in the batch.
    task: usize,
    /// Lookups left, of all (`ios_left` counts them too), and of those the prefetch serves.
    points: u64,
    served: u64,
    /// Lookups done so far, of all and of the served ones.
    done: u64,
    served_done: u64,
    /// CPU added after a read, ns.
    read_cpu: f64,
}

/// Which of `n` readers holds lookup `m` of `task`: a fixed hash.
fn reader_of(task: usize, m: u64, n: usize) -> usize {
    let mut x = (task as u64) << 32 ^ m ^ 0x9e37_79b9_7f4a_7c15;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    (x % n.max(1) as u64) as usize
}

/// What a simulated thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Worker,
    Reader,
    /// The thread starting the workers ([`Cores::worker_start`]).
    Starter,
}

#[derive(Debug, Clone, Copy)]
struct Actor {
    kind: Kind,
    state: State,
    job: Job,
}

impl Actor {
    fn worker(&self) -> bool {
        self.kind == Kind::Worker
    }
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
    let mut phase = Phase::start(tasks, workers, readers, machine, read);
    loop {
        phase.settle();
        if !phase.run_to_next_boundary() {
            break;
        }
    }
    phase.end()
}

/// Lookups of `t` the prefetch was there to serve: those it lost, and those it served.
fn served_lookups(t: &TaskProfile) -> u64 {
    t.raced.min(t.reads).saturating_add(t.prefetch_hits)
}

/// One phase under simulation: its threads, the time, and what the prefetch has read so far.
struct Phase<'a> {
    tasks: &'a [TaskProfile],
    workers: usize,
    read: ReadCost<'a>,
    speed: f64,
    cores: f64,
    race: Option<Race>,
    /// Workers 1.. wait for the starting thread where starting them costs.
    start: Option<WorkerStartCost>,
    /// The workers, then the readers, then the starting thread.
    actors: Vec<Actor>,
    reader_count: usize,
    /// The next task a worker takes.
    next_task: usize,
    /// Workers started so far (worker 0 at once), and when the last thread (started worker
    /// ending, or the starter) was done.
    started: usize,
    threads_end: f64,
    /// Under a race: which readers have read all of their keys (actors after the workers, in
    /// order).
    reader_done: Vec<bool>,
    in_flight: usize,
    /// When the disk has served every device read issued so far ([`ReadCost::done_at`]).
    disk_free: f64,
    now: f64,
    out: PhaseTimes,
    /// Within one settling pass: workers the starting thread has just started, and keys tasks
    /// have just read before the prefetch did (the reader whose key it was).
    to_start: usize,
    skips: Vec<usize>,
}

impl<'a> Phase<'a> {
    /// The phase at time 0: worker 0 (every worker, where starting them costs nothing) on its
    /// first task, the readers on their first key, the starting thread on its first worker.
    fn start(
        tasks: &'a [TaskProfile],
        workers: usize,
        readers: Readers,
        machine: Cores,
        read: ReadCost<'a>,
    ) -> Self {
        let race = readers
            .race
            .filter(|_| readers.readers > 0 && readers.keys > 0);
        let mut phase = Self {
            tasks,
            workers,
            read,
            speed: machine.cpu_speed.max(1e-9),
            cores: machine.cores.max(0.05),
            race,
            start: machine.worker_start.filter(|_| workers > 1),
            actors: Vec::with_capacity(workers.saturating_add(readers.readers).min(1 << 16)),
            reader_count: 0,
            next_task: 0,
            started: 1,
            threads_end: 0.0,
            reader_done: Vec::new(),
            in_flight: 0,
            disk_free: 0.0,
            now: 0.0,
            out: PhaseTimes::default(),
            to_start: 0,
            skips: Vec::new(),
        };
        phase.start_workers(workers);
        phase.start_readers(readers);
        phase.start_starter();
        phase
    }

    /// The workers, each on its first task, or waiting for the starting thread.
    fn start_workers(&mut self, workers: usize) {
        for w in 0..workers {
            let (job, state) = if w > 0 && self.start.is_some() {
                (Job::default(), State::Unstarted)
            } else {
                self.take_next(w)
            };
            self.actors.push(Actor {
                kind: Kind::Worker,
                state,
                job,
            });
        }
    }

    /// The prefetch readers, the keys split among them as evenly as the engine's chunks.
    fn start_readers(&mut self, readers: Readers) {
        if readers.readers > 0 && readers.keys > 0 {
            let n = readers.readers as u64;
            for r in 0..n {
                let keys = readers.keys / n + u64::from(r < readers.keys % n);
                if keys == 0 {
                    continue;
                }
                let job = Job {
                    chunk: keys as f64 * readers.cpu_per_key_ns / self.speed / (keys as f64 + 1.0),
                    ios_left: keys,
                    start: 0.0,
                    race: None,
                    exit: false,
                };
                self.actors.push(Actor {
                    kind: Kind::Reader,
                    state: State::Cpu {
                        remaining: job.chunk,
                    },
                    job,
                });
            }
        }
        self.reader_count = self
            .actors
            .iter()
            .filter(|a| a.kind == Kind::Reader)
            .count();
        self.reader_done = vec![false; self.reader_count];
    }

    /// The starting thread, after the readers (a reader's index less `workers` is its number).
    fn start_starter(&mut self) {
        if let Some(cost) = self.start {
            self.actors.push(Actor {
                kind: Kind::Starter,
                state: State::Cpu {
                    remaining: cost.spawn_ns / self.speed,
                },
                job: Job::default(),
            });
        }
    }

    /// Task `i`'s job, from now: its CPU cut into equal pieces around its lookups.
    fn task_job(&self, i: usize, t: &TaskProfile) -> Job {
        let speed = self.speed;
        match self.race {
            Some(race) => {
                let (served, unserved) = (served_lookups(t), t.reads - t.raced.min(t.reads));
                let points = served.saturating_add(unserved);
                let read_cpu = race.read_cpu_ns / speed;
                let base = (t.cpu_ns as f64 / speed - t.reads as f64 * read_cpu).max(0.0);
                Job {
                    chunk: base / (points as f64 + 1.0),
                    ios_left: points,
                    start: self.now,
                    race: Some(RacedTask {
                        task: i,
                        points,
                        served,
                        done: 0,
                        served_done: 0,
                        read_cpu,
                    }),
                    exit: false,
                }
            }
            None => Job {
                chunk: t.cpu_ns as f64 / speed / (t.reads as f64 + 1.0),
                ios_left: t.reads,
                start: self.now,
                race: None,
                exit: false,
            },
        }
    }

    /// Worker `w` taking the next task now, or, with none left, ending its thread.
    fn take_next(&mut self, w: usize) -> (Job, State) {
        match self.tasks.get(self.next_task) {
            Some(t) => {
                self.next_task += 1;
                let job = self.task_job(self.next_task - 1, t);
                let state = State::Cpu {
                    remaining: job.chunk,
                };
                (job, state)
            }
            None => thread_end(w, self.start, self.speed),
        }
    }

    /// Settles every actor at a boundary now (a zero-length piece ends at once).
    fn settle(&mut self) {
        loop {
            self.to_start = 0;
            self.skips.clear();
            let mut changed = false;
            for index in 0..self.actors.len() {
                changed |= self.settle_actor(index);
            }
            self.skip_keys_tasks_read();
            self.start_started_workers();
            if !changed {
                break;
            }
        }
    }

    /// Moves actor `index` past a boundary it is at now; false where it is at none.
    fn settle_actor(&mut self, index: usize) -> bool {
        let a = self.actors[index];
        let tolerance = EPS * self.now.max(1.0);
        match a.state {
            State::Cpu { remaining } if a.kind == Kind::Starter && remaining <= tolerance => {
                self.worker_started(index)
            }
            State::Cpu { remaining } if a.job.exit && remaining <= tolerance => {
                self.threads_end = self.threads_end.max(self.now);
                self.actors[index].state = State::Idle;
            }
            State::Cpu { remaining } if remaining <= tolerance => self.piece_ended(index),
            State::Io { until } if until <= self.now + tolerance => self.read_done(index),
            _ => return false,
        }
        true
    }

    /// The starting thread has started a worker: it starts the next, or, with all started,
    /// ends.
    fn worker_started(&mut self, index: usize) {
        self.to_start += 1;
        self.actors[index].state = match self.start {
            Some(cost) if self.started + self.to_start < self.workers => State::Cpu {
                remaining: cost.spawn_ns / self.speed,
            },
            _ => {
                self.threads_end = self.threads_end.max(self.now);
                State::Idle
            }
        };
    }

    /// Actor `index`'s piece of CPU has ended: it looks up a key (served by the prefetch, or
    /// read), or its task or its keys are done.
    fn piece_ended(&mut self, index: usize) {
        if self.actors[index].job.ios_left > 0 && self.lookup_was_prefetched(index) {
            // No read: the next piece at once.
            let a = &mut self.actors[index];
            a.job.ios_left -= 1;
            a.state = State::Cpu {
                remaining: a.job.chunk,
            };
            return;
        }
        let a = &mut self.actors[index];
        if a.job.ios_left > 0 {
            a.job.ios_left -= 1;
            self.in_flight += 1;
            if a.worker() {
                self.out.worker_reads += 1;
            }
            a.state = State::Io {
                until: self
                    .read
                    .done_at(self.now, self.in_flight, &mut self.disk_free),
            };
        } else if a.worker() {
            self.out.longest_task_ns = self.out.longest_task_ns.max(self.now - a.job.start);
            self.out.tasks_end_ns = self.out.tasks_end_ns.max(self.now);
            let (job, state) = self.take_next(index);
            (self.actors[index].job, self.actors[index].state) = (job, state);
        } else {
            self.out.readers_end_ns = self.out.readers_end_ns.max(self.now);
            if let Some(done) = self.reader_done.get_mut(index - self.workers) {
                *done = true;
            }
            a.state = State::Idle;
        }
    }

    /// Under a race, whether actor `index`'s next lookup is one the prefetch has already
    /// loaded. A served lookup it has not loaded is lost: the task reads the key, and the
    /// prefetch then finds it cached and skips it (the engine's readers read only keys not yet
    /// cached).
    fn lookup_was_prefetched(&mut self, index: usize) -> bool {
        let Some(r) = self.actors[index].job.race.as_mut() else {
            return false;
        };
        // Served lookups spread evenly among the task's lookups (in u128: the products of two
        // counts a profile holds as u64).
        let share = |done: u64| u128::from(done) * u128::from(r.served) / u128::from(r.points);
        let is_served = share(r.done + 1) > share(r.done);
        r.done += 1;
        let served_m = is_served.then(|| {
            r.served_done += 1;
            r.served_done - 1
        });
        let task = r.task;
        let loaded =
            served_m.is_some_and(|m| self.reader_done[reader_of(task, m, self.reader_count)]);
        if let Some(m) = served_m.filter(|_| !loaded) {
            self.skips.push(reader_of(task, m, self.reader_count));
        }
        loaded
    }

    /// Actor `index`'s read has completed: its next piece of CPU (with the read's, under a
    /// race).
    fn read_done(&mut self, index: usize) {
        self.in_flight -= 1;
        let a = &mut self.actors[index];
        let read_cpu = a.job.race.map_or(0.0, |r| r.read_cpu);
        a.state = State::Cpu {
            remaining: a.job.chunk + read_cpu,
        };
    }

    /// Each key a task read before the prefetch did: one read fewer for the reader whose key it
    /// was.
    fn skip_keys_tasks_read(&mut self) {
        for r in std::mem::take(&mut self.skips) {
            if let Some(a) = self.actors.get_mut(self.workers + r)
                && a.job.ios_left > 0
            {
                a.job.ios_left -= 1;
            }
        }
    }

    /// Each worker the starting thread has just started takes the next task, or ends at once
    /// without one.
    fn start_started_workers(&mut self) {
        for _ in 0..self.to_start {
            if self.started >= self.actors.len() {
                break;
            }
            let (job, state) = self.take_next(self.started);
            let a = &mut self.actors[self.started];
            (a.job, a.state) = (job, state);
            self.started += 1;
        }
    }

    /// Runs every runnable thread, at its equal share of the cores, to the next boundary;
    /// false where none is left (nothing runs or waits).
    fn run_to_next_boundary(&mut self) -> bool {
        let running = self
            .actors
            .iter()
            .filter(|a| matches!(a.state, State::Cpu { .. }))
            .count();
        let rate = if running as f64 > self.cores {
            self.cores / running as f64
        } else {
            1.0
        };
        let mut dt = f64::INFINITY;
        for a in &self.actors {
            match a.state {
                State::Cpu { remaining } => dt = dt.min(remaining / rate),
                State::Io { until } => dt = dt.min(until - self.now),
                _ => {}
            }
        }
        if !dt.is_finite() {
            return false;
        }
        let dt = dt.max(0.0);
        self.now += dt;
        for a in self.actors.iter_mut() {
            if let State::Cpu { remaining } = &mut a.state {
                *remaining -= dt * rate;
                if a.kind == Kind::Worker {
                    self.out.worker_run_delay_ns += dt * (1.0 - rate);
                }
            }
        }
        true
    }

    /// When the phase ended: the workers' phase ends when the starting thread has joined every
    /// worker it started.
    fn end(mut self) -> PhaseTimes {
        if let Some(cost) = self.start {
            self.out.tasks_end_ns = self.out.tasks_end_ns.max(self.threads_end)
                + (self.workers - 1) as f64 * cost.join_ns / self.speed;
        }
        self.out
    }
}

/// A worker with no task left: worker 0 ends at once (its thread's cost is in the profile's
/// serial part), a started one spends what its thread's end costs.
fn thread_end(worker: usize, start: Option<WorkerStartCost>, speed: f64) -> (Job, State) {
    match start {
        Some(cost) if worker > 0 => (
            Job {
                exit: true,
                ..Job::default()
            },
            State::Cpu {
                remaining: cost.thread_ns / speed,
            },
        ),
        _ => (Job::default(), State::Idle),
    }
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
            raced: 0,
            prefetch_hits: 0,
        }
    }

    /// A key read of one device read, waiting the disk's latency, at the profile's CPU.
    fn unit_read(disk: &DiskModel) -> ReadCost<'_> {
        ReadCost {
            disk,
            device_reads_per_key: 1.0,
            k: 1.0,
        }
    }

    /// `n` cores of the profile's speed, shared fairly.
    fn cores(n: f64) -> Cores {
        Cores {
            cores: n,
            cpu_speed: 1.0,
            worker_start: None,
        }
    }

    fn flat_disk(latency_us: f64) -> DiskModel {
        DiskModel::from_spec(1e12, latency_us).unwrap()
    }

    #[test]
    fn cpu_only_tasks_share_the_cores() {
        let disk = flat_disk(100.0);
        let read = unit_read(&disk);
        let tasks: Vec<_> = (0..8).map(|_| task(100, 0)).collect();
        let on = |workers, n: usize| {
            simulate_phase(&tasks, workers, Readers::default(), cores(n as f64), read)
        };
        // 800 µs of CPU: one worker 800 µs; 2 on 2 cores 400; 8 on 2 cores still 400, each
        // task then taking 400 µs of wall time (sharing a core with three others).
        assert!((on(1, 2).tasks_end_ns - 800e3).abs() < 1.0);
        assert!((on(2, 2).tasks_end_ns - 400e3).abs() < 1.0);
        let eight = on(8, 2);
        assert!((eight.tasks_end_ns - 400e3).abs() < 1.0);
        assert!((eight.longest_task_ns - 400e3).abs() < 1.0);
        // The workers' run delay: none where the cores are enough; 8 on 2 cores, 6 waiting
        // at every moment of the 400 µs.
        assert_eq!(on(2, 2).worker_run_delay_ns, 0.0);
        assert!(
            (eight.worker_run_delay_ns - 2_400e3).abs() < 1.0,
            "{eight:?}"
        );
    }

    #[test]
    fn workers_start_one_after_another_on_the_shared_cores() {
        let disk = flat_disk(100.0);
        let read = unit_read(&disk);
        let tasks = [task(100, 0), task(100, 0)];
        let one_core = |start| Cores {
            worker_start: start,
            ..cores(1.0)
        };
        let cost = WorkerStartCost {
            spawn_ns: 10e3,
            thread_ns: 6e3,
            join_ns: 4e3,
            workers: 1,
            rounds: 1,
        };
        // Worker 0 and the starter share the core: worker 1 starts at 20 µs, worker 0 (90 µs
        // left) ends at 200 µs, worker 1 (10 µs left then) at 210, its thread at 216, joined at
        // 220. The longest task is worker 0's.
        let started = simulate_phase(&tasks, 2, Readers::default(), one_core(Some(cost)), read);
        assert!((started.tasks_end_ns - 220e3).abs() < 1.0, "{started:?}");
        assert!((started.longest_task_ns - 200e3).abs() < 1.0, "{started:?}");
        // Free and at once, both end at 200 µs; with one worker nothing is started.
        let free = simulate_phase(&tasks, 2, Readers::default(), one_core(None), read);
        assert!((free.tasks_end_ns - 200e3).abs() < 1.0, "{free:?}");
        let alone = simulate_phase(&tasks, 1, Readers::default(), one_core(Some(cost)), read);
        assert!((alone.tasks_end_ns - 200e3).abs() < 1.0, "{alone:?}");
        // More workers than tasks: the ones with nothing to do still start and end.
        let idle = simulate_phase(
            &tasks[..1],
            2,
            Readers::default(),
            one_core(Some(cost)),
            read,
        );
        // Worker 1 starts at 20 µs with no task and spends 6 µs ending, sharing the core: its
        // thread ends at 32 µs. Worker 0, slowed to half a core for those 32 µs, ends its task at
        // 116 µs; joined at 120.
        assert!((idle.tasks_end_ns - 120e3).abs() < 1.0, "{idle:?}");
        assert!((idle.longest_task_ns - 116e3).abs() < 1.0, "{idle:?}");
    }

    #[test]
    fn reads_overlap_across_workers_but_not_within_one() {
        let disk = flat_disk(100.0);
        let read = ReadCost {
            disk: &disk,
            device_reads_per_key: 2.0,
            k: 0.5,
        };
        // Each task: 10 µs of CPU and 4 reads of 0.5 * 2 * 100 µs.
        let tasks: Vec<_> = (0..4).map(|_| task(10, 4)).collect();
        let machine = cores(2.0);
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
                cpu_speed: 2.0,
                ..cores(2.0)
            },
            read,
        );
        assert!((fast.tasks_end_ns - 4.0 * 405e3).abs() < 1.0, "{fast:?}");
    }

    #[test]
    fn a_prefetch_beside_the_tasks_serves_the_lookups_it_has_loaded() {
        let disk = flat_disk(100.0);
        let read = unit_read(&disk);
        let machine = cores(4.0);
        // Each task's one read was one the prefetch was to serve and lost (`raced`).
        let raced = |cpu_us| TaskProfile {
            raced: 1,
            ..task(cpu_us, 1)
        };
        let tasks = [raced(220), raced(20)];
        // One reader, two keys, no CPU: its keys arrive at 100 and 200 µs.
        let readers = |read_cpu_ns| Readers {
            readers: 1,
            keys: 2,
            cpu_per_key_ns: 0.0,
            race: Some(Race { read_cpu_ns }),
        };
        let end = |workers, readers| simulate_phase(&tasks, workers, readers, machine, read);
        // Key order: nothing is in the cache before the reader has read both keys (200 µs).
        // Task 0 reads at 110 (until 210) and ends at 320; task 1's lookup at 330 is served.
        let key = end(1, readers(0.0));
        assert!((key.tasks_end_ns - 340e3).abs() < 1.0, "{key:?}");
        // A read costs 10 µs of CPU after it: task 0 runs 210 µs around its read and 10 after
        // it (320 µs); task 1 drops its read's 10 µs: 10 µs, served at 325.
        let key = end(1, readers(10e3));
        assert!((key.tasks_end_ns - 330e3).abs() < 1.0, "{key:?}");
        // Without the race, each task reads what the profile says: 320 + 120 µs.
        let profiled = end(
            1,
            Readers {
                race: None,
                ..readers(0.0)
            },
        );
        assert!((profiled.tasks_end_ns - 440e3).abs() < 1.0, "{profiled:?}");
    }

    #[test]
    fn a_reader_beside_the_workers_gets_the_same_share_of_the_cores() {
        let disk = flat_disk(100.0);
        let read = unit_read(&disk);
        // One core; a reader of one key (100 µs of CPU, half before its read and half after)
        // beside two workers of 200 µs of CPU each.
        let readers = Readers {
            readers: 1,
            keys: 1,
            cpu_per_key_ns: 100e3,
            race: None,
        };
        let tasks = [task(200, 0), task(200, 0)];
        let fair = simulate_phase(&tasks, 2, readers, cores(1.0), read);
        // The reader gets a third of the core: 150 µs for its first 50, its read until 250, then
        // 50 µs at a third of the core (the workers have 100 µs left each) by 400; the workers
        // end their last 50 µs each at half a core, by 500.
        assert!((fair.readers_end_ns - 400e3).abs() < 1.0, "{fair:?}");
        assert!((fair.tasks_end_ns - 500e3).abs() < 1.0, "{fair:?}");
    }

    #[test]
    fn workers_reads_never_outrun_the_disks_best_iops() {
        // 100k IOPS at 100 µs (a knee at depth 10); reads waiting half the disk's latency
        // (k = 0.5). 16 workers, 1,600 tasks of one read each and no CPU, on 16 cores: at depth
        // 16 a read waits 0.5 x 160 µs, so the waits alone would finish in 8 ms, at twice the
        // disk's IOPS; the disk serves 1,600 reads in 16 ms at best.
        let disk = DiskModel::from_spec(100_000.0, 100.0).unwrap();
        let read = ReadCost {
            k: 0.5,
            ..unit_read(&disk)
        };
        let tasks: Vec<_> = (0..1600).map(|_| task(0, 1)).collect();
        let out = simulate_phase(&tasks, 16, Readers::default(), cores(16.0), read);
        let secs = out.tasks_end_ns / 1e9;
        assert!((secs - 0.016).abs() < 1e-4, "{secs}");
        // Below the disk's IOPS the waits are the model's: one worker, 100 tasks of 100 µs of
        // CPU and one read of 0.5 x 100 µs each, 15 ms.
        let tasks: Vec<_> = (0..100).map(|_| task(100, 1)).collect();
        let out = simulate_phase(&tasks, 1, Readers::default(), cores(1.0), read);
        let secs = out.tasks_end_ns / 1e9;
        assert!((secs - 0.015).abs() < 1e-6, "{secs}");
    }

    #[test]
    fn a_saturated_disk_bounds_the_readers() {
        // 10k IOPS at 100 µs: a knee at depth 1; 8 readers of 1000 keys each, no CPU.
        let disk = DiskModel::from_spec(10_000.0, 100.0).unwrap();
        let read = unit_read(&disk);
        let readers = Readers {
            readers: 8,
            keys: 8000,
            cpu_per_key_ns: 0.0,
            race: None,
        };
        let machine = cores(2.0);
        let out = simulate_phase(&[], 1, readers, machine, read);
        // 8000 reads at 10k IOPS: 0.8 s, whatever the depth.
        let secs = out.readers_end_ns / 1e9;
        assert!((secs - 0.8).abs() < 0.01, "{secs}");
        assert_eq!(out.tasks_end_ns, 0.0);
    }
}
