//! What a run read from the disk: the block device's counters, the process's I/O accounting and its
//! major page faults, sampled before and after a run.
//!
//! These are the evidence that a figure was taken where the research's question lives (reads that
//! wait for the SSD) and not in RocksDB's block cache or the page cache:
//! - the block device under the state (`/sys/dev/block/MAJ:MIN/stat`) counts read requests and
//!   sectors. It counts every process's reads of that device, so runs should have the disk to
//!   themselves; the process's own `read_bytes` (`/proc/self/io`) is reported beside it to show
//!   how much of it was ours.
//! - `/proc/self/io`'s `read_bytes` is what this process caused to be read from storage, through
//!   the page cache or around it (O_DIRECT).
//! - major faults (`/proc/self/stat`) are reads of a memory map that waited for the disk: MDBX's.
//!
//! Where a counter cannot be read (no `/proc`, a state on tmpfs or overlay with no block device),
//! it is `None` and reported as such, never as zero.

use crate::{
    Residency, ResidencyCounts,
    memory_limit::{MemoryLimit, MemoryUsage},
};
use bal_replay_host::{ResourceUse, process_resource_use};
use bal_replay_rocks::RocksReadCounters;
use std::path::Path;

/// A block device's read counters (`/sys/dev/block/MAJ:MIN/stat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockDeviceReads {
    /// Read requests completed.
    pub reads: u64,
    /// Bytes read (sectors of 512 bytes).
    pub bytes: u64,
    /// Milliseconds reads spent in flight, summed over the reads (`read ticks`): over a window's
    /// wall time, the reads in flight on average; over its reads, their mean latency.
    pub read_ms: u64,
}

/// One sample of the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoSample {
    /// The device under the sampled path.
    pub device: Option<BlockDeviceReads>,
    /// `/proc/self/io` `read_bytes`.
    pub process_read_bytes: Option<u64>,
    /// `/proc/self/stat` major faults.
    pub major_faults: Option<u64>,
    /// `/proc/self/io` `syscr`: read system calls (`pread` among them; io_uring's reads are not
    /// counted).
    pub read_syscalls: Option<u64>,
}

/// The counters between two samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoDelta {
    /// Read requests the device completed.
    pub device_reads: Option<u64>,
    /// Bytes the device read.
    pub device_read_bytes: Option<u64>,
    /// Milliseconds the device's reads spent in flight, summed over them.
    pub device_read_ms: Option<u64>,
    /// Bytes this process caused to be read from storage.
    pub process_read_bytes: Option<u64>,
    /// Major page faults of this process.
    pub major_faults: Option<u64>,
    /// Read system calls of this process.
    pub read_syscalls: Option<u64>,
}

impl IoSample {
    /// Samples the counters of the block device holding `path` and of this process.
    pub fn take(path: &Path) -> Self {
        let proc_io = std::fs::read_to_string("/proc/self/io").ok();
        Self {
            device: device_of(path).and_then(|dev| read_device_stat(&dev)),
            process_read_bytes: proc_io
                .as_deref()
                .and_then(|text| parse_proc_io_field(text, "read_bytes:")),
            read_syscalls: proc_io
                .as_deref()
                .and_then(|text| parse_proc_io_field(text, "syscr:")),
            major_faults: std::fs::read_to_string("/proc/self/stat")
                .ok()
                .and_then(|text| parse_major_faults(&text)),
        }
    }

    /// The counters from `earlier` to `self`.
    pub fn since(&self, earlier: &Self) -> IoDelta {
        let diff = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_sub(b?));
        IoDelta {
            device_reads: diff(
                self.device.map(|d| d.reads),
                earlier.device.map(|d| d.reads),
            ),
            device_read_bytes: diff(
                self.device.map(|d| d.bytes),
                earlier.device.map(|d| d.bytes),
            ),
            device_read_ms: diff(
                self.device.map(|d| d.read_ms),
                earlier.device.map(|d| d.read_ms),
            ),
            process_read_bytes: diff(self.process_read_bytes, earlier.process_read_bytes),
            major_faults: diff(self.major_faults, earlier.major_faults),
            read_syscalls: diff(self.read_syscalls, earlier.read_syscalls),
        }
    }
}

/// The `/sys/dev/block` entry (`MAJ:MIN`) of the device holding `path`, or `None` when it has no
/// block device (tmpfs, overlay: major 0).
fn device_of(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    // glibc's gnu_dev_major / gnu_dev_minor.
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff);
    (major != 0).then(|| format!("{major}:{minor}"))
}

