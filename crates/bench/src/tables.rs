//! The research's tables, from a bench result.

use crate::{BenchResult, RunResult, StoreKind};
use bal_replay_engine::{ExecMode, IoDesign};
use std::fmt::Write;

fn find(
    runs: &[RunResult],
    mode: ExecMode,
    design: Option<IoDesign>,
    threads: usize,
    batch: usize,
    store: StoreKind,
) -> Option<&RunResult> {
    runs.iter().find(|r| {
        r.mode == mode
            && design.is_none_or(|d| r.design == d)
            && r.threads == threads
            && r.batch == batch
            && r.store == store
    })
}

/// Markdown tables: per batch size and I/O design, Threads | Throughput | Longest TXs latency | Total
/// time (the research's layout); then the design comparison and baselines with their ratios. Every
/// heading and column over the state's store names its backend (RocksDB or MDBX).
pub fn render_tables(result: &BenchResult) -> String {
    let mut out = String::new();
    let runs = &result.runs;
    let disk = result.disk_store();
    let backend = disk.backend_name();
    let mut batches: Vec<usize> = runs.iter().map(|r| r.batch).collect();
    batches.sort_unstable();
    batches.dedup();
    let mut threads: Vec<usize> = runs
        .iter()
        .filter(|r| r.mode == ExecMode::Parallel)
        .map(|r| r.threads)
        .collect();
    threads.sort_unstable();
    threads.dedup();
    let mut designs: Vec<IoDesign> = Vec::new();
    for r in runs
        .iter()
        .filter(|r| r.mode == ExecMode::Parallel && r.store == disk)
    {
        if !designs.contains(&r.design) {
            designs.push(r.design);
        }
    }
    let over = match disk {
        StoreKind::Mdbx => "reth's MDBX read in place, commits kept in memory",
        _ => "a RocksDB flat state, a hard-link clone per run",
    };
    let _ = writeln!(
        out,
        "{} blocks from {} on {} CPUs, over {over}. Throughput = gas / execution-with-I/O time (prefetch + execution; commits excluded, reported apart).\n",
        result.blocks, result.dump, result.cpus
    );
    for &batch in &batches {
        for &design in &designs {
            let _ = writeln!(out, "### Batch {batch}, {design} I/O ({backend})\n");
            let _ = writeln!(
                out,
                "| Threads | Throughput (MGas/s) | Longest TXs Latency | Total Time | Cache hit ratio |"
            );
            let _ = writeln!(out, "| --- | --- | --- | --- | --- |");
            for &t in &threads {
                if let Some(r) = find(runs, ExecMode::Parallel, Some(design), t, batch, disk) {
                    let hits = r.cache_hits as f64 / (r.cache_hits + r.cache_misses).max(1) as f64;
                    let _ = writeln!(
                        out,
                        "| {t} | {:.1} | {:.3}s | {:.3}s | {:.1}% |",
                        r.mgas_per_s,
                        r.longest_txs_s,
                        r.exec_with_io_s,
                        hits * 100.0
                    );
                }
            }
            let _ = writeln!(out);
        }
    }

    let _ = writeln!(
        out,
        "### Designs compared (throughput, MGas/s; ratio to full BAL)\n"
    );
    let mut header = "| Batch | Threads |".to_string();
    let mut rule = "| --- | --- |".to_string();
    for d in &designs {
        header.push_str(&format!(" {d} |"));
        rule.push_str(" --- |");
    }
    header.push_str(&format!(" sequential ({backend}) | parallel in memory |"));
    rule.push_str(" --- | --- |");
    let _ = writeln!(out, "{header}\n{rule}");
    for &batch in &batches {
        for &t in &threads {
            let full = find(
                runs,
                ExecMode::Parallel,
                Some(IoDesign::Full),
                t,
                batch,
                disk,
            )
            .map(|r| r.mgas_per_s);
            let mut row = format!("| {batch} | {t} |");
            for &d in &designs {
                match find(runs, ExecMode::Parallel, Some(d), t, batch, disk) {
                    Some(r) => match full {
                        Some(f) if f > 0.0 && d != IoDesign::Full => row.push_str(&format!(
                            " {:.1} ({:.2}) |",
                            r.mgas_per_s,
                            r.mgas_per_s / f
                        )),
                        _ => row.push_str(&format!(" {:.1} |", r.mgas_per_s)),
                    },
                    None => row.push_str(" - |"),
                }
            }
            let seq = find(runs, ExecMode::Sequential, None, 1, batch, disk);
            let mem = find(
                runs,
                ExecMode::Parallel,
                Some(IoDesign::Parallel),
                t,
                batch,
                StoreKind::Memory,
            );
            row.push_str(&match seq {
                Some(r) => format!(" {:.1} |", r.mgas_per_s),
                None => " - |".into(),
            });
            row.push_str(&match mem {
                Some(r) => format!(" {:.1} |", r.mgas_per_s),
                None => " - |".into(),
            });
            let _ = writeln!(out, "{row}");
        }
    }
    let _ = writeln!(out);

    let _ = writeln!(out, "### Ratios (the targets)\n");
    for &batch in &batches {
        let par = |t| {
            find(
                runs,
                ExecMode::Parallel,
                Some(IoDesign::Parallel),
                t,
                batch,
                disk,
            )
        };
        if let (Some(t1), Some(t2)) = (par(1), par(2)) {
            let _ = writeln!(
                out,
                "- batch {batch}: parallel I/O, 2 threads / 1 thread = {:.2}",
                t2.mgas_per_s / t1.mgas_per_s.max(1e-9)
            );
        }
        for &t in &threads {
            let full = find(
                runs,
                ExecMode::Parallel,
                Some(IoDesign::Full),
                t,
                batch,
                disk,
            );
            for d in [IoDesign::Parallel, IoDesign::Hybrid, IoDesign::Batched] {
                if let (Some(f), Some(r)) = (
                    full,
                    find(runs, ExecMode::Parallel, Some(d), t, batch, disk),
                ) {
                    let _ = writeln!(
                        out,
                        "- batch {batch}, {}: {d} / full = {:.2}",
                        workers(t),
                        r.mgas_per_s / f.mgas_per_s.max(1e-9)
                    );
                }
            }
            if let (Some(on_disk), Some(mem)) = (
                find(
                    runs,
                    ExecMode::Parallel,
                    Some(IoDesign::Parallel),
                    t,
                    batch,
                    disk,
                ),
                find(
                    runs,
                    ExecMode::Parallel,
                    Some(IoDesign::Parallel),
                    t,
                    batch,
                    StoreKind::Memory,
                ),
            ) {
                let _ = writeln!(
                    out,
                    "- batch {batch}, {}: {backend} / in memory (parallel I/O) = {:.2}",
                    workers(t),
                    on_disk.mgas_per_s / mem.mgas_per_s.max(1e-9)
                );
            }
        }
    }
    let s = &result.bal_sizes;
    let _ = writeln!(out, "\n### BAL size (RLP, mean per block)\n");
    let _ = writeln!(out, "| Design | Size | vs full |\n| --- | --- | --- |");
    for (name, v) in [
        ("Full BAL", s.full),
        ("Batched I/O BAL", s.batched),
        ("Parallel I/O BAL", s.parallel),
    ] {
        let _ = writeln!(
            out,
            "| {name} | {:.1} KB | {:.0}% |",
            v / 1000.0,
            100.0 * v / s.full.max(1e-9)
        );
    }
    out
}

/// "1 thread", "2 threads".
fn workers(threads: usize) -> String {
    if threads == 1 {
        "1 thread".into()
    } else {
        format!("{threads} threads")
    }
}
