//! What a bench result read back may hold: every number the projection and the study use, held
//! to what a real run can produce. A crafted or damaged file is refused at load, naming the file,
//! the field's JSON path and what was expected, instead of overflowing a sum in the model or
//! keeping it simulating a trillion reads.
//!
//! The bounds are loose on purpose: each is far above what any run of the engine records, and
//! low enough that sums over a file's tasks fit in a `u64` and the model's simulation (one event
//! per read) stays in proportion to the file.

use crate::{BatchSample, BenchResult, DesignRatio, ReadFloor, ReferenceThroughput, RunResult};
use bal_replay_engine::{BatchProfile, PrefetchProfile, TaskProfile};
use bal_replay_host::WorkerStartCost;
use bal_replay_probe::{CpuUse, DiskEvidence};
pub use bal_replay_results::FieldError;
use bal_replay_results::bounds::{self as ranges, MAX_MGAS_PER_S, MIN_SECONDS};

/// Gas one task can use. A transaction uses at most its gas limit: since Osaka (EIP-7825) at most
/// 2^24, before it at most its block's gas limit, which mainnet has never raised past 60M. The
/// pre- and post-block tasks record none.
pub const MAX_TASK_GAS: u64 = 1 << 26;

/// Gas below which a task cannot have read one more key from the store. A key a task reads from
/// the store is one its transaction touches first, which costs at least a cold access: 2,100 gas
/// for a slot (1,900 listed in an access list), 2,600 for an account (2,400 listed), whose code
/// is a second key (1,200 each at worst). Less than that by a margin.
pub const GAS_PER_READ: u64 = 1_000;

/// Reads a task can make beside those its gas pays for: keys warm without a per-key charge (the
/// sender, the recipient and its code, the fee recipient, the precompiles) and the pre- and
/// post-block tasks' system calls and withdrawals, which use no gas of the block (16 withdrawals
/// and a few request queue slots at most).
pub const READS_BESIDE_GAS: u64 = 1_024;

/// Workers of one run, and prefetch reader threads of one batch: more threads than any machine
/// the bench runs on would give them cores.
pub const MAX_THREADS: u64 = 4_096;

/// Any one duration a profile records (a task, a batch's execution or commit, a prefetch), ns: a
/// week. Durations summed over threads (a batch's run delay, its process CPU) may be
/// [`MAX_THREADS`] times this.
pub const MAX_DURATION_NS: u64 = 7 * 24 * 3_600 * 1_000_000_000;

/// Device reads per key read: a RocksDB read of one key reads at most an index, a filter and a
/// data block per level; an MDBX one, a page per level of its B-tree.
pub const MAX_DEVICE_READS_PER_KEY: f64 = 1_024.0;

/// The most reads a task of `gas` can make: see [`GAS_PER_READ`] and [`READS_BESIDE_GAS`].
pub fn max_task_reads(gas: u64) -> u64 {
    gas / GAS_PER_READ + READS_BESIDE_GAS
}

/// `value` at `field`, unless it is above `max`.
fn at_most(field: impl Fn() -> String, value: u64, max: u64, what: &str) -> Result<(), FieldError> {
    if value > max {
        return Err(FieldError::new(
            field(),
            value,
            format!("at most {max} ({what})"),
        ));
    }
    Ok(())
}

/// `value` at `field`, unless it is not a finite number from 0 to `max`.
fn finite(field: impl Fn() -> String, value: f64, max: f64) -> Result<(), FieldError> {
    if !(value.is_finite() && (0.0..=max).contains(&value)) {
        return Err(FieldError::new(
            field(),
            ranges::short(value),
            format!("a number from 0 to {}", ranges::short(max)),
        ));
    }
    Ok(())
}

/// Seconds of a run: up to [`MAX_DURATION_NS`] times [`MAX_THREADS`] (CPU summed over threads).
const MAX_SECONDS: f64 = (MAX_DURATION_NS as f64 / 1e9) * MAX_THREADS as f64;

