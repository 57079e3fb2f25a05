//! A study of a small generated chain, end to end: the page's headline table is recomputed here
//! from the bench JSON the study wrote beside it, number by number, and its scratch space is a
//! fresh directory of its own. With its regime sweep, the sweep's runs land beside the bench's,
//! listed in the study's manifest; the page's sweep table and its carry-across table are
//! recomputed from the JSON; a page computed again from the runs reads the same sweep back.

use bal_replay_bench::{BenchResult, RunResult};
use bal_replay_engine::{ExecMode, IoDesign};
use bal_replay_study::{CacheRegime, RegimeSweep, StudyOptions, StudyOutput, run_study};
use bal_replay_synth::{GeneratorConfig, generate};
use std::{
    num::NonZeroUsize,
    path::{Path, PathBuf},
};

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
    row_under(page, "", name)
}

/// The cells of the page's row that starts with `first`, in the first table after `heading`.
fn row_under<'a>(page: &'a str, heading: &str, first: &str) -> Vec<&'a str> {
    let section = &page[page
        .find(heading)
        .unwrap_or_else(|| panic!("{heading}\n{page}"))..];
    let line = section
        .lines()
        .find(|l| l.starts_with(&format!("| {first} |")))
        .unwrap_or_else(|| panic!("no row {first} under {heading:?} in\n{page}"));
    line.trim_matches('|').split(" | ").map(str::trim).collect()
}

/// A generated chain of 4 blocks in `dir`: its dump and state.
fn small_chain(dir: &Path) -> (PathBuf, PathBuf) {
    let (dump, state) = (dir.join("dump"), dir.join("state"));
    let config = GeneratorConfig {
        blocks: 4,
        accounts: 500,
        holders_per_token: 50,
        gas_per_block: 3_000_000,
        ..GeneratorConfig::default()
    };
    generate(&config, &dump, &state, None).unwrap();
    (dump, state)
}

/// The quick form at 1 and 2 workers, batch 1 and 2, two repeats, no fio and no sweep, into `out`.
fn quick_options(out: PathBuf) -> StudyOptions {
    StudyOptions {
        quick: true,
        threads: Some(vec![n(1), n(2)]),
        batches: Some(vec![n(1), n(2)]),
        repeat: Some(n(2)),
        fio: false,
        disk: None,
        out,
        command: "bal-replay study (test)".into(),
        title: None,
        from_bench: None,
        beside: None,
        drop_caches: false,
        sweep: false,
    }
}

#[test]
fn the_page_is_recomputed_from_its_bench_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("findings");
    let (dump, state) = small_chain(dir.path());
    let options = quick_options(out.clone());
    let mut runs = 0;
    let output = run_study(&dump, &state, &options, |_| runs += 1).unwrap();
    // 5 designs x 2 thread counts x 2 batches x 2 repeats.
    assert_eq!(runs, 40);
    assert_eq!(output.page, out.join("findings.md"));
    assert!(out.join("frontier.svg").exists());

    let bench: BenchResult =
        serde_json::from_slice(&std::fs::read(&output.bench_json).unwrap()).unwrap();
    let page = std::fs::read_to_string(&output.page).unwrap();
    assert_reads_true(&output.page);
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
    assert_machine_of_the_runs(&dump, &state, &options, &output.bench_json);
    assert_beside_drawn(&dump, &state, &options, &output.bench_json);
    assert_research_regime_named(&dump, &state, &options, &output.bench_json, &page);

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
    assert_reads_true(&output.page);
    assert_projected(&page, &bench);

    assert_given_disk_kept_apart(&dump, &state, &options, &output.bench_json, &table);
}

