//! `report.md`: the charts, our tables (`render_tables`), ours next to the research's, and the
//! research's own tables.

use crate::{Chart, Input, research};
use bal_replay_bench::{MeanBalSizes, RunResult, StoreKind, render_tables};
use bal_replay_engine::{ExecMode, IoDesign};
use std::fmt::Write;

/// A whole number with thousands separators ("10,842").
pub fn thousands(x: f64) -> String {
    let n = x.round() as i64;
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

fn parallel_run(
    runs: &[RunResult],
    store: StoreKind,
    design: IoDesign,
    batch: usize,
    threads: usize,
) -> Option<&RunResult> {
    runs.iter().find(|r| {
        r.mode == ExecMode::Parallel
            && r.store == store
            && r.design == design
            && r.batch == batch
            && r.threads == threads
    })
}

fn design_name(d: IoDesign) -> &'static str {
    match d {
        IoDesign::Full => "full BAL",
        IoDesign::FullVerify => "full BAL, verifying",
        IoDesign::Batched => "batched I/O",
        IoDesign::Parallel => "parallel I/O",
        IoDesign::Hybrid => "hybrid",
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn cell(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

/// Our figures next to the research's: every run the research has a figure for, the ratios it
/// states, and the BAL sizes.
fn next_to_research(out: &mut String, input: &Input) {
    let runs = &input.result.runs;
    let disk = input.result.disk_store();
    let _ = writeln!(
        out,
        "### Next to the research\n\nThe research ran 2,000 mainnet blocks on 16 cores with RAID-0 NVMe, page cache dropped; {} ran {} blocks from `{}` on {} CPUs over {}. Absolute figures differ by machine; compare the ratios.\n",
        input.name,
        input.result.blocks,
        input.result.dump,
        input.result.cpus,
        disk.backend_name()
    );
    let _ = writeln!(
        out,
        "| Batch | Threads | Design | Ours (MGas/s) | Research (MGas/s) | Ours / research |\n| --- | --- | --- | --- | --- | --- |"
    );
    throughput_rows(out, runs, disk);
    ratio_rows(out, runs, disk);
    bal_size_rows(out, &input.result.bal_sizes);
    let _ = writeln!(out);
}

/// Our throughput next to the research's, where it published the same batch size and threads.
fn throughput_rows(out: &mut String, runs: &[RunResult], disk: StoreKind) {
    let mut rows = 0;
    for r in runs
        .iter()
        .filter(|r| r.mode == ExecMode::Parallel && r.store == disk)
    {
        if let Some(theirs) = research::throughput(r.design, r.batch, r.threads) {
            rows += 1;
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:.2} |",
                r.batch,
                r.threads,
                design_name(r.design),
                thousands(r.throughput.mgas_per_s),
                thousands(theirs),
                r.throughput.mgas_per_s / theirs
            );
        }
    }
    if rows == 0 {
        let _ = writeln!(
            out,
            "| - | - | - | no run at a batch size and thread count the research published | - | - |"
        );
    }
}

/// Our ratios (scaling with workers, designs against each other) next to the research's.
fn ratio_rows(out: &mut String, runs: &[RunResult], disk: StoreKind) {
    let _ = writeln!(
        out,
        "\n| Ratio | Batch | Threads | Ours | Research |\n| --- | --- | --- | --- | --- |"
    );
    let mut batches: Vec<usize> = runs.iter().map(|r| r.batch).collect();
    batches.sort_unstable();
    batches.dedup();
    let mgas = |d, b, t| parallel_run(runs, disk, d, b, t).map(|r| r.throughput.mgas_per_s);
    for &b in &batches {
        let research_scaling = match b {
            1 => Some(
                research::PARALLEL_BATCH_1[1].mgas_per_s / research::PARALLEL_BATCH_1[0].mgas_per_s,
            ),
            50 => Some(
                research::PARALLEL_BATCH_50[1].mgas_per_s
                    / research::PARALLEL_BATCH_50[0].mgas_per_s,
            ),
            _ => None,
        };
        if let Some(ours) = ratio(
            mgas(IoDesign::Parallel, b, 2),
            mgas(IoDesign::Parallel, b, 1),
        ) {
            let _ = writeln!(
                out,
                "| parallel I/O, 2 threads / 1 thread | {b} | 2 / 1 | {ours:.2} | {} |",
                cell(research_scaling)
            );
        }
        let mut threads: Vec<usize> = runs
            .iter()
            .filter(|r| r.batch == b && r.mode == ExecMode::Parallel)
            .map(|r| r.threads)
            .collect();
        threads.sort_unstable();
        threads.dedup();
        for &t in &threads {
            let research_vs_full = (b == 50)
                .then(|| research::PARALLEL_BATCH_50[4].mgas_per_s / research::FULL_BATCH_50_T16);
            if let Some(ours) = ratio(mgas(IoDesign::Parallel, b, t), mgas(IoDesign::Full, b, t)) {
                let _ = writeln!(
                    out,
                    "| parallel I/O / full BAL | {b} | {t} | {ours:.2} | {}{} |",
                    cell(research_vs_full),
                    if research_vs_full.is_some() {
                        " (16 threads)"
                    } else {
                        ""
                    }
                );
            }
            // Both from the batch-size table (one measurement; its parallel figure at batch 1
            // differs from the per-thread table's).
            let by_batch = |d: IoDesign| {
                research::BY_BATCH
                    .iter()
                    .find(|r| r.design == d && r.batch == b && r.threads == 16)
                    .map(|r| r.mgas_per_s)
            };
            let theirs = ratio(by_batch(IoDesign::Batched), by_batch(IoDesign::Parallel));
            if let Some(ours) = ratio(
                mgas(IoDesign::Batched, b, t),
                mgas(IoDesign::Parallel, b, t),
            ) {
                let _ = writeln!(
                    out,
                    "| batched I/O / parallel I/O | {b} | {t} | {ours:.2} | {}{} |",
                    cell(theirs),
                    if theirs.is_some() {
                        " (16 threads)"
                    } else {
                        ""
                    }
                );
            }
        }
    }
}

/// Our BAL sizes per design next to the research's.
fn bal_size_rows(out: &mut String, s: &MeanBalSizes) {
    if s.full > 0.0 {
        let _ = writeln!(
            out,
            "\n| BAL design | Ours (KB per block) | Ours vs full | Research (KB per block) | Research vs full |\n| --- | --- | --- | --- | --- |"
        );
        let [rf, rb, rp] = research::BAL_SIZE_KB;
        for (name, ours, theirs) in [
            ("Full BAL", s.full, rf),
            ("Batched I/O BAL", s.batched, rb),
            ("Parallel I/O BAL", s.parallel, rp),
        ] {
            let _ = writeln!(
                out,
                "| {name} | {:.1} | {:.0}% | {theirs:.0} | {:.0}% |",
                ours / 1000.0,
                100.0 * ours / s.full,
                100.0 * theirs / rf
            );
        }
    }
}

/// The research's own tables, as published.
fn research_tables(out: &mut String) {
    let _ = writeln!(
        out,
        "## The research's figures\n\n`bal-parallel-io-research.md`: 2,000 mainnet blocks (23,770,000-23,771,999), AMD Ryzen 9 5950X (16 cores), 128 GB, RAID-0 NVMe, page cache dropped; throughput = gas / execution with I/O.\n"
    );
    for (title, rows) in [
        (
            "Parallel I/O BAL, block by block (batch 1)",
            &research::PARALLEL_BATCH_1,
        ),
        ("Parallel I/O BAL, batch 50", &research::PARALLEL_BATCH_50),
    ] {
        let _ = writeln!(
            out,
            "### {title}\n\n| Threads | Throughput (MGas/s) | Longest TXs Latency | Total Time |\n| --- | --- | --- | --- |"
        );
        for r in rows.iter() {
            let _ = writeln!(
                out,
                "| {} | {} | {:.2}s | {:.2}s |",
                r.threads,
                thousands(r.mgas_per_s),
                r.longest_txs_s,
                r.total_s
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "Full BAL, batch 50, 16 threads: {} MGas/s.\n",
        thousands(research::FULL_BATCH_50_T16)
    );
    let _ = writeln!(
        out,
        "### Batched vs parallel I/O across batch sizes\n\n| I/O Type | Threads | Block Batch Size | Avg. Block Gas (M) | Throughput (MGas/s) |\n| --- | --- | --- | --- | --- |"
    );
    for r in &research::BY_BATCH {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            if r.design == IoDesign::Batched {
                "Batched"
            } else {
                "Parallel"
            },
            r.threads,
            r.batch,
            thousands(r.block_mgas),
            thousands(r.mgas_per_s)
        );
    }
    let [f, b, p] = research::BAL_SIZE_KB;
    let _ = writeln!(
        out,
        "\n### BAL size (RLP, mean per block)\n\n| Design | Size |\n| --- | --- |\n| Full BAL | {f:.0} KB |\n| Batched I/O BAL | {b:.0} KB ({:.0}%) |\n| Parallel I/O BAL | {p:.0} KB ({:.0}%) |",
        100.0 * b / f,
        100.0 * p / f
    );
}

/// The whole summary: inputs, charts (and those skipped), then per input our tables and ours next
/// to the research's, then the research's tables.
pub fn render_markdown(inputs: &[Input], charts: &[Chart], skipped: &[String]) -> String {
    let mut out = String::from("# BAL replay report\n\n");
    let _ = writeln!(
        out,
        "| Input | Dump | Blocks | CPUs | Runs | Per-batch samples |\n| --- | --- | --- | --- | --- | --- |"
    );
    for i in inputs {
        let sampled = i
            .result
            .runs
            .iter()
            .filter(|r| !r.batches.is_empty())
            .count();
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} | {} |",
            i.name,
            i.result.dump,
            i.result.blocks,
            i.result.cpus,
            i.result.runs.len(),
            if sampled == 0 {
                "none".to_string()
            } else {
                format!("{sampled} runs")
            }
        );
    }
    let _ = writeln!(out, "\n## Charts\n");
    for c in charts {
        let _ = writeln!(
            out,
            "### {}\n\n![{}]({}.png)\n\n[SVG]({}.svg)\n",
            c.title, c.title, c.stem, c.stem
        );
    }
    if !skipped.is_empty() {
        let _ = writeln!(out, "Not drawn:\n");
        for s in skipped {
            let _ = writeln!(out, "- {s}");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "Resident memory is the whole bench process's (it holds the in-memory baseline's copy of the state for the whole bench); state size is RocksDB's estimate (SST files and memtables) of each run's hard-link clone; runs over MDBX have none, as they never write the database.\n"
    );
    for i in inputs {
        let _ = writeln!(out, "## {}\n", i.name);
        out.push_str(&render_tables(&i.result));
        let _ = writeln!(out);
        next_to_research(&mut out, i);
    }
    research_tables(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn thousands_separates() {
        assert_eq!(thousands(10842.0), "10,842");
        assert_eq!(thousands(943.4), "943");
        assert_eq!(thousands(1234567.0), "1,234,567");
        assert_eq!(thousands(-1500.0), "-1,500");
        assert_eq!(thousands(90_400.4), "90,400");
        assert_eq!(thousands(999.0), "999");
    }
}