/// Checks every number of `bench`: those the projection and the study read, and those the
/// report draws.
pub fn check_bench(bench: &BenchResult) -> Result<(), FieldError> {
    if bench.cpus == 0 || bench.cpus as u64 > MAX_THREADS {
        return Err(FieldError::new(
            "cpus",
            bench.cpus,
            format!("from 1 to {MAX_THREADS} CPUs"),
        ));
    }
    ranges::count(|| "blocks".into(), bench.blocks)?;
    for (name, value) in [
        ("bal_sizes.full", bench.bal_sizes.full),
        ("bal_sizes.batched", bench.bal_sizes.batched),
        ("bal_sizes.parallel", bench.bal_sizes.parallel),
    ] {
        ranges::within(
            || name.into(),
            value,
            (0.0, ranges::MAX_COUNT as f64),
            "bytes of a block's BAL",
        )?;
    }
    if let Some(cost) = &bench.worker_start {
        check_worker_start(cost)?;
    }
    for (i, run) in bench.runs.iter().enumerate() {
        check_run(&format!("runs[{i}]"), run)?;
    }
    for (i, ratio) in bench.ratios_to_full.iter().enumerate() {
        check_ratio(&format!("ratios_to_full[{i}]"), ratio)?;
    }
    for (i, floor) in bench.read_floors.iter().enumerate() {
        check_floor(&format!("read_floors[{i}]"), floor)?;
    }
    Ok(())
}

fn check_ratio(at: &str, ratio: &DesignRatio) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    ranges::threads(|| field("threads"), ratio.threads as u64)?;
    ranges::count(|| field("batch"), ratio.batch as u64)?;
    for (name, value) in [
        ("ratio.median", ratio.ratio.median),
        ("ratio.low", ratio.ratio.low),
        ("ratio.high", ratio.ratio.high),
    ] {
        ranges::ratio(|| field(name), value)?;
    }
    Ok(())
}

/// Checks every number of a reference executor's result: its rates divide by its times.
pub fn check_reference(result: &ReferenceThroughput) -> Result<(), FieldError> {
    ranges::count(|| "blocks".into(), result.blocks)?;
    ranges::count(|| "gas".into(), result.gas)?;
    ranges::seconds(|| "memory_s".into(), result.memory_s)?;
    ranges::seconds(|| "rocksdb_s".into(), result.rocksdb_s)?;
    ranges::count(|| "warm_repeats".into(), result.warm_repeats as u64)?;
    for (b, block) in result.per_block.iter().enumerate() {
        let field = |name: &str| format!("per_block[{b}].{name}");
        ranges::count(|| field("number"), block.number)?;
        ranges::count(|| field("gas"), block.gas)?;
        ranges::part_seconds(|| field("memory_first_s"), block.memory_first_s)?;
        ranges::part_seconds(|| field("rocksdb_s"), block.rocksdb_s)?;
        for (name, times) in [
            ("memory_warm_s", &block.memory_warm_s),
            (
                "memory_warm_receipts_root_s",
                &block.memory_warm_receipts_root_s,
            ),
        ] {
            for (i, value) in times.iter().enumerate() {
                ranges::part_seconds(|| field(&format!("{name}[{i}]")), *value)?;
            }
        }
    }
    Ok(())
}

fn check_worker_start(cost: &WorkerStartCost) -> Result<(), FieldError> {
    // Starting a thread takes microseconds; a second is far past any machine's.
    let ns = 1e9;
    finite(|| "worker_start.spawn_ns".into(), cost.spawn_ns, ns)?;
    finite(|| "worker_start.thread_ns".into(), cost.thread_ns, ns)?;
    finite(|| "worker_start.join_ns".into(), cost.join_ns, ns)
}