/// What any page must read true, whatever its kind: every in-page link names a heading, every
/// image is a file written beside the page, every table row has its header's cells, no number
/// printed as NaN or infinity and no empty parentheses, and every batch a sentence names is one
/// the runs measured, or the research's (then the sentence names the research).
fn assert_reads_true(page_path: &Path) {
    let page = std::fs::read_to_string(page_path).unwrap();
    let bench: BenchResult =
        serde_json::from_slice(&std::fs::read(page_path.with_file_name("bench.json")).unwrap())
            .unwrap();
    let anchor = |heading: &str| -> String {
        heading
            .trim_start_matches('#')
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == ' ' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect()
    };
    let anchors: Vec<String> = page
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(anchor)
        .collect();
    for link in page.split("](#").skip(1) {
        let target = link.split(')').next().unwrap();
        assert!(
            anchors.iter().any(|a| a == target),
            "a link to #{target}, which no heading is\n{page}"
        );
    }
    for image in page.split("![").skip(1) {
        let file = image.split("](").nth(1).unwrap().split(')').next().unwrap();
        assert!(
            page_path.with_file_name(file).is_file(),
            "an image {file} not written beside the page"
        );
    }
    let lines: Vec<&str> = page.lines().collect();
    for (i, pair) in lines.windows(2).enumerate() {
        if pair[0].starts_with('|') && pair[1].starts_with("| ---") {
            let cells = pair[0].matches(" | ").count();
            for row in lines[i + 2..].iter().take_while(|l| l.starts_with('|')) {
                assert_eq!(
                    row.matches(" | ").count(),
                    cells,
                    "a row of another width than its header {:?}: {row}",
                    pair[0]
                );
            }
        }
    }
    for bad in ["NaN", " inf", "()", "0.0 times"] {
        assert!(!page.contains(bad), "{bad:?} printed\n{page}");
    }
    let measured: Vec<usize> = bench.runs.iter().map(|r| r.batch).collect();
    for sentence in page.split(". ").flat_map(|s| s.lines()) {
        for part in sentence.split("batch ").skip(1) {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            let Ok(batch) = digits.parse::<usize>() else {
                continue;
            };
            assert!(
                measured.contains(&batch) || sentence.contains("research"),
                "batch {batch} named, which the runs did not measure: {sentence}"
            );
        }
    }
}

/// The study computed again from a copy of `bench_json` that `edit` changed, written beside the
/// study's own output as `name`: nothing is replayed.
fn study_of_edited_bench(
    dump: &Path,
    state: &Path,
    options: &StudyOptions,
    bench_json: &Path,
    name: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) -> bal_replay_study::StudyOutput {
    let mut bench: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bench_json).unwrap()).unwrap();
    edit(&mut bench);
    let edited = options.out.with_file_name(format!("{name}-bench.json"));
    std::fs::write(&edited, serde_json::to_vec(&bench).unwrap()).unwrap();
    run_study(
        dump,
        state,
        &StudyOptions {
            out: options.out.with_file_name(name),
            from_bench: Some(edited),
            ..options.clone()
        },
        |_| panic!("nothing is replayed"),
    )
    .unwrap()
}

/// A page computed again from runs made on another machine speaks of that machine's cores (the
/// bench's), not of the machine computing it.
fn assert_machine_of_the_runs(
    dump: &Path,
    state: &Path,
    options: &StudyOptions,
    bench_json: &Path,
) {
    let output = study_of_edited_bench(dump, state, options, bench_json, "sixteen-cores", |b| {
        b["cpus"] = serde_json::json!(16);
    });
    let page = std::fs::read_to_string(&output.page).unwrap();
    assert_reads_true(&output.page);
    assert!(page.contains("- **The machine**: 16 cores"), "{page}");
    assert!(!page.contains("- **16 cores**: not measured"), "{page}");
}

