//! A study of a small generated chain, end to end: the page's headline table is recomputed here
//! from the bench JSON the study wrote beside it, number by number, and its scratch space is a
//! fresh directory of its own.

use bal_replay_bench::{BenchResult, RunResult};
use bal_replay_engine::{ExecMode, IoDesign};
use bal_replay_study::{StudyOptions, run_study};
use bal_replay_synth::{GeneratorConfig, generate};
use std::{num::NonZeroUsize, path::Path};

fn n(v: usize) -> NonZeroUsize {
    NonZeroUsize::new(v).unwrap()
}

/// The fastest parallel run of `design` at `batch`, read straight from the JSON.
fn fastest(bench: &BenchResult, design: IoDesign, batch: usize) -> &RunResult {
    bench
        .runs
        .iter()
        .filter(|r| r.mode == ExecMode::Parallel && r.design == design && r.batch == batch)
        .max_by(|a, b| a.throughput.mgas_per_s.total_cmp(&b.throughput.mgas_per_s))
        .expect("the design ran")
}

/// The cells of the headline table's row that starts with `name`.
fn row<'a>(page: &'a str, name: &str) -> Vec<&'a str> {
    let line = page
        .lines()
        .find(|l| l.starts_with(&format!("| {name} |")))
        .unwrap_or_else(|| panic!("no row {name} in\n{page}"));
    line.trim_matches('|').split(" | ").map(str::trim).collect()
}

#[test]
fn the_page_is_recomputed_from_its_bench_json() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, state, out) = (
        dir.path().join("dump"),
        dir.path().join("state"),
        dir.path().join("findings"),
    );
    let config = GeneratorConfig {
        blocks: 4,
        accounts: 500,
        holders_per_token: 50,
        gas_per_block: 3_000_000,
        ..GeneratorConfig::default()
    };
    generate(&config, &dump, &state, None).unwrap();
    let options = StudyOptions {
        quick: true,
        threads: Some(vec![n(1), n(2)]),
        batches: Some(vec![n(1), n(2)]),
        repeat: Some(n(2)),
        fio: false,
        disk: None,
        out: out.clone(),
        command: "bal-replay study (test)".into(),
        title: None,
        from_bench: None,
        drop_caches: false,
        sweep: false,
    };
    let mut runs = 0;
    let output = run_study(&dump, &state, &options, |_| runs += 1).unwrap();
    // 5 designs x 2 thread counts x 2 batches x 2 repeats.
    assert_eq!(runs, 40);
    assert_eq!(output.page, out.join("findings.md"));
    assert!(out.join("frontier.svg").exists());

    let bench: BenchResult =
        serde_json::from_slice(&std::fs::read(&output.bench_json).unwrap()).unwrap();
    let page = std::fs::read_to_string(&output.page).unwrap();
    assert!(page.contains(&output.answer), "the answer is on the page");
    assert!(page.contains("## Each design against full BAL, batch 2"));
    assert_headline(&page, &bench);
    // Sizes: parallel I/O's diffs are smaller than the protocol's BAL, which is smaller than full.
    let size = |name| row(&page, name)[1].parse::<f64>().unwrap();
    assert!(size("parallel I/O") < size("batched I/O"));
    assert!(size("batched I/O") < size("full BAL"));
    assert!(is_fresh(dir.path(), &out));
    assert_left_out(&page, &bench);

    // The page again from the runs' JSON, nothing replayed: the same page.
    let again = dir.path().join("again");
    let mut replayed = 0;
    run_study(
        &dump,
        &state,
        &StudyOptions {
            out: again.clone(),
            from_bench: Some(output.bench_json.clone()),
            ..options.clone()
        },
        |_| replayed += 1,
    )
    .unwrap();
    assert_eq!(replayed, 0);
    assert_eq!(
        std::fs::read_to_string(again.join("findings.md")).unwrap(),
        page
    );

    // With the disk's curve, the same runs projected onto the research's machine.
    let table = dir.path().join("fio.txt");
    std::fs::write(
        &table,
        "depth iops mean_latency_us\n1 12000 83.0\n4 40000 100.0\n16 90000 178.0\n64 110000 580.0\n",
    )
    .unwrap();
    assert_bad_disk_refused(&dump, &state, &options, &output.bench_json);
    let output = run_study(
        &dump,
        &state,
        &StudyOptions {
            out: dir.path().join("projected"),
            from_bench: Some(output.bench_json.clone()),
            disk: Some(table.clone()),
            ..options.clone()
        },
        |_| replayed += 1,
    )
    .unwrap();
    assert_eq!(replayed, 0);
    let page = std::fs::read_to_string(&output.page).unwrap();
    assert_projected(&page, &bench);

    assert_given_disk_kept_apart(&dump, &state, &options, &output.bench_json, &table);
}

/// A table the user gave (`--disk`) is kept as given, apart from a measured one, and the page
/// says so; a page computed again from those runs without `--disk` does not take it for the
/// disk the runs ran on.
fn assert_given_disk_kept_apart(
    dump: &Path,
    state: &Path,
    options: &StudyOptions,
    bench_json: &Path,
    table: &Path,
) {
    let kept = bench_json.with_file_name(bal_replay_study::GIVEN_DISK_TABLE);
    assert_eq!(
        std::fs::read_to_string(&kept).unwrap(),
        std::fs::read_to_string(table).unwrap()
    );
    assert!(
        !bench_json
            .with_file_name(bal_replay_study::DISK_TABLE)
            .exists()
    );
    let page = std::fs::read_to_string(bench_json.with_file_name("findings.md")).unwrap();
    assert!(
        page.contains(&format!(
            "given by the user with --disk ({}, kept as disk-given.txt), not measured",
            table.display()
        )),
        "{page}"
    );
    let again = run_study(
        dump,
        state,
        &StudyOptions {
            out: options.out.with_file_name("again-given"),
            from_bench: Some(bench_json.to_path_buf()),
            ..options.clone()
        },
        |_| panic!("nothing is replayed"),
    )
    .unwrap();
    let page = std::fs::read_to_string(&again.page).unwrap();
    assert!(
        page.contains("left out: no disk curve") && !page.contains("given by the user"),
        "{page}"
    );
}

