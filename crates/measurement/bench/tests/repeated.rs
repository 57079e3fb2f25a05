//! A bench repeated twice over a small synthetic chain: the rounds interleave the configurations
//! (forwards, then backwards), and every ratio the tables print and the JSON records carries the
//! range its repeats allow, bracketing the ratio of the medians.

use bal_replay_bench::{BenchMatrix, BenchResult, Interval, render_tables, run_bench};
use bal_replay_engine::{ExecMode, IoDesign};
use bal_replay_executor::ChainConfig;
use bal_replay_mdbx_state::StateSpec;
use bal_replay_synth::{GeneratorConfig, generate};
use std::num::NonZeroUsize;

const BLOCKS: u64 = 4;

fn n(count: usize) -> NonZeroUsize {
    NonZeroUsize::new(count).unwrap()
}

fn matrix() -> BenchMatrix {
    BenchMatrix {
        batches: vec![n(BLOCKS as usize)],
        designs: vec![IoDesign::Full, IoDesign::Parallel, IoDesign::Batched],
        io_threads: n(2),
        sequential: false,
        in_memory: false,
        repeat: n(2),
        ..BenchMatrix::default()
    }
}

/// `"0.59 (0.58-0.60)"` or `"0.98 (0.95-1.03, within noise)"` at the start of `text`: the ratio,
/// its range and whether it was said to be within noise.
fn parse_ratio(text: &str) -> (f64, f64, f64, bool) {
    let (median, rest) = text.split_once(" (").unwrap_or_else(|| panic!("{text:?}"));
    let range = rest.split(')').next().unwrap();
    let (range, noise) = match range.strip_suffix(", within noise") {
        Some(range) => (range, true),
        None => (range, false),
    };
    let (low, high) = range.split_once('-').unwrap_or_else(|| panic!("{text:?}"));
    let num = |s: &str| {
        s.trim()
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("{text:?}"))
    };
    (num(median), num(low), num(high), noise)
}

/// Every printed ratio brackets its median and says "within noise" exactly where 1.0 lies in it.
fn assert_bracketed(line: &str, text: &str) {
    let (median, low, high, noise) = parse_ratio(text);
    assert!(low <= median && median <= high, "{line}");
    // The table prints two decimals of the exact bounds the judgement used: a bound printed as
    // 1.00 may lie just either side of 1.0, so only the other bounds decide.
    let printed_one = |bound: f64| (bound - 1.0).abs() < 0.005;
    if !printed_one(low) && !printed_one(high) {
        assert_eq!(noise, low <= 1.0 && 1.0 <= high, "{line}");
    }
}

#[test]
fn a_repeated_bench_interleaves_its_rounds_and_prints_each_ratio_with_its_range() {
    let tmp = tempfile::tempdir().unwrap();
    let generator = GeneratorConfig {
        blocks: BLOCKS,
        accounts: 1_000,
        holders_per_token: 100,
        seed: 11,
        gas_per_block: 3_000_000,
        ..GeneratorConfig::default()
    };
    let (dump, state) = (tmp.path().join("dump"), tmp.path().join("state"));
    generate(&generator, &dump, &state, None).unwrap();
    let config =
        ChainConfig::for_chain_id(bal_replay_dump::DumpReader::open(&dump).unwrap().chain_id())
            .unwrap();
    let mut order = Vec::new();
    let result = run_bench(&config, &dump, &StateSpec::RocksDb(state), &matrix(), |r| {
        order.push((r.design, r.threads))
    })
    .unwrap();

    // The schedule (threads within design, in the matrix's order), forwards then backwards.
    let forward: Vec<(IoDesign, usize)> = [IoDesign::Full, IoDesign::Parallel, IoDesign::Batched]
        .into_iter()
        .flat_map(|d| [(d, 1), (d, 2)])
        .collect();
    let backward: Vec<_> = forward.iter().rev().copied().collect();
    assert_eq!(order, [forward.clone(), backward].concat());
    assert_eq!(result.runs.len(), forward.len());
    assert!(result.runs.iter().all(|r| r.throughput.repeats == 2));

    assert_ratios_of_medians_in_their_ranges(&result);
    assert_ratios_survive_the_json(&result, &tmp.path().join("bench.json"));
    assert_tables_print_each_ratio_with_its_range(&result);
    assert_read_cost_recorded(&result, &dump);
}