/// Another machine's runs (`--beside`) are drawn as distinct marks with a legend row, listed
/// in the frontier's table with their cores, and no point label overlaps another.
fn assert_beside_drawn(dump: &Path, state: &Path, options: &StudyOptions, bench_json: &Path) {
    let mut other: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bench_json).unwrap()).unwrap();
    other["cpus"] = serde_json::json!(16);
    let other_json = options.out.with_file_name("other-machine-bench.json");
    std::fs::write(&other_json, serde_json::to_vec(&other).unwrap()).unwrap();
    let output = run_study(
        dump,
        state,
        &StudyOptions {
            out: options.out.with_file_name("beside"),
            from_bench: Some(bench_json.to_path_buf()),
            beside: Some(other_json),
            ..options.clone()
        },
        |_| panic!("nothing is replayed"),
    )
    .unwrap();
    let page = std::fs::read_to_string(&output.page).unwrap();
    assert_reads_true(&output.page);
    let batch = options.batches.as_ref().unwrap().iter().max().unwrap();
    for design in ["full BAL", "batched I/O", "parallel I/O"] {
        let line = format!("| {design} | {batch} (16 cores) |");
        assert!(page.contains(&line), "{line} missing:\n{page}");
    }
    assert!(
        page.contains("The rows at 16 cores (triangles on the chart) are another machine's runs")
    );
    let svg = std::fs::read_to_string(output.page.with_file_name("frontier.svg")).unwrap();
    assert!(svg.contains("16 cores, another machine"), "{svg}");
    assert_eq!(
        svg.matches("stroke-dasharray").count(),
        page.matches(" (16 cores) |").count(),
        "{svg}"
    );
    // Point labels (coloured text) as the placer sized them: 6.5 px a character, 12 px high.
    let labels: Vec<(f64, f64, f64)> = svg
        .lines()
        .flat_map(|line| line.split("<text ").skip(1))
        .filter(|t| t.contains(" fill="))
        .map(|t| {
            let attr = |name: &str| -> f64 {
                let start = t.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                t[start..].split('"').next().unwrap().parse().unwrap()
            };
            let text = t.split('>').nth(1).unwrap().split('<').next().unwrap();
            (
                attr("x") - 1.0,
                attr("y") - 10.0,
                6.5 * text.len() as f64 + 2.0,
            )
        })
        .collect();
    assert!(labels.len() >= 3, "{svg}");
    for (i, a) in labels.iter().enumerate() {
        for b in &labels[i + 1..] {
            // Labels a line apart touch; rounding of their coordinates must not make them overlap.
            let at_most = |x: f64, y: f64| x <= y + 1e-6;
            let apart = at_most(a.0 + a.2, b.0)
                || at_most(b.0 + b.2, a.0)
                || at_most(a.1 + 12.0, b.1)
                || at_most(b.1 + 12.0, a.1);
            assert!(apart, "labels {a:?} and {b:?} overlap:\n{svg}");
        }
    }
}

/// Runs that read through the page cache, emptied before each (as `bench --drop-caches` without
/// direct reads makes them), are named as the research's regime in the answer; the study's own
/// direct reads are not.
fn assert_research_regime_named(
    dump: &Path,
    state: &Path,
    options: &StudyOptions,
    bench_json: &Path,
    direct_page: &str,
) {
    let named = "read through the page cache, emptied before each run (the research's regime)";
    assert!(!direct_page.contains(named), "{direct_page}");
    let output = study_of_edited_bench(dump, state, options, bench_json, "buffered", |b| {
        for run in b["runs"].as_array_mut().unwrap() {
            run["cold"] = serde_json::json!(true);
            let basis = &mut run["disk"]["residency"]["basis"];
            if basis != "no-reads" {
                *basis = serde_json::json!("device-bytes");
            }
        }
    });
    assert!(output.answer.contains(named), "{}", output.answer);
}

/// A table the user gave (`--disk-table`) is kept as given, apart from a measured one, and the page
/// says so; a page computed again from those runs without `--disk-table` does not take it for the
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
            "given by the user with --disk-table ({}, kept as disk-given.txt), not measured",
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
    assert!(!page.contains("| Projected at"), "{page}");
    assert!(
        !page.contains("## Appendix: the model's projection"),
        "{page}"
    );
    for run in &bench.runs {
        assert_eq!(
            run.batch_profiles.is_empty(),
            run.threads > 1 || run.mode != ExecMode::Parallel,
            "{}",
            run.label()
        );
    }
}