fn check_run(at: &str, run: &RunResult) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    if run.threads == 0 || run.threads as u64 > MAX_THREADS {
        return Err(FieldError::new(
            field("threads"),
            run.threads,
            format!("from 1 to {MAX_THREADS} workers"),
        ));
    }
    if run.batch == 0 {
        return Err(FieldError::new(
            field("batch"),
            0,
            "at least 1 block per batch",
        ));
    }
    if let Some(io_threads) = run.io_threads {
        ranges::threads(|| field("io_threads"), io_threads as u64)?;
    }
    for (name, value) in [
        ("blocks", run.blocks),
        ("txs", run.txs),
        ("gas", run.gas),
        ("cache.hits", run.cache.hits),
        ("cache.misses", run.cache.misses),
        ("cache.keys_prefetched", run.cache.keys_prefetched),
        ("latency.read_p50_us", run.latency.read_p50_us),
        ("latency.read_p99_us", run.latency.read_p99_us),
        ("latency.tx_p50_us", run.latency.tx_p50_us),
        ("latency.tx_p99_us", run.latency.tx_p99_us),
    ] {
        ranges::count(|| field(name), value)?;
    }
    let t = &run.timing;
    // A run that replayed nothing (a state already at the dump's last block) took no execution
    // time and measured no throughput: refused, never charted as 0 Mgas/s.
    ranges::seconds(|| field("timing.exec_with_io_s"), t.exec_with_io_s)?;
    ranges::seconds(|| field("timing.wall_s"), t.wall_s)?;
    for (name, value) in [
        ("timing.prefetch_s", t.prefetch_s),
        ("timing.longest_txs_s", t.longest_txs_s),
        ("timing.commit_s", t.commit_s),
    ] {
        finite(|| field(name), value, MAX_SECONDS)?;
    }
    // Reading the dump is part of the whole replay: what is left is a client's end to end.
    if let Some(read) = t.read_dump_s {
        finite(|| field("timing.read_dump_s"), read, MAX_SECONDS)?;
        if read >= t.wall_s {
            return Err(FieldError::new(
                field("timing.read_dump_s"),
                ranges::short(read),
                format!("less than timing.wall_s ({})", ranges::short(t.wall_s)),
            ));
        }
    }
    let p = &run.throughput;
    for (name, value) in [
        ("throughput.mgas_per_s", p.mgas_per_s),
        ("throughput.end_to_end_mgas_per_s", p.end_to_end_mgas_per_s),
        ("throughput.mgas_per_s_min", p.mgas_per_s_min),
        ("throughput.mgas_per_s_max", p.mgas_per_s_max),
    ] {
        ranges::mgas_per_s(|| field(name), value)?;
    }
    ranges::count(|| field("throughput.repeats"), p.repeats as u64)?;
    // Bootstrapped intervals resample these: as many as the repeats, each a real throughput.
    if run.repeat_mgas_per_s.len() > p.repeats.max(1) {
        return Err(FieldError::new(
            field("repeat_mgas_per_s"),
            format!("{} values", run.repeat_mgas_per_s.len()),
            format!("at most throughput.repeats ({})", p.repeats),
        ));
    }
    for (i, value) in run.repeat_mgas_per_s.iter().enumerate() {
        ranges::mgas_per_s(|| field(&format!("repeat_mgas_per_s[{i}]")), *value)?;
    }
    check_disk(&field("disk"), &run.disk)?;
    if let Some(cpu) = &run.cpu {
        check_cpu(&field("cpu"), cpu)?;
    }
    for (b, sample) in run.batches.iter().enumerate() {
        check_sample(&field(&format!("batches[{b}]")), sample)?;
    }
    for (b, batch) in run.batch_profiles.iter().enumerate() {
        check_batch(&field(&format!("batch_profiles[{b}]")), batch)?;
    }
    Ok(())
}

