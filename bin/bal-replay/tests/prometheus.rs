//! A real Prometheus (Debian's package) scrapes a real `bal-replay run`; the values it stores must be
//! the run's own totals, and every panel of the replay dashboard must find data.

use bal_replay_test_utils::prometheus::{Prometheus, free_port, unix_now};
use std::process::{Command, Stdio};

#[test]
fn prometheus_scrapes_the_run_totals() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("dump");
    let state = tmp.path().join("state");
    let config = bal_replay_synth::GeneratorConfig {
        blocks: 6,
        accounts: 2_000,
        holders_per_token: 200,
        gas_per_block: 5_000_000,
        ..Default::default()
    };
    bal_replay_synth::generate(&config, &dump, &state, None).unwrap();

    let metrics_port = free_port();
    let prometheus = Prometheus::start("bal-replay", metrics_port);
    let summary_path = tmp.path().join("summary.json");
    let status = Command::new(env!("CARGO_BIN_EXE_bal-replay"))
        .args([
            "run",
            "--threads",
            "2",
            "--batch",
            "2",
            "--io",
            "hybrid",
            "--metrics-linger",
            "10",
        ])
        .arg("--dump")
        .arg(&dump)
        .arg("--state")
        .arg(&state)
        .arg("--metrics")
        .arg(format!("127.0.0.1:{metrics_port}"))
        .arg("--json")
        .arg(&summary_path)
        .stderr(Stdio::null())
        .status()
        .expect("run bal-replay");
    assert!(status.success());
    // The run lingered 10 s after replaying, scraped every second: just before it exited, its final
    // values were live with several samples in any 1-minute window.
    let live_at = unix_now() - 0.5;
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary_path).unwrap()).unwrap();
    let expect = |key: &str| summary[key].as_f64().unwrap();
    let disk = |key: &str| summary["disk"][key].as_f64().unwrap();
    assert_eq!(expect("blocks"), 6.0);
    // Where the reads were served from: RocksDB counted its key reads, and a state of a few MB,
    // read through the page cache, is not disk-resident.
    assert!(disk("key_reads") > 0.0, "{summary}");
    assert!(disk("block_cache_hits") + disk("block_cache_misses") > 0.0);
    assert_eq!(
        summary["disk"]["residency"]["disk_resident"],
        serde_json::Value::Bool(false)
    );
    // This machine's kernel allows io_uring: the run says its multi-gets read through it.
    assert_eq!(summary["read_path"]["path"], "io_uring", "{summary}");
    for key in [
        "device_reads",
        "device_read_bytes",
        "process_read_bytes",
        "major_faults",
    ] {
        assert!(
            summary["disk"].get(key).is_some(),
            "{key} missing from {summary}"
        );
    }

    for (metric, key) in [
        ("bal_replay_gas_total", "gas"),
        ("bal_replay_transactions_total", "transactions"),
        ("bal_replay_blocks_total", "blocks"),
        ("bal_replay_batches_total", "batches"),
    ] {
        prometheus.expect_last_value(metric, expect(key));
    }
    for (metric, key) in [
        ("bal_replay_cache_hits_total", "hits"),
        ("bal_replay_cache_misses_total", "misses"),
    ] {
        prometheus.expect_last_value(metric, summary["cache"][key].as_f64().unwrap());
    }
    prometheus.expect_last_value("bal_replay_batch_duration_seconds_count", expect("batches"));
    // Both failure counters are exported from the first scrape, and apart: a clean run has neither.
    prometheus.expect_last_value("bal_replay_verification_failures_total", 0.0);
    prometheus.expect_last_value("bal_replay_store_errors_total", 0.0);
    prometheus.expect_last_value("bal_replay_disk_resident", 0.0);
    assert!(
        prometheus
            .value("max_over_time(bal_replay_resident_memory_bytes[10m])")
            .is_some_and(|b| b > 1e6)
    );

    let dashboard = bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"))
        .join("docker/grafana/dashboards/replay.json");
    assert!(prometheus.check_dashboard(&dashboard, live_at) >= 20);
}
