//! Numbers no run records, in a result file or on `project`'s command line, are refused naming
//! the file and field, or the option, before anything is drawn or simulated: a throughput of
//! 1.7e308, a residual of -1, a median of 0 or a wall time of 5e-324 kept `report`'s charts
//! spinning, and a target speed of 0 or a disk of 1e-300 IOPS projected nonsense with exit 0.

mod common;

use common::{assert_ok, bal_replay};
use std::path::{Path, PathBuf};

/// A golden result file of the workspace (`crates/<crate>/tests/golden/<name>`).
fn golden(krate: &str, name: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates")
        .join(krate)
        .join("tests/golden")
        .join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// `value` written to `dir/name`.
fn write(dir: &Path, name: &str, value: &serde_json::Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(value).unwrap()).unwrap();
    path
}

/// `report <input> --out <dir>/charts`: refused, its stderr; nothing drawn.
fn report_refused(dir: &Path, input: &Path) -> String {
    let charts = dir.join("charts");
    let out = bal_replay()
        .arg("report")
        .arg(input)
        .arg("--out")
        .arg(&charts)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "report drew {}: {stderr}",
        input.display()
    );
    let drawn = std::fs::read_dir(&charts).map_or(0, |d| d.count());
    assert_eq!(drawn, 0, "{stderr}");
    stderr
}

#[test]
fn report_refuses_numbers_no_run_records_naming_the_file_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = golden("measurement/bench", "bench-result-v3.json");
    let projection = golden("study/projection", "projection-v2.json");
    let bench_db = golden("measurement/bench", "bench-db-result-v2.json");

    // The golden files themselves are drawn.
    let good = write(tmp.path(), "good.json", &bench);
    let out = bal_replay()
        .arg("report")
        .arg(&good)
        .arg("--out")
        .arg(tmp.path().join("good"))
        .output()
        .unwrap();
    assert_ok(&out, "report over the golden bench result");

    let mgas = "expected a number from 1e-6 to 1e7 (Mgas/s of a run that replayed gas)";
    let mut cases: Vec<(&str, serde_json::Value, String)> = Vec::new();
    for (value, written) in [(1.7e308, "1.7e308"), (0.0, "0")] {
        let mut crafted = bench.clone();
        crafted["runs"][0]["throughput"]["mgas_per_s"] = value.into();
        cases.push((
            "bench.json",
            crafted,
            format!("runs[0].throughput.mgas_per_s = {written}: {mgas}"),
        ));
    }
    let mut crafted = projection.clone();
    crafted["calibrations"][0]["calibration"]["residual"] = (-1.0).into();
    cases.push((
        "projection.json",
        crafted,
        "calibrations[0].calibration.residual = -1: expected a number from -0.999999999 to 1e6"
            .into(),
    ));
    let mut crafted = projection.clone();
    crafted["calibrations"][0]["repeats"]["median_mgas_per_s"] = 0.into();
    cases.push((
        "projection.json",
        crafted,
        format!("calibrations[0].repeats.median_mgas_per_s = 0: {mgas}"),
    ));
    let mut crafted = bench_db.clone();
    crafted["stores"][0]["rows"][0]["wall_s"] = 5e-324.into();
    cases.push((
        "bench-db.json",
        crafted,
        "stores[0].rows[0].wall_s = 5e-324: expected a number from 1e-9 to 1e7".into(),
    ));
    for (name, crafted, expected) in cases {
        let path = write(tmp.path(), name, &crafted);
        let stderr = report_refused(tmp.path(), &path);
        assert!(
            stderr.contains(&format!("{}: {expected}", path.display())),
            "{stderr}"
        );
    }
}

/// A fio table of two depths in `dir`.
fn fio(dir: &Path, text: &str) -> PathBuf {
    let fio = dir.join("fio.txt");
    std::fs::write(&fio, text).unwrap();
    fio
}

/// `project <golden bench> --disk-table <fio> --research-machine <args>`: refused, its stderr.
fn project_refused(dir: &Path, fio: &Path, args: &[&str]) -> String {
    let bench = write(
        dir,
        "bench.json",
        &golden("measurement/bench", "bench-result-v3.json"),
    );
    let out = bal_replay()
        .arg("project")
        .arg(&bench)
        .arg("--disk-table")
        .arg(fio)
        .arg("--research-machine")
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    stderr
}

#[test]
fn project_refuses_target_figures_and_disk_tables_no_machine_has() {
    let tmp = tempfile::tempdir().unwrap();
    let good = fio(tmp.path(), "depth iops\n1 25000\n16 90000\n");
    for (args, expected) in [
        (
            &["--target-cpu-speed", "0"][..],
            "--target-cpu-speed 0: expected a number from 0.001 to 1000",
        ),
        (
            &["--target-cpu-speed", "NaN"],
            "--target-cpu-speed NaN: expected",
        ),
        (
            &["--target-cpu-speed", "inf"],
            "--target-cpu-speed inf: expected",
        ),
        (
            &["--target-read-cpu-us", "NaN"],
            "--target-read-cpu-us NaN: expected a number from 0.001 to 1e6",
        ),
        (
            &["--target-read-cpu-us", "inf"],
            "--target-read-cpu-us inf: expected",
        ),
        (
            &["--target-read-cpu-us", "1e300"],
            "--target-read-cpu-us 1e300: expected",
        ),
        (
            &[
                "--target-cores",
                "16",
                "--target-iops",
                "1e-300",
                "--target-latency-us",
                "85",
            ],
            "a disk needs IOPS from 1 to 1e12 and a latency from 0.01 to 1e7 µs",
        ),
    ] {
        let stderr = project_refused(tmp.path(), &good, args);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }

    // A row of an IOPS no disk has: refused on its line, never a latency of hundreds of digits.
    let tiny = fio(tmp.path(), "depth iops\n1 25000\n1 1e-300\n");
    let stderr = project_refused(tmp.path(), &tiny, &[]);
    assert!(
        stderr.contains(&format!(
            "{}:3: expected `depth iops [mean_latency_us]` with depth from 1 to 65536 and iops \
             from 1 to 1e12, got \"1 1e-300\"",
            tiny.display()
        )),
        "{stderr}"
    );
    // A million rows: refused before it is read whole.
    let rows: String = (0..1_000_000)
        .map(|i| format!("{} 1000\n", 1 + i % 60_000))
        .collect();
    let huge = fio(tmp.path(), &rows);
    let stderr = project_refused(tmp.path(), &huge, &[]);
    assert!(
        stderr.contains(&format!(
            "{}: larger than 1048576 bytes, more than a disk's curve takes",
            huge.display()
        )),
        "{stderr}"
    );
    // Ten thousand and one rows, within the size: refused by their count.
    let rows: String = (0..10_001)
        .map(|i| format!("{} 1000\n", 1 + i % 60_000))
        .collect();
    let many = fio(tmp.path(), &rows);
    let stderr = project_refused(tmp.path(), &many, &[]);
    assert!(
        stderr.contains(&format!(
            "{}: more than 10000 `depth iops` lines",
            many.display()
        )),
        "{stderr}"
    );
}