fn check_disk(at: &str, disk: &DiskEvidence) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    for (name, value) in [
        ("device_reads", disk.device_reads),
        ("device_read_bytes", disk.device_read_bytes),
        ("device_read_ms", disk.device_read_ms),
        ("process_read_bytes", disk.process_read_bytes),
        ("major_faults", disk.major_faults),
        ("read_syscalls", disk.read_syscalls),
        ("key_reads", Some(disk.key_reads)),
        ("stored_key_reads", disk.stored_key_reads),
        ("block_cache_hits", disk.block_cache_hits),
        ("block_cache_misses", disk.block_cache_misses),
        ("block_cache_data_misses", disk.block_cache_data_misses),
    ] {
        if let Some(value) = value {
            ranges::count(|| field(name), value)?;
        }
    }
    if let Some(per_key) = disk.device_reads_per_key {
        finite(
            || field("device_reads_per_key"),
            per_key,
            MAX_DEVICE_READS_PER_KEY,
        )?;
    }
    if let Some(reached) = disk.residency.reached_device {
        finite(|| field("residency.reached_device"), reached, 1.0)?;
    }
    for (name, value) in [
        ("rocksdb_read_s", disk.rocksdb_read_s),
        ("rocksdb_file_read_s", disk.rocksdb_file_read_s),
    ] {
        if let Some(value) = value {
            finite(|| field(name), value, MAX_SECONDS)?;
        }
    }
    Ok(())
}

/// The floor of a key read at one batch size: its costs per key are divided by its keys.
fn check_floor(at: &str, floor: &ReadFloor) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    ranges::count(|| field("batch"), floor.batch as u64)?;
    ranges::count(|| field("blocks"), floor.blocks)?;
    for (reader, reads) in [("point", &floor.point), ("multiget", &floor.multiget)] {
        let field = |name: &str| format!("{at}.{reader}.{name}");
        ranges::count(|| field("keys"), reads.keys)?;
        ranges::count(|| field("sleeps"), reads.sleeps)?;
        if let Some(device_reads) = reads.device_reads {
            ranges::count(|| field("device_reads"), device_reads)?;
        }
        for (name, value) in [
            ("cpu_s", reads.cpu_s),
            ("system_s", reads.system_s),
            ("wall_s", reads.wall_s),
            ("rocksdb_read_s", reads.rocksdb_read_s),
            ("rocksdb_file_read_s", reads.rocksdb_file_read_s),
        ] {
            finite(|| field(name), value, MAX_SECONDS)?;
        }
    }
    Ok(())
}

/// A batch as the bench sampled it: its throughput is drawn over the run.
fn check_sample(at: &str, sample: &BatchSample) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    for (name, value) in [
        ("first_block", Some(sample.first_block)),
        ("last_block", Some(sample.last_block)),
        ("gas", Some(sample.gas)),
        ("rss_bytes", sample.rss_bytes),
        ("state_bytes", sample.state_bytes),
    ] {
        if let Some(value) = value {
            ranges::count(|| field(name), value)?;
        }
    }
    for (name, value) in [
        ("exec_with_io_s", sample.exec_with_io_s),
        ("prefetch_s", sample.prefetch_s),
        ("end_s", sample.end_s),
    ] {
        finite(|| field(name), value, MAX_SECONDS)?;
    }
    // Its gas over its time: a batch with gas took some.
    let rate = sample.mgas_per_s();
    if !(rate.is_finite() && rate <= MAX_MGAS_PER_S) {
        return Err(FieldError::new(
            field("exec_with_io_s"),
            ranges::short(sample.exec_with_io_s),
            format!(
                "the time of the batch's {} gas at {MAX_MGAS_PER_S:e} Mgas/s or slower",
                sample.gas
            ),
        ));
    }
    Ok(())
}

