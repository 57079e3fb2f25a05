//! The research's tables, from a bench result.

use crate::{BenchResult, Interval, RunResult, StoreKind};
use bal_replay_engine::{ExecMode, IoDesign};
use std::fmt::Write;

fn find(
    runs: &[RunResult],
    mode: ExecMode,
    design: Option<IoDesign>,
    threads: usize,
    batch: usize,
    store: StoreKind,
) -> Option<&RunResult> {
    runs.iter().find(|r| {
        r.mode == mode
            && design.is_none_or(|d| r.design == d)
            && r.threads == threads
            && r.batch == batch
            && r.store == store
    })
}

/// Markdown tables: per batch size and I/O design, Threads | Throughput | Longest TXs latency | Total
/// time (the research's layout); then the design comparison and baselines with their ratios. Every
/// heading and column over the state's store names its backend (RocksDB or MDBX).
pub fn render_tables(result: &BenchResult) -> String {
    let tables = Tables::of(result);
    let mut out = String::new();
    tables.intro(&mut out);
    tables.per_design(&mut out);
    tables.designs_compared(&mut out);
    tables.ratios(&mut out);
    tables.end_to_end(&mut out);
    tables.hybrid_race(&mut out);
    tables.disk_evidence(&mut out);
    bal_sizes(result, &mut out);
    read_floors(result, &mut out);
    out
}

/// A bench result's dimensions, as the tables lay them out.
struct Tables<'a> {
    result: &'a BenchResult,
    /// The store of the state benched.
    disk: StoreKind,
    /// Its name in headings.
    backend: &'static str,
    /// Batch sizes, ascending.
    batches: Vec<usize>,
    /// Worker counts of the parallel runs, ascending.
    threads: Vec<usize>,
    /// Designs of the parallel runs over the disk, in run order.
    designs: Vec<IoDesign>,
}

impl<'a> Tables<'a> {
    fn of(result: &'a BenchResult) -> Self {
        let runs = &result.runs;
        let disk = result.disk_store();
        let mut batches: Vec<usize> = runs.iter().map(|r| r.batch).collect();
        batches.sort_unstable();
        batches.dedup();
        let mut threads: Vec<usize> = runs
            .iter()
            .filter(|r| r.mode == ExecMode::Parallel)
            .map(|r| r.threads)
            .collect();
        threads.sort_unstable();
        threads.dedup();
        let mut designs: Vec<IoDesign> = Vec::new();
        for r in runs
            .iter()
            .filter(|r| r.mode == ExecMode::Parallel && r.store == disk)
        {
            if !designs.contains(&r.design) {
                designs.push(r.design);
            }
        }
        Self {
            result,
            disk,
            backend: disk.backend_name(),
            batches,
            threads,
            designs,
        }
    }