fn read_device_stat(dev: &str) -> Option<BlockDeviceReads> {
    let text = std::fs::read_to_string(format!("/sys/dev/block/{dev}/stat")).ok()?;
    parse_block_stat(&text)
}

/// Fields 1, 3 and 4 of a block device's `stat`: read I/Os completed, sectors read, and the
/// milliseconds they spent in flight.
fn parse_block_stat(text: &str) -> Option<BlockDeviceReads> {
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    let reads = fields.next()?.ok()?;
    let _merged = fields.next()?.ok()?;
    let sectors = fields.next()?.ok()?;
    let read_ms = fields.next()?.ok()?;
    Some(BlockDeviceReads {
        reads,
        bytes: sectors * 512,
        read_ms,
    })
}

/// One counter of `/proc/self/io` (`field` with its colon).
fn parse_proc_io_field(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|value| value.trim().parse().ok())
}

/// Field 12 of `/proc/self/stat`, counted after the command name, which may hold spaces and
/// parentheses (so the fields start after its last `)`).
fn parse_major_faults(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    // After `)`: state (3), ppid (4), ..., majflt (12).
    rest.split_whitespace().nth(9)?.parse().ok()
}

/// Where a run's reads were served from: the device's and the process's counters, RocksDB's, and
/// the verdict judged from them ([`Residency`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DiskEvidence {
    /// Read requests the state's block device completed during the run (every process's).
    pub device_reads: Option<u64>,
    /// Bytes the state's block device read during the run.
    pub device_read_bytes: Option<u64>,
    /// Milliseconds the device's reads spent in flight during the run, summed over them (every
    /// process's): see [`DiskEvidence::reads_in_flight`] and [`DiskEvidence::device_read_latency_us`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_read_ms: Option<u64>,
    /// Bytes this process caused to be read from storage (`/proc/self/io`).
    pub process_read_bytes: Option<u64>,
    /// Major page faults of this process (memory-mapped reads that waited for the disk: MDBX).
    pub major_faults: Option<u64>,
    /// Read system calls of this process (`/proc/self/io` `syscr`): one `pread` per block RocksDB
    /// reads, except a multi-get's blocks read through io_uring.
    pub read_syscalls: Option<u64>,
    /// Keys the run read from the store: RocksDB's count of keys looked up, or (for stores without
    /// one) the shared cache's misses plus the keys prefetched. Each is a key's first read in its
    /// batch: later reads are answered above the store.
    pub key_reads: u64,
    /// Of the key reads, those of keys stored in RocksDB's SST files: the reads that can reach
    /// the device (RocksDB only; absent keys are answered by bloom filters, recent writes by the
    /// memtable).
    pub stored_key_reads: Option<u64>,
    /// RocksDB block-cache hits.
    pub block_cache_hits: Option<u64>,
    /// RocksDB block-cache misses (data, index and filter blocks read from SST files).
    pub block_cache_misses: Option<u64>,
    /// Of the misses, data blocks.
    pub block_cache_data_misses: Option<u64>,
    /// Device reads per key read.
    pub device_reads_per_key: Option<f64>,
    /// Whether the run was disk-resident, judged by what reached the device, and how it was
    /// judged.
    pub residency: Residency,
    /// The memory cgroup's bound and counts, for a run under `--memory-limit` (MDBX's
    /// disk-resident mode): what of the state could be served from the page cache.
    pub memory: Option<MemoryUsage>,
    /// Bytes RocksDB's block cache held pinned at the end of the run: with `--pin-metadata`, the
    /// state's index and filter partitions (served from memory, not counted as the state's
    /// pages), otherwise only their top levels. Absent for other stores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_cache_pinned_bytes: Option<u64>,
    /// Seconds inside RocksDB's point reads and multi-gets, summed over calls (RocksDB only, with
    /// statistics; absent in results written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rocksdb_read_s: Option<f64>,
    /// Of that, seconds reading SST files: the kernel's and the device's part of its reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rocksdb_file_read_s: Option<f64>,
}

/// Clock ticks per second of `/proc/stat` and `/proc/<pid>/stat` (`USER_HZ`: 100 on Linux, on
/// every architecture it runs on with these files).
const USER_HZ: f64 = 100.0;

