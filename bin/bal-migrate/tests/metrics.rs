//! A real Prometheus scrapes a real `bal-migrate` run of reth's v1 fixture database: the entries it
//! stores must be the migration's, and every panel of the migration dashboard must find data.

use bal_replay_fixtures::copy_reth_db;
use bal_replay_test_utils::prometheus::{Prometheus, free_port, unix_now};
use std::process::{Command, Stdio};

#[test]
fn prometheus_scrapes_the_migration() {
    // A private, writable copy: MDBX wants its lock file.
    let tmp = tempfile::tempdir().unwrap();
    copy_reth_db("v1", &tmp.path().join("reth")).unwrap_or_else(|e| panic!("{e}"));

    let metrics_port = free_port();
    let prometheus = Prometheus::start("bal-migrate", metrics_port);
    let status = Command::new(env!("CARGO_BIN_EXE_bal-migrate"))
        .arg("--src")
        .arg(tmp.path().join("reth"))
        .arg("--dst")
        .arg(tmp.path().join("flat"))
        .args(["--threads", "1", "--metrics-linger", "10", "--metrics"])
        .arg(format!("127.0.0.1:{metrics_port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run bal-migrate");
    assert!(status.success());
    let live_at = unix_now() - 0.5;

    // The fixture's README: PlainAccountState 64, PlainStorageState 40, Bytecodes 1.
    prometheus.expect_value("sum(max_over_time(bal_migrate_entries_total[10m]))", 105.0);
    let dashboard = bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"))
        .join("docker/grafana/dashboards/migrate.json");
    assert_eq!(prometheus.check_dashboard(&dashboard, live_at), 4);
}
