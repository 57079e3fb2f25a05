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
            "{}: bench result schema version 1, this script reads versions 3, 4, 5, 6 or 7",
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

/// The 16-core study beside the page: peer-pevm.sh's raw outputs at 8 and 16 workers, kept under
/// ../shared (next to the checkout in CI too).
const SIXTEEN_CORES: &str = "../shared/studies/2026-11-28-pevm-16-cores";

/// `python3 scripts/peer_pevm_table.py <args>` from the workspace's root, as the page names it.
fn table_script(args: &[&str]) -> std::process::Output {
    let root = bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"));
    Command::new("python3")
        .current_dir(&root)
        .arg("scripts/peer_pevm_table.py")
        .args(args)
        .output()
        .unwrap()
}

/// docs/peer-pevm.md is what the table script makes of it: the 16-core study's section computed
/// again from that study's raw outputs (the first race, whose raw outputs stayed on its machine,
/// kept as the page has it), its figures those of the study's own table.
#[test]
fn the_peer_page_holds_the_sixteen_core_races_computed_from_their_raw_outputs() {
    let root = bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"));
    let out = table_script(&["--study", "docs/peer-pevm.md", SIXTEEN_CORES]);
    let made = assert_ok(&out, "peer_pevm_table.py --study");
    let page = std::fs::read_to_string(root.join("docs/peer-pevm.md")).unwrap();
    let differ = page.lines().zip(made.lines()).find(|(a, b)| a != b);
    assert!(
        made == page,
        "docs/peer-pevm.md is not what `python3 scripts/peer_pevm_table.py --study \
         docs/peer-pevm.md {SIXTEEN_CORES}` makes (first difference: {differ:?})"
    );
    let begin = format!("<!-- begin: the races of {SIXTEEN_CORES} -->");
    let end = format!("<!-- end: the races of {SIXTEEN_CORES} -->");
    let section = page
        .split(&begin)
        .nth(1)
        .and_then(|rest| rest.split(&end).next())
        .expect("the 16-core study's markers");
    // The study's README table, Mgas/s: Block-STM and our engine from the full BAL at 8 and 16.
    for row in [
        "| pevm, Block-STM | 4098 (4064-4131) | 4015 (3985-4073) |",
        "| ours, engine from the full BAL | 5818 (5368-6299) | 5445 (4963-5908) |",
        "| sequential, warm, ours less the receipts-root check | 0.74 (0.71-0.75) | 0.79 (0.77-0.82) |",
        "| pevm's Block-STM threads | 8 | 8 |",
    ] {
        assert!(section.contains(row), "{row} not in\n{section}");
    }
    for words in [
        "16 cores (Intel(R) Xeon(R) Processor, 125 GiB of memory)",
        "ahead of pevm's Block-STM: 1.42x (1.31-1.53) its speed at 8 workers and 1.36x (1.23-1.47) at 16",
        "at 16 workers it ran 8 threads on 16 CPUs",
        "behind pevm in the runs at 8 and 16 workers: 0.74 (0.71-0.75) and 0.79 (0.77-0.82)",
    ] {
        assert!(section.contains(words), "{words} not in\n{section}");
    }
}

/// The plain table of one of the study's runs (peer-pevm.sh's own print) gives the same figures:
/// at 8 workers, pevm's Block-STM and our engine from the full BAL as the study's README has them.
#[test]
fn the_table_of_the_eight_worker_run_gives_the_studys_figures() {
    let work8 = format!("{SIXTEEN_CORES}/work8");
    let out = table_script(&[&work8, "8"]);
    let stdout = assert_ok(&out, "peer_pevm_table.py work8 8");
    assert!(stdout.contains("8 blocks, 206.5 Mgas;"), "{stdout}");
    assert!(
        stdout.contains("| pevm (Block-STM) | - | 3197 (3171-3218) | - | - | 4098 (4064-4131) |"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "| ours (reference executor; engine from the full BAL) | 1662 (1516-1754) | \
             2076 (1996-2114) | 2361 (2275-2404) | 1861 (1718-2023) | 5818 (5368-6299) |"
        ),
        "{stdout}"
    );
}

/// A study that cannot be read (here, no machine.txt) is refused by name before anything is
/// printed: the page redirected from the script is never half written.
#[test]
fn the_page_step_refuses_a_study_without_its_machine_and_prints_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().to_str().unwrap();
    let out = table_script(&["--study", "docs/peer-pevm.md", study]);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        format!(
            "{}: No such file or directory: a study names its machine there \
             (nproc, /proc/cpuinfo's model name, free -g)",
            tmp.path().join("machine.txt").display()
        )
    );
}
