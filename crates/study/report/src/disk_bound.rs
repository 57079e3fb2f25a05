//! Bench runs against the disk's bound: how near each run that read the state comes to what the
//! disk's random reads allow, and batched I/O's prefetch against fio at its queue depth.

use bal_replay_bench::BenchResult;
use bal_replay_engine::IoDesign;
use bal_replay_probe::device::disk_bound_mgas_per_s;

/// Each run that read the state against the disk's bound ([`disk_bound_mgas_per_s`]): how near
/// the best design comes to what the disk allows. Runs with fewer than 1,000 key reads
/// (full BAL reads only the system contracts' keys) have no bound worth the name.
pub fn render_disk_bound(result: &BenchResult, disk: &bal_replay_model::DiskModel) -> String {
    use std::fmt::Write;
    let best = disk.best_iops();
    let mut out = format!(
        "### Against the disk's bound ({}: best {:.0} IOPS)\n\nBound = gas per device read x the disk's best IOPS: no run can go faster while each of its device reads must be served. Device reads count every process's.\n\n| Run | Device reads per Mgas | Bound (MGas/s) | Measured (MGas/s) | Measured / bound |\n| --- | --- | --- | --- | --- |\n",
        disk.source, best
    );
    for r in result.runs.iter().filter(|r| r.store.is_disk()) {
        let (Some(reads), true) = (r.disk.device_reads, r.disk.key_reads >= 1_000) else {
            continue;
        };
        let Some(bound) = disk_bound_mgas_per_s(r.gas, reads, best) else {
            continue;
        };
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.1} | {:.2} |",
            r.label(),
            reads as f64 / (r.gas as f64 / 1e6),
            bound,
            r.throughput.mgas_per_s,
            r.throughput.mgas_per_s / bound
        );
    }
    out.push('\n');
    out.push_str(&render_prefetch_against_disk(result, disk));
    out
}

