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
        out: out.clone(),
        command: "bal-replay study (test)".into(),
        title: None,
        from_bench: None,
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
    let full = fastest(&bench, IoDesign::Full, 2);
    for (design, name) in [
        (IoDesign::Full, "full BAL"),
        (IoDesign::Batched, "batched I/O"),
        (IoDesign::Parallel, "parallel I/O"),
        (IoDesign::Hybrid, "hybrid"),
    ] {
        let run = fastest(&bench, design, 2);
        let cells = row(&page, name);
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
    }
    // Sizes: parallel I/O's diffs are smaller than the protocol's BAL, which is smaller than full.
    let size = |name| row(&page, name)[1].parse::<f64>().unwrap();
    assert!(size("parallel I/O") < size("batched I/O"));
    assert!(size("batched I/O") < size("full BAL"));
    assert!(is_fresh(dir.path(), &out));

    // The page again from the runs' JSON, nothing replayed: the same page.
    let again = dir.path().join("again");
    let mut replayed = 0;
    run_study(
        &dump,
        &state,
        &StudyOptions {
            out: again.clone(),
            from_bench: Some(output.bench_json.clone()),
            ..options
        },
        |_| replayed += 1,
    )
    .unwrap();
    assert_eq!(replayed, 0);
    assert_eq!(
        std::fs::read_to_string(again.join("findings.md")).unwrap(),
        page
    );
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
        && written == ["bench.json", "findings.md", "frontier.svg"]
}