/// The machine's and this process's CPU counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuSample {
    /// Non-idle ticks of all CPUs (`/proc/stat`: user, nice, system, irq, softirq, steal).
    busy_ticks: u64,
    /// Ticks the hypervisor gave to others (`steal`).
    steal_ticks: u64,
    /// This process's user and system ticks (`/proc/self/stat`).
    process_ticks: u64,
    /// The same split precisely, with its threads' sleeps and preemptions (`getrusage`).
    resources: Option<ResourceUse>,
    at: std::time::Instant,
}

/// CPU used during a run, seconds of one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct CpuUse {
    /// Wall time between the samples.
    pub wall_s: f64,
    /// This process's CPU time.
    pub process_s: f64,
    /// Everything else's: other processes, interrupts (this run's I/O completions among them),
    /// and time the hypervisor took.
    pub other_s: f64,
    /// Of that, time the hypervisor gave to other machines (`steal`).
    pub steal_s: f64,
    /// This process's CPU time in user mode (`getrusage`, to the microsecond; absent in results
    /// written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_s: Option<f64>,
    /// Its CPU time in the kernel: system calls (a `pread` per block read) and page faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_s: Option<f64>,
    /// Times one of its threads slept (gave up its core to wait: a read, a lock, an idle worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleeps: Option<u64>,
    /// Times one of its threads was taken off its core while it could run (waited for a core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<u64>,
    /// Of the process's CPU, the parallel workers' own while they executed (user and kernel,
    /// summed over workers and batches): execution and its on-demand reads, without planning,
    /// prefetch, commits or reading the dump. Absent for sequential runs and in results written
    /// before it was recorded; set by the replay, not the probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_s: Option<f64>,
}

impl CpuUse {
    /// CPUs left to this process on average: `cpus` less what everything else used.
    pub fn cpus_free(&self, cpus: usize) -> f64 {
        if self.wall_s > 0.0 {
            (cpus as f64 - self.other_s / self.wall_s).clamp(0.0, cpus as f64)
        } else {
            cpus as f64
        }
    }
}

impl CpuSample {
    /// Samples the counters; `None` where `/proc` cannot be read.
    pub fn take() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        let (busy_ticks, steal_ticks) = parse_cpu_busy(&stat)?;
        Some(Self {
            busy_ticks,
            steal_ticks,
            process_ticks: parse_process_ticks(&own)?,
            resources: process_resource_use(),
            at: std::time::Instant::now(),
        })
    }

    /// The CPU used from `earlier` to `self`.
    pub fn since(&self, earlier: &Self) -> CpuUse {
        let busy = self.busy_ticks.saturating_sub(earlier.busy_ticks) as f64 / USER_HZ;
        let process = self.process_ticks.saturating_sub(earlier.process_ticks) as f64 / USER_HZ;
        let resources = self
            .resources
            .zip(earlier.resources)
            .map(|(now, then)| now.since(&then));
        CpuUse {
            wall_s: self.at.duration_since(earlier.at).as_secs_f64(),
            process_s: process,
            other_s: (busy - process).max(0.0),
            steal_s: self.steal_ticks.saturating_sub(earlier.steal_ticks) as f64 / USER_HZ,
            user_s: resources.map(|r| r.user.as_secs_f64()),
            system_s: resources.map(|r| r.system.as_secs_f64()),
            sleeps: resources.map(|r| r.voluntary_switches),
            preemptions: resources.map(|r| r.involuntary_switches),
            worker_s: None,
        }
    }
}

/// Non-idle and steal ticks from `/proc/stat`'s `cpu` line (user nice system idle iowait irq
/// softirq steal ...; guest time is already in user).
fn parse_cpu_busy(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Some((at(0) + at(1) + at(2) + at(5) + at(6) + at(7), at(7)))
}

/// utime + stime from `/proc/<pid>/stat` (fields 14 and 15; the command name in parentheses may
/// hold spaces, so fields are counted after its closing parenthesis).
fn parse_process_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: field 3 (state) is index 0, so field 14 is index 11.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// The counters at the start of a run over the state at a path, from which the run's
/// [`DiskEvidence`] is taken when it ends: the one way `bench` and `run` measure a run.
#[derive(Debug, Clone)]
pub struct RunProbe<'a> {
    path: &'a Path,
    /// The device's and the process's counters at the start.
    pub io: IoSample,
    rocks: Option<RocksReadCounters>,
    /// The store reads with O_DIRECT (how residency is judged).
    direct_io: bool,
    cpu: Option<CpuSample>,
}