    /// The parallel run of `design` with `threads` workers and batch size `batch` over `store`.
    fn parallel(
        &self,
        design: IoDesign,
        threads: usize,
        batch: usize,
        store: StoreKind,
    ) -> Option<&'a RunResult> {
        find(
            &self.result.runs,
            ExecMode::Parallel,
            Some(design),
            threads,
            batch,
            store,
        )
    }

    /// What was run over what, and what throughput means.
    fn intro(&self, out: &mut String) {
        let over = match self.disk {
            StoreKind::Mdbx => "reth's MDBX read in place, commits kept in memory",
            _ if self.result.independent_blocks => {
                "independent blocks, each over a RocksDB state of its own pre-state, read-only, its commit kept in memory"
            }
            _ if self.result.rocksdb_io_uring => {
                "a RocksDB flat state, a hard-link clone per run; multi-gets read each file's blocks through io_uring"
            }
            _ => "a RocksDB flat state, a hard-link clone per run",
        };
        let r = self.result;
        let _ = writeln!(
            out,
            "{} blocks from {} on {} CPUs, over {over}. Throughput = gas / execution-with-I/O time (prefetch + execution; commits excluded, reported apart).\n",
            r.blocks, r.dump, r.cpus
        );
    }

    /// One table per batch size and design: throughput, longest transactions, total time and
    /// cache hit ratio per worker count.
    fn per_design(&self, out: &mut String) {
        let backend = self.backend;
        for &batch in &self.batches {
            for &design in &self.designs {
                let _ = writeln!(out, "### Batch {batch}, {design} I/O ({backend})\n");
                let _ = writeln!(
                    out,
                    "| Threads | Throughput (MGas/s) | Longest TXs Latency | Total Time | Cache hit ratio |"
                );
                let _ = writeln!(out, "| --- | --- | --- | --- | --- |");
                for &t in &self.threads {
                    if let Some(r) = self.parallel(design, t, batch, self.disk) {
                        let _ = writeln!(
                            out,
                            "| {t} | {:.1} | {:.3}s | {:.3}s | {:.1}% |",
                            r.throughput.mgas_per_s,
                            r.timing.longest_txs_s,
                            r.timing.exec_with_io_s,
                            r.cache.hit_ratio() * 100.0
                        );
                    }
                }
                let _ = writeln!(out);
            }
        }
    }

    /// Every design's throughput side by side, with its ratio to full BAL, and the baselines.
    fn designs_compared(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "### Designs compared (throughput, MGas/s; ratio to full BAL)\n"
        );
        let mut header = "| Batch | Threads |".to_string();
        let mut rule = "| --- | --- |".to_string();
        for d in &self.designs {
            header.push_str(&format!(" {d} |"));
            rule.push_str(" --- |");
        }
        header.push_str(&format!(
            " sequential ({}) | parallel in memory |",
            self.backend
        ));
        rule.push_str(" --- | --- |");
        let _ = writeln!(out, "{header}\n{rule}");
        let mgas = |run: Option<&RunResult>| match run {
            Some(r) => format!(" {:.1} |", r.throughput.mgas_per_s),
            None => " - |".into(),
        };
        for &batch in &self.batches {
            for &t in &self.threads {
                let full = self.parallel(IoDesign::Full, t, batch, self.disk);
                let mut row = format!("| {batch} | {t} |");
                for &d in &self.designs {
                    match self.parallel(d, t, batch, self.disk) {
                        Some(r) => match full {
                            Some(f) if f.throughput.mgas_per_s > 0.0 && d != IoDesign::Full => {
                                let range = Interval::of_repeats(r, f)
                                    .map_or(String::new(), |i| format!(", {}", i.range_label()));
                                row.push_str(&format!(
                                    " {:.1} ({:.2}{range}) |",
                                    r.throughput.mgas_per_s,
                                    r.throughput.mgas_per_s / f.throughput.mgas_per_s
                                ))
                            }
                            _ => row.push_str(&format!(" {:.1} |", r.throughput.mgas_per_s)),
                        },
                        None => row.push_str(" - |"),
                    }
                }
                let runs = &self.result.runs;
                row.push_str(&mgas(find(
                    runs,
                    ExecMode::Sequential,
                    None,
                    1,
                    batch,
                    self.disk,
                )));
                row.push_str(&mgas(self.parallel(
                    IoDesign::Parallel,
                    t,
                    batch,
                    StoreKind::Memory,
                )));
                let _ = writeln!(out, "{row}");
            }
        }
        let _ = writeln!(out);
    }

    /// The research's targets: scaling with workers, each design against full BAL, and the disk
    /// against memory.
    fn ratios(&self, out: &mut String) {
        let _ = writeln!(out, "### Ratios (the targets)\n");
        let (disk, backend) = (self.disk, self.backend);
        for &batch in &self.batches {
            let par = |t| self.parallel(IoDesign::Parallel, t, batch, disk);
            if let (Some(t1), Some(t2)) = (par(1), par(2)) {
                let _ = writeln!(
                    out,
                    "- batch {batch}: parallel I/O, 2 threads / 1 thread = {}",
                    ratio(t2, t1)
                );
            }
            for &t in &self.threads {
                // Each design against full BAL, then against the design a validating node would
                // run with a full BAL.
                const COMPARED: [IoDesign; 4] = [
                    IoDesign::FullVerify,
                    IoDesign::Parallel,
                    IoDesign::Hybrid,
                    IoDesign::Batched,
                ];
                // And the on-demand designs against batched I/O (the disk-resident targets:
                // parallel I/O within 0.8 of it, hybrid at or above it).
                for (baseline, designs) in [
                    (IoDesign::Full, &COMPARED[..]),
                    (IoDesign::FullVerify, &COMPARED[1..]),
                    (IoDesign::Batched, &COMPARED[1..3]),
                ] {
                    let Some(base) = self.parallel(baseline, t, batch, disk) else {
                        continue;
                    };
                    for &d in designs {
                        if let Some(r) = self.parallel(d, t, batch, disk) {
                            let _ = writeln!(
                                out,
                                "- batch {batch}, {}: {d} / {baseline} = {}",
                                workers(t),
                                ratio(r, base)
                            );
                        }
                    }
                }
                if let (Some(on_disk), Some(mem)) = (
                    self.parallel(IoDesign::Parallel, t, batch, disk),
                    self.parallel(IoDesign::Parallel, t, batch, StoreKind::Memory),
                ) {
                    let _ = writeln!(
                        out,
                        "- batch {batch}, {}: {backend} / in memory (parallel I/O) = {}",
                        workers(t),
                        ratio(on_disk, mem)
                    );
                }
            }
            // Each design at its best worker count: on a few cores, more workers than cores can
            // help one design (reads overlapped) and hurt another (readers starved).
            let best = |d| {
                self.threads
                    .iter()
                    .filter_map(|&t| self.parallel(d, t, batch, disk))
                    .max_by(|a, b| a.throughput.mgas_per_s.total_cmp(&b.throughput.mgas_per_s))
            };
            if let Some(batched) = best(IoDesign::Batched) {
                for d in [IoDesign::Parallel, IoDesign::Hybrid] {
                    if let Some(r) = best(d) {
                        let _ = writeln!(
                            out,
                            "- batch {batch}, each at its best worker count: {d} / batched = {} ({:.1} MGas/s with {}, against {:.1} with {})",
                            ratio(r, batched),
                            r.throughput.mgas_per_s,
                            workers(r.threads),
                            batched.throughput.mgas_per_s,
                            workers(batched.threads)
                        );
                    }
                }
            }
        }
    }
}