/// A `--disk-table` table that is not fio's is refused, naming its file and line, before anything is
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
    // The projection is checked against the research's machine at batch 50 only: at this chain's
    // batch 2 it is out of the answer, so the headline table leaves it to the appendix.
    assert!(!row(page, "full BAL").iter().any(|c| c.contains("model")));
    let projected = |name| {
        let cell = row_under(
            page,
            "## Appendix: the model's projection, out of the answer",
            name,
        )[1];
        // The model's figure, and its error on this chain's runs at the other worker counts.
        let (_, error) = cell
            .split_once(", model; its error here ")
            .unwrap_or_else(|| panic!("{name}: {cell:?}"));
        assert!(
            error.starts_with(['+', '-']) && error.ends_with('%'),
            "{name}: {cell:?}"
        );
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
    // The research's cores are set so that full BAL projects to the research's own figure.
    assert!((full / 13_881.0 - 1.0).abs() < 0.01, "{full}");
    assert!(page.contains("set so full BAL projects to the research's 13881 Mgas/s"));
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
            "The model's projection onto the research's machine is not in the answer: it could not be checked against the research's own measurements (projected at batch 2; the research measured its machine at batch 50). The appendix keeps it, with its errors."
        ),
        "{page}"
    );
    assert!(
        page.contains("- **Measured, and projected by the model**: "),
        "{page}"
    );
    assert!(!page.contains("left out"), "{page}");
    // Runs that timed their reading of the dump count end to end as a client pays it, and show
    // the reading apart in the time's breakdown.
    assert!(
        page.contains("**End to end** adds planning and the commit, as a client pays it")
            && page.contains(
                "| Planning and the rest | Reading the dump (this tool's input, not a client's) |"
            ),
        "{page}"
    );
    // A machine of fewer cores than the research's says its figure there is not measured.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        page.contains(&format!(
            "- **16 cores**: not measured, as this machine has {cores};"
        )),
        cores < 16,
        "{page}"
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
        && written
            == [
                "bench.json",
                "findings.md",
                "frontier.svg",
                "read-cost.svg",
                "study.json",
            ]
}

/// What carries, on the page and in the findings: parallel I/O's one-worker run's key reads per
/// Mgas, and its BAL bytes per Mgas under batched I/O's.
fn assert_what_carries(page: &str, output: &StudyOutput) {
    let bench: BenchResult =
        serde_json::from_slice(&std::fs::read(&output.bench_json).unwrap()).unwrap();
    let one = bench
        .runs
        .iter()
        .find(|r| r.design == IoDesign::Parallel && r.threads == 1)
        .unwrap();
    let mgas = one.gas as f64 / 1e6;
    let cells = row_under(page, "## What carries to another machine", "parallel I/O");
    assert_eq!(cells[1], "1");
    assert_eq!(cells[2], format!("{:.1}", one.disk.key_reads as f64 / mgas));
    // The workers' own CPU, a part of the process's.
    let cpu = one.cpu.unwrap();
    let workers = cpu.worker_s.unwrap();
    assert!(workers > 0.0 && workers <= cpu.user_s.unwrap() + cpu.system_s.unwrap());
    assert_eq!(cells[5], format!("{:.3}", workers * 1e3 / mgas));
    let carry = output.findings.carry_row(IoDesign::Parallel).unwrap();
    let per_block = output.findings.carry_row(IoDesign::Batched).unwrap();
    assert!(carry.bal_bytes_per_mgas.rlp < per_block.bal_bytes_per_mgas.rlp);
    assert!(
        page.contains("Dropping the read keys (parallel I/O against batched I/O, batch 2) keeps "),
        "{page}"
    );
    // The chart's points come from the sweep's regimes too, where the study swept.
    let sweep = output.bench_json.with_file_name("sweep.json");
    let swept: Vec<BenchResult> = if sweep.exists() {
        let sweep: RegimeSweep = serde_json::from_slice(&std::fs::read(&sweep).unwrap()).unwrap();
        sweep.points.into_iter().map(|p| p.bench).collect()
    } else {
        Vec::new()
    };
    assert_read_costs(page, &bench, &swept, one);
}