impl<'a> RunProbe<'a> {
    /// Samples the counters of the device holding `path`, with RocksDB's (`None` for other
    /// stores, or without statistics); `direct_io`: the store reads with O_DIRECT.
    pub fn start(path: &'a Path, rocks: Option<RocksReadCounters>, direct_io: bool) -> Self {
        MemoryLimit::reset_peak();
        Self {
            path,
            io: IoSample::take(path),
            rocks,
            direct_io,
            cpu: CpuSample::take(),
        }
    }

    /// The evidence of the run that read `key_reads` keys from its store (the replay report's
    /// count, `ReplayReport::cache_key_reads`), with RocksDB's counters now, and the CPU used
    /// meanwhile.
    pub fn finish(
        &self,
        key_reads: u64,
        rocks: Option<RocksReadCounters>,
    ) -> (DiskEvidence, Option<CpuUse>) {
        let rocks = match (rocks, self.rocks) {
            (Some(now), Some(start)) => Some(now.since(&start)),
            _ => None,
        };
        let io = IoSample::take(self.path).since(&self.io);
        let cpu = match (CpuSample::take(), self.cpu) {
            (Some(now), Some(start)) => Some(now.since(&start)),
            _ => None,
        };
        let disk = DiskEvidence {
            memory: MemoryLimit::current_usage(),
            ..DiskEvidence::new(io, key_reads, rocks, self.direct_io)
        };
        (disk, cpu)
    }
}

/// The disk's bound on a run's throughput, MGas/s: the gas it replayed per device read, at the
/// disk's best IOPS (`best_iops`, fio's best over its queue depths). A run can go no faster
/// while every one of its device reads has to be served. `None` for a run that made no device
/// read.
pub fn disk_bound_mgas_per_s(gas: u64, device_reads: u64, best_iops: f64) -> Option<f64> {
    (device_reads > 0 && best_iops > 0.0)
        .then(|| gas as f64 / device_reads as f64 * best_iops / 1e6)
}

impl DiskEvidence {
    /// The device's reads in flight on average over `seconds` (a run's time reading: its
    /// execution with I/O): the queue depth its read discipline kept. `None` without the counter
    /// or reads.
    pub fn reads_in_flight(&self, seconds: f64) -> Option<f64> {
        let ms = self.device_read_ms?;
        (seconds > 0.0 && self.device_reads? > 0).then(|| ms as f64 / (seconds * 1000.0))
    }

    /// The device's mean read latency, µs (with the device's millisecond resolution summed over
    /// many reads). `None` without the counter or reads.
    pub fn device_read_latency_us(&self) -> Option<f64> {
        let reads = self.device_reads.filter(|&r| r > 0)?;
        Some(self.device_read_ms? as f64 * 1000.0 / reads as f64)
    }