impl Tables<'_> {
    /// The runs over the state's own store (not the in-memory baselines).
    fn disk_runs(&self) -> Vec<&RunResult> {
        self.result
            .runs
            .iter()
            .filter(|r| r.store == self.disk)
            .collect()
    }

    /// Per run over the disk: the research's measure (execution with I/O) beside the whole
    /// replay's throughput, with the phases execution with I/O leaves out.
    fn end_to_end(&self, out: &mut String) {
        let runs = self.disk_runs();
        if runs.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\n### Two numbers: execution with I/O, and end to end ({})\n\nEnd to end is gas over the whole replay's wall time: planning, prefetch, execution, commits and reading the dump.\n",
            self.backend
        );
        let _ = writeln!(
            out,
            "| Run | Execution with I/O (MGas/s) | End to end (MGas/s) | Prefetch (s) | Commit (s) | Wall (s) |\n| --- | --- | --- | --- | --- | --- |"
        );
        for r in runs {
            let _ = writeln!(
                out,
                "| {} | {:.1} | {:.1} | {:.3} | {:.3} | {:.3} |",
                r.label(),
                r.throughput.mgas_per_s,
                r.throughput.end_to_end_mgas_per_s,
                r.timing.prefetch_s,
                r.timing.commit_s,
                r.timing.wall_s
            );
        }
    }

    /// Per hybrid run with task profiles: the race between its prefetch and its tasks, from the
    /// profiles' counts (the tasks' on-demand reads, those the prefetch lost, the lookups it
    /// served).
    fn hybrid_race(&self, out: &mut String) {
        let runs: Vec<_> = self
            .disk_runs()
            .into_iter()
            .filter(|r| r.design == IoDesign::Hybrid && !r.batch_profiles.is_empty())
            .collect();
        if runs.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\n### Hybrid's prefetch against its tasks ({})\n\nFrom the task profiles: the tasks' on-demand reads; of them, those of keys the prefetch was to load and had not loaded yet (lost); and the lookups it served (the first of each value it loaded). Lost plus served is what the prefetch was there for.\n",
            self.backend
        );
        let _ = writeln!(
            out,
            "| Run | On-demand reads | Lost to the prefetch | Served by it | Lost / (lost + served) |\n| --- | --- | --- | --- | --- |"
        );
        for r in runs {
            let tasks = r.batch_profiles.iter().flat_map(|b| &b.tasks);
            let (mut reads, mut lost, mut served) = (0u64, 0u64, 0u64);
            for t in tasks {
                reads += t.reads;
                lost += t.raced;
                served += t.prefetch_hits;
            }
            let share = if lost + served > 0 {
                format!("{:.1}%", 100.0 * lost as f64 / (lost + served) as f64)
            } else {
                "-".into()
            };
            let _ = writeln!(
                out,
                "| {} | {reads} | {lost} | {served} | {share} |",
                r.label(),
            );
        }
    }

    /// Per run over the disk: where its reads were served from, and whether it is disk-resident
    /// (at least 80% of its block lookups reached the device, [`bal_replay_probe::Residency`]).
    fn disk_evidence(&self, out: &mut String) {
        let runs = self.disk_runs();
        if runs.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\n### Where reads were served from ({})\n",
            self.backend
        );
        let _ = writeln!(
            out,
            "{}",
            match self.disk {
                StoreKind::Mdbx =>
                    "Device counters are the state's block device's (every process's reads); \"process\" is this process's `read_bytes`; major faults are reads of MDBX's memory map that waited for the disk. Residency is judged from the block cache's counters (data blocks missed over blocks looked up), which a memory-mapped MDBX state has not: its regime is unknown.\n",
                _ =>
                    "Device counters are the state's block device's (every process's reads); \"process\" is this process's `read_bytes`. \"Stored\" key reads are those of keys in SST files (the others are answered by bloom filters or the memtable). Reads in flight: the device's read time over the run's execution with I/O (the queue depth its reads kept); CPU per device read: the process's CPU over the whole run (execution included) per device read. A run is disk-resident when at least 80% of its block lookups reached the device: with direct reads, the data blocks that missed the block cache; through the page cache, the device's bytes in 4 KiB blocks, at most one per miss. Fewer than 100 key reads read no state.\n",
            }
        );
        let _ = writeln!(
            out,
            "| Run | Key reads | Stored | Device reads | Device reads / key | Reads in flight | Device µs / read | CPU µs / device read | Device MiB | Process MiB | Block-cache misses (data) | Major faults | Reached the device | Regime |"
        );
        let _ = writeln!(
            out,
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        );
        let count = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        let mib =
            |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{:.1}", v as f64 / 1048576.0));
        for r in &runs {
            let d = &r.disk;
            let reached = match d.residency.reached_device {
                Some(share) => format!("{:.0}% ({})", 100.0 * share, d.residency.basis_label()),
                None => d.residency.basis_label().to_string(),
            };
            let misses = match (
                d.block_cache_misses,
                d.block_cache_hits,
                d.block_cache_data_misses,
            ) {
                (Some(m), Some(h), Some(data)) => format!(
                    "{m} ({:.0}%; {data})",
                    100.0 * m as f64 / (m + h).max(1) as f64
                ),
                _ => "-".to_string(),
            };
            let one_decimal = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
            let cpu_per_read = r
                .cpu
                .zip(d.device_reads.filter(|&n| n > 0))
                .map(|(cpu, n)| cpu.process_s * 1e6 / n as f64);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {misses} | {} | {reached} | {} |",
                r.label(),
                d.key_reads,
                count(d.stored_key_reads),
                count(d.device_reads),
                d.device_reads_per_key
                    .map_or("-".to_string(), |v| format!("{v:.2}")),
                one_decimal(d.reads_in_flight(r.timing.exec_with_io_s)),
                one_decimal(d.device_read_latency_us()),
                one_decimal(cpu_per_read),
                mib(d.device_read_bytes),
                mib(d.process_read_bytes),
                count(d.major_faults),
                d.residency.label(),
            );
        }
        pinned_and_memory_limits(&runs, out);
    }
}

