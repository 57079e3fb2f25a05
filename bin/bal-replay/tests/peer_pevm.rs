//! scripts/peer-pevm.sh's last step, the table (scripts/peer_pevm_table.py), reading the bench
//! result this build writes: its runs' times where the versioned format keeps them.

mod common;

use common::{assert_ok, bal_replay, chain, small_config};
use std::{path::Path, process::Command};

/// `peer_pevm_table.py --bench <json> threads`: each run's workers, fastest and median ms.
fn table_step(json: &Path) -> Vec<(u64, f64, f64)> {
    let script = bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"))
        .join("scripts/peer_pevm_table.py");
    let out = Command::new("python3")
        .arg(script)
        .arg("--bench")
        .arg(json)
        .arg("threads")
        .output()
        .unwrap();
    let stdout = assert_ok(&out, "peer_pevm_table.py --bench");
    stdout
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 3, "{line}");
            (
                fields[0].parse().unwrap(),
                fields[1].parse().unwrap(),
                fields[2].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_table_step_reads_each_runs_times_from_the_bench_json() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = chain(tmp.path(), &small_config(2, 5));
    let json = tmp.path().join("memory.json");
    // As peer-pevm.sh benches a block in memory.
    let out = bal_replay()
        .args(["bench", "--dump"])
        .arg(&dump)
        .arg("--state")
        .arg(&state)
        .args([
            "--threads",
            "1,2",
            "--batch",
            "1",
            "--io",
            "full",
            "--no-baselines",
        ])
        .args(["--repeat", "2", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_ok(&out, "bench");
    let bench: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let runs = bench["runs"].as_array().unwrap();
    let rows = table_step(&json);
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (threads, fastest, median) in rows {
        let run = runs.iter().find(|r| r["threads"] == threads).unwrap();
        let best = run["throughput"]["mgas_per_s_max"].as_f64().unwrap();
        let gas = run["gas"].as_f64().unwrap();
        assert!(best > 0.0 && gas > 0.0, "{run}");
        // Each repeat's execution time, ms: the median of the two is their mean.
        let times: Vec<f64> = run["repeat_mgas_per_s"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| gas / m.as_f64().unwrap() / 1e3)
            .collect();
        assert_eq!(times.len(), 2, "{run}");
        let mean = (times[0] + times[1]) / 2.0;
        assert!((median - mean).abs() < 1e-5, "{median} {times:?}");
        assert!((fastest - gas / best / 1e3).abs() < 1e-5, "{fastest}");
        assert!(fastest <= median + 1e-5, "{fastest} {median}");
    }
}

#[test]
fn the_table_step_refuses_a_bench_json_of_another_version_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("old.json");
    // The format before results were versioned: times at the run's top level.
    std::fs::write(
        &json,
        r#"{"runs": [{"threads": 1, "gas": 1000, "exec_with_io_s": 0.5, "mgas_per_s_max": 1.0}]}"#,
    )
    .unwrap();
    let script = bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"))
        .join("scripts/peer_pevm_table.py");
    let out = Command::new("python3")
        .arg(script)
        .arg("--bench")
        .arg(&json)
        .arg("threads")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        format!(
            "{}: bench result schema version 1, this script reads version 3",
            json.display()
        )
    );
}

/// scripts/peer-pevm-pack.sh writes a new tarball only: a path that exists, or a link, is refused
/// before anything is read or built, and stays as it was.
#[test]
fn the_pack_script_leaves_an_existing_output_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let pevm = tmp.path().join("pevm");
    std::fs::create_dir(&pevm).unwrap();
    let existing = tmp.path().join("users.tar.xz");
    std::fs::write(&existing, b"a user's bytes").unwrap();
    let target = tmp.path().join("target.txt");
    std::fs::write(&target, b"behind the link").unwrap();
    let link = tmp.path().join("link.tar.xz");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let script = bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"))
        .join("scripts/peer-pevm-pack.sh");
    for out_path in [&existing, &link] {
        let out = Command::new("bash")
            .arg(&script)
            .arg(&pevm)
            .arg(out_path)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.trim(),
            format!("{} exists: give a new path", out_path.display())
        );
    }
    assert_eq!(std::fs::read(&existing).unwrap(), b"a user's bytes");
    assert_eq!(std::fs::read(&target).unwrap(), b"behind the link");
    assert!(link.is_symlink());
}
