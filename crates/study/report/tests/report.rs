//! Renders a whole report from a bench result built here and checks what it wrote.

use bal_replay_bench::{
    BatchSample, BenchResult, CacheCounts, Latency, MeanBalSizes, RunResult, RunTiming, StoreKind,
    Throughput,
};
use bal_replay_engine::{ExecMode, IoDesign};
use bal_replay_report::{DEFAULT_FONT, Input, ReportError, ReportOptions, write_report};
use std::path::Path;

fn run(mode: ExecMode, design: IoDesign, threads: usize, batch: usize, mgas: f64) -> RunResult {
    let gas = 1_000_000_000u64;
    // Four batches, the last twice as fast as the first, with growing memory and state.
    let batches = (0..4u64)
        .map(|i| BatchSample {
            first_block: 100 + i * batch as u64,
            last_block: 100 + (i + 1) * batch as u64 - 1,
            gas: gas / 4,
            exec_with_io_s: (gas / 4) as f64 / (mgas * 1e6) * (1.0 - 0.1 * i as f64),
            prefetch_s: 0.0,
            end_s: 0.5 * (i + 1) as f64,
            rss_bytes: Some((200 + 10 * i) * 1024 * 1024),
            state_bytes: Some((20 + i) * 1024 * 1024),
        })
        .collect();
    RunResult {
        mode,
        design,
        threads,
        batch,
        store: StoreKind::Rocksdb,
        cold: true,
        io_threads: None,
        blocks: 4 * batch as u64,
        txs: 1000,
        gas,
        throughput: Throughput {
            mgas_per_s: mgas,
            end_to_end_mgas_per_s: gas as f64 / 1e6,
            repeats: 3,
            mgas_per_s_min: mgas * 0.9,
            mgas_per_s_max: mgas * 1.1,
        },
        repeat_mgas_per_s: Vec::new(),
        timing: RunTiming {
            exec_with_io_s: gas as f64 / (mgas * 1e6),
            prefetch_s: 0.0,
            longest_txs_s: 0.01,
            commit_s: 0.02,
            wall_s: 1.0,
            read_dump_s: None,
        },
        cache: CacheCounts {
            hits: 90,
            misses: 10,
            keys_prefetched: 0,
        },
        latency: Latency {
            read_p50_us: 2,
            read_p99_us: 64,
            tx_p50_us: 10,
            tx_p99_us: 100,
        },
        disk: Default::default(),
        cpu: None,
        batches,
        batch_profiles: Vec::new(),
    }
}

fn bench() -> BenchResult {
    let mut runs = Vec::new();
    for batch in [1, 50] {
        runs.push(run(
            ExecMode::Sequential,
            IoDesign::Parallel,
            1,
            batch,
            900.0,
        ));
        for (design, base) in [(IoDesign::Full, 1500.0), (IoDesign::Parallel, 1000.0)] {
            for threads in [1, 2] {
                let mgas = base * threads as f64 + batch as f64;
                runs.push(run(ExecMode::Parallel, design, threads, batch, mgas));
            }
        }
    }
    BenchResult {
        schema_version: bal_replay_bench::SCHEMA_VERSION,
        build_profile: "dev".into(),
        engine_commit: None,
        dump: "/data/chain/dump".into(),
        blocks: 200,
        cpus: 2,
        bal_sizes: MeanBalSizes {
            full: 300_000.0,
            batched: 120_000.0,
            parallel: 90_000.0,
        },
        rocksdb_io_uring: false,
        independent_blocks: false,
        worker_start: None,
        pinned_workers: None,
        dump_identity: None,
        ratios_to_full: Vec::new(),
        read_floors: Vec::new(),
        runs,
    }
}

fn png_size(path: &Path) -> (u32, u32, usize) {
    let img = image::open(path).unwrap().to_rgb8();
    // Pixels of the parallel I/O series colour (44, 160, 44), to show lines were drawn.
    let green = img.pixels().filter(|p| p.0 == [44, 160, 44]).count();
    (img.width(), img.height(), green)
}

/// The charts need Debian's fonts-dejavu-core; a machine without it fails here, saying so, rather
/// than passing without drawing anything (`.ci/run` installs it).
fn require_default_font() {
    assert!(
        Path::new(DEFAULT_FONT).exists(),
        "{DEFAULT_FONT} is missing: install Debian's fonts-dejavu-core (apt-get install fonts-dejavu-core)"
    );
}