/// What stayed in memory beside the runs' reads: the block cache's pinned metadata, and the
/// memory cgroup's charge where the runs had one.
fn pinned_and_memory_limits(runs: &[&RunResult], out: &mut String) {
    let mib =
        |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{:.1}", v as f64 / 1048576.0));
    let pinned: Vec<u64> = runs
        .iter()
        .filter_map(|r| r.disk.block_cache_pinned_bytes)
        .collect();
    if let (Some(least), Some(most)) = (pinned.iter().min(), pinned.iter().max()) {
        let _ = writeln!(
            out,
            "\nRocksDB's block cache held {}-{} MiB pinned at the end of the runs: index and filter blocks served from memory (all of the state's with `--pin-metadata`, else their top levels), beyond the block cache's bound on data blocks.",
            mib(Some(*least)),
            mib(Some(*most))
        );
    }
    let limited: Vec<_> = runs
        .iter()
        .filter_map(|r| r.disk.memory.map(|m| (r.label(), m)))
        .collect();
    if limited.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nThe process ran in a memory cgroup: heap and page cache charged during the run stayed under the limit, so no more of the state than that was served from memory.\n"
    );
    let _ = writeln!(
        out,
        "| Run | Limit MiB | Peak charge MiB | Page cache at end MiB | Limit hits |\n| --- | --- | --- | --- | --- |"
    );
    for (label, m) in limited {
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} |",
            mib(Some(m.limit_bytes)),
            mib(Some(m.max_usage_bytes)),
            mib(Some(m.page_cache_bytes)),
            m.limit_hits
        );
    }
}

