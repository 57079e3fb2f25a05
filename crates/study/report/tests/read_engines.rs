//! The read engines' sweep (`bench-db --json`) drawn over fio's curve, from results built here.

use bal_replay_bench::point_reads::{BenchDbReport, BenchDbRow};
use bal_replay_model::DiskModel;
use bal_replay_report::{
    DEFAULT_FONT, ReportOptions, load_bench_db, render_read_engines_markdown,
    write_read_engines_report,
};
use std::path::Path;

/// A row of `threads` readers making `keys_per_s` key reads per second for 2 s, with
/// `device_per_key` device reads per key and 30 µs of CPU per key.
fn row(
    threads: usize,
    keys_per_s: f64,
    device_per_key: f64,
    multiget: Option<usize>,
) -> BenchDbRow {
    let wall_s = 2.0;
    let reads = (keys_per_s * wall_s) as u64;
    BenchDbRow {
        threads,
        reads,
        account_reads: reads / 2,
        slot_reads: reads - reads / 2,
        found: reads,
        wall_s,
        iops: keys_per_s,
        avg_latency_us: threads as f64 / keys_per_s * 1e6,
        cpu_s: reads as f64 * 30e-6,
        cpu_pct: reads as f64 * 30e-6 / wall_s * 100.0,
        device_reads: Some((reads as f64 * device_per_key) as u64),
        multiget_keys: multiget,
        io_uring: false,
        read_syscalls: None,
    }
}

fn sweep(rows: Vec<BenchDbRow>) -> BenchDbReport {
    BenchDbReport {
        backend: bal_replay_bench::StoreKind::Rocksdb,
        path: "/data/state".into(),
        key_scheme: bal_replay_state::KeyScheme::Plain,
        sampled_accounts: 1000,
        sampled_slots: 1000,
        total_accounts: 1_000_000,
        total_slots: 249_000_000,
        cold: true,
        cpus: 2,
        rows,
    }
}

const FIO: &str =
    "depth iops mean_latency_us\n1 15000 66.7\n4 30000 133.3\n16 40000 400\n64 50000 1280\n";

#[test]
fn each_engine_is_set_against_fio_at_its_queue_depth() {
    let point = sweep(vec![
        row(1, 10_000.0, 1.0, None),
        row(16, 30_000.0, 1.0, None),
    ]);
    let multiget = sweep(vec![
        row(16, 36_000.0, 0.9, Some(1024)),
        row(64, 48_000.0, 0.9, Some(1024)),
    ]);
    let disk = DiskModel::parse_fio_table(FIO, "fio.txt").unwrap();
    let text = render_read_engines_markdown(&[point.clone(), multiget.clone()], Some(&disk));
    // Point reads at 1 thread: 10 K keys/s, each a device read, against fio's 15 K at QD 1.
    assert!(
        text.contains(
            "| RocksDB, point reads | 1 | 10000 | 10000 | 1.00 | 30.0 | 15000 | 0.67 | 0.67 |"
        ),
        "{text}"
    );
    // Multi-gets of 1024 at 64 threads: 48 K keys/s, 43.2 K device reads/s, against 50 K.
    assert!(
        text.contains(
            "| RocksDB, sorted multi-get of 1024 | 64 | 48000 | 43200 | 0.90 | 30.0 | 50000 | 0.86 | 0.96 |"
        ),
        "{text}"
    );
    // Without a curve the ratios are dashes, not zeros.
    let bare = render_read_engines_markdown(std::slice::from_ref(&point), None);
    assert!(
        bare.contains("| RocksDB, point reads | 16 | 30000 | 30000 | 1.00 | 30.0 | - | - | - |"),
        "{bare}"
    );

    // The charts need Debian's fonts-dejavu-core; without it this fails, saying so, rather than
    // passing without drawing anything (`.ci/run` installs it).
    assert!(
        Path::new(DEFAULT_FONT).exists(),
        "{DEFAULT_FONT} is missing: install Debian's fonts-dejavu-core (apt-get install fonts-dejavu-core)"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    // Written as `bench-db --json` writes it, and read back as one.
    let json = dir.path().join("sweep.json");
    bal_replay_bench::point_reads::write_json(&[point, multiget], &json).unwrap();
    let reports = load_bench_db(&json).unwrap().expect("a bench-db result");
    assert_eq!(reports.len(), 2);
    let written =
        write_read_engines_report(&reports, Some(&disk), &ReportOptions::new(&out)).unwrap();
    let stems: Vec<&str> = written.charts.iter().map(|c| c.stem.as_str()).collect();
    assert_eq!(stems, ["read-engines-device-reads", "read-engines-keys"]);
    assert!(written.skipped.is_empty(), "{:?}", written.skipped);
    let svg = std::fs::read_to_string(out.join("read-engines-device-reads.svg")).unwrap();
    for label in [
        "RocksDB, point reads",
        "RocksDB, sorted multi-get of 1024",
        "fio: the disk (4 KiB random reads, O_DIRECT)",
    ] {
        assert!(svg.contains(label), "{label} missing from the chart");
    }
    let md = std::fs::read_to_string(&written.markdown).unwrap();
    assert!(md.contains("![Read engines against the disk: device reads per second](read-engines-device-reads.svg)"), "{md}");
    assert!(md.contains("| 0.86 | 0.96 |"), "{md}");
}

#[test]
fn other_results_are_not_taken_for_a_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let bench = dir.path().join("bench.json");
    std::fs::write(&bench, br#"{"dump": "d", "runs": []}"#).unwrap();
    assert!(load_bench_db(&bench).unwrap().is_none());
    // A sweep with a field of the wrong type is named, not skipped.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, br#"[{"backend": "rocksdb", "rows": "none"}]"#).unwrap();
    let err = load_bench_db(&bad).unwrap_err().to_string();
    assert!(err.contains("bad.json"), "{err}");
}

#[test]
fn sweeps_that_differ_are_kept_apart_and_io_uring_is_not_set_against_a_depth() {
    let cold = sweep(vec![row(4, 20_000.0, 1.0, None)]);
    let warm = BenchDbReport {
        cold: false,
        ..sweep(vec![row(4, 200_000.0, 0.0, None)])
    };
    let mut uring_row = row(4, 25_000.0, 1.0, Some(1024));
    uring_row.io_uring = true;
    let uring = sweep(vec![uring_row]);
    let disk = DiskModel::parse_fio_table(FIO, "fio.txt").unwrap();
    let text = render_read_engines_markdown(&[cold, warm, uring], Some(&disk));
    // The cold and warm sweeps of point reads are two engines, the warm one named so.
    assert!(
        text.contains(
            "| RocksDB, point reads | 4 | 20000 | 20000 | 1.00 | 30.0 | 30000 | 0.67 | 0.67 |"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "| RocksDB, point reads, warm | 4 | 200000 | 0 | 0.00 | 30.0 | 30000 | 0.00 | 6.67 |"
        ),
        "{text}"
    );
    // An io_uring multi-get has more reads in flight than its 4 readers: no fio figure.
    assert!(
        text.contains("| RocksDB, sorted multi-get of 1024, io_uring | 4 | 25000 | 25000 | 1.00 | 30.0 | - | - | - |"),
        "{text}"
    );
}