/// Every run records its CPU split and RocksDB's time in reads; the floor read, on one thread,
/// exactly the keys the dump's BALs name in its one batch (each once), with each reader.
fn assert_read_cost_recorded(result: &BenchResult, dump: &std::path::Path) {
    let mut accounts = std::collections::BTreeSet::new();
    let mut slots = std::collections::BTreeSet::new();
    for record in bal_replay_dump::DumpReader::open(dump).unwrap().records() {
        for account in &record.unwrap().bal {
            accounts.insert(account.address);
            for slot in account.storage_changes.iter().map(|s| s.slot) {
                slots.insert((account.address, slot));
            }
            for slot in &account.storage_reads {
                slots.insert((account.address, *slot));
            }
        }
    }
    let keys = (accounts.len() + slots.len()) as u64;
    assert!(keys > 100, "{keys}");
    assert_eq!(result.read_floors.len(), 1);
    let floor = &result.read_floors[0];
    assert_eq!((floor.batch, floor.blocks), (BLOCKS as usize, BLOCKS));
    for reads in [&floor.point, &floor.multiget] {
        assert_eq!(reads.keys, keys, "{floor:?}");
        assert!(
            reads.cpu_s > 0.0 && reads.system_s <= reads.cpu_s,
            "{floor:?}"
        );
        assert!(reads.rocksdb_read_s > 0.0, "{floor:?}");
        assert!(
            reads.rocksdb_file_read_s <= reads.rocksdb_read_s,
            "{floor:?}"
        );
    }
    let tables = render_tables(result);
    let row = format!("| {BLOCKS} | {BLOCKS} | {keys} | ");
    assert!(
        tables.contains("### The floor of a key read") && tables.contains(&row),
        "{tables}"
    );
    for run in &result.runs {
        let cpu = run.cpu.expect("/proc and getrusage on Linux");
        let (user, system) = (cpu.user_s.unwrap(), cpu.system_s.unwrap());
        assert!(
            user > 0.0 && (user + system - cpu.process_s).abs() < 0.5,
            "{cpu:?}"
        );
        assert!(cpu.sleeps.is_some() && cpu.preemptions.is_some(), "{cpu:?}");
        let read_s = run.disk.rocksdb_read_s.unwrap();
        if run.design != IoDesign::Full {
            assert!(read_s > 0.0, "{:?}: {:?}", run.design, run.disk);
        }
    }
}

/// The JSON: parallel and batched I/O against full BAL at each worker count, each ratio that of
/// the runs' medians inside the range of their repeats.
fn assert_ratios_of_medians_in_their_ranges(result: &BenchResult) {
    let compared: Vec<(IoDesign, usize)> = result
        .ratios_to_full
        .iter()
        .map(|r| (r.design, r.threads))
        .collect();
    assert_eq!(
        compared,
        [
            (IoDesign::Parallel, 1),
            (IoDesign::Parallel, 2),
            (IoDesign::Batched, 1),
            (IoDesign::Batched, 2)
        ]
    );
    let median = |design, threads| {
        result
            .runs
            .iter()
            .find(|r| r.mode == ExecMode::Parallel && r.design == design && r.threads == threads)
            .unwrap()
    };
    for r in &result.ratios_to_full {
        let (run, full) = (
            median(r.design, r.threads),
            median(IoDesign::Full, r.threads),
        );
        assert_eq!(r.batch, BLOCKS as usize);
        assert_eq!(
            r.ratio.median,
            run.throughput.mgas_per_s / full.throughput.mgas_per_s
        );
        assert_eq!(
            r.ratio.low,
            (run.throughput.mgas_per_s_min / full.throughput.mgas_per_s_max).min(r.ratio.median)
        );
        assert_eq!(
            r.ratio.high,
            (run.throughput.mgas_per_s_max / full.throughput.mgas_per_s_min).max(r.ratio.median)
        );
        assert_eq!(r.ratio, Interval::ratio(run, full));
        assert_eq!(r.within_noise, r.ratio.includes_one());
    }
}

/// The ratios read back from the JSON as written.
fn assert_ratios_survive_the_json(result: &BenchResult, path: &std::path::Path) {
    result.write_json(path).unwrap();
    // serde_json reads a float back to within its last bit.
    let read = BenchResult::read_json(path).unwrap().ratios_to_full;
    assert_eq!(read.len(), result.ratios_to_full.len());
    for (read, written) in read.iter().zip(&result.ratios_to_full) {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
        assert_eq!(
            (read.design, read.batch, read.threads, read.within_noise),
            (
                written.design,
                written.batch,
                written.threads,
                written.within_noise
            )
        );
        assert!(close(read.ratio.median, written.ratio.median), "{read:?}");
        assert!(close(read.ratio.low, written.ratio.low), "{read:?}");
        assert!(close(read.ratio.high, written.ratio.high), "{read:?}");
    }
}

/// The tables: each design's cell beside full BAL's, and every line of the Ratios list.
fn assert_tables_print_each_ratio_with_its_range(result: &BenchResult) {
    let tables = render_tables(result);
    let compared = tables
        .split("### Designs compared")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .nth(1)
        .unwrap();
    let mut cells = 0;
    for line in compared.lines().skip(2) {
        let columns: Vec<&str> = line.split(" | ").collect();
        // Batch, threads, full BAL, parallel I/O, batched I/O, the two baselines.
        assert_eq!(columns.len(), 7, "{line}");
        assert!(!columns[2].contains('('), "full BAL has no ratio: {line}");
        for cell in &columns[3..5] {
            let (mgas, ratio) = cell.split_once(" (").unwrap_or_else(|| panic!("{line}"));
            assert!(mgas.parse::<f64>().unwrap() > 0.0, "{line}");
            // "(0.59, 0.58-0.60)": the ratio, then its range.
            assert_bracketed(line, &ratio.replacen(", ", " (", 1));
            cells += 1;
        }
    }
    assert_eq!(cells, 4);
    let ratios: Vec<&str> = tables
        .split("### Ratios (the targets)")
        .nth(1)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("- "))
        .collect();
    // 2 threads / 1 thread; parallel and batched against full at each worker count; parallel
    // against batched at each; and parallel against batched at each one's best.
    assert_eq!(ratios.len(), 1 + 4 + 2 + 1, "{ratios:#?}");
    for line in ratios {
        let (_, ratio) = line.rsplit_once(" = ").unwrap();
        assert_bracketed(line, ratio);
    }
}