    /// The evidence of a run: its I/O counters, its key reads, RocksDB's counters if the store
    /// was RocksDB with statistics on, and its residency judged from them (`direct_io`: the store
    /// read with O_DIRECT).
    pub fn new(
        io: IoDelta,
        key_reads: u64,
        rocks: Option<RocksReadCounters>,
        direct_io: bool,
    ) -> Self {
        let key_reads = rocks.map_or(key_reads, |r| r.keys_read);
        let mut evidence = Self {
            device_reads: io.device_reads,
            device_read_bytes: io.device_read_bytes,
            device_read_ms: io.device_read_ms,
            process_read_bytes: io.process_read_bytes,
            major_faults: io.major_faults,
            read_syscalls: io.read_syscalls,
            key_reads,
            stored_key_reads: rocks.map(|r| r.keys_found_in_files),
            block_cache_hits: rocks.map(|r| r.block_cache_hits),
            block_cache_misses: rocks.map(|r| r.block_cache_misses),
            block_cache_data_misses: rocks.map(|r| r.block_cache_data_misses),
            device_reads_per_key: io
                .device_reads
                .filter(|_| key_reads > 0)
                .map(|reads| reads as f64 / key_reads as f64),
            residency: Residency::default(),
            memory: None,
            block_cache_pinned_bytes: None,
            rocksdb_read_s: rocks.map(|r| r.read_micros as f64 / 1e6),
            rocksdb_file_read_s: rocks.map(|r| r.file_read_micros as f64 / 1e6),
        };
        evidence.residency = Residency::judge(
            &ResidencyCounts {
                key_reads: evidence.key_reads,
                block_cache_hits: evidence.block_cache_hits,
                block_cache_misses: evidence.block_cache_misses,
                block_cache_data_misses: evidence.block_cache_data_misses,
                device_read_bytes: evidence.device_read_bytes,
            },
            direct_io,
        );
        evidence
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn reads_in_flight_and_latency_come_from_the_devices_read_time() {
        // 20,000 reads that spent 3,000 ms in flight in all: 150 µs each; over 0.5 s of
        // execution, 6 in flight on average.
        let disk = DiskEvidence {
            device_reads: Some(20_000),
            device_read_ms: Some(3_000),
            ..DiskEvidence::default()
        };
        assert_eq!(disk.device_read_latency_us(), Some(150.0));
        assert_eq!(disk.reads_in_flight(0.5), Some(6.0));
        assert_eq!(disk.reads_in_flight(0.0), None);
        let no_reads = DiskEvidence {
            device_reads: Some(0),
            device_read_ms: Some(0),
            ..DiskEvidence::default()
        };
        assert_eq!(no_reads.device_read_latency_us(), None);
        assert_eq!(no_reads.reads_in_flight(1.0), None);
        let no_counter = DiskEvidence {
            device_reads: Some(10),
            ..DiskEvidence::default()
        };
        assert_eq!(no_counter.reads_in_flight(1.0), None);
    }

    #[test]
    fn the_disk_bound_is_gas_per_device_read_at_the_best_iops() {
        // 3 Ggas over 100 K device reads is 30 Kgas per read; at 60 K IOPS, 1,800 MGas/s.
        let bound = disk_bound_mgas_per_s(3_000_000_000, 100_000, 60_000.0).unwrap();
        assert!((bound - 1800.0).abs() < 1e-9, "{bound}");
        assert_eq!(disk_bound_mgas_per_s(3_000_000_000, 0, 60_000.0), None);
    }

    use super::*;

    #[test]
    fn parses_the_kernels_formats() {
        assert_eq!(
            parse_block_stat(
                "  140225     7190 13546066    47912   305733   249016 23620744   443636        0   181444   546260\n"
            ),
            Some(BlockDeviceReads {
                reads: 140_225,
                bytes: 13_546_066 * 512,
                read_ms: 47_912,
            })
        );
        assert_eq!(parse_block_stat("12 x"), None);
        let proc_io = "rchar: 4292\nwchar: 0\nsyscr: 8\nsyscw: 0\nread_bytes: 1228800\nwrite_bytes: 0\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_proc_io_field(proc_io, "read_bytes:"), Some(1_228_800));
        assert_eq!(parse_proc_io_field(proc_io, "syscr:"), Some(8));
        assert_eq!(parse_proc_io_field(proc_io, "nothing:"), None);
        // A command name with a space and a parenthesis; majflt is 31.
        let stat = "4242 (my (cmd) x) S 1 4242 4242 0 -1 4194560 870 0 31 0 1 0 0 0 20 0 1 0";
        assert_eq!(parse_major_faults(stat), Some(31));
        // utime 1 + stime 0.
        assert_eq!(parse_process_ticks(stat), Some(1));
        let proc_stat = "cpu  600 85 81 137 11 0 3 19 0 0\ncpu0 300 40 40 70 5 0 1 9 0 0\n";
        // user + nice + system + irq + softirq + steal; steal alone.
        assert_eq!(parse_cpu_busy(proc_stat), Some((788, 19)));
        assert_eq!(parse_cpu_busy("intr 5\n"), None);
        let half = CpuUse {
            wall_s: 10.0,
            process_s: 12.0,
            other_s: 5.0,
            steal_s: 0.0,
            ..Default::default()
        };
        assert_eq!(half.cpus_free(2), 1.5);
    }

    #[test]
    fn a_read_of_a_file_on_disk_is_counted_by_its_device() {
        // Read a fresh file with O_DIRECT, so the read cannot be served from the page cache.
        use std::io::{Read, Write};
        use std::os::unix::fs::OpenOptionsExt;
        let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
        let path = dir.path().join("data");
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&vec![7u8; 1 << 20]).unwrap();
        file.sync_all().unwrap();
        let before = IoSample::take(dir.path());
        if before.device.is_none() {
            // The temp dir is on tmpfs or overlay: no device to count (reported as None).
            assert_eq!(before.since(&before).device_reads, None);
            return;
        }
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc_o_direct())
            .open(&path)
            .unwrap();
        // O_DIRECT needs an aligned buffer: read into a 4 KiB-aligned slice of a larger one.
        let mut buf = vec![0u8; (1 << 20) + 4096];
        let offset = buf.as_ptr().align_offset(4096);
        file.read_exact(&mut buf[offset..offset + (1 << 20)])
            .unwrap();
        // The block layer adds a request's sectors and its count in two steps at completion,
        // and the reader can wake between them (seen once: 1 MiB counted, 0 requests): give
        // the count a moment to land.
        let mut delta = IoSample::take(dir.path()).since(&before);
        for _ in 0..100 {
            if delta.device_reads.unwrap() >= 1 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            delta = IoSample::take(dir.path()).since(&before);
        }
        assert!(delta.device_reads.unwrap() >= 1, "{delta:?}");
        assert!(delta.device_read_bytes.unwrap() >= 1 << 20, "{delta:?}");
        assert!(delta.process_read_bytes.unwrap() >= 1 << 20, "{delta:?}");
    }

    #[test]
    fn residency_is_judged_by_the_blocks_or_bytes_that_reached_the_device() {
        use crate::ResidencyBasis;
        let io = |reads, bytes| IoDelta {
            device_reads: Some(reads),
            device_read_bytes: Some(bytes),
            ..IoDelta::default()
        };
        let rocks = |keys_read, hits, data_misses| RocksReadCounters {
            keys_read,
            keys_found_in_files: keys_read,
            block_cache_hits: hits,
            block_cache_misses: data_misses,
            block_cache_data_misses: data_misses,
            ..RocksReadCounters::default()
        };
        // A sorted multi-get with direct reads: 95% of its 10,000 stored-key reads missed the
        // block cache, but neighbouring blocks went to the device in one request (0.17 requests
        // per key). Counted in requests it looked cache-resident; counted in blocks it is not.
        let multi_get = DiskEvidence::new(
            io(1_700, 9_500 * 4096),
            5,
            Some(rocks(10_000, 500, 9_500)),
            true,
        );
        // RocksDB's own count of keys wins over the cache's.
        assert_eq!(multi_get.key_reads, 10_000);
        assert_eq!(multi_get.device_reads_per_key, Some(0.17));
        assert_eq!(multi_get.residency.basis, ResidencyBasis::DataBlocks);
        assert_eq!(multi_get.residency.reached_device, Some(0.95));
        assert!(multi_get.residency.disk_resident);
        // Through the page cache a miss reached the device only as far as its bytes say: device
        // bytes of other processes do not count where RocksDB says the blocks were cached.
        let cached = DiskEvidence::new(
            io(5_000, 5_000 * 4096),
            0,
            Some(rocks(1_000, 210, 790)),
            false,
        );
        assert_eq!(cached.residency.basis, ResidencyBasis::DeviceBytes);
        assert_eq!(cached.residency.reached_device, Some(0.79));
        assert_eq!(cached.residency.label(), "cache-resident");
        let from_the_page_cache =
            DiskEvidence::new(io(10, 10 * 4096), 0, Some(rocks(1_000, 0, 1_000)), false);
        assert_eq!(from_the_page_cache.residency.reached_device, Some(0.01));
        assert!(!from_the_page_cache.residency.disk_resident);
        let from_the_device =
            DiskEvidence::new(io(850, 850 * 4096), 0, Some(rocks(1_000, 150, 850)), false);
        assert_eq!(from_the_device.residency.reached_device, Some(0.85));
        assert_eq!(from_the_device.residency.label(), "disk-resident");
        // Without RocksDB's counters (MDBX) no counter tells; fewer than 100 key reads read no
        // state; no device to count through the page cache tells nothing either.
        let mdbx = DiskEvidence::new(io(800, 800 * 4096), 1_000, None, false);
        assert_eq!(mdbx.residency.basis, ResidencyBasis::Unknown);
        assert_eq!(mdbx.residency.label(), "regime unknown");
        assert_eq!(
            DiskEvidence::new(io(10, 4096), 99, None, false)
                .residency
                .label(),
            "reads no state"
        );
        let no_device =
            DiskEvidence::new(IoDelta::default(), 0, Some(rocks(1_000, 0, 1_000)), false);
        assert_eq!(no_device.residency.basis, ResidencyBasis::Unknown);
        assert_eq!(no_device.device_reads_per_key, None);
    }

    /// O_DIRECT, whose value differs between architectures.
    const fn libc_o_direct() -> i32 {
        if cfg!(any(target_arch = "aarch64", target_arch = "arm")) {
            0o200000
        } else {
            0o40000
        }
    }
}