/// What a key read costs: parallel I/O's CPU per key read recomputed from the JSON (its one-worker
/// run's user and system CPU beyond full BAL's, over its key reads), and the floor's rows with
/// the keys the bench's floor read at the headline batch.
fn assert_read_costs(page: &str, bench: &BenchResult, swept: &[BenchResult], parallel: &RunResult) {
    let full = bench
        .runs
        .iter()
        .find(|r| r.design == IoDesign::Full && r.threads == 1 && r.batch == parallel.batch)
        .unwrap();
    let total = |r: &RunResult| {
        let cpu = r.cpu.unwrap();
        cpu.user_s.unwrap() + cpu.system_s.unwrap()
    };
    let keys = parallel.disk.key_reads;
    let cpu_us = (total(parallel) - total(full)).max(0.0) * 1e6 / keys as f64;
    let heading = "### What a key read costs, batch 2";
    let cells = row_under(page, heading, "parallel I/O");
    assert_eq!(cells[1], bal_replay_report::thousands(keys as f64));
    assert_eq!(cells[3], format!("{cpu_us:.2}"));
    let floor = bench.read_floors.iter().find(|f| f.batch == 2).unwrap();
    for (name, reads) in [
        ("floor: point reads, 1 thread", &floor.point),
        ("floor: sorted multi-gets, 1 thread", &floor.multiget),
    ] {
        let cells = row_under(page, heading, name);
        assert_eq!(cells[1], bal_replay_report::thousands(reads.keys as f64));
        assert_eq!(cells[3], format!("{:.2}", reads.cpu_us_per_key()));
    }
    assert!(
        page.contains("Parallel I/O pays ") && page.contains(" times the floor's "),
        "{page}"
    );
    let point = &floor.point;
    let stays = format!(
        "RocksDB alone pays {:.1} µs of CPU per point read of these keys here",
        point.cpu_us_per_key(),
    );
    assert_eq!(
        page.contains(&stays),
        point.device_reads.is_some(),
        "{stays}\n{page}"
    );
    // Split where its parts fit in the whole (the kernel's recomputed), or not split at all.
    let kernel = format!(
        "{stays}, {:.1} of it in the kernel",
        point.system_s * 1e6 / point.keys as f64
    );
    assert!(
        !page.contains(&stays) || page.contains(&kernel) || page.contains(&format!("{stays} (")),
        "{kernel}\n{page}"
    );
    // The chart's sentence: parallel I/O's range over its runs at every worker count, each
    // against full BAL's at the same count, recomputed from the JSON.
    let mut costs: Vec<f64> = std::iter::once(bench)
        .chain(swept)
        .flat_map(|b| b.runs.iter().map(move |r| (b, r)))
        .filter(|(_, r)| r.design == IoDesign::Parallel && r.batch == parallel.batch)
        .map(|(b, r)| {
            let full = b
                .runs
                .iter()
                .find(|f| {
                    f.design == IoDesign::Full && f.threads == r.threads && f.batch == r.batch
                })
                .unwrap();
            (total(r) - total(full)).max(0.0) * 1e6 / r.disk.key_reads as f64
        })
        .collect();
    costs.sort_by(f64::total_cmp);
    let (lo, hi) = (
        format!("{:.1}", costs[0]),
        format!("{:.1}", costs[costs.len() - 1]),
    );
    let span = if lo == hi { lo } else { format!("{lo}-{hi}") };
    let expected = format!("parallel I/O's reads cost {span} µs per key read and it kept ");
    assert!(
        page.contains("(read-cost.svg)") && page.contains(&expected),
        "{expected}\n{page}"
    );
}

#[test]
fn the_sweep_lands_beside_the_runs_and_the_page_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("findings");
    let (dump, state) = small_chain(dir.path());
    let options = StudyOptions {
        batches: Some(vec![n(2)]),
        sweep: true,
        ..quick_options(out.clone())
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
    assert_reads_true(&output.page);
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
        fastest(point, IoDesign::Parallel, 2),
        fastest(point, IoDesign::Full, 2),
    );
    let cells = row_under(
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

    assert_what_carries(&page, &output);

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
