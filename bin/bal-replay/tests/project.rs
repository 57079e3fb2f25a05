//! `bench --task-profile`, then `project` over its JSON, then `report` over the projection: the
//! real binary end to end, on a small generated chain.

mod common;

use common::{assert_ok, bal_replay, chain, small_config};
use std::{
    path::{Path, PathBuf},
    sync::Mutex,
};

/// Held by each test that profiles runs: a profile taken while another test's runs share the
/// two cores carries their load (a batch's serial part grows), and the projections asserted on
/// below come from it.
static PROFILING: Mutex<()> = Mutex::new(());

fn profiling() -> std::sync::MutexGuard<'static, ()> {
    PROFILING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `bal-replay bench` at 1 and 2 workers, batch 10, without baselines, writing `json`, with
/// `args` (the designs, profiles); returns its tables.
fn bench(dump: &Path, state: &Path, json: &Path, args: &[&str]) -> String {
    let out = bal_replay()
        .args(["bench", "--dump"])
        .arg(dump)
        .arg("--state")
        .arg(state)
        .args(["--threads", "1,2", "--batch", "10", "--no-baselines"])
        .args(args)
        .arg("--json")
        .arg(json)
        .output()
        .unwrap();
    assert_ok(&out, "bench")
}

/// A fio table of two depths in `dir`.
fn fio(dir: &Path) -> PathBuf {
    let fio = dir.join("fio.txt");
    std::fs::write(
        &fio,
        "depth iops mean_latency_us\n1 25000 40\n16 90000 177\n",
    )
    .unwrap();
    fio
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `bal-replay report <projection> --out <charts>`, which must succeed.
fn draw_report(projection: &Path, charts: &Path) {
    let out = bal_replay()
        .arg("report")
        .arg(projection)
        .arg("--out")
        .arg(charts)
        .output()
        .unwrap();
    assert_ok(&out, "report");
}

/// `bal-replay project <bench_json> --disk-table <fio>`.
fn project(bench_json: &Path, fio: &Path) -> std::process::Command {
    let mut command = bal_replay();
    command
        .arg("project")
        .arg(bench_json)
        .arg("--disk-table")
        .arg(fio);
    command
}

/// Runs `command` (a `project` command) with `args` and `--json <json>`, which must succeed
/// (`what` names it if not); returns its tables and the JSON it wrote.
fn project_json(
    mut command: std::process::Command,
    args: &[&str],
    json: &Path,
    what: &str,
) -> (String, serde_json::Value) {
    let out = command.args(args).arg("--json").arg(json).output().unwrap();
    let stdout = assert_ok(&out, what);
    (stdout, read_json(json))
}

type Json = serde_json::Value;

/// One calibration per design (its one-worker run), each the median of the bench's two runs
/// (`bench_runs`), showing their spread.
fn assert_calibrations(report: &Json, bench_runs: &Json, stdout: &str) {
    let calibrations = report["calibrations"].as_array().unwrap();
    assert_eq!(calibrations.len(), 2);
    assert!(
        calibrations
            .iter()
            .all(|c| c["workers"] == 1 && c["batch"] == 10)
    );
    for c in calibrations {
        let run = bench_runs["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["design"] == c["design"] && r["threads"] == 1 && r["batch"] == 10)
            .unwrap();
        let throughput = &run["throughput"];
        assert_eq!(throughput["repeats"], 2);
        assert_eq!(c["runs"], 2, "{c}");
        let spread = throughput["mgas_per_s_max"].as_f64().unwrap()
            / throughput["mgas_per_s_min"].as_f64().unwrap()
            - 1.0;
        assert!(
            (c["spread"].as_f64().unwrap() - spread).abs() < 1e-9,
            "{c}: {spread}"
        );
    }
    assert!(stdout.contains("runs (spread)"), "{stdout}");
    assert!(!stdout.contains("A calibration of one run"), "{stdout}");
}

/// Each check carries both configurations' repeats, as the bench recorded them (`bench_runs`),
/// and the table shows the error between their extremes and where the check stands.
fn assert_check_repeats_and_error_range(checks: &[Json], bench_runs: &Json, stdout: &str) {
    assert!(
        stdout.contains("error between the runs' extremes"),
        "{stdout}"
    );
    for c in checks {
        let run_of = |threads: u64| {
            bench_runs["runs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["design"] == c["design"] && r["threads"] == threads)
                .unwrap()
        };
        for (side, threads) in [("measured_repeats", 2), ("calibration_repeats", 1)] {
            let run = run_of(threads);
            let repeats = &c[side];
            assert_eq!(repeats["runs"], 2, "{c}");
            for (key, bench_key) in [
                ("median_mgas_per_s", "mgas_per_s"),
                ("min_mgas_per_s", "mgas_per_s_min"),
                ("max_mgas_per_s", "mgas_per_s_max"),
            ] {
                assert_eq!(
                    repeats[key], run["throughput"][bench_key],
                    "{c}: {side}.{key}"
                );
            }
        }
        let check: bal_replay_model::Check = serde_json::from_value(c.clone()).unwrap();
        let (low, high) = check.error_range().unwrap();
        let predicted = check.predicted.mgas_per_s(check.gas);
        let f = |r: &Json, k: &str| r["throughput"][k].as_f64().unwrap();
        let (cal, run) = (run_of(1), run_of(2));
        // The prediction from the calibration's slowest repeat against the check's fastest, and
        // the other way round; each side relative to its own median.
        let expected_low = predicted * (f(cal, "mgas_per_s_min") / f(cal, "mgas_per_s"))
            / (check.measured.mgas_per_s(check.gas) * f(run, "mgas_per_s_max")
                / f(run, "mgas_per_s"))
            - 1.0;
        assert!((low - expected_low).abs() < 1e-9, "{low} {expected_low}");
        assert!(low <= check.throughput_error() && check.throughput_error() <= high);
        let verdict = check.verdict().name();
        assert!(
            stdout.contains(&format!("to {:+.1}% | {verdict} |", high * 100.0)),
            "{verdict}: {stdout}"
        );
    }
}

/// Two projections per design on a 16-core target.
fn assert_projections(report: &Json) {
    assert_eq!(report["target"]["cores"], 16.0);
    let projected = |design: &str, workers: u64| {
        let p = report["projections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["design"] == design && p["workers"] == workers)
            .unwrap();
        p["gas"].as_f64().unwrap() / p["predicted"]["exec_with_io_s"].as_f64().unwrap() / 1e6
    };
    // Full BAL is CPU alone: 16 workers on 16 cores go several times faster than one.
    assert!(projected("full", 16) > 3.0 * projected("full", 1));
    assert!(projected("parallel", 1) > 0.0);
}

/// Two inputs: each configuration is checked in both against the first's calibration, each
/// check names its input, and a table sets the two errors side by side (here one bench given
/// twice, written to `twice_json`: the same error twice, 0 points apart). `checks` are the
/// single input's, whose report (`report`, `stdout`) names no input.
fn assert_two_inputs_side_by_side(
    bench_json: &Path,
    fio: &Path,
    twice_json: &Path,
    checks: &[Json],
    report: &Json,
    stdout: &str,
) {
    let (twice_out, twice) = project_json(
        {
            let mut command = project(bench_json, fio);
            command.arg(bench_json);
            command
        },
        &[],
        twice_json,
        "project with two inputs",
    );
    let inputs = twice["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 2);
    let twice_checks = twice["checks"].as_array().unwrap();
    assert_eq!(twice_checks.len(), 4);
    for input in [0, 1] {
        assert_eq!(
            twice_checks.iter().filter(|c| c["input"] == input).count(),
            2,
            "{twice}"
        );
    }
    assert!(twice_out.contains("| input | design |"), "{twice_out}");
    assert!(
        twice_out.contains("The same configuration in each input"),
        "{twice_out}"
    );
    for c in checks {
        let check: bal_replay_model::Check = serde_json::from_value(c.clone()).unwrap();
        let error = format!("{:+.1}%", check.throughput_error() * 100.0);
        let row = format!(
            "| {} | 10 | 2 | {error} | {error} | 0.0 points |",
            c["design"].as_str().unwrap()
        );
        assert!(twice_out.contains(&row), "{row}: {twice_out}");
    }
    // A single input's report names none.
    assert!(report["inputs"].is_null() || report["inputs"].as_array().unwrap().len() == 1);
    assert!(!stdout.contains("| input |"), "{stdout}");
}

/// The profiling bench measured what starting a worker costs, and the model started the
/// workers at that cost.
fn assert_worker_start_and_task_cpu(
    bench_json: &Path,
    report: &Json,
    checks: &[Json],
    stdout: &str,
) {
    let bench_result = read_json(bench_json);
    let start = &bench_result["worker_start"];
    let spawn_ns = start["spawn_ns"].as_f64().unwrap();
    assert!(spawn_ns > 500.0 && spawn_ns < 1e6, "{start}");
    assert_eq!(&report["measured_on"]["worker_start"], start);
    assert!(
        stdout.contains("Workers are started as the engine starts them"),
        "{stdout}"
    );
    for check in checks {
        // Both sides of the task CPU column are there: the run's and the profile's.
        for side in ["measured", "predicted"] {
            assert!(check[side]["task_cpu_s"].as_f64().unwrap() > 0.0, "{check}");
        }
    }
}

/// `report` over `projection` draws what each line is, in `dir`/charts; over `twice_json` (the
/// bench given twice) it draws the first input's runs only: the same chart.
fn assert_report_charts(dir: &Path, projection: &Path, twice_json: &Path) {
    let charts = dir.join("charts");
    draw_report(projection, &charts);
    let checked = std::fs::read_to_string(charts.join("model-checked-batch10.svg")).unwrap();
    assert!(checked.contains("parallel I/O, measured"));
    assert!(checked.contains("parallel I/O, predicted (model)"));
    // Parallel I/O reads on demand, full BAL does not: only the former has a reads chart line.
    let reads = std::fs::read_to_string(charts.join("model-reads-batch10.svg")).unwrap();
    assert!(reads.contains("parallel I/O, measured"));
    assert!(reads.contains("parallel I/O, predicted (model)"));
    assert!(!reads.contains("full BAL"));
    let projected = std::fs::read_to_string(charts.join("model-projected-batch10.svg")).unwrap();
    assert!(projected.contains("parallel I/O, projected (model)"));
    // The research published parallel I/O at batch 10 and 16 threads.
    assert!(projected.contains("parallel I/O, research (published)"));
    let twice_charts = dir.join("twice-charts");
    draw_report(twice_json, &twice_charts);
    assert_eq!(
        std::fs::read_to_string(twice_charts.join("model-checked-batch10.svg")).unwrap(),
        checked
    );
    let md = std::fs::read_to_string(charts.join("projection.md")).unwrap();
    assert!(
        md.contains("| parallel | 10 | 16 |") && md.contains("| 6842 |"),
        "{md}"
    );
}

#[test]
fn project_checks_the_model_and_report_draws_what_each_line_is() {
    let _profiling = profiling();
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = chain(tmp.path(), &small_config(20, 3));
    let bench_json = tmp.path().join("bench.json");
    bench(
        &dump,
        &state,
        &bench_json,
        &["--io", "full,parallel", "--task-profile", "--repeat", "2"],
    );
    let fio = fio(tmp.path());
    let projection = tmp.path().join("projection.json");
    let (stdout, report) = project_json(
        project(&bench_json, &fio),
        &["--research-machine", "--target-workers", "1,16"],
        &projection,
        "project",
    );
    assert!(stdout.contains("Predicted against measured"), "{stdout}");
    assert!(
        stdout.contains("the research's RocksDB random reads (its ioarena table, threads as depth): QD2 12000, QD4 30000, QD8 85000, QD16 180000, QD32 320000"),
        "{stdout}"
    );

    // One calibration per design, one check per other run (2 workers), two projections per
    // design.
    let bench_runs = read_json(&bench_json);
    assert_calibrations(&report, &bench_runs, &stdout);
    let checks = report["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    assert!(checks.iter().all(|c| c["workers"] == 2));
    assert_check_repeats_and_error_range(checks, &bench_runs, &stdout);
    assert_projections(&report);

    let twice_json = tmp.path().join("twice.json");
    assert_two_inputs_side_by_side(&bench_json, &fio, &twice_json, checks, &report, &stdout);
    assert_worker_start_and_task_cpu(&bench_json, &report, checks, &stdout);
    assert_report_charts(tmp.path(), &projection, &twice_json);
}

#[test]
fn project_without_profiles_or_with_a_bad_disk_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = chain(tmp.path(), &small_config(4, 9));
    let bench_json = tmp.path().join("bench.json");
    bench(&dump, &state, &bench_json, &["--io", "full,parallel"]);
    let fio = tmp.path().join("fio.txt");
    std::fs::write(&fio, "depth iops\n1 25000\n").unwrap();
    let out = project(&bench_json, &fio).output().unwrap();
    assert_ok(&out, "project");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("full at batch 10: no one-worker run with a task profile"),
        "{stderr}"
    );

    std::fs::write(&fio, "depth iops\n1 25000\n4 fast\n").unwrap();
    let out = project(&bench_json, &fio).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:3: expected `depth iops", fio.display())),
        "{stderr}"
    );
}

#[test]
fn run_json_carries_a_profile_per_batch_only_when_asked() {
    let _profiling = profiling();
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = chain(tmp.path(), &small_config(6, 4));
    let json = |name: &str, profile: bool| {
        let path = tmp.path().join(name);
        let mut command = bal_replay();
        command
            .args([
                "run",
                "--rewind",
                "--batch",
                "4",
                "--threads",
                "2",
                "--dump",
            ])
            .arg(&dump)
            .arg("--state")
            .arg(&state)
            .arg("--json")
            .arg(&path);
        if profile {
            command.arg("--task-profile");
        }
        assert_ok(&command.output().unwrap(), "run");
        read_json(&path)
    };
    let plain = json("plain.json", false);
    assert!(plain.get("batch_profiles").is_none());
    let profiled = json("profiled.json", true);
    let batches = profiled["batch_profiles"].as_array().unwrap();
    // 6 blocks in batches of 4: two batches, the first of blocks 1..=4.
    assert_eq!(batches.len(), 2);
    assert_eq!(profiled["batches"], 2);
    let tasks = |b: &serde_json::Value| b["tasks"]["cpu_ns"].as_array().unwrap().len() as u64;
    let txs = profiled["transactions"].as_u64().unwrap();
    // Every transaction and each block's pre- and post-block task.
    assert_eq!(tasks(&batches[0]) + tasks(&batches[1]), txs + 2 * 6);
    let gas: u64 = batches
        .iter()
        .flat_map(|b| b["tasks"]["gas"].as_array().unwrap())
        .map(|g| g.as_u64().unwrap())
        .sum();
    assert_eq!(gas, profiled["gas"].as_u64().unwrap());
}

/// `bench` of the hybrid design with task profiles into `dir`/hybrid.json, whose race table sums
/// each run's task profiles; returns the JSON's path.
fn bench_hybrid(dir: &Path, dump: &Path, state: &Path) -> PathBuf {
    let json = dir.join("hybrid.json");
    let stdout = bench(dump, state, &json, &["--io", "hybrid", "--task-profile"]);
    assert!(
        stdout.contains("### Hybrid's prefetch against its tasks"),
        "{stdout}"
    );
    for run in read_json(&json)["runs"].as_array().unwrap() {
        assert_eq!(run["design"], "hybrid", "{run}");
        // The race table sums the run's task profiles.
        let sum = |column: &str| task_column_sum(run, column);
        let row = format!(
            "| {} | {} | {} |",
            sum("reads"),
            sum("raced"),
            sum("prefetch_hits")
        );
        assert!(sum("prefetch_hits") > 0, "{run}");
        assert!(stdout.contains(&row), "{row} not in {stdout}");
    }
    json
}

/// The projection of hybrid's bench (`report`, its tables `stdout`): calibrated on its one-worker
/// run of one repeat, its two-worker run checked with the on-demand reads measured and
/// predicted, and projected.
fn assert_hybrid_checked_and_projected(report: &Json, stdout: &str) {
    assert!(stdout.contains("| hybrid | 10 | 2 |"), "{stdout}");
    // One run of each: no spread to show, and the note says what that leaves unseen.
    assert!(stdout.contains(" | 1 |\n"), "{stdout}");
    assert!(stdout.contains("A calibration of one run"), "{stdout}");
    assert!(
        report["calibrations"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["runs"] == 1 && c["spread"].is_null())
    );
    // Calibrated on its one-worker run, and its two-worker run checked, with the on-demand reads
    // measured and predicted.
    let designs = |list: &str| -> Vec<String> {
        report[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["design"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(designs("calibrations"), ["hybrid"]);
    assert_eq!(designs("checks"), ["hybrid"]);
    for check in report["checks"].as_array().unwrap() {
        assert!(check["measured"]["on_demand_reads"].as_f64().unwrap() > 0.0);
        assert!(check["predicted"]["on_demand_reads"].as_f64().unwrap() > 0.0);
    }
    // Projected once per target worker count.
    let projections = report["projections"].as_array().unwrap();
    assert_eq!(projections.len(), 2);
    assert!(projections.iter().all(|p| p["design"] == "hybrid"));
}

#[test]
fn hybrid_is_checked_with_its_reads_and_projected() {
    let _profiling = profiling();
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = chain(tmp.path(), &small_config(20, 5));
    let hybrid = bench_hybrid(tmp.path(), &dump, &state);
    let fio = fio(tmp.path());
    let projection = tmp.path().join("projection.json");
    let (stdout, report) = project_json(
        project(&hybrid, &fio),
        &["--research-machine", "--target-workers", "1,16"],
        &projection,
        "project",
    );
    assert_hybrid_checked_and_projected(&report, &stdout);
    // The reads chart draws the measured reads beside the predicted.
    let charts = tmp.path().join("charts");
    draw_report(&projection, &charts);
    let reads = std::fs::read_to_string(charts.join("model-reads-batch10.svg")).unwrap();
    assert!(reads.contains("hybrid, predicted (model)"));
    assert!(reads.contains("hybrid, measured"));
}

/// One column of a bench JSON run's task profiles, summed over its batches.
fn task_column_sum(run: &serde_json::Value, column: &str) -> u64 {
    run["batch_profiles"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["tasks"][column].as_array().unwrap())
        .map(|v| v.as_u64().unwrap())
        .sum()
}

/// `bench_json` with the first profiled run's first `tasks` tasks reading `reads` each, written
/// to `crafted`; returns the field's path.
fn craft_reads(bench_json: &Path, crafted: &Path, tasks: usize, reads: u64) -> String {
    let mut bench = read_json(bench_json);
    let runs = bench["runs"].as_array_mut().unwrap();
    let i = runs
        .iter()
        .position(|r| {
            r["batch_profiles"]
                .as_array()
                .is_some_and(|b| !b.is_empty())
        })
        .unwrap();
    let column = runs[i]["batch_profiles"][0]["tasks"]["reads"]
        .as_array_mut()
        .unwrap();
    assert!(column.len() >= tasks);
    for read in &mut column[..tasks] {
        *read = reads.into();
    }
    std::fs::write(crafted, serde_json::to_vec(&bench).unwrap()).unwrap();
    format!("runs[{i}].batch_profiles[0].tasks.reads[0]")
}

/// Reads no task can make, in a real bench's file: two tasks of 2^64 - 1 (which overflowed the
/// model's sums) and one of 10^12 (which kept `project` simulating for minutes) are refused at
/// once, naming the file and the field.
#[test]
fn project_refuses_crafted_reads_naming_the_file_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = chain(tmp.path(), &small_config(4, 7));
    let bench_json = tmp.path().join("bench.json");
    bench(
        &dump,
        &state,
        &bench_json,
        &["--io", "parallel", "--task-profile"],
    );
    let fio = fio(tmp.path());
    let crafted = tmp.path().join("crafted.json");
    for (tasks, reads) in [(2, u64::MAX), (1, 1_000_000_000_000)] {
        let field = craft_reads(&bench_json, &crafted, tasks, reads);
        let start = std::time::Instant::now();
        let out = project(&crafted, &fio).output().unwrap();
        assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        let expected = format!(
            "{}: {field} = {reads}: expected at most ",
            crafted.display()
        );
        assert!(
            stderr.contains(&expected) && stderr.contains("gas a read for the task's"),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