fn check_cpu(at: &str, cpu: &CpuUse) -> Result<(), FieldError> {
    ranges::within(
        || format!("{at}.wall_s"),
        cpu.wall_s,
        (MIN_SECONDS, MAX_SECONDS),
        "seconds of a run that took time",
    )?;
    for (name, value) in [
        ("wall_s", cpu.wall_s),
        ("process_s", cpu.process_s),
        ("other_s", cpu.other_s),
        ("steal_s", cpu.steal_s),
    ] {
        finite(|| format!("{at}.{name}"), value, MAX_SECONDS)?;
    }
    for (name, value) in [
        ("user_s", cpu.user_s),
        ("system_s", cpu.system_s),
        ("worker_s", cpu.worker_s),
    ] {
        if let Some(value) = value {
            finite(|| format!("{at}.{name}"), value, MAX_SECONDS)?;
        }
    }
    for (name, value) in [("sleeps", cpu.sleeps), ("preemptions", cpu.preemptions)] {
        if let Some(value) = value {
            ranges::count(|| format!("{at}.{name}"), value)?;
        }
    }
    Ok(())
}

fn check_batch(at: &str, batch: &BatchProfile) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    let one = "a week";
    at_most(|| field("exec_ns"), batch.exec_ns, MAX_DURATION_NS, one)?;
    at_most(|| field("commit_ns"), batch.commit_ns, MAX_DURATION_NS, one)?;
    let summed = MAX_DURATION_NS * MAX_THREADS;
    let over_threads = "a week on each of the most threads a run has";
    if let Some(ns) = batch.worker_run_delay_ns {
        at_most(|| field("worker_run_delay_ns"), ns, summed, over_threads)?;
    }
    if let Some(ns) = batch.process_cpu_ns {
        at_most(|| field("process_cpu_ns"), ns, summed, over_threads)?;
    }
    let mut batch_reads = 0u64;
    for (i, task) in batch.tasks.iter().enumerate() {
        check_task(at, i, task)?;
        batch_reads = batch_reads.saturating_add(max_task_reads(task.gas));
    }
    if let Some(prefetch) = &batch.prefetch {
        check_prefetch(&field("prefetch"), prefetch, batch_reads)?;
    }
    Ok(())
}

/// Task `i` of the batch at `at` (in JSON, one array per field: `tasks.reads[i]`).
fn check_task(at: &str, i: usize, task: &TaskProfile) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.tasks.{name}[{i}]");
    let eip = "what a transaction can use";
    at_most(|| field("gas"), task.gas, MAX_TASK_GAS, eip)?;
    let one = "a week";
    for (name, value) in [
        ("start_ns", task.start_ns),
        ("wall_ns", task.wall_ns),
        ("cpu_ns", task.cpu_ns),
        ("read_wait_ns", task.read_wait_ns),
    ] {
        at_most(|| field(name), value, MAX_DURATION_NS, one)?;
    }
    let max_reads = max_task_reads(task.gas);
    let paid = format!(
        "{GAS_PER_READ} gas a read for the task's {} gas, and {READS_BESIDE_GAS} more",
        task.gas
    );
    at_most(|| field("reads"), task.reads, max_reads, &paid)?;
    at_most(
        || field("prefetch_hits"),
        task.prefetch_hits,
        max_reads,
        &paid,
    )?;
    at_most(
        || field("raced"),
        task.raced,
        task.reads,
        "of the task's reads",
    )
}

/// A batch's prefetch, whose keys are those its tasks touch: at most `max_keys`, what their gas
/// pays for.
fn check_prefetch(at: &str, prefetch: &PrefetchProfile, max_keys: u64) -> Result<(), FieldError> {
    let field = |name: &str| format!("{at}.{name}");
    at_most(
        || field("keys"),
        prefetch.keys,
        max_keys,
        "what the batch's tasks' gas pays for",
    )?;
    at_most(
        || field("readers"),
        u64::from(prefetch.readers),
        MAX_THREADS,
        "threads",
    )?;
    let one = "a week";
    at_most(|| field("wall_ns"), prefetch.wall_ns, MAX_DURATION_NS, one)?;
    let summed = MAX_DURATION_NS * MAX_THREADS;
    at_most(
        || field("cpu_ns"),
        prefetch.cpu_ns,
        summed,
        "a week on each reader",
    )
}