/// Mean BAL size per block in each design, against full BAL.
fn bal_sizes(result: &BenchResult, out: &mut String) {
    let s = &result.bal_sizes;
    let _ = writeln!(out, "\n### BAL size (RLP, mean per block)\n");
    let _ = writeln!(out, "| Design | Size | vs full |\n| --- | --- | --- |");
    for (name, v) in [
        ("Full BAL", s.full),
        ("Batched I/O BAL", s.batched),
        ("Parallel I/O BAL", s.parallel),
    ] {
        let _ = writeln!(
            out,
            "| {name} | {:.1} KB | {:.0}% |",
            v / 1000.0,
            100.0 * v / s.full.max(1e-9)
        );
    }
}

/// The floor of a key read at each batch size: what RocksDB alone costs per key, on one thread.
fn read_floors(result: &BenchResult, out: &mut String) {
    if result.read_floors.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n### The floor of a key read (RocksDB alone, one thread, the BALs' keys over the same state)\n"
    );
    let _ = writeln!(
        out,
        "| Batch | Blocks | Keys | Point reads: CPU per key (µs) | Sorted multi-gets: CPU per key (µs) |\n| --- | --- | --- | --- | --- |"
    );
    for floor in &result.read_floors {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.2} | {:.2} |",
            floor.batch,
            floor.blocks,
            floor.point.keys,
            floor.point.cpu_us_per_key(),
            floor.multiget.cpu_us_per_key()
        );
    }
}

/// `numerator / denominator` of the Ratios list, two decimals; where either run was repeated, with
/// the range the repeats allow and whether 1.0 lies in it: "0.59 (0.58-0.60)", "0.98 (0.95-1.03,
/// within noise)".
fn ratio(numerator: &RunResult, denominator: &RunResult) -> String {
    let median = numerator.throughput.mgas_per_s / denominator.throughput.mgas_per_s.max(1e-9);
    match Interval::of_repeats(numerator, denominator) {
        Some(range) => format!("{median:.2} ({})", range.range_label()),
        None => format!("{median:.2}"),
    }
}

/// "1 thread", "2 threads".
fn workers(threads: usize) -> String {
    if threads == 1 {
        "1 thread".into()
    } else {
        format!("{threads} threads")
    }
}