/// Batched I/O's prefetch against the disk at the prefetch's queue depth (the target: prefetch
/// throughput at least 0.8 of fio's IOPS at the same queue depth). Only batched I/O: its
/// execution reads nothing from the state, so the run's device reads are its prefetch's, done in
/// `prefetch_s` (the device's counters count every process's reads, and any a commit's flush or
/// compaction makes: the rate is at most the prefetch's own). Hybrid and full-verify read beside
/// execution, which the counters cannot split. The prefetch runs 2 x
/// `io_threads` reader threads, each with one read in flight (a multi-get reads its blocks one
/// after the other without io_uring), and fio is read at that depth. Runs of an io_uring build are
/// left out: there a multi-get submits its blocks at once, and the depth is not the readers'.
fn render_prefetch_against_disk(
    result: &BenchResult,
    disk: &bal_replay_model::DiskModel,
) -> String {
    use std::fmt::Write;
    let mut out = String::from(
        "### Batched I/O's prefetch against the disk at its queue depth\n\nThe run's device reads (every process's) over its prefetch time: execution reads nothing from the state, so this is at most the prefetch's own rate. Set against fio's IOPS at the prefetch's reads in flight: one per reader thread, 2 x `--io-threads`.\n\n| Run | `--io-threads` | Reads in flight | Device reads | Prefetch (s) | Device reads/s | fio IOPS at that depth | Prefetch / fio |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    if result.rocksdb_io_uring {
        out.push_str("| (an io_uring build: a multi-get has more reads in flight than its reader, so no depth to set it against) | | | | | | | |\n");
        return out;
    }
    let mut rows = 0;
    for r in result
        .runs
        .iter()
        .filter(|r| r.store.is_disk() && r.design == IoDesign::Batched && r.timing.prefetch_s > 0.0)
    {
        let (Some(reads), Some(io_threads)) = (r.disk.device_reads, r.io_threads) else {
            continue;
        };
        let depth = 2 * io_threads;
        let rate = reads as f64 / r.timing.prefetch_s;
        let fio = disk.iops_at(depth as f64);
        rows += 1;
        let _ = writeln!(
            out,
            "| {} | {io_threads} | {depth} | {reads} | {:.2} | {rate:.0} | {fio:.0} | {:.2} |",
            r.label(),
            r.timing.prefetch_s,
            rate / fio
        );
    }
    if rows == 0 {
        out.push_str("| (no batched I/O run with device counters) | | | | | | | |\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bal_replay_bench::{
        CacheCounts, Latency, MeanBalSizes, RunResult, RunTiming, StoreKind, Throughput,
    };
    use bal_replay_engine::ExecMode;
    use bal_replay_probe::DiskEvidence;

    fn run(design: IoDesign, mgas: f64, key_reads: u64, device_reads: u64) -> RunResult {
        let gas = 3_000_000_000u64;
        RunResult {
            mode: ExecMode::Parallel,
            design,
            threads: 8,
            batch: 10,
            store: StoreKind::Rocksdb,
            cold: true,
            io_threads: None,
            blocks: 100,
            txs: 10_000,
            gas,
            throughput: Throughput {
                mgas_per_s: mgas,
                end_to_end_mgas_per_s: mgas * 0.8,
                repeats: 1,
                mgas_per_s_min: mgas,
                mgas_per_s_max: mgas,
            },
            repeat_mgas_per_s: Vec::new(),
            timing: RunTiming {
                exec_with_io_s: gas as f64 / (mgas * 1e6),
                prefetch_s: 0.0,
                longest_txs_s: 0.1,
                commit_s: 0.1,
                wall_s: 5.0,
                read_dump_s: None,
            },
            cache: CacheCounts {
                hits: 0,
                misses: key_reads,
                keys_prefetched: 0,
            },
            latency: Latency {
                read_p50_us: 16,
                read_p99_us: 256,
                tx_p50_us: 100,
                tx_p99_us: 1000,
            },
            disk: DiskEvidence {
                device_reads: Some(device_reads),
                key_reads,
                ..Default::default()
            },
            cpu: None,
            batches: Vec::new(),
            batch_profiles: Vec::new(),
        }
    }

    /// A bench result of `runs` over a 100-block dump.
    fn result(runs: Vec<RunResult>) -> BenchResult {
        BenchResult {
            schema_version: bal_replay_bench::SCHEMA_VERSION,
            build_profile: "dev".into(),
            engine_commit: None,
            dump: "dump".into(),
            blocks: 100,
            cpus: 2,
            bal_sizes: MeanBalSizes {
                full: 1.0,
                batched: 1.0,
                parallel: 1.0,
            },
            rocksdb_io_uring: false,
            independent_blocks: false,
            worker_start: None,
            pinned_workers: None,
            dump_identity: None,
            ratios_to_full: Vec::new(),
            read_floors: Vec::new(),
            runs,
        }
    }

    #[test]
    fn runs_that_read_the_state_are_set_against_the_disk_bound() {
        let result = result(vec![
            // 3 Ggas over 100 K device reads at 60 K IOPS: a bound of 1,800 MGas/s.
            run(IoDesign::Parallel, 900.0, 212_000, 100_000),
            // Full BAL reads the system contracts' keys only: no bound worth the name.
            run(IoDesign::Full, 5000.0, 3, 2),
        ]);
        let disk = bal_replay_model::DiskModel::from_spec(60_000.0, 50.0).unwrap();
        let text = render_disk_bound(&result, &disk);
        let parallel = format!(
            "| {} | 33.3 | 1800.0 | 900.0 | 0.50 |",
            result.runs[0].label()
        );
        assert!(text.contains(&parallel), "{text}");
        assert!(!text.contains(&result.runs[1].label()), "{text}");
        assert!(text.contains("best 60000 IOPS"), "{text}");
        // No batched run: the prefetch table says so rather than showing nothing.
        assert!(
            text.contains("(no batched I/O run with device counters)"),
            "{text}"
        );
    }

    #[test]
    fn batched_io_prefetch_is_set_against_fio_at_its_queue_depth() {
        let prefetching = |design| {
            let mut r = run(design, 1000.0, 212_000, 60_000);
            r.io_threads = Some(8);
            r.timing.prefetch_s = 2.0;
            r
        };
        let result = result(vec![
            prefetching(IoDesign::Batched),
            // Hybrid's tasks read on demand beside its prefetch: their device reads are not the
            // prefetch's alone.
            prefetching(IoDesign::Hybrid),
        ]);
        let fio =
            "depth iops mean_latency_us\n1 15000 66\n4 30000 133\n16 40000 400\n64 50000 1280\n";
        let disk = bal_replay_model::DiskModel::parse_fio_table(fio, "fio.txt").unwrap();
        let text = render_prefetch_against_disk(&result, &disk);
        // 60 K device reads in 2 s is 30 K/s; 8 readers each for accounts and slots put at most
        // 16 reads in flight, where fio made 40 K IOPS: 0.75.
        let batched = format!(
            "| {} | 8 | 16 | 60000 | 2.00 | 30000 | 40000 | 0.75 |",
            result.runs[0].label()
        );
        assert!(text.contains(&batched), "{text}");
        assert_eq!(text.matches("| parallel/").count(), 1, "{text}");
        // An io_uring build's multi-gets have more reads in flight than readers: no row.
        let uring = BenchResult {
            rocksdb_io_uring: true,
            ..result
        };
        let text = render_prefetch_against_disk(&uring, &disk);
        assert_eq!(text.matches("| parallel/").count(), 0, "{text}");
        assert!(text.contains("an io_uring build"), "{text}");
    }
}