#[test]
fn renders_charts_and_markdown() {
    require_default_font();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let inputs = [Input::new("cold run", bench())];
    assert_eq!(inputs[0].name, "cold_run");
    let written = write_report(&inputs, &ReportOptions::new(&out)).unwrap();

    let stems: Vec<&str> = written.charts.iter().map(|c| c.stem.as_str()).collect();
    assert_eq!(
        stems,
        [
            "throughput-batch1",
            "throughput-batch50",
            "batches-cold_run-batch1",
            "resources-cold_run-batch1",
            "batches-cold_run-batch50",
            "resources-cold_run-batch50",
            "bal-size",
        ]
    );
    assert!(written.skipped.is_empty(), "{:?}", written.skipped);
    for file in written.files(&out) {
        assert!(
            std::fs::metadata(&file).unwrap().len() > 0,
            "{}",
            file.display()
        );
    }

    // PNGs decode at the requested size and carry the series' colour.
    let (w, h, green) = png_size(&out.join("throughput-batch50.png"));
    assert_eq!((w, h), (1024, 640));
    assert!(green > 500, "only {green} parallel I/O pixels");
    let (w, h, _) = png_size(&out.join("resources-cold_run-batch1.png"));
    assert_eq!((w, h), (1024, 960), "two stacked panels");

    // SVGs carry the titles, axis descriptions with units, and the series names.
    let svg = std::fs::read_to_string(out.join("throughput-batch50.svg")).unwrap();
    for text in [
        "Throughput vs threads, batch of 50 block(s)",
        "Threads (execution workers)",
        "Throughput (MGas/s, execution with I/O)",
        "full BAL",
        "parallel I/O",
        "sequential (RocksDB)",
    ] {
        assert!(svg.contains(text), "throughput SVG lacks {text:?}");
    }
    let svg = std::fs::read_to_string(out.join("resources-cold_run-batch1.svg")).unwrap();
    for text in [
        "Resident memory (MiB)",
        "SST files + memtables (MiB)",
        "Time since the replay started (s)",
        "parallel I/O, 2 thread(s)",
    ] {
        assert!(svg.contains(text), "resources SVG lacks {text:?}");
    }
    let svg = std::fs::read_to_string(out.join("bal-size.svg")).unwrap();
    for text in [
        "Mean RLP size per block (KB)",
        "Parallel I/O BAL",
        "research",
        "300",
        "30%",
    ] {
        assert!(svg.contains(text), "BAL size SVG lacks {text:?}");
    }

    // The Markdown: our tables (render_tables), ours next to the research's, the research's own.
    let md = std::fs::read_to_string(&written.markdown).unwrap();
    for row in [
        "| cold_run | `/data/chain/dump` | 200 | 2 | 10 | 10 runs |",
        // render_tables: batch 50, parallel I/O, 2 threads = 2 * 1000 + 50.
        "| 2 | 2050.0 | 0.010s | 0.488s | 90.0% |",
        // Next to the research: ours / research at batch 50, 2 threads = 2050 / 1857.
        "| 50 | 2 | parallel I/O | 2,050 | 1,857 | 1.10 |",
        "| 1 | 1 | parallel I/O | 1,001 | 740 | 1.35 |",
        // Scaling: (2050 / 1050) vs the research's 1857 / 943.
        "| parallel I/O, 2 threads / 1 thread | 50 | 2 / 1 | 1.95 | 1.97 |",
        // parallel / full at batch 50, 2 threads = 2050 / 3050; the research's 10842 / 13881.
        "| parallel I/O / full BAL | 50 | 2 | 0.67 | 0.78 (16 threads) |",
        "| Parallel I/O BAL | 90.0 | 30% | 71 | 33% |",
        "| 16 | 10,842 | 0.61s | 4.13s |",
        "![Throughput vs threads, batch of 50 block(s)](throughput-batch50.png)",
    ] {
        assert!(md.contains(row), "report.md lacks {row:?}\n{md}");
    }
}

#[test]
fn old_json_without_samples_skips_time_charts() {
    require_default_font();
    let mut result = bench();
    for r in &mut result.runs {
        r.batches.clear();
    }
    // JSON written before per-batch samples existed has no `batches` field at all.
    let json = serde_json::to_string(&result).unwrap();
    assert!(!json.contains("\"batches\""));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    std::fs::write(&path, json).unwrap();
    let inputs = bal_replay_report::load_inputs(&[path.clone(), path]).unwrap();
    assert_eq!(inputs[1].name, "old-2");
    let written = write_report(&inputs, &ReportOptions::new(dir.path().join("out"))).unwrap();
    let stems: Vec<&str> = written.charts.iter().map(|c| c.stem.as_str()).collect();
    assert_eq!(
        stems,
        ["throughput-batch1", "throughput-batch50", "bal-size"]
    );
    assert_eq!(written.skipped.len(), 2);
    assert!(written.skipped[0].contains("no per-batch samples"));
    let svg = std::fs::read_to_string(dir.path().join("out/throughput-batch1.svg")).unwrap();
    assert!(svg.contains("parallel I/O [old-2]"));
}

#[test]
fn missing_font_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let options = ReportOptions {
        font: "/nonexistent/DejaVuSans.ttf".into(),
        ..ReportOptions::new(dir.path())
    };
    let err = write_report(&[Input::new("b", bench())], &options).unwrap_err();
    assert!(matches!(err, ReportError::Font { .. }));
    assert!(err.to_string().contains("/nonexistent/DejaVuSans.ttf"));
    assert!(err.to_string().contains("fonts-dejavu-core"));
}

