//! A study with its regime sweep, end to end over a small generated chain: the sweep's runs land
//! beside the bench's, listed in the study's manifest; the page's sweep table and its
//! carry-across table are recomputed here from the JSON; a page computed again from the runs
//! reads the same sweep back.

use bal_replay_bench::{BenchResult, RunResult};
use bal_replay_engine::{ExecMode, IoDesign};
use bal_replay_study::{CacheRegime, RegimeSweep, StudyOptions, run_study};
use bal_replay_synth::{GeneratorConfig, generate};
use std::num::NonZeroUsize;

fn n(v: usize) -> NonZeroUsize {
    NonZeroUsize::new(v).unwrap()
}

/// The cells of the page's row that starts with `first`, in the table that follows `heading`.
fn row<'a>(page: &'a str, heading: &str, first: &str) -> Vec<&'a str> {
    let section = &page[page
        .find(heading)
        .unwrap_or_else(|| panic!("{heading}\n{page}"))..];
    let line = section
        .lines()
        .find(|l| l.starts_with(&format!("| {first} |")))
        .unwrap_or_else(|| panic!("no row {first} under {heading} in\n{page}"));
    line.trim_matches('|').split(" | ").map(str::trim).collect()
}

fn fastest(bench: &BenchResult, design: IoDesign) -> &RunResult {
    bench
        .runs
        .iter()
        .filter(|r| r.mode == ExecMode::Parallel && r.design == design)
        .max_by(|a, b| a.throughput.mgas_per_s.total_cmp(&b.throughput.mgas_per_s))
        .expect("the design ran")
}

#[test]
fn the_sweep_lands_beside_the_runs_and_the_page_reads_it() {
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
        batches: Some(vec![n(2)]),
        repeat: Some(n(2)),
        fio: false,
        disk: None,
        out: out.clone(),
        command: "bal-replay study (test)".into(),
        title: None,
        from_bench: None,
        drop_caches: false,
        sweep: true,
    };
    let mut runs = 0;
    let output = run_study(&dump, &state, &options, |_| runs += 1).unwrap();
    // The study: 5 designs x 2 thread counts x 2 repeats; the sweep over a state this small has
    // one point (an 8 MiB block cache), at the cores and the most workers (2 on 2 cores).
    let sweep: RegimeSweep =
        serde_json::from_slice(&std::fs::read(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(sweep.points.len(), 1);
    assert_eq!(
        sweep.points[0].regime,
        CacheRegime::Direct {
            block_cache_bytes: 8 << 20
        }
    );
    // Its bench keeps one run per configuration (the median of its 2 repeats): 5 designs at 2
    // workers.
    assert_eq!(sweep.points[0].bench.runs.len(), 5);
    assert_eq!(runs, 20 + 5 * 2);
    assert!(sweep.points[0].bench.runs.iter().all(|r| r.batch == 2));
    let manifest = std::fs::read_to_string(out.join("study.json")).unwrap();
    assert!(
        manifest.contains("\"sweep.json\"") && manifest.contains("\"sweep.svg\""),
        "{manifest}"
    );

    let page = std::fs::read_to_string(&output.page).unwrap();
    assert!(
        page.contains("## The regime as a variable, batch 2"),
        "{page}"
    );
    assert!(
        page.contains("![Share of full BAL's throughput against device reads per Mgas](sweep.svg)")
    );
    // The sweep's row, recomputed from its runs: parallel I/O's share of full BAL's there.
    let point = &sweep.points[0].bench;
    let (parallel, full) = (
        fastest(point, IoDesign::Parallel),
        fastest(point, IoDesign::Full),
    );
    let cells = row(
        &page,
        "## The regime as a variable",
        "direct, 8 MiB block cache",
    );
    assert_eq!(cells[1], format!("{:.1}", full.throughput.mgas_per_s));
    assert_eq!(cells[2], "full BAL, verified");
    let share = parallel.throughput.mgas_per_s / full.throughput.mgas_per_s;
    // The regime's rows after its first name only the design.
    let section = &page[page.find("## The regime as a variable").unwrap()..];
    let parallel_row: Vec<&str> = section
        .lines()
        .find(|l| l.contains("| parallel I/O |"))
        .unwrap()
        .trim_matches('|')
        .split(" | ")
        .map(str::trim)
        .collect();
    assert_eq!(parallel_row[3], parallel.threads.to_string());
    assert!(
        parallel_row[4].starts_with(&format!("{share:.2} (")),
        "parallel I/O's share {share:.2}: {parallel_row:?}"
    );

    // What carries: parallel I/O's one-worker run's key reads and BAL bytes per Mgas.
    let bench: BenchResult =
        serde_json::from_slice(&std::fs::read(&output.bench_json).unwrap()).unwrap();
    let one = bench
        .runs
        .iter()
        .find(|r| r.design == IoDesign::Parallel && r.threads == 1)
        .unwrap();
    let mgas = one.gas as f64 / 1e6;
    let cells = row(&page, "## What carries to another machine", "parallel I/O");
    assert_eq!(cells[1], "1");
    assert_eq!(cells[2], format!("{:.1}", one.disk.key_reads as f64 / mgas));
    let carry = output.findings.carry_row(IoDesign::Parallel).unwrap();
    let per_block = output.findings.carry_row(IoDesign::Batched).unwrap();
    assert!(carry.bal_bytes_per_mgas.rlp < per_block.bal_bytes_per_mgas.rlp);
    assert!(
        page.contains("Dropping the read keys (parallel I/O against batched I/O, batch 2) keeps "),
        "{page}"
    );

    // The page again from the runs: the same sweep, read back through the manifest.
    let again = dir.path().join("again");
    let output_again = run_study(
        &dump,
        &state,
        &StudyOptions {
            out: again.clone(),
            from_bench: Some(output.bench_json.clone()),
            ..options.clone()
        },
        |_| panic!("nothing is replayed"),
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&output_again.page).unwrap(), page);
    // The sweep's runs are copied as they were read.
    assert!(
        std::fs::read(again.join("sweep.json")).unwrap()
            == std::fs::read(out.join("sweep.json")).unwrap(),
        "again/sweep.json is not the study's own"
    );
}