/// The headline table's measured cells of each design, recomputed from the bench's JSON.
fn assert_headline(page: &str, bench: &BenchResult) {
    let full = fastest(bench, IoDesign::Full, 2);
    for (design, name) in [
        (IoDesign::Full, "full BAL"),
        (IoDesign::Batched, "batched I/O"),
        (IoDesign::Parallel, "parallel I/O"),
        (IoDesign::Hybrid, "hybrid"),
    ] {
        let run = fastest(bench, design, 2);
        let cells = row(page, name);
        assert_eq!(cells[4], run.threads.to_string(), "{name}: threads");
        assert_eq!(
            cells[5],
            format!("{:.1}", run.throughput.mgas_per_s),
            "{name}: Mgas/s"
        );
        let share = run.throughput.mgas_per_s / full.throughput.mgas_per_s;
        let low = run.throughput.mgas_per_s_min / full.throughput.mgas_per_s_max;
        let high = run.throughput.mgas_per_s_max / full.throughput.mgas_per_s_min;
        assert!(
            cells[6].starts_with(&format!(
                "{share:.2} ({:.2}-{:.2})",
                low.min(share),
                high.max(share)
            )),
            "{name}: share of full's throughput {:?}",
            cells[6]
        );
        let verified = fastest(bench, IoDesign::FullVerify, 2);
        assert!(
            cells[7].starts_with(&format!(
                "{:.2} (",
                run.throughput.mgas_per_s / verified.throughput.mgas_per_s
            )),
            "{name}: share of verified full's throughput {:?}",
            cells[7]
        );
    }
}

/// Without a disk curve the model cannot calibrate: the page says so instead of failing, and
/// the bench's JSON keeps only the one-worker runs' task profiles (the calibrations').
fn assert_left_out(page: &str, bench: &BenchResult) {
    assert!(
        page.contains(
            "The model's projection onto the research's machine was left out: no disk curve"
        ),
        "{page}"
    );
    assert!(page.contains("- **Measured, not projected**: "), "{page}");
    assert_eq!(row(page, "full BAL")[9], "-");
    for run in &bench.runs {
        assert_eq!(
            run.batch_profiles.is_empty(),
            run.threads > 1 || run.mode != ExecMode::Parallel,
            "{}",
            run.label()
        );
    }
}

/// A `--disk` table that is not fio's is refused, naming its file and line, before anything is
/// written.
fn assert_bad_disk_refused(dump: &Path, state: &Path, options: &StudyOptions, bench_json: &Path) {
    let table = options.out.with_file_name("not-fio.txt");
    std::fs::write(&table, "depth iops\nfour 12000\n").unwrap();
    let out = options.out.with_file_name("refused");
    let refused = StudyOptions {
        out: out.clone(),
        from_bench: Some(bench_json.to_path_buf()),
        disk: Some(table.clone()),
        ..options.clone()
    };
    let error = run_study(dump, state, &refused, |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(&table.display().to_string()) && error.contains("four 12000"),
        "{error}"
    );
    assert!(!out.exists());
}

/// The page's projected column holds the model's figures, labelled as such, and the answer
/// names the same shares.
fn assert_projected(page: &str, bench: &BenchResult) {
    let projected = |name| {
        let cell = row(page, name)[9];
        assert!(cell.ends_with(", model"), "{name}: {cell:?}");
        let mgas: f64 = cell.split(' ').next().unwrap().parse().unwrap();
        let share: f64 = cell
            .split(" (")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .unwrap()
            .parse()
            .unwrap();
        (mgas, share)
    };
    let (full, full_share) = projected("full BAL");
    assert_eq!(full_share, 1.0);
    // Sixteen workers on the research's machine outrun full BAL's one worker here.
    let one_worker = bench
        .runs
        .iter()
        .find(|r| r.design == IoDesign::Full && r.batch == 2 && r.threads == 1)
        .expect("full BAL ran on one worker");
    assert!(
        full > one_worker.throughput.mgas_per_s,
        "projected {full} Mgas/s, measured {} on one worker",
        one_worker.throughput.mgas_per_s
    );
    let (parallel, parallel_share) = projected("parallel I/O");
    let (_, batched_share) = projected("batched I/O");
    assert!(parallel > 0.0 && parallel_share > 0.0);
    // The research measured its machine at batch 50: a projection at batch 2 cannot be checked
    // against it, so the answer does not quote it, and the page says why.
    assert!(parallel_share > 0.0 && batched_share > 0.0);
    assert!(
        page.contains(
            "The model's projection onto the research's machine is not in the answer: it could not be checked against the research's own measurements (projected at batch 2; the research measured its machine at batch 50)."
        ),
        "{page}"
    );
    assert!(
        page.contains("- **Measured, and projected by the model**: "),
        "{page}"
    );
    assert!(!page.contains("left out"), "{page}");
}

/// The study wrote only inside `out` (and the runs' checkpoints, removed), beside the inputs.
fn is_fresh(dir: &Path, out: &Path) -> bool {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut written: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    names == ["dump", "findings", "state"]
        && written == ["bench.json", "findings.md", "frontier.svg", "study.json"]
}