#[test]
fn an_mdbx_bench_renders_with_its_backend_named() {
    require_default_font();
    let mut over_mdbx = bench();
    for r in &mut over_mdbx.runs {
        r.store = StoreKind::Mdbx;
        // MDBX is never written: no state size.
        for b in &mut r.batches {
            b.state_bytes = None;
        }
    }
    // Read back from JSON, as `bal-replay report` does, next to a RocksDB input.
    let dir = tempfile::tempdir().unwrap();
    let (mdbx_json, rocks_json) = (dir.path().join("mdbx.json"), dir.path().join("rocks.json"));
    over_mdbx.write_json(&mdbx_json).unwrap();
    bench().write_json(&rocks_json).unwrap();
    assert!(
        std::fs::read_to_string(&mdbx_json)
            .unwrap()
            .contains("\"store\": \"mdbx\"")
    );
    let inputs = bal_replay_report::load_inputs(&[mdbx_json, rocks_json]).unwrap();
    let out = dir.path().join("report");
    let written = write_report(&inputs, &ReportOptions::new(&out)).unwrap();
    assert!(written.skipped.is_empty(), "{:?}", written.skipped);

    let svg = std::fs::read_to_string(out.join("throughput-batch50.svg")).unwrap();
    for text in [
        "parallel I/O (MDBX) [mdbx]",
        "sequential (MDBX) [mdbx]",
        "parallel I/O [rocks]",
        "sequential (RocksDB) [rocks]",
    ] {
        assert!(svg.contains(text), "throughput SVG lacks {text:?}");
    }
    // The MDBX input's resources chart has memory only: its runs have no state size.
    let svg = std::fs::read_to_string(out.join("resources-mdbx-batch1.svg")).unwrap();
    assert!(svg.contains("Resident memory (MiB)"));
    assert!(!svg.contains("SST files"));

    let md = std::fs::read_to_string(&written.markdown).unwrap();
    let (mdbx_part, rocks_part) = md.split_at(md.find("## rocks").unwrap());
    for row in [
        "### Batch 50, parallel I/O (MDBX)",
        "| 2 | 2050.0 | 0.010s | 0.488s | 90.0% |",
        "sequential (MDBX)",
        "on 2 CPUs over MDBX",
        "| 50 | 2 | parallel I/O | 2,050 | 1,857 | 1.10 |",
        "| parallel I/O, 2 threads / 1 thread | 50 | 2 / 1 | 1.95 | 1.97 |",
    ] {
        assert!(
            mdbx_part.contains(row),
            "MDBX part lacks {row:?}\n{mdbx_part}"
        );
    }
    assert!(!mdbx_part.contains("(RocksDB)"), "{mdbx_part}");
    assert!(rocks_part.contains("### Batch 50, parallel I/O (RocksDB)"));
}

#[test]
fn recorded_ratios_are_charted_with_their_ranges_as_error_bars() {
    require_default_font();
    let mut result = bench();
    result.ratios_to_full =
        bal_replay_bench::DesignRatio::of_runs(&result.runs, StoreKind::Rocksdb);
    // Parallel I/O over full BAL at batch 50, 2 threads: 2050 / 3050, from 0.9 of the one over 1.1
    // of the other to the reverse.
    let at = result
        .ratios_to_full
        .iter()
        .find(|r| r.batch == 50 && r.threads == 2)
        .unwrap();
    assert_eq!(at.design, IoDesign::Parallel);
    assert_eq!(at.ratio.median, 2050.0 / 3050.0);
    assert_eq!(at.ratio.low, 2050.0 * 0.9 / (3050.0 * 1.1));
    assert_eq!(at.ratio.high, 2050.0 * 1.1 / (3050.0 * 0.9));
    assert!(!at.within_noise);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let written = write_report(
        &[Input::new("run", result.clone())],
        &ReportOptions::new(&out),
    )
    .unwrap();
    let stems: Vec<&str> = written.charts.iter().map(|c| c.stem.as_str()).collect();
    assert!(stems.contains(&"ratios-batch1"), "{stems:?}");
    assert!(stems.contains(&"ratios-batch50"), "{stems:?}");
    let svg = std::fs::read_to_string(out.join("ratios-batch50.svg")).unwrap();
    for text in [
        "Throughput over full BAL vs threads, batch of 50 block(s)",
        "Ratio to full BAL (bars: the range of the repeats)",
        "parallel / full",
        "full BAL (1.0)",
    ] {
        assert!(svg.contains(text), "ratios SVG lacks {text:?}");
    }

    // The same ratios of single runs: the same chart without its bars, so fewer lines drawn.
    for r in &mut result.ratios_to_full {
        r.ratio.low = r.ratio.median;
        r.ratio.high = r.ratio.median;
    }
    let single = dir.path().join("single");
    write_report(&[Input::new("run", result)], &ReportOptions::new(&single)).unwrap();
    let bare = std::fs::read_to_string(single.join("ratios-batch50.svg")).unwrap();
    let lines = |svg: &str| svg.matches("<line").count() + svg.matches("<polyline").count();
    assert!(
        lines(&svg) > lines(&bare),
        "{} <= {}",
        lines(&svg),
        lines(&bare)
    );
}
